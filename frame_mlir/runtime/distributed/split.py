"""The batch split of a data-parallel job: each of N ranks takes an equal, contiguous
share of every global batch's rows (rank r: rows [r*b, (r+1)*b), b = batch / N), so
the samples and their order are one process's."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from frame_mlir.runtime.distributed.job import DistributedError

__all__ = ["local_batch", "rank_feed", "rank_rows"]


def local_batch(global_batch: int, ranks: int, where: str) -> int:
    """Each rank's share of a batch of `global_batch` samples: DP-002 unless the ranks
    divide it evenly."""
    if global_batch % ranks:
        raise DistributedError(
            "DP-002", where, f"a batch divisible by the {ranks} ranks (each rank takes "
            "an equal, contiguous share)",
            f"{global_batch} samples ({global_batch} = {global_batch // ranks} x {ranks} "
            f"+ {global_batch % ranks})")
    return global_batch // ranks


def rank_rows(array: np.ndarray, rank: int, ranks: int) -> np.ndarray:
    """Rank `rank`'s contiguous share of `array`'s rows (a copy)."""
    b = array.shape[0] // ranks
    return np.ascontiguousarray(array[rank * b:(rank + 1) * b]).copy()


def rank_feed(feed: Mapping[str, np.ndarray], rank: int, ranks: int
              ) -> dict[str, np.ndarray]:
    """Rank `rank`'s rows [r*b, (r+1)*b) of every array of a global batch's feed."""
    return {name: rank_rows(a, rank, ranks) for name, a in feed.items()}
