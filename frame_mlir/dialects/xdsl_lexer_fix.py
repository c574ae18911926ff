"""A linear-time string-literal pattern for xDSL 0.74's MLIR lexer.

xDSL matches a string literal with ``"(?:[^"\\\\\\n\\v\\f]+|\\\\...)*"``: a ``+`` inside a
``*``. When the closing quote is missing and more text follows on the line, the regex
engine tries every way of splitting that text between the two quantifiers before it
gives up -- exponential in the length of the line, so `frame-opt` on a file with one
stray `"` never finished (found by tests/fuzz, bug IR-1). The pattern below accepts
the same strings with single-character alternatives that cannot overlap (a plain
character, or a backslash and its escape), so a failed match costs one pass over the
line and the lexer reports its usual "End of file reached before closing string
literal." error.
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

#: What xDSL's pattern accepts: a double-quoted literal of characters other than quote,
#: backslash, newline, vertical tab and form feed, and the escapes \" \n \t \\ \XX.
STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


def install() -> None:
    """Replace the lexer's pattern (idempotent; every MLIR parse goes through it)."""
    MLIRLexer._unescaped_characters_regex = STRING_LITERAL
