"""Device code: the gpu.module of a mapped module -> llvm dialect -> NVVM IR -> PTX.

    device = device_module(module)          # the kernels, as their own module
    lower_device(device)                    # convert-gpu-to-nvvm + the CPU's llvm lowering
    nvvm = to_nvvm_ir(device)               # llvmlite module: nvptx64 triple, ptx_kernel
    ptx = emit_ptx(nvvm, "sm_90")           # libdevice linked, O3, NVPTX assembly
    report = ptxas(ptx, "sm_90")            # assembled by ptxas: registers, smem, spills

llvmlite 0.50 carries LLVM's NVPTX target, so PTX comes from the same LLVM as the CPU
code; ptxas (CUDA's assembler) is the independent check that it is valid for the GPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm_binding
import llvmlite.ir as ir
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
ARCHS = ("sm_80", "sm_90")
"""The GPU architectures the PTX is generated and validated for (A100, H100)."""
PTX_FEATURES = "+ptx80"
"""PTX ISA 8.0: what CUDA 12.0 drivers and newer load, for sm_80 and sm_90 alike."""
LIBDEVICE_CANDIDATES = ("nvvm/libdevice/libdevice.10.bc",)


class PtxError(Exception):
    """Generating or assembling PTX failed (`rule` says which step)."""

    def __init__(self, rule: str, message: str):
        super().__init__(f"{rule}: {message}")
        self.rule = rule


def device_module(module: ModuleOp) -> ModuleOp:
    """A new module holding a copy of every `gpu.module` of `module` (its kernels and
    their shared buffers), and nothing of the host side."""
    block = Block()
    for op in module.ops:
        if isinstance(op, gpu.ModuleOp):
            block.add_op(op.clone())
    return ModuleOp(Region(block))


def kernel_names(module: ModuleOp) -> list[str]:
    """The kernels of `module`'s gpu.modules, in order."""
    return [f.sym_name.data for g in module.ops if isinstance(g, gpu.ModuleOp)
            for f in g.body.block.ops if isinstance(f, gpu.FuncOp) and f.kernel is not None]


def lower_device(device: ModuleOp, *, verify_each: bool = True) -> None:
    """The device module (`device_module`) to the llvm dialect, in place:
    convert-gpu-to-nvvm, then the passes that lower the CPU's loops."""
    from frame_mlir.passes.convert_gpu_to_nvvm import ConvertGpuToNvvm
    from frame_mlir.passes.lower_to_llvm import lower_loops_to_llvm
    from frame_mlir.passes.pipeline import make_context, run_passes

    ctx = make_context()
    run_passes(ctx, device, [ConvertGpuToNvvm()])
    lower_loops_to_llvm(ctx, device, verify_each=verify_each)


def to_nvvm_ir(device: ModuleOp, kernels: Iterable[str]) -> ir.Module:
    """The lowered device module (`lower_device`) as an llvmlite module for NVPTX: the
    functions named in `kernels` (`kernel_names` of the module before lowering) get the
    `ptx_kernel` calling convention, which makes them `.entry` points; everything else
    stays a device function."""
    from xdsl.backend.llvm.convert import convert_module

    from frame_mlir.backend.llvm.xdsl_gep_fix import install

    install()
    nvvm = convert_module(device, fallback_target_triple=NVPTX_TRIPLE)
    nvvm.triple = NVPTX_TRIPLE
    names = set(kernels)
    for fn in nvvm.functions:
        if fn.name in names:
            fn.calling_convention = "ptx_kernel"
    return nvvm


_init = threading.Lock()
_initialized = False


def _ensure_nvptx() -> None:
    global _initialized
    with _init:
        if not _initialized:
            llvm_binding.initialize_all_targets()
            llvm_binding.initialize_all_asmprinters()
            _initialized = True


