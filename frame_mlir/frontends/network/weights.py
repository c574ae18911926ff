"""Weight files of the JSON network format: dlprimitives ``.dlp``, HDF5 and numpy ``.npz``.

A weight file maps parameter names (dlprimitives' default names are ``<operator>.<index>``,
e.g. ``fc1.0``; README "Parameters: layout, default names") to float32 tensors. Three
containers are understood; the facts about the first two are those of the reference
implementation as recorded in ``/work/shared/dlprim/README.md``, section "Weight files
(src/net.cpp)", so files written here load in dlprimitives and vice versa:

``.dlp`` -- dlprimitives' own format (``Net::save_parameters`` / ``load_parameters``,
    also written by ``tools/onnx2dp.py`` ``make_dlp``)::

        b"DLPW"                          4 bytes of magic
        L                                uint32, BIG-endian: length of the header
        header                           L bytes of UTF-8 JSON:
            {"tensors": {name: {"dtype": "float", "shape": [...],
                                "size": nbytes, "start": offset}}}
        data                             raw little-endian tensor data

    ``start`` counts from the first byte after the header; the writer stores the tensors
    contiguously in name-sorted order (so the first ``start`` is 0 and each next one is the
    previous ``start + size``). The loader rejects headers over 64 MiB, checks that every
    tensor's ``[start, start + size)`` lies inside the data, that no two tensors'
    ranges overlap, and that ``size`` is ``4 * prod(shape)``, and only accepts dtype
    ``"float"`` (float32).

``.h5`` / ``.hdf5`` -- HDF5 (``save_parameters_to_hdf5`` / ``load_parameters_from_hdf5``):
    one float32 dataset per parameter in the root group, named by the parameter name
    (dots in names are fine in HDF5), dataset shape = tensor shape. Needs :mod:`h5py`.

``.npz`` -- a numpy archive as :func:`numpy.savez` writes it (an uncompressed zip of
    ``<name>.npy`` members), keys = exactly the parameter names, read with
    ``np.load(path, allow_pickle=False)``. Not a dlprimitives format; a convenience for
    Python tooling.

:func:`save_weights` picks the container by the file suffix and writes atomically (a
temporary file in the same folder, then :func:`os.replace`). :func:`load_weights` picks it
by the magic bytes, like dlprimitives' ``load_parameters`` (``DLPW``, ``\\x89HDF``, and
``PK`` for the zip of an npz), whatever the suffix. Tensors always come back as owned,
C-contiguous float32 arrays. Given the network's parameter specs, the loader checks the
file against them (like dlprimitives: each parameter present unless ``allow_missing``,
equal shape) and also reports tensors the network does not have; every problem of a file
is collected and raised together in one :class:`WeightsError`, one problem per line.
"""

from __future__ import annotations

import json
import math
import os
import struct
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frame_mlir.fileio import atomic_write, open_regular

__all__ = ["WeightsError", "load_weights", "save_weights"]

DLP_MAGIC = b"DLPW"
"""The first four bytes of a dlprimitives ``.dlp`` weight file."""
HDF5_MAGIC = b"\x89HDF"
"""The first four bytes of an HDF5 file (without a user block)."""
ZIP_MAGIC = b"PK"
"""The first two bytes of a zip archive (what an ``.npz`` file is)."""
MAX_DLP_HEADER = 64 * 1024 * 1024
"""dlprimitives rejects ``.dlp`` headers longer than this (64 MiB)."""

_SUFFIX_FORMATS = {".dlp": "dlp", ".h5": "hdf5", ".hdf5": "hdf5", ".npz": "npz"}
_ACCEPTED_SUFFIXES = "'.dlp' (dlprimitives), '.h5' or '.hdf5' (HDF5), '.npz' (numpy)"
_H5PY_MISSING = "reading/writing HDF5 weights needs h5py: pip install h5py"

PathLike = str | os.PathLike[str]
ExpectedSpecs = Mapping[str, tuple[tuple[int, ...], Any]]


