"""`frame`: the frame Python API (version 0.1.0) on top of frame-mlir.

Code written for the frame Python API runs unchanged: `import frame`. Everything is a
thin facade over `frame_mlir` (see `frame._core`); computations run in code that
frame-mlir's pipeline compiles.
"""

__version__ = "0.1.0"

try:
    from . import _core
except ImportError:  # importing frame itself never fails
    _core = None

_core_available = _core is not None

__all__ = ["__version__", "_core", "_core_available"]

if _core_available:
    from . import data, nn
    from ._core import (
        DType,
        Graph,
        Tensor,
        add,
        build_backward_graph,
        build_sgd_update_graph,
        compile,  # noqa: A004 - shadows the builtin on purpose (the API's name)
        constant,
        from_numpy,
        load_onnx_weights,
        matmul,
        mse_loss,
        mul,
        relu,
        save_onnx_weights,
        square,
        sum,  # noqa: A004 - shadows the builtin on purpose (the API's name)
    )

    __all__ += [
        "DType", "Graph", "Tensor", "add", "build_backward_graph", "build_sgd_update_graph",
        "compile", "constant", "from_numpy", "load_onnx_weights", "matmul", "mse_loss", "mul",
        "relu", "save_onnx_weights", "square", "sum", "data", "nn",
    ]
