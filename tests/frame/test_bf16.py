"""bfloat16 end to end: bf16 storage, f32 arithmetic, rounding to nearest even at every
op boundary -- the way float16 works, with PyTorch's `torch.bfloat16` as the oracle.

A bf16 tensor has no numpy representation (sheet 3.4): inputs are made the sheet's way,
by running a constant graph (3.9), or from raw bit patterns where the test needs every
pattern; results are read back as their bit patterns (`Tensor.storage()`, uint16).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import frame
from frame_mlir.frontends.api.tensor import Tensor, bf16_to_float32

torch = pytest.importorskip("torch")

BF16 = frame.DType.bfloat16
RTOL, ATOL = 2e-2, 2e-3  # the sheet's bfloat16 tolerances
QUIET_NAN = 0x7FC0  # what every NaN rounds to (PyTorch's c10::BFloat16, MLIR)


# -- helpers -----------------------------------------------------------------------------

def bf16_tensor(values: np.ndarray) -> frame.Tensor:
    """A bf16 tensor holding `values` rounded to bf16, made as the sheet says: a constant
    graph, compiled and run."""
    arr = np.asarray(values, dtype=np.float32)
    g = frame.Graph("bf16_input")
    g.mark_output(frame.constant(g, arr.reshape(-1).tolist(), list(arr.shape), BF16))
    (t,) = frame.compile(g, "cpu").run([])
    assert t.dtype == BF16 and t.shape.dims == list(arr.shape)
    return t


def from_bits(bits: np.ndarray) -> frame.Tensor:
    """A bf16 tensor of raw bit patterns (NaN payloads included)."""
    return Tensor._own(np.ascontiguousarray(bits, dtype=np.uint16), BF16)


def bits_of(t: frame.Tensor) -> np.ndarray:
    assert t.dtype == BF16
    return np.array(t.storage(), dtype=np.uint16)


def values_of(t: frame.Tensor) -> np.ndarray:
    return bf16_to_float32(bits_of(t))


def torch_bits(x: object) -> np.ndarray:
    """float32 values rounded to bf16 by PyTorch, as uint16 bit patterns."""
    t = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x, np.float32))
    return t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def torch_round(x: object) -> np.ndarray:
    """float32 values rounded to bf16 by PyTorch, back as float32 (exact)."""
    return bf16_to_float32(torch_bits(x))


def assert_same_bits(ours: np.ndarray, ref: np.ndarray) -> None:
    """Equal bf16 bit patterns where the reference is not NaN; where it is, ours is the
    quiet NaN 0x7fc0 (torch's vectorised conversion writes 0xffff there instead, its
    scalar `torch.tensor(x, dtype=torch.bfloat16)` 0x7fc0)."""
    ours, ref = np.asarray(ours, np.uint16).ravel(), np.asarray(ref, np.uint16).ravel()
    nan = np.isnan(bf16_to_float32(ref))
    same = np.where(nan, ours == QUIET_NAN, ours == ref)
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        raise AssertionError(f"{int((~same).sum())} of {same.size} differ; first at {i}: "
                             f"ours {ours[i]:#06x} vs torch {ref[i]:#06x}")


def run(build: Callable[..., frame.Value], *inputs: frame.Tensor) -> frame.Tensor:
    g = frame.Graph("bf16")
    vs = [g.add_graph_input(t.shape.dims, BF16) for t in inputs]
    g.mark_output(build(g, *vs))
    (out,) = frame.compile(g, "cpu").run(list(inputs))
    assert out.dtype == BF16
    return out


# -- ops against the reference -------------------------------------------------------------

OPS: dict[str, tuple[Callable[..., frame.Value], Callable[..., object], tuple[int, int]]] = {
    "add": (frame.add, lambda a, b: a + b, (3, 4)),
    "mul": (frame.mul, lambda a, b: a * b, (3, 4)),
    "matmul": (frame.matmul, lambda a, b: a @ b, (4, 2)),
    "relu": (lambda g, x, y: frame.relu(g, x), lambda a, b: torch.relu(a), (3, 4)),
    "square": (lambda g, x, y: frame.square(g, x), lambda a, b: a * a, (3, 4)),
    "sum_axis": (lambda g, x, y: frame.sum(g, x, [1]), lambda a, b: a.sum(1), (3, 4)),
    "sum_all": (lambda g, x, y: frame.sum(g, x, []), lambda a, b: a.sum(), (3, 4)),
    "mse_loss": (frame.mse_loss, lambda a, b: torch.mean((a - b) ** 2), (3, 4)),
}


@pytest.mark.parametrize("op", list(OPS))
def test_bf16_ops_match_torch_within_the_sheet_tolerance(op: str) -> None:
    build, ref, b_shape = OPS[op]
    rng = np.random.default_rng(11)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    g = frame.Graph(op)
    x, y = g.add_graph_input([3, 4], BF16), g.add_graph_input(list(b_shape), BF16)
    g.mark_output(build(g, x, y))
    (out,) = frame.compile(g, "cpu").run([bf16_tensor(a), bf16_tensor(b)])
    assert out.dtype == BF16
    with pytest.raises(NotImplementedError, match="no numpy representation"):
        out.numpy()
    # f32 arithmetic on the bf16-rounded inputs, one rounding to bf16 at the end.
    ta, tb = (torch.from_numpy(torch_round(v)) for v in (a, b))
    want = torch_round(ref(ta, tb).float())
    got = values_of(out)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    if op in ("add", "mul", "relu", "square"):  # one rounding of an exact f32 result
        assert_same_bits(bits_of(out), torch_bits(ref(ta, tb)))


def test_bf16_mlp_forward_matches_torch() -> None:
    """Linear + Relu + Linear in bf16 (nn factories), against torch in f32 on the
    bf16-rounded inputs and parameters, rounding to bf16 at every op boundary."""
    model = frame.nn.Sequential("mlp", [frame.nn.Linear("0", 4, 3, 8, True, BF16),
                                        frame.nn.Relu("1"),
                                        frame.nn.Linear("2", 4, 8, 2, True, BF16)])
    assert [dt for _, _, dt in model.parameters()] == [BF16] * 4
    g = frame.Graph("mlp")
    x = g.add_graph_input([4, 3], BF16)
    (y,) = model.build(g, [x], frame.nn.add_parameter_inputs(g, model))
    g.mark_output(y)
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    params = [rng.uniform(-0.8, 0.8, shape).astype(np.float32)
              for _, shape, _ in model.parameters()]
    (out,) = frame.compile(g, "cpu").run([bf16_tensor(xs), *map(bf16_tensor, params)])
    assert out.dtype == BF16 and out.shape.dims == [4, 2]

    def r(t: object) -> object:  # round to bf16 at an op boundary
        return torch.from_numpy(torch_round(t))

    tx, w1, b1, w2, b2 = (r(v) for v in (xs, *params))
    h = r(torch.relu(r(r(tx @ w1) + b1)))
    want = r(r(h @ w2) + b2).numpy()
    np.testing.assert_allclose(values_of(out), want, rtol=RTOL, atol=ATOL)
    # and against the plain f32 forward on the same inputs, within the sheet's tolerance
    plain = (torch.relu(tx @ w1 + b1) @ w2 + b2).numpy()
    np.testing.assert_allclose(values_of(out), plain, rtol=RTOL, atol=4 * ATOL + 1e-2)


# -- rounding, bit for bit ------------------------------------------------------------------

#: float32 values whose rounding to bf16 is the interesting part, with what it gives.
EDGES = np.array([
    1.0 + 2.0**-8,                       # a tie: to even, down to 1.0
    1.0 + 3 * 2.0**-8,                   # a tie: to even, up to 1 + 2^-6
    -(1.0 + 2.0**-8), -(1.0 + 3 * 2.0**-8),
    1.0 + 2.0**-8 + 2.0**-23,            # just above a tie: up
    1.0 + 2.0**-8 - 2.0**-23,            # just below a tie: down
    3.3895313892515355e38,               # the largest bf16 (0x7f7f)
    3.3961775292304452e38,               # halfway to 2^128 from it: a tie, to inf
    3.3961773e38,                        # just below that tie: stays 0x7f7f
    float(np.finfo(np.float32).max),     # rounds to inf
    -float(np.finfo(np.float32).max),
    np.inf, -np.inf, np.nan,
    0.0, -0.0,
    1e-40, -1e-40,                       # f32 denormals
    2.0**-133, 2.0**-134, 3 * 2.0**-134,  # bf16's smallest denormal; ties to even
    float(np.finfo(np.float32).tiny),    # the smallest normal (exact)
    float(np.float32(2.0**-126 - 2.0**-149)),  # the largest f32 denormal: rounds up
    0.1, -0.1, 3.14159265, 65504.0, 1e30,
], dtype=np.float32)


def test_host_rounding_of_constants_is_torchs() -> None:
    """A bf16 constant (host rounding) is `torch.tensor(x, dtype=torch.bfloat16)`, bit
    for bit, NaN included (c10::BFloat16 makes every NaN 0x7fc0)."""
    t = bf16_tensor(EDGES)
    ref = torch.tensor(EDGES.tolist(), dtype=torch.bfloat16).view(torch.int16).numpy()
    np.testing.assert_array_equal(bits_of(t), ref.view(np.uint16))
    assert bits_of(t)[list(EDGES).index(EDGES[6])] == 0x7F7F
    assert np.isinf(values_of(t)[7]) and values_of(t)[8] == values_of(t)[6]


def test_compiled_rounding_matches_torch_on_edge_cases() -> None:
    """Rounding in compiled code (arith-expand-bf16 on an f32 result): sums and products
    of bf16 values that are exact in f32 and land on the edge cases -- ties to even,
    the top of the range, overflow to inf, inf - inf = NaN, denormals, -0.0."""
    ulp_top = 2.0**120  # one bf16 ulp at the top binade is 2^121
    pairs = [
        (1.0, 2.0**-8), (1.0 + 2.0**-7, 2.0**-8),            # ties: down, up
        (-1.0, -(2.0**-8)), (-(1.0 + 2.0**-7), -(2.0**-8)),
        (1.0, 2.0**-8 + 2.0**-15), (1.0, 2.0**-9),             # above a tie, below
        (3.3895313892515355e38, ulp_top),                      # tie at the max: inf
        (3.3895313892515355e38, ulp_top / 2),                  # below it: the max
        (-3.3895313892515355e38, -ulp_top),
        (np.inf, 1.0), (-np.inf, -1.0), (np.inf, -np.inf), (np.nan, 1.0),
        (0.0, -0.0), (-0.0, -0.0), (1.0, -1.0),
        (2.0**-133, 2.0**-133), (-(2.0**-133), 2.0**-132),     # denormal sums
        (2.0**-126, -(2.0**-133)), (2.0**-126, 2.0**-133),
    ]
    a = np.array([p[0] for p in pairs], np.float32)
    b = np.array([p[1] for p in pairs], np.float32)
    ta, tb = (torch.from_numpy(v).to(torch.bfloat16) for v in (a, b))
    assert np.array_equal(bf16_to_float32(torch_bits(ta.float())), a, equal_nan=True)
    xa, xb = bf16_tensor(a), bf16_tensor(b)
    assert_same_bits(bits_of(run(frame.add, xa, xb)), torch_bits(ta.float() + tb.float()))
    # products: tie patterns of the 16-bit product mantissa, denormal and -0.0 results
    pa = np.array([1.0 + 2.0**-7, 1.0 + 3 * 2.0**-7, 2.0**-126, 2.0**-126, -0.0, 2.0**126,
                   2.0**126, 2.0**127, 2.0**-70, 1.5, -1.0], np.float32)
    pb = np.array([1.0 + 2.0**-7, 1.0 + 2.0**-7, 0.5078125, -0.75, 5.0, 5.0, -5.0,
                   1.9921875, 2.0**-70, 1.0 + 2.0**-7, 0.0], np.float32)
    assert np.array_equal(torch_round(pa), pa) and np.array_equal(torch_round(pb), pb)
    ref = torch_bits(torch.from_numpy(pa) * torch.from_numpy(pb))
    assert_same_bits(bits_of(run(frame.mul, bf16_tensor(pa), bf16_tensor(pb))), ref)
    nan = bits_of(run(frame.add, bf16_tensor(np.array([np.inf])),
                      bf16_tensor(np.array([-np.inf]))))
    assert nan[0] == QUIET_NAN  # x86 makes inf - inf the negative NaN; we round it to 0x7fc0
    scalar = torch.tensor(float("nan"), dtype=torch.bfloat16).view(torch.int16).item()
    assert scalar & 0xFFFF == QUIET_NAN


def test_bf16_rounds_exactly_once_per_op_on_every_bf16_value() -> None:
    """Every bf16 bit pattern (NaN payloads, inf, denormals, -0.0) through add, mul and
    relu(a * b + a): f32 arithmetic, one rounding to bf16 per op, bit for bit as torch
    rounds the same f32 results (a skipped or doubled rounding anywhere fails)."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    a, b = every, np.random.default_rng(0).permutation(every)
    ta, tb = (torch.from_numpy(v.view(np.int16)).view(torch.bfloat16).float() for v in (a, b))
    xa, xb = from_bits(a), from_bits(b)
    assert_same_bits(bits_of(run(frame.add, xa, xb)), torch_bits(ta + tb))
    assert_same_bits(bits_of(run(frame.mul, xa, xb)), torch_bits(ta * tb))
    step = torch.from_numpy(torch_round(ta * tb))
    step = torch.from_numpy(torch_round(step + ta))
    relu = torch.where(step < 0, torch.zeros_like(step), step)  # keeps NaN and -0.0
    got = run(lambda g, x, y: frame.relu(g, frame.add(g, frame.mul(g, x, y), x)), xa, xb)
    assert_same_bits(bits_of(got), torch_bits(relu))


