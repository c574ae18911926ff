"""In-process native code: LLVM IR text -> O3 for the host CPU -> MCJIT -> ctypes.

    jit = jit_compile(to_llvm_text(module))
    step = jit.get_function("train_step")          # void train_step(void *, ...)
    step(x.ctypes.data, w.ctypes.data, arena.ctypes.data)

Every lowered function takes bare pointers (see convert-func-to-llvm), so the default
argument types are `ctypes.c_void_p`; numpy buffers are passed as `arr.ctypes.data`.

Every compile keeps the object MCJIT generated (`JitModule.object_code`), and
`load_object` turns such an object back into a `JitModule` without parsing, optimizing
or generating anything: that is what the compile cache (`cache.py`) stores and loads.
`jit_compile(text, cache=...)` consults the cache by the IR text itself.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import llvmlite.binding as llvm

from frame_mlir.backend.llvm.parallel_runtime import provide_runtime

if TYPE_CHECKING:
    from frame_mlir.backend.llvm.cache import CompileCache

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


X86_TUNING = "+prefer-no-gather,+prefer-no-scatter"
"""Tuning features added on x86: no vector gathers or scatters where LLVM has a choice.
Our kernels' innermost loops are often short and constant (an image row, a 3 x 3
window): LLVM unrolls them fully, then vectorizes the next loop out with gathers and
scatters at the row stride, where the straight-line copies the unrolling left would
have become contiguous vector moves (SLP). On a Zen 5 core a convolution's im2col
scatter-add (col2im) ran 3x slower that way, and ResNet-18's training step 1.35x."""


def host_target_machine(opt_level: int = 3) -> llvm.TargetMachine:
    """A target machine for the host CPU with all of its features (AVX-512, FMA, ...),
    plus `X86_TUNING` on x86.

    A fresh one per call: MCJIT takes ownership of the machine it is created with.
    """
    _ensure_initialized()
    target = llvm.Target.from_default_triple()
    features = llvm.get_host_cpu_features().flatten()
    if target.name.startswith("x86"):
        features = f"{features},{X86_TUNING}" if features else X86_TUNING
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=features,
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


class JitModuleError(Exception):
    """An object that cannot be loaded (a symbol it needs is missing, or LLVM rejects
    it): the cache treats its entry as bad and compiles again."""


class JitModule:
    """Natively compiled functions of one LLVM module (or of one object file).

    Holds the MCJIT execution engine: the code lives as long as this object does, and
    every function returned by `get_function` keeps a reference to it.
    """

    def __init__(
        self,
        engine: llvm.ExecutionEngine,
        target_machine: llvm.TargetMachine,
        functions: dict[str, int],
        *,
        optimized_ir: str | Callable[[], str] | None = None,
        object_code: bytes | None = None,
        externals: Sequence[str] = (),
        keep_alive: object = None,
    ):
        self._engine = engine
        self._target_machine = target_machine
        self._functions = dict(functions)  # defined function -> parameter count
        self._optimized_ir = optimized_ir
        self._asm: str | None = None
        self.object_code = object_code  # what MCJIT generated; None if not captured
        self.externals = tuple(externals)  # functions the code calls outside itself
        self._keep_alive = keep_alive  # the module the engine owns

    def function_names(self) -> list[str]:
        """Names of the functions the module defines and exports (not just declares)."""
        return list(self._functions)

    def function_arity(self) -> dict[str, int]:
        """Parameter count of every defined function (stored with cached objects)."""
        return dict(self._functions)

    def address(self, name: str) -> int:
        """The address of the function `name` (for `llvm.add_symbol`); KeyError if the
        module does not define it. The code lives as long as this object."""
        address = self._engine.get_function_address(name) if name in self._functions else 0
        if not address:
            raise KeyError(f"no function @{name} in the JIT module")
        return address

    def get_function(self, name: str, argtypes: Sequence[Any] | None = None) -> ctypes._CFuncPtr:
        """A ctypes callable for the void function `name`.

        `argtypes` defaults to one `ctypes.c_void_p` per parameter of the function.
        Raises KeyError if the module defines no such function.
        """
        address = self.address(name)
        if argtypes is None:
            argtypes = [ctypes.c_void_p] * self._functions[name]
        cfunc = ctypes.CFUNCTYPE(None, *argtypes)(address)
        cfunc._jit_module = self  # type: ignore[attr-defined]  # keeps the code alive
        return cfunc

    def optimized_ir(self) -> str:
        """The LLVM IR after the optimization pipeline (before code generation)."""
        if callable(self._optimized_ir):
            self._optimized_ir = self._optimized_ir()
        if self._optimized_ir is None:
            raise ValueError("this module was loaded from an object without its IR")
        return self._optimized_ir

    def asm(self) -> str:
        """Host assembly of the optimized module."""
        if self._asm is None:
            # A copy: codegen on the engine-owned module would race with its object.
            copy = llvm.parse_assembly(self.optimized_ir())
            self._asm = self._target_machine.emit_assembly(copy)
        return self._asm


