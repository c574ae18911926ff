"""The frame-compatible Python API (../shared/docs/frame-python-api.md), the
implementation behind the `frame` facade package: tensors and dtypes (`tensor.py`),
graphs and their compilation (`graph.py`), ops (`ops.py`), Modules (`nn.py`,
`nn_layers.py`), the backward and SGD graphs (`training.py`), ONNX weights
(`onnx_weights.py`) and the host-side data input (`data/`). User code imports
`frame`."""
