"""Tests of frame_mlir/frontends/kyn/export.py: ONNX, npz, torch state_dict and TorchScript exports.

The ONNX file is hand-encoded by the exporter; `onnx.checker` (full check, with shape
inference) and onnxruntime are the independent judges, and every graph's output is
compared with a float64 numpy forward written here from docs/kyn.md's semantics.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import warnings

import numpy as np
import pytest

from frame_mlir.frontends.kyn.errors import KynCodegenError
from frame_mlir.frontends.kyn.export import (
    MAX_OPSET,
    MIN_OPSET,
    export_model,
    export_npz,
    export_onnx,
    export_torch,
    export_torchscript,
    ir_version_for,
)
from frame_mlir.frontends.kyn.module import ExportSpec, LayerSpec, ModelSpec

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

ACTIVATIONS = ("relu", "sigmoid", "tanh", "linear", "leaky_relu", "gelu", "softmax",
               "log_softmax")
HAVE_EMIT_TORCH = importlib.util.find_spec("frame_mlir.frontends.kyn.emit_torch") is not None


# --------------------------------------------------------------------------- helpers


def make_model(*layers: tuple, input_size: int = 5, name: str = "Net") -> ModelSpec:
    """A ModelSpec from ("dense", units, act) / ("batchnorm",) / ("dropout", rate)."""
    specs = [LayerSpec("input", input_size, input_size)]
    width = input_size
    for kind, *args in layers:
        if kind == "dense":
            specs.append(LayerSpec("dense", width, args[0], activation=args[1]))
            width = args[0]
        elif kind == "batchnorm":
            specs.append(LayerSpec("batchnorm", width, width))
        else:
            specs.append(LayerSpec("dropout", width, width, rate=args[0]))
    return ModelSpec(name, tuple(specs))


def mixed_model() -> ModelSpec:
    return make_model(("dense", 8, "relu"), ("batchnorm",), ("dropout", 0.2),
                      ("dense", 8, "gelu"), ("dense", 3, "log_softmax"))


def make_params(model: ModelSpec, seed: int = 0) -> dict[str, np.ndarray]:
    """Random parameters under the trainer's names (batchnorm statistics non-trivial)."""
    rng = np.random.default_rng(seed)
    params: dict[str, np.ndarray] = {}
    for j, layer in enumerate(model.layers[1:]):
        p = f"layers.{j}."
        n = layer.out_features
        if layer.kind == "dense":
            bound = 1.0 / math.sqrt(layer.in_features)
            params[p + "weight"] = rng.uniform(-bound, bound, (n, layer.in_features)).astype(
                np.float32)
            params[p + "bias"] = rng.uniform(-bound, bound, n).astype(np.float32)
        elif layer.kind == "batchnorm":
            params[p + "weight"] = rng.uniform(0.5, 1.5, n).astype(np.float32)
            params[p + "bias"] = rng.normal(0, 0.3, n).astype(np.float32)
            params[p + "running_mean"] = rng.normal(0, 0.5, n).astype(np.float32)
            params[p + "running_var"] = rng.uniform(0.5, 2.0, n).astype(np.float32)
            params[p + "num_batches_tracked"] = np.array(7, dtype=np.int64)
    return params


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def reference_forward(model: ModelSpec, params: dict[str, np.ndarray],
                      x: np.ndarray) -> np.ndarray:
    """The inference forward in float64, independently of the exporter."""
    h = x.astype(np.float64)
    for j, layer in enumerate(model.layers[1:]):
        p = f"layers.{j}."
        if layer.kind == "dense":
            h = h @ params[p + "weight"].astype(np.float64).T + params[p + "bias"]
            act = layer.activation or "linear"
            if act == "relu":
                h = np.maximum(h, 0)
            elif act == "sigmoid":
                h = 1 / (1 + np.exp(-h))
            elif act == "tanh":
                h = np.tanh(h)
            elif act == "leaky_relu":
                h = np.where(h >= 0, h, 0.01 * h)
            elif act == "gelu":
                h = 0.5 * h * (1 + _erf(h / math.sqrt(2)))
            elif act in ("softmax", "log_softmax"):
                z = h - h.max(axis=1, keepdims=True)
                lse = np.log(np.exp(z).sum(axis=1, keepdims=True))
                h = z - lse if act == "log_softmax" else np.exp(z - lse)
        elif layer.kind == "batchnorm":
            h = ((h - params[p + "running_mean"]) / np.sqrt(params[p + "running_var"] + 1e-5)
                 * params[p + "weight"] + params[p + "bias"])
    return h


