"""The frame dialect's convolution and pooling family -- ops, shape rules, verifiers, VJP
rules and lowerings in this one file (like `frame_math.py`):

  * `frame.conv` (N-d cross-correlation: stride, symmetric zero padding, `dilation`,
    groups) and its gradient ops `frame.conv_grad_input` / `frame.conv_grad_weight`;
  * `frame.conv_transpose` (torch's conv_transpose1d/2d: stride, padding,
    `output_padding`, dilation, groups; weight [Cin, Cout/groups, *K]);
  * `frame.max_pool` / `frame.avg_pool` (`ceil_mode`; `count_include_pad` for the
    average) and their gradient ops `frame.max_pool_grad` / `frame.avg_pool_grad`;
  * `frame.global_avg_pool` / `frame.global_max_pool`: [N, C, *S] -> [N, C, 1, ...].

Layout NC* (NCL, NCHW, ...), PyTorch's semantics, f32 or f16 storage with f32
arithmetic. `dilation`, `output_padding`, `ceil_mode` and `count_include_pad` are
optional attributes whose absence means torch's default (1, 0, false, true), so IR
written before them reads and lowers exactly as it did.

Numerics:
  * conv: an f32 accumulator per output element, one fma per (c, *k) in that order;
    its input gradient is a GEMM (`dcol = w^T dy`, which `frame-gemm` blocks) and a
    col2im that adds each column entry at `out * stride + k * dilation` of the padded
    input gradient in (k, out) order; the weight gradient sums over (n, *out).
  * conv_transpose is a conv's input gradient (the same GEMM + col2im), its VJP a conv
    (for x) and a conv weight gradient with x as dy (for w).
  * max_pool is PyTorch's scan (`max_takes`: greater or NaN replaces); its gradient
    sends dy to the position torch records (the first of tied maxima, the last NaN;
    where nothing beats -inf the first cell inside the input).
  * avg_pool divides the window sum by torch's divisor: with count_include_pad the
    window clipped to [-padding, size + padding) (the whole kernel unless ceil_mode lets
    a window run past that), without it the window clipped to the input.
  * global_avg_pool is torch.mean over the spatial dims (frame.sum's f32 sums, blocked
    or per column when large); global_max_pool the max scan over them (NaN wins).
    Their VJPs are the pool gradient ops with the full window (kernel = stride = the
    spatial size): dy / (H*W) everywhere, and dy to torch's adaptive_max_pool argmax
    (the same scan as max_pool's).

Why dedicated global pool ops rather than max_pool / avg_pool with the full window: the
result [N, C, 1, ...] does not depend on the spatial size, so a frontend can emit them
before shapes are known (torch's AdaptiveAvgPool2d(1) / AdaptiveMaxPool2d(1)), and the
forward lowers to a plain reduction over the contiguous spatial dims (vectorized, with
frame.sum's accurate f32 sums) instead of a window scan whose innermost loop is the
single output column. The gradients reuse the pool gradient ops unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, builtin, math
from xdsl.dialects.builtin import (
    AffineMapAttr,
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.dialects.linalg import attrs as linalg_attrs
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from frame_mlir.dialects.frame import (
    AnyF32Tensor,
    BinaryOp,
    FrameOp,
    Shape,
    ShapeError,
    UnaryOp,
    _fmt,
    element_type,
    static_shape,
    tensor_type,
)
from frame_mlir.dialects.frame_movement import PadOp, SliceOp, _window_copy
from frame_mlir.dialects.frame_reduce import expand_kept
from frame_mlir.passes.linalg_utils import PAR, RED, dims_map, identity_map, max_takes
from frame_mlir.passes.linalg_utils import f32_const as _f32


def _ints(attr: DenseArrayBase | None) -> list[int] | None:
    return None if attr is None else [int(v) for v in attr.get_values()]


def _i64s(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _ones(values: Sequence[int] | None) -> bool:
    return values is None or all(v == 1 for v in values)


# --- shape rules --------------------------------------------------------------------------


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


def pool_extent(size: int, kernel: int, stride: int, padding: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: floor (or ceil) of (size + 2p - k) / s, plus 1; with
    ceil_mode the last window must start inside the input or its left padding."""
    if not ceil_mode:
        return (size + 2 * padding - kernel) // stride + 1
    out = (size + 2 * padding - kernel + stride - 1) // stride + 1
    if (out - 1) * stride >= size + padding:
        out -= 1
    return out


