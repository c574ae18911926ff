"""Graph ops of the Python API: each checks its operands and emits a frame op.

Every op takes the Graph first and returns a Value of it; an operand from another
graph is a ValueError ("does not belong to this graph"), checked before anything else.
There is no broadcasting. The rules and messages follow the frame Python API sheet.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from frame_mlir.dialects import frame
from frame_mlir.frontends.api.graph import COMPUTE_DTYPES, Graph, Value, _dims, _dtype
from frame_mlir.frontends.api.tensor import DType, check_backend

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


#: The note before a same-shape rule's message: the sheet's wording ("same shape").
_SAME_SHAPE = "operands must have the same shape; "


def _binary(graph: Graph, lhs: Value, rhs: Value, what: str,
            op: type = frame.ElementwiseBinaryOp) -> tuple[Value, Value]:
    """The operands of a same-shape binary op, checked by `op`'s shape rule. add and
    mul use `ElementwiseBinaryOp`'s rule (frame.add and frame.mul themselves broadcast;
    the API's v0 contract does not)."""
    g = _graph(graph, what)
    a, b = g._own(lhs, what), g._own(rhs, what)
    _same_dtype(a, b, what)
    _rule(op, [a, b], what, note=_SAME_SHAPE)
    _float(a, what)
    return a, b


def add(graph: Graph, lhs: Value, rhs: Value) -> Value:
    """Elementwise `lhs + rhs`.

    Args:
        graph: the Graph the op is added to (every operand must belong to it, else
            ValueError "does not belong to this graph").
        lhs, rhs: Values of the same float dtype and the same shape (no broadcasting:
            ValueError "same shape").

    Shapes: `[*s], [*s] -> [*s]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> a = g.add_graph_input([2, 3], frame.DType.float32)
        >>> frame.add(g, a, a)
        <Value [2, 3] float32>
    """
    a, b = _binary(graph, lhs, rhs, "add")
    return graph._emit(frame.AddOp(a._ssa, b._ssa), a._dtype)


def mul(graph: Graph, lhs: Value, rhs: Value) -> Value:
    """Elementwise `lhs * rhs`.

    Args:
        graph: the Graph the op is added to.
        lhs, rhs: Values of the same float dtype and the same shape (no broadcasting:
            ValueError "same shape").

    Shapes: `[*s], [*s] -> [*s]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> a = g.add_graph_input([4], frame.DType.float16)
        >>> frame.mul(g, a, a)
        <Value [4] float16>
    """
    a, b = _binary(graph, lhs, rhs, "mul")
    return graph._emit(frame.MulOp(a._ssa, b._ssa), a._dtype)


def relu(graph: Graph, x: Value) -> Value:
    """`max(x, 0)` elementwise.

    Args:
        graph: the Graph the op is added to.
        x: a float Value.

    Shapes: `[*s] -> [*s]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> frame.relu(g, g.add_graph_input([2, 2], frame.DType.float32))
        <Value [2, 2] float32>
    """
    v = _graph(graph, "relu")._own(x, "relu")
    _float(v, "relu")
    return graph._emit(frame.ReluOp(v._ssa), v._dtype)


def square(graph: Graph, x: Value) -> Value:
    """`x * x` elementwise (a `frame.mul x, x`; its gradient is `2x * dy`).

    Args:
        graph: the Graph the op is added to.
        x: a float Value.

    Shapes: `[*s] -> [*s]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> frame.square(g, g.add_graph_input([3], frame.DType.float32))
        <Value [3] float32>
    """
    v = _graph(graph, "square")._own(x, "square")
    _float(v, "square")
    return graph._emit(frame.MulOp(v._ssa, v._ssa), v._dtype)


def matmul(graph: Graph, lhs: Value, rhs: Value) -> Value:
    """Matrix product `lhs @ rhs` (accumulating in float32).

    Args:
        graph: the Graph the op is added to.
        lhs: `[m, k]`, rhs: `[k, n]`: rank 2, the same float dtype; `lhs[1] != rhs[0]` is
            a ValueError "contraction dimension mismatch".

    Shapes: `[m, k], [k, n] -> [m, n]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> a = g.add_graph_input([4, 3], frame.DType.float32)
        >>> b = g.add_graph_input([3, 2], frame.DType.float32)
        >>> frame.matmul(g, a, b)
        <Value [4, 2] float32>
    """
    g = _graph(graph, "matmul")
    a, b = g._own(lhs, "matmul"), g._own(rhs, "matmul")
    _same_dtype(a, b, "matmul")
    if len(a._shape) != 2 or len(b._shape) != 2:  # the API's matmul is the rank-2 one
        raise ValueError(f"matmul: expected rank-2 operands, found {list(a._shape)} and "
                         f"{list(b._shape)}")
    _rule(frame.MatmulOp, [a, b], "matmul")
    _float(a, "matmul")
    return graph._emit(frame.MatmulOp(a._ssa, b._ssa), a._dtype)


