"""frame-gemm's outer dims (`place_outer`, `gather_columns`): a convolution's batch
indexes the image (or its gradient) but not the weights, so the weights must be packed
once per (jc, pc, ic) block whatever the batch -- not again for every image.

* Images with many columns (4 x 4 here: 16 columns, one full 16-wide tile row): the
  batch loop runs inside the row blocks, after the weights are packed, each image's
  operand packed inside it.
* Images with few columns (2 x 2, a deep ResNet layer's: 4 columns in 16-wide tiles;
  7 x 7: 49, three vectors and a 1-column one): the columns span the batch (no batch
  loop at all), the GEMM working on a contiguous copy of C in the scratch.

Checked on the IR right after frame-gemm (no load of the weights nested in a batch loop)
for a conv's forward and input-gradient GEMMs at batch 8 on 1 and 2 threads, and for
bits: the forward output, the loss and both gradients equal the plain loops'
(`CompileOptions(gemm=False)`), also when C is not zero-filled right before the GEMM
(its copy is then loaded from C first). Caches are small so that there are several k
blocks and row blocks; 16 lanes whatever the host, so that the choice between the two
forms does not depend on it.
"""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pytest
from xdsl.dialects import arith, builtin, func, memref, scf
from xdsl.ir import Operation, SSAValue

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs
from frame_mlir.passes import frame_gemm
from frame_mlir.runtime.executable import Executable, compile_module

BATCH, CIN, COUT = 8, 16, 24
WS = (COUT, CIN, 3, 3)  # 3x3, padding 1: the output has the input's size
# Tiny caches: KC = 16 (`choose_blocking` lets the B micro-panel take twice L1), a few
# register tiles per MC / NC block.
SMALL = {"l1_bytes": 256, "l2_bytes": 4096, "l3_bytes": 4096, "gemm_min_flops": 0, "f32_lanes": 16}


def _xs(size: int) -> tuple[int, ...]:
    return (BATCH, CIN, size, size)


def _module(size: int, grad: bool) -> builtin.ModuleOp:
    """conv(x, w) (stride 1, padding 1) as the output (`cv`), or sum(conv^2) as a loss
    whose gradient function (`cv_grad`) runs the input and weight gradients."""
    g = Graph("cv")
    if grad:
        x, w = add_parameter_inputs(g, [ParamSpec("x", _xs(size), UniformSeeded(0, 1)),
                                        ParamSpec("w", WS, UniformSeeded(0, 1))])
    else:
        x, w = g.add_input(_xs(size), "x"), g.add_input(WS, "w")
    y = g.emit(frame.ConvOp(x, w, [1, 1], [1, 1]))
    out = g.emit(frame.SumOp(g.emit(frame.MulOp(y, y)))) if grad else y
    return builtin.ModuleOp([g.finish([out])])


def _ancestors(op: Operation) -> list[Operation]:
    out = []
    parent = op.parent_op()
    while parent is not None:
        out.append(parent)
        parent = parent.parent_op()
    return out


def _batch_loops(fn: func.FuncOp) -> set[scf.ForOp]:
    """The loops over the batch: those whose index is scaled by an image's size in one
    of the kernel's batched operands (the offset of that image)."""
    sizes = {int(np.prod(a.type.get_shape()[1:])) for a in fn.body.blocks[0].args
             if isinstance(a.type, builtin.MemRefType) and len(a.type.get_shape()) > 1
             and a.type.get_shape()[0] == BATCH}
    loops = set()
    for loop in (o for o in fn.walk() if isinstance(o, scf.ForOp)):
        iv = loop.body.block.args[0]
        for use in iv.uses:
            mul = use.operation
            if isinstance(mul, arith.MuliOp):
                c = (mul.rhs if mul.lhs is iv else mul.lhs).owner
                if isinstance(c, arith.ConstantOp) and isinstance(c.value, builtin.IntegerAttr) \
                        and c.value.value.data in sizes:
                    loops.add(loop)
    return loops


def _flat(arg: SSAValue) -> SSAValue:
    """The 1-D view of kernel argument `arg` that the GEMM reads."""
    for use in arg.uses:
        if isinstance(use.operation, memref.CollapseShapeOp):
            return use.operation.results[0]
    return arg


