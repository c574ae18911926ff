"""Issue 9's workloads W1-W4: frame-mlir beside PyTorch and JAX, against the core's peak.

Run:  python bench/bench_workloads.py [--quick] [--only W2,W4] [--threads 1,2]
                                      [--no-compile] [--no-jax] [--no-emit] [--no-launch]

One training step = forward + backward + SGD update on a fixed batch:

    W1  testdata/tiny_mlp.json   b8    4 -> 8 relu -> 1, mse (lr 0.05)
    W2  testdata/mnist_mlp.json  b64   784 -> 256 relu -> 10, mse (lr 0.01)
    W3  LeNet, built with the Python API (`import frame`): b64, input 1x28x28,
        conv 5x5 20 ch, max-pool 2, conv 5x5 50 ch, max-pool 2, flatten,
        linear 800 -> 500, relu, linear 500 -> 10, mse, SGD lr 0.01. The issue's
        "conv5*20, pool2, conv5*50, pool2, 500 relu, 10, mse" taken literally: no relu
        after the convolutions. Linear biases are [batch, out] as in every v0 spec (no
        broadcasting); conv biases are [out].
    W4  testdata/wide_mlp.json   b256  1024 -> 1024 relu -> 1024 relu -> 10, mse (lr 0.01)

What is timed (steady state, best of N repeats, each repeat long enough to be timed):

* frame-mlir, 1 and 2 threads: the train step compiled with `CompileOptions(threads=N)`.
  W1/W2/W4: `CompiledSpec(spec, options=...)` and `Session.step` (one ctypes call of
  `@<model>_train_step` with every buffer pre-bound, as frame-run trains). W3: the API's
  forward graph (`frame.Graph` + `frame.nn` modules) snapshotted with its parameter
  inputs marked `frame.param` -- exactly what `frame.build_backward_graph` does -- and
  compiled by `compile_module(module, lr=0.01, options=...)`, the entry point the
  spec path and the API share: `frame-sgd-fuse` puts forward, backward and the SGD
  update in one `@lenet_train_step`, called once per step with pre-bound buffers. (The
  API's public two-graph path, `build_backward_graph` + `build_sgd_update_graph` run
  through `Executable.run`, is two native calls plus copies of every input and output
  per step; it is not what is timed.) Threads reach W3 through `compile_module`'s
  `options`, so `frame_mlir/frontends/api/graph.py` needed no change. Every in-process compile
  passes `cache=None`: the figures time code compiled by this run's compiler.
* frame-mlir's whole loop: N steps in one native call of `@<model>_train_loop`
  (frame-train-loop): W1/W2/W4 through the trainer's `Session.run(n)`, W3 by calling
  the function on the step's buffers plus the step count and a losses buffer;
  "per-step only" when the module has no such function.
* PyTorch eager: `zero_grad`, forward, `backward`, `torch.optim.SGD.step`, with
  `torch.set_num_threads(N)`.
* `torch.compile` of that whole step function (dynamo splits it at `backward`;
  AOTAutograd compiles forward and backward, the update is compiled too). Skipped with
  the reason when it fails or compiles for longer than the timeout.
* JAX `jit` of one step (`value_and_grad` + update, parameters donated), blocking once
  per repeat, and `lax.scan` of K steps in one jitted call (ms/step = call time / K).
  (XLA:CPU runs LeNet's convolutions ~10x slower inside the scan's while loop than in
  the `jit` step -- measured with jax 0.10.2; `unroll=True` avoids it. The scan column
  is plain `lax.scan`, as the issue asks; only W1's target uses it.)

Every peer runs in its own subprocess limited to N cores (CPU affinity, set before
torch / jax load, so their thread pools are sized to N) with OMP/MKL_NUM_THREADS=N; JAX
also gets XLA_FLAGS `--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`
at 1 thread (`=true` and `=N` otherwise). Every peer starts from the same initial values
as frame-mlir and its first loss is checked against ours (a wrong peer model shows).

Peak: `bench/peak.py`, in the same run -- independent vector FMA chains on the host's
widest f32 vector, JIT-compiled with llvmlite. GFLOP/s counts, per step (the formula is
in `mlp_flops` / `lenet_flops`): 2*M*N*K per matrix product (forward, weight gradient,
and input gradient where the input depends on a parameter), convolutions as their
implicit GEMM (M = batch*OH*OW, N = out channels, K = in channels*KH*KW), plus 2 FLOPs
per parameter for the update; bias adds, relu, pooling and the loss are not counted.
"% peak" is the 1-thread step against the 1-core peak.

Launch to first step: a fresh `python` process that loads the spec, compiles (default
options: FRAME_NUM_THREADS, else every available core), binds a Session and finishes one
step; the time from spawning it to that point. Cold = an empty `FRAME_CACHE_DIR`, warm
= a second process on the same folder.

C++: `bench/bench_emit.py`'s build and timing of the `frame-dslc --emit` program for
W2 and W4, with FRAME_NUM_THREADS=1 for both the program and the JIT it is compared
with (W3 has no v0 spec, and `emit_program` needs one: not emitted).

Machines are noisy (2 shared cores here): compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from frame_mlir.frontends.spec.initial_values import generate_initial_values  # noqa: E402
from frame_mlir.frontends.spec.spec import ModelSpec  # noqa: E402
from frame_mlir.frontends.spec.spec_v0 import load_spec  # noqa: E402

WORKLOADS = ("W1", "W2", "W3", "W4")
SPEC_FILES = {"W1": "tiny_mlp.json", "W2": "mnist_mlp.json", "W4": "wide_mlp.json"}
TITLES = {
    "W1": "tiny_mlp b8 4-8-1",
    "W2": "mnist_mlp b64 784-256-10",
    "W3": "LeNet b64 (API)",
    "W4": "wide_mlp b256 1024x2-10",
}
LENET_BATCH, LENET_LR = 64, 0.01
#: Targets of issue 9.
W4_PEAK_FRACTION, W3_VS_TORCH, W2_VS_JAX, W1_VS_SCAN = 0.85, 0.8, 0.8, 0.2
THREAD_SPEEDUP, WARM_LAUNCH_S, COLD_LAUNCH_S, CPP_VS_JIT = 1.7, 0.3, 1.0, 1.2
THREADS_ENV = "FRAME_NUM_THREADS"  # frame_mlir.target.host.THREADS_ENV


# -- the workloads ---------------------------------------------------------------------


@dataclass
class Problem:
    """One workload's data, initial parameters and FLOP count, shared by every peer."""

    key: str
    lr: float
    x: np.ndarray
    t: np.ndarray
    params: list[tuple[str, np.ndarray]]
    flops: int
    spec: ModelSpec | None  # None for W3, which is built with the Python API


