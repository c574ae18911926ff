"""The emitted C++ program beside the JIT: time per training step, same run.

Run:  python bench/bench_emit.py [--quick] [--keep DIR] [--only mnist_mlp,wide_mlp]
                                 [--without-width-flag]

For tiny_mlp, mnist_mlp (issue 9's W2) and wide_mlp (W4: 256 x 1024 -> 1024 relu ->
1024 relu -> 10) it emits the standalone program (`frame-dslc --emit`),
builds it with its CMakeLists (Release: -O3, -ffp-contract=off, -march=native and the
generator's vector width, `-mprefer-vector-width=512` with AVX-512), runs it and reads
the training loop's wall time it prints to stderr (`train_seconds S`); the JIT's time is
`Session.step` (the compiled train step called through ctypes, as `frame-run` trains).
Both run the same steps of the same spec, and the program's stdout is compared with
frame-run's (`identical`: bit-for-bit the same losses and predictions). Machines are
noisy: each figure is the best of several repeats; the ratio is what to compare
(issue 9's and 26's target: C++ within 1.2x of the JIT on W2 and W4).

It first prints the host: the CPU model, and what `-march=native` means to g++ there
(`-Q --help=target`: -march, -mtune, -mprefer-vector-width): the same source compiles
to different code under different tunings (issue 26: GCC's Intel AVX-512 tunings prefer
256-bit vectors). `--without-width-flag` adds a column built without the vector-width
flag (the programs as emitted before issue 26), in the same run.

W3 (LeNet) is not here: it is built with the Python API, and `emit_program` writes the
`main()` of a v0 spec (its initial values, data and training loop), which an API graph
does not have. `bench_workloads.py` imports `measure` for its W2 / W4 rows.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from frame_mlir.backend.cpp.cmake import (  # noqa: E402
    native_tuning,
    prefer_vector_width_flags,
    target_name,
)
from frame_mlir.frontends.spec.program import emit_program  # noqa: E402
from frame_mlir.frontends.spec.spec import ModelSpec  # noqa: E402
from frame_mlir.frontends.spec.spec_v0 import load_spec  # noqa: E402
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session  # noqa: E402
from frame_mlir.passes.pipeline import vector_lanes  # noqa: E402
from frame_mlir.tools.driver import run_training  # noqa: E402

MODELS = ["tiny_mlp", "mnist_mlp", "wide_mlp"]


def cpu_model() -> str:
    """The CPU's marketing name (/proc/cpuinfo's `model name`), else what Python knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_lines() -> list[str]:
    """What the figures depend on: the CPU, the JIT's view of it, and g++'s tuning."""
    from frame_mlir.target.host import host_info

    info = host_info()
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True,
                             check=False).stdout.splitlines()[:1]
    tuning = native_tuning(cxx)
    gcc = " ".join(f"-{k}={tuning[k]}" for k in ("march", "mtune", "mprefer-vector-width")
                   if k in tuning) or "(no -Q --help=target report)"
    bits = 32 * vector_lanes()
    emitted = " ".join(prefer_vector_width_flags(cxx, bits)) or "no vector-width flag"
    return [f"host: {cpu_model()}; LLVM cpu {info.cpu}, "
            f"{'with' if 'avx512f' in info.features else 'without'} avx512f, "
            f"{info.cores} cores",
            f"{cxx} ({version[0] if version else '?'}) -march=native: {gcc}",
            f"emitted programs: {info.f32_lanes}-lane kernels, built with {emitted}"]


def build(spec: ModelSpec, out: Path, *, width_flag: bool = True) -> tuple[Path, float]:
    """Emit and build `spec` under `out`; returns the binary and the build seconds.
    `width_flag=False` builds without the vector-width flag (its CMake check answered
    no in advance)."""
    t0 = time.perf_counter()
    emit_program(spec, out)
    off = [f"-DFRAME_HAS_PREFER_VECTOR_WIDTH_{w}=OFF" for w in (128, 256, 512)]
    for args in (["-S", str(out), "-B", str(out / "build"), "-DCMAKE_BUILD_TYPE=Release",
                  *([] if width_flag else off)],
                 ["--build", str(out / "build")]):
        subprocess.run(["cmake", *args], check=True, capture_output=True)
    return out / "build" / target_name(spec.name), time.perf_counter() - t0


