"""Exporters of a trained `.kyn` model: ONNX, npz, a PyTorch state_dict and TorchScript.

The parameters come from the native trainer as numpy arrays named as docs/kyn.md fixes
them: layer `j` (the layers after `input`, numbered from 0) owns `layers.<j>.weight` and
`layers.<j>.bias`, and a batchnorm also `layers.<j>.running_mean`, `.running_var` and
`.num_batches_tracked`.

* :func:`export_onnx` writes the model's *inference* graph (dropout is the identity,
  batchnorm uses its running statistics) as an ONNX ModelProto. The protobuf is encoded by
  hand with the varint helpers of :mod:`frame_mlir.frontends.api.onnx_weights`, so exporting needs no
  `onnx` package (that is only the tests' oracle).
* :func:`export_npz` writes every parameter and buffer with :func:`numpy.savez`.
* :func:`export_torch` writes a `state_dict` that the emitted PyTorch script's `KynModel`
  loads; :func:`export_torchscript` scripts that class with the trained weights. Both
  import torch lazily: it is not a runtime dependency, and its absence is a `KYN-C06` error.
* :func:`export_model` dispatches on an ``export:`` block.

Every file is written to a temporary file next to its target and moved into place with
:func:`os.replace`, so a reader never sees a half-written model and a failed export leaves
an existing file untouched.
"""

from __future__ import annotations

import contextlib
import linecache
import math
import os
import secrets
import struct
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any

import numpy as np

from frame_mlir.fileio import atomic_write_stream
from frame_mlir.frontends.kyn.errors import KynCodegenError, KynDiagnostic
from frame_mlir.frontends.kyn.module import ExportSpec, LayerSpec, ModelSpec
from frame_mlir.protobuf import len_field as _len_field
from frame_mlir.protobuf import varint as _varint
from frame_mlir.protobuf import varint_field as _varint_field

__all__ = [
    "FORMATS",
    "MAX_OPSET",
    "MIN_OPSET",
    "export_model",
    "export_npz",
    "export_onnx",
    "export_torch",
    "export_torchscript",
    "ir_version_for",
]

#: The `format` values export_model accepts (`npz` is frame-mlir's addition to KynML's).
FORMATS = ("onnx", "npz", "torch", "torchscript")

#: The supported ONNX opsets. From 13 on, Softmax/LogSoftmax reduce over exactly `axis`
#: (earlier ones coerce the input to 2-D; the same result on our 2-D tensors, but 13 is
#: where the tests start) and every op emitted here has its current inference meaning (the
#: later BatchNormalization and LeakyRelu revisions only add types and the training mode).
#: 22 is the newest opset that onnx 1.23 checks and onnxruntime 1.32 runs, both verified.
MIN_OPSET = 13
MAX_OPSET = 22
#: Gelu is an ONNX op only from opset 20; below it the exact form is composed from Erf.
GELU_OPSET = 20

_RULE = "KYN-C06"

# ONNX enums (onnx.proto3): TensorProto.DataType and AttributeProto.AttributeType.
_FLOAT, _INT64 = 1, 7
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING = 1, 2, 3
_FIXED32 = 5  # protobuf wire type of a `float` field

#: ONNX op of each activation that maps to a single node, with its attributes. The
#: LeakyRelu slope is PyTorch's F.leaky_relu default; softmaxes act on the feature axis.
_ACTIVATION_OPS: dict[str, tuple[str, dict[str, int | float | str]]] = {
    "relu": ("Relu", {}),
    "sigmoid": ("Sigmoid", {}),
    "tanh": ("Tanh", {}),
    "leaky_relu": ("LeakyRelu", {"alpha": 0.01}),
    "softmax": ("Softmax", {"axis": 1}),
    "log_softmax": ("LogSoftmax", {"axis": 1}),
}
_ACTIVATIONS = (*_ACTIVATION_OPS, "gelu", "linear")

#: Names of the scalar initializers of the composed Gelu; they cannot clash with a
#: parameter name, which always starts with "layers.".
_GELU_CONSTANTS = {"gelu.sqrt2": math.sqrt(2.0), "gelu.one": 1.0, "gelu.half": 0.5}


# --------------------------------------------------------------------------- helpers


