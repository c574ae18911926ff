"""The scalar ops of the loop level, one row each, for both backends.

The JIT (`passes/convert_arith_to_llvm.py`, `passes/convert_math_to_llvm.py`) and the
C++ emitter (`backend/cpp/emitter.py`) translate the same arith / math ops; for every
op that each of them writes as one operation, this table is the only place that says
which: the llvm dialect op or LLVM intrinsic, and the C++ operator or function. Both
backends build their rules from it, so adding such an op (`math.tanh`, say) is one
`OpRow` here and nothing else -- the two backends cannot drift apart, and the C++
calls the very libm function the intrinsic becomes in the JIT (`llvm.tanh.f32` is
`tanhf`, `std::tanh(float)` too), which is what keeps their results bit-identical.

Ops that need more than one operation in either backend (constants, comparisons,
select, casts, `math.rsqrt` = 1 / sqrt, integer min / max) keep a rule of their own in
each backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdsl.dialects import arith, llvm, math
from xdsl.ir import Operation

__all__ = ["OP_TABLE", "OpRow"]

LLVMForm = Literal["op", "op_overflow", "op_fastmath", "intrinsic"]
CppForm = Literal["operator", "unsigned_operator", "prefix", "call", "helper"]


@dataclass(frozen=True)
class OpRow:
    """How both backends write one arith / math op.

    `llvm` is an llvm dialect op class or an intrinsic's base name; `llvm_form` says
    how it is built: `op` from the operands alone, `op_overflow` with arith's overflow
    flags, `op_fastmath` with its fast-math flags, `intrinsic` as a call of the
    type-mangled intrinsic (`llvm.exp.f32`, `llvm.maximum.v16f32`).

    `cpp` is a C++ operator or function; `cpp_form` says how it is written:
    `operator` infix (`a + b`), `unsigned_operator` infix on the operands cast to the
    unsigned type of the same width (LLVM's udiv / lshr / shl: no signed overflow),
    `prefix` (`-a`), `call` of a standard function (`header` to include), `helper` a
    call of one of the emitter's helper functions. `cpp_vector` says what the op is on
    a 1-D vector: True when the same C++ works on GCC's vector types (the infix
    operators), a helper's name for a vector version, False when the C++ backend only
    has a scalar form (the op on a vector is then an error of the emitter).
    """

    llvm: type[Operation] | str
    llvm_form: LLVMForm
    cpp: str
    cpp_form: CppForm
    header: str | None = None
    cpp_vector: bool | str = False


def _math(intrinsic: str, cpp: str) -> OpRow:
    """A libm function: an LLVM intrinsic (a libm call in the JIT) and <cmath>'s."""
    return OpRow(f"llvm.{intrinsic}", "intrinsic", f"std::{cpp}", "call", "cmath")


OP_TABLE: dict[type[Operation], OpRow] = {
    # integer arithmetic
    arith.AddiOp: OpRow(llvm.AddOp, "op_overflow", "+", "operator"),
    arith.SubiOp: OpRow(llvm.SubOp, "op_overflow", "-", "operator"),
    arith.MuliOp: OpRow(llvm.MulOp, "op_overflow", "*", "operator"),
    arith.ShLIOp: OpRow(llvm.ShlOp, "op_overflow", "<<", "unsigned_operator"),
    arith.DivSIOp: OpRow(llvm.SDivOp, "op", "/", "operator"),
    arith.DivUIOp: OpRow(llvm.UDivOp, "op", "/", "unsigned_operator"),
    arith.RemSIOp: OpRow(llvm.SRemOp, "op", "%", "operator"),
    arith.RemUIOp: OpRow(llvm.URemOp, "op", "%", "unsigned_operator"),
    arith.AndIOp: OpRow(llvm.AndOp, "op", "&", "operator"),
    arith.OrIOp: OpRow(llvm.OrOp, "op", "|", "operator"),
    arith.XOrIOp: OpRow(llvm.XOrOp, "op", "^", "operator"),
    arith.ShRUIOp: OpRow(llvm.LShrOp, "op", ">>", "unsigned_operator"),
    arith.ShRSIOp: OpRow(llvm.AShrOp, "op", ">>", "operator"),
    # float arithmetic: one IEEE operation each (the C++ is built without contraction)
    arith.AddfOp: OpRow(llvm.FAddOp, "op_fastmath", "+", "operator", cpp_vector=True),
    arith.SubfOp: OpRow(llvm.FSubOp, "op_fastmath", "-", "operator", cpp_vector=True),
    arith.MulfOp: OpRow(llvm.FMulOp, "op_fastmath", "*", "operator", cpp_vector=True),
    arith.DivfOp: OpRow(llvm.FDivOp, "op_fastmath", "/", "operator", cpp_vector=True),
    arith.NegfOp: OpRow(llvm.FNegOp, "op_fastmath", "-", "prefix", cpp_vector=True),
    # float min / max: llvm.maxnum / minnum are fmax / fmin (NaN-ignoring);
    # llvm.maximum / minimum propagate NaN and order -0 < +0, which no <cmath>
    # function does: the emitter's helpers.
    arith.MaxnumfOp: OpRow("llvm.maxnum", "intrinsic", "std::fmax", "call", "cmath"),
    arith.MinnumfOp: OpRow("llvm.minnum", "intrinsic", "std::fmin", "call", "cmath"),
    arith.MaximumfOp: OpRow("llvm.maximum", "intrinsic", "frame_maximumf", "helper",
                            cpp_vector="frame_vmaximumf"),
    arith.MinimumfOp: OpRow("llvm.minimum", "intrinsic", "frame_minimumf", "helper",
                            cpp_vector="frame_vminimumf"),
    # math: the one fused operation, and libm
    math.FmaOp: OpRow(llvm.FMAOp, "op", "std::fma", "call", "cmath",
                      cpp_vector="frame_vfma"),
    math.ExpOp: _math("exp", "exp"),
    math.Exp2Op: _math("exp2", "exp2"),
    math.LogOp: _math("log", "log"),
    math.Log2Op: _math("log2", "log2"),
    math.Log10Op: _math("log10", "log10"),
    math.SqrtOp: _math("sqrt", "sqrt"),
    math.AbsFOp: _math("fabs", "fabs"),
    math.TanhOp: _math("tanh", "tanh"),
    math.SinOp: _math("sin", "sin"),
    math.CosOp: _math("cos", "cos"),
    math.TanOp: _math("tan", "tan"),
    math.SinhOp: _math("sinh", "sinh"),
    math.CoshOp: _math("cosh", "cosh"),
    math.FloorOp: _math("floor", "floor"),
    math.CeilOp: _math("ceil", "ceil"),
    math.RoundOp: _math("round", "round"),
    # ties to even: nearbyint in the default rounding mode (C++17 has no roundeven)
    math.RoundEvenOp: _math("roundeven", "nearbyint"),
    math.TruncOp: _math("trunc", "trunc"),
    math.PowFOp: _math("pow", "pow"),
    math.CopySignOp: _math("copysign", "copysign"),
}
"""Every arith / math op both backends write as one operation (see `OpRow`)."""
