"""The `.kyn` front door: source text -> every diagnostic -> the resolved module.

    parse -> resolve_imports -> substitute_params -> validate -> infer (shapes)

`analyze` never raises for a bad program: it returns every diagnostic it found (all
syntax errors; or every composition, semantic and shape error of a program that parses)
with what it could build. `compile_module_from_file` raises the errors instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frame_mlir.frontends.kyn.ast import Program
from frame_mlir.frontends.kyn.compose import resolve_imports, substitute_params
from frame_mlir.frontends.kyn.errors import KynDiagnostic, raise_if_errors
from frame_mlir.frontends.kyn.infer import build_module, check_rows, layer_shapes
from frame_mlir.frontends.kyn.module import KynModule
from frame_mlir.frontends.kyn.parser import parse_with_diagnostics, read_source
from frame_mlir.frontends.kyn.validate import validate

__all__ = ["Analysis", "analyze", "count_rows", "data_diagnostics", "load_module",
           "read_source"]


@dataclass
class Analysis:
    """What the front end made of a program."""

    program: Program | None
    module: KynModule | None
    diagnostics: list[KynDiagnostic] = field(default_factory=list)
    #: 1-based source line of a layer -> its inferred shape, for hovers
    layer_shapes: dict[int, str] = field(default_factory=dict)

    @property
    def errors(self) -> list[KynDiagnostic]:
        return [d for d in self.diagnostics if d.kind != "warn"]

    @property
    def warnings(self) -> list[KynDiagnostic]:
        return [d for d in self.diagnostics if d.kind == "warn"]


def analyze(text: str, file: str = "<string>", path: str | None = None,
            overrides: dict[str, Any] | None = None, *, composed: Program | None = None
            ) -> Analysis:
    """Every diagnostic of `text` (named `file`; `path` locates imports and data, default
    `file`), and the module when there is no error. `overrides` are `--param` values."""
    path = path if path is not None else (None if file.startswith("<") else file)
    if composed is None:
        program, diags = parse_with_diagnostics(text, file)
        if diags:
            return Analysis(program, None, diags)
        diags = []
        program = resolve_imports(program, path, diags)
        params_values = {**(program.params.values if program.params else {}),
                         **(overrides or {})}
        program = substitute_params(program, overrides, diags)
    else:
        program, diags = composed, []
        params_values = dict(overrides or {})
    checked, sem = validate(program)
    diags.extend(sem)
    module, models = build_module(program, checked, text, path, diags, params_values)
    # report in reading order (composition, validation and inference each walk the
    # program their own way)
    diags.sort(key=lambda d: (d.file != file, d.file, d.line, d.col))
    batch = checked.train.get("batch") if checked.train else None
    shapes = layer_shapes(models, batch if isinstance(batch, int) else None)
    return Analysis(program, module, diags, shapes)


def load_module(path: str | Path, overrides: dict[str, Any] | None = None
                ) -> tuple[KynModule, list[KynDiagnostic]]:
    """The module of the `.kyn` file at `path` and its warnings; raises the KynError of
    every error otherwise."""
    text = read_source(path)
    a = analyze(text, str(path), str(path), overrides)
    raise_if_errors(a.diagnostics)
    assert a.module is not None
    return a.module, a.warnings


def count_rows(path: str) -> int | None:
    """The data rows of the CSV file at `path` as the CSV connector counts them (blank
    lines skipped, the first other row is the header), read with the csv module alone
    (`validate` stays free of numpy); None when the file cannot be read as CSV (training
    reports why, KYN-C01) or is not a regular file (IO-001 at validate time)."""
    import csv

    from frame_mlir.fileio import open_regular

    n = -1
    try:
        with open_regular(path, "r", newline="", encoding="utf-8-sig") as f:
            for row in csv.reader(f):
                if row and (len(row) > 1 or row[0].strip()):
                    n += 1
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return max(n, 0)


def data_diagnostics(module: KynModule) -> list[KynDiagnostic]:
    """What the trained dataset's row count decides (`infer.check_rows`), when its file
    can be read; `frame-kyn validate` reports these with the program's other errors."""
    import math

    d = module.dataset
    n = count_rows(d.resolved)
    if not n:
        return []
    return check_rows(module, math.floor(n * d.split), n)
