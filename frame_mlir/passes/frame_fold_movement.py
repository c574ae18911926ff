"""frame-fold-movement: contractions read through the transposes and reshapes that feed
them, instead of reading copies.

Expects: linalg on tensors (convert-frame-to-linalg output), before
frame-fuse-elementwise (which would merge a reshape into the op producing its input).

Does: an attention layer splits heads as `transpose(reshape(q, [B, S, H, Dh]), (0, 2,
1, 3))` and the products `Q·Kᵀ`, `A·V` and their gradients read the result: two copies
of each operand before a GEMM that could address it in place. For each f32 contraction
(a `linalg.generic` with a reduction loop whose body is `fma(a, b, c)`, of at least
`min_flops` multiply-adds: what frame-gemm runs as a packed GEMM) and each of its two
inputs:

  * an input made by a transpose -- a copy generic (body `yield %in`, all loops
    parallel, output map the identity) whose input map is a permutation -- is read
    from the transpose's input, through the permutation composed with the
    contraction's map;
  * an input made by a row-major reshape -- a copy generic whose input map is the
    identity and whose output map is `convert-frame-to-linalg`'s delinearisation
    (`frame_movement.reshape_out_map`) -- is read from the reshape's input through
    the same index arithmetic the other way: with `L` the row-major linear index of
    the element in the reshape's result (a linear function of the loops), result r
    of the map is `(L floordiv stride_r) mod size_r` over the input's shape. That map
    has floordiv and mod, and frame-gemm addresses it as the flat offset `L`
    (`frame_gemm.operand_offsets`);

repeated while an input changes (a reshape behind a transpose folds too). A fold is
made only if every loop of the contraction stays a bare dim of one of its maps (linalg
reads the loop bounds off those: `Q·Kᵀ` reading both heads through reshapes would lose
the head dim's); a reshape folds only if it can fold into every contraction that reads
it (directly or through transposes), so that its copy goes. Copies left without uses
are erased, with their `tensor.empty` destinations.

Why: the copies were ~2 % of a transformer block's step, and a bias add feeding a
reshape could not join the projection GEMM's epilogue (`frame-fuse-gemm-epilogue`
takes elementwise consumers of C's own shape).

Guarantees: every contraction reads the same elements in the same order, so results
are bit-identical. Other ops, and contractions under `min_flops` (they run as plain
loops, where a delinearised index would cost more than the copy), are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import builtin, func, tensor
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, MemRefType, TensorType, f32
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from frame_mlir.dialects.frame_movement import delinearized, linear_index, reshape_out_map
from frame_mlir.dialects.linalg_utils import PAR
from frame_mlir.passes.frame_gemm import is_fma_body, operand_offsets


def _copy(op: Operation | None) -> linalg.GenericOp | None:
    """`op` if it is a copy generic on tensors: one input, one output and result, every
    loop parallel, a body that yields its input."""
    if not isinstance(op, linalg.GenericOp) or len(op.inputs) != 1 or \
            len(op.outputs) != 1 or len(op.results) != 1 or \
            not isinstance(op.results[0].type, TensorType) or \
            not isinstance(op.inputs[0].type, TensorType) or \
            any(it != PAR for it in op.iterator_types.data):
        return None
    body = list(op.body.block.ops)
    if len(body) != 1 or not isinstance(body[0], linalg.YieldOp) or \
            list(body[0].operands) != [op.body.block.args[0]]:
        return None
    return op


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # type: ignore[attr-defined]


def _transpose_map(p: linalg.GenericOp) -> AffineMap | None:
    """The permutation through which copy `p` reads its input, if `p` is a transpose
    (its output written through the identity)."""
    m_in, m_out = (a.data for a in p.indexing_maps.data)
    rank = len(_shape(p.outputs[0]))
    if m_out != AffineMap.identity(rank) or m_in.num_dims != rank or \
            len(m_in.results) != rank or \
            sorted(e.position for e in m_in.results if isinstance(e, AffineDimExpr)) != \
            list(range(rank)):
        return None
    return m_in


def _is_reshape(p: linalg.GenericOp) -> bool:
    """Whether copy `p` is a row-major reshape as convert-frame-to-linalg lowers one."""
    src, dst = _shape(p.inputs[0]), _shape(p.outputs[0])
    if prod(src) != prod(dst) or not prod(dst):
        return False
    m_in, m_out = (a.data for a in p.indexing_maps.data)
    return m_in == AffineMap.identity(len(src)) and m_out == reshape_out_map(src, dst)


def _contraction(op: Operation, min_flops: int) -> bool:
    """An f32 multiply-add contraction frame-gemm would take (by its size: at least
    `min_flops` multiply-adds, as frame-gemm counts them)."""
    if not isinstance(op, linalg.GenericOp) or not is_fma_body(op) or \
            len(op.results) != 1 or all(it == PAR for it in op.iterator_types.data):
        return False
    if any(not isinstance(v.type, TensorType) or v.type.element_type != f32
           for v in (*op.inputs, *op.outputs)):
        return False
    try:
        sizes = op.get_static_loop_ranges()
    except Exception:
        return False
    # frame-gemm compares its `min_flops` with the multiply-adds (`m * n * k`)
    return prod(sizes) >= min_flops


def _bounded(maps: list[AffineMap]) -> bool:
    """Every loop dim is a bare result of some map (linalg infers the loop bounds)."""
    n = maps[0].num_dims
    return AffineMap(n, 0, tuple(e for m in maps for e in m.results)
                     ).inverse_permutation() is not None


def _fold_once(op: linalg.GenericOp, i: int, reshapes: bool) -> tuple[SSAValue, AffineMap] | None:
    """Input `i` of contraction `op` read past the copy that makes it: (new value, new
    map), or None if it is not a transpose (or, with `reshapes`, a reshape) or the
    fold would unbind a loop."""
    v = op.inputs[i]
    p = _copy(v.owner) if isinstance(v.owner, Operation) else None
    if p is None:
        return None
    maps = [a.data for a in op.indexing_maps.data]
    m = maps[i]
    perm = _transpose_map(p)
    if perm is not None:
        new = perm.compose(m)
    elif reshapes and _is_reshape(p):
        new = AffineMap(m.num_dims, 0, delinearized(linear_index(m.results, _shape(v)),
                                                    _shape(p.inputs[0])))
    else:
        return None
    maps[i] = new
    if not _bounded(maps):
        return None
    # frame-gemm must still see the operand's flat offset as a linear function of the
    # loops (a reshape read through another reshape's digits would not be).
    src = p.inputs[0].type
    assert isinstance(src, TensorType)
    if operand_offsets(new, MemRefType(src.element_type, src.get_shape()),
                op.get_static_loop_ranges()) is None:
        return None
    return p.inputs[0], new


def _set_input(op: linalg.GenericOp, i: int, value: SSAValue, m: AffineMap) -> None:
    op.operands[i] = value
    maps = list(op.indexing_maps.data)
    maps[i] = AffineMapAttr(m)
    op.indexing_maps = ArrayAttr(maps)


def _erase_dead_copies(block: Block) -> None:
    for o in reversed(list(block.ops)):
        if _copy(o) is not None and not o.results[0].uses:
            dest = o.outputs[0]
            Rewriter.erase_op(o)
            if isinstance(dest.owner, tensor.EmptyOp) and not dest.uses:
                Rewriter.erase_op(dest.owner)


@dataclass(frozen=True)
class FrameFoldMovement(ModulePass):
    """Fold transposes and reshapes into the contractions that read them."""

    name = "frame-fold-movement"

    #: Contractions of fewer multiply-adds are left alone (frame-gemm's `min_flops`).
    min_flops: int = 0

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                for block in fn.body.blocks:
                    self._fold_block(block)

    def _fold_block(self, block: Block) -> None:
        cons = [o for o in block.ops if _contraction(o, self.min_flops)]
        if not cons:
            return
        # Transposes first: a permutation never unbinds a loop.
        for c in cons:
            assert isinstance(c, linalg.GenericOp)
            for i in range(2):
                while (f := _fold_once(c, i, reshapes=False)) is not None:
                    _set_input(c, i, *f)
        _erase_dead_copies(block)
        # Then each reshape, in program order, where every contraction reading it can
        # read through it: otherwise its copy stays, and folding buys nothing.
        for p in list(block.ops):
            if _copy(p) is None or not _is_reshape(p):  # type: ignore[arg-type]
                continue
            assert isinstance(p, linalg.GenericOp)
            uses = [(u.operation, u.index) for u in p.results[0].uses]
            if not uses or any(o not in cons or idx >= 2 for o, idx in uses):
                continue
            if all(_fold_once(o, idx, reshapes=True) is not None  # type: ignore[arg-type]
                   for o, idx in uses):
                # One contraction may read the reshape twice (x·xᵀ): each fold is
                # checked again after the one before.
                for o, idx in uses:
                    f = _fold_once(o, idx, reshapes=True)  # type: ignore[arg-type]
                    if f is not None:
                        _set_input(o, idx, *f)  # type: ignore[arg-type]
        _erase_dead_copies(block)
