"""The MPI job: one per process of a data-parallel run, its collectives under a
deadline, and what happens when a rank fails (see the package's docstring)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from frame_mlir.compile_options import CompileOptions

#: The environment variable that sets the collective timeout (seconds).
ENV_TIMEOUT = "FRAME_DP_TIMEOUT"
#: Seconds a collective may wait for the other ranks (the first one also waits for
#: every rank to compile its step, which takes seconds to minutes for large models).
DEFAULT_TIMEOUT = 300.0


class DistributedError(Exception):
    """A data-parallel job cannot go on: `rule` (DP-00N), where, expected vs found."""

    def __init__(self, rule: str, where: str, expected: str, found: str):
        self.rule, self.where, self.expected, self.found = rule, where, expected, found
        super().__init__(f"{rule} at {where}: expected {expected}, found {found}")


def _mpi() -> Any:
    """`mpi4py.MPI`, or DP-001 naming what to install."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        missing = ("mpi4py is not installed" if getattr(e, "name", None) == "mpi4py"
                   else f"mpi4py cannot load an MPI library ({e})")
        raise DistributedError(
            "DP-001", "--data-parallel",
            "MPI: pip install 'frame-mlir[mpi]' (mpi4py) and an MPI library such as Open "
            "MPI (apt-get install openmpi-bin libopenmpi-dev), then mpirun -n N <command>",
            missing) from None
    return MPI


def collective_timeout(text: str | None) -> float:
    """The collective timeout in seconds: `text` (the option), else `FRAME_DP_TIMEOUT`,
    else DEFAULT_TIMEOUT. DP-005 for anything but a number > 0."""
    where, value = "--collective-timeout", text
    if value is None:
        where, value = ENV_TIMEOUT, os.environ.get(ENV_TIMEOUT)
    if value is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not (seconds > 0 and seconds != float("inf")):
        raise DistributedError("DP-005", where, "a number of seconds > 0", repr(value))
    return seconds


#: Seconds a failing rank waits before it ends the job (see `abort_on_error`).
ABORT_GRACE = 0.5

#: The running job (None outside `--data-parallel`): `abort_on_error` reads it.
_JOB: Job | None = None


