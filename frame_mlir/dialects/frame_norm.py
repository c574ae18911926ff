"""The frame dialect's normalization family: layer_norm over the last axis, batch norm
over a channel dim (training, its running statistics, inference) and their gradient
ops -- ops, shape rules, verifiers, VJP rules and lowerings in this one file.

`layer_norm(x[..., D], gamma[D], beta[D]; eps)` is PyTorch's: population variance,
`(x - mean) * rstd * gamma + beta` with `rstd = 1 / sqrt(var + eps)`. Means and
variances accumulate in f32 in index order (two passes: the mean, then the squared
deviations from it).

Batch norm is `F.batch_norm` on x [N, C, *spatial] (channel dim `axis`, 1 as torch's;
[N, C] too):
  * `frame.batch_norm` (training=True): per channel, the mean and the biased variance
    over all other dims (the same two f32 passes in index order), then
    `(x - mean) * rstd * gamma + beta`. Its VJP is torch's: `frame.batch_norm_grad`
    for x and gamma (the statistics recomputed), a sum of dy for beta.
  * `frame.batch_norm_stats`: the running_mean / running_var torch writes back after
    that call, `(1 - momentum) * running + momentum * stat` with the UNBIASED variance
    (n / (n - 1)). A separate pure op, so that a training step returns it (or writes
    it back in place); it has no VJP: running statistics never reach the loss.
  * `frame.batch_norm_inference` (training=False): the given mean and var [C]. Its VJP
    covers x, gamma and beta (`frame.batch_norm_inference_grad`); asking for a
    gradient of mean or var fails, as torch's native_batch_norm refuses it.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from math import prod
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, TensorType, f32, f64, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame_base as _frame
from frame_mlir.dialects.frame_base import AnyF32Tensor, FrameOp, Shape, ShapeError, _fmt
from frame_mlir.dialects.frame_reduce import SumOp
from frame_mlir.dialects.ir_utils import fail
from frame_mlir.dialects.linalg_utils import (
    PAR,
    RED,
    add_combine,
    dims_map,
    identity_map,
    lane_reduce,
    lane_reduce_multi,
)
from frame_mlir.dialects.linalg_utils import f32_const as _c


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


# --- batch normalization ------------------------------------------------------------------


def _bn_rule(name: str, x: Shape, axis: int, params: Sequence[Shape], what: Sequence[str],
             training: bool = False) -> None:
    """x [N, C, *spatial] (the channel dim at `axis`, 1 by default) and [C] parameters;
    in training, more than one value per channel (torch's rule: a variance needs two)."""
    if len(x) < 2:
        raise ShapeError(f"{name}: input expected rank >= 2 ([N, C, *spatial]), found "
                         f"{_fmt(x)}")
    if not 0 <= axis < len(x):
        raise ShapeError(f"{name}: axis expected in [0, {len(x)}) for a rank-{len(x)} "
                         f"input, found {axis}")
    for shape, w in zip(params, what, strict=True):
        if shape != (x[axis],):
            raise ShapeError(f"{name}: {w} shape expected {_fmt((x[axis],))} (the input's "
                             f"channel dim {axis}), found {_fmt(shape)}")
    if training and prod(x) // max(x[axis], 1) == 1:
        raise ShapeError(f"{name}: expected more than 1 value per channel in training, "
                         f"found input {_fmt(x)}")


class _ChannelAxis:
    axis = prop_def(IntegerAttr)

    def axis_value(self) -> int:
        return self.axis.value.data  # type: ignore[attr-defined]


@irdl_op_definition
class BatchNormOp(_ChannelAxis, FrameOp):
    """Training-mode batch norm: per channel (dim `axis`), the batch mean and biased
    variance over all other dims, then `(x - mean) * rstd * gamma + beta`.
    ``%y = frame.batch_norm %x, %g, %b {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x5xf32>``"""

    name = "frame.batch_norm"
    input = operand_def(AnyF32Tensor)
    gamma = operand_def(AnyF32Tensor)
    beta = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    eps = prop_def(FloatAttr)
    assembly_format = "$input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue | Operation, gamma: SSAValue | Operation,
                 beta: SSAValue | Operation, eps: float = 1e-5, axis: int = 1):
        ops = [SSAValue.get(v) for v in (x, gamma, beta)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops, axis=axis)],
                         properties={"axis": IntegerAttr(axis, i64), "eps": FloatAttr(eps, f32)})

    def rule_attrs(self) -> dict[str, object]:
        return {"axis": self.axis_value()}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, gamma, beta = shapes
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        _bn_rule("frame.batch_norm", x, axis, (gamma, beta),
                 ("gamma", "beta"), training=True)
        return x

    def verify_(self) -> None:
        super().verify_()
        _check_eps(self.name, self.eps.value.data)


