"""``TensorDataset``: equally long cpu tensors whose axis 0 is the sample axis.

Validation follows the frame Python API sheet, section 8 (all ValueError); wrong Python types
are TypeError (section 9.1). The dataset keeps the caller's Tensor objects: tensors are immutable,
so sharing them is safe and no sample data is copied until the loader assembles a batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from frame_mlir.frontends.api.tensor import Tensor

__all__ = ["TensorDataset"]


class TensorDataset:
    """Columns of samples: `columns[k]` has shape `[n, *rest_k]` and lives on cpu; axis 0
    is the sample axis. The tensors are held, not copied.

    Args:
        columns: a non-empty sequence of Tensors, each of rank >= 1 on cpu, all with the
            same sample count n >= 1 (ValueError otherwise).

    Shapes: `columns[k] [n, *rest_k]`; a DataLoader batch of it is `[len, *rest_k]`.

    Example:
        >>> import numpy as np, frame
        >>> from frame.data import TensorDataset
        >>> x = frame.from_numpy(np.zeros((10, 3), np.float32))
        >>> y = frame.from_numpy(np.zeros((10, 1), np.float32))
        >>> TensorDataset([x, y])
        TensorDataset(columns=2, samples=10)
    """

    __slots__ = ("_columns", "_num_samples")

    def __init__(self, columns: Sequence[Tensor]):
        if isinstance(columns, str | bytes) or not isinstance(columns, Sequence):
            raise TypeError(
                f"TensorDataset: columns must be a sequence of Tensor, found "
                f"{type(columns).__name__}")
        cols = tuple(columns)
        for k, col in enumerate(cols):
            if not isinstance(col, Tensor):
                raise TypeError(
                    f"TensorDataset: column {k} must be a Tensor, found {type(col).__name__}")
        if not cols:
            raise ValueError("TensorDataset: the column list is empty")
        for k, col in enumerate(cols):
            dims = col.shape.dims
            if len(dims) < 1:
                raise ValueError(
                    f"TensorDataset: column {k} has rank 0; every column needs rank >= 1 "
                    f"(axis 0 is the sample axis)")
            if col.device.backend != "cpu":
                raise ValueError(
                    f"TensorDataset: column {k} is on backend '{col.device.backend}'; "
                    f"every column must be on cpu")
        n = cols[0].shape.dims[0]
        if n < 1:
            raise ValueError("TensorDataset: column 0 has 0 samples; the sample count must be >= 1")
        for k, col in enumerate(cols[1:], start=1):
            nk = col.shape.dims[0]
            if nk != n:
                raise ValueError(
                    f"TensorDataset: column {k} has {nk} samples but column 0 has {n}; "
                    f"every column needs the same sample count")
        self._columns = cols
        self._num_samples = n

    def __repr__(self) -> str:
        return f"TensorDataset(columns={len(self._columns)}, samples={self._num_samples})"
