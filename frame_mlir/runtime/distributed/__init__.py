"""Data-parallel training over MPI, the package every frontend's `--data-parallel`
uses: the MPI job with its timeouts and fault handling (`job.py`), the batch split
(`split.py`) and the flat gradient buffer the ranks sum (`flat.py`). What is each
frontend's own stays with it: which of its losses combine how over the ranks
(`frontends/network/data_parallel.py`), v0's per-sample biases
(`frontends/spec/data_parallel.py`), `.kyn`'s loop (`frontends/kyn/trainer.py`); the
command-line flags are `tools/dp_run.py`'s, the step split the `frame-dp-split` pass's.

    mpirun -n 2 frame-run model.json --data-parallel

Each rank runs the same command. Every rank compiles the same step for its share of
the global batch (`local_batch`: the global batch divided by the rank count, rank r
taking rows [r*b, (r+1)*b) of it), computes its gradients, and the ranks sum them with
one MPI allreduce on one flat buffer before each applies the same update, so their
parameters stay identical. Only rank 0 writes standard output (`Job.quiet_stdout`).

Failures never hang the job:

* a rank that fails with an error prints it on stderr, prefixed `rank R: `, and
  aborts the whole job (`MPI_Abort`) with its exit status (`frame_mlir.tools.errors`
  calls `abort_on_error`);
* every collective runs under a deadline (`--collective-timeout`, default
  `DEFAULT_TIMEOUT` seconds, or `FRAME_DP_TIMEOUT`): a rank whose peers do not join in
  time (a killed process, a stall) reports DP-004 and aborts the job;
* a rank killed outright (out of memory, SIGKILL) makes `mpirun` end the job itself.

mpi4py comes from the optional `[mpi]` extra (`pip install 'frame-mlir[mpi]'`), the MPI
library from the system (Open MPI: `apt-get install openmpi-bin libopenmpi-dev`).
Their absence is DP-001, raised before anything is compiled. Nothing here imports
mpi4py until a job starts.
"""

from frame_mlir.runtime.distributed.flat import flat_buffer
from frame_mlir.runtime.distributed.job import (
    DEFAULT_TIMEOUT,
    ENV_TIMEOUT,
    DistributedError,
    Job,
    abort_on_error,
    collective_timeout,
    current,
    profile_line,
    start,
)
from frame_mlir.runtime.distributed.split import local_batch, rank_feed, rank_rows

__all__ = ["DEFAULT_TIMEOUT", "ENV_TIMEOUT", "DistributedError", "Job", "abort_on_error",
           "collective_timeout", "current", "flat_buffer", "local_batch", "profile_line",
           "rank_feed", "rank_rows", "start"]
