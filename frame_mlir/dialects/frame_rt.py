"""The `frame_rt` dialect: what generated code asks of the frame runtime.

`frame_rt.parallel_for`: run a task function over a range of iterations, split into
contiguous chunks over the runtime's thread pool. `frame-parallelize` creates it from
loops whose iterations are independent; `convert-frame-rt-to-llvm` lowers it to a call
of the runtime (`frame_mlir/backend/llvm/parallel_runtime.py`), and the C++ emitter to
the emitted program's `std::thread` pool.

`frame_rt.scan`: `frame.scan` on buffers (frame-bufferize makes it, frame-lower-scan
turns it into a loop of calls of the step function). `frame_rt.row`: row `t` of a
`[T, ...]` buffer, the view frame-lower-scan hands each step (a GEP in
convert-frame-rt-to-llvm, pointer arithmetic in the C++ emitter).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    FlatSymbolRefAttrConstr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoMemoryEffect, SymbolTable
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class ParallelForOp(IRDLOperation):
    """Run `@task(args..., lo, hi)` on chunks `[lo, hi)` that cover `[lb, ub)`.

        frame_rt.parallel_for @k__task0(%a, %b) range(%c0, %c784) threads 2
            : memref<784x256xf32>, memref<784x256xf32>

    `@task` is a function taking `args` followed by two `index` values and returning
    nothing. The range is cut into at most `threads` contiguous chunks of (nearly)
    equal length, in order; each chunk is one call of the task, on any thread of the
    pool, the calls possibly running at the same time. The op returns when every
    chunk is done. The task must therefore only touch memory that no other chunk
    touches, except memory they all only read: then the result does not depend on
    the number of threads, nor on which thread ran which chunk. With `threads = 1`
    (or a range of one iteration) the task is called once, inline, with no pool.
    """

    name = "frame_rt.parallel_for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    args = var_operand_def()
    task = prop_def(FlatSymbolRefAttrConstr)
    threads = prop_def(IntegerAttr[I64])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$task `(` $args `)` `range` `(` $lb `,` $ub `)` `threads` $threads attr-dict"
        " (`:` type($args)^)?"
    )

    def __init__(self, task: str | SymbolRefAttr, args: Sequence[SSAValue], lb: SSAValue,
                 ub: SSAValue, threads: int):
        super().__init__(
            operands=[lb, ub, args],
            properties={
                "task": task if isinstance(task, SymbolRefAttr) else SymbolRefAttr(task),
                "threads": IntegerAttr(threads, 64),
            },
        )

    def verify_(self) -> None:
        threads = self.threads.value.data
        if threads < 1:
            raise VerifyException(f"{self.name}: threads must be at least 1, found {threads}")
        try:
            callee = SymbolTable.lookup_symbol(self, self.task)
        except ValueError:
            return  # not inside a module (a detached op): nothing to check against
        if callee is None:
            raise VerifyException(
                f"{self.name}: no task function {self.task} in the enclosing module")
        if not isinstance(callee, func.FuncOp):
            return  # lowered already (an llvm.func): its C signature is the lowering's
        expected = [*(a.type for a in self.args), IndexType(), IndexType()]
        found = list(callee.function_type.inputs.data)
        if found != expected or callee.function_type.outputs.data:
            shown = ", ".join(str(t) for t in expected)
            raise VerifyException(
                f"{self.name}: task {self.task} must take ({shown}) and return nothing, "
                f"found {callee.function_type}")


def _row_type(typ: MemRefType) -> MemRefType:
    """`memref<d1 x ... x T>` for a `memref<d0 x d1 x ... x T>`."""
    return MemRefType(typ.element_type, typ.get_shape()[1:])


def _identity_layout(typ: MemRefType) -> bool:
    return isinstance(typ.layout, NoneAttr)


@irdl_op_definition
class RowOp(IRDLOperation):
    """Row `index` of a buffer: the `[d1, ...]` memref that starts at element
    `index * d1 * ...` of a `[d0, d1, ...]` one.

        %r = frame_rt.row %buf[%t] : memref<4x2x3xf32> -> memref<2x3xf32>

    The source has an identity layout and static dims after the first (the row's
    size is static, so the row of a row-major buffer is contiguous: a bare pointer);
    the result is the source's shape without its leading dim, same element type,
    identity layout. `index` must be in `[0, d0)` (not checked: out of range is
    undefined, as for `memref.load`). A view: no memory is read or written.
    """

    name = "frame_rt.row"

    source = operand_def(MemRefType)
    index = operand_def(IndexType)
    result = result_def(MemRefType)

    traits = traits_def(NoMemoryEffect())

    assembly_format = "$source `[` $index `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, index: SSAValue):
        typ = SSAValue.get(source).type
        assert isinstance(typ, MemRefType)
        super().__init__(operands=[source, index], result_types=[_row_type(typ)])

    def row_elements(self) -> int:
        """Elements in one row (the stride of the leading dim)."""
        typ = self.source.type
        assert isinstance(typ, MemRefType)
        return prod(typ.get_shape()[1:])

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        assert isinstance(src, MemRefType) and isinstance(res, MemRefType)
        shape = src.get_shape()
        if not shape:
            raise VerifyException(f"{self.name}: expected a source of rank >= 1, found {src}")
        if any(d < 0 for d in shape[1:]) or not _identity_layout(src):
            raise VerifyException(f"{self.name}: expected a source with static dims after "
                                  f"the first and an identity layout, found {src}")
        if res != _row_type(src):
            raise VerifyException(f"{self.name}: result type expected {_row_type(src)} "
                                  f"(a row of {src}), found {res}")


def _is_byte_buffer(typ: Attribute) -> bool:
    return (isinstance(typ, MemRefType) and len(typ.get_shape()) == 1
            and isinstance(typ.element_type, IntegerType) and typ.element_type.width.data == 8)


@irdl_op_definition
class ScanOp(IRDLOperation):
    """`frame.scan` on buffers: run the bufferized step function over the rows.

        frame_rt.scan @cell(%h0, %xs, %w, %out, %slot)
            {length = 4 : i64, num_sequences = 1 : i64}
            : memref<2x3xf32>, memref<4x2x3xf32>, memref<3x3xf32>, memref<4x2x3xf32>,
              memref<192xi8>

    Operands: the initial carry, `num_sequences` sequences (`[length, ...]`), the
    invariants, then `out` (`[length, *carry]`) and the step's arena (a 1-D i8 buffer
    the step may use as scratch). For t = 0 .. length-1 (length-1 .. 0 with `reverse`)
    it calls `@body(carry, seq_0[t], ..., invariants..., out[t], arena)`, the carry
    being `init` at the first step and the row of `out` the previous step wrote
    after: row t of `out` is the carry of step t. The step function is a bufferized
    `func.func`: the memrefs of `frame.scan`'s step signature, its carry result as an
    out-parameter, its arena last, no results. Reads `init`, the sequences and the
    invariants, writes `out` and the arena; `out` must not overlap the others.

    The arena operand is sized by frame-bufferize from the step's `frame.arena_size`
    at that time; a later pass may still grow the step's arena (frame-gemm's scratch),
    which frame-lower-scan accounts for: so its size is not checked against the step's.
    """

    name = "frame_rt.scan"

    body = prop_def(FlatSymbolRefAttrConstr)
    args = var_operand_def(MemRefType)
    length = prop_def(IntegerAttr[I64])
    num_sequences = prop_def(IntegerAttr[I64])
    reverse = opt_prop_def(UnitAttr)

    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$body `(` $args `)` attr-dict `:` type($args)"

    def __init__(self, body: str | SymbolRefAttr, init: SSAValue,
                 sequences: Sequence[SSAValue], invariants: Sequence[SSAValue],
                 out: SSAValue, arena: SSAValue, length: int, reverse: bool = False):
        super().__init__(
            operands=[[init, *sequences, *invariants, out, arena]],
            properties={
                "body": body if isinstance(body, SymbolRefAttr) else SymbolRefAttr(body),
                "length": IntegerAttr(length, 64),
                "num_sequences": IntegerAttr(len(sequences), 64),
                "reverse": UnitAttr() if reverse else None,
            },
        )

    def parts(self) -> tuple[SSAValue, list[SSAValue], list[SSAValue], SSAValue, SSAValue]:
        """(init, sequences, invariants, out, arena)."""
        k = self.num_sequences.value.data
        args = list(self.args)
        return args[0], args[1:1 + k], args[1 + k:-2], args[-2], args[-1]

    def step_types(self) -> list[Attribute]:
        """The argument types the step function must have, its arena's aside (the
        last one is a 1-D i8 buffer of any size)."""
        init, seqs, invs, out, _ = self.parts()
        rows = [_row_type(s.type) for s in seqs]  # type: ignore[arg-type]
        return [init.type, *rows, *(v.type for v in invs), init.type]

    def verify_(self) -> None:
        n = len(self.args)
        length, k = self.length.value.data, self.num_sequences.value.data
        if n < 3:
            raise VerifyException(f"{self.name}: expected at least an initial carry, the "
                                  f"output and the step's arena, found {n} operands")
        if length < 1:
            raise VerifyException(f"{self.name}: length expected >= 1, found {length}")
        if not 0 <= k <= n - 3:
            raise VerifyException(f"{self.name}: num_sequences expected in [0, {n - 3}], "
                                  f"found {k}")
        init, seqs, _, out, arena = self.parts()
        carry = init.type
        assert isinstance(carry, MemRefType)
        for i, s in enumerate(seqs, 1):
            typ = s.type
            assert isinstance(typ, MemRefType)
            if not typ.get_shape() or typ.get_shape()[0] != length:
                raise VerifyException(f"{self.name}: sequence operand #{i} expected a "
                                      f"leading dim of {length} (the length), found {typ}")
        want = MemRefType(carry.element_type, [length, *carry.get_shape()])
        if out.type != want:
            raise VerifyException(f"{self.name}: output expected {want}, found {out.type}")
        if not _is_byte_buffer(arena.type):
            raise VerifyException(f"{self.name}: the step's arena expected a 1-D i8 "
                                  f"memref, found {arena.type}")
        try:
            callee = SymbolTable.lookup_symbol(self, self.body)
        except ValueError:
            return  # not inside a module (a detached op): nothing to check against
        if callee is None:
            raise VerifyException(f"{self.name}: no step function {self.body} in the "
                                  "enclosing module")
        if not isinstance(callee, func.FuncOp):
            return  # lowered already
        found = list(callee.function_type.inputs.data)
        want_args = self.step_types()
        if not found or found[:-1] != want_args or not _is_byte_buffer(found[-1]) or \
                callee.function_type.outputs.data:
            shown = ", ".join(str(t) for t in [*want_args, "memref<Nxi8>"])
            raise VerifyException(f"{self.name}: step function {self.body} must take "
                                  f"({shown}) and return nothing, found "
                                  f"{callee.function_type}")


@irdl_op_definition
class PrefetchOp(IRDLOperation):
    """A hint that element `index` of a 1-D buffer will be read (or, with `write`,
    written) soon: its cache line is fetched into L1 ahead of the access.

        frame_rt.prefetch %buf[%i] : memref<?xf32>
        frame_rt.prefetch %buf[%i] write : memref<1024xf32>

    No memory is read or written and nothing can fault: an `index` outside the buffer
    is allowed (the hint is dropped). frame-gemm issues it for the epilogue's operands
    of a tile before the tile's micro-kernel runs, so their lines (rows apart in a large
    buffer, which the hardware prefetchers do not follow) arrive while it computes.
    `llvm.prefetch` (convert-frame-rt-to-llvm), `__builtin_prefetch` (the C++ emitter).
    """

    name = "frame_rt.prefetch"

    memref = operand_def(MemRefType)
    index = operand_def(IndexType)
    write = opt_prop_def(UnitAttr)

    assembly_format = "$memref `[` $index `]` (`write` $write^)? attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue, index: SSAValue, write: bool = False):
        super().__init__(operands=[memref, index],
                         properties={"write": UnitAttr()} if write else {})

    def verify_(self) -> None:
        typ = self.memref.type
        assert isinstance(typ, MemRefType)
        if len(typ.get_shape()) != 1 or not _identity_layout(typ):
            raise VerifyException(f"{self.name}: expected a 1-D memref with an identity "
                                  f"layout, found {typ}")


FrameRt = Dialect("frame_rt", [ParallelForOp, ScanOp, RowOp, PrefetchOp], [])
