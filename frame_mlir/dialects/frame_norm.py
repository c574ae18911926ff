"""The frame dialect's normalization family: layer_norm over the last axis and its
gradient op -- ops, shape rules, verifiers, VJP rule and lowerings in this one file.

`layer_norm(x[..., D], gamma[D], beta[D]; eps)` is PyTorch's: population variance,
`(x - mean) * rstd * gamma + beta` with `rstd = 1 / sqrt(var + eps)`. Means and
variances accumulate in f32 in index order (two passes: the mean, then the squared
deviations from it).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType, f32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame as _frame
from frame_mlir.dialects.frame import AnyF32Tensor, FrameOp, Shape, ShapeError, _fmt
from frame_mlir.passes.linalg_utils import PAR, RED, dims_map, identity_map, row_reduce
from frame_mlir.passes.linalg_utils import f32_const as _c


def _check_eps(name: str, eps: float) -> None:
    if not (eps > 0 and pymath.isfinite(eps)):
        raise VerifyException(f"{name}: eps expected finite and > 0, found {eps}")


def _params_rule(name: str, x: Shape, params: Sequence[Shape], what: Sequence[str]) -> None:
    if len(x) < 1:
        raise ShapeError(f"{name}: input expected rank >= 1, found {_fmt(x)}")
    for shape, w in zip(params, what, strict=True):
        if shape != (x[-1],):
            raise ShapeError(f"{name}: {w} shape expected {_fmt((x[-1],))} (the input's last "
                             f"dim), found {_fmt(shape)}")


@irdl_op_definition
class LayerNormOp(FrameOp):
    """Normalize over the last axis, then scale and shift.
    ``%y = frame.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>``"""

    name = "frame.layer_norm"
    input = operand_def(AnyF32Tensor)
    gamma = operand_def(AnyF32Tensor)
    beta = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    eps = prop_def(FloatAttr)
    assembly_format = "$input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue | Operation, gamma: SSAValue | Operation,
                 beta: SSAValue | Operation, eps: float = 1e-5):
        ops = [SSAValue.get(v) for v in (x, gamma, beta)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops)],
                         properties={"eps": FloatAttr(eps, f32)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, gamma, beta = shapes
        _params_rule("frame.layer_norm", x, (gamma, beta), ("gamma", "beta"))
        return x

    def verify_(self) -> None:
        super().verify_()
        _check_eps(self.name, self.eps.value.data)


@irdl_op_definition
class LayerNormGradOp(FrameOp):
    """The layer_norm VJP for one operand (`wrt`): 0 gives dx (x's shape), 1 gives
    dgamma ([D]); dbeta is a plain sum of dy. Mean and rstd are recomputed from x.
    ``%dx = frame.layer_norm_grad %x, %g, %dy {eps = 1.0e-05 : f32, wrt = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>``"""

    name = "frame.layer_norm_grad"
    input = operand_def(AnyF32Tensor)
    gamma = operand_def(AnyF32Tensor)
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    eps = prop_def(FloatAttr)
    wrt = prop_def(IntegerAttr)
    assembly_format = "$input `,` $gamma `,` $dy attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue | Operation, gamma: SSAValue | Operation,
                 dy: SSAValue | Operation, eps: float, wrt: int):
        ops = [SSAValue.get(v) for v in (x, gamma, dy)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops, wrt=wrt)],
                         properties={"eps": FloatAttr(eps, f32), "wrt": IntegerAttr(wrt, i64)})

    def rule_attrs(self) -> dict[str, object]:
        return {"wrt": self.wrt.value.data}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, gamma, dy = shapes
        _params_rule("frame.layer_norm_grad", x, (gamma,), ("gamma",))
        if dy != x:
            raise ShapeError(f"frame.layer_norm_grad: dy shape expected {_fmt(x)}, found "
                             f"{_fmt(dy)}")
        wrt = attrs.get("wrt")
        if wrt not in (0, 1):
            raise ShapeError(f"frame.layer_norm_grad: wrt expected 0 (x) or 1 (gamma), "
                             f"found {wrt}")
        return x if wrt == 0 else gamma

    def verify_(self) -> None:
        super().verify_()
        _check_eps(self.name, self.eps.value.data)


OPS = [LayerNormOp, LayerNormGradOp]


# --- VJP rule --------------------------------------------------------------------------


def _vjp_layer_norm(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                    need: Sequence[bool]) -> list[SSAValue | None]:
    eps = op.eps.value.data
    rank = len(_frame.static_shape(op.input) or ())
    dx = emit(LayerNormGradOp(op.input, op.gamma, dy, eps, 0)) if need[0] else None
    dg = emit(LayerNormGradOp(op.input, op.gamma, dy, eps, 1)) if need[1] else None
    db = emit(_frame.SumOp(dy, list(range(rank - 1)))) if need[2] and rank > 1 else \
        (dy if need[2] else None)
    return [dx, dg, db]


VJP_RULES: dict[type[Operation], Callable[..., list[SSAValue | None]]] = {
    LayerNormOp: _vjp_layer_norm}


# --- lowerings ----------------------------------------------------------------------------


def _bin(b: Builder, cls: type[Operation], x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(cls(x, y)).results[0]  # type: ignore[call-arg]


def _row_stats(lw: Any, x: SSAValue, eps: float) -> tuple[SSAValue, SSAValue]:
    """Per-row mean and rstd = 1 / sqrt(var + eps), f32 tensors of x's leading shape."""
    shape = list(_frame.static_shape(x) or ())
    rank, d = len(shape), shape[-1]
    row_type = _frame.tensor_type(shape[:-1])
    total = row_reduce(lw, [x], rank - 1, 0.0, lambda b, a: _bin(b, arith.AddfOp, a[1], a[0]))
    n = float(d)
    mean = lw.generic([total], lw.empty(row_type), [identity_map(rank - 1)] * 2,
                      [PAR] * (rank - 1), lambda b, a: _bin(b, arith.DivfOp, a[0], _c(b, n)))

    def sq(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        dev = _bin(b, arith.SubfOp, a[0], a[1])
        return _bin(b, arith.AddfOp, a[2], _bin(b, arith.MulfOp, dev, dev))
    ss = row_reduce(lw, [x], rank - 1, 0.0, sq, [mean])

    def rstd(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        var = _bin(b, arith.DivfOp, a[0], _c(b, n))
        root = b.insert(math.SqrtOp(_bin(b, arith.AddfOp, var, _c(b, eps)))).result
        return _bin(b, arith.DivfOp, _c(b, 1.0), root)
    rs = lw.generic([ss], lw.empty(row_type), [identity_map(rank - 1)] * 2,
                    [PAR] * (rank - 1), rstd)
    return mean, rs


def _xhat(b: Builder, x: SSAValue, mean: SSAValue, rstd: SSAValue) -> SSAValue:
    return _bin(b, arith.MulfOp, _bin(b, arith.SubfOp, x, mean), rstd)


def _lower_layer_norm(lw: Any, op: Any) -> SSAValue:
    x = op.input
    shape = list(_frame.static_shape(x) or ())
    rank = len(shape)
    mean, rstd = _row_stats(lw, x, op.eps.value.data)
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    row, last = dims_map(rank, range(rank - 1)), dims_map(rank, [rank - 1])

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        y = _bin(b, arith.MulfOp, _xhat(b, a[0], a[3], a[4]), a[1])
        return _bin(b, arith.AddfOp, y, a[2])
    return lw.generic([x, op.gamma, op.beta, mean, rstd], lw.empty(typ),
                      [identity_map(rank), last, last, row, row, identity_map(rank)],
                      [PAR] * rank, body)


def _lower_layer_norm_grad(lw: Any, op: Any) -> SSAValue:
    x, gamma, dy = op.input, op.gamma, op.dy
    shape = list(_frame.static_shape(x) or ())
    rank, d = len(shape), shape[-1]
    mean, rstd = _row_stats(lw, x, op.eps.value.data)
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    ident, row, last = identity_map(rank), dims_map(rank, range(rank - 1)), \
        dims_map(rank, [rank - 1])
    if op.wrt.value.data == 1:  # dgamma[d] = sum over rows of dy * xhat
        # Loops (d, rows...): d leads and is parallel, the rows are summed in order.
        order = [rank - 1, *range(rank - 1)]
        pos = {dim: i for i, dim in enumerate(order)}
        perm = dims_map(rank, [pos[k] for k in range(rank)])
        prow = dims_map(rank, [pos[k] for k in range(rank - 1)])
        acc = lw.filled(_frame.tensor_type([d]), 0.0)
        dg = lw.generic([x, dy, mean, rstd], acc, [perm, perm, prow, prow, dims_map(rank, [0])],
                        [PAR] + [RED] * (rank - 1), lambda b, a: _bin(
                            b, arith.AddfOp, a[4],
                            _bin(b, arith.MulfOp, a[1], _xhat(b, a[0], a[2], a[3]))))
        if dg.type == typ:
            return dg
        return lw.generic([dg], lw.empty(typ), [identity_map(1)] * 2, [PAR], lambda b, a: a[0])
    # dx = rstd / D * (D * g - sum(g) - xhat * sum(g * xhat)), g = dy * gamma
    row_type = _frame.tensor_type(shape[:-1])
    its = [PAR] * (rank - 1) + [RED]

    def sums(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        g = _bin(b, arith.MulfOp, a[1], a[2])
        xh = _xhat(b, a[0], a[3], a[4])
        return [_bin(b, arith.AddfOp, a[5], g),
                _bin(b, arith.AddfOp, a[6], _bin(b, arith.MulfOp, g, xh))]
    sg, sgx = lw.generic_multi([x, dy, gamma, mean, rstd],
                               [lw.filled(row_type, 0.0), lw.filled(row_type, 0.0)],
                               [ident, ident, last, row, row, row, row], its, sums)

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        g = _bin(b, arith.MulfOp, a[1], a[2])
        xh = _xhat(b, a[0], a[3], a[4])
        inner = _bin(b, arith.SubfOp, _bin(b, arith.SubfOp, _bin(b, arith.MulfOp, g,
                                                                 _c(b, float(d))), a[5]),
                     _bin(b, arith.MulfOp, xh, a[6]))
        return _bin(b, arith.MulfOp, _bin(b, arith.DivfOp, a[4], _c(b, float(d))), inner)
    return lw.generic([x, dy, gamma, mean, rstd, sg, sgx], lw.empty(typ),
                      [ident, ident, last, row, row, row, row, ident], [PAR] * rank, body)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    LayerNormOp: _lower_layer_norm, LayerNormGradOp: _lower_layer_norm_grad}