class Placement:
    """An `after_pass` hook: for each GEMM kernel of the conv, where the loads of the
    weights, the loads of the other operands and the micro-kernel calls are."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.kernels: dict[str, dict[str, int]] = {}

    def __call__(self, p: object, module: builtin.ModuleOp) -> None:
        if getattr(p, "name", "") != "frame-gemm":
            return
        for fn in (f for f in module.ops if isinstance(f, func.FuncOp)):
            calls = [o for o in fn.walk() if isinstance(o, func.CallOp)
                     and o.callee.root_reference.data.startswith("frame_gemm_micro_")]
            weights = [a for a in fn.body.blocks[0].args
                       if isinstance(a.type, builtin.MemRefType)
                       and tuple(a.type.get_shape()) == WS]
            if not calls or len(weights) != 1:
                continue
            loops = _batch_loops(fn)
            w_flat = _flat(weights[0])
            loads = [o for o in fn.walk() if isinstance(o, memref.LoadOp)
                     and o.memref.type.element_type == builtin.f32]

            def in_batch(op: Operation, loops: set[scf.ForOp] = loops) -> bool:
                return any(a in loops for a in _ancestors(op))
            w_loads = [o for o in loads if o.memref is w_flat]
            # Column tables over (n, oh, ow): the columns span the batch.
            spanning = f"memref<{BATCH * self.size * self.size}xi32>"
            self.kernels[fn.sym_name.data] = {
                "batch_loops": len(loops),
                "weight_loads": len(w_loads),
                "weight_loads_in_batch": sum(in_batch(o) for o in w_loads),
                "other_loads_in_batch": sum(in_batch(o) for o in loads
                                            if o.memref is not w_flat),
                "calls": len(calls),
                "in_place_calls": sum("_a" in o.callee.root_reference.data.rsplit("f32x", 1)[1]
                                      for o in calls),
                "calls_in_batch": sum(in_batch(o) for o in calls),
                "batch_tables": sum(str(o.results[0].type) == spanning for o in fn.walk()
                                    if isinstance(o, memref.ViewOp)),
            }


def _compile(size: int, grad: bool, hook: Placement | None = None,
             **options: object) -> Executable:
    return compile_module(_module(size, grad), options=CompileOptions(**options),  # type: ignore[arg-type]
                          after_pass=hook, cache=None)


@cache
def _plain(size: int, grad: bool) -> Executable:
    return _compile(size, grad, threads=1, gemm=False)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("size,threads", [(2, 1), (2, 2), (4, 1), (4, 2), (7, 2)])
def test_conv_weights_are_packed_once_whatever_the_batch(
        size: int, threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forward and input gradient: the weights (A) are never loaded inside a loop over
    the batch. 4 x 4 images: the batch loop runs inside, with each image's operand
    packed and its tiles run in it. 2 x 2: no batch loop, the columns span the batch.
    7 x 7 (49 columns an image) spans it too (`test_columns_span_the_batch_...`).
    (Packed: weights read in place are `test_few_column_weights_are_read_in_place`'s.)"""
    monkeypatch.setattr(frame_gemm, "_direct_a", lambda *args: None)
    fwd, bwd = Placement(size), Placement(size)
    _compile(size, False, fwd, threads=threads, **SMALL)
    _compile(size, True, bwd, threads=threads, **SMALL)
    kernels = {**{k: v for k, v in fwd.kernels.items() if k.endswith("_conv")},
               **{k: v for k, v in bwd.kernels.items() if "_conv_grad_input" in k}}
    assert len(kernels) == 2, (fwd.kernels, bwd.kernels)
    for name, where in kernels.items():
        assert where["weight_loads"] > 0, (name, where)
        assert where["weight_loads_in_batch"] == 0, (name, where)
        if size in (2, 7):
            assert where["batch_loops"] == 0 and where["batch_tables"] > 0, (name, where)
        else:
            assert where["batch_loops"] > 0 and where["batch_tables"] == 0, (name, where)
            assert where["other_loads_in_batch"] > 0, (name, where)
            assert where["calls_in_batch"] == where["calls"], (name, where)


@pytest.mark.parametrize("size,spans", [(5, False), (7, True)])
def test_columns_span_the_batch_when_that_saves_column_vectors(size: int, spans: bool) -> None:
    """The choice counts vectors of columns (`frame_gemm.GATHER_GAIN`, 1.25): 7 x 7
    images have 49 columns, 3 whole vectors of 16 lanes and a 1-column one, 32 vectors
    for the batch of 8, and 392 gathered columns are 25 (1.28x fewer: the columns span
    the batch); 5 x 5 images have 25, 2 vectors each, 16 in all, and 200 gathered are 13
    (1.23x: each image keeps its own loop)."""
    fwd = Placement(size)
    _compile(size, False, fwd, threads=1, **SMALL)
    [where] = [v for k, v in fwd.kernels.items() if k.endswith("_conv")]
    assert (where["batch_loops"] == 0) == spans, where
    assert (where["batch_tables"] > 0) == spans, where


