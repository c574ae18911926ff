"""The optimizer library (frame_mlir/optim/) against torch.optim, once for every frontend.

The update functions are built by the library and compiled once (one module holding
one function per structure: SGD with and without a momentum buffer, Adam/AdamW, the
four RMSprop variants, the reference format's SGD and Adam, and the data-parallel
variant); every argument combination runs on them with its own run-time
hyperparameters. Each case feeds the same random gradients to the compiled function
and to torch's single-tensor optimizer (foreach=False) for 5 steps and compares
parameters and states.

Tolerance rtol 1e-6, atol 5e-7: both sides evaluate the same float32 elementwise
formulas with the same float32-rounded scalars, so they differ only where torch's
vectorized kernels fuse a multiply-add into an FMA (`add(x, alpha=a)`, lerp) and our
loops round twice (the frame dialect has no elementwise FMA), and, for the reference
formulas, where their operation order differs from torch's: a few ulp per step. The
atol is 4 ulp of the O(1) operands: a parameter near 0 is a cancellation `p - lr d` of
O(1) values and carries their absolute error.

The schedules are compared with torch.optim.lr_scheduler over whole runs to 1e-12
relative (they are the same double-precision recursions; in practice equal).
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from xdsl.dialects import builtin  # noqa: E402

from frame_mlir import optim  # noqa: E402
from frame_mlir.nn.graph import Graph  # noqa: E402
from frame_mlir.runtime.executable import BoundFunction, compile_module  # noqa: E402

SHAPES = [("w", (3, 4)), ("b", (5,))]
STATS = [("bn.mean", (4,)), ("bn.var", (2, 3))]
STEPS = 5
RANKS = 4  # a power of two: the gradient's 1/N scale is exact
RTOL, ATOL = 1e-6, 5e-7
TORCH = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop"}

# One representative config per structure (the hyperparameters are run-time inputs):
# (function name, config, dynamic_momentum, data-parallel).
STRUCTURES: list[tuple[str, optim.OptimizerConfig, bool, bool]] = [
    ("sgd", optim.SGD(), False, False),
    ("sgd_mom", optim.SGD(), True, False),
    ("adam", optim.Adam(), False, False),
    ("rmsprop", optim.RMSprop(), False, False),
    ("rmsprop_mom", optim.RMSprop(), True, False),
    ("rmsprop_centered", optim.RMSprop(centered=True), False, False),
    ("rmsprop_mom_centered", optim.RMSprop(centered=True), True, False),
    ("sgd_reference", optim.SGD(formula="reference"), False, False),
    ("adam_reference", optim.Adam(formula="reference"), False, False),
    ("sgd_mom_dp", optim.SGD(), True, True),
    ("sgd_reference_dp", optim.SGD(formula="reference"), False, True),
]


def _key(config: optim.OptimizerConfig, dynamic: bool, dp: bool = False) -> str:
    """The compiled function serving `config`: the IR depends only on its structure."""
    parts = ["adam" if config.name == "adamw" else config.name]
    if config.name in ("sgd", "rmsprop") and config.formula == "torch" and (
            "momentum_buffer" in optim.state_names(config, dynamic)):
        parts.append("mom")
    if isinstance(config, optim.RMSprop) and config.centered:
        parts.append("centered")
    if config.formula == "reference":
        parts.append("reference")
    if dp:
        parts.append("dp")
    return "_".join(parts)


@pytest.fixture(scope="module")
def compiled() -> dict[str, BoundFunction]:
    fns = []
    for name, config, dynamic, dp in STRUCTURES:
        assert _key(config, dynamic, dp) == name
        fns.append(optim.build_update_function(
            name, config, SHAPES, dynamic_momentum=dynamic,
            grad_scale=1.0 / RANKS if dp else None, stats=STATS if dp else ()))
    ex = compile_module(builtin.ModuleOp(fns))
    return {f.sym_name.data: BoundFunction(ex, ex.signatures[f.sym_name.data]) for f in fns}


def _data(seed: int) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(np.float32) for _, s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for _, s in SHAPES]
             for _ in range(STEPS)]
    return params, grads


def run_ours(bound: BoundFunction, rt: optim.OptimizerRuntime, params: list[np.ndarray],
             grads: list[list[np.ndarray]], lr_mom: list[tuple[float | None, float | None]],
             stats: list[np.ndarray] = ()) -> tuple[list[np.ndarray], dict[str, list[np.ndarray]]]:
    ps = [p.copy() for p in params]
    states = {k: [np.zeros_like(p) for p in ps] for k in rt.states}
    hyper = [np.zeros((), np.float32) for _ in rt.hyper_names]
    for t, (gs, (lr, mom)) in enumerate(zip(grads, lr_mom, strict=True), start=1):
        for buf, v in zip(hyper, rt.hyper(t, lr, mom), strict=True):
            buf[()] = v
        bound.call([*ps, *gs, *(s for k in rt.states for s in states[k]), *stats, *hyper])
    return ps, states


def _torch_opt(config: optim.OptimizerConfig, params: list[Any]) -> Any:
    """torch's optimizer for `config` (a reference-convention SGD: its momentum only;
    `run_torch` applies the decay)."""
    kw = {f.name: getattr(config, f.name) for f in fields(config)
          if f.name not in ("formula", "weight_decay_convention")}
    if isinstance(config, optim.SGD) and config.weight_decay_convention == "reference":
        kw["weight_decay"] = 0.0
    return getattr(torch.optim, TORCH[config.name])(params, foreach=False, **kw)


def run_torch(config: optim.OptimizerConfig, params: list[np.ndarray],
              grads: list[list[np.ndarray]], sched: optim.SchedulerConfig | None = None,
              epochs: int = 1) -> tuple[list[np.ndarray], dict[str, list[np.ndarray | None]]]:
    ps = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in params]
    o = _torch_opt(config, ps)
    s = _torch_sched(sched, o, epochs, len(grads) // epochs) if sched else None
    # dlprimitives' decay: p *= 1 - weight_decay before the step, not scaled by lr
    keep = (1.0 - config.weight_decay if isinstance(config, optim.SGD)
            and config.weight_decay_convention == "reference" else None)
    for gs in grads:
        for p, g in zip(ps, gs, strict=True):
            p.grad = torch.from_numpy(g.copy())
            if keep is not None:
                with torch.no_grad():
                    p.mul_(keep)
        o.step()
        if s is not None:
            s.step()
    names = {"velocity": "momentum_buffer"}  # the reference SGD's name for torch's buffer
    kinds = optim.state_names(config, True)
    states = {k: [o.state[p][names.get(k, k)].numpy() if names.get(k, k) in o.state[p]
                  else None for p in ps] for k in kinds}
    return [p.detach().numpy() for p in ps], states


def _compare(config: optim.OptimizerConfig, dynamic: bool, compiled: dict[str, BoundFunction],
             seed: int, lr_mom: list[tuple[float | None, float | None]] | None = None,
             sched: optim.SchedulerConfig | None = None, epochs: int = 1) -> None:
    rt = optim.OptimizerRuntime(config, dynamic_momentum=dynamic)
    params, grads = _data(seed)
    ours, our_states = run_ours(compiled[_key(config, dynamic)], rt, params, grads,
                                lr_mom or [(None, None)] * STEPS)
    ref, ref_states = run_torch(config, params, grads, sched, epochs)
    for (name, _), a, b, p0 in zip(SHAPES, ours, ref, params, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"param {name}")
        assert not np.array_equal(a, p0)
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
    _compare(optim.SGD(lr=0.05, **kw), False, compiled, seed=1)


def test_sgd_dynamic_momentum_without_momentum(compiled: dict[str, BoundFunction]) -> None:
    # the momentum-path function with momentum 0 at every step is plain SGD
    _compare(optim.SGD(lr=0.05, weight_decay=0.1), True, compiled, seed=2)


@pytest.mark.parametrize("kw", [
    {}, {"momentum": 0.9}, {"weight_decay": 0.05, "momentum": 0.9},
    {"weight_decay": 0.05, "momentum": 0.9, "weight_decay_convention": "reference"},
    {"weight_decay": 0.1, "weight_decay_convention": "reference"},
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "plain")
def test_sgd_reference(compiled: dict[str, BoundFunction], kw: dict[str, Any]) -> None:
    """The reference format's SGD in both weight-decay conventions: PyTorch's is
    torch.optim.SGD; dlprimitives' scales p by 1 - weight_decay first (not by lr)."""
    _compare(optim.SGD(lr=0.05, formula="reference", **kw), False, compiled, seed=6)


