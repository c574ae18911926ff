"""`frame._core`: every name of the frame Python API in one flat module.

A plain Python module over frame-mlir's compiler (the sheet allows that): types, ops,
training, ONNX, and the nn and data symbols.
"""

from frame_mlir.frontends.api.data import DataLoader, DataLoaderOptions, TensorDataset
from frame_mlir.frontends.api.graph import Executable, Graph, Node, Value, compile  # noqa: A004
from frame_mlir.frontends.api.nn import (
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
)
from frame_mlir.frontends.api.nn_layers import (
    AFF,
    LSTM,
    Dwt1d,
    Dwt2d,
    Fno1dBlock,
    FourierFilter1d,
    FourierMamba,
    GraphConv,
    HypergraphConv,
    LayerNorm,
    LIFCell,
    Mamba,
    MultiheadAttention,
    SnnClassifier,
    SpectralConv1d,
    TransformerEncoderBlock,
)
from frame_mlir.frontends.api.onnx_weights import load_onnx_weights, save_onnx_weights
from frame_mlir.frontends.api.ops import (  # noqa: A004
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
from frame_mlir.frontends.api.tensor import Device, DType, Shape, Tensor, from_numpy
from frame_mlir.frontends.api.training import build_backward_graph, build_sgd_update_graph

float32 = DType.float32
float16 = DType.float16
bfloat16 = DType.bfloat16
int32 = DType.int32
int64 = DType.int64

