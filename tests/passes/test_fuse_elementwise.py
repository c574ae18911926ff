"""frame-fuse-elementwise: fused chains compute the same bits as the unfused pipeline.

Oracles: the pipeline with the pass turned off (`CompileOptions(fuse_elementwise=False)`),
bit for bit, on f32 and f16 models -- the unfused kernels are themselves checked
against PyTorch in tests/oracle -- and torch (float64) for a model whose forward and
backward are mostly elementwise chains. The kernel counts say the pass did fuse.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.dialects.linalg import ops as linalg
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from frame_mlir.frontends.spec.initial_values import generate_initial_values
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session
from frame_mlir.passes.convert_frame_to_linalg import ConvertFrameToLinalg
from frame_mlir.passes.frame_fuse_elementwise import FrameFuseElementwise
from frame_mlir.passes.pipeline import CompileOptions, make_context, run_passes
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"


def _bits(a: np.ndarray) -> np.ndarray:
    """The raw bytes of `a` (exact comparison, NaN-safe, any float width)."""
    return np.ascontiguousarray(a).view(np.uint8)


def _options(fuse: bool) -> CompileOptions:
    return CompileOptions(threads=1, fuse_elementwise=fuse)


class KernelCount:
    """An `after_pass` hook: after frame-outline-kernels, the kernel calls of each
    public function and the number of kernel functions."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.kernels = 0
        self.suffixes: set[str] = set()

    def __call__(self, p: ModulePass, module: builtin.ModuleOp) -> None:
        if p.name != "frame-outline-kernels":
            return
        for fn in module.ops:
            if not isinstance(fn, func.FuncOp):
                continue
            if fn.sym_visibility is not None and fn.sym_visibility.data == "private":
                self.kernels += 1
                self.suffixes.add(fn.sym_name.data.split("__k", 1)[1])
            else:
                self.calls[fn.sym_name.data] = sum(isinstance(o, func.CallOp)
                                                   for o in fn.walk())


# --- mnist_mlp (f32, spec) ------------------------------------------------------------

def test_mnist_mlp_is_bit_identical() -> None:
    """Train steps, the forward loss and the prediction, fused vs unfused. fc1's bias
    add feeds only its relu (the relu's gradient reads the relu's output), so
    `add -> relu` fuses in the train step as in the forward and predict functions."""
    spec = load_spec(TESTDATA / "mnist_mlp.json")
    values = generate_initial_values(spec)
    runs = {}
    for fuse in (False, True):
        count = KernelCount()
        compiled = CompiledSpec(spec, options=_options(fuse), after_pass=count, cache=None)
        session = Session(compiled, values)
        losses = np.array([session.step() for _ in range(3)] + list(session.run(3)),
                          dtype=np.float32)
        runs[fuse] = (losses, session.params(), session.predict(), session.evaluate(), count)
    (l0, p0, y0, e0, c0), (l1, p1, y1, e1, c1) = runs[False], runs[True]
    assert np.array_equal(_bits(l0), _bits(l1))
    assert l1[-1] < l1[0]  # it trained
    assert p0.keys() == p1.keys()
    for name in p0:
        assert np.array_equal(_bits(p0[name]), _bits(p1[name])), name
    assert np.array_equal(_bits(y0), _bits(y1))
    assert _bits(np.float32(e0)).tobytes() == _bits(np.float32(e1)).tobytes()
    # fc1's add and relu become one kernel in every function
    assert c1.calls["mnist_mlp"] == c0.calls["mnist_mlp"] - 1
    assert c1.calls["mnist_mlp_train_step"] == c0.calls["mnist_mlp_train_step"] - 1
    assert "add_relu" not in {s.split("_", 1)[1] for s in c0.suffixes}
    assert "add_relu" in {s.split("_", 1)[1] for s in c1.suffixes}


# --- an MLP whose train step fuses (f32 and f16) -------------------------------------

