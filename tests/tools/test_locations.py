"""frame-opt's source locations: parsed ops are located, failures are found."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame
from frame_mlir.tools.locations import LocatingParser, locate_failure, with_location

TEXT = """\
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = frame.relu %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""


def _parse(text: str, line_offset: int = 0) -> builtin.ModuleOp:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, frame.Frame):
        ctx.load_dialect(d)
    return LocatingParser(ctx, text, "m.mlir", line_offset=line_offset).parse_located_module()


def _loc(op: Operation) -> tuple[str, int, int]:
    loc = op.location
    assert isinstance(loc, FileLineColLoc)
    return loc.filename.data, loc.line.data, loc.column.data


@pytest.mark.parametrize("offset", [0, 40])
def test_every_parsed_op_is_located(offset: int) -> None:
    module = _parse(TEXT, offset)
    fn, add, relu, ret = (op for op in module.walk() if op is not module)
    assert _loc(fn) == ("m.mlir", 1 + offset, 1)
    assert _loc(add) == ("m.mlir", 2 + offset, 3)
    assert _loc(relu) == ("m.mlir", 3 + offset, 5)
    assert _loc(ret) == ("m.mlir", 4 + offset, 3)


def test_explicit_locations_are_kept() -> None:
    module = _parse(TEXT.replace("-> tensor<4xf32>\n    %1", '-> tensor<4xf32> loc("x.py":9:1)\n    %1'))
    add = next(op for op in module.walk() if isinstance(op, frame.AddOp))
    assert _loc(add) == ("x.py", 9, 1)


def test_failure_at_a_parsed_op() -> None:
    module = _parse(TEXT.replace("%b: tensor<4xf32>", "%b: tensor<3xf32>").replace(
        "(tensor<4xf32>, tensor<4xf32>)", "(tensor<4xf32>, tensor<3xf32>)"))
    with pytest.raises(VerifyException) as info:
        module.verify()
    assert locate_failure(module) == "m.mlir:2:3"
    assert str(with_location(info.value, "m.mlir:2:3")).startswith("m.mlir:2:3: ")


def test_failure_at_a_created_op_is_reported_at_its_function() -> None:
    module = _parse(TEXT)
    add = next(op for op in module.walk() if isinstance(op, frame.AddOp))
    fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    # What a buggy pass might insert: no location, and a result shape that is wrong.
    bad = frame.AddOp.create(operands=[fn.args[0], fn.args[1]],
                             result_types=[builtin.TensorType(builtin.f32, [5])])
    fn.body.block.insert_op_before(bad, add)
    with pytest.raises(VerifyException):
        module.verify()
    assert locate_failure(module) == "m.mlir:1:1"
