"""nn Modules: value-type trees that build frame IR (seed 001 sections 2-4).

A Module has a name, its direct parameter declarations (ParamSpec), child
Modules and a build function. `parameters()` lists every parameter of the tree
in preorder -- own parameters in declaration order, then each child's subtree --
with dotted path names (`mlp.0.weight`). `build(graph, inputs, params)` receives
exactly `parameters()`'s values in that order; a composite slices them as
[own..., child0 subtree..., child1 subtree...].

Building emits frame ops and touches no numbers: initial values are only
declared (InitSpec) and materialised by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import prod

from xdsl.dialects import builtin
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.init import InitSpec, Inline, UniformSeeded

__all__ = [
    "BuildFn", "Conv", "Flatten", "Pool", "Inline", "InitSpec", "Linear", "Module", "MseLoss", "ParamSpec",
    "Relu", "Sequential", "Sigmoid", "UniformSeeded", "add_parameter_inputs",
]


@dataclass(frozen=True)
class ParamSpec:
    """A parameter declaration: name (relative to its module), static shape, init."""

    name: str
    shape: tuple[int, ...]
    init: InitSpec
    dtype: str = "float32"


BuildFn = Callable[[Graph, Sequence[SSAValue], Sequence[SSAValue]], list[SSAValue]]


@dataclass(frozen=True)
class Module:
    """A value-type module tree node."""

    name: str
    params: tuple[ParamSpec, ...] = ()
    children: tuple[Module, ...] = ()
    build_fn: BuildFn | None = field(default=None, compare=False, repr=False)
    #: Children are addressed by position (Sequential) rather than by name.
    indexed_children: bool = False

    def child_key(self, index: int) -> str:
        return str(index) if self.indexed_children else self.children[index].name

    def parameters(self, prefix: str | None = None) -> list[ParamSpec]:
        """All parameters in preorder, named by dotted path from this module.

        `prefix` replaces this module's own name in the path ("" drops it).
        """
        base = self.name if prefix is None else prefix
        join = (lambda s: f"{base}.{s}") if base else (lambda s: s)
        out = [ParamSpec(join(p.name), p.shape, p.init, p.dtype) for p in self.params]
        for i, child in enumerate(self.children):
            out.extend(child.parameters(join(self.child_key(i))))
        return out

    def build(self, graph: Graph, inputs: Sequence[SSAValue],
              params: Sequence[SSAValue]) -> list[SSAValue]:
        """Emit this module's ops; `params` must be `parameters()`'s values in order."""
        expected = len(self.parameters())
        if len(params) != expected:
            raise ValueError(f"module '{self.name}': expected {expected} parameter values, "
                             f"found {len(params)}")
        if self.build_fn is None:
            raise ValueError(f"module '{self.name}' has no build function")
        with graph.scope(self.name):
            return self.build_fn(graph, inputs, params)

    def child_param_slices(self, params: Sequence[SSAValue]) -> list[Sequence[SSAValue]]:
        """Split a composite's params into per-child slices (after its own)."""
        pos = len(self.params)
        out = []
        for child in self.children:
            n = len(child.parameters())
            out.append(params[pos:pos + n])
            pos += n
        return out


def add_parameter_inputs(graph: Graph, specs: Sequence[ParamSpec]) -> list[SSAValue]:
    """Append one graph input per parameter, in order, marked `frame.param = <name>`."""
    return [graph.add_input(p.shape, p.name, {"frame.param": builtin.StringAttr(p.name)})
            for p in specs]


def _check_dtype(dtype: str) -> None:
    if dtype != "float32":
        raise ValueError(f"dtype expected 'float32', found '{dtype}'")


#: Default initialisers of Linear (frozen values, safe as defaults).
DEFAULT_WEIGHT_INIT: InitSpec = UniformSeeded(-0.1, 0.1)
DEFAULT_BIAS_INIT: InitSpec = UniformSeeded(0.0, 0.1)


def Linear(name: str, batch: int, in_dim: int, out_dim: int, with_bias: bool = True,
           dtype: str = "float32", weight_init: InitSpec = DEFAULT_WEIGHT_INIT,
           bias_init: InitSpec = DEFAULT_BIAS_INIT) -> Module:
    """x @ weight[in, out] (+ bias[batch, out]); v0 has no broadcasting, so the
    bias has the output's full shape."""
    _check_dtype(dtype)
    params = [ParamSpec("weight", (in_dim, out_dim), weight_init)]
    if with_bias:
        params.append(ParamSpec("bias", (batch, out_dim), bias_init))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        if len(inputs) != 1:
            raise ValueError(f"Linear '{name}': expected 1 input, found {len(inputs)}")
        (x,) = inputs
        shape = frame.static_shape(x)
        if shape != (batch, in_dim):
            raise ValueError(f"Linear '{name}': input expected shape [{batch}, {in_dim}], "
                             f"found {list(shape) if shape is not None else 'unranked'}")
        y = g.emit(frame.MatmulOp(x, ps[0]))
        if with_bias:
            y = g.emit(frame.AddOp(y, ps[1]))
        return [y]

    return Module(name, tuple(params), (), build)


