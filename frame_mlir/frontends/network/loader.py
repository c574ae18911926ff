"""Loading and validation of JSON network documents (dlprimitives' format, seed 003).

Validation runs in layers, each reporting everything it finds (the v0 frontend's style:
rule id, JSON pointer, expected vs found, all diagnostics at once):

1. strict JSON (``JSON-001``, shared with the v0 frontend);
2. the JSON Schema built from the operator table (`schema.py`): structure, types,
   operator types (``NET-001``), option keys (``NET-002``) and option values;
   integer booleans the reference reads otherwise (``NET-012``);
3. graph rules here: names and references (``NET-003``, ``NET-004``, ``NET-006``),
   operator arity (``NET-011``);
4. shapes, dtypes, parameters and losses, found by building the network's frame IR
   (`lower.py`; ``NET-005``, ``NET-007``, ``NET-009``, ``NET-010``), so the dialect's
   own shape rules are the only ones.

Rules:

* ``NET-000`` structure: wrong type, missing member, unknown key, value out of range
  (every option's range: the schema's, and `_option_values` for float32 rounding and
  Hardtanh's min_val < max_val; declared input shapes of at most 2^50 elements).
* ``NET-001`` unknown operator type.
* ``NET-002`` unknown option key: a warning (the reference ignores such keys), an
  error with ``strict``.
* ``NET-003`` a tensor that no input or earlier operator produces.
* ``NET-004`` a duplicate name: input, operator, network output, or a tensor produced
  twice (other than in place).
* ``NET-005`` shapes or option values that do not fit the inputs (the deduced shapes
  are in the message); a deduced tensor or parameter of more than 2^50 elements; an
  op the dialect's verifier refuses (each op is verified as it is built).
* ``NET-006`` a cycle: a tensor consumed before the operator producing it runs.
* ``NET-007`` retired: a loss output of several elements is the sum of its elements,
  as in the reference (it was refused before).
* ``NET-009`` a shared parameter used with different shapes or trainability.
* ``NET-010`` a tensor of the wrong dtype (labels are int, everything else float).
* ``NET-011`` the wrong number of inputs for the operator type.
* ``NET-012`` an integer 0 / 1 for a boolean that differs from the option's default:
  read as that boolean, while the reference reads every non-boolean value as the
  default; a warning, an error with ``strict``.

Warnings (``NET-002``, ``NET-012``) are the file's quirks that the reference accepts:
the document loads, each warning goes to the caller's ``warn`` and is kept in
``NetworkSpec.warnings``; ``strict=True`` reports them as errors with the others.

In-place operators (an output named like one of the operator's inputs) are renamed to
SSA values: the k-th redefinition of tensor ``x`` is the value ``x@k``; a later
reference to ``x`` means the latest definition.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from frame_mlir.frontends.common.errors import Diagnostic, SpecError, make_pointer, split_pointer
from frame_mlir.frontends.common.json_document import (
    brief_value,
    decode_document,
    json_type,
    read_document,
)
from frame_mlir.frontends.network.options import (
    F32_MAX,
    INT_MAX,
    OPERATORS,
    REQUIRED,
    Option,
    with_defaults,
)
from frame_mlir.frontends.network.schema import network_schema
from frame_mlir.frontends.network.spec import (
    MAX_ELEMENTS,
    InputSpec,
    NetworkSpec,
    OperatorSpec,
    OutputSpec,
)

__all__ = ["WARNING_RULES", "InputSpec", "NetworkSpec", "OperatorSpec", "OutputSpec", "Warn",
           "is_network_document", "load_network", "network_from_doc"]

#: The rules that are warnings unless `strict`: what the reference accepts silently.
WARNING_RULES = frozenset({"NET-002", "NET-012"})

#: Receives each warning as one line, `<source>: <rule> at <pointer>: <message>`.
Warn = Callable[[str], None]


def is_network_document(doc: object) -> bool:
    """Whether a parsed JSON document is a network (top-level `operators`) rather than a
    v0 model spec (`schema_version`); the tools pick the frontend by this."""
    return isinstance(doc, dict) and "operators" in doc and "schema_version" not in doc


# --------------------------------------------------------------------------- schema layer


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    schema = network_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _suggest(word: str, known: list[str]) -> str:
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _schema_diagnostics(error: ValidationError, doc: Any) -> list[Diagnostic]:
    parts = tuple(error.absolute_path)
    pointer = make_pointer(parts)
    kind, vv, inst = str(error.validator), error.validator_value, error.instance
    if kind in ("allOf", "if", "then"):  # the per-type option checks: report their causes
        return [d for sub in error.context or () for d in _schema_diagnostics(sub, doc)]
    if kind == "required":
        return [Diagnostic("NET-000", make_pointer((*parts, m)), f"member '{m}'", "missing",
                           f"missing required member '{m}' in {pointer or 'the document'}")
                for m in vv if isinstance(inst, dict) and m not in inst]
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        in_options = len(parts) == 3 and parts[0] == "operators" and parts[2] == "options"
        out = []
        for key in inst if isinstance(inst, dict) else ():
            if key in known:
                continue
            if in_options:
                op_type = doc["operators"][parts[1]].get("type")
                listed = ", ".join(known) if known else "none"
                out.append(Diagnostic(
                    "NET-002", make_pointer((*parts, key)), f"an option of {op_type}",
                    f"'{key}'", f"unknown option '{key}' for {op_type}"
                    f"{_suggest(key, known)} (its options: {listed})"))
            else:
                out.append(Diagnostic(
                    "NET-000", make_pointer((*parts, key)), "one of " + ", ".join(known),
                    f"unknown key '{key}'", f"unknown key '{key}'{_suggest(key, known)} "
                    f"(known keys here: {', '.join(known)})"))
        return out
    if kind == "enum" and len(parts) == 3 and parts[0] == "operators" and parts[2] == "type":
        return [Diagnostic("NET-001", pointer, "a known operator type", brief_value(inst),
                           f"unknown operator type {brief_value(inst)}"
                           f"{_suggest(str(inst), list(OPERATORS))} (known: "
                           f"{', '.join(OPERATORS)})")]
    found = brief_value(inst)
    boolean = _boolean_option(parts, doc)
    if boolean is not None:
        return [Diagnostic("NET-000", pointer, "a boolean (true, false, 0 or 1)",
                           f"{json_type(inst)} {found}", f"{boolean}: expected a boolean "
                           f"(true, false, 0 or 1), found {json_type(inst)} {found}")]
    if kind == "type":
        expected = vv if isinstance(vv, str) else " or ".join(vv)
        found = f"{json_type(inst)} {found}"
    elif kind == "enum":
        expected = "one of " + ", ".join(json.dumps(v) for v in vv)
    elif kind == "anyOf" and "options" in parts:
        o = _option(parts, doc)
        low = o.minimum if o is not None and o.minimum is not None else -INT_MAX
        expected = f"an integer or a list of two integers, each in [{low}, {INT_MAX}]"
    elif kind == "anyOf":
        weight = inst.get("loss_weight") if isinstance(inst, dict) else None
        if isinstance(inst, dict) and "loss_weight" in inst and (
                isinstance(weight, bool) or not isinstance(weight, int | float)):
            return [Diagnostic("NET-000", make_pointer((*parts, "loss_weight")), "a number",
                               f"{json_type(weight)} {brief_value(weight)}")]
        if isinstance(weight, int | float) and not abs(weight) <= F32_MAX:
            return [Diagnostic("NET-000", make_pointer((*parts, "loss_weight")),
                               f"a number of at most {F32_MAX} in magnitude (finite in "
                               "float32)", brief_value(weight))]
        expected = "a tensor name or an object {\"name\", \"loss_weight\"}"
    elif kind == "minimum":
        expected = f">= {_text(vv)}"
    elif kind == "maximum":
        expected = f"<= {_text(vv)}"
    elif kind == "exclusiveMinimum":
        expected = f"> {_text(vv)}"
    elif kind in ("minItems", "maxItems"):
        expected = f"{'at least' if kind == 'minItems' else 'at most'} {vv} items"
        found = f"{len(inst)} items"
    elif kind == "minLength":
        expected = "a non-empty string"
    else:
        expected = error.message
    return [Diagnostic("NET-000", pointer, expected, found)]


def _option(parts: tuple[Any, ...], doc: Any) -> Option | None:
    """The operator option at path `parts` (`operators/<i>/options/<key>`), if any."""
    if len(parts) != 4 or parts[0] != "operators" or parts[2] != "options":
        return None
    op_type = doc["operators"][parts[1]].get("type")
    t = OPERATORS.get(op_type) if isinstance(op_type, str) else None
    return t.options.get(str(parts[3])) if t is not None else None


def _boolean_option(parts: tuple[Any, ...], doc: Any) -> str | None:
    """What the boolean at path `parts` is (`option 'ceil_mode' of Pooling2D`,
    `operator key 'frozen'`), or None when the path holds no boolean."""
    if len(parts) == 3 and parts[0] == "operators" and parts[2] == "frozen":
        return "operator key 'frozen'"
    o = _option(parts, doc)
    if o is None or o.kind != "bool":
        return None
    return f"option '{parts[3]}' of {doc['operators'][parts[1]]['type']}"


def _integer_booleans(doc: Any) -> list[Diagnostic]:
    """NET-012: an integer 0 / 1 where a boolean goes that differs from the default.

    We read it as the boolean it stands for (what an ONNX export means by it); the
    reference reads every value that is not a JSON boolean as the option's default
    (`json::value::get(key, default)` catches the failed conversion), so there the two
    readings differ. 0 / 1 equal to the default read alike and pass silently."""
    out: list[Diagnostic] = []
    ops = doc.get("operators") if isinstance(doc, dict) else None
    for i, op in enumerate(ops if isinstance(ops, list) else ()):
        if not isinstance(op, dict):
            continue
        t = OPERATORS.get(op["type"]) if isinstance(op.get("type"), str) else None
        options = op.get("options")
        given: list[tuple[tuple[Any, ...], Any, Any]] = [
            (("operators", i, "frozen"), op.get("frozen"), False)]
        if t is not None and isinstance(options, dict):
            given += [(("operators", i, "options", k), v, t.options[k].default)
                      for k, v in options.items()
                      if k in t.options and t.options[k].kind == "bool"]
        for parts, value, default in given:
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or value not in (0, 1) or default in (None, REQUIRED) \
                    or bool(value) == default:
                continue
            what = _boolean_option(parts, doc)
            out.append(Diagnostic(
                "NET-012", make_pointer(parts), "true or false", f"integer {brief_value(value)}",
                f"{what}: integer {brief_value(value)} is read as {json.dumps(bool(value))}; "
                "the reference reads a value that is not a JSON boolean as the default, "
                f"{json.dumps(default)} (write {json.dumps(bool(value))} to say it)"))
    return out


def _number(value: Any) -> float | None:
    """`value` as a float if it is a number representable in float32 (else the schema
    reports it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value) if abs(value) <= F32_MAX else math.inf
    return v if math.isfinite(v) else None


