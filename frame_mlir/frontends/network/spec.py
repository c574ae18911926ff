"""The validated form of a JSON network document: its inputs, outputs and operators.

`loader.py` builds it from a document (after the schema and graph rules); `lower.py`
builds frame IR from it. It sits below both, so neither imports the other to name it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from frame_mlir.frontends.common.errors import Diagnostic

#: dtype names of the format -> what the frame IR stores.
DTYPES = ("float", "int")

#: The most elements of any tensor (4 PiB of float32): more than any machine holds, and
#: byte counts stay far from int64 overflow. Declared shapes beyond it are NET-000,
#: deduced ones NET-005; smaller ones that do not fit in memory are RT-001 at run time.
MAX_ELEMENTS = 2**50

@dataclass(frozen=True)
class InputSpec:
    """A network input: a tensor the caller feeds."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "float" or "int"


@dataclass(frozen=True)
class OutputSpec:
    """A declared network output; a loss when `loss_weight` is not None."""

    name: str  # the user's tensor name
    value: str  # the SSA value it denotes (its latest definition)
    loss_weight: float | None


@dataclass(frozen=True)
class OperatorSpec:
    """One operator, its options completed with defaults and its tensors as SSA values."""

    index: int
    name: str
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    frozen: bool
    options: Mapping[str, Any]
    params: tuple[str | None, ...]  # explicit parameter names (None: the default name)

    @property
    def pointer(self) -> str:
        return f"/operators/{self.index}"


@dataclass(frozen=True)
class NetworkSpec:
    """A validated network document (graph rules checked; shapes are checked when the
    IR is built)."""

    name: str  # the file stem, or "network"
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    operators: tuple[OperatorSpec, ...]
    source: str = "<dict>"
    doc: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: NET-002 / NET-012 found in a non-strict load (the document loaded regardless)
    warnings: tuple[Diagnostic, ...] = field(default=(), compare=False, repr=False)

    @property
    def losses(self) -> list[OutputSpec]:
        return [o for o in self.outputs if o.loss_weight is not None]
