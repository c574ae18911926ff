"""The frame dialect's elementwise arithmetic family: add, sub and mul (broadcasting as
numpy does), neg, scale, and the first activations -- relu (with its gradient op
relu_grad), sigmoid and the spiking neuron's heaviside_surrogate (with its surrogate
gradient op) -- each op with its shape rule and verifier, its VJP rule and its
lowering, in this one file (like `frame_math.py`).

Why not in `frame_math.py`: these are the ops every other family's VJP rules emit
(adjoints are summed with frame.add, scaled with frame.mul / frame.scale, negated with
frame.neg), and the ops of the first versions; `frame_math.py` is the library of
math functions added later (exp, log, tanh, gelu, ...). Kept apart, neither file
grows past what reads at once. Both lower through `Lowerer.elementwise` with an f32
scalar body.

Numerics follow PyTorch's CPU kernels: relu clamps only x < 0 (NaN and -0.0 pass),
relu_grad zeroes dy only where x <= 0, sigmoid is 1 / (1 + exp(-x)).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects.frame_base import (
    BinaryOp,
    BroadcastingBinaryOp,
    ConstantOp,
    ElementwiseBinaryOp,
    Shape,
    UnaryOp,
    _f32_text,
    same_shape_rule,
)

# The adjoint of broadcasting, for the VJPs of add, sub and mul.
from frame_mlir.dialects.frame_reduce import reduce_to
from frame_mlir.dialects.linalg_utils import f32_const as _f32
from frame_mlir.dialects.linalg_utils import result_type as _result_type

# --- ops --------------------------------------------------------------------------------


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


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0) elementwise. ``%y = frame.relu %x : (tensor<8x8xf32>) -> tensor<8x8xf32>``"""

    name = "frame.relu"


@irdl_op_definition
class ReluGradOp(ElementwiseBinaryOp):
    """dy where x > 0, else 0 (the VJP of frame.relu; autodiff passes the relu's
    output as x, which is positive exactly where its input is).

    ``%dx = frame.relu_grad %x, %dy : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>``
    """

    name = "frame.relu_grad"


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


OPS = [AddOp, SubOp, MulOp, NegOp, ScaleOp, ReluOp, ReluGradOp, SigmoidOp,
       HeavisideSurrogateOp, HeavisideSurrogateGradOp]


# --- VJP rules --------------------------------------------------------------------------

Emit = Callable[[Operation], SSAValue]
Adjoints = list[SSAValue | None]

# add, sub and mul broadcast: an operand's adjoint is summed over the dims it was
# broadcast along (`reduce_to`, which emits nothing without broadcasting).


