"""frame-bufferize: tensors to memrefs with a static memory plan.

Expects: functions in destination-passing linalg-on-tensors form, as produced by
convert-frame-to-linalg: `tensor.empty`, `linalg.fill`, `linalg.generic` with
tensor results, `frame.scan`, scalar `arith` ops and `func.return`, all statically
shaped. The step function of a scan is a function of the same module.
Does:
  * every tensor value gets a buffer. A linalg result shares the buffer of its
    destination (`outs`) operand, so values form *buffer classes* rooted at a
    function argument or a `tensor.empty`;
  * a write into a destination that is still read later, or into an argument not
    donated for that result, gets a fresh buffer and a copy first (value
    semantics are kept);
  * a result whose class is rooted at an argument marked
    `frame.aliasing_output = r` is produced in place: the argument's buffer is
    updated and the result disappears from the signature (that is how SGD
    updates parameters in place);
  * other results become out-parameters (`frame.output = r`) written directly;
  * every remaining class is an intermediate: it is live from its
    `tensor.empty` to its last use, and intervals are packed first-fit into ONE
    byte arena (the last argument, `frame.arena`), 64-byte aligned. Buffers whose
    lifetimes do not overlap share memory; a compiled step allocates nothing;
  * functions are bufferized callees first: a step function before the functions
    that scan over it (nested scans included; a step that scans over itself,
    directly or not, is rejected). A `frame.scan`'s result is a buffer class of its
    own (rooted at the scan, like a `tensor.empty` there: an out-parameter when
    returned), its operands are read at the scan, and the step's arena gets a slot
    of the step's `frame.arena_size` bytes in the caller's arena, live at the scan
    only. The scan becomes `frame_rt.scan @step(init, sequences..., invariants...,
    out, slot)` (frame-lower-scan makes it a loop of calls).
Guarantees: no tensors remain; functions take only memrefs and return nothing;
`frame.arena_size` on each function gives the arena's byte size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import prod

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, tensor
from xdsl.dialects.builtin import MemRefType, TensorType, i8
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from frame_mlir.dialects import frame_rt
from frame_mlir.dialects.frame_scan import ScanOp
from frame_mlir.dialects.linalg_utils import copy_generic
from frame_mlir.passes.common import callees_first, fail, provenance

ALIGN = 64


def _memref_type(t: TensorType) -> MemRefType:
    return _memref_of(t.element_type, tuple(t.get_shape()))


@lru_cache(maxsize=4096)
def _memref_of(element: Attribute, shape: tuple[int, ...]) -> MemRefType:
    """`MemRefType(element, shape)`, made once per type: types are immutable values,
    and building one (IRDL verifies its parameters) cost more than the rest of the
    pass's work on a buffer."""
    return MemRefType(element, shape)


def _nbytes(t: TensorType) -> int:
    return t.element_type.bitwidth // 8 * prod(t.get_shape())  # type: ignore[attr-defined]


def _outs(op: Operation) -> list[SSAValue]:
    if isinstance(op, linalg.GenericOp | linalg.FillOp):
        return list(op.outputs)
    return []


def _reading_destination(op: Operation, dest: SSAValue, init: SSAValue
                         ) -> linalg.GenericOp | None:
    """`op` rewritten to read its destination `dest` as one more input and write `init`
    instead -- what a copy of `dest` into `init` followed by `op` computes, in one pass
    instead of two -- or None when that is not the same: `op` must be a generic with one
    output, all loops parallel and the output written whole through the identity map
    (so each element is written once, and its old value is read only there). An
    out-of-place update `p - lr * g` of a function's input `p` (the Python API's
    `sgd_update` graph) was a copy of `p` and an update in place, five streams of
    memory for three."""
    if not isinstance(op, linalg.GenericOp) or len(op.outputs) != 1 or len(op.results) != 1:
        return None
    shape = list(dest.type.get_shape())  # type: ignore[attr-defined]
    maps = list(op.indexing_maps.data)
    if maps[-1].data != AffineMap.identity(len(shape)) or \
            any(str(i.data) != "parallel" for i in op.iterator_types.data) or \
            list(op.get_static_loop_ranges()) != shape:
        return None
    region = op.detach_region(op.body)
    block = region.block
    n_in = len(op.inputs)
    read = block.insert_arg(block.args[n_in].type, n_in)
    block.args[n_in + 1].replace_all_uses_with(read)
    new = linalg.GenericOp([*op.inputs, dest], [init], region, [*maps, maps[-1]],
                           op.iterator_types, [init.type], doc=op.doc,
                           library_call=op.library_call)
    for name, value in op.attributes.items():
        new.attributes.setdefault(name, value)
    return new


