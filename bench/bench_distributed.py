"""Data-parallel training benchmark (issue 15): 2 MPI ranks against one process.

Run:  python bench/bench_distributed.py [--quick] [--diagnose] [--repeats R] [--steps S]

On testdata/wide_mlp.json (batch 256, 1024 -> 1024 -> 1024 -> 10), in one run:

(a) samples/s of one process with one thread (`frame-run --threads 1`'s train loop)
    against `mpirun -n 2 frame-run --data-parallel --threads 1` (each rank 128 rows,
    one thread), the ratio and the issue's target (>= 1.7x); one process at 2 threads
    beside them for reference;
(b) the allreduce share of the 2-rank step (`FRAME_DP_PROFILE=1` of frame-run itself)
    against the target (<= 10 %);
(c) the same comparison for PyTorch: one process (1 intra-op thread) against
    DistributedDataParallel over gloo, 2 processes on localhost, 1 thread each, the same
    model, batch split and SGD (the per-sample biases kept out of DDP, as ours keep them
    out of the allreduce); and our 2-rank samples/s over PyTorch DDP's. JAX: n/a
    (`JAX_NA`);
(d) an allreduce microbenchmark (mpi4py, 2 ranks) at the flat gradient size of each
    benchmark model (v0 specs: weights + the loss; networks: every trainable parameter,
    the loss and BatchNorm statistics in 64-byte aligned segments): median time and
    effective bandwidth;
(f) a model of samples/s against rank count (1..64) on 10 and 100 Gb/s networks: each
    model's one-process step time measured here plus a ring allreduce of its buffer.

`--diagnose` adds (e): the 2-rank ceiling (one process's fused step at batch 256 over
batch 128), the 2-rank step taken apart (compute with both ranks busy and with one
alone, the allreduce alone in a loop, the wait for the slower rank measured by a barrier
before the allreduce), the allreduce with warm and with evicted caches, reduce-scatter +
allgather (a sharded update's collectives), and Open MPI's algorithm settings
(`coll_tuned_allreduce_algorithm`, `btl_vader_single_copy_mechanism`).

How train time is measured without the compile: every configuration runs in a worker
process (this file with `--worker KIND`) that compiles (the compile cache is warmed
first), runs a few warm-up steps, then times `--steps` steps with `perf_counter`:
`Session.run` (the native train loop frame-run runs) for one process, `DpSession.run`
(what `mpirun ... frame-run --data-parallel` runs per rank) between two barriers for
the ranks, the slowest rank's time counting. Samples/s = batch x steps / that time.
The configurations alternate within each repeat (a noisy shared machine drifts) and the
best repeat of each is reported, with the median beside it. (b) runs frame-run itself
and parses the per-rank profile lines; its step time is a cross-check of (a)'s.

The machine is shared: before each measurement the script waits (up to `--quiet-wait`
seconds) for a second in which other processes keep less than 0.15 cores busy, measures
how busy they kept the machine during the run (/proc/stat less this process's
children), and repeats a disturbed run up to 3 times, keeping the quietest; the last
line reports the load seen. `--quick` (a smoke test, under a minute with a warm compile
cache) does one short repeat without waiting.

Without `mpirun` or mpi4py the script says what to install and exits 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
WIDE = ROOT / "testdata" / "wide_mlp.json"

#: The models of the allreduce microbenchmark: (name, file, kind).
MODELS = [
    ("tiny_mlp (v0)", "testdata/tiny_mlp.json", "v0"),
    ("mnist_mlp (v0)", "testdata/mnist_mlp.json", "v0"),
    ("wide_mlp (v0)", "testdata/wide_mlp.json", "v0"),
    ("lenet_digits (network)", "testdata/networks/lenet_digits.json", "network"),
    ("mnist_mlp (network)", "testdata/networks/mnist_mlp.json", "network"),
]

JAX_NA = ("n/a: multi-process JAX on CPU needs jax.distributed.initialize with a "
          "coordinator, the experimental gloo/MPI CPU collectives and the step rewritten "
          "over a global mesh (shard_map/pmap): not a like-for-like DDP peer here")

#: Open MPI settings compared by --diagnose (mpirun arguments).
MCA_VARIANTS = [
    ("default (tuned decision)", []),
    *[(f"allreduce_algorithm {k} ({name})",
       ["--mca", "coll_tuned_use_dynamic_rules", "1",
        "--mca", "coll_tuned_allreduce_algorithm", str(k)])
      for k, name in ((1, "basic linear"), (2, "reduce+bcast"), (3, "recursive doubling"),
                      (4, "ring"), (5, "segmented ring"), (6, "rabenseifner"))],
    ("single_copy_mechanism none", ["--mca", "btl_vader_single_copy_mechanism", "none"]),
]


# ------------------------------------------------------------------ helpers


def mpi_missing() -> str | None:
    """Why an MPI job cannot run here (None: it can)."""
    if shutil.which("mpirun") is None:
        return "no mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)"
    # importing mpi4py.MPI here would make this process an MPI singleton: ask a child
    r = subprocess.run([sys.executable, "-c", "from mpi4py import MPI"],
                       capture_output=True, text=True, check=False)
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return f"mpi4py unusable ({last}); pip install 'frame-mlir[mpi]'"
    return None


def mpi_env(**extra: str) -> dict[str, str]:
    """An mpirun environment: root allowed (containers), no warnings about the missing
    high-speed transports of a VM, this venv first on PATH."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_btl_base_warn_component_unused": "0"}
    env.update(extra)
    return env


