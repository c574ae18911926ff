"""Graph ops of the Python API: each checks its operands and emits a frame op.

Every op takes the Graph first and returns a Value of it; an operand from another
graph is a ValueError ("does not belong to this graph"), checked before anything else.
There is no broadcasting. The rules and messages follow the frame Python API sheet.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from frame_mlir.api.graph import COMPUTE_DTYPES, Graph, Value, _dims, _dtype
from frame_mlir.api.tensor import DType, check_backend
from frame_mlir.dialects import frame

__all__ = ["add", "constant", "heaviside_surrogate", "matmul", "mse_loss", "mul", "relu",
           "scatter_add", "selective_scan", "square", "sum"]


def _graph(graph: object, what: str) -> Graph:
    if not isinstance(graph, Graph):
        raise TypeError(f"{what}: expected a Graph first, found {type(graph).__name__}")
    return graph


def _float(v: Value, what: str) -> None:
    if not v._dtype.is_float:
        raise ValueError(f"{what}: expected a float dtype, found '{v._dtype.name}'")
    if v._dtype not in COMPUTE_DTYPES:
        raise NotImplementedError(f"{what}: {v._dtype.name} arithmetic is not implemented yet")


def _same_dtype(a: Value, b: Value, what: str) -> None:
    if a._dtype != b._dtype:
        raise ValueError(f"{what}: operands must have the same dtype, found "
                         f"'{a._dtype.name}' and '{b._dtype.name}'")


def _binary(graph: Graph, lhs: Value, rhs: Value, what: str) -> tuple[Value, Value]:
    g = _graph(graph, what)
    a, b = g._own(lhs, what), g._own(rhs, what)
    _same_dtype(a, b, what)
    if a._shape != b._shape:
        raise ValueError(f"{what}: operands must have the same shape (no broadcasting), found "
                         f"{list(a._shape)} and {list(b._shape)}")
    _float(a, what)
    return a, b


def add(graph: Graph, lhs: Value, rhs: Value) -> Value:
    """Elementwise lhs + rhs (same dtype, same shape)."""
    a, b = _binary(graph, lhs, rhs, "add")
    return graph._emit(frame.AddOp(a._ssa, b._ssa), a._dtype)


def mul(graph: Graph, lhs: Value, rhs: Value) -> Value:
    """Elementwise lhs * rhs (same dtype, same shape)."""
    a, b = _binary(graph, lhs, rhs, "mul")
    return graph._emit(frame.MulOp(a._ssa, b._ssa), a._dtype)


def relu(graph: Graph, x: Value) -> Value:
    """max(x, 0) elementwise."""
    v = _graph(graph, "relu")._own(x, "relu")
    _float(v, "relu")
    return graph._emit(frame.ReluOp(v._ssa), v._dtype)


def square(graph: Graph, x: Value) -> Value:
    """x * x elementwise (its gradient, 2x * dy, comes from frame.mul's rule)."""
    v = _graph(graph, "square")._own(x, "square")
    _float(v, "square")
    return graph._emit(frame.MulOp(v._ssa, v._ssa), v._dtype)


def matmul(graph: Graph, lhs: Value, rhs: Value) -> Value:
    """[m, k] @ [k, n] -> [m, n]."""
    g = _graph(graph, "matmul")
    a, b = g._own(lhs, "matmul"), g._own(rhs, "matmul")
    _same_dtype(a, b, "matmul")
    if len(a._shape) != 2 or len(b._shape) != 2:  # the API's matmul is the rank-2 one
        raise ValueError(f"matmul: expected rank-2 operands, found {list(a._shape)} and "
                         f"{list(b._shape)}")
    _rule(frame.MatmulOp, [a, b], "matmul")
    _float(a, "matmul")
    return graph._emit(frame.MatmulOp(a._ssa, b._ssa), a._dtype)


def _rule(op: type, values: Sequence[Value], what: str, **attrs: object) -> None:
    """The dialect op's own shape rule on the operands; its ShapeError (expected vs
    found) becomes the API's ValueError."""
    try:
        op.rule([v._shape for v in values], **attrs)
    except frame.ShapeError as err:
        msg = str(err)
        prefix = f"{op.name}: "  # type: ignore[attr-defined]
        raise ValueError(f"{what}: {msg.removeprefix(prefix)}") from None


def sum(graph: Graph, x: Value, axes: Sequence[int]) -> Value:  # noqa: A001 - the API's name
    """Sum over `axes` ([] = all), dropping the reduced dims."""
    v = _graph(graph, "sum")._own(x, "sum")
    if isinstance(axes, str | bytes) or not isinstance(axes, Sequence | np.ndarray):
        raise TypeError("sum: axes must be a sequence of ints")
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int | np.integer):
            raise TypeError(f"sum: axes must be ints, found {a!r}")
    chosen_axes = [int(a) for a in axes]
    try:
        frame.check_axes(chosen_axes, len(v._shape), "sum")
    except frame.ShapeError as err:
        raise ValueError(str(err)) from None
    _float(v, "sum")
    chosen = None if not chosen_axes else sorted(chosen_axes)
    return graph._emit(frame.SumOp(v._ssa, chosen), v._dtype)


