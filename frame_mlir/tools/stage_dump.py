"""`--emit-stage` for both targets: compile a spec or a frontend's module up to a stage
and print it there.

This is the one place that picks the target of a dump: the CPU pipeline (through
`driver`'s IR printing) or the CUDA one (`cuda_run`). It sits above both, so that
`driver` (the shared helpers of a run) never imports its CUDA half, and `cuda_run`
imports `driver` only downward.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from frame_mlir.passes.stages import STAGE_NAMES
from frame_mlir.tools.cuda_run import check_stage, emit_cuda_stage
from frame_mlir.tools.driver import ir_text, print_ir_after_all_hook

if TYPE_CHECKING:  # xDSL loads only where IR is built
    from xdsl.dialects.builtin import ModuleOp

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.spec import ModelSpec


def emit_stage(spec: ModelSpec, stage: str, out: TextIO, *,
               print_ir_after_all: bool = False, options: CompileOptions | None = None,
               target: str = "cpu", arch: str = "sm_80") -> None:
    """Print the IR of `spec` at `stage` and stop (with `print_ir_after_all`, the IR
    after every pass up to there goes to stderr, as in a training run). `options`:
    the compile options (`--threads`), None for the defaults."""
    from frame_mlir.frontends.spec.lower import lower_spec

    lowered = lower_spec(spec)
    if options is not None and options.data_parallel is not None:
        from frame_mlir.frontends.spec.lower import mark_per_sample

        mark_per_sample(lowered)  # as CompiledSpec compiles it
    emit_module_stage(lowered.module, spec.optimizer.learning_rate, stage, out,
                      print_ir_after_all=print_ir_after_all, options=options, target=target,
                      arch=arch)


def emit_module_stage(module: ModuleOp, lr: float | None, stage: str, out: TextIO, *,
                      print_ir_after_all: bool = False,
                      options: CompileOptions | None = None, target: str = "cpu",
                      arch: str = "sm_80") -> None:
    """Run the pipeline on a frontend's `module` up to `stage` and print it there (the
    LLVM stages print LLVM IR, the optimised IR or assembly). `lr` fuses SGD (None:
    gradient functions stay). `target` "cuda" (or "cuda-emulator") compiles for the GPU:
    the stages after bufferized are then the CUDA ones (`ptx` for `arch`)."""
    check_stage(target, stage)  # TGT-001: a stage of the other target
    if target != "cpu":
        emit_cuda_stage(module, lr, stage, out, print_ir_after_all=print_ir_after_all,
                        options=options, arch=arch)
        return

    from frame_mlir import timing

    with timing.compile_session():
        _emit_cpu_stage(module, lr, stage, out, print_ir_after_all, options)


def _emit_cpu_stage(module: ModuleOp, lr: float | None, stage: str, out: TextIO,
                    print_ir_after_all: bool, options: CompileOptions | None) -> None:
    from frame_mlir.passes.pipeline import run_pipeline

    hook = print_ir_after_all_hook(sys.stderr) if print_ir_after_all else None
    if stage in STAGE_NAMES:
        run_pipeline(module, lr, stop_after=stage, after_pass=hook, options=options)
        out.write(ir_text(module) + "\n")
        return
    run_pipeline(module, lr, after_pass=hook, options=options)
    from frame_mlir.backend.llvm.jit import jit_compile
    from frame_mlir.backend.llvm.translate import to_llvm_text

    text = to_llvm_text(module)
    if stage == "llvm-ir":
        out.write(text)
        return
    jit = jit_compile(text)
    out.write(jit.optimized_ir() if stage == "llvm-opt" else jit.asm())
