"""The flat gradient buffer of a data-parallel step: one contiguous float32 buffer of
64-byte aligned segments, one per tensor the ranks sum (gradients, loss values,
running statistics). The compiled gradient function writes its results straight into
the segments (views) and the update reads them there, so a step's whole exchange is
one allreduce of the buffer and copies nothing."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from frame_mlir.runtime.executable import aligned_empty

__all__ = ["ALIGN", "flat_buffer"]

#: Floats between segment starts: each starts on a 64-byte boundary (16 floats), as
#: the arena's and the out-buffers' allocations do, so the kernels see the alignment
#: they would with buffers of their own.
ALIGN = 16


def flat_buffer(shapes: Sequence[tuple[int, ...]]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One float32 buffer holding a segment of each shape, in order (each at least one
    float and padded to `ALIGN`), and a view of each segment shaped as given."""
    offsets, size = [], 0
    for shape in shapes:
        offsets.append(size)
        size += -(-max(math.prod(shape), 1) // ALIGN) * ALIGN
    flat = aligned_empty(4 * max(size, 1)).view(np.float32)
    views = [flat[o:o + math.prod(s)].reshape(s) for o, s in zip(offsets, shapes, strict=True)]
    return flat, views
