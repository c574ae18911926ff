"""Semantic validation of a composed program (docs/kyn.md, "Errors and warnings").

`validate(program)` checks every rule of the fact sheet's §7 table and the key tables of
`vocab.py` -- block counts, required, unknown and duplicate keys, value types and
ranges, enumerations (with a `did you mean` hint), call arguments, model structure and
cross references -- and returns every diagnostic of the program, not only the first,
with the checked values (defaults filled) for `infer.build_module`.
"""

from __future__ import annotations

import decimal
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from frame_mlir.frontends.kyn.ast import (
    BatchNormLayer,
    Call,
    DenseLayer,
    DropoutLayer,
    Entry,
    Ident,
    InputLayer,
    ListValue,
    Literal,
    Loc,
    ModelBlock,
    ParamRef,
    Program,
    Value,
)
from frame_mlir.frontends.kyn.errors import KynDiagnostic, did_you_mean
from frame_mlir.frontends.kyn.vocab import CALL_SETS, CALLS, ENUMS, KEYS, REQUIRED, Key

__all__ = ["Checked", "validate"]

_NOWHERE = Loc(0, 0, 0, 0)


@dataclass
class Checked:
    """The validated values: per block kind, key -> Python value (defaults filled), and
    call-valued keys as (name, {arg: value})."""

    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    models: dict[str, list[tuple[str, dict[str, Any], Loc]]] = field(default_factory=dict)
    train: dict[str, Any] | None = None
    evaluate: dict[str, Any] | None = None
    export: dict[str, Any] | None = None
    locs: dict[str, Loc] = field(default_factory=dict)  # "train.loss" -> where it is


class _Bad(Exception):
    """A value failed its check (the diagnostic is already recorded)."""


class _Validator:
    def __init__(self, program: Program):
        self.p = program
        self.diags: list[KynDiagnostic] = []
        self.out = Checked()

    def err(self, rule: str, message: str, loc: Loc | None, file: str | None = None) -> None:
        self.diags.append(KynDiagnostic.at(rule, "semantic", message, file or self.p.file,
                                           loc))

    # -- values ----------------------------------------------------------------------
    def check(self, v: Value, key: Key, what: str, file: str | None = None) -> Any:
        t = key.type
        if isinstance(v, ParamRef):  # left by a failed substitution (already reported)
            raise _Bad
        if t in ("int", "float"):
            ok = isinstance(v, Literal) and not isinstance(v.value, bool) and (
                isinstance(v.value, int) or (t == "float" and isinstance(v.value, float)))
            if not ok:
                self.err("KYN-S04", f"{what} must be {'an integer' if t == 'int' else 'a number'}"
                         f", found {_describe(v)}", v.loc, file)
                raise _Bad
            x = v.value if t == "int" else self.float32(v, what, file)
            self.bounds(x, key, what, v.loc, file)
            return x
        if t == "bool":
            if not (isinstance(v, Literal) and isinstance(v.value, bool)):
                self.err("KYN-S04", f"{what} must be true or false, found {_describe(v)}",
                         v.loc, file)
                raise _Bad
            return v.value
        if t == "string":
            if not (isinstance(v, Literal) and isinstance(v.value, str)):
                self.err("KYN-S04", f"{what} must be a quoted string, found {_describe(v)}",
                         v.loc, file)
                raise _Bad
            return v.value
        if t == "name":
            return self.name(v, what, file)
        if t.startswith("enum:"):
            return self.enum(v, t[5:], what, file)
        if t.startswith("list:"):
            if not isinstance(v, ListValue) or not v.items:
                self.err("KYN-S04", f"{what} must be a non-empty list, e.g. "
                         f"[{ENUMS[t[5:]][0]}], found {_describe(v)}", v.loc, file)
                raise _Bad
            out = []
            for item in v.items:
                try:
                    name = self.enum(item, t[5:], f"{t[5:]}", file)
                except _Bad:
                    continue
                if name in out:
                    self.err("KYN-S03", f"{what}: '{name}' is listed twice", item.loc, file)
                out.append(name)
            return tuple(out)
        if t == "intlist":
            if not isinstance(v, ListValue) or not v.items:
                self.err("KYN-S04", f"{what} must be a list of positive integers, found "
                         f"{_describe(v)}", v.loc, file)
                raise _Bad
            return tuple(self.check(i, Key("int", lo=1), f"{what} entry", file)
                         for i in v.items)
        if t == "floatpair":
            if not isinstance(v, ListValue) or len(v.items) != 2:
                self.err("KYN-S04", f"{what} must be a list of two numbers, found "
                         f"{_describe(v)}", v.loc, file)
                raise _Bad
            inner = Key("float", lo=key.lo, hi=key.hi, lo_open=key.lo_open,
                        hi_open=key.hi_open)
            return tuple(self.check(i, inner, f"{what} entry", file) for i in v.items)
        if t.startswith("call:"):
            return self.call(v, t[5:], what, file)
        raise AssertionError(t)

    def float32(self, v: Literal, what: str, file: str | None) -> float:
        """`v` (a number literal) as a float, KYN-S06 unless finite and representable
        in float32: the compiled step computes in float32, where an overflowing value
        is infinite and a tiny one is 0 (`sgd(lr=1e400)`, `adam(eps=1e-50)`)."""
        value = v.value
        try:
            x = float(value)  # type: ignore[arg-type]
            y = struct.unpack("f", struct.pack("f", x))[0]
            why = "infinite" if math.isinf(x) else "not a number" if math.isnan(x) else \
                _BEYOND if math.isinf(y) else \
                "rounds to 0 in float32" if y == 0.0 and x != 0.0 else None
        except OverflowError:  # an int beyond any float, or beyond float32
            x, why = 0.0, _BEYOND
        if why is not None:
            found = v.text if v.text and len(v.text) <= 24 else _number(value)  # type: ignore[arg-type]
            self.err("KYN-S06", f"{what} must be finite and representable in float32 "
                     f"({why}), found {found}", v.loc, file)
            raise _Bad
        return x

    def bounds(self, x: float, key: Key, what: str, loc: Loc, file: str | None) -> None:
        lo_bad = key.lo is not None and (x < key.lo or (key.lo_open and x == key.lo))
        hi_bad = key.hi is not None and (x > key.hi or (key.hi_open and x == key.hi))
        if lo_bad or hi_bad:
            lo, hi = _number(key.lo), _number(key.hi)
            if key.lo is not None and key.hi is not None:
                rng = (f"in {'(' if key.lo_open else '['}{lo}, {hi}"
                       f"{')' if key.hi_open else ']'}")
            elif key.lo is not None:
                rng = f"{'>' if key.lo_open else '>='} {lo}"
            else:
                rng = f"{'<' if key.hi_open else '<='} {hi}"
            self.err("KYN-S06", f"{what} must be {rng}, found {_number(x)}", loc, file)
            raise _Bad

    def name(self, v: Value, what: str, file: str | None) -> str:
        if isinstance(v, Ident):
            return v.name
        if isinstance(v, Literal) and isinstance(v.value, str) and v.value.isidentifier():
            return v.value
        self.err("KYN-S04", f"{what} must be a name, found {_describe(v)}", v.loc, file)
        raise _Bad

    def enum(self, v: Value, enum: str, what: str, file: str | None, where: str = "") -> str:
        """The member named by `v`; `where` follows the name in the message (KynML's
        `Unsupported activation 'elu' in model 'Net'`)."""
        members = ENUMS[enum]
        name = self.name(v, what, file)
        if name not in members:
            self.err("KYN-S05", f"Unsupported {what} '{name}'{where}; expected one of "
                     f"{', '.join(members)}{did_you_mean(name, members)}", v.loc, file)
            raise _Bad
        return name

    def call(self, v: Value, kind: str, what: str, file: str | None
             ) -> tuple[str, dict[str, Any]]:
        allowed = CALL_SETS[kind]
        if isinstance(v, Ident | Literal) and kind not in ("source",):
            call = Call(self.name(v, what, file), (), (), v.loc)
        elif isinstance(v, Call):
            call = v
        else:
            example = {"source": 'csv("data.csv")', "optimizer": "adam(lr=0.001)",
                       "scheduler": "step(step_size=10)",
                       "early_stop": "early_stop(patience=5)",
                       "checkpoint": "checkpoint(every_n=10)"}[kind]
            self.err("KYN-S08" if kind == "source" else "KYN-S04",
                     f"{what} must be a call such as {example}, found {_describe(v)}",
                     v.loc, file)
            raise _Bad
        if call.name not in allowed:
            label = "connector" if kind == "source" else kind
            self.err("KYN-S05" if kind != "source" else "KYN-S08",
                     f"Unsupported {label} '{call.name}'; expected "
                     f"{'one of ' if len(allowed) > 1 else ''}{', '.join(allowed)}"
                     f"{did_you_mean(call.name, allowed)}", call.loc, file)
            raise _Bad
        table = CALLS[call.name]
        if kind == "source" and (len(call.args) != 1 or call.kwargs):
            self.err("KYN-S08", f"{what} must be csv(\"<path>\") with exactly one "
                     f"positional argument, found {len(call.args)} positional and "
                     f"{len(call.kwargs)} keyword arguments", call.loc, file)
            raise _Bad
        if kind == "source" and isinstance(call.args[0], Literal) \
                and isinstance(call.args[0].value, str) and "\0" in call.args[0].value:
            # No file system takes it: pathlib would raise "embedded null byte" later.
            self.err("KYN-S08", f"{what} path must not contain a NUL character, found "
                     f"{call.args[0].value!r}", call.args[0].loc, file)
            raise _Bad
        given: dict[str, tuple[Value, Loc]] = {}
        names = list(table)
        ok = True
        if len(call.args) > len(names):
            self.err("KYN-S14", f"{call.name}() takes at most {len(names)} positional "
                     f"arguments ({', '.join(names)}), found {len(call.args)}", call.loc, file)
            raise _Bad
        for n, a in zip(names, call.args, strict=False):
            given[n] = (a, a.loc)
        for kw in call.kwargs:
            if kw.name not in table:
                self.err("KYN-S14", f"{call.name}() has no argument '{kw.name}'; accepted: "
                         f"{', '.join(names)}{did_you_mean(kw.name, names)}", kw.loc, file)
                ok = False
                continue
            if kw.name in given:
                self.err("KYN-S03", f"{call.name}() argument '{kw.name}' given twice",
                         kw.loc, file)
                ok = False
                continue
            given[kw.name] = (kw.value, kw.loc)
        args: dict[str, Any] = {}
        for n, key in table.items():
            if n in given:
                try:
                    args[n] = self.check(given[n][0], key, f"{call.name}() argument '{n}'",
                                         file)
                except _Bad:
                    ok = False
            elif key.default is REQUIRED:
                self.err("KYN-S13", f"{call.name}() needs the argument '{n}' ({key.doc})",
                         call.loc, file)
                ok = False
            else:
                args[n] = key.default
        if not ok:
            raise _Bad
        return call.name, args

    # -- blocks ----------------------------------------------------------------------
    def keyed(self, kind: str, entries: tuple[Entry, ...], header: Loc, label: str,
              file: str | None = None) -> dict[str, Any]:
        table = KEYS[kind]
        out: dict[str, Any] = {}
        seen: dict[str, Entry] = {}
        for e in entries:
            if e.key not in table:
                self.err("KYN-S02", f"unknown key '{e.key}' in {label}; expected one of "
                         f"{', '.join(table)}{did_you_mean(e.key, table)}", e.key_loc, file)
                continue
            if e.key in seen:
                self.err("KYN-S03", f"duplicate key '{e.key}' in {label} (first set on line "
                         f"{seen[e.key].loc.line})", e.key_loc, file)
                continue
            seen[e.key] = e
            self.out.locs[f"{kind}.{e.key}"] = e.loc
            try:
                key = table[e.key]
                # an enum reads as KynML's `Unsupported <enum> '<x>'` (`format`, `loss`)
                what = key.type[5:] if key.type.startswith("enum:") else \
                    e.key if kind == "train" else f"{label}: {e.key}"
                out[e.key] = self.check(e.value, key, what, file)
            except _Bad:
                out[e.key] = _Bad
        for k, key in table.items():
            if k not in seen:
                if key.default is REQUIRED:
                    self.err("KYN-S13", f"{label} needs the key '{k}' ({key.doc})", header,
                             file)
                    out[k] = _Bad
                else:
                    out[k] = key.default
        return out

    def model(self, m: ModelBlock) -> None:
        file = m.origin or self.p.file
        label = f"model '{m.name}'"
        layers: list[tuple[str, dict[str, Any], Loc]] = []
        inputs = [i for i, x in enumerate(m.layers) if isinstance(x, InputLayer)]
        dense = [i for i, x in enumerate(m.layers) if isinstance(x, DenseLayer)]
        if not m.layers:
            self.err("KYN-S09", f"{label} has no layers; it must start with 'input N' and "
                     f"have at least one dense layer", m.name_loc, file)
        elif len(inputs) != 1 or inputs[0] != 0:
            where = m.layers[inputs[1]].loc if len(inputs) > 1 else m.layers[0].loc
            found = (f"{len(inputs)} input layers" if len(inputs) != 1 else
                     f"'{m.layers[0].keyword}' first")
            self.err("KYN-S09", f"{label} must start with exactly one input layer, found "
                     f"{found}", where, file)
        if m.layers and not dense:
            self.err("KYN-S09", f"{label} needs at least one dense layer", m.name_loc, file)
        for layer in m.layers:
            try:
                if isinstance(layer, InputLayer):
                    n = self.check(layer.size, Key("int", lo=1), "input size", file)
                    layers.append(("input", {"size": n}, layer.loc))
                elif isinstance(layer, DenseLayer):
                    n = self.check(layer.units, Key("int", lo=1), "dense units", file)
                    act = "linear" if layer.activation is None else self.enum(
                        layer.activation, "activation", "activation", file, f" in {label}")
                    layers.append(("dense", {"units": n, "activation": act}, layer.loc))
                elif isinstance(layer, DropoutLayer):
                    r = self.check(layer.rate, Key("float", lo=0, hi=1, hi_open=True),
                                   "dropout rate", file)
                    layers.append(("dropout", {"rate": r}, layer.loc))
                elif isinstance(layer, BatchNormLayer):
                    f = None if layer.features is None else self.check(
                        layer.features, Key("int", lo=1), "batchnorm size", file)
                    layers.append(("batchnorm", {"features": f}, layer.loc))
            except _Bad:
                layers.append(("bad", {}, layer.loc))
        self.out.models[m.name] = layers

    def run(self) -> tuple[Checked, list[KynDiagnostic]]:
        p = self.p
        kinds = [b.kind for b in p.items]
        first_line = Loc(1, 1, 1, 1)
        for kind, label in (("dataset", "a dataset block"), ("model", "a model block"),
                            ("train", "a train block")):
            if kind not in kinds:
                self.err("KYN-S01", f"the program needs {label} ('{kind}"
                         f"{' <Name>' if kind != 'train' else ''}:')", first_line)
        for kind in ("train", "evaluate", "export", "params", "sweep"):
            blocks = [b for b in p.items if b.kind == kind]
            for extra in blocks[1:]:
                self.err("KYN-S01", f"a program has at most one '{kind}:' block; another "
                         f"starts on line {blocks[0].loc.line}",
                         Loc(extra.loc.line, 1, extra.loc.line, len(kind) + 2))
        for names, what in ((p.datasets, "dataset"), (p.models, "model")):
            seen: dict[str, Any] = {}
            for b in names:
                if b.name in seen and seen[b.name].origin == b.origin:
                    self.err("KYN-S11", f"duplicate {what} '{b.name}' (first defined on "
                             f"line {seen[b.name].loc.line})", b.name_loc, b.origin or None)
                seen.setdefault(b.name, b)
        for d in p.datasets:
            if d.name in self.out.datasets:
                continue
            self.out.datasets[d.name] = self.keyed("dataset", d.entries, d.name_loc,
                                                   f"dataset '{d.name}'", d.origin or None)
            self.out.locs[f"dataset:{d.name}"] = d.name_loc
            for e in d.entries:  # where the data path is written (infer checks the file)
                if e.key == "source" and isinstance(e.value, Call) and e.value.args:
                    self.out.locs[f"dataset:{d.name}.path"] = e.value.args[0].loc
        for m in p.models:
            if m.name not in self.out.models:
                self.model(m)
                self.out.locs[f"model:{m.name}"] = m.name_loc
        if p.train is not None:
            t = self.keyed("train", p.train.entries, Loc(p.train.loc.line, 1,
                                                         p.train.loc.line, 7), "train")
            self.out.train = t
            for key, table, what in (("model", self.out.models, "model"),
                                     ("data", self.out.datasets, "dataset")):
                name = t.get(key)
                if isinstance(name, str) and name not in table:
                    self.err("KYN-S07", f"train references unknown {what} '{name}'; defined: "
                             f"{', '.join(table) or 'none'}{did_you_mean(name, table)}",
                             self.out.locs.get(f"train.{key}"))
        if p.evaluate is not None:
            self.out.evaluate = self.keyed("evaluate", p.evaluate.entries,
                                           Loc(p.evaluate.loc.line, 1, p.evaluate.loc.line, 10),
                                           "evaluate")
        if p.export is not None:
            ex = self.keyed("export", p.export.entries,
                            Loc(p.export.loc.line, 1, p.export.loc.line, 8), "export")
            if ex.get("format") == "onnx" and ex.get("input_shape") is None:
                self.err("KYN-S13", "onnx export requires input_shape, e.g. "
                         "input_shape = [1, <input features>]",
                         self.out.locs.get("export.format"))
            self.out.export = ex
        return self.out, self.diags


def validate(program: Program) -> tuple[Checked, list[KynDiagnostic]]:
    """Every semantic diagnostic of a composed program, and its checked values (a value
    that failed its check is the `_Bad` class; `infer` skips what depends on it)."""
    return _Validator(program).run()


BAD = _Bad


#: float32's largest finite magnitude
_F32_MAX = 3.4028234663852886e38
_BEYOND = f"beyond float32's largest magnitude {_F32_MAX:g}"


def _number(x: float | None) -> str:
    """`x` as `%g` shows it; an integer exactly up to 16 digits (a bound such as
    4294967295), beyond that `%g`-style without converting it to a float (an integer
    literal may exceed every float)."""
    if x is None:
        return ""
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x) if abs(x) < 10**16 else format(decimal.Decimal(x), ".6g")
    return f"{x:g}"


def _describe(v: Value) -> str:
    if isinstance(v, Literal):
        if isinstance(v.value, bool):
            return f"the boolean {str(v.value).lower()}"
        if isinstance(v.value, str):
            return f'the string "{v.value}"'
        return f"{'the integer' if isinstance(v.value, int) else 'the number'} {v.value!r}"
    if isinstance(v, Ident):
        return f"the name '{v.name}'"
    if isinstance(v, ListValue):
        return "a list"
    if isinstance(v, Call):
        return f"the call {v.name}(...)"
    return f"${v.name}"
