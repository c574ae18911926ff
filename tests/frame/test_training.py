"""Training through the `frame` package: backward graphs, SGD update graphs, training loops.

Gradients are compared with torch.autograd (float64) under the float32 tolerances of sheet
section 10; the fp32 MLP of section 10 is the trajectory sanity target; a DataLoader-driven
loop and a train -> ONNX -> inference round trip exercise the API end to end.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest
import torch
from frame_test_support import F32, assert_close, f32
from onnx import numpy_helper

import frame
from frame import nn
from frame_mlir.runtime.random import MT19937, uniform_float32

# ===================================================================== SGD update graph


def test_one_sgd_step_equals_p_minus_lr_g() -> None:
    rng = np.random.default_rng(5)
    shapes = ([2, 3], [4], [])
    lr = 0.05
    update = frame.build_sgd_update_graph([(s, F32) for s in shapes], lr)
    assert update.name == "sgd_update"
    ex = frame.compile(update, "cpu")
    params = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    inputs = [frame.from_numpy(a) for a in (*params, *grads)]  # [p_0.., g_0..]
    outs = ex.run(inputs)
    assert len(outs) == len(shapes)
    for out, p, g, s in zip(outs, params, grads, shapes, strict=True):
        assert out.shape.dims == s and out.dtype is F32
        # bit for bit the reference order: p + (-lr) * g in float32 ...
        assert out.numpy().tobytes() == (p + np.float32(-lr) * g).astype(np.float32).tobytes()
        # ... which is p - lr * g within the float32 tolerance
        assert_close(out.numpy(), p.astype(np.float64) - lr * g.astype(np.float64))
    for t, a in zip(inputs, (*params, *grads), strict=True):  # inputs untouched
        assert np.array_equal(t.numpy(), a)


def test_sgd_update_graph_keywords_and_tuple_shapes() -> None:
    g = frame.build_sgd_update_graph(param_types=[((2, 2), F32)], learning_rate=1,
                                     backend="cpu")
    (out,) = frame.compile(g, "cpu").run([f32([[1, 2], [3, 4]]), f32([[1, 1], [1, 1]])])
    assert np.array_equal(out.numpy(), [[0, 1], [2, 3]])


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), -float("inf")])
def test_sgd_learning_rate_must_be_finite(lr: float) -> None:
    with pytest.raises(ValueError, match="must be finite"):
        frame.build_sgd_update_graph([([2], F32)], lr)


def test_sgd_update_graph_errors() -> None:
    with pytest.raises(KeyError):  # the backend lookup comes first
        frame.build_sgd_update_graph([([2], F32)], float("nan"), backend="no-such-backend")
    with pytest.raises(KeyError):
        frame.build_sgd_update_graph([], 0.1, "cuda")
    with pytest.raises(ValueError):  # empty list
        frame.build_sgd_update_graph([], 0.1)
    with pytest.raises(ValueError):  # non-float parameter dtype
        frame.build_sgd_update_graph([([2], frame.DType.int32)], 0.5)


# ===================================================================== backward graph


def _square_and_sum() -> frame.Graph:
    """The sheet's multi-output example: inputs [x], outputs [square(x), sum(square(x))]."""
    g = frame.Graph("multi")
    x = g.add_graph_input([3], F32)
    sq = frame.square(g, x)
    g.mark_output(sq)
    g.mark_output(frame.sum(g, sq, []))
    return g


def test_sheet_multi_output_backward_example() -> None:
    fwd = _square_and_sum()
    bwd = frame.build_backward_graph(fwd, 1, [0])
    assert bwd is not fwd and bwd.name == "multi"
    x = np.array([1.0, -2.0, 0.5], np.float32)
    outs = frame.compile(bwd, "cpu").run([frame.from_numpy(x)])
    assert len(outs) == 3  # x^2, sum x^2, 2x
    assert_close(outs[0].numpy(), x.astype(np.float64) ** 2)
    assert outs[1].shape.dims == [] and float(outs[1].numpy()) == pytest.approx(5.25)
    assert_close(outs[2].numpy(), 2 * x.astype(np.float64))
    # the forward graph is not modified
    assert len(frame.compile(fwd, "cpu").run([frame.from_numpy(x)])) == 2


