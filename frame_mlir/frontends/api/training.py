"""Training graphs of the Python API, made by the compiler's own IR transformations.

`build_backward_graph` runs `frame-autodiff` (the pass frame-run uses, with its VJP
table) on a snapshot of the forward graph; `build_sgd_update_graph` builds the update
`p + (-lr) * g` on the dialect's `frame.sgd_update` op, as the optimizer library
(`frame_mlir/optim/fused.py`) makes it. Both return new Graphs that
compile like any other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.frontends.api import ops
from frame_mlir.frontends.api.graph import Graph, Value, _arg_dtype, _dims, _dtype
from frame_mlir.frontends.api.tensor import DType, check_backend
from frame_mlir.optim import rounded_sgd_update
from frame_mlir.passes.common import set_arg_attr
from frame_mlir.passes.frame_autodiff import LOSS_INDEX, FrameAutodiff
from frame_mlir.passes.frame_shape_inference import FrameShapeInference
from frame_mlir.passes.pipeline import PipelineError, make_context, run_passes

__all__ = ["build_backward_graph", "build_sgd_update_graph"]


def _index(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"build_backward_graph: {what} must be an int, found {value!r}")
    return value


def build_backward_graph(forward: Graph, loss_output_index: int,
                         wrt_input_indices: Sequence[int]) -> Graph:
    """A new graph computing `forward`'s outputs and gradients of one of them (`forward` is
    not modified; the new graph has its name and inputs).

    Args:
        forward: the forward Graph.
        loss_output_index: which output is the loss; it must be scalar (rank 0 or one
            element). Outside `[0, n_outputs)` is a ValueError "out of range".
        wrt_input_indices: the inputs to differentiate with respect to (distinct, in
            `[0, n_inputs)`, float dtypes). An input that does not reach the loss gets
            zeros.

    Outputs: `[forward outputs..., grad of input wrt[0], grad of input wrt[1], ...]`;
    each gradient has its input's shape and dtype. An op without a gradient rule is a
    NotImplementedError naming it.

    Shapes: `grad(input i)` has `input i`'s shape.

    Example:
        >>> import numpy as np, frame
        >>> g = frame.Graph("f")
        >>> x = g.add_graph_input([3], frame.DType.float32)
        >>> g.mark_output(frame.sum(g, frame.square(g, x), []))
        >>> step = frame.compile(frame.build_backward_graph(g, 0, [0]), "cpu")
        >>> [t.numpy() for t in step.run([frame.from_numpy(np.array([1, 2, 3], np.float32))])]
        [array(14., dtype=float32), array([2., 4., 6.], dtype=float32)]
    """
    if not isinstance(forward, Graph):
        raise TypeError("build_backward_graph: expected a Graph")
    loss_index = _index(loss_output_index, "loss_output_index")
    n_out, n_in = len(forward._outputs), len(forward._inputs)
    if not 0 <= loss_index < n_out:
        raise ValueError(f"build_backward_graph: loss_output_index {loss_index} is out of "
                         f"range (the graph has {n_out} outputs)")
    if isinstance(wrt_input_indices, str | bytes) or not isinstance(wrt_input_indices,
                                                                     Sequence):
        raise TypeError("build_backward_graph: wrt_input_indices must be a sequence of ints")
    wrt = [_index(i, "wrt_input_indices entries") for i in wrt_input_indices]
    for i in wrt:
        if not 0 <= i < n_in:
            raise ValueError(f"build_backward_graph: wrt input index {i} is out of range "
                             f"(the graph has {n_in} inputs)")
    if len(set(wrt)) != len(wrt):
        raise ValueError(f"build_backward_graph: duplicate wrt input index in {wrt}")
    for i in wrt:
        dtype = _arg_dtype(forward, forward._inputs[i])
        if not dtype.is_float:
            raise ValueError(f"build_backward_graph: input {i} has dtype '{dtype.name}': "
                             "gradients exist for float32, float16 and bfloat16 inputs "
                             "only")
    loss = forward._outputs[loss_index]
    if math.prod(loss._shape) != 1:
        raise ValueError(f"build_backward_graph: the loss must be a scalar (rank 0 or one "
                         f"element), found shape {list(loss._shape)}")

    fn, hidden = forward._snapshot()
    if not wrt:  # nothing to differentiate: the forward outputs alone
        return _graph_from_function(forward, fn, hidden, n_out, [], [])
    # Mark the wrt inputs as parameters, in the order asked for: autodiff returns the
    # gradients in parameter (= argument) order, so argument order is restored below.
    for i in wrt:
        set_arg_attr(fn, i, "frame.param", builtin.StringAttr(f"in{i}"))
    fn.attributes[LOSS_INDEX] = builtin.IntegerAttr(loss_index, 64)
    module = builtin.ModuleOp([fn, *(f.clone() for f in forward._functions.values())])
    try:
        run_passes(make_context(), module, [FrameShapeInference(), FrameAutodiff()])
    except PipelineError as err:
        if "no gradient rule" in str(err):
            raise NotImplementedError(f"build_backward_graph: {err}") from None
        raise ValueError(f"build_backward_graph: {err}") from None
    grad_fn = next(o for o in module.ops if isinstance(o, func.FuncOp)
                   and "frame.grad_of" in o.attributes)
    g = _graph_from_function(forward, grad_fn, hidden, n_out, sorted(wrt), wrt)
    # The step functions of the graph's scans, and the VJP steps autodiff added.
    g._functions = {o.sym_name.data: o.clone() for o in module.ops
                    if isinstance(o, func.FuncOp) and o is not fn and o is not grad_fn}
    return g


def _graph_from_function(forward: Graph, fn: func.FuncOp, hidden: list, n_out: int,
                         arg_order: list[int], wanted: list[int]) -> Graph:
    """Wrap the gradient function as a Graph with the forward graph's inputs."""
    g = Graph(forward.name)
    g._backend = forward._backend
    block = fn.body.blocks[0]
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    mapping: dict[SSAValue, SSAValue] = {}
    n_user = len(forward._inputs)
    for i, arg in enumerate(block.args):
        dtype = _arg_dtype(forward, (*forward._inputs, *hidden)[i])
        if i < n_user:
            v = g.add_graph_input(list(arg.type.get_shape()), dtype,  # type: ignore[attr-defined]
                                  forward._backend or "cpu")
            mapping[arg] = v._ssa
        else:
            const = forward._hidden[hidden[i - n_user]]
            new = g._block.insert_arg(arg.type, len(g._block.args))
            new.name_hint = f"const{len(g._hidden)}"
            g._hidden[new] = const
            mapping[arg] = new
    # scatter_add's index checks follow its indices into the new graph: the backward
    # executable must refuse out-of-range indices exactly as the forward one does.
    sources = (*forward._inputs, *hidden)
    carried = {src: mapping[block.args[i]] for i, src in enumerate(sources)}
    g._index_bounds = [(carried[a], bound) for a, bound in forward._index_bounds
                       if a in carried]
    for op in list(block.ops):
        if op is ret:
            continue
        for key in ("frame.stage", "frame.layer"):
            op.attributes.pop(key, None)
        g._block.add_op(op.clone(value_mapper=mapping))
        for old, new in zip(op.results, g._block.last_op.results, strict=True):
            mapping[old] = new
    results = [mapping[v] for v in ret.operands]
    dtypes = [o._dtype for o in forward._outputs]
    grads_by_arg = dict(zip(arg_order, results[n_out:], strict=True))
    for v, dt in zip(results[:n_out], dtypes, strict=True):
        g.mark_output(g._value(v, frame.static_shape(v) or (), dt))
    for i in wanted:
        v = grads_by_arg[i]
        g.mark_output(g._value(v, frame.static_shape(v) or (),
                               _arg_dtype(forward, forward._inputs[i])))
    return g


