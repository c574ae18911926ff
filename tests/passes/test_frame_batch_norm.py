"""Batch norm (`frame_mlir/dialects/frame_norm.py`) against PyTorch's F.batch_norm in
float64 on the very float32 values our code receives: training mode (batch
statistics), the running statistics torch writes back after that call (momentum, the
unbiased variance), inference mode with given statistics, and the gradients of x,
gamma and beta, on [N, C], [N, C, L] and [N, C, H, W] inputs; f16 operands; the
autodiff rules torch also enforces (no gradient for the statistics)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import builtin
from xdsl.ir import SSAValue

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.passes.pipeline import PipelineError
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")
F = torch.nn.functional

#: [N, C], [N, C, L], [N, C, H, W] and a batch of 1 with spatial dims.
SHAPES = ((6, 3), (4, 3, 5), (2, 4, 3, 5), (1, 2, 3, 4))
EPS, MOMENTUM = 1e-5, 0.1


def _t(a: np.ndarray) -> Any:
    return torch.from_numpy(np.asarray(a)).double()


def _params(g: Graph, shape: tuple[int, ...]) -> list[SSAValue]:
    c = (shape[1],)
    return add_parameter_inputs(g, [ParamSpec("x", shape, UniformSeeded(-1, 1)),
                                    ParamSpec("gamma", c, UniformSeeded(-1, 1)),
                                    ParamSpec("beta", c, UniformSeeded(-1, 1))])


@functools.cache
def _module(shape: tuple[int, ...]) -> Executable:
    """@train(x, gamma, beta, rm, rv, r) -> (sum(y * r), new rm, new rv), the loss first
    (`frame.loss_index`), so @train_grad returns the running statistics beside the
    gradients, as a training step would; @infer(x, gamma, beta, mean, var, r) ->
    sum(y * r) with the given statistics."""
    c = (shape[1],)
    fns = []
    g = Graph("train")
    x, gamma, beta = _params(g, shape)
    rm, rv, r = g.add_input(c, "rm"), g.add_input(c, "rv"), g.add_input(shape, "r")
    y = g.emit(frame.BatchNormOp(x, gamma, beta, EPS))
    loss = g.emit(frame.SumOp(g.emit(frame.MulOp(y, r))))
    fn = g.finish([loss, g.emit(frame.BatchNormStatsOp(x, rm, MOMENTUM, "mean")),
                   g.emit(frame.BatchNormStatsOp(x, rv, MOMENTUM, "var"))])
    fn.attributes["frame.loss_index"] = builtin.IntegerAttr(0, 64)
    fns.append(fn)
    g = Graph("infer")
    x, gamma, beta = _params(g, shape)
    mean, var, r = g.add_input(c, "mean"), g.add_input(c, "var"), g.add_input(shape, "r")
    y = g.emit(frame.BatchNormInferenceOp(x, gamma, beta, mean, var, 1e-3))
    fns.append(g.finish([g.emit(frame.SumOp(g.emit(frame.MulOp(y, r))))]))
    return compile_module(builtin.ModuleOp(fns), options=CompileOptions(threads=1), cache=None)


def _data(shape: tuple[int, ...], seed: int) -> list[np.ndarray]:
    """x (mean 1, std 2: normalization must remove both), gamma, beta, a running mean,
    a positive running variance and the cotangent r."""
    rng = np.random.default_rng(seed)
    c = shape[1]
    f32 = np.float32
    return [(1.0 + 2.0 * rng.standard_normal(shape)).astype(f32),
            rng.standard_normal(c).astype(f32), rng.standard_normal(c).astype(f32),
            rng.standard_normal(c).astype(f32), rng.uniform(0.5, 2.0, c).astype(f32),
            rng.standard_normal(shape).astype(f32)]


def _close(ours: np.ndarray, ref: Any, what: str, tol: float = 2e-6) -> None:
    ref = ref.detach().numpy() if hasattr(ref, "detach") else np.asarray(ref)
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol * scale, err_msg=what)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_training_mode_statistics_and_gradients_vs_torch(shape: tuple[int, ...]) -> None:
    x, gamma, beta, rm, rv, r = _data(shape, sum(shape))
    loss, new_rm, new_rv, dx, dgamma, dbeta = _module(shape)("train_grad", x, gamma, beta,
                                                              rm, rv, r)
    tx, tg, tb = (_t(a).requires_grad_() for a in (x, gamma, beta))
    trm, trv = _t(rm).clone(), _t(rv).clone()
    ty = F.batch_norm(tx, trm, trv, tg, tb, training=True, momentum=MOMENTUM, eps=EPS)
    tloss = (ty * _t(r)).sum()
    tloss.backward()
    _close(loss, tloss, "loss sum(y * r)", 1e-5)
    # torch updated its running buffers in place: momentum * stat + (1 - momentum) * old,
    # the variance unbiased (n / (n - 1)).
    _close(new_rm, trm, "running_mean")
    _close(new_rv, trv, "running_var")
    for ours, ref, what in ((dx, tx, "dx"), (dgamma, tg, "dgamma"), (dbeta, tb, "dbeta")):
        _close(ours, ref.grad, what, 1e-5)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_training_mode_forward_vs_torch(shape: tuple[int, ...]) -> None:
    x, gamma, beta, rm, rv, r = _data(shape, 7 * sum(shape))
    loss, new_rm, new_rv = _module(shape)("train", x, gamma, beta, rm, rv, r)
    y = F.batch_norm(_t(x), None, None, _t(gamma), _t(beta), training=True, eps=EPS)
    _close(loss, (y * _t(r)).sum(), "loss sum(y * r)", 1e-5)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_inference_mode_and_gradients_vs_torch(shape: tuple[int, ...]) -> None:
    x, gamma, beta, mean, var, r = _data(shape, 3 * sum(shape))
    loss, dx, dgamma, dbeta = _module(shape)("infer_grad", x, gamma, beta, mean, var, r)
    tx, tg, tb = (_t(a).requires_grad_() for a in (x, gamma, beta))
    tloss = (F.batch_norm(tx, _t(mean), _t(var), tg, tb, training=False, eps=1e-3)
             * _t(r)).sum()
    tloss.backward()
    _close(loss, tloss, "loss sum(y * r)", 1e-5)
    for ours, ref, what in ((dx, tx, "dx"), (dgamma, tg, "dgamma"), (dbeta, tb, "dbeta")):
        _close(ours, ref.grad, what, 1e-5)


def test_batch_norm_on_f16_operands() -> None:
    """f16 storage, f32 arithmetic: within one f16 rounding of torch's float64 result on
    the same f16 values (training, inference and the running mean)."""
    shape, c = (4, 3, 5), 3
    g = Graph("h")
    f16 = builtin.f16
    args = []
    for s in (shape, (c,), (c,), (c,), (c,)):
        args.append(g.block.insert_arg(builtin.TensorType(f16, list(s)), len(g.block.args)))
        g._arg_attrs.append({})
    x, gamma, beta, mean, var = args
    outs = [g.emit(frame.BatchNormOp(x, gamma, beta, EPS)),
            g.emit(frame.BatchNormInferenceOp(x, gamma, beta, mean, var, EPS)),
            g.emit(frame.BatchNormStatsOp(x, mean, MOMENTUM, "mean"))]
    ex = compile_module(builtin.ModuleOp([g.finish(outs)]), cache=None)
    data = [a.astype(np.float16) for a in _data(shape, 11)[:5]]
    y, yi, new_mean = ex("h", *data)
    assert y.dtype == np.float16 and yi.dtype == np.float16
    tx, tg, tb, tm, tv = (_t(a.astype(np.float32)) for a in data)
    ref = F.batch_norm(tx, None, None, tg, tb, training=True, eps=EPS).numpy()
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=1e-3, atol=2e-3)
    ref = F.batch_norm(tx, tm, tv, tg, tb, training=False, eps=EPS).numpy()
    np.testing.assert_allclose(yi.astype(np.float64), ref, rtol=1e-3, atol=2e-3)
    rm = tm.clone()
    F.batch_norm(tx, rm, tv.clone(), training=True, momentum=MOMENTUM)
    np.testing.assert_allclose(new_mean.astype(np.float64), rm.numpy(), rtol=1e-3, atol=1e-3)


def test_statistics_of_inference_mode_get_no_gradient() -> None:
    """Like torch's native_batch_norm ("not differentiable with respect to argument
    'running_mean'"), autodiff refuses a parameter used as the mean or the variance."""
    g = Graph("bad")
    (x, gamma, beta, mean) = add_parameter_inputs(g, [
        ParamSpec(n, s, UniformSeeded(-1, 1)) for n, s in
        (("x", (4, 3)), ("gamma", (3,)), ("beta", (3,)), ("mean", (3,)))])
    var = g.add_input((3,), "var")
    y = g.emit(frame.BatchNormInferenceOp(x, gamma, beta, mean, var))
    with pytest.raises(PipelineError, match="not differentiable with respect to mean"):
        compile_module(builtin.ModuleOp([g.finish([g.emit(frame.SumOp(y))])]), cache=None)


