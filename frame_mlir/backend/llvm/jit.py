"""In-process native code: LLVM IR text -> O3 for the host CPU -> MCJIT -> ctypes.

    jit = jit_compile(to_llvm_text(module))
    step = jit.get_function("train_step")          # void train_step(void *, ...)
    step(x.ctypes.data, w.ctypes.data, arena.ctypes.data)

Every lowered function takes bare pointers (see convert-func-to-llvm), so the default
argument types are `ctypes.c_void_p`; numpy buffers are passed as `arr.ctypes.data`.

How a module is compiled (`compile_ir`): `split.py` cuts it into one unit per defined
function, every function but the `public` ones named by its content, so identical
kernels are one unit. Each unit is optimized by the pipeline its role calls for
(`unit_pipeline`: O3 for GEMM micro-kernels) and turned into an object on its own -- on `compile_jobs()` worker threads at once, each with its own LLVM context and
target machine, so an object never depends on the worker count -- and all objects
are loaded into one MCJIT engine, which links the calls between them. A module the
splitter does not understand is compiled whole (`compile_whole`), as it always was.

Every compile keeps what it generated (`JitModule.object_code`: a bundle of the unit
objects and the name map, or one plain object for a whole-module compile), and
`load_object` turns it back into a `JitModule` without parsing, optimizing or
generating anything: that is what the compile cache (`cache.py`) stores and loads.
With a cache, every unit's object is also looked up and stored by the unit's text
(per-kernel entries: a model whose kernels were seen before compiles only new ones),
and `jit_compile(text, cache=...)` keeps a whole-module entry by the IR text too.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import locale
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import llvmlite.binding as llvm

from frame_mlir import timing
from frame_mlir.backend.llvm.machine import (
    host_cpu,
    host_target_machine,
    optimize,
    unit_pipeline,
)
from frame_mlir.backend.llvm.packed import (
    CTYPES_MAX_ARGS,
    PackedFunction,
    add_entries,
    entry_name,
)
from frame_mlir.backend.llvm.parallel_runtime import provide_runtime
from frame_mlir.backend.llvm.profile_runtime import EXPORTS as PROFILE_EXPORTS
from frame_mlir.backend.llvm.split import (
    SplitModule,
    Unit,
    UnsplittableModule,
    split_module,
)
from frame_mlir.compile_options import ENV_COMPILE_JOBS, env_flag
from frame_mlir.target.host import ensure_initialized, init_lock

if TYPE_CHECKING:
    from frame_mlir.backend.llvm.cache import CompileCache

ENV_JOBS = ENV_COMPILE_JOBS


def compile_jobs() -> int:
    """How many units `compile_ir` compiles at once: `$FRAME_COMPILE_JOBS` (a positive
    integer), else the cores this process may run on. Raises ValueError naming the
    variable for anything else: a typo should not silently mean one job."""
    from frame_mlir.target.host import available_cores, thread_count

    text = os.environ.get(ENV_JOBS, "").strip()
    if not text:
        return available_cores()
    try:
        return thread_count(text)
    except ValueError as err:
        raise ValueError(f"{ENV_JOBS}: {err}") from None


class JitModuleError(Exception):
    """An object that cannot be loaded (a symbol it needs is missing, or LLVM rejects
    it): the cache treats its entry as bad and compiles again."""


#: Starts the line before each unit's IR in `JitModule.optimized_ir()` (an LLVM IR
#: comment, followed by the unit's symbol and the functions it implements).
UNIT_MARK = "; frame-mlir unit "


class JitModule:
    """Natively compiled functions of one LLVM module (or of one object file).

    Holds the MCJIT execution engine: the code lives as long as this object does, and
    every function returned by `get_function` keeps a reference to it. Functions are
    looked up by their names in the compiled IR, whatever symbol implements them
    (`symbols`: the split compile names private functions by their content).
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
        symbols: dict[str, str] | None = None,
    ):
        self._engine = engine
        self._target_machine = target_machine
        self._functions = dict(functions)  # defined function -> parameter count
        self._symbols = dict(symbols or {})  # function -> its symbol, where they differ
        self._optimized_ir = optimized_ir
        self._asm: str | None = None
        self.object_code = object_code  # what was generated; None if not captured
        self.externals = tuple(externals)  # functions the code calls outside itself
        self._keep_alive = keep_alive  # the module the engine owns

    def function_names(self) -> list[str]:
        """Names of the functions the module defines and exports (not just declares),
        packed entries (`packed.py`) included."""
        return list(self._functions)

    def function_arity(self) -> dict[str, int]:
        """Parameter count of every defined function, packed entries included (stored
        with cached objects)."""
        return dict(self._functions)

    def symbol(self, name: str) -> str:
        """The symbol implementing the function `name` (itself unless renamed)."""
        return self._symbols.get(name, name)

    def address(self, name: str) -> int:
        """The address of the function `name` (for `llvm.add_symbol`); KeyError if the
        module does not define it. The code lives as long as this object."""
        address = (self._engine.get_function_address(self.symbol(name))
                   if name in self._functions else 0)
        if not address:
            raise KeyError(f"no function @{name} in the JIT module")
        return address

    def get_function(self, name: str, argtypes: Sequence[Any] | None = None
                     ) -> ctypes._CFuncPtr | PackedFunction:
        """A callable for the void function `name`, taking one address (an int or a
        `ctypes.c_void_p`) per parameter.

        Without `argtypes`: the function's packed entry (`packed.py`: one pointer to
        the array of its arguments, so any number of them) where the module has one,
        else a ctypes function of one `ctypes.c_void_p` per parameter -- which ctypes
        allows up to `CTYPES_MAX_ARGS` (the compile gives every function with more a
        packed entry). With `argtypes`: a ctypes function of those types. Raises
        KeyError if the module defines no such function.
        """
        address = self.address(name)
        arity = self._functions[name]
        fn: ctypes._CFuncPtr | PackedFunction
        if argtypes is None and self._functions.get(entry_name(name)) == 1:
            fn = PackedFunction(name, self.address(entry_name(name)), arity, self)
        else:
            if argtypes is None:
                argtypes = [ctypes.c_void_p] * arity
            if len(argtypes) > CTYPES_MAX_ARGS:
                raise ValueError(f"@{name} takes {len(argtypes)} arguments: ctypes calls "
                                 f"at most {CTYPES_MAX_ARGS}, and the module has no "
                                 f"packed entry @{entry_name(name)} for it")
            fn = ctypes.CFUNCTYPE(None, *argtypes)(address)
            fn._jit_module = self  # type: ignore[union-attr]  # keeps the code alive
        return fn

    def optimized_ir(self) -> str:
        """The LLVM IR after the optimization pipeline (before code generation): every
        unit's module after a `UNIT_MARK` line, for a split compile."""
        if callable(self._optimized_ir):
            self._optimized_ir = self._optimized_ir()
        if self._optimized_ir is None:
            raise ValueError("this module was loaded from an object without its IR")
        return self._optimized_ir

    def asm(self) -> str:
        """Host assembly of the optimized module (of every unit, one after the other)."""
        if self._asm is None:
            # Copies: codegen on the engine-owned module would race with its object.
            self._asm = "".join(
                self._target_machine.emit_assembly(llvm.parse_assembly(ir))
                for ir in _unit_texts(self.optimized_ir()))
        return self._asm


