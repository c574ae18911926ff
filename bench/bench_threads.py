"""Kernels on N threads: step time by thread count, and where splitting starts to pay.

    .venv/bin/python bench/bench_threads.py                 # mnist_mlp, threads 1 and 2
    .venv/bin/python bench/bench_threads.py --threads 1,2,4 --spec testdata/mnist_mlp.json
    .venv/bin/python bench/bench_threads.py --sweep         # elementwise kernel of N f32
    .venv/bin/python bench/bench_threads.py --workloads W2,W3,W4   # A/B, interleaved
    .venv/bin/python bench/bench_threads.py --sweep-gemm    # GEMM kernels by size
    .venv/bin/python bench/bench_threads.py --wake          # the pool's wake-up cost

`Session.step` time is the best of `--runs` runs of `--steps` steps (the machine's
other load only ever makes a run slower). `--sweep` times one elementwise kernel
(`b = a * 2 + 1` on rows x 256 f32) split over 1 and 2 threads with no work threshold:
the sizes where 2 threads win are where `MIN_PARALLEL_WORK` (frame_parallelize.py)
belongs. Results depend on the machine being otherwise idle.

`--sweep-gemm` does the same for one GEMM kernel (`y = a @ b`, m x k times k x n, through
the pipeline's frame-gemm with no work threshold): the sizes where 2 threads win are
where `MIN_TASK_MACS` (frame_gemm.py) belongs.

`--wake` measures the pool itself: a task that records the time (the cycle counter)
at which each chunk starts and then waits for the others to start (so every chunk runs
on its own thread: the caller cannot run them all), dispatched over `--threads`' last count after a
gap of busy work on the calling thread. The wake-up is the time from the call of
`frame_rt_parallel_for` to the last chunk's start (all threads running), the dispatch
the time until the call returns; both by gap (0: back to back, the workers spinning;
past the pool's spin, the workers asleep), median and 90th percentile of many calls.

`--workloads` compiles issue 9's workloads (`bench_workloads.py`) once per thread
count and then times them in interleaved rounds (W2 1t, W2 2t, W3 1t, ... then again),
each round a short batch of whole training steps: on a shared machine the other load
moves between rounds, so the best round of each variant is the comparable figure (the
median is printed beside it to show the spread). A round during which other processes
used more than 3 % of the machine's CPU time is dropped and run again (Linux).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from frame_mlir.compile_options import CompileOptions  # noqa: E402
from frame_mlir.frontends.spec.spec_v0 import load_spec  # noqa: E402
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session  # noqa: E402


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
func.func private @back(%b: memref<{r}x256xf32>, %a: memref<{r}x256xf32>) {{
  %c0 = arith.constant 0 : index
  %r = arith.constant {r} : index
  %c = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  scf.for %i = %c0 to %r step %c1 {{
    scf.for %j = %c0 to %c step %c1 {{
      %x = memref.load %b[%i, %j] : memref<{r}x256xf32>
      %y = arith.mulf %x, %half : f32
      %z = arith.subf %y, %half : f32
      memref.store %z, %a[%i, %j] : memref<{r}x256xf32>
    }}
  }}
  func.return
}}
func.func @run(%a: memref<{r}x256xf32>, %b: memref<{r}x256xf32>) {{
  func.call @k(%a, %b) : (memref<{r}x256xf32>, memref<{r}x256xf32>) -> ()
  func.return
}}
func.func @island(%a: memref<{r}x256xf32>, %b: memref<{r}x256xf32>) {{
  func.call @k(%a, %b) : (memref<{r}x256xf32>, memref<{r}x256xf32>) -> ()
  func.call @back(%b, %a) : (memref<{r}x256xf32>, memref<{r}x256xf32>) -> ()
  func.return
}}
"""


def interleaved_best(calls: dict, samples: int = 200, batch_s: float = 2e-4) -> dict:
    """Best seconds per call of each callable in `calls`, timed in short batches (about
    `batch_s` each) taken in turn, `samples` of each: on a machine shared with other
    work a short batch often runs undisturbed, where a long run rarely does."""
    reps = {}
    for key, call in calls.items():
        call()
        t0 = time.perf_counter()
        call()
        reps[key] = max(1, int(batch_s / max(time.perf_counter() - t0, 1e-8)))
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(samples):
        for key, call in calls.items():
            t0 = time.perf_counter()
            for _ in range(reps[key]):
                call()
            best[key] = min(best[key], (time.perf_counter() - t0) / reps[key])
    return best


