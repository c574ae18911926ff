"""A frame module compiled for CUDA: the launch plan of each host function and the
device code (NVVM IR, PTX per architecture).

    program = compile_cuda(module, lr=0.05)
    program.functions["tiny_mlp_train_step"].launches   # kernel, grid, block, offsets
    program.ptx("sm_90")                                  # the whole PTX module

The pipeline is the CPU's up to `bufferized` (`passes/pipeline.py`), then the `gpu`
stage (`gpu_stage_passes`: kernels outlined and mapped onto grids, host functions on
one device arena), then the device side on its own: `gpu-llvm` (the llvm dialect),
`nvvm` (LLVM IR for nvptx64) and `ptx`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp
from xdsl.passes import ModulePass

from frame_mlir.backend.abi import FunctionSignature
from frame_mlir.compile_options import CompileOptions
from frame_mlir.passes.pipeline import gpu_stage_passes
from frame_mlir.passes.stages import CUDA_STAGES


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a host function; `args` are byte offsets into the device
    arena, one per kernel argument."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[int, ...]
    layer: str | None = None


@dataclass(frozen=True)
class HostFunction:
    """A host function of the program: its launches in order, where each of its former
    arguments lives in the device arena, and its signature (what the arguments are)."""

    name: str
    launches: tuple[Launch, ...]
    argument_offsets: tuple[int, ...]
    signature: FunctionSignature


@dataclass
class CudaProgram:
    """What the runtime needs: the launch plans, the device arena size and the device
    code (NVVM IR before libdevice; PTX made per architecture on demand)."""

    functions: dict[str, HostFunction]
    arena_size: int
    kernels: list[str]
    nvvm_ir: str
    _ptx: dict[str, str] = field(default_factory=dict)

    def ptx(self, arch: str = "sm_80") -> str:
        """The PTX module for `arch` (sm_80 or sm_90)."""
        if arch not in self._ptx:
            from frame_mlir.backend.cuda.ptx import emit_ptx

            self._ptx[arch] = emit_ptx(self.nvvm_ir, arch)
        return self._ptx[arch]


class CudaCompileError(Exception):
    """The module cannot be compiled for CUDA (an op or form the target lacks)."""


def _const(v: object) -> int:
    owner = getattr(v, "owner", None)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    raise CudaCompileError(f"expected a constant, found {v}")


def launch_plan(module: ModuleOp, sigs: dict[str, FunctionSignature]
                ) -> dict[str, HostFunction]:
    """Read each host function's launches off the `gpu` stage (after frame-gpu-host)."""
    out: dict[str, HostFunction] = {}
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
            continue
        offs = fn.attributes.get("frame.gpu.argument_offsets")
        if not isinstance(offs, DenseArrayBase):
            continue
        views: dict[object, int] = {}
        launches = []
        for op in fn.body.block.ops:
            if isinstance(op, memref.ViewOp):
                views[op.result] = _const(op.byte_shift)
            elif isinstance(op, gpu.LaunchFuncOp):
                refs = op.kernel.nested_references.data
                name = refs[-1].data if refs else op.kernel.root_reference.data
                args = []
                for a in op.kernelOperands:
                    if a not in views:
                        raise CudaCompileError(f"@{fn.sym_name.data}: a launch of @{name} "
                                               "has an operand that is not a device view")
                    args.append(views[a])
                layer = op.attributes.get("frame.layer")
                launches.append(Launch(
                    name, (_const(op.gridSizeX), _const(op.gridSizeY), _const(op.gridSizeZ)),
                    (_const(op.blockSizeX), _const(op.blockSizeY), _const(op.blockSizeZ)),
                    tuple(args), getattr(layer, "data", None)))
        name = fn.sym_name.data
        out[name] = HostFunction(name, tuple(launches),
                                 tuple(int(x) for x in offs.get_values()), sigs[name])
    return out


def compile_cuda(module: ModuleOp, lr: float | None, *,
                 options: CompileOptions | None = None,
                 after_pass: Callable[[ModulePass, ModuleOp], None] | None = None,
                 stop_after: str | None = None, arch: str = "sm_80"
                 ) -> CudaProgram | ModuleOp | str:
    """Compile a frame-stage module for CUDA.

    Runs the CPU pipeline to `bufferized`, then the `gpu` stage, then the device side.
    With `stop_after` (a CPU stage up to `bufferized`, or one of `CUDA_STAGES`) returns
    that stage's module (`gpu-llvm`: the device module) or text (`nvvm`: LLVM IR;
    `ptx`: PTX for `arch`) instead of the program.
    """
    from frame_mlir.backend.abi import signatures
    from frame_mlir.backend.cuda.ptx import (
        device_module,
        kernel_names,
        lower_device,
        to_nvvm_ir,
    )
    from frame_mlir.passes.pipeline import STAGE_NAMES, make_context, run_passes, run_pipeline

    cpu_stop = stop_after if stop_after in STAGE_NAMES else "bufferized"
    if stop_after in STAGE_NAMES and STAGE_NAMES.index(stop_after) > STAGE_NAMES.index(
            "bufferized"):
        raise CudaCompileError(f"stage '{stop_after}' is the CPU's; on the cuda target "
                               f"the stages after bufferized are {', '.join(CUDA_STAGES)}")
    run_pipeline(module, lr, stop_after=cpu_stop, after_pass=after_pass, options=options)
    if stop_after == cpu_stop:
        return module
    sigs = signatures(module)
    ctx = make_context()
    run_passes(ctx, module, gpu_stage_passes(), after_pass)
    if stop_after == "gpu":
        return module
    plan = launch_plan(module, sigs)
    size = module.attributes.get("frame.gpu.device_arena_size")
    arena = size.value.data if isinstance(size, IntegerAttr) else 0
    device = device_module(module)
    names = kernel_names(device)
    lower_device(device)
    if stop_after == "gpu-llvm":
        return device
    nvvm = str(to_nvvm_ir(device, names))
    if stop_after == "nvvm":
        return nvvm
    program = CudaProgram(plan, arena, names, nvvm)
    if stop_after == "ptx":
        return program.ptx(arch)
    return program
