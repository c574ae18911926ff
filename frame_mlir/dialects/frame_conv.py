"""The frame dialect's convolution family -- ops, shape rules, verifiers, VJP rules and
lowerings in this one file (like `frame_math.py`):

  * `frame.conv` (N-d cross-correlation: stride, symmetric zero padding, `dilation`,
    groups) and its gradient ops `frame.conv_grad_input` / `frame.conv_grad_weight`;
  * `frame.conv_transpose` (torch's conv_transpose1d/2d: stride, padding,
    `output_padding`, dilation, groups; weight [Cin, Cout/groups, *K]).

The pooling ops live in `frame_pool.py`, which shares this file's padding helpers
(`_pad`, `_crop`, `_padded_shape`) and `_scatter_iterators`.

Layout NC* (NCL, NCHW, ...), PyTorch's semantics, f32 or f16 storage with f32
arithmetic. `dilation` and `output_padding` are optional attributes whose absence
means torch's default (1, 0), so IR written before them reads and lowers exactly as it
did (an undilated conv keeps the `out * stride + k` maps frame-gemm recognises).

Numerics:
  * conv: an f32 accumulator per output element, one fma per (c, *k) in that order;
    its input gradient, for stride 1, no dilation, one group and padding <= K - 1, is
    itself a conv of dy padded by K - 1 - p (one fma per (o, *j) in that order, j the
    flipped tap K - 1 - k); otherwise a GEMM (`dcol = w^T dy`, which `frame-gemm`
    blocks) and a col2im that adds each column entry at `out * stride + k * dilation`
    of the padded input gradient in (k, out) order; the weight gradient sums over
    (n, *out).
  * conv_transpose is a conv's input gradient (the same two forms), its VJP a conv
    (for x) and a conv weight gradient with x as dy (for w).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import prod
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    IntegerAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.linalg import attrs as linalg_attrs
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def

from frame_mlir.dialects.frame_base import (
    BinaryOp,
    DeclaredShape,
    Shape,
    ShapeError,
    _fmt,
    declared_shape,
    element_type,
    static_shape,
)
from frame_mlir.dialects.frame_movement import PadOp, SliceOp, _window_copy
from frame_mlir.dialects.linalg_utils import PAR, RED, identity_map
from frame_mlir.dialects.linalg_utils import accumulator_type as _accumulator_type
from frame_mlir.dialects.linalg_utils import f32_const as _f32_const
from frame_mlir.dialects.linalg_utils import result_type as _result_type
from frame_mlir.dialects.linalg_utils import round_to as _round_to


def _ints(attr: DenseArrayBase | None) -> list[int] | None:
    return None if attr is None else [int(v) for v in attr.get_values()]


def _i64s(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _ones(values: Sequence[int] | None) -> bool:
    return values is None or all(v == 1 for v in values)



# --- shape rules ------------------------------------------------------------------------


def conv_output_shape(x: Shape, w: Shape, stride: Sequence[int], padding: Sequence[int],
                      groups: int, what: str = "frame.conv",
                      dilation: Sequence[int] | None = None) -> Shape:
    """[N, Cin, *S] conv [Cout, Cin/groups, *K] -> [N, Cout, *O],
    O = (S + 2p - d(K-1) - 1) // s + 1 (dilation d: 1 when None)."""
    if len(x) != len(w) or len(x) < 3:
        raise ShapeError(f"{what}: expected input [N, C, *spatial] and weight [Cout, Cin/groups,"
                         f" *kernel] of the same rank >= 3, found {_fmt(x)} and {_fmt(w)}")
    nsp = len(x) - 2
    if len(stride) != nsp or len(padding) != nsp:
        raise ShapeError(f"{what}: expected {nsp} stride and padding entries, found "
                         f"{len(stride)} and {len(padding)}")
    dil = [1] * nsp if dilation is None else list(dilation)
    if len(dil) != nsp:
        raise ShapeError(f"{what}: expected {nsp} dilation entries, found {len(dil)}")
    if groups < 1 or x[1] % groups or w[0] % groups:
        raise ShapeError(f"{what}: groups {groups} must divide the input channels {x[1]} "
                         f"and the output channels {w[0]}")
    if w[1] != x[1] // groups:
        raise ShapeError(f"{what}: weight expected {x[1] // groups} input channels per group, "
                         f"found {w[1]}")
    out = [x[0], w[0]]
    for size, k, st, p, d in zip(x[2:], w[2:], stride, padding, dil, strict=True):
        span = d * (k - 1) + 1
        if st < 1 or p < 0 or d < 1 or k < 1 or size + 2 * p < span:
            extra = "" if d == 1 else f", dilation {d}"
            raise ShapeError(f"{what}: kernel {k} with stride {st}, padding {p}{extra} does "
                             f"not fit a spatial size of {size}")
        out.append((size + 2 * p - span) // st + 1)
    return tuple(out)


def conv_transpose_output_shape(x: Shape, w: Shape, stride: Sequence[int],
                                padding: Sequence[int], output_padding: Sequence[int] | None,
                                groups: int, dilation: Sequence[int] | None = None,
                                what: str = "frame.conv_transpose") -> Shape:
    """[N, Cin, *S] conv_transpose [Cin, Cout/groups, *K] -> [N, Cout, *O],
    O = (S - 1) s - 2p + d(K-1) + output_padding + 1 (torch's rule; output_padding
    below max(stride, dilation))."""
    if len(x) != len(w) or len(x) < 3:
        raise ShapeError(f"{what}: expected input [N, Cin, *spatial] and weight [Cin, "
                         f"Cout/groups, *kernel] of the same rank >= 3, found {_fmt(x)} and "
                         f"{_fmt(w)}")
    nsp = len(x) - 2
    outp = [0] * nsp if output_padding is None else list(output_padding)
    dil = [1] * nsp if dilation is None else list(dilation)
    if not len(stride) == len(padding) == len(outp) == len(dil) == nsp:
        raise ShapeError(f"{what}: expected {nsp} stride, padding, output_padding and "
                         f"dilation entries, found {len(stride)}/{len(padding)}/{len(outp)}/"
                         f"{len(dil)}")
    if groups < 1 or x[1] % groups:
        raise ShapeError(f"{what}: groups {groups} must divide the input channels {x[1]}")
    if w[0] != x[1]:
        raise ShapeError(f"{what}: weight dim 0 expected {x[1]} (the input channels), "
                         f"found {w[0]}")
    out = [x[0], w[1] * groups]
    for size, k, st, p, op, d in zip(x[2:], w[2:], stride, padding, outp, dil, strict=True):
        if st < 1 or d < 1 or k < 1 or p < 0:
            raise ShapeError(f"{what}: expected kernel, stride and dilation >= 1 and padding "
                             f">= 0, found kernel {k}, stride {st}, dilation {d}, padding {p}")
        if not 0 <= op < max(st, d):
            raise ShapeError(f"{what}: output_padding expected in [0, {max(st, d)}) (below "
                             f"stride {st} or dilation {d}), found {op}")
        o = (size - 1) * st - 2 * p + d * (k - 1) + op + 1
        if o < 1:
            raise ShapeError(f"{what}: output size expected >= 1, found {o} (input size "
                             f"{size}, kernel {k}, stride {st}, padding {p}, dilation {d})")
        out.append(o)
    return tuple(out)



# --- ops --------------------------------------------------------------------------------


class _ConvAttrs:
    """stride / padding / dilation (one entry per spatial dim; dilation optional, 1 when
    absent) and groups of the conv ops."""

    stride = prop_def(DenseArrayBase.constr(i64))
    padding = prop_def(DenseArrayBase.constr(i64))
    groups = prop_def(IntegerAttr.constr(i64))
    dilation = opt_prop_def(DenseArrayBase.constr(i64))

    @staticmethod
    def props(stride: Sequence[int], padding: Sequence[int], groups: int,
              dilation: Sequence[int] | None = None) -> dict[str, Attribute | None]:
        """The properties; a dilation of all 1 is left out (the default)."""
        return {"stride": _i64s(stride), "padding": _i64s(padding),
                "groups": IntegerAttr(groups, i64),
                "dilation": None if _ones(dilation) else _i64s(dilation)}  # type: ignore[arg-type]

    def conv_attrs(self) -> tuple[list[int], list[int], int]:
        """(stride, padding, groups)."""
        return (_ints(self.stride) or [], _ints(self.padding) or [],  # type: ignore[arg-type]
                self.groups.value.data)  # type: ignore[attr-defined]

    def dilation_attr(self) -> list[int] | None:
        """The dilation as written (None when absent)."""
        return _ints(self.dilation)  # type: ignore[arg-type]

    def dilations(self) -> list[int]:
        """The dilation, one entry per spatial dim (1 when absent)."""
        return self.dilation_attr() or [1] * len(self.conv_attrs()[0])

    def rule_attrs(self) -> dict[str, object]:
        st, p, g = self.conv_attrs()
        return {"stride": st, "padding": p, "groups": g, "dilation": self.dilation_attr()}


@irdl_op_definition
class ConvOp(_ConvAttrs, BinaryOp):
    """N-d convolution (cross-correlation, NC* layout, symmetric zero padding, optional
    dilation, groups): torch's conv1d / conv2d.

    ``%y = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>``
    ``%y = frame.conv %x, %w {stride = array<i64: 1>, padding = array<i64: 0>, groups = 1 : i64, dilation = array<i64: 2>} : (tensor<1x2x7xf32>, tensor<3x2x3xf32>) -> tensor<1x3x3xf32>``
    """

    name = "frame.conv"

    def __init__(self, x: SSAValue | Operation, w: SSAValue | Operation, stride: Sequence[int],
                 padding: Sequence[int], groups: int = 1,
                 dilation: Sequence[int] | None = None):
        super().__init__(x, w, None, self.props(stride, padding, groups, dilation),
                         stride=stride, padding=padding, groups=groups, dilation=dilation)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, w = shapes
        return conv_output_shape(x, w, attrs["stride"], attrs["padding"],  # type: ignore
                                 attrs["groups"], "frame.conv",  # type: ignore[arg-type]
                                 attrs.get("dilation"))  # type: ignore[arg-type]


class _ConvGradOp(DeclaredShape, _ConvAttrs, BinaryOp):
    """A conv gradient whose result shape (the input's or weight's) is declared."""

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, result_type: Attribute,
                 stride: Sequence[int], padding: Sequence[int], groups: int,
                 dilation: Sequence[int] | None = None):
        super().__init__(a, b, result_type, self.props(stride, padding, groups, dilation))