def mlp_flops(spec: ModelSpec) -> int:
    """FLOPs of one step of a v0 MLP: per layer y = x @ W[K, N] over B rows,
    forward 2BKN + weight gradient 2BKN (+ input gradient 2BKN when x depends on a
    parameter, i.e. is not the data input) + 2 per parameter element (p - lr * g)."""
    b, total, active = spec.batch, 0, set()
    for layer in spec.layers:
        k, n = layer.weight_shape
        gemm = 2 * b * k * n
        total += 2 * gemm + (gemm if layer.input in active else 0)
        active.add(layer.name)
    return total + 2 * sum(math.prod(s) for s in spec.param_shapes())


def lenet_flops(batch: int = LENET_BATCH) -> int:
    """FLOPs of one LeNet step. conv (Cin -> Cout, KxK, output OHxOW) as implicit GEMM:
    2 * (B*OH*OW) * Cout * (Cin*K*K) for the forward, the same for the weight gradient
    and for the input gradient (not for conv1, whose input is the data); linear layers
    as in `mlp_flops`; plus 2 per parameter element."""
    def conv(cin: int, cout: int, k: int, oh: int) -> int:
        return 2 * batch * oh * oh * cout * cin * k * k

    c1, c2 = conv(1, 20, 5, 24), conv(20, 50, 5, 8)
    f1, f2 = 2 * batch * 800 * 500, 2 * batch * 500 * 10
    params = sum(math.prod(s) for _, s in lenet_param_shapes(batch))
    return 2 * c1 + 3 * c2 + 3 * f1 + 3 * f2 + 2 * params


def lenet_param_shapes(batch: int = LENET_BATCH) -> list[tuple[str, tuple[int, ...]]]:
    """LeNet's parameters in `frame.nn` order (names as the Sequential makes them)."""
    return [("lenet.conv1.weight", (20, 1, 5, 5)), ("lenet.conv1.bias", (20,)),
            ("lenet.conv2.weight", (50, 20, 5, 5)), ("lenet.conv2.bias", (50,)),
            ("lenet.fc1.weight", (800, 500)), ("lenet.fc1.bias", (batch, 500)),
            ("lenet.fc2.weight", (500, 10)), ("lenet.fc2.bias", (batch, 10))]


def make_problem(key: str) -> Problem:
    """The data and initial values of workload `key` (deterministic)."""
    if key in SPEC_FILES:
        spec = load_spec(ROOT / "testdata" / SPEC_FILES[key])
        vals = generate_initial_values(spec)
        return Problem(key, spec.optimizer.learning_rate, vals.inputs[spec.input.name],
                       vals.target, list(vals.params), mlp_flops(spec), spec)
    rng = np.random.default_rng(2026)
    x = rng.uniform(0.0, 1.0, (LENET_BATCH, 1, 28, 28)).astype(np.float32)
    t = rng.uniform(0.0, 1.0, (LENET_BATCH, 10)).astype(np.float32)
    params = []
    fan_in = {"conv1": 25, "conv2": 500, "fc1": 800, "fc2": 500}
    for name, shape in lenet_param_shapes():
        bound = 1.0 / math.sqrt(fan_in[name.split(".")[1]])  # PyTorch's default range
        params.append((name, rng.uniform(-bound, bound, shape).astype(np.float32)))
    return Problem(key, LENET_LR, x, t, params, lenet_flops(), None)


# -- timing ------------------------------------------------------------------------------


def best_per_step(step: Callable[[], object], budget_s: float, repeats: int,
                  warmup: int = 3) -> float:
    """Best mean seconds per call of `step` over `repeats` runs of about `budget_s`."""
    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    step()
    one = time.perf_counter() - t0
    n = max(1, min(200_000, int(budget_s / max(one, 1e-7))))
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def best_per_step_batched(run: Callable[[int], object], per_step_guess: float,
                          budget_s: float, repeats: int) -> float:
    """Best seconds per step of `run(n)` (n steps in one call) over `repeats` calls."""
    n = max(1, min(1_000_000, int(budget_s / max(per_step_guess, 1e-8))))
    run(n)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(n)
        best = min(best, (time.perf_counter() - t0) / n)
    return best


# -- frame-mlir --------------------------------------------------------------------------


