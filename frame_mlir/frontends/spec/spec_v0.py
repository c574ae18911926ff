"""Loading and validation of JSON model specs, schema_version 0 (seed 000, sections 1-3).

Validation runs in three layers, and each reports everything it finds:

1. **Strict JSON** (``JSON-001``): syntax errors (pointer ``file:line:col``), non-finite numbers
   (``NaN``/``Infinity`` literals and overflowing exponents, which Python's ``json`` would
   accept) and duplicate keys (pointer = the member). A document failing this layer is
   ambiguous, so the later layers do not run on it.
2. **Schema** (``schema_v0.json``, JSON Schema 2020-12): structure, types, enumerations,
   ranges; unknown keys are errors everywhere. Each schema error is mapped to the most specific
   rule (see :func:`_schema_rule`), falling back to ``FE-000``.
3. **Semantic rules** FE-002 (name references), FE-003 (shape chain, element counts) and
   FE-005 (data completeness), run on whatever parts of the document are structurally sound,
   so that one broken field does not hide faults elsewhere nor cascade into noise.

A document whose ``schema_version`` is a number other than 0 gets only the FE-001 diagnostic:
it is governed by another schema, and reporting v0 complaints about it would mislead.

Pointer conventions: a missing member is reported at the pointer it would have
(``/data/target``), an unknown key at its own pointer (``/model/colour``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from frame_mlir.frontends.common.errors import Diagnostic, SpecError, make_pointer, split_pointer
from frame_mlir.frontends.common.json_document import (
    brief_value,
    decode_text,
    json_type,
    json_value_errors,
    read_document,
)
from frame_mlir.frontends.spec.spec import (
    DataSpec,
    InlineInit,
    InputSpec,
    LayerSpec,
    LossSpec,
    ModelSpec,
    OptimizerSpec,
    TensorInit,
    TrainingSpec,
    UniformInit,
    numel,
)

__all__ = [
    "MAX_NUMEL",
    "SCHEMA_VERSION",
    "load_schema",
    "load_spec",
    "parse_spec",
    "spec_from_doc",
    "validate",
]

SCHEMA_VERSION = 0
"""The only ``schema_version`` this module reads."""

MAX_NUMEL = 2**31 - 1
"""Largest element count of any tensor; generated code indexes with 32-bit ints."""

_SHAPE_KEYS = frozenset({"shape", "weight_shape", "bias_shape", "target_shape"})
_ENUM_KEYS = frozenset({"kind", "activation", "dtype"})
# Data-section keys that are not data input names; an input may not take them as its name.
_DATA_RESERVED = ("target", "params")

Part = str | int


def _as_int(value: Any) -> int | None:
    """``value`` as an int if JSON Schema calls it an integer (``8`` or ``8.0``, not ``true``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value) if not isinstance(value, int) or abs(value) < 2**1000 else math.inf
    return f if math.isfinite(f) else None


def _as_shape(value: Any) -> tuple[int, ...] | None:
    """A non-empty list of positive ints as a tuple, else ``None`` (the schema reports why)."""
    if not isinstance(value, list) or not value:
        return None
    dims = [_as_int(v) for v in value]
    if any(d is None or d < 1 for d in dims):
        return None
    return tuple(d for d in dims if d is not None)


