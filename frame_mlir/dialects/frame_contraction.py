"""The frame dialect's contraction family: `frame.matmul` (with transpose flags, and
batches of matrices) -- its shape rule, its VJP rule and its lowering, in this one file
(like `frame_math.py`).

The lowering is the generic `frame-gemm`, `frame-tile-matmul` and
`frame-fuse-gemm-epilogue` recognise: one parallel loop per batch dim, then three
loops per product in the order below, an f32 accumulator filled with 0 and an `fma`
body (`_mac`), rounded to the result type afterwards for f16 / bf16. Changing its maps,
iterator order or body changes what those passes see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import math
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def

from frame_mlir.dialects.frame_base import BinaryOp, Shape, ShapeError, _fmt, static_shape
from frame_mlir.dialects.linalg_utils import PAR, RED, dims_map
from frame_mlir.dialects.linalg_utils import accumulator_type as _accumulator_type
from frame_mlir.dialects.linalg_utils import result_type as _result_type
from frame_mlir.dialects.linalg_utils import round_to as _round_to

# --- ops --------------------------------------------------------------------------------


@irdl_op_definition
class MatmulOp(BinaryOp):
    """Matrix product op(A) @ op(B), where op transposes (the last two dims) when the
    flag is set. Operands of rank > 2 are batches of matrices with equal leading dims:
    `[..., m, k] @ [..., k, n] -> [..., m, n]` (no broadcasting of the batch dims).

    Autodiff emits the transposed forms directly so no transpose is materialised.
    ``%c = frame.matmul %a, %b {transpose_lhs} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<8x1xf32>``
    ``%c = frame.matmul %q, %k {transpose_rhs} : (tensor<2x4x5x8xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x5x6xf32>``
    """

    name = "frame.matmul"

    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, *,
                 transpose_lhs: bool = False, transpose_rhs: bool = False,
                 result_type: Attribute | None = None):
        props: dict[str, Attribute | None] = {
            "transpose_lhs": UnitAttr() if transpose_lhs else None,
            "transpose_rhs": UnitAttr() if transpose_rhs else None,
        }
        super().__init__(lhs, rhs, result_type, props, transpose_lhs=transpose_lhs,
                         transpose_rhs=transpose_rhs)

    def rule_attrs(self) -> dict[str, object]:
        return {"transpose_lhs": self.transpose_lhs is not None,
                "transpose_rhs": self.transpose_rhs is not None}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        a, b = shapes
        if len(a) < 2 or len(b) < 2 or len(a) != len(b):
            raise ShapeError(
                f"frame.matmul: expected operands of one rank >= 2 (matrices, or batches "
                f"of them), found {_fmt(a)} and {_fmt(b)}"
            )
        if a[:-2] != b[:-2]:
            raise ShapeError(
                f"frame.matmul: batch dims must match (no broadcasting): expected "
                f"{_fmt(a[:-2])} (the lhs's), found {_fmt(b[:-2])}"
            )
        m, ka = (a[-1], a[-2]) if attrs.get("transpose_lhs") else a[-2:]
        kb, n = (b[-1], b[-2]) if attrs.get("transpose_rhs") else b[-2:]
        if ka != kb:
            raise ShapeError(
                f"frame.matmul: contraction dimension mismatch: expected rhs dim {ka} "
                f"(the lhs's), found {kb}"
            )
        return (*a[:-2], m, n)


OPS = [MatmulOp]


# --- VJP rules --------------------------------------------------------------------------

Emit = Callable[[Operation], SSAValue]
Adjoints = list[SSAValue | None]


def _vjp_matmul(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    a, b = op.lhs, op.rhs
    ta, tb = op.transpose_lhs is not None, op.transpose_rhs is not None
    da = db = None
    # C = op(A) @ op(B); transposes fold into the flags and are never materialised.
    if need[0]:
        if ta:  # dA = (dC @ op(B)^T)^T = op(B) @ dC^T
            da = emit(MatmulOp(b, dc, transpose_lhs=tb, transpose_rhs=True))
        else:  # dA = dC @ op(B)^T
            da = emit(MatmulOp(dc, b, transpose_rhs=not tb))
    if need[1]:
        if tb:  # dB = (op(A)^T @ dC)^T = dC^T @ op(A)
            db = emit(MatmulOp(dc, a, transpose_lhs=True, transpose_rhs=ta))
        else:  # dB = op(A)^T @ dC
            db = emit(MatmulOp(a, dc, transpose_lhs=not ta))
    return [da, db]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {MatmulOp: _vjp_matmul}


# --- lowerings --------------------------------------------------------------------------


def _mac(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    # A fused multiply-add: one rounding per step instead of two, and one instruction
    # instead of two in the vectorized loop. PyTorch's matmul rounds as its MKL kernel
    # does for the shape and CPU, so the two agree to rounding (docs/numerics.md).
    return b.insert(math.FmaOp(a[0], a[1], a[2])).result


def _lower_matmul(lw: Any, op: Any) -> SSAValue:
    """Three loops per product, after one parallel loop per batch dim (a batched
    matmul is a contraction with outer dims: frame-gemm runs it as one GEMM per batch
    index, its tasks splitting the first batch dim)."""
    ta, tb = op.transpose_lhs is not None, op.transpose_rhs is not None
    init = lw.filled(_accumulator_type(_result_type(op)), 0.0)
    if not ta and not tb:  # (i, k, j): C[i,j] += A[i,k] * B[k,j]
        dims, its = [[0, 1], [1, 2], [0, 2]], [PAR, RED, PAR]
    elif ta and not tb:  # (i, k, j): C[i,j] += A[k,i] * B[k,j]; row i of C stays hot
        dims, its = [[1, 0], [1, 2], [0, 2]], [PAR, RED, PAR]
    elif not ta and tb:  # (i, j, k): C[i,j] += A[i,k] * B[j,k]
        dims, its = [[0, 2], [1, 2], [0, 1]], [PAR, PAR, RED]
    else:  # (i, j, k): C[i,j] += A[k,i] * B[j,k]
        dims, its = [[2, 0], [1, 2], [0, 1]], [PAR, PAR, RED]
    nb = len(static_shape(op.lhs) or ()) - 2
    batch = list(range(nb))
    maps = [dims_map(nb + 3, batch + [d + nb for d in ds]) for ds in dims]
    return _round_to(lw, lw.generic([op.lhs, op.rhs], init, maps, [PAR] * nb + its, _mac),
                     _result_type(op))


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    MatmulOp: _lower_matmul}
