"""One test per bug the fuzzers found, each its minimal reproducer.

Fixed bugs (in files this harness's owner may fix) are plain regression tests. Bugs in
files owned elsewhere are `xfail(strict=True)`: they fail until the owner fixes them,
and then the strict xfail turns red, which says to drop the marker. Each xfail bug is
also in `fzlib.frontends.KNOWN_BUGS`, so the campaign names it when met again.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
LENET = REPO / "testdata" / "networks" / "lenet_digits.json"


def _check(tmp_path: Path, doc: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from frame_mlir.tools.frame_dslc import main

    path = tmp_path / "net.json"
    path.write_text(json.dumps(doc))
    code = main(["--check", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


# ----------------------------------------------------------------- fixed (network frontend)


@pytest.mark.parametrize(("where", "value"), [
    (("operators", 0, "options", "kernel"), 3.0),        # was: internal error, exit 70
    (("operators", 0, "options", "kernel"), [3.0, 3]),
    (("operators", 4, "options", "outputs"), 500.0),
    (("inputs", 0, "shape"), [64, 1.0, 8, 8]),           # was: "parameter 'shape' does
    (("inputs", 1, "shape"), [64.0]),                    #  not verify", no rule
])
def test_network_integral_floats_are_integers(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             where: tuple[Any, ...], value: Any) -> None:
    """JSON Schema calls 3.0 an integer, so the schema accepts it; the loader must then
    treat it as 3 (NET: frontend/network/options.py, loader.py)."""
    doc = json.loads(LENET.read_text())
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = copy.deepcopy(value)
    code, text = _check(tmp_path, doc, capsys)
    assert code == 0, text
    assert text.startswith("OK")


def test_network_fractional_integer_option_is_a_clean_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(LENET.read_text())
    doc["operators"][0]["options"]["kernel"] = 3.5
    code, text = _check(tmp_path, doc, capsys)
    assert code == 1 and "NET-000" in text, text


# ----------------------------------------------------------------- open (other owners)


@pytest.mark.xfail(strict=True, raises=AttributeError,
                   reason="API-1, frame_mlir/api/nn.py: add_parameter_inputs(non-graph, m) "
                   "raises AttributeError, not the documented TypeError")
def test_add_parameter_inputs_rejects_a_non_graph() -> None:
    import frame

    module = frame.nn.Linear("l", 2, 3, 4, True, frame.DType.float32)
    with pytest.raises(TypeError):
        frame.nn.add_parameter_inputs(5, module)


# An unterminated string literal followed by more text on its line: xDSL 0.74's lexer
# regex `"(?:[^"\\\n\v\f]+|\\(...))*"` backtracks exponentially in the length of the
# rest of the line, so `frame-opt` (and `xdsl-opt`) never finish. Found as timeouts of
# the `ir` frontend; the fix belongs in frame_mlir/tools/locations.py (LocatingParser,
# e.g. rejecting an unterminated literal before lexing) or upstream in xDSL.
IR_1 = ('func.func @g(%a: ">) -> tensor<*xf32> { %0 = frame.relu %a : (tensor<4xf32>) '
        '-> tensor<*xf32> func.return %0 : tensor<*xf32> }\n')


@pytest.mark.xfail(strict=True, raises=subprocess.TimeoutExpired,
                   reason="IR-1, xDSL lexer / frame_mlir/tools: unterminated string literal "
                   "hangs frame-opt (exponential regex backtracking)")
def test_unterminated_string_literal_is_a_prompt_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "hang.mlir"
    path.write_text(IR_1)
    r = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_opt", str(path)],
                       capture_output=True, text=True, timeout=5)
    assert r.returncode == 1 and "parse error" in r.stderr, r.stderr


@pytest.mark.xfail(strict=True, reason="API-2, frame_mlir/nn/layers.py (_scan via "
                   "frame.nn.LSTM): num_steps beyond i64 lets xDSL's VerifyException escape")
def test_lstm_huge_num_steps_is_a_value_error() -> None:
    import frame

    f32 = frame.DType.float32
    graph = frame.Graph("g")
    lstm = frame.nn.LSTM("l", 2, 2**64 + 1, 3, 2, f32)
    x = graph.add_graph_input([2, 3], f32)
    params = frame.nn.add_parameter_inputs(graph, lstm)
    with pytest.raises(ValueError):
        lstm.build(graph, [x], params)


@pytest.mark.xfail(strict=True, raises=OverflowError,
                   reason="API-3, frame_mlir/nn/layers.py LayerNorm: dim 2**63 raises "
                   "OverflowError, not a documented class")
def test_layer_norm_dim_beyond_index_range_is_a_value_error() -> None:
    import frame

    with pytest.raises(ValueError):
        frame.nn.LayerNorm("n", 2**63, 1e-5, frame.DType.float32)


@pytest.mark.xfail(strict=True, raises=MemoryError,
                   reason="API-4, frame_mlir/nn/layers.py LayerNorm: dim 2**40 raises a "
                   "MemoryError without a message (it builds a (1.0,) * dim tuple)")
def test_layer_norm_huge_dim_is_a_clear_error() -> None:
    import frame

    with pytest.raises(ValueError, match="dim"):
        frame.nn.LayerNorm("n", 2**40, 1e-5, frame.DType.float32)
