"""Data-parallel training of a JSON network over MPI (`frame-run NET --data-parallel`).

    mpirun -n 2 frame-run net.json --data digits --epochs 2 --data-parallel

The batch split: the network's global batch B (the inputs' leading dim) is cut evenly,
rank r of N taking rows [r*B/N, (r+1)*B/N) of every global batch the one-process
DataLoader order produces (`frontends/network/data.py` `batches`, shuffled by seed and
epoch), so the samples and their order are one process's (`rank_feed`). N must divide
B (DP-002, `distributed.local_batch`). Each rank compiles the network at batch B/N
(`local_network_spec`); the parameters' shapes do not depend on the batch, so every
rank draws one process's initial values from the seed.

One step (`DpTrainer.step`):

1. the compiled gradient function (forward and backward) writes the parameter
   gradients, the loss outputs and the new BatchNorm running statistics straight into
   ONE flat float32 buffer -- its out-buffers (and the statistics' in-place buffers)
   are views into it, so nothing is copied;
2. one `MPI_Allreduce` sums that buffer over the ranks;
3. the compiled update function (`frame_mlir.optim.build_update_function` with
   `grad_scale = 1/N`) scales the summed gradients by 1/N as its first op -- the mean over the
   global batch, taken in the compiled code and exact for a power-of-two N -- then
   runs the solver, and scales the summed running statistics by 1/N (their mean).

How the ranks' losses combine: a loss that is a mean over the batch (SoftmaxWithLoss,
NLLLoss / MSELoss `reduce: mean`, a Reduction `mean` over the batch axis) is, over the
global batch, the mean of the ranks' local means; a sum over the batch (`reduce:
sum`, a Reduction `sum` over it) is the sum of the local sums, so its weight is
multiplied by N in the ranks' objective (after the 1/N it is the sum again); a loss
that does not depend on the batch (a penalty on a Parameter) is the same on every rank
and is averaged. Any other loss cannot be combined and is refused before compiling
(`loss_reductions`). The printed loss is the global batch's: the summed loss values
times 1/N (means) or 1 (sums), weighted -- one scalar computed on the host.

BatchNorm: in training mode each rank normalises with its local batch's statistics
(as PyTorch's DistributedDataParallel without SyncBatchNorm does), so a network with
BatchNorm does not train exactly as one process does; the running statistics are
averaged over the ranks every step (they ride in the flat buffer), which keeps the
ranks' parameters identical. The format has no Dropout, so there is no random mask
to keep in step. With one rank nothing of this is emitted: the compiled code and the
results are one process's, bit for bit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from frame_mlir.frontends.network.loader import InputSpec, NetworkSpec, OutputSpec
from frame_mlir.runtime.distributed import Job, flat_buffer, local_batch, rank_feed
from frame_mlir.runtime.executable import BoundFunction
from frame_mlir.runtime.training import OptimizerState, TrainerState

if TYPE_CHECKING:
    from frame_mlir.frontends.network.model import SGD, Adam, Network

__all__ = ["DpTrainer", "batch_norm_operators", "dp_accuracy", "local_network_spec",
           "loss_reductions", "rank_feed"]



def _batch_dependent(spec: NetworkSpec) -> set[str]:
    """The tensors (SSA value names) computed from a network input: the ones with a row
    per sample. A tensor computed from parameters only is the same on every rank."""
    dependent = {i.name for i in spec.inputs}
    for op in spec.operators:
        if any(v in dependent for v in op.inputs):
            dependent.update(op.outputs)
    return dependent


def _reduces_batch_axis(options: Mapping[str, Any]) -> bool:
    """Whether a Reduction's axes include the batch axis 0 (all axes, `start_axis` 0, or
    `dims` naming 0; a negative dim names 0 only for a rank we do not know here, so it
    is not taken as the batch axis)."""
    dims = options["dims"]
    if dims is None:
        return options["start_axis"] == 0
    return 0 in dims


def loss_reductions(spec: NetworkSpec) -> dict[str, str]:
    """How each loss output of `spec` combines over the ranks: "mean" (the global
    value is the mean of the ranks' values: a mean over the batch, or a loss that does
    not depend on the batch) or "sum" (the sum of the ranks' values: a sum over the
    batch). ValueError for a loss that is neither: its ranks' values do not give the
    global batch's."""
    producers = {v: op for op in spec.operators for v in op.outputs}
    dependent = _batch_dependent(spec)
    out: dict[str, str] = {}
    for o in spec.losses:
        op = producers.get(o.value)
        kind: str | None = None
        if o.value not in dependent:
            kind = "mean"  # the same value on every rank: their mean is that value
        elif op is None:
            kind = None  # a network input as the loss: no reduction over the batch
        elif op.type == "SoftmaxWithLoss":
            kind = "mean"
        elif op.type in ("NLLLoss", "MSELoss") and op.options["reduce"] in ("mean", "sum"):
            kind = str(op.options["reduce"])
        elif op.type == "Reduction" and _reduces_batch_axis(op.options):
            kind = "mean" if op.options["method"] == "mean" else "sum"
        if kind is None:
            what = f"{op.type} '{op.name}'" if op is not None else "a network input"
            raise ValueError(
                f"--data-parallel: the loss output '{o.name}' ({what}) is neither a mean "
                "nor a sum over the batch, so the ranks' losses do not give the global "
                "batch's: data-parallel training needs losses of SoftmaxWithLoss, "
                "NLLLoss or MSELoss (reduce mean or sum), or a Reduction over the batch "
                "axis")
        out[o.name] = kind
    return out