def _mlp_source(t: str) -> str:
    """matmul -> + broadcast bias -> scale -> sigmoid -> matmul -> relu -> mse, element
    type `t`: forward and backward both hold elementwise chains with single uses."""
    return f"""
func.func @net(%x: tensor<8x16x{t}>, %w1: tensor<16x32x{t}> {{frame.param = "w1"}},
               %b1: tensor<32x{t}> {{frame.param = "b1"}},
               %w2: tensor<32x4x{t}> {{frame.param = "w2"}}, %t: tensor<8x4x{t}>) -> tensor<{t}> {{
  %0 = frame.matmul %x, %w1 {{frame.layer = "fc1"}} : (tensor<8x16x{t}>, tensor<16x32x{t}>) -> tensor<8x32x{t}>
  %1 = frame.broadcast %b1 {{axes = array<i64: 0>, frame.layer = "fc1"}} : (tensor<32x{t}>) -> tensor<8x32x{t}>
  %2 = frame.add %0, %1 {{frame.layer = "fc1"}} : (tensor<8x32x{t}>, tensor<8x32x{t}>) -> tensor<8x32x{t}>
  %3 = frame.scale %2 {{factor = 0.5 : f32, frame.layer = "act"}} : (tensor<8x32x{t}>) -> tensor<8x32x{t}>
  %4 = frame.sigmoid %3 {{frame.layer = "act"}} : (tensor<8x32x{t}>) -> tensor<8x32x{t}>
  %5 = frame.matmul %4, %w2 {{frame.layer = "fc2"}} : (tensor<8x32x{t}>, tensor<32x4x{t}>) -> tensor<8x4x{t}>
  %6 = frame.relu %5 {{frame.layer = "fc2.relu"}} : (tensor<8x4x{t}>) -> tensor<8x4x{t}>
  %7 = frame.mse_loss %6, %t {{frame.layer = "loss"}} : (tensor<8x4x{t}>, tensor<8x4x{t}>) -> tensor<{t}>
  func.return %7 : tensor<{t}>
}}
"""


LR = 0.25


def _compile_mlp(t: str, fuse: bool) -> tuple[Executable, KernelCount]:
    module = Parser(make_context(), _mlp_source(t)).parse_module()
    count = KernelCount()
    ex = compile_module(module, lr=LR, options=_options(fuse), after_pass=count, cache=None)
    return ex, count


def _mlp_data(dtype: type[np.floating]) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(20260909)
    x = rng.standard_normal((8, 16)).astype(dtype)
    params = [(rng.standard_normal((16, 32)) * 0.3).astype(dtype),
              rng.standard_normal(32).astype(dtype),
              (rng.standard_normal((32, 4)) * 0.3).astype(dtype)]
    target = rng.random((8, 4)).astype(dtype)
    return x, params, target


