"""Lower a validated v0 ModelSpec to frame IR through nn Modules (seed 000 section 4).

The model is a Module tree: one `Linear` per layer (named after the layer, so its
parameters are `<layer>.weight` / `<layer>.bias`) and a `Relu` where the layer
asks for one. Wiring follows the spec's names, so every topology FE-002 allows
works: skip connections, reuse of the data input, a prediction taken from a
layer that is not the last. Graph inputs are `[data inputs..., params..., target]`
and the single output is the loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.frontends.spec.spec import ModelSpec
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import (
    Linear,
    Module,
    MseLoss,
    ParamSpec,
    Relu,
    UniformSeeded,
    add_parameter_inputs,
)


@dataclass(frozen=True)
class LoweredModel:
    """A spec's frame module and the facts training needs about its graph."""

    module: builtin.ModuleOp
    function: str  # the loss function; autodiff adds `<function>_grad`
    predict_function: str  # data inputs and params -> the prediction layer's output
    input_names: tuple[str, ...]
    params: tuple[ParamSpec, ...]
    target_shape: tuple[int, ...]

    @property
    def param_names(self) -> list[str]:
        return [p.name for p in self.params]


def build_model_module(spec: ModelSpec) -> Module:
    """The spec's network as a Module tree whose build wires layers by name."""
    wlo, whi = spec.data.weight_range
    blo, bhi = spec.data.bias_range
    layer_mods: list[Module] = []
    for layer in spec.layers:
        layer_mods.append(Linear(layer.name, spec.batch, layer.in_dim, layer.out_dim,
                                 layer.has_bias, spec.dtype, UniformSeeded(wlo, whi),
                                 UniformSeeded(blo, bhi)))
        if layer.activation == "relu":
            layer_mods.append(Relu(f"{layer.name}.relu"))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        values = {inp.name: v for inp, v in zip(spec.inputs, inputs, strict=True)}
        slices = iter(zip(root.children, root.child_param_slices(ps), strict=True))
        for layer in spec.layers:
            linear, sl = next(slices)
            (y,) = linear.build(g, [values[layer.input]], sl)
            if layer.activation == "relu":
                relu, sl = next(slices)
                (y,) = relu.build(g, [y], sl)
            values[layer.name] = y
        return [values[spec.loss.prediction]]

    root = Module(spec.name, (), tuple(layer_mods), build)
    return root


def lower_spec(spec: ModelSpec) -> LoweredModel:
    """Build the model's functions as frame IR.

    `@<name>(inputs..., params..., target) -> loss` is what training differentiates;
    `@<name>_predict(inputs..., params...) -> prediction` (marked `frame.inference`,
    so autodiff leaves it alone) gives the trained model's output.
    """
    model = build_model_module(spec)
    params = model.parameters(prefix="")

    def build(name: str, with_loss: bool) -> func.FuncOp:
        g = Graph(name)
        inputs = [g.add_input(inp.shape, inp.name) for inp in spec.inputs]
        param_values = add_parameter_inputs(g, params)
        target = g.add_input(spec.loss.target_shape, "target") if with_loss else None
        (prediction,) = model.build(g, inputs, param_values)
        if target is None:
            return g.finish([prediction])
        (loss,) = MseLoss("loss").build(g, [prediction, target], [])
        return g.finish([loss])

    predict = build(f"{spec.name}_predict", with_loss=False)
    predict.attributes["frame.inference"] = builtin.UnitAttr()
    module = builtin.ModuleOp([build(spec.name, with_loss=True), predict])
    return LoweredModel(module, spec.name, predict.sym_name.data,
                        tuple(i.name for i in spec.inputs), tuple(params),
                        tuple(spec.loss.target_shape))


def mark_per_sample(lowered: LoweredModel) -> None:
    """Mark the v0 biases `frame.per_sample` on the loss function (frame-dp-split keeps
    their gradients out of the allreduce)."""
    from frame_mlir.passes.common import set_arg_attr
    from frame_mlir.passes.frame_dp_split import PER_SAMPLE

    for fn in lowered.module.ops:
        if not isinstance(fn, func.FuncOp) or fn.sym_name.data != lowered.function:
            continue
        for i, d in enumerate(fn.arg_attrs.data if fn.arg_attrs is not None else ()):
            name = d.data.get("frame.param")
            if isinstance(name, builtin.StringAttr) and name.data.endswith(".bias"):
                set_arg_attr(fn, i, PER_SAMPLE, builtin.UnitAttr())
