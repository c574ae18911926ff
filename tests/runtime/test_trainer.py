"""The trainer: logging schedule, predictions of the trained model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from frame_mlir.frontends.spec.initial_values import generate_initial_values
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.frontends.spec.trainer import logged_steps, train

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"


def test_logged_steps() -> None:
    assert logged_steps(300, 50) == [0, 50, 100, 150, 200, 250, 299]
    assert logged_steps(100, 20) == [0, 20, 40, 60, 80, 99]
    assert logged_steps(5, 0) == [4]
    assert logged_steps(1, 50) == [0]


def test_predictions_are_the_trained_forward() -> None:
    spec = load_spec(TESTDATA / "skip_mlp.json")
    result = train(spec)
    # numpy recomputes the prediction layer from the trained parameters (a test reference).
    x = generate_initial_values(spec).inputs[spec.input.name]
    values = {spec.input.name: x.astype(np.float64)}
    for layer in spec.layers:
        y = values[layer.input] @ result.params[layer.weight_name]
        if layer.has_bias:
            y = y + result.params[layer.bias_name]
        values[layer.name] = np.maximum(y, 0) if layer.activation == "relu" else y
    expected = values[spec.loss.prediction]
    assert result.predictions.shape == expected.shape
    np.testing.assert_allclose(result.predictions, expected, rtol=1e-5, atol=1e-6)
    target = generate_initial_values(spec).target
    np.testing.assert_allclose(result.evaluated_loss, np.mean((expected - target) ** 2),
                               rtol=1e-4)
