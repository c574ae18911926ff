"""Native training of a `.kyn` program: every forward, backward and update step runs
in code our pipeline generated (docs/kyn.md, "Training loop").

One `compile_module` call builds the whole run: the training function and its gradient
(frame-autodiff) for `train.batch` rows and, when the split leaves a smaller last
batch, for that size too; the evaluation function over the held-out split; and the
optimizer's update function (`optim.py`). The host keeps one buffer per parameter,
gradient, optimizer state and hyperparameter, binds them to the compiled functions
once, and per step only gathers the batch rows into staging buffers, draws the dropout
masks, writes the step's hyperparameters and calls two native functions.

Every training function writes its gradients and its loss into views of one flat
float32 buffer. In a data-parallel job (`mpirun -n N frame-kyn train P --data-parallel`)
each rank compiles its share of every batch (rows [r*B/N, (r+1)*B/N) of the global
batch the single process would train, in the same shuffled order), with its mean loss
weighted by its share in the compiled function, so one allreduce of that buffer per
step yields the global batch's loss and gradients on every rank; each rank then runs the
same update. Evaluation runs on every rank alike, so every decision (early stopping,
schedules) is the same everywhere.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import builtin, func

from frame_mlir.frontends.kyn.errors import KynCodegenError, KynDiagnostic, raise_if_errors
from frame_mlir.frontends.kyn.export import export_npz
from frame_mlir.frontends.kyn.infer import check_rows, train_key_loc
from frame_mlir.frontends.kyn.lower import (
    BuiltKyn,
    build_eval_function,
    build_train_function,
    param_decls,
    symbol,
)
from frame_mlir.frontends.kyn.module import KynModule
from frame_mlir.frontends.kyn.optim import OptimizerRuntime, Schedule
from frame_mlir.runtime.distributed.flat import flat_buffer
from frame_mlir.runtime.executable import ENV_CACHE, BoundFunction
from frame_mlir.runtime.random import MT19937, uniform_float32
from frame_mlir.runtime.shuffle import epoch_order
from frame_mlir.runtime.training import (
    DivergenceWatch,
    OptimizerState,
    TrainerState,
    compile_step_module,
)

if TYPE_CHECKING:
    from frame_mlir.runtime.checkpoint import Checkpoint
    from frame_mlir.runtime.distributed.job import Job

__all__ = ["BatchShare", "KynTrainer", "StepFunctions", "TrainReport", "check_data_parallel",
           "check_supported", "compute_metrics", "initial_params", "optimizer_runtime",
           "rank_share", "step_functions"]


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


def rank_share(size: int, rank: int, ranks: int) -> tuple[int, int]:
    """Rank `rank`'s rows [lo, hi) of every global batch of `size` rows: contiguous, in
    rank order, [r*B/N, (r+1)*B/N) when the `ranks` divide `size`; otherwise (only the
    last, smaller batch of an epoch) the shares differ by at most one row."""
    return size * rank // ranks, size * (rank + 1) // ranks


@dataclass(frozen=True)
class BatchShare:
    """A global batch size of the run (`size` rows) and this rank's rows [lo, hi) of
    every batch of that size (all of them in one process)."""

    size: int
    lo: int
    hi: int

    @property
    def rows(self) -> int:
        return self.hi - self.lo

    @property
    def loss_scale(self) -> float:
        """The weight of this rank's mean loss in the global batch's mean (1 alone)."""
        return self.rows / self.size


def check_data_parallel(module: KynModule, batch: int, ranks: int,
                        n_train: int | None = None) -> None:
    """What a data-parallel job of `ranks` ranks cannot train, as errors on every rank:
    DP-002 unless the ranks divide the batch of `batch` rows (train.batch, capped at the
    `n_train` training rows), KYN-C07 for a batchnorm layer (each rank would normalize
    with the statistics of its share, not the global batch's: there is no synchronized
    batch norm in a step compiled as one function)."""
    if ranks == 1:
        return
    diags = []
    if batch % ranks:
        capped = (f" (train.batch {module.train.batch}, capped at the {n_train} training "
                  "rows)" if n_train is not None and module.train.batch > n_train else "")
        diags.append(KynDiagnostic.at(
            "DP-002", "codegen", f"[train] --data-parallel on {ranks} ranks: expected a "
            f"batch divisible by the {ranks} ranks (each rank takes an equal, contiguous "
            f"share of every batch), found {batch} rows{capped} ({batch} = "
            f"{batch // ranks} x {ranks} + {batch % ranks})",
            module.source_path, train_key_loc(module, "batch")))
    for layer in module.model.layers:
        if layer.kind == "batchnorm":
            diags.append(KynDiagnostic.at(
                "KYN-C07", "codegen", f"[model {module.model.name}] batchnorm under "
                f"--data-parallel on {ranks} ranks: each rank would normalize with the "
                "statistics of its share of the batch, not the global batch's (there is "
                "no synchronized batch norm); train it in one process",
                module.source_path, layer.loc))
    if diags:
        raise KynCodegenError(diags)


@dataclass
class StepFunctions:
    """The frame functions of a run: a training function per global batch size
    (`@<M>_train` for train.batch, `@<M>_train_b<B>` for the last, smaller batch), the
    evaluation function and the optimizer's update."""

    trains: dict[int, BuiltKyn]
    eval: BuiltKyn
    update: func.FuncOp

    def module(self) -> builtin.ModuleOp:
        return builtin.ModuleOp([*(b.fn for b in self.trains.values()), self.eval.fn,
                                 self.update])


