"""Composition passes, run before validation: imports, `$name` substitution, sweeps.

* `resolve_imports` merges the `dataset` and `model` blocks of imported files (paths
  relative to the importing file) into the host program, recursively. A cycle is an error
  naming the chain; a file reached twice through different paths (a diamond) is merged
  once; a name defined in two different files is a duplicate error.
* `substitute_params` replaces every `ParamRef` by a literal: `overrides` (the CLI's
  `--param`) first, then the program's `params` block. An unknown name is an error listing
  the known ones (KynML's wording).
* `expand_sweep` gives one `(combination, program)` per point of the sweep's Cartesian
  product, first axis slowest. A `--param` of an axis's name fixes that axis.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path
from typing import Any

from frame_mlir.fileio import open_regular
from frame_mlir.frontends.kyn.ast import (
    Call,
    DatasetBlock,
    Entry,
    Ident,
    KwArg,
    ListValue,
    Literal,
    Loc,
    ModelBlock,
    ParamRef,
    Program,
    Value,
)
from frame_mlir.frontends.kyn.errors import (
    KynDiagnostic,
    KynParseError,
    KynSemanticError,
    did_you_mean,
)

__all__ = ["coerce_param", "expand_sweep", "parse_overrides", "resolve_imports",
           "substitute_params"]


def _diag(rule: str, message: str, file: str, loc: Loc | None) -> KynDiagnostic:
    return KynDiagnostic.at(rule, "semantic", message, file, loc)


# -- imports -----------------------------------------------------------------------------
def resolve_imports(program: Program, source_path: str | None = None,
                    diags: list[KynDiagnostic] | None = None) -> Program:
    """`program` with the dataset and model blocks of its imports merged in (imported
    blocks first, in import order). Problems go to `diags` when given, else raise."""
    own: list[KynDiagnostic] = [] if diags is None else diags
    if not program.imports:
        return program
    base = Path(source_path).resolve().parent if source_path else Path.cwd()
    start = str(Path(source_path).resolve()) if source_path else program.file
    seen: dict[str, tuple[DatasetBlock | ModelBlock, ...]] = {}
    # (block, the host's import line that brought it in: where a duplicate is reported)
    merged: list[tuple[DatasetBlock | ModelBlock, Loc]] = []
    for imp in program.imports:
        for b in _load_import(imp.path, imp.loc, base, program.file, [start], seen, own,
                              base):
            merged.append((b, imp.loc))
    # duplicates: between or inside imported files (origins are paths relative to the
    # host's folder, so two files of one name in different folders differ), and with
    # the host
    where: dict[tuple[str, str], str] = {}
    out: list[DatasetBlock | ModelBlock] = []
    for b, iloc in merged:
        key = (b.kind, b.name)
        if key in where:
            both = (f"defined twice in {b.origin}" if where[key] == b.origin else
                    f"defined in both {where[key]} and {b.origin}")
            own.append(_diag("KYN-S11", f"duplicate {b.kind} '{b.name}' ({both})",
                             program.file, iloc))
            continue
        where[key] = b.origin
        out.append(b)
    for b in (*program.datasets, *program.models):
        key = (b.kind, b.name)
        if key in where:
            own.append(_diag("KYN-S11", f"duplicate {b.kind} '{b.name}' (also defined in "
                             f"{where[key]})", program.file, b.name_loc))
    if diags is None and own:
        raise KynSemanticError(own)
    names = {(b.kind, b.name) for b in (*program.datasets, *program.models)}
    kept = tuple(b for b in out if (b.kind, b.name) not in names)
    return dataclasses.replace(
        program, datasets=tuple(b for b in kept if isinstance(b, DatasetBlock))
        + program.datasets,
        models=tuple(b for b in kept if isinstance(b, ModelBlock)) + program.models,
        items=kept + program.items)


def _load_import(rel: str, loc: Loc, base: Path, host: str, chain: list[str],
                 seen: dict[str, tuple[DatasetBlock | ModelBlock, ...]],
                 diags: list[KynDiagnostic], root: Path
                 ) -> tuple[DatasetBlock | ModelBlock, ...]:
    from frame_mlir.frontends.kyn.parser import parse_with_diagnostics

    path = (base / rel).resolve()
    key = str(path)
    # the file's name in diagnostics and `origin`: relative to the main program's folder
    name = Path(os.path.relpath(path, root)).as_posix()
    if key in chain:
        cycle = " -> ".join(Path(p).name for p in [*chain[chain.index(key):], key])
        diags.append(_diag("KYN-S12", f"import cycle: {cycle}", host, loc))
        return ()
    if key in seen:  # a diamond: the file's blocks are merged once
        return ()
    try:
        with open_regular(path, "r", encoding="utf-8") as f:  # no device, FIFO, folder
            text = f.read()
    except FileNotFoundError:
        diags.append(_diag("KYN-S12", f"imported file '{rel}' not found (looked for {path})",
                           host, loc))
        return ()
    except OSError as e:
        diags.append(_diag("KYN-S12", f"cannot read imported file '{rel}': "
                           f"{e.strerror or e}", host, loc))
        return ()
    except UnicodeDecodeError as e:
        diags.append(_diag("KYN-S12", f"cannot read imported file '{rel}': {e}", host, loc))
        return ()
    sub, errors = parse_with_diagnostics(text, name)
    sub = dataclasses.replace(sub, file=name)
    if errors:
        diags.extend(errors)
    blocks: list[DatasetBlock | ModelBlock] = []
    for imp in sub.imports:
        blocks.extend(_load_import(imp.path, imp.loc, path.parent, name, [*chain, key], seen,
                                   diags, root))
    for b in (*sub.datasets, *sub.models):
        blocks.append(dataclasses.replace(b, origin=name))
    seen[key] = tuple(blocks)
    return tuple(blocks)


# -- params ------------------------------------------------------------------------------
def coerce_param(text: str) -> Any:
    """A `--param` value: int, else float, else `true`/`false` as a boolean, else the
    string (docs/kyn.md)."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text in ("true", "false"):
        return text == "true"
    return text


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """`["k=v", ...]` from the CLI as a dict; only the first `=` splits. A malformed item
    is a ValueError naming it."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"--param expects key=value with an identifier key, found "
                             f"'{item}'")
        out[key] = coerce_param(value.strip())
    return out


def _literal(value: Any, loc: Loc) -> Value:
    if isinstance(value, Value.__args__):  # type: ignore[attr-defined]
        return value
    if isinstance(value, list | tuple):
        return ListValue(tuple(_literal(v, loc) for v in value), loc)
    # a string stays a string: the validator also accepts it where an identifier is
    # expected (`--param act=gelu`), and a string key keeps it (`--param tgt=price`)
    return Literal(value, loc, "")


def substitute_params(program: Program, overrides: dict[str, Any] | None = None,
                      diags: list[KynDiagnostic] | None = None) -> Program:
    """`program` with every `$name` replaced: `overrides` first, then `params`."""
    own: list[KynDiagnostic] = [] if diags is None else diags
    table: dict[str, Value] = {}
    if program.params is not None:
        for e in program.params.entries:
            table[e.key] = e.value
    for k, v in (overrides or {}).items():
        table[k] = v if isinstance(v, Value.__args__) else _literal(v, Loc(0, 0, 0, 0))  # type: ignore[attr-defined]
    known = sorted(program.params.values) if program.params else []

    def sub(v: Any, file: str) -> Any:
        if isinstance(v, ParamRef):
            if v.name not in table:
                own.append(_diag("KYN-S10", f"Undefined parameter reference '${v.name}'. "
                                 f"Known params: {known}{did_you_mean(v.name, table)}",
                                 file, v.loc))
                return v
            got = table[v.name]
            if isinstance(got, ParamRef):
                own.append(_diag("KYN-S10", f"params value '${got.name}' for '{v.name}': "
                                 f"params hold literal values, not references", file, got.loc))
                return v
            # the value takes the reference's place (errors about it point there)
            return dataclasses.replace(got, loc=v.loc)
        if isinstance(v, ListValue):
            return dataclasses.replace(v, items=tuple(sub(i, file) for i in v.items))
        if isinstance(v, Call):
            return dataclasses.replace(
                v, args=tuple(sub(a, file) for a in v.args),
                kwargs=tuple(KwArg(k.name, sub(k.value, file), k.loc) for k in v.kwargs))
        return v

    def block(b: Any) -> Any:
        file = getattr(b, "origin", "") or program.file
        if isinstance(b, ModelBlock):
            layers = []
            for layer in b.layers:
                changes = {f.name: sub(getattr(layer, f.name), file)
                           for f in dataclasses.fields(layer) if f.name != "loc"
                           and getattr(layer, f.name) is not None}
                layers.append(dataclasses.replace(layer, **changes))
            return dataclasses.replace(b, layers=tuple(layers))
        if hasattr(b, "entries") and b.kind not in ("params", "sweep"):
            return dataclasses.replace(b, entries=tuple(
                Entry(e.key, sub(e.value, file), e.loc, e.key_loc) for e in b.entries))
        return b

    items = tuple(block(b) for b in program.items)
    if diags is None and own:
        raise KynSemanticError(own)
    return Program.from_items(items, program.comments, program.file)


# -- sweeps ------------------------------------------------------------------------------
def expand_sweep(program: Program, overrides: dict[str, Any] | None = None
                 ) -> list[tuple[dict[str, Any], Program]]:
    """One `(combination, resolved program)` per sweep point, first axis slowest; a
    program without a sweep gives `[({}, resolved)]`. A `--param` naming an axis fixes it.
    """
    overrides = dict(overrides or {})
    axes = {}
    if program.sweep is not None:
        for e in program.sweep.entries:
            if not isinstance(e.value, ListValue):
                raise KynParseError([KynDiagnostic(
                    "KYN-P05", "parse", f"sweep axis '{e.key}' must be a list", program.file,
                    e.loc.line, e.loc.col, e.loc.end_line, e.loc.end_col)])
            if e.key not in overrides:
                axes[e.key] = e.value.items
    names = list(axes)
    out = []
    for combo in itertools.product(*(axes[n] for n in names)):
        values = dict(zip(names, combo, strict=True))
        resolved = substitute_params(program, {**values, **overrides})
        plain = {k: (v.value if isinstance(v, Literal) else
                     v.name if isinstance(v, Ident) else v) for k, v in values.items()}
        out.append((plain, resolved))
    return out