def _rule(op: type, values: Sequence[Value], what: str, note: str = "",
          **attrs: object) -> tuple[int, ...]:
    """The dialect op's own shape rule on the operands (the single definition of what
    shapes it accepts); its ShapeError (expected vs found) becomes the API's
    ValueError `<what>: <note><rule's message>`. Returns the result shape."""
    try:
        return tuple(op.rule([v._shape for v in values], **attrs))
    except frame.ShapeError as err:
        msg, prefix = str(err), f"{getattr(op, 'name', '')}: "
        while msg.startswith(prefix):  # the API names its own function instead
            msg = msg.removeprefix(prefix)
        raise ValueError(f"{what}: {note}{msg}") from None


def sum(graph: Graph, x: Value, axes: Sequence[int]) -> Value:  # noqa: A001 - the API's name
    """Sum over `axes`, dropping the reduced dims (there is no keepdims).

    Args:
        graph: the Graph the op is added to.
        x: a float Value.
        axes: distinct axes with `0 <= axis < rank` (a negative axis is a ValueError, "is
            negative": no wrap-around; `axis >= rank` is "out of range"). `[]` means
            every axis, giving a rank-0 result.

    Shapes: `[d0, ..., dn] -> [the dims not in axes]`; `axes=[]`: `-> []`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 4], frame.DType.float32)
        >>> frame.sum(g, x, [1]), frame.sum(g, x, [])
        (<Value [2, 4] float32>, <Value [] float32>)
    """
    v = _graph(graph, "sum")._own(x, "sum")
    if isinstance(axes, str | bytes) or not isinstance(axes, Sequence | np.ndarray):
        raise TypeError("sum: axes must be a sequence of ints")
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int | np.integer):
            raise TypeError(f"sum: axes must be ints, found {a!r}")
    chosen_axes = [int(a) for a in axes]
    # [] means every axis: frame.sum without axes (its rule would read [] as "none").
    chosen = None if not chosen_axes else chosen_axes
    _rule(frame.SumOp, [v], "sum", axes=chosen)
    _float(v, "sum")
    chosen = None if chosen is None else sorted(chosen)
    return graph._emit(frame.SumOp(v._ssa, chosen), v._dtype)


def mse_loss(graph: Graph, pred: Value, target: Value) -> Value:
    """Mean squared error `mean((pred - target)^2)` over all elements.

    Args:
        graph: the Graph the op is added to.
        pred, target: Values of the same float dtype and the same shape.

    Shapes: `[*s], [*s] -> []` (rank 0).

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> p = g.add_graph_input([8, 1], frame.DType.float32)
        >>> frame.mse_loss(g, p, g.add_graph_input([8, 1], frame.DType.float32))
        <Value [] float32>
    """
    a, b = _binary(graph, pred, target, "mse_loss", frame.MseLossOp)
    return graph._emit(frame.MseLossOp(a._ssa, b._ssa), a._dtype)


def constant(graph: Graph, values: Sequence[float], shape: Sequence[int], dtype: DType,
             backend: str = "cpu") -> Value:
    """A constant holding `values` in row-major order.

    Args:
        graph: the Graph the op is added to.
        values: exactly `prod(shape)` numbers (no splat: a ValueError otherwise). For
            int32/int64 they must be integral with magnitude <= 2^53 (and fit int32).
        shape: the dims (non-negative ints).
        dtype: any DType; float16 / bfloat16 values are rounded to nearest even.
        backend: the device backend ("cpu"); an unknown name is a KeyError.

    Shapes: `-> shape`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> c = frame.constant(g, [1.0, 2.0, 3.0, 4.0], [2, 2], frame.DType.bfloat16)
        >>> g.mark_output(c)
        >>> out = frame.compile(g, "cpu").run([])[0]
        >>> out.dtype, out.to(frame.DType.float32).numpy().tolist()
        (<DType.bfloat16: 3>, [[1.0, 2.0], [3.0, 4.0]])
    """
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