def cpp_seconds_per_step(binary: Path, steps: int, repeats: int) -> tuple[float, str]:
    """Best training-loop seconds per step over `repeats` runs, and the last stdout."""
    best, stdout = float("inf"), ""
    for _ in range(repeats):
        proc = subprocess.run([str(binary)], check=True, capture_output=True, text=True)
        m = re.search(r"train_seconds (\S+)", proc.stderr)
        assert m, proc.stderr
        best, stdout = min(best, float(m.group(1)) / steps), proc.stdout
    return best, stdout


def jit_seconds_per_step(spec: ModelSpec, steps: int, repeats: int) -> float:
    """Best seconds per `Session.step` over `repeats` runs of `steps` steps."""
    compiled = CompiledSpec(spec)
    best = float("inf")
    for _ in range(repeats):
        session = Session(compiled)  # fresh buffers: the same trajectory every run
        t0 = time.perf_counter()
        for _ in range(steps):
            session.step()
        best = min(best, (time.perf_counter() - t0) / steps)
    return best


def measure(name: str, root: Path, repeats: int) -> tuple[float, float, bool, float]:
    """Build `testdata/<name>.json`'s program under `root / name` and time it beside the
    JIT: (JIT s/step, C++ s/step, stdout identical to frame-run's, build seconds)."""
    spec = load_spec(str(ROOT / "testdata" / f"{name}.json"))
    steps = spec.training.steps
    binary, build_s = build(spec, root / name)
    cpp, stdout = cpp_seconds_per_step(binary, steps, repeats)
    jit = jit_seconds_per_step(spec, steps, repeats)
    frame_run = io.StringIO()
    run_training(spec, frame_run, print_predictions=True)
    return jit, cpp, stdout == frame_run.getvalue(), build_s


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument("--keep", type=Path, help="build under this directory and keep it")
    p.add_argument("--only", help=f"comma-separated models (default: {','.join(MODELS)})")
    p.add_argument("--without-width-flag", action="store_true",
                   help="also build each program without -mprefer-vector-width and time it")
    args = p.parse_args()
    repeats = 3 if args.quick else 10
    models = [m.strip() for m in args.only.split(",")] if args.only else MODELS
    print("\n".join(host_lines()))
    threads = os.environ.get("FRAME_NUM_THREADS", "unset: all cores")
    print(f"threads (the JIT and the emitted programs alike): FRAME_NUM_THREADS={threads}")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        extra = f" {'no flag ms':>11} {'no flag/JIT':>11}" if args.without_width_flag else ""
        print(f"{'model':<10} {'steps':>5} {'JIT ms/step':>12} {'C++ ms/step':>12} "
              f"{'C++/JIT':>8} {'build s':>8}  identical{extra}")
        for name in models:
            spec = load_spec(str(ROOT / "testdata" / f"{name}.json"))
            steps = spec.training.steps
            jit, cpp, same, build_s = measure(name, root, repeats)
            line = (f"{name:<10} {steps:>5} {jit * 1e3:>12.4f} {cpp * 1e3:>12.4f} "
                    f"{cpp / jit:>8.2f} {build_s:>8.1f}  {'yes' if same else 'NO':<9}")
            if args.without_width_flag:
                binary, _ = build(spec, root / f"{name}_no_flag", width_flag=False)
                # tens of times slower where the tuning splits the vectors: 3 repeats
                plain, _ = cpp_seconds_per_step(binary, steps, min(repeats, 3))
                line += f" {plain * 1e3:>11.4f} {plain / jit:>11.2f}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
