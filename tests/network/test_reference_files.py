"""Files written the way the reference's (dlprimitives') are load as the reference reads
them (docs/network-format.md, "Files of the reference"):

* testdata/networks/reference_style.json is written as its ONNX-converted benchmark
  nets are (explicit [h, w] pairs, `"count_include_pad": 0`, `"ceil_mode": 0`, `"bias":
  1`, ONNX parameter names, the final InnerProduct's [4, 10] output named `loss`) with
  the misspelt `"operations": "sum"` of its unit-test network: it loads with one
  NET-002 warning (with its "did you mean"), `strict=True` refuses it;
* integer booleans: 0 / 1 read as false / true (the same IR as the JSON booleans), a
  value that the reference would read as the default warns (NET-012), any other
  integer is an error naming the option;
* a loss of several elements: the objective is the weighted sum of its elements and
  its gradient seed the weight on every element (against the PyTorch oracle, and by
  hand), reported so by `Network.objective` and by frame-run's loss lines;
* an operator without `inputs` (the reference's default: none);
* the benchmark's random batch (`random_feed`): shapes, ranges, seeded;
* bench/networks.py's VGG-16, AlexNet and ResNet-18 in the reference's style.
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frame_mlir.network as fnet
from frame_mlir.frontends.common.errors import SpecError
from frame_mlir.frontends.network.data import InputDecl, random_feed
from frame_mlir.frontends.network.loader import network_from_doc
from frame_mlir.frontends.network.lower import build_function, label_classes

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "testdata" / "networks" / "reference_style.json"
DOC: dict[str, Any] = json.loads(REFERENCE.read_text())
TYPO = "/operators/5/options/operations"


def load_quietly(source: Any, **kw: Any) -> fnet.Network:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fnet.NetworkWarning)
        return fnet.load(source, **kw)


def feed_of(net: fnet.Network, seed: int = 0) -> dict[str, np.ndarray]:
    decls = [InputDecl(i.name, i.shape, i.dtype) for i in net.spec.inputs]
    return random_feed(decls, label_classes(net.spec), seed)


@pytest.fixture(scope="module")
def reference_net() -> fnet.Network:
    return load_quietly(REFERENCE, seed=0)


# --------------------------------------------------------------------------- unknown keys


def test_reference_file_loads_with_a_warning() -> None:
    with pytest.warns(fnet.NetworkWarning) as record:
        net = fnet.load(REFERENCE, seed=0)
    assert len(record) == 1
    text = str(record[0].message)
    assert text.startswith(f"{REFERENCE}: NET-002 at {TYPO}: unknown option 'operations' "
                           "for Elementwise (did you mean 'operation'?)")
    assert text.endswith("; ignored, as the reference ignores it")
    assert [(d.rule, d.pointer) for d in net.spec.warnings] == [("NET-002", TYPO)]
    # the misspelt key has no effect: the default operation, sum
    add = net.spec.operators[5]
    assert add.options["operation"] == "sum" and "operations" not in add.options


def test_strict_makes_the_warning_an_error() -> None:
    with pytest.raises(SpecError) as info:
        fnet.load(REFERENCE, strict=True)
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("NET-002", TYPO)
    assert "did you mean 'operation'?" in d.message and "ignored" not in d.message


def test_typo_in_structure_is_still_an_error() -> None:
    """Unknown keys outside `options` stay errors (NET-000), with their suggestion."""
    doc = copy.deepcopy(DOC)
    doc["operators"][8]["frozn"] = True
    with pytest.raises(SpecError) as info:
        network_from_doc(doc)
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("NET-000", "/operators/8/frozn")
    assert "did you mean 'frozen'?" in d.message


# --------------------------------------------------------------------------- booleans


def _pool(value: Any, key: str = "count_include_pad") -> dict[str, Any]:
    return {"inputs": [{"name": "data", "shape": [1, 1, 5, 5]}], "outputs": ["p"],
            "operators": [{"name": "p", "type": "Pooling2D", "inputs": ["data"],
                           "outputs": ["p"], "options": {"mode": "avg", "kernel": 3,
                                                         "pad": 1, "stride": 2,
                                                         key: value}}]}


@pytest.mark.parametrize(("integer", "boolean"), [(0, False), (1, True)])
@pytest.mark.parametrize("key", ["count_include_pad", "ceil_mode"])
def test_integer_boolean_is_that_boolean(key: str, integer: int, boolean: bool) -> None:
    a = network_from_doc(_pool(integer, key))
    b = network_from_doc(_pool(boolean, key))
    assert a.operators[0].options[key] is boolean
    assert str(build_function(a, "test").fn) == str(build_function(b, "test").fn)
    # 0 is the default (false): both readings agree; 1 differs from the reference's
    assert [d.rule for d in a.warnings] == ([] if integer == 0 else ["NET-012"])


def test_integer_boolean_other_than_the_default_warns() -> None:
    spec = network_from_doc(_pool(1))
    (d,) = spec.warnings
    assert (d.rule, d.pointer) == ("NET-012", "/operators/0/options/count_include_pad")
    assert ("option 'count_include_pad' of Pooling2D: integer 1 is read as true; the "
            "reference reads a value that is not a JSON boolean as the default, false") \
        in d.message
    with pytest.raises(SpecError) as info:
        network_from_doc(_pool(1), strict=True)
    assert info.value.rules == ["NET-012"]
    # `bias: 0` drops the bias (the reference would keep it): a warning too
    doc = copy.deepcopy(DOC)
    doc["operators"][9]["options"]["bias"] = 0
    spec = network_from_doc(doc)
    assert [(d.rule, d.pointer) for d in spec.warnings] == [
        ("NET-002", TYPO), ("NET-012", "/operators/9/options/bias")]
    assert "fc.bias" not in {p.name for p in build_function(spec, "train").params}


@pytest.mark.parametrize("value", [2, -1, 0.5, "0"])
def test_other_values_for_a_boolean_are_errors(value: Any) -> None:
    with pytest.raises(SpecError) as info:
        network_from_doc(_pool(value, "ceil_mode"))
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("NET-000", "/operators/0/options/ceil_mode")
    assert d.expected == "a boolean (true, false, 0 or 1)"
    assert d.message.startswith("option 'ceil_mode' of Pooling2D: expected a boolean "
                                "(true, false, 0 or 1), found ")


def test_frozen_takes_integer_booleans() -> None:
    doc = copy.deepcopy(DOC)
    doc["operators"][0]["frozen"] = 1
    spec = network_from_doc(doc)
    assert spec.operators[0].frozen
    assert ("NET-012", "/operators/0/frozen") in [(d.rule, d.pointer) for d in spec.warnings]
    doc["operators"][0]["frozen"] = 3
    with pytest.raises(SpecError) as info:
        network_from_doc(doc)
    assert [(d.rule, d.pointer) for d in info.value.diagnostics] == [
        ("NET-000", "/operators/0/frozen")]
    assert "operator key 'frozen': expected a boolean" in info.value.diagnostics[0].message


# --------------------------------------------------------------------------- other defaults


def test_operator_without_inputs() -> None:
    """The reference defaults an operator's `inputs` to none (a Parameter)."""
    doc = {"inputs": [{"shape": [2, 3]}], "outputs": ["loss"], "operators": [
        {"name": "w", "type": "Parameter", "outputs": ["w"], "options": {"shape": [2, 3]}},
        {"name": "loss", "type": "MSELoss", "inputs": ["data", "w"], "outputs": ["loss"]}]}
    spec = network_from_doc(doc)
    assert spec.operators[0].inputs == () and spec.inputs[0].name == "data"


