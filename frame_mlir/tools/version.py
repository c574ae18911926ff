"""`--version` of the frame-mlir tools: our version and the toolchain's."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from frame_mlir.version import package_version


def version_text(tool: str) -> str:
    """`<tool> (frame-mlir X) on xdsl Y, llvmlite Z`: what a bug report needs."""
    return (f"{tool} (frame-mlir {package_version('frame-mlir')}) on xdsl "
            f"{package_version('xdsl')}, llvmlite {package_version('llvmlite')}")


class VersionAction(argparse.Action):
    """`--version` for argparse that reads the versions only when the flag is given
    (argparse's own action wants the text when the parser is built)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS,
                 help: str = "show program's version number and exit"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(version_text(parser.prog) + "\n")
        parser.exit()
