"""The frame dialect's pooling family -- ops, shape rules, verifiers, VJP rules and
lowerings in this one file (like `frame_math.py`):

  * `frame.max_pool` / `frame.avg_pool` (`ceil_mode`; `count_include_pad` for the
    average) and their gradient ops `frame.max_pool_grad` / `frame.avg_pool_grad`;
  * `frame.global_avg_pool` / `frame.global_max_pool`: [N, C, *S] -> [N, C, 1, ...].

Layout NC* (NCL, NCHW, ...), PyTorch's semantics, f32 or f16 storage with f32
arithmetic. `ceil_mode` and `count_include_pad` are optional attributes whose absence
means torch's default (false, true), so IR written before them reads and lowers
exactly as it did. The padding helpers are the convolution family's (`frame_conv.py`).

Numerics:
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
from itertools import product
from math import prod
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, builtin
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

from frame_mlir.dialects.frame_base import (
    AnyF32Tensor,
    DeclaredShape,
    FrameOp,
    Shape,
    ShapeError,
    UnaryOp,
    _fmt,
    declared_shape,
    static_shape,
    tensor_type,
)

# The families this one builds on: the convolution family's padding helpers and the
# reductions' f32 sums.
from frame_mlir.dialects.frame_conv import (
    _crop,
    _i64s,
    _ints,
    _pad,
    _padded_shape,
    _scatter_iterators,
)
from frame_mlir.dialects.frame_reduce import expand_kept, sum_axes
from frame_mlir.dialects.linalg_utils import PAR, RED, dims_map, identity_map, max_takes
from frame_mlir.dialects.linalg_utils import accumulator_type as _accumulator_type
from frame_mlir.dialects.linalg_utils import f32_const as _f32
from frame_mlir.dialects.linalg_utils import result_type as _result_type
from frame_mlir.dialects.linalg_utils import round_to as _round_to

# --- shape rules ------------------------------------------------------------------------


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



# --- ops --------------------------------------------------------------------------------


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
class AvgPoolGradOp(DeclaredShape, _PoolAttrs, UnaryOp):
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

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        target = declared_shape(attrs, "frame.avg_pool_grad")
        expected = _pool_rule([target], {**attrs, "what": "frame.avg_pool_grad"})
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



OPS = [MaxPoolOp, AvgPoolOp, MaxPoolGradOp, AvgPoolGradOp, GlobalAvgPoolOp, GlobalMaxPoolOp]


# --- VJP rules --------------------------------------------------------------------------

Adjoints = list[SSAValue | None]
Emit = Callable[[Operation], SSAValue]


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
    MaxPoolOp: _vjp_max_pool, AvgPoolOp: _vjp_avg_pool, GlobalAvgPoolOp: _vjp_global_avg_pool,
    GlobalMaxPoolOp: _vjp_global_max_pool}


# --- lowerings --------------------------------------------------------------------------


@dataclass(frozen=True)
class _PoolSpace:
    """The loops of a pooling generic: maps of the padded input, the output and the
    window (a shape-only operand that bounds the k loops, as in MLIR's pooling ops:
    linalg needs every loop to be bounded by some operand dimension), the iterator
    types, the loops of each spatial dim's output position and window offset (for
    `linalg.index`), and whether the last window loop runs backwards (`_pool_space`)."""

    x_map: AffineMapAttr
    y_map: AffineMapAttr
    w_map: AffineMapAttr
    iterators: list[linalg_attrs.IteratorTypeAttr]
    out_loops: tuple[int, ...]
    k_loops: tuple[int, ...]
    reversed_last_k: bool = False


def _pool_space(rank: int, kernel: Sequence[int], stride: Sequence[int],
                scatter: bool = False) -> _PoolSpace:
    """Loops (n, c, *out[:-1], *k, out[-1]): the window loops sit outside the last output
    dim. Each output element still scans its window in row-major order, but the
    innermost loop walks a row of outputs, so it is parallel and vectorizes (with the
    window innermost it would be a 2-long scan per element): 3x faster on LeNet's
    first pool.

    A `scatter` (a gradient written at `out * stride + k`, read from the output-shaped
    dy) has the same loops. Where windows overlap (stride < kernel in some dim) an
    element receives several contributions, all but n and c are reductions, and the
    last window dim runs backwards (`k' = K - 1 - k`): an element of that dim is
    reached from larger k at smaller out, so with k reversed its contributions still
    arrive in the row-major order of the outputs, as with the loops
    (n, c, *out, *k) it had before, and as PyTorch adds them -- while the innermost
    loop walks a row of outputs instead of a window's last dim (3 long)."""
    nsp = rank - 2
    ndims = rank + nsp
    d = [AffineExpr.dimension(i) for i in range(ndims)]
    overlapping = any(st < k for st, k in zip(stride, kernel, strict=True))
    out_loops, first_k = (*range(2, rank - 1), ndims - 1), rank - 1
    k_loops = tuple(range(first_k, first_k + nsp))
    reverse = scatter and overlapping
    if reverse:
        its = _scatter_iterators(ndims, 2)
    else:
        its = [PAR] * ndims if scatter else [PAR] * (rank - 1) + [RED] * nsp + [PAR]
    outs = [d[i] for i in out_loops]
    ks = [d[i] for i in k_loops]
    if reverse:
        ks[-1] = AffineExpr.constant(kernel[-1] - 1) - ks[-1]
    x_map = AffineMapAttr(AffineMap(ndims, 0, (d[0], d[1], *(o * st + k for o, st, k in zip(
        outs, stride, ks, strict=True)))))
    y_map = AffineMapAttr(AffineMap(ndims, 0, (d[0], d[1], *outs)))
    window_map = AffineMapAttr(AffineMap(ndims, 0, tuple(d[i] for i in k_loops)))
    return _PoolSpace(x_map, y_map, window_map, its, out_loops, k_loops, reverse)


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