def _conv_grad_rule(name: str, x: Shape, w: Shape, dy: Shape, target: Shape,
                    attrs: Mapping[str, object]) -> Shape:
    """A conv gradient's rule: the declared `target` (x's or w's shape), valid when the
    conv of x and w has dy's shape."""
    expected = conv_output_shape(x, w, attrs["stride"], attrs["padding"],  # type: ignore
                                 attrs["groups"], name,  # type: ignore[arg-type]
                                 attrs.get("dilation"))  # type: ignore[arg-type]
    if expected != dy:
        raise ShapeError(f"{name}: dy expected {_fmt(expected)}, found {_fmt(dy)}")
    return target


@irdl_op_definition
class ConvGradInputOp(_ConvGradOp):
    """d conv / d input: `frame.conv_grad_input %dy, %w` -> the input's (declared) shape.

    ``%dx = frame.conv_grad_input %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x5x5xf32>``
    """

    name = "frame.conv_grad_input"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        dy, w = shapes
        x = declared_shape(attrs, "frame.conv_grad_input")
        return _conv_grad_rule("frame.conv_grad_input", x, w, dy, x, attrs)


@irdl_op_definition
class ConvGradWeightOp(_ConvGradOp):
    """d conv / d weight: `frame.conv_grad_weight %x, %dy` -> the weight's (declared) shape.

    ``%dw = frame.conv_grad_weight %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<1x3x3x3xf32>) -> tensor<3x2x3x3xf32>``
    """

    name = "frame.conv_grad_weight"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, dy = shapes
        w = declared_shape(attrs, "frame.conv_grad_weight")
        return _conv_grad_rule("frame.conv_grad_weight", x, w, dy, w, attrs)