def pool_output_shape(x: Shape, kernel: Sequence[int], stride: Sequence[int],
                      padding: Sequence[int], what: str, ceil_mode: bool = False) -> Shape:
    """[N, C, H, W] -> [N, C, (H+2p-K)//s+1, ...] (rounded up with `ceil_mode`, as torch);
    padding at most half the kernel."""
    if len(x) != 2 + len(kernel) or not (len(kernel) == len(stride) == len(padding)):
        raise ShapeError(f"{what}: expected an [N, C, *spatial] input with one kernel, stride "
                         f"and padding entry per spatial dim, found {_fmt(x)} and "
                         f"{len(kernel)}/{len(stride)}/{len(padding)} entries")
    out = list(x[:2])
    for size, k, st, p in zip(x[2:], kernel, stride, padding, strict=True):
        need = ("kernel >= 1" if k < 1 else "stride >= 1" if st < 1 else
                "padding >= 0" if p < 0 else "2 * padding <= kernel" if 2 * p > k else None)
        if need is None and not ceil_mode and size + 2 * p < k:
            need = "kernel <= size + 2 * padding"
        if need is None and ceil_mode and size + 2 * p + st - 1 < k:
            need = "kernel <= size + 2 * padding + stride - 1, with ceil_mode"
        if need is not None:
            raise ShapeError(f"{what}: kernel {k}, stride {st}, padding {p} do not fit a "
                             f"spatial size of {size} (need {need})")
        out.append(pool_extent(size, k, st, p, ceil_mode))
    return tuple(out)


def global_pool_shape(x: Shape, what: str) -> Shape:
    """[N, C, *S] -> [N, C, 1, ...]: one value per (n, c) over non-empty spatial dims."""
    if len(x) < 3 or any(d < 1 for d in x[2:]):
        raise ShapeError(f"{what}: expected an [N, C, *spatial] input with non-empty spatial "
                         f"dims, found {_fmt(x)}")
    return (x[0], x[1], *[1] * (len(x) - 2))


# --- ops ------------------------------------------------------------------------------------


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


class _ConvGradOp(_ConvAttrs, BinaryOp):
    """A conv gradient whose result shape (the input's or weight's) is declared."""

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, result_type: Attribute,
                 stride: Sequence[int], padding: Sequence[int], groups: int,
                 dilation: Sequence[int] | None = None):
        super().__init__(a, b, result_type, self.props(stride, padding, groups, dilation))

    def conv_shapes(self, shapes: Sequence[Shape], target: Shape) -> tuple[Shape, Shape]:
        raise NotImplementedError

    def dy_shape(self, shapes: Sequence[Shape]) -> Shape:
        raise NotImplementedError

    def infer_shape(self, shapes: Sequence[Shape]) -> Shape:
        target = static_shape(self.result)
        if target is None:
            raise ShapeError(f"{self.name}: the result type must be static")
        st, p, g = self.conv_attrs()
        x, w = self.conv_shapes(shapes, target)
        expected = conv_output_shape(x, w, st, p, g, self.name, self.dilation_attr())
        if expected != self.dy_shape(shapes):
            raise ShapeError(f"{self.name}: dy expected {_fmt(expected)}, found "
                             f"{_fmt(self.dy_shape(shapes))}")
        return target


@irdl_op_definition
class ConvGradInputOp(_ConvGradOp):
    """d conv / d input: `frame.conv_grad_input %dy, %w` -> the input's (declared) shape.

    ``%dx = frame.conv_grad_input %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x5x5xf32>``
    """

    name = "frame.conv_grad_input"

    def conv_shapes(self, shapes: Sequence[Shape], target: Shape) -> tuple[Shape, Shape]:
        return target, shapes[1]

    def dy_shape(self, shapes: Sequence[Shape]) -> Shape:
        return shapes[0]


@irdl_op_definition
class ConvGradWeightOp(_ConvGradOp):
    """d conv / d weight: `frame.conv_grad_weight %x, %dy` -> the weight's (declared) shape.

    ``%dw = frame.conv_grad_weight %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<1x3x3x3xf32>) -> tensor<3x2x3x3xf32>``
    """

    name = "frame.conv_grad_weight"

    def conv_shapes(self, shapes: Sequence[Shape], target: Shape) -> tuple[Shape, Shape]:
        return shapes[0], target

    def dy_shape(self, shapes: Sequence[Shape]) -> Shape:
        return shapes[1]


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


