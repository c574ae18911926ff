"""`frame-run net.json --data SOURCE --epochs N ...`: train a JSON network on real data.

One line per epoch on stdout -- `epoch N loss V` (the mean over the epoch's batches of
the network's weighted loss, before each step's update), plus ` accuracy A` on the
held-out split when a SoftmaxWithLoss / NLLLoss operator pairs scores with a label
input -- then `final_loss V`. Notes (dropped samples) and the closing summary go to
stderr; a tqdm bar shows on a terminal only.

`--data-parallel` (under `mpirun -n N`) trains each global batch split over the ranks
(`frame_mlir/frontends/network/data_parallel.py`); rank 0 prints one process's lines.
`--checkpoint-every N` writes the parameters, the solver state and the lines printed so
far every N epochs (rank 0 alone, atomically); `--resume FILE` continues such a run
and prints the whole run's lines, ending with the uninterrupted run's weights, bit for
bit, on the same rank count (or without --data-parallel, as it was written).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import math
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    # numpy (~60 ms) only where arrays are: frame-run's and frame-dslc's parsers are
    # built from this module (--help, usage errors, --check).
    import numpy as np

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.network.data import DataSource
    from frame_mlir.frontends.network.loader import NetworkSpec
    from frame_mlir.frontends.network.model import SGD, Adam, Network
    from frame_mlir.runtime.checkpoint import Checkpoint

#: The reference's solver defaults (dlprimitives' sgd.hpp / adam.hpp).
SOLVER_DEFAULTS = {"sgd": {"lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4},
                   "adam": {"lr": 1e-3, "weight_decay": 5e-4}}

#: The options for networks only (argparse destinations). `--data`, `--lr`,
#: `--load-weights` (`--weights`), `--save-weights` and `--plot` are shared with v0
#: specs (`driver.add_training_arguments`).
NETWORK_FLAGS = ("epochs", "solver", "momentum", "weight_decay", "schedule", "seed",
                 "semantics")

#: The weights formats a network reads and writes (frontends/network/weights.py).
NETWORK_WEIGHT_SUFFIXES = (".dlp", ".h5", ".hdf5", ".npz")

#: `--benchmark`'s untimed and timed iterations, the reference benchmark's (network_bench.py).
DEFAULT_WARMUP, DEFAULT_STEPS = 5, 20


def add_network_arguments(p: argparse.ArgumentParser) -> None:
    """frame-run's options for network files only."""
    g = p.add_argument_group("JSON network files (dlprimitives format)")
    g.add_argument("--epochs", type=_positive_int, default=None, metavar="N",
                   help="passes over the training data (default 1)")
    add_solver_arguments(g, "seed of the initial parameters, the shuffle and the digits "
                         "split (default 0)")
    add_benchmark_arguments(g)


def add_benchmark_arguments(g: argparse._ArgumentGroup) -> None:
    """`--benchmark` and `--warmup` (into frame-run's group of network options)."""
    g.add_argument("--benchmark", action="store_const", const=True, default=None,
                   help="time the training step (forward, backward, the solver's update) "
                   "and the test-mode forward on a random batch of the declared shapes: "
                   f"--warmup (default {DEFAULT_WARMUP}) untimed, then --steps (default "
                   f"{DEFAULT_STEPS}) timed iterations; prints `train ms/batch` and "
                   "`test ms/batch` with images/s")
    g.add_argument("--warmup", metavar="N", default=None,
                   help=f"with --benchmark: untimed iterations first (default {DEFAULT_WARMUP})")


