"""The convolution / pooling family (`frame_mlir/dialects/frame_conv.py`) beyond the torch
oracle cases of tests/oracle/test_ops_vs_torch.py: the emitted C++ against the JIT, bit
for bit, on every new kernel (dilated conv and its gradients, conv_transpose in its
GEMM and grouped forms, avg pools with torch's varying divisors, max pools and their
gradients with ceil_mode, the global pools); max selections against torch bit for bit
on NaN, infinities, signed zeros and ties; dilated convs and conv_transpose through
frame-gemm (bit-identical to the plain loops, and torch-close), a stride-1 conv's
input gradient as a conv, the same bits for every thread count; float16 storage; and
the attributes' defaults staying out of the IR."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cpp_vs_jit import CXX, assert_cpp_matches_jit, same_bits
from xdsl.dialects import builtin
from xdsl.ir import SSAValue

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.runtime.executable import Executable, compile_module

torch = pytest.importorskip("torch")
F = torch.nn.functional

#: Shapes of the family module's inputs.
X, W, XT, WT, X1 = (2, 4, 7, 9), (4, 2, 3, 2), (2, 4, 3, 4), (4, 3, 3, 2), (2, 3, 10)
#: Edge values of the selection tests: NaN, both infinities, both zeros, a denormal,
#: and few distinct values (ties).
EDGE_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40], np.float32)


def _family(g: Graph, x: SSAValue, w: SSAValue, xt: SSAValue, wt: SSAValue,
            x1: SSAValue, dys: Sequence[SSAValue] | None) -> list[SSAValue]:
    """Every new kernel of the family on the inputs; `dys` (None: build only the forward
    ops, to learn the dy shapes) are the cotangents of the gradient ops."""
    e = g.emit
    outs = [
        e(frame.ConvOp(x, w, [1, 2], [1, 2], 2, [2, 3])),  # dilated, grouped, padded
        e(frame.ConvTransposeOp(xt, wt, [2, 1], [1, 0], [1, 0], 1, [1, 2])),  # GEMM + col2im
        e(frame.ConvTransposeOp(xt, e(frame.SliceOp(wt, 1, 0, 1)), [2, 2], [0, 1], [1, 1], 2)),
        e(frame.AvgPoolOp(x, [3, 3], [2, 2], [1, 1], True, False)),  # varying divisors
        e(frame.AvgPoolOp(x1, [3], [2], [1], True, True)),  # windows past the padding
        e(frame.MaxPoolOp(x, [3, 2], [2, 2], [1, 0], True)),  # ceil_mode, padding mask
        e(frame.MaxPoolOp(x1, [2], [3], [0], True)),  # only after the dim
        e(frame.GlobalAvgPoolOp(x)), e(frame.GlobalMaxPoolOp(x)),
        e(frame.GlobalAvgPoolOp(x1)),
    ]
    if dys is None:
        return outs
    dy_conv, dy_avg, dy_max, dy_max1 = dys
    outs += [
        e(frame.ConvGradInputOp(dy_conv, w, x.type, [1, 2], [1, 2], 2, [2, 3])),
        e(frame.ConvGradWeightOp(x, dy_conv, w.type, [1, 2], [1, 2], 2, [2, 3])),
        e(frame.AvgPoolGradOp(dy_avg, x.type, [3, 3], [2, 2], [1, 1], True, False)),
        e(frame.MaxPoolGradOp(x, outs[5], dy_max, [3, 2], [2, 2], [1, 0], True)),
        e(frame.MaxPoolGradOp(x1, outs[6], dy_max1, [2], [3], [0], True)),
    ]
    return outs


def _dy_shapes() -> list[tuple[int, ...]]:
    g = Graph("shapes")
    outs = _family(g, *(g.add_input(s) for s in (X, W, XT, WT, X1)), None)
    return [frame.static_shape(outs[i]) or () for i in (0, 3, 5, 6)]


def _module() -> builtin.ModuleOp:
    g = Graph("fam")
    ins = [g.add_input(s, n) for s, n in zip((X, W, XT, WT, X1), ("x", "w", "xt", "wt", "x1"),
                                             strict=True)]
    dys = [g.add_input(s, f"dy{i}") for i, s in enumerate(_dy_shapes())]
    return builtin.ModuleOp([g.finish(_family(g, *ins, dys))])


def _inputs(rng: np.random.Generator, special: bool = True) -> list[np.ndarray]:
    """Random inputs with ties (a plateau) and -0.0; with `special`, also a NaN and rows
    of -inf (whole max-pool windows of -inf next to the padding)."""
    shapes = [X, W, XT, WT, X1, *_dy_shapes()]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    x = arrays[0]
    x[0, 0, :3, :3] = 0.5
    x[0, 1, 0, 0] = -0.0
    arrays[4][1, 1, 4:] = 2.0
    if special:
        x[1, 0, 2, 1] = np.nan
        x[1, 2, :2, :] = -np.inf
    return arrays




@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit(tmp_path: Path) -> None:
    """The loops stage of every new kernel of the family emitted as C++, compiled with
    g++ (-O2, no FP contraction, as the emitted programs are) and run on random values
    with ties, NaN and -inf windows: the same bits as the JIT's."""
    assert_cpp_matches_jit(_module, "fam", _inputs(np.random.default_rng(7)), tmp_path)