def test_backward_layout_outputs_then_grads_in_wrt_order() -> None:
    g = frame.Graph("layout")
    a = g.add_graph_input([2], F32)
    g.add_graph_input([2, 2], F32)  # never reaches the loss
    c = g.add_graph_input([2], F32)
    g.mark_output(frame.relu(g, a))
    g.mark_output(frame.sum(g, frame.mul(g, a, c), []))
    g.mark_output(c)
    bwd = frame.build_backward_graph(forward=g, loss_output_index=1, wrt_input_indices=[2, 1, 0])
    ex = frame.compile(bwd, "cpu")
    with pytest.raises(ValueError):  # inputs identical to the forward's: same count and types
        ex.run([f32([1, 2]), f32([1, 2]), f32([3, 4])])
    outs = ex.run([f32([1, -2]), f32(np.ones((2, 2))), f32([3, 4])])
    assert [o.shape.dims for o in outs] == [[2], [], [2], [2], [2, 2], [2]]
    relu_a, loss, c_out, g_c, g_unused, g_a = (o.numpy() for o in outs)
    assert np.array_equal(relu_a, [1, 0]) and float(loss) == -5 and np.array_equal(c_out, [3, 4])
    assert np.array_equal(g_c, [1, -2]) and np.array_equal(g_a, [3, 4])
    assert np.array_equal(g_unused, np.zeros((2, 2)))  # does not reach the loss: zeros
    assert all(o.dtype is F32 for o in outs)


def test_backward_one_element_loss_and_summed_uses() -> None:
    g = frame.Graph("one")
    x = g.add_graph_input([1, 1], F32)
    g.mark_output(frame.mul(g, x, x))  # numel == 1 is a valid loss; both uses are summed
    outs = frame.compile(frame.build_backward_graph(g, 0, [0]), "cpu").run([f32([[3.0]])])
    assert [o.numpy().tolist() for o in outs] == [[[9.0]], [[6.0]]]


def test_backward_with_constants_in_the_forward() -> None:
    g = frame.Graph("k")
    x = g.add_graph_input([3], F32)
    k = frame.constant(g, [1.0, 2.0, 3.0], [3], F32)
    g.mark_output(frame.sum(g, frame.mul(g, x, k), []))
    outs = frame.compile(frame.build_backward_graph(g, 0, [0]), "cpu").run([f32([1, 1, 1])])
    assert float(outs[0].numpy()) == 6.0 and np.array_equal(outs[1].numpy(), [1, 2, 3])


def test_backward_errors() -> None:
    g = _square_and_sum()
    with pytest.raises(ValueError, match="out of range"):
        frame.build_backward_graph(g, 5, [0])
    with pytest.raises(ValueError, match="out of range"):
        frame.build_backward_graph(g, 1, [7])
    with pytest.raises(ValueError, match="out of range"):
        frame.build_backward_graph(g, -1, [0])
    with pytest.raises(ValueError):  # output 0 is not a scalar
        frame.build_backward_graph(g, 0, [0])
    with pytest.raises(ValueError):  # duplicate wrt entry
        frame.build_backward_graph(g, 1, [0, 0])


def test_sheet_9_2_backward_rows() -> None:
    g = frame.Graph("g")
    x = g.add_graph_input([2], F32)
    g.mark_output(frame.sum(g, frame.square(g, x), []))
    with pytest.raises(ValueError, match="out of range"):
        frame.build_backward_graph(g, 5, [0])
    with pytest.raises(ValueError, match="out of range"):
        frame.build_backward_graph(g, 0, [7])


def test_backward_with_empty_wrt_returns_the_forward_outputs() -> None:
    g = frame.Graph("nowrt")
    x = g.add_graph_input([2], F32)
    g.mark_output(frame.sum(g, frame.square(g, x), []))
    outs = frame.compile(frame.build_backward_graph(g, 0, []), "cpu").run([f32([1, 2])])
    assert [o.numpy().tolist() for o in outs] == [5.0]


def test_backward_of_a_loss_that_is_an_input() -> None:
    g = frame.Graph("identity")
    x = g.add_graph_input([], F32)
    g.mark_output(x)
    x0 = frame.from_numpy(np.array(3.0, dtype=np.float32))  # rank 0
    outs = frame.compile(frame.build_backward_graph(g, 0, [0]), "cpu").run([x0])
    assert [float(o.numpy()) for o in outs] == [3.0, 1.0]  # seed gradient: ones


# ===================================================================== gradients vs torch


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.tensor(a.astype(np.float64), requires_grad=True)


