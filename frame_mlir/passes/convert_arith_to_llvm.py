"""convert-arith-to-llvm: lower `arith` ops to the `llvm` dialect (index becomes i64)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.utils.exceptions import PassFailedException

from frame_mlir.passes.arith_expand_bf16 import bf16_round_bits
from frame_mlir.passes.llvm_common import (
    cast_back,
    erase_dead_casts,
    llvm_fastmath,
    llvm_type,
    op_order,
    require_lowered,
    rewrite_ops,
    table_rule,
    to_llvm_all,
)
from frame_mlir.target.op_tables import OP_TABLE

Rule = Callable[[Operation, PatternRewriter], None]


def _replace(
    rewriter: PatternRewriter, op: Operation, new_ops: list[Operation], result: SSAValue
) -> None:
    """Replace the single-result `op` by `new_ops`, casting `result` back if needed."""
    value = cast_back(new_ops, result, op.results[0].type)
    rewriter.replace(op, new_ops, [value])


def _element_width(typ: Attribute) -> int:
    if isinstance(typ, VectorType):
        typ = typ.element_type
    assert isinstance(typ, IntegerType), typ
    return typ.width.data


def _with_element(typ: Attribute, element: Attribute) -> Attribute:
    """`typ` with its element type replaced (scalars are their own element)."""
    if isinstance(typ, VectorType):
        return VectorType(element, typ.get_shape())
    return element


# ---------------------------------------------------------------------------------------
# Rule factories: each returns the lowering of one arith op class.


def _int_minmax(predicate: str) -> Rule:
    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = to_llvm_all(rewriter, op.operands)
        if isinstance(lhs.type, VectorType):
            return  # llvm.select in xDSL takes a scalar condition only
        pred = IntegerAttr(llvm.ICmpPredicateFlag(predicate).to_int(), i64)
        cmp = llvm.ICmpOp(lhs, rhs, pred)
        sel = llvm.SelectOp(cmp.res, lhs, rhs)
        _replace(rewriter, op, [cmp, sel], sel.res)

    return rule


def _int_resize(extend_cls: type[Operation]) -> Rule:
    """index_cast / extsi / extui / trunci: extend, truncate or forward by bit width."""

    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        (src,) = to_llvm_all(rewriter, op.operands)
        dst_type = llvm_type(op.results[0].type)
        src_width, dst_width = _element_width(src.type), _element_width(dst_type)
        if src_width == dst_width:
            _replace(rewriter, op, [], src)
            return
        cls = extend_cls if dst_width > src_width else llvm.TruncOp
        new = cls(src, dst_type)  # type: ignore[call-arg]
        _replace(rewriter, op, [new], new.results[0])

    return rule


def _cast(llvm_cls: type[Operation]) -> Rule:
    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        (src,) = to_llvm_all(rewriter, op.operands)
        new = llvm_cls(src, llvm_type(op.results[0].type))  # type: ignore[call-arg]
        _replace(rewriter, op, [new], new.results[0])

    return rule


def _is_bf16(typ: Attribute) -> bool:
    return isinstance(typ.element_type if isinstance(typ, VectorType) else typ, BFloat16Type)


def _float_resize(llvm_cls: type[Operation]) -> Rule:
    """extf / truncf; a bf16 side has no LLVM type here (it is an i16)."""
    cast = _cast(llvm_cls)

    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        if any(_is_bf16(v.type) for v in (*op.operands, *op.results)):
            raise PassFailedException(
                f"convert-arith-to-llvm: {op.name} to or from bf16 needs arith-expand-bf16 "
                "first (bf16 is stored as i16: llvmlite has no bfloat type)")
        cast(op, rewriter)

    return rule


def _lower_bitcast(op: Operation, rewriter: PatternRewriter) -> None:
    (src,) = to_llvm_all(rewriter, op.operands)
    target = llvm_type(op.results[0].type)
    if src.type == target:  # bf16 <-> i16: the same LLVM type
        _replace(rewriter, op, [], src)
        return
    new = llvm.BitcastOp(src, target)
    _replace(rewriter, op, [new], new.results[0])


# ---------------------------------------------------------------------------------------
# Rules that need more than one pattern.


def _lower_uitofp(op: Operation, rewriter: PatternRewriter) -> None:
    # xDSL's llvm dialect has no uitofp: zero-extend into a wider signed integer, which
    # is exact, and convert that. LLVM folds the pair back into a uitofp.
    (src,) = to_llvm_all(rewriter, op.operands)
    width = _element_width(src.type)
    wide = _with_element(src.type, IntegerType(64 if width < 64 else 2 * width))
    ext = llvm.ZExtOp(src, wide)
    conv = llvm.SIToFPOp(ext.res, llvm_type(op.results[0].type))
    _replace(rewriter, op, [ext, conv], conv.result)


def _lower_constant(op: Operation, rewriter: PatternRewriter) -> None:
    assert isinstance(op, arith.ConstantOp)
    typ = llvm_type(op.result.type)
    value = op.value
    if isinstance(value, IntegerAttr):
        assert isinstance(typ, IntegerType)
        attr: Attribute = IntegerAttr(value.value.data, typ)
    elif isinstance(value, FloatAttr) and isinstance(value.type, BFloat16Type):
        bits = bf16_round_bits(float(value.value.data))  # an i16 holds the bits
        attr = IntegerAttr(bits - 0x10000 if bits >= 0x8000 else bits, typ)
    elif isinstance(value, FloatAttr):
        attr = value
    elif isinstance(value, DenseIntOrFPElementsAttr) and not isinstance(
        value.get_element_type(), IndexType
    ):
        attr = value
    else:
        return  # e.g. dense index vectors: left for the legality check to report
    new = llvm.ConstantOp(attr, typ)
    _replace(rewriter, op, [new], new.result)


def _lower_cmpi(op: Operation, rewriter: PatternRewriter) -> None:
    assert isinstance(op, arith.CmpiOp)
    lhs, rhs = to_llvm_all(rewriter, op.operands)
    # arith and llvm number the integer predicates identically.
    new = llvm.ICmpOp(lhs, rhs, IntegerAttr(op.predicate.value.data, i64))
    _replace(rewriter, op, [new], new.res)


_CMPF_FALSE, _CMPF_TRUE = 0, 15


def _lower_cmpf(op: Operation, rewriter: PatternRewriter) -> None:
    assert isinstance(op, arith.CmpfOp)
    pred = op.predicate.value.data
    if isinstance(op.lhs.type, VectorType):
        # xDSL 0.74 types every arith.cmpf result as i1, also for vector operands (MLIR:
        # vector<Lxi1>), so the IR cannot say which lane compared how: nothing to lower.
        raise PassFailedException(
            f"convert-arith-to-llvm: arith.cmpf on {op.lhs.type} is not supported: "
            "xDSL types its result as i1, not one i1 per lane (compare scalars, or use "
            "arith.maximumf / arith.minimumf on vectors)"
        )
    if pred in (_CMPF_FALSE, _CMPF_TRUE):
        # xDSL's llvmlite translation cannot print the constant predicates.
        const = llvm.ConstantOp(IntegerAttr(int(pred == _CMPF_TRUE), i1), i1)
        _replace(rewriter, op, [const], const.result)
        return
    lhs, rhs = to_llvm_all(rewriter, op.operands)
    # arith and llvm number the float predicates identically.
    new = llvm.FCmpOp(lhs, rhs, IntegerAttr(pred, i64))
    new.properties["fastmathFlags"] = llvm_fastmath(op.fastmath)
    _replace(rewriter, op, [new], new.res)


def _lower_select(op: Operation, rewriter: PatternRewriter) -> None:
    cond, lhs, rhs = to_llvm_all(rewriter, op.operands)
    if cond.type != i1:
        return  # vector conditions: llvm.select in xDSL takes a scalar i1
    new = llvm.SelectOp(cond, lhs, rhs)
    _replace(rewriter, op, [new], new.res)


ARITH_TO_LLVM: dict[type[Operation], Rule] = {
    # one llvm op or intrinsic each: the table both backends share (op_tables.py)
    **{op: table_rule(row) for op, row in OP_TABLE.items() if op.dialect_name() == "arith"},
    arith.ConstantOp: _lower_constant,
    arith.MaxSIOp: _int_minmax("sgt"),
    arith.MinSIOp: _int_minmax("slt"),
    arith.MaxUIOp: _int_minmax("ugt"),
    arith.MinUIOp: _int_minmax("ult"),
    arith.CmpiOp: _lower_cmpi,
    arith.SelectOp: _lower_select,
    arith.CmpfOp: _lower_cmpf,
    # conversions
    arith.IndexCastOp: _int_resize(llvm.SExtOp),
    arith.ExtSIOp: _int_resize(llvm.SExtOp),
    arith.ExtUIOp: _int_resize(llvm.ZExtOp),
    arith.TruncIOp: _int_resize(llvm.TruncOp),
    arith.SIToFPOp: _cast(llvm.SIToFPOp),
    arith.UIToFPOp: _lower_uitofp,
    arith.ExtFOp: _float_resize(llvm.FPExtOp),
    arith.TruncFOp: _float_resize(llvm.FPTruncOp),
    arith.BitcastOp: _lower_bitcast,
}
"""Lowering rule per arith op: `OP_TABLE`'s rows, and the ops that take more than one
llvm op. An op without a rule (fptosi/fptoui: xDSL's llvm dialect has no such op;
ceildiv/floordiv: arith-expand's) fails the pass."""


class ArithToLLVMPattern(RewritePattern):
    """Dispatch an arith op to its rule in `ARITH_TO_LLVM`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        rule = ARITH_TO_LLVM.get(type(op))
        if rule is not None:
            rule(op, rewriter)


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ModulePass):
    """Lower `arith` ops to `llvm` ops, converting `index` to `i64`.

    Expects: scalar or 1-D vector arith ops (vector float arithmetic, min/max, dense
    constants, a select with a scalar condition). `arith.cmpf` on vectors fails
    (PassFailedException): xDSL 0.74 types its result as a single i1.
    Guarantees: every op with a rule in `ARITH_TO_LLVM` becomes llvm ops carrying the
    same fast-math / overflow flags (float min/max become calls of the `llvm.maximum`,
    `llvm.minimum`, `llvm.maxnum`, `llvm.minnum` intrinsics, without flags); operands and results whose
    types change (index) are bridged with `builtin.unrealized_conversion_cast`, removed
    later by `reconcile-unrealized-casts`. A full conversion: an arith op left (no
    rule, or a rule that declines its types) fails the pass, naming it and where it is.
    """

    name = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with op_order():  # constant-time dominance checks of casts
            rewrite_ops(op, ARITH_TO_LLVM)
        erase_dead_casts(op)
        require_lowered(self.name, op, "arith", ARITH_TO_LLVM)