def local_network_spec(spec: NetworkSpec, ranks: int,
                       reductions: Mapping[str, str]) -> NetworkSpec:
    """`spec` as one of `ranks` ranks compiles it: every input's batch dim divided by
    `ranks` (DP-002 unless it divides evenly), and the weight of each loss that is a
    sum over the batch multiplied by `ranks` (the update's 1/N then gives the sum back).
    One rank: `spec` itself."""
    if not spec.inputs:
        raise ValueError("--data-parallel: the network has no inputs, so there is no "
                         "batch to split over the ranks")
    b = local_batch(spec.inputs[0].shape[0], ranks, "/inputs/0/shape/0")
    if ranks == 1:
        return spec
    return dataclasses.replace(
        spec,
        inputs=tuple(InputSpec(i.name, (b, *i.shape[1:]), i.dtype) for i in spec.inputs),
        outputs=tuple(
            OutputSpec(o.name, o.value, o.loss_weight * ranks)
            if o.loss_weight is not None and reductions.get(o.name) == "sum" else o
            for o in spec.outputs))


def batch_norm_operators(spec: NetworkSpec) -> list[str]:
    """The BatchNorm operators that normalise with the batch's statistics in training
    (all but `use_global_stats` ones): with several ranks, each rank's local batch."""
    return [op.name for op in spec.operators
            if op.type == "BatchNorm" and not op.options["use_global_stats"]]


