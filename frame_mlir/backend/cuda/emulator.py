"""Runs CUDA kernels, as LLVM IR for the NVPTX target, on the host CPU.

    device = EmulatedDevice(device_llvm_ir)
    device.launch("k", grid=(4, 1, 1), block=(256, 1, 1),
                  args=[x.ctypes.data, y.ctypes.data])

The input is a device module as the pipeline writes it before libdevice linking and
NVPTX optimization: kernels (`define ptx_kernel void @k(ptr ...)`, or plain `define`s
named by `!nvvm.annotations`) whose parameters are all pointers, shared memory as
`addrspace(3)` globals, the special registers and barriers as `llvm.nvvm.*`
intrinsics, and libdevice math as calls of `__nv_*` declarations. It lets the GPU
code path's logic (indexing, barriers, shared memory) be tested on machines without a
GPU: the device pointers are plain host addresses (numpy buffers).

How. The module is rewritten for the host (`host_ir`): host triple, no address
spaces (one block runs at a time, so one global per shared buffer is right), the
intrinsics renamed to functions of a small C runtime (emulator.c), and compiled at O2
by MCJIT. The runtime defines the `__nv_*` functions (on libm) and
`frame_emu_launch`, which runs the blocks of a grid one after another and the threads
of a block as fibers that switch at barriers; see emulator.c. The runtime is built
once per source text with the host C compiler (`$CC`, else gcc or cc) into the
compile cache folder (`$FRAME_CACHE_DIR`, else the per-user cache), and loaded once
per process.

Semantics and limits. Threads of a block run in order (x fastest) from one barrier to
the next, so results are deterministic and data races are not detected. A block in
which some threads reach a barrier that others never reach (barrier divergence) is an
error; barriers are told apart by count, not by call site. Barrier ids are ignored
(every barrier is the whole block's). Warp-level intrinsics (shuffles, votes),
dynamic (`extern`) shared memory and non-pointer kernel parameters are not supported;
unsupported intrinsics and functions are reported when the module is loaded. libdevice
functions are libm's, so their last bit may differ from the GPU's. Each thread has a
256 KiB stack.
"""

from __future__ import annotations

import ctypes
import hashlib
import operator
import os
import platform
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm

from frame_mlir.backend.llvm.machine import host_target_machine, optimize

SOURCE = Path(__file__).with_name("emulator.c")
"""The C runtime (shipped as package data)."""

CFLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11")
"""How the runtime is compiled (part of the cache key)."""

OPT_LEVEL = 2
"""LLVM optimization level of the rewritten kernels."""

MAX_ARGS = 24
"""Most kernel parameters frame_emu_launch can pass."""

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
"""CUDA's launch limits (compute capability 3.0 and later)."""

_SREG_FUNCTIONS = {
    f"llvm.nvvm.read.ptx.sreg.{reg}.{axis}": f"frame_emu_{reg}_{axis}"
    for reg in ("tid", "ntid", "ctaid", "nctaid") for axis in "xyz"
}
_SREG_FUNCTIONS["llvm.nvvm.read.ptx.sreg.warpsize"] = "frame_emu_warpsize"

_INTRINSICS: dict[str, str] = {
    **_SREG_FUNCTIONS,
    "llvm.nvvm.barrier0": "frame_emu_barrier",
    # The forms LLVM's auto-upgrade and CUDA's bar.sync produce (with a barrier id).
    "llvm.nvvm.barrier.cta.sync.aligned.all": "frame_emu_barrier_id",
    "llvm.nvvm.barrier.cta.sync.all": "frame_emu_barrier_id",
    "llvm.nvvm.barrier.sync": "frame_emu_barrier_id",
    "llvm.nvvm.bar.sync": "frame_emu_barrier_id",
    "llvm.nvvm.membar.cta": "frame_emu_fence",
    "llvm.nvvm.membar.gl": "frame_emu_fence",
    "llvm.nvvm.membar.sys": "frame_emu_fence",
}
"""NVVM intrinsic -> runtime function that emulates it."""