def test_family_module_matches_torch() -> None:
    """The same module against torch (float64 on the same float32 values): the C++
    test above compares two of our backends, this one compares them with the oracle."""
    args = _inputs(np.random.default_rng(7), special=False)
    outs = compile_module(_module(), options=CompileOptions(threads=1), cache=None)("fam", *args)
    x, w, xt, wt, x1, dy_conv, dy_avg, dy_max, dy_max1 = (
        torch.from_numpy(a).double() for a in args)
    xg, x1g = x.clone().requires_grad_(), x1.clone().requires_grad_()
    mp = F.max_pool2d(xg, (3, 2), (2, 2), (1, 0), ceil_mode=True)
    mp1 = F.max_pool1d(x1g, 2, 3, 0, ceil_mode=True)
    conv = lambda a, b: F.conv2d(a, b, stride=(1, 2), padding=(1, 2), dilation=(2, 3),  # noqa: E731
                                 groups=2)
    xz, wz = (t.clone().requires_grad_() for t in (x, w))
    avg = lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False)  # noqa: E731
    xa = x.clone().requires_grad_()
    refs = [
        conv(x, w),
        F.conv_transpose2d(xt, wt, stride=(2, 1), padding=(1, 0), output_padding=(1, 0),
                           dilation=(1, 2)),
        F.conv_transpose2d(xt, wt[:, :1], stride=2, padding=(0, 1), output_padding=1, groups=2),
        avg(x), F.avg_pool1d(x1, 3, 2, 1, ceil_mode=True), mp, mp1,
        F.adaptive_avg_pool2d(x, 1), F.adaptive_max_pool2d(x, 1), F.adaptive_avg_pool1d(x1, 1),
        torch.autograd.grad(conv(xz, w), xz, dy_conv)[0],
        torch.autograd.grad(conv(x, wz), wz, dy_conv)[0],
        torch.autograd.grad(avg(xa), xa, dy_avg)[0],
        torch.autograd.grad(mp, xg, dy_max)[0], torch.autograd.grad(mp1, x1g, dy_max1)[0],
    ]
    for i, (ours, ref) in enumerate(zip(outs, refs, strict=True)):
        ref = ref.detach().numpy()
        assert ours.shape == ref.shape, f"output {i}"
        np.testing.assert_allclose(ours, ref, rtol=1e-5,
                                   atol=1e-6 * max(1.0, float(np.abs(ref).max())),
                                   err_msg=f"output {i}")


