"""Kernels on N threads: step time by thread count, and where splitting starts to pay.

    .venv/bin/python bench/bench_threads.py                 # mnist_mlp, threads 1 and 2
    .venv/bin/python bench/bench_threads.py --threads 1,2,4 --spec testdata/mnist_mlp.json
    .venv/bin/python bench/bench_threads.py --sweep         # elementwise kernel of N f32

`Session.step` time is the best of `--runs` runs of `--steps` steps (the machine's
other load only ever makes a run slower). `--sweep` times one elementwise kernel
(`b = a * 2 + 1` on rows x 256 f32) split over 1 and 2 threads with no work threshold:
the sizes where 2 threads win are where `MIN_PARALLEL_WORK` (frame_parallelize.py)
belongs. Results depend on the machine being otherwise idle.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from frame_mlir.compile_options import CompileOptions  # noqa: E402
from frame_mlir.frontend.spec_v0 import load_spec  # noqa: E402
from frame_mlir.runtime.trainer import CompiledSpec, Session  # noqa: E402


def step_seconds(spec_path: str, threads: int, runs: int, steps: int) -> float:
    spec = load_spec(spec_path)
    session = Session(CompiledSpec(spec, options=CompileOptions(threads=threads), cache=None))
    for _ in range(steps):  # warm up: workers started, caches filled
        session.step()
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(steps):
            session.step()
        best = min(best, (time.perf_counter() - t0) / steps)
    return best


_KERNEL = """
func.func private @k(%a: memref<{r}x256xf32>, %b: memref<{r}x256xf32>) attributes {{frame.parallel_dims = array<i64: {r}, 256>}} {{
  %c0 = arith.constant 0 : index
  %r = arith.constant {r} : index
  %c = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %r step %c1 {{
    scf.for %j = %c0 to %c step %c1 {{
      %x = memref.load %a[%i, %j] : memref<{r}x256xf32>
      %y = arith.mulf %x, %two : f32
      %z = arith.addf %y, %one : f32
      memref.store %z, %b[%i, %j] : memref<{r}x256xf32>
    }}
  }}
  func.return
}}
func.func @run(%a: memref<{r}x256xf32>, %b: memref<{r}x256xf32>) {{
  func.call @k(%a, %b) : (memref<{r}x256xf32>, memref<{r}x256xf32>) -> ()
  func.return
}}
"""


def kernel_seconds(rows: int, threads: int, runs: int = 30, reps: int = 200) -> float:
    from xdsl.parser import Parser

    from frame_mlir.backend.llvm.jit import jit_compile
    from frame_mlir.backend.llvm.translate import to_llvm_text
    from frame_mlir.passes.frame_parallelize import FrameParallelize
    from frame_mlir.passes.lower_to_llvm import lower_loops_to_llvm
    from frame_mlir.passes.pipeline import make_context

    ctx = make_context()
    module = Parser(ctx, _KERNEL.format(r=rows)).parse_module()
    FrameParallelize(threads=threads, min_work=0).apply(ctx, module)
    lower_loops_to_llvm(ctx, module)
    run = jit_compile(to_llvm_text(module)).get_function("run")
    a = np.random.default_rng(0).random((rows, 256), dtype=np.float32)
    b = np.zeros_like(a)
    pa, pb = ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(b.ctypes.data)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(reps):
            run(pa, pb)
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", default=str(ROOT / "testdata" / "mnist_mlp.json"))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--sweep", action="store_true", help="the elementwise size sweep")
    args = p.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    if args.sweep:
        for rows in (16, 32, 64, 128, 256, 512, 1024):
            times = {t: kernel_seconds(rows, t) for t in counts}
            cells = "  ".join(f"t{t}={s * 1e6:8.2f} us" for t, s in times.items())
            print(f"N={rows * 256:8d}  {cells}  speedup={times[counts[0]] / times[counts[-1]]:.2f}",
                  flush=True)
        return
    for t in counts:
        print(f"{Path(args.spec).stem} threads={t}: step "
              f"{step_seconds(args.spec, t, args.runs, args.steps) * 1e6:.1f} us", flush=True)


if __name__ == "__main__":
    main()
