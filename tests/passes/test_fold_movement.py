"""frame-fold-movement: attention's per-head products read q, k, v and the gradients
through the head split's transpose and reshape, with the same bits as the copies.

Oracles: the pipeline with the pass turned off (`CompileOptions(fold_movement=False)`),
bit for bit, and torch in float64 for one step. Shapes are odd (3 sequences of 7, 2
heads of 5) and the caches small, so that the strided operands meet every edge of
frame-gemm's blocking; 1 and 2 threads.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from frame_mlir.passes.pipeline import CompileOptions, make_context
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")

LR = 0.125
B, S, H, D = 3, 7, 2, 5
E = H * D


def _attention(b: int, s: int, h: int, d: int) -> str:
    """Self-attention on x [b*s, e] with full-shape q/k/v biases, + mse (as
    `frame.nn.MultiheadAttention` builds it)."""
    e, r = h * d, b * s
    x2, x4, xt = (f"tensor<{r}x{e}xf32>", f"tensor<{b}x{s}x{h}x{d}xf32>",
                  f"tensor<{b}x{h}x{s}x{d}xf32>")
    sc = f"tensor<{b}x{h}x{s}x{s}xf32>"
    w = f"tensor<{e}x{e}xf32>"
    lines = [f"func.func @mha(%x: {x2}, %t: {x2}, "
             + ", ".join(f'%w{n}: {w} {{frame.param = "w{n}"}}, '
                         f'%b{n}: {x2} {{frame.param = "b{n}"}}' for n in "qkv")
             + f', %wo: {w} {{frame.param = "wo"}}) -> tensor<f32> {{']
    for n in "qkv":
        lines += [f"  %{n}0 = frame.matmul %x, %w{n} : ({x2}, {w}) -> {x2}",
                  f"  %{n}1 = frame.add %{n}0, %b{n} : ({x2}, {x2}) -> {x2}",
                  f"  %{n}2 = frame.reshape %{n}1 : ({x2}) -> {x4}",
                  f"  %{n} = frame.transpose %{n}2 {{perm = array<i64: 0, 2, 1, 3>}} : "
                  f"({x4}) -> {xt}"]
    lines += [
        f"  %s0 = frame.matmul %q, %k {{transpose_rhs}} : ({xt}, {xt}) -> {sc}",
        f"  %s1 = frame.scale %s0 {{factor = {1 / math.sqrt(d):.8e} : f32}} : ({sc}) -> {sc}",
        f"  %p = frame.softmax %s1 {{axis = 3 : i64}} : ({sc}) -> {sc}",
        f"  %c0 = frame.matmul %p, %v : ({sc}, {xt}) -> {xt}",
        f"  %c1 = frame.transpose %c0 {{perm = array<i64: 0, 2, 1, 3>}} : ({xt}) -> {x4}",
        f"  %c2 = frame.reshape %c1 : ({x4}) -> {x2}",
        f"  %y = frame.matmul %c2, %wo : ({x2}, {w}) -> {x2}",
        f"  %l = frame.mse_loss %y, %t : ({x2}, {x2}) -> tensor<f32>",
        "  func.return %l : tensor<f32>",
        "}"]
    return "\n".join(lines)


class Kernels:
    """An `after_pass` hook: the kernel calls of the train step after
    frame-outline-kernels, by the ops fused into each (`transpose_reshape`, ...)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, p: ModulePass, module: builtin.ModuleOp) -> None:
        if p.name == "frame-outline-kernels":
            self.calls = [c.callee.root_reference.data.split("_k", 1)[1].split("_", 1)[-1]
                          for c in module.walk() if isinstance(c, func.CallOp)
                          and c.parent_op().sym_name.data == "mha_train_step"]

    def count(self, op: str) -> int:
        return sum(op in c.split("_") for c in self.calls)


def _compile(fold: bool, lr: float | None = LR, **options: object
             ) -> tuple[Executable, Kernels]:
    module = Parser(make_context(), _attention(B, S, H, D)).parse_module()
    hook = Kernels()
    opts = CompileOptions(**{"threads": 1, "gemm_min_flops": 0, **options,  # type: ignore[arg-type]
                             "fold_movement": fold})
    return compile_module(module, lr=lr, options=opts, after_pass=hook, cache=None), hook


