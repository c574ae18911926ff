"""`--threads N`, shared by frame-run and frame-dslc (light: no xDSL, no numpy)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from frame_mlir.compile_options import CompileOptions


def thread_count(text: str) -> int:
    """argparse type of `--threads`: a positive integer (a usage error otherwise)."""
    from frame_mlir.target.host import thread_count as parse

    try:
        return parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_threads_argument(parser: argparse.ArgumentParser, applies_to: str) -> None:
    """Add `--threads N` to a tool's parser."""
    parser.add_argument(
        "--threads", type=thread_count, metavar="N",
        help=f"{applies_to}: run the generated kernels on N threads (results are "
        "bit-identical for every N); default: FRAME_NUM_THREADS, else the cores "
        "available to the process")


def compile_options(threads: int | None) -> CompileOptions | None:
    """The CompileOptions for `--threads` (None: the pipeline's defaults, which a cache
    hit resolves without importing the pipeline)."""
    if threads is None:
        return None
    from frame_mlir.compile_options import CompileOptions

    return CompileOptions(threads=threads)