def add_solver_arguments(g: argparse._ArgumentGroup, seed_help: str) -> None:
    """The solver, its options, the schedule and the seed: frame-run's for a network's
    training, and frame-dslc's for the program `--emit NET.json` writes."""
    g.add_argument("--solver", choices=("sgd", "adam"), default=None)
    g.add_argument("--momentum", type=nonneg_float, default=None,
                   help="sgd momentum (default 0.9)")
    g.add_argument("--weight-decay", type=nonneg_float, default=None,
                   help="weight decay (default 0.0005)")
    g.add_argument("--semantics", choices=("dlprim", "torch"), default=None,
                   help="sgd weight decay convention: dlprim's (default; p *= 1 - wd) or "
                   "torch.optim.SGD's (g += wd * p)")
    g.add_argument("--schedule", type=_schedule, default=None, metavar="SCHEDULE",
                   help="learning-rate schedule: 'step:EPOCHS:GAMMA' (lr * GAMMA every "
                   "EPOCHS epochs) or 'cosine' (cosine decay to 0 over the run's steps)")
    g.add_argument("--seed", type=_seed, default=None, help=seed_help)


#: The most epochs of a run: what the program `frame-dslc --emit` writes takes as well.
MAX_EPOCHS = 2**31 - 1
#: The largest finite float32: the solvers' hyperparameters are float32 in the update.
F32_MAX = 3.4028234663852886e38
#: What `--lr`, `--momentum` and `--weight-decay` take (0 freezes the parameters).
RATE_RANGE = f"a number in [0, {F32_MAX!r}] (finite in float32)"


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer in [1, {MAX_EPOCHS}], found "
                                         f"'{text}'") from None
    if not 1 <= v <= MAX_EPOCHS:
        raise argparse.ArgumentTypeError(f"expected an integer in [1, {MAX_EPOCHS}], found "
                                         f"{v}")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, found '{text}'") from None
    if not 0 <= v < 2**63:
        raise argparse.ArgumentTypeError(f"expected a seed in [0, 2^63), found {v}")
    return v


def nonneg_float(text: str) -> float:
    """argparse type of a network's `--lr`, `--momentum`, `--weight-decay`: a number in
    [0, F32_MAX], as a v0 spec's learning rate (its update runs in float32 too)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found '{text}'") from None
    if not 0 <= v <= F32_MAX:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected {RATE_RANGE}, found {text}")
    return v


def _schedule(text: str) -> tuple[str, int, float]:
    if text == "cosine":
        return ("cosine", 0, 0.0)
    parts = text.split(":")
    if len(parts) == 3 and parts[0] == "step":
        try:
            every, gamma = int(parts[1]), float(parts[2])
        except ValueError:
            every, gamma = 0, -1.0
        if 1 <= every <= MAX_EPOCHS and 0 < gamma <= F32_MAX:
            return ("step", every, gamma)
    raise argparse.ArgumentTypeError(f"expected 'step:EPOCHS:GAMMA' (EPOCHS >= 1, GAMMA > 0 "
                                     f"and finite in float32) or 'cosine', found '{text}'")


def network_flags_given(args: argparse.Namespace) -> list[str]:
    """The network-only options present on the command line."""
    from frame_mlir.tools.driver import flags_given

    return flags_given(args, NETWORK_FLAGS)


def scheduled_lr(base: float, schedule: tuple[str, int, float] | None, epoch: int,
                 step: int, total_steps: int) -> float:
    """The learning rate of global step `step` (0-based) in `epoch` (0-based)."""
    if schedule is None:
        return base
    kind, every, gamma = schedule
    if kind == "step":
        return base * gamma ** (epoch // every)
    return base * 0.5 * (1.0 + math.cos(math.pi * step / max(total_steps, 1)))


def network_solver(args: argparse.Namespace) -> SGD | Adam:
    """The solver the command line asks for: `--solver` (sgd), with `--lr`,
    `--momentum`, `--weight-decay`, `--semantics` over the reference's defaults."""
    from frame_mlir.frontends.network.model import SGD, Adam

    kind = args.solver or "sgd"
    if kind == "adam" and (args.momentum is not None or args.semantics is not None):
        raise ValueError("--momentum and --semantics apply to --solver sgd only")
    d = SOLVER_DEFAULTS[kind]
    lr = d["lr"] if args.lr is None else args.lr
    wd = d["weight_decay"] if args.weight_decay is None else args.weight_decay
    if kind == "sgd":
        return SGD(lr, d["momentum"] if args.momentum is None else args.momentum, wd,
                   args.semantics or "dlprim")
    return Adam(lr, weight_decay=wd)


