"""Issue 28's models at real sizes: frame-mlir's training step beside PyTorch eager.

ResNet-18, MobileNet-v2 and a TransformerEncoderBlock against PyTorch eager and
`torch.compile`, at 1 and 2 threads, with every target of issue 28 on these models
printed met or missed with its figure.

Run:  python bench/bench_models.py [--only resnet18,mobilenet_v2,transformer_api,
                                           transformer_fused]
                                   [--threads 1,2] [--quick] [--no-compile]
                                   [--no-f64] [--check-steps 20] [--batch B]
                                   [--size S] [--seq L] [--budget S] [--repeats N]

A benchmark, not a test (CI does not run it). Models (float32, one fixed random batch
each; `--batch`, `--size`, `--seq` shrink them for a smoke run, and the targets are then
printed as not at the issue's size):

    resnet18           `bench/networks.py: resnet18(batch=8, size=224)`: torchvision's
                       ResNet-18, 3x224x224, 1000 classes, SoftmaxWithLoss
    mobilenet_v2       `bench/bench_compile.py: mobilenet_v2()`: torchvision's
                       MobileNet-v2 (width 1.0) at batch 8, 3x224x224, 1000 classes
    transformer_api    `frame.nn.TransformerEncoderBlock(batch 8, seq 128, embed 256,
    transformer_fused  8 heads, ffn 1024, bias, post-LN)` + `frame.mse_loss` against a
                       fixed target, through two paths (below)

One training step = forward + backward + SGD update:

* resnet18, mobilenet_v2 (lr 0.01, momentum 0.9, no weight decay): frame-mlir through
  `frame_mlir.network` as `bench/bench_network.py` does: `network.load(doc, seed=0,
  options=CompileOptions(threads=N))`, `trainer = net.trainer(SGD(0.01, momentum=0.9))`,
  `trainer.step(feed)` timed as the API runs it (feed copied in, the compiled gradient
  function, the compiled update, outputs copied out). PyTorch: `torch.nn` models --
  ResNet-18 is `bench_network.torch_model` (torchvision's layout and names),
  MobileNet-v2 is built here from the JSON document itself (`DocNet`: one module per
  operator, named as the operator, depthwise convolutions as `groups`, BatchNorm in
  training mode, relu6) -- each step `loss = F.cross_entropy(model(x), y);
  loss.backward(); opt.step(); opt.zero_grad()` with `torch.optim.SGD(lr=0.01,
  momentum=0.9)`. The dlprimitives parameter names `<op>.<index>` map onto the torch
  state (`bench_network.torch_names` / `load_torch_state`: weights, biases, BatchNorm
  gamma/beta and running statistics; every float tensor covered once).
* transformer (lr 0.01, plain SGD):
  - transformer_api: the public API's typical loop (`docs/frame-python-api.md` §5):
    `train = frame.compile(frame.build_backward_graph(g, 0, params), "cpu")`, `update =
    frame.compile(frame.build_sgd_update_graph(param_types, 0.01), "cpu")`, and each
    step `outs = train.run([x, y, *params])`, then `params = update.run([*params,
    *grads])` (`frame.Tensor`s in and out, fresh outputs each call, as the sheet asks).
    Threads: FRAME_NUM_THREADS=N in the process's environment (what `frame.compile`
    reads).
  - transformer_fused: the graph snapshotted with its parameters marked `frame.param`
    and `compile_module(mod, lr=0.01, options=CompileOptions(threads=N))`, so
    forward, backward and SGD are one `@transformer_train_step` called through ctypes
    on fixed buffers (as `bench/bench_factories.py: bench_ours` does).
  PyTorch: `bench_factories.torch_model("transformer")` (the same post-LN block,
  per-row biases as the sheet's Linear has), each step `opt.zero_grad(set_to_none=True);
  loss = ((block(x) - y) ** 2).mean(); loss.backward(); opt.step()` with
  `torch.optim.SGD(lr=0.01)`. Both transformer paths share one PyTorch measurement.
* torch.compile: `torch.compile` of that whole eager step function (default mode,
  inductor); "compile s" is its first call.

Every side starts from frame's initial parameters (the networks: `net.parameters()` at
seed 0; the transformer: `bench_factories.data`'s, weights and biases N(0, 1/d) with d
their first dimension, LayerNorm gamma 1 and beta 0) and the same batch, and runs in
its own subprocess limited to N cores (CPU affinity set before frame or torch load;
OMP/MKL_NUM_THREADS=N, `torch.set_num_threads(N)`, frame's thread count N). The sides
run one after the other.

Loss check: every side first runs `--check-steps` + 1 steps (default 21) from the initial
values; the first loss is compared (relative difference: the models and the mapping
agree) and the last one is the loss after `--check-steps` SGD updates (issue 28's
target: within 1e-4 relative of PyTorch eager's, 1 thread). The timed steps continue
from there. "compile s" = building the step and its first run (frame: the trainer or
the executables, compiled through the compile cache unless FRAME_NO_CACHE=1 is set).
The float32 noise floor (unless `--no-f64`): PyTorch eager once more in float64 (model,
parameters and batch converted; untimed, on the most threads asked for), and every
side's float32 trajectory compared with it: a network whose float32 losses drift from
float64's by more than 1e-4 in 20 steps (BatchNorm and ReLU kinks amplify rounding)
cannot meet the parity target with any float32 implementation, PyTorch's included.

Timing: `bench_workloads.best_per_step` (3 warm-up steps, then the best mean over
`--repeats` runs of about `--budget` seconds each, at least one step each).

FLOPs (forward + backward, counted analytically; elementwise work, normalization,
softmax, pooling and the update not counted): 2*M*N*K per product, a convolution as an
implicit GEMM (2 * N*OH*OW * Cout * Cin/groups*KH*KW); the backward is twice the
forward for every product (input and weight gradients) except a product whose input
needs no gradient (the first convolution reads the data; the transformer's Q, K, V
projections read x, which is not trained), whose backward is once the forward.
GFLOP/s = FLOPs / step time; % peak against N x `bench/peak.py`'s single-core peak,
measured at the start and the end of the run (the best counts).

Machines are noisy (2 shared cores on the dev VM): compare ratios from one run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_network import load_torch_state, make_batch, rel  # noqa: E402
from bench_workloads import best_per_step, limit_cores, ms, versions  # noqa: E402

MODELS = ("resnet18", "mobilenet_v2", "transformer_api", "transformer_fused")
NETWORKS = ("resnet18", "mobilenet_v2")
TITLES = {
    "resnet18": "ResNet-18 b{b} 3x{s}x{s}",
    "mobilenet_v2": "MobileNet-v2 b{b} 3x{s}x{s}",
    "transformer_api": "Transformer {b}x{l} API loop",
    "transformer_fused": "Transformer {b}x{l} fused step",
}
SIDES = ("frame", "eager", "compile")
SIDE_TITLES = {"frame": "frame-mlir", "eager": "PyTorch eager", "compile": "torch.compile"}
LR, MOMENTUM, SEED = 0.01, 0.9, 0
#: The issue's sizes.
BATCH, SIZE, SEQ = 8, 224, 128
EMBED, HEADS, FFN = 256, 8, 1024
#: Issue 28's targets (1 thread): frame's step at most this multiple of the peer's.
VS_EAGER = {"resnet18": 0.8, "mobilenet_v2": 0.8, "transformer_api": 0.8,
            "transformer_fused": 0.7}
VS_COMPILE = {"resnet18": 1.0}
#: 2 threads at least this many times the 1-thread speed.
SPEEDUP_2T = 1.8
SPEEDUP_MODELS = ("resnet18", "transformer_api", "transformer_fused")
LOSS_REL = 1e-4


@dataclass(frozen=True)
class Sizes:
    batch: int = BATCH
    size: int = SIZE
    seq: int = SEQ

    def issue(self) -> bool:
        return (self.batch, self.size, self.seq) == (BATCH, SIZE, SEQ)

    def transformer(self) -> tuple[int, int, int, int, int]:
        return (self.batch, self.seq, EMBED, HEADS, FFN)

    def title(self, key: str) -> str:
        return TITLES[key].format(b=self.batch, s=self.size, l=self.seq)


def peer_of(key: str) -> str:
    """The PyTorch measurement a model shares: both transformer paths use one."""
    return "transformer" if key.startswith("transformer") else key


# -- the models --------------------------------------------------------------------------


def network_doc(key: str, sz: Sizes) -> dict[str, Any]:
    if key == "resnet18":
        from networks import resnet18

        return resnet18(batch=sz.batch, size=sz.size, classes=1000)
    from bench_compile import mobilenet_v2

    return mobilenet_v2(batch=sz.batch, size=sz.size, classes=1000)


def pair(v: Any) -> tuple[int, int]:
    return (int(v[0]), int(v[1])) if isinstance(v, list | tuple) else (int(v), int(v))


def network_shapes(doc: dict[str, Any]) -> tuple[dict[str, list[int]], int]:
    """Every tensor's shape (the operators' shape rules, for the ops the bench networks
    use) and the forward + backward FLOPs of the convolutions and inner products."""
    shapes = {i["name"]: list(i["shape"]) for i in doc["inputs"]}
    no_grad = {i["name"] for i in doc["inputs"]}  # graph inputs need no gradient
    flops = 0
    for op in doc["operators"]:
        o, kind = op.get("options", {}), op["type"]
        x = shapes[op["inputs"][0]]
        if kind == "Convolution2D":
            (kh, kw), (sh, sw) = pair(o["kernel"]), pair(o.get("stride", 1))
            (ph, pw), (dh, dw) = pair(o.get("pad", 0)), pair(o.get("dilate", 1))
            n, cin, h, w = x
            oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
            ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
            out = [n, o["channels_out"], oh, ow]
            fwd = 2 * n * oh * ow * o["channels_out"] * (cin // o.get("groups", 1)) * kh * kw
        elif kind == "InnerProduct":
            inputs = math.prod(x[1:])
            out = [x[0], o["outputs"]]
            fwd = 2 * x[0] * inputs * o["outputs"]
        elif kind == "Pooling2D":
            (kh, kw), (sh, sw) = pair(o["kernel"]), pair(o.get("stride", 1))
            (ph, pw) = pair(o.get("pad", 0))
            assert not o.get("ceil_mode"), "ceil_mode pooling: not in the bench networks"
            out = [x[0], x[1], (x[2] + 2 * ph - kh) // sh + 1, (x[3] + 2 * pw - kw) // sw + 1]
            fwd = 0
        elif kind == "GlobalPooling":
            out, fwd = [x[0], x[1], 1, 1], 0
        elif kind == "Flatten":
            out, fwd = [x[0], math.prod(x[1:])], 0
        elif kind == "SoftmaxWithLoss":
            out, fwd = [1], 0
        elif kind in ("BatchNorm", "Activation", "Elementwise"):
            out, fwd = list(x), 0
        else:
            raise ValueError(f"no shape rule here for {kind} ({op['name']})")
        flops += fwd * (2 if op["inputs"][0] in no_grad else 3)
        for t in op.get("outputs", [op["name"]]):
            shapes[t] = out
    return shapes, flops


def transformer_flops(sz: Sizes) -> int:
    """Forward + backward FLOPs of the block's products (mse and the update not
    counted): Q, K, V read x (no gradient: once forward in the backward), the output
    projection, Q.K^T, A.V and the two FFN products twice."""
    b, s, e, h, f = sz.transformer()
    rows = b * s
    qkv = 3 * 2 * rows * e * e
    attn = 2 * (2 * b * h * s * s * (e // h))
    rest = 2 * rows * e * e + attn + 2 * (2 * rows * e * f)
    return 2 * qkv + 3 * rest


def model_flops(key: str, sz: Sizes) -> int:
    if key in NETWORKS:
        return network_shapes(network_doc(key, sz))[1]
    return transformer_flops(sz)


def transformer_module(sz: Sizes) -> Any:
    from bench_factories import module

    return module("transformer", sz.transformer())


def transformer_config(sz: Sizes) -> dict[str, Any]:
    b, s, e, _, _ = sz.transformer()
    return {"args": sz.transformer(), "x": (b * s, e), "y": (b * s, e)}


def transformer_graph(sz: Sizes) -> tuple[Any, Any, list[str]]:
    """The block + mse as a `frame.Graph` (inputs x, target, parameters), the module
    and its parameters' names."""
    import frame

    cfg = transformer_config(sz)
    m = transformer_module(sz)
    f32 = frame.DType.float32
    g = frame.Graph("transformer")
    x = g.add_graph_input(list(cfg["x"]), f32)
    t = g.add_graph_input(list(cfg["y"]), f32)
    ps = frame.nn.add_parameter_inputs(g, m)
    (out,) = m.build(g, [x], ps)
    g.mark_output(frame.mse_loss(g, out, t))
    return g, m, [n for n, _, _ in m.parameters()]


