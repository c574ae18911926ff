"""Partial sums over the last dim and others (a bias gradient) are summed per column,
then across columns (`frame_reduce._column_sum`, in convert-frame-to-linalg): vector
code, the same bits for every thread count, and torch-close (float64 reference) on odd
shapes."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import builtin

from frame_mlir.backend.llvm.jit import compile_ir
from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")

CASES = [((64, 20, 24, 24), (0, 2, 3)),  # LeNet's first bias gradient
         ((3, 5, 7, 9), (0, 2, 3)),
         ((2, 13, 31), (0, 2)),
         ((5, 11, 8), (1, 2)),
         ((4, 17), (0, 1)),  # a full sum stays blocked, not per column
         ((6, 4, 12), (0, 1, 2))]


def _module(shape: tuple[int, ...], axes: tuple[int, ...]) -> builtin.ModuleOp:
    g = Graph("s")
    x = g.add_input(shape, "x")
    return builtin.ModuleOp([g.finish([g.emit(frame.SumOp(x, axes))])])


@pytest.mark.parametrize("shape,axes", CASES)
def test_column_sum_matches_torch_and_threads(shape: tuple[int, ...],
                                              axes: tuple[int, ...]) -> None:
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    outs = []
    for threads in (1, 2, 3):
        ex = compile_module(_module(shape, axes), options=CompileOptions(threads=threads),
                            cache=None)
        (y,) = ex("s", x)
        outs.append(y)
    for y in outs[1:]:
        assert y.tobytes() == outs[0].tobytes()
    ref = torch.from_numpy(x).double().sum(dim=axes).numpy()
    n = int(np.prod([shape[a] for a in axes]))
    np.testing.assert_allclose(outs[0], ref, rtol=1e-5, atol=2e-6 * np.sqrt(n))


def test_bias_gradient_is_vector_code() -> None:
    """The per-column stage loads whole vectors of the last dim (LLVM vectorizes the
    parallel column loop; a single running sum would stay scalar)."""
    ex = compile_module(_module((64, 20, 24, 24), (0, 2, 3)),
                        options=CompileOptions(threads=1), cache=None)
    assert "fadd <" in compile_ir(ex.llvm_ir).optimized_ir()