def _accuracy_pair(spec: NetworkSpec) -> tuple[str, str] | None:
    """(scores value, label input) of the first SoftmaxWithLoss / NLLLoss whose labels
    are a network input: argmax of the scores against the labels is the accuracy."""
    inputs = {i.name for i in spec.inputs if i.dtype == "int"}
    for op in spec.operators:
        if op.type in ("SoftmaxWithLoss", "NLLLoss") and op.inputs[1] in inputs:
            return op.inputs[0], op.inputs[1]
    return None


def run_network(spec: NetworkSpec, args: argparse.Namespace, out: TextIO, *,
                options: CompileOptions | None, print_ir_after_all: bool = False,
                use_cache: bool = True, target: str = "cpu") -> int:
    """Train `spec` as the command line says; returns the exit status. `target` "cuda"
    (or "cuda-emulator") runs every step's kernels on the GPU.

    In a data-parallel job (`--data-parallel`: `distributed.current()` is the job) every
    rank trains its share of each global batch (`frame_mlir/frontends/network/data_parallel.py`)
    and rank 0 prints the lines one process prints. `--checkpoint-every N` writes a
    checkpoint every N epochs (rank 0 alone); `--resume FILE` continues one, printing
    the lines before it from the checkpoint, and ends as the uninterrupted run does."""
    import numpy as np

    from frame_mlir.frontends.network.data import InputDecl, batches, load_source
    from frame_mlir.frontends.network.loader import OutputSpec
    from frame_mlir.frontends.network.model import Network
    from frame_mlir.runtime import distributed
    from frame_mlir.runtime.checkpoint import digest
    from frame_mlir.runtime.progress import progress, summary_line
    from frame_mlir.tools.dp_run import checkpoint_path
    from frame_mlir.tools.driver import check_input_path, check_output_path, format_loss

    if args.data is None:
        raise ValueError("a network needs training data: --data FILE.npz or --data digits")
    if not spec.losses:
        raise ValueError(f"{spec.source}: the network has no loss output (an output whose "
                         "name starts with 'loss', or one given with a loss_weight): there "
                         "is nothing to train")
    solver = network_solver(args)  # first: a bad flag costs no data loading
    solver_kind = solver.kind
    job = distributed.current()
    root = job is None or job.rank == 0
    every: int | None = getattr(args, "checkpoint_every", None)
    resume: str | None = getattr(args, "resume", None)
    ckpt_file = checkpoint_path(args, spec.name) if hasattr(args, "checkpoint") else None
    if args.save_weights:  # before the run, not after it
        check_output_path(args.save_weights, "--save-weights", NETWORK_WEIGHT_SUFFIXES)
    if args.load_weights:  # IO-001 for a missing file, a device, FIFO or directory
        check_input_path(args.load_weights, "--load-weights")
    if args.plot:
        from frame_mlir.tools.plot import require_matplotlib

        require_matplotlib()
        check_output_path(args.plot, "--plot")
    t_start = time.perf_counter()
    seed = 0 if args.seed is None else args.seed
    decls = [InputDecl(i.name, i.shape, i.dtype) for i in spec.inputs]
    data = load_source(args.data, decls, seed=seed)
    declared = spec  # the network as written: what a checkpoint's digest covers
    pair = _accuracy_pair(spec)
    if pair is not None and not any(o.value == pair[0] for o in spec.outputs):
        # the scores become one more output, so the test graph returns them
        spec = dataclasses.replace(spec, outputs=(
            *spec.outputs, OutputSpec(pair[0], pair[0], None)))
    lr0 = solver.lr
    epochs = args.epochs or 1
    run_id = ""
    if job is not None or ckpt_file is not None or resume is not None:
        run_id = digest(network_run_digest(declared, args, data, solver, epochs, seed))
    local = spec
    reductions: dict[str, str] = {}
    if job is not None:
        from frame_mlir.frontends.network.data_parallel import (
            batch_norm_operators,
            local_network_spec,
            loss_reductions,
        )

        # every rank must run the same job (DP-003), checked before anything is compiled
        job.check_same("network and options", {
            "run": run_id, "epochs": epochs, "resume": resume, "checkpoint": ckpt_file,
            "every": every, "save_weights": args.save_weights})
        reductions = loss_reductions(spec)
        local = local_network_spec(spec, job.size, reductions)
        # The network's step is split on the host (gradient function, allreduce, update
        # function); frame-dp-split splits fused train steps, which networks do not use.
        options = dataclasses.replace(job.compile_options(options), data_parallel=None)
        bn = batch_norm_operators(spec)
        if bn and job.size > 1 and root:
            sys.stderr.write(
                f"frame-run: note: --data-parallel: BatchNorm ({', '.join(bn)}) normalises "
                f"with each rank's local batch of {local.inputs[0].shape[0]} samples, not "
                f"the global batch of {spec.inputs[0].shape[0]} (no synchronised batch "
                "statistics), so training differs from one process; the running "
                "statistics are averaged over the ranks every step\n")
    net: Network = Network(local, seed=seed, options=options, target=target,
                           **({} if use_cache else {"cache": None}))
    if print_ir_after_all:
        from frame_mlir.tools.driver import print_ir_after_all_hook

        net.after_pass = print_ir_after_all_hook(sys.stderr)
    if args.load_weights:
        load_network_weights(net, args.load_weights)
    resumed = None
    if resume is not None:  # a bad checkpoint fails before anything is compiled
        resumed = _load_checkpoint(resume, spec.name, run_id, net, solver_kind, epochs)
    weights = {o.name: o.loss_weight for o in spec.losses}
    t0 = time.perf_counter()
    trainer: Any
    if job is not None:
        from frame_mlir.frontends.network.data_parallel import DpTrainer, dp_accuracy, rank_feed

        trainer = DpTrainer(net, solver, job, reductions, weights)
        step_loss = trainer.step
    else:
        # frame-run warns about a non-finite loss itself, in its own format
        trainer = net.trainer(solver, warn_divergence=False)

        def step_loss(feed: dict[str, np.ndarray]) -> float:
            # the objective: sum of weight x the sum of each loss's elements
            return net.objective(trainer.step(feed))
    net.compile(test_mode=data.held_out is not None and pair is not None)
    compile_seconds = time.perf_counter() - t0
    per_epoch = data.train.samples // spec.inputs[0].shape[0]
    total_steps = epochs * per_epoch
    dropped = data.train.samples - per_epoch * spec.inputs[0].shape[0]
    if dropped and root:
        sys.stderr.write(f"frame-run: note: {dropped} of {data.train.samples} training "
                         "samples form no full batch and are dropped each epoch\n")
    history: list[dict[str, Any]] = []
    step = 0
    first_epoch = 0
    final = float("nan")
    if resumed is not None:
        first_epoch, history, step, final = _restore(resumed, net, trainer)
    if job is not None:  # every rank compiled and set up: the steps start together
        job.barrier("the start of training (every rank compiling its network)")
    for entry in history:  # the lines of the epochs before the checkpoint
        out.write(_epoch_line(entry))
    out.flush()
    start_step = step
    quiet = io.StringIO()  # the other ranks draw no progress bar
    t_train = time.perf_counter()
    for epoch in range(first_epoch, epochs):
        feeds, _ = batches(data.train, decls, shuffle=True, seed=seed, epoch=epoch)
        losses = []
        with progress(per_epoch, f"epoch {epoch + 1}/{epochs}",
                      None if root else quiet) as bar:
            for feed in feeds:
                if job is not None:  # this rank's rows of the global batch
                    feed = rank_feed(feed, job.rank, job.size)
                solver.lr = scheduled_lr(lr0, args.schedule, epoch, step, total_steps)
                loss = step_loss(feed)
                losses.append(loss)
                step += 1
                bar.set_postfix(loss=loss)
                bar()
        final = losses[-1]
        mean = float(np.mean(losses))
        acc = None
        if data.held_out is not None and pair is not None:
            acc = (_accuracy(net, data.held_out, decls, pair) if job is None else
                   dp_accuracy(net, data.held_out, decls, pair, job))
        entry = {"epoch": epoch + 1, "loss": mean, "accuracy": acc}
        out.write(_epoch_line(entry))
        out.flush()
        history.append(entry)
        if every is not None and (epoch + 1) % every == 0 and root:
            assert ckpt_file is not None
            _save_checkpoint(ckpt_file, spec.name, run_id, epoch + 1, net, trainer,
                             history, step, final)
    train_seconds = time.perf_counter() - t_train
    out.write(f"final_loss {format_loss(final)}\n")
    if job is not None and os.environ.get("FRAME_DP_PROFILE") == "1":
        sys.stderr.write(trainer.profile_line(step - start_step))
    if not root:  # rank 0 writes the files and the summary (the ranks' weights agree)
        return 0
    if args.save_weights:
        save_network_weights(net, args.save_weights)
    if args.plot:
        from frame_mlir.tools.plot import plot_curves

        plot_curves(args.plot, history)
    sys.stderr.write(summary_line("frame-run", spec.name, compile_seconds, step - start_step,
                                  train_seconds, time.perf_counter() - t_start))
    if not math.isfinite(final):
        sys.stderr.write("frame-run: warning: training diverged: the last loss is "
                         f"{format_loss(final)} (the learning rate may be too large)\n")
    return 0


