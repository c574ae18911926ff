"""convert-math-to-llvm: lower `math` ops to LLVM intrinsics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import FloatAttr, ModuleOp, VectorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from frame_mlir.passes.llvm_common import (
    erase_dead_casts,
    intrinsic_suffix,
    llvm_fastmath,
    to_llvm_all,
)

Rule = Callable[[Operation, PatternRewriter], None]


def _unary_op(llvm_cls: type[Operation]) -> Rule:
    """Ops xDSL's llvm dialect has as `llvm.intr.*` (they carry fast-math flags)."""

    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        (src,) = to_llvm_all(rewriter, op.operands)
        new = llvm_cls(src, llvm_fastmath(op.properties.get("fastmath")))  # type: ignore[call-arg]
        rewriter.replace(op, [new])

    return rule


def _binary_op(llvm_cls: type[Operation]) -> Rule:
    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = to_llvm_all(rewriter, op.operands)
        new = llvm_cls(lhs, rhs, llvm_fastmath(op.properties.get("fastmath")))  # type: ignore[call-arg]
        rewriter.replace(op, [new])

    return rule


def _intrinsic_call(base: str) -> Rule:
    """Intrinsics xDSL's llvm dialect lacks as ops (e.g. `llvm.tanh`): a generic call.

    LLVM lowers these to libm calls (`tanhf`, ...), which MCJIT resolves in-process.
    Fast-math flags are dropped: xDSL's translation rejects them on call_intrinsic.
    """

    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        args = to_llvm_all(rewriter, op.operands)
        typ = args[0].type
        new = llvm.CallIntrinsicOp(f"{base}.{intrinsic_suffix(typ)}", args, [typ])
        rewriter.replace(op, [new])

    return rule


def _lower_absf(op: Operation, rewriter: PatternRewriter) -> None:
    assert isinstance(op, math.AbsFOp)
    (src,) = to_llvm_all(rewriter, op.operands)
    rewriter.replace(op, [llvm.FAbsOp(src, src.type, llvm_fastmath(op.fastmath))])


def _lower_rsqrt(op: Operation, rewriter: PatternRewriter) -> None:
    assert isinstance(op, math.RsqrtOp)
    (src,) = to_llvm_all(rewriter, op.operands)
    if isinstance(src.type, VectorType):
        return  # would need a splat constant
    fastmath = llvm_fastmath(op.fastmath)
    one = llvm.ConstantOp(FloatAttr(1.0, src.type), src.type)  # type: ignore[arg-type]
    sqrt = llvm.FSqrtOp(src, fastmath)
    div = llvm.FDivOp(one.result, sqrt.results[0], fastmath)
    rewriter.replace(op, [one, sqrt, div])


def _lower_fma(op: Operation, rewriter: PatternRewriter) -> None:
    a, b, c = to_llvm_all(rewriter, op.operands)
    # No fast-math flags: xDSL's translation of llvm.intr.fma rejects them.
    rewriter.replace(op, [llvm.FMAOp(a, b, c)])


MATH_TO_LLVM: dict[type[Operation], Rule] = {
    math.ExpOp: _unary_op(llvm.FExpOp),
    math.Exp2Op: _unary_op(llvm.FExp2Op),
    math.LogOp: _unary_op(llvm.FLogOp),
    math.Log2Op: _unary_op(llvm.FLog2Op),
    math.SqrtOp: _unary_op(llvm.FSqrtOp),
    math.SinOp: _unary_op(llvm.FSinOp),
    math.CosOp: _unary_op(llvm.FCosOp),
    math.FloorOp: _unary_op(llvm.FFloorOp),
    math.CeilOp: _unary_op(llvm.FCeilOp),
    math.AbsFOp: _lower_absf,
    math.RsqrtOp: _lower_rsqrt,
    math.TanhOp: _intrinsic_call("llvm.tanh"),
    math.Log10Op: _intrinsic_call("llvm.log10"),
    math.TanOp: _intrinsic_call("llvm.tan"),
    math.SinhOp: _intrinsic_call("llvm.sinh"),
    math.CoshOp: _intrinsic_call("llvm.cosh"),
    math.RoundOp: _intrinsic_call("llvm.round"),
    math.RoundEvenOp: _intrinsic_call("llvm.roundeven"),
    math.TruncOp: _intrinsic_call("llvm.trunc"),
    math.PowFOp: _binary_op(llvm.FPowOp),
    math.CopySignOp: _binary_op(llvm.FCopySignOp),
    math.FmaOp: _lower_fma,
}
"""Lowering rule per math op. Ops without a rule (erf, log1p, expm1, ...) are left in
place for the legality check to report."""


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
    Guarantees: every op with a rule in `MATH_TO_LLVM` becomes an `llvm.intr.*` op or an
    `llvm.call_intrinsic` (tanh, log10, ...; LLVM lowers them to libm calls that MCJIT
    resolves in-process); math fast-math flags are kept where xDSL's llvm op carries
    them. Ops without a rule are left unchanged.
    """

    name = "convert-math-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MathToLLVMPattern(), apply_recursively=False).rewrite_module(op)
        erase_dead_casts(op)
