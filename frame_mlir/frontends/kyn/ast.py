"""The typed AST of a `.kyn` program: frozen dataclasses, every node with its place.

`Program` has KynML's fields (datasets, models, train, evaluate, export, params, sweep,
imports) plus what our tools need: `items` (every top-level item in source order, so
duplicates of a simple block stay visible to validation), `comments` (kept for the
formatter) and `file`.

Values are nodes too (`Literal`, `Ident`, `ParamRef`, `ListValue`, `Call`), so an error
about a value points at the value, not only at its line. `plain(value)` turns a value
into Python data (`adam(lr=0.001)` -> `Call`'s name/args/kwargs stay a `Call`).
Locations are 1-based lines and 1-based columns; `end_col` is exclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BatchNormLayer", "Block", "Call", "Comment", "DatasetBlock", "DenseLayer",
    "DropoutLayer", "Entry", "EvaluateBlock", "ExportBlock", "Ident", "Import",
    "InputLayer", "KwArg", "Layer", "ListValue", "Literal", "Loc", "ModelBlock",
    "ParamRef", "ParamsBlock", "Program", "SweepBlock", "TrainBlock", "Value", "plain",
]


@dataclass(frozen=True)
class Loc:
    """A range of source text: 1-based line and column, end column exclusive."""

    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def none() -> Loc:
        return Loc(0, 0, 0, 0)


NOWHERE = Loc(0, 0, 0, 0)


# -- values ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Literal:
    """An int, float, bool or string literal. `text` is its source spelling."""

    value: int | float | bool | str
    loc: Loc = NOWHERE
    text: str = ""


@dataclass(frozen=True)
class Ident:
    """A bare identifier (`relu`, `adam`, `PriceNet`)."""

    name: str
    loc: Loc = NOWHERE


@dataclass(frozen=True)
class ParamRef:
    """`$name`: replaced by composition before validation."""

    name: str
    loc: Loc = NOWHERE


@dataclass(frozen=True)
class ListValue:
    """`[v, v, ...]`."""

    items: tuple[Value, ...]
    loc: Loc = NOWHERE


@dataclass(frozen=True)
class KwArg:
    """`name=value` inside a call."""

    name: str
    value: Value
    loc: Loc = NOWHERE


@dataclass(frozen=True)
class Call:
    """`name(args..., k=v, ...)`: KynML's FunctionCall(name, args, kwargs)."""

    name: str
    args: tuple[Value, ...] = ()
    kwargs: tuple[KwArg, ...] = ()
    loc: Loc = NOWHERE

    def kwarg(self, name: str) -> KwArg | None:
        for k in self.kwargs:
            if k.name == name:
                return k
        return None


Value = Literal | Ident | ParamRef | ListValue | Call


def plain(value: Value) -> Any:
    """Python data for a value: literals as themselves, identifiers and `$refs` as their
    names (`"$x"` for a reference), lists as lists, calls unchanged."""
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, Ident):
        return value.name
    if isinstance(value, ParamRef):
        return f"${value.name}"
    if isinstance(value, ListValue):
        return [plain(v) for v in value.items]
    return value


# -- statements --------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """`key = value` in a dataset, train, evaluate, export, params or sweep body."""

    key: str
    value: Value
    loc: Loc = NOWHERE
    key_loc: Loc = NOWHERE


@dataclass(frozen=True)
class InputLayer:
    """`input N`: the model's input features, [batch, N]."""

    size: Value
    loc: Loc = NOWHERE
    keyword = "input"


@dataclass(frozen=True)
class DenseLayer:
    """`dense N [activation]`: a fully connected layer and its activation."""

    units: Value
    activation: Value | None = None
    loc: Loc = NOWHERE
    keyword = "dense"


@dataclass(frozen=True)
class DropoutLayer:
    """`dropout R`: zero each feature with probability R in training (scaled 1/(1-R))."""

    rate: Value
    loc: Loc = NOWHERE
    keyword = "dropout"


@dataclass(frozen=True)
class BatchNormLayer:
    """`batchnorm [N]`: BatchNorm1d over the incoming features."""

    features: Value | None = None
    loc: Loc = NOWHERE
    keyword = "batchnorm"


Layer = InputLayer | DenseLayer | DropoutLayer | BatchNormLayer


