"""Every ```python block of docs/python-api.md runs, and the complete example does what
the page says.

The test executes the page's blocks themselves (no copies of them here), so the
documentation cannot drift from the API. Each block runs on its own, in a fresh
namespace: a reader can paste any one of them.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import frame

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
#: The graph ops of the API.
SHEET_OPS = ("add", "mul", "relu", "square", "matmul", "sum", "mse_loss", "constant",
             "selective_scan", "heaviside_surrogate", "scatter_add")
#: The complete training example is the block that defines this name.
COMPLETE_EXAMPLE_MARKER = "epoch_losses = []"


def _blocks() -> list[tuple[int, str]]:
    """(line number, source) of every ```python block of the page."""
    text = DOC.read_text()
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M)]


def _run(source: str, line: int) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "python_api_example"}
    # Blank lines in front keep tracebacks pointing at the page's own line numbers.
    exec(compile("\n" * (line - 1) + source, str(DOC), "exec"), namespace)
    return namespace


def _example_source() -> tuple[int, str]:
    found = [(line, src) for line, src in _blocks() if COMPLETE_EXAMPLE_MARKER in src]
    assert len(found) == 1, "docs/python-api.md must hold one complete training example"
    return found[0]


def test_the_page_documents_with_runnable_blocks() -> None:
    # A quick start, one block per reference section and the complete example.
    assert len(_blocks()) >= 8


@pytest.mark.parametrize("line", [line for line, src in _blocks()
                                  if COMPLETE_EXAMPLE_MARKER not in src])
def test_reference_block_runs(line: int) -> None:
    source = dict(_blocks())[line]
    _run(source, line)


@pytest.fixture(scope="module")
def example() -> dict[str, object]:
    """The namespace the complete example leaves behind after running it."""
    line, source = _example_source()
    return _run(source, line)


def test_example_trains(example: dict[str, object]) -> None:
    losses = example["epoch_losses"]
    assert isinstance(losses, list) and len(losses) == 40
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0] / 2
    assert losses[-1] < losses[0] / 10  # what the page's printed output shows


def test_example_round_trips_the_weights(example: dict[str, object]) -> None:
    names, restored, weights = example["names"], example["restored"], example["weights"]
    assert names == ["mlp.0.weight", "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"]
    assert list(restored) == names  # file order = insertion order
    for name, w in zip(names, weights, strict=True):
        assert restored[name].dtype is frame.DType.float32
        assert restored[name].numpy().tobytes() == w.numpy().tobytes()
    trained, reloaded = example["trained"], example["reloaded"]
    assert trained.numpy().tobytes() == reloaded.numpy().tobytes()


def test_example_prints_what_the_page_shows(example: dict[str, object]) -> None:
    text = DOC.read_text()
    shown = re.search(r"```text\n(.*?)```", text, re.S)
    assert shown is not None
    lines = shown.group(1).splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("epoch")] == ["0", "10", "20", "30",
                                                                           "39"]
    losses = example["epoch_losses"]
    for ln in (ln for ln in lines if ln.startswith("epoch")):
        epoch, value = int(ln.split()[1]), float(ln.split()[-1])
        assert losses[epoch] == pytest.approx(value, rel=1e-2)  # digits may vary by CPU


def _status_cells(area: str) -> tuple[set[str], set[str]]:
    """(implemented, not yet) names of `frame._core` in the status table row of `area`."""
    row = next(ln for ln in DOC.read_text().splitlines() if ln.startswith(f"| {area} |"))
    _, done, todo = (cell for cell in row.strip("|").split("|"))

    def names(cell: str) -> set[str]:
        found = {re.sub(r"\(.*", "", n) for n in re.findall(r"`([^`]+)`", cell)}
        return {n for n in found if n.isidentifier() and callable(getattr(frame._core, n, None))}

    return names(done), names(todo)


@pytest.mark.parametrize("area", ["graph ops", "nn"])
def test_status_table_matches_the_package(area: str) -> None:
    """The page's implemented / not-yet lists: a not-yet name raises NotImplementedError
    even without arguments, an implemented one asks for its arguments (TypeError)."""
    done, todo = _status_cells(area)
    every = set(frame.nn.__all__) if area == "nn" else set(SHEET_OPS)
    assert done | todo == every and not done & todo
    for name in done:
        with pytest.raises(TypeError):
            getattr(frame._core, name)()
    for name in todo:
        with pytest.raises(NotImplementedError, match=name):
            getattr(frame._core, name)()
