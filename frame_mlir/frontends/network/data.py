"""Training data for networks in the JSON network format: ``frame-run net.json --data SOURCE``.

A network declares its inputs with fixed shapes (``shape[0]`` is the batch size) and a dtype,
``"float"`` or ``"int"``. :func:`load_source` reads a data source and checks it against those
declarations; :func:`batches` cuts a split into feeds of exactly the declared shapes, one
epoch at a time, in the same order as frame's ``DataLoader``.

Sources (the ``--data`` argument):

``digits``
    scikit-learn's bundled 8x8 handwritten digits (``sklearn.datasets.load_digits``: 1797
    samples, pixel values 0..16, labels 0..9; needs the ``digits`` extra). Pixels are divided
    by 16, so they lie in [0, 1]. The split is seeded: with
    ``perm = numpy.random.default_rng(seed).permutation(1797)`` and
    ``n_train = (4 * 1797) // 5 = 1437``, the samples ``perm[:n_train]`` (in that order) are
    the training split and ``perm[n_train:]`` (360 samples) the held-out split. The network
    must have exactly two inputs: one ``float`` input of 64 values per sample (for instance
    ``[B, 1, 8, 8]``, ``[B, 64]`` or ``[B, 8, 8]``; the 8x8 image is reshaped to it in
    row-major order) and one ``int`` input of shape ``[B]`` for the labels. The word
    ``digits`` always means this data set; write ``./digits`` for a file of that name.

any other word: a ``.npz`` file (``numpy.savez``)
    One array per network input, named after it; the first axis counts samples and the
    remaining axes must equal the input's declared shape without its batch dimension. All
    arrays have the same number of samples. ``float`` inputs take floating-point or integer
    arrays (stored as float32; every value must be finite); ``int`` inputs take integer
    arrays, or floating-point arrays whose values are all integral (stored as int32; values
    must fit in int32). Arrays that match no input are an error.

    Held-out split: if the file also holds an array ``<input>_test`` for *every* input, those
    arrays (same rules; their own sample count) form the held-out split. Having them for only
    some inputs is an error. Without them the source has no held-out split.

a folder: ``.npy`` files
    The members of an unzipped ``.npz``: ``<name>.npy`` holds the array ``<name>``, with
    the same rules (other files in the folder are not read). This is how the program
    ``frame-dslc --emit NET.json`` writes is given the same data (one ``.npy`` per input).

Every split must hold at least one full batch: the batch size is fixed by the network, and
:func:`batches` drops the last partial batch of each epoch (it returns how many samples it
dropped so that the caller can say so).
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from frame_mlir.fileio import NotRegularFileError, check_regular_file
from frame_mlir.runtime.shuffle import epoch_order

__all__ = [
    "DIGITS",
    "DataError",
    "DataSource",
    "InputDecl",
    "Split",
    "batches",
    "load_source",
    "random_feed",
]

DIGITS = "digits"
"""The ``--data`` word for scikit-learn's 8x8 digits."""

_DTYPES = ("float", "int")
_INT32 = np.iinfo(np.int32)
_UINT64_MAX = (1 << 64) - 1
_DIGITS_SAMPLE_SIZE = 64


