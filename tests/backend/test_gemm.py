"""frame-gemm: packed, blocked GEMM kernels against torch (float64) and bit for bit
against the plain loops, on shapes that reach every edge of the blocking."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from xdsl.dialects import builtin

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")

# Small caches force several KC / NC / MC blocks on small shapes (KC = 64 rows of k,
# NC and MC a few register tiles), so the block edges are reached in a fast test.
# (KC may take twice L1 for the B micro-panel, `choose_blocking`: 512 B gives the KC
# that 2 KiB gave under the earlier half-of-L1 rule.)
SMALL = {"l1_bytes": 512, "l2_bytes": 32768, "l3_bytes": 32768}


def _compile(module: builtin.ModuleOp, **options: object) -> tuple[Executable, str]:
    """The executable and the text of its loops-stage IR after `frame-gemm`."""
    seen: list[str] = []

    def hook(p: object, mod: builtin.ModuleOp) -> None:
        if getattr(p, "name", "") == "frame-gemm":
            seen.append(str(mod))
    ex = compile_module(module, options=CompileOptions(**options), after_pass=hook)  # type: ignore[arg-type]
    return ex, seen[0]


def _matmul_module(m: int, k: int, n: int, ta: bool, tb: bool) -> builtin.ModuleOp:
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    g = Graph("mm")
    a, b = add_parameter_inputs(g, [ParamSpec("a", a_shape, UniformSeeded(0, 1)),
                                    ParamSpec("b", b_shape, UniformSeeded(0, 1))])
    r = g.add_input((m, n), "r")
    prod = g.emit(frame.MatmulOp(a, b, transpose_lhs=ta, transpose_rhs=tb))
    loss = g.emit(frame.SumOp(g.emit(frame.MulOp(prod, r))))
    fwd = Graph("mm_y")
    y = fwd.emit(frame.MatmulOp(fwd.add_input(a_shape, "a"), fwd.add_input(b_shape, "b"),
                                transpose_lhs=ta, transpose_rhs=tb))
    return builtin.ModuleOp([fwd.finish([y]), g.finish([loss])])


SHAPES = [(1, 1, 1), (1, 17, 33), (7, 1, 29), (13, 97, 37), (65, 130, 17), (31, 200, 70),
          (2, 3, 64), (96, 64, 48)]


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_matches_torch_and_plain_loops(m: int, k: int, n: int, ta: bool, tb: bool) -> None:
    """The product and both gradients (which use the other layouts: `dA = dY·Bᵀ`,
    `dB = Aᵀ·dY`) against torch in float64; and the same bits as the plain loops,
    since the GEMM keeps each element's summation order."""
    rng = np.random.default_rng(m * 7919 + k * 31 + n + 5 * ta + 11 * tb)
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    av = rng.standard_normal(a_shape, dtype=np.float32)
    bv = rng.standard_normal(b_shape, dtype=np.float32)
    rv = rng.standard_normal((m, n), dtype=np.float32)
    tiled, tiled_ir = _compile(_matmul_module(m, k, n, ta, tb), **SMALL, f32_lanes=8,
                               gemm_min_flops=0)
    plain, plain_ir = _compile(_matmul_module(m, k, n, ta, tb), gemm=False)
    assert "vector.fma" not in plain_ir and "vector.fma" in tiled_ir

    t_a, t_b = (torch.from_numpy(v).double().requires_grad_() for v in (av, bv))
    ty = (t_a.T if ta else t_a) @ (t_b.T if tb else t_b)
    (ty * torch.from_numpy(rv).double()).sum().backward()

    def close(ours: np.ndarray, ref: np.ndarray) -> None:
        np.testing.assert_allclose(ours, ref, rtol=1e-5,
                                   atol=1e-6 * max(1.0, np.abs(ref).max()) * np.sqrt(k + m))

    (y,) = tiled("mm_y", av, bv)
    close(y, ty.detach().numpy())
    _, ga, gb = tiled("mm_grad", av, bv, rv)
    close(ga, t_a.grad.numpy())
    close(gb, t_b.grad.numpy())
    for got, ref in zip((y, ga, gb), (*plain("mm_y", av, bv), *plain("mm_grad", av, bv, rv)[1:]),
                        strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))


