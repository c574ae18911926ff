"""The frame dialect's elementwise math family: exp, log, sqrt, tanh, abs, gelu,
hardtanh, threshold, step, shift and div -- each op with its shape rule and verifier
(the base classes'), its VJP rule and its lowering, in this one file.

`frame.py` adds these ops to the `frame` dialect and re-exports them
(`frame.ExpOp`, ...); `vjp_rules.VJP_RULES` and `convert_frame_to_linalg.LOWERINGS` take
their entries from `VJP_RULES` and `LOWERINGS` below. Numerics follow PyTorch's CPU
kernels (formulas cited per op); every body computes in f32 (f16 storage is widened
and rounded by the lowering, as for every elementwise op).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, StringAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame_base as _frame
from frame_mlir.dialects.frame_base import (
    BroadcastingBinaryOp,
    ElementwiseBinaryOp,
    UnaryOp,
    _f32_text,
)
from frame_mlir.dialects.frame_elementwise import MulOp, NegOp, ScaleOp, SubOp
from frame_mlir.dialects.linalg_utils import f32_const as _c


def _finite(op_name: str, what: str, value: float) -> None:
    if not pymath.isfinite(value):
        raise VerifyException(f"{op_name}: {what} expected a finite number, found {value}")


# --- ops --------------------------------------------------------------------------------


@irdl_op_definition
class ExpOp(UnaryOp):
    """e^x elementwise. ``%y = frame.exp %x : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural log elementwise (log 0 = -inf, log of a negative = NaN, as torch).
    ``%y = frame.log %x : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root elementwise (sqrt of a negative = NaN, sqrt(-0) = -0, as torch);
    its gradient is dy / (2 y). ``%y = frame.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.sqrt"


@irdl_op_definition
class TanhOp(UnaryOp):
    """tanh elementwise. ``%y = frame.tanh %x : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.tanh"


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x| elementwise; its gradient is dy * sign(x), 0 at 0 (frame.abs_grad).
    ``%y = frame.abs %x : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.abs"


GELU_FORMS = ("none", "tanh")


class _GeluForm:
    approximate = prop_def(StringAttr)

    def form(self) -> str:
        return self.approximate.data  # type: ignore[attr-defined]

    def verify_form(self) -> None:
        if self.form() not in GELU_FORMS:
            raise VerifyException(
                f"{self.name}: approximate expected one of 'none', 'tanh', "  # type: ignore[attr-defined]
                f"found '{self.form()}'")


@irdl_op_definition
class GeluOp(_GeluForm, UnaryOp):
    """GELU: x * Phi(x) (`approximate = "none"`, the erf form) or torch's tanh form.
    ``%y = frame.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.gelu"

    def __init__(self, input: SSAValue | Operation, approximate: str = "none"):
        super().__init__(input, None, {"approximate": StringAttr(approximate)})

    def verify_(self) -> None:
        super().verify_()
        self.verify_form()


