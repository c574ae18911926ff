"""frame-gemm's parallel split: how many threads a GEMM runs on, which dim its tasks
split (the batch, column panels, or row panels when C has one column panel), and the
same bits for every thread count.

Oracles: the plain loops (`CompileOptions(gemm=False)`) and the same program on one
thread, bit for bit; torch (float64) for the values. The work threshold is lifted
(`min_task_macs=0`) where a test needs small shapes split.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from xdsl.dialects import builtin
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.passes import pipeline
from frame_mlir.passes.frame_gemm import MIN_TASK_MACS, choose_blocking
from frame_mlir.passes.pipeline import make_context
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")

POOL = "frame_rt_parallel_for"
SMALL = {"l1_bytes": 512, "l2_bytes": 32768, "l3_bytes": 32768}  # several KC / MC / NC blocks on small shapes


@pytest.fixture
def no_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every GEMM with more than one task is split, whatever its size."""
    make = pipeline.gemm_pass
    monkeypatch.setattr(pipeline, "gemm_pass", lambda options: dataclasses.replace(
        make(options), min_task_macs=0))


def _compile(module: builtin.ModuleOp, lr: float | None = None,
             **options: object) -> tuple[Executable, str]:
    """The executable and its IR after frame-gemm."""
    seen: list[str] = []

    def hook(p: ModulePass, mod: builtin.ModuleOp) -> None:
        if p.name == "frame-gemm":
            seen.append(str(mod))
    ex = compile_module(module, lr=lr, options=CompileOptions(**options),  # type: ignore[arg-type]
                        after_pass=hook, cache=None)
    return ex, seen[0]


def _matmul(m: int, k: int, n: int) -> builtin.ModuleOp:
    """`mm_y = a @ b` for a (m, k) and b (k, n)."""
    fwd = Graph("mm_y")
    y = fwd.emit(frame.MatmulOp(fwd.add_input((m, k), "a"), fwd.add_input((k, n), "b")))
    return builtin.ModuleOp([fwd.finish([y])])


def _split(ir: str) -> bool:
    """Whether some loop of the IR is marked for frame-parallelize."""
    return re.search(r"\{frame\.parallel[,}]", ir) is not None


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


# --------------------------------------------------------------------------------------
# how many threads


@pytest.mark.parametrize("threads", [2, 4])
def test_a_gemm_too_small_to_gain_runs_on_one_thread(threads: int) -> None:
    """Below `MIN_TASK_MACS` multiply-adds per thread there are no tasks and no pool;
    above it the pool is called."""
    small = 32  # 32^3 = 32K multiply-adds
    assert small ** 3 < 2 * MIN_TASK_MACS
    ex, ir = _compile(_matmul(small, small, small), threads=threads, gemm_min_flops=0)
    assert not _split(ir) and POOL not in ex.jit.externals
    big = 256
    assert big ** 3 >= threads * MIN_TASK_MACS
    ex, ir = _compile(_matmul(big, big, big), threads=threads)
    assert _split(ir) and POOL in ex.jit.externals
    assert "frame.parallel_threads" not in ir  # enough work for every thread