def lenet_graph() -> Any:
    """LeNet's forward graph (a `frame.Graph`): inputs [x, target, parameters...],
    output the mse loss."""
    import frame
    from frame import nn

    f32 = frame.DType.float32
    model = nn.Sequential("lenet", [
        nn.Conv2d("conv1", 1, 20, [5, 5], [1, 1], [0, 0], 1, True, f32),
        nn.MaxPool2d("pool1", [2, 2], [2, 2], [0, 0]),
        nn.Conv2d("conv2", 20, 50, [5, 5], [1, 1], [0, 0], 1, True, f32),
        nn.MaxPool2d("pool2", [2, 2], [2, 2], [0, 0]),
        nn.Flatten("flatten"),
        nn.Linear("fc1", LENET_BATCH, 800, 500, True, f32),
        nn.Relu("relu"),
        nn.Linear("fc2", LENET_BATCH, 500, 10, True, f32),
    ])
    assert [(n, tuple(s)) for n, s, _ in model.parameters()] == lenet_param_shapes()
    g = frame.Graph("lenet")
    x = g.add_graph_input([LENET_BATCH, 1, 28, 28], f32)
    target = g.add_graph_input([LENET_BATCH, 10], f32)
    params = nn.add_parameter_inputs(g, model)
    (pred,) = model.build(g, [x], params)
    (loss,) = nn.MseLoss("loss").build(g, [pred, target], [])
    g.mark_output(loss)
    return g


class ApiTrainStep:
    """W3's train step: the API graph compiled with SGD fused, one native call a step.

    The graph's snapshot gets `frame.param` on its parameter inputs, as
    `frame.build_backward_graph` marks its `wrt` inputs; `compile_module` with a
    learning rate then runs the spec path's pipeline (autodiff, `frame-sgd-fuse`, ...).
    """

    def __init__(self, problem: Problem, threads: int):
        from xdsl.dialects import builtin

        from frame_mlir.compile_options import CompileOptions
        from frame_mlir.passes.common import set_arg_attr
        from frame_mlir.runtime.executable import aligned_empty, compile_module

        t0 = time.perf_counter()
        fn, hidden = lenet_graph()._snapshot()
        assert not hidden, "LeNet has no non-splat constants"
        for i, (name, _) in enumerate(problem.params):
            set_arg_attr(fn, 2 + i, "frame.param", builtin.StringAttr(name))
        self.executable = compile_module(builtin.ModuleOp([fn]), lr=problem.lr,
                                         options=CompileOptions(threads=threads),
                                         **no_cache(compile_module))
        self.compile_seconds = time.perf_counter() - t0
        sig = self.executable.signatures["lenet_train_step"]
        self.loss = np.zeros((), np.float32)
        data = iter([problem.x.copy(), problem.t.copy()])
        params = {n: a.copy() for n, a in problem.params}
        self.arena = aligned_empty(max(sig.arena_size, 64))
        self._keep: list[np.ndarray] = []  # a c_void_p does not keep its array alive
        self.args: list[ctypes.c_void_p] = []
        for a in sig.args:  # bound by kind, in argument order, as Session binds
            if a.kind == "arena":
                buf = self.arena
            elif a.kind == "output":
                buf = self.loss
            elif a.kind == "input":
                buf = next(data)
            else:
                buf = params[a.name]
            assert buf.nbytes == a.nbytes, a
            self._keep.append(buf)
            self.args.append(ctypes.c_void_p(buf.ctypes.data))
        self._fn = self.executable.function("lenet_train_step")

    def step(self) -> float:
        self._fn(*self.args)
        return float(self.loss)


def no_cache(fn: Callable) -> dict[str, Any]:
    """`cache=None` when `fn` takes a compile cache: the in-process figures time code
    this run compiled (and compile_s is a real compile); only the launch test uses
    the cache."""
    import inspect

    return {"cache": None} if "cache" in inspect.signature(fn).parameters else {}


@dataclass
class FrameResult:
    """frame-mlir's figures for one workload at one thread count."""

    step_s: float
    compile_s: float
    loss0: float
    loop_s: float | None = None  # per step through the whole-loop path, if any
    from_cache: bool = False  # compile_s was a load from the compile cache


def loop_runner(executable: object, model: str, step_args: list[ctypes.c_void_p]
                ) -> Callable[[int], object] | None:
    """`run(n)`: n training steps in one native call of `@<model>_train_loop`, on the
    buffers the step is bound to (`step_args`, in the step's argument order: the loop
    takes the step's arguments followed by the step count and the losses). None when
    the module has no training loop."""
    sig = executable.signatures.get(f"{model}_train_loop")  # type: ignore[attr-defined]
    if sig is None:
        return None
    extra = [a.kind for a in sig.args[len(step_args):]]
    assert extra == ["steps", "losses"], extra
    fn = executable.function(f"{model}_train_loop")  # type: ignore[attr-defined]
    steps = np.zeros((), np.int64)
    state: dict[str, np.ndarray] = {"losses": np.zeros(1, np.float32)}

    def run(n: int) -> None:
        if state["losses"].size < n:  # grown before the timed call of that size
            state["losses"] = np.zeros(n, np.float32)
        steps[...] = n
        fn(*step_args, ctypes.c_void_p(steps.ctypes.data),
           ctypes.c_void_p(state["losses"].ctypes.data))

    return run