def test_gathered_columns_split_over_rows_when_their_panels_are_uneven(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """7 x 7 images over the batch of 8 are 392 gathered columns. With an AVX-512 host's
    64-wide column panels that is six panels and one of 8, so two tasks over columns
    would get 4 and 3 panels (65 % of the work on one): the input gradient's GEMM (144
    rows) splits over rows instead, each task copying its rows of the gathered C back
    (the bits are `test_conv_through_the_gemm_is_bit_identical_to_the_plain_loops`' 7 x 7
    case at 2 threads). With AVX2's 16-wide panels the same columns are 25 panels, 13 +
    12, even enough to stay split over columns. Both blockings are asked of the
    contraction this host's compile built, whatever its own vector width."""
    seen: list[tuple[frame_gemm.Contraction, frame_gemm.Blocking, frame_gemm._Split]] = []
    choose = frame_gemm._task_split

    def record(g: frame_gemm.Contraction, blk: frame_gemm.Blocking, threads: int
               ) -> frame_gemm._Split:
        split = choose(g, blk, threads)
        seen.append((g, blk, split))
        return split

    monkeypatch.setattr(frame_gemm, "_task_split", record)
    _compile(7, True, threads=2, **SMALL)
    [(g, blk)] = [(g, b) for g, b, _ in seen if g.gather is not None and g.m > 100]
    assert (g.m, g.n) == (CIN * 9, BATCH * 49), seen
    wide = choose(g, dataclasses.replace(blk, lanes=16, nv=4, mr=6), 2)
    assert wide.rows and wide.tasks == 2, wide
    narrow = choose(g, dataclasses.replace(blk, lanes=8, nv=2, mr=8), 2)
    assert not narrow.rows and not narrow.outer and narrow.tasks == 2, narrow


def test_few_column_weights_are_read_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """2 x 2 images (the columns span the batch: one column panel): packing the weights
    would cost more than their multiply-adds, so the forward and input-gradient GEMMs
    read them in place, through micro-kernels with A's strides built in
    (`frame_gemm._direct_a`; these weights are below its size threshold, lifted here),
    and never in a loop over the batch."""
    from frame_mlir.passes import pipeline

    make = pipeline.gemm_pass
    monkeypatch.setattr(pipeline, "gemm_pass",
                        lambda options: dataclasses.replace(make(options), direct_a_min=0))
    fwd, bwd = Placement(2), Placement(2)
    _compile(2, False, fwd, threads=1, **SMALL)
    _compile(2, True, bwd, threads=1, **SMALL)
    kernels = {**{k: v for k, v in fwd.kernels.items() if k.endswith("_conv")},
               **{k: v for k, v in bwd.kernels.items() if "_conv_grad_input" in k}}
    assert len(kernels) == 2, (fwd.kernels, bwd.kernels)
    for name, where in kernels.items():
        assert where["weight_loads"] == 0 and where["batch_loops"] == 0, (name, where)
        assert where["in_place_calls"] == where["calls"] > 0, (name, where)


@pytest.mark.parametrize("size,threads,keep_fills,pack_a", [
    (2, 1, False, False), (2, 2, False, False), (4, 1, False, False), (4, 2, False, False),
    (2, 2, True, False), (4, 1, True, False), (2, 1, False, True), (2, 2, True, True),
    (7, 2, False, False)])
def test_conv_through_the_gemm_is_bit_identical_to_the_plain_loops(
        size: int, threads: int, keep_fills: bool, pack_a: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The forward output, the loss and both gradients at batch 8: the same bits as the
    plain loops (gemm=False), twice in a row (the scratch then holds the first call's
    values). With `keep_fills` the zero-fills before the GEMMs stay (C is not known to
    be zero: a gathered C is copied in first); with `pack_a` the weights are packed
    where they would be read in place."""
    rng = np.random.default_rng(8 + size)
    x = rng.standard_normal(_xs(size)).astype(np.float32)
    w = (rng.standard_normal(WS) * 0.2).astype(np.float32)
    want = [*_plain(size, False)("cv", x, w), *_plain(size, True)("cv_grad", x, w)]
    if keep_fills:
        monkeypatch.setattr(frame_gemm, "_zero_fills_before", lambda module, c_index: {})
    if pack_a:
        monkeypatch.setattr(frame_gemm, "_direct_a", lambda *args: None)
    else:  # read in place where it may, whatever A's size
        from frame_mlir.passes import pipeline

        make = pipeline.gemm_pass
        monkeypatch.setattr(pipeline, "gemm_pass", lambda options: dataclasses.replace(
            make(options), direct_a_min=0))
    tiled_f = _compile(size, False, threads=threads, **SMALL)
    tiled_g = _compile(size, True, threads=threads, **SMALL)
    for _ in range(2):
        got = [*tiled_f("cv", x, w), *tiled_g("cv_grad", x, w)]
        assert [a.shape for a in got] == [(BATCH, COUT, size, size), (), _xs(size), WS]
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            np.testing.assert_array_equal(_bits(a), _bits(b), err_msg=f"output {i}")
    torch = pytest.importorskip("torch")
    ref = torch.nn.functional.conv2d(torch.from_numpy(x).double(),
                                     torch.from_numpy(w).double(), padding=1)
    np.testing.assert_allclose(got[0], ref.numpy(), rtol=1e-5, atol=1e-5)
