"""What `Executable.__call__` and the Python API's `run` do per call beyond the kernels
(issue 28 item 4): inputs read in place when the function never writes them (no copy),
outputs fresh for the caller but recycled once the caller has dropped them, and the
API's results handed over without another copy. The sheet's rules hold throughout:
inputs are never modified, and no result the caller holds is ever written again."""

from __future__ import annotations

import gc

import numpy as np
from xdsl.dialects import builtin

import frame
from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame as fd
from frame_mlir.nn.graph import Graph
from frame_mlir.runtime.executable import compile_module


def _executable() -> object:
    g = Graph("f")
    x, w = g.add_input((8, 16), "x"), g.add_input((16, 4), "w")
    y = g.emit(fd.MatmulOp(x, w))
    return compile_module(builtin.ModuleOp([g.finish([y, g.emit(fd.ReluOp(y))])]),
                          options=CompileOptions(threads=1), cache=None)


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((8, 16)).astype(np.float32),
            rng.standard_normal((16, 4)).astype(np.float32))


def test_outputs_held_by_the_caller_are_never_written_again() -> None:
    ex = _executable()
    x, w = _data()
    first = ex("f", x, w)
    kept = [a.copy() for a in first]
    second = ex("f", 2 * x, w)
    for a, b in zip(first, kept, strict=True):
        np.testing.assert_array_equal(a, b)  # still the first call's values
    for a, b in zip(first, second, strict=True):
        assert not np.shares_memory(a, b)
    np.testing.assert_allclose(second[0], 2 * (x @ w), rtol=1e-5, atol=1e-5)


def test_dropped_outputs_are_recycled_and_fully_rewritten() -> None:
    """Once the caller drops a result, the next call writes the same buffer (no fresh
    pages): every element is rewritten, whatever the buffer held (NaN here)."""
    ex = _executable()
    x, w = _data()
    out = ex("f", x, w)
    addresses = [a.ctypes.data for a in out]
    for a in out:
        a.fill(np.nan)
    del out, a
    gc.collect()
    again = ex("f", x, w)
    assert [a.ctypes.data for a in again] == addresses
    np.testing.assert_allclose(again[0], x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(again[1], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def test_inputs_are_read_in_place_and_never_modified() -> None:
    ex = _executable()
    x, w = _data()
    x0, w0 = x.copy(), w.copy()
    outs = ex("f", x, w)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, w0)
    for o in outs:
        assert not np.shares_memory(o, x) and not np.shares_memory(o, w)


def test_odd_inputs_still_work_through_a_copy() -> None:
    """A non-contiguous view, another dtype and a 4-byte-aligned view are copied into
    the argument's layout first, as before."""
    ex = _executable()
    x, w = _data()
    ref = ex("f", x, w)[0].copy()
    wide = np.zeros((8, 33), np.float32)
    wide[:, 1:17] = x
    shifted = wide[:, 1:17]  # strided
    flat = np.zeros(8 * 16 + 1, np.float32)
    flat[1:] = x.reshape(-1)
    unaligned = flat[1:].reshape(8, 16)  # contiguous, 4 bytes past an aligned start
    assert unaligned.ctypes.data % 16 != 0
    for xs in (shifted, unaligned, x.astype(np.float64)):
        np.testing.assert_array_equal(ex("f", xs, w)[0], ref)


def test_api_run_results_are_fresh_tensors() -> None:
    """frame.compile(...).run: each call's outputs are new tensors (the runtime's
    arrays, handed over without a copy), a repeated output included."""
    g = frame.Graph("twice")
    x = g.add_graph_input([4], frame.DType.float32)
    y = frame.square(g, x)
    g.mark_output(y)
    g.mark_output(y)
    ex = frame.compile(g, "cpu")
    t = frame.from_numpy(np.arange(4, dtype=np.float32))
    a, b = ex.run([t])
    c, _ = ex.run([t])
    assert not np.shares_memory(a.numpy(), b.numpy())
    assert not np.shares_memory(a.numpy(), c.numpy())
    np.testing.assert_array_equal(a.numpy(), np.arange(4, dtype=np.float32) ** 2)
    np.testing.assert_array_equal(t.numpy(), np.arange(4, dtype=np.float32))