def mse_loss(graph: Graph, pred: Value, target: Value) -> Value:
    """mean((pred - target)^2) over all elements, rank 0."""
    a, b = _binary(graph, pred, target, "mse_loss")
    return graph._emit(frame.MseLossOp(a._ssa, b._ssa), a._dtype)


def constant(graph: Graph, values: Sequence[float], shape: Sequence[int], dtype: DType,
             backend: str = "cpu") -> Value:
    """A constant holding `values` row-major (exactly prod(shape) of them)."""
    g = _graph(graph, "constant")
    dims = _dims(shape, "constant")
    dtype = _dtype(dtype, "constant")
    check_backend(backend)
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        raise TypeError("constant: values must be a sequence of numbers")
    vals = list(values)
    if len(vals) != math.prod(dims):
        raise ValueError(f"constant: {len(vals)} values for shape {list(dims)} "
                         f"(expected exactly {math.prod(dims)})")
    if dtype in (DType.int32, DType.int64):
        limit = 2**31 - 1 if dtype == DType.int32 else 2**53
        low = -(2**31) if dtype == DType.int32 else -(2**53)
        for x in vals:
            if not float(x).is_integer() or not low <= x <= limit:
                raise ValueError(f"constant: {x!r} is not an integral value that fits "
                                 f"{dtype.name} (magnitude <= 2^53)")
        arr = np.array([int(x) for x in vals], dtype=np.int64)
    else:
        arr = np.array(vals, dtype=np.float64).astype(np.float32)
    return g._constant(arr.reshape(dims), dims, dtype, backend)


def heaviside_surrogate(graph: Graph, x: Value, alpha: float) -> Value:
    """1 where x >= 0 (-0.0 included), else 0; gradient dy*alpha*s*(1-s), s = sigmoid(alpha*x)."""
    v = _graph(graph, "heaviside_surrogate")._own(x, "heaviside_surrogate")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise TypeError("heaviside_surrogate: alpha must be a float")
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"heaviside_surrogate: alpha must be finite and > 0, found {alpha}")
    _float(v, "heaviside_surrogate")
    return graph._emit(frame.HeavisideSurrogateOp(v._ssa, float(alpha)), v._dtype)


def selective_scan(graph: Graph, x: Value, a: Value, b: Value, c: Value, d: Value) -> Value:
    """Per leading index, along the last axis from h = 0: h = a*h + b*x; y = c*h + d*x."""
    g = _graph(graph, "selective_scan")
    vs = [g._own(v, "selective_scan") for v in (x, a, b, c, d)]
    for v in vs[1:]:
        _same_dtype(vs[0], v, "selective_scan")
    _rule(frame.SelectiveScanOp, vs, "selective_scan")
    _float(vs[0], "selective_scan")
    return graph._emit(frame.SelectiveScanOp(*[v._ssa for v in vs]), vs[0]._dtype)


def scatter_add(graph: Graph, updates: Value, indices: Value,
                output_shape: Sequence[int]) -> Value:
    """Zero-filled `output_shape` [V, F] with out[indices[k], :] += updates[k, :]."""
    g = _graph(graph, "scatter_add")
    upd, idx = g._own(updates, "scatter_add"), g._own(indices, "scatter_add")
    dims = _dims(output_shape, "scatter_add")
    if len(upd._shape) != 2:
        raise ValueError(f"scatter_add: updates must be rank-2 [K, F], found {list(upd._shape)}")
    if idx._dtype not in (DType.int32, DType.int64) or len(idx._shape) != 1:
        raise ValueError(f"scatter_add: indices must be a rank-1 int32/int64 tensor, found "
                         f"{list(idx._shape)} {idx._dtype.name}")
    if idx._shape[0] != upd._shape[0]:
        raise ValueError(f"scatter_add: {idx._shape[0]} indices for {upd._shape[0]} update rows")
    if len(dims) != 2 or dims[1] != upd._shape[1]:
        raise ValueError(f"scatter_add: output_shape must be [V, {upd._shape[1]}], found "
                         f"{list(dims)}")
    _float(upd, "scatter_add")
    from frame_mlir.api.graph import _tensor_type

    out = graph._emit(frame.ScatterAddOp(upd._ssa, idx._ssa, _tensor_type(dims, upd._dtype)),
                      upd._dtype)
    graph._index_bounds.append((idx._ssa, dims[0]))
    return out