# --------------------------------------------------------------------------- losses


def test_loss_of_several_elements_seeds_its_weight_everywhere() -> None:
    """InnerProduct logits as a loss with weight 0.5: d(0.5 * sum(x W^T + b))/db = 0.5 *
    batch for every output; the objective is 0.5 * the sum of the logits."""
    doc = {"inputs": [{"shape": [4, 3]}],
           "outputs": [{"name": "logits", "loss_weight": 0.5}],
           "operators": [{"name": "fc", "type": "InnerProduct", "inputs": ["data"],
                          "outputs": ["logits"], "options": {"outputs": 5}}]}
    net = fnet.load(doc, seed=0)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    outs, grads = net.gradients({"data": x})
    assert outs["logits"].shape == (4, 5)
    np.testing.assert_array_equal(grads["fc.1"], np.full(5, 2.0, np.float32))
    np.testing.assert_allclose(grads["fc.0"], np.tile(0.5 * x.sum(0), (5, 1)), rtol=1e-6)
    assert net.objective(outs) == 0.5 * float(outs["logits"].sum(dtype=np.float64))


def test_logits_named_loss_against_torch(reference_net: fnet.Network) -> None:
    """The reference file's objective (the sum of the [4, 10] logits) and every
    parameter gradient against the independent PyTorch interpreter (float64)."""
    torch = pytest.importorskip("torch", reason="the network oracle needs torch")
    from torch_network import TorchNetwork

    net = reference_net
    feed = feed_of(net)
    params = net.parameters()
    outs, grads = net.gradients(feed)
    oracle = TorchNetwork(copy.deepcopy(DOC), params).double()
    got = oracle({"data": torch.from_numpy(feed["data"])})
    loss = oracle.loss(got)
    loss.backward()
    ref = float(loss.detach())
    assert outs["loss"].shape == (4, 10)
    assert abs(net.objective(outs) - ref) <= 1e-4 * max(1.0, abs(ref))
    trainable = oracle.trainable()
    assert sorted(grads) == sorted(trainable)
    refs = {name: trainable[name].grad.numpy() for name in grads}
    # conv1.bias feeds a BatchNorm, which removes it: its exact gradient is 0 and ours
    # is float32 rounding (~1e-8 of the largest gradient here), so a norm below 1e-4
    # of the largest counts as zero: the bound is then 1e-7 of the largest
    floor = 1e-4 * max(np.linalg.norm(r) for r in refs.values())
    for name, g in grads.items():
        r = refs[name]
        err = np.linalg.norm(g - r) / max(np.linalg.norm(r), floor)
        assert err <= 1e-3, f"{name}: normwise error {err:.2e}"


