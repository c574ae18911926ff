"""convert-frame-to-linalg: lower frame ops to linalg on tensors.

Expects: statically shaped frame IR (run frame-shape-inference first).
Does: rewrites every frame op into `tensor.empty` + `linalg.fill` / `linalg.generic`
with arith bodies, in destination-passing style. One lowering per op, in the
table `LOWERINGS`, merged from the op families' tables (each family file under
`frame_mlir/dialects/` holds its ops' lowerings; `docs/adding-an-op.md`); this module
holds the pass, the `Lowerer` the lowerings build with, and `broadcast_map` (the
helpers shared by several families are in `linalg_utils.py` and `frame_reduce.py`).
The loop order of each generic is chosen by its lowering, because
convert-linalg-to-loops keeps the dimension order and LLVM does not interchange
loops: matmuls iterate (i, k, j) -- also when the lhs is transposed -- so the
innermost loop walks rows of B and C contiguously and vectorizes, and a row of C
can stay in registers across the whole k loop (`frame_contraction.py`).
`frame.sgd_update` takes the parameter itself as its destination (`frame.update` its
`dest` operand), so after bufferization the update is written in place.
`frame.scan` is left as it is (its step is a function, lowered like any other):
frame-bufferize and frame-lower-scan lower it.
Guarantees: no frame ops remain but `frame.scan`; values are tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, builtin, tensor
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

from frame_mlir.dialects import frame
from frame_mlir.dialects.frame_scan import ScanOp
from frame_mlir.dialects.linalg_utils import PAR, BodyFn, identity_map
from frame_mlir.passes.common import fail, provenance

T = TypeVar("T")

#: Storage-only float types: widened to f32 where read, rounded where written.
HALF_TYPES = (builtin.f16, builtin.bf16)


class Lowerer:
    """Builds linalg ops in front of the frame op being replaced."""

    def __init__(self, rewriter: PatternRewriter, op: Operation,
                 memo: dict[tuple[object, ...], Any] | None = None):
        self.rewriter = rewriter
        self.op = op
        self.memo = {} if memo is None else memo

    def reuse(self, key: tuple[object, ...], build: Callable[[], T]) -> T:
        """What `build()` made for an earlier op of this block with the same `key` (its
        operand values and attributes), else `build()`: a lowering that needs what an
        earlier one computed (batch norm's statistics, recomputed by its running
        statistics and by each of its gradients) reads it instead of computing it
        again. Ops of a block are lowered in order, so the values dominate."""
        full = (self.op.parent_block(), *key)
        if full not in self.memo:
            self.memo[full] = build()
        return self.memo[full]

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
        if elems[-1] in HALF_TYPES:
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
        """A generic with several outputs (f32 arithmetic for 16-bit storage, like
        `generic`; f64 operands, such as accumulators, stay f64)."""
        elems = [frame.element_type(v) for v in (*inputs, *inits)]
        block = Block(arg_types=elems)
        b = Builder(InsertPoint.at_end(block))
        args = [b.insert(arith.ExtFOp(a, f32)).result if a.type in HALF_TYPES else a
                for a in block.args]
        results = body(b, args)
        results = [b.insert(arith.TruncFOp(r, e)).result if e in HALF_TYPES else r
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


#: Every family's lowerings, after `frame.py`'s own (constant, sgd_update, update).
LOWERINGS: dict[type[Operation], Callable[[Lowerer, Operation], SSAValue]] = {
    **frame.LOWERINGS,
    **{op: lower for family in frame.FAMILIES for op, lower in family.LOWERINGS.items()}}


class _LowerFrameOp(RewritePattern):
    def __init__(self) -> None:
        self.memo: dict[tuple[object, ...], Any] = {}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, frame.FrameOp) or isinstance(op, ScanOp):
            return  # a scan stays, on tensors: frame-bufferize and frame-lower-scan lower it
        lower = LOWERINGS.get(type(op))
        if lower is None:
            raise fail(ConvertFrameToLinalg.name, op, f"no linalg lowering for {op.name}")
        if any(frame.static_shape(v) is None for v in (*op.operands, *op.results)):
            raise fail(ConvertFrameToLinalg.name, op,
                       "expected static shapes (run frame-shape-inference first)")
        rewriter.replace(op, [], [lower(Lowerer(rewriter, op, self.memo), op)])


@dataclass(frozen=True)
class ConvertFrameToLinalg(ModulePass):
    """Lower every frame op to linalg.generic / linalg.fill on tensors."""

    name = "convert-frame-to-linalg"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(_LowerFrameOp(), apply_recursively=False).rewrite_module(op)
