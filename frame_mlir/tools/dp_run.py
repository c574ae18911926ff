"""`--data-parallel`, `--checkpoint-every` and `--resume`: the options every training
tool shares for MPI data-parallel jobs and checkpoints, and the v0 spec's run.

    mpirun -n 2 frame-run spec.json --data-parallel
    frame-run spec.json --checkpoint-every 100 --checkpoint run.ckpt.npz
    frame-run spec.json --resume run.ckpt.npz

Rank 0 prints exactly what one process prints; the others print nothing on stdout.
A checkpoint is written by rank 0 alone (atomically) every N steps; a resumed run
prints the whole run's lines (those before the checkpoint from it) and ends with the
parameters of the uninterrupted run, bit for bit, on any rank count equal to the one
that wrote it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import numpy as np

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.spec import ModelSpec
    from frame_mlir.runtime.distributed import Job
    from frame_mlir.tools.driver import RunFiles


def add_distributed_arguments(
        p: argparse.ArgumentParser, *,
        every: str = "steps (v0 specs) or epochs (networks)",
        default_file: str = "<model>.ckpt.npz in the current folder") -> None:
    """The options of data-parallel jobs and checkpoints (frame-run's and, with its
    own `every` unit and `default_file`, frame-kyn train's)."""
    g = p.add_argument_group("data-parallel training and checkpoints (see "
                             "docs/distributed.md)")
    g.add_argument("--data-parallel", action="store_true",
                   help="train as one rank of an MPI job (mpirun -n N ...): rank r takes "
                   "rows [r*B/N, (r+1)*B/N) of every batch of B rows, gradients summed by "
                   "one allreduce per step (needs pip install 'frame-mlir[mpi]' and an "
                   "MPI library)")
    g.add_argument("--collective-timeout", metavar="SECONDS",
                   help="with --data-parallel: how long a rank waits for the others in a "
                   "collective before it ends the job (default 300, or FRAME_DP_TIMEOUT)")
    g.add_argument("--checkpoint-every", metavar="N", type=positive_int,
                   help=f"write a checkpoint every N {every}: parameters, optimizer state "
                   "and progress (--resume continues it)")
    g.add_argument("--checkpoint", metavar="FILE.npz",
                   help=f"the checkpoint file of --checkpoint-every (default {default_file})")
    g.add_argument("--resume", metavar="FILE.npz",
                   help="continue the run saved in a checkpoint of this model")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, found '{text}'")
    return n


def start_job(args: argparse.Namespace, tool: str) -> Job | None:
    """Join the MPI job when `--data-parallel` is given (DP-001 without MPI); else check
    that no option of one is given."""
    from frame_mlir.runtime.distributed import collective_timeout, start

    if not args.data_parallel:
        if args.collective_timeout is not None:
            raise ValueError("--collective-timeout applies to --data-parallel runs")
        return None
    return start(tool, collective_timeout(args.collective_timeout))


def checkpoint_path(args: argparse.Namespace, model: str) -> str | None:
    """Where --checkpoint-every writes (None without it)."""
    if args.checkpoint is not None and args.checkpoint_every is None:
        raise ValueError("--checkpoint names the file of --checkpoint-every N; give both")
    if args.checkpoint_every is None:
        return None
    path = args.checkpoint or f"{model}.ckpt.npz"
    from frame_mlir.tools.driver import check_output_path

    check_output_path(path, "--checkpoint", (".npz",))
    return path


def v0_run_digest(spec: ModelSpec, files: RunFiles) -> dict[str, Any]:
    """What makes two v0 runs the same run, but for the step count and logging (a run
    may be resumed with more steps): the spec and the files it reads."""
    from frame_mlir.frontends.spec.trainer import _plain

    doc = _plain(spec)
    doc["training"].pop("steps")
    doc["training"].pop("log_every")
    return {"spec": doc, "data": files.data, "load_weights": files.load_weights}


class _SingleProcess:
    """A one-process `Session` behind the interface `run_v0` drives."""

    def __init__(self, session: Any):
        self.session = session

    def run(self, first: int, steps: int) -> np.ndarray:
        return self.session.run(steps)

    def params(self) -> dict[str, np.ndarray]:
        return self.session.params()

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        for n, a in params.items():
            self.session.param_buffers[n][...] = a

    def predict(self) -> np.ndarray:
        return self.session.predict()


def run_v0(spec: ModelSpec, out: TextIO, *, job: Job | None, files: RunFiles,
           options: CompileOptions | None, use_cache: bool, checkpoint: str | None,
           every: int | None, resume: str | None, print_predictions: bool,
           print_ir_after_all: bool = False, tool: str = "frame-run") -> int:
    """Train a v0 spec in a data-parallel job (`job`) or alone with checkpoints: the
    lines one process prints, from rank 0."""
    import numpy as np

    from frame_mlir.frontends.spec.trainer import (
        ENV_CACHE,
        CompiledSpec,
        Session,
        check_host_memory,
        logged_steps,
    )
    from frame_mlir.runtime.checkpoint import Checkpoint, check_arrays, digest
    from frame_mlir.runtime.training import checkpoint_chunks, read_checkpoint
    from frame_mlir.tools.driver import (
        check_run_outputs,
        finish_losses,
        finish_run,
        format_loss,
        format_predictions,
        initial_values,
        read_run_files,
        save_weights_file,
    )

    t_start = time.perf_counter()
    root = job is None or job.rank == 0
    check_run_outputs(files)
    run_id = digest(v0_run_digest(spec, files))
    if job is not None:  # every rank must run the same job (DP-003), checked first
        job.check_same("model and options", {"run": run_id, "steps": spec.training.steps,
                                              "log_every": spec.training.log_every,
                                              "resume": resume, "checkpoint": checkpoint,
                                              "every": every})
    run_inputs = read_run_files(spec, files)
    cache = ENV_CACHE if use_cache else None
    hook = None
    if print_ir_after_all and root:
        from frame_mlir.tools.driver import print_ir_after_all_hook

        hook = print_ir_after_all_hook(sys.stderr)
    if job is not None:
        from frame_mlir.frontends.spec.data_parallel import local_spec

        compiled = CompiledSpec(local_spec(spec, job.size), after_pass=hook,
                                options=job.compile_options(options), cache=cache)
    else:
        compiled = CompiledSpec(spec, after_pass=hook, options=options, cache=cache)
    # RT-001 before the random draws, as a plain run does
    check_host_memory(compiled)
    values = initial_values(spec, run_inputs)
    if job is not None:
        from frame_mlir.frontends.spec.data_parallel import DpSession

        session: Any = DpSession(compiled, values, job, spec)
    else:
        session = _SingleProcess(Session(compiled, values))
    steps = spec.training.steps
    losses = np.zeros(steps, dtype=np.float32)
    first = 0
    if resume is not None:
        ck = read_checkpoint(resume, spec.name, run_id)  # on every rank
        check_arrays(resume, "param", ck.params,
                     dict(zip(spec.param_names(), spec.param_shapes(), strict=True)))
        first = min(ck.step, steps)
        done = np.asarray(ck.history.get("losses", []), dtype=np.float32)
        if done.shape != (ck.step,):
            from frame_mlir.runtime.checkpoint import CheckpointError

            raise CheckpointError("CKPT-001", resume, f"the losses of its {ck.step} steps",
                                  f"{done.shape[0]} losses")
        losses[:first] = done[:first]
        session.set_params(ck.params)
    start_step = first
    if job is not None:  # every rank compiled and set up: the steps start together
        job.barrier("the start of training (every rank compiling its step)")
    t_train = time.perf_counter()
    for start, n in checkpoint_chunks(first, steps, every):
        losses[start:start + n] = session.run(start, n)
        done = start + n
        if every is not None and done % every == 0:
            params = session.params()  # a collective: every rank takes part
            if root:
                assert checkpoint is not None and params is not None
                Checkpoint(spec.name, run_id, done, params,
                           history={"losses": [float(v) for v in losses[:done]]}
                           ).save(checkpoint)
    train_seconds = time.perf_counter() - t_train
    if job is not None and os.environ.get("FRAME_DP_PROFILE") == "1":
        sys.stderr.write(session.profile_line(steps - start_step))
    for i in logged_steps(steps, spec.training.log_every):
        out.write(f"step {i} loss {format_loss(float(losses[i]))}\n")
    if root:
        finish_losses(out, losses, spec, tool)
    predictions = session.predict() if print_predictions else None
    params = session.params() if files.save_weights is not None else None
    if not root:
        return 0
    if predictions is not None:
        out.write(format_predictions(spec, predictions))
    if params is not None:
        assert files.save_weights is not None
        save_weights_file(files.save_weights, list(params.items()))
    finish_run(out, spec, files, losses, compiled, train_seconds, t_start, tool)
    return 0