def _lift_fast_pack_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give these small B the vector packing paths (`FrameGemm.fast_pack_min` 0)."""
    from frame_mlir.passes import pipeline

    make = pipeline.gemm_pass
    monkeypatch.setattr(pipeline, "gemm_pass", lambda options: dataclasses.replace(
        make(options), fast_pack_min=0))


def _forward_checked(m: int, k: int, n: int, ta: bool, tb: bool, seed: int) -> str:
    """`mm_y` compiled with SMALL caches and 8 lanes: the same bits as the plain loops
    and torch-close (float64) on random operands; the IR of its forward after
    frame-gemm."""
    rng = np.random.default_rng(seed)
    av = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
    bv = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
    tiled, ir = _compile(_matmul_module(m, k, n, ta, tb), **SMALL, f32_lanes=8,
                         gemm_min_flops=0)
    plain, _ = _compile(_matmul_module(m, k, n, ta, tb), gemm=False)
    (y,) = tiled("mm_y", av, bv)
    ta_, tb_ = torch.from_numpy(av).double(), torch.from_numpy(bv).double()
    ref = (ta_.T if ta else ta_) @ (tb_.T if tb else tb_)
    np.testing.assert_allclose(y, ref.numpy(), rtol=1e-5,
                               atol=1e-6 * max(1.0, float(ref.abs().max())) * np.sqrt(k))
    (want,) = plain("mm_y", av, bv)
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
    return "".join(f for f in ir.split("func.func ") if f.startswith("private @mm_y"))


@pytest.mark.parametrize("m,k,n", [(13, 97, 37), (31, 200, 70), (96, 64, 48), (5, 3, 64),
                                   (13, 50, 45)])
@pytest.mark.parametrize("ta", [False, True])
def test_plain_b_packed_by_runs(m: int, k: int, n: int, ta: bool,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A B whose columns are contiguous (a weight [k, n]) is packed a row of `lanes`
    floats at a time where a panel ends inside B; a last panel past the last column
    (n = 48, 45: 16 and 13 of 32) copies its whole rows of `lanes` floats the same way
    and the rest element by element (these B are below the size from which it does, so
    the threshold is lifted): the same bits as the plain loops, and torch-close."""
    _lift_fast_pack_threshold(monkeypatch)
    forward = _forward_checked(m, k, n, ta, False, m + 3 * k + 7 * n + ta)
    # the forward's B panels: 8-float rows of b (a [k, n] memref collapsed to k * n)
    assert f"memref<{k * n}xf32>, vector<8xf32>" in forward


