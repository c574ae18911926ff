"""Schema-v0 spec frontend: loading, typed spec, and every rejection rule (rule id + pointer)."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from frame_mlir.frontends.common.errors import Diagnostic, SpecError, make_pointer, split_pointer
from frame_mlir.frontends.spec.spec import InlineInit, UniformInit
from frame_mlir.frontends.spec.spec_v0 import (
    load_schema,
    load_spec,
    parse_spec,
    spec_from_doc,
    validate,
)

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
BAD = TESTDATA / "bad"

GOOD_SPECS = sorted(p.name for p in TESTDATA.glob("*.json"))

# file -> the exact set of (rule, pointer) it must produce; "<file>" stands for the file path.
BAD_SPECS: dict[str, set[tuple[str, str]]] = {
    # The seed tool's three known bad specs.
    "schema_version_1.json": {("FE-001", "/schema_version")},
    "dtype_float64.json": {("FE-004", "/model/dtype")},
    "missing_target.json": {("FE-005", "/data/target")},
    # FE-002 name references.
    "fe002_unknown_input.json": {("FE-002", "/layers/1/input")},
    "fe002_forward_ref.json": {("FE-002", "/layers/0/input")},
    "fe002_duplicate_name.json": {("FE-002", "/layers/2/name")},
    "fe002_prediction_unknown.json": {("FE-002", "/loss/prediction")},
    "fe002_prediction_input.json": {("FE-002", "/loss/prediction")},
    "fe002_empty_input.json": {("FE-002", "/layers/1/input")},
    # FE-003 shape chain.
    "fe003_shape_mismatch.json": {("FE-003", "/layers/1/weight_shape")},
    "fe003_bias_shape.json": {("FE-003", "/layers/0/bias_shape")},
    "fe003_target_shape.json": {("FE-003", "/loss/target_shape")},
    "fe003_batch_mismatch.json": {("FE-003", "/inputs/0/shape/0")},
    "fe003_zero_dim.json": {("FE-003", "/layers/0/weight_shape/1")},
    "fe003_input_rank.json": {("FE-003", "/inputs/0/shape")},
    "fe003_numel_overflow.json": {("FE-003", "/inputs/0/shape")},
    # FE-004 enumerations.
    "fe004_activation.json": {("FE-004", "/layers/0/activation")},
    "fe004_layer_kind.json": {("FE-004", "/layers/0/kind")},
    "fe004_loss_kind.json": {("FE-004", "/loss/kind")},
    "fe004_optimizer_kind.json": {("FE-004", "/optimizer/kind")},
    "fe004_data_kind.json": {("FE-004", "/data/x/kind")},
    # FE-005 data completeness.
    "fe005_inline_count.json": {("FE-005", "/data/x/values")},
    "fe005_range_order.json": {("FE-005", "/data/target/range")},
    "fe005_weight_range.json": {("FE-005", "/data/params/weight_range")},
    "fe005_missing_input_data.json": {("FE-005", "/data/x")},
    "fe005_missing_params.json": {("FE-005", "/data/params")},
    # Structure and strict JSON.
    "unknown_key.json": {("FE-000", "/model/colour")},
    "bool_int.json": {("FE-000", "/training/steps")},
    "seed_range.json": {("FE-000", "/training/seed")},
    "lr_nonpositive.json": {("FE-000", "/optimizer/learning_rate")},
    "data_unknown_input.json": {("FE-000", "/data/y")},
    "not_object.json": {("FE-000", "")},
    "malformed.json": {("JSON-001", "<file>:6:5")},
    "nan_value.json": {("JSON-001", "/optimizer/learning_rate")},
    "duplicate_key.json": {("JSON-001", "/model/batch")},
    "multi_error.json": {
        ("FE-004", "/model/dtype"),
        ("FE-003", "/layers/0/weight_shape"),
        ("FE-002", "/layers/1/input"),
        ("FE-000", "/optimizer/momentum"),
        ("FE-005", "/data/target"),
    },
}


def tiny() -> dict[str, Any]:
    """A fresh, mutable copy of the reference spec."""
    doc: dict[str, Any] = json.loads((TESTDATA / "tiny_mlp.json").read_text())
    return doc


def rule_pointers(diags: list[Diagnostic]) -> set[tuple[str, str]]:
    return {(d.rule, d.pointer) for d in diags}


def rejects(doc: Any) -> set[tuple[str, str]]:
    """(rule, pointer) pairs of a document given as a Python value, through the text path."""
    with pytest.raises(SpecError) as info:
        parse_spec(json.dumps(doc), "t.json")
    return rule_pointers(info.value.diagnostics)


# --------------------------------------------------------------------------- good specs


@pytest.mark.parametrize("name", GOOD_SPECS)
def test_good_specs_load(name: str) -> None:
    path = TESTDATA / name
    spec = load_spec(path)
    assert validate(json.loads(path.read_text())) == []
    assert spec.schema_version == 0
    assert spec.dtype == "float32"
    assert spec.input.shape[0] == spec.batch
    assert spec.shape_of(spec.loss.prediction) == spec.loss.target_shape


def test_expected_topology_specs_exist() -> None:
    for name in (
        "tiny_mlp.json",
        "tiny_mlp_check.json",
        "mnist_mlp.json",
        "skip_mlp.json",
        "reuse_input.json",
        "nonfinal_pred.json",
        "nobias_mlp.json",
        "inline_data.json",
    ):
        assert name in GOOD_SPECS


def test_tiny_mlp_typed() -> None:
    spec = load_spec(TESTDATA / "tiny_mlp.json")
    assert spec.name == "tiny_mlp" and spec.batch == 8
    assert [(i.name, i.shape) for i in spec.inputs] == [("x", (8, 4))]
    fc1, fc2 = spec.layers
    assert (fc1.name, fc1.kind, fc1.input, fc1.weight_shape, fc1.bias_shape, fc1.activation) == (
        "fc1",
        "linear",
        "x",
        (4, 8),
        (8, 8),
        "relu",
    )
    assert (fc2.name, fc2.input, fc2.weight_shape, fc2.bias_shape, fc2.activation) == (
        "fc2",
        "fc1",
        (8, 1),
        None,
        "none",
    )
    assert fc1.out_dim == 8 and fc2.out_dim == 1 and fc2.in_dim == 8
    assert spec.layer_output_shape("fc1") == (8, 8)
    assert spec.shape_of("x") == (8, 4)
    assert spec.shape_of("fc2") == (8, 1)
    assert (spec.loss.kind, spec.loss.prediction, spec.loss.target_shape) == ("mse", "fc2", (8, 1))
    assert spec.optimizer.kind == "sgd" and spec.optimizer.learning_rate == 0.05
    assert (spec.training.steps, spec.training.seed, spec.training.log_every) == (300, 20260713, 50)
    assert spec.data.inputs["x"] == UniformInit(-1.0, 1.0)
    assert spec.data.target == UniformInit(-1.0, 1.0)
    assert spec.data.weight_range == (-0.1, 0.1) and spec.data.bias_range == (0.5, 1.0)
    assert spec.param_names() == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert spec.param_shapes() == [(4, 8), (8, 8), (8, 1)]
    assert spec == load_spec(str(TESTDATA / "tiny_mlp.json"))
    assert hash(spec) == hash(load_spec(TESTDATA / "tiny_mlp.json"))


def test_tiny_mlp_check_differs_only_in_param_ranges() -> None:
    a = json.loads((TESTDATA / "tiny_mlp.json").read_text())
    b = json.loads((TESTDATA / "tiny_mlp_check.json").read_text())
    assert b["data"]["params"]["weight_range"] == [-0.3, 0.3]
    assert b["data"]["params"]["bias_range"] == [0.0, 0.5]
    a["data"]["params"] = b["data"]["params"] = None
    assert a == b


def test_mnist_mlp() -> None:
    spec = load_spec(TESTDATA / "mnist_mlp.json")
    assert spec.batch == 64 and spec.input.shape == (64, 784)
    assert [(lay.weight_shape, lay.bias_shape, lay.activation) for lay in spec.layers] == [
        ((784, 256), (64, 256), "relu"),
        ((256, 10), (64, 10), "none"),
    ]
    assert spec.loss.target_shape == (64, 10)
    assert spec.optimizer.learning_rate == 0.01
    assert (spec.training.steps, spec.training.seed, spec.training.log_every) == (100, 7, 20)
    assert spec.data.weight_range == (-0.05, 0.05) and spec.data.bias_range == (0.0, 0.1)


def test_topologies() -> None:
    skip = load_spec(TESTDATA / "skip_mlp.json")
    assert skip.layers[2].input == "fc1" and skip.layers[1].name == "fc2"
    reuse = load_spec(TESTDATA / "reuse_input.json")
    assert [lay.input for lay in reuse.layers[:2]] == ["x", "x"]
    nonfinal = load_spec(TESTDATA / "nonfinal_pred.json")
    assert nonfinal.loss.prediction != nonfinal.layers[-1].name
    nobias = load_spec(TESTDATA / "nobias_mlp.json")
    assert all(not lay.has_bias for lay in nobias.layers)
    assert nobias.layers[1].activation == "none"  # the default
    inline = load_spec(TESTDATA / "inline_data.json")
    x = inline.data.inputs["x"]
    assert isinstance(x, InlineInit) and len(x.values) == 12
    assert isinstance(inline.data.target, InlineInit)


def test_integral_floats_are_integers() -> None:
    doc = tiny()
    doc["model"]["batch"] = 8.0
    doc["layers"][0]["weight_shape"] = [4.0, 8]
    spec = spec_from_doc(doc)
    assert spec.batch == 8 and isinstance(spec.batch, int)
    assert spec.layers[0].weight_shape == (4, 8)


def test_schema_is_valid_2020_12() -> None:
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


# --------------------------------------------------------------------------- bad spec files


def test_every_bad_file_is_covered() -> None:
    assert sorted(p.name for p in BAD.glob("*.json")) == sorted(BAD_SPECS)


@pytest.mark.parametrize("name", sorted(BAD_SPECS))
def test_bad_spec(name: str) -> None:
    path = BAD / name
    with pytest.raises(SpecError) as info:
        load_spec(path)
    expected = {(r, p.replace("<file>", str(path))) for r, p in BAD_SPECS[name]}
    assert rule_pointers(info.value.diagnostics) == expected
    assert info.value.source == str(path)
    for line in str(info.value).splitlines():
        assert line.startswith(f"{path}: ")


@pytest.mark.parametrize(
    ("name", "rule", "pointer"),
    [
        ("schema_version_1.json", "FE-001", "/schema_version"),
        ("dtype_float64.json", "FE-004", "/model/dtype"),
        ("missing_target.json", "FE-005", "/data/target"),
    ],
)
def test_known_bad_specs(name: str, rule: str, pointer: str) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(BAD / name)
    assert [(d.rule, d.pointer) for d in info.value.diagnostics] == [(rule, pointer)]


def test_fe001_message_carries_version() -> None:
    with pytest.raises(SpecError) as info:
        load_spec(BAD / "schema_version_1.json")
    assert "1" in info.value.diagnostics[0].found
    assert "schema_version 1" in str(info.value)


def test_multi_error_reports_all_in_document_order() -> None:
    with pytest.raises(SpecError) as info:
        load_spec(BAD / "multi_error.json")
    assert [d.pointer for d in info.value.diagnostics] == [
        "/model/dtype",
        "/layers/0/weight_shape",
        "/layers/1/input",
        "/optimizer/momentum",
        "/data/target",
    ]
    assert len(str(info.value).splitlines()) == 5


# --------------------------------------------------------------------------- rules in detail


def test_fe001_missing_and_wrong_type() -> None:
    doc = tiny()
    del doc["schema_version"]
    assert rejects(doc) == {("FE-001", "/schema_version")}
    doc["schema_version"] = "0"
    assert rejects(doc) == {("FE-001", "/schema_version")}
    doc["schema_version"] = True
    assert rejects(doc) == {("FE-001", "/schema_version")}


def test_fe001_other_version_reports_only_version() -> None:
    doc = tiny()
    doc["schema_version"] = 2
    doc["model"]["dtype"] = "bfloat16"  # a v2 document may well say this
    assert rejects(doc) == {("FE-001", "/schema_version")}


def test_fe002_reserved_input_name() -> None:
    doc = tiny()
    doc["inputs"][0]["name"] = "target"
    doc["layers"][0]["input"] = "target"
    got = rejects(doc)
    assert ("FE-002", "/inputs/0/name") in got


def test_fe002_input_and_layer_share_name() -> None:
    doc = tiny()
    doc["layers"][0]["name"] = "x"
    doc["layers"][1]["input"] = "x"  # still resolves (to the input) so nothing cascades
    doc["layers"][1]["weight_shape"] = [4, 1]
    assert rejects(doc) == {("FE-002", "/layers/0/name")}


def test_fe002_empty_layer_name() -> None:
    doc = tiny()
    doc["layers"][1]["name"] = ""
    doc["loss"]["prediction"] = "fc1"
    doc["loss"]["target_shape"] = [8, 8]
    assert rejects(doc) == {("FE-002", "/layers/1/name")}


def test_fe002_self_reference() -> None:
    doc = tiny()
    doc["layers"][1]["input"] = "fc2"
    assert rejects(doc) == {("FE-002", "/layers/1/input")}


def test_fe003_weight_rank() -> None:
    doc = tiny()
    doc["layers"][1]["weight_shape"] = [8, 1, 1]
    assert rejects(doc) == {("FE-003", "/layers/1/weight_shape")}


def test_fe003_empty_shape() -> None:
    doc = tiny()
    doc["loss"]["target_shape"] = []
    assert rejects(doc) == {("FE-003", "/loss/target_shape")}


def test_fe003_negative_batch() -> None:
    doc = tiny()
    doc["model"]["batch"] = -8
    assert rejects(doc) == {("FE-003", "/model/batch")}


def test_fe003_weight_numel_overflow() -> None:
    doc = tiny()
    doc["layers"][0]["weight_shape"] = [4, 2**30]
    doc["layers"][0]["bias_shape"] = [8, 2**30]
    doc["layers"][1]["weight_shape"] = [2**30, 1]  # 2**30 elements: still fits
    assert rejects(doc) == {
        ("FE-003", "/layers/0/weight_shape"),
        ("FE-003", "/layers/0/bias_shape"),
    }


def test_fe003_target_follows_nonfinal_prediction() -> None:
    doc = tiny()
    doc["loss"]["prediction"] = "fc1"
    assert rejects(doc) == {("FE-003", "/loss/target_shape")}


def test_fe004_params_kind() -> None:
    doc = tiny()
    doc["data"]["params"]["kind"] = "inline"
    assert rejects(doc) == {("FE-004", "/data/params/kind")}


def test_fe005_missing_data_section() -> None:
    doc = tiny()
    del doc["data"]
    assert rejects(doc) == {("FE-005", "/data")}


def test_fe005_inline_target_count() -> None:
    doc = tiny()
    doc["data"]["target"] = {"kind": "inline", "values": [0.0] * 9}
    assert rejects(doc) == {("FE-005", "/data/target/values")}


def test_fe005_range_collapses_in_float32() -> None:
    doc = tiny()
    doc["data"]["x"]["range"] = [1.0, 1.00000001]  # distinct doubles, one float32
    assert rejects(doc) == {("FE-005", "/data/x/range")}


def test_fe005_range_width_overflows_float32() -> None:
    doc = tiny()
    doc["data"]["x"]["range"] = [-3e38, 3e38]
    assert rejects(doc) == {("FE-005", "/data/x/range")}


def test_fe000_structure() -> None:
    doc = tiny()
    doc["extra"] = 1
    doc["layers"][0]["units"] = 3
    doc["data"]["x"]["seed"] = 1
    del doc["model"]["name"]
    doc["training"]["log_every"] = -1
    doc["inputs"].append({"name": "y", "shape": [8, 4]})
    assert rejects(doc) >= {
        ("FE-000", "/extra"),
        ("FE-000", "/layers/0/units"),
        ("FE-000", "/data/x/seed"),
        ("FE-000", "/model/name"),
        ("FE-000", "/training/log_every"),
        ("FE-000", "/inputs"),
    }


def test_fe000_model_name_identifier() -> None:
    doc = tiny()
    doc["model"]["name"] = "tiny mlp"
    assert rejects(doc) == {("FE-000", "/model/name")}


def test_fe000_no_layers() -> None:
    doc = tiny()
    doc["layers"] = []
    doc["loss"]["prediction"] = "x"
    got = rejects(doc)
    assert ("FE-000", "/layers") in got and ("FE-002", "/loss/prediction") in got


def test_fe000_booleans_are_not_numbers() -> None:
    doc = tiny()
    doc["inputs"][0]["shape"] = [8, True]
    doc["optimizer"]["learning_rate"] = False
    doc["data"]["x"] = {"kind": "uniform_seeded", "range": [False, True]}
    assert rejects(doc) == {
        ("FE-000", "/inputs/0/shape/1"),
        ("FE-000", "/optimizer/learning_rate"),
        ("FE-000", "/data/x/range/0"),
        ("FE-000", "/data/x/range/1"),
    }


def test_fe000_seed_negative() -> None:
    doc = tiny()
    doc["training"]["seed"] = -1
    assert rejects(doc) == {("FE-000", "/training/seed")}


@pytest.mark.parametrize("key", ["steps", "log_every"])
def test_fe000_step_counts_fit_int32(key: str) -> None:
    doc = tiny()
    doc["training"][key] = 2**31 - 1
    parse_spec(json.dumps(doc), "t.json")
    for too_big in (2**31, 10**30):
        doc["training"][key] = too_big
        assert rejects(doc) == {("FE-000", f"/training/{key}")}


def test_fe000_inline_value_beyond_float32() -> None:
    doc = tiny()
    doc["data"]["target"] = {"kind": "inline", "values": [0.0] * 7 + [1e39]}
    assert rejects(doc) == {("FE-000", "/data/target/values/7")}


def test_top_level_not_object() -> None:
    for text in ("[]", "3", '"spec"', "null", "true"):
        with pytest.raises(SpecError) as info:
            parse_spec(text)
        assert rule_pointers(info.value.diagnostics) == {("FE-000", "")}


def test_everything_missing() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec("{}")
    got = rule_pointers(info.value.diagnostics)
    assert ("FE-001", "/schema_version") in got and ("FE-005", "/data") in got
    assert {
        ("FE-000", f"/{k}") for k in ("model", "inputs", "layers", "loss", "optimizer", "training")
    } <= got


# --------------------------------------------------------------------------- strict JSON


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_json001_non_finite(literal: str) -> None:
    text = json.dumps(tiny()).replace('"learning_rate": 0.05', f'"learning_rate": {literal}')
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert rule_pointers(info.value.diagnostics) == {("JSON-001", "/optimizer/learning_rate")}


def test_json001_non_finite_in_dict() -> None:
    doc = tiny()
    doc["data"]["x"]["range"] = [-1.0, math.inf]
    assert rule_pointers(validate(doc)) == {("JSON-001", "/data/x/range/1")}


def test_json001_huge_integer_literal() -> None:
    text = json.dumps(tiny()).replace('"steps": 300', '"steps": ' + "9" * 5000)
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert rule_pointers(info.value.diagnostics) == {("JSON-001", "/training/steps")}


def test_json001_duplicate_keys_everywhere() -> None:
    text = json.dumps(tiny())
    text = text.replace('{"name": "fc2"', '{"name": "fc2", "name": "fc3"')
    text = text.replace('"schema_version": 0', '"schema_version": 0, "schema_version": 0')
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert rule_pointers(info.value.diagnostics) == {
        ("JSON-001", "/schema_version"),
        ("JSON-001", "/layers/1/name"),
    }


def test_json001_syntax_line_col() -> None:
    text = '{\n  "schema_version": 0,\n  "model": {"name": tiny}\n}\n'
    with pytest.raises(SpecError) as info:
        parse_spec(text, "tiny.json")
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("JSON-001", "tiny.json:3:21")
    assert str(info.value).startswith("tiny.json: JSON-001 at tiny.json:3:21")


@pytest.mark.parametrize("text", ["", "   ", "{", '{"a": 1,}', "[1, 2", "{'a': 1}"])
def test_json001_malformed_variants(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "m.json")
    (d,) = info.value.diagnostics
    assert d.rule == "JSON-001" and d.pointer.startswith("m.json:")


def test_json001_deep_nesting() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec("[" * 100000 + "]" * 100000)
    assert info.value.rules == ["JSON-001"]


def test_json001_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'{\n  "schema_version": 0,\n  "x": "\xff"\n}')
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert rule_pointers(info.value.diagnostics) == {("JSON-001", f"{path}:3:9")}


def test_utf8_bom_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + (TESTDATA / "tiny_mlp.json").read_bytes())
    assert load_spec(path).name == "tiny_mlp"


def test_io001(tmp_path: Path) -> None:
    for path in (tmp_path / "nope.json", tmp_path):
        with pytest.raises(SpecError) as info:
            load_spec(path)
        assert rule_pointers(info.value.diagnostics) == {("IO-001", str(path))}


# --------------------------------------------------------------------------- robustness


def _paths(node: Any, parts: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [parts]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*parts, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*parts, i))
    return out


REPLACEMENTS: list[Any] = [None, True, -1, 0, 2.5, "", "s", [], {}, [[1]], 1e308, 2**64]


def _mutants(base: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], Any, dict[str, Any]]]:
    """(path, new value or "DELETE", mutated document) for every node of `base`."""
    for parts in _paths(base)[1:]:
        for value in [*REPLACEMENTS, "DELETE"]:
            doc = copy.deepcopy(base)
            node = doc
            for p in parts[:-1]:
                node = node[p]
            if value == "DELETE":
                if isinstance(node, dict):
                    del node[parts[-1]]
                else:
                    node.pop(parts[-1])
            else:
                node[parts[-1]] = value
            yield parts, value, doc


def test_mutations_never_escape_as_other_exceptions() -> None:
    for parts, _, doc in _mutants(tiny()):
        try:
            parse_spec(json.dumps(doc), "m.json")
        except SpecError as err:
            assert err.diagnostics, parts
            for d in err.diagnostics:
                assert d.rule in {"FE-000", "FE-001", "FE-002", "FE-003", "FE-004", "FE-005"}, d
                # Pointers name a place in (or right under) the document.
                assert d.pointer == "" or d.pointer.startswith("/"), d


def test_accepted_mutations_train() -> None:
    """What the validator accepts, the compiler and trainer handle: no other exception.

    (A schema that let `steps: 2**64` through once failed only inside the trainer.)
    Mutants that differ only in `data` or `training` share one compilation: those
    sections reach the trainer, not the IR.
    """
    from frame_mlir.frontends.spec.initial_values import generate_initial_values
    from frame_mlir.frontends.spec.trainer import CompiledSpec, train

    base = tiny()
    base["training"]["steps"] = 3  # compiling is the point; training runs only to show it does
    compiled: dict[str, CompiledSpec] = {}
    accepted = 0
    for parts, value, doc in _mutants(base):
        try:
            spec = parse_spec(json.dumps(doc), "m.json")
        except SpecError:
            continue
        accepted += 1
        key = json.dumps({k: v for k, v in doc.items() if k not in ("data", "training")})
        if key not in compiled:
            compiled[key] = CompiledSpec(spec)
        result = train(spec, compiled=compiled[key], values=generate_initial_values(spec))
        assert result.losses.shape == (spec.training.steps,), (parts, value)
    assert accepted >= 20  # the mutations still exercise the accepting side


def test_validate_is_deterministic_and_pure() -> None:
    doc = json.loads((BAD / "multi_error.json").read_text())
    before = copy.deepcopy(doc)
    assert validate(doc) == validate(doc)
    assert doc == before


# --------------------------------------------------------------------------- diagnostics


def test_diagnostic_str() -> None:
    d = Diagnostic("FE-003", "/layers/1/weight_shape", "[8, 1]", "[7, 1]")
    assert str(d) == "FE-003 at /layers/1/weight_shape: expected [8, 1], found [7, 1]"
    d = Diagnostic("FE-002", "/layers/1/input", "x", "'fc9'", "unknown name 'fc9'")
    assert str(d) == "FE-002 at /layers/1/input: unknown name 'fc9'"
    err = SpecError([d, d], "a.json")
    assert str(err) == "\n".join(["a.json: FE-002 at /layers/1/input: unknown name 'fc9'"] * 2)
    assert err.rules == ["FE-002", "FE-002"]


def test_fe002_message_lists_visible_names() -> None:
    with pytest.raises(SpecError) as info:
        load_spec(BAD / "fe002_unknown_input.json")
    (d,) = info.value.diagnostics
    assert str(d) == (
        "FE-002 at /layers/1/input: unknown name 'fc9' "
        "(expected an input or an earlier layer: x, fc1)"
    )


def test_pointer_escaping_round_trip() -> None:
    parts = ["data", "a/b~c", 3]
    pointer = make_pointer(parts)
    assert pointer == "/data/a~1b~0c/3"
    assert split_pointer(pointer) == ["data", "a/b~c", "3"]
    assert split_pointer("") == []


# --------------------------------------------------------------------------- names and text


@pytest.mark.parametrize("bad", ["h\nint x;", "tab\there", "\ud800", "bell\x07"])
def test_names_must_be_printable(bad: str) -> None:
    """Names reach IR dumps, logs and the emitted C++: a control character or a lone
    surrogate is FE-002 at the definition, with no follow-on error at its uses."""
    doc = tiny()
    doc["layers"][0]["name"] = bad
    doc["layers"][1]["input"] = bad
    assert rejects(doc) == {("FE-002", "/layers/0/name")}


def test_printable_names_of_any_script_are_fine() -> None:
    doc = tiny()
    for old, new in (("fc1", "couche-1 \u00e9"), ("fc2", 'out"%d\\')):
        doc["layers"] = [{**lay, "name": new if lay["name"] == old else lay["name"],
                          "input": new if lay["input"] == old else lay["input"]}
                         for lay in doc["layers"]]
    doc["loss"]["prediction"] = 'out"%d\\'
    assert parse_spec(json.dumps(doc), "t.json").loss.prediction == 'out"%d\\'


def test_model_name_with_a_trailing_newline_is_rejected() -> None:
    # Python's `$` matches before a final newline; the schema means the ECMA-262 `$`.
    doc = tiny()
    doc["model"]["name"] = "tiny\n"
    assert rejects(doc) == {("FE-000", "/model/name")}


def test_learning_rate_that_rounds_to_zero_in_float32() -> None:
    doc = tiny()
    doc["optimizer"]["learning_rate"] = 1e-50
    with pytest.raises(SpecError) as info:
        parse_spec(json.dumps(doc), "t.json")
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("FE-000", "/optimizer/learning_rate")
    assert "found 1e-50, which rounds to 0" in str(d)
    doc["optimizer"]["learning_rate"] = 1.5e-45  # the smallest float32 is fine
    parse_spec(json.dumps(doc), "t.json")


def test_every_diagnostic_is_one_line() -> None:
    """Keys and names are quoted with their control characters escaped, so each
    diagnostic stays on its own line whatever the document holds."""
    doc = tiny()
    doc["data"]["x\ny"] = doc["data"]["x"]
    with pytest.raises(SpecError) as info:
        parse_spec(json.dumps(doc), "t.json")
    text = str(info.value)
    assert len(text.splitlines()) == len(info.value.diagnostics) == 1
    assert "unknown key 'x\\ny'" in text
