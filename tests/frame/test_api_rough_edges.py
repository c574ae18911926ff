"""The Python API's conveniences beyond the sheet: printing a graph's IR, dtype
conversion with `Tensor.to`, `len(DataLoader)`, the error for a DataLoader's short last
batch, error messages from the dialect's shape rules, and SGD on `frame.sgd_update`."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

import frame
from frame import nn
from frame.data import DataLoader, DataLoaderOptions, TensorDataset
from frame_mlir.frontends.api import ops
from frame_mlir.frontends.api.graph import Graph
from frame_mlir.frontends.api.tensor import Tensor, bf16_bits

F32, F16, BF16 = frame.DType.float32, frame.DType.float16, frame.DType.bfloat16
I32, I64 = frame.DType.int32, frame.DType.int64


# ============================================================ str(graph) / to_mlir()


def _frame_opt(text: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_opt", "-", *args],
                          input=text, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _rich_graph() -> frame.Graph:
    """Inputs, an nn module with a scan step function, a non-splat and an int constant,
    scatter_add, and an integer pass-through output."""
    g = frame.Graph("lstm model")  # not a valid symbol: printed as @lstm_model
    x = g.add_graph_input([2, 5, 3], F32)
    lstm = nn.LSTM("lstm", 2, 5, 3, 4, F32)
    (h,) = lstm.build(g, [x], nn.add_parameter_inputs(g, lstm))
    bias = frame.constant(g, [float(i) for i in range(8)], [2, 4], F32)
    idx = frame.constant(g, [0, 2], [2], I64)
    g.mark_output(frame._core.scatter_add(g, frame.add(g, h, bias), idx, [3, 4]))
    g.mark_output(idx)
    return g


def test_str_and_to_mlir_print_the_frame_module() -> None:
    g = frame.Graph("double")
    x = g.add_graph_input([2, 3], F32)
    g.mark_output(frame.add(g, x, x))
    assert str(g) == g.to_mlir() == (
        "builtin.module {\n"
        "  func.func @double(%in0: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
        "    %0 = frame.add %in0, %in0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
        "tensor<2x3xf32>\n"
        "    func.return %0 : tensor<2x3xf32>\n"
        "  }\n"
        "}")
    assert repr(g) == "<Graph 'double': 1 inputs, 1 ops, 1 outputs>"


def test_printing_is_a_snapshot_and_leaves_the_graph_usable() -> None:
    g = frame.Graph("g")
    x = g.add_graph_input([2], F32)
    before = g.to_mlir()
    g.mark_output(frame.relu(g, x))
    after = g.to_mlir()
    assert "frame.relu" not in before and "frame.relu" in after
    assert after == g.to_mlir()  # printing changes nothing
    out = frame.compile(g, "cpu").run([frame.from_numpy(np.array([-1, 2], np.float32))])
    assert out[0].numpy().tolist() == [0.0, 2.0]


def test_printed_ir_round_trips_through_frame_opt() -> None:
    text = _rich_graph().to_mlir()
    assert "func.func @lstm_model(" in text and "func.func @lstm_step(" in text
    assert "%const0: tensor<2x4xf32>" in text and "%const1: tensor<2xi64>" in text
    assert _frame_opt(text).rstrip("\n") == text
    # ... and the shared passes accept it as it is.
    inferred = _frame_opt(text, "-p", "frame-shape-inference")
    assert "frame.scatter_add" in inferred


def test_backward_graph_prints_and_round_trips() -> None:
    g = frame.Graph("mlp")
    x, w = g.add_graph_input([4, 2], F32), g.add_graph_input([2, 1], F32)
    y = g.add_graph_input([4, 1], F32)
    g.mark_output(frame.mse_loss(g, frame.matmul(g, x, w), y))
    text = frame.build_backward_graph(g, 0, [1]).to_mlir()
    assert "frame.mse_loss_grad" in text
    assert _frame_opt(text).rstrip("\n") == text


# ============================================================ Tensor.to(dtype)


def _bits(t: Tensor) -> np.ndarray:
    return t.storage().view(np.uint16 if t.storage().itemsize == 2 else np.uint32)


_TORCH = {F32: torch.float32, F16: torch.float16, BF16: torch.bfloat16, I32: torch.int32,
          I64: torch.int64}


def _edge_floats() -> np.ndarray:
    """float32 values that exercise rounding: ties of both parities for f16 and bf16,
    subnormals of every width, overflow to inf, signed zeros, infinities."""
    f = np.float32
    special = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.0, 65520.0, 1e30, -1e30, np.inf, -np.inf,
               6e-8, 3e-8, 2.9e-8, 1e-40, -1e-45, 3.4028235e38, 1.0009765625, 1.00048828125,
               1.001953125, 1.00146484375, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9]
    rng = np.random.default_rng(7)
    random_bits = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32).view(f)
    random_bits = random_bits[np.isfinite(random_bits)]
    scaled = (rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 6, 2000)).astype(f)
    return np.concatenate([np.array(special, f), random_bits, scaled])


def _source(dtype: frame.DType, values: np.ndarray) -> tuple[Tensor, torch.Tensor]:
    """A frame tensor and a torch tensor of `dtype` holding `values` rounded to it."""
    t32 = torch.from_numpy(values.astype(np.float32))
    ref = t32.to(_TORCH[dtype])
    if dtype == BF16:
        t = Tensor._own(ref.view(torch.int16).numpy().view(np.uint16).copy(), BF16)
    else:
        t = frame.from_numpy(ref.numpy())
    return t, ref


@pytest.mark.parametrize("source", [F32, F16, BF16])
@pytest.mark.parametrize("target", [F32, F16, BF16])
def test_float_conversions_round_like_torch(source: frame.DType, target: frame.DType) -> None:
    t, ref = _source(source, _edge_floats())
    out = t.to(target)
    assert out.dtype == target and out.shape == t.shape and out.device == t.device
    expected = ref.to(_TORCH[target])
    want = expected.view(torch.int16 if target != F32 else torch.int32).numpy()
    got = _bits(out).view(want.dtype)
    nan = torch.isnan(expected.float()).numpy()
    # NaN payloads are not numerics (torch's own vectorised and scalar paths disagree);
    # every NaN must stay a NaN, every other value must match bit for bit.
    assert np.array_equal(got[~nan], want[~nan])
    back = out.to(F32).numpy()
    assert np.all(np.isnan(back[nan]))


def test_bf16_nan_is_the_quiet_nan_and_signs_of_zero_survive() -> None:
    t = frame.from_numpy(np.array([np.nan, -0.0, 0.0], np.float32))
    assert _bits(t.to(BF16)).tolist() == [0x7FC0, 0x8000, 0x0000]
    assert np.signbit(t.to(F16).numpy()).tolist() == [False, True, False]


def test_int_to_float_rounds_through_float32_like_torch() -> None:
    values = np.array([0, 1, -7, 2**24 + 1, 2**24 + 3, 65519, 65520, 2**31 - 1, -(2**31),
                       2**40 + 3, 2**53 + 1, -(2**62) - 12345, 2**63 - 1], np.int64)
    for source in (I32, I64):
        vals = values if source == I64 else values[np.abs(values) < 2**31]
        src = frame.from_numpy(vals.astype(np.int32 if source == I32 else np.int64))
        ref = torch.from_numpy(src.numpy())
        for target in (F32, F16, BF16):
            want = ref.to(_TORCH[target]).view(torch.int16 if target != F32 else torch.int32)
            assert np.array_equal(_bits(src.to(target)).view(want.numpy().dtype),
                                  want.numpy()), (source, target)


def test_float_to_int_truncates_and_refuses_undefined_values() -> None:
    t = frame.from_numpy(np.array([2.7, -2.7, 0.5, -0.0, 2.0**31 - 128], np.float32))
    assert t.to(I32).numpy().tolist() == torch.tensor(t.numpy()).to(torch.int32).tolist()
    assert t.to(I64).dtype == I64
    for bad in (np.nan, np.inf, 2.0**31, -(2.0**32)):
        with pytest.raises(ValueError, match="float32 -> int32 expected finite values"):
            frame.from_numpy(np.array([1.0, bad], np.float32)).to(I32)
    with pytest.raises(ValueError, match="int64"):
        frame.from_numpy(np.array([2.0**63], np.float32)).to(I64)


def test_int64_to_int32_wraps_like_torch() -> None:
    vals = np.array([2**40 + 5, -(2**31) - 1, 7], np.int64)
    got = frame.from_numpy(vals).to(I32).numpy().tolist()
    assert got == torch.from_numpy(vals).to(torch.int32).tolist() == [5, 2**31 - 1, 7]
    assert frame.from_numpy(vals.astype(np.int32)).to(I64).numpy().tolist() == \
        vals.astype(np.int32).astype(np.int64).tolist()


def test_to_signatures_and_copies() -> None:
    t = frame.from_numpy(np.array([[1.5, 2.5]], np.float32))
    for out in (t.to(F16), t.to(dtype=F16), t.to("cpu", F16), t.to(backend="cpu", dtype=F16),
                t.to(None, F16)):
        assert out.dtype == F16 and out.shape.dims == [1, 2] and out.device.backend == "cpu"
    same = t.to(F32)
    assert same is not t and np.array_equal(same.numpy(), t.numpy())
    assert t.to("cpu").dtype == F32  # the sheet's form is unchanged
    rank0 = frame.from_numpy(np.array(3.25, np.float32)).to(BF16).to(F32)
    assert rank0.shape.dims == [] and float(rank0.numpy()) == 3.25
    with pytest.raises(KeyError):
        t.to("no-such-backend", F16)
    with pytest.raises(TypeError, match="dtype given twice"):
        t.to(F16, F32)
    with pytest.raises(TypeError, match="dtype must be a DType"):
        t.to("cpu", "float16")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a backend name"):
        t.to()


def test_bf16_tensor_gets_a_numpy_view_through_to() -> None:
    g = frame.Graph("c")
    g.mark_output(frame.constant(g, [1.0, 2.0, 3.00390625], [3], BF16))
    (b,) = frame.compile(g, "cpu").run([])
    with pytest.raises(NotImplementedError, match="no numpy representation"):
        b.numpy()
    assert b.to(F32).numpy().tolist() == [1.0, 2.0, 3.0]  # 3.0039 rounded to bf16 on entry


# ============================================================ DataLoader length and short batches


@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 17])
@pytest.mark.parametrize("batch_size", [1, 3, 8, 20])
@pytest.mark.parametrize("drop_last", [False, True])
def test_len_matches_torch_dataloader(n: int, batch_size: int, drop_last: bool) -> None:
    ds = TensorDataset([frame.from_numpy(np.zeros((n, 2), np.float32))])
    loader = DataLoader(ds, DataLoaderOptions(batch_size=batch_size, drop_last=drop_last))
    reference = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(n, 2)),
                                            batch_size=batch_size, drop_last=drop_last)
    assert len(loader) == len(reference) == loader.batches_per_epoch
    assert len(list(loader)) == len(loader)


def _fixed_batch_model(batch: int) -> tuple[frame.Executable, list[Tensor]]:
    model = nn.Linear("fc", batch, 3, 1, True, F32)
    g = frame.Graph("fc")
    x, y = g.add_graph_input([batch, 3], F32), g.add_graph_input([batch, 1], F32)
    (pred,) = model.build(g, [x], nn.add_parameter_inputs(g, model))
    g.mark_output(frame.mse_loss(g, pred, y))
    step = frame.compile(frame.build_backward_graph(g, 0, [2, 3]), "cpu")
    weights = [frame.from_numpy(np.full(shape, 0.1, np.float32))
               for _, shape, _ in model.parameters()]
    return step, weights


def test_short_last_batch_error_names_drop_last() -> None:
    features = frame.from_numpy(np.ones((10, 3), np.float32))
    targets = frame.from_numpy(np.ones((10, 1), np.float32))
    step, weights = _fixed_batch_model(4)
    loader = DataLoader(TensorDataset([features, targets]), DataLoaderOptions(batch_size=4))
    batches = list(loader)
    for xb, yb in batches[:2]:  # full batches: no note, and they run
        assert xb._note is None
        step.run([xb, yb, *weights])
    xb, yb = batches[2]
    with pytest.raises(ValueError) as err:
        step.run([xb, yb, *weights])
    message = str(err.value)
    assert message.startswith("run: input 0 expected shape [4, 3], found [2, 3]: ")
    for fragment in ("last batch", "2 rows instead of batch_size 4", "10 samples",
                     "DataLoaderOptions(drop_last=True)"):
        assert fragment in message
    # With drop_last the same loop never sees the short batch.
    loader = DataLoader(TensorDataset([features, targets]),
                        DataLoaderOptions(batch_size=4, drop_last=True))
    assert [step.run([xb, yb, *weights])[0].shape.dims for xb, yb in loader] == [[], []]


def test_a_plain_shape_mismatch_has_no_drop_last_note() -> None:
    step, weights = _fixed_batch_model(4)
    with pytest.raises(ValueError) as err:
        step.run([frame.from_numpy(np.ones((2, 3), np.float32)),
                  frame.from_numpy(np.ones((4, 1), np.float32)), *weights])
    assert str(err.value) == "run: input 0 expected shape [4, 3], found [2, 3]"


# ============================================================ shape errors from dialect rules


def test_shape_errors_come_from_the_dialect_rules() -> None:
    g = frame.Graph("g")
    a, b = g.add_graph_input([2, 2], F32), g.add_graph_input([3, 3], F32)
    with pytest.raises(ValueError) as err:
        frame.add(g, a, b)
    assert str(err.value) == ("add: operands must have the same shape; operand shapes must "
                              "match (no broadcasting in v0): expected [2, 2], found [3, 3]")
    with pytest.raises(ValueError) as err:
        frame.mse_loss(g, a, b)
    assert str(err.value) == ("mse_loss: operands must have the same shape; target shape "
                              "expected [2, 2], found [3, 3]")
    with pytest.raises(ValueError) as err:
        frame.sum(g, a, [2])
    assert str(err.value) == "sum: axis 2 is out of range (expected 0 <= axis < 2)"
    with pytest.raises(ValueError) as err:
        frame.matmul(g, a, b)
    assert str(err.value) == ("matmul: contraction dimension mismatch: expected rhs dim 2 "
                              "(the lhs's), found 3")
    with pytest.raises(ValueError, match=r"MseLoss 'loss': operands must have the same shape; "
                                         r"target shape expected \[2, 2\], found \[3, 3\]"):
        nn.MseLoss("loss").build(g, [a, b], [])


def test_scatter_add_shapes_are_checked_by_the_op_rule() -> None:
    g = frame.Graph("g")
    updates = g.add_graph_input([3, 2], F32)
    rows = frame.constant(g, [0, 1, 2], [3], I64)
    with pytest.raises(ValueError) as err:
        frame._core.scatter_add(g, updates, rows, [4, 3])
    assert str(err.value) == ("scatter_add: expected updates [K, F], indices [K] and a "
                              "[V, F] result, found [3, 2], [3], [4, 3]")
    with pytest.raises(ValueError, match=r"found \[3, 2\], \[2\], \[4, 2\]"):
        frame._core.scatter_add(g, updates, frame.constant(g, [0, 1], [2], I32), [4, 2])
    with pytest.raises(ValueError, match="indices expected dtype int32 or int64, found "
                                         "'float32'"):
        frame._core.scatter_add(g, updates, updates, [4, 2])
    assert repr(frame._core.scatter_add(g, updates, rows, [4, 2])) == "<Value [4, 2] float32>"


def test_sum_over_all_axes_with_an_empty_list() -> None:
    g = frame.Graph("g")
    x = g.add_graph_input([2, 3], F32)
    assert frame.sum(g, x, []).__repr__() == "<Value [] float32>"
    assert frame.sum(g, x, [1, 0]).__repr__() == "<Value [] float32>"


# ============================================================ SGD on frame.sgd_update


def _reference_sgd(dtype: frame.DType, lr: float, n: int) -> Graph:
    """The sheet's reference update, add(p, mul(constant(-lr), g)), from plain ops."""
    g = Graph("reference")
    p, grad = g.add_graph_input([n], dtype), g.add_graph_input([n], dtype)
    neg_lr = ops.constant(g, [-lr] * n, [n], dtype)
    g.mark_output(ops.add(g, p, ops.mul(g, neg_lr, grad)))
    return g


