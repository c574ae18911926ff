"""InitSpec: how a tensor gets its initial values (a declaration, never the values).

Shared by the nn Modules (ParamSpec.init) and the spec frontend (the `data`
section); the numbers are drawn by `frame_mlir.runtime.random` at run time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UniformSeeded:
    """Drawn from U[lo, hi) with the project's mt19937 float mapping."""

    lo: float
    hi: float


@dataclass(frozen=True)
class Inline:
    """Given literally, row-major; consumes no random draws."""

    values: tuple[float, ...]


@dataclass(frozen=True)
class Fill:
    """Every element `value` (the tensor's shape is its declaration's); consumes no
    random draws. Unlike `Inline` it holds one number, not one per element: LayerNorm's
    gamma of 2^40 ones is a valid declaration, while a tuple of them would not fit in
    memory (bug API-4)."""

    value: float


InitSpec = UniformSeeded | Inline | Fill
