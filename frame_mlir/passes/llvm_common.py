"""Shared helpers of the `convert-*-to-llvm` passes: type conversion and cast glue.

The loop-to-LLVM lowering is split into one pass per source dialect, as upstream MLIR
does. Each pass rewrites only its own ops and bridges type mismatches at the boundary
with `builtin.unrealized_conversion_cast`; `reconcile-unrealized-casts` removes the
cast pairs once every dialect has been converted.

Type conversion (the bare-pointer ABI):
- `index` becomes `i64` (also inside vectors),
- every `memref` becomes `!llvm.ptr` (shapes are static with identity layout, so the
  pointer to the first element is the whole descriptor),
- `bf16` becomes `i16` (also inside vectors): llvmlite 0.50 has no `bfloat` type, so a
  bf16 is its bit pattern; `arith-expand-bf16` has turned its conversions into integer
  ops before this point,
- every other type (integers, floats, vectors, llvm types) is kept.

Each pass is a full conversion of its dialect (`require_lowered`): an op of it that no
rule lowered fails the pass, naming the op and where it is, and the pipeline ends with
`llvm-legality-check` (`lower_to_llvm.py`) for ops of any other dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i16,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from frame_mlir.target.op_tables import OpRow

INDEX_BITWIDTH = 64
"""Bit width `index` lowers to (the host is a 64-bit target)."""


def llvm_type(typ: Attribute) -> Attribute:
    """The LLVM-compatible type `typ` lowers to (itself when already compatible)."""
    if isinstance(typ, IndexType):
        return i64
    if isinstance(typ, MemRefType):
        # a memref in a memory space (GPU shared memory: 3) is a pointer in that space
        space = typ.memory_space
        if isinstance(space, IntegerAttr) and space.value.data:
            return llvm.LLVMPointerType(IntAttr(space.value.data))
        return llvm.LLVMPointerType()
    if isinstance(typ, BFloat16Type):
        return i16
    if isinstance(typ, VectorType) and isinstance(typ.element_type, IndexType):
        return VectorType(i64, typ.get_shape())
    if isinstance(typ, VectorType) and isinstance(typ.element_type, BFloat16Type):
        return VectorType(i16, typ.get_shape())
    return typ


def is_llvm_type(typ: Attribute) -> bool:
    """Whether `typ` needs no conversion."""
    return llvm_type(typ) == typ


def new_cast(value: SSAValue, target: Attribute) -> UnrealizedConversionCastOp:
    """`builtin.unrealized_conversion_cast` of `value` to `target`: the op
    `UnrealizedConversionCastOp.get([value], [target])` makes, made without IRDL's
    generic construction (a quarter of the time; the lowering makes tens of thousands)."""
    return UnrealizedConversionCastOp.create(operands=[value], result_types=[target])


def coerce(rewriter: PatternRewriter, value: SSAValue, target: Attribute) -> SSAValue:
    """Return `value` as a value of type `target`, inserting a cast before the matched op.

    When `value` is itself a cast from `target` (the other half of a conversion done by
    an earlier pattern), the original value is reused, so chains do not pile up.
    """
    if value.type == target:
        return value
    owner = value.owner
    if (
        isinstance(owner, UnrealizedConversionCastOp)
        and len(owner.inputs) == 1
        and owner.inputs[0].type == target
    ):
        return owner.inputs[0]
    before = rewriter.insertion_point.insert_before
    if before is not None and (existing := _dominating_cast(value, target, before)):
        return existing
    cast = new_cast(value, target)
    rewriter.insert(cast)
    return cast.results[0]


def _dominating_cast(value: SSAValue, target: Attribute, before: Operation) -> SSAValue | None:
    """An existing cast of `value` to `target` that dominates `before`, if any.

    Only casts earlier in the same block as `before` (or as one of its ancestors) are
    considered: that needs no dominance analysis and catches the common case of one
    loop index used by several accesses.
    """
    for use in value.uses:
        cast = use.operation
        if not (
            isinstance(cast, UnrealizedConversionCastOp)
            and len(cast.results) == 1
            and cast.results[0].type == target
        ):
            continue
        block = cast.parent_block()
        anchor: Operation | None = before
        while anchor is not None and anchor.parent_block() is not block:
            anchor = anchor.parent_op()
        if anchor is not None and _is_before(cast, anchor, block):
            return cast.results[0]
    return None


class _OpOrder:
    """Positions of ops in their blocks, numbered a block at a time when asked about an
    op without one (a new op), for `_is_before` in constant time where
    `Operation.is_before_in_block` walks from one op to the other.

    Right while ops are only inserted and erased, as the conversions do: an insertion
    leaves the others in their order, and the new op is not numbered yet. A function's
    ops are the thousands of views of one arena, each of which asks whether the arena's
    first cast comes before it: walking there made the conversions quadratic.
    """

    def __init__(self) -> None:
        self._position: dict[Operation, int] = {}

    def is_before(self, a: Operation, b: Operation, block: Block) -> bool:
        pa, pb = self._position.get(a), self._position.get(b)
        if pa is None or pb is None:
            for i, o in enumerate(block.ops):
                self._position[o] = i
            pa, pb = self._position[a], self._position[b]
        return pa < pb


_order: _OpOrder | None = None


@contextmanager
def op_order() -> Iterator[None]:
    """Inside: `coerce` compares op positions in constant time (see `_OpOrder`). For
    the `apply` of a pass whose rewrites insert and erase ops but move none."""
    global _order
    outer = _order
    _order = outer or _OpOrder()
    try:
        yield
    finally:
        _order = outer


def _is_before(a: Operation, b: Operation, block: Block | None) -> bool:
    """Whether `a` comes strictly before `b` in `block` (the block of both)."""
    if _order is None or block is None:
        return a.is_before_in_block(b)
    return _order.is_before(a, b, block)


def to_llvm(rewriter: PatternRewriter, value: SSAValue) -> SSAValue:
    """`value` converted to its LLVM-compatible type (see `llvm_type`)."""
    return coerce(rewriter, value, llvm_type(value.type))


def to_llvm_all(rewriter: PatternRewriter, values: Iterable[SSAValue]) -> list[SSAValue]:
    """`to_llvm` applied to each value."""
    return [to_llvm(rewriter, v) for v in values]


def cast_back(new_ops: list[Operation], value: SSAValue, original: Attribute) -> SSAValue:
    """Return `value` typed as `original`, appending the cast to `new_ops` if needed.

    Used on results: the users of the replaced op still expect the original type until
    their own dialect is converted.
    """
    if value.type == original:
        return value
    cast = new_cast(value, original)
    new_ops.append(cast)
    return cast.results[0]


def retype_block_args(block: Block) -> None:
    """Give the block's arguments their LLVM types; casts back keep the uses valid.

    The caller is responsible for making the incoming values (branch operands, or the
    function signature for an entry block) match the new types.
    """
    casts: list[Operation] = []
    for arg in block.args:
        target = llvm_type(arg.type)
        if target == arg.type:
            continue
        original = arg.type
        new_arg = Rewriter.replace_value_with_new_type(arg, target)
        if not new_arg.uses:
            continue
        cast = new_cast(new_arg, original)
        casts.append(cast)
        new_arg.replace_uses_with_if(cast.results[0], lambda use, c=cast: use.operation is not c)
    if casts:
        Rewriter.insert_op(casts, InsertPoint.at_start(block))


Rule = Callable[[Operation, PatternRewriter], None]


def rewrite_ops(module: ModuleOp, rules: Mapping[type[Operation], Rule]) -> None:
    """Apply the rule of each op's class (`rules`, by exact class) to every op of
    `module`, in IR order (pre-order), each with a `PatternRewriter` inserting before
    it; ops erased by an earlier rule are passed over, ops created by one are not
    visited.

    What `PatternRewriteWalker(GreedyRewritePatternApplier(patterns, dce_enabled=False),
    apply_recursively=False)` does with one pattern per op class, without its per-op
    cost (a worklist, a pattern applier and a rewriter reset for every op of the module,
    matched or not: about half of each conversion's time). A rule's exception is
    reported as the walker reports it (`Operation.emit_error`).
    """
    for op in list(module.walk()):
        rule = rules.get(type(op))
        if rule is None or op.parent is None:
            continue
        try:
            rule(op, PatternRewriter(op))
        except Exception as err:
            op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)


def erase_dead_casts(module: ModuleOp) -> None:
    """Erase unused `unrealized_conversion_cast` ops (leftovers of reused chains), and
    the casts that only they used, in turn. One walk: a cast whose last use goes away
    is looked at again, rather than the module walked again until nothing changes."""
    work = [op for op in module.walk() if isinstance(op, UnrealizedConversionCastOp)]
    work.reverse()  # popped in IR order
    while work:
        op = work.pop()
        if op.parent is None or any(r.uses for r in op.results):
            continue  # erased already, or used
        inputs = [v.owner for v in op.operands]
        op.detach()
        op.erase()
        work += [o for o in inputs if isinstance(o, UnrealizedConversionCastOp)]


def llvm_fastmath(flags: Attribute | None) -> llvm.FastMathAttr:
    """Translate an `arith.fastmath` attribute (or None) to `llvm.fastmath`."""
    data = getattr(flags, "data", None)
    if not data:
        return llvm.FastMathAttr(None)
    return llvm.FastMathAttr(data)


def intrinsic_suffix(typ: Attribute) -> str:
    """The overload suffix of an LLVM intrinsic on `typ` (`f32`, `v16f32`, ...)."""
    if isinstance(typ, VectorType):
        return f"v{typ.get_shape()[0]}{intrinsic_suffix(typ.element_type)}"
    if isinstance(typ, Float16Type | Float32Type | Float64Type):
        return f"f{typ.bitwidth}"
    if isinstance(typ, IntegerType):
        return f"i{typ.width.data}"
    raise PassFailedException(f"no LLVM intrinsic overload for type {typ}")


def element_byte_size(typ: Attribute) -> int:
    """Size in bytes of one memref element (its natural alignment too)."""
    if isinstance(typ, IndexType):
        return INDEX_BITWIDTH // 8
    if isinstance(typ, AnyFloat):
        return typ.bitwidth // 8
    if isinstance(typ, IntegerType):
        # LLVM stores iN in the next power-of-two number of bytes (i1 in one byte).
        nbytes = max(1, (typ.width.data + 7) // 8)
        return 1 << (nbytes - 1).bit_length()
    raise PassFailedException(f"unsupported memref element type {typ}")


def static_strides(typ: MemRefType) -> list[int]:
    """Row-major element strides of a statically shaped, identity-layout memref.

    Raises PassFailedException otherwise: the bare-pointer ABI carries no sizes or
    strides at run time. Only the leading dimension may be dynamic (`memref<?xf32>`,
    the losses of frame-train-loop): no row-major stride depends on it.
    """
    shape = typ.get_shape()
    if any(d < 0 for d in shape[1:]):
        raise PassFailedException(f"bare-pointer lowering needs a static shape, got {typ}")
    layout = typ.layout
    identity = isinstance(layout, NoneAttr) or (
        isinstance(layout, AffineMapAttr) and layout.data == AffineMap.identity(len(shape))
    )
    if not identity:
        raise PassFailedException(f"bare-pointer lowering needs an identity layout, got {typ}")
    strides: list[int] = []
    running = 1
    for dim in reversed(shape):
        strides.append(running)
        running *= dim
    return strides[::-1]


def require_lowered(pass_name: str, module: ModuleOp, dialect: str,
                    rules: Mapping[type[Operation], object] | None = None) -> None:
    """Make `pass_name` a full conversion of `dialect`: fail if any op of it is left.

    A pattern pass leaves an op it has no rule for (or whose rule declines its types)
    in place; without this check the op would travel on until the translation to
    LLVM IR or the JIT failed on it, far from where it was written. The failure names
    the op and where it is (its function; frame-opt adds its `file:line:col`), and
    says whether the op has no rule at all (`rules`) or not for these types.
    """
    for op in module.walk():
        if op.dialect_name() != dialect:
            continue
        if rules is not None and type(op) not in rules:
            why = "the pass has no rule for it"
        else:
            types = ", ".join(str(t) for t in (*op.operand_types, *op.result_types))
            why = f"its rule does not support these types ({types})"
        left = sum(1 for o in module.walk() if o.dialect_name() == dialect) - 1
        more = f"; {left} more {dialect} op{'s' if left != 1 else ''} left" if left else ""
        raise not_lowered(pass_name, op, f"{why}{more}")


def op_name(op: Operation) -> str:
    """`op`'s name as written (an unregistered op's own name, not
    `builtin.unregistered`)."""
    name = getattr(op, "op_name", None)
    return name.data if isinstance(name, StringAttr) else op.name


def not_lowered(pass_name: str, op: Operation, why: str) -> PassFailedException:
    """`<pass> at @<function>: <op>: not lowered to the llvm dialect: <why>`, carrying
    the op so that frame-opt prefixes its `file:line:col`. The function is found
    through `func.func` and `llvm.func` alike (the lowering turns one into the other)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp | llvm.FuncOp):
        parent = parent.parent_op()
    where = f"@{parent.sym_name.data}" if parent is not None else "<module>"
    error = PassFailedException(
        f"{pass_name} at {where}: {op_name(op)}: not lowered to the llvm dialect: {why}")
    error.op = op  # type: ignore[attr-defined]  # for frame-opt's file:line:col
    return error


