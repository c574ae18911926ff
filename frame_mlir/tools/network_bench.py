"""`frame-run NET.json --benchmark`: time a JSON network's training and inference steps,
as the reference's benchmark tool does.

    frame-run net.json --benchmark [--warmup 5] [--steps 20] [--threads N] [--seed S]
                                   [--solver sgd|adam --lr ...] [--load-weights FILE]

One random batch of the declared shapes (`data.random_feed`: float inputs U[-1, 1),
int inputs labels in range of the losses reading them, seeded by `--seed`), then
`--warmup` untimed and `--steps` timed iterations of each of:

* train: forward + backward + update with the net's solver (`Trainer.step`: the feed
  copied in, the compiled gradient function, the compiled update, the outputs copied
  out), the parameters changing from step to step as in training;
* test: the forward in test mode (`Network.forward(test_mode=True)`).

Output (stdout):

    benchmark lenet: batch 64, 1 thread, 5 warm-up + 20 timed iterations, solver sgd
    train ms/batch 12.345 images/s 5184.4
    test ms/batch 3.210 images/s 19937.7

ms/batch is the mean over the timed iterations (their total wall time / their count);
images/s = batch / (ms/batch / 1000). The compile time goes to stderr. A network
without a loss output has no train line (a note on stderr says so).

Flags that make no sense here are refused with a rule id, where, expected and found:
``BENCH-001`` a bad `--steps` / `--warmup` value, ``BENCH-002`` a flag `--benchmark`
does not take (`--data`, `--epochs`, ... : the inputs are random and nothing is saved),
`--warmup` without `--benchmark`, `--benchmark` on a v0 model spec.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.common.errors import Diagnostic
    from frame_mlir.frontends.network.loader import NetworkSpec

from frame_mlir.tools.network_run import DEFAULT_STEPS, DEFAULT_WARMUP

#: Options (argparse destinations) that a benchmark refuses: it feeds random inputs,
#: runs a fixed number of iterations and writes nothing.
REFUSED = {
    "data": "random inputs of the declared shapes",
    "epochs": "--steps timed iterations",
    "save_weights": "nothing is saved",
    "plot": "no loss curve",
    "schedule": "a constant rate",
    "checkpoint_every": "no checkpoints",
    "checkpoint": "no checkpoints",
    "resume": "a fresh start",
    "data_parallel": "one process",
    "emit_stage": "a run, not the IR",
    "print_predictions": "no predictions",
    "log_every": "no loss lines",
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _count(text: str | None, dest: str, default: int, least: int) -> tuple[int, Diagnostic | None]:
    """`--steps` / `--warmup` as an integer >= least (its default when absent)."""
    from frame_mlir.frontends.common.errors import Diagnostic

    if text is None:
        return default, None
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        return default, Diagnostic("BENCH-001", _flag(dest), f"an integer >= {least}",
                                   f"'{text}'")
    return value, None


def check_benchmark_flags(args: argparse.Namespace, is_network: bool, path: str
                          ) -> tuple[int, int]:
    """(warm-up, timed) iteration counts of `--benchmark`, after checking the command
    line: every bad value and combination at once (BENCH-001, BENCH-002), as an
    OptionError. Without `--benchmark`, only that `--warmup` is not given."""
    from frame_mlir.frontends.common.errors import Diagnostic
    from frame_mlir.tools.driver import OptionError

    diags: list[Diagnostic] = []
    if not args.benchmark:
        if args.warmup is not None:
            diags.append(Diagnostic("BENCH-002", "--warmup", "--benchmark with it",
                                    f"--warmup {args.warmup} without --benchmark"))
            raise OptionError(diags)
        return DEFAULT_WARMUP, DEFAULT_STEPS
    if not is_network:
        diags.append(Diagnostic("BENCH-002", "--benchmark", "a JSON network file "
                                "(inputs/outputs/operators)", f"the v0 model spec {path}"))
    for dest, instead in REFUSED.items():
        value = getattr(args, dest, None)
        if value is None or value is False:
            continue
        given = _flag(dest) if value is True else f"{_flag(dest)} {value}"
        diags.append(Diagnostic("BENCH-002", _flag(dest), f"no {_flag(dest)} with "
                                f"--benchmark ({instead})", given))
    warmup, d1 = _count(args.warmup, "warmup", DEFAULT_WARMUP, 0)
    steps, d2 = _count(args.steps, "steps", DEFAULT_STEPS, 1)
    diags += [d for d in (d1, d2) if d is not None]
    if diags:
        raise OptionError(diags)
    return warmup, steps


def run_benchmark(spec: NetworkSpec, args: argparse.Namespace, out: TextIO, *,
                  warmup: int, steps: int, options: CompileOptions | None,
                  use_cache: bool = True, target: str = "cpu", tool: str = "frame-run",
                  print_ir_after_all: bool = False) -> int:
    """Compile `spec`, then time `warmup` + `steps` train and test iterations on one
    random batch and print the module docstring's lines; returns the exit status."""
    from frame_mlir.frontends.network.data import InputDecl, random_feed
    from frame_mlir.frontends.network.lower import label_classes
    from frame_mlir.frontends.network.model import Network
    from frame_mlir.target.host import default_threads
    from frame_mlir.tools.network_run import load_network_weights, network_solver

    solver = network_solver(args)
    seed = 0 if args.seed is None else args.seed
    t0 = time.perf_counter()
    net = Network(spec, seed=seed, options=options, target=target,
                  **({} if use_cache else {"cache": None}))
    if print_ir_after_all:
        from frame_mlir.tools.driver import print_ir_after_all_hook

        net.after_pass = print_ir_after_all_hook(sys.stderr)
    if args.load_weights:
        load_network_weights(net, args.load_weights)
    decls = [InputDecl(i.name, i.shape, i.dtype) for i in spec.inputs]
    feed = random_feed(decls, label_classes(spec), seed)
    # random data at any learning rate: a benchmark times steps, it does not train
    trainer = net.trainer(solver, warn_divergence=False) if spec.losses else None
    net.compile(test_mode=True)
    compile_seconds = time.perf_counter() - t0
    batch = spec.inputs[0].shape[0] if spec.inputs else 1
    threads = options.threads if options is not None and options.threads else \
        default_threads()
    out.write(f"benchmark {spec.name}: batch {batch}, {threads} "
              f"thread{'s' if threads != 1 else ''}, {warmup} warm-up + {steps} timed "
              f"iterations, solver {solver.kind}\n")
    out.flush()
    if trainer is None:
        sys.stderr.write(f"{tool}: note: {spec.name} has no loss output (an output named "
                         "'loss...' or given with a loss_weight): no training step to "
                         "time\n")
    else:
        out.write(_line("train", ms_per_call(lambda: trainer.step(feed), warmup, steps), batch))
        out.flush()
    out.write(_line("test", ms_per_call(lambda: net.forward(feed, test_mode=True), warmup,
                                  steps), batch))
    out.flush()
    sys.stderr.write(f"{tool}: {spec.name}: compiled in {compile_seconds:.2f} s\n")
    return 0


def ms_per_call(call: Callable[[], object], warmup: int, steps: int) -> float:
    """Milliseconds per call: `warmup` untimed calls, then the mean of `steps` (also
    the protocol of `bench/bench_reference_nets.py`'s PyTorch side)."""
    for _ in range(warmup):
        call()
    start = time.perf_counter()
    for _ in range(steps):
        call()
    return (time.perf_counter() - start) * 1000.0 / steps


def _line(kind: str, ms: float, batch: int) -> str:
    """`train ms/batch 12.345 images/s 5184.4`, with its newline."""
    rate = batch * 1000.0 / ms if ms > 0 else float("inf")
    return f"{kind} ms/batch {ms:.3f} images/s {rate:.1f}\n"