class ForeignLoad:
    """How many cores other processes kept busy while a command ran: the machine's busy
    time (/proc/stat) less this process's children's CPU time. The machine is shared;
    a run disturbed by others is run again (`run_json`)."""

    def __init__(self) -> None:
        self.t0, self.busy0, self.own0 = time.monotonic(), self._busy(), self._own()

    @staticmethod
    def _busy() -> float | None:
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # less idle, iowait

    @staticmethod
    def _own() -> float:
        import resource

        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def cores(self) -> float | None:
        busy = self._busy()
        if busy is None or self.busy0 is None:
            return None
        dt = max(time.monotonic() - self.t0, 1e-3)
        return max(0.0, (busy - self.busy0 - (self._own() - self.own0)) / dt)


#: Re-run a measurement when other processes kept more cores than this busy (on
#: average over the run), up to RETRIES times.
MAX_FOREIGN = 0.15
RETRIES = 3
#: The foreign load of every measured run (reported at the end).
FOREIGN: list[float] = []


#: Before a measurement, wait up to this many seconds for a second in which other
#: processes keep less than MAX_FOREIGN cores busy (0: do not wait).
QUIET_WAIT = 120.0


def wait_quiet() -> None:
    deadline = time.monotonic() + QUIET_WAIT
    while time.monotonic() < deadline:
        meter = ForeignLoad()
        time.sleep(1.0)
        foreign = meter.cores()
        if foreign is None or foreign <= MAX_FOREIGN:
            return


def retrying(thunk, retry: bool = True):
    """`thunk()` (a measurement), run again, up to RETRIES times, if other processes
    loaded the machine meanwhile; the least disturbed run is kept."""
    best = None
    for _ in range(RETRIES if retry else 1):
        wait_quiet()
        meter = ForeignLoad()
        out = thunk()
        foreign = meter.cores()
        if foreign is None:
            return out
        if best is None or foreign < best[0]:
            best = (foreign, out)
        if foreign <= MAX_FOREIGN:
            break
    assert best is not None
    if retry:
        FOREIGN.append(best[0])
    return best[1]


def run_json(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 900,
             retry: bool = True) -> dict:
    """Run a worker command; the JSON object it prints last on stdout (`retrying`)."""
    def once() -> dict:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=env or mpi_env(), cwd=ROOT, check=False)
        lines = [s for s in r.stdout.splitlines() if s.startswith("{")]
        if r.returncode or not lines:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n"
                               f"{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
        return json.loads(lines[-1])

    return retrying(once, retry)