class DpTrainer(TrainerState):
    """A solver's steps on one rank's share of every global batch, the gradients summed
    over the job's ranks: the interface of `Trainer` (`solver`, `t`, `state`), but
    `step` returns the global batch's weighted loss.

    `network` is this rank's network (compiled at the local batch, `local_network_spec`);
    `reductions` says how each loss output combines (`loss_reductions`); `weights` are
    the global network's loss weights (the printed loss uses them)."""

    def __init__(self, network: Network, solver: SGD | Adam, job: Job,
                 reductions: Mapping[str, str], weights: Mapping[str, float]):
        from frame_mlir import optim
        from frame_mlir.frontends.network.model import SGD, Adam, update_config

        if not isinstance(solver, SGD | Adam):
            raise TypeError(f"trainer: expected frame_mlir.network.SGD or Adam, found "
                            f"{type(solver).__name__}")
        solver.check()
        self.network, self.solver, self.job = network, solver, job
        names = network.trainable
        if not names:
            raise ValueError("trainer: the network has no trainable parameter")
        built, _, grad = network._train()
        if grad is None:
            raise ValueError("trainer: the network has no loss output: there is nothing "
                             "to differentiate")
        self._built, self._grad = built, grad
        n = job.size
        self.ranks = n
        # The flat buffer's segments: (kind, name, result index or None, shape).
        first = len(built.outputs) + 1 + len(built.stats)  # see Network._gradient_buffers
        segments: list[tuple[str, str, int | None, tuple[int, ...]]] = []
        segments += [("grad", p, first + k, tuple(grad.outputs[first + k].shape))
                     for k, p in enumerate(names)]
        losses = [(i, o.name) for i, o in enumerate(network.spec.outputs)
                  if o.loss_weight is not None]
        segments += [("loss", name, i, tuple(grad.outputs[i].shape)) for i, name in losses]
        segments += [("stat", s, None, tuple(network._params[s].shape)) for s in built.stats]
        #: The buffer the allreduce sums: gradients, loss values, running statistics.
        self.flat, views = flat_buffer([shape for _, _, _, shape in segments])
        self._loss_views: list[tuple[str, np.ndarray]] = []
        for (kind, name, index, _), view in zip(segments, views, strict=True):
            if kind == "stat":  # the statistics live in the buffer from now on
                np.copyto(view, network._params[name])
                network._params[name] = view
            else:
                assert index is not None and grad.outputs[index].dtype == np.float32
                grad.outputs[index] = view  # the compiled code writes it in place
                if kind == "loss":
                    self._loss_views.append((name, view))
        # How each summed loss value becomes the global batch's: 1/N for a mean.
        self._loss_terms = [(view, float(weights[name]), reductions[name] == "mean")
                            for name, view in self._loss_views]
        shapes = [(p, network._params[p].shape) for p in names]
        stats = [(s, network._params[s].shape) for s in built.stats]
        fn_name = f"{network._train_fn.fn.sym_name.data}_{solver.kind}"
        # One rank: exactly one process's update function (no scale, no statistics),
        # so `--data-parallel` on one rank gives one process's bits.
        fn = optim.build_update_function(fn_name, update_config(solver.kind), shapes,
                                         grad_scale=None if n == 1 else 1.0 / n,
                                         stats=() if n == 1 else stats)
        ex = network._compile([fn])
        self._update = BoundFunction(ex, ex.signatures[fn_name])
        self._ex = ex
        #: the solver's state buffers, hyperparameters and step count
        self.optimizer = OptimizerState(optim.state_names(update_config(solver.kind)),
                                        dict(shapes), len(solver.hyper(1)))
        self._grad_views = [grad.outputs[first + k] for k in range(len(names))]
        self._stats = list(built.stats) if n > 1 else []
        #: seconds in (forward + backward, allreduce, update) so far
        self.seconds = np.zeros(3)

    def step(self, feed: Mapping[str, Any]) -> float:
        """One step on this rank's `feed` (its rows of the global batch): gradients, the
        allreduce, the update. Returns the global batch's weighted loss before the
        update (the same on every rank)."""
        self.solver.check()
        net = self.network
        t0 = time.perf_counter()
        net._feed(feed)
        self._grad.call(net._buffers(self._built.roles))
        t1 = time.perf_counter()
        self.job.allreduce_sum(self.flat, f"the gradient allreduce of step {self.t + 1}")
        t2 = time.perf_counter()
        self.optimizer.t += 1
        self.optimizer.set_hyper(self.solver.hyper(self.t))
        self._update.call(self.optimizer.update_args(
            net._params, self._grad_views, extra=[net._params[s] for s in self._stats]))
        self.seconds += np.array([t1 - t0, t2 - t1, time.perf_counter() - t2])
        loss = 0.0
        for view, weight, mean in self._loss_terms:
            value = float(np.sum(view, dtype=np.float64))  # a loss of several elements
            loss += weight * (value / self.ranks if mean else value)
        return loss

    def profile_line(self, steps: int) -> str:
        """Where one step's time went on this rank (`FRAME_DP_PROFILE=1` prints it)."""
        from frame_mlir.runtime.distributed import profile_line

        return profile_line(self.job, steps, self.seconds, self.flat.nbytes)


def dp_accuracy(network: Network, split: Any, decls: list[Any], pair: tuple[str, str],
                job: Job) -> float:
    """Held-out accuracy in test mode over the split's full global batches (in order),
    each rank scoring its rows of every batch and one allreduce adding the counts:
    the samples one process scores, so the same accuracy (every rank takes part)."""
    from frame_mlir.frontends.network.data import batches

    scores_name, label_name = pair
    feeds, _ = batches(split, decls, shuffle=False, seed=0, epoch=0)
    counts = np.zeros(2, dtype=np.int64)  # correct, total
    for feed in feeds:
        local = rank_feed(feed, job.rank, job.size)
        scores = network.forward(local, test_mode=True)[scores_name]
        pred = scores.reshape(scores.shape[0], -1).argmax(axis=1)
        counts[0] += int((pred == local[label_name].reshape(-1)).sum())
        counts[1] += pred.size
    job.allreduce_sum(counts, "the held-out accuracy counts")
    return int(counts[0]) / max(int(counts[1]), 1)
