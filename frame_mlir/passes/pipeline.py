"""The whole pipeline, readable in one place: named stages, in order.

Each stage name is a stop/dump point (`frame-run --emit-stage=<stage>`,
`--print-ir-after-all`). The module is verified after every pass; a verifier
failure names the pass that broke the IR.

    frame       frontend output (nn Modules -> frame ops), shapes inferred
    autodiff    + `@f_grad`: loss and parameter gradients (frame-autodiff)
    sgd         `@f_train_step`: SGD fused, parameters updated in place
                (frame-sgd-fuse), then cse / dce; for data-parallel training
                `@f_dp_grad` and `@f_dp_update` instead (frame-dp-split)
    linalg      linalg on tensors (convert-frame-to-linalg), elementwise chains
                merged into one generic (frame-fuse-elementwise)
    bufferized  memrefs over one statically planned arena (frame-bufferize)
    loops       scf.for / arith / memref (convert-linalg-to-loops), scans as
                loops of calls of their step function (frame-lower-scan), bf16
                conversions as integer ops (arith-expand-bf16)
                + `@f_train_loop`: N train steps in one call (frame-train-loop)
    llvm        llvm dialect (convert-*-to-llvm, see lower_to_llvm.py)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import (
    arith,
    builtin,
    cf,
    func,
    gpu,
    linalg,
    llvm,
    math,
    memref,
    scf,
    tensor,
    vector,
)
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.convert_linalg_to_loops import ConvertLinalgToLoopsPass
from xdsl.transforms.dead_code_elimination import DeadCodeElimination
from xdsl.transforms.lower_affine import LowerAffinePass
from xdsl.utils.exceptions import DiagnosticException, PassFailedException

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects.frame import Frame
from frame_mlir.dialects.frame_rt import FrameRt
from frame_mlir.passes.arith_expand import ArithExpand
from frame_mlir.passes.arith_expand_bf16 import ArithExpandBf16
from frame_mlir.passes.convert_frame_to_linalg import ConvertFrameToLinalg
from frame_mlir.passes.frame_autodiff import FrameAutodiff
from frame_mlir.passes.frame_bufferize import FrameBufferize
from frame_mlir.passes.frame_collapse_dims import FrameCollapseDims
from frame_mlir.passes.frame_dp_split import FrameDpSplit
from frame_mlir.passes.frame_fuse_elementwise import FrameFuseElementwise
from frame_mlir.passes.frame_fuse_gemm_epilogue import FrameFuseGemmEpilogue
from frame_mlir.passes.frame_gemm import FrameGemm
from frame_mlir.passes.frame_lower_scan import FrameLowerScan
from frame_mlir.passes.frame_outline_kernels import FrameOutlineKernels
from frame_mlir.passes.frame_parallelize import FrameParallelize
from frame_mlir.passes.frame_sgd_fuse import FrameSgdFuse
from frame_mlir.passes.frame_shape_inference import FrameShapeInference
from frame_mlir.passes.frame_tile_matmul import FrameTileMatmul
from frame_mlir.passes.frame_train_loop import FrameTrainLoop
from frame_mlir.passes.lower_to_llvm import LOOPS_TO_LLVM
from frame_mlir.passes.stages import STAGE_NAMES


def make_context() -> Context:
    """A context with every dialect the pipeline produces or consumes."""
    ctx = Context(allow_unregistered=False)
    for d in (builtin.Builtin, func.Func, Frame, arith.Arith, linalg.Linalg, tensor.Tensor,
              memref.MemRef, scf.Scf, cf.Cf, math.Math, llvm.LLVM, vector.Vector, FrameRt,
              gpu.GPU):
        ctx.load_dialect(d)
    return ctx


def vector_lanes(options: CompileOptions | None = None) -> int:
    """The f32 lanes of the vectors generated kernels use: `options.f32_lanes`, else the
    host's widest (16 with AVX-512). The one place the width is chosen: `frame-gemm` gets
    it, and the emitted C++ program's build asks its compiler to prefer vectors of that
    width (`backend/cpp/cmake.py`), so the two cannot disagree."""
    if options is not None and options.f32_lanes:
        return options.f32_lanes
    from frame_mlir.backend.host import host_info

    return host_info().f32_lanes


def gemm_pass(options: CompileOptions) -> FrameGemm:
    """`frame-gemm` with block sizes and vector width for the host (or `options`)."""
    from frame_mlir.backend.host import host_info

    host = host_info()
    return FrameGemm(lanes=vector_lanes(options),
                     acc=host.vector_registers * 3 // 4,
                     l1=options.l1_bytes or host.l1d_bytes,
                     l2=options.l2_bytes or host.l2_bytes, threads=options.threads,
                     min_flops=_gemm_min_flops(options))


def _gemm_min_flops(options: CompileOptions) -> int:
    if not options.gemm:
        return 2**62
    return FrameGemm.min_flops if options.gemm_min_flops is None else options.gemm_min_flops


@dataclass(frozen=True)
class Stage:
    """A named point of the pipeline and the passes that lead to it."""

    name: str
    passes: tuple[ModulePass, ...]
    description: str


def stages(lr: float | None, options: CompileOptions | None = None) -> list[Stage]:
    """The pipeline as named stages in order.

    With `lr=None` no SGD is fused: `@f_grad` stays a function returning the loss
    and the gradients (what gradient checks and the Python API compile).
    """
    options = (options or CompileOptions()).resolved()
    assert options.threads is not None
    sgd: tuple[ModulePass, ...] = ()
    if lr is not None:
        sgd = ((FrameSgdFuse(lr=lr),) if options.data_parallel is None
               else (FrameDpSplit(lr=lr, ranks=options.data_parallel),))
    return [
        Stage("frame", (FrameShapeInference(),), "frame IR with static shapes"),
        Stage("autodiff", (FrameAutodiff(),), "+ loss and parameter gradients"),
        Stage("sgd", (*sgd, CommonSubexpressionElimination(), DeadCodeElimination()),
              "SGD fused into the train step"),
        Stage("linalg", (ConvertFrameToLinalg(),
                         *((FrameFuseElementwise(),) if options.fuse_elementwise else ())),
              "linalg on tensors"),
        Stage("bufferized", (FrameBufferize(),), "memrefs over a static arena"),
        Stage("loops", (FrameOutlineKernels(),
                        *((FrameFuseGemmEpilogue(min_flops=_gemm_min_flops(options)),)
                          if options.fuse_epilogue else ()),
                        gemm_pass(options), FrameTileMatmul(),
                        # after the passes that grow arenas (frame-gemm's scratch)
                        FrameLowerScan(),
                        FrameCollapseDims(),
                        ConvertLinalgToLoopsPass(),
                        LowerAffinePass(), ArithExpand(),
                        # bf16 as integer ops on its bits, for both backends alike
                        ArithExpandBf16(),
                        FrameParallelize(threads=options.threads), FrameTrainLoop()),
              "scf loops, one kernel function per linalg op"),
        Stage("llvm", tuple(LOOPS_TO_LLVM), "llvm dialect"),
    ]


assert tuple(s.name for s in stages(0.1, CompileOptions(threads=1))) == STAGE_NAMES, "update passes/stages.py"


class PipelineError(Exception):
    """A pass failed, or left IR that does not verify; `pass_name` says which."""

    def __init__(self, pass_name: str, message: str):
        super().__init__(f"{pass_name}: {message}")
        self.pass_name = pass_name


def run_passes(ctx: Context, module: ModuleOp, passes: Sequence[ModulePass],
               after_pass: Callable[[ModulePass, ModuleOp], None] | None = None) -> None:
    """Apply `passes` in order, verifying after each one.

    A pass with a `has_work(module)` method that returns False is skipped: the module
    it would leave unchanged is not verified again (verification is ~40% of a compile;
    the IR was verified after the pass before)."""
    for p in passes:
        has_work = getattr(p, "has_work", None)
        if has_work is not None and not has_work(module):
            if after_pass is not None:
                after_pass(p, module)
            continue
        try:
            p.apply(ctx, module)
        except (PassFailedException, DiagnosticException) as err:
            raise PipelineError(p.name, str(err)) from None
        try:
            module.verify()
        except DiagnosticException as err:
            raise PipelineError(p.name, f"produced invalid IR: {err}") from None
        if after_pass is not None:
            after_pass(p, module)


def stage_passes(lr: float | None, options: CompileOptions | None = None, *,
                 start_after: str | None = None, stop_after: str | None = None
                 ) -> list[ModulePass]:
    """The passes of the stages after `start_after` (default: from the beginning) up to
    and including `stop_after` (default: to the end), in order.

    The one list both `run_pipeline` (frame-run, frame-dslc, the Python API) and
    frame-opt's named pipelines (`-p frame-to-llvm`, see `passes/registry.py`) run, so
    a pipeline in a lit test is the driver's pipeline, not a copy of it.
    """
    for name in (stop_after, start_after):
        if name is not None and name not in STAGE_NAMES:
            raise ValueError(f"unknown stage '{name}' (expected one of "
                             f"{', '.join(STAGE_NAMES)})")
    if (start_after is not None and stop_after is not None
            and STAGE_NAMES.index(start_after) >= STAGE_NAMES.index(stop_after)):
        raise ValueError(f"empty stage range: start after '{start_after}', stop after "
                         f"'{stop_after}' (expected a stage after the start)")
    passes: list[ModulePass] = []
    started = start_after is None
    for stage in stages(lr, options):
        if started:
            passes.extend(stage.passes)
        if stage.name == start_after:
            started = True
        if stage.name == stop_after:
            break
    return passes


def run_pipeline(module: ModuleOp, lr: float | None, *, stop_after: str | None = None,
                 start_after: str | None = None,
                 after_pass: Callable[[ModulePass, ModuleOp], None] | None = None,
                 ctx: Context | None = None, options: CompileOptions | None = None
                 ) -> ModuleOp:
    """Run the stages on `module` in place, from after `start_after` (default: the
    beginning) up to and including `stop_after` (default: the end)."""
    passes = stage_passes(lr, options, start_after=start_after, stop_after=stop_after)
    run_passes(ctx or make_context(), module, passes, after_pass)
    return module
