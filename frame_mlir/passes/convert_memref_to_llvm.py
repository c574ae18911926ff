"""convert-memref-to-llvm: bare-pointer lowering of memref accesses to GEP + load/store."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, i8, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from frame_mlir.passes.llvm_common import (
    Rule,
    cast_back,
    element_byte_size,
    erase_dead_casts,
    llvm_type,
    op_order,
    require_lowered,
    rewrite_ops,
    static_strides,
    to_llvm,
    to_llvm_all,
)

# In-bounds memref indices are non-negative and their linearization stays below the
# element count (out-of-bounds access is UB), so neither wrap can happen; saying so
# lets SCEV see affine address recurrences.
_NO_WRAP = llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP, llvm.OverflowFlag.NO_UNSIGNED_WRAP])


def element_pointer(
    rewriter: PatternRewriter, memref_value: SSAValue, indices: list[SSAValue]
) -> tuple[list[Operation], SSAValue, int]:
    """Ops computing the address of `memref_value[indices]`, the address, and the
    element alignment.

    The address is a `getelementptr inbounds` on the element type: LLVM's vectorizer
    and alias analysis understand GEPs, but not ptrtoint/inttoptr arithmetic.
    """
    typ = memref_value.type
    assert isinstance(typ, MemRefType)
    strides = static_strides(typ)
    base = to_llvm(rewriter, memref_value)
    idx = to_llvm_all(rewriter, indices)
    ops: list[Operation] = []
    linear: SSAValue | None = None
    for index, stride in zip(idx, strides, strict=True):
        term = index
        if stride != 1:
            const = llvm.ConstantOp(IntegerAttr(stride, i64), i64)
            mul = llvm.MulOp(index, const.result, overflow=_NO_WRAP)
            ops += [const, mul]
            term = mul.res
        if linear is None:
            linear = term
        else:
            add = llvm.AddOp(linear, term, overflow=_NO_WRAP)
            ops.append(add)
            linear = add.res
    element = llvm_type(typ.element_type)
    align = element_byte_size(typ.element_type)
    if linear is None:  # 0-d memref: the pointer is the element
        return ops, base, align
    # the address stays in the base pointer's address space (GPU shared memory)
    space = base.type if isinstance(base.type, llvm.LLVMPointerType) else llvm.LLVMPointerType()
    gep = llvm.GEPOp.from_mixed_indices(base, [linear], element, result_type=space,
                                        inbounds=True)
    ops.append(gep)
    return ops, gep.result, align


def lower_load(rewriter: PatternRewriter, op: Operation, base: SSAValue,
               indices: list[SSAValue], result_type: Attribute) -> None:
    """Replace `op` (a scalar or vector load of `base[indices]`) by GEP inbounds +
    `llvm.load` of `result_type` with the element's alignment."""
    ops, ptr, align = element_pointer(rewriter, base, indices)
    # Alignment is the element size, the only thing the ABI promises: LLVM would
    # otherwise assume the type's ABI alignment for vector accesses it forms.
    load = llvm.LoadOp(ptr, llvm_type(result_type), alignment=align)
    ops.append(load)
    value = cast_back(ops, load.dereferenced_value, result_type)
    rewriter.replace(op, ops, [value])


def lower_store(rewriter: PatternRewriter, op: Operation, value: SSAValue, base: SSAValue,
                indices: list[SSAValue]) -> None:
    """Replace `op` (a scalar or vector store of `value` at `base[indices]`) by GEP
    inbounds + `llvm.store` with the element's alignment."""
    ops, ptr, align = element_pointer(rewriter, base, indices)
    ops.append(llvm.StoreOp(to_llvm(rewriter, value), ptr, alignment=align))
    rewriter.replace(op, ops, [])


class LowerLoad(RewritePattern):
    """`memref.load %m[%i, %j]` -> GEP inbounds + `llvm.load` with the element alignment."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /) -> None:
        lower_load(rewriter, op, op.memref, list(op.indices), op.res.type)


class LowerStore(RewritePattern):
    """`memref.store %v, %m[%i, %j]` -> GEP inbounds + `llvm.store` (element alignment)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /) -> None:
        lower_store(rewriter, op, op.value, op.memref, list(op.indices))


