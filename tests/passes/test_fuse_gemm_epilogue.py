"""frame-fuse-gemm-epilogue: bias adds, activations, activation gradients and SGD updates
run inside the GEMM that produces their input, with the same bits as without the pass.

Oracles: the pipeline with the pass turned off (`CompileOptions(fuse_epilogue=False)`),
bit for bit -- the unfused kernels are checked against PyTorch in tests/oracle and
tests/backend/test_gemm.py -- and torch (float64) for one step of each model. Shapes
are odd and the caches small so that every edge of the blocking carries an epilogue;
both placements (per register tile, per cache block) and split-K are reached.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from frame_mlir.passes.frame_gemm import C_DEAD_ATTR
from frame_mlir.passes.pipeline import CompileOptions, make_context
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")

LR = 0.125

MLP = """
func.func @net(%x: tensor<13x37xf32>, %w1: tensor<37x71xf32> {frame.param = "w1"},
               %b1: tensor<71xf32> {frame.param = "b1"},
               %w2: tensor<71x29xf32> {frame.param = "w2"},
               %b2: tensor<29xf32> {frame.param = "b2"},
               %w3: tensor<29x5xf32> {frame.param = "w3"}, %t: tensor<13x5xf32>) -> tensor<f32> {
  %0 = frame.matmul %x, %w1 : (tensor<13x37xf32>, tensor<37x71xf32>) -> tensor<13x71xf32>
  %1 = frame.broadcast %b1 {axes = array<i64: 0>} : (tensor<71xf32>) -> tensor<13x71xf32>
  %2 = frame.add %0, %1 : (tensor<13x71xf32>, tensor<13x71xf32>) -> tensor<13x71xf32>
  %3 = frame.relu %2 : (tensor<13x71xf32>) -> tensor<13x71xf32>
  %4 = frame.matmul %3, %w2 : (tensor<13x71xf32>, tensor<71x29xf32>) -> tensor<13x29xf32>
  %5 = frame.broadcast %b2 {axes = array<i64: 0>} : (tensor<29xf32>) -> tensor<13x29xf32>
  %6 = frame.add %4, %5 : (tensor<13x29xf32>, tensor<13x29xf32>) -> tensor<13x29xf32>
  %7 = frame.sigmoid %6 : (tensor<13x29xf32>) -> tensor<13x29xf32>
  %8 = frame.matmul %7, %w3 : (tensor<13x29xf32>, tensor<29x5xf32>) -> tensor<13x5xf32>
  %9 = frame.mse_loss %8, %t : (tensor<13x5xf32>, tensor<13x5xf32>) -> tensor<f32>
  func.return %9 : tensor<f32>
}
"""

# A first convolution's shapes: its weight gradient (4 x 25 outputs over 16 x 24 x 24
# positions) is split over k, so its SGD update runs after the partial sums are added.
CONV = """
func.func @cnn(%x: tensor<16x1x28x28xf32>, %w: tensor<4x1x5x5xf32> {frame.param = "w"},
               %b: tensor<4xf32> {frame.param = "b"}, %r: tensor<16x4x24x24xf32>) -> tensor<f32> {
  %0 = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<16x1x28x28xf32>, tensor<4x1x5x5xf32>) -> tensor<16x4x24x24xf32>
  %1 = frame.broadcast %b {axes = array<i64: 0, 2, 3>} : (tensor<4xf32>) -> tensor<16x4x24x24xf32>
  %2 = frame.add %0, %1 : (tensor<16x4x24x24xf32>, tensor<16x4x24x24xf32>) -> tensor<16x4x24x24xf32>
  %3 = frame.relu %2 : (tensor<16x4x24x24xf32>) -> tensor<16x4x24x24xf32>
  %4 = frame.mul %3, %r : (tensor<16x4x24x24xf32>, tensor<16x4x24x24xf32>) -> tensor<16x4x24x24xf32>
  %5 = frame.sum %4 : (tensor<16x4x24x24xf32>) -> tensor<f32>
  func.return %5 : tensor<f32>
}
"""


class Fused:
    """An `after_pass` hook: the kernels frame-fuse-gemm-epilogue made."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.c_dead: list[str] = []  # those whose C nothing else reads (`frame.c_dead`)

    def __call__(self, p: ModulePass, module: builtin.ModuleOp) -> None:
        if p.name == "frame-fuse-gemm-epilogue":
            fns = [f for f in module.ops if isinstance(f, func.FuncOp)
                   and ("_matmul_" in f.sym_name.data or "_conv_" in f.sym_name.data)]
            self.names = [f.sym_name.data for f in fns]
            self.c_dead = [f.sym_name.data for f in fns if C_DEAD_ATTR in f.attributes]


