"""frame-autodiff: reverse-mode differentiation of frame functions, IR to IR.

Expects: functions in static-shaped frame IR whose parameters are marked with
the argument attribute `frame.param = "<name>"` and which return a single scalar
tensor, the loss -- or several results and `frame.loss_index = k` naming the loss.
Does: for each such `@f`, adds `@f_grad` with the same arguments that returns
`(loss, d loss/d p1, ..., d loss/d pn)` in parameter order (with `frame.loss_index`:
every result of `@f`, then the gradients). The backward ops are
ordinary frame ops built by the VJP table (`vjp_rules.VJP_RULES`), walking the
forward ops in reverse; adjoints of values used several times are summed.
Only values that depend on a parameter get adjoints (activity analysis), so no
gradient is computed for data inputs or the target.
Guarantees: `@f` is left unchanged; `@f_grad` carries `frame.grad_of = "f"`.
Fails with `no gradient rule for <op>` for an op outside the table, on unranked
tensors (run frame-shape-inference first) and on ops with regions. Running it again
is a no-op: a function whose `@f_grad` exists is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.common import fail, update_function_type
from frame_mlir.passes.vjp_rules import STEP_VJP_RULES, VJP_RULES

#: Functions carrying one of these are not differentiated: gradients and train
#: steps already are, and `frame.inference` marks forward-only functions.
SKIP_ATTRS = ("frame.grad_of", "frame.train_step", "frame.inference")

LAYER, STAGE = "frame.layer", "frame.stage"
#: Function attribute naming which result is the loss (default: the only result).
LOSS_INDEX = "frame.loss_index"


def param_indices(fn: func.FuncOp) -> list[int]:
    """Indices of the arguments marked `frame.param`, in argument order."""
    if fn.arg_attrs is None:
        return []
    return [i for i, d in enumerate(fn.arg_attrs.data) if "frame.param" in d.data]


@dataclass(frozen=True)
class FrameAutodiff(ModulePass):
    """Add a `<f>_grad` function returning the loss and its parameter gradients."""

    name = "frame-autodiff"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        functions = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        done = {f.attributes["frame.grad_of"].data for f in functions.values()  # type: ignore[attr-defined]
                if isinstance(f.attributes.get("frame.grad_of"), builtin.StringAttr)}
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and fn.body.blocks and param_indices(fn):
                if any(k in fn.attributes for k in SKIP_ATTRS):
                    continue
                name = fn.sym_name.data
                if name in done:  # differentiated by an earlier run: nothing to do
                    continue
                if f"{name}_grad" in functions:
                    raise fail(self.name, fn, f"cannot add @{name}_grad: the module already "
                               f"has a function of that name that is not its gradient")
                grad_fn = fn.clone()
                # In the module while it is differentiated: a VJP rule may look up or
                # add functions (frame.scan's step and its VJP).
                Rewriter.insert_op(grad_fn, InsertPoint.after(fn))
                self._differentiate(fn, grad_fn)

    def _differentiate(self, fn: func.FuncOp, grad_fn: func.FuncOp) -> None:
        grad_fn.sym_name = builtin.StringAttr(f"{fn.sym_name.data}_grad")
        grad_fn.attributes["frame.grad_of"] = builtin.StringAttr(fn.sym_name.data)
        block = grad_fn.body.blocks[0]
        if len(grad_fn.body.blocks) != 1:
            raise fail(self.name, fn, "expected a single-block function")
        user_fn = fn.sym_name.data
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        loss_attr = fn.attributes.get(LOSS_INDEX)
        if isinstance(loss_attr, builtin.IntegerAttr):
            loss_index = loss_attr.value.data
            if not 0 <= loss_index < len(ret.operands):
                raise fail(self.name, ret, f"loss index {loss_index} is out of range "
                           f"(the function has {len(ret.operands)} results)", user_fn)
        elif len(ret.operands) == 1:
            loss_index = 0
        else:
            raise fail(self.name, ret, "expected exactly one result (the loss), or the "
                       f"attribute {LOSS_INDEX} naming it", user_fn)
        loss = ret.operands[loss_index]
        loss_shape = frame.static_shape(loss)
        if loss_shape is None or prod(loss_shape) != 1:
            raise fail(self.name, ret, "expected the loss to be a scalar (rank 0, or one "
                       f"element), found {loss.type}", user_fn)
        params = [block.args[i] for i in param_indices(grad_fn)]
        for o in block.ops:
            # A region could use an active value without it being an operand: the
            # activity analysis below would miss it and return a zero gradient.
            if o.regions:
                raise fail(self.name, o, "an op with regions cannot be differentiated",
                           user_fn)
            for v in (*o.operands, *o.results):
                if isinstance(v.type, builtin.UnrankedTensorType):
                    raise fail(self.name, o, f"expected static shapes, found {v.type} "
                               f"(run frame-shape-inference first)", user_fn)

        # Activity: values reachable from a parameter need adjoints.
        active: set[SSAValue] = set(params)
        forward_ops = [o for o in block.ops if o is not ret]
        for o in forward_ops:
            if any(v in active for v in o.operands):
                active.update(o.results)

        for o in forward_ops:
            o.attributes[STAGE] = builtin.StringAttr("forward")
        # Backward ops say which forward op (layer) they differentiate.
        provenance: dict[str, builtin.StringAttr] = {}

        def emit(new_op: Operation) -> SSAValue:
            new_op.attributes.update(provenance)
            new_op.attributes[STAGE] = builtin.StringAttr("backward")
            Rewriter.insert_op(new_op, InsertPoint.before(ret))
            return new_op.results[0]

        seeds: dict[SSAValue, SSAValue] = {}
        if loss in active:
            owner = loss.owner
            if isinstance(owner, Operation) and isinstance(
                    layer := owner.attributes.get(LAYER), builtin.StringAttr):
                provenance[LAYER] = layer
            seeds[loss] = emit(frame.ConstantOp(1.0, result_type=loss.type))
        adjoint = reverse_sweep(emit, forward_ops, params, seeds, user_fn, provenance,
                                self.name)

        # [loss, grads...]; with several results, [every result..., grads...].
        outputs: list[SSAValue] = list(ret.operands) if loss_attr is not None else [loss]
        for i, p in zip(param_indices(grad_fn), params, strict=True):
            provenance.clear()
            provenance[LAYER] = grad_fn.arg_attrs.data[i].data["frame.param"]  # type: ignore
            g = adjoint.get(p)
            if g is None:  # a parameter the loss does not depend on
                g = emit(frame.ConstantOp(0.0, result_type=p.type))
            outputs.append(g)
        Rewriter.replace_op(ret, func.ReturnOp(*outputs))
        update_function_type(grad_fn)


def reverse_sweep(emit: Callable[[Operation], SSAValue], forward_ops: Sequence[Operation],
                  roots: Sequence[SSAValue], seeds: dict[SSAValue, SSAValue], fn_name: str,
                  provenance: dict[str, builtin.StringAttr] | None = None,
                  pass_name: str = "frame-autodiff") -> dict[SSAValue, SSAValue]:
    """The adjoints of the values that depend on `roots`, walking `forward_ops` in
    reverse from the adjoints in `seeds` with the VJP table; `emit` inserts each
    backward op. Adjoints of values used several times are summed."""
    provenance = {} if provenance is None else provenance
    active: set[SSAValue] = set(roots)
    for o in forward_ops:
        if any(v in active for v in o.operands):
            active.update(o.results)
    adjoint = {v: g for v, g in seeds.items() if v in active}
    for o in reversed(forward_ops):
        if not o.results or o.results[0] not in adjoint:
            continue
        need = [v in active for v in o.operands]
        if not any(need):
            continue
        provenance.clear()
        if isinstance(layer := o.attributes.get(LAYER), builtin.StringAttr):
            provenance[LAYER] = layer
        rule = VJP_RULES.get(type(o))
        if rule is not None:
            grads = rule(emit, o, adjoint[o.results[0]], need)
        elif (step_rule := STEP_VJP_RULES.get(type(o))) is not None:
            grads = step_rule(emit, o, adjoint[o.results[0]], need, step_vjp_function)
        else:
            raise fail(pass_name, o, f"no gradient rule for {o.name}", fn_name)
        for value, g in zip(o.operands, grads, strict=True):
            if g is None or value not in active:
                continue
            if value in adjoint:
                g = emit(frame.AddOp(adjoint[value], g))
            adjoint[value] = g
    return adjoint


# --- the VJP of a scan's step function (frame.scan's rule calls it: STEP_VJP_RULES) ---


def _flat(emit: Callable[[Operation], SSAValue], v: SSAValue) -> SSAValue:
    shape = frame.static_shape(v) or ()
    return emit(frame.ReshapeOp(v, frame.tensor_type((prod(shape),), frame.element_type(v))))


def step_vjp_function(step: func.FuncOp, name: str, n_rows: int) -> tuple[func.FuncOp, list[int]]:
    """`@name(packed, carry, rows..., dy_row, invariants...) -> packed'`: one reverse
    step, in the scan's argument order (carry, rows, invariants) with the carry
    `packed` = [d carry, d rows..., d invariants...] flattened and concatenated and
    the step's carry and the output's adjoint dy as rows. Only the d carry part of
    `packed` is read (the adjoint arriving from step t+1), to which dy_row is added;
    the result packs this step's adjoints. Also returns the packed sizes."""
    arg_types = list(step.function_type.inputs.data)
    carry_t = step.function_type.outputs.data[0]
    sizes = [prod(frame.static_shape(t) or ()) for t in arg_types]
    g = Graph(name)

    def arg(t: Any, hint: str) -> SSAValue:
        return g.add_input(frame.static_shape(t) or (), hint, elem=frame.element_type(t))
    packed = g.add_input((sum(sizes),), "packed", elem=frame.element_type(carry_t))
    args = [arg(t, f"a{i}") for i, t in enumerate(arg_types[:1 + n_rows])]
    dy = arg(carry_t, "dy")
    args += [arg(t, f"a{i}") for i, t in enumerate(arg_types[1 + n_rows:], 1 + n_rows)]
    # The step's body, inlined on the arguments.
    mapping: dict[SSAValue, SSAValue] = dict(zip(step.body.blocks[0].args, args, strict=True))
    ops: list[Operation] = []
    ret = step.body.blocks[0].last_op
    assert isinstance(ret, func.ReturnOp)
    for o in step.body.blocks[0].ops:
        if o is ret:
            continue
        clone = o.clone(value_mapper=mapping)
        clone.attributes.pop("frame.stage", None)  # the VJP step is one stage of its own
        g.emit(clone)
        for old, new in zip(o.results, clone.results, strict=True):
            mapping[old] = new
        ops.append(clone)
    out = mapping.get(ret.operands[0], ret.operands[0])
    d_carry_in = g.emit(frame.ReshapeOp(g.emit(frame.SliceOp(packed, 0, 0, sizes[0])),
                                         carry_t))
    seed = g.emit(frame.AddOp(d_carry_in, dy))
    adjoint = reverse_sweep(g.emit, ops, args, {out: seed}, f"{name}")
    parts = []
    for a in args:
        adj = adjoint.get(a)
        if adj is None:
            adj = g.emit(frame.ConstantOp(0.0, result_type=a.type))
        parts.append(_flat(g.emit, adj))
    result = parts[0] if len(parts) == 1 else g.emit(frame.ConcatOp(parts, 0))
    return g.finish([result]), sizes
