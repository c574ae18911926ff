"""Native training of a `.kyn` program: every forward, backward and update step runs
in code our pipeline generated (docs/kyn.md, "Training loop").

One `compile_module` call builds the whole run: the training function and its gradient
(frame-autodiff) for `train.batch` rows and, when the split leaves a smaller last
batch, for that size too; the evaluation function over the held-out split; and the
optimizer's update function (`optim.py`). The host keeps one buffer per parameter,
gradient, optimizer state and hyperparameter, binds them to the compiled functions
once, and per step only gathers the batch rows into staging buffers, draws the dropout
masks, writes the step's hyperparameters and calls two native functions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func

from frame_mlir.data.shuffle import epoch_order
from frame_mlir.kyn.errors import KynCodegenError, KynDiagnostic
from frame_mlir.kyn.export import export_npz
from frame_mlir.kyn.lower import (
    BuiltKyn,
    build_eval_function,
    build_train_function,
    param_decls,
    symbol,
)
from frame_mlir.kyn.module import KynModule
from frame_mlir.kyn.optim import OptimizerRuntime, Schedule
from frame_mlir.runtime.executable import ENV_CACHE, BoundFunction
from frame_mlir.runtime.random import MT19937, uniform_float32

__all__ = ["KynTrainer", "StepFunctions", "TrainReport", "check_supported", "compute_metrics",
           "initial_params", "optimizer_runtime", "step_functions"]


def _codegen(rule: str, message: str, module: KynModule) -> KynCodegenError:
    return KynCodegenError([KynDiagnostic(rule, "codegen", message, module.source_path)])


def check_supported(module: KynModule) -> None:
    """The native trainer's limits as clear errors (docs/kyn.md)."""
    t = module.train
    if t.precision != "fp32":
        raise _codegen("KYN-C05", f"precision '{t.precision}' is not supported by the native "
                       "trainer: the frame dialect has no casts for mixed precision with "
                       "float32 master weights; use precision = fp32 (the PyTorch script "
                       "from `frame-kyn compile` supports it)", module)
    if t.device == "cuda":
        raise _codegen("KYN-C04", "device 'cuda': the native trainer runs on the CPU (the "
                       "CUDA backend is not available yet); use device = cpu or auto",
                       module)


def initial_params(module: KynModule, seed: int) -> dict[str, np.ndarray]:
    """PyTorch's initialisation of nn.Linear (weight and bias U(-1/sqrt(in), 1/sqrt(in)))
    and BatchNorm1d (1, 0, running mean 0, running var 1), drawn in layer order from the
    project's MT19937 stream seeded with `seed`."""
    engine = MT19937(seed)
    out: dict[str, np.ndarray] = {}
    for p in param_decls(module):
        layer = module.model.layers[p.layer + 1]
        if layer.kind == "batchnorm":
            fill = 1.0 if p.name.endswith(("weight", "running_var")) else 0.0
            out[p.name] = np.full(p.shape, fill, np.float32)
        else:
            r = 1.0 / math.sqrt(layer.in_features)
            out[p.name] = uniform_float32(engine, math.prod(p.shape), -r, r).reshape(p.shape)
    return out


def compute_metrics(module: KynModule, outputs: np.ndarray, y: np.ndarray
                    ) -> dict[str, float]:
    """The `evaluate` metrics of held-out outputs (host-side bookkeeping of results the
    compiled evaluation function produced)."""
    metrics = module.evaluate.metrics if module.evaluate else ()
    out: dict[str, float] = {}
    task = module.task
    if task == "binary":
        pred = outputs if module.model.final_activation == "sigmoid" else \
            1.0 / (1.0 + np.exp(-outputs.astype(np.float64)))
    else:
        pred = outputs
    for m in metrics:
        if m == "accuracy":
            if task == "classification":
                hit = np.argmax(outputs, axis=1) == y
            else:
                hit = (pred[:, 0] >= 0.5) == (y[:, 0] >= 0.5)
            out[m] = float(np.mean(hit))
            continue
        d = pred.astype(np.float64) - y.astype(np.float64)
        if m == "mae":
            out[m] = float(np.mean(np.abs(d)))
        elif m == "mse":
            out[m] = float(np.mean(d * d))
        else:
            out[m] = float(math.sqrt(np.mean(d * d)))
    return out


