"""The frame dialect's reduction family: sum, mean and max over any subset of axes
(with `keepdims`, `frame.reduced_shape`), frame.broadcast (sum's VJP: repeat along
axes), the elementwise maximum and minimum of two broadcasting operands, and the
gradient ops their VJPs emit -- each op with its shape rule and verifier, its VJP rule
and its lowering, in this one file (like `frame_math.py`).

Also here: `reduce_to`, the adjoint of numpy broadcasting (the VJPs of add, sub, mul,
div, maximum and minimum sum the adjoint over the dims an operand was broadcast along),
and the f32 sums other families' lowerings reuse: `sum_axes` (over some axes; mean,
global_avg_pool, the losses) and `sum_into` (a full reduction with its own body, as
mse_loss's sum of squares).

Numerics follow PyTorch's CPU kernels:
  * `frame.sum` accumulates in f32: a full reduction of more than `BLOCKED_SUM_MIN`
    elements in blocks of about sqrt(N) (`sum_into`), a sum over the last dim and others
    per column first (`_column_sum`, vectorizable), else one running sum in row-major
    order (docs/numerics.md).
  * `frame.mean` is torch.mean: an f32 sum (the lowering of `frame.sum`: blocked or
    per column when large) divided by the element count; a mean over no elements is
    NaN (0 / 0).
  * `frame.max` is torch.amax: a row-major scan in which a value replaces the running
    max when it is greater or NaN (`max_takes`), so a group holding a NaN is NaN and,
    of tied maxima, the first stays (-0.0 vs +0.0 included). A max over no elements is
    rejected, as torch rejects it.
  * its VJP (`frame.max_grad`) sends dy to ONE element per group: the first maximum in
    row-major order, or the first NaN -- the element torch.max(dim) returns as its
    index (torch.amax's own backward splits dy among tied maxima instead).
  * `frame.maximum` / `frame.minimum` are torch.maximum / torch.minimum: NaN when either
    operand is NaN; of equal operands the rhs (torch's vectorized kernels, the path of
    all but the shortest tensors, do the same; its scalar tail returns the lhs, which
    only differs for -0.0 vs +0.0). Their gradient is torch's: dy goes to the larger
    (smaller) operand, half of dy to each where they are equal, all of dy to both where
    either is NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import isqrt, log, prod
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame_base as _frame
from frame_mlir.dialects.frame_base import (
    AnyF32Tensor,
    BinaryOp,
    BroadcastingBinaryOp,
    DeclaredShape,
    FrameOp,
    Shape,
    ShapeError,
    UnaryOp,
    _fmt,
    broadcast_dims,
    broadcast_rule,
    check_axes,
    declared_shape,
    ops,
    reduced_shape,
    static_shape,
)

# The families this one builds on (neither needs this one at import time).
from frame_mlir.dialects.frame_movement import ReshapeOp
from frame_mlir.dialects.linalg_utils import (
    PAR,
    RED,
    BodyFn,
    dims_map,
    identity_map,
    max_takes,
)
from frame_mlir.dialects.linalg_utils import f32_const as _c
from frame_mlir.dialects.linalg_utils import round_to as _round_to

# --- ops --------------------------------------------------------------------------------


class _Reduction:
    """`axes` (all when absent) and `keepdims` of a reduction."""

    axes = opt_prop_def(DenseArrayBase.constr(i64))
    keepdims = opt_prop_def(UnitAttr)

    @staticmethod
    def props(axes: Sequence[int] | None, keepdims: bool) -> dict[str, Attribute | None]:
        return {"axes": None if axes is None else DenseArrayBase.from_list(i64, list(axes)),
                "keepdims": UnitAttr() if keepdims else None}

    def axes_list(self) -> list[int] | None:
        return None if self.axes is None else [int(a) for a in self.axes.get_values()]

    def keeps_dims(self) -> bool:
        return self.keepdims is not None

    def reduced_axes(self, rank: int) -> list[int]:
        """The reduced axes, resolved against the operand rank."""
        axes = self.axes_list()
        return list(range(rank)) if axes is None else axes

    def rule_attrs(self) -> dict[str, object]:
        return {"axes": self.axes_list(), "keepdims": self.keeps_dims()}


class _UnaryReduction(_Reduction, UnaryOp):
    """A reduction of one operand: the builder every such op shares."""

    def __init__(self, input: SSAValue | Operation, axes: Sequence[int] | None = None,
                 keepdims: bool = False, result_type: Attribute | None = None):
        ops = [SSAValue.get(input)]
        rtype = result_type or self.result_type_for(ops, axes=axes, keepdims=keepdims)
        super().__init__(input, rtype, self.props(axes, keepdims))


@irdl_op_definition
class SumOp(_UnaryReduction):
    """Sum over `axes` (all axes when absent), dropping the reduced dims (keeping them as
    size 1 with `keepdims`, as torch's keepdim=True).

    ``%s = frame.sum %x : (tensor<8x1xf32>) -> tensor<f32>``
    ``%r = frame.sum %x {axes = array<i64: 1>} : (tensor<8x3xf32>) -> tensor<8xf32>``
    ``%r = frame.sum %x {axes = array<i64: 1>, keepdims} : (tensor<8x3xf32>) -> tensor<8x1xf32>``
    """

    name = "frame.sum"

    def __init__(self, input: SSAValue | Operation, axes: Sequence[int] | None = None,
                 result_type: Attribute | None = None, keepdims: bool = False):
        super().__init__(input, axes, keepdims, result_type)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        (s,) = shapes
        axes = attrs.get("axes")
        return reduced_shape(s, axes, bool(attrs.get("keepdims")), "frame.sum")  # type: ignore[arg-type]


@irdl_op_definition
class BroadcastOp(DeclaredShape, UnaryOp):
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

    def rule_attrs(self) -> dict[str, object]:
        return {**super().rule_attrs(),
                "axes": None if self.axes is None else list(self.axes.get_values())}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        # The target shape is the declared result type: it is not inferred.
        (s,) = shapes
        target = declared_shape(attrs, "frame.broadcast")
        given: Sequence[int] | None = attrs.get("axes")  # type: ignore[assignment]
        axes = list(range(len(target))) if given is None else list(given)
        check_axes(axes, len(target), "frame.broadcast")
        kept = tuple(d for i, d in enumerate(target) if i not in axes)
        if s != kept:
            raise ShapeError(f"frame.broadcast: operand expected {_fmt(kept)} (the result "
                             f"without axes {axes}), found {_fmt(s)}")
        return target


def _max_shape(name: str, shape: Shape, attrs: dict[str, object]) -> Shape:
    """frame.max's result shape; a max needs at least one element per group (torch
    raises on an empty one)."""
    axes: Sequence[int] | None = attrs.get("axes")  # type: ignore[assignment]
    out = reduced_shape(shape, axes, bool(attrs.get("keepdims")), name)
    for a in range(len(shape)) if axes is None else axes:
        if shape[a] == 0:
            raise ShapeError(f"{name}: reduced dims expected non-empty (a max over no "
                             f"elements is undefined), found dim {a} of size 0 in "
                             f"{_fmt(shape)}")
    return out


@irdl_op_definition
class MeanOp(_UnaryReduction):
    """Mean over `axes` (all when absent), f32 accumulation, reduced dims dropped (kept
    as size 1 with `keepdims`): torch.mean(x, axes, keepdim).

    ``%m = frame.mean %x {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>) -> tensor<2x1xf32>``
    """

    name = "frame.mean"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        (s,) = shapes
        return reduced_shape(s, attrs.get("axes"), bool(attrs.get("keepdims")),  # type: ignore[arg-type]
                             "frame.mean")


@irdl_op_definition
class MaxOp(_UnaryReduction):
    """Maximum over `axes` (all when absent), NaN propagating, reduced dims dropped (kept
    as size 1 with `keepdims`): torch.amax(x, axes, keepdim).

    ``%m = frame.max %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>``
    """

    name = "frame.max"

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _max_shape("frame.max", shapes[0], attrs)


@irdl_op_definition
class MaxGradOp(_Reduction, BinaryOp):
    """The VJP of frame.max with the same `axes` / `keepdims`: dy (the max's shape) goes to
    the first maximum of each group in row-major order (or its first NaN), every other
    element gets 0 -- torch.max(x, dim)'s gradient, for any set of axes.

    ``%dx = frame.max_grad %x, %dy {axes = array<i64: 1>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>``
    """

    name = "frame.max_grad"

    def __init__(self, x: SSAValue | Operation, dy: SSAValue | Operation,
                 axes: Sequence[int] | None = None, keepdims: bool = False):
        super().__init__(x, dy, properties=self.props(axes, keepdims), axes=axes,
                         keepdims=keepdims)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, dy = shapes
        expected = _max_shape("frame.max_grad", x, attrs)
        if dy != expected:
            raise ShapeError(f"frame.max_grad: dy expected {_fmt(expected)} (the max's shape), "
                             f"found {_fmt(dy)}")
        return x


@irdl_op_definition
class MaximumOp(BroadcastingBinaryOp):
    """Elementwise maximum, broadcasting; NaN if either operand is NaN (torch.maximum).
    ``%c = frame.maximum %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>``"""

    name = "frame.maximum"


@irdl_op_definition
class MinimumOp(BroadcastingBinaryOp):
    """Elementwise minimum, broadcasting; NaN if either operand is NaN (torch.minimum).
    ``%c = frame.minimum %a, %b : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>``"""

    name = "frame.minimum"


class _PickGradOp(FrameOp):
    """The gradient of maximum / minimum(a, b) for operand `wrt` (0: a, 1: b), at the
    broadcast shape (dy's): dy where that operand is picked, dy / 2 where a == b, dy
    where either is NaN, else 0 (torch's rule)."""

    a = operand_def(AnyF32Tensor)
    b = operand_def(AnyF32Tensor)
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    wrt = prop_def(IntegerAttr.constr(i64))
    assembly_format = "$a `,` $b `,` $dy attr-dict `:` functional-type(operands, results)"

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation,
                 dy: SSAValue | Operation, wrt: int):
        ops = [SSAValue.get(v) for v in (a, b, dy)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops)],
                         properties={"wrt": IntegerAttr(wrt, i64)})

    @classmethod
    def rule(cls, shapes: Sequence[Shape], **attrs: object) -> Shape:  # type: ignore[override]
        a, b, dy = shapes
        out = broadcast_rule([a, b])
        if dy != out:
            raise ShapeError(f"{cls.name}: dy expected {_fmt(out)} (the broadcast shape of "
                             f"{_fmt(a)} and {_fmt(b)}), found {_fmt(dy)}")
        return out

    def verify_(self) -> None:
        super().verify_()
        if self.wrt.value.data not in (0, 1):
            raise VerifyException(f"{self.name}: wrt expected 0 or 1, found "
                                  f"{self.wrt.value.data}")


@irdl_op_definition
class MaximumGradOp(_PickGradOp):
    """``%g = frame.maximum_grad %a, %b, %dy {wrt = 0 : i64} : (tensor<3x4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>``"""

    name = "frame.maximum_grad"


@irdl_op_definition
class MinimumGradOp(_PickGradOp):
    """``%g = frame.minimum_grad %a, %b, %dy {wrt = 1 : i64} : (tensor<3x4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>``"""

    name = "frame.minimum_grad"


OPS = [SumOp, BroadcastOp, MeanOp, MaxOp, MaxGradOp, MaximumOp, MinimumOp, MaximumGradOp,
       MinimumGradOp]


# --- VJP rules --------------------------------------------------------------------------

Emit = Callable[[Operation], SSAValue]
Adjoints = list[SSAValue | None]


def reduce_to(emit: Emit, g: SSAValue, like: SSAValue) -> SSAValue:
    """The adjoint `g` (of a broadcast result) reduced to the shape of operand `like`:
    summed over the dims `like` was broadcast along, then reshaped to `like`'s shape (its
    size-1 dims back). Without broadcasting, `g` itself: nothing is emitted."""
    shape, out = static_shape(like) or (), static_shape(g) or ()
    axes = broadcast_dims(shape, out)
    if not axes:
        return g
    total = emit(SumOp(g, axes if len(axes) < len(out) else None))
    if static_shape(total) != shape:
        total = emit(ReshapeOp(total, like.type))
    return total


def unkeep(emit: Emit, op: Any, dy: SSAValue) -> SSAValue:
    """dy of a reduction (sum, mean) without the size-1 dims `keepdims` kept: what
    frame.broadcast takes. Without `keepdims`, dy itself."""
    if op.keepdims is None:
        return dy
    axes = None if op.axes is None else [int(a) for a in op.axes.get_values()]
    shape = reduced_shape(static_shape(op.input) or (), axes, False, op.name)
    return emit(ReshapeOp(dy, _frame.tensor_type(shape, _frame.element_type(dy))))


def _vjp_sum(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    axes = None if op.axes is None else list(op.axes.get_values())
    return [emit(BroadcastOp(unkeep(emit, op, dy), op.input.type, axes))]


def _vjp_broadcast(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    axes = None if op.axes is None else list(op.axes.get_values())
    return [emit(SumOp(dy, axes))]


def _vjp_mean(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    # torch: sum_backward(dy) / N, the division in the gradient's own precision.
    shape = static_shape(op.input) or ()
    n = prod(shape[a] for a in op.reduced_axes(len(shape)))
    count = emit(_frame.ConstantOp(float(n), result_type=_frame.tensor_type(
        (), _frame.element_type(dy))))
    # ops.DivOp: frame_math imports this family (its gradients sum), so not imported.
    scaled = emit(ops.DivOp(unkeep(emit, op, dy), count))
    return [emit(BroadcastOp(scaled, op.input.type, op.axes_list()))]


def _vjp_max(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(MaxGradOp(op.input, dy, op.axes_list(), op.keeps_dims()))]


def _vjp_pick(grad: type[_PickGradOp]) -> Callable[..., Adjoints]:
    def vjp(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
        a, b = op.lhs, op.rhs
        return [reduce_to(emit, emit(grad(a, b, dy, k)), v) if need[k] else None
                for k, v in enumerate((a, b))]
    return vjp


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    SumOp: _vjp_sum, BroadcastOp: _vjp_broadcast, MeanOp: _vjp_mean, MaxOp: _vjp_max,
    MaximumOp: _vjp_pick(MaximumGradOp), MinimumOp: _vjp_pick(MinimumGradOp)}


# --- lowerings ----------------------------------------------------------------------------


def _result_type(op: Operation) -> TensorType:
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ


def _keepdims_map(rank: int, axes: Sequence[int]) -> AffineMapAttr:
    """A loop nest over the input reading the keepdims-shaped result: 0 on reduced dims."""
    return AffineMapAttr(AffineMap(rank, 0, tuple(
        AffineExpr.constant(0) if d in axes else AffineExpr.dimension(d) for d in range(rank))))


def expand_kept(lw: Any, value: SSAValue, typ: TensorType, kept: Sequence[int],
                body: Callable[[Builder, Sequence[SSAValue]], SSAValue]) -> SSAValue:
    """`body` of each element of `value` (a reduction's f32 accumulator, over the kept
    dims) stored as `typ`: the reduced shape, or with `keepdims` the same elements with
    size-1 dims at the reduced axes (`kept` says which dims of `typ` `value` spans)."""
    rank = typ.get_num_dims()
    return lw.generic([value], lw.empty(typ), [dims_map(rank, kept), identity_map(rank)],
                      [PAR] * rank, body)


#: Full reductions of more elements than this are summed in blocks (`_block_size`).
BLOCKED_SUM_MIN = 4096

#: A partial sum over the last (contiguous) dim and others, whose last dim is at least
#: this long, is summed per column first (`_column_sum`).
COLUMN_SUM_MIN = 8


def _accumulate(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    """The body of a plain sum: accumulator (the last block argument) + element."""
    return b.insert(arith.AddfOp(a[1], a[0])).result


def sum_into(lw: Any, inputs: Sequence[SSAValue], body: BodyFn) -> SSAValue:
    """Reduce all elements of same-shaped inputs into a 0-d f32 tensor.

    Up to BLOCKED_SUM_MIN elements: one accumulator, row-major order. Beyond, in two
    levels: the row-major sequence is cut into blocks of B near sqrt(N) (`_block_size`),
    each block sums into its own partial, then the partials add up in order. A
    sequential f32 sum's error grows like N, a blocked one's like B + N / B: for 2e6
    squares that is ~1e-6 instead of ~1e-3 relative (docs/numerics.md).
    """
    shape = static_shape(inputs[0])
    assert shape is not None
    rank = len(shape)
    init = lw.filled(_frame.tensor_type(()), 0.0)  # f32 accumulator for any input type
    block = _block_size(shape)
    if block is None:
        return lw.generic(inputs, init, [identity_map(rank)] * len(inputs)
                          + [dims_map(rank, [])], [RED] * rank, body)
    blocks = prod(shape) // block
    partials = lw.filled(_frame.tensor_type((blocks,)), 0.0)
    flat = _flat_index_map(shape, block)
    # A shape-only [blocks, B] operand bounds the two loops (linalg derives loop bounds
    # from the operands' maps, and the flattened ones are not invertible); the body
    # does not see it.
    bounds = lw.empty(TensorType(f32, [blocks, block]))
    partials = lw.generic([*inputs, bounds], partials,
                          [flat] * len(inputs) + [identity_map(2), dims_map(2, [0])],
                          [PAR, RED], lambda b, a: body(b, [*a[:-2], a[-1]]))
    return lw.generic([partials], init, [identity_map(1), dims_map(1, [])], [RED],
                      _accumulate)


def _block_size(shape: Sequence[int]) -> int | None:
    """The block length B of a blocked sum over `shape`, or None for a plain sum.

    B should be near sqrt(N) (within 16x). A product of trailing dims is preferred: the
    blocks are then whole sub-tensors and the index maps stay plain projections. Else
    the divisor of N closest below sqrt(N), if there is one in range.
    """
    n = prod(shape)
    if n <= BLOCKED_SUM_MIN:
        return None
    root = isqrt(n)
    trailing = [prod(shape[t:]) for t in range(1, len(shape))]
    fits = [b for b in trailing if root // 16 <= b <= root * 16 and b < n]
    if fits:
        return min(fits, key=lambda b: abs(log(b / root)))
    for b in range(root, max(root // 16, 1) - 1, -1):
        if n % b == 0:
            return b
    return None  # n has no divisor near its root (a large prime, say): plain sum


def _flat_index_map(shape: Sequence[int], block: int) -> AffineMapAttr:
    """(i, j) -> the row-major multi-index of element i * block + j of `shape`.

    Per dim k (row-major stride s, size z): if the block is a multiple of s * z the
    index depends on j alone, if s is a multiple of the block on i alone; otherwise it
    is taken from the flat position i * block + j."""
    i, j = AffineExpr.dimension(0), AffineExpr.dimension(1)
    results = []
    stride = prod(shape)
    for k, size in enumerate(shape):
        stride //= size
        if size == 1:
            results.append(AffineExpr.constant(0))
            continue
        if block % (stride * size) == 0:  # within one block
            idx, whole = (j if stride == 1 else j // stride), block == stride * size
        elif stride % block == 0:  # constant across a block
            step = stride // block
            idx, whole = (i if step == 1 else i // step), k == 0
        else:
            flat = i * block + j
            idx, whole = (flat if stride == 1 else flat // stride), k == 0
        results.append(idx if whole else idx % size)
    return AffineMapAttr(AffineMap(2, 0, tuple(results)))


def sum_axes(lw: Any, x: SSAValue, axes: Sequence[int]) -> SSAValue:
    """The sum of `x` over `axes`: an f32 tensor over the other dims (frame.sum's and
    frame.mean's accumulator): blocked when a large full reduction, per column when
    the last dim is summed with others (`_column_sum`), else one running sum."""
    shape = static_shape(x) or ()
    rank = len(shape)
    kept = [d for d in range(rank) if d not in axes]
    if not kept:  # a full reduction: blocked when large, like the mse loss
        return sum_into(lw, [x], _accumulate)
    if rank - 1 in axes and len(axes) > 1 and shape[-1] >= COLUMN_SUM_MIN:
        return _column_sum(lw, x, kept, axes)
    init = lw.filled(_frame.tensor_type([shape[d] for d in kept]), 0.0)
    return lw.generic([x], init, [identity_map(rank), dims_map(rank, kept)],
                      [RED if d in axes else PAR for d in range(rank)], _accumulate)


def _column_sum(lw: Any, x: SSAValue, kept: Sequence[int], axes: Sequence[int]
                ) -> SSAValue:
    """A sum over `axes` that include the last dim: per column, then across columns.

    A plain loop nest would add the last dim's elements into one scalar accumulator,
    which cannot be vectorized without reassociating the sum. Here loops run over (kept
    dims..., other summed dims..., last dim), the last one parallel: each column w of
    the last dim has its own partial, `partial[kept, w] += x[..., w]` (contiguous loads,
    one vector lane per column), over the other summed dims in row-major order; then
    `out[kept] = ((partial[kept, 0] + partial[kept, 1]) + ...)`. The order is fixed by
    the shape alone (the same bits for every thread count and vector width), and, like
    a blocked sum, it adds fewer terms into each accumulator than one running sum.
    The kept dims lead the nest, so the threads split them."""
    shape = static_shape(x) or ()
    rank = len(shape)
    last = rank - 1
    others = [d for d in axes if d != last]
    order = [*kept, *others, last]  # loop dim i iterates input dim order[i]
    pos = {d: i for i, d in enumerate(order)}
    x_map = dims_map(rank, [pos[d] for d in range(rank)])
    p_map = dims_map(rank, [pos[d] for d in kept] + [rank - 1])
    partial = lw.filled(_frame.tensor_type((*(shape[d] for d in kept), shape[last])), 0.0)
    partial = lw.generic([x], partial, [x_map, p_map],
                         [PAR] * len(kept) + [RED] * len(others) + [PAR], _accumulate)
    k = len(kept)
    init = lw.filled(_frame.tensor_type(tuple(shape[d] for d in kept)), 0.0)
    return lw.generic([partial], init, [identity_map(k + 1), dims_map(k + 1, range(k))],
                      [PAR] * k + [RED], _accumulate)


def _lower_sum(lw: Any, op: Any) -> SSAValue:
    rank = len(static_shape(op.input) or ())
    axes = op.reduced_axes(rank)
    total = sum_axes(lw, op.input, axes)
    typ = _result_type(op)
    if op.keepdims is None:
        return _round_to(lw, total, typ)
    # keepdims: the same elements with size-1 dims at the reduced axes.
    kept = [d for d in range(rank) if d not in axes]
    return lw.generic([total], lw.empty(typ), [dims_map(rank, kept), identity_map(rank)],
                      [PAR] * rank, lambda b, a: a[0])


def _lower_broadcast(lw: Any, op: Any) -> SSAValue:
    typ = _result_type(op)
    rank = typ.get_num_dims()
    kept = [d for d in range(rank) if d not in op.new_axes(rank)]
    return lw.generic([op.input], lw.empty(typ), [dims_map(rank, kept), identity_map(rank)],
                      [PAR] * rank, lambda b, a: a[0])


def _reduce_space(op: Any, x: SSAValue) -> tuple[int, list[int], list[int]]:
    """(rank, reduced axes, kept dims) of a reduction op of `x`."""
    rank = len(static_shape(x) or ())
    axes = op.reduced_axes(rank)
    return rank, axes, [d for d in range(rank) if d not in axes]


def _takes(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    return b.insert(arith.SelectOp(max_takes(b, a[0], a[1]), a[0], a[1])).result


def _running_max(lw: Any, x: SSAValue, rank: int, axes: Sequence[int],
                 kept: Sequence[int]) -> SSAValue:
    """The max of each group, an f32 tensor over the kept dims (row-major scan)."""
    shape = static_shape(x) or ()
    init = lw.filled(_frame.tensor_type([shape[d] for d in kept]), float("-inf"))
    return lw.generic([x], init, [identity_map(rank), dims_map(rank, kept)],
                      [RED if d in axes else PAR for d in range(rank)], _takes)


def _lower_max(lw: Any, op: Any) -> SSAValue:
    rank, axes, kept = _reduce_space(op, op.input)
    m = _running_max(lw, op.input, rank, axes, kept)
    typ = _result_type(op)
    if m.type == typ:
        return m
    dims = kept if op.keeps_dims() else list(range(len(kept)))
    return expand_kept(lw, m, typ, dims, lambda b, a: a[0])


def _lower_mean(lw: Any, op: Any) -> SSAValue:
    rank, axes, kept = _reduce_space(op, op.input)
    total = sum_axes(lw, op.input, axes)
    shape = static_shape(op.input) or ()
    n = float(prod(shape[a] for a in axes))
    dims = kept if op.keeps_dims() else list(range(len(kept)))
    return expand_kept(lw, total, _result_type(op), dims,
                       lambda b, a: b.insert(arith.DivfOp(a[0], _c(b, n))).result)


def _lower_max_grad(lw: Any, op: Any) -> SSAValue:
    """Two generics: the max of each group (as frame.max), then a scan over the input
    that gives dy to the first element equal to its group's max (the first NaN, when
    the max is NaN) and 0 to the others, a per-group flag recording that it was given.
    The first element equal to the max is the one the forward scan kept: an equal
    element before it would have been kept instead."""
    x, dy = op.lhs, op.rhs
    rank, axes, kept = _reduce_space(op, x)
    m = _running_max(lw, x, rank, axes, kept)
    typ = _result_type(op)
    kept_map = dims_map(rank, kept)
    dy_map = _keepdims_map(rank, axes) if op.keeps_dims() else kept_map
    flag = lw.filled(m.type, 0.0)

    def body(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        xv, mv, dyv, done = a[0], a[1], a[2], a[3]
        equal = b.insert(arith.CmpfOp(xv, mv, "oeq")).result
        both_nan = b.insert(arith.AndIOp(b.insert(arith.CmpfOp(xv, xv, "uno")).result,
                                         b.insert(arith.CmpfOp(mv, mv, "uno")).result)).result
        first = b.insert(arith.CmpfOp(done, _c(b, 0.0), "oeq")).result
        hit = b.insert(arith.AndIOp(first, b.insert(arith.OrIOp(equal, both_nan)).result)
                       ).result
        return [b.insert(arith.SelectOp(hit, _c(b, 1.0), done)).result,
                b.insert(arith.SelectOp(hit, dyv, _c(b, 0.0))).result]

    _, dx = lw.generic_multi([x, m, dy], [flag, lw.empty(typ)],
                             [identity_map(rank), kept_map, dy_map, kept_map,
                              identity_map(rank)],
                             [RED if d in axes else PAR for d in range(rank)], body)
    return dx


def _lower_pick(lw: Any, op: Any) -> SSAValue:
    """maximum: a where a > b or a is NaN, else b (so b on ties, and b's NaN)."""
    pred = "ogt" if isinstance(op, MaximumOp) else "olt"

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        take = b.insert(arith.OrIOp(b.insert(arith.CmpfOp(a[0], a[1], pred)).result,
                                    b.insert(arith.CmpfOp(a[0], a[0], "uno")).result)).result
        return b.insert(arith.SelectOp(take, a[0], a[1])).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _lower_pick_grad(lw: Any, op: Any) -> SSAValue:
    """torch: where(a == b, dy / 2, dy).masked_fill_(<this operand loses>, 0); an operand
    loses a maximum where it is the smaller (ordered: NaN never loses), a minimum where
    it is the larger."""
    wrt = op.wrt.value.data
    loses = "olt" if (wrt == 0) == isinstance(op, MaximumGradOp) else "ogt"

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        av, bv, dyv = a[0], a[1], a[2]
        equal = b.insert(arith.CmpfOp(av, bv, "oeq")).result
        lost = b.insert(arith.CmpfOp(av, bv, loses)).result
        half = b.insert(arith.MulfOp(dyv, _c(b, 0.5))).result
        kept = b.insert(arith.SelectOp(lost, _c(b, 0.0), dyv)).result
        return b.insert(arith.SelectOp(equal, half, kept)).result
    return lw.elementwise(op.operands, _result_type(op), body)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    SumOp: _lower_sum, BroadcastOp: _lower_broadcast, MeanOp: _lower_mean, MaxOp: _lower_max, MaxGradOp: _lower_max_grad,
    MaximumOp: _lower_pick, MinimumOp: _lower_pick, MaximumGradOp: _lower_pick_grad,
    MinimumGradOp: _lower_pick_grad}
