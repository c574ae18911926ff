"""convert-func-to-llvm: lower `func.func`/`func.call`/`func.return` to the llvm dialect."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from frame_mlir.passes.llvm_common import (
    cast_back,
    element_byte_size,
    erase_dead_casts,
    llvm_type,
    op_order,
    require_lowered,
    retype_block_args,
    rewrite_ops,
    to_llvm_all,
)


def _result_type(outputs: tuple[Attribute, ...] | list[Attribute], where: str) -> Attribute:
    if len(outputs) > 1:
        raise PassFailedException(
            f"convert-func-to-llvm: {where} returns {len(outputs)} values; the C ABI "
            "lowering supports at most one (write outputs into argument memrefs)"
        )
    return llvm_type(outputs[0]) if outputs else llvm.LLVMVoidType()


def _memref_bytes(typ: MemRefType) -> int:
    count = 1
    for dim in typ.get_shape():
        count *= dim
    return count * element_byte_size(typ.element_type)


@dataclass
class LowerFunc(RewritePattern):
    """`func.func` -> `llvm.func` (external linkage, C calling convention)."""

    noalias: bool = True

    def _arg_attrs(self, op: func.FuncOp) -> ArrayAttr[DictionaryAttr] | None:
        inputs = op.function_type.inputs.data
        existing = op.arg_attrs.data if op.arg_attrs is not None else [None] * len(inputs)
        result: list[DictionaryAttr] = []
        for typ, old in zip(inputs, existing, strict=True):
            entries: dict[str, Attribute] = dict(old.data) if old is not None else {}
            if isinstance(typ, MemRefType):
                if self.noalias:
                    # The ABI contract: no two memref arguments overlap (views into
                    # the arena derive from the one arena pointer, which is fine).
                    # It spares LLVM's vectorizer runtime alias checks.
                    entries["llvm.noalias"] = UnitAttr()
                if all(d >= 0 for d in typ.get_shape()) and (size := _memref_bytes(typ)):
                    # Static shapes make the whole buffer dereferenceable, which lets
                    # LLVM hoist and speculate loads.
                    entries["llvm.dereferenceable"] = IntegerAttr(size, i64)
            result.append(DictionaryAttr(entries))
        if all(not d.data for d in result):
            return None
        return ArrayAttr(result)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /) -> None:
        fn_type = op.function_type
        inputs = [llvm_type(t) for t in fn_type.inputs.data]
        output = _result_type(fn_type.outputs.data, f"@{op.sym_name.data}")
        other_props: dict[str, Attribute | None] = {}
        # Declarations (external code) get no aliasing/size promises from us.
        if op.body.blocks and (arg_attrs := self._arg_attrs(op)) is not None:
            other_props["arg_attrs"] = arg_attrs
        body: Region = rewriter.move_region_contents_to_new_regions(op.body)
        if body.blocks:
            retype_block_args(body.blocks.first)  # type: ignore[arg-type]
        new = llvm.FuncOp(
            op.sym_name,
            llvm.LLVMFunctionType(inputs, output),
            # Private functions (outlined kernels) stay internal: LLVM may inline
            # them and then drop them.
            linkage=llvm.LinkageAttr(
                "internal" if op.sym_visibility == builtin.StringAttr("private") and body.blocks
                else "external"),
            body=body,
            other_props=other_props,
            extra_attrs=dict(op.attributes),
        )
        rewriter.replace(op, [new], [])


class LowerReturn(RewritePattern):
    """`func.return` -> `llvm.return`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /) -> None:
        values = to_llvm_all(rewriter, op.arguments)
        if len(values) > 1:
            raise PassFailedException("convert-func-to-llvm: func.return with more than one value")
        rewriter.replace(op, [llvm.ReturnOp(values[0] if values else None)])


class LowerCall(RewritePattern):
    """`func.call @f(...)` -> `llvm.call @f(...)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /) -> None:
        out_types = [r.type for r in op.res]
        result_type = _result_type(out_types, f"call to {op.callee}")
        args = to_llvm_all(rewriter, op.arguments)
        call = llvm.CallOp(
            op.callee,
            *args,
            return_type=None if isinstance(result_type, llvm.LLVMVoidType) else result_type,
        )
        new_ops: list[Operation] = [call]
        if out_types:
            assert call.returned is not None
            rewriter.replace(op, new_ops, [cast_back(new_ops, call.returned, out_types[0])])
        else:
            rewriter.replace(op, new_ops, [])


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ModulePass):
    """Lower functions, calls and returns to the llvm dialect with the C ABI.

    Memref arguments are bare pointers (`!llvm.ptr` to the first element), index is
    i64, and a function without results returns void, so every kernel is callable
    from ctypes as `void f(void *, ...)`.

    Expects: `func.func` with at most one result (loop-level IR writes its outputs into
    argument memrefs).
    Guarantees: every `func.func` becomes an `llvm.func` with external linkage whose
    memref arguments carry `llvm.noalias` (unless `noalias=false`) and
    `llvm.dereferenceable(<buffer bytes>)` (declarations get neither); the entry block arguments get the LLVM
    types (casts back for users not yet converted); `func.call`/`func.return` become
    `llvm.call`/`llvm.return`. Callers must then never pass overlapping buffers as two
    different memref arguments.
    """

    name = "convert-func-to-llvm"

    noalias: bool = True
    """Mark memref (pointer) arguments `noalias`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # One visit of each op does it: the ops a rule makes (llvm ops, casts) match no
        # rule, so revisiting them or the module (a recursive pattern walker) is idle.
        with op_order():  # constant-time dominance checks of casts
            rewrite_ops(op, {func.FuncOp: LowerFunc(self.noalias).match_and_rewrite,
                             func.ReturnOp: LowerReturn().match_and_rewrite,
                             func.CallOp: LowerCall().match_and_rewrite})
        erase_dead_casts(op)
        require_lowered(self.name, op, "func")