@irdl_op_definition
class GeluGradOp(_GeluForm, ElementwiseBinaryOp):
    """dy * gelu'(x) for `frame.gelu` of the same form.
    ``%g = frame.gelu_grad %x, %dy {approximate = "none"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.gelu_grad"

    def __init__(self, x: SSAValue | Operation, dy: SSAValue | Operation,
                 approximate: str = "none"):
        super().__init__(x, dy, properties={"approximate": StringAttr(approximate)})

    def verify_(self) -> None:
        super().verify_()
        self.verify_form()


class _Bounds:
    min_val = prop_def(FloatAttr)
    max_val = prop_def(FloatAttr)

    def bounds(self) -> tuple[float, float]:
        return self.min_val.value.data, self.max_val.value.data  # type: ignore[attr-defined]

    def verify_bounds(self) -> None:
        lo, hi = self.bounds()
        name = self.name  # type: ignore[attr-defined]
        _finite(name, "min_val", lo)
        _finite(name, "max_val", hi)
        if lo > hi:
            raise VerifyException(f"{name}: min_val expected <= max_val ({_f32_text(hi)}), "
                                  f"found {_f32_text(lo)}")


def _bounds_props(min_val: float, max_val: float) -> dict[str, Attribute | None]:
    return {"min_val": FloatAttr(min_val, f32), "max_val": FloatAttr(max_val, f32)}


@irdl_op_definition
class HardtanhOp(_Bounds, UnaryOp):
    """Clamp to [min_val, max_val] (NaN stays NaN); relu6 is hardtanh(0, 6).
    ``%y = frame.hardtanh %x {min_val = -1.0 : f32, max_val = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.hardtanh"

    def __init__(self, input: SSAValue | Operation, min_val: float = -1.0,
                 max_val: float = 1.0):
        super().__init__(input, None, _bounds_props(min_val, max_val))

    def verify_(self) -> None:
        super().verify_()
        self.verify_bounds()


@irdl_op_definition
class HardtanhGradOp(_Bounds, ElementwiseBinaryOp):
    """dy where min_val < x < max_val, else 0 (torch's hardtanh_backward).
    ``%g = frame.hardtanh_grad %x, %dy {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.hardtanh_grad"

    def __init__(self, x: SSAValue | Operation, dy: SSAValue | Operation, min_val: float,
                 max_val: float):
        super().__init__(x, dy, properties=_bounds_props(min_val, max_val))

    def verify_(self) -> None:
        super().verify_()
        self.verify_bounds()


class _Threshold:
    threshold = prop_def(FloatAttr)

    def limit(self) -> float:
        return self.threshold.value.data  # type: ignore[attr-defined]


@irdl_op_definition
class ThresholdOp(_Threshold, UnaryOp):
    """x where x > threshold, else value (torch.nn.functional.threshold).
    ``%y = frame.threshold %x {threshold = 0.5 : f32, value = -1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.threshold"
    value = prop_def(FloatAttr)

    def __init__(self, input: SSAValue | Operation, threshold: float, value: float):
        super().__init__(input, None, {"threshold": FloatAttr(threshold, f32),
                                       "value": FloatAttr(value, f32)})

    def verify_(self) -> None:
        super().verify_()
        _finite(self.name, "threshold", self.limit())


@irdl_op_definition
class ThresholdGradOp(_Threshold, ElementwiseBinaryOp):
    """dy where x > threshold, else 0.
    ``%g = frame.threshold_grad %x, %dy {threshold = 0.5 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.threshold_grad"

    def __init__(self, x: SSAValue | Operation, dy: SSAValue | Operation, threshold: float):
        super().__init__(x, dy, properties={"threshold": FloatAttr(threshold, f32)})


@irdl_op_definition
class StepOp(_Threshold, UnaryOp):
    """1 where x > threshold, else 0 (a NaN gives 0: the compare is ordered); no
    gradient flows through it (its VJP is 0). The network format's `Threshold`.
    ``%y = frame.step %x {threshold = 0.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.step"

    def __init__(self, input: SSAValue | Operation, threshold: float = 0.0):
        super().__init__(input, None, {"threshold": FloatAttr(threshold, f32)})

    def verify_(self) -> None:
        super().verify_()
        _finite(self.name, "threshold", self.limit())


@irdl_op_definition
class AbsGradOp(ElementwiseBinaryOp):
    """dy * sign(x), with torch's sign: 1 for x > 0, -1 for x < 0, 0 at +-0 and NaN.
    ``%g = frame.abs_grad %x, %dy : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.abs_grad"


@irdl_op_definition
class ShiftOp(UnaryOp):
    """x + offset elementwise (a scalar shift; `frame.scale` is the scalar product).
    ``%y = frame.shift %x {offset = 0.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>``"""

    name = "frame.shift"
    offset = prop_def(FloatAttr)

    def __init__(self, input: SSAValue | Operation, offset: float):
        super().__init__(input, None, {"offset": FloatAttr(offset, f32)})

    def verify_(self) -> None:
        super().verify_()
        _finite(self.name, "offset", self.offset.value.data)


@irdl_op_definition
class DivOp(BroadcastingBinaryOp):
    """Elementwise quotient, broadcasting (IEEE: x / 0 is +-inf or NaN, as torch).
    ``%c = frame.div %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>``
    ``%c = frame.div %a, %n : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>``"""

    name = "frame.div"


OPS = [ExpOp, LogOp, SqrtOp, TanhOp, AbsOp, AbsGradOp, GeluOp, GeluGradOp, HardtanhOp,
       HardtanhGradOp, ThresholdOp, ThresholdGradOp, StepOp, ShiftOp, DivOp]


# --- VJP rules: (emit, op, dy, need) -> adjoint per operand ------------------------------

Emit = Callable[[Operation], SSAValue]
Adjoints = list[SSAValue | None]


def _vjp_exp(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(MulOp(dy, op.result))]  # d e^x = e^x


def _vjp_log(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(DivOp(dy, op.input))]  # d log x = 1 / x


def _vjp_sqrt(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    # d sqrt x = 1 / (2 y) (torch's sqrt_backward: grad / (2 * result)).
    return [emit(DivOp(dy, emit(ScaleOp(op.result, 2.0))))]


def _vjp_tanh(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    y = op.result  # d tanh = 1 - y^2 (torch's tanh_backward: dy * (1 - y * y))
    one = emit(_frame.ConstantOp(1.0, result_type=y.type))
    return [emit(MulOp(dy, emit(SubOp(one, emit(MulOp(y, y))))))]


def _vjp_abs(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(AbsGradOp(op.input, dy))]


def _vjp_gelu(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(GeluGradOp(op.input, dy, op.form()))]


def _vjp_hardtanh(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(HardtanhGradOp(op.input, dy, *op.bounds()))]


def _vjp_threshold(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(ThresholdGradOp(op.input, dy, op.limit()))]


def _vjp_step(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    # Piecewise constant: no gradient flows back (dlprimitives' Threshold: "gradient 0").
    # An explicit zero, so that x stays differentiable when it is active.
    return [emit(_frame.ConstantOp(0.0, result_type=op.input.type))]


def _vjp_shift(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [dy]


def _vjp_div(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    # Operands broadcast: each adjoint is summed over the dims its operand was
    # broadcast along (`reduce_to`; nothing when it was not).
    from frame_mlir.dialects.frame_reduce import reduce_to
    a, b = op.lhs, op.rhs  # d(a/b) = da / b - a db / b^2 (torch: -dy * a / (b * b))
    da = reduce_to(emit, emit(DivOp(dy, b)), a) if need[0] else None
    db = reduce_to(emit, emit(NegOp(emit(DivOp(emit(MulOp(dy, a)),
                                                      emit(MulOp(b, b)))))), b) \
        if need[1] else None
    return [da, db]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    ExpOp: _vjp_exp, LogOp: _vjp_log, SqrtOp: _vjp_sqrt, TanhOp: _vjp_tanh, AbsOp: _vjp_abs,
    GeluOp: _vjp_gelu, HardtanhOp: _vjp_hardtanh, ThresholdOp: _vjp_threshold,
    StepOp: _vjp_step, ShiftOp: _vjp_shift, DivOp: _vjp_div,
}


# --- lowerings: scalar f32 bodies for `Lowerer.elementwise` ------------------------------


def _add(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.AddfOp(x, y)).result


def _mul(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.MulfOp(x, y)).result


def _sel(b: Builder, cond: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.SelectOp(cond, x, y)).result


def _cmp(b: Builder, pred: str, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.CmpfOp(x, y, pred)).result


def _erfc(b: Builder, z: SSAValue) -> SSAValue:
    """erfc(z) with a relative error below 1.2e-7 everywhere (Numerical Recipes' erfcc,
    a Chebyshev fit of erfc(z) * exp(z^2)): arithmetic and one exp, so the JIT and the
    C++ program compute it alike, and 1 + erf(x) = erfc(-x) keeps its relative accuracy
    where erf(x) is near -1 (GELU of a negative x)."""
    a = b.insert(math.AbsFOp(z)).result
    t = b.insert(arith.DivfOp(_c(b, 1.0), _add(b, _c(b, 1.0), _mul(b, _c(b, 0.5), a)))).result
    coeffs = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
              -1.13520398, 1.48851587, -0.82215223, 0.17087277)
    poly = _c(b, coeffs[-1])
    for coef in reversed(coeffs[:-1]):
        poly = _add(b, _c(b, coef), _mul(b, t, poly))
    expo = _add(b, b.insert(arith.NegfOp(_mul(b, a, a))).result, poly)
    ans = _mul(b, t, b.insert(math.ExpOp(expo)).result)
    neg = _cmp(b, "olt", z, _c(b, 0.0))
    return _sel(b, neg, b.insert(arith.SubfOp(_c(b, 2.0), ans)).result, ans)


SQRT1_2 = 0.7071067811865476
TANH_BETA = pymath.sqrt(2.0 / pymath.pi)  # torch: M_SQRT2 * M_2_SQRTPI * 0.5
TANH_KAPPA = 0.044715


def _gelu_tanh_inner(b: Builder, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(x^2, tanh(beta * (x + kappa x^3))), as torch's GeluKernel computes them."""
    x2 = _mul(b, x, x)
    inner = _mul(b, _c(b, TANH_BETA), _add(b, x, _mul(b, _c(b, TANH_KAPPA), _mul(b, x2, x))))
    return x2, b.insert(math.TanhOp(inner)).result


def _gelu_body(form: str) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        x = a[0]
        half_x = _mul(b, x, _c(b, 0.5))
        if form == "tanh":  # 0.5 x (1 + tanh(beta (x + kappa x^3)))
            _, th = _gelu_tanh_inner(b, x)
            return _mul(b, half_x, _add(b, _c(b, 1.0), th))
        # x * 0.5 * (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2)
        z = _mul(b, b.insert(arith.NegfOp(x)).result, _c(b, SQRT1_2))
        return _mul(b, half_x, _erfc(b, z))
    return body


def _gelu_grad_body(form: str) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        x, dy = a[0], a[1]
        if form == "tanh":  # torch's GeluBackwardKernel, tanh branch
            x2, th = _gelu_tanh_inner(b, x)
            right = _add(b, _c(b, 1.0), th)
            left_d = _mul(b, _c(b, 0.5), right)
            right_d = b.insert(arith.SubfOp(_c(b, 1.0), _mul(b, th, th))).result
            inner_d = _mul(b, _c(b, TANH_BETA),
                           _add(b, _c(b, 1.0), _mul(b, _c(b, 3.0 * TANH_KAPPA), x2)))
            slope = _add(b, left_d, _mul(b, _mul(b, _mul(b, _c(b, 0.5), x), right_d), inner_d))
            return _mul(b, dy, slope)
        # cdf + x * pdf, cdf = 0.5 erfc(-x / sqrt 2), pdf = exp(-x^2 / 2) / sqrt(2 pi)
        z = _mul(b, b.insert(arith.NegfOp(x)).result, _c(b, SQRT1_2))
        cdf = _mul(b, _c(b, 0.5), _erfc(b, z))
        e = b.insert(math.ExpOp(_mul(b, _c(b, -0.5), _mul(b, x, x)))).result
        pdf = _mul(b, e, _c(b, 1.0 / pymath.sqrt(2.0 * pymath.pi)))
        return _mul(b, dy, _add(b, cdf, _mul(b, x, pdf)))
    return body


def _unary_math(cls: type[Operation]) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    return lambda b, a: b.insert(cls(a[0])).result  # type: ignore[call-arg]


def _abs_grad(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    x, dy = a[0], a[1]
    zero = _c(b, 0.0)
    # torch's sign: 0 at +-0 and at NaN, so the gradient there is dy * 0 (signed).
    sign = _sel(b, _cmp(b, "ogt", x, zero), _c(b, 1.0),
                _sel(b, _cmp(b, "olt", x, zero), _c(b, -1.0), zero))
    return _mul(b, dy, sign)


def _hardtanh(lo: float, hi: float) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        x, low, high = a[0], _c(b, lo), _c(b, hi)
        # Ordered compares: NaN matches neither and stays NaN (torch's clamp).
        return _sel(b, _cmp(b, "olt", x, low), low, _sel(b, _cmp(b, "ogt", x, high), high, x))
    return body


def _hardtanh_grad(lo: float, hi: float) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        x, dy = a[0], a[1]
        out = b.insert(arith.OrIOp(_cmp(b, "ole", x, _c(b, lo)), _cmp(b, "oge", x, _c(b, hi))))
        return _sel(b, out.result, _c(b, 0.0), dy)
    return body


def _threshold(limit: float, value: float) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    return lambda b, a: _sel(b, _cmp(b, "ole", a[0], _c(b, limit)), _c(b, value), a[0])


def _threshold_grad(limit: float) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    return lambda b, a: _sel(b, _cmp(b, "ole", a[0], _c(b, limit)), _c(b, 0.0), a[1])


def _step(limit: float) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    # Ordered compare: NaN > t is false, so a NaN gives 0 (torch's (x > t).float()).
    return lambda b, a: _sel(b, _cmp(b, "ogt", a[0], _c(b, limit)), _c(b, 1.0), _c(b, 0.0))


def _body(op: Any) -> Callable[[Builder, Sequence[SSAValue]], SSAValue]:
    """The scalar body computing `op` from its operands' elements."""
    if isinstance(op, ExpOp):
        return _unary_math(math.ExpOp)
    if isinstance(op, LogOp):
        return _unary_math(math.LogOp)
    if isinstance(op, SqrtOp):
        return _unary_math(math.SqrtOp)
    if isinstance(op, TanhOp):
        return _unary_math(math.TanhOp)
    if isinstance(op, AbsOp):
        return _unary_math(math.AbsFOp)
    if isinstance(op, AbsGradOp):
        return _abs_grad
    if isinstance(op, GeluOp):
        return _gelu_body(op.form())
    if isinstance(op, GeluGradOp):
        return _gelu_grad_body(op.form())
    if isinstance(op, HardtanhOp):
        return _hardtanh(*op.bounds())
    if isinstance(op, HardtanhGradOp):
        return _hardtanh_grad(*op.bounds())
    if isinstance(op, ThresholdOp):
        return _threshold(op.limit(), op.value.value.data)
    if isinstance(op, ThresholdGradOp):
        return _threshold_grad(op.limit())
    if isinstance(op, StepOp):
        return _step(op.limit())
    if isinstance(op, ShiftOp):
        offset = op.offset.value.data
        return lambda b, a: _add(b, a[0], _c(b, offset))
    if isinstance(op, DivOp):
        return lambda b, a: b.insert(arith.DivfOp(a[0], a[1])).result
    raise AssertionError(f"no body for {op.name}")


def _lower(lw: Any, op: Operation) -> SSAValue:
    return lw.elementwise(op.operands, op.results[0].type, _body(op))


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    cls: _lower for cls in OPS}
