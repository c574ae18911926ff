"""The optimizer library: every frontend's optimizers and learning-rate schedules, built
as frame IR in one place.

- `config.py`: the settings, as small dataclasses with torch.optim's names and defaults
  (`SGD`, `Adam`, `AdamW`, `RMSprop`; `StepLR`, `CosineAnnealingLR`, `OneCycleLR`). SGD
  and Adam also have the reference format's formula (dlprimitives'), which the JSON
  networks compile, and SGD both weight-decay conventions (PyTorch's, and the
  reference's `keep = 1 - weight_decay`, not scaled by lr).
- `update.py`: `build_update_function`, one function that updates every parameter and
  its state in place, with the hyperparameters as run-time inputs, and
  `OptimizerRuntime`, their values at each step (torch's branches included).
- `schedule.py`: `Schedule`, the lr (and momentum) of every step, as
  torch.optim.lr_scheduler sets them.
- `fused.py`: plain SGD as the one op `frame.sgd_update` per parameter, for the update
  fused into the gradient function (v0's frame-sgd-fuse) and the Python API's graph.

Each optimizer and schedule is checked against torch.optim once, in
`tests/optim/test_optim_vs_torch.py`. The library sits in the IR-builder layer beside
`frame_mlir/nn/`: it imports the dialect and `nn.Graph`, never the passes (so
frame-sgd-fuse can use it), the runtime or a frontend.
"""

from frame_mlir.optim.config import (
    FORMULAS,
    OPTIMIZERS,
    SCHEDULERS,
    SGD,
    WEIGHT_DECAY_CONVENTIONS,
    Adam,
    AdamW,
    CosineAnnealingLR,
    OneCycleLR,
    OptimizerConfig,
    RMSprop,
    SchedulerConfig,
    StepLR,
)
from frame_mlir.optim.fused import rounded_sgd_update, sgd_update
from frame_mlir.optim.schedule import Schedule
from frame_mlir.optim.update import (
    REFERENCE_STATES,
    STATES,
    OptimizerRuntime,
    build_update_function,
    has_momentum_path,
    hyper_names,
    state_names,
)

__all__ = [
    "FORMULAS", "OPTIMIZERS", "REFERENCE_STATES", "SCHEDULERS", "SGD", "STATES",
    "WEIGHT_DECAY_CONVENTIONS", "Adam", "AdamW", "CosineAnnealingLR", "OneCycleLR",
    "OptimizerConfig", "OptimizerRuntime", "RMSprop", "Schedule", "SchedulerConfig",
    "StepLR", "build_update_function", "has_momentum_path", "hyper_names",
    "rounded_sgd_update", "sgd_update", "state_names",
]
