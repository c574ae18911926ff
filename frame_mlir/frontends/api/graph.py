"""Graphs of the Python API: build frame IR from Python, compile it, run it.

A `Graph` records frame ops into a block as they are created (`add`, `matmul`, ...
return `Value` handles); `compile` snapshots it into a `func.func`, runs the shared
pipeline (the same passes frame-run uses) and JIT-compiles it; `Executable.run`
calls the native code on fresh copies of the inputs and returns fresh output tensors.

Constants: a splat float constant is a `frame.constant` (a fill in compiled code);
any other constant is a hidden input of the compiled function whose host buffer the
executable owns. Integer constants cannot enter arithmetic (only scatter_add's indices
are read by compiled code); they may be graph outputs, returned as they are.

bfloat16 computes like float16: 16-bit storage (bf16 as uint16 bit patterns on the
host), f32 arithmetic, rounding to nearest even at every op boundary.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from frame_mlir.dialects import frame
from frame_mlir.frontends.api.tensor import (
    STORAGE,
    Device,
    DType,
    Tensor,
    bf16_bits,
    bf16_to_float32,
    check_backend,
)

__all__ = ["Executable", "Graph", "Node", "Value", "compile"]

#: dtypes whose arithmetic has compiled kernels (16-bit ones compute in f32).
COMPUTE_DTYPES = (DType.float32, DType.float16, DType.bfloat16)
#: dtypes compiled code may read as indices (scatter_add).
INDEX_DTYPES = (DType.int32, DType.int64)


class Node:
    """An op of a graph. The class exists for API compatibility; `Node()` is a
    TypeError and no API returns one (a Graph's ops show in `graph.to_mlir()`).

    Example:
        >>> import frame
        >>> isinstance(frame._core.Node, type)
        True
    """

    def __init__(self, *args: object, **kwargs: object):
        raise TypeError("Node cannot be constructed")


class Value:
    """A handle on one SSA value of one Graph: a graph input or an op's result. It keeps
    its graph alive; passing it to another graph is a ValueError ("does not belong to this
    graph"). `repr` shows its shape and dtype. There is no public constructor.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> g.add_graph_input([2, 3], frame.DType.float32)
        <Value [2, 3] float32>
    """

    __slots__ = ("_graph", "_ssa", "_shape", "_dtype", "__weakref__")

    def __init__(self, *args: object, **kwargs: object):
        raise TypeError("Value cannot be constructed; values come from graph ops")

    @classmethod
    def _make(cls, graph: Graph, ssa: SSAValue, shape: tuple[int, ...], dtype: DType) -> Value:
        v = object.__new__(cls)
        v._graph, v._ssa, v._shape, v._dtype = graph, ssa, shape, dtype
        return v

    def __repr__(self) -> str:
        return f"<Value {list(self._shape)} {self._dtype.name}>"


@dataclass
class _Constant:
    """Host data of a constant that is not a splat float: a hidden input."""

    data: np.ndarray  # storage array (bf16 as uint16 bits)
    dtype: DType


class Graph:
    """A frame function under construction: inputs (`add_graph_input`), ops (`frame.add`,
    `frame.matmul`, nn modules' `build`, ...) and ordered outputs (`mark_output`).
    `compile(graph, backend)` snapshots it; the graph stays mutable. `str(graph)` and
    `graph.to_mlir()` give its frame-dialect MLIR.

    Args:
        name: the graph's name (default ""); the compiled function is named after it.

    Example:
        >>> import numpy as np, frame
        >>> g = frame.Graph("affine")
        >>> x = g.add_graph_input([2, 2], frame.DType.float32)
        >>> w = g.add_graph_input([2, 2], frame.DType.float32)
        >>> g.mark_output(frame.relu(g, frame.matmul(g, x, w)))
        >>> run = frame.compile(g, "cpu").run
        >>> eye = frame.from_numpy(np.eye(2, dtype=np.float32))
        >>> run([frame.from_numpy(np.array([[1, -2], [3, 4]], np.float32)), eye])[0].numpy()
        array([[1., 0.],
               [3., 4.]], dtype=float32)
    """

    def __init__(self, name: str = ""):
        if not isinstance(name, str):
            raise TypeError(f"Graph name must be a str, found {type(name).__name__}")
        self._name = name
        self._block = Block()
        self._inputs: list[BlockArgument] = []  # user inputs, in call order
        self._hidden: dict[BlockArgument, _Constant] = {}  # non-splat constants
        self._outputs: list[Value] = []
        self._backend: str | None = None
        #: (index value, exclusive bound) of each scatter_add, checked at run time.
        self._index_bounds: list[tuple[SSAValue, int]] = []
        #: Functions the graph's ops call by name (frame.scan step functions).
        self._functions: dict[str, func.FuncOp] = {}

    @property
    def name(self) -> str:
        """The graph's name ("" by default)."""
        return self._name

    # -- construction --------------------------------------------------------------
    def _value(self, ssa: SSAValue, shape: Sequence[int], dtype: DType) -> Value:
        return Value._make(self, ssa, tuple(shape), dtype)

    def _own(self, v: object, what: str) -> Value:
        if not isinstance(v, Value):
            raise TypeError(f"{what}: expected a Value, found {type(v).__name__}")
        if v._graph is not self:
            raise ValueError(f"{what}: value does not belong to this graph")
        return v

    def _set_device(self, backend: str) -> None:
        if self._backend is None:
            self._backend = backend

    def add_graph_input(self, shape: Sequence[int], dtype: DType,
                        backend: str = "cpu") -> Value:
        """Append a graph input; inputs are numbered in call order (the order `run` takes).

        Args:
            shape: static dims (non-negative ints; at most 2^48 elements).
            dtype: the DType.
            backend: the device backend ("cpu"); an unknown name is a KeyError. The graph's
                device is that of its first input or constant.

        Shapes: `-> shape`.

        Example:
            >>> import frame
            >>> g = frame.Graph("example")
            >>> g.add_graph_input([4, 3], frame.DType.float16)
            <Value [4, 3] float16>
        """
        dims = _dims(shape, "add_graph_input")
        dtype = _dtype(dtype, "add_graph_input")
        check_backend(backend)
        arg = self._block.insert_arg(_tensor_type(dims, dtype), len(self._block.args))
        arg.name_hint = f"in{len(self._inputs)}"
        self._inputs.append(arg)
        self._set_device(backend)
        return self._value(arg, dims, dtype)

    def mark_output(self, value: Value) -> None:
        """Append `value` to the ordered outputs (`run` returns one tensor per output). The same
        value may be marked more than once, and an input may be an output. A value of another
        graph is a ValueError ("does not belong to this graph").

        Example:
            >>> import frame
            >>> g = frame.Graph("example")
            >>> x = g.add_graph_input([2], frame.DType.float32)
            >>> g.mark_output(x)
        """
        self._outputs.append(self._own(value, "mark_output"))

    def _emit(self, op: Operation, dtype: DType) -> Value:
        self._block.add_op(op)
        shape = frame.static_shape(op.results[0])
        assert shape is not None
        return self._value(op.results[0], shape, dtype)

    def _constant(self, values: np.ndarray, dims: tuple[int, ...], dtype: DType,
                  backend: str) -> Value:
        self._set_device(backend)
        flat = _storage(values.reshape(-1), dtype) if dtype in COMPUTE_DTYPES else None
        # A splat (bit-identical values in the storage dtype) is a fill in compiled code.
        bits = flat.view(np.uint32 if dtype == DType.float32 else np.uint16) \
            if flat is not None else None
        if flat is not None and bits is not None and bits.size > 0 and \
                np.all(bits == bits[0]):
            first = bf16_to_float32(flat[:1])[0] if dtype == DType.bfloat16 else flat[0]
            return self._emit(frame.ConstantOp(float(first), result_type=_tensor_type(
                dims, dtype)), dtype)
        arg = self._block.insert_arg(_tensor_type(dims, dtype), len(self._block.args))
        arg.name_hint = f"const{len(self._hidden)}"
        self._hidden[arg] = _Constant(_storage(values.reshape(dims), dtype), dtype)
        return self._value(arg, dims, dtype)

    # -- printing ----------------------------------------------------------------------
    def to_mlir(self) -> str:
        """The graph as frame-dialect MLIR text: a `builtin.module` holding the graph's
        `func.func` (named after the graph) and the step functions its scans call.

        The function's arguments are the graph inputs in `add_graph_input` order
        (`%in0`, `%in1`, ...), followed by one argument per constant that is not a
        splat (`%const0`, ...: their values stay with the graph); it returns the
        marked outputs in `mark_output` order. The text is what `compile` hands to the
        pipeline, and `frame-opt` parses it (e.g. `frame-opt g.mlir -p
        frame-shape-inference`). `str(graph)` is the same text.

        Example:
            >>> import frame
            >>> g = frame.Graph("double")
            >>> x = g.add_graph_input([2, 3], frame.DType.float32)
            >>> g.mark_output(frame.add(g, x, x))
            >>> print(g.to_mlir())
            builtin.module {
              func.func @double(%in0: tensor<2x3xf32>) -> tensor<2x3xf32> {
                %0 = frame.add %in0, %in0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
                func.return %0 : tensor<2x3xf32>
              }
            }
        """
        fn, _ = self._snapshot()
        return str(builtin.ModuleOp([fn, *(f.clone() for f in self._functions.values())]))

    def __str__(self) -> str:
        return self.to_mlir()

    def __repr__(self) -> str:
        return (f"<Graph {self._name!r}: {len(self._inputs)} inputs, "
                f"{len(self._block.ops)} ops, {len(self._outputs)} outputs>")

    # -- snapshot ----------------------------------------------------------------------
    def _snapshot(self) -> tuple[func.FuncOp, list[BlockArgument]]:
        """A func.func of the graph as it is now: [user inputs..., hidden constants...]
        -> [outputs...]; also the hidden arguments in their order."""
        hidden = list(self._hidden)
        block = Block(arg_types=[a.type for a in (*self._inputs, *hidden)])
        mapping: dict[SSAValue, SSAValue] = {}
        for old, new in zip((*self._inputs, *hidden), block.args, strict=True):
            mapping[old] = new
            new.name_hint = old.name_hint
        for op in self._block.ops:
            clone = op.clone(value_mapper=mapping)
            block.add_op(clone)
        block.add_op(func.ReturnOp(*[mapping[v._ssa] for v in self._outputs]))
        fn = func.FuncOp(_symbol(self._name),
                         func.FunctionType.from_lists([a.type for a in block.args],
                                                      [v._ssa.type for v in self._outputs]),
                         Region(block))
        return fn, hidden


def _symbol(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if s and not s[0].isdigit() else f"g_{s}"


def _tensor_type(dims: Sequence[int], dtype: DType) -> builtin.TensorType:
    elem = {DType.float32: builtin.f32, DType.float16: builtin.f16,
            DType.bfloat16: builtin.bf16, DType.int32: builtin.i32,
            DType.int64: builtin.i64}[dtype]
    return builtin.TensorType(elem, list(dims))


def _dims(shape: Sequence[int], what: str) -> tuple[int, ...]:
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence | np.ndarray):
        raise TypeError(f"{what}: shape must be a sequence of ints")
    dims = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise TypeError(f"{what}: shape entries must be ints, found {d!r}")
        if d < 0:
            raise ValueError(f"{what}: negative dimension {d} in shape {list(shape)}")
        dims.append(int(d))
    if math.prod(dims) > MAX_ELEMENTS:
        raise ValueError(f"{what}: shape {dims} has {math.prod(dims)} elements, more than "
                         f"the {MAX_ELEMENTS} (2^48) a tensor may hold")
    return tuple(dims)


#: The most elements one tensor may have: byte offsets into buffers and the arena are
#: 64-bit, and 2^48 elements (1 PiB of f32) is far beyond any machine's memory anyway.
MAX_ELEMENTS = 1 << 48


def _dtype(dtype: object, what: str) -> DType:
    if isinstance(dtype, DType):
        return dtype
    raise TypeError(f"{what}: dtype must be a DType, found {type(dtype).__name__}")


def _storage(values: np.ndarray, dtype: DType) -> np.ndarray:
    if dtype == DType.bfloat16:
        return bf16_bits(values.astype(np.float32))
    with np.errstate(over="ignore"):  # a constant beyond float16's range is +-inf
        return np.ascontiguousarray(values, dtype=STORAGE[dtype])


# -- compile and run ---------------------------------------------------------------------

_CACHE: dict[str, object] = {}


class Executable:
    """A compiled graph, from `compile(graph, backend)` (no public constructor).

    Example:
        >>> import numpy as np, frame
        >>> g = frame.Graph("double")
        >>> x = g.add_graph_input([3], frame.DType.float32)
        >>> g.mark_output(frame.add(g, x, x))
        >>> frame.compile(g, "cpu").run([frame.from_numpy(np.array([1, 2, 3], np.float32))])
        [Tensor(shape=[3], dtype=float32, device=Device('cpu', 0))]
    """

    def __init__(self, *args: object, **kwargs: object):
        raise TypeError("Executable has no public constructor; use compile(graph, backend)")

    @classmethod
    def _make(cls, graph: Graph, backend: str) -> Executable:
        from frame_mlir.compile_options import CompileOptions
        from frame_mlir.runtime.executable import compile_module

        ex = object.__new__(cls)
        ex._backend = backend
        ex._inputs = [(tuple(a.type.get_shape()), _arg_dtype(graph, a))
                      for a in graph._inputs]
        fn, hidden = graph._snapshot()
        ex._hidden = [graph._hidden[a] for a in hidden]
        # Outputs that are integer constants or inputs never enter compiled code.
        ex._plan = []
        index_of_arg = {a: i for i, a in enumerate((*graph._inputs, *hidden))}
        compute_outputs: list[SSAValue] = []
        for v in graph._outputs:
            if v._dtype not in COMPUTE_DTYPES:
                if v._ssa in graph._hidden:
                    ex._plan.append(("const", graph._hidden[v._ssa]))
                    continue
                if v._ssa in index_of_arg:
                    ex._plan.append(("input", index_of_arg[v._ssa]))
                    continue
                raise NotImplementedError(
                    f"compile: {v._dtype.name} arithmetic is not implemented yet")
            ex._plan.append(("fn", (len(compute_outputs), v._dtype)))
            compute_outputs.append(v._ssa)
        ex._fn_name = fn.sym_name.data
        ex._runtime = None
        if compute_outputs:
            for a in (*graph._inputs, *hidden):
                dt = _arg_dtype(graph, a)
                if dt not in (*COMPUTE_DTYPES, *INDEX_DTYPES) and a.uses:
                    raise NotImplementedError(
                        f"compile: {dt.name} arithmetic is not implemented yet")
            fn, kept = _computed_part(fn)
            module = builtin.ModuleOp([fn, *(f.clone() for f in graph._functions.values())])
            # The host's compile options (threads: FRAME_NUM_THREADS or the cores), part
            # of what a compiled graph is, so part of its key.
            options = CompileOptions().resolved()
            key = f"{backend}\n{options}\n{module}"
            runtime = _CACHE.get(key)
            if runtime is None:
                runtime = compile_module(module, options=options)
                _CACHE[key] = runtime
            ex._runtime = runtime
            ex._compute_args = kept
        # scatter_add's indices must lie in [0, V): checked on the host before a run.
        position = {a: i for i, a in enumerate((*graph._inputs, *hidden))}
        ex._index_bounds = [(position[a], bound) for a, bound in graph._index_bounds
                            if a in position]
        return ex

    def run(self, inputs: Sequence[Tensor]) -> list[Tensor]:
        """Run the compiled graph on `inputs` and return one fresh tensor per marked output,
        in `mark_output` order; inputs are never modified.

        Args:
            inputs: one Tensor per graph input, in `add_graph_input` order, each of that
                input's dtype, shape and backend. A mismatch is a ValueError naming the input
                and the expected and found values; for a DataLoader's short last batch it
                says so and points at `drop_last`.

        Shapes: each output has its graph value's shape.

        Example:
            >>> import numpy as np, frame
            >>> g = frame.Graph("sq")
            >>> x = g.add_graph_input([2], frame.DType.float32)
            >>> g.mark_output(frame.square(g, x))
            >>> (y,) = frame.compile(g, "cpu").run([frame.from_numpy(np.array([3, 4], np.float32))])
            >>> y.numpy()
            array([ 9., 16.], dtype=float32)
        """
        if isinstance(inputs, Tensor) or not isinstance(inputs, Sequence):
            raise TypeError("run: inputs must be a sequence of Tensors")
        if len(inputs) != len(self._inputs):
            raise ValueError(f"run: expected {len(self._inputs)} inputs, found {len(inputs)}")
        arrays: list[np.ndarray] = []
        for i, (t, (shape, dtype)) in enumerate(zip(inputs, self._inputs, strict=True)):
            if not isinstance(t, Tensor):
                raise TypeError(f"run: input {i} is not a Tensor")
            if t.dtype != dtype:
                raise ValueError(f"run: input {i} expected dtype {dtype.name}, "
                                 f"found {t.dtype.name}")
            if tuple(t.shape.dims) != shape:
                why = f": {t._note}" if t._note else ""
                raise ValueError(f"run: input {i} expected shape {list(shape)}, "
                                 f"found {t.shape.dims}{why}")
            if t.device.backend != self._backend:
                raise ValueError(f"run: input {i} is on '{t.device.backend}', the "
                                 f"executable on '{self._backend}'")
            arrays.append(t.storage())
        arrays += [c.data for c in self._hidden]
        for pos, bound in self._index_bounds:
            idx = arrays[pos]
            if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= bound):
                raise ValueError(f"run: scatter_add index out of range: expected 0 <= index < "
                                 f"{bound}, found {int(idx.min())}..{int(idx.max())}")
        results: tuple[np.ndarray, ...] = ()
        if self._runtime is not None:
            results = self._runtime(self._fn_name,  # type: ignore[operator]
                                    *[arrays[i] for i in self._compute_args])
        out: list[Tensor] = []
        device = Device(self._backend, 0)
        taken: set[int] = set()
        for kind, ref in self._plan:
            if kind == "fn":
                index, dt = ref
                # The runtime's results are fresh arrays no one else holds: the first
                # output of each is that array (bf16: its uint16 bit patterns).
                arr = results[index] if index not in taken else np.array(results[index])
                taken.add(index)
                assert arr.dtype == STORAGE[dt], (arr.dtype, dt)
                out.append(Tensor._own(arr, dt, device))
            elif kind == "const":
                out.append(Tensor._own(ref.data.copy(), ref.dtype, device))
            else:
                t = inputs[ref] if ref < len(inputs) else None
                data = t.storage() if t is not None else self._hidden[
                    ref - len(inputs)].data
                dt = t.dtype if t is not None else self._hidden[ref - len(inputs)].dtype
                out.append(Tensor._own(data.copy(), dt, device))
        return out


def _arg_dtype(graph: Graph, arg: BlockArgument) -> DType:
    if arg in graph._hidden:
        return graph._hidden[arg].dtype
    elem = arg.type.element_type  # type: ignore[attr-defined]
    return {builtin.f32: DType.float32, builtin.f16: DType.float16,
            builtin.bf16: DType.bfloat16, builtin.i32: DType.int32,
            builtin.i64: DType.int64}[elem]


#: Element types of COMPUTE_DTYPES.
_FLOAT_ELEMENTS = (builtin.f32, builtin.f16, builtin.bf16)


def _computed_part(fn: func.FuncOp) -> tuple[func.FuncOp, list[int]]:
    """`fn` returning only its float results, keeping the float arguments and the
    integer ones that feed compiled code (scatter_add indices); integer values that are
    only passed through are returned by the executable directly. Also the positions of
    the kept arguments."""
    block = fn.body.blocks[0]
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    float_results = [v for v in ret.operands if isinstance(v.type, builtin.TensorType)
                     and v.type.element_type in _FLOAT_ELEMENTS]
    ret.detach()
    ret.erase()
    block.add_op(func.ReturnOp(*float_results))
    kept = []
    for i, arg in enumerate(list(block.args)):
        elem = arg.type.element_type  # type: ignore[attr-defined]
        if elem in _FLOAT_ELEMENTS or arg.uses:
            kept.append(i)
        else:
            block.erase_arg(arg)
    fn.function_type = func.FunctionType.from_lists([a.type for a in block.args],
                                                    [v.type for v in float_results])
    return fn, kept


def compile(graph: Graph, backend: str) -> Executable:  # noqa: A001 - the API's name
    """Compile `graph` for `backend` and return an Executable. The graph is snapshotted (it
    stays mutable); compiling the same graph text twice reuses the compiled code.

    Args:
        graph: the Graph.
        backend: "cpu". It must equal the graph's device backend (else ValueError "does
            not match graph device backend"); an unknown name for an empty graph is a
            KeyError.

    Example:
        >>> import frame
        >>> g = frame.Graph("consts")
        >>> g.mark_output(frame.constant(g, [1.0, 2.0], [2], frame.DType.float32))
        >>> frame.compile(g, "cpu").run([])[0].numpy()
        array([1., 2.], dtype=float32)
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"compile: expected a Graph, found {type(graph).__name__}")
    if not isinstance(backend, str):
        raise TypeError("compile: backend must be a str")
    if graph._backend is not None and graph._backend != backend:
        raise ValueError(f"runtime::compile: backend_name '{backend}' does not match graph "
                         f"device backend '{graph._backend}'")
    check_backend(backend)
    return Executable._make(graph, backend)

