"""arith-expand-bf16: bfloat16 conversions and constants as integer ops on the bits.

Expects: loop-level IR in which bf16 values are only loaded, stored, selected, widened
(`arith.extf`) and rounded (`arith.truncf` from f32): the frame lowering computes in
f32 and keeps bf16 for storage only. llvmlite 0.50 has no `bfloat` IR type, so the
LLVM conversion stores a bf16 as an i16 (`llvm_common.llvm_type`) and has nothing to
convert it with; the C++ emitter stores it as `std::uint16_t`. This pass gives both
backends the same integer code, so they agree bit for bit.
Does, like MLIR's `arith-expand{include-bf16}`:
  * `arith.extf %x : bf16 to f32` -> bitcast to i16, extui to i32, shli 16, bitcast to
    f32 (exact; to f64 through f32, also exact);
  * `arith.truncf %x : f32 to bf16` -> round to nearest, ties to even, on the bits,
    as PyTorch's `c10::BFloat16` and MLIR do: with `hi = bits >> 16`,
    `lo = bits & 0xffff`, the result is `hi + ((lo + 0x7fff + (hi & 1)) >> 16)`,
    truncated to i16 -- the usual `(bits + 0x7fff + lsb) >> 16` split so that nothing
    can overflow (a signed overflow would be undefined in the emitted C++). Overflow
    to infinity, denormals and -0.0 fall out of the formula; a NaN (`bits & 0x7fffffff
    > 0x7f800000`) becomes the quiet NaN 0x7fc0 (PyTorch's and MLIR's choice; the
    formula alone could round a NaN with a small payload to infinity);
  * `arith.constant <v> : bf16` -> the i16 constant of its bits (rounded to nearest
    even), bitcast to bf16.
Guarantees: no extf / truncf / constant of bf16 remains; semantics as above. Any other
arithmetic on bf16 values fails (PassFailedException naming the op): nothing could
compute on an i16 stand-in.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.dialects.builtin import BFloat16Type, Float32Type, VectorType, f32, i16, i32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.utils.exceptions import PassFailedException

__all__ = ["BF16_QUIET_NAN", "ArithExpandBf16", "bf16_round_bits", "round_to_bf16", "widen"]

#: The quiet NaN every NaN rounds to.
BF16_QUIET_NAN = 0x7FC0


def bf16_round_bits(value: float) -> int:
    """The bf16 bit pattern of `value` (through f32), rounded to nearest even: the
    host-side twin of the expansion (NaN -> 0x7fc0)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if bits & 0x7FFFFFFF > 0x7F800000:
        return BF16_QUIET_NAN
    hi, lo = bits >> 16, bits & 0xFFFF
    return (hi + ((lo + 0x7FFF + (hi & 1)) >> 16)) & 0xFFFF


class _Ops:
    """Collects the replacement ops of one rewrite."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def const(self, value: int, typ: builtin.IntegerType) -> SSAValue:
        return self.add(arith.ConstantOp(builtin.IntegerAttr(value, typ)))


def _is_bf16(typ: object) -> bool:
    if isinstance(typ, VectorType | builtin.TensorType | builtin.MemRefType):
        typ = typ.element_type
    return isinstance(typ, BFloat16Type)


def _scalar(op: Operation) -> None:
    for v in (*op.operands, *op.results):
        if _is_bf16(v.type) and not isinstance(v.type, BFloat16Type):
            raise PassFailedException(f"arith-expand-bf16: {op.name} on {v.type} is not "
                                      "supported (bf16 is expanded on scalars only)")


def widen(ops: _Ops, x: SSAValue) -> SSAValue:
    """The f32 value of the bf16 `x` (exact)."""
    raw = ops.add(arith.BitcastOp(x, i16))
    wide = ops.add(arith.ExtUIOp(raw, i32))
    shifted = ops.add(arith.ShLIOp(wide, ops.const(16, i32)))
    return ops.add(arith.BitcastOp(shifted, f32))


def round_to_bf16(ops: _Ops, x: SSAValue) -> SSAValue:
    """The bf16 nearest to the f32 `x` (ties to even; NaN -> quiet NaN)."""
    bits = ops.add(arith.BitcastOp(x, i32))
    hi = ops.add(arith.ShRUIOp(bits, ops.const(16, i32)))
    lo = ops.add(arith.AndIOp(bits, ops.const(0xFFFF, i32)))
    odd = ops.add(arith.AndIOp(hi, ops.const(1, i32)))
    biased = ops.add(arith.AddiOp(ops.add(arith.AddiOp(lo, odd)), ops.const(0x7FFF, i32)))
    carry = ops.add(arith.ShRUIOp(biased, ops.const(16, i32)))
    rounded = ops.add(arith.TruncIOp(ops.add(arith.AddiOp(hi, carry)), i16))
    magnitude = ops.add(arith.AndIOp(bits, ops.const(0x7FFFFFFF, i32)))
    nan = ops.add(arith.CmpiOp(magnitude, ops.const(0x7F800000, i32), "ugt"))
    chosen = ops.add(arith.SelectOp(nan, ops.const(BF16_QUIET_NAN, i16), rounded))
    return ops.add(arith.BitcastOp(chosen, builtin.bf16))


#: Ops that move bf16 values without computing on them.
_PASSIVE = (arith.SelectOp, arith.BitcastOp)


class _ExpandBf16(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        ops = _Ops()
        if isinstance(op, arith.ExtFOp) and _is_bf16(op.input.type):
            _scalar(op)
            value = widen(ops, op.input)
            if not isinstance(op.result.type, Float32Type):
                value = ops.add(arith.ExtFOp(value, op.result.type))
        elif isinstance(op, arith.TruncFOp) and _is_bf16(op.result.type):
            _scalar(op)
            if not isinstance(op.input.type, Float32Type):
                # f64 -> f32 -> bf16 would round twice: not a conversion we can expand.
                raise PassFailedException(f"arith-expand-bf16: arith.truncf from "
                                          f"{op.input.type} to bf16 is not supported "
                                          "(only from f32)")
            value = round_to_bf16(ops, op.input)
        elif isinstance(op, arith.ConstantOp) and _is_bf16(op.result.type):
            _scalar(op)
            attr = op.value
            assert isinstance(attr, builtin.FloatAttr)
            bits = bf16_round_bits(float(attr.value.data))
            signed = bits - 0x10000 if bits >= 0x8000 else bits
            value = ops.add(arith.BitcastOp(ops.const(signed, i16), builtin.bf16))
        elif isinstance(op, _PASSIVE):
            return
        elif op.dialect_name() in ("arith", "math") and any(
                _is_bf16(v.type) for v in (*op.operands, *op.results)):
            raise PassFailedException(f"arith-expand-bf16: {op.name} computes on bf16 "
                                      "values; widen them to f32 (arith.extf) first")
        else:
            return
        rewriter.replace(op, ops.ops, [value])


@dataclass(frozen=True)
class ArithExpandBf16(ModulePass):
    """Expand bf16 extf / truncf / constants into integer ops on the bit patterns."""

    name = "arith-expand-bf16"

    def has_work(self, op: builtin.ModuleOp) -> bool:
        """Whether any op yields a bf16 value (else the pass is skipped: no rewrite
        walk, no re-verification of IR it would not change)."""
        return any(_is_bf16(r.type) for o in op.walk() for r in o.results)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(_ExpandBf16(), apply_recursively=False).rewrite_module(op)

