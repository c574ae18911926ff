"""The loop-level IR -> llvm dialect pipeline, verified after every pass.

scf.for / arith / math / memref / vector / func / frame_rt   (loop-level IR)
  convert-frame-rt-to-llvm     parallel_for -> a call of the runtime's thread pool
  convert-scf-to-cf            loops -> cf.br / cf.cond_br with block arguments
  convert-math-to-llvm         math -> llvm.intr.* / llvm.call_intrinsic
  convert-vector-to-llvm       vector load/store/broadcast/fma -> llvm (element-aligned)
  convert-arith-to-llvm        arith -> llvm, index -> i64
  convert-memref-to-llvm       load/store/view -> getelementptr inbounds + load/store
  convert-cf-to-llvm           cf -> llvm.br / llvm.cond_br (block args become phis)
  convert-func-to-llvm         func -> llvm.func (bare pointers, noalias, void)
  reconcile-unrealized-casts   drop the casts that bridged the passes
  dce
  llvm-legality-check          fail on any op that is not in the llvm dialect
llvm dialect only -> frame_mlir.backend.llvm.translate -> llvmlite

The lowering is a full conversion, as MLIR's `applyFullConversion`: each
`convert-<dialect>-to-llvm` pass fails on an op of its dialect it could not lower, and
`llvm-legality-check` on an op of any other dialect (one no pass lowers, or left by a
pass that is not a full conversion). The failure names the op and its function (and,
in frame-opt, the op's `file:line:col`), inside the pipeline -- never later in the
translation to LLVM IR or in the JIT.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.dead_code_elimination import DeadCodeElimination
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from frame_mlir.passes.convert_arith_to_llvm import ConvertArithToLLVMPass
from frame_mlir.passes.convert_cf_to_llvm import ConvertCfToLLVMPass
from frame_mlir.passes.convert_frame_rt_to_llvm import ConvertFrameRtToLLVMPass
from frame_mlir.passes.convert_func_to_llvm import ConvertFuncToLLVMPass
from frame_mlir.passes.convert_math_to_llvm import ConvertMathToLLVMPass
from frame_mlir.passes.convert_memref_to_llvm import ConvertMemrefToLLVMPass
from frame_mlir.passes.convert_vector_to_llvm import ConvertVectorToLLVMPass
from frame_mlir.passes.llvm_common import not_lowered


@dataclass(frozen=True)
class LLVMLegalityCheck(ModulePass):
    """Fail on the first op that is not in the llvm dialect: the end of the lowering.

    Expects: the module after the `convert-*-to-llvm` passes, the reconciliation of
    their casts and dce. Guarantees: only `llvm.*` ops inside the `builtin.module`
    (what `backend.llvm.translate` can translate); otherwise fails naming the first
    leftover op in IR order and where it is, and how many others are left. Changes
    nothing.
    """

    name = "llvm-legality-check"

    @staticmethod
    def _leftovers(module: ModuleOp) -> list[Operation]:
        return [o for o in module.walk() if o is not module and o.dialect_name() != "llvm"]

    def has_work(self, op: ModuleOp) -> bool:
        """Whether anything is left to report. A legal module is the common case: the
        pipeline then skips the pass, and the verification of an unchanged module."""
        return bool(self._leftovers(op))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        leftovers = self._leftovers(op)
        if leftovers:
            first = leftovers[0]
            more = len(leftovers) - 1
            others = f"; {more} more op{'s' if more != 1 else ''} left" if more else ""
            raise not_lowered(self.name, first,
                              f"no pass of the lowering converts it{others}")


LOOPS_TO_LLVM: list[ModulePass] = [
    # frame_rt first: it makes func.call / func.func (task trampolines) for the func
    # lowering, and bridges its operands with casts like everyone.
    ConvertFrameRtToLLVMPass(),
    ConvertScfToCf(),
    # math first: its lowerings must not leave arith ops behind for a later pass.
    ConvertMathToLLVMPass(),
    # vector: its memref and index operands are bridged by casts like everyone's, so
    # any place before reconcile works; it goes before memref, as in MLIR's pipelines.
    ConvertVectorToLLVMPass(),
    ConvertArithToLLVMPass(),
    ConvertMemrefToLLVMPass(),
    ConvertCfToLLVMPass(),
    ConvertFuncToLLVMPass(),
    ReconcileUnrealizedCastsPass(),
    DeadCodeElimination(),
    # last: a full conversion, reported here rather than by the translation or the JIT
    LLVMLegalityCheck(),
]
"""The passes from loop-level IR to the llvm dialect, in order."""


class LoweringError(Exception):
    """A pass of the LLVM lowering failed or produced invalid IR; `pass_name` names it
    (`llvm-legality-check` for ops of a dialect no pass converts)."""

    def __init__(self, pass_name: str, message: str):
        super().__init__(f"{pass_name}: {message}")
        self.pass_name = pass_name


def lower_loops_to_llvm(ctx: Context, module: ModuleOp, *, verify_each: bool = True) -> None:
    """Lower loop-level IR in `module` to the llvm dialect, in place.

    Verifies the module after every pass of `LOOPS_TO_LLVM` (only after the last one
    with `verify_each=False`: verification is most of the time on large modules).
    Raises LoweringError naming the pass that failed -- a conversion that could not
    lower an op of its dialect, or `llvm-legality-check` for an op of another one -- or
    that produced invalid IR.
    """
    for index, lowering_pass in enumerate(LOOPS_TO_LLVM):
        try:
            lowering_pass.apply(ctx, module)
        except Exception as err:
            raise LoweringError(lowering_pass.name, f"pass failed: {err}") from err
        if not verify_each and index != len(LOOPS_TO_LLVM) - 1:
            continue
        try:
            module.verify()
        except Exception as err:
            raise LoweringError(lowering_pass.name, f"produced invalid IR: {err}") from err
