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
    treat it as 3 (NET: frontends/network/options.py, loader.py)."""
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


# An unterminated string literal followed by more text on its line: xDSL 0.74's lexer
# regex `"(?:[^"\\\n\v\f]+|\\(...))*"` backtracks exponentially in the length of the
# rest of the line, so `frame-opt` never finished. Found as timeouts of the `ir` frontend;
# fixed by frame_mlir/dialects/xdsl_lexer_fix.py (a pattern that cannot backtrack).
IR_1 = ('func.func @g(%a: ">) -> tensor<*xf32> { %0 = frame.relu %a : (tensor<4xf32>) '
        '-> tensor<*xf32> func.return %0 : tensor<*xf32> }\n')


def test_unterminated_string_literal_is_a_prompt_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "hang.mlir"
    path.write_text(IR_1)
    r = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_opt", str(path)],
                       capture_output=True, text=True, timeout=5)
    assert r.returncode == 1 and "parse error" in r.stderr, r.stderr


# IR-2: a named linalg op without `ins(...)` (a misspelt keyword in the campaign's
# mutant of frame-outline-kernels.mlir, or the clause left out) made xDSL's parser index
# an empty tuple while building the op's hidden body: `internal error: IndexError`.
# Fixed by frame_mlir/dialects/xdsl_linalg_parse_fix.py (the parser's error at the op).
@pytest.mark.parametrize("op", [
    "linalg.add outs(%o : memref<2x2xf32>)",
    'linalg.fill {frame.layer = "b"} insdirect%z : f32) outs(%o : memref<2x2xf32>)'])
def test_named_linalg_op_without_ins_is_a_parse_error(tmp_path: Path, op: str) -> None:
    path = tmp_path / "noins.mlir"
    path.write_text("func.func @g(%o: memref<2x2xf32>) {\n  %z = arith.constant 0.0 : f32\n"
                    f"  {op}\n  func.return\n}}\n")
    r = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_opt", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "internal error" not in r.stderr and "parse error" in r.stderr, r.stderr
    assert f"{path}:3:" in r.stderr and "expects ins(...) and outs(...)" in r.stderr, r.stderr


# ----------------------------------------------------------------- fixed (Python API)


def test_add_parameter_inputs_rejects_a_non_graph() -> None:
    """API-1 (frame_mlir/frontends/api/nn.py): was AttributeError from `5.add_graph_input`."""
    import frame

    module = frame.nn.Linear("l", 2, 3, 4, True, frame.DType.float32)
    with pytest.raises(TypeError, match="add_parameter_inputs: expected a Graph first, "
                       "found int"):
        frame.nn.add_parameter_inputs(5, module)


def test_lstm_huge_num_steps_is_a_value_error() -> None:
    """API-2 (frame_mlir/nn/layers.py LSTM, via _scan): num_steps 2**64 + 1 let xDSL's
    VerifyException (an i64 out of range) escape from build. Now the factory's shared
    size check refuses it, and build checks the input's shape before emitting ops."""
    import frame

    f32 = frame.DType.float32
    with pytest.raises(ValueError, match=r"num_steps must be at most 2\^48 .* found "
                       f"{2**64 + 1}"):
        frame.nn.LSTM("l", 2, 2**64 + 1, 3, 2, f32)
    graph = frame.Graph("g")
    lstm = frame.nn.LSTM("l", 2, 2**40, 3, 2, f32)  # in range, but not x's shape
    x = graph.add_graph_input([2, 3], f32)
    params = frame.nn.add_parameter_inputs(graph, lstm)
    with pytest.raises(ValueError, match=r"LSTM 'l': input expected \[batch 2, num_steps "
                       r"1099511627776, input_dim 3\].*found \[2, 3\]"):
        lstm.build(graph, [x], params)


def test_layer_norm_dim_beyond_index_range_is_a_value_error() -> None:
    """API-3 (nn/layers.py LayerNorm): dim 2**63 was an OverflowError."""
    import frame

    with pytest.raises(ValueError, match=r"dim must be at most 2\^48"):
        frame.nn.LayerNorm("n", 2**63, 1e-5, frame.DType.float32)


def test_layer_norm_huge_dim_is_a_declaration() -> None:
    """API-4 (nn/layers.py LayerNorm): dim 2**40 was a MemoryError without a message
    (a `(1.0,) * dim` tuple for gamma's initial values). gamma and beta are now `Fill`
    declarations, so the module exists and its parameters are declared like any other
    module's; 2**49 is past the shared size check."""
    import frame

    f32 = frame.DType.float32
    m = frame.nn.LayerNorm("n", 2**40, 1e-5, f32)
    assert m.parameters() == [("n.gamma", [2**40], f32), ("n.beta", [2**40], f32)]
    with pytest.raises(ValueError, match="dim"):
        frame.nn.LayerNorm("n", 2**49, 1e-5, f32)


