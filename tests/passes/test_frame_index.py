"""The index family (`frame_mlir/dialects/frame_index.py`): index_select and index_add
against PyTorch -- forward and gradients for axis 0, 1 and last of rank 1-4 inputs,
repeated and unsorted indices, int32 and int64, an empty index list; the gradients of
the float operand against central differences of our own compiled forward; f16 storage;
the run-time error for an index out of range; the shape rules' messages; and the emitted
C++ against the JIT, bit for bit, on every op of the family (scatter_add and
gather_rows too)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cpp_vs_jit import CXX, assert_cpp_matches_jit, same_bits
from xdsl.dialects import builtin
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.passes.pipeline import run_pipeline
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")

INDEX_TYPES = {"i32": (builtin.i32, np.int32), "i64": (builtin.i64, np.int64)}
#: (input shape, axis): axis 0, 1 and the last one of rank 1-4 inputs.
CASES = [((5,), 0), ((4, 3), 0), ((4, 3), 1), ((2, 5, 3), 0), ((2, 5, 3), 1),
         ((2, 5, 3), 2), ((2, 3, 4, 5), 0), ((2, 3, 4, 5), 1), ((2, 3, 4, 5), 3)]
OPS = ("index_select", "index_add")


def _k(shape: tuple[int, ...], axis: int) -> int:
    """The index count: two more than the dim, so some index repeats."""
    return shape[axis] + 2


def _index_lists(n: int, k: int, seed: int) -> dict[str, list[int]]:
    """k indices into [0, n): repeated and unsorted (the last first, the first index
    twice, ...), and all equal (every slice added into one)."""
    rng = np.random.default_rng(seed)
    mixed = [n - 1, 0, n - 1, n // 2, *rng.integers(0, n, k - 4).tolist()]
    return {"mixed": mixed[:k], "same": [n // 2] * k}


def _out_shape(op: str, shape: tuple[int, ...], axis: int, k: int) -> tuple[int, ...]:
    """index_select maps `shape` to this; index_add maps this (its source) to `shape`."""
    return (*shape[:axis], k, *shape[axis + 1:])


def _name(op: str, shape: tuple[int, ...], axis: int, index: str, k: int | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    return f"{op}_{dims}_a{axis}_{index}" + ("" if k is None else f"_k{k}")


def _index_arg(g: Graph, elem: builtin.IntegerType, k: int) -> SSAValue:
    return g.add_input((k,), "idx", elem=elem)


def _fn(op: str, shape: tuple[int, ...], axis: int, index: str, k: int | None = None) -> Any:
    """@name(p [param], idx, r) = sum(op(p, idx) * r): p is index_select's input of
    `shape`, or index_add's source (index_add's result has `shape`)."""
    k = _k(shape, axis) if k is None else k
    g = Graph(_name(op, shape, axis, index, None if k == _k(shape, axis) else k))
    small = _out_shape(op, shape, axis, k)
    p_shape, out = (shape, small) if op == "index_select" else (small, shape)
    (p,) = add_parameter_inputs(g, [ParamSpec("p", p_shape, UniformSeeded(-1, 1))])
    idx = _index_arg(g, INDEX_TYPES[index][0], k)
    r = g.add_input(out, "r")
    y = g.emit(frame.IndexSelectOp(p, idx, axis) if op == "index_select" else
               frame.IndexAddOp(p, idx, axis, frame.tensor_type(out)))
    return g.finish([g.emit(frame.SumOp(g.emit(frame.MulOp(y, r))))])


def _fwd(op: str, shape: tuple[int, ...], axis: int, index: str, k: int) -> Any:
    """@name_fwd(p, idx) = op(p, idx), no gradient."""
    g = Graph(_name(op, shape, axis, index, k) + "_fwd")
    small = _out_shape(op, shape, axis, k)
    p_shape, out = (shape, small) if op == "index_select" else (small, shape)
    p = g.add_input(p_shape, "p")
    idx = _index_arg(g, INDEX_TYPES[index][0], k)
    y = g.emit(frame.IndexSelectOp(p, idx, axis) if op == "index_select" else
               frame.IndexAddOp(p, idx, axis, frame.tensor_type(out)))
    return g.finish([y])


#: An empty index list: legal in torch (a 0-long dim; index_add adds nothing).
EMPTY = [((4, 3), 1), ((5,), 0)]


@functools.cache
def _executable() -> Executable:
    """Every (op, case, index type), with gradients, and the forward ops alone, in one
    module compiled once."""
    fns = [_fn(op, s, a, i) for op in OPS for s, a in CASES for i in INDEX_TYPES]
    fns += [_fwd(op, s, a, i, _k(s, a)) for op in OPS for s, a in CASES for i in INDEX_TYPES]
    fns += [_fn(op, s, a, "i64", 0) for op in OPS for s, a in EMPTY]
    fns += [_fwd(op, s, a, "i64", 0) for op in OPS for s, a in EMPTY]
    return compile_module(builtin.ModuleOp(fns), options=CompileOptions(threads=1), cache=None)


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _torch_op(op: str, p: Any, idx: np.ndarray, axis: int, out: tuple[int, ...]) -> Any:
    ti = torch.from_numpy(idx.astype(np.int64))
    if op == "index_select":
        return torch.index_select(p, axis, ti)
    return torch.zeros(out, dtype=p.dtype).index_add(axis, ti, p)


def _run_vs_torch(op: str, shape: tuple[int, ...], axis: int, index: str,
                  idx_values: list[int], k: int, seed: int) -> None:
    ex = _executable()
    small = _out_shape(op, shape, axis, k)
    p_shape, out = (shape, small) if op == "index_select" else (small, shape)
    p, r = _data(p_shape, seed), _data(out, seed + 1)
    idx = np.array(idx_values, INDEX_TYPES[index][1]).reshape(k)
    name = _name(op, shape, axis, index, None if k == _k(shape, axis) else k)
    loss, grad = ex(f"{name}_grad", p, idx, r)
    (y,) = ex(_name(op, shape, axis, index, k) + "_fwd", p, idx)
    # The forward against torch in float32: the same bits (a selection copies; index_add
    # adds in index order from 0, as torch's CPU kernel).
    tp = torch.from_numpy(p).requires_grad_()
    ty = _torch_op(op, tp, idx, axis, out)
    same_bits(y, ty.detach().numpy(), f"{name} forward")
    (ty * torch.from_numpy(r)).sum().backward()
    # The gradient: dy is r exactly (d sum(y * r) / dy), so the VJP op's result is bit
    # for bit torch's (index_add of r for index_select, a selection of r for index_add).
    same_bits(grad, tp.grad.numpy(), f"{name} gradient")
    # The loss, a float32 sum in some order: against float64.
    ref = (_torch_op(op, torch.from_numpy(p).double(), idx, axis, out)
           * torch.from_numpy(r).double()).sum().item()
    np.testing.assert_allclose(loss, ref, rtol=1e-5, atol=1e-5, err_msg=f"{name} loss")


@pytest.mark.parametrize("indices", ["mixed", "same"])
@pytest.mark.parametrize("index", INDEX_TYPES, ids=str)
@pytest.mark.parametrize("shape,axis", CASES, ids=[_name("", s, a, "")[1:-1] for s, a in CASES])
@pytest.mark.parametrize("op", OPS)
def test_forward_and_gradient_vs_torch(op: str, shape: tuple[int, ...], axis: int, index: str,
                                       indices: str) -> None:
    """index_select and index_add, forward and the float operand's gradient, the same bits
    as torch's float32; repeated indices accumulate (in index order)."""
    k = _k(shape, axis)
    values = _index_lists(shape[axis], k, len(shape) * 10 + axis)[indices]
    _run_vs_torch(op, shape, axis, index, values, k, len(shape) + axis)