class _PoolAttrs:
    """kernel / stride / padding (one entry per spatial dim) and `ceil_mode` of the pool
    ops."""

    kernel = prop_def(DenseArrayBase.constr(i64))
    stride = prop_def(DenseArrayBase.constr(i64))
    padding = prop_def(DenseArrayBase.constr(i64))
    ceil_mode = opt_prop_def(UnitAttr)

    @staticmethod
    def props(kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
              ceil_mode: bool = False) -> dict[str, Attribute | None]:
        return {"kernel": _i64s(kernel), "stride": _i64s(stride), "padding": _i64s(padding),
                "ceil_mode": UnitAttr() if ceil_mode else None}

    def pool_attrs(self) -> tuple[list[int], list[int], list[int]]:
        """(kernel, stride, padding)."""
        return (_ints(self.kernel) or [], _ints(self.stride) or [],  # type: ignore[arg-type]
                _ints(self.padding) or [])  # type: ignore[arg-type]

    def ceils(self) -> bool:
        return self.ceil_mode is not None

    def rule_attrs(self) -> dict[str, object]:
        k, st, p = self.pool_attrs()
        return {"kernel": k, "stride": st, "padding": p, "ceil_mode": self.ceils(),
                "what": self.name}  # type: ignore[attr-defined]


def _pool_rule(shapes: Sequence[Shape], attrs: dict[str, object]) -> Shape:
    return pool_output_shape(shapes[0], attrs["kernel"], attrs["stride"],  # type: ignore
                             attrs["padding"], str(attrs.get("what", "pool")),  # type: ignore
                             bool(attrs.get("ceil_mode")))


def _include_pad_prop(count_include_pad: bool) -> Attribute | None:
    """count_include_pad's property: absent for true (torch's default)."""
    return None if count_include_pad else IntegerAttr.from_bool(False)


def includes_pad(op: Any) -> bool:
    """An avg pool op's count_include_pad (true when absent)."""
    return op.count_include_pad is None or bool(op.count_include_pad.value.data)


class _PoolOp(_PoolAttrs, UnaryOp):
    def _build(self, input: SSAValue | Operation, kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], ceil_mode: bool,
               extra: dict[str, Attribute | None]) -> None:
        ops = [SSAValue.get(input)]
        rtype = self.result_type_for(ops, kernel=kernel, stride=stride, padding=padding,
                                     ceil_mode=ceil_mode, what=self.name)
        UnaryOp.__init__(self, input, rtype,
                         {**self.props(kernel, stride, padding, ceil_mode), **extra})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _pool_rule(shapes, attrs)


@irdl_op_definition
class MaxPoolOp(_PoolOp):
    """Max over windows (padding counts as -inf), NC* layout; `ceil_mode` as torch's.

    ``%y = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>``
    ``%y = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>``
    """

    name = "frame.max_pool"

    def __init__(self, input: SSAValue | Operation, kernel: Sequence[int],
                 stride: Sequence[int], padding: Sequence[int], ceil_mode: bool = False):
        self._build(input, kernel, stride, padding, ceil_mode, {})


@irdl_op_definition
class AvgPoolOp(_PoolOp):
    """Mean over windows (padding counts as 0); the divisor is torch's: the window
    clipped to [-padding, size + padding) -- the whole kernel unless `ceil_mode` lets a
    window run past it -- or, with `count_include_pad = false`, clipped to the input.

    ``%y = frame.avg_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>``
    ``%y = frame.avg_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode, count_include_pad = false} : (tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32>``
    """

    name = "frame.avg_pool"
    count_include_pad = opt_prop_def(BoolAttr)

    def __init__(self, input: SSAValue | Operation, kernel: Sequence[int],
                 stride: Sequence[int], padding: Sequence[int], ceil_mode: bool = False,
                 count_include_pad: bool = True):
        self._build(input, kernel, stride, padding, ceil_mode,
                    {"count_include_pad": _include_pad_prop(count_include_pad)})


