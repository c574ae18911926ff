"""The classification losses (`frame_mlir/dialects/frame_loss.py`): nll_loss and
cross_entropy for every reduction, with int32 and int64 labels, ignored rows (some,
all, an ignore_index inside [0, C)), forward and gradient against PyTorch in float64
on the very float32 values our code receives; the gradients against central
differences of our own compiled forward; hard logits; f16; the run-time error for a
label out of range; and the emitted C++ against the JIT, bit for bit."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cpp_vs_jit import CXX, assert_cpp_matches_jit, same_bits
from xdsl.dialects import builtin
from xdsl.ir import SSAValue

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")
F = torch.nn.functional

N, C = 6, 5
REDUCTIONS = ("mean", "sum", "none")
OPS = {"nll_loss": (frame.NllLossOp, F.nll_loss),
       "cross_entropy": (frame.CrossEntropyOp, F.cross_entropy)}
INDEX_TYPES = {"i32": (builtin.i32, np.int32), "i64": (builtin.i64, np.int64)}
#: Label sets: every class and an ignored row; every row ignored; with ignore_index 2
#: (a class index) rows labelled 2 are ignored.
LABELS = {"some_ignored": ([1, -100, 4, 0, 2, 4], -100),
          "all_ignored": ([-100] * N, -100),
          "ignore_2": ([2, 0, 2, 4, 1, 3], 2)}


def _labels_arg(g: Graph, elem: builtin.IntegerType, n: int = N) -> SSAValue:
    arg = g.block.insert_arg(builtin.TensorType(elem, [n]), len(g.block.args))
    g._arg_attrs.append({})
    return arg


def _name(op: str, reduction: str, index: str, ignore: int) -> str:
    return f"{op}_{reduction}_{index}_{'m100' if ignore < 0 else ignore}"


def _loss_fn(op: str, reduction: str, index: str, ignore: int) -> Any:
    """@name(x [param], labels, r) = sum(loss(x, labels) * r)."""
    g = Graph(_name(op, reduction, index, ignore))
    (x,) = add_parameter_inputs(g, [ParamSpec("x", (N, C), UniformSeeded(-1, 1))])
    labels = _labels_arg(g, INDEX_TYPES[index][0])
    r = g.add_input((N,) if reduction == "none" else (), "r")
    loss = g.emit(OPS[op][0](x, labels, reduction, ignore))
    return g.finish([g.emit(frame.SumOp(g.emit(frame.MulOp(loss, r))))])


@functools.cache
def _executable() -> Executable:
    """Every (op, reduction, index type, ignore_index) in one module, compiled once."""
    fns = [_loss_fn(op, red, idx, ign) for op in OPS for red in REDUCTIONS
           for idx in INDEX_TYPES for ign in (-100, 2)]
    return compile_module(builtin.ModuleOp(fns), options=CompileOptions(threads=1), cache=None)


def _x(seed: int) -> np.ndarray:
    return (3.0 * np.random.default_rng(seed).standard_normal((N, C))).astype(np.float32)


def _r(reduction: str, seed: int) -> np.ndarray:
    shape = (N,) if reduction == "none" else ()
    return np.asarray(np.random.default_rng(seed).uniform(0.5, 1.5, shape), np.float32)


def _torch_loss(op: str, x: np.ndarray, labels: np.ndarray, reduction: str, ignore: int,
                r: np.ndarray) -> tuple[Any, Any]:
    tx = torch.from_numpy(x).double().requires_grad_()
    loss = OPS[op][1](tx, torch.from_numpy(labels.astype(np.int64)), reduction=reduction,
                      ignore_index=ignore)
    total = (loss * torch.from_numpy(r).double()).sum()
    total.backward()
    return total.detach().numpy(), tx.grad.numpy()


def _assert_close(ours: np.ndarray, ref: np.ndarray, what: str) -> None:
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref), err_msg=what)
    inf = np.isinf(ref)
    np.testing.assert_array_equal(ours[inf], ref[inf], err_msg=what)
    ok = np.isfinite(ref)
    scale = max(1.0, float(np.abs(ref[ok]).max(initial=0.0)))
    np.testing.assert_allclose(ours[ok], ref[ok], rtol=2e-6, atol=2e-6 * scale, err_msg=what)


@pytest.mark.parametrize("labels", LABELS, ids=str)
@pytest.mark.parametrize("index", INDEX_TYPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS, ids=str)
@pytest.mark.parametrize("op", OPS, ids=str)
def test_loss_and_gradient_vs_torch(op: str, reduction: str, index: str, labels: str) -> None:
    """Forward (also through @name, the same kernels without the backward) and the
    gradient of the logits; all ignored: NaN for "mean" (0 / 0), 0 for "sum" and every
    row of "none", and a zero gradient, as torch."""
    values, ignore = LABELS[labels]
    lab = np.array(values, INDEX_TYPES[index][1])
    x, r = _x(len(op) + len(reduction)), _r(reduction, len(labels))
    name = _name(op, reduction, index, ignore)
    loss, grad = _executable()(f"{name}_grad", x, lab, r)
    (fwd,) = _executable()(name, x, lab, r)
    ref_loss, ref_grad = _torch_loss(op, x, lab, reduction, ignore, r)
    _assert_close(loss, ref_loss, f"{name} loss")
    _assert_close(fwd, ref_loss, f"{name} forward")
    _assert_close(grad, ref_grad, f"{name} gradient")
    if labels == "all_ignored":
        assert np.all(grad == 0)


def test_loss_per_row_is_zero_at_ignored_rows() -> None:
    """reduction "none": -logp[i, label] per row, +0.0 at ignored rows (torch's)."""
    g = Graph("rows")
    x = g.add_input((N, C), "x")
    labels = _labels_arg(g, builtin.i64)
    outs = [g.emit(frame.NllLossOp(x, labels, "none")),
            g.emit(frame.CrossEntropyOp(x, labels, "none"))]
    ex = compile_module(builtin.ModuleOp([g.finish(outs)]), cache=None)
    xs, lab = _x(1), np.array(LABELS["some_ignored"][0], np.int64)
    nll, ce = ex("rows", xs, lab)
    tx, tl = torch.from_numpy(xs).double(), torch.from_numpy(lab)
    _assert_close(nll, F.nll_loss(tx, tl, reduction="none").numpy(), "nll rows")
    _assert_close(ce, F.cross_entropy(tx, tl, reduction="none").numpy(), "ce rows")
    assert nll[1] == 0 and not np.signbit(nll[1]) and ce[1] == 0 and not np.signbit(ce[1])


@pytest.mark.parametrize("reduction", REDUCTIONS, ids=str)
@pytest.mark.parametrize("op", OPS, ids=str)
def test_gradient_vs_finite_differences(op: str, reduction: str) -> None:
    """@name_grad's gradient against central differences of @name (our compiled forward,
    without torch and without the VJP table), h = 1e-2 on the f32 logits."""
    name = _name(op, reduction, "i64", -100)
    ex = _executable()
    lab = np.array(LABELS["some_ignored"][0], np.int64)
    x, r = _x(3), _r(reduction, 4)
    _, grad = ex(f"{name}_grad", x, lab, r)
    fd = np.zeros(x.shape)
    h = 1e-2
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] = np.float32(x[idx] + h)
        minus[idx] = np.float32(x[idx] - h)
        step = float(plus[idx]) - float(minus[idx])
        fd[idx] = (float(ex(name, plus, lab, r)[0]) - float(ex(name, minus, lab, r)[0])) / step
    # nll is linear in x (exact up to the loss's rounding); cross_entropy's truncation
    # error is h^2 times a third derivative.
    np.testing.assert_allclose(grad, fd, rtol=2e-3, atol=2e-3 * max(1.0, np.abs(fd).max()))


