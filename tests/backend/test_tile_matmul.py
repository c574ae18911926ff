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
    """The product itself and both operands' gradients, against torch in float64 (so
    the tolerance measures our float32 rounding only): every shape leaves remainders
    of the 4 x 64 register tiles somewhere."""
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a_shape = (k, m) if transpose_lhs else (m, k)

    fwd = Graph("mm_y")
    y = fwd.emit(frame.MatmulOp(fwd.add_input(a_shape, "a"), fwd.add_input((k, n), "b"),
                                transpose_lhs=transpose_lhs))
    g = Graph("mm")
    a, b = add_parameter_inputs(g, [ParamSpec("a", a_shape, UniformSeeded(0, 1)),
                                    ParamSpec("b", (k, n), UniformSeeded(0, 1))])
    r = g.add_input((m, n), "r")
    prod = g.emit(frame.MatmulOp(a, b, transpose_lhs=transpose_lhs))
    loss = g.emit(frame.SumOp(g.emit(frame.MulOp(prod, r))))
    ex = compile_module(builtin.ModuleOp([fwd.finish([y]), g.finish([loss])]))

    av = rng.standard_normal(a_shape, dtype=np.float32)
    bv = rng.standard_normal((k, n), dtype=np.float32)
    rv = rng.standard_normal((m, n), dtype=np.float32)
    ta, tb = (torch.from_numpy(v).double().requires_grad_() for v in (av, bv))
    ty = (ta.T if transpose_lhs else ta) @ tb
    (ty * torch.from_numpy(rv).double()).sum().backward()

    def close(ours: np.ndarray, ref: np.ndarray) -> None:
        # f32 rounding of sums of k products: relative to the size of the terms.
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(ref).max()))

    (y_v,) = ex("mm_y", av, bv)
    close(y_v, ty.detach().numpy())
    _, grad_a, grad_b = ex("mm_grad", av, bv, rv)
    close(grad_a, ta.grad.numpy())
    close(grad_b, tb.grad.numpy())