@irdl_op_definition
class MaxPoolGradOp(_PoolAttrs, FrameOp):
    """d max_pool / d x: dy goes to the window position torch's max_pool records as the
    argmax (the first of tied maxima, the last NaN). Same attributes as the max_pool.

    ``%dx = frame.max_pool_grad %x, %y, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>``
    """

    name = "frame.max_pool_grad"
    x = operand_def(AnyF32Tensor)
    y = operand_def(AnyF32Tensor)
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    assembly_format = "$x `,` $y `,` $dy attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue | Operation, y: SSAValue | Operation,
                 dy: SSAValue | Operation, kernel: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], ceil_mode: bool = False):
        xv = SSAValue.get(x)
        super().__init__(operands=[xv, SSAValue.get(y), SSAValue.get(dy)],
                         result_types=[xv.type],
                         properties=self.props(kernel, stride, padding, ceil_mode))

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, y, dy = shapes
        expected = _pool_rule([x], {**attrs, "what": "frame.max_pool_grad"})
        if y != expected or dy != expected:
            raise ShapeError(f"frame.max_pool_grad: y and dy expected {_fmt(expected)}, found "
                             f"{_fmt(y)} and {_fmt(dy)}")
        return x


@irdl_op_definition
class AvgPoolGradOp(_PoolAttrs, UnaryOp):
    """d avg_pool / d x: each dy divided by its window's divisor (as the avg_pool's, same
    attributes) and added to every cell of the window; result: x's (declared) shape.

    ``%dx = frame.avg_pool_grad %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>``
    """

    name = "frame.avg_pool_grad"
    count_include_pad = opt_prop_def(BoolAttr)

    def __init__(self, dy: SSAValue | Operation, result_type: Attribute, kernel: Sequence[int],
                 stride: Sequence[int], padding: Sequence[int], ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__(dy, result_type, {
            **self.props(kernel, stride, padding, ceil_mode),
            "count_include_pad": _include_pad_prop(count_include_pad)})

    def infer_shape(self, shapes: Sequence[Shape]) -> Shape:
        target = static_shape(self.result)
        if target is None:
            raise ShapeError("frame.avg_pool_grad: the result type must be static")
        k, st, p = self.pool_attrs()
        expected = pool_output_shape(target, k, st, p, self.name, self.ceils())
        if shapes[0] != expected:
            raise ShapeError(f"frame.avg_pool_grad: dy expected {_fmt(expected)}, found "
                             f"{_fmt(shapes[0])}")
        return target


@irdl_op_definition
class GlobalAvgPoolOp(UnaryOp):
    """The mean over all spatial dims, per (n, c): torch's adaptive_avg_pool(x, 1).

    ``%y = frame.global_avg_pool %x : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>``
    """

    name = "frame.global_avg_pool"

    def __init__(self, input: SSAValue | Operation):
        super().__init__(input)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return global_pool_shape(shapes[0], "frame.global_avg_pool")


@irdl_op_definition
class GlobalMaxPoolOp(UnaryOp):
    """The max over all spatial dims, per (n, c), NaN propagating: torch's
    adaptive_max_pool(x, 1).

    ``%y = frame.global_max_pool %x : (tensor<2x3x7xf32>) -> tensor<2x3x1xf32>``
    """

    name = "frame.global_max_pool"

    def __init__(self, input: SSAValue | Operation):
        super().__init__(input)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return global_pool_shape(shapes[0], "frame.global_max_pool")


OPS = [ConvOp, ConvGradInputOp, ConvGradWeightOp, ConvTransposeOp, MaxPoolOp, AvgPoolOp,
       MaxPoolGradOp, AvgPoolGradOp, GlobalAvgPoolOp, GlobalMaxPoolOp]


# --- VJP rules ------------------------------------------------------------------------------

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


def _vjp_max_pool(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(MaxPoolGradOp(op.input, op.result, dy, *op.pool_attrs(), op.ceils()))]


def _vjp_avg_pool(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(AvgPoolGradOp(dy, op.input.type, *op.pool_attrs(), op.ceils(),
                               includes_pad(op)))]


def _full_window(op: Any) -> tuple[list[int], list[int], list[int]]:
    """(kernel, stride, padding) of a pool whose one window is the whole input."""
    spatial = list((static_shape(op.input) or ())[2:])
    return spatial, spatial, [0] * len(spatial)


def _vjp_global_avg_pool(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(AvgPoolGradOp(dy, op.input.type, *_full_window(op)))]


def _vjp_global_max_pool(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(MaxPoolGradOp(op.input, op.result, dy, *_full_window(op)))]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    ConvOp: _vjp_conv, ConvTransposeOp: _vjp_conv_transpose, MaxPoolOp: _vjp_max_pool,
    AvgPoolOp: _vjp_avg_pool, GlobalAvgPoolOp: _vjp_global_avg_pool,
    GlobalMaxPoolOp: _vjp_global_max_pool}


