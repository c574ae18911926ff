"""Helpers shared by the frame passes: errors that name the op and its location."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

from xdsl.dialects import builtin, func, memref
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException


def op_location(op: Operation, function: str | None = None) -> str:
    """`@func: <op name>` -- where a diagnostic points in a module without file locations.

    `function` names the user's function when `op` sits in one a pass is building.
    """
    if isinstance(op, func.FuncOp):
        return f"@{function or op.sym_name.data}"
    if function is not None:
        return f"@{function}: {op.name}"
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    where = f"@{parent.sym_name.data}" if isinstance(parent, func.FuncOp) else "<module>"
    return f"{where}: {op.name}"


def fail(pass_name: str, op: Operation | None, message: str,
         function: str | None = None) -> PassFailedException:
    """A pass failure naming the pass, the op and what went wrong."""
    where = f" at {op_location(op, function)}" if op is not None else ""
    if op is not None and message.startswith(f"{op.name}: "):
        message = message[len(op.name) + 2:]  # the location already names the op
    error = PassFailedException(f"{pass_name}{where}: {message}")
    error.op = op  # type: ignore[attr-defined]  # so a driver can add its source location
    return error


def update_function_type(fn: func.FuncOp) -> None:
    """Make the signature match the entry block's arguments and the return's operands."""
    ret = fn.body.blocks[-1].last_op
    outputs = [v.type for v in ret.operands] if isinstance(ret, func.ReturnOp) else []
    fn.function_type = func.FunctionType.from_lists(
        [a.type for a in fn.body.blocks[0].args], outputs
    )


def set_arg_attr(fn: func.FuncOp, index: int, key: str, value: Attribute) -> None:
    """Set one argument attribute of `fn` (xDSL keeps them as an immutable ArrayAttr)."""
    n = len(fn.function_type.inputs.data)
    dicts = list(fn.arg_attrs.data) if fn.arg_attrs is not None else [
        builtin.DictionaryAttr({}) for _ in range(n)
    ]
    entries = dict(dicts[index].data)
    entries[key] = value
    dicts[index] = builtin.DictionaryAttr(entries)
    fn.arg_attrs = builtin.ArrayAttr(dicts)


#: Discardable attributes that say where a computation comes from (cf. MLIR locations).
PROVENANCE_ATTRS = ("frame.layer", "frame.stage")


def provenance(op: Operation) -> dict[str, Attribute]:
    """The provenance attributes of `op`, to copy onto what a pass makes from it."""
    return {k: v for k, v in op.attributes.items() if k in PROVENANCE_ATTRS}


def arena_arg_index(fn: func.FuncOp) -> int | None:
    """Index of `fn`'s argument marked `frame.arena` (frame-bufferize's), if any."""
    if fn.arg_attrs is None:
        return None
    for i, d in enumerate(fn.arg_attrs.data):
        if "frame.arena" in d.data:
            return i
    return None


def callees_first(pass_name: str, functions: dict[str, func.FuncOp],
                  callee_of: Callable[[Operation], str | None]) -> list[func.FuncOp]:
    """`functions` ordered so that every function an op of another one runs
    (`callee_of(op)`: a scan's step function) comes before it. A cycle (a step that
    scans over itself, directly or through other steps) fails; a callee not in
    `functions` is skipped (already handled, or reported at the op)."""
    order: list[func.FuncOp] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done

    def visit(fn: func.FuncOp) -> None:
        name = fn.sym_name.data
        if state.get(name) == 2:
            return
        state[name] = 1
        for o in fn.walk():
            callee = functions.get(callee_of(o) or "")
            if callee is None:
                continue
            if state.get(callee.sym_name.data) == 1:
                raise fail(pass_name, o, f"step function @{callee.sym_name.data} scans over "
                           "itself, directly or through other steps: not supported")
            visit(callee)
        state[name] = 2
        order.append(fn)

    for fn in functions.values():
        visit(fn)
    return order


def collapse_shape(value: SSAValue, runs: Sequence[Sequence[int]]) -> memref.CollapseShapeOp:
    """A `memref.collapse_shape` of the row-major memref `value` whose dim i is the
    product of `value`'s dims `runs[i]` (consecutive, in order); not inserted."""
    typ = value.type
    assert isinstance(typ, builtin.MemRefType)
    shape = typ.get_shape()
    new_shape = [prod(shape[d] for d in run) for run in runs]
    assoc = builtin.ArrayAttr([builtin.ArrayAttr([builtin.IntegerAttr(d, builtin.i64)
                                                  for d in run]) for run in runs])
    return memref.CollapseShapeOp.build(
        operands=[value], result_types=[builtin.MemRefType(typ.element_type, new_shape)],
        properties={"reassociation": assoc})