@irdl_op_definition
class BatchNormGradOp(_ChannelAxis, FrameOp):
    """The training-mode batch_norm VJP for one operand (`wrt`): 0 gives dx (x's shape),
    1 gives dgamma ([C]); dbeta is a sum of dy. The batch statistics are recomputed.
    ``%dx = frame.batch_norm_grad %x, %g, %dy {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 0 : i64} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<4x3x5xf32>) -> tensor<4x3x5xf32>``"""

    name = "frame.batch_norm_grad"
    input = operand_def(AnyF32Tensor)
    gamma = operand_def(AnyF32Tensor)
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    eps = prop_def(FloatAttr)
    wrt = prop_def(IntegerAttr)
    assembly_format = "$input `,` $gamma `,` $dy attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue | Operation, gamma: SSAValue | Operation,
                 dy: SSAValue | Operation, eps: float, wrt: int, axis: int = 1):
        ops = [SSAValue.get(v) for v in (x, gamma, dy)]
        super().__init__(operands=ops,
                         result_types=[self.result_type_for(ops, wrt=wrt, axis=axis)],
                         properties={"axis": IntegerAttr(axis, i64), "eps": FloatAttr(eps, f32),
                                     "wrt": IntegerAttr(wrt, i64)})

    def rule_attrs(self) -> dict[str, object]:
        return {"wrt": self.wrt.value.data, "axis": self.axis_value()}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, gamma, dy = shapes
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        _bn_rule("frame.batch_norm_grad", x, axis, (gamma,),
                 ("gamma",), training=True)
        return _grad_result("frame.batch_norm_grad", x, gamma, dy, attrs.get("wrt"))

    def verify_(self) -> None:
        super().verify_()
        _check_eps(self.name, self.eps.value.data)


def _grad_result(name: str, x: Shape, gamma: Shape, dy: Shape, wrt: object) -> Shape:
    if dy != x:
        raise ShapeError(f"{name}: dy shape expected {_fmt(x)}, found {_fmt(dy)}")
    if wrt not in (0, 1):
        raise ShapeError(f"{name}: wrt expected 0 (x) or 1 (gamma), found {wrt}")
    return x if wrt == 0 else gamma


#: What `frame.batch_norm_stats` updates.
STATS = ("mean", "var")


@irdl_op_definition
class BatchNormStatsOp(_ChannelAxis, FrameOp):
    """A running statistic of training-mode batch norm after one batch, as torch updates
    `running_mean` / `running_var`: `(1 - momentum) * running + momentum * stat`, with
    stat the batch mean (`which = "mean"`) or the UNBIASED batch variance (`"var"`,
    n / (n - 1) times the biased one the normalization uses). A pure function of its
    operands; it has no VJP (running statistics are never on the gradient path:
    frame-autodiff fails if the loss depends on one).
    ``%rm = frame.batch_norm_stats %x, %running {axis = 1 : i64, momentum = 1.000000e-01 : f32, which = "mean"} : (tensor<4x3x5xf32>, tensor<3xf32>) -> tensor<3xf32>``"""

    name = "frame.batch_norm_stats"
    input = operand_def(AnyF32Tensor)
    running = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    momentum = prop_def(FloatAttr)
    which = prop_def(StringAttr)
    assembly_format = "$input `,` $running attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue | Operation, running: SSAValue | Operation,
                 momentum: float = 0.1, which: str = "mean", axis: int = 1):
        ops = [SSAValue.get(v) for v in (x, running)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops, axis=axis)],
                         properties={"axis": IntegerAttr(axis, i64),
                                     "momentum": FloatAttr(momentum, f32),
                                     "which": StringAttr(which)})

    def rule_attrs(self) -> dict[str, object]:
        return {"axis": self.axis_value()}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, running = shapes
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        _bn_rule("frame.batch_norm_stats", x, axis, (running,),
                 ("running",), training=True)
        return running

    def verify_(self) -> None:
        super().verify_()
        m = self.momentum.value.data
        if not 0.0 <= m <= 1.0:
            raise VerifyException(f"{self.name}: momentum expected in [0, 1], found {m}")
        if self.which.data not in STATS:
            raise VerifyException(f'{self.name}: which expected "mean" or "var", found '
                                  f'"{self.which.data}"')