def _tensor(values: np.ndarray, dtype: frame.DType) -> Tensor:
    if dtype == BF16:
        return Tensor._own(bf16_bits(values), BF16)
    return frame.from_numpy(values.astype(np.float16 if dtype == F16 else np.float32))


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("lr", [0.1, 0.037, 3.3, 0.0, -0.25, 1e-40, 70000.0])
def test_sgd_update_graph_is_bit_identical_to_the_reference(dtype: frame.DType,
                                                            lr: float) -> None:
    n = 257
    rng = np.random.default_rng(int(abs(lr) * 1000) + int(dtype))
    scale = rng.choice([1e-3, 1.0, 100.0], n)
    p = _tensor((rng.standard_normal(n) * scale).astype(np.float32), dtype)
    grad = _tensor((rng.standard_normal(n) * scale[::-1]).astype(np.float32), dtype)
    update = frame.build_sgd_update_graph([([n], dtype)], lr)
    got = frame.compile(update, "cpu").run([p, grad])[0]
    want = frame.compile(_reference_sgd(dtype, lr, n), "cpu").run([p, grad])[0]
    assert got.dtype == dtype
    assert np.array_equal(_bits(got), _bits(want))


def test_sgd_update_graph_is_built_on_frame_sgd_update() -> None:
    shapes = [([2, 3], F32), ([4], F16), ([2], F32)]
    text = frame.build_sgd_update_graph(shapes, 0.05).to_mlir()
    assert text.count("frame.sgd_update") == 3
    assert "lr = 5.000000e-02" in text  # float32 with a positive lr: the op alone
    assert "frame.add" not in text
    # float16: the step is rounded to f16 first (as the reference rounds it), then
    # subtracted by sgd_update with lr 1.
    assert text.count("frame.mul") == 1 and "lr = 1.000000e+00" in text
    # lr <= 0 is outside what the op's verifier accepts: the step-first form again.
    assert "frame.mul" in frame.build_sgd_update_graph([([2], F32)], -0.5).to_mlir()
