"""The JSON network loader (frame_mlir/frontends/network/loader.py): every validation
rule with its rule id, JSON pointer and message (expected vs found, deduced shapes,
"did you mean" suggestions), every error of a document at once, in-place renaming,
option defaults, loss detection, the shipped JSON Schema and document detection.

Rule ids: NET-000 .. NET-006, NET-009 .. NET-012 (NET-007 is retired, there is no
NET-008), JSON-001, IO-001; NET-002 and NET-012 are warnings unless `strict`. Validation runs in layers (strict JSON, schema, graph, shapes); each layer
reports everything it finds.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from frame_mlir.dialects import frame
from frame_mlir.frontends.common.errors import Diagnostic, SpecError
from frame_mlir.frontends.detect import load_model
from frame_mlir.frontends.network.loader import (
    NetworkSpec,
    is_network_document,
    load_network,
    network_from_doc,
)
from frame_mlir.frontends.network.lower import build_function
from frame_mlir.frontends.network.options import OPERATORS
from frame_mlir.frontends.network.schema import network_schema
from frame_mlir.frontends.spec.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[2]
NETWORKS = ROOT / "testdata" / "networks"
SCHEMA_FILE = ROOT / "frame_mlir" / "frontends" / "network" / "network_schema.json"

BASE: dict[str, Any] = {
    "inputs": [{"name": "data", "shape": [4, 3]},
               {"name": "label", "shape": [4], "dtype": "int"}],
    "outputs": ["prob", "loss"],
    "operators": [
        {"name": "fc", "type": "InnerProduct", "inputs": ["data"], "outputs": ["fc"],
         "options": {"outputs": 5}},
        {"name": "prob", "type": "Softmax", "inputs": ["fc"], "outputs": ["prob"]},
        {"name": "loss", "type": "SoftmaxWithLoss", "inputs": ["fc", "label"],
         "outputs": ["loss"]},
    ],
}

CONV: dict[str, Any] = {
    "inputs": [{"name": "data", "shape": [2, 1, 8, 8]}],
    "outputs": ["fc"],
    "operators": [
        {"name": "conv1", "type": "Convolution2D", "inputs": ["data"], "outputs": ["conv1"],
         "options": {"channels_out": 6, "kernel": 3}},
        {"name": "pool1", "type": "Pooling2D", "inputs": ["conv1"], "outputs": ["pool1"],
         "options": {"kernel": 2, "stride": 2}},
        {"name": "fc", "type": "InnerProduct", "inputs": ["pool1"], "outputs": ["fc"],
         "options": {"outputs": 4, "inputs": 100}},
    ],
}


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def errors(doc: object, strict: bool = False) -> list[Diagnostic]:
    with pytest.raises(SpecError) as info:
        network_from_doc(doc, strict=strict)
    return info.value.diagnostics


def only(doc: object) -> Diagnostic:
    diags = errors(doc)
    assert len(diags) == 1, diags
    return diags[0]


def text(d: Diagnostic) -> str:
    return str(d)


# --------------------------------------------------------------------------- NET-000


def test_net000_root_not_an_object() -> None:
    d = only([1, 2])
    assert (d.rule, d.pointer) == ("NET-000", "")
    assert d.expected == "a JSON object" and "array" in d.found


def test_net000_missing_member() -> None:
    doc = base()
    del doc["operators"]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/operators")
    assert d.found == "missing" and "missing required member 'operators'" in d.message


def test_net000_unknown_top_level_key_suggests() -> None:
    doc = base()
    doc["operatorz"] = []
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/operatorz")
    assert "unknown key 'operatorz'" in d.message
    assert "did you mean 'operators'?" in d.message


@pytest.mark.parametrize(("mutate", "pointer", "expected", "found"), [
    (lambda d: d["inputs"][0].update(shape="x"), "/inputs/0/shape", "array", 'string "x"'),
    (lambda d: d["inputs"][0].update(shape=[0, 3]), "/inputs/0/shape/0", ">= 1", "0"),
    (lambda d: d["inputs"][0].update(dtype="double"), "/inputs/0/dtype",
     'one of "float", "int"', '"double"'),
    (lambda d: d["operators"][0]["options"].update(activation="gelu"),
     "/operators/0/options/activation", '"relu"', '"gelu"'),
    (lambda d: d["operators"][0]["options"].update(outputs=0),
     "/operators/0/options/outputs", ">= 1", "0"),
    (lambda d: d["operators"][0].update(outputs=["a", "b"]), "/operators/0/outputs",
     "at most 1 items", "2 items"),
    (lambda d: d["operators"][0].update(frozen="yes"), "/operators/0/frozen", "boolean",
     '"yes"'),
    (lambda d: d["operators"][0].update(type="Pooling2D", options={"kernel": [1, 2, 3]}),
     "/operators/0/options/kernel", "an integer or a list of two integers", "[1, 2, 3]"),
    (lambda d: d["outputs"].append({"name": "fc", "loss_weight": "x"}),
     "/outputs/2/loss_weight", "a number", 'string "x"'),
])
def test_net000_values(mutate: Any, pointer: str, expected: str, found: str) -> None:
    doc = base()
    mutate(doc)
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", pointer)
    assert expected in d.expected and found in d.found
    assert f"expected {d.expected}, found {d.found}" in text(d)


def test_net000_required_option_and_options() -> None:
    doc = base()
    doc["operators"][0]["options"] = {}
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/operators/0/options/outputs")
    assert "missing required member 'outputs' in /operators/0/options" in d.message
    doc = base()
    del doc["operators"][0]["options"]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/operators/0/options")


# --------------------------------------------------------------------------- NET-001/002


def test_net001_unknown_operator_type_suggests() -> None:
    doc = base()
    doc["operators"][0]["type"] = "InnerProdcut"
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-001", "/operators/0/type")
    assert d.found == '"InnerProdcut"'
    assert "unknown operator type" in d.message
    assert "did you mean 'InnerProduct'?" in d.message
    assert "known: SoftmaxWithLoss" in d.message


def test_net001_far_off_type_has_no_suggestion() -> None:
    doc = base()
    doc["operators"][1]["type"] = "Qwxyz"
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-001", "/operators/1/type")
    assert "did you mean" not in d.message


def test_net002_unknown_option_suggests() -> None:
    doc = base()
    doc["operators"][0]["options"]["output"] = 3
    diags = errors(doc, strict=True)
    # `output` is unknown; `outputs` is still given, so that is the only fault
    assert len(diags) == 1
    d = diags[0]
    assert (d.rule, d.pointer) == ("NET-002", "/operators/0/options/output")
    assert d.expected == "an option of InnerProduct" and d.found == "'output'"
    assert "did you mean 'outputs'?" in d.message
    assert "its options: outputs, inputs, bias, activation" in d.message


def test_net002_operator_without_options() -> None:
    doc = base()
    doc["operators"][1]["options"] = {"axis": 1}
    d = errors(doc, strict=True)[0]
    assert (d.rule, d.pointer) == ("NET-002", "/operators/1/options/axis")
    assert "unknown option 'axis' for Softmax" in d.message


# --------------------------------------------------------------------------- graph rules


def test_net003_unknown_tensor_suggests() -> None:
    doc = base()
    doc["operators"][1]["inputs"] = ["fcc"]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-003", "/operators/1/inputs/0")
    assert d.found == "'fcc'" and "an earlier operator's output" in d.expected
    assert "unknown tensor 'fcc' (did you mean 'fc'?)" in d.message


def test_net003_unknown_output_suggests() -> None:
    doc = base()
    doc["outputs"].append("probb")
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-003", "/outputs/2")
    assert "unknown tensor 'probb' (did you mean 'prob'?)" in d.message


def test_net004_duplicate_operator_name() -> None:
    doc = base()
    doc["operators"][1]["name"] = "fc"
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-004", "/operators/1/name")
    assert "duplicate operator name 'fc' (also operator #0)" in d.message


def test_net004_duplicate_input_name() -> None:
    doc = base()
    doc["inputs"].append({"name": "data", "shape": [4, 3]})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-004", "/inputs/2/name")
    assert "duplicate input name 'data'" in d.message


def test_net004_duplicate_output() -> None:
    doc = base()
    doc["outputs"].append("prob")
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-004", "/outputs/2")
    assert "output 'prob' is listed twice" in d.message


def test_net004_tensor_produced_twice() -> None:
    doc = base()
    doc["operators"][1]["outputs"] = ["fc2"]
    doc["operators"].append({"name": "act", "type": "Activation", "inputs": ["prob2"],
                             "outputs": ["fc2"], "options": {"activation": "relu"}})
    doc["operators"].insert(2, {"name": "p2", "type": "Softmax", "inputs": ["fc"],
                                "outputs": ["prob2"]})
    doc["outputs"] = ["fc2", "loss"]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-004", "/operators/4/outputs/0")
    assert "tensor 'fc2' is already produced by operator 'prob' (#1)" in d.message
    assert "in-place" in d.message


def test_net004_operator_output_named_like_an_input() -> None:
    doc = base()
    doc["operators"][1]["outputs"] = ["label"]
    doc["outputs"] = ["label", "loss"]
    d = errors(doc)[0]
    assert (d.rule, d.pointer) == ("NET-004", "/operators/1/outputs/0")
    assert "already produced by a network input" in d.message


def test_net006_cycle() -> None:
    doc = base()
    doc["operators"][0]["inputs"] = ["prob"]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-006", "/operators/0/inputs/0")
    assert d.found == "'prob'"
    assert "produced by operator 'prob' (#1), which does not run before this one" \
        in d.message


def test_net011_arity() -> None:
    doc = base()
    doc["operators"][2]["inputs"] = ["fc"]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-011", "/operators/2/inputs")
    assert (d.expected, d.found) == ("2 input(s)", "1")
    assert "SoftmaxWithLoss takes 2 input tensor(s), found 1" in d.message


def test_net011_concat_needs_one_input() -> None:
    doc = base()
    doc["operators"].insert(1, {"name": "cat", "type": "Concat", "inputs": [],
                                "outputs": ["cat"]})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-011", "/operators/1/inputs")
    assert d.expected == "at least 1 input(s)" and d.found == "0"


# --------------------------------------------------------------------------- option ranges
# Issue 30: every option value a verifier, pass or library refuses later is refused at
# check time, with NET-000 at the option's pointer (NET-005 where only the input shapes
# tell, at the operator's).

F32_MAX = "3.4028234663852886e+38"


def _one_op(op_type: str, options: dict[str, Any], shape: list[int] | None = None
            ) -> dict[str, Any]:
    """data [4, 2, 6, 6] -> the operator -> InnerProduct(3) -> SoftmaxWithLoss."""
    return {
        "inputs": [{"name": "data", "shape": shape or [4, 2, 6, 6]},
                   {"name": "label", "shape": [(shape or [4])[0]], "dtype": "int"}],
        "outputs": ["loss"],
        "operators": [
            {"name": "x", "type": op_type, "inputs": ["data"], "outputs": ["x"],
             "options": options},
            {"name": "ip", "type": "InnerProduct", "inputs": ["x"], "outputs": ["ip"],
             "options": {"outputs": 3}},
            {"name": "l", "type": "SoftmaxWithLoss", "inputs": ["ip", "label"],
             "outputs": ["loss"]}]}


def test_issue30_conv_kernel_zero() -> None:
    """Defect 2: `"kernel": 0` was an internal ZeroDivisionError (the initial range)."""
    doc = _one_op("Convolution2D", {"channels_out": 3, "kernel": 0}, [64, 1, 8, 8])
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/operators/0/options/kernel")
    assert d.expected == "an integer or a list of two integers, each in [1, 2147483647]"
    assert d.found == "0"
    assert str(d) == ("NET-000 at /operators/0/options/kernel: expected an integer or a "
                      "list of two integers, each in [1, 2147483647], found 0")


def test_issue30_huge_loss_weight() -> None:
    """Defect 3: a loss weight beyond float32 was an internal OverflowError."""
    doc = base()
    doc["outputs"] = ["prob", {"name": "loss", "loss_weight": 1e39}]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/outputs/1/loss_weight")
    assert d.expected == f"a number of at most {F32_MAX} in magnitude (finite in float32)"
    assert d.found == "1e+39"


@pytest.mark.parametrize(("op_type", "options", "key", "expected", "found"), [
    # defect 4: refused later by frame.batch_norm / frame.batch_norm_stats / frame.hardtanh
    ("BatchNorm", {"eps": 0}, "eps", "> 0", "0"),
    ("BatchNorm", {"eps": -1}, "eps", "> 0", "-1"),
    ("BatchNorm", {"momentum": 5}, "momentum", "<= 1", "5"),
    ("Hardtanh", {"min_val": 1, "max_val": -1}, "min_val", "min_val < max_val (in float32)",
     "min_val 1 and max_val -1"),
    # item 2: every range a verifier, pass or library enforces
    ("BatchNorm", {"momentum": -0.5}, "momentum", ">= 0", "-0.5"),
    ("BatchNorm", {"eps": 1e-50}, "eps", "> 0 in float32 (at least 1.4e-45)",
     "1e-50, which rounds to 0"),
    ("BatchNorm", {"eps": 1e39}, "eps", f"<= {F32_MAX}", "1e+39"),
    ("Hardtanh", {"min_val": 1, "max_val": 1}, "min_val", "min_val < max_val (in float32)",
     "min_val 1 and max_val 1"),
    ("Hardtanh", {"min_val": 2}, "min_val", "min_val < max_val (in float32)",
     "min_val 2 and max_val 1"),
    ("Hardtanh", {"max_val": -2}, "max_val", "min_val < max_val (in float32)",
     "min_val -1 and max_val -2"),
    ("Hardtanh", {"min_val": 0.5, "max_val": 0.50000000001}, "min_val",
     "min_val < max_val (in float32)", "min_val 0.5 and max_val 0.50000000001"),
    ("Hardtanh", {"max_val": -1e39}, "max_val", f">= -{F32_MAX}", "-1e+39"),
    ("Threshold", {"threshold": 1e39}, "threshold", f"<= {F32_MAX}", "1e+39"),
    ("Reduction", {"output_scale": -1e39}, "output_scale", f">= -{F32_MAX}", "-1e+39"),
    ("Interpolation", {"scale_y": 1e39, "scale_x": 1}, "scale_y", f"<= {F32_MAX}", "1e+39"),
    ("Convolution2D", {"channels_out": 3, "kernel": [3, 0]}, "kernel",
     "each in [1, 2147483647]", "[3, 0]"),
    ("Convolution2D", {"channels_out": 3, "kernel": 3, "stride": 0}, "stride",
     "each in [1, 2147483647]", "0"),
    ("Convolution2D", {"channels_out": 3, "kernel": 3, "dilate": [1, 0]}, "dilate",
     "each in [1, 2147483647]", "[1, 0]"),
    ("Convolution2D", {"channels_out": 3, "kernel": 3, "pad": -1}, "pad",
     "each in [0, 2147483647]", "-1"),
    ("Convolution2D", {"channels_out": 3, "kernel": 3, "stride": 2**63}, "stride",
     "each in [1, 2147483647]", str(2**63)),
    ("Convolution2D", {"channels_out": 2**31, "kernel": 3}, "channels_out",
     "<= 2147483647", str(2**31)),
    ("TransposedConvolution2D", {"channels_out": 2, "kernel": 3, "output_pad": -1},
     "output_pad", "each in [0, 2147483647]", "-1"),
    ("Pooling2D", {"kernel": 0}, "kernel", "each in [1, 2147483647]", "0"),
    ("Pooling2D", {"kernel": 2, "stride": [0, 1]}, "stride", "each in [1, 2147483647]",
     "[0, 1]"),
    ("Pooling2D", {"kernel": 2, "pad": -1}, "pad", "each in [0, 2147483647]", "-1"),
    ("Slice", {"begin": -2**70}, "begin", ">= -2147483647", str(-2**70)),
    ("Reduction", {"start_axis": 2**40}, "start_axis", "<= 2147483647", str(2**40)),
    ("Interpolation", {"out_h": 2**31, "out_w": 2}, "out_h", "<= 2147483647", str(2**31)),
])
def test_issue30_option_ranges(op_type: str, options: dict[str, Any], key: str,
                               expected: str, found: str) -> None:
    d = only(_one_op(op_type, options))
    assert (d.rule, d.pointer) == ("NET-000", f"/operators/0/options/{key}")
    assert expected in d.expected and d.found == found, d
    assert f"expected {d.expected}, found {d.found}" in text(d)


def test_issue30_list_items_in_range() -> None:
    doc = _one_op("Reshape", {"dims": [4, 2**40]})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/operators/0/options/dims/1")
    assert d.expected == "<= 2147483647"
    doc = _one_op("Parameter", {"shape": [0]})
    doc["operators"][0]["inputs"] = []
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/operators/0/options/shape/0")


@pytest.mark.parametrize(("op_type", "options"), [
    ("BatchNorm", {"eps": 1.5e-45, "momentum": 0}),
    ("BatchNorm", {"eps": 3.4e38, "momentum": 1}),
    ("Hardtanh", {"min_val": -3.4028234663852886e38, "max_val": 3.4028234663852886e38}),
    ("Hardtanh", {"min_val": 0.5, "max_val": 0.5000001}),
    ("Elementwise", {"coef1": -3.4e38, "coef2": 1e-50}),
    ("Convolution2D", {"channels_out": 3, "kernel": [1, 3], "stride": [2147483647, 1],
                       "dilate": 2}),
])
def test_issue30_range_boundaries_are_accepted(op_type: str, options: dict[str, Any]
                                               ) -> None:
    doc = _one_op(op_type, options)
    if op_type == "Elementwise":
        doc["operators"][0]["inputs"] = ["data", "data"]
    spec = network_from_doc(doc)
    for mode in ("train", "test"):
        build_function(spec, mode).fn.verify()


def test_issue30_element_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sizes no machine holds, and whose byte counts overflow int64, are refused at
    check time: a declared shape (NET-000) or a deduced one (NET-005). An Interpolation
    output that does not fit in memory is RT-001 (MemoryError) before its constant
    indices are computed."""
    doc = _one_op("Abs", {}, [2**31, 2**31, 2**31])
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-000", "/inputs/0/shape")
    assert d.expected == "at most 2^50 elements"
    assert d.found == f"{2**93} elements"
    d = only(_one_op("Convolution2D", {"channels_out": 3, "kernel": 1, "pad": 2**30}))
    assert (d.rule, d.pointer) == ("NET-005", "/operators/0")
    assert "element count overflows: [4, 3, 2147483654, 2147483654] has" in d.message
    d = only(_one_op("Interpolation", {"scale_y": 3e38, "scale_x": 1}))
    assert (d.rule, d.pointer) == ("NET-005", "/operators/0")
    assert "output size" in d.message and "exceeds 2147483647" in d.message
    doc = _one_op("Parameter", {"shape": [2**30, 2**30, 2**30]})
    doc["operators"][0]["inputs"] = []
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-005", "/operators/0")
    assert "element count overflows: parameter 'x.0' [1073741824, 1073741824, " in d.message
    monkeypatch.setattr("frame_mlir.runtime.memory.available_memory", lambda: 1 << 30)
    with pytest.raises(MemoryError, match=r"an Interpolation output \[4, 2, 8388608, 6\] "
                       r"needs 1.5 GiB, 1.0 GiB are available"):
        network_from_doc(_one_op("Interpolation", {"out_h": 2**23, "out_w": 6}))
    network_from_doc(_one_op("Interpolation", {"out_h": 8192, "out_w": 6}))


