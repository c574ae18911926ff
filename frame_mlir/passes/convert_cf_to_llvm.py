"""convert-cf-to-llvm: lower `cf.br`/`cf.cond_br` to `llvm.br`/`llvm.cond_br`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from frame_mlir.passes.llvm_common import (
    coerce,
    erase_dead_casts,
    is_llvm_type,
    op_order,
    require_lowered,
    retype_block_args,
    rewrite_ops,
)

_BRANCHES = (cf.BranchOp, cf.ConditionalBranchOp, llvm.BrOp, llvm.CondBrOp)


def _operands_for(
    rewriter: PatternRewriter, values: tuple[SSAValue, ...] | list[SSAValue], dest: Block
) -> list[SSAValue]:
    """Branch operands converted to the (already converted) successor argument types."""
    return [coerce(rewriter, v, arg.type) for v, arg in zip(values, dest.args, strict=True)]


class LowerBranch(RewritePattern):
    """`cf.br ^bb(%v : index)` -> `llvm.br ^bb(%v' : i64)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /) -> None:
        args = _operands_for(rewriter, op.arguments, op.successor)
        rewriter.replace(op, [llvm.BrOp(op.successor, *args)])


class LowerCondBranch(RewritePattern):
    """`cf.cond_br` -> `llvm.cond_br`, with converted successor operands."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /) -> None:
        then_args = _operands_for(rewriter, op.then_arguments, op.then_block)
        else_args = _operands_for(rewriter, op.else_arguments, op.else_block)
        new = llvm.CondBrOp(op.cond, op.then_block, then_args, op.else_block, else_args)
        rewriter.replace(op, [new])


def _retype_successor_args(module: ModuleOp) -> None:
    """Convert the argument types of blocks reached only by branches this pass lowers.

    Entry blocks are left to convert-func-to-llvm (they hold the function signature);
    blocks with another kind of predecessor are left alone, and the branches into them
    pass values of the unconverted types.
    """
    for op in module.walk():
        for region in op.regions:
            for block in list(region.blocks)[1:]:
                if all(is_llvm_type(a.type) for a in block.args):
                    continue
                preds = block.predecessors()
                if preds and all(isinstance(p.last_op, _BRANCHES) for p in preds):
                    retype_block_args(block)


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ModulePass):
    """Lower `cf.br` and `cf.cond_br` to `llvm.br` and `llvm.cond_br`.

    Expects: unstructured control flow as produced by `convert-scf-to-cf`.
    Guarantees: the branches become llvm branches whose block arguments (which xDSL's
    llvmlite translation turns into phis) have LLVM types: non-entry block arguments
    of type index/memref are retyped to i64/!llvm.ptr, with casts back for their
    existing users. `cf.switch` and `cf.assert` fail the pass (a full conversion).
    """

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _retype_successor_args(op)
        with op_order():  # constant-time dominance checks of casts
            rewrite_ops(op, {cf.BranchOp: LowerBranch().match_and_rewrite,
                             cf.ConditionalBranchOp: LowerCondBranch().match_and_rewrite})
        erase_dead_casts(op)
        require_lowered(self.name, op, "cf")
