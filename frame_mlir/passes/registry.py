"""Every project pass and named pipeline, registered by name for frame-opt.

`PASSES` is the table of the frame passes: each flag with the module and class that
define it, so that frame-opt registers every pass without importing any (as xDSL's own
`get_all_passes` does); a pass's module is imported when a pipeline names it. The table
is checked against the classes by tests/tools/test_startup_imports.py. `all_passes()`
imports them all, for listings.

`PIPELINES` are the named pipelines, one per stage of `frame-run --emit-stage`
(`frame-to-<stage>`: from frame IR through that stage) plus
`frame-pipeline{start-after=... stop-after=...}` for any range of stages. A pipeline
is a pseudo-pass: frame-opt expands it into the very passes `passes/pipeline.py`
runs for the driver (`stage_passes`), so each one is verified and reported on its own.
Defining them imports no pass: they are as cheap to register as the table.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from xdsl.passes import ModulePass

from frame_mlir.passes.stages import STAGE_NAMES, pipeline_name

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

#: Every frame pass, in the order `frame-opt --help` lists them: its flag (the class's
#: `name`) -> (the module under frame_mlir.passes, the class).
PASSES: dict[str, tuple[str, str]] = {
    "arith-expand": ("arith_expand", "ArithExpand"),
    "arith-expand-bf16": ("arith_expand_bf16", "ArithExpandBf16"),
    "math-polynomial-approximation": ("math_polynomial_approximation",
                                      "MathPolynomialApproximationPass"),
    "frame-shape-inference": ("frame_shape_inference", "FrameShapeInference"),
    "frame-autodiff": ("frame_autodiff", "FrameAutodiff"),
    "frame-sgd-fuse": ("frame_sgd_fuse", "FrameSgdFuse"),
    "frame-dp-split": ("frame_dp_split", "FrameDpSplit"),
    "convert-frame-to-linalg": ("convert_frame_to_linalg", "ConvertFrameToLinalg"),
    "frame-fold-movement": ("frame_fold_movement", "FrameFoldMovement"),
    "frame-fuse-elementwise": ("frame_fuse_elementwise", "FrameFuseElementwise"),
    "frame-bufferize": ("frame_bufferize", "FrameBufferize"),
    "frame-outline-kernels": ("frame_outline_kernels", "FrameOutlineKernels"),
    "frame-fuse-gemm-epilogue": ("frame_fuse_gemm_epilogue", "FrameFuseGemmEpilogue"),
    "frame-profile-kernels": ("frame_profile_kernels", "FrameProfileKernels"),
    "frame-gemm": ("frame_gemm", "FrameGemm"),
    "frame-tile-matmul": ("frame_tile_matmul", "FrameTileMatmul"),
    "frame-lower-scan": ("frame_lower_scan", "FrameLowerScan"),
    "frame-collapse-dims": ("frame_collapse_dims", "FrameCollapseDims"),
    "frame-parallelize": ("frame_parallelize", "FrameParallelize"),
    "frame-train-loop": ("frame_train_loop", "FrameTrainLoop"),
    "convert-frame-rt-to-llvm": ("convert_frame_rt_to_llvm", "ConvertFrameRtToLLVMPass"),
    "convert-math-to-llvm": ("convert_math_to_llvm", "ConvertMathToLLVMPass"),
    "convert-vector-to-llvm": ("convert_vector_to_llvm", "ConvertVectorToLLVMPass"),
    "convert-arith-to-llvm": ("convert_arith_to_llvm", "ConvertArithToLLVMPass"),
    "convert-memref-to-llvm": ("convert_memref_to_llvm", "ConvertMemrefToLLVMPass"),
    "convert-cf-to-llvm": ("convert_cf_to_llvm", "ConvertCfToLLVMPass"),
    "convert-func-to-llvm": ("convert_func_to_llvm", "ConvertFuncToLLVMPass"),
    "llvm-legality-check": ("lower_to_llvm", "LLVMLegalityCheck"),
    # the cuda target (--target cuda): after bufferized
    "frame-gpu-map": ("frame_gpu_map", "FrameGpuMap"),
    "frame-gpu-host": ("frame_gpu_host", "FrameGpuHost"),
    "convert-gpu-to-nvvm": ("convert_gpu_to_nvvm", "ConvertGpuToNvvm"),
}


def load_pass(name: str) -> type[ModulePass]:
    """The class of the frame pass `name` (a key of `PASSES`), its module imported."""
    module, cls = PASSES[name]
    return getattr(importlib.import_module(f"frame_mlir.passes.{module}"), cls)


def pass_factory(name: str) -> Callable[[], type[ModulePass]]:
    """What frame-opt registers for the pass `name`: a callable that imports it when
    called (xDSL's `available_passes` convention)."""
    return functools.partial(load_pass, name)


def all_passes() -> list[type[ModulePass]]:
    """Every frame pass class, in `PASSES`' order (imports every pass module: ~0.3 s,
    for listings and tests, not for running a pipeline)."""
    return [load_pass(name) for name in PASSES]


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
    ranks by frame-dp-split, as `frame-run --data-parallel` compiles it).
    `frame-gemm`'s blocking follows the host, as in frame-run.
    """

    #: frame-sgd-fuse's default `lr`, written out: reading `FrameSgdFuse.lr` would import
    #: that pass (numpy, the autodiff and nn modules: ~70 ms of every frame-opt start).
    #: tests/tools/test_startup_imports.py checks that the two agree.
    lr: float | int | str = 0.01
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
        from frame_mlir.passes.frame_sgd_fuse import FrameSgdFuse
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

        if self.data_parallel:  # as frame-run: --data-parallel trains on the CPU
            raise ValueError(f"{self.name}: data-parallel splits the step for CPU ranks; "
                             f"the cuda target expects 0, found {self.data_parallel}")
        cpu = FramePipeline(lr=self.lr, sgd=self.sgd, threads=self.threads,
                            stop_after="bufferized")
        return [*cpu.expand(), *gpu_stage_passes()]


PIPELINES: list[type[StagePipeline]] = [
    *(_stage_pipeline(s, d) for s, d in _STAGE_SUMMARIES.items()), FramePipeline,
    FrameToGpu,
]