@pytest.mark.parametrize("name,kw", [
    ("adam", {}), ("adam", {"weight_decay": 0.1}), ("adam", {"betas": (0.3, 0.9)}),
    ("adamw", {}), ("adamw", {"weight_decay": 0.3, "eps": 1e-6}),
])
def test_adam(compiled: dict[str, BoundFunction], name: str, kw: dict[str, Any]) -> None:
    # betas (0.3, ...) takes lerp's other branch (weight 1 - beta1 >= 0.5)
    _compare(optim.OPTIMIZERS[name](lr=0.01, **kw), False, compiled, seed=3)


@pytest.mark.parametrize("kw", [{}, {"weight_decay": 0.1}, {"betas": (0.5, 0.9)}],
                         ids=lambda kw: ",".join(kw) or "plain")
def test_adam_reference(compiled: dict[str, BoundFunction], kw: dict[str, Any]) -> None:
    _compare(optim.Adam(lr=0.01, formula="reference", **kw), False, compiled, seed=7)


@pytest.mark.parametrize("kw", [
    {}, {"weight_decay": 0.1}, {"momentum": 0.9}, {"centered": True},
    {"centered": True, "momentum": 0.5, "weight_decay": 0.05}, {"alpha": 0.3},
    {"alpha": 0.3, "centered": True},
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "plain")
def test_rmsprop(compiled: dict[str, BoundFunction], kw: dict[str, Any]) -> None:
    _compare(optim.RMSprop(**kw), False, compiled, seed=4)


@pytest.mark.parametrize("config", [
    optim.SGD(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    optim.SGD(lr=0.05, momentum=0.9, weight_decay=0.01, formula="reference",
              weight_decay_convention="reference"),
], ids=["torch", "reference"])
def test_data_parallel(compiled: dict[str, BoundFunction], config: optim.SGD) -> None:
    """`grad_scale = 1/N` on the ranks' summed gradients is the step on their mean, and
    the summed running statistics become the ranks' mean."""
    rt = optim.OptimizerRuntime(config, dynamic_momentum=config.formula == "torch")
    params, _ = _data(8)
    rng = np.random.default_rng(9)
    summed = [[sum(rng.standard_normal((RANKS, *s)).astype(np.float32)) for _, s in SHAPES]
              for _ in range(STEPS)]
    stats = [rng.standard_normal(s).astype(np.float32) for _, s in STATS]
    expected_stats = [s * np.float32(1.0 / RANKS ** STEPS) for s in stats]
    ours, _ = run_ours(compiled[_key(config, rt.dynamic_momentum, dp=True)], rt, params,
                       summed, [(None, None)] * STEPS, stats)
    mean = [[g * np.float32(1.0 / RANKS) for g in gs] for gs in summed]  # exact
    ref, _ = run_torch(config, params, mean)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    for a, b in zip(stats, expected_stats, strict=True):  # scaled once per step
        np.testing.assert_array_equal(a, b)


def test_fused_sgd_update() -> None:
    """v0's fused step `frame.sgd_update` is torch.optim.SGD's plain step; the rounded
    form (a float16/bfloat16 parameter, or an lr the op cannot hold) emits the scaled
    gradient first and updates with lr 1."""
    lr = 0.05
    g = Graph("step")
    p, gr = g.add_input((3, 4), "p"), g.add_input((3, 4), "g")
    upd = optim.rounded_sgd_update(p, gr, lr, float32=True,
                                   scaled_grad=lambda: pytest.fail("not rounded first"))
    assert upd.lr.value.data in (lr, float(np.float32(lr)))  # type: ignore[attr-defined]
    fn = g.finish([g.emit(upd)])
    ex = compile_module(builtin.ModuleOp([fn]))
    params, grads = _data(10)
    w, dw = params[0], grads[0][0]
    bound = BoundFunction(ex, ex.signatures["step"])
    bound.call([w.copy(), dw])
    out = bound.outputs[0]
    ref, _ = run_torch(optim.SGD(lr=lr), [w], [[dw]])
    np.testing.assert_allclose(out, ref[0], rtol=RTOL, atol=ATOL)

    g2 = Graph("rounded")
    p2, gr2 = g2.add_input((3,), "p"), g2.add_input((3,), "g")
    made: list[Any] = []

    def scaled() -> Any:
        made.append(g2.emit(optim.sgd_update(gr2, gr2, 1.0)))  # any value of g's type
        return made[-1]

    for kwargs in ({"lr": 1e-40, "float32": True}, {"lr": -0.5, "float32": True},
                   {"lr": 0.5, "float32": False}):
        upd = optim.rounded_sgd_update(p2, gr2, scaled_grad=scaled, **kwargs)
        assert upd.rhs is made[-1] and upd.lr.value.data == 1.0  # type: ignore[attr-defined]


def _torch_sched(sched: optim.SchedulerConfig, o: Any, epochs: int, steps_per_epoch: int
                 ) -> Any:
    kw = {f.name: getattr(sched, f.name) for f in fields(sched)}
    if isinstance(sched, optim.StepLR):
        return torch.optim.lr_scheduler.StepLR(o, **kw)
    if isinstance(sched, optim.CosineAnnealingLR):
        if kw["T_max"] is None:
            kw["T_max"] = epochs
        return torch.optim.lr_scheduler.CosineAnnealingLR(o, **kw)
    return torch.optim.lr_scheduler.OneCycleLR(o, epochs=epochs,
                                               steps_per_epoch=steps_per_epoch, **kw)


# Optimizers under onecycle: momentum (or beta1) changes every step. The base config's
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
    config = optim.OPTIMIZERS[name](**kw)
    sched = optim.OneCycleLR(max_lr=0.1, **skw)
    epochs, spe = 1, STEPS
    s = optim.Schedule(sched, config, epochs, spe)
    assert s.cycles_momentum and s.per_batch
    lr_mom = [s.lr_momentum(e, b) for e in range(epochs) for b in range(spe)]
    _compare(config, True, compiled, seed=5, lr_mom=lr_mom, sched=sched, epochs=epochs)


def test_momentum_needs_dynamic_build() -> None:
    rt = optim.OptimizerRuntime(optim.SGD())
    assert rt.states == () and rt.hyper_names == ("lr", "weight_decay")
    with pytest.raises(ValueError, match="dynamic_momentum"):
        rt.hyper(1, 0.1, 0.9)
    with pytest.raises(ValueError, match="dynamic_momentum"):
        optim.OptimizerRuntime(optim.RMSprop()).hyper(1, 0.1, 0.5)
    assert optim.OptimizerRuntime(optim.SGD(), dynamic_momentum=True).states == (
        "momentum_buffer",)
    assert optim.state_names(optim.RMSprop(centered=True, momentum=0.1)) == optim.STATES[
        "rmsprop"]
    assert optim.state_names(optim.SGD(formula="reference")) == ("velocity",)
    assert len(optim.hyper_names(optim.Adam())) == len(
        optim.OptimizerRuntime(optim.AdamW()).hyper(1, 0.1))


def test_bad_configs() -> None:
    with pytest.raises(TypeError, match="optimizer config"):
        optim.build_update_function("f", "sgd", SHAPES)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="formula"):
        optim.SGD(formula="dlprim")
    with pytest.raises(ValueError, match="needs formula='reference'"):
        optim.SGD(weight_decay_convention="reference")
    with pytest.raises(ValueError, match="no dampening or nesterov"):
        optim.SGD(momentum=0.9, nesterov=True, formula="reference")
    with pytest.raises(ValueError, match="stats are averaged by grad_scale"):
        optim.build_update_function("f", optim.SGD(), SHAPES, stats=STATS)
    with pytest.raises(ValueError, match="anneal_strategy"):
        optim.Schedule(optim.OneCycleLR(max_lr=0.1, anneal_strategy="exp"), optim.SGD(), 1, 5)


# --- schedules: whole runs against torch's ----------------------------------------------
EPOCHS, SPE = 7, 3


def _torch_sequence(config: optim.OptimizerConfig, sched: optim.SchedulerConfig | None
                    ) -> list[tuple[float, float]]:
    """torch's (lr, momentum) for every batch of an EPOCHS x SPE run (momentum: SGD's
    / RMSprop's group momentum, Adam's beta1)."""
    p = torch.nn.Parameter(torch.zeros(2))
    o = _torch_opt(config, [p])
    s = _torch_sched(sched, o, EPOCHS, SPE) if sched else None
    group = o.param_groups[0]
    out = []
    for _ in range(EPOCHS):
        for _ in range(SPE):
            mom = group["betas"][0] if "betas" in group else group["momentum"]
            out.append((group["lr"], mom))
            p.grad = torch.ones(2)
            o.step()
            if isinstance(sched, optim.OneCycleLR):
                s.step()
        if s is not None and not isinstance(sched, optim.OneCycleLR):
            s.step()
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) or a == b


