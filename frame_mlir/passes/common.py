"""Helpers shared by the frame passes. The IR utilities that the op families' lowerings
use too (errors that name the op and its location, function signatures) live below the
dialect, in `frame_mlir/dialects/ir_utils.py`, and are re-exported here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

from xdsl.dialects import builtin, func, memref
from xdsl.ir import Attribute, Operation, SSAValue

from frame_mlir.dialects.ir_utils import fail, op_location, set_arg_attr, update_function_type

__all__ = ["PROVENANCE_ATTRS", "arena_arg_index", "callees_first", "collapse_shape", "fail",
           "op_location", "provenance", "set_arg_attr", "update_function_type"]


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