_DECLARATIONS = {
    # memory(none): the value is constant for a thread, so LLVM may reuse it; every
    # thread is a separate call of the kernel (or fiber), so no value leaks across.
    **{name: f"declare i32 @{name}() nounwind willreturn memory(none)"
       for name in _SREG_FUNCTIONS.values()},
    # No memory attribute and no nocallback: to the optimizer a barrier may read and
    # write any memory another thread can reach (which it does: other threads run).
    # convergent: no transformation may make it conditional on more values.
    "frame_emu_barrier": "declare void @frame_emu_barrier() convergent nounwind",
    "frame_emu_barrier_id": "declare void @frame_emu_barrier_id(i32) convergent nounwind",
    "frame_emu_fence": "declare void @frame_emu_fence() nounwind",
}
"""Declarations of the runtime functions, with the attributes that keep them right."""

_BARRIERS = frozenset({"frame_emu_barrier", "frame_emu_barrier_id"})

_NAME = r'(?:"(?:[^"\\]|\\.)*"|[-\w.$]+)'
_DEFINE = re.compile(rf"^define\b([^@\n]*)@({_NAME})\s*\(", re.M)
_ANNOTATION = re.compile(rf'!\{{\s*ptr\s+@({_NAME})\s*,\s*!"kernel"\s*,\s*i32\s+1\s*\}}')
_NVVM_REF = re.compile(r"@(llvm\.nvvm\.[\w.]+)")
_NVVM_DECLARE = re.compile(r"^declare\b[^\n]*@llvm\.nvvm\.[^\n]*\n?", re.M)
_SHARED_LINKAGE = re.compile(
    rf"^(@{_NAME}\s*=\s*)(?:internal|private)\s+([^\n]*\baddrspace\(3\))", re.M)


class EmulatorError(RuntimeError):
    """A module the emulator cannot run, a kernel that failed (barrier divergence), or
    a runtime that could not be built."""


# --------------------------------------------------------------------------------------
# The C runtime: built once per source text, loaded once per process
# --------------------------------------------------------------------------------------


class _NvEntry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_char_p)]


def _compiler() -> str:
    """The host C compiler: `$CC`, else gcc, else cc."""
    configured = os.environ.get("CC", "").strip()
    for candidate in ([configured] if configured else []) + ["gcc", "cc"]:
        found = shutil.which(candidate)
        if found:
            return found
    raise EmulatorError("the CUDA emulator needs a C compiler to build its runtime "
                        "(emulator.c): none found ($CC, gcc, cc)")


def _cache_directory() -> Path:
    """Where built runtimes live: the compile cache folder (`$FRAME_CACHE_DIR`, else
    the per-user cache), subfolder cuda-emulator."""
    from frame_mlir.backend.llvm.cache import default_directory

    return default_directory() / "cuda-emulator"


