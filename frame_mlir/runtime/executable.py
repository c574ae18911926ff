"""Compiled functions and their buffers.

After bufferization every function takes only memrefs, and its argument
attributes say what each one is: a data input, a parameter (`frame.param`),
an out-parameter for a result (`frame.output`), the arena (`frame.arena`), or,
for a training loop (frame-train-loop), the step count (`frame.steps`) and the
buffer of losses (`frame.losses`). `compile_module` runs the shared pipeline,
reads that signature after the `loops` stage, finishes the lowering and
JIT-compiles the module; `Executable` then calls its functions on numpy-owned
host buffers. numpy only holds memory here: every computation runs in the
generated code.

Nothing here imports xDSL until a module is compiled: a run whose object comes
from the compile cache builds its signatures from the entry (`FunctionSignature.
from_json`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from frame_mlir import timing
from frame_mlir.backend.abi import (  # the ABI, part of this module's interface
    ArgInfo,
    FunctionSignature,
    aligned_empty,
    check_indices,
    signatures,
)
from frame_mlir.backend.llvm.jit import JitModule, jit_compile
from frame_mlir.backend.llvm.packed import bound_call

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

    from frame_mlir.backend.llvm.cache import CacheEntry, CompileCache
    from frame_mlir.compile_options import CompileOptions

class Executable:
    """A JIT-compiled module with the signatures of its functions."""

    def __init__(self, llvm_module: ModuleOp, sigs: dict[str, FunctionSignature], *,
                 opt_level: int = 3, cache: CompileCache | None = None):
        from frame_mlir.backend.llvm.translate import to_llvm_text

        llvm_ir = to_llvm_text(llvm_module)
        # The signatures' functions keep their names; kernels are named by content, so
        # a kernel compiled before (in this module, or cached from another) is reused.
        self._init(jit_compile(llvm_ir, opt_level=opt_level, cache=cache, public=sigs),
                   sigs, llvm_ir)

    def _init(self, jit: JitModule, sigs: dict[str, FunctionSignature],
              llvm_ir: str | None) -> None:
        self.signatures = sigs
        self.llvm_ir = llvm_ir  # None when the code came from the compile cache
        self.jit = jit
        self._callables: dict[str, Callable[..., None]] = {}
        self._arena: np.ndarray | None = None  # made by the first __call__: a Session
        # brings its own, and an arena can be large
        #: The last output array of each (function, argument position): reused by the
        #: next call when no one else holds it any more (`_output_buffer`).
        self._spare: dict[tuple[str, int], np.ndarray] = {}
        #: The profiler's (id, kind, name, layer, flops) records when the code was
        #: compiled with `CompileOptions(profile=True)` (`frame_mlir.runtime.profile`).
        self.profile: list[list[Any]] = []

    def _output_buffer(self, name: str, position: int, arg: ArgInfo) -> np.ndarray:
        """A buffer for an out-parameter: the one this argument got at the previous
        call when that array has no other reference left (the caller dropped the
        result), else a new one.

        Results stay fresh -- no array the caller can still reach is ever written --
        but a loop that drops each step's outputs gets the same warm pages back instead
        of new ones (fresh pages cost a fault and a zeroing each: ~1.5 ms of a
        transformer block's 58 ms step). The contents are not cleared: frame-bufferize
        writes every element of an out-parameter (it is a `tensor.empty`'s buffer,
        whose initial contents no computation reads)."""
        key = (name, position)
        spare = self._spare.get(key)
        # 3 references when no one else holds it: the dict's, `spare`'s and
        # getrefcount's own argument (CPython).
        if spare is not None and _REFCOUNTS and sys.getrefcount(spare) == 3:
            return spare
        buf = np.empty(arg.shape, dtype=arg.dtype)
        self._spare[key] = buf
        return buf

    def set_profile(self, records: list[list[Any]] | list[tuple[Any, ...]]) -> None:
        """Name this code's profiler counters (see `frame_mlir.runtime.profile`)."""
        self.profile = [list(r) for r in records]
        if self.profile:
            from frame_mlir.runtime.profile import register

            register(self.profile)

    @classmethod
    def from_jit(cls, jit: JitModule, sigs: dict[str, FunctionSignature],
                 llvm_ir: str | None = None) -> Executable:
        """An executable around code compiled (or loaded from the cache) already."""
        ex = cls.__new__(cls)
        ex._init(jit, sigs, llvm_ir)
        return ex

    @classmethod
    def from_cache_entry(cls, entry: CacheEntry, opt_level: int) -> Executable:
        """The executable a compile cache entry holds (its `cache_meta()` and object).
        Raises JitModuleError, KeyError, TypeError, ValueError or AttributeError for an
        entry that cannot be used."""
        from frame_mlir.backend.llvm.jit import ir_loader, load_object

        meta = entry.meta
        sigs = {n: FunctionSignature.from_json(s) for n, s in meta["signatures"].items()}
        jit = load_object(entry.obj, meta["functions"], opt_level=opt_level,
                          externals=meta["externals"], optimized_ir=ir_loader(entry.extra))
        ex = cls.from_jit(jit, sigs)
        ex.set_profile(meta.get("profile", []))
        return ex

    def cache_meta(self) -> dict[str, Any]:
        """What `from_cache_entry` needs besides the object: the signatures, the
        functions' parameter counts and the external symbols the code calls."""
        meta: dict[str, Any] = {
            "signatures": {n: s.to_json() for n, s in self.signatures.items()},
            "functions": self.jit.function_arity(), "externals": list(self.jit.externals)}
        if self.profile:
            meta["profile"] = self.profile
        return meta

    @property
    def arena(self) -> np.ndarray:
        """The scratch arena `__call__` passes (one for every function: they run one at
        a time)."""
        if self._arena is None:
            self._arena = aligned_empty(max([s.arena_size for s in self.signatures.values()]
                                            + [64]))
        return self._arena

    def function(self, name: str) -> Callable[..., None]:
        """The callable of `@name`: one address (an int or a `ctypes.c_void_p`) per
        argument, any number of them (`JitModule.get_function`: through the packed
        entry, see `backend/llvm/packed.py`). Made once per name (it holds the JIT
        module, not this executable: no reference cycle keeps the code alive)."""
        fn = self._callables.get(name)
        if fn is None:
            fn = self._callables[name] = self.jit.get_function(name)
        return fn

    def __call__(self, name: str, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        """Call `@name` on `inputs` (data inputs and params, in argument order) and
        return its results as new arrays, in result order.

        Arguments updated in place (parameters after SGD fusion, any argument marked
        `frame.aliasing_output`) work on a fresh copy, returned at their result index,
        so inputs are never mutated; the others are read in place when they already
        have the argument's dtype and a C-contiguous, 16-byte aligned layout (else
        from a copy that has).
        """
        sig = self.signatures[name]
        loop_args = sig.of_kind("steps", "losses")
        if loop_args:
            raise ValueError(f"@{name} is a training loop (arguments "
                             f"{', '.join(a.name for a in loop_args)}): run it through "
                             "frame_mlir.frontends.spec.trainer.Session.run")
        ins = sig.of_kind("input", "param")
        if len(inputs) != len(ins):
            raise ValueError(f"@{name} expects {len(ins)} inputs "
                             f"({', '.join(a.name for a in ins)}), found {len(inputs)}")
        results: dict[int, np.ndarray] = {}
        ptrs: list[int] = []
        keep: list[np.ndarray] = []  # an address does not keep its array alive
        it = iter(inputs)
        for a in sig.args:
            if a.kind == "arena":
                buf = self.arena
            elif a.kind == "output":
                buf = self._output_buffer(name, len(ptrs), a)
                results[a.result_index or 0] = buf
            else:
                given = np.asarray(next(it))
                if given.shape != a.shape:
                    raise ValueError(f"@{name}: input '{a.name}' expected shape "
                                     f"{list(a.shape)}, found {list(given.shape)}")
                if a.result_index is None and _usable_in_place(given, a.dtype):
                    # frame-bufferize never writes an argument that is not donated to a
                    # result: the caller's array is read where it is (a transformer
                    # step's 5 MB of inputs were copied on every call).
                    buf = given
                else:
                    buf = np.array(given, dtype=a.dtype, order="C", copy=True)
                if a.checks:
                    check_indices(name, a, buf)
                if a.result_index is not None:
                    results[a.result_index] = buf
            keep.append(buf)
            ptrs.append(buf.ctypes.data)
        self.function(name)(*ptrs)
        return tuple(results[i] for i in sorted(results))


#: Whether sys.getrefcount tells that no one else holds an array (CPython's reference
#: counts; elsewhere every call allocates).
_REFCOUNTS = sys.implementation.name == "cpython"


def _usable_in_place(given: np.ndarray, dtype: np.dtype) -> bool:
    """Whether a compiled function can read `given` itself: its dtype, C order, and
    the 16-byte alignment numpy's allocator gives every copy (a view at an odd offset
    is copied, as before)."""
    return (given.dtype == dtype and given.flags.c_contiguous
            and given.ctypes.data % 16 == 0)


#: compile_module's default: the cache the environment asks for.
ENV_CACHE: Any = object()


def compile_module(module: ModuleOp, *, lr: float | None = None, opt_level: int = 3,
                   after_pass: Callable[[ModulePass, ModuleOp], None] | None = None,
                   options: CompileOptions | None = None,
                   cache: CompileCache | None = ENV_CACHE) -> Executable:
    """Run the shared pipeline on a frame module (in place) and JIT-compile it.

    `lr` fuses SGD into `@f_train_step`; without it `@f_grad` returns gradients.
    With a `cache` (default `CompileCache.from_env()`, None for none) the module is
    first looked up by its own text (with `lr`, `options` and `opt_level`): a hit loads
    the compiled functions without running the pipeline (the module is then left as it
    was). On a miss the pipeline runs, the LLVM compile goes through the cache too
    (kernel by kernel, see `backend/llvm/jit.py`) and the whole result is stored under
    the module's key. An `after_pass` hook needs the passes to run: no module lookup.
    """
    from frame_mlir.passes.pipeline import run_pipeline

    if cache is ENV_CACHE:
        from frame_mlir.backend.llvm.cache import CompileCache

        cache = CompileCache.from_env()
    with timing.compile_session():
        key = material = None
        # A kernels-only cache (CompiledSpec's) keeps no module entries: no key to make.
        if cache is not None and after_pass is None and not cache.kernel_entries_only:
            with timing.section("cache lookup"):
                key, material = _module_key(module, lr, opt_level, options)
                cached = _load_module_entry(cache, key, material, opt_level)
            if cached is not None:
                return cached
        sigs: dict[str, FunctionSignature] = {}
        profiled: list[tuple[Any, ...]] = []

        def after_stage(stage: str, m: ModuleOp) -> None:
            if stage == "loops":  # after `loops`: kernels may add scratch to the arena
                sigs.update(signatures(m))
                from frame_mlir.passes.frame_profile_kernels import profile_records

                profiled.extend(profile_records(m))

        run_pipeline(module, lr, after_pass=after_pass, options=options,
                     after_stage=after_stage)
        ex = Executable(module, sigs, opt_level=opt_level, cache=cache)
        ex.set_profile(profiled)
        if cache is not None and key is not None and ex.jit.object_code is not None:
            from frame_mlir.backend.llvm.jit import compressed_ir

            assert material is not None
            with timing.section("cache store"):
                cache.store(key, material, ex.cache_meta(), ex.jit.object_code,
                            compressed_ir(ex.jit))
        return ex


def _module_key(module: ModuleOp, lr: float | None, opt_level: int,
                options: CompileOptions | None) -> tuple[str, dict[str, Any]]:
    """The cache key of compiling `module`: its text (a digest), and what the compile
    makes of it (the learning rate fused, the resolved options, the LLVM level)."""
    import dataclasses
    import hashlib

    from frame_mlir.backend.llvm.cache import make_key
    from frame_mlir.compile_options import CompileOptions

    text = str(module)
    resolved = (options or CompileOptions()).resolved()
    return make_key("frame-module", {
        "module_sha256": hashlib.sha256(text.encode()).hexdigest(), "lr": lr,
        "opt_level": opt_level, "options": dataclasses.asdict(resolved)})


def _load_module_entry(cache: CompileCache, key: str, material: dict[str, Any],
                       opt_level: int) -> Executable | None:
    """The executable of a module entry, or None (a miss, or an entry that cannot be
    used: then deleted, to be rebuilt)."""
    from frame_mlir.backend.llvm.jit import JitModuleError

    entry = cache.load(key, material)
    if entry is None:
        return None
    try:
        return Executable.from_cache_entry(entry, opt_level)
    except (JitModuleError, KeyError, TypeError, ValueError, AttributeError) as e:
        cache.discard(key, f"unusable entry: {e}")
        return None


class BoundFunction:
    """A compiled function with its arena and out-parameter buffers allocated.

    `call(buffers)` passes `buffers` for the input and param arguments (in argument
    order) and checks them; `bind(buffers)` prepares the pointer list once for buffers
    that stay the same from call to call (a training loop's staging, parameter and
    state buffers), and `run()` then calls with it -- no per-call checks or ctypes
    conversions, which dominate a small model's step otherwise."""

    def __init__(self, ex: Executable, sig: FunctionSignature):
        self.sig = sig
        self.fn = ex.function(sig.name)
        self.arena = aligned_empty(max(sig.arena_size, 64))
        #: result index -> host buffer of an out-parameter
        self.outputs = {a.result_index: np.zeros(a.shape, dtype=a.dtype)
                        for a in sig.of_kind("output")}
        self._bound: Callable[[], object] | None = None
        self._keep: list[np.ndarray] = []

    def _pointers(self, buffers: list[np.ndarray], check: bool) -> list[int]:
        it = iter(buffers)
        ptrs = []
        for a in self.sig.args:
            if a.kind == "arena":
                ptrs.append(self.arena.ctypes.data)
            elif a.kind == "output":
                ptrs.append(self.outputs[a.result_index].ctypes.data)
            else:
                buf = next(it)
                if buf.nbytes != a.nbytes or not buf.flags.c_contiguous:
                    raise ValueError(f"{self.sig.name}: argument '{a.name}' expects a "
                                     f"contiguous buffer of {a.nbytes} bytes, found "
                                     f"{buf.nbytes} bytes")
                if check and a.checks:  # labels out of range: an error, as in torch
                    # (the kernels would treat such a row as matching no class)
                    try:
                        check_indices(self.sig.name, a, buf)
                    except ValueError as e:
                        raise ValueError(f"feed: input '{a.name}': {e}") from None
                ptrs.append(buf.ctypes.data)
        return ptrs

    def call(self, buffers: list[np.ndarray]) -> None:
        """Run with `buffers` for the input and param arguments, in argument order."""
        self.fn(*self._pointers(buffers, True))

    def bind(self, buffers: list[np.ndarray]) -> None:
        """Fix `buffers` (kept alive here) for every later `run()`; the caller checks
        label ranges itself, once per data set."""
        self._keep = list(buffers)
        self._bound = bound_call(self.fn, self._pointers(self._keep, False))

    def run(self) -> None:
        """Call with the buffers of the last `bind`."""
        assert self._bound is not None, "bind() first"
        self._bound()