def load_network_weights(net: Network, path: str) -> None:
    """`--load-weights FILE` for a network, with a v0 spec's rules: IO-001 when the file
    cannot be read, WEIGHTS-001 at FILE for a file that is not a weights file, and at
    FILE:PARAMETER for a missing, mis-shaped or unknown tensor, all at once.

    Raises:
        OptionError: every diagnostic.
    """
    from frame_mlir.frontends.common.errors import Diagnostic
    from frame_mlir.frontends.network.weights import WeightsError, load_weights
    from frame_mlir.tools.driver import OptionError, _names_text, _readable, _shape_text

    bad = _readable(path, "--load-weights")
    if bad is not None:
        raise OptionError([bad])
    try:
        tensors = load_weights(path)
    except WeightsError as e:
        raise OptionError([Diagnostic("WEIGHTS-001", path, "a weights file", p, p)
                           for p in e.problems]) from None
    names = [p.name for p in net.param_infos]
    problems = []
    for p in net.param_infos:
        where = f"{path}:{p.name}"
        if p.name not in tensors:
            problems.append(Diagnostic(
                "WEIGHTS-001", where, f"parameter '{p.name}' of shape {_shape_text(p.shape)}",
                f"no such tensor (the file holds {_names_text(list(tensors))})"))
        elif tensors[p.name].shape != p.shape:
            problems.append(Diagnostic(
                "WEIGHTS-001", where, f"shape {_shape_text(p.shape)} (parameter '{p.name}')",
                _shape_text(tensors[p.name].shape)))
    for name in tensors:
        if name not in names:
            problems.append(Diagnostic(
                "WEIGHTS-001", f"{path}:{name}", "only the network's parameters "
                f"{_names_text(names)}", "a tensor the network has no parameter for"))
    if problems:
        raise OptionError(problems)
    net.set_parameters(tensors)