def _torch_heaviside(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """Sheet section 4: forward 1 where x >= 0, gradient gy*alpha*s*(1-s), s = sigmoid(alpha*x)
    (a straight-through construction: the value of the step, the gradient of alpha*s)."""
    s = torch.sigmoid(alpha * x)
    return (x >= 0).to(x.dtype) + (s - s.detach())


#: name -> (input shapes, frame loss builder, torch loss, wrt indices). Each builder gets the
#: graph and its input values and returns a scalar loss value.
GRAD_CASES: dict[str, tuple[list[list[int]], Callable, Callable, list[int]]] = {
    "matmul": ([[3, 4], [4, 2], [3, 2]],
               lambda g, a, b, t: frame.mse_loss(g, frame.matmul(g, a, b), t),
               lambda a, b, t: torch.mean((a @ b - t) ** 2), [0, 1]),
    "relu": ([[3, 4], [3, 4]],
             lambda g, a, t: frame.mse_loss(g, frame.relu(g, a), t),
             lambda a, t: torch.mean((torch.relu(a) - t) ** 2), [0]),
    "square": ([[5], [5]],
               lambda g, a, t: frame.mse_loss(g, frame.square(g, a), t),
               lambda a, t: torch.mean((a * a - t) ** 2), [0]),
    "add": ([[2, 3], [2, 3], [2, 3]],
            lambda g, a, b, t: frame.mse_loss(g, frame.add(g, a, b), t),
            lambda a, b, t: torch.mean((a + b - t) ** 2), [0, 1]),
    "mul": ([[2, 3], [2, 3], [2, 3]],
            lambda g, a, b, t: frame.mse_loss(g, frame.mul(g, a, b), t),
            lambda a, b, t: torch.mean((a * b - t) ** 2), [1, 0]),
    "mul_same_value": ([[4], [4]],
                       lambda g, a, t: frame.mse_loss(g, frame.mul(g, a, a), t),
                       lambda a, t: torch.mean((a * a - t) ** 2), [0]),
    "sum_axes": ([[2, 3, 4], [3]],
                 lambda g, a, t: frame.mse_loss(g, frame.sum(g, a, [2, 0]), t),
                 lambda a, t: torch.mean((a.sum(dim=(0, 2)) - t) ** 2), [0]),
    "sum_all": ([[2, 3]], lambda g, a: frame.sum(g, frame.square(g, a), []),
                lambda a: torch.sum(a * a), [0]),
    "mse_loss": ([[3, 2], [3, 2]], lambda g, a, b: frame.mse_loss(g, a, b),
                 lambda a, b: torch.mean((a - b) ** 2), [0, 1]),
    "heaviside_surrogate": ([[3, 4], [3, 4]],
                            lambda g, a, w: frame.sum(g, frame.mul(
                                g, frame._core.heaviside_surrogate(g, a, 3.0), w), []),
                            lambda a, w: torch.sum(_torch_heaviside(a, 3.0) * w), [0, 1]),
    "nn_sigmoid": ([[3, 4], [3, 4]],
                   lambda g, a, t: frame.mse_loss(g, nn.Sigmoid("s").build(g, [a], [])[0], t),
                   lambda a, t: torch.mean((torch.sigmoid(a) - t) ** 2), [0]),
    "nn_flatten": ([[2, 3, 2], [2, 6]],
                   lambda g, a, t: frame.mse_loss(g, nn.Flatten("f").build(g, [a], [])[0], t),
                   lambda a, t: torch.mean((a.reshape(2, 6) - t) ** 2), [0]),
    "chain": ([[4, 3], [3, 5], [4, 5], [4, 5], [4, 5]],
              lambda g, x, w, b, c, t: frame.add(
                  g, frame.mse_loss(g, frame.square(g, frame.mul(
                      g, frame.relu(g, frame.add(g, frame.matmul(g, x, w), b)), c)), t),
                  frame.sum(g, frame.mul(g, x, x), [])),
              lambda x, w, b, c, t: torch.mean(((torch.relu(x @ w + b) * c) ** 2 - t) ** 2)
              + torch.sum(x * x), [4, 3, 2, 1, 0]),
}


@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_gradients_match_torch_autograd(case: str) -> None:
    shapes, build, torch_loss, wrt = GRAD_CASES[case]
    rng = np.random.default_rng(100 + list(GRAD_CASES).index(case))
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    g = frame.Graph(case)
    values = [g.add_graph_input(s, F32) for s in shapes]
    g.mark_output(build(g, *values))
    outs = frame.compile(frame.build_backward_graph(g, 0, wrt), "cpu").run(
        [frame.from_numpy(a) for a in arrays])
    assert len(outs) == 1 + len(wrt)
    ts = [_t(a) for a in arrays]
    loss = torch_loss(*ts)
    loss.backward()
    assert_close(outs[0].numpy(), loss.detach().numpy())
    for out, i in zip(outs[1:], wrt, strict=True):
        assert out.shape.dims == shapes[i] and out.dtype is F32
        assert_close(out.numpy(), ts[i].grad.numpy())


def test_relu_gradient_is_zero_at_zero() -> None:
    g = frame.Graph("relu0")
    x = g.add_graph_input([3], F32)
    g.mark_output(frame.sum(g, frame.relu(g, x), []))
    outs = frame.compile(frame.build_backward_graph(g, 0, [0]), "cpu").run([f32([-1, 0, 2])])
    assert np.array_equal(outs[1].numpy(), [0, 0, 1])  # strictly x > 0


def test_mse_target_gradient_is_minus_pred_gradient() -> None:
    g = frame.Graph("mse")
    p, t = g.add_graph_input([4], F32), g.add_graph_input([4], F32)
    g.mark_output(frame.mse_loss(g, p, t))
    pv, tv = np.array([1, 2, 3, 4], np.float32), np.array([0, 2, 5, 1], np.float32)
    _, gp, gt = frame.compile(frame.build_backward_graph(g, 0, [0, 1]), "cpu").run(
        [frame.from_numpy(pv), frame.from_numpy(tv)])
    assert_close(gp.numpy(), 2 * (pv - tv) / 4)
    assert np.array_equal(gt.numpy(), -gp.numpy())


# ===================================================================== sheet 10 MLP trajectory


def _mlp_forward() -> frame.Graph:
    """x[4,2] -> relu(x @ w1[2,4]) @ w2[4,1] -> mse against target[4,1]."""
    g = frame.Graph("mlp")
    x = g.add_graph_input([4, 2], F32)
    w1 = g.add_graph_input([2, 4], F32)
    w2 = g.add_graph_input([4, 1], F32)
    t = g.add_graph_input([4, 1], F32)
    g.mark_output(frame.mse_loss(g, frame.matmul(g, frame.relu(g, frame.matmul(g, x, w1)), w2), t))
    return g


def _mlp_initial_values() -> list[np.ndarray]:
    """x, w1, w2, target in graph-input order, uniform in [-1, 1) from std::mt19937(20260713)."""
    eng = MT19937(20260713)
    return [uniform_float32(eng, int(np.prod(s)), -1.0, 1.0).reshape(s)
            for s in ((4, 2), (2, 4), (4, 1), (4, 1))]


def _numpy_mlp_trajectory(x: np.ndarray, w1: np.ndarray, w2: np.ndarray, t: np.ndarray,
                          steps: int, lr: float) -> list[float]:
    x, w1, w2, t = (a.astype(np.float64) for a in (x, w1, w2, t))
    losses = []
    for _ in range(steps):
        h = x @ w1
        r = np.maximum(h, 0)
        d = 2 * (r @ w2 - t) / t.size
        losses.append(float(np.mean((r @ w2 - t) ** 2)))
        gw2, gw1 = r.T @ d, x.T @ ((d @ w2.T) * (h > 0))
        w1, w2 = w1 - lr * gw1, w2 - lr * gw2
    return losses


def test_sheet_10_fp32_mlp_trajectory() -> None:
    train = frame.compile(frame.build_backward_graph(_mlp_forward(), 0, [1, 2]), "cpu")
    update = frame.compile(frame.build_sgd_update_graph([([2, 4], F32), ([4, 1], F32)], 0.1),
                           "cpu")
    x, w1, w2, t = (frame.from_numpy(a) for a in _mlp_initial_values())
    losses = []
    for _ in range(100):
        loss, g1, g2 = train.run([x, w1, w2, t])
        losses.append(float(loss.numpy()))
        w1, w2 = update.run([w1, w2, g1, g2])
    assert all(np.isfinite(losses))
    ratio = losses[-1] / losses[0]
    assert ratio < 0.2, f"loss {losses[0]:.6f} -> {losses[-1]:.6f}, ratio {ratio:.4f}"
    reference = _numpy_mlp_trajectory(*_mlp_initial_values(), steps=100, lr=0.1)
    np.testing.assert_allclose(losses, reference, rtol=1e-4, atol=1e-7)


# ===================================================================== a DataLoader training loop


def test_training_loop_with_a_dataloader_converges() -> None:
    rng = np.random.default_rng(0)
    n, batch = 64, 8
    features = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    targets = (features @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.25).astype(np.float32)
    loader = frame.data.DataLoader(
        frame.data.TensorDataset([frame.from_numpy(features), frame.from_numpy(targets)]),
        frame.data.DataLoaderOptions(batch_size=batch, shuffle=True, seed=7))
    assert loader.batches_per_epoch == n // batch

    fwd = frame.Graph("regression")  # forward graph: data inputs first, then parameters
    x, t = fwd.add_graph_input([batch, 3], F32), fwd.add_graph_input([batch, 1], F32)
    w1, b1 = fwd.add_graph_input([3, 8], F32), fwd.add_graph_input([batch, 8], F32)
    w2, b2 = fwd.add_graph_input([8, 1], F32), fwd.add_graph_input([batch, 1], F32)
    hidden = frame.relu(fwd, frame.add(fwd, frame.matmul(fwd, x, w1), b1))
    fwd.mark_output(frame.mse_loss(fwd, frame.add(fwd, frame.matmul(fwd, hidden, w2), b2), t))
    train = frame.compile(frame.build_backward_graph(fwd, 0, [2, 3, 4, 5]), "cpu")
    shapes = [[3, 8], [batch, 8], [8, 1], [batch, 1]]
    update = frame.compile(frame.build_sgd_update_graph([(s, F32) for s in shapes], 0.1), "cpu")

    init = MT19937(1)
    params = [frame.from_numpy(uniform_float32(init, int(np.prod(s)), -0.5, 0.5).reshape(s))
              for s in shapes]
    epoch_losses = []
    for _ in range(15):
        total = 0.0
        for xb, tb in loader:  # one epoch per for loop; the loader moves to the next epoch
            loss, *grads = train.run([xb, tb, *params])
            params = update.run([*params, *grads])
            total += float(loss.numpy())
        epoch_losses.append(total / loader.batches_per_epoch)
    assert all(np.isfinite(epoch_losses))
    assert epoch_losses[-1] < 0.1 * epoch_losses[0], epoch_losses


# ===================================================================== train -> ONNX -> infer


def test_train_save_load_inference_parity(tmp_path) -> None:
    train = frame.compile(frame.build_backward_graph(_mlp_forward(), 0, [1, 2]), "cpu")
    update = frame.compile(frame.build_sgd_update_graph([([2, 4], F32), ([4, 1], F32)], 0.1),
                           "cpu")
    x0, w1_0, w2_0, t0 = _mlp_initial_values()
    x, t = frame.from_numpy(x0), frame.from_numpy(t0)
    w1, w2 = frame.from_numpy(w1_0), frame.from_numpy(w2_0)
    for _ in range(20):
        _, g1, g2 = train.run([x, w1, w2, t])
        w1, w2 = update.run([w1, w2, g1, g2])

    path = str(tmp_path / "mlp.onnx")
    frame.save_onnx_weights(path, {"w2": w2, "w1": w1})  # insertion order, not sorted
    loaded = frame.load_onnx_weights(path)
    assert list(loaded) == ["w2", "w1"]
    assert all(v.dtype is F32 and v.device.backend == "cpu" for v in loaded.values())

    model = onnx.load(path)
    onnx.checker.check_model(model)
    assert model.ir_version == 8 and model.graph.name == "frame_weights"
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 13)]
    assert [i.name for i in model.graph.initializer] == ["w2", "w1"]
    arrays = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert np.array_equal(arrays["w1"], w1.numpy()) and np.array_equal(arrays["w2"], w2.numpy())
    assert not np.array_equal(arrays["w1"], w1_0)  # it did train

    infer = frame.Graph("infer")
    xi = infer.add_graph_input([4, 2], F32)
    a, b = infer.add_graph_input([2, 4], F32), infer.add_graph_input([4, 1], F32)
    infer.mark_output(frame.matmul(infer, frame.relu(infer, frame.matmul(infer, xi, a)), b))
    ex = frame.compile(infer, "cpu")
    (before,) = ex.run([x, w1, w2])
    (after,) = ex.run([x, loaded["w1"], loaded["w2"]])
    assert before.numpy().tobytes() == after.numpy().tobytes()  # bit-identical
