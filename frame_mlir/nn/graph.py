"""Graph: builds one frame-dialect function, the object nn Modules build into.

A Graph owns a `func.func` under construction. Inputs become block arguments
(parameters carry the `frame.param = "<name>"` attribute autodiff looks for),
`emit` appends a frame op, and `finish` adds the return and fixes the
signature. Building touches no numbers: it only creates IR.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from frame_mlir.dialects import frame


class Graph:
    """A frame function being built: inputs, ops, then outputs."""

    def __init__(self, name: str):
        self.name = name
        self.block = Block()
        self._arg_attrs: list[dict[str, Attribute]] = []
        self._finished: func.FuncOp | None = None
        self._scope: list[str] = []
        #: Makes a graph value of a non-splat constant array (float, stored with the
        #: given element type, or int64 indices with None); the Python API's graphs
        #: hold them as hidden inputs.
        self.constant_fn: Callable[[np.ndarray, Attribute | None], SSAValue] | None = None
        #: Functions the graph's ops call by name (frame.scan step functions); they go
        #: into the module beside the graph's own function.
        self.functions: dict[str, func.FuncOp] = {}

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """Ops emitted inside carry `frame.layer = <name>` (the innermost scope wins).

        Like an MLIR location: later passes copy it onto what they make from the op,
        so dumps and generated code say which layer a kernel belongs to.
        """
        self._scope.append(name)
        try:
            yield
        finally:
            self._scope.pop()

    def add_input(self, shape: Sequence[int], name: str | None = None,
                  attrs: dict[str, Attribute] | None = None,
                  elem: Attribute = builtin.f32) -> SSAValue:
        """Append a graph input of static shape `shape` (f32 unless `elem` says)."""
        arg = self.block.insert_arg(frame.tensor_type(shape, elem), len(self.block.args))
        if name:
            arg.name_hint = _ssa_name(name)
        self._arg_attrs.append(dict(attrs or {}))
        return arg

    def constant(self, values: np.ndarray, like: SSAValue | None = None) -> SSAValue:
        """A constant tensor of `values`: floats get the element type of `like` (f32
        without it), integer arrays are int64 indices. A float splat is a
        `frame.constant`; any other array needs the graph's `constant_fn`."""
        arr = np.asarray(values)
        elem = frame.element_type(like) if like is not None else builtin.f32
        if arr.dtype.kind == "f":
            flat = arr.astype(np.float32).reshape(-1)
            if flat.size and np.all(flat.view(np.uint32) == flat.view(np.uint32)[0]):
                return self.emit(frame.ConstantOp(float(flat[0]), result_type=frame.tensor_type(
                    arr.shape, elem)))
        if self.constant_fn is None:
            raise ValueError(f"graph '{self.name}' cannot hold a non-splat constant of "
                             f"shape {list(arr.shape)}")
        return self.constant_fn(arr, elem if arr.dtype.kind == "f" else None)

    def add_function(self, fn: func.FuncOp) -> str:
        """Keep `fn` for the module (renamed `<name>_<k>` if the name is taken); returns
        its symbol."""
        base = name = fn.sym_name.data
        k = 1
        while name in self.functions or name == self.name:
            name, k = f"{base}_{k}", k + 1
        fn.sym_name = builtin.StringAttr(name)
        self.functions[name] = fn
        return name

    def emit(self, op: Operation) -> SSAValue:
        """Append `op` and return its (single) result."""
        if self._scope and "frame.layer" not in op.attributes:
            op.attributes["frame.layer"] = builtin.StringAttr(self._scope[-1])
        self.block.add_op(op)
        return op.results[0]

    def finish(self, outputs: Sequence[SSAValue]) -> func.FuncOp:
        """Close the graph with `func.return outputs` and return the function."""
        self.block.add_op(func.ReturnOp(*outputs))
        fn = func.FuncOp(
            self.name,
            func.FunctionType.from_lists([a.type for a in self.block.args],
                                         [v.type for v in outputs]),
            Region(self.block),
        )
        fn.arg_attrs = builtin.ArrayAttr([builtin.DictionaryAttr(a) for a in self._arg_attrs])
        self._finished = fn
        return fn


def _ssa_name(name: str) -> str:
    """An SSA name hint from a user name (`fc1.weight` -> `fc1_weight`, `1fc` -> `_1fc`):
    ASCII letters, digits and `_`, not starting with a digit, as MLIR names must be.
    Only a hint for readable IR; nothing binds by it."""
    hint = "".join(c if (c.isascii() and c.isalnum()) or c == "_" else "_" for c in name)
    return f"_{hint}" if not hint or hint[0].isdigit() else hint