def cuda_home() -> Path | None:
    """The CUDA toolkit: $CUDA_HOME / $CUDA_PATH, else where ptxas is, else
    /usr/local/cuda; None if none of them has libdevice."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    exe = shutil.which("ptxas")
    if exe:
        candidates.append(str(Path(exe).resolve().parent.parent))
    candidates.append("/usr/local/cuda")
    for c in candidates:
        if c and any((Path(c) / rel).is_file() for rel in LIBDEVICE_CANDIDATES):
            return Path(c)
    return None


def libdevice_path() -> Path:
    home = cuda_home()
    if home is None:
        raise PtxError("CUDA-010", "libdevice (nvvm/libdevice/libdevice.10.bc) not found: "
                       "expected a CUDA toolkit in $CUDA_HOME, next to ptxas on PATH, or "
                       "in /usr/local/cuda, found none")
    for rel in LIBDEVICE_CANDIDATES:
        if (home / rel).is_file():
            return home / rel
    raise AssertionError("unreachable")


_libdevice_bytes: bytes | None = None


def _libdevice() -> llvm_binding.ModuleRef:
    global _libdevice_bytes
    if _libdevice_bytes is None:
        _libdevice_bytes = libdevice_path().read_bytes()
    return llvm_binding.parse_bitcode(_libdevice_bytes)


def emit_ptx(nvvm: ir.Module | str, arch: str = "sm_80", *, opt_level: int = 3) -> str:
    """PTX for `arch` from the NVVM IR of `lower_device` + `to_nvvm_ir`.

    libdevice is linked only when a kernel calls `__nv_*`; its functions become internal
    after linking (so the optimizer drops the unused ones and inlines the rest), then
    LLVM's O3 pipeline for the NVPTX target machine runs, which also infers the
    address spaces of generic pointers (kernel parameters are global memory)."""
    if arch not in ARCHS:
        raise PtxError("CUDA-011", f"--arch: expected one of {', '.join(ARCHS)}, found {arch}")
    _ensure_nvptx()
    text = str(nvvm)
    mod = llvm_binding.parse_assembly(text)
    if "__nv_" in text:
        mod.link_in(_libdevice())
        for fn in mod.functions:
            if fn.name.startswith("__nv_") and not fn.is_declaration:
                fn.linkage = llvm_binding.Linkage.internal
    mod.verify()
    target = llvm_binding.Target.from_triple(NVPTX_TRIPLE)
    tm = target.create_target_machine(cpu=arch, features=PTX_FEATURES, opt=opt_level)
    pto = llvm_binding.create_pipeline_tuning_options(speed_level=opt_level)
    pb = llvm_binding.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel."""

    name: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int


_FN = re.compile(r"Compiling entry function '([^']+)'")
_REGS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def ptxas_path() -> str | None:
    """ptxas on PATH, else in the CUDA toolkit (`cuda_home`)."""
    exe = shutil.which("ptxas")
    if exe:
        return exe
    home = cuda_home()
    if home is not None and (home / "bin" / "ptxas").is_file():
        return str(home / "bin" / "ptxas")
    return None


def ptxas(ptx: str, arch: str = "sm_80", *, timeout: float = 120.0) -> list[KernelResources]:
    """Assemble `ptx` for `arch` with ptxas (`-v`) and return each kernel's resource
    usage; a PTX that does not assemble raises PtxError with ptxas's messages."""
    exe = ptxas_path()
    if exe is None:
        raise PtxError("CUDA-012", "ptxas not found: expected it on PATH or in a CUDA "
                       "toolkit ($CUDA_HOME/bin)")
    with tempfile.TemporaryDirectory(prefix="frame-ptx-") as tmp:
        src = Path(tmp) / "module.ptx"
        src.write_text(ptx)
        proc = subprocess.run([exe, f"-arch={arch}", "-v", str(src), "-o", os.devnull],
                              capture_output=True, text=True, timeout=timeout)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise PtxError("CUDA-013", f"ptxas -arch={arch} rejected the PTX: "
                       f"{log.strip()[-2000:]}")
    out: list[KernelResources] = []
    current: str | None = None
    stack = (0, 0, 0)
    for line in log.splitlines():
        m = _FN.search(line)
        if m:
            current = m.group(1)
            stack = (0, 0, 0)
            continue
        m = _STACK.search(line)
        if m and current is not None:
            stack = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        m = _REGS.search(line)
        if m and current is not None:
            smem = _SMEM.search(line)
            out.append(KernelResources(current, int(m.group(1)),
                                       int(smem.group(1)) if smem else 0, *stack))
            current = None
    return out