def bench_frame(problem: Problem, threads: int, budget_s: float, repeats: int) -> FrameResult:
    """Compile `problem` for `threads` and time its step (and its whole loop)."""
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.trainer import CompiledSpec, Session

    cached = False
    if problem.spec is None:
        api = ApiTrainStep(problem, threads)
        step, compile_s, loss0 = api.step, api.compile_seconds, api.step()
        loop = loop_runner(api.executable, "lenet", api.args)
    else:
        compiled = CompiledSpec(problem.spec, options=CompileOptions(threads=threads),
                                **no_cache(CompiledSpec))
        session = Session(compiled)
        step, compile_s, loss0 = session.step, compiled.compile_seconds, session.step()
        cached = bool(getattr(compiled, "from_cache", False))
        if getattr(compiled, "loop_fn", None) is not None:  # the trainer's whole loop
            loop = session.run
        else:
            model = getattr(compiled, "function", None) or compiled.lowered.function
            loop = loop_runner(compiled.executable, model, session._step_args)
    step_s = best_per_step(step, budget_s, repeats)
    loop_s = best_per_step_batched(loop, step_s, budget_s, repeats) if loop else None
    return FrameResult(step_s, compile_s, loss0, loop_s, cached)


# -- peers (each in a subprocess limited to N cores) -------------------------------------


def torch_loss_fn(problem: Problem, torch: Any) -> Callable[[dict], Any]:
    """The workload's loss as a function of a {name: tensor} parameter dict (`torch`
    is passed in: only the peer subprocesses import it)."""
    F = torch.nn.functional
    x, t = torch.from_numpy(problem.x.copy()), torch.from_numpy(problem.t.copy())
    spec = problem.spec
    if spec is None:
        def lenet(p: dict) -> object:
            y = F.max_pool2d(F.conv2d(x, p["lenet.conv1.weight"], p["lenet.conv1.bias"]), 2, 2)
            y = F.max_pool2d(F.conv2d(y, p["lenet.conv2.weight"], p["lenet.conv2.bias"]), 2, 2)
            y = torch.relu(y.flatten(1) @ p["lenet.fc1.weight"] + p["lenet.fc1.bias"])
            return F.mse_loss(y @ p["lenet.fc2.weight"] + p["lenet.fc2.bias"], t)

        return lenet

    def mlp(p: dict) -> object:
        values = {spec.input.name: x}
        for layer in spec.layers:
            y = values[layer.input] @ p[layer.weight_name]
            if layer.has_bias:
                y = y + p[layer.bias_name]
            values[layer.name] = torch.relu(y) if layer.activation == "relu" else y
        return F.mse_loss(values[spec.loss.prediction], t)

    return mlp


def torch_step(problem: Problem, torch: Any) -> Callable[[], Any]:
    """An eager training step (zero_grad, forward, backward, SGD) returning the loss."""
    loss_fn = torch_loss_fn(problem, torch)
    params = {n: torch.from_numpy(a.copy()).requires_grad_() for n, a in problem.params}
    opt = torch.optim.SGD(list(params.values()), lr=problem.lr)

    def step() -> object:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(params)
        loss.backward()
        opt.step()
        return loss

    return step


def jax_loss_fn(problem: Problem, jax: Any, jnp: Any) -> Callable[[list], Any]:
    """The workload's loss as a function of a parameter list (problem order)."""
    lax = jax.lax
    x, t = jnp.asarray(problem.x), jnp.asarray(problem.t)
    names = [n for n, _ in problem.params]
    spec = problem.spec
    if spec is None:
        def conv(y: object, w: object, b: object) -> object:
            y = lax.conv_general_dilated(y, w, (1, 1), "VALID",
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
            return y + b[None, :, None, None]

        def pool(y: object) -> object:
            return lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

        def lenet(ps: list) -> object:
            c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b = ps
            y = pool(conv(pool(conv(x, c1w, c1b)), c2w, c2b)).reshape(x.shape[0], -1)
            y = jnp.maximum(y @ f1w + f1b, 0.0) @ f2w + f2b
            return jnp.mean((y - t) ** 2)

        return lenet

    def mlp(ps: list) -> object:
        p = dict(zip(names, ps, strict=True))
        values = {spec.input.name: x}
        for layer in spec.layers:
            y = values[layer.input] @ p[layer.weight_name]
            if layer.has_bias:
                y = y + p[layer.bias_name]
            values[layer.name] = jnp.maximum(y, 0.0) if layer.activation == "relu" else y
        return jnp.mean((values[spec.loss.prediction] - t) ** 2)

    return mlp


def limit_cores(threads: int) -> None:
    """Pin this process to `threads` of its cores, before torch / jax load: their
    thread pools are sized from the affinity mask (all cores when there are fewer)."""
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])


def worker_torch(keys: list[str], threads: int, budget_s: float, repeats: int) -> None:
    """PyTorch eager, `threads` threads: one RESULT line per workload."""
    import torch

    torch.set_num_threads(threads)
    for key in keys:
        step = torch_step(make_problem(key), torch)
        loss0 = float(step().detach())
        emit(key, ms=best_per_step(step, budget_s, repeats) * 1e3, loss0=loss0)


def worker_torch_compile(key: str, threads: int, budget_s: float, repeats: int) -> None:
    """`torch.compile` of the whole eager step for one workload."""
    import torch

    torch.set_num_threads(threads)
    step = torch.compile(torch_step(make_problem(key), torch))
    t0 = time.perf_counter()
    loss0 = float(step().detach())
    compile_s = time.perf_counter() - t0
    emit(key, ms=best_per_step(step, budget_s, repeats) * 1e3, loss0=loss0,
         compile_s=compile_s)