#: Windows of at most this many cells, at strides of 2 or more, are scanned as one
#: generic over the outputs with each cell its own operand (`_cells`).
UNROLLED_WINDOW_CELLS = 16


def _cells(rank: int, kernel: Sequence[int], stride: Sequence[int]
           ) -> list[tuple[tuple[int, ...], AffineMapAttr]] | None:
    """Each cell of the window (row-major) with the map (n, c, *out) -> the padded input
    at `out * stride + k`, or None where the window is scanned in loops instead (more
    cells than `UNROLLED_WINDOW_CELLS`, or a stride of 1: its k = 0 cell's map would be
    a bare dim, which would bound the output's loop by the longer padded input).

    The scan then keeps its running max (and argmax) in registers and stores once per
    output. As loops over the window (`_pool_space`) every cell loaded and stored the
    running value, a store of `select(take, x, load)`, which LLVM's x86 backend turns
    into a masked store -- on AVX2 hosts `vmaskmovps`, microcoded and slow on AMD (on
    Zen 3, ResNet-18's max pool 10.9 -> 3.4 ms, its gradient's scan 23.6 -> 9.6)."""
    if prod(kernel) > UNROLLED_WINDOW_CELLS or any(st < 2 for st in stride):
        return None
    d = [AffineExpr.dimension(i) for i in range(rank)]
    cells = []
    for ks in product(*(range(k) for k in kernel)):
        cells.append((ks, AffineMapAttr(AffineMap(rank, 0, (d[0], d[1], *(
            d[2 + i] * st + k for i, (st, k) in enumerate(zip(stride, ks, strict=True))))))))
    return cells