def kernel_call(rows: int, threads: int, island: bool = False) -> object:
    """A call of the elementwise kernel on `threads` threads (`island`: the kernel and
    then a sequential kernel that writes its input from its output, so that the split
    kernel reads what the calling thread wrote and the calling thread reads what the
    workers wrote, as a split kernel between sequential ones does in a step)."""
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
    run = jit_compile(to_llvm_text(module)).get_function(
        "island" if island else "run", [ctypes.c_void_p, ctypes.c_void_p])
    a = np.random.default_rng(0).random((rows, 256), dtype=np.float32)
    b = np.zeros_like(a)
    pa, pb = ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(b.ctypes.data)
    return lambda keep=(a, b): run(pa, pb)  # keep: the buffers live with the call


GEMM_SHAPES = [  # (m, k, n): square ones by size, then 64 rows (a batch) by k and n
    (16, 16, 16), (24, 24, 24), (32, 32, 32), (40, 40, 40), (48, 48, 48), (64, 64, 64),
    (96, 96, 96), (128, 128, 128), (192, 192, 192),
    (64, 10, 256), (64, 16, 256), (64, 32, 256), (64, 64, 256), (64, 256, 10),
    (64, 256, 128), (64, 784, 256), (256, 64, 10), (784, 64, 256)]


def gemm_call(m: int, k: int, n: int, threads: int) -> object:
    """A call of one `y = a @ b` kernel on `threads` threads (no work threshold: the
    GEMM is split whenever it has more than one task)."""
    import dataclasses

    from xdsl.dialects import builtin

    from frame_mlir.dialects import frame
    from frame_mlir.nn.graph import Graph
    from frame_mlir.passes import pipeline
    from frame_mlir.runtime.executable import aligned_empty, compile_module

    g = Graph("mm")
    y = g.emit(frame.MatmulOp(g.add_input((m, k), "a"), g.add_input((k, n), "b")))
    module = builtin.ModuleOp([g.finish([y])])
    make = pipeline.gemm_pass
    if any(f.name == "min_task_macs" for f in dataclasses.fields(make(CompileOptions()))):
        pipeline.gemm_pass = lambda options: dataclasses.replace(make(options),
                                                                 min_task_macs=0)
    try:
        ex = compile_module(module, options=CompileOptions(threads=threads, gemm_min_flops=0),
                            cache=None)
    finally:
        pipeline.gemm_pass = make
    sig = ex.signatures["mm"]
    rng = np.random.default_rng(0)
    keep = [aligned_empty(max(sig.arena_size, 64)) if a.kind == "arena" else
            rng.standard_normal(a.shape).astype(a.dtype) for a in sig.args]
    ptrs = [ctypes.c_void_p(b.ctypes.data) for b in keep]
    fn = ex.function("mm")
    return lambda keep=keep: fn(*ptrs)  # keep: the buffers live with the call


_WAKE_IR = r"""
declare void @frame_rt_parallel_for(ptr, ptr, i64, i64, i64)
declare i64 @llvm.readcyclecounter()

@arrived = internal global i64 0, align 64

; Chunk `lo` records its start, then waits (at most `limit` ticks) until every chunk
; has started: so the calling thread cannot run them all, each runs on its own thread.
define void @stamp(ptr %ctx, i64 %lo, i64 %hi) {
entry:
  %t = call i64 @llvm.readcyclecounter()
  %p = getelementptr i64, ptr %ctx, i64 %lo
  store volatile i64 %t, ptr %p, align 8
  %n = getelementptr i64, ptr %ctx, i64 -1
  %want = load i64, ptr %n, align 8
  %a0 = atomicrmw add ptr @arrived, i64 1 acq_rel, align 8
  br label %wait
wait:
  %a = load atomic i64, ptr @arrived acquire, align 8
  %all = icmp sge i64 %a, %want
  br i1 %all, label %out, label %check
check:
  %now = call i64 @llvm.readcyclecounter()
  %spent = sub i64 %now, %t
  %late = icmp ugt i64 %spent, 130000000
  br i1 %late, label %out, label %wait
out:
  ret void
}

define i64 @now() {
  %t = call i64 @llvm.readcyclecounter()
  ret i64 %t
}

; reps dispatches of `threads` one-iteration chunks, each after `gap` cycles of busy
; waiting; out[r * (threads + 2) + ...] = call time, return time, each chunk's start.
define void @measure(ptr %out, ptr %starts, i64 %reps, i64 %threads, i64 %gap) {
entry:
  br label %rep
rep:
  %r = phi i64 [ 0, %entry ], [ %r1, %record_done ]
  %g0 = call i64 @llvm.readcyclecounter()
  %until = add i64 %g0, %gap
  br label %busy
busy:
  %g = call i64 @llvm.readcyclecounter()
  %more = icmp ult i64 %g, %until
  br i1 %more, label %busy, label %go
go:
  store atomic i64 0, ptr @arrived release, align 8
  %t0 = call i64 @llvm.readcyclecounter()
  call void @frame_rt_parallel_for(ptr @stamp, ptr %starts, i64 0, i64 %threads, i64 %threads)
  %t1 = call i64 @llvm.readcyclecounter()
  %w = add i64 %threads, 2
  %base = mul i64 %r, %w
  %o0 = getelementptr i64, ptr %out, i64 %base
  store i64 %t0, ptr %o0, align 8
  %o1 = getelementptr i64, ptr %o0, i64 1
  store i64 %t1, ptr %o1, align 8
  br label %record
record:
  %c = phi i64 [ 0, %go ], [ %c1, %record ]
  %sp = getelementptr i64, ptr %starts, i64 %c
  %sv = load volatile i64, ptr %sp, align 8
  %oc = getelementptr i64, ptr %o0, i64 %c
  %oc2 = getelementptr i64, ptr %oc, i64 2
  store i64 %sv, ptr %oc2, align 8
  %c1 = add i64 %c, 1
  %cm = icmp ult i64 %c1, %threads
  br i1 %cm, label %record, label %record_done
record_done:
  %r1 = add i64 %r, 1
  %rm = icmp ult i64 %r1, %reps
  br i1 %rm, label %rep, label %exit
exit:
  ret void
}
"""


