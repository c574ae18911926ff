"""The frame dialect's index family: ops that read or write a float tensor at positions
given by an integer (i32 / i64) index tensor -- ops, shape rules, verifiers, VJP rules
and lowerings in this one file (like `frame_math.py`):

  * `frame.scatter_add` / `frame.gather_rows`: rows of a [V, F] matrix (GraphConv's
    messages), each the other's VJP;
  * `frame.index_select` (torch.index_select for any rank and axis) and
    `frame.index_add` (a zero-filled tensor with torch's `index_add_` applied), each
    the other's VJP: the gradient of a selection adds the adjoints of repeated indices
    into their row, as torch's does.

The index operand gets no adjoint. linalg cannot index by data, so every lowering is a
dense one-hot scan: a loop over the candidate positions whose body compares
`indices[k]` with the loop index (`linalg.index`) and keeps or adds the element where
they match. index_select *selects* (no arithmetic: the result has x's very bits, -0.0
and NaN included); index_add and scatter_add add into an f32 accumulator in index order
(k = 0, 1, ...), torch's order, rounded once to a 16-bit result type.

An index outside [0, size) is a run-time error for index_select and index_add, as in
torch: the lowering records the check on the function argument that holds the indices
(`frame_loss.INDEX_CHECKS_ATTR`, with no ignore value), and
`frame_mlir.runtime.executable.Executable` refuses such a call, naming the op, the
position and the value, before any code runs. (The kernels themselves match no position
for such an index: 0 in the result.) scatter_add's indices are checked by the Python API
(`frontends/api/graph.py`, `_index_bounds`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith, builtin
from xdsl.dialects.builtin import IntegerAttr, TensorType, UnrankedTensorType, i32, i64
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import base, irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects.frame_base import (
    FLOAT_TYPES,
    AnyF32Tensor,
    DeclaredShape,
    FrameOp,
    Shape,
    ShapeError,
    _fmt,
    declared_shape,
    element_type,
    static_shape,
    tensor_type,
)
from frame_mlir.dialects.frame_loss import record_label_check
from frame_mlir.dialects.linalg_utils import (
    PAR,
    RED,
    accumulator_type,
    dims_map,
    result_type,
    round_to,
)

# --- ops --------------------------------------------------------------------------------


def _verify_rows_types(op_name: str, what: str, rows: Attribute, out: Attribute,
                       indices: Attribute) -> None:
    """The row ops (scatter_add, gather_rows): float rows of the result's element type,
    indexed by i32 or i64 tensors."""
    elem = getattr(out, "element_type", None)
    if getattr(rows, "element_type", None) != elem or not isinstance(elem, FLOAT_TYPES):
        raise VerifyException(f"{op_name}: {what} and result must share a float element "
                              f"type, found {rows} and {out}")
    if getattr(indices, "element_type", None) not in (i32, i64):
        raise VerifyException(f"{op_name}: indices must be i32 or i64, found {indices}")


@irdl_op_definition
class ScatterAddOp(DeclaredShape, FrameOp):
    """Zero-filled [V, F] output with out[indices[k], :] += updates[k, :] (indices i32/i64).

    ``%o = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>``
    """

    name = "frame.scatter_add"
    updates = operand_def(AnyF32Tensor)
    indices = operand_def(base(TensorType))
    result = result_def(AnyF32Tensor)
    assembly_format = "$updates `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, updates: SSAValue | Operation, indices: SSAValue | Operation,
                 result_type: Attribute):
        super().__init__(operands=[SSAValue.get(updates), SSAValue.get(indices)],
                         result_types=[result_type])

    def verify_(self) -> None:
        self.verify_dims()
        _verify_rows_types(self.name, "updates", self.updates.type, self.result.type,
                           self.indices.type)
        try:
            self.infer_shape([static_shape(v) or () for v in self.operands])
        except ShapeError as err:
            raise VerifyException(str(err)) from None

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        upd, idx = shapes
        target = declared_shape(attrs, "frame.scatter_add")
        if len(upd) != 2 or len(idx) != 1 or len(target) != 2 or upd[0] != idx[0] \
                or upd[1] != target[1]:
            raise ShapeError(f"frame.scatter_add: expected updates [K, F], indices [K] and a "
                             f"[V, F] result, found {_fmt(upd)}, {_fmt(idx)}, {_fmt(target)}")
        return target


@irdl_op_definition
class GatherRowsOp(FrameOp):
    """out[k, :] = x[indices[k], :] (the VJP of frame.scatter_add for its updates).

    ``%g = frame.gather_rows %x, %i : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>``
    """

    name = "frame.gather_rows"
    source = operand_def(AnyF32Tensor)
    indices = operand_def(base(TensorType))
    result = result_def(AnyF32Tensor)
    assembly_format = "$source `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, source: SSAValue | Operation, indices: SSAValue | Operation):
        src, idx = SSAValue.get(source), SSAValue.get(indices)
        s, i = static_shape(src), static_shape(idx)
        rtype = tensor_type((i[0], s[1]), element_type(src)) if s and i else \
            UnrankedTensorType(element_type(src))
        super().__init__(operands=[src, idx], result_types=[rtype])

    def verify_(self) -> None:
        self.verify_dims()
        _verify_rows_types(self.name, "source", self.source.type, self.result.type,
                           self.indices.type)
        shapes = [static_shape(v) for v in self.operands]
        target = static_shape(self.result)
        if any(sh is None for sh in shapes) or target is None:
            return
        expected = self.infer_shape(shapes)  # type: ignore[arg-type]
        if expected != target:
            raise VerifyException(f"frame.gather_rows: result type expected "
                                  f"{tensor_type(expected, element_type(self.result))}, "
                                  f"found {self.result.type}")

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        src, idx = shapes
        if len(src) != 2 or len(idx) != 1:
            raise ShapeError(f"frame.gather_rows: expected [V, F] and [K], found {_fmt(src)} "
                             f"and {_fmt(idx)}")
        return (idx[0], src[1])


def _axis_rule(name: str, what: str, shape: Shape, axis: int) -> None:
    if not 0 <= axis < len(shape):
        raise ShapeError(f"{name}: axis expected in [0, {len(shape)}) for the rank-"
                         f"{len(shape)} {what} {_fmt(shape)}, found {axis}")


def _indices_rule(name: str, indices: Shape) -> None:
    if len(indices) != 1:
        raise ShapeError(f"{name}: indices (operand #1) expected rank 1, found shape "
                         f"{_fmt(indices)}")


class _AxisIndexOp(FrameOp):
    """index_select / index_add: a float operand (#0) of the result's element type, an
    i32 / i64 rank-1 index tensor (#1) and an `axis`."""

    axis = prop_def(IntegerAttr)
    #: The name of operand #0 in messages.
    WHAT: ClassVar[str] = "input"

    def axis_value(self) -> int:
        return self.axis.value.data

    def rule_attrs(self) -> dict[str, object]:
        return {"axis": self.axis_value()}

    def verify_(self) -> None:
        self.verify_dims()
        result, (floats, indices) = self.results[0], self.operands
        elem = getattr(result.type, "element_type", None)
        if not isinstance(elem, FLOAT_TYPES):
            raise VerifyException(f"{self.name}: result expected a tensor of f32, f16 or bf16, "
                                  f"found {result.type}")
        if getattr(floats.type, "element_type", None) != elem:
            raise VerifyException(f"{self.name}: {self.WHAT} (operand #0) expected a tensor of "
                                  f"{elem} (the result's element type), found {floats.type}")
        if getattr(indices.type, "element_type", None) not in (i32, i64):
            raise VerifyException(f"{self.name}: indices (operand #1) expected a tensor of i32 "
                                  f"or i64, found {indices.type}")
        try:
            expected = self.inferred_type()
        except ShapeError as err:
            raise VerifyException(str(err)) from None
        if expected is not None and isinstance(result.type, TensorType) \
                and result.type != expected:
            raise VerifyException(f"{self.name}: result type expected {expected}, found "
                                  f"{result.type}")


@irdl_op_definition
class IndexSelectOp(_AxisIndexOp):
    """torch.index_select: the slices of `input` at `indices` along `axis`, in index
    order (repeats allowed); the result is the input's shape with dim `axis` replaced by
    len(indices).

    ``%y = frame.index_select %x, %i {axis = 1 : i64} : (tensor<2x5xf32>, tensor<3xi64>) -> tensor<2x3xf32>``
    """

    name = "frame.index_select"
    input = operand_def(AnyF32Tensor)
    indices = operand_def(base(TensorType))
    result = result_def(AnyF32Tensor)
    assembly_format = "$input `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, indices: SSAValue | Operation, axis: int):
        ops = [SSAValue.get(input), SSAValue.get(indices)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops, axis=axis)],
                         properties={"axis": IntegerAttr(axis, i64)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        x, idx = shapes
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        _axis_rule("frame.index_select", "input", x, axis)
        _indices_rule("frame.index_select", idx)
        return (*x[:axis], idx[0], *x[axis + 1:])


@irdl_op_definition
class IndexAddOp(_AxisIndexOp):
    """A zero-filled tensor of the (declared) result type with torch's
    `out.index_add_(axis, indices, source)`: source slice k is added to slice
    indices[k] along `axis` (repeated indices accumulate, in index order). The VJP of
    frame.index_select for its input.

    ``%o = frame.index_add %s, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi32>) -> tensor<4x2xf32>``
    """

    name = "frame.index_add"
    source = operand_def(AnyF32Tensor)
    indices = operand_def(base(TensorType))
    result = result_def(AnyF32Tensor)
    assembly_format = "$source `,` $indices attr-dict `:` functional-type(operands, results)"
    WHAT: ClassVar[str] = "source"

    def __init__(self, source: SSAValue | Operation, indices: SSAValue | Operation, axis: int,
                 result_type: Attribute):
        super().__init__(operands=[SSAValue.get(source), SSAValue.get(indices)],
                         result_types=[result_type], properties={"axis": IntegerAttr(axis, i64)})

    def rule_attrs(self) -> dict[str, object]:
        # The size of dim `axis` is not a function of the operands: the declared
        # result type gives it (as scatter_add's does).
        return {"axis": self.axis_value(), "result": static_shape(self.result)}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        src, idx = shapes
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        target = attrs.get("result")
        _axis_rule("frame.index_add", "source", src, axis)
        _indices_rule("frame.index_add", idx)
        if idx[0] != src[axis]:
            raise ShapeError(f"frame.index_add: indices (operand #1) expected shape "
                             f"[{src[axis]}] (dim {axis} of the source {_fmt(src)}), found "
                             f"{_fmt(idx)}")
        if target is None:
            raise ShapeError("frame.index_add: the result type must be static (it gives the "
                             "size of dim axis)")
        target = tuple(target)  # type: ignore[call-overload]
        if len(target) != len(src) or any(
                a != b for d, (a, b) in enumerate(zip(target, src, strict=True)) if d != axis):
            want = _fmt((*src[:axis], -1, *src[axis + 1:])).replace("-1", "*")
            raise ShapeError(f"frame.index_add: result shape expected {want} (the source's "
                             f"dims off axis {axis}), found {_fmt(target)}")
        return target


OPS = [ScatterAddOp, GatherRowsOp, IndexSelectOp, IndexAddOp]


# --- VJP rules --------------------------------------------------------------------------

Adjoints = list[SSAValue | None]
Emit = Callable[[Operation], SSAValue]


def _vjp_scatter_add(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    # Integer indices get no adjoint.
    return [emit(GatherRowsOp(dc, op.indices)) if need[0] else None, None]


def _vjp_gather_rows(emit: Emit, op: Any, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    # Each gathered row's adjoint flows back to the row it came from; rows gathered
    # several times accumulate (scatter_add sums repeated indices).
    if not need[0]:
        return [None, None]
    return [emit(ScatterAddOp(dc, op.indices, op.source.type)), None]


def _vjp_index_select(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    # Slice k's adjoint goes back to slice indices[k]; repeats accumulate.
    return [emit(IndexAddOp(dy, op.indices, op.axis_value(), op.input.type))
            if need[0] else None, None]


def _vjp_index_add(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    # Source slice k was added to slice indices[k]: its adjoint is that slice of dy.
    return [emit(IndexSelectOp(dy, op.indices, op.axis_value())) if need[0] else None, None]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    ScatterAddOp: _vjp_scatter_add, GatherRowsOp: _vjp_gather_rows,
    IndexSelectOp: _vjp_index_select, IndexAddOp: _vjp_index_add}


# --- lowerings ----------------------------------------------------------------------------


def _row_match(b: Builder, index: SSAValue, row_dim: int) -> SSAValue:
    """index (i32/i64 element) == the loop index of `row_dim` (an i1)."""
    row = b.insert(linalg.IndexOp(row_dim)).result
    as_index = b.insert(arith.IndexCastOp(index, builtin.IndexType())).result
    return b.insert(arith.CmpiOp(as_index, row, "eq")).result


def _one_hot_rows(lw: Any, op: Operation, values: SSAValue, indices: SSAValue,
                  values_dims: list[int], index_dim: int, row_dim: int) -> SSAValue:
    """A row gather or scatter over (i, f, j) as a dense one-hot reduction: add
    values[.., f] where indices[index_dim] equals the loop index `row_dim`. linalg
    cannot express a data-dependent index, but it can express this."""
    typ = result_type(op)
    maps = [dims_map(3, values_dims), dims_map(3, [index_dim]), dims_map(3, [0, 1])]

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        hit = _row_match(b, a[1], row_dim)
        added = b.insert(arith.AddfOp(a[2], a[0])).result
        return b.insert(arith.SelectOp(hit, added, a[2])).result

    total = lw.generic([values, indices], lw.filled(accumulator_type(typ), 0.0), maps,
                       [PAR, PAR, RED], body)
    return round_to(lw, total, typ)


def _lower_scatter_add(lw: Any, op: Any) -> SSAValue:
    """out[v, f] = sum_k (indices[k] == v) * updates[k, f], over (v, f, k)."""
    return _one_hot_rows(lw, op, op.updates, op.indices, [2, 1], 2, 0)


def _lower_gather_rows(lw: Any, op: Any) -> SSAValue:
    """out[k, f] = sum_v (indices[k] == v) * x[v, f], over (k, f, v)."""
    return _one_hot_rows(lw, op, op.source, op.indices, [2, 1], 0, 2)


def _axis_space(rank: int, axis: int) -> tuple[list[int], list[int]]:
    """Loops (pre..., p, q, post...) for an op along `axis` of a rank-`rank` tensor:
    the dims before the axis, two loops in its place, the dims after it (innermost, so
    the innermost loop walks contiguous elements when there are any). Returns the loop
    dims of (pre..., p, post...) and of (pre..., q, post...)."""
    pre, post = list(range(axis)), list(range(axis + 2, rank + 1))
    return [*pre, axis, *post], [*pre, axis + 1, *post]


def _lower_index_select(lw: Any, op: Any) -> SSAValue:
    """out[pre, k, post] = x[pre, v, post] at the v with indices[k] == v: loops
    (pre, k, v, post), v a reduction whose body selects x where the index matches
    (a copy: no arithmetic touches the value)."""
    x_shape = static_shape(op.input) or ()
    axis, rank = op.axis_value(), len(x_shape)
    record_label_check(op, op.indices, x_shape[axis], None)
    typ = result_type(op)
    out_dims, x_dims = _axis_space(rank, axis)
    maps = [dims_map(rank + 1, x_dims), dims_map(rank + 1, [axis]),
            dims_map(rank + 1, out_dims)]
    its = [PAR] * (rank + 1)
    its[axis + 1] = RED

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        return b.insert(arith.SelectOp(_row_match(b, a[1], axis + 1), a[0], a[2])).result
    return lw.generic([op.input, op.indices], lw.filled(typ, 0.0), maps, its, body)


def _lower_index_add(lw: Any, op: Any) -> SSAValue:
    """out[pre, v, post] = sum_k (indices[k] == v) * src[pre, k, post]: loops
    (pre, v, k, post), k a reduction adding in index order into an f32 accumulator."""
    typ = result_type(op)
    axis, rank = op.axis_value(), typ.get_num_dims()
    record_label_check(op, op.indices, typ.get_shape()[axis], None)
    out_dims, src_dims = _axis_space(rank, axis)
    maps = [dims_map(rank + 1, src_dims), dims_map(rank + 1, [axis + 1]),
            dims_map(rank + 1, out_dims)]
    its = [PAR] * (rank + 1)
    its[axis + 1] = RED

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        added = b.insert(arith.AddfOp(a[2], a[0])).result
        return b.insert(arith.SelectOp(_row_match(b, a[1], axis), added, a[2])).result
    total = lw.generic([op.source, op.indices], lw.filled(accumulator_type(typ), 0.0), maps,
                       its, body)
    return round_to(lw, total, typ)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    ScatterAddOp: _lower_scatter_add, GatherRowsOp: _lower_gather_rows,
    IndexSelectOp: _lower_index_select, IndexAddOp: _lower_index_add}