def _factories() -> list[Any]:
    """One nn factory call per kind of size argument, the size left open."""
    import frame

    f32, nn = frame.DType.float32, frame.nn
    return [lambda v: nn.Linear("l", v, 2, 2, True, f32),
            lambda v: nn.Conv1d("c", 1, 1, v, 1, 0, 1, True, f32),
            lambda v: nn.MaxPool2d("p", [v, 2], [1, 1], [0, 0]),
            lambda v: nn.MultiheadAttention("a", 2, v, 4, 2, True, f32),
            lambda v: nn.SpectralConv1d("s", 1, 1, 1, 8, v, f32),
            lambda v: nn.GraphConv("g", v, 2, 2, [0], [0], f32)]


@pytest.mark.parametrize("which", range(6))
@pytest.mark.parametrize(("value", "error"), [
    (2**63, ValueError), (2**64 + 1, ValueError), (-(2**64), ValueError),
    (True, TypeError), (1.5, TypeError), ("3", TypeError), (None, TypeError),
])
def test_nn_factory_sizes_share_one_check(which: int, value: Any, error: type) -> None:
    """Every nn factory's sizes go through `frame_mlir.frontends.api.nn._dim`: a bool or non-int
    is a TypeError, a magnitude beyond 2^48 a ValueError naming the argument."""
    with pytest.raises(error, match=r"must be (an int|at most 2\^48)"):
        _factories()[which](value)


def test_sgd_update_graph_of_a_huge_parameter_is_a_declaration() -> None:
    """API-5 (frame_mlir/frontends/api/training.py `_sgd_step`): a float16 (or lr <= 0) update of
    a [6, 3, 5, 2**31] parameter built `[lr] * prod(dims)` and raised MemoryError
    without a message; the step's constant is now a splat."""
    import frame

    for dtype, lr in ((frame.DType.float32, -0.97), (frame.DType.float16, 0.5)):
        g = frame.build_sgd_update_graph([[[6, 3, 5, 2**31], dtype]], lr)
        assert "sgd_update" in g.to_mlir()


# API-6: a positive alpha that rounds to 0 (or inf) in float32 passed the API's check,
# and the op's f32 attribute then failed its verifier inside frame-shape-inference
# ("produced invalid IR: frame.heaviside_surrogate: alpha expected finite and > 0, found
# 0.0"). Found by the CI fuzz sample of the api frontend.
@pytest.mark.parametrize("alpha", [1e-50, 1e39])
def test_heaviside_alpha_checked_in_float32(alpha: float) -> None:
    import frame

    g = frame.Graph("h")
    x = g.add_graph_input([3], frame.DType.float32)
    with pytest.raises(ValueError, match="alpha must be finite and > 0 in float32"):
        frame._core.heaviside_surrogate(g, x, alpha)


def test_lif_alpha_checked_in_float32() -> None:
    import frame

    g = frame.Graph("lif")
    x = g.add_graph_input([2, 3, 4], frame.DType.float32)
    m = frame.nn.LIFCell("lif", 2, 3, 4, 0.5, 1.0, 1e-50, frame.DType.float32)
    with pytest.raises(ValueError, match="alpha must be finite and > 0 in float32"):
        m.build(g, [x], frame.nn.add_parameter_inputs(g, m))


# API-7: LayerNorm's eps was checked as a Python float (finite, > 0), not as the f32
# attribute it becomes: 3.5e38, 1e39 or 1.8e308 escaped as xDSL's `OverflowError: float
# too large to pack with f format` from build, and 1e-50 became an eps of 0. Found by
# the option-value mutations of the api campaign (issue 30 item 3).
@pytest.mark.parametrize("eps", [3.5e38, 1e39, 1.7976931348623157e308, 1e-50])
def test_layer_norm_eps_checked_in_float32(eps: float) -> None:
    import frame

    g = frame.Graph("ln")
    x = g.add_graph_input([2, 3], frame.DType.float32)
    m = frame.nn.LayerNorm("n", 3, eps, frame.DType.float32)
    with pytest.raises(ValueError, match="eps must be finite and > 0 in float32"):
        m.build(g, [x], frame.nn.add_parameter_inputs(g, m))


# KYN-a: a `csv("...")` path holding a NUL character validated as far as resolving the
# path, where pathlib raised `ValueError: embedded null byte`: `frame-kyn validate`
# printed `frame-kyn: error: embedded null byte`, with no rule id or location. Found by
# the kyn campaign's acceptance property (a `no-rule` refusal; issue 30 item 3).
def test_kyn_csv_path_with_nul_is_a_rule(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from frame_mlir.tools.frame_kyn import main

    src = (REPO / "testdata" / "kyn" / "iris.kyn").read_text()
    prog = tmp_path / "p.kyn"
    prog.write_text(src.replace('csv("data/iris.csv")', 'csv("data/iris\0.csv")'))
    assert "\0" in prog.read_text()
    code = main(["validate", str(prog)])
    err = capsys.readouterr().err
    assert code == 1 and "KYN-S08" in err and "p.kyn:5:" in err, err
