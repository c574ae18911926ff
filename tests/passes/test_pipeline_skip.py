"""run_passes skips a pass whose `has_work` says it has nothing to do (no apply, no
re-verification), and runs and verifies it otherwise."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass

from frame_mlir.compile_options import CompileOptions
from frame_mlir.passes.arith_expand_bf16 import ArithExpandBf16
from frame_mlir.passes.frame_lower_scan import FrameLowerScan
from frame_mlir.passes.frame_parallelize import FrameParallelize
from frame_mlir.passes.pipeline import PipelineError, make_context, run_passes, stages


@dataclass(frozen=True)
class _Breaks(ModulePass):
    """Leaves IR that does not verify (an empty function body)."""

    name = "test-breaks"
    work: bool = True

    def has_work(self, op: builtin.ModuleOp) -> bool:
        return self.work

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        from xdsl.dialects import func
        from xdsl.ir import Block, Region

        op.body.block.add_op(func.FuncOp("f", ((), ()), Region(Block())))


def test_a_pass_without_work_is_neither_applied_nor_verified() -> None:
    seen: list[str] = []
    module = builtin.ModuleOp([])
    run_passes(make_context(), module, [_Breaks(work=False)],
               lambda p, m: seen.append(p.name))
    assert seen == ["test-breaks"] and not list(module.ops)  # dumps still see it
    with pytest.raises(PipelineError, match="test-breaks: produced invalid IR"):
        run_passes(make_context(), builtin.ModuleOp([]), [_Breaks(work=True)])


def test_the_skippable_passes_say_when_they_have_work() -> None:
    empty = builtin.ModuleOp([])
    assert not ArithExpandBf16().has_work(empty)
    assert not FrameLowerScan().has_work(empty)
    assert not FrameParallelize(threads=1).has_work(empty)
    assert FrameParallelize(threads=2).has_work(empty)
    # and they are in the pipeline the compiler runs
    names = {p.name for s in stages(0.1, CompileOptions(threads=1)) for p in s.passes}
    assert {"arith-expand-bf16", "frame-lower-scan", "frame-parallelize"} <= names
