"""The string-literal pattern of xdsl_lexer_fix matches exactly what xDSL's own does,
and fails in linear time where xDSL's backtracked exponentially (fuzz bug IR-1)."""

from __future__ import annotations

import random
import re
import time

from frame_mlir.dialects.xdsl_lexer_fix import STRING_LITERAL

#: xDSL 0.74's pattern (xdsl/utils/mlir_lexer.py), kept here as the reference.
XDSL_PATTERN = re.compile(r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

ALPHABET = ['"', "\\", "n", "t", "a", "F", "0", "9", "\n", "\v", "\f", " ", "é", "x"]


def test_same_matches_as_xdsl_on_random_short_inputs() -> None:
    rng = random.Random(7)
    for _ in range(20000):
        text = '"' + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 10)))
        ours, theirs = STRING_LITERAL.match(text), XDSL_PATTERN.match(text)
        assert (ours and ours.group()) == (theirs and theirs.group()), repr(text)


def test_unterminated_literal_fails_fast() -> None:
    text = '"' + "a b " * 50_000  # xDSL's pattern would not finish on 30 characters
    start = time.perf_counter()
    assert STRING_LITERAL.match(text) is None
    assert time.perf_counter() - start < 1.0


def test_installed_in_the_lexer() -> None:
    from xdsl.utils.mlir_lexer import MLIRLexer

    import frame_mlir.dialects  # noqa: F401  (installs the fix)

    assert MLIRLexer._unescaped_characters_regex is STRING_LITERAL
