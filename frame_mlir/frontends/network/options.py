"""The operators of the JSON network format and their options: one table, from which
the JSON Schema (`schema.py`), the loader's defaults and `docs/network-format.md` come.

Each operator type lists its options as `Option(kind, default)`; `REQUIRED` marks an
option without a default. Kinds:

    int, pos_int   an integer in [-INT_MAX, INT_MAX] ([1, INT_MAX] for pos_int)
    number         a number representable in float32: magnitude at most F32_MAX
    bool           true / false, or the integer 0 / 1 (the reference's ONNX-converted
                   networks write `"count_include_pad": 0`)
    pair           an integer or a list of two (height, width), e.g. kernel 3 or [3, 5],
                   each in [minimum, INT_MAX]
    int_list       a list of integers, each in [-INT_MAX, INT_MAX]
    shape          a non-empty list of positive integers
    enum           one of `choices`

An option's `minimum` / `maximum` (inclusive) and `exclusive_minimum` narrow its kind's
range: every value a verifier, pass or library would refuse later (a kernel of 0, a
BatchNorm eps of 0, a momentum of 5) is refused by the schema, at the option's JSON
pointer. Ranges that involve two options (Hardtanh's min_val < max_val) or float32
rounding (an eps that rounds to 0) are the loader's (`loader._option_values`).

`inputs` says how many input tensors an operator takes (None: one or more).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The standard activation names of the format.
ACTIVATIONS = ("relu", "sigmoid", "tanh", "relu6", "identity")
#: dlprimitives' GPU algorithm choices for convolutions: accepted, they pick no CPU code.
CONV_ALGOS = ("gemm", "winograd", "depthwise_separable")
REDUCTIONS = ("none", "mean", "sum")

REQUIRED: Any = object()

#: The largest integer option: sizes, indices and strides become 32-bit-safe IR values.
INT_MAX = 2**31 - 1
#: The largest finite float32: number options become float32 IR attributes.
F32_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class Option:
    """One option of an operator: its kind, default, (for enums) choices and range."""

    kind: str
    default: Any = REQUIRED
    choices: tuple[Any, ...] = ()
    doc: str = ""
    minimum: float | None = None  # inclusive; a pair's entries; default: the kind's
    maximum: float | None = None  # inclusive
    exclusive_minimum: float | None = None


@dataclass(frozen=True)
class OperatorType:
    """What the format says about one operator type."""

    name: str
    options: dict[str, Option]
    inputs: int | None  # number of input tensors; None = one or more
    doc: str


def _act(default: str = "identity") -> Option:
    return Option("enum", default, ACTIVATIONS, "fused activation")


def _pair(default: Any = REQUIRED, doc: str = "", minimum: int = 1) -> Option:
    """A pair option; kernel, stride and dilation sizes are >= 1, paddings >= 0."""
    return Option("pair", default, doc=doc, minimum=minimum)


_CONV = {
    "channels_out": Option("pos_int", doc="output channels"),
    "channels_in": Option("pos_int", None, doc="input channels; deduced from the input"),
    "groups": Option("pos_int", 1, doc="convolution groups"),
    "bias": Option("bool", True, doc="add a bias per output channel"),
    "kernel": _pair(doc="kernel size"),
    "stride": _pair(1),
    "pad": _pair(0, minimum=0),
    "dilate": _pair(1),
    "activation": _act(),
    "fwd_algo": Option("enum", None, CONV_ALGOS, "dlprimitives GPU kernel choice; ignored"),
    "bwd_data_algo": Option("enum", None, CONV_ALGOS, "as fwd_algo; ignored"),
    "bwd_filter_algo": Option("enum", None, CONV_ALGOS, "as fwd_algo; ignored"),
}

OPERATORS: dict[str, OperatorType] = {t.name: t for t in (
    OperatorType("SoftmaxWithLoss", {}, 2,
                 "mean cross entropy of logits [N, C] at int labels [N]; output [1]"),
    OperatorType("NLLLoss", {"reduce": Option("enum", "mean", REDUCTIONS)}, 2,
                 "negative log likelihood of log-probabilities [N, C] at int labels [N]"),
    OperatorType("MSELoss", {"reduce": Option("enum", "mean", REDUCTIONS)}, 2,
                 "mean squared error of two tensors of one shape; both get gradients"),
    OperatorType("Softmax", {"log": Option("bool", False, doc="log-softmax")}, 1,
                 "softmax over dim 1"),
    OperatorType("Activation", {"activation": Option("enum", REQUIRED, ACTIVATIONS)}, 1,
                 "an activation function"),
    OperatorType("Elementwise", {
        "operation": Option("enum", "sum", ("sum", "prod", "max")),
        "coef1": Option("number", 1.0, doc="scale of the first input"),
        "coef2": Option("number", 1.0, doc="scale of the second input"),
        "activation": _act()}, 2,
        "act(op(coef1 * a, coef2 * b)) with numpy broadcasting"),
    OperatorType("Pooling2D", {
        "mode": Option("enum", "max", ("max", "avg")),
        "kernel": _pair(), "stride": _pair(1), "pad": _pair(0, minimum=0),
        "count_include_pad": Option("bool", False),
        "ceil_mode": Option("bool", False)}, 1, "2-D max or average pooling on NCHW"),
    OperatorType("GlobalPooling", {"mode": Option("enum", "max", ("max", "avg"))}, 1,
                 "max or average over H and W: [N, C, H, W] -> [N, C, 1, 1]"),
    OperatorType("InnerProduct", {
        "outputs": Option("pos_int", doc="output features"),
        "inputs": Option("pos_int", None, doc="input features; deduced from the input"),
        "bias": Option("bool", True), "activation": _act()}, 1,
        "x W^T + b on the input flattened to [N, features]"),
    OperatorType("Convolution2D", dict(_CONV), 1, "2-D convolution on NCHW"),
    OperatorType("TransposedConvolution2D", {**_CONV, "output_pad": _pair(0, minimum=0)}, 1,
                 "2-D transposed convolution on NCHW"),
    OperatorType("BatchNorm", {
        "features": Option("pos_int", None, doc="channels (dim 1); deduced from the input"),
        "eps": Option("number", 1e-5, exclusive_minimum=0.0, doc="> 0"),
        "momentum": Option("number", 0.1, minimum=0.0, maximum=1.0, doc="in [0, 1]"),
        "affine": Option("bool", True, doc="trainable gamma and beta"),
        "use_global_stats": Option("bool", False,
                                   doc="normalise with the running statistics")}, 1,
        "batch normalisation over dim 1 of a 2-D, 3-D or 4-D input"),
    OperatorType("Concat", {"dim": Option("int", 1)}, None, "concatenation along dim"),
    OperatorType("Slice", {"dim": Option("int", 1), "begin": Option("int", 0),
                           "end": Option("int", None, doc="default: the end")}, 1,
                 "x.narrow(dim, begin, end - begin)"),
    OperatorType("Flatten", {}, 1, "[N, ...] -> [N, features]"),
    OperatorType("Squeeze", {"all": Option("bool", None,
                                           doc="default: true when dims is empty"),
                             "dims": Option("int_list", [])}, 1,
                 "drop size-1 dims (all of them, or the listed ones)"),
    OperatorType("Reshape", {"dims": Option("int_list")}, 1,
                 "reshape; 0 keeps the input's dim, -1 is deduced"),
    OperatorType("Threshold", {"threshold": Option("number", 0.0)}, 1,
                 "x > threshold ? 1 : 0, no gradient"),
    OperatorType("Hardtanh", {"min_val": Option("number", -1.0, doc="below max_val"),
                              "max_val": Option("number", 1.0)}, 1,
                 "max(min_val, min(max_val, x))"),
    OperatorType("Abs", {}, 1, "|x|"),
    OperatorType("Parameter", {"shape": Option("shape"),
                               "dtype": Option("enum", "float", ("float",))}, 0,
                 "a trainable tensor as an operator output"),
    OperatorType("Reduction", {
        "method": Option("enum", "sum", ("sum", "sumsq", "abssum", "mean")),
        "dims": Option("int_list", None, doc="axes to reduce (negative from the end)"),
        "start_axis": Option("int", 0, doc="without dims: reduce start_axis..last"),
        "keep_dim": Option("bool", False),
        "output_scale": Option("number", 1.0)}, 1,
        "output_scale * sum|sum of squares|sum of abs|mean over axes"),
    OperatorType("Interpolation", {
        "method": Option("enum", "nearest", ("nearest", "nearest-exact", "bilinear")),
        "out_h": Option("int", -1), "out_w": Option("int", -1),
        "scale_y": Option("number", -1.0), "scale_x": Option("number", -1.0),
        "align_corners": Option("bool", False)}, 1,
        "resize H and W to out_h/out_w or by scale_y/scale_x (-1: not given)"),
)}

#: Operators whose output is a loss by construction (a scalar where reduced).
LOSS_TYPES = ("SoftmaxWithLoss", "NLLLoss", "MSELoss")


def with_defaults(op_type: str, given: dict[str, Any]) -> dict[str, Any]:
    """`given` options completed with the type's defaults (REQUIRED ones must be given:
    the schema checked that). Unknown keys are dropped (the loader warned about them,
    as the reference ignores them); an integer 0 / 1 for a boolean becomes False / True."""
    options = OPERATORS[op_type].options
    out = {k: o.default for k, o in options.items() if o.default is not REQUIRED}
    for k, v in given.items():
        if k not in options:
            continue
        kind = options[k].kind
        if kind == "bool":
            out[k] = bool(v)
        else:
            out[k] = _integral(v) if kind in _INTEGER_KINDS else v
    return out


# Kinds whose values the builders use as Python ints: JSON Schema calls `3.0` an
# integer, so the schema lets it through, and a float would reach IR attributes.
_INTEGER_KINDS = frozenset({"int", "pos_int", "pair", "int_list", "shape"})


def _integral(value: Any) -> Any:
    """`value` with every integral float (`3.0`) made an int, in lists too."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value
