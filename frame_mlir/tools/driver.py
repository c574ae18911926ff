"""What frame-run and frame-dslc share: load a spec, compile it, dump stages, train.

The tools only parse arguments and call into here.
"""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, TextIO

import numpy as np

from frame_mlir.frontend.spec import ModelSpec
from frame_mlir.passes.stages import STAGE_NAMES

if TYPE_CHECKING:  # xDSL loads only where IR is built: a cached run never needs it
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

    from frame_mlir.compile_options import CompileOptions


def ir_text(module: ModuleOp) -> str:
    """The module in custom MLIR syntax, as frame-opt prints it."""
    from xdsl.printer import Printer

    buf = io.StringIO()
    Printer(stream=buf).print_op(module)
    return buf.getvalue()


def format_loss(value: float) -> str:
    """Losses print with 9 significant digits: enough to round-trip a float32."""
    return f"{value:.9g}"


def emit_stage(spec: ModelSpec, stage: str, out: TextIO, *,
               print_ir_after_all: bool = False, options: CompileOptions | None = None
               ) -> None:
    """Print the IR of `spec` at `stage` and stop (with `print_ir_after_all`, the IR
    after every pass up to there goes to stderr, as in a training run). `options`:
    the compile options (`--threads`), None for the defaults."""
    from frame_mlir.frontend.lower_spec import lower_spec

    emit_module_stage(lower_spec(spec).module, spec.optimizer.learning_rate, stage, out,
                      print_ir_after_all=print_ir_after_all, options=options)


def emit_module_stage(module: ModuleOp, lr: float | None, stage: str, out: TextIO, *,
                      print_ir_after_all: bool = False,
                      options: CompileOptions | None = None) -> None:
    """Run the pipeline on a frontend's `module` up to `stage` and print it there (the
    LLVM stages print LLVM IR, the optimised IR or assembly). `lr` fuses SGD (None:
    gradient functions stay)."""
    from frame_mlir.passes.pipeline import run_pipeline

    hook = print_ir_after_all_hook(sys.stderr) if print_ir_after_all else None
    if stage == "frontend":
        out.write(ir_text(module) + "\n")
        return
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


def print_ir_after_all_hook(out: TextIO):
    """An after-pass hook printing the module the way mlir-opt's flag does."""
    def hook(p: ModulePass, module: ModuleOp) -> None:
        out.write(f"// -----// IR Dump After {p.name} //----- //\n{ir_text(module)}\n\n")
    return hook


def format_predictions(spec: ModelSpec, values: np.ndarray) -> str:
    """The predictions block that frame-run and the emitted C++ program both print."""
    rows = [" ".join(format_loss(float(v)) for v in row) for row in values.reshape(
        values.shape[0], -1)]
    shape = ", ".join(str(d) for d in values.shape)
    return f"predictions {spec.loss.prediction} [{shape}]\n" + "".join(r + "\n" for r in rows)


def run_training(spec: ModelSpec, out: TextIO, *, print_ir_after_all: bool = False,
                 print_predictions: bool = False, tool: str = "frame-run",
                 use_cache: bool = True, options: CompileOptions | None = None) -> int:
    """Compile (or load from the compile cache, unless `use_cache` is False) and train
    `spec`, printing `step N loss V` lines and `final_loss V`.

    A loss that stops being finite is reported on stderr as a warning by `tool`; the
    exit status stays 0, since the run did what the spec asked.
    """
    from frame_mlir.runtime.trainer import ENV_CACHE, CompiledSpec, train

    hook = print_ir_after_all_hook(sys.stderr) if print_ir_after_all else None
    compiled = CompiledSpec(spec, after_pass=hook, cache=ENV_CACHE if use_cache else None,
                            options=options)
    result = train(spec, compiled=compiled,
                   on_log=lambda i, loss: out.write(f"step {i} loss {format_loss(loss)}\n"))
    out.write(f"final_loss {format_loss(result.final_loss)}\n")
    bad = np.flatnonzero(~np.isfinite(result.losses))
    if bad.size:
        # Not an input error (the run did what the spec says), but nan lines alone
        # leave the user guessing where it went wrong.
        step = int(bad[0])
        sys.stderr.write(
            f"{tool}: warning: training diverged: the loss first became "
            f"{format_loss(float(result.losses[step]))} at step {step} "
            f"(learning_rate {spec.optimizer.learning_rate:g} may be too large)\n")
    if print_predictions:
        out.write(format_predictions(spec, result.predictions))
    return 0
