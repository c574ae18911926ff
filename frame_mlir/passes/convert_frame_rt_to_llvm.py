"""convert-frame-rt-to-llvm: `frame_rt.parallel_for` -> a call of the runtime's thread pool,
`frame_rt.row` -> a GEP.

Expects: `frame_rt.parallel_for` ops (frame-parallelize) whose task is a `func.func`
not yet lowered, `frame_rt.row` ops (frame-lower-scan), no `frame_rt.scan` (lowered
by frame-lower-scan); runs first in the loops -> llvm pipeline (every operand is bridged to
its LLVM type by `builtin.unrealized_conversion_cast`, which reconcile-unrealized-casts
removes once the other dialects are converted).

Does: with `threads = 1`, `func.call @task(args..., lb, ub)`: the task runs inline and
no runtime is involved. Otherwise

    %ctx = llvm.alloca N x !llvm.ptr       (entry block: one slot per argument)
    llvm.store %a, (gep %ctx[0]) ...       (scalars: their bits, through inttoptr)
    llvm.call @frame_rt_parallel_for(addressof @task__entry, %ctx, %lb, %ub, threads)

where `@<task>__entry(%ctx: !llvm.ptr, %lo: i64, %hi: i64)` (one per task, private)
loads the arguments back and calls the task: the runtime calls every task through
this one C signature, `void (void *ctx, int64_t lo, int64_t hi)`. The runtime
(`frame_mlir/backend/llvm/parallel_runtime.py`) is declared, not defined: the JIT
resolves `frame_rt_parallel_for` to the one pool of the process.

`frame_rt.row %buf[%t]` of a `[d0, d1, ...]` buffer is `getelementptr inbounds` on the
element type by `t * (d1 * ...)` (`nsw nuw`: an in-bounds row index), the row's
first element: with the bare-pointer ABI that is the row.

Guarantees: no `frame_rt` op remains; the call returns only once every chunk is done,
so the kernel's callers see the same memory effects as with the sequential loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from frame_mlir.dialects.frame_rt import ParallelForOp, PrefetchOp, RowOp, ScanOp
from frame_mlir.passes.common import fail
from frame_mlir.passes.llvm_common import llvm_type, new_cast, require_lowered

RUNTIME_PARALLEL_FOR = "frame_rt_parallel_for"
"""`void frame_rt_parallel_for(void (*task)(void *, int64_t, int64_t), void *ctx,
int64_t lo, int64_t hi, int64_t threads)`, defined by the runtime."""


def _cast(ops: list[Operation], value: SSAValue, target: Attribute) -> SSAValue:
    if value.type == target:
        return value
    cast = new_cast(value, target)
    ops.append(cast)
    return cast.results[0]


class _Functions:
    """The names of the module's functions (`func.func`, `llvm.func`), read once per
    pass and kept up to date by it: every `parallel_for` asks whether the runtime is
    declared and whether its task has a trampoline, and scanning the module's functions
    for each was quadratic in the number of kernels."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.names = {op.sym_name.data for op in module.ops
                      if isinstance(op, func.FuncOp | llvm.FuncOp)}
        self.runtime_declared = any(isinstance(op, llvm.FuncOp) and
                                    op.sym_name.data == RUNTIME_PARALLEL_FOR
                                    for op in module.ops)


def _declare_runtime(functions: _Functions) -> None:
    if functions.runtime_declared:
        return
    functions.runtime_declared = True
    functions.names.add(RUNTIME_PARALLEL_FOR)
    module = functions.module
    ptr = llvm.LLVMPointerType()
    decl = llvm.FuncOp(RUNTIME_PARALLEL_FOR,
                       llvm.LLVMFunctionType([ptr, ptr, i64, i64, i64], llvm.LLVMVoidType()),
                       linkage=llvm.LinkageAttr("external"))
    module.body.block.add_op(decl)


def _slot(ops: list[Operation], ctx: SSAValue, index: int) -> SSAValue:
    """A pointer to argument slot `index` of the frame `ctx` (slots are `ptr`s: llvmlite
    checks a store's value type against its pointer's, and allocas are typed)."""
    slot = llvm.GEPOp.from_mixed_indices(ctx, [index], llvm.LLVMPointerType(), inbounds=True)
    ops.append(slot)
    return slot.result


