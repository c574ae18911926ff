"""The JSON Schema (draft 2020-12) of the network format, built from the operator table
(`options.OPERATORS`), so the schema, the loader and the docs cannot disagree.

`python -m frame_mlir.frontends.network.schema` prints it; the copy shipped as
`network_schema.json` is checked against this function by the tests.
"""

from __future__ import annotations

import json
from typing import Any

from frame_mlir.frontends.network.options import F32_MAX, INT_MAX, OPERATORS, REQUIRED, Option

_NAME = {"type": "string", "minLength": 1}
_POS_INT = {"type": "integer", "minimum": 1}
_INT = {"type": "integer", "minimum": -INT_MAX, "maximum": INT_MAX}
#: A number representable in float32 (loss weights and number options).
FLOAT32: dict[str, Any] = {"type": "number", "minimum": -F32_MAX, "maximum": F32_MAX}
#: A boolean, or the integer 0 or 1: the reference's ONNX-converted networks write
#: `"count_include_pad": 0` (docs/network-format.md, "Files of the reference").
BOOLEAN: dict[str, Any] = {"type": ["boolean", "integer"], "minimum": 0, "maximum": 1}


def _ranged(base: dict[str, Any], o: Option) -> dict[str, Any]:
    """`base` narrowed to the option's own range."""
    out = dict(base)
    if o.minimum is not None:
        out["minimum"] = o.minimum
    if o.exclusive_minimum is not None:
        out.pop("minimum", None)
        out["exclusiveMinimum"] = o.exclusive_minimum
    if o.maximum is not None:
        out["maximum"] = o.maximum
    return out


def _option_schema(o: Option) -> dict[str, Any]:
    if o.kind == "int":
        return _ranged(_INT, o)
    if o.kind == "pos_int":
        return _ranged({**_INT, "minimum": 1}, o)
    if o.kind == "number":
        return _ranged(FLOAT32, o)
    if o.kind == "bool":
        return dict(BOOLEAN)
    if o.kind == "enum":
        return {"enum": list(o.choices)}
    if o.kind == "pair":
        entry = _ranged(_INT, o)
        return {"anyOf": [entry, {"type": "array", "items": dict(entry), "minItems": 2,
                                  "maxItems": 2}]}
    if o.kind == "int_list":
        return {"type": "array", "items": _ranged(_INT, o)}
    if o.kind == "shape":
        return {"type": "array", "items": dict(_POS_INT), "minItems": 1}
    raise AssertionError(o.kind)


def network_schema() -> dict[str, Any]:
    """The schema of a network document."""
    per_type = []
    for t in OPERATORS.values():
        props = {k: _option_schema(o) for k, o in t.options.items()}
        required = [k for k, o in t.options.items() if o.default is REQUIRED]
        opts: dict[str, Any] = {"type": "object", "properties": props,
                                "additionalProperties": False}
        if required:
            opts["required"] = required
        per_type.append({"if": {"properties": {"type": {"const": t.name}}},
                         "then": {"properties": {"options": opts},
                                  **({"required": ["options"]} if required else {})}})
    operator = {
        "type": "object",
        "required": ["name", "type", "outputs"],
        "additionalProperties": False,
        "properties": {
            "name": _NAME,
            "type": {"enum": list(OPERATORS)},
            "inputs": {"type": "array", "items": _NAME},  # default [] (a Parameter)
            "outputs": {"type": "array", "items": _NAME, "minItems": 1, "maxItems": 1},
            "frozen": dict(BOOLEAN),
            "options": {"type": "object"},
            "params": {"type": "array", "items": {"type": "string"}},
        },
        "allOf": per_type,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "frame-mlir JSON network (dlprimitives format)",
        "type": "object",
        "required": ["inputs", "outputs", "operators"],
        "additionalProperties": False,
        "properties": {
            "inputs": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["shape"], "additionalProperties": False,
                "properties": {"name": _NAME,
                               "shape": {"type": "array", "items": dict(_POS_INT),
                                         "minItems": 1},
                               "dtype": {"enum": ["float", "int"]}}}},
            "outputs": {"type": "array", "minItems": 1, "items": {"anyOf": [
                _NAME,
                {"type": "object", "required": ["name"], "additionalProperties": False,
                 "properties": {"name": _NAME, "loss_weight": dict(FLOAT32)}}]}},
            "operators": {"type": "array", "items": operator},
        },
    }


if __name__ == "__main__":
    print(json.dumps(network_schema(), indent=2))
