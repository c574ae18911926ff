"""`--target cuda` for the CLIs: the CUDA stages' dumps and training a v0 spec on a GPU.

    frame-run spec.json --target cuda                    train on GPU 0
    frame-run spec.json --target cuda --emit-stage=ptx   print the PTX (no GPU needed)
    frame-run spec.json --target cuda-emulator           the same kernels on the CPU
                                                         emulator (slow; for testing)

The output of a training run is the CPU's format (`step N loss V`, `final_loss V`);
the losses agree with the CPU to float32 rounding (docs/cuda.md).

This module is the CUDA half of the driver: it builds on `driver`'s helpers (the files
of a run, the output format) and `driver` never imports it; `stage_dump` picks the
target of an `--emit-stage` dump.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from frame_mlir.passes.stages import CUDA_STAGES, SHARED_STAGES
from frame_mlir.tools.driver import (
    WEIGHT_SUFFIXES,
    RunFiles,
    check_output_path,
    finish_losses,
    format_loss,
    format_predictions,
    initial_values,
    ir_text,
    print_ir_after_all_hook,
    read_run_files,
    save_weights_file,
)

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.spec import ModelSpec

TARGETS = ("cpu", "cuda", "cuda-emulator")


class TargetError(ValueError):
    """A stage or flag that the chosen target does not have."""


def check_stage(target: str, stage: str | None) -> None:
    """Refuse a dump point the target does not have, naming the ones it has."""
    if stage is None:
        return
    if target == "cpu" and stage in CUDA_STAGES:
        raise TargetError(f"TGT-001 at --emit-stage: stage '{stage}' is the cuda "
                          "target's: add --target cuda")
    if target != "cpu" and stage not in SHARED_STAGES and stage not in CUDA_STAGES:
        raise TargetError(f"TGT-001 at --emit-stage: expected a stage of the cuda target "
                          f"({', '.join((*SHARED_STAGES, *CUDA_STAGES))}), found "
                          f"'{stage}' (a CPU stage)")


def emit_cuda_stage(module: ModuleOp, lr: float | None, stage: str, out: TextIO, *,
                    print_ir_after_all: bool = False,
                    options: CompileOptions | None = None, arch: str = "sm_80") -> None:
    """Compile a frontend's `module` for CUDA up to `stage` and print it (`ptx`: for
    `arch`)."""
    from frame_mlir.backend.cuda.compile import compile_cuda

    hook = print_ir_after_all_hook(sys.stderr) if print_ir_after_all else None
    result = compile_cuda(module, lr, options=options, after_pass=hook, stop_after=stage,
                          arch=arch)
    if isinstance(result, str):
        out.write(result if result.endswith("\n") else result + "\n")
    else:
        out.write(ir_text(result) + "\n")  # type: ignore[arg-type]


def run_cuda_training(spec: ModelSpec, out: TextIO, *, target: str,
                      print_predictions: bool = False, tool: str = "frame-run",
                      files: RunFiles | None = None) -> int:
    """Train a v0 spec on the cuda target; prints what `driver.run_training` prints."""
    from frame_mlir.backend.cuda.compile import CudaProgram, compile_cuda
    from frame_mlir.backend.cuda.driver import CudaDevice
    from frame_mlir.backend.cuda.runtime import CudaBackend, CudaSession, EmulatorBackend
    from frame_mlir.frontends.spec.lower import lower_spec
    from frame_mlir.frontends.spec.trainer import logged_steps

    files = files or RunFiles()
    if files.plot is not None:
        raise TargetError("TGT-002 at --plot: expected a CPU run (--target cpu), found "
                          f"--target {target}")
    if files.save_weights is not None:
        check_output_path(files.save_weights, "--save-weights", WEIGHT_SUFFIXES)
    run_inputs = read_run_files(spec, files)
    # the device first: no GPU (CUDA-001..003) costs no compile
    device = CudaDevice() if target == "cuda" else None
    lowered = lower_spec(spec)
    program = compile_cuda(lowered.module, spec.optimizer.learning_rate)
    assert isinstance(program, CudaProgram)
    backend = (CudaBackend(program, device=device) if device is not None
               else EmulatorBackend(program))
    values = initial_values(spec, run_inputs)
    session = CudaSession(program, backend, model=lowered.function,
                          predict_function=lowered.predict_function,
                          data=[*values.inputs.values(), values.target],
                          params=dict(values.params))
    try:
        steps = spec.training.steps
        losses = session.run(steps)
        for i in logged_steps(steps, spec.training.log_every):
            out.write(f"step {i} loss {format_loss(float(losses[i]))}\n")
        finish_losses(out, losses, spec, tool)
        if print_predictions:
            out.write(format_predictions(spec, session.predict()))
        if files.save_weights is not None:
            params = session.params()
            save_weights_file(files.save_weights,
                              [(n, params[n]) for n in lowered.param_names])
    finally:
        session.close()
    return 0