@dataclass(frozen=True)
class InputDecl:
    """What a network declares for one input.

    Attributes:
        name: the input tensor's name.
        shape: its full shape; ``shape[0]`` is the batch size.
        dtype: ``"float"`` (fed as float32) or ``"int"`` (fed as int32).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.dtype not in _DTYPES:
            raise ValueError(
                f"input {self.name!r}: dtype must be 'float' or 'int', got {self.dtype!r}")

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """The shape of one sample: the declared shape without its batch dimension."""
        return self.shape[1:]

    def describe(self) -> str:
        """``name dtype [d0, d1, ...]``, for messages."""
        return f"{self.name} {self.dtype} {_fmt_shape(self.shape)}"


class DataError(ValueError):
    """A data source that does not fit the network, or cannot be read.

    The message names the source (``--data SOURCE: ...``), the array or input concerned, and
    what was expected against what was found.

    Attributes:
        source: the ``--data`` argument.
        detail: the message without the ``--data SOURCE:`` prefix.

    `message`, when given, replaces the whole text (for sentences like
    ``--data digits needs scikit-learn: ...``).
    """

    def __init__(self, source: str, detail: str, *, message: str | None = None):
        super().__init__(message if message is not None else f"--data {source}: {detail}")
        self.source = source
        self.detail = detail


@dataclass
class Split:
    """One split of a data source: input name -> array whose first axis counts samples.

    Arrays of ``"float"`` inputs are float32 and those of ``"int"`` inputs int32; each has the
    shape ``(samples, *input.sample_shape)``.
    """

    arrays: dict[str, np.ndarray]

    @property
    def samples(self) -> int:
        """The number of samples (the common first-axis length; 0 for no arrays)."""
        for a in self.arrays.values():
            return int(a.shape[0])
        return 0


@dataclass
class DataSource:
    """A loaded data source.

    Attributes:
        name: ``"digits"`` or the ``.npz`` file's path, as given.
        train: the training split.
        held_out: the held-out split, or None when the source has none.
    """

    name: str
    train: Split
    held_out: Split | None


# --------------------------------------------------------------------------- helpers


def _fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _batch_size(source: str, inputs: Sequence[InputDecl]) -> int:
    """The network's batch size: the common ``shape[0]`` of all inputs."""
    if not inputs:
        raise DataError(source, "the network declares no inputs to feed")
    for d in inputs:
        if len(d.shape) == 0:
            raise DataError(source, f"the network's input '{d.name}' has shape [], "
                            "it needs a batch dimension")
        if d.shape[0] < 1:
            raise DataError(source, f"the network's input '{d.name}' has batch size "
                            f"{d.shape[0]}, expected at least 1")
    sizes = {d.shape[0] for d in inputs}
    if len(sizes) > 1:
        decl = "; ".join(d.describe() for d in inputs)
        raise DataError(source, "the network's inputs declare different batch sizes "
                        f"({decl}); one batch feeds the same samples to every input")
    return inputs[0].shape[0]


def _check_enough(source: str, split_name: str, samples: int, batch: int) -> None:
    if samples < batch:
        raise DataError(source, f"the {split_name} split has {_plural(samples, 'sample')}, "
                        f"fewer than one batch of {batch} (the network's batch size)")


def _convert(source: str, array_name: str, a: np.ndarray, decl: InputDecl) -> np.ndarray:
    """`a` checked against `decl` and converted to the feed dtype (float32 or int32)."""
    where = f"array '{array_name}'"
    if a.ndim == 0:
        raise DataError(source, f"{where} is a scalar; expected an array whose first axis "
                        f"counts samples, each of shape {_fmt_shape(decl.sample_shape)}")
    if a.shape[1:] != decl.sample_shape:
        raise DataError(source, f"{where} has sample shape {_fmt_shape(a.shape[1:])}, the "
                        f"network's input '{decl.name}' expects {_fmt_shape(decl.sample_shape)}")
    kind = a.dtype.kind
    if decl.dtype == "float":
        if kind not in "fiu":
            raise DataError(source, f"{where} has dtype {a.dtype}, the network's input "
                            f"'{decl.name}' is float and takes a floating-point or integer array")
        with np.errstate(over="ignore", invalid="ignore"):
            out = a.astype(np.float32)
        if not np.isfinite(out).all():
            bad = int(np.size(out) - np.count_nonzero(np.isfinite(out)))
            raise DataError(source, f"{where} holds {_plural(bad, 'non-finite value')} (NaN, "
                            "infinity, or beyond the float32 range); the network's input "
                            f"'{decl.name}' needs finite values")
        return out
    # decl.dtype == "int"
    if kind == "f":
        if not np.isfinite(a).all():
            raise DataError(source, f"{where} holds non-finite values, the network's input "
                            f"'{decl.name}' is int and needs integral values")
        if not (a == np.trunc(a)).all():
            raise DataError(source, f"{where} has dtype {a.dtype} with non-integral values, "
                            f"the network's input '{decl.name}' is int and takes integer "
                            "arrays (or floating-point arrays of integral values)")
    elif kind not in "iu":
        raise DataError(source, f"{where} has dtype {a.dtype}, the network's input "
                        f"'{decl.name}' is int and takes an integer array")
    if a.size and (a.min() < _INT32.min or a.max() > _INT32.max):
        raise DataError(source, f"{where} holds values outside the int32 range "
                        f"[{_INT32.min}, {_INT32.max}] (found {a.min()} .. {a.max()}), the "
                        f"network's input '{decl.name}' is int32")
    return a.astype(np.int32)