def worker_jax(keys: list[str], threads: int, budget_s: float, repeats: int) -> None:
    """JAX jit of one step and lax.scan of K steps (XLA_FLAGS set by the parent)."""
    import jax
    import jax.numpy as jnp

    for key in keys:
        problem = make_problem(key)
        loss_fn, lr = jax_loss_fn(problem, jax, jnp), problem.lr

        def one(ps: list, loss_fn: Callable = loss_fn, lr: float = lr) -> tuple:
            loss, grads = jax.value_and_grad(loss_fn)(ps)
            return [p - lr * g for p, g in zip(ps, grads, strict=True)], loss

        jit_step = jax.jit(one, donate_argnums=0)
        state = {"ps": [jnp.asarray(a) for _, a in problem.params]}
        state["ps"], loss = jit_step(state["ps"])
        loss0 = float(loss)

        def run(n: int, jit_step: Callable = jit_step, state: dict = state) -> None:
            for _ in range(n):  # async dispatch: block once per run (JAX's best case)
                state["ps"], loss = jit_step(state["ps"])
            loss.block_until_ready()

        run(3)
        t0 = time.perf_counter()
        run(1)
        jit_s = best_per_step_batched(run, time.perf_counter() - t0, budget_s, repeats)
        k = max(16, min(20_000, int(budget_s / jit_s)))

        def k_steps(ps: list, one: Callable = one, k: int = k) -> tuple:
            return jax.lax.scan(lambda p, _: one(p), ps, None, length=k)

        scan = jax.jit(k_steps, donate_argnums=0)
        state["ps"], losses = scan(state["ps"])
        losses.block_until_ready()
        best = math.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            state["ps"], losses = scan(state["ps"])
            losses.block_until_ready()
            best = min(best, (time.perf_counter() - t0) / k)
        emit(key, ms=jit_s * 1e3, scan_ms=best * 1e3, scan_k=k, loss0=loss0)


def emit(key: str, **values: object) -> None:
    """A worker's result line (the parent reads the lines that start with RESULT)."""
    print("RESULT " + json.dumps({"key": key, **values}), flush=True)


def xla_flags(threads: int) -> str:
    if threads == 1:
        return "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    return f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"


@dataclass
class PeerRun:
    """What one worker process returned: results by workload, or why there are none."""

    results: dict[str, dict] = field(default_factory=dict)
    error: str | None = None


def run_worker(kind: str, keys: list[str], threads: int, budget_s: float, repeats: int,
               timeout_s: float) -> PeerRun:
    """Run `--worker kind` in a subprocess limited to `threads` cores."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               XLA_FLAGS=xla_flags(threads), TF_CPP_MIN_LOG_LEVEL="2",
               TORCHINDUCTOR_COMPILE_THREADS="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind,
           "--only", ",".join(keys), "--threads", str(threads),
           "--budget", str(budget_s), "--repeats", str(repeats)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=timeout_s, cwd=ROOT)
    except subprocess.TimeoutExpired as err:
        run = PeerRun(error=f"timed out after {timeout_s:.0f} s")
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
    else:
        run = PeerRun()
        out = proc.stdout
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            run.error = lines[-1][:160] if lines else f"exit status {proc.returncode}"
    for line in out.splitlines():
        if line.startswith("RESULT "):
            data = json.loads(line[len("RESULT "):])
            run.results[data["key"]] = data
    return run


def jax_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("jax") is not None


# -- launch to first step ----------------------------------------------------------------

LAUNCH_CHILD = """\
import sys, time
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session
Session(CompiledSpec(load_spec(sys.argv[1]))).step()
print(time.monotonic(), flush=True)
"""


def launch_seconds(spec_path: Path, cache_dir: Path) -> float:
    """Spawn to first step done of a fresh process with FRAME_CACHE_DIR=cache_dir
    (CLOCK_MONOTONIC is system-wide on Linux, so the child's stamp compares)."""
    env = dict(os.environ, FRAME_CACHE_DIR=str(cache_dir))
    env.pop("FRAME_NO_CACHE", None)  # the warm start is what is measured
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", LAUNCH_CHILD, str(spec_path)], env=env,
                          capture_output=True, text=True, check=True, cwd=ROOT)
    return float(proc.stdout.split()[-1]) - t0


def bench_launch(key: str, repeats: int) -> tuple[float, float, bool]:
    """(best cold, best warm, whether anything was cached): each cold run on a fresh
    empty cache folder, then a warm run on that folder."""
    path = ROOT / "testdata" / SPEC_FILES[key]
    cold = warm = math.inf
    cached = False
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="frame-cache-") as tmp:
            cold = min(cold, launch_seconds(path, Path(tmp)))
            cached = cached or any(Path(tmp).iterdir())
            warm = min(warm, launch_seconds(path, Path(tmp)))
    return cold, warm, cached


# -- the report --------------------------------------------------------------------------


def ms(v: float | None, width: int = 10) -> str:
    """A ms/step figure (or n/a) with a precision that suits its size."""
    if v is None or not math.isfinite(v):
        return f"{'n/a':>{width}}"
    text = (f"{v:.6f}" if v < 0.01 else f"{v:.4f}" if v < 0.1 else f"{v:.3f}" if v < 10
            else f"{v:.1f}")
    return f"{text:>{width}}"


def verdict(ok: bool | None) -> str:
    return "not run" if ok is None else "met" if ok else "MISSED"


