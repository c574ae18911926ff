"""Issue 10's targets: compile time and step time of three factory models, beside
PyTorch eager in the same run.

Run:  python bench/bench_factories.py [--only transformer,lstm,mamba] [--lstm-steps 64]

Models (one training step = forward + backward + SGD update, mse against a fixed
target, lr 0.01, float32):

    transformer  TransformerEncoderBlock(batch 2, seq 16, embed 32, 4 heads, ffn 64)
    lstm         LSTM(batch 4, 64 time steps, input 16, hidden 32)
    mamba        Mamba(batch 2, channels 16, steps 32, kernel 4)

frame-mlir: the API graph (`frame.nn` factory + `frame.mse_loss`) snapshotted with its
parameter inputs marked `frame.param` and compiled by `compile_module(lr=0.01)`, so
`frame-sgd-fuse` fuses forward, backward and update into one `@<model>_train_step`
(the path `bench_workloads.py`'s W3 takes). "compile s" is that call, cold: no compile
cache, in a process that has compiled nothing before (imports done). Step time: best
of several repeats of a timed run of steps, 1 thread.

PyTorch eager: the same model written in torch (float32, 1 thread, CPU affinity to one
core), parameters from the same values, `backward` and an in-place SGD update. Its
first loss is checked against ours.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_workloads import best_per_step  # noqa: E402

LR = 0.01
MODELS = ("transformer", "lstm", "mamba")


def config(key: str, lstm_steps: int) -> dict[str, Any]:
    """Shapes of each model: input, output and the factory's arguments."""
    if key == "transformer":
        b, s, e, h, f = 2, 16, 32, 4, 64
        return {"args": (b, s, e, h, f), "x": (b * s, e), "y": (b * s, e)}
    if key == "lstm":
        b, t, i, h = 4, lstm_steps, 16, 32
        return {"args": (b, t, i, h), "x": (b, t, i), "y": (b, h)}
    b, c, length, k = 2, 16, 32, 4
    return {"args": (b, c, length, k), "x": (b, c, length), "y": (b, c, length)}


def module(key: str, args: Sequence[int]) -> Any:
    import frame

    f32 = frame.DType.float32
    if key == "transformer":
        return frame.nn.TransformerEncoderBlock("enc", *args, True, f32)
    if key == "lstm":
        return frame.nn.LSTM("lstm", *args, f32)
    return frame.nn.Mamba("mamba", *args, f32)


def data(key: str, cfg: dict[str, Any], m: Any) -> tuple[np.ndarray, np.ndarray,
                                                          list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(cfg["x"]).astype(np.float32)
    y = rng.standard_normal(cfg["y"]).astype(np.float32)
    params = []
    for name, shape, _ in m.parameters():
        scale = 1.0 if name.endswith("gamma") else (0.0 if name.endswith("beta") else
                                                   1.0 / math.sqrt(shape[0]))
        params.append((scale * rng.standard_normal(shape)).astype(np.float32))
    return x, y, params


def bench_ours(key: str, cfg: dict[str, Any], budget: float, repeats: int) -> dict[str, float]:
    from xdsl.dialects import builtin

    import frame
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.passes.common import set_arg_attr
    from frame_mlir.runtime.executable import aligned_empty, compile_module

    m = module(key, cfg["args"])
    f32 = frame.DType.float32
    g = frame.Graph(key)
    xv = g.add_graph_input(list(cfg["x"]), f32)
    tv = g.add_graph_input(list(cfg["y"]), f32)
    ps = frame.nn.add_parameter_inputs(g, m)
    (out,) = m.build(g, [xv], ps)
    g.mark_output(frame.mse_loss(g, out, tv))
    fn, hidden = g._snapshot()
    assert not hidden
    names = [n for n, _, _ in m.parameters()]
    for i, name in enumerate(names):
        set_arg_attr(fn, 2 + i, "frame.param", builtin.StringAttr(name))
    ops = len(list(fn.body.block.ops))
    t0 = time.perf_counter()
    mod = builtin.ModuleOp([fn, *(f.clone() for f in g._functions.values())])
    ex = compile_module(mod, lr=LR, options=CompileOptions(threads=1), cache=None)
    compile_s = time.perf_counter() - t0
    x, y, params = data(key, cfg, m)
    sig = ex.signatures[f"{key}_train_step"]
    loss = np.zeros((), np.float32)
    arena = aligned_empty(max(sig.arena_size, 64))
    by_name = dict(zip(names, params, strict=True))
    inputs = iter([x, y])
    keep, args = [], []
    for a in sig.args:
        buf = {"arena": arena, "output": loss}.get(a.kind)
        if buf is None:
            buf = next(inputs) if a.kind == "input" else by_name[a.name]
        keep.append(buf)
        args.append(ctypes.c_void_p(buf.ctypes.data))
    step = ex.function(f"{key}_train_step")
    step(*args)
    loss0 = float(loss)
    return {"compile_s": compile_s, "ops": ops, "loss0": loss0,
            "ms": best_ms(lambda: step(*args), budget, repeats)}


def best_ms(step: Callable[[], object], budget: float, repeats: int) -> float:
    """Best ms per step of `repeats` timed runs, `budget` seconds in all (the workload
    bench's timer)."""
    return best_per_step(step, budget / repeats, repeats) * 1e3


def torch_model(key: str, cfg: dict[str, Any], torch: Any) -> Callable[[Any, list[Any]], Any]:
    """The model in torch, from the sheet's definitions (§7.2)."""
    F = torch.nn.functional
    if key == "transformer":
        b, s, e, h, _ = cfg["args"]
        dh = e // h

        def mha(x: Any, p: list[Any]) -> Any:
            q, k, v = ((x @ p[2 * i] + p[2 * i + 1]).reshape(b, s, h, dh).transpose(1, 2)
                       for i in range(3))
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1) @ v
            return att.transpose(1, 2).reshape(b * s, e) @ p[6] + p[7]

        def tf(x: Any, p: list[Any]) -> Any:
            y1 = F.layer_norm(x + mha(x, p[:8]), (e,), p[8], p[9], 1e-5)
            ff = torch.relu(y1 @ p[10] + p[11]) @ p[12] + p[13]
            return F.layer_norm(y1 + ff, (e,), p[14], p[15], 1e-5)
        return tf
    if key == "lstm":
        b, t, _, hd = cfg["args"]

        def lstm(x: Any, p: list[Any]) -> Any:
            xw = x @ p[0]
            h = c = None
            for s in range(t):
                z = xw[:, s] + p[2] if h is None else xw[:, s] + h @ p[1] + p[2]
                i, f, g, o = z.split(hd, dim=1)
                ig = torch.sigmoid(i) * torch.tanh(g)
                c = ig if c is None else torch.sigmoid(f) * c + ig
                h = torch.sigmoid(o) * torch.tanh(c)
            return h
        return lstm
    b, ch, length, k = cfg["args"]
    acts = [torch.tanh, torch.sigmoid, torch.tanh, torch.tanh, torch.tanh, torch.sigmoid]

    def mamba(x: Any, p: list[Any]) -> Any:
        u = F.conv1d(x, p[0], p[1], padding=k - 1, groups=ch)[:, :, :length]
        flat = u.transpose(1, 2).reshape(b * length, ch)
        xi, a, bb, cc, d, gate = (act(flat @ p[2 + 2 * j] + p[3 + 2 * j])
                                  .reshape(b, length, ch).transpose(1, 2)
                                  for j, act in enumerate(acts))
        hs = torch.zeros(b, ch)
        ys = []
        for s in range(length):
            hs = a[:, :, s] * hs + bb[:, :, s] * xi[:, :, s]
            ys.append(cc[:, :, s] * hs + d[:, :, s] * xi[:, :, s])
        sc = torch.stack(ys, dim=2) * gate
        out = sc.transpose(1, 2).reshape(b * length, ch) @ p[14] + p[15]
        return out.reshape(b, length, ch).transpose(1, 2)
    return mamba


