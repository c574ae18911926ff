"""The `.kyn` optimizers and schedulers (frame_mlir/frontends/kyn/optim.py): the train
block's specs converted to the optimizer library's configs.

The library itself is checked against torch.optim and torch.optim.lr_scheduler once, in
tests/optim/test_optim_vs_torch.py, with the same cases as here. What this file checks
is the conversion: every spec a `.kyn` program can write (torch's names and arguments,
every default filled in by the checker) gives exactly the library's config, hence the
same update function (its printed IR), the same run-time hyperparameters at every step
and the same schedule; and the names the library does not have are the adapter's
errors. So `.kyn` training agrees with torch.optim as far as the library does.
"""

from __future__ import annotations

from typing import Any

import pytest

from frame_mlir import optim
from frame_mlir.frontends.kyn.module import OptimizerSpec, SchedulerSpec
from frame_mlir.frontends.kyn.optim import (
    STATES,
    OptimizerRuntime,
    Schedule,
    build_update_function,
    has_momentum_path,
    hyper_names,
    optimizer_config,
    scheduler_config,
    state_names,
)

SHAPES = [("w", (3, 4)), ("b", (5,))]
#: The defaults the `.kyn` checker fills in (torch's).
DEFAULTS: dict[str, dict[str, Any]] = {
    "sgd": {"lr": 0.001, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
            "nesterov": False},
    "adam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0},
    "adamw": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01},
    "rmsprop": {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
                "momentum": 0.0, "centered": False},
}
SCHED_DEFAULTS: dict[str, dict[str, Any]] = {
    "step": {"gamma": 0.1},
    "cosine": {"T_max": None, "eta_min": 0.0},
    "onecycle": {"pct_start": 0.3, "div_factor": 25.0, "final_div_factor": 1e4,
                 "anneal_strategy": "cos", "cycle_momentum": True, "base_momentum": 0.85,
                 "max_momentum": 0.95, "three_phase": False},
}
LIBRARY = {"sgd": optim.SGD, "adam": optim.Adam, "adamw": optim.AdamW,
           "rmsprop": optim.RMSprop}
LIBRARY_SCHED = {"step": optim.StepLR, "cosine": optim.CosineAnnealingLR,
                 "onecycle": optim.OneCycleLR}


def spec(name: str, **kw: Any) -> OptimizerSpec:
    return OptimizerSpec(name, {**DEFAULTS[name], **kw})


def sched_spec(name: str, **kw: Any) -> SchedulerSpec:
    return SchedulerSpec(name, {**SCHED_DEFAULTS[name], **kw})


