"""The emitted C++ against the JIT, byte for byte, on whole models: every kind of
model the tests train -- the v0 specs of testdata/*.json and the networks of
testdata/networks (conv, pool, classification loss), a conv + pool network of the
Python API, scans (`frame.scan` and `frame.selective_scan`), float16 and bfloat16.

Each model goes once through the pipeline to the loops stage; that IR is emitted as
C++ (built with g++ -O2 -ffp-contract=off -Wall -Wextra -Werror, as emitted programs
are) and lowered to LLVM for the JIT. Both run the same public function on the same
random inputs: `_train_step` (SGD fused) for several steps, each step's outputs and the
final parameters compared as raw bytes; `_grad` once where a model returns more than
its loss (the networks: predictions, loss and every gradient). All programs compile
in the background while the JIT runs, two at a time (the CI's cores).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cpp_vs_jit import CXX, CppBuild, finish_model, start_model
from xdsl.dialects import builtin
from xdsl.parser import Parser

import frame
import frame._core
from frame_mlir.frontends.network.loader import load_network
from frame_mlir.frontends.network.lower import build_function
from frame_mlir.frontends.spec.lower import lower_spec
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.passes.common import set_arg_attr
from frame_mlir.passes.pipeline import make_context

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
F16, BF16, F32 = frame.DType.float16, frame.DType.bfloat16, frame.DType.float32
LR = 0.05


def _spec(name: str) -> tuple[builtin.ModuleOp, float | None, str, int]:
    spec = load_spec(str(TESTDATA / f"{name}.json"))
    return lower_spec(spec).module, spec.optimizer.learning_rate, "_train_step", 4


def _network(name: str) -> tuple[builtin.ModuleOp, float | None, str, int]:
    # A network returns its outputs besides the loss: its gradient function (what its
    # trainer calls) returns predictions, loss and every gradient.
    fn = build_function(load_network(TESTDATA / "networks" / f"{name}.json"), "train").fn
    return builtin.ModuleOp([fn]), None, "_grad", 1


def _api_model(graph: frame.Graph, loss: frame.Value, params: list[int]
               ) -> tuple[builtin.ModuleOp, float | None, str, int]:
    """A Python-API graph as a model: its function with the inputs `params` marked as
    parameters (as build_backward_graph marks them), trained with SGD fused."""
    graph.mark_output(loss)
    fn, hidden = graph._snapshot()
    assert not hidden, "constants would need their values passed"
    for i in params:
        set_arg_attr(fn, i, "frame.param", builtin.StringAttr(f"p{i}"))
    return builtin.ModuleOp([fn, *(f.clone() for f in graph._functions.values())]), LR, \
        "_train_step", 3


def _conv_pool(dtype: frame.DType = F32) -> tuple[builtin.ModuleOp, float | None, str, int]:
    g = frame.Graph("convnet")
    x = g.add_graph_input([4, 3, 10, 10], dtype)
    net = frame.nn.Sequential("net", [
        frame.nn.Conv2d("c1", 3, 8, [3, 3], [1, 1], [1, 1], 1, True, dtype),
        frame.nn.Relu("r1"),
        frame.nn.MaxPool2d("p1", [2, 2], [2, 2], [0, 0]),
        frame.nn.Conv2d("c2", 8, 6, [3, 3], [2, 2], [1, 1], 2, True, dtype),
        frame.nn.Sigmoid("s2"),
        frame.nn.AvgPool2d("p2", [2, 2], [1, 1], [0, 0]),
        frame.nn.Flatten("flat"),
        frame.nn.Linear("fc", 4, 24, 5, True, dtype),
    ])
    ps = frame.nn.add_parameter_inputs(g, net)
    (y,) = net.build(g, [x], ps)
    t = g.add_graph_input([4, 5], dtype)
    return _api_model(g, frame.mse_loss(g, y, t), list(range(1, 1 + len(ps))))


def _mlp(dtype: frame.DType) -> tuple[builtin.ModuleOp, float | None, str, int]:
    g = frame.Graph(f"mlp_{dtype.name}")
    x = g.add_graph_input([8, 12], dtype)
    w1, b1 = g.add_graph_input([12, 32], dtype), g.add_graph_input([8, 32], dtype)
    w2 = g.add_graph_input([32, 4], dtype)
    t = g.add_graph_input([8, 4], dtype)
    h = frame.relu(g, frame.add(g, frame.matmul(g, x, w1), b1))
    y = frame.matmul(g, frame.square(g, h), w2)
    return _api_model(g, frame.mse_loss(g, y, t), [1, 2, 3])


def _selective_scan() -> tuple[builtin.ModuleOp, float | None, str, int]:
    g = frame.Graph("sscan")
    shape = [3, 4, 9]
    x, a, b, c, d = (g.add_graph_input(shape, F32) for _ in range(5))
    y = frame._core.selective_scan(g, x, a, b, c, d)
    t = g.add_graph_input(shape, F32)
    return _api_model(g, frame.mse_loss(g, y, t), [1, 2, 3, 4])


_RNN = """
func.func @rnn_cell(%h: tensor<2x8xf32>, %x: tensor<2x8xf32>, %w: tensor<8x8xf32>,
                    %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %m = frame.matmul %h, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %a = frame.add %m, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = frame.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = frame.tanh %c : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %r : tensor<2x8xf32>
}
func.func @rnn(%h0: tensor<2x8xf32> {frame.param = "h0"}, %xs: tensor<6x2x8xf32>,
               %w: tensor<8x8xf32> {frame.param = "w"}, %b: tensor<2x8xf32> {frame.param = "b"},
               %t: tensor<6x2x8xf32>) -> tensor<f32> {
  %hs = frame.scan @rnn_cell(%h0, %xs, %w, %b) {length = 6 : i64, num_sequences = 1 : i64}
      : (tensor<2x8xf32>, tensor<6x2x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>) -> tensor<6x2x8xf32>
  %l = frame.mse_loss %hs, %t : (tensor<6x2x8xf32>, tensor<6x2x8xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""


def _scan() -> tuple[builtin.ModuleOp, float | None, str, int]:
    return Parser(make_context(), _RNN).parse_module(), LR, "_train_step", 4


MODELS: dict[str, Callable[[], tuple[builtin.ModuleOp, float | None, str, int]]] = {
    **{p.stem: (lambda n=p.stem: _spec(n)) for p in sorted(TESTDATA.glob("*.json"))},
    **{f"net_{p.stem}": (lambda n=p.stem: _network(n))
       for p in sorted((TESTDATA / "networks").glob("*.json"))},
    "api_conv_pool": _conv_pool,
    "api_conv_pool_f16": lambda: _conv_pool(F16),
    "api_mlp_f16": lambda: _mlp(F16),
    "api_mlp_bf16": lambda: _mlp(BF16),
    "api_selective_scan": _selective_scan,
    "rnn_scan": _scan,
}
"""Every model compared: name -> (frame module, lr or None, function suffix, calls)."""

# Kernels split over threads in these (frame-parallelize; the same bits at any count).
THREADED = {"net_lenet_digits": 2, "mnist_mlp": 2}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CppBuild | Exception]:
    """Every model's program started (g++ in the background, at most two at once) and
    its JIT run done; a model that fails to emit or compile fails its own test only."""
    if CXX is None:
        pytest.skip("a C++ compiler is needed")
    tmp = tmp_path_factory.mktemp("models")
    started: dict[str, CppBuild | Exception] = {}
    for i, (name, make) in enumerate(MODELS.items()):
        running = [b for b in started.values()
                   if isinstance(b, CppBuild) and b.proc.poll() is None]
        if len(running) >= 2:
            running[0].proc.wait()
        try:
            module, lr, suffix, calls = make()
            started[name] = start_model(name, module, lr, suffix, tmp, steps=calls,
                                        threads=THREADED.get(name, 1), seed=i)
        except Exception as err:  # reported by the model's test
            started[name] = err
    return started


@pytest.mark.parametrize("name", list(MODELS))
def test_model_trains_byte_for_byte_like_the_jit(
        name: str, builds: dict[str, CppBuild | Exception]) -> None:
    build = builds[name]
    if isinstance(build, Exception):
        raise build
    finish_model(build)


def test_every_testdata_model_is_compared() -> None:
    """A spec or network added to testdata is compared without touching this file."""
    assert {n for n in MODELS if not n.startswith(("api_", "rnn_"))} == \
        {p.stem for p in TESTDATA.glob("*.json")} | \
        {f"net_{p.stem}" for p in (TESTDATA / "networks").glob("*.json")}