@pytest.mark.parametrize("shape,axis", EMPTY)
@pytest.mark.parametrize("op", OPS)
def test_empty_index_list(op: str, shape: tuple[int, ...], axis: int) -> None:
    """No indices: index_select's result has a 0-long dim, index_add's is all zeros, and
    the gradients are zeros / empty -- as torch."""
    _run_vs_torch(op, shape, axis, "i64", [], 0, 7)
    ex = _executable()
    small = _out_shape(op, shape, axis, 0)
    p_shape = shape if op == "index_select" else small
    (y,) = ex(_name(op, shape, axis, "i64", 0) + "_fwd", _data(p_shape, 1),
              np.zeros(0, np.int64))
    assert y.shape == (small if op == "index_select" else shape)
    assert not y.any()


@pytest.mark.parametrize("shape,axis", [((4, 3), 0), ((2, 5, 3), 1), ((2, 3, 4, 5), 3)])
@pytest.mark.parametrize("op", OPS)
def test_gradient_vs_finite_differences(op: str, shape: tuple[int, ...], axis: int) -> None:
    """@name_grad's gradient against central differences of @name (our compiled forward,
    without torch and without the VJP table), h = 1e-2 on the float operand."""
    ex = _executable()
    name = _name(op, shape, axis, "i64")
    k = _k(shape, axis)
    small = _out_shape(op, shape, axis, k)
    p_shape, out = (shape, small) if op == "index_select" else (small, shape)
    p, r = _data(p_shape, 3), _data(out, 4)
    idx = np.array(_index_lists(shape[axis], k, 5)["mixed"], np.int64)
    _, grad = ex(f"{name}_grad", p, idx, r)
    fd = np.zeros(p.shape)
    h = 1e-2
    for at in np.ndindex(p.shape):
        plus, minus = p.copy(), p.copy()
        plus[at] = np.float32(p[at] + h)
        minus[at] = np.float32(p[at] - h)
        step = float(plus[at]) - float(minus[at])
        fd[at] = (float(ex(name, plus, idx, r)[0]) - float(ex(name, minus, idx, r)[0])) / step
    # The loss is linear in p: the differences are exact up to the loss's rounding.
    np.testing.assert_allclose(grad, fd, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(fd).max()))
    # Slices never indexed get no gradient (index_select) / no loss term (index_add).
    if op == "index_select":
        unused = sorted(set(range(shape[axis])) - set(idx.tolist()))
        assert not np.take(grad, unused, axis=axis).any()


