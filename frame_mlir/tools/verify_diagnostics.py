"""`frame-opt --verify-diagnostics`: mlir-opt's expected-diagnostic annotations.

A test file says which diagnostics it expects, in comments, as mlir-opt's do:

    // expected-error@+1 {{operands [4] and [5] do not broadcast}}
    %0 = frame.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>

* kinds: `expected-error`, `expected-warning`, `expected-note`, `expected-remark`;
* where: the annotation's own line, or `@+N` / `@-N` lines below / above it, `@above`
  (the nearest line above that is not itself an annotation), `@below` (the nearest one
  below), `@unknown` (a diagnostic with no location);
* what: `{{text}}` is a substring of the message; with `expected-error-re`, the text
  is literal except `{{regex}}` parts.

Every diagnostic must be expected at its line, and every expectation met; otherwise
each unexpected diagnostic and unmet expectation is reported as `file:line:col: error:
...` on stderr and the tool exits 1. Line numbers are those of the whole file, also
with `--split-input-file` (the parser offsets each chunk's lines); an expectation is
met only by a diagnostic of its own chunk.

Diagnostics are: parse errors (at the token, with the ops of a re-declaration as
notes), verifier errors (at the first op, in source order, whose verifier fails) and
pass failures (at the op the pass names, else at an unknown location), one per chunk
since processing a chunk stops at its first error; single-line notes a pass attaches
to its exception (`add_note`); and Python warnings raised while a chunk is processed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from frame_mlir.tools.locations import SourceLoc

KINDS: tuple[str, ...] = ("error", "warning", "note", "remark")

# mlir-opt's syntax: `expected-<kind>[-re][ ]*[@<where>][ ]*{{<text>}}` to the end of
# the line (so `}}` may occur inside the text).
_ANNOTATION = re.compile(
    r"expected-(?P<kind>error|warning|note|remark)(?P<re>-re)?"
    r"(?:\s*@(?P<where>[+-]\d+|above|below|unknown))?\s*\{\{(?P<text>.*)\}\}\s*$")
# Anything that looks like an attempt at one (a designator or an opening brace after
# the kind), so that a typo is an error rather than a silently ignored comment; prose
# that merely mentions `expected-error` is left alone.
_ATTEMPT = re.compile(r"expected-(?:error|warning|note|remark)(?:-re)?\s*[@{]")


@dataclass(frozen=True)
class Diagnostic:
    """A diagnostic the tool emitted: kind, message and where (None: unknown)."""

    kind: str
    message: str
    loc: SourceLoc | None


@dataclass
class Expectation:
    """An `expected-<kind> {{...}}` annotation."""

    kind: str
    text: str
    line: int | None  # the line it expects a diagnostic at (None: @unknown)
    source: SourceLoc  # where the annotation is written
    pattern: re.Pattern[str] | None = None  # for `-re`
    met: bool = field(default=False)

    def accepts(self, diag: Diagnostic, file: str) -> bool:
        """Whether `diag` is this expectation's: same kind, line and message."""
        if diag.kind != self.kind or not self.matches_text(diag.message):
            return False
        if self.line is None:
            return diag.loc is None
        return diag.loc is not None and diag.loc.file == file and diag.loc.line == self.line

    def matches_text(self, message: str) -> bool:
        """Whether `message` has this expectation's text (or regex)."""
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message

    def describe(self) -> str:
        """`error "text"`, as the mismatch report quotes it."""
        return f'{self.kind}{"-re" if self.pattern is not None else ""} "{self.text}"'


def _regex(text: str) -> re.Pattern[str]:
    """An `expected-*-re` text as a regex: literal outside `{{...}}`, regex inside."""
    parts: list[str] = []
    pos = 0
    for m in re.finditer(r"\{\{(.*?)\}\}", text):
        parts.append(re.escape(text[pos:m.start()]))
        parts.append(f"(?:{m.group(1)})")
        pos = m.end()
    parts.append(re.escape(text[pos:]))
    return re.compile("".join(parts))