# -- blocks ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Keyed:
    entries: tuple[Entry, ...] = ()
    loc: Loc = NOWHERE

    def get(self, key: str) -> Entry | None:
        """The first entry named `key`, or None."""
        for e in self.entries:
            if e.key == key:
                return e
        return None

    def value(self, key: str, default: Any = None) -> Any:
        """The plain value of `key` (see `plain`), or `default` when absent."""
        e = self.get(key)
        return default if e is None else plain(e.value)


@dataclass(frozen=True)
class DatasetBlock(_Keyed):
    """`dataset <Name>:` with source, target, split, normalize, shuffle, ..."""

    name: str = ""
    name_loc: Loc = NOWHERE
    origin: str = ""  # the file it was written in (differs from Program.file for imports)
    kind = "dataset"


@dataclass(frozen=True)
class ModelBlock:
    """`model <Name>:` and its layer statements."""

    name: str
    layers: tuple[Layer, ...] = ()
    loc: Loc = NOWHERE
    name_loc: Loc = NOWHERE
    origin: str = ""
    kind = "model"


@dataclass(frozen=True)
class TrainBlock(_Keyed):
    """`train:`: model, data, loss, optimizer, epochs, batch and the training options."""

    kind = "train"


@dataclass(frozen=True)
class EvaluateBlock(_Keyed):
    """`evaluate:`: `metrics = [...]`."""

    kind = "evaluate"


@dataclass(frozen=True)
class ExportBlock(_Keyed):
    """`export:`: format, path, input_shape, opset."""

    kind = "export"


@dataclass(frozen=True)
class ParamsBlock(_Keyed):
    """`params:`: `name = literal` defaults for `$name` references."""

    kind = "params"

    @property
    def values(self) -> dict[str, Any]:
        return {e.key: plain(e.value) for e in self.entries}


@dataclass(frozen=True)
class SweepBlock(_Keyed):
    """`sweep:`: `name = [v, ...]` axes, expanded in Cartesian order."""

    kind = "sweep"

    @property
    def axes(self) -> dict[str, list[Any]]:
        return {e.key: plain(e.value) for e in self.entries}


@dataclass(frozen=True)
class Import:
    """`import "path"` at column 1."""

    path: str
    loc: Loc = NOWHERE
    kind = "import"


Block = (DatasetBlock | ModelBlock | TrainBlock | EvaluateBlock | ExportBlock | ParamsBlock
         | SweepBlock | Import)


@dataclass(frozen=True)
class Comment:
    """A `#` comment: on a line of its own (`own_line`) or after a statement."""

    text: str
    line: int
    col: int
    own_line: bool = True


@dataclass(frozen=True)
class Program:
    """A parsed `.kyn` file (before or after composition)."""

    datasets: tuple[DatasetBlock, ...] = ()
    models: tuple[ModelBlock, ...] = ()
    train: TrainBlock | None = None
    evaluate: EvaluateBlock | None = None
    export: ExportBlock | None = None
    params: ParamsBlock | None = None
    sweep: SweepBlock | None = None
    imports: tuple[Import, ...] = ()
    items: tuple[Block, ...] = ()
    comments: tuple[Comment, ...] = field(default=(), repr=False)
    file: str = "<string>"

    def dataset(self, name: str) -> DatasetBlock | None:
        return next((d for d in self.datasets if d.name == name), None)

    def model(self, name: str) -> ModelBlock | None:
        return next((m for m in self.models if m.name == name), None)

    @staticmethod
    def from_items(items: tuple[Block, ...], comments: tuple[Comment, ...] = (),
                   file: str = "<string>") -> Program:
        """A program whose fields are derived from `items` (the first of each simple
        block; later duplicates stay in `items`)."""
        def first(cls: type) -> Any:
            return next((b for b in items if isinstance(b, cls)), None)

        return Program(
            datasets=tuple(b for b in items if isinstance(b, DatasetBlock)),
            models=tuple(b for b in items if isinstance(b, ModelBlock)),
            train=first(TrainBlock), evaluate=first(EvaluateBlock),
            export=first(ExportBlock), params=first(ParamsBlock), sweep=first(SweepBlock),
            imports=tuple(b for b in items if isinstance(b, Import)),
            items=items, comments=comments, file=file)