@pytest.mark.parametrize(("m", "k", "n"), [(3, 17, 5), (1, 130, 1), (33, 65, 2)])
def test_bf16_matmul_and_sum_accumulate_in_f32_and_round_once(m: int, k: int, n: int) -> None:
    """bf16 inputs, an f32 accumulator, one rounding at the end: the exact (float64)
    result rounded to f32 and then to bf16, for these sizes."""
    rng = np.random.default_rng(m * k * n)
    a = torch_round(rng.standard_normal((m, k)).astype(np.float32))
    b = torch_round(rng.standard_normal((k, n)).astype(np.float32))
    g = frame.Graph("mm")
    x, y = g.add_graph_input([m, k], BF16), g.add_graph_input([k, n], BF16)
    g.mark_output(frame.matmul(g, x, y))
    g.mark_output(frame.sum(g, x, [1]))
    mm, sm = frame.compile(g, "cpu").run([bf16_tensor(a), bf16_tensor(b)])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert_same_bits(bits_of(mm), torch_bits(exact.astype(np.float32)))
    assert_same_bits(bits_of(sm), torch_bits(a.astype(np.float64).sum(1).astype(np.float32)))


def test_bf16_gemm_sized_matmul_with_epilogue() -> None:
    """A matmul + bias + relu large enough that f32 would take frame-gemm's packed kernel
    with a fused epilogue: bf16 takes plain loops (frame-gemm and frame-tile-matmul are
    f32 only) and computes the same thing, rounded at each op."""
    m, k, n = 64, 256, 96
    rng = np.random.default_rng(2)
    a, b, c = (torch_round(rng.standard_normal(s).astype(np.float32) * f)
               for s, f in (((m, k), 1.0), ((k, n), 0.1), ((m, n), 1.0)))
    g = frame.Graph("gemm")
    x, y, z = (g.add_graph_input(list(v.shape), BF16) for v in (a, b, c))
    g.mark_output(frame.relu(g, frame.add(g, frame.matmul(g, x, y), z)))
    (out,) = frame.compile(g, "cpu").run([bf16_tensor(v) for v in (a, b, c)])
    mm = torch.from_numpy(torch_round(torch.from_numpy(a) @ torch.from_numpy(b)))
    want = torch_round(torch.relu(torch.from_numpy(torch_round(mm + torch.from_numpy(c)))))
    np.testing.assert_allclose(values_of(out), want, rtol=RTOL, atol=ATOL)


