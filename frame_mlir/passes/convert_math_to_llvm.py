"""convert-math-to-llvm: lower `math` ops to LLVM intrinsics (from `target/op_tables.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import FloatAttr, ModuleOp, VectorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from frame_mlir.passes.llvm_common import (
    erase_dead_casts,
    intrinsic_suffix,
    llvm_fastmath,
    op_order,
    require_lowered,
    rewrite_ops,
    table_rule,
    to_llvm_all,
)
from frame_mlir.target.op_tables import OP_TABLE

Rule = Callable[[Operation, PatternRewriter], None]


def _lower_rsqrt(op: Operation, rewriter: PatternRewriter) -> None:
    assert isinstance(op, math.RsqrtOp)
    (src,) = to_llvm_all(rewriter, op.operands)
    if isinstance(src.type, VectorType):
        return  # would need a splat constant
    typ = src.type
    one = llvm.ConstantOp(FloatAttr(1.0, typ), typ)  # type: ignore[arg-type]
    # 1 / sqrt: the division and the sqrt the C++ emitter writes, so both round alike
    sqrt = llvm.CallIntrinsicOp(f"{OP_TABLE[math.SqrtOp].llvm}.{intrinsic_suffix(typ)}",
                                [src], [typ])
    assert sqrt.ress is not None
    div = llvm.FDivOp(one.result, sqrt.ress, llvm_fastmath(op.fastmath))
    rewriter.replace(op, [one, sqrt, div])


MATH_TO_LLVM: dict[type[Operation], Rule] = {
    # one intrinsic (or llvm.intr.fma) each: the table both backends share (op_tables.py)
    **{op: table_rule(row) for op, row in OP_TABLE.items() if op.dialect_name() == "math"},
    math.RsqrtOp: _lower_rsqrt,
}
"""Lowering rule per math op: `OP_TABLE`'s rows, and rsqrt (1 / sqrt). An op without a
rule (erf, log1p, expm1, ...) fails the pass."""


class MathToLLVMPattern(RewritePattern):
    """Dispatch a math op to its rule in `MATH_TO_LLVM`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        rule = MATH_TO_LLVM.get(type(op))
        if rule is not None:
            rule(op, rewriter)


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ModulePass):
    """Lower `math` ops on floats to LLVM intrinsics.

    Expects: math ops on f16/f32/f64 scalars or 1-D vectors.
    Guarantees: every op with a rule in `MATH_TO_LLVM` becomes an `llvm.call_intrinsic`
    of the type-mangled LLVM intrinsic (`llvm.tanh.f32`, `llvm.exp.v16f32`, ...), except
    fma (`llvm.intr.fma`) and rsqrt (1 / sqrt). Fast-math flags of math ops are dropped
    (xDSL's llvmlite translation cannot express them on intrinsic calls). A full
    conversion: a math op left (no rule, or rsqrt on a vector) fails the pass.
    """

    name = "convert-math-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with op_order():  # constant-time dominance checks of casts
            rewrite_ops(op, MATH_TO_LLVM)
        erase_dead_casts(op)
        require_lowered(self.name, op, "math", MATH_TO_LLVM)
