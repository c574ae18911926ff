"""Shared test support: run one frame function through the JIT and through the C++
emitter (the loops stage, g++ -O2 with no FP contraction, as emitted programs are
built) on the same inputs, and compare the output bits.

The family tests (`test_frame_*.py`) use it to show that the emitter, which has no
per-frame-op code, computes what the JIT computes for every kernel of the family.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects import builtin

from frame_mlir.backend.cpp.emitter import emit_module
from frame_mlir.compile_options import CompileOptions
from frame_mlir.passes.pipeline import run_pipeline
from frame_mlir.runtime.executable import compile_module

CXX = shutil.which("g++") or shutil.which("c++")
ONE_THREAD = CompileOptions(threads=1)

_C_TYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "std::int32_t",
            np.dtype(np.int64): "std::int64_t"}


def _literal(v: np.generic) -> str:
    if isinstance(v, np.floating):
        if np.isnan(v):
            return "NAN"
        if np.isinf(v):
            return "INFINITY" if v > 0 else "-INFINITY"
        return f"{float(v).hex()}f"
    return str(int(v))


def same_bits(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Equal float32 bit patterns, any NaN matching any NaN."""
    a, b = np.asarray(a, np.float32).reshape(-1), np.asarray(b, np.float32).reshape(-1)
    assert a.shape == b.shape, f"{what}: {a.shape} vs {b.shape}"
    nan = np.isnan(a) & np.isnan(b)
    same = nan | (a.view(np.uint32) == b.view(np.uint32))
    assert same.all(), f"{what}: {a[~same]} vs {b[~same]}"


def assert_cpp_matches_jit(make_module: Callable[[], builtin.ModuleOp], fn: str,
                           inputs: Sequence[np.ndarray], tmp_path: Path,
                           arena_bytes: int = 1 << 22) -> list[np.ndarray]:
    """Run `@fn` of `make_module()` (a fresh module per backend) on `inputs`
    (float32 / int32 / int64 arrays) with the JIT and as emitted C++; assert every
    float32 output has the same bits. Returns the JIT's outputs."""
    jit = compile_module(make_module(), options=ONE_THREAD, cache=None)(fn, *inputs)
    jit = list(jit) if isinstance(jit, list | tuple) else [jit]
    module = make_module()
    run_pipeline(module, None, stop_after="loops", options=ONE_THREAD)
    decls = [f"static {_C_TYPES[a.dtype]} in{i}[{max(a.size, 1)}] = "
             f"{{{', '.join(_literal(v) for v in a.reshape(-1)) or '0'}}};"
             for i, a in enumerate(np.asarray(x) for x in inputs)]
    sizes = [np.asarray(o).size for o in jit]
    decls += [f"static float out{i}[{max(n, 1)}];" for i, n in enumerate(sizes)]
    args = [f"in{i}" for i in range(len(inputs))] + [f"out{i}" for i in range(len(jit))]
    prints = "\n".join(f"  for (int j = 0; j < {n}; ++j) std::printf(\"%a\\n\", "
                       f"double(out{i}[j]));" for i, n in enumerate(sizes))
    main = "\n".join(["", "#include <cmath>", "#include <cstdint>", "#include <cstdio>",
                      *decls, f"alignas(64) static std::uint8_t arena[{arena_bytes}];",
                      "int main() {", f"  {fn}({', '.join(args)}, arena);", prints, "}", ""])
    src = tmp_path / f"{fn}.cpp"
    src.write_text(emit_module(module).text() + main)
    exe = tmp_path / fn
    subprocess.run([CXX or "g++", "-std=c++17", "-O2", "-ffp-contract=off", str(src), "-o",
                    str(exe)], check=True, capture_output=True, text=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    flat = np.array([float.fromhex(v) if "nan" not in v else np.nan for v in got], np.float32)
    at = 0
    for i, n in enumerate(sizes):
        same_bits(flat[at:at + n], np.asarray(jit[i]), f"output {i}")
        at += n
    assert at == flat.size
    return [np.asarray(o) for o in jit]
