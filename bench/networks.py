"""Benchmark networks in the dlprimitives JSON network format (plain dicts).

    lenet(batch=64, size=28)                  Caffe's LeNet: conv 5x5 20, max-pool 2/2,
                                              conv 5x5 50, max-pool 2/2 (no activation
                                              after the convolutions), InnerProduct 500
                                              relu, InnerProduct 10, SoftmaxWithLoss.
    resnet18(batch=8, size=64, classes=1000)  torchvision's ResNet-18 topology: conv 7x7/2
                                              64 (no bias), BatchNorm, relu, max-pool 3/2
                                              pad 1, 4 stages of 2 BasicBlocks [64, 128,
                                              256, 512] (stride 2 + 1x1/2 conv + BatchNorm
                                              downsample from stage 2 on), residual add by
                                              Elementwise sum with relu, GlobalPooling avg,
                                              Flatten, InnerProduct classes, SoftmaxWithLoss.

Operator (and so parameter) names follow torchvision's module names, e.g.
`layer2.0.downsample.0` (its weight is the dlprimitives parameter
`layer2.0.downsample.0.0`). ReLUs run in place. `json.dumps(resnet18())` is a network file.
"""

from __future__ import annotations

from typing import Any


def _inputs(batch: int, channels: int, size: int) -> list[dict[str, Any]]:
    return [
        {"shape": [batch, channels, size, size], "name": "data"},
        {"shape": [batch], "name": "label", "dtype": "int"},
    ]


def _op(name: str, kind: str, inputs: list[str], tensors: list[str] | None = None, /,
        **options: Any) -> dict[str, Any]:
    """An operator; its outputs are `tensors` (default: one tensor named like it)."""
    op: dict[str, Any] = {"name": name, "type": kind, "inputs": inputs,
                          "outputs": tensors if tensors is not None else [name]}
    if options:
        op["options"] = options
    return op


def lenet(batch: int = 64, size: int = 28) -> dict[str, Any]:
    """Caffe's LeNet for `size`x`size` single-channel images, 10 classes; output `loss`."""
    return {
        "inputs": _inputs(batch, 1, size),
        "outputs": ["loss"],
        "operators": [
            _op("conv1", "Convolution2D", ["data"], channels_out=20, kernel=5),
            _op("pool1", "Pooling2D", ["conv1"], mode="max", kernel=2, stride=2),
            _op("conv2", "Convolution2D", ["pool1"], channels_out=50, kernel=5),
            _op("pool2", "Pooling2D", ["conv2"], mode="max", kernel=2, stride=2),
            _op("fc1", "InnerProduct", ["pool2"], outputs=500, activation="relu"),
            _op("fc2", "InnerProduct", ["fc1"], outputs=10),
            _op("loss", "SoftmaxWithLoss", ["fc2", "label"]),
        ],
    }


def _conv_bn(prefix: str, conv: str, bn: str, x: str, channels: int, kernel: int,
             stride: int, pad: int) -> tuple[list[dict[str, Any]], str]:
    ops = [
        _op(f"{prefix}{conv}", "Convolution2D", [x], channels_out=channels, kernel=kernel,
            stride=stride, pad=pad, bias=False),
        _op(f"{prefix}{bn}", "BatchNorm", [f"{prefix}{conv}"]),
    ]
    return ops, f"{prefix}{bn}"


def basic_block(prefix: str, x: str, channels: int, stride: int,
                downsample: bool) -> tuple[list[dict[str, Any]], str]:
    """torchvision's BasicBlock named `prefix` on tensor `x`: (operators, output tensor)."""
    ops, y = _conv_bn(prefix, "conv1", "bn1", x, channels, 3, stride, 1)
    ops.append(_op(f"{prefix}relu", "Activation", [y], [y], activation="relu"))
    more, y = _conv_bn(prefix, "conv2", "bn2", y, channels, 3, 1, 1)
    ops += more
    identity = x
    if downsample:
        more, identity = _conv_bn(prefix, "downsample.0", "downsample.1", x, channels, 1,
                                  stride, 0)
        ops += more
    ops.append(_op(f"{prefix}add", "Elementwise", [y, identity], [f"{prefix}out"],
                   operation="sum", activation="relu"))
    return ops, f"{prefix}out"


def resnet18(batch: int = 8, size: int = 64, classes: int = 1000) -> dict[str, Any]:
    """torchvision's ResNet-18 for `size`x`size` RGB images; output `loss`."""
    ops, x = _conv_bn("", "conv1", "bn1", "data", 64, 7, 2, 3)
    ops.append(_op("relu", "Activation", [x], [x], activation="relu"))
    ops.append(_op("maxpool", "Pooling2D", [x], mode="max", kernel=3, stride=2, pad=1))
    x = "maxpool"
    in_channels = 64
    for stage, channels in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            more, x = basic_block(f"layer{stage}.{block}.", x, channels, stride,
                                  downsample=stride != 1 or in_channels != channels)
            ops += more
            in_channels = channels
    ops += [
        _op("avgpool", "GlobalPooling", [x], mode="avg"),
        _op("flatten", "Flatten", ["avgpool"]),
        _op("fc", "InnerProduct", ["flatten"], outputs=classes),
        _op("loss", "SoftmaxWithLoss", ["fc", "label"]),
    ]
    return {"inputs": _inputs(batch, 3, size), "outputs": ["loss"], "operators": ops}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps({"lenet": lenet, "resnet18": resnet18}[sys.argv[1]](), indent=4))
