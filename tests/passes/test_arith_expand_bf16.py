"""arith-expand-bf16: the bf16 <-> f32 conversions as integer code, JIT-compiled and
emitted as C++, against PyTorch's rounding and against each other, bit for bit.

The conversion runs on every f32 high half (all 65536: both signs, every exponent,
every bf16 mantissa) with the low halves that decide the rounding (0, 1, just below,
at and just above the tie, all ones), and on random patterns; then a module of frame
ops on bf16 values (forward and gradient kernels) gives the same bits in the emitted
C++ as in the JIT.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import builtin
from xdsl.parser import Parser

from frame_mlir.backend.cpp.emitter import CppEmitError, emit_module
from frame_mlir.backend.llvm.jit import jit_compile
from frame_mlir.backend.llvm.translate import to_llvm_text
from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.frontends.api.tensor import bf16_bits, bf16_to_float32
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.arith_expand_bf16 import BF16_QUIET_NAN, ArithExpandBf16, bf16_round_bits
from frame_mlir.passes.lower_to_llvm import LOOPS_TO_LLVM
from frame_mlir.passes.pipeline import make_context, run_passes, run_pipeline
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")

CXX = shutil.which("g++") or shutil.which("c++")
LOWS = (0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF)


def _patterns() -> np.ndarray:
    """f32 bit patterns: every high half with each of LOWS, then random ones."""
    high = np.arange(1 << 16, dtype=np.uint32) << 16
    grid = (high[:, None] | np.array(LOWS, np.uint32)[None, :]).reshape(-1)
    rand = np.random.default_rng(7).integers(0, 1 << 32, 1 << 16, dtype=np.uint64)
    return np.concatenate([grid, rand.astype(np.uint32)])


PATTERNS = _patterns()
N = PATTERNS.size


def _cvt_module() -> builtin.ModuleOp:
    """@cvt(x: f32[N]) -> h = bf16(x) (truncf), w = f32(h) (extf), at the loop level."""
    src = f"""func.func @cvt(%x: memref<{N}xf32>, %h: memref<{N}xbf16>, %w: memref<{N}xf32>) {{
      %lo = arith.constant 0 : index
      %hi = arith.constant {N} : index
      %one = arith.constant 1 : index
      scf.for %i = %lo to %hi step %one {{
        %v = memref.load %x[%i] : memref<{N}xf32>
        %r = arith.truncf %v : f32 to bf16
        memref.store %r, %h[%i] : memref<{N}xbf16>
        %b = memref.load %h[%i] : memref<{N}xbf16>
        %e = arith.extf %b : bf16 to f32
        memref.store %e, %w[%i] : memref<{N}xf32>
      }}
      func.return
    }}"""
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, [ArithExpandBf16()])
    return module


def _jit_cvt() -> tuple[np.ndarray, np.ndarray]:
    module = _cvt_module()
    run_passes(make_context(), module, LOOPS_TO_LLVM)
    fn = jit_compile(to_llvm_text(module)).get_function("cvt")
    x = PATTERNS.view(np.float32).copy()
    h, w = np.zeros(N, np.uint16), np.zeros(N, np.float32)
    fn(*(ctypes.c_void_p(a.ctypes.data) for a in (x, h, w)))
    return h, w


@pytest.fixture(scope="module")
def jit_cvt() -> tuple[np.ndarray, np.ndarray]:
    return _jit_cvt()


def test_jit_conversion_is_torchs_round_to_nearest_even(jit_cvt) -> None:
    h, w = jit_cvt
    x = PATTERNS.view(np.float32)
    ref = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(
        np.uint16)
    nan = np.isnan(x)
    # torch's vectorised conversion writes 0xffff for NaN, its scalar one 0x7fc0: ours
    # is always the quiet NaN 0x7fc0.
    assert np.array_equal(h[~nan], ref[~nan])
    assert (h[nan] == BF16_QUIET_NAN).all() and nan.sum() > 1000
    assert torch.tensor(float("nan"), dtype=torch.bfloat16).view(torch.int16).item() \
        & 0xFFFF == BF16_QUIET_NAN
    # widening is exact: the bf16 bits become the f32's high half
    assert np.array_equal(w.view(np.uint32), h.astype(np.uint32) << 16)
    # the host-side roundings agree: constants (api.tensor.bf16_bits) and
    # convert-arith-to-llvm's constant lowering (bf16_round_bits)
    assert np.array_equal(bf16_bits(x), h)
    sample = np.random.default_rng(1).choice(N, 4000, replace=False)
    assert [bf16_round_bits(float(x[i])) for i in sample] == h[sample].tolist()


def _cxx(src: str, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.cpp"
    path.write_text(src)
    exe = tmp_path / name
    subprocess.run([CXX, "-std=c++17", "-O2", "-ffp-contract=off", str(path), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_converts_like_the_jit(jit_cvt, tmp_path: Path) -> None:
    """The same conversion emitted as C++ (bf16 as std::uint16_t) and built with g++:
    the same bits as the JIT for every pattern."""
    h, w = jit_cvt
    main = f"""
