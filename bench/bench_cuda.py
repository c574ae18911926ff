"""GPU training-step benchmark: frame-mlir's CUDA kernels beside PyTorch CUDA eager.

Run:  python bench/bench_cuda.py [--steps N] [--target cuda|cuda-emulator]

On one GPU, in one run:

* mnist_mlp (testdata/mnist_mlp.json, 64 x 784 -> 256 -> 10): a whole train step
  (forward, backward, fused SGD) per step, ours (the launches of
  `@mnist_mlp_train_step`, one synchronisation at the end) and PyTorch eager's
  (the same model, `torch.optim.SGD`);
* wide_mlp (testdata/wide_mlp.json, 256 x 1024 -> 1024 -> 1024 -> 10): the same, and
  the fraction of the GPU's FP32 peak (multiprocessors x FP32 lanes x 2 x clock) the
  step's matmul FLOPs reach;
* LeNet (bench/networks.py's `lenet`, 64 x 1 x 28 x 28): forward + backward (the
  network's gradient function; the solver's update is not in it, nor in torch's side).

Each figure is the best of several repeats; the ratios (torch time / ours: above 1 is
faster than PyTorch) are what to compare. Without a GPU (or without a CUDA build of
torch) the script says so and exits 0; `--target cuda-emulator` runs the same code on
the CPU emulator (a smoke test of the script: its times mean nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

def _lanes(cc: tuple[int, int]) -> int:
    """FP32 lanes per multiprocessor: 64 on sm_80 (A100), 128 on 8.6, 8.9 and 9.0."""
    if cc == (8, 0):
        return 64
    return 128 if cc[0] >= 8 else 64


def best_seconds(fn: Callable[[], None], n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def _backend(target: str, program: object) -> object:
    from frame_mlir.backend.cuda.runtime import CudaBackend, EmulatorBackend

    return CudaBackend(program) if target == "cuda" else EmulatorBackend(program)  # type: ignore[arg-type]


def frame_spec_step(path: Path, target: str, steps: int, repeats: int) -> tuple[float, float]:
    """(compile seconds, seconds per train step) of a v0 spec on the device."""
    from frame_mlir.backend.cuda.compile import compile_cuda
    from frame_mlir.backend.cuda.runtime import CudaSession
    from frame_mlir.frontends.spec.initial_values import generate_initial_values
    from frame_mlir.frontends.spec.lower import lower_spec
    from frame_mlir.frontends.spec.spec_v0 import load_spec

    spec = load_spec(path)
    lowered = lower_spec(spec)
    t0 = time.perf_counter()
    program = compile_cuda(lowered.module, spec.optimizer.learning_rate)
    program.ptx("sm_90")  # type: ignore[union-attr]
    compile_s = time.perf_counter() - t0
    values = generate_initial_values(spec)
    session = CudaSession(program, _backend(target, program),  # type: ignore[arg-type]
                          model=lowered.function, predict_function=lowered.predict_function,
                          data=[*values.inputs.values(), values.target],
                          params=dict(values.params))
    session.run(3)  # warm up: module load, first launches
    per_step = best_seconds(lambda: session.run(steps), steps, repeats)
    session.close()
    return compile_s, per_step


def torch_spec_step(path: Path, steps: int, repeats: int) -> float:
    """Seconds per train step of the same MLP in PyTorch CUDA eager (torch.optim.SGD)."""
    import torch

    from frame_mlir.frontends.spec.initial_values import generate_initial_values
    from frame_mlir.frontends.spec.spec_v0 import load_spec

    spec = load_spec(path)
    vals = generate_initial_values(spec)
    x = torch.from_numpy(vals.inputs[spec.input.name].copy()).cuda()
    t = torch.from_numpy(vals.target.copy()).cuda()
    params = {n: torch.from_numpy(a.copy()).cuda().requires_grad_() for n, a in vals.params}
    opt = torch.optim.SGD(list(params.values()), lr=spec.optimizer.learning_rate)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        values = {spec.input.name: x}
        for layer in spec.layers:
            y = values[layer.input] @ params[layer.weight_name]
            if layer.has_bias:
                y = y + params[layer.bias_name]
            if layer.activation == "relu":
                y = torch.relu(y)
            values[layer.name] = y
        torch.nn.functional.mse_loss(values[spec.loss.prediction], t).backward()
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()

    def run() -> None:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()

    return best_seconds(run, steps, repeats)


def matmul_flops(path: Path) -> int:
    """FLOPs of a v0 MLP train step's matmuls: forward, input and weight gradients."""
    from frame_mlir.frontends.spec.spec_v0 import load_spec

    spec = load_spec(path)
    batch = spec.input.shape[0]
    total = 0
    for layer in spec.layers:
        k, n = layer.weight_shape
        total += 3 * 2 * batch * k * n
    return total