def _codegen_error(message: str, source: str) -> KynCodegenError:
    return KynCodegenError([KynDiagnostic(_RULE, "codegen", message, source)])


def _atomic_write(path: str, write: Callable[[IO[bytes]], None], source: str) -> None:
    """`fileio.atomic_write_stream`; an OS failure is a `KYN-C06` error naming the file,
    anything `write` raises propagates unchanged."""
    try:
        atomic_write_stream(path, write)
    except OSError as e:
        raise _codegen_error(f"cannot write export file '{path}': {e.strerror or e}",
                             source) from e


def _import_torch(what: str, source: str) -> Any:
    """The torch module, or a `KYN-C06` error saying that `what` needs it."""
    try:
        import torch
    except ImportError as e:
        raise _codegen_error(f"{what}: pip install torch", source) from e
    return torch


@contextlib.contextmanager
def _quiet_jit() -> Iterator[None]:
    """Hide torch's deprecation notices of torch.jit (torch 2.13 deprecates it): the user
    asked for the TorchScript format by name, so the warning would only be noise."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.", category=DeprecationWarning)
        yield


def _numbered_layers(model: ModelSpec) -> list[tuple[int, LayerSpec]]:
    """(j, layer) for the layers after `input`: j is the index in the parameter names."""
    layers = list(model.layers)
    if not layers or layers[0].kind != "input":
        raise ValueError(f"model '{model.name}' must start with an input layer")
    return list(enumerate(layers[1:]))


def _param(params: Mapping[str, Any], name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Parameter `name` as a C-contiguous float32 array of exactly `shape`."""
    if name not in params:
        raise ValueError(f"export: parameter '{name}' is missing (expected shape "
                         f"{list(shape)})")
    arr = np.asarray(params[name])
    if tuple(arr.shape) != shape:
        raise ValueError(f"export: parameter '{name}' has shape {list(arr.shape)}, expected "
                         f"{list(shape)}")
    return np.ascontiguousarray(arr, dtype=np.float32)


# --------------------------------------------------------------------------- ONNX protobuf
# Field numbers are onnx.proto3's; only the fields a static inference graph needs.


def _str(field: int, text: str) -> bytes:
    return _len_field(field, text.encode("utf-8"))


def _tensor_proto(name: str, arr: np.ndarray) -> bytes:
    """A float32 TensorProto: dims (1), data_type (2), name (8), raw_data (9, little-endian)."""
    parts = [_varint_field(1, int(d)) for d in arr.shape]
    parts.append(_varint_field(2, _FLOAT))
    parts.append(_str(8, name))
    parts.append(_len_field(9, np.ascontiguousarray(arr, dtype="<f4").tobytes()))
    return b"".join(parts)


