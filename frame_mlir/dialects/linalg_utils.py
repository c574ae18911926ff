"""Small builders for linalg.generic shared by the passes that create them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import AffineMapAttr, FloatAttr, TensorType, f32
from xdsl.dialects.linalg import attrs as linalg_attrs
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

PAR = linalg_attrs.IteratorTypeAttr.parallel()
RED = linalg_attrs.IteratorTypeAttr.reduction()


def dims_map(num_dims: int, dims: Sequence[int]) -> AffineMapAttr:
    """`(d0, ..., d{num_dims-1}) -> (d{dims[0]}, ...)`."""
    return AffineMapAttr(AffineMap(num_dims, 0, tuple(AffineExpr.dimension(d) for d in dims)))


def identity_map(rank: int) -> AffineMapAttr:
    return dims_map(rank, range(rank))


def copy_generic(src: SSAValue, dst: SSAValue) -> linalg.GenericOp:
    """An identity linalg.generic copying `src` into `dst` (same static shape);
    on tensors it returns the new value, on memrefs it writes `dst`."""
    rank = len(src.type.get_shape())  # type: ignore[attr-defined]
    elem = src.type.element_type  # type: ignore[attr-defined]
    block = Block(arg_types=[elem, elem])
    block.add_op(linalg.YieldOp(block.args[0]))
    res = [dst.type] if isinstance(dst.type, TensorType) else []
    return linalg.GenericOp([src], [dst], Region(block), [identity_map(rank)] * 2,
                            [PAR] * rank, res)


# --- scalar bodies and row reductions, for the lowerings of convert-frame-to-linalg and
# of the op families (`frame_mlir/dialects/frame_*.py`); `lw` is its `Lowerer`.

BodyFn = Callable[[Builder, Sequence[SSAValue]], SSAValue]


def f32_const(b: Builder, value: float) -> SSAValue:
    """An f32 constant inside a body."""
    return b.insert(arith.ConstantOp(FloatAttr(value, f32))).result


def max_takes(b: Builder, x: SSAValue, running: SSAValue) -> SSAValue:
    """PyTorch's max scan: `x` replaces the running max when it is greater or NaN.

    So a NaN wins, and among equal values (-0.0 and +0.0 included) the first stays.
    """
    greater = b.insert(arith.CmpfOp(x, running, "ogt")).result
    nan = b.insert(arith.CmpfOp(x, x, "uno")).result
    return b.insert(arith.OrIOp(greater, nan)).result


def row_reduce(lw: Any, inputs: Sequence[SSAValue], axis: int, init: float, body: BodyFn,
               row_inputs: Sequence[SSAValue] = ()) -> SSAValue:
    """An f32 tensor of the inputs' shape without `axis`, reduced along it from `init` in
    index order; `row_inputs` (of that reduced shape) are read per row. `body` gets the
    inputs' elements, the row inputs' and the accumulator."""
    shape = list(inputs[0].type.get_shape())  # type: ignore[attr-defined]
    rank = len(shape)
    kept = [d for d in range(rank) if d != axis]
    out = lw.filled(TensorType(f32, [shape[d] for d in kept]), init)
    maps = [identity_map(rank)] * len(inputs) + [dims_map(rank, kept)] * (len(row_inputs) + 1)
    its = [RED if d == axis else PAR for d in range(rank)]
    return lw.generic([*inputs, *row_inputs], out, maps, its, body)


def result_type(op: Any) -> TensorType:
    """The (static tensor) type of `op`'s first result."""
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ


def accumulator_type(typ: TensorType) -> TensorType:
    """Reductions accumulate in f32 whatever the storage type."""
    return TensorType(f32, typ.get_shape())


def round_to(lw: Any, value: SSAValue, typ: TensorType) -> SSAValue:
    """`value` (an f32 accumulator) stored as `typ`: a rounding pass when they differ."""
    if value.type == typ:
        return value
    return lw.elementwise([value], typ, lambda b, a: a[0])


#: Lanes of a split row reduction (`lane_reduce`): a fixed 16, not the host's vector
#: width, so that the summation order, and so the result, is the same on every host.
REDUCE_LANES = 16


def splittable(inputs: Sequence[SSAValue], axis: int) -> bool:
    """Whether a reduction of `inputs` along `axis` splits into lanes (`lane_reduce_multi`)."""
    shape = list(inputs[0].type.get_shape())  # type: ignore[attr-defined]
    d = shape[axis]
    return axis == len(shape) - 1 and d % REDUCE_LANES == 0 and d >= 2 * REDUCE_LANES


