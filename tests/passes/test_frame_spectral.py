"""The spectral family (`frame_mlir/dialects/frame_spectral.py`) beyond the torch oracle
cases of tests/oracle/test_ops_vs_torch.py: rfft / irfft and their gradient ops against
numpy.fft (float64) over many lengths (primes, composites, powers of two up to 1024),
irfft ignoring the imaginary parts numpy ignores, the O(n log n) shape of the lowering
for powers of two, the verifier's messages, and the emitted C++ against the JIT."""

from __future__ import annotations

import re
from math import log2, prod
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cpp_vs_jit import CXX, assert_cpp_matches_jit
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.dialects.frame_spectral import bins, factors
from frame_mlir.dialects.linalg_utils import RED
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.convert_frame_to_linalg import ConvertFrameToLinalg
from frame_mlir.passes.pipeline import make_context
from frame_mlir.runtime.executable import Executable, compile_module

#: Primes (one direct-DFT stage), composites (mixed radices) and powers of two.
LENGTHS = (2, 3, 5, 7, 8, 12, 15, 64, 256, 1024)
BATCH = (2, 3)


def _module(n: int, batch: tuple[int, ...] = BATCH) -> builtin.ModuleOp:
    """@spec(x[..., n], z[..., K, 2], dz[..., K, 2], dx[..., n]) -> rfft(x), irfft(z),
    rfft_grad(dz), irfft_grad(dx)."""
    k = bins(n)
    g = Graph("spec")
    x, z = g.add_input((*batch, n), "x"), g.add_input((*batch, k, 2), "z")
    dz, dx = g.add_input((*batch, k, 2), "dz"), g.add_input((*batch, n), "dx")
    outs = [g.emit(frame.RfftOp(x)), g.emit(frame.IrfftOp(z, n)),
            g.emit(frame.RfftGradOp(dz, n)), g.emit(frame.IrfftGradOp(dx))]
    return builtin.ModuleOp([g.finish(outs)])


def _compile(n: int, threads: int = 1) -> Executable:
    return compile_module(_module(n), options=CompileOptions(threads=threads), cache=None)


def _as_complex(z: np.ndarray) -> np.ndarray:
    z64 = z.astype(np.float64)
    return z64[..., 0] + 1j * z64[..., 1]


def _as_pairs(c: np.ndarray) -> np.ndarray:
    return np.stack([c.real, c.imag], axis=-1)


def _references(n: int, x: np.ndarray, z: np.ndarray, dz: np.ndarray, dx: np.ndarray
                ) -> list[np.ndarray]:
    """numpy.fft in float64, with the VJPs written out from their definitions:
    rfft_grad(g)[t] = Re sum_{k<K} g_k exp(2 pi i k t / n) (an unnormalised inverse DFT
    of g zero-padded to n bins), irfft_grad(g)_k = (c_k / n) rfft(g)_k with c_k = 1 at
    bin 0 and (even n) n/2, 2 elsewhere, and those two bins' imaginary parts 0."""
    k = bins(n)
    padded = np.zeros((*dz.shape[:-2], n), np.complex128)
    padded[..., :k] = _as_complex(dz)
    c = np.full(k, 2.0)
    c[0] = 1.0
    if n % 2 == 0:
        c[-1] = 1.0
    dzx = c / n * np.fft.rfft(dx.astype(np.float64))
    dzx = _as_pairs(dzx)
    dzx[..., 0, 1] = 0.0
    if n % 2 == 0:
        dzx[..., -1, 1] = 0.0
    return [_as_pairs(np.fft.rfft(x.astype(np.float64))),
            np.fft.irfft(_as_complex(z), n=n),
            (np.fft.ifft(padded) * n).real,
            dzx]


def _assert_fft_close(ours: np.ndarray, ref: np.ndarray, n: int, what: str) -> None:
    """|ours - ref| <= rtol * |ref| + atol * max|ref|, rtol = 1e-5 * s, atol = 1e-6 * s,
    s = sqrt(max(log2 n, 1)) * (1 + (p - 2) / 16), p the largest radix.

    Why: a radix-2 FFT in float32 has a root-mean-square relative error of about
    eps * sqrt(log2 n) (eps = 6e-8; each of the log2 n stages adds one rounding of
    independent sign; the worst-case bound is eps * log2 n), measured up to ~1.6e-7
    relative to max|ref| at n = 1024. Single elements are sums of n terms of either
    sign, so a bin can be far smaller than its neighbours: the absolute part, scaled by
    the largest output, carries those. A stage of prime radix p is a plain f32 sum of
    p terms (error ~ eps * sqrt(p)): the last factor widens the bound for the prime
    lengths (it is 1 for every radix-2 stage)."""
    radix = max(factors(n))
    scale = np.sqrt(max(log2(n), 1.0)) * (1.0 + (radix - 2) / 16)
    ref = np.asarray(ref, np.float64)
    err = np.abs(ours.astype(np.float64) - ref)
    bound = 1e-5 * scale * np.abs(ref) + 1e-6 * scale * float(np.abs(ref).max())
    assert ours.dtype == np.float32 and ours.shape == ref.shape, what
    bad = err > bound
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} elements off, max "
                           f"error {err.max():.3g} (max |ref| {np.abs(ref).max():.3g})")


