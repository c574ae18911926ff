"""Training graphs of the Python API, made by the compiler's own IR transformations.

`build_backward_graph` runs `frame-autodiff` (the pass frame-run uses, with its VJP
table) on a snapshot of the forward graph; `build_sgd_update_graph` builds the update
`p + (-lr) * g` from ordinary graph ops. Both return new Graphs that compile like any
other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.api import ops
from frame_mlir.api.graph import Graph, Value, _arg_dtype, _dims, _dtype
from frame_mlir.api.tensor import DType, check_backend
from frame_mlir.dialects import frame
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
    """A new graph with `forward`'s inputs and outputs, followed by the gradient of
    output `loss_output_index` with respect to each input in `wrt_input_indices`."""
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
    """Graph `sgd_update`: inputs [p_0..p_{n-1}, g_0..g_{n-1}], outputs p_i + (-lr) * g_i."""
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
    for p, gr, (dims, dt) in zip(params, grads, types, strict=True):
        neg_lr = ops.constant(g, [-float(learning_rate)] * math.prod(dims), list(dims), dt,
                              backend)
        g.mark_output(ops.add(g, p, ops.mul(g, neg_lr, gr)))
    return g