def _attribute(name: str, value: int | float | str) -> bytes:
    """An AttributeProto: name (1), then f (2, fixed32), i (3) or s (4), and type (20)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"unsupported ONNX attribute value {value!r}")
    if isinstance(value, float):
        body = _varint(2 << 3 | _FIXED32) + struct.pack("<f", value)
        kind = _ATTR_FLOAT
    elif isinstance(value, int):
        # int64 varint: a negative value is its 64-bit two's complement.
        body = _varint_field(3, value & ((1 << 64) - 1))
        kind = _ATTR_INT
    else:
        body = _str(4, value)
        kind = _ATTR_STRING
    return _str(1, name) + body + _varint_field(20, kind)


def _node(op: str, inputs: Sequence[str], outputs: Sequence[str], name: str,
          attrs: Mapping[str, int | float | str] | None = None) -> bytes:
    """A NodeProto: input (1), output (2), name (3), op_type (4), attribute (5)."""
    parts = [_str(1, x) for x in inputs]
    parts += [_str(2, x) for x in outputs]
    parts.append(_str(3, name))
    parts.append(_str(4, op))
    parts += [_len_field(5, _attribute(k, v)) for k, v in (attrs or {}).items()]
    return b"".join(parts)


def _value_info(name: str, shape: Sequence[int]) -> bytes:
    """A ValueInfoProto of a float tensor with static `shape`:
    name (1), type (2) = TypeProto{tensor_type (1) = {elem_type (1), shape (2)}}, each
    TensorShapeProto.dim (1) = {dim_value (1)}."""
    dims = b"".join(_len_field(1, _varint_field(1, int(d))) for d in shape)
    tensor_type = _varint_field(1, _FLOAT) + _len_field(2, dims)
    return _str(1, name) + _len_field(2, _len_field(1, tensor_type))


def ir_version_for(opset: int) -> int:
    """The ONNX IR version written with `opset`: the IR of the onnx release that introduced
    the opset (onnx.helper.VERSION_TABLE), but at least 8, so that older runtimes, which
    accept any IR up to their own, read the file whenever they know the opset."""
    if opset <= 18:
        return 8
    if opset <= 20:
        return 9
    return 10


def _check_input_shape(model: ModelSpec, input_shape: object) -> tuple[int, int]:
    expected = f"[batch >= 1, {model.input_size}]"
    try:
        shape = list(input_shape)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"export onnx: input_shape must be a list {expected}, found "
                         f"{input_shape!r}") from None
    ok = (len(shape) == 2
          and all(isinstance(d, int | np.integer) and not isinstance(d, bool) for d in shape)
          and shape[0] >= 1 and shape[1] == model.input_size)
    if not ok:
        raise ValueError(f"export onnx: input_shape must be {expected} for model "
                         f"'{model.name}' (input {model.input_size}), found {shape}")
    return int(shape[0]), int(shape[1])


def _onnx_bytes(model: ModelSpec, params: Mapping[str, Any], input_shape: Sequence[int],
                opset: int) -> bytes:
    """The serialized ModelProto of `model`'s inference graph (see export_onnx)."""
    if isinstance(opset, bool) or not isinstance(opset, int | np.integer):
        raise ValueError(f"export onnx: opset must be an int in {MIN_OPSET}..{MAX_OPSET}, "
                         f"found {opset!r}")
    opset = int(opset)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"export onnx: opset {opset} is not supported; expected "
                         f"{MIN_OPSET}..{MAX_OPSET}")
    batch, _ = _check_input_shape(model, input_shape)

    nodes: list[tuple] = []  # (op, inputs, outputs, name, attrs); outputs patched below
    initializers: dict[str, np.ndarray] = {}
    current = "input"
    uses_composed_gelu = False

    def add(op: str, inputs: list[str], out: str, name: str,
            attrs: dict[str, int | float | str] | None = None) -> None:
        nonlocal current
        nodes.append((op, inputs, [out], name, attrs))
        current = out

    for j, layer in _numbered_layers(model):
        prefix = f"layers.{j}"
        if layer.kind == "dense":
            w = f"{prefix}.weight"
            b = f"{prefix}.bias"
            initializers[w] = _param(params, w, (layer.out_features, layer.in_features))
            initializers[b] = _param(params, b, (layer.out_features,))
            # y = x @ W^T + b, with W stored [out, in] as nn.Linear keeps it.
            add("Gemm", [current, w, b], f"{prefix}.linear", f"{prefix}.Gemm",
                {"transB": 1})
            act = layer.activation or "linear"
            if act in _ACTIVATION_OPS:
                op, attrs = _ACTIVATION_OPS[act]
                add(op, [current], f"{prefix}.{act}", f"{prefix}.{op}", dict(attrs))
            elif act == "gelu" and opset >= GELU_OPSET:
                add("Gelu", [current], f"{prefix}.gelu", f"{prefix}.Gelu")  # exact (erf)
            elif act == "gelu":
                # F.gelu's exact form 0.5 * x * (1 + erf(x / sqrt(2))), for opsets without
                # the Gelu op.
                uses_composed_gelu = True
                x = current
                add("Div", [x, "gelu.sqrt2"], f"{prefix}.gelu.div", f"{prefix}.gelu.Div")
                add("Erf", [current], f"{prefix}.gelu.erf", f"{prefix}.gelu.Erf")
                add("Add", [current, "gelu.one"], f"{prefix}.gelu.add", f"{prefix}.gelu.Add")
                add("Mul", [x, current], f"{prefix}.gelu.mul", f"{prefix}.gelu.Mul")
                add("Mul", [current, "gelu.half"], f"{prefix}.gelu", f"{prefix}.gelu.Mul_half")
            elif act != "linear":
                raise ValueError(f"export onnx: layer {j} has unknown activation '{act}'; "
                                 f"expected one of {', '.join(_ACTIVATIONS)}")
        elif layer.kind == "batchnorm":
            names = [f"{prefix}.{p}" for p in ("weight", "bias", "running_mean", "running_var")]
            for name in names:
                initializers[name] = _param(params, name, (layer.out_features,))
            # Inference form: (x - running_mean) / sqrt(running_var + eps) * weight + bias.
            add("BatchNormalization", [current, *names], f"{prefix}.batchnorm",
                f"{prefix}.BatchNormalization", {"epsilon": float(layer.eps)})
        elif layer.kind == "dropout":
            pass  # the identity at inference
        else:
            raise ValueError(f"export onnx: layer {j} has unknown kind '{layer.kind}'")

    # The graph's result must be named `output`: rename the last node's result, or copy
    # the input through when no layer produced a node (only possible without a dense).
    if nodes:
        nodes[-1][2][0] = "output"
    else:
        nodes.append(("Identity", ["input"], ["output"], "Identity", None))
    if uses_composed_gelu:
        for name, value in _GELU_CONSTANTS.items():
            initializers[name] = np.array(value, dtype=np.float32)

    graph = [_len_field(1, _node(*n)) for n in nodes]
    graph.append(_str(2, model.name))
    graph += [_len_field(5, _tensor_proto(name, arr)) for name, arr in initializers.items()]
    graph.append(_len_field(11, _value_info("input", [batch, model.input_size])))
    graph.append(_len_field(12, _value_info("output", [batch, model.output_units])))
    opset_id = _str(1, "") + _varint_field(2, opset)  # the default ("") domain, explicitly
    return b"".join([
        _varint_field(1, ir_version_for(opset)),
        _str(2, "frame-mlir"),       # producer_name
        _len_field(7, b"".join(graph)),
        _len_field(8, opset_id),
    ])