def _new_engine(module: llvm.ModuleRef, target_machine: llvm.TargetMachine
                ) -> llvm.ExecutionEngine:
    """The one place an MCJIT engine is made, for compiled and for loaded code alike
    (whatever symbols generated code needs from the runtime must be registered before
    this, in both cases)."""
    return llvm.create_mcjit_compiler(module, target_machine)


_process = ctypes.CDLL(None)


def _resolvable(symbol: str) -> bool:
    """Whether MCJIT can resolve `symbol`: registered with `llvm.add_symbol`, or
    exported by the process and the libraries it loaded."""
    return bool(llvm.address_of_symbol(symbol)) or hasattr(_process, symbol)


def _externals(module: llvm.ModuleRef) -> list[str]:
    """Functions the module calls but does not define (intrinsics aside)."""
    return sorted(f.name for f in module.functions
                  if f.is_declaration and not f.name.startswith("llvm."))


def compile_ir(llvm_ir_text: str, *, opt_level: int = 3) -> JitModule:
    """Parse, verify, optimize (O`opt_level`, host CPU) and JIT-compile LLVM IR text,
    keeping the generated object."""
    target_machine = host_target_machine(opt_level)
    module = llvm.parse_assembly(llvm_ir_text)
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    module.verify()
    optimize(module, target_machine, opt_level)
    optimized_ir = str(module)
    provide_runtime(_externals(module))  # the thread pool, if the code calls it
    engine = _new_engine(module, target_machine)
    objects: list[bytes] = []
    # MCJIT hands every object it generates to the cache hook: keep a copy.
    engine.set_object_cache(lambda _module, buffer: objects.append(bytes(buffer)), None)
    engine.finalize_object()
    # Local functions have no symbol to look up (LLVM may also have inlined them away).
    local = (llvm.Linkage.internal, llvm.Linkage.private)
    functions = {f.name: len(list(f.arguments)) for f in module.functions
                 if not f.is_declaration and f.linkage not in local}
    return JitModule(engine, target_machine, functions, optimized_ir=optimized_ir,
                     object_code=objects[0] if len(objects) == 1 else None,
                     externals=_externals(module), keep_alive=module)


def load_object(object_code: bytes, functions: dict[str, int], *, opt_level: int = 3,
                externals: Sequence[str] = (),
                optimized_ir: str | Callable[[], str] | None = None) -> JitModule:
    """A `JitModule` from an object `compile_ir` generated on this host (no parsing,
    optimization or code generation). `functions` maps each function to its
    parameter count; `externals` are checked first, since MCJIT aborts the process on
    a symbol it cannot resolve. Raises JitModuleError if the object cannot be used."""
    provide_runtime(externals)  # the thread pool, if the code calls it
    missing = [s for s in externals if not _resolvable(s)]
    if missing:
        raise JitModuleError(f"unresolved symbols {', '.join(missing)}")
    target_machine = host_target_machine(opt_level)
    module = llvm.parse_assembly("")  # MCJIT needs a module to start from
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    engine = _new_engine(module, target_machine)
    try:
        engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
        engine.finalize_object()
    except (RuntimeError, OSError) as e:
        raise JitModuleError(f"LLVM could not load the object: {e}") from None
    missing = [n for n in functions if not engine.get_function_address(n)]
    if missing:
        raise JitModuleError(f"the object does not define {', '.join(missing)}")
    return JitModule(engine, target_machine, functions, optimized_ir=optimized_ir,
                     object_code=object_code, externals=externals, keep_alive=module)


def compressed_ir(jit: JitModule) -> bytes:
    """The optimized IR, compressed, as cache entries store it."""
    return zlib.compress(jit.optimized_ir().encode(), 1)


def ir_loader(compressed: bytes) -> Callable[[], str]:
    """Reads back `compressed_ir` on demand (a warm start never needs it)."""
    return lambda: zlib.decompress(compressed).decode()


def jit_compile(llvm_ir_text: str, *, opt_level: int = 3,
                cache: CompileCache | None = None) -> JitModule:
    """Parse, verify, optimize (O`opt_level`, host CPU) and JIT-compile LLVM IR text.

    With a `cache`, the object is looked up by the IR text (and the toolchain, see
    `cache.py`) first, and stored after a compile.
    """
    if cache is None:
        return compile_ir(llvm_ir_text, opt_level=opt_level)
    from frame_mlir.backend.llvm.cache import make_key

    key, material = make_key("llvm-ir", {
        "ir_sha256": hashlib.sha256(llvm_ir_text.encode()).hexdigest(),
        "opt_level": opt_level})
    entry = cache.load(key, material)
    if entry is not None:
        try:
            return load_object(entry.obj, entry.meta["functions"], opt_level=opt_level,
                               externals=entry.meta["externals"],
                               optimized_ir=ir_loader(entry.extra))
        except (JitModuleError, KeyError, TypeError) as e:
            cache.discard(key, str(e))
    jit = compile_ir(llvm_ir_text, opt_level=opt_level)
    if jit.object_code is not None:
        cache.store(key, material, {"functions": jit.function_arity(),
                                    "externals": list(jit.externals)},
                    jit.object_code, compressed_ir(jit))
    return jit
