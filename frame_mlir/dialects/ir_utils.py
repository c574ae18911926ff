"""IR utilities below the dialect: errors that name the op and its location, and edits
of a function's signature and argument attributes.

The op families' lowerings (`frame_*.py`) and the passes (`frame_mlir/passes/common.py`
re-exports these) both use them; here the dialect needs nothing from the passes.
"""

from __future__ import annotations

from xdsl.dialects import builtin, func
from xdsl.ir import Attribute, Operation
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
