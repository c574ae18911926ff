"""Explicit vector code at the loops stage (vector.load / store / broadcast / fma /
shuffle, vector arith, memref.collapse_shape) through both backends.

Hand-written loop-level modules are lowered with `LOOPS_TO_LLVM`, JIT-compiled and run
on buffers whose vector accesses are only element-aligned; the results are checked bit
for bit against independent references (numpy for IEEE add/sub/mul/div, exact rational
arithmetic for the fused multiply-add). The same modules go through the C++ emitter and
g++ (`-O3 -march=native -ffp-contract=off` and the vector-width preference of the emitted
programs' CMakeLists), whose outputs must equal the JIT's bits.

Instruction selection is checked for explicit targets (`-march=x86-64-v4` with each
vendor's tuning, LLVM's `skylake-avx512`), not the host's `-march=native`: which tuning
that picks depends on the CPU and the compiler's version (GCC 12 tunes an Emerald Rapids
Xeon as rocketlake and prefers 256-bit vectors there, a Zen 4 EPYC as znver3 with no
preference), and a check that read it passed on one vendor and failed on the other.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from frame_mlir.backend.cpp.cmake import (
    compiler_accepts,
    native_tuning,
    prefer_vector_width_flags,
)
from frame_mlir.backend.cpp.emitter import CppEmitError, emit_module
from frame_mlir.backend.llvm.jit import JitModule, jit_compile, optimize
from frame_mlir.backend.llvm.translate import to_llvm_text
from frame_mlir.passes.lower_to_llvm import LoweringError, lower_loops_to_llvm
from frame_mlir.passes.pipeline import CompileOptions, make_context
from frame_mlir.target.host import ensure_initialized, host_info

CXX = shutil.which("g++") or shutil.which("c++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")

_KERNELS = """
func.func @copy_unaligned(%src: memref<40xf32>, %dst: memref<40xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c17 = arith.constant 17 : index
  %c21 = arith.constant 21 : index
  %c33 = arith.constant 33 : index
  %c35 = arith.constant 35 : index
  %v = vector.load %src[%c1] : memref<40xf32>, vector<16xf32>
  vector.store %v, %dst[%c3] : memref<40xf32>, vector<16xf32>
  %w = vector.load %src[%c17] : memref<40xf32>, vector<8xf32>
  vector.store %w, %dst[%c21] : memref<40xf32>, vector<8xf32>
  %x = vector.load %src[%c33] : memref<40xf32>, vector<4xf32>
  vector.store %x, %dst[%c35] : memref<40xf32>, vector<4xf32>
  func.return
}

func.func @copy_2d(%src: memref<4x20xf32>, %dst: memref<4x20xf32>, %i: index, %j: index) {
  %c1 = arith.constant 1 : index
  %v = vector.load %src[%i, %j] : memref<4x20xf32>, vector<16xf32>
  vector.store %v, %dst[%c1, %j] : memref<4x20xf32>, vector<16xf32>
  func.return
}

func.func @splat(%s: memref<4xf32>, %dst: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %x = memref.load %s[%k] : memref<4xf32>
    %v = vector.broadcast %x : f32 to vector<16xf32>
    %at = arith.muli %k, %c16 : index
    vector.store %v, %dst[%at] : memref<64xf32>, vector<16xf32>
  }
  func.return
}

func.func @fma(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>,
               %out: memref<64xf32>, %out2: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.for %k = %c0 to %c64 step %c16 {
    %x = vector.load %a[%k] : memref<64xf32>, vector<16xf32>
    %y = vector.load %b[%k] : memref<64xf32>, vector<16xf32>
    %z = vector.load %c[%k] : memref<64xf32>, vector<16xf32>
    %r = vector.fma %x, %y, %z : vector<16xf32>
    vector.store %r, %out[%k] : memref<64xf32>, vector<16xf32>
    %r2 = math.fma %x, %y, %z : vector<16xf32>
    vector.store %r2, %out2[%k] : memref<64xf32>, vector<16xf32>
  }
  func.return
}

