"""softmax / log_softmax (`frame_mlir/dialects/frame_softmax.py`) on the inputs that
break naive kernels: huge logits (no overflow: the row max is subtracted), -inf
entries, a NaN or an all -inf row (NaN rows, as torch), against torch in float64."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import builtin

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")

X = np.array([[1000.0, 999.0, -1000.0, 0.0],
              [-np.inf, 2.0, -np.inf, 1.0],
              [np.nan, 1.0, 2.0, 3.0],
              [-np.inf, -np.inf, -np.inf, -np.inf],
              [88.0, 89.0, 90.0, 91.0],
              [-1e-30, 1e-30, 0.0, -0.0]], np.float32)


@pytest.mark.parametrize("axis", [1, 0])
def test_softmax_and_log_softmax_on_hard_rows(axis: int) -> None:
    g = Graph("sm")
    x = g.add_input(X.shape, "x")
    outs = [g.emit(frame.SoftmaxOp(x, axis)), g.emit(frame.LogSoftmaxOp(x, axis))]
    ex = compile_module(builtin.ModuleOp([g.finish(outs)]),
                        options=CompileOptions(threads=1), cache=None)
    got = ex("sm", X)
    tx = torch.from_numpy(X).double()
    for ours, ref in zip(got, (torch.softmax(tx, axis), torch.log_softmax(tx, axis)),
                         strict=True):
        ref = ref.numpy()
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
        ok = np.isfinite(ref)
        np.testing.assert_allclose(ours[ok], ref[ok], rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax_on_split_rows(dtype: type) -> None:
    """A last axis of 64: the lane-split sum that stores each exp and the dividing pass
    (linalg_utils.lane_reduce_multi's `stored`), on the hard rows and random ones, in
    f32 and in f16 (the stored exps stay f32: one rounding, at the result)."""
    rng = np.random.default_rng(0)
    x = np.concatenate([np.tile(X, (1, 16)), rng.normal(0, 4, (5, 64))]).astype(dtype)
    elem = builtin.f16 if dtype == np.float16 else builtin.f32
    g = Graph("sm")
    xin = g.add_input(x.shape, "x", elem=elem)
    ex = compile_module(builtin.ModuleOp([g.finish([g.emit(frame.SoftmaxOp(xin, 1))])]),
                        options=CompileOptions(threads=1), cache=None)
    (got,) = ex("sm", x)
    assert got.dtype == dtype
    ref = torch.softmax(torch.from_numpy(x.astype(np.float64)), 1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = np.isfinite(ref)
    # f32: a few ulps of the exp and the division; f16: the result's rounding (2^-11).
    tol = (2e-6, 1e-7) if dtype == np.float32 else (1e-3, 1e-7)
    np.testing.assert_allclose(got[ok].astype(np.float64), ref[ok], rtol=tol[0], atol=tol[1])
