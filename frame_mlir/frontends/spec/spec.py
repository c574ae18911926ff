"""Typed, validated model spec (schema_version 0).

These frozen dataclasses are what every later stage consumes; nothing downstream touches the
JSON. A :class:`ModelSpec` is only ever built from a document that passed
:func:`frame_mlir.frontends.spec.spec_v0.validate`, so its invariants hold: names are unique, every
layer input names the data input or an earlier layer, shapes chain, data entries are complete.

Shapes are tuples of ints. A linear layer maps ``[batch, in]`` to ``[batch, out]`` with
``weight_shape == (in, out)``; its optional bias is the full ``[batch, out]`` tensor (v0 has no
broadcasting).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod

from frame_mlir.nn.init import Inline, UniformSeeded

__all__ = [
    "DataSpec",
    "InlineInit",
    "InputSpec",
    "LayerSpec",
    "LossSpec",
    "ModelSpec",
    "OptimizerSpec",
    "TensorInit",
    "TrainingSpec",
    "UniformInit",
    "numel",
]


def numel(shape: tuple[int, ...]) -> int:
    """Number of elements of a tensor of ``shape`` (1 for a scalar shape ``()``)."""
    return prod(shape)


@dataclass(frozen=True)
class InputSpec:
    """A data input of the model: ``{"name": "x", "shape": [8, 4]}``."""

    name: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class LayerSpec:
    """One layer; v0 knows only ``kind == "linear"`` (matmul, optional bias add, optional relu)."""

    name: str
    kind: str
    input: str
    weight_shape: tuple[int, int]
    bias_shape: tuple[int, int] | None
    activation: str = "none"

    @property
    def in_dim(self) -> int:
        """Feature width the layer consumes (``weight_shape[0]``)."""
        return self.weight_shape[0]

    @property
    def out_dim(self) -> int:
        """Feature width the layer produces (``weight_shape[1]``)."""
        return self.weight_shape[1]

    @property
    def has_bias(self) -> bool:
        """Whether the layer carries a bias parameter."""
        return self.bias_shape is not None

    @property
    def weight_name(self) -> str:
        """Parameter name of the weight: ``<layer>.weight``."""
        return f"{self.name}.weight"

    @property
    def bias_name(self) -> str:
        """Parameter name of the bias: ``<layer>.bias`` (meaningful only if :attr:`has_bias`)."""
        return f"{self.name}.bias"


@dataclass(frozen=True)
class LossSpec:
    """The training loss; v0 knows only ``kind == "mse"``."""

    kind: str
    prediction: str
    target_shape: tuple[int, ...]


@dataclass(frozen=True)
class OptimizerSpec:
    """The optimizer; v0 knows only ``kind == "sgd"``."""

    kind: str
    learning_rate: float


@dataclass(frozen=True)
class TrainingSpec:
    """Training loop settings; ``seed`` seeds the single std::mt19937 of the run."""

    steps: int
    seed: int
    log_every: int


# The data section's initialisers are the nn layer's InitSpec (one definition).
InlineInit = Inline
UniformInit = UniformSeeded
TensorInit = InlineInit | UniformInit
"""How a data tensor gets its values."""


@dataclass(frozen=True)
class DataSpec:
    """The ``data`` section: values for each data input and the target, parameter init ranges.

    ``inputs`` maps each data input name to its init; treat it as read-only.
    """

    inputs: Mapping[str, TensorInit]
    target: TensorInit
    weight_range: tuple[float, float]
    bias_range: tuple[float, float]

    def __hash__(self) -> int:
        # The mapping field is not hashable itself; hash its items so specs stay usable as keys.
        return hash((tuple(self.inputs.items()), self.target, self.weight_range, self.bias_range))


@dataclass(frozen=True)
class ModelSpec:
    """A whole validated v0 model spec."""

    schema_version: int
    name: str
    dtype: str
    batch: int
    inputs: tuple[InputSpec, ...]
    layers: tuple[LayerSpec, ...]
    loss: LossSpec
    optimizer: OptimizerSpec
    training: TrainingSpec
    data: DataSpec

    @property
    def input(self) -> InputSpec:
        """The single data input of a v0 spec."""
        return self.inputs[0]

    def layer(self, name: str) -> LayerSpec:
        """The layer called ``name``; ``KeyError`` if there is none."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"no layer named {name!r}")

    def layer_output_shape(self, name: str) -> tuple[int, int]:
        """Output shape ``(batch, out)`` of the layer called ``name``."""
        return (self.batch, self.layer(name).out_dim)

    def shape_of(self, name: str) -> tuple[int, ...]:
        """Shape of the value called ``name``: a data input or a layer output."""
        for inp in self.inputs:
            if inp.name == name:
                return inp.shape
        return self.layer_output_shape(name)

    @property
    def prediction_layer(self) -> LayerSpec:
        """The layer whose output the loss compares with the target."""
        return self.layer(self.loss.prediction)

    def param_names(self) -> list[str]:
        """Parameter names in graph order: ``[fc1.weight, fc1.bias, fc2.weight, ...]``."""
        names: list[str] = []
        for layer in self.layers:
            names.append(layer.weight_name)
            if layer.has_bias:
                names.append(layer.bias_name)
        return names

    def param_shapes(self) -> list[tuple[int, ...]]:
        """Parameter shapes, parallel to :meth:`param_names`."""
        shapes: list[tuple[int, ...]] = []
        for layer in self.layers:
            shapes.append(layer.weight_shape)
            if layer.bias_shape is not None:
                shapes.append(layer.bias_shape)
        return shapes
