"""ONNX weight exchange: save and load named float tensors as an ONNX ModelProto.

The protobuf wire format is written and read by hand so that the API has no runtime
dependency (the `onnx` package is only a test oracle). The file is one serialized
ModelProto laid out exactly as the API sheet (section 6) prescribes:

- field 1 ``ir_version`` = 8;
- field 8 ``opset_import`` = {1 ``domain``: "" (written explicitly), 2 ``version``: 13};
- field 7 ``graph`` = {2 ``name``: "frame_weights", 5 ``initializer``: one per tensor, in order}.

Each initializer (TensorProto) holds field 1 ``dims`` (one varint each, not packed), field 2
``data_type`` (FLOAT=1, FLOAT16=10, BFLOAT16=16), field 8 ``name`` and field 9 ``raw_data``
(row-major little-endian bytes). The loader is more lenient than the writer: it also accepts
packed dims and the typed ``float_data`` / ``int32_data`` fields, which other writers (the
``onnx`` helpers among them) produce.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping

import numpy as np

from frame_mlir.fileio import open_regular
from frame_mlir.frontends.api.tensor import STORAGE, DType, Tensor
from frame_mlir.protobuf import len_field as _len_field
from frame_mlir.protobuf import varint_field as _varint_field

__all__ = ["load_onnx_weights", "save_onnx_weights"]

#: ModelProto constants written by save_onnx_weights.
IR_VERSION = 8
OPSET_VERSION = 13
GRAPH_NAME = "frame_weights"

#: ONNX TensorProto.DataType codes of the supported dtypes, with the little-endian numpy
#: dtype of their raw_data (bf16 is moved as raw 16-bit patterns, like Tensor storage).
_ONNX_TYPE: dict[DType, int] = {DType.float32: 1, DType.float16: 10, DType.bfloat16: 16}
_DTYPE_OF_ONNX: dict[int, DType] = {code: dt for dt, code in _ONNX_TYPE.items()}
_RAW_DTYPE: dict[DType, np.dtype] = {
    DType.float32: np.dtype("<f4"),
    DType.float16: np.dtype("<f2"),
    DType.bfloat16: np.dtype("<u2"),
}
#: Names of the other ONNX data types, only to make the "unsupported" message readable.
_ONNX_TYPE_NAMES: dict[int, str] = {
    0: "UNDEFINED", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
    8: "STRING", 9: "BOOL", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
    15: "COMPLEX128",
}

# Wire types of the protobuf encoding.
_VARINT, _FIXED64, _LEN, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
_MASK64 = (1 << 64) - 1
_MAX_FIELD = (1 << 29) - 1


# --------------------------------------------------------------------------- encoding


def _check_path(path: object, who: str) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"{who}: path must be a str, found {type(path).__name__}")
    return path


def _encode_tensor(name: object, tensor: object) -> bytes:
    """One TensorProto, validating the entry first."""
    if not isinstance(name, str):
        raise TypeError(f"save_onnx_weights: weight names must be str, found "
                        f"{type(name).__name__}")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"save_onnx_weights: weight '{name}' must be a Tensor, found "
                        f"{type(tensor).__name__}")
    # onnx.checker rejects unnamed initializers, and the file must stay onnx-readable.
    if not name:
        raise ValueError("save_onnx_weights: weight names must be non-empty")
    try:
        name_bytes = name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"save_onnx_weights: weight name {name!r} is not valid UTF-8") from e
    if tensor.device.backend != "cpu":
        raise ValueError(f"save_onnx_weights: weight '{name}' is on {tensor.device.backend}; "
                         f"only cpu tensors can be saved (use tensor.to('cpu'))")
    if tensor.dtype not in _ONNX_TYPE:
        raise ValueError(f"save_onnx_weights: weight '{name}' has unsupported dtype "
                         f"{tensor.dtype.name}; expected float32, float16 or bfloat16")
    storage = tensor.storage()
    raw = storage.astype(_RAW_DTYPE[tensor.dtype], copy=False).tobytes(order="C")
    parts = [_varint_field(1, d) for d in storage.shape]
    parts.append(_varint_field(2, _ONNX_TYPE[tensor.dtype]))
    parts.append(_len_field(8, name_bytes))
    parts.append(_len_field(9, raw))
    return b"".join(parts)


def save_onnx_weights(path: str, weights: dict[str, Tensor]) -> None:
    """Write `weights` to `path` as an ONNX model whose graph holds only initializers, in
    dict order (no `onnx` package needed; `onnx.checker` accepts the file).

    Args:
        path: the file to write.
        weights: name -> cpu Tensor of float32, float16 or bfloat16 (ValueError
            otherwise; all entries are validated before the file is touched).

    A path that cannot be opened for writing gives ValueError, a failed write
    RuntimeError. Shapes, dtypes and values round-trip exactly.

    Example:
        >>> import os, tempfile, numpy as np, frame
        >>> path = os.path.join(tempfile.mkdtemp(), "w.onnx")
        >>> frame.save_onnx_weights(path, {"w": frame.from_numpy(np.ones((2, 3), np.float32))})
        >>> frame.load_onnx_weights(path)["w"].shape
        Shape([2, 3])
    """
    path = _check_path(path, "save_onnx_weights")
    if not isinstance(weights, Mapping):
        raise TypeError(f"save_onnx_weights: weights must be a dict[str, Tensor], found "
                        f"{type(weights).__name__}")
    graph = [_len_field(2, GRAPH_NAME.encode("ascii"))]
    graph += [_len_field(5, _encode_tensor(name, t)) for name, t in weights.items()]
    opset = _len_field(1, b"") + _varint_field(2, OPSET_VERSION)
    model = b"".join([
        _varint_field(1, IR_VERSION),
        _len_field(8, opset),
        _len_field(7, b"".join(graph)),
    ])
    try:
        f = open(path, "wb")  # not `with open`: open and write errors differ
    except OSError as e:
        raise ValueError(f"save_onnx_weights: cannot open '{path}' for writing: "
                         f"{e.strerror or e}") from e
    try:
        # close() is inside the try: a buffered write may only fail when flushed.
        with f:
            f.write(model)
    except OSError as e:
        raise RuntimeError(f"save_onnx_weights: writing '{path}' failed: {e.strerror or e}") from e


# --------------------------------------------------------------------------- decoding


def _bad(message: str) -> ValueError:
    return ValueError(f"load_onnx_weights: {message}")


def _read_varint(buf: memoryview, pos: int, where: str) -> tuple[int, int]:
    """(value, next position) of the varint at `pos`, as an unsigned 64-bit integer."""
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise _bad(f"truncated varint in {where}")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise _bad(f"varint longer than 10 bytes in {where}")


def _signed64(value: int) -> int:
    """The int64 (two's complement) reading of an unsigned 64-bit varint value."""
    return value - (1 << 64) if value >> 63 else value


def _fields(buf: memoryview, where: str) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) of each field of a message: an int for varints, the
    payload bytes for the other wire types. Group wire types are refused (protobuf groups
    are deprecated and no ONNX writer emits them)."""
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos, where)
        field, wire = key >> 3, key & 7
        if wire in (_START_GROUP, _END_GROUP):
            raise NotImplementedError(
                f"load_onnx_weights: group wire type {wire} (field {field}) in {where} is not "
                f"supported")
        if field == 0 or field > _MAX_FIELD:
            raise _bad(f"invalid field number {field} in {where}")
        if wire == _VARINT:
            value, pos = _read_varint(buf, pos, where)
            yield field, wire, value
            continue
        if wire == _LEN:
            size, pos = _read_varint(buf, pos, where)
        elif wire == _FIXED64:
            size = 8
        elif wire == _FIXED32:
            size = 4
        else:
            raise _bad(f"invalid wire type {wire} (field {field}) in {where}")
        if size > len(buf) - pos:
            raise _bad(f"truncated field {field} in {where}: needs {size} bytes, "
                       f"{len(buf) - pos} left")
        yield field, wire, buf[pos:pos + size]
        pos += size


def _expect(wire: int, want: int, where: str) -> None:
    if wire != want:
        raise _bad(f"{where} has wire type {wire}, expected {want}")


def _packed_varints(payload: memoryview, where: str) -> list[int]:
    out = []
    pos = 0
    while pos < len(payload):
        value, pos = _read_varint(payload, pos, where)
        out.append(value)
    return out


def _decode_tensor(buf: memoryview, index: int) -> tuple[str, Tensor]:
    """(name, cpu Tensor) of one serialized TensorProto."""
    where = f"initializer {index}"
    dims: list[int] = []
    data_type = 0
    name: str | None = None
    raw: memoryview | None = None
    float_data: list[bytes] = []
    int32_data: list[int] = []
    for field, wire, value in _fields(buf, where):
        if field == 1:  # dims: int64, packed or not
            if wire == _VARINT:
                dims.append(_signed64(value))
            else:
                _expect(wire, _LEN, f"{where} dims")
                dims += [_signed64(v) for v in _packed_varints(value, f"{where} dims")]
        elif field == 2:
            _expect(wire, _VARINT, f"{where} data_type")
            data_type = _signed64(value)
        elif field == 8:
            _expect(wire, _LEN, f"{where} name")
            try:
                name = bytes(value).decode("utf-8")
            except UnicodeDecodeError as e:
                raise _bad(f"{where} name is not valid UTF-8") from e
        elif field == 9:
            _expect(wire, _LEN, f"{where} raw_data")
            raw = value
        elif field == 4:  # float_data: repeated float, packed (LEN) or not (FIXED32)
            if wire not in (_LEN, _FIXED32):
                _expect(wire, _LEN, f"{where} float_data")
            if len(value) % 4:
                raise _bad(f"{where} float_data length {len(value)} is not a multiple of 4")
            float_data.append(bytes(value))
        elif field == 5:  # int32_data: repeated int32, packed (LEN) or not (VARINT)
            if wire == _VARINT:
                int32_data.append(value)
            else:
                _expect(wire, _LEN, f"{where} int32_data")
                int32_data += _packed_varints(value, f"{where} int32_data")
        elif field in (13, 14):  # external_data / data_location
            if field == 13 or (wire == _VARINT and value != 0):
                raise _bad(f"{where} uses external data, which is not supported")
    if name is None:
        raise _bad(f"{where} has no name")
    label = f"{where} ('{name}')"
    if data_type not in _DTYPE_OF_ONNX:
        type_name = _ONNX_TYPE_NAMES.get(data_type, "unknown")
        raise _bad(f"{label} has unsupported data_type {data_type} ({type_name}); expected "
                   f"FLOAT (1), FLOAT16 (10) or BFLOAT16 (16)")
    dtype = _DTYPE_OF_ONNX[data_type]
    if any(d < 0 for d in dims):
        raise _bad(f"{label} has a negative dimension in {dims}")
    count = math.prod(dims)
    # The typed field that can carry this dtype (ONNX keeps 16-bit floats in int32_data).
    typed_present = bool(float_data) if dtype == DType.float32 else bool(int32_data)
    wrong_typed = bool(int32_data) if dtype == DType.float32 else bool(float_data)
    if wrong_typed:
        wrong = "int32_data" if dtype == DType.float32 else "float_data"
        raise _bad(f"{label}: {wrong} cannot hold {dtype.name} values")
    if raw is not None and typed_present:
        raise _bad(f"{label} has both raw_data and typed data")
    if raw is not None:
        itemsize = _RAW_DTYPE[dtype].itemsize
        if len(raw) != count * itemsize:
            raise _bad(f"{label} raw_data has {len(raw)} bytes, expected {count * itemsize} "
                       f"for shape {dims} and {dtype.name}")
        flat = np.frombuffer(raw, dtype=_RAW_DTYPE[dtype])
    elif dtype == DType.float32:
        blob = b"".join(float_data)
        if len(blob) != count * 4:
            raise _bad(f"{label} float_data has {len(blob) // 4} values, expected {count}")
        flat = np.frombuffer(blob, dtype="<f4")
    else:
        if len(int32_data) != count:
            raise _bad(f"{label} int32_data has {len(int32_data)} values, expected {count}")
        # Each int32 holds one 16-bit pattern; negative writers' sign extension is dropped.
        bits = np.array([v & 0xFFFF for v in int32_data], dtype=np.uint16)
        flat = bits.view(_RAW_DTYPE[dtype])  # reinterpret the patterns, don't convert values
    # astype copies, so the tensor owns its data rather than a view of the file buffer.
    storage = flat.astype(STORAGE[dtype]).reshape(dims)
    return name, Tensor._own(storage, dtype)


def _decode_model(data: bytes) -> dict[str, Tensor]:
    buf = memoryview(data)
    graph_parts: list[memoryview] = []
    for field, wire, value in _fields(buf, "ModelProto"):
        if field == 7:
            _expect(wire, _LEN, "ModelProto graph")
            graph_parts.append(value)
    if not graph_parts:
        raise _bad("the file has no graph (ModelProto field 7)")
    # Protobuf merges repeated occurrences of a message field, which is exactly parsing
    # their concatenation; the usual single graph is parsed in place, without a copy.
    graph = graph_parts[0] if len(graph_parts) == 1 else memoryview(b"".join(graph_parts))
    initializers: list[memoryview] = []
    for field, wire, value in _fields(graph, "GraphProto"):
        if field == 5:
            _expect(wire, _LEN, "GraphProto initializer")
            initializers.append(value)
    result: dict[str, Tensor] = {}
    for index, payload in enumerate(initializers):
        name, tensor = _decode_tensor(payload, index)
        if name in result:
            raise _bad(f"duplicate initializer name '{name}'")
        result[name] = tensor
    return result


def load_onnx_weights(path: str) -> dict[str, Tensor]:
    """The initializers of the ONNX model at `path`, as cpu tensors in file order.

    Args:
        path: the file to read. A missing file gives KeyError.

    Malformed content (truncated data, invalid wire types, no graph, an unsupported
    data_type, ...) gives ValueError; protobuf group wire types NotImplementedError.
    Unknown fields are skipped.

    Example:
        >>> import os, tempfile, numpy as np, frame
        >>> path = os.path.join(tempfile.mkdtemp(), "w.onnx")
        >>> frame.save_onnx_weights(path, {"b": frame.from_numpy(np.zeros(4, np.float16))})
        >>> {name: (t.shape.dims, t.dtype.name) for name, t in frame.load_onnx_weights(path).items()}
        {'b': ([4], 'float16')}
    """
    path = _check_path(path, "load_onnx_weights")
    try:  # a device, FIFO or folder is refused unread (ValueError below)
        f = open_regular(path)  # not `with open`: open and read errors differ
    except FileNotFoundError as e:
        raise KeyError(f"load_onnx_weights: no such file: '{path}'") from e
    except OSError as e:
        raise ValueError(f"load_onnx_weights: cannot open '{path}' for reading: "
                         f"{e.strerror or e}") from e
    try:
        with f:
            data = f.read()
    except OSError as e:
        raise RuntimeError(f"load_onnx_weights: reading '{path}' failed: {e.strerror or e}") from e
    return _decode_model(data)
