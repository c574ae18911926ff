"""Session-wide setup: the test suite never touches the user's compile cache.

`FRAME_CACHE_DIR` points at a fresh temporary folder for the whole session, set when
pytest loads this file -- before any test module is imported and before any tool
runs as a subprocess (they inherit the environment) -- and removed at the end.
`FRAME_NO_CACHE` is cleared so that the cache is exercised the same way whatever the
caller's environment says; tests that need no cache pass `cache=None` or `--no-cache`.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CACHE_DIR = tempfile.mkdtemp(prefix="frame-mlir-test-cache-")
os.environ["FRAME_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("FRAME_NO_CACHE", None)
os.environ.pop("FRAME_CACHE_MAX_BYTES", None)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def session_cache_dir() -> str:
    """The compile cache folder of this test session."""
    return _CACHE_DIR
