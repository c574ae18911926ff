"""The emitted C++ program beside the JIT: time per training step, same run.

Run:  python bench/bench_emit.py [--quick] [--keep DIR] [--only mnist_mlp,wide_mlp]

For tiny_mlp, mnist_mlp (issue 9's W2) and wide_mlp (W4: 256 x 1024 -> 1024 relu ->
1024 relu -> 10) it emits the standalone program (`frame-dslc --emit`),
builds it with CMake (Release: -O3, -ffp-contract=off, -march=native), runs it and reads
the training loop's wall time it prints to stderr (`train_seconds S`); the JIT's time is
`Session.step` (the compiled train step called through ctypes, as `frame-run` trains).
Both run the same steps of the same spec, and the program's stdout is compared with
frame-run's (`identical`: bit-for-bit the same losses and predictions). Machines are
noisy: each figure is the best of several repeats; the ratio is what to compare
(issue 9's target: C++ within 1.2x of the JIT on W2-W4).

W3 (LeNet) is not here: it is built with the Python API, and `emit_program` writes the
`main()` of a v0 spec (its initial values, data and training loop), which an API graph
does not have. `bench_workloads.py` imports `measure` for its W2 / W4 rows.
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from frame_mlir.backend.cpp.cmake import target_name  # noqa: E402
from frame_mlir.backend.cpp.program import emit_program  # noqa: E402
from frame_mlir.frontend.spec import ModelSpec  # noqa: E402
from frame_mlir.frontend.spec_v0 import load_spec  # noqa: E402
from frame_mlir.runtime.trainer import CompiledSpec, Session  # noqa: E402
from frame_mlir.tools.driver import run_training  # noqa: E402

MODELS = ["tiny_mlp", "mnist_mlp", "wide_mlp"]


def build(spec: ModelSpec, out: Path) -> tuple[Path, float]:
    """Emit and build `spec` under `out`; returns the binary and the build seconds."""
    t0 = time.perf_counter()
    emit_program(spec, out)
    for args in (["-S", str(out), "-B", str(out / "build"), "-DCMAKE_BUILD_TYPE=Release"],
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
    args = p.parse_args()
    repeats = 3 if args.quick else 10
    models = [m.strip() for m in args.only.split(",")] if args.only else MODELS
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        print(f"{'model':<10} {'steps':>5} {'JIT ms/step':>12} {'C++ ms/step':>12} "
              f"{'C++/JIT':>8} {'build s':>8}  identical")
        for name in models:
            steps = load_spec(str(ROOT / "testdata" / f"{name}.json")).training.steps
            jit, cpp, same, build_s = measure(name, root, repeats)
            print(f"{name:<10} {steps:>5} {jit * 1e3:>12.4f} {cpp * 1e3:>12.4f} "
                  f"{cpp / jit:>8.2f} {build_s:>8.1f}  {'yes' if same else 'NO'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