def _text(value: float) -> str:
    """A number as the document might write it: `1`, `-0.5`, `0.50000000001`."""
    if isinstance(value, int):
        return str(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _option_values(doc: Any) -> list[Diagnostic]:
    """NET-000 for what the schema cannot say: option values that are fine alone but
    not in float32 or together (an eps that rounds to 0 in float32, Hardtanh's
    min_val >= max_val: the dialect's verifiers refuse both later), and declared input
    shapes of more than MAX_ELEMENTS elements. Values the schema refuses are skipped."""
    out: list[Diagnostic] = []
    inputs = doc.get("inputs") if isinstance(doc, dict) else None
    for i, inp in enumerate(inputs if isinstance(inputs, list) else ()):
        shape = inp.get("shape") if isinstance(inp, dict) else None
        if isinstance(shape, list) and shape and all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape):
            n = math.prod(shape)
            if n > MAX_ELEMENTS:
                out.append(Diagnostic("NET-000", f"/inputs/{i}/shape", "at most 2^50 "
                                      "elements", f"{n} elements"))
    ops = doc.get("operators") if isinstance(doc, dict) else None
    for i, op in enumerate(ops if isinstance(ops, list) else ()):
        options = op.get("options") if isinstance(op, dict) else None
        if not isinstance(options, dict):
            continue
        ptr = f"/operators/{i}/options"
        if op.get("type") == "BatchNorm":
            eps = _number(options.get("eps"))
            if eps is not None and eps > 0 and np.float32(eps) == 0:
                out.append(Diagnostic("NET-000", f"{ptr}/eps", "> 0 in float32 (at least "
                                      "1.4e-45)", f"{_text(eps)}, which rounds to 0"))
        elif op.get("type") == "Hardtanh":
            lo = _number(options.get("min_val", -1.0))
            hi = _number(options.get("max_val", 1.0))
            if lo is not None and hi is not None and not np.float32(lo) < np.float32(hi):
                key = "min_val" if "min_val" in options else "max_val"
                out.append(Diagnostic("NET-000", f"{ptr}/{key}", "min_val < max_val (in "
                                      "float32)", f"min_val {_text(lo)} and max_val "
                                      f"{_text(hi)}"))
    return out


