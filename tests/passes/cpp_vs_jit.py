"""Shared test support: run one frame function through the JIT and through the C++
emitter (the loops stage, g++ -O2 with no FP contraction, as emitted programs are
built) on the same inputs, and compare the output bits.

The family tests (`test_frame_*.py`) use it to show that the emitter, which has no
per-frame-op code, computes what the JIT computes for every kernel of the family.
`start_model` / `finish_model` do the same for whole models (test_cpp_vs_jit_models.py):
one lowering to the loops stage, emitted as a program that reads its inputs from a file
and calls a public function N times, and the same IR through the JIT; every byte of
every output and of the final parameters compared.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects import builtin, func

from frame_mlir.backend.cpp.cmake import prefer_vector_width_flags
from frame_mlir.backend.cpp.emitter import element_type, emit_module
from frame_mlir.compile_options import CompileOptions
from frame_mlir.passes.arith_expand_bf16 import bf16_round_bits
from frame_mlir.passes.pipeline import run_pipeline
from frame_mlir.runtime.executable import (
    ArgInfo,
    Executable,
    FunctionSignature,
    compile_module,
    signatures,
)

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
    cpp = emit_module(module)
    src.write_text(cpp.text() + main)
    exe = tmp_path / fn
    cxx = CXX or "g++"
    subprocess.run([cxx, "-std=c++17", "-O2", "-ffp-contract=off",
                    *prefer_vector_width_flags(cxx, cpp.vector_bits), str(src), "-o",
                    str(exe)], check=True, capture_output=True, text=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    flat = np.array([float.fromhex(v) if "nan" not in v else np.nan for v in got], np.float32)
    at = 0
    for i, n in enumerate(sizes):
        same_bits(flat[at:at + n], np.asarray(jit[i]), f"output {i}")
        at += n
    assert at == flat.size
    return [np.asarray(o) for o in jit]


# --------------------------------------------------------------------------------------
# whole models: training steps through both backends, every byte compared

_F32_BITS_SCALE = {"param": 0.3, "input": 1.0}


def _random_buffer(rng: np.random.Generator, arg: ArgInfo) -> np.ndarray:
    """A deterministic random value for one argument of the ABI: floats uniform in
    [-1, 1] (parameters in [-0.3, 0.3], so training stays finite), rounded to the
    storage type; integer inputs (labels, indices) inside their checked range."""
    if arg.dtype.kind in "iu" and arg.dtype != np.dtype(np.uint16):
        bound = min((b for _, b, _ in arg.checks), default=2)
        return rng.integers(0, bound, arg.shape).astype(arg.dtype)
    values = rng.uniform(-1.0, 1.0, arg.shape).astype(np.float32)
    values *= _F32_BITS_SCALE.get(arg.kind, 1.0)
    if arg.dtype == np.dtype(np.uint16):  # bf16 bit patterns
        return np.vectorize(bf16_round_bits, otypes=[np.uint16])(values)
    return values.astype(arg.dtype)


@dataclass
class ModelRun:
    """The bytes one backend produced: every output buffer after each call, then every
    input / parameter buffer after the last call (parameters updated in place)."""

    outputs: list[list[bytes]]
    final_inputs: list[bytes]


def _jit_run(module: builtin.ModuleOp, fn: str, sigs: dict[str, FunctionSignature],
             lr: float | None, options: CompileOptions, inputs: list[np.ndarray],
             steps: int) -> ModelRun:
    """`steps` calls of `@fn` through the JIT, each call's in-place results (SGD's
    parameters) fed to the next, as the native training loop does."""
    run_pipeline(module, lr, start_after="loops", options=options)
    ex = Executable(module, sigs, cache=None)
    sig = sigs[fn]
    ins = sig.of_kind("input", "param")
    current = [np.array(a, copy=True) for a in inputs]
    outputs: list[list[bytes]] = []
    for _ in range(steps):
        results = ex(fn, *current)
        by_index = dict(enumerate(results))
        outputs.append([np.ascontiguousarray(by_index[a.result_index or 0]).tobytes()
                        for a in sig.of_kind("output")])
        current = [by_index[a.result_index] if a.result_index is not None else current[i]
                   for i, a in enumerate(ins)]
    return ModelRun(outputs, [np.ascontiguousarray(a).tobytes() for a in current])


def _cpp_main(fn: func.FuncOp, cpp_name: str, sig: FunctionSignature) -> str:
    """A main() that reads `@fn`'s inputs from argv[1] (raw bytes, argument order),
    calls it argv[3] times and writes to argv[2] every output after each call, then
    every input (parameters updated in place) -- the layout `ModelRun` reads."""
    decls, reads, writes_out, writes_in, args = [], [], [], [], []
    for i, (typ, a) in enumerate(zip(fn.function_type.inputs.data, sig.args, strict=True)):
        name = f"buf{i}"
        size = max(sig.arena_size, 64) if a.kind == "arena" else max(int(np.prod(a.shape)), 1)
        decls.append(f"alignas(64) static {element_type(typ)} {name}[{size}];")
        args.append(name)
        if a.kind in ("input", "param"):
            reads.append(f"  frame_io(in, {name}, sizeof({name}), true);")
            writes_in.append(f"  frame_io(out, {name}, sizeof({name}), false);")
        elif a.kind == "output":
            writes_out.append(f"    frame_io(out, {name}, sizeof({name}), false);")
    return "\n".join([
        "", "#include <cstdio>", "#include <cstdlib>", *decls,
        "static void frame_io(std::FILE* f, void* p, std::size_t n, bool read) {",
        "  if ((read ? std::fread(p, 1, n, f) : std::fwrite(p, 1, n, f)) != n) std::abort();",
        "}",
        "int main(int argc, char** argv) {",
        "  if (argc != 4) return 2;",
        "  std::FILE* in = std::fopen(argv[1], \"rb\");",
        "  if (in == nullptr) return 3;", *reads, "  std::fclose(in);",
        "  std::FILE* out = std::fopen(argv[2], \"wb\");",
        "  if (out == nullptr) return 3;",
        "  for (long s = 0, n = std::atol(argv[3]); s < n; ++s) {",
        f"    {cpp_name}({', '.join(args)});", *writes_out, "  }", *writes_in,
        "  return std::fclose(out) == 0 ? 0 : 4;", "}", ""])


@dataclass
class CppBuild:
    """A model's emitted program, being compiled (`proc`), and what to run it with."""

    name: str
    exe: Path
    proc: subprocess.Popen[str]
    fn: str
    sig: FunctionSignature
    inputs: list[np.ndarray]
    steps: int
    jit: ModelRun


