"""Every project pass, registered by name for frame-opt and the pipelines."""

from __future__ import annotations

from xdsl.passes import ModulePass

from frame_mlir.passes.arith_expand import ArithExpand
from frame_mlir.passes.arith_expand_bf16 import ArithExpandBf16
from frame_mlir.passes.convert_arith_to_llvm import ConvertArithToLLVMPass
from frame_mlir.passes.convert_cf_to_llvm import ConvertCfToLLVMPass
from frame_mlir.passes.convert_frame_rt_to_llvm import ConvertFrameRtToLLVMPass
from frame_mlir.passes.convert_frame_to_linalg import ConvertFrameToLinalg
from frame_mlir.passes.convert_func_to_llvm import ConvertFuncToLLVMPass
from frame_mlir.passes.convert_math_to_llvm import ConvertMathToLLVMPass
from frame_mlir.passes.convert_memref_to_llvm import ConvertMemrefToLLVMPass
from frame_mlir.passes.convert_vector_to_llvm import ConvertVectorToLLVMPass
from frame_mlir.passes.frame_autodiff import FrameAutodiff
from frame_mlir.passes.frame_bufferize import FrameBufferize
from frame_mlir.passes.frame_collapse_dims import FrameCollapseDims
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

ALL_PASSES: list[type[ModulePass]] = [
    ArithExpand,
    ArithExpandBf16,
    FrameShapeInference,
    FrameAutodiff,
    FrameSgdFuse,
    ConvertFrameToLinalg,
    FrameFuseElementwise,
    FrameBufferize,
    FrameOutlineKernels,
    FrameFuseGemmEpilogue,
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
]
