"""Every frame op, forward and VJP, against PyTorch autograd; plus finite differences.

For an op case `c` with operands `args` the compiled module holds two functions:

* `@c_fwd(args...)` returns the op's result itself, compared elementwise with torch;
* `@c(args..., r)` returns `sum(op(args) * r)` for a random cotangent `r` (a data
  input), with the case's differentiable operands marked as parameters, so
  `@c_grad` returns the loss and the vector-Jacobian products `r^T J`; torch gets the
  same from `(op(args) * r).sum().backward()`.

The torch side runs in float64 on the very float32 values our code received, so it
is an (almost) exact oracle and the tolerance measures our float32 rounding only.
All cases of one op live in one module, compiled once (compiles dominate runtime).

`test_mlp_gradient_vs_finite_differences` and `test_vjp_vs_finite_differences` (every
smooth op's cases) check our gradients against central differences of our own
compiled forward, an oracle independent of torch and of the VJP table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.runtime.executable import Executable, compile_module

Shape = tuple[int, ...]
#: Emits the op under test on the case's inputs and returns its result.
Builder = Callable[[Graph, Sequence[SSAValue]], SSAValue]
#: The torch reimplementation: (torch module, *input tensors) -> result tensor.
TorchRef = Callable[..., Any]


@dataclass(frozen=True)
class OpCase:
    """One op applied to inputs of fixed shapes.

    `params[i]` says whether input i is a parameter (gets a gradient) in `@<name>`;
    a case without parameters is checked forward only.
    """

    group: str
    name: str
    shapes: tuple[Shape, ...]
    build: Builder
    ref: TorchRef
    params: tuple[bool, ...]
    #: Inputs drawn away from 0, where relu's derivative is undefined.
    away_from_zero: bool = False

    @property
    def id(self) -> str:
        return self.name

    @property
    def has_vjp(self) -> bool:
        return any(self.params)


def _sym(*parts: object) -> str:
    """A symbol-safe case name: `add_3x4`, `matmul_tlnr_1x6x2`."""
    out = []
    for p in parts:
        if isinstance(p, tuple):
            out.append("x".join(str(d) for d in p) if p else "scalar")
        else:
            out.append(str(p))
    return "_".join(out)


# --------------------------------------------------------------------------- cases

# Non-square shapes and size-1 dims. Every compiled kernel costs compile time (~0.05 s),
# so each op gets a few shapes that between them hit the edge cases, not a sweep.
ELEMENTWISE_SHAPES: tuple[Shape, ...] = ((3, 4), (1, 5), (7, 1))
#: Elementwise ops are rank-generic and share one lowering: rank 3 once, for add.
RANK3: Shape = (2, 3, 2)
MATRIX_SHAPES: tuple[Shape, ...] = ((3, 5), (1, 4), (6, 1))
# (m, k, n) of op(A)[m, k] @ op(B)[k, n]: general, m = 1, k = n = 1.
MATMUL_MKN: tuple[tuple[int, int, int], ...] = ((3, 4, 5), (1, 6, 2), (4, 1, 1))


def _binary_cases() -> list[OpCase]:
    ops: list[tuple[str, type[frame.ElementwiseBinaryOp], TorchRef]] = [
        ("add", frame.AddOp, lambda t, a, b: a + b),
        ("sub", frame.SubOp, lambda t, a, b: a - b),
        ("mul", frame.MulOp, lambda t, a, b: a * b),
    ]
    cases = [OpCase("add", _sym("add", RANK3), (RANK3, RANK3),
                    lambda g, v: g.emit(frame.AddOp(v[0], v[1])), ops[0][2], (True, True))]
    for group, cls, ref in ops:
        for shape in ELEMENTWISE_SHAPES:
            cases.append(OpCase(group, _sym(group, shape), (shape, shape),
                                lambda g, v, cls=cls: g.emit(cls(v[0], v[1])), ref, (True, True)))
        # One operand used twice: autodiff must sum both adjoint contributions.
        cases.append(OpCase(group, _sym(group, "self", (4, 3)), ((4, 3),),
                            lambda g, v, cls=cls: g.emit(cls(v[0], v[0])),
                            lambda t, a, ref=ref: ref(t, a, a), (True,)))
    # One operand is data and gets no adjoint; for sub the rhs alone exercises the
    # negated path, for mul the lhs alone the product with the other operand.
    for group, cls, ref, params in (("sub", frame.SubOp, ops[1][2], (False, True)),
                                    ("mul", frame.MulOp, ops[2][2], (True, False))):
        cases.append(OpCase(group, _sym(group, "one_param", (2, 5)), ((2, 5), (2, 5)),
                            lambda g, v, cls=cls: g.emit(cls(v[0], v[1])), ref, params))
    return cases


def _unary_cases() -> list[OpCase]:
    cases = []
    for shape in ((3, 4), (1, 1), (6, 1)):
        cases.append(OpCase("neg", _sym("neg", shape), (shape,),
                            lambda g, v: g.emit(frame.NegOp(v[0])), lambda t, a: -a, (True,)))
    for i, (shape, factor) in enumerate(zip(((3, 4), (1, 7), (5, 1)), (2.5, -0.75, 1e-3),
                                            strict=True)):
        cases.append(OpCase("scale", _sym("scale", i, shape), (shape,),
                            lambda g, v, f=factor: g.emit(frame.ScaleOp(v[0], f)),
                            lambda t, a, f=factor: a * f, (True,)))
    for shape in ((3, 4), (1, 5), (6, 1)):
        cases.append(OpCase("relu", _sym("relu", shape), (shape,),
                            lambda g, v: g.emit(frame.ReluOp(v[0])),
                            lambda t, a: t.relu(a), (True,), away_from_zero=True))
    for shape in MATRIX_SHAPES:
        cases.append(OpCase("transpose", _sym("transpose", shape), (shape,),
                            lambda g, v: g.emit(frame.TransposeOp(v[0])),
                            lambda t, a: a.T, (True,)))
    for shape in ((3, 4), (1, 1), (7, 1), (1, 9)):
        cases.append(OpCase("sum", _sym("sum", shape), (shape,),
                            lambda g, v: g.emit(frame.SumOp(v[0])),
                            lambda t, a: a.sum(), (True,)))
    for shape in ((3, 4), (1, 1), (2, 7)):
        cases.append(OpCase("broadcast", _sym("broadcast", shape), ((),),
                            lambda g, v, s=shape: g.emit(
                                frame.BroadcastOp(v[0], frame.tensor_type(s))),
                            lambda t, a, s=shape: a.expand(s), (True,)))
    # Sum over chosen axes (dims dropped) and its adjoint, broadcast along axes.
    for shape, axes in (((2, 3, 4), (1,)), ((3, 5), (0,)), ((2, 3, 4), (0, 2))):
        cases.append(OpCase("sum", _sym("sum_axes", "_".join(map(str, axes)), shape),
                            (shape,), lambda g, v, a=axes: g.emit(frame.SumOp(v[0], list(a))),
                            lambda t, x, a=axes: x.sum(dim=a), (True,)))
    for shape, axes in (((3, 4), (1,)), ((2, 3, 4), (0, 2)), ((1, 5), (0,))):
        src = tuple(d for i, d in enumerate(shape) if i not in axes)
        cases.append(OpCase("broadcast", _sym("broadcast_axes", "_".join(map(str, axes)),
                                              shape), (src,),
                            lambda g, v, s=shape, a=axes: g.emit(
                                frame.BroadcastOp(v[0], frame.tensor_type(s), list(a))),
                            lambda t, x, s=shape, a=axes: _unsqueeze(x, a).expand(s),
                            (True,)))
    for shape in ((3, 4), (1, 5), (2, 3, 2)):
        cases.append(OpCase("sigmoid", _sym("sigmoid", shape), (shape,),
                            lambda g, v: g.emit(frame.SigmoidOp(v[0])),
                            lambda t, a: t.sigmoid(a), (True,)))
    for src, dst in (((2, 3, 4), (4, 6)), ((6, 1), (2, 3)), ((2, 6), (12,))):
        cases.append(OpCase("reshape", _sym("reshape", src, "to", dst), (src,),
                            lambda g, v, d=dst: g.emit(
                                frame.ReshapeOp(v[0], frame.tensor_type(d))),
                            lambda t, a, d=dst: a.reshape(d), (True,)))
    return cases


def _unsqueeze(x: Any, axes: Sequence[int]) -> Any:
    for a in sorted(axes):
        x = x.unsqueeze(a)
    return x


def _heaviside_ref(alpha: float) -> TorchRef:
    """Forward: x >= 0 (so -0.0 fires); backward: the sigmoid surrogate (the sheet's
    definition), written here from scratch as a torch.autograd.Function."""
    def ref(t: Any, x: Any) -> Any:
        class Spike(t.autograd.Function):
            @staticmethod
            def forward(ctx: Any, v: Any) -> Any:
                ctx.save_for_backward(v)
                return (v >= 0).to(v.dtype)

            @staticmethod
            def backward(ctx: Any, gy: Any) -> Any:
                (v,) = ctx.saved_tensors
                sig = t.sigmoid(alpha * v)
                return gy * alpha * sig * (1 - sig)

        return Spike.apply(x)
    return ref


def _step_ref(threshold: float) -> TorchRef:
    """frame.step: (x > threshold) as x's dtype forward, a zero gradient backward
    (dlprimitives' Threshold: "x > threshold ? 1 : 0, gradient 0")."""
    def ref(t: Any, x: Any) -> Any:
        class Step(t.autograd.Function):
            @staticmethod
            def forward(ctx: Any, v: Any) -> Any:
                return (v > threshold).to(v.dtype)

            @staticmethod
            def backward(ctx: Any, gy: Any) -> Any:
                return t.zeros_like(gy)

        return Step.apply(x)
    return ref


def _matmul_cases() -> list[OpCase]:
    cases = []
    for tl in (False, True):
        for tr in (False, True):
            flags = ("tl" if tl else "nl") + ("tr" if tr else "nr")
            for m, k, n in MATMUL_MKN:
                a_shape = (k, m) if tl else (m, k)
                b_shape = (n, k) if tr else (k, n)

                def build(g: Graph, v: Sequence[SSAValue], tl: bool = tl,
                          tr: bool = tr) -> SSAValue:
                    return g.emit(frame.MatmulOp(v[0], v[1], transpose_lhs=tl, transpose_rhs=tr))

                def ref(t: Any, a: Any, b: Any, tl: bool = tl, tr: bool = tr) -> Any:
                    return (a.T if tl else a) @ (b.T if tr else b)

                cases.append(OpCase("matmul", _sym("matmul", flags, (m, k, n)),
                                    (a_shape, b_shape), build, ref, (True, True)))
    # Batched: equal leading dims, the flags transpose the last two.
    for batch in ((2,), (2, 3)):
        for tl, tr in ((False, False), (True, False), (False, True), (True, True)):
            m, k, n = 3, 4, 5
            a_shape = (*batch, k, m) if tl else (*batch, m, k)
            b_shape = (*batch, n, k) if tr else (*batch, k, n)

            def bbuild(g: Graph, v: Sequence[SSAValue], tl: bool = tl,
                       tr: bool = tr) -> SSAValue:
                return g.emit(frame.MatmulOp(v[0], v[1], transpose_lhs=tl, transpose_rhs=tr))

            def bref(t: Any, a: Any, b: Any, tl: bool = tl, tr: bool = tr) -> Any:
                return (a.transpose(-1, -2) if tl else a) @ (b.transpose(-1, -2) if tr else b)

            flags = ("tl" if tl else "nl") + ("tr" if tr else "nr")
            cases.append(OpCase("matmul", _sym("bmm", flags, batch), (a_shape, b_shape),
                                bbuild, bref, (True, True)))
    # A^T A with one operand: both adjoint contributions land on the same value.
    cases.append(OpCase("matmul", "matmul_gram_4x3", ((4, 3),),
                        lambda g, v: g.emit(frame.MatmulOp(v[0], v[0], transpose_lhs=True)),
                        lambda t, a: a.T @ a, (True,)))
    # (Data lhs with a parameter rhs, x @ W, is every spec's first layer: the
    # topology tests cover it.)
    return cases


def _mse_cases() -> list[OpCase]:
    def mse(t: Any, p: Any, y: Any) -> Any:
        return t.nn.functional.mse_loss(p, y, reduction="mean")

    cases = [OpCase("mse_loss", _sym("mse_loss", s), (s, s),
                    lambda g, v: g.emit(frame.MseLossOp(v[0], v[1])), mse, (True, True))
             for s in ((8, 1), (3, 4), (1, 1))]
    # The usual training setup: the target is data.
    cases.append(OpCase("mse_loss", "mse_loss_data_target_5x2", ((5, 2), (5, 2)),
                        lambda g, v: g.emit(frame.MseLossOp(v[0], v[1])), mse, (True, False)))
    return cases


def _update_cases() -> list[OpCase]:
    """frame.update: its result is its value, computed in the destination's buffer (an
    argument not donated here: bufferization copies it first; in place with
    `frame.aliasing_output` in tests/passes/test_frame_update.py). Its VJP is torch's
    copy_'s: dy for the value, zero for the destination."""
    return [OpCase("update", _sym("update", s), (s, s),
                   lambda g, v: g.emit(frame.UpdateOp(v[0], v[1])),
                   lambda t, d, val: d.clone().copy_(val), params)
            for s, params in (((3, 4), (True, True)), ((1, 5), (False, True)),
                              ((6, 1), (True, False)))]


def _forward_only_cases() -> list[OpCase]:
    """Ops autodiff emits but never differentiates: their forward against torch."""

    def relu_grad(t: Any, x: Any, dy: Any) -> Any:
        xx = x.detach().requires_grad_()
        return t.autograd.grad(t.relu(xx), xx, dy)[0]

    def mse_grad(t: Any, p: Any, y: Any, dl: Any) -> Any:
        pp = p.detach().requires_grad_()
        return t.autograd.grad(t.nn.functional.mse_loss(pp, y), pp, dl)[0]

    cases = []
    for s in ((3, 4), (1, 5), (6, 1)):
        cases.append(OpCase("relu_grad", _sym("relu_grad", s), (s, s),
                            lambda g, v: g.emit(frame.ReluGradOp(v[0], v[1])), relu_grad,
                            (False, False), away_from_zero=True))
        cases.append(OpCase("mse_loss_grad", _sym("mse_loss_grad", s), (s, s, ()),
                            lambda g, v: g.emit(frame.MseLossGradOp(v[0], v[1], v[2])),
                            mse_grad, (False, False, False)))
        cases.append(OpCase("sgd_update", _sym("sgd_update", s), (s, s),
                            lambda g, v: g.emit(frame.SgdUpdateOp(v[0], v[1], 0.05)),
                            lambda t, p, gr: p - t.tensor(np.float32(0.05), dtype=p.dtype) * gr,
                            (False, False)))
    for s, alpha in (((3, 4), 2.0), ((1, 5), 0.5), ((6, 1), 10.0)):
        cases.append(OpCase("heaviside_surrogate", _sym("heaviside", s), (s,),
                            lambda g, v, a=alpha: g.emit(frame.HeavisideSurrogateOp(v[0], a)),
                            _heaviside_ref(alpha), (True,), away_from_zero=True))
        cases.append(OpCase("heaviside_surrogate_grad", _sym("heaviside_grad", s), (s, s),
                            lambda g, v, a=alpha: g.emit(
                                frame.HeavisideSurrogateGradOp(v[0], v[1], a)),
                            lambda t, x, gy, a=alpha: gy * a * t.sigmoid(a * x)
                            * (1 - t.sigmoid(a * x)), (False, False)))
    for xs, ws, st, pad, groups in CONV_CASES:
        ys = frame.conv_output_shape(xs, ws, st, pad, groups)
        cases.append(OpCase("conv_grad_input", _sym("conv_grad_input", xs, ws), (ys, ws),
                            lambda g, v, xs=xs, st=st, pad=pad, gr=groups: g.emit(
                                frame.ConvGradInputOp(v[0], v[1], frame.tensor_type(xs), st,
                                                      pad, gr)),
                            lambda t, dy, w, xs=xs, st=st, pad=pad, gr=groups:
                            _conv_input_grad(t, dy, w, xs, st, pad, gr),
                            (False, False)))
        cases.append(OpCase("conv_grad_weight", _sym("conv_grad_weight", xs, ws), (xs, ys),
                            lambda g, v, ws=ws, st=st, pad=pad, gr=groups: g.emit(
                                frame.ConvGradWeightOp(v[0], v[1], frame.tensor_type(ws), st,
                                                       pad, gr)),
                            lambda t, x, dy, ws=ws, st=st, pad=pad, gr=groups:
                            _conv_weight_grad(t, x, dy, ws, st, pad, gr), (False, False)))
    for s, value in (((3, 4), 1.5), ((1, 1), -0.25), ((2, 5), 0.0)):
        cases.append(OpCase("constant", _sym("constant", s), (s,),
                            lambda g, v, s=s, c=value: g.emit(
                                frame.AddOp(v[0], g.emit(frame.ConstantOp(c, s)))),
                            lambda t, a, c=value: a + c, (False,)))
    return cases


#: (input shape, weight shape, stride, padding, groups): 2-d with padding and groups,
#: 1-d, and 2-d with unequal strides.
CONV_CASES: tuple[tuple[Shape, Shape, tuple[int, ...], tuple[int, ...], int], ...] = (
    ((2, 2, 5, 5), (4, 1, 3, 3), (2, 1), (1, 1), 2),
    ((1, 3, 7), (2, 3, 3), (1,), (0,), 1),
    ((1, 4, 6, 5), (4, 2, 2, 3), (1, 2), (0, 1), 2),
)


def _torch_conv(t: Any, x: Any, w: Any, st: Sequence[int], pad: Sequence[int],
                groups: int) -> Any:
    conv = t.nn.functional.conv2d if x.dim() == 4 else t.nn.functional.conv1d
    return conv(x, w, stride=tuple(st), padding=tuple(pad), groups=groups)


def _conv_input_grad(t: Any, dy: Any, w: Any, xs: Shape, st: Sequence[int],
                     pad: Sequence[int], groups: int) -> Any:
    x = t.zeros(xs, dtype=w.dtype, requires_grad=True)
    return t.autograd.grad(_torch_conv(t, x, w, st, pad, groups), x, dy)[0]


def _conv_weight_grad(t: Any, x: Any, dy: Any, ws: Shape, st: Sequence[int],
                      pad: Sequence[int], groups: int) -> Any:
    w = t.zeros(ws, dtype=x.dtype, requires_grad=True)
    return t.autograd.grad(_torch_conv(t, x, w, st, pad, groups), w, dy)[0]


#: (input shape, kernel, stride, padding) of the pooling cases.
POOL_CASES: tuple[tuple[Shape, tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = (
    ((2, 3, 6, 5), (2, 2), (2, 2), (0, 0)),
    ((1, 2, 5, 5), (3, 3), (2, 1), (1, 1)),
    ((1, 1, 7, 4), (3, 2), (1, 2), (1, 1)),
)


def _torch_pool(t: Any, kind: str, x: Any, k: Sequence[int], st: Sequence[int],
                pad: Sequence[int]) -> Any:
    if kind == "max":
        return t.nn.functional.max_pool2d(x, tuple(k), tuple(st), tuple(pad))
    return t.nn.functional.avg_pool2d(x, tuple(k), tuple(st), tuple(pad), count_include_pad=True)


def _pool_input_grad(t: Any, kind: str, x: Any, dy: Any, k: Sequence[int], st: Sequence[int],
                     pad: Sequence[int]) -> Any:
    xx = x.detach().requires_grad_()
    return t.autograd.grad(_torch_pool(t, kind, xx, k, st, pad), xx, dy)[0]


def _scan_ref(t: Any, x: Any, a: Any, b: Any, c: Any, d: Any) -> Any:
    """selective_scan from its definition: h = a h + b x, y = c h + d x along the last
    axis, h starting at 0 (autograd differentiates this loop)."""
    h = t.zeros(x.shape[:-1], dtype=x.dtype)
    ys = []
    for i in range(x.shape[-1]):
        h = a[..., i] * h + b[..., i] * x[..., i]
        ys.append(c[..., i] * h + d[..., i] * x[..., i])
    return t.stack(ys, -1)


def _scan_cases() -> list[OpCase]:
    cases = []
    for shape in ((2, 5), (7,), (2, 3, 4)):
        cases.append(OpCase("selective_scan", _sym("selective_scan", shape), (shape,) * 5,
                            lambda g, v: g.emit(frame.SelectiveScanOp(*v)), _scan_ref,
                            (True,) * 5))
        for k in (0, 1, 3) if len(shape) > 1 else (2, 4):
            cases.append(OpCase("selective_scan_grad", _sym("selective_scan_grad", k, shape),
                                (shape,) * 6,
                                lambda g, v, k=k: g.emit(frame.SelectiveScanGradOp(v[:5], v[5],
                                                                                   k)),
                                lambda t, *v, k=k: _scan_grad_ref(t, v, k), (False,) * 6))
    return cases


def _scan_grad_ref(t: Any, v: Sequence[Any], k: int) -> Any:
    ins = [x.detach().requires_grad_() for x in v[:5]]
    return t.autograd.grad(_scan_ref(t, *ins), ins[k], v[5])[0]


def _pool_cases() -> list[OpCase]:
    cases = []
    for xs, k, st, pad in POOL_CASES:
        ys = frame.pool_output_shape(xs, k, st, pad, "pool")
        for kind, cls in (("max", frame.MaxPoolOp), ("avg", frame.AvgPoolOp)):
            cases.append(OpCase(f"{kind}_pool", _sym(f"{kind}_pool", xs, k), (xs,),
                                lambda g, v, c=cls, k=k, st=st, pad=pad: g.emit(
                                    c(v[0], k, st, pad)),
                                lambda t, x, kd=kind, k=k, st=st, pad=pad: _torch_pool(
                                    t, kd, x, k, st, pad), (True,)))
        cases.append(OpCase("avg_pool_grad", _sym("avg_pool_grad", xs, k), (ys,),
                            lambda g, v, xs=xs, k=k, st=st, pad=pad: g.emit(
                                frame.AvgPoolGradOp(v[0], frame.tensor_type(xs), k, st, pad)),
                            lambda t, dy, xs=xs, k=k, st=st, pad=pad: _pool_input_grad(
                                t, "avg", t.zeros(xs, dtype=dy.dtype), dy, k, st, pad),
                            (False,)))
        cases.append(OpCase("max_pool_grad", _sym("max_pool_grad", xs, k), (xs, ys),
                            lambda g, v, k=k, st=st, pad=pad: g.emit(frame.MaxPoolGradOp(
                                v[0], g.emit(frame.MaxPoolOp(v[0], k, st, pad)), v[1], k, st,
                                pad)),
                            lambda t, x, dy, k=k, st=st, pad=pad: _pool_input_grad(
                                t, "max", x, dy, k, st, pad), (False, False)))
    return cases


def _conv_cases() -> list[OpCase]:
    return [OpCase("conv", _sym("conv", xs, ws), (xs, ws),
                   lambda g, v, st=st, pad=pad, gr=groups: g.emit(
                       frame.ConvOp(v[0], v[1], st, pad, gr)),
                   lambda t, x, w, st=st, pad=pad, gr=groups: _torch_conv(t, x, w, st, pad, gr),
                   (True, True)) for xs, ws, st, pad, groups in CONV_CASES]


def _positive(g: Graph, v: SSAValue) -> SSAValue:
    """|v| + 0.5: a log's or a divisor's operand away from 0 (and abs and shift tested
    on the way)."""
    return g.emit(frame.ShiftOp(g.emit(frame.AbsOp(v)), 0.5))


def _math_cases() -> list[OpCase]:
    """The elementwise math family (`frame_math`): forward and VJP against torch; the
    inputs stay away from 0, where abs and the clamps have kinks."""
    unary: list[tuple[str, Builder, TorchRef]] = [
        ("exp", lambda g, v: g.emit(frame.ExpOp(v[0])), lambda t, a: t.exp(a)),
        ("tanh", lambda g, v: g.emit(frame.TanhOp(v[0])), lambda t, a: t.tanh(a)),
        ("abs", lambda g, v: g.emit(frame.AbsOp(v[0])), lambda t, a: t.abs(a)),
        ("log", lambda g, v: g.emit(frame.LogOp(_positive(g, v[0]))),
         lambda t, a: t.log(t.abs(a) + 0.5)),
        ("sqrt", lambda g, v: g.emit(frame.SqrtOp(_positive(g, v[0]))),
         lambda t, a: t.sqrt(t.abs(a) + 0.5)),
        ("shift", lambda g, v: g.emit(frame.ShiftOp(v[0], -0.75)), lambda t, a: a - 0.75),
        ("gelu", lambda g, v: g.emit(frame.GeluOp(g.emit(frame.ScaleOp(v[0], 4.0)))),
         lambda t, a: t.nn.functional.gelu(4 * a)),
        ("gelu_tanh", lambda g, v: g.emit(frame.GeluOp(g.emit(frame.ScaleOp(v[0], 4.0)),
                                                        "tanh")),
         lambda t, a: t.nn.functional.gelu(4 * a, approximate="tanh")),
        ("hardtanh", lambda g, v: g.emit(frame.HardtanhOp(v[0], -0.5, 0.25)),
         lambda t, a: t.nn.functional.hardtanh(a, -0.5, 0.25)),
        ("relu6", lambda g, v: g.emit(frame.HardtanhOp(g.emit(frame.ScaleOp(v[0], 8.0)),
                                                        0.0, 6.0)),
         lambda t, a: t.nn.functional.relu6(8 * a)),
        ("threshold", lambda g, v: g.emit(frame.ThresholdOp(v[0], 0.1, -2.0)),
         lambda t, a: t.nn.functional.threshold(a, 0.1, -2.0)),
    ]
    cases = []
    for name, build, ref in unary:
        for shape in ((3, 4), (1, 5), (2, 3, 2)):
            cases.append(OpCase(name, _sym(name, shape), (shape,), build, ref, (True,),
                                away_from_zero=True))
    # step: x > threshold as 0 / 1 (a threshold at 0 too; the inputs keep |x| >= 0.1
    # away from it), its gradient 0 -- torch's comparison has none at all, so the
    # reference says "zero" explicitly.
    for shape, limit in (((3, 4), 0.0), ((1, 5), 0.25), ((2, 3, 2), -0.5)):
        cases.append(OpCase("step", _sym("step", shape), (shape,),
                            lambda g, v, lim=limit: g.emit(frame.StepOp(v[0], lim)),
                            _step_ref(limit), (True,), away_from_zero=True))
    for shape in ((3, 4), (6, 1)):
        cases.append(OpCase("div", _sym("div", shape), (shape, shape),
                            lambda g, v: g.emit(frame.DivOp(v[0], _positive(g, v[1]))),
                            lambda t, a, b: a / (t.abs(b) + 0.5), (True, True),
                            away_from_zero=True))
    # The gradient ops autodiff emits, forward only, against torch's autograd.
    def grad_of(fn: Callable[[Any, Any], Any]) -> TorchRef:
        def ref(t: Any, x: Any, dy: Any) -> Any:
            xx = x.detach().requires_grad_()
            return t.autograd.grad(fn(t, xx), xx, dy)[0]
        return ref
    grads: list[tuple[str, Builder, TorchRef]] = [
        ("abs_grad", lambda g, v: g.emit(frame.AbsGradOp(v[0], v[1])),
         grad_of(lambda t, x: t.abs(x))),
        ("gelu_grad", lambda g, v: g.emit(frame.GeluGradOp(g.emit(frame.ScaleOp(v[0], 4.0)),
                                                           v[1], "none")),
         lambda t, x, dy: grad_of(lambda t, z: t.nn.functional.gelu(z))(t, 4 * x, dy)),
        ("gelu_grad", lambda g, v: g.emit(frame.GeluGradOp(g.emit(frame.ScaleOp(v[0], 4.0)),
                                                           v[1], "tanh")),
         lambda t, x, dy: grad_of(lambda t, z: t.nn.functional.gelu(z, approximate="tanh"))(
             t, 4 * x, dy)),
        ("hardtanh_grad", lambda g, v: g.emit(frame.HardtanhGradOp(v[0], v[1], -0.5, 0.25)),
         grad_of(lambda t, x: t.nn.functional.hardtanh(x, -0.5, 0.25))),
        ("threshold_grad", lambda g, v: g.emit(frame.ThresholdGradOp(v[0], v[1], 0.1)),
         grad_of(lambda t, x: t.nn.functional.threshold(x, 0.1, -2.0))),
    ]
    for i, (name, build, ref) in enumerate(grads):
        for shape in ((3, 4), (1, 5), (6, 1)):
            cases.append(OpCase(name, _sym(name, i, shape), (shape, shape), build, ref,
                                (False, False), away_from_zero=True))
    cases.append(OpCase("div", "div_self_3x2", ((3, 2),),
                        lambda g, v: g.emit(frame.DivOp(v[0], _positive(g, v[0]))),
                        lambda t, a: a / (t.abs(a) + 0.5), (True,), away_from_zero=True))
    return cases


def _softmax_cases() -> list[OpCase]:
    """softmax and log_softmax along every axis (inputs scaled by 4 so that rows are far
    from uniform), and their gradient ops forward-only against torch's autograd."""
    cases = []
    for shape, axis in (((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((4, 1), 0), ((1, 6), 1)):
        for name, cls, fn in (("softmax", frame.SoftmaxOp, "softmax"),
                              ("log_softmax", frame.LogSoftmaxOp, "log_softmax")):
            cases.append(OpCase(
                name, _sym(name, axis, shape), (shape,),
                lambda g, v, c=cls, ax=axis: g.emit(c(g.emit(frame.ScaleOp(v[0], 4.0)), ax)),
                lambda t, a, f=fn, ax=axis: getattr(t, f)(4 * a, dim=ax), (True,)))
            grad_cls = frame.SoftmaxGradOp if name == "softmax" else frame.LogSoftmaxGradOp

            def ref(t: Any, x: Any, dy: Any, f: str = fn, ax: int = axis) -> Any:
                xx = (4 * x).detach().requires_grad_()
                return t.autograd.grad(getattr(t, f)(xx, dim=ax), xx, dy)[0]
            cases.append(OpCase(
                f"{name}_grad", _sym(f"{name}_grad", axis, shape), (shape, shape),
                lambda g, v, c=cls, gc=grad_cls, ax=axis: g.emit(gc(
                    g.emit(c(g.emit(frame.ScaleOp(v[0], 4.0)), ax)), v[1], ax)),
                ref, (False, False)))
    return cases


def _movement_cases() -> list[OpCase]:
    """Data movement: transpose by any permutation, slice, concat (also of one value
    twice: adjoints accumulate) and pad, against torch's own ops."""
    cases = []
    for shape, perm in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 0, 1)), ((2, 1, 3, 2), (3, 1, 0, 2)),
                        ((2, 3, 4), None)):
        cases.append(OpCase(
            "transpose", _sym("transpose", perm, shape), (shape,),
            lambda g, v, p=perm: g.emit(frame.TransposeOp(v[0], p)),
            lambda t, a, p=perm: a.permute(*(p if p is not None else range(a.dim())[::-1])),
            (True,)))
    for shape, axis, begin, end in (((4, 6), 1, 2, 5), ((4, 6), 0, 0, 1), ((2, 3, 4), 2, 1, 4),
                                    ((2, 3, 4), 1, 0, 3)):
        cases.append(OpCase(
            "slice", _sym("slice", axis, begin, end, shape), (shape,),
            lambda g, v, a=axis, b=begin, e=end: g.emit(frame.SliceOp(v[0], a, b, e)),
            lambda t, x, a=axis, b=begin, e=end: x.narrow(a, b, e - b), (True,)))
    for shapes, axis in ((((2, 3), (4, 3)), 0), (((2, 3), (2, 1), (2, 2)), 1),
                         (((2, 2, 3), (2, 1, 3)), 1)):
        cases.append(OpCase(
            "concat", _sym("concat", axis, *shapes), shapes,
            lambda g, v, a=axis: g.emit(frame.ConcatOp(v, a)),
            lambda t, *xs, a=axis: t.cat(xs, dim=a), (True,) * len(shapes)))
    cases.append(OpCase("concat", _sym("concat_twice", (3, 2)), ((3, 2),),
                        lambda g, v: g.emit(frame.ConcatOp([v[0], v[0]], 1)),
                        lambda t, x: t.cat((x, x), dim=1), (True,)))
    for shape, low, high, value in (((2, 3), (0, 1), (0, 2), 0.0), ((2, 3, 4), (1, 0, 2),
                                                                    (0, 3, 1), -1.5),
                                    ((1, 4), (2, 0), (1, 0), 0.25)):
        def pad_ref(t: Any, x: Any, lo: Any = low, hi: Any = high, val: float = value) -> Any:
            flat = [p for d in reversed(range(x.dim())) for p in (lo[d], hi[d])]
            return t.nn.functional.pad(x, flat, value=val)
        cases.append(OpCase(
            "pad", _sym("pad", low, high, shape), (shape,),
            lambda g, v, lo=low, hi=high, val=value: g.emit(frame.PadOp(v[0], lo, hi, val)),
            pad_ref, (True,)))
    return cases


def _broadcast_cases() -> list[OpCase]:
    """add, sub, mul and div with operands of different shapes that broadcast as numpy's
    do (right-aligned; size-1 and missing leading dims stretch; a 0-d operand): forward
    against torch's broadcasting, and the adjoint of a broadcast operand summed back to
    its own shape (torch's sum_to_size)."""
    ops: list[tuple[str, Callable[[Graph, SSAValue, SSAValue], SSAValue], TorchRef,
                    tuple[tuple[Shape, Shape], ...]]] = [
        ("add", lambda g, a, b: g.emit(frame.AddOp(a, b)), lambda t, a, b: a + b,
         (((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3)), ((), (2, 3)))),
        ("sub", lambda g, a, b: g.emit(frame.SubOp(a, b)), lambda t, a, b: a - b,
         (((3, 4), (3, 1)), ((4,), (2, 3, 4)), ((2, 3), ()))),
        ("mul", lambda g, a, b: g.emit(frame.MulOp(a, b)), lambda t, a, b: a * b,
         (((2, 1, 4), (3, 1)), ((3, 4), ()), ((1, 4), (3, 1)))),
        # The divisor is |b| + 0.5, away from 0.
        ("div", lambda g, a, b: g.emit(frame.DivOp(a, _positive(g, b))),
         lambda t, a, b: a / (t.abs(b) + 0.5),
         (((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((2, 3), (1, 1)))),
    ]
    cases = []
    for name, build, ref, pairs in ops:
        for sa, sb in pairs:
            cases.append(OpCase(f"bcast_{name}", _sym("bcast", name, sa, "by", sb), (sa, sb),
                                lambda g, v, f=build: f(g, v[0], v[1]), ref, (True, True),
                                away_from_zero=name == "div"))
    # Only the broadcast operand needs an adjoint (a bias), or only the other one.
    cases.append(OpCase("bcast_add", _sym("bcast_add_bias", (3, 4), "by", (4,)), ((3, 4), (4,)),
                        lambda g, v: g.emit(frame.AddOp(v[0], v[1])), lambda t, a, b: a + b,
                        (False, True)))
    cases.append(OpCase("bcast_mul", _sym("bcast_mul_data", (3, 1), "by", (3, 4)),
                        ((3, 1), (3, 4)), lambda g, v: g.emit(frame.MulOp(v[0], v[1])),
                        lambda t, a, b: a * b, (True, False)))
    return cases


def _first_max(t: Any, x: Any, axes: Sequence[int] | None, keepdims: bool) -> Any:
    """The max over `axes` through torch.max(dim): the reduced dims (in order) moved
    last and flattened, so its index -- the element autograd sends dy to -- is the first
    maximum (or first NaN) in row-major order of the group. Its values are torch.amax's."""
    axes = sorted(range(x.dim()) if axes is None else axes)
    kept = [d for d in range(x.dim()) if d not in axes]
    flat = x.permute(*kept, *axes).reshape(*[x.shape[d] for d in kept], -1)
    values = flat.max(dim=-1).values
    if keepdims:
        values = values.reshape([1 if d in axes else x.shape[d] for d in range(x.dim())])
    return values


#: (shape, axes or None for all, keepdims) of the reduction cases.
REDUCE_CASES: tuple[tuple[Shape, tuple[int, ...] | None, bool], ...] = (
    ((3, 5), (1,), False), ((2, 3, 4), (0, 2), True), ((4, 3), None, False),
    ((2, 3, 4), (1,), True), ((5, 1), (0,), False))


def _reduce_cases() -> list[OpCase]:
    """The reduction family (`frame_reduce`): mean and max over axes with keepdims, sum's
    keepdims, max's gradient op, maximum and minimum (broadcasting) and their gradient
    ops, against torch (mean, amax through torch.max(dim), maximum, minimum)."""
    cases = []
    for shape, axes, keep in REDUCE_CASES:
        tag = ("all" if axes is None else "_".join(map(str, axes))) + ("_keep" if keep else "")
        dims = None if axes is None else list(axes)
        cases.append(OpCase(
            "mean", _sym("mean", tag, shape), (shape,),
            lambda g, v, a=dims, k=keep: g.emit(frame.MeanOp(v[0], a, k)),
            lambda t, x, a=axes, k=keep: x.mean(dim=tuple(range(x.dim())) if a is None
                                                else a, keepdim=k), (True,)))
        cases.append(OpCase(
            "max", _sym("max", tag, shape), (shape,),
            lambda g, v, a=dims, k=keep: g.emit(frame.MaxOp(v[0], a, k)),
            lambda t, x, a=axes, k=keep: _first_max(t, x, a, k), (True,)))
        if keep:
            cases.append(OpCase(
                "sum_keepdims", _sym("sum_keepdims", tag, shape), (shape,),
                lambda g, v, a=dims: g.emit(frame.SumOp(v[0], a, keepdims=True)),
                lambda t, x, a=axes: x.sum(dim=a, keepdim=True), (True,)))
        out = frame.reduced_shape(shape, dims, keep, "max")

        def max_grad_ref(t: Any, x: Any, dy: Any, a: Any = axes, k: bool = keep) -> Any:
            xx = x.detach().requires_grad_()
            return t.autograd.grad(_first_max(t, xx, a, k), xx, dy)[0]
        cases.append(OpCase(
            "max_grad", _sym("max_grad", tag, shape), (shape, out),
            lambda g, v, a=dims, k=keep: g.emit(frame.MaxGradOp(v[0], v[1], a, k)),
            max_grad_ref, (False, False)))
    cases.append(OpCase("sum_keepdims", _sym("sum_keepdims_all", (2, 3)), ((2, 3),),
                        lambda g, v: g.emit(frame.SumOp(v[0], keepdims=True)),
                        lambda t, x: x.sum().reshape(1, 1), (True,)))
    pairs: tuple[tuple[Shape, Shape], ...] = (((3, 4), (3, 4)), ((3, 4), (4,)),
                                              ((2, 1, 4), (3, 1)), ((), (2, 3)))
    for name, cls, grad_cls, fn in (("maximum", frame.MaximumOp, frame.MaximumGradOp, "maximum"),
                                    ("minimum", frame.MinimumOp, frame.MinimumGradOp, "minimum")):
        for sa, sb in pairs:
            cases.append(OpCase(name, _sym(name, sa, "by", sb), (sa, sb),
                                lambda g, v, c=cls: g.emit(c(v[0], v[1])),
                                lambda t, a, b, f=fn: getattr(t, f)(a, b), (True, True)))
        for k, (sa, sb) in zip((0, 1, 0, 1), pairs, strict=True):
            so = frame.broadcast_rule([sa, sb])

            # The gradient op works at the broadcast shape: torch's on expanded copies.
            def grad_ref(t: Any, a: Any, b: Any, dy: Any, f: str = fn, k: int = k,
                         so: Shape = so) -> Any:
                aa = a.expand(so).clone().requires_grad_()
                bb = b.expand(so).clone().requires_grad_()
                return t.autograd.grad(getattr(t, f)(aa, bb), (aa, bb)[k], dy)[0]
            cases.append(OpCase(f"{name}_grad", _sym(f"{name}_grad", k, sa, "by", sb),
                                (sa, sb, so),
                                lambda g, v, gc=grad_cls, k=k: g.emit(gc(v[0], v[1], v[2], k)),
                                grad_ref, (False, False, False)))
    return cases


def _spectral_cases() -> list[OpCase]:
    """rfft and irfft along the last axis (powers of two, even and odd non-powers, n = 2)
    against torch.fft on (re, im) pairs, and their gradient ops forward-only against
    torch's autograd (fft_r2c_backward / fft_c2r_backward)."""
    cases = []
    for shape in ((3, 8), (2, 3, 16), (2, 6), (4, 5), (3, 2), (2, 12)):
        cases.append(OpCase("rfft", _sym("rfft", shape), (shape,),
                            lambda g, v: g.emit(frame.RfftOp(v[0])),
                            lambda t, a: t.view_as_real(t.fft.rfft(a)), (True,)))

        def rfft_vjp(t: Any, dz: Any, n: int = shape[-1]) -> Any:
            x = t.zeros(*dz.shape[:-2], n, dtype=t.float64, requires_grad=True)
            return t.autograd.grad(t.view_as_real(t.fft.rfft(x)), x, dz)[0]
        zshape = (*shape[:-1], shape[-1] // 2 + 1, 2)
        cases.append(OpCase("rfft_grad", _sym("rfft_grad", shape), (zshape,),
                            lambda g, v, n=shape[-1]: g.emit(frame.RfftGradOp(v[0], n)),
                            rfft_vjp, (False,)))
    for zshape, n in (((3, 5, 2), 8), ((2, 3, 9, 2), 16), ((2, 4, 2), 6), ((4, 3, 2), 5),
                      ((3, 2, 2), 2), ((2, 4, 2), 7)):
        cases.append(OpCase("irfft", _sym("irfft", n, zshape), (zshape,),
                            lambda g, v, n=n: g.emit(frame.IrfftOp(v[0], n)),
                            lambda t, z, n=n: t.fft.irfft(t.view_as_complex(z), n=n),
                            (True,)))

        def irfft_vjp(t: Any, dx: Any, zs: Shape = zshape, n: int = n) -> Any:
            z = t.zeros(*zs, dtype=t.float64, requires_grad=True)
            return t.autograd.grad(t.fft.irfft(t.view_as_complex(z), n=n), z, dx)[0]
        cases.append(OpCase("irfft_grad", _sym("irfft_grad", n, zshape), ((*zshape[:-2], n),),
                            lambda g, v: g.emit(frame.IrfftGradOp(v[0])), irfft_vjp, (False,)))
    return cases


def _bn_ref(t: Any, x: Any, axis: int, *args: Any, **kwargs: Any) -> Any:
    """torch's F.batch_norm with the channel dim at `axis` (moved to 1 and back)."""
    return t.nn.functional.batch_norm(x.movedim(axis, 1), *args, **kwargs).movedim(1, axis)


#: (input shape, channel axis, eps) of the batch norm cases: [N, C], [N, C, L] with the
#: channel first and last, [N, C, H, W].
BN_CASES: tuple[tuple[Shape, int, float], ...] = (
    ((4, 3), 1, 1e-5), ((2, 3, 4), 1, 1e-3), ((3, 2, 4), 2, 1e-5), ((2, 3, 2, 3), 1, 0.1))


def _batch_norm_cases() -> list[OpCase]:
    """batch_norm in training mode (x, gamma, beta all parameters), its running
    statistics after one step (momentum, unbiased variance), inference mode with given
    statistics (the variance |v| + 0.5; mean and var are data), and the gradient ops
    forward-only against torch's autograd."""
    cases = []
    for shape, axis, eps in BN_CASES:
        c = (shape[axis],)
        cases.append(OpCase(
            "batch_norm", _sym("batch_norm", axis, shape), (shape, c, c),
            lambda g, v, e=eps, ax=axis: g.emit(frame.BatchNormOp(v[0], v[1], v[2], e, ax)),
            lambda t, x, w, b, e=eps, ax=axis: _bn_ref(t, x, ax, None, None, w, b,
                                                       training=True, eps=e),
            (True, True, True)))
        for wrt in (0, 1):
            def grad_ref(t: Any, x: Any, w: Any, dy: Any, e: float = eps, ax: int = axis,
                         k: int = wrt) -> Any:
                xx, ww = x.detach().requires_grad_(), w.detach().requires_grad_()
                y = _bn_ref(t, xx, ax, None, None, ww, t.zeros_like(ww), training=True, eps=e)
                return t.autograd.grad(y, (xx, ww)[k], dy)[0]
            cases.append(OpCase(
                "batch_norm_grad", _sym("batch_norm_grad", wrt, axis, shape), (shape, c, shape),
                lambda g, v, e=eps, ax=axis, k=wrt: g.emit(
                    frame.BatchNormGradOp(v[0], v[1], v[2], e, k, ax)),
                grad_ref, (False, False, False)))
        for which, momentum in (("mean", 0.1), ("var", 0.3)):
            def stats_ref(t: Any, x: Any, running: Any, m: float = momentum, ax: int = axis,
                          w: str = which) -> Any:
                rm = running.clone() if w == "mean" else t.zeros_like(running)
                rv = running.clone() if w == "var" else t.ones_like(running)
                _bn_ref(t, x, ax, rm, rv, training=True, momentum=m)
                return rm if w == "mean" else rv
            cases.append(OpCase(
                "batch_norm_stats", _sym("batch_norm_stats", which, axis, shape), (shape, c),
                lambda g, v, m=momentum, w=which, ax=axis: g.emit(
                    frame.BatchNormStatsOp(v[0], v[1], m, w, ax)),
                stats_ref, (False, False)))
        cases.append(OpCase(
            "batch_norm_inference", _sym("batch_norm_inference", axis, shape),
            (shape, c, c, c, c),
            lambda g, v, e=eps, ax=axis: g.emit(frame.BatchNormInferenceOp(
                v[0], v[1], v[2], v[3], _positive(g, v[4]), e, ax)),
            lambda t, x, w, b, m, var, e=eps, ax=axis: _bn_ref(
                t, x, ax, m, t.abs(var) + 0.5, w, b, training=False, eps=e),
            (True, True, True, False, False)))
        for wrt in (0, 1):
            def inf_grad_ref(t: Any, x: Any, w: Any, m: Any, var: Any, dy: Any,
                             e: float = eps, ax: int = axis, k: int = wrt) -> Any:
                xx, ww = x.detach().requires_grad_(), w.detach().requires_grad_()
                y = _bn_ref(t, xx, ax, m, t.abs(var) + 0.5, ww, t.zeros_like(ww),
                            training=False, eps=e)
                return t.autograd.grad(y, (xx, ww)[k], dy)[0]
            cases.append(OpCase(
                "batch_norm_inference_grad", _sym("batch_norm_inference_grad", wrt, axis, shape),
                (shape, c, c, c, shape),
                lambda g, v, e=eps, ax=axis, k=wrt: g.emit(frame.BatchNormInferenceGradOp(
                    v[0], v[1], v[2], _positive(g, v[3]), v[4], e, k, ax)),
                inf_grad_ref, (False,) * 5))
    return cases


def _torch_conv_d(t: Any, x: Any, w: Any, st: Sequence[int], pad: Sequence[int],
                  dil: Sequence[int], groups: int) -> Any:
    conv = t.nn.functional.conv2d if x.dim() == 4 else t.nn.functional.conv1d
    return conv(x, w, stride=tuple(st), padding=tuple(pad), dilation=tuple(dil), groups=groups)


def _torch_conv_t(t: Any, x: Any, w: Any, st: Sequence[int], pad: Sequence[int],
                  outp: Sequence[int], dil: Sequence[int], groups: int) -> Any:
    conv = t.nn.functional.conv_transpose2d if x.dim() == 4 else t.nn.functional.conv_transpose1d
    return conv(x, w, stride=tuple(st), padding=tuple(pad), output_padding=tuple(outp),
                dilation=tuple(dil), groups=groups)


def _conv_d_grad(t: Any, wrt: int, a: Any, b: Any, shape: Shape, st: Sequence[int],
                 pad: Sequence[int], dil: Sequence[int], groups: int) -> Any:
    """torch's d conv / d input (wrt 0: a = dy, b = w) or d weight (wrt 1: a = x, b = dy)
    of a dilated conv, the other operand of `shape`."""
    z = t.zeros(shape, dtype=a.dtype, requires_grad=True)
    x, w, dy = (z, b, a) if wrt == 0 else (a, z, b)
    return t.autograd.grad(_torch_conv_d(t, x, w, st, pad, dil, groups), z, dy)[0]


def _torch_pool_modes(t: Any, kind: str, x: Any, k: Sequence[int], st: Sequence[int],
                      pad: Sequence[int], ceil: bool, include: bool = True) -> Any:
    nd = x.dim() - 2
    fn = getattr(t.nn.functional, f"{kind}_pool{nd}d")
    if kind == "max":
        return fn(x, tuple(k), tuple(st), tuple(pad), ceil_mode=ceil)
    return fn(x, tuple(k), tuple(st), tuple(pad), ceil_mode=ceil, count_include_pad=include)


def _conv_family_cases() -> list[OpCase]:
    """The convolution / pooling family's additions (`frame_conv`): dilated conv (2-d and
    1-d, with groups) and its gradient ops, conv_transpose (stride, padding,
    output_padding -- also at or above the stride, below the dilation -- dilation,
    groups), avg_pool with ceil_mode and count_include_pad=False (torch's divisors),
    max_pool with ceil_mode, and the global pools, against torch.nn.functional."""
    cases = []
    # (input, weight, stride, padding, dilation, groups)
    for xs, ws, st, pad, dil, gr in (((2, 2, 7, 6), (3, 2, 3, 2), (1, 1), (2, 1), (2, 2), 1),
                                     ((1, 3, 11), (2, 3, 3), (2,), (1,), (2,), 1),
                                     ((1, 4, 8, 9), (4, 2, 2, 3), (2, 1), (0, 2), (3, 2), 2)):
        cases.append(OpCase(
            "conv_dilation", _sym("conv_dilation", xs, ws), (xs, ws),
            lambda g, v, st=st, pad=pad, d=dil, gr=gr: g.emit(
                frame.ConvOp(v[0], v[1], st, pad, gr, d)),
            lambda t, x, w, st=st, pad=pad, d=dil, gr=gr: _torch_conv_d(t, x, w, st, pad, d, gr),
            (True, True)))
        ys = frame.conv_output_shape(xs, ws, st, pad, gr, dilation=dil)
        cases.append(OpCase(
            "conv_grad_dilation", _sym("conv_grad_input_dilation", xs, ws), (ys, ws),
            lambda g, v, xs=xs, st=st, pad=pad, d=dil, gr=gr: g.emit(frame.ConvGradInputOp(
                v[0], v[1], frame.tensor_type(xs), st, pad, gr, d)),
            lambda t, dy, w, xs=xs, st=st, pad=pad, d=dil, gr=gr: _conv_d_grad(
                t, 0, dy, w, xs, st, pad, d, gr), (False, False)))
        cases.append(OpCase(
            "conv_grad_dilation", _sym("conv_grad_weight_dilation", xs, ws), (xs, ys),
            lambda g, v, ws=ws, st=st, pad=pad, d=dil, gr=gr: g.emit(frame.ConvGradWeightOp(
                v[0], v[1], frame.tensor_type(ws), st, pad, gr, d)),
            lambda t, x, dy, ws=ws, st=st, pad=pad, d=dil, gr=gr: _conv_d_grad(
                t, 1, x, dy, ws, st, pad, d, gr), (False, False)))
    # (input, weight [Cin, Cout/groups, *K], stride, padding, output_padding, dilation,
    # groups); the third and fifth have output_padding >= stride (below the dilation).
    for xs, ws, st, pad, outp, dil, gr in (
            ((2, 4, 3, 4), (4, 3, 3, 2), (2, 1), (1, 0), (1, 0), (1, 2), 1),
            ((1, 4, 5), (4, 2, 3), (2,), (1,), (1,), (1,), 2),
            ((1, 2, 5), (2, 3, 3), (1,), (1,), (1,), (2,), 1),
            ((1, 4, 3, 3), (4, 1, 2, 3), (3, 2), (1, 1), (2, 1), (1, 1), 2),
            ((2, 2, 4, 3), (2, 2, 2, 3), (2, 1), (2, 0), (2, 1), (3, 2), 1)):
        cases.append(OpCase(
            "conv_transpose", _sym("conv_transpose", xs, ws, "op", outp), (xs, ws),
            lambda g, v, st=st, pad=pad, op=outp, d=dil, gr=gr: g.emit(
                frame.ConvTransposeOp(v[0], v[1], st, pad, op, gr, d)),
            lambda t, x, w, st=st, pad=pad, op=outp, d=dil, gr=gr: _torch_conv_t(
                t, x, w, st, pad, op, d, gr), (True, True)))
    # (input, kernel, stride, padding, ceil_mode, count_include_pad) of the avg pools:
    # windows past the end (ceil_mode) and divisors without the padding.
    for group, pools in (
            ("avg_pool_ceil", (((2, 3, 6, 7), (3, 2), (2, 2), (1, 1), True, True),
                               ((1, 2, 8), (3,), (2,), (1,), True, True),
                               ((1, 1, 3, 3), (4, 4), (2, 2), (0, 0), True, True))),
            ("avg_pool_exclude_pad", (((2, 3, 6, 7), (3, 3), (2, 1), (1, 1), False, False),
                                      ((1, 2, 5, 5), (2, 3), (2, 2), (0, 1), True, False),
                                      ((2, 2, 9), (3,), (3,), (1,), True, False)))):
        for xs, k, st, pad, ceil, include in pools:
            cases.append(OpCase(
                group, _sym(group, xs, k), (xs,),
                lambda g, v, k=k, st=st, pad=pad, c=ceil, i=include: g.emit(
                    frame.AvgPoolOp(v[0], k, st, pad, c, i)),
                lambda t, x, k=k, st=st, pad=pad, c=ceil, i=include: _torch_pool_modes(
                    t, "avg", x, k, st, pad, c, i), (True,)))
    for xs, k, st, pad in (((2, 3, 6, 7), (3, 2), (2, 2), (1, 0)), ((2, 3, 8), (3,), (2,), (0,)),
                           ((1, 2, 5, 6), (2, 2), (2, 2), (1, 1))):
        cases.append(OpCase(
            "max_pool_ceil", _sym("max_pool_ceil", xs, k), (xs,),
            lambda g, v, k=k, st=st, pad=pad: g.emit(frame.MaxPoolOp(v[0], k, st, pad, True)),
            lambda t, x, k=k, st=st, pad=pad: _torch_pool_modes(t, "max", x, k, st, pad, True),
            (True,)))
    # The global pools: 2-d, 1-d, a long last dim (frame.sum's per-column sums) and 3-d.
    for xs in ((2, 3, 4, 5), (2, 3, 7), (1, 2, 9, 12), (1, 2, 2, 3, 2)):
        nd = len(xs) - 2
        cases.append(OpCase(
            "global_avg_pool", _sym("global_avg_pool", xs), (xs,),
            lambda g, v: g.emit(frame.GlobalAvgPoolOp(v[0])),
            lambda t, x, nd=nd: getattr(t.nn.functional, f"adaptive_avg_pool{nd}d")(x, 1),
            (True,)))
        cases.append(OpCase(
            "global_max_pool", _sym("global_max_pool", xs), (xs,),
            lambda g, v: g.emit(frame.GlobalMaxPoolOp(v[0])),
            lambda t, x, nd=nd: getattr(t.nn.functional, f"adaptive_max_pool{nd}d")(x, 1),
            (True,)))
    return cases


def _layer_norm_cases() -> list[OpCase]:
    """layer_norm over the last axis (x, gamma and beta all parameters), and its
    gradient op for x and for gamma, forward-only against torch's autograd."""
    cases = []
    for x_shape, eps in (((3, 8), 1e-5), ((2, 3, 5), 1e-3), ((4, 1), 1e-5), ((1, 16), 0.1)):
        d = (x_shape[-1],)
        cases.append(OpCase(
            "layer_norm", _sym("layer_norm", x_shape), (x_shape, d, d),
            lambda g, v, e=eps: g.emit(frame.LayerNormOp(v[0], v[1], v[2], e)),
            lambda t, x, w, b, e=eps: t.nn.functional.layer_norm(x, w.shape, w, b, e),
            (True, True, True)))
        for wrt in (0, 1):
            def ref(t: Any, x: Any, w: Any, dy: Any, e: float = eps, k: int = wrt) -> Any:
                xx, ww = x.detach().requires_grad_(), w.detach().requires_grad_()
                y = t.nn.functional.layer_norm(xx, ww.shape, ww, t.zeros_like(ww), e)
                return t.autograd.grad(y, (xx, ww)[k], dy)[0]
            cases.append(OpCase(
                "layer_norm_grad", _sym("layer_norm_grad", wrt, x_shape), (x_shape, d, x_shape),
                lambda g, v, e=eps, k=wrt: g.emit(frame.LayerNormGradOp(v[0], v[1], v[2], e, k)),
                ref, (False, False, False)))
    return cases


CASES: list[OpCase] = [*_conv_cases(), *_pool_cases(), *_scan_cases(), *_binary_cases(), *_unary_cases(), *_matmul_cases(), *_mse_cases(),
                       *_forward_only_cases(), *_update_cases(), *_math_cases(),
                       *_softmax_cases(),
                       *_batch_norm_cases(),
                       *_layer_norm_cases(), *_broadcast_cases(), *_reduce_cases(), *_movement_cases(), *_conv_family_cases(),
                       *_spectral_cases()]
VJP_CASES = [c for c in CASES if c.has_vjp]
CASES_BY_GROUP: dict[str, list[OpCase]] = {}
for _c in CASES:
    CASES_BY_GROUP.setdefault(_c.group, []).append(_c)


def _out_shape(case: OpCase) -> Shape:
    """The op's result shape, from the dialect's own shape rule on a scratch graph."""
    g = Graph("scratch")
    vals = [g.add_input(s) for s in case.shapes]
    res = case.build(g, vals)
    shape = frame.static_shape(res)
    assert shape is not None
    return shape


def _build_case(case: OpCase) -> list[func.FuncOp]:
    fns = []
    fwd = Graph(f"{case.name}_fwd")
    vals = [fwd.add_input(s, f"in{i}") for i, s in enumerate(case.shapes)]
    fns.append(fwd.finish([case.build(fwd, vals)]))
    if case.has_vjp:
        g = Graph(case.name)
        ins: list[SSAValue] = []
        for i, (shape, is_param) in enumerate(zip(case.shapes, case.params, strict=True)):
            if is_param:
                (v,) = add_parameter_inputs(g, [ParamSpec(f"p{i}", shape,
                                                          UniformSeeded(-1.0, 1.0))])
            else:
                v = g.add_input(shape, f"in{i}")
            ins.append(v)
        y = case.build(g, ins)
        r = g.add_input(_out_shape(case), "r")
        loss = g.emit(frame.SumOp(g.emit(frame.MulOp(y, r))))
        fns.append(g.finish([loss]))
    return fns


@functools.cache
def _executable(group: str) -> Executable:
    """All cases of one op in one module, compiled once per test session."""
    fns = [fn for case in CASES_BY_GROUP[group] for fn in _build_case(case)]
    return compile_module(builtin.ModuleOp(fns))


def _inputs(case: OpCase, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for shape in case.shapes:
        u = rng.uniform(-1.0, 1.0, size=shape)
        if case.away_from_zero:
            # |x| >= 0.1: relu's kink stays far from every input.
            u = np.where(u < 0, -1.0, 1.0) * (0.1 + 0.9 * np.abs(u))
        out.append(np.asarray(u, dtype=np.float32))
    return out


def _case_values(case: OpCase, oracle: Any) -> tuple[list[np.ndarray], np.ndarray]:
    rng = oracle.rng(case.name)
    args = _inputs(case, rng)
    r = np.asarray(rng.uniform(-1.0, 1.0, size=_out_shape(case)), dtype=np.float32)
    return args, r


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_vs_torch(case: OpCase, torch: Any, oracle: Any) -> None:
    ex = _executable(case.group)
    args, _ = _case_values(case, oracle)
    (ours,) = ex(f"{case.name}_fwd", *args)
    ref = case.ref(torch, *[torch.from_numpy(a).double() for a in args])
    oracle.assert_close(ours, ref.detach().numpy(), category=f"ops fwd {case.group}",
                        what=f"{case.name} forward")


@pytest.mark.parametrize("case", VJP_CASES, ids=lambda c: c.id)
def test_vjp_vs_torch(case: OpCase, torch: Any, oracle: Any) -> None:
    ex = _executable(case.group)
    args, r = _case_values(case, oracle)
    loss, *grads = ex(f"{case.name}_grad", *args, r)

    tensors = [torch.from_numpy(a).double().requires_grad_(p)
               for a, p in zip(args, case.params, strict=True)]
    ref_loss = (case.ref(torch, *tensors) * torch.from_numpy(r).double()).sum()
    ref_loss.backward()
    ref_grads = [t.grad.numpy() for t, p in zip(tensors, case.params, strict=True) if p]

    oracle.assert_close(loss, ref_loss.detach().numpy(), category=f"ops vjp {case.group}",
                        what=f"{case.name} loss sum(op * r)")
    assert len(grads) == len(ref_grads), f"{case.name}: {len(grads)} gradients returned"
    for i, (ours, ref) in enumerate(zip(grads, ref_grads, strict=True)):
        oracle.assert_close(ours, ref, category=f"ops vjp {case.group}",
                            what=f"{case.name} gradient of parameter #{i}")


@pytest.mark.parametrize("pool", range(len(POOL_CASES)))
def test_max_pool_grad_ties_go_to_the_first_max(pool: int, torch: Any, oracle: Any) -> None:
    """Windows with tied maxima (values from {-1, 0, 1}, and a constant plateau):
    like PyTorch, only the first maximum in row-major window order gets dy."""
    case = next(c for c in CASES_BY_GROUP["max_pool_grad"]
                if c.shapes[0] == POOL_CASES[pool][0])
    rng = oracle.rng(f"ties {case.name}")
    x = rng.integers(-1, 2, size=case.shapes[0]).astype(np.float32)
    x[..., :3, :3] = 0.5  # a plateau: every window inside it is one big tie
    dy = rng.uniform(0.5, 1.5, size=case.shapes[1]).astype(np.float32)
    (ours,) = _executable(case.group)(f"{case.name}_fwd", x, dy)
    _, k, st, pad = POOL_CASES[pool]
    ref = _pool_input_grad(torch, "max", torch.from_numpy(x).double(),
                           torch.from_numpy(dy).double(), k, st, pad).numpy()
    # Every tie is broken the same way: where torch gives nothing, so do we.
    np.testing.assert_array_equal(ours == 0, ref == 0)
    oracle.assert_close(ours, ref, category="ops fwd max_pool_grad", what=f"{case.name} ties")


#: Values where selection ops are easy to get subtly wrong: NaN, both infinities, both
#: zeros, a denormal, and ties (the few distinct values make equal maxima common).
EDGE_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40], np.float32)


def _assert_bitwise(ours: np.ndarray, ref: np.ndarray, what: str) -> None:
    """Equal as float32 bit patterns up to NaN payloads: NaN where torch has NaN, the
    same value and the same sign of zero everywhere else."""
    ours32, ref32 = np.asarray(ours, np.float32), np.asarray(ref, np.float32)
    assert ours32.shape == ref32.shape, f"{what}: shape {ours32.shape} vs {ref32.shape}"
    nan = np.isnan(ref32)
    same = np.where(nan, np.isnan(ours32), ours32.view(np.uint32) == ref32.view(np.uint32))
    if not same.all():
        idx = tuple(int(i) for i in np.argwhere(~same)[0])
        raise AssertionError(f"{what}: {int((~same).sum())} of {same.size} elements differ "
                             f"from torch; first at {idx}: ours {ours32[idx]!r} vs "
                             f"torch {ref32[idx]!r}")


@pytest.mark.parametrize("group", ["relu", "relu_grad", "max_pool", "max_pool_grad"])
def test_edge_values_match_torch_bitwise(group: str, torch: Any, oracle: Any) -> None:
    """relu, max_pool and their gradients only select values, so PyTorch's float32
    results are exact: ours must equal them bit for bit on NaN, +-inf, +-0.0, denormals
    and ties (relu(-0.0) is -0.0; a NaN input passes relu's gradient; a pooling window
    holding a NaN is NaN and sends dy to its last NaN; an all -inf window sends dy to
    its first cell inside the input, never to padding)."""
    ex = _executable(group)
    for case in CASES_BY_GROUP[group]:
        rng = oracle.rng(f"edge {case.name}")
        x = rng.choice(EDGE_VALUES, size=case.shapes[0])
        if group == "max_pool_grad":
            x.reshape(-1)[: x.size // 3] = -np.inf  # whole windows of -inf, next to padding
        # The second operand (dy) is an ordinary finite cotangent.
        args = [x, *(rng.uniform(0.5, 1.5, size=sh).astype(np.float32)
                     for sh in case.shapes[1:])]
        (ours,) = ex(f"{case.name}_fwd", *args)
        ref = case.ref(torch, *[torch.from_numpy(a.copy()) for a in args])
        _assert_bitwise(ours, ref.detach().numpy(), f"{case.name} on edge values")


#: Ops with an integer operand, checked by test_scatter_add_and_gather_rows_vs_torch.
INDEXED_OPS = {"scatter_add", "gather_rows",
               # the losses with integer labels: tests/passes/test_frame_loss.py
               "nll_loss", "nll_loss_grad", "cross_entropy", "cross_entropy_grad"}
#: Ops whose operands this harness cannot make (index tensors, step functions),
#: with their own tests against torch: scan in tests/passes/test_frame_scan.py;
#: index_select and index_add in tests/passes/test_frame_index.py.
OWN_TESTS = INDEXED_OPS | {"scan", "index_select", "index_add"}


def _indexed_loss(name: str, param_shape: Shape, k: int, index_type: str, out_shape: Shape,
                  make: Callable[[SSAValue, SSAValue], Any]) -> tuple[str, Executable]:
    """`@name(p [param], indices [k] i32/i64, r) = sum(make(p, indices) * r)`, compiled
    with its gradient `@name_grad`."""
    from xdsl.dialects import builtin as b

    g = Graph(name)
    (param,) = add_parameter_inputs(g, [ParamSpec("p", param_shape, UniformSeeded(0, 1))])
    elem = b.i64 if index_type == "i64" else b.i32
    idx = g.block.insert_arg(b.TensorType(elem, [k]), len(g.block.args))
    g._arg_attrs.append({})
    r = g.add_input(out_shape, "r")
    out = g.emit(make(param, idx))
    loss = g.emit(frame.SumOp(g.emit(frame.MulOp(out, r))))
    return name, compile_module(b.ModuleOp([g.finish([loss])]))


@pytest.mark.parametrize("k,v,f,index_type", [(3, 4, 2, "i64"), (5, 2, 3, "i32"),
                                              (1, 3, 1, "i64")])
def test_scatter_add_and_gather_rows_vs_torch(torch: Any, k: int, v: int, f: int,
                                              index_type: str) -> None:
    """scatter_add forward (repeated indices accumulate, untouched rows stay 0) and its
    VJP (gather_rows) against torch.index_add / autograd."""
    rng = np.random.default_rng(k * 100 + v)
    name, ex = _indexed_loss(f"scatter_{k}_{v}_{f}", (k, f), k, index_type, (v, f),
                             lambda p, i: frame.ScatterAddOp(p, i, frame.tensor_type((v, f))))
    u = rng.standard_normal((k, f)).astype(np.float32)
    ind = rng.integers(0, v, k).astype(np.int64 if index_type == "i64" else np.int32)
    rr = rng.standard_normal((v, f)).astype(np.float32)
    got_loss, got_grad = ex(name + "_grad", u, ind, rr)
    tu = torch.from_numpy(u).requires_grad_()
    tout = torch.zeros((v, f), dtype=torch.float32).index_add(0, torch.from_numpy(
        ind.astype(np.int64)), tu)
    tloss = (tout * torch.from_numpy(rr)).sum()
    tloss.backward()
    np.testing.assert_allclose(got_loss, tloss.item(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, tu.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("k,v,f,index_type", [(5, 3, 2, "i64"), (2, 4, 3, "i32")])
def test_gather_rows_and_its_vjp_vs_torch(torch: Any, k: int, v: int, f: int,
                                          index_type: str) -> None:
    """gather_rows with a differentiable source: rows gathered twice send both adjoints
    back (scatter_add accumulates), rows never gathered get 0; torch.index_select."""
    rng = np.random.default_rng(k * 10 + v)
    name, ex = _indexed_loss(f"gather_{k}_{v}_{f}", (v, f), k, index_type, (k, f),
                             frame.GatherRowsOp)
    sv = rng.standard_normal((v, f)).astype(np.float32)
    ind = np.array([i % (v - 1) for i in range(k)],  # repeats, and row v-1 never read
                   dtype=np.int64 if index_type == "i64" else np.int32)
    rr = rng.standard_normal((k, f)).astype(np.float32)
    got_loss, got_grad = ex(name + "_grad", sv, ind, rr)
    ts = torch.from_numpy(sv).double().requires_grad_()
    tloss = (ts.index_select(0, torch.from_numpy(ind.astype(np.int64)))
             * torch.from_numpy(rr).double()).sum()
    tloss.backward()
    np.testing.assert_allclose(got_loss, tloss.item(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, ts.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert np.all(got_grad[v - 1] == 0)


def test_cases_cover_every_frame_op() -> None:
    """Adding an op to the dialect without an oracle case fails here."""
    from frame_mlir.dialects.frame import Frame

    covered = {c.group for c in CASES} | OWN_TESTS
    ops = {op.name.removeprefix("frame.") for op in Frame.operations}
    assert ops - covered == set(), f"frame ops without an oracle case: {ops - covered}"
    assert all(len([c for c in CASES if c.group == g]) >= 3 for g in covered - OWN_TESTS)


# --------------------------------------------------------------------------- finite differences

FD_BATCH, FD_IN, FD_HIDDEN, FD_OUT = 3, 4, 5, 2


@functools.cache
def _fd_executable() -> Executable:
    """loss = mse(relu(x @ W1 + b1) @ W2^T, t) + 0.5 * sum(W2 * W2).

    Piecewise quadratic in every parameter, so central differences are exact up to
    rounding as long as no relu input changes sign; W2 is stored [out, hidden] and
    used through the transpose flag, and used twice (adjoints accumulate).
    """
    g = Graph("fd")
    x = g.add_input((FD_BATCH, FD_IN), "x")
    w1, b1, w2 = add_parameter_inputs(g, [
        ParamSpec("w1", (FD_IN, FD_HIDDEN), UniformSeeded(-1.0, 1.0)),
        ParamSpec("b1", (FD_BATCH, FD_HIDDEN), UniformSeeded(-1.0, 1.0)),
        ParamSpec("w2", (FD_OUT, FD_HIDDEN), UniformSeeded(-1.0, 1.0)),
    ])
    t = g.add_input((FD_BATCH, FD_OUT), "t")
    h = g.emit(frame.ReluOp(g.emit(frame.AddOp(g.emit(frame.MatmulOp(x, w1)), b1))))
    y = g.emit(frame.MatmulOp(h, w2, transpose_rhs=True))
    mse = g.emit(frame.MseLossOp(y, t))
    decay = g.emit(frame.ScaleOp(g.emit(frame.SumOp(g.emit(frame.MulOp(w2, w2)))), 0.5))
    fn = g.finish([g.emit(frame.AddOp(mse, decay))])
    return compile_module(builtin.ModuleOp([fn]))


def test_mlp_gradient_vs_finite_differences(oracle: Any) -> None:
    ex = _fd_executable()
    rng = oracle.rng("finite-differences")
    f32 = np.float32
    h = 1e-2
    x = rng.uniform(-1, 1, (FD_BATCH, FD_IN)).astype(f32)
    w1 = rng.uniform(-1, 1, (FD_IN, FD_HIDDEN)).astype(f32)
    # Choose b1 so every relu input sits at |pre| >= 0.2: perturbing one entry of W1
    # by h moves a relu input by at most h * max|x| <= h, one of b1 by h, so no
    # difference quotient straddles a kink.
    pre = rng.uniform(-1, 1, (FD_BATCH, FD_HIDDEN))
    pre = np.where(pre < 0, -1.0, 1.0) * (0.2 + 0.8 * np.abs(pre))
    b1 = (pre - x.astype(np.float64) @ w1).astype(f32)
    params = [w1, b1, rng.uniform(-1, 1, (FD_OUT, FD_HIDDEN)).astype(f32)]
    t = rng.uniform(-1, 1, (FD_BATCH, FD_OUT)).astype(f32)
    assert np.min(np.abs(x.astype(np.float64) @ w1 + b1)) > 10 * h

    loss, *grads = ex("fd_grad", x, *params, t)
    (loss_fwd,) = ex("fd", x, *params, t)
    # Same forward ops, but the pipeline may schedule them differently: not bitwise.
    oracle.assert_close(loss, loss_fwd, category="finite differences", rtol=1e-6, atol=0.0,
                        what="loss of @fd_grad vs @fd")

    for k, (p, grad) in enumerate(zip(params, grads, strict=True)):
        fd = np.zeros(p.shape)
        for idx in np.ndindex(p.shape):
            plus, minus = p.copy(), p.copy()
            plus[idx] = f32(p[idx] + h)
            minus[idx] = f32(p[idx] - h)
            # The step actually taken is the difference of the rounded f32 values.
            step = float(plus[idx]) - float(minus[idx])
            lp = float(ex("fd", x, *[plus if j == k else q for j, q in enumerate(params)], t)[0])
            lm = float(ex("fd", x, *[minus if j == k else q for j, q in enumerate(params)], t)[0])
            fd[idx] = (lp - lm) / step
        # Rounding of the f32 loss (~1e-7) divided by the step (2e-2): ~1e-5 absolute.
        oracle.assert_close(grad, fd, category="finite differences", rtol=1e-3, atol=1e-4,
                            what=f"gradient of parameter #{k} vs central differences")


#: Ops whose VJPs are checked against central differences too (smooth ones: relu,
#: max-pool, hardtanh and threshold have kinks inside the inputs' range and step a jump
#: (abs only at 0, which its inputs stay 0.1 away from), heaviside_surrogate's gradient
#: is by design not its derivative). maximum and minimum have a kink where a == b: their seeded inputs
#: keep every pair more than h apart (0.0148 at the closest). frame.max is left out:
#: its random groups hold near ties (a runner-up within h of the max), where a central
#: difference straddles the kink; its gradient is checked against torch, ties included.
FD_GROUPS = ("conv", "avg_pool", "sigmoid", "selective_scan", "matmul", "mse_loss", "sum",
             "broadcast", "reshape", "transpose", "mul", "sub", "scale", "neg",
             "exp", "tanh", "abs", "log", "sqrt", "shift", "update", "gelu", "gelu_tanh",
             "div", "softmax", "log_softmax", "layer_norm", "slice", "concat", "pad", "bcast_add", "bcast_sub",
             "bcast_mul", "bcast_div", "mean", "sum_keepdims", "maximum", "minimum",
             "rfft", "irfft", "batch_norm", "batch_norm_inference",
             "conv_dilation", "conv_transpose", "avg_pool_ceil", "avg_pool_exclude_pad",
             "global_avg_pool")


@pytest.mark.parametrize("case", [c for c in VJP_CASES if c.group in FD_GROUPS],
                         ids=lambda c: c.id)
def test_vjp_vs_finite_differences(case: OpCase, oracle: Any) -> None:
    """`@c_grad`'s vector-Jacobian products against central differences of `@c` (our
    own compiled forward, without torch and without the VJP table): h = 1e-2 on
    float32 inputs, the step actually taken after rounding."""
    ex = _executable(case.group)
    args, r = _case_values(case, oracle)
    _, *grads = ex(f"{case.name}_grad", *args, r)
    wrt = [i for i, p in enumerate(case.params) if p]
    assert len(grads) == len(wrt)
    h = 1e-2
    for i, grad in zip(wrt, grads, strict=True):
        fd = np.zeros(args[i].shape)
        for idx in np.ndindex(args[i].shape):
            plus, minus = args[i].copy(), args[i].copy()
            plus[idx] = np.float32(args[i][idx] + h)
            minus[idx] = np.float32(args[i][idx] - h)
            step = float(plus[idx]) - float(minus[idx])
            lp = float(ex(case.name, *[plus if j == i else a for j, a in enumerate(args)], r)[0])
            lm = float(ex(case.name, *[minus if j == i else a for j, a in enumerate(args)], r)[0])
            fd[idx] = (lp - lm) / step
        # Truncation (h^2 times a third derivative) and the f32 loss's rounding over 2h.
        oracle.assert_close(grad, fd, category="finite differences (ops)", rtol=2e-4,
                            atol=2e-4 * max(1.0, float(np.abs(fd).max())),
                            what=f"{case.name}: gradient of operand #{i} vs central differences")
