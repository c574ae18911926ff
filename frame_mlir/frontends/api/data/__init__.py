"""Host-side data input (frame Python API sheet, section 8): TensorDataset, DataLoaderOptions
and DataLoader. The shuffle's random source lives in :mod:`frame_mlir.runtime.shuffle`."""

from frame_mlir.frontends.api.data.dataset import TensorDataset
from frame_mlir.frontends.api.data.loader import DataLoader, DataLoaderOptions

__all__ = ["DataLoader", "DataLoaderOptions", "TensorDataset"]
