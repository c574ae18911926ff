"""A parse error, not an IndexError, for a linalg named op without operands (xDSL 0.74).

xDSL's custom-format parser for the named linalg ops (`NamedOperation.parse`: linalg.add,
linalg.matmul, ...) reads optional `ins(...)` and `outs(...)`, then builds the op's
hidden body from the operands' element types. With no `ins` (a misspelt keyword, or the
clause left out), building that body indexes an empty tuple: `frame-opt` reported
`internal error: IndexError: tuple index out of range` for `linalg.add outs(%o : ...)`
(found by tests/fuzz, bug IR-2). The wrapper below turns that IndexError into the
parser's own error at the op, which `frame-opt` prints with its file:line:col like any
other parse error. Ops that parse today parse exactly as before.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.linalg.abstract_ops import NamedOperation
from xdsl.parser import Parser

_original_parse = NamedOperation.parse.__func__  # type: ignore[attr-defined]


def _parse(cls: Any, parser: Parser) -> Any:
    start = parser.pos
    try:
        return _original_parse(cls, parser)
    except IndexError:
        parser.raise_error(f"'{cls.name}' expects ins(...) and outs(...) operands "
                           "that give its body's element types", start)


def install() -> None:
    """Wrap `NamedOperation.parse` (idempotent)."""
    if getattr(NamedOperation.parse, "__func__", None) is not _parse:
        NamedOperation.parse = classmethod(_parse)  # type: ignore[method-assign,assignment]