def save_network_weights(net: Network, path: str) -> None:
    """`--save-weights FILE` for a network: IO-001 when it cannot be written, as for a
    v0 spec."""
    from frame_mlir.frontends.common.errors import Diagnostic
    from frame_mlir.frontends.network.weights import WeightsError
    from frame_mlir.tools.driver import OptionError

    try:
        net.save_weights(path)
    except WeightsError as e:
        raise OptionError([Diagnostic("IO-001", path, "a writable file", p, p)
                           for p in e.problems]) from None


def _epoch_line(entry: dict[str, Any]) -> str:
    """`epoch N loss V[ accuracy A]`, with its newline."""
    from frame_mlir.tools.driver import format_loss

    line = f"epoch {entry['epoch']} loss {format_loss(entry['loss'])}"
    if entry["accuracy"] is not None:
        line += f" accuracy {entry['accuracy']:.4f}"
    return line + "\n"


def network_run_digest(spec: NetworkSpec, args: argparse.Namespace, data: DataSource,
                       solver: SGD | Adam, epochs: int, seed: int) -> dict[str, Any]:
    """What makes two network runs the same run (a checkpoint's digest, and what the
    ranks of a job compare): the network, the data (a hash of its arrays, so the same
    data under another path is the same run), the seed, the solver and its options,
    the schedule, the initial weights (a hash of the file). Not the epoch count (a run
    may be resumed for more epochs) unless the schedule is cosine (the rate of every
    step depends on it); not the rank count or the threads (the parameters are the
    same, the rank count changes only their rounding)."""
    cosine = args.schedule is not None and args.schedule[0] == "cosine"
    weights = None
    if args.load_weights:
        from frame_mlir.fileio import open_regular

        try:
            with open_regular(args.load_weights) as f:
                weights = hashlib.sha256(f.read()).hexdigest()
        except OSError:  # loading the weights reports it, in its own words
            weights = args.load_weights
    return {"network": spec.doc or repr((spec.inputs, spec.outputs, spec.operators)),
            "name": spec.name, "data_sha256": _data_hash(data),
            "seed": seed, "solver": {"kind": solver.kind, **dataclasses.asdict(solver)},
            "schedule": None if args.schedule is None else list(args.schedule),
            "epochs": epochs if cosine else None, "load_weights_sha256": weights}


