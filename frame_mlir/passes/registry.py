"""Every project pass and named pipeline, registered by name for frame-opt.

`ALL_PASSES` are the frame passes; `PIPELINES` the named pipelines, one per stage of
`frame-run --emit-stage` (`frame-to-<stage>`: from frame IR through that stage) plus
`frame-pipeline{start-after=... stop-after=...}` for any range of stages. A pipeline
is a pseudo-pass: frame-opt expands it into the very passes `passes/pipeline.py`
runs for the driver (`stage_passes`), so each one is verified and reported on its own.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from frame_mlir.passes.arith_expand import ArithExpand
from frame_mlir.passes.arith_expand_bf16 import ArithExpandBf16
from frame_mlir.passes.convert_arith_to_llvm import ConvertArithToLLVMPass
from frame_mlir.passes.convert_cf_to_llvm import ConvertCfToLLVMPass
from frame_mlir.passes.convert_frame_rt_to_llvm import ConvertFrameRtToLLVMPass
from frame_mlir.passes.convert_frame_to_linalg import ConvertFrameToLinalg
from frame_mlir.passes.convert_func_to_llvm import ConvertFuncToLLVMPass
from frame_mlir.passes.convert_gpu_to_nvvm import ConvertGpuToNvvm
from frame_mlir.passes.convert_math_to_llvm import ConvertMathToLLVMPass
from frame_mlir.passes.convert_memref_to_llvm import ConvertMemrefToLLVMPass
from frame_mlir.passes.convert_vector_to_llvm import ConvertVectorToLLVMPass
from frame_mlir.passes.frame_autodiff import FrameAutodiff
from frame_mlir.passes.frame_bufferize import FrameBufferize
from frame_mlir.passes.frame_collapse_dims import FrameCollapseDims
from frame_mlir.passes.frame_dp_split import FrameDpSplit
from frame_mlir.passes.frame_fuse_elementwise import FrameFuseElementwise
from frame_mlir.passes.frame_fuse_gemm_epilogue import FrameFuseGemmEpilogue
from frame_mlir.passes.frame_gemm import FrameGemm
from frame_mlir.passes.frame_gpu_host import FrameGpuHost
from frame_mlir.passes.frame_gpu_map import FrameGpuMap
from frame_mlir.passes.frame_lower_scan import FrameLowerScan
from frame_mlir.passes.frame_outline_kernels import FrameOutlineKernels
from frame_mlir.passes.frame_parallelize import FrameParallelize
from frame_mlir.passes.frame_profile_kernels import FrameProfileKernels
from frame_mlir.passes.frame_sgd_fuse import FrameSgdFuse
from frame_mlir.passes.frame_shape_inference import FrameShapeInference
from frame_mlir.passes.frame_tile_matmul import FrameTileMatmul
from frame_mlir.passes.frame_train_loop import FrameTrainLoop
from frame_mlir.passes.lower_to_llvm import LLVMLegalityCheck
from frame_mlir.passes.math_polynomial_approximation import MathPolynomialApproximationPass
from frame_mlir.passes.stages import STAGE_NAMES, pipeline_name

ALL_PASSES: list[type[ModulePass]] = [
    ArithExpand,
    ArithExpandBf16,
    MathPolynomialApproximationPass,
    FrameShapeInference,
    FrameAutodiff,
    FrameSgdFuse,
    FrameDpSplit,
    ConvertFrameToLinalg,
    FrameFuseElementwise,
    FrameBufferize,
    FrameOutlineKernels,
    FrameFuseGemmEpilogue,
    FrameProfileKernels,
    FrameGemm,
    FrameTileMatmul,
    FrameLowerScan,
    FrameCollapseDims,
    FrameParallelize,
    FrameTrainLoop,
    ConvertFrameRtToLLVMPass,
    ConvertMathToLLVMPass,
    ConvertVectorToLLVMPass,
    ConvertArithToLLVMPass,
    ConvertMemrefToLLVMPass,
    ConvertCfToLLVMPass,
    ConvertFuncToLLVMPass,
    LLVMLegalityCheck,
    # the cuda target (--target cuda): after bufferized
    FrameGpuMap,
    FrameGpuHost,
    ConvertGpuToNvvm,
]


def summary(pass_type: type[ModulePass]) -> str:
    """A pass's one-line description: the first sentence of its class docstring."""
    doc = " ".join((pass_type.__doc__ or "").strip().split("\n\n")[0].split())
    end = doc.find(". ")
    doc = doc if end < 0 else doc[:end + 1]
    # "(see the module doc)" pointers mean nothing in a one-line listing.
    return re.sub(r"\s*\(see (the )?module doc[^)]*\)", "", doc)


