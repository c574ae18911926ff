"""frame-shape-inference: give every frame value its static shape.

Expects: frame ops whose results may be unranked (`tensor<*xf32>`), with
statically shaped function arguments.
Does: walks each function in program order and applies each op's shape rule
(`FrameOp.rule`) to its operand shapes, replacing unranked result types;
ranked results are checked against the rule; finally function signatures are
updated to the types actually returned (xDSL's generic shape inference does
not touch `func.func` signatures).
Guarantees: every frame value is statically shaped, or the pass fails naming
the op and the expected versus found shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from frame_mlir.dialects.frame import (
    FrameOp,
    ShapeError,
    element_type,
    static_shape,
    tensor_type,
)
from frame_mlir.passes.common import fail, update_function_type


@dataclass(frozen=True)
class FrameShapeInference(ModulePass):
    """Infer static shapes of all frame values and update function signatures."""

    name = "frame-shape-inference"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in op.walk():
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            for inner in list(fn.walk()):
                if not isinstance(inner, FrameOp):
                    continue
                shapes = [static_shape(o) for o in inner.operands]
                if any(s is None for s in shapes):
                    raise fail(self.name, inner, "an operand has no static shape")
                try:
                    inferred = tensor_type(inner.infer_shape(shapes),  # type: ignore[arg-type]
                                           element_type(inner.results[0]))
                except ShapeError as err:
                    raise fail(self.name, inner, str(err)) from None
                result = inner.results[0]
                if static_shape(result) is None:
                    Rewriter.replace_value_with_new_type(result, inferred)
                elif result.type != inferred:
                    raise fail(self.name, inner,
                               f"result type expected {inferred}, found {result.type}")
            update_function_type(fn)
