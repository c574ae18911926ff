"""Shared helpers of the oracle suite: tolerant comparison, error bookkeeping, torch.

The oracles (PyTorch autograd, numpy finite differences) are written independently of
the compiler; these helpers only compare numbers and remember how close they came, so
the terminal summary can report the largest relative error seen per category.

Test modules reach the helpers through the `oracle` and `torch` fixtures rather than
`import conftest`, which would break as soon as another test directory grows a
conftest.py of its own.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The pinned oracle (pyproject's test extra).
TORCH_VERSION = "2.13.0"
TESTDATA = ROOT / "testdata"

#: Largest error figure seen per category: normwise relative (max|ours - ref| / max|ref|)
#: from `record`, or a figure a test computed itself and passed to `note`.
MAX_REL_ERR: dict[str, float] = {}


def seeded_rng(key: str) -> np.random.Generator:
    """A generator seeded from a string, stable across processes.

    crc32 rather than hash(): Python randomises string hashes per process.
    """
    return np.random.default_rng(zlib.crc32(key.encode()))


def record(category: str, ours: np.ndarray, ref: np.ndarray) -> float:
    """Note the normwise relative error of `ours` against `ref` under `category`."""
    ours64 = np.asarray(ours, dtype=np.float64)
    ref64 = np.asarray(ref, dtype=np.float64)
    diff = float(np.max(np.abs(ours64 - ref64), initial=0.0))
    scale = float(np.max(np.abs(ref64), initial=0.0))
    rel = diff / scale if scale > 0 else diff
    MAX_REL_ERR[category] = max(MAX_REL_ERR.get(category, 0.0), rel)
    return rel


def note(category: str, value: float) -> None:
    """Note an error figure computed by the test itself (e.g. elementwise relative)."""
    MAX_REL_ERR[category] = max(MAX_REL_ERR.get(category, 0.0), value)


def assert_close(ours: np.ndarray, ref: np.ndarray, *, category: str, what: str,
                 rtol: float = 1e-5, atol: float | None = None) -> None:
    """Elementwise |ours - ref| <= rtol * |ref| + atol, with a readable failure.

    The default atol is 1e-6 scaled by the reference's magnitude: an f32 result
    carries rounding error relative to the size of the terms that produced it,
    so elements that cancel to near zero cannot meet a purely relative bound.
    """
    ours64 = np.asarray(ours, dtype=np.float64)
    ref64 = np.asarray(ref, dtype=np.float64)
    assert ours64.shape == ref64.shape, f"{what}: shape {ours64.shape} vs oracle {ref64.shape}"
    if atol is None:
        atol = 1e-6 * max(1.0, float(np.max(np.abs(ref64), initial=0.0)))
    record(category, ours64, ref64)
    bad = np.abs(ours64 - ref64) > rtol * np.abs(ref64) + atol
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} elements differ "
            f"(rtol={rtol}, atol={atol:.3g}); first at {idx}: "
            f"ours {ours64[idx]!r} vs oracle {ref64[idx]!r}; "
            f"max abs diff {float(np.max(np.abs(ours64 - ref64))):.3g}"
        )


def spec_loss(torch: ModuleType, doc: dict[str, Any], x: Any, params: dict[str, Any],
              target: Any) -> Any:
    """A v0 spec's loss in torch, read straight off the spec *document* (JSON dict).

    Independent of the frontend: y = input @ W (+ bias) (relu) per layer, wired by
    name; loss = mean((prediction - target)^2). `params` maps `<layer>.weight` /
    `<layer>.bias` to tensors.
    """
    values = {doc["inputs"][0]["name"]: x}
    for layer in doc["layers"]:
        y = values[layer["input"]] @ params[f"{layer['name']}.weight"]
        if "bias_shape" in layer:
            y = y + params[f"{layer['name']}.bias"]
        if layer.get("activation", "none") == "relu":
            y = torch.relu(y)
        values[layer["name"]] = y
    return ((values[doc["loss"]["prediction"]] - target) ** 2).mean()


def doc_param_names(doc: dict[str, Any]) -> list[str]:
    """Parameter order a spec document defines: per layer, weight then bias."""
    names = []
    for layer in doc["layers"]:
        names.append(f"{layer['name']}.weight")
        if "bias_shape" in layer:
            names.append(f"{layer['name']}.bias")
    return names


class Oracle:
    """The module-level helpers of this file, handed to tests by the `oracle` fixture."""

    testdata = TESTDATA
    rng = staticmethod(seeded_rng)
    note = staticmethod(note)
    record = staticmethod(record)
    assert_close = staticmethod(assert_close)
    spec_loss = staticmethod(spec_loss)
    doc_param_names = staticmethod(doc_param_names)


@pytest.fixture(scope="session")
def oracle() -> Oracle:
    """Comparison helpers (see `Oracle`)."""
    return Oracle()


@pytest.fixture(scope="session")
def torch() -> Iterator[ModuleType]:
    """PyTorch, single-threaded (its reductions then run in one fixed order).

    Skips only where torch is not installed; CI installs it (the `test` extra), so
    there these tests always run.
    """
    mod = pytest.importorskip("torch", reason="the PyTorch oracle needs torch (extra 'test')")
    # The oracle is pinned: another version may round or break ties differently, and
    # the figures in docs/numerics.md are for this one.
    assert mod.__version__.split("+")[0] == TORCH_VERSION, \
        f"the oracle is torch=={TORCH_VERSION}, found {mod.__version__}"
    threads = mod.get_num_threads()
    mod.set_num_threads(1)
    yield mod
    mod.set_num_threads(threads)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker: hand the figures to the controller, which prints the
    table over all workers (tests/conftest.py)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["oracle_max_rel_err"] = dict(MAX_REL_ERR)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the largest relative error per category (the figure a reviewer asks for)."""
    if not MAX_REL_ERR:
        return
    # Normwise (max|ours - ref| / max|ref|) unless the category says otherwise.
    terminalreporter.write_sep("-", "oracle: max relative error per category")
    for category in sorted(MAX_REL_ERR):
        terminalreporter.write_line(f"{category:40s} {MAX_REL_ERR[category]:.3e}")
