"""Editor diagnostics for `.kyn` source: every problem of a file as plain dictionaries.

`diagnose(text)` is KynML's API (shared/docs/kyn-language.md section 10): it never
raises, and turns each finding of the full analysis (parse, composition, validation,
shape inference) into a dict with ``line, col, end_line, end_col`` (1-based lines and
columns, end column exclusive, 0 where there is no place), ``severity`` (``"error"`` or
``"warning"``), ``message``, ``code`` (``"parse"``, ``"semantic"``, ``"shape"``,
``"warn"`` or ``"codegen"``) and ``rule`` (our rule id, e.g. ``"KYN-S02"``). Unlike
KynML's, every error of the file is reported, not only the first.

The analysis is `frame_mlir.frontends.kyn.pipeline.analyze`. A crash of the analysis itself is
reported as a diagnostic (rule ``KYN-X00``) rather than hidden. A finding about an
imported file is placed on the import that leads to it, the file and line named in the
message.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frame_mlir.frontends.kyn import pipeline
from frame_mlir.frontends.kyn.ast import Import, Loc, Program
from frame_mlir.frontends.kyn.errors import KynDiagnostic, KynError
from frame_mlir.frontends.kyn.parser import parse_with_diagnostics

__all__ = ["EditorReport", "analyze_for_editor", "diagnose", "format_diagnostic", "to_dict"]

#: the codes `diagnose` reports; a diagnostic kind outside them (``lock``) reads as
#: ``semantic``: it is about the program, not the toolchain
CODES = ("parse", "semantic", "shape", "warn", "codegen")

#: rule of a diagnostic that reports a crash of the analysis itself
INTERNAL_RULE = "KYN-X00"


@dataclass
class EditorReport:
    """What the language server needs from one analysis of a document.

    Attributes:
        diagnostics: `diagnose`'s dictionaries, sorted by position.
        layer_shapes: 1-based source line of a model layer -> its inferred shape, e.g.
            ``"dense 64 relu: [batch, 10] -> [batch, 64]"`` (empty without analysis).
        program: the parsed program (composed when the analysis got that far), or None.
    """

    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    layer_shapes: dict[int, str] = field(default_factory=dict)
    program: Program | None = None


def to_dict(d: KynDiagnostic) -> dict[str, Any]:
    """One `KynDiagnostic` as `diagnose` reports it. A missing end is the start."""
    line, col = max(d.line, 0), max(d.col, 0)
    end_line, end_col = d.end_line, d.end_col
    if end_line <= 0 or (end_line, end_col) < (line, col):
        end_line, end_col = line, col
    return {"line": line, "col": col, "end_line": end_line, "end_col": end_col,
            "severity": d.severity, "message": d.message,
            "code": d.kind if d.kind in CODES else "semantic", "rule": d.rule}


def analyze_for_editor(text: str, source_name: str = "<string>",
                       path: str | None = None) -> EditorReport:
    """Analyse `text` once for an editor: diagnostics, layer shapes and the program.
    Never raises (a crash of the analysis becomes an error diagnostic)."""
    report = EditorReport()
    try:
        analysis = pipeline.analyze(text, source_name, path=path)
        diags = list(analysis.diagnostics)
        report.program = analysis.program
        report.layer_shapes = dict(analysis.layer_shapes)
    except KynError as e:  # a stage that raised instead of collecting: still report it
        diags = e.diagnostics
    except Exception as e:  # noqa: BLE001 -- diagnose never raises, it reports
        diags = [KynDiagnostic(INTERNAL_RULE, "codegen",
                               f"internal error in the .kyn analysis: "
                               f"{type(e).__name__}: {e}", source_name)]
    parsed: Program | None = None
    if report.program is None or any(not _same_file(d.file, source_name, path)
                                     for d in diags):
        try:  # completion and hover want the blocks that parsed; relocation the imports
            parsed = parse_with_diagnostics(text, source_name)[0]
        except Exception:  # noqa: BLE001 -- the parser's own failure is reported above
            parsed = None
        report.program = report.program or parsed
    imports = list(parsed.imports) if parsed is not None else []
    diags = [_here(d, source_name, path, imports) for d in diags]
    report.diagnostics = sorted((to_dict(d) for d in diags),
                                key=lambda d: (d["line"], d["col"]))
    return report


def _same_file(file: str, source_name: str, path: str | None) -> bool:
    if not file or file in ("<string>", source_name):
        return True
    try:
        return path is not None and os.path.samefile(file, path)
    except OSError:
        return False


def _import_line(file: str, imports: list[Import]) -> Import | None:
    """The import of this document through which `file` was reached: the one naming it,
    else the first (a deeper import is reached through one of them)."""
    for imp in imports:
        if imp.path == file or Path(imp.path).name == Path(file).name:
            return imp
    return imports[0] if imports else None


def _here(d: KynDiagnostic, source_name: str, path: str | None,
          imports: list[Import]) -> KynDiagnostic:
    """A diagnostic about another file (an import) has no place in this document: it is
    put on the import that leads there (or the top of the document), its own file and
    line moved into the message."""
    if _same_file(d.file, source_name, path):
        return d
    where = f"{d.file}:{d.line}" if d.line else d.file
    imp = _import_line(d.file, imports)
    loc = imp.loc if imp is not None else Loc(0, 0, 0, 0)
    return dataclasses.replace(d, message=f"in {where}: {d.message}", file=source_name,
                               line=loc.line, col=loc.col, end_line=loc.end_line,
                               end_col=loc.end_col)


def diagnose(text: str, source_name: str = "<string>",
             path: str | None = None) -> list[dict[str, Any]]:
    """Every error and warning of `text` as dictionaries (see the module docstring),
    sorted by position. Never raises. `path`, the file's location on disk, lets imports
    and CSV paths resolve relative to it."""
    return analyze_for_editor(text, source_name, path).diagnostics


def format_diagnostic(d: dict[str, Any]) -> str:
    """KynML's print form: ``"{line}:{col}: [{severity}] {message}"``."""
    return f"{d['line']}:{d['col']}: [{d['severity']}] {d['message']}"
