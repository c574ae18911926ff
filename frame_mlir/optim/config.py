"""The optimizers' and learning-rate schedules' settings: small frozen dataclasses with
torch.optim's argument names and defaults, so that a frontend converts its own spelling
with one call (`SGD(**args)`) and a reader can hold them against PyTorch's documentation.

Only SGD and Adam have a second formula, `formula="reference"`: the one of the reference
format (dlprimitives), which the JSON networks compile. Its operations come in another
order than torch's, so its results differ in the last bits; both are kept so that every
frontend's output stays what it is (see `frame_mlir/optim/update.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["FORMULAS", "OPTIMIZERS", "SCHEDULERS", "WEIGHT_DECAY_CONVENTIONS", "Adam",
           "AdamW", "CosineAnnealingLR", "OneCycleLR", "OptimizerConfig", "RMSprop", "SGD",
           "SchedulerConfig", "StepLR"]

#: The update formulas: "torch" follows torch.optim's single-tensor implementations
#: operation by operation; "reference" is the reference format's (dlprimitives').
FORMULAS = ("torch", "reference")
#: SGD's weight decay: "torch" adds `weight_decay * p` to the gradient; "reference"
#: (dlprimitives) scales the parameter by `1 - weight_decay`, not scaled by lr.
WEIGHT_DECAY_CONVENTIONS = ("torch", "reference")


def _check_choice(what: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{what}: expected one of {', '.join(map(repr, choices))}, "
                         f"found {value!r}")


@dataclass(frozen=True)
class SGD:
    """torch.optim.SGD's settings, plus the reference format's variant.

    `formula="torch"`: torch.optim.SGD exactly (dampening, nesterov, the first momentum
    step that copies the gradient, weight decay added to the gradient); a momentum
    buffer exists only when momentum is non-zero (or `dynamic_momentum` asks for it).
    `formula="reference"`: dlprimitives' update `v = g' + momentum v; p = keep p - lr v`
    with a velocity always, whose one compiled function takes either weight-decay
    convention at run time (`weight_decay_convention`: "torch" is g' = g + wd p, keep 1,
    which equals torch.optim.SGD without dampening and nesterov; "reference" is g' = g,
    keep = 1 - weight_decay, the decay not scaled by lr)."""

    lr: float = 0.001
    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False
    formula: str = "torch"
    weight_decay_convention: str = "torch"

    name: ClassVar[str] = "sgd"

    def __post_init__(self) -> None:
        _check_choice("SGD formula", self.formula, FORMULAS)
        _check_choice("SGD weight_decay_convention", self.weight_decay_convention,
                      WEIGHT_DECAY_CONVENTIONS)
        if self.formula == "torch" and self.weight_decay_convention != "torch":
            raise ValueError("SGD: the reference weight-decay convention needs "
                             "formula='reference'")
        if self.formula == "reference" and (self.nesterov or self.dampening != 0):
            raise ValueError("SGD: formula='reference' has no dampening or nesterov")


@dataclass(frozen=True)
class Adam:
    """torch.optim.Adam's settings (L2 weight decay added to the gradient).
    `formula="reference"`: the reference format's Adam, the same update with its own
    operation order (`m = b1 m + (1 - b1) g'` instead of torch's lerp)."""

    lr: float = 0.001
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    formula: str = "torch"

    name: ClassVar[str] = "adam"

    def __post_init__(self) -> None:
        _check_choice("Adam formula", self.formula, FORMULAS)


@dataclass(frozen=True)
class AdamW:
    """torch.optim.AdamW's settings (decoupled weight decay `p *= 1 - lr wd` first)."""

    lr: float = 0.001
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.01

    name: ClassVar[str] = "adamw"
    formula: ClassVar[str] = "torch"


@dataclass(frozen=True)
class RMSprop:
    """torch.optim.RMSprop's settings."""

    lr: float = 0.01
    alpha: float = 0.99
    eps: float = 1e-8
    weight_decay: float = 0.0
    momentum: float = 0.0
    centered: bool = False

    name: ClassVar[str] = "rmsprop"
    formula: ClassVar[str] = "torch"


OptimizerConfig = SGD | Adam | AdamW | RMSprop
#: The optimizers by name (the config's `name`).
OPTIMIZERS: dict[str, type[OptimizerConfig]] = {
    "sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop}


@dataclass(frozen=True)
class StepLR:
    """torch.optim.lr_scheduler.StepLR: lr *= gamma every `step_size` epochs."""

    step_size: int
    gamma: float = 0.1

    name: ClassVar[str] = "step"


@dataclass(frozen=True)
class CosineAnnealingLR:
    """torch.optim.lr_scheduler.CosineAnnealingLR; `T_max` None: the run's epochs."""

    T_max: int | None = None
    eta_min: float = 0.0

    name: ClassVar[str] = "cosine"


@dataclass(frozen=True)
class OneCycleLR:
    """torch.optim.lr_scheduler.OneCycleLR (stepped once per batch; total_steps = epochs
    x steps_per_epoch). `cycle_momentum` cycles SGD's / RMSprop's momentum or Adam's
    beta1 inversely to the lr."""

    max_lr: float
    pct_start: float = 0.3
    anneal_strategy: str = "cos"
    cycle_momentum: bool = True
    base_momentum: float = 0.85
    max_momentum: float = 0.95
    div_factor: float = 25.0
    final_div_factor: float = 1e4
    three_phase: bool = False

    name: ClassVar[str] = "onecycle"


SchedulerConfig = StepLR | CosineAnnealingLR | OneCycleLR
#: The schedules by name (the config's `name`).
SCHEDULERS: dict[str, type[SchedulerConfig]] = {
    "step": StepLR, "cosine": CosineAnnealingLR, "onecycle": OneCycleLR}
