"""The `frame` dialect: tensor ops with value semantics for training graphs.

Every frontend (spec v0 JSON, the nn Modules, later the network JSON, the
`.kyn` DSL and the Python API) lowers into these ops, and every backend consumes
IR derived from them by one shared pass pipeline.

Types are builtin tensors of `f32`, `f16` or `bf16` (16-bit storage; kernels compute in
f32 and round at op boundaries); an op's operands and result share one element type. A
result may be written unranked (`tensor<*xf32>`) by a frontend or a hand-written test; `frame-shape-inference`
replaces it with the static type computed by the op's shape rule. Once shapes
are known, each op's verifier checks that its result type equals what the shape
rule says, so a malformed graph is reported at the op that is wrong.

Each op class carries:
  * ``infer_shape(operand_shapes)`` -- the shape rule, the single place an op's
    result shape is defined (builders, the verifier and shape inference use it);
  * a docstring with a one-line IR example.

Gradient rules live in ``frame_mlir.passes.vjp_rules`` and lowerings in
``frame_mlir.passes.convert_frame_to_linalg``: one table per concern.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
    UnrankedTensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

Shape = tuple[int, ...]

AnyF32Tensor = base(TensorType) | base(UnrankedTensorType)

#: The largest finite float32.
F32_MAX = 3.4028234663852886e38


class ShapeError(VerifyException):
    """A shape rule rejected its operands (the message says expected vs found)."""


#: Element types frame ops accept.
FLOAT_TYPES = (Float32Type, Float16Type, BFloat16Type)


def tensor_type(shape: Sequence[int], elem: Attribute = f32) -> TensorType:
    """The static tensor type of ``shape`` (f32 unless ``elem`` says otherwise)."""
    return TensorType(elem, list(shape))


def element_type(value: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor value or type."""
    typ = value.type if isinstance(value, SSAValue) else value
    return typ.element_type  # type: ignore[attr-defined]


def unranked() -> UnrankedTensorType:
    """``tensor<*xf32>``: a result whose shape the shape-inference pass fills in."""
    return UnrankedTensorType(f32)


def static_shape(value: SSAValue | Attribute) -> Shape | None:
    """The static shape of a value or type, or None while it is unranked."""
    typ = value.type if isinstance(value, SSAValue) else value
    if isinstance(typ, TensorType):
        return tuple(typ.get_shape())
    return None


