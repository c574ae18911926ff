"""frame-tile-matmul: tiled matmul kernels compute what torch computes, remainders included."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import builtin

from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("m,k,n", [(4, 3, 16), (9, 70, 130), (64, 33, 64), (5, 2, 17), (3, 4, 200)])
@pytest.mark.parametrize("transpose_lhs", [False, True])
def test_tiled_matmul_matches_torch(m: int, k: int, n: int, transpose_lhs: bool) -> None:
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a_shape = (k, m) if transpose_lhs else (m, k)
    g = Graph("mm")
    a = g.add_input(a_shape, "a")
    (b,) = add_parameter_inputs(g, [ParamSpec("b", (k, n), UniformSeeded(0, 1))])
    r = g.add_input((m, n), "r")
    y = g.emit(frame.MatmulOp(a, b, transpose_lhs=transpose_lhs))
    loss = g.emit(frame.SumOp(g.emit(frame.MulOp(y, r))))
    ex = compile_module(builtin.ModuleOp([g.finish([loss])]))
    av = rng.standard_normal(a_shape, dtype=np.float32)
    bv = rng.standard_normal((k, n), dtype=np.float32)
    rv = rng.standard_normal((m, n), dtype=np.float32)
    ta, tb, tr = (torch.from_numpy(v) for v in (av, bv, rv))
    tb.requires_grad_()
    ty = (ta.T if transpose_lhs else ta) @ tb
    (ty * tr).sum().backward()
    loss_v, grad_b = ex("mm_grad", av, bv, rv)
    np.testing.assert_allclose(loss_v, (ty * tr).sum().item(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad_b, tb.grad.numpy(), rtol=1e-5, atol=1e-5)
