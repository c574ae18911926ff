"""frame-tile-matmul: register-tiled loops for matmul kernels.

Expects: bufferized `linalg.generic` ops on memrefs that implement `frame.matmul`
(`doc = "frame.matmul"`) in the (i, k, j) order convert-frame-to-linalg chooses:
iterators [parallel, reduction, parallel], output map (d0, d2), B map (d1, d2),
A map (d0, d1) or (d1, d0) (a transposed lhs), body `fma(a, b, c)`.
Does: replaces each with an scf loop nest over TM x TN tiles of C,

    for i0 in [0, Mt) step TM:  for j0 in [0, Nt) step TN:  for k in [0, K):
        for r in [0, TM):  a = A(i0 + r, k)
            for jj in [0, TN):  C[i0 + r, j0 + jj] += a * B[k, j0 + jj]

plus plain loops for the rows and columns left over. Each B vector loaded for a k
feeds TM rows, and the TM x TN tile of C is invariant in k, so (in a kernel whose
pointers are noalias) LLVM keeps it in vector registers for the whole k loop:
the loads per FMA drop by TM. Other generics are left to convert-linalg-to-loops.
Guarantees: same result and same summation order over k as the untiled loops. When
the matmul does at least MIN_PARALLEL_WORK multiply-adds, the top-level loops (over
tiles of rows, and over the rows left over) are marked `frame.parallel` for
frame-parallelize; the kernel's `frame.parallel_dims` is dropped either way (it
described the linalg op's loops).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, builtin, math, memref, scf
from xdsl.dialects.builtin import IndexType, MemRefType, UnitAttr
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.passes.frame_parallelize import (
    MIN_PARALLEL_WORK,
    PARALLEL_ATTR,
    PARALLEL_DIMS_ATTR,
)

TM = 4  # rows of C per tile
TN_MAX = 64  # columns of C per tile: 4 vectors of 16 f32 (16 accumulators in all)


def _dims(m: AffineMap) -> tuple[int, ...] | None:
    out = []
    for e in m.results:
        pos = getattr(e, "position", None)
        if pos is None:
            return None
        out.append(pos)
    return tuple(out)


def _matmul_layout(op: linalg.GenericOp) -> bool | None:
    """True/False = tileable with A transposed or not; None = not a tileable matmul."""
    if not op.doc or op.doc.data != "frame.matmul" or len(op.inputs) != 2:
        return None
    its = [str(i.data) for i in op.iterator_types.data]
    if its != ["parallel", "reduction", "parallel"]:
        return None
    a, b, c = (_dims(m.data) for m in op.indexing_maps.data)
    if b != (1, 2) or c != (0, 2) or a not in ((0, 1), (1, 0)):
        return None
    body = [o.name for o in op.body.block.ops]
    if body != ["math.fma", "linalg.yield"]:
        return None
    if not all(isinstance(v.type, MemRefType) for v in op.operands):
        return None
    return a == (1, 0)


class _Loops:
    """Builds index constants and scf.for nests at an insertion point."""

    def __init__(self, b: Builder):
        self.b = b

    def const(self, v: int, b: Builder | None = None) -> SSAValue:
        return (b or self.b).insert(arith.ConstantOp(builtin.IntegerAttr(v, IndexType()))).result

    def loop(self, b: Builder, lb: int, ub: int, step: int,
             body: Callable[[Builder, SSAValue], None]) -> scf.ForOp:
        block = Block(arg_types=[IndexType()])
        inner = Builder(InsertPoint.at_end(block))
        body(inner, block.args[0])
        inner.insert(scf.YieldOp())
        return b.insert(scf.ForOp(self.const(lb, b), self.const(ub, b), self.const(step, b),
                                  [], block))

    def add(self, b: Builder, x: SSAValue, y: SSAValue | int) -> SSAValue:
        if isinstance(y, int):
            y = self.const(y, b)
        return b.insert(arith.AddiOp(x, y)).result


def _mac(b: Builder, a_val: SSAValue, bm: SSAValue, cm: SSAValue,
         k: SSAValue, i: SSAValue, j: SSAValue) -> None:
    bv = b.insert(memref.LoadOp.get(bm, [k, j])).res
    cv = b.insert(memref.LoadOp.get(cm, [i, j])).res
    b.insert(memref.StoreOp.get(b.insert(math.FmaOp(a_val, bv, cv)).result, cm, [i, j]))


def _mark_parallel(loop: scf.ForOp, worth: bool) -> None:
    """Mark a loop over rows of C `frame.parallel` for frame-parallelize (its
    iterations write disjoint rows of C and only read A and B) when the matmul is
    `worth` a wake-up of the thread pool."""
    if worth:
        loop.attributes[PARALLEL_ATTR] = UnitAttr()


def _tile(op: linalg.GenericOp, transposed_a: bool) -> list[Operation] | None:
    am, bm, cm = op.operands
    m, n = cm.type.get_shape()  # type: ignore[attr-defined]
    k_dim = bm.type.get_shape()[0]  # type: ignore[attr-defined]
    if m < TM or n < 16:
        return None  # too small to gain: plain loops
    tn = TN_MAX if n >= TN_MAX else 16 * (n // 16)
    mt, nt = m - m % TM, n - n % tn
    block = Block()
    b = Builder(InsertPoint.at_end(block))
    lp = _Loops(b)
    worth = m * n * k_dim >= MIN_PARALLEL_WORK  # multiply-adds

    def load_a(bb: Builder, i: SSAValue, k: SSAValue) -> SSAValue:
        idx = [k, i] if transposed_a else [i, k]
        return bb.insert(memref.LoadOp.get(am, idx)).res

    def tiles(bi: Builder, i0: SSAValue) -> None:
        def cols(bj: Builder, j0: SSAValue) -> None:
            def kloop(bk: Builder, k: SSAValue) -> None:
                def row(br: Builder, r: SSAValue) -> None:
                    i = lp.add(br, i0, r)
                    a = load_a(br, i, k)
                    lp.loop(br, 0, tn, 1,
                            lambda bjj, jj: _mac(bjj, a, bm, cm, k, i, lp.add(bjj, j0, jj)))
                lp.loop(bk, 0, TM, 1, row)
            lp.loop(bj, 0, k_dim, 1, kloop)
        lp.loop(bi, 0, nt, tn, cols)

    def plain(i_lo: int, i_hi: int, j_lo: int, j_hi: int) -> None:
        def rows(bi: Builder, i: SSAValue) -> None:
            def kloop(bk: Builder, k: SSAValue) -> None:
                a = load_a(bk, i, k)
                lp.loop(bk, j_lo, j_hi, 1, lambda bj, j: _mac(bj, a, bm, cm, k, i, j))
            lp.loop(bi, 0, k_dim, 1, kloop)
        _mark_parallel(lp.loop(b, i_lo, i_hi, 1, rows), worth)

    _mark_parallel(lp.loop(b, 0, mt, TM, tiles), worth)
    if nt < n:
        plain(0, m, nt, n)
    if mt < m:
        plain(mt, m, 0, nt)
    ops = list(block.ops)
    for o in ops:
        o.detach()
    return ops


@dataclass(frozen=True)
class FrameTileMatmul(ModulePass):
    """Lower frame matmul kernels to register-tiled scf loops."""

    name = "frame-tile-matmul"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for inner in list(op.walk()):
            if isinstance(inner, linalg.GenericOp):
                layout = _matmul_layout(inner)
                if layout is None:
                    continue
                loops = _tile(inner, layout)
                if loops is not None:
                    kernel = inner.parent_op()
                    if kernel is not None:
                        # The op's loops are not convert-linalg-to-loops' any more: the
                        # row loops carry frame.parallel themselves.
                        kernel.attributes.pop(PARALLEL_DIMS_ATTR, None)
                    Rewriter.insert_op(loops, InsertPoint.before(inner))
                    Rewriter.erase_op(inner)
