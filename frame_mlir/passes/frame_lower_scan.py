"""frame-lower-scan: `frame_rt.scan` -> a loop of calls of the step function.

Expects: bufferized functions (frame-bufferize) holding `frame_rt.scan @step(%init,
%seqs..., %invs..., %out, %slot)` ops, where `@step` is a bufferized `func.func` of
the module taking `(carry, rows..., invariants..., out row, arena)`. Runs once the
passes that may grow an arena are done (frame-gemm appends its scratch to the arena
of every function that calls a GEMM kernel, step functions included): in the
pipeline, after frame-tile-matmul and before convert-linalg-to-loops.
Does: for each scan, in callee-first order (the step of a nested scan is lowered,
and its arena final, before the scans over its caller),

    func.call @step(%init, row(%seq, t0)..., %invs..., row(%out, t0), %slot)
    scf.for %i = 1 to length step 1 {          (only if length > 1)
      t = i, p = i - 1                          (reverse: t = length-1 - i, p = t + 1)
      func.call @step(row(%out, p), row(%seq, t)..., %invs..., row(%out, t), %slot)
    }

with t0 = 0 (reverse: length - 1) and `row(%b, t)` = `frame_rt.row %b[%t]`, the row
view of a `[length, ...]` buffer. Invariants are passed whole; the carry of step t is
the row of `%out` step t - 1 (t + 1 in reverse) wrote. The step's arena is the slot
frame-bufferize reserved in the caller's arena, live at the scan only; if the step's
arena has grown since (`frame.arena_size` above the slot's size), the slot moves to a
new region appended to the caller's arena (64-byte aligned; the caller's arena
argument, its type and `frame.arena_size` grow, as frame-gemm grows them; all the
grown scans of one function share that region, as they run one after the other).
Provenance attributes of the scan go on every call.
Guarantees: no `frame_rt.scan` remains; the step function is called `length` times,
in order, on disjoint rows of `%out` (the row it reads as carry is never the one it
writes), so the result is the same as `frame.scan`'s definition, bit for bit, as the
step computes the same way at each call. The IR's size does not depend on `length`.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i8, i64
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.dialects.frame_rt import RowOp, ScanOp
from frame_mlir.passes.common import arena_arg_index, callees_first, fail, provenance
from frame_mlir.passes.frame_bufferize import ALIGN


def _bytes(typ: object) -> int:
    assert isinstance(typ, MemRefType)
    return prod(typ.get_shape())


@dataclass(frozen=True)
class FrameLowerScan(ModulePass):
    """Lower every `frame_rt.scan` into calls of its step function (see module doc)."""

    name = "frame-lower-scan"

    def has_work(self, op: builtin.ModuleOp) -> bool:
        """Whether the module holds a scan (else the pipeline skips the pass)."""
        return any(isinstance(o, ScanOp) for o in op.walk())

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        functions = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        for fn in self._callees_first(functions):
            scans = [o for o in fn.walk() if isinstance(o, ScanOp)]
            if not scans:
                continue
            steps = [self._step(functions, s) for s in scans]
            self._fit_slots(fn, scans, steps)
            for scan, step in zip(scans, steps, strict=True):
                self._lower(scan, step)

    def _callees_first(self, functions: dict[str, func.FuncOp]) -> list[func.FuncOp]:
        return callees_first(self.name, functions, lambda o: o.body.root_reference.data
                             if isinstance(o, ScanOp) else None)

    def _step(self, functions: dict[str, func.FuncOp], scan: ScanOp) -> func.FuncOp:
        step = functions.get(scan.body.root_reference.data)
        if step is None or not step.body.blocks:
            raise fail(self.name, scan, f"step function {scan.body} expected a func.func "
                       "with a body in the module")
        inputs = step.function_type.inputs.data
        if arena_arg_index(step) != len(inputs) - 1:
            raise fail(self.name, scan, f"step function {scan.body} expected its arena "
                       "(frame.arena) as its last argument (run frame-bufferize first)")
        return step

    def _fit_slots(self, fn: func.FuncOp, scans: list[ScanOp],
                   steps: list[func.FuncOp]) -> None:
        """Give every scan a slot of its step's current arena type: the slot
        frame-bufferize reserved (viewed at the step's exact size), or, for a step
        whose arena outgrew it, a region appended to the caller's arena."""
        grown = [(s, st) for s, st in zip(scans, steps, strict=True)
                 if _bytes(st.function_type.inputs.data[-1]) > _bytes(s.parts()[4].type)]
        region: tuple[SSAValue, int] | None = None  # (caller's arena, offset)
        if grown:
            index = arena_arg_index(fn)
            if index is None:
                raise fail(self.name, grown[0][0], "the step's arena has grown past its "
                           "slot and the caller has no frame.arena argument to grow")
            block = fn.body.blocks[0]
            arena = block.args[index]
            size_attr = fn.attributes.get("frame.arena_size")
            old = size_attr.value.data if isinstance(size_attr, IntegerAttr) else \
                _bytes(arena.type)
            start = -(-old // ALIGN) * ALIGN
            need = max(_bytes(st.function_type.inputs.data[-1]) for _, st in grown)
            new_size = start + need
            arena = Rewriter.replace_value_with_new_type(arena, MemRefType(i8, [new_size]))
            fn.function_type = func.FunctionType.from_lists(
                [a.type for a in block.args], list(fn.function_type.outputs.data))
            fn.attributes["frame.arena_size"] = IntegerAttr(new_size, i64)
            region = (arena, start)
        for scan, step in zip(scans, steps, strict=True):
            want = step.function_type.inputs.data[-1]
            slot = scan.parts()[4]
            if slot.type == want:
                continue
            b = Builder(InsertPoint.before(scan))
            if _bytes(want) <= _bytes(slot.type):
                source, offset = slot, 0
            else:
                assert region is not None
                source, offset = region
            off = b.insert(arith.ConstantOp(IntegerAttr(offset, IndexType()))).result
            view = b.insert(memref.ViewOp(source, off, [], want)).results[0]
            view.name_hint = slot.name_hint
            scan.operands[len(scan.operands) - 1] = view
            _erase_dead_view(slot)

    def _lower(self, scan: ScanOp, step: func.FuncOp) -> None:
        init, seqs, invs, out, arena = scan.parts()
        length = scan.length.value.data
        reverse = scan.reverse is not None
        attrs = provenance(scan)
        name = step.sym_name.data
        b = Builder(InsertPoint.before(scan))

        def const(b: Builder, v: int) -> SSAValue:
            return b.insert(arith.ConstantOp(IntegerAttr(v, IndexType()))).result

        def call(b: Builder, carry: SSAValue, t: SSAValue) -> None:
            rows = [b.insert(RowOp(s, t)).result for s in seqs]
            dest = b.insert(RowOp(out, t)).result
            c = b.insert(func.CallOp(name, [carry, *rows, *invs, dest, arena], []))
            c.attributes.update(attrs)

        first = const(b, length - 1 if reverse else 0)
        call(b, init, first)
        if length > 1:
            one, ub = const(b, 1), const(b, length)
            body = Block(arg_types=[IndexType()])
            ib = Builder(InsertPoint.at_end(body))
            i = body.args[0]
            if reverse:  # t = length-1 - i, the carry from t + 1 = length - i
                i.name_hint = "i"
                t = ib.insert(arith.SubiOp(first, i)).result
                prev = ib.insert(arith.SubiOp(ub, i)).result
            else:  # t = i, the carry from t - 1
                t = i
                prev = ib.insert(arith.SubiOp(i, one)).result
            t.name_hint = "t"
            carry = ib.insert(RowOp(out, prev)).result
            carry.name_hint = "carry"
            call(ib, carry, t)
            ib.insert(scf.YieldOp())
            b.insert(scf.ForOp(one, ub, one, [], body))
        Rewriter.erase_op(scan)


def _erase_dead_view(value: SSAValue) -> None:
    """Erase the `memref.view` defining `value` (and its offset constant) if unused."""
    view = value.owner
    if isinstance(view, memref.ViewOp) and not view.result.uses:
        offset = view.byte_shift.owner
        Rewriter.erase_op(view)
        if isinstance(offset, arith.ConstantOp) and not offset.result.uses:
            Rewriter.erase_op(offset)
