"""The whole training loop in one native call (`@<model>_train_loop`, frame-train-loop).

The oracle is the train step itself, called once per step from Python: the loop must
give bit-identical losses, parameters and predictions (it calls the same function on
the same buffers; the step is checked against PyTorch in tests/oracle).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.frontends.spec.initial_values import generate_initial_values
from frame_mlir.frontends.spec.spec_v0 import load_spec, parse_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session, logged_steps, train

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"


def _bits(a: np.ndarray) -> np.ndarray:
    """The float32 bit patterns (NaN-safe exact comparison)."""
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


@pytest.fixture(scope="module")
def compiled_specs() -> dict[str, CompiledSpec]:
    out = {}
    for name in ("tiny_mlp", "skip_mlp", "nobias_mlp", "nonfinal_pred"):
        out[name] = CompiledSpec(load_spec(TESTDATA / f"{name}.json"), cache=None)
    return out


@pytest.mark.parametrize("name", ["tiny_mlp", "skip_mlp", "nobias_mlp", "nonfinal_pred"])
def test_loop_is_bit_identical_to_single_steps(compiled_specs: dict[str, CompiledSpec],
                                               name: str) -> None:
    compiled = compiled_specs[name]
    values = generate_initial_values(compiled.spec)
    steps = 57
    looped, stepped = Session(compiled, values), Session(compiled, values)
    losses = looped.run(steps)
    reference = np.array([stepped.step() for _ in range(steps)], dtype=np.float32)
    assert losses.shape == (steps,) and losses.dtype == np.float32
    assert np.array_equal(_bits(losses), _bits(reference))
    assert losses[-1] != losses[0]  # it trained: the steps did not all see one state
    for pname, p in stepped.params().items():
        assert np.array_equal(_bits(looped.params()[pname]), _bits(p)), pname
    assert np.array_equal(_bits(looped.predict()), _bits(stepped.predict()))
    # `out` holds the last step's loss, as after the last single step.
    assert _bits(looped.loss) == _bits(stepped.loss)


def test_loop_continues_where_it_stopped(compiled_specs: dict[str, CompiledSpec]) -> None:
    compiled = compiled_specs["tiny_mlp"]
    values = generate_initial_values(compiled.spec)
    whole, parts = Session(compiled, values), Session(compiled, values)
    all_losses = whole.run(30)
    split = np.concatenate([parts.run(11), parts.run(0), parts.run(19)])
    assert np.array_equal(_bits(all_losses), _bits(split))
    for pname, p in whole.params().items():
        assert np.array_equal(_bits(parts.params()[pname]), _bits(p)), pname


def test_zero_steps_change_nothing(compiled_specs: dict[str, CompiledSpec]) -> None:
    compiled = compiled_specs["tiny_mlp"]
    values = generate_initial_values(compiled.spec)
    session = Session(compiled, values)
    before = session.params()
    assert session.run(0).shape == (0,)
    for pname, p in before.items():
        assert np.array_equal(session.params()[pname], p)
    with pytest.raises(ValueError, match="steps: expected a count >= 0, found -1"):
        session.run(-1)


def test_loop_signature(compiled_specs: dict[str, CompiledSpec]) -> None:
    compiled = compiled_specs["tiny_mlp"]
    sig = compiled.loop_sig
    assert sig is not None and sig.name == "tiny_mlp_train_loop"
    step_args = compiled.step_sig.args
    # The step's arguments, then the count and the losses.
    assert sig.args[:len(step_args)] == step_args
    steps, losses = sig.args[len(step_args):]
    assert (steps.kind, steps.shape, steps.dtype) == ("steps", (), np.dtype(np.int64))
    assert (losses.kind, losses.shape, losses.dtype) == ("losses", (-1,), np.dtype(np.float32))
    assert losses.dynamic and not steps.dynamic
    with pytest.raises(ValueError, match="dynamic shape"):
        _ = losses.nbytes
    assert sig.arena_size == compiled.step_sig.arena_size
    with pytest.raises(ValueError, match="is a training loop .*Session.run"):
        compiled.executable("tiny_mlp_train_loop")


def test_train_uses_the_loop_and_logs_like_steps(compiled_specs: dict[str, CompiledSpec],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compiled_specs["skip_mlp"]
    spec = compiled.spec
    seen: list[tuple[int, float]] = []
    calls = {"step": 0}
    original = Session.step

    def counting_step(self: Session) -> float:
        calls["step"] += 1
        return original(self)

    monkeypatch.setattr(Session, "step", counting_step)
    result = train(spec, compiled=compiled, on_log=lambda i, v: seen.append((i, v)))
    assert calls["step"] == 0  # one native call, no per-step round trip
    monkeypatch.undo()
    reference = Session(compiled)
    expected = [reference.step() for _ in range(spec.training.steps)]
    assert np.array_equal(_bits(result.losses), _bits(np.array(expected, np.float32)))
    log_at = logged_steps(spec.training.steps, spec.training.log_every)
    assert [i for i, _ in seen] == log_at
    assert seen == result.logged == [(i, expected[i]) for i in log_at]
    assert result.final_loss == expected[-1]
    assert result.evaluated_loss == reference.evaluate()


def test_a_diverging_run_logs_nan_like_steps() -> None:
    doc = json.loads((TESTDATA / "tiny_mlp.json").read_text())
    doc["optimizer"]["learning_rate"] = 1e6
    doc["training"]["steps"] = 20
    compiled = CompiledSpec(parse_spec(json.dumps(doc)), cache=None)
    values = generate_initial_values(compiled.spec)
    losses = Session(compiled, values).run(20)
    stepped = Session(compiled, values)
    reference = np.array([stepped.step() for _ in range(20)], dtype=np.float32)
    assert not np.all(np.isfinite(losses))
    assert np.array_equal(_bits(losses), _bits(reference))
