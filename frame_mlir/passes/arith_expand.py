"""arith-expand: rewrite arith.floordivsi / arith.ceildivsi with plain integer ops.

Expects: any IR. `lower-affine` produces `arith.floordivsi` for the `floordiv` of
affine maps (reshape kernels delinearise indices with it), and neither backend has a
primitive for it.
Does: like MLIR's pass of the same name,
`floordivsi(a, b)` = `q - 1` if `a % b != 0` and the remainder's sign differs from b's,
else `q`, with `q = divsi(a, b)`; `ceildivsi(a, b)` = `q + 1` if `a % b != 0` and the
signs agree, else `q`.
Guarantees: no floordivsi / ceildivsi remain; semantics unchanged for every input.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern


def _expand(op: Operation, rewriter: PatternRewriter, floor: bool) -> None:
    a, b = op.operands
    typ = op.results[0].type
    new: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        new.append(o)
        return o.results[0]

    zero = add(arith.ConstantOp(builtin.IntegerAttr(0, typ)))
    one = add(arith.ConstantOp(builtin.IntegerAttr(1, typ)))
    q = add(arith.DivSIOp(a, b))
    r = add(arith.RemSIOp(a, b))
    inexact = add(arith.CmpiOp(r, zero, "ne"))
    r_neg = add(arith.CmpiOp(r, zero, "slt"))
    b_neg = add(arith.CmpiOp(b, zero, "slt"))
    # floor: adjust when the remainder's sign differs from the divisor's; ceil: when equal.
    signs = add(arith.CmpiOp(r_neg, b_neg, "ne" if floor else "eq"))
    adjust = add(arith.AndIOp(inexact, signs))
    moved = add(arith.SubiOp(q, one) if floor else arith.AddiOp(q, one))
    add(arith.SelectOp(adjust, moved, q))
    rewriter.replace(op, new)


class _Expand(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, arith.FloorDivSIOp):
            _expand(op, rewriter, floor=True)
        elif isinstance(op, arith.CeilDivSIOp):
            _expand(op, rewriter, floor=False)


@dataclass(frozen=True)
class ArithExpand(ModulePass):
    """Expand signed floor/ceil division into divsi, remsi, cmpi and select."""

    name = "arith-expand"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(_Expand()).rewrite_module(op)
