"""Data-parallel training of a v0 spec: each rank trains its share of the batch with
the step split by frame-dp-split, the ranks' gradients summed by one allreduce.

Rank r of N takes rows [r*b, (r+1)*b) of the data input and the target, b = batch / N
(`distributed.local_batch`: DP-002 unless N divides the batch), and compiles the spec
with batch b. Every rank draws the global spec's initial values (the same seed, so the
same draws as one process) and keeps its share of them:

* the weights whole: every rank holds them, and the allreduce keeps them equal;
* the `[batch, out]` biases of v0 by rows (`frame.per_sample`): row i only ever meets
  sample i, so its gradient is complete on the rank that holds the sample and is not
  exchanged.

One step is `@f_dp_grad` (forward and backward, writing the weights' gradients and
the loss into one flat buffer, the biases' gradients into buffers of their own),
`MPI_Allreduce` of the flat buffer, then `@f_dp_update` (SGD with lr / N on the
summed gradients, read from the flat buffer). The loss printed is the
summed loss / N: the mean over the whole batch.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from frame_mlir.backend.llvm.packed import bound_call
from frame_mlir.frontends.spec.initial_values import InitialValues
from frame_mlir.frontends.spec.spec import InputSpec, ModelSpec
from frame_mlir.frontends.spec.trainer import CompiledSpec, check_host_memory
from frame_mlir.runtime.distributed import Job, flat_buffer, local_batch, rank_rows
from frame_mlir.runtime.executable import FunctionSignature, aligned_empty


def local_spec(spec: ModelSpec, ranks: int) -> ModelSpec:
    """`spec` with the batch of one rank (DP-002 unless `ranks` divides it): what every
    rank compiles."""
    b = local_batch(spec.batch, ranks, "/model/batch")
    if ranks == 1:
        return spec
    return dataclasses.replace(
        spec, batch=b,
        inputs=tuple(InputSpec(i.name, (b, *i.shape[1:])) for i in spec.inputs),
        layers=tuple(dataclasses.replace(
            layer, bias_shape=None if layer.bias_shape is None else (b, layer.bias_shape[1]))
            for layer in spec.layers),
        loss=dataclasses.replace(spec.loss,
                                 target_shape=(b, *spec.loss.target_shape[1:])))


def per_sample_params(spec: ModelSpec) -> set[str]:
    """The parameters held by rows (one per sample): the v0 biases."""
    return {layer.bias_name for layer in spec.layers if layer.has_bias}


class DpSession:
    """Host buffers of one rank bound to the split step; `run(n)` trains n steps."""

    def __init__(self, compiled: CompiledSpec, values: InitialValues, job: Job,
                 global_spec: ModelSpec):
        assert compiled.data_parallel
        self.compiled, self.job = compiled, job
        check_host_memory(compiled)
        r, n = job.rank, job.size
        self.per_sample = per_sample_params(global_spec)
        self.data = [rank_rows(np.ascontiguousarray(a, dtype=np.float32), r, n)
                     for a in (*values.inputs.values(), values.target)]
        self.param_buffers: dict[str, np.ndarray] = {}
        self.set_params(dict(values.params))
        grad, update = compiled.grad_sig, compiled.update_sig
        self.outputs, self.shared = self._layout(grad)
        sigs = [grad, update, compiled.forward_sig, compiled.predict_sig]
        self.arena = aligned_empty(max([s.arena_size for s in sigs] + [64]))
        (out,) = compiled.predict_sig.of_kind("output")
        self.prediction = np.zeros(out.shape, dtype=np.float32)
        # The buffers stay the same from step to step: arguments packed once.
        self._grad = bound_call(compiled.executable.function(grad.name),
                                self._pointers(grad, self.data, self.outputs))
        self._update = bound_call(
            compiled.executable.function(update.name),
            self._pointers(update, [self.outputs[k] for k in sorted(self.outputs) if k > 0],
                           {}))
        self._predict = bound_call(compiled.predict_fn,
                                   self._pointers(compiled.predict_sig, self.data[:-1],
                                                  {0: self.prediction}))
        self.scale = np.float32(n)
        #: seconds spent in (forward + backward, allreduce, update) so far
        self.seconds = np.zeros(3)

    def _layout(self, grad: FunctionSignature) -> tuple[dict[int, np.ndarray], np.ndarray]:
        """The buffers `@f_dp_grad` writes its results into (result index -> array) and
        the flat buffer the ranks sum: the replicated parameters' gradients in argument
        order, then the loss, each a 64-byte aligned segment of it (`frame.dp_exchange`
        of frame-dp-split); the per-sample parameters' gradients get buffers of their
        own. The kernels write into the segments and the update reads from them, so the
        exchange copies nothing."""
        outs = {a.result_index: a for a in grad.of_kind("output")}
        params = [a.name for a in grad.of_kind("param")]
        shared = [k + 1 for k, n in enumerate(params) if n not in self.per_sample] + [0]
        flat, views = flat_buffer([tuple(outs[r].shape) for r in shared])
        buffers = dict(zip(shared, views, strict=True))
        for r, a in outs.items():
            if r not in buffers:
                buffers[r] = np.zeros(a.shape, dtype=a.dtype)
        return buffers, flat

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        """Take the global parameters: whole weights, this rank's rows of the biases."""
        for name, a in params.items():
            a = np.ascontiguousarray(a, dtype=np.float32)
            if name in self.per_sample:
                a = rank_rows(a, self.job.rank, self.job.size)
            if name in self.param_buffers:
                self.param_buffers[name][...] = a  # the bound pointers stay valid
            else:
                self.param_buffers[name] = a.copy()

    def _pointers(self, sig: FunctionSignature, inputs: list[np.ndarray],
                  outputs: dict[int, np.ndarray]) -> list[int]:
        ptrs = []
        it = iter(inputs)
        for a in sig.args:
            if a.kind == "arena":
                buf = self.arena
            elif a.kind == "output":
                assert a.result_index is not None
                buf = outputs[a.result_index]
            elif a.kind == "param":
                buf = self.param_buffers[a.name]
            elif a.kind == "input":
                buf = next(it)
            else:
                raise ValueError(f"@{sig.name}: unexpected argument kind {a.kind}")
            if a.kind != "arena" and buf.nbytes != a.nbytes:
                raise ValueError(f"@{sig.name}: buffer '{a.name}' has {buf.nbytes} bytes, "
                                 f"the compiled function expects {a.nbytes}")
            ptrs.append(buf.ctypes.data)
        return ptrs

    def step(self, index: int) -> float:
        """One step: gradients, the allreduce, the update; returns the loss of the
        whole batch before the update."""
        t0 = time.perf_counter()
        self._grad()
        t1 = time.perf_counter()
        self.job.allreduce_sum(self.shared, f"the gradient allreduce of step {index}")
        t2 = time.perf_counter()
        self._update()
        t3 = time.perf_counter()
        self.seconds += np.array([t1 - t0, t2 - t1, t3 - t2])
        return float(self.outputs[0] / self.scale)

    def profile_line(self, steps: int) -> str:
        """Where one step's time went on this rank (`FRAME_DP_PROFILE=1` prints it)."""
        from frame_mlir.runtime.distributed import profile_line

        return profile_line(self.job, steps, self.seconds, self.shared.nbytes)

    def run(self, first: int, steps: int) -> np.ndarray:
        """Steps `first` .. `first + steps - 1`; their losses."""
        return np.array([self.step(first + i) for i in range(steps)], dtype=np.float32)

    def params(self) -> dict[str, np.ndarray] | None:
        """The global parameters on rank 0 (None on the others): a collective."""
        out: dict[str, np.ndarray] | None = {} if self.job.rank == 0 else None
        for name in self.compiled.param_names:
            a = self.param_buffers[name]
            if name in self.per_sample:
                a = self.job.gather_rows(a, f"gathering parameter '{name}'")
            if out is not None:
                assert a is not None
                out[name] = a.copy()
        return out

    def predict(self) -> np.ndarray | None:
        """The prediction layer's output for the whole batch on rank 0 (None on the
        others): a collective."""
        self._predict()
        return self.job.gather_rows(self.prediction, "gathering the predictions")