@dataclass
class Report:
    """Everything one run measured."""

    peak_gflops: float
    frame: dict[tuple[str, int], FrameResult] = field(default_factory=dict)
    peers: dict[tuple[str, str, int], dict] = field(default_factory=dict)  # (peer, key, thr)
    #: why a figure is missing, by (peer or "frame", workload, threads)
    peer_notes: dict[tuple[str, str, int], str] = field(default_factory=dict)
    launch: dict[str, tuple[float, float, bool]] = field(default_factory=dict)
    cpp: dict[str, tuple[float, float, bool]] = field(default_factory=dict)  # jit, c++, same

    def peer_ms(self, peer: str, key: str, threads: int, field_name: str = "ms"
                ) -> float | None:
        r = self.peers.get((peer, key, threads))
        return r.get(field_name) if r else None


def print_tables(rep: Report, keys: list[str], threads: list[int]) -> None:
    t1 = threads[0]
    t2 = threads[1] if len(threads) > 1 else None
    print(f"\nms per training step (forward + backward + SGD); peers at {t1} thread"
          f"{'s' if t1 > 1 else ''}; GFLOP/s and % peak from frame's {t1}-thread step")
    head = (f"{'workload':<26} {'frame 1t':>10} {'frame 2t':>10} {'2t/1t':>6} "
            f"{'GFLOP/s':>8} {'% peak':>7} {'torch 1t':>10} {'t.compile':>10} "
            f"{'JAX jit':>10} {'JAX scan':>10}")
    print(head)
    print("-" * len(head))
    over_peak = False
    for key in keys:
        f1 = rep.frame.get((key, t1))
        f2 = rep.frame.get((key, t2)) if t2 else None
        s1 = f1.step_s * 1e3 if f1 else None
        s2 = f2.step_s * 1e3 if f2 else None
        speed = f"{s1 / s2:>6.2f}" if s1 and s2 else f"{'n/a':>6}"
        flops = make_flops(key)
        gf = flops / (s1 * 1e-3) / 1e9 if s1 else None
        gf_col = f"{gf:>8.2f}" if gf else f"{'n/a':>8}"
        pct = f"{100 * gf / rep.peak_gflops:>6.1f}%" if gf else f"{'n/a':>7}"
        over_peak = over_peak or bool(gf and gf > rep.peak_gflops)
        print(f"{key + ' ' + TITLES[key]:<26} {ms(s1)} {ms(s2)} {speed} {gf_col} {pct} "
              f"{ms(rep.peer_ms('torch', key, t1))} "
              f"{ms(rep.peer_ms('torch_compile', key, t1))} "
              f"{ms(rep.peer_ms('jax', key, t1))} "
              f"{ms(rep.peer_ms('jax', key, t1, 'scan_ms'))}")
    if over_peak:
        print("(a % peak above 100: both peak runs shared their core with other work; "
              "rerun on a quiet machine)")
    if t2:
        print(f"\nat {t2} threads (ms/step)")
        head2 = (f"{'workload':<26} {'frame':>10} {'torch':>10} {'t.compile':>10} "
                 f"{'JAX jit':>10} {'JAX scan':>10}")
        print(head2)
        print("-" * len(head2))
        for key in keys:
            f2 = rep.frame.get((key, t2))
            print(f"{key + ' ' + TITLES[key]:<26} {ms(f2.step_s * 1e3 if f2 else None)} "
                  f"{ms(rep.peer_ms('torch', key, t2))} "
                  f"{ms(rep.peer_ms('torch_compile', key, t2))} "
                  f"{ms(rep.peer_ms('jax', key, t2))} "
                  f"{ms(rep.peer_ms('jax', key, t2, 'scan_ms'))}")
    print("\nframe details (1t): compile s, whole-loop ms/step, first loss (peers' first "
          "loss, relative difference)")
    for key in keys:
        f1 = rep.frame.get((key, t1))
        if f1 is None:
            continue
        loop = ms(f1.loop_s * 1e3, 0) if f1.loop_s else "per-step only (no native loop)"
        checks = []
        for peer in ("torch", "torch_compile", "jax"):
            r = rep.peers.get((peer, key, t1))
            if r and "loss0" in r:
                rel = abs(r["loss0"] - f1.loss0) / max(abs(f1.loss0), 1e-30)
                checks.append(f"{peer} {rel:.1e}{'' if rel < 1e-3 else ' MISMATCH'}")
        tc = rep.peers.get(("torch_compile", key, t1)) or {}
        scan_k = rep.peer_ms("jax", key, t1, "scan_k")
        what = "cache load" if f1.from_cache else "compile"
        print(f"  {key}: {what} {f1.compile_s:.2f} s; loop {loop}; loss0 {f1.loss0:.6g} "
              f"({', '.join(checks) or 'no peer'})"
              + (f"; torch.compile's first call {tc['compile_s']:.1f} s"
                 if "compile_s" in tc else "")
              + (f"; scan K={scan_k}" if scan_k else ""))
    for (peer, key, thr), note in sorted(rep.peer_notes.items()):
        print(f"  {peer} {key}{f' {thr}t' if thr else ''}: n/a ({note})")
    if rep.launch:
        print("\nlaunch to first step done (fresh process; best of the repeats)")
        for key, (cold, warm, cached) in rep.launch.items():
            note = "" if cached else "  (nothing written to FRAME_CACHE_DIR: no compile " \
                                     "cache yet, warm = cold)"
            print(f"  {key}: cold {cold:.2f} s, warm {warm:.2f} s{note}")
    if rep.cpp:
        print("\nemitted C++ program vs JIT (bench_emit.py; the spec's training steps)")
        for key, (jit, cpp, same) in rep.cpp.items():
            print(f"  {key}: JIT {jit * 1e3:.4f} ms/step, C++ {cpp * 1e3:.4f} ms/step, "
                  f"C++/JIT {cpp / jit:.2f}, output identical: {'yes' if same else 'NO'}")


