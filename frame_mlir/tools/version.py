"""`--version` of the frame-mlir tools: our version and the toolchain's."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version(name: str) -> str:
    """The installed version of `name`, or "unknown" (run from a source tree)."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def version_text(tool: str) -> str:
    """`<tool> (frame-mlir X) on xdsl Y, llvmlite Z`: what a bug report needs."""
    return (f"{tool} (frame-mlir {package_version('frame-mlir')}) on xdsl "
            f"{package_version('xdsl')}, llvmlite {package_version('llvmlite')}")