def Conv(name: str, in_channels: int, out_channels: int, kernel: Sequence[int],
         stride: Sequence[int], padding: Sequence[int], groups: int = 1, with_bias: bool = True,
         weight_init: InitSpec = DEFAULT_WEIGHT_INIT,
         bias_init: InitSpec = DEFAULT_BIAS_INIT) -> Module:
    """N-d convolution on [N, C, *spatial] (Conv1d / Conv2d): weight
    [out, in/groups, *kernel], optional bias [out] added per output channel."""
    params = [ParamSpec("weight", (out_channels, in_channels // max(groups, 1), *kernel),
                        weight_init)]
    if with_bias:
        params.append(ParamSpec("bias", (out_channels,), bias_init))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        if len(inputs) != 1:
            raise ValueError(f"Conv '{name}': expected 1 input, found {len(inputs)}")
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv '{name}': groups {groups} must divide in_channels "
                             f"{in_channels} and out_channels {out_channels}")
        x = inputs[0]
        shape = frame.static_shape(x)
        if shape is None or len(shape) != 2 + len(kernel) or shape[1] != in_channels:
            raise ValueError(f"Conv '{name}': input expected [N, {in_channels}, "
                             f"{len(kernel)} spatial dims], found {shape}")
        y = g.emit(frame.ConvOp(x, ps[0], stride, padding, groups))
        if with_bias:
            rank = len(shape)
            b = g.emit(frame.BroadcastOp(ps[1], y.type, [d for d in range(rank) if d != 1]))
            y = g.emit(frame.AddOp(y, b))
        return [y]

    return Module(name, tuple(params), (), build)


def Pool(name: str, kind: str, kernel: Sequence[int], stride: Sequence[int],
         padding: Sequence[int]) -> Module:
    """Max or average pooling over NC* windows (MaxPool2d / AvgPool2d)."""
    op = {"max": frame.MaxPoolOp, "avg": frame.AvgPoolOp}[kind]

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        if len(inputs) != 1:
            raise ValueError(f"{kind} pool '{name}': expected 1 input, found {len(inputs)}")
        shape = frame.static_shape(inputs[0])
        try:
            frame.pool_output_shape(shape or (), kernel, stride, padding, f"{kind} pool")
        except frame.ShapeError as err:
            raise ValueError(f"{kind} pool '{name}': {err}") from None
        return [g.emit(op(inputs[0], kernel, stride, padding))]

    return Module(name, (), (), build)


def Relu(name: str) -> Module:
    """max(x, 0) elementwise."""
    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        return [g.emit(frame.ReluOp(inputs[0]))]

    return Module(name, (), (), build)


def Sigmoid(name: str) -> Module:
    """1 / (1 + exp(-x)) elementwise."""
    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        return [g.emit(frame.SigmoidOp(inputs[0]))]

    return Module(name, (), (), build)


def Flatten(name: str) -> Module:
    """[N, d1, d2, ...] -> [N, d1 * d2 * ...] (row-major reshape)."""
    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        shape = frame.static_shape(inputs[0])
        if shape is None or len(shape) < 1:
            raise ValueError(f"Flatten '{name}': expected an input of rank >= 1")
        flat = (shape[0], prod(shape[1:]))
        elem = frame.element_type(inputs[0])  # f16 stays f16
        return [g.emit(frame.ReshapeOp(inputs[0], frame.tensor_type(flat, elem)))]

    return Module(name, (), (), build)


def Sequential(name: str, children: Sequence[Module]) -> Module:
    """Chain children, feeding each one's outputs to the next."""
    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        values = list(inputs)
        for child, sl in zip(seq.children, seq.child_param_slices(ps), strict=True):
            values = child.build(g, values, sl)
        return values

    # Paths use the children's own names (`mlp.fc1.weight`; with children named
    # "0", "1" that is `mlp.0.weight`, the seed's example).
    seq = Module(name, (), tuple(children), build)
    return seq


def MseLoss(name: str) -> Module:
    """mean((prediction - target)^2) as a 0-d tensor; inputs are (prediction, target)."""
    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        pred, target = inputs
        return [g.emit(frame.MseLossOp(pred, target))]

    return Module(name, (), (), build)
