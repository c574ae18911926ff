"""The optimizers' update functions in frame IR, and the host side that feeds them.

One function updates every trainable parameter and its optimizer state in place: each
new value is `frame.update %old, <expression>` and the old value's argument is donated
(`frame.aliasing_output`), so frame-fuse-elementwise makes each update one loop writing
into the tensor's own buffer. Every hyperparameter that may change between steps is a
rank-0 run-time input, so a new learning rate (a schedule) never recompiles.

`formula="torch"` follows torch.optim's single-tensor implementations (torch 2.13)
operation by operation, in the same order and with the same float32 roundings of the
scalars, so results agree with PyTorch to a few ulp:

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
pass `dynamic_momentum=True` whenever a schedule can make momentum non-zero (onecycle
cycles SGD's and RMSprop's `momentum`, Adam's beta1) -- a momentum that the function
cannot apply is an error in `OptimizerRuntime.hyper`, never a silent divergence.

`formula="reference"` is the reference format's (dlprimitives'), which the JSON
networks compile; its operations come in their own order, kept so their bits stay:

    sgd      g' = g + decay_grad p;  v' = g' + momentum v;  p' = keep p - lr v'
    adam     g' = g + decay p;  m' = b1 m + (1-b1) g';  v' = b2 v + (1-b2) (g' g')
             p' = p - (step m') / (sqrt(v') / sqrt_bc2 + eps)

Its one SGD function serves both weight-decay conventions: (decay_grad, keep) is
(weight_decay, 1) in PyTorch's and (0, 1 - weight_decay) in dlprimitives' (the decay is
not scaled by lr). Adam's `step` = lr / (1 - b1^t) and `sqrt_bc2` = sqrt(1 - b2^t).

A data-parallel job of N ranks passes the ranks' summed gradients and builds with
`grad_scale = 1/N`: `g * (1/N)` comes first, so the average is taken in the compiled
loop, and the running statistics summed with them (`stats`) become `s * (1/N)`. One
process never emits these ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.dialects.ir_utils import set_arg_attr
from frame_mlir.nn.graph import Graph
from frame_mlir.optim.config import SGD, Adam, AdamW, OptimizerConfig, RMSprop

__all__ = ["REFERENCE_STATES", "STATES", "OptimizerRuntime", "build_update_function", "has_momentum_path",
           "hyper_names", "state_names"]

#: Every per-parameter state tensor a torch-formula optimizer may keep (torch's state
#: names), in argument order; `state_names` gives the ones a configuration uses.
STATES: dict[str, tuple[str, ...]] = {
    "sgd": ("momentum_buffer",),
    "adam": ("exp_avg", "exp_avg_sq"),
    "adamw": ("exp_avg", "exp_avg_sq"),
    "rmsprop": ("square_avg", "momentum_buffer", "grad_avg"),
}
#: The reference formulas' states (the JSON networks' names, in their checkpoints).
REFERENCE_STATES: dict[str, tuple[str, ...]] = {
    "sgd": ("velocity",),
    "adam": ("exp_avg", "exp_avg_sq"),
}

_SGD_HYPER = ("lr", "weight_decay")
_SGD_MOMENTUM_HYPER = ("lr", "weight_decay", "buf_keep", "buf_grad", "dir_grad", "dir_buf")
_ADAM_HYPER = ("decay_grad", "keep", "lerp_keep", "lerp_take", "lerp_w", "beta2",
               "one_minus_beta2", "neg_step", "sqrt_bc2", "eps")
_RMSPROP_BASE = ("weight_decay", "alpha", "one_minus_alpha", "eps")
_RMSPROP_CENTERED = ("lerp_keep", "lerp_take", "lerp_w")
_RMSPROP_MOMENTUM = ("buf_keep", "buf_in", "dir_buf", "dir_grad")
_RMSPROP_PLAIN = ("neg_lr",)
_REFERENCE_SGD_HYPER = ("lr", "momentum", "decay_grad", "keep")
_REFERENCE_ADAM_HYPER = ("decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2",
                         "step", "sqrt_bc2", "eps")


def _check_config(config: object) -> None:
    if not isinstance(config, SGD | Adam | AdamW | RMSprop):
        raise TypeError(f"expected an optimizer config (frame_mlir.optim.SGD, Adam, AdamW "
                        f"or RMSprop), found {type(config).__name__}")


def has_momentum_path(config: OptimizerConfig, dynamic_momentum: bool = False) -> bool:
    """Whether the update function of `config` keeps a momentum buffer: SGD with
    momentum != 0, RMSprop with momentum > 0 (torch's own tests), or either of them
    with `dynamic_momentum` (a schedule may make momentum non-zero); the reference
    SGD always (its velocity). Adam has none."""
    _check_config(config)
    if isinstance(config, SGD):
        return (config.formula == "reference" or dynamic_momentum
                or float(config.momentum) != 0.0)
    if isinstance(config, RMSprop):
        return dynamic_momentum or float(config.momentum) > 0.0
    return False


def state_names(config: OptimizerConfig, dynamic_momentum: bool = False) -> tuple[str, ...]:
    """The state tensors the update function of `config` takes and returns, in argument
    order, each shaped like its parameter and zeros initially (as in torch): no SGD
    buffer without momentum, RMSprop's `momentum_buffer` with momentum and `grad_avg`
    when centered; the reference formulas' `REFERENCE_STATES`."""
    _check_config(config)
    if config.formula == "reference":
        return REFERENCE_STATES[config.name]
    mom = has_momentum_path(config, dynamic_momentum)
    if isinstance(config, SGD):
        return STATES["sgd"] if mom else ()
    if isinstance(config, RMSprop):
        used = {"square_avg": True, "momentum_buffer": mom, "grad_avg": bool(config.centered)}
        return tuple(k for k in STATES["rmsprop"] if used[k])
    return STATES[config.name]


def hyper_names(config: OptimizerConfig, dynamic_momentum: bool = False) -> tuple[str, ...]:
    """The rank-0 hyperparameter inputs of the update function of `config`, in argument
    order (the module docstring gives their formulas)."""
    _check_config(config)
    if config.formula == "reference":
        return _REFERENCE_SGD_HYPER if isinstance(config, SGD) else _REFERENCE_ADAM_HYPER
    mom = has_momentum_path(config, dynamic_momentum)
    if isinstance(config, SGD):
        return _SGD_MOMENTUM_HYPER if mom else _SGD_HYPER
    if isinstance(config, RMSprop):
        return (_RMSPROP_BASE + (_RMSPROP_CENTERED if config.centered else ())
                + (_RMSPROP_MOMENTUM if mom else _RMSPROP_PLAIN))
    return _ADAM_HYPER


class _Emitter:
    """The elementwise ops of the update formulas, appended to `g` in call order (the
    order fixes the IR, and so the printed functions the tests pin)."""

    def __init__(self, g: Graph, h: dict[str, SSAValue]):
        self.g, self.h = g, h

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.g.emit(frame.MulOp(a, b))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.g.emit(frame.AddOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.g.emit(frame.SubOp(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.g.emit(frame.DivOp(a, b))

    def sqrt(self, a: SSAValue) -> SSAValue:
        return self.g.emit(frame.SqrtOp(a))

    def update(self, dest: SSAValue, value: SSAValue) -> SSAValue:
        return self.g.emit(frame.UpdateOp(dest, value))

    def lerp(self, start: SSAValue, end: SSAValue) -> SSAValue:
        """torch's lerp: weight < 0.5 ? start + w (end - start) : end - (end - start)
        (1 - w), as (keep start + take end) + coef (end - start) with (keep, take, coef)
        = (1, 0, w) or (0, 1, w - 1): exact either way, chosen at run time."""
        h = self.h
        base = self.add(self.mul(h["lerp_keep"], start), self.mul(h["lerp_take"], end))
        return self.add(base, self.mul(h["lerp_w"], self.sub(end, start)))


#: One parameter's update: (ops, momentum path, parameter, gradient, its states by
#: kind) -> (new parameter, new states by kind).
_Body = Callable[[_Emitter, bool, SSAValue, SSAValue, dict[str, SSAValue]],
                 tuple[SSAValue, dict[str, SSAValue]]]


def _sgd(e: _Emitter, mom: bool, p: SSAValue, gr: SSAValue, st: dict[str, SSAValue]
         ) -> tuple[SSAValue, dict[str, SSAValue]]:
    h, new = e.h, {}
    gd = e.add(gr, e.mul(h["weight_decay"], p))  # grad.add(param, alpha=wd)
    if mom:
        buf = st["momentum_buffer"]
        # buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        buf_new = e.update(buf, e.add(e.mul(h["buf_keep"], buf), e.mul(h["buf_grad"], gd)))
        new["momentum_buffer"] = buf_new
        d = e.add(e.mul(h["dir_grad"], gd), e.mul(h["dir_buf"], buf_new))
    else:
        d = gd
    # param.add_(d, alpha=-lr): p + (-lr) d == p - lr d bit for bit
    return e.update(p, e.sub(p, e.mul(h["lr"], d))), new


def _adam(e: _Emitter, mom: bool, p: SSAValue, gr: SSAValue, st: dict[str, SSAValue]
          ) -> tuple[SSAValue, dict[str, SSAValue]]:
    h = e.h
    # AdamW's param.mul_(1 - lr wd) comes first; Adam's keep is 1 (exact)
    p1 = e.mul(h["keep"], p)
    gd = e.add(gr, e.mul(h["decay_grad"], p1))
    m, v = st["exp_avg"], st["exp_avg_sq"]
    m_new = e.update(m, e.lerp(m, gd))
    # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2);
    # addcmul computes self + (value * t1) * t2
    v_new = e.update(v, e.add(e.mul(h["beta2"], v), e.mul(e.mul(h["one_minus_beta2"], gd),
                                                          gd)))
    denom = e.add(e.div(e.sqrt(v_new), h["sqrt_bc2"]), h["eps"])
    # param.addcdiv_(exp_avg, denom, value=-step_size): p + (v m) / d
    p_new = e.update(p, e.add(p1, e.div(e.mul(h["neg_step"], m_new), denom)))
    return p_new, {"exp_avg": m_new, "exp_avg_sq": v_new}


def _rmsprop(e: _Emitter, mom: bool, p: SSAValue, gr: SSAValue, st: dict[str, SSAValue]
             ) -> tuple[SSAValue, dict[str, SSAValue]]:
    h, new = e.h, {}
    gd = e.add(gr, e.mul(h["weight_decay"], p))
    s = st["square_avg"]
    s_new = e.update(s, e.add(e.mul(h["alpha"], s), e.mul(e.mul(h["one_minus_alpha"], gd),
                                                          gd)))
    new["square_avg"] = s_new
    if "grad_avg" in st:
        a = st["grad_avg"]
        a_new = e.update(a, e.lerp(a, gd))
        new["grad_avg"] = a_new
        # square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_(): s + (-a) a == s - a a
        avg = e.add(e.sqrt(e.sub(s_new, e.mul(a_new, a_new))), h["eps"])
    else:
        avg = e.add(e.sqrt(s_new), h["eps"])
    if mom:
        buf = st["momentum_buffer"]
        # buf.mul_(momentum).addcdiv_(grad, avg); param.add_(buf, -lr)
        buf_new = e.update(buf, e.add(e.mul(h["buf_keep"], buf),
                                      e.mul(h["buf_in"], e.div(gd, avg))))
        new["momentum_buffer"] = buf_new
        p_new = e.update(p, e.add(e.add(p, e.mul(h["dir_buf"], buf_new)),
                                  e.div(e.mul(h["dir_grad"], gd), avg)))
    else:
        # param.addcdiv_(grad, avg, value=-lr): p + (-lr g) / avg
        p_new = e.update(p, e.add(p, e.div(e.mul(h["neg_lr"], gd), avg)))
    return p_new, new


def _reference_sgd(e: _Emitter, mom: bool, p: SSAValue, gr: SSAValue,
                   st: dict[str, SSAValue]) -> tuple[SSAValue, dict[str, SSAValue]]:
    h = e.h
    gd = e.add(gr, e.mul(h["decay_grad"], p))
    v = st["velocity"]
    v_new = e.update(v, e.add(gd, e.mul(h["momentum"], v)))
    p_new = e.update(p, e.sub(e.mul(h["keep"], p), e.mul(h["lr"], v_new)))
    return p_new, {"velocity": v_new}


def _reference_adam(e: _Emitter, mom: bool, p: SSAValue, gr: SSAValue,
                    st: dict[str, SSAValue]) -> tuple[SSAValue, dict[str, SSAValue]]:
    h = e.h
    gd = e.add(gr, e.mul(h["decay"], p))
    m, v = st["exp_avg"], st["exp_avg_sq"]
    m_new = e.update(m, e.add(e.mul(h["beta1"], m), e.mul(h["one_minus_beta1"], gd)))
    v_new = e.update(v, e.add(e.mul(h["beta2"], v), e.mul(h["one_minus_beta2"],
                                                          e.mul(gd, gd))))
    denom = e.add(e.div(e.sqrt(v_new), h["sqrt_bc2"]), h["eps"])
    step = e.div(e.mul(h["step"], m_new), denom)
    return e.update(p, e.sub(p, step)), {"exp_avg": m_new, "exp_avg_sq": v_new}


_BODIES: dict[tuple[str, str], _Body] = {
    ("sgd", "torch"): _sgd, ("adam", "torch"): _adam, ("adamw", "torch"): _adam,
    ("rmsprop", "torch"): _rmsprop,
    ("sgd", "reference"): _reference_sgd, ("adam", "reference"): _reference_adam,
}


def build_update_function(name: str, config: OptimizerConfig,
                          shapes: Sequence[tuple[str, tuple[int, ...]]], *,
                          dynamic_momentum: bool = False, grad_scale: float | None = None,
                          stats: Sequence[tuple[str, tuple[int, ...]]] = ()) -> func.FuncOp:
    """The update function `@<name>` of optimizer `config` for the trainable parameters
    `shapes` (name, shape), marked `frame.inference` (it is not differentiated).

    Arguments, in order: the n parameters; their n gradients; for each state kind of
    `state_names(config, dynamic_momentum)`, that state of every parameter (kind-major);
    the running statistics `stats` (data-parallel only); then the rank-0
    hyperparameters `hyper_names(config, dynamic_momentum)`, whose values for a step are
    `OptimizerRuntime.hyper`. Results: the new parameters, then the new states in the
    same order, then the new statistics, each computed in its argument's buffer
    (`frame.aliasing_output`). Every tensor is taken flat (1-D, its element count): the
    update is elementwise and host buffers are contiguous, so each update is one
    unit-stride loop that vectorizes whatever the parameter's layout (a [cout, cin, 3,
    3] weight kept 4-D would leave a 3-long innermost loop).

    `dynamic_momentum`: build SGD's / RMSprop's momentum buffer even when the config's
    momentum is 0, because a schedule (onecycle) may make it non-zero at run time.
    `grad_scale` (1/N for N ranks) multiplies each gradient first (`g' = g *
    grad_scale`, exact for a power-of-two N), and every running statistic of `stats`
    becomes `s * grad_scale`, the ranks' mean; without them nothing of this is emitted.
    """
    _check_config(config)
    if stats and grad_scale is None:
        raise ValueError("build_update_function: stats are averaged by grad_scale; give it")
    flat = [(n, (math.prod(s),)) for n, s in shapes]
    stat_shapes = [(n, (math.prod(s),)) for n, s in stats]
    kinds = state_names(config, dynamic_momentum)
    g = Graph(name)
    params = [g.add_input(s, n) for n, s in flat]
    grads = [g.add_input(s, f"{n}.grad") for n, s in flat]
    states = {k: [g.add_input(s, f"{n}.{k}") for n, s in flat] for k in kinds}
    stat_args = [g.add_input(s, f"{n}.sum") for n, s in stat_shapes]
    h = {n: g.add_input((), n) for n in hyper_names(config, dynamic_momentum)}
    mom = has_momentum_path(config, dynamic_momentum)
    body = _BODIES[(config.name, config.formula)]
    e = _Emitter(g, h)

    new_params: list[SSAValue] = []
    new_states: dict[str, list[SSAValue]] = {k: [] for k in kinds}
    for i, (p, gr) in enumerate(zip(params, grads, strict=True)):
        with g.scope(flat[i][0]):
            if grad_scale is not None:  # the ranks' sum -> the global batch's gradient
                gr = g.emit(frame.ScaleOp(gr, grad_scale))
            p_new, st_new = body(e, mom, p, gr, {k: states[k][i] for k in kinds})
            new_params.append(p_new)
            for k in kinds:
                new_states[k].append(st_new[k])
    new_stats = []
    for (stat_name, _), s in zip(stat_shapes, stat_args, strict=True):
        with g.scope(stat_name):
            assert grad_scale is not None
            new_stats.append(g.emit(frame.UpdateOp(s, g.emit(frame.ScaleOp(s, grad_scale)))))
    fn = g.finish([*new_params, *(v for k in kinds for v in new_states[k]), *new_stats])
    fn.attributes["frame.inference"] = builtin.UnitAttr()
    n = len(flat)
    for i in range(n):
        set_arg_attr(fn, i, "frame.aliasing_output", builtin.IntegerAttr(i, 64))
    for k_idx in range(len(kinds)):
        for i in range(n):
            set_arg_attr(fn, 2 * n + k_idx * n + i, "frame.aliasing_output",
                         builtin.IntegerAttr(n + k_idx * n + i, 64))
    for j in range(len(stat_shapes)):  # after the parameters, gradients and states
        set_arg_attr(fn, (2 + len(kinds)) * n + j, "frame.aliasing_output",
                     builtin.IntegerAttr((1 + len(kinds)) * n + j, 64))
    return fn


def _f32(x: float) -> float:
    """`x` rounded to float32, as torch rounds a Python scalar for a float32 kernel
    (`Scalar.to<float>()`)."""
    return float(np.float32(x))


def _lerp_coefs(weight: float) -> list[float]:
    """(keep, take, coef) of torch's lerp with scalar `weight` (`_Emitter.lerp`). torch
    rounds the weight to float32 first, tests `|w| < 0.5` on it and forms `1 - w` in
    float32; w - 1 is its exact negation."""
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
    `build_update_function`. The reference formulas keep no host state: their values
    depend on the step and the config only."""

    def __init__(self, config: OptimizerConfig, dynamic_momentum: bool = False):
        _check_config(config)
        self.config = config
        self.dynamic_momentum = dynamic_momentum
        self.states: tuple[str, ...] = state_names(config, dynamic_momentum)
        self.hyper_names: tuple[str, ...] = hyper_names(config, dynamic_momentum)
        self.momentum_path = has_momentum_path(config, dynamic_momentum)
        #: SGD: the step that first wrote the momentum buffer (torch's state has no
        #: 'momentum_buffer' before it, and that step sets buf = grad); None while
        #: unwritten. A checkpoint restore sets it with the buffer.
        self.momentum_buffer_from: int | None = None

    def build(self, name: str, shapes: Sequence[tuple[str, tuple[int, ...]]], *,
              grad_scale: float | None = None,
              stats: Sequence[tuple[str, tuple[int, ...]]] = ()) -> func.FuncOp:
        """This optimizer's `build_update_function`."""
        return build_update_function(name, self.config, shapes,
                                     dynamic_momentum=self.dynamic_momentum,
                                     grad_scale=grad_scale, stats=stats)

    @property
    def base_momentum(self) -> float:
        """The optimizer's own momentum: SGD's / RMSprop's `momentum`, Adam's beta1."""
        c = self.config
        if isinstance(c, Adam | AdamW):
            return float(c.betas[0])
        return float(c.momentum)

    def hyper(self, t: int, lr: float | None = None, momentum: float | None = None
              ) -> list[float]:
        """The hyperparameter values of step `t` (1-based) at learning rate `lr` (None:
        the config's) and `momentum` (SGD / RMSprop momentum, Adam's beta1; None: the
        config's), in `hyper_names` order.

        Raises:
            ValueError: `momentum` needs a momentum buffer the function was built
                without (build with `dynamic_momentum=True`).
        """
        if t < 1:
            raise ValueError(f"optimizer step must be >= 1, found {t}")
        c = self.config
        if c.formula == "reference":
            return _reference_hyper(c, t, lr, momentum)
        mom = self.base_momentum if momentum is None else float(momentum)
        lr = float(c.lr if lr is None else lr)
        if isinstance(c, SGD):
            return self._sgd_hyper(c, t, lr, mom)
        if isinstance(c, Adam | AdamW):
            beta1 = mom
            beta2 = float(c.betas[1])
            wd = float(c.weight_decay)
            if isinstance(c, AdamW):  # param.mul_(1 - lr * weight_decay), skipped at wd 0
                decay_grad, keep = 0.0, (1.0 - lr * wd if wd != 0 else 1.0)
            else:
                decay_grad, keep = wd, 1.0
            # torch: step is the float32 step tensor's item(); beta ** step in double
            step = float(np.float32(t))
            bc1 = 1 - beta1 ** step
            bc2 = 1 - beta2 ** step
            step_size = lr / bc1
            return [_f32(decay_grad), _f32(keep), *_lerp_coefs(1 - beta1), _f32(beta2),
                    _f32(1 - beta2), _f32(-step_size), _f32(bc2 ** 0.5), _f32(float(c.eps))]
        alpha = float(c.alpha)
        out = [_f32(float(c.weight_decay)), _f32(alpha), _f32(1 - alpha), _f32(float(c.eps))]
        if c.centered:
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

    def _sgd_hyper(self, c: SGD, t: int, lr: float, mom: float) -> list[float]:
        wd = float(c.weight_decay)
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
                keep, take = _f32(mom), _f32(1.0 - float(c.dampening))
            # nesterov: d = grad + momentum buf; otherwise d = buf
            d = [1.0, _f32(mom)] if c.nesterov else [0.0, 1.0]
            coefs = [keep, take, *d]
        return [_f32(lr), _f32(wd), *coefs]


def _reference_hyper(c: SGD | Adam, t: int, lr: float | None, momentum: float | None
                     ) -> list[float]:
    """The reference formulas' values, in double precision (the float32 argument
    buffers round them): SGD's (lr, momentum, decay_grad, keep) in its weight-decay
    convention; Adam's (decay, b1, 1 - b1, b2, 1 - b2, lr / (1 - b1^t),
    sqrt(1 - b2^t), eps)."""
    lr = c.lr if lr is None else lr
    if isinstance(c, SGD):
        mom = c.momentum if momentum is None else momentum
        if c.weight_decay_convention == "torch":
            return [lr, mom, c.weight_decay, 1.0]
        return [lr, mom, 0.0, 1.0 - c.weight_decay]
    beta1 = c.betas[0] if momentum is None else momentum
    beta2 = c.betas[1]
    bc1 = 1.0 - beta1 ** t
    bc2 = 1.0 - beta2 ** t
    return [c.weight_decay, beta1, 1.0 - beta1, beta2, 1.0 - beta2, lr / bc1,
            math.sqrt(bc2), c.eps]
