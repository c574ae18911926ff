"""Lower a NetworkSpec to frame IR: one function per mode, built operator by operator.

`build_function(spec, "train")` gives

    @<name>(inputs..., params and constants...) -> (outputs..., loss, stats...)

where `loss` (present when the network has loss outputs) is the weighted sum of the
loss outputs, each summed over its elements as the reference's objective is
(`frame.loss_index` names it, so frame-autodiff differentiates it), and `stats` are
the BatchNorm running statistics after the step, each written into its own argument
(`frame.aliasing_output`). `"test"` mode builds the inference graph:
BatchNorm normalises with the running statistics and nothing is updated; it returns
the outputs only.

Arguments, in order: the network inputs, then parameters and constants as the
operators ask for them. Trainable parameters carry `frame.param = "<name>"`; frozen
parameters and running statistics are plain inputs; constants (interpolation indices
and weights) are inputs whose values the host fills once (`ArgRole.value`).

Every shape comes from the dialect's own rules: an op constructor that rejects its
operands, or an op that fails its verifier (each is verified as it is built, so that no
pass meets an op its verifier refuses), is reported as ``NET-005`` with the operator's
input shapes; so is a tensor of more than `MAX_ELEMENTS` elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame
from frame_mlir.frontends.common.errors import Diagnostic, SpecError
from frame_mlir.frontends.network.options import INT_MAX
from frame_mlir.frontends.network.spec import MAX_ELEMENTS, NetworkSpec, OperatorSpec
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.common import set_arg_attr
from frame_mlir.passes.frame_autodiff import LOSS_INDEX

__all__ = ["ArgRole", "BuiltFunction", "ParamInfo", "build_function", "check_network",
           "label_classes"]


@dataclass(frozen=True)
class ParamInfo:
    """A parameter (or running statistic) of the network, as dlprimitives names it."""

    name: str
    shape: tuple[int, ...]
    init: tuple[str, float]  # ("uniform", r): U(-r, r); ("fill", v): all v
    trainable: bool
    owner: str  # the operator that declared it first


@dataclass(frozen=True)
class ArgRole:
    """What one function argument is: a network input, a parameter or a constant."""

    kind: str  # "input" | "param" | "const"
    name: str
    value: np.ndarray | None = None  # a constant's values


@dataclass
class BuiltFunction:
    """A network function and what the host needs to call it."""

    fn: func.FuncOp
    roles: list[ArgRole]
    outputs: list[str]  # user names of the declared outputs, in result order
    has_loss: bool
    stats: list[str]  # names of the running statistics returned after the loss
    params: list[ParamInfo] = field(default_factory=list)


class _OpError(Exception):
    """An operator cannot be built; `rule` and the message become a diagnostic."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


ACT_OPS: dict[str, Callable[[SSAValue], Operation] | None] = {
    "identity": None,
    "relu": frame.ReluOp,
    "sigmoid": frame.SigmoidOp,
    "tanh": frame.TanhOp,
    "relu6": lambda x: frame.HardtanhOp(x, 0.0, 6.0),
}


def _pair(v: int | Sequence[int]) -> list[int]:
    return [int(v), int(v)] if isinstance(v, int) else [int(v[0]), int(v[1])]


def _shape(v: SSAValue) -> tuple[int, ...]:
    s = frame.static_shape(v)
    assert s is not None
    return tuple(s)


