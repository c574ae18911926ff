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

    @f_dp_grad(args of @f_grad) -> (tensor<(S+1)xf32> {shared}, tensor<Lxf32> {local})
        forward and backward; `shared` = the gradients of the other (replicated)
        parameters, flattened and concatenated in argument order, then the loss;
        `local` = the per-sample parameters' gradients likewise (absent when L = 0)
    @f_dp_update(p1, ..., pn, %shared, %local) -> (p1', ..., pn')
        pi' = frame.sgd_update pi, <gi sliced out of shared or local>, lr / ranks

`shared` is the one flat, contiguous buffer the host sums over the ranks with a single
allreduce (the loss rides along as its last element, so the ranks' losses are summed
by the same call). Every rank computes the mean loss over its own 1/ranks of the
batch, so the sum of the ranks' gradients is `ranks` times the gradient of the mean
over the whole batch; the update divides by `ranks` by using the rate `lr / ranks`
(for a power-of-two rank count that scaling is exact). The local gradients are
scaled the same way: each is the rank's share of the mean, taken over a batch
`ranks` times smaller.
Guarantees: each parameter argument of `@f_dp_update` is donated to its result
(`frame.aliasing_output`), so bufferization updates it in place, as frame-sgd-fuse's
train step does; with `ranks = 1` the update is frame-sgd-fuse's, applied after the
whole backward pass instead of inside it. `@f_dp_grad` carries `frame.dp_grad = "f"`
and `@f_dp_update` carries `frame.dp_update = "f"`, with `frame.dp_ranks` on both.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.dialects import frame
from frame_mlir.passes.common import fail, set_arg_attr, update_function_type
from frame_mlir.passes.frame_autodiff import LAYER, STAGE, param_indices
from frame_mlir.passes.frame_sgd_fuse import learning_rate

#: The argument attribute of a parameter whose row i serves sample i only.
PER_SAMPLE = "frame.per_sample"


def _flat(value: SSAValue) -> tuple[SSAValue, list[frame.ReshapeOp]]:
    """`value` as a 1-D tensor (a reshape op, unless it is 1-D already)."""
    typ = value.type
    assert isinstance(typ, TensorType)
    shape = typ.get_shape()
    if len(shape) == 1:
        return value, []
    op = frame.ReshapeOp(value, TensorType(typ.element_type, [prod(shape)]))
    return op.result, [op]


@dataclass(frozen=True)
class FrameDpSplit(ModulePass):
    """Split `@f_grad` into `@f_dp_grad` (forward and backward into one flat gradient
    buffer) and `@f_dp_update` (the SGD update, `lr / ranks`), for data-parallel
    training with an allreduce between the two."""

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
        if not fn.body.blocks:
            raise fail(self.name, fn, "expected a gradient function with a body, found a "
                       "declaration")
        block = fn.body.blocks[0]
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        pidx = param_indices(fn)
        if len(ret.operands) != len(pidx) + 1:
            raise fail(self.name, ret, f"expected {len(pidx) + 1} results (loss and one "
                       f"gradient per parameter), found {len(ret.operands)}")
        loss, grads = ret.operands[0], list(ret.operands[1:])
        for v, what in [(loss, "the loss"), *((g, f"gradient #{k}") for k, g in
                                              enumerate(grads))]:
            if not (isinstance(v.type, TensorType) and v.type.element_type == f32):
                raise fail(self.name, ret, f"{what}: expected an f32 tensor, found {v.type}")
        if loss.type.get_shape():  # type: ignore[union-attr]
            raise fail(self.name, ret, f"the loss: expected a 0-d tensor, found {loss.type}")
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
        local = [PER_SAMPLE in attrs[i].data for i in pidx]
        # forward + backward: the gradients flattened into `shared` (then the loss) and
        # `local`
        shared_parts: list[SSAValue] = []
        local_parts: list[SSAValue] = []
        new_ops: list = []
        for g, is_local in zip(grads, local, strict=True):
            flat, ops = _flat(g)
            new_ops += ops
            (local_parts if is_local else shared_parts).append(flat)
        loss_flat = frame.ReshapeOp(loss, TensorType(f32, [1]))
        new_ops.append(loss_flat)
        shared_parts.append(loss_flat.result)
        outputs: list[SSAValue] = []
        for parts in (shared_parts, local_parts):
            if not parts:
                continue
            if len(parts) == 1:
                outputs.append(parts[0])
                continue
            cat = frame.ConcatOp(parts, 0)
            new_ops.append(cat)
            outputs.append(cat.result)
        for o in new_ops:
            o.attributes[STAGE] = builtin.StringAttr("gradients")
        Rewriter.insert_op(new_ops, InsertPoint.before(ret))
        Rewriter.replace_op(ret, func.ReturnOp(*outputs))
        base = fn.attributes.pop("frame.grad_of")
        assert isinstance(base, builtin.StringAttr)
        fn.sym_name = builtin.StringAttr(f"{base.data}_dp_grad")
        fn.attributes["frame.dp_grad"] = base
        fn.attributes["frame.dp_ranks"] = builtin.IntegerAttr(self.ranks, 64)
        update_function_type(fn)

        # the update: every parameter from its slice of `shared` or `local`
        ptypes = [block.args[i].type for i in pidx]
        buf_types = [o.type for o in outputs]
        body = Block(arg_types=[*ptypes, *buf_types])
        bufs = body.args[len(pidx):]
        offsets = [0, 0]
        results: list[SSAValue] = []
        for k, (i, is_local) in enumerate(zip(pidx, local, strict=True)):
            typ = ptypes[k]
            assert isinstance(typ, TensorType)
            size = prod(typ.get_shape())
            which = 1 if is_local else 0
            src = bufs[which]  # `shared` always exists: it holds the loss
            begin = offsets[which]
            offsets[which] += size
            ops: list = []
            g_val: SSAValue = src
            if size != prod(src.type.get_shape()):  # type: ignore[attr-defined]
                ops.append(frame.SliceOp(src, 0, begin, begin + size))
                g_val = ops[-1].result
            if len(typ.get_shape()) != 1:
                ops.append(frame.ReshapeOp(g_val, typ))
                g_val = ops[-1].result
            upd = frame.SgdUpdateOp(body.args[k], g_val, lr)
            name = attrs[i].data["frame.param"]
            upd.attributes[LAYER] = name
            upd.attributes[STAGE] = builtin.StringAttr("update")
            ops.append(upd)
            body.add_ops(ops)
            results.append(upd.result)
        body.add_op(func.ReturnOp(*results))
        update = func.FuncOp(f"{base.data}_dp_update",
                             ([*ptypes, *buf_types], [r.type for r in results]),
                             Region(body))
        for k, i in enumerate(pidx):
            update.body.blocks[0].args[k].name_hint = block.args[i].name_hint
            set_arg_attr(update, k, "frame.param", attrs[i].data["frame.param"])
            set_arg_attr(update, k, "frame.aliasing_output", builtin.IntegerAttr(k, 64))
        for a, n in zip(bufs, ("shared", "local")[:len(bufs)], strict=True):
            a.name_hint = n
        update.attributes["frame.dp_update"] = base
        update.attributes["frame.dp_ranks"] = builtin.IntegerAttr(self.ranks, 64)
        return update

