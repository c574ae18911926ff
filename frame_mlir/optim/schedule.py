"""Learning-rate schedules (step, cosine, onecycle) as torch.optim.lr_scheduler sets them.

The values are the learning rate (and momentum) of every training step, fed to the
update function's run-time hyperparameters (`OptimizerRuntime.hyper`), so a schedule
never recompiles. They replay torch's recursive formulas in double precision, so they
are the very floats torch puts in `param_groups`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from frame_mlir.optim.config import (
    SCHEDULERS,
    CosineAnnealingLR,
    OneCycleLR,
    OptimizerConfig,
    SchedulerConfig,
    StepLR,
)

__all__ = ["Schedule"]


class Schedule:
    """The learning rate (and momentum) of every training step, as torch.optim's
    scheduler `scheduler` would set them on an optimizer built from `optimizer`, for a
    run of `epochs` epochs of `steps_per_epoch` batches (the last, smaller batch
    included).

    `StepLR` and `CosineAnnealingLR` step once per epoch (`scheduler.step()` after each
    epoch), `OneCycleLR` once per batch (total_steps = epochs x steps_per_epoch).
    Without a scheduler the optimizer's lr is constant. Values are computed in double
    precision with torch's own formulas, recursions included (StepLR multiplies the
    previous lr by gamma, CosineAnnealingLR scales the previous lr by a cosine ratio)."""

    def __init__(self, scheduler: SchedulerConfig | None, optimizer: OptimizerConfig,
                 epochs: int, steps_per_epoch: int):
        if scheduler is not None and not isinstance(scheduler, tuple(SCHEDULERS.values())):
            raise TypeError(f"expected a schedule config (frame_mlir.optim.StepLR, "
                            f"CosineAnnealingLR or OneCycleLR), found "
                            f"{type(scheduler).__name__}")
        if epochs < 1 or steps_per_epoch < 1:
            raise ValueError(f"schedule: epochs and steps_per_epoch must be >= 1, found "
                             f"{epochs} and {steps_per_epoch}")
        self.scheduler = scheduler
        self.optimizer = optimizer
        self.epochs = epochs
        self.steps_per_epoch = steps_per_epoch
        self.total_steps = epochs * steps_per_epoch
        #: whether the schedule sets momentum (onecycle's cycle_momentum): the update
        #: function must then be built with dynamic_momentum=True
        self.cycles_momentum = bool(isinstance(scheduler, OneCycleLR)
                                    and scheduler.cycle_momentum)
        #: once per batch (onecycle) rather than once per epoch
        self.per_batch = isinstance(scheduler, OneCycleLR)
        base_lr = float(optimizer.lr)
        self._epoch_lrs: list[float] | None = None
        self._onecycle: Callable[[int], tuple[float, float | None]] | None = None
        if scheduler is None:
            self._epoch_lrs = [base_lr] * epochs
        elif isinstance(scheduler, StepLR):
            self._epoch_lrs = _step_lrs(base_lr, scheduler, epochs)
        elif isinstance(scheduler, CosineAnnealingLR):
            self._epoch_lrs = _cosine_lrs(base_lr, scheduler, epochs)
        else:
            self._onecycle = _onecycle(scheduler, self.total_steps)
            try:  # torch fails at construction (step 0) on an empty warm-up phase
                self._onecycle(0)
            except ZeroDivisionError:
                raise ValueError(
                    f"onecycle: pct_start {scheduler.pct_start} x total_steps "
                    f"{self.total_steps} leaves an empty phase (torch divides by zero)"
                ) from None

    def lr_momentum(self, epoch: int, batch: int) -> tuple[float, float | None]:
        """(lr, momentum) for batch `batch` of epoch `epoch` (both 0-based), the one
        about to run. momentum is the value onecycle puts in SGD's / RMSprop's
        `momentum` or Adam's beta1, None when the schedule leaves the optimizer's own."""
        if not (0 <= epoch < self.epochs and 0 <= batch < self.steps_per_epoch):
            raise ValueError(f"schedule: epoch {epoch}, batch {batch} outside "
                             f"{self.epochs} epochs of {self.steps_per_epoch} batches")
        if self._onecycle is not None:
            return self._onecycle(epoch * self.steps_per_epoch + batch)
        assert self._epoch_lrs is not None
        return self._epoch_lrs[epoch], None


def _step_lrs(base_lr: float, s: StepLR, epochs: int) -> list[float]:
    """StepLR's lr of epochs 0..epochs-1: `lr *= gamma` whenever last_epoch is a
    non-zero multiple of step_size (torch's recursive get_lr, not base * gamma^k)."""
    step_size, gamma = int(s.step_size), s.gamma
    lrs = [base_lr]
    for e in range(1, epochs):
        lr = lrs[-1]
        lrs.append(lr * gamma if e % step_size == 0 else lr)
    return lrs


def _cosine_lrs(base_lr: float, s: CosineAnnealingLR, epochs: int) -> list[float]:
    """CosineAnnealingLR's lr of epochs 0..epochs-1, replaying torch's recursion
    (including its branch for last_epoch = T_max + 1 (mod 2 T_max), where the ratio's
    denominator is 0), so the values are torch's bit for bit."""
    t_max = s.T_max
    if t_max is None:
        t_max = epochs
    eta_min = s.eta_min
    lrs = [base_lr]
    for e in range(1, epochs):
        lr = lrs[-1]
        if (e - 1 - t_max) % (2 * t_max) == 0:
            lr = lr + (base_lr - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
        else:
            lr = ((1 + math.cos(math.pi * e / t_max))
                  / (1 + math.cos(math.pi * (e - 1) / t_max)) * (lr - eta_min) + eta_min)
        lrs.append(lr)
    return lrs


def _onecycle(s: OneCycleLR, total_steps: int) -> Callable[[int], tuple[float, float | None]]:
    """OneCycleLR's (lr, momentum) at scheduler step `k` (0 = the construction), its
    get_lr verbatim: phases end at float(pct_start * total) - 1 (and 2 pct_start total
    - 2 with three_phase) and total - 1; the lr starts at max_lr / div_factor."""
    max_lr = s.max_lr
    pct_start = s.pct_start
    initial_lr = max_lr / s.div_factor
    values = {"initial_lr": initial_lr, "max_lr": max_lr,
              "min_lr": initial_lr / s.final_div_factor,
              "max_momentum": s.max_momentum, "base_momentum": s.base_momentum}
    if s.three_phase:
        phases = [
            (float(pct_start * total_steps) - 1, "initial_lr", "max_lr",
             "max_momentum", "base_momentum"),
            (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr",
             "base_momentum", "max_momentum"),
            (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
        ]
    else:
        phases = [
            (float(pct_start * total_steps) - 1, "initial_lr", "max_lr",
             "max_momentum", "base_momentum"),
            (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
        ]
    strategy = s.anneal_strategy
    if strategy not in ("cos", "linear"):
        raise ValueError(f"onecycle: anneal_strategy must be 'cos' or 'linear', found "
                         f"{strategy!r}")

    def anneal(start: float, end: float, pct: float) -> float:
        if strategy == "cos":
            cos_out = math.cos(math.pi * pct) + 1
            return end + (start - end) / 2.0 * cos_out
        return (end - start) * pct + start

    cycle = bool(s.cycle_momentum)

    def at(step_num: int) -> tuple[float, float | None]:
        if step_num > total_steps:
            raise ValueError(f"onecycle: step {step_num} past total_steps {total_steps}")
        start_step = 0.0
        for i, (end_step, lr0, lr1, m0, m1) in enumerate(phases):
            if step_num <= end_step or i == len(phases) - 1:
                pct = (step_num - start_step) / (end_step - start_step)
                lr = anneal(values[lr0], values[lr1], pct)
                mom = anneal(values[m0], values[m1], pct) if cycle else None
                return lr, mom
            start_step = end_step
        raise AssertionError("unreachable: the last phase always matches")

    return at