def _fmt(shape: Shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


class FrameOp(IRDLOperation):
    """Base of frame ops: element type checks and the shape-rule verifier."""

    #: Ops whose results are a pure function of their operands.
    traits = traits_def(NoMemoryEffect())
    # Attributes such as `factor`, `lr` and the transpose flags read best in the
    # attribute dictionary: `frame.matmul %a, %b {transpose_lhs} : ...`.
    irdl_options = (ParsePropInAttrDict(),)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        """The shape rule: result shape from operand shapes; ShapeError on misuse."""
        raise NotImplementedError

    def rule_attrs(self) -> dict[str, object]:
        """The attributes the shape rule depends on (none by default)."""
        return {}

    def infer_shape(self, shapes: Sequence[Shape]) -> Shape:
        """Apply this op's shape rule to ``shapes``."""
        return self.rule(shapes, **self.rule_attrs())

    @classmethod
    def result_type_for(cls, operands: Sequence[SSAValue], **attrs: object) -> Attribute:
        """Static result type for ``operands`` (their element type), or unranked if any
        operand is."""
        elem = element_type(operands[0]) if operands else f32
        shapes = [static_shape(o) for o in operands]
        if any(s is None for s in shapes):
            return UnrankedTensorType(elem)
        return tensor_type(cls.rule(shapes, **attrs), elem)  # type: ignore[arg-type]

    def inferred_type(self) -> TensorType | None:
        """The result type the shape rule gives, or None while operands are unranked."""
        shapes = [static_shape(o) for o in self.operands]
        if any(s is None for s in shapes):
            return None
        elem = element_type(self.results[0])
        return tensor_type(self.infer_shape(shapes), elem)  # type: ignore[arg-type]

    def verify_dims(self) -> None:
        """Frame tensors are unranked (until shape inference) or statically shaped: no
        `?` dims. (Empty tensors are fine, as in PyTorch: a mean over none is NaN.)"""
        for kind, values in (("operand", self.operands), ("result", self.results)):
            for i, v in enumerate(values):
                shape = static_shape(v)
                if shape is not None and any(d < 0 for d in shape):
                    raise VerifyException(f"{self.name}: {kind} #{i} expected static dims, "
                                          f"found a dynamic dim in {v.type}")

    def verify_(self) -> None:
        self.verify_dims()
        result = self.results[0]
        elem = getattr(result.type, "element_type", None)
        if not isinstance(elem, FLOAT_TYPES):
            raise VerifyException(
                f"{self.name}: result must be a tensor of f32, f16 or bf16, found {result.type}"
            )
        for i, operand in enumerate(self.operands):
            typ = operand.type
            if getattr(typ, "element_type", None) != elem:
                raise VerifyException(
                    f"{self.name}: operand #{i} must be a tensor of {elem} (the result's "
                    f"element type), found {typ}"
                )
        try:
            expected = self.inferred_type()
        except ShapeError as err:
            msg = str(err)
            raise ShapeError(msg if msg.startswith(self.name) else f"{self.name}: {msg}") from None
        if expected is not None and isinstance(result.type, TensorType):
            if result.type != expected:
                raise VerifyException(
                    f"{self.name}: result type expected {expected}, found {result.type}"
                )


_FUNC = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
_UNARY = "$input attr-dict `:` functional-type(operands, results)"


def same_shape_rule(shapes: Sequence[Shape]) -> Shape:
    """All operands share one shape, which is the result's (v0 has no broadcasting)."""
    first = shapes[0]
    for other in shapes[1:]:
        if other != first:
            raise ShapeError(
                f"operand shapes must match (no broadcasting in v0): "
                f"expected {_fmt(first)}, found {_fmt(other)}"
            )
    return first


class BinaryOp(FrameOp):
    """A two-operand op; the subclass gives the shape rule."""

    lhs = operand_def(AnyF32Tensor)
    rhs = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)

    assembly_format = _FUNC

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation,
                 result_type: Attribute | None = None,
                 properties: dict[str, Attribute | None] | None = None, **rule_attrs: object):
        ops = [SSAValue.get(lhs), SSAValue.get(rhs)]
        super().__init__(operands=ops,
                         result_types=[result_type or self.result_type_for(ops, **rule_attrs)],
                         properties=properties or {})


class ElementwiseBinaryOp(BinaryOp):
    """Same-shape elementwise binary op (the gradient ops: no broadcasting)."""

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return same_shape_rule(shapes)


def broadcast_rule(shapes: Sequence[Shape]) -> Shape:
    """numpy's broadcasting: shapes align on the right, each dim pair is equal or one of
    them is 1 (a missing leading dim counts as 1); the result takes the larger."""
    out: list[int] = []
    rank = max((len(s) for s in shapes), default=0)
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        big = dims - {1}
        if len(big) > 1:
            raise ShapeError("operands " + " and ".join(_fmt(s) for s in shapes)
                             + " do not broadcast")
        out.append(big.pop() if big else 1)
    return tuple(out)


def broadcast_dims(operand: Shape, result: Shape) -> list[int]:
    """The dims of `result` along which `operand` (broadcast to it) is repeated: the
    leading dims it lacks and the size-1 dims it stretches. Empty: no broadcasting."""
    lead = len(result) - len(operand)
    return [d for d in range(len(result))
            if d < lead or (operand[d - lead] == 1 and result[d] != 1)]


