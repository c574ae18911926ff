"""The project random source: std::mt19937 and THE mapping from its outputs to float32.

Every random tensor of a run (data inputs, target, parameters) comes from ONE engine,
``std::mt19937`` seeded with ``training.seed`` (seed 000, section 2). The Python runtime and
the emitted C++ must produce bit-identical values, so the float mapping is fixed here and
nowhere else. It is exactly what g++/libstdc++ computes for
``std::uniform_real_distribution<float>(lo, hi)(engine)``, whose canonical step is
``std::generate_canonical<float, 24>`` taking one 32-bit draw per float:

.. code-block:: c++

    // u: one std::mt19937 output (uint32). Everything below is float32 arithmetic,
    // evaluated in this order, without FMA contraction.
    float c = static_cast<float>(u) / 4294967296.0f;          // round-to-nearest u, exact /2^32
    if (c >= 1.0f) c = std::nextafter(1.0f, 0.0f);            // u near 2^32 rounds up to 1.0f
    float value = c * (static_cast<float>(hi) - static_cast<float>(lo)) + static_cast<float>(lo);

A C++ emitter must write this formula explicitly rather than call
``uniform_real_distribution``, because other standard libraries (libc++, MSVC) implement the
distribution differently. Tensors are filled row-major, one draw per element.

Draw order for a v0 spec (:func:`frame_mlir.frontends.spec.initial_values.generate_initial_values`): the data input, then the target,
then for each layer in order its weight and then its bias. Inline data consumes no draws.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = [
    "MT19937",
    "U32Source",
    "mt19937_init_state",
    "uniform_float32",
]

_N = 624
_ONE_BELOW = np.nextafter(np.float32(1.0), np.float32(0.0))
_TWO_POW_32 = np.float32(4294967296.0)


def mt19937_init_state(seed: int) -> np.ndarray:
    """The 624-word state of ``std::mt19937(seed)`` (the standard ``init_genrand`` recurrence)."""
    if not 0 <= seed <= 0xFFFFFFFF:
        raise ValueError(f"mt19937 seed must be a uint32, got {seed}")
    key = [0] * _N
    key[0] = seed
    for i in range(1, _N):
        prev = key[i - 1]
        key[i] = (1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF
    return np.array(key, dtype=np.uint32)


class MT19937:
    """``std::mt19937`` seeded with a uint32; raw 32-bit outputs in C++ order.

    The state is computed here and handed to numpy's MT19937 bit generator, whose tempering and
    twist are the reference algorithm; numpy's own seeding is not used (it differs).

    >>> int(MT19937().next_u32(10000)[-1])  # the C++ standard's check value
    4123659995
    """

    DEFAULT_SEED = 5489

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self.seed = seed
        self._bitgen = np.random.MT19937()
        # pos 624 = "state exhausted": the first draw twists, exactly like a fresh std::mt19937.
        self._bitgen.state = {
            "bit_generator": "MT19937",
            "state": {"key": mt19937_init_state(seed), "pos": _N},
        }

    def next_u32(self, n: int = 1) -> np.ndarray:
        """The next ``n`` outputs as a ``uint32`` array (advances the engine by ``n``)."""
        if n < 0:
            raise ValueError(f"cannot draw a negative count ({n})")
        if n == 0:
            return np.empty(0, dtype=np.uint32)
        return np.asarray(self._bitgen.random_raw(n), dtype=np.uint64).astype(np.uint32)

    def discard(self, n: int) -> None:
        """Skip ``n`` outputs, like ``std::mt19937::discard``."""
        self.next_u32(n)


class U32Source(Protocol):
    """Anything that yields raw 32-bit words like :meth:`MT19937.next_u32`."""

    def next_u32(self, n: int = 1) -> np.ndarray:
        """The next ``n`` words as a ``uint32`` array."""
        ...


#: Draws are mapped in blocks of this many: the temporaries of a block (uint64 words,
#: float32 steps) stay small however large the tensor; the engine is sequential, so
#: blocks give the very same values.
_BLOCK = 1 << 20


def uniform_float32(engine: U32Source, n: int, lo: float, hi: float) -> np.ndarray:
    """``n`` float32 samples of U[lo, hi) with the project mapping (module docstring)."""
    if n <= _BLOCK:
        return _map_uniform(engine.next_u32(n), lo, hi)
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        out[start:stop] = _map_uniform(engine.next_u32(stop - start), lo, hi)
    return out


def _map_uniform(u: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Raw words to float32 samples of U[lo, hi) (module docstring)."""
    with np.errstate(over="ignore"):
        c = u.astype(np.float32) / _TWO_POW_32
    c = np.where(c >= np.float32(1.0), _ONE_BELOW, c).astype(np.float32)
    lo32 = np.float32(lo)
    width = np.float32(np.float32(hi) - lo32)
    # Two separate float32 ops (multiply, then add) so nothing fuses: matches g++ without FMA.
    scaled = (c * width).astype(np.float32)
    return (scaled + lo32).astype(np.float32)
