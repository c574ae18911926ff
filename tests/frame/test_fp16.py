"""float16 end to end: half storage, f32 arithmetic, rounding at op boundaries."""

from __future__ import annotations

import numpy as np
import pytest

import frame

F16, F32 = frame.DType.float16, frame.DType.float32
RTOL, ATOL = 1e-2, 1e-3  # the sheet's float16 tolerances


def _ref_round(x: np.ndarray) -> np.ndarray:
    """numpy reference: compute in float32, round once to float16."""
    return np.asarray(x, dtype=np.float32).astype(np.float16)


@pytest.mark.parametrize("op", ["add", "mul", "relu", "square", "matmul", "sum", "mse_loss"])
def test_fp16_ops_match_numpy(op: str) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float16)
    b = rng.standard_normal((3, 4) if op != "matmul" else (4, 2)).astype(np.float16)
    g = frame.Graph(op)
    x = g.add_graph_input(list(a.shape), F16)
    y = g.add_graph_input(list(b.shape), F16)
    fns = {
        "add": (lambda: frame.add(g, x, y), lambda: a.astype(np.float32) + b),
        "mul": (lambda: frame.mul(g, x, y), lambda: a.astype(np.float32) * b),
        "relu": (lambda: frame.relu(g, x), lambda: np.maximum(a.astype(np.float32), 0)),
        "square": (lambda: frame.square(g, x), lambda: a.astype(np.float32) ** 2),
        "matmul": (lambda: frame.matmul(g, x, y),
                   lambda: a.astype(np.float32) @ b.astype(np.float32)),
        "sum": (lambda: frame.sum(g, x, [1]), lambda: a.astype(np.float32).sum(1)),
        "mse_loss": (lambda: frame.mse_loss(g, x, y),
                     lambda: np.mean((a.astype(np.float32) - b) ** 2)),
    }
    build, ref = fns[op]
    g.mark_output(build())
    (out,) = frame.compile(g, "cpu").run([frame.from_numpy(a), frame.from_numpy(b)])
    assert out.dtype == F16
    got = out.numpy()
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), _ref_round(ref()).astype(np.float32),
                               rtol=RTOL, atol=ATOL)


def test_fp16_training_keeps_dtypes_and_converges() -> None:
    # The sheet's fp16 case: matmul(x[4,2], w[2,1]) -> mse_loss, backward w.r.t. w, an
    # fp16 SGD graph with lr 0.1, 30 steps; a target the model can fit.
    rng = np.random.default_rng(20260713)
    x = rng.uniform(-1, 1, (4, 2)).astype(np.float16)
    w_true = np.array([[0.8], [-0.6]], dtype=np.float32)
    t = (x.astype(np.float32) @ w_true).astype(np.float16)
    g = frame.Graph("lin")
    xv = g.add_graph_input([4, 2], F16)
    wv = g.add_graph_input([2, 1], F16)
    tv = g.add_graph_input([4, 1], F16)
    g.mark_output(frame.mse_loss(g, frame.matmul(g, xv, wv), tv))
    train = frame.compile(frame.build_backward_graph(g, 0, [1]), "cpu")
    update = frame.compile(frame.build_sgd_update_graph([([2, 1], F16)], 0.1), "cpu")
    w = frame.from_numpy(np.zeros((2, 1), dtype=np.float16))
    xs, ts = frame.from_numpy(x), frame.from_numpy(t)
    losses = []
    for _ in range(30):
        loss, grad = train.run([xs, w, ts])
        assert loss.dtype == F16 and grad.dtype == F16
        losses.append(float(loss.numpy()))
        (w,) = update.run([w, grad])
        assert w.dtype == F16
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0]