def step_functions(module: KynModule, batch_sizes: list[int], eval_rows: int,
                   opt: OptimizerRuntime, *, rank: int = 0, ranks: int = 1
                   ) -> StepFunctions:
    """Build the functions `frame-kyn train` compiles (and `--emit-stage` prints).

    `batch_sizes` are global batch sizes (train.batch first). In a data-parallel job of
    `ranks` ranks, each training function is rank `rank`'s: built for its share of the
    rows (`rank_share`), its loss weighted by share / size (`build_train_function`); a
    size of which the rank holds no row (a last batch smaller than the rank count) has
    none. `trains` is keyed by the global size."""
    trains = {}
    for i, size in enumerate(batch_sizes):
        lo, hi = rank_share(size, rank, ranks)
        if hi == lo:
            continue
        built = build_train_function(module, hi - lo, (hi - lo) / size)
        if i:
            built.fn.sym_name = builtin.StringAttr(f"{built.fn.sym_name.data}_b{size}")
        trains[size] = built
    shapes = [(p.name, p.shape) for p in param_decls(module) if p.trainable]
    update = opt.build(f"{symbol(module.model.name)}_{module.train.optimizer.name}", shapes)
    return StepFunctions(trains, build_eval_function(module, eval_rows), update)


def _write_outputs_into(fn: BoundFunction, views: dict[int, np.ndarray]) -> None:
    """Make result `i` of `fn` write into `views[i]` (before `fn.bind`)."""
    for i, view in views.items():
        own = fn.outputs[i]
        if own.shape != view.shape or own.dtype != view.dtype:
            raise AssertionError(f"{fn.sig.name}: result {i} is {own.dtype}{own.shape}, "
                                 f"its buffer {view.dtype}{view.shape}")
        fn.outputs[i] = view


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


