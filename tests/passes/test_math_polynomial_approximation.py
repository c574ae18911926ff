"""math-polynomial-approximation's exp, and the lane-split row reductions
(`linalg_utils.lane_reduce`) of softmax and layer norm: accuracy against float64
references and torch, every edge of the 16-lane split, and the same bits at 1 and 2
threads and from the emitted C++."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cpp_vs_jit import CXX, assert_cpp_matches_jit, same_bits
from xdsl.dialects import builtin

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.dialects.linalg_utils import REDUCE_LANES
from frame_mlir.nn.graph import Graph
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")

ONE, TWO = CompileOptions(threads=1), CompileOptions(threads=2)


def _exp_module(n: int) -> builtin.ModuleOp:
    g = Graph("e")
    x = g.add_input((n,), "x")
    return builtin.ModuleOp([g.finish([g.emit(frame.ExpOp(x))])])


def _exp_inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, -1e-40,
                         88.72283, 88.7229, 88.75, 89.0, -87.33654, -103.28, -103.9,
                         -104.0, -110.0, 0.34657359, -0.34657359, 1.0, -1.0], np.float32)
    sweep = np.concatenate([rng.uniform(-110.0, 90.0, 1 << 17),
                            rng.uniform(-2.0, 2.0, 1 << 16),
                            # the denormal range, where the two-factor scaling matters
                            rng.uniform(-103.9, -87.0, 1 << 14)]).astype(np.float32)
    return np.concatenate([specials, sweep])


def test_exp_is_faithfully_rounded_with_ieee_edges() -> None:
    """Within 1 ulp of float64's exp everywhere (denormal results included), and the
    edges as IEEE says: exp(+-0) = 1, exp(-inf) = +0, exp(+inf) = exp(89) = +inf,
    exp(NaN) = NaN, and +0 below exp's underflow."""
    x = _exp_inputs()
    (y,) = compile_module(_exp_module(x.size), options=ONE, cache=None)("e", x)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
        r32 = ref.astype(np.float32)
    nan = np.isnan(x)
    assert np.isnan(y[nan]).all()
    special = ~nan & (~np.isfinite(r32) | (r32 == 0))
    np.testing.assert_array_equal(y[special], r32[special])
    ok = ~nan & ~special
    ulps = np.abs(y[ok].astype(np.float64) - ref[ok]) / np.spacing(r32[ok]).astype(np.float64)
    assert ulps.max() <= 1.0, f"max {ulps.max():.3f} ulp at x = {x[ok][ulps.argmax()]}"
    # mostly correctly rounded, as a polynomial of this degree is
    assert np.mean(y[ok] == r32[ok]) > 0.85


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_exp_same_bits_from_the_emitted_cpp(tmp_path: Path) -> None:
    x = _exp_inputs()[:2048]
    assert_cpp_matches_jit(lambda: _exp_module(x.size), "e", [x], tmp_path)


#: Reduced-axis sizes on each side of the split's conditions: under two blocks of
#: REDUCE_LANES (index order), exact multiples (split), and one off (index order).
AXES = [1, 5, REDUCE_LANES, 2 * REDUCE_LANES - 1, 2 * REDUCE_LANES, 2 * REDUCE_LANES + 1,
        3 * REDUCE_LANES, 128, 256]


def _row_module(rows: tuple[int, ...], d: int) -> builtin.ModuleOp:
    shape = (*rows, d)
    g = Graph("rows")
    x, dy = g.add_input(shape, "x"), g.add_input(shape, "dy")
    gamma, beta = g.add_input((d,), "gamma"), g.add_input((d,), "beta")
    axis = len(shape) - 1
    y = g.emit(frame.SoftmaxOp(x, axis))
    outs = [y, g.emit(frame.SoftmaxGradOp(y, dy, axis)), g.emit(frame.LogSoftmaxOp(x, axis)),
            g.emit(frame.LogSoftmaxGradOp(g.emit(frame.LogSoftmaxOp(x, axis)), dy, axis)),
            g.emit(frame.LayerNormOp(x, gamma, beta)),
            g.emit(frame.LayerNormGradOp(x, gamma, dy, 1e-5, 0)),
            g.emit(frame.LayerNormGradOp(x, gamma, dy, 1e-5, 1))]
    return builtin.ModuleOp([g.finish(outs)])


def _torch_rows(x: np.ndarray, dy: np.ndarray, gamma: np.ndarray,
                beta: np.ndarray) -> list[np.ndarray]:
    axis = x.ndim - 1
    tx = torch.from_numpy(x).double().requires_grad_()
    tg = torch.from_numpy(gamma).double().requires_grad_()
    tdy = torch.from_numpy(dy).double()
    sm = torch.softmax(tx, axis)
    (dsm,) = torch.autograd.grad(sm, tx, tdy)
    ls = torch.log_softmax(tx, axis)
    (dls,) = torch.autograd.grad(ls, tx, tdy)
    ln = torch.nn.functional.layer_norm(tx, (x.shape[-1],), tg, torch.from_numpy(beta).double(),
                                        1e-5)
    dlx, dlg = torch.autograd.grad(ln, (tx, tg), tdy)
    return [t.detach().numpy() for t in (sm, dsm, ls, dls, ln, dlx, dlg)]


@pytest.mark.parametrize("d", AXES)
def test_row_reductions_match_torch_on_every_edge_of_the_split(d: int) -> None:
    """softmax, log_softmax, layer norm and their gradients along a last axis of every
    size class (split into 16 lanes or not) against torch in float64; the same bits at
    1 and 2 threads."""
    rng = np.random.default_rng(d)
    rows = (3, 37) if d < 64 else (2, 130)
    shape = (*rows, d)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, d).astype(np.float32)
    beta = rng.standard_normal(d).astype(np.float32)
    mod = _row_module(rows, d)
    ours = compile_module(mod.clone(), options=ONE, cache=None)("rows", x, dy, gamma, beta)
    refs = _torch_rows(x, dy, gamma, beta)
    names = ["softmax", "softmax_grad", "log_softmax", "log_softmax_grad", "layer_norm",
             "layer_norm dx", "layer_norm dgamma"]
    for name, got, ref in zip(names, ours, refs, strict=True):
        # f32 against f64: a few ulp of each term; the gradients' row sums add ~sqrt(d)
        scale = np.abs(ref).max() + 1.0
        np.testing.assert_allclose(got, ref, rtol=0, atol=3e-6 * scale * max(1.0, np.sqrt(d) / 4),
                                   err_msg=f"{name}, d = {d}")
    two = compile_module(mod.clone(), options=TWO, cache=None)("rows", x, dy, gamma, beta)
    for name, a, b in zip(names, ours, two, strict=True):
        same_bits(a, b, f"{name} at 1 vs 2 threads, d = {d}")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_row_reductions_same_bits_from_the_emitted_cpp(tmp_path: Path) -> None:
    d, rows = 2 * REDUCE_LANES, (3, 5)
    rng = np.random.default_rng(1)
    shape = (*rows, d)
    args = [(rng.standard_normal(shape) * 3).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32),
            rng.uniform(0.5, 1.5, d).astype(np.float32), rng.standard_normal(d).astype(np.float32)]
    assert_cpp_matches_jit(lambda: _row_module(rows, d), "rows", args, tmp_path)