func.func @arith(%a: memref<17xf32>, %b: memref<17xf32>, %out: memref<9x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %x = vector.load %a[%c1] : memref<17xf32>, vector<16xf32>
  %y = vector.load %b[%c0] : memref<17xf32>, vector<16xf32>
  %s = arith.addf %x, %y : vector<16xf32>
  %d = arith.subf %x, %y : vector<16xf32>
  %p = arith.mulf %x, %y : vector<16xf32>
  %q = arith.divf %x, %y : vector<16xf32>
  %n = arith.negf %x : vector<16xf32>
  %mx = arith.maximumf %x, %y : vector<16xf32>
  %mn = arith.minimumf %x, %y : vector<16xf32>
  %nz = arith.constant dense<-0.0> : vector<16xf32>
  %ramp = arith.constant dense<[0.0, -0.0, 1.5, -2.25, 3.0e+38, 1.0e-45, 0.1, -0.1,
                                8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : vector<16xf32>
  %t = arith.addf %x, %nz : vector<16xf32>
  %first = memref.load %a[%c0] : memref<17xf32>
  %zero = arith.constant 0.0 : f32
  %pos = arith.cmpf ogt, %first, %zero : f32
  %sel = arith.select %pos, %ramp, %nz : vector<16xf32>
  vector.store %s, %out[%c0, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %d, %out[%c1, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %p, %out[%c2, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %q, %out[%c3, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %n, %out[%c4, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %mx, %out[%c5, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %mn, %out[%c6, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %t, %out[%c7, %c0] : memref<9x16xf32>, vector<16xf32>
  vector.store %sel, %out[%c8, %c0] : memref<9x16xf32>, vector<16xf32>
  func.return
}

func.func @collapse(%m: memref<4x8xf32>, %dst: memref<2x3x8xf32>) {
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %c31 = arith.constant 31 : index
  %flat = memref.collapse_shape %m [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  %dflat = memref.collapse_shape %dst [[0, 1, 2]] : memref<2x3x8xf32> into memref<48xf32>
  %d2 = memref.collapse_shape %dst [[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
  %v = vector.load %flat[%c5] : memref<32xf32>, vector<16xf32>
  vector.store %v, %dflat[%c9] : memref<48xf32>, vector<16xf32>
  %last = memref.load %flat[%c31] : memref<32xf32>
  memref.store %last, %d2[%c5, %c7] : memref<6x8xf32>
  func.return
}

func.func @acc(%a: memref<8xf32>, %b: memref<8x32xf32>, %c: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %acc0 = vector.load %c[%c0] : memref<32xf32>, vector<16xf32>
  %acc1 = vector.load %c[%c16] : memref<32xf32>, vector<16xf32>
  %r:2 = scf.for %k = %c0 to %c8 step %c1 iter_args(%x0 = %acc0, %x1 = %acc1)
      -> (vector<16xf32>, vector<16xf32>) {
    %ak = memref.load %a[%k] : memref<8xf32>
    %av = vector.broadcast %ak : f32 to vector<16xf32>
    %b0 = vector.load %b[%k, %c0] : memref<8x32xf32>, vector<16xf32>
    %b1 = vector.load %b[%k, %c16] : memref<8x32xf32>, vector<16xf32>
    %y0 = vector.fma %av, %b0, %x0 : vector<16xf32>
    %y1 = vector.fma %av, %b1, %x1 : vector<16xf32>
    scf.yield %y0, %y1 : vector<16xf32>, vector<16xf32>
  }
  vector.store %r#0, %c[%c0] : memref<32xf32>, vector<16xf32>
  vector.store %r#1, %c[%c16] : memref<32xf32>, vector<16xf32>
  func.return
}

func.func @shuffle(%src: memref<32xf32>, %dst: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %a = vector.load %src[%c0] : memref<32xf32>, vector<16xf32>
  %b = vector.load %src[%c16] : memref<32xf32>, vector<16xf32>
  %lo = vector.shuffle %a, %b [0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27] : vector<16xf32>, vector<16xf32>
  %hi = vector.shuffle %a, %b [31, 0, 30, 1, 5, 5, 5, 5, 15, 16, 14, 17, 2, 29, 3, 28] : vector<16xf32>, vector<16xf32>
  vector.store %lo, %dst[%c0] : memref<32xf32>, vector<16xf32>
  vector.store %hi, %dst[%c16] : memref<32xf32>, vector<16xf32>
  func.return
}
"""

SHUFFLE_MASKS = ([0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27],
                 [31, 0, 30, 1, 5, 5, 5, 5, 15, 16, 14, 17, 2, 29, 3, 28])


def _parse(src: str) -> ModuleOp:
    return Parser(make_context(), src).parse_module()


def _lowered(src: str) -> ModuleOp:
    module = _parse(src)
    lower_loops_to_llvm(make_context(), module)
    return module


@pytest.fixture(scope="module")
def jit() -> JitModule:
    return jit_compile(to_llvm_text(_lowered(_KERNELS)))


# --------------------------------------------------------------------------------------
# buffers and references


def _f32(bits: list[int]) -> np.ndarray:
    return np.array(bits, dtype=np.uint32).view(np.float32)


def _aligned(values: np.ndarray) -> np.ndarray:
    """A float32 copy of `values` starting on a 64-byte boundary, so an access at
    element 1 is misaligned for every vector width (alignment 4 only)."""
    raw = np.zeros(values.size + 16, dtype=np.float32)
    skip = (-raw.ctypes.data % 64) // 4
    out = raw[skip:skip + values.size].reshape(values.shape)
    out[...] = values
    assert out.ctypes.data % 64 == 0
    return out


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def _round_f32(q: Fraction) -> np.float32:
    """`q` correctly rounded to float32 (ties to even), with no double rounding:
    float(q) is within one float32 ulp of the answer, so the answer is the nearest of
    its float32 value and that value's two neighbours."""
    d = np.float32(float(q))
    cands = [np.nextafter(d, np.float32(-np.inf)), d, np.nextafter(d, np.float32(np.inf))]

    def key(c: np.float32) -> tuple[Fraction, int]:
        return abs(Fraction(float(c)) - q), int(np.float32(c).view(np.uint32)) & 1

    return min(cands, key=key)


def _fma_exact(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """IEEE fusedMultiplyAdd of finite float32 values (one rounding, to nearest even)."""
    prod = Fraction(float(a)) * Fraction(float(b))
    exact = prod + Fraction(float(c))
    if exact == 0:
        # IEEE: an exact zero sum is +0 unless both addends are -0.
        prod_negative = prod == 0 and (np.signbit(a) != np.signbit(b))
        negative = prod == 0 and c == 0 and prod_negative and bool(np.signbit(c))
        return np.float32(-0.0 if negative else 0.0)
    return _round_f32(exact)


def _fma_naive(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """float32(float64(a) * b + c): a*b is exact in float64, but the sum is rounded to
    float64 and then to float32 -- twice, which is wrong near float32 ties."""
    return np.float32(np.float64(a) * np.float64(b) + np.float64(c))


# A lane where double rounding through float64 gives the wrong answer: the exact value
# is 1 + 2^-23 + 2^-24 - 2^-60, just below a float32 tie; float64 rounds it onto the
# tie, which then goes to the even neighbour 1 + 2^-22 instead of down to 1 + 2^-23.
_TIE_A = np.float32(2.0**-12 * (1 + 2.0**-18))
_TIE_B = np.float32(2.0**-12 * (1 - 2.0**-18))
_TIE_C = np.float32(1 + 2.0**-23)


def test_exact_fma_reference_beats_float64() -> None:
    assert _fma_exact(_TIE_A, _TIE_B, _TIE_C) == np.float32(1 + 2.0**-23)
    assert _fma_naive(_TIE_A, _TIE_B, _TIE_C) == np.float32(1 + 2.0**-22)
    # fused vs two roundings: (1 + 2^-23)^2 - 1 keeps its 2^-46 term only when fused
    one_ulp = np.float32(1 + 2.0**-23)
    assert _fma_exact(one_ulp, one_ulp, np.float32(-1)) == np.float32(2.0**-22 + 2.0**-46)
    assert one_ulp * one_ulp - np.float32(1) == np.float32(2.0**-22)
    # signed zeros: -0 * 1 + -0 = -0, 1 * -1 + 1 = +0
    assert np.signbit(_fma_exact(np.float32(-0.0), np.float32(1), np.float32(-0.0)))
    assert not np.signbit(_fma_exact(np.float32(1), np.float32(-1), np.float32(1)))


def _interesting(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32 values that exercise the corners: signed zeros, infinities, NaN,
    subnormals, the largest finite value, ordinary numbers of both signs."""
    special = _f32([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
                    0x00000001, 0x80400000, 0x7F7FFFFF, 0x3F800000, 0xBF800000])
    rest = (rng.standard_normal(n) * 10.0**rng.integers(-3, 4, n)).astype(np.float32)
    rest[: special.size] = special
    return rest


# --------------------------------------------------------------------------------------
# the cases: (function, args); an arg is a float32 array (passed as a pointer, possibly
# written) or an int (an index). Shared by the JIT tests and the C++ comparison.


def _cases() -> list[tuple[str, list[np.ndarray | int]]]:
    rng = np.random.default_rng(20260901)
    ramp = np.arange(40, dtype=np.float32) + 0.5
    sentinel = np.full(40, -7.0, dtype=np.float32)
    grid = rng.standard_normal((4, 20)).astype(np.float32)
    splat_in = _f32([0x80000000, 0x7FC12345, 0x7F812345, 0xFFC00001])
    a, b, c = (rng.uniform(-1, 1, 64).astype(np.float32) for _ in range(3))
    a[0], b[0], c[0] = _TIE_A, _TIE_B, _TIE_C
    a[1], b[1], c[1] = np.float32(1 + 2.0**-23), np.float32(1 + 2.0**-23), np.float32(-1)
    a[2], b[2], c[2] = np.float32(-0.0), np.float32(1), np.float32(-0.0)
    a[3], b[3], c[3] = np.float32(1e-30), np.float32(1e-15), np.float32(1e-45)  # subnormal
    # @arith reads lanes x = a[1:17], y = b[0:16]; a[0] > 0 selects the ramp constant
    x, y = _interesting(rng, 17), _interesting(rng, 17)[::-1].copy()
    x[0] = np.float32(1.0)
    # equal lanes with different signs of zero, a NaN against a number, equal numbers
    x[1:5], y[0:4] = _f32([0x00000000, 0x80000000, 0x7FC00000, 0x40400000]), \
        _f32([0x80000000, 0x00000000, 0x3F800000, 0x40400000])
    x_neg = x.copy()
    x_neg[0] = np.float32(-1.0)
    return [
        ("copy_unaligned", [ramp, sentinel.copy()]),
        ("copy_2d", [grid, np.zeros((4, 20), np.float32), 2, 13]),
        ("splat", [splat_in, np.zeros(64, np.float32)]),
        ("fma", [a, b, c, np.zeros(64, np.float32), np.zeros(64, np.float32)]),
        ("arith", [x, y, np.zeros((9, 16), np.float32)]),
        ("arith", [x_neg, y, np.zeros((9, 16), np.float32)]),
        ("collapse", [rng.standard_normal((4, 8)).astype(np.float32),
                      np.full((2, 3, 8), 3.0, np.float32)]),
        ("shuffle", [_interesting(rng, 32), np.zeros(32, np.float32)]),
        ("acc", [rng.uniform(-1, 1, 8).astype(np.float32),
                 rng.uniform(-1, 1, (8, 32)).astype(np.float32),
                 rng.uniform(-1, 1, 32).astype(np.float32)]),
    ]


def _run_jit(jit: JitModule, name: str, args: list[np.ndarray | int]) -> list[np.ndarray]:
    """Call `name` on aligned copies of the array args; returns the arrays after."""
    bufs = [_aligned(a) if isinstance(a, np.ndarray) else a for a in args]
    types = [ctypes.c_void_p if isinstance(a, np.ndarray) else ctypes.c_int64 for a in bufs]
    fn = jit.get_function(name, types)
    fn(*[a.ctypes.data if isinstance(a, np.ndarray) else a for a in bufs])
    return [a.copy() for a in bufs if isinstance(a, np.ndarray)]


def _case(name: str, index: int = 0) -> list[np.ndarray | int]:
    return [c for c in _cases() if c[0] == name][index][1]


# --------------------------------------------------------------------------------------
# JIT against the references


def test_unaligned_loads_and_stores(jit: JitModule) -> None:
    src, dst = _case("copy_unaligned")
    (_, out) = _run_jit(jit, "copy_unaligned", [src, dst])
    want = dst.copy()
    want[3:19], want[21:29], want[35:39] = src[1:17], src[17:25], src[33:37]
    np.testing.assert_array_equal(_bits(out), _bits(want))


def test_multi_dim_index_reads_consecutive_elements(jit: JitModule) -> None:
    grid, zeros, i, j = _case("copy_2d")
    (_, out) = _run_jit(jit, "copy_2d", [grid, zeros, i, j])
    # row-major: 16 elements from [2, 13] on cross into row 3; stored from [1, 13] on
    want = np.zeros(80, np.float32)
    want[20 + 13:20 + 13 + 16] = grid.reshape(-1)[2 * 20 + 13:2 * 20 + 13 + 16]
    np.testing.assert_array_equal(_bits(out).reshape(-1), _bits(want))


def test_broadcast_keeps_negative_zero_and_nan_payloads(jit: JitModule) -> None:
    scalars, zeros = _case("splat")
    (_, out) = _run_jit(jit, "splat", [scalars, zeros])
    want = np.repeat(_bits(scalars), 16)
    np.testing.assert_array_equal(_bits(out), want)


def test_fma_is_fused_per_lane(jit: JitModule) -> None:
    a, b, c, o1, o2 = _case("fma")
    (_, _, _, fused, fused_math) = _run_jit(jit, "fma", [a, b, c, o1, o2])
    want = np.array([_fma_exact(*t) for t in zip(a, b, c, strict=True)], np.float32)
    np.testing.assert_array_equal(_bits(fused), _bits(want))
    np.testing.assert_array_equal(_bits(fused_math), _bits(want))
    # the data tells a fused result from mul + add (and from a float64 reference)
    unfused = a * b + c
    assert int((_bits(unfused) != _bits(want)).sum()) >= 2
    assert _bits(np.array([_fma_naive(a[0], b[0], c[0])]))[0] != _bits(want[:1])[0]


def _maximum_ref(a: np.ndarray, b: np.ndarray, maximum: bool) -> np.ndarray:
    """arith.maximumf / minimumf lane by lane: NaN wins, +0 > -0."""
    out = np.empty_like(a)
    for k, (u, v) in enumerate(zip(a, b, strict=True)):
        if np.isnan(u) or np.isnan(v):
            out[k] = np.nan
        elif u == v:
            pick_u = np.signbit(v) if maximum else np.signbit(u)
            out[k] = u if pick_u else v
        else:
            out[k] = max(u, v) if maximum else min(u, v)
    return out


def _assert_same(got: np.ndarray, want: np.ndarray, nan_payload_free: bool = False) -> None:
    """Bit-equal; with `nan_payload_free`, a NaN lane only has to be a NaN (LLVM does
    not fix the payload of llvm.maximum / minimum)."""
    g, w = _bits(got), _bits(want)
    if nan_payload_free:
        nan = np.isnan(want)
        assert np.isnan(got[nan]).all()
        g, w = g[~nan], w[~nan]
    np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("which", [0, 1])
def test_vector_arith(jit: JitModule, which: int) -> None:
    a, b, out = _case("arith", which)
    (_, _, got) = _run_jit(jit, "arith", [a, b, out])
    x, y = a[1:17], b[0:16]
    with np.errstate(all="ignore"):
        _assert_same(got[0], x + y)
        _assert_same(got[1], x - y)
        _assert_same(got[2], x * y)
        _assert_same(got[3], x / y)
    _assert_same(got[4], (_bits(x) ^ np.uint32(0x80000000)).view(np.float32))
    _assert_same(got[5], _maximum_ref(x, y, True), nan_payload_free=True)
    _assert_same(got[6], _maximum_ref(x, y, False), nan_payload_free=True)
    _assert_same(got[7], x + np.float32(-0.0))
    ramp = np.array([0.0, -0.0, 1.5, -2.25, 3.0e38, 1.0e-45, 0.1, -0.1, *range(8, 16)],
                    np.float32)
    _assert_same(got[8], ramp if a[0] > 0 else np.full(16, -0.0, np.float32))


def test_collapse_shape_is_the_same_memory(jit: JitModule) -> None:
    m, dst = _case("collapse")
    (_, out) = _run_jit(jit, "collapse", [m, dst])
    want = dst.reshape(-1).copy()
    want[9:25] = m.reshape(-1)[5:21]
    want[5 * 8 + 7] = m.reshape(-1)[31]
    np.testing.assert_array_equal(_bits(out).reshape(-1), _bits(want))


def test_vector_accumulators_carried_by_a_loop(jit: JitModule) -> None:
    a, b, c = _case("acc")
    (_, _, got) = _run_jit(jit, "acc", [a, b, c])
    want = c.copy()
    for k in range(8):
        want = np.array([_fma_exact(a[k], b[k, j], want[j]) for j in range(32)], np.float32)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_shuffle_picks_lanes_of_both_operands(jit: JitModule) -> None:
    """vector.shuffle: lane i of the result is lane mask[i] of the two operands
    concatenated (repeats allowed), bits moved as they are (NaN payloads, -0.0)."""
    src, dst = _case("shuffle")
    (_, out) = _run_jit(jit, "shuffle", [src, dst])
    want = np.concatenate([_bits(src)[list(m)] for m in SHUFFLE_MASKS])
    np.testing.assert_array_equal(_bits(out), want)


def test_vector_accesses_are_element_aligned() -> None:
    text = to_llvm_text(_lowered(_KERNELS))
    accesses = re.findall(r"(?:load|store) <\d+ x float>.*", text)
    assert len(accesses) > 20
    assert all(line.endswith("align 4") for line in accesses), accesses


# --------------------------------------------------------------------------------------
# bad input: clear errors, no traceback


@pytest.mark.parametrize("src,message", [
    ("""func.func @f(%a: vector<4xf32>) -> i1 {
          %r = arith.cmpf olt, %a, %a : vector<4xf32>
          func.return %r : i1
        }""", "arith.cmpf on vector<4xf32> is not supported"),
    ("""func.func @f(%m: memref<4x8xf32>, %i: index) -> f32 {
          %c = memref.collapse_shape %m [[0, 1]] : memref<4x8xf32> into memref<16xf32>
          %x = memref.load %c[%i] : memref<16xf32>
          func.return %x : f32
        }""", "group [0, 1] of memref<4x8xf32> has 32 elements, result dim is 16"),
    ("""func.func @f(%m: memref<4x4xf32>, %i: index) {
          %v = vector.load %m[%i, %i] : memref<4x4xf32>, vector<2x2xf32>
          func.return
        }""", "only 1-D fixed-size vectors are supported, got vector<2x2xf32>"),
])
def test_unsupported_input_is_reported(src: str, message: str) -> None:
    with pytest.raises(LoweringError, match=re.escape(message)):
        _lowered(src)
    with pytest.raises(CppEmitError):
        emit_module(_parse(src))


def test_cpp_rejects_vector_ops_without_a_vector_rule() -> None:
    src = """func.func @f(%a: vector<4xf32>) -> vector<4xf32> {
               %r = arith.maxnumf %a, %a : vector<4xf32>
               func.return %r : vector<4xf32>
             }"""
    with pytest.raises(CppEmitError, match="arith.maxnumf on vectors is not supported"):
        emit_module(_parse(src))


# --------------------------------------------------------------------------------------
# full vector width


def _fma_widths(llvm_ir: str, cpu: str) -> tuple[int, int]:
    """(zmm, ymm) vector FMAs in the code LLVM O3 generates for `cpu` (nothing runs)."""
    ensure_initialized()
    tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features="",
                                                                 opt=3)
    mod = llvm.parse_assembly(llvm_ir)
    mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
    optimize(mod, tm, 3)
    fmas = [ln for ln in tm.emit_assembly(mod).splitlines() if "vfmadd" in ln]
    return sum("zmm" in ln for ln in fmas), sum("ymm" in ln for ln in fmas)


_AXPY = """
func.func @axpy(%x: memref<1024xf32>, %y: memref<1024xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1024 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %x[%i] : memref<1024xf32>
    %b = memref.load %y[%i] : memref<1024xf32>
    %r = math.fma %a, %s, %b : f32
    memref.store %r, %y[%i] : memref<1024xf32>
  }
  func.return
}
"""


def test_vector_width_attributes_give_intel_cpus_zmm() -> None:
    """Intel AVX-512 tuning prefers 256-bit vectors: without the attributes the loop
    vectorizer picks ymm for a scalar loop; with them, zmm."""
    module = _lowered(_AXPY)
    wide = to_llvm_text(module, vector_bits=512)
    assert re.search(r'define void @"axpy"\(.*\) "min-legal-vector-width"="512" '
                     r'"prefer-vector-width"="512"', wide)
    assert not re.search(r"declare .*vector-width", wide)
    plain = re.sub(r' "(min-legal|prefer)-vector-width"="512"', "", wide)
    zmm, ymm = _fma_widths(plain, "skylake-avx512")
    assert zmm == 0 and ymm > 0
    zmm, ymm = _fma_widths(wide, "skylake-avx512")
    assert zmm > 0 and ymm == 0


def _host_assumptions() -> str:
    """The host facts a test read, for its failure message."""
    info = host_info()
    tuning = native_tuning(CXX) if CXX else {}
    gcc = ", ".join(f"-{k}={v}" for k, v in sorted(tuning.items())) or "not reported"
    return (f"host CPU {info.cpu} ({'with' if 'avx512f' in info.features else 'without'} "
            f"avx512f, {info.f32_lanes} f32 lanes); {CXX} -march=native: {gcc}")


def test_host_gets_the_attributes_only_with_avx512() -> None:
    text = to_llvm_text(_lowered(_AXPY))
    assert ('"prefer-vector-width"="512"' in text) == ("avx512f" in host_info().features), (
        f"assumed: the attributes exactly when the host has avx512f; {_host_assumptions()}")


# --------------------------------------------------------------------------------------
# the C++ emitter: same bits as the JIT


def _cpp_harness(cases: list[tuple[str, list[np.ndarray | int]]]) -> str:
    """main(): per case, 64-byte aligned buffers filled with the inputs' bits, one call,
    then every buffer's bits in hex, one float per line."""
    lines = ["int main() {"]
    for n, (name, args) in enumerate(cases):
        call = []
        bufs = []
        for k, arg in enumerate(args):
            if isinstance(arg, np.ndarray):
                buf = f"b{n}_{k}"
                words = ", ".join(f"0x{w:08x}u" for w in _bits(arg).reshape(-1))
                lines += [f"  alignas(64) static float {buf}[{arg.size}];",
                          f"  {{ static const std::uint32_t init[] = {{{words}}};",
                          f"    std::memcpy({buf}, init, sizeof init); }}"]
                call.append(buf)
                bufs.append((buf, arg.size))
            else:
                call.append(f"std::int64_t{{{arg}}}")
        lines.append(f"  {name}({', '.join(call)});")
        for buf, size in bufs:
            lines.append(f"  for (int i = 0; i < {size}; ++i) {{ std::uint32_t w; "
                         f"std::memcpy(&w, &{buf}[i], 4); std::printf(\"%08x\\n\", w); }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


@needs_cxx
def test_cpp_matches_the_jit_bit_for_bit(jit: JitModule, tmp_path: Path) -> None:
    cases = _cases()
    cpp = emit_module(_parse(_KERNELS))
    cpp.includes.update({"cstdio", "cstring", "cstdint"})
    text = cpp.text()
    assert "typedef float frame_f32x16 __attribute__((vector_size(64)));" in text
    src = tmp_path / "vec.cpp"
    src.write_text(text + _cpp_harness(cases))
    exe = tmp_path / "vec"
    assert cpp.vector_bits == 512
    # -Wno-psabi: on a host without AVX-512 (Zen 2), g++ notes that a 64-byte vector
    # returned by the static inline helpers has another ABI there; they never cross a
    # compilation unit, and the 16-lane operations are split into 8-lane halves.
    flags = ["-std=c++17", "-O3", "-march=native", "-ffp-contract=off",
             *prefer_vector_width_flags(CXX, cpp.vector_bits), "-Wall", "-Wextra", "-Werror",
             "-Wno-psabi"]
    proc = subprocess.run([CXX, *flags, str(src), "-o", str(exe)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                         timeout=60).stdout.split()
    want = [f"{w:08x}" for name, args in cases
            for out in _run_jit(jit, name, args) for w in _bits(out).reshape(-1)]
    assert len(got) == len(want)
    mismatches = [(i, g, w) for i, (g, w) in enumerate(zip(got, want, strict=True))
                  if g != w]
    assert not mismatches, mismatches[:10]

    # and the fma really is one vector instruction per 16 lanes, not a libm call; with
    # the preference flag whatever -march=native tunes for (see the module docstring)
    asm = subprocess.run([CXX, *flags, "-S", "-o", "-", str(src)], capture_output=True,
                         text=True, check=True).stdout
    widths = _packed_fma_widths(asm)
    if "avx512f" in host_info().features and "-mprefer-vector-width=512" in flags:
        assert widths.get("zmm") and set(widths) == {"zmm"}, (
            f"expected only 512-bit packed FMAs, found {widths}; assumed: an AVX-512 host "
            f"and {CXX} accepting -mprefer-vector-width=512; {_host_assumptions()}")
    assert not re.search(r"call\s+\S*fmaf", asm)


# --------------------------------------------------------------------------------------
# instruction selection for explicit targets: what the flags guarantee on every host

_PACKED_FMA = re.compile(r"^\s+vf[n]?m(?:add|sub)\d*ps\s+.*%([xyz]mm)\d+\s*$", re.M)


def _packed_fma_widths(asm: str) -> dict[str, int]:
    """Packed f32 FMA instructions in AT&T assembly by register width: the destination
    (last operand) is xmm, ymm or zmm."""
    widths: dict[str, int] = {}
    for reg in _PACKED_FMA.findall(asm):
        widths[reg] = widths.get(reg, 0) + 1
    return widths


def _gemm_loops_module() -> ModuleOp:
    """testdata/mnist_mlp.json's train step at the `loops` stage with 16-lane kernels
    chosen explicitly (frame-gemm's micro-kernels on `vector<16xf32>`, on any host)."""
    from frame_mlir.frontends.spec.program import lower_to_loops
    from frame_mlir.frontends.spec.spec_v0 import load_spec

    spec = load_spec(str(Path(__file__).parents[2] / "testdata" / "mnist_mlp.json"))
    return lower_to_loops(spec, CompileOptions(threads=1, f32_lanes=16)).module


# Each vendor's AVX-512 tuning: Intel's (GCC prefers 256-bit vectors for them) and AMD's
# (no preference). GCC 12 knows znver3 but not znver4; znver3 stands for AMD.
_TUNINGS = ["rocketlake", "icelake-server", "sapphirerapids", "znver3", "znver4", "generic"]


@pytest.fixture(scope="module")
def kernel_sources() -> dict[str, tuple[str, int]]:
    """C++ of the hand-written vector kernels and of a model's GEMM step, with the
    widest vector each uses."""
    out = {}
    for name, module in (("kernels", _parse(_KERNELS)), ("mnist_step", _gemm_loops_module())):
        cpp = emit_module(module)
        out[name] = (cpp.text(), cpp.vector_bits)
    return out


@needs_cxx
@pytest.mark.parametrize("source", ["kernels", "mnist_step"])
@pytest.mark.parametrize("tune", _TUNINGS)
def test_cpp_keeps_512_bit_vectors_under_every_tuning(
        kernel_sources: dict[str, tuple[str, int]], source: str, tune: str,
        tmp_path: Path) -> None:
    """With the emitted programs' flags, g++ compiles 16-lane kernels to zmm FMAs only
    (as LLVM does with the vector-width attributes), whichever vendor it tunes for. Under
    GCC's Intel tunings without the flag, the same source had no packed FMA at all:
    every `frame_vfma` became 16 scalar FMAs between lane shuffles (issue 26)."""
    arch = ["-march=x86-64-v4", f"-mtune={tune}"]
    if not compiler_accepts(CXX, *arch):
        pytest.skip(f"{CXX} does not know {' '.join(arch)}")
    text, bits = kernel_sources[source]
    assert bits == 512
    flags = prefer_vector_width_flags(CXX, bits)
    assert flags == ["-mprefer-vector-width=512"], f"{CXX} on x86 should take the flag"
    src = tmp_path / f"{source}.cpp"
    src.write_text(text)
    asm = subprocess.run([CXX, "-std=c++17", "-O3", *arch, "-ffp-contract=off", *flags,
                          "-S", "-o", "-", str(src)], capture_output=True, text=True,
                         check=True).stdout
    widths = _packed_fma_widths(asm)
    assert widths.get("zmm") and set(widths) == {"zmm"}, (
        f"{source} under {' '.join(arch)} {flags[0]}: packed FMAs by width {widths}")


def test_jit_keeps_512_bit_vectors_for_intel_tuning() -> None:
    """The JIT's side of the comparison above: LLVM for an Intel AVX-512 CPU, with the
    attributes `to_llvm_text` gives 512-bit code, uses zmm FMAs only, as g++ does."""
    module = _lowered(_KERNELS)
    zmm, ymm = _fma_widths(to_llvm_text(module, vector_bits=512), "skylake-avx512")
    assert zmm > 0 and ymm == 0