class KynTrainer(TrainerState):
    """A compiled training run of `module` for `n_train` training and `n_test` held-out
    rows. Parameters live in `self.params` (name -> float32 array, updated in place).

    With `job` (a data-parallel job of N ranks, `frame_mlir.runtime.distributed`) this
    is one rank of the run: it compiles its share of every batch (`rank_share`), and a
    step sums the ranks' gradients and losses with one allreduce before each rank
    applies the same update, so the parameters stay identical on every rank and follow
    the single-process run up to the order of the float32 sums."""

    def __init__(self, module: KynModule, n_train: int, n_test: int, *,
                 seed: int | None = None, options: Any = None, cache: Any = ENV_CACHE,
                 after_pass: Callable[..., None] | None = None, target: str = "cpu",
                 job: Job | None = None):
        check_supported(module)
        self.module = module
        self.target = target  # "cpu", or "cuda" / "cuda-emulator": the steps' kernels
        self.job = job
        self.rank, self.ranks = (job.rank, job.size) if job is not None else (0, 1)
        t = module.train
        self.seed = (t.seed if t.seed is not None else 0) if seed is None else seed
        self.batch = min(t.batch, n_train)
        # what validate could not know without the data (KYN-H06, the steps maximum)
        raise_if_errors(check_rows(module, n_train, n_train + n_test))
        check_data_parallel(module, self.batch, self.ranks, n_train)
        self.n_train, self.n_test = n_train, n_test
        self.steps_per_epoch = -(-n_train // self.batch)
        self.rem = n_train % self.batch
        #: each global batch size of an epoch (train.batch, then the last smaller one)
        #: -> this rank's rows of such a batch
        self.shares = {g: BatchShare(g, *rank_share(g, self.rank, self.ranks))
                       for g in [self.batch] + ([self.rem] if self.rem else [])}
        self.schedule, self.opt = optimizer_runtime(module, self.steps_per_epoch)
        self.decls = param_decls(module)
        self.params = initial_params(module, self.seed)
        self.trainable = [p.name for p in self.decls if p.trainable]
        self.bn_layers = [j for j, layer in enumerate(module.model.layers[1:])
                          if layer.kind == "batchnorm"]
        #: (layer j, mask width, rate) of each dropout layer, in argument order
        self.dropouts = [(j, layer.in_features, layer.rate)
                         for j, layer in enumerate(module.model.layers[1:])
                         if layer.kind == "dropout" and layer.rate > 0]
        self.num_batches_tracked = dict.fromkeys(self.bn_layers, 0)
        self.rng = np.random.Generator(np.random.PCG64(self.seed))
        start = time.perf_counter()
        self._compile(options, cache, after_pass)
        self.compile_seconds = time.perf_counter() - start

    # -- compilation -------------------------------------------------------------------
    def _compile(self, options: Any, cache: Any, after_pass: Any) -> None:
        from frame_mlir import timing

        with timing.compile_session():
            self._compile_step(options, cache, after_pass)

    def _compile_step(self, options: Any, cache: Any, after_pass: Any) -> None:
        from frame_mlir import timing

        m = self.module
        with timing.section("frontend"):
            fns = step_functions(m, list(self.shares), max(self.n_test, 1), self.opt,
                                 rank=self.rank, ranks=self.ranks)
        # "cuda": the same functions as CUDA kernels, behind the Executable interface
        ex = compile_step_module(fns.module(), target=self.target, options=options,
                                 after_pass=after_pass, cache=cache)
        self._ex = ex  # the JIT module owns the code the bound functions call
        self.eval_built = fns.eval
        n_in = m.model.input_size
        classify = m.task == "classification"
        ydt = np.int32 if classify else np.float32
        # Every training function writes its gradients and loss into the same flat
        # buffer (one allreduce per step in a job), and the one update function reads
        # the gradients from it, whichever batch size the step had (the loss rides in
        # the last segment).
        self.flat, views = flat_buffer([*(self.params[n].shape for n in self.trainable), ()])
        self.grads, self.loss = views[:-1], views[-1]
        #: global batch size -> this rank's staging buffers (x, y, dropout masks)
        self.stage: dict[int, tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]] = {}
        #: the optimizer's state buffers, hyperparameters and step count
        self.optimizer = OptimizerState(
            self.opt.states, {n: self.params[n].shape for n in self.trainable},
            len(self.opt.hyper_names))
        self.grad_fns: dict[int, BoundFunction] = {}
        for g, built in fns.trains.items():
            b = self.shares[g].rows
            x = np.zeros((b, n_in), np.float32)
            y = np.zeros((b,) if classify else (b, 1), ydt)
            masks = {a[1]: np.ones((b, m.model.layers[a[1] + 1].in_features), np.float32)
                     for a in built.args if a[0] == "mask"}
            self.stage[g] = (x, y, masks)
            grad = BoundFunction(ex, ex.signatures[f"{built.fn.sym_name.data}_grad"])
            first = 1 + len(built.stats)  # results: loss, running stats, gradients
            _write_outputs_into(grad, {0: self.loss, **{first + k: v for k, v in
                                                         enumerate(self.grads)}})
            grad.bind([x if a[0] == "x" else y if a[0] == "y" else masks[a[1]]
                       if a[0] == "mask" else self.params[a[1]] for a in built.args])
            self.grad_fns[g] = grad
        self.update_fn = BoundFunction(ex, ex.signatures[fns.update.sym_name.data])
        self.update_fn.bind(self.optimizer.update_args(self.params, self.grads))
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
        """One optimizer step on the (global) batch (x, y) at `lr` (default: the
        optimizer's); returns the batch loss before the update. In a job, every rank
        passes the same batch and trains its share of it."""
        share = self.shares.get(len(x))
        if share is None:
            raise ValueError(f"step: batch of {len(x)} rows; this run is compiled for "
                             f"{sorted(self.shares)}")
        if share.rows:
            sx, sy, _ = self.stage[share.size]
            np.copyto(sx, x[share.lo:share.hi])
            np.copyto(sy, y[share.lo:share.hi], casting="unsafe")
        return self._step(share.size, lr, momentum)

    def _step(self, size: int, lr: float | None, momentum: float | None) -> float:
        """The step of a global batch of `size` rows whose share is staged."""
        share = self.shares[size]
        masks = self.stage[size][2] if share.rows else {}
        for j, width, p in self.dropouts:
            # every rank draws the global batch's mask, the single process's draw, and
            # keeps its rows of it, so the ranks' streams stay in step
            draw = self.rng.random((size, width), dtype=np.float32)
            if share.rows:
                keep = draw[share.lo:share.hi] >= p
                np.multiply(keep, np.float32(1.0 / (1.0 - p)), out=masks[j])
        self.optimizer.t += 1
        lr = float(self.module.train.optimizer.args["lr"]) if lr is None else lr
        self.optimizer.set_hyper(self.opt.hyper(self.t, lr, momentum))
        if share.rows:
            self.grad_fns[size].run()
        else:  # none of this batch's rows (a last batch smaller than the rank count)
            self.flat.fill(0.0)
        if self.job is not None:  # the losses and gradients summed: the global batch's
            self.job.allreduce_sum(self.flat, f"the gradient allreduce of step {self.t}")
        self.update_fn.run()
        for j in self.bn_layers:
            self.num_batches_tracked[j] += 1
        return float(self.loss)

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        """(outputs, mean loss) of the inference graph on the held-out rows (every rank
        of a job evaluates all of them, with the same parameters: the same results)."""
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

    # -- checkpoints -------------------------------------------------------------------
    def checkpoint(self, run_id: str, report: TrainReport, best: float,
                   since_best: int) -> Checkpoint:
        """Everything the rest of the run depends on after `report.epochs_run` epochs:
        parameters and buffers, optimizer state and step, the dropout stream, the
        early-stopping state, and what was printed (so a resumed run prints it again)."""
        from frame_mlir.runtime.checkpoint import Checkpoint

        history = {"epoch_losses": list(report.epoch_losses),
                   "heldout_losses": list(report.heldout_losses),
                   "steps": report.steps, "stopped_early": report.stopped_early,
                   "checkpoints": list(report.checkpoints),
                   "best": None if math.isinf(best) else best, "since_best": since_best,
                   "optimizer_step": self.t,
                   "momentum_buffer_from": self.opt.momentum_buffer_from,
                   "rng": self.rng.bit_generator.state}
        return Checkpoint(self.module.model.name, run_id, report.epochs_run,
                          self.state_dict(), self.optimizer.arrays(), history)

    def restore(self, ck: Checkpoint, path: str) -> tuple[TrainReport, float, int]:
        """Continue from `ck` (read from `path`): (the report so far, the best held-out
        loss, epochs since it). CKPT-001 when it does not fit this run."""
        from frame_mlir.runtime.checkpoint import CheckpointError, check_arrays

        expected = {p.name: p.shape for p in self.decls}
        expected.update({f"layers.{j}.num_batches_tracked": () for j in self.bn_layers})
        check_arrays(path, "param", ck.params, expected)
        self.optimizer.check(path, ck.state)
        h = ck.history
        try:
            report = TrainReport(
                epoch_losses=[float(v) for v in h["epoch_losses"]],
                heldout_losses=[float(v) for v in h["heldout_losses"]],
                epochs_run=ck.step, steps=int(h["steps"]),
                stopped_early=bool(h["stopped_early"]),
                checkpoints=[str(p) for p in h["checkpoints"]])
            best = math.inf if h["best"] is None else float(h["best"])
            since_best, t = int(h["since_best"]), int(h["optimizer_step"])
            mbf = h["momentum_buffer_from"]
            rng = np.random.Generator(np.random.PCG64())
            rng.bit_generator.state = h["rng"]
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError("CKPT-001", path, "the history of a .kyn run",
                                  f"an unreadable one ({type(e).__name__}: {e})") from None
        if len(report.epoch_losses) != ck.step or ck.step > self.module.train.epochs:
            raise CheckpointError("CKPT-001", path, f"the losses of its {ck.step} epochs",
                                  f"{len(report.epoch_losses)} losses")
        self.set_params(ck.params)
        self.optimizer.load(ck.state)
        self.t = t
        self.opt.momentum_buffer_from = None if mbf is None else int(mbf)
        self.rng = rng
        return report, best, since_best

    def save_checkpoint(self, out_dir: str | Path, epoch: int) -> str:
        """Parameters, buffers and optimizer state after `epoch`, written atomically to
        `<out_dir>/<checkpoint dir>/<model>_epoch<k>.npz` (the program's
        `checkpoint(every_n=N)`, in KynML's layout)."""
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

    # -- the whole run -----------------------------------------------------------------
    def fit(self, data: dict[str, Any], *, progress: Callable[..., Any] | None = None,
            on_epoch: Callable[[int, float, float | None], None] | None = None,
            out_dir: str | Path = ".", resume: tuple[Checkpoint, str] | None = None,
            every: int | None = None,
            on_checkpoint: Callable[[Checkpoint], None] | None = None,
            run_id: str = "", on_diverge: Callable[[str], None] | None = None
            ) -> TrainReport:
        """Train for `train.epochs` epochs (fewer with early_stop) on `data` (the CSV
        loader's dict), then evaluate; `progress(epoch, total_batches)` returns a
        per-batch callback (a progress bar), `on_epoch(epoch, loss, heldout)` is called
        after each epoch.

        `resume` (a checkpoint and its path) continues that run: `on_epoch` is called
        again for the epochs it holds, then training goes on from there exactly as the
        uninterrupted run would. `on_checkpoint` receives a checkpoint (named `run_id`)
        after every `every`-th epoch. In a job, only rank 0 writes files (the
        program's checkpoints; `on_checkpoint` is called on rank 0 only).

        `on_diverge(what)` is called once, for the first loss (a step's), held-out loss
        or metric that is not finite: `what` says which, where and at which learning
        rate (`the loss first became nan at epoch 1, step 3 of 14 (lr 1e+30 may be too
        large)`); the run goes on, as PyTorch's would."""
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
        root = self.rank == 0
        shuffle = m.dataset.shuffle
        have_test = len(xte) > 0
        watch = DivergenceWatch(on_diverge)

        def at_lr(lr: float) -> str:
            return f" (lr {lr:g} may be too large)"

        if resume is not None:
            report, best, since_best = self.restore(*resume)
            for e, loss in enumerate(report.epoch_losses):
                if on_epoch is not None:
                    on_epoch(e, loss, report.heldout_losses[e] if have_test else None)
                for name, v in (("loss", loss), ("held-out loss", report.heldout_losses[e]
                                                 if have_test else 0.0)):
                    watch.check(v, lambda v, name=name, e=e:
                                f"the {name} first became {v:.9g} in epoch {e + 1}")
        else:
            report, best, since_best = TrainReport(), math.inf, 0
        report.compile_seconds = self.compile_seconds
        start = time.perf_counter()
        for epoch in range(report.epochs_run, t.epochs):
            if report.stopped_early:  # a checkpoint of the epoch that stopped the run
                break
            order = np.asarray(epoch_order(self.n_train, shuffle, self.seed, epoch), np.intp)
            tick = progress(epoch, self.steps_per_epoch) if progress else None
            total = 0.0
            for k in range(self.steps_per_epoch):
                idx = order[k * self.batch:(k + 1) * self.batch]
                share = self.shares[len(idx)]
                if share.rows:
                    sx, sy, _ = self.stage[share.size]
                    rows = idx[share.lo:share.hi]
                    np.take(xtr, rows, axis=0, out=sx)
                    np.take(ytr, rows, axis=0, out=sy)
                lr, mom = self.schedule.lr_momentum(epoch, k)
                step_loss = self._step(share.size, lr, mom)
                if not watch.seen:
                    watch.check(step_loss, lambda v, e=epoch, k=k, lr=lr: (
                        f"the loss first became {v:.9g} at epoch {e + 1}, step "
                        f"{k + 1} of {self.steps_per_epoch}" + at_lr(lr)))
                total += step_loss * share.size
                if tick is not None:
                    tick()
            report.steps += self.steps_per_epoch
            loss = total / self.n_train
            report.epoch_losses.append(loss)
            held = None
            if have_test:
                held = self.evaluate(xte, yte)[1]
                report.heldout_losses.append(held)
                watch.check(held, lambda v, e=epoch, lr=lr: "the held-out loss first "
                            f"became {v:.9g} after epoch {e + 1}" + at_lr(lr))
            report.epochs_run = epoch + 1
            if on_epoch is not None:
                on_epoch(epoch, loss, held)
            if t.checkpoint and (epoch + 1) % t.checkpoint == 0 and root:
                report.checkpoints.append(self.save_checkpoint(out_dir, epoch + 1))
            if t.early_stop is not None and held is not None:
                if held < best - t.early_stop_min_delta:
                    best, since_best = held, 0
                else:
                    since_best += 1
                    report.stopped_early = since_best >= t.early_stop
                if self.job is not None:  # one decision for the whole job: rank 0's
                    report.stopped_early = self.job.bcast(
                        report.stopped_early, f"the early-stopping decision of epoch "
                        f"{epoch + 1}")
            if every is not None and (epoch + 1) % every == 0 and root \
                    and on_checkpoint is not None:
                on_checkpoint(self.checkpoint(run_id, report, best, since_best))
        report.train_seconds = time.perf_counter() - start
        if have_test:
            outputs, _ = self.evaluate(xte, yte)
            report.metrics = compute_metrics(m, outputs, yte)
            for name, v in report.metrics.items():
                if watch.check(v, lambda v, name=name: f"the metric {name} is {v:.9g}"):
                    break
        return report
