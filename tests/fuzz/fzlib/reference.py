"""A float64 numpy reference of a schema-v0 model's training run.

The v0 model is small enough to restate: linear layers `x @ W (+ b)` with an optional
relu, any earlier value as a layer's input, the mean squared error of one layer
against the target, and plain SGD `p -= lr * g` after each step's loss. The reference
starts from the same float32 initial values as the compiled run (the project's seeded
random source) and computes everything in float64, so it stays finite on runs where
only float32 would overflow; the fuzz property asks the compiled float32 run to be
finite only when every value the reference saw is well inside float32's range.
"""

from __future__ import annotations

from typing import Any

import numpy as np

F32_SAFE = 1e30
"""Largest magnitude (of any activation, gradient or parameter of the reference) at
which a float32 run is still expected to be finite: far below float32's 3.4e38, so
rounding differences between the two runs cannot cross the overflow threshold."""


def reference_losses(spec: Any) -> dict[str, Any]:
    """Losses of `spec.training.steps` steps in float64, and the largest magnitude seen.

    Returns `{"losses": [...], "max_abs": float, "finite": bool}`; `losses` stops at the
    first non-finite value.
    """
    from frame_mlir.frontends.spec.initial_values import generate_initial_values

    init = generate_initial_values(spec)
    params = {name: v.astype(np.float64) for name, v in init.params}
    inputs = {k: v.astype(np.float64) for k, v in init.inputs.items()}
    target = init.target.astype(np.float64)
    lr = float(np.float32(spec.optimizer.learning_rate))  # the compiled step's constant
    losses: list[float] = []
    max_abs = 0.0

    def track(*arrays: np.ndarray) -> None:
        nonlocal max_abs
        for a in arrays:
            if a.size:
                max_abs = max(max_abs, float(np.max(np.abs(a))))

    track(target, *inputs.values(), *params.values())
    with np.errstate(all="ignore"):
        for _ in range(spec.training.steps):
            values: dict[str, np.ndarray] = dict(inputs)
            pre: dict[str, np.ndarray] = {}
            for layer in spec.layers:
                h = values[layer.input] @ params[layer.weight_name]
                if layer.has_bias:
                    h = h + params[layer.bias_name]
                pre[layer.name] = h
                values[layer.name] = np.maximum(h, 0.0) if layer.activation == "relu" else h
            pred = values[spec.loss.prediction]
            diff = pred - target
            loss = float(np.mean(diff * diff))
            # The squared residuals and their sum are float32 intermediates of the
            # compiled mse too: a target of 9e18 makes them overflow (sum 1.6e39) while
            # the mean (3e37) would still fit.
            sq = diff * diff
            track(pred, *pre.values(), sq, np.asarray(np.sum(sq)))
            if not np.isfinite(loss) or not np.isfinite(max_abs):
                losses.append(loss)
                return {"losses": losses, "max_abs": float("inf"), "finite": False}
            losses.append(loss)
            grads: dict[str, np.ndarray] = {spec.loss.prediction: 2.0 * diff / diff.size}
            for layer in reversed(spec.layers):
                g = grads.pop(layer.name, None)
                if g is None:  # does not reach the prediction: zero gradient
                    continue
                if layer.activation == "relu":
                    g = g * (pre[layer.name] > 0)
                gw = values[layer.input].T @ g
                gin = g @ params[layer.weight_name].T
                track(g, gw, gin)
                params[layer.weight_name] = params[layer.weight_name] - lr * gw
                if layer.has_bias:
                    params[layer.bias_name] = params[layer.bias_name] - lr * g
                if layer.input in grads:
                    grads[layer.input] = grads[layer.input] + gin
                else:
                    grads[layer.input] = gin
            track(*params.values())
    return {"losses": losses, "max_abs": max_abs, "finite": bool(np.isfinite(max_abs))}
