"""Tests of save_onnx_weights / load_onnx_weights (API sheet section 6).

The file layout is checked byte for byte against hand-computed encodings, and the optional
`onnx` package (a test-only dependency) serves as an independent reader and writer.
"""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from frame_mlir.frontends.api.onnx_weights import load_onnx_weights, save_onnx_weights
from frame_mlir.frontends.api.tensor import Device, DType, Tensor, bf16_bits, from_numpy

# --------------------------------------------------------------------------- helpers


def _varint(value: int) -> bytes:
    """Independent varint encoder for building hand-made files (kept apart from the module's)."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _vi(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _model(*initializers: bytes, extra_graph: bytes = b"", extra_model: bytes = b"") -> bytes:
    graph = _ld(2, b"g") + extra_graph + b"".join(_ld(5, t) for t in initializers)
    return _vi(1, 8) + _ld(8, _ld(1, b"") + _vi(2, 13)) + extra_model + _ld(7, graph)


def _f32_tensor(name: str, values: list[float], dims: list[int]) -> bytes:
    return (b"".join(_vi(1, d) for d in dims) + _vi(2, 1) + _ld(8, name.encode())
            + _ld(9, struct.pack(f"<{len(values)}f", *values)))


def _write(tmp_path, data: bytes, name: str = "m.onnx") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _bf16(values) -> Tensor:
    return Tensor._own(bf16_bits(np.asarray(values, dtype=np.float32)), DType.bfloat16)


def _assert_same(got: dict[str, Tensor], want: dict[str, Tensor]) -> None:
    """Same names in the same order, same dtypes, shapes and storage bits."""
    assert list(got) == list(want)
    for name, t in want.items():
        g = got[name]
        assert g.dtype == t.dtype, name
        assert g.shape.dims == t.shape.dims, name
        assert g.device == Device("cpu", 0), name
        assert g.storage().dtype == t.storage().dtype, name
        assert g.storage().tobytes() == t.storage().tobytes(), name


def _sample_weights() -> dict[str, Tensor]:
    rng = np.random.default_rng(7)
    return {
        "zeta.weight": from_numpy(rng.standard_normal((3, 4)).astype(np.float32)),
        "alpha": from_numpy(np.array(-0.0, dtype=np.float32)),
        "h": from_numpy(rng.standard_normal((2, 1, 5)).astype(np.float16)),
        "bf": _bf16(rng.standard_normal((4, 3))),
        "bf_specials": _bf16([np.inf, -np.inf, np.nan, -0.0, 1e-40, 3.0e38]),
        "f_specials": from_numpy(np.array([np.inf, -np.inf, np.nan, -0.0, 1e-45, 3.4e38],
                                          dtype=np.float32)),
        "scalar16": from_numpy(np.array(65504.0, dtype=np.float16)),
        "empty": from_numpy(np.zeros((0, 3), dtype=np.float32)),
        "ünïcode/name:0": from_numpy(np.ones((2, 2, 2, 2), dtype=np.float32)),
    }


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3), (2, 3, 4), (1, 2, 1, 3, 2)])
def test_round_trip_each_dtype_and_rank(tmp_path, dtype, shape):
    values = np.asarray(np.random.default_rng(1).standard_normal(shape) * 100, np.float32)
    if dtype == "bfloat16":
        t = _bf16(values)
    else:
        t = from_numpy(np.asarray(values, dtype=dtype))
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, {"w": t})
    got = load_onnx_weights(path)
    _assert_same(got, {"w": t})
    assert got["w"].dtype == DType[dtype]
    if dtype != "bfloat16":
        np.testing.assert_array_equal(got["w"].numpy(), np.asarray(values, dtype=dtype))


def test_round_trip_many_preserves_order_and_bits(tmp_path):
    weights = _sample_weights()
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, weights)
    _assert_same(load_onnx_weights(path), weights)


def test_insertion_order_not_sorted(tmp_path):
    names = ["z", "a", "m", "b", "y"]
    weights = {n: from_numpy(np.full((1,), i, dtype=np.float32)) for i, n in enumerate(names)}
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, weights)
    got = load_onnx_weights(path)
    assert list(got) == names
    assert [float(got[n].numpy()[0]) for n in names] == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_empty_dict_round_trip(tmp_path):
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, {})
    assert load_onnx_weights(path) == {}


def test_loaded_tensors_are_independent_and_read_only(tmp_path):
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, {"w": from_numpy(np.arange(4, dtype=np.float32))})
    t = load_onnx_weights(path)["w"]
    assert not t.storage().flags.writeable
    os.remove(path)  # the tensor must not depend on the file any more
    np.testing.assert_array_equal(t.numpy(), np.arange(4, dtype=np.float32))


def test_pathlike_accepted(tmp_path):
    path = tmp_path / "w.onnx"
    save_onnx_weights(path, {"w": from_numpy(np.ones(2, dtype=np.float32))})
    assert list(load_onnx_weights(path)) == ["w"]


def test_overwrites_existing_file(tmp_path):
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, _sample_weights())
    save_onnx_weights(path, {"only": from_numpy(np.ones(1, dtype=np.float32))})
    assert list(load_onnx_weights(path)) == ["only"]


# --------------------------------------------------------------------------- exact layout


def test_exact_bytes_f32_vector(tmp_path):
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, {"w": from_numpy(np.array([1.0, -2.0], dtype=np.float32))})
    tensor = bytes.fromhex(
        "08 02"              # dims: field 1 varint 2
        "10 01"              # data_type: field 2 varint 1 (FLOAT)
        "42 01 77"           # name: field 8, length 1, "w"
        "4a 08 0000803f 000000c0"  # raw_data: field 9, 8 bytes: 1.0f, -2.0f little-endian
    )
    assert len(tensor) == 0x11
    graph = bytes.fromhex("12 0d") + b"frame_weights" + bytes.fromhex("2a 11") + tensor
    assert len(graph) == 0x22
    expected = bytes.fromhex(
        "08 08"              # ir_version: field 1 varint 8
        "42 04 0a00 100d"    # opset_import: field 8 {domain "" ; version 13}
        "3a 22"              # graph: field 7, 34 bytes
    ) + graph
    assert (tmp_path / "w.onnx").read_bytes() == expected


def test_exact_bytes_rank0_f16_and_2d_bf16(tmp_path):
    path = str(tmp_path / "w.onnx")
    weights = {
        "s": from_numpy(np.array(1.0, dtype=np.float16)),  # 0x3c00
        "bb": _bf16(np.array([[1.0], [-2.0], [0.5]])),       # 0x3f80, 0xc000, 0x3f00
    }
    save_onnx_weights(path, weights)
    # rank 0: no dims field at all.
    t1 = bytes.fromhex("10 0a  42 01 73  4a 02 003c")
    t2 = bytes.fromhex("08 03 08 01  10 10  42 02 6262  4a 06 803f 00c0 003f")
    graph = bytes.fromhex("12 0d") + b"frame_weights"
    graph += bytes([0x2A, len(t1)]) + t1 + bytes([0x2A, len(t2)]) + t2
    expected = bytes.fromhex("08 08 42 04 0a00 100d 3a") + bytes([len(graph)]) + graph
    assert (tmp_path / "w.onnx").read_bytes() == expected


def test_multibyte_varints_in_dims_and_lengths(tmp_path):
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, {"w": from_numpy(np.zeros((300,), dtype=np.float32))})
    data = (tmp_path / "w.onnx").read_bytes()
    # dims 300 = 0xac 0x02; raw_data of 1200 bytes has length varint 0xb0 0x09.
    assert bytes.fromhex("08 ac02 10 01 42 01 77 4a b009") in data
    assert len(load_onnx_weights(path)["w"].numpy()) == 300


# --------------------------------------------------------------------------- save errors


def _fake_device(backend: str) -> Device:
    """A Device naming a backend that is not registered (Device() itself would refuse it)."""
    d = object.__new__(Device)
    d._backend = backend
    d._index = 0
    return d


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_save_rejects_integer_dtypes(tmp_path, dtype):
    path = tmp_path / "w.onnx"
    with pytest.raises(ValueError, match="unsupported dtype"):
        save_onnx_weights(str(path), {"ok": from_numpy(np.ones(1, np.float32)),
                                      "i": from_numpy(np.ones(2, dtype))})
    assert not path.exists()  # validation happens before the file is created


def test_save_rejects_non_cpu_tensor(tmp_path):
    t = Tensor._own(np.ones(2, np.float32), DType.float32, _fake_device("cuda"))
    with pytest.raises(ValueError, match="cpu"):
        save_onnx_weights(str(tmp_path / "w.onnx"), {"w": t})


def test_save_rejects_empty_name(tmp_path):
    with pytest.raises(ValueError, match="non-empty"):
        save_onnx_weights(str(tmp_path / "w.onnx"), {"": from_numpy(np.ones(1, np.float32))})


def test_save_rejects_unencodable_name(tmp_path):
    with pytest.raises(ValueError, match="UTF-8"):
        save_onnx_weights(str(tmp_path / "w.onnx"),
                          {"bad\ud800": from_numpy(np.ones(1, np.float32))})


def test_save_unopenable_path_is_value_error(tmp_path):
    t = {"w": from_numpy(np.ones(1, np.float32))}
    with pytest.raises(ValueError, match="cannot open"):
        save_onnx_weights(str(tmp_path / "no" / "such" / "dir" / "w.onnx"), t)
    with pytest.raises(ValueError, match="cannot open"):
        save_onnx_weights(str(tmp_path), t)  # a directory


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_save_write_failure_is_runtime_error():
    with pytest.raises(RuntimeError, match="failed"):
        save_onnx_weights("/dev/full", {"w": from_numpy(np.ones(4096, np.float32))})


@pytest.mark.parametrize("path, weights", [
    (123, {}),
    (b"w.onnx", {}),
    ("w.onnx", [("w", 1)]),
    ("w.onnx", {1: None}),
    ("w.onnx", {"w": np.ones(2, np.float32)}),
])
def test_save_type_errors(tmp_path, monkeypatch, path, weights):
    monkeypatch.chdir(tmp_path)
    if weights == {1: None}:
        weights = {1: from_numpy(np.ones(1, np.float32))}
    with pytest.raises(TypeError):
        save_onnx_weights(path, weights)


def test_load_type_error():
    with pytest.raises(TypeError):
        load_onnx_weights(None)


# --------------------------------------------------------------------------- load errors


def test_load_missing_file_is_key_error(tmp_path):
    with pytest.raises(KeyError):
        load_onnx_weights(str(tmp_path / "missing.onnx"))


def test_load_directory_is_value_error(tmp_path):
    with pytest.raises(ValueError, match="cannot open"):
        load_onnx_weights(str(tmp_path))


def test_load_truncated_file_at_every_length(tmp_path):
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, {"w": from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)),
                             "v": _bf16([1.0, 2.0])})
    data = (tmp_path / "w.onnx").read_bytes()
    # Every proper prefix cuts the graph field, so it is either truncated or missing.
    for n in range(len(data)):
        p = _write(tmp_path, data[:n], "cut.onnx")
        with pytest.raises(ValueError, match="truncated|no graph"):
            load_onnx_weights(p)


@pytest.mark.parametrize("data, fragment", [
    (b"", "no graph"),
    (_vi(1, 8), "no graph"),
    (b"\x08", "truncated varint"),
    (b"\x08\xff\xff", "truncated varint"),
    (b"\x08" + b"\xff" * 10 + b"\x01", "longer than 10 bytes"),
    (b"\x3a\x05ab", "truncated field"),
    (b"\x09\x00\x00", "truncated field"),   # fixed64 with only 2 bytes
    (b"\x0d\x00", "truncated field"),       # fixed32 with only 1 byte
    (b"\x0e", "invalid wire type 6"),
    (b"\x0f", "invalid wire type 7"),
    (b"\x00\x00", "invalid field number 0"),
    (b"\x38\x01", "wire type 0, expected 2"),  # graph as a varint
])
def test_load_malformed_model_is_value_error(tmp_path, data, fragment):
    with pytest.raises(ValueError, match=fragment):
        load_onnx_weights(_write(tmp_path, data))


@pytest.mark.parametrize("group_key", [0x0B, 0x0C])  # field 1 with wire types 3 and 4
def test_load_group_wire_type_is_not_implemented(tmp_path, group_key):
    with pytest.raises(NotImplementedError, match="group"):
        load_onnx_weights(_write(tmp_path, bytes([group_key]) + _model()))


def test_load_group_inside_tensor_is_not_implemented(tmp_path):
    tensor = _f32_tensor("w", [1.0], [1]) + bytes([0x9B, 0x01, 0x9C, 0x01])  # field 19 start/end
    with pytest.raises(NotImplementedError):
        load_onnx_weights(_write(tmp_path, _model(tensor)))


@pytest.mark.parametrize("code", [0, 2, 3, 6, 7, 11, 17, 99])
def test_load_unsupported_data_type(tmp_path, code):
    tensor = _vi(1, 1) + _vi(2, code) + _ld(8, b"w") + _ld(9, b"\x00" * 8)
    with pytest.raises(ValueError, match="unsupported data_type"):
        load_onnx_weights(_write(tmp_path, _model(tensor)))


@pytest.mark.parametrize("tensor, fragment", [
    (_vi(1, 2) + _vi(2, 1) + _ld(8, b"w") + _ld(9, b"\x00" * 4), "raw_data has 4 bytes"),
    (_vi(1, 2) + _vi(2, 1) + _ld(9, b"\x00" * 8), "no name"),
    (_vi(1, (1 << 64) - 1) + _vi(2, 1) + _ld(8, b"w"), "negative dimension"),
    (_vi(1, 2) + _vi(2, 1) + _ld(8, b"w"), "float_data has 0 values"),
    (_vi(1, 2) + _vi(2, 10) + _ld(8, b"w"), "int32_data has 0 values"),
    (_vi(1, 1) + _vi(2, 1) + _ld(8, b"\xff") + _ld(9, b"\x00" * 4), "UTF-8"),
    (_vi(1, 1) + _vi(2, 1) + _ld(8, b"w") + _vi(14, 1), "external data"),
    (_vi(1, 1) + _vi(2, 1) + _ld(8, b"w") + _ld(13, _ld(1, b"location")), "external data"),
    (_vi(1, 1) + _vi(2, 1) + _ld(8, b"w") + _ld(9, b"\x00" * 4) + _ld(4, b"\x00" * 4),
     "both raw_data and typed"),
    (_vi(1, 1) + _vi(2, 10) + _ld(8, b"w") + _ld(4, b"\x00" * 4), "float_data cannot hold"),
    (_vi(1, 1) + _vi(2, 1) + _ld(8, b"w") + _ld(4, b"\x00" * 3), "multiple of 4"),
    (_vi(1, 1) + _vi(2, 1) + _vi(8, 3), "wire type 0, expected 2"),
])
def test_load_bad_tensor_is_value_error(tmp_path, tensor, fragment):
    with pytest.raises(ValueError, match=fragment):
        load_onnx_weights(_write(tmp_path, _model(tensor)))


def test_load_duplicate_names_is_value_error(tmp_path):
    t = _f32_tensor("w", [1.0], [1])
    with pytest.raises(ValueError, match="duplicate"):
        load_onnx_weights(_write(tmp_path, _model(t, t)))


# --------------------------------------------------------------------------- lenient load


def test_load_skips_unknown_fields_of_every_wire_type(tmp_path):
    unknown = (_vi(20, 12345)  # field 20 varint
               + bytes([0xA9, 0x01]) + b"\x01" * 8  # field 21 fixed64
               + _ld(22, b"junk")  # field 22 length-delimited
               + bytes([0xBD, 0x01]) + b"\x02" * 4)  # field 23 fixed32
    tensor = unknown + _f32_tensor("w", [1.5, -2.5], [2]) + unknown
    data = _model(tensor, extra_graph=unknown + _ld(1, b"a node we ignore"),
                  extra_model=unknown + _ld(2, b"producer") + _ld(4, b"doc"))
    got = load_onnx_weights(_write(tmp_path, unknown + data))
    np.testing.assert_array_equal(got["w"].numpy(), np.array([1.5, -2.5], np.float32))


def test_load_packed_dims_and_typed_data(tmp_path):
    # Packed dims [2, 3]; FLOAT values in packed float_data.
    f32 = (_ld(1, _varint(2) + _varint(3)) + _vi(2, 1) + _ld(8, b"a")
           + _ld(4, struct.pack("<6f", *range(6))))
    # Unpacked float_data (fixed32 each).
    f32u = (_vi(1, 2) + _vi(2, 1) + _ld(8, b"b") + bytes([0x25]) + struct.pack("<f", 7.0)
            + bytes([0x25]) + struct.pack("<f", -8.0))
    # FLOAT16 in packed int32_data, one value sign-extended as a negative int32 would be.
    neg = (0xBC00 - 0x10000) & ((1 << 64) - 1)  # -1.0 in f16 as a sign-extended int32
    f16 = _vi(1, 2) + _vi(2, 10) + _ld(8, b"c") + _ld(5, _varint(0x3C00) + _varint(neg))
    # BFLOAT16 in unpacked int32_data.
    bf = _vi(1, 2) + _vi(2, 16) + _ld(8, b"d") + _vi(5, 0x3F80) + _vi(5, 0xC000)
    got = load_onnx_weights(_write(tmp_path, _model(f32, f32u, f16, bf)))
    assert list(got) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(got["a"].numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(got["b"].numpy(), np.array([7.0, -8.0], np.float32))
    assert got["c"].dtype == DType.float16
    np.testing.assert_array_equal(got["c"].numpy(), np.array([1.0, -1.0], np.float16))
    assert got["d"].dtype == DType.bfloat16
    assert got["d"].storage().tolist() == [0x3F80, 0xC000]


def test_load_split_graph_fields_are_merged(tmp_path):
    # Protobuf merges repeated occurrences of a message field: initializers accumulate.
    g1 = _ld(5, _f32_tensor("a", [1.0], [1]))
    g2 = _ld(5, _f32_tensor("b", [2.0], [1]))
    data = _vi(1, 8) + _ld(7, g1) + _ld(7, g2)
    assert list(load_onnx_weights(_write(tmp_path, data))) == ["a", "b"]


# --------------------------------------------------------------------------- onnx oracle


def test_onnx_checker_and_numpy_helper_read_our_files(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    weights = _sample_weights()
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, weights)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 13)]
    assert model.graph.name == "frame_weights"
    assert len(model.graph.node) == 0
    assert [t.name for t in model.graph.initializer] == list(weights)
    codes = {DType.float32: onnx.TensorProto.FLOAT, DType.float16: onnx.TensorProto.FLOAT16,
             DType.bfloat16: onnx.TensorProto.BFLOAT16}
    for proto in model.graph.initializer:
        want = weights[proto.name]
        assert proto.data_type == codes[want.dtype]
        assert list(proto.dims) == want.shape.dims
        array = numpy_helper.to_array(proto)
        assert list(array.shape) == want.shape.dims
        if want.dtype == DType.bfloat16:
            # numpy_helper yields an ml_dtypes bfloat16 array: compare the bit patterns.
            assert array.dtype.itemsize == 2
            assert array.view(np.uint16).tobytes() == want.storage().tobytes()
        else:
            assert array.dtype == want.storage().dtype
            assert array.tobytes() == want.storage().tobytes()


def test_we_read_files_written_by_onnx(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 2)).astype(np.float32)
    h = rng.standard_normal((4,)).astype(np.float16)
    bf_values = [1.0, -2.0, 0.15625, 3.0e38]
    inits = [
        numpy_helper.from_array(a, "raw_f32"),
        numpy_helper.from_array(h, "raw_f16"),
        helper.make_tensor("typed_f32", TensorProto.FLOAT, [2, 3], a.ravel()[:6].tolist()),
        helper.make_tensor("typed_f16", TensorProto.FLOAT16, [4], h),
        helper.make_tensor("typed_bf16", TensorProto.BFLOAT16, [2, 2], bf_values),
        helper.make_tensor("raw_bf16", TensorProto.BFLOAT16, [4], bf_values, raw=False),
        numpy_helper.from_array(np.array(2.5, dtype=np.float32), "scalar"),
    ]
    graph = helper.make_graph([], "exported", [], [], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = str(tmp_path / "theirs.onnx")
    onnx.save(model, path)

    got = load_onnx_weights(path)
    assert list(got) == [t.name for t in inits]
    np.testing.assert_array_equal(got["raw_f32"].numpy(), a)
    np.testing.assert_array_equal(got["raw_f16"].numpy(), h)
    assert got["raw_f16"].dtype == DType.float16
    np.testing.assert_array_equal(got["typed_f32"].numpy(), a.ravel()[:6].reshape(2, 3))
    np.testing.assert_array_equal(got["typed_f16"].numpy(), h)
    assert got["typed_f16"].dtype == DType.float16
    for name in ("typed_bf16", "raw_bf16"):
        ref = numpy_helper.to_array(next(t for t in inits if t.name == name))
        assert got[name].dtype == DType.bfloat16
        assert got[name].storage().tobytes() == ref.view(np.uint16).tobytes()
    assert got["scalar"].shape.dims == []
    assert float(got["scalar"].numpy()) == 2.5


def test_onnx_rewrite_of_our_file_still_loads(tmp_path):
    """onnx re-serializes in field-number order (graph before opset_import); we read both."""
    onnx = pytest.importorskip("onnx")
    weights = _sample_weights()
    path = str(tmp_path / "w.onnx")
    save_onnx_weights(path, weights)
    again = str(tmp_path / "again.onnx")
    onnx.save(onnx.load(path), again)
    _assert_same(load_onnx_weights(again), weights)
