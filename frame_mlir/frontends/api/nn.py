"""nn Modules for the Python API: the frame_mlir.nn modules behind the sheet's interface.

An API Module wraps a `frame_mlir.nn.Module` (the same value-type tree the spec
frontend builds with) and adds the sheet's conventions: parameters as
`(name, shape list, DType)` tuples, `build` on API Graphs and Values, validation at
build time rather than in the factory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from frame_mlir.dialects import frame
from frame_mlir.dialects.frame import ShapeError
from frame_mlir.frontends.api.graph import MAX_ELEMENTS, Graph, Value
from frame_mlir.frontends.api.ops import _SAME_SHAPE, _rule
from frame_mlir.frontends.api.tensor import DType
from frame_mlir.nn import module as core_nn
from frame_mlir.nn.graph import Graph as IrGraph

__all__ = ["AvgPool2d", "Conv1d", "Conv2d", "Flatten", "MaxPool2d", "Linear", "Module", "MseLoss", "Relu", "Sequential", "Sigmoid",
           "add_parameter_inputs"]


class Module:
    """A build-time combinator with no numeric state, made by the nn factories (`Linear`,
    `Sequential`, ...); there is no public constructor (TypeError).

    A Module declares parameters (`parameters()`: dotted names from the root module's
    name, shapes, dtypes, in pre-order) and emits frame ops into a Graph (`build`). The
    weights themselves are Tensors the caller owns and passes as graph inputs.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> mlp = nn.Sequential("mlp", [nn.Linear("0", 4, 3, 2, True, frame.DType.float32),
        ...                             nn.Relu("1")])
        >>> mlp.name, [name for name, _, _ in mlp.parameters()]
        ('mlp', ['mlp.0.weight', 'mlp.0.bias'])
    """

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
        """The module's name (the first segment of its parameters' names)."""
        return self._module.name

    def parameters(self) -> list[tuple[str, list[int], DType]]:
        """Every parameter as `(name, shape, dtype)`, in pre-order: this module's own, then
        each child's subtree in child order. Names join the path with "." and start with this
        module's name; shapes are `list[int]`.

        Example:
            >>> import frame
            >>> from frame import nn
            >>> nn.Linear("fc", 8, 3, 2, True, frame.DType.float32).parameters()
            [('fc.weight', [3, 2], <DType.float32: 0>), ('fc.bias', [8, 2], <DType.float32: 0>)]
        """
        return [(p.name, list(p.shape), self._dtype) for p in self._module.parameters()]

    def build(self, graph: Graph, inputs: Sequence[Value],
              params: Sequence[Value]) -> list[Value]:
        """Emit this module's ops into `graph` and return its output Values.

        Args:
            graph: the Graph to build into.
            inputs: the module's input Values (most modules take one; `MseLoss` and `AFF` two).
            params: one Value per entry of `parameters()`, in that order (usually
                `add_parameter_inputs(graph, module)`).

        Layer-specific validation happens here, not in the factory: a wrong input count,
        shape or dtype, or a bad number (e.g. LayerNorm eps <= 0) is a ValueError.

        Example:
            >>> import frame
            >>> from frame import nn
            >>> g = frame.Graph("example")
            >>> x = g.add_graph_input([8, 3], frame.DType.float32)
            >>> fc = nn.Linear("fc", 8, 3, 2, True, frame.DType.float32)
            >>> fc.build(g, [x], nn.add_parameter_inputs(g, fc))
            [<Value [8, 2] float32>]
        """
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
        return [graph._value(o, frame.static_shape(o) or (), dtype) for o in outs]

    def __repr__(self) -> str:
        return f"<Module {self.name}>"


_DTYPE_OF = {"f32": DType.float32, "f16": DType.float16, "bf16": DType.bfloat16}


def _name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"module name must be a str, found {type(name).__name__}")
    return name


def _int(v: object, what: str) -> int:
    """An int argument (a numpy integer too; not a bool, whose int-ness is an accident)."""
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
        raise TypeError(f"{what} must be an int, found {v!r}")
    return int(v)


def _dim(v: object, what: str) -> int:
    """A size argument of an nn factory (a dim, channel count, kernel, stride, ...): an
    int of magnitude at most MAX_ELEMENTS (2^48), the bound `add_graph_input` puts on a
    tensor. The one range check of every factory: beyond it a size cannot be a tensor's
    extent, and products of sizes (`batch * num_steps`, `4 * hidden_dim`) would overflow
    the dialect's i64 attributes (an xDSL VerifyException) or the index-sized ints of
    Python's sequences (OverflowError). The sign is left to `build` (§7.3: numbers are
    checked there), so `Linear("l", 0, -1, ...)` still fails at build, as documented."""
    d = _int(v, what)
    if abs(d) > MAX_ELEMENTS:
        raise ValueError(f"{what} must be at most 2^48 ({MAX_ELEMENTS}) in magnitude, the "
                         f"most elements a tensor may hold; found {d}")
    return d


def Linear(name: str, batch: int, in_dim: int, out_dim: int, with_bias: bool,
           dtype: DType) -> Module:
    """A fully connected layer: `y = x @ weight (+ bias)`.

    Args:
        name: the module name (the first segment of its parameter names).
        batch: rows of x. The bias is full-shape `[batch, out_dim]` because v0 has no
            broadcasting, so the batch size is part of the model.
        in_dim, out_dim: feature sizes.
        with_bias: whether to add `bias`.
        dtype: the parameters' DType (float32, float16 or bfloat16).

    Parameters: `name.weight [in_dim, out_dim]`, then `name.bias [batch, out_dim]` if with_bias.

    Shapes: `x [batch, in_dim] -> [batch, out_dim]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([8, 3], frame.DType.float32)
        >>> fc = nn.Linear("fc", 8, 3, 2, True, frame.DType.float32)
        >>> [(n, s) for n, s, _ in fc.parameters()]
        [('fc.weight', [3, 2]), ('fc.bias', [8, 2])]
        >>> fc.build(g, [x], nn.add_parameter_inputs(g, fc))
        [<Value [8, 2] float32>]
    """
    batch, in_dim, out_dim = (_dim(v, w) for v, w in ((batch, "batch"), (in_dim, "in_dim"),
                                                      (out_dim, "out_dim")))
    inner = core_nn.Linear(_name(name), batch, in_dim, out_dim, _flag(with_bias, "with_bias"))
    return Module._make(inner, DType(dtype), 1)


def Relu(name: str) -> Module:
    """`max(x, 0)` elementwise; no parameters.

    Args:
        name: the module name.

    Shapes: `x [*] -> [*]` (any shape).

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3], frame.DType.float32)
        >>> nn.Relu("act").build(g, [x], [])
        [<Value [2, 3] float32>]
    """
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
    return [_dim(i, what) for i in items]


def Conv2d(name: str, in_channels: int, out_channels: int, kernel_hw: Sequence[int],
           stride_hw: Sequence[int], padding_hw: Sequence[int], groups: int, with_bias: bool,
           dtype: DType) -> Module:
    """2-D convolution (cross-correlation, no kernel flip) in NCHW layout with symmetric
    zero padding.

    Args:
        name: the module name.
        in_channels, out_channels: Cin and Cout; `groups` must divide both.
        kernel_hw, stride_hw, padding_hw: `[KH, KW]`, `[SH, SW]`, `[PH, PW]` (exactly two
            ints each, else TypeError).
        groups: output channel o reads input-channel group `o // (Cout / groups)`.
        with_bias: whether to add `bias` per output channel.
        dtype: the parameters' DType.

    Parameters: `name.weight [Cout, Cin/groups, KH, KW]`, then `name.bias [Cout]` if with_bias.

    Shapes: `x [N, Cin, H, W] -> [N, Cout, OH, OW]` with
    `OH = (H + 2*PH - KH) // SH + 1` and `OW` likewise.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 8, 8], frame.DType.float32)
        >>> conv = nn.Conv2d("conv", 3, 4, [3, 3], [2, 2], [1, 1], 1, True, frame.DType.float32)
        >>> [(n, s) for n, s, _ in conv.parameters()]
        [('conv.weight', [4, 3, 3, 3]), ('conv.bias', [4])]
        >>> conv.build(g, [x], nn.add_parameter_inputs(g, conv))
        [<Value [2, 4, 4, 4] float32>]
    """
    kernel, stride = _pair(kernel_hw, "kernel_hw"), _pair(stride_hw, "stride_hw")
    padding = _pair(padding_hw, "padding_hw")
    inner = core_nn.Conv(_name(name), _dim(in_channels, "in_channels"),
                         _dim(out_channels, "out_channels"), kernel, stride, padding,
                         _dim(groups, "groups"), _flag(with_bias, "with_bias"))
    return Module._make(inner, DType(dtype), 1)


def Conv1d(name: str, in_channels: int, out_channels: int, kernel: int, stride: int,
           padding: int, groups: int, with_bias: bool, dtype: DType) -> Module:
    """1-D convolution (cross-correlation) in NCL layout with symmetric zero padding.

    Args:
        name: the module name.
        in_channels, out_channels: Cin and Cout; `groups` must divide both.
        kernel, stride, padding: K, S and P (ints).
        groups: output channel o reads input-channel group `o // (Cout / groups)`.
        with_bias: whether to add `bias` per output channel.
        dtype: the parameters' DType.

    Parameters: `name.weight [Cout, Cin/groups, K]`, then `name.bias [Cout]` if with_bias.

    Shapes: `x [N, Cin, L] -> [N, Cout, (L + 2*P - K) // S + 1]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 10], frame.DType.float32)
        >>> conv = nn.Conv1d("conv", 3, 6, 3, 1, 0, 3, False, frame.DType.float32)
        >>> conv.parameters()[0][:2]
        ('conv.weight', [6, 1, 3])
        >>> conv.build(g, [x], nn.add_parameter_inputs(g, conv))
        [<Value [2, 6, 8] float32>]
    """
    inner = core_nn.Conv(_name(name), _dim(in_channels, "in_channels"),
                         _dim(out_channels, "out_channels"), [_dim(kernel, "kernel")],
                         [_dim(stride, "stride")], [_dim(padding, "padding")],
                         _dim(groups, "groups"), _flag(with_bias, "with_bias"))
    return Module._make(inner, DType(dtype), 1)


def MaxPool2d(name: str, kernel_hw: Sequence[int], stride_hw: Sequence[int],
              padding_hw: Sequence[int]) -> Module:
    """Max pooling over `[KH, KW]` windows in NCHW layout; padding counts as -inf. No
    parameters.

    Args:
        name: the module name.
        kernel_hw, stride_hw, padding_hw: two ints each; `2 * pad <= kernel` per dim.

    Shapes: `x [N, C, H, W] -> [N, C, (H + 2*PH - KH) // SH + 1, (W + 2*PW - KW) // SW + 1]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([1, 2, 6, 6], frame.DType.float32)
        >>> nn.MaxPool2d("pool", [2, 2], [2, 2], [0, 0]).build(g, [x], [])
        [<Value [1, 2, 3, 3] float32>]
    """
    return Module._make(core_nn.Pool(_name(name), "max", _pair(kernel_hw, "kernel_hw"),
                                     _pair(stride_hw, "stride_hw"),
                                     _pair(padding_hw, "padding_hw")), DType.float32, 1)


def AvgPool2d(name: str, kernel_hw: Sequence[int], stride_hw: Sequence[int],
              padding_hw: Sequence[int]) -> Module:
    """Average pooling over `[KH, KW]` windows in NCHW layout; always divides by `KH * KW`
    (padding cells count as 0). No parameters.

    Args:
        name: the module name.
        kernel_hw, stride_hw, padding_hw: two ints each; `2 * pad <= kernel` per dim.

    Shapes: `x [N, C, H, W] -> [N, C, (H + 2*PH - KH) // SH + 1, (W + 2*PW - KW) // SW + 1]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([1, 2, 5, 5], frame.DType.float32)
        >>> nn.AvgPool2d("pool", [3, 3], [2, 2], [1, 1]).build(g, [x], [])
        [<Value [1, 2, 3, 3] float32>]
    """
    return Module._make(core_nn.Pool(_name(name), "avg", _pair(kernel_hw, "kernel_hw"),
                                     _pair(stride_hw, "stride_hw"),
                                     _pair(padding_hw, "padding_hw")), DType.float32, 1)


def Sigmoid(name: str) -> Module:
    """`1 / (1 + exp(-x))` elementwise; no parameters.

    Args:
        name: the module name.

    Shapes: `x [*] -> [*]` (any shape).

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3], frame.DType.float32)
        >>> nn.Sigmoid("gate").build(g, [x], [])
        [<Value [2, 3] float32>]
    """
    return Module._make(core_nn.Sigmoid(_name(name)), DType.float32, 1)


def Flatten(name: str) -> Module:
    """Row-major reshape keeping the first dim; no parameters.

    Args:
        name: the module name.

    Shapes: `x [N, d1, d2, ...] -> [N, d1*d2*...]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 4, 5], frame.DType.float32)
        >>> nn.Flatten("flat").build(g, [x], [])
        [<Value [2, 60] float32>]
    """
    return Module._make(core_nn.Flatten(_name(name)), DType.float32, 1)


def MseLoss(name: str) -> Module:
    """Mean squared error `mean((pred - target)^2)` over all elements; no parameters.

    Args:
        name: the module name.

    Shapes: `(pred [*], target [*]) -> []` (same shape and dtype; rank-0 result).

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> pred = g.add_graph_input([8, 1], frame.DType.float32)
        >>> target = g.add_graph_input([8, 1], frame.DType.float32)
        >>> nn.MseLoss("loss").build(g, [pred, target], [])
        [<Value [] float32>]
    """
    def check(values: list[Value]) -> None:
        _rule(frame.MseLossOp, values, f"MseLoss '{name}'", note=_SAME_SHAPE)

    return Module._make(core_nn.MseLoss(_name(name)), DType.float32, 2, check)


def Sequential(name: str, children: Sequence[Module]) -> Module:
    """Chain modules: the outputs of child i are the inputs of child i + 1.

    Args:
        name: the module name.
        children: the Modules, in order; their names must differ (they become the second
            segment of the parameter names, e.g. `seq.0.weight`).

    Parameters: none of its own; the children's, in child order.

    Shapes: the first child's inputs -> the last child's outputs.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([4, 3], F32)
        >>> seq = nn.Sequential("seq", [nn.Linear("0", 4, 3, 5, True, F32), nn.Relu("1"),
        ...                             nn.Linear("2", 4, 5, 1, False, F32)])
        >>> [name for name, _, _ in seq.parameters()]
        ['seq.0.weight', 'seq.0.bias', 'seq.2.weight']
        >>> seq.build(g, [x], nn.add_parameter_inputs(g, seq))
        [<Value [4, 1] float32>]
    """
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
    """Add one cpu graph input per entry of `module.parameters()`, in order, and return
    them (the `params` of `module.build`).

    Args:
        graph: the Graph; create the data inputs first, so that the graph-input order is
            `[data inputs..., parameters...]`.
        module: the Module whose parameters become inputs.

    Shapes: each input has its parameter's shape and dtype.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> g = frame.Graph("example")
        >>> fc = nn.Linear("fc", 8, 3, 2, True, frame.DType.float32)
        >>> nn.add_parameter_inputs(g, fc)
        [<Value [3, 2] float32>, <Value [8, 2] float32>]
    """
    if not isinstance(graph, Graph):  # else an AttributeError from graph.add_graph_input
        raise TypeError(f"add_parameter_inputs: expected a Graph first, found "
                        f"{type(graph).__name__}")
    if not isinstance(module, Module):
        raise TypeError(f"add_parameter_inputs: expected a Module, found "
                        f"{type(module).__name__}")
    return [graph.add_graph_input(shape, dtype, "cpu")
            for _, shape, dtype in module.parameters()]