# --------------------------------------------------------------------------- exporters


def export_onnx(model: ModelSpec, params: Mapping[str, np.ndarray], path: str,
                input_shape: Sequence[int], opset: int = 17, *,
                source: str = "<string>") -> None:
    """Write `model`'s inference graph with the trained `params` to `path` as ONNX.

    The graph takes `input` float32 [batch, model.input_size] (both from `input_shape`,
    which is static, as KynML's `export: input_shape` fixes it) and returns `output` float32
    [batch, units]. Each dense is a Gemm (transB=1, with bias) and its activation (Relu,
    Sigmoid, Tanh, LeakyRelu alpha 0.01, Gelu, Softmax/LogSoftmax on axis 1, nothing for
    linear); exact Gelu is the Gelu op from opset 20 and 0.5*x*(1+Erf(x/sqrt 2)) below.
    A batchnorm is BatchNormalization over its running statistics; dropout adds no node.
    The initializers are the parameters under their own names (`layers.<j>.weight`, ...).

    Raises:
        ValueError: `input_shape` is not [batch >= 1, model.input_size], `opset` is not in
            MIN_OPSET..MAX_OPSET, or a parameter is missing or has the wrong shape.
        KynCodegenError: the file cannot be written (`KYN-C06`, `source` as its file).
    """
    blob = _onnx_bytes(model, params, input_shape, opset)  # validate before touching disk
    _atomic_write(path, lambda f: f.write(blob), source)


def export_npz(params: Mapping[str, np.ndarray], path: str, *, source: str = "<string>") -> None:
    """Write every parameter and buffer to `path` with :func:`numpy.savez`, one array per
    name (dtypes kept: float32 weights, int64 `num_batches_tracked`). The path is used
    exactly as given: savez is handed an open file, so it does not append `.npz`."""
    arrays = {str(name): np.asarray(value) for name, value in params.items()}
    _atomic_write(path, lambda f: np.savez(f, **arrays), source)


def _state_dict(torch: Any, params: Mapping[str, np.ndarray]) -> OrderedDict[str, Any]:
    """name -> torch tensor, in `params`' order: floating arrays as float32 (KynModel's
    dtype), integer ones (num_batches_tracked) as int64, as nn.BatchNorm1d keeps it."""
    state: OrderedDict[str, Any] = OrderedDict()
    for name, value in params.items():
        arr = np.asarray(value)
        dtype = torch.int64 if np.issubdtype(arr.dtype, np.integer) else torch.float32
        state[str(name)] = torch.tensor(arr, dtype=dtype)
    return state