def table_rule(row: OpRow) -> Callable[[Operation, PatternRewriter], None]:
    """The lowering of an op of `target.op_tables.OP_TABLE` from its row.

    An intrinsic is called by its type-mangled name (`llvm.exp.f32`) with
    `llvm.call_intrinsic` rather than xDSL's `llvm.intr.*` ops: their llvmlite
    translation declares the unmangled name, so one module using an intrinsic at two
    types (f32 and f64, a scalar and a vector) would fail to translate. Fast-math flags
    are dropped on intrinsic calls (xDSL's translation rejects them there; they are
    only a hint). LLVM turns the intrinsics without an instruction (exp, tanh, ...)
    into libm calls, which MCJIT resolves in-process.
    """

    def rule(op: Operation, rewriter: PatternRewriter) -> None:
        args = to_llvm_all(rewriter, op.operands)
        new: Operation
        if row.llvm_form == "intrinsic":
            assert isinstance(row.llvm, str)
            typ = args[0].type
            new = llvm.CallIntrinsicOp(f"{row.llvm}.{intrinsic_suffix(typ)}", args, [typ])
        else:
            assert not isinstance(row.llvm, str)
            extra: dict[str, Attribute] = {}
            if row.llvm_form == "op_overflow":
                extra["overflow"] = _overflow_flags(op)
            elif row.llvm_form == "op_fastmath":
                extra["fast_math"] = llvm_fastmath(op.properties.get("fastmath"))
            new = row.llvm(*args, **extra)  # type: ignore[call-arg]
        new_ops = [new]
        value = cast_back(new_ops, new.results[0], op.results[0].type)
        rewriter.replace(op, new_ops, [value])

    return rule


def _overflow_flags(op: Operation) -> llvm.OverflowAttr:
    """arith's overflow flags (`nsw`, `nuw`) of `op` as llvm's."""
    flags = getattr(op, "overflow_flags", None)
    data = flags.data if flags is not None else ()
    return llvm.OverflowAttr([llvm.OverflowFlag(f.value) for f in data])
