"""The PyTorch oracle of the dlprimitives network format (torch_network.py), checked.

* every operator against the dlprimitives conformance cases (dlprim_cases/): each
  stored case's forward outputs, input and parameter gradients (the case's `out_diffs`
  fed back) and BatchNorm running statistics, under the harness's tolerance; output
  shapes and parameter layouts for every case, stored values or not;
* the bench LeNet and ResNet-18 (bench/networks.py) against hand-written torch code on
  random parameters: loss, every gradient, running statistics;
* the network-level rules (parameter names, sharing, frozen, losses, in-place) and the
  operators without case files (Flatten, Squeeze, Reshape), by hand;
* the solver mirror: dlprimitives' SGD, torch's SGD and Adam against hand-computed updates;
* the model files under testdata/networks.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import os
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the network oracle needs torch (extra 'test')")
F = torch.nn.functional

from torch_network import TorchNetwork, infer_shapes, torch_solver  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NETWORKS = ROOT / "testdata" / "networks"


def _cases_dir() -> Path | None:
    """The vendored cases (tests/network/dlprim_cases), or $DLPRIM_CASES."""
    candidates = [os.environ.get("DLPRIM_CASES"), Path(__file__).parent / "dlprim_cases"]
    for c in candidates:
        if c and Path(c).is_dir() and any(Path(c).glob("test_case_*.json.gz")):
            return Path(c)
    return None


CASES = _cases_dir()
CASE_FILES = sorted(p.name for p in CASES.glob("test_case_*.json.gz")) if CASES else []
LABEL_OPS = {"SoftmaxWithLoss", "NLLLoss"}


@cache
def _load(name: str) -> dict[str, Any]:
    assert CASES is not None
    with gzip.open(CASES / name, "rt") as f:
        return json.load(f)


def _load_bench_networks():
    spec = importlib.util.spec_from_file_location("bench_networks", ROOT / "bench" / "networks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


networks = _load_bench_networks()


def harness_check(actual: np.ndarray, ref: Any, bound: float, what: str) -> None:
    """dlprimitives' compare_tensors: |actual - ref| <= bound, the bound scaled by the
    reference's std-dev when > 1 (or by |value| for a one-element reference > 1)."""
    r = np.asarray(ref, dtype=np.float64).ravel()
    a = np.asarray(actual, dtype=np.float64).ravel()
    assert a.shape == r.shape, f"{what}: {a.size} values, reference {r.size}"
    m = float(r.mean()) if r.size else 0.0
    dev = math.sqrt(max(float(np.mean(r * r)) - m * m, 0.0)) if r.size else 0.0
    if dev > 1:
        bound *= dev
    elif r.size == 1 and abs(m) > 1:
        bound *= abs(m)
    err = float(np.max(np.abs(a - r), initial=0.0))
    assert err <= bound, f"{what}: max |ours - reference| {err:.3g} > bound {bound:.3g}"


def _case_doc(kind: str, entry: dict[str, Any], in_shapes: list[list[int]]) -> dict[str, Any]:
    n_out = len(entry["output_tensors"])
    return {
        "inputs": [{"name": f"in{i}", "shape": shape,
                    **({"dtype": "int"} if kind in LABEL_OPS and i == 1 else {})}
                   for i, shape in enumerate(in_shapes)],
        "outputs": [f"out{i}" for i in range(n_out)],
        "operators": [{"name": "op", "type": kind,
                       "inputs": [f"in{i}" for i in range(len(in_shapes))],
                       "outputs": [f"out{i}" for i in range(n_out)],
                       "options": entry["options"]}],
    }


# -- conformance cases ----------------------------------------------------------------------