@dataclass
class MemoryPlan:
    """Byte offsets of intermediate buffer classes in the arena."""

    offsets: dict[int, int] = field(default_factory=dict)
    size: int = 0


def plan_intervals(intervals: dict[int, tuple[int, int, int]]) -> MemoryPlan:
    """First-fit packing of (start, end, nbytes) live intervals, by start time.

    Two classes may share bytes only if their live ranges are disjoint.
    """
    plan = MemoryPlan()
    # (start, end, offset, nbytes) of the placed classes whose live range has not ended
    # before the current start. Starts only grow, so a class that ended before one
    # start ends before every later one: it is dropped, and each class is compared
    # with the live ones only (comparing with every placed class was quadratic).
    placed: list[tuple[int, int, int, int]] = []
    for cls, (start, end, nbytes) in sorted(intervals.items(), key=lambda kv: (kv[1][0], kv[0])):
        size = -(-nbytes // ALIGN) * ALIGN
        placed = [p for p in placed if start <= p[1]]
        busy = sorted((o, o + n) for s, e, o, n in placed if s <= end)
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, -(-hi // ALIGN) * ALIGN)
        placed.append((start, end, offset, size))
        plan.offsets[cls] = offset
        plan.size = max(plan.size, offset + size)
    return plan


def _has_tensors(fn: func.FuncOp) -> bool:
    """Whether `fn` still has tensor values: an already bufferized function is left
    as it is, so running the pass again changes nothing."""
    types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
    types += [r.type for o in fn.walk() for r in o.results]
    return any(isinstance(t, TensorType) for t in types)


@dataclass(frozen=True)
class FrameBufferize(ModulePass):
    """Bufferize linalg-on-tensors functions into memref functions over one arena."""

    name = "frame-bufferize"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        todo = [fn for fn in op.ops
                if isinstance(fn, func.FuncOp) and fn.body.blocks and _has_tensors(fn)]
        for fn in self._callees_first(todo):
            self._insert_copies(fn)
            Rewriter.replace_op(fn, self._bufferize(fn))

    def _callees_first(self, fns: list[func.FuncOp]) -> list[func.FuncOp]:
        """`fns` in an order where the step function of every scan comes before the
        function holding the scan (its arena size is then known)."""
        return callees_first(self.name, {fn.sym_name.data: fn for fn in fns},
                             lambda o: o.body.root_reference.data
                             if isinstance(o, ScanOp) else None)

    def _step_arena(self, scan: ScanOp) -> int:
        """The byte size of the arena of `scan`'s (bufferized) step function."""
        callee = SymbolTable.lookup_symbol(scan, scan.body)
        if not isinstance(callee, func.FuncOp) or not callee.body.blocks:
            raise fail(self.name, scan, f"step function {scan.body} expected a func.func "
                       "with a body in the module")
        size = callee.attributes.get("frame.arena_size")
        if _has_tensors(callee) or not isinstance(size, builtin.IntegerAttr):
            raise fail(self.name, scan, f"step function {scan.body} is not bufferized "
                       "(no frame.arena_size)")
        return size.value.data

    # -- step 1: keep value semantics where a destination is read again ---------------
    def _insert_copies(self, fn: func.FuncOp) -> None:
        block = fn.body.blocks[0]
        order = {o: i for i, o in enumerate(block.ops)}
        donated = self._donations(fn)
        for o in list(block.ops):
            for idx, dest in enumerate(_outs(o)):
                later_use = any(order[u.operation] > order[o] for u in dest.uses
                                if u.operation in order)
                writes_arg = isinstance(dest, BlockArgument) and dest.index not in donated
                if later_use or writes_arg:
                    empty = tensor.EmptyOp([], dest.type)
                    Rewriter.insert_op(empty, InsertPoint.before(o))
                    reading = _reading_destination(o, dest, empty.tensor)
                    if reading is not None:
                        Rewriter.replace_op(o, reading)
                    else:
                        cp = copy_generic(dest, empty.tensor)
                        Rewriter.insert_op(cp, InsertPoint.before(o))
                        o.operands[len(o.operands) - len(_outs(o)) + idx] = cp.results[0]
                    order = {x: i for i, x in enumerate(block.ops)}

    @staticmethod
    def _donations(fn: func.FuncOp) -> dict[int, int]:
        """argument index -> result index it is donated to."""
        out: dict[int, int] = {}
        if fn.arg_attrs is not None:
            for i, d in enumerate(fn.arg_attrs.data):
                a = d.data.get("frame.aliasing_output")
                if isinstance(a, builtin.IntegerAttr):
                    out[i] = a.value.data
        return out

    # -- step 2: classes, plan, rewrite ------------------------------------------------
    def _bufferize(self, fn: func.FuncOp) -> func.FuncOp:
        block = fn.body.blocks[0]
        ops = list(block.ops)
        ret = ops[-1]
        if not isinstance(ret, func.ReturnOp):
            raise fail(self.name, fn, "expected a single-block function ending in func.return")
        pos = {o: i for i, o in enumerate(ops)}

        # Buffer classes: root value of each tensor value.
        root: dict[SSAValue, SSAValue] = {}
        for a in block.args:
            if isinstance(a.type, TensorType):
                root[a] = a
        for o in ops:
            if isinstance(o, tensor.EmptyOp):
                root[o.tensor] = o.tensor
            elif isinstance(o, ScanOp):
                root[o.result] = o.result  # a new buffer, written by the scan
            elif _outs(o):
                for r, d in zip(o.results, _outs(o), strict=True):
                    root[r] = root[d]
            elif any(isinstance(r.type, TensorType) for r in o.results):
                raise fail(self.name, o, "unsupported tensor-producing op (expected "
                           "tensor.empty, linalg.fill, linalg.generic or frame.scan)")

        donated = self._donations(fn)
        # Results: in place (donated arg) or an out-parameter.
        out_params: list[tuple[int, TensorType]] = []
        out_class: dict[SSAValue, int] = {}  # class root -> index into out_params
        copies_at_return: list[tuple[SSAValue, int]] = []
        for r, v in enumerate(ret.operands):
            rt = root.get(v)
            if rt is None:
                raise fail(self.name, ret, f"result #{r} is not a tensor")
            if isinstance(rt, BlockArgument) and donated.get(rt.index) == r:
                continue
            k = len(out_params)
            out_params.append((r, v.type))  # type: ignore[arg-type]
            if isinstance(rt, BlockArgument) or rt in out_class:
                copies_at_return.append((v, k))
            else:
                out_class[rt] = k
        # A donated argument must really end up holding its result.
        for a_idx, r in donated.items():
            if r >= len(ret.operands) or root.get(ret.operands[r]) is not block.args[a_idx]:
                raise fail(self.name, fn, f"argument #{a_idx} is donated to result #{r}, "
                           "but that result is not computed in its buffer")

        # Live intervals of arena classes.
        intervals: dict[int, tuple[int, int, int]] = {}
        class_ids: dict[SSAValue, int] = {}
        for v, rt in root.items():
            if isinstance(rt, BlockArgument) or rt in out_class:
                continue
            cid = class_ids.setdefault(rt, len(class_ids))
            start = pos[rt.owner]  # type: ignore[index]
            end = max([pos[u.operation] for u in v.uses if u.operation in pos] + [start])
            s0, e0, nb = intervals.get(cid, (start, start, _nbytes(rt.type)))  # type: ignore[arg-type]
            intervals[cid] = (min(s0, start), max(e0, end), nb)
        # The step arena of each scan: live at the scan only.
        slot_ids: dict[ScanOp, int] = {}
        for o in ops:
            if isinstance(o, ScanOp):
                slot_ids[o] = cid = len(class_ids) + len(slot_ids)
                intervals[cid] = (pos[o], pos[o], self._step_arena(o))
        plan = plan_intervals(intervals)
        arena_size = max(plan.size, ALIGN)

        # The new function.
        arg_types = [_memref_type(a.type) if isinstance(a.type, TensorType) else a.type
                     for a in block.args]
        arg_types += [_memref_type(t) for _, t in out_params]
        arg_types.append(MemRefType(i8, [arena_size]))
        new_block = Block(arg_types=arg_types)
        n_in = len(block.args)
        arena = new_block.args[-1]
        for i, a in enumerate(block.args):
            if a.name_hint:
                new_block.args[i].name_hint = a.name_hint
        for k, (r, _) in enumerate(out_params):
            new_block.args[n_in + k].name_hint = "out" if len(out_params) == 1 else f"out{r}"
        arena.name_hint = "arena"

        buf: dict[SSAValue, SSAValue] = {}  # class root -> memref value
        for i, a in enumerate(block.args):
            buf[a] = new_block.args[i]
        for rt, k in out_class.items():
            buf[rt] = new_block.args[n_in + k]
        vmap: dict[SSAValue, SSAValue] = {}

        def memref_of(v: SSAValue) -> SSAValue:
            return buf[root[v]]

        def arena_view(cid: int, typ: MemRefType, hint: str | None) -> SSAValue:
            off = arith.ConstantOp(builtin.IntegerAttr(plan.offsets[cid], builtin.IndexType()))
            view = memref.ViewOp(arena, off, [], typ)
            view.result.name_hint = hint
            new_block.add_ops([off, view])
            return view.result

        for o in ops:
            if isinstance(o, tensor.EmptyOp):
                if o.tensor in buf:
                    continue
                buf[o.tensor] = arena_view(class_ids[o.tensor], _memref_type(o.tensor.type),
                                           o.tensor.name_hint)
            elif isinstance(o, ScanOp):
                if o.result not in buf:
                    buf[o.result] = arena_view(class_ids[o.result],
                                               _memref_type(o.result.type),  # type: ignore[arg-type]
                                               o.result.name_hint)
                slot = arena_view(slot_ids[o], MemRefType(i8, [intervals[slot_ids[o]][2]]),
                                  f"{o.body.root_reference.data}_arena")
                init, seqs, invs = o.parts()
                new = frame_rt.ScanOp(o.body, memref_of(init), [memref_of(v) for v in seqs],
                                      [memref_of(v) for v in invs], memref_of(o.result),
                                      slot, o.length.value.data, o.reverse is not None)
                new.attributes.update(provenance(o))
                new_block.add_op(new)
            elif isinstance(o, linalg.GenericOp):
                new = linalg.GenericOp(
                    [memref_of(v) if v in root else vmap.get(v, v) for v in o.inputs],
                    [memref_of(v) for v in o.outputs], o.body.clone(),
                    o.indexing_maps, o.iterator_types, [], doc=o.doc)
                new.attributes.update(provenance(o))
                new_block.add_op(new)
            elif isinstance(o, linalg.FillOp):
                new = linalg.FillOp([vmap.get(v, v) for v in o.inputs],
                                    [memref_of(v) for v in o.outputs], [])
                new.attributes.update(provenance(o))
                new_block.add_op(new)
            elif isinstance(o, func.ReturnOp):
                for v, k in copies_at_return:
                    new_block.add_op(copy_generic(memref_of(v), new_block.args[n_in + k]))
                new_block.add_op(func.ReturnOp())
            else:
                clone = o.clone(value_mapper={**{v: vmap[v] for v in o.operands if v in vmap}})
                new_block.add_op(clone)
                for old, new in zip(o.results, clone.results, strict=True):
                    vmap[old] = new

        new_fn = func.FuncOp(fn.sym_name.data,
                             func.FunctionType.from_lists(arg_types, []), Region(new_block))
        attrs = list(fn.arg_attrs.data) if fn.arg_attrs is not None else [
            builtin.DictionaryAttr({}) for _ in block.args]
        attrs += [builtin.DictionaryAttr({"frame.output": builtin.IntegerAttr(r, 64)})
                  for r, _ in out_params]
        attrs.append(builtin.DictionaryAttr({"frame.arena": builtin.UnitAttr()}))
        new_fn.arg_attrs = builtin.ArrayAttr(attrs)
        for key, value in fn.attributes.items():
            new_fn.attributes[key] = value
        new_fn.attributes["frame.arena_size"] = builtin.IntegerAttr(arena_size, 64)
        return new_fn