def test_running_statistics_are_never_differentiated() -> None:
    """batch_norm_stats has no VJP: a loss that depends on one fails in autodiff."""
    g = Graph("stats")
    (x,) = add_parameter_inputs(g, [ParamSpec("x", (4, 3), UniformSeeded(-1, 1))])
    rm = g.add_input((3,), "rm")
    s = g.emit(frame.BatchNormStatsOp(x, rm, 0.1, "var"))
    with pytest.raises(PipelineError, match="no gradient rule for frame.batch_norm_stats"):
        compile_module(builtin.ModuleOp([g.finish([g.emit(frame.SumOp(s))])]), cache=None)


@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1)])
def test_one_value_per_channel_is_rejected_in_training(shape: tuple[int, ...]) -> None:
    """torch: "Expected more than 1 value per channel when training"; inference mode
    takes such a batch."""
    g = Graph("one")
    x, gamma = g.add_input(shape, "x"), g.add_input((3,), "g")
    with pytest.raises(frame.ShapeError, match="expected more than 1 value per channel"):
        frame.BatchNormOp(x, gamma, gamma)
    with pytest.raises(frame.ShapeError, match="expected more than 1 value per channel"):
        frame.BatchNormStatsOp(x, gamma)
    y = g.emit(frame.BatchNormInferenceOp(x, gamma, gamma, gamma, g.add_input((3,), "v")))
    assert frame.static_shape(y) == shape


