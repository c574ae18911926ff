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
    vgg16(batch=8, size=224, classes=1000)    torchvision's VGG-16: 13 conv 3x3 pad 1 (64,
                                              64, M, 128, 128, M, 256 x3, M, 512 x3, M, 512
                                              x3, M; M = max-pool 2/2), each with a relu,
                                              InnerProduct 4096 relu, 4096 relu, classes,
                                              SoftmaxWithLoss (no dropout: the format has
                                              none; at 224 the adaptive 7x7 average pool is
                                              the identity and is left out).
    alexnet(batch=8, size=224, classes=1000)  torchvision's AlexNet: conv 11x11/4 pad 2 64,
                                              max-pool 3/2, conv 5x5 pad 2 192, max-pool
                                              3/2, conv 3x3 pad 1 384, 256, 256, max-pool
                                              3/2 (relu after each conv), InnerProduct 4096
                                              relu, 4096 relu, classes, SoftmaxWithLoss (no
                                              dropout; the 6x6 adaptive pool left out).
    reference_style(doc)                      `doc` written the way the reference's
                                              ONNX-converted benchmark files are: no label
                                              input and no SoftmaxWithLoss, the scores of
                                              the last InnerProduct named `loss` (so the
                                              objective is the sum of the [B, classes]
                                              logits), activations as operators of their
                                              own, pairs as [h, w], `"count_include_pad":
                                              0` and `"ceil_mode": 0` on every pooling.

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


def _conv_relu(name: str, relu: str, x: str, channels: int, kernel: int, stride: int,
               pad: int) -> list[dict[str, Any]]:
    return [_op(name, "Convolution2D", [x], channels_out=channels, kernel=kernel,
                stride=stride, pad=pad),
            _op(relu, "Activation", [name], activation="relu")]


def _classifier(x: str, classes: int, index: tuple[int, int, int]) -> list[dict[str, Any]]:
    """Flatten, then InnerProduct 4096 relu, 4096 relu, `classes`, named as
    torchvision's `classifier.N` at the `index` of its Linear layers (its ReLU and
    Dropout layers take indices too)."""
    a, b, c = (f"classifier.{i}" for i in index)
    return [_op("flatten", "Flatten", [x]),
            _op(a, "InnerProduct", ["flatten"], outputs=4096, activation="relu"),
            _op(b, "InnerProduct", [a], outputs=4096, activation="relu"),
            _op(c, "InnerProduct", [b], outputs=classes)]


def _labelled(ops: list[dict[str, Any]], batch: int, size: int,
              scores: str) -> dict[str, Any]:
    ops = [*ops, _op("loss", "SoftmaxWithLoss", [scores, "label"])]
    return {"inputs": _inputs(batch, 3, size), "outputs": ["loss"], "operators": ops}


def vgg16(batch: int = 8, size: int = 224, classes: int = 1000) -> dict[str, Any]:
    """torchvision's VGG-16 for `size`x`size` RGB images; output `loss`."""
    ops: list[dict[str, Any]] = []
    x, i = "data", 0
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
              512, 512, 512, "M"):
        if v == "M":
            ops.append(_op(f"features.{i}", "Pooling2D", [x], mode="max", kernel=2,
                           stride=2))
            x, i = f"features.{i}", i + 1
        else:
            ops += _conv_relu(f"features.{i}", f"features.{i + 1}", x, int(v), 3, 1, 1)
            x, i = f"features.{i + 1}", i + 2
    ops += _classifier(x, classes, (0, 3, 6))
    return _labelled(ops, batch, size, "classifier.6")


def alexnet(batch: int = 8, size: int = 224, classes: int = 1000) -> dict[str, Any]:
    """torchvision's AlexNet for `size`x`size` RGB images; output `loss`."""
    ops = [*_conv_relu("features.0", "features.1", "data", 64, 11, 4, 2),
           _op("features.2", "Pooling2D", ["features.1"], mode="max", kernel=3, stride=2),
           *_conv_relu("features.3", "features.4", "features.2", 192, 5, 1, 2),
           _op("features.5", "Pooling2D", ["features.4"], mode="max", kernel=3, stride=2),
           *_conv_relu("features.6", "features.7", "features.5", 384, 3, 1, 1),
           *_conv_relu("features.8", "features.9", "features.7", 256, 3, 1, 1),
           *_conv_relu("features.10", "features.11", "features.9", 256, 3, 1, 1),
           _op("features.12", "Pooling2D", ["features.11"], mode="max", kernel=3,
               stride=2),
           *_classifier("features.12", classes, (1, 4, 6))]
    return _labelled(ops, batch, size, "classifier.6")


_PAIRS = ("kernel", "stride", "pad", "dilate")


def reference_style(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` (a network whose loss is a SoftmaxWithLoss of scores and an int `label`
    input) as the reference's ONNX-converted benchmark files write it: the label input
    and the loss operator dropped, the scores tensor renamed `loss` (the network's one
    output: the objective is the sum of the [B, classes] logits, as the reference's
    benchmark back-propagates), each fused activation an Activation operator of its own
    (ONNX has Relu nodes), every pair option as [h, w], and `"count_include_pad": 0`,
    `"ceil_mode": 0` on poolings (ONNX's integer attributes). Operator names, and so
    parameter names, are kept."""
    losses = [op for op in doc["operators"] if op["type"] == "SoftmaxWithLoss"]
    assert len(losses) == 1, "reference_style: one SoftmaxWithLoss expected"
    scores, label = losses[0]["inputs"]
    rename = {scores: "loss"}
    ops: list[dict[str, Any]] = []
    for op in doc["operators"]:
        if op is losses[0]:
            continue
        new = {**op, "inputs": [rename.get(t, t) for t in op["inputs"]],
               "outputs": [rename.get(t, t) for t in op["outputs"]]}
        options = dict(op.get("options", {}))
        for key in _PAIRS:
            if isinstance(options.get(key), int):
                options[key] = [options[key], options[key]]
        if op["type"] == "Pooling2D":
            options = {**options, "count_include_pad": 0, "ceil_mode": 0}
        act = options.pop("activation", "identity") \
            if op["type"] in ("Convolution2D", "InnerProduct", "Elementwise") else "identity"
        if options:
            new["options"] = options
        ops.append(new)
        if act != "identity":
            out = new["outputs"][0]
            new["outputs"] = [f"{out}.pre"]
            ops.append({"name": f"{op['name']}.act", "type": "Activation",
                        "inputs": [f"{out}.pre"], "outputs": [out],
                        "options": {"activation": act}})
    inputs = [i for i in doc["inputs"] if i.get("name") != label]
    return {"inputs": inputs, "outputs": ["loss"], "operators": ops}


if __name__ == "__main__":
    import json
    import sys

    from bench_compile import mobilenet_v2

    make = {"lenet": lenet, "resnet18": resnet18, "mobilenet_v2": mobilenet_v2,
            "vgg16": vgg16, "alexnet": alexnet}[sys.argv[1].removesuffix(":reference")]
    doc = make()
    print(json.dumps(reference_style(doc) if sys.argv[1].endswith(":reference") else doc,
                     indent=4))
