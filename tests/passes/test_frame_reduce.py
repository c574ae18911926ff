"""The reduction family (`frame_mlir/dialects/frame_reduce.py`) and broadcasting beyond
the torch oracle cases of tests/oracle/test_ops_vs_torch.py: max's first-maximum
gradient on ties and NaN, and maximum / minimum's tie rule, against torch bit for bit;
keepdims shapes and the shape rules' errors; and the emitted C++ against the JIT, bit
for bit, on every op of the family and the broadcasting binary ops."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cpp_vs_jit import CXX, assert_cpp_matches_jit, same_bits
from xdsl.dialects import builtin
from xdsl.utils.exceptions import VerifyException

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")

SHAPE = (2, 3, 4)
#: Few distinct values, so that groups hold tied maxima; NaN, both infinities, both
#: zeros and a denormal among them.
TIES = np.array([1.0, 0.0, 1.0, -1.0, 1.0, 1.0, 0.5, np.nan, 0.5, np.nan, -0.0, 0.0,
                 -np.inf, -np.inf, -np.inf, -np.inf, 2.0, -0.0, 2.0, 0.0, 1e-40, 1e-40, -1.0,
                 np.inf], np.float32).reshape(SHAPE)
#: (axes or None for all, keepdims) of the max cases.
AXES: tuple[tuple[tuple[int, ...] | None, bool], ...] = (
    ((2,), False), ((1,), True), ((0, 2), False), ((0, 1), True), (None, False), (None, True))



def _first_max(x: Any, axes: Sequence[int] | None, keepdims: bool) -> Any:
    """torch.max(dim) over the reduced dims moved last and flattened: its index, where
    autograd sends dy, is the first maximum (or first NaN) of the group in row-major order."""
    axes = sorted(range(x.dim()) if axes is None else axes)
    kept = [d for d in range(x.dim()) if d not in axes]
    flat = x.permute(*kept, *axes).reshape(*[x.shape[d] for d in kept], -1)
    values = flat.max(dim=-1).values
    if keepdims:
        values = values.reshape([1 if d in axes else x.shape[d] for d in range(x.dim())])
    return values


def _run(build: Any, *inputs: np.ndarray) -> list[np.ndarray]:
    g = Graph("f")
    vals = [g.add_input(a.shape, f"in{i}") for i, a in enumerate(inputs)]
    fn = g.finish([g.emit(op) for op in build(g, *vals)])
    return list(compile_module(builtin.ModuleOp([fn]), options=CompileOptions(threads=1),
                               cache=None)("f", *inputs))


@pytest.mark.parametrize("axes,keepdims", AXES)
def test_max_and_its_gradient_match_torch_bitwise_on_ties_and_nan(
        axes: tuple[int, ...] | None, keepdims: bool) -> None:
    """frame.max's values are torch.amax's (NaN wins, the first of tied maxima stays:
    -0.0 before 0.0 gives -0.0); its gradient goes to exactly one element per group,
    the one torch.max(dim) returns: the first maximum, the first NaN, the first of a
    group of -inf."""
    ax = None if axes is None else list(axes)
    out_shape = frame.reduced_shape(SHAPE, ax, keepdims, "max")
    dy = np.linspace(0.5, 1.5, max(1, int(np.prod(out_shape))), dtype=np.float32
                     ).reshape(out_shape)
    m, dx = _run(lambda g, x, d: [frame.MaxOp(x, ax, keepdims),
                                  frame.MaxGradOp(x, d, ax, keepdims)], TIES, dy)
    tx = torch.from_numpy(TIES.copy()).requires_grad_()
    ref = _first_max(tx, axes, keepdims)
    (grad,) = torch.autograd.grad(ref, tx, torch.from_numpy(dy))
    same_bits(m, ref.detach().numpy(), "max values")
    amax = torch.amax(torch.from_numpy(TIES), dim=tuple(range(3)) if axes is None else axes,
                      keepdim=keepdims).numpy()
    assert ((m == amax) | (np.isnan(m) & np.isnan(amax))).all(), "max values vs torch.amax"
    same_bits(dx, grad.numpy(), "max gradient")
    assert np.count_nonzero(dx) == dy.size  # one element per group


def test_max_gradient_goes_to_the_first_maximum_of_a_plateau() -> None:
    """A group of equal values (and one whose only candidates are the later of two
    NaNs' first) sends dy to its first element only, as torch.max(dim)."""
    x = np.array([[3.0, 3.0, 3.0, 3.0], [1.0, np.nan, 5.0, np.nan], [-0.0, 0.0, -0.0, 0.0]],
                 np.float32)
    dy = np.array([1.0, 2.0, 3.0], np.float32)
    m, dx = _run(lambda g, a, d: [frame.MaxOp(a, [1]), frame.MaxGradOp(a, d, [1])], x, dy)
    np.testing.assert_array_equal(dx, [[1, 0, 0, 0], [0, 2, 0, 0], [3, 0, 0, 0]])
    assert m[0] == 3.0 and np.isnan(m[1]) and m[2] == 0.0 and np.signbit(m[2])


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_and_their_gradients_match_torch_on_ties_and_nan(name: str) -> None:
    """torch.maximum / minimum: NaN if either operand is; their gradient splits dy in
    halves between equal operands and gives all of dy to both where either is NaN.
    Broadcast [2, 3, 4] against [4] (each operand's gradient summed back, as torch's)."""
    a = TIES
    b = np.array([1.0, np.nan, -0.0, 0.5], np.float32)
    dy = np.linspace(-1.5, 1.5, a.size, dtype=np.float32).reshape(SHAPE)
    cls = frame.MaximumOp if name == "maximum" else frame.MinimumOp
    grad_cls = frame.MaximumGradOp if name == "maximum" else frame.MinimumGradOp
    y, ga, gb = _run(lambda g, x, w, d: [cls(x, w), grad_cls(x, w, d, 0), grad_cls(x, w, d, 1)],
                     a, b, dy)
    ta = torch.from_numpy(a.copy()).expand(SHAPE).clone().requires_grad_()
    tb = torch.from_numpy(b.copy()).expand(SHAPE).clone().requires_grad_()
    ref = getattr(torch, name)(ta, tb)
    ref_a, ref_b = torch.autograd.grad(ref, (ta, tb), torch.from_numpy(dy))
    same_bits(ga, ref_a.numpy(), f"{name}_grad wrt a")
    same_bits(gb, ref_b.numpy(), f"{name}_grad wrt b")
    # Values: torch's vector path returns b for equal operands, its scalar tail a; they
    # differ only for -0.0 vs +0.0, so there only the value is compared. Ours is b.
    aa, bb = np.broadcast_arrays(a, b)
    zeros = (aa == 0) & (bb == 0)
    same_bits(y[~zeros], ref.detach().numpy()[~zeros], f"{name} values")
    assert (y[zeros] == 0).all()
    same_bits(y[zeros], bb[zeros], f"{name} of zeros (ours: the rhs)")


def test_keepdims_shapes() -> None:
    """keepdims keeps the reduced dims as size 1 (sum, mean, max), without it they are
    dropped; no axes means all of them."""
    g = Graph("shapes")
    x = g.add_input((2, 3, 4), "x")
    cases = [
        (frame.SumOp(x, [1], keepdims=True), (2, 1, 4)), (frame.SumOp(x, [1]), (2, 4)),
        (frame.SumOp(x, keepdims=True), (1, 1, 1)), (frame.MeanOp(x, [0, 2], True), (1, 3, 1)),
        (frame.MeanOp(x), ()), (frame.MaxOp(x, [2], True), (2, 3, 1)),
        (frame.MaxOp(x, [0, 1]), (4,)), (frame.MaxOp(x, None, True), (1, 1, 1))]
    for op, shape in cases:
        assert frame.static_shape(op.results[0]) == shape, op.name
        op.verify()


def test_shape_errors_name_the_op_and_what_was_expected() -> None:
    g = Graph("errors")
    x, v = g.add_input((2, 3), "x"), g.add_input((4,), "v")
    with pytest.raises(frame.ShapeError, match=r"operands \[2, 3\] and \[4\] do not broadcast"):
        frame.AddOp(x, v)
    with pytest.raises(frame.ShapeError, match=r"frame.mean: axis 2 is out of range"):
        frame.MeanOp(x, [2])
    with pytest.raises(frame.ShapeError, match=r"frame.max: axis 0 appears twice"):
        frame.MaxOp(x, [0, 0])
    empty = g.add_input((2, 0), "e")
    with pytest.raises(frame.ShapeError, match=r"frame.max: reduced dims expected non-empty"):
        frame.MaxOp(empty, [1])
    with pytest.raises(frame.ShapeError, match=r"frame.max_grad: dy expected \[2\] \(the "
                       r"max's shape\), found \[4\]"):
        frame.MaxGradOp(x, v, [1])
    with pytest.raises(frame.ShapeError, match=r"frame.maximum_grad: dy expected \[2, 3\]"):
        frame.MaximumGradOp(x, x, v, 0)
    bad = frame.MinimumGradOp(x, x, x, 0)
    bad.wrt = builtin.IntegerAttr(2, builtin.i64)
    with pytest.raises(VerifyException, match="frame.minimum_grad: wrt expected 0 or 1, found 2"):
        bad.verify()


def test_mean_of_an_empty_group_is_nan_as_torch() -> None:
    x = np.zeros((3, 0), np.float32)
    (m,) = _run(lambda g, a: [frame.MeanOp(a, [1])], x)
    assert m.shape == (3,) and np.isnan(m).all()
    assert torch.isnan(torch.from_numpy(x).mean(1)).all()


# --------------------------------------------------------------------------- C++ emitter

X = np.concatenate([TIES.reshape(-1)[:12], np.linspace(-2.0, 2.0, 12, dtype=np.float32)]
                   ).reshape(SHAPE).astype(np.float32)
DY = np.linspace(-1.5, 1.5, X.size, dtype=np.float32).reshape(SHAPE)


def _ops(g: Graph, x: Any, dy: Any) -> list[Any]:
    """Every op of the family on (x, dy), and the broadcasting binary ops, in a fixed
    order."""
    row = g.emit(frame.SumOp(dy, [0, 1]))  # [4]
    col = g.emit(frame.SumOp(dy, [0, 2], keepdims=True))  # [1, 3, 1]
    m1 = g.emit(frame.MaxOp(dy, [1]))  # [2, 4]
    mk = g.emit(frame.MaxOp(dy, [0, 2], keepdims=True))  # [1, 3, 1]
    return [g.emit(op) for op in (
        frame.MeanOp(x, [1]), frame.MeanOp(dy, [0, 2], keepdims=True), frame.MeanOp(dy),
        frame.MaxOp(x, [2]), frame.MaxOp(x, [0, 2], keepdims=True), frame.MaxOp(x),
        frame.MaxGradOp(x, m1, [1]), frame.MaxGradOp(x, mk, [0, 2], keepdims=True),
        frame.MaximumOp(x, row), frame.MinimumOp(col, x), frame.MaximumOp(x, dy),
        frame.MaximumGradOp(x, row, dy, 0), frame.MaximumGradOp(x, row, dy, 1),
        frame.MinimumGradOp(col, x, dy, 0), frame.MinimumGradOp(col, x, dy, 1),
        frame.SumOp(x, [1], keepdims=True), frame.SumOp(dy, keepdims=True),
        frame.AddOp(x, row), frame.SubOp(col, x), frame.MulOp(row, col),
        frame.DivOp(dy, g.emit(frame.ShiftOp(g.emit(frame.AbsOp(row)), 0.5))))]


def _module() -> builtin.ModuleOp:
    g = Graph("fam")
    x, dy = g.add_input(SHAPE, "x"), g.add_input(SHAPE, "dy")
    return builtin.ModuleOp([g.finish(_ops(g, x, dy))])


def test_the_family_matches_torch() -> None:
    """The JIT's results of `_ops` (the module the C++ test emits) against torch."""
    outs = compile_module(_module(), options=CompileOptions(threads=1), cache=None)(
        "fam", X, DY)
    t = torch.from_numpy
    x, dy = t(X.copy()), t(DY.copy())
    row, col = dy.sum((0, 1)), dy.sum((0, 2), keepdim=True)
    refs = [x.mean(1), dy.mean((0, 2), keepdim=True), dy.mean(), _first_max(x, (2,), False),
            _first_max(x, (0, 2), True), _first_max(x, None, False)]
    for i, ref in enumerate(refs):
        np.testing.assert_allclose(outs[i], ref.numpy(), rtol=1e-6, atol=1e-7, err_msg=str(i))
    # (col's middle entry cancels to ~1e-7: its rounding depends on the summation order.)
    for i, ref in ((17, x + row), (18, col - x), (19, row * col)):
        np.testing.assert_allclose(outs[i], ref.numpy(), rtol=1e-6, atol=1e-6, err_msg=str(i))


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit(tmp_path: Path) -> None:
    """The loops stage of every op of the family (forward and gradient) and of the
    broadcasting binary ops, emitted as C++, compiled with g++ (-O2, no FP contraction,
    as the emitted programs are) and run on ties, NaN, infinities and zeros: the same
    bits as the JIT's."""
    assert_cpp_matches_jit(_module, "fam", [X, DY], tmp_path)
