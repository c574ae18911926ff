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
    """Element types, an IntEnum: float32 = 0, float16 = 2, bfloat16 = 3, int32 = 6,
    int64 = 7 (1, 4 and 5 are reserved for float64, int8 and int16).

    Arithmetic exists for the three float types (16-bit ones compute in float32 and round
    at every op boundary); int32/int64 serve as indices, constants and numpy round trips.

    Example:
        >>> import frame
        >>> int(frame.DType.bfloat16), frame.DType(0)
        (3, <DType.float32: 0>)
    """

    float32 = 0
    float16 = 2
    bfloat16 = 3
    int32 = 6
    int64 = 7

    @property
    def is_float(self) -> bool:
        """Whether this is float32, float16 or bfloat16."""
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
    """A static shape. `.dims` is a fresh `list[int]`; a Shape compares equal to a list or
    tuple of the same dims.

    Args:
        dims: the dims (ints).

    Example:
        >>> import frame
        >>> s = frame._core.Shape([2, 3, 4])
        >>> s, s.dims, s == [2, 3, 4]
        (Shape([2, 3, 4]), [2, 3, 4], True)
    """

    __slots__ = ("_dims",)

    def __init__(self, dims: Sequence[int]):
        self._dims = tuple(int(d) for d in dims)

    @property
    def dims(self) -> list[int]:
        """The dims as a new `list[int]` (`[]` for rank 0)."""
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
    """A backend name and a device index.

    Args:
        backend: a registered backend name ("cpu"); another name is a KeyError ("cuda"
            too, until a CUDA backend exists).
        index: the device index (not validated).

    Example:
        >>> import frame
        >>> d = frame._core.Device("cpu")
        >>> d.backend, d.index
        ('cpu', 0)
    """

    __slots__ = ("_backend", "_index")

    def __init__(self, backend: str, index: int = 0):
        self._backend = check_backend(backend)
        self._index = int(index)

    @property
    def backend(self) -> str:
        """The backend name, e.g. "cpu"."""
        return self._backend

    @property
    def index(self) -> int:
        """The device index (0 for every tensor the API creates)."""
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
    """A runtime value owning its data (immutable from Python). There is no public
    constructor (TypeError): tensors come from `from_numpy`, `Executable.run`,
    `Tensor.to`, the DataLoader and `load_onnx_weights`, and never alias one another.

    Example:
        >>> import numpy as np, frame
        >>> t = frame.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        >>> t.shape, t.dtype, t.device
        (Shape([2, 3]), <DType.float32: 0>, Device('cpu', 0))
    """

    # `_note`: why this tensor may not fit a compiled graph (a DataLoader's short last
    # batch); Executable.run adds it to its shape error.
    __slots__ = ("_data", "_dtype", "_device", "_note")

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
        t._note = None
        return t

    @property
    def shape(self) -> Shape:
        """The static shape (a Shape)."""
        return Shape(self._data.shape)

    @property
    def dtype(self) -> DType:
        """The element type (a DType)."""
        return self._dtype

    @property
    def device(self) -> Device:
        """The Device (backend, index 0) holding the data."""
        return self._device

    def numpy(self) -> np.ndarray:
        """A new, writable, C-contiguous numpy copy (float32, float16, int32 or int64; a rank-0
        tensor gives a 0-d array). A bfloat16 tensor has no numpy representation
        (NotImplementedError): convert it first with `.to(DType.float32)`.

        Example:
            >>> import numpy as np, frame
            >>> frame.from_numpy(np.array([1, 2], np.int64)).numpy()
            array([1, 2])
        """
        if self._dtype == DType.bfloat16:
            raise NotImplementedError("bfloat16 tensor has no numpy representation")
        return np.array(self._data, order="C", copy=True)

    def to(self, backend: str | DType | None = None, dtype: DType | None = None) -> Tensor:
        """An independent copy, on device 0 of `backend` and/or converted to `dtype`.

        Like ``torch.Tensor.to``: ``t.to("cpu")`` moves (here: copies), ``t.to(DType.float16)``
        converts, ``t.to("cpu", DType.bfloat16)`` does both; a DType may also be given
        as the first argument. The result is a new tensor even when nothing changes.

        Conversions (numerics as PyTorch's ``.to``):

        - between float32, float16 and bfloat16: exact when widening; narrowing rounds to
          nearest, ties to even, overflowing to +-inf (every NaN stays a NaN; a bf16 NaN
          is the quiet NaN 0x7fc0);
        - int32/int64 -> float: rounded to nearest even through float32, as PyTorch does;
        - float -> int32/int64: truncated toward zero; a NaN, an infinity or a value
          outside the integer range is a ValueError (PyTorch leaves it undefined);
        - int64 -> int32: wraps modulo 2^32, as PyTorch does.

        Shapes: unchanged, `[*s] -> [*s]`.

        Example:
            >>> import numpy as np, frame
            >>> t = frame.from_numpy(np.array([1.0, 1.0009765625, 65520.0], np.float32))
            >>> h = t.to(frame.DType.float16)
            >>> h.dtype, h.numpy().tolist()
            (<DType.float16: 2>, [1.0, 1.0009765625, inf])
            >>> t.to(dtype=frame.DType.bfloat16).to(frame.DType.float32).numpy().tolist()
            [1.0, 1.0, 65536.0]
        """
        if isinstance(backend, DType):
            if dtype is not None:
                raise TypeError("Tensor.to: dtype given twice (positionally and as dtype=)")
            backend, dtype = None, backend
        if backend is None and dtype is None:
            raise TypeError("Tensor.to: expected a backend name (str), a DType, or both")
        device = self._device if backend is None else Device(backend, 0)
        if dtype is None:
            return Tensor._own(self._data.copy(), self._dtype, device)
        if not isinstance(dtype, DType):
            raise TypeError(f"Tensor.to: dtype must be a DType, found {type(dtype).__name__}")
        return Tensor._own(convert(self._data, self._dtype, dtype), dtype, device)

    def storage(self) -> np.ndarray:
        """The read-only storage array (bf16 as uint16 bit patterns); for the runtime,
        not part of the frame API."""
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
    """Copy a numpy array into a new cpu Tensor (later changes to the array do not affect it).

    Args:
        array: a C-contiguous array (else ValueError "C-contiguous") of float32, float16,
            int32 or int64 (else ValueError "unsupported numpy dtype"; convert float64 with
            `.astype(np.float32)`).

    Shapes: the array's shape.

    Example:
        >>> import numpy as np, frame
        >>> t = frame.from_numpy(np.zeros((2, 3), np.float16))
        >>> t.shape.dims, t.dtype
        ([2, 3], <DType.float16: 2>)
    """
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