def lane_reduce_multi(lw: Any, inputs: Sequence[SSAValue], axis: int, inits: Sequence[float],
                      body: Callable[[Builder, Sequence[SSAValue]], list[SSAValue]],
                      combines: Sequence[BodyFn], row_inputs: Sequence[SSAValue] = (),
                      axis_inputs: Sequence[SSAValue] = (), stored: int = 0) -> list[SSAValue]:
    """`len(inits)` f32 tensors of the inputs' shape without `axis`, each reduced along
    it, in REDUCE_LANES interleaved partial results combined at the end.

    `body` gets the inputs' elements, the axis inputs' (1-D, indexed by the reduced
    axis: a layer norm's gamma), the row inputs' and the accumulators, and returns the
    new accumulators (as `row_reduce`'s body does); `combines[i](b, [part, acc])`
    folds a partial result into accumulator i. Each `inits[i]` must be the identity of
    its combine (0.0 for a sum, -inf for a max): every partial result starts from it.

    Why: a reduction along the contiguous last axis in index order is a chain the loop
    vectorizer cannot widen, so a softmax's row sums ran one element at a time. Here
    element j of a row goes to partial result j % REDUCE_LANES: the first generic loops
    (rows..., j // REDUCE_LANES, j % REDUCE_LANES) with the lanes innermost and parallel,
    so its body runs on vectors; the second folds the partial results of each row in
    lane order. The order is fixed (not the host's vector width): the same bits on every
    host and thread count. Used when the axis is the last one and its size a multiple
    of REDUCE_LANES (at least two of them); otherwise the reduction runs in index order
    (`row_reduce`'s loops).

    `stored` > 0 (split reductions only): `body` also returns that many per-element f32
    values after the accumulators, written to as many f32 tensors of the inputs' shape,
    returned after the reductions -- a softmax keeps each exp it sums, and its final pass
    divides instead of computing the exp again. (It gets the tensors' old elements after
    the accumulators, and ignores them.)
    """
    shape = list(inputs[0].type.get_shape())  # type: ignore[attr-defined]
    rank = len(shape)
    kept = list(range(rank - 1))
    n_in, n_axis, n_rows = len(inputs), len(axis_inputs), len(row_inputs)
    assert not stored or splittable(inputs, axis), "stored values need a split reduction"
    if not splittable(inputs, axis):
        its = [RED if d == axis else PAR for d in range(rank)]
        keep = [d for d in range(rank) if d != axis]
        outs = [lw.filled(TensorType(f32, [shape[d] for d in keep]), v) for v in inits]
        maps = ([identity_map(rank)] * n_in + [dims_map(rank, [axis])] * n_axis
                + [dims_map(rank, keep)] * (n_rows + len(inits)))
        return lw.generic_multi([*inputs, *axis_inputs, *row_inputs], outs, maps, its, body)
    lanes, blocks = REDUCE_LANES, shape[-1] // REDUCE_LANES
    # Loops (rows..., q, l): element q * lanes + l of each row.
    q, lane = AffineExpr.dimension(rank - 1), AffineExpr.dimension(rank)
    rows_exprs = tuple(AffineExpr.dimension(d) for d in kept)
    elem = AffineMapAttr(AffineMap(rank + 1, 0, (*rows_exprs, q * lanes + lane)))
    along = AffineMapAttr(AffineMap(rank + 1, 0, (q * lanes + lane,)))
    row = AffineMapAttr(AffineMap(rank + 1, 0, rows_exprs))
    part = AffineMapAttr(AffineMap(rank + 1, 0, (*rows_exprs, lane)))
    # No operand is indexed by q alone, and linalg derives each loop's bound from an
    # operand dim indexed by that loop: a [blocks] operand, never read, gives q's.
    bound = lw.empty(TensorType(f32, [blocks]))
    bound_map = AffineMapAttr(AffineMap(rank + 1, 0, (q,)))
    part_type = TensorType(f32, [*(shape[d] for d in kept), lanes])
    n_read = n_in + n_axis + n_rows
    # Each stored element is written once, at the iteration that reads its input.
    outs = lw.generic_multi(
        [*inputs, *axis_inputs, *row_inputs, bound],
        [*(lw.filled(part_type, v) for v in inits),
         *(lw.empty(TensorType(f32, shape)) for _ in range(stored))],
        [*[elem] * n_in, *[along] * n_axis, *[row] * n_rows, bound_map,
         *[part] * len(inits), *[elem] * stored],
        [*[PAR] * (rank - 1), RED, PAR],
        lambda b, a: body(b, [*a[:n_read], *a[n_read + 1:]]))
    parts = outs[:len(inits)]
    results = []
    for p, v, combine in zip(parts, inits, combines, strict=True):
        out = lw.filled(TensorType(f32, [shape[d] for d in kept]), v)
        results.append(lw.generic([p], out, [identity_map(rank), dims_map(rank, kept)],
                                  [*[PAR] * (rank - 1), RED], combine))
    return [*results, *outs[len(inits):]]


def lane_reduce(lw: Any, inputs: Sequence[SSAValue], axis: int, init: float, body: BodyFn,
                combine: BodyFn, row_inputs: Sequence[SSAValue] = ()) -> SSAValue:
    """`row_reduce` in REDUCE_LANES partial results where the axis allows
    (`lane_reduce_multi`); `combine(b, [part, acc])` folds a partial result into the
    accumulator, `init` is its identity."""
    if not splittable(inputs, axis):
        return row_reduce(lw, inputs, axis, init, body, row_inputs)
    return lane_reduce_multi(lw, inputs, axis, [init], lambda b, a: [body(b, a)], [combine],
                             row_inputs)[0]


def add_combine(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    """The combine of a sum (`lane_reduce`): acc + part."""
    return b.insert(arith.AddfOp(a[1], a[0])).result
