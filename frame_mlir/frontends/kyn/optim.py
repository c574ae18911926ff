"""The `.kyn` optimizers and learning-rate schedulers, PyTorch-exact.

Optimizers (`sgd`, `adam`, `adamw`, `rmsprop`) are update functions in frame IR, built
like `frontends/network/solvers.py`: one function updates every trainable parameter and
its optimizer state in place (each new value is `frame.update %old, <expression>` and the
old value's argument is donated with `frame.aliasing_output`, so frame-fuse-elementwise
makes each update one loop writing into the tensor's own buffer). Every hyperparameter
that may change between steps is a rank-0 run-time input, so a scheduler never causes a
recompilation. The formulas follow torch.optim's single-tensor implementations
(torch 2.13) operation by operation, in the same order and with the same float32
roundings of the scalars, so results agree with PyTorch to a few ulp:

    sgd      g' = g + wd p
             buf' = buf_keep buf + buf_grad g'          (momentum path only)
             p' = p - lr (dir_grad g' + dir_buf buf')   (without momentum: p - lr g')
    adam(w)  p1 = keep p;  g' = g + decay_grad p1
             m' = (lerp_keep m + lerp_take g') + lerp_w (g' - m)      (torch's lerp_)
             v' = beta2 v + ((1 - beta2) g') g'
             p' = p1 + (neg_step m') / (sqrt(v') / sqrt_bc2 + eps)
    rmsprop  g' = g + wd p;  s' = alpha s + ((1 - alpha) g') g'
             centered: a' = lerp(a, g', 1 - alpha);  avg = sqrt(s' - a' a') + eps
             otherwise avg = sqrt(s') + eps
             momentum path: buf' = buf_keep buf + buf_in (g' / avg)
                            p' = (p + dir_buf buf') + (dir_grad g') / avg
             otherwise      p' = p + (neg_lr g') / avg

The coefficients (`buf_keep`, `lerp_keep`, ...) select torch's branches at run time
with exact arithmetic (multiplying by 1 or 0 and adding 0 do not round): SGD's first
momentum step (`buf = grad`, no dampening), a step whose momentum is 0 (torch skips
the buffer), nesterov, and lerp's two formulas (`weight < 0.5` or not; beta1 can be
cycled across that bound). Only "is there a momentum buffer at all" is structural:
pass `dynamic_momentum=True` whenever a scheduler can make momentum non-zero (onecycle
cycles SGD's and RMSprop's `momentum`, Adam's beta1) -- a momentum that the function
cannot apply is an error in `OptimizerRuntime.hyper`, never a silent divergence.

Schedulers (`step`, `cosine`, `onecycle`) mirror torch.optim.lr_scheduler's sequences
exactly, replaying its recursive formulas in double precision (`Schedule`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.frontends.kyn.module import OptimizerSpec, SchedulerSpec
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.common import set_arg_attr

__all__ = ["OPTIMIZERS", "SCHEDULERS", "STATES", "OptimizerRuntime", "Schedule",
           "build_update_function", "has_momentum_path", "hyper_names", "state_names"]

OPTIMIZERS = ("sgd", "adam", "adamw", "rmsprop")
SCHEDULERS = ("step", "cosine", "onecycle")

#: Every per-parameter state tensor an optimizer may keep (torch's state names), in
#: argument order; `state_names` gives the ones a given configuration uses.
STATES: dict[str, tuple[str, ...]] = {
    "sgd": ("momentum_buffer",),
    "adam": ("exp_avg", "exp_avg_sq"),
    "adamw": ("exp_avg", "exp_avg_sq"),
    "rmsprop": ("square_avg", "momentum_buffer", "grad_avg"),
}

_SGD_HYPER = ("lr", "weight_decay")
_SGD_MOMENTUM_HYPER = ("lr", "weight_decay", "buf_keep", "buf_grad", "dir_grad", "dir_buf")
_ADAM_HYPER = ("decay_grad", "keep", "lerp_keep", "lerp_take", "lerp_w", "beta2",
               "one_minus_beta2", "neg_step", "sqrt_bc2", "eps")
_RMSPROP_BASE = ("weight_decay", "alpha", "one_minus_alpha", "eps")
_RMSPROP_CENTERED = ("lerp_keep", "lerp_take", "lerp_w")
_RMSPROP_MOMENTUM = ("buf_keep", "buf_in", "dir_buf", "dir_grad")
_RMSPROP_PLAIN = ("neg_lr",)


def _check_optimizer(name: str) -> None:
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}: expected one of "
                         f"{', '.join(OPTIMIZERS)}")


def has_momentum_path(opt: OptimizerSpec, dynamic_momentum: bool = False) -> bool:
    """Whether the update function of `opt` keeps a momentum buffer: SGD with
    momentum != 0, RMSprop with momentum > 0 (torch's own tests), or either of them
    with `dynamic_momentum` (a scheduler may make momentum non-zero). Adam has none."""
    _check_optimizer(opt.name)
    if opt.name == "sgd":
        return dynamic_momentum or float(opt.args["momentum"]) != 0.0
    if opt.name == "rmsprop":
        return dynamic_momentum or float(opt.args["momentum"]) > 0.0
    return False


def state_names(opt: OptimizerSpec, dynamic_momentum: bool = False) -> tuple[str, ...]:
    """The state tensors the update function of `opt` takes and returns, in argument
    order (a subset of `STATES[opt.name]`, each shaped like its parameter, zeros
    initially as in torch): no SGD buffer without momentum, RMSprop's
    `momentum_buffer` with momentum and `grad_avg` when centered."""
    _check_optimizer(opt.name)
    mom = has_momentum_path(opt, dynamic_momentum)
    if opt.name == "sgd":
        return STATES["sgd"] if mom else ()
    if opt.name == "rmsprop":
        used = {"square_avg": True, "momentum_buffer": mom,
                "grad_avg": bool(opt.args["centered"])}
        return tuple(k for k in STATES["rmsprop"] if used[k])
    return STATES[opt.name]


def hyper_names(opt: OptimizerSpec, dynamic_momentum: bool = False) -> tuple[str, ...]:
    """The rank-0 hyperparameter inputs of the update function of `opt`, in argument
    order (the module docstring gives their formulas)."""
    _check_optimizer(opt.name)
    mom = has_momentum_path(opt, dynamic_momentum)
    if opt.name == "sgd":
        return _SGD_MOMENTUM_HYPER if mom else _SGD_HYPER
    if opt.name == "rmsprop":
        return (_RMSPROP_BASE + (_RMSPROP_CENTERED if opt.args["centered"] else ())
                + (_RMSPROP_MOMENTUM if mom else _RMSPROP_PLAIN))
    return _ADAM_HYPER


def build_update_function(name: str, opt: OptimizerSpec,
                          shapes: Sequence[tuple[str, tuple[int, ...]]],
                          dynamic_momentum: bool = False) -> func.FuncOp:
    """The update function `@<name>` of optimizer `opt` for the trainable parameters
    `shapes` (name, shape), marked `frame.inference` (it is not differentiated).

    Arguments, in order: the n parameters; their n gradients; for each state kind of
    `state_names(opt, dynamic_momentum)`, that state of every parameter (kind-major);
    then the rank-0 hyperparameters `hyper_names(opt, dynamic_momentum)`, whose values
    for a step are `OptimizerRuntime.hyper`. Results: the new parameters, then the new
    states in the same order, each computed in its argument's buffer
    (`frame.aliasing_output`). Every tensor is taken flat (1-D, its element count):
    the update is elementwise and host buffers are contiguous, so each update is one
    unit-stride loop that vectorizes whatever the parameter's layout.

    `dynamic_momentum`: build SGD's / RMSprop's momentum buffer even when `opt`'s
    momentum is 0, because a scheduler (onecycle) may make it non-zero at run time."""
    _check_optimizer(opt.name)
    flat = [(n, (math.prod(s),)) for n, s in shapes]
    kinds = state_names(opt, dynamic_momentum)
    g = Graph(name)
    params = [g.add_input(s, n) for n, s in flat]
    grads = [g.add_input(s, f"{n}.grad") for n, s in flat]
    states = {k: [g.add_input(s, f"{n}.{k}") for n, s in flat] for k in kinds}
    h = {n: g.add_input((), n) for n in hyper_names(opt, dynamic_momentum)}
    mom = has_momentum_path(opt, dynamic_momentum)

    def mul(a: SSAValue, b: SSAValue) -> SSAValue:
        return g.emit(frame.MulOp(a, b))

    def add(a: SSAValue, b: SSAValue) -> SSAValue:
        return g.emit(frame.AddOp(a, b))

    def sub(a: SSAValue, b: SSAValue) -> SSAValue:
        return g.emit(frame.SubOp(a, b))

    def div(a: SSAValue, b: SSAValue) -> SSAValue:
        return g.emit(frame.DivOp(a, b))

    def update(dest: SSAValue, value: SSAValue) -> SSAValue:
        return g.emit(frame.UpdateOp(dest, value))

    def lerp(start: SSAValue, end: SSAValue) -> SSAValue:
        # torch's lerp: weight < 0.5 ? start + w (end - start)
        #                            : end - (end - start) (1 - w)
        # as (keep start + take end) + coef (end - start) with (keep, take, coef) =
        # (1, 0, w) or (0, 1, w - 1): exact either way, chosen at run time.
        base = add(mul(h["lerp_keep"], start), mul(h["lerp_take"], end))
        return add(base, mul(h["lerp_w"], sub(end, start)))

    new_params: list[SSAValue] = []
    new_states: dict[str, list[SSAValue]] = {k: [] for k in kinds}
    for i, (p, gr) in enumerate(zip(params, grads, strict=True)):
        with g.scope(flat[i][0]):
            if opt.name == "sgd":
                gd = add(gr, mul(h["weight_decay"], p))  # grad.add(param, alpha=wd)
                if mom:
                    buf = states["momentum_buffer"][i]
                    # buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    buf_new = update(buf, add(mul(h["buf_keep"], buf),
                                              mul(h["buf_grad"], gd)))
                    new_states["momentum_buffer"].append(buf_new)
                    d = add(mul(h["dir_grad"], gd), mul(h["dir_buf"], buf_new))
                else:
                    d = gd
                # param.add_(d, alpha=-lr): p + (-lr) d == p - lr d bit for bit
                p_new = update(p, sub(p, mul(h["lr"], d)))
            elif opt.name in ("adam", "adamw"):
                # AdamW's param.mul_(1 - lr wd) comes first; Adam's keep is 1 (exact)
                p1 = mul(h["keep"], p)
                gd = add(gr, mul(h["decay_grad"], p1))
                m, v = states["exp_avg"][i], states["exp_avg_sq"][i]
                m_new = update(m, lerp(m, gd))
                # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2);
                # addcmul computes self + (value * t1) * t2
                v_new = update(v, add(mul(h["beta2"], v),
                                      mul(mul(h["one_minus_beta2"], gd), gd)))
                denom = add(div(g.emit(frame.SqrtOp(v_new)), h["sqrt_bc2"]), h["eps"])
                # param.addcdiv_(exp_avg, denom, value=-step_size): p + (v m) / d
                p_new = update(p, add(p1, div(mul(h["neg_step"], m_new), denom)))
                new_states["exp_avg"].append(m_new)
                new_states["exp_avg_sq"].append(v_new)
            else:  # rmsprop
                gd = add(gr, mul(h["weight_decay"], p))
                s = states["square_avg"][i]
                s_new = update(s, add(mul(h["alpha"], s),
                                      mul(mul(h["one_minus_alpha"], gd), gd)))
                new_states["square_avg"].append(s_new)
                if "grad_avg" in states:
                    a = states["grad_avg"][i]
                    a_new = update(a, lerp(a, gd))
                    new_states["grad_avg"].append(a_new)
                    # square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_():
                    # s + (-a) a == s - a a exactly
                    avg = add(g.emit(frame.SqrtOp(sub(s_new, mul(a_new, a_new)))),
                              h["eps"])
                else:
                    avg = add(g.emit(frame.SqrtOp(s_new)), h["eps"])
                if mom:
                    buf = states["momentum_buffer"][i]
                    # buf.mul_(momentum).addcdiv_(grad, avg); param.add_(buf, -lr)
                    buf_new = update(buf, add(mul(h["buf_keep"], buf),
                                              mul(h["buf_in"], div(gd, avg))))
                    new_states["momentum_buffer"].append(buf_new)
                    p_new = update(p, add(add(p, mul(h["dir_buf"], buf_new)),
                                          div(mul(h["dir_grad"], gd), avg)))
                else:
                    # param.addcdiv_(grad, avg, value=-lr): p + (-lr g) / avg
                    p_new = update(p, add(p, div(mul(h["neg_lr"], gd), avg)))
            new_params.append(p_new)
    fn = g.finish([*new_params, *(v for k in kinds for v in new_states[k])])
    fn.attributes["frame.inference"] = builtin.UnitAttr()
    n = len(flat)
    for i in range(n):
        set_arg_attr(fn, i, "frame.aliasing_output", builtin.IntegerAttr(i, 64))
    for k_idx in range(len(kinds)):
        for i in range(n):
            set_arg_attr(fn, 2 * n + k_idx * n + i, "frame.aliasing_output",
                         builtin.IntegerAttr(n + k_idx * n + i, 64))
    return fn


def _f32(x: float) -> float:
    """`x` rounded to float32, as torch rounds a Python scalar for a float32 kernel
    (`Scalar.to<float>()`)."""
    return float(np.float32(x))


def _lerp_coefs(weight: float) -> list[float]:
    """(keep, take, coef) of torch's lerp with scalar `weight` (see `lerp` in
    `build_update_function`). torch rounds the weight to float32 first, tests
    `|w| < 0.5` on it and forms `1 - w` in float32; w - 1 is its exact negation."""
    w = np.float32(weight)
    if abs(w) < np.float32(0.5):
        return [1.0, 0.0, float(w)]
    return [0.0, 1.0, float(w - np.float32(1.0))]


class OptimizerRuntime:
    """Host-side bookkeeping of one optimizer: which states and hyperparameters its
    update function takes, and their values at each step.

    Call `hyper(t, lr, momentum)` once per step, t = 1, 2, ... in order (t = 1 starts
    a fresh run); it returns the values of `hyper_names` in argument order. The update
    function's arguments are (params..., grads..., states... (kind-major, `states`
    order), hyper...) and its results (params..., states...); see
    `build_update_function`."""

    def __init__(self, opt: OptimizerSpec, dynamic_momentum: bool = False):
        _check_optimizer(opt.name)
        self.opt = opt
        self.dynamic_momentum = dynamic_momentum
        self.states: tuple[str, ...] = state_names(opt, dynamic_momentum)
        self.hyper_names: tuple[str, ...] = hyper_names(opt, dynamic_momentum)
        self.momentum_path = has_momentum_path(opt, dynamic_momentum)
        #: SGD: the step that first wrote the momentum buffer (torch's state has no
        #: 'momentum_buffer' before it, and that step sets buf = grad); None while
        #: unwritten. A checkpoint restore sets it with the buffer.
        self.momentum_buffer_from: int | None = None

    def build(self, name: str, shapes: Sequence[tuple[str, tuple[int, ...]]]) -> func.FuncOp:
        """`build_update_function(name, self.opt, shapes, self.dynamic_momentum)`."""
        return build_update_function(name, self.opt, shapes, self.dynamic_momentum)

    @property
    def base_momentum(self) -> float:
        """The optimizer's own momentum: SGD's / RMSprop's `momentum`, Adam's beta1."""
        if self.opt.name in ("adam", "adamw"):
            return float(self.opt.args["betas"][0])
        return float(self.opt.args["momentum"])

    def hyper(self, t: int, lr: float, momentum: float | None = None) -> list[float]:
        """The hyperparameter values of step `t` (1-based) at learning rate `lr` and
        `momentum` (SGD / RMSprop momentum, Adam's beta1; None: the optimizer's own),
        in `hyper_names` order.

        Raises:
            ValueError: `momentum` needs a momentum buffer the function was built
                without (build with `dynamic_momentum=True`).
        """
        if t < 1:
            raise ValueError(f"optimizer step must be >= 1, found {t}")
        a = self.opt.args
        mom = self.base_momentum if momentum is None else float(momentum)
        lr = float(lr)
        name = self.opt.name
        if name == "sgd":
            wd = float(a["weight_decay"])
            if not self.momentum_path:
                if mom != 0.0:
                    raise ValueError(f"sgd: momentum {mom} at step {t}, but the update "
                                     "function was built without momentum "
                                     "(dynamic_momentum=False)")
                return [_f32(lr), _f32(wd)]
            if t == 1:
                self.momentum_buffer_from = None
            if mom != 0.0 and (self.momentum_buffer_from is None
                               or t < self.momentum_buffer_from):
                self.momentum_buffer_from = t
            if mom == 0.0:  # torch skips the buffer: d = grad, buffer unchanged
                coefs = [1.0, 0.0, 1.0, 0.0]
            else:
                assert self.momentum_buffer_from is not None
                if self.momentum_buffer_from == t:  # buf = grad.clone(): no dampening
                    keep, take = 0.0, 1.0
                else:
                    keep, take = _f32(mom), _f32(1.0 - float(a["dampening"]))
                # nesterov: d = grad + momentum buf; otherwise d = buf
                d = [1.0, _f32(mom)] if a["nesterov"] else [0.0, 1.0]
                coefs = [keep, take, *d]
            return [_f32(lr), _f32(wd), *coefs]
        if name in ("adam", "adamw"):
            beta1 = mom
            beta2 = float(a["betas"][1])
            wd = float(a["weight_decay"])
            if name == "adamw":  # param.mul_(1 - lr * weight_decay), skipped at wd 0
                decay_grad, keep = 0.0, (1.0 - lr * wd if wd != 0 else 1.0)
            else:
                decay_grad, keep = wd, 1.0
            # torch: step is the float32 step tensor's item(); beta ** step in double
            step = float(np.float32(t))
            bc1 = 1 - beta1 ** step
            bc2 = 1 - beta2 ** step
            step_size = lr / bc1
            return [_f32(decay_grad), _f32(keep), *_lerp_coefs(1 - beta1), _f32(beta2),
                    _f32(1 - beta2), _f32(-step_size), _f32(bc2 ** 0.5),
                    _f32(float(a["eps"]))]
        # rmsprop
        alpha = float(a["alpha"])
        out = [_f32(float(a["weight_decay"])), _f32(alpha), _f32(1 - alpha),
               _f32(float(a["eps"]))]
        if a["centered"]:
            out += _lerp_coefs(1 - alpha)
        if not self.momentum_path:
            if mom > 0.0:
                raise ValueError(f"rmsprop: momentum {mom} at step {t}, but the update "
                                 "function was built without momentum "
                                 "(dynamic_momentum=False)")
            return [*out, _f32(-lr)]
        if mom > 0.0:  # buf = momentum buf + grad / avg; p -= lr buf
            return [*out, _f32(mom), 1.0, _f32(-lr), 0.0]
        # momentum 0 (torch's `momentum > 0` is false): buffer kept, p -= lr grad / avg
        return [*out, 1.0, 0.0, 0.0, _f32(-lr)]


class Schedule:
    """The learning rate (and momentum) of every training step, as torch.optim's
    scheduler `sched` would set them on an optimizer built from `opt`, for a run of
    `epochs` epochs of `steps_per_epoch` batches (the last, smaller batch included).

    `step` and `cosine` step once per epoch (`scheduler.step()` after each epoch),
    `onecycle` once per batch (total_steps = epochs x steps_per_epoch). Without a
    scheduler the optimizer's lr is constant. Values are computed in double precision
    with torch's own formulas, recursions included (StepLR multiplies the previous lr
    by gamma, CosineAnnealingLR scales the previous lr by a cosine ratio), so they are
    the very floats torch puts in `param_groups`."""

    def __init__(self, sched: SchedulerSpec | None, opt: OptimizerSpec, epochs: int,
                 steps_per_epoch: int):
        _check_optimizer(opt.name)
        if sched is not None and sched.name not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {sched.name!r}: expected one of "
                             f"{', '.join(SCHEDULERS)}")
        if epochs < 1 or steps_per_epoch < 1:
            raise ValueError(f"schedule: epochs and steps_per_epoch must be >= 1, found "
                             f"{epochs} and {steps_per_epoch}")
        self.sched = sched
        self.opt = opt
        self.epochs = epochs
        self.steps_per_epoch = steps_per_epoch
        self.total_steps = epochs * steps_per_epoch
        #: whether the schedule sets momentum (onecycle's cycle_momentum): the update
        #: function must then be built with dynamic_momentum=True
        self.cycles_momentum = bool(sched is not None and sched.name == "onecycle"
                                    and sched.args["cycle_momentum"])
        #: once per batch (onecycle) rather than once per epoch
        self.per_batch = sched is not None and sched.name == "onecycle"
        base_lr = float(opt.args["lr"])
        self._epoch_lrs: list[float] | None = None
        self._onecycle: Callable[[int], tuple[float, float | None]] | None = None
        if sched is None:
            self._epoch_lrs = [base_lr] * epochs
        elif sched.name == "step":
            self._epoch_lrs = _step_lrs(base_lr, sched.args, epochs)
        elif sched.name == "cosine":
            self._epoch_lrs = _cosine_lrs(base_lr, sched.args, epochs)
        else:
            self._onecycle = _onecycle(sched.args, self.total_steps)
            try:  # torch fails at construction (step 0) on an empty warm-up phase
                self._onecycle(0)
            except ZeroDivisionError:
                raise ValueError(
                    f"onecycle: pct_start {sched.args['pct_start']} x total_steps "
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


def _step_lrs(base_lr: float, args: dict, epochs: int) -> list[float]:
    """StepLR's lr of epochs 0..epochs-1: `lr *= gamma` whenever last_epoch is a
    non-zero multiple of step_size (torch's recursive get_lr, not base * gamma^k)."""
    step_size, gamma = int(args["step_size"]), args["gamma"]
    lrs = [base_lr]
    for e in range(1, epochs):
        lr = lrs[-1]
        lrs.append(lr * gamma if e % step_size == 0 else lr)
    return lrs


def _cosine_lrs(base_lr: float, args: dict, epochs: int) -> list[float]:
    """CosineAnnealingLR's lr of epochs 0..epochs-1, replaying torch's recursion
    (including its branch for last_epoch = T_max + 1 (mod 2 T_max), where the ratio's
    denominator is 0), so the values are torch's bit for bit."""
    t_max = args.get("T_max")
    if t_max is None:
        t_max = epochs
    eta_min = args.get("eta_min", 0.0)
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


def _onecycle(args: dict, total_steps: int) -> Callable[[int], tuple[float, float | None]]:
    """OneCycleLR's (lr, momentum) at scheduler step `k` (0 = the construction), its
    get_lr verbatim: phases end at float(pct_start * total) - 1 (and 2 pct_start total
    - 2 with three_phase) and total - 1; the lr starts at max_lr / div_factor."""
    max_lr = args["max_lr"]
    pct_start = args["pct_start"]
    initial_lr = max_lr / args["div_factor"]
    values = {"initial_lr": initial_lr, "max_lr": max_lr,
              "min_lr": initial_lr / args["final_div_factor"],
              "max_momentum": args["max_momentum"], "base_momentum": args["base_momentum"]}
    if args["three_phase"]:
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
    strategy = args["anneal_strategy"]
    if strategy not in ("cos", "linear"):
        raise ValueError(f"onecycle: anneal_strategy must be 'cos' or 'linear', found "
                         f"{strategy!r}")

    def anneal(start: float, end: float, pct: float) -> float:
        if strategy == "cos":
            cos_out = math.cos(math.pi * pct) + 1
            return end + (start - end) / 2.0 * cos_out
        return (end - start) * pct + start

    cycle = bool(args["cycle_momentum"])

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
