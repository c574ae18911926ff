"""The solvers' update steps as frame IR: one function per solver that updates every
trainable parameter and its state in place, with the hyperparameters as run-time
inputs (changing the learning rate between steps does not recompile).

    @<net>_sgd(p..., g..., v..., lr, momentum, decay_grad, keep) -> (p'..., v'...)
        g' = g + decay_grad * p;  v' = g' + momentum * v;  p' = keep * p - lr * v'
    @<net>_adam(p..., g..., m..., v..., decay, b1, 1-b1, b2, 1-b2, step, sqrt_bc2, eps)
        g' = g + decay * p;  m' = b1 m + (1-b1) g';  v' = b2 v + (1-b2) g'^2
        p' = p - step * m' / (sqrt(v') / sqrt_bc2 + eps)

One SGD function serves both weight-decay conventions: dlprimitives' (decay_grad 0,
keep 1 - weight_decay: the decay is not scaled by lr) and PyTorch's (decay_grad
weight_decay, keep 1). Adam is torch.optim.Adam with L2 weight decay, which is also
dlprimitives' Adam; `step` = lr / (1 - b1^t) and `sqrt_bc2` = sqrt(1 - b2^t) come from
the host's step count t. Each new value is `frame.update %old, <expression>`, and the
old value's argument is donated (`frame.aliasing_output`), so frame-fuse-elementwise
makes each update one loop writing into the parameter's (or state's) own buffer.

A data-parallel job of N ranks (`frame_mlir/frontends/network/data_parallel.py`) compiles the
variant with `grad_scale = 1/N`: the gradients passed are the ranks' sum, and `g * (1/N)`
comes first, so the average is taken in the compiled loop, not on the host; the
BatchNorm running statistics the ranks summed with them are arguments too (`s' = s *
(1/N)`). One process never emits these ops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.common import set_arg_attr

SGD_HYPER = ("lr", "momentum", "decay_grad", "keep")
ADAM_HYPER = ("decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "step",
              "sqrt_bc2", "eps")
#: Per-parameter state tensors of each solver, in argument order.
STATES = {"sgd": ("velocity",), "adam": ("exp_avg", "exp_avg_sq")}


def build_update_function(name: str, solver: str,
                          shapes: Sequence[tuple[str, tuple[int, ...]]], *,
                          grad_scale: float | None = None,
                          stats: Sequence[tuple[str, tuple[int, ...]]] = ()
                          ) -> func.FuncOp:
    """The update function of `solver` ("sgd" or "adam") for the trainable parameters
    `shapes` (name, shape), marked `frame.inference` (it is not differentiated).

    Arguments: the parameters, their gradients, each state kind for every parameter,
    then the rank-0 hyperparameters; results: the new parameters then the new states,
    each computed in its argument's buffer. Every tensor is taken flat (1-D, its
    element count): the update is elementwise and the host buffers are contiguous, so
    each update is one unit-stride loop that vectorizes, whatever the parameter's
    layout (a [cout, cin, 3, 3] weight kept 4-D would leave a 3-long innermost loop).

    Data-parallel training (`frame_mlir/frontends/network/data_parallel.py`) passes the ranks'
    summed gradients: `grad_scale` (1/N) multiplies each gradient first (`g' = g *
    grad_scale`; exact for a power-of-two N), and every running statistic of `stats`
    (the BatchNorm statistics the ranks summed along with the gradients) becomes
    `s * grad_scale`, the ranks' mean: those are extra arguments after the states and
    extra results after the new states, each updated in its own buffer. Without them
    (one process) nothing of this is emitted, so that IR is unchanged."""
    if stats and grad_scale is None:
        raise ValueError("build_update_function: stats are averaged by grad_scale; give it")
    shapes = [(n, (math.prod(s),)) for n, s in shapes]
    stat_shapes = [(n, (math.prod(s),)) for n, s in stats]
    g = Graph(name)
    params = [g.add_input(s, n) for n, s in shapes]
    grads = [g.add_input(s, f"{n}.grad") for n, s in shapes]
    states = {k: [g.add_input(s, f"{n}.{k}") for n, s in shapes] for k in STATES[solver]}
    stat_args = [g.add_input(s, f"{n}.sum") for n, s in stat_shapes]
    hyper_names = SGD_HYPER if solver == "sgd" else ADAM_HYPER
    hyper = {h: g.add_input((), h) for h in hyper_names}

    def mul(a: SSAValue, b: SSAValue) -> SSAValue:
        return g.emit(frame.MulOp(a, b))

    def add(a: SSAValue, b: SSAValue) -> SSAValue:
        return g.emit(frame.AddOp(a, b))

    new_params: list[SSAValue] = []
    new_states: dict[str, list[SSAValue]] = {k: [] for k in STATES[solver]}
    for i, (p, gr) in enumerate(zip(params, grads, strict=True)):
        with g.scope(shapes[i][0]):
            if grad_scale is not None:  # the ranks' sum -> the global batch's gradient
                gr = g.emit(frame.ScaleOp(gr, grad_scale))
            if solver == "sgd":
                gd = add(gr, mul(hyper["decay_grad"], p))
                v = states["velocity"][i]
                v_new = g.emit(frame.UpdateOp(v, add(gd, mul(hyper["momentum"], v))))
                p_new = g.emit(frame.UpdateOp(p, g.emit(frame.SubOp(
                    mul(hyper["keep"], p), mul(hyper["lr"], v_new)))))
                new_states["velocity"].append(v_new)
            else:
                gd = add(gr, mul(hyper["decay"], p))
                m, v = states["exp_avg"][i], states["exp_avg_sq"][i]
                m_new = g.emit(frame.UpdateOp(m, add(mul(hyper["beta1"], m),
                                                     mul(hyper["one_minus_beta1"], gd))))
                v_new = g.emit(frame.UpdateOp(v, add(mul(hyper["beta2"], v), mul(
                    hyper["one_minus_beta2"], mul(gd, gd)))))
                denom = add(g.emit(frame.DivOp(g.emit(frame.SqrtOp(v_new)),
                                               hyper["sqrt_bc2"])), hyper["eps"])
                step = g.emit(frame.DivOp(mul(hyper["step"], m_new), denom))
                p_new = g.emit(frame.UpdateOp(p, g.emit(frame.SubOp(p, step))))
                new_states["exp_avg"].append(m_new)
                new_states["exp_avg_sq"].append(v_new)
            new_params.append(p_new)
    new_stats = []
    for (stat_name, _), s in zip(stat_shapes, stat_args, strict=True):
        with g.scope(stat_name):
            assert grad_scale is not None
            new_stats.append(g.emit(frame.UpdateOp(s, g.emit(frame.ScaleOp(s, grad_scale)))))
    results = [*new_params, *(v for k in STATES[solver] for v in new_states[k]), *new_stats]
    fn = g.finish(results)
    fn.attributes["frame.inference"] = builtin.UnitAttr()
    n, n_states = len(shapes), len(STATES[solver])
    for i in range(n):
        set_arg_attr(fn, i, "frame.aliasing_output", builtin.IntegerAttr(i, 64))
    for k_idx in range(n_states):
        for i in range(n):
            arg = 2 * n + k_idx * n + i
            set_arg_attr(fn, arg, "frame.aliasing_output",
                         builtin.IntegerAttr(n + k_idx * n + i, 64))
    for j in range(len(stat_shapes)):  # after the parameters, gradients and states
        set_arg_attr(fn, (2 + n_states) * n + j, "frame.aliasing_output",
                     builtin.IntegerAttr((1 + n_states) * n + j, 64))
    return fn