def _fmt(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


class _Builder:
    """Builds one function: keeps the values of tensors, parameters and constants."""

    def __init__(self, spec: NetworkSpec, mode: str, fn_name: str):
        self.spec, self.mode = spec, mode
        self.g = Graph(fn_name)
        self.roles: list[ArgRole] = []
        self.values: dict[str, SSAValue] = {}
        self.params: dict[str, ParamInfo] = {}
        self.param_values: dict[str, SSAValue] = {}
        self.stats: list[tuple[str, SSAValue]] = []  # (param name, updated value)
        self.op: OperatorSpec | None = None
        for inp in spec.inputs:
            elem = builtin.i32 if inp.dtype == "int" else builtin.f32
            self.values[inp.name] = self.g.add_input(inp.shape, inp.name, elem=elem)
            self.roles.append(ArgRole("input", inp.name))

    # -- helpers used by the operator builders -----------------------------------------
    def emit(self, op: Operation) -> SSAValue:
        """Append `op` once it passes its verifier and its result's element count is
        within MAX_ELEMENTS: whatever the passes would refuse later is the operator's
        NET-005 now."""
        op.verify()
        for r in op.results:
            shape = frame.static_shape(r)
            if shape is not None:
                self.check_size(shape)
        return self.g.emit(op)

    def check_size(self, shape: Sequence[int], what: str = "") -> None:
        n = math.prod(shape)
        if n > MAX_ELEMENTS:
            raise self.fail(f"element count overflows: {what}{_fmt(shape)} has {n} "
                            "elements (at most 2^50)")

    def param_name(self, index: int) -> str:
        """The name of the current operator's parameter #index: `<op>.<index>` unless
        the operator's `params` names it."""
        op = self.op
        assert op is not None
        return op.params[index] if index < len(op.params) and op.params[index] else \
            f"{op.name}.{index}"

    def param(self, index: int, shape: Sequence[int], init: tuple[str, float],
              trainable: bool = True) -> SSAValue:
        """The operator's parameter #index (see `param_name`; a name used twice is one
        shared tensor)."""
        op = self.op
        assert op is not None
        name = self.param_name(index)
        trainable = trainable and not op.frozen
        shape = tuple(int(d) for d in shape)
        self.check_size(shape, f"parameter '{name}' ")
        known = self.params.get(name)
        if known is not None:
            if known.shape != shape or known.trainable != trainable:
                raise _OpError("NET-009", f"parameter '{name}' is shared with operator "
                               f"'{known.owner}' but differs: shape {_fmt(shape)} "
                               f"{'trainable' if trainable else 'not trainable'} here, "
                               f"{_fmt(known.shape)} "
                               f"{'trainable' if known.trainable else 'not trainable'} there")
            return self.param_values[name]
        attrs = {"frame.param": builtin.StringAttr(name)} if trainable else None
        v = self.g.add_input(shape, name, attrs)
        self.params[name] = ParamInfo(name, shape, init, trainable, op.name)
        self.param_values[name] = v
        self.roles.append(ArgRole("param", name))
        return v

    def constant(self, values: np.ndarray) -> SSAValue:
        """A constant tensor: float32 values, or int64 indices."""
        arr = np.ascontiguousarray(values)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float32)
            flat = arr.reshape(-1)
            if flat.size and np.all(flat == flat[0]):
                return self.emit(frame.ConstantOp(float(flat[0]),
                                                  result_type=frame.tensor_type(arr.shape)))
            v = self.g.add_input(arr.shape, "const")
        else:
            arr = arr.astype(np.int64)
            v = self.g.add_input(arr.shape, "const", elem=builtin.i64)
        self.roles.append(ArgRole("const", f"const{len(self.roles)}", arr))
        return v

    def activation(self, x: SSAValue, name: str) -> SSAValue:
        make = ACT_OPS[name]
        return x if make is None else self.emit(make(x))

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape) == _shape(x):
            return x
        return self.emit(frame.ReshapeOp(x, frame.tensor_type(list(shape),
                                                               frame.element_type(x))))

    def fail(self, message: str, rule: str = "NET-005") -> _OpError:
        return _OpError(rule, message)

    # -- the whole network --------------------------------------------------------------
    def build(self) -> tuple[BuiltFunction | None, list[Diagnostic]]:
        diags: list[Diagnostic] = []
        for op in self.spec.operators:
            self.op = op
            if any(v not in self.values for v in op.inputs):
                continue  # an input failed to build: reported there already
            xs = [self.values[v] for v in op.inputs]
            try:
                with self.g.scope(op.name):
                    outs = BUILDERS[op.type](self, op, xs)
            except _OpError as err:
                diags.append(self._diag(op, xs, err.rule, str(err)))
                continue
            except (VerifyException, ValueError, OverflowError) as err:
                diags.append(self._diag(op, xs, "NET-005", str(err)))
                continue
            for name, v in zip(op.outputs, outs, strict=True):
                self.values[name] = v
        if diags:
            return None, diags
        results: list[SSAValue] = []
        losses: list[SSAValue] = []
        for i, o in enumerate(self.spec.outputs):
            v = self.values[o.value]
            results.append(v)
            if o.loss_weight is None:
                continue
            if not isinstance(frame.element_type(v), builtin.Float32Type):
                diags.append(Diagnostic("NET-010", f"/outputs/{i}", "a float loss",
                                        str(frame.element_type(v)),
                                        f"loss output '{o.name}' is not a float tensor"))
                continue
            # The reference seeds the gradient of every element of a loss tensor with
            # the loss weight, whatever its shape: its objective is the sum of the
            # elements (its benchmark nets name the [B, 1000] logits `loss`).
            shape = _shape(v)
            scalar = self.reshape(v, []) if math.prod(shape) == 1 else \
                self.emit(frame.SumOp(v, list(range(len(shape)))))
            if o.loss_weight != 1.0:
                scalar = self.emit(frame.ScaleOp(scalar, o.loss_weight))
            losses.append(scalar)
        if diags:
            return None, diags
        has_loss = bool(losses) and self.mode == "train"
        if has_loss:
            total = losses[0]
            for extra in losses[1:]:
                total = self.emit(frame.AddOp(total, extra))
            results.append(total)
        stats = self.stats if self.mode == "train" else []
        n_before = len(results)
        results.extend(v for _, v in stats)
        fn = self.g.finish(results)
        if has_loss:
            fn.attributes[LOSS_INDEX] = builtin.IntegerAttr(n_before - 1, 64)
        else:
            fn.attributes["frame.inference"] = builtin.UnitAttr()
        for k, (name, _) in enumerate(stats):
            arg = self.param_values[name]
            assert hasattr(arg, "index")
            set_arg_attr(fn, arg.index, "frame.aliasing_output",  # type: ignore[attr-defined]
                         builtin.IntegerAttr(n_before + k, 64))
        built = BuiltFunction(fn, self.roles, [o.name for o in self.spec.outputs], has_loss,
                              [n for n, _ in stats], list(self.params.values()))
        return built, []

    def _diag(self, op: OperatorSpec, xs: list[SSAValue], rule: str, msg: str) -> Diagnostic:
        shapes = ", ".join(
            f"'{n.split('@')[0]}' {_fmt(_shape(x))}"
            + ("" if isinstance(frame.element_type(x), builtin.Float32Type) else " int")
            for n, x in zip(op.inputs, xs, strict=True))
        where = f"inputs {shapes}" if shapes else "no inputs"
        return Diagnostic(rule, op.pointer, "inputs and options that fit", where,
                          f"{op.type} '{op.name}' ({where}): {msg}")


