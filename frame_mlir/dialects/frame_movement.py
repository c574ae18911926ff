"""The frame dialect's data-movement family: reshape, transpose (any permutation),
slice, concat and pad -- ops, shape rules, verifiers, VJP rules and lowerings in this
one file (like `frame_math.py`). squeeze and unsqueeze are reshapes
(`squeeze` / `unsqueeze` below build them).

Every op copies elements without arithmetic, so results are bit-exact; each lowers to
one linalg.generic per operand whose maps place the element (affine offsets for
slice, concat and pad, a permutation for transpose, a row-major delinearisation for
reshape).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Any

from xdsl.dialects.builtin import (
    AffineMapAttr,
    Attribute,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def, result_def, var_operand_def

from frame_mlir.dialects import frame_base as _frame
from frame_mlir.dialects.frame_base import (
    AnyF32Tensor,
    DeclaredShape,
    FrameOp,
    Shape,
    ShapeError,
    UnaryOp,
    _fmt,
    declared_shape,
    static_shape,
)
from frame_mlir.dialects.linalg_utils import PAR, identity_map


def _ints(attr: DenseArrayBase | None) -> list[int] | None:
    return None if attr is None else [int(v) for v in attr.get_values()]


def _i64s(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@irdl_op_definition
class ReshapeOp(DeclaredShape, UnaryOp):
    """Row-major reshape to the declared result type (same element count).

    ``%y = frame.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>``
    """

    name = "frame.reshape"

    def __init__(self, input: SSAValue | Operation, result_type: Attribute):
        super().__init__(input, result_type)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        # The target shape is the declared result type: it is not inferred.
        (s,) = shapes
        target = declared_shape(attrs, "frame.reshape")
        if prod(s) != prod(target):
            raise ShapeError(f"frame.reshape: element count expected {prod(s)} (of "
                             f"{_fmt(s)}), found {prod(target)} (of {_fmt(target)})")
        return target


def _perm_rule(name: str, shape: Shape, perm: Sequence[int] | None) -> list[int]:
    rank = len(shape)
    if perm is None:  # numpy's default: reverse the dims
        return list(range(rank))[::-1]
    if sorted(perm) != list(range(rank)):
        raise ShapeError(f"{name}: perm expected a permutation of 0..{rank - 1} for a rank-"
                         f"{rank} operand, found {list(perm)}")
    return list(perm)


@irdl_op_definition
class TransposeOp(UnaryOp):
    """numpy's transpose: result dim i is operand dim perm[i]; without `perm` the dims
    are reversed (a matrix transpose for rank 2).

    ``%y = frame.transpose %x : (tensor<8x4xf32>) -> tensor<4x8xf32>``
    ``%y = frame.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>``
    """

    name = "frame.transpose"
    perm = opt_prop_def(DenseArrayBase.constr(i64))

    def __init__(self, input: SSAValue | Operation, perm: Sequence[int] | None = None):
        ops = [SSAValue.get(input)]
        super().__init__(input, self.result_type_for(ops, perm=perm),
                         {"perm": None if perm is None else _i64s(perm)})

    def permutation(self) -> list[int]:
        """The permutation, resolved against the operand rank."""
        return _perm_rule(self.name, static_shape(self.input) or (), _ints(self.perm))

    def rule_attrs(self) -> dict[str, object]:
        return {"perm": _ints(self.perm)}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        (s,) = shapes
        perm = _perm_rule("frame.transpose", s, attrs.get("perm"))  # type: ignore[arg-type]
        return tuple(s[p] for p in perm)


def _axis_in(name: str, axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise ShapeError(f"{name}: axis expected in [0, {rank}) for a rank-{rank} operand, "
                         f"found {axis}")


@irdl_op_definition
class SliceOp(UnaryOp):
    """Elements `begin <= i < end` of `axis` (step 1); the other dims are kept.

    ``%y = frame.slice %x {axis = 1 : i64, begin = 2 : i64, end = 5 : i64} : (tensor<4x8xf32>) -> tensor<4x3xf32>``
    """

    name = "frame.slice"
    axis = prop_def(IntegerAttr)
    begin = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)

    def __init__(self, input: SSAValue | Operation, axis: int, begin: int, end: int):
        ops = [SSAValue.get(input)]
        super().__init__(input, self.result_type_for(ops, axis=axis, begin=begin, end=end),
                         {"axis": IntegerAttr(axis, i64), "begin": IntegerAttr(begin, i64),
                          "end": IntegerAttr(end, i64)})

    def bounds(self) -> tuple[int, int, int]:
        """(axis, begin, end)."""
        return self.axis.value.data, self.begin.value.data, self.end.value.data

    def rule_attrs(self) -> dict[str, object]:
        axis, begin, end = self.bounds()
        return {"axis": axis, "begin": begin, "end": end}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        (s,) = shapes
        axis, begin, end = (int(attrs[k]) for k in ("axis", "begin", "end"))  # type: ignore[call-overload]
        _axis_in("frame.slice", axis, len(s))
        if not 0 <= begin <= end <= s[axis]:
            raise ShapeError(f"frame.slice: bounds expected 0 <= begin <= end <= {s[axis]} "
                             f"(dim {axis} of {_fmt(s)}), found begin {begin}, end {end}")
        return (*s[:axis], end - begin, *s[axis + 1:])


@irdl_op_definition
class ConcatOp(FrameOp):
    """Join the operands along `axis` (all other dims equal), in operand order.

    ``%y = frame.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>``
    """

    name = "frame.concat"
    inputs = var_operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    axis = prop_def(IntegerAttr)
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[SSAValue | Operation], axis: int):
        ops = [SSAValue.get(v) for v in inputs]
        super().__init__(operands=[ops], result_types=[self.result_type_for(ops, axis=axis)],
                         properties={"axis": IntegerAttr(axis, i64)})

    def rule_attrs(self) -> dict[str, object]:
        return {"axis": self.axis.value.data}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        if not shapes:
            raise ShapeError("frame.concat: expected at least one operand, found none")
        axis = int(attrs["axis"])  # type: ignore[call-overload]
        first = shapes[0]
        _axis_in("frame.concat", axis, len(first))
        for i, s in enumerate(shapes[1:], 1):
            if len(s) != len(first) or any(
                    a != b for d, (a, b) in enumerate(zip(s, first, strict=True)) if d != axis):
                want = _fmt((*first[:axis], -1, *first[axis + 1:])).replace("-1", "*")
                raise ShapeError(f"frame.concat: operand #{i} shape expected {want} (operand "
                                 f"#0's dims off axis {axis}), found {_fmt(s)}")
        return (*first[:axis], sum(s[axis] for s in shapes), *first[axis + 1:])


@irdl_op_definition
class PadOp(UnaryOp):
    """Add `low[d]` cells before and `high[d]` after each dim d, filled with `value`.

    ``%y = frame.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 2>, value = 0.0 : f32} : (tensor<2x3xf32>) -> tensor<2x6xf32>``
    """

    name = "frame.pad"
    low = prop_def(DenseArrayBase.constr(i64))
    high = prop_def(DenseArrayBase.constr(i64))
    value = prop_def(FloatAttr)

    def __init__(self, input: SSAValue | Operation, low: Sequence[int], high: Sequence[int],
                 value: float = 0.0):
        ops = [SSAValue.get(input)]
        super().__init__(input, self.result_type_for(ops, low=list(low), high=list(high)),
                         {"low": _i64s(low), "high": _i64s(high), "value": FloatAttr(value, f32)})

    def pads(self) -> tuple[list[int], list[int]]:
        """(low, high)."""
        return _ints(self.low) or [], _ints(self.high) or []

    def rule_attrs(self) -> dict[str, object]:
        low, high = self.pads()
        return {"low": low, "high": high}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        (s,) = shapes
        low, high = attrs["low"], attrs["high"]
        for what, pads in (("low", low), ("high", high)):
            if len(pads) != len(s) or any(p < 0 for p in pads):  # type: ignore[arg-type, union-attr]
                raise ShapeError(f"frame.pad: {what} expected {len(s)} non-negative entries "
                                 f"(one per dim of {_fmt(s)}), found {list(pads)}")  # type: ignore[call-overload]
        return tuple(d + lo + hi for d, lo, hi in zip(s, low, high, strict=True))  # type: ignore[call-overload]


OPS = [ReshapeOp, TransposeOp, SliceOp, ConcatOp, PadOp]


def squeeze(x: SSAValue, axis: int) -> ReshapeOp:
    """The reshape dropping size-1 dim `axis` of `x` (ShapeError if it is not 1)."""
    s = static_shape(x) or ()
    _axis_in("squeeze", axis, len(s))
    if s[axis] != 1:
        raise ShapeError(f"squeeze: dim {axis} expected size 1, found {s[axis]} in {_fmt(s)}")
    return ReshapeOp(x, _frame.tensor_type((*s[:axis], *s[axis + 1:]), _frame.element_type(x)))


def unsqueeze(x: SSAValue, axis: int) -> ReshapeOp:
    """The reshape inserting a size-1 dim at `axis` (0 <= axis <= rank)."""
    s = static_shape(x) or ()
    if not 0 <= axis <= len(s):
        raise ShapeError(f"unsqueeze: axis expected in [0, {len(s)}], found {axis}")
    return ReshapeOp(x, _frame.tensor_type((*s[:axis], 1, *s[axis:]), _frame.element_type(x)))


# --- VJP rules --------------------------------------------------------------------------

Adjoints = list[SSAValue | None]
Emit = Callable[[Operation], SSAValue]


def _vjp_reshape(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(ReshapeOp(dy, op.input.type))]


def _vjp_transpose(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    if op.perm is None:  # reversing the dims is its own inverse
        return [emit(TransposeOp(dy))]
    perm = op.permutation()
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [emit(TransposeOp(dy, inverse))]


def _vjp_slice(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    axis, begin, end = op.bounds()
    shape = static_shape(op.input) or ()
    low, high = [0] * len(shape), [0] * len(shape)
    low[axis], high[axis] = begin, shape[axis] - end
    return [emit(PadOp(dy, low, high))]


def _vjp_concat(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    axis, offset, out = op.axis.value.data, 0, []
    for v, wanted in zip(op.inputs, need, strict=True):
        size = (static_shape(v) or ())[axis]
        out.append(emit(SliceOp(dy, axis, offset, offset + size)) if wanted else None)
        offset += size
    return out


def _vjp_pad(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    low, high = op.pads()
    g = dy
    for axis, (lo, hi) in enumerate(zip(low, high, strict=True)):
        if lo or hi:
            size = (static_shape(g) or ())[axis]
            g = emit(SliceOp(g, axis, lo, size - hi))
    return [g]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    ReshapeOp: _vjp_reshape, TransposeOp: _vjp_transpose, SliceOp: _vjp_slice,
    ConcatOp: _vjp_concat, PadOp: _vjp_pad}


# --- lowerings ----------------------------------------------------------------------------


def _copy(b: Any, a: Sequence[SSAValue]) -> SSAValue:
    return a[0]


def _result_type(op: Operation) -> TensorType:
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ


def _window_copy(lw: Any, src: SSAValue, dst: SSAValue, src_offsets: Sequence[int],
                 dst_offsets: Sequence[int]) -> SSAValue:
    """Copy a window from `src` at `src_offsets` into `dst` at `dst_offsets`; the window
    is the smaller of the two in each dim (so each dim is covered whole on one side).

    linalg requires a result that is a bare loop dim to span its whole operand dim;
    a side that covers only part of a dim with offset 0 therefore indexes it as
    `d + u`, where `u` is an extra outermost loop of one trip bounded by a shape-only
    operand (the way MLIR's pooling ops bound their window loops)."""
    src_shape, dst_shape = static_shape(src) or (), static_shape(dst) or ()
    window = [min(a, b) for a, b in zip(src_shape, dst_shape, strict=True)]
    rank = len(window)

    def partial(shape: Sequence[int], offsets: Sequence[int]) -> list[int]:
        return [i for i in range(rank) if not offsets[i] and shape[i] != window[i]]
    extra = bool(partial(src_shape, src_offsets) or partial(dst_shape, dst_offsets))
    n = rank + extra
    d = [AffineExpr.dimension(i + extra) for i in range(rank)]

    def side(shape: Sequence[int], offsets: Sequence[int]) -> AffineMapAttr:
        part = partial(shape, offsets)
        return AffineMapAttr(AffineMap(n, 0, tuple(
            e + AffineExpr.dimension(0) if i in part else (e + offsets[i] if offsets[i] else e)
            for i, e in enumerate(d))))
    ins, maps = [src], [side(src_shape, src_offsets)]
    if extra:
        ins.append(lw.empty(_frame.tensor_type([1], _frame.element_type(src))))
        maps.append(AffineMapAttr(AffineMap(n, 0, (AffineExpr.dimension(0),))))
    return lw.generic(ins, dst, [*maps, side(dst_shape, dst_offsets)], [PAR] * n, _copy)


def _row_major_strides(shape: Sequence[int]) -> list[int]:
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= n
    return strides[::-1]


def linear_index(exprs: Sequence[AffineExpr], shape: Sequence[int]) -> AffineExpr:
    """The row-major linear index of the element at `exprs` in a tensor of `shape`."""
    lin: AffineExpr = AffineExpr.constant(0)
    for e, s in zip(exprs, _row_major_strides(shape), strict=True):
        lin = lin + e * s
    return lin


def delinearized(lin: AffineExpr, shape: Sequence[int]) -> tuple[AffineExpr, ...]:
    """The row-major index into `shape` of linear index `lin`: `(lin floordiv stride)
    mod size` per dim."""
    return tuple((lin // s) % n for s, n in zip(_row_major_strides(shape), shape,
                                                strict=True))


def reshape_out_map(src: Sequence[int], dst: Sequence[int]) -> AffineMap:
    """The output map of a reshape's copy over the input's loops: the `dst` index of the
    input element's linear index."""
    rank = len(src)
    dims = [AffineExpr.dimension(d) for d in range(rank)]
    return AffineMap(rank, 0, delinearized(linear_index(dims, src), dst))


def _lower_reshape(lw: Any, op: Any) -> SSAValue:
    """Copy over the input's iteration space; the output index is the row-major
    delinearisation of the input's linear index (affine floordiv / mod,
    `reshape_out_map`; frame-fold-movement recognises the copy by it)."""
    src = static_shape(op.input) or ()
    typ = _result_type(op)
    dst = tuple(typ.get_shape())
    if prod(dst) == 0:  # an empty tensor: nothing to copy (and no strides to divide by)
        return lw.empty(typ)
    rank = len(src)
    out_map = AffineMapAttr(reshape_out_map(src, dst))
    return lw.generic([op.input], lw.empty(typ), [identity_map(rank), out_map],
                      [PAR] * rank, _copy)


def _lower_transpose(lw: Any, op: Any) -> SSAValue:
    """Loops over the result (its last dim innermost, so stores are contiguous)."""
    perm = op.permutation()
    rank = len(perm)
    inverse = [0] * rank
    for i, p in enumerate(perm):
        inverse[p] = i
    src_map = AffineMapAttr(AffineMap(rank, 0, tuple(AffineExpr.dimension(inverse[m])
                                                     for m in range(rank))))
    return lw.generic([op.input], lw.empty(_result_type(op)), [src_map, identity_map(rank)],
                      [PAR] * rank, _copy)


def _lower_slice(lw: Any, op: Any) -> SSAValue:
    axis, begin, _ = op.bounds()
    typ = _result_type(op)
    rank = typ.get_num_dims()
    return _window_copy(lw, op.input, lw.empty(typ),
                        [begin if d == axis else 0 for d in range(rank)], [0] * rank)


def _lower_concat(lw: Any, op: Any) -> SSAValue:
    """One copy per operand into its offset along the axis of one destination."""
    typ = _result_type(op)
    rank, axis = typ.get_num_dims(), op.axis.value.data
    out, offset = lw.empty(typ), 0
    for v in op.inputs:
        out = _window_copy(lw, v, out, [0] * rank,
                           [offset if d == axis else 0 for d in range(rank)])
        offset += (static_shape(v) or ())[axis]
    return out


def _lower_pad(lw: Any, op: Any) -> SSAValue:
    typ = _result_type(op)
    low, _ = op.pads()
    return _window_copy(lw, op.input, lw.filled(typ, op.value.value.data), [0] * len(low), low)


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    ReshapeOp: _lower_reshape, TransposeOp: _lower_transpose, SliceOp: _lower_slice,
    ConcatOp: _lower_concat, PadOp: _lower_pad}
