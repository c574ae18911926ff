"""A v0 spec's initial tensors, drawn from the project random source
(:mod:`frame_mlir.runtime.random`) in the order its docstring fixes: the data inputs,
the target, then per layer its weight and then its bias. The emitted C++ program
(`program.py`) draws the same values in the same order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frame_mlir.frontends.spec.spec import InlineInit, ModelSpec, TensorInit, UniformInit, numel
from frame_mlir.runtime.random import MT19937, uniform_float32

__all__ = ["InitialValues", "generate_initial_values"]


@dataclass
class InitialValues:
    """All initial tensors of a spec run, float32, shaped.

    ``params`` is in graph order ``[(fc1.weight, W1), (fc1.bias, b1), (fc2.weight, W2), ...]``.
    """

    inputs: dict[str, np.ndarray]
    target: np.ndarray
    params: list[tuple[str, np.ndarray]]

    def param_dict(self) -> dict[str, np.ndarray]:
        """``params`` as a name -> array mapping."""
        return dict(self.params)


def _tensor(engine: MT19937, init: TensorInit, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(init, InlineInit):
        return np.asarray(init.values, dtype=np.float32).reshape(shape)
    assert isinstance(init, UniformInit)
    return uniform_float32(engine, numel(shape), init.lo, init.hi).reshape(shape)


def generate_initial_values(spec: ModelSpec) -> InitialValues:
    """Draw every initial tensor of ``spec`` from one ``MT19937(spec.training.seed)``.

    Order: data inputs, target, then per layer weight then bias; the same order the emitted
    C++ uses, so both produce identical trajectories.
    """
    engine = MT19937(spec.training.seed)
    inputs = {
        inp.name: _tensor(engine, spec.data.inputs[inp.name], inp.shape) for inp in spec.inputs
    }
    target = _tensor(engine, spec.data.target, spec.loss.target_shape)
    w_lo, w_hi = spec.data.weight_range
    b_lo, b_hi = spec.data.bias_range
    params: list[tuple[str, np.ndarray]] = []
    for layer in spec.layers:
        params.append(
            (layer.weight_name, _tensor(engine, UniformInit(w_lo, w_hi), layer.weight_shape))
        )
        if layer.bias_shape is not None:
            params.append(
                (layer.bias_name, _tensor(engine, UniformInit(b_lo, b_hi), layer.bias_shape))
            )
    return InitialValues(inputs=inputs, target=target, params=params)