class BroadcastingBinaryOp(ElementwiseBinaryOp):
    """An elementwise binary op whose operands broadcast as numpy's do (add, sub, mul,
    div, maximum, minimum): the result has the broadcast shape; its lowering reads a
    broadcast operand with index 0 for stretched dims, its VJP sums the adjoint over
    them (`frame_reduce.reduce_to`)."""

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return broadcast_rule(shapes)


@irdl_op_definition
class AddOp(BroadcastingBinaryOp):
    """Elementwise sum, broadcasting.
    ``%c = frame.add %a, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>``
    ``%c = frame.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>``"""

    name = "frame.add"


@irdl_op_definition
class SubOp(BroadcastingBinaryOp):
    """Elementwise difference, broadcasting. ``%c = frame.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.sub"


@irdl_op_definition
class MulOp(BroadcastingBinaryOp):
    """Elementwise product, broadcasting. ``%c = frame.mul %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>``"""

    name = "frame.mul"


class UnaryOp(FrameOp):
    """A one-operand op whose shape rule is given by the subclass."""

    input = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)

    assembly_format = _UNARY

    def __init__(self, input: SSAValue | Operation, result_type: Attribute | None = None,
                 properties: dict[str, Attribute | None] | None = None):
        ops = [SSAValue.get(input)]
        super().__init__(operands=ops, result_types=[result_type or self.result_type_for(ops)],
                         properties=properties or {})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return shapes[0]


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0) elementwise. ``%y = frame.relu %x : (tensor<8x8xf32>) -> tensor<8x8xf32>``"""

    name = "frame.relu"


@irdl_op_definition
class NegOp(UnaryOp):
    """-x elementwise. ``%y = frame.neg %x : (tensor<8x1xf32>) -> tensor<8x1xf32>``"""

    name = "frame.neg"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x)) elementwise. ``%y = frame.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.sigmoid"


@irdl_op_definition
class HeavisideSurrogateOp(UnaryOp):
    """Spike function: 1 where x >= 0 (-0.0 included), else 0. Its gradient is the
    surrogate dy * alpha * s * (1 - s), s = sigmoid(alpha * x) (frame.heaviside_surrogate_grad).

    ``%s = frame.heaviside_surrogate %x {alpha = 2.0 : f32} : (tensor<5xf32>) -> tensor<5xf32>``
    """

    name = "frame.heaviside_surrogate"
    alpha = prop_def(FloatAttr)

    def __init__(self, input: SSAValue | Operation, alpha: float):
        super().__init__(input, None, {"alpha": FloatAttr(alpha, f32)})

    def verify_(self) -> None:
        super().verify_()
        _verify_alpha(self.name, self.alpha.value.data)


def _verify_alpha(op_name: str, alpha: float) -> None:
    """The surrogate's steepness: finite and > 0 (NaN fails both)."""
    if not (alpha > 0 and alpha != float("inf")):
        raise VerifyException(f"{op_name}: alpha expected finite and > 0, found "
                              f"{_f32_text(alpha)}")


