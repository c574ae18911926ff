"""LLVM on the host: its initialization, the host's target machine, the per-unit
optimization pipelines, and the loading of our hand-written runtime modules.

It sits below both the JIT (`jit.py`) and the runtimes that the JIT's code calls
(`parallel_runtime.py`, `profile_runtime.py`): neither imports the JIT. LLVM's one-time
initialization lives in `target/host.py`, which needs it to read the host's CPU
features.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import llvmlite.binding as llvm

from frame_mlir.backend.llvm.split import ROLE_ENTRY, ROLE_GEMM, ROLE_KERNEL, ROLE_MICRO
from frame_mlir.target.host import X86_TUNING, ensure_initialized


@lru_cache(maxsize=1)
def host_cpu() -> tuple[str, str]:
    """The host's CPU name and feature string (with `X86_TUNING`): asked once, on the
    main thread, and shared by every worker's target machine."""
    ensure_initialized()
    features = llvm.get_host_cpu_features().flatten()
    if llvm.Target.from_default_triple().name.startswith("x86"):
        features = f"{features},{X86_TUNING}" if features else X86_TUNING
    return llvm.get_host_cpu_name(), features


def host_target_machine(opt_level: int = 3) -> llvm.TargetMachine:
    """A target machine for the host CPU with all of its features (AVX-512, FMA, ...),
    plus `X86_TUNING` on x86.

    A fresh one per call: MCJIT takes ownership of the machine it is created with, and
    a compile worker must not share its machine with another thread.
    """
    cpu, features = host_cpu()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=opt_level, jit=True)


@dataclass(frozen=True)
class UnitPipeline:
    """LLVM's default per-module pipeline at `speed` (0-3), with the loop vectorizer
    and the loop unroller on or off (the SLP vectorizer runs from level 2); the code
    generator at level `codegen` (None: the module's opt level)."""

    speed: int
    vectorize: bool
    unroll: bool
    codegen: int | None = None

    @classmethod
    def default(cls, opt_level: int) -> UnitPipeline:
        return cls(opt_level, opt_level >= 2, opt_level >= 2)


#: The pipeline of each unit role at opt level 3, measured (docs/performance.md,
#: "Compile time"):
#: * micro-kernels -- the GEMM inner loops, where the FLOPs are -- get all of O3;
#: * GEMM drivers (blocking, packing and epilogue loops around micro-kernel calls) get
#:   O2: O3's extra loop transformations (non-trivial unswitching among them) made
#:   their many edge-case loops 10x larger and took 3x as long, for no speed measured
#:   on W2-W4 and ResNet-18;
#: * every other kernel keeps all of O3. Without the unroller they compiled 20 % faster
#:   but LeNet trained 16 % and W1 5 % slower: elementwise and convolution loops
#:   with constant trip counts gain from it;
#: * packed entries (`packed.py`: loads, then one call) get no optimization and the
#:   fast code generator, at every level: the call of a function of 4,000 pointers
#:   took 3.6 s to generate at level 3 and 0.66 s at level 0.
UNIT_PIPELINES: dict[str, UnitPipeline] = {
    ROLE_MICRO: UnitPipeline(3, True, True),
    ROLE_GEMM: UnitPipeline(2, True, True),
    ROLE_KERNEL: UnitPipeline(3, True, True),
    ROLE_ENTRY: UnitPipeline(0, False, False, codegen=0),
}


def unit_pipeline(opt_level: int, role: str) -> UnitPipeline:
    """The pipeline a unit of `role` is optimized by when the module is compiled at
    `opt_level`: the per-role policy at 3, `opt_level` as it is below (entries: level
    0 always)."""
    if opt_level >= 3 or role == ROLE_ENTRY:
        return UNIT_PIPELINES[role]
    return UnitPipeline.default(opt_level)


def optimize(module: llvm.ModuleRef, target_machine: llvm.TargetMachine, opt_level: int,
             pipeline: UnitPipeline | None = None) -> None:
    """Run LLVM's default per-module pipeline: `pipeline`, or all of `opt_level`'s."""
    p = pipeline or UnitPipeline.default(opt_level)
    pto = llvm.create_pipeline_tuning_options(speed_level=p.speed)
    pto.loop_vectorization = p.vectorize
    pto.slp_vectorization = p.speed >= 2
    pto.loop_unrolling = p.unroll
    pass_builder = llvm.create_pass_builder(target_machine, pto)
    pass_builder.getModulePassManager().run(module, pass_builder)


def load_runtime(ir_text: str, exports: Sequence[str]) -> dict[str, int]:
    """Compile one of our hand-written runtime modules (O2, host CPU), keep its code for
    the life of the process (generated code may call it until the very end, even while
    the interpreter shuts down), and register `exports` with `llvm.add_symbol` so every
    later JIT module resolves them; their addresses."""
    ensure_initialized()
    machine = host_target_machine(2)
    module = llvm.parse_assembly(ir_text)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    module.verify()
    optimize(module, machine, 2)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(engine))  # never freed
    addresses = {name: engine.get_function_address(name) for name in exports}
    for name, address in addresses.items():
        llvm.add_symbol(name, address)
    return addresses
