"""frame-gpu-host: the host side of a mapped module as launches on one device arena.

Expects: host functions (the model, train-step and predict functions) whose bodies
are constants, `memref.view`s of their `{frame.arena}` argument and
`gpu.launch_func`s (frame-gpu-map).

Does: lays out one device arena for the whole module, shared by its host functions:
every data input (by name), parameter (by name) and output (by function and result
number) gets
its own 256-byte aligned slot, then one slot for the largest step arena. Data inputs
share a slot across functions by name (the model, train-step and predict functions of
a spec read the same batch); one whose name has another size elsewhere (a program's
evaluation batch) gets a slot of its own. Each host
function then takes that arena alone (`%device: memref<Nxi8> {frame.gpu.device_arena}`);
its former arguments become views of it at their slots (marked
`frame.gpu.argument = <position>`), and its intermediates views at the step arena's
slot plus their old offset. `frame.gpu.argument_offsets` (one per former argument)
and the module's `frame.gpu.device_arena_size` say where everything lives.

Why: the runtime allocates device memory once, copies the parameters and the data in
once, and a step is the launches of one function in order, each argument a constant
offset into that allocation; only the loss (or what the caller asks for) is read back.
The parameters a train step updates in place are the ones the model and predict
functions read: one slot each.

Guarantees: every launch operand is a view of the device arena at a constant offset;
host functions keep their names and the launches their order.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.passes.common import fail

SLOT_ALIGN = 256
"""cudaMalloc's alignment: every slot starts at a multiple of it."""
DEVICE_ARENA_ATTR = "frame.gpu.device_arena"


def _nbytes(typ: MemRefType) -> int:
    elem = typ.element_type
    width = elem.bitwidth if hasattr(elem, "bitwidth") else 32  # type: ignore[attr-defined]
    n = 1
    for d in typ.get_shape():
        n *= d
    return n * max(1, width // 8)


def _key(fn: func.FuncOp, index: int, positions: dict[str, int]) -> str:
    """The slot an argument belongs to: shared by every host function."""
    attrs = fn.arg_attrs.data[index].data if fn.arg_attrs is not None else {}
    if "frame.arena" in attrs:
        return "arena"
    if "frame.param" in attrs:
        p = attrs["frame.param"]
        assert isinstance(p, StringAttr)
        return f"param:{p.data}"
    if "frame.output" in attrs:
        r = attrs["frame.output"]
        assert isinstance(r, IntegerAttr)
        return f"output:{fn.sym_name.data}:{r.value.data}"
    pos = positions.setdefault(fn.sym_name.data, 0)
    positions[fn.sym_name.data] = pos + 1
    name = fn.body.block.args[index].name_hint
    return f"input:{name}" if name else f"input:#{pos}"


@dataclass(frozen=True)
class FrameGpuHost(ModulePass):
    """Put every host function's buffers into one device arena (see the module
    docstring)."""

    name = "frame-gpu-host"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        hosts = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks
                 and any(isinstance(o, gpu.LaunchFuncOp) for o in f.walk())]
        if not hosts:
            return
        slots: dict[str, int] = {}
        sizes: dict[str, int] = {}
        keys: dict[str, list[str]] = {}
        positions: dict[str, int] = {}
        arena = 0
        for fn in hosts:
            ks = []
            for i, arg in enumerate(fn.body.block.args):
                if not isinstance(arg.type, MemRefType):
                    raise fail(self.name, fn, f"argument #{i} is {arg.type}, expected a "
                               "memref", fn.sym_name.data)
                k = _key(fn, i, positions)
                n = _nbytes(arg.type)
                if k.startswith("input:") and (k in ks or sizes.setdefault(k, n) != n):
                    # an input of this name but another size elsewhere (a program's
                    # train and eval batches), or a second input of one name here
                    # (a network's constants): a slot of this function's own
                    k = f"input:{fn.sym_name.data}:{i}"
                ks.append(k)
                if k == "arena":
                    arena = max(arena, n)
                elif sizes.setdefault(k, n) != n:
                    raise fail(self.name, fn, f"buffer {k} has {n} bytes here and "
                               f"{sizes[k]} in another function", fn.sym_name.data)
            keys[fn.sym_name.data] = ks
        offset = 0
        for k in sorted(sizes, key=lambda k: (k.split(":")[0] != "input",
                                              k.split(":")[0] != "param", k)):
            slots[k] = offset
            offset += -(-sizes[k] // SLOT_ALIGN) * SLOT_ALIGN
        slots["arena"] = offset
        total = offset + -(-arena // SLOT_ALIGN) * SLOT_ALIGN
        total = max(total, SLOT_ALIGN)
        for fn in hosts:
            self._rewrite(fn, keys[fn.sym_name.data], slots, total)
        op.attributes["frame.gpu.device_arena_size"] = IntegerAttr(total, i64)

    def _rewrite(self, fn: func.FuncOp, keys: list[str], slots: dict[str, int],
                 total: int) -> None:
        old = fn.body.block
        arena_type = MemRefType(i8, [total])
        block = Block(arg_types=[arena_type])
        device = block.args[0]
        device.name_hint = "device"
        old_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else []
        offsets = []
        replace: dict[SSAValue, tuple[int, SSAValue | None]] = {}
        for i, (arg, key) in enumerate(zip(old.args, keys, strict=True)):
            offsets.append(slots[key])
            if key == "arena":
                replace[arg] = (slots[key], None)  # its views are rebased below
                continue
            c = arith.ConstantOp(IntegerAttr(slots[key], IndexType()))
            view = memref.ViewOp(device, c.result, [], arg.type)  # type: ignore[arg-type]
            view.attributes["frame.gpu.argument"] = IntegerAttr(i, i64)
            if arg.name_hint:
                view.result.name_hint = arg.name_hint
            block.add_ops([c, view])
            replace[arg] = (slots[key], view.result)
        for inner in list(old.ops):
            inner.detach()
            block.add_op(inner)
            if isinstance(inner, memref.ViewOp) and inner.source in replace:
                base, _ = replace[inner.source]
                shift = inner.byte_shift.owner
                if not (isinstance(shift, arith.ConstantOp)
                        and isinstance(shift.value, IntegerAttr)):
                    raise fail(self.name, inner, "a view of the arena at a non-constant "
                               "offset", fn.sym_name.data)
                c = arith.ConstantOp(IntegerAttr(base + shift.value.value.data, IndexType()))
                Rewriter.insert_op(c, InsertPoint.before(inner))
                view = memref.ViewOp(device, c.result, [], inner.result.type)  # type: ignore[arg-type]
                Rewriter.replace_op(inner, view)
        for arg, (_, new) in replace.items():
            if new is not None:
                arg.replace_all_uses_with(new)
            elif arg.uses:
                user = next(iter(arg.uses)).operation
                raise fail(self.name, user, "the step arena is used other than through "
                           "constant views", fn.sym_name.data)
        fn.body.detach_block(old)
        old.erase(safe_erase=False)
        fn.body.add_block(block)
        fn.function_type = func.FunctionType.from_lists([arena_type], [])
        fn.arg_attrs = builtin.ArrayAttr([DictionaryAttr({DEVICE_ARENA_ATTR: UnitAttr()})])
        fn.attributes["frame.gpu.argument_offsets"] = DenseArrayBase.from_list(i64, offsets)
        fn.attributes["frame.gpu.argument_attrs"] = builtin.ArrayAttr(list(old_attrs))
        fn.attributes.pop("frame.arena_size", None)
