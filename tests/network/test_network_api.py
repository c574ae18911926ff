"""The Python API of the JSON network frontend (frame_mlir.network) against the PyTorch
interpreter of the format (tests/network/torch_network.py, the independent oracle):

* forward (test mode) and gradients of testdata/networks/lenet_digits.json;
* the same for a small network exercising BatchNorm (training mode, and test mode with
  running statistics), Concat, Slice, Elementwise broadcasting, Reshape / Flatten /
  Squeeze, TransposedConvolution2D, GlobalPooling, InnerProduct on a rank-4 input, a
  Parameter, in-place operators, a frozen operator, shared parameters and two weighted
  losses;
* trainer steps (SGD with momentum and weight decay in both conventions, Adam with
  weight decay) over 5 steps against `torch_solver`, BatchNorm running statistics
  included; a learning rate changed between steps takes effect without recompiling;
* feed and set_parameters errors; weight files round trip and mismatches.

Tolerance: the oracle runs in float64 (a TorchNetwork converted with `.double()`, fed
float64), our compiled code in float32, so the difference is our float32 rounding
alone. Every reduction here has at most a few thousand terms; float32's unit roundoff
is 6e-8, so errors stay below ~1e-5 of a tensor's largest magnitude. We allow
`REL = 1e-4` of the reference tensor's max |value| plus `ABS = 1e-6` (for tensors whose
exact value is ~0, e.g. gradients cancelling through a BatchNorm). Trainer comparisons
over 5 steps use the same bound: the networks are small and the steps stable, so the
rounding does not grow beyond it (measured: < 1e-5 relative).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the network oracle needs torch (extra 'test')")

from torch_network import TorchNetwork, torch_solver  # noqa: E402

import frame_mlir.network as fnet  # noqa: E402
from frame_mlir.frontends.network.weights import WeightsError, save_weights  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LENET = ROOT / "testdata" / "networks" / "lenet_digits.json"

REL = 1e-4
ABS = 1e-6


def assert_close(ours: np.ndarray, ref: Any, what: str) -> None:
    r = ref.detach().cpu().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    a = np.asarray(ours, dtype=np.float64)
    assert a.shape == r.shape, f"{what}: shape {a.shape}, reference {r.shape}"
    bound = REL * float(np.max(np.abs(r), initial=0.0)) + ABS
    err = float(np.max(np.abs(a - r), initial=0.0))
    assert err <= bound, f"{what}: max |ours - torch| {err:.3g} > {bound:.3g}"


def oracle(doc: Mapping[str, Any], params: Mapping[str, np.ndarray]) -> TorchNetwork:
    """The oracle in float64 (its forward feeds float inputs in the parameters' dtype)."""
    return TorchNetwork(copy.deepcopy(doc), params).double()


# --------------------------------------------------------------------------- LeNet


@pytest.fixture(scope="module")
def lenet() -> tuple[fnet.Network, dict[str, Any], dict[str, np.ndarray]]:
    net = fnet.load(LENET, seed=5)
    rng = np.random.default_rng(0)
    feed = {"data": rng.uniform(0, 1, (64, 1, 8, 8)).astype(np.float32),
            "label": rng.integers(0, 10, 64).astype(np.int32)}
    return net, json.loads(LENET.read_text()), feed


def test_lenet_forward_test_mode(lenet: Any) -> None:
    net, doc, feed = lenet
    outs = net.forward(feed)
    assert set(outs) == {"prob", "loss"}
    ref = oracle(doc, net.parameters()).forward(feed, test_mode=True)
    for name in ("prob", "loss"):
        assert_close(outs[name], ref[name], name)


def test_lenet_gradients(lenet: Any) -> None:
    net, doc, feed = lenet
    before = net.parameters()
    outs, grads = net.gradients(feed)
    tn = oracle(doc, before)
    env = tn.forward(feed)
    tn.loss(env).backward()
    assert_close(outs["loss"], env["loss"], "loss")
    assert list(grads) == list(tn.trainable()) == list(before)
    for name, g in grads.items():
        assert_close(g, tn.param(name).grad, f"d loss / d {name}")
    # gradients() updates nothing
    for name, v in net.parameters().items():
        np.testing.assert_array_equal(v, before[name])


# --------------------------------------------------------------------------- the small network

B = 4
SMALL: dict[str, Any] = {
    "inputs": [{"name": "data", "shape": [B, 2, 4, 4]},
               {"name": "label", "shape": [B], "dtype": "int"},
               {"name": "target", "shape": [B, 3]}],
    "outputs": ["prob", "loss", {"name": "mse", "loss_weight": 0.5}],
    "operators": [
        {"name": "conv1", "type": "Convolution2D", "inputs": ["data"], "outputs": ["c1"],
         "options": {"channels_out": 4, "kernel": 3, "pad": 1, "bias": False}},
        {"name": "bn1", "type": "BatchNorm", "inputs": ["c1"], "outputs": ["c1"]},
        {"name": "relu1", "type": "Activation", "inputs": ["c1"], "outputs": ["c1"],
         "options": {"activation": "relu"}},
        # [B, 4, 4, 4] -> [B, 3, 8, 8]
        {"name": "up", "type": "TransposedConvolution2D", "inputs": ["c1"],
         "outputs": ["up"], "options": {"channels_out": 3, "kernel": 3, "stride": 2,
                                        "pad": 1, "output_pad": 1}},
        {"name": "pool", "type": "Pooling2D", "inputs": ["up"], "outputs": ["pool"],
         "options": {"kernel": 2, "stride": 2, "mode": "avg"}},
        {"name": "sl", "type": "Slice", "inputs": ["c1"], "outputs": ["sl"],
         "options": {"dim": 1, "begin": 1, "end": 3}},
        {"name": "cat", "type": "Concat", "inputs": ["pool", "sl"], "outputs": ["cat"]},
        {"name": "gp", "type": "GlobalPooling", "inputs": ["cat"], "outputs": ["gp"],
         "options": {"mode": "avg"}},
        # broadcasting: [B, 5, 4, 4] * [B, 5, 1, 1], then + [1, 5, 1, 1]
        {"name": "gate", "type": "Elementwise", "inputs": ["cat", "gp"],
         "outputs": ["gated"], "options": {"operation": "prod", "coef2": 2.0}},
        {"name": "scale", "type": "Parameter", "inputs": [], "outputs": ["scale"],
         "options": {"shape": [1, 5, 1, 1]}},
        {"name": "shift", "type": "Elementwise", "inputs": ["gated", "scale"],
         "outputs": ["gated"], "options": {"activation": "tanh"}},
        {"name": "fc_big", "type": "InnerProduct", "inputs": ["gated"], "outputs": ["h1"],
         "options": {"outputs": 6, "bias": False}},
        {"name": "bn2", "type": "BatchNorm", "inputs": ["h1"], "outputs": ["h1n"],
         "options": {"momentum": 0.2}},
        {"name": "sq", "type": "Squeeze", "inputs": ["gp"], "outputs": ["sq"]},
        {"name": "frozen_fc", "type": "InnerProduct", "inputs": ["sq"], "outputs": ["h2"],
         "options": {"outputs": 6}, "frozen": True},
        {"name": "flat", "type": "Flatten", "inputs": ["sl"], "outputs": ["flat"]},
        {"name": "rs", "type": "Reshape", "inputs": ["flat"], "outputs": ["rs"],
         "options": {"dims": [0, 2, -1]}},
        {"name": "rs2", "type": "Reshape", "inputs": ["rs"], "outputs": ["rs2"],
         "options": {"dims": [0, -1]}},
        {"name": "fa", "type": "InnerProduct", "inputs": ["rs2"], "outputs": ["fa"],
         "options": {"outputs": 6}, "params": ["shared.w", "shared.b"]},
        {"name": "fb", "type": "InnerProduct", "inputs": ["flat"], "outputs": ["fb"],
         "options": {"outputs": 6, "activation": "sigmoid"},
         "params": ["shared.w", "shared.b"]},
        {"name": "s1", "type": "Elementwise", "inputs": ["h1n", "h2"], "outputs": ["s1"]},
        {"name": "s2", "type": "Elementwise", "inputs": ["fa", "fb"], "outputs": ["s2"],
         "options": {"operation": "max"}},
        {"name": "logits", "type": "Elementwise", "inputs": ["s1", "s2"],
         "outputs": ["logits"], "options": {"coef1": 0.5, "coef2": -1.5}},
        {"name": "prob", "type": "Softmax", "inputs": ["logits"], "outputs": ["prob"]},
        {"name": "loss", "type": "SoftmaxWithLoss", "inputs": ["logits", "label"],
         "outputs": ["loss"]},
        {"name": "head", "type": "Slice", "inputs": ["logits"], "outputs": ["head"],
         "options": {"dim": 1, "end": 3}},
        {"name": "mse", "type": "MSELoss", "inputs": ["head", "target"],
         "outputs": ["mse"]},
    ],
}
TRAINABLE = ["conv1.0", "bn1.2", "bn1.3", "up.0", "up.1", "scale.0", "fc_big.0", "bn2.2",
             "bn2.3", "shared.w", "shared.b"]
FROZEN = ["frozen_fc.0", "frozen_fc.1"]
STATS = ["bn1.0", "bn1.1", "bn2.0", "bn2.1"]


def small_feed(k: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(100 + k)
    return {"data": rng.standard_normal((B, 2, 4, 4)).astype(np.float32),
            "label": rng.integers(0, 6, B).astype(np.int32),
            "target": rng.standard_normal((B, 3)).astype(np.float32)}


@pytest.fixture(scope="module")
def small() -> tuple[fnet.Network, dict[str, np.ndarray]]:
    """The network and its initial parameters: the seeded defaults, with random values
    where the defaults are trivial (Parameter zeros, BatchNorm's 1 / 0)."""
    net = fnet.load(SMALL, seed=3)
    rng = np.random.default_rng(7)
    p0 = net.parameters()
    p0["scale.0"] = rng.standard_normal((1, 5, 1, 1)).astype(np.float32)
    for bn in ("bn1", "bn2"):
        n = p0[f"{bn}.2"].shape
        p0[f"{bn}.2"] = rng.uniform(0.5, 1.5, n).astype(np.float32)
        p0[f"{bn}.3"] = rng.standard_normal(n).astype(np.float32)
    return net, p0


def reset(net: fnet.Network, p0: Mapping[str, np.ndarray]) -> None:
    net.set_parameters(p0)


def test_small_parameters(small: Any) -> None:
    net, p0 = small
    assert list(p0) == ["conv1.0", "bn1.0", "bn1.1", "bn1.2", "bn1.3", "up.0", "up.1",
                        "scale.0", "fc_big.0", "bn2.0", "bn2.1", "bn2.2", "bn2.3",
                        "frozen_fc.0", "frozen_fc.1", "shared.w", "shared.b"]
    assert net.trainable == TRAINABLE
    assert p0["fc_big.0"].shape == (6, 80)  # rank-4 input [4, 5, 4, 4] flattened
    assert p0["shared.w"].shape == (6, 32)
    assert p0["up.0"].shape == (4, 3, 3, 3)  # transposed: [C_in, C_out, kh, kw]
    tn = oracle(SMALL, p0)
    assert list(tn.trainable()) == TRAINABLE
    assert {n: s for n, (s, _) in tn.param_specs.items()} == \
        {n: v.shape for n, v in p0.items()}


def test_small_gradients_train_mode(small: Any) -> None:
    net, p0 = small
    reset(net, p0)
    feed = small_feed(0)
    outs, grads = net.gradients(feed)
    tn = oracle(SMALL, p0)
    env = tn.forward(feed)
    tn.loss(env).backward()
    for name in ("prob", "loss", "mse"):
        assert_close(outs[name], env[name], name)
    assert list(grads) == TRAINABLE  # frozen: no gradient returned
    for name, g in grads.items():
        assert_close(g, tn.param(name).grad, f"d loss / d {name}")
    # gradients() leaves the running statistics alone
    for name in STATS:
        np.testing.assert_array_equal(net.parameters()[name], p0[name])
    # ... unless asked to, then they are torch's
    net.gradients(feed, update_statistics=True)
    for name in STATS:
        assert_close(net.parameters()[name], tn.param(name), name)
        assert not np.array_equal(net.parameters()[name], p0[name])


def test_small_forward_train_mode_updates_statistics(small: Any) -> None:
    net, p0 = small
    reset(net, p0)
    feed = small_feed(1)
    outs = net.forward(feed, test_mode=False)
    tn = oracle(SMALL, p0)
    env = tn.forward(feed)
    for name in ("prob", "loss", "mse"):
        assert_close(outs[name], env[name], name)
    for name in STATS:
        assert_close(net.parameters()[name], tn.param(name), name)


def test_small_forward_test_mode_running_statistics(small: Any) -> None:
    net, p0 = small
    rng = np.random.default_rng(11)
    p = dict(p0)
    for bn in ("bn1", "bn2"):
        n = p[f"{bn}.0"].shape
        p[f"{bn}.0"] = rng.standard_normal(n).astype(np.float32)
        p[f"{bn}.1"] = rng.uniform(0.2, 3.0, n).astype(np.float32)
    reset(net, p)
    feed = small_feed(2)
    outs = net.forward(feed)
    ref = oracle(SMALL, p).forward(feed, test_mode=True)
    for name in ("prob", "loss", "mse"):
        assert_close(outs[name], ref[name], name)
    # test mode updates nothing
    for name, v in net.parameters().items():
        np.testing.assert_array_equal(v, p[name])


# --------------------------------------------------------------------------- trainers


def _train_and_compare(trainer: fnet.Trainer, p0: Mapping[str, np.ndarray],
                       ref_solver: Any, tn: TorchNetwork, lrs: list[float] | None = None
                       ) -> None:
    """5 steps of `trainer` and of `ref_solver` on the oracle `tn`, compared: each
    step's outputs (before its update), then every parameter and running statistic."""
    net = trainer.network
    for k in range(5):
        feed = small_feed(10 + k)
        if lrs is not None:
            trainer.solver.lr = lrs[k]
            ref_solver.lr = lrs[k]
        outs = trainer.step(feed)
        ref_solver.zero_grad()
        env = tn.forward(feed)
        tn.loss(env).backward()
        ref_solver.step()
        for name in ("loss", "mse"):
            assert_close(outs[name], env[name], f"step {k + 1}: {name}")
    state = tn.state()
    after = net.parameters()
    for name in after:
        assert_close(after[name], state[name], f"after 5 steps: {name}")
    for name in FROZEN:  # frozen: unchanged
        np.testing.assert_array_equal(after[name], p0[name])
    for name in TRAINABLE + STATS:
        assert not np.array_equal(after[name], p0[name]), name


def test_sgd_dlprim_momentum_weight_decay_and_lr_changes(small: Any,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    net, p0 = small
    reset(net, p0)
    net.compile()  # before the trainer, so the steps below compile nothing
    solver = fnet.SGD(0.1, momentum=0.9, weight_decay=1e-2)
    tn = oracle(SMALL, p0)
    ref = torch_solver("sgd", tn.trainable(), lr=0.1, momentum=0.9, weight_decay=1e-2,
                       semantics="dlprim")
    compiled = dict(net._compiled)
    trainer = net.trainer(solver)
    update, ex = trainer._update, trainer._ex

    import frame_mlir.runtime.executable as executable

    def no_compile(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a step recompiled")

    monkeypatch.setattr(executable, "compile_module", no_compile)
    _train_and_compare(trainer, p0, ref, tn, lrs=[0.1, 0.0, 0.05, 0.2, 0.1])
    assert trainer._update is update and trainer._ex is ex
    assert net._compiled == compiled
    assert all(net._compiled[k] is compiled[k] for k in compiled)


def test_sgd_lr_zero_keeps_parameters(small: Any) -> None:
    net, p0 = small
    reset(net, p0)
    trainer = net.trainer(fnet.SGD(0.0, momentum=0.9))
    trainer.step(small_feed(3))
    after = net.parameters()
    for name in TRAINABLE:
        np.testing.assert_array_equal(after[name], p0[name])
    trainer.solver.lr = 0.1
    trainer.step(small_feed(3))
    assert not np.array_equal(net.parameters()["conv1.0"], p0["conv1.0"])


def test_sgd_torch_semantics(small: Any) -> None:
    net, p0 = small
    reset(net, p0)
    tn = oracle(SMALL, p0)
    ref = torch_solver("sgd", tn.trainable(), lr=0.05, momentum=0.8, weight_decay=1e-2,
                       semantics="torch")
    _train_and_compare(net.trainer(fnet.SGD(0.05, 0.8, 1e-2, semantics="torch")), p0, ref,
                       tn)


def test_sgd_semantics_differ_with_weight_decay(small: Any) -> None:
    """The two conventions are really different (lr 0.5: dlprim decays p by 1 - wd,
    torch by 1 - lr * wd)."""
    net, p0 = small
    finals = []
    for semantics in ("dlprim", "torch"):
        reset(net, p0)
        net.trainer(fnet.SGD(0.5, 0.0, 0.1, semantics=semantics)).step(small_feed(4))
        finals.append(net.parameters()["shared.w"])
    assert np.max(np.abs(finals[0] - finals[1])) > 1e-3


def test_adam_weight_decay(small: Any) -> None:
    net, p0 = small
    reset(net, p0)
    tn = oracle(SMALL, p0)
    ref = torch_solver("adam", tn.trainable(), lr=1e-2, weight_decay=1e-2,
                       semantics="dlprim")
    _train_and_compare(net.trainer(fnet.Adam(1e-2, weight_decay=1e-2)), p0, ref, tn)


def test_trainer_rejects_bad_solvers(small: Any) -> None:
    net, _ = small
    with pytest.raises(TypeError, match="expected frame_mlir.network.SGD or Adam"):
        net.trainer("sgd")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="SGD lr: expected >= 0, found -1"):
        net.trainer(fnet.SGD(-1.0))
    with pytest.raises(ValueError, match="SGD semantics"):
        net.trainer(fnet.SGD(0.1, semantics="keras"))
    with pytest.raises(ValueError, match="Adam beta1: expected < 1, found 1"):
        net.trainer(fnet.Adam(0.1, beta1=1.0))
    # issue 30: the hyperparameters are float32 in the update, as the CLI's --lr
    with pytest.raises(ValueError, match=r"SGD lr: expected a number finite in float32 "
                       r"\(magnitude at most 3.4028234663852886e\+38\), found 1e\+40"):
        net.trainer(fnet.SGD(1e40))
    with pytest.raises(ValueError, match=r"Adam eps: expected > 0 in float32 \(at least "
                       r"1.4e-45\), found 1e-50, which rounds to 0"):
        net.trainer(fnet.Adam(0.1, eps=1e-50))
    with pytest.raises(ValueError, match="SGD weight_decay: expected a number finite in"):
        net.trainer(fnet.SGD(0.1, weight_decay=3.5e38))
    net.trainer(fnet.SGD(3.4e38, momentum=3.4e38))


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("change", "needles"), [
    (lambda f: f.pop("label"), ["input 'label' is missing", "[4]", "int"]),
    (lambda f: f.update(extra=np.zeros(3)), ["unknown input(s) 'extra'",
                                             "data, label, target"]),
    (lambda f: f.update(data=np.zeros((4, 2, 4, 5), np.float32)),
     ["input 'data'", "expected shape [4, 2, 4, 4]", "found [4, 2, 4, 5]"]),
    (lambda f: f.update(label=np.zeros(4, np.float32)),
     ["input 'label'", "expected an integer array", "found dtype float32"]),
    (lambda f: f.update(target=np.array([["a"] * 3] * 4)),
     ["input 'target'", "expected a float array", "found dtype <U1"]),
    # checked before the compiled code runs: its kernels would match no class
    (lambda f: f.update(label=np.array([0, 1, 6, 2], np.int32)),
     ["input 'label'", "label 6 of row 2 is out of range", "expected 0 <= label < 6"]),
    (lambda f: f.update(label=np.array([0, -1, 3, 2], np.int32)),
     ["input 'label'", "label -1 of row 1 is out of range"]),
])
def test_feed_errors(small: Any, change: Any, needles: list[str]) -> None:
    net, _ = small
    feed = small_feed(0)
    change(feed)
    for call in (lambda: net.forward(feed), lambda: net.gradients(feed)):
        with pytest.raises(ValueError) as info:
            call()
        for needle in needles:
            assert needle in str(info.value)
    with pytest.raises(ValueError, match="expected a dict"):
        net.forward([1, 2])  # type: ignore[arg-type]


def test_set_parameters_errors_change_nothing(small: Any) -> None:
    net, p0 = small
    reset(net, p0)
    with pytest.raises(ValueError) as info:
        net.set_parameters({"conv1.0": np.zeros((4, 2, 3, 3)),
                            "nope.0": np.zeros(3),
                            "up.1": np.zeros(4),
                            "scale.0": np.full((1, 5, 1, 1), "x")})
    msg = str(info.value)
    assert "unknown parameter 'nope.0'" in msg
    assert "parameter 'up.1': shape expected [3], found [4]" in msg
    assert "parameter 'scale.0': expected numbers, found dtype <U1" in msg
    np.testing.assert_array_equal(net.parameters()["conv1.0"], p0["conv1.0"])
    net.set_parameters({"conv1.0": np.zeros((4, 2, 3, 3))})
    assert not net.parameters()["conv1.0"].any()
    reset(net, p0)


def test_no_loss_network_has_no_gradients() -> None:
    doc = {"inputs": [{"name": "x", "shape": [2, 3]}], "outputs": ["y"],
           "operators": [{"name": "a", "type": "Abs", "inputs": ["x"], "outputs": ["y"]}]}
    net = fnet.load(doc)
    with pytest.raises(ValueError, match="no loss output"):
        net.gradients({"x": np.zeros((2, 3), np.float32)})
    with pytest.raises(ValueError, match="no trainable parameter"):
        net.trainer(fnet.SGD(0.1))


# --------------------------------------------------------------------------- weight files


@pytest.mark.parametrize("suffix", [".dlp", ".h5", ".npz"])
def test_weights_round_trip(small: Any, tmp_path: Path, suffix: str) -> None:
    net, p0 = small
    reset(net, p0)
    path = tmp_path / f"w{suffix}"
    net.save_weights(path)
    net.set_parameters({n: np.zeros_like(v) for n, v in p0.items()})
    net.load_weights(path)
    after = net.parameters()
    assert list(after) == list(p0)
    for name, v in p0.items():
        np.testing.assert_array_equal(after[name], v)


def test_weights_mismatch_names_each_problem(small: Any, tmp_path: Path) -> None:
    net, p0 = small
    reset(net, p0)
    bad = dict(p0)
    del bad["bn2.1"]                                 # missing
    bad["up.1"] = np.zeros(4, np.float32)            # wrong shape
    bad["fc9.0"] = np.zeros((2, 2), np.float32)      # not in the network
    path = tmp_path / "bad.npz"
    save_weights(path, bad)
    with pytest.raises(WeightsError) as info:
        net.load_weights(path)
    msg = str(info.value)
    assert str(path) in msg
    assert "bn2.1: missing from the file (expected shape [6])" in msg
    assert "up.1: shape expected [3], found [4]" in msg
    assert "unexpected tensor 'fc9.0' in file" in msg
    assert len(info.value.problems) == 3
    for name, v in net.parameters().items():  # nothing loaded
        np.testing.assert_array_equal(v, p0[name])