def _split_from(source: str, split_name: str, raw: Mapping[str, np.ndarray],
                names: Mapping[str, str], inputs: Sequence[InputDecl], batch: int) -> Split:
    """A checked Split from `raw` arrays; ``names[input]`` is the array holding that input."""
    arrays: dict[str, np.ndarray] = {}
    for d in inputs:
        arrays[d.name] = _convert(source, names[d.name], raw[names[d.name]], d)
    counts = {d.name: arrays[d.name].shape[0] for d in inputs}
    if len(set(counts.values())) > 1:
        listing = ", ".join(f"'{names[n]}' has {c}" for n, c in counts.items())
        raise DataError(source, f"the arrays of the {split_name} split differ in sample "
                        f"count ({listing}); every input needs the same number of samples")
    split = Split(arrays)
    _check_enough(source, split_name, split.samples, batch)
    return split


# --------------------------------------------------------------------------- sources


def _load_npy_dir(source: str, inputs: Sequence[InputDecl], batch: int) -> DataSource:
    """A folder of ``<name>.npy`` files: the members of an unzipped ``.npz``."""
    raw: dict[str, np.ndarray] = {}
    for entry in sorted(os.listdir(source)):
        path = os.path.join(source, entry)
        if not entry.endswith(".npy") or not os.path.isfile(path):
            continue
        try:
            raw[entry[:-4]] = np.load(path, allow_pickle=False)
        except OSError as e:
            raise DataError(source, f"cannot read {entry}: {e.strerror or e}") from None
        except (ValueError, EOFError) as e:
            why = "not a .npy array" if "pickle" in str(e) else str(e)
            raise DataError(source, f"{entry} is not a readable .npy array: {why}") from None
    return _source_from_arrays(source, raw, inputs, batch, holder="folder")


def _load_npz(source: str, inputs: Sequence[InputDecl], batch: int) -> DataSource:
    if os.path.isdir(source):
        return _load_npy_dir(source, inputs, batch)
    try:  # a device or FIFO is never read
        check_regular_file(source)
    except NotRegularFileError as e:
        raise DataError(source, f"IO-001: {e.strerror} (--data takes a .npz file, a folder "
                        "of .npy files or 'digits')") from None
    except OSError:
        raise DataError(source, "no such file; --data takes a .npz file or 'digits'") from None
    try:
        loaded = np.load(source, allow_pickle=False)
    except OSError as e:
        raise DataError(source, f"cannot read: {e.strerror or e}") from None
    except (ValueError, EOFError, zipfile.BadZipFile) as e:
        # numpy tries a pickle last, so any other file says "pickled (object) data ...
        # load it unsafely": misleading advice for a file that is just not numpy's
        why = "neither a zip archive of arrays (numpy.savez) nor a .npy array" \
            if "pickle" in str(e) else str(e)
        raise DataError(source, f"is not a readable .npz archive: {why}") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise DataError(source, "is a single .npy array, not a .npz archive of named arrays "
                        "(numpy.savez)")
    try:
        with loaded as z:
            raw = {k: z[k] for k in z.files}
    except OSError as e:
        raise DataError(source, f"cannot read: {e.strerror or e}") from None
    except (ValueError, EOFError, zipfile.BadZipFile) as e:
        raise DataError(source, f"is not a readable .npz archive: {e}") from None
    return _source_from_arrays(source, raw, inputs, batch)


