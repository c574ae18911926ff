"""math-polynomial-approximation: f32 `math.exp` as arithmetic the vectorizer can widen.

Expects: loop-level IR (after convert-linalg-to-loops) in which `math.exp` works on f32
scalars.
Why: `math.exp` becomes LLVM's `llvm.exp.f32`, which LLVM can only lower to a call of
the C library's `expf`. The call blocks the loop vectorizer (there is no vector `expf`
without a vector math library), so a softmax over a 1M-element tensor spent 3.4 ms in
scalar calls. Written as arithmetic, the same loop vectorizes to 16 lanes. The C++
emitter (`frame-dslc --emit`) runs this pass too, so both backends compute the same
bits.
Does, like MLIR's pass of the same name (which uses this scheme as well), for every
`math.exp %x : f32`:
  * clamp x to [-104, 88.75]: below -104 the result rounds to +0 (exp(-104) is under
    half the smallest denormal), above 88.75 to +inf; a NaN passes the clamp (the
    comparisons are false) and stays a NaN through the arithmetic;
  * n = round(x * log2(e)) by the 1.5 * 2^23 trick (the float sum rounds to nearest
    even; the integer is read from its low bits, so no float-to-int conversion, which
    would be poison for a NaN);
  * r = x - n * ln2_hi - n * ln2_lo (Cody-Waite: ln2_hi has 9 significant bits, so
    n * ln2_hi is exact for |n| <= 150);
  * exp(r) on |r| <= ln(2) / 2 by Cephes' `expf` polynomial
    1 + r + r^2 * P(r), P of degree 5 (relative error under 2^-23 on the interval);
  * the product scaled by 2^n as two factors 2^(n >> 1) * 2^(n - (n >> 1)), each a
    normal float for every n in [-151, 128], so the result is rounded once: a denormal
    result is correct and 2^128 overflows to +inf as it should.
Guarantees: no f32 `math.exp` remains. Results are within 2 ulp of the correctly
rounded exp for every finite input (`tests/passes/test_math_polynomial_approximation.py`
sweeps it against numpy in float64); exp(-inf) = +0, exp(+inf) = +inf, exp(NaN) = NaN.
They differ from the C library's `expf` in the last bits, as PyTorch's vectorized
`exp` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, math
from xdsl.dialects.builtin import Float32Type, f32, i32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

#: The clamp: exp(LO) < 2^-150 rounds to +0; exp(HI) > FLT_MAX rounds to +inf.
EXP_LO, EXP_HI = -104.0, 88.75
LOG2E = 1.44269504088896341
#: ln(2) split so that n * LN2_HI is exact (9 significant bits) for |n| <= 150.
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4
#: 1.5 * 2^23: adding it rounds a float of magnitude < 2^22 to an integer, which then
#: sits in the low bits of the sum's significand.
ROUND_MAGIC = 12582912.0
#: Cephes expf: exp(r) = 1 + r + r^2 * (P0 r^5 + ... + P5) on |r| <= ln(2) / 2.
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
            1.6666665459e-1, 5.0000001201e-1)


class _Ops:
    """Collects the replacement ops of one rewrite."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def f(self, value: float) -> SSAValue:
        return self.add(arith.ConstantOp(builtin.FloatAttr(value, f32)))

    def i(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(builtin.IntegerAttr(value, i32)))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.MulfOp(a, b))

    def addf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.AddfOp(a, b))


def expand_exp(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    """The ops computing exp(x) for an f32 scalar x, and their result (see the module
    docstring for the scheme)."""
    o = _Ops()
    lo, hi = o.f(EXP_LO), o.f(EXP_HI)
    x = o.add(arith.SelectOp(o.add(arith.CmpfOp(x, lo, "olt")), lo, x))
    x = o.add(arith.SelectOp(o.add(arith.CmpfOp(x, hi, "ogt")), hi, x))
    magic = o.f(ROUND_MAGIC)
    k = o.addf(o.mul(x, o.f(LOG2E)), magic)
    n = o.add(arith.SubfOp(k, magic))
    r = o.add(arith.SubfOp(x, o.mul(n, o.f(LN2_HI))))
    r = o.add(arith.SubfOp(r, o.mul(n, o.f(LN2_LO))))
    p = o.f(EXP_POLY[0])
    for c in EXP_POLY[1:]:
        p = o.addf(o.mul(p, r), o.f(c))
    y = o.addf(o.addf(o.mul(o.mul(r, r), p), r), o.f(1.0))
    # The integer n: the sum's bits minus the magic number's (exact while |n| < 2^22).
    bits = o.add(arith.BitcastOp(k, i32))
    ni = o.add(arith.SubiOp(bits, o.add(arith.BitcastOp(magic, i32))))
    n1 = o.add(arith.ShRSIOp(ni, o.i(1)))
    n2 = o.add(arith.SubiOp(ni, n1))
    bias, shift = o.i(127), o.i(23)

    def pow2(e: SSAValue) -> SSAValue:
        return o.add(arith.BitcastOp(o.add(arith.ShLIOp(o.add(arith.AddiOp(e, bias)), shift)),
                                     f32))
    result = o.mul(o.mul(y, pow2(n1)), pow2(n2))
    return o.ops, result


class ExpandExp(RewritePattern):
    """`math.exp` on an f32 scalar -> `expand_exp`'s arithmetic."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, math.ExpOp) or not isinstance(op.result.type, Float32Type):
            return
        ops, result = expand_exp(op.operand)
        rewriter.replace(op, ops, [result])


@dataclass(frozen=True)
class MathPolynomialApproximationPass(ModulePass):
    """Rewrite f32 `math.exp` into vectorizable arithmetic (see the module docstring)."""

    name = "math-polynomial-approximation"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(ExpandExp(), apply_recursively=False).rewrite_module(op)