def worker(kind: str, *extra: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--worker", kind, *extra]


def mpirun(n: int, argv: list[str], mca: list[str] | None = None) -> list[str]:
    return ["mpirun", "--oversubscribe", *(mca or []), "-n", str(n), *argv]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def exchanged_floats(path: str, kind: str) -> tuple[int, int]:
    """(floats in the allreduced buffer per step, parameters kept local) of a model:
    v0 specs exchange their weights and the loss (the `[batch, out]` biases stay on
    their rank, frame_dp_split.py); networks every trainable parameter and the loss."""
    if kind == "v0":
        from frame_mlir.frontends.spec.spec_v0 import load_spec

        spec = load_spec(ROOT / path)
        shared = sum(math.prod(layer.weight_shape) for layer in spec.layers)
        local = sum(math.prod(layer.bias_shape) for layer in spec.layers if layer.has_bias)
        return shared + 1, local
    from frame_mlir.frontends.network.loader import load_network
    from frame_mlir.frontends.network.lower import build_function

    net = load_network(ROOT / path)
    built = build_function(net, "train")
    # frame_mlir/frontends/network/data_parallel.py: one segment per trainable parameter, loss
    # output and BatchNorm running statistic, each starting on a 64-byte boundary
    shapes = [p.shape for p in built.params if p.trainable]
    shapes += [(1,)] * len(net.losses)
    shapes += [p.shape for p in built.params if p.name in built.stats]
    return sum(-(-max(math.prod(s), 1) // 16) * 16 for s in shapes), 0


def fmt_bytes(n: float) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


# ------------------------------------------------------------------ workers


def _frame_single(args: argparse.Namespace) -> dict:
    """One process, `--threads` threads, the whole batch: frame-run's train loop."""
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.spec_v0 import load_spec
    from frame_mlir.frontends.spec.trainer import CompiledSpec, Session

    spec = load_spec(args.spec)
    compiled = CompiledSpec(spec, options=CompileOptions(threads=args.threads))
    session = Session(compiled)
    session.run(args.warmup)
    t0 = time.perf_counter()
    losses = session.run(args.steps)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "steps": args.steps, "batch": spec.batch,
            "compile_seconds": compiled.compile_seconds, "last_loss": float(losses[-1])}


def _frame_dp(args: argparse.Namespace) -> dict | None:
    """One rank of an mpirun job: `DpSession` as frame-run --data-parallel builds it;
    with --diagnose, the step taken apart."""
    import numpy as np

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.data_parallel import DpSession, local_spec
    from frame_mlir.frontends.spec.initial_values import generate_initial_values
    from frame_mlir.frontends.spec.spec_v0 import load_spec
    from frame_mlir.frontends.spec.trainer import CompiledSpec
    from frame_mlir.runtime.distributed import start

    job = start("bench_distributed", 600.0)
    spec = load_spec(args.spec)
    options = job.compile_options(CompileOptions(threads=args.threads))
    compiled = CompiledSpec(local_spec(spec, job.size), options=options)
    s = DpSession(compiled, generate_initial_values(spec), job, spec)
    s.run(0, args.warmup)
    job.barrier("warm-up")
    s.seconds[:] = 0
    t0 = time.perf_counter()
    losses = s.run(args.warmup, args.steps)
    seconds = time.perf_counter() - t0
    job.barrier("end")
    out: dict = {"seconds": max(job.comm.allgather(seconds)), "steps": args.steps,
                 "batch": spec.batch, "ranks": job.size, "threads": options.threads,
                 "phases_ms": job.comm.allgather((1e3 * s.seconds / args.steps).tolist()),
                 "bytes": int(s.shared.nbytes), "last_loss": float(losses[-1])}
    if args.diagnose:
        comm, MPI = job.comm, job.MPI
        n = args.steps

        def compute() -> None:
            s._grad_fn(*s._grad_args)
            s._update_fn(*s._update_args)

        def timed(fn, steps: int) -> float:  # ms per call, this rank
            comm.Barrier()
            t = time.perf_counter()
            for _ in range(steps):
                fn()
            return 1e3 * (time.perf_counter() - t) / steps

        both = comm.allgather(timed(compute, n))
        # rank 0 computing while the others sleep (not spinning in MPI)
        comm.Barrier()
        if job.rank == 0:
            t = time.perf_counter()
            for _ in range(n):
                compute()
            alone = 1e3 * (time.perf_counter() - t) / n
            comm.bcast(alone, root=0)
        else:
            time.sleep(n * 1e-3 * both[0] * 1.3 + 0.2)
            alone = comm.bcast(None, root=0)
        buf = s.shared

        def allreduce() -> None:
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

        pure = comm.allgather(timed(allreduce, n))
        # the step with a barrier before the allreduce: waiting vs transfer
        rows = np.zeros((n, 4))
        comm.Barrier()
        for i in range(n):
            t_a = time.perf_counter()
            s._grad_fn(*s._grad_args)
            t_b = time.perf_counter()
            comm.Barrier()
            t_c = time.perf_counter()
            allreduce()
            t_d = time.perf_counter()
            s._update_fn(*s._update_args)
            rows[i] = (t_b - t_a, t_c - t_b, t_d - t_c, time.perf_counter() - t_d)
        split = comm.allgather((1e3 * rows.mean(axis=0)).tolist())
        out["diagnose"] = {"compute_both_ms": both, "compute_alone_ms": alone,
                           "allreduce_lockstep_ms": pure, "barrier_split_ms": split}
    return out if job.rank == 0 else None


def _allreduce(args: argparse.Namespace) -> dict | None:
    """Median MPI_Allreduce time of float32 buffers of each `--sizes` (floats). With
    `--evict`, 64 MB of other memory is written before each call (the caches as a
    training step leaves them: the step's weights, activations and packed panels pass
    through them between two allreduces); with `--rsag`, MPI_Reduce_scatter +
    MPI_Allgather instead (the collectives of an update sharded over the ranks)."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    ranks = comm.Get_size()
    junk = np.ones(16 << 20, dtype=np.float32) if args.evict else None
    result = []
    for n in (int(v) for v in args.sizes.split(",")):
        buf = np.ones(n, dtype=np.float32)
        counts = [n // ranks + (r < n % ranks) for r in range(ranks)]
        part = np.empty(counts[comm.Get_rank()], dtype=np.float32)

        def rsag(buf=buf, part=part, counts=counts) -> None:
            comm.Reduce_scatter(buf, part, counts, op=MPI.SUM)
            comm.Allgatherv(part, [buf, counts])

        def allreduce(buf=buf) -> None:
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

        call = rsag if args.rsag else allreduce
        reps = args.reps if n * 4 < 1 << 20 else max(args.reps // 4, 10)
        times = np.zeros(reps)
        for i in range(-5, reps):  # 5 warm-up calls
            if junk is not None:
                np.add(junk, 1.0, out=junk)
            comm.Barrier()
            t = time.perf_counter()
            call()
            if i >= 0:
                times[i] = time.perf_counter() - t
        # a call ends when the slowest rank has its result
        slowest = np.max(np.array(comm.allgather(times)), axis=0)
        result.append({"floats": n, "median_s": float(np.median(slowest)),
                       "min_s": float(slowest.min()), "reps": reps})
    return {"ranks": ranks, "sizes": result} if comm.Get_rank() == 0 else None


class _TorchMlp:
    """The v0 spec as a torch module (built lazily: torch is imported in the workers
    only): weights, this rank's rows of the [batch, out] biases."""

    @staticmethod
    def build(spec, rank: int, ranks: int):
        import torch

        from frame_mlir.frontends.spec.initial_values import generate_initial_values

        vals = generate_initial_values(spec)  # our initial values: the same model, data
        params = dict(vals.params)
        b = spec.batch // ranks
        rows = slice(rank * b, (rank + 1) * b)

        class Mlp(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.ParameterList(
                    [torch.from_numpy(params[layer.weight_name].copy())
                     for layer in spec.layers])
                self.b = torch.nn.ParameterList(
                    [torch.from_numpy(params[layer.bias_name][rows].copy())
                     for layer in spec.layers if layer.has_bias])

            def forward(self, x, t):
                values = {spec.input.name: x}
                bias = iter(self.b)
                for i, layer in enumerate(spec.layers):
                    y = values[layer.input] @ self.w[i]
                    if layer.has_bias:
                        y = y + next(bias)
                    if layer.activation == "relu":
                        y = torch.relu(y)
                    values[layer.name] = y
                return torch.nn.functional.mse_loss(values[spec.loss.prediction], t)

        x = torch.from_numpy(vals.inputs[spec.input.name][rows].copy())
        t = torch.from_numpy(vals.target[rows].copy())
        return Mlp(), x, t


def _torch(args: argparse.Namespace) -> dict | None:
    """PyTorch, 1 intra-op thread: one process on the whole batch, or (with RANK set)
    one rank of DistributedDataParallel over gloo (default bucketing: gradients
    allreduced while backward runs)."""
    import torch

    from frame_mlir.frontends.spec.spec_v0 import load_spec

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    spec = load_spec(args.spec)
    lr = spec.optimizer.learning_rate
    rank, ranks = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    module, x, t = _TorchMlp.build(spec, rank, ranks)
    model = module
    dist = None
    if "RANK" in os.environ:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo", rank=rank, world_size=ranks)
        # the per-sample biases are this rank's rows: not exchanged (as ours)
        DDP._set_params_and_buffers_to_ignore_for_model(
            module, [n for n, _ in module.named_parameters() if n.startswith("b.")])
        model = DDP(module)
    # DDP averages the weights' gradients (the whole batch's mean); a bias row's
    # gradient is of this rank's mean: lr / ranks makes it the whole batch's (as ours)
    opt = torch.optim.SGD([{"params": list(module.w)},
                           {"params": list(module.b), "lr": lr / ranks}], lr=lr)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = model(x, t)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    if dist is not None:
        dist.barrier()
    t0 = time.perf_counter()
    last = 0.0
    for _ in range(args.steps):
        last = step()
    seconds = time.perf_counter() - t0
    if dist is not None:
        tt = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        seconds = float(tt[0])
        lt = torch.tensor([last / ranks])
        dist.all_reduce(lt)  # the whole batch's loss: the mean of the ranks' means
        last = float(lt)
        # no destroy_process_group: gloo's teardown can abort the process at exit
        # ("terminate called without an active exception"); the worker _exits instead
    if rank:
        return None
    return {"seconds": seconds, "steps": args.steps, "batch": spec.batch, "ranks": ranks,
            "last_loss": last}


def _step_times(args: argparse.Namespace) -> dict:
    """One process, one thread: seconds per training step and batch of each model of
    MODELS (the per-sample compute of the throughput model). v0 specs: the native train
    loop; networks: `Network.trainer(SGD)` steps on a fixed random batch."""
    import numpy as np

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.spec_v0 import load_spec
    from frame_mlir.frontends.spec.trainer import CompiledSpec, Session
    from frame_mlir.network import SGD
    from frame_mlir.network import load as load_net

    options = CompileOptions(threads=1)
    out = {}
    for name, path, kind in MODELS:
        if args.quick and kind != "v0":
            continue  # a network's cold compile takes up to a minute
        if kind == "v0":
            spec = load_spec(ROOT / path)
            session = Session(CompiledSpec(spec, options=options))
            batch = spec.batch
            session.run(5)

            def run(n: int, session=session) -> None:
                session.run(n)
        else:
            net = load_net(ROOT / path, options=options)
            trainer = net.trainer(SGD(0.01))
            rng = np.random.default_rng(0)
            feed = {i.name: (rng.integers(0, 10, i.shape) if i.dtype == "int" else
                             rng.random(i.shape, dtype=np.float32))
                    for i in net.spec.inputs}
            batch = net.spec.inputs[0].shape[0]
            trainer.step(feed)

            def run(n: int, trainer=trainer, feed=feed) -> None:
                for _ in range(n):
                    trainer.step(feed)
        n, best = 1, float("inf")
        while True:  # calibrate to ~0.2 s (--quick 0.05 s), then the best of 3
            t = time.perf_counter()
            run(n)
            dt = time.perf_counter() - t
            if dt > (0.05 if args.quick else 0.2):
                break
            n *= 4
        for _ in range(3):
            t = time.perf_counter()
            run(n)
            best = min(best, (time.perf_counter() - t) / n)
        out[name] = {"step_s": best, "batch": batch}
    return out


WORKERS = {"frame-single": _frame_single, "frame-dp": _frame_dp, "allreduce": _allreduce,
           "torch": _torch, "step-times": _step_times}


def torch_ddp(args: argparse.Namespace, ranks: int = 2) -> dict:
    """PyTorch DDP: `ranks` processes on localhost (gloo), the result of rank 0."""
    return retrying(lambda: _torch_ddp(args, ranks))


def _torch_ddp(args: argparse.Namespace, ranks: int) -> dict:
    env = {**mpi_env(), "WORLD_SIZE": str(ranks), "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(free_port()), "OMP_NUM_THREADS": "1"}
    cmd = worker("torch", "--spec", str(args.spec), "--steps", str(args.steps),
                 "--warmup", str(args.warmup))
    procs = [subprocess.Popen(cmd, env={**env, "RANK": str(r)}, cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for r in range(ranks)]
    outs = [p.communicate(timeout=900) for p in procs]
    bad = [(p.returncode, o[1][-2000:]) for p, o in zip(procs, outs, strict=True)
           if p.returncode]
    if bad:
        raise RuntimeError(f"torch DDP failed: {bad}")
    return json.loads([s for s in outs[0][0].splitlines() if s.startswith("{")][-1])


# ------------------------------------------------------------------ the report


def samples_per_s(r: dict) -> float:
    return r["batch"] * r["steps"] / r["seconds"]


def best_median(results: list[dict]) -> tuple[float, float]:
    sps = [samples_per_s(r) for r in results]
    return max(sps), statistics.median(sps)


PROFILE = re.compile(r"rank (\d+)/(\d+): (\d+) steps, per step: forward\+backward "
                     r"([\d.]+) ms, allreduce of (\d+) bytes ([\d.]+) ms, update ([\d.]+) ms")


def frame_run_profile(args: argparse.Namespace, mca: list[str] | None = None
                      ) -> list[tuple[float, float, float]]:
    """`mpirun -n 2 frame-run wide_mlp --data-parallel --threads 1` with
    FRAME_DP_PROFILE=1: each rank's (forward+backward, allreduce, update) ms per step."""
    return retrying(lambda: _frame_run_profile(args, mca))


def _frame_run_profile(args: argparse.Namespace, mca: list[str] | None
                       ) -> list[tuple[float, float, float]]:
    cmd = mpirun(2, [str(BIN / "frame-run"), str(args.spec), "--data-parallel",
                     "--threads", "1", "--steps", str(args.steps)], mca)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                       env=mpi_env(FRAME_DP_PROFILE="1"), cwd=ROOT, check=False)
    found = [(float(m[3]), float(m[5]), float(m[6])) for m in PROFILE.findall(r.stderr)]
    if r.returncode or len(found) != 2:
        raise RuntimeError(f"frame-run --data-parallel failed ({r.returncode}):\n"
                           f"{r.stderr[-3000:]}")
    return found


def share(phases: tuple[float, float, float]) -> float:
    return phases[1] / sum(phases)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="a smoke test: few steps, one repeat (under a minute)")
    ap.add_argument("--diagnose", action="store_true",
                    help="also take the 2-rank step apart and try Open MPI settings")
    ap.add_argument("--repeats", type=int, help="repeats of each configuration "
                    "(default 5, --quick 1)")
    ap.add_argument("--steps", type=int, help="timed steps per run (default 250: about "
                    "3 s of training on the 2-core machine; --quick 10)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    ap.add_argument("--quiet-wait", type=float, metavar="SECONDS",
                    help="before each measurement, wait up to this long for the machine "
                    "to be idle (default 120, --quick 0)")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--spec", default=str(WIDE), help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, default=10, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=200, help=argparse.SUPPRESS)
    ap.add_argument("--evict", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rsag", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.repeats = args.repeats or (1 if args.quick else 5)
    args.steps = args.steps or (10 if args.quick else 250)
    global RETRIES, QUIET_WAIT
    if args.quick:
        args.warmup, RETRIES, QUIET_WAIT = 3, 1, 0.0
    if args.quiet_wait is not None:
        QUIET_WAIT = args.quiet_wait
    if args.worker:
        out = WORKERS[args.worker](args)
        if out is not None:
            print(json.dumps(out), flush=True)
        if args.worker == "torch":
            sys.stderr.flush()
            os._exit(0)  # past torch.distributed's exit-time teardown
        return 0

    why = mpi_missing()
    if why is not None:
        print(f"n/a: data-parallel benchmark needs MPI: {why}")
        return 0
    have_torch = not args.no_torch
    if have_torch:
        try:
            import torch.distributed as tdist

            have_torch = tdist.is_available() and tdist.is_gloo_available()
        except ImportError:
            have_torch = False
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next((ln.split(":", 1)[1].strip() for ln in lscpu.splitlines()
                  if ln.startswith("Model name")), "?")
    print(f"machine: {os.cpu_count()} cpus ({model}); {time.strftime('%Y-%m-%d')}; "
          f"model {Path(args.spec).name}; {args.steps} timed steps per run; "
          f"best (median) of {args.repeats} interleaved repeats")

    single_cmd = worker("frame-single", "--spec", str(args.spec), "--threads", "1",
                        "--steps", str(args.steps), "--warmup", str(args.warmup))
    dp_cmd = mpirun(2, worker("frame-dp", "--spec", str(args.spec), "--threads", "1",
                              "--steps", str(args.steps), "--warmup", str(args.warmup)))
    torch_cmd = worker("torch", "--spec", str(args.spec), "--steps", str(args.steps),
                       "--warmup", str(args.warmup))
    # compile (or load from the compile cache) both steps before timing anything
    run_json(worker("frame-single", "--spec", str(args.spec), "--steps", "1",
                    "--warmup", "1"))
    run_json(mpirun(2, worker("frame-dp", "--spec", str(args.spec), "--steps", "1",
                              "--warmup", "1")))

    single2_cmd = worker("frame-single", "--spec", str(args.spec), "--threads", "2",
                         "--steps", str(args.steps), "--warmup", str(args.warmup))
    run_json(worker("frame-single", "--spec", str(args.spec), "--threads", "2", "--steps",
                    "1", "--warmup", "1"))
    res: dict[str, list[dict]] = {"single": [], "dp": [], "torch": [], "ddp": [],
                                  "threads2": []}
    profiles: list[list[tuple[float, float, float]]] = []
    for _ in range(args.repeats):
        res["single"].append(run_json(single_cmd))
        res["dp"].append(run_json(dp_cmd))
        res["threads2"].append(run_json(single2_cmd))
        profiles.append(frame_run_profile(args))
        if have_torch:
            try:
                res["torch"].append(run_json(torch_cmd, env=mpi_env(OMP_NUM_THREADS="1")))
                res["ddp"].append(torch_ddp(args))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"  (a PyTorch run failed, left out: {str(e).splitlines()[0][:200]})")

    # (a)
    s1, s1m = best_median(res["single"])
    s2, s2m = best_median(res["dp"])
    ratio = s2 / s1
    batch = res["single"][0]["batch"]
    per_step = batch * 1e3  # ms per step = per_step / samples per second
    print(f"\n(a) frame-mlir, {Path(args.spec).stem} batch {batch}: samples/s (train time, "
          "compile excluded)")
    print(f"  {'configuration':<44} {'best':>9} {'median':>9} {'ms/step':>8}")
    print(f"  {'1 process, --threads 1':<44} {s1:>9.0f} {s1m:>9.0f} "
          f"{per_step / s1:>8.2f}")
    print(f"  {'mpirun -n 2 --data-parallel --threads 1':<44} {s2:>9.0f} {s2m:>9.0f} "
          f"{per_step / s2:>8.2f}")
    t2b, t2m = best_median(res["threads2"])
    print(f"  {'(for reference: 1 process, --threads 2)':<44} {t2b:>9.0f} {t2m:>9.0f} "
          f"{per_step / t2b:>8.2f}")
    print(f"  2 ranks / 1 process: {ratio:.2f}x (median {s2m / s1m:.2f}x); target >= 1.7x: "
          f"{'met' if ratio >= 1.7 else 'NOT met'}")
    print(f"  last loss: 1 process {res['single'][0]['last_loss']:.7g}, "
          f"2 ranks {res['dp'][0]['last_loss']:.7g}")

    # (b)
    best_dp = max(res["dp"], key=samples_per_s)
    print("\n(b) the 2-rank step, per rank (ms): forward+backward / allreduce "
          f"of {fmt_bytes(best_dp['bytes'])} / update; allreduce share")
    for r, ph in enumerate(best_dp["phases_ms"]):
        print(f"  bench worker, best run, rank {r}: {ph[0]:.2f} / {ph[1]:.2f} / {ph[2]:.2f}"
              f"; {100 * share(ph):.1f} %")
    shares = [max(share(p) for p in prof) for prof in profiles]
    steps_ms = [max(sum(p) for p in prof) for prof in profiles]
    for i, prof in enumerate(profiles):
        cells = "; ".join(f"rank {r} {p[0]:.2f} / {p[1]:.2f} / {p[2]:.2f} "
                          f"({100 * share(p):.1f} %)" for r, p in enumerate(prof))
        print(f"  frame-run FRAME_DP_PROFILE=1, run {i + 1}: {cells}")
    best_share = min(shares)
    print(f"  allreduce share (higher rank of each run): best {100 * best_share:.1f} %, "
          f"median {100 * statistics.median(shares):.1f} %; target <= 10 %: "
          f"{'met' if best_share <= 0.10 else 'NOT met'} (frame-run step "
          f"{min(steps_ms):.2f} ms best)")

    # (c)
    print("\n(c) PyTorch (1 intra-op thread per process): samples/s")
    if have_torch and res["torch"] and res["ddp"]:
        t1, t1m = best_median(res["torch"])
        t2, t2m = best_median(res["ddp"])
        print(f"  {'1 process':<44} {t1:>9.0f} {t1m:>9.0f} {per_step / t1:>8.2f}")
        print(f"  {'DDP gloo, 2 processes':<44} {t2:>9.0f} {t2m:>9.0f} "
              f"{per_step / t2:>8.2f}")
        print(f"  PyTorch 2 ranks / 1 process: {t2 / t1:.2f}x")
        print(f"  frame-mlir 2 ranks / PyTorch DDP 2 ranks: {s2 / t2:.2f}x "
              f"(1 process: frame / torch {s1 / t1:.2f}x)")
        print(f"  last loss: torch 1 process {res['torch'][0]['last_loss']:.7g}, "
              f"DDP {res['ddp'][0]['last_loss']:.7g}")
    else:
        print("  n/a: torch.distributed with gloo is not available (or --no-torch)")
    print(f"  JAX: {JAX_NA}")

    # (d)
    print("\n(d) MPI_Allreduce (mpi4py, 2 ranks, in place, float32 sum): the flat "
          "gradient buffer of each model")
    sizes = [(name, *exchanged_floats(path, kind)) for name, path, kind in MODELS]
    reps = 40 if args.quick else 400
    micro = run_json(mpirun(2, worker("allreduce", "--sizes",
                                      ",".join(str(n) for _, n, _ in sizes),
                                      "--reps", str(reps))))
    print(f"  {'model':<24} {'floats':>9} {'bytes':>10} {'local':>8} {'median us':>10} "
          f"{'min us':>9} {'GB/s':>6}")
    for (name, n, local), m in zip(sizes, micro["sizes"], strict=True):
        t = m["median_s"]
        print(f"  {name:<24} {n:>9} {fmt_bytes(4 * n):>10} {local:>8} {t * 1e6:>10.1f} "
              f"{m['min_s'] * 1e6:>9.1f} {4 * n / t / 1e9:>6.2f}")
    print("  (GB/s: bytes / median time, which at 2 ranks is also the ring's 'bus "
          "bandwidth' 2(N-1)/N x bytes / time; local: the v0 bias floats kept on each "
          "rank, not exchanged)")

    scaling_model(sizes, run_json(worker("step-times", *(["--quick"] if args.quick
                                                          else []))))
    if args.diagnose:
        diagnose(args, sizes)
    if FOREIGN:
        print(f"\nother processes kept {statistics.mean(FOREIGN):.2f} cores busy on average "
              f"during the measured runs (worst run {max(FOREIGN):.2f}; a run above "
              f"{MAX_FOREIGN} was repeated, up to {RETRIES} times, keeping the quietest)")
    return 0


#: The networks of the throughput model: (name, bytes/s, per-message latency s). The
#: latencies are typical, not measured: TCP over 10 GbE, RDMA (InfiniBand / RoCE) at
#: 100 Gb/s.
NETWORKS = [("10 Gb/s", 10e9 / 8, 10e-6), ("100 Gb/s", 100e9 / 8, 2e-6)]
RANKS = [1, 2, 4, 8, 16, 32, 64]


def ring_seconds(nbytes: float, ranks: int, bandwidth: float, latency: float) -> float:
    """A ring allreduce (reduce-scatter + allgather) of `nbytes` over `ranks` ranks:
    2(N-1)/N x bytes over each link and 2(N-1) message latencies."""
    if ranks == 1:
        return 0.0
    return 2 * (ranks - 1) / ranks * nbytes / bandwidth + 2 * (ranks - 1) * latency


def scaling_model(sizes: list[tuple[str, int, int]], steps: dict) -> None:
    """(f): samples/s against rank count on 10 and 100 Gb/s, each rank training one
    model's batch (the global batch grows with N), the step's compute as measured on one
    core here and the allreduce not overlapped with it."""
    print("\n(f) throughput model: each rank trains the model's batch on one core of this "
          "machine (the step time\n    measured here, one process), then a ring allreduce "
          "of the flat buffer, not overlapped;\n    samples/s (allreduce share of the step)")
    for net, bandwidth, latency in NETWORKS:
        print(f"  {net} ({latency * 1e6:.0f} us per message):")
        print(f"  {'model':<24} {'step us':>8} " + " ".join(f"{'N=' + str(n):>14}"
                                                      for n in RANKS))
        for name, floats, _ in sizes:
            if name not in steps:
                print(f"  {name:<24} {'n/a':>8} (not timed with --quick)")
                continue
            t1, b = steps[name]["step_s"], steps[name]["batch"]
            cells = []
            for n in RANKS:
                comm = ring_seconds(4 * floats, n, bandwidth, latency)
                cells.append(f"{n * b / (t1 + comm):>8.0f} ({100 * comm / (t1 + comm):>2.0f}%)")
            print(f"  {name:<24} {t1 * 1e6:>8.1f} " + " ".join(f"{c:>14}" for c in cells))
    print("  (N = 1: no allreduce. The share stops growing past N ~ 8: 2(N-1)/N tends "
          "to 2; latency adds 2(N-1) x the per-message time.)")


def batch_variant(path: str, batch: int, folder: str) -> str:
    """A copy of the v0 spec at `path` with another batch (a file in `folder`)."""
    doc = json.loads(Path(path).read_text())
    doc["model"]["batch"] = batch
    for i in doc["inputs"]:
        i["shape"][0] = batch
    for layer in doc["layers"]:
        if "bias_shape" in layer:
            layer["bias_shape"][0] = batch
    doc["loss"]["target_shape"][0] = batch
    out = Path(folder) / f"{doc['model']['name']}_b{batch}.json"
    out.write_text(json.dumps(doc))
    return str(out)


def diagnose(args: argparse.Namespace, sizes: list[tuple[str, int, int]]) -> None:
    """(e): what bounds the 2-rank speedup, where the step's allreduce time goes, and
    Open MPI's settings."""
    import tempfile

    print("\n(e) diagnosis")
    spec = json.loads(Path(args.spec).read_text())
    batch = spec["model"]["batch"]
    with tempfile.TemporaryDirectory() as tmp:
        half = batch_variant(str(args.spec), batch // 2, tmp)
        cmds = {b: worker("frame-single", "--spec", p, "--threads", "1", "--steps",
                          str(args.steps), "--warmup", str(args.warmup))
                for b, p in ((batch, str(args.spec)), (batch // 2, half))}
        run_json(worker("frame-single", "--spec", half, "--steps", "1", "--warmup", "1"))
        best: dict[int, float] = {}
        for _ in range(max(2, args.repeats // 2)):
            for b, cmd in cmds.items():
                r = run_json(cmd)
                best[b] = min(best.get(b, float("inf")), r["seconds"] / r["steps"])
    print(f"  one process, 1 thread, the fused train step: batch {batch} "
          f"{best[batch] * 1e3:.2f} ms, batch {batch // 2} {best[batch // 2] * 1e3:.2f} ms; "
          f"the 2-rank ceiling (free allreduce, update fused) = "
          f"{best[batch] / best[batch // 2]:.2f}x")
    print("  the 2-rank step taken apart (ms per step; rank 0, rank 1):")
    runs = [run_json(mpirun(2, worker("frame-dp", "--spec", str(args.spec), "--threads",
                                      "1", "--steps", str(args.steps), "--warmup",
                                      str(args.warmup), "--diagnose")))
            for _ in range(max(2, args.repeats // 2))]
    for i, r in enumerate(runs):
        d = r["diagnose"]
        both = ", ".join(f"{v:.2f}" for v in d["compute_both_ms"])
        pure = ", ".join(f"{v:.2f}" for v in d["allreduce_lockstep_ms"])
        print(f"  run {i + 1}: step {1e3 * r['seconds'] / r['steps']:.2f}; compute "
              f"(grad + update) both ranks busy {both}, rank 0 alone "
              f"{d['compute_alone_ms']:.2f}; allreduce alone in a loop {pure}")
        for rank, (g, w, a, u) in enumerate(d["barrier_split_ms"]):
            print(f"    rank {rank} with a barrier first: forward+backward {g:.2f}, wait "
                  f"{w:.2f}, allreduce {a:.2f}, update {u:.2f}")
    wide = next(n for name, n, _ in sizes if name.startswith("wide"))
    print(f"\n  {fmt_bytes(4 * wide)} (2 ranks), median ms: caches warm / after 64 MB of "
          "other writes (as in a step)")
    for label, extra in (("MPI_Allreduce", []),
                         ("MPI_Reduce_scatter + MPI_Allgatherv", ["--rsag"])):
        cells = []
        for evict in ([], ["--evict"]):
            m = run_json(mpirun(2, worker("allreduce", "--sizes", str(wide), "--reps", "200",
                                          *extra, *evict)))["sizes"][0]
            cells.append(f"{m['median_s'] * 1e3:.3f}")
        print(f"  {label:<36} {' / '.join(cells)}")
    print(f"\n  MPI_Allreduce of {fmt_bytes(4 * wide)} (2 ranks, warm) under Open MPI "
          "settings, and frame-run's step with them")
    for label, mca in MCA_VARIANTS:
        try:
            m = run_json(mpirun(2, worker("allreduce", "--sizes", str(wide), "--reps",
                                          "200"), mca))["sizes"][0]
            prof = frame_run_profile(args, mca)
            cells = f"{m['median_s'] * 1e3:7.3f} ms (min {m['min_s'] * 1e3:.3f}); " \
                    f"frame-run step {max(sum(p) for p in prof):.2f} ms, share " \
                    f"{100 * max(share(p) for p in prof):.1f} %"
        except RuntimeError as e:
            cells = f"failed: {str(e).splitlines()[0][:80]}"
        print(f"  {label:<42} {cells}")


if __name__ == "__main__":
    sys.exit(main())