#include <cstdio>
static float x[{N}];
static std::uint16_t h[{N}];
static float w[{N}];
int main(int argc, char** argv) {{
  std::FILE* in = std::fopen(argv[1], "rb");
  if (!in || std::fread(x, sizeof(float), {N}, in) != {N}) return 1;
  std::fclose(in);
  cvt(x, h, w);
  std::FILE* out = std::fopen(argv[2], "wb");
  std::fwrite(h, sizeof(std::uint16_t), {N}, out);
  std::fwrite(w, sizeof(float), {N}, out);
  std::fclose(out);
}}
"""
    exe = _cxx(emit_module(_cvt_module()).text() + main, tmp_path, "cvt")
    (tmp_path / "x.bin").write_bytes(PATTERNS.tobytes())
    subprocess.run([str(exe), str(tmp_path / "x.bin"), str(tmp_path / "out.bin")], check=True)
    raw = (tmp_path / "out.bin").read_bytes()
    assert len(raw) == 6 * N
    assert np.array_equal(np.frombuffer(raw[:2 * N], np.uint16), h)
    assert np.array_equal(np.frombuffer(raw[2 * N:], np.uint32), w.view(np.uint32))


def test_emitter_refuses_unexpanded_bf16_conversions() -> None:
    src = """func.func @f(%x: memref<2xbf16>, %y: memref<2xf32>) {
      %i = arith.constant 0 : index
      %v = memref.load %x[%i] : memref<2xbf16>
      %e = arith.extf %v : bf16 to f32
      memref.store %e, %y[%i] : memref<2xf32>
      func.return
    }"""
    module = Parser(make_context(), src).parse_module()
    with pytest.raises(CppEmitError, match="arith-expand-bf16"):
        emit_module(module)


# -- frame ops on bf16: emitted C++ == JIT -------------------------------------------------

SHAPE = (4, 6)
#: NaN, both infinities, both zeros, denormals, a tie, the top of the range, and ordinary
#: values (all exact in bf16).
EDGE = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0**-133, -(2.0**-130), 0.1, -0.5,
                 0.25, 6.0, -1.0, 1.0 + 2.0**-7, 3.0, -3.0, 3.3895313892515355e38, 7.5,
                 -7.5, 20.0, -20.0, 1e-3, -1e-3, 2.0, -2.0], np.float32).reshape(SHAPE)
DY = np.linspace(-1.5, 1.5, EDGE.size, dtype=np.float32).reshape(SHAPE)


def _bf16_module() -> builtin.ModuleOp:
    g = Graph("fam")
    x = g.add_input(SHAPE, "x", elem=builtin.bf16)
    dy = g.add_input(SHAPE, "dy", elem=builtin.bf16)
    loss = g.emit(frame.MseLossOp(x, dy))
    outs = [g.emit(op) for op in (
        frame.AddOp(x, dy), frame.MulOp(x, dy), frame.ReluOp(x), frame.ReluGradOp(x, dy),
        frame.SigmoidOp(x), frame.ScaleOp(dy, 0.1),
        frame.MatmulOp(x, dy, transpose_rhs=True), frame.MatmulOp(dy, x, transpose_lhs=True),
        frame.SumOp(x, [0]), frame.SumOp(dy, []), frame.MseLossGradOp(x, dy, loss),
        frame.ExpOp(dy), frame.TanhOp(x), frame.GeluOp(dy), frame.GeluGradOp(dy, x),
        frame.SoftmaxOp(dy, 1), frame.TransposeOp(x), frame.ConcatOp([x, dy], 0),
        frame.ConstantOp(0.1, result_type=frame.tensor_type((3,), builtin.bf16)))]
    return builtin.ModuleOp([g.finish([loss, *outs])])


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit_on_bf16(tmp_path: Path) -> None:
    """The loops stage of a bf16 module (forward and gradient kernels, reductions,
    matmuls, data movement, a constant) emitted as C++, compiled with g++ (-O2, no FP
    contraction) and run on the edge values: the same bf16 bits as the JIT's."""
    xb, dyb = bf16_bits(EDGE), bf16_bits(DY)
    jit = compile_module(_bf16_module(), options=CompileOptions(threads=1), cache=None)(
        "fam", xb, dyb)
    assert all(np.asarray(o).dtype == np.uint16 for o in jit)
    module = _bf16_module()
    run_pipeline(module, None, stop_after="loops", options=CompileOptions(threads=1))
    assert not [op for op in module.walk() if op.name in ("arith.extf", "arith.truncf")
                and "bf16" in str([*op.operand_types, *op.result_types])]
    outs = len(jit)
    size = max(np.asarray(o).size for o in jit)
    main = f"""
#include <cstdio>
static std::uint16_t x[{EDGE.size}] = {{{", ".join(hex(v) for v in xb.ravel())}}};
static std::uint16_t dy[{DY.size}] = {{{", ".join(hex(v) for v in dyb.ravel())}}};
static std::uint16_t out[{outs}][{size}];
static const int sizes[{outs}] = {{{", ".join(str(np.asarray(o).size) for o in jit)}}};
alignas(64) static std::uint8_t arena[1 << 20];
int main() {{
  fam(x, dy, {", ".join(f"out[{i}]" for i in range(outs))}, arena);
  for (int i = 0; i < {outs}; ++i)
    for (int j = 0; j < sizes[i]; ++j) std::printf("%u\\n", unsigned(out[i][j]));
}}
"""
    exe = _cxx(emit_module(module).text() + main, tmp_path, "fam")
    got = np.array(subprocess.run([str(exe)], check=True, capture_output=True,
                                  text=True).stdout.split(), np.uint32).astype(np.uint16)
    at = 0
    for i, o in enumerate(jit):
        want = np.asarray(o).reshape(-1)
        mine = got[at:at + want.size]
        assert np.array_equal(mine, want), f"output {i}: {mine} vs {want}"
        at += want.size
    assert at == got.size
    # and the JIT's results are bf16 roundings of the f32 math (a sanity check of the
    # module: the add is exact arithmetic rounded once)
    add = bf16_to_float32(np.asarray(jit[1]))
    ref = bf16_to_float32(bf16_bits(bf16_to_float32(xb) + bf16_to_float32(dyb)))
    assert np.array_equal(add, ref, equal_nan=True)
