"""frame-fuse-elementwise: merge chains of elementwise linalg.generic ops into one.

Expects: linalg on tensors (convert-frame-to-linalg output, before bufferization).
Does: a `linalg.generic` P is merged into the `linalg.generic` C that reads its
result when
  - both have only `parallel` iterators, the same number of loops, one output and
    one tensor result, and sit in the same block;
  - every use of P's result is an input of C (not C's destination): a use by another
    op would make the merged op recompute P, or P need a second result. C may read
    it more than once (`mul %p, %p`): the merged body computes it once;
  - C reads it through P's output map, and that map is a permutation of the loops
    (the identity in practice): iteration x of C then reads exactly what iteration
    x of P wrote, so P's inputs keep their own maps in the merged op;
  - P's body does not read its destination (its init value is not carried over;
    the dead widening of an f16 destination that every lowered body has is dropped);
  - every loop stays a bare dim of some map of the merged op (linalg reads the loop
    bounds off those; a slice feeding a reshape would lose one);
  - P reads C's destination, if at all, through C's output map: C may write in place
    (`sgd_update`, `update`: the destination is a donated parameter), and iteration x
    of the merged op must not read an element another iteration has already
    overwritten (`update %p, add(transpose(%p), %p)` keeps the transpose apart).
The merged generic takes C's inputs with P's result replaced, in place, by P's
inputs (an input that both read through the same map is passed once), keeps C's
destination (`outs`), iterators, location and discardable attributes, and its body
is P's body followed by C's, P's yielded value standing for C's block argument.
P, and its destination when that was a `tensor.empty` nobody else uses, are erased.
This repeats to a fixed point, so `add -> relu`, a broadcast feeding an add, the
rounding of an f16 matmul feeding its bias add, or an elementwise gradient feeding
`sgd_update` become one generic: one kernel, one loop, no intermediate buffer.
Reductions, `linalg.fill` and generics with several results are never merged, nor
is a result read through another map than the one it was written with (a
transposed read), one written through a map that is not a permutation (a
reshape's), or a producer whose result several ops read.
Numerics: every op of both bodies is kept as it was. f16 storage is widened to f32
inside each body and rounded when stored (convert-frame-to-linalg): P's body ends
in its `arith.truncf` to the stored type and C's begins with the `arith.extf` of
that value, so the merged body rounds exactly where the separate ops stored, and
results are bit-identical to the unfused pipeline.
Guarantees: every merged op is an all-parallel, single-result generic in
destination-passing style; its `doc` is the chain of the merged ops' docs, in body
order, joined by `+` (`"frame.add+frame.relu"`; frame-outline-kernels names the
kernel `..._add_relu`); its provenance (`frame.layer`, `frame.stage`) is C's, the op
whose result and destination it keeps -- the buffer it writes belongs to C's layer
and stage (an activation's layer, the parameter an update writes), and the chain in
`doc` says which ops were folded in.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, tensor
from xdsl.dialects.builtin import AffineMapAttr, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from frame_mlir.dialects.linalg_utils import PAR

#: Separator of the op names in the `doc` of a merged generic.
DOC_SEPARATOR = "+"


def _elementwise(op: linalg.GenericOp) -> bool:
    """All-parallel, one output, one tensor result: what may take part in a fusion."""
    return (all(it == PAR for it in op.iterator_types.data) and len(op.outputs) == 1
            and len(op.results) == 1 and isinstance(op.results[0].type, TensorType))


def _is_permutation(amap: AffineMapAttr) -> bool:
    """Every loop dim appears exactly once among the results (no constants, no
    symbols, no compound expressions): a bijection between loops and elements."""
    m = amap.data
    dims = [e.position for e in m.results if isinstance(e, AffineDimExpr)]
    return (m.num_symbols == 0 and len(m.results) == m.num_dims == len(dims)
            and sorted(dims) == list(range(m.num_dims)))


def _dead_widenings(body: Block) -> list[Operation]:
    """The `arith.extf` of the destination argument whose result nobody uses.

    convert-frame-to-linalg widens every f16 block argument, the destination's too,
    also when the body never reads it; such a widening is dead and is dropped when
    the body is merged (the destination it reads is gone)."""
    return [use.operation for use in body.args[-1].uses
            if isinstance(use.operation, arith.ExtFOp) and not use.operation.result.uses]


def _reads_only_inputs(body: Block) -> bool:
    """Whether the body's value depends on its inputs only, not on its destination."""
    return len(_dead_widenings(body)) == body.args[-1].uses.get_length()


def _fusable_producer(consumer: linalg.GenericOp) -> linalg.GenericOp | None:
    """A producer of an input of `consumer` that can be merged into it, if any."""
    if not _elementwise(consumer):
        return None
    maps = consumer.indexing_maps.data
    n_in = len(consumer.inputs)
    for value in consumer.inputs:
        producer = value.owner
        if not isinstance(producer, linalg.GenericOp) or producer.parent is not consumer.parent:
            continue
        if not _elementwise(producer):
            continue
        if len(producer.iterator_types.data) != len(consumer.iterator_types.data):
            continue
        out_map = producer.indexing_maps.data[-1]
        if not _is_permutation(out_map):
            continue
        # Every use is an input of this consumer read through the producer's own map
        # (`mul %p, %p` too: the merged body computes p once and reads it twice).
        if not all(u.operation is consumer and u.index < n_in and maps[u.index] == out_map
                   for u in value.uses):
            continue
        body = producer.body.block
        if not _reads_only_inputs(body):  # reads its destination (an update)
            continue
        if not isinstance(body.last_op, linalg.YieldOp) or len(body.last_op.operands) != 1:
            continue
        if not _loops_bounded(consumer, value, producer):
            continue
        if not _reads_destination_in_step(consumer, producer):
            continue
        return producer
    return None


