"""The blocked full reduction of convert-frame-to-linalg (frame.sum's lowering, in
`frame_reduce.py`): block choice and the (block, offset) -> element index maps,
checked exhaustively against numpy."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest

from frame_mlir.dialects.frame_reduce import (
    BLOCKED_SUM_MIN,
    _block_size,
    _flat_index_map,
)


@pytest.mark.parametrize(("shape", "block"), [
    ((100, 50), 50), ((7, 6, 5), 30), ((7, 6, 5), 10), ((7, 6, 5), 14), ((12,), 4),
    ((3, 1, 8), 6), ((2, 3, 4, 5), 12), ((2, 3, 4, 5), 8), ((5, 4), 20),
])
def test_flat_index_map_enumerates_row_major(shape: tuple[int, ...], block: int) -> None:
    amap = _flat_index_map(shape, block).data
    n = prod(shape)
    assert n % block == 0
    for i in range(n // block):
        for j in range(block):
            got = tuple(amap.eval([i, j], []))
            assert got == np.unravel_index(i * block + j, shape), (shape, block, i, j)


def test_block_size_choice() -> None:
    assert _block_size((8, 1)) is None  # small: the plain row-major sum
    assert _block_size((BLOCKED_SUM_MIN,)) is None
    assert _block_size((100, 50)) == 50  # a trailing sub-tensor near sqrt(5000)
    assert _block_size((64, 3, 64, 64)) == 4096
    assert _block_size((2_000_000,)) == 1250  # the divisor nearest below sqrt(N) = 1414
    assert _block_size((7919 * 3,)) is None  # no divisor within 16x of sqrt(N)
    for shape in [(100_000, 1), (5000, 3), (4097,), (640, 10)]:
        b = _block_size(shape)
        n = prod(shape)
        assert b is None or (n % b == 0 and np.sqrt(n) / 16 <= b <= np.sqrt(n) * 16)