def build_runtime(directory: Path | None = None) -> Path:
    """The shared library of emulator.c, compiled if no build of this exact source
    (and flags, and machine) is in `directory` (default: `_cache_directory()`).

    The file is named by a hash of what went into it, and written under a temporary
    name then renamed, so concurrent processes never load a half-written library and
    an edited emulator.c never loads a stale one. Falls back to a private temporary
    folder if the cache folder cannot be written.
    """
    source = SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join(
        [source, " ".join(CFLAGS).encode(), platform.machine().encode()])).hexdigest()
    name = f"libframe_emu-{key[:20]}.so"
    directory = _cache_directory() if directory is None else directory
    path = directory / name
    if path.exists():
        return path
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=directory)
    except OSError:
        directory = Path(tempfile.mkdtemp(prefix="frame-emu-"))
        path = directory / name
        fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=directory)
    os.close(fd)
    try:
        compiler = _compiler()
        proc = subprocess.run([compiler, *CFLAGS, "-o", tmp, str(SOURCE), "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise EmulatorError(f"building the CUDA emulator runtime failed "
                                f"({compiler} exited {proc.returncode}):\n{proc.stderr}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


class _Runtime:
    """The loaded C runtime: ctypes handle, the __nv_ table, the launch lock."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        # The same library (dlopen returns the same handle) for MCJIT's symbol lookup:
        # kernels call the runtime's frame_emu_* and __nv_* functions.
        llvm.load_library_permanently(str(path))
        launch = self.lib.frame_emu_launch
        launch.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                           *[ctypes.c_uint] * 6, ctypes.c_int]
        launch.restype = ctypes.c_int
        self.lib.frame_emu_error.restype = ctypes.c_char_p
        self.lib.frame_emu_nv_table.restype = ctypes.POINTER(_NvEntry)
        table = self.lib.frame_emu_nv_table()
        self.nv_functions: dict[str, str] = {}  # __nv_ name -> LLVM function type
        i = 0
        while table[i].name:
            self.nv_functions[table[i].name.decode()] = table[i].type.decode()
            i += 1
        # One scheduler per process (global state in C): launches take turns.
        self.lock = threading.Lock()


_runtime_lock = threading.Lock()
_runtime: _Runtime | None = None


def runtime() -> _Runtime:
    """The process's runtime, built (or found in the cache) and loaded on first use."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = _Runtime(build_runtime())
        return _runtime


# --------------------------------------------------------------------------------------
# The module rewrite
# --------------------------------------------------------------------------------------


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def kernel_names_of(device_ir: str) -> list[str]:
    """Kernels of a device module, in definition order: functions defined with the
    ptx_kernel calling convention, or named `"kernel"` in `!nvvm.annotations`."""
    annotated = {_unquote(m.group(1)) for m in _ANNOTATION.finditer(device_ir)}
    names = []
    for m in _DEFINE.finditer(device_ir):
        name = _unquote(m.group(2))
        if re.search(r"\bptx_kernel\b", m.group(1)) or name in annotated:
            names.append(name)
    return names


def host_ir(device_ir: str) -> str:
    """The device module rewritten for the host (triple and data layout are set after
    parsing): no address spaces, no kernel markers, the NVVM intrinsics as calls of
    the runtime. Raises EmulatorError naming any NVVM intrinsic it cannot emulate."""
    # LLVM's own printing first: llvmlite quotes every name (`@"llvm.nvvm..."`), LLVM
    # only those that need it, which the patterns below expect.
    try:
        device_ir = str(llvm.parse_assembly(device_ir))
    except RuntimeError as err:
        raise EmulatorError(f"the device module is not valid LLVM IR: {err}") from None
    text = re.sub(r"^target (?:datalayout|triple)\s*=[^\n]*\n?", "", device_ir, flags=re.M)
    text = re.sub(r"\bptx_(?:kernel|device)\s+", "", text)
    text = re.sub(r"^!nvvm\.annotations\s*=[^\n]*\n?", "", text, flags=re.M)
    # Shared buffers get external linkage: LLVM's globals analysis assumes an unknown
    # call (the barrier) cannot touch an internal global whose address never escapes,
    # and could then keep a shared value in a register across a barrier.
    text = _SHARED_LINKAGE.sub(r"\1\2", text)
    text = re.sub(r"\baddrspace\(\d+\)\s*", "", text)
    text = re.sub(r"\baddrspacecast\b", "bitcast", text)  # now between equal types
    # NVPTX's processor and features mean nothing to the host target (LLVM would warn).
    text = re.sub(r'"target-(?:cpu|features)"="[^"]*"', "", text)
    # Conservative attribute groups: a barrier does call back (other threads run).
    text = re.sub(r"^(attributes #\d+ = \{[^\n]*)", lambda m: re.sub(
        r"\b(?:nocallback|nosync)\b", "", m.group(1)), text, flags=re.M)

    used = sorted(set(_NVVM_REF.findall(text)))
    unknown = [name for name in used if name not in _INTRINSICS]
    if unknown:
        raise EmulatorError("the CUDA emulator cannot run NVVM intrinsic(s) "
                            + ", ".join(f"@{name}" for name in unknown))
    text = _NVVM_DECLARE.sub("", text)
    text = _NVVM_REF.sub(lambda m: "@" + _INTRINSICS[m.group(1)], text)
    needed = sorted({_INTRINSICS[name] for name in used})
    return text + "\n" + "".join(_DECLARATIONS[name] + "\n" for name in needed)


# --------------------------------------------------------------------------------------
# The device
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Kernel:
    address: int
    param_types: tuple[str, ...]
    may_sync: bool  # may reach a barrier: its threads need fibers


def _call_graph(module: llvm.ModuleRef) -> tuple[dict[str, set[str]], set[str]]:
    """Direct callees of every defined function, and the functions that make an
    indirect call (whose callee is unknown)."""
    callees: dict[str, set[str]] = {}
    indirect: set[str] = set()
    for f in module.functions:
        if f.is_declaration:
            continue
        out = callees.setdefault(f.name, set())
        for block in f.blocks:
            for inst in block.instructions:
                if inst.opcode not in ("call", "invoke", "callbr"):
                    continue
                callee = list(inst.operands)[-1]
                if callee.value_kind == llvm.ValueKind.function:
                    out.add(callee.name)
                else:
                    indirect.add(f.name)
    return callees, indirect


def _syncing_functions(module: llvm.ModuleRef) -> set[str]:
    """Defined functions that may reach a barrier (directly, through calls, or through
    an indirect call, conservatively)."""
    callees, indirect = _call_graph(module)
    syncing = set(indirect) | {f for f, cs in callees.items() if cs & _BARRIERS}
    changed = True
    while changed:
        changed = False
        for f, cs in callees.items():
            if f not in syncing and cs & syncing:
                syncing.add(f)
                changed = True
    return syncing


def _check_externals(module: llvm.ModuleRef, rt: _Runtime) -> None:
    """Refuse anything MCJIT could not resolve (it would abort the process) or the
    host backend could not select, with a message naming it."""
    problems = []
    unknown_nv, mismatched, foreign, nvvm = [], [], [], []
    for f in module.functions:
        if not f.is_declaration:
            continue
        name, ftype = f.name, str(f.global_value_type)
        if name.startswith("llvm.nvvm."):
            nvvm.append(name)  # appeared through LLVM's auto-upgrade of another name
        elif name.startswith("llvm.") or name in _DECLARATIONS:
            continue
        elif name.startswith("__nv_"):
            if name not in rt.nv_functions:
                unknown_nv.append(name)
            elif rt.nv_functions[name] != ftype:
                mismatched.append(f"@{name} declared as {ftype}, libdevice's is "
                                  f"{rt.nv_functions[name]}")
        else:
            foreign.append(name)
    if unknown_nv:
        problems.append("unknown libdevice function(s) "
                        + ", ".join(f"@{n}" for n in sorted(unknown_nv)))
    problems += mismatched
    if nvvm:
        problems.append("NVVM intrinsic(s) it cannot run: "
                        + ", ".join(f"@{n}" for n in sorted(nvvm)))
    if foreign:
        problems.append("external function(s) a device module cannot call: "
                        + ", ".join(f"@{n}" for n in sorted(foreign)))
    external_globals = [g.name for g in module.global_variables if g.is_declaration]
    if external_globals:
        problems.append("external global(s) (dynamic shared memory?) "
                        + ", ".join(f"@{n}" for n in sorted(external_globals)))
    if problems:
        raise EmulatorError("the CUDA emulator cannot run this module: "
                            + "; ".join(problems))


def _dims(what: str, dims: Sequence[int], limits: tuple[int, int, int]) -> tuple[int, ...]:
    """Validated launch dimensions (three positive integers within `limits`)."""
    try:
        values = tuple(dims)
    except TypeError:
        raise ValueError(f"{what} must be a tuple of three integers, got {dims!r}") from None
    if len(values) != 3:
        raise ValueError(f"{what} must have three dimensions (x, y, z), got {dims!r}")
    out = []
    for axis, value, limit in zip("xyz", values, limits, strict=True):
        if isinstance(value, bool):
            raise ValueError(f"{what}.{axis} must be an integer, got {value!r}")
        try:
            n = operator.index(value)
        except TypeError:
            raise ValueError(f"{what}.{axis} must be an integer, got {value!r}") from None
        if not 1 <= n <= limit:
            raise ValueError(f"{what}.{axis} = {n} is out of range: CUDA allows 1..{limit}")
        out.append(n)
    return tuple(out)


class EmulatedDevice:
    """Runs device LLVM IR kernels on the host CPU, CUDA semantics (grid of blocks,
    block of threads, barriers, shared memory)."""

    def __init__(self, device_llvm_ir: str):
        """Rewrite, check and compile every kernel of the module (see the module
        docstring). Raises EmulatorError for a module the emulator cannot run."""
        rt = runtime()
        names = kernel_names_of(device_llvm_ir)
        self.host_ir = host_ir(device_llvm_ir)
        """The module as compiled for the host (before optimization)."""
        target_machine = host_target_machine(OPT_LEVEL)
        try:
            module = llvm.parse_assembly(self.host_ir)
            module.triple = target_machine.triple
            module.data_layout = str(target_machine.target_data)
            module.verify()
        except RuntimeError as e:
            raise EmulatorError(f"the device module, rewritten for the host, does not "
                                f"parse or verify: {e}") from None
        _check_externals(module, rt)
        syncing = _syncing_functions(module)
        signatures: dict[str, tuple[str, ...]] = {}
        for name in names:
            f = module.get_function(name)
            if f.is_declaration:
                raise EmulatorError(f"kernel @{name} is declared but not defined")
            if not str(f.global_value_type).startswith("void "):
                raise EmulatorError(f"kernel @{name} must return void, its type is "
                                    f"{f.global_value_type}")
            signatures[name] = tuple(str(a.type) for a in f.arguments)
        optimize(module, target_machine, OPT_LEVEL)
        self._engine = llvm.create_mcjit_compiler(module, target_machine)
        self._engine.finalize_object()
        self._module = module  # owned by the engine; kept for its lifetime
        self._runtime = rt
        self._kernels: dict[str, _Kernel] = {}
        for name in names:
            address = self._engine.get_function_address(name)
            if not address:
                raise EmulatorError(f"kernel @{name} has no code after compilation")
            self._kernels[name] = _Kernel(address, signatures[name], name in syncing)

    def kernel_names(self) -> list[str]:
        """The module's kernels, in definition order."""
        return list(self._kernels)

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[int]) -> None:
        """Run kernel `name` over `grid` blocks of `block` threads and return when
        every thread has finished. `args` are the kernel's pointer arguments: host
        addresses (e.g. `arr.ctypes.data`).

        Raises ValueError for an unknown kernel or bad launch arguments, and
        EmulatorError if the kernel fails (barrier divergence).
        """
        kernel = self._kernels.get(name)
        if kernel is None:
            known = ", ".join(self._kernels) or "none"
            raise ValueError(f"no kernel named {name!r} in the module (kernels: {known})")
        g = _dims("grid", grid, MAX_GRID_DIMS)
        b = _dims("block", block, MAX_BLOCK_DIMS)
        threads = b[0] * b[1] * b[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise ValueError(f"block {b} has {threads} threads: CUDA allows at most "
                             f"{MAX_THREADS_PER_BLOCK} per block")
        args = list(args)
        params = kernel.param_types
        if len(args) != len(params):
            raise ValueError(f"kernel {name!r} takes {len(params)} argument(s), "
                             f"got {len(args)}")
        if len(params) > MAX_ARGS:
            raise ValueError(f"kernel {name!r} has {len(params)} parameters: the "
                             f"emulator passes at most {MAX_ARGS}")
        not_pointers = [i for i, t in enumerate(params) if t != "ptr"]
        if not_pointers:
            raise ValueError(f"kernel {name!r}: the emulator passes only pointer "
                             f"arguments; parameter(s) {not_pointers} have type(s) "
                             f"{[params[i] for i in not_pointers]}")
        addresses = []
        for i, arg in enumerate(args):
            try:
                address = operator.index(arg)
            except TypeError:
                raise ValueError(f"kernel {name!r} argument {i}: expected an address "
                                 f"(an integer), got {type(arg).__name__}") from None
            if not 0 <= address < 2**64:
                raise ValueError(f"kernel {name!r} argument {i}: {address} is not an "
                                 f"address")
            addresses.append(address)
        argv = (ctypes.c_void_p * max(len(addresses), 1))(*addresses)
        lib = self._runtime.lib
        with self._runtime.lock:
            rc = lib.frame_emu_launch(kernel.address, len(addresses), argv, *g, *b,
                                      int(kernel.may_sync))
            message = lib.frame_emu_error().decode(errors="replace") if rc else ""
        if rc:
            raise EmulatorError(f"kernel {name!r} (grid {g}, block {b}): {message}")