@irdl_op_definition
class ConvTransposeOp(_ConvAttrs, BinaryOp):
    """Transposed convolution (torch's conv_transpose1d / conv_transpose2d): the input
    gradient of a conv with the same stride, padding, dilation and groups. Weight
    [Cin, Cout/groups, *K]; `output_padding` (optional, 0 when absent, below max(stride,
    dilation)) adds rows at the end of each spatial dim.

    ``%y = frame.conv_transpose %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64, output_padding = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>``
    """

    name = "frame.conv_transpose"
    output_padding = opt_prop_def(DenseArrayBase.constr(i64))

    def __init__(self, x: SSAValue | Operation, w: SSAValue | Operation, stride: Sequence[int],
                 padding: Sequence[int], output_padding: Sequence[int] | None = None,
                 groups: int = 1, dilation: Sequence[int] | None = None):
        props = self.props(stride, padding, groups, dilation)
        props["output_padding"] = None if output_padding is None or not any(output_padding) \
            else _i64s(output_padding)
        super().__init__(x, w, None, props, stride=stride, padding=padding, groups=groups,
                         dilation=dilation, output_padding=output_padding)

    def output_paddings(self) -> list[int]:
        """output_padding, one entry per spatial dim (0 when absent)."""
        return _ints(self.output_padding) or [0] * len(self.conv_attrs()[0])

    def rule_attrs(self) -> dict[str, object]:
        return {**super().rule_attrs(), "output_padding": _ints(self.output_padding)}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, w = shapes
        return conv_transpose_output_shape(
            x, w, attrs["stride"], attrs["padding"], attrs.get("output_padding"),  # type: ignore
            attrs["groups"], attrs.get("dilation"))  # type: ignore[arg-type]