def build_sgd_update_graph(param_types: Sequence[tuple[Sequence[int], DType]],
                           learning_rate: float, backend: str = "cpu") -> Graph:
    """The graph `sgd_update`: inputs `[p_0 ... p_{n-1}, g_0 ... g_{n-1}]`, outputs
    `[p_i - lr * g_i]` (the dialect's `frame.sgd_update`, rounded exactly as
    `add(p, mul(constant(-lr), g))`: in float16 / bfloat16, -lr and the product are each
    rounded to the parameter's dtype).

    Args:
        param_types: one `(shape, dtype)` per parameter (a float dtype; not empty).
        learning_rate: a finite float (else ValueError "must be finite").
        backend: the inputs' backend ("cpu"); an unknown name is a KeyError.

    Shapes: `[*s_i], [*s_i] -> [*s_i]` per parameter.

    Example:
        >>> import numpy as np, frame
        >>> F32 = frame.DType.float32
        >>> sgd = frame.compile(frame.build_sgd_update_graph([([2], F32)], 0.5), "cpu")
        >>> p, g = (frame.from_numpy(np.array(v, np.float32)) for v in ([1, 2], [2, -2]))
        >>> sgd.run([p, g])[0].numpy()
        array([0., 3.], dtype=float32)
    """
    check_backend(backend)
    if isinstance(param_types, str | bytes) or not isinstance(param_types, Sequence):
        raise TypeError("build_sgd_update_graph: param_types must be a sequence of "
                        "(shape, dtype) pairs")
    if len(param_types) == 0:
        raise ValueError("build_sgd_update_graph: param_types is empty")
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, int | float):
        raise TypeError("build_sgd_update_graph: learning_rate must be a float")
    if not math.isfinite(learning_rate):
        raise ValueError(f"build_sgd_update_graph: learning_rate must be finite, "
                         f"found {learning_rate}")
    types: list[tuple[tuple[int, ...], DType]] = []
    for entry in param_types:
        if not isinstance(entry, Sequence) or len(entry) != 2:
            raise TypeError("build_sgd_update_graph: each entry must be (shape, dtype)")
        shape, dtype = entry
        dims, dt = _dims(shape, "build_sgd_update_graph"), _dtype(dtype,
                                                                    "build_sgd_update_graph")
        if not dt.is_float:
            raise ValueError(f"build_sgd_update_graph: parameter dtype must be a float "
                             f"dtype, found '{dt.name}'")
        types.append((dims, dt))
    g = Graph("sgd_update")
    params: list[Value] = [g.add_graph_input(list(d), t, backend) for d, t in types]
    grads: list[Value] = [g.add_graph_input(list(d), t, backend) for d, t in types]
    lr = float(learning_rate)
    for p, gr, (dims, dt) in zip(params, grads, types, strict=True):
        g.mark_output(_sgd_step(g, p, gr, lr, dims, dt, backend))
    return g


def _sgd_step(g: Graph, p: Value, grad: Value, lr: float, dims: tuple[int, ...], dt: DType,
              backend: str) -> Value:
    """`p + (-lr) * grad` as the dialect's `frame.sgd_update`, bit for bit the sheet's
    reference `add(p, mul(constant(-lr), grad))`, which rounds -lr, the product and the
    sum to the parameter's dtype (`frame_mlir.optim.rounded_sgd_update` says how): when
    the op alone cannot be that, the step `mul(constant(lr), grad)` is made first here,
    in the parameter's dtype.
    """
    def scaled_grad() -> SSAValue:
        # One value, rounded as `ops.constant` rounds it (float64 -> float32 -> dt), made
        # a splat of `dims` by `Graph._constant`: a list of prod(dims) copies of lr was a
        # MemoryError without a message for a parameter of 2^31 x 90 elements (fuzzing).
        lr_const = g._constant(np.array([lr], np.float64).astype(np.float32), dims, dt,
                               backend)
        return ops.mul(g, lr_const, grad)._ssa

    return g._emit(rounded_sgd_update(p._ssa, grad._ssa, lr, float32=dt == DType.float32,
                                      scaled_grad=scaled_grad), dt)
