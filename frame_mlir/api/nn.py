"""nn Modules for the Python API: the frame_mlir.nn modules behind the sheet's interface.

An API Module wraps a `frame_mlir.nn.Module` (the same value-type tree the spec
frontend builds with) and adds the sheet's conventions: parameters as
`(name, shape list, DType)` tuples, `build` on API Graphs and Values, validation at
build time rather than in the factory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from frame_mlir.api.graph import Graph, Value
from frame_mlir.api.tensor import DType
from frame_mlir.dialects.frame import ShapeError
from frame_mlir.nn import module as core_nn
from frame_mlir.nn.graph import Graph as IrGraph

__all__ = ["AvgPool2d", "Conv1d", "Conv2d", "Flatten", "MaxPool2d", "Linear", "Module", "MseLoss", "Relu", "Sequential", "Sigmoid",
           "add_parameter_inputs"]


class Module:
    """A build-time combinator with no numeric state (made by the factories)."""

    __slots__ = ("_module", "_dtype", "_inputs", "_check")

    def __init__(self, *args: object, **kwargs: object):
        raise TypeError("Module has no public constructor; use a factory such as Linear")

    @classmethod
    def _make(cls, module: core_nn.Module, dtype: DType, inputs: int,
              check: object = None) -> Module:
        m = object.__new__(cls)
        m._module, m._dtype, m._inputs, m._check = module, dtype, inputs, check
        return m

    @property
    def name(self) -> str:
        return self._module.name

    def parameters(self) -> list[tuple[str, list[int], DType]]:
        """Preorder (name, shape, dtype), names joined with "." from this module's name."""
        return [(p.name, list(p.shape), self._dtype) for p in self._module.parameters()]

    def build(self, graph: Graph, inputs: Sequence[Value],
              params: Sequence[Value]) -> list[Value]:
        """Emit this module's ops into `graph`; returns its output values."""
        if not isinstance(graph, Graph):
            raise TypeError("build: expected a Graph")
        inputs, params = list(inputs), list(params)
        if len(params) != len(self._module.parameters()):
            raise ValueError(f"build: module '{self.name}' expects "
                             f"{len(self._module.parameters())} parameter values, "
                             f"found {len(params)}")
        if len(inputs) != self._inputs:
            raise ValueError(f"build: module '{self.name}' expects {self._inputs} inputs, "
                             f"found {len(inputs)}")
        values = [graph._own(v, "build") for v in (*inputs, *params)]
        dtypes = {v._dtype for v in values}
        if len(dtypes) > 1:
            raise ValueError(f"build: module '{self.name}' got mixed dtypes "
                             f"{sorted(d.name for d in dtypes)}")
        for v in values:
            if not v._dtype.is_float:
                raise ValueError(f"build: module '{self.name}' expects float32, float16 or "
                                 f"bfloat16 values, found '{v._dtype.name}'")
        if callable(self._check):
            self._check(values)
        ir = IrGraph(graph.name or "graph")
        ir.block = graph._block  # build straight into the API graph's block
        ir.constant_fn = lambda arr, elem: graph._constant(  # a hidden graph input
            arr, arr.shape, _DTYPE_OF.get(str(elem), DType.int64), "cpu")._ssa
        ir.functions = dict(graph._functions)  # step functions' names already taken
        try:
            outs = self._module.build(ir, [v._ssa for v in values[:len(inputs)]],
                                      [v._ssa for v in values[len(inputs):]])
        except ShapeError as err:  # a parameter of the wrong shape, found by an op's rule
            raise ValueError(f"build: module '{self.name}': {err}") from None
        graph._functions = ir.functions
        dtype = values[0]._dtype if values else self._dtype
        from frame_mlir.dialects import frame

        return [graph._value(o, frame.static_shape(o) or (), dtype) for o in outs]

    def __repr__(self) -> str:
        return f"<Module {self.name}>"


_DTYPE_OF = {"f32": DType.float32, "f16": DType.float16, "bf16": DType.bfloat16}


def _name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"module name must be a str, found {type(name).__name__}")
    return name