def _data() -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(20261208)
    x = rng.standard_normal((B * S, E)).astype(np.float32)
    t = rng.standard_normal((B * S, E)).astype(np.float32)
    params = []
    for _ in "qkv":
        params += [(rng.standard_normal((E, E)) / math.sqrt(E)).astype(np.float32),
                   (rng.standard_normal((B * S, E)) * 0.1).astype(np.float32)]
    params.append((rng.standard_normal((E, E)) / math.sqrt(E)).astype(np.float32))
    return [x, t], params


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("options", [
    {"l1_bytes": 512, "l2_bytes": 4096, "l3_bytes": 4096, "f32_lanes": 4},
    {"l1_bytes": 512, "l2_bytes": 32768, "l3_bytes": 32768, "f32_lanes": 8, "threads": 2},
    {},  # the host's blocking
])
def test_attention_is_bit_identical_to_the_copies(options: dict[str, int]) -> None:
    """Five train steps and the gradients: the same bits with and without the pass; the
    head split's transposes are gone, and so are the q and v reshapes (every product
    reading them reads through them; `Q·Kᵀ` keeps k's, which would lose its head dim)."""
    data, params = _data()
    (plain, plain_k), (folded, k) = _compile(False, **options), _compile(True, **options)
    for _ in range(5):
        l0, *params0 = plain("mha_train_step", *data, *params)
        l1, *params1 = folded("mha_train_step", *data, *params)
        np.testing.assert_array_equal(_bits(l0), _bits(l1))
        for a, b in zip(params0, params1, strict=True):
            np.testing.assert_array_equal(_bits(a), _bits(b))
        params = params1
    # Before: q, k, v and the context's gradient split (reshape, transpose), the
    # context and the q, k, v gradients merged (transpose, reshape).
    assert (plain_k.count("transpose"), plain_k.count("reshape")) == (8, 8), plain_k.calls
    # Left: the merges (results of contractions: the context's reshape folds into the
    # output projection, the gradients' are read by the bias updates), the k and
    # context-gradient reshapes (`Q·Kᵀ` and `dA = dC·Vᵀ` read q and v through theirs).
    assert (k.count("transpose"), k.count("reshape")) == (4, 5), k.calls


def test_gradients_match_torch() -> None:
    """The folded pipeline's gradients against torch autograd in float64."""
    data, params = _data()
    ex, _ = _compile(True, lr=None)
    loss, *grads = ex("mha_grad", *data, *params)
    x, t = (torch.from_numpy(a).double() for a in data)
    tp = [torch.from_numpy(p).double().requires_grad_() for p in params]

    def heads(a: torch.Tensor) -> torch.Tensor:
        return a.reshape(B, S, H, D).transpose(1, 2)
    q, k, v = (heads(x @ tp[2 * i] + tp[2 * i + 1]) for i in range(3))
    p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D), dim=-1)
    y = (p @ v).transpose(1, 2).reshape(B * S, E) @ tp[6]
    ref = torch.nn.functional.mse_loss(y, t)
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    for ours, p_ in zip(grads, tp, strict=True):
        assert p_.grad is not None
        g = p_.grad.numpy()
        # float32 against float64: normwise, as the other gradient checks
        assert np.linalg.norm(ours - g) <= 1e-5 * np.linalg.norm(g) + 1e-7


def test_frame_gemm_reads_a_delinearised_map_as_its_flat_offset() -> None:
    """`operand_offsets`: the digits of L = 5 i + k over [2, 3, 5] are the flat offset L;
    not when L can leave the memref (i up to 7: 5 * 7 + 4 >= 30), nor when a digit's
    size or stride is not the memref's."""
    from xdsl.dialects.builtin import MemRefType, f32
    from xdsl.ir.affine import AffineExpr, AffineMap

    from frame_mlir.dialects.frame_movement import delinearized
    from frame_mlir.passes.frame_gemm import operand_offsets

    i, k = AffineExpr.dimension(0), AffineExpr.dimension(1)
    typ = MemRefType(f32, [2, 3, 5])
    m = AffineMap(2, 0, delinearized(i * 5 + k, (2, 3, 5)))
    got = operand_offsets(m, typ, [6, 5])
    assert got is not None and (got.coef, got.const) == ({0: 5, 1: 1}, 0)
    assert operand_offsets(m, typ, [8, 5]) is None
    assert operand_offsets(AffineMap(2, 0, delinearized(i * 5 + k, (2, 5, 3))), typ,
                           [6, 5]) is None
    assert operand_offsets(m, typ) is None  # no loop sizes: only plain linear maps


def test_folded_step_is_the_same_bits_at_1_and_2_threads() -> None:
    """The strided per-head products split over threads (batch x heads, or rows) and
    still give the bits of one thread."""
    data, params = _data()
    small = {"l1_bytes": 512, "l2_bytes": 4096, "l3_bytes": 4096}
    one, _ = _compile(True, **small)
    two, _ = _compile(True, threads=2, **small)
    for _ in range(3):
        l1, *p1 = one("mha_train_step", *data, *params)
        l2, *p2 = two("mha_train_step", *data, *params)
        for a, b in zip([l1, *p1], [l2, *p2], strict=True):
            np.testing.assert_array_equal(_bits(a), _bits(b))
        params = p1