def _train(ex: Executable, x: np.ndarray, params: list[np.ndarray], target: np.ndarray,
           steps: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """`steps` calls of the train step, each on the parameters the last one returned."""
    losses = []
    for _ in range(steps):
        loss, *params = ex("net_train_step", x, *params, target)
        losses.append(loss)
    return np.array(losses), params


@pytest.mark.parametrize(("t", "dtype"), [("f32", np.float32), ("f16", np.float16)])
def test_fused_train_step_is_bit_identical(t: str, dtype: type[np.floating]) -> None:
    """Losses and parameters over several steps, the same bits with and without the
    pass. In f16 this holds only because each merged body still rounds to f16 where
    the separate op stored (the bias add reads the matmul's rounded result, the update
    the rounded gradient)."""
    x, params, target = _mlp_data(dtype)
    (plain, c0), (fused, c1) = _compile_mlp(t, False), _compile_mlp(t, True)
    l0, p0 = _train(plain, x, params, target, 6)
    l1, p1 = _train(fused, x, params, target, 6)
    assert l0.dtype == dtype and all(p.dtype == dtype for p in p1)
    assert np.array_equal(_bits(l0), _bits(l1))
    assert float(l1[-1]) < float(l1[0])  # it trained
    for a, b in zip(p0, p1, strict=True):
        assert np.array_equal(_bits(a), _bits(b))
    (y0,), (y1,) = plain("net", x, *params, target), fused("net", x, *params, target)
    assert np.array_equal(_bits(y0), _bits(y1))
    # Fewer kernels per step: broadcast + add + scale + sigmoid is one loop, the
    # sigmoid and scale gradients another, the mse gradient and relu gradient a third
    # (and in f16 the roundings of the matmuls merge into what reads them: fc2's into
    # its relu, the only reader, since the relu gradient reads the relu's output).
    fewer = {"f32": 7, "f16": 13}[t]
    assert c1.calls["net_train_step"] == c0.calls["net_train_step"] - fewer
    assert c1.calls["net"] < c0.calls["net"]
    chains = {s.split("_", 1)[1] for s in c1.suffixes}
    assert "broadcast_add_scale_sigmoid" in chains or \
        "broadcast_matmul_add_scale_sigmoid" in chains


def test_fused_train_step_matches_torch() -> None:
    """One step of the f32 MLP against torch in float64: the fused kernels compute
    the model, not just what the unfused ones do."""
    x, params, target = _mlp_data(np.float32)
    fused, _ = _compile_mlp("f32", True)
    (loss,), new = _train(fused, x, params, target, 1)
    tx, tt = torch.from_numpy(x).double(), torch.from_numpy(target).double()
    tp = [torch.from_numpy(p).double().requires_grad_() for p in params]
    h = torch.sigmoid(0.5 * (tx @ tp[0] + tp[1]))
    ref = torch.nn.functional.mse_loss(torch.relu(h @ tp[2]), tt)
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    for ours, p in zip(new, tp, strict=True):
        assert p.grad is not None
        expected = (p - LR * p.grad).detach().numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


# --- what is not fused ---------------------------------------------------------------

TWO_USES = """
func.func @g(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = frame.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = frame.relu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = frame.scale %0 {factor = 3.0 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = frame.mul %2, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %1, %3 : tensor<4x8xf32>, tensor<4x8xf32>
}
"""


def _linalg(source: str, fuse: bool) -> builtin.ModuleOp:
    ctx = make_context()
    module = Parser(ctx, source).parse_module()
    passes: list[ModulePass] = [ConvertFrameToLinalg()]
    if fuse:
        passes.append(FrameFuseElementwise())
    run_passes(ctx, module, passes)
    return module


def _docs(module: builtin.ModuleOp) -> list[str]:
    return [o.doc.data if o.doc else "" for o in module.walk() if isinstance(o, linalg.GenericOp)]


def test_producer_with_two_uses_is_not_fused() -> None:
    """neg is read by relu and by scale: merging it into either would compute it twice,
    so all three stay; scale (one use) merges into mul."""
    assert _docs(_linalg(TWO_USES, False)) == ["frame.neg", "frame.relu", "frame.scale",
                                               "frame.mul"]
    assert _docs(_linalg(TWO_USES, True)) == ["frame.neg", "frame.relu",
                                              "frame.scale+frame.mul"]


def test_producer_with_two_uses_computes_the_same() -> None:
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    outs = []
    for fuse in (False, True):
        module = Parser(make_context(), TWO_USES).parse_module()
        outs.append(compile_module(module, options=_options(fuse), cache=None)("g", x))
    np.testing.assert_array_equal(outs[1][0], np.maximum(-x, 0))
    np.testing.assert_array_equal(outs[1][1], (-x * np.float32(3.0)) * x)
    for a, b in zip(*outs, strict=True):
        assert np.array_equal(_bits(a), _bits(b))


CASES: dict[str, tuple[str, Callable[[list[str]], bool]]] = {
    # Uses by one op only (relu and add both end up in one body, which reads neg
    # twice, then neg itself): one body computes neg once per element.
    "one_reader": ("""
func.func @o(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = frame.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = frame.relu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = frame.add %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = frame.mul %2, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}
""", lambda d: d == ["frame.neg+frame.relu+frame.add+frame.mul"]),
    # A reduction (sum) neither absorbs its elementwise producer nor is absorbed.
    "reduction": ("""
func.func @r(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = frame.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = frame.sum %0 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = frame.relu %1 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
""", lambda d: d == ["frame.neg", "frame.sum", "frame.relu"]),
    # A transposed read of an elementwise result does not fuse (other map); the
    # transpose itself (identity output map) fuses into what reads it.
    "transpose": ("""
func.func @t(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = frame.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = frame.transpose %0 : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %2 = frame.relu %1 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %2 : tensor<8x4xf32>
}
""", lambda d: d == ["frame.neg", "frame.transpose+frame.relu"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_boundaries(case: str) -> None:
    source, expected = CASES[case]
    docs = _docs(_linalg(source, True))
    assert expected(docs), docs