def _compile(source: str, fuse: bool, **options: object) -> tuple[Executable, Fused]:
    module = Parser(make_context(), source).parse_module()
    hook = Fused()
    opts = CompileOptions(**{"threads": 1, "gemm_min_flops": 0, **options,  # type: ignore[arg-type]
                             "fuse_epilogue": fuse})
    return compile_module(module, lr=LR, options=opts, after_pass=hook, cache=None), hook


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


def _train(ex: Executable, fn: str, data: list[np.ndarray], params: list[np.ndarray],
           extra: list[np.ndarray], steps: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    losses = []
    for _ in range(steps):
        loss, *params = ex(fn, *data, *params, *extra)
        losses.append(loss)
    return losses, params


def _assert_sgd_step(new: list[np.ndarray], tp: list[object]) -> None:
    """Our parameters after one step equal torch's float64 `p - LR * p.grad`."""
    for ours, p in zip(new, tp, strict=True):
        assert p.grad is not None  # type: ignore[attr-defined]
        np.testing.assert_allclose(ours, (p - LR * p.grad).detach().numpy(),  # type: ignore[attr-defined, operator]
                                   rtol=1e-5, atol=1e-6)


def _mlp_data() -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(20261201)
    x = rng.standard_normal((13, 37)).astype(np.float32)
    params = [(rng.standard_normal(s) * 0.3).astype(np.float32)
              for s in ((37, 71), (71,), (71, 29), (29,), (29, 5))]
    return x, params, rng.random((13, 5)).astype(np.float32)


@pytest.mark.parametrize("options", [
    # (l1 512: the KC that 2 KiB gave before KC could take twice L1, `choose_blocking`)
    {"l1_bytes": 512, "l2_bytes": 32768, "l3_bytes": 32768, "f32_lanes": 8},  # epilogue per register tile
    {"l1_bytes": 512, "l2_bytes": 4096, "l3_bytes": 4096, "f32_lanes": 4},  # per cache block
    {"l1_bytes": 512, "l2_bytes": 32768, "l3_bytes": 32768, "f32_lanes": 16, "threads": 3},
    {},  # the host's blocking
])
def test_mlp_is_bit_identical_to_the_unfused_pipeline(options: dict[str, int]) -> None:
    """Five train steps: losses and parameters have the same bits with and without the
    pass; the forward bias + activation, the activation gradient and the weight
    updates did move into GEMM kernels. The weight gradients (K = 13, one k block) feed
    nothing but their updates: frame-gemm keeps their tiles in scratch, never in C."""
    x, params, t = _mlp_data()
    (plain, _), (fused, hook) = _compile(MLP, False, **options), _compile(MLP, True, **options)
    l0, p0 = _train(plain, "net_train_step", [x], params, [t], 5)
    l1, p1 = _train(fused, "net_train_step", [x], params, [t], 5)
    assert float(l1[-1]) < float(l1[0])  # it trained
    for a, b in zip([*l0, *p0], [*l1, *p1], strict=True):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    (y0,), (y1,) = plain("net", x, *params, t), fused("net", x, *params, t)
    np.testing.assert_array_equal(_bits(y0), _bits(y1))
    suffixes = " ".join(hook.names)
    assert "matmul_broadcast_add_relu" in suffixes  # forward, layer 1
    assert "matmul_broadcast_add_sigmoid" in suffixes  # layer 2
    assert "matmul_sgd_update" in suffixes  # the weight updates
    assert any("matmul_sgd_update" in name for name in hook.c_dead), hook.c_dead


def test_mlp_step_matches_torch() -> None:
    """One fused step against torch in float64: the fused kernels compute the model."""
    x, params, t = _mlp_data()
    fused, _ = _compile(MLP, True, l1_bytes=512, l2_bytes=32768,
                          l3_bytes=32768)
    (loss,), new = _train(fused, "net_train_step", [x], params, [t], 1)
    tp = [torch.from_numpy(p).double().requires_grad_() for p in params]
    tx, tt = torch.from_numpy(x).double(), torch.from_numpy(t).double()
    h = torch.relu(tx @ tp[0] + tp[1])
    y = torch.sigmoid(h @ tp[2] + tp[3]) @ tp[4]
    ref = torch.nn.functional.mse_loss(y, tt)
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    _assert_sgd_step(new, tp)


# Biases of the batch's full shape, as the Python API's Linear and v0 specs have them:
# each bias gradient is the layer output's gradient itself, made by the next layer's
# input-gradient GEMM (with the relu gradient in its epilogue) and read by that
# layer's weight-gradient GEMM before the bias update reads it.
FULL_BIAS_MLP = """
func.func @wide(%x: tensor<13x37xf32>, %w1: tensor<37x71xf32> {frame.param = "w1"},
                %b1: tensor<13x71xf32> {frame.param = "b1"},
                %w2: tensor<71x29xf32> {frame.param = "w2"},
                %b2: tensor<13x29xf32> {frame.param = "b2"},
                %w3: tensor<29x5xf32> {frame.param = "w3"}, %t: tensor<13x5xf32>) -> tensor<f32> {
  %0 = frame.matmul %x, %w1 : (tensor<13x37xf32>, tensor<37x71xf32>) -> tensor<13x71xf32>
  %1 = frame.add %0, %b1 : (tensor<13x71xf32>, tensor<13x71xf32>) -> tensor<13x71xf32>
  %2 = frame.relu %1 : (tensor<13x71xf32>) -> tensor<13x71xf32>
  %3 = frame.matmul %2, %w2 : (tensor<13x71xf32>, tensor<71x29xf32>) -> tensor<13x29xf32>
  %4 = frame.add %3, %b2 : (tensor<13x29xf32>, tensor<13x29xf32>) -> tensor<13x29xf32>
  %5 = frame.relu %4 : (tensor<13x29xf32>) -> tensor<13x29xf32>
  %6 = frame.matmul %5, %w3 : (tensor<13x29xf32>, tensor<29x5xf32>) -> tensor<13x5xf32>
  %7 = frame.mse_loss %6, %t : (tensor<13x5xf32>, tensor<13x5xf32>) -> tensor<f32>
  func.return %7 : tensor<f32>
}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_bias_update_joins_the_epilogue_past_the_gemms_reading_its_gradient(
        threads: int) -> None:
    """The walk from a GEMM passes over calls that cannot join (the weight-gradient
    GEMM reading the relu gradient, the next GEMM's fill): a full-shape bias's SGD
    update, which reads the epilogue's output after them, moves up into the epilogue
    that made it. Five steps have the same bits as unfused, one matches torch."""
    rng = np.random.default_rng(20261207)
    x = rng.standard_normal((13, 37)).astype(np.float32)
    params = [(rng.standard_normal(s) * 0.3).astype(np.float32)
              for s in ((37, 71), (13, 71), (71, 29), (13, 29), (29, 5))]
    t = rng.random((13, 5)).astype(np.float32)
    (plain, _), (fused, hook) = (_compile(FULL_BIAS_MLP, f, threads=threads)
                                 for f in (False, True))
    l0, p0 = _train(plain, "wide_train_step", [x], params, [t], 5)
    l1, p1 = _train(fused, "wide_train_step", [x], params, [t], 5)
    assert float(l1[-1]) < float(l1[0])
    for a, b in zip([*l0, *p0], [*l1, *p1], strict=True):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    fused_names = [n for n in hook.names if n.endswith("_matmul_relu_grad_sgd_update")]
    assert fused_names, hook.names  # b1's update, in the epilogue of dh1 = dh2 @ w2^T

    tp = [torch.from_numpy(p).double().requires_grad_() for p in params]
    tx, tt = torch.from_numpy(x).double(), torch.from_numpy(t).double()
    h = torch.relu(tx @ tp[0] + tp[1])
    ref = torch.nn.functional.mse_loss(torch.relu(h @ tp[2] + tp[3]) @ tp[4], tt)
    ref.backward()
    (loss,), new = _train(fused, "wide_train_step", [x], params, [t], 1)
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    _assert_sgd_step(new, tp)


@pytest.mark.parametrize("threads", [1, 2])
def test_conv_epilogues_and_split_k_update(threads: int) -> None:
    """A convolution with its broadcast bias and relu in the GEMM's epilogue, and its
    split-K weight gradient with the SGD update after the partial sums: the same bits
    as unfused, and one step matches torch."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 1, 28, 28)).astype(np.float32)
    params = [(rng.standard_normal((4, 1, 5, 5)) * 0.2).astype(np.float32),
              rng.standard_normal(4).astype(np.float32)]
    r = rng.standard_normal((16, 4, 24, 24)).astype(np.float32)
    (plain, _), (fused, hook) = (_compile(CONV, f, threads=threads) for f in (False, True))
    l0, p0 = _train(plain, "cnn_train_step", [x], params, [r], 3)
    l1, p1 = _train(fused, "cnn_train_step", [x], params, [r], 3)
    for a, b in zip([*l0, *p0], [*l1, *p1], strict=True):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    suffixes = " ".join(hook.names)
    assert "conv_broadcast_add_relu" in suffixes
    assert "conv_grad_weight_sgd_update" in suffixes

    tx, tr = torch.from_numpy(x).double(), torch.from_numpy(r).double()
    tw, tb = (torch.from_numpy(p).double().requires_grad_() for p in params)
    ref = (torch.relu(torch.nn.functional.conv2d(tx, tw, tb)) * tr).sum()
    ref.backward()
    (loss,), new = _train(fused, "cnn_train_step", [x], params, [r], 1)
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    for ours, p in zip(new, (tw, tb), strict=True):
        assert p.grad is not None
        np.testing.assert_allclose(ours, (p - LR * p.grad).detach().numpy(), rtol=1e-5,
                                   atol=2e-5 * float(p.grad.abs().max()) * LR)


def test_epilogue_bytes_are_counted_per_outer_index() -> None:
    """Where the epilogue runs is chosen from the bytes one outer index (a head, an
    image) touches: attention's 64 heads of 128 x 128 scores with their scale are 64 KiB
    at a time (per tile, in L1), not 4 MiB; a bias smaller than C counts whole."""
    from types import SimpleNamespace

    from xdsl.dialects.builtin import MemRefType, f32

    from frame_mlir.passes.frame_gemm import Contraction, _epilogue_bytes

    class Buf:  # a buffer value: hashed by identity, as SSA values are
        def __init__(self, *shape: int) -> None:
            self.type = MemRefType(f32, list(shape))

    buf = Buf

    c, scaled, bias = buf(64, 128, 128), buf(64, 128, 128), buf(128)
    g = SimpleNamespace(c_value=c, sizes=(64, 128, 128, 32), outer=[0], rows=[1],
                        cols=[2], red=[3])
    g.m, g.n = Contraction.m.fget(g), Contraction.n.fget(g)  # type: ignore[attr-defined]
    epi = SimpleNamespace(ops=[SimpleNamespace(inputs=[c, bias], outputs=[scaled])])
    assert _epilogue_bytes(g, epi) == 2 * 4 * 128 * 128 + 4 * 128  # type: ignore[arg-type]
    g.outer, g.rows, g.sizes = [], [0, 1], (64, 128, 128, 32)
    g.m = Contraction.m.fget(g)  # type: ignore[attr-defined]
    assert _epilogue_bytes(g, epi) == 2 * 4 * 64 * 128 * 128 + 4 * 128  # type: ignore[arg-type]
