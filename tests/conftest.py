"""Session-wide setup: the test suite never touches the user's compile cache.

`FRAME_CACHE_DIR` points at a fresh temporary folder for the whole session, set when
pytest loads this file -- before any test module is imported and before any tool
runs as a subprocess (they inherit the environment) -- and removed at the end.
`FRAME_NO_CACHE` is cleared so that the cache is exercised the same way whatever the
caller's environment says; tests that need no cache pass `cache=None` or `--no-cache`.
`FRAME_VERIFY_EACH=1`: every compile verifies the IR after each pass, as frame-opt does.

The suite runs on two worker processes (pytest-xdist, `addopts` in pyproject.toml),
one test file at a time per worker (`--dist=loadfile`: a file's module fixtures, such
as the conformance cases' compiles, are built once). Here, for that:

* the workers share the controller's cache folder (inherited through the
  environment), as one process's tests share it: a model compiled by one worker is a
  hit for the other. The cache is safe for concurrent processes (an entry is renamed
  into place whole, see frame_mlir/backend/llvm/cache.py); no test depends on what is
  or is not in this folder;
* the files that take longest are handed out first (`SLOW_FILES`), so that the run
  does not end on one long file while the other worker idles;
* `-p no:xdist` (no parallelism, e.g. under a debugger) still accepts the options of
  `addopts` and ignores them; `-n 0` does the same with the plugin loaded.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: Set by the controller (or a run without workers) to the folder it made; a worker
#: of pytest-xdist inherits it and uses that folder instead of making its own.
_SHARED_ENV = "FRAME_TEST_CACHE_DIR"
_OWNER = not (os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(_SHARED_ENV))
_CACHE_DIR = (tempfile.mkdtemp(prefix="frame-mlir-test-cache-") if _OWNER
              else os.environ[_SHARED_ENV])
os.environ[_SHARED_ENV] = _CACHE_DIR
os.environ["FRAME_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("FRAME_NO_CACHE", None)
os.environ.pop("FRAME_CACHE_MAX_BYTES", None)
# Verify the IR after every pass, in this process and every tool the tests start, so a
# broken pass is caught where it breaks the IR (a user's compile verifies only the
# pipeline's input and output; frame_mlir/passes/pipeline.py, run_passes).
os.environ["FRAME_VERIFY_EACH"] = "1"


def _write_bytecode() -> None:
    """Compile the packages' bytecode once, when the environment forbids Python to
    write it (`PYTHONDONTWRITEBYTECODE`, as CI's machines set it): every tool the tests
    start as a subprocess would otherwise compile each module it imports from source
    again (measured: 0.27 s of a 1.2 s `frame-run tiny_mlp.json`, 0.06 s of a
    `frame-opt` start; tests/tools' two CLI files 19.5 -> 18.3 s). Up-to-date files
    are skipped (~50 ms in all)."""
    import compileall
    import sys

    if sys.dont_write_bytecode:
        for package in ("frame_mlir", "frame"):
            compileall.compile_dir(str(TESTS.parent / package), quiet=1)


if _OWNER:
    _write_bytecode()

#: Test files (relative to tests/) in the order the workers should get them first:
#: about 20 s or more of one core each on the 2-core CI machine, longest first. The
#: other files follow, those with more tests first (pytest-xdist's own order). A file
#: missing here only risks a longer tail; a name that no longer exists is ignored.
SLOW_FILES = [
    "oracle/test_ops_vs_torch.py",
    "network/test_conformance.py",  # its cases compile in this worker (workers())
    "distributed/test_network_dp.py",  # MPI jobs of 2-4 ranks
    "distributed/test_kyn_dp.py",
    "distributed/test_v0_dp.py",
    "backend/test_gemm.py",
    "passes/test_gemm_outer_loops.py",
    "backend/test_cuda_target.py",
    "passes/test_cpp_vs_jit_models.py",
    "passes/test_frame_conv.py",
    "frame/test_factories.py",
    "runtime/test_threads.py",
    "passes/test_fuse_gemm_epilogue.py",
    "test_readme.py",
    "passes/test_frame_spectral.py",
    "kyn/test_cli.py",
    "fuzz/test_fuzz_frontends.py",
    "network/test_network_training.py",
    "network/test_network_api.py",
    "tools/test_cli_errors.py",
    "backend/test_cpp_emitter.py",
    "passes/test_frame_scan.py",
    "passes/test_frame_index.py",
]


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager
                     ) -> None:
    if pluginmanager.has_plugin("xdist"):
        return
    # Without pytest-xdist (`-p no:xdist`, or not installed), the options that
    # pyproject.toml's addopts passes to it are accepted and ignored.
    group = parser.getgroup("xdist", "pytest-xdist is not loaded: these are ignored")
    group.addoption("--numprocesses", default=None, help="ignored")
    group.addoption("--dist", default="no", help="ignored")
    group.addoption("--no-loadscope-reorder", action="store_true", help="ignored")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: the items of SLOW_FILES first, in that order, then the other
    files by decreasing number of tests; a file's items keep their order. Every worker
    computes the same order (the controller checks that the collections match), and
    with `--no-loadscope-reorder` the controller hands out files in this order. A run
    without workers keeps pytest's order, and so do `--failed-first` / `--new-first`."""
    if not hasattr(config, "workerinput") or config.getoption("failedfirst", False) \
            or config.getoption("newfirst", False):
        return
    files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.path, []).append(item)
    rank = {TESTS / name: i for i, name in enumerate(SLOW_FILES)}
    ordered = sorted(files, key=lambda p: (rank.get(p, len(rank)), -len(files[p])))
    items[:] = [item for path in ordered for item in files[path]]


# -- the oracle's error table (tests/oracle/conftest.py) from the workers --------------

_WORKER_ERRORS: dict[str, float] = {}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller merges each worker's largest errors per category."""
    output = getattr(node, "workeroutput", None) or {}
    for category, value in output.get("oracle_max_rel_err", {}).items():
        _WORKER_ERRORS[category] = max(_WORKER_ERRORS.get(category, 0.0), value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Under xdist, the table tests/oracle/conftest.py prints in a run without
    workers: the largest relative error per category over all workers."""
    if not _WORKER_ERRORS:
        return
    terminalreporter.write_sep("-", "oracle: max relative error per category")
    for category in sorted(_WORKER_ERRORS):
        terminalreporter.write_line(f"{category:40s} {_WORKER_ERRORS[category]:.3e}")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWNER:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def session_cache_dir() -> str:
    """The compile cache folder of this test session."""
    return _CACHE_DIR
