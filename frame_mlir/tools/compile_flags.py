"""`--timing`, `--verify-each`, `--compile-jobs N` and `--profile`: the compile's own
flags, shared by frame-run, frame-dslc and frame-kyn (light: no xDSL, no numpy).

Each flag stands for an environment variable the Python APIs read
(`FRAME_TIMING=1`, `FRAME_VERIFY_EACH=1`, `FRAME_COMPILE_JOBS=N`, `FRAME_PROFILE=1`): `apply` sets it for
this process, so every compile the tool starts, however deep, sees the same choice,
and so do the ranks of a data-parallel job (mpirun starts each with the same flags).
"""

from __future__ import annotations

import argparse
import os

from frame_mlir.compile_options import ENV_COMPILE_JOBS, ENV_PROFILE, ENV_VERIFY_EACH
from frame_mlir.timing import ENV_TIMING
from frame_mlir.tools.dp_run import positive_int  # light: argparse and os only


def add_compile_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `--timing`, `--verify-each`, `--compile-jobs N` and `--profile` to a tool's
    parser."""
    parser.add_argument(
        "--timing", action="store_true",
        help="print where each compile's time went (frontend, each pass, LLVM, the "
        "cache) to stderr, as mlir-opt's --mlir-timing (also: FRAME_TIMING=1)")
    parser.add_argument(
        "--verify-each", action="store_true",
        help="verify the IR after every pass, not only the pipeline's input and output "
        "(slower; a broken pass is named either way; also: FRAME_VERIFY_EACH=1)")
    parser.add_argument(
        "--compile-jobs", type=positive_int, metavar="N",
        help="optimize and generate the kernels' machine code on N processes or threads "
        "(the code is bit-identical for every N); default: FRAME_COMPILE_JOBS, else the "
        "cores available to the process")
    parser.add_argument(
        "--profile", action="store_true",
        help="time every generated kernel and print a per-kernel table (calls, ms, %% of "
        "the model functions' time, GFLOP/s) to stderr when the run ends (also: "
        "FRAME_PROFILE=1)")


def apply(args: argparse.Namespace) -> None:
    """Make the flags in `args` this process's compile settings (see the docstring)."""
    if getattr(args, "timing", False):
        os.environ[ENV_TIMING] = "1"
    if getattr(args, "verify_each", False):
        os.environ[ENV_VERIFY_EACH] = "1"
    if getattr(args, "profile", False):
        os.environ[ENV_PROFILE] = "1"
    jobs = getattr(args, "compile_jobs", None)
    if jobs is not None:
        os.environ[ENV_COMPILE_JOBS] = str(jobs)