# The optimizer cases of tests/optim/test_optim_vs_torch.py, as `.kyn` writes them.
OPT_CASES = [
    ("sgd", {}), ("sgd", {"weight_decay": 0.1}), ("sgd", {"momentum": 0.9}),
    ("sgd", {"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.05}),
    ("sgd", {"momentum": 0.8, "nesterov": True, "weight_decay": 0.01}),
    ("adam", {}), ("adam", {"weight_decay": 0.1}), ("adam", {"betas": (0.3, 0.9)}),
    ("adamw", {}), ("adamw", {"weight_decay": 0.3, "eps": 1e-6}),
    ("rmsprop", {}), ("rmsprop", {"weight_decay": 0.1}), ("rmsprop", {"momentum": 0.9}),
    ("rmsprop", {"centered": True}),
    ("rmsprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.05}),
    ("rmsprop", {"alpha": 0.3}), ("rmsprop", {"alpha": 0.3, "centered": True}),
]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name,kw", OPT_CASES,
                         ids=[f"{n}-{','.join(kw) or 'plain'}" for n, kw in OPT_CASES])
def test_optimizer_is_the_librarys(name: str, kw: dict[str, Any], dynamic: bool) -> None:
    opt = spec(name, **kw)
    config = LIBRARY[name](**opt.args)
    assert optimizer_config(opt) == config
    ours = build_update_function("f", opt, SHAPES, dynamic_momentum=dynamic)
    lib = optim.build_update_function("f", config, SHAPES, dynamic_momentum=dynamic)
    assert str(ours) == str(lib)
    assert state_names(opt, dynamic) == optim.state_names(config, dynamic)
    assert hyper_names(opt, dynamic) == optim.hyper_names(config, dynamic)
    assert has_momentum_path(opt, dynamic) == optim.has_momentum_path(config, dynamic)
    rt, lib_rt = OptimizerRuntime(opt, dynamic), optim.OptimizerRuntime(config, dynamic)
    assert rt.states == lib_rt.states and rt.hyper_names == lib_rt.hyper_names
    momentum = 0.7 if dynamic else None  # onecycle cycles momentum (Adam: beta1)
    for t in range(1, 6):
        lr = 0.01 * t
        assert rt.hyper(t, lr, momentum) == lib_rt.hyper(t, lr, momentum)


def test_momentum_needs_dynamic_build() -> None:
    rt = OptimizerRuntime(spec("sgd"))
    assert rt.states == () and rt.hyper_names == ("lr", "weight_decay")
    with pytest.raises(ValueError, match="dynamic_momentum"):
        rt.hyper(1, 0.1, 0.9)
    with pytest.raises(ValueError, match="dynamic_momentum"):
        OptimizerRuntime(spec("rmsprop")).hyper(1, 0.1, 0.5)
    assert OptimizerRuntime(spec("sgd"), dynamic_momentum=True).states == ("momentum_buffer",)
    assert state_names(spec("rmsprop", centered=True, momentum=0.1)) == STATES["rmsprop"]
    assert len(hyper_names(spec("adam"))) == len(OptimizerRuntime(spec("adamw")).hyper(1, 0.1))


def test_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown optimizer 'lamb'"):
        build_update_function("f", OptimizerSpec("lamb", {}), SHAPES)
    with pytest.raises(ValueError, match="unknown optimizer"):
        OptimizerRuntime(OptimizerSpec("adagrad", {}))
    with pytest.raises(ValueError, match="unknown scheduler 'plateau'"):
        Schedule(SchedulerSpec("plateau", {}), spec("sgd"), 3, 2)


EPOCHS, SPE = 7, 3
# The scheduler cases of tests/optim/test_optim_vs_torch.py, as `.kyn` writes them.
SCHED_CASES = [
    (None, {}),
    ("step", {"step_size": 2}),
    ("step", {"step_size": 3, "gamma": 0.5}),
    ("cosine", {}),
    ("cosine", {"T_max": 3, "eta_min": 1e-4}),
    ("cosine", {"T_max": 2}),
    ("onecycle", {"max_lr": 0.1}),
    ("onecycle", {"max_lr": 0.2, "anneal_strategy": "linear", "pct_start": 0.25}),
    ("onecycle", {"max_lr": 0.1, "three_phase": True}),
    ("onecycle", {"max_lr": 0.1, "three_phase": True, "anneal_strategy": "linear"}),
    ("onecycle", {"max_lr": 0.1, "cycle_momentum": False, "div_factor": 10.0,
                  "final_div_factor": 100.0}),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("opt_name", ["sgd", "adam", "rmsprop"])
@pytest.mark.parametrize("sname,skw", SCHED_CASES)
def test_schedule_is_the_librarys(opt_name: str, sname: str | None,
                                  skw: dict[str, Any]) -> None:
    opt = spec(opt_name, lr=0.05, **({"momentum": 0.9} if opt_name == "sgd" else {}))
    sched = sched_spec(sname, **skw) if sname else None
    s = Schedule(sched, opt, EPOCHS, SPE)
    config = None
    if sched is not None:
        config = LIBRARY_SCHED[sched.name](**sched.args)
        assert scheduler_config(sched) == config
    lib = optim.Schedule(config, optimizer_config(opt), EPOCHS, SPE)
    got = [s.lr_momentum(e, b) for e in range(EPOCHS) for b in range(SPE)]
    assert got == [lib.lr_momentum(e, b) for e in range(EPOCHS) for b in range(SPE)]
    assert s.cycles_momentum == lib.cycles_momentum
    assert s.cycles_momentum == bool(sname == "onecycle" and skw.get("cycle_momentum", True))


def test_schedule_bounds() -> None:
    s = Schedule(sched_spec("step", step_size=1), spec("sgd"), 2, 3)
    assert s.lr_momentum(1, 2) == (pytest.approx(1e-4), None)
    with pytest.raises(ValueError, match="outside"):
        s.lr_momentum(2, 0)
    with pytest.raises(ValueError, match="empty phase"):
        Schedule(sched_spec("onecycle", max_lr=0.1, pct_start=0.5), spec("sgd"), 1, 2)
