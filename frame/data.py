"""`frame.data`: TensorDataset and DataLoader (the same objects as in `frame._core`)."""

from ._core import DataLoader, DataLoaderOptions, TensorDataset

__all__ = ["DataLoader", "DataLoaderOptions", "TensorDataset"]
