"""Host-side values of the Python API: DType, Shape, Device and Tensor.

A Tensor owns its data (a private, C-contiguous numpy array) and is immutable from
Python; every API that returns one returns a fresh copy, so tensors never alias each
other or a compiled executable's buffers. bfloat16 has no numpy dtype: its data is
kept as the raw 16-bit patterns (numpy uint16), and `numpy()` refuses it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import numpy as np

__all__ = ["BACKENDS", "DType", "Device", "Shape", "Tensor", "check_backend", "from_numpy"]


class DType(enum.IntEnum):
    """Element types (values are the frame API's, with gaps reserved)."""

    float32 = 0
    float16 = 2
    bfloat16 = 3
    int32 = 6
    int64 = 7

    @property
    def is_float(self) -> bool:
        return self in (DType.float32, DType.float16, DType.bfloat16)


#: numpy storage dtype of each DType (bf16 is stored as its raw 16-bit patterns).
STORAGE: dict[DType, np.dtype] = {
    DType.float32: np.dtype(np.float32),
    DType.float16: np.dtype(np.float16),
    DType.bfloat16: np.dtype(np.uint16),
    DType.int32: np.dtype(np.int32),
    DType.int64: np.dtype(np.int64),
}

#: Backends a Device / graph / executable may name. "cuda" is registered only when the
#: whole CUDA path works (it does not yet), so naming it raises KeyError.
BACKENDS: tuple[str, ...] = ("cpu",)


def check_backend(backend: str) -> str:
    """`backend` if registered, else KeyError naming the known ones."""
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a str, found {type(backend).__name__}")
    if backend not in BACKENDS:
        raise KeyError(f"unknown backend '{backend}' (registered: {', '.join(BACKENDS)})")
    return backend


class Shape:
    """A static shape; `.dims` is a fresh list[int]."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Sequence[int]):
        self._dims = tuple(int(d) for d in dims)

    @property
    def dims(self) -> list[int]:
        return list(self._dims)

    def __repr__(self) -> str:
        return "Shape([" + ", ".join(str(d) for d in self._dims) + "])"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self._dims == other._dims
        if isinstance(other, list | tuple):
            return list(self._dims) == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._dims)


class Device:
    """A backend name and a device index (the index is not validated)."""

    __slots__ = ("_backend", "_index")

    def __init__(self, backend: str, index: int = 0):
        self._backend = check_backend(backend)
        self._index = int(index)

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def index(self) -> int:
        return self._index

    def __repr__(self) -> str:
        return f"Device({self._backend!r}, {self._index})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and other._backend == self._backend
                and other._index == self._index)

    def __hash__(self) -> int:
        return hash((self._backend, self._index))


_TOKEN = object()


class Tensor:
    """A runtime value owning its data. Obtained from from_numpy, Executable.run,
    Tensor.to, the DataLoader and load_onnx_weights; there is no public constructor."""

    __slots__ = ("_data", "_dtype", "_device")

    def __init__(self, *args: object, **kwargs: object):
        raise TypeError("Tensor has no public constructor; use from_numpy(array)")

    @classmethod
    def _own(cls, data: np.ndarray, dtype: DType, device: Device | None = None) -> Tensor:
        """Wrap `data` (which the caller gives up) without copying."""
        t = object.__new__(cls)
        if data.dtype != STORAGE[dtype] or not data.flags.c_contiguous:
            data = np.ascontiguousarray(data, dtype=STORAGE[dtype])
        data.flags.writeable = False
        t._data = data
        t._dtype = DType(dtype)
        t._device = device or Device("cpu", 0)
        return t

    @property
    def shape(self) -> Shape:
        return Shape(self._data.shape)

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    def numpy(self) -> np.ndarray:
        """A new, writable, C-contiguous copy of the data."""
        if self._dtype == DType.bfloat16:
            raise NotImplementedError("bfloat16 tensor has no numpy representation")
        return np.array(self._data, order="C", copy=True)

    def to(self, backend: str) -> Tensor:
        """An independent copy on device 0 of `backend`."""
        device = Device(backend, 0)
        return Tensor._own(self._data.copy(), self._dtype, device)

    def storage(self) -> np.ndarray:
        """The read-only storage array (bf16 as uint16 bit patterns); for the runtime."""
        return self._data

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape.dims}, dtype={self._dtype.name}, device={self._device})"


def dtype_of_numpy(dtype: np.dtype) -> DType:
    """The DType of a numpy dtype, by kind and itemsize."""
    key = (dtype.kind, dtype.itemsize)
    table = {("f", 4): DType.float32, ("f", 2): DType.float16,
             ("i", 4): DType.int32, ("i", 8): DType.int64}
    if key not in table:
        raise ValueError(f"from_numpy: unsupported numpy dtype (kind '{dtype.kind}', itemsize "
                         f"{dtype.itemsize}); expected float32, float16, int32 or int64")
    return table[key]


def from_numpy(array: np.ndarray) -> Tensor:
    """Copy a C-contiguous numpy array into a new cpu tensor."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, found {type(array).__name__}")
    if not array.flags.c_contiguous:
        raise ValueError("from_numpy: the array must be C-contiguous (use np.ascontiguousarray)")
    dtype = dtype_of_numpy(array.dtype)
    return Tensor._own(array.copy(), dtype)


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 values -> bfloat16 bit patterns, rounding to nearest even; every NaN
    becomes the quiet NaN 0x7fc0. The same rounding as compiled code (`arith-expand-bf16`)
    and as PyTorch's `torch.bfloat16`."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded).astype(np.uint16)


def bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns -> float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
