"""Training a v0 spec with the JIT-compiled train step.

The host side only owns buffers: the data input, target, parameters and the
arena are numpy arrays whose pointers are handed to the generated code. A v0 spec
trains one fixed batch, so `train()` runs all its steps in one native call of
`@<model>_train_loop` (frame-train-loop), which calls `@<model>_train_step`
(forward, backward and the fused SGD update, in place) once per step and writes
each step's loss into a buffer; `Session.step()` still runs a single step.

`CompiledSpec` goes through the compile cache (`frame_mlir.backend.llvm.cache`):
the key comes from the validated spec and the compile options, so a cache hit
loads the object and the facts stored with it without importing xDSL or running
the pass pipeline.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from frame_mlir import timing
from frame_mlir.backend.llvm.packed import bound_call
from frame_mlir.frontends.spec.initial_values import InitialValues, generate_initial_values
from frame_mlir.frontends.spec.spec import ModelSpec
from frame_mlir.runtime import memory
from frame_mlir.runtime.executable import Executable, FunctionSignature, aligned_empty

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

    from frame_mlir.backend.llvm.cache import CacheEntry, CompileCache
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.lower import LoweredModel


@dataclass
class TrainResult:
    """What a training run produced."""

    logged: list[tuple[int, float]]
    losses: np.ndarray  # loss at every step, before that step's update
    final_loss: float  # loss at the last step (the seed tool's `final_loss`)
    evaluated_loss: float  # loss of the trained parameters (forward after the last update)
    params: dict[str, np.ndarray]
    predictions: np.ndarray  # the prediction layer's output after training
    compile_seconds: float
    train_seconds: float


def _plain(value: Any) -> Any:
    """A spec (nested frozen dataclasses, tuples, mappings) as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def spec_cache_material(spec: ModelSpec, opt_level: int,
                        options: CompileOptions | None) -> dict[str, Any]:
    """What a spec's compiled object depends on besides the toolchain.

    The whole validated spec except `training.steps` and `training.log_every`: the
    train loop takes its step count at run time and logging is the host's, so one
    object serves every step count. `options=None` is the pipeline's default
    `CompileOptions()`, whose thread count resolves to `default_threads()` (the
    environment and the cores, read here so that no xDSL import is needed).
    """
    doc = _plain(spec)
    for run_time_only in ("steps", "log_every"):
        doc["training"].pop(run_time_only)
    if options is None:
        from frame_mlir.compile_options import ENV_PROFILE, env_flag
        from frame_mlir.target.host import default_threads

        opts: Any = {"default": True, "threads": default_threads()}
        if env_flag(ENV_PROFILE):  # what `CompileOptions()` resolves to
            opts["profile"] = True
    else:
        opts = _plain(options.resolved())  # what the compile uses: threads filled in
    return {"spec": doc, "opt_level": opt_level, "options": opts}


#: `CompiledSpec(cache=...)`'s default: the cache the environment asks for.
ENV_CACHE: Any = object()


