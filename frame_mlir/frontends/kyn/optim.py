"""The `.kyn` optimizers and learning-rate schedulers: the optimizer library's
(`frame_mlir/optim/`), PyTorch-exact, taking the train block's specs.

A `.kyn` program names its optimizer and scheduler with torch's names and arguments
(`OptimizerSpec`, `SchedulerSpec`, every default filled in), so each converts to the
library's config with one call; the update functions, their run-time hyperparameters
and the schedules' values are the library's (`frame_mlir/optim/update.py` gives the
formulas, `frame_mlir/optim/schedule.py` the schedules), checked against torch.optim
in `tests/optim/test_optim_vs_torch.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func

from frame_mlir import optim
from frame_mlir.frontends.kyn.module import OptimizerSpec, SchedulerSpec

__all__ = ["OPTIMIZERS", "SCHEDULERS", "STATES", "OptimizerRuntime", "Schedule",
           "build_update_function", "has_momentum_path", "hyper_names", "state_names",
           "optimizer_config", "scheduler_config"]

#: The optimizers and schedulers the library has, by their torch (and `.kyn`) names.
OPTIMIZERS = tuple(optim.OPTIMIZERS)
SCHEDULERS = tuple(optim.SCHEDULERS)
#: Every per-parameter state tensor an optimizer may keep (torch's state names), in
#: argument order; `state_names` gives the ones a given configuration uses.
STATES = optim.STATES


def optimizer_config(opt: OptimizerSpec) -> optim.OptimizerConfig:
    """The library's config of the train block's optimizer (torch's arguments)."""
    if opt.name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {opt.name!r}: expected one of "
                         f"{', '.join(OPTIMIZERS)}")
    return optim.OPTIMIZERS[opt.name](**opt.args)


def scheduler_config(sched: SchedulerSpec) -> optim.SchedulerConfig:
    """The library's config of the train block's scheduler (torch's arguments)."""
    if sched.name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {sched.name!r}: expected one of "
                         f"{', '.join(SCHEDULERS)}")
    return optim.SCHEDULERS[sched.name](**sched.args)


def has_momentum_path(opt: OptimizerSpec, dynamic_momentum: bool = False) -> bool:
    """`frame_mlir.optim.has_momentum_path` of `opt`."""
    return optim.has_momentum_path(optimizer_config(opt), dynamic_momentum)


def state_names(opt: OptimizerSpec, dynamic_momentum: bool = False) -> tuple[str, ...]:
    """`frame_mlir.optim.state_names` of `opt`: the state tensors its update function
    takes and returns, in argument order."""
    return optim.state_names(optimizer_config(opt), dynamic_momentum)


def hyper_names(opt: OptimizerSpec, dynamic_momentum: bool = False) -> tuple[str, ...]:
    """`frame_mlir.optim.hyper_names` of `opt`: its update function's rank-0
    hyperparameter inputs, in argument order."""
    return optim.hyper_names(optimizer_config(opt), dynamic_momentum)


def build_update_function(name: str, opt: OptimizerSpec,
                          shapes: Sequence[tuple[str, tuple[int, ...]]],
                          dynamic_momentum: bool = False) -> func.FuncOp:
    """`frame_mlir.optim.build_update_function` of `opt`: the update function `@<name>`
    for the trainable parameters `shapes` (name, shape)."""
    return optim.build_update_function(name, optimizer_config(opt), shapes,
                                       dynamic_momentum=dynamic_momentum)


class OptimizerRuntime(optim.OptimizerRuntime):
    """The library's `OptimizerRuntime` of the train block's optimizer `opt`."""

    def __init__(self, opt: OptimizerSpec, dynamic_momentum: bool = False):
        super().__init__(optimizer_config(opt), dynamic_momentum)
        self.opt = opt


class Schedule(optim.Schedule):
    """The library's `Schedule` of the train block's scheduler `sched` (None: a
    constant lr) on optimizer `opt`."""

    def __init__(self, sched: SchedulerSpec | None, opt: OptimizerSpec, epochs: int,
                 steps_per_epoch: int):
        config = optimizer_config(opt)
        super().__init__(None if sched is None else scheduler_config(sched), config,
                         epochs, steps_per_epoch)
        self.sched, self.opt = sched, opt
