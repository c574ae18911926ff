"""Small builders for linalg.generic shared by the passes that create them."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import AffineMapAttr, TensorType
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
