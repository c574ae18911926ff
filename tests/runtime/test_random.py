"""The project random source against the C++ standard and an independent g++/libstdc++ oracle."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.frontends.spec.initial_values import generate_initial_values
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.runtime.random import (
    MT19937,
    mt19937_init_state,
    uniform_float32,
)

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"

# --------------------------------------------------------------------------- engine


def test_mt19937_standard_check_value() -> None:
    # [rand.predef]: the 10000th consecutive invocation of a default-constructed mt19937.
    assert int(MT19937().next_u32(10000)[-1]) == 4123659995


def test_mt19937_first_outputs_default_seed() -> None:
    assert MT19937(5489).next_u32(3).tolist() == [3499211612, 581869302, 3890346734]


def test_mt19937_chunked_draws_equal_one_draw() -> None:
    a = MT19937(20260713).next_u32(2000)
    eng = MT19937(20260713)
    b = np.concatenate([eng.next_u32(1), eng.next_u32(623), eng.next_u32(0), eng.next_u32(1376)])
    assert a.dtype == np.uint32 and np.array_equal(a, b)


@pytest.mark.parametrize("seed", [0, 1, 5489, 20260713, 2**32 - 1])
def test_init_state_matches_numpy_legacy_seeding(seed: int) -> None:
    # RandomState(int) seeds with the same init_genrand recurrence: an independent check of ours.
    legacy_key = np.random.RandomState(seed).get_state()[1]
    assert np.array_equal(mt19937_init_state(seed), legacy_key)


def test_seed_must_be_uint32() -> None:
    with pytest.raises(ValueError):
        MT19937(2**32)
    with pytest.raises(ValueError):
        MT19937(-1)


# --------------------------------------------------------------------------- float mapping


class _Scripted:
    """Engine stand-in that returns chosen raw words, to pin the mapping's edge cases."""

    def __init__(self, words: list[int]) -> None:
        self.words = np.array(words, dtype=np.uint32)

    def next_u32(self, n: int = 1) -> np.ndarray:
        out, self.words = self.words[:n], self.words[n:]
        return out


EDGE_WORDS = [
    0,
    1,
    2,
    2**24 - 1,
    2**24,
    2**24 + 1,
    2**31,
    2**32 - 257,
    2**32 - 129,
    2**32 - 128,
    2**32 - 1,
    123456789,
    3499211612,
]


def test_mapping_edges() -> None:
    vals = uniform_float32(_Scripted(EDGE_WORDS), len(EDGE_WORDS), 0.0, 1.0)
    assert vals.dtype == np.float32
    assert vals[0] == 0.0
    one_below = np.nextafter(np.float32(1), np.float32(0))
    # Words that round to 2**32 as float32 are clamped just below 1, never reaching hi.
    assert vals[EDGE_WORDS.index(2**32 - 1)] == one_below
    assert vals[EDGE_WORDS.index(2**32 - 128)] == one_below
    assert np.all(vals < 1.0)


def test_uniform_within_range_and_deterministic() -> None:
    a = uniform_float32(MT19937(3), 10000, -0.3, 0.3)
    b = uniform_float32(MT19937(3), 10000, -0.3, 0.3)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    assert a.min() >= np.float32(-0.3) and a.max() < np.float32(0.3)
    assert abs(float(a.mean())) < 0.01


# --------------------------------------------------------------------------- g++ oracle

ORACLE_CPP = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

// Replays chosen raw words, so the distribution's edge cases can be compared too.
struct Scripted {
  using result_type = std::uint32_t;
  std::vector<std::uint32_t> words;
  std::size_t pos = 0;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<std::uint32_t>::max(); }
  result_type operator()() { return words[pos++]; }
};

static void print_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  std::printf("%08x\n", bits);
}