class WeightsError(ValueError):
    """A weight file cannot be written, read, or does not fit the network.

    The message names the file and lists every problem found, one per line.

    Attributes:
        path: the weight file concerned.
        problems: the individual problems, each a self-contained line.
    """

    def __init__(self, path: PathLike, problems: Sequence[str]) -> None:
        self.path = os.fspath(path)
        self.problems = tuple(problems)
        if len(self.problems) == 1:
            message = f"{self.path}: {self.problems[0]}"
        else:
            lines = "\n".join(f"  {p}" for p in self.problems)
            message = f"{self.path}: {len(self.problems)} problems with the weights:\n{lines}"
        super().__init__(message)


# ----------------------------------------------------------------------------- helpers


def _shape_str(shape: Sequence[int]) -> str:
    """``[256, 64]``: a shape as the messages (and dlprimitives' JSON) write it."""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _os_reason(exc: OSError) -> str:
    """The operating system's reason of an :class:`OSError`, without the repeated path."""
    return exc.strerror or str(exc)


def _import_h5py(path: PathLike) -> Any:
    """Import :mod:`h5py` or raise the :class:`WeightsError` that says how to get it."""
    try:
        import h5py
    except ImportError as exc:
        raise WeightsError(path, [_H5PY_MISSING]) from exc
    return h5py


def _to_float32(name: str, value: Any) -> tuple[np.ndarray | None, str | None]:
    """Convert one tensor to an owned, C-contiguous float32 array, or explain why not.

    Real numbers (float, signed and unsigned integer dtypes) are accepted and cast; anything
    else (bool, complex, strings, objects) is a problem.
    """
    try:
        arr = np.asarray(value)
    except Exception as exc:  # an arbitrary object that numpy cannot turn into an array
        return None, f"{name}: not an array ({type(value).__name__}: {exc})"
    if arr.dtype.kind not in "fiu":
        return None, (
            f"{name}: dtype {arr.dtype} is not supported "
            "(weights are real numbers, stored as float32)"
        )
    return np.array(arr, dtype=np.float32, order="C", copy=True), None


# ----------------------------------------------------------------------------- saving


def save_weights(path: str | Path, params: Mapping[str, np.ndarray]) -> None:
    """Write ``params`` to ``path``; the container follows the suffix.

    ``.dlp`` writes a dlprimitives DLPW file, ``.h5``/``.hdf5`` an HDF5 file (needs
    :mod:`h5py`), ``.npz`` a numpy archive (the layout :func:`numpy.savez` writes, keys
    exactly the parameter names, no pickle). The suffix is matched case-insensitively.
    Tensors are stored as float32 (real-valued arrays of other dtypes are cast). The file
    is written to a temporary file in the same folder and moved into place with
    :func:`os.replace`, so readers never see a partial file and a failed write leaves an
    existing file untouched.

    Raises:
        WeightsError: unknown suffix, an invalid name or tensor (all listed), or the file
            cannot be written (with the OS reason).
    """
    fmt = _SUFFIX_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise WeightsError(
            path,
            [
                f"cannot tell the weight format from the suffix {Path(path).suffix!r}: "
                f"use {_ACCEPTED_SUFFIXES}"
            ],
        )

    problems: list[str] = []
    tensors: dict[str, np.ndarray] = {}
    for name in sorted(params, key=lambda n: n if isinstance(n, str) else ""):
        if not isinstance(name, str):
            problems.append(f"parameter name {name!r} is not a string")
            continue
        if not name:
            problems.append("a parameter has an empty name")
            continue
        if fmt == "hdf5" and ("/" in name or name == "."):
            problems.append(
                f"{name}: the name cannot be an HDF5 dataset name of the root group "
                "('/' separates groups)"
            )
            continue
        arr, problem = _to_float32(name, params[name])
        if problem is not None:
            problems.append(problem)
            continue
        assert arr is not None
        tensors[name] = arr
    if problems:
        raise WeightsError(path, problems)

    writer: Callable[[str], None]
    if fmt == "dlp":
        blob = _dlp_bytes(tensors)

        def writer(tmp: str) -> None:
            with open(tmp, "wb") as fh:
                fh.write(blob)

    elif fmt == "npz":

        def writer(tmp: str) -> None:
            _write_npz(tmp, tensors)

    else:
        h5py = _import_h5py(path)

        def writer(tmp: str) -> None:
            with h5py.File(tmp, "w") as fh:
                for name, arr in tensors.items():
                    fh.create_dataset(name, data=arr, dtype=np.float32)

    _atomic_write(path, writer)