def test_frame_run_reports_the_weighted_sum(capsys: pytest.CaptureFixture[str],
                                            reference_net: fnet.Network,
                                            tmp_path: Path) -> None:
    """`epoch 1 loss V`: one step on the 4 samples, V = the sum of the logits before the
    update (the batch is a shuffle of the samples: equal up to summation order)."""
    from frame_mlir.tools import frame_run

    feed = feed_of(reference_net, seed=3)
    data = tmp_path / "d.npz"
    np.savez(data, data=feed["data"])
    fresh = load_quietly(REFERENCE, seed=0)
    outs, _ = fresh.gradients(feed)
    expected = fresh.objective(outs)
    capsys.readouterr()
    assert frame_run.main([str(REFERENCE), "--data", str(data), "--epochs", "1"]) == 0
    out, err = capsys.readouterr()
    assert "frame-run: warning: " in err and "NET-002" in err
    m = re.fullmatch(r"epoch 1 loss (\S+)\nfinal_loss (\S+)\n", out)
    assert m is not None, out
    assert float(m.group(1)) == pytest.approx(expected, rel=1e-5, abs=1e-5)


# --------------------------------------------------------------------------- random batch


def test_random_feed() -> None:
    decls = [InputDecl("data", (3, 4), "float"), InputDecl("label", (3,), "int"),
             InputDecl("unused", (2,), "int")]
    a = random_feed(decls, {"label": 7}, seed=11)
    b = random_feed(decls, {"label": 7}, seed=11)
    c = random_feed(decls, {"label": 7}, seed=12)
    assert a["data"].dtype == np.float32 and a["data"].shape == (3, 4)
    assert a["label"].dtype == np.int32 and a["label"].shape == (3,)
    assert np.all((a["data"] >= -1) & (a["data"] < 1))
    assert np.all((a["label"] >= 0) & (a["label"] < 7))
    np.testing.assert_array_equal(a["unused"], np.zeros(2, np.int32))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["data"], c["data"])
    # the documented draw: std::mt19937(seed), floats then labels as u % classes
    from frame_mlir.runtime.random import MT19937, uniform_float32

    engine = MT19937(11)
    np.testing.assert_array_equal(a["data"].ravel(), uniform_float32(engine, 12, -1.0, 1.0))
    np.testing.assert_array_equal(a["label"], engine.next_u32(3) % 7)


def test_label_classes() -> None:
    doc = {"inputs": [{"shape": [2, 6]}, {"name": "y", "shape": [2], "dtype": "int"}],
           "outputs": ["loss"], "operators": [
               {"name": "fc", "type": "InnerProduct", "inputs": ["data"], "outputs": ["fc"],
                "options": {"outputs": 9}},
               {"name": "loss", "type": "SoftmaxWithLoss", "inputs": ["fc", "y"],
                "outputs": ["loss"]}]}
    assert label_classes(network_from_doc(doc)) == {"y": 9}


# --------------------------------------------------------------------------- bench networks


def _bench_networks() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_networks",
                                                  ROOT / "bench" / "networks.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(("name", "count"), [("vgg16", 138_357_544), ("alexnet", 61_100_840),
                                             ("resnet18", 11_689_512)])
def test_bench_networks_in_the_reference_style(name: str, count: int) -> None:
    """bench/networks.py's torchvision networks (parameter counts as torchvision's) as
    the reference's benchmark files write them: input `data` only, the [8, 1000] logits
    named `loss`, integer booleans on the poolings; they load without a warning."""
    networks = _bench_networks()
    doc = networks.reference_style(getattr(networks, name)(batch=8, size=224))
    assert [i["name"] for i in doc["inputs"]] == ["data"] and doc["outputs"] == ["loss"]
    assert all(op["type"] != "SoftmaxWithLoss" for op in doc["operators"])
    pools = [op["options"] for op in doc["operators"] if op["type"] == "Pooling2D"]
    assert pools and all(o["count_include_pad"] == 0 and o["ceil_mode"] == 0 for o in pools)
    spec = network_from_doc(doc)
    assert spec.warnings == ()
    built = build_function(spec, "test")
    assert sum(int(np.prod(p.shape)) for p in built.params if p.trainable) == count
    assert [o.name for o in spec.losses] == ["loss"]
    assert str(built.fn.function_type.outputs.data[0]) == "tensor<8x1000xf32>"