def option_names(pass_type: type[ModulePass]) -> list[str]:
    """The pass's options as written in a pipeline (`min_flops` -> `min-flops`)."""
    return [f.name.replace("_", "-") for f in dataclasses.fields(pass_type)]


@dataclass(frozen=True)
class StagePipeline(ModulePass):
    """Base of the named pipelines: the driver's passes for a range of stages.

    Options, as in frame-run: `lr` (the SGD learning rate of the `sgd` stage), `sgd`
    (false: no SGD is fused and `@f_grad` stays, as the Python API compiles),
    `threads` (kernels split for N threads; 1 by default so that output does not
    depend on the machine's cores) and `data-parallel` (N > 0: the step split for N
    ranks by frame-dp-split, as `frame-run --data-parallel` compiles it). `frame-gemm`'s blocking follows the host, as in
    frame-run.
    """

    lr: float | int | str = FrameSgdFuse.lr
    sgd: bool = True
    threads: int = 1
    #: > 0: the `sgd` stage splits the step for this many data-parallel ranks
    #: (frame-dp-split) instead of fusing SGD into it.
    data_parallel: int = 0

    #: The range of stages the pipeline runs (None: from the start).
    first_after: ClassVar[str | None] = None
    last: ClassVar[str] = "llvm"

    def stage_range(self) -> tuple[str | None, str]:
        """(start after, stop after) of this pipeline."""
        return self.first_after, self.last

    def expand(self) -> list[ModulePass]:
        """The passes this pipeline stands for, with its options applied."""
        from frame_mlir.compile_options import CompileOptions
        from frame_mlir.passes.pipeline import stage_passes

        if self.threads < 1:
            raise ValueError(f"{self.name}: threads expected >= 1, found {self.threads}")
        lr = FrameSgdFuse(lr=self.lr).learning_rate() if self.sgd else None
        start, stop = self.stage_range()
        if self.data_parallel < 0:
            raise ValueError(f"{self.name}: data-parallel expected >= 0 ranks (0: none), "
                             f"found {self.data_parallel}")
        options = CompileOptions(threads=self.threads,
                                 data_parallel=self.data_parallel or None)
        return stage_passes(lr, options,
                            start_after=start, stop_after=stop)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Run the passes, verifying after each (frame-opt expands the pipeline
        instead, so its own per-pass verification and error locations apply)."""
        from frame_mlir.passes.pipeline import run_passes

        run_passes(ctx, op, self.expand())


@dataclass(frozen=True)
class FramePipeline(StagePipeline):
    """Any range of the driver's stages: after `start-after` (default: from frame IR)
    through `stop-after` (default: llvm)."""

    name = "frame-pipeline"

    start_after: str | None = None
    stop_after: str = "llvm"

    def stage_range(self) -> tuple[str | None, str]:
        return self.start_after, self.stop_after


def _stage_pipeline(stage: str, description: str) -> type[StagePipeline]:
    """The `frame-to-<stage>` pipeline class."""
    cls = type(f"FrameTo{stage.capitalize()}", (StagePipeline,), {
        "__doc__": f"Frame IR through the `{stage}` stage: {description}.",
        "__module__": __name__,
        "name": pipeline_name(stage),
        "last": stage,
    })
    return dataclass(frozen=True)(cls)


#: What each stage adds, for `frame-opt --help` (the passes come from pipeline.py).
_STAGE_SUMMARIES: dict[str, str] = {
    "frame": "shapes inferred and checked (what frame-run's frontends produce)",
    "autodiff": "+ `@f_grad`, the loss and its parameter gradients",
    "sgd": "+ `@f_train_step`, SGD fused, parameters updated in place",
    "linalg": "linalg on tensors, elementwise chains fused",
    "bufferized": "memrefs over one statically planned arena",
    "loops": "scf loops, one kernel function per linalg op, GEMMs, threads",
    "llvm": "the llvm dialect, ready for translation to LLVM IR",
}
assert tuple(_STAGE_SUMMARIES) == STAGE_NAMES, "update _STAGE_SUMMARIES"

@dataclass(frozen=True)
class FrameToGpu(StagePipeline):
    """Frame IR through the cuda target's `gpu` stage: kernels mapped onto grids of
    blocks and threads, host functions as launches on one device arena."""

    name = "frame-to-gpu"

    def expand(self) -> list[ModulePass]:
        from frame_mlir.passes.pipeline import gpu_stage_passes

        cpu = FramePipeline(lr=self.lr, sgd=self.sgd, threads=self.threads,
                            stop_after="bufferized")
        return [*cpu.expand(), *gpu_stage_passes()]


PIPELINES: list[type[StagePipeline]] = [
    *(_stage_pipeline(s, d) for s, d in _STAGE_SUMMARIES.items()), FramePipeline,
    FrameToGpu,
]