def _inputs(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    k = bins(n)
    return [rng.standard_normal(s).astype(np.float32)
            for s in ((*BATCH, n), (*BATCH, k, 2), (*BATCH, k, 2), (*BATCH, n))]


@pytest.mark.parametrize("n", LENGTHS)
def test_rfft_irfft_and_gradients_match_numpy(n: int) -> None:
    args = _inputs(n, n)
    outs = _compile(n)("spec", *args)
    names = ("rfft", "irfft", "rfft_grad", "irfft_grad")
    for ours, ref, name in zip(outs, _references(n, *args), names, strict=True):
        _assert_fft_close(np.asarray(ours), ref, n, f"{name} n={n}")


def test_irfft_of_rfft_round_trips_and_threads_agree() -> None:
    """irfft(rfft(x)) == x to rounding, and the same bits at 1 and 3 threads."""
    n = 96  # 2^5 * 3: mixed radices
    args = _inputs(n, 7)
    one = _compile(n, 1)("spec", *args)
    three = _compile(n, 3)("spec", *args)
    for a, b in zip(one, three, strict=True):
        assert np.array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))
    g = Graph("rt")
    x = g.add_input((*BATCH, n), "x")
    y = g.emit(frame.IrfftOp(g.emit(frame.RfftOp(x)), n))
    ex = compile_module(builtin.ModuleOp([g.finish([y])]), cache=None)
    (back,) = ex("rt", args[0])
    np.testing.assert_allclose(back, args[0], rtol=0, atol=2e-6)


@pytest.mark.parametrize("n", (8, 9))
def test_irfft_ignores_the_imaginary_parts_numpy_ignores(n: int) -> None:
    """Bin 0's imaginary part, and bin n/2's for even n, do not change irfft's result
    (bit for bit), as in numpy.fft.irfft; for odd n the last bin's does."""
    k = bins(n)
    rng = np.random.default_rng(3)
    z = rng.standard_normal((1, k, 2)).astype(np.float32)
    g = Graph("ir")
    zin = g.add_input((1, k, 2), "z")
    ex = compile_module(builtin.ModuleOp([g.finish([g.emit(frame.IrfftOp(zin, n))])]),
                        cache=None)
    (base,) = ex("ir", z)
    changed = z.copy()
    changed[0, 0, 1] = 5.0
    if n % 2 == 0:
        changed[0, -1, 1] = -7.0
    (same,) = ex("ir", changed)
    assert np.array_equal(same.view(np.uint32), base.view(np.uint32))
    _assert_fft_close(same, np.fft.irfft(_as_complex(changed), n=n), n, "irfft")
    if n % 2:
        last = z.copy()
        last[0, -1, 1] += 1.0
        (moved,) = ex("ir", last)
        assert np.abs(moved - base).max() > 0.1
        _assert_fft_close(moved, np.fft.irfft(_as_complex(last), n=n), n, "irfft odd n")


def _loop_extents(op: GenericOp) -> list[int]:
    """Each loop's trip count, from the operands whose map result is that bare loop dim
    (what linalg itself derives the bounds from)."""
    extents: dict[int, int] = {}
    for value, amap in zip(op.operands, op.indexing_maps.data, strict=True):
        assert isinstance(value.type, TensorType)
        for size, res in zip(value.type.get_shape(), amap.data.results, strict=True):
            pos = getattr(res, "position", None)
            if pos is not None:
                extents[pos] = size
    return [extents[d] for d in range(op.indexing_maps.data[0].data.num_dims)]


def _generics(op_builder: Any, shape: tuple[int, ...]) -> list[GenericOp]:
    g = Graph("one")
    x = g.add_input(shape, "x")
    module = builtin.ModuleOp([g.finish([g.emit(op_builder(x))])])
    ConvertFrameToLinalg().apply(make_context(), module)
    return [op for op in module.walk() if isinstance(op, GenericOp)]


