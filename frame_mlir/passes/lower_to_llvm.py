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
llvm dialect only -> frame_mlir.backend.llvm.translate -> llvmlite
"""

from __future__ import annotations

from collections import Counter

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
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
]
"""The passes from loop-level IR to the llvm dialect, in order."""


class LoweringError(Exception):
    """A pass of the LLVM lowering failed or produced invalid / incompletely lowered IR.

    `pass_name` names the pass (or `legality-check` for leftovers after the last one).
    """

    def __init__(self, pass_name: str, message: str):
        super().__init__(f"{pass_name}: {message}")
        self.pass_name = pass_name


def check_llvm_only(module: ModuleOp) -> None:
    """Raise LoweringError naming every op that is not in the llvm dialect."""
    leftovers = Counter(
        op.name for op in module.walk() if op is not module and not op.name.startswith("llvm.")
    )
    if leftovers:
        listed = ", ".join(f"{name} (x{n})" for name, n in sorted(leftovers.items()))
        raise LoweringError("legality-check", f"ops not lowered to the llvm dialect: {listed}")


def lower_loops_to_llvm(ctx: Context, module: ModuleOp, *, verify_each: bool = True) -> None:
    """Lower loop-level IR in `module` to the llvm dialect, in place.

    Verifies the module after every pass of `LOOPS_TO_LLVM` (only after the last one
    with `verify_each=False`: verification is most of the time on large modules) and
    checks at the end that only llvm ops remain. Raises LoweringError naming the pass
    that failed or produced invalid IR, or `legality-check` for ops left unlowered.
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
    check_llvm_only(module)
