"""Shared helpers of the `frame` API tests (sheet section 10 tolerances)."""

from __future__ import annotations

import numpy as np

import frame

F32 = frame.DType.float32
RTOL, ATOL = 1e-5, 1e-6


def assert_close(actual: np.ndarray, expected: np.ndarray, *, require_f32: bool = False) -> None:
    """Sheet section 10, float32: elementwise ``|a - e| <= atol + rtol * |e|``, same shape."""
    actual = np.asarray(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape
    if require_f32:
        assert actual.dtype == np.float32
    err = np.abs(actual.astype(np.float64) - expected)
    bound = ATOL + RTOL * np.abs(expected)
    assert np.all(err <= bound), f"max excess {np.max(err - bound)}"


def f32(a: object) -> frame.Tensor:
    """A float32 cpu tensor of `a` (rank >= 1: np.ascontiguousarray promotes scalars)."""
    return frame.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