def lenet_frame(target: str, steps: int, repeats: int) -> tuple[float, float]:
    from networks import lenet
    from xdsl.dialects import builtin

    from frame_mlir.backend.cuda.compile import compile_cuda
    from frame_mlir.backend.cuda.runtime import CudaExecutable
    from frame_mlir.frontends.network.lower import build_function
    from frame_mlir.tools.driver import load_model

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lenet.json"
        path.write_text(json.dumps(lenet(batch=64, size=28)))
        spec = load_model(path)
    module = builtin.ModuleOp([build_function(spec, "train").fn])
    t0 = time.perf_counter()
    program = compile_cuda(module, None)
    program.ptx("sm_90")  # type: ignore[union-attr]
    compile_s = time.perf_counter() - t0
    ex = CudaExecutable(program, _backend(target, program))  # type: ignore[arg-type]
    name = next(n for n in program.functions if n.endswith("_grad"))  # type: ignore[union-attr]
    rng = np.random.default_rng(0)
    ins = [rng.integers(0, 10, a.shape).astype(np.int32) if a.dtype == np.int32
           else (rng.standard_normal(a.shape) * 0.1).astype(np.float32)
           for a in program.functions[name].signature.of_kind("input", "param")]  # type: ignore[union-attr]
    ex(name, *ins)  # inputs on the device, one checked call

    def run() -> None:
        for _ in range(steps):
            ex.launch(name)
        ex.backend.synchronize()  # type: ignore[attr-defined]

    per_step = best_seconds(run, steps, repeats)
    ex.close()
    return compile_s, per_step


def lenet_torch(steps: int, repeats: int) -> float:
    import torch
    from bench_network import torch_model

    model = torch_model("lenet", torch).cuda()
    x = torch.randn(64, 1, 28, 28, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        model.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()

    def run() -> None:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()

    return best_seconds(run, steps, repeats)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--target", choices=("cuda", "cuda-emulator"), default="cuda")
    args = ap.parse_args()
    torch_ok = False
    peak = None
    if args.target == "cuda":
        from frame_mlir.backend.cuda.driver import CudaDevice, device_available

        reason = device_available()
        if reason is not None:
            print(f"n/a: no CUDA device ({reason})")
            return 0
        with CudaDevice() as dev:
            sms = dev.attribute("MULTIPROCESSOR_COUNT")
            clock_khz = dev.attribute("CLOCK_RATE")
            peak = sms * _lanes(dev.compute_capability) * 2 * clock_khz * 1e3
            print(f"device: {dev.name} ({dev.arch()}), {sms} SMs, {clock_khz / 1e6:.2f} GHz,"
                  f" FP32 peak {peak / 1e12:.1f} TFLOP/s")
        try:
            import torch

            torch_ok = torch.cuda.is_available()
        except ImportError:
            pass
        if not torch_ok:
            print("PyTorch CUDA: n/a (no CUDA build of torch in this environment)")
    else:
        print("target: cuda-emulator (CPU; times mean nothing, this checks the script)")
    steps = args.steps if args.target == "cuda" else 2
    repeats = args.repeats if args.target == "cuda" else 1
    print(f"{'model':<12} {'compile s':>9} {'ours ms':>9} {'torch ms':>9} {'torch/ours':>10}")
    for stem in ("mnist_mlp", "wide_mlp"):
        path = ROOT / "testdata" / f"{stem}.json"
        compile_s, ours = frame_spec_step(path, args.target, steps, repeats)
        theirs = torch_spec_step(path, steps, repeats) if torch_ok else None
        ratio = f"{theirs / ours:10.2f}" if theirs else f"{'n/a':>10}"
        tt = f"{theirs * 1e3:9.3f}" if theirs else f"{'n/a':>9}"
        print(f"{stem:<12} {compile_s:9.2f} {ours * 1e3:9.3f} {tt} {ratio}")
        if stem == "wide_mlp" and peak:
            achieved = matmul_flops(path) / ours
            print(f"{'':<12} matmul FLOPs/step {matmul_flops(path) / 1e9:.2f} G: "
                  f"{achieved / 1e12:.2f} TFLOP/s = {100 * achieved / peak:.1f} % of FP32 peak")
    compile_s, ours = lenet_frame(args.target, steps, repeats)
    theirs = lenet_torch(steps, repeats) if torch_ok else None
    ratio = f"{theirs / ours:10.2f}" if theirs else f"{'n/a':>10}"
    tt = f"{theirs * 1e3:9.3f}" if theirs else f"{'n/a':>9}"
    print(f"{'lenet f+b':<12} {compile_s:9.2f} {ours * 1e3:9.3f} {tt} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