def _pointer_key(d: Diagnostic) -> list[tuple[int, int | str]]:
    """Document order of a diagnostic's JSON pointer (array indices numerically)."""
    return [(0, int(t)) if t.isdigit() else (1, t) for t in split_pointer(d.pointer)]


# --------------------------------------------------------------------------- graph layer


def _graph(doc: dict[str, Any], name: str, source: str
           ) -> tuple[NetworkSpec | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    inputs: list[InputSpec] = []
    # tensor name -> (SSA value, producer: -1 for an input, else the operator index)
    latest: dict[str, tuple[str, int]] = {}
    versions: dict[str, int] = {}
    for i, d in enumerate(doc["inputs"]):
        n = d.get("name", "data")
        if n in latest:
            diags.append(Diagnostic("NET-004", f"/inputs/{i}/name", "a unique input name",
                                    f"'{n}'", f"duplicate input name '{n}'"))
            continue
        latest[n] = (n, -1)
        versions[n] = 0
        inputs.append(InputSpec(n, tuple(int(x) for x in d["shape"]), d.get("dtype", "float")))

    producers: dict[str, int] = {}  # every tensor name an operator outputs -> first op
    for i, op in enumerate(doc["operators"]):
        for out in op["outputs"]:
            producers.setdefault(out, i)

    ops: list[OperatorSpec] = []
    op_names: dict[str, int] = {}
    for i, op in enumerate(doc["operators"]):
        ptr = f"/operators/{i}"
        if op["name"] in op_names:
            diags.append(Diagnostic(
                "NET-004", f"{ptr}/name", "a unique operator name", f"'{op['name']}'",
                f"duplicate operator name '{op['name']}' (also operator "
                f"#{op_names[op['name']]})"))
        op_names.setdefault(op["name"], i)
        t = OPERATORS[op["type"]]
        op_inputs = op.get("inputs", [])  # the reference's default: none (a Parameter)
        n_in = len(op_inputs)
        if (t.inputs is None and n_in < 1) or (t.inputs is not None and n_in != t.inputs):
            want = "at least 1" if t.inputs is None else str(t.inputs)
            diags.append(Diagnostic("NET-011", f"{ptr}/inputs", f"{want} input(s)",
                                    str(n_in), f"{op['type']} takes {want} input "
                                    f"tensor(s), found {n_in}"))
        ins: list[str] = []
        ok = True
        for k, tname in enumerate(op_inputs):
            if tname in latest:
                ins.append(latest[tname][0])
                continue
            ok = False
            later = producers.get(tname)
            if later is not None and later >= i:
                diags.append(Diagnostic(
                    "NET-006", f"{ptr}/inputs/{k}", "a tensor produced before this operator",
                    f"'{tname}'", f"tensor '{tname}' is produced by operator "
                    f"'{doc['operators'][later]['name']}' (#{later}), which does not run "
                    "before this one: operators run in order, and the graph must be acyclic "
                    "except for in-place self-edges"))
            else:
                known = list(latest)
                diags.append(Diagnostic(
                    "NET-003", f"{ptr}/inputs/{k}", "a network input or an earlier "
                    "operator's output", f"'{tname}'", f"unknown tensor '{tname}'"
                    f"{_suggest(tname, known)}: no input or earlier operator produces it"))
        outs: list[str] = []
        for k, tname in enumerate(op["outputs"]):
            if tname in latest and tname not in op_inputs:
                prev = latest[tname][1]
                by = "a network input" if prev < 0 else \
                    f"operator '{doc['operators'][prev]['name']}' (#{prev})"
                diags.append(Diagnostic(
                    "NET-004", f"{ptr}/outputs/{k}", "a new tensor name, or one of the "
                    "operator's inputs (in place)", f"'{tname}'",
                    f"tensor '{tname}' is already produced by {by}; only an in-place "
                    "operator (output named like one of its inputs) may reuse a name"))
                ok = False
                continue
            v = versions.get(tname, -1) + 1
            versions[tname] = v
            value = tname if v == 0 else f"{tname}@{v}"
            latest[tname] = (value, i)
            outs.append(value)
        if not ok:
            continue
        params = tuple(None if p in ("", "auto") else p for p in op.get("params", ()))
        ops.append(OperatorSpec(i, op["name"], op["type"], tuple(ins), tuple(outs),
                                bool(op.get("frozen", False)),
                                with_defaults(op["type"], op.get("options", {})), params))

    outputs: list[OutputSpec] = []
    seen: set[str] = set()
    for i, o in enumerate(doc["outputs"]):
        tname = o if isinstance(o, str) else o["name"]
        weight = o.get("loss_weight") if isinstance(o, dict) else None
        if weight is None and tname.startswith("loss"):
            weight = 1.0
        if tname in seen:
            diags.append(Diagnostic("NET-004", f"/outputs/{i}", "a unique output",
                                    f"'{tname}'", f"output '{tname}' is listed twice"))
            continue
        seen.add(tname)
        if tname not in latest:
            diags.append(Diagnostic("NET-003", f"/outputs/{i}", "a tensor of the network",
                                    f"'{tname}'", f"unknown tensor '{tname}'"
                                    f"{_suggest(tname, list(latest))}: no input or "
                                    "operator produces it"))
            continue
        outputs.append(OutputSpec(tname, latest[tname][0],
                                  None if weight is None else float(weight)))
    if diags:
        return None, diags
    return NetworkSpec(name, tuple(inputs), tuple(outputs), tuple(ops), source, doc), []


# --------------------------------------------------------------------------- entry points


def network_from_doc(doc: object, source: str = "<dict>", name: str = "network",
                     check_shapes: bool = True, *, strict: bool = False,
                     warn: Warn | None = None) -> NetworkSpec:
    """Validate a parsed network document and return its NetworkSpec.

    With `check_shapes` (the default) the frame IR is built once, so shape, dtype,
    parameter and loss errors are reported here too. What the reference accepts
    silently -- an unknown option key (NET-002), an integer boolean it reads as the
    default (NET-012) -- is a warning: passed to `warn` as one line each (before any
    error is raised) and kept in the result's `warnings`; `strict` makes them errors.

    Raises:
        SpecError: with every diagnostic found.
    """
    if not isinstance(doc, dict):
        raise SpecError([Diagnostic("NET-000", "", "a JSON object",
                                    f"{json_type(doc)} {brief_value(doc)}",
                                    f"a network must be a JSON object, found "
                                    f"{json_type(doc)}")], source)
    from frame_mlir.frontends.common.json_document import json_value_errors

    diags = json_value_errors(doc)  # a dict from Python may hold NaN, which JSON cannot
    if diags:
        raise SpecError(diags, source)
    diags = [d for e in sorted(_validator().iter_errors(doc), key=lambda e: list(
        map(str, e.absolute_path))) for d in _schema_diagnostics(e, doc)]
    diags = list(dict.fromkeys(diags))  # sub-schemas repeat some
    # in document order by member and entry (/operators/2 before /operators/10); within
    # one entry, in the schema's order
    diags = sorted(diags + _option_values(doc), key=lambda d: _pointer_key(d)[:2])
    quirks = _integer_booleans(doc)
    if strict:
        if quirks:
            diags = sorted(diags + quirks, key=_pointer_key)
        warnings: list[Diagnostic] = []
    else:
        ignored = [dataclasses.replace(d, message=f"{d.message}; ignored, as the "
                                       "reference ignores it")
                   for d in diags if d.rule == "NET-002"]
        warnings = sorted(ignored + quirks, key=_pointer_key)
        diags = [d for d in diags if d.rule not in WARNING_RULES]
    for w in warnings:
        if warn is not None:
            warn(f"{source}: {w}")
    if diags:
        raise SpecError(diags, source)
    spec, diags = _graph(doc, name, source)
    if diags:
        raise SpecError(diags, source)
    assert spec is not None
    if warnings:
        spec = dataclasses.replace(spec, warnings=tuple(warnings))
    if check_shapes:
        from frame_mlir.frontends.network.lower import check_network

        check_network(spec)
    return spec


def _stem(path: str | Path) -> str:
    return "network" if str(path) == "-" else Path(path).stem


def load_network(path: str | Path, *, strict: bool = False,
                 warn: Warn | None = None) -> NetworkSpec:
    """Read, parse and validate the network file at `path` (`-`: standard input);
    `strict` and `warn` as for `network_from_doc`.

    Raises:
        SpecError: with every diagnostic found.
    """
    text, source = read_document(path)
    return load_network_doc(decode_document(text, source, values=False), source, path,
                            strict=strict, warn=warn)


def load_network_doc(doc: object, source: str, path: str | Path, *, strict: bool = False,
                     warn: Warn | None = None) -> NetworkSpec:
    """Validate a document parsed from the file at `path` (named after its stem)."""
    return network_from_doc(doc, source, _stem(path), strict=strict, warn=warn)
