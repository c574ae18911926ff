"""frame-collapse-dims: merge the loop dims of a kernel's linalg.generic that every
operand addresses as one contiguous run, so that the loops convert-linalg-to-loops
builds are few and long.

Expects: linalg.generic ops on memrefs with the default (row-major, contiguous) layout,
e.g. in the kernels frame-outline-kernels makes, after frame-gemm and frame-tile-matmul
have taken the contractions.

Does: two neighbouring loop dims d and d+1 merge when they have the same iterator type
and every indexing map either uses neither or has them as neighbouring plain results
(`.., d, d+1, ..`); chains of such pairs merge into one dim. Each operand is
`memref.collapse_shape`d along the same runs, the maps and iterator types are rewritten
over the merged dims, and the body is kept (a body that reads `linalg.index` is left
alone). A kernel's `frame.parallel_dims` (frame-outline-kernels) is recomputed for the
new loops.

Why: an image's rows are short (16, 8, 4 floats in a ResNet's deeper layers), and LLVM
unrolls a short constant innermost loop completely, then vectorizes the next loop out
at the row stride -- gathers, or single-element inserts where gathers are off. Batch
norm's per-channel sums over [N, C, H, W] loop (c, n, h, w); merged, (c, n, h*w)
keeps one long contiguous innermost loop (the reduction LLVM may vectorize,
`frame_norm._accumulate`), and an elementwise op over [N, C, H, W] becomes one loop.

Guarantees: every iteration runs the same body on the same elements in the same order
(row-major over the merged dims is row-major over the original ones), so results are
bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    MemRefType,
    NoneAttr,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.passes.common import collapse_shape
from frame_mlir.passes.frame_parallelize import PARALLEL_DIMS_ATTR, leading_parallel_dims


def _mergeable(op: linalg.GenericOp, d: int) -> bool:
    """Loop dims d and d + 1 of `op` can be one dim (see the module docstring)."""
    its = op.iterator_types.data
    if its[d].data != its[d + 1].data:
        return False
    for m in (a.data for a in op.indexing_maps.data):
        pos: dict[int, int] = {}
        for r, e in enumerate(m.results):
            if isinstance(e, AffineDimExpr):
                pos.setdefault(e.position, r)
            elif e.used_dims() & {d, d + 1}:
                return False
        has = (d in pos, d + 1 in pos)
        if has == (False, False):
            continue
        if has != (True, True) or pos[d + 1] != pos[d] + 1:
            return False
        if sum(isinstance(e, AffineDimExpr) and e.position in (d, d + 1)
               for e in m.results) != 2:
            return False  # a dim used twice (a diagonal)
    return True


def _contiguous(value: SSAValue) -> bool:
    typ = value.type
    return isinstance(typ, MemRefType) and isinstance(typ.layout, NoneAttr) and \
        all(s >= 0 for s in typ.get_shape())


def merge_groups(op: linalg.GenericOp) -> list[list[int]] | None:
    """`op`'s loop dims as runs of neighbours that merge, or None if nothing merges."""
    if any(isinstance(o, linalg.IndexOp) for o in op.body.walk()):
        return None
    if not all(_contiguous(v) for v in (*op.inputs, *op.outputs)):
        return None
    n = len(op.iterator_types.data)
    groups: list[list[int]] = [[0]] if n else []
    for d in range(n - 1):
        if _mergeable(op, d):
            groups[-1].append(d + 1)
        else:
            groups.append([d + 1])
    return groups if len(groups) < n else None


def collapse(op: linalg.GenericOp, groups: list[list[int]]) -> linalg.GenericOp:
    """Replace `op` by the same generic over the merged dims `groups`."""
    new_dim = {d: g for g, group in enumerate(groups) for d in group}
    renumber = [AffineExpr.dimension(new_dim[d]) for d in sorted(new_dim)]
    at = InsertPoint.before(op)
    operands: list[SSAValue] = []
    maps: list[AffineMapAttr] = []
    for value, attr in zip((*op.inputs, *op.outputs), op.indexing_maps.data, strict=True):
        m = attr.data
        runs: list[list[int]] = []
        results: list[AffineExpr] = []
        for r, e in enumerate(m.results):
            if isinstance(e, AffineDimExpr) and runs and \
                    isinstance(m.results[r - 1], AffineDimExpr) and \
                    new_dim[m.results[r - 1].position] == new_dim[e.position]:
                runs[-1].append(r)  # the rest of a merged run
                continue
            runs.append([r])
            # Other expressions use only unmerged dims (`_mergeable`): renumbered.
            results.append(e.replace_dims_and_symbols(renumber, []))
        if any(len(run) > 1 for run in runs):
            folded = collapse_shape(value, runs)
            Rewriter.insert_op(folded, at)
            value = folded.results[0]
        operands.append(value)
        maps.append(AffineMapAttr(AffineMap(len(groups), 0, tuple(results))))
    n_in = len(op.inputs)
    its = op.iterator_types.data
    body = Rewriter.move_region_contents_to_new_regions(op.body)
    new = linalg.GenericOp(operands[:n_in], operands[n_in:], body, ArrayAttr(maps),
                           ArrayAttr([its[g[0]] for g in groups]), [], op.doc,
                           op.library_call)
    new.attributes.update(op.attributes)
    Rewriter.replace_op(op, new)
    return new


@dataclass(frozen=True)
class FrameCollapseDims(ModulePass):
    """Merge loop dims that every operand of a linalg.generic addresses contiguously
    (see the module docstring)."""

    name = "frame-collapse-dims"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            generics = [g for g in fn.walk() if isinstance(g, linalg.GenericOp)]
            changed = None
            for g in generics:
                groups = merge_groups(g)
                if groups is not None:
                    changed = collapse(g, groups)
            if changed is not None and PARALLEL_DIMS_ATTR in fn.attributes:
                # It describes the kernel's one linalg op: recount that op's loops.
                ops = [o for o in fn.walk() if isinstance(o, linalg.GenericOp | linalg.FillOp)]
                sizes = leading_parallel_dims(changed) if ops == [changed] else []
                if sizes:
                    fn.attributes[PARALLEL_DIMS_ATTR] = DenseArrayBase.from_list(i64, sizes)
                else:
                    fn.attributes.pop(PARALLEL_DIMS_ATTR)

