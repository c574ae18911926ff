"""Reading a JSON model file strictly, shared by the JSON frontends (v0 specs and
networks): the file's text (a regular file or standard input, bounded in size, UTF-8),
and a decoder that reports every syntax error, duplicate key and non-finite number by
file:line:col or JSON pointer (JSON-001)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from frame_mlir.fileio import open_regular
from frame_mlir.frontends.common.errors import Diagnostic, SpecError, make_pointer

Part = str | int

# --------------------------------------------------------------------------- strict JSON


class _BadNumber:
    """Placeholder the decoder leaves where a number literal is not a finite JSON number."""

    def __init__(self, literal: str, reason: str) -> None:
        self.literal = literal
        self.reason = reason


class _DupDict(dict[str, Any]):
    """Object that had duplicate keys; remembers them so they can be reported by pointer."""

    duplicates: list[str]


def _object_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dups: list[str] = []
    for key, value in pairs:
        if key in out and key not in dups:
            dups.append(key)
        out[key] = value
    if not dups:
        return out
    marked = _DupDict(out)
    marked.duplicates = dups
    return marked


def _parse_float(literal: str) -> float | _BadNumber:
    value = float(literal)
    if not math.isfinite(value):
        return _BadNumber(literal, "overflows a double")
    return value


def _parse_int(literal: str) -> int | _BadNumber:
    try:
        return int(literal)
    except ValueError:  # Python refuses int literals beyond its digit limit
        return _BadNumber(literal[:20] + "...", "too many digits")


def _parse_constant(literal: str) -> _BadNumber:
    return _BadNumber(literal, "non-finite numbers are not JSON")


def decode_text(text: str, source: str) -> tuple[Any, list[Diagnostic]]:
    """Parse ``text`` strictly; returns the document or JSON-001 diagnostics."""
    try:
        doc = json.loads(
            text,
            object_pairs_hook=_object_hook,
            parse_float=_parse_float,
            parse_int=_parse_int,
            parse_constant=_parse_constant,
        )
    except json.JSONDecodeError as e:
        return None, [
            Diagnostic(
                "JSON-001",
                f"{source}:{e.lineno}:{e.colno}",
                "valid JSON",
                e.msg,
                f"malformed JSON: {e.msg}",
            )
        ]
    except RecursionError:
        return None, [
            Diagnostic(
                "JSON-001",
                f"{source}:1:1",
                "valid JSON",
                "nesting too deep",
                "malformed JSON: nesting too deep",
            )
        ]
    return doc, []


def json_value_errors(doc: Any) -> list[Diagnostic]:
    """``JSON-001``: non-finite numbers and duplicate keys anywhere in ``doc`` (iterative:
    depth is unbounded); a document from :func:`decode_document` with ``values=False``,
    or a dict built in Python, may hold them."""
    diags: list[Diagnostic] = []
    stack: list[tuple[Any, tuple[Part, ...]]] = [(doc, ())]
    while stack:
        node, parts = stack.pop()
        if isinstance(node, _BadNumber):
            diags.append(
                Diagnostic(
                    "JSON-001",
                    make_pointer(parts),
                    "a finite number",
                    node.literal,
                    f"number {node.literal} rejected: {node.reason}",
                )
            )
        elif isinstance(node, float) and not math.isfinite(node):
            diags.append(
                Diagnostic(
                    "JSON-001",
                    make_pointer(parts),
                    "a finite number",
                    repr(node),
                    f"number {node!r} rejected: non-finite numbers are not JSON",
                )
            )
        elif isinstance(node, dict):
            for key in getattr(node, "duplicates", ()):
                diags.append(
                    Diagnostic(
                        "JSON-001",
                        make_pointer((*parts, key)),
                        "unique keys",
                        f"duplicate key {key!r}",
                        f"duplicate key {key!r} (JSON objects must not repeat a key)",
                    )
                )
            for key, value in reversed(list(node.items())):
                stack.append((value, (*parts, key)))
        elif isinstance(node, list | tuple):
            for i in reversed(range(len(node))):
                stack.append((node[i], (*parts, i)))
    return diags


# --------------------------------------------------------------------------- helpers


def brief_value(value: Any) -> str:
    """Short rendering of a JSON value for ``found`` fields; never deep or huge."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float | str):
        text = json.dumps(value)
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, list | tuple):
        if len(value) <= 8 and all(
            isinstance(v, int | float | str | bool) or v is None for v in value
        ):
            return "[" + ", ".join(brief_value(v) for v in value) + "]"
        return f"an array of {len(value)} items"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


#: The largest spec file read: ample for inline data of millions of values, and a bound
#: on what a device file or a wrong path can make the loader read.
MAX_SPEC_BYTES = 1 << 30


def read_document(path: str | Path) -> tuple[str, str]:
    """The UTF-8 text of the file at ``path`` (``-``: standard input) and the source name
    diagnostics use; shared by the JSON frontends.

    Raises:
        SpecError: ``IO-001`` if the file cannot be read (or is larger than
        ``MAX_SPEC_BYTES``), ``JSON-001`` if it is not UTF-8.
    """
    from_stdin = str(path) == "-"  # the tools' convention, as in mlir-opt
    source = "<stdin>" if from_stdin else str(path)
    try:
        if from_stdin:
            raw = sys.stdin.buffer.read(MAX_SPEC_BYTES + 1)
        else:  # a device, FIFO or folder is never read
            with open_regular(path) as f:
                raw = f.read(MAX_SPEC_BYTES + 1)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise SpecError(
            [
                Diagnostic(
                    "IO-001", source, "a readable file", reason, f"cannot read spec file: {reason}"
                )
            ],
            source,
        ) from None
    if len(raw) > MAX_SPEC_BYTES:  # e.g. /dev/zero, which would never end
        raise SpecError([Diagnostic("IO-001", source, f"at most {MAX_SPEC_BYTES} bytes",
                                    "more", f"spec file larger than {MAX_SPEC_BYTES >> 20} MiB")],
                        source)
    try:
        text = raw.decode("utf-8-sig")  # tolerate a BOM: editors on some platforms add one
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise SpecError(
            [
                Diagnostic(
                    "JSON-001",
                    f"{source}:{line}:{col}",
                    "UTF-8 text",
                    f"invalid byte 0x{raw[e.start]:02x}",
                    f"malformed JSON: invalid UTF-8 byte 0x{raw[e.start]:02x}",
                )
            ],
            source,
        ) from None
    return text, source


def decode_document(text: str, source: str, values: bool = True) -> Any:
    """Parse ``text`` as strict JSON: no syntax error and, with `values`, no duplicate
    keys nor non-finite numbers (without it, those are left for `validate`, which
    reports them in document order with the v0 rules).

    Raises:
        SpecError: with every ``JSON-001`` diagnostic.
    """
    doc, diags = decode_text(text, source)
    if not diags and values:
        diags = json_value_errors(doc)
    if diags:
        raise SpecError(diags, source)
    return doc