class CompiledSpec:
    """A spec compiled to native code: the forward, train-step, train-loop and predict
    functions, from the compile cache when it holds them.

    `cache`: a `CompileCache`, None for no cache, or (default) `CompileCache.from_env()`.
    An `after_pass` hook needs the passes to run, so it bypasses the cache. `lowered`
    (the frame module and its facts) exists only when this process compiled;
    `from_cache` says which happened.
    """

    def __init__(self, spec: ModelSpec, *, opt_level: int = 3,
                 after_pass: Callable[[ModulePass, ModuleOp], None] | None = None,
                 options: CompileOptions | None = None,
                 cache: CompileCache | None = ENV_CACHE):
        with timing.compile_session():
            self._init(spec, opt_level, after_pass, options, cache)

    def _init(self, spec: ModelSpec, opt_level: int,
              after_pass: Callable[[ModulePass, ModuleOp], None] | None,
              options: CompileOptions | None, cache: CompileCache | None | Any) -> None:
        t0 = time.perf_counter()
        self.spec = spec
        #: Split for data-parallel training (`options.data_parallel` ranks): the step
        #: is `@f_dp_grad` then `@f_dp_update` (frame-dp-split), and there is no loop.
        self.data_parallel = options is not None and options.data_parallel is not None
        self.lowered: LoweredModel | None = None
        self.from_cache = False
        if cache is ENV_CACHE:
            from frame_mlir.backend.llvm.cache import CompileCache

            cache = CompileCache.from_env()
        if after_pass is not None:
            cache = None
        key = material = None
        entry: CacheEntry | None = None
        if cache is not None:
            from frame_mlir.backend.llvm.cache import make_key

            with timing.section("cache lookup"):
                key, material = make_key("spec", spec_cache_material(spec, opt_level,
                                                                     options))
                entry = cache.load(key, material)
        if entry is not None:
            assert cache is not None and key is not None
            self.from_cache = self._load(entry, opt_level, cache, key)
        if not self.from_cache:
            self._compile(opt_level, after_pass, options, cache)
            if cache is not None and self.executable.jit.object_code is not None:
                assert key is not None and material is not None
                from frame_mlir.backend.llvm.jit import compressed_ir

                cache.store(key, material, self._entry_meta(),
                            self.executable.jit.object_code,
                            compressed_ir(self.executable.jit))
        self.compile_seconds = time.perf_counter() - t0
        self._bind_functions()

    def _compile(self, opt_level: int,
                 after_pass: Callable[[ModulePass, ModuleOp], None] | None,
                 options: CompileOptions | None,
                 cache: CompileCache | None = None) -> None:
        from frame_mlir.frontends.spec.lower import lower_spec
        from frame_mlir.runtime.executable import compile_module

        with timing.section("frontend"):
            self.lowered = lower_spec(self.spec)
        if self.data_parallel:
            from frame_mlir.frontends.spec.lower import mark_per_sample

            mark_per_sample(self.lowered)
        # Kernel entries only: the spec entry stored by the caller covers the module.
        self.executable = compile_module(
            self.lowered.module, lr=self.spec.optimizer.learning_rate, opt_level=opt_level,
            after_pass=after_pass, options=options,
            cache=None if cache is None else cache.kernels_only())
        self.function = self.lowered.function
        self.predict_function = self.lowered.predict_function
        self.param_names: tuple[str, ...] = tuple(self.lowered.param_names)

    def _entry_meta(self) -> dict[str, Any]:
        """What a warm start needs besides the object."""
        return {"function": self.function, "predict_function": self.predict_function,
                "param_names": list(self.param_names), **self.executable.cache_meta()}

    def _load(self, entry: CacheEntry, opt_level: int, cache: CompileCache, key: str) -> bool:
        """Use a cached object; False (and the entry deleted) when it cannot be used."""
        from frame_mlir.backend.llvm.jit import JitModuleError

        meta = entry.meta
        try:
            function, predict = str(meta["function"]), str(meta["predict_function"])
            params = tuple(str(p) for p in meta["param_names"])
            for name in (function, *self._step_names(function), predict):
                if name not in meta["signatures"]:
                    raise KeyError(f"no signature for @{name}")
            executable = Executable.from_cache_entry(entry, opt_level)
        except (JitModuleError, KeyError, TypeError, ValueError, AttributeError) as e:
            cache.discard(key, f"unusable entry: {e}")
            return False
        self.executable = executable
        self.function, self.predict_function, self.param_names = function, predict, params
        return True

    def _step_names(self, function: str) -> tuple[str, ...]:
        """The functions of one training step."""
        if self.data_parallel:
            return (f"{function}_dp_grad", f"{function}_dp_update")
        return (f"{function}_train_step",)

    def _bind_functions(self) -> None:
        name = self.function
        sigs = self.executable.signatures
        self.forward_sig = sigs[name]
        self.predict_sig = sigs[self.predict_function]
        self.forward_fn = self.executable.function(name)
        self.predict_fn = self.executable.function(self.predict_function)
        self.loop_sig: FunctionSignature | None = sigs.get(f"{name}_train_loop")
        if self.data_parallel:  # the two halves of the step (frontends/spec/data_parallel.py)
            self.grad_sig, self.update_sig = (sigs[n] for n in self._step_names(name))
            self.step_sig = self.grad_sig  # what check_host_memory reads
            self.loop_fn = None
            return
        self.step_sig = sigs[f"{name}_train_step"]
        self.step_fn = self.executable.function(f"{name}_train_step")
        self.loop_fn = (self.executable.function(f"{name}_train_loop")
                        if self.loop_sig is not None else None)


