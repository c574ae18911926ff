"""The DataLoader's random source: ``std::mt19937_64`` and libstdc++'s ``std::shuffle``.

The epoch order is an interface fact (frame Python API sheet, section 8): it must equal what
``std::shuffle(first, last, std::mt19937_64(seed ^ epoch))`` produces with libstdc++ as built
by GCC 12/13 (Lemire's bounded draws on 64-bit outputs and the pairwise variant that takes two
swap positions from one draw). MSVC and libc++ give other orders, so nothing here may be
replaced by ``random.shuffle`` or ``numpy.random``.

Pure Python on purpose: a shuffle of n elements needs about n/2 draws per epoch, and Python
ints give the exact 128-bit products Lemire's method needs without any overflow tricks.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import TypeVar

__all__ = ["MT19937_64", "bounded", "epoch_order", "shuffle"]

_MASK64 = (1 << 64) - 1
_N = 312
_M = 156
_MATRIX_A = 0xB5026F5AA96619E9
_UPPER = 0xFFFFFFFF80000000  # the most significant w - r = 33 bits
_LOWER = 0x000000007FFFFFFF  # the least significant r = 31 bits
_INIT_MULT = 6364136223846793005

T = TypeVar("T")


class MT19937_64:  # noqa: N801 -- the C++ standard's name for the engine
    """``std::mt19937_64`` with single-integer seeding; ``next()`` is one ``g()`` call."""

    __slots__ = ("_mt", "_index")

    DEFAULT_SEED = 5489

    def __init__(self, seed: int = DEFAULT_SEED):
        if not isinstance(seed, int) or not 0 <= seed <= _MASK64:
            raise ValueError(f"mt19937_64 seed must be a uint64, got {seed!r}")
        mt = [0] * _N
        mt[0] = seed
        for i in range(1, _N):
            prev = mt[i - 1]
            mt[i] = (_INIT_MULT * (prev ^ (prev >> 62)) + i) & _MASK64
        self._mt = mt
        # index N = "state exhausted": the first draw twists, exactly like a fresh engine.
        self._index = _N

    def _twist(self) -> None:
        mt = self._mt
        for i in range(_N):
            y = (mt[i] & _UPPER) | (mt[(i + 1) % _N] & _LOWER)
            v = mt[(i + _M) % _N] ^ (y >> 1)
            if y & 1:
                v ^= _MATRIX_A
            mt[i] = v
        self._index = 0

    def next(self) -> int:
        """The next 64-bit output (tempering per [rand.eng.mers])."""
        if self._index >= _N:
            self._twist()
        y = self._mt[self._index]
        self._index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y

    __call__ = next


def bounded(g: MT19937_64, n: int) -> int:
    """Uniform in [0, n) for 1 <= n <= 2^64: libstdc++'s ``_S_nd`` (Lemire's nearly divisionless
    method), which ``uniform_int_distribution`` uses for a 64-bit engine."""
    p = g.next() * n
    if p & _MASK64 < n:
        # t < n, so only a low part below n can be rejected: the test above just skips the
        # division in the common case (as libstdc++ does) and changes no result.
        t = ((1 << 64) - n) % n
        while p & _MASK64 < t:
            p = g.next() * n
    return p >> 64


def shuffle(a: MutableSequence[T], g: MT19937_64) -> None:
    """Permute `a` in place exactly like libstdc++'s ``std::shuffle(a.begin(), a.end(), g)``."""
    n = len(a)
    if n == 0:
        return
    if _MASK64 // n >= n:
        # Pairwise variant: one draw in [0, r*(r+1)) gives the swap positions of two elements.
        i = 1
        if n % 2 == 0:
            # an even length leaves an odd number of swaps: the first one is done alone.
            j = bounded(g, 2)
            a[1], a[j] = a[j], a[1]
            i = 2
        while i < n:
            r = i + 1
            x = bounded(g, r * (r + 1))
            j = x // (r + 1)
            a[i], a[j] = a[j], a[i]
            j = x % (r + 1)
            a[i + 1], a[j] = a[j], a[i + 1]
            i += 2
    else:
        # n*n would overflow the engine's range: one bounded draw per element.
        for i in range(1, n):
            j = bounded(g, i + 1)
            a[i], a[j] = a[j], a[i]


def epoch_order(n: int, shuffled: bool, seed: int, epoch: int) -> list[int]:
    """The sample order of one epoch: ``0..n-1``, or its shuffle by
    ``std::mt19937_64(seed ^ epoch)`` (both taken as uint64, as in the C++ loader)."""
    order = list(range(n))
    if shuffled:
        shuffle(order, MT19937_64((seed ^ epoch) & _MASK64))
    return order