def test_edge_values_are_selected_bit_for_bit() -> None:
    """index_select copies: NaN, infinities, -0.0 and denormals come out as they went
    in (the one-hot scan selects, it does not add), as torch's."""
    g = Graph("edges")
    x = g.add_input((2, 4), "x")
    idx = _index_arg(g, builtin.i64, 6)
    ex = compile_module(builtin.ModuleOp([g.finish([g.emit(frame.IndexSelectOp(x, idx, 1)),
                                                    g.emit(frame.IndexSelectOp(x, idx, 1))])]),
                        cache=None)
    xs = np.array([[np.nan, -0.0, np.inf, 1e-40], [-np.inf, 0.0, -1e-40, 3.5]], np.float32)
    ii = np.array([1, 1, 0, 3, 2, 1], np.int64)
    y, _ = ex("edges", xs, ii)
    ref = torch.index_select(torch.from_numpy(xs), 1, torch.from_numpy(ii)).numpy()
    same_bits(y, ref, "index_select on edge values")
    assert np.signbit(y[0, 0]) and np.signbit(y[0, 1])


def test_f16_storage() -> None:
    """f16: index_select keeps the bits; index_add sums in f32 and rounds once, within
    one f16 rounding of torch's float64 sum."""
    g = Graph("half")
    x = g.add_input((3, 4), "x", elem=builtin.f16)
    idx = _index_arg(g, builtin.i32, 5)
    sel = g.emit(frame.IndexSelectOp(x, idx, 1))
    add = g.emit(frame.IndexAddOp(sel, idx, 1, frame.tensor_type((3, 4), builtin.f16)))
    ex = compile_module(builtin.ModuleOp([g.finish([sel, add])]), cache=None)
    xs = _data((3, 4), 11).astype(np.float16)
    ii = np.array([3, 0, 3, 3, 1], np.int32)
    y, z = ex("half", xs, ii)
    assert y.dtype == z.dtype == np.float16
    ti = torch.from_numpy(ii.astype(np.int64))
    np.testing.assert_array_equal(y.view(np.uint16), torch.index_select(
        torch.from_numpy(xs), 1, ti).numpy().view(np.uint16))
    ref = torch.zeros(3, 4, dtype=torch.float64).index_add(
        1, ti, torch.from_numpy(y.astype(np.float64))).numpy()
    np.testing.assert_allclose(z.astype(np.float64), ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("bad,at", [([1, 0, 5, 0, 2, 4, 1], 2), ([1, -1, 4, 0, 2, 4, 1], 1),
                                    ([1, 0, 4, 0, 2, 4, 99], 6)])
def test_index_out_of_range_is_a_run_time_error(op: str, bad: list[int], at: int) -> None:
    """An index outside [0, size) of the indexed dim: a ValueError before any code runs
    (torch raises too), naming the op, the value, its position and the bound;
    the forward and the gradient function alike; the executable stays usable."""
    shape, axis = (2, 5, 3), 1
    ex = _executable()
    k = _k(shape, axis)
    small = _out_shape(op, shape, axis, k)
    p_shape, out = (shape, small) if op == "index_select" else (small, shape)
    idx = np.array(bad, np.int32)
    name = _name(op, shape, axis, "i32")
    with pytest.raises(ValueError, match="out of range") as err:
        ex(f"{name}_grad", _data(p_shape, 0), idx, _data(out, 1))
    msg = str(err.value)
    assert f"frame.{op}: index {bad[at]} at position {at} is out of range" in msg, msg
    assert "expected 0 <= index < 5" in msg, msg
    with pytest.raises(ValueError, match=f"frame.{op}: index {bad[at]} at position {at}"):
        ex(name, _data(p_shape, 0), idx, _data(out, 1))
    with pytest.raises((IndexError, RuntimeError)):  # torch's message varies by op
        _torch_op(op, torch.from_numpy(_data(p_shape, 0)), idx, axis, out)
    ok = np.array(_index_lists(5, k, 0)["mixed"], np.int32)
    assert np.isfinite(ex(name, _data(p_shape, 0), ok, _data(out, 1))[0])


def test_shape_rules_name_the_op_and_the_operand() -> None:
    """The builders apply the shape rule: axis out of range, indices not rank 1, an
    index count that is not the source's dim; expected vs found."""
    g = Graph("rules")
    x = g.add_input((2, 5), "x")
    i1 = _index_arg(g, builtin.i64, 3)
    i2 = g.add_input((3, 1), "i2", elem=builtin.i64)
    with pytest.raises(frame.ShapeError, match=r"frame.index_select: axis expected in "
                       r"\[0, 2\) for the rank-2 input \[2, 5\], found 2"):
        frame.IndexSelectOp(x, i1, 2)
    with pytest.raises(frame.ShapeError, match=r"frame.index_select: indices \(operand #1\) "
                       r"expected rank 1, found shape \[3, 1\]"):
        frame.IndexSelectOp(x, i2, 0)
    op = frame.IndexAddOp(x, i1, 1, frame.tensor_type((2, 7)))
    with pytest.raises(VerifyException, match=r"frame.index_add: indices \(operand #1\) expected "
                       r"shape \[5\] \(dim 1 of the source \[2, 5\]\), found \[3\]"):
        op.verify()
    assert frame.IndexSelectOp(x, i1, 1).result.type == frame.tensor_type((2, 3))


#: (x's shape, index count, rows of m) of the family module: small for the C++ harness,
#: large enough for frame-parallelize (`MIN_PARALLEL_WORK` innermost iterations).
SMALL, LARGE = ((3, 5, 4), 4, 4), ((6, 40, 32), 48, 6)


def _cpp_module(sizes: tuple[tuple[int, ...], int, int] = SMALL) -> builtin.ModuleOp:
    """@fam(x, idx i64 [k], m [rows, 3], idx32 i32 [k]) -> every op of the family."""
    shape, k, rows_m = sizes
    g = Graph("fam")
    x = g.add_input(shape, "x")
    idx = _index_arg(g, builtin.i64, k)
    m = g.add_input((rows_m, 3), "m")
    idx32 = _index_arg(g, builtin.i32, k)
    outs: list[SSAValue] = []
    for axis, ii in ((0, idx), (1, idx32), (2, idx)):
        y = g.emit(frame.IndexSelectOp(x, ii, axis))
        outs += [y, g.emit(frame.IndexAddOp(y, ii, axis, x.type))]
    rows = g.emit(frame.GatherRowsOp(m, idx))
    outs += [rows, g.emit(frame.ScatterAddOp(rows, idx32, m.type))]
    return builtin.ModuleOp([g.finish(outs)])


def _cpp_inputs(sizes: tuple[tuple[int, ...], int, int] = SMALL) -> list[np.ndarray]:
    shape, k, rows_m = sizes
    xs = _data(shape, 2)
    xs[0, 1, 2], xs[1, 2, 3], xs[2, 0, 0], xs[0, 0, 1] = np.nan, np.inf, -0.0, -np.inf
    ii = np.array([2, 0, 2, 1, *np.random.default_rng(0).integers(0, min(shape), k - 4)],
                  np.int64)
    return [xs, ii, _data((rows_m, 3), 3), ii.astype(np.int32)]


def test_threads_compute_the_same_bits() -> None:
    """frame-parallelize splits the outer parallel loops of the one-hot scans of
    index_select and index_add: four threads give the bits of one."""
    module = _cpp_module(LARGE)
    run_pipeline(module, None, stop_after="loops", options=CompileOptions(threads=4))
    assert str(module).count("frame_rt.parallel_for") >= 6
    outs = [compile_module(_cpp_module(LARGE), options=CompileOptions(threads=t), cache=None)(
        "fam", *_cpp_inputs(LARGE)) for t in (1, 4)]
    for i, (a, b) in enumerate(zip(*outs, strict=True)):
        same_bits(a, b, f"output {i}")


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit(tmp_path: Path) -> None:
    """The loops stage of every op of the family emitted as C++, compiled with g++ (-O2,
    no FP contraction, as the emitted programs are) and run on edge values: the same
    bits as the JIT's; and the JIT's are torch's."""
    xs, ii, ms, ii32 = _cpp_inputs()
    outs = assert_cpp_matches_jit(_cpp_module, "fam", [xs, ii, ms, ii32], tmp_path)
    tx, ti = torch.from_numpy(xs), torch.from_numpy(ii)
    for axis in range(3):
        y = torch.index_select(tx, axis, ti)
        same_bits(outs[2 * axis], y.numpy(), f"index_select axis {axis}")
        same_bits(outs[2 * axis + 1], torch.zeros(3, 5, 4).index_add(axis, ti, y).numpy(),
                  f"index_add axis {axis}")