def wake_figures(threads: int, gaps_us: list[float], reps: int) -> None:
    """Print the pool's wake-up and dispatch time by gap (see the module doc)."""
    from frame_mlir.backend.llvm.jit import jit_compile

    jit = jit_compile(_WAKE_IR)
    now = ctypes.CFUNCTYPE(ctypes.c_int64)(jit.address("now"))
    measure = jit.get_function("measure", [ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_int64, ctypes.c_int64, ctypes.c_int64])
    c0, p0 = now(), time.perf_counter()
    time.sleep(0.2)
    per_us = (now() - c0) / ((time.perf_counter() - p0) * 1e6)  # cycle counter ticks
    out = np.zeros((reps, threads + 2), np.int64)
    ctx = np.zeros(threads + 1, np.int64)  # [chunks, start of chunk 0, 1, ...]
    ctx[0] = threads
    starts = ctx[1:]
    print(f"pool wake-up, {threads} threads ({per_us:.0f} counter ticks per us)")
    for gap in gaps_us:
        for together in (True, False):
            # together: each chunk waits for all to start; else none waits (a job of
            # empty chunks: what a dispatch costs when the caller may run them all)
            ctx[0] = threads if together else 1
            measure(out.ctypes.data, starts.ctypes.data, 5, threads, int(gap * per_us))
            measure(out.ctypes.data, starts.ctypes.data, reps, threads, int(gap * per_us))
            total = (out[:, 1] - out[:, 0]) / per_us
            if not together:
                print(f"  gap {gap:8.1f} us: empty job, dispatch {np.median(total):7.2f} us "
                      f"(p90 {np.percentile(total, 90):7.2f})", flush=True)
                continue
            wake = (out[:, 2:].max(axis=1) - out[:, 0]) / per_us
            first = (out[:, 2:].min(axis=1) - out[:, 0]) / per_us
            print(f"  gap {gap:8.1f} us: first chunk {np.median(first):6.2f} us, all "
                  f"running {np.median(wake):7.2f} us (p90 {np.percentile(wake, 90):7.2f}), "
                  f"dispatch {np.median(total):7.2f} us (p90 {np.percentile(total, 90):7.2f})",
                  flush=True)


def workload_runners(keys: list[str], counts: list[int]) -> dict[tuple[str, int], object]:
    """`run(n)`: n training steps of each workload at each thread count (its whole-loop
    path where it has one, else n calls of the step), compiled once here."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_workloads as bw

    runners: dict[tuple[str, int], object] = {}
    for key in keys:
        problem = bw.make_problem(key)
        for t in counts:
            if problem.spec is None:
                api = bw.ApiTrainStep(problem, t)
                loop = bw.loop_runner(api.executable, "lenet", api.args)
                step = api.step
                keep: object = api
            else:
                compiled = CompiledSpec(problem.spec, options=CompileOptions(threads=t),
                                        cache=None)
                session = Session(compiled)
                loop = session.run if getattr(compiled, "loop_fn", None) is not None \
                    else None
                step = session.step
                keep = session

            def run(n: int, loop: object = loop, step: object = step,
                    keep: object = keep) -> None:
                if loop is not None:
                    loop(n)  # type: ignore[operator]
                else:
                    for _ in range(n):
                        step()  # type: ignore[operator]

            run(3)  # warm up: workers started, caches filled
            runners[(key, t)] = run
    return runners


def _cpu_marks() -> tuple[int, int, float]:
    """(busy ticks of every core, all ticks, this process's CPU seconds) so far."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    t = os.times()
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks), t.user + t.system


