"""Kernels on N threads: the same bits for every thread count, and really on N threads.

The oracle of every numeric check here is the same program on one thread (where no
task and no pool exist at all): splitting a loop over threads must not change one bit
of any loss, parameter, gradient or prediction. Each check also asserts that the
compiled code does call the thread pool, so it cannot pass by compiling nothing
parallel. That the pool really runs chunks on several threads is checked with
Python tasks that wait for each other (deterministic: timing is no oracle).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import frame
from frame_mlir.backend.llvm.jit import jit_compile
from frame_mlir.backend.llvm.parallel_runtime import MAX_CHUNKS, TaskFn, ensure_runtime
from frame_mlir.backend.llvm.translate import to_llvm_text
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session, train
from frame_mlir.passes.frame_parallelize import FrameParallelize
from frame_mlir.passes.lower_to_llvm import lower_loops_to_llvm
from frame_mlir.passes.pipeline import CompileOptions, make_context

ROOT = Path(__file__).resolve().parents[2]
MNIST = ROOT / "testdata" / "mnist_mlp.json"
TINY = ROOT / "testdata" / "tiny_mlp.json"
THREADS = (2, 3, 5)  # 5: more threads than this machine's cores
RUNTIME_SYMBOL = "frame_rt_parallel_for"


# --------------------------------------------------------------------------------------
# the runtime itself


def test_pool_runs_chunks_on_more_than_one_thread() -> None:
    """Two chunks that each wait for the other can only finish on two threads at once.
    Which two is not fixed: with only this dispatch's worker started, the dispatching
    thread and that worker; after other tests started more workers, two spinning
    workers may claim both chunks before the caller does."""
    rt = ensure_runtime()
    barrier = threading.Barrier(2, timeout=30)
    ran: list[tuple[int, int, int]] = []
    failures: list[BaseException] = []

    def task(_ctx: int | None, lo: int, hi: int) -> None:
        ran.append((threading.get_ident(), lo, hi))
        try:
            barrier.wait()
        except threading.BrokenBarrierError as e:  # a lone thread ran both chunks
            failures.append(e)

    rt.take_thread_mask()
    callback = TaskFn(task)
    rt.parallel_for(callback, None, 0, 10, 2)
    assert not failures
    assert sorted((lo, hi) for _, lo, hi in ran) == [(0, 5), (5, 10)]
    assert len({tid for tid, _, _ in ran}) == 2
    assert rt.worker_count() >= 1
    mask = rt.take_thread_mask()
    assert bin(mask).count("1") == 2, f"thread mask {mask:#b}: two threads ran chunks"
    assert mask & ~1, f"thread mask {mask:#b}: a worker ran a chunk"


@pytest.mark.parametrize(("lo", "hi", "threads"), [
    (0, 10, 3), (3, 20, 5), (0, 7, 7), (0, 3, 8), (5, 6, 4), (0, 1000, 300), (4, 4, 2),
    (0, 9, 1)])
def test_chunks_are_contiguous_in_order_and_cover_the_range_once(lo: int, hi: int,
                                                                 threads: int) -> None:
    rt = ensure_runtime()
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def task(_ctx: int | None, a: int, b: int) -> None:
        with lock:
            seen.append((a, b))

    callback = TaskFn(task)
    rt.parallel_for(callback, None, lo, hi, threads)
    n = hi - lo
    chunks = min(threads, n, MAX_CHUNKS)
    want = [(lo + n * c // chunks, lo + n * (c + 1) // chunks) for c in range(chunks)] \
        if n > 0 else []
    assert sorted(seen) == want


def test_two_python_threads_share_the_pool() -> None:
    """Dispatches from two threads at once take turns; every chunk runs exactly once."""
    rt = ensure_runtime()
    counts = np.zeros((2, 64), dtype=np.int64)
    lock = threading.Lock()

    def make(row: int) -> TaskFn:
        def task(_ctx: int | None, a: int, b: int) -> None:
            with lock:
                counts[row, a:b] += 1
        return TaskFn(task)

    callbacks = [make(0), make(1)]

    def run(row: int) -> None:
        for _ in range(50):
            rt.parallel_for(callbacks[row], None, 0, 64, 3)

    workers = [threading.Thread(target=run, args=(r,)) for r in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not any(w.is_alive() for w in workers)
    assert (counts == 50).all()


def _two_threads_meet(timeout: float) -> bool:
    """Whether the pool runs two chunks at once (each waits for the other)."""
    rt = ensure_runtime()
    barrier = threading.Barrier(2, timeout=timeout)
    failures: list[BaseException] = []

    def task(_ctx: int | None, lo: int, hi: int) -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError as e:
            failures.append(e)

    callback = TaskFn(task)
    rt.parallel_for(callback, None, 0, 2, 2)
    return not failures


def _child_meets() -> None:
    sys.exit(0 if _two_threads_meet(30) else 3)


def test_pool_works_in_a_forked_child() -> None:
    """A forked child has none of the parent's workers: it starts its own."""
    import multiprocessing

    assert _two_threads_meet(30)  # the parent's pool is up
    child = multiprocessing.get_context("fork").Process(target=_child_meets)
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0


