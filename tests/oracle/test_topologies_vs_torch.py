"""Loss and parameter gradients of v0 topologies against a PyTorch reimplementation.

Random but valid spec documents (seeded) exercise what the spec allows and the
testdata only samples: skip connections, several layers reading the data input,
a prediction taken from a layer that is not the last (whose later layers then get
zero gradients), bias and relu on or off, widths and batch down to 1.

The torch model (`spec_loss` in conftest.py) is built from the spec *document*
(the JSON dict), not from the parsed ModelSpec or the lowering, so a wiring mistake
in either shows up as a mismatch. It runs in float64 on the same float32 initial values, so the comparison
measures our float32 rounding only.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

from frame_mlir.frontends.spec.initial_values import generate_initial_values
from frame_mlir.frontends.spec.lower import lower_spec
from frame_mlir.frontends.spec.spec_v0 import parse_spec
from frame_mlir.runtime.executable import compile_module

# Each case is one compile (~1 s), the bulk of this file's runtime; 10 seeds reach
# every wiring test_random_topologies_cover_the_interesting_wirings asks for.
RANDOM_SEEDS = tuple(range(10))
# A few more with widths that leave remainders of frame-tile-matmul's 4 x 64 register
# tiles (and a batch that is not a multiple of 4), where the small ones never reach.
WIDE_SEEDS = (100, 101, 102)
WIDE_SIZES = (5, 17, 33, 65, 130)
# tiny_mlp_check is tiny_mlp with other init ranges: same topology, so not repeated.
TESTDATA_SPECS = ("tiny_mlp", "skip_mlp", "reuse_input", "nonfinal_pred", "nobias_mlp",
                  "inline_data", "mnist_mlp")


def random_spec(seed: int, sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    """A valid v0 spec document with 2-5 linear layers wired at random.

    Each layer reads the data input or any earlier layer; widths 1..12 and batch 1..8,
    or both drawn from `sizes`; bias and relu are coin flips (the `activation` key is
    sometimes omitted, which means "none"); the prediction is any layer.
    """
    rng = random.Random(seed)

    def size(hi: int) -> int:
        return rng.choice(sizes) if sizes else rng.randint(1, hi)

    batch = size(8)
    widths = {"x": size(12)}
    layers: list[dict[str, Any]] = []
    for i in range(rng.randint(2, 5)):
        # A list in layer order, never a set: set order of strings varies per process.
        source = rng.choice(["x", *(layer["name"] for layer in layers)])
        out = size(12)
        layer: dict[str, Any] = {"name": f"l{i}", "kind": "linear", "input": source,
                                 "weight_shape": [widths[source], out]}
        if rng.random() < 0.6:
            layer["bias_shape"] = [batch, out]
        activation = rng.choice(["relu", "relu", "none", None])
        if activation is not None:
            layer["activation"] = activation
        layers.append(layer)
        widths[layer["name"]] = out
    prediction = rng.choice(layers)["name"]
    return {
        "schema_version": 0,
        "model": {"name": f"rand{seed}", "dtype": "float32", "batch": batch},
        "inputs": [{"name": "x", "shape": [batch, widths["x"]]}],
        "layers": layers,
        "loss": {"kind": "mse", "prediction": prediction,
                 "target_shape": [batch, widths[prediction]]},
        "optimizer": {"kind": "sgd", "learning_rate": 0.05},
        "training": {"steps": 1, "seed": 1000 + seed, "log_every": 1},
        "data": {
            "x": {"kind": "uniform_seeded", "range": [-1.0, 1.0]},
            "target": {"kind": "uniform_seeded", "range": [-1.0, 1.0]},
            "params": {"kind": "uniform_seeded", "weight_range": [-0.6, 0.6],
                       "bias_range": [-0.2, 0.4]},
        },
    }


def check_gradients(doc: dict[str, Any], torch: Any, oracle: Any, category: str) -> None:
    """Compile `doc` without SGD and compare `@<name>_grad` with torch autograd."""
    spec = parse_spec(json.dumps(doc))
    lowered = lower_spec(spec)
    ex = compile_module(lowered.module)
    values = generate_initial_values(spec)
    names = oracle.doc_param_names(doc)
    assert lowered.param_names == names, "graph parameter order differs from the spec's"
    assert [n for n, _ in values.params] == names

    (x,) = values.inputs.values()
    arrays = [a for _, a in values.params]
    loss, *grads = ex(f"{lowered.function}_grad", x, *arrays, values.target)

    tp = {n: torch.from_numpy(a).double().requires_grad_() for n, a in values.params}
    ref = oracle.spec_loss(torch, doc, torch.from_numpy(x).double(), tp,
                     torch.from_numpy(values.target).double())
    ref.backward()

    name = doc["model"]["name"]
    oracle.assert_close(loss, ref.detach().numpy(), category=category, what=f"{name} loss")
    (fwd_loss,) = ex(lowered.function, x, *arrays, values.target)
    # Same forward ops, but the pipeline may schedule them differently: not bitwise.
    oracle.assert_close(fwd_loss, loss, category=category, rtol=1e-6, atol=0.0,
                        what=f"{name} loss of @f vs @f_grad")
    assert len(grads) == len(names)
    for n, ours in zip(names, grads, strict=True):
        g = tp[n].grad
        # torch leaves .grad None for a parameter the loss does not depend on.
        expected = np.zeros(tp[n].shape) if g is None else g.numpy()
        if g is None:
            assert np.all(ours == 0.0), f"{name}: {n} is off the loss path but has gradient"
        oracle.assert_close(ours, expected, category=category, what=f"{name} d loss / d {n}")


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_topology_gradients(seed: int, torch: Any, oracle: Any) -> None:
    check_gradients(random_spec(seed), torch, oracle, "topology random")


@pytest.mark.parametrize("seed", WIDE_SEEDS)
def test_random_wide_topology_gradients_vs_torch(seed: int, torch: Any, oracle: Any) -> None:
    check_gradients(random_spec(seed, WIDE_SIZES), torch, oracle, "topology random wide")


@pytest.mark.parametrize("name", TESTDATA_SPECS)
def test_testdata_topology_gradients(name: str, torch: Any, oracle: Any) -> None:
    doc = json.loads((oracle.testdata / f"{name}.json").read_text())
    check_gradients(doc, torch, oracle, f"topology testdata{' mnist' if 'mnist' in name else ''}")


def test_random_topologies_cover_the_interesting_wirings() -> None:
    """The seeds above must include each wiring the generator exists to reach."""
    docs = [random_spec(s) for s in RANDOM_SEEDS]

    def readers(doc: dict[str, Any], src: str) -> int:
        return sum(layer["input"] == src for layer in doc["layers"])

    def skips(doc: dict[str, Any]) -> bool:
        layers = doc["layers"]
        return any(layer["input"] not in ("x", layers[i - 1]["name"])
                   for i, layer in enumerate(layers) if i)

    def used(doc: dict[str, Any]) -> set[str]:
        # Layers on the path to the prediction.
        by_name = {layer["name"]: layer for layer in doc["layers"]}
        out, todo = set(), [doc["loss"]["prediction"]]
        while todo:
            n = todo.pop()
            if n in by_name and n not in out:
                out.add(n)
                todo.append(by_name[n]["input"])
        return out

    assert any(skips(d) for d in docs), "no skip connection"
    assert any(readers(d, "x") >= 2 for d in docs), "no reuse of the data input"
    assert any(d["loss"]["prediction"] != d["layers"][-1]["name"] for d in docs), \
        "prediction always the last layer"
    assert any(len(used(d)) < len(d["layers"]) for d in docs), "no layer off the loss path"
    assert any(any(readers(d, layer["name"]) >= 2 for layer in d["layers"]) for d in docs), \
        "no layer read twice (fan-out)"
    assert any(d["model"]["batch"] == 1 for d in docs), "no batch of 1"
    assert any(1 in layer["weight_shape"] for d in docs for layer in d["layers"]), \
        "no width of 1"
    assert any("bias_shape" not in layer for d in docs for layer in d["layers"])
    assert any(layer.get("activation") == "relu" for d in docs for layer in d["layers"])
    for d in docs:  # every document is valid: parse_spec raises otherwise
        parse_spec(json.dumps(d))