def _selection_module(shape: tuple[int, ...], pool: Callable[[Graph, SSAValue], SSAValue],
                      full: bool) -> tuple[Executable, tuple[int, ...]]:
    """@sel(x, dy) -> (pool(x), its gradient at dy) for a max pool (`full`: the global one,
    whose gradient is the max_pool_grad over the whole input)."""
    g = Graph("sel")
    x = g.add_input(shape, "x")
    y = pool(g, x)
    ys = frame.static_shape(y) or ()
    dy = g.add_input(ys, "dy")
    op = y.owner
    if full:
        sp = list(shape[2:])
        dx = g.emit(frame.MaxPoolGradOp(x, y, dy, sp, sp, [0] * len(sp)))
    else:
        dx = g.emit(frame.MaxPoolGradOp(x, y, dy, *op.pool_attrs(), op.ceils()))  # type: ignore[union-attr]
    return compile_module(builtin.ModuleOp([g.finish([y, dx])]),
                          options=CompileOptions(threads=1), cache=None), ys


@pytest.mark.parametrize("kind", ["ceil_2d", "ceil_1d_past_padding", "overlapping_3x3_s2",
                                  "stride1_padded", "tiled_2x2", "global_2d", "global_1d"])
def test_max_selections_match_torch_bitwise(kind: str) -> None:
    """max_pool with ceil_mode and the global max pool only select values, and their
    gradients only route dy: torch's float32 results are exact, ours must be the same
    bits on NaN, +-inf, +-0.0, denormals and ties (a window holding a NaN is NaN and
    sends dy to its last NaN; of tied maxima the first takes dy; an all -inf window
    sends dy to its first cell inside the input), where windows overlap (an element's
    contributions added in torch's order) and where they do not, through both forms of
    the scan (a generic per window cell, and loops over the window). Where windows
    tile the input (LeNet's 2 x 2 / 2, the global pools) dx is written once, not added
    to a zero fill: dy then holds -0.0, NaN and infinities too (torch's 0 + dy)."""
    shape, pool, ref, full = {
        "ceil_2d": ((2, 3, 7, 6), lambda g, x: g.emit(frame.MaxPoolOp(x, [3, 2], [2, 2], [1, 1],
                                                                      True)),
                    lambda t: F.max_pool2d(t, (3, 2), (2, 2), (1, 1), ceil_mode=True), False),
        "ceil_1d_past_padding": ((3, 2, 9), lambda g, x: g.emit(frame.MaxPoolOp(x, [3], [2], [1],
                                                                                True)),
                                 lambda t: F.max_pool1d(t, 3, 2, 1, ceil_mode=True), False),
        # ResNet's pool: overlapping windows, the same padding on both sides of each dim
        # (one generic writes both -inf strips), odd and even sizes.
        "overlapping_3x3_s2": ((2, 3, 9, 8), lambda g, x: g.emit(frame.MaxPoolOp(
            x, [3, 3], [2, 2], [1, 1])), lambda t: F.max_pool2d(t, 3, 2, 1), False),
        # Stride 1 keeps the loops over the window (the others above are one generic
        # over the outputs, a cell per operand): overlapping, padded, the scatter's
        # last window dim run backwards.
        "stride1_padded": ((2, 3, 6, 5), lambda g, x: g.emit(frame.MaxPoolOp(
            x, [3, 2], [1, 1], [1, 1])), lambda t: F.max_pool2d(t, (3, 2), 1, 1), False),
        "tiled_2x2": ((2, 3, 6, 8), lambda g, x: g.emit(frame.MaxPoolOp(
            x, [2, 2], [2, 2], [0, 0])), lambda t: F.max_pool2d(t, 2, 2), False),
        "global_2d": ((2, 3, 4, 5), lambda g, x: g.emit(frame.GlobalMaxPoolOp(x)),
                      lambda t: F.adaptive_max_pool2d(t, 1), True),
        "global_1d": ((3, 4, 6), lambda g, x: g.emit(frame.GlobalMaxPoolOp(x)),
                      lambda t: F.adaptive_max_pool1d(t, 1), True),
    }[kind]
    ex, ys = _selection_module(shape, pool, full)
    rng = np.random.default_rng(len(kind))
    for trial in range(3):
        x = rng.choice(EDGE_VALUES, size=shape)
        if trial == 1:
            x.reshape(-1)[: x.size // 3] = -np.inf  # whole windows of -inf
        dy = rng.uniform(0.5, 1.5, size=ys).astype(np.float32)
        if kind.startswith(("tiled", "global")):
            dy = np.where(rng.random(ys) < 0.5, rng.choice(EDGE_VALUES, size=ys), dy
                          ).astype(np.float32)
        y, dx = ex("sel", x, dy)
        tx = torch.from_numpy(x.copy()).requires_grad_()
        ty = ref(tx)
        (tdx,) = torch.autograd.grad(ty, tx, torch.from_numpy(dy))
        same_bits(y, ty.detach().numpy(), f"{kind} forward, trial {trial}")
        same_bits(dx, tdx.numpy(), f"{kind} gradient, trial {trial}")


SMALL = {"l1_bytes": 512, "l2_bytes": 32768, "l3_bytes": 32768}  # KC as 2 KiB gave under the half-of-L1 rule


def _compile(module: builtin.ModuleOp, **options: object) -> tuple[Executable, str]:
    """The executable and the text of its loops-stage IR after `frame-gemm`."""
    seen: list[str] = []

    def hook(p: object, mod: builtin.ModuleOp) -> None:
        if getattr(p, "name", "") == "frame-gemm":
            seen.append(str(mod))
    ex = compile_module(module, options=CompileOptions(**options), after_pass=hook,  # type: ignore[arg-type]
                        cache=None)
    return ex, seen[0]


def _grad_module(xs: tuple[int, ...], ws: tuple[int, ...],
                 make: Callable[[SSAValue, SSAValue], Any]) -> builtin.ModuleOp:
    g = Graph("cv")
    x, w = add_parameter_inputs(g, [ParamSpec("x", xs, UniformSeeded(0, 1)),
                                    ParamSpec("w", ws, UniformSeeded(0, 1))])
    y = g.emit(make(x, w))
    return builtin.ModuleOp([g.finish([g.emit(frame.SumOp(g.emit(frame.MulOp(y, y))))])])


@pytest.mark.parametrize("case", ["conv_dilation", "conv1d_dilation", "conv_transpose",
                                  "conv_transpose_dilation"])
def test_through_the_gemm_matches_torch_and_the_plain_loops(case: str) -> None:
    """Dilated convolutions and transposed ones (forward and both gradients) as implicit
    GEMMs: against torch in float64, and bit-identical to the plain loops of the same
    lowering (frame-gemm keeps every element's summation order)."""
    xs, ws, make, ref = {
        "conv_dilation": ((2, 3, 12, 11), (5, 3, 3, 3),
                          lambda x, w: frame.ConvOp(x, w, [1, 2], [2, 1], 1, [2, 3]),
                          lambda x, w: F.conv2d(x, w, stride=(1, 2), padding=(2, 1),
                                                dilation=(2, 3))),
        "conv1d_dilation": ((2, 4, 30), (6, 4, 5), lambda x, w: frame.ConvOp(x, w, [2], [3], 1,
                                                                              [3]),
                            lambda x, w: F.conv1d(x, w, stride=2, padding=3, dilation=3)),
        "conv_transpose": ((2, 6, 5, 6), (6, 4, 3, 3),
                           lambda x, w: frame.ConvTransposeOp(x, w, [2, 2], [1, 1], [1, 0]),
                           lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1,
                                                           output_padding=(1, 0))),
        "conv_transpose_dilation": ((2, 5, 9), (5, 3, 4),
                                    lambda x, w: frame.ConvTransposeOp(x, w, [1], [2], [1], 1,
                                                                       [2]),
                                    lambda x, w: F.conv_transpose1d(x, w, stride=1, padding=2,
                                                                    output_padding=1,
                                                                    dilation=2)),
    }[case]
    rng = np.random.default_rng(len(case))
    xv = rng.standard_normal(xs).astype(np.float32)
    wv = rng.standard_normal(ws).astype(np.float32)
    tiled, ir = _compile(_grad_module(xs, ws, make), **SMALL, gemm_min_flops=0)
    plain, _ = _compile(_grad_module(xs, ws, make), gemm=False)
    assert ir.count("vector.fma") >= 3  # forward, input and weight gradients
    tx, tw = (torch.from_numpy(v).double().requires_grad_() for v in (xv, wv))
    ty = ref(tx, tw)
    (ty * ty).sum().backward()
    loss, gx, gw = tiled("cv_grad", xv, wv)
    np.testing.assert_allclose(loss, (ty * ty).sum().item(), rtol=1e-5)
    for got, want in ((gx, tx.grad.numpy()), (gw, tw.grad.numpy())):
        np.testing.assert_allclose(got, want, rtol=1e-5,
                                   atol=2e-6 * max(1.0, float(np.abs(want).max())))
    for got, want in zip((loss, gx, gw), plain("cv_grad", xv, wv), strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("case", ["conv2d_3x3", "conv1d_k5", "conv_transpose_stride1"])
def test_stride1_input_gradient_as_a_conv(case: str, monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    """A stride-1 conv's input gradient on images of at least
    `frame_conv.CONV_GRAD_MIN_PIXELS` is itself a conv of the padded dy, the weight read
    in place with its taps flipped (`_input_grad_as_conv`): through frame-gemm with
    odd sizes (partial row and column panels, two k blocks) on 1, 2 and 3 threads it
    matches torch in float64 and the plain loops bit for bit, and (2-D) the emitted C++
    matches the JIT bit for bit. conv_transpose at stride 1 takes the same form for its
    forward."""
    from frame_mlir.dialects import frame_conv

    xs, ws, make, ref = {
        "conv2d_3x3": ((2, 5, 17, 18), (7, 5, 3, 3),
                       lambda x, w: frame.ConvOp(x, w, [1, 1], [1, 1]),
                       lambda x, w: F.conv2d(x, w, padding=1)),
        # padding 1 < K - 1: dy is padded by 3 before and after
        "conv1d_k5": ((2, 6, 300), (3, 6, 5), lambda x, w: frame.ConvOp(x, w, [1], [1]),
                      lambda x, w: F.conv1d(x, w, padding=1)),
        "conv_transpose_stride1": ((2, 6, 15, 18), (6, 5, 3, 3),
                                   lambda x, w: frame.ConvTransposeOp(x, w, [1, 1], [0, 0],
                                                                      [0, 0]),
                                   lambda x, w: F.conv_transpose2d(x, w)),
    }[case]
    taken: list[int] = []
    as_conv = frame_conv._input_grad_as_conv

    def spy(*args: Any) -> SSAValue:
        taken.append(1)
        return as_conv(*args)
    monkeypatch.setattr(frame_conv, "_input_grad_as_conv", spy)
    rng = np.random.default_rng(7 + len(case))
    xv = rng.standard_normal(xs).astype(np.float32)
    wv = rng.standard_normal(ws).astype(np.float32)
    plain, _ = _compile(_grad_module(xs, ws, make), gemm=False)
    assert taken, "the input gradient did not take the conv form"
    tx, tw = (torch.from_numpy(v).double().requires_grad_() for v in (xv, wv))
    ty = ref(tx, tw)
    (ty * ty).sum().backward()
    want = plain("cv_grad", xv, wv)
    for threads in (1, 2, 3):
        tiled, ir = _compile(_grad_module(xs, ws, make), **SMALL, gemm_min_flops=0,
                             threads=threads)
        assert ir.count("vector.fma") >= 3  # forward, input and weight gradients
        loss, gx, gw = got = tiled("cv_grad", xv, wv)
        np.testing.assert_allclose(loss, (ty * ty).sum().item(), rtol=1e-5)
        for g, t in ((gx, tx.grad.numpy()), (gw, tw.grad.numpy())):
            np.testing.assert_allclose(g, t, rtol=1e-5,
                                       atol=2e-6 * max(1.0, float(np.abs(t).max())))
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            same_bits(a, b, f"{threads} threads, output {i}")
    if case == "conv2d_3x3" and CXX is not None:
        assert_cpp_matches_jit(lambda: _grad_module(xs, ws, make), "cv_grad", [xv, wv],
                               tmp_path)


def test_the_same_bits_for_every_thread_count() -> None:
    """The scatters (col2im, the grouped conv_transpose, the pool gradients) keep only
    the dims that never collide parallel: 1, 2 and 3 threads give the same bits."""
    args = _inputs(np.random.default_rng(3))
    outs = [compile_module(_module(), options=CompileOptions(threads=t), cache=None)(
        "fam", *args) for t in (1, 2, 3)]
    for other in outs[1:]:
        for i, (a, b) in enumerate(zip(outs[0], other, strict=True)):
            same_bits(a, b, f"output {i}")


def test_float16_storage_matches_torch() -> None:
    """f16 operands and results (f32 arithmetic, rounded at the op boundary): a dilated
    conv, a conv_transpose and an avg pool without the padding in its divisor, and
    their VJPs, against torch in float64 on the same half values."""
    f16 = builtin.f16
    xs, ws, wts = (2, 3, 8, 7), (4, 3, 3, 2), (3, 2, 3, 3)
    g = Graph("h")
    x, w, wt = (g.add_input(s, n, elem=f16) for s, n in ((xs, "x"), (ws, "w"), (wts, "wt")))
    outs = [g.emit(frame.ConvOp(x, w, [1, 1], [1, 0], 1, [2, 2])),
            g.emit(frame.ConvTransposeOp(x, wt, [2, 1], [1, 1], [1, 0], 1, [1, 2])),
            g.emit(frame.AvgPoolOp(x, [3, 2], [2, 2], [1, 1], True, False)),
            g.emit(frame.GlobalAvgPoolOp(x))]
    ex = compile_module(builtin.ModuleOp([g.finish(outs)]), cache=None)
    rng = np.random.default_rng(5)
    arrays = [rng.uniform(-1, 1, s).astype(np.float16) for s in (xs, ws, wts)]
    got = ex("h", *arrays)
    tx, tw, twt = (torch.from_numpy(a.astype(np.float64)) for a in arrays)
    refs = [F.conv2d(tx, tw, padding=(1, 0), dilation=2),
            F.conv_transpose2d(tx, twt, stride=(2, 1), padding=1, output_padding=(1, 0),
                               dilation=(1, 2)),
            F.avg_pool2d(tx, (3, 2), 2, 1, ceil_mode=True, count_include_pad=False),
            F.adaptive_avg_pool2d(tx, 1)]
    for i, (ours, ref) in enumerate(zip(got, refs, strict=True)):
        assert ours.dtype == np.float16, f"output {i}"
        np.testing.assert_allclose(ours.astype(np.float64), ref.numpy(), rtol=1e-2, atol=2e-3,
                                   err_msg=f"output {i}")


def test_default_attributes_stay_out_of_the_ir() -> None:
    """dilation 1, output_padding 0, ceil_mode false and count_include_pad true are the
    defaults: built explicitly they print as IR written before them did."""
    g = Graph("d")
    x, w = g.add_input((1, 2, 6, 6), "x"), g.add_input((2, 3, 3, 3), "w")
    ops = [g.emit(frame.ConvOp(x, g.add_input((3, 2, 3, 3), "w2"), [1, 1], [0, 0], 1,
                               [1, 1])).owner,
           g.emit(frame.ConvTransposeOp(x, w, [1, 1], [0, 0], [0, 0], 1, [1, 1])).owner,
           g.emit(frame.AvgPoolOp(x, [2, 2], [2, 2], [0, 0], False, True)).owner,
           g.emit(frame.MaxPoolOp(x, [2, 2], [2, 2], [0, 0], False)).owner]
    for op in ops:
        text = str(op)
        for attr in ("dilation", "output_padding", "ceil_mode", "count_include_pad"):
            assert attr not in text, text
    assert str(ops[0]).endswith("{stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, "
                                "groups = 1 : i64} : (tensor<1x2x6x6xf32>, "
                                "tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>")


#: Depthwise convs (groups = channels, one output channel each): (x shape, stride,
#: padding, dilation). The last output dim is the weight gradient's parallel, vectorized
#: loop: 3, 5, 7, 16 and 56 positions, 1-D and 2-D, strided and dilated.
DEPTHWISE = [((2, 3, 9, 9), [2, 2], [1, 1], [1, 1]),
             ((3, 4, 7, 7), [1, 1], [1, 1], [1, 1]),
             ((2, 5, 16, 16), [1, 1], [2, 2], [2, 2]),
             ((1, 6, 3, 5), [1, 1], [0, 0], [1, 1]),
             ((2, 8, 56), [1], [1], [1]),
             ((4, 16, 32, 32), [2, 2], [1, 1], [1, 1])]


@pytest.mark.parametrize("xs,stride,pad,dil", DEPTHWISE)
def test_depthwise_weight_gradient_matches_torch(xs: tuple[int, ...], stride: list[int],
                                                 pad: list[int], dil: list[int]) -> None:
    """The depthwise weight gradient (partial sums per position of the last output dim,
    then across them: `_depthwise_grad_weight`) against torch in float64 on random
    shapes, the same bits at 1 and 2 threads, with the forward and input gradient."""
    c, nsp = xs[1], len(xs) - 2
    ws = (c, 1, *[3] * nsp)
    conv = F.conv2d if nsp == 2 else F.conv1d
    rng = np.random.default_rng(sum(xs))
    xv = rng.standard_normal(xs).astype(np.float32)
    wv = rng.standard_normal(ws).astype(np.float32)
    ys = tuple(conv(torch.zeros(xs), torch.zeros(ws), stride=stride, padding=pad,
                    dilation=dil, groups=c).shape)
    dyv = rng.standard_normal(ys).astype(np.float32)

    def module() -> builtin.ModuleOp:
        g = Graph("dw")
        x, w, dy = g.add_input(xs, "x"), g.add_input(ws, "w"), g.add_input(ys, "dy")
        return builtin.ModuleOp([g.finish([
            g.emit(frame.ConvOp(x, w, stride, pad, c, dil)),
            g.emit(frame.ConvGradInputOp(dy, w, x.type, stride, pad, c, dil)),
            g.emit(frame.ConvGradWeightOp(x, dy, w.type, stride, pad, c, dil))])])

    one = compile_module(module(), options=CompileOptions(threads=1), cache=None)("dw", xv, wv, dyv)
    two = compile_module(module(), options=CompileOptions(threads=2), cache=None)("dw", xv, wv, dyv)
    xt = torch.from_numpy(xv).double().requires_grad_()
    wt = torch.from_numpy(wv).double().requires_grad_()
    y = conv(xt, wt, stride=stride, padding=pad, dilation=dil, groups=c)
    y.backward(torch.from_numpy(dyv).double())
    terms = int(np.prod(ys)) // c  # each dw element sums this many products
    for got, ref, what in ((one[0], y, "y"), (one[1], xt.grad, "dx"), (one[2], wt.grad, "dw")):
        ref = ref.detach().numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-6 * np.sqrt(terms),
                                   err_msg=what)
    for a, b, what in zip(one, two, ("y", "dx", "dw"), strict=True):
        same_bits(a, b, f"{what} at 1 vs 2 threads")
