"""``DataLoaderOptions`` and ``DataLoader``: epochs of (optionally shuffled) batches.

Semantics are the frame Python API sheet's, section 8. Two points differ from ordinary Python
iterators and are deliberate (they forward the C++ contract):

- ``__iter__`` returns the loader itself and resets nothing;
- exhausting an epoch raises StopIteration *and* moves to the next epoch, so ``list(loader)`` is
  one epoch and iterating again yields the next one.

Batch assembly only gathers rows of the host storage into fresh arrays (numpy fancy indexing
moves bytes, it does no arithmetic): host-side work is limited to copying buffers and batching.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from frame_mlir.frontends.api.data.dataset import TensorDataset
from frame_mlir.frontends.api.tensor import Tensor
from frame_mlir.runtime.shuffle import epoch_order

__all__ = ["DataLoader", "DataLoaderOptions"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1


def _as_int(name: str, value: object, lo: int, hi: int, kind: str) -> int:
    """`value` as a Python int in [lo, hi], else TypeError (a C++ int64_t/uint64_t parameter:
    wrong types and out-of-range or negative unsigned values are TypeError, sheet 9.1)."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(
            f"DataLoaderOptions: {name} must be an integer, found {type(value).__name__}"
        ) from None
    if not lo <= v <= hi:
        raise TypeError(f"DataLoaderOptions: {name} must be {kind}, got {v}")
    return v


