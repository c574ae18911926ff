"""The frame dialect's loss family: mse_loss (the mean squared error of a prediction
and a target of one shape) and the classification losses nll_loss and cross_entropy
over [N, C] scores with integer class labels [N], and the gradient ops their VJPs emit
-- ops, shape rules, verifiers, VJP rules and lowerings in this one file (like
`frame_math.py`).

mse_loss is torch's `F.mse_loss` with reduction='mean': the squares summed in f32 as
frame.sum sums (`sum_into`: blocked when large), divided by the element count; its
gradient op is 2 (p - t) / N * dloss, and the target's adjoint the prediction's negated.

Semantics are PyTorch's `F.nll_loss` / `F.cross_entropy` (no class weights, no label
smoothing):
  * labels are i32 or i64; a row whose label equals `ignore_index` (-100 by default)
    contributes nothing: 0 in `reduction = "none"`, left out of the sum and of the
    count a `"mean"` divides by. A mean over no counted rows is NaN (0 / 0), as torch.
  * nll_loss row i is `-logp[i, labels[i]]`; cross_entropy's is the same on
    `log_softmax(logits, 1)`, computed fused and stable as `frame.log_softmax` is (the
    row max subtracted, f32 sums): `log(sum(exp(x - max))) - (x[label] - max)`, the
    very bits of `-log_softmax`.
  * sums accumulate in f32: the per-row losses in index order through frame.sum's
    lowering (`sum_axes`: blocked when large).
  * the gradient goes to the float operand only (labels get none): nll_loss_grad puts
    `-w_i` at [i, labels[i]], cross_entropy_grad is `w_i * (softmax(x)[i] -
    onehot(labels[i]))`, with `w_i` = dy[i] ("none"), dy ("sum") or dy / count
    ("mean"), 0 for ignored rows (so an all-ignored batch gets a zero gradient, as in
    torch).

A label outside [0, C) that is not `ignore_index` is a run-time error, as in torch: the
lowering records the check on the function argument that holds the labels
(`INDEX_CHECKS_ATTR`), and `frame_mlir.runtime.executable.Executable` refuses such a
call with a message naming the op, the row and the value before any code runs. (The
compiled kernels themselves treat such a row as matching no class.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Any, ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith, builtin, func, math
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.irdl import base, irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame_base as _frame
from frame_mlir.dialects.frame_base import (
    FLOAT_TYPES,
    AnyF32Tensor,
    BinaryOp,
    FrameOp,
    Shape,
    ShapeError,
    _fmt,
    static_shape,
)
from frame_mlir.dialects.frame_elementwise import NegOp

# The family this one builds on (frame.sum's f32 sums).
from frame_mlir.dialects.frame_reduce import sum_axes, sum_into
from frame_mlir.dialects.ir_utils import set_arg_attr
from frame_mlir.dialects.linalg_utils import PAR, RED, dims_map, identity_map, max_takes
from frame_mlir.dialects.linalg_utils import f32_const as _c
from frame_mlir.dialects.linalg_utils import result_type as _result_type

REDUCTIONS = ("mean", "sum", "none")
#: The argument attribute recording run-time label checks (read by
#: `frame_mlir.runtime.executable.signatures`): an array of
#: `{op = "frame.nll_loss", bound = C : i64, ignore_index = -100 : i64}`; without
#: `ignore_index` (the index family's `frame.index_select` / `frame.index_add`) no
#: value is exempt.
INDEX_CHECKS_ATTR = "frame.index_checks"


# --- ops --------------------------------------------------------------------------------


@irdl_op_definition
class MseLossOp(BinaryOp):
    """Mean squared error, mean over all elements (PyTorch's reduction='mean').

    ``%l = frame.mse_loss %p, %t : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>``
    """

    name = "frame.mse_loss"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        a, b = shapes
        if a != b:
            raise ShapeError(
                f"frame.mse_loss: target shape expected {_fmt(a)}, found {_fmt(b)}"
            )
        return ()


@irdl_op_definition
class MseLossGradOp(FrameOp):
    """d mse / d prediction = 2 (p - t) / N * dloss (the VJP of frame.mse_loss).

    ``%dp = frame.mse_loss_grad %p, %t, %dl : (tensor<8x1xf32>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>``
    """

    name = "frame.mse_loss_grad"
    prediction = operand_def(AnyF32Tensor)
    target = operand_def(AnyF32Tensor)
    dloss = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    assembly_format = (
        "$prediction `,` $target `,` $dloss attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, prediction: SSAValue | Operation, target: SSAValue | Operation,
                 dloss: SSAValue | Operation):
        ops = [SSAValue.get(prediction), SSAValue.get(target), SSAValue.get(dloss)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops)])

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        p, t, d = shapes
        if p != t:
            raise ShapeError(
                f"frame.mse_loss_grad: target shape expected {_fmt(p)}, found {_fmt(t)}"
            )
        if d != ():
            raise ShapeError(
                f"frame.mse_loss_grad: dloss expected a 0-d tensor, found {_fmt(d)}"
            )
        return p


def _loss_rule(name: str, scores: Shape, labels: Shape, reduction: object) -> Shape:
    """scores [N, C], labels [N] -> [] (mean, sum) or [N] (none)."""
    if reduction not in REDUCTIONS:
        raise ShapeError(f'{name}: reduction expected "mean", "sum" or "none", found '
                         f'"{reduction}"')
    if len(scores) != 2:
        raise ShapeError(f"{name}: input expected rank 2 ([N, C]), found {_fmt(scores)}")
    if labels != scores[:1]:
        raise ShapeError(f"{name}: labels shape expected {_fmt(scores[:1])} (the input's "
                         f"rows), found {_fmt(labels)}")
    return (scores[0],) if reduction == "none" else ()


def _dy_rule(name: str, scores: Shape, dy: Shape, reduction: object) -> None:
    expected = (scores[0],) if reduction == "none" else ()
    if dy != expected:
        raise ShapeError(f"{name}: dy shape expected {_fmt(expected)} (the loss's, "
                         f"reduction \"{reduction}\"), found {_fmt(dy)}")


class _LossOp(FrameOp):
    """A loss op: `reduction` and `ignore_index`, float operands of the result's element
    type and one integer (i32 / i64) labels operand (#`LABELS`)."""

    reduction = prop_def(StringAttr)
    ignore_index = prop_def(IntegerAttr)
    LABELS: ClassVar[int] = 1

    def reduction_value(self) -> str:
        return self.reduction.data

    def ignore_value(self) -> int:
        return self.ignore_index.value.data

    def rule_attrs(self) -> dict[str, object]:
        return {"reduction": self.reduction_value()}

    @staticmethod
    def _props(reduction: str, ignore_index: int) -> dict[str, Attribute | None]:
        # In the order the printer shows and the IR is written in (sorted).
        return {"ignore_index": IntegerAttr(ignore_index, i64), "reduction": StringAttr(reduction)}

    def verify_(self) -> None:
        self.verify_dims()
        elem = getattr(self.results[0].type, "element_type", None)
        if not isinstance(elem, FLOAT_TYPES):
            raise VerifyException(f"{self.name}: result expected a tensor of f32, f16 or bf16, "
                                  f"found {self.results[0].type}")
        for i, v in enumerate(self.operands):
            found = getattr(v.type, "element_type", None)
            if i == self.LABELS:
                if found not in (i32, i64):
                    raise VerifyException(f"{self.name}: labels (operand #{i}) expected a "
                                          f"tensor of i32 or i64, found {v.type}")
            elif found != elem:
                raise VerifyException(f"{self.name}: operand #{i} expected a tensor of "
                                      f"{elem} (the result's element type), found {v.type}")
        try:
            expected = self.inferred_type()
        except ShapeError as err:
            raise VerifyException(str(err)) from None
        if expected is not None and isinstance(self.results[0].type, TensorType) \
                and self.results[0].type != expected:
            raise VerifyException(f"{self.name}: result type expected {expected}, found "
                                  f"{self.results[0].type}")


class _ForwardLoss(_LossOp):
    input = operand_def(AnyF32Tensor)
    labels = operand_def(base(TensorType))
    result = result_def(AnyF32Tensor)
    assembly_format = "$input `,` $labels attr-dict `:` functional-type(operands, results)"

    def __init__(self, scores: SSAValue | Operation, labels: SSAValue | Operation,
                 reduction: str = "mean", ignore_index: int = -100):
        ops = [SSAValue.get(scores), SSAValue.get(labels)]
        super().__init__(operands=ops,
                         result_types=[self.result_type_for(ops, reduction=reduction)],
                         properties=self._props(reduction, ignore_index))


@irdl_op_definition
class NllLossOp(_ForwardLoss):
    """The negative log-likelihood of log-probabilities [N, C] at the labels [N].
    ``%l = frame.nll_loss %lp, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>``"""

    name = "frame.nll_loss"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _loss_rule("frame.nll_loss", shapes[0], shapes[1], attrs.get("reduction"))


@irdl_op_definition
class CrossEntropyOp(_ForwardLoss):
    """nll_loss(log_softmax(logits, axis 1)) of logits [N, C] at the labels [N], fused.
    ``%l = frame.cross_entropy %x, %y {ignore_index = -100 : i64, reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<f32>``"""

    name = "frame.cross_entropy"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _loss_rule("frame.cross_entropy", shapes[0], shapes[1], attrs.get("reduction"))


class _LossGrad(_LossOp):
    input = operand_def(AnyF32Tensor)
    labels = operand_def(base(TensorType))
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    assembly_format = ("$input `,` $labels `,` $dy attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, scores: SSAValue | Operation, labels: SSAValue | Operation,
                 dy: SSAValue | Operation, reduction: str = "mean", ignore_index: int = -100):
        ops = [SSAValue.get(v) for v in (scores, labels, dy)]
        super().__init__(operands=ops,
                         result_types=[self.result_type_for(ops, reduction=reduction)],
                         properties=self._props(reduction, ignore_index))


@irdl_op_definition
class NllLossGradOp(_LossGrad):
    """The nll_loss VJP for the log-probabilities: `-w_i` at [i, labels[i]], 0 elsewhere
    (w_i: dy[i], dy, or dy / count for "mean"; 0 for ignored rows). The input only
    gives the shape.
    ``%g = frame.nll_loss_grad %lp, %y, %dl {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>``"""

    name = "frame.nll_loss_grad"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        scores, labels, dy = shapes
        _loss_rule("frame.nll_loss_grad", scores, labels, attrs.get("reduction"))
        _dy_rule("frame.nll_loss_grad", scores, dy, attrs.get("reduction"))
        return scores


@irdl_op_definition
class CrossEntropyGradOp(_LossGrad):
    """The cross_entropy VJP for the logits: `w_i * (softmax(x)[i] - onehot(labels[i]))`
    (w_i as nll_loss_grad's).
    ``%g = frame.cross_entropy_grad %x, %y, %dl {ignore_index = -100 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x5xf32>``"""

    name = "frame.cross_entropy_grad"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        scores, labels, dy = shapes
        _loss_rule("frame.cross_entropy_grad", scores, labels, attrs.get("reduction"))
        _dy_rule("frame.cross_entropy_grad", scores, dy, attrs.get("reduction"))
        return scores


OPS = [MseLossOp, MseLossGradOp, NllLossOp, CrossEntropyOp, NllLossGradOp,
       CrossEntropyGradOp]


# --- VJP rules --------------------------------------------------------------------------

Adjoints = list[SSAValue | None]


def _vjp_mse_loss(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                  need: Sequence[bool]) -> Adjoints:
    dp = emit(MseLossGradOp(op.lhs, op.rhs, dy))
    # d/dt (p - t)^2 = -(d/dp): reuse dp rather than a second gradient kernel.
    return [dp if need[0] else None, emit(NegOp(dp)) if need[1] else None]


def _vjp_nll_loss(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                  need: Sequence[bool]) -> Adjoints:
    # Integer labels get no adjoint.
    return [emit(NllLossGradOp(op.input, op.labels, dy, op.reduction_value(),
                               op.ignore_value())) if need[0] else None, None]


def _vjp_cross_entropy(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                       need: Sequence[bool]) -> Adjoints:
    return [emit(CrossEntropyGradOp(op.input, op.labels, dy, op.reduction_value(),
                                    op.ignore_value())) if need[0] else None, None]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    MseLossOp: _vjp_mse_loss, NllLossOp: _vjp_nll_loss, CrossEntropyOp: _vjp_cross_entropy}


# --- run-time label checks ------------------------------------------------------------------


def record_label_check(op: Any, labels: SSAValue, classes: int,
                       ignore_index: int | None) -> None:
    """Note on the function argument `labels` (if it is one) that its values must lie in
    [0, classes) or equal `ignore_index` (when not None), for `op` (named without
    `_grad`: the forward op and its gradient share one check). Labels are always
    arguments: frame has no integer arithmetic, and the Python API passes integer
    constants as hidden inputs."""
    if not isinstance(labels, BlockArgument):
        return
    fn = labels.block.parent_op()
    if not isinstance(fn, func.FuncOp) or labels.block is not fn.body.blocks.first:
        return
    fields: dict[str, Attribute] = {"op": StringAttr(op.name.removesuffix("_grad")),
                                    "bound": IntegerAttr(classes, i64)}
    if ignore_index is not None:
        fields["ignore_index"] = IntegerAttr(ignore_index, i64)
    entry = DictionaryAttr(fields)
    attrs = fn.arg_attrs.data[labels.index].data if fn.arg_attrs is not None else {}
    existing = attrs.get(INDEX_CHECKS_ATTR)
    entries = list(existing.data) if isinstance(existing, ArrayAttr) else []
    if entry not in entries:
        set_arg_attr(fn, labels.index, INDEX_CHECKS_ATTR, ArrayAttr([*entries, entry]))


# --- lowerings ----------------------------------------------------------------------------


def _bin(b: Builder, cls: type[Operation], x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(cls(x, y)).results[0]  # type: ignore[call-arg]


def _index_const(b: Builder, value: int) -> SSAValue:
    return b.insert(arith.ConstantOp(IntegerAttr(value, builtin.IndexType()))).result


def _label_index(b: Builder, label: SSAValue) -> SSAValue:
    """The label (i32 / i64, sign-extended) as an index."""
    assert isinstance(label.type, IntegerType)
    return b.insert(arith.IndexCastOp(label, builtin.IndexType())).result


def _counted(b: Builder, label: SSAValue, ignore_index: int) -> SSAValue:
    """label != ignore_index (an i1); `label` an integer or already an index."""
    if isinstance(label.type, IntegerType):
        label = _label_index(b, label)
    return b.insert(arith.CmpiOp(label, _index_const(b, ignore_index), "ne")).result


def _hit(b: Builder, label: SSAValue, ignore_index: int, class_dim: int) -> SSAValue:
    """The current class (loop `class_dim`) is the row's label, and the row counts."""
    lab = _label_index(b, label)
    c = b.insert(linalg.IndexOp(class_dim)).result
    eq = b.insert(arith.CmpiOp(lab, c, "eq")).result
    return b.insert(arith.AndIOp(eq, _counted(b, lab, ignore_index))).result


_ROW, _PAIR = dims_map(2, [0]), identity_map(2)


def _row_terms(lw: Any, op: Any, scores: SSAValue, extra: Sequence[SSAValue],
               value: Callable[[Builder, Sequence[SSAValue]], SSAValue]) -> SSAValue:
    """f32 [N]: value(scores[i, label], extra[i]...) at each counted row, 0 at ignored
    ones -- a scan over (i, c) that selects the label's column (linalg cannot index by
    data; a row with an out-of-range label selects nothing)."""
    n = (static_shape(scores) or ())[0]
    ignore = op.ignore_value()

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        return b.insert(arith.SelectOp(_hit(b, a[1], ignore, 1), value(b, [a[0], *a[2:-1]]),
                                       a[-1])).result
    return lw.generic([scores, op.labels, *extra], lw.filled(_frame.tensor_type([n]), 0.0),
                      [_PAIR, _ROW, *[_ROW] * len(extra), _ROW], [PAR, RED], body)


def _count(lw: Any, op: Any) -> SSAValue:
    """The number of counted rows (label != ignore_index), a 0-d f32 (exact below 2^24)."""
    ignore = op.ignore_value()

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        one = b.insert(arith.SelectOp(_counted(b, a[0], ignore), _c(b, 1.0), _c(b, 0.0))).result
        return _bin(b, arith.AddfOp, a[1], one)
    return lw.generic([op.labels], lw.filled(_frame.tensor_type(()), 0.0),
                      [identity_map(1), dims_map(1, [])], [RED], body)


def _reduce_rows(lw: Any, op: Any, rows: SSAValue) -> SSAValue:
    """The loss from its f32 rows: themselves ("none"), their sum, or the sum / count."""
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    reduction = op.reduction_value()
    if reduction == "none":
        return rows if rows.type == typ else lw.generic(
            [rows], lw.empty(typ), [identity_map(1)] * 2, [PAR], lambda b, a: a[0])
    total = sum_axes(lw, rows, [0])
    if reduction == "sum":
        return total if total.type == typ else lw.generic(
            [total], lw.empty(typ), [identity_map(0)] * 2, [], lambda b, a: a[0])
    return lw.generic([total, _count(lw, op)], lw.empty(typ), [identity_map(0)] * 3, [],
                      lambda b, a: _bin(b, arith.DivfOp, a[0], a[1]))


def _softmax_rows(lw: Any, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Per row: the max (torch's scan) and log(sum(exp(x - max))), f32 [N]."""
    from frame_mlir.dialects.linalg_utils import row_reduce

    m = row_reduce(lw, [x], 1, float("-inf"), lambda b, a: b.insert(
        arith.SelectOp(max_takes(b, a[0], a[1]), a[0], a[1])).result)
    s = row_reduce(lw, [x], 1, 0.0, lambda b, a: _bin(b, arith.AddfOp, a[2], b.insert(
        math.ExpOp(_bin(b, arith.SubfOp, a[0], a[1]))).result), [m])
    ls = lw.generic([s], lw.empty(s.type), [identity_map(1)] * 2, [PAR],
                    lambda b, a: b.insert(math.LogOp(a[0])).result)
    return m, ls


def _lower_nll_loss(lw: Any, op: Any) -> SSAValue:
    classes = (static_shape(op.input) or (0, 0))[1]
    record_label_check(op, op.labels, classes, op.ignore_value())
    rows = _row_terms(lw, op, op.input, [], lambda b, a: b.insert(arith.NegfOp(a[0])).result)
    return _reduce_rows(lw, op, rows)


def _lower_cross_entropy(lw: Any, op: Any) -> SSAValue:
    classes = (static_shape(op.input) or (0, 0))[1]
    record_label_check(op, op.labels, classes, op.ignore_value())
    m, ls = _softmax_rows(lw, op.input)
    # log(sum) - (x - max): the negation of log_softmax's (x - max) - log(sum), bit for bit.
    rows = _row_terms(lw, op, op.input, [m, ls], lambda b, a: _bin(
        b, arith.SubfOp, a[2], _bin(b, arith.SubfOp, a[0], a[1])))
    return _reduce_rows(lw, op, rows)


def _row_weights(lw: Any, op: Any) -> SSAValue:
    """w_i, f32 [N]: dy[i] ("none"), dy ("sum") or dy / count ("mean") at counted rows,
    0 at ignored ones."""
    n = (static_shape(op.input) or ())[0]
    ignore = op.ignore_value()
    reduction = op.reduction_value()
    inputs, maps = [op.labels, op.dy], [identity_map(1),
                                        identity_map(1) if reduction == "none" else
                                        dims_map(1, [])]
    if reduction == "mean":
        inputs, maps = [*inputs, _count(lw, op)], [*maps, dims_map(1, [])]

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        w = _bin(b, arith.DivfOp, a[1], a[2]) if reduction == "mean" else a[1]
        return b.insert(arith.SelectOp(_counted(b, a[0], ignore), w, _c(b, 0.0))).result
    return lw.generic(inputs, lw.empty(_frame.tensor_type([n])), [*maps, identity_map(1)],
                      [PAR], body)


def _lower_nll_loss_grad(lw: Any, op: Any) -> SSAValue:
    classes = (static_shape(op.input) or (0, 0))[1]
    record_label_check(op, op.labels, classes, op.ignore_value())
    w = _row_weights(lw, op)
    typ = op.results[0].type
    ignore = op.ignore_value()

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        return b.insert(arith.SelectOp(_hit(b, a[0], ignore, 1),
                                       b.insert(arith.NegfOp(a[1])).result, _c(b, 0.0))).result
    # Loops (i, c) over the result; the input (only its shape matters) is not read.
    return lw.generic([op.labels, w], lw.empty(typ), [_ROW, _ROW, _PAIR], [PAR, PAR], body)


def _lower_cross_entropy_grad(lw: Any, op: Any) -> SSAValue:
    """torch's log_softmax backward of nll_loss's gradient g (-w_i at the label):
    g - exp(logp) * sum(g) = exp(logp) * w_i - (label ? w_i : 0)."""
    classes = (static_shape(op.input) or (0, 0))[1]
    record_label_check(op, op.labels, classes, op.ignore_value())
    m, ls = _softmax_rows(lw, op.input)
    w = _row_weights(lw, op)
    typ = op.results[0].type
    ignore = op.ignore_value()

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        x, label, mv, lsv, wv = a[:5]
        logp = _bin(b, arith.SubfOp, _bin(b, arith.SubfOp, x, mv), lsv)
        p = _bin(b, arith.MulfOp, b.insert(math.ExpOp(logp)).result, wv)
        at = b.insert(arith.SelectOp(_hit(b, label, ignore, 1), wv, _c(b, 0.0))).result
        return _bin(b, arith.SubfOp, p, at)
    return lw.generic([op.input, op.labels, m, ls, w], lw.empty(typ),
                      [_PAIR, _ROW, _ROW, _ROW, _ROW, _PAIR], [PAR, PAR], body)


def _numel(value: SSAValue) -> int:
    return prod(static_shape(value) or ())


def _lower_mse_loss(lw: Any, op: Operation) -> SSAValue:
    def sq_acc(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        d = b.insert(arith.SubfOp(a[0], a[1])).result
        sq = b.insert(arith.MulfOp(d, d)).result
        return b.insert(arith.AddfOp(a[2], sq)).result

    total = sum_into(lw, op.operands, sq_acc)
    n = float(_numel(op.operands[0]))
    # The mean divides by N, as PyTorch's reduction='mean' does.
    return lw.elementwise([total], _result_type(op),
                          lambda b, a: b.insert(arith.DivfOp(a[0], _c(b, n))).result)


def _lower_mse_loss_grad(lw: Any, op: Operation) -> SSAValue:
    n = _numel(op.operands[0])
    norm = 2.0 / n if n else 0.0  # an empty tensor: the gradient has no elements anyway

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        d = b.insert(arith.SubfOp(a[0], a[1])).result
        scaled = b.insert(arith.MulfOp(_c(b, norm), d)).result
        return b.insert(arith.MulfOp(scaled, a[2])).result

    return lw.elementwise(op.operands, _result_type(op), body)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    MseLossOp: _lower_mse_loss, MseLossGradOp: _lower_mse_loss_grad,
    NllLossOp: _lower_nll_loss, CrossEntropyOp: _lower_cross_entropy,
    NllLossGradOp: _lower_nll_loss_grad, CrossEntropyGradOp: _lower_cross_entropy_grad}
