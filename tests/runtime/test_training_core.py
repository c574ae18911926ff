"""The training core the frontends' loops share (frame_mlir/runtime/training.py).

The loops themselves are pinned end to end by their own tests (printed lines, resumed
runs equal to uninterrupted ones, data-parallel jobs); these check the core's pieces
on their own: the optimizer state's argument order and checkpoint form, the one-time
divergence report, the cut of a run at its checkpoints.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frame_mlir.runtime.checkpoint import Checkpoint, CheckpointError
from frame_mlir.runtime.training import (
    DivergenceWatch,
    OptimizerState,
    checkpoint_chunks,
    read_checkpoint,
)


def _state() -> OptimizerState:
    return OptimizerState(("exp_avg", "exp_avg_sq"), {"w": (2, 3), "b": (3,)}, n_hyper=2)


def test_update_args_follow_the_library_order() -> None:
    st = _state()
    params = {"w": np.ones((2, 3), np.float32), "b": np.ones(3, np.float32)}
    grads = [np.zeros((2, 3), np.float32), np.zeros(3, np.float32)]
    extra = [np.zeros(4, np.float32)]
    args = st.update_args(params, grads, extra)
    expected = [params["w"], params["b"], *grads, st.buffers["exp_avg"]["w"],
                st.buffers["exp_avg"]["b"], st.buffers["exp_avg_sq"]["w"],
                st.buffers["exp_avg_sq"]["b"], *extra, *st.hyper]
    assert len(args) == len(expected)
    assert all(a is e for a, e in zip(args, expected, strict=True))  # buffers, not copies
    st.set_hyper([0.5, 2.0])
    assert [float(h) for h in st.hyper] == [0.5, 2.0]
    with pytest.raises(ValueError):
        st.set_hyper([1.0])


def test_state_round_trips_through_its_checkpoint_form() -> None:
    st = _state()
    st.buffers["exp_avg"]["w"][...] = 3.0
    arrays = st.arrays()
    assert sorted(arrays) == ["exp_avg/b", "exp_avg/w", "exp_avg_sq/b", "exp_avg_sq/w"]
    arrays["exp_avg/w"][...] = 7.0  # a copy: the state does not change
    assert float(st.buffers["exp_avg"]["w"][0, 0]) == 3.0
    other = _state()
    buffer = other.buffers["exp_avg"]["w"]
    other.check("ck.npz", arrays)
    other.load({k: v.astype(np.float64) for k, v in arrays.items()})
    assert other.buffers["exp_avg"]["w"] is buffer  # loaded in place
    assert buffer.dtype == np.float32 and float(buffer[0, 0]) == 7.0


def test_a_state_of_other_shapes_is_ckpt_001() -> None:
    arrays = _state().arrays()
    arrays["exp_avg/w"] = np.zeros((3, 2), np.float32)
    with pytest.raises(CheckpointError) as info:
        _state().check("ck.npz", arrays)
    assert str(info.value).startswith("CKPT-001")
    del arrays["exp_avg/w"]
    with pytest.raises(CheckpointError):
        _state().check("ck.npz", arrays)


def test_divergence_is_reported_once() -> None:
    said: list[str] = []
    watch = DivergenceWatch(said.append)
    assert not watch.check(1.5, lambda v: "never")
    assert watch.check(float("nan"), lambda v: f"first {v:.9g}")
    assert watch.check(float("inf"), lambda v: f"second {v:.9g}")
    assert watch.check_all(np.array([1.0, np.inf]), lambda i, v: f"third {i} {v}")
    assert said == ["first nan"] and watch.seen
    quiet = DivergenceWatch()
    assert quiet.check_all(np.array([[0.0, 1.0], [np.nan, 2.0]]), lambda i, v: "x")
    assert quiet.seen


def test_the_first_non_finite_element_is_named() -> None:
    said: list[str] = []
    DivergenceWatch(said.append).check_all(np.array([0.0, -np.inf, np.nan]),
                                           lambda i, v: f"{i} {v}")
    assert said == ["1 -inf"]


@pytest.mark.parametrize("first,total,every,pieces", [
    (0, 10, None, [(0, 10)]),
    (0, 10, 4, [(0, 4), (4, 4), (8, 2)]),
    (5, 10, 4, [(5, 3), (8, 2)]),       # a resumed run meets the same boundaries
    (8, 8, 4, []),
    (0, 3, 5, [(0, 3)]),
])
def test_checkpoint_chunks(first: int, total: int, every: int | None,
                           pieces: list[tuple[int, int]]) -> None:
    assert list(checkpoint_chunks(first, total, every)) == pieces


def test_read_checkpoint(tmp_path: Path) -> None:
    path = str(tmp_path / "run.ckpt.npz")
    Checkpoint("m", "run-1", 3, {"w": np.ones(2, np.float32)},
               history={"losses": [1.0, 0.5, 0.25]}).save(path)
    ck = read_checkpoint(path, "m", "run-1")
    assert ck.step == 3 and ck.history["losses"] == [1.0, 0.5, 0.25]
    with pytest.raises(CheckpointError):
        read_checkpoint(path, "m", "another run")