def _source_from_arrays(source: str, raw: Mapping[str, np.ndarray],
                        inputs: Sequence[InputDecl], batch: int,
                        holder: str = "file") -> DataSource:
    """The checked splits of the arrays of a ``.npz`` file or a folder of ``.npy``
    (`holder`: "file" or "folder", for the messages)."""
    declared = [d.name for d in inputs]
    missing = [n for n in declared if n not in raw]
    if missing:
        raise DataError(source, f"the {holder} has no array for the network's "
                        f"{'input' if len(missing) == 1 else 'inputs'} {_quoted(missing)} "
                        f"(it holds {_quoted(sorted(raw)) or 'no arrays'})")
    test_names = {d.name: f"{d.name}_test" for d in inputs}
    extra = sorted(set(raw) - set(declared) - set(test_names.values()))
    if extra:
        raise DataError(source, f"{'array' if len(extra) == 1 else 'arrays'} "
                        f"{_quoted(extra)} match no network input (the network declares "
                        f"{_quoted(declared)}; held-out arrays are named '<input>_test')")
    present = [n for n in declared if test_names[n] in raw]
    if present and len(present) != len(declared):
        absent = [test_names[n] for n in declared if test_names[n] not in raw]
        word = "array" if len(present) == 1 else "arrays"
        raise DataError(source, f"the file holds held-out {word} "
                        f"{_quoted([test_names[n] for n in present])} but not "
                        f"{_quoted(absent)}; a held-out split needs '<input>_test' for every "
                        "input")
    train = _split_from(source, "training", raw, {n: n for n in declared}, inputs, batch)
    held_out = (_split_from(source, "held-out", raw, test_names, inputs, batch)
                if present else None)
    return DataSource(source, train, held_out)


def _load_digits(source: str, inputs: Sequence[InputDecl], seed: int,
                 batch: int) -> DataSource:
    floats = [d for d in inputs if d.dtype == "float"]
    ints = [d for d in inputs if d.dtype == "int"]
    if not (len(inputs) == 2 and len(floats) == 1 and len(ints) == 1
            and math.prod(floats[0].sample_shape) == _DIGITS_SAMPLE_SIZE
            and len(ints[0].shape) == 1):
        decl = "; ".join(d.describe() for d in inputs) or "no inputs"
        raise DataError(source, "needs a network with exactly two inputs: one float input of "
                        "64 values per sample for the 8x8 image (e.g. [B, 1, 8, 8] or "
                        f"[B, 64]) and one int input of shape [B] for the label; the network "
                        f"declares {decl}")
    try:
        import sklearn  # noqa: F401 -- fails first when scikit-learn is absent
        from sklearn.datasets import load_digits
    except ImportError:
        raise DataError(source, "needs scikit-learn: pip install 'frame-mlir[digits]'",
                        message=f"--data {source} needs scikit-learn: "
                        "pip install 'frame-mlir[digits]'") from None
    bunch = load_digits()
    images = np.asarray(bunch.data, dtype=np.float64)
    labels = np.asarray(bunch.target)
    n = images.shape[0]
    perm = np.random.default_rng(seed).permutation(n)
    n_train = (4 * n) // 5
    image, label = floats[0], ints[0]
    pixels = (images / 16.0).astype(np.float32).reshape((n, *image.sample_shape))
    targets = labels.astype(np.int32)

    def take(rows: np.ndarray, split_name: str) -> Split:
        split = Split({image.name: np.ascontiguousarray(pixels[rows]),
                       label.name: np.ascontiguousarray(targets[rows])})
        _check_enough(source, split_name, split.samples, batch)
        return split

    return DataSource(source, take(perm[:n_train], "training"), take(perm[n_train:], "held-out"))


def load_source(source: str, inputs: Sequence[InputDecl], *, seed: int = 0) -> DataSource:
    """Load ``--data SOURCE`` for a network with the given inputs (see the module docstring).

    Args:
        source: ``"digits"`` or the path of a ``.npz`` file.
        inputs: the network's input declarations; all share one batch size ``shape[0]``.
        seed: seeds the train/held-out split of ``digits`` (unused for ``.npz`` files).

    Raises:
        DataError: the source cannot be read or does not fit the inputs.
    """
    batch = _batch_size(source, inputs)
    if source == DIGITS:
        return _load_digits(source, inputs, seed, batch)
    return _load_npz(source, inputs, batch)


# --------------------------------------------------------------------------- batching