# --- operator builders: (builder, operator, input values) -> output values ---------------


def _float(b: _Builder, x: SSAValue, what: str) -> None:
    if not isinstance(frame.element_type(x), builtin.Float32Type):
        raise b.fail(f"{what} expected a float tensor, found an int one", "NET-010")


def _labels(b: _Builder, x: SSAValue, y: SSAValue) -> None:
    _float(b, x, "input #0")
    if not isinstance(frame.element_type(y), builtin.IntegerType):
        raise b.fail("labels (input #1) expected an int tensor (declare the input with "
                     "\"dtype\": \"int\"), found a float one", "NET-010")
    xs, ys = _shape(x), _shape(y)
    if len(xs) != 2 or ys != xs[:1]:
        raise b.fail(f"expected scores [N, C] and labels [N], found {_fmt(xs)} and "
                     f"{_fmt(ys)}")


def _softmax_loss(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _labels(b, *xs)
    return [b.reshape(b.emit(frame.CrossEntropyOp(xs[0], xs[1], "mean")), [1])]


def _nll_loss(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _labels(b, *xs)
    red = op.options["reduce"]
    y = b.emit(frame.NllLossOp(xs[0], xs[1], red))
    return [y if red == "none" else b.reshape(y, [1])]


def _mse_loss(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    x, t = xs
    _float(b, x, "input #0")
    _float(b, t, "input #1")
    if _shape(x) != _shape(t):
        raise b.fail(f"expected two inputs of one shape, found {_fmt(_shape(x))} and "
                     f"{_fmt(_shape(t))}")
    d = b.emit(frame.SubOp(x, t))
    sq = b.emit(frame.MulOp(d, d))
    red = op.options["reduce"]
    if red == "none":
        return [sq]
    y = b.emit(frame.SumOp(sq) if red == "sum" else frame.MeanOp(sq))
    return [b.reshape(y, [1])]


def _softmax(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _float(b, xs[0], "the input")
    if len(_shape(xs[0])) < 2:
        raise b.fail(f"expected an input of rank >= 2 (softmax runs over dim 1), found "
                     f"{_fmt(_shape(xs[0]))}")
    make = frame.LogSoftmaxOp if op.options["log"] else frame.SoftmaxOp
    return [b.emit(make(xs[0], 1))]


def _activation(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _float(b, xs[0], "the input")
    return [b.activation(xs[0], op.options["activation"])]


def _elementwise(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    x, y = xs
    _float(b, x, "input #0")
    _float(b, y, "input #1")
    if o["coef1"] != 1.0:
        x = b.emit(frame.ScaleOp(x, float(o["coef1"])))
    if o["coef2"] != 1.0:
        y = b.emit(frame.ScaleOp(y, float(o["coef2"])))
    make = {"sum": frame.AddOp, "prod": frame.MulOp, "max": frame.MaximumOp}[o["operation"]]
    return [b.activation(b.emit(make(x, y)), o["activation"])]


def _rank4(b: _Builder, x: SSAValue) -> tuple[int, ...]:
    _float(b, x, "the input")
    s = _shape(x)
    if len(s) != 4:
        raise b.fail(f"expected an NCHW input of rank 4, found {_fmt(s)}")
    return s


def _pooling(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    _rank4(b, xs[0])
    k, s, p = _pair(o["kernel"]), _pair(o["stride"]), _pair(o["pad"])
    if o["mode"] == "max":
        return [b.emit(frame.MaxPoolOp(xs[0], k, s, p, o["ceil_mode"]))]
    return [b.emit(frame.AvgPoolOp(xs[0], k, s, p, o["ceil_mode"], o["count_include_pad"]))]


def _global_pooling(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _rank4(b, xs[0])
    make = frame.GlobalMaxPoolOp if op.options["mode"] == "max" else frame.GlobalAvgPoolOp
    return [b.emit(make(xs[0]))]


def _bias(b: _Builder, y: SSAValue, bias: SSAValue, axis: int) -> SSAValue:
    rank = len(_shape(y))
    full = b.emit(frame.BroadcastOp(bias, y.type, [d for d in range(rank) if d != axis]))
    return b.emit(frame.AddOp(y, full))


def _inner_product(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    x = xs[0]
    _float(b, x, "the input")
    s = _shape(x)
    if len(s) < 2:
        raise b.fail(f"expected an input [N, features...] of rank >= 2, found {_fmt(s)}")
    k = math.prod(s[1:])
    if o["inputs"] is not None and o["inputs"] != k:
        raise b.fail(f"option inputs {o['inputs']} does not match the input's "
                     f"{k} features per sample")
    r = 1.0 / math.sqrt(k)
    w = b.param(0, (o["outputs"], k), ("uniform", r))
    y = b.emit(frame.MatmulOp(b.reshape(x, (s[0], k)), w, transpose_rhs=True))
    if o["bias"]:
        y = _bias(b, y, b.param(1, (o["outputs"],), ("uniform", r)), 1)
    return [b.activation(y, o["activation"])]


def _conv_common(b: _Builder, op: OperatorSpec, x: SSAValue) -> tuple[int, int]:
    o = op.options
    s = _rank4(b, x)
    cin = s[1]
    if o["channels_in"] is not None and o["channels_in"] != cin:
        raise b.fail(f"option channels_in {o['channels_in']} does not match the input's "
                     f"{cin} channels")
    g = o["groups"]
    if cin % g or o["channels_out"] % g:
        raise b.fail(f"groups {g} must divide channels_in {cin} and channels_out "
                     f"{o['channels_out']}")
    return cin, g


def _convolution(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    cin, g = _conv_common(b, op, xs[0])
    k = _pair(o["kernel"])
    r = math.sqrt(g / (cin * k[0] * k[1]))
    w = b.param(0, (o["channels_out"], cin // g, *k), ("uniform", r))
    y = b.emit(frame.ConvOp(xs[0], w, _pair(o["stride"]), _pair(o["pad"]), g,
                            _pair(o["dilate"])))
    if o["bias"]:
        y = _bias(b, y, b.param(1, (o["channels_out"],), ("uniform", r)), 1)
    return [b.activation(y, o["activation"])]


def _transposed_convolution(b: _Builder, op: OperatorSpec, xs: list[SSAValue]
                            ) -> list[SSAValue]:
    o = op.options
    cin, g = _conv_common(b, op, xs[0])
    k = _pair(o["kernel"])
    cout = o["channels_out"]
    r = math.sqrt(g / (cout * k[0] * k[1]))
    w = b.param(0, (cin, cout // g, *k), ("uniform", r))
    y = b.emit(frame.ConvTransposeOp(xs[0], w, _pair(o["stride"]), _pair(o["pad"]),
                                     _pair(o["output_pad"]), g, _pair(o["dilate"])))
    if o["bias"]:
        y = _bias(b, y, b.param(1, (cout,), ("uniform", r)), 1)
    return [b.activation(y, o["activation"])]


def _batch_norm(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    x = xs[0]
    _float(b, x, "the input")
    s = _shape(x)
    if len(s) not in (2, 3, 4):
        raise b.fail(f"expected a 2-D, 3-D or 4-D input [N, C, ...], found {_fmt(s)}")
    f = s[1]
    if o["features"] is not None and o["features"] != f:
        raise b.fail(f"option features {o['features']} does not match the input's {f} "
                     "channels (dim 1)")
    mean = b.param(0, (f,), ("fill", 0.0), trainable=False)
    var = b.param(1, (f,), ("fill", 1.0), trainable=False)
    if o["affine"]:
        gamma = b.param(2, (f,), ("fill", 1.0))
        beta = b.param(3, (f,), ("fill", 0.0))
    else:
        gamma = b.emit(frame.ConstantOp(1.0, result_type=frame.tensor_type([f])))
        beta = b.emit(frame.ConstantOp(0.0, result_type=frame.tensor_type([f])))
    eps = float(o["eps"])
    if b.mode == "test" or o["use_global_stats"]:
        return [b.emit(frame.BatchNormInferenceOp(x, gamma, beta, mean, var, eps, 1))]
    y = b.emit(frame.BatchNormOp(x, gamma, beta, eps, 1))
    m = float(o["momentum"])
    for index, value, which in ((0, mean, "mean"), (1, var, "var")):
        b.stats.append((b.param_name(index), b.emit(frame.BatchNormStatsOp(x, value, m,
                                                                         which, 1))))
    return [y]


def _axis(b: _Builder, dim: int, rank: int, what: str = "dim") -> int:
    if not -rank <= dim < rank:
        raise b.fail(f"{what} {dim} is out of range for rank {rank}")
    return dim % rank


def _concat(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    for i, x in enumerate(xs):
        _float(b, x, f"input #{i}")
    if len(xs) == 1:
        return xs
    return [b.emit(frame.ConcatOp(xs, _axis(b, op.options["dim"], len(_shape(xs[0])))))]


def _slice(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    s = _shape(xs[0])
    d = _axis(b, o["dim"], len(s))
    n = s[d]
    begin = o["begin"] + n if o["begin"] < 0 else o["begin"]
    end = n if o["end"] is None else (o["end"] + n if o["end"] < 0 else o["end"])
    if not 0 <= begin < end <= n:
        raise b.fail(f"slice [{o['begin']}, {o['end']}) of dim {d} (size {n}) is empty or "
                     "out of range")
    return [b.emit(frame.SliceOp(xs[0], d, begin, end))]


def _flatten(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    s = _shape(xs[0])
    return [b.reshape(xs[0], (s[0], math.prod(s[1:])))]


def _squeeze(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    s = _shape(xs[0])
    squeeze_all = o["all"] if o["all"] is not None else not o["dims"]
    if squeeze_all:
        axes = {i for i, d in enumerate(s) if d == 1}
    else:
        axes = {_axis(b, d, len(s)) for d in o["dims"]}
        bad = [a for a in sorted(axes) if s[a] != 1]
        if bad:
            raise b.fail(f"dims {bad} have sizes {[s[a] for a in bad]}, not 1")
    return [b.reshape(xs[0], [d for i, d in enumerate(s) if i not in axes])]


def _reshape(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    s = _shape(xs[0])
    dims = list(op.options["dims"])
    for i, d in enumerate(dims):
        if d == 0:
            if i >= len(s):
                raise b.fail(f"dims[{i}] = 0 keeps input dim {i}, but the input has rank "
                             f"{len(s)}")
            dims[i] = s[i]
        elif d < -1:
            raise b.fail(f"dims[{i}] = {d}: expected a size >= 1, 0 (keep) or -1 (deduce)")
    if dims.count(-1) > 1:
        raise b.fail(f"dims {op.options['dims']}: at most one -1 can be deduced")
    known = math.prod(d for d in dims if d != -1)
    total = math.prod(s)
    if -1 in dims:
        if known == 0 or total % known:
            raise b.fail(f"cannot deduce the -1 of dims {op.options['dims']} for "
                         f"{total} elements")
        dims[dims.index(-1)] = total // known
    if math.prod(dims) != total:
        raise b.fail(f"dims {op.options['dims']} give {math.prod(dims)} elements, the "
                     f"input has {total}")
    return [b.reshape(xs[0], dims)]


def _threshold(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _float(b, xs[0], "the input")
    return [b.emit(frame.StepOp(xs[0], float(op.options["threshold"])))]


def _hardtanh(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _float(b, xs[0], "the input")
    return [b.emit(frame.HardtanhOp(xs[0], float(op.options["min_val"]),
                                    float(op.options["max_val"])))]


def _abs(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    _float(b, xs[0], "the input")
    return [b.emit(frame.AbsOp(xs[0]))]


def _parameter(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    return [b.param(0, op.options["shape"], ("fill", 0.0))]


def _reduction(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    x = xs[0]
    _float(b, x, "the input")
    rank = len(_shape(x))
    if o["dims"] is not None:
        axes = sorted({_axis(b, d, rank, "dims entry") for d in o["dims"]})
    else:
        axes = list(range(_axis(b, o["start_axis"], rank, "start_axis"), rank))
    if not axes:
        raise b.fail("no axis to reduce")
    method = o["method"]
    if method == "sumsq":
        x = b.emit(frame.MulOp(x, x))
    elif method == "abssum":
        x = b.emit(frame.AbsOp(x))
    make = frame.MeanOp if method == "mean" else frame.SumOp
    y = b.emit(make(x, axes, keepdims=bool(o["keep_dim"])))
    if o["output_scale"] != 1.0:
        y = b.emit(frame.ScaleOp(y, float(o["output_scale"])))
    if not _shape(y):
        y = b.reshape(y, [1])
    return [y]


def _source_index(method: str, align: bool, n_in: int, n_out: int, scale: float | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torch's source coordinates for one axis: (i0, i1, lambda) -- i1 and lambda are
    unused by the nearest modes. `scale` is the user's scale factor (torch then uses
    1/scale, not in/out)."""
    dst = np.arange(n_out, dtype=np.float64)
    ratio = (1.0 / scale) if scale is not None else n_in / n_out
    if method == "nearest":
        i0 = np.minimum(np.floor(dst * np.float32(ratio)), n_in - 1).astype(np.int64)
        return i0, i0, np.zeros(n_out)
    if method == "nearest-exact":
        i0 = np.minimum(np.floor((dst + 0.5) * np.float32(ratio)), n_in - 1).astype(np.int64)
        return i0, i0, np.zeros(n_out)
    if align:
        r = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = dst * np.float32(r)
    else:
        src = np.maximum((dst + 0.5) * np.float32(ratio) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src), n_in - 1).astype(np.int64)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, (src - i0).astype(np.float32)


def _interpolation(b: _Builder, op: OperatorSpec, xs: list[SSAValue]) -> list[SSAValue]:
    o = op.options
    x = xs[0]
    s = _rank4(b, x)
    method, align = o["method"], bool(o["align_corners"])
    if align and method != "bilinear":
        raise b.fail("align_corners applies to the bilinear method only")
    y = x
    for axis, size_key, scale_key in ((2, "out_h", "scale_y"), (3, "out_w", "scale_x")):
        n_in = s[axis]
        size, scale = o[size_key], o[scale_key]
        if size > 0 and scale > 0:
            raise b.fail(f"give either {size_key} or {scale_key}, not both")
        if size > 0:
            n_out, factor = size, None
        elif scale > 0:
            n_out, factor = int(math.floor(n_in * scale)), float(scale)
        else:
            raise b.fail(f"expected {size_key} >= 1 or {scale_key} > 0 (-1: not given), "
                         f"found {size} and {scale}")
        if n_out < 1:
            raise b.fail(f"output size {n_out} along dim {axis} is empty")
        if n_out > INT_MAX:
            raise b.fail(f"output size {n_out} along dim {axis} exceeds {INT_MAX}")
        out_shape = list(_shape(y))
        out_shape[axis] = n_out
        b.check_size(out_shape)
        _fits_in_memory(out_shape)  # before the indices and weights are computed here
        i0, i1, lam = _source_index(method, align, n_in, n_out, factor)
        if n_out == n_in and np.array_equal(i0, np.arange(n_in)) and not lam.any():
            continue  # the identity along this axis
        a = b.emit(frame.IndexSelectOp(y, b.constant(i0), axis))
        if method != "bilinear" or not lam.any():
            y = a
            continue
        c = b.emit(frame.IndexSelectOp(y, b.constant(i1), axis))
        wshape = [1, 1, 1, 1]
        wshape[axis] = n_out
        w1 = b.constant(lam.reshape(wshape))
        w0 = b.constant((1.0 - lam).astype(np.float32).reshape(wshape))
        y = b.emit(frame.AddOp(b.emit(frame.MulOp(a, w0)), b.emit(frame.MulOp(c, w1))))
    return [y]


def _fits_in_memory(shape: Sequence[int]) -> None:
    """RT-001 (MemoryError) before the check allocates the source indices and weights of
    an output that cannot fit in the memory available: they are as long as its dim, and
    a machine with overcommit would not say no to them until too late."""
    from frame_mlir.runtime.memory import available_memory

    need = 4 * math.prod(shape)
    available = available_memory()
    if available is not None and need > available:
        gib = 1 << 30
        raise MemoryError(f"an Interpolation output {_fmt(shape)} needs {need / gib:.1f} "
                          f"GiB, {available / gib:.1f} GiB are available")


BUILDERS: dict[str, Callable[[_Builder, OperatorSpec, list[SSAValue]], list[SSAValue]]] = {
    "SoftmaxWithLoss": _softmax_loss, "NLLLoss": _nll_loss, "MSELoss": _mse_loss,
    "Softmax": _softmax, "Activation": _activation, "Elementwise": _elementwise,
    "Pooling2D": _pooling, "GlobalPooling": _global_pooling,
    "InnerProduct": _inner_product, "Convolution2D": _convolution,
    "TransposedConvolution2D": _transposed_convolution, "BatchNorm": _batch_norm,
    "Concat": _concat, "Slice": _slice, "Flatten": _flatten, "Squeeze": _squeeze,
    "Reshape": _reshape, "Threshold": _threshold, "Hardtanh": _hardtanh, "Abs": _abs,
    "Parameter": _parameter, "Reduction": _reduction, "Interpolation": _interpolation,
}


def build_function(spec: NetworkSpec, mode: str, fn_name: str | None = None
                   ) -> BuiltFunction:
    """The network's function for `mode` ("train" or "test").

    Raises:
        SpecError: NET-005 / NET-009 / NET-010 diagnostics, all of them.
    """
    if mode not in ("train", "test"):
        raise ValueError(f"mode expected 'train' or 'test', found {mode!r}")
    name = fn_name or (_symbol(spec.name) + ("_test" if mode == "test" else ""))
    built, diags = _Builder(spec, mode, name).build()
    if diags:
        raise SpecError(diags, spec.source)
    assert built is not None
    return built


def _symbol(name: str) -> str:
    """A function symbol from the network's name."""
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return out if out and not out[0].isdigit() else f"net_{out}"


def label_classes(spec: NetworkSpec) -> dict[str, int]:
    """The class count of each int input that a SoftmaxWithLoss or NLLLoss reads as its
    labels: dim 1 of the scores beside it (the smallest, if several losses read it).
    Labels in [0, count) are in range for all of them."""
    builder = _Builder(spec, "test", _symbol(spec.name))
    built, diags = builder.build()
    if diags:
        raise SpecError(diags, spec.source)
    ints = {i.name for i in spec.inputs if i.dtype == "int"}
    out: dict[str, int] = {}
    for op in spec.operators:
        if op.type in ("SoftmaxWithLoss", "NLLLoss") and op.inputs[1] in ints:
            count = _shape(builder.values[op.inputs[0]])[1]
            out[op.inputs[1]] = min(count, out.get(op.inputs[1], count))
    return out


def check_network(spec: NetworkSpec) -> None:
    """Build the training graph once: raises SpecError on shape, dtype, parameter and
    loss errors."""
    build_function(spec, "train")


def initial_values(params: Sequence[ParamInfo], seed: int) -> dict[str, np.ndarray]:
    """dlprimitives' default initialisation (README): uniform draws in declaration
    order from one seeded stream (numpy's Philox; the reference uses Philox-4x32-10
    with a time-based seed, so values are not bit-compatible with it), fills for the
    BatchNorm statistics and affine terms, zeros for a Parameter."""
    rng = np.random.Generator(np.random.Philox(seed))
    out: dict[str, np.ndarray] = {}
    for p in params:
        kind, v = p.init
        if kind == "uniform":
            out[p.name] = rng.uniform(-v, v, p.shape).astype(np.float32)
        else:
            out[p.name] = np.full(p.shape, v, dtype=np.float32)
    return out