def export_torch(params: Mapping[str, np.ndarray], path: str, *,
                 source: str = "<string>") -> None:
    """Write the trained parameters to `path` as a PyTorch `state_dict`
    (``torch.save(OrderedDict(name -> tensor))``), which the emitted script's `KynModel`
    loads with ``load_state_dict``.

    Raises:
        KynCodegenError: torch is not installed, or the file cannot be written (`KYN-C06`).
    """
    torch = _import_torch("export format 'torch' needs PyTorch", source)
    state = _state_dict(torch, params)
    _atomic_write(path, lambda f: torch.save(state, f), source)


def export_torchscript(model: ModelSpec, params: Mapping[str, np.ndarray], path: str, *,
                       source: str = "<string>") -> None:
    """Write `model` with the trained `params` to `path` as a TorchScript module.

    The module is the emitted script's `KynModel` (emit_torch.model_class_source), loaded
    with the weights (strictly: every name must match), put in eval mode (dropout off,
    batchnorm on running statistics) and compiled with ``torch.jit.script``.

    Raises:
        KynCodegenError: torch is not installed, or the file cannot be written (`KYN-C06`).
    """
    torch = _import_torch("export format 'torchscript' is not supported without torch",
                          source)
    from frame_mlir.frontends.kyn.emit_torch import model_class_source  # needs nothing but the spec

    text = model_class_source(model)
    # torch.jit.script reads the class's source through inspect/linecache, which exec'd
    # code does not have: register it under a unique pseudo file name for the duration
    # (an entry without mtime is never invalidated by linecache.checkcache).
    filename = f"<kyn-export {model.name} {secrets.token_hex(6)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    try:
        # The class source may or may not carry its own imports; provide the usual names.
        namespace: dict[str, Any] = {"__name__": "kyn_export", "torch": torch,
                                     "nn": torch.nn, "F": torch.nn.functional}
        exec(compile(text, filename, "exec"), namespace)
        module = namespace["KynModel"]()
        module.load_state_dict(_state_dict(torch, params), strict=True)
        module.eval()
        with _quiet_jit():
            scripted = torch.jit.script(module)
    finally:
        linecache.cache.pop(filename, None)

    def save(f: IO[bytes]) -> None:
        with _quiet_jit():
            torch.jit.save(scripted, f)

    _atomic_write(path, save, source)


def export_model(spec: ExportSpec, model: ModelSpec, params: Mapping[str, np.ndarray],
                 base_dir: str, *, source: str = "<string>") -> str:
    """Carry out an ``export:`` block: write `model` with `params` in `spec.format` to
    `spec.path` (a relative path is taken against `base_dir`; missing parent folders are
    created) and return the path written. `source` (the `.kyn` file) names the file of any
    `KYN-C06` diagnostic.

    Raises:
        ValueError: an unknown format, or onnx without `input_shape` (validation reports
            both earlier; this guards direct callers), or what export_onnx raises.
        KynCodegenError: what the exporters raise.
    """
    if spec.format not in FORMATS:
        raise ValueError(f"export: unknown format '{spec.format}'; expected one of "
                         f"{', '.join(FORMATS)}")
    path = spec.path if os.path.isabs(spec.path) else os.path.join(base_dir, spec.path)
    path = os.path.normpath(path)
    blob = b""
    if spec.format == "onnx":  # validate before creating any folder
        if spec.input_shape is None:
            raise ValueError("export: onnx export requires input_shape")
        blob = _onnx_bytes(model, params, spec.input_shape, spec.opset)
    parent = os.path.dirname(path)
    if parent:
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as e:
            raise _codegen_error(f"cannot create the folder '{parent}' for the export: "
                                 f"{e.strerror or e}", source) from e
    if spec.format == "onnx":
        _atomic_write(path, lambda f: f.write(blob), source)
    elif spec.format == "npz":
        export_npz(params, path, source=source)
    elif spec.format == "torch":
        export_torch(params, path, source=source)
    else:
        export_torchscript(model, params, path, source=source)
    return path