_FLOPS: dict[str, int] = {}


def make_flops(key: str) -> int:
    if key not in _FLOPS:
        _FLOPS[key] = (mlp_flops(load_spec(ROOT / "testdata" / SPEC_FILES[key]))
                       if key in SPEC_FILES else lenet_flops())
    return _FLOPS[key]


def print_targets(rep: Report, threads: list[int]) -> None:
    """The issue's targets: measured ratio and met / MISSED; n/a for what was not
    measured (workloads left out by --only, a missing peer). Single-thread figures
    are frame's 1-thread step against the peers' 1-thread runs."""
    t2 = 2 if 2 in threads else None

    def step(key: str, thr: int | None) -> float | None:
        r = rep.frame.get((key, thr)) if thr else None
        return r.step_s * 1e3 if r else None

    rows: list[tuple[str, str, bool | None]] = []
    s4 = step("W4", 1)
    if s4:
        frac = make_flops("W4") / (s4 * 1e-3) / 1e9 / rep.peak_gflops
        rows.append(("W4 >= 85% of single-core peak", f"{100 * frac:.1f}%",
                     frac >= W4_PEAK_FRACTION))
    else:
        rows.append(("W4 >= 85% of single-core peak", "n/a", None))

    def ratio_row(label: str, ours: float | None, theirs: float | None, limit: float,
                  extra_ok: bool = True, why: str = "") -> None:
        if ours is None or theirs is None:
            rows.append((label, "n/a" + (f" ({why})" if why else ""), None))
            return
        r = ours / theirs
        rows.append((label, f"{r:.2f}x{why and f' ({why})'}", r <= limit and extra_ok))

    ratio_row("W4 no slower than JAX jit (frame/JAX)", s4, rep.peer_ms("jax", "W4", 1), 1.0)
    ratio_row("W3 <= 0.8x PyTorch eager", step("W3", 1), rep.peer_ms("torch", "W3", 1),
              W3_VS_TORCH)
    ratio_row("W2 <= 0.8x JAX jit", step("W2", 1), rep.peer_ms("jax", "W2", 1), W2_VS_JAX)
    w1 = rep.frame.get(("W1", 1))
    native = w1 is not None and w1.loop_s is not None
    w1_ours = (w1.loop_s if native else w1.step_s) * 1e3 if w1 else None
    ratio_row("W1 <= 0.2x JAX lax.scan, loop native", w1_ours,
              rep.peer_ms("jax", "W1", 1, "scan_ms"), W1_VS_SCAN, native,
              "" if native or w1 is None else "per-step calls: no native loop yet")
    for key in ("W3", "W4"):
        a, b = step(key, 1), step(key, t2)
        label = f"2 threads >= 1.7x 1 thread, {key}"
        if a and b:
            rows.append((label, f"{a / b:.2f}x", a / b >= THREAD_SPEEDUP))
        else:
            rows.append((label, "n/a", None))
    for key in ("W1", "W2"):
        if key in rep.launch:
            cold, warm, _ = rep.launch[key]
            rows.append((f"launch to first step, {key} warm <= 0.3 s", f"{warm:.2f} s",
                         warm <= WARM_LAUNCH_S))
            rows.append((f"launch to first step, {key} cold <= 1.0 s", f"{cold:.2f} s",
                         cold <= COLD_LAUNCH_S))
        else:
            rows.append((f"launch to first step, {key}", "n/a", None))
    for key in ("W2", "W3", "W4"):
        if key in rep.cpp:
            jit, cpp, same = rep.cpp[key]
            rows.append((f"C++ within 1.2x of the JIT, {key}",
                         f"{cpp / jit:.2f}x{'' if same else ' (output differs!)'}",
                         cpp / jit <= CPP_VS_JIT and same))
        else:
            why = "the emitter needs a v0 spec" if key == "W3" else "not run"
            rows.append((f"C++ within 1.2x of the JIT, {key}", f"n/a ({why})", None))
    print("\nissue 9 targets")
    width = max(len(r[0]) for r in rows)
    for label, value, ok in rows:
        print(f"  {label:<{width}}  {value:<42} {verdict(ok)}")


# -- main --------------------------------------------------------------------------------


def run_worker_main(args: argparse.Namespace) -> int:
    """Entry point of a peer subprocess."""
    threads = int(args.threads)
    limit_cores(threads)
    keys = parse_keys(args.only)
    if args.worker == "torch":
        worker_torch(keys, threads, args.budget, args.repeats)
    elif args.worker == "torch_compile":
        for key in keys:
            worker_torch_compile(key, threads, args.budget, args.repeats)
    elif args.worker == "jax":
        worker_jax(keys, threads, args.budget, args.repeats)
    else:
        raise SystemExit(f"unknown worker {args.worker}")
    return 0