def test_channel_axis_other_than_one() -> None:
    """axis = 2 of [N, L, C] (channels last) is batch norm of the input moved to
    [N, C, L]."""
    shape = (3, 4, 2)
    g = Graph("last")
    x, gamma, beta = (g.add_input(s, n) for s, n in ((shape, "x"), ((2,), "g"), ((2,), "b")))
    rv = g.add_input((2,), "rv")
    outs = [g.emit(frame.BatchNormOp(x, gamma, beta, EPS, 2)),
            g.emit(frame.BatchNormStatsOp(x, rv, 0.5, "var", 2))]
    ex = compile_module(builtin.ModuleOp([g.finish(outs)]), cache=None)
    rng = np.random.default_rng(5)
    xs, gs, bs, rvs = (rng.standard_normal(s).astype(np.float32)
                       for s in (shape, (2,), (2,), (2,)))
    y, new_rv = ex("last", xs, gs, bs, rvs)
    trv = _t(rvs).clone()
    ref = F.batch_norm(_t(xs).movedim(2, 1), torch.zeros(2, dtype=torch.float64), trv, _t(gs),
                       _t(bs), training=True, momentum=0.5, eps=EPS).movedim(1, 2)
    _close(y, ref, "y")
    _close(new_rv, trv, "running_var")


