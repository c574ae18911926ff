"""One place where the CLIs turn failures into clear messages and exit codes.

Users see `<tool>: error: <rule or pass>: <what, where, expected vs found>` and a
non-zero exit status, never a Python traceback. Nothing heavy is imported until a
failure happens, so `--help` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

EXIT_ERROR = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in frame-mlir, not in the input


#: The error types `describe` knows: each name -> the module that defines it. An
#: exception of a type whose module was never imported cannot exist, so `describe` looks
#: each up in `sys.modules` instead of importing it: importing them all took ~0.4 s (the
#: pipeline imports every pass, CUDA's compiler the pipeline), which every failing run
#: of every tool paid. tests/tools/test_startup_imports.py checks the table.
KNOWN_ERRORS: dict[str, str] = {
    "DiagnosticException": "xdsl.utils.exceptions",
    "ParseError": "xdsl.utils.exceptions",
    "CudaCompileError": "frame_mlir.backend.cuda.compile",
    "CudaError": "frame_mlir.backend.cuda.driver",
    "PtxError": "frame_mlir.backend.cuda.ptx",
    "SpecError": "frame_mlir.frontends.common.errors",
    "KynError": "frame_mlir.frontends.kyn.errors",
    "PipelineError": "frame_mlir.passes.pipeline",
    "CheckpointError": "frame_mlir.runtime.checkpoint",
    "DistributedError": "frame_mlir.runtime.distributed.job",
}


def _is(e: BaseException, *names: str) -> bool:
    """Whether `e` is of one of the `KNOWN_ERRORS` types `names` (a type not imported
    yet is not its type, and is not imported)."""
    for name in names:
        cls = getattr(sys.modules.get(KNOWN_ERRORS[name]), name, None)
        if cls is not None and isinstance(e, cls):
            return True
    return False


def describe(tool: str, e: BaseException) -> tuple[str, int] | None:
    """The message and exit code for a failure caused by bad input, else None."""
    if _is(e, "DistributedError", "CheckpointError"):  # "DP-00N at <where>: expected ..., found ..."
        return f"{tool}: error: {e}", EXIT_ERROR
    if _is(e, "CudaError", "PtxError"):  # "CUDA-00N: what, expected vs found"
        return f"{tool}: error: {e}", EXIT_ERROR
    if _is(e, "CudaCompileError"):
        return f"{tool}: error: CUDA-020: {e}", EXIT_ERROR
    if _is(e, "KynError"):  # already `<file>:<line>:<col>: error: ... [RULE]` lines
        return str(e), EXIT_ERROR
    if _is(e, "SpecError"):
        return "\n".join(f"{tool}: error: {line}" for line in str(e).splitlines()), EXIT_ERROR
    if _is(e, "PipelineError"):
        return f"{tool}: error: pass {e}", EXIT_ERROR
    if _is(e, "ParseError"):
        return f"{tool}: error: parse error:\n{e}", EXIT_ERROR
    if _is(e, "DiagnosticException"):
        return f"{tool}: error: {e}", EXIT_ERROR
    if isinstance(e, FileNotFoundError):
        return f"{tool}: error: IO-001 at {e.filename}: file not found", EXIT_ERROR
    if isinstance(e, OSError):
        # No file name: a write to standard output or error failed (`> /dev/full`).
        where = e.filename if e.filename is not None else "<output>"
        return f"{tool}: error: IO-001 at {where}: {e.strerror or e}", EXIT_ERROR
    if isinstance(e, MemoryError):
        detail = str(e) or "an allocation failed"
        return f"{tool}: error: RT-001: out of memory: {detail}", EXIT_ERROR
    if isinstance(e, RecursionError):
        return f"{tool}: error: input nested too deeply to process ({e})", EXIT_ERROR
    if isinstance(e, ValueError):  # e.g. an unknown pass name in a -p pipeline
        return f"{tool}: error: {e}", EXIT_ERROR
    return None


def run_cli(tool: str, body: Callable[[], object]) -> int:
    """Run `body`, mapping every failure to a one-paragraph error and exit code."""
    try:
        result = body()
    except SystemExit as e:  # argparse usage errors and explicit exits
        code = e.code
        return code if isinstance(code, int) else (EXIT_ERROR if code else 0)
    except BrokenPipeError:
        # The reader went away (`frame-opt x.mlir | head`): stop quietly, as Unix tools
        # do, and keep the interpreter's final flush of stdout from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by it
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        known = describe(tool, e)
        if known is not None:
            _abort_job(*known)
            print(known[0], file=sys.stderr)
            return known[1]
        if os.environ.get("FRAME_MLIR_TRACEBACK"):
            raise
        message = (f"{tool}: internal error: {type(e).__name__}: {e} "
                   "(set FRAME_MLIR_TRACEBACK=1 for a traceback)")
        _abort_job(message, EXIT_INTERNAL)
        print(message, file=sys.stderr)
        return EXIT_INTERNAL
    return result if isinstance(result, int) else 0


def _abort_job(message: str, code: int) -> None:
    """In a data-parallel job of several ranks, a failing rank prints its message with
    its rank and ends the whole job (the others would wait for it in their next
    collective); elsewhere this does nothing."""
    dist = sys.modules.get("frame_mlir.runtime.distributed")
    if dist is not None:
        dist.abort_on_error(message, code)  # does not return in a job of several ranks
