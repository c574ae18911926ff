"""Training a v0 spec with the JIT-compiled train step.

The host side only owns buffers: the data input, target, parameters and the
arena are numpy arrays whose pointers are handed to `@<model>_train_step`,
which computes forward, backward and the fused SGD update in place.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from frame_mlir.frontend.lower_spec import LoweredModel, lower_spec
from frame_mlir.frontend.spec import ModelSpec
from frame_mlir.passes.pipeline import CompileOptions
from frame_mlir.runtime.executable import FunctionSignature, aligned_empty, compile_module
from frame_mlir.runtime.random import InitialValues, generate_initial_values


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


class CompiledSpec:
    """A spec compiled to native code: the forward function and the train step."""

    def __init__(self, spec: ModelSpec, *, opt_level: int = 3,
                 after_pass: Callable[[ModulePass, ModuleOp], None] | None = None,
                 options: CompileOptions | None = None):
        t0 = time.perf_counter()
        self.spec = spec
        self.lowered: LoweredModel = lower_spec(spec)
        module: ModuleOp = self.lowered.module
        self.executable = compile_module(module, lr=spec.optimizer.learning_rate,
                                         opt_level=opt_level, after_pass=after_pass,
                                         options=options)
        self.compile_seconds = time.perf_counter() - t0
        name = self.lowered.function
        predict = self.lowered.predict_function
        self.forward_sig = self.executable.signatures[name]
        self.step_sig = self.executable.signatures[f"{name}_train_step"]
        self.predict_sig = self.executable.signatures[predict]
        self.forward_fn = self.executable.function(name)
        self.step_fn = self.executable.function(f"{name}_train_step")
        self.predict_fn = self.executable.function(predict)


class Session:
    """Host buffers bound to a compiled spec: call `step()` to train one step."""

    def __init__(self, compiled: CompiledSpec, values: InitialValues | None = None):
        self.compiled = compiled
        spec = compiled.spec
        _check_host_memory(compiled)
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
        sigs = (compiled.step_sig, compiled.forward_sig, compiled.predict_sig)
        self.arena = aligned_empty(max([s.arena_size for s in sigs] + [64]))
        self._step_args = self._pointers(compiled.step_sig, self.loss)
        self._forward_args = self._pointers(compiled.forward_sig, self.loss)
        self._predict_args = self._pointers(compiled.predict_sig, self.prediction)

    def _pointers(self, sig: FunctionSignature, out: np.ndarray) -> list[ctypes.c_void_p]:
        """Pointers for one call of `sig`'s function; its single result goes to `out`."""
        ptrs = []
        data = iter(self.data)
        for a in sig.args:
            if a.kind == "arena":
                ptrs.append(ctypes.c_void_p(self.arena.ctypes.data))
            elif a.kind == "output":
                ptrs.append(ctypes.c_void_p(out.ctypes.data))
            else:
                buf = next(data) if a.kind == "input" else self.param_buffers[a.name]
                if buf.nbytes != a.nbytes:
                    raise ValueError(f"buffer '{a.name}' has {buf.nbytes} bytes, "
                                     f"the compiled function expects {a.nbytes}")
                ptrs.append(ctypes.c_void_p(buf.ctypes.data))
        return ptrs

    def step(self) -> float:
        """One training step; returns the loss computed before the update."""
        self.compiled.step_fn(*self._step_args)
        return float(self.loss)

    def evaluate(self) -> float:
        """The loss of the current parameters (forward only)."""
        self.compiled.forward_fn(*self._forward_args)
        return float(self.loss)

    def predict(self) -> np.ndarray:
        """The prediction layer's output for the current parameters (a new array)."""
        self.compiled.predict_fn(*self._predict_args)
        return self.prediction.copy()

    def params(self) -> dict[str, np.ndarray]:
        """The current parameters by name (copies)."""
        return {n: self.param_buffers[n].copy() for n in self.compiled.lowered.param_names}


def _available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is no such file)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _check_host_memory(compiled: CompiledSpec) -> None:
    """Fail clearly, before allocating, when a spec's buffers cannot fit in memory:
    the arena, every data input, parameter and output (a spec may ask for tensors of
    up to 2^31 - 1 elements each)."""
    sigs = (compiled.step_sig, compiled.forward_sig, compiled.predict_sig)
    arena = max(s.arena_size for s in sigs)
    host = sum(a.nbytes for a in compiled.step_sig.args if a.kind != "arena")
    host += sum(a.nbytes for a in compiled.predict_sig.of_kind("output"))
    available = _available_memory()
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
    """Compile (unless given) and train `spec` for `training.steps` steps."""
    compiled = compiled or CompiledSpec(spec)
    session = Session(compiled, values)
    steps = spec.training.steps
    log_at = set(logged_steps(steps, spec.training.log_every))
    losses = np.empty(steps, dtype=np.float32)
    logged: list[tuple[int, float]] = []
    t0 = time.perf_counter()
    for i in range(steps):
        loss = session.step()
        losses[i] = loss
        if i in log_at:
            logged.append((i, loss))
            if on_log is not None:
                on_log(i, loss)
    train_seconds = time.perf_counter() - t0
    evaluated = session.evaluate()
    return TrainResult(logged, losses, float(losses[-1]), evaluated, session.params(),
                       session.predict(), compiled.compile_seconds, train_seconds)