def _f32_text(value: float) -> str:
    """The shortest decimal that reads back as the same float32 (-0.05, not
    -0.05000000074505806, for an f32 attribute holding -0.05)."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value or value != value:
            return text if "e" in text or "." in text or "n" in text else f"{text}.0"
    return repr(value)


@irdl_op_definition
class HeavisideSurrogateGradOp(BinaryOp):
    """The surrogate gradient of frame.heaviside_surrogate: dy * alpha * s * (1 - s),
    s = sigmoid(alpha * x).

    ``%dx = frame.heaviside_surrogate_grad %x, %dy {alpha = 2.0 : f32} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>``
    """

    name = "frame.heaviside_surrogate_grad"
    alpha = prop_def(FloatAttr)

    def __init__(self, x: SSAValue | Operation, dy: SSAValue | Operation, alpha: float):
        super().__init__(x, dy, properties={"alpha": FloatAttr(alpha, f32)})

    def verify_(self) -> None:
        super().verify_()
        _verify_alpha(self.name, self.alpha.value.data)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return same_shape_rule(shapes)


@irdl_op_definition
class ScaleOp(UnaryOp):
    """x * factor with a compile-time constant factor.

    ``%y = frame.scale %x {factor = 2.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>``
    """

    name = "frame.scale"
    factor = prop_def(FloatAttr)

    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, factor: float,
                 result_type: Attribute | None = None):
        super().__init__(input, result_type, {"factor": FloatAttr(factor, f32)})


def check_axes(axes: Sequence[int], rank: int, what: str) -> None:
    """Axes must lie in [0, rank) without repeats; ShapeError says which one does not."""
    seen: set[int] = set()
    for a in axes:
        if a < 0:
            raise ShapeError(f"{what}: axis {a} is negative (expected 0 <= axis < {rank})")
        if a >= rank:
            raise ShapeError(f"{what}: axis {a} is out of range (expected 0 <= axis < {rank})")
        if a in seen:
            raise ShapeError(f"{what}: axis {a} appears twice")
        seen.add(a)


def reduced_shape(shape: Shape, axes: Sequence[int] | None, keepdims: bool,
                  what: str) -> Shape:
    """The shape of a reduction of `shape` over `axes` (all when None): the reduced dims
    dropped, or kept as 1 with `keepdims`; ShapeError (naming `what`) on bad axes."""
    if axes is None:
        axes = range(len(shape))
    else:
        check_axes(axes, len(shape), what)
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


@irdl_op_definition
class SumOp(UnaryOp):
    """Sum over `axes` (all axes when absent), dropping the reduced dims (keeping them as
    size 1 with `keepdims`, as torch's keepdim=True).

    ``%s = frame.sum %x : (tensor<8x1xf32>) -> tensor<f32>``
    ``%r = frame.sum %x {axes = array<i64: 1>} : (tensor<8x3xf32>) -> tensor<8xf32>``
    ``%r = frame.sum %x {axes = array<i64: 1>, keepdims} : (tensor<8x3xf32>) -> tensor<8x1xf32>``
    """

    name = "frame.sum"
    axes = opt_prop_def(DenseArrayBase.constr(i64))
    keepdims = opt_prop_def(UnitAttr)

    def __init__(self, input: SSAValue | Operation, axes: Sequence[int] | None = None,
                 result_type: Attribute | None = None, keepdims: bool = False):
        props: dict[str, Attribute | None] = {
            "axes": DenseArrayBase.from_list(i64, list(axes)) if axes is not None else None,
            "keepdims": UnitAttr() if keepdims else None}
        ops = [SSAValue.get(input)]
        rtype = result_type or self.result_type_for(ops, axes=axes, keepdims=keepdims)
        super().__init__(input, rtype, props)

    def reduced_axes(self, rank: int) -> list[int]:
        """The reduced axes, resolved against the operand rank."""
        return list(range(rank)) if self.axes is None else list(self.axes.get_values())

    def rule_attrs(self) -> dict[str, object]:
        return {"axes": None if self.axes is None else list(self.axes.get_values()),
                "keepdims": self.keepdims is not None}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        (s,) = shapes
        axes = attrs.get("axes")
        return reduced_shape(s, axes, bool(attrs.get("keepdims")), "frame.sum")  # type: ignore[arg-type]


@irdl_op_definition
class BroadcastOp(UnaryOp):
    """Repeat the operand along the result's `axes` (all of them when absent: a 0-d
    operand fills the whole result). The VJP of frame.sum.

    ``%y = frame.broadcast %s : (tensor<f32>) -> tensor<8x1xf32>``
    ``%y = frame.broadcast %r {axes = array<i64: 1>} : (tensor<8xf32>) -> tensor<8x3xf32>``
    """

    name = "frame.broadcast"
    axes = opt_prop_def(DenseArrayBase.constr(i64))

    def __init__(self, input: SSAValue | Operation, result_type: Attribute,
                 axes: Sequence[int] | None = None):
        props: dict[str, Attribute | None] = {
            "axes": DenseArrayBase.from_list(i64, list(axes)) if axes is not None else None}
        super().__init__(input, result_type, props)

    def new_axes(self, rank: int) -> list[int]:
        """The result dims the operand does not have."""
        return list(range(rank)) if self.axes is None else list(self.axes.get_values())

    def infer_shape(self, shapes: Sequence[Shape]) -> Shape:
        # The target shape is the declared result type: it is not inferred.
        (s,) = shapes
        target = static_shape(self.result)
        if target is None:
            raise ShapeError("frame.broadcast: the result type must be static (it is the "
                             "target shape)")
        axes = self.new_axes(len(target))
        check_axes(axes, len(target), "frame.broadcast")
        kept = tuple(d for i, d in enumerate(target) if i not in axes)
        if s != kept:
            raise ShapeError(f"frame.broadcast: operand expected {_fmt(kept)} (the result "
                             f"without axes {axes}), found {_fmt(s)}")
        return target


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


@irdl_op_definition
class ReluGradOp(ElementwiseBinaryOp):
    """dy where x > 0, else 0 (the VJP of frame.relu).

    ``%dx = frame.relu_grad %x, %dy : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>``
    """

    name = "frame.relu_grad"


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


@irdl_op_definition
class ConstantOp(FrameOp):
    """A splat constant tensor. ``%one = frame.constant 1.0 : tensor<f32>``"""

    name = "frame.constant"
    value = prop_def(FloatAttr)
    result = result_def(AnyF32Tensor)

    def __init__(self, value: float, shape: Sequence[int] = (),
                 result_type: Attribute | None = None):
        super().__init__(properties={"value": FloatAttr(value, f32)},
                         result_types=[result_type or tensor_type(shape)])

    def infer_shape(self, shapes: Sequence[Shape]) -> Shape:
        # A constant's shape is its declared (always static) type.
        target = static_shape(self.result)
        if target is None:
            raise ShapeError("frame.constant: the result type must be static")
        return target

    def splat_value(self) -> float:
        """The value every element holds."""
        return float(self.value.value.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        # As arith.constant prints f32: `1.000000e-01`, 9 digits if needed, hex for inf/nan.
        printer.print_float(self.splat_value(), f32)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        negative = parser.parse_optional_punctuation("-") is not None
        # A hex literal is the f32 bit pattern (how inf and nan print), as in MLIR.
        is_hex = parser._current_token.text[:2] in ("0x", "0X")  # noqa: SLF001
        number = parser.parse_number()
        if is_hex:
            value = struct.unpack("<f", int(number).to_bytes(4, "little"))[0]
        else:
            value = float(number)
            if abs(value) > F32_MAX:
                parser.raise_error(f"frame.constant: expected a value in the f32 range "
                                   f"(|v| <= {F32_MAX:.9g}; inf and nan as hex bit patterns), "
                                   f"found {value:g}")
        value = -value if negative else value
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        typ = parser.parse_type()
        if not isinstance(typ, TensorType):
            parser.raise_error(f"frame.constant: expected a static tensor type, found {typ}")
        op = cls(value, result_type=typ)
        op.attributes.update(attrs)
        return op


def _scan_rule(shapes: Sequence[Shape], what: str) -> Shape:
    first = shapes[0]
    if len(first) < 1 or first[-1] < 1:
        raise ShapeError(f"{what}: expected rank >= 1 with a last dim >= 1, found {_fmt(first)}")
    return same_shape_rule(shapes)


@irdl_op_definition
class SelectiveScanOp(FrameOp):
    """Linear recurrence along the last axis, per leading index, from h = 0:
    h = a[t] * h + b[t] * x[t];  y[t] = c[t] * h + d[t] * x[t].

    ``%y = frame.selective_scan %x, %a, %b, %c, %d : (tensor<3xf32>, ...) -> tensor<3xf32>``
    """

    name = "frame.selective_scan"
    x = operand_def(AnyF32Tensor)
    a = operand_def(AnyF32Tensor)
    b = operand_def(AnyF32Tensor)
    c = operand_def(AnyF32Tensor)
    d = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    assembly_format = ("$x `,` $a `,` $b `,` $c `,` $d attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, x: SSAValue | Operation, a: SSAValue | Operation,
                 b: SSAValue | Operation, c: SSAValue | Operation, d: SSAValue | Operation):
        ops = [SSAValue.get(v) for v in (x, a, b, c, d)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops)])

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _scan_rule(shapes, "frame.selective_scan")


@irdl_op_definition
class SelectiveScanGradOp(FrameOp):
    """The gradient of frame.selective_scan with respect to operand `wrt` (0..4 for
    x, a, b, c, d), given dy: a forward pass recomputing the states, then a reverse scan.

    ``%gx = frame.selective_scan_grad %x, %a, %b, %c, %d, %dy {wrt = 0 : i64} : (...) -> tensor<3xf32>``
    """

    name = "frame.selective_scan_grad"
    x = operand_def(AnyF32Tensor)
    a = operand_def(AnyF32Tensor)
    b = operand_def(AnyF32Tensor)
    c = operand_def(AnyF32Tensor)
    d = operand_def(AnyF32Tensor)
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    wrt = prop_def(IntegerAttr.constr(i64))
    assembly_format = ("$x `,` $a `,` $b `,` $c `,` $d `,` $dy attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, operands: Sequence[SSAValue], dy: SSAValue, wrt: int):
        ops = [*[SSAValue.get(v) for v in operands], SSAValue.get(dy)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops)],
                         properties={"wrt": IntegerAttr(wrt, i64)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _scan_rule(shapes, "frame.selective_scan_grad")

    def verify_(self) -> None:
        super().verify_()
        if not 0 <= self.wrt.value.data <= 4:
            raise VerifyException(f"frame.selective_scan_grad: wrt expected 0..4, found "
                                  f"{self.wrt.value.data}")


def _verify_rows_types(op_name: str, what: str, rows: Attribute, out: Attribute,
                       indices: Attribute) -> None:
    """The row ops (scatter_add, gather_rows): float rows of the result's element type,
    indexed by i32 or i64 tensors."""
    elem = getattr(out, "element_type", None)
    if getattr(rows, "element_type", None) != elem or not isinstance(elem, FLOAT_TYPES):
        raise VerifyException(f"{op_name}: {what} and result must share a float element "
                              f"type, found {rows} and {out}")
    if getattr(indices, "element_type", None) not in (i32, i64):
        raise VerifyException(f"{op_name}: indices must be i32 or i64, found {indices}")


@irdl_op_definition
class ScatterAddOp(FrameOp):
    """Zero-filled [V, F] output with out[indices[k], :] += updates[k, :] (indices i32/i64).

    ``%o = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>``
    """

    name = "frame.scatter_add"
    updates = operand_def(AnyF32Tensor)
    indices = operand_def(base(TensorType))
    result = result_def(AnyF32Tensor)
    assembly_format = "$updates `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, updates: SSAValue | Operation, indices: SSAValue | Operation,
                 result_type: Attribute):
        super().__init__(operands=[SSAValue.get(updates), SSAValue.get(indices)],
                         result_types=[result_type])

    def verify_(self) -> None:
        self.verify_dims()
        _verify_rows_types(self.name, "updates", self.updates.type, self.result.type,
                           self.indices.type)
        try:
            self.infer_shape([static_shape(v) or () for v in self.operands])
        except ShapeError as err:
            raise VerifyException(str(err)) from None

    def infer_shape(self, shapes: Sequence[Shape]) -> Shape:
        upd, idx = shapes
        target = static_shape(self.result)
        if target is None:
            raise ShapeError("frame.scatter_add: the result type must be static")
        if len(upd) != 2 or len(idx) != 1 or len(target) != 2 or upd[0] != idx[0] \
                or upd[1] != target[1]:
            raise ShapeError(f"frame.scatter_add: expected updates [K, F], indices [K] and a "
                             f"[V, F] result, found {_fmt(upd)}, {_fmt(idx)}, {_fmt(target)}")
        return target


@irdl_op_definition
class GatherRowsOp(FrameOp):
    """out[k, :] = x[indices[k], :] (the VJP of frame.scatter_add for its updates).

    ``%g = frame.gather_rows %x, %i : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>``
    """

    name = "frame.gather_rows"
    source = operand_def(AnyF32Tensor)
    indices = operand_def(base(TensorType))
    result = result_def(AnyF32Tensor)
    assembly_format = "$source `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, source: SSAValue | Operation, indices: SSAValue | Operation):
        src, idx = SSAValue.get(source), SSAValue.get(indices)
        s, i = static_shape(src), static_shape(idx)
        rtype = tensor_type((i[0], s[1]), element_type(src)) if s and i else \
            UnrankedTensorType(element_type(src))
        super().__init__(operands=[src, idx], result_types=[rtype])

    def verify_(self) -> None:
        self.verify_dims()
        _verify_rows_types(self.name, "source", self.source.type, self.result.type,
                           self.indices.type)
        shapes = [static_shape(v) for v in self.operands]
        target = static_shape(self.result)
        if any(sh is None for sh in shapes) or target is None:
            return
        expected = self.infer_shape(shapes)  # type: ignore[arg-type]
        if expected != target:
            raise VerifyException(f"frame.gather_rows: result type expected "
                                  f"{tensor_type(expected, element_type(self.result))}, "
                                  f"found {self.result.type}")

    def infer_shape(self, shapes: Sequence[Shape]) -> Shape:
        src, idx = shapes
        if len(src) != 2 or len(idx) != 1:
            raise ShapeError(f"frame.gather_rows: expected [V, F] and [K], found {_fmt(src)} "
                             f"and {_fmt(idx)}")
        return (idx[0], src[1])


@irdl_op_definition
class SgdUpdateOp(BinaryOp):
    """One SGD step for a parameter: ``p - lr * g`` (inserted by frame-sgd-fuse).

    Bufferization writes the result into the parameter's own buffer when the
    function argument is marked ``frame.aliasing_output``.
    ``%p1 = frame.sgd_update %p, %g {lr = 0.05 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>``
    """

    name = "frame.sgd_update"
    lr = prop_def(FloatAttr)

    def __init__(self, param: SSAValue | Operation, grad: SSAValue | Operation, lr: float):
        super().__init__(param, grad, properties={"lr": FloatAttr(lr, f32)})

    def verify_(self) -> None:
        super().verify_()
        lr = self.lr.value.data
        if not (lr > 0 and lr != float("inf")):
            raise VerifyException(f"frame.sgd_update: lr expected finite and > 0, found "
                                  f"{_f32_text(lr)}")

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        p, g = shapes
        if p != g:
            raise ShapeError(
                f"frame.sgd_update: gradient shape expected {_fmt(p)}, found {_fmt(g)}"
            )
        return p


# The elementwise math family lives in its own file, with its VJP rules and lowerings
# (imported here, once this module's base classes exist; `frame_mlir.dialects`
# imports this module first, so the family is never imported on its own).
from frame_mlir.dialects.frame_conv import OPS as _CONV_OPS  # noqa: E402
from frame_mlir.dialects.frame_conv import (  # noqa: E402, F401
    AvgPoolGradOp,
    AvgPoolOp,
    ConvGradInputOp,
    ConvGradWeightOp,
    ConvOp,
    ConvTransposeOp,
    GlobalAvgPoolOp,
    GlobalMaxPoolOp,
    MaxPoolGradOp,
    MaxPoolOp,
    conv_output_shape,
    conv_transpose_output_shape,
    pool_output_shape,
)
from frame_mlir.dialects.frame_loss import OPS as _LOSS_OPS  # noqa: E402
from frame_mlir.dialects.frame_loss import (  # noqa: E402, F401
    CrossEntropyGradOp,
    CrossEntropyOp,
    NllLossGradOp,
    NllLossOp,
)
from frame_mlir.dialects.frame_math import (  # noqa: E402
    OPS as _MATH_OPS,
)
from frame_mlir.dialects.frame_math import (  # noqa: E402, F401
    AbsGradOp,
    AbsOp,
    DivOp,
    ExpOp,
    GeluGradOp,
    GeluOp,
    HardtanhGradOp,
    HardtanhOp,
    LogOp,
    ShiftOp,
    TanhOp,
    ThresholdGradOp,
    ThresholdOp,
)
from frame_mlir.dialects.frame_movement import OPS as _MOVEMENT_OPS  # noqa: E402
from frame_mlir.dialects.frame_movement import (  # noqa: E402, F401
    ConcatOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
)
from frame_mlir.dialects.frame_norm import OPS as _NORM_OPS  # noqa: E402
from frame_mlir.dialects.frame_norm import (  # noqa: E402, F401
    BatchNormGradOp,
    BatchNormInferenceGradOp,
    BatchNormInferenceOp,
    BatchNormOp,
    BatchNormStatsOp,
    LayerNormGradOp,
    LayerNormOp,
)
from frame_mlir.dialects.frame_reduce import OPS as _REDUCE_OPS  # noqa: E402
from frame_mlir.dialects.frame_reduce import (  # noqa: E402, F401
    MaxGradOp,
    MaximumGradOp,
    MaximumOp,
    MaxOp,
    MeanOp,
    MinimumGradOp,
    MinimumOp,
)
from frame_mlir.dialects.frame_scan import OPS as _SCAN_OPS  # noqa: E402
from frame_mlir.dialects.frame_scan import ScanOp  # noqa: E402, F401
from frame_mlir.dialects.frame_softmax import (  # noqa: E402
    OPS as _SOFTMAX_OPS,
)
from frame_mlir.dialects.frame_softmax import (  # noqa: E402, F401
    LogSoftmaxGradOp,
    LogSoftmaxOp,
    SoftmaxGradOp,
    SoftmaxOp,
)
from frame_mlir.dialects.frame_spectral import OPS as _SPECTRAL_OPS  # noqa: E402
from frame_mlir.dialects.frame_spectral import (  # noqa: E402, F401
    IrfftGradOp,
    IrfftOp,
    RfftGradOp,
    RfftOp,
)

Frame = Dialect(
    "frame",
    [
        *_MATH_OPS,
        *_CONV_OPS,
        *_SOFTMAX_OPS,
        *_NORM_OPS,
        *_MOVEMENT_OPS,
        *_REDUCE_OPS,
        *_SPECTRAL_OPS,
        *_LOSS_OPS,
        *_SCAN_OPS,
        AddOp,
        SubOp,
        MulOp,
        NegOp,
        ScaleOp,
        SigmoidOp,
        HeavisideSurrogateOp,
        HeavisideSurrogateGradOp,
        ScatterAddOp,
        GatherRowsOp,
        SelectiveScanOp,
        SelectiveScanGradOp,
        ReluOp,
        ReluGradOp,
        MatmulOp,
        SumOp,
        BroadcastOp,
        MseLossOp,
        MseLossGradOp,
        ConstantOp,
        SgdUpdateOp,
    ],
    [],
)
