"""The training core the frontends' loops share (v0 specs, JSON networks, `.kyn`).

What every loop needs beside its own data and schedule lives here, once:

* `compile_step_module`: a module of training functions compiled for the CPU JIT or,
  with `target` "cuda" / "cuda-emulator", as CUDA kernels behind the same interface;
* `OptimizerState`: the optimizer's per-parameter state buffers, its run-time
  hyperparameters and its step count, in the argument order of the update functions
  that `frame_mlir.optim` builds, and their checkpoint form;
* `DivergenceWatch`: the first loss that is not finite, reported once;
* `checkpoint_chunks` and `read_checkpoint`: a run cut at its checkpoints, and a
  checkpoint read for `--resume` (by rank 0 of a data-parallel job, then sent to the
  others).

The progress bar and summary line are `progress.py`'s, the checkpoint file
`checkpoint.py`'s, the data-parallel job `distributed/`. What stays in a frontend is
its own: the v0 fixed batch and fused step, the networks' solvers' conventions and
feeds, `.kyn`'s epochs, metrics and early stopping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from frame_mlir.runtime.checkpoint import Checkpoint, check_arrays

if TYPE_CHECKING:
    from frame_mlir.runtime.distributed import Job
    from frame_mlir.runtime.executable import Executable

__all__ = ["DivergenceWatch", "OptimizerState", "TrainerState", "checkpoint_chunks",
           "compile_step_module", "read_checkpoint"]


def compile_step_module(module: Any, *, target: str = "cpu", options: Any = None,
                        after_pass: Callable[..., None] | None = None,
                        cache: Any = None) -> Executable:
    """`module`'s functions compiled for `target`: "cpu" (the LLVM JIT, through
    `cache`) or "cuda" / "cuda-emulator" (CUDA kernels with the `Executable`
    interface; no compile cache)."""
    if target == "cpu":
        from frame_mlir.runtime.executable import compile_module

        return compile_module(module, lr=None, options=options, after_pass=after_pass,
                              cache=cache)
    from frame_mlir.backend.cuda.runtime import compile_module_cuda

    return compile_module_cuda(module, target=target, options=options,  # type: ignore[return-value]
                               after_pass=after_pass)


class OptimizerState:
    """An optimizer's state between steps: per trainable parameter, one float32 buffer
    of each state `kind` (`velocity`; `exp_avg`, `exp_avg_sq`; ...), zero at the start;
    the run-time hyperparameters (rank-0 buffers the update function reads, set before
    each step); and `t`, the number of steps taken.

    `update_args` lists the update function's arguments in `frame_mlir.optim`'s order:
    the parameters, their gradients, the state (kind-major), the hyperparameters. The
    compiled update writes the parameters and the state in place, so the buffers here
    are the state itself (never copies)."""

    def __init__(self, kinds: Sequence[str], shapes: Mapping[str, tuple[int, ...]],
                 n_hyper: int):
        self.kinds = tuple(kinds)
        self.names = list(shapes)
        #: kind -> parameter name -> its buffer
        self.buffers: dict[str, dict[str, np.ndarray]] = {
            k: {n: np.zeros(shapes[n], np.float32) for n in self.names} for k in self.kinds}
        self.hyper = [np.zeros((), np.float32) for _ in range(n_hyper)]
        self.t = 0

    def set_hyper(self, values: Sequence[float]) -> None:
        """The hyperparameters of the next update call, in the function's order."""
        for buf, v in zip(self.hyper, values, strict=True):
            buf[()] = v

    def update_args(self, params: Mapping[str, np.ndarray], grads: Sequence[np.ndarray],
                    extra: Sequence[np.ndarray] = ()) -> list[np.ndarray]:
        """The update function's arguments: `params` and `grads` of the trainable
        parameters (in `names` order), the state buffers, `extra` (a data-parallel
        update's summed running statistics), the hyperparameters."""
        return [*(params[n] for n in self.names), *grads,
                *(self.buffers[k][n] for k in self.kinds for n in self.names), *extra,
                *self.hyper]

    @staticmethod
    def key(kind: str, name: str) -> str:
        """A state buffer's name in a checkpoint."""
        return f"{kind}/{name}"

    def arrays(self) -> dict[str, np.ndarray]:
        """Every state buffer by its checkpoint name (copies)."""
        return {self.key(k, n): v.copy() for k, per in self.buffers.items()
                for n, v in per.items()}

    def expected(self) -> dict[str, tuple[int, ...]]:
        """The checkpoint names and shapes of the state (what `restore` checks)."""
        return {self.key(k, n): v.shape for k, per in self.buffers.items()
                for n, v in per.items()}

    def check(self, path: str, arrays: Mapping[str, np.ndarray]) -> None:
        """CKPT-001 unless `arrays` (a checkpoint's state, read from `path`) holds
        exactly this state, shape for shape."""
        check_arrays(path, "state", arrays, self.expected())

    def load(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Put a checked checkpoint state in place (the buffers stay the same)."""
        for key, value in arrays.items():
            k, n = key.split("/", 1)
            np.copyto(self.buffers[k][n], np.asarray(value, np.float32))


class TrainerState:
    """`t` and `state` of a trainer that keeps its optimizer's state in
    `self.optimizer` (an `OptimizerState`): the attributes the trainers' users and
    checkpoints read, one definition for every frontend's trainer."""

    optimizer: OptimizerState

    @property
    def t(self) -> int:
        """The number of optimizer steps taken (Adam's bias corrections count from it)."""
        return self.optimizer.t

    @t.setter
    def t(self, value: int) -> None:
        self.optimizer.t = value

    @property
    def state(self) -> dict[str, dict[str, np.ndarray]]:
        """The optimizer's state: kind -> parameter name -> buffer (updated in place)."""
        return self.optimizer.buffers


class DivergenceWatch:
    """The first loss of a run that is not finite, reported once through `report`
    (a warning line, a Python warning): the run goes on, as PyTorch's would, but nan
    results alone leave the user guessing where it went wrong. `seen` is True from the
    first such loss on (a watch made with `report=None` only records it)."""

    def __init__(self, report: Callable[[str], None] | None = None):
        self.report = report
        self.seen = False

    def check(self, value: float, what: Callable[[float], str]) -> bool:
        """False when `value` is finite; else True, reporting `what(value)` the first
        time."""
        if np.isfinite(value):
            return False
        if not self.seen and self.report is not None:
            self.report(what(value))
        self.seen = True
        return True

    def check_all(self, values: np.ndarray, what: Callable[[int, float], str]) -> bool:
        """`check` for the first non-finite element of `values` (flattened), with its
        index."""
        flat = np.asarray(values).reshape(-1)
        bad = np.flatnonzero(~np.isfinite(flat))
        if bad.size == 0:
            return False
        i = int(bad[0])
        return self.check(float(flat[i]), lambda v: what(i, v))


def checkpoint_chunks(first: int, total: int, every: int | None) -> Iterator[tuple[int, int]]:
    """The run from unit `first` (a step, an epoch) to `total`, cut after every
    `every`-th unit (None: one piece): (start, count) of each piece, so a loop trains
    a piece and then, where `(start + count) % every == 0`, writes its checkpoint."""
    while first < total:
        n = total - first if every is None else min(every - first % every, total - first)
        yield first, n
        first += n


def read_checkpoint(path: str, model: str, run_id: str, job: Job | None = None
                    ) -> Checkpoint:
    """The checkpoint `--resume path` names, of run `run_id` of `model` (CKPT-00x
    otherwise). In a data-parallel job rank 0 reads it (the rank that writes them)
    and sends it to the others, so a file only rank 0 can see resumes every rank."""
    if job is None:
        return Checkpoint.load(path, model, run_id)
    ck = Checkpoint.load(path, model, run_id) if job.rank == 0 else None
    ck = job.bcast(ck, f"the checkpoint {path}")
    assert ck is not None
    return ck