def test_running_statistics_are_updated_in_place() -> None:
    """A training step's batch norm with its running mean and variance donated to the
    updated statistics (`frame.aliasing_output`, as frame-sgd-fuse donates parameters):
    bufferization writes the new statistics into the arguments' own buffers, so after
    one native call they hold torch's values (momentum 0.1, unbiased variance) and the
    function returns only y."""
    import ctypes

    from frame_mlir.passes.common import set_arg_attr
    from frame_mlir.runtime.executable import aligned_empty

    shape = (4, 3, 5)
    g = Graph("bn_step")
    x = g.add_input(shape, "x")
    gamma, beta = g.add_input((3,), "gamma"), g.add_input((3,), "beta")
    rm, rv = g.add_input((3,), "running_mean"), g.add_input((3,), "running_var")
    y = g.emit(frame.BatchNormOp(x, gamma, beta, 1e-5))
    new_rm = g.emit(frame.BatchNormStatsOp(x, rm, 0.1, "mean"))
    new_rv = g.emit(frame.BatchNormStatsOp(x, rv, 0.1, "var"))
    fn = g.finish([y, new_rm, new_rv])
    set_arg_attr(fn, 3, "frame.aliasing_output", builtin.IntegerAttr(1, 64))
    set_arg_attr(fn, 4, "frame.aliasing_output", builtin.IntegerAttr(2, 64))
    ex = compile_module(builtin.ModuleOp([fn]), options=CompileOptions(threads=1), cache=None)
    sig = ex.signatures["bn_step"]
    assert [a.kind for a in sig.args] == ["input"] * 5 + ["output", "arena"]
    rng = np.random.default_rng(5)
    xs = rng.standard_normal(shape).astype(np.float32)
    gs, bs = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    rms, rvs = rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32)
    trm, trv = _t(rms.copy()), _t(rvs.copy())
    ty = torch.nn.functional.batch_norm(_t(xs), trm, trv, _t(gs), _t(bs), training=True,
                                        momentum=0.1, eps=1e-5)
    out = np.zeros(shape, np.float32)
    arena = aligned_empty(max(sig.arena_size, 64))
    bufs = [xs, gs, bs, rms, rvs, out, arena]
    ex.function("bn_step")(*[ctypes.c_void_p(b.ctypes.data) for b in bufs])
    _close(out, ty, "y")
    _close(rms, trm, "running_mean, updated in place")
    _close(rvs, trv, "running_var, updated in place")


@pytest.mark.parametrize("shape", [(2, 8, 32, 32), (2, 4, 80, 80), (4, 6, 7, 7), (64, 16)],
                         ids=lambda s: "x".join(map(str, s)))
def test_statistics_as_accurate_as_torch_float32(shape: tuple[int, ...]) -> None:
    """A channel of mean 3 and std 1e-3: an error d in the batch mean moves every output
    by d / std, so the forward pass shows how accurately the sums are taken. PyTorch's
    CPU batch norm accumulates its statistics in double; ours sums f32 partials (a few
    terms each) in f64 (`frame_norm._channel_reduce`). Both the outputs and dx stay
    within 2x torch float32's own error against float64 (measured: 0.5-1.2x; with f32
    sums of the partials the outputs at 32 x 32 were 21x, at 7 x 7 5x)."""
    c = shape[1]
    g = Graph("bn")
    x, gamma, beta = (g.add_input(s, n) for s, n in ((shape, "x"), ((c,), "g"), ((c,), "b")))
    dy = g.add_input(shape, "dy")
    y = g.emit(frame.BatchNormOp(x, gamma, beta, EPS))
    dx = g.emit(frame.BatchNormGradOp(x, gamma, dy, EPS, 0))
    ex = compile_module(builtin.ModuleOp([g.finish([y, dx])]),
                        options=CompileOptions(threads=1), cache=None)
    rng = np.random.default_rng(sum(shape))
    xv = (3.0 + 1e-3 * rng.standard_normal(shape)).astype(np.float32)
    gv, bv = rng.uniform(0.5, 2.0, c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    dyv = rng.standard_normal(shape).astype(np.float32)
    ours = ex("bn", xv, gv, bv, dyv)

    def torch_run(dtype: Any) -> list[np.ndarray]:
        tx = torch.from_numpy(xv).to(dtype).requires_grad_()
        ty = F.batch_norm(tx, None, None, torch.from_numpy(gv).to(dtype),
                          torch.from_numpy(bv).to(dtype), training=True, eps=EPS)
        ty.backward(torch.from_numpy(dyv).to(dtype))
        return [ty.detach().double().numpy(), tx.grad.double().numpy()]

    exact, single = torch_run(torch.float64), torch_run(torch.float32)
    for what, got, ref, peer in zip(("y", "dx"), ours, exact, single, strict=True):
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        torch_err = float(np.linalg.norm(peer - ref) / np.linalg.norm(ref))
        assert err <= 2 * torch_err, f"{what}: rel error {err:.2e}, torch float32 {torch_err:.2e}"