@pytest.mark.skipif(CASES is None, reason="shared/dlprim/cases not found (set DLPRIM_CASES)")
@pytest.mark.parametrize("name", CASE_FILES)
def test_operator_cases(name: str) -> None:
    """Each case with stored values: outputs, gradients, running stats vs the reference."""
    data = _load(name)
    kind = data["operator"]
    compared = 0
    for ei, entry in enumerate(data["tests"]):
        setup = entry["setup_tensors"]
        doc = _case_doc(kind, entry, [s["shape"] for s in setup])
        specs = entry.get("param_specs", [])
        where = f"{name} entry {ei} {entry['options']}"
        # Layout: our parameter list is the operator's (shape, trainable) list.
        net_specs = list(TorchNetwork(doc, shapes_only=True).param_specs.items())
        assert [(n, list(s), t) for n, (s, t) in net_specs] == [
            (f"op.{i}", s["shape"], s.get("trainable", True)) for i, s in enumerate(specs)
        ], f"{where}: parameter specs"
        assert [list(infer_shapes(doc)[f"out{i}"]) for i in range(len(entry["output_tensors"]))
                ] == [o["shape"] for o in entry["output_tensors"]], f"{where}: setup shapes"
        if entry.get("random_params"):
            continue
        params = {f"op.{i}": np.asarray(v, np.float32).reshape(s["shape"])
                  for i, (s, v) in enumerate(zip(specs, entry.get("param_tensors", []),
                                                 strict=True))}
        net = TorchNetwork(doc, params)
        for ci, case in enumerate(entry["cases"]):
            at = f"{where} case {ci} {case['in_shapes']}"
            if case.get("use_cpu_reference") or "out_tensors" not in case:
                shapes = infer_shapes(_case_doc(kind, entry, case["in_shapes"]))
                assert [list(shapes[f"out{i}"]) for i in range(len(case["out_shapes"]))
                        ] == case["out_shapes"], f"{at}: output shapes"
                continue
            feed = {}
            for i, (shape, values) in enumerate(zip(case["in_shapes"], case["in_tensors"],
                                                    strict=True)):
                t = torch.tensor(np.asarray(values, np.float32).reshape(shape))
                if kind in LABEL_OPS and i == 1:
                    t = t.long()
                else:
                    t.requires_grad_(setup[i].get("requires_grad", True))
                feed[f"in{i}"] = t
            for p in net.parameters():
                p.grad = None
            out = net(feed, test_mode=case.get("test_mode", False))
            bound = case.get("eps", 1e-5)
            ys = [out[f"out{i}"] for i in range(len(case["out_shapes"]))]
            for i, (y, shape, ref) in enumerate(zip(ys, case["out_shapes"], case["out_tensors"],
                                                    strict=True)):
                assert list(y.shape) == shape, f"{at}: out{i} shape"
                harness_check(y.detach().numpy(), ref, bound, f"{at}: out{i}")
                compared += 1
            if entry.get("train", False) and "out_diffs" in case:
                pairs = [(y, torch.tensor(np.asarray(g, np.float32).reshape(s)))
                         for y, g, s in zip(ys, case["out_diffs"], case["out_shapes"],
                                            strict=True) if y.requires_grad]
                if pairs:
                    torch.autograd.backward([y for y, _ in pairs], [g for _, g in pairs])
                for i, ref in enumerate(case.get("in_diffs", [])):
                    if ref is False:
                        continue
                    x = feed[f"in{i}"]
                    g = torch.zeros_like(x) if x.grad is None else x.grad
                    harness_check(g.numpy(), ref, bound, f"{at}: in_diff{i}")
                    compared += 1
                for i, ref in enumerate(case.get("params_diffs", [])):
                    if ref is False:
                        continue
                    harness_check(net.param(f"op.{i}").grad.numpy(), ref, bound,
                                  f"{at}: params_diff{i}")
                    compared += 1
            state = net.state()
            for i, ref in enumerate(case.get("parameters_check", [])):
                if ref is not False:
                    harness_check(state[f"op.{i}"], ref, bound, f"{at}: parameter {i}")
                    compared += 1
    assert compared > 0, f"{name}: no case with stored values"


