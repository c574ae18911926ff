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


def _intrinsic(base: str) -> Rule:
    """Lower to `llvm.call_intrinsic "<base>.<type suffix>"` (e.g. `llvm.exp.f32`).

    A call with the type-mangled name rather than xDSL's `llvm.intr.*` ops: their
    llvmlite translation declares the unmangled name (`llvm.exp`), so one module using
    an intrinsic at two types (f32 and f64, or a scalar and a vector) fails to
    translate. Fast-math flags are dropped either way: xDSL's translation ignores them
    on `llvm.intr.*` and rejects them on `llvm.call_intrinsic`. LLVM lowers intrinsics
    without a native instruction (tanh, exp, ...) to libm calls, which MCJIT resolves
    in-process.
    """

    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        args = to_llvm_all(rewriter, op.operands)
        typ = args[0].type
        new = llvm.CallIntrinsicOp(f"{base}.{intrinsic_suffix(typ)}", args, [typ])
        rewriter.replace(op, [new])

    return rule


def _lower_rsqrt(op: Operation, rewriter: PatternRewriter) -> None:
    assert isinstance(op, math.RsqrtOp)
    (src,) = to_llvm_all(rewriter, op.operands)
    if isinstance(src.type, VectorType):
        return  # would need a splat constant
    typ = src.type
    one = llvm.ConstantOp(FloatAttr(1.0, typ), typ)  # type: ignore[arg-type]
    sqrt = llvm.CallIntrinsicOp(f"llvm.sqrt.{intrinsic_suffix(typ)}", [src], [typ])
    assert sqrt.ress is not None
    div = llvm.FDivOp(one.result, sqrt.ress, llvm_fastmath(op.fastmath))
    rewriter.replace(op, [one, sqrt, div])


def _lower_fma(op: Operation, rewriter: PatternRewriter) -> None:
    a, b, c = to_llvm_all(rewriter, op.operands)
    # llvm.intr.fma translates with a mangled name; it takes no fast-math flags there.
    rewriter.replace(op, [llvm.FMAOp(a, b, c)])


MATH_TO_LLVM: dict[type[Operation], Rule] = {
    math.ExpOp: _intrinsic("llvm.exp"),
    math.Exp2Op: _intrinsic("llvm.exp2"),
    math.LogOp: _intrinsic("llvm.log"),
    math.Log2Op: _intrinsic("llvm.log2"),
    math.Log10Op: _intrinsic("llvm.log10"),
    math.SqrtOp: _intrinsic("llvm.sqrt"),
    math.AbsFOp: _intrinsic("llvm.fabs"),
    math.TanhOp: _intrinsic("llvm.tanh"),
    math.SinOp: _intrinsic("llvm.sin"),
    math.CosOp: _intrinsic("llvm.cos"),
    math.TanOp: _intrinsic("llvm.tan"),
    math.SinhOp: _intrinsic("llvm.sinh"),
    math.CoshOp: _intrinsic("llvm.cosh"),
    math.FloorOp: _intrinsic("llvm.floor"),
    math.CeilOp: _intrinsic("llvm.ceil"),
    math.RoundOp: _intrinsic("llvm.round"),
    math.RoundEvenOp: _intrinsic("llvm.roundeven"),
    math.TruncOp: _intrinsic("llvm.trunc"),
    math.PowFOp: _intrinsic("llvm.pow"),
    math.CopySignOp: _intrinsic("llvm.copysign"),
    math.RsqrtOp: _lower_rsqrt,
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
    Guarantees: every op with a rule in `MATH_TO_LLVM` becomes an `llvm.call_intrinsic`
    of the type-mangled LLVM intrinsic (`llvm.tanh.f32`, `llvm.exp.v16f32`, ...), except
    fma (`llvm.intr.fma`) and rsqrt (1 / sqrt). Fast-math flags of math ops are dropped
    (xDSL's llvmlite translation cannot express them on intrinsic calls). Ops without a
    rule are left unchanged.
    """

    name = "convert-math-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MathToLLVMPattern(), apply_recursively=False).rewrite_module(op)
        erase_dead_casts(op)