@irdl_op_definition
class BatchNormInferenceOp(_ChannelAxis, FrameOp):
    """Inference-mode batch norm with given statistics [C]:
    `(x - mean) * rsqrt(var + eps) * gamma + beta` per channel (dim `axis`).
    ``%y = frame.batch_norm_inference %x, %g, %b, %m, %v {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>``"""

    name = "frame.batch_norm_inference"
    input = operand_def(AnyF32Tensor)
    gamma = operand_def(AnyF32Tensor)
    beta = operand_def(AnyF32Tensor)
    mean = operand_def(AnyF32Tensor)
    var = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    eps = prop_def(FloatAttr)
    assembly_format = ("$input `,` $gamma `,` $beta `,` $mean `,` $var attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, x: SSAValue | Operation, gamma: SSAValue | Operation,
                 beta: SSAValue | Operation, mean: SSAValue | Operation,
                 var: SSAValue | Operation, eps: float = 1e-5, axis: int = 1):
        ops = [SSAValue.get(v) for v in (x, gamma, beta, mean, var)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops, axis=axis)],
                         properties={"axis": IntegerAttr(axis, i64), "eps": FloatAttr(eps, f32)})

    def rule_attrs(self) -> dict[str, object]:
        return {"axis": self.axis_value()}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, *params = shapes
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        _bn_rule("frame.batch_norm_inference", x, axis, params,
                 ("gamma", "beta", "mean", "var"))
        return x

    def verify_(self) -> None:
        super().verify_()
        _check_eps(self.name, self.eps.value.data)


@irdl_op_definition
class BatchNormInferenceGradOp(_ChannelAxis, FrameOp):
    """The batch_norm_inference VJP for one operand (`wrt`): 0 gives dx
    (`dy * gamma * rstd`), 1 gives dgamma ([C]); mean and var get none.
    ``%dx = frame.batch_norm_inference_grad %x, %g, %m, %v, %dy {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 0 : i64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>``"""

    name = "frame.batch_norm_inference_grad"
    input = operand_def(AnyF32Tensor)
    gamma = operand_def(AnyF32Tensor)
    mean = operand_def(AnyF32Tensor)
    var = operand_def(AnyF32Tensor)
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    eps = prop_def(FloatAttr)
    wrt = prop_def(IntegerAttr)
    assembly_format = ("$input `,` $gamma `,` $mean `,` $var `,` $dy attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, x: SSAValue | Operation, gamma: SSAValue | Operation,
                 mean: SSAValue | Operation, var: SSAValue | Operation,
                 dy: SSAValue | Operation, eps: float, wrt: int, axis: int = 1):
        ops = [SSAValue.get(v) for v in (x, gamma, mean, var, dy)]
        super().__init__(operands=ops,
                         result_types=[self.result_type_for(ops, wrt=wrt, axis=axis)],
                         properties={"axis": IntegerAttr(axis, i64), "eps": FloatAttr(eps, f32),
                                     "wrt": IntegerAttr(wrt, i64)})

    def rule_attrs(self) -> dict[str, object]:
        return {"wrt": self.wrt.value.data, "axis": self.axis_value()}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, gamma, mean, var, dy = shapes
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        _bn_rule("frame.batch_norm_inference_grad", x, axis,
                 (gamma, mean, var), ("gamma", "mean", "var"))
        return _grad_result("frame.batch_norm_inference_grad", x, gamma, dy, attrs.get("wrt"))

    def verify_(self) -> None:
        super().verify_()
        _check_eps(self.name, self.eps.value.data)


OPS = [LayerNormOp, LayerNormGradOp, BatchNormOp, BatchNormGradOp, BatchNormStatsOp,
       BatchNormInferenceOp, BatchNormInferenceGradOp]


# --- VJP rule --------------------------------------------------------------------------


def _vjp_layer_norm(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                    need: Sequence[bool]) -> list[SSAValue | None]:
    eps = op.eps.value.data
    rank = len(_frame.static_shape(op.input) or ())
    dx = emit(LayerNormGradOp(op.input, op.gamma, dy, eps, 0)) if need[0] else None
    dg = emit(LayerNormGradOp(op.input, op.gamma, dy, eps, 1)) if need[1] else None
    db = emit(SumOp(dy, list(range(rank - 1)))) if need[2] and rank > 1 else \
        (dy if need[2] else None)
    return [dx, dg, db]


def _others(op: Any) -> list[int]:
    """The dims of the input other than the channel dim: what batch norm reduces."""
    rank = len(_frame.static_shape(op.input) or ())
    return [d for d in range(rank) if d != op.axis_value()]