def _vjp_add(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [reduce_to(emit, dc, op.lhs) if need[0] else None,
            reduce_to(emit, dc, op.rhs) if need[1] else None]


def _vjp_sub(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [reduce_to(emit, dc, op.lhs) if need[0] else None,
            emit(NegOp(reduce_to(emit, dc, op.rhs))) if need[1] else None]


def _vjp_mul(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [
        reduce_to(emit, emit(MulOp(dc, op.rhs)), op.lhs) if need[0] else None,
        reduce_to(emit, emit(MulOp(dc, op.lhs)), op.rhs) if need[1] else None,
    ]


def _vjp_neg(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(NegOp(dc))]


def _vjp_scale(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(ScaleOp(dc, op.factor.value.data))]


def _vjp_relu(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    # relu(x) > 0 exactly where x > 0, so the mask reads the relu's output: the input
    # then dies with the forward pass (one fewer tensor saved for backward), and a
    # relu fused into a GEMM's epilogue needs no copy of its pre-activation
    return [emit(ReluGradOp(op.result, dc))]


def _vjp_sigmoid(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    s = op.result  # d sigmoid = s * (1 - s)
    one = emit(ConstantOp(1.0, result_type=s.type))
    return [emit(MulOp(dc, emit(MulOp(s, emit(SubOp(one, s))))))]


def _vjp_heaviside(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(HeavisideSurrogateGradOp(op.input, dc, op.alpha.value.data))]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    AddOp: _vjp_add, SubOp: _vjp_sub, MulOp: _vjp_mul, NegOp: _vjp_neg, ScaleOp: _vjp_scale,
    ReluOp: _vjp_relu, SigmoidOp: _vjp_sigmoid, HeavisideSurrogateOp: _vjp_heaviside}


# --- lowerings: scalar f32 bodies for `Lowerer.elementwise` ------------------------------


def _binary(make: Callable[[SSAValue, SSAValue], Operation]) -> Callable[[Any, Operation], SSAValue]:
    def lower(lw: Any, op: Operation) -> SSAValue:
        return lw.elementwise(op.operands, _result_type(op),
                              lambda b, a: b.insert(make(a[0], a[1])).results[0])
    return lower


def _lower_neg(lw: Any, op: Operation) -> SSAValue:
    return lw.elementwise(op.operands, _result_type(op),
                          lambda b, a: b.insert(arith.NegfOp(a[0])).result)


def _lower_scale(lw: Any, op: Any) -> SSAValue:
    factor = op.factor.value.data
    return lw.elementwise(op.operands, _result_type(op),
                          lambda b, a: b.insert(arith.MulfOp(a[0], _f32(b, factor))).result)


def _lower_relu(lw: Any, op: Operation) -> SSAValue:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        zero = _f32(b, 0.0)
        # PyTorch's relu clamps only x < 0: NaN and -0.0 pass through unchanged
        # (`olt` is false for both).
        negative = b.insert(arith.CmpfOp(a[0], zero, "olt")).result
        return b.insert(arith.SelectOp(negative, zero, a[0])).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _lower_relu_grad(lw: Any, op: Operation) -> SSAValue:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        zero = _f32(b, 0.0)
        # PyTorch's threshold_backward zeroes the gradient where x <= 0 only: at a NaN
        # input it passes (`ole` is false for NaN).
        blocked = b.insert(arith.CmpfOp(a[0], zero, "ole")).result
        return b.insert(arith.SelectOp(blocked, zero, a[1])).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _sigmoid_of(b: Builder, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x)), the form PyTorch's CPU kernel uses."""
    e = b.insert(math.ExpOp(b.insert(arith.NegfOp(x)).result)).result
    one = _f32(b, 1.0)
    return b.insert(arith.DivfOp(one, b.insert(arith.AddfOp(one, e)).result)).result


def _lower_sigmoid(lw: Any, op: Operation) -> SSAValue:
    return lw.elementwise(op.operands, _result_type(op), lambda b, a: _sigmoid_of(b, a[0]))


def _lower_heaviside(lw: Any, op: Operation) -> SSAValue:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        # Ordered >=: -0.0 >= 0 holds, NaN gives 0.
        fire = b.insert(arith.CmpfOp(a[0], _f32(b, 0.0), "oge")).result
        return b.insert(arith.SelectOp(fire, _f32(b, 1.0), _f32(b, 0.0))).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _lower_heaviside_grad(lw: Any, op: Any) -> SSAValue:
    alpha = op.alpha.value.data

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        al = _f32(b, alpha)
        sig = _sigmoid_of(b, b.insert(arith.MulfOp(al, a[0])).result)
        one_minus = b.insert(arith.SubfOp(_f32(b, 1.0), sig)).result
        slope = b.insert(arith.MulfOp(b.insert(arith.MulfOp(al, sig)).result, one_minus))
        return b.insert(arith.MulfOp(a[1], slope.result)).result
    return lw.elementwise(op.operands, _result_type(op), body)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    AddOp: _binary(arith.AddfOp), SubOp: _binary(arith.SubfOp), MulOp: _binary(arith.MulfOp),
    NegOp: _lower_neg, ScaleOp: _lower_scale, ReluOp: _lower_relu,
    ReluGradOp: _lower_relu_grad, SigmoidOp: _lower_sigmoid,
    HeavisideSurrogateOp: _lower_heaviside, HeavisideSurrogateGradOp: _lower_heaviside_grad}
