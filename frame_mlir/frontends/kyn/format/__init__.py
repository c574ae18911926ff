"""The `.kyn` formatter: parse, then print the program in canonical form.

Rules (shared/docs/kyn-language.md section 9, with our one difference: comments are kept):

* blocks in the order import, params, sweep, datasets, models, train, evaluate, export
  (several datasets or models, or a duplicated simple block, keep their source order);
  exactly one blank line between top-level blocks (consecutive imports share a group);
  4-space bodies, no blank lines inside a block, one newline at the end of the file;
* keys in the canonical order of `vocab.KEYS` (unknown keys after the known ones,
  in their source order); `key = value`, `adam(lr=0.001, betas=[0.9, 0.999])`,
  `[a, b]`, double-quoted strings, `$refs` unchanged;
* floats so that they read back as the same float, never in exponent form (`1e-05` ->
  `0.00001`; KynML's grammar has no exponents, so the output is valid KynML too);
* a key written as its literal default (`split = 0.8`) is dropped -- unless it occurs
  more than once in its block: a duplicate is an error, and dropping one copy would
  change which value the error is about.

Comments. Own-line comments attach to the statement or block header that follows them
and move with it; an indented comment after a block's last statement stays at the end of
that block; column-1 comments after the last block stay at the end of the file; leading
comments separated from the first block by a blank line stay at the top. A trailing
comment stays on its statement's line (two spaces before `#`). The comments of a dropped
default key stay, on their own lines, where the key would have been. These rules are
chosen so that formatting is idempotent: the printed placement of every comment is read
back as the same attachment.

The formatter raises `KynParseError` on a syntax error and never looks at semantics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from frame_mlir.fileio import atomic_write_stream
from frame_mlir.frontends.kyn.ast import (
    BatchNormLayer,
    Block,
    Call,
    Comment,
    DatasetBlock,
    DenseLayer,
    DropoutLayer,
    Entry,
    EvaluateBlock,
    ExportBlock,
    Ident,
    Import,
    InputLayer,
    Layer,
    ListValue,
    Literal,
    ModelBlock,
    ParamRef,
    ParamsBlock,
    SweepBlock,
    TrainBlock,
    Value,
)
from frame_mlir.frontends.kyn.errors import KynParseError
from frame_mlir.frontends.kyn.parser import parse_with_diagnostics, read_source
from frame_mlir.frontends.kyn.vocab import KEYS, REQUIRED, Key

__all__ = ["format_file", "format_float", "format_source", "format_value", "main"]

INDENT = "    "

#: canonical block order (the parser's listing order)
_BLOCK_ORDER = {DatasetBlock: 3, ModelBlock: 4, TrainBlock: 5, EvaluateBlock: 6,
                ExportBlock: 7, ParamsBlock: 1, SweepBlock: 2, Import: 0}

#: the blocks whose droppable defaults §9 lists (params and sweep keys are free)
_DROP_DEFAULTS = ("dataset", "train", "export")


# -- values -------------------------------------------------------------------------------
def format_float(x: float, source_text: str = "") -> str:
    """A float as `.kyn` source that reads back as the same float, never in exponent
    form: `0.0001`, `1e-05` -> `0.00001`, `2.0` stays `2.0`.

    `repr` is the shortest string that round-trips; when it uses an exponent, the same
    digits are written out positionally (Decimal is exact on repr's digits). A value
    that is not finite (`1e999` parses to inf) has no positional form; its source
    spelling is kept.
    """
    if not math.isfinite(x):
        return source_text or repr(x)
    r = repr(x)
    if "e" not in r and "E" not in r:
        return r
    s = format(Decimal(r), "f")
    return s if "." in s else s + ".0"


def format_value(v: Value) -> str:
    """A value in canonical spelling."""
    if isinstance(v, Literal):
        if isinstance(v.value, bool):
            return "true" if v.value else "false"
        if isinstance(v.value, int):
            return str(v.value)
        if isinstance(v.value, float):
            return format_float(v.value, v.text)
        return f'"{v.value}"'  # strings have no escapes
    if isinstance(v, Ident):
        return v.name
    if isinstance(v, ParamRef):
        return f"${v.name}"
    if isinstance(v, ListValue):
        return "[" + ", ".join(format_value(i) for i in v.items) + "]"
    if isinstance(v, Call):
        parts = [format_value(a) for a in v.args]
        parts += [f"{k.name}={format_value(k.value)}" for k in v.kwargs]
        return f"{v.name}(" + ", ".join(parts) + ")"
    raise TypeError(f"not a .kyn value: {v!r}")


def _layer_text(layer: Layer) -> str:
    if isinstance(layer, InputLayer):
        return f"input {format_value(layer.size)}"
    if isinstance(layer, DenseLayer):
        act = f" {format_value(layer.activation)}" if layer.activation is not None else ""
        return f"dense {format_value(layer.units)}{act}"
    if isinstance(layer, DropoutLayer):
        return f"dropout {format_value(layer.rate)}"
    if isinstance(layer, BatchNormLayer):
        feats = f" {format_value(layer.features)}" if layer.features is not None else ""
        return f"batchnorm{feats}"
    raise TypeError(f"not a layer: {layer!r}")


def _is_default(spec: Key, v: Value) -> bool:
    """Whether `v` is written exactly as the key's literal default. Only literals count:
    a `$ref` may resolve to anything, and a value of the wrong type (`num_workers =
    0.0`, `device = "auto"`) is kept so that validation still sees it."""
    if spec.default is None or spec.default is REQUIRED:
        return False
    if spec.type.startswith("enum:"):
        return isinstance(v, Ident) and v.name == spec.default
    return (isinstance(v, Literal) and type(v.value) is type(spec.default)
            and v.value == spec.default)


def _header_text(item: Block) -> str:
    if isinstance(item, Import):
        return f'import "{item.path}"'
    if isinstance(item, DatasetBlock | ModelBlock):
        return f"{item.kind} {item.name}:"
    return f"{item.kind}:"


def _statements(item: Block) -> tuple[Entry | Layer, ...]:
    if isinstance(item, ModelBlock):
        return item.layers
    if isinstance(item, Import):
        return ()
    return item.entries


# -- comment attachment ---------------------------------------------------------------------
class _Comments:
    """Where each comment of the source goes, keyed by the line of its anchor."""

    def __init__(self, items: Sequence[Block], comments: Sequence[Comment],
                 lines: Sequence[str]):
        self.before: dict[int, list[Comment]] = {}  # anchor line -> own-line comments
        self.trailing: dict[int, Comment] = {}  # anchor line -> comment on that line
        self.block_end: dict[int, list[Comment]] = {}  # header line -> end comments
        self.preamble: list[Comment] = []
        self.trailer: list[Comment] = []

        heads = [it.loc.line for it in items]
        stmt_lines = {it.loc.line: [s.loc.line for s in _statements(it)] for it in items}
        own = [c for c in comments if c.own_line]
        for c in comments:
            if not c.own_line:
                self.trailing[c.line] = c

        # leading comments separated from the first item by a blank line are the file's
        first = heads[0] if heads else len(lines) + 1
        lead = [c for c in own if c.line < first]
        blank = [n for n in range(lead[0].line, first) if not lines[n - 1].strip()] \
            if lead else []
        if heads and blank:
            self.preamble = [c for c in lead if c.line < blank[-1]]
        elif not heads:
            self.preamble = lead

        for c in own:
            if c in self.preamble:
                continue
            # the item whose header precedes the comment, and the next header after it
            prev = max((h for h in heads if h < c.line), default=None)
            nxt = min((h for h in heads if h > c.line), default=None)
            if prev is not None:
                later = [s for s in stmt_lines[prev] if s > c.line]
                if later:  # inside the body: belongs to the next statement
                    self.before.setdefault(later[0], []).append(c)
                    continue
                block = next(it for it in items if it.loc.line == prev)
                if c.col > 1 and not isinstance(block, Import):
                    self.block_end.setdefault(prev, []).append(c)
                    continue
            if nxt is not None:
                self.before.setdefault(nxt, []).append(c)
            else:
                self.trailer.append(c)


# -- printing -------------------------------------------------------------------------------
def _item_lines(item: Block, cm: _Comments) -> list[str]:
    """The lines of one top-level item with its comments."""
    out = [c.text for c in cm.before.get(item.loc.line, [])]
    out.append(_with_trailing(_header_text(item), item.loc.line, cm))

    stmts = list(_statements(item))
    spec: dict[str, Key] = {}
    if not isinstance(item, ModelBlock | Import):
        spec = KEYS.get(item.kind, {})
        order = {k: i for i, k in enumerate(spec)}
        # stable: duplicates and unknown keys keep their relative source order
        stmts.sort(key=lambda e: order.get(e.key, len(order)))  # type: ignore[union-attr]
    counts: dict[str, int] = {}
    for s in stmts:
        if isinstance(s, Entry):
            counts[s.key] = counts.get(s.key, 0) + 1

    for s in stmts:
        line = s.loc.line
        out += [INDENT + c.text for c in cm.before.get(line, [])]
        if isinstance(s, Entry):
            ks = spec.get(s.key)
            if (item.kind in _DROP_DEFAULTS and ks is not None and counts[s.key] == 1
                    and _is_default(ks, s.value)):
                if line in cm.trailing:  # the key goes, its comment stays in its place
                    out.append(INDENT + cm.trailing[line].text)
                continue
            text = f"{s.key} = {format_value(s.value)}"
        else:
            text = _layer_text(s)
        out.append(INDENT + _with_trailing(text, line, cm))
    out += [INDENT + c.text for c in cm.block_end.get(item.loc.line, [])]
    return out


def _with_trailing(text: str, line: int, cm: _Comments) -> str:
    c = cm.trailing.get(line)
    return f"{text}  {c.text}" if c is not None else text


def format_source(text: str, source_name: str = "<string>") -> str:
    """`text` in canonical form (see the module docstring).

    Raises:
        KynParseError: every syntax error of `text`; semantic problems are not checked.
    """
    program, diags = parse_with_diagnostics(text, source_name)
    if diags:
        raise KynParseError(diags)
    lines = text.split("\n")
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    lines = [ln.rstrip("\r") for ln in lines]
    items = list(program.items)
    cm = _Comments(items, program.comments, lines)

    groups: list[list[str]] = []
    if cm.preamble:
        groups.append([c.text for c in cm.preamble])
    prev: Block | None = None
    for item in sorted(items, key=lambda it: _BLOCK_ORDER[type(it)]):  # stable
        body = _item_lines(item, cm)
        # consecutive imports form one group; every other item is a group of its own
        if isinstance(item, Import) and isinstance(prev, Import):
            groups[-1] += body
        else:
            groups.append(body)
        prev = item
    if cm.trailer:
        groups.append([c.text for c in cm.trailer])
    if not groups:
        return ""
    return "\n\n".join("\n".join(g) for g in groups) + "\n"


def format_file(path: str | Path, write: bool = False) -> str:
    """The canonical form of the `.kyn` file at `path`; with `write`, the file is also
    rewritten when it changes. Raises KynParseError on a syntax error (nothing is
    written then)."""
    text = read_source(path)
    out = format_source(text, str(path))
    if write and out != text:  # atomically: an interrupted write never truncates it
        atomic_write_stream(path, lambda f: f.write(out.encode("utf-8")))
    return out
