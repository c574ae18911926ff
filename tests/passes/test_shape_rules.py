"""One shape rule per frame op: every op of the dialect defines it once, as the static
`rule(shapes, **attrs)` (with `rule_attrs()` when it reads attributes or the declared
result shape), and nothing else computes result shapes. The verifier, the builders,
frame-shape-inference (`FrameOp.infer_shape`, which only applies the rule) and the
Python API all call that one rule; so a frontend can check operands without building
an op: `ReshapeOp.rule([(2, 3)], result_shape=(3, 2))`."""

from __future__ import annotations

import pytest

from frame_mlir.dialects import frame
from frame_mlir.dialects.frame import RESULT_SHAPE, Frame, FrameOp, ShapeError, tensor_type
from frame_mlir.passes.pipeline import make_context


def _owner(op: type, attr: str) -> type:
    return next(c for c in op.__mro__ if attr in c.__dict__)


@pytest.mark.parametrize("op", [o for o in Frame.operations if issubclass(o, FrameOp)],
                         ids=lambda o: o.name)
def test_every_op_has_one_static_rule(op: type[FrameOp]) -> None:
    assert _owner(op, "infer_shape") is FrameOp, \
        f"{op.name} overrides infer_shape: its shape logic belongs in its static rule"
    owner = _owner(op, "rule")
    assert owner is not FrameOp, f"{op.name} has no shape rule"
    assert isinstance(owner.__dict__["rule"], staticmethod | classmethod), \
        f"{op.name}.rule must be callable without an op (static or class method)"


def test_every_op_of_the_dialect_is_a_frame_op() -> None:
    assert all(issubclass(o, FrameOp) for o in Frame.operations)


@pytest.mark.parametrize(("op", "shapes", "attrs", "expected"), [
    (frame.ReshapeOp, [(2, 3)], {RESULT_SHAPE: (3, 2)}, (3, 2)),
    (frame.BroadcastOp, [(3,)], {RESULT_SHAPE: (2, 3), "axes": [0]}, (2, 3)),
    (frame.BroadcastOp, [()], {RESULT_SHAPE: (2, 3)}, (2, 3)),
    (frame.ConstantOp, [], {RESULT_SHAPE: (4,)}, (4,)),
    (frame.ScatterAddOp, [(3, 2), (3,)], {RESULT_SHAPE: (5, 2)}, (5, 2)),
    (frame.GatherRowsOp, [(5, 2), (3,)], {}, (3, 2)),
    (frame.ConvGradInputOp, [(1, 3, 3, 3), (3, 2, 3, 3)],
     {RESULT_SHAPE: (1, 2, 5, 5), "stride": [1, 1], "padding": [0, 0], "groups": 1},
     (1, 2, 5, 5)),
    (frame.ConvGradWeightOp, [(1, 2, 5, 5), (1, 3, 3, 3)],
     {RESULT_SHAPE: (3, 2, 3, 3), "stride": [1, 1], "padding": [0, 0], "groups": 1},
     (3, 2, 3, 3)),
    (frame.AvgPoolGradOp, [(1, 1, 2, 2)],
     {RESULT_SHAPE: (1, 1, 4, 4), "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]},
     (1, 1, 4, 4)),
])
def test_declared_shape_rules_are_static(op: type[FrameOp], shapes: list, attrs: dict,
                                         expected: tuple) -> None:
    """The ops whose result shape is declared take it as `result_shape`."""
    assert tuple(op.rule(shapes, **attrs)) == expected


@pytest.mark.parametrize(("op", "shapes", "attrs", "message"), [
    (frame.ReshapeOp, [(2, 3)], {RESULT_SHAPE: (4, 2)},
     "frame.reshape: element count expected 6 (of [2, 3]), found 8 (of [4, 2])"),
    (frame.ReshapeOp, [(2, 3)], {},
     "frame.reshape: the result type must be static (it is the target shape)"),
    (frame.BroadcastOp, [(2,)], {RESULT_SHAPE: (2, 3), "axes": [0]},
     "frame.broadcast: operand expected [3] (the result without axes [0]), found [2]"),
    (frame.ConvGradInputOp, [(1, 3, 2, 2), (3, 2, 3, 3)],
     {RESULT_SHAPE: (1, 2, 5, 5), "stride": [1, 1], "padding": [0, 0], "groups": 1},
     "frame.conv_grad_input: dy expected [1, 3, 3, 3], found [1, 3, 2, 2]"),
])
def test_declared_shape_rules_reject_misuse(op: type[FrameOp], shapes: list, attrs: dict,
                                            message: str) -> None:
    with pytest.raises(ShapeError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)").replace("]", r"\]")):
        op.rule(shapes, **attrs)


def test_the_verifier_and_the_static_rule_agree() -> None:
    """An op's verifier applies the static rule to its own operands and result type."""
    from xdsl.parser import Parser

    module = Parser(make_context(), """
func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %y = frame.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}""").parse_module()
    module.verify()
    reshape = next(o for o in module.walk() if isinstance(o, frame.ReshapeOp))
    assert reshape.rule_attrs() == {RESULT_SHAPE: (3, 2)}
    assert reshape.inferred_type() == tensor_type((3, 2))
    bad = frame.ReshapeOp(reshape.input, tensor_type((4, 2)))
    with pytest.raises(Exception, match="element count expected 6"):
        bad.verify()