def test_cross_entropy_is_stable_and_matches_log_softmax_then_nll() -> None:
    """Huge logits do not overflow (the row max is subtracted), -inf entries give 0
    probability, a -inf at the label gives +inf, a NaN row gives NaN -- as torch; and
    the fused cross_entropy is nll_loss(log_softmax(x)) bit for bit."""
    xs = np.array([[1000.0, 999.0, -1000.0, 0.0, 5.0],
                   [-np.inf, 2.0, -np.inf, 1.0, 0.5],
                   [88.0, 89.0, 90.0, 91.0, 92.0],
                   [-np.inf, 0.0, 1.0, 2.0, 3.0],
                   [np.nan, 1.0, 2.0, 3.0, 4.0],
                   [-1e-30, 1e-30, 0.0, -0.0, 1.0]], np.float32)
    lab = np.array([1, 3, 0, 0, 2, 4], np.int64)
    g = Graph("hard")
    x = g.add_input((N, C), "x")
    labels = _labels_arg(g, builtin.i64)
    dy = g.add_input((N,), "dy")
    outs = [g.emit(frame.CrossEntropyOp(x, labels, "none")),
            g.emit(frame.NllLossOp(g.emit(frame.LogSoftmaxOp(x, 1)), labels, "none")),
            g.emit(frame.CrossEntropyGradOp(x, labels, dy, "none"))]
    ex = compile_module(builtin.ModuleOp([g.finish(outs)]), cache=None)
    dys = np.linspace(0.5, 1.5, N, dtype=np.float32)
    ce, nll, grad = ex("hard", xs, lab, dys)
    same_bits(ce, nll, "cross_entropy vs nll_loss(log_softmax)")
    tx = torch.from_numpy(xs).double().requires_grad_()
    ref = F.cross_entropy(tx, torch.from_numpy(lab), reduction="none")
    (ref * torch.from_numpy(dys).double()).sum().backward()
    _assert_close(ce, ref.detach().numpy(), "cross_entropy on hard rows")
    assert ce[3] == np.inf
    finite = np.isfinite(xs).all(axis=1)
    _assert_close(grad[finite], tx.grad.numpy()[finite], "cross_entropy_grad on hard rows")


