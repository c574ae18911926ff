"""The `.kyn` optimizers and schedulers (frame_mlir/frontends/kyn/optim.py) against torch.optim.

The update functions are compiled once (one module holding one function per structure:
SGD with and without a momentum buffer, Adam/AdamW, the four RMSprop variants) and
every argument combination runs on them with its own run-time hyperparameters. Each
case feeds the same random gradients to the compiled function and to torch's
single-tensor optimizer (foreach=False) for 5 steps and compares parameters and states.

Tolerance rtol 1e-6, atol 5e-7: both sides evaluate the same float32 elementwise
formulas in the same order with the same float32-rounded scalars, so they differ only
where torch's vectorized kernels fuse a multiply-add into an FMA (`add(x, alpha=a)`,
lerp) and our loops round twice (the frame dialect has no elementwise FMA, and the
JIT does not contract): ~1 ulp per fused operation and step, measured up to ~10 ulp
after 5 steps (Adam and AdamW are bit-exact). The atol is 4 ulp of the O(1) operands:
a parameter near 0 is a cancellation `p - lr d` of O(1) values and carries their
absolute error, not one relative to itself.

Schedulers are compared with torch's over whole runs to 1e-12 relative (they are the
same double-precision recursions; in practice the values are equal).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frame_mlir.frontends.kyn.module import OptimizerSpec, SchedulerSpec  # noqa: E402
from frame_mlir.frontends.kyn.optim import (  # noqa: E402
    STATES,
    OptimizerRuntime,
    Schedule,
    build_update_function,
    hyper_names,
    state_names,
)
from frame_mlir.runtime.executable import BoundFunction  # noqa: E402

SHAPES = [("w", (3, 4)), ("b", (5,))]
STEPS = 5
RTOL, ATOL = 1e-6, 5e-7
DEFAULTS: dict[str, dict[str, Any]] = {
    "sgd": {"lr": 0.001, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
            "nesterov": False},
    "adam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0},
    "adamw": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01},
    "rmsprop": {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
                "momentum": 0.0, "centered": False},
}
TORCH = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop"}
SCHED_DEFAULTS: dict[str, dict[str, Any]] = {
    "step": {"gamma": 0.1},
    "cosine": {"T_max": None, "eta_min": 0.0},
    "onecycle": {"pct_start": 0.3, "div_factor": 25.0, "final_div_factor": 1e4,
                 "anneal_strategy": "cos", "cycle_momentum": True, "base_momentum": 0.85,
                 "max_momentum": 0.95, "three_phase": False},
}


def spec(name: str, **kw: Any) -> OptimizerSpec:
    return OptimizerSpec(name, {**DEFAULTS[name], **kw})


def sched_spec(name: str, **kw: Any) -> SchedulerSpec:
    return SchedulerSpec(name, {**SCHED_DEFAULTS[name], **kw})


def _key(opt: OptimizerSpec, dynamic: bool) -> str:
    """The compiled function serving `opt`: the IR depends only on its structure."""
    family = "adam" if opt.name == "adamw" else opt.name
    parts = [family]
    if opt.name in ("sgd", "rmsprop") and "momentum_buffer" in state_names(opt, dynamic):
        parts.append("mom")
    if opt.name == "rmsprop" and opt.args["centered"]:
        parts.append("centered")
    return "_".join(parts)


# One representative spec per structure (hyperparameters are run-time inputs).
STRUCTURES = [
    (spec("sgd"), False), (spec("sgd"), True), (spec("adam"), False),
    (spec("rmsprop"), False), (spec("rmsprop"), True),
    (spec("rmsprop", centered=True), False), (spec("rmsprop", centered=True), True),
]


@pytest.fixture(scope="module")
def compiled() -> dict[str, BoundFunction]:
    from xdsl.dialects import builtin

    from frame_mlir.runtime.executable import compile_module

    fns = [build_update_function(_key(o, d), o, SHAPES, dynamic_momentum=d)
           for o, d in STRUCTURES]
    assert len({f.sym_name.data for f in fns}) == len(fns)
    ex = compile_module(builtin.ModuleOp(fns))
    return {f.sym_name.data: BoundFunction(ex, ex.signatures[f.sym_name.data]) for f in fns}


def _data(seed: int) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(np.float32) for _, s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for _, s in SHAPES]
             for _ in range(STEPS)]
    return params, grads


def run_ours(bound: BoundFunction, rt: OptimizerRuntime, params: list[np.ndarray],
             grads: list[list[np.ndarray]], lr_mom: list[tuple[float, float | None]]
             ) -> tuple[list[np.ndarray], dict[str, list[np.ndarray]]]:
    ps = [p.copy() for p in params]
    states = {k: [np.zeros_like(p) for p in ps] for k in rt.states}
    hyper = [np.zeros((), np.float32) for _ in rt.hyper_names]
    assert len(bound.sig.args) >= 2 * len(ps) + len(states) * len(ps) + len(hyper)
    for t, (gs, (lr, mom)) in enumerate(zip(grads, lr_mom, strict=True), start=1):
        for buf, v in zip(hyper, rt.hyper(t, lr, mom), strict=True):
            buf[()] = v
        bound.call([*ps, *gs, *(s for k in rt.states for s in states[k]), *hyper])
    return ps, states


def _torch_opt(opt: OptimizerSpec, params: list[Any]) -> Any:
    return getattr(torch.optim, TORCH[opt.name])(params, foreach=False, **opt.args)


def run_torch(opt: OptimizerSpec, params: list[np.ndarray], grads: list[list[np.ndarray]],
              sched: SchedulerSpec | None = None, epochs: int = 1
              ) -> tuple[list[np.ndarray], dict[str, list[np.ndarray | None]]]:
    ps = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in params]
    o = _torch_opt(opt, ps)
    s = _torch_sched(sched, o, epochs, len(grads) // epochs) if sched else None
    for gs in grads:
        for p, g in zip(ps, gs, strict=True):
            p.grad = torch.from_numpy(g.copy())
        o.step()
        if s is not None:
            s.step()
    states = {k: [o.state[p][k].numpy() if k in o.state[p] else None for p in ps]
              for k in STATES[opt.name]}
    return [p.detach().numpy() for p in ps], states


def _compare(opt: OptimizerSpec, dynamic: bool, compiled: dict[str, BoundFunction], seed: int,
             lr_mom: list[tuple[float, float | None]] | None = None,
             sched: SchedulerSpec | None = None, epochs: int = 1) -> None:
    rt = OptimizerRuntime(opt, dynamic_momentum=dynamic)
    bound = compiled[_key(opt, dynamic)]
    params, grads = _data(seed)
    if lr_mom is None:
        lr_mom = [(opt.args["lr"], None)] * STEPS
    ours, our_states = run_ours(bound, rt, params, grads, lr_mom)
    ref, ref_states = run_torch(opt, params, grads, sched, epochs)
    for name, a, b in zip([n for n, _ in SHAPES], ours, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"param {name}")
        assert not np.array_equal(a, params[[n for n, _ in SHAPES].index(name)])
    for k in rt.states:
        for a, b in zip(our_states[k], ref_states[k], strict=True):
            if b is not None:
                np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"state {k}")


SGD_CASES = [
    {},
    {"weight_decay": 0.1},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.05},
    {"momentum": 0.8, "nesterov": True, "weight_decay": 0.01},
]


@pytest.mark.parametrize("kw", SGD_CASES, ids=lambda kw: ",".join(kw) or "plain")
def test_sgd(compiled: dict[str, BoundFunction], kw: dict[str, Any]) -> None:
    _compare(spec("sgd", lr=0.05, **kw), False, compiled, seed=1)


def test_sgd_dynamic_momentum_without_momentum(compiled: dict[str, BoundFunction]) -> None:
    # the momentum-path function with momentum 0 at every step is plain SGD
    _compare(spec("sgd", lr=0.05, weight_decay=0.1), True, compiled, seed=2)


@pytest.mark.parametrize("name,kw", [
    ("adam", {}), ("adam", {"weight_decay": 0.1}), ("adam", {"betas": (0.3, 0.9)}),
    ("adamw", {}), ("adamw", {"weight_decay": 0.3, "eps": 1e-6}),
])
def test_adam(compiled: dict[str, BoundFunction], name: str, kw: dict[str, Any]) -> None:
    # betas (0.3, ...) takes lerp's other branch (weight 1 - beta1 >= 0.5)
    _compare(spec(name, lr=0.01, **kw), False, compiled, seed=3)


@pytest.mark.parametrize("kw", [
    {}, {"weight_decay": 0.1}, {"momentum": 0.9}, {"centered": True},
    {"centered": True, "momentum": 0.5, "weight_decay": 0.05}, {"alpha": 0.3},
    {"alpha": 0.3, "centered": True},
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "plain")
def test_rmsprop(compiled: dict[str, BoundFunction], kw: dict[str, Any]) -> None:
    _compare(spec("rmsprop", **kw), False, compiled, seed=4)


def _torch_sched(sched: SchedulerSpec, o: Any, epochs: int, steps_per_epoch: int) -> Any:
    a = dict(sched.args)
    if sched.name == "step":
        return torch.optim.lr_scheduler.StepLR(o, **a)
    if sched.name == "cosine":
        if a["T_max"] is None:
            a["T_max"] = epochs
        return torch.optim.lr_scheduler.CosineAnnealingLR(o, **a)
    return torch.optim.lr_scheduler.OneCycleLR(o, epochs=epochs,
                                               steps_per_epoch=steps_per_epoch, **a)


# Optimizers under onecycle: momentum (or beta1) changes every step. The base spec's
# momentum is 0 for SGD/RMSprop, so only dynamic_momentum builds the buffer torch uses.
ONECYCLE_CASES = [
    ("sgd", {}, {}),
    ("sgd", {"dampening": 0.2}, {"anneal_strategy": "linear"}),
    ("sgd", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01}, {}),
    # momentum exactly 0 at the phase boundary (pct 1 at step 2): torch skips the buffer
    ("sgd", {}, {"base_momentum": 0.0, "pct_start": 0.5, "anneal_strategy": "linear"}),
    # momentum 0 at the first step: the buffer starts (buf = grad) at step 2
    ("sgd", {"dampening": 0.5}, {"max_momentum": 0.0, "base_momentum": 0.9}),
    ("adam", {"weight_decay": 0.01}, {}),
    ("adamw", {}, {"base_momentum": 0.3}),  # beta1 crosses lerp's 0.5 bound
    ("rmsprop", {}, {}),
    ("rmsprop", {"centered": True}, {"base_momentum": 0.0, "pct_start": 0.5,
                                     "anneal_strategy": "linear"}),
]


@pytest.mark.parametrize("name,kw,skw", ONECYCLE_CASES)
def test_onecycle_training(compiled: dict[str, BoundFunction], name: str, kw: dict[str, Any],
                           skw: dict[str, Any]) -> None:
    opt = spec(name, **kw)
    sched = sched_spec("onecycle", max_lr=0.1, **skw)
    epochs, spe = 1, STEPS
    s = Schedule(sched, opt, epochs, spe)
    assert s.cycles_momentum and s.per_batch
    lr_mom = [s.lr_momentum(e, b) for e in range(epochs) for b in range(spe)]
    _compare(opt, True, compiled, seed=5, lr_mom=lr_mom, sched=sched, epochs=epochs)


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


# --- schedulers: whole runs against torch's --------------------------------------------
EPOCHS, SPE = 7, 3


def _torch_sequence(opt: OptimizerSpec, sched: SchedulerSpec | None
                    ) -> list[tuple[float, float]]:
    """torch's (lr, momentum) for every batch of an EPOCHS x SPE run (momentum: SGD's
    / RMSprop's group momentum, Adam's beta1)."""
    p = torch.nn.Parameter(torch.zeros(2))
    o = _torch_opt(opt, [p])
    s = _torch_sched(sched, o, EPOCHS, SPE) if sched else None
    group = o.param_groups[0]
    out = []
    for _ in range(EPOCHS):
        for _ in range(SPE):
            mom = group["betas"][0] if "betas" in group else group["momentum"]
            out.append((group["lr"], mom))
            p.grad = torch.ones(2)
            o.step()
            if s is not None and sched is not None and sched.name == "onecycle":
                s.step()
        if s is not None and sched is not None and sched.name != "onecycle":
            s.step()
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) or a == b


SCHED_CASES = [
    (None, {}),
    ("step", {"step_size": 2}),
    ("step", {"step_size": 3, "gamma": 0.5}),
    ("cosine", {}),
    ("cosine", {"T_max": 3, "eta_min": 1e-4}),  # past T_max: torch's special branch
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
def test_schedule(opt_name: str, sname: str | None, skw: dict[str, Any]) -> None:
    opt = spec(opt_name, lr=0.05, **({"momentum": 0.9} if opt_name == "sgd" else {}))
    sched = sched_spec(sname, **skw) if sname else None
    s = Schedule(sched, opt, EPOCHS, SPE)
    ref = _torch_sequence(opt, sched)
    own_mom = OptimizerRuntime(opt).base_momentum
    got = [s.lr_momentum(e, b) for e in range(EPOCHS) for b in range(SPE)]
    for k, ((lr, mom), (tlr, tmom)) in enumerate(zip(got, ref, strict=True)):
        assert _close(lr, tlr), (k, lr, tlr)
        assert _close(own_mom if mom is None else mom, tmom), (k, mom, tmom)
    assert s.cycles_momentum == bool(sname == "onecycle" and skw.get("cycle_momentum", True))


def test_schedule_bounds() -> None:
    s = Schedule(sched_spec("step", step_size=1), spec("sgd"), 2, 3)
    assert s.lr_momentum(1, 2) == (pytest.approx(1e-4), None)
    with pytest.raises(ValueError, match="outside"):
        s.lr_momentum(2, 0)
    with pytest.raises(ValueError, match="empty phase"):
        Schedule(sched_spec("onecycle", max_lr=0.1, pct_start=0.5), spec("sgd"), 1, 2)
