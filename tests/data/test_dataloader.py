"""frame_mlir.frontends.api.data against the frame Python API sheet, section 8, and a g++/libstdc++ oracle."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.frontends.api.data import DataLoader, DataLoaderOptions, TensorDataset
from frame_mlir.frontends.api.tensor import Device, DType, Tensor, bf16_bits, from_numpy
from frame_mlir.runtime.shuffle import MT19937_64, bounded, epoch_order, shuffle

U64 = (1 << 64) - 1

# --------------------------------------------------------------------------- mt19937_64


def test_mt19937_64_standard_check_value_and_speed() -> None:
    # [rand.predef]: the 10000th consecutive invocation of a default-constructed mt19937_64.
    t0 = time.perf_counter()
    g = MT19937_64()
    for _ in range(9999):
        g()
    value = g()
    elapsed = time.perf_counter() - t0
    assert value == 9981545732273789042
    assert elapsed < 0.5


def test_mt19937_64_first_output_default_seed() -> None:
    assert MT19937_64(5489)() == 14514284786278117030


def test_mt19937_64_rejects_non_uint64_seed() -> None:
    with pytest.raises(ValueError):
        MT19937_64(-1)
    with pytest.raises(ValueError):
        MT19937_64(1 << 64)


# --------------------------------------------------------------------------- shuffle


@pytest.mark.parametrize(("seed", "epoch", "n", "expected"), [
    (777, 0, 10, [9, 7, 0, 4, 8, 3, 1, 2, 5, 6]),
    (777, 1, 10, [8, 1, 9, 0, 7, 4, 3, 5, 6, 2]),
    (777, 2, 10, [9, 3, 1, 0, 7, 2, 4, 6, 8, 5]),
    (0, 0, 10, [4, 7, 2, 3, 8, 0, 1, 5, 9, 6]),
    (42, 0, 7, [0, 2, 4, 6, 5, 3, 1]),
])
def test_sheet_shuffle_check_orders(seed: int, epoch: int, n: int, expected: list[int]) -> None:
    assert epoch_order(n, True, seed, epoch) == expected


def test_order_without_shuffle_is_identity() -> None:
    assert epoch_order(7, False, 777, 3) == list(range(7))


def test_shuffle_is_a_permutation_and_uses_seed_xor_epoch() -> None:
    order = epoch_order(1001, True, 5, 3)
    assert sorted(order) == list(range(1001))
    # only seed ^ epoch matters: (5, 3) and (6, 0) seed the same engine.
    assert epoch_order(1001, True, 6, 0) == order
    a = list(range(1001))
    shuffle(a, MT19937_64(5 ^ 3))
    assert a == order


def test_shuffle_of_one_element_draws_nothing() -> None:
    g = MT19937_64(9)
    a = [0]
    shuffle(a, g)
    assert a == [0] and g() == MT19937_64(9)()


_ORACLE_CPP = r"""
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>
// Reads lines "s seed epoch n" (print std::shuffle order of 0..n-1 with mt19937_64(seed^epoch))
// or "u seed n k" (print k draws of uniform_int_distribution<uint64_t>(0, n-1)).
int main() {
  std::string op;
  while (std::cin >> op) {
    if (op == "s") {
      std::uint64_t seed, epoch, n;
      std::cin >> seed >> epoch >> n;
      std::vector<std::uint64_t> v(n);
      std::iota(v.begin(), v.end(), 0);
      std::mt19937_64 g(seed ^ epoch);
      std::shuffle(v.begin(), v.end(), g);
      for (auto x : v) std::cout << x << ' ';
    } else {
      std::uint64_t seed, n, k;
      std::cin >> seed >> n >> k;
      std::mt19937_64 g(seed);
      std::uniform_int_distribution<std::uint64_t> d(0, n - 1);
      for (std::uint64_t i = 0; i < k; ++i) std::cout << d(g) << ' ';
    }
    std::cout << '\n';
  }
}
"""


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The libstdc++ oracle binary (the sheet pins libstdc++ of GCC 12/13)."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    d = tmp_path_factory.mktemp("shuffle_oracle")
    (d / "oracle.cpp").write_text(_ORACLE_CPP)
    exe = d / "oracle"
    subprocess.run([gxx, "-std=c++17", "-O1", "-o", str(exe), str(d / "oracle.cpp")],
                   check=True, capture_output=True, text=True)
    return exe


def _run_oracle(exe: Path, lines: list[str]) -> list[list[int]]:
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", check=True,
                         capture_output=True, text=True).stdout
    return [[int(x) for x in line.split()] for line in out.splitlines()]


def test_shuffle_matches_libstdcxx_oracle(oracle: Path) -> None:
    seeds = [0, 1, 42, 777, 5489, 0x123456789ABCDEF0, U64]
    ns = [1, 2, 3, 4, 5, 6, 7, 10, 11, 16, 17, 64, 99, 1000, 1001]
    cases = [(s, e, n) for s in seeds for e in (0, 1, 2) for n in ns]
    got = _run_oracle(oracle, [f"s {s} {e} {n}" for s, e, n in cases])
    assert len(got) == len(cases)
    for (s, e, n), ref in zip(cases, got, strict=True):
        assert epoch_order(n, True, s, e) == ref, (s, e, n)


def test_bounded_matches_libstdcxx_uniform_int(oracle: Path) -> None:
    # Large ranges hit Lemire's rejection loop often (small ones almost never do), so this pins
    # the threshold test and the redraws, which the shuffle reaches only rarely.
    ranges = [2, 3, 10, (1 << 32) + 1, (1 << 63) + 1, 3 << 62, U64]
    cases = [(seed, n) for seed in (0, 777, U64) for n in ranges]
    got = _run_oracle(oracle, [f"u {seed} {n} 50" for seed, n in cases])
    for (seed, n), ref in zip(cases, got, strict=True):
        g = MT19937_64(seed)
        assert [bounded(g, n) for _ in range(50)] == ref, (seed, n)


# --------------------------------------------------------------------------- fixtures

def _sheet_example() -> tuple[np.ndarray, np.ndarray, TensorDataset]:
    """10 rows: features[r, c] = 10r + c + 1 (3 columns, float32), targets[r] = 1000 + r."""
    r = np.arange(10, dtype=np.float32)[:, None]
    features = (10 * r + np.arange(3, dtype=np.float32)[None, :] + 1).astype(np.float32)
    targets = (1000 + r).astype(np.float32)
    return features, targets, TensorDataset([from_numpy(features), from_numpy(targets)])


def _loader(ds: TensorDataset, **kw: object) -> DataLoader:
    return DataLoader(ds, DataLoaderOptions(**kw))


def _rows(n: int, width: int = 2) -> TensorDataset:
    a = np.arange(n * width, dtype=np.int64).reshape(n, width)
    return TensorDataset([from_numpy(a)])


def _epoch_rows(loader: DataLoader) -> list[list[int]]:
    """One epoch as lists of sample ids (column 0 holds row r as [r*w, r*w+1, ...])."""
    out = []
    for batch in loader:
        a = batch[0].numpy()
        out.append((a[:, 0] // a.shape[1]).tolist())
    return out


# --------------------------------------------------------------------------- batches


def test_sheet_example_batches_equal_numpy_slices() -> None:
    features, targets, ds = _sheet_example()
    loader = _loader(ds, batch_size=4)
    assert loader.batches_per_epoch == 3
    batches = list(loader)
    assert [b[0].shape.dims for b in batches] == [[4, 3], [4, 3], [2, 3]]
    for b, (lo, hi) in zip(batches, [(0, 4), (4, 8), (8, 10)], strict=True):
        assert isinstance(b, list) and len(b) == 2
        assert all(isinstance(t, Tensor) for t in b)
        assert all(t.dtype == DType.float32 and t.device == Device("cpu", 0) for t in b)
        np.testing.assert_array_equal(b[0].numpy(), features[lo:hi])
        np.testing.assert_array_equal(b[1].numpy(), targets[lo:hi])
        assert b[1].shape.dims == [hi - lo, 1]


def test_sheet_example_drop_last() -> None:
    features, _, ds = _sheet_example()
    loader = _loader(ds, batch_size=4, drop_last=True)
    assert loader.batches_per_epoch == 2
    batches = list(loader)
    assert [b[0].shape.dims[0] for b in batches] == [4, 4]
    np.testing.assert_array_equal(batches[1][0].numpy(), features[4:8])


def test_stop_iteration_then_next_epoch() -> None:
    features, _, ds = _sheet_example()
    loader = _loader(ds, batch_size=4)
    for _ in range(3):
        next(loader)
    with pytest.raises(StopIteration):
        next(loader)
    first = next(iter(loader))
    np.testing.assert_array_equal(first[0].numpy(), features[0:4])


@pytest.mark.parametrize(("n", "bs", "drop_last", "sizes"), [
    (12, 4, False, [4, 4, 4]),   # divisible
    (12, 4, True, [4, 4, 4]),
    (10, 4, False, [4, 4, 2]),   # not divisible
    (10, 4, True, [4, 4]),
    (3, 4, False, [3]),          # fewer samples than one batch
    (3, 4, True, []),
    (5, 1, False, [1] * 5),
    (1, 1, True, [1]),
])
def test_batch_boundaries(n: int, bs: int, drop_last: bool, sizes: list[int]) -> None:
    for shuffled in (False, True):
        loader = _loader(_rows(n), batch_size=bs, drop_last=drop_last, shuffle=shuffled, seed=3)
        assert loader.batches_per_epoch == len(sizes)
        for epoch in range(2):
            rows = _epoch_rows(loader)
            assert [len(b) for b in rows] == sizes
            order = epoch_order(n, shuffled, 3, epoch)
            assert sum(rows, []) == order[:sum(sizes)]


def test_shuffled_batches_follow_sheet_order_across_epochs() -> None:
    features, targets, ds = _sheet_example()
    loader = _loader(ds, batch_size=4, shuffle=True, seed=777)
    expected = [[9, 7, 0, 4, 8, 3, 1, 2, 5, 6], [8, 1, 9, 0, 7, 4, 3, 5, 6, 2],
                [9, 3, 1, 0, 7, 2, 4, 6, 8, 5]]
    for order in expected:
        batches = list(loader)
        assert [b[0].shape.dims[0] for b in batches] == [4, 4, 2]
        got_f = np.concatenate([b[0].numpy() for b in batches])
        got_t = np.concatenate([b[1].numpy() for b in batches])
        np.testing.assert_array_equal(got_f, features[order])
        np.testing.assert_array_equal(got_t, targets[order])


def test_list_is_one_epoch_and_for_loops_continue() -> None:
    loader = _loader(_rows(7), batch_size=3, shuffle=True, seed=11)
    assert _epoch_rows(loader) == [epoch_order(7, True, 11, 0)[i:i + 3] for i in (0, 3, 6)]
    assert len(list(loader)) == 3
    assert _epoch_rows(loader) == [epoch_order(7, True, 11, 2)[i:i + 3] for i in (0, 3, 6)]


def test_iter_returns_self_and_resets_nothing() -> None:
    loader = _loader(_rows(6), batch_size=2)
    assert iter(loader) is loader
    assert next(loader)[0].numpy()[:, 0].tolist() == [0, 2]
    # a new `for` loop continues the current epoch at batch 1
    assert _epoch_rows(loader) == [[2, 3], [4, 5]]
    assert _epoch_rows(loader) == [[0, 1], [2, 3], [4, 5]]


def test_empty_epochs_with_drop_last_still_advance() -> None:
    loader = _loader(_rows(3), batch_size=5, drop_last=True)
    assert loader.batches_per_epoch == 0
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(loader)
    assert list(loader) == []


def test_two_loaders_with_same_options_are_identical() -> None:
    _, _, ds = _sheet_example()
    opts = DataLoaderOptions(batch_size=3, shuffle=True, seed=123456789, drop_last=False)
    a, b = DataLoader(ds, opts), DataLoader(ds, opts)
    for _ in range(3):
        ea, eb = list(a), list(b)
        assert len(ea) == len(eb) == 4
        for xa, xb in zip(ea, eb, strict=True):
            for ta, tb in zip(xa, xb, strict=True):
                assert ta.storage().tobytes() == tb.storage().tobytes()


def test_determinism_and_seed_dependence() -> None:
    ds = _rows(50)
    runs = [[_epoch_rows(_loader(ds, batch_size=8, shuffle=True, seed=s)) for s in (1, 1, 2)]
            for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0][0] == runs[0][1]
    assert runs[0][0] != runs[0][2]
    # a fresh loader always starts at epoch 0
    assert runs[0][0] == [epoch_order(50, True, 1, 0)[i:i + 8] for i in range(0, 50, 8)]


def test_large_seed_uses_uint64_xor() -> None:
    loader = _loader(_rows(9), batch_size=9, shuffle=True, seed=U64)
    assert _epoch_rows(loader) == [epoch_order(9, True, U64, 0)]
    assert _epoch_rows(loader) == [epoch_order(9, True, U64 - 1, 0)]   # U64 ^ 1


def test_multi_column_dtypes_are_exact_byte_copies() -> None:
    n = 9
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((n, 2, 3)).astype(np.float32)
    f32[0, 0, 0] = -0.0
    f32[1, 0, 0] = np.float32(np.nan)
    i64 = (np.arange(n, dtype=np.int64) * 3_000_000_000_017 - 7)   # needs 64 bits
    f16 = rng.standard_normal((n, 4)).astype(np.float16)
    f16[2, 1] = np.float16(np.inf)
    # a NaN with a payload: exact byte copies keep it bit for bit
    f16.view(np.uint16)[3, 0] = 0x7E01
    bf = bf16_bits(rng.standard_normal((n, 5)).astype(np.float32))
    cols = [from_numpy(f32), from_numpy(i64), from_numpy(f16),
            Tensor._own(bf.copy(), DType.bfloat16)]
    loader = _loader(TensorDataset(cols), batch_size=4, shuffle=True, seed=99)
    order = epoch_order(n, True, 99, 0)
    batches = list(loader)
    assert len(batches) == 3
    for b, lo in zip(batches, (0, 4, 8), strict=True):
        rows = order[lo:lo + 4]
        assert [t.dtype for t in b] == [DType.float32, DType.int64, DType.float16,
                                        DType.bfloat16]
        assert [t.shape.dims for t in b] == [[len(rows), 2, 3], [len(rows)], [len(rows), 4],
                                             [len(rows), 5]]
        for t, src in zip(b, (f32, i64, f16, bf), strict=True):
            assert t.storage().tobytes() == src[rows].tobytes()


def test_batches_are_fresh_read_only_copies() -> None:
    a = np.arange(12, dtype=np.float32).reshape(6, 2)
    col = from_numpy(a)
    ds = TensorDataset([col])
    b1 = next(_loader(ds, batch_size=6))[0]
    b2 = next(_loader(ds, batch_size=6))[0]
    assert not np.shares_memory(b1.storage(), col.storage())
    assert not np.shares_memory(b1.storage(), b2.storage())
    assert b1.storage().flags.c_contiguous and not b1.storage().flags.writeable
    out = b1.numpy()
    out[:] = -1
    np.testing.assert_array_equal(col.numpy(), a)
    np.testing.assert_array_equal(b2.numpy(), a)


def test_dataset_holds_tensors_without_copying() -> None:
    cols = [from_numpy(np.ones((4, 2), np.float32)), from_numpy(np.arange(4, dtype=np.int32))]
    given = list(cols)
    ds = TensorDataset(given)
    given.clear()   # the dataset keeps its own list of the same tensors
    assert len(ds._columns) == 2
    assert all(x is y for x, y in zip(ds._columns, cols, strict=True))


# --------------------------------------------------------------------------- validation


def _off_cpu(t: Tensor) -> Tensor:
    # Only "cpu" is registered, so Device() cannot name another backend; forge one the way a
    # device backend's tensor would look, to reach the dataset's cpu check.
    dev = object.__new__(Device)
    dev._backend, dev._index = "cuda", 0
    return Tensor._own(t.storage().copy(), t.dtype, dev)


def test_dataset_validation_errors() -> None:
    ok = from_numpy(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="empty"):
        TensorDataset([])
    with pytest.raises(ValueError, match="rank"):
        TensorDataset([from_numpy(np.array(1.0, np.float32))])
    with pytest.raises(ValueError, match="rank"):
        TensorDataset([ok, from_numpy(np.array(1.0, np.float32))])
    with pytest.raises(ValueError, match="cpu"):
        TensorDataset([ok, _off_cpu(ok)])
    with pytest.raises(ValueError, match="sample count"):
        TensorDataset([from_numpy(np.zeros((0, 2), np.float32))])
    with pytest.raises(ValueError, match="same sample count"):
        TensorDataset([ok, from_numpy(np.zeros((4,), np.int64))])
    with pytest.raises(TypeError):
        TensorDataset([ok, np.zeros((3, 2), np.float32)])
    with pytest.raises(TypeError):
        TensorDataset(ok)
    # valid: several columns of any rank >= 1 with one sample count; a tuple works too
    TensorDataset((ok, from_numpy(np.zeros((3,), np.int64)),
                   from_numpy(np.zeros((3, 1, 1, 2), np.float16))))


def test_options_types_and_no_validation() -> None:
    DataLoaderOptions()
    DataLoaderOptions(batch_size=0)          # accepted here; the loader rejects it
    DataLoaderOptions(batch_size=-5, shuffle=True, seed=U64, drop_last=True)
    DataLoaderOptions(4, True, 7, False)     # positional, in signature order
    with pytest.raises(TypeError):
        DataLoaderOptions(seed=-1)
    with pytest.raises(TypeError):
        DataLoaderOptions(seed=1 << 64)
    with pytest.raises(TypeError):
        DataLoaderOptions(batch_size=1.5)
    with pytest.raises(TypeError):
        DataLoaderOptions(batch_size="4")
    with pytest.raises(TypeError):
        DataLoaderOptions(shuffle="yes")


def test_options_expose_no_public_attributes() -> None:
    opts = DataLoaderOptions(batch_size=4, shuffle=True, seed=9, drop_last=True)
    assert [name for name in dir(opts) if not name.startswith("_")] == []
    with pytest.raises(AttributeError):
        opts.batch_size  # noqa: B018 -- the attribute access is the test


def test_loader_validation_errors() -> None:
    _, _, ds = _sheet_example()
    for bs in (0, -1):
        with pytest.raises(ValueError, match="batch_size"):
            DataLoader(ds, DataLoaderOptions(batch_size=bs))
    with pytest.raises(TypeError):
        DataLoader(ds, None)
    with pytest.raises(TypeError):
        DataLoader([from_numpy(np.zeros((2,), np.float32))], DataLoaderOptions())
    # keyword arguments work
    assert DataLoader(dataset=ds, options=DataLoaderOptions(batch_size=10)).batches_per_epoch == 1