def test_fp16_sgd_rounds_like_the_reference() -> None:
    # add(p, mul(constant(-lr) in fp16, g)) with rounding after each op.
    p = np.array([0.5, -1.25, 3.0], dtype=np.float16)
    gr = np.array([0.1, 2.0, -7.5], dtype=np.float16)
    update = frame.compile(frame.build_sgd_update_graph([([3], F16)], 0.1), "cpu")
    (out,) = update.run([frame.from_numpy(p), frame.from_numpy(gr)])
    neg_lr = np.float16(-0.1)
    expected = (p.astype(np.float32) + (neg_lr.astype(np.float32) * gr.astype(np.float32))
                .astype(np.float16).astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_fp16_modules_build_and_train() -> None:
    """nn modules on float16 values: Linear + Relu + Conv2d keep float16 end to end."""
    m = frame.nn.Sequential("net", [frame.nn.Linear("fc", 4, 3, 2, True, F16),
                                    frame.nn.Relu("act")])
    assert all(dtype == F16 for _, _, dtype in m.parameters())
    g = frame.Graph("h")
    x = g.add_graph_input([4, 3], F16)
    ps = frame.nn.add_parameter_inputs(g, m)
    t = g.add_graph_input([4, 2], F16)
    (y,) = m.build(g, [x], ps)
    g.mark_output(frame.mse_loss(g, y, t))
    train = frame.compile(frame.build_backward_graph(g, 0, [1, 2]), "cpu")
    update = frame.compile(frame.build_sgd_update_graph(
        [(shape, dt) for _, shape, dt in m.parameters()], 0.3), "cpu")
    rng = np.random.default_rng(5)
    xv = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    # A target the network can reach: the output of a "teacher" with other weights.
    teacher = np.maximum(xv @ rng.uniform(-1, 1, (3, 2)) + 0.5, 0).astype(np.float16)
    xs, ts = frame.from_numpy(xv.astype(np.float16)), frame.from_numpy(teacher)
    params = [frame.from_numpy(rng.uniform(0, 0.5, shape).astype(np.float16))
              for _, shape, _ in m.parameters()]
    first = last = None
    for _ in range(100):
        loss, *grads = train.run([xs, *params, ts])
        assert loss.dtype == F16 and all(gr.dtype == F16 for gr in grads)
        first = float(loss.numpy()) if first is None else first
        last = float(loss.numpy())
        params = update.run([*params, *grads])
    assert last < 0.5 * first

    conv = frame.nn.Conv2d("c", 2, 2, [3, 3], [1, 1], [1, 1], 1, True, F16)
    g = frame.Graph("conv16")
    x = g.add_graph_input([1, 2, 4, 4], F16)
    (y,) = conv.build(g, [x], frame.nn.add_parameter_inputs(g, conv))
    g.mark_output(y)
    arrays = [rng.standard_normal(s).astype(np.float16)
              for s in ([1, 2, 4, 4], [2, 2, 3, 3], [2])]
    (out,) = frame.compile(g, "cpu").run([frame.from_numpy(a) for a in arrays])
    torch = pytest.importorskip("torch")
    ref = torch.nn.functional.conv2d(*[torch.from_numpy(a.astype(np.float32)) for a in arrays],
                                     padding=1).numpy()
    assert out.dtype == F16
    np.testing.assert_allclose(out.numpy().astype(np.float32), ref, rtol=RTOL, atol=1e-2)


def _bits_equal(ours: np.ndarray, ref: np.ndarray) -> None:
    ours, ref = np.asarray(ours, np.float16), np.asarray(ref, np.float16)
    same = (ours.view(np.uint16) == ref.view(np.uint16)) | (np.isnan(ours) & np.isnan(ref))
    assert same.all(), (f"{int((~same).sum())} of {same.size} differ; first at "
                        f"{int(np.flatnonzero(~same)[0])}: ours {ours.ravel()[~same][0]} vs "
                        f"{ref.ravel()[~same][0]}")


def test_fp16_rounds_exactly_once_per_op_on_every_half_value() -> None:
    """Every float16 bit pattern (NaN, inf, subnormals included) through add, mul and a
    chain relu(a * b + a): f32 arithmetic with one rounding to f16 after each op, which
    is exact for add and mul of halves. Bit for bit, so a skipped or doubled rounding
    anywhere fails (a tolerance of even one ulp would hide it)."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    a = every.copy()
    b = np.random.default_rng(0).permutation(every)

    def run(build, *arrays: np.ndarray) -> np.ndarray:  # noqa: ANN001
        g = frame.Graph("fp16")
        ins = [g.add_graph_input(list(x.shape), F16) for x in arrays]
        g.mark_output(build(g, *ins))
        (out,) = frame.compile(g, "cpu").run([frame.from_numpy(x) for x in arrays])
        return out.numpy()

    def f32(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float32)

    with np.errstate(all="ignore"):
        _bits_equal(run(frame.add, a, b), (f32(a) + f32(b)).astype(np.float16))
        _bits_equal(run(frame.mul, a, b), (f32(a) * f32(b)).astype(np.float16))
        step = (f32(a) * f32(b)).astype(np.float16)
        step = (f32(step) + f32(a)).astype(np.float16)
        ref = np.where(f32(step) < 0, np.float16(0), step)  # relu keeps NaN and -0.0
        _bits_equal(run(lambda g, x, y: frame.relu(g, frame.add(g, frame.mul(g, x, y), x)),
                        a, b), ref)


@pytest.mark.parametrize(("m", "k", "n"), [(3, 17, 5), (1, 130, 1), (33, 65, 2)])
def test_fp16_matmul_and_sum_accumulate_in_f32_and_round_once(m: int, k: int, n: int) -> None:
    """Half inputs, an f32 accumulator, one rounding to f16 at the end: equal to the
    exact (float64) result rounded to f32 and then to f16, for these sizes."""
    rng = np.random.default_rng(m * k * n)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    g = frame.Graph("mm16")
    x, y = g.add_graph_input([m, k], F16), g.add_graph_input([k, n], F16)
    g.mark_output(frame.matmul(g, x, y))
    g.mark_output(frame.sum(g, x, [1]))
    mm, sm = frame.compile(g, "cpu").run([frame.from_numpy(a), frame.from_numpy(b)])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    _bits_equal(mm.numpy(), exact.astype(np.float32).astype(np.float16))
    _bits_equal(sm.numpy(), a.astype(np.float64).sum(1).astype(np.float32).astype(np.float16))