def _lower_max_pool(lw: Any, op: Any) -> SSAValue:
    typ = _result_type(op)
    rank = typ.get_num_dims()
    kernel, stride, pad, high = _pool_geometry(op, static_shape(op.input) or (),
                                               typ.get_shape())
    xp = _pad(lw, op.input, pad, float("-inf"), high)
    cells = _cells(rank, kernel, stride)
    if cells is not None:
        def scan(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
            running = _f32(b, float("-inf"))
            for x in a[:len(cells)]:
                running = b.insert(arith.SelectOp(_pool_takes(b, x, running), x, running)
                                   ).result
            return running

        y = lw.generic([xp] * len(cells), lw.empty(_accumulator_type(typ)),
                       [m for _, m in cells] + [identity_map(rank)], [PAR] * rank, scan)
        return _round_to(lw, y, typ)
    sp = _pool_space(rank, kernel, stride)
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


def _window_position(b: Builder, sp: _PoolSpace, kernel: Sequence[int]) -> SSAValue:
    """Row-major position in the pooling window of the current iteration (from the
    window loops of `sp`; the last one's index reversed where it runs backwards), as an
    f32: exact, windows are far smaller than 2^24."""
    pos: SSAValue | None = None
    for i, k in enumerate(kernel):
        idx = b.insert(linalg.IndexOp(sp.k_loops[i])).result
        if sp.reversed_last_k and i == len(kernel) - 1:
            idx = b.insert(arith.SubiOp(_index(b, k - 1), idx)).result
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

    Two generics. The first replays the forward scan (`_pool_takes`) and records, per
    window, the row-major position of the cell that set the max: the first of tied
    maxima, the last NaN, and -- where nothing beats the initial -inf -- the first cell
    inside the input, as PyTorch initialises its index there (padding never takes
    part). It is one generic over the outputs with a cell per operand where `_cells`
    allows, else loops over the window and the output (`_pool_space`). The second adds
    dy at that position. The operand y is not needed: the scan recomputes it.
    """
    typ = _result_type(op)
    rank = typ.get_num_dims()
    y_shape = static_shape(op.y) or ()
    kernel, stride, pad, high = _pool_geometry(op, typ.get_shape(), y_shape)
    xp = _pad(lw, op.x, pad, float("-inf"), high)
    padded = static_shape(xp) or ()
    window = _window(lw, kernel)
    cells = _cells(rank, kernel, stride)
    if cells is not None:
        argmax = lw.generic([xp] * len(cells), lw.empty(TensorType(f32, y_shape)),
                            [m for _, m in cells] + [identity_map(rank)], [PAR] * rank,
                            lambda b, a: _unrolled_argmax(b, a, cells, stride, pad))
    else:
        argmax = _looped_argmax(lw, xp, y_shape, kernel, stride, pad)
    sc = _pool_space(rank, kernel, stride, scatter=True)
    # Windows that tile the input (kernel = stride, no padding, every cell in one
    # window: LeNet's 2 x 2 / 2 pools) write each element of dx once: no zero fill
    # first, and no read of dx (its old value is that fill's 0.0).
    tiled = (kernel == stride and not any(pad) and not any(high)
             and list(padded[2:]) == [o * st for o, st in zip(y_shape[2:], stride,
                                                                 strict=True)])

    def scatter(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        dy, arg = a[0], a[1]
        dx = _f32(b, 0.0) if tiled else a[3]
        hit = b.insert(arith.CmpfOp(_window_position(b, sc, kernel), arg, "oeq")
                       ).result
        # dx + (hit ? dy : -0.0), not hit ? dx + dy : dx: the same bits (-0.0 is the
        # identity of +, signed zeros and NaN included), but no store of
        # select(hit, _, load), which x86 AVX2 code makes a slow vmaskmovps.
        share = b.insert(arith.SelectOp(hit, dy, _f32(b, -0.0))).result
        return b.insert(arith.AddfOp(dx, share)).result

    init = lw.empty(TensorType(f32, padded)) if tiled else \
        lw.filled(TensorType(f32, padded), 0.0)
    dxp = lw.generic([op.dy, argmax, window], init,
                     [sc.y_map, sc.y_map, sc.w_map, sc.x_map], sc.iterators, scatter)
    return _crop(lw, dxp, pad, typ)


def _unrolled_argmax(b: Builder, a: Sequence[SSAValue],
                     cells: Sequence[tuple[tuple[int, ...], AffineMapAttr]],
                     stride: Sequence[int], pad: Sequence[int]) -> SSAValue:
    """The max-pool gradient's scan over one window whose cells are the operands `a`
    (row-major), in registers: the argmax's row-major position as an f32. A cell k
    lies past the left padding of dim i where `out * stride + k >= pad`, i.e. always
    for k >= pad, else for out >= ceil((pad - k) / stride)."""
    running, arg = _f32(b, float("-inf")), _f32(b, -1.0)
    for pos, ((ks, _), x) in enumerate(zip(cells, a, strict=False)):
        take = _pool_takes(b, x, running)
        unset = b.insert(arith.CmpfOp(arg, _f32(b, 0.0), "olt")).result
        for i, (k, st, p) in enumerate(zip(ks, stride, pad, strict=True)):
            if k < p:
                past = b.insert(arith.CmpiOp(b.insert(linalg.IndexOp(2 + i)).result,
                                             _index(b, -(-(p - k) // st)), "sge")).result
                unset = b.insert(arith.AndIOp(unset, past)).result
        take = b.insert(arith.OrIOp(take, unset)).result
        running = b.insert(arith.SelectOp(take, x, running)).result
        arg = b.insert(arith.SelectOp(take, _f32(b, float(pos)), arg)).result
    return arg


def _looped_argmax(lw: Any, xp: SSAValue, y_shape: Sequence[int], kernel: Sequence[int],
                   stride: Sequence[int], pad: Sequence[int]) -> SSAValue:
    """The max-pool gradient's scan as loops over the window and the outputs
    (`_pool_space`), the running max and argmax kept in two output-shaped tensors."""
    sp = _pool_space(len(y_shape), kernel, stride)

    def scan(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        x, running, arg = a[0], a[-2], a[-1]
        pos = _window_position(b, sp, kernel)
        take = _pool_takes(b, x, running)
        unset = b.insert(arith.CmpfOp(arg, _f32(b, 0.0), "olt")).result
        if any(pad):  # the first cell inside the input, if nothing took yet
            unset = b.insert(arith.AndIOp(unset, _inside(b, sp, stride, pad))).result
        take = b.insert(arith.OrIOp(take, unset)).result
        return [b.insert(arith.SelectOp(take, x, running)).result,
                b.insert(arith.SelectOp(take, pos, arg)).result]

    _, argmax = lw.generic_multi(
        [xp, _window(lw, kernel)], [lw.filled(TensorType(f32, y_shape), float("-inf")),
                                    lw.filled(TensorType(f32, y_shape), -1.0)],
        [sp.x_map, sp.w_map, sp.y_map, sp.y_map], sp.iterators, scan)
    return argmax


def _inside(b: Builder, sp: _PoolSpace, stride: Sequence[int], pad: Sequence[int]
            ) -> SSAValue:
    """Whether the current window cell lies past the left padding in every dim (from the
    loop indices: a 0/1 mask of the padded input's shape cost three passes over it).

    Windows start inside the input or its left padding, so in the scan's row-major
    order the first cell past every dim's left padding is inside the input: right
    padding need not be tested."""
    inside: SSAValue | None = None
    for o, k, st, p in zip(sp.out_loops, sp.k_loops, stride, pad, strict=True):
        if not p:
            continue
        at = b.insert(arith.AddiOp(b.insert(arith.MuliOp(
            b.insert(linalg.IndexOp(o)).result, _index(b, st))).result,
            b.insert(linalg.IndexOp(k)).result)).result
        past = b.insert(arith.CmpiOp(at, _index(b, p), "sge")).result
        inside = past if inside is None else b.insert(arith.AndIOp(inside, past)).result
    assert inside is not None
    return inside


def _lower_global_avg_pool(lw: Any, op: Any) -> SSAValue:
    """frame.sum's f32 sums over the spatial dims (per column or blocked when large), then
    one division per (n, c)."""
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
    MaxPoolOp: _lower_max_pool, AvgPoolOp: _lower_avg_pool,
    MaxPoolGradOp: _lower_max_pool_grad, AvgPoolGradOp: _lower_avg_pool_grad,
    GlobalAvgPoolOp: _lower_global_avg_pool, GlobalMaxPoolOp: _lower_global_max_pool}
