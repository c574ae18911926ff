"""Issue 30, defect 8: `frame_mlir.network.Trainer` warns, once, on the first step whose
loss is not finite (as frame-run and frame-kyn train do), naming the step."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import frame_mlir.network as fnet

DOC = {
    "inputs": [{"shape": [8, 4], "name": "data"}, {"shape": [8, 3], "name": "target"}],
    "outputs": ["loss"],
    "operators": [
        {"name": "fc", "type": "InnerProduct", "inputs": ["data"], "outputs": ["fc"],
         "options": {"outputs": 3}},
        {"name": "loss", "type": "MSELoss", "inputs": ["fc", "target"],
         "outputs": ["loss"]},
    ],
}


def feed() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"data": rng.standard_normal((8, 4)).astype(np.float32) * 1e3,
            "target": rng.standard_normal((8, 3)).astype(np.float32)}


def test_divergence_is_warned_once() -> None:
    net = fnet.load(DOC, seed=0)
    trainer = net.trainer(fnet.SGD(1e30))
    with pytest.warns(RuntimeWarning) as caught:
        losses = [float(trainer.step(feed())["loss"].reshape(-1)[0]) for _ in range(4)]
    assert not np.isfinite(losses).all()
    first = next(i for i, v in enumerate(losses) if not np.isfinite(v)) + 1
    mine = [w for w in caught if "training diverged" in str(w.message)]
    assert len(mine) == 1
    assert str(mine[0].message) == (
        f"frame_mlir.network: training diverged: the loss 'loss' first became "
        f"{losses[first - 1]:.9g} at step {first} (Trainer.t; the learning rate 1e+30 may be "
        "too large)")


def test_a_finite_run_has_no_warning() -> None:
    net = fnet.load(DOC, seed=0)
    trainer = net.trainer(fnet.SGD(1e-3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            trainer.step(feed())


def test_frame_run_reports_divergence_once_in_its_own_words(
        capsys: pytest.CaptureFixture[str]) -> None:
    """frame-run warns itself; the Trainer's Python warning (with its source line) is
    not printed beside it (`warn_divergence=False`)."""
    from frame_mlir.tools import frame_run

    net = fnet.load(DOC, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainer = net.trainer(fnet.SGD(1e30), warn_divergence=False)
        losses = [float(trainer.step(feed())["loss"].reshape(-1)[0]) for _ in range(4)]
    assert not np.isfinite(losses).all()
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net_file = Path(__file__).resolve().parents[2] / "testdata/networks/mnist_mlp.json"
        assert frame_run.main([str(net_file), "--data", "digits",
                               "--lr", "1e30", "--epochs", "1"]) == 0
    err = capsys.readouterr().err
    assert err.count("training diverged") == 1
    assert "frame-run: warning: training diverged" in err