_INT_RANGE = {DType.int32: (-(2**31), 2**31 - 1), DType.int64: (-(2**63), 2**63 - 1)}


def convert(data: np.ndarray, source: DType, target: DType) -> np.ndarray:
    """Storage `data` of dtype `source` as fresh storage of dtype `target`, with
    PyTorch's ``.to`` numerics (see Tensor.to); ValueError where PyTorch's result is
    undefined (float -> int of a NaN, an infinity or an out-of-range value)."""
    if source == target:
        return data.copy()
    if source.is_float:
        # Every float storage widens exactly to float32 (bf16 by a 16-bit shift).
        wide = np.asarray(bf16_to_float32(data)).reshape(data.shape) \
            if source == DType.bfloat16 else data.astype(np.float32)  # (rank 0 stays rank 0)
    else:
        if not target.is_float:  # int64 -> int32 wraps (two's complement), as torch's
            return data.astype(STORAGE[target])
        # int -> float rounds once to float32 first: PyTorch converts through float too
        # (static_cast<float>, then c10::Half / c10::BFloat16 from that float).
        wide = data.astype(np.float32)
    if target == DType.bfloat16:
        return bf16_bits(wide).reshape(data.shape)  # bf16_bits makes rank 0 rank 1
    if target.is_float:
        with np.errstate(over="ignore"):  # overflowing to +-inf is the defined result
            return wide.astype(STORAGE[target])  # numpy's f32 -> f16: nearest, ties even
    lo, hi = _INT_RANGE[target]
    values = wide.astype(np.float64)  # exact: every float32 is a float64
    # The bounds as floats: lo and hi + 1 are powers of two, so exact (hi itself, 2^63 - 1,
    # would round up to 2^63 and let 2^63 through).
    bad = ~np.isfinite(values) | (np.trunc(values) < float(lo)) | \
        (np.trunc(values) >= float(hi + 1))
    if np.any(bad):
        first = values[bad].reshape(-1)[0]
        raise ValueError(f"Tensor.to: {source.name} -> {target.name} expected finite values "
                         f"in [{lo}, {hi}] after truncation, found {first!r}")
    return np.trunc(values).astype(STORAGE[target])
