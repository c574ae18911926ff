"""The installed versions of frame-mlir and its toolchain (`--version`, run manifests and
locks): a utility below every layer."""

from __future__ import annotations


def package_version(name: str) -> str:
    """The installed version of `name`, or "unknown" (run from a source tree)."""
    # Imported here: importlib.metadata costs ~17 ms, a twentieth of a warm frame-run.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"
