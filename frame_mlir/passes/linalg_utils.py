"""Small builders for linalg.generic shared by the passes that create them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import AffineMapAttr, FloatAttr, TensorType, f32
from xdsl.dialects.linalg import attrs as linalg_attrs
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

PAR = linalg_attrs.IteratorTypeAttr.parallel()
RED = linalg_attrs.IteratorTypeAttr.reduction()


def dims_map(num_dims: int, dims: Sequence[int]) -> AffineMapAttr:
    """`(d0, ..., d{num_dims-1}) -> (d{dims[0]}, ...)`."""
    return AffineMapAttr(AffineMap(num_dims, 0, tuple(AffineExpr.dimension(d) for d in dims)))


def identity_map(rank: int) -> AffineMapAttr:
    return dims_map(rank, range(rank))


def copy_generic(src: SSAValue, dst: SSAValue) -> linalg.GenericOp:
    """An identity linalg.generic copying `src` into `dst` (same static shape);
    on tensors it returns the new value, on memrefs it writes `dst`."""
    rank = len(src.type.get_shape())  # type: ignore[attr-defined]
    elem = src.type.element_type  # type: ignore[attr-defined]
    block = Block(arg_types=[elem, elem])
    block.add_op(linalg.YieldOp(block.args[0]))
    res = [dst.type] if isinstance(dst.type, TensorType) else []
    return linalg.GenericOp([src], [dst], Region(block), [identity_map(rank)] * 2,
                            [PAR] * rank, res)


# --- scalar bodies and row reductions, for the lowerings of convert-frame-to-linalg and
# of the op families (`frame_mlir/dialects/frame_*.py`); `lw` is its `Lowerer`.

BodyFn = Callable[[Builder, Sequence[SSAValue]], SSAValue]


def f32_const(b: Builder, value: float) -> SSAValue:
    """An f32 constant inside a body."""
    return b.insert(arith.ConstantOp(FloatAttr(value, f32))).result


def max_takes(b: Builder, x: SSAValue, running: SSAValue) -> SSAValue:
    """PyTorch's max scan: `x` replaces the running max when it is greater or NaN.

    So a NaN wins, and among equal values (-0.0 and +0.0 included) the first stays.
    """
    greater = b.insert(arith.CmpfOp(x, running, "ogt")).result
    nan = b.insert(arith.CmpfOp(x, x, "uno")).result
    return b.insert(arith.OrIOp(greater, nan)).result


def row_reduce(lw: Any, inputs: Sequence[SSAValue], axis: int, init: float, body: BodyFn,
               row_inputs: Sequence[SSAValue] = ()) -> SSAValue:
    """An f32 tensor of the inputs' shape without `axis`, reduced along it from `init` in
    index order; `row_inputs` (of that reduced shape) are read per row. `body` gets the
    inputs' elements, the row inputs' and the accumulator."""
    shape = list(inputs[0].type.get_shape())  # type: ignore[attr-defined]
    rank = len(shape)
    kept = [d for d in range(rank) if d != axis]
    out = lw.filled(TensorType(f32, [shape[d] for d in kept]), init)
    maps = [identity_map(rank)] * len(inputs) + [dims_map(rank, kept)] * (len(row_inputs) + 1)
    its = [RED if d == axis else PAR for d in range(rank)]
    return lw.generic([*inputs, *row_inputs], out, maps, its, body)


def result_type(op: Any) -> TensorType:
    """The (static tensor) type of `op`'s first result."""
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ


def accumulator_type(typ: TensorType) -> TensorType:
    """Reductions accumulate in f32 whatever the storage type."""
    return TensorType(f32, typ.get_shape())


def round_to(lw: Any, value: SSAValue, typ: TensorType) -> SSAValue:
    """`value` (an f32 accumulator) stored as `typ`: a rounding pass when they differ."""
    if value.type == typ:
        return value
    return lw.elementwise([value], typ, lambda b, a: a[0])