def _check_split(split: Split, inputs: Sequence[InputDecl]) -> int:
    """Check that `split` fits `inputs` and holds a full batch; return the batch size."""
    where = "batches"
    bs = _batch_size(where, inputs)
    missing = [d.name for d in inputs if d.name not in split.arrays]
    if missing:
        raise DataError(where, f"the split has no array for the inputs {_quoted(missing)}")
    n = split.samples
    for d in inputs:
        a = split.arrays[d.name]
        if a.ndim == 0 or a.shape[1:] != d.sample_shape or a.shape[0] != n:
            raise DataError(where, f"array '{d.name}' has shape {_fmt_shape(a.shape)}, "
                            f"expected {_fmt_shape((n, *d.sample_shape))}")
    _check_enough(where, "given", n, bs)
    return bs


def batches(split: Split, inputs: Sequence[InputDecl], *, shuffle: bool, seed: int,
            epoch: int) -> tuple[Iterator[dict[str, np.ndarray]], int]:
    """The feeds of one epoch over `split`, and the number of samples the epoch drops.

    The epoch's sample order is frame's ``DataLoader`` order,
    ``epoch_order(split.samples, shuffle, seed, epoch)`` (``std::shuffle`` by
    ``std::mt19937_64(seed ^ epoch)`` when shuffling). Batch ``b`` holds the samples
    ``order[b*B : (b+1)*B]`` with ``B`` the network's batch size; the trailing
    ``samples % B`` samples of the order form no full batch and are dropped (the second
    element of the result). Each feed maps every input name to a fresh array of exactly the
    declared shape.

    The split is checked against `inputs` when called, not when iterated.

    Raises:
        DataError: the split does not match the inputs or holds fewer samples than a batch.
        ValueError: `seed` is not a uint64 or `epoch` is negative.
    """
    if not 0 <= seed <= _UINT64_MAX:
        raise ValueError(f"seed must be an unsigned 64-bit integer, got {seed}")
    if epoch < 0:
        raise ValueError(f"epoch must be >= 0, got {epoch}")
    try:
        bs = _check_split(split, inputs)
    except DataError as e:
        # Not about a --data argument: the split was handed over by the caller.
        raise DataError(e.source, e.detail, message=f"batches: {e.detail}") from None
    n = split.samples
    full = n // bs
    order = np.asarray(epoch_order(n, shuffle, seed, epoch), dtype=np.intp)
    columns = [(d.name, split.arrays[d.name]) for d in inputs]

    def feeds() -> Iterator[dict[str, np.ndarray]]:
        for b in range(full):
            rows = order[b * bs:(b + 1) * bs]
            yield {name: a[rows] for name, a in columns}

    return feeds(), n - full * bs


def random_feed(inputs: Sequence[InputDecl], classes: Mapping[str, int], seed: int
                ) -> dict[str, np.ndarray]:
    """The random batch of ``frame-run NET --benchmark``: one feed of the declared shapes.

    Every value comes from one ``std::mt19937(seed mod 2^32)`` (`runtime/random.py`),
    drawn input by input in declaration order, row-major: a ``"float"`` input takes
    U[-1, 1) with the project's float mapping (docs/spec-format.md, "The random
    source"); an ``"int"`` input takes ``u % classes[name]`` of each raw 32-bit output
    ``u`` -- labels in range for the losses that read it -- or 0 where `classes` has
    no entry (no loss reads it), which draws nothing. Simple enough to draw the same
    batch in a C++ program.
    """
    from frame_mlir.runtime.random import MT19937, uniform_float32

    engine = MT19937(seed % 2**32)
    feed: dict[str, np.ndarray] = {}
    for d in inputs:
        n = math.prod(d.shape)
        if d.dtype == "float":
            feed[d.name] = uniform_float32(engine, n, -1.0, 1.0).reshape(d.shape)
        elif d.name in classes:
            u = engine.next_u32(n).astype(np.uint64)
            feed[d.name] = (u % np.uint64(classes[d.name])).astype(np.int32).reshape(d.shape)
        else:
            feed[d.name] = np.zeros(d.shape, np.int32)
    return feed
