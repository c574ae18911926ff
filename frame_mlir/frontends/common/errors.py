"""Diagnostics for the spec frontends.

Every user-facing complaint about a model spec is a :class:`Diagnostic`: the rule it breaks,
where (a JSON pointer into the document, or ``file:line:col`` for text that is not JSON at
all), what was expected and what was found. Frontends collect all diagnostics of a document
and raise them together as one :class:`SpecError`, so a user fixes a spec in one round trip.

Rule ids used by the schema-v0 frontend:

* ``IO-001``  the file cannot be read.
* ``JSON-001`` the text is not strict JSON: syntax error (pointer ``file:line:col``),
  non-finite number literal (``NaN``, ``Infinity``, overflowing exponents) or a duplicate key
  (pointer = the JSON pointer of the offending member).
* ``FE-000`` structural schema violations no specific rule covers (wrong type, missing
  required member, unknown key, value out of range).
* ``FE-001`` .. ``FE-005`` the validation rules of the schema v0 spec (seed 000, section 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Diagnostic", "SpecError", "escape_pointer_token", "make_pointer", "split_pointer"]


@dataclass(frozen=True)
class Diagnostic:
    """One violation of a spec rule.

    Attributes:
        rule: rule id, e.g. ``"FE-003"``.
        pointer: RFC 6901 JSON pointer of the offending value (``""`` is the document root),
            or ``file:line:col`` for JSON syntax errors.
        expected: what the rule wants there, in spec terms (``"[8, 1]"``).
        found: what the document has there (``"[7, 1]"``, ``"missing"``).
        message: optional self-contained sentence; when given it replaces the
            ``expected …, found …`` tail in :meth:`__str__`.
    """

    rule: str
    pointer: str
    expected: str
    found: str
    message: str = ""

    def __str__(self) -> str:
        where = self.pointer if self.pointer else "<root>"
        if self.message:
            text = f"{self.rule} at {where}: {self.message}"
        else:
            text = f"{self.rule} at {where}: expected {self.expected}, found {self.found}"
        return one_line(text)


def one_line(text: str) -> str:
    """`text` with unprintable characters escaped (a newline as `\\n`, a lone surrogate
    as `\\ud800`), so a diagnostic stays one line whatever keys and names the document
    holds."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    if 0xD800 <= ord(c) <= 0xDFFF:  # a lone surrogate cannot be encoded at all
        return f"\\u{ord(c):04x}"
    return c.encode("unicode_escape").decode("ascii")


class SpecError(Exception):
    """A spec was rejected; carries every diagnostic found, not only the first.

    ``str(err)`` is one line per diagnostic, each prefixed by the source name, so a CLI can
    print it verbatim.
    """

    def __init__(self, diagnostics: Sequence[Diagnostic], source: str = "<string>") -> None:
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        self.source: str = source
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return "\n".join(f"{self.source}: {d}" for d in self.diagnostics)

    @property
    def rules(self) -> list[str]:
        """The rule ids of all diagnostics, in report order."""
        return [d.rule for d in self.diagnostics]


def escape_pointer_token(token: str | int) -> str:
    """Escape one reference token for a JSON pointer (RFC 6901 section 3)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def make_pointer(parts: Iterable[str | int]) -> str:
    """Build a JSON pointer from path components (``["layers", 1, "input"]``)."""
    return "".join("/" + escape_pointer_token(p) for p in parts)


def split_pointer(pointer: str) -> list[str]:
    """Split a JSON pointer into unescaped reference tokens; ``""`` gives ``[]``."""
    if not pointer.startswith("/"):
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
