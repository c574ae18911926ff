"""frame-train-loop: the whole training loop of a train step as one function.

Expects: a module at the `loops` stage (after bufferization and kernel outlining):
train steps are functions marked `frame.train_step = "<model>"` (frame-sgd-fuse)
that take only memrefs and return nothing, with the loss written to the one
argument marked `frame.output = 0`, a 0-d float memref.
Does: for each such step `@<model>_train_step`, adds a public function
`@<model>_train_loop` taking the step's arguments (same types and attributes, so
the same ABI kinds) followed by two more:

    %steps:  memref<i64>   {frame.steps}    how many steps to run (read once)
    %losses: memref<?xT>   {frame.losses}   losses[i] = the loss of step i (T: the loss type)

and running `for i in 0 .. steps: call @<model>_train_step(...); losses[i] = out[]`.
The step count is a run-time value (the ABI passes only pointers, so it comes
through a 1-element buffer): one compiled module trains for any number of steps,
and the compile cache does not key on it. `losses` is dynamically sized for the
same reason; only its leading dimension is dynamic, which the bare-pointer
lowering and the C++ emitter accept (strides never depend on it).
Why: a v0 spec trains one fixed batch, so every step has the same arguments; one
native call for the whole run takes the per-step Python/ctypes round trip (and its
`float(loss)` conversion) out of the training loop.
Guarantees: the loop calls the very step function once per iteration, in order,
on the same buffers, so parameters and losses are bit-identical to `steps`
separate calls; `out` holds the last step's loss afterwards (untouched when
`steps <= 0`). The loop function carries `frame.train_loop = "<model>"` and the
step's `frame.arena_size`. A step whose outputs are not exactly one 0-d float
loss is left without a loop (there is nothing to log). It runs last in the `loops`
stage so that it copies the step's final ABI (a pass may still grow the arena).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, MemRefType
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.passes.common import fail

#: The argument attributes of the two arguments the loop adds (read by
#: `frame_mlir.runtime.executable.signatures()` as the kinds "steps" and "losses").
STEPS_ATTR = "frame.steps"
LOSSES_ATTR = "frame.losses"


def _loss_argument(fn: func.FuncOp) -> int | None:
    """Index of the step's loss out-parameter: the only `frame.output`, a 0-d float
    memref with result index 0. None when the step does not have that shape."""
    if fn.arg_attrs is None:
        return None
    outputs = [i for i, d in enumerate(fn.arg_attrs.data) if "frame.output" in d.data]
    if len(outputs) != 1:
        return None
    (i,) = outputs
    index = fn.arg_attrs.data[i].data["frame.output"]
    typ = fn.function_type.inputs.data[i]
    if not (isinstance(index, builtin.IntegerAttr) and index.value.data == 0
            and isinstance(typ, MemRefType) and not typ.get_shape()
            and isinstance(typ.element_type, AnyFloat)):
        return None
    return i


@dataclass(frozen=True)
class FrameTrainLoop(ModulePass):
    """Add `@<model>_train_loop`: N calls of the train step, each loss logged."""

    name = "frame-train-loop"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        symbols = {f.sym_name.data for f in op.ops if isinstance(f, func.FuncOp)}
        for step in list(op.ops):
            if not isinstance(step, func.FuncOp) or "frame.train_step" not in step.attributes:
                continue
            model = step.attributes["frame.train_step"]
            if not isinstance(model, builtin.StringAttr):
                raise fail(self.name, step, "frame.train_step expected the model name as "
                           f"a string, found {model}")
            if not step.body.blocks:
                continue  # a declaration: no ABI to copy a loop from
            inputs = step.function_type.inputs.data
            if step.function_type.outputs.data or \
                    not all(isinstance(t, MemRefType) for t in inputs):
                raise fail(self.name, step, "expected a bufferized train step (memref "
                           "arguments, no results); run frame-bufferize first")
            loss_index = _loss_argument(step)
            if loss_index is None:
                continue
            name = f"{model.data}_train_loop"
            if name in symbols:
                raise fail(self.name, step, f"cannot add @{name}: the module already "
                           "defines that symbol")
            symbols.add(name)
            Rewriter.insert_op(self._loop(step, name, model, loss_index),
                               InsertPoint.after(step))

    def _loop(self, step: func.FuncOp, name: str, model: builtin.StringAttr,
              loss_index: int) -> func.FuncOp:
        """`@name(step args..., %steps, %losses)` running the step `steps` times."""
        step_types = list(step.function_type.inputs.data)
        loss_type = step_types[loss_index]
        assert isinstance(loss_type, MemRefType)
        steps_type = MemRefType(builtin.i64, [])
        losses_type = MemRefType(loss_type.element_type, [DYNAMIC_INDEX])
        block = Block(arg_types=[*step_types, steps_type, losses_type])
        *step_args, steps, losses = block.args
        for arg, orig in zip(block.args, step.body.blocks[0].args, strict=False):
            arg.name_hint = orig.name_hint  # readable dumps and C++ parameter names
        steps.name_hint, losses.name_hint = "steps", "losses"

        count = memref.LoadOp.get(steps, [])
        upper = arith.IndexCastOp(count.res, builtin.IndexType())
        zero = arith.ConstantOp.from_int_and_width(0, builtin.IndexType())
        one = arith.ConstantOp.from_int_and_width(1, builtin.IndexType())
        body = Block(arg_types=[builtin.IndexType()])
        body.add_ops([
            func.CallOp(step.sym_name.data, step_args, []),
            loss := memref.LoadOp.get(step_args[loss_index], []),
            memref.StoreOp.get(loss.res, losses, [body.args[0]]),
            scf.YieldOp(),
        ])
        loop = scf.ForOp(zero.result, upper.result, one.result, [], body)
        block.add_ops([count, upper, zero, one, loop, func.ReturnOp()])

        empty = builtin.DictionaryAttr({})
        step_attrs = list(step.arg_attrs.data) if step.arg_attrs is not None else \
            [empty] * len(step_types)
        arg_attrs = builtin.ArrayAttr([
            *step_attrs,
            builtin.DictionaryAttr({STEPS_ATTR: builtin.UnitAttr()}),
            builtin.DictionaryAttr({LOSSES_ATTR: builtin.UnitAttr()}),
        ])
        fn = func.FuncOp(name, (block.arg_types, []), Region(block), arg_attrs=arg_attrs)
        fn.attributes["frame.train_loop"] = model
        arena = step.attributes.get("frame.arena_size")
        if arena is not None:
            fn.attributes["frame.arena_size"] = arena
        return fn