def optimizer_runtime(module: KynModule, steps_per_epoch: int
                      ) -> tuple[Schedule, OptimizerRuntime]:
    """The run's schedule and optimizer; the update function keeps a momentum buffer
    when the schedule can cycle momentum (onecycle)."""
    t = module.train
    schedule = Schedule(t.scheduler, t.optimizer, t.epochs, steps_per_epoch)
    return schedule, OptimizerRuntime(t.optimizer, dynamic_momentum=schedule.cycles_momentum)


@dataclass
class StepFunctions:
    """The frame functions of a run: a training function per batch size
    (`@<M>_train` for train.batch, `@<M>_train_b<B>` for the last, smaller batch), the
    evaluation function and the optimizer's update."""

    trains: dict[int, BuiltKyn]
    eval: BuiltKyn
    update: func.FuncOp

    def module(self) -> builtin.ModuleOp:
        return builtin.ModuleOp([*(b.fn for b in self.trains.values()), self.eval.fn,
                                 self.update])


def step_functions(module: KynModule, batch_sizes: list[int], eval_rows: int,
                   opt: OptimizerRuntime) -> StepFunctions:
    """Build the functions `frame-kyn train` compiles (and `--emit-stage` prints)."""
    trains = {}
    for i, b in enumerate(batch_sizes):
        built = build_train_function(module, b)
        if i:
            built.fn.sym_name = builtin.StringAttr(f"{built.fn.sym_name.data}_b{b}")
        trains[b] = built
    shapes = [(p.name, p.shape) for p in param_decls(module) if p.trainable]
    update = opt.build(f"{symbol(module.model.name)}_{module.train.optimizer.name}", shapes)
    return StepFunctions(trains, build_eval_function(module, eval_rows), update)


@dataclass
class TrainReport:
    """What a run did: per-epoch mean training and held-out losses, the metrics, times."""

    epoch_losses: list[float] = field(default_factory=list)
    heldout_losses: list[float] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    epochs_run: int = 0
    steps: int = 0
    stopped_early: bool = False
    compile_seconds: float = 0.0
    train_seconds: float = 0.0
    checkpoints: list[str] = field(default_factory=list)


