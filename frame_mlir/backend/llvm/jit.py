"""In-process native code: LLVM IR text -> O3 for the host CPU -> MCJIT -> ctypes.

    jit = jit_compile(to_llvm_text(module))
    step = jit.get_function("train_step")          # void train_step(void *, ...)
    step(x.ctypes.data, w.ctypes.data, arena.ctypes.data)

Every lowered function takes bare pointers (see convert-func-to-llvm), so the default
argument types are `ctypes.c_void_p`; numpy buffers are passed as `arr.ctypes.data`.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

import llvmlite.binding as llvm

_init_lock = threading.Lock()
_initialized = False


def _ensure_initialized() -> None:
    """Initialize LLVM's native target once per process.

    llvmlite >= 0.45 initializes the core itself (`llvm.initialize()` now raises); only
    the native target, asm printer and asm parser still need explicit calls.
    """
    global _initialized
    with _init_lock:
        if _initialized:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _initialized = True


def host_target_machine(opt_level: int = 3) -> llvm.TargetMachine:
    """A target machine for the host CPU with all of its features (AVX-512, FMA, ...).

    A fresh one per call: MCJIT takes ownership of the machine it is created with.
    """
    _ensure_initialized()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=opt_level,
        jit=True,
    )


def optimize(module: llvm.ModuleRef, target_machine: llvm.TargetMachine, opt_level: int) -> None:
    """Run LLVM's default per-module pipeline at `opt_level` with vectorizers enabled."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_unrolling = opt_level >= 2
    pass_builder = llvm.create_pass_builder(target_machine, pto)
    pass_builder.getModulePassManager().run(module, pass_builder)


class JitModule:
    """Natively compiled functions of one LLVM module.

    Holds the MCJIT execution engine: the code lives as long as this object does, and
    every function returned by `get_function` keeps a reference to it.
    """

    def __init__(
        self,
        engine: llvm.ExecutionEngine,
        module: llvm.ModuleRef,
        target_machine: llvm.TargetMachine,
        optimized_ir: str,
    ):
        self._engine = engine
        self._module = module
        self._target_machine = target_machine
        self._optimized_ir = optimized_ir
        self._asm: str | None = None

    def function_names(self) -> list[str]:
        """Names of the functions defined (not just declared) in the module."""
        return [f.name for f in self._module.functions if not f.is_declaration]

    def get_function(self, name: str, argtypes: Sequence[Any] | None = None) -> ctypes._CFuncPtr:
        """A ctypes callable for the void function `name`.

        `argtypes` defaults to one `ctypes.c_void_p` per parameter of the function.
        Raises KeyError if the module defines no such function.
        """
        try:
            fn = self._module.get_function(name)
        except NameError:
            fn = None
        if fn is None or fn.is_declaration:
            raise KeyError(f"no function @{name} in the JIT module")
        if argtypes is None:
            argtypes = [ctypes.c_void_p] * len(list(fn.arguments))
        address = self._engine.get_function_address(name)
        cfunc = ctypes.CFUNCTYPE(None, *argtypes)(address)
        cfunc._jit_module = self  # type: ignore[attr-defined]  # keeps the code alive
        return cfunc

    def optimized_ir(self) -> str:
        """The LLVM IR after the optimization pipeline (before code generation)."""
        return self._optimized_ir

    def asm(self) -> str:
        """Host assembly of the optimized module."""
        if self._asm is None:
            # A copy: codegen on the engine-owned module would race with its object.
            copy = llvm.parse_assembly(self._optimized_ir)
            self._asm = self._target_machine.emit_assembly(copy)
        return self._asm


def jit_compile(llvm_ir_text: str, *, opt_level: int = 3) -> JitModule:
    """Parse, verify, optimize (O`opt_level`, host CPU) and JIT-compile LLVM IR text."""
    target_machine = host_target_machine(opt_level)
    module = llvm.parse_assembly(llvm_ir_text)
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    module.verify()
    optimize(module, target_machine, opt_level)
    optimized_ir = str(module)
    engine = llvm.create_mcjit_compiler(module, target_machine)
    engine.finalize_object()
    return JitModule(engine, module, target_machine, optimized_ir)