def _vjp_batch_norm(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                    need: Sequence[bool]) -> list[SSAValue | None]:
    eps, axis = op.eps.value.data, op.axis_value()
    dx = emit(BatchNormGradOp(op.input, op.gamma, dy, eps, 0, axis)) if need[0] else None
    dg = emit(BatchNormGradOp(op.input, op.gamma, dy, eps, 1, axis)) if need[1] else None
    db = emit(SumOp(dy, _others(op))) if need[2] else None
    return [dx, dg, db]


def _vjp_batch_norm_inference(emit: Callable[[Operation], SSAValue], op: Any, dy: SSAValue,
                              need: Sequence[bool]) -> list[SSAValue | None]:
    if need[3] or need[4]:
        # As torch's native_batch_norm: "not differentiable with respect to argument
        # 'running_mean'". A silent zero would hide a wrong graph.
        what = "mean" if need[3] else "var"
        raise fail("frame-autodiff", op, f"{op.name}: not differentiable with respect to "
                   f"{what} (the statistics are data: only x, gamma and beta get gradients)")
    eps, axis = op.eps.value.data, op.axis_value()
    args = (op.input, op.gamma, op.mean, op.var, dy)
    dx = emit(BatchNormInferenceGradOp(*args, eps, 0, axis)) if need[0] else None
    dg = emit(BatchNormInferenceGradOp(*args, eps, 1, axis)) if need[1] else None
    db = emit(SumOp(dy, _others(op))) if need[2] else None
    return [dx, dg, db, None, None]


# frame.batch_norm_stats has no entry: a running statistic is never differentiated.
VJP_RULES: dict[type[Operation], Callable[..., list[SSAValue | None]]] = {
    LayerNormOp: _vjp_layer_norm, BatchNormOp: _vjp_batch_norm,
    BatchNormInferenceOp: _vjp_batch_norm_inference}


# --- lowerings ----------------------------------------------------------------------------


