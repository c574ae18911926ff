"""The resolved, shape-inferred form of a `.kyn` program (KynML's IRModule).

Composition, validation and shape inference turn a `Program` into a `KynModule`: plain
frozen dataclasses with every default filled in, every `$ref` substituted and every
layer's input and output width known. The native trainer, the PyTorch emitter and the
exporters consume only this; none of them looks at the AST.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from frame_mlir.frontends.kyn.ast import Loc

__all__ = ["DatasetSpec", "EvaluateSpec", "ExportSpec", "KynModule", "LayerSpec", "ModelSpec",
           "OptimizerSpec", "SchedulerSpec", "TrainSpec"]


@dataclass(frozen=True)
class DatasetSpec:
    """A `dataset` block with defaults filled in. `path` is as written, `resolved` the
    file it names (against the current directory, then the `.kyn` file's directory)."""

    name: str
    path: str
    resolved: str
    target: str
    split: float = 0.8
    normalize: bool = False
    shuffle: bool = True
    num_workers: int = 0
    pin_memory: bool = False
    prefetch: int | None = None
    loc: Loc = field(default=Loc(0, 0, 0, 0), compare=False)


@dataclass(frozen=True)
class LayerSpec:
    """One layer with its widths: `in_features` -> `out_features` (equal except for
    dense). `activation` is set for dense only; `rate` for dropout; `eps`/`momentum`
    are BatchNorm1d's (PyTorch defaults 1e-5 and 0.1)."""

    kind: str  # "input" | "dense" | "dropout" | "batchnorm"
    in_features: int
    out_features: int
    activation: str | None = None
    rate: float = 0.0
    eps: float = 1e-5
    momentum: float = 0.1
    loc: Loc = field(default=Loc(0, 0, 0, 0), compare=False)


@dataclass(frozen=True)
class ModelSpec:
    """A model block after inference: `layers` starts with the input layer."""

    name: str
    layers: tuple[LayerSpec, ...]
    loc: Loc = field(default=Loc(0, 0, 0, 0), compare=False)

    @property
    def input_size(self) -> int:
        return self.layers[0].out_features

    @property
    def output_units(self) -> int:
        return self.layers[-1].out_features

    @property
    def final_activation(self) -> str:
        dense = [x for x in self.layers if x.kind == "dense"]
        return dense[-1].activation or "linear"


@dataclass(frozen=True)
class OptimizerSpec:
    """`name` in adam/adamw/sgd/rmsprop and its keyword arguments, PyTorch's names, every
    default filled in (betas as a 2-tuple)."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class SchedulerSpec:
    """`name` in step/cosine/onecycle and its arguments with defaults filled in."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class TrainSpec:
    """The train block with defaults filled in (docs/kyn.md lists them)."""

    model: str
    data: str
    loss: str
    optimizer: OptimizerSpec
    epochs: int
    batch: int
    device: str = "auto"
    scheduler: SchedulerSpec | None = None
    early_stop: int | None = None  # patience in epochs
    early_stop_min_delta: float = 0.0
    checkpoint: int | None = None  # every_n epochs
    checkpoint_dir: str = "checkpoints"
    precision: str = "fp32"
    compile: bool = False
    seed: int | None = None
    deterministic: bool = False


@dataclass(frozen=True)
class EvaluateSpec:
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class ExportSpec:
    format: str
    path: str
    input_shape: tuple[int, ...] | None = None
    opset: int = 17


@dataclass(frozen=True)
class KynModule:
    """Everything a backend needs: the trained model, its data, the training setup."""

    source_path: str
    source_text: str
    datasets: dict[str, DatasetSpec]
    models: dict[str, ModelSpec]
    train: TrainSpec
    evaluate: EvaluateSpec | None = None
    export: ExportSpec | None = None
    params: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def model(self) -> ModelSpec:
        """The model `train` trains."""
        return self.models[self.train.model]

    @property
    def dataset(self) -> DatasetSpec:
        """The dataset `train` reads."""
        return self.datasets[self.train.data]

    @property
    def task(self) -> str:
        """"classification" (cross_entropy, nll: int64 labels), "binary" (bce) or
        "regression"."""
        if self.train.loss in ("cross_entropy", "nll"):
            return "classification"
        return "binary" if self.train.loss == "bce" else "regression"
