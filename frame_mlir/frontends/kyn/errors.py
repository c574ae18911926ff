"""Diagnostics and errors of the `.kyn` frontend.

Every complaint about a program is a :class:`KynDiagnostic`: a rule id, the file, a
1-based line and column range, a severity and a self-contained message. The stages
collect every diagnostic of a file and raise them together as one :class:`KynError`
subclass, so a user fixes a program in one round trip. The classes mirror KynML's:

* :class:`KynParseError`     the text does not follow the grammar (rules ``KYN-P..``);
* :class:`KynSemanticError`  composition and validation (``KYN-S..``);
* :class:`KynShapeError`     shape inference, a subclass of the semantic error (``KYN-H..``);
* :class:`KynCodegenError`   lowering, data, training and export (``KYN-C..``);
* :class:`LockMismatchError` the lock file disagrees with the program (``KYN-L..``).

The printed form is ``<file>:<line>:<col>: <severity>: <message> [<rule>]``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "KynCodegenError",
    "KynDiagnostic",
    "KynError",
    "KynParseError",
    "KynSemanticError",
    "KynShapeError",
    "LockMismatchError",
    "did_you_mean",
    "raise_if_errors",
]

#: diagnostic `kind` -> the code `diagnose()` reports (KynML's names)
KINDS = ("parse", "semantic", "shape", "codegen", "lock", "warn")


@dataclass(frozen=True)
class KynDiagnostic:
    """One problem in a program.

    Attributes:
        rule: rule id, e.g. ``"KYN-S05"`` (docs/kyn.md lists them all).
        kind: ``parse``, ``semantic``, ``shape``, ``codegen``, ``lock`` or ``warn``.
        message: the sentence shown to the user, with expected and found values.
        file: the source name (a path, or ``<string>``).
        line, col: 1-based start; 0 when the problem has no place in the text.
        end_line, end_col: 1-based end (exclusive column).
    """

    rule: str
    kind: str
    message: str
    file: str = "<string>"
    line: int = 0
    col: int = 0
    end_line: int = 0
    end_col: int = 0

    @classmethod
    def at(cls, rule: str, kind: str, message: str, file: str, loc: Any = None
           ) -> KynDiagnostic:
        """A diagnostic placed at `loc` (an `ast.Loc`; None: no place in the text)."""
        if loc is None:
            return cls(rule, kind, message, file)
        return cls(rule, kind, message, file, loc.line, loc.col, loc.end_line, loc.end_col)

    @property
    def severity(self) -> str:
        return "warning" if self.kind == "warn" else "error"

    def __str__(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}:{max(self.col, 1)}"
        return f"{where}: {self.severity}: {self.message} [{self.rule}]"


class KynError(Exception):
    """A program was rejected; carries every diagnostic found, not only the first."""

    def __init__(self, diagnostics: Sequence[KynDiagnostic] | str):
        if isinstance(diagnostics, str):
            diagnostics = [KynDiagnostic("KYN-C00", "codegen", diagnostics)]
        self.diagnostics: list[KynDiagnostic] = list(diagnostics)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)

    @property
    def rules(self) -> list[str]:
        """The rule ids of all diagnostics, in report order."""
        return [d.rule for d in self.diagnostics]


class KynParseError(KynError):
    """The text does not follow the `.kyn` grammar."""


class KynSemanticError(KynError):
    """Composition or validation rejected the program."""


class KynShapeError(KynSemanticError):
    """Shape inference rejected the program."""


class KynCodegenError(KynError):
    """Lowering, data loading, training or export failed."""


class LockMismatchError(KynError):
    """The lock file does not match the program."""


_CLASS = {"parse": KynParseError, "semantic": KynSemanticError, "shape": KynShapeError,
          "codegen": KynCodegenError, "lock": LockMismatchError}


def error_for(diagnostics: Sequence[KynDiagnostic]) -> KynError:
    """The error class of the most fundamental stage among `diagnostics` (parse before
    semantic before shape ...), carrying all of them."""
    errors = [d for d in diagnostics if d.kind != "warn"]
    for kind in ("parse", "semantic", "shape", "codegen", "lock"):
        if any(d.kind == kind for d in errors):
            return _CLASS[kind](errors)
    return KynError(errors)


def raise_if_errors(diagnostics: Iterable[KynDiagnostic]) -> None:
    """Raise one error carrying every error diagnostic, if there is any."""
    diags = list(diagnostics)
    if any(d.kind != "warn" for d in diags):
        raise error_for(diags)


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`"; did you mean 'x'?"` for the closest candidate, or `""` when none is close."""
    close = difflib.get_close_matches(str(name), sorted(set(candidates)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