class Session:
    """Host buffers bound to a compiled spec: `step()` trains one step, `run(n)` n steps
    in one native call."""

    def __init__(self, compiled: CompiledSpec, values: InitialValues | None = None):
        self.compiled = compiled
        spec = compiled.spec
        check_host_memory(compiled)
        values = values or generate_initial_values(spec)
        # Data inputs bind by position ([data inputs..., target], the graph's input
        # order): user names need not be SSA names, and may even equal "target" or a
        # parameter's name. Parameters bind by their frame.param name.
        self.data: list[np.ndarray] = [
            np.ascontiguousarray(arr, dtype=np.float32).copy()
            for arr in (*values.inputs.values(), values.target)]
        self.param_buffers: dict[str, np.ndarray] = {
            name: np.ascontiguousarray(arr, dtype=np.float32).copy()
            for name, arr in values.params}
        self.loss = np.zeros((), dtype=np.float32)
        (out,) = compiled.predict_sig.of_kind("output")
        self.prediction = np.zeros(out.shape, dtype=np.float32)
        sigs = [compiled.step_sig, compiled.forward_sig, compiled.predict_sig]
        if compiled.loop_sig is not None:
            sigs.append(compiled.loop_sig)
        self.arena = aligned_empty(max([s.arena_size for s in sigs] + [64]))
        # The buffers stay the same from call to call: each call's arguments are
        # packed once (`bound_call`).
        self._step = (bound_call(compiled.step_fn, self._pointers(compiled.step_sig,
                                                                  self.loss))
                      if not compiled.data_parallel else None)
        self._forward = bound_call(compiled.forward_fn,
                                   self._pointers(compiled.forward_sig, self.loss))
        self._predict = bound_call(compiled.predict_fn,
                                   self._pointers(compiled.predict_sig, self.prediction))

    def _pointers(self, sig: FunctionSignature, out: np.ndarray,
                  loop: dict[str, np.ndarray] | None = None) -> list[int]:
        """Pointers for one call of `sig`'s function; its single result goes to `out`,
        a train loop's step count and losses come from `loop` (by kind)."""
        ptrs = []
        data = iter(self.data)
        for a in sig.args:
            if a.kind == "arena":
                ptrs.append(self.arena.ctypes.data)
            elif a.kind == "output":
                ptrs.append(out.ctypes.data)
            elif a.kind in ("steps", "losses"):
                if loop is None or a.kind not in loop:
                    raise ValueError(f"@{sig.name}: no buffer for the {a.kind} argument")
                ptrs.append(loop[a.kind].ctypes.data)
            else:
                buf = next(data) if a.kind == "input" else self.param_buffers[a.name]
                if buf.nbytes != a.nbytes:
                    raise ValueError(f"buffer '{a.name}' has {buf.nbytes} bytes, "
                                     f"the compiled function expects {a.nbytes}")
                ptrs.append(buf.ctypes.data)
        return ptrs

    def step(self) -> float:
        """One training step; returns the loss computed before the update."""
        assert self._step is not None, "a data-parallel step runs in DpSession"
        self._step()
        return float(self.loss)

    def run(self, steps: int) -> np.ndarray:
        """`steps` training steps in one call of `@<model>_train_loop` (bit-identical
        to as many `step()` calls); returns each step's loss, before its update."""
        steps = int(steps)
        if steps < 0:
            raise ValueError(f"steps: expected a count >= 0, found {steps}")
        sig, fn = self.compiled.loop_sig, self.compiled.loop_fn
        (losses_arg,) = sig.of_kind("losses") if sig is not None else (None,)
        dtype = losses_arg.dtype if losses_arg is not None else self.loss.dtype
        losses = np.zeros(steps, dtype=dtype)
        if sig is None or fn is None:  # a module without a loop: one call per step
            for i in range(steps):
                losses[i] = self.step()
            return losses
        count = np.array(steps, dtype=np.int64)
        fn(*self._pointers(sig, self.loss, {"steps": count, "losses": losses}))
        return losses

    def evaluate(self) -> float:
        """The loss of the current parameters (forward only)."""
        self._forward()
        return float(self.loss)

    def predict(self) -> np.ndarray:
        """The prediction layer's output for the current parameters (a new array)."""
        self._predict()
        return self.prediction.copy()

    def params(self) -> dict[str, np.ndarray]:
        """The current parameters by name (copies)."""
        return {n: self.param_buffers[n].copy() for n in self.compiled.param_names}


def check_host_memory(compiled: CompiledSpec) -> None:
    """Fail clearly, before allocating, when a spec's buffers cannot fit in memory:
    the arena, every data input, parameter and output (a spec may ask for tensors of
    up to 2^31 - 1 elements each)."""
    sigs = (compiled.step_sig, compiled.forward_sig, compiled.predict_sig)
    arena = max(s.arena_size for s in sigs)
    if compiled.loop_sig is not None:
        arena = max(arena, compiled.loop_sig.arena_size)
    host = sum(a.nbytes for a in compiled.step_sig.args if a.kind != "arena")
    host += sum(a.nbytes for a in compiled.predict_sig.of_kind("output"))
    available = memory.available_memory()
    if available is not None and arena + host > available:
        gib = 1 << 30
        raise MemoryError(f"the model needs {(arena + host) / gib:.1f} GiB of host buffers "
                          f"(an arena of {arena / gib:.1f} GiB for the intermediates, "
                          f"{host / gib:.1f} GiB for data, parameters and outputs), "
                          f"{available / gib:.1f} GiB are available")


def logged_steps(steps: int, log_every: int) -> list[int]:
    """Steps that print a line: every `log_every`-th (from 0) and the last one."""
    out = list(range(0, steps, log_every)) if log_every > 0 else []
    if steps - 1 not in out:
        out.append(steps - 1)
    return out


def train(spec: ModelSpec, *, on_log: Callable[[int, float], None] | None = None,
          compiled: CompiledSpec | None = None, values: InitialValues | None = None
          ) -> TrainResult:
    """Compile (unless given) and train `spec` for `training.steps` steps, all in one
    native call; `on_log` then sees the logged steps in order."""
    compiled = compiled or CompiledSpec(spec)
    session = Session(compiled, values)
    steps = spec.training.steps
    t0 = time.perf_counter()
    losses = session.run(steps)
    train_seconds = time.perf_counter() - t0
    logged: list[tuple[int, float]] = []
    for i in logged_steps(steps, spec.training.log_every):
        loss = float(losses[i])
        logged.append((i, loss))
        if on_log is not None:
            on_log(i, loss)
    evaluated = session.evaluate()
    return TrainResult(logged, losses, float(losses[-1]), evaluated, session.params(),
                       session.predict(), compiled.compile_seconds, train_seconds)