class LowerView(RewritePattern):
    """`memref.view %arena[%off][]` -> `getelementptr inbounds i8` by the byte offset."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter, /) -> None:
        if op.sizes:
            raise PassFailedException(
                "convert-memref-to-llvm: memref.view with dynamic sizes is not supported "
                "by the bare-pointer ABI"
            )
        result_type = op.result.type
        assert isinstance(result_type, MemRefType)
        static_strides(result_type)  # raises on dynamic shapes / non-identity layouts
        base = to_llvm(rewriter, op.source)
        offset = to_llvm(rewriter, op.byte_shift)
        gep = llvm.GEPOp.from_mixed_indices(base, [offset], i8, inbounds=True)
        ops: list[Operation] = [gep]
        value = cast_back(ops, gep.result, result_type)
        rewriter.replace(op, ops, [value])


def collapse_shape_problem(op: memref.CollapseShapeOp) -> str | None:
    """Why `op` is not a collapse the bare-pointer ABI can express, or None if it is.

    xDSL's verifier checks none of this. With static shapes and identity layouts on both
    sides, a collapse whose groups cover the source dims in order, each result dim the
    product of its group, keeps every element at the same row-major offset: the
    collapsed memref is the same pointer.
    """
    src, res = op.src.type, op.result.type
    assert isinstance(src, MemRefType) and isinstance(res, MemRefType)
    for typ in (src, res):
        try:
            static_strides(typ)
        except PassFailedException as err:
            return str(err)
    if src.element_type != res.element_type:
        return f"element types differ: {src} into {res}"
    groups = [[int(i.value.data) for i in g.data] for g in op.reassociation.data]
    src_shape, res_shape = src.get_shape(), res.get_shape()
    if [d for g in groups for d in g] != list(range(len(src_shape))):
        return (f"reassociation {groups} must list the {len(src_shape)} source dims "
                "once each, in order")
    if len(groups) != len(res_shape):
        return f"{len(groups)} groups for a result of rank {len(res_shape)}"
    for g, size in zip(groups, res_shape, strict=True):
        product = 1
        for d in g:
            product *= src_shape[d]
        if product != size:
            return f"group {g} of {src} has {product} elements, result dim is {size}"
    return None


class LowerCollapseShape(RewritePattern):
    """`memref.collapse_shape` of a static identity-layout memref -> the same pointer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.CollapseShapeOp, rewriter: PatternRewriter, /
                          ) -> None:
        problem = collapse_shape_problem(op)
        if problem is not None:
            raise PassFailedException(
                f"convert-memref-to-llvm: memref.collapse_shape: {problem}")
        ops: list[Operation] = []
        value = cast_back(ops, to_llvm(rewriter, op.src), op.result.type)
        rewriter.replace(op, ops, [value])


class LowerCast(RewritePattern):
    """`memref.cast` between identity-layout memrefs of one element type (a static size
    erased to `?`, as GEMM micro-kernels take their panels) -> the same pointer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.CastOp, rewriter: PatternRewriter, /) -> None:
        src, dst = op.source.type, op.dest.type
        if not isinstance(src, MemRefType) or not isinstance(dst, MemRefType) or \
                src.element_type != dst.element_type or \
                src.get_num_dims() != dst.get_num_dims():
            raise PassFailedException(
                f"convert-memref-to-llvm: memref.cast from {src} to {dst}: only a change "
                "of static sizes to dynamic ones is supported")
        static_strides(dst)
        ops: list[Operation] = []
        value = cast_back(ops, to_llvm(rewriter, op.source), dst)
        rewriter.replace(op, ops, [value])


MEMREF_TO_LLVM: dict[type[Operation], Rule] = {
    memref.LoadOp: LowerLoad().match_and_rewrite,
    memref.StoreOp: LowerStore().match_and_rewrite,
    memref.ViewOp: LowerView().match_and_rewrite,
    memref.CollapseShapeOp: LowerCollapseShape().match_and_rewrite,
    memref.CastOp: LowerCast().match_and_rewrite,
}
"""The pattern lowering each memref op (any other fails the pass)."""


@dataclass(frozen=True)
class ConvertMemrefToLLVMPass(ModulePass):
    """Lower memref accesses to LLVM with the bare-pointer ABI.

    Every memref value is an `!llvm.ptr` to its first element (the uses of non-converted
    memref values get an `unrealized_conversion_cast` to `!llvm.ptr`).

    Expects: statically shaped, identity-layout memrefs; `memref.view` with a byte
    offset and no dynamic sizes; `memref.collapse_shape` between static identity-layout
    memrefs. Fails (PassFailedException) otherwise.
    Guarantees: `memref.load`/`memref.store` become a row-major linearized index
    (`nsw nuw` mul/add on i64), one `getelementptr inbounds` on the element type and an
    `llvm.load`/`llvm.store` with the element's natural alignment (4 for f32); 0-d
    memrefs access the pointer directly; `memref.view` becomes a `getelementptr
    inbounds` on i8; `memref.collapse_shape` and `memref.cast` are the source's
    pointer (row-major offsets do not change). Other memref ops (alloc, subview, ...) fail
    the pass (a full conversion).
    """

    name = "convert-memref-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with op_order():  # constant-time dominance checks of casts
            rewrite_ops(op, MEMREF_TO_LLVM)
        erase_dead_casts(op)
        require_lowered(self.name, op, "memref")