def _bin(b: Builder, cls: type[Operation], x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(cls(x, y)).results[0]  # type: ignore[call-arg]


def _row_stats(lw: Any, x: SSAValue, eps: float) -> tuple[SSAValue, SSAValue]:
    """Per-row mean and rstd = 1 / sqrt(var + eps), f32 tensors of x's leading shape:
    computed once per (x, eps) in a block, where the layer norm and its gradients read
    them."""
    return lw.reuse(("layer_norm_stats", x, eps), lambda: _row_stats_passes(lw, x, eps))


def _row_stats_passes(lw: Any, x: SSAValue, eps: float) -> tuple[SSAValue, SSAValue]:
    shape = list(_frame.static_shape(x) or ())
    rank, d = len(shape), shape[-1]
    row_type = _frame.tensor_type(shape[:-1])
    total = lane_reduce(lw, [x], rank - 1, 0.0, add_combine, add_combine)
    n = float(d)
    mean = lw.generic([total], lw.empty(row_type), [identity_map(rank - 1)] * 2,
                      [PAR] * (rank - 1), lambda b, a: _bin(b, arith.DivfOp, a[0], _c(b, n)))

    def sq(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        dev = _bin(b, arith.SubfOp, a[0], a[1])
        return _bin(b, arith.AddfOp, a[2], _bin(b, arith.MulfOp, dev, dev))
    ss = lane_reduce(lw, [x], rank - 1, 0.0, sq, add_combine, [mean])

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
        # Loops (rows..., d): every d sums its rows in order, and the contiguous d loop
        # is innermost, so it runs on vectors (with d leading, each d walked a column).
        acc = lw.filled(_frame.tensor_type([d]), 0.0)
        dg = lw.generic([x, dy, mean, rstd], acc, [ident, ident, row, row, last],
                        [RED] * (rank - 1) + [PAR], lambda b, a: _bin(
                            b, arith.AddfOp, a[4],
                            _bin(b, arith.MulfOp, a[1], _xhat(b, a[0], a[2], a[3]))))
        if dg.type == typ:
            return dg
        return lw.generic([dg], lw.empty(typ), [identity_map(1)] * 2, [PAR], lambda b, a: a[0])
    # dx = rstd / D * (D * g - sum(g) - xhat * sum(g * xhat)), g = dy * gamma
    def sums(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        g = _bin(b, arith.MulfOp, a[1], a[2])
        xh = _xhat(b, a[0], a[3], a[4])
        return [_bin(b, arith.AddfOp, a[5], g),
                _bin(b, arith.AddfOp, a[6], _bin(b, arith.MulfOp, g, xh))]
    sg, sgx = lane_reduce_multi(lw, [x, dy], rank - 1, [0.0, 0.0], sums,
                                [add_combine, add_combine], [mean, rstd], [gamma])

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        g = _bin(b, arith.MulfOp, a[1], a[2])
        xh = _xhat(b, a[0], a[3], a[4])
        inner = _bin(b, arith.SubfOp, _bin(b, arith.SubfOp, _bin(b, arith.MulfOp, g,
                                                                 _c(b, float(d))), a[5]),
                     _bin(b, arith.MulfOp, xh, a[6]))
        return _bin(b, arith.MulfOp, _bin(b, arith.DivfOp, a[4], _c(b, float(d))), inner)
    return lw.generic([x, dy, gamma, mean, rstd, sg, sgx], lw.empty(typ),
                      [ident, ident, last, row, row, row, row, ident], [PAR] * rank, body)


# batch norm: per-channel statistics over all other dims. The reductions loop over the
# channel dim first (parallel: threads split the channels), then the other dims in
# row-major order, so every channel accumulates its elements in index order; with the
# channel dim last (x [N, C]) the loops stay (n, c) -- the same order per channel, and
# the contiguous channel loop innermost.


def _channel_space(shape: Sequence[int], axis: int) -> tuple[Any, Any, list[Any]]:
    """(x map, [C] map, iterators) of a per-channel reduction over x of `shape`."""
    rank = len(shape)
    order = list(range(rank)) if axis == rank - 1 else \
        [axis, *(d for d in range(rank) if d != axis)]
    pos = {dim: i for i, dim in enumerate(order)}
    its = [PAR if d == axis else RED for d in order]
    return dims_map(rank, [pos[d] for d in range(rank)]), dims_map(rank, [pos[axis]]), its


def _channel_reduce(lw: Any, inputs: Sequence[SSAValue], rows: Sequence[SSAValue],
                    axis: int, n_out: int,
                    body: Callable[[Builder, Sequence[SSAValue]], list[SSAValue]]
                    ) -> list[SSAValue]:
    """`n_out` f64 [C] sums over the non-channel dims of same-shaped `inputs`, reading
    the f32 [C] tensors `rows` per channel; `body` gets the elements and the row values
    (f32) and the accumulators and returns the new accumulators (`_accumulate`: f32 for
    the partials below, f64 for the sums).

    With the channel before the last dim (NCHW), one running sum per channel would be a
    chain of N*H*W dependent adds (4 cycles each: batch norm's passes took ~10% of
    ResNet-18's step), and splitting it into vector lanes reassociates the sum, in an
    order only LLVM's vectorizer knows: the emitted C++ could not give the same bits.
    So, as `frame_reduce._column_sum` does, each column w of the last dim keeps its own
    f32 partial, `partial[c, w] += x[n, c, h, w]` over the other dims in row-major order
    (the innermost loop parallel: contiguous loads, a vector lane per column, a row of
    partials that stays in L1), and then `sum[c] = ((partial[c, 0] + partial[c, 1]) +
    ...)` in f64. The order depends on the shape alone: the same bits on every backend,
    vector width and thread count (the channel loop leads; the threads split it).

    Why f64 for the sums: PyTorch's CPU batch norm accumulates its statistics in double
    (`acc_type<float, false>`; its batch mean of 1e8, 4096 ones and -1e8 is exactly
    0.5). With an f32 sum of the partials (a chain of up to PARTIALS_MAX adds) the
    statistics at 32 x 32 images had 5x PyTorch's error (2.2e-7 vs 4.1e-8), enough to
    move relu6 inputs within rounding of a kink to the other side (docs/numerics.md).
    The partials stay f32: each adds the batch and the rows above the columns (N terms
    where H*W <= PARTIALS_MAX, N*H otherwise), and f64 partials made batch norm's passes
    20-50 % slower (the conversions, and twice the partial loads and stores)."""
    shape = list(_frame.static_shape(inputs[0]) or ())
    rank = len(shape)
    c_type = _frame.tensor_type([shape[axis]], f64)
    last = rank - 1
    others = [d for d in range(rank) if d not in (axis, last)]
    if axis == last or not others:
        # The channel is the innermost dim (parallel: it vectorizes as it is), or the
        # only other dim is the last one: one short chain per channel.
        x_map, c_map, its = _channel_space(shape, axis)
        inits = [lw.filled(c_type, 0.0) for _ in range(n_out)]
        maps = [x_map] * len(inputs) + [c_map] * (len(rows) + n_out)
        return _generic_n(lw, [*inputs, *rows], inits, maps, its, body)
    # The columns: the last dim, with the dims before it down to the channel while the
    # partials stay small (`frame-collapse-dims` then makes 7 x 7 one loop of 49).
    cols = [last]
    while cols[0] - 1 > axis and shape[cols[0] - 1] * prod(shape[d] for d in cols) <= \
            PARTIALS_MAX:
        cols.insert(0, cols[0] - 1)
    summed = [d for d in range(rank) if d != axis and d not in cols]
    order = [axis, *summed, *cols]  # loop i iterates dim order[i]
    pos = {d: i for i, d in enumerate(order)}
    x_map = dims_map(rank, [pos[d] for d in range(rank)])
    p_type = _frame.tensor_type([shape[axis], *(shape[d] for d in cols)])
    partials = [lw.filled(p_type, 0.0) for _ in range(n_out)]
    p_map = dims_map(rank, [0, *range(rank - len(cols), rank)])
    maps = [x_map] * len(inputs) + [dims_map(rank, [0])] * len(rows) + [p_map] * n_out
    partials = _generic_n(lw, [*inputs, *rows], partials, maps,
                          [PAR] + [RED] * len(summed) + [PAR] * len(cols), body)
    inits = [lw.filled(c_type, 0.0) for _ in range(n_out)]
    k = 1 + len(cols)
    return _generic_n(lw, partials, inits,
                      [identity_map(k)] * n_out + [dims_map(k, [0])] * n_out,
                      [PAR] + [RED] * len(cols),
                      lambda b, a: [_accumulate(b, acc, p)
                                    for p, acc in zip(a[:n_out], a[n_out:], strict=True)])


PARTIALS_MAX = 4096
"""Most partial sums per channel `_channel_reduce` keeps (16 KB: a row of them stays in
L1 while the batch is added into it)."""


def _generic_n(lw: Any, inputs: Sequence[SSAValue], inits: Sequence[SSAValue],
               maps: Sequence[Any], its: Sequence[Any],
               body: Callable[[Builder, Sequence[SSAValue]], list[SSAValue]]
               ) -> list[SSAValue]:
    """A generic with `len(inits)` outputs (`lw.generic` for one)."""
    if len(inits) == 1:
        return [lw.generic(list(inputs), inits[0], maps, its, lambda b, a: body(b, a)[0])]
    return lw.generic_multi(list(inputs), list(inits), maps, its, body)


def _accumulate(b: Builder, acc: SSAValue, value: SSAValue) -> SSAValue:
    """acc + value in acc's type (an f32 value widened for an f64 acc), in the order the
    loops give (see `_channel_reduce`)."""
    if value.type != acc.type:
        value = b.insert(arith.ExtFOp(value, f64)).result
    return _bin(b, arith.AddfOp, acc, value)


def _f64(b: Builder, value: float) -> SSAValue:
    return b.insert(arith.ConstantOp(FloatAttr(value, f64))).result


def _to_f32(b: Builder, value: SSAValue) -> SSAValue:
    return b.insert(arith.TruncFOp(value, f32)).result


def _per_channel(lw: Any, inputs: Sequence[SSAValue], typ: TensorType,
                 body: Callable[[Builder, Sequence[SSAValue]], SSAValue]) -> SSAValue:
    """An elementwise generic over [C] tensors."""
    return lw.generic(list(inputs), lw.empty(typ), [identity_map(1)] * (len(inputs) + 1),
                      [PAR], body)


def _count(x: SSAValue, axis: int) -> int:
    shape = _frame.static_shape(x) or ()
    return prod(shape) // shape[axis] if shape[axis] else 0


def _batch_stats(lw: Any, x: SSAValue, axis: int) -> tuple[SSAValue, SSAValue]:
    """Per channel: the mean (f32 [C]: the f64 sum / n, rounded once) and the sum of
    squared deviations from it (f64 [C]; two passes, each in index order). Once per x
    and axis in a block (`Lowerer.reuse`): the forward, both running statistics and the
    gradients read the same two passes."""
    return lw.reuse(("batch_stats", x, axis), lambda: _batch_stats_passes(lw, x, axis))


def _batch_stats_passes(lw: Any, x: SSAValue, axis: int) -> tuple[SSAValue, SSAValue]:
    n = float(_count(x, axis))
    c_type = _frame.tensor_type([(_frame.static_shape(x) or ())[axis]])
    (total,) = _channel_reduce(lw, [x], [], axis, 1,
                               lambda b, a: [_accumulate(b, a[1], a[0])])
    mean = _per_channel(lw, [total], c_type,
                        lambda b, a: _to_f32(b, _bin(b, arith.DivfOp, a[0], _f64(b, n))))

    def sq(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        # torch: `_var_sum += (x - mean) * (x - mean)`, the square in f32 (then summed as
        # every channel sum is: f32 partials, f64 across them).
        dev = _bin(b, arith.SubfOp, a[0], a[1])
        return [_accumulate(b, a[2], _bin(b, arith.MulfOp, dev, dev))]
    (ss,) = _channel_reduce(lw, [x], [mean], axis, 1, sq)
    return mean, ss


def _rstd_of(b: Builder, var: SSAValue, eps: float) -> SSAValue:
    """1 / sqrt(var + eps), in var's type (f32 or f64)."""
    const = _f64 if var.type == f64 else _c
    root = b.insert(math.SqrtOp(_bin(b, arith.AddfOp, var, const(b, eps)))).result
    return _bin(b, arith.DivfOp, const(b, 1.0), root)


def _batch_mean_rstd(lw: Any, x: SSAValue, axis: int, eps: float
                     ) -> tuple[SSAValue, SSAValue]:
    """Per channel: the batch mean and rstd = 1 / sqrt(biased var + eps), f32 [C] (rstd
    computed in f64 from the f64 sum of squares, rounded once)."""
    mean, ss = _batch_stats(lw, x, axis)
    n = float(_count(x, axis))
    rstd = lw.reuse(("batch_rstd", ss, eps), lambda: _per_channel(
        lw, [ss], mean.type,
        lambda b, a: _to_f32(b, _rstd_of(b, _bin(b, arith.DivfOp, a[0], _f64(b, n)), eps))))
    return mean, rstd


def _given_mean_rstd(lw: Any, mean: SSAValue, var: SSAValue, eps: float
                     ) -> tuple[SSAValue, SSAValue]:
    """The given statistics as f32 [C]: the mean, and rstd from the variance."""
    c_type = _frame.tensor_type(list(_frame.static_shape(mean) or ()))
    rstd = _per_channel(lw, [var], c_type, lambda b, a: _rstd_of(b, a[0], eps))
    if mean.type != c_type:
        mean = _per_channel(lw, [mean], c_type, lambda b, a: a[0])
    return mean, rstd


def _normalize(lw: Any, op: Any, mean: SSAValue, rstd: SSAValue) -> SSAValue:
    """(x - mean) * rstd * gamma + beta, elementwise over x."""
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    rank, axis = typ.get_num_dims(), op.axis_value()
    ch = dims_map(rank, [axis])

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        y = _bin(b, arith.MulfOp, _xhat(b, a[0], a[3], a[4]), a[1])
        return _bin(b, arith.AddfOp, y, a[2])
    return lw.generic([op.input, op.gamma, op.beta, mean, rstd], lw.empty(typ),
                      [identity_map(rank), ch, ch, ch, ch, identity_map(rank)],
                      [PAR] * rank, body)


def _lower_batch_norm(lw: Any, op: Any) -> SSAValue:
    mean, rstd = _batch_mean_rstd(lw, op.input, op.axis_value(), op.eps.value.data)
    return _normalize(lw, op, mean, rstd)


def _lower_batch_norm_inference(lw: Any, op: Any) -> SSAValue:
    mean, rstd = _given_mean_rstd(lw, op.mean, op.var, op.eps.value.data)
    return _normalize(lw, op, mean, rstd)


def _lower_batch_norm_stats(lw: Any, op: Any) -> SSAValue:
    """torch: momentum * stat + (1 - momentum) * running, stat the batch mean or the
    unbiased variance (the sum of squared deviations / (n - 1))."""
    x, axis = op.input, op.axis_value()
    m = op.momentum.value.data
    mean, ss = _batch_stats(lw, x, axis)
    is_mean = op.which.data == "mean"
    stat, scale = (mean, 1.0) if is_mean else (ss, float(_count(x, axis) - 1))

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        # The variance: the f64 sum of squares / (n - 1), rounded to f32 once.
        s = a[0] if is_mean else _to_f32(b, _bin(b, arith.DivfOp, a[0], _f64(b, scale)))
        new = _bin(b, arith.MulfOp, _c(b, m), s)
        old = _bin(b, arith.MulfOp, _c(b, 1.0 - m), a[1])
        return _bin(b, arith.AddfOp, new, old)
    # Destination = the running statistic (as sgd_update's is the parameter): a training
    # step that donates it (`frame.aliasing_output`) updates it in place; otherwise
    # frame-bufferize copies it first (value semantics).
    return lw.generic([stat], op.running, [identity_map(1)] * 2, [PAR], body)


def _bn_backward(lw: Any, op: Any, mean: SSAValue, rstd: SSAValue,
                 training: bool) -> SSAValue:
    """torch's batch_norm backward (CPU). With dotp = sum((x - mean) * dy) per channel:
    dgamma = dotp * rstd; in training dx = (dy - sum(dy) / n - (x - mean) * dotp *
    rstd^2 / n) * rstd * gamma, in inference dx = dy * rstd * gamma."""
    x, gamma, dy, axis = op.input, op.gamma, op.dy, op.axis_value()
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    rank = len(_frame.static_shape(x) or ())
    ch = dims_map(rank, [axis])
    n = float(_count(x, axis))
    wrt = op.wrt.value.data
    if wrt == 0 and not training:
        return lw.generic([dy, gamma, rstd], lw.empty(typ),
                          [identity_map(rank), ch, ch, identity_map(rank)], [PAR] * rank,
                          lambda b, a: _bin(b, arith.MulfOp, _bin(b, arith.MulfOp, a[0], a[2]),
                                            a[1]))

    def sums(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        dev = _bin(b, arith.SubfOp, a[0], a[2])
        dotp = _accumulate(b, a[3], _bin(b, arith.MulfOp, dev, a[1]))
        return [dotp, _accumulate(b, a[4], a[1])]
    # One pass for both gradients (dx's lowering and dgamma's share it, `Lowerer.reuse`).
    acc = lw.reuse(("bn_sums", x, dy, mean, axis),
                   lambda: _channel_reduce(lw, [x, dy], [mean], axis, 2, sums))
    # The sums are f64 (`_channel_reduce`), rounded to f32 once per channel; the rest is
    # f32 arithmetic, as torch's (`(scalar_t) dotp * invstd * invstd / N`).
    if wrt == 1:
        return _per_channel(lw, [acc[0], rstd], typ,
                            lambda b, a: _bin(b, arith.MulfOp, _to_f32(b, a[0]), a[1]))
    c_type = rstd.type
    assert isinstance(c_type, TensorType)
    # Per channel: k = dotp * rstd^2 / n (the weight of x - mean) and sum(dy) / n.
    k, mean_dy = lw.generic_multi(
        [acc[0], acc[1], rstd], [lw.empty(c_type), lw.empty(c_type)],
        [identity_map(1)] * 5, [PAR],
        lambda b, a: [_bin(b, arith.DivfOp, _bin(b, arith.MulfOp, _bin(
            b, arith.MulfOp, _to_f32(b, a[0]), a[2]), a[2]), _c(b, n)),
            _bin(b, arith.DivfOp, _to_f32(b, a[1]), _c(b, n))])

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        xv, dyv, g, mv, rs, kv, md = a[:7]
        proj = _bin(b, arith.MulfOp, _bin(b, arith.SubfOp, xv, mv), kv)
        centered = _bin(b, arith.SubfOp, _bin(b, arith.SubfOp, dyv, md), proj)
        return _bin(b, arith.MulfOp, _bin(b, arith.MulfOp, centered, rs), g)
    return lw.generic([x, dy, gamma, mean, rstd, k, mean_dy], lw.empty(typ),
                      [identity_map(rank), identity_map(rank), ch, ch, ch, ch, ch,
                       identity_map(rank)], [PAR] * rank, body)


def _lower_batch_norm_grad(lw: Any, op: Any) -> SSAValue:
    mean, rstd = _batch_mean_rstd(lw, op.input, op.axis_value(), op.eps.value.data)
    return _bn_backward(lw, op, mean, rstd, training=True)


def _lower_batch_norm_inference_grad(lw: Any, op: Any) -> SSAValue:
    mean, rstd = _given_mean_rstd(lw, op.mean, op.var, op.eps.value.data)
    return _bn_backward(lw, op, mean, rstd, training=False)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    LayerNormOp: _lower_layer_norm, LayerNormGradOp: _lower_layer_norm_grad,
    BatchNormOp: _lower_batch_norm, BatchNormGradOp: _lower_batch_norm_grad,
    BatchNormStatsOp: _lower_batch_norm_stats,
    BatchNormInferenceOp: _lower_batch_norm_inference,
    BatchNormInferenceGradOp: _lower_batch_norm_inference_grad}