OPS = [ConvOp, ConvGradInputOp, ConvGradWeightOp, ConvTransposeOp]


# --- VJP rules --------------------------------------------------------------------------

Adjoints = list[SSAValue | None]
Emit = Callable[[Operation], SSAValue]


def _vjp_conv(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    st, pad, groups = op.conv_attrs()
    dil = op.dilation_attr()
    dx = emit(ConvGradInputOp(dy, op.rhs, op.lhs.type, st, pad, groups, dil)) \
        if need[0] else None
    dw = emit(ConvGradWeightOp(op.lhs, dy, op.rhs.type, st, pad, groups, dil)) \
        if need[1] else None
    return [dx, dw]


def _vjp_conv_transpose(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    """y = conv_transpose(x, w) is conv_grad_input(x, w) of a conv whose input has y's
    shape: dx = conv(dy, w), dw = conv_grad_weight(dy, x) with dy as that conv's input
    and x as its dy. When output_padding >= stride (allowed below the dilation), that
    conv would see more output positions than x has: dy is then padded explicitly and
    cut to the extent x's positions read, and the convs run unpadded."""
    st, pad, groups = op.conv_attrs()
    dil = op.dilation_attr()
    x, w = op.lhs, op.rhs
    xs, ws = static_shape(x) or (), static_shape(w) or ()
    src, cpad = dy, pad
    if conv_output_shape(static_shape(dy) or (), ws, st, pad, groups, op.name, dil) != xs:
        nsp = len(xs) - 2
        src = emit(PadOp(dy, [0, 0, *pad], [0, 0, *pad]))
        for axis, (size, k, s, d) in enumerate(zip(xs[2:], ws[2:], st, op.dilations(),
                                                   strict=True), 2):
            extent = (size - 1) * s + d * (k - 1) + 1
            if extent < (static_shape(src) or ())[axis]:
                src = emit(SliceOp(src, axis, 0, extent))
        cpad = [0] * nsp
    dx = emit(ConvOp(src, w, st, cpad, groups, dil)) if need[0] else None
    dw = emit(ConvGradWeightOp(src, x, w.type, st, cpad, groups, dil)) if need[1] else None
    return [dx, dw]



VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    ConvOp: _vjp_conv, ConvTransposeOp: _vjp_conv_transpose}


# --- lowerings --------------------------------------------------------------------------


def _mac(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    """acc + x * w as one fma (as the matmul's; frame-gemm recognises this body)."""
    return b.insert(math.FmaOp(a[0], a[1], a[2])).result


def _padded_shape(shape: Sequence[int], padding: Sequence[int],
                  high: Sequence[int] | None = None) -> tuple[int, ...]:
    """[N, C, *S] with `padding` added before each spatial dim and `high` (`padding` when
    None) after it."""
    high = padding if high is None else high
    return (*shape[:2], *(s + p + h for s, p, h in zip(shape[2:], padding, high, strict=True)))


def _pad(lw: Any, x: SSAValue, padding: Sequence[int], value: float = 0.0,
         high: Sequence[int] | None = None) -> SSAValue:
    """`x` [N, C, *S] padded with `value`: `padding` before each spatial dim, `high`
    (`padding` when None) after it."""
    high = padding if high is None else high
    if not any(padding) and not any(high):
        return x
    shape = static_shape(x) or ()
    rank = len(shape)
    padded = _padded_shape(shape, padding, high)
    init = _border_filled(lw, TensorType(element_type(x), padded), shape, padding, high, value)
    if any(p == 0 and h for p, h in zip(padding, high, strict=True)):
        # Only after a dim (ceil_mode): its bare loop dim cannot index the longer side.
        return _window_copy(lw, x, init, [0] * rank, [0, 0, *padding])
    dims = [AffineExpr.dimension(d) for d in range(rank)]
    out = AffineMapAttr(AffineMap(rank, 0, (*dims[:2], *(d + p for d, p in zip(
        dims[2:], padding, strict=True)))))
    return lw.generic([x], init, [identity_map(rank), out], [PAR] * rank, lambda b, a: a[0])


def _border_filled(lw: Any, typ: TensorType, inner: Sequence[int], padding: Sequence[int],
                   high: Sequence[int], value: float) -> SSAValue:
    """A tensor of `typ` whose padding -- `padding` before and `high` after each spatial
    dim of `inner` -- holds `value`, its inside left for the caller to write: strips of
    the padded sides (corners written twice) instead of a fill of the whole tensor that
    the copy of the inside writes over again (ResNet-18's max pool pads 26 MB).

    Each spatial dim's strips are one generic over (n, c, ..., u, dim, ...): the dim
    indexed `d + u * step + offset`, where u runs over the strips -- two when the
    padding is the same on both sides (step: from one strip to the other), else one per
    generic -- bounded, as the strip's width, by a shape-only operand. u sits just
    outside its dim, so a row's left and right padding are written together."""
    t = lw.empty(typ)
    rank = len(typ.get_shape())
    for axis, (size, lo, hi) in enumerate(zip(inner[2:], padding, high, strict=True), 2):
        if lo == hi:
            strips = [(2, lo + size, 0, lo)] if lo else []
        else:
            strips = [(1, 1, off, ext) for off, ext in ((0, lo), (lo + size, hi)) if ext]
        u = AffineExpr.dimension(axis)
        d = [AffineExpr.dimension(i + (i >= axis)) for i in range(rank)]
        for trips, step, offset, extent in strips:
            out = AffineMapAttr(AffineMap(rank + 1, 0, tuple(
                e + u * step + offset if i == axis else e for i, e in enumerate(d))))
            bound = AffineMapAttr(AffineMap(rank + 1, 0, (u, d[axis])))
            shape_only = lw.empty(TensorType(typ.element_type, [trips, extent]))
            t = lw.generic([shape_only], t, [bound, out], [PAR] * (rank + 1),
                           lambda b, a: _f32_const(b, value))
    return t


def _crop(lw: Any, padded: SSAValue, padding: Sequence[int], typ: TensorType) -> SSAValue:
    """The inside of a padded f32 gradient from offset `padding`, stored as `typ` (undoes
    `_pad`)."""
    if not any(padding) and static_shape(padded) == tuple(typ.get_shape()):
        return _round_to(lw, padded, typ)
    rank = typ.get_num_dims()
    if any(p == 0 and big != small for p, big, small in zip(
            padding, (static_shape(padded) or ())[2:], typ.get_shape()[2:], strict=True)):
        # Padded only after a dim (ceil_mode): see `_pad`.
        return _window_copy(lw, padded, lw.empty(typ), [0, 0, *padding], [0] * rank)
    dims = [AffineExpr.dimension(i) for i in range(rank)]
    inner = AffineMapAttr(AffineMap(rank, 0, (*dims[:2], *(dd + p for dd, p in zip(
        dims[2:], padding, strict=True)))))
    return lw.generic([padded], lw.empty(typ), [inner, identity_map(rank)], [PAR] * rank,
                      lambda b, a: a[0])


def _tap(out: AffineExpr, stride: int, k: AffineExpr, dilation: int) -> AffineExpr:
    """The input position `out * stride + k * dilation` a kernel tap reads (the plain
    `out * stride + k` without dilation, as frame-gemm has always seen it)."""
    return out * stride + (k if dilation == 1 else k * dilation)


def _conv_maps(x_shape: Sequence[int], w_shape: Sequence[int], stride: Sequence[int],
               groups: int, dilation: Sequence[int] | None = None
               ) -> tuple[int, AffineMapAttr, AffineMapAttr, AffineMapAttr,
                          list[linalg_attrs.IteratorTypeAttr]]:
    """Iteration space (n, o, c, *k, *out) of a conv and the maps of its padded input,
    weight and output."""
    nsp = len(x_shape) - 2
    dil = [1] * nsp if dilation is None else list(dilation)
    ndims = 3 + 2 * nsp
    d = [AffineExpr.dimension(i) for i in range(ndims)]
    n, o, c, ks, outs = d[0], d[1], d[2], d[3:3 + nsp], d[3 + nsp:]
    cout_per_group, cin_per_group = w_shape[0] // groups, w_shape[1]
    chan = c if groups == 1 else (o // cout_per_group) * cin_per_group + c
    x_map = AffineMapAttr(AffineMap(ndims, 0, (n, chan, *(_tap(out, st, k, dl) for out, st, k, dl
                                                          in zip(outs, stride, ks, dil,
                                                                 strict=True)))))
    w_map = AffineMapAttr(AffineMap(ndims, 0, (o, c, *ks)))
    y_map = AffineMapAttr(AffineMap(ndims, 0, (n, o, *outs)))
    its = [PAR, PAR, RED, *[RED] * nsp, *[PAR] * nsp]
    return ndims, x_map, w_map, y_map, its


def _lower_conv(lw: Any, op: Any) -> SSAValue:
    st, pad, groups = op.conv_attrs()
    xp = _pad(lw, op.lhs, pad)
    _, x_map, w_map, y_map, its = _conv_maps(static_shape(xp) or (), static_shape(op.rhs) or (),
                                             st, groups, op.dilations())
    init = lw.filled(_accumulator_type(_result_type(op)), 0.0)
    y = lw.generic([xp, op.rhs], init, [x_map, w_map, y_map], its, _mac)
    return _round_to(lw, y, _result_type(op))


def _input_grad(lw: Any, dy: SSAValue, w: SSAValue, typ: TensorType, st: Sequence[int],
                pad: Sequence[int], groups: int, dil: Sequence[int]) -> SSAValue:
    """A conv's input gradient (of type `typ`): for stride 1 (undilated, padding <=
    K - 1) on large images a conv of the padded dy (`_input_grad_as_conv`); otherwise
    a GEMM and a col2im: `dcol[n, c, *k, *out] = sum_o w[o, c, *k] * dy[n, o, *out]`
    (a contraction `frame-gemm` blocks: rows
    (c, *k) of the weight, columns the output positions, no gathers), then each column
    entry is added into the padded input gradient at `out * stride + k * dilation`, in
    (k, out) order, and cropped. Grouped convolutions keep the direct scatter
    (`_input_grad_scatter`)."""
    if groups != 1:
        return _input_grad_scatter(lw, dy, w, typ, st, pad, groups, dil)
    shape = tuple(typ.get_shape())
    w_shape = static_shape(w) or ()
    dy_shape = static_shape(dy) or ()
    nsp = len(shape) - 2
    ks, outs = w_shape[2:], dy_shape[2:]
    # Stride 1: the input gradient is itself a convolution (of dy padded by K - 1 - p,
    # with the weight's channels swapped and its taps flipped), which frame-gemm runs
    # through its column table with no column buffer (ResNet-18's 56 x 56 layers: 58 MB
    # written by the GEMM and read back by a col2im that did not scale with threads).
    # Small images keep the GEMM + col2im (`CONV_GRAD_MIN_PIXELS`).
    low = [k - 1 - p for k, p in zip(ks, pad, strict=True)]
    high = [x + k - 1 - o - lo for x, k, o, lo in zip(shape[2:], ks, outs, low, strict=True)]
    if prod(shape[2:]) >= CONV_GRAD_MIN_PIXELS and all(s == 1 for s in st) and \
            all(d == 1 for d in dil) and min(low) >= 0 and min(high) >= 0:
        return _input_grad_as_conv(lw, dy, w, typ, low, high)
    # (n, c, *k, *out, o): dcol[n, c, *k, *out] += w[o, c, *k] * dy[n, o, *out]
    ndims = 3 + 2 * nsp
    e = [AffineExpr.dimension(i) for i in range(ndims)]
    n, c, kk, oo, o = e[0], e[1], e[2:2 + nsp], e[2 + nsp:2 + 2 * nsp], e[-1]
    w_map = AffineMapAttr(AffineMap(ndims, 0, (o, c, *kk)))
    dy_map = AffineMapAttr(AffineMap(ndims, 0, (n, o, *oo)))
    col_map = AffineMapAttr(AffineMap(ndims, 0, (n, c, *kk, *oo)))
    col_type = TensorType(f32, [shape[0], shape[1], *ks, *outs])
    dcol = lw.generic([w, dy], lw.filled(col_type, 0.0), [w_map, dy_map, col_map],
                      [*[PAR] * (ndims - 1), RED], _mac)
    # col2im: dxp[n, c, *(out * s + k * d)] += dcol[n, c, *k, *out]
    rank = 2 + 2 * nsp
    d = [AffineExpr.dimension(i) for i in range(rank)]
    dk, do = d[2:2 + nsp], d[2 + nsp:]
    scatter_map = AffineMapAttr(AffineMap(rank, 0, (d[0], d[1], *(
        _tap(out, s, k, dl) for out, s, k, dl in zip(do, st, dk, dil, strict=True)))))
    padded = _padded_shape(shape, pad)
    dxp = lw.generic([dcol], lw.filled(TensorType(f32, padded), 0.0),
                     [identity_map(rank), scatter_map], _scatter_iterators(rank, 2),
                     lambda b, a: b.insert(arith.AddfOp(a[1], a[0])).result)
    return _crop(lw, dxp, pad, typ)


CONV_GRAD_MIN_PIXELS = 256
"""The fewest input pixels (per image and channel) at which a stride-1 conv's input
gradient is computed as a conv (`_input_grad_as_conv`) rather than a GEMM and a col2im.
The col2im form's weight rows are contiguous, so frame-gemm can read them in place when
there are few columns; the conv form's cannot be (k spans o and the taps). ResNet-18 at
batch 8, one thread, one process interleaved: at 64 x 64 (layers of 16 x 16 down to
2 x 2) the conv form everywhere 91.1 ms a step, col2im everywhere 86.0, from 8 x 8 up
86.6, from 16 x 16 up 85.1; at 224 x 224 it gains 1-2 % (col2im written and read back
at 56 x 56 and 28 x 28, 2.4 and 1.1 ms a call)."""


def _input_grad_as_conv(lw: Any, dy: SSAValue, w: SSAValue, typ: TensorType,
                        low: Sequence[int], high: Sequence[int]) -> SSAValue:
    """A stride-1, undilated, ungrouped conv's input gradient as the conv
    `dx[n, c, *x] = sum_(o, *j) dyp[n, o, *(x + K - 1 - j)] * w[o, c, *j]`: `dyp` is
    dy padded by `low` before and `high` after each spatial dim (K - 1 - p and the
    rest), the weight read in place (channels swapped by the map, no flipped copy).
    Each element sums (o, *j) in that order, one fma each, as `_lower_conv`."""
    w_shape = static_shape(w) or ()
    nsp = len(w_shape) - 2
    dyp = _pad(lw, dy, low, high=high)
    # The conv's iteration space (n, c, o, *j, *x) and output map, with j = K - 1 - k:
    # the weight is read in place at (o, c, *j) (linalg's maps must stay invertible, so
    # the flip is in the input's map).
    ndims, _, _, y_map, its = _conv_maps(static_shape(dyp) or (),
                                         (w_shape[1], w_shape[0], *w_shape[2:]), [1] * nsp, 1)
    d = [AffineExpr.dimension(i) for i in range(ndims)]
    n, c, o, js, xs = d[0], d[1], d[2], d[3:3 + nsp], d[3 + nsp:]
    x_map = AffineMapAttr(AffineMap(ndims, 0, (n, o, *(
        x + AffineExpr.constant(k - 1) - j for x, j, k in zip(xs, js, w_shape[2:], strict=True)))))
    w_map = AffineMapAttr(AffineMap(ndims, 0, (o, c, *js)))
    init = lw.filled(_accumulator_type(typ), 0.0)
    dx = lw.generic([dyp, w], init, [x_map, w_map, y_map], its, _mac)
    return _round_to(lw, dx, typ)


def _input_grad_scatter(lw: Any, dy: SSAValue, w: SSAValue, typ: TensorType,
                        st: Sequence[int], pad: Sequence[int], groups: int,
                        dil: Sequence[int]) -> SSAValue:
    """Scatter-accumulate w * dy into the padded input's gradient, then crop."""
    shape = tuple(typ.get_shape())
    padded = _padded_shape(shape, pad)
    _, x_map, w_map, y_map, its = _conv_maps(padded, static_shape(w) or (), st, groups, dil)
    init = lw.filled(TensorType(f32, padded), 0.0)
    # Each iteration adds its w * dy to the input position it came from, so distinct
    # (o, c, k, out) may hit one element: only n is parallel (see `_scatter_iterators`).
    dxp = lw.generic([w, dy], init, [w_map, y_map, x_map], _scatter_iterators(len(its), 1),
                     _mac)
    return _crop(lw, dxp, pad, typ)


def _lower_input_grad(lw: Any, op: Any) -> SSAValue:
    """conv_grad_input(dy, w), and conv_transpose(x, w) as the same computation into y's
    shape (the rows output_padding adds at the end of a dim get what reaches them:
    nothing past the last tap, so zeros)."""
    st, pad, groups = op.conv_attrs()
    return _input_grad(lw, op.lhs, op.rhs, _result_type(op), st, pad, groups, op.dilations())


def _depthwise_grad_weight(lw: Any, xp: SSAValue, dy: SSAValue, typ: TensorType,
                           stride: Sequence[int], dilation: Sequence[int]) -> SSAValue:
    """dw[o, 0, *k] of a depthwise conv (one input and one output channel per group), in
    two generics whose innermost loop is parallel, so that they vectorize.

    The grouped conv's generic sums each of the few dw elements (9 per channel for 3 x 3)
    over the batch and the output plane in one chain of dependent adds, the last output
    dim innermost: MobileNet-v2's depthwise weight gradients ran at 1-2 GFLOP/s, a third
    of its step. Here the first generic keeps one partial sum per position of the last
    output dim, loops (o, 0, *k, n, *out[:-1], out[-1]) with out[-1] innermost and
    parallel: partial[o, 0, *k, j] sums the batch and the other output dims in row-major
    order. The second sums each dw element's partials in index order. The order depends
    on the shapes only: the same bits for every thread count and vector width."""
    nsp = len(stride)
    wshape = list(typ.get_shape())
    ow = (static_shape(dy) or ())[-1]
    ndims = 3 + 2 * nsp
    d = [AffineExpr.dimension(i) for i in range(ndims)]
    o, c, ks, n, outs = d[0], d[1], d[2:2 + nsp], d[2 + nsp], d[3 + nsp:]
    taps = [_tap(out, st, k, dl) for out, st, k, dl in zip(outs, stride, ks, dilation,
                                                            strict=True)]
    x_map = AffineMapAttr(AffineMap(ndims, 0, (n, o + c, *taps)))
    dy_map = AffineMapAttr(AffineMap(ndims, 0, (n, o, *outs)))
    part_map = AffineMapAttr(AffineMap(ndims, 0, (o, c, *ks, outs[-1])))
    its = [PAR, PAR, *[PAR] * nsp, RED, *[RED] * (nsp - 1), PAR]
    parts = lw.generic([xp, dy], lw.filled(TensorType(f32, [*wshape, ow]), 0.0),
                       [x_map, dy_map, part_map], its, _mac)
    rank = len(wshape) + 1
    dw = lw.generic([parts], lw.filled(_accumulator_type(typ), 0.0),
                    [identity_map(rank), AffineMapAttr(AffineMap(
                        rank, 0, tuple(AffineExpr.dimension(i) for i in range(rank - 1))))],
                    [*[PAR] * (rank - 1), RED],
                    lambda b, a: b.insert(arith.AddfOp(a[1], a[0])).result)
    return _round_to(lw, dw, typ)


def _lower_conv_grad_weight(lw: Any, op: Any) -> SSAValue:
    st, pad, groups = op.conv_attrs()
    xp = _pad(lw, op.lhs, pad)
    typ = _result_type(op)
    wshape = tuple(typ.get_shape())
    if groups > 1 and wshape[0] == groups and wshape[1] == 1:
        return _depthwise_grad_weight(lw, xp, op.rhs, typ, st, op.dilations())
    _, x_map, w_map, y_map, its = _conv_maps(static_shape(xp) or (), tuple(typ.get_shape()),
                                             st, groups, op.dilations())
    init = lw.filled(_accumulator_type(typ), 0.0)
    # (n, o, c, *k, *out): dw[o, c, *k] sums over the batch and the output positions.
    nsp = (len(its) - 3) // 2
    dw_its = [RED, PAR, PAR, *[PAR] * nsp, *[RED] * nsp]
    dw = lw.generic([xp, op.rhs], init, [x_map, y_map, w_map], dw_its, _mac)
    return _round_to(lw, dw, typ)


def _scatter_iterators(ndims: int, parallel: int) -> list[linalg_attrs.IteratorTypeAttr]:
    """Iterator types of a scatter-style generic (a gradient written at `out * stride +
    k`): only the leading `parallel` dims (batch, and channel for pooling) never send
    two iterations to one output element; every other dim is a reduction, so a pass
    that parallelises or reorders "parallel" loops cannot race on them."""
    return [PAR] * parallel + [RED] * (ndims - parallel)



LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    ConvOp: _lower_conv, ConvGradInputOp: _lower_input_grad,
    ConvGradWeightOp: _lower_conv_grad_weight, ConvTransposeOp: _lower_input_grad}