def _unit_texts(ir: str) -> list[str]:
    """The module text of every unit in `optimized_ir()` (the whole text for a
    whole-module compile)."""
    if not ir.startswith(UNIT_MARK):
        return [ir]
    texts: list[list[str]] = []
    for line in ir.splitlines(keepends=True):
        if line.startswith(UNIT_MARK):
            texts.append([])
        else:
            texts[-1].append(line)
    return ["".join(t) for t in texts]


def _new_engine(module: llvm.ModuleRef, target_machine: llvm.TargetMachine
                ) -> llvm.ExecutionEngine:
    """The one place an MCJIT engine is made, for compiled and for loaded code alike
    (whatever symbols generated code needs from the runtime must be registered before
    this, in both cases)."""
    return llvm.create_mcjit_compiler(module, target_machine)


_process = ctypes.CDLL(None)


#: Write the JIT's symbol map for `perf` (any value but empty or 0): see write_perf_map.
ENV_PERF_MAP = "FRAME_PERF_MAP"


def perf_map_enabled() -> bool:
    return env_flag(ENV_PERF_MAP)


def perf_map_path() -> str:
    """Where `perf report` looks for this process's JIT symbols."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"perf-{os.getpid()}.map")


def write_perf_map(engine: llvm.ExecutionEngine, names: dict[str, str],
                   objects: Sequence[bytes]) -> None:
    """Append `START SIZE name` lines (hex, perf's JIT map format) for the functions
    `names` (symbol -> what to call it: the model's own names, the kernel symbols of a
    split compile with the functions they implement) now loaded in `engine`, so `perf
    record` / `perf report` name every generated kernel. A function's size is the
    distance to the next one loaded (the last: the largest code section)."""
    starts = sorted((a, n) for s, n in names.items() if (a := engine.get_function_address(s)))
    if not starts:
        return
    text_max = 0
    for obj in objects:
        try:
            for section in llvm.ObjectFileRef.from_data(obj).sections():
                if section.is_text():
                    text_max = max(text_max, section.size())
        except (RuntimeError, OSError):
            continue
    lines = []
    for i, (start, name) in enumerate(starts):
        size = starts[i + 1][0] - start if i + 1 < len(starts) else text_max
        if i + 1 < len(starts) and size > max(text_max, 1):
            size = text_max  # the next one lies in another block of memory
        lines.append(f"{start:x} {max(size, 1):x} {name}\n")
    with open(perf_map_path(), "a", encoding="utf-8") as f:
        f.write("".join(lines))


def _provide_runtimes(externals: Sequence[str]) -> None:
    """Compile and register what the code calls of our runtimes (the thread pool, the
    profiler's counters) before an engine resolves its symbols."""
    provide_runtime(externals)
    if any(e in PROFILE_EXPORTS for e in externals):
        from frame_mlir.backend.llvm.profile_runtime import ensure_profile_runtime

        ensure_profile_runtime()


def _resolvable(symbol: str) -> bool:
    """Whether MCJIT can resolve `symbol`: registered with `llvm.add_symbol`, or
    exported by the process and the libraries it loaded."""
    return bool(llvm.address_of_symbol(symbol)) or hasattr(_process, symbol)


def _externals(module: llvm.ModuleRef) -> list[str]:
    """Functions the module calls but does not define (intrinsics aside)."""
    return sorted(f.name for f in module.functions
                  if f.is_declaration and not f.name.startswith("llvm."))


def compile_whole(llvm_ir_text: str, *, opt_level: int = 3) -> JitModule:
    """Parse, verify, optimize (O`opt_level`, host CPU) and JIT-compile LLVM IR text as
    one module, keeping the generated object: what `compile_ir` falls back to for a
    module it cannot split. A function of more than `CTYPES_MAX_ARGS` parameters gets
    its packed entry (`packed.py`) if the text has none."""
    llvm_ir_text, _ = add_entries(llvm_ir_text, None)
    target_machine = host_target_machine(opt_level)
    module = llvm.parse_assembly(llvm_ir_text)
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    module.verify()
    with timing.section("llvm: optimize"):
        optimize(module, target_machine, opt_level)
    optimized_ir = str(module)
    _provide_runtimes(_externals(module))
    engine = _new_engine(module, target_machine)
    objects: list[bytes] = []
    # MCJIT hands every object it generates to the cache hook: keep a copy.
    engine.set_object_cache(lambda _module, buffer: objects.append(bytes(buffer)), None)
    with timing.section("llvm: machine code"):
        engine.finalize_object()
    # Local functions have no symbol to look up (LLVM may also have inlined them away).
    local = (llvm.Linkage.internal, llvm.Linkage.private)
    functions = {f.name: len(list(f.arguments)) for f in module.functions
                 if not f.is_declaration and f.linkage not in local}
    if perf_map_enabled():
        write_perf_map(engine, {n: n for n in functions}, objects)
    return JitModule(engine, target_machine, functions, optimized_ir=optimized_ir,
                     object_code=objects[0] if len(objects) == 1 else None,
                     externals=_externals(module), keep_alive=module)


# --------------------------------------------------------------------------------------
# parallel LLVM: llvmlite's global lock, lifted for the compile workers

_worker = threading.local()


class _WorkerFreeLock:
    """Stands in for the RLock inside llvmlite's global `_LLVMLock`: threads marked as
    compile workers pass straight through, every other thread locks as before.

    Why: llvmlite (0.50) takes one process-wide lock around every call into LLVM, so
    threads compiling different modules would run one at a time. LLVM itself is safe
    for threads that share nothing -- each worker parses into its own LLVMContext and
    optimizes and emits with its own target machine and pass builder -- and ctypes
    releases the GIL during the calls, so unlocked workers run on every core."""

    def __init__(self, inner: Any):
        self._inner = inner

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if getattr(_worker, "free", False):
            return True
        return self._inner.acquire(blocking, timeout)

    def release(self) -> None:
        if not getattr(_worker, "free", False):
            self._inner.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _parallel_llvm() -> bool:
    """Install `_WorkerFreeLock` (once) and say whether workers may run unlocked: False
    when llvmlite's structures are not the ones this was written for, or when someone
    registered lock callbacks (numba does) that expect to run under the lock."""
    try:
        from llvmlite.binding import ffi
    except ImportError:
        return False
    llvm_lock = getattr(getattr(ffi, "lib", None), "_lock", None)
    lock_type = getattr(ffi, "_LLVMLock", None)
    if lock_type is None or not isinstance(llvm_lock, lock_type):
        return False
    if getattr(llvm_lock, "_cblist", None):
        return False
    with init_lock:
        inner = getattr(llvm_lock, "_lock", None)
        if isinstance(inner, _WorkerFreeLock):
            return True
        if not (callable(getattr(inner, "acquire", None))
                and callable(getattr(inner, "release", None))):
            return False
        llvm_lock._lock = _WorkerFreeLock(inner)
    return True


def _mark_worker() -> None:
    _worker.free = True


# --------------------------------------------------------------------------------------
# compiling units


@dataclass
class _UnitCode:
    """A unit's object and what linking and reporting need to know about it."""

    symbol: str
    object: bytes
    arity: int  # parameter count of the unit's function
    externals: list[str]  # functions its code calls outside the unit (intrinsics aside)
    optimized_ir: str | Callable[[], str]
    parse_s: float = 0.0  # parsing and verifying
    optimize_s: float = 0.0
    codegen_s: float = 0.0
    cached: bool = False

    def ir(self) -> str:
        if callable(self.optimized_ir):
            self.optimized_ir = self.optimized_ir()
        return self.optimized_ir


def _compile_unit(symbol: str, text: str, opt_level: int, role: str) -> _UnitCode:
    """Parse, verify, optimize and emit one unit. Everything LLVM touches here is this
    call's own (context, module, target machine, pass builder): the object depends on
    the text alone, whichever thread runs it and whatever runs beside it."""
    t0 = time.perf_counter()
    pipeline = unit_pipeline(opt_level, role)
    context = llvm.create_context()
    target_machine = host_target_machine(
        opt_level if pipeline.codegen is None else pipeline.codegen)
    module = llvm.parse_assembly(text, context)
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    module.verify()
    arity = len(list(module.get_function(symbol).arguments))
    t1 = time.perf_counter()
    optimize(module, target_machine, opt_level, pipeline)
    t2 = time.perf_counter()
    optimized_ir = str(module)
    obj = target_machine.emit_object(module)
    t3 = time.perf_counter()
    externals = _externals(module)
    module.close()  # before its context goes
    return _UnitCode(symbol, obj, arity, externals, optimized_ir, t1 - t0, t2 - t1, t3 - t2)


def _compile_units(todo: Sequence[Unit], opt_level: int, jobs: int) -> Iterator[_UnitCode]:
    """Compile units on up to `jobs` threads, yielding each result on the calling
    thread as it is done (in completion order)."""
    if jobs <= 1 or len(todo) <= 1 or not _parallel_llvm():
        for u in todo:
            yield _compile_unit(u.symbol, u.text, opt_level, u.role)
        return
    host_cpu()  # asked here, under the lock, not by the first workers at once
    # Longest first: the big kernels do not end up alone at the end.
    order = sorted(todo, key=lambda u: -len(u.text))
    pool = ThreadPoolExecutor(max_workers=min(jobs, len(todo)), initializer=_mark_worker,
                              thread_name_prefix="frame-llvm")
    # LLVM, on the worker threads, can leave the process's C locale at "C" (seen on
    # glibc with 2 jobs): Python's text files then default to ASCII. Put back what the
    # process had.
    saved_locale = locale.setlocale(locale.LC_ALL)
    try:
        pending: set[Future[_UnitCode]] = {
            pool.submit(_compile_unit, u.symbol, u.text, opt_level, u.role) for u in order}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if locale.setlocale(locale.LC_ALL) != saved_locale:
            locale.setlocale(locale.LC_ALL, saved_locale)


# --------------------------------------------------------------------------------------
# bundles: the objects of a split compile as one `object_code`

_BUNDLE_MAGIC = b"FRAMEBDL"
_BUNDLE_PREFIX = struct.Struct("<8sIQ")  # magic, version, header length
_BUNDLE_VERSION = 1


def encode_bundle(objects: Sequence[bytes], symbols: dict[str, str]) -> bytes:
    """One byte string holding the unit objects and the function -> symbol map (an
    ELF or Mach-O object never starts with the magic, so `load_object` tells them
    apart)."""
    header = json.dumps({"sizes": [len(o) for o in objects], "symbols": symbols},
                        sort_keys=True, separators=(",", ":")).encode()
    return b"".join([_BUNDLE_PREFIX.pack(_BUNDLE_MAGIC, _BUNDLE_VERSION, len(header)),
                     header, *objects])


def is_bundle(object_code: bytes) -> bool:
    return object_code[:len(_BUNDLE_MAGIC)] == _BUNDLE_MAGIC


def decode_bundle(object_code: bytes) -> tuple[list[bytes], dict[str, str]]:
    """The objects and the symbol map of `encode_bundle`; JitModuleError if damaged."""
    try:
        magic, version, header_len = _BUNDLE_PREFIX.unpack_from(object_code)
        if magic != _BUNDLE_MAGIC or version != _BUNDLE_VERSION:
            raise ValueError(f"not a version-{_BUNDLE_VERSION} bundle")
        start = _BUNDLE_PREFIX.size
        header = json.loads(object_code[start:start + header_len])
        sizes = [int(s) for s in header["sizes"]]
        symbols = {str(k): str(v) for k, v in header["symbols"].items()}
    except (struct.error, ValueError, KeyError, TypeError, AttributeError) as e:
        raise JitModuleError(f"unreadable object bundle ({e})") from None
    offset = _BUNDLE_PREFIX.size + header_len
    if offset + sum(sizes) != len(object_code):
        raise JitModuleError("object bundle sizes do not add up")
    objects = []
    for size in sizes:
        objects.append(object_code[offset:offset + size])
        offset += size
    return objects, symbols


def _load(objects: Sequence[bytes], functions: dict[str, int], symbols: dict[str, str],
          externals: Sequence[str], opt_level: int,
          optimized_ir: str | Callable[[], str] | None, object_code: bytes) -> JitModule:
    """Load objects into one MCJIT engine (which links their calls to each other).
    `externals` are checked first, since MCJIT aborts the process on a symbol it
    cannot resolve. Raises JitModuleError if the objects cannot be used."""
    _provide_runtimes(externals)
    missing = [s for s in externals if not _resolvable(s)]
    if missing:
        raise JitModuleError(f"unresolved symbols {', '.join(missing)}")
    target_machine = host_target_machine(opt_level)
    module = llvm.parse_assembly("")  # MCJIT needs a module to start from
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    engine = _new_engine(module, target_machine)
    try:
        for obj in objects:
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    except (RuntimeError, OSError) as e:
        raise JitModuleError(f"LLVM could not load the object: {e}") from None
    missing = [n for n in functions if not engine.get_function_address(symbols.get(n, n))]
    if missing:
        raise JitModuleError(f"the object does not define {', '.join(missing)}")
    if perf_map_enabled():
        names: dict[str, str] = {}  # symbol -> the functions it implements
        for original, symbol in {**{n: n for n in functions}, **symbols}.items():
            names[symbol] = f"{names[symbol]},{original}" if symbol in names else original
        write_perf_map(engine, names, objects)
    return JitModule(engine, target_machine, functions, optimized_ir=optimized_ir,
                     object_code=object_code, externals=externals, keep_alive=module,
                     symbols={n: s for n, s in symbols.items() if n != s})


def load_object(object_code: bytes, functions: dict[str, int], *, opt_level: int = 3,
                externals: Sequence[str] = (),
                optimized_ir: str | Callable[[], str] | None = None) -> JitModule:
    """A `JitModule` from the `object_code` of a compile on this host (no parsing,
    optimization or code generation): a bundle of a split compile or a plain object.
    `functions` maps each function to its parameter count; `externals` are checked
    first, since MCJIT aborts the process on a symbol it cannot resolve. Raises
    JitModuleError if the object cannot be used."""
    if is_bundle(object_code):
        objects, symbols = decode_bundle(object_code)
    else:
        objects, symbols = [object_code], {}
    return _load(objects, functions, symbols, externals, opt_level, optimized_ir,
                 object_code)


def compressed_ir(jit: JitModule) -> bytes:
    """The optimized IR, compressed, as cache entries store it."""
    return zlib.compress(jit.optimized_ir().encode(), 1)


def ir_loader(compressed: bytes) -> Callable[[], str]:
    """Reads back `compressed_ir` on demand (a warm start never needs it)."""
    return lambda: zlib.decompress(compressed).decode()


# --------------------------------------------------------------------------------------
# the split compile


def _unit_key(unit: Unit, opt_level: int) -> tuple[str, dict[str, Any]]:
    from frame_mlir.backend.llvm.cache import make_key

    p = unit_pipeline(opt_level, unit.role)
    return make_key("llvm-unit", {"ir_sha256": hashlib.sha256(unit.text.encode()).hexdigest(),
                                  "opt_level": opt_level,
                                  "pipeline": [p.speed, p.vectorize, p.unroll, p.codegen]})


def _cached_unit(cache: CompileCache, unit: Unit, opt_level: int) -> _UnitCode | None:
    symbol = unit.symbol
    key, material = _unit_key(unit, opt_level)
    entry = cache.load(key, material)
    if entry is None:
        return None
    try:
        meta = entry.meta
        if meta["symbol"] != symbol:
            raise ValueError(f"defines @{meta['symbol']}")
        return _UnitCode(symbol, entry.obj, int(meta["arity"]),
                         [str(e) for e in meta["externals"]], ir_loader(entry.extra),
                         cached=True)
    except (KeyError, TypeError, ValueError) as e:
        cache.discard(key, f"unusable unit entry: {e}")
        return None


def _store_unit(cache: CompileCache, unit: Unit, opt_level: int, code: _UnitCode) -> None:
    key, material = _unit_key(unit, opt_level)
    cache.store(key, material, {"symbol": code.symbol, "arity": code.arity,
                                "externals": code.externals},
                code.object, zlib.compress(code.ir().encode(), 1), evict=False)


def compile_ir(llvm_ir_text: str, *, opt_level: int = 3,
               public: Collection[str] | None = None, jobs: int | None = None,
               cache: CompileCache | None = None) -> JitModule:
    """Parse, verify, optimize (O`opt_level`, host CPU) and JIT-compile LLVM IR text,
    one unit per function (see the module docstring), keeping the generated objects.

    `public`: the functions the caller will look up by name (None: all of them); every
    defined function stays callable by its name either way. Each of them, and every
    function of more than `CTYPES_MAX_ARGS` parameters, gets a packed entry
    (`packed.py`: `get_function` calls through it). `jobs`: units compiled at once
    (default `compile_jobs()`); the objects are the same for every count. `cache`:
    looked up and filled unit by unit (its per-kernel entries).
    """
    ensure_initialized()
    llvm_ir_text, entries = add_entries(llvm_ir_text, public)
    if public is not None:
        public = {*public, *entries}
    try:
        with timing.section("llvm: split"):
            split = split_module(llvm_ir_text, public)
    except UnsplittableModule:
        return compile_whole(llvm_ir_text, opt_level=opt_level)
    jobs = compile_jobs() if jobs is None else max(1, jobs)
    units = {u.symbol: u for u in split.units}
    codes: dict[str, _UnitCode] = {}
    if cache is not None:
        with timing.section("llvm: cache lookup"):
            for unit in split.units:
                code = _cached_unit(cache, unit, opt_level)
                if code is not None:
                    codes[unit.symbol] = code
    try:
        _compile_missing(split, codes, opt_level, jobs, cache)
    except RuntimeError:
        # LLVM rejected a unit (parsing or verifying it). If the module itself is
        # wrong, the whole-module compile says so in its own terms; if the splitter
        # misread a valid module, the module still compiles.
        return compile_whole(llvm_ir_text, opt_level=opt_level)
    try:
        with timing.section("llvm: load"):
            return _link(split, codes, opt_level)
    except JitModuleError as e:
        cached = [s for s, c in codes.items() if c.cached]
        if not cached:
            raise
        # An object from the cache that does not load: compile those units again
        # (their new objects replace the entries).
        for symbol in cached:
            if cache is not None:
                cache.discard(_unit_key(units[symbol], opt_level)[0], str(e))
            del codes[symbol]
        _compile_missing(split, codes, opt_level, jobs, cache)
        with timing.section("llvm: load"):
            return _link(split, codes, opt_level)


def _compile_missing(split: SplitModule, codes: dict[str, _UnitCode], opt_level: int,
                     jobs: int, cache: CompileCache | None) -> None:
    """Compile the units `codes` lacks (storing each in `cache`), recording the
    workers' time and the progress."""
    todo = [u for u in split.units if u.symbol not in codes]
    units = {u.symbol: u for u in todo}
    jobs = min(jobs, max(1, len(todo)))
    label = (f"llvm ({jobs} job{'s' if jobs > 1 else ''}, {len(split.units)} units, "
             f"{len(split.units) - len(todo)} cached)")
    with timing.section(label):
        timing.set_kernel_total(len(todo))
        for code in _compile_units(todo, opt_level, jobs):
            codes[code.symbol] = code
            timing.add("llvm: parse", code.parse_s)
            timing.add("llvm: optimize", code.optimize_s)
            timing.add("llvm: machine code", code.codegen_s)
            timing.count_kernel()
            if cache is not None:
                _store_unit(cache, units[code.symbol], opt_level, code)
        if cache is not None and todo:
            cache.evict()


def _link(split: SplitModule, codes: dict[str, _UnitCode], opt_level: int) -> JitModule:
    """Load the units' objects (in module order, whatever order they were compiled in)
    into one engine."""
    units = [codes[u.symbol] for u in split.units]
    defined = {c.symbol for c in units}
    externals = sorted({e for c in units for e in c.externals} - defined)
    functions = {name: codes[symbol].arity for name, symbol in split.symbols.items()}
    objects = [c.object for c in units]

    def optimized_ir() -> str:
        return "".join(f"{UNIT_MARK}@{u.symbol}: {' '.join(u.originals)}\n"
                       f"{codes[u.symbol].ir()}" for u in split.units)

    return _load(objects, functions, split.symbols, externals, opt_level, optimized_ir,
                 encode_bundle(objects, split.symbols))


def jit_compile(llvm_ir_text: str, *, opt_level: int = 3,
                cache: CompileCache | None = None,
                public: Collection[str] | None = None,
                jobs: int | None = None) -> JitModule:
    """Parse, verify, optimize (O`opt_level`, host CPU) and JIT-compile LLVM IR text
    (`compile_ir`: `public`, `jobs`).

    With a `cache`, the whole module's object is looked up by the IR text (and the
    toolchain, see `cache.py`) first, and stored after a compile -- unless the cache
    keeps kernels only (`CompileCache.kernels_only`) -- and every unit goes through
    the cache's per-kernel entries.
    """
    if cache is None:
        return compile_ir(llvm_ir_text, opt_level=opt_level, public=public, jobs=jobs)
    kernels = cache.kernels()
    if cache.kernel_entries_only:
        return compile_ir(llvm_ir_text, opt_level=opt_level, public=public, jobs=jobs,
                          cache=kernels)
    from frame_mlir.backend.llvm.cache import make_key

    # `public` is not part of the key: it decides which symbols are renamed, not which
    # functions can be called by name (all of them, whoever compiled the entry), and
    # which functions get a packed entry, not which can be called: one without an entry
    # is called by ctypes directly (every function of more parameters than ctypes
    # takes gets one whatever `public` says).
    key, material = make_key("llvm-ir", {
        "ir_sha256": hashlib.sha256(llvm_ir_text.encode()).hexdigest(),
        "opt_level": opt_level})
    with timing.section("llvm: cache lookup"):
        entry = cache.load(key, material)
    if entry is not None:
        try:
            return load_object(entry.obj, entry.meta["functions"], opt_level=opt_level,
                               externals=entry.meta["externals"],
                               optimized_ir=ir_loader(entry.extra))
        except (JitModuleError, KeyError, TypeError) as e:
            cache.discard(key, str(e))
    jit = compile_ir(llvm_ir_text, opt_level=opt_level, public=public, jobs=jobs,
                     cache=kernels)
    if jit.object_code is not None:
        cache.store(key, material, {"functions": jit.function_arity(),
                                    "externals": list(jit.externals)},
                    jit.object_code, compressed_ir(jit))
    return jit