def run_onnx(path: str, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(["output"], {"input": x})[0]


def check_onnx(model: ModelSpec, params: dict[str, np.ndarray], path: str, opset: int,
               batch: int = 4) -> onnx.ModelProto:
    """Export, check fully, run and compare with the reference; return the loaded proto."""
    export_onnx(model, params, path, [batch, model.input_size], opset=opset)
    onnx.checker.check_model(path, full_check=True)
    x = np.random.default_rng(1).normal(0, 1.5, (batch, model.input_size)).astype(np.float32)
    got = run_onnx(path, x)
    assert got.shape == (batch, model.output_units) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference_forward(model, params, x), rtol=1e-5, atol=1e-5)
    return onnx.load(path)


def reference_class_source(model: ModelSpec) -> str:
    """A KynModel as docs/kyn.md describes the emitted script's (one nn.ModuleList
    `layers`, activations applied functionally), standing in for emit_torch here."""
    modules, calls = [], []
    for j, layer in enumerate(model.layers[1:]):
        if layer.kind == "dense":
            modules.append(f"nn.Linear({layer.in_features}, {layer.out_features})")
            act = layer.activation or "linear"
            call = {"linear": "{}", "leaky_relu": "F.leaky_relu({}, 0.01)",
                    "softmax": "F.softmax({}, dim=1)",
                    "log_softmax": "F.log_softmax({}, dim=1)"}.get(act, f"F.{act}({{}})")
            calls.append(call.format(f"self.layers[{j}](x)"))
        elif layer.kind == "batchnorm":
            modules.append(f"nn.BatchNorm1d({layer.out_features})")
            calls.append(f"self.layers[{j}](x)")
        else:
            modules.append(f"nn.Dropout({layer.rate})")
            calls.append(f"self.layers[{j}](x)")
    body = "\n".join(f"        x = {c}" for c in calls)
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class KynModel(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        self.layers = nn.ModuleList([{', '.join(modules)}])\n\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        f"{body}\n"
        "        return x\n"
    )


def listing(folder: str) -> list[str]:
    return sorted(os.listdir(folder))


# --------------------------------------------------------------------------- onnx


@pytest.mark.parametrize("opset", [17, 20])
def test_onnx_mixed_model_matches_reference(tmp_path, opset):
    model = mixed_model()
    params = make_params(model)
    proto = check_onnx(model, params, str(tmp_path / "m.onnx"), opset)
    ops = [n.op_type for n in proto.graph.node]
    gelu = ["Gelu"] if opset >= 20 else ["Div", "Erf", "Add", "Mul", "Mul"]
    # dropout (layer 2) adds no node; batchnorm is the inference op.
    assert ops == ["Gemm", "Relu", "BatchNormalization", "Gemm", *gelu, "Gemm", "LogSoftmax"]
    assert proto.ir_version == ir_version_for(opset)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", opset)]
    inits = {t.name for t in proto.graph.initializer}
    weights = {k for k in params if not k.endswith("num_batches_tracked")}
    constants = set() if opset >= 20 else {"gelu.sqrt2", "gelu.one", "gelu.half"}
    assert inits == weights | constants
    for t in proto.graph.initializer:
        if t.name in params:
            np.testing.assert_array_equal(onnx.numpy_helper.to_array(t), params[t.name])
    shape = [[d.dim_value for d in v.type.tensor_type.shape.dim] for v in
             (*proto.graph.input, *proto.graph.output)]
    assert [v.name for v in proto.graph.input] == ["input"]
    assert [v.name for v in proto.graph.output] == ["output"]
    assert shape == [[4, 5], [4, 3]]
    gemm = proto.graph.node[0]
    assert {a.name: a.i for a in gemm.attribute} == {"transB": 1}
    bn = proto.graph.node[2]
    assert [a.name for a in bn.attribute] == ["epsilon"]
    assert bn.attribute[0].f == pytest.approx(1e-5)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("act", ACTIVATIONS)
def test_onnx_each_activation(tmp_path, act, opset):
    model = make_model(("dense", 6, act), ("dense", 4, act))
    proto = check_onnx(model, make_params(model, seed=3), str(tmp_path / "a.onnx"), opset)
    if act == "leaky_relu":
        alpha = [a.f for n in proto.graph.node for a in n.attribute if a.name == "alpha"]
        assert alpha == [pytest.approx(0.01)] * 2
    if act == "linear":
        assert [n.op_type for n in proto.graph.node] == ["Gemm", "Gemm"]


@pytest.mark.parametrize("opset", range(MIN_OPSET, MAX_OPSET + 1))
def test_onnx_every_supported_opset(tmp_path, opset):
    model = mixed_model()
    check_onnx(model, make_params(model), str(tmp_path / f"o{opset}.onnx"), opset, batch=1)


def test_onnx_model_ending_in_dropout(tmp_path):
    # The last layer producing no node: the previous node's result becomes `output`.
    model = make_model(("dense", 4, "tanh"), ("dropout", 0.5))
    proto = check_onnx(model, make_params(model), str(tmp_path / "d.onnx"), 17)
    assert proto.graph.node[-1].output[0] == "output"


@pytest.mark.parametrize("shape", [[5], [1, 5, 1], [0, 5], [-1, 5], [1, 4], [2, 6], [],
                                   ["1", 5], [True, 5], [1.0, 5], 5])
def test_onnx_bad_input_shape(tmp_path, shape):
    model = mixed_model()
    path = tmp_path / "m.onnx"
    with pytest.raises(ValueError, match=r"input_shape must be.*\[batch >= 1, 5\]") as e:
        export_onnx(model, make_params(model), str(path), shape)
    if isinstance(shape, list):
        assert f"found {shape}" in str(e.value)
    assert listing(str(tmp_path)) == []


@pytest.mark.parametrize("opset", [12, 23, 0, True, "17"])
def test_onnx_bad_opset(tmp_path, opset):
    model = mixed_model()
    with pytest.raises(ValueError, match="opset"):
        export_onnx(model, make_params(model), str(tmp_path / "m.onnx"), [1, 5], opset=opset)


def test_onnx_missing_or_misshaped_parameter(tmp_path):
    model = mixed_model()
    params = make_params(model)
    del params["layers.1.running_var"]
    with pytest.raises(ValueError, match=r"'layers.1.running_var' is missing"):
        export_onnx(model, params, str(tmp_path / "m.onnx"), [1, 5])
    params = make_params(model)
    params["layers.0.weight"] = params["layers.0.weight"].T
    with pytest.raises(ValueError, match=r"'layers.0.weight' has shape \[5, 8\], expected "
                                         r"\[8, 5\]"):
        export_onnx(model, params, str(tmp_path / "m.onnx"), [1, 5])


def test_onnx_replaces_atomically(tmp_path):
    model = mixed_model()
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    with pytest.raises(ValueError):
        export_onnx(model, make_params(model), str(path), [1, 4])
    assert path.read_bytes() == b"old"  # a failed export leaves the file alone
    export_onnx(model, make_params(model), str(path), [1, 5])
    onnx.checker.check_model(str(path), full_check=True)
    assert listing(str(tmp_path)) == ["m.onnx"]  # no temporary file left behind


def test_onnx_unwritable_destination_is_codegen_error(tmp_path):
    model = mixed_model()
    path = tmp_path / "missing" / "m.onnx"
    with pytest.raises(KynCodegenError) as e:
        export_onnx(model, make_params(model), str(path), [1, 5], source="prog.kyn")
    assert e.value.rules == ["KYN-C06"]
    assert str(e.value).startswith("prog.kyn: error: cannot write export file")


def test_onnx_export_does_not_need_the_onnx_package(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # any `import onnx` now fails
    model = mixed_model()
    export_onnx(model, make_params(model), str(tmp_path / "m.onnx"), [2, 5])
    monkeypatch.undo()
    onnx.checker.check_model(str(tmp_path / "m.onnx"), full_check=True)


# --------------------------------------------------------------------------- npz


def test_npz_round_trip_keeps_path_and_dtypes(tmp_path):
    model = mixed_model()
    params = make_params(model)
    path = tmp_path / "weights.bin"  # savez would append .npz to a bare name
    export_npz(params, str(path))
    assert listing(str(tmp_path)) == ["weights.bin"]
    with np.load(path) as z:
        assert sorted(z.files) == sorted(params)
        for name, arr in params.items():
            assert z[name].dtype == arr.dtype and z[name].shape == arr.shape
            np.testing.assert_array_equal(z[name], arr)
    assert np.load(path)["layers.1.num_batches_tracked"].dtype == np.int64


# --------------------------------------------------------------------------- torch


def test_torch_state_dict_loads_into_kyn_model(tmp_path):
    torch = pytest.importorskip("torch")
    model = mixed_model()
    params = make_params(model)
    path = tmp_path / "m.pt"
    export_torch(params, str(path))
    state = torch.load(path, weights_only=True)
    assert list(state) == list(params)
    for name, arr in params.items():
        np.testing.assert_array_equal(state[name].numpy(), arr)
    nbt = state["layers.1.num_batches_tracked"]
    assert nbt.dtype == torch.int64 and nbt.shape == () and int(nbt) == 7
    assert state["layers.0.weight"].dtype == torch.float32
    namespace: dict = {}
    exec(reference_class_source(model), namespace)
    net = namespace["KynModel"]()
    net.load_state_dict(state, strict=True)
    net.eval()
    x = np.random.default_rng(2).normal(size=(6, 5)).astype(np.float32)
    with torch.no_grad():
        got = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, reference_forward(model, params, x), rtol=1e-5, atol=1e-5)


def test_torch_missing_is_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    model = mixed_model()
    with pytest.raises(KynCodegenError, match=r"export format 'torch' needs PyTorch: "
                                              r"pip install torch") as e:
        export_torch(make_params(model), str(tmp_path / "m.pt"))
    assert e.value.rules == ["KYN-C06"]
    with pytest.raises(KynCodegenError, match="not supported without torch"):
        export_torchscript(model, make_params(model), str(tmp_path / "m.ts"))
    assert listing(str(tmp_path)) == []


def _check_torchscript(torch, model: ModelSpec, params, path: str) -> None:
    with warnings.catch_warnings():  # torch 2.13 deprecates torch.jit
        warnings.simplefilter("ignore", DeprecationWarning)
        loaded = torch.jit.load(path)
    assert not loaded.training
    x = np.random.default_rng(4).normal(size=(5, model.input_size)).astype(np.float32)
    with torch.no_grad():
        got = loaded(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, reference_forward(model, params, x), rtol=1e-5, atol=1e-5)


def test_torchscript_export_with_reference_class(tmp_path, monkeypatch):
    # Exercises export_torchscript's own logic whether or not emit_torch has landed.
    torch = pytest.importorskip("torch")
    fake = type(sys)("frame_mlir.frontends.kyn.emit_torch")
    fake.model_class_source = reference_class_source
    monkeypatch.setitem(sys.modules, "frame_mlir.frontends.kyn.emit_torch", fake)
    model = mixed_model()
    params = make_params(model)
    path = str(tmp_path / "m.ts")
    export_torchscript(model, params, path)
    _check_torchscript(torch, model, params, path)


@pytest.mark.skipif(not HAVE_EMIT_TORCH, reason="frame_mlir/frontends/kyn/emit_torch.py has not "
                                                "landed yet")
def test_torchscript_export_with_emitted_class(tmp_path):
    torch = pytest.importorskip("torch")
    model = mixed_model()
    params = make_params(model)
    path = str(tmp_path / "m.ts")
    export_torchscript(model, params, path)
    _check_torchscript(torch, model, params, path)


# --------------------------------------------------------------------------- export_model


def test_export_model_resolves_paths_and_dispatches(tmp_path):
    model = mixed_model()
    params = make_params(model)
    base = str(tmp_path / "proj")
    os.makedirs(base)
    out = export_model(ExportSpec("onnx", "models/sub/out.onnx", (3, 5), 20), model, params,
                       base)
    assert out == os.path.join(base, "models", "sub", "out.onnx")
    onnx.checker.check_model(out, full_check=True)
    assert onnx.load(out).opset_import[0].version == 20
    absolute = str(tmp_path / "abs" / "w.npz")
    assert export_model(ExportSpec("npz", absolute), model, params, base) == absolute
    with np.load(absolute) as z:
        assert sorted(z.files) == sorted(params)
    if importlib.util.find_spec("torch") is not None:
        out = export_model(ExportSpec("torch", "m.pt"), model, params, base)
        assert out == os.path.join(base, "m.pt") and os.path.isfile(out)


@pytest.mark.parametrize("spec, message", [
    (ExportSpec("keras", "m.h5"), "unknown format 'keras'"),
    (ExportSpec("onnx", "sub/m.onnx"), "requires input_shape"),
    (ExportSpec("onnx", "sub/m.onnx", (1, 4)), "input_shape must be"),
])
def test_export_model_errors_create_nothing(tmp_path, spec, message):
    model = mixed_model()
    with pytest.raises(ValueError, match=message):
        export_model(spec, model, make_params(model), str(tmp_path))
    assert listing(str(tmp_path)) == []