def test_a_gemm_that_pays_for_fewer_threads_says_so() -> None:
    """A GEMM with work for 2 of 8 threads: its task loop is capped at 2 threads."""
    m = k = n = 64
    per = m * k * n // 2  # exactly 2 threads' worth
    make = pipeline.gemm_pass
    try:
        pipeline.gemm_pass = lambda options: dataclasses.replace(make(options),
                                                                 min_task_macs=per)
        ex, ir = _compile(_matmul(m, k, n), threads=8, gemm_min_flops=0, f32_lanes=4)
    finally:
        pipeline.gemm_pass = make
    assert "frame.parallel_threads = 2" in ir
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((64, 64), dtype=np.float32) for _ in range(2))
    (y,) = ex("mm_y", a, b)
    np.testing.assert_allclose(y, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


# --------------------------------------------------------------------------------------
# which dim: row panels when C has one column panel


@pytest.mark.parametrize("m,k,n", [(64, 37, 10), (13, 50, 7), (100, 20, 16), (7, 9, 5),
                                   (200, 3, 1), (61, 130, 8)])
@pytest.mark.parametrize("threads", [2, 5])
def test_row_split_is_bit_identical_to_the_plain_loops(m: int, k: int, n: int, threads: int,
                                                       no_threshold: None) -> None:
    """C with one column panel (a layer of few outputs) is split over ranges of whole
    row panels: every element of C sums the same k blocks in the same order as the
    plain loops, whichever task computes it."""
    rng = np.random.default_rng(m * 31 + k * 7 + n + threads)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    tiled, ir = _compile(_matmul(m, k, n), **SMALL, f32_lanes=8, gemm_min_flops=0,
                         threads=threads)
    plain, _ = _compile(_matmul(m, k, n), gemm=False)
    assert "vector.fma" in ir
    gemm = pipeline.gemm_pass(CompileOptions(f32_lanes=8, **SMALL))
    blk = choose_blocking(m, n, k, lanes=8, acc=gemm.acc, l1=gemm.l1, l2=gemm.l2,
                          l3=gemm.l3)
    assert blk.nr >= n  # one column panel
    # one row panel: nothing to split; two or more full ones: rows beat the single column
    # panel. Between (13 rows of panels 12 + 1 on Zen 2), `_task_split`'s estimate of the
    # packing decides.
    if m <= blk.mr or m >= 2 * blk.mr:
        assert _split(ir) == (m > blk.mr), blk
    (y,) = tiled("mm_y", a, b)
    (want,) = plain("mm_y", a, b)
    np.testing.assert_array_equal(_bits(y), _bits(want))
    ref = torch.from_numpy(a).double() @ torch.from_numpy(b).double()
    np.testing.assert_allclose(y, ref.numpy(), rtol=1e-5, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("batch", [(3, 2), (1, 5), (2, 1)])
@pytest.mark.parametrize("threads", [2, 3])
def test_batched_split_is_bit_identical_to_the_plain_loops(batch: tuple[int, ...],
                                                           threads: int,
                                                           no_threshold: None) -> None:
    """A batched matmul (attention's heads) splits over its first batch dim when that
    is the shortest longest task, else over columns or rows: the same bits as the
    plain loops whichever it takes (a first batch dim of 1, 2 or 3 for 2 or 3
    threads)."""
    m, k, n = 21, 37, 29
    shape_a, shape_b = (*batch, m, k), (*batch, k, n)
    g = Graph("bmm")
    y = g.emit(frame.MatmulOp(g.add_input(shape_a, "a"), g.add_input(shape_b, "b")))
    module = builtin.ModuleOp([g.finish([y])])
    g = Graph("bmm")
    y = g.emit(frame.MatmulOp(g.add_input(shape_a, "a"), g.add_input(shape_b, "b")))
    plain_module = builtin.ModuleOp([g.finish([y])])
    rng = np.random.default_rng(threads + sum(batch))
    a = rng.standard_normal(shape_a, dtype=np.float32)
    b = rng.standard_normal(shape_b, dtype=np.float32)
    tiled, ir = _compile(module, **SMALL, f32_lanes=8, gemm_min_flops=0, threads=threads)
    plain, _ = _compile(plain_module, gemm=False)
    assert _split(ir)
    (got,) = tiled("bmm", a, b)
    (want,) = plain("bmm", a, b)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    ref = torch.from_numpy(a).double() @ torch.from_numpy(b).double()
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-5 * np.sqrt(k))


# --------------------------------------------------------------------------------------
# a model: every split, epilogues included, the same bits at every thread count

LR = 0.125

MLP = """
func.func @net(%x: tensor<53x37xf32>, %w1: tensor<37x71xf32> {frame.param = "w1"},
               %b1: tensor<71xf32> {frame.param = "b1"},
               %w2: tensor<71x29xf32> {frame.param = "w2"},
               %b2: tensor<29xf32> {frame.param = "b2"},
               %w3: tensor<29x5xf32> {frame.param = "w3"}, %t: tensor<53x5xf32>) -> tensor<f32> {
  %0 = frame.matmul %x, %w1 : (tensor<53x37xf32>, tensor<37x71xf32>) -> tensor<53x71xf32>
  %1 = frame.broadcast %b1 {axes = array<i64: 0>} : (tensor<71xf32>) -> tensor<53x71xf32>
  %2 = frame.add %0, %1 : (tensor<53x71xf32>, tensor<53x71xf32>) -> tensor<53x71xf32>
  %3 = frame.relu %2 : (tensor<53x71xf32>) -> tensor<53x71xf32>
  %4 = frame.matmul %3, %w2 : (tensor<53x71xf32>, tensor<71x29xf32>) -> tensor<53x29xf32>
  %5 = frame.broadcast %b2 {axes = array<i64: 0>} : (tensor<29xf32>) -> tensor<53x29xf32>
  %6 = frame.add %4, %5 : (tensor<53x29xf32>, tensor<53x29xf32>) -> tensor<53x29xf32>
  %7 = frame.sigmoid %6 : (tensor<53x29xf32>) -> tensor<53x29xf32>
  %8 = frame.matmul %7, %w3 : (tensor<53x29xf32>, tensor<29x5xf32>) -> tensor<53x5xf32>
  %9 = frame.mse_loss %8, %t : (tensor<53x5xf32>, tensor<53x5xf32>) -> tensor<f32>
  func.return %9 : tensor<f32>
}
"""


def _train(ex: Executable, data: list[np.ndarray], steps: int) -> list[np.ndarray]:
    x, params, t = data[0], data[1:-1], data[-1]
    out = []
    for _ in range(steps):
        loss, *params = ex("net_train_step", x, *params, t)
        out.append(loss)
    return [*out, *params]


@pytest.mark.parametrize("options", [
    {**SMALL, "f32_lanes": 8},  # epilogues per register tile, several blocks per task
    {"l1_bytes": 512, "l2_bytes": 4096, "l3_bytes": 4096, "f32_lanes": 4},  # epilogues per cache block
    {},  # the host's blocking
])
def test_mlp_is_bit_identical_for_every_thread_count(options: dict[str, int],
                                                     no_threshold: None) -> None:
    """Three train steps of an MLP whose products split over columns (71 and 29
    outputs) and rows (5 outputs, and the weight gradients of few columns), with bias,
    activation and SGD epilogues: losses and parameters have the same bits on 1, 2, 3
    and 5 threads."""
    rng = np.random.default_rng(20261205)
    data = [rng.standard_normal((53, 37)).astype(np.float32),
            *((rng.standard_normal(s) * 0.3).astype(np.float32)
              for s in ((37, 71), (71,), (71, 29), (29,), (29, 5))),
            rng.random((53, 5)).astype(np.float32)]
    runs = {}
    for threads in (1, 2, 3, 5):
        module = Parser(make_context(), MLP).parse_module()
        ex, ir = _compile(module, LR, threads=threads, gemm_min_flops=0, **options)
        assert _split(ir) == (threads > 1)
        runs[threads] = _train(ex, data, 3)
    assert float(runs[1][2]) < float(runs[1][0])  # it trained
    for threads in (2, 3, 5):
        for got, want in zip(runs[threads], runs[1], strict=True):
            np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{threads}")
