"""The `frame` dialect's base (re-exported by `frame.py`, the dialect's module): the
op base classes (`FrameOp`, `UnaryOp`, `BinaryOp`, `ElementwiseBinaryOp`,
`BroadcastingBinaryOp`), `ShapeError`, the shape helpers, and the core ops --
`frame.constant` (autodiff's seeds and every VJP's constants), `frame.sgd_update`
(frame-sgd-fuse) and `frame.update` (an optimizer's in-place write of a new value into a
parameter's buffer) -- with their lowerings (`LOWERINGS`) and update's VJP rule
(`VJP_RULES`).

The op families (`frame_elementwise.py`, ...) import this module, never `frame.py`,
which imports them: the families build on the base, the dialect on the families.
`ops` names every op class of the dialect for the one VJP rule that emits an op of a
family above its own (mean's gradient divides, and the arithmetic family's gradients
sum: `frame_reduce` cannot import `frame_math`, which imports it); `frame.py` fills it.
"""


from __future__ import annotations

import struct
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
    TensorType,
    UnrankedTensorType,
    f32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects.linalg_utils import f32_const as _f32

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


RESULT_SHAPE = "result_shape"
"""The rule attribute of the ops whose result shape is declared rather than inferred
(reshape, broadcast, the gradient ops that produce an operand's shape, constant): the
declared shape, which their rule checks against the operands and returns."""


def declared_shape(attrs: Mapping[str, object], what: str) -> Shape:
    """The `result_shape` rule attribute of a declared-shape op (see `RESULT_SHAPE`);
    ShapeError when it is missing (an unranked result type)."""
    target = attrs.get(RESULT_SHAPE)
    if target is None:
        raise ShapeError(f"{what}: the result type must be static (it is the target shape)")
    return tuple(target)  # type: ignore[arg-type]


class DeclaredShape:
    """Mixin (before the op's base class) of the ops whose result shape is declared by
    their result type: their rule gets it as the `result_shape` attribute, so a frontend
    calls the same static rule with the shape it means to declare."""

    def rule_attrs(self) -> dict[str, object]:
        return {**super().rule_attrs(),  # type: ignore[misc]
                RESULT_SHAPE: static_shape(self.results[0])}  # type: ignore[attr-defined]


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


def _f32_text(value: float) -> str:
    """The shortest decimal that reads back as the same float32 (-0.05, not
    -0.05000000074505806, for an f32 attribute holding -0.05)."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value or value != value:
            return text if "e" in text or "." in text or "n" in text else f"{text}.0"
    return repr(value)


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


# --- the core ops: the ones the pipeline itself creates (frame-autodiff's seeds and the
# VJP rules' constants; frame-sgd-fuse's updates) and `update`, an optimizer's write into
# a parameter's own buffer; every other op is in a family file.


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

    def rule_attrs(self) -> dict[str, object]:
        return {RESULT_SHAPE: static_shape(self.result)}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        # A constant's shape is its declared (always static) type.
        return declared_shape(attrs, "frame.constant")

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


@irdl_op_definition
class UpdateOp(FrameOp):
    """The new value of a destination: the result IS `value` (value semantics), but it
    is computed in the buffer of `dest` (its lowering's destination, as sgd_update's is
    the parameter). An optimizer function marks a parameter argument
    ``frame.aliasing_output = r`` and returns ``frame.update %p, <new value>`` as result
    r: bufferization then writes the new value into the parameter's own buffer, and
    frame-fuse-elementwise merges an elementwise chain computing it into that one write.
    ``%p1 = frame.update %p, %v : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>``
    """

    name = "frame.update"
    dest = operand_def(AnyF32Tensor)
    value = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)

    assembly_format = "$dest `,` $value attr-dict `:` functional-type(operands, results)"

    def __init__(self, dest: SSAValue | Operation, value: SSAValue | Operation,
                 result_type: Attribute | None = None):
        ops = [SSAValue.get(dest), SSAValue.get(value)]
        super().__init__(operands=ops, result_types=[result_type or self.result_type_for(ops)])

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        d, v = shapes
        if d != v:
            raise ShapeError(
                f"frame.update: value shape expected {_fmt(d)} (the destination's), "
                f"found {_fmt(v)}"
            )
        return d


# --- VJP rules of the core ops: a constant has no operands and sgd_update is inserted
# after autodiff; update's result is its value, whatever the destination held.
# (`vjp_rules.VJP_RULES` starts from this table)


def _vjp_update(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                need: Sequence[bool]) -> list[SSAValue | None]:
    # d value = dy; the destination's old contents do not reach the result: no adjoint
    # (a zero, as torch's copy_ gives its destination).
    return [None, dy if need[1] else None]


VJP_RULES: dict[type[Operation], Callable[..., list[SSAValue | None]]] = {
    UpdateOp: _vjp_update}


# --- lowerings of the core ops ----------------------------------------------------------
# (`convert_frame_to_linalg.LOWERINGS` starts from this table)


def _lower_constant(lw: Any, op: Any) -> SSAValue:
    return lw.filled(op.results[0].type, op.splat_value())


def _lower_sgd_update(lw: Any, op: Any) -> SSAValue:
    neg_lr = -op.lr.value.data

    # Destination = the parameter: p <- p + (-lr) * g, as torch.optim.SGD's add_(g, alpha=-lr).
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        step = b.insert(arith.MulfOp(a[0], _f32(b, neg_lr))).result
        return b.insert(arith.AddfOp(a[1], step)).result

    return lw.elementwise([op.rhs], op.results[0].type, body, init=op.lhs)


def _lower_update(lw: Any, op: Any) -> SSAValue:
    # Destination = `dest`: a copy of `value` into its buffer (the body never reads the
    # destination, so frame-fuse-elementwise merges value's elementwise producers in).
    return lw.elementwise([op.value], op.results[0].type, lambda b, a: a[0], init=op.dest)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    ConstantOp: _lower_constant, SgdUpdateOp: _lower_sgd_update, UpdateOp: _lower_update}


#: Every op class of the dialect by its class name (`ops.DivOp`), filled by `frame.py`
#: once all families are imported: for a VJP rule that emits an op of a family that
#: imports its own (see the module docstring). Resolved when the rule runs.
ops: Any = types.SimpleNamespace()