# --- lowerings ------------------------------------------------------------------------------


def _result_type(op: Operation) -> TensorType:
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ


def _accumulator_type(typ: TensorType) -> TensorType:
    """Reductions accumulate in f32 whatever the storage type."""
    return TensorType(f32, typ.get_shape())


def _round_to(lw: Any, value: SSAValue, typ: TensorType) -> SSAValue:
    """`value` (an f32 accumulator) stored as `typ`: a rounding pass when they differ."""
    if value.type == typ:
        return value
    return lw.elementwise([value], typ, lambda b, a: a[0])


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
    init = lw.filled(TensorType(element_type(x), padded), value)
    if any(p == 0 and h for p, h in zip(padding, high, strict=True)):
        # Only after a dim (ceil_mode): its bare loop dim cannot index the longer side.
        return _window_copy(lw, x, init, [0] * rank, [0, 0, *padding])
    dims = [AffineExpr.dimension(d) for d in range(rank)]
    out = AffineMapAttr(AffineMap(rank, 0, (*dims[:2], *(d + p for d, p in zip(
        dims[2:], padding, strict=True)))))
    return lw.generic([x], init, [identity_map(rank), out], [PAR] * rank, lambda b, a: a[0])


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
    """A conv's input gradient (of type `typ`) as a GEMM and a col2im: `dcol[n, c, *k,
    *out] = sum_o w[o, c, *k] * dy[n, o, *out]` (a contraction `frame-gemm` blocks: rows
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


def _lower_conv_grad_weight(lw: Any, op: Any) -> SSAValue:
    st, pad, groups = op.conv_attrs()
    xp = _pad(lw, op.lhs, pad)
    typ = _result_type(op)
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


@dataclass(frozen=True)
class _PoolSpace:
    """The loops of a pooling generic: maps of the padded input, the output and the
    window (a shape-only operand that bounds the k loops, as in MLIR's pooling ops:
    linalg needs every loop to be bounded by some operand dimension), the iterator
    types, and the loop of the first window dim (for `linalg.index`)."""

    x_map: AffineMapAttr
    y_map: AffineMapAttr
    w_map: AffineMapAttr
    iterators: list[linalg_attrs.IteratorTypeAttr]
    first_k: int


def _pool_space(rank: int, kernel: Sequence[int], stride: Sequence[int],
                scatter: bool = False) -> _PoolSpace:
    """Loops (n, c, *out[:-1], *k, out[-1]): the window loops sit outside the last output
    dim. Each output element still scans its window in row-major order, but the
    innermost loop walks a row of outputs, so it is parallel and vectorizes (with the
    window innermost it would be a 2-long scan per element): 3x faster on LeNet's
    first pool.

    A `scatter` (a gradient written at `out * stride + k`, read from the output-shaped
    dy) keeps that order only where windows do not overlap (stride >= kernel in every
    dim): then each iteration writes its own element, every loop is parallel and the
    order of additions does not matter. Overlapping windows keep the loops
    (n, c, *out, *k), all but n and c reductions, so an element's contributions add up
    in the order they always did (`_scatter_iterators`)."""
    nsp = rank - 2
    ndims = rank + nsp
    d = [AffineExpr.dimension(i) for i in range(ndims)]
    overlapping = any(st < k for st, k in zip(stride, kernel, strict=True))
    if scatter and overlapping:
        outs, ks, first_k = d[2:2 + nsp], d[2 + nsp:], 2 + nsp
        its = _scatter_iterators(ndims, 2)
    else:
        outs, ks, first_k = [*d[2:rank - 1], d[ndims - 1]], d[rank - 1:ndims - 1], rank - 1
        its = [PAR] * ndims if scatter else [PAR] * (rank - 1) + [RED] * nsp + [PAR]
    x_map = AffineMapAttr(AffineMap(ndims, 0, (d[0], d[1], *(o * st + k for o, st, k in zip(
        outs, stride, ks, strict=True)))))
    y_map = AffineMapAttr(AffineMap(ndims, 0, (d[0], d[1], *outs)))
    window_map = AffineMapAttr(AffineMap(ndims, 0, tuple(ks)))
    return _PoolSpace(x_map, y_map, window_map, its, first_k)


def _window(lw: Any, kernel: Sequence[int]) -> SSAValue:
    return lw.empty(TensorType(f32, list(kernel)))


def _pool_high(x_shape: Sequence[int], y_shape: Sequence[int], kernel: Sequence[int],
               stride: Sequence[int], padding: Sequence[int]) -> list[int]:
    """The padding after each spatial dim that the windows need: `padding`, or more where
    ceil_mode lets the last window run past it."""
    return [max(p, (o - 1) * st + k - s - p) for s, o, k, st, p in zip(
        x_shape[2:], y_shape[2:], kernel, stride, padding, strict=True)]


def _pool_geometry(op: Any, x_shape: Sequence[int], y_shape: Sequence[int]
                   ) -> tuple[list[int], list[int], list[int], list[int]]:
    """(kernel, stride, padding, high padding) of a pool op."""
    kernel, stride, pad = op.pool_attrs()
    return kernel, stride, pad, _pool_high(x_shape, y_shape, kernel, stride, pad)


def _lower_max_pool(lw: Any, op: Any) -> SSAValue:
    typ = _result_type(op)
    kernel, stride, pad, high = _pool_geometry(op, static_shape(op.input) or (),
                                               typ.get_shape())
    xp = _pad(lw, op.input, pad, float("-inf"), high)
    sp = _pool_space(len(kernel) + 2, kernel, stride)
    init = lw.filled(_accumulator_type(typ), float("-inf"))

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        return b.insert(arith.SelectOp(_pool_takes(b, a[0], a[2]), a[0], a[2])).result

    y = lw.generic([xp, _window(lw, kernel)], init, [sp.x_map, sp.w_map, sp.y_map],
                   sp.iterators, body)
    return _round_to(lw, y, typ)


def _pool_takes(b: Builder, x: SSAValue, running: SSAValue) -> SSAValue:
    """PyTorch's max-pool scan (`max_takes`). Padding cells hold -inf, which never
    replaces anything."""
    return max_takes(b, x, running)


def _window_position(b: Builder, first_dim: int, kernel: Sequence[int]) -> SSAValue:
    """Row-major position in the pooling window of the current iteration (window loops
    `first_dim`.. onward), as an f32: exact, windows are far smaller than 2^24."""
    pos: SSAValue | None = None
    for i, k in enumerate(kernel):
        idx = b.insert(linalg.IndexOp(first_dim + i)).result
        if pos is not None:
            size = b.insert(arith.ConstantOp(builtin.IntegerAttr(k, builtin.IndexType()))).result
            scaled = b.insert(arith.MuliOp(pos, size)).result
            idx = b.insert(arith.AddiOp(scaled, idx)).result
        pos = idx
    assert pos is not None
    as_int = b.insert(arith.IndexCastOp(pos, builtin.i64)).result
    return b.insert(arith.SIToFPOp(as_int, f32)).result


def _window_counts(size: int, out: int, k: int, st: int, p: int, include_pad: bool
                   ) -> list[int]:
    """torch's avg-pool divisor along one dim, per output position: the window clipped to
    [-p, size + p), or to the input without `include_pad`."""
    counts = []
    for i in range(out):
        start, end = i * st - p, min(i * st - p + k, size + p)
        counts.append(end - start if include_pad else min(end, size) - max(start, 0))
    return counts


def _index(b: Builder, value: int) -> SSAValue:
    return b.insert(arith.ConstantOp(builtin.IntegerAttr(value, builtin.IndexType()))).result


def _divisor(op: Any, x_shape: Sequence[int], y_shape: Sequence[int]
             ) -> float | Callable[[Builder], SSAValue]:
    """The avg pool's divisor: a constant when every window has the same (always so with
    count_include_pad and without ceil_mode: the kernel size), else a builder of the
    f32 divisor of the output element at the current indices (dims 2.. of the loops),
    from index arithmetic per dim that varies."""
    kernel, stride, pad = op.pool_attrs()
    include = includes_pad(op)
    const, varying = 1, []
    for dim, (size, out, k, st, p) in enumerate(zip(x_shape[2:], y_shape[2:], kernel, stride,
                                                    pad, strict=True), 2):
        counts = _window_counts(size, out, k, st, p, include)
        if len(set(counts)) == 1:
            const *= counts[0]
        else:
            varying.append((dim, size, k, st, p))
    if not varying:
        return float(const)

    def build(b: Builder) -> SSAValue:
        total: SSAValue | None = None
        for dim, size, k, st, p in varying:
            i = b.insert(linalg.IndexOp(dim)).result
            start = b.insert(arith.SubiOp(b.insert(arith.MuliOp(i, _index(b, st))).result,
                                          _index(b, p))).result
            end = b.insert(arith.MinSIOp(b.insert(arith.AddiOp(start, _index(b, k))).result,
                                         _index(b, size + p))).result
            if not include:
                start = b.insert(arith.MaxSIOp(start, _index(b, 0))).result
                end = b.insert(arith.MinSIOp(end, _index(b, size))).result
            count = b.insert(arith.SubiOp(end, start)).result
            total = count if total is None else b.insert(arith.MuliOp(total, count)).result
        assert total is not None
        if const != 1:
            total = b.insert(arith.MuliOp(total, _index(b, const))).result
        as_int = b.insert(arith.IndexCastOp(total, builtin.i64)).result
        return b.insert(arith.SIToFPOp(as_int, f32)).result
    return build


def _divided(lw: Any, value: SSAValue, typ: TensorType,
             divisor: float | Callable[[Builder], SSAValue]) -> SSAValue:
    """value / divisor elementwise, stored as `typ` (a loop per dim of `typ`)."""
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        d = _f32(b, divisor) if isinstance(divisor, float) else divisor(b)
        return b.insert(arith.DivfOp(a[0], d)).result
    return lw.elementwise([value], typ, body)


def _lower_avg_pool(lw: Any, op: Any) -> SSAValue:
    typ = _result_type(op)
    x_shape = static_shape(op.input) or ()
    kernel, stride, pad, high = _pool_geometry(op, x_shape, typ.get_shape())
    xp = _pad(lw, op.input, pad, 0.0, high)
    sp = _pool_space(len(kernel) + 2, kernel, stride)
    init = lw.filled(_accumulator_type(typ), 0.0)
    total = lw.generic([xp, _window(lw, kernel)], init, [sp.x_map, sp.w_map, sp.y_map],
                       sp.iterators, lambda b, a: b.insert(arith.AddfOp(a[2], a[0])).result)
    return _divided(lw, total, typ, _divisor(op, x_shape, tuple(typ.get_shape())))


def _lower_avg_pool_grad(lw: Any, op: Any) -> SSAValue:
    typ = _result_type(op)
    shape = tuple(typ.get_shape())
    dy_shape = static_shape(op.input) or ()
    kernel, stride, pad, high = _pool_geometry(op, shape, dy_shape)
    padded = _padded_shape(shape, pad, high)
    sp = _pool_space(len(shape), kernel, stride, scatter=True)
    divisor = _divisor(op, shape, dy_shape)
    dy = op.input
    if isinstance(divisor, float):
        count = divisor

        def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
            share = b.insert(arith.DivfOp(a[0], _f32(b, count))).result
            return b.insert(arith.AddfOp(a[2], share)).result
    else:  # each dy divided by its own window's divisor first (torch: dy / divisor)
        dy = _divided(lw, dy, TensorType(f32, dy_shape), divisor)

        def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
            return b.insert(arith.AddfOp(a[2], a[0])).result

    dxp = lw.generic([dy, _window(lw, kernel)], lw.filled(TensorType(f32, padded), 0.0),
                     [sp.y_map, sp.w_map, sp.x_map], sp.iterators, body)
    return _crop(lw, dxp, pad, typ)


def _lower_max_pool_grad(lw: Any, op: Any) -> SSAValue:
    """dy flows to the window position PyTorch's max_pool records as the argmax.

    Two generics over the window loops and the output's (`_pool_space`). The first
    replays the forward scan (`_pool_takes`) and records, per window, the row-major
    position of the cell that set the max: the first of tied maxima, the last NaN, and
    -- where nothing beats the initial -inf -- the first cell inside the input, as
    PyTorch initialises its index there (a 0/1 mask marks the padding, which never takes
    part). The second adds dy at that position. The operand y is not needed: the scan
    recomputes it.
    """
    typ = _result_type(op)
    rank = typ.get_num_dims()
    y_shape = static_shape(op.y) or ()
    kernel, stride, pad, high = _pool_geometry(op, typ.get_shape(), y_shape)
    xp = _pad(lw, op.x, pad, float("-inf"), high)
    padded = static_shape(xp) or ()
    sp = _pool_space(rank, kernel, stride)
    window = _window(lw, kernel)
    inputs, maps = [xp, window], [sp.x_map, sp.w_map]
    # Windows start inside the input or its left padding: only left padding can be a
    # window's first cell.
    if any(pad):
        ones = lw.filled(TensorType(f32, typ.get_shape()), 1.0)
        inputs, maps = [*inputs, _pad(lw, ones, pad, 0.0, high)], [*maps, sp.x_map]

    def scan(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        x, running, arg = a[0], a[-2], a[-1]
        pos = _window_position(b, sp.first_k, kernel)
        take = _pool_takes(b, x, running)
        unset = b.insert(arith.CmpfOp(arg, _f32(b, 0.0), "olt")).result
        if any(pad):  # the first cell inside the input, if nothing took yet
            inside = b.insert(arith.CmpfOp(a[2], _f32(b, 0.0), "ogt")).result
            unset = b.insert(arith.AndIOp(unset, inside)).result
        take = b.insert(arith.OrIOp(take, unset)).result
        return [b.insert(arith.SelectOp(take, x, running)).result,
                b.insert(arith.SelectOp(take, pos, arg)).result]

    _, argmax = lw.generic_multi(
        inputs, [lw.filled(TensorType(f32, y_shape), float("-inf")),
                 lw.filled(TensorType(f32, y_shape), -1.0)],
        [*maps, sp.y_map, sp.y_map], sp.iterators, scan)
    sc = _pool_space(rank, kernel, stride, scatter=True)

    def scatter(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        dy, arg, dx = a[0], a[1], a[3]
        hit = b.insert(arith.CmpfOp(_window_position(b, sc.first_k, kernel), arg, "oeq")
                       ).result
        added = b.insert(arith.AddfOp(dx, dy)).result
        return b.insert(arith.SelectOp(hit, added, dx)).result

    dxp = lw.generic([op.dy, argmax, window], lw.filled(TensorType(f32, padded), 0.0),
                     [sc.y_map, sc.y_map, sc.w_map, sc.x_map], sc.iterators, scatter)
    return _crop(lw, dxp, pad, typ)


def _lower_global_avg_pool(lw: Any, op: Any) -> SSAValue:
    """frame.sum's f32 sums over the spatial dims (per column or blocked when large), then
    one division per (n, c)."""
    from frame_mlir.passes.convert_frame_to_linalg import sum_axes
    shape = static_shape(op.input) or ()
    total = sum_axes(lw, op.input, list(range(2, len(shape))))
    n = float(prod(shape[2:]))
    return expand_kept(lw, total, _result_type(op), [0, 1],
                       lambda b, a: b.insert(arith.DivfOp(a[0], _f32(b, n))).result)


def _lower_global_max_pool(lw: Any, op: Any) -> SSAValue:
    """A row-major max scan over the spatial dims per (n, c) (`max_takes`), then the
    [N, C] maxima stored with the size-1 dims."""
    shape = static_shape(op.input) or ()
    rank = len(shape)
    init = lw.filled(tensor_type(shape[:2]), float("-inf"))

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        return b.insert(arith.SelectOp(max_takes(b, a[0], a[1]), a[0], a[1])).result

    m = lw.generic([op.input], init, [identity_map(rank), dims_map(rank, [0, 1])],
                   [PAR, PAR, *[RED] * (rank - 2)], body)
    return expand_kept(lw, m, _result_type(op), [0, 1], lambda b, a: a[0])


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    ConvOp: _lower_conv, ConvGradInputOp: _lower_input_grad,
    ConvGradWeightOp: _lower_conv_grad_weight, ConvTransposeOp: _lower_input_grad,
    MaxPoolOp: _lower_max_pool, AvgPoolOp: _lower_avg_pool,
    MaxPoolGradOp: _lower_max_pool_grad, AvgPoolGradOp: _lower_avg_pool_grad,
    GlobalAvgPoolOp: _lower_global_avg_pool, GlobalMaxPoolOp: _lower_global_max_pool}