def _fmt_shape(shape: tuple[int, ...] | list[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _get(node: Any, key: str) -> Any:
    return node.get(key) if isinstance(node, dict) else None


def _items(node: Any) -> list[Any]:
    return node if isinstance(node, list) else []


# --------------------------------------------------------------------------- schema layer


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of spec v0, as shipped in the package."""
    text = resources.files("frame_mlir.frontends.spec").joinpath("schema_v0.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _is_dim_path(parts: tuple[Part, ...]) -> bool:
    if parts == ("model", "batch"):
        return True
    return len(parts) >= 2 and parts[-2] in _SHAPE_KEYS and isinstance(parts[-1], int)


def _required_rule(parent: tuple[Part, ...], member: str) -> str:
    if parent == () and member == "schema_version":
        return "FE-001"
    if (parent == () and member == "data") or (parent == ("data",) and member in _DATA_RESERVED):
        return "FE-005"
    return "FE-000"


def _schema_rule(parts: tuple[Part, ...], validator: str) -> str:
    """Map a schema error at ``parts`` to the most specific rule id."""
    if parts[:1] == ("schema_version",):
        return "FE-001"
    if validator in ("enum", "const") and parts and parts[-1] in _ENUM_KEYS:
        return "FE-004"
    if validator in ("minimum", "exclusiveMinimum") and _is_dim_path(parts):
        return "FE-003"
    if validator in ("minItems", "maxItems") and parts and parts[-1] in _SHAPE_KEYS:
        return "FE-003"
    if validator == "minLength" and parts and parts[-1] in ("name", "input", "prediction"):
        return "FE-002"
    return "FE-000"


def _schema_diagnostics(error: ValidationError) -> Iterator[Diagnostic]:
    parts: tuple[Part, ...] = tuple(error.absolute_path)
    pointer = make_pointer(parts)
    kind = str(error.validator)
    vv = error.validator_value
    inst = error.instance

    if kind == "required":
        for member in vv:
            if isinstance(inst, dict) and member not in inst:
                rule = _required_rule(parts, member)
                where = pointer if pointer else "the document"
                yield Diagnostic(
                    rule,
                    make_pointer((*parts, member)),
                    f"member '{member}'",
                    "missing",
                    f"missing required member '{member}' in {where}",
                )
        return
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        for key in inst if isinstance(inst, dict) else ():
            if key not in known:
                yield Diagnostic(
                    "FE-000",
                    make_pointer((*parts, key)),
                    "one of " + ", ".join(known),
                    f"unknown key '{key}'",
                    f"unknown key '{key}' (known keys here: {', '.join(known)})",
                )
        return

    rule = _schema_rule(parts, kind)
    found = brief_value(inst)
    message = ""
    if kind == "type":
        expected = vv if isinstance(vv, str) else " or ".join(vv)
        if inst is not None and not isinstance(inst, dict):
            found = f"{json_type(inst)} {found}"
    elif kind == "enum":
        expected = "one of " + ", ".join(json.dumps(v) for v in vv)
    elif kind == "const":
        expected = json.dumps(vv)
    elif kind == "minimum":
        expected = f">= {vv}"
    elif kind == "maximum":
        expected = f"<= {vv}"
    elif kind == "exclusiveMinimum":
        expected = f"> {vv}"
    elif kind == "minItems":
        expected = f"at least {vv} items"
        found = f"{len(inst)} items"
    elif kind == "maxItems":
        expected = f"at most {vv} items"
        found = f"{len(inst)} items"
    elif kind == "minLength":
        expected = "a non-empty string"
    elif kind == "pattern":
        expected = f"a string matching {vv}"
    else:
        expected = error.message
    if rule == "FE-001":
        message = f"unsupported schema_version {found} (this frontend reads schema_version 0)"
    yield Diagnostic(rule, pointer, expected, found, message)


# --------------------------------------------------------------------------- semantic layer


class _Checker:
    """Semantic rules FE-002/003/005 over a structurally partial document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.diags: list[Diagnostic] = []
        batch = _as_int(_get(doc.get("model"), "batch"))
        self.batch = batch if batch is not None and batch >= 1 else None
        # name -> feature width of the value (None when its shape is broken); order = definition
        self.input_names: list[str] = []
        self.layer_names: list[str] = []
        self.features: dict[str, int | None] = {}
        self.defined_at: dict[str, str] = {}
        # Names defined twice: references to them are ambiguous, so shape checks skip them.
        self.ambiguous: set[str] = set()
        # False once an input/layer entry is too broken to know its name; an unresolved
        # reference may then be meant for that entry, so it is not reported (no cascades).
        self.names_known = isinstance(doc.get("inputs"), list)

    def add(
        self, rule: str, parts: tuple[Part, ...], expected: str, found: str, message: str = ""
    ) -> None:
        self.diags.append(Diagnostic(rule, make_pointer(parts), expected, found, message))

    def run(self) -> list[Diagnostic]:
        if self.batch is not None and self.batch > MAX_NUMEL:
            self.add(
                "FE-003",
                ("model", "batch"),
                f"at most {MAX_NUMEL}",
                str(self.batch),
                f"element count overflows: batch {self.batch} exceeds {MAX_NUMEL}",
            )
            self.batch = None  # every [batch, ...] comparison would only repeat this
        name = _get(self.doc.get("model"), "name")
        if isinstance(name, str) and name.endswith("\n") and name[:-1].isidentifier():
            # The schema's pattern ends in `$`, which Python's re also matches before a
            # final newline (ECMA-262, the schema's dialect, does not).
            self.add("FE-000", ("model", "name"), "an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                     json.dumps(name))
        self.check_inputs()
        self.check_layers()
        self.check_loss()
        self.check_optimizer()
        self.check_data()
        return self.diags

    def check_optimizer(self) -> None:
        # The update runs in float32: a rate that rounds to 0 there would train nothing.
        lr = _as_number(_get(self.doc.get("optimizer"), "learning_rate"))
        if lr is not None and 0 < lr < 1 and np.float32(lr) == 0:  # (the schema caps lr)
            self.add("FE-000", ("optimizer", "learning_rate"),
                     "a learning rate > 0 in float32 (at least 1.4e-45)",
                     f"{brief_value(lr)}, which rounds to 0")

    # FE-002: a name must be non-empty and unique across inputs and layers.
    def define(self, name: Any, parts: tuple[Part, ...]) -> bool:
        if not isinstance(name, str) or not name:
            self.names_known = False
            return False  # the schema reports wrong types and empty strings
        if not name.isprintable():
            # Names reach IR dumps, logs and the emitted C++ source: a newline or other
            # control character (or a lone surrogate) would break every one of them.
            self.add("FE-002", parts, "a name of printable characters",
                     json.dumps(name), f"name {json.dumps(name)} has a control or "
                     "unprintable character")
            self.ambiguous.add(name)  # references to it are not checked any further
            return False
        if name in self.defined_at:
            self.ambiguous.add(name)
            self.add(
                "FE-002",
                parts,
                "a unique name",
                f"'{name}'",
                f"duplicate name '{name}' (first defined at {self.defined_at[name]})",
            )
            return False
        self.defined_at[name] = make_pointer(parts)
        return True

    def check_numel(self, shape: tuple[int, ...], parts: tuple[Part, ...]) -> None:
        n = numel(shape)
        if n > MAX_NUMEL:
            self.add(
                "FE-003",
                parts,
                f"at most {MAX_NUMEL} elements",
                f"{n}",
                f"element count overflows: {_fmt_shape(shape)} has {n} elements "
                f"(limit {MAX_NUMEL})",
            )

    def check_inputs(self) -> None:
        for i, inp in enumerate(_items(self.doc.get("inputs"))):
            if not isinstance(inp, dict):
                self.names_known = False
                continue
            name = inp.get("name")
            ok = self.define(name, ("inputs", i, "name"))
            if ok and name in _DATA_RESERVED:
                self.add(
                    "FE-002",
                    ("inputs", i, "name"),
                    "a name other than target, params",
                    f"'{name}'",
                    f"input name '{name}' collides with the data section key '{name}'",
                )
                self.ambiguous.add(name)  # references to it are not checked any further
                ok = False
            feature = self.check_input_shape(inp.get("shape"), ("inputs", i, "shape"))
            if ok:
                assert isinstance(name, str)
                self.input_names.append(name)
                self.features[name] = feature

    def check_input_shape(self, value: Any, parts: tuple[Part, ...]) -> int | None:
        shape = _as_shape(value)
        if shape is None:
            return None
        self.check_numel(shape, parts)
        if len(shape) != 2:
            self.add(
                "FE-003",
                parts,
                "rank 2 [batch, features]",
                _fmt_shape(shape),
                f"v0 data inputs are [batch, features]; found rank {len(shape)} "
                f"{_fmt_shape(shape)}",
            )
            return None
        if self.batch is not None and shape[0] != self.batch:
            self.add("FE-003", (*parts, 0), f"{self.batch} (model.batch)", str(shape[0]))
        return shape[1]

    def check_layers(self) -> None:
        for j, layer in enumerate(_items(self.doc.get("layers"))):
            base: tuple[Part, ...] = ("layers", j)
            if not isinstance(layer, dict):
                self.names_known = False
                continue
            name = layer.get("name")
            ok = self.define(name, (*base, "name"))
            in_feature = self.check_layer_input(layer.get("input"), (*base, "input"))
            out = self.check_weight(
                layer.get("weight_shape"), in_feature, layer.get("input"), (*base, "weight_shape")
            )
            if "bias_shape" in layer:
                self.check_bias(layer.get("bias_shape"), out, (*base, "bias_shape"))
            if ok:
                assert isinstance(name, str)
                self.layer_names.append(name)
                self.features[name] = out

    def check_layer_input(self, ref: Any, parts: tuple[Part, ...]) -> int | None:
        """FE-002 on a layer's input reference; returns the feature width it carries."""
        if not isinstance(ref, str) or not ref:
            return None
        if ref in self.input_names or ref in self.layer_names:
            return None if ref in self.ambiguous else self.features.get(ref)
        if not self.names_known or ref in self.ambiguous:  # already reported
            return None
        visible = ", ".join(self.input_names + self.layer_names) or "none"
        expected = f"an input or an earlier layer: {visible}"
        later = [
            k
            for k, lay in enumerate(_items(self.doc.get("layers")))
            if isinstance(lay, dict) and lay.get("name") == ref
        ]
        if later:
            self.add(
                "FE-002",
                parts,
                expected,
                f"'{ref}'",
                f"'{ref}' is not an earlier layer (defined at /layers/{later[0]}; "
                f"expected an input or an earlier layer: {visible})",
            )
        else:
            self.add(
                "FE-002", parts, expected, f"'{ref}'", f"unknown name '{ref}' (expected {expected})"
            )
        return None

    def check_weight(
        self, value: Any, in_feature: int | None, ref: Any, parts: tuple[Part, ...]
    ) -> int | None:
        shape = _as_shape(value)
        if shape is None:
            return None
        self.check_numel(shape, parts)
        if len(shape) != 2:
            self.add("FE-003", parts, "rank 2 [in, out]", _fmt_shape(shape))
            return None
        if in_feature is not None and shape[0] != in_feature:
            self.add(
                "FE-003",
                parts,
                f"{_fmt_shape((in_feature, shape[1]))} (input '{ref}' has {in_feature} features)",
                _fmt_shape(shape),
            )
        return shape[1]

    def check_bias(self, value: Any, out: int | None, parts: tuple[Part, ...]) -> None:
        shape = _as_shape(value)
        if shape is None:
            return
        self.check_numel(shape, parts)
        if self.batch is not None and out is not None:
            want = (self.batch, out)
            if shape != want:
                self.add("FE-003", parts, f"{_fmt_shape(want)} ([batch, out])", _fmt_shape(shape))
        elif len(shape) != 2:
            self.add("FE-003", parts, "rank 2 [batch, out]", _fmt_shape(shape))

    def check_loss(self) -> None:
        loss = self.doc.get("loss")
        if not isinstance(loss, dict):
            return
        pred = loss.get("prediction")
        out: int | None = None
        if isinstance(pred, str) and pred:
            if pred in self.layer_names:
                out = None if pred in self.ambiguous else self.features.get(pred)
            elif self.names_known and isinstance(self.doc.get("layers"), list):
                layers = ", ".join(self.layer_names) or "none"
                what = "an input, not a layer" if pred in self.input_names else "unknown"
                self.add(
                    "FE-002",
                    ("loss", "prediction"),
                    f"a layer name: {layers}",
                    f"'{pred}'",
                    f"prediction '{pred}' is {what} (expected a layer: {layers})",
                )
        shape = _as_shape(loss.get("target_shape"))
        if shape is None:
            return
        parts: tuple[Part, ...] = ("loss", "target_shape")
        self.check_numel(shape, parts)
        if self.batch is not None and out is not None:
            want = (self.batch, out)
            if shape != want:
                self.add(
                    "FE-003", parts, f"{_fmt_shape(want)} (output of '{pred}')", _fmt_shape(shape)
                )

    def value_shape(self, name: str) -> tuple[int, ...] | None:
        for inp in _items(self.doc.get("inputs")):
            if isinstance(inp, dict) and inp.get("name") == name:
                return _as_shape(inp.get("shape"))
        return None

    def check_data(self) -> None:
        data = self.doc.get("data")
        if not isinstance(data, dict):
            return
        for name in self.input_names:
            if name not in data:
                self.add(
                    "FE-005",
                    ("data", name),
                    f"a data entry for input '{name}'",
                    "missing",
                    f"missing data entry for input '{name}'",
                )
            else:
                self.check_tensor_data(data[name], self.value_shape(name), ("data", name))
        if "target" in data:
            target_shape = _as_shape(_get(self.doc.get("loss"), "target_shape"))
            self.check_tensor_data(data["target"], target_shape, ("data", "target"))
        params = data.get("params")
        if isinstance(params, dict):
            for key in ("weight_range", "bias_range"):
                self.check_range(params.get(key), ("data", "params", key))
        # Only when the inputs section is sound do we know which other keys are legal.
        inputs = self.doc.get("inputs")
        inputs_sound = isinstance(inputs, list) and len(self.input_names) == len(inputs)
        if inputs_sound:
            legal = set(self.input_names) | set(_DATA_RESERVED)
            for key in data:
                if key not in legal:
                    known = ", ".join([*self.input_names, *_DATA_RESERVED])
                    self.add(
                        "FE-000",
                        ("data", key),
                        f"one of {known}",
                        f"unknown key '{key}'",
                        f"unknown key '{key}' in data (not an input name; known: {known})",
                    )

    def check_tensor_data(
        self, entry: Any, shape: tuple[int, ...] | None, parts: tuple[Part, ...]
    ) -> None:
        kind = _get(entry, "kind")
        if kind == "inline":
            values = _get(entry, "values")
            if isinstance(values, list) and shape is not None:
                n = numel(shape)
                if len(values) != n:
                    self.add(
                        "FE-005",
                        (*parts, "values"),
                        f"{n} values (numel of {_fmt_shape(shape)})",
                        f"{len(values)} values",
                    )
        elif kind == "uniform_seeded":
            self.check_range(_get(entry, "range"), (*parts, "range"))

    def check_range(self, value: Any, parts: tuple[Part, ...]) -> None:
        if not isinstance(value, list) or len(value) != 2:
            return
        lo, hi = (_as_number(v) for v in value)
        if lo is None or hi is None:
            return
        # Sampling happens in float32, so the order must survive rounding to float32.
        with np.errstate(over="ignore"):
            lo32, hi32 = np.float32(lo), np.float32(hi)
            width = hi32 - lo32
        if not lo32 < hi32:
            self.add("FE-005", parts, "[lo, hi] with lo < hi (in float32)", brief_value(value))
        elif not np.isfinite(width):
            self.add(
                "FE-005",
                parts,
                "a range whose width hi - lo is finite in float32",
                brief_value(value),
                f"range {brief_value(value)} is too wide: hi - lo overflows float32",
            )


# --------------------------------------------------------------------------- driver


def _order_key(doc: Any, pointer: str) -> list[int]:
    """Position of ``pointer`` in document order; missing members sort after their siblings."""
    key: list[int] = []
    node = doc
    for token in split_pointer(pointer):
        if isinstance(node, dict):
            keys = list(node.keys())
            if token in node:
                key.append(keys.index(token))
                node = node[token]
            else:
                key.append(len(keys))
                node = None
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            key.append(int(token))
            node = node[int(token)]
        else:
            key.append(0)
            node = None
    return key


def _finish(doc: Any, diags: list[Diagnostic]) -> list[Diagnostic]:
    """Drop duplicates (same rule at the same place) and sort into document order."""
    seen: set[tuple[str, str]] = set()
    unique: list[Diagnostic] = []
    for d in diags:
        if (d.rule, d.pointer) not in seen:
            seen.add((d.rule, d.pointer))
            unique.append(d)
    return sorted(unique, key=lambda d: _order_key(doc, d.pointer))


def validate(doc: object) -> list[Diagnostic]:
    """All diagnostics of an already-parsed spec document; ``[]`` means it is a valid v0 spec.

    ``doc`` is what ``json.loads`` gives (dicts, lists, str, int, float, bool, None).
    """
    json_errors = json_value_errors(doc)
    if json_errors:
        return _finish(doc, json_errors)
    if not isinstance(doc, dict):
        return [
            Diagnostic(
                "FE-000",
                "",
                "a JSON object",
                f"{json_type(doc)} {brief_value(doc)}",
                f"a spec must be a JSON object, found {json_type(doc)}",
            )
        ]
    version = doc.get("schema_version")
    if (
        not isinstance(version, bool)
        and isinstance(version, int | float)
        and version != SCHEMA_VERSION
    ):
        return [
            Diagnostic(
                "FE-001",
                "/schema_version",
                "0",
                brief_value(version),
                f"unsupported schema_version {brief_value(version)} "
                "(this frontend reads schema_version 0)",
            )
        ]

    diags: list[Diagnostic] = []
    for error in _validator().iter_errors(doc):
        diags.extend(_schema_diagnostics(error))
    diags.extend(_Checker(doc).run())
    return _finish(doc, diags)


def _tensor_init(entry: dict[str, Any]) -> TensorInit:
    if entry["kind"] == "inline":
        return InlineInit(tuple(float(v) for v in entry["values"]))
    lo, hi = entry["range"]
    return UniformInit(float(lo), float(hi))


def _range(value: list[Any]) -> tuple[float, float]:
    return (float(value[0]), float(value[1]))


def _shape(value: list[Any]) -> tuple[int, ...]:
    return tuple(int(d) for d in value)


def _build(doc: dict[str, Any]) -> ModelSpec:
    """Typed spec from a document that :func:`validate` accepted."""
    model = doc["model"]
    inputs = tuple(InputSpec(i["name"], _shape(i["shape"])) for i in doc["inputs"])
    layers = tuple(
        LayerSpec(
            name=lay["name"],
            kind=lay["kind"],
            input=lay["input"],
            weight_shape=(int(lay["weight_shape"][0]), int(lay["weight_shape"][1])),
            bias_shape=(
                (int(lay["bias_shape"][0]), int(lay["bias_shape"][1]))
                if "bias_shape" in lay
                else None
            ),
            activation=lay.get("activation", "none"),
        )
        for lay in doc["layers"]
    )
    loss = doc["loss"]
    opt = doc["optimizer"]
    training = doc["training"]
    data = doc["data"]
    params = data["params"]
    return ModelSpec(
        schema_version=int(doc["schema_version"]),
        name=model["name"],
        dtype=model["dtype"],
        batch=int(model["batch"]),
        inputs=inputs,
        layers=layers,
        loss=LossSpec(loss["kind"], loss["prediction"], _shape(loss["target_shape"])),
        optimizer=OptimizerSpec(opt["kind"], float(opt["learning_rate"])),
        training=TrainingSpec(
            int(training["steps"]), int(training["seed"]), int(training["log_every"])
        ),
        data=DataSpec(
            inputs={i.name: _tensor_init(data[i.name]) for i in inputs},
            target=_tensor_init(data["target"]),
            weight_range=_range(params["weight_range"]),
            bias_range=_range(params["bias_range"]),
        ),
    )


def spec_from_doc(doc: object, source: str = "<dict>") -> ModelSpec:
    """Validate an already-parsed document and build its :class:`ModelSpec`.

    Raises:
        SpecError: with every diagnostic, if the document is not a valid v0 spec.
    """
    diags = validate(doc)
    if diags:
        raise SpecError(diags, source)
    assert isinstance(doc, dict)
    return _build(doc)


def parse_spec(text: str, source: str = "<string>") -> ModelSpec:
    """Parse and validate the JSON text of a v0 spec.

    Args:
        text: the JSON document.
        source: name used in diagnostics (``file:line:col`` pointers, the error prefix).

    Raises:
        SpecError: with every diagnostic; no other exception escapes for bad input.
    """
    doc, diags = decode_text(text, source)
    if diags:
        raise SpecError(diags, source)
    return spec_from_doc(doc, source)


def load_spec(path: str | Path) -> ModelSpec:
    """Read, parse and validate the v0 spec file at ``path`` (``-``: standard input).

    Raises:
        SpecError: ``IO-001`` if the file cannot be read, otherwise as :func:`parse_spec`.
    """
    text, source = read_document(path)
    return parse_spec(text, source)