def _int(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{what} must be an int, found {v!r}")
    return v


def Linear(name: str, batch: int, in_dim: int, out_dim: int, with_bias: bool,
           dtype: DType) -> Module:
    """x @ weight[in_dim, out_dim] (+ bias[batch, out_dim])."""
    batch, in_dim, out_dim = (_int(v, w) for v, w in ((batch, "batch"), (in_dim, "in_dim"),
                                                      (out_dim, "out_dim")))
    inner = core_nn.Linear(_name(name), batch, in_dim, out_dim, _flag(with_bias, "with_bias"))
    return Module._make(inner, DType(dtype), 1)


def Relu(name: str) -> Module:
    """max(x, 0) elementwise."""
    return Module._make(core_nn.Relu(_name(name)), DType.float32, 1)


def _flag(v: object, what: str) -> bool:
    """A bool parameter: bool, numpy bool or int, as a C++ `bool` binding converts;
    anything else (a string, None) is a TypeError rather than its truthiness."""
    if isinstance(v, bool | np.bool_ | int):
        return bool(v)
    raise TypeError(f"{what} must be a bool, found {type(v).__name__}")


def _pair(v: object, what: str) -> list[int]:
    if isinstance(v, str | bytes) or not isinstance(v, Sequence):
        raise TypeError(f"{what} must be a sequence of 2 ints")
    items = list(v)
    if len(items) != 2:
        raise TypeError(f"{what} must have exactly 2 entries, found {len(items)}")
    return [_int(i, what) for i in items]


def Conv2d(name: str, in_channels: int, out_channels: int, kernel_hw: Sequence[int],
           stride_hw: Sequence[int], padding_hw: Sequence[int], groups: int, with_bias: bool,
           dtype: DType) -> Module:
    """NCHW cross-correlation: weight [out, in/groups, KH, KW], bias [out]."""
    kernel, stride = _pair(kernel_hw, "kernel_hw"), _pair(stride_hw, "stride_hw")
    padding = _pair(padding_hw, "padding_hw")
    inner = core_nn.Conv(_name(name), _int(in_channels, "in_channels"),
                         _int(out_channels, "out_channels"), kernel, stride, padding,
                         _int(groups, "groups"), _flag(with_bias, "with_bias"))
    return Module._make(inner, DType(dtype), 1)


def Conv1d(name: str, in_channels: int, out_channels: int, kernel: int, stride: int,
           padding: int, groups: int, with_bias: bool, dtype: DType) -> Module:
    """NCL cross-correlation: weight [out, in/groups, kernel], bias [out]."""
    inner = core_nn.Conv(_name(name), _int(in_channels, "in_channels"),
                         _int(out_channels, "out_channels"), [_int(kernel, "kernel")],
                         [_int(stride, "stride")], [_int(padding, "padding")],
                         _int(groups, "groups"), _flag(with_bias, "with_bias"))
    return Module._make(inner, DType(dtype), 1)


def MaxPool2d(name: str, kernel_hw: Sequence[int], stride_hw: Sequence[int],
              padding_hw: Sequence[int]) -> Module:
    """NCHW max pooling; padding counts as -inf."""
    return Module._make(core_nn.Pool(_name(name), "max", _pair(kernel_hw, "kernel_hw"),
                                     _pair(stride_hw, "stride_hw"),
                                     _pair(padding_hw, "padding_hw")), DType.float32, 1)


def AvgPool2d(name: str, kernel_hw: Sequence[int], stride_hw: Sequence[int],
              padding_hw: Sequence[int]) -> Module:
    """NCHW average pooling; always divides by KH * KW (padding counts as 0)."""
    return Module._make(core_nn.Pool(_name(name), "avg", _pair(kernel_hw, "kernel_hw"),
                                     _pair(stride_hw, "stride_hw"),
                                     _pair(padding_hw, "padding_hw")), DType.float32, 1)


def Sigmoid(name: str) -> Module:
    """1 / (1 + exp(-x)) elementwise."""
    return Module._make(core_nn.Sigmoid(_name(name)), DType.float32, 1)


def Flatten(name: str) -> Module:
    """[N, d1, d2, ...] -> [N, d1 * d2 * ...]."""
    return Module._make(core_nn.Flatten(_name(name)), DType.float32, 1)


def MseLoss(name: str) -> Module:
    """mean((pred - target)^2); inputs (pred, target), output rank 0."""
    def check(values: list[Value]) -> None:
        if values[0]._shape != values[1]._shape:
            raise ValueError(f"MseLoss '{name}': prediction {list(values[0]._shape)} and "
                             f"target {list(values[1]._shape)} must have the same shape")

    return Module._make(core_nn.MseLoss(_name(name)), DType.float32, 2, check)


def Sequential(name: str, children: Sequence[Module]) -> Module:
    """Chain the children: the outputs of child i are the inputs of child i+1."""
    kids = list(children)
    for c in kids:
        if not isinstance(c, Module):
            raise TypeError("Sequential: children must be Modules")
    seen: set[str] = set()
    for c in kids:
        if c.name in seen:  # their parameters would share dotted names
            raise ValueError(f"Sequential '{name}': two children are named '{c.name}'; "
                             "parameter names would collide")
        seen.add(c.name)
    dtype = kids[0]._dtype if kids else DType.float32
    first = kids[0]._inputs if kids else 1
    return Module._make(core_nn.Sequential(_name(name), [c._module for c in kids]), dtype,
                        first)


def add_parameter_inputs(graph: Graph, module: Module) -> list[Value]:
    """One cpu graph input per entry of `module.parameters()`, in order."""
    if not isinstance(module, Module):
        raise TypeError("add_parameter_inputs: expected a Module")
    return [graph.add_graph_input(shape, dtype, "cpu")
            for _, shape, dtype in module.parameters()]