def _data_hash(data: DataSource) -> str:
    """sha256 of every array of the data source (names, dtypes, shapes and bytes)."""
    import numpy as np

    h = hashlib.sha256()
    for split_name, split in (("train", data.train), ("held_out", data.held_out)):
        if split is None:
            continue
        for name in sorted(split.arrays):
            a = np.ascontiguousarray(split.arrays[name])
            h.update(f"{split_name}/{name}:{a.dtype.str}:{a.shape}".encode())
            h.update(memoryview(a).cast("B"))
    return h.hexdigest()


def _load_checkpoint(path: str, model: str, run_id: str, net: Network, solver_kind: str,
                     epochs: int) -> Checkpoint:
    """`--resume path`: a checkpoint of this run (CKPT-002 otherwise) holding every
    parameter and solver state of this network, and its history (CKPT-001 otherwise)."""
    from frame_mlir.frontends.network.model import update_config
    from frame_mlir.optim import state_names
    from frame_mlir.runtime.checkpoint import CheckpointError, check_arrays
    from frame_mlir.runtime.training import OptimizerState, read_checkpoint

    ck = read_checkpoint(path, model, run_id)  # on every rank
    check_arrays(path, "param", ck.params, {p.name: p.shape for p in net.param_infos})
    shapes = {p.name: p.shape for p in net.param_infos}
    kinds = state_names(update_config(solver_kind))
    check_arrays(path, "state", ck.state, {OptimizerState.key(k, p): shapes[p]
                                           for k in kinds for p in net.trainable})
    h = ck.history
    entries = h.get("epochs")
    ok = (isinstance(entries, list) and len(entries) == ck.step
          and all(isinstance(e, dict) and e.get("epoch") == i + 1
                  and isinstance(e.get("loss"), float | int)
                  and (e.get("accuracy") is None or isinstance(e.get("accuracy"), float | int))
                  for i, e in enumerate(entries))
          and isinstance(h.get("steps"), int) and isinstance(h.get("final_loss"), float | int))
    if not ok:
        raise CheckpointError("CKPT-001", f"{path}:meta/history", f"the history of its "
                              f"{ck.step} epochs (losses, accuracies, steps)",
                              "a missing or malformed one")
    if ck.step > epochs:
        raise CheckpointError("CKPT-002", path, "a checkpoint of at most the run's "
                              f"--epochs {epochs}", f"one of {ck.step} epochs")
    return ck