SCHED_CASES: list[optim.SchedulerConfig | None] = [
    None,
    optim.StepLR(step_size=2),
    optim.StepLR(step_size=3, gamma=0.5),
    optim.CosineAnnealingLR(),
    optim.CosineAnnealingLR(T_max=3, eta_min=1e-4),  # past T_max: torch's special branch
    optim.CosineAnnealingLR(T_max=2),
    optim.OneCycleLR(max_lr=0.1),
    optim.OneCycleLR(max_lr=0.2, anneal_strategy="linear", pct_start=0.25),
    optim.OneCycleLR(max_lr=0.1, three_phase=True),
    optim.OneCycleLR(max_lr=0.1, three_phase=True, anneal_strategy="linear"),
    optim.OneCycleLR(max_lr=0.1, cycle_momentum=False, div_factor=10.0,
                     final_div_factor=100.0),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("config", [optim.SGD(lr=0.05, momentum=0.9), optim.Adam(lr=0.05),
                                    optim.RMSprop(lr=0.05)], ids=["sgd", "adam", "rmsprop"])
@pytest.mark.parametrize("sched", SCHED_CASES, ids=repr)
def test_schedule(config: optim.OptimizerConfig, sched: optim.SchedulerConfig | None) -> None:
    s = optim.Schedule(sched, config, EPOCHS, SPE)
    ref = _torch_sequence(config, sched)
    own_mom = optim.OptimizerRuntime(config).base_momentum
    got = [s.lr_momentum(e, b) for e in range(EPOCHS) for b in range(SPE)]
    for k, ((lr, mom), (tlr, tmom)) in enumerate(zip(got, ref, strict=True)):
        assert _close(lr, tlr), (k, lr, tlr)
        assert _close(own_mom if mom is None else mom, tmom), (k, mom, tmom)
    assert s.cycles_momentum == (isinstance(sched, optim.OneCycleLR) and sched.cycle_momentum)


def test_schedule_bounds() -> None:
    s = optim.Schedule(optim.StepLR(step_size=1), optim.SGD(), 2, 3)
    assert s.lr_momentum(1, 2) == (pytest.approx(1e-4), None)
    with pytest.raises(ValueError, match="outside"):
        s.lr_momentum(2, 0)
    with pytest.raises(ValueError, match="empty phase"):
        optim.Schedule(optim.OneCycleLR(max_lr=0.1, pct_start=0.5), optim.SGD(), 1, 2)
    assert replace(optim.SGD(), lr=0.5).lr == 0.5  # configs are plain frozen dataclasses
