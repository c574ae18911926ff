"""The protobuf wire format's encoders (varints and fields), shared by the ONNX weights
writer of the Python API (`frontends/api/onnx_weights.py`) and the `.kyn` exporter
(`frontends/kyn/export.py`): ONNX files are protobuf messages, written here without the protobuf
library."""

from __future__ import annotations

#: Wire types of the two kinds of field written here.
VARINT, LEN = 0, 2


def varint(value: int) -> bytes:
    """The base-128 varint encoding of a non-negative integer."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def varint_field(field: int, value: int) -> bytes:
    """Field `field` holding the integer `value` (wire type VARINT)."""
    return varint(field << 3 | VARINT) + varint(value)


def len_field(field: int, payload: bytes) -> bytes:
    """Field `field` holding the bytes `payload` (wire type LEN: its length, then it)."""
    return varint(field << 3 | LEN) + varint(len(payload)) + payload