def test_f16_logits() -> None:
    """f16 storage, f32 arithmetic: the loss within one f16 rounding of torch's float64
    value on the same f16 logits."""
    g = Graph("h")
    x = g.block.insert_arg(builtin.TensorType(builtin.f16, [N, C]), 0)
    g._arg_attrs.append({})
    labels = _labels_arg(g, builtin.i32)
    outs = [g.emit(frame.CrossEntropyOp(x, labels, red)) for red in REDUCTIONS]
    ex = compile_module(builtin.ModuleOp([g.finish(outs)]), cache=None)
    xs, lab = _x(9).astype(np.float16), np.array(LABELS["some_ignored"][0], np.int32)
    for ours, red in zip(ex("h", xs, lab), REDUCTIONS, strict=True):
        assert ours.dtype == np.float16
        ref = F.cross_entropy(torch.from_numpy(xs.astype(np.float64)),
                              torch.from_numpy(lab.astype(np.int64)), reduction=red).numpy()
        np.testing.assert_allclose(ours.astype(np.float64), ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("bad,row", [([1, 0, 5, 0, 2, 4], 2), ([1, -3, 4, 0, 2, 4], 1),
                                     ([1, 0, 4, 0, 2, 99], 5)])
@pytest.mark.parametrize("op", OPS, ids=str)
def test_label_out_of_range_is_a_run_time_error(op: str, bad: list[int], row: int) -> None:
    """A label outside [0, C) that is not ignore_index: a ValueError before any code
    runs (torch raises IndexError "Target 5 is out of bounds"), naming the op, the row
    and the value; the forward and the gradient function alike; the executable stays
    usable."""
    name = _name(op, "mean", "i32", -100)
    ex = _executable()
    lab = np.array(bad, np.int32)
    with pytest.raises(ValueError, match="out of range") as err:
        ex(f"{name}_grad", _x(0), lab, _r("mean", 0))
    msg = str(err.value)
    assert f"frame.{op}: label {bad[row]} of row {row} is out of range" in msg, msg
    assert f"expected 0 <= label < {C} or ignore_index -100" in msg, msg
    with pytest.raises(ValueError, match=f"frame.{op}: label {bad[row]} of row {row}"):
        ex(name, _x(0), lab, _r("mean", 0))
    with pytest.raises(IndexError):
        OPS[op][1](torch.zeros(N, C), torch.from_numpy(lab.astype(np.int64)))
    ok = np.array(LABELS["some_ignored"][0], np.int32)
    assert np.isfinite(ex(name, _x(0), ok, _r("mean", 0))[0])



def _cpp_module() -> builtin.ModuleOp:
    """@fam(x, labels i64, dy) -> every loss op, reduction and gradient op."""
    g = Graph("fam")
    x = g.add_input((N, C), "x")
    labels = _labels_arg(g, builtin.i64)
    dy = g.add_input((N,), "dy")
    dsum = g.emit(frame.SumOp(dy))
    outs: list[SSAValue] = []
    for cls, grad_cls in ((frame.NllLossOp, frame.NllLossGradOp),
                          (frame.CrossEntropyOp, frame.CrossEntropyGradOp)):
        for red in REDUCTIONS:
            outs.append(g.emit(cls(x, labels, red)))
            outs.append(g.emit(grad_cls(x, labels, dy if red == "none" else dsum, red)))
    return builtin.ModuleOp([g.finish(outs)])


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit(tmp_path: Path) -> None:
    """The loops stage of every op (forward and gradient, each reduction) emitted as
    C++, compiled with g++ (-O2, no FP contraction, as the emitted programs are) and run:
    the same bits as the JIT's (both call the same libm for exp and log)."""
    xs = _x(2)
    xs[0, 1] = np.inf
    lab = np.array(LABELS["some_ignored"][0], np.int64)
    dys = np.linspace(-1.5, 1.5, N, dtype=np.float32)
    assert_cpp_matches_jit(_cpp_module, "fam", [xs, lab, dys], tmp_path)