int main(int argc, char** argv) {
  // raw <seed> <n> | uniform <seed> <n> <lo> <hi> | scripted <lo> <hi> <words...>
  std::string mode = argv[1];
  if (mode == "raw") {
    std::mt19937 eng(static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10)));
    long n = std::strtol(argv[3], nullptr, 10);
    for (long i = 0; i < n; ++i) std::printf("%u\n", static_cast<unsigned>(eng()));
  } else if (mode == "uniform") {
    std::mt19937 eng(static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10)));
    long n = std::strtol(argv[3], nullptr, 10);
    std::uniform_real_distribution<float> dist(std::strtof(argv[4], nullptr),
                                               std::strtof(argv[5], nullptr));
    for (long i = 0; i < n; ++i) print_bits(dist(eng));
  } else {
    Scripted eng;
    for (int i = 4; i < argc; ++i)
      eng.words.push_back(static_cast<std::uint32_t>(std::strtoul(argv[i], nullptr, 10)));
    std::uniform_real_distribution<float> dist(std::strtof(argv[2], nullptr),
                                               std::strtof(argv[3], nullptr));
    for (int i = 4; i < argc; ++i) print_bits(dist(eng));
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not installed: no libstdc++ oracle")
    work = tmp_path_factory.mktemp("mt_oracle")
    src = work / "oracle.cpp"
    src.write_text(ORACLE_CPP)
    exe = work / "oracle"
    # -ffp-contract=off: the project mapping has no FMA; some targets would otherwise fuse.
    subprocess.run(
        [gxx, "-std=c++17", "-O2", "-ffp-contract=off", str(src), "-o", str(exe)],
        check=True,
        capture_output=True,
    )
    return exe


def _run(exe: Path, *args: object) -> list[str]:
    out = subprocess.run([str(exe), *map(str, args)], check=True, capture_output=True, text=True)
    return out.stdout.split()


def _bits(values: np.ndarray) -> list[str]:
    return [f"{b:08x}" for b in values.astype(np.float32).view(np.uint32).tolist()]


@pytest.mark.parametrize("seed", [0, 5489, 20260713, 2**32 - 1])
def test_oracle_raw(oracle: Path, seed: int) -> None:
    want = [int(v) for v in _run(oracle, "raw", seed, 1500)]
    assert MT19937(seed).next_u32(1500).tolist() == want


@pytest.mark.parametrize(
    ("seed", "lo", "hi"),
    [
        (20260713, -1.0, 1.0),
        (7, 0.0, 1.0),
        (1, -0.1, 0.1),
        (0, 0.5, 1.0),
        (2**32 - 1, -3.0, 5.5),
        (42, -0.05, 0.05),
        (9, 1e-3, 2e-3),
    ],
)
def test_oracle_uniform(oracle: Path, seed: int, lo: float, hi: float) -> None:
    # repr() round-trips the double; strtof then rounds it to float32 as np.float32 does.
    want = _run(oracle, "uniform", seed, 3000, repr(lo), repr(hi))
    assert _bits(uniform_float32(MT19937(seed), 3000, lo, hi)) == want


@pytest.mark.parametrize(("lo", "hi"), [(0.0, 1.0), (-1.0, 1.0), (0.5, 1.0), (-0.3, 0.3)])
def test_oracle_mapping_edges(oracle: Path, lo: float, hi: float) -> None:
    want = _run(oracle, "scripted", repr(lo), repr(hi), *EDGE_WORDS)
    got = uniform_float32(_Scripted(EDGE_WORDS), len(EDGE_WORDS), lo, hi)
    assert _bits(got) == want


# --------------------------------------------------------------------------- spec initial values


def test_initial_values_draw_order() -> None:
    spec = load_spec(TESTDATA / "tiny_mlp.json")
    iv = generate_initial_values(spec)
    assert [name for name, _ in iv.params] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert iv.inputs["x"].shape == (8, 4) and iv.target.shape == (8, 1)
    assert [a.shape for _, a in iv.params] == [(4, 8), (8, 8), (8, 1)]
    # One engine, row-major: x, target, fc1.weight, fc1.bias, fc2.weight.
    eng = MT19937(20260713)
    expect = [
        uniform_float32(eng, 32, -1.0, 1.0).reshape(8, 4),
        uniform_float32(eng, 8, -1.0, 1.0).reshape(8, 1),
        uniform_float32(eng, 32, -0.1, 0.1).reshape(4, 8),
        uniform_float32(eng, 64, 0.5, 1.0).reshape(8, 8),
        uniform_float32(eng, 8, -0.1, 0.1).reshape(8, 1),
    ]
    got = [iv.inputs["x"], iv.target, *(a for _, a in iv.params)]
    for g, e in zip(got, expect, strict=True):
        assert g.dtype == np.float32 and np.array_equal(g.view(np.uint32), e.view(np.uint32))


def test_initial_values_deterministic() -> None:
    spec = load_spec(TESTDATA / "skip_mlp.json")
    a, b = generate_initial_values(spec), generate_initial_values(spec)
    for (na, va), (nb, vb) in zip(a.params, b.params, strict=True):
        assert na == nb and np.array_equal(va.view(np.uint32), vb.view(np.uint32))
    assert np.array_equal(a.inputs["x"], b.inputs["x"]) and np.array_equal(a.target, b.target)
    other = generate_initial_values(load_spec(TESTDATA / "tiny_mlp.json"))
    assert not np.array_equal(a.inputs["x"], other.inputs["x"])


def test_inline_data_consumes_no_draws() -> None:
    spec = load_spec(TESTDATA / "inline_data.json")
    iv = generate_initial_values(spec)
    assert iv.inputs["x"].tolist() == [
        [0.0, 0.5, 1.0],
        [1.0, 0.0, -0.5],
        [-1.0, 0.25, 0.5],
        [0.5, -0.75, 0.0],
    ]
    assert iv.target.reshape(-1).tolist() == [0.5, -0.25, 0.75, 0.0]
    eng = MT19937(spec.training.seed)
    first_weight = uniform_float32(eng, 12, -0.5, 0.5).reshape(3, 4)
    assert np.array_equal(iv.param_dict()["fc1.weight"], first_weight)


def test_nobias_params() -> None:
    iv = generate_initial_values(load_spec(TESTDATA / "nobias_mlp.json"))
    assert [name for name, _ in iv.params] == ["fc1.weight", "fc2.weight"]


def test_tiny_mlp_check_step0_loss() -> None:
    # Known figure of the reference implementation: MSE at step 0 is 0.458403.
    iv = generate_initial_values(load_spec(TESTDATA / "tiny_mlp_check.json"))
    p = iv.param_dict()
    h = np.maximum(iv.inputs["x"] @ p["fc1.weight"] + p["fc1.bias"], np.float32(0))
    pred = h @ p["fc2.weight"]
    loss = float(np.mean((pred - iv.target) ** 2))
    assert f"{loss:.6g}" == "0.458403"
