"""The `frame_rt` dialect: what generated code asks of the frame runtime.

One op today, `frame_rt.parallel_for`: run a task function over a range of iterations,
split into contiguous chunks over the runtime's thread pool. `frame-parallelize`
creates it from loops whose iterations are independent; `convert-frame-rt-to-llvm`
lowers it to a call of the runtime (`frame_mlir/backend/llvm/parallel_runtime.py`),
and the C++ emitter to the emitted program's `std::thread` pool.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    FlatSymbolRefAttrConstr,
    IndexType,
    IntegerAttr,
    SymbolRefAttr,
)
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class ParallelForOp(IRDLOperation):
    """Run `@task(args..., lo, hi)` on chunks `[lo, hi)` that cover `[lb, ub)`.

        frame_rt.parallel_for @k__task0(%a, %b) range(%c0, %c784) threads 2
            : memref<784x256xf32>, memref<784x256xf32>

    `@task` is a function taking `args` followed by two `index` values and returning
    nothing. The range is cut into at most `threads` contiguous chunks of (nearly)
    equal length, in order; each chunk is one call of the task, on any thread of the
    pool, the calls possibly running at the same time. The op returns when every
    chunk is done. The task must therefore only touch memory that no other chunk
    touches, except memory they all only read: then the result does not depend on
    the number of threads, nor on which thread ran which chunk. With `threads = 1`
    (or a range of one iteration) the task is called once, inline, with no pool.
    """

    name = "frame_rt.parallel_for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    args = var_operand_def()
    task = prop_def(FlatSymbolRefAttrConstr)
    threads = prop_def(IntegerAttr[I64])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$task `(` $args `)` `range` `(` $lb `,` $ub `)` `threads` $threads attr-dict"
        " (`:` type($args)^)?"
    )

    def __init__(self, task: str | SymbolRefAttr, args: Sequence[SSAValue], lb: SSAValue,
                 ub: SSAValue, threads: int):
        super().__init__(
            operands=[lb, ub, args],
            properties={
                "task": task if isinstance(task, SymbolRefAttr) else SymbolRefAttr(task),
                "threads": IntegerAttr(threads, 64),
            },
        )

    def verify_(self) -> None:
        threads = self.threads.value.data
        if threads < 1:
            raise VerifyException(f"{self.name}: threads must be at least 1, found {threads}")
        try:
            callee = SymbolTable.lookup_symbol(self, self.task)
        except ValueError:
            return  # not inside a module (a detached op): nothing to check against
        if callee is None:
            raise VerifyException(
                f"{self.name}: no task function {self.task} in the enclosing module")
        if not isinstance(callee, func.FuncOp):
            return  # lowered already (an llvm.func): its C signature is the lowering's
        expected = [*(a.type for a in self.args), IndexType(), IndexType()]
        found = list(callee.function_type.inputs.data)
        if found != expected or callee.function_type.outputs.data:
            shown = ", ".join(str(t) for t in expected)
            raise VerifyException(
                f"{self.name}: task {self.task} must take ({shown}) and return nothing, "
                f"found {callee.function_type}")


FrameRt = Dialect("frame_rt", [ParallelForOp], [])