# -- training ---------------------------------------------------------------------------------

def test_bf16_training_keeps_dtypes_and_converges() -> None:
    """The sheet's fp16 training case in bf16: matmul(x[4,2], w[2,1]) -> mse_loss entirely
    in bfloat16, backward w.r.t. w, a bf16 SGD graph with lr 0.1, 30 steps."""
    rng = np.random.default_rng(20260713)
    x = torch_round(rng.uniform(-1, 1, (4, 2)).astype(np.float32))
    t = x @ np.array([[0.8], [-0.6]], dtype=np.float32)  # a target the model can fit
    g = frame.Graph("lin")
    xv = g.add_graph_input([4, 2], BF16)
    wv = g.add_graph_input([2, 1], BF16)
    tv = g.add_graph_input([4, 1], BF16)
    g.mark_output(frame.mse_loss(g, frame.matmul(g, xv, wv), tv))
    backward = frame.build_backward_graph(g, 0, [1])
    train = frame.compile(backward, "cpu")
    update = frame.compile(frame.build_sgd_update_graph([([2, 1], BF16)], 0.1), "cpu")
    w = bf16_tensor(np.zeros((2, 1), np.float32))
    xs, ts = bf16_tensor(x), bf16_tensor(t)
    losses = []
    for _ in range(30):
        loss, grad = train.run([xs, w, ts])
        assert loss.dtype == BF16 and grad.dtype == BF16 and grad.shape.dims == [2, 1]
        losses.append(float(values_of(loss)))
        (w,) = update.run([w, grad])
        assert w.dtype == BF16 and w.shape.dims == [2, 1]
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0]
    # the first gradient is torch's autograd of the same f32 computation, within bf16
    tw = torch.zeros((2, 1), requires_grad=True)
    ref = torch.mean((torch.from_numpy(x) @ tw - torch.from_numpy(torch_round(t))) ** 2)
    ref.backward()
    (loss0, grad0) = train.run([xs, bf16_tensor(np.zeros((2, 1), np.float32)), ts])
    np.testing.assert_allclose(values_of(loss0), torch_round(ref.detach()), rtol=RTOL,
                               atol=ATOL)
    np.testing.assert_allclose(values_of(grad0), tw.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_bf16_sgd_rounds_like_the_reference() -> None:
    """add(p, mul(constant(-lr) in bf16, g)), rounding to bf16 after each op."""
    p = torch_round(np.array([0.5, -1.25, 3.0, 100.0], np.float32))
    gr = torch_round(np.array([0.1, 2.0, -7.5, 0.3], np.float32))
    update = frame.compile(frame.build_sgd_update_graph([([4], BF16)], 0.1), "cpu")
    (out,) = update.run([bf16_tensor(p), bf16_tensor(gr)])
    neg_lr = torch_round(np.array([-0.1], np.float32))
    step = torch_round(neg_lr * gr)
    assert_same_bits(bits_of(out), torch_bits(p + step))


def test_bf16_gradient_of_an_unused_input_is_bf16_zeros() -> None:
    g = frame.Graph("g")
    x = g.add_graph_input([3], frame.DType.float32)
    g.add_graph_input([2], BF16)
    g.mark_output(frame.sum(g, x, []))
    back = frame.compile(frame.build_backward_graph(g, 0, [1]), "cpu")
    loss, grad = back.run([frame.from_numpy(np.ones(3, np.float32)),
                           bf16_tensor(np.array([1.0, 2.0]))])
    assert float(loss.numpy()) == 3.0
    assert grad.dtype == BF16 and bits_of(grad).tolist() == [0, 0]
