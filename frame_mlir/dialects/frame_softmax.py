"""The frame dialect's softmax family: softmax and log_softmax along any axis, and the
gradient ops their VJPs emit -- each op with its shape rule and verifier, its VJP rule
and its lowering, in this one file (like `frame_math.py`).

Numerically stable as PyTorch's CPU kernels: the maximum along the axis is subtracted
before `exp`, sums accumulate in f32. A row holding a NaN gives a NaN row; a row of
-inf gives NaN (exp(-inf - -inf)), as in torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def

from frame_mlir.dialects.frame_base import BinaryOp, Shape, ShapeError, UnaryOp, same_shape_rule
from frame_mlir.dialects.linalg_utils import (
    PAR,
    add_combine,
    dims_map,
    identity_map,
    lane_reduce,
    lane_reduce_multi,
    max_takes,
    splittable,
)


def _axis_rule(op_name: str, shape: Shape, axis: int) -> None:
    if not 0 <= axis < len(shape):
        raise ShapeError(f"{op_name}: axis expected in [0, {len(shape)}) for a rank-"
                         f"{len(shape)} operand, found {axis}")


class _Axis:
    axis = prop_def(IntegerAttr)

    def axis_value(self) -> int:
        return self.axis.value.data  # type: ignore[attr-defined]

    def rule_attrs(self) -> dict[str, object]:
        return {"axis": self.axis_value()}


@irdl_op_definition
class SoftmaxOp(_Axis, UnaryOp):
    """exp(x - max) / sum(exp(x - max)) along `axis`.
    ``%y = frame.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>``"""

    name = "frame.softmax"

    def __init__(self, input: SSAValue | Operation, axis: int):
        super().__init__(input, self.result_type_for([SSAValue.get(input)], axis=axis),
                         {"axis": IntegerAttr(axis, i64)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        _axis_rule("frame.softmax", shapes[0], int(attrs["axis"]))  # type: ignore[call-overload]
        return shapes[0]


@irdl_op_definition
class LogSoftmaxOp(_Axis, UnaryOp):
    """x - max - log(sum(exp(x - max))) along `axis`.
    ``%y = frame.log_softmax %x {axis = 0 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>``"""

    name = "frame.log_softmax"

    def __init__(self, input: SSAValue | Operation, axis: int):
        super().__init__(input, self.result_type_for([SSAValue.get(input)], axis=axis),
                         {"axis": IntegerAttr(axis, i64)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        _axis_rule("frame.log_softmax", shapes[0], int(attrs["axis"]))  # type: ignore[call-overload]
        return shapes[0]


@irdl_op_definition
class SoftmaxGradOp(_Axis, BinaryOp):
    """y * (dy - sum(dy * y)) along `axis`, from the softmax's output y.
    ``%g = frame.softmax_grad %y, %dy {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>``"""

    name = "frame.softmax_grad"

    def __init__(self, y: SSAValue | Operation, dy: SSAValue | Operation, axis: int):
        super().__init__(y, dy, properties={"axis": IntegerAttr(axis, i64)}, axis=axis)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        shape = same_shape_rule(shapes)
        _axis_rule("frame.softmax_grad", shape, int(attrs["axis"]))  # type: ignore[call-overload]
        return shape


@irdl_op_definition
class LogSoftmaxGradOp(_Axis, BinaryOp):
    """dy - exp(y) * sum(dy) along `axis`, from the log_softmax's output y.
    ``%g = frame.log_softmax_grad %y, %dy {axis = 0 : i64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>``"""

    name = "frame.log_softmax_grad"

    def __init__(self, y: SSAValue | Operation, dy: SSAValue | Operation, axis: int):
        super().__init__(y, dy, properties={"axis": IntegerAttr(axis, i64)}, axis=axis)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        shape = same_shape_rule(shapes)
        _axis_rule("frame.log_softmax_grad", shape, int(attrs["axis"]))  # type: ignore[call-overload]
        return shape


OPS = [SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp, LogSoftmaxGradOp]


# --- VJP rules --------------------------------------------------------------------------

Adjoints = list[SSAValue | None]


def _vjp_softmax(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                 need: Sequence[bool]) -> Adjoints:
    return [emit(SoftmaxGradOp(op.result, dy, op.axis_value()))]


def _vjp_log_softmax(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                     need: Sequence[bool]) -> Adjoints:
    return [emit(LogSoftmaxGradOp(op.result, dy, op.axis_value()))]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    SoftmaxOp: _vjp_softmax, LogSoftmaxOp: _vjp_log_softmax}


# --- lowerings ----------------------------------------------------------------------------


def _rowwise(lw: Any, op: Operation, inputs: Sequence[SSAValue], rows: Sequence[SSAValue],
             axis: int, body: Callable[[Builder, Sequence[SSAValue]], SSAValue]) -> SSAValue:
    """The result, elementwise over the input shape, reading `rows` per row."""
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    rank = typ.get_num_dims()
    kept = [d for d in range(rank) if d != axis]
    maps = [identity_map(rank)] * len(inputs) + [dims_map(rank, kept)] * len(rows)
    return lw.generic([*inputs, *rows], lw.empty(typ), [*maps, identity_map(rank)],
                      [PAR] * rank, body)


def _max_body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    return b.insert(arith.SelectOp(max_takes(b, a[0], a[1]), a[0], a[1])).result


def _row_max(lw: Any, x: SSAValue, axis: int) -> SSAValue:
    # The max of the lanes' maxima is the row's: NaN still wins, and -0.0 / +0.0 ties
    # change nothing that x - max computes.
    return lane_reduce(lw, [x], axis, float("-inf"), _max_body, _max_body)


def _shifted_exp(b: Builder, x: SSAValue, m: SSAValue) -> SSAValue:
    return b.insert(math.ExpOp(b.insert(arith.SubfOp(x, m)).result)).result


def _lower_softmax(lw: Any, op: Any) -> SSAValue:
    axis, x = op.axis_value(), op.input
    m = _row_max(lw, x, axis)
    if isinstance(op, SoftmaxOp) and splittable([x], axis):
        # Each exp is computed once: the sum's loop stores it (f32, whatever the result
        # type), the final pass divides. The same bits as computing it twice.
        def sum_and_store(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
            e = _shifted_exp(b, a[0], a[1])
            return [b.insert(arith.AddfOp(a[2], e)).result, e]

        s, e = lane_reduce_multi(lw, [x], axis, [0.0], sum_and_store, [add_combine], [m],
                                 stored=1)
        return _rowwise(lw, op, [e], [s], axis,
                        lambda b, a: b.insert(arith.DivfOp(a[0], a[1])).result)
    s = lane_reduce(lw, [x], axis, 0.0, lambda b, a: b.insert(arith.AddfOp(
        a[2], _shifted_exp(b, a[0], a[1]))).result, add_combine, [m])
    if isinstance(op, SoftmaxOp):
        return _rowwise(lw, op, [x], [m, s], axis, lambda b, a: b.insert(arith.DivfOp(
            _shifted_exp(b, a[0], a[1]), a[2])).result)
    # log_softmax: (x - max) - log(sum)
    return _rowwise(lw, op, [x], [m, s], axis, lambda b, a: b.insert(arith.SubfOp(
        b.insert(arith.SubfOp(a[0], a[1])).result,
        b.insert(math.LogOp(a[2])).result)).result)


def _lower_softmax_grad(lw: Any, op: Any) -> SSAValue:
    axis, y, dy = op.axis_value(), op.lhs, op.rhs
    if isinstance(op, SoftmaxGradOp):  # y * (dy - sum(dy * y))
        t = lane_reduce(lw, [y, dy], axis, 0.0, lambda b, a: b.insert(arith.AddfOp(
            a[2], b.insert(arith.MulfOp(a[1], a[0])).result)).result, add_combine)
        return _rowwise(lw, op, [y, dy], [t], axis, lambda b, a: b.insert(arith.MulfOp(
            a[0], b.insert(arith.SubfOp(a[1], a[2])).result)).result)
    # log_softmax: dy - exp(y) * sum(dy)
    t = lane_reduce(lw, [dy], axis, 0.0, add_combine, add_combine)
    return _rowwise(lw, op, [y, dy], [t], axis, lambda b, a: b.insert(arith.SubfOp(
        a[1], b.insert(arith.MulfOp(b.insert(math.ExpOp(a[0])).result, a[2])).result)).result)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    SoftmaxOp: _lower_softmax, LogSoftmaxOp: _lower_softmax,
    SoftmaxGradOp: _lower_softmax_grad, LogSoftmaxGradOp: _lower_softmax_grad}