def others_share(before: tuple[int, int, float], after: tuple[int, int, float]) -> float:
    """The share of the machine's CPU time other processes used between two marks."""
    hz = os.sysconf("SC_CLK_TCK")
    busy, total = after[0] - before[0], after[1] - before[1]
    mine = (after[2] - before[2]) * hz
    return max(0.0, busy - mine) / max(total, 1)


def ab_workloads(keys: list[str], counts: list[int], rounds: int, budget_s: float,
                 max_others: float = 0.03) -> None:
    """Interleaved rounds of every (workload, threads): best and median ms per step.
    Only rounds during which other processes used at most `max_others` of the machine's
    CPU time count (on Linux; the others are reported): on a shared machine a second
    thread that another process preempts makes a step slower, not ours."""
    runners = workload_runners(keys, counts)
    steps: dict[tuple[str, int], int] = {}
    for k, run in runners.items():
        t0 = time.perf_counter()
        run(2)  # type: ignore[operator]
        steps[k] = max(2, int(budget_s / max((time.perf_counter() - t0) / 2, 1e-7)))
    times: dict[tuple[str, int], list[float]] = {k: [] for k in runners}
    dropped = dict.fromkeys(runners, 0)
    can_filter = os.path.exists("/proc/stat")
    for _ in range(rounds):
        for k, run in runners.items():
            for _attempt in range(60):
                mark = _cpu_marks() if can_filter else None
                t0 = time.perf_counter()
                run(steps[k])  # type: ignore[operator]
                elapsed = (time.perf_counter() - t0) / steps[k]
                if mark is None or others_share(mark, _cpu_marks()) <= max_others:
                    times[k].append(elapsed)
                    break
                dropped[k] += 1
                time.sleep(1.0)  # let the other load pass
    for key in keys:
        have = {t: times[(key, t)] for t in counts}
        if not all(have.values()):
            print(f"{key}: no round without other load", flush=True)
            continue
        best = {t: min(v) for t, v in have.items()}
        cells = "  ".join(
            f"{t}t best {best[t] * 1e3:8.3f} ms (median {statistics.median(have[t]) * 1e3:8.3f},"
            f" {len(have[t])} rounds, {dropped[(key, t)]} dropped)" for t in counts)
        ratio = best[counts[0]] / best[counts[-1]]
        print(f"{key}: {cells}  {counts[-1]}t/{counts[0]}t speed {ratio:.2f}x", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", default=str(ROOT / "testdata" / "mnist_mlp.json"))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--sweep", action="store_true", help="the elementwise size sweep")
    p.add_argument("--workloads", default="",
                   help="issue 9's workloads to compare A/B, e.g. W2,W3,W4")
    p.add_argument("--rounds", type=int, default=15, help="--workloads: timed rounds")
    p.add_argument("--budget", type=float, default=0.15,
                   help="--workloads: seconds per variant per round")
    p.add_argument("--wake", action="store_true", help="the pool's wake-up cost")
    p.add_argument("--sweep-gemm", action="store_true", help="the GEMM size sweep")
    args = p.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    if args.sweep_gemm:
        for m, k, n in GEMM_SHAPES:
            times = interleaved_best({t: gemm_call(m, k, n, t) for t in counts})
            cells = "  ".join(f"t{t}={v * 1e6:8.2f} us" for t, v in times.items())
            print(f"{m:4d}x{k:4d}x{n:4d} ({m * k * n:9d} MACs)  {cells}  "
                  f"speedup={times[counts[0]] / times[counts[-1]]:.2f}", flush=True)
        return
    if args.wake:
        wake_figures(counts[-1], [0.0, 5.0, 50.0, 300.0, 600.0, 1000.0, 1500.0, 3000.0,
                                  20000.0], 200)
        return
    if args.workloads:
        ab_workloads(args.workloads.split(","), counts, args.rounds, args.budget)
        return
    if args.sweep:
        print("alone: the kernel again and again; island: the kernel, then a sequential "
              "kernel over the same data")
        for rows in (16, 32, 64, 96, 128, 192, 256, 512, 1024):
            cells = []
            for island in (False, True):
                times = interleaved_best({t: kernel_call(rows, t, island)
                                          for t in counts})
                cells.append("  ".join(f"t{t}={v * 1e6:8.2f} us" for t, v in times.items()) +
                             f"  speedup={times[counts[0]] / times[counts[-1]]:.2f}")
            print(f"N={rows * 256:8d}  alone: {cells[0]}   island: {cells[1]}", flush=True)
        return
    for t in counts:
        print(f"{Path(args.spec).stem} threads={t}: step "
              f"{step_seconds(args.spec, t, args.runs, args.steps) * 1e6:.1f} us", flush=True)


if __name__ == "__main__":
    main()