@pytest.mark.parametrize("m,k,n", [(13, 64, 45), (31, 200, 70), (7, 40, 24), (9, 24, 100)])
def test_b_along_k_transposed_in_partial_panels(m: int, k: int, n: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A B whose k run contiguously (`X · Wᵀ`: W's rows) is packed by in-register
    transposes of 8 x 8 blocks; a last panel past the last column (n not a multiple of
    NR = 32) transposes its whole groups of 8 columns too, and packs the rest (and the k
    past the last group of 8) element by element, zeros past the last column: the same
    bits as the plain loops, and torch-close. (The threshold of the vector paths is
    lifted for these small B.)"""
    _lift_fast_pack_threshold(monkeypatch)
    forward = _forward_checked(m, k, n, False, True, m + 3 * k + 7 * n)
    assert "vector.shuffle" in forward  # the transposes


# MR (8 lanes, 24 accumulators): 6 for 4 vectors per tile (n > 24), 8 for 3, 16 for 1
@pytest.mark.parametrize("m,k,n", [(13, 97, 37), (6, 64, 48), (13, 97, 20), (37, 50, 8)])
def test_a_packed_by_vectors_or_unrolled_rows(m: int, k: int, n: int) -> None:
    """A's MR-row panels: an A whose rows are contiguous (`Aᵀ` of a [k, m] array, as
    a weight gradient's X^T) is packed one vector of MR floats per k when MR is a power
    of two (8, 16: the C++ emitter's vector types need one), else k by k over its MR
    rows (as a row-major A is: those layouts' bits are checked in
    `test_gemm_matches_torch_and_plain_loops`, compiled the same way). Each shape has
    full panels and (but for m = 6) a partial last one: the same bits as the plain
    loops, and torch-close."""
    forward = _forward_checked(m, k, n, True, False, m + 5 * k + 11 * n + 1)
    mr = int(re.findall(r"frame_gemm_micro_\d+x\d+_p(\d+)x", forward)[0])
    vector_rows = f"memref<{k * m}xf32>, vector<{mr}xf32>" in forward
    assert vector_rows == (mr in (2, 4, 8, 16) and m >= mr), mr


@pytest.mark.parametrize("lanes", [4, 8, 16])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_gemm_bits_do_not_depend_on_vector_width_or_tasks(lanes: int, threads: int) -> None:
    """Vector width, block sizes and the split into tasks never change a result bit."""
    m, k, n = 37, 150, 131
    rng = np.random.default_rng(3)
    av = rng.standard_normal((m, k), dtype=np.float32)
    bv = rng.standard_normal((k, n), dtype=np.float32)
    rv = rng.standard_normal((m, n), dtype=np.float32)
    ref, _ = _compile(_matmul_module(m, k, n, False, False), gemm=False)
    ours, ir = _compile(_matmul_module(m, k, n, False, False), **SMALL, f32_lanes=lanes,
                        threads=threads)
    assert f"vector<{lanes}xf32>" in ir
    for got, want in zip(ours("mm_grad", av, bv, rv), ref("mm_grad", av, bv, rv), strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("xs,ws,stride,padding,runs", [
    ((3, 2, 11, 9), (5, 2, 3, 3), (1, 1), (0, 0), ""),
    ((2, 3, 12, 13), (4, 3, 5, 5), (1, 1), (2, 2), ""),
    ((2, 4, 9, 10), (6, 4, 3, 2), (2, 3), (1, 0), ""),
    ((4, 1, 28, 28), (20, 1, 5, 5), (1, 1), (0, 0), ""),  # LeNet's first layer
    ((2, 3, 17), (5, 3, 4), (3,), (1,), ""),  # 1-D
    # 8-wide output rows: the forward copies B by runs, the weight gradient packs B by
    # in-register transposes (at stride 2: even lanes of two loads first)
    ((2, 4, 8, 8), (6, 4, 3, 3), (1, 1), (1, 1), "vector.shuffle"),
    ((2, 3, 16, 16), (4, 3, 3, 3), (2, 2), (1, 1), "vector.shuffle"),
    # 144 output positions per image: the forward's last B panel (16 of 64 columns) is
    # copied by runs of 4 too; the weight gradient's one panel (27 columns) transposes
    # its whole groups and packs the rest element by element
    ((2, 3, 12, 12), (4, 3, 3, 3), (1, 1), (1, 1), "vector.shuffle"),
])
def test_conv_through_gemm_matches_torch(xs: tuple[int, ...], ws: tuple[int, ...],
                                         stride: tuple[int, ...],
                                         padding: tuple[int, ...], runs: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Convolution forward, input gradient (gather form) and weight gradient as
    implicit GEMMs (offset tables, no im2col buffer), against torch in float64, and
    bit-identical to the plain loops of the same lowering (also where B is packed by
    runs, `runs`: an op the packing then shows; these B are below the size from which
    it does, so the threshold is lifted)."""
    if runs:
        _lift_fast_pack_threshold(monkeypatch)
    rng = np.random.default_rng(sum(xs) + 7 * sum(ws))
    xv = rng.standard_normal(xs, dtype=np.float32)
    wv = rng.standard_normal(ws, dtype=np.float32)

    def module() -> builtin.ModuleOp:
        g = Graph("cv")
        x, w = add_parameter_inputs(g, [ParamSpec("x", xs, UniformSeeded(0, 1)),
                                        ParamSpec("w", ws, UniformSeeded(0, 1))])
        y = g.emit(frame.ConvOp(x, w, stride, padding))
        g2 = g.emit(frame.SumOp(g.emit(frame.MulOp(y, y))))
        return builtin.ModuleOp([g.finish([g2])])

    tiled, ir = _compile(module(), **SMALL, gemm_min_flops=0)
    plain, _ = _compile(module(), gemm=False)
    assert ir.count("vector.fma") >= 3  # forward, input and weight gradients
    assert runs in ir
    tx, tw = (torch.from_numpy(v).double().requires_grad_() for v in (xv, wv))
    conv = torch.nn.functional.conv2d if len(xs) == 4 else torch.nn.functional.conv1d
    ty = conv(tx, tw, stride=stride, padding=padding)
    (ty * ty).sum().backward()
    loss, gx, gw = tiled("cv_grad", xv, wv)
    np.testing.assert_allclose(loss, (ty * ty).sum().item(), rtol=1e-5)
    for got, ref in ((gx, tx.grad.numpy()), (gw, tw.grad.numpy())):
        np.testing.assert_allclose(got, ref, rtol=1e-5,
                                   atol=2e-6 * max(1.0, float(np.abs(ref).max())))
    for got, want in zip((loss, gx, gw), plain("cv_grad", xv, wv), strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_split_k_is_the_same_for_every_thread_count_and_matches_torch() -> None:
    """A small C over a long reduction (a first convolution's weight gradient) is summed
    in `SPLIT_K` partial sums: torch-close, and the same bits at 1, 2 and 3 threads
    (the split depends on the shape, not on the thread count)."""
    from frame_mlir.passes.frame_gemm import SPLIT_K_MIN

    m, k, n = 20, SPLIT_K_MIN + 808, 25
    rng = np.random.default_rng(11)
    av = rng.standard_normal((k, m), dtype=np.float32)
    bv = rng.standard_normal((k, n), dtype=np.float32)
    outs = []
    for threads in (1, 2, 3):
        ex, ir = _compile(_matmul_module(m, k, n, True, False), threads=threads)
        assert f"to memref<{m * n}xf32>" in ir  # views of the partial sums
        outs.append(ex("mm_y", av, bv)[0])
    for got in outs[1:]:
        np.testing.assert_array_equal(got.view(np.uint32), outs[0].view(np.uint32))
    ref = torch.from_numpy(av).double().T @ torch.from_numpy(bv).double()
    np.testing.assert_allclose(outs[0], ref.numpy(), rtol=1e-5, atol=2e-6 * np.sqrt(k))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_batched_matmul_through_the_gemm(threads: int, ta: bool, tb: bool) -> None:
    """A batched matmul (attention's Q·Kᵀ, say) is a contraction with outer dims: one
    GEMM per batch index, tasks over the first batch dim. Against torch in float64, and
    the same bits as the plain loops whatever the thread count."""
    batch, m, k, n = (3, 2), 13, 37, 29
    a_shape = (*batch, k, m) if ta else (*batch, m, k)
    b_shape = (*batch, n, k) if tb else (*batch, k, n)

    def module() -> builtin.ModuleOp:
        g = Graph("bmm")
        y = g.emit(frame.MatmulOp(g.add_input(a_shape, "a"), g.add_input(b_shape, "b"),
                                  transpose_lhs=ta, transpose_rhs=tb))
        return builtin.ModuleOp([g.finish([y])])

    rng = np.random.default_rng(threads + 2 * ta + 4 * tb)
    av = rng.standard_normal(a_shape, dtype=np.float32)
    bv = rng.standard_normal(b_shape, dtype=np.float32)
    tiled, ir = _compile(module(), **SMALL, gemm_min_flops=0, threads=threads)
    plain, _ = _compile(module(), gemm=False)
    assert "vector.fma" in ir
    (y,) = tiled("bmm", av, bv)
    (ref,) = plain("bmm", av, bv)
    np.testing.assert_array_equal(y.view(np.uint32), ref.view(np.uint32))
    ta_, tb_ = torch.from_numpy(av).double(), torch.from_numpy(bv).double()
    want = (ta_.transpose(-1, -2) if ta else ta_) @ (tb_.transpose(-1, -2) if tb else tb_)
    np.testing.assert_allclose(y, want.numpy(), rtol=1e-5, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("tb", [False, True])
def test_attention_products_read_a_in_place(tb: bool) -> None:
    """Per-head products with few columns (attention's probabilities x V: 128 x 128 per
    head, 32 columns) read A in place once A over all heads is large, though each head's
    A is small (`_direct_a` counts A's outer dims): the strided micro-kernel is used, and
    the result has the plain loops' bits and torch's values. Edges: m and k not
    multiples of the tile, n under one vector panel."""
    batch, m, k, n = (4, 8), 45, 50, 20
    a_shape, b_shape = (*batch, m, k), ((*batch, n, k) if tb else (*batch, k, n))

    def module() -> builtin.ModuleOp:
        g = Graph("heads")
        y = g.emit(frame.MatmulOp(g.add_input(a_shape, "a"), g.add_input(b_shape, "b"),
                                  transpose_rhs=tb))
        return builtin.ModuleOp([g.finish([y])])

    rng = np.random.default_rng(7 + tb)
    av = rng.standard_normal(a_shape, dtype=np.float32)
    bv = rng.standard_normal(b_shape, dtype=np.float32)
    tiled, ir = _compile(module(), gemm_min_flops=0, threads=1, f32_lanes=16)
    plain, _ = _compile(module(), gemm=False)
    # A in place: micro-kernels with A's (row stride, k stride) = (k, 1) built in
    assert f"_a{k}x1" in ir
    (y,) = tiled("heads", av, bv)
    (ref,) = plain("heads", av, bv)
    np.testing.assert_array_equal(y.view(np.uint32), ref.view(np.uint32))
    tb_ = torch.from_numpy(bv).double()
    want = torch.from_numpy(av).double() @ (tb_.transpose(-1, -2) if tb else tb_)
    np.testing.assert_allclose(y, want.numpy(), rtol=1e-5, atol=1e-5 * np.sqrt(k))