def prepare(key: str, sz: Sizes, path: Path) -> None:
    """Write the model's batch and initial parameters to `path` (an .npz)."""
    if key in NETWORKS:
        import frame_mlir.network as fnet

        doc = network_doc(key, sz)
        net = fnet.load(doc, seed=SEED)
        feed = make_batch(doc)
        np.savez(path, data=feed["data"], label=feed["label"],
                 **{f"p:{k}": v for k, v in net.parameters().items()})
        return
    from bench_factories import data

    x, y, params = data("transformer", transformer_config(sz), transformer_module(sz))
    np.savez(path, x=x, y=y, **{f"p{i:02d}": p for i, p in enumerate(params)})


def load_inputs(path: str) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def network_params(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k[2:]: v for k, v in inputs.items() if k.startswith("p:")}


def transformer_params(inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [inputs[k] for k in sorted(k for k in inputs if k.startswith("p") and
                                       k[1:].isdigit())]


# -- PyTorch: a torch.nn model built from a JSON network ------------------------------------


def torch_activation(name: str, F: Any) -> Any:
    return {"identity": lambda v: v, "relu": F.relu, "relu6": F.relu6,
            "sigmoid": F.sigmoid, "tanh": F.tanh}[name]


def doc_net(doc: dict[str, Any], torch: Any) -> Any:
    """A `torch.nn.Module` computing `doc` (the operators `network_shapes` knows), one
    submodule per operator with parameters, at the operator's dotted name (so its state
    keys are `<op>.weight`, `<op>.running_mean`, ..., what `bench_network.torch_names`
    maps the dlprimitives names onto). `model(data, label)` returns the loss."""
    nn, F = torch.nn, torch.nn.functional
    shapes, _ = network_shapes(doc)

    def module_of(op: dict[str, Any]) -> Any:
        o, x = op.get("options", {}), shapes[op["inputs"][0]]
        if op["type"] == "Convolution2D":
            return nn.Conv2d(x[1], o["channels_out"], pair(o["kernel"]),
                             pair(o.get("stride", 1)), pair(o.get("pad", 0)),
                             pair(o.get("dilate", 1)), o.get("groups", 1),
                             bias=o.get("bias", True))
        if op["type"] == "BatchNorm":
            assert len(x) == 4 and not o.get("use_global_stats"), op["name"]
            return nn.BatchNorm2d(x[1], eps=o.get("eps", 1e-5),
                                  momentum=o.get("momentum", 0.1),
                                  affine=o.get("affine", True))
        if op["type"] == "InnerProduct":
            return nn.Linear(math.prod(x[1:]), o["outputs"], bias=o.get("bias", True))
        return None

    class DocNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.steps: list[tuple[dict[str, Any], Any]] = []
            for op in doc["operators"]:
                mod = module_of(op)
                if mod is not None:
                    *path, leaf = op["name"].split(".")
                    parent: Any = self
                    for part in path:
                        if not hasattr(parent, part):
                            parent.add_module(part, nn.Module())
                        parent = getattr(parent, part)
                    parent.add_module(leaf, mod)
                self.steps.append((op, mod))

        def forward(self, data: Any, label: Any) -> Any:
            env = {"data": data, "label": label}
            for op, mod in self.steps:
                o, kind = op.get("options", {}), op["type"]
                xs = [env[i] for i in op["inputs"]]
                act = torch_activation(o.get("activation", "identity"), F)
                if kind in ("Convolution2D", "BatchNorm"):
                    y = act(mod(xs[0]))
                elif kind == "InnerProduct":
                    y = act(mod(torch.flatten(xs[0], 1)))
                elif kind == "Activation":
                    y = act(xs[0])
                elif kind == "Elementwise":
                    a, b = o.get("coef1", 1) * xs[0], o.get("coef2", 1) * xs[1]
                    how = o.get("operation", "sum")
                    y = act(a + b if how == "sum" else a * b if how == "prod"
                            else torch.maximum(a, b))
                elif kind == "Pooling2D":
                    args = (pair(o["kernel"]), pair(o.get("stride", 1)), pair(o.get("pad", 0)))
                    y = (F.max_pool2d(xs[0], *args) if o.get("mode", "max") == "max" else
                         F.avg_pool2d(xs[0], *args,
                                      count_include_pad=o.get("count_include_pad", False)))
                elif kind == "GlobalPooling":
                    y = (F.adaptive_max_pool2d(xs[0], 1) if o.get("mode", "max") == "max"
                         else F.adaptive_avg_pool2d(xs[0], 1))
                elif kind == "Flatten":
                    y = torch.flatten(xs[0], 1)
                elif kind == "SoftmaxWithLoss":
                    y = F.cross_entropy(xs[0], xs[1].long())
                else:
                    raise ValueError(f"DocNet: no rule for {kind}")
                for t in op.get("outputs", [op["name"]]):
                    env[t] = y
            return env[doc["outputs"][0]]

    return DocNet()


# -- the workers (one subprocess each) ------------------------------------------------------


def frame_network(key: str, sz: Sizes, inputs: dict[str, np.ndarray], threads: int,
                  check_steps: int) -> tuple[Any, list[float], float]:
    import frame_mlir.network as fnet
    from frame_mlir.compile_options import CompileOptions

    net = fnet.load(network_doc(key, sz), seed=SEED, options=CompileOptions(threads=threads))
    params = network_params(inputs)
    got = net.parameters()
    assert sorted(got) == sorted(params), "frame's parameters differ from the bench's"
    net.set_parameters(params)
    feed = {"data": inputs["data"], "label": inputs["label"]}
    t0 = time.perf_counter()
    trainer = net.trainer(fnet.SGD(LR, momentum=MOMENTUM))
    losses = [float(trainer.step(feed)["loss"].reshape(-1)[0])]
    compile_s = time.perf_counter() - t0
    losses += [float(trainer.step(feed)["loss"].reshape(-1)[0]) for _ in range(check_steps)]
    return (lambda: trainer.step(feed)), losses, compile_s


def frame_transformer_api(sz: Sizes, inputs: dict[str, np.ndarray], threads: int,
                          check_steps: int) -> tuple[Any, list[float], float]:
    import frame

    assert os.environ.get("FRAME_NUM_THREADS") == str(threads)
    params0 = transformer_params(inputs)
    n = len(params0)
    t0 = time.perf_counter()
    g, _, _ = transformer_graph(sz)
    train = frame.compile(frame.build_backward_graph(g, 0, list(range(2, 2 + n))), "cpu")
    update = frame.compile(frame.build_sgd_update_graph(
        [(list(p.shape), frame.DType.float32) for p in params0], LR), "cpu")
    x, y = frame.from_numpy(inputs["x"]), frame.from_numpy(inputs["y"])
    state = {"params": [frame.from_numpy(p) for p in params0]}

    def step() -> Any:
        outs = train.run([x, y, *state["params"]])
        state["params"] = update.run([*state["params"], *outs[1:]])
        return outs[0]

    losses = [float(step().numpy().reshape(-1)[0])]
    compile_s = time.perf_counter() - t0
    losses += [float(step().numpy().reshape(-1)[0]) for _ in range(check_steps)]
    return step, losses, compile_s


def frame_transformer_fused(sz: Sizes, inputs: dict[str, np.ndarray], threads: int,
                            check_steps: int) -> tuple[Any, list[float], float]:
    from xdsl.dialects import builtin

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.passes.common import set_arg_attr
    from frame_mlir.runtime.executable import aligned_empty, compile_module

    t0 = time.perf_counter()
    g, _, names = transformer_graph(sz)
    fn, hidden = g._snapshot()
    assert not hidden
    for i, name in enumerate(names):
        set_arg_attr(fn, 2 + i, "frame.param", builtin.StringAttr(name))
    mod = builtin.ModuleOp([fn, *(f.clone() for f in g._functions.values())])
    ex = compile_module(mod, lr=LR, options=CompileOptions(threads=threads))
    sig = ex.signatures["transformer_train_step"]
    loss = np.zeros((), np.float32)
    arena = aligned_empty(max(sig.arena_size, 64))
    by_name = dict(zip(names, (p.copy() for p in transformer_params(inputs)), strict=True))
    data = iter([inputs["x"].copy(), inputs["y"].copy()])
    keep, args = [], []
    for a in sig.args:
        buf = {"arena": arena, "output": loss}.get(a.kind)
        if buf is None:
            buf = next(data) if a.kind == "input" else by_name[a.name]
        keep.append(buf)
        args.append(ctypes.c_void_p(buf.ctypes.data))
    fused = ex.function("transformer_train_step")

    def step() -> Any:
        fused(*args)
        return keep  # the buffers stay alive as long as the closure

    step()
    losses = [float(loss)]
    compile_s = time.perf_counter() - t0
    for _ in range(check_steps):
        step()
        losses.append(float(loss))
    return step, losses, compile_s


def worker_frame(key: str, sz: Sizes, inputs: dict[str, np.ndarray], threads: int,
                 check_steps: int, budget: float, repeats: int) -> dict[str, Any]:
    if key in NETWORKS:
        step, losses, compile_s = frame_network(key, sz, inputs, threads, check_steps)
    elif key == "transformer_api":
        step, losses, compile_s = frame_transformer_api(sz, inputs, threads, check_steps)
    else:
        step, losses, compile_s = frame_transformer_fused(sz, inputs, threads, check_steps)
    return {"ms": best_per_step(step, budget, repeats) * 1e3, "losses": losses,
            "compile_s": compile_s}


def worker_torch(key: str, sz: Sizes, inputs: dict[str, np.ndarray], threads: int,
                 check_steps: int, budget: float, repeats: int,
                 kind: str) -> dict[str, Any]:
    """PyTorch eager (`kind` "eager"), `torch.compile` of the eager step ("compile"), or
    eager in float64 ("f64": the loss trajectory only, untimed)."""
    import torch

    torch.set_num_threads(threads)
    dtype = torch.float64 if kind == "f64" else torch.float32
    if key in NETWORKS:
        doc = network_doc(key, sz)
        if key == "resnet18":
            from bench_network import torch_model

            net = torch_model("resnet18", torch)
        else:
            net = doc_net(doc, torch)
        net.train()
        load_torch_state(net, doc, network_params(inputs), torch)
        net.to(dtype)
        x = torch.from_numpy(inputs["data"]).to(dtype)
        y = torch.from_numpy(inputs["label"].astype(np.int64))
        opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
        F = torch.nn.functional

        def forward() -> Any:
            return F.cross_entropy(net(x), y) if key == "resnet18" else net(x, y)
    else:
        from bench_factories import torch_model

        block = torch_model("transformer", transformer_config(sz), torch)
        x, y = (torch.from_numpy(inputs[k]).to(dtype) for k in ("x", "y"))
        tp = [torch.from_numpy(p.copy()).to(dtype).requires_grad_()
              for p in transformer_params(inputs)]
        opt = torch.optim.SGD(tp, lr=LR)

        def forward() -> Any:
            return ((block(x, tp) - y) ** 2).mean()

    def eager() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = forward()
        loss.backward()
        opt.step()
        return loss

    step = torch.compile(eager) if kind == "compile" else eager
    t0 = time.perf_counter()
    losses = [float(step().detach())]
    compile_s = time.perf_counter() - t0
    losses += [float(step().detach()) for _ in range(check_steps)]
    if kind == "f64":
        return {"losses": losses}
    return {"ms": best_per_step(step, budget, repeats) * 1e3, "losses": losses,
            "compile_s": compile_s}


def run_worker_main(args: argparse.Namespace) -> int:
    threads = int(args.threads)
    limit_cores(threads)
    sz = Sizes(args.batch or BATCH, args.size or SIZE, args.seq or SEQ)
    inputs = load_inputs(args.data)
    common = (args.only, sz, inputs, threads, args.check_steps, args.budget, args.repeats)
    if args.worker == "frame":
        result = worker_frame(*common)
    else:
        result = worker_torch(*common, kind=args.worker)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def run_worker(side: str, key: str, sz: Sizes, data: Path, threads: int, check_steps: int,
               budget: float, repeats: int, timeout_s: float) -> dict[str, Any]:
    """Run `--worker side` in a subprocess limited to `threads` cores: its result, or
    {"error": why}."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               FRAME_NUM_THREADS=str(threads), TORCHINDUCTOR_COMPILE_THREADS="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", side, "--only", key,
           "--data", str(data), "--threads", str(threads), "--check-steps",
           str(check_steps), "--budget", str(budget), "--repeats", str(repeats),
           "--batch", str(sz.batch), "--size", str(sz.size), "--seq", str(sz.seq)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=timeout_s, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return {"error": lines[-1][:200] if lines else f"exit status {proc.returncode}"}


# -- the report -----------------------------------------------------------------------------


@dataclass
class Report:
    sz: Sizes
    keys: list[str]
    threads: list[int]
    check_steps: int
    peak: float
    flops: dict[str, int]
    runs: dict[tuple[str, str, int], dict[str, Any]]  # (side, key, threads) -> result

    def get(self, side: str, key: str, thr: int) -> dict[str, Any]:
        return self.runs.get((side, key if side == "frame" else peer_of(key), thr),
                             {"error": "not run"})

    def ms(self, side: str, key: str, thr: int) -> float | None:
        return self.get(side, key, thr).get("ms")


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "missed")


def gflops(flops: int, step_ms: float | None) -> float | None:
    return flops / (step_ms * 1e-3) / 1e9 if step_ms else None


def print_tables(rep: Report) -> None:
    for thr in rep.threads:
        peak = rep.peak * thr
        print(f"\nms per training step, {thr} thread{'s' if thr > 1 else ''}; GFLOP/s "
              f"(forward + backward products) and % of {thr} x the 1-core peak "
              f"({peak:.0f} GFLOP/s); ratio < 1 = frame faster")
        head = (f"{'model':<34} {'GFLOP':>6} {'compile s':>9} {'frame':>10} {'GFLOP/s':>8} "
                f"{'% peak':>7} {'eager':>10} {'GFLOP/s':>8} {'t.compile':>10} "
                f"{'GFLOP/s':>8} {'f/eager':>8} {'f/compile':>9}")
        print(head)
        print("-" * len(head))
        for key in rep.keys:
            fl = rep.flops[key]
            f, e, c = (rep.ms(s, key, thr) for s in SIDES)
            gf = gflops(fl, f)
            pct = f"{100 * gf / peak:>6.1f}%" if gf else f"{'n/a':>7}"
            cs = rep.get("frame", key, thr).get("compile_s")

            def g(v: float | None) -> str:
                return f"{v:>8.1f}" if v else f"{'n/a':>8}"

            def r(a: float | None, b: float | None, w: int) -> str:
                return f"{a / b:>{w}.2f}" if a and b else f"{'n/a':>{w}}"

            print(f"{rep.sz.title(key):<34} {fl / 1e9:>6.1f} "
                  f"{(f'{cs:.1f}' if cs is not None else 'n/a'):>9} {ms(f)} {g(gf)} {pct} "
                  f"{ms(e)} {g(gflops(fl, e))} {ms(c)} {g(gflops(fl, c))} "
                  f"{r(f, e, 8)} {r(f, c, 9)}")
        for key in rep.keys:
            first = key == next(k for k in rep.keys if peer_of(k) == peer_of(key))
            for side in SIDES:  # each peer's error once (the transformers share theirs)
                err = rep.get(side, key, thr).get("error")
                if err and err != "--no-compile" and (side == "frame" or first):
                    print(f"  {key} {SIDE_TITLES[side]}: n/a ({err})")
        compile_s = {peer_of(k): rep.get("compile", k, thr).get("compile_s")
                     for k in rep.keys}
        shown = [f"{k} {v:.0f} s" for k, v in compile_s.items() if v is not None]
        if shown:
            print(f"  torch.compile's first call: {', '.join(shown)}")
    if len(rep.threads) > 1:
        t1, rest = rep.threads[0], rep.threads[1:]
        print(f"\nspeed at N threads over the same side's speed at {t1} "
              f"(1-thread ms / N-thread ms)")
        for key in rep.keys:
            parts = []
            for side in SIDES:
                for thr in rest:
                    a, b = rep.ms(side, key, t1), rep.ms(side, key, thr)
                    parts.append(f"{SIDE_TITLES[side]} {thr}t "
                                 + (f"{a / b:.2f}x" if a and b else "n/a"))
            print(f"  {rep.sz.title(key):<34} " + "; ".join(parts))


def print_losses(rep: Report) -> None:
    print(f"\nlosses from identical parameters: first, and after {rep.check_steps} SGD "
          "steps; the peers' relative difference to frame's (worst step of the trajectory)")
    for thr in rep.threads:
        for key in rep.keys:
            fl = rep.get("frame", key, thr).get("losses")
            if not fl:
                print(f"  {key} {thr}t: frame n/a")
                continue
            parts = [f"frame first {fl[0]:.7g}, last {fl[-1]:.7g}"]
            for side in ("eager", "compile"):
                pl = rep.get(side, key, thr).get("losses")
                if pl:
                    worst = max(rel(a, b) for a, b in zip(fl, pl, strict=True))
                    parts.append(f"{side}: first {rel(fl[0], pl[0]):.1e}, last "
                                 f"{rel(fl[-1], pl[-1]):.1e} (worst {worst:.1e})")
            print(f"  {key} {thr}t: " + "; ".join(parts))
    ref = {k: rep.runs.get(("f64", peer_of(k), 0), {}).get("losses") for k in rep.keys}
    if not any(ref.values()):
        return
    t1 = rep.threads[0]
    print(f"\nfloat32 against PyTorch eager in float64 (same start, same steps): relative "
          f"difference of the loss after {rep.check_steps} steps (worst step), {t1}t; how "
          "far float32 rounding alone moves each trajectory")
    for key in rep.keys:
        r = ref[key]
        if not r:
            err = rep.runs.get(("f64", peer_of(key), 0), {}).get("error", "not run")
            print(f"  {key}: n/a ({err})")
            continue
        parts = [f"f64 last {r[-1]:.7g}"]
        for side in SIDES:
            pl = rep.get(side, key, t1).get("losses")
            if pl:
                worst = max(rel(a, b) for a, b in zip(pl, r, strict=True))
                parts.append(f"{side} {rel(pl[-1], r[-1]):.1e} ({worst:.1e})")
        print(f"  {key}: " + "; ".join(parts))


def print_targets(rep: Report) -> None:
    rows: list[tuple[str, str, bool | None]] = []
    t1 = 1 if 1 in rep.threads else None

    def ratio_row(label: str, a: float | None, b: float | None, limit: float) -> None:
        if a and b:
            rows.append((label, f"{a / b:.3f}x ({a:.1f} / {b:.1f} ms)", a / b <= limit))
        else:
            rows.append((label, "n/a", None))

    for key in rep.keys:
        if key in VS_EAGER:
            f = rep.ms("frame", key, t1) if t1 else None
            ratio_row(f"{key} <= {VS_EAGER[key]}x PyTorch eager, 1t", f,
                      rep.ms("eager", key, t1) if t1 else None, VS_EAGER[key])
        if key in VS_COMPILE:
            f = rep.ms("frame", key, t1) if t1 else None
            ratio_row(f"{key} <= {VS_COMPILE[key]}x torch.compile, 1t", f,
                      rep.ms("compile", key, t1) if t1 else None, VS_COMPILE[key])
    for key in rep.keys:
        if key in SPEEDUP_MODELS:
            label = f"{key} 2t >= {SPEEDUP_2T}x the 1t speed"
            a = rep.ms("frame", key, 1) if 1 in rep.threads else None
            b = rep.ms("frame", key, 2) if 2 in rep.threads else None
            if a and b:
                rows.append((label, f"{a / b:.3f}x ({a:.1f} -> {b:.1f} ms)",
                             a / b >= SPEEDUP_2T))
            else:
                rows.append((label, "n/a", None))
    for key in rep.keys:
        label = f"{key} loss after {rep.check_steps} steps vs eager <= {LOSS_REL:g} rel, 1t"
        fl = rep.get("frame", key, t1).get("losses") if t1 else None
        pl = rep.get("eager", key, t1).get("losses") if t1 else None
        if fl and pl:
            d = rel(fl[-1], pl[-1])
            rows.append((label, f"{d:.1e} ({fl[-1]:.7g} vs {pl[-1]:.7g})", d <= LOSS_REL))
        else:
            rows.append((label, "n/a", None))
    note = "" if rep.sz.issue() else " (NOT at the issue's sizes: smoke run only)"
    print(f"\nissue 28 targets{note}")
    width = max(len(r[0]) for r in rows)
    for label, value, ok in rows:
        print(f"  {label:<{width}}  {value:<40} {verdict(ok)}")


# -- main --------------------------------------------------------------------------------


def parse_keys(text: str | None) -> list[str]:
    if not text:
        return list(MODELS)
    keys = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in keys if k not in MODELS]
    if bad:
        raise SystemExit(f"unknown model(s) {', '.join(bad)}; expected {', '.join(MODELS)}")
    return [k for k in MODELS if k in keys]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help=f"models, comma-separated (default: {','.join(MODELS)})")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer, shorter repeats (the sizes stay the issue's)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--no-f64", action="store_true",
                    help="skip the float64 PyTorch reference trajectory (untimed)")
    ap.add_argument("--check-steps", type=int, default=20,
                    help="SGD steps before the loss comparison (20)")
    ap.add_argument("--batch", type=int, help=f"batch of every model ({BATCH})")
    ap.add_argument("--size", type=int, help=f"image size of the networks ({SIZE})")
    ap.add_argument("--seq", type=int, help=f"the transformer's sequence length ({SEQ})")
    ap.add_argument("--budget", type=float, help="seconds per timed repeat (0.5; quick 0.1)")
    ap.add_argument("--repeats", type=int, help="timed repeats, the best counts (7; quick 3)")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds allowed to one worker process (1800)")
    # Internal: a worker subprocess.
    ap.add_argument("--worker", choices=(*SIDES, "f64"), help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    budget = args.budget if args.budget is not None else (0.1 if args.quick else 0.5)
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 7)
    if args.worker:
        args.budget, args.repeats = budget, repeats
        return run_worker_main(args)
    keys = parse_keys(args.only)
    threads = sorted({int(t) for t in args.threads.split(",")})
    sz = Sizes(args.batch or BATCH, args.size or SIZE, args.seq or SEQ)
    sides = [s for s in SIDES if not (s == "compile" and args.no_compile)]
    if not args.no_f64:
        sides.append("f64")

    from peak import measure_peak

    from frame_mlir.target.host import host_info

    info = host_info()
    print(f"host: {info.cpu} ({info.arch}), {info.cores} cores available, "
          f"{info.f32_lanes} f32 lanes; {versions()}")
    print(f"best of {repeats} repeats of ~{budget} s each (at least one step each); every "
          f"side in its own process pinned to N cores; {args.check_steps} check steps")
    if not sz.issue():
        print(f"note: smoke sizes (batch {sz.batch}, size {sz.size}, seq {sz.seq}), not "
              "the issue's")
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"warning: load average {load:.1f} on {os.cpu_count()} cpus before the run: "
              "other work shares the cores, figures are contended")
    for thr in threads:
        if thr > info.cores:
            print(f"note: {thr} threads on {info.cores} available cores: oversubscribed")
    peak = measure_peak()
    print(f"peak: {peak.describe()}", flush=True)
    flops = {k: model_flops(k, sz) for k in keys}
    runs: dict[tuple[str, str, int], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-models-") as tmp:
        for key in keys:
            print(f"\n== {key}: {sz.title(key)}, {flops[key] / 1e9:.2f} GFLOP/step ==",
                  flush=True)
            data = Path(tmp) / f"{peer_of(key)}.npz"
            if not data.exists():
                prepare(key, sz, data)
            for thr in threads:
                for side in sides:
                    name = key if side == "frame" else peer_of(key)
                    # The float64 reference is untimed: once, on the most threads.
                    at = 0 if side == "f64" else thr
                    if (side, name, at) in runs or (side == "f64" and thr != threads[-1]):
                        continue  # the transformer's torch runs serve both paths
                    t0 = time.perf_counter()
                    r = run_worker(side, key, sz, data, thr, args.check_steps, budget,
                                   repeats, args.timeout)
                    runs[(side, name, at)] = r
                    if "error" in r:
                        what = f"FAILED ({r['error']})"
                    elif side == "f64":
                        what = (f"losses first {r['losses'][0]:.7g}, last "
                                f"{r['losses'][-1]:.7g} (untimed)")
                    else:
                        what = (f"{r['ms']:.3f} ms/step, first loss {r['losses'][0]:.7g}, "
                                f"compile + first step {r['compile_s']:.1f} s")
                    title = SIDE_TITLES.get(side, "eager float64")
                    print(f"  {title:<14} {thr}t: {what} ({time.perf_counter() - t0:.0f} s)",
                          flush=True)
                if args.no_compile:
                    runs.setdefault(("compile", peer_of(key), thr), {"error": "--no-compile"})
    again = measure_peak()
    best = max(peak.gflops, again.gflops)
    print(f"\npeak again at the end: {again.gflops:.1f} GFLOP/s; % peak uses {best:.1f}")
    rep = Report(sz, keys, threads, args.check_steps, best, flops, runs)
    print_tables(rep)
    print_losses(rep)
    print_targets(rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