def parse_expectations(text: str, file: str) -> tuple[list[Expectation], list[Diagnostic]]:
    """The annotations of `text` (the whole input file), and an error diagnostic for
    each malformed one (a bad regex, `@above` on the first line, `@below` on the last,
    a missing `{{...}}`)."""
    expectations: list[Expectation] = []
    problems: list[Diagnostic] = []
    last_plain: int | None = None  # the last line without an annotation, for @above
    pending_below: list[Expectation] = []  # @below annotations awaiting such a line
    for number, line in enumerate(text.split("\n"), start=1):
        m = _ANNOTATION.search(line)
        if m is None:
            attempt = _ATTEMPT.search(line)
            if attempt is not None:
                problems.append(Diagnostic(
                    "error", "invalid expected-diagnostic annotation: expected "
                    "`expected-<error|warning|note|remark>[-re][@+N|@-N|@above|@below|"
                    "@unknown] {{text}}` at the end of the line, found "
                    f"`{line[attempt.start():].strip()}`",
                    SourceLoc(file, number, attempt.start() + 1)))
                continue
            last_plain = number
            for e in pending_below:
                e.line = number
            pending_below.clear()
            continue
        source = SourceLoc(file, number, m.start() + 1)
        where = m.group("where")
        exp = Expectation(m.group("kind"), m.group("text"), number, source)
        if m.group("re"):
            try:
                exp.pattern = _regex(exp.text)
            except re.error as err:
                problems.append(Diagnostic(
                    "error", f"invalid regex in expected-{exp.kind}-re: {err}", source))
                continue
        if where == "unknown":
            exp.line = None
        elif where == "above":
            if last_plain is None:
                problems.append(Diagnostic(
                    "error", "expected-diagnostic @above has no line above it to refer to",
                    source))
                continue
            exp.line = last_plain
        elif where == "below":
            pending_below.append(exp)
        elif where is not None:
            exp.line = number + int(where)
        expectations.append(exp)
    for e in pending_below:
        problems.append(Diagnostic(
            "error", "expected-diagnostic @below has no line below it to refer to", e.source))
        expectations.remove(e)
    return expectations, problems


@dataclass(frozen=True)
class Chunk:
    """A `--split-input-file` chunk: its diagnostics and its first line in the file."""

    first_line: int
    diagnostics: Sequence[Diagnostic]


def verify(file: str, text: str, chunks: Sequence[Chunk]) -> list[str]:
    """Match the chunks' diagnostics against the annotations of `text`: the mismatch
    report, one line each (empty: everything was expected and met)."""
    expectations, problems = parse_expectations(text, file)
    report: list[tuple[SourceLoc | None, str]] = [(d.loc, d.message) for d in problems]
    starts = [c.first_line for c in chunks]

    def chunk_of(line: int) -> int:
        return max((i for i, s in enumerate(starts) if s <= line), default=0)

    for index, chunk in enumerate(chunks):
        mine = [e for e in expectations if chunk_of(e.source.line) == index]
        for diag in chunk.diagnostics:
            match = next((e for e in mine if not e.met and e.accepts(diag, file)), None)
            if match is not None:
                match.met = True
                continue
            report.append((diag.loc, f"unexpected {diag.kind}: {diag.message}"
                           + _hint(diag, mine, file)))
    for e in expectations:
        if not e.met:
            target = "an unknown location" if e.line is None else f"line {e.line}"
            report.append((e.source, f"expected {e.describe()} at {target} was not produced"))
    # In file order (unknown locations first), as a reader goes through the file.
    report.sort(key=lambda r: (r[0].line, r[0].column) if r[0] is not None else (0, 0))
    return [_line(loc, file, message) for loc, message in report]


def _hint(diag: Diagnostic, expectations: Iterable[Expectation], file: str) -> str:
    """Why a diagnostic matched nothing, when an expectation came close."""
    for e in expectations:
        if e.met or e.kind != diag.kind:
            continue
        if e.matches_text(diag.message):
            at = "an unknown location" if e.line is None else f"line {e.line}"
            return f" (an expectation at line {e.source.line} has this text but expects {at})"
    for e in expectations:
        if (not e.met and e.kind == diag.kind and e.line is not None
                and diag.loc is not None and diag.loc.line == e.line and diag.loc.file == file):
            return f' (expected at this line: "{e.text}")'
    return ""


def _line(loc: SourceLoc | None, file: str, message: str) -> str:
    where = str(loc) if loc is not None else f"{file}:<unknown location>"
    return f"{where}: error: {message}"
