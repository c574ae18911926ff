"""frame_mlir.frontends.network.data: --data sources (.npz files, scikit-learn's digits) and the
epoch batches fed to a JSON-format network."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.frontends.network.data import (
    DataError,
    DataSource,
    InputDecl,
    Split,
    batches,
    load_source,
)
from frame_mlir.runtime.shuffle import epoch_order

MNIST_LIKE = [InputDecl("data", (4, 1, 8, 8), "float"), InputDecl("label", (4,), "int")]


def _npz(tmp_path: Path, name: str = "d.npz", **arrays: np.ndarray) -> str:
    path = tmp_path / name
    np.savez(path, **arrays)
    return str(path)


def _good(n: int = 10) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"data": rng.random((n, 1, 8, 8)), "label": rng.integers(0, 10, n)}


def _error(source: str, inputs: list[InputDecl] = MNIST_LIKE, **kw: object) -> str:
    with pytest.raises(DataError) as e:
        load_source(source, inputs, **kw)
    assert str(e.value).startswith(f"--data {source}: ")
    return str(e.value)


# --------------------------------------------------------------------------- InputDecl


def test_input_decl_normalizes_shape_and_checks_dtype() -> None:
    d = InputDecl("x", [2, 3], "float")  # type: ignore[arg-type]
    assert d.shape == (2, 3) and d.sample_shape == (3,)
    with pytest.raises(ValueError, match="dtype must be 'float' or 'int'"):
        InputDecl("x", (2,), "half")


# --------------------------------------------------------------------------- npz


def test_npz_happy_path_converts_dtypes(tmp_path: Path) -> None:
    arrays = _good(10)
    path = _npz(tmp_path, **arrays)
    src = load_source(path, MNIST_LIKE)
    assert isinstance(src, DataSource)
    assert src.name == path and src.held_out is None
    assert src.train.samples == 10
    data, label = src.train.arrays["data"], src.train.arrays["label"]
    assert data.dtype == np.float32 and data.shape == (10, 1, 8, 8)
    assert label.dtype == np.int32 and label.shape == (10,)
    np.testing.assert_array_equal(data, arrays["data"].astype(np.float32))
    np.testing.assert_array_equal(label, arrays["label"])


def test_npz_integers_for_float_input_and_integral_floats_for_int_input(tmp_path: Path) -> None:
    path = _npz(tmp_path, data=np.arange(4 * 64, dtype=np.uint8).reshape(4, 1, 8, 8),
                label=np.array([0.0, 3.0, -2.0, 9.0]))
    src = load_source(path, MNIST_LIKE)
    assert src.train.arrays["data"].dtype == np.float32
    assert src.train.arrays["data"][3, 0, 7, 7] == 255.0
    assert src.train.arrays["label"].dtype == np.int32
    assert src.train.arrays["label"].tolist() == [0, 3, -2, 9]


def test_npz_held_out_arrays(tmp_path: Path) -> None:
    test = _good(6)
    path = _npz(tmp_path, **_good(10), data_test=test["data"], label_test=test["label"])
    src = load_source(path, MNIST_LIKE)
    assert src.train.samples == 10
    assert src.held_out is not None and src.held_out.samples == 6
    assert set(src.held_out.arrays) == {"data", "label"}
    np.testing.assert_array_equal(src.held_out.arrays["label"], test["label"])
    assert src.held_out.arrays["data"].dtype == np.float32


def test_npz_held_out_for_only_some_inputs(tmp_path: Path) -> None:
    path = _npz(tmp_path, **_good(10), data_test=_good(6)["data"])
    msg = _error(path)
    assert "'data_test'" in msg and "'label_test'" in msg and "every input" in msg


def test_npz_held_out_checked_like_train(tmp_path: Path) -> None:
    path = _npz(tmp_path, **_good(10), data_test=np.zeros((6, 1, 28, 28)),
                label_test=np.zeros(6, np.int64))
    msg = _error(path)
    assert "array 'data_test' has sample shape [1, 28, 28], the network's input 'data' " \
           "expects [1, 8, 8]" in msg
    path = _npz(tmp_path, "few.npz", **_good(10), data_test=np.zeros((3, 1, 8, 8)),
                label_test=np.zeros(3, np.int64))
    assert "held-out split has 3 samples, fewer than one batch of 4" in _error(path)


def test_npz_sample_shape_mismatch_message(tmp_path: Path) -> None:
    path = _npz(tmp_path, "x.npz", data=np.zeros((10, 1, 28, 28)), label=np.zeros(10, np.int64))
    assert _error(path) == (f"--data {path}: array 'data' has sample shape [1, 28, 28], the "
                            "network's input 'data' expects [1, 8, 8]")


def test_npz_missing_input(tmp_path: Path) -> None:
    path = _npz(tmp_path, data=_good()["data"])
    msg = _error(path)
    assert "no array for the network's input 'label'" in msg and "holds 'data'" in msg


def test_npz_extra_arrays_are_named(tmp_path: Path) -> None:
    path = _npz(tmp_path, **_good(), weights=np.zeros(3), zz=np.zeros(1))
    msg = _error(path)
    assert "arrays 'weights', 'zz' match no network input" in msg


def test_npz_sample_counts_differ(tmp_path: Path) -> None:
    path = _npz(tmp_path, data=np.zeros((10, 1, 8, 8)), label=np.zeros(9, np.int64))
    msg = _error(path)
    assert "differ in sample count" in msg and "'data' has 10" in msg and "'label' has 9" in msg


def test_npz_fewer_samples_than_one_batch(tmp_path: Path) -> None:
    path = _npz(tmp_path, **_good(3))
    assert "training split has 3 samples, fewer than one batch of 4" in _error(path)


def test_npz_non_integral_floats_for_int_input(tmp_path: Path) -> None:
    path = _npz(tmp_path, data=np.zeros((4, 1, 8, 8)), label=np.array([0.0, 1.5, 2.0, 3.0]))
    msg = _error(path)
    assert "array 'label'" in msg and "non-integral" in msg and "'label' is int" in msg


def test_npz_non_finite_floats_for_int_input(tmp_path: Path) -> None:
    path = _npz(tmp_path, data=np.zeros((4, 1, 8, 8)), label=np.array([0.0, np.nan, 2.0, 3.0]))
    assert "array 'label' holds non-finite values" in _error(path)


def test_npz_int_values_beyond_int32(tmp_path: Path) -> None:
    path = _npz(tmp_path, data=np.zeros((4, 1, 8, 8)),
                label=np.array([0, 1, 2, 1 << 40], np.int64))
    assert "array 'label' holds values outside the int32 range" in _error(path)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e300])
def test_npz_non_finite_floats(tmp_path: Path, bad: float) -> None:
    data = np.zeros((4, 1, 8, 8))
    data[2, 0, 3, 3] = bad
    path = _npz(tmp_path, data=data, label=np.zeros(4, np.int64))
    msg = _error(path)
    assert "array 'data' holds 1 non-finite value" in msg and "'data' needs finite" in msg


@pytest.mark.parametrize(("name", "array", "words"), [
    ("data", np.array([["a"] * 64] * 4).reshape(4, 1, 8, 8), "is float and takes"),
    ("data", np.zeros((4, 1, 8, 8), bool), "is float and takes"),
    ("label", np.zeros(4, bool), "is int and takes an integer array"),
    ("label", np.zeros(4, np.complex64), "is int and takes an integer array"),
])
def test_npz_wrong_dtype_kind(tmp_path: Path, name: str, array: np.ndarray, words: str) -> None:
    arrays = {"data": np.zeros((4, 1, 8, 8)), "label": np.zeros(4, np.int64), name: array}
    msg = _error(_npz(tmp_path, **arrays))
    assert f"array '{name}' has dtype {array.dtype}" in msg and words in msg


def test_npz_scalar_array(tmp_path: Path) -> None:
    path = _npz(tmp_path, data=np.zeros((4, 1, 8, 8)), label=np.array(3))
    assert "array 'label' is a scalar" in _error(path)


def test_npz_file_problems(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.npz")
    assert "no such file; --data takes a .npz file or 'digits'" in _error(missing)
    # a folder holds <input>.npy files (an unzipped .npz); this one holds none
    assert "the folder has no array for the network's inputs" in _error(str(tmp_path))
    npy = tmp_path / "a.npy"
    np.save(npy, np.zeros(3))
    assert "single .npy array, not a .npz archive" in _error(str(npy))
    text = tmp_path / "t.npz"
    text.write_text("hello, not numpy\n")
    assert "is not a readable .npz archive" in _error(str(text))
    broken = tmp_path / "b.npz"
    broken.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    assert "is not a readable .npz archive" in _error(str(broken))


def test_inputs_with_different_batch_sizes(tmp_path: Path) -> None:
    inputs = [InputDecl("data", (4, 1, 8, 8), "float"), InputDecl("label", (5,), "int")]
    assert "different batch sizes" in _error(_npz(tmp_path, **_good()), inputs)


# --------------------------------------------------------------------------- digits


def _digits_reference(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    perm = np.random.default_rng(seed).permutation(len(d.target))
    return d.data, d.target, perm


@pytest.mark.parametrize("shape", [(32, 1, 8, 8), (32, 64), (32, 8, 8)])
def test_digits_shapes_values_and_split_rule(shape: tuple[int, ...]) -> None:
    inputs = [InputDecl("label", (32,), "int"), InputDecl("pixels", shape, "float")]
    src = load_source("digits", inputs)
    assert src.name == "digits"
    assert src.held_out is not None
    # The documented rule: the first (4 * 1797) // 5 = 1437 of the seeded permutation train.
    assert (src.train.samples, src.held_out.samples) == (1437, 360)
    data, target, perm = _digits_reference(0)
    for split, rows in ((src.train, perm[:1437]), (src.held_out, perm[1437:])):
        px, lab = split.arrays["pixels"], split.arrays["label"]
        assert px.dtype == np.float32 and px.shape == (len(rows), *shape[1:])
        assert lab.dtype == np.int32 and lab.shape == (len(rows),)
        assert px.min() >= 0.0 and px.max() <= 1.0
        assert set(lab.tolist()) <= set(range(10))
        np.testing.assert_array_equal(lab, target[rows])
        np.testing.assert_array_equal(px.reshape(len(rows), 64),
                                      (data[rows] / 16).astype(np.float32))
    assert src.train.arrays["pixels"].max() == 1.0
    assert set(src.train.arrays["label"].tolist()) == set(range(10))


def test_digits_split_depends_on_seed() -> None:
    inputs = [InputDecl("x", (16, 64), "float"), InputDecl("y", (16,), "int")]
    a = load_source("digits", inputs, seed=0)
    b = load_source("digits", inputs, seed=7)
    _, target, perm = _digits_reference(7)
    np.testing.assert_array_equal(b.train.arrays["y"], target[perm[:1437]])
    assert not np.array_equal(a.train.arrays["y"], b.train.arrays["y"])
    again = load_source("digits", inputs, seed=7)
    np.testing.assert_array_equal(again.train.arrays["x"], b.train.arrays["x"])


@pytest.mark.parametrize("inputs", [
    [InputDecl("data", (4, 1, 28, 28), "float"), InputDecl("label", (4,), "int")],
    [InputDecl("data", (4, 64), "float")],
    [InputDecl("data", (4, 64), "float"), InputDecl("label", (4, 1), "int")],
    [InputDecl("data", (4, 64), "float"), InputDecl("label", (4,), "float")],
    [InputDecl("a", (4, 64), "float"), InputDecl("b", (4, 64), "float"),
     InputDecl("label", (4,), "int")],
])
def test_digits_needs_one_64_value_float_input_and_int_labels(inputs: list[InputDecl]) -> None:
    msg = _error("digits", inputs)
    assert "needs a network with exactly two inputs" in msg
    assert "the network declares " + "; ".join(d.describe() for d in inputs) in msg


def test_digits_batch_larger_than_held_out() -> None:
    inputs = [InputDecl("x", (400, 64), "float"), InputDecl("y", (400,), "int")]
    assert "held-out split has 360 samples, fewer than one batch of 400" in _error(
        "digits", inputs)


def test_digits_without_scikit_learn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    inputs = [InputDecl("x", (4, 64), "float"), InputDecl("y", (4,), "int")]
    with pytest.raises(DataError) as e:
        load_source("digits", inputs)
    assert str(e.value) == "--data digits needs scikit-learn: pip install 'frame-mlir[digits]'"
    # the network check comes first: a wrong network is reported even without scikit-learn
    assert "needs a network" in _error("digits", [InputDecl("x", (4, 10), "float")])


# --------------------------------------------------------------------------- batches


def _indexed_split(n: int) -> tuple[Split, list[InputDecl]]:
    """A split whose sample i holds the value i everywhere (so a feed reveals its rows)."""
    inputs = [InputDecl("x", (4, 2, 3), "float"), InputDecl("y", (4,), "int")]
    x = np.broadcast_to(np.arange(n, dtype=np.float32)[:, None, None], (n, 2, 3)).copy()
    return Split({"x": x, "y": np.arange(n, dtype=np.int32)}), inputs


def test_batches_shapes_dropped_and_order() -> None:
    split, inputs = _indexed_split(11)
    feeds, dropped = batches(split, inputs, shuffle=True, seed=777, epoch=0)
    assert dropped == 3
    feeds = list(feeds)
    assert len(feeds) == 2
    for f in feeds:
        assert set(f) == {"x", "y"}
        assert f["x"].shape == (4, 2, 3) and f["x"].dtype == np.float32
        assert f["y"].shape == (4,) and f["y"].dtype == np.int32
        np.testing.assert_array_equal(f["x"][:, 1, 2], f["y"])
    order = epoch_order(11, True, 777, 0)
    seen = [int(v) for f in feeds for v in f["y"]]
    assert seen == order[:8]
    # every sample once, except the dropped tail of the order
    assert sorted(seen + order[8:]) == list(range(11))
    assert len(set(seen)) == 8


def test_batches_differ_between_epochs_and_match_epoch_order() -> None:
    split, inputs = _indexed_split(40)
    orders = []
    for epoch in range(3):
        feeds, dropped = batches(split, inputs, shuffle=True, seed=5, epoch=epoch)
        assert dropped == 0
        seen = [int(v) for f in feeds for v in f["y"]]
        assert seen == epoch_order(40, True, 5, epoch)
        assert sorted(seen) == list(range(40))
        orders.append(seen)
    assert orders[0] != orders[1] != orders[2]


def test_batches_without_shuffle_keep_the_split_order() -> None:
    split, inputs = _indexed_split(10)
    feeds, dropped = batches(split, inputs, shuffle=False, seed=5, epoch=3)
    assert dropped == 2
    assert [f["y"].tolist() for f in feeds] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_batches_feeds_are_copies() -> None:
    split, inputs = _indexed_split(8)
    feeds, _ = batches(split, inputs, shuffle=False, seed=0, epoch=0)
    first = next(feeds)
    first["y"][:] = -1
    assert split.arrays["y"].tolist() == list(range(8))


def test_batches_of_a_loaded_source(tmp_path: Path) -> None:
    path = _npz(tmp_path, **_good(10))
    src = load_source(path, MNIST_LIKE)
    feeds, dropped = batches(src.train, MNIST_LIKE, shuffle=True, seed=0, epoch=1)
    shapes = [(f["data"].shape, f["label"].shape) for f in feeds]
    assert shapes == [((4, 1, 8, 8), (4,))] * 2 and dropped == 2


def test_batches_check_the_split_eagerly() -> None:
    split, inputs = _indexed_split(10)
    bad = [InputDecl("x", (4, 3, 2), "float"), InputDecl("y", (4,), "int")]
    with pytest.raises(DataError, match=r"^batches: array 'x' has shape \[10, 2, 3\], "
                                        r"expected \[10, 3, 2\]$"):
        batches(split, bad, shuffle=False, seed=0, epoch=0)
    with pytest.raises(DataError, match="no array for the inputs 'z'"):
        batches(split, [*inputs, InputDecl("z", (4,), "int")], shuffle=False, seed=0, epoch=0)
    small, _ = _indexed_split(3)
    with pytest.raises(DataError, match="3 samples, fewer than one batch of 4"):
        batches(small, inputs, shuffle=False, seed=0, epoch=0)
    with pytest.raises(ValueError, match="seed"):
        batches(split, inputs, shuffle=True, seed=-1, epoch=0)
    with pytest.raises(ValueError, match="epoch"):
        batches(split, inputs, shuffle=True, seed=0, epoch=-1)