def parse_keys(text: str | None) -> list[str]:
    if not text:
        return list(WORKLOADS)
    keys = [k.strip().upper() for k in text.split(",") if k.strip()]
    bad = [k for k in keys if k not in WORKLOADS]
    if bad:
        raise SystemExit(f"unknown workload(s) {', '.join(bad)}; expected {', '.join(WORKLOADS)}")
    return [k for k in WORKLOADS if k in keys]


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {platform.python_version()}"]
    for pkg in ("llvmlite", "xdsl", "torch", "jax"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} absent")
    return ", ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs, fewer repeats")
    ap.add_argument("--only", help="workloads to run, e.g. W2,W4 (default: all)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--no-jax", action="store_true", help="skip JAX even if installed")
    ap.add_argument("--no-emit", action="store_true", help="skip the emitted C++ program")
    ap.add_argument("--no-launch", action="store_true", help="skip launch-to-first-step")
    ap.add_argument("--compile-timeout", type=float, default=None,
                    help="seconds allowed to one torch.compile worker (default 300, "
                         "quick 180)")
    # Internal: a peer subprocess.
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=float, default=0.25, help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=7, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return run_worker_main(args)
    keys = parse_keys(args.only)
    threads = sorted({int(t) for t in args.threads.split(",")})
    # Many short repeats, best counts: on shared cores some repeat runs uncontended.
    budget, repeats = (0.02, 7) if args.quick else (0.1, 15)
    compile_timeout = args.compile_timeout or (180.0 if args.quick else 300.0)

    from peak import measure_peak

    from frame_mlir.target.host import host_info

    info = host_info()
    print(f"host: {info.cpu} ({info.arch}), {info.cores} cores available, "
          f"{info.f32_lanes} f32 lanes; {versions()}")
    print(f"best of {repeats} repeats of ~{budget} s each; peers pinned to N cores "
          f"(affinity), torch.set_num_threads(N), XLA_FLAGS '{xla_flags(1)}' at 1 thread")
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"warning: load average {load:.1f} on {os.cpu_count()} cpus before the run: "
              "other work shares the cores, figures are contended")
    for thr in threads:
        if thr > info.cores:
            print(f"note: {thr} threads on {info.cores} available cores: oversubscribed")
    # The peak is a property of the core: measured now and again at the end, the best
    # counts (a run that shared its core with other work reads low).
    peak = measure_peak()
    print(f"peak: {peak.describe()}", flush=True)
    rep = Report(peak.gflops)

    problems = {k: make_problem(k) for k in keys}
    for key in keys:
        for thr in threads:
            t0 = time.perf_counter()
            try:
                rep.frame[(key, thr)] = bench_frame(problems[key], thr, budget, repeats)
            except Exception as err:  # a failing compile is one n/a, not a lost run
                first = (str(err).strip().splitlines() or [""])[0]
                rep.peer_notes[("frame", key, thr)] = f"{type(err).__name__}: {first}"[:160]
                print(f"  frame {key} {thr}t: FAILED ({type(err).__name__}: {first[:120]})",
                      flush=True)
                continue
            print(f"  frame {key} {thr}t: {rep.frame[(key, thr)].step_s * 1e3:.4f} ms/step "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    del problems

    peers = [("torch", 600.0)]
    if not args.no_jax:
        if jax_available():
            peers.append(("jax", 600.0))
        else:
            for key in keys:
                for thr in threads:
                    rep.peer_notes[("jax", key, thr)] = "jax not installed: pip install jax"
    for thr in threads:
        for peer, timeout in peers:
            t0 = time.perf_counter()
            run = run_worker(peer, keys, thr, budget, repeats, timeout)
            for key in keys:
                if key in run.results:
                    rep.peers[(peer, key, thr)] = run.results[key]
                else:
                    rep.peer_notes[(peer, key, thr)] = run.error or "no result"
            print(f"  {peer} {thr}t done ({time.perf_counter() - t0:.1f} s)"
                  f"{'; ' + run.error if run.error else ''}", flush=True)
        if not args.no_compile:
            for key in keys:
                t0 = time.perf_counter()
                run = run_worker("torch_compile", [key], thr, budget, repeats,
                                 compile_timeout)
                if key in run.results:
                    rep.peers[("torch_compile", key, thr)] = run.results[key]
                else:
                    rep.peer_notes[("torch_compile", key, thr)] = run.error or "no result"
                print(f"  torch.compile {key} {thr}t done ({time.perf_counter() - t0:.1f} s)"
                      f"{'; ' + run.error if run.error else ''}", flush=True)

    if not args.no_launch:
        for key in ("W1", "W2"):
            if key in keys:
                try:
                    rep.launch[key] = bench_launch(key, 2 if args.quick else 3)
                except subprocess.CalledProcessError as err:
                    lines = (err.stderr or "").strip().splitlines() or ["?"]
                    rep.peer_notes[("launch", key, 0)] = lines[-1][:160]

    if not args.no_emit:
        import bench_emit

        saved = os.environ.get(THREADS_ENV)
        os.environ[THREADS_ENV] = "1"  # the program and the JIT on one thread each
        try:
            with tempfile.TemporaryDirectory(prefix="frame-emit-") as tmp:
                for key in ("W2", "W4"):
                    if key in keys:
                        jit, cpp, same, _ = bench_emit.measure(
                            SPEC_FILES[key].removesuffix(".json"), Path(tmp),
                            3 if args.quick else 5)
                        rep.cpp[key] = (jit, cpp, same)
                        print(f"  C++ {key} done", flush=True)
        finally:
            if saved is None:
                os.environ.pop(THREADS_ENV, None)
            else:
                os.environ[THREADS_ENV] = saved

    again = measure_peak()
    rep.peak_gflops = max(peak.gflops, again.gflops)
    print(f"peak again at the end: {again.gflops:.1f} GFLOP/s; % peak below uses "
          f"{rep.peak_gflops:.1f}")
    print_tables(rep, keys, threads)
    print_targets(rep, threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
