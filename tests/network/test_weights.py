"""Weight files of the JSON network format (frame_mlir.frontends.network.weights).

The ``.dlp`` layout checked byte by byte here is dlprimitives' (``/work/shared/dlprim/
README.md``, "Weight files (src/net.cpp)"): ``DLPW``, uint32 big-endian header length,
UTF-8 JSON header, then little-endian float32 data stored contiguously in name order.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.frontends.network.weights import WeightsError, load_weights, save_weights


def _params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {
        "fc1.0": rng.standard_normal((4, 3)).astype(np.float32),
        "fc1.1": rng.standard_normal(4).astype(np.float32),
        "conv.0": rng.standard_normal((2, 1, 3, 3)).astype(np.float32),
        "bn.0": np.array([0.0, -0.0, np.inf, np.finfo(np.float32).tiny], dtype=np.float32),
        "scalar": np.array(1.5, dtype=np.float32),
        "empty": np.zeros((0, 5), dtype=np.float32),
    }


def _bits(arr: np.ndarray) -> bytes:
    return np.ascontiguousarray(arr, dtype="<f4").tobytes()


def _assert_bit_exact(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    for name, arr in want.items():
        out = got[name]
        assert out.dtype == np.float32, name
        assert out.shape == arr.shape, name
        assert out.flags.c_contiguous and out.flags.owndata and out.flags.writeable, name
        assert _bits(out) == _bits(arr), name


def _dlp(header: bytes, data: bytes = b"") -> bytes:
    return b"DLPW" + struct.pack(">I", len(header)) + header + data


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("suffix", [".dlp", ".h5", ".hdf5", ".npz", ".DLP"])
def test_round_trip_is_bit_exact(tmp_path: Path, suffix: str) -> None:
    params = _params()
    path = tmp_path / f"w{suffix}"
    save_weights(path, params)
    _assert_bit_exact(load_weights(path), params)
    # str paths work too, and the write left no temporary file behind
    _assert_bit_exact(load_weights(str(path)), params)
    assert os.listdir(tmp_path) == [path.name]


def test_save_casts_real_dtypes_to_float32(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    save_weights(path, {"a": np.arange(3, dtype=np.int64), "b": np.array([0.5], np.float64)})
    got = load_weights(path)
    assert got["a"].dtype == np.float32 and got["a"].tolist() == [0.0, 1.0, 2.0]
    assert got["b"].tolist() == [0.5]


def test_npz_keys_are_exactly_the_names(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    # "file" and "allow_pickle" would clash with np.savez's own parameters
    params = {"fc1.0": np.ones((2, 2), np.float32), "file": np.zeros(1, np.float32)}
    params["allow_pickle"] = np.ones(3, np.float32)
    save_weights(path, params)
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == sorted(params)
        for name, arr in params.items():
            assert archive[name].dtype == np.float32
            np.testing.assert_array_equal(archive[name], arr)


def test_hdf5_layout_is_root_datasets(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "w.h5"
    params = {"fc1.0": np.ones((2, 3), np.float32), "fc1.1": np.zeros(2, np.float32)}
    save_weights(path, params)
    with h5py.File(path, "r") as fh:
        assert sorted(fh.keys()) == ["fc1.0", "fc1.1"]
        for name, arr in params.items():
            ds = fh[name]
            assert isinstance(ds, h5py.Dataset)
            assert ds.dtype == np.float32 and ds.shape == arr.shape


def test_save_replaces_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    save_weights(path, {"a": np.ones(4, np.float32)})
    save_weights(path, {"b": np.zeros(2, np.float32)})
    assert list(load_weights(path)) == ["b"]


# ----------------------------------------------------------------------------- format detection


@pytest.mark.parametrize("suffix", [".dlp", ".h5", ".npz"])
def test_format_detected_by_magic_not_suffix(tmp_path: Path, suffix: str) -> None:
    params = _params()
    saved = tmp_path / f"w{suffix}"
    save_weights(saved, params)
    for other in ("weights.bin", "weights.npz", "weights.dlp", "weights.h5", "weights"):
        renamed = tmp_path / other
        renamed.write_bytes(saved.read_bytes())
        _assert_bit_exact(load_weights(renamed), params)


def test_unknown_magic(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    path.write_bytes(b"GARBAGE!")
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    msg = str(info.value)
    assert str(path) in msg and "b'GARB'" in msg
    assert ".dlp" in msg and "HDF5" in msg and ".npz" in msg


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    path.write_bytes(b"")
    with pytest.raises(WeightsError, match="empty"):
        load_weights(path)


def test_unknown_save_suffix(tmp_path: Path) -> None:
    path = tmp_path / "w.pt"
    with pytest.raises(WeightsError) as info:
        save_weights(path, {"a": np.ones(1, np.float32)})
    msg = str(info.value)
    assert "'.pt'" in msg
    for suffix in (".dlp", ".h5", ".hdf5", ".npz"):
        assert f"'{suffix}'" in msg
    assert not path.exists()


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.dlp"
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert str(path) in str(info.value)
    assert "No such file or directory" in str(info.value)


def test_directory_is_not_a_weight_file(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match="cannot read weights"):
        load_weights(tmp_path)


def test_save_into_missing_folder(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "w.dlp"
    with pytest.raises(WeightsError) as info:
        save_weights(path, {"a": np.ones(1, np.float32)})
    assert str(path) in str(info.value) and "No such file or directory" in str(info.value)


def test_save_reports_all_bad_tensors(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    bad = {
        "ok": np.ones(2, np.float32),
        "c": np.ones(2, np.complex64),
        "s": np.array(["x"]),
        "": np.ones(1, np.float32),
    }
    with pytest.raises(WeightsError) as info:
        save_weights(path, bad)
    assert len(info.value.problems) == 3
    msg = str(info.value)
    assert "c: dtype complex64" in msg and "s: dtype <U1" in msg and "empty name" in msg
    assert not path.exists() and os.listdir(tmp_path) == []


def test_hdf5_rejects_slash_in_names(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match="a/b"):
        save_weights(tmp_path / "w.h5", {"a/b": np.ones(1, np.float32)})
    # the .dlp and .npz formats have no such restriction
    for suffix in (".dlp", ".npz"):
        save_weights(tmp_path / f"w{suffix}", {"a/b": np.ones(1, np.float32)})
        assert list(load_weights(tmp_path / f"w{suffix}")) == ["a/b"]


# ----------------------------------------------------------------------------- DLP byte layout


def test_dlp_byte_layout(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    # given out of order: the writer sorts by name
    save_weights(
        path,
        {
            "fc.1": np.array([0.5, -2.0], dtype=np.float32),
            "fc.0": np.array([[1.0, 2.0, 3.0]], dtype=np.float32),
        },
    )
    header = (
        b'{"tensors":{'
        b'"fc.0":{"dtype":"float","shape":[1,3],"size":12,"start":0},'
        b'"fc.1":{"dtype":"float","shape":[2],"size":8,"start":12}'
        b"}}"
    )
    data = (
        b"\x00\x00\x80\x3f"  # 1.0 little-endian
        b"\x00\x00\x00\x40"  # 2.0
        b"\x00\x00\x40\x40"  # 3.0
        b"\x00\x00\x00\x3f"  # 0.5
        b"\x00\x00\x00\xc0"  # -2.0
    )
    expected = b"DLPW" + len(header).to_bytes(4, "big") + header + data
    blob = path.read_bytes()
    assert blob == expected
    # the same facts, field by field
    assert blob[:4] == b"DLPW"
    (length,) = struct.unpack(">I", blob[4:8])
    parsed = json.loads(blob[8 : 8 + length])
    assert list(parsed["tensors"]) == ["fc.0", "fc.1"]
    starts = [t["start"] for t in parsed["tensors"].values()]
    sizes = [t["size"] for t in parsed["tensors"].values()]
    assert starts == [0, 12] and sizes == [12, 8]
    assert len(blob) == 8 + length + sum(sizes)


def test_dlp_hand_built_file_loads(tmp_path: Path) -> None:
    # a file another writer might produce: spaces in the JSON, non-sorted entries
    header = json.dumps(
        {
            "tensors": {
                "b": {"dtype": "float", "shape": [2], "size": 8, "start": 0},
                "a": {"dtype": "float", "shape": [], "size": 4, "start": 8},
            }
        }
    ).encode()
    data = struct.pack("<3f", 1.0, 2.0, 7.0)
    path = tmp_path / "w"
    path.write_bytes(_dlp(header, data))
    got = load_weights(path)
    assert got["b"].tolist() == [1.0, 2.0]
    assert got["a"].shape == () and float(got["a"]) == 7.0


def test_dlp_non_ascii_names_are_utf8(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    save_weights(path, {"gewicht_ä": np.ones(1, np.float32)})
    blob = path.read_bytes()
    assert "gewicht_ä".encode() in blob
    assert list(load_weights(path)) == ["gewicht_ä"]


# ----------------------------------------------------------------------------- damaged DLP files


@pytest.mark.parametrize("cut", [3, 6, 20, -1, -5])
def test_truncated_dlp(tmp_path: Path, cut: int) -> None:
    src = tmp_path / "w.dlp"
    save_weights(src, {"a": np.ones((2, 2), np.float32), "b": np.ones(3, np.float32)})
    blob = src.read_bytes()
    path = tmp_path / "cut.dlp"
    path.write_bytes(blob[:cut])
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    msg = str(info.value)
    assert str(path) in msg
    if cut == 3:  # not even the magic: unknown format
        assert "not a known weight file" in msg
    else:
        assert "truncated" in msg


def test_truncated_dlp_names_the_tensor(tmp_path: Path) -> None:
    src = tmp_path / "w.dlp"
    save_weights(src, {"a": np.ones((2, 2), np.float32), "b": np.ones(3, np.float32)})
    path = tmp_path / "cut.dlp"
    path.write_bytes(src.read_bytes()[:-1])
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert info.value.problems == (
        "b: data [16, 28) lies outside the file "
        "(only 27 bytes of data after the header; truncated file?)",
    )


def _overlap_file(path: Path, starts: dict[str, int], data_bytes: int) -> Path:
    """A .dlp file whose tensors a [2], b [3], c [] start at `starts`."""
    shapes = {"a": [2], "b": [3], "c": []}
    header = json.dumps({"tensors": {
        n: {"dtype": "float", "shape": shapes[n], "size": 4 * int(np.prod(shapes[n])),
            "start": s} for n, s in starts.items()}}).encode()
    path.write_bytes(_dlp(header, bytes(data_bytes)))
    return path


def test_dlp_overlapping_ranges_are_refused(tmp_path: Path) -> None:
    """Issue 30, defect 10: a header giving every tensor "start": 0 loaded, each tensor
    reading the first bytes of the data; overlapping ranges are refused, each named with
    the tensor (of those starting before it) whose range reaches furthest."""
    path = _overlap_file(tmp_path / "w.dlp", {"a": 0, "b": 0, "c": 0}, 24)
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert info.value.problems == (
        "b: data [0, 12) overlaps tensor 'a' [0, 8): each tensor needs its own bytes",
        "c: data [0, 4) overlaps tensor 'b' [0, 12): each tensor needs its own bytes",
    )
    # a partial overlap, in a header not in data order
    path = _overlap_file(tmp_path / "p.dlp", {"b": 4, "a": 0, "c": 16}, 20)
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert info.value.problems == (
        "b: data [4, 16) overlaps tensor 'a' [0, 8): each tensor needs its own bytes",)
    # adjacent, gaps and empty tensors are fine
    path = _overlap_file(tmp_path / "ok.dlp", {"a": 12, "b": 0, "c": 24}, 28)
    assert sorted(load_weights(path)) == ["a", "b", "c"]


def test_dlp_empty_tensors_never_overlap(tmp_path: Path) -> None:
    header = json.dumps({"tensors": {
        "e": {"dtype": "float", "shape": [0, 5], "size": 0, "start": 0},
        "a": {"dtype": "float", "shape": [1], "size": 4, "start": 0}}}).encode()
    path = tmp_path / "w.dlp"
    path.write_bytes(_dlp(header, bytes(4)))
    assert load_weights(path)["e"].shape == (0, 5)


def test_dlp_start_out_of_bounds(tmp_path: Path) -> None:
    path = _overlap_file(tmp_path / "w.dlp", {"a": 2**70, "b": 0}, 12)
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert info.value.problems == (
        f"a: data [{2**70}, {2**70 + 8}) lies outside the file "
        "(only 12 bytes of data after the header; truncated file?)",)


@pytest.mark.parametrize(
    ("header", "needle"),
    [
        (b'{"tensors": {', "not valid UTF-8 JSON"),
        (b"\xff\xfe", "not valid UTF-8 JSON"),
        (b'{"tensors": {"a": {"dtype": "float", "shape": [NaN]}}}', "not valid UTF-8 JSON"),
        (b'{"tensors": {}, "tensors": {}}', "duplicate key"),
        (b"[1, 2]", '{"tensors"'),
        (b'{"tensor": {}}', '{"tensors"'),
        (b'{"tensors": []}', '{"tensors"'),
    ],
)
def test_corrupt_dlp_header(tmp_path: Path, header: bytes, needle: str) -> None:
    path = tmp_path / "w.dlp"
    path.write_bytes(_dlp(header, b"\0" * 64))
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert str(path) in str(info.value) and "corrupt .dlp header" in str(info.value)
    assert needle in str(info.value)


def test_corrupt_dlp_entries_all_reported(tmp_path: Path) -> None:
    entries = {
        "ok": {"dtype": "float", "shape": [1], "size": 4, "start": 0},
        "half": {"dtype": "half", "shape": [2], "size": 4, "start": 0},
        "size": {"dtype": "float", "shape": [2], "size": 4, "start": 0},
        "noshape": {"dtype": "float", "size": 4, "start": 0},
        "negstart": {"dtype": "float", "shape": [1], "size": 4, "start": -4},
        "floatdim": {"dtype": "float", "shape": [1.0], "size": 4, "start": 0},
        "notobj": 3,
    }
    path = tmp_path / "w.dlp"
    path.write_bytes(_dlp(json.dumps({"tensors": entries}).encode(), b"\0" * 8))
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    problems = info.value.problems
    assert len(problems) == 6
    msg = str(info.value)
    assert "6 problems" in msg and len(msg.splitlines()) == 7
    assert "half: dtype 'half' is not supported (only 'float', i.e. float32)" in msg
    assert "size: size 4 bytes does not match shape [2] (8 bytes of float32)" in msg
    assert "noshape: header entry has a missing or invalid shape" in msg
    assert "negstart: header entry has a missing or invalid start" in msg
    assert "floatdim: header entry has a missing or invalid shape" in msg
    assert "notobj: header entry is not a JSON object" in msg


def test_dlp_header_length_too_big(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    path.write_bytes(b"DLPW" + struct.pack(">I", 64 * 1024 * 1024 + 1) + b"{}")
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert str(path) in str(info.value)
    assert "67108865" in str(info.value) and "64 MiB" in str(info.value)


def test_dlp_header_length_little_endian_is_caught(tmp_path: Path) -> None:
    # a writer using the wrong byte order produces an absurd header length
    header = b'{"tensors": {}}'
    path = tmp_path / "w.dlp"
    path.write_bytes(b"DLPW" + struct.pack("<I", len(header)) + header)
    with pytest.raises(WeightsError, match="64 MiB"):
        load_weights(path)


# ----------------------------------------------------------------------------- damaged HDF5 / npz


def test_truncated_hdf5_and_npz(tmp_path: Path) -> None:
    for suffix, needle in ((".h5", "HDF5"), (".npz", ".npz")):
        src = tmp_path / f"w{suffix}"
        save_weights(src, _params())
        path = tmp_path / f"cut{suffix}"
        path.write_bytes(src.read_bytes()[:40])
        with pytest.raises(WeightsError) as info:
            load_weights(path)
        assert str(path) in str(info.value) and needle in str(info.value)


def test_npz_with_pickled_objects_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    np.savez(path, good=np.ones(2, np.float32), bad=np.array([{"x": 1}], dtype=object))
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    assert len(info.value.problems) == 1 and info.value.problems[0].startswith("bad:")


def test_npz_float64_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    np.savez(path, w=np.array([[0.25, 1.0]], dtype=np.float64))
    got = load_weights(path, {"w": ((1, 2), np.dtype(np.float32))})
    assert got["w"].dtype == np.float32 and got["w"].tolist() == [[0.25, 1.0]]


def test_hdf5_group_in_root_is_reported(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as fh:
        fh.create_dataset("fc.0", data=np.ones(2, np.float32))
        fh.create_group("extra")
    with pytest.raises(WeightsError, match="extra: is a group, not a dataset"):
        load_weights(path)


# ----------------------------------------------------------------------------- network specs


SPECS = {
    "fc1.0": ((256, 64), np.dtype(np.float32)),
    "fc1.1": ((256,), np.dtype(np.float32)),
    "fc2.0": ((10, 256), np.dtype(np.float32)),
    "fc2.1": ((10,), np.dtype(np.float32)),
}


def _matching() -> dict[str, np.ndarray]:
    return {name: np.zeros(shape, np.float32) for name, (shape, _) in SPECS.items()}


@pytest.mark.parametrize("suffix", [".dlp", ".h5", ".npz"])
def test_expected_match_returns_expected_names(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"w{suffix}"
    save_weights(path, _matching())
    got = load_weights(path, SPECS)
    assert list(got) == list(SPECS)
    for name, (shape, _) in SPECS.items():
        assert got[name].shape == shape


@pytest.mark.parametrize("suffix", [".dlp", ".h5", ".npz"])
def test_all_mismatches_in_one_error(tmp_path: Path, suffix: str) -> None:
    params = _matching()
    params["fc1.0"] = np.zeros((256, 784), np.float32)  # wrong shape
    del params["fc2.1"]  # missing
    params["x"] = np.zeros(3, np.float32)  # not in the network
    path = tmp_path / f"w{suffix}"
    save_weights(path, params)
    with pytest.raises(WeightsError) as info:
        load_weights(path, SPECS)
    assert sorted(info.value.problems) == sorted(
        [
            "fc1.0: shape expected [256, 64], found [256, 784]",
            "fc2.1: missing from the file (expected shape [10])",
            "unexpected tensor 'x' in file",
        ]
    )
    msg = str(info.value)
    assert msg.startswith(f"{path}: 3 problems with the weights:\n")
    assert len(msg.splitlines()) == 4


def test_allow_missing(tmp_path: Path) -> None:
    params = _matching()
    del params["fc2.0"], params["fc2.1"]
    path = tmp_path / "w.dlp"
    save_weights(path, params)
    with pytest.raises(WeightsError) as info:
        load_weights(path, SPECS)
    assert len(info.value.problems) == 2
    got = load_weights(path, SPECS, allow_missing=True)
    assert list(got) == ["fc1.0", "fc1.1"]


def test_allow_missing_still_reports_shape_and_extra(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    save_weights(path, {"fc1.0": np.zeros((1, 1), np.float32), "y": np.zeros(1, np.float32)})
    with pytest.raises(WeightsError) as info:
        load_weights(path, SPECS, allow_missing=True)
    assert sorted(info.value.problems) == [
        "fc1.0: shape expected [256, 64], found [1, 1]",
        "unexpected tensor 'y' in file",
    ]


def test_bad_tensor_entry_is_not_also_reported_missing(tmp_path: Path) -> None:
    header = json.dumps(
        {"tensors": {"fc2.1": {"dtype": "int32", "shape": [10], "size": 40, "start": 0}}}
    ).encode()
    path = tmp_path / "w.dlp"
    path.write_bytes(_dlp(header, b"\0" * 40))
    with pytest.raises(WeightsError) as info:
        load_weights(path, {"fc2.1": SPECS["fc2.1"]})
    assert info.value.problems == (
        "fc2.1: dtype 'int32' is not supported (only 'float', i.e. float32)",
    )


def test_expected_non_float32_dtype_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "w.dlp"
    save_weights(path, {"a": np.zeros(2, np.float32)})
    with pytest.raises(WeightsError, match="a: dtype expected float16, found float32"):
        load_weights(path, {"a": ((2,), np.dtype(np.float16))})


def test_weights_error_is_value_error() -> None:
    err = WeightsError("f.dlp", ["one"])
    assert isinstance(err, ValueError)
    assert str(err) == "f.dlp: one" and err.path == "f.dlp" and err.problems == ("one",)
