"""convert-frame-to-linalg: lower frame ops to linalg on tensors.

Expects: statically shaped frame IR (run frame-shape-inference first).
Does: rewrites every frame op into `tensor.empty` + `linalg.fill` / `linalg.generic`
with arith bodies, in destination-passing style. One lowering per op, in the
table `LOWERINGS`. The loop order of each generic is chosen here, because
convert-linalg-to-loops keeps the dimension order and LLVM does not interchange
loops: matmuls iterate (i, k, j) -- also when the lhs is transposed -- so the
innermost loop walks rows of B and C contiguously and vectorizes, and a row of C
can stay in registers across the whole k loop.
`frame.sgd_update` takes the parameter itself as its destination, so after
bufferization the update is written in place.
`frame.scan` is left as it is (its step is a function, lowered like any other):
frame-bufferize and frame-lower-scan lower it.
Guarantees: no frame ops remain but `frame.scan`; values are tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import isqrt, log, prod

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, builtin, math, tensor
from xdsl.dialects.builtin import AffineMapAttr, TensorType, f32
from xdsl.dialects.linalg import attrs as linalg_attrs
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from frame_mlir.dialects import (
    frame,
    frame_conv,
    frame_loss,
    frame_math,
    frame_movement,
    frame_norm,
    frame_reduce,
    frame_scan,
    frame_softmax,
    frame_spectral,
)
from frame_mlir.passes.common import fail, provenance
from frame_mlir.passes.linalg_utils import PAR, RED, BodyFn, dims_map, identity_map
from frame_mlir.passes.linalg_utils import f32_const as _f32

#: Storage-only float types: widened to f32 where read, rounded where written.
HALF_TYPES = (builtin.f16, builtin.bf16)


class Lowerer:
    """Builds linalg ops in front of the frame op being replaced."""

    def __init__(self, rewriter: PatternRewriter, op: Operation):
        self.rewriter = rewriter
        self.op = op

    def insert(self, new_op: Operation) -> Operation:
        if isinstance(new_op, linalg.GenericOp | linalg.FillOp):
            # Provenance (layer, stage) follows the computation down the pipeline.
            new_op.attributes.update(provenance(self.op))
        self.rewriter.insert(new_op, InsertPoint.before(self.op))
        return new_op

    def empty(self, typ: TensorType) -> SSAValue:
        return self.insert(tensor.EmptyOp([], typ)).results[0]

    def filled(self, typ: TensorType, value: float) -> SSAValue:
        cst = self.insert(arith.ConstantOp(builtin.FloatAttr(value, typ.element_type))).results[0]
        fill = self.insert(linalg.FillOp([cst], [self.empty(typ)], [typ]))
        return fill.results[0]

    def generic(self, inputs: Sequence[SSAValue], init: SSAValue,
                maps: Sequence[AffineMapAttr], iterators: Sequence[linalg_attrs.IteratorTypeAttr],
                body: BodyFn) -> SSAValue:
        elems = [frame.element_type(v) for v in (*inputs, init)]
        block = Block(arg_types=elems)
        b = Builder(InsertPoint.at_end(block))
        # 16-bit storage (f16, bf16), f32 arithmetic: widen what is loaded, round what
        # is stored (the rounding happens once per op, at its boundary).
        args = [b.insert(arith.ExtFOp(a, f32)).result if a.type in HALF_TYPES else a
                for a in block.args]
        result = body(b, args)
        if elems[-1] != f32:
            result = b.insert(arith.TruncFOp(result, elems[-1])).result
        b.insert(linalg.YieldOp(result))
        # `doc` records which frame op this kernel implements, for kernel names
        # and comments in later stages.
        op = linalg.GenericOp(list(inputs), [init], Region(block), list(maps),
                              list(iterators), [init.type], doc=builtin.StringAttr(self.op.name))
        return self.insert(op).results[0]

    def generic_multi(self, inputs: Sequence[SSAValue], inits: Sequence[SSAValue],
                      maps: Sequence[AffineMapAttr],
                      iterators: Sequence[linalg_attrs.IteratorTypeAttr],
                      body: Callable[[Builder, Sequence[SSAValue]], list[SSAValue]]
                      ) -> list[SSAValue]:
        """A generic with several outputs (f32 arithmetic, like `generic`)."""
        elems = [frame.element_type(v) for v in (*inputs, *inits)]
        block = Block(arg_types=elems)
        b = Builder(InsertPoint.at_end(block))
        args = [b.insert(arith.ExtFOp(a, f32)).result if a.type != f32 else a
                for a in block.args]
        results = body(b, args)
        results = [b.insert(arith.TruncFOp(r, e)).result if e != f32 else r
                   for r, e in zip(results, elems[len(inputs):], strict=True)]
        b.insert(linalg.YieldOp(*results))
        op = linalg.GenericOp(list(inputs), list(inits), Region(block), list(maps),
                              list(iterators), [v.type for v in inits],
                              doc=builtin.StringAttr(self.op.name))
        return list(self.insert(op).results)

    def elementwise(self, inputs: Sequence[SSAValue], typ: TensorType, body: BodyFn,
                    init: SSAValue | None = None) -> SSAValue:
        """One parallel loop per dim of `typ`; an input of another shape is broadcast
        to it as numpy does (`broadcast_map`; a 0-d input is read at every element)."""
        rank = typ.get_num_dims()
        shape = tuple(typ.get_shape())
        maps = [broadcast_map(frame.static_shape(v) or (), shape) for v in inputs]
        return self.generic(inputs, init if init is not None else self.empty(typ),
                            [*maps, identity_map(rank)], [PAR] * rank, body)


def broadcast_map(operand: Sequence[int], result: Sequence[int]) -> AffineMapAttr:
    """How a loop nest over `result` reads an `operand` broadcast to it: without the
    leading dims it lacks, with constant 0 in the size-1 dims it stretches; the
    identity when it is not broadcast."""
    rank, lead = len(result), len(result) - len(operand)
    exprs = [AffineExpr.constant(0) if operand[i] == 1 and result[i + lead] != 1
             else AffineExpr.dimension(i + lead) for i in range(len(operand))]
    return AffineMapAttr(AffineMap(rank, 0, tuple(exprs)))


def _result_type(op: Operation) -> TensorType:
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ


def _binary(make: Callable[[SSAValue, SSAValue], Operation]) -> Callable[[Lowerer, Operation], SSAValue]:
    def lower(lw: Lowerer, op: Operation) -> SSAValue:
        return lw.elementwise(op.operands, _result_type(op),
                              lambda b, a: b.insert(make(a[0], a[1])).results[0])
    return lower


def _neg(lw: Lowerer, op: Operation) -> SSAValue:
    return lw.elementwise(op.operands, _result_type(op),
                          lambda b, a: b.insert(arith.NegfOp(a[0])).result)


def _scale(lw: Lowerer, op: Operation) -> SSAValue:
    assert isinstance(op, frame.ScaleOp)
    factor = op.factor.value.data
    return lw.elementwise(op.operands, _result_type(op),
                          lambda b, a: b.insert(arith.MulfOp(a[0], _f32(b, factor))).result)


def _relu(lw: Lowerer, op: Operation) -> SSAValue:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        zero = _f32(b, 0.0)
        # PyTorch's relu clamps only x < 0: NaN and -0.0 pass through unchanged
        # (`olt` is false for both).
        negative = b.insert(arith.CmpfOp(a[0], zero, "olt")).result
        return b.insert(arith.SelectOp(negative, zero, a[0])).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _relu_grad(lw: Lowerer, op: Operation) -> SSAValue:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        zero = _f32(b, 0.0)
        # PyTorch's threshold_backward zeroes the gradient where x <= 0 only: at a NaN
        # input it passes (`ole` is false for NaN).
        blocked = b.insert(arith.CmpfOp(a[0], zero, "ole")).result
        return b.insert(arith.SelectOp(blocked, zero, a[1])).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _mac(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    # A fused multiply-add: one rounding per step instead of two, and one instruction
    # instead of two in the vectorized loop. PyTorch's matmul rounds as its MKL kernel
    # does for the shape and CPU, so the two agree to rounding (docs/numerics.md).
    return b.insert(math.FmaOp(a[0], a[1], a[2])).result


def _matmul(lw: Lowerer, op: Operation) -> SSAValue:
    """Three loops per product, after one parallel loop per batch dim (a batched
    matmul is a contraction with outer dims: frame-gemm runs it as one GEMM per batch
    index, its tasks splitting the first batch dim)."""
    assert isinstance(op, frame.MatmulOp)
    ta, tb = op.transpose_lhs is not None, op.transpose_rhs is not None
    init = lw.filled(_accumulator_type(_result_type(op)), 0.0)
    if not ta and not tb:  # (i, k, j): C[i,j] += A[i,k] * B[k,j]
        dims, its = [[0, 1], [1, 2], [0, 2]], [PAR, RED, PAR]
    elif ta and not tb:  # (i, k, j): C[i,j] += A[k,i] * B[k,j]; row i of C stays hot
        dims, its = [[1, 0], [1, 2], [0, 2]], [PAR, RED, PAR]
    elif not ta and tb:  # (i, j, k): C[i,j] += A[i,k] * B[j,k]
        dims, its = [[0, 2], [1, 2], [0, 1]], [PAR, PAR, RED]
    else:  # (i, j, k): C[i,j] += A[k,i] * B[j,k]
        dims, its = [[2, 0], [1, 2], [0, 1]], [PAR, PAR, RED]
    nb = len(frame.static_shape(op.lhs) or ()) - 2
    batch = list(range(nb))
    maps = [dims_map(nb + 3, batch + [d + nb for d in ds]) for ds in dims]
    return _round_to(lw, lw.generic([op.lhs, op.rhs], init, maps, [PAR] * nb + its, _mac),
                     _result_type(op))


def _accumulator_type(typ: TensorType) -> TensorType:
    """Reductions accumulate in f32 whatever the storage type."""
    return TensorType(f32, typ.get_shape())


def _round_to(lw: Lowerer, value: SSAValue, typ: TensorType) -> SSAValue:
    """`value` (an f32 accumulator) stored as `typ`: a rounding pass when they differ."""
    if value.type == typ:
        return value
    return lw.elementwise([value], typ, lambda b, a: a[0])


#: Full reductions of more elements than this are summed in blocks (`_block_size`).
BLOCKED_SUM_MIN = 4096


def _accumulate(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
    """The body of a plain sum: accumulator (the last block argument) + element."""
    return b.insert(arith.AddfOp(a[1], a[0])).result


def _sum_into(lw: Lowerer, inputs: Sequence[SSAValue], body: BodyFn) -> SSAValue:
    """Reduce all elements of same-shaped inputs into a 0-d f32 tensor.

    Up to BLOCKED_SUM_MIN elements: one accumulator, row-major order. Beyond, in two
    levels: the row-major sequence is cut into blocks of B near sqrt(N) (`_block_size`),
    each block sums into its own partial, then the partials add up in order. A
    sequential f32 sum's error grows like N, a blocked one's like B + N / B: for 2e6
    squares that is ~1e-6 instead of ~1e-3 relative (docs/numerics.md).
    """
    shape = frame.static_shape(inputs[0])
    assert shape is not None
    rank = len(shape)
    init = lw.filled(frame.tensor_type(()), 0.0)  # f32 accumulator for any input type
    block = _block_size(shape)
    if block is None:
        return lw.generic(inputs, init, [identity_map(rank)] * len(inputs)
                          + [dims_map(rank, [])], [RED] * rank, body)
    blocks = prod(shape) // block
    partials = lw.filled(frame.tensor_type((blocks,)), 0.0)
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


def sum_axes(lw: Lowerer, x: SSAValue, axes: Sequence[int]) -> SSAValue:
    """The sum of `x` over `axes`: an f32 tensor over the other dims (frame.sum's and
    frame.mean's accumulator): blocked when a large full reduction, per column when
    the last dim is summed with others (`_column_sum`), else one running sum."""
    shape = frame.static_shape(x) or ()
    rank = len(shape)
    kept = [d for d in range(rank) if d not in axes]
    if not kept:  # a full reduction: blocked when large, like the mse loss
        return _sum_into(lw, [x], _accumulate)
    if rank - 1 in axes and len(axes) > 1 and shape[-1] >= COLUMN_SUM_MIN:
        return _column_sum(lw, x, kept, axes)
    init = lw.filled(frame.tensor_type([shape[d] for d in kept]), 0.0)
    return lw.generic([x], init, [identity_map(rank), dims_map(rank, kept)],
                      [RED if d in axes else PAR for d in range(rank)], _accumulate)


def _sum(lw: Lowerer, op: Operation) -> SSAValue:
    assert isinstance(op, frame.SumOp)
    rank = len(frame.static_shape(op.input) or ())
    axes = op.reduced_axes(rank)
    total = sum_axes(lw, op.input, axes)
    typ = _result_type(op)
    if op.keepdims is None:
        return _round_to(lw, total, typ)
    # keepdims: the same elements with size-1 dims at the reduced axes.
    kept = [d for d in range(rank) if d not in axes]
    return lw.generic([total], lw.empty(typ), [dims_map(rank, kept), identity_map(rank)],
                      [PAR] * rank, lambda b, a: a[0])


#: A partial sum over the last (contiguous) dim and others, whose last dim is at least
#: this long, is summed per column first (`_column_sum`).
COLUMN_SUM_MIN = 8


def _column_sum(lw: Lowerer, x: SSAValue, kept: Sequence[int], axes: Sequence[int]
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
    shape = frame.static_shape(x) or ()
    rank = len(shape)
    last = rank - 1
    others = [d for d in axes if d != last]
    order = [*kept, *others, last]  # loop dim i iterates input dim order[i]
    pos = {d: i for i, d in enumerate(order)}
    x_map = dims_map(rank, [pos[d] for d in range(rank)])
    p_map = dims_map(rank, [pos[d] for d in kept] + [rank - 1])
    partial = lw.filled(frame.tensor_type((*(shape[d] for d in kept), shape[last])), 0.0)
    partial = lw.generic([x], partial, [x_map, p_map],
                         [PAR] * len(kept) + [RED] * len(others) + [PAR], _accumulate)
    k = len(kept)
    init = lw.filled(frame.tensor_type(tuple(shape[d] for d in kept)), 0.0)
    return lw.generic([partial], init, [identity_map(k + 1), dims_map(k + 1, range(k))],
                      [PAR] * k + [RED], _accumulate)


def _broadcast(lw: Lowerer, op: Operation) -> SSAValue:
    assert isinstance(op, frame.BroadcastOp)
    typ = _result_type(op)
    rank = typ.get_num_dims()
    kept = [d for d in range(rank) if d not in op.new_axes(rank)]
    return lw.generic([op.input], lw.empty(typ), [dims_map(rank, kept), identity_map(rank)],
                      [PAR] * rank, lambda b, a: a[0])


def _numel(value: SSAValue) -> int:
    return prod(frame.static_shape(value) or ())


def _mse_loss(lw: Lowerer, op: Operation) -> SSAValue:
    def sq_acc(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        d = b.insert(arith.SubfOp(a[0], a[1])).result
        sq = b.insert(arith.MulfOp(d, d)).result
        return b.insert(arith.AddfOp(a[2], sq)).result

    total = _sum_into(lw, op.operands, sq_acc)
    n = float(_numel(op.operands[0]))
    # The mean divides by N, as PyTorch's reduction='mean' does.
    return lw.elementwise([total], _result_type(op),
                          lambda b, a: b.insert(arith.DivfOp(a[0], _f32(b, n))).result)


def _mse_loss_grad(lw: Lowerer, op: Operation) -> SSAValue:
    n = _numel(op.operands[0])
    norm = 2.0 / n if n else 0.0  # an empty tensor: the gradient has no elements anyway

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        d = b.insert(arith.SubfOp(a[0], a[1])).result
        scaled = b.insert(arith.MulfOp(_f32(b, norm), d)).result
        return b.insert(arith.MulfOp(scaled, a[2])).result

    return lw.elementwise(op.operands, _result_type(op), body)


def _constant(lw: Lowerer, op: Operation) -> SSAValue:
    assert isinstance(op, frame.ConstantOp)
    return lw.filled(_result_type(op), op.splat_value())


def _sgd_update(lw: Lowerer, op: Operation) -> SSAValue:
    assert isinstance(op, frame.SgdUpdateOp)
    neg_lr = -op.lr.value.data

    # Destination = the parameter: p <- p + (-lr) * g, as torch.optim.SGD's add_(g, alpha=-lr).
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        step = b.insert(arith.MulfOp(a[0], _f32(b, neg_lr))).result
        return b.insert(arith.AddfOp(a[1], step)).result

    return lw.elementwise([op.rhs], _result_type(op), body, init=op.lhs)


def _sigmoid_of(b: Builder, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x)), the form PyTorch's CPU kernel uses."""
    e = b.insert(math.ExpOp(b.insert(arith.NegfOp(x)).result)).result
    one = _f32(b, 1.0)
    return b.insert(arith.DivfOp(one, b.insert(arith.AddfOp(one, e)).result)).result


def _sigmoid(lw: Lowerer, op: Operation) -> SSAValue:
    return lw.elementwise(op.operands, _result_type(op), lambda b, a: _sigmoid_of(b, a[0]))


def _heaviside(lw: Lowerer, op: Operation) -> SSAValue:
    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        # Ordered >=: -0.0 >= 0 holds, NaN gives 0.
        fire = b.insert(arith.CmpfOp(a[0], _f32(b, 0.0), "oge")).result
        return b.insert(arith.SelectOp(fire, _f32(b, 1.0), _f32(b, 0.0))).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _heaviside_grad(lw: Lowerer, op: Operation) -> SSAValue:
    assert isinstance(op, frame.HeavisideSurrogateGradOp)
    alpha = op.alpha.value.data

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        al = _f32(b, alpha)
        sig = _sigmoid_of(b, b.insert(arith.MulfOp(al, a[0])).result)
        one_minus = b.insert(arith.SubfOp(_f32(b, 1.0), sig)).result
        slope = b.insert(arith.MulfOp(b.insert(arith.MulfOp(al, sig)).result, one_minus))
        return b.insert(arith.MulfOp(a[1], slope.result)).result
    return lw.elementwise(op.operands, _result_type(op), body)


def _scan_space(shape: Sequence[int], reverse: bool = False
                ) -> tuple[AffineMapAttr, AffineMapAttr, list[linalg_attrs.IteratorTypeAttr]]:
    """(full map, carried-state map, iterators) of a scan along the last axis; with
    `reverse`, the last loop walks t = T-1 .. 0."""
    rank = len(shape)
    d = [AffineExpr.dimension(i) for i in range(rank)]
    last = AffineExpr.constant(shape[-1] - 1) - d[-1] if reverse else d[-1]
    full = AffineMapAttr(AffineMap(rank, 0, (*d[:-1], last)))
    state = AffineMapAttr(AffineMap(rank, 0, tuple(d[:-1])))
    return full, state, [PAR] * (rank - 1) + [RED]


def _mul_add(b: Builder, p: SSAValue, q: SSAValue, r: SSAValue, s: SSAValue) -> SSAValue:
    """p*q + r*s, two roundings per product and one for the sum (no FMA)."""
    pq = b.insert(arith.MulfOp(p, q)).result
    rs = b.insert(arith.MulfOp(r, s)).result
    return b.insert(arith.AddfOp(pq, rs)).result


def _selective_scan(lw: Lowerer, op: Operation) -> SSAValue:
    """One generic: the state h is an output indexed by the leading dims only, so it
    carries from step t to t+1 of the (sequential) last loop."""
    typ = _result_type(op)
    shape = tuple(typ.get_shape())
    full, state, its = _scan_space(shape)
    h0 = lw.filled(TensorType(f32, shape[:-1]), 0.0)

    def body(b: Builder, v: Sequence[SSAValue]) -> list[SSAValue]:
        x, a, bb, c, d, h = v[:6]
        h_new = _mul_add(b, a, h, bb, x)
        return [h_new, _mul_add(b, c, h_new, d, x)]

    _, y = lw.generic_multi(op.operands, [h0, lw.empty(typ)], [full] * 5 + [state, full], its,
                            body)
    return y


def _selective_scan_grad(lw: Lowerer, op: Operation) -> SSAValue:
    assert isinstance(op, frame.SelectiveScanGradOp)
    wrt = op.wrt.value.data
    typ = _result_type(op)
    shape = tuple(typ.get_shape())
    f32_full = TensorType(f32, shape)
    full, state, its = _scan_space(shape)
    x, a, b_, c, d, dy = op.operands

    # Forward: the states h_t and h_{t-1}.
    def forward(b: Builder, v: Sequence[SSAValue]) -> list[SSAValue]:
        xv, av, bv, h_prev = v[0], v[1], v[2], v[3]
        h = _mul_add(b, av, h_prev, bv, xv)
        return [h, h, h_prev]

    _, hs, hps = lw.generic_multi(
        [x, a, b_], [lw.filled(TensorType(f32, shape[:-1]), 0.0), lw.empty(f32_full),
                     lw.empty(f32_full)], [full] * 3 + [state, full, full], its, forward)

    # Reverse: gh_t = c_t dy_t + a_{t+1} gh_{t+1}; the carry holds a_t gh_t.
    rfull, rstate, rits = _scan_space(shape, reverse=True)

    def reverse(b: Builder, v: Sequence[SSAValue]) -> list[SSAValue]:
        xv, av, bv, cv, dv, gy, h, hp, _shape, carry = v[:10]
        gh = b.insert(arith.AddfOp(b.insert(arith.MulfOp(cv, gy)).result, carry)).result
        new_carry = b.insert(arith.MulfOp(av, gh)).result
        grad = [
            lambda: _mul_add(b, dv, gy, bv, gh),  # x
            lambda: b.insert(arith.MulfOp(gh, hp)).result,  # a
            lambda: b.insert(arith.MulfOp(gh, xv)).result,  # b
            lambda: b.insert(arith.MulfOp(gy, h)).result,  # c
            lambda: b.insert(arith.MulfOp(gy, xv)).result,  # d
        ][wrt]()
        return [new_carry, grad]

    # A shape-only operand with the identity map keeps the maps invertible (linalg
    # derives the loop bounds from them; t -> T-1-t alone does not say T).
    _, g = lw.generic_multi(
        [x, a, b_, c, d, dy, hs, hps, lw.empty(f32_full)],
        [lw.filled(TensorType(f32, shape[:-1]), 0.0), lw.empty(typ)],
        [rfull] * 8 + [identity_map(len(shape)), rstate, rfull], rits, reverse)
    return g


def _row_match(b: Builder, index: SSAValue, row_dim: int) -> SSAValue:
    """index (i32/i64 element) == the loop index of `row_dim` (an i1)."""
    row = b.insert(linalg.IndexOp(row_dim)).result
    as_index = b.insert(arith.IndexCastOp(index, builtin.IndexType())).result
    return b.insert(arith.CmpiOp(as_index, row, "eq")).result


def _one_hot_rows(lw: Lowerer, op: Operation, values: SSAValue, indices: SSAValue,
                  values_dims: list[int], index_dim: int, row_dim: int) -> SSAValue:
    """A row gather or scatter over (i, f, j) as a dense one-hot reduction: add
    values[.., f] where indices[index_dim] equals the loop index `row_dim`. linalg
    cannot express a data-dependent index, but it can express this."""
    typ = _result_type(op)
    maps = [dims_map(3, values_dims), dims_map(3, [index_dim]), dims_map(3, [0, 1])]

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        hit = _row_match(b, a[1], row_dim)
        added = b.insert(arith.AddfOp(a[2], a[0])).result
        return b.insert(arith.SelectOp(hit, added, a[2])).result

    total = lw.generic([values, indices], lw.filled(_accumulator_type(typ), 0.0), maps,
                       [PAR, PAR, RED], body)
    return _round_to(lw, total, typ)


def _scatter_add(lw: Lowerer, op: Operation) -> SSAValue:
    """out[v, f] = sum_k (indices[k] == v) * updates[k, f], over (v, f, k)."""
    assert isinstance(op, frame.ScatterAddOp)
    return _one_hot_rows(lw, op, op.updates, op.indices, [2, 1], 2, 0)


def _gather_rows(lw: Lowerer, op: Operation) -> SSAValue:
    """out[k, f] = sum_v (indices[k] == v) * x[v, f], over (k, f, v)."""
    assert isinstance(op, frame.GatherRowsOp)
    return _one_hot_rows(lw, op, op.source, op.indices, [2, 1], 0, 2)


LOWERINGS: dict[type[Operation], Callable[[Lowerer, Operation], SSAValue]] = {
    frame.ScatterAddOp: _scatter_add,
    frame.GatherRowsOp: _gather_rows,
    frame.SelectiveScanOp: _selective_scan,
    frame.SelectiveScanGradOp: _selective_scan_grad,
    frame.SigmoidOp: _sigmoid,
    frame.HeavisideSurrogateOp: _heaviside,
    frame.HeavisideSurrogateGradOp: _heaviside_grad,
    frame.AddOp: _binary(arith.AddfOp),
    frame.SubOp: _binary(arith.SubfOp),
    frame.MulOp: _binary(arith.MulfOp),
    frame.NegOp: _neg,
    frame.ScaleOp: _scale,
    frame.ReluOp: _relu,
    frame.ReluGradOp: _relu_grad,
    frame.MatmulOp: _matmul,
    frame.SumOp: _sum,
    frame.BroadcastOp: _broadcast,
    frame.MseLossOp: _mse_loss,
    frame.MseLossGradOp: _mse_loss_grad,
    frame.ConstantOp: _constant,
    frame.SgdUpdateOp: _sgd_update,
}
LOWERINGS.update(frame_conv.LOWERINGS)
LOWERINGS.update(frame_math.LOWERINGS)
LOWERINGS.update(frame_softmax.LOWERINGS)
LOWERINGS.update(frame_norm.LOWERINGS)
LOWERINGS.update(frame_movement.LOWERINGS)
LOWERINGS.update(frame_reduce.LOWERINGS)
LOWERINGS.update(frame_spectral.LOWERINGS)
LOWERINGS.update(frame_loss.LOWERINGS)
LOWERINGS.update(frame_scan.LOWERINGS)


class _LowerFrameOp(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, frame.FrameOp) or isinstance(op, frame_scan.ScanOp):
            return  # a scan stays, on tensors: frame-bufferize and frame-lower-scan lower it
        lower = LOWERINGS.get(type(op))
        if lower is None:
            raise fail(ConvertFrameToLinalg.name, op, f"no linalg lowering for {op.name}")
        if any(frame.static_shape(v) is None for v in (*op.operands, *op.results)):
            raise fail(ConvertFrameToLinalg.name, op,
                       "expected static shapes (run frame-shape-inference first)")
        rewriter.replace(op, [], [lower(Lowerer(rewriter, op), op)])


@dataclass(frozen=True)
class ConvertFrameToLinalg(ModulePass):
    """Lower every frame op to linalg.generic / linalg.fill on tensors."""

    name = "convert-frame-to-linalg"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(_LowerFrameOp(), apply_recursively=False).rewrite_module(op)