def _loops_bounded(consumer: linalg.GenericOp, value: SSAValue,
                   producer: linalg.GenericOp) -> bool:
    """Whether every loop of the merged op is still a bare dim of some operand's map
    (linalg reads the loop bounds off those): a producer that reads part of a dim
    (a slice, `d1 + 1`) feeding a consumer that writes through a compound map (a
    reshape) would leave that loop unbounded."""
    maps = [m for v, m in zip((*consumer.inputs, *consumer.outputs),
                              consumer.indexing_maps.data, strict=True) if v is not value]
    maps += list(producer.indexing_maps.data[:len(producer.inputs)])
    bare = {e.position for m in maps for e in m.data.results if isinstance(e, AffineDimExpr)}
    return bare >= set(range(len(consumer.iterator_types.data)))


def _reads_destination_in_step(consumer: linalg.GenericOp,
                               producer: linalg.GenericOp) -> bool:
    """Whether every read of the consumer's destination by the producer goes through
    the consumer's output map: once bufferized in place (the destination a donated
    argument), the merged op then reads each element in the iteration that writes
    it, never after; a transposed or shifted read would see overwritten elements."""
    dest, out_map = consumer.outputs[0], consumer.indexing_maps.data[-1]
    return all(m == out_map for v, m in zip(producer.inputs, producer.indexing_maps.data,
                                            strict=False) if v is dest)


def _doc(op: linalg.GenericOp) -> str:
    return op.doc.data if op.doc is not None else "generic"


def fuse(producer: linalg.GenericOp, consumer: linalg.GenericOp) -> linalg.GenericOp:
    """Merge `producer` into `consumer`, which reads its result (as checked by
    `_fusable_producer`); returns the merged op, which replaces `consumer`."""
    result = producer.results[0]
    reads = [i for i, v in enumerate(consumer.inputs) if v is result]
    c_maps = consumer.indexing_maps.data
    p_maps = producer.indexing_maps.data
    p_block, c_block = producer.body.block, consumer.body.block
    # Operand order: the consumer's inputs, the producer's inputs in place of its
    # result (at the first place it was read).
    operands: list[tuple[SSAValue, AffineMapAttr, Attribute]] = []
    for i, v in enumerate(consumer.inputs):
        if i == reads[0]:
            operands += list(zip(producer.inputs, p_maps, p_block.arg_types, strict=False))
        elif v is not result:
            operands.append((v, c_maps[i], c_block.args[i].type))
    slots: dict[tuple[SSAValue, AffineMapAttr], int] = {}
    arg_types: list[Attribute] = []
    for v, m, t in operands:
        if (v, m) not in slots:  # the same value read the same way: one input
            slots[(v, m)] = len(slots)
            arg_types.append(t)
    inputs = list(slots)
    block = Block(arg_types=[*arg_types, c_block.args[-1].type])
    mapping: dict[SSAValue, SSAValue] = {
        arg: block.args[slots[(v, m)]]
        for arg, v, m in zip(p_block.args, producer.inputs, p_maps, strict=False)}
    dead = _dead_widenings(p_block)
    yield_op = p_block.last_op
    assert isinstance(yield_op, linalg.YieldOp)
    for op in p_block.ops:
        if op is not yield_op and op not in dead:
            block.add_op(op.clone(value_mapper=mapping))
    # The producer's stored value (rounded to its element type, like the buffer it no
    # longer writes) is what the consumer's argument held.
    stored = mapping.get(yield_op.operands[0], yield_op.operands[0])
    for i, (arg, v) in enumerate(zip(c_block.args, consumer.inputs, strict=False)):
        mapping[arg] = stored if v is result else block.args[slots[(v, c_maps[i])]]
    mapping[c_block.args[-1]] = block.args[-1]
    for op in c_block.ops:
        block.add_op(op.clone(value_mapper=mapping))
    fused = linalg.GenericOp(
        [v for v, _ in inputs], list(consumer.outputs), Region(block),
        [m for _, m in inputs] + [c_maps[-1]], consumer.iterator_types,
        [consumer.results[0].type],
        doc=builtin.StringAttr(_doc(producer) + DOC_SEPARATOR + _doc(consumer)))
    fused.attributes.update(consumer.attributes)  # provenance: the consumer's
    fused.location = consumer.location
    init = producer.outputs[0]
    Rewriter.replace_op(consumer, fused)
    Rewriter.erase_op(producer)
    if isinstance(init.owner, tensor.EmptyOp) and not init.uses:
        Rewriter.erase_op(init.owner)  # else bufferization would plan a dead buffer
    return fused


@dataclass(frozen=True)
class FrameFuseElementwise(ModulePass):
    """Merge elementwise producers into the one elementwise op that reads them."""

    name = "frame-fuse-elementwise"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        changed = True
        while changed:  # one sweep in program order usually suffices; be sure
            changed = False
            for consumer in list(op.walk()):
                if not isinstance(consumer, linalg.GenericOp) or consumer.parent is None:
                    continue
                # A consumer may absorb several producers (add(relu(a), neg(b))).
                while (producer := _fusable_producer(consumer)) is not None:
                    consumer = fuse(producer, consumer)
                    changed = True