def start_model(name: str, module: builtin.ModuleOp, lr: float | None, fn_suffix: str,
                tmp_path: Path, *, steps: int, threads: int = 1, seed: int = 0) -> CppBuild:
    """Lower `module` once to the loops stage, start g++ (-O2, no FP contraction,
    -Wall -Wextra -Werror: as emitted programs are built) on its C++ translation in the
    background, and run the same loops-stage IR through the JIT meanwhile.

    `fn_suffix` picks the public function (`_train_step` with `lr`, `_grad` without);
    inputs and parameters are random (`seed`). `finish_model` runs the program and
    compares. Building in the background lets several models compile at once."""
    options = CompileOptions(threads=threads)
    run_pipeline(module, lr, stop_after="loops", options=options)
    sigs = signatures(module)
    fn_name = next(n for n in sigs if n.endswith(fn_suffix))
    sig = sigs[fn_name]
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp)
              and o.sym_name.data == fn_name)
    cpp = emit_module(module.clone())
    src = tmp_path / f"{name}.cpp"
    src.write_text(cpp.text() + _cpp_main(fn, cpp.info[fn_name].cpp_name, sig))
    exe = tmp_path / name
    cxx = CXX or "g++"
    proc = subprocess.Popen([cxx, "-std=c++17", "-O2", "-march=native", "-ffp-contract=off",
                             *prefer_vector_width_flags(cxx, cpp.vector_bits), "-Wall",
                             "-Wextra", "-Werror", str(src), "-o", str(exe), "-pthread"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rng = np.random.default_rng(seed)
    inputs = [_random_buffer(rng, a) for a in sig.of_kind("input", "param")]
    jit = _jit_run(module, fn_name, sigs, lr, options, inputs, steps)
    return CppBuild(name, exe, proc, fn_name, sig, inputs, steps, jit)


def finish_model(build: CppBuild) -> None:
    """Wait for the build, run the program on the same inputs, and assert that every
    output of every call and every final parameter has the JIT's bytes."""
    log, _ = build.proc.communicate()
    assert build.proc.returncode == 0, f"{build.name}: g++ failed:\n{log}"
    folder = build.exe.parent
    (folder / f"{build.name}.in").write_bytes(
        b"".join(np.ascontiguousarray(a).tobytes() for a in build.inputs))
    subprocess.run([str(build.exe), str(folder / f"{build.name}.in"),
                    str(folder / f"{build.name}.out"), str(build.steps)], check=True,
                   timeout=600)
    data = (folder / f"{build.name}.out").read_bytes()
    at = 0

    def take(n: int) -> bytes:
        nonlocal at
        at += n
        return data[at - n:at]

    outs = build.sig.of_kind("output")
    ins = build.sig.of_kind("input", "param")
    for step, want in enumerate(build.jit.outputs):
        for a, w in zip(outs, want, strict=True):
            got = take(len(w))
            assert got == w, (f"{build.name}: output {a.name} of call {step} differs: "
                              f"{_first_difference(got, w, a.dtype)}")
    for a, w in zip(ins, build.jit.final_inputs, strict=True):
        got = take(len(w))
        assert got == w, (f"{build.name}: {a.kind} {a.name} after {build.steps} calls "
                          f"differs: {_first_difference(got, w, a.dtype)}")
    assert at == len(data), f"{build.name}: {len(data) - at} unexpected bytes"


def _first_difference(got: bytes, want: bytes, dtype: np.dtype) -> str:
    g, w = np.frombuffer(got, dtype), np.frombuffer(want, dtype)
    bad = np.flatnonzero(g.view(np.uint8 if dtype.itemsize == 1 else f"u{dtype.itemsize}")
                         != w.view(np.uint8 if dtype.itemsize == 1 else f"u{dtype.itemsize}"))
    return (f"{bad.size} of {g.size} elements, first at {bad[0]}: C++ {g[bad[0]]!r}, "
            f"JIT {w[bad[0]]!r}")