def _as_bool(name: str, value: object) -> bool:
    """`value` as a bool; bool, numpy.bool_ and ints convert, anything else is TypeError."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    try:
        return bool(operator.index(value))
    except TypeError:
        raise TypeError(
            f"DataLoaderOptions: {name} must be a bool, found {type(value).__name__}"
        ) from None


class _Fields(NamedTuple):
    """The option values as the loader reads them."""

    batch_size: int
    shuffle: bool
    seed: int
    drop_last: bool


class DataLoaderOptions:
    """Batch size, shuffling, seed and drop_last of a DataLoader. It exposes no public
    attributes and validates only argument types (a batch size < 1 is reported by
    DataLoader; a negative seed is a TypeError).

    Args:
        batch_size: rows per batch.
        shuffle: shuffle each epoch: epoch e's order is libstdc++'s `std::shuffle` with
            `std::mt19937_64(seed ^ e)` (reproducible across runs and machines).
        seed: an unsigned 64-bit seed.
        drop_last: drop the last batch if it is shorter than batch_size (as in
            torch.utils.data.DataLoader). A compiled graph has a fixed batch size, so a
            training loop over a sample count that batch_size does not divide needs it.

    Example:
        >>> from frame.data import DataLoaderOptions
        >>> DataLoaderOptions(batch_size=8, shuffle=True, seed=1, drop_last=True)
        DataLoaderOptions(batch_size=8, shuffle=True, seed=1, drop_last=True)
    """

    # Private slots: the sheet requires no public attributes; the loader reads `_fields()`.
    __slots__ = ("_batch_size", "_shuffle", "_seed", "_drop_last")

    def __init__(self, batch_size: int = 1, shuffle: bool = False, seed: int = 0,
                 drop_last: bool = False):
        self._batch_size = _as_int("batch_size", batch_size, _INT64_MIN, _INT64_MAX,
                                   "a 64-bit signed integer")
        self._shuffle = _as_bool("shuffle", shuffle)
        self._seed = _as_int("seed", seed, 0, _UINT64_MAX, "an unsigned 64-bit integer")
        self._drop_last = _as_bool("drop_last", drop_last)

    def _fields(self) -> _Fields:
        """The option values (for DataLoader; not part of the public API)."""
        return _Fields(self._batch_size, self._shuffle, self._seed, self._drop_last)

    def __repr__(self) -> str:
        return (f"DataLoaderOptions(batch_size={self._batch_size}, shuffle={self._shuffle}, "
                f"seed={self._seed}, drop_last={self._drop_last})")


class DataLoader:
    """Batches of a TensorDataset, epoch after epoch, starting at epoch 0.

    Args:
        dataset: the TensorDataset.
        options: its DataLoaderOptions (batch_size < 1 is a ValueError).

    `next()` returns one fresh cpu Tensor per column: batch b holds the rows
    `order[b*bs : b*bs + len]` of the epoch's order (`0..n-1`, or the shuffle). The last
    batch is shorter (`n % bs` rows) unless drop_last is set; fed to a compiled graph of
    a fixed batch size, such a batch is a ValueError that names drop_last. At the end of
    an epoch `next()` raises StopIteration and moves to the next epoch, so each `for`
    loop over the loader is one epoch. `__iter__` returns the loader itself.
    `len(loader)` is the number of batches per epoch.

    Shapes: column `[n, *rest]` -> batches `[bs, *rest]` (the last one `[n % bs, *rest]`
    without drop_last).

    Example:
        >>> import numpy as np, frame
        >>> from frame.data import DataLoader, DataLoaderOptions, TensorDataset
        >>> ds = TensorDataset([frame.from_numpy(np.arange(10, dtype=np.int64))])
        >>> loader = DataLoader(ds, DataLoaderOptions(batch_size=4))
        >>> len(loader), [b.numpy().tolist() for (b,) in loader]
        (3, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]])
    """

    __slots__ = ("_dataset", "_opts", "_epoch", "_batch", "_order", "_batches")

    def __init__(self, dataset: TensorDataset, options: DataLoaderOptions):
        if not isinstance(dataset, TensorDataset):
            raise TypeError(
                f"DataLoader: dataset must be a TensorDataset, found {type(dataset).__name__}")
        if not isinstance(options, DataLoaderOptions):
            raise TypeError(
                f"DataLoader: options must be DataLoaderOptions, found "
                f"{type(options).__name__}")
        opts = options._fields()
        if opts.batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be >= 1, got {opts.batch_size}")
        # The options are copied (like the C++ struct), so the loader never sees later changes.
        self._dataset = dataset
        self._opts = opts
        n = dataset._num_samples
        bs = opts.batch_size
        self._batches = n // bs if opts.drop_last else -(-n // bs)
        self._epoch = 0
        self._start_epoch()

    def _start_epoch(self) -> None:
        n = self._dataset._num_samples
        order = epoch_order(n, self._opts.shuffle, self._opts.seed, self._epoch)
        self._order = np.asarray(order, dtype=np.intp)
        self._batch = 0

    @property
    def batches_per_epoch(self) -> int:
        """`n // batch_size` with drop_last, else `ceil(n / batch_size)`
        (the same as `len(loader)`)."""
        return self._batches

    def __len__(self) -> int:
        """The number of batches per epoch (``batches_per_epoch``), as
        ``len(torch.utils.data.DataLoader)``: ``n // batch_size`` with drop_last, else
        ``ceil(n / batch_size)``.

        Example:
            >>> import numpy as np, frame
            >>> from frame.data import DataLoader, DataLoaderOptions, TensorDataset
            >>> ds = TensorDataset([frame.from_numpy(np.zeros((10, 3), np.float32))])
            >>> len(DataLoader(ds, DataLoaderOptions(batch_size=4)))
            3
            >>> len(DataLoader(ds, DataLoaderOptions(batch_size=4, drop_last=True)))
            2
        """
        return self._batches

    def __iter__(self) -> DataLoader:
        # Resets nothing: a new `for` loop continues with the current epoch.
        return self

    def __next__(self) -> list[Tensor]:
        if self._batch >= self._batches:
            self._epoch += 1
            self._start_epoch()
            raise StopIteration
        bs = self._opts.batch_size
        start = self._batch * bs
        rows = self._order[start:start + bs]
        self._batch += 1
        # Fancy indexing gathers whole rows into a new C-contiguous array: an exact byte copy
        # in the storage dtype (bf16 stays uint16 bit patterns), never aliasing the dataset.
        batch = [Tensor._own(col.storage()[rows], col.dtype) for col in self._dataset._columns]
        if len(rows) < bs:
            # A compiled graph's batch size is fixed (no dynamic shapes): if this short last
            # batch meets one, Executable.run's shape error says why and how to avoid it.
            note = (f"this is a DataLoader's last batch, which holds {len(rows)} rows instead "
                    f"of batch_size {bs} ({self._dataset._num_samples} samples); a compiled "
                    f"graph has a fixed batch size: use DataLoaderOptions(drop_last=True), or "
                    f"a batch_size that divides the sample count")
            for t in batch:
                t._note = note
        return batch

    def __repr__(self) -> str:
        o = self._opts
        return (f"DataLoader(samples={self._dataset._num_samples}, batch_size={o.batch_size}, "
                f"shuffle={o.shuffle}, seed={o.seed}, drop_last={o.drop_last}, "
                f"epoch={self._epoch})")