# Values for each option kind: the ranges' edges, and beyond them.
_MUTATIONS: dict[str, list[Any]] = {
    "pair": [0, -1, 1, 2, [0, 1], [1, 0], [2, 3], 2**31 - 1, 2**31, 2**63],
    "int": [0, -1, -3, 1, 2, 5, 2**31 - 1, 2**31, -2**63],
    "pos_int": [1, 2, 3, 2**31 - 1, 2**31],
    "number": [0, -1, 0.5, 1, 5, 1e-50, 1e-40, 3.4e38, -3.4e38, 1e39, -1e39],
    "int_list": [[], [0], [-1], [1], [0, -1], [2**40]],
    "shape": [[1], [3, 2**40]],
}
_BASE_OPTIONS: dict[str, dict[str, Any]] = {
    "Activation": {"activation": "relu"}, "Pooling2D": {"kernel": 2},
    "InnerProduct": {"outputs": 4}, "Convolution2D": {"channels_out": 2, "kernel": 3},
    "TransposedConvolution2D": {"channels_out": 2, "kernel": 3},
    "Reshape": {"dims": [4, -1]}, "Parameter": {"shape": [4, 5]},
    "Interpolation": {"out_w": 4},
}
_SKIP = ("SoftmaxWithLoss", "NLLLoss", "MSELoss")  # two-input losses: the others cover them


