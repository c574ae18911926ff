"""convert-vector-to-llvm: lower the `vector` ops of explicit SIMD kernels to LLVM.

Expects: `vector.load` / `vector.store` on statically shaped, identity-layout memrefs
of any rank, `vector.broadcast` of a scalar, `vector.fma`, `vector.shuffle`, all on 1-D
fixed-size
vectors (`vector<16xf32>`, ...).
Does:
- `vector.load %m[%i, %j] : memref<AxBxf32>, vector<Lxf32>` (and `vector.store`)
  -> the address of `%m[%i, %j]` as `convert-memref-to-llvm` computes it (row-major
  linear index, `getelementptr inbounds` on the element type) and one `llvm.load` /
  `llvm.store` of the whole vector: the L consecutive elements from that index on;
- `vector.broadcast %s : f32 to vector<Lxf32>` -> `llvm.insertelement` into lane 0 of
  an undef vector + `llvm.shufflevector` with an all-zero mask (the splat LLVM
  recognises; moves bits, so -0.0 and NaN payloads are kept);
- `vector.fma %a, %b, %c` -> `llvm.intr.fma` on the vector type (one rounding per
  lane; `llvm.fma.v16f32`);
- `vector.shuffle %a, %b [i, ...]` of 1-D vectors -> `llvm.shufflevector` with the same
  mask (frame-gemm's in-register transposes).
Guarantees: vector loads and stores carry the element's alignment (4 for f32), never
the vector's: memref offsets are only element-aligned (arena buffers start 64-byte
aligned, but the indices are arbitrary), and an access LLVM believed vector-aligned
would become an aligned move that faults. The `nontemporal` hint is dropped. Memref
and index operands are bridged with `unrealized_conversion_cast`, as in the other
`convert-*-to-llvm` passes. Fails (PassFailedException) on multi-dimensional or
scalable vectors and on a broadcast from a vector of another type.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, VectorType, i32
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from frame_mlir.passes.convert_memref_to_llvm import lower_load, lower_store
from frame_mlir.passes.llvm_common import (
    cast_back,
    erase_dead_casts,
    llvm_type,
    op_order,
    require_lowered,
    rewrite_ops,
    to_llvm,
)


def _lanes(op: Operation, typ: Attribute) -> int:
    """The lane count of a 1-D fixed-size vector type; PassFailedException otherwise."""
    if not isinstance(typ, VectorType) or typ.get_num_dims() != 1 or \
            typ.get_num_scalable_dims() != 0:
        raise PassFailedException(
            f"convert-vector-to-llvm: {op.name}: only 1-D fixed-size vectors are "
            f"supported, got {typ}")
    return typ.get_shape()[0]


class LowerVectorLoad(RewritePattern):
    """`vector.load` -> GEP inbounds + `llvm.load` of the vector, element alignment."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.LoadOp, rewriter: PatternRewriter, /) -> None:
        _lanes(op, op.result.type)
        lower_load(rewriter, op, op.base, list(op.indices), op.result.type)


class LowerVectorStore(RewritePattern):
    """`vector.store` -> GEP inbounds + `llvm.store` of the vector, element alignment."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.StoreOp, rewriter: PatternRewriter, /) -> None:
        _lanes(op, op.vector.type)
        lower_store(rewriter, op, op.vector, op.base, list(op.indices))


class LowerBroadcast(RewritePattern):
    """`vector.broadcast` of a scalar -> insertelement + zero-mask shufflevector."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.BroadcastOp, rewriter: PatternRewriter, /
                          ) -> None:
        lanes = _lanes(op, op.vector.type)
        if op.source.type == op.vector.type:
            rewriter.replace(op, [], [op.source])  # a broadcast to its own type
            return
        if isinstance(op.source.type, VectorType):
            raise PassFailedException(
                f"convert-vector-to-llvm: vector.broadcast from {op.source.type} to "
                f"{op.vector.type} is not supported (only from a scalar)")
        source = to_llvm(rewriter, op.source)
        typ = llvm_type(op.vector.type)
        undef = llvm.UndefOp(typ)
        lane0 = llvm.ConstantOp(IntegerAttr(0, i32), i32)
        insert = llvm.InsertElementOp(undef.res, source, lane0.result)
        splat = llvm.ShuffleVectorOp(insert.res, undef.res,
                                     DenseArrayBase.from_list(i32, [0] * lanes), typ)
        ops: list[Operation] = [undef, lane0, insert, splat]
        value = cast_back(ops, splat.res, op.vector.type)
        rewriter.replace(op, ops, [value])


class LowerFma(RewritePattern):
    """`vector.fma` -> `llvm.intr.fma` on the vector type (fused per lane)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.FMAOp, rewriter: PatternRewriter, /) -> None:
        _lanes(op, op.res.type)
        a, b, c = (to_llvm(rewriter, v) for v in (op.lhs, op.rhs, op.acc))
        rewriter.replace(op, [llvm.FMAOp(a, b, c)])


class LowerShuffle(RewritePattern):
    """`vector.shuffle` of two 1-D vectors -> `llvm.shufflevector` with the same mask."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ShuffleOp, rewriter: PatternRewriter, /) -> None:
        for v in (op.v1, op.v2, op.result):
            _lanes(op, v.type)
        a, b = (to_llvm(rewriter, v) for v in (op.v1, op.v2))
        typ = llvm_type(op.result.type)
        mask = DenseArrayBase.from_list(i32, list(op.mask.get_values()))
        shuffle = llvm.ShuffleVectorOp(a, b, mask, typ)
        ops: list[Operation] = [shuffle]
        rewriter.replace(op, ops, [cast_back(ops, shuffle.res, op.result.type)])


@dataclass(frozen=True)
class ConvertVectorToLLVMPass(ModulePass):
    """Lower vector.load / store / broadcast / fma / shuffle to the llvm dialect (see the module
    docstring for what is expected and guaranteed). Other vector ops fail the pass (a
    full conversion)."""

    name = "convert-vector-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with op_order():  # constant-time dominance checks of casts
            rewrite_ops(op, {vector.LoadOp: LowerVectorLoad().match_and_rewrite,
                             vector.StoreOp: LowerVectorStore().match_and_rewrite,
                             vector.BroadcastOp: LowerBroadcast().match_and_rewrite,
                             vector.FMAOp: LowerFma().match_and_rewrite,
                             vector.ShuffleOp: LowerShuffle().match_and_rewrite})
        erase_dead_casts(op)
        require_lowered(self.name, op, "vector")
