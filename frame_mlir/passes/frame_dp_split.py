"""frame-dp-split: split the train step around the gradient exchange of data-parallel
training.

Expects: `@f_grad` functions made by frame-autodiff, returning `(loss, g1, ..., gn)`
for the parameters p1..pn (arguments marked `frame.param`), the loss a 0-d f32 tensor.
A parameter argument may be marked `frame.per_sample`: its row i is used by sample i
of the batch only (the v0 spec's `[batch, out]` biases), so a rank that holds a slice
of the batch holds the matching rows of it, and their gradient is complete on that
rank with no exchange.
Does: replaces `@f_grad` with two functions, the halves of the train step that run
either side of the allreduce:

    @f_dp_grad(args of @f_grad) -> (loss, g1, ..., gn)
        forward and backward, as @f_grad (each result written to a buffer of the
        host's: the host lays the loss and the replicated parameters' gradients out
        in one flat, contiguous buffer, see `frame.dp_exchange`)
    @f_dp_update(p1, ..., pn, g1, ..., gn) -> (p1', ..., pn')
        pi' = frame.sgd_update pi, gi, lr / ranks

`frame.dp_exchange` on `@f_dp_grad` lists, per result, 1 where the ranks sum it (the
loss and the gradients of replicated parameters) and 0 where it stays on the rank
(per-sample parameters). The host allocates the summed results as consecutive
segments of one flat buffer (each 64-byte aligned, the loss last), so that one
allreduce on that buffer exchanges them all, and nothing is copied: the gradient
kernels write into it, and the update reads from it. Every rank computes the mean
loss over its own 1/ranks of the batch, so the sum of the ranks' gradients is `ranks`
times the gradient of the mean over the whole batch; the update divides by `ranks`
by using the rate `lr / ranks` (for a power-of-two rank count that scaling is exact).
The local gradients are scaled the same way: each is the rank's share of the mean,
taken over a batch `ranks` times smaller.
Guarantees: each parameter argument of `@f_dp_update` is donated to its result
(`frame.aliasing_output`), so bufferization updates it in place, as frame-sgd-fuse's
train step does; with `ranks = 1` the update is frame-sgd-fuse's, applied after the
whole backward pass as frame-sgd-fuse places it too (the same bits). `@f_dp_grad`
carries `frame.dp_grad = "f"` and `@f_dp_update` carries `frame.dp_update = "f"`, with
`frame.dp_ranks` on both.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import DenseArrayBase, TensorType, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.optim.fused import sgd_update
from frame_mlir.passes.common import fail, set_arg_attr
from frame_mlir.passes.frame_autodiff import LAYER, STAGE
from frame_mlir.passes.frame_sgd_fuse import gradient_function, learning_rate

#: The argument attribute of a parameter whose row i serves sample i only.
PER_SAMPLE = "frame.per_sample"


@dataclass(frozen=True)
class FrameDpSplit(ModulePass):
    """Split `@f_grad` into `@f_dp_grad` (forward and backward: the loss and the
    gradients) and `@f_dp_update` (the SGD update at `lr / ranks`), for data-parallel
    training with an allreduce of the gradients between the two."""

    name = "frame-dp-split"

    #: The learning rate, as frame-sgd-fuse takes it (a str too: `lr=1e-3`).
    lr: float | int | str = 0.01
    #: How many ranks share each batch (>= 1).
    ranks: int = 1

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        lr = learning_rate(self.name, self.lr)
        if not isinstance(self.ranks, int) or self.ranks < 1:
            raise fail(self.name, None, f"ranks expected an integer >= 1, found {self.ranks}")
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and "frame.grad_of" in fn.attributes:
                update = self._split(fn, lr / self.ranks)
                Rewriter.insert_op(update, InsertPoint.after(fn))

    def _split(self, fn: func.FuncOp, lr: float) -> func.FuncOp:
        block, ret, pidx = gradient_function(self.name, fn)
        loss, grads = ret.operands[0], list(ret.operands[1:])
        for v, what in [(loss, "the loss"), *((g, f"gradient #{k}") for k, g in
                                              enumerate(grads))]:
            if not (isinstance(v.type, TensorType) and v.type.element_type == f32):
                raise fail(self.name, ret, f"{what}: expected an f32 tensor, found {v.type}")
        if loss.type.get_shape():  # type: ignore[union-attr]
            raise fail(self.name, ret, f"the loss: expected a 0-d tensor, found {loss.type}")
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
        local = [PER_SAMPLE in attrs[i].data for i in pidx]
        base = fn.attributes.pop("frame.grad_of")
        assert isinstance(base, builtin.StringAttr)
        fn.sym_name = builtin.StringAttr(f"{base.data}_dp_grad")
        fn.attributes["frame.dp_grad"] = base
        fn.attributes["frame.dp_ranks"] = builtin.IntegerAttr(self.ranks, 64)
        fn.attributes["frame.dp_exchange"] = DenseArrayBase.from_list(
            builtin.i64, [1, *(0 if x else 1 for x in local)])

        # the update: every parameter from its gradient, in place
        ptypes = [block.args[i].type for i in pidx]
        body = Block(arg_types=[*ptypes, *(g.type for g in grads)])
        results: list[SSAValue] = []
        for k, i in enumerate(pidx):
            upd = sgd_update(body.args[k], body.args[len(pidx) + k], lr)
            upd.attributes[LAYER] = attrs[i].data["frame.param"]
            upd.attributes[STAGE] = builtin.StringAttr("update")
            body.add_op(upd)
            results.append(upd.result)
        body.add_op(func.ReturnOp(*results))
        update = func.FuncOp(f"{base.data}_dp_update",
                             ([*ptypes, *(g.type for g in grads)], [r.type for r in results]),
                             Region(body))
        for k, i in enumerate(pidx):
            name = block.args[i].name_hint
            body.args[k].name_hint = name
            body.args[len(pidx) + k].name_hint = f"{name}_grad" if name else None
            set_arg_attr(update, k, "frame.param", attrs[i].data["frame.param"])
            set_arg_attr(update, k, "frame.aliasing_output", builtin.IntegerAttr(k, 64))
        update.attributes["frame.dp_update"] = base
        update.attributes["frame.dp_ranks"] = builtin.IntegerAttr(self.ranks, 64)
        return update