def _restore(ck: Checkpoint, net: Network, trainer: Any
             ) -> tuple[int, list[dict[str, Any]], int, float]:
    """Put a checkpoint's parameters and solver state in place; (epochs done, their
    history, steps done, the last step's loss)."""
    net.set_parameters(ck.params)
    trainer.optimizer.load(ck.state)  # checked by _load_checkpoint
    steps = int(ck.history["steps"])
    trainer.t = steps  # Adam's bias corrections go on from the step reached
    history = [{"epoch": int(e["epoch"]), "loss": float(e["loss"]),
                "accuracy": None if e["accuracy"] is None else float(e["accuracy"])}
               for e in ck.history["epochs"]]
    return ck.step, history, steps, float(ck.history["final_loss"])


def _save_checkpoint(path: str, model: str, run_id: str, epochs_done: int, net: Network,
                     trainer: Any, history: list[dict[str, Any]], steps: int,
                     final: float) -> None:
    """Write the run's state after `epochs_done` epochs (atomically)."""
    from frame_mlir.runtime.checkpoint import Checkpoint

    Checkpoint(model, run_id, epochs_done, net.parameters(), trainer.optimizer.arrays(),
               history={"epochs": list(history), "steps": steps, "final_loss": final}
               ).save(path)


def _accuracy(net: Network, split: object, decls: list, pair: tuple[str, str]) -> float:
    """Held-out accuracy in test mode over the split's full batches (in order)."""
    from frame_mlir.frontends.network.data import batches

    scores_name, label_name = pair
    feeds, _ = batches(split, decls, shuffle=False, seed=0, epoch=0)  # type: ignore[arg-type]
    correct = total = 0
    for feed in feeds:
        outs = net.forward(feed, test_mode=True)
        scores = outs[scores_name]
        pred = scores.reshape(scores.shape[0], -1).argmax(axis=1)
        correct += int((pred == feed[label_name].reshape(-1)).sum())
        total += pred.size
    return correct / max(total, 1)


def emit_network_stage(spec: NetworkSpec, stage: str, out: TextIO, *,
                       print_ir_after_all: bool = False,
                       options: CompileOptions | None = None, target: str = "cpu",
                       arch: str = "sm_80") -> None:
    """`--emit-stage` for a network: its training function (and gradient), as for a v0
    spec (no SGD is fused: the solver's update is a function of its own); `target`
    "cuda" for the CUDA stages. In a data-parallel job: one rank's, at its share of the
    batch."""
    from xdsl.dialects import builtin

    from frame_mlir.frontends.network.lower import build_function
    from frame_mlir.runtime.distributed import current
    from frame_mlir.tools.stage_dump import emit_module_stage

    job = current()
    if job is not None:  # one rank's share of the batch, as --data-parallel compiles it
        from frame_mlir.frontends.network.data_parallel import local_network_spec, loss_reductions

        spec = local_network_spec(spec, job.size, loss_reductions(spec))
        options = job.compile_options(options)
    module = builtin.ModuleOp([build_function(spec, "train").fn])
    emit_module_stage(module, None, stage, out, print_ir_after_all=print_ir_after_all,
                      options=options, target=target, arch=arch)