# -- hand-written networks ----------------------------------------------------------------


def _random_params(doc: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, trainable) in TorchNetwork(doc, shapes_only=True).param_specs.items():
        if trainable:
            out[name] = (0.2 * rng.standard_normal(shape)).astype(np.float32)
        else:  # BatchNorm running mean / var
            out[name] = (rng.uniform(0.5, 1.5, shape) if name.endswith(".1")
                         else 0.1 * rng.standard_normal(shape)).astype(np.float32)
    return out


def _leaves(params: dict[str, np.ndarray], net: TorchNetwork) -> dict[str, torch.Tensor]:
    trainable = net.trainable()
    return {n: torch.tensor(v, requires_grad=n in trainable) for n, v in params.items()}


def _feed(doc: dict[str, Any], seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    data, label = doc["inputs"]
    return {"data": torch.randn(data["shape"], generator=g),
            "label": torch.randint(0, 10, label["shape"], generator=g)}


def _assert_grads(net: TorchNetwork, leaves: dict[str, torch.Tensor]) -> None:
    trainable = net.trainable()
    assert trainable, "no trainable parameters"
    for name, p in trainable.items():
        torch.testing.assert_close(p.grad, leaves[name].grad, rtol=1e-4, atol=1e-6,
                                   msg=lambda m, name=name: f"gradient of {name}: {m}")


def test_lenet_vs_handwritten_torch() -> None:
    doc = networks.lenet(batch=4, size=28)
    params = _random_params(doc, 1)
    net = TorchNetwork(doc, params)
    assert sorted(params) == ["conv1.0", "conv1.1", "conv2.0", "conv2.1",
                              "fc1.0", "fc1.1", "fc2.0", "fc2.1"]
    assert params["fc1.0"].shape == (500, 800)
    feed = _feed(doc, 2)
    out = net(feed)
    net.loss(out).backward()

    p = _leaves(params, net)
    x = F.conv2d(feed["data"], p["conv1.0"], p["conv1.1"])
    x = F.max_pool2d(x, 2, 2)
    x = F.conv2d(x, p["conv2.0"], p["conv2.1"])
    x = F.max_pool2d(x, 2, 2)
    x = F.relu(F.linear(x.flatten(1), p["fc1.0"], p["fc1.1"]))
    logits = F.linear(x, p["fc2.0"], p["fc2.1"])
    loss = F.cross_entropy(logits, feed["label"])
    loss.backward()

    torch.testing.assert_close(out["fc2"], logits, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out["loss"], loss.reshape(1), rtol=1e-5, atol=1e-6)
    _assert_grads(net, p)


def _handwritten_resnet18(p: dict[str, torch.Tensor], x: torch.Tensor, training: bool,
                          momentum: float = 0.1, eps: float = 1e-5) -> torch.Tensor:
    def bn(t: torch.Tensor, name: str) -> torch.Tensor:
        return F.batch_norm(t, p[f"{name}.0"], p[f"{name}.1"], p[f"{name}.2"], p[f"{name}.3"],
                            training=training, momentum=momentum, eps=eps)

    x = F.relu(bn(F.conv2d(x, p["conv1.0"], stride=2, padding=3), "bn1"))
    x = F.max_pool2d(x, 3, 2, 1)
    for stage in range(1, 5):
        for block in range(2):
            pre = f"layer{stage}.{block}."
            stride = 2 if stage > 1 and block == 0 else 1
            y = F.relu(bn(F.conv2d(x, p[pre + "conv1.0"], stride=stride, padding=1),
                          pre + "bn1"))
            y = bn(F.conv2d(y, p[pre + "conv2.0"], padding=1), pre + "bn2")
            if pre + "downsample.0.0" in p:
                x = bn(F.conv2d(x, p[pre + "downsample.0.0"], stride=stride),
                       pre + "downsample.1")
            x = F.relu(y + x)
    x = F.adaptive_avg_pool2d(x, 1).flatten(1)
    return F.linear(x, p["fc.0"], p["fc.1"])


def test_resnet18_vs_handwritten_torch() -> None:
    """Train-mode loss, gradients and running stats; then test-mode logits."""
    doc = networks.resnet18(batch=2, size=32, classes=10)
    params = _random_params(doc, 3)
    net = TorchNetwork(doc, params)
    feed = _feed(doc, 4)
    out = net(feed)
    net.loss(out).backward()

    p = _leaves(params, net)
    logits = _handwritten_resnet18(p, feed["data"], training=True)
    loss = F.cross_entropy(logits, feed["label"])
    loss.backward()
    torch.testing.assert_close(out["fc"], logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(out["loss"], loss.reshape(1), rtol=1e-5, atol=1e-6)
    _assert_grads(net, p)
    state = net.state()
    for name, (_, trainable) in net.param_specs.items():
        if not trainable:  # the hand-written batch_norm updated p's running stats too
            np.testing.assert_allclose(state[name], p[name].detach().numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=name)

    with torch.no_grad():
        ours = net(feed, test_mode=True)["fc"]
        ref = _handwritten_resnet18(p, feed["data"], training=False)
    torch.testing.assert_close(ours, ref, rtol=1e-4, atol=1e-5)


def test_resnet18_topology() -> None:
    doc = networks.resnet18()
    specs = TorchNetwork(doc, shapes_only=True).param_specs
    trainable = sum(math.prod(s) for s, t in specs.values() if t)
    assert trainable == 11_689_512  # torchvision.models.resnet18().parameters()
    assert specs["layer2.0.downsample.0.0"] == ((128, 64, 1, 1), True)
    assert specs["layer4.1.bn2.1"] == ((512,), False)
    assert "layer1.0.downsample.0.0" not in specs
    shapes = infer_shapes(doc)
    assert shapes["maxpool"] == (8, 64, 16, 16)
    assert shapes["layer4.1.out"] == (8, 512, 2, 2)
    assert shapes["fc"] == (8, 1000) and shapes["loss"] == (1,)
    lenet = TorchNetwork(networks.lenet(), shapes_only=True)
    assert sum(math.prod(s) for s, _ in lenet.param_specs.values()) == 431_080


# -- network rules and operators without case files ---------------------------------------


def _one_op(kind: str, options: dict[str, Any], shapes: list[list[int]],
            **extra: Any) -> dict[str, Any]:
    return {"inputs": [{"name": f"x{i}", "shape": s} for i, s in enumerate(shapes)],
            "outputs": ["y"],
            "operators": [{"name": "op", "type": kind, "inputs": [f"x{i}" for i in
                                                                  range(len(shapes))],
                           "outputs": ["y"], "options": options, **extra}]}


@pytest.mark.parametrize(("kind", "options", "shape", "expected"), [
    ("Flatten", {}, [2, 3, 4, 5], (2, 60)),
    ("Squeeze", {}, [2, 1, 3, 1], (2, 3)),
    ("Squeeze", {"dims": [-1]}, [2, 1, 3, 1], (2, 1, 3)),
    ("Squeeze", {"dims": [1, 3]}, [2, 1, 3, 1], (2, 3)),
    ("Squeeze", {"dims": [1], "all": True}, [2, 1, 3, 1], (2, 3)),
    ("Reshape", {"dims": [0, -1]}, [2, 3, 4], (2, 12)),
    ("Reshape", {"dims": [0, 0, 2, 2]}, [2, 3, 4], (2, 3, 2, 2)),
    ("Reshape", {"dims": [-1, 4, 1]}, [2, 3, 4], (6, 4, 1)),
    ("Pooling2D", {"kernel": 2}, [1, 1, 5, 5], (1, 1, 4, 4)),  # stride defaults to 1
    ("Pooling2D", {"kernel": [3, 2], "stride": [2, 1], "pad": [1, 0]}, [1, 1, 5, 5],
     (1, 1, 3, 4)),
    ("Slice", {"begin": 1}, [2, 5, 3], (2, 4, 3)),  # dim 1, end = end
    ("Reduction", {}, [2, 3], (1,)),  # everything, scalar as [1]
    ("InnerProduct", {"outputs": 7}, [2, 3, 4, 5], (2, 7)),
    ("Convolution2D", {"channels_out": 4, "kernel": 3, "stride": 2}, [1, 2, 9, 9],
     (1, 4, 4, 4)),
])
def test_shape_rules(kind: str, options: dict[str, Any], shape: list[int],
                     expected: tuple[int, ...]) -> None:
    doc = _one_op(kind, options, [shape])
    assert infer_shapes(doc)["y"] == expected
    net = TorchNetwork(doc)
    x = torch.randn(shape)
    y = net({"x0": x})["y"]
    assert tuple(y.shape) == expected
    if kind in ("Flatten", "Squeeze", "Reshape"):  # pure views of the data
        np.testing.assert_array_equal(y.numpy().ravel(), x.numpy().ravel())


def test_squeeze_refuses_a_non_unit_dim() -> None:
    with pytest.raises(ValueError, match="Squeeze"):
        infer_shapes(_one_op("Squeeze", {"dims": [0]}, [[2, 1]]))


def test_global_pooling_defaults_to_max() -> None:
    net = TorchNetwork(_one_op("GlobalPooling", {}, [[2, 3, 4, 4]]))
    x = torch.randn(2, 3, 4, 4)
    torch.testing.assert_close(net({"x0": x})["y"], x.amax(dim=(2, 3), keepdim=True))


def test_elementwise_defaults_and_threshold_gradient() -> None:
    doc = _one_op("Elementwise", {}, [[2, 3], [3]])
    a, b = torch.randn(2, 3, requires_grad=True), torch.randn(3, requires_grad=True)
    y = TorchNetwork(doc)({"x0": a, "x1": b})["y"]
    torch.testing.assert_close(y, a + b)
    y.sum().backward()
    torch.testing.assert_close(b.grad, torch.full((3,), 2.0))  # summed back to [3]

    x = torch.tensor([[-1.0, 0.0, 0.25, 2.0]], requires_grad=True)
    y = TorchNetwork(_one_op("Threshold", {}, [[1, 4]]))({"x0": x})["y"]
    assert y.tolist() == [[0.0, 0.0, 1.0, 1.0]] and not y.requires_grad


def test_batchnorm_use_global_stats_and_test_mode() -> None:
    params = {"op.0": np.array([0.5, -1.0], np.float32), "op.1": np.array([4.0, 0.25], np.float32)}
    x = torch.randn(3, 2, 5)
    expected = (x - torch.tensor([0.5, -1.0])[:, None]) / torch.sqrt(
        torch.tensor([4.0, 0.25])[:, None] + 1e-5)
    for options, test_mode in [({"use_global_stats": True}, False), ({}, True)]:
        net = TorchNetwork(_one_op("BatchNorm", options, [[3, 2, 5]]), params)
        torch.testing.assert_close(net({"x0": x}, test_mode=test_mode)["y"], expected)
        for name, value in params.items():  # running stats untouched
            np.testing.assert_array_equal(net.state()[name], value)
    net = TorchNetwork(_one_op("BatchNorm", {"affine": False, "momentum": 0.5}, [[3, 2, 5]]),
                       params)
    net({"x0": x})
    batch_mean = x.mean(dim=(0, 2)).numpy()
    np.testing.assert_allclose(net.state()["op.0"], 0.5 * params["op.0"] + 0.5 * batch_mean,
                               rtol=1e-6)
    assert net.param_names == ["op.0", "op.1"] and not net.trainable()


def test_names_sharing_frozen_and_losses() -> None:
    doc = {
        "inputs": [{"shape": [4, 3]}, {"name": "t", "shape": [4, 2]}],  # first is "data"
        "outputs": ["a", "loss_a", {"name": "mse", "loss_weight": 0.5}],
        "operators": [
            {"name": "fc1", "type": "InnerProduct", "inputs": ["data"], "outputs": ["h"],
             "options": {"outputs": 3, "bias": False}, "params": ["shared"]},
            {"name": "fc2", "type": "InnerProduct", "inputs": ["h"], "outputs": ["h"],
             "options": {"outputs": 3}, "params": ["shared", "auto"]},
            {"name": "act", "type": "Activation", "inputs": ["h"], "outputs": ["h"],
             "options": {"activation": "tanh"}},
            {"name": "fc3", "type": "InnerProduct", "inputs": ["h"], "outputs": ["a"],
             "options": {"outputs": 2}, "frozen": True},
            {"name": "sq", "type": "Reduction", "inputs": ["a"], "outputs": ["loss_a"],
             "options": {"method": "sumsq"}},
            {"name": "mse", "type": "MSELoss", "inputs": ["a", "t"], "outputs": ["mse"],
             "options": {"reduce": "sum"}},
        ],
    }
    net = TorchNetwork(doc, seed=5)
    assert net.param_names == ["shared", "fc2.1", "fc3.0", "fc3.1"]
    assert sorted(net.trainable()) == ["fc2.1", "shared"]
    assert net.loss_weights == {"loss_a": 1.0, "mse": 0.5}
    bound = 1 / math.sqrt(3)  # InnerProduct's default initialisation range
    assert all(np.abs(v).max() <= bound for v in net.state().values())

    x, t = torch.randn(4, 3), torch.randn(4, 2)
    out = net({"data": x, "t": t})
    loss = net.loss(out)
    loss.backward()
    s = {n: torch.tensor(v, requires_grad=True) for n, v in net.state().items()}
    h = torch.tanh(F.linear(F.linear(x, s["shared"]), s["shared"], s["fc2.1"]))
    a = F.linear(h, s["fc3.0"], s["fc3.1"])
    ref = (a * a).sum() + 0.5 * ((a - t) ** 2).sum()
    ref.backward()
    torch.testing.assert_close(out["a"], a)
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(net.param("shared").grad, s["shared"].grad)  # both uses
    assert net.param("fc3.0").grad is None


def test_network_errors() -> None:
    doc = _one_op("InnerProduct", {"outputs": 2, "inputs": 5}, [[1, 4]])
    with pytest.raises(ValueError, match="inputs 5"):
        TorchNetwork(doc)
    with pytest.raises(ValueError, match="unknown type"):
        TorchNetwork(_one_op("Nope", {}, [[1]]))
    with pytest.raises(ValueError, match="shape"):
        TorchNetwork(_one_op("InnerProduct", {"outputs": 2}, [[1, 4]]),
                     {"op.0": np.zeros((4, 2), np.float32)[:1]})


# -- solvers ------------------------------------------------------------------------------


def _two_steps(kind: str, semantics: str, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two solver steps on p0 with fixed gradients g1, g2; plus a frozen tensor."""
    p = torch.nn.Parameter(torch.tensor(P0.copy()))
    frozen = torch.nn.Parameter(torch.tensor(P0.copy()), requires_grad=False)
    solver = torch_solver(kind, [p, frozen], semantics=semantics, **kw)
    for g in (G1, G2):
        solver.zero_grad()
        p.grad = torch.tensor(g.copy())
        solver.step()
    np.testing.assert_array_equal(frozen.detach().numpy(), P0)
    return p.detach().numpy().astype(np.float64)


_rng = np.random.default_rng(7)
P0, G1, G2 = (_rng.standard_normal(5).astype(np.float32) for _ in range(3))


def test_sgd_semantics() -> None:
    lr, mom, wd = 0.1, 0.9, 0.01
    p0, g1, g2 = (v.astype(np.float64) for v in (P0, G1, G2))
    # dlprimitives: v = g + momentum*v; p = (1 - wd)*p - lr*v
    v1 = g1
    p1 = (1 - wd) * p0 - lr * v1
    v2 = g2 + mom * v1
    p2 = (1 - wd) * p1 - lr * v2
    got = _two_steps("sgd", "dlprim", lr=lr, momentum=mom, weight_decay=wd)
    np.testing.assert_allclose(got, p2, rtol=1e-6, atol=1e-6)
    # torch.optim.SGD: v = momentum*v + (g + wd*p); p -= lr*v
    v1 = g1 + wd * p0
    q1 = p0 - lr * v1
    v2 = mom * v1 + g2 + wd * q1
    q2 = q1 - lr * v2
    got = _two_steps("sgd", "torch", lr=lr, momentum=mom, weight_decay=wd)
    np.testing.assert_allclose(got, q2, rtol=1e-6, atol=1e-6)
    assert np.abs(p2 - q2).max() > 1e-3  # the two semantics do differ here
    # dlprimitives' CPU quirk: the velocity is (1 + momentum)*g
    c1 = (1 - wd) * p0 - lr * (1 + mom) * g1
    c2 = (1 - wd) * c1 - lr * (1 + mom) * g2
    got = _two_steps("sgd", "dlprim_cpu", lr=lr, momentum=mom, weight_decay=wd)
    np.testing.assert_allclose(got, c2, rtol=1e-6, atol=1e-6)


def test_adam_semantics() -> None:
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.05
    p = P0.astype(np.float64)
    m = v = np.zeros_like(p)
    for t, g in enumerate((G1, G2), start=1):
        g = g.astype(np.float64) + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    for semantics in ("dlprim", "torch"):
        got = _two_steps("adam", semantics, lr=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd)
        np.testing.assert_allclose(got, p, rtol=1e-5, atol=1e-6, err_msg=semantics)


def test_solver_updates_trainable_only() -> None:
    doc = json.loads((NETWORKS / "lenet_digits.json").read_text())
    doc["operators"][0]["frozen"] = True
    net = TorchNetwork(doc, seed=1)
    before = net.state()
    solver = torch_solver("sgd", dict(net.named_parameters()), lr=0.05)
    net.loss(net(_feed(doc, 9))).backward()
    solver.step()
    after = net.state()
    for name in net.param_names:
        changed = not np.array_equal(before[name], after[name])
        assert changed == (name in net.trainable()), name


# -- model files ----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "layout"), [
    ("mnist_mlp", {"fc1.0": (256, 64), "fc1.1": (256,), "fc2.0": (10, 256), "fc2.1": (10,)}),
    ("lenet_digits", {"conv1.0": (20, 1, 3, 3), "conv1.1": (20,), "conv2.0": (50, 20, 3, 3),
                      "conv2.1": (50,), "fc1.0": (500, 200), "fc1.1": (500,),
                      "fc2.0": (10, 500), "fc2.1": (10,)}),
])
def test_model_files(name: str, layout: dict[str, tuple[int, ...]]) -> None:
    doc = json.loads((NETWORKS / f"{name}.json").read_text())
    assert doc["outputs"] == ["prob", "loss"]
    assert doc["inputs"] == [{"shape": [64, 1, 8, 8], "name": "data"},
                             {"shape": [64], "name": "label", "dtype": "int"}]
    net = TorchNetwork(doc, seed=0)
    assert {n: s for n, (s, _) in net.param_specs.items()} == layout
    out = net(_feed(doc, 0))
    assert out["prob"].shape == (64, 10) and out["loss"].shape == (1,)
    torch.testing.assert_close(out["prob"].sum(dim=1), torch.ones(64))
    assert abs(out["loss"].item() - math.log(10)) < 1.0
