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
