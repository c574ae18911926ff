"""Training-step benchmark: frame-mlir's JIT beside PyTorch eager and JAX jit.

Run:  python bench/bench_train.py [--quick]

For each model (tiny_mlp and an MLP of MNIST shape) it prints our compile time
and steady-state time per training step (forward + backward + SGD update, all
in generated code), the same step in PyTorch eager (1 thread) and, if JAX is
installed, in a `jax.jit`-compiled step, with the ratios. It also times a cold
`frame-run testdata/tiny_mlp.json` from process start to `final_loss`.
Machines are noisy: each figure is the best of several repeats, and the ratios
-- measured in the same run -- are what to compare.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from frame_mlir.frontends.spec.initial_values import generate_initial_values  # noqa: E402
from frame_mlir.frontends.spec.spec_v0 import load_spec  # noqa: E402
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session  # noqa: E402


def best_per_step(step, n: int, repeats: int) -> float:
    """Best mean seconds per call of `step` over `repeats` runs of `n` calls."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def bench_frame(spec, n: int, repeats: int) -> tuple[float, float]:
    compiled = CompiledSpec(spec)
    session = Session(compiled)
    for _ in range(10):
        session.step()
    return compiled.compile_seconds, best_per_step(session.step, n, repeats)


def torch_step_fn(spec):
    import torch

    torch.set_num_threads(1)
    vals = generate_initial_values(spec)
    x = torch.from_numpy(vals.inputs[spec.input.name].copy())
    t = torch.from_numpy(vals.target.copy())
    params = {n: torch.from_numpy(a.copy()).requires_grad_() for n, a in vals.params}
    opt = torch.optim.SGD(list(params.values()), lr=spec.optimizer.learning_rate)

    def forward():
        values = {spec.input.name: x}
        for layer in spec.layers:
            y = values[layer.input] @ params[layer.weight_name]
            if layer.has_bias:
                y = y + params[layer.bias_name]
            if layer.activation == "relu":
                y = torch.relu(y)
            values[layer.name] = y
        return torch.nn.functional.mse_loss(values[spec.loss.prediction], t)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = forward()
        loss.backward()
        opt.step()
        return loss

    return step


def jax_step_fn(spec):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    vals = generate_initial_values(spec)
    x = jnp.asarray(vals.inputs[spec.input.name])
    t = jnp.asarray(vals.target)
    params = {n: jnp.asarray(a) for n, a in vals.params}
    lr = spec.optimizer.learning_rate

    def loss_fn(ps):
        values = {spec.input.name: x}
        for layer in spec.layers:
            y = values[layer.input] @ ps[layer.weight_name]
            if layer.has_bias:
                y = y + ps[layer.bias_name]
            if layer.activation == "relu":
                y = jnp.maximum(y, 0)
            values[layer.name] = y
        return jnp.mean((values[spec.loss.prediction] - t) ** 2)

    @jax.jit
    def update(ps):
        loss, grads = jax.value_and_grad(loss_fn)(ps)
        return loss, {k: ps[k] - lr * grads[k] for k in ps}

    state = {"ps": params}

    def step():
        loss, state["ps"] = update(state["ps"])
        return loss

    step()
    jax.block_until_ready(state["ps"])

    def blocking_step():
        loss = step()
        loss.block_until_ready()

    return blocking_step


def cold_start_seconds(repeats: int) -> float:
    exe = Path(sys.executable).parent / "frame-run"
    cmd = [str(exe) if exe.exists() else "frame-run", str(ROOT / "testdata/tiny_mlp.json")]
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        best = min(best, time.perf_counter() - t0)
        assert "final_loss" in out.stdout
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args()
    repeats = 3 if args.quick else 7
    print(f"machine: {os.cpu_count()} cpus; PyTorch eager pinned to 1 thread; "
          f"numbers are best-of-{repeats}")
    rows = []
    for name, n in (("tiny_mlp", 20000), ("mnist_mlp", 200)):
        spec = load_spec(ROOT / "testdata" / f"{name}.json")
        n = n // 10 if args.quick else n
        compile_s, ours = bench_frame(spec, n, repeats)
        torch_step = torch_step_fn(spec)
        for _ in range(10):
            torch_step()
        theirs = best_per_step(torch_step, max(n // 20, 20), repeats)
        jax_step = jax_step_fn(spec)
        jax_t = best_per_step(jax_step, max(n // 5, 20), repeats) if jax_step else None
        rows.append((name, compile_s, ours, theirs, jax_t))
    print()
    print(f"{'model':<10} {'compile s':>9} {'frame ms/step':>14} {'torch ms/step':>14} "
          f"{'torch/frame':>11} {'jax ms/step':>12} {'jax/frame':>10}")
    for name, compile_s, ours, theirs, jax_t in rows:
        jax_col = f"{jax_t * 1e3:>12.4f} {jax_t / ours:>10.2f}" if jax_t else \
            f"{'n/a':>12} {'n/a':>10}"
        print(f"{name:<10} {compile_s:>9.3f} {ours * 1e3:>14.4f} {theirs * 1e3:>14.4f} "
              f"{theirs / ours:>11.2f} {jax_col}")
    cold = cold_start_seconds(3)
    print(f"\ncold `frame-run testdata/tiny_mlp.json` (process start to final_loss): {cold:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