def _int_type(op: ParallelForOp | func.FuncOp, typ: Attribute) -> IntegerType | None:
    """How a value of LLVM type `typ` travels in a pointer slot: None for a pointer
    (as itself), else the integer of its width (a float goes through its bits)."""
    if isinstance(typ, llvm.LLVMPointerType):
        return None
    if isinstance(typ, IntegerType) and typ.width.data <= 64:
        return typ
    if isinstance(typ, AnyFloat) and typ.bitwidth <= 64:
        return IntegerType(typ.bitwidth)
    raise fail(ConvertFrameRtToLLVMPass.name, op, f"cannot pass a {typ} to a task "
               "(pointers and scalars of up to 64 bits only)")


def _pack(ops: list[Operation], value: SSAValue, bits: IntegerType | None) -> SSAValue:
    """`value` (of an LLVM type) as a `ptr` for its slot."""
    if bits is None:
        return value
    if value.type != bits:
        ops.append(cast := llvm.BitcastOp(value, bits))
        value = cast.results[0]
    if bits.width.data < 64:
        ops.append(wide := llvm.ZExtOp(value, i64))
        value = wide.results[0]
    ops.append(ptr := llvm.IntToPtrOp(value))
    return ptr.results[0]


def _unpack(ops: list[Operation], slot: SSAValue, typ: Attribute,
            bits: IntegerType | None) -> SSAValue:
    """The inverse of `_pack`: a value of LLVM type `typ` from its slot's `ptr`."""
    if bits is None:
        return slot
    ops.append(word := llvm.PtrToIntOp(slot, i64))
    value = word.results[0]
    if bits.width.data < 64:
        ops.append(narrow := llvm.TruncOp(value, bits))
        value = narrow.results[0]
    if typ != bits:
        ops.append(cast := llvm.BitcastOp(value, typ))
        value = cast.results[0]
    return value


def _entry(functions: _Functions, task: func.FuncOp) -> str:
    """`@<task>__entry`: the C-signature trampoline the runtime calls (made once)."""
    name = f"{task.sym_name.data}__entry"
    if name in functions.names:
        return name
    functions.names.add(name)
    block = Block(arg_types=[llvm.LLVMPointerType(), i64, i64])
    ctx, lo, hi = block.args
    ctx.name_hint, lo.name_hint, hi.name_hint = "ctx", "lo", "hi"
    ops: list[Operation] = []
    args: list[SSAValue] = []
    for i, typ in enumerate(task.function_type.inputs.data[:-2]):
        ptr = llvm.LLVMPointerType()
        load = llvm.LoadOp(_slot(ops, ctx, i), ptr)
        ops.append(load)
        lowered = llvm_type(typ)
        value = _unpack(ops, load.dereferenced_value, lowered, _int_type(task, lowered))
        args.append(_cast(ops, value, typ))
    bounds = [_cast(ops, v, IndexType()) for v in (lo, hi)]
    ops.append(func.CallOp(task.sym_name.data, [*args, *bounds], []))
    ops.append(func.ReturnOp())
    block.add_ops(ops)
    fn = func.FuncOp(name, func.FunctionType.from_lists(list(block.arg_types), []),
                     Region(block), visibility="private")
    Rewriter.insert_op(fn, InsertPoint.after(task))
    return name