@pytest.mark.parametrize("n", (256, 1024))
def test_power_of_two_lowering_is_n_log_n(n: int) -> None:
    """log2 n radix-2 stages (the generics with a reduction loop, of 2 trips each), and
    the iterations of all generics together at most a few n log2 n per row -- no n x n
    loop anywhere. A prime length, by contrast, is one direct n x n stage."""
    batch = 3
    for name, build, shape in (
            ("rfft", frame.RfftOp, (batch, n)),
            ("irfft", lambda v: frame.IrfftOp(v, n), (batch, bins(n), 2))):
        generics = _generics(build, shape)
        stages = [op for op in generics if RED in op.iterator_types.data]
        assert len(stages) == int(log2(n)), name
        assert all(_loop_extents(op)[-1] == 2 for op in stages), name
        work = sum(prod(_loop_extents(op)) for op in generics)
        # Per stage: the n x 2 stage loop per row, a twiddle table of at most 2n
        # entries; plus the O(n) extension / interleave generics.
        assert work <= 3 * batch * n * log2(n), (name, work)
        assert max(prod(_loop_extents(op)) for op in generics) <= 2 * batch * n, name
    prime = 257
    (stage,) = [op for op in _generics(frame.RfftOp, (batch, prime))
                if RED in op.iterator_types.data]
    assert _loop_extents(stage) == [batch, bins(prime), prime]


def test_factors() -> None:
    assert factors(1024) == [2] * 10
    assert factors(12) == [2, 2, 3]
    assert factors(97) == [97]
    assert factors(2 * 3 * 5 * 7 * 49) == [2, 3, 5, 7, 7, 7]


def _verify(text: str) -> None:
    module = Parser(make_context(), text).parse_module()
    module.verify()


@pytest.mark.parametrize(("ir", "message"), [
    ("%y = frame.rfft %x : (tensor<3x1xf32>) -> tensor<3x1x2xf32>",
     "frame.rfft: last dim (the signal length n) expected >= 2, found 1 in [3, 1]"),
    ("%y = frame.rfft %x : (tensor<3x8xf32>) -> tensor<3x4x2xf32>",
     "frame.rfft: result type expected tensor<3x5x2xf32>, found tensor<3x4x2xf32>"),
    ("%y = frame.irfft %x {n = 8 : i64} : (tensor<3x4x2xf32>) -> tensor<3x8xf32>",
     "frame.irfft: bins (dim 1) expected 5 (n // 2 + 1 for n = 8), found 4 in [3, 4, 2]"),
    ("%y = frame.irfft %x {n = 6 : i64} : (tensor<3x4x3xf32>) -> tensor<3x6xf32>",
     "frame.irfft: input expected [..., 4, 2] ((re, im) in the last dim), found [3, 4, 3]"),
    ("%y = frame.irfft %x {n = 1 : i64} : (tensor<3x1x2xf32>) -> tensor<3x1xf32>",
     "frame.irfft: n expected >= 2, found 1"),
    ("%y = frame.rfft %x : (tensor<3x8xf16>) -> tensor<3x5x2xf16>",
     "frame.rfft: f32 only: operand expected a tensor of f32, found tensor<3x8xf16>"),
    ("%y = frame.irfft_grad %x : (tensor<4xf16>) -> tensor<3x2xf16>",
     "frame.irfft_grad: f32 only"),
    ("%y = frame.rfft_grad %x {n = 5 : i64} : (tensor<2x2xf32>) -> tensor<5xf32>",
     "frame.rfft_grad: bins (dim 0) expected 3 (n // 2 + 1 for n = 5), found 2 in [2, 2]"),
])
def test_verifier_messages(ir: str, message: str) -> None:
    operand = ir.split(": (")[1].split(")")[0]
    text = f"func.func @f(%x: {operand}) {{\n  {ir}\n  func.return\n}}"
    with pytest.raises(VerifyException, match=re.escape(message)):
        _verify(text)


def test_builders_infer_types() -> None:
    g = Graph("b")
    x = g.add_input((2, 3, 10), "x")
    z = g.emit(frame.RfftOp(x))
    assert frame.static_shape(z) == (2, 3, 6, 2)
    assert frame.static_shape(g.emit(frame.IrfftOp(z, 10))) == (2, 3, 10)
    assert frame.static_shape(g.emit(frame.IrfftOp(z, 11))) == (2, 3, 11)
    assert frame.static_shape(g.emit(frame.RfftGradOp(z, 11))) == (2, 3, 11)
    assert frame.static_shape(g.emit(frame.IrfftGradOp(x))) == (2, 3, 6, 2)


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit(tmp_path: Path) -> None:
    """The loops stage of all four ops (n = 12: radices 2, 2, 3) emitted as C++,
    compiled with g++ (-O2, no FP contraction, as the emitted programs are) and run:
    the same bits as the JIT's. The twiddles are f64 cos / sin rounded to f32; both
    backends call the same libm for them (the JIT resolves llvm.cos.f64 to libm's cos
    in-process, the C++ calls std::cos(double)), and everything else is f32 + - * in
    the same order."""
    n = 12
    assert_cpp_matches_jit(lambda: _module(n), "spec", _inputs(n, 11), tmp_path)
