"""The whole pipeline, readable in one place: named stages, in order.

Each stage name is a stop/dump point (`frame-run --emit-stage=<stage>`,
`--print-ir-after-all`). The module is verified before and after the pipeline, and
after every pass with `--verify-each` / `$FRAME_VERIFY_EACH=1` (frame-opt and the
tests); either way a verifier failure names the pass that broke the IR.

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

from frame_mlir import timing
from frame_mlir.compile_options import ENV_VERIFY_EACH, CompileOptions, env_flag
from frame_mlir.dialects.frame import Frame
from frame_mlir.dialects.frame_rt import FrameRt
from frame_mlir.passes.arith_expand import ArithExpand
from frame_mlir.passes.arith_expand_bf16 import ArithExpandBf16
from frame_mlir.passes.convert_frame_to_linalg import ConvertFrameToLinalg
from frame_mlir.passes.frame_autodiff import FrameAutodiff
from frame_mlir.passes.frame_bufferize import FrameBufferize
from frame_mlir.passes.frame_collapse_dims import FrameCollapseDims
from frame_mlir.passes.frame_dp_split import FrameDpSplit
from frame_mlir.passes.frame_fold_movement import FrameFoldMovement
from frame_mlir.passes.frame_fuse_elementwise import FrameFuseElementwise
from frame_mlir.passes.frame_fuse_gemm_epilogue import FrameFuseGemmEpilogue
from frame_mlir.passes.frame_gemm import FrameGemm
from frame_mlir.passes.frame_lower_scan import FrameLowerScan
from frame_mlir.passes.frame_outline_kernels import FrameOutlineKernels
from frame_mlir.passes.frame_parallelize import FrameParallelize
from frame_mlir.passes.frame_profile_kernels import FrameProfileKernels
from frame_mlir.passes.frame_sgd_fuse import FrameSgdFuse
from frame_mlir.passes.frame_shape_inference import FrameShapeInference
from frame_mlir.passes.frame_tile_matmul import FrameTileMatmul
from frame_mlir.passes.frame_train_loop import FrameTrainLoop
from frame_mlir.passes.lower_to_llvm import LOOPS_TO_LLVM
from frame_mlir.passes.math_polynomial_approximation import MathPolynomialApproximationPass
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
    from frame_mlir.target.host import host_info

    return host_info().f32_lanes


def gemm_pass(options: CompileOptions) -> FrameGemm:
    """`frame-gemm` with block sizes and vector width for the host (or `options`)."""
    from frame_mlir.target.host import host_info

    host = host_info()
    return FrameGemm(lanes=vector_lanes(options),
                     acc=host.vector_registers * 3 // 4,
                     l1=options.l1_bytes or host.l1d_bytes,
                     l2=options.l2_bytes or host.l2_bytes,
                     l3=options.l3_bytes or host.l3_bytes, threads=options.threads,
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
                         # before fusion merges a reshape into its producer
                         *((FrameFoldMovement(min_flops=_gemm_min_flops(options)),)
                           if options.fold_movement else ()),
                         *((FrameFuseElementwise(),) if options.fuse_elementwise else ())),
              "linalg on tensors"),
        Stage("bufferized", (FrameBufferize(),), "memrefs over a static arena"),
        Stage("loops", (FrameOutlineKernels(),
                        *((FrameFuseGemmEpilogue(min_flops=_gemm_min_flops(options)),)
                          if options.fuse_epilogue else ()),
                        # the kernel calls as they stay, their contractions still
                        # linalg ops (flops)
                        *((FrameProfileKernels(),) if options.profile else ()),
                        gemm_pass(options), FrameTileMatmul(),
                        # after the passes that grow arenas (frame-gemm's scratch)
                        FrameLowerScan(),
                        FrameCollapseDims(),
                        ConvertLinalgToLoopsPass(),
                        LowerAffinePass(), ArithExpand(),
                        # exp as arithmetic, so that its loops vectorize
                        MathPolynomialApproximationPass(),
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


def verify_each_from_env() -> bool:
    """Whether `$FRAME_VERIFY_EACH` asks for verification after every pass (any value
    but empty or 0). The default for every compile but frame-opt's, which verifies
    after each pass unless told `--verify-each=0`, as mlir-opt does."""
    return env_flag(ENV_VERIFY_EACH)


def _apply(ctx: Context, module: ModuleOp, p: ModulePass, verify: bool) -> None:
    """Run one pass (timed as its name), then verify when asked; a failure of either
    raises PipelineError naming the pass."""
    with timing.section(p.name):
        try:
            p.apply(ctx, module)
        except (PassFailedException, DiagnosticException) as err:
            raise PipelineError(p.name, str(err)) from None
        if verify:
            with timing.section("verify"):
                try:
                    module.verify()
                except DiagnosticException as err:
                    raise PipelineError(p.name, f"produced invalid IR: {err}") from None


def _name_the_breaking_pass(ctx: Context, original: ModuleOp,
                            passes: Sequence[ModulePass]) -> None:
    """Run `passes` on `original` (the pipeline's input), verifying after each, and raise
    the PipelineError of the first pass whose output does not verify; return if none
    does before the pipeline fails the same way again (or not at all)."""
    with timing.section("verify each (naming the pass that broke the IR)"):
        try:
            run_passes(ctx, original, passes, verify_each=True)
        except PipelineError as err:
            if "produced invalid IR" in str(err):
                raise
        except Exception:
            pass


def run_passes(ctx: Context, module: ModuleOp, passes: Sequence[ModulePass],
               after_pass: Callable[[ModulePass, ModuleOp], None] | None = None, *,
               verify_each: bool | None = None,
               stage_of: Callable[[int], str | None] | None = None) -> None:
    """Apply `passes` in order.

    Verification, as MLIR's pass manager does it: with `verify_each` (default:
    `$FRAME_VERIFY_EACH`) the module is verified after every pass, so the pass that
    breaks the IR is named where it does; without, only the input and the output are
    (verification is ~40 % of a compile). If the output then fails to verify, the
    passes run again on a copy of the input, verifying after each, to name the pass
    that broke it: the same error as with `verify_each`, paid for only on failure.

    A pass with a `has_work(module)` method that returns False is skipped: the module
    it would leave unchanged is not verified again. `stage_of(i)` names the pipeline
    stage of the i-th pass: the timing report (`frame_mlir.timing`) groups the passes
    by stage.
    """
    if verify_each is None:
        verify_each = verify_each_from_env()
    if not passes:
        return
    with timing.section("verify input"):
        try:
            module.verify()
        except DiagnosticException as err:
            raise PipelineError("input", f"invalid IR before {passes[0].name}: {err}"
                                ) from None
    original = None if verify_each else module.clone()
    stage: str | None = None
    stage_section = None
    try:
        try:
            for i, p in enumerate(passes):
                name = stage_of(i) if stage_of is not None else None
                if name != stage:
                    if stage_section is not None:
                        stage_section.__exit__(None, None, None)
                    stage, stage_section = name, None
                    if name is not None:
                        stage_section = timing.section(name)
                        stage_section.__enter__()
                has_work = getattr(p, "has_work", None)
                if has_work is None or has_work(module):
                    _apply(ctx, module, p, verify_each)
                if after_pass is not None:
                    after_pass(p, module)
        except Exception:
            if original is not None:
                # A pass failed on IR that was perhaps broken by an earlier one, which
                # nothing verified: if so, name that one instead.
                _name_the_breaking_pass(ctx, original, passes)
            raise
    finally:
        if stage_section is not None:
            stage_section.__exit__(None, None, None)
    if verify_each:
        return
    with timing.section("verify output"):
        try:
            module.verify()
            return
        except DiagnosticException as err:
            error = err
    assert original is not None
    _name_the_breaking_pass(ctx, original, passes)
    raise PipelineError(passes[-1].name, f"produced invalid IR (found verifying the "
                        f"pipeline's output; no single pass reproduced it): {error}")


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
                 ctx: Context | None = None, options: CompileOptions | None = None,
                 verify_each: bool | None = None,
                 after_stage: Callable[[str, ModuleOp], None] | None = None) -> ModuleOp:
    """Run the stages on `module` in place, from after `start_after` (default: the
    beginning) up to and including `stop_after` (default: the end).

    Verifies the input and the output, and after every pass with `verify_each`
    (default `$FRAME_VERIFY_EACH`; see `run_passes`). `after_stage(name, module)` is
    called at the end of each stage."""
    passes = stage_passes(lr, options, start_after=start_after, stop_after=stop_after)
    # Which stage each pass belongs to (the same walk as stage_passes').
    names: list[str] = []
    started = start_after is None
    for stage in stages(lr, options):
        if started:
            names.extend(stage.name for _ in stage.passes)
        if stage.name == start_after:
            started = True
        if stage.name == stop_after:
            break
    assert len(names) == len(passes)
    hook = after_pass
    if after_stage is not None:
        last = {i: n for i, n in enumerate(names)
                if i + 1 == len(names) or names[i + 1] != n}
        index = {id(p): i for i, p in enumerate(passes)}

        def hook(p: ModulePass, m: ModuleOp) -> None:
            if after_pass is not None:
                after_pass(p, m)
            i = index[id(p)]
            if i in last:
                after_stage(last[i], m)

    run_passes(ctx or make_context(), module, passes, hook, verify_each=verify_each,
               stage_of=names.__getitem__)
    return module


def gpu_stage_passes() -> list[ModulePass]:
    """The passes of the `gpu` stage, from bufferized IR: kernels outlined, their dims
    collapsed, mapped onto grids (frame-gpu-map), index maps as arith, bf16 as
    integer ops (as for the CPU), and the host functions put on one device arena."""
    from xdsl.transforms.canonicalize import CanonicalizePass
    from xdsl.transforms.lower_affine import LowerAffinePass

    from frame_mlir.passes.arith_expand import ArithExpand
    from frame_mlir.passes.arith_expand_bf16 import ArithExpandBf16
    from frame_mlir.passes.frame_collapse_dims import FrameCollapseDims
    from frame_mlir.passes.frame_gpu_host import FrameGpuHost
    from frame_mlir.passes.frame_gpu_map import FrameGpuMap
    from frame_mlir.passes.frame_outline_kernels import FrameOutlineKernels

    return [FrameOutlineKernels(), FrameCollapseDims(), FrameGpuMap(), LowerAffinePass(),
            ArithExpand(), ArithExpandBf16(), FrameGpuHost(), CanonicalizePass()]