def check_positive_f32(value: float, what: str, arg: str) -> None:
    """ValueError unless `value` is finite and > 0 once rounded to float32: ops keep such
    numbers as f32 attributes, where 1e-50 becomes 0 and 1e39 infinity, and the op's
    verifier would then fail inside a pass instead of here."""
    with np.errstate(over="ignore", under="ignore"):
        rounded = float(np.float32(value))
    if not (math.isfinite(rounded) and rounded > 0):
        raise ValueError(f"{what}: {arg} must be finite and > 0 in float32, found {value}")


def heaviside_surrogate(graph: Graph, x: Value, alpha: float) -> Value:
    """The spike function: 1 where `x >= 0` (-0.0 included), else 0. Its gradient is the
    surrogate `dy * alpha * s * (1 - s)` with `s = sigmoid(alpha * x)`.

    Args:
        graph: the Graph the op is added to.
        x: a float Value.
        alpha: the surrogate's slope, finite and > 0 (else ValueError here).

    Shapes: `[*s] -> [*s]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([5], frame.DType.float32)
        >>> frame._core.heaviside_surrogate(g, x, 2.0)
        <Value [5] float32>
    """
    v = _graph(graph, "heaviside_surrogate")._own(x, "heaviside_surrogate")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise TypeError("heaviside_surrogate: alpha must be a float")
    check_positive_f32(alpha, "heaviside_surrogate", "alpha")
    _float(v, "heaviside_surrogate")
    return graph._emit(frame.HeavisideSurrogateOp(v._ssa, float(alpha)), v._dtype)


def selective_scan(graph: Graph, x: Value, a: Value, b: Value, c: Value, d: Value) -> Value:
    """A linear recurrence along the last axis, per leading index, from `h = 0`:
    `h = a[t] * h + b[t] * x[t]`, then `y[t] = c[t] * h + d[t] * x[t]` (in float32).
    E.g. x=[1,2,-1], a=[.5,.25,-.5], b=[2,1,3], c=[1,2,.5], d=[.1,-1,2] give
    [2.1, 3.0, -4.125].

    Args:
        graph: the Graph the op is added to.
        x, a, b, c, d: five Values of one shape (rank >= 1, last dim >= 1) and one float
            dtype.

    Shapes: `5 x [*lead, T] -> [*lead, T]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> v = [g.add_graph_input([2, 3], frame.DType.float32) for _ in range(5)]
        >>> frame._core.selective_scan(g, *v)
        <Value [2, 3] float32>
    """
    g = _graph(graph, "selective_scan")
    vs = [g._own(v, "selective_scan") for v in (x, a, b, c, d)]
    for v in vs[1:]:
        _same_dtype(vs[0], v, "selective_scan")
    _rule(frame.SelectiveScanOp, vs, "selective_scan")
    _float(vs[0], "selective_scan")
    return graph._emit(frame.SelectiveScanOp(*[v._ssa for v in vs]), vs[0]._dtype)


def scatter_add(graph: Graph, updates: Value, indices: Value,
                output_shape: Sequence[int]) -> Value:
    """A zero-filled `[V, F]` result with `out[indices[k], :] += updates[k, :]`: repeated
    indices accumulate, untouched rows stay 0. An index outside [0, V) is a ValueError
    when the executable runs.

    Args:
        graph: the Graph the op is added to.
        updates: `[K, F]`, a float Value.
        indices: `[K]`, an int32 or int64 Value.
        output_shape: `[V, F]` (the same F).

    Shapes: `[K, F], [K] -> [V, F]`.

    Example:
        >>> import frame
        >>> g = frame.Graph("example")
        >>> u = g.add_graph_input([3, 2], frame.DType.float32)
        >>> i = frame.constant(g, [2, 0, 2], [3], frame.DType.int64)
        >>> frame._core.scatter_add(g, u, i, [4, 2])
        <Value [4, 2] float32>
    """
    g = _graph(graph, "scatter_add")
    upd, idx = g._own(updates, "scatter_add"), g._own(indices, "scatter_add")
    dims = _dims(output_shape, "scatter_add")
    if idx._dtype not in (DType.int32, DType.int64):
        raise ValueError(f"scatter_add: indices expected dtype int32 or int64, found "
                         f"'{idx._dtype.name}'")
    # The result shape is declared (output_shape), so the rule takes it as an attribute.
    _rule(frame.ScatterAddOp, [upd, idx], "scatter_add", **{frame.RESULT_SHAPE: dims})
    _float(upd, "scatter_add")
    from frame_mlir.frontends.api.graph import _tensor_type

    out = graph._emit(frame.ScatterAddOp(upd._ssa, idx._ssa, _tensor_type(dims, upd._dtype)),
                      upd._dtype)
    graph._index_bounds.append((idx._ssa, dims[0]))
    return out