def worker_torch(key: str, lstm_steps: int, budget: float, repeats: int) -> None:
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])
    import torch

    torch.set_num_threads(1)
    cfg = config(key, lstm_steps)
    x, y, params = data(key, cfg, module(key, cfg["args"]))
    fwd = torch_model(key, cfg, torch)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    tp = [torch.from_numpy(p.copy()).requires_grad_() for p in params]

    def step() -> Any:
        loss = ((fwd(tx, tp) - ty) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in tp:
                p -= LR * p.grad
                p.grad = None
        return loss

    loss0 = float(step().detach())
    print("RESULT " + json.dumps({"ms": best_ms(step, budget, repeats), "loss0": loss0}))


def worker_ours(key: str, lstm_steps: int, budget: float, repeats: int) -> None:
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])
    print("RESULT " + json.dumps(bench_ours(key, config(key, lstm_steps), budget, repeats)))


def run(kind: str, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in a fresh process (cold compile, one core)."""
    cmd = [sys.executable, __file__, "--worker", kind, "--only", key,
           "--lstm-steps", str(args.lstm_steps), "--budget", str(args.budget),
           "--repeats", str(args.repeats)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{kind} {key} failed:\n{proc.stderr[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--lstm-steps", type=int, default=64)
    ap.add_argument("--budget", type=float, default=3.0, help="seconds timed per model")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--worker", choices=["ours", "torch"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    keys = [k for k in args.only.split(",") if k]
    if args.worker:
        (worker_ours if args.worker == "ours" else worker_torch)(
            keys[0], args.lstm_steps, args.budget, args.repeats)
        return 0
    print(f"{'model':<12} {'ops':>5} {'compile s':>10} {'<5 s':>5} {'frame ms':>9} "
          f"{'torch ms':>9} {'torch/frame':>11}  loss0 frame / torch")
    for key in keys:
        ours, theirs = run("ours", key, args), run("torch", key, args)
        ratio = theirs["ms"] / ours["ms"]
        print(f"{key:<12} {ours['ops']:>5} {ours['compile_s']:>10.2f} "
              f"{'met' if ours['compile_s'] < 5 else 'MISS':>5} {ours['ms']:>9.3f} "
              f"{theirs['ms']:>9.3f} {ratio:>10.2f}x  {ours['loss0']:.6g} / "
              f"{theirs['loss0']:.6g}")
        if not math.isclose(ours["loss0"], theirs["loss0"], rel_tol=1e-4):
            print(f"  warning: first losses differ ({key})")
    print("torch/frame > 1 means frame-mlir is faster (target: >= 1, and compile < 5 s).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