_SLEEP_AND_WAKE = """
import threading, time
from frame_mlir.backend.llvm.parallel_runtime import TaskFn, ensure_runtime

rt = ensure_runtime()
main = threading.get_ident()
barrier = threading.Barrier(2, timeout=20)
ran = [0, 0]

def task(_ctx, lo, hi):
    barrier.wait()  # both chunks at once: a worker was woken (or was spinning)
    if threading.get_ident() != main:
        time.sleep(0.004)  # past the caller's spin: it sleeps until this chunk ends
    ran[lo] += 1

callback = TaskFn(task)
for r in range(24):
    if r % 2:
        time.sleep(0.01)  # past the workers' spin: they are asleep at the dispatch
    rt.parallel_for(callback, None, 0, 2, 2)
assert ran == [24, 24], ran
print("ok")
"""


def test_pool_wakes_sleeping_workers_and_a_sleeping_caller() -> None:
    """Dispatches after idle gaps (every worker asleep: the dispatcher must wake one)
    and chunks that outlast the caller's spin (the caller asleep: the last worker must
    wake it). Each chunk waits for the other, so a lost worker wake-up fails the
    barrier; a lost caller wake-up hangs the child, which the timeout catches."""
    done = subprocess.run([sys.executable, "-c", _SLEEP_AND_WAKE], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


# --------------------------------------------------------------------------------------
# frame-parallelize: every iteration exactly once, whatever the split


KERNEL = """
func.func private @k(%a: memref<3x5x7xf32>, %b: memref<3x5x7xf32>) attributes {frame.parallel_dims = array<i64: 3, 5, 7>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c5 step %c1 {
      scf.for %k = %c0 to %c7 step %c1 {
        %x = memref.load %a[%i, %j, %k] : memref<3x5x7xf32>
        %y = memref.load %b[%i, %j, %k] : memref<3x5x7xf32>
        %z = arith.addf %x, %y : f32
        memref.store %z, %b[%i, %j, %k] : memref<3x5x7xf32>
      }
    }
  }
  func.return
}
func.func @run(%a: memref<3x5x7xf32>, %b: memref<3x5x7xf32>) {
  func.call @k(%a, %b) : (memref<3x5x7xf32>, memref<3x5x7xf32>) -> ()
  func.return
}
"""


@pytest.mark.parametrize("threads", [2, 3, 4, 6, 7, 40, 105, 300])
def test_split_kernel_runs_every_iteration_once(threads: int) -> None:
    """b += a on a 3x5x7 nest, split over 2..300 threads (1, 2 or 3 loops collapsed):
    an iteration run twice adds a twice, one skipped not at all."""
    from xdsl.parser import Parser

    ctx = make_context()
    module = Parser(ctx, KERNEL).parse_module()
    FrameParallelize(threads=threads, min_work=0).apply(ctx, module)
    assert "frame_rt.parallel_for" in str(module)
    lower_loops_to_llvm(ctx, module)
    run = jit_compile(to_llvm_text(module)).get_function("run")
    a = np.arange(1, 106, dtype=np.float32).reshape(3, 5, 7)
    b = np.zeros_like(a)
    for _ in range(3):
        run(a.ctypes.data, b.ctypes.data)
    np.testing.assert_array_equal(b, 3 * a)


# --------------------------------------------------------------------------------------
# models: bit-identical for every thread count


def _calls_pool(compiled: CompiledSpec) -> bool:
    return RUNTIME_SYMBOL in compiled.executable.jit.externals


def test_mnist_mlp_is_bit_identical_for_every_thread_count() -> None:
    spec = load_spec(str(MNIST))
    runs = {}
    for threads in (1, *THREADS):
        compiled = CompiledSpec(spec, options=CompileOptions(threads=threads), cache=None)
        assert _calls_pool(compiled) == (threads > 1)
        runs[threads] = train(spec, compiled=compiled)
    ref = runs[1]
    for threads in THREADS:
        got = runs[threads]
        assert got.losses.tobytes() == ref.losses.tobytes(), f"threads={threads}"
        assert got.predictions.tobytes() == ref.predictions.tobytes(), f"threads={threads}"
        for name, value in ref.params.items():
            assert got.params[name].tobytes() == value.tobytes(), (threads, name)


def test_generated_code_runs_on_several_threads() -> None:
    """mnist_mlp's step on 2 threads: over many steps, workers take chunks too."""
    spec = load_spec(str(MNIST))
    session = Session(CompiledSpec(spec, options=CompileOptions(threads=2), cache=None))
    rt = ensure_runtime()
    rt.take_thread_mask()
    mask = 0
    for _ in range(200):
        session.step()
        mask |= rt.take_thread_mask()
        if mask & ~1:
            break
    assert mask & ~1, "no chunk of the step ran on a pool worker in 200 steps"


def test_each_kernel_picks_its_thread_count_from_its_work() -> None:
    """A nest below the threshold runs on one thread; above it, on as many as get half
    the threshold each, never more than there are; unknown work (a dynamic bound), or
    no threshold, on all."""
    from frame_mlir.passes.frame_parallelize import MIN_PARALLEL_WORK as W
    from frame_mlir.passes.frame_parallelize import threads_for

    assert threads_for(W - 1, 8, W) == 1
    assert threads_for(W, 8, W) == 2
    assert threads_for(3 * W // 2, 8, W) == 3
    assert threads_for(100 * W, 8, W) == 8
    assert threads_for(100 * W, 1, W) == 1
    assert threads_for(None, 8, W) == 8
    assert threads_for(5, 8, 0) == 8


def test_tiny_mlp_stays_sequential() -> None:
    """tiny_mlp's kernels are far below the work a wake-up costs: no pool at all."""
    compiled = CompiledSpec(load_spec(str(TINY)), options=CompileOptions(threads=4),
                            cache=None)
    assert not _calls_pool(compiled)


def test_two_python_threads_train_at_once() -> None:
    """Two compiled modules stepping concurrently from two Python threads (one pool)
    give the same parameters as one after the other."""
    spec = load_spec(str(MNIST))
    compiled = [CompiledSpec(spec, options=CompileOptions(threads=t), cache=None)
                for t in (2, 3)]
    sessions = [Session(c) for c in compiled]

    def run(s: Session) -> None:
        for _ in range(30):
            s.step()

    workers = [threading.Thread(target=run, args=(s,)) for s in sessions]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    ref = Session(compiled[0])
    for _ in range(30):
        ref.step()
    for s in sessions:
        for name, value in ref.params().items():
            assert s.params()[name].tobytes() == value.tobytes(), name


def _conv_pool_backward() -> tuple[frame.Graph, list[np.ndarray]]:
    """conv (3 -> 8 channels, 3x3, padding 1) + relu + 2x2 max-pool + sum of squares,
    with gradients w.r.t. the input, the weight and the bias; 8 images of 32 x 32, so
    that the kernels have the work to be split (kernels pick their thread count from
    their work, and a small one runs on one thread)."""
    f32 = frame.DType.float32
    conv = frame.nn.Conv2d("conv", 3, 8, [3, 3], [1, 1], [1, 1], 1, True, f32)
    pool = frame.nn.MaxPool2d("pool", [2, 2], [2, 2], [0, 0])
    g = frame.Graph("convpool")
    x = g.add_graph_input([8, 3, 32, 32], f32)
    ps = frame.nn.add_parameter_inputs(g, conv)
    (y,) = conv.build(g, [x], ps)
    (z,) = pool.build(g, [frame.relu(g, y)], [])
    g.mark_output(frame.sum(g, frame.square(g, z), []))
    back = frame.build_backward_graph(g, 0, [0, 1, 2])
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal([8, 3, 32, 32]).astype(np.float32)] + [
        rng.standard_normal(shape).astype(np.float32) for _, shape, _ in conv.parameters()]
    return back, arrays


def test_conv_and_max_pool_are_bit_identical_for_every_thread_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the Python API, whose thread count is the default: FRAME_NUM_THREADS."""
    back, arrays = _conv_pool_backward()
    outputs = {}
    for threads in (1, *THREADS):
        monkeypatch.setenv("FRAME_NUM_THREADS", str(threads))
        ex = frame.compile(back, "cpu")
        assert (RUNTIME_SYMBOL in ex._runtime.jit.externals) == (threads > 1)
        outputs[threads] = [t.numpy() for t in ex.run([frame.from_numpy(a) for a in arrays])]
    for threads in THREADS:
        for i, (got, want) in enumerate(zip(outputs[threads], outputs[1], strict=True)):
            assert got.tobytes() == want.tobytes(), f"threads={threads}, output {i}"


# --------------------------------------------------------------------------------------
# the emitted C++ program: std::thread pool, same bytes as the JIT


CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(shutil.which("cmake") is None or CXX is None,
                    reason="cmake and a C++ compiler are needed")
def test_emitted_program_on_three_threads_prints_what_the_jit_prints(
        tmp_path: Path) -> None:
    out = tmp_path / "mnist"
    emit = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_dslc", "--emit",
                           str(MNIST), "--out", str(out), "--threads", "3"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert emit.returncode == 0, emit.stderr
    source = (out / "main.cpp").read_text()
    assert "frame_parallel_for::run(3, " in source
    assert "Threads::Threads" in (out / "CMakeLists.txt").read_text()
    for args in (["-S", str(out), "-B", str(out / "build"), "-DCMAKE_BUILD_TYPE=Release",
                  "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror"],
                 ["--build", str(out / "build")]):
        proc = subprocess.run(["cmake", *args], capture_output=True, text=True,
                              timeout=900, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    program = subprocess.run([str(out / "build" / "mnist_mlp")], capture_output=True,
                             text=True, timeout=300, check=False)
    assert program.returncode == 0, program.stderr
    jit = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_run", str(MNIST),
                          "--print-predictions", "--threads", "1", "--no-cache"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert jit.returncode == 0, jit.stderr
    assert program.stdout == jit.stdout


# --------------------------------------------------------------------------------------
# the command line


def _tool(tool: str, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"frame_mlir.tools.{tool}", *args],
                          capture_output=True, text=True, timeout=300, env=env, check=False)


@pytest.mark.parametrize("value", ["0", "x", "-2", "1.5", ""])
@pytest.mark.parametrize("tool,args", [
    ("frame_run", [str(TINY)]),
    ("frame_dslc", ["--run", str(TINY)]),
    ("frame_dslc", ["--emit", str(TINY), "--out", "unused"]),
])
def test_bad_thread_counts_are_usage_errors(tool: str, args: list[str], value: str) -> None:
    proc = _tool(tool, *args, "--threads", value)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(
        f"error: argument --threads: expected a positive integer, found {value!r}")


def test_threads_with_check_is_a_usage_error() -> None:
    proc = _tool("frame_dslc", "--check", str(TINY), "--threads", "2")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == \
        "frame-dslc: error: --threads applies to --run and --emit only"


def test_bad_frame_num_threads_is_a_clear_error() -> None:
    import os

    env = dict(os.environ, FRAME_NUM_THREADS="many")
    proc = _tool("frame_run", str(TINY), "--no-cache", env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == \
        "frame-run: error: FRAME_NUM_THREADS: expected a positive integer, found 'many'"


def test_threads_flag_reaches_the_pipeline() -> None:
    """`--threads 2` splits mnist_mlp's large kernels; `--threads 1` splits none."""
    two = _tool("frame_run", str(MNIST), "--emit-stage=loops", "--threads", "2")
    one = _tool("frame_run", str(MNIST), "--emit-stage=loops", "--threads", "1")
    assert two.returncode == 0 and one.returncode == 0
    assert "frame_rt.parallel_for" in two.stdout and "threads 2" in two.stdout
    assert "frame_rt.parallel_for" not in one.stdout


def test_runtime_engine_outlives_interpreter_shutdown() -> None:
    """Workers still spinning when the interpreter exits must not crash it."""
    code = ("from frame_mlir.backend.llvm.parallel_runtime import ensure_runtime, TaskFn\n"
            "rt = ensure_runtime()\n"
            "cb = TaskFn(lambda c, a, b: None)\n"
            "rt.parallel_for(cb, None, 0, 8, 4)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr

