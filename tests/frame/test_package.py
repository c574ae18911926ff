"""The `frame` package: version, structure, re-exports, and the exact stub."""

from __future__ import annotations

import ast
from pathlib import Path

import frame

SHEET_NAMES = set("""AFF AvgPool2d Conv1d Conv2d DType DataLoader DataLoaderOptions Device Dwt1d
Dwt2d Executable Flatten Fno1dBlock FourierFilter1d FourierMamba Graph GraphConv HypergraphConv
LIFCell LSTM LayerNorm Linear Mamba MaxPool2d Module MseLoss MultiheadAttention Node Relu
Sequential Shape Sigmoid SnnClassifier SpectralConv1d Tensor TensorDataset
TransformerEncoderBlock Value add add_graph_input add_parameter_inputs backend bfloat16 build
build_backward_graph build_sgd_update_graph compile constant device dims dtype float16 float32
from_numpy heaviside_surrogate index int32 int64 load_onnx_weights mark_output matmul mse_loss
mul name numpy parameters relu run save_onnx_weights scatter_add selective_scan shape square sum
to""".split())


def _stub_names() -> set[str]:
    tree = ast.parse((Path(frame.__file__).parent / "_core.pyi").read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and not member.name.startswith("__"):
                    names.add(member.name)
                elif isinstance(member, ast.Assign):
                    names.update(t.id for t in member.targets if isinstance(t, ast.Name))
    return names


def test_stub_declares_exactly_the_sheet_names() -> None:
    assert len(SHEET_NAMES) == 75
    assert _stub_names() == SHEET_NAMES


def test_every_stub_name_exists_at_run_time() -> None:
    core = frame._core
    for name in SHEET_NAMES:
        assert any(hasattr(obj, name) for obj in (core, core.Shape, core.Device, core.Tensor,
                                                  core.Graph, core.Executable, core.Module,
                                                  core.DType)), name


def test_version_and_structure() -> None:
    assert frame.__version__ == "0.1.0"
    assert frame._core_available is True
    assert frame.nn.Linear is frame._core.Linear
    assert frame.data.DataLoader is frame._core.DataLoader
    assert set(frame.__all__) == {
        "__version__", "_core", "_core_available", "DType", "Graph", "Tensor", "add",
        "build_backward_graph", "build_sgd_update_graph", "compile", "constant", "from_numpy",
        "load_onnx_weights", "matmul", "mse_loss", "mul", "relu", "save_onnx_weights",
        "square", "sum", "data", "nn"}
    for hidden in ("Shape", "Device", "Value", "Node", "Executable", "selective_scan"):
        assert not hasattr(frame, hidden)
    assert len(frame.nn.__all__) == 28
    assert frame.data.__all__ == ["DataLoader", "DataLoaderOptions", "TensorDataset"]
