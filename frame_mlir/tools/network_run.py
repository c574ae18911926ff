"""`frame-run net.json --data SOURCE --epochs N ...`: train a JSON network on real data.

One line per epoch on stdout -- `epoch N loss V` (the mean over the epoch's batches of
the network's weighted loss, before each step's update), plus ` accuracy A` on the
held-out split when a SoftmaxWithLoss / NLLLoss operator pairs scores with a label
input -- then `final_loss V`. Notes (dropped samples) and the closing summary go to
stderr; a tqdm bar shows on a terminal only.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from typing import TYPE_CHECKING, TextIO

import numpy as np

if TYPE_CHECKING:
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontend.network.loader import NetworkSpec
    from frame_mlir.network.model import Network

#: The reference's solver defaults (dlprimitives' sgd.hpp / adam.hpp).
SOLVER_DEFAULTS = {"sgd": {"lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4},
                   "adam": {"lr": 1e-3, "weight_decay": 5e-4}}

#: The options for networks only (argparse destinations). `--data`, `--lr`,
#: `--load-weights` (`--weights`), `--save-weights` and `--plot` are shared with v0
#: specs (`driver.add_training_arguments`).
NETWORK_FLAGS = ("epochs", "solver", "momentum", "weight_decay", "schedule", "seed",
                 "semantics")

#: The weights formats a network reads and writes (frontend/network/weights.py).
NETWORK_WEIGHT_SUFFIXES = (".dlp", ".h5", ".hdf5", ".npz")


def add_network_arguments(p: argparse.ArgumentParser) -> None:
    """frame-run's options for network files only."""
    g = p.add_argument_group("JSON network files (dlprimitives format)")
    g.add_argument("--epochs", type=_positive_int, default=None, metavar="N",
                   help="passes over the training data (default 1)")
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
    g.add_argument("--seed", type=_seed, default=None,
                   help="seed of the initial parameters, the shuffle and the digits split "
                   "(default 0)")


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found '{text}'") \
            from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found {v}")
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
    """argparse type of a network's `--lr`, `--momentum`, `--weight-decay`."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found '{text}'") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, found {text}")
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
        if every >= 1 and math.isfinite(gamma) and gamma > 0:
            return ("step", every, gamma)
    raise argparse.ArgumentTypeError(f"expected 'step:EPOCHS:GAMMA' (EPOCHS >= 1, GAMMA > 0) "
                                     f"or 'cosine', found '{text}'")


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
    (or "cuda-emulator") runs every step's kernels on the GPU."""
    from frame_mlir.frontend.network.data import InputDecl, batches, load_source
    from frame_mlir.frontend.network.loader import OutputSpec
    from frame_mlir.network.model import SGD, Adam, Network
    from frame_mlir.tools.driver import check_output_path, format_loss
    from frame_mlir.tools.progress import progress, summary_line

    if args.data is None:
        raise ValueError("a network needs training data: --data FILE.npz or --data digits")
    if not spec.losses:
        raise ValueError(f"{spec.source}: the network has no loss output (an output whose "
                         "name starts with 'loss', or one given with a loss_weight): there "
                         "is nothing to train")
    solver_kind = args.solver or "sgd"
    if solver_kind == "adam" and (args.momentum is not None or args.semantics is not None):
        raise ValueError("--momentum and --semantics apply to --solver sgd only")
    if args.save_weights:  # before the run, not after it
        check_output_path(args.save_weights, "--save-weights", NETWORK_WEIGHT_SUFFIXES)
    if args.plot:
        from frame_mlir.tools.plot import require_matplotlib

        require_matplotlib()
        check_output_path(args.plot, "--plot")
    t_start = time.perf_counter()
    seed = 0 if args.seed is None else args.seed
    decls = [InputDecl(i.name, i.shape, i.dtype) for i in spec.inputs]
    data = load_source(args.data, decls, seed=seed)
    pair = _accuracy_pair(spec)
    if pair is not None and not any(o.value == pair[0] for o in spec.outputs):
        # the scores become one more output, so the test graph returns them
        spec = dataclasses.replace(spec, outputs=(
            *spec.outputs, OutputSpec(pair[0], pair[0], None)))
    net: Network = Network(spec, seed=seed, options=options, target=target,
                           **({} if use_cache else {"cache": None}))
    if print_ir_after_all:
        from frame_mlir.tools.driver import print_ir_after_all_hook

        net.after_pass = print_ir_after_all_hook(sys.stderr)
    if args.load_weights:
        net.load_weights(args.load_weights)
    d = SOLVER_DEFAULTS[solver_kind]
    lr0 = d["lr"] if args.lr is None else args.lr
    wd = d["weight_decay"] if args.weight_decay is None else args.weight_decay
    solver: SGD | Adam
    if solver_kind == "sgd":
        solver = SGD(lr0, d["momentum"] if args.momentum is None else args.momentum, wd,
                     args.semantics or "dlprim")
    else:
        solver = Adam(lr0, weight_decay=wd)
    t0 = time.perf_counter()
    trainer = net.trainer(solver)
    net.compile(test_mode=data.held_out is not None and pair is not None)
    compile_seconds = time.perf_counter() - t0
    weights = {o.name: o.loss_weight for o in spec.losses}
    epochs = args.epochs or 1
    per_epoch = data.train.samples // spec.inputs[0].shape[0]
    total_steps = epochs * per_epoch
    history: list[dict[str, float | int | None]] = []
    step = 0
    final = float("nan")
    t_train = time.perf_counter()
    for epoch in range(epochs):
        feeds, dropped = batches(data.train, decls, shuffle=True, seed=seed, epoch=epoch)
        if epoch == 0 and dropped:
            sys.stderr.write(f"frame-run: note: {dropped} of {data.train.samples} training "
                             "samples form no full batch and are dropped each epoch\n")
        losses = []
        with progress(per_epoch, f"epoch {epoch + 1}/{epochs}") as bar:
            for feed in feeds:
                solver.lr = scheduled_lr(lr0, args.schedule, epoch, step, total_steps)
                outs = trainer.step(feed)
                loss = sum(w * float(outs[n][0]) for n, w in weights.items())
                losses.append(loss)
                step += 1
                bar.set_postfix(loss=loss)
                bar()
        final = losses[-1]
        mean = float(np.mean(losses))
        acc = None
        if data.held_out is not None and pair is not None:
            acc = _accuracy(net, data.held_out, decls, pair)
        line = f"epoch {epoch + 1} loss {format_loss(mean)}"
        if acc is not None:
            line += f" accuracy {acc:.4f}"
        out.write(line + "\n")
        out.flush()
        history.append({"epoch": epoch + 1, "loss": mean, "accuracy": acc})
    train_seconds = time.perf_counter() - t_train
    out.write(f"final_loss {format_loss(final)}\n")
    if args.save_weights:
        net.save_weights(args.save_weights)
    if args.plot:
        from frame_mlir.tools.plot import plot_curves

        plot_curves(args.plot, history)
    sys.stderr.write(summary_line("frame-run", spec.name, compile_seconds, step,
                                  train_seconds, time.perf_counter() - t_start))
    if not math.isfinite(final):
        sys.stderr.write("frame-run: warning: training diverged: the last loss is "
                         f"{format_loss(final)} (the learning rate may be too large)\n")
    return 0


def _accuracy(net: Network, split: object, decls: list, pair: tuple[str, str]) -> float:
    """Held-out accuracy in test mode over the split's full batches (in order)."""
    from frame_mlir.frontend.network.data import batches

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
    "cuda" for the CUDA stages."""
    from xdsl.dialects import builtin

    from frame_mlir.frontend.network.lower import build_function
    from frame_mlir.tools.driver import emit_module_stage

    module = builtin.ModuleOp([build_function(spec, "train").fn])
    emit_module_stage(module, None, stage, out, print_ir_after_all=print_ir_after_all,
                      options=options, target=target, arch=arch)