class Job:
    """This process's place in a data-parallel job: its rank among `size`, and the
    collectives the trainers need, each under the job's timeout."""

    def __init__(self, tool: str, timeout: float):
        MPI = _mpi()
        self.MPI = MPI
        self.tool = tool
        self.comm = MPI.COMM_WORLD
        self.rank: int = self.comm.Get_rank()
        self.size: int = self.comm.Get_size()
        self.timeout = timeout
        self._sharers: int | None = None
        self._lock = threading.Lock()
        self._pending: tuple[str, float] | None = None  # (what, deadline)
        self._wake = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="frame-dp-watchdog",
                                          daemon=True)
        self._watchdog.start()

    def core_sharers(self) -> int:
        """How many ranks of this machine may run on this rank's cores (its affinity
        mask intersects theirs; itself included): a collective, the first time."""
        if self._sharers is None:
            mine = _affinity()
            if self.size == 1:
                self._sharers = 1
            else:
                with self.collective("the start of the job (finding the ranks that share "
                                     "this machine's cores)"):
                    node = self.comm.Split_type(self.MPI.COMM_TYPE_SHARED)
                    masks = node.allgather(sorted(mine))
                node.Free()
                self._sharers = max(1, sum(1 for m in masks if mine & set(m)))
        return self._sharers

    def compile_options(self, options: CompileOptions | None) -> CompileOptions:
        """`options` for one rank's step: split for `size` ranks, and, unless given
        (`--threads`, `FRAME_NUM_THREADS`), kernels on the cores this rank may use,
        shared out between the ranks of this machine that may use them too: Open MPI
        binds each of up to 2 ranks to a core of its own (one thread each), more ranks
        to a socket (the socket's cores divided among its ranks), and with
        `--bind-to none` every rank sees all the cores (divided among all the local
        ranks: two ranks of two threads each on two cores would only contend)."""
        import os

        from frame_mlir.compile_options import CompileOptions
        from frame_mlir.target.host import THREADS_ENV

        options = options or CompileOptions()
        threads = options.threads
        if threads is None and os.environ.get(THREADS_ENV, "").strip():
            threads = options.resolved().threads  # FRAME_NUM_THREADS, checked there
        if threads is None:
            threads = max(1, len(_affinity()) // self.core_sharers())
        return dataclasses.replace(options, threads=threads, data_parallel=self.size)

    # ---------------------------------------------------------------- failures

    def prefix(self) -> str:
        """`rank R: ` in a job of more than one rank, else nothing."""
        return f"rank {self.rank}: " if self.size > 1 else ""

    def abort(self, code: int) -> None:
        """End every rank of the job now with exit status `code` (> 0)."""
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            self.comm.Abort(code)
        finally:  # Abort does not return; should it fail, still never hang
            os._exit(code)

    def _watch(self) -> None:
        while True:
            self._wake.wait(1.0)
            self._wake.clear()
            with self._lock:
                pending = self._pending
            if pending is None or time.monotonic() < pending[1]:
                continue
            what, _ = pending
            sys.stderr.write(
                f"{self.prefix()}{self.tool}: error: DP-004 at {what}: expected all "
                f"{self.size} ranks to join within {self.timeout:g} s, found some still "
                "missing (a rank failed or stalled; --collective-timeout sets the "
                "limit)\n")
            self.abort(1)

    @contextmanager
    def collective(self, what: str) -> Iterator[None]:
        """Run a collective operation under the job's deadline."""
        with self._lock:
            self._pending = (what, time.monotonic() + self.timeout)
        try:
            yield
        finally:
            with self._lock:
                self._pending = None

    # ---------------------------------------------------------------- collectives

    def allreduce_sum(self, buf: np.ndarray, what: str) -> None:
        """Sum `buf` (contiguous) over the ranks, in place: one MPI_Allreduce."""
        if self.size == 1:
            return
        with self.collective(what):
            self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=self.MPI.SUM)

    def gather_rows(self, local: np.ndarray, what: str) -> np.ndarray | None:
        """The ranks' `local` arrays stacked along axis 0 in rank order, on rank 0
        (None on the others)."""
        if self.size == 1:
            return local.copy()
        local = np.ascontiguousarray(local)
        out = np.empty((self.size * local.shape[0], *local.shape[1:]), local.dtype) \
            if self.rank == 0 else None
        with self.collective(what):
            self.comm.Gather(local, out, root=0)
        return out

    def bcast(self, value: Any, what: str) -> Any:
        """Rank 0's `value` (a picklable object) on every rank."""
        if self.size == 1:
            return value
        with self.collective(what):
            return self.comm.bcast(value, root=0)

    def barrier(self, what: str) -> None:
        """Wait for every rank."""
        if self.size > 1:
            with self.collective(what):
                self.comm.Barrier()

    def check_same(self, what: str, value: Any) -> None:
        """DP-003 on every rank unless every rank passes an equal `value` (a JSON-able
        description of its job: the model, the options): ranks that disagree would
        train different models and exchange meaningless gradients."""
        if self.size == 1:
            return
        digest = hashlib.sha256(json.dumps(value, sort_keys=True, default=str)
                                .encode()).hexdigest()
        with self.collective(f"the start of the job (comparing {what})"):
            digests = self.comm.allgather(digest)
        bad = [r for r, d in enumerate(digests) if d != digests[0]]
        if bad:
            raise DistributedError(
                "DP-003", what, f"the same {what} on every rank (rank 0's)",
                f"a different one on rank{'s' if len(bad) > 1 else ''} "
                f"{', '.join(map(str, bad))}")


def _affinity() -> set[int]:
    """The cores this process may run on."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def start(tool: str, timeout: float) -> Job:
    """Join the MPI job this process was started in (a job of one rank without
    `mpirun`); only rank 0 keeps standard output."""
    global _JOB
    job = Job(tool, timeout)
    _JOB = job
    if job.rank != 0:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    return job


def current() -> Job | None:
    """The running job, if `start` was called."""
    return _JOB


def abort_on_error(message: str, code: int) -> bool:
    """Called by the tools with a failure's message: in a job of several ranks, print
    it prefixed with the rank and end the whole job (True: it never returns); outside
    one, False (the caller prints and exits as usual)."""
    job = _JOB
    if job is None or job.size == 1 or code == 0:
        return False
    sys.stderr.write("".join(f"{job.prefix()}{line}\n" for line in message.splitlines()))
    sys.stderr.flush()
    # A moment for the other ranks when they fail the same way (a batch the ranks do
    # not divide): each says so before the first abort ends them all.
    time.sleep(ABORT_GRACE)
    job.abort(code)
    return True


def profile_line(job: Job, steps: int, seconds: np.ndarray, nbytes: int) -> str:
    """Where one step's time went on this rank, from the seconds spent in (forward +
    backward, allreduce, update) over `steps` steps: what `FRAME_DP_PROFILE=1` prints.
    The allreduce's time includes waiting for the slowest rank to reach it."""
    total = float(seconds.sum())
    grad, comm, update = (float(v) for v in seconds)
    per = 1e3 / max(steps, 1)
    return (f"rank {job.rank}/{job.size}: {steps} steps, per step: forward+backward "
            f"{grad * per:.3f} ms, allreduce of {nbytes} bytes {comm * per:.3f} ms, "
            f"update {update * per:.3f} ms; allreduce share "
            f"{100 * comm / max(total, 1e-12):.1f}%\n")