def _dlp_bytes(tensors: Mapping[str, np.ndarray]) -> bytes:
    """The bytes of a DLPW file holding ``tensors`` (float32), stored in name-sorted order."""
    entries: dict[str, dict[str, Any]] = {}
    chunks: list[bytes] = []
    offset = 0
    for name in sorted(tensors):  # code-point order == UTF-8 byte order (C++ std::map)
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        entries[name] = {
            "dtype": "float",
            "shape": [int(d) for d in tensors[name].shape],
            "size": len(data),
            "start": offset,
        }
        chunks.append(data)
        offset += len(data)
    header = json.dumps({"tensors": entries}, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )
    return DLP_MAGIC + struct.pack(">I", len(header)) + header + b"".join(chunks)


def _write_npz(target: str, tensors: Mapping[str, np.ndarray]) -> None:
    """Write ``tensors`` as :func:`numpy.savez` would, one ``<name>.npy`` member each.

    The archive is built here rather than by calling ``np.savez(file, **tensors)`` because
    that signature reserves the keyword names ``file`` and ``allow_pickle``; the layout
    (uncompressed zip, zip64 members, ``.npy`` payloads without pickle) is the same.
    """
    with zipfile.ZipFile(target, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in tensors.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as fid:
                np.lib.format.write_array(fid, arr, allow_pickle=False)


def _atomic_write(path: PathLike, writer: Callable[[str], None]) -> None:
    """`fileio.atomic_write`, failures reported as a WeightsError naming the file."""
    try:
        atomic_write(path, writer)
    except OSError as exc:
        raise WeightsError(path, [f"cannot write weights: {_os_reason(exc)}"]) from exc
    except Exception as exc:  # e.g. h5py refusing a dataset name
        raise WeightsError(path, [f"cannot write weights: {exc}"]) from exc


# ----------------------------------------------------------------------------- loading


def load_weights(
    path: str | Path,
    expected: Mapping[str, tuple[tuple[int, ...], np.dtype]] | None = None,
    *,
    allow_missing: bool = False,
) -> dict[str, np.ndarray]:
    """Read a weight file; the container is recognised by its magic bytes, not its suffix.

    Args:
        path: a ``.dlp`` (starts ``DLPW``), HDF5 (starts ``\\x89HDF``) or ``.npz`` (zip,
            starts ``PK``) file.
        expected: the network's parameters, name -> (shape, dtype). When given, every name
            must be in the file (unless ``allow_missing``) with that shape and a float32
            dtype, names in the file that the network lacks are reported, and only the
            expected names present in the file are returned (in ``expected``'s order).
        allow_missing: tolerate expected parameters that the file lacks (they are simply
            not in the result).

    Returns:
        name -> owned, C-contiguous float32 array.

    Raises:
        WeightsError: the file cannot be read, is not one of the three formats, is
            malformed (truncated, corrupt header, ...), or does not fit ``expected``; all
            problems found are listed together.
    """
    try:
        with open_regular(path) as fh:  # a device, FIFO or folder is never read
            magic = fh.read(4)
    except OSError as exc:
        raise WeightsError(path, [f"cannot read weights: {_os_reason(exc)}"]) from exc

    problems: list[str] = []
    if magic == DLP_MAGIC:
        tensors, present = _load_dlp(path, problems)
    elif magic == HDF5_MAGIC:
        tensors, present = _load_hdf5(path, problems)
    elif magic[:2] == ZIP_MAGIC:
        tensors, present = _load_npz(path, problems)
    else:
        found = "the file is empty" if not magic else f"it starts with {magic!r}"
        raise WeightsError(
            path,
            [
                f"not a known weight file ({found}): expected a dlprimitives .dlp file "
                "(starting with b'DLPW'), an HDF5 file (b'\\x89HDF') or a numpy .npz "
                "archive (a zip, b'PK')"
            ],
        )

    if expected is None:
        if problems:
            raise WeightsError(path, problems)
        return tensors

    result: dict[str, np.ndarray] = {}
    for name, spec in expected.items():
        want_shape = tuple(int(d) for d in spec[0])
        want_dtype = np.dtype(spec[1])
        if name not in present:
            if not allow_missing:
                problems.append(
                    f"{name}: missing from the file (expected shape {_shape_str(want_shape)})"
                )
            continue
        if name not in tensors:  # present but unreadable: already reported
            continue
        arr = tensors[name]
        if arr.shape != want_shape:
            problems.append(
                f"{name}: shape expected {_shape_str(want_shape)}, found {_shape_str(arr.shape)}"
            )
        if want_dtype != np.float32:
            problems.append(
                f"{name}: dtype expected {want_dtype}, found float32 "
                "(weight files hold float32 tensors only)"
            )
        result[name] = arr
    for name in present:
        if name not in expected:
            problems.append(f"unexpected tensor {name!r} in file")
    if problems:
        raise WeightsError(path, problems)
    return result


def _read_all(path: PathLike) -> bytes:
    """The whole file, or a :class:`WeightsError` with the OS reason."""
    try:
        with open_regular(path) as fh:
            return fh.read()
    except OSError as exc:
        raise WeightsError(path, [f"cannot read weights: {_os_reason(exc)}"]) from exc


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _load_dlp(path: PathLike, problems: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Parse a DLPW file (layout in the module docstring).

    Problems that make the whole file unusable (truncated header, corrupt JSON, wrong
    structure) raise at once; problems of single tensors are appended to ``problems``.
    Returns the readable tensors and the names of all tensors the header lists.
    """
    blob = _read_all(path)
    if len(blob) < 8:
        raise WeightsError(
            path,
            [
                f"truncated .dlp file: {len(blob)} bytes, but the magic and the header "
                "length alone take 8"
            ],
        )
    (header_len,) = struct.unpack(">I", blob[4:8])
    if header_len > MAX_DLP_HEADER:
        raise WeightsError(
            path,
            [
                f"corrupt .dlp file: header length {header_len} bytes exceeds the "
                f"{MAX_DLP_HEADER} byte (64 MiB) limit"
            ],
        )
    if 8 + header_len > len(blob):
        raise WeightsError(
            path,
            [
                f"truncated .dlp file: the header should be {header_len} bytes, but only "
                f"{len(blob) - 8} follow the header length"
            ],
        )
    try:
        text = blob[8 : 8 + header_len].decode("utf-8")
        header = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise WeightsError(path, [f"corrupt .dlp header: not valid UTF-8 JSON ({exc})"]) from exc
    if not isinstance(header, dict) or not isinstance(header.get("tensors"), dict):
        raise WeightsError(
            path,
            ['corrupt .dlp header: expected a JSON object {"tensors": {name: {...}}}'],
        )

    data = memoryview(blob)[8 + header_len :]
    tensors: dict[str, np.ndarray] = {}
    present: list[str] = []
    ranges: list[tuple[int, int, str]] = []  # (start, end, name) of the non-empty tensors
    for name, entry in header["tensors"].items():
        present.append(name)
        if not isinstance(entry, dict):
            problems.append(f"{name}: header entry is not a JSON object")
            continue
        bad = [
            key
            for key, ok in (
                ("dtype", isinstance(entry.get("dtype"), str)),
                (
                    "shape",
                    isinstance(entry.get("shape"), list)
                    and all(_is_int(d) and d >= 0 for d in entry["shape"]),
                ),
                ("size", _is_int(entry.get("size")) and entry["size"] >= 0),
                ("start", _is_int(entry.get("start")) and entry["start"] >= 0),
            )
            if not ok
        ]
        if bad:
            problems.append(
                f"{name}: header entry has a missing or invalid {', '.join(bad)} "
                "(dtype: string, shape: list of non-negative integers, size and start: "
                "non-negative integers)"
            )
            continue
        dtype, shape, size, start = entry["dtype"], entry["shape"], entry["size"], entry["start"]
        if dtype != "float":
            problems.append(
                f"{name}: dtype {dtype!r} is not supported (only 'float', i.e. float32)"
            )
            continue
        nbytes = 4 * math.prod(shape)
        if size != nbytes:
            problems.append(
                f"{name}: size {size} bytes does not match shape {_shape_str(shape)} "
                f"({nbytes} bytes of float32)"
            )
            continue
        if start + size > len(data):
            problems.append(
                f"{name}: data [{start}, {start + size}) lies outside the file "
                f"(only {len(data)} bytes of data after the header; truncated file?)"
            )
            continue
        arr = np.frombuffer(data, dtype="<f4", count=size // 4, offset=start)
        tensors[name] = arr.reshape(shape).astype(np.float32)  # a copy: owned, native, C order
        if size:
            ranges.append((start, start + size, name))
    problems.extend(_overlaps(ranges))
    return tensors, present


def _overlaps(ranges: list[tuple[int, int, str]]) -> list[str]:
    """A problem for each byte range ``(start, end, name)`` that overlaps one starting
    before it (ties: in header order), named with the one of those reaching furthest."""
    out: list[str] = []
    cover: tuple[int, int, str] | None = None
    for start, end, name in sorted(ranges, key=lambda r: r[0]):  # stable: header order
        if cover is not None and start < cover[1]:
            out.append(f"{name}: data [{start}, {end}) overlaps tensor {cover[2]!r} "
                       f"[{cover[0]}, {cover[1]}): each tensor needs its own bytes")
        if cover is None or end > cover[1]:
            cover = (start, end, name)
    return out


def _load_hdf5(path: PathLike, problems: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read the datasets of the root group of an HDF5 file (other objects are problems)."""
    h5py = _import_h5py(path)
    tensors: dict[str, np.ndarray] = {}
    present: list[str] = []
    try:
        with h5py.File(path, "r") as fh:
            for name in fh.keys():
                present.append(name)
                obj = fh.get(name)
                if not isinstance(obj, h5py.Dataset):
                    kind = "a group" if isinstance(obj, h5py.Group) else "a broken link"
                    problems.append(f"{name}: is {kind}, not a dataset")
                    continue
                if obj.shape is None:
                    problems.append(f"{name}: dataset has no dataspace (empty HDF5 dataset)")
                    continue
                if obj.dtype.kind not in "fiu":
                    problems.append(
                        f"{name}: dtype {obj.dtype} is not supported "
                        "(weights are real numbers, stored as float32)"
                    )
                    continue
                arr, problem = _to_float32(name, obj[()])
                if problem is not None:
                    problems.append(problem)
                    continue
                assert arr is not None
                tensors[name] = arr
    except WeightsError:
        raise
    except Exception as exc:  # h5py raises OSError/KeyError/RuntimeError on damaged files
        raise WeightsError(path, [f"cannot read the HDF5 file: {exc}"]) from exc
    return tensors, present


def _load_npz(path: PathLike, problems: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read every array of a numpy ``.npz`` archive (no pickle)."""
    tensors: dict[str, np.ndarray] = {}
    present: list[str] = []
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise WeightsError(path, ["not a numpy .npz archive"])
            for name in archive.files:
                present.append(name)
                try:
                    value = archive[name]
                except Exception as exc:  # object arrays (pickle), damaged members, ...
                    problems.append(f"{name}: cannot read the array: {exc}")
                    continue
                if not isinstance(value, np.ndarray):
                    problems.append(f"{name}: archive member is not a .npy array")
                    continue
                arr, problem = _to_float32(name, value)
                if problem is not None:
                    problems.append(problem)
                    continue
                assert arr is not None
                tensors[name] = arr
    except WeightsError:
        raise
    except Exception as exc:  # BadZipFile, ValueError (pickle refused), OSError, EOFError
        raise WeightsError(path, [f"cannot read the .npz archive: {exc}"]) from exc
    return tensors, present