class KynTrainer:
    """A compiled training run of `module` for `n_train` training and `n_test` held-out
    rows. Parameters live in `self.params` (name -> float32 array, updated in place)."""

    def __init__(self, module: KynModule, n_train: int, n_test: int, *,
                 seed: int | None = None, options: Any = None, cache: Any = ENV_CACHE,
                 after_pass: Callable[..., None] | None = None, target: str = "cpu"):
        check_supported(module)
        self.module = module
        self.target = target  # "cpu", or "cuda" / "cuda-emulator": the steps' kernels
        t = module.train
        self.seed = (t.seed if t.seed is not None else 0) if seed is None else seed
        self.batch = min(t.batch, n_train)
        self.n_train, self.n_test = n_train, n_test
        self.steps_per_epoch = -(-n_train // self.batch)
        self.rem = n_train % self.batch
        self.schedule, self.opt = optimizer_runtime(module, self.steps_per_epoch)
        self.decls = param_decls(module)
        self.params = initial_params(module, self.seed)
        self.trainable = [p.name for p in self.decls if p.trainable]
        self.bn_layers = [j for j, layer in enumerate(module.model.layers[1:])
                          if layer.kind == "batchnorm"]
        self.num_batches_tracked = dict.fromkeys(self.bn_layers, 0)
        self.t = 0
        self.rng = np.random.Generator(np.random.PCG64(self.seed))
        start = time.perf_counter()
        self._compile(options, cache, after_pass)
        self.compile_seconds = time.perf_counter() - start

    # -- compilation -------------------------------------------------------------------
    def _compile(self, options: Any, cache: Any, after_pass: Any) -> None:
        from frame_mlir.runtime.executable import compile_module

        m = self.module
        sizes = [self.batch] + ([self.rem] if self.rem else [])
        fns = step_functions(m, sizes, max(self.n_test, 1), self.opt)
        if self.target == "cpu":
            ex = compile_module(fns.module(), options=options, after_pass=after_pass,
                                cache=cache)
        else:  # the same functions as CUDA kernels, behind the Executable interface
            from frame_mlir.backend.cuda.runtime import compile_module_cuda

            ex = compile_module_cuda(fns.module(), target=self.target, options=options,
                                     after_pass=after_pass)
        self._ex = ex  # the JIT module owns the code the bound functions call
        self.eval_built = fns.eval
        upd_name = fns.update.sym_name.data
        trains = {b: (built, built.fn.sym_name.data) for b, built in fns.trains.items()}
        n_in = m.model.input_size
        classify = m.task == "classification"
        ydt = np.int32 if classify else np.float32
        self.stage: dict[int, tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]] = {}
        self.state = {k: {n: np.zeros(self.params[n].shape, np.float32)
                          for n in self.trainable} for k in self.opt.states}
        self.hyper = [np.zeros((), np.float32) for _ in self.opt.hyper_names]
        self.grad_fns: dict[int, BoundFunction] = {}
        self.upd_fns: dict[int, BoundFunction] = {}
        upd_sig = ex.signatures[upd_name]
        for b, (built, name) in trains.items():
            x = np.zeros((b, n_in), np.float32)
            y = np.zeros((b,) if classify else (b, 1), ydt)
            masks = {a[1]: np.ones((b, m.model.layers[a[1] + 1].in_features), np.float32)
                     for a in built.args if a[0] == "mask"}
            self.stage[b] = (x, y, masks)
            grad = BoundFunction(ex, ex.signatures[f"{name}_grad"])
            bufs = [x if a[0] == "x" else y if a[0] == "y" else masks[a[1]]
                    if a[0] == "mask" else self.params[a[1]] for a in built.args]
            grad.bind(bufs)
            self.grad_fns[b] = grad
            first = 1 + len(built.stats)
            gbufs = [grad.outputs[first + k] for k in range(len(self.trainable))]
            upd = BoundFunction(ex, upd_sig)
            upd.bind([*(self.params[n] for n in self.trainable), *gbufs,
                      *(self.state[k][n] for k in self.opt.states for n in self.trainable),
                      *self.hyper])
            self.upd_fns[b] = upd
        e = self.eval_built
        nt = max(self.n_test, 1)
        self.eval_x = np.zeros((nt, n_in), np.float32)
        self.eval_y = np.zeros((nt,) if classify else (nt, 1), ydt)
        self.eval_fn = BoundFunction(ex, ex.signatures[e.fn.sym_name.data])
        self.eval_fn.bind([self.eval_x if a[0] == "x" else self.eval_y if a[0] == "y"
                           else self.params[a[1]] for a in e.args])

    # -- steps -------------------------------------------------------------------------
    def set_params(self, values: dict[str, np.ndarray]) -> None:
        """Overwrite parameters (in place: the compiled functions keep the buffers)."""
        for k, v in values.items():
            if k.endswith("num_batches_tracked"):
                self.num_batches_tracked[int(k.split(".")[1])] = int(v)
                continue
            if k not in self.params or self.params[k].shape != np.shape(v):
                raise ValueError(f"set_params: unknown parameter or wrong shape: {k} "
                                 f"{np.shape(v)}")
            np.copyto(self.params[k], np.asarray(v, np.float32))

    def step(self, x: np.ndarray, y: np.ndarray, lr: float | None = None,
             momentum: float | None = None) -> float:
        """One optimizer step on the batch (x, y) at `lr` (default: the optimizer's);
        returns the batch loss before the update."""
        b = len(x)
        if b not in self.stage:
            raise ValueError(f"step: batch of {b} rows; this run is compiled for "
                             f"{sorted(self.stage)}")
        sx, sy, masks = self.stage[b]
        np.copyto(sx, x)
        np.copyto(sy, y, casting="unsafe")
        return self._step(b, masks, lr, momentum)

    def _step(self, b: int, masks: dict[int, np.ndarray], lr: float | None,
              momentum: float | None) -> float:
        layers = self.module.model.layers
        for j, buf in masks.items():
            p = layers[j + 1].rate
            keep = self.rng.random(buf.shape, dtype=np.float32) >= p
            np.multiply(keep, np.float32(1.0 / (1.0 - p)), out=buf)
        self.t += 1
        lr = float(self.module.train.optimizer.args["lr"]) if lr is None else lr
        for buf, v in zip(self.hyper, self.opt.hyper(self.t, lr, momentum), strict=True):
            buf[()] = v
        grad = self.grad_fns[b]
        grad.run()
        self.upd_fns[b].run()
        for j in self.bn_layers:
            self.num_batches_tracked[j] += 1
        return float(grad.outputs[0])

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        """(outputs, mean loss) of the inference graph on the held-out rows."""
        if len(x) != len(self.eval_x):
            raise ValueError(f"evaluate: {len(x)} rows; compiled for {len(self.eval_x)}")
        np.copyto(self.eval_x, x)
        np.copyto(self.eval_y, y, casting="unsafe")
        self.eval_fn.run()
        return self.eval_fn.outputs[0].copy(), float(self.eval_fn.outputs[1])

    def state_dict(self) -> dict[str, np.ndarray]:
        """Every parameter and buffer by name (copies), num_batches_tracked included."""
        out: dict[str, np.ndarray] = {}
        for p in self.decls:
            out[p.name] = self.params[p.name].copy()
            if p.name.endswith("running_var"):
                out[f"layers.{p.layer}.num_batches_tracked"] = np.array(
                    self.num_batches_tracked[p.layer], np.int64)
        return out

    # -- the whole run -----------------------------------------------------------------
    def fit(self, data: dict[str, Any], *, progress: Callable[..., Any] | None = None,
            on_epoch: Callable[[int, float, float | None], None] | None = None,
            out_dir: str | Path = ".") -> TrainReport:
        """Train for `train.epochs` epochs (fewer with early_stop) on `data` (the CSV
        loader's dict), then evaluate; `progress(epoch, total_batches)` returns a
        per-batch callback (a progress bar), `on_epoch(epoch, loss, heldout)` is called
        after each epoch."""
        m, t = self.module, self.module.train
        xtr, ytr = data["x_train"], data["y_train"]
        xte, yte = data["x_test"], data["y_test"]
        classify = m.task == "classification"
        if classify:
            ytr = ytr.astype(np.int32)
            yte = yte.astype(np.int32)
            units = m.model.output_units
            for what, ys in (("training", ytr), ("held-out", yte)):
                if len(ys) and (ys.min() < 0 or ys.max() >= units):
                    raise _codegen("KYN-C03", f"the {what} labels reach class {ys.max()}, but "
                                   f"model '{m.model.name}' has {units} output units", m)
        report = TrainReport(compile_seconds=self.compile_seconds)
        shuffle = m.dataset.shuffle
        best = math.inf
        since_best = 0
        have_test = len(xte) > 0
        start = time.perf_counter()
        for epoch in range(t.epochs):
            order = np.asarray(epoch_order(self.n_train, shuffle, self.seed, epoch), np.intp)
            tick = progress(epoch, self.steps_per_epoch) if progress else None
            total = 0.0
            for k in range(self.steps_per_epoch):
                idx = order[k * self.batch:(k + 1) * self.batch]
                b = len(idx)
                sx, sy, masks = self.stage[b]
                np.take(xtr, idx, axis=0, out=sx)
                np.take(ytr, idx, axis=0, out=sy)
                lr, mom = self.schedule.lr_momentum(epoch, k)
                total += self._step(b, masks, lr, mom) * b
                if tick is not None:
                    tick()
            report.steps += self.steps_per_epoch
            loss = total / self.n_train
            report.epoch_losses.append(loss)
            held = None
            if have_test:
                held = self.evaluate(xte, yte)[1]
                report.heldout_losses.append(held)
            report.epochs_run = epoch + 1
            if on_epoch is not None:
                on_epoch(epoch, loss, held)
            if t.checkpoint and (epoch + 1) % t.checkpoint == 0:
                report.checkpoints.append(self.save_checkpoint(out_dir, epoch + 1))
            if t.early_stop is not None and held is not None:
                if held < best - t.early_stop_min_delta:
                    best, since_best = held, 0
                else:
                    since_best += 1
                    if since_best >= t.early_stop:
                        report.stopped_early = True
                        break
        report.train_seconds = time.perf_counter() - start
        if have_test:
            outputs, _ = self.evaluate(xte, yte)
            report.metrics = compute_metrics(m, outputs, yte)
        return report

    def save_checkpoint(self, out_dir: str | Path, epoch: int) -> str:
        """Parameters, buffers and optimizer state after `epoch`, written atomically to
        `<out_dir>/<checkpoint dir>/<model>_epoch<k>.npz`."""
        m = self.module
        folder = Path(out_dir) / m.train.checkpoint_dir
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{m.model.name}_epoch{epoch}.npz"
        arrays = dict(self.state_dict())
        for k, per in self.state.items():
            for n, v in per.items():
                arrays[f"optimizer.{k}.{n}"] = v
        arrays["optimizer.step"] = np.array(self.t, np.int64)
        export_npz(arrays, str(path), source=m.source_path)
        return str(path)

