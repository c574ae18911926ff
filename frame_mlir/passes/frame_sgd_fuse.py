"""frame-sgd-fuse: fold the SGD update into the gradient function.

Expects: `@f_grad` functions made by frame-autodiff, returning
`(loss, g1, ..., gn)` for the parameters p1..pn (arguments marked `frame.param`).
Does: replaces each gradient result gi with `frame.sgd_update pi, gi {lr}` (the
optimizer library's plain SGD step, `frame_mlir/optim/fused.py`), placed after every
gradient has been computed (so no later op reads the old parameter), renames the
function `@f_train_step`, and marks each parameter argument `frame.aliasing_output =
<result index>`: bufferization then writes the new value into the parameter's own
buffer, updating it in place.
Guarantees: gradients are no longer function results, so they need not be
materialised; a train step returns `(loss, p1', ..., pn')` with pi' aliased to pi.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from frame_mlir.optim.fused import sgd_update
from frame_mlir.passes.common import fail, set_arg_attr, update_function_type
from frame_mlir.passes.frame_autodiff import LAYER, STAGE, param_indices


@dataclass(frozen=True)
class FrameSgdFuse(ModulePass):
    """Turn `@f_grad` into `@f_train_step`, updating parameters in place with SGD."""

    name = "frame-sgd-fuse"

    #: The learning rate. A str too: xDSL's pipeline syntax reads an exponent without a
    #: decimal point (`lr=1e-3`) as a word, and users write rates that way.
    lr: float | int | str = 0.01

    def learning_rate(self) -> float:
        """`lr` as a number > 0 that stays finite and non-zero in float32 (the update
        runs in float32), or a failure naming the pass."""
        return learning_rate(self.name, self.lr)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        lr = self.learning_rate()
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp) or "frame.grad_of" not in fn.attributes:
                continue
            block, ret, pidx = gradient_function(self.name, fn)
            outputs: list[SSAValue] = [ret.operands[0]]
            for k, (i, g) in enumerate(zip(pidx, ret.operands[1:], strict=True)):
                try:
                    upd = sgd_update(block.args[i], g, lr)
                except VerifyException as err:  # e.g. a gradient of the wrong shape
                    raise fail(self.name, ret, str(err)) from None
                upd.attributes[LAYER] = fn.arg_attrs.data[i].data["frame.param"]  # type: ignore[union-attr]
                upd.attributes[STAGE] = builtin.StringAttr("update")
                Rewriter.insert_op(upd, InsertPoint.before(ret))
                outputs.append(upd.result)
                set_arg_attr(fn, i, "frame.aliasing_output", builtin.IntegerAttr(k + 1, 64))
            Rewriter.replace_op(ret, func.ReturnOp(*outputs))
            base = fn.attributes.pop("frame.grad_of")
            assert isinstance(base, builtin.StringAttr)
            fn.sym_name = builtin.StringAttr(f"{base.data}_train_step")
            fn.attributes["frame.train_step"] = base
            update_function_type(fn)


def learning_rate(pass_name: str, text: float | int | str) -> float:
    """A pass's `lr` option as a number > 0 that stays finite and non-zero in float32
    (the update runs in float32), or a failure naming `pass_name`."""
    try:
        lr = float(text)
    except ValueError:
        raise fail(pass_name, None, f"learning rate expected a number, found "
                   f"'{text}'") from None
    with np.errstate(over="ignore"):
        lr32 = float(np.float32(lr))
    if not (lr > 0 and 0 < lr32 < float("inf")):
        raise fail(pass_name, None, f"learning rate expected > 0 and finite in float32 "
                   f"(1.4e-45 .. 3.4e38), found {text}")
    return lr


def gradient_function(pass_name: str, fn: func.FuncOp
                      ) -> tuple[Block, func.ReturnOp, list[int]]:
    """(entry block, return, parameter argument indices) of a gradient function made
    by frame-autodiff, checked to return the loss and one gradient per parameter, or a
    failure naming `pass_name`."""
    if not fn.body.blocks:
        raise fail(pass_name, fn, "expected a gradient function with a body, found a "
                   "declaration")
    block = fn.body.blocks[0]
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    pidx = param_indices(fn)
    if len(ret.operands) != len(pidx) + 1:
        raise fail(pass_name, ret, f"expected {len(pidx) + 1} results (loss and one "
                   f"gradient per parameter), found {len(ret.operands)}")
    return block, ret, pidx