def _mutated_documents() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for op_type, t in OPERATORS.items():
        if op_type in _SKIP:
            continue
        for key, o in t.options.items():
            for v in _MUTATIONS.get(o.kind, []):
                options = {**_BASE_OPTIONS.get(op_type, {}), key: v}
                doc = _one_op(op_type, options)
                if t.inputs == 2 or t.inputs is None:
                    doc["operators"][0]["inputs"] = ["data", "data"]
                elif t.inputs == 0:
                    doc["operators"][0]["inputs"] = []
                out.append((f"{op_type}.{key}={v!r}", doc))
    for w in (0, -1, 1e-50, 3.4e38, 1e39, -1e39, 2**200):
        doc = _one_op("Abs", {})
        doc["outputs"] = [{"name": "loss", "loss_weight": w}]
        out.append((f"loss_weight={w!r}", doc))
    return out


def test_issue30_what_the_checker_accepts_verifies(monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    """Every option of every operator type, mutated across its range's edges: the
    document is refused with rule ids (SpecError; or a MemoryError, RT-001, for an
    Interpolation output larger than the memory available, here 8 GiB), never another
    exception, or both of its functions pass the dialect's verifiers, which the
    passes run later."""
    monkeypatch.setattr("frame_mlir.runtime.memory.available_memory", lambda: 8 << 30)
    accepted = refused = 0
    for name, doc in _mutated_documents():
        try:
            spec = network_from_doc(doc)
        except SpecError as e:
            assert all(d.rule.startswith("NET-") for d in e.diagnostics), (name, e)
            refused += 1
            continue
        except MemoryError as e:
            assert name.startswith("Interpolation.out_") and "GiB are available" in str(e)
            refused += 1
            continue
        for mode in ("train", "test"):
            try:
                build_function(spec, mode).fn.verify()
            except Exception as e:  # pragma: no cover - the failure is the message
                pytest.fail(f"{name}: accepted, then {mode} fails: {type(e).__name__}: {e}")
        accepted += 1
    assert accepted > 50 and refused > 50, (accepted, refused)


# --------------------------------------------------------------------------- shape rules


def test_net005_deduced_shapes_in_the_message() -> None:
    d = only(copy.deepcopy(CONV))
    assert (d.rule, d.pointer) == ("NET-005", "/operators/2")
    # conv 3x3 on 8x8: 6x6; pool 2/2: 3x3 -- the deduced input shape is named
    assert d.found == "inputs 'pool1' [2, 6, 3, 3]"
    assert "InnerProduct 'fc' (inputs 'pool1' [2, 6, 3, 3])" in d.message
    assert "option inputs 100 does not match the input's 54 features" in d.message


def test_net005_broadcast_and_channels() -> None:
    doc = base()
    doc["operators"].insert(1, {"name": "e", "type": "Elementwise",
                                "inputs": ["data", "fc"], "outputs": ["e"]})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-005", "/operators/1")
    assert "inputs 'data' [4, 3], 'fc' [4, 5]" in d.message
    assert "do not broadcast" in d.message
    doc = copy.deepcopy(CONV)
    doc["operators"][0]["options"]["channels_in"] = 3
    d = errors(doc)[0]
    assert (d.rule, d.pointer) == ("NET-005", "/operators/0")
    assert "inputs 'data' [2, 1, 8, 8]" in d.message
    assert "channels_in 3 does not match the input's 1 channels" in d.message


def test_loss_of_several_elements_is_their_sum() -> None:
    """NET-007 is retired: a loss output of any shape is accepted; its elements are
    summed into the objective (the reference seeds each element's gradient with the
    loss weight)."""
    doc = base()
    doc["outputs"].append({"name": "fc", "loss_weight": 0.5})
    spec = network_from_doc(doc)
    assert [(o.name, o.loss_weight) for o in spec.losses] == [("loss", 1.0), ("fc", 0.5)]
    text = str(build_function(spec, "train").fn)
    assert '"frame.sum"' in text or "frame.sum" in text


def test_loss_named_output_of_several_elements() -> None:
    doc = base()
    doc["operators"].append({"name": "lossy", "type": "Activation", "inputs": ["fc"],
                             "outputs": ["loss_fc"], "options": {"activation": "relu"}})
    doc["outputs"].append("loss_fc")
    assert [o.name for o in network_from_doc(doc).losses] == ["loss", "loss_fc"]


def test_int_loss_is_still_net010() -> None:
    doc = base()
    doc["outputs"].append({"name": "label", "loss_weight": 1.0})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-010", "/outputs/2")


def test_net009_shared_parameter_shape() -> None:
    doc = base()
    doc["operators"][0]["params"] = ["W", "b"]
    doc["operators"].insert(1, {"name": "fc2", "type": "InnerProduct", "inputs": ["fc"],
                                "outputs": ["fc2"], "options": {"outputs": 5},
                                "params": ["W", "b"]})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-009", "/operators/1")
    assert "parameter 'W' is shared with operator 'fc' but differs" in d.message
    assert "shape [5, 5] trainable here, [5, 3] trainable there" in d.message


def test_net009_shared_parameter_trainability() -> None:
    doc = base()
    doc["operators"][0]["params"] = ["W", "b"]
    doc["operators"].insert(1, {"name": "fc2", "type": "InnerProduct", "inputs": ["data"],
                                "outputs": ["fc2"], "options": {"outputs": 5},
                                "params": ["W", "b"], "frozen": True})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-009", "/operators/1")
    assert "not trainable here, [5, 3] trainable there" in d.message


def test_net010_float_labels() -> None:
    doc = base()
    doc["operators"][2]["inputs"] = ["fc", "data"]
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-010", "/operators/2")
    assert "labels (input #1) expected an int tensor" in d.message
    assert "found a float one" in d.message
    assert "inputs 'fc' [4, 5], 'data' [4, 3]" in d.message


def test_net010_int_into_a_float_operator() -> None:
    doc = base()
    doc["operators"].insert(0, {"name": "act", "type": "Activation", "inputs": ["label"],
                                "outputs": ["a"], "options": {"activation": "relu"}})
    d = only(doc)
    assert (d.rule, d.pointer) == ("NET-010", "/operators/0")
    assert "'label' [4] int" in d.message and "expected a float tensor" in d.message


# --------------------------------------------------------------------------- JSON / IO


def test_json001_syntax(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"inputs": [\n  ')
    with pytest.raises(SpecError) as info:
        load_network(p)
    (d,) = info.value.diagnostics
    assert d.rule == "JSON-001" and d.pointer.startswith(f"{p}:2:")
    assert "malformed JSON" in d.message


def test_json001_duplicate_key_and_nan(tmp_path: Path) -> None:
    doc = base()
    doc["operators"][1] = {"name": "h", "type": "Hardtanh", "inputs": ["fc"],
                           "outputs": ["prob"], "options": {"min_val": float("nan")}}
    p = tmp_path / "nan.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as info:
        load_network(p)
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("JSON-001", "/operators/1/options/min_val")
    assert d.found == "NaN" and "non-finite" in d.message
    p.write_text('{"inputs": [], "inputs": [], "outputs": [], "operators": []}')
    with pytest.raises(SpecError) as info:
        load_network(p)
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("JSON-001", "/inputs")
    assert "duplicate key 'inputs'" in d.message


def test_io001_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "nope.json"
    with pytest.raises(SpecError) as info:
        load_network(p)
    (d,) = info.value.diagnostics
    assert (d.rule, d.pointer) == ("IO-001", str(p))
    assert "No such file" in d.found


# --------------------------------------------------------------------------- all at once


def test_three_schema_faults_three_diagnostics() -> None:
    doc = base()
    doc["inputs"][0]["shape"] = [4, -3]
    doc["operators"][0]["options"]["activaton"] = "relu"
    doc["operators"][1]["type"] = "Softmx"
    diags = errors(doc, strict=True)
    assert sorted((d.rule, d.pointer) for d in diags) == [
        ("NET-000", "/inputs/0/shape/1"),
        ("NET-001", "/operators/1/type"),
        ("NET-002", "/operators/0/options/activaton"),
    ]
    assert "did you mean 'activation'?" in diags[[d.rule for d in diags].index(
        "NET-002")].message


def test_three_graph_faults_three_diagnostics() -> None:
    doc = base()
    doc["operators"][1]["inputs"] = ["fx"]         # NET-003
    doc["operators"][2]["inputs"] = ["fc"]         # NET-011
    doc["operators"][2]["name"] = "prob"           # NET-004
    diags = errors(doc)
    assert sorted((d.rule, d.pointer) for d in diags) == [
        ("NET-003", "/operators/1/inputs/0"),
        ("NET-004", "/operators/2/name"),
        ("NET-011", "/operators/2/inputs"),
    ]


def test_shape_faults_all_reported_without_cascades() -> None:
    doc = copy.deepcopy(CONV)
    doc["operators"][0]["options"]["channels_in"] = 3     # NET-005 at op 0
    # op 1 and 2 consume op 0's output: skipped, not reported again
    doc["operators"].append({"name": "fc_b", "type": "InnerProduct", "inputs": ["data"],
                             "outputs": ["fc_b"], "options": {"outputs": 2, "inputs": 7}})
    doc["operators"].append({"name": "lbl", "type": "Activation", "inputs": ["data"],
                             "outputs": ["loss_x"], "options": {"activation": "relu"}})
    doc["outputs"] = ["fc", "fc_b", "loss_x"]
    diags = errors(doc)
    assert [(d.rule, d.pointer) for d in diags] == [
        ("NET-005", "/operators/0"), ("NET-005", "/operators/3")]


def test_spec_error_text_is_one_line_per_diagnostic() -> None:
    doc = base()
    doc["operators"][1]["inputs"] = ["fx"]
    doc["operators"][2]["inputs"] = ["fc"]
    with pytest.raises(SpecError) as info:
        network_from_doc(doc, source="net.json")
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("net.json: NET-003 at /operators/1/inputs/0: ")
    assert lines[1].startswith("net.json: NET-011 at /operators/2/inputs: ")


# --------------------------------------------------------------------------- semantics


def test_in_place_renaming_values_and_outputs() -> None:
    doc = {
        "inputs": [{"name": "x", "shape": [2, 3]}],
        "outputs": ["x", "y"],
        "operators": [
            {"name": "before", "type": "Abs", "inputs": ["x"], "outputs": ["ax"]},
            {"name": "relu", "type": "Activation", "inputs": ["x"], "outputs": ["x"],
             "options": {"activation": "relu"}},
            {"name": "tanh", "type": "Activation", "inputs": ["x"], "outputs": ["x"],
             "options": {"activation": "tanh"}},
            {"name": "sum", "type": "Elementwise", "inputs": ["x", "ax"], "outputs": ["y"]},
        ],
    }
    spec = network_from_doc(doc)
    ops = {o.name: o for o in spec.operators}
    assert ops["before"].inputs == ("x",)
    assert (ops["relu"].inputs, ops["relu"].outputs) == (("x",), ("x@1",))
    assert (ops["tanh"].inputs, ops["tanh"].outputs) == (("x@1",), ("x@2",))
    assert ops["sum"].inputs == ("x@2", "ax")
    assert [(o.name, o.value) for o in spec.outputs] == [("x", "x@2"), ("y", "y")]
    # the built IR: output 'x' is tanh(relu(x)); 'y' adds it to abs(x) of the input
    fn = build_function(spec, "test").fn
    ret = list(fn.body.block.ops)[-1]
    out_x, out_y = ret.operands
    assert isinstance(out_x.owner, frame.TanhOp)
    assert isinstance(out_x.owner.operands[0].owner, frame.ReluOp)
    assert out_x.owner.operands[0].owner.operands[0] is fn.body.block.args[0]
    assert isinstance(out_y.owner, frame.AddOp)
    a, b = out_y.owner.operands
    assert a is out_x and isinstance(b.owner, frame.AbsOp)
    assert b.owner.operands[0] is fn.body.block.args[0]


def test_in_place_renaming_runs() -> None:
    from frame_mlir.network import load

    doc = {
        "inputs": [{"name": "x", "shape": [2, 3]}],
        "outputs": ["x", "y"],
        "operators": [
            {"name": "relu", "type": "Activation", "inputs": ["x"], "outputs": ["x"],
             "options": {"activation": "relu"}},
            {"name": "e", "type": "Elementwise", "inputs": ["x", "x"], "outputs": ["y"],
             "options": {"coef2": 2.0}},
        ],
    }
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    outs = load(doc).forward({"x": x})
    np.testing.assert_array_equal(outs["x"], np.maximum(x, 0))
    np.testing.assert_array_equal(outs["y"], 3 * np.maximum(x, 0))


def test_defaults_filled() -> None:
    doc = copy.deepcopy(CONV)
    del doc["operators"][2]["options"]["inputs"]
    doc["operators"][1]["options"] = {"kernel": 2, "mode": "avg"}
    spec = network_from_doc(doc)
    conv, pool, fc = spec.operators
    assert dict(conv.options) == {
        "channels_out": 6, "kernel": 3, "channels_in": None, "groups": 1, "bias": True,
        "stride": 1, "pad": 0, "dilate": 1, "activation": "identity", "fwd_algo": None,
        "bwd_data_algo": None, "bwd_filter_algo": None}
    assert dict(pool.options) == {"mode": "avg", "kernel": 2, "stride": 1, "pad": 0,
                                  "count_include_pad": False, "ceil_mode": False}
    assert dict(fc.options) == {"outputs": 4, "inputs": None, "bias": True,
                                "activation": "identity"}
    assert conv.frozen is False and conv.params == ()
    # every operator type: each option with a default is filled
    for name, t in OPERATORS.items():
        from frame_mlir.frontends.network.options import REQUIRED, with_defaults

        filled = with_defaults(name, {})
        assert set(filled) == {k for k, o in t.options.items() if o.default is not REQUIRED}


def test_explicit_params_and_frozen() -> None:
    doc = base()
    doc["operators"][0]["params"] = ["W", "auto"]
    doc["operators"][0]["frozen"] = True
    spec = network_from_doc(doc)
    fc = spec.operators[0]
    assert fc.params == ("W", None) and fc.frozen is True
    infos = build_function(spec, "train").params
    assert [(p.name, p.shape, p.trainable) for p in infos] == [
        ("W", (5, 3), False), ("fc.1", (5,), False)]


def _loss_scales(spec: NetworkSpec) -> list[float]:
    fn = build_function(spec, "train").fn
    return [op.factor.value.data for op in fn.walk() if isinstance(op, frame.ScaleOp)]


def test_loss_detection() -> None:
    doc = base()
    doc["operators"].append({"name": "l2", "type": "MSELoss", "inputs": ["prob", "prob"],
                             "outputs": ["other"]})
    doc["operators"].append({"name": "l3", "type": "MSELoss", "inputs": ["fc", "fc"],
                             "outputs": ["mse"]})
    doc["outputs"] = ["prob", "loss", {"name": "other", "loss_weight": 0.5}, "mse",
                      {"name": "fc"}]
    spec = network_from_doc(doc)
    assert [(o.name, o.loss_weight) for o in spec.outputs] == [
        ("prob", None), ("loss", 1.0), ("other", 0.5), ("mse", None), ("fc", None)]
    assert [o.name for o in spec.losses] == ["loss", "other"]
    assert _loss_scales(spec) == [0.5]
    built = build_function(spec, "train")
    assert built.has_loss and built.outputs == ["prob", "loss", "other", "mse", "fc"]
    # a `loss...` name given as an object without a weight is still a loss (weight 1)
    doc["outputs"] = ["prob", {"name": "loss"}]
    assert [(o.name, o.loss_weight) for o in network_from_doc(doc).losses] == [("loss", 1.0)]
    # no loss at all: the training function is inference-only
    doc["outputs"] = ["prob"]
    spec = network_from_doc(doc)
    assert spec.losses == [] and not build_function(spec, "train").has_loss


def test_loss_weight_scales_the_gradient() -> None:
    from frame_mlir.network import load

    doc = {
        "inputs": [{"name": "x", "shape": [2, 3]}, {"name": "t", "shape": [2, 2]}],
        "outputs": [{"name": "mse", "loss_weight": 0.5}],
        "operators": [
            {"name": "fc", "type": "InnerProduct", "inputs": ["x"], "outputs": ["y"],
             "options": {"outputs": 2, "bias": False}},
            {"name": "l", "type": "MSELoss", "inputs": ["y", "t"], "outputs": ["mse"],
             "options": {"reduce": "sum"}},
        ],
    }
    net = load(doc)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    t = rng.standard_normal((2, 2)).astype(np.float32)
    w = net.parameters()["fc.0"]
    _, grads = net.gradients({"x": x, "t": t})
    # d/dW 0.5 * sum((x W^T - t)^2) = (x W^T - t)^T x
    want = (x @ w.T - t).T @ x
    np.testing.assert_allclose(grads["fc.0"], want, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- schema / detect


def test_shipped_schema_is_generated() -> None:
    shipped = SCHEMA_FILE.read_text()
    assert shipped == json.dumps(network_schema(), indent=2) + "\n", (
        "network_schema.json is stale: regenerate it with "
        "`python -m frame_mlir.frontends.network.schema > "
        "frame_mlir/frontends/network/network_schema.json`")
    Draft202012Validator.check_schema(json.loads(shipped))


@pytest.mark.parametrize("name", ["mnist_mlp", "lenet_digits"])
def test_schema_validates_testdata_networks(name: str) -> None:
    validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    doc = json.loads((NETWORKS / f"{name}.json").read_text())
    assert list(validator.iter_errors(doc)) == []
    spec = load_network(NETWORKS / f"{name}.json")
    assert spec.name == name


def test_schema_rejects_what_the_loader_rejects() -> None:
    validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    doc = base()
    doc["operators"][0]["options"]["output"] = 3
    doc["operators"][1]["type"] = "Softmx"
    assert len(list(validator.iter_errors(doc))) >= 2


def test_is_network_document() -> None:
    tiny = json.loads((ROOT / "testdata" / "tiny_mlp.json").read_text())
    assert not is_network_document(tiny)
    assert is_network_document(base())
    assert is_network_document({"operators": []})
    assert not is_network_document({"operators": [], "schema_version": 0})
    assert not is_network_document([])
    assert not is_network_document({"inputs": [], "outputs": []})
    assert isinstance(load_model(ROOT / "testdata" / "tiny_mlp.json"), ModelSpec)
    assert isinstance(load_model(NETWORKS / "mnist_mlp.json"), NetworkSpec)


def test_load_model_reports_network_rules(tmp_path: Path) -> None:
    doc = base()
    doc["operators"][1]["inputs"] = ["fcc"]
    p = tmp_path / "n.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as info:
        load_model(p)
    assert info.value.rules == ["NET-003"]
