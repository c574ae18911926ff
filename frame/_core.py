"""`frame._core`: every name of the frame Python API in one flat module.

A plain Python module over frame-mlir's compiler (the sheet allows that): types, ops,
training, ONNX, and the nn and data symbols.
"""

from frame_mlir.api.graph import Executable, Graph, Node, Value, compile  # noqa: A004
from frame_mlir.api.nn import (
    AvgPool2d,
    Conv1d,
    Conv2d,
    Flatten,
    Linear,
    MaxPool2d,
    Module,
    MseLoss,
    Relu,
    Sequential,
    Sigmoid,
    add_parameter_inputs,
    not_yet,
)
from frame_mlir.api.onnx_weights import load_onnx_weights, save_onnx_weights
from frame_mlir.api.ops import (  # noqa: A004
    add,
    constant,
    heaviside_surrogate,
    matmul,
    mse_loss,
    mul,
    relu,
    scatter_add,
    selective_scan,
    square,
    sum,
)
from frame_mlir.api.tensor import Device, DType, Shape, Tensor, from_numpy
from frame_mlir.api.training import build_backward_graph, build_sgd_update_graph
from frame_mlir.data import DataLoader, DataLoaderOptions, TensorDataset

# The sheet's factories that this version does not implement yet.
AFF = not_yet("AFF")
Dwt1d = not_yet("Dwt1d")
Dwt2d = not_yet("Dwt2d")
LayerNorm = not_yet("LayerNorm")
LSTM = not_yet("LSTM")
MultiheadAttention = not_yet("MultiheadAttention")
TransformerEncoderBlock = not_yet("TransformerEncoderBlock")
SpectralConv1d = not_yet("SpectralConv1d")
FourierFilter1d = not_yet("FourierFilter1d")
Fno1dBlock = not_yet("Fno1dBlock")
Mamba = not_yet("Mamba")
FourierMamba = not_yet("FourierMamba")
LIFCell = not_yet("LIFCell")
SnnClassifier = not_yet("SnnClassifier")
GraphConv = not_yet("GraphConv")
HypergraphConv = not_yet("HypergraphConv")

float32 = DType.float32
float16 = DType.float16
bfloat16 = DType.bfloat16
int32 = DType.int32
int64 = DType.int64

del not_yet