def _lower(functions: _Functions, op: ParallelForOp) -> None:
    task = SymbolTable.lookup_symbol(op, op.task)
    if not isinstance(task, func.FuncOp):
        raise fail(ConvertFrameRtToLLVMPass.name, op,
                   f"task {op.task} is not a func.func of the module")
    if op.threads.value.data == 1:
        call = func.CallOp(task.sym_name.data, [*op.args, op.lb, op.ub], [])
        Rewriter.replace_op(op, call)
        return
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    if fn is None or not fn.body.blocks:
        raise fail(ConvertFrameRtToLLVMPass.name, op, "expected inside a func.func")
    kinds = [_int_type(op, llvm_type(a.type)) for a in op.args]  # fails early on bad ones
    _declare_runtime(functions)
    entry = _entry(functions, task)
    # The argument frame lives in the caller's stack frame, allocated once in the entry
    # block (a static alloca), and only for the duration of the call.
    size = llvm.ConstantOp(IntegerAttr(max(1, len(op.args)), i64), i64)
    ctx = llvm.AllocaOp(size.result, llvm.LLVMPointerType(), alignment=8)
    Rewriter.insert_op([size, ctx], InsertPoint.at_start(fn.body.blocks[0]))
    ops: list[Operation] = []
    for i, (a, bits) in enumerate(zip(op.args, kinds, strict=True)):
        value = _pack(ops, _cast(ops, a, llvm_type(a.type)), bits)
        ops.append(llvm.StoreOp(value, _slot(ops, ctx.results[0], i)))
    address = llvm.AddressOfOp(entry, llvm.LLVMPointerType())
    threads = llvm.ConstantOp(IntegerAttr(op.threads.value.data, i64), i64)
    ops += [address, threads]
    lb, ub = _cast(ops, op.lb, i64), _cast(ops, op.ub, i64)
    ops.append(llvm.CallOp(RUNTIME_PARALLEL_FOR, address.result, ctx.results[0], lb, ub,
                           threads.result))
    Rewriter.insert_op(ops, InsertPoint.before(op))
    Rewriter.erase_op(op)


def _lower_row(op: RowOp) -> None:
    """`frame_rt.row %buf[%t]` -> GEP inbounds by `t * row elements` on the element."""
    ops: list[Operation] = []
    base = _cast(ops, op.source, llvm.LLVMPointerType())
    index = _cast(ops, op.index, i64)
    stride = op.row_elements()
    if stride != 1:
        ops.append(const := llvm.ConstantOp(IntegerAttr(stride, i64), i64))
        ops.append(mul := llvm.MulOp(index, const.result, overflow=llvm.OverflowAttr(
            [llvm.OverflowFlag.NO_SIGNED_WRAP, llvm.OverflowFlag.NO_UNSIGNED_WRAP])))
        index = mul.res
    typ = op.source.type
    assert isinstance(typ, MemRefType)
    ops.append(gep := llvm.GEPOp.from_mixed_indices(base, [index], llvm_type(typ.element_type),
                                                    inbounds=True))
    row = _cast(ops, gep.result, op.result.type)
    Rewriter.replace_op(op, ops, [row])


def _lower_prefetch(op: PrefetchOp) -> None:
    """`frame_rt.prefetch %buf[%i]` -> `llvm.prefetch(gep %buf[%i], rw, 3, 1)`: the line
    into every cache level (locality 3), as data. The GEP is not `inbounds`: the op
    allows an index past the buffer, and x86's prefetch does not fault."""
    ops: list[Operation] = []
    base = _cast(ops, op.memref, llvm.LLVMPointerType())
    index = _cast(ops, op.index, i64)
    typ = op.memref.type
    assert isinstance(typ, MemRefType)
    ops.append(gep := llvm.GEPOp.from_mixed_indices(base, [index],
                                                    llvm_type(typ.element_type)))
    flags = [llvm.ConstantOp(IntegerAttr(v, i32), i32)
             for v in (1 if op.write is not None else 0, 3, 1)]
    ops += flags
    ops.append(llvm.CallIntrinsicOp("llvm.prefetch.p0",
                                    [gep.result, *(f.result for f in flags)], []))
    Rewriter.replace_op(op, ops, [])


@dataclass(frozen=True)
class ConvertFrameRtToLLVMPass(ModulePass):
    """Lower `frame_rt.parallel_for` to a runtime call (or an inline call, 1 thread),
    and `frame_rt.row` to a GEP."""

    name = "convert-frame-rt-to-llvm"

    def has_work(self, op: ModuleOp) -> bool:
        """Whether any frame_rt op is left to lower (else the pipeline skips the pass)."""
        return any(o.name.startswith("frame_rt.") for o in op.walk())

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = _Functions(op)
        for inner in list(op.walk()):
            if isinstance(inner, ParallelForOp):
                _lower(functions, inner)
            elif isinstance(inner, RowOp):
                _lower_row(inner)
            elif isinstance(inner, PrefetchOp):
                _lower_prefetch(inner)
            elif isinstance(inner, ScanOp):
                raise fail(self.name, inner, "expected no frame_rt.scan (run "
                           "frame-lower-scan first)")
        require_lowered(self.name, op, "frame_rt")

