"""Seed inputs of the five fuzz frontends, read from the repository (cached)."""

from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
TESTDATA = REPO / "testdata"
KYN_DIR = TESTDATA / "kyn"
KYN_DATA = KYN_DIR / "data"
# The dlprimitives operator cases: vendored under tests/, also in the shared folder.
DLPRIM_DIRS = (REPO / "tests" / "network" / "dlprim_cases", REPO.parent / "shared" / "dlprim"
               / "cases")


@lru_cache(maxsize=1)
def v0_specs() -> tuple[tuple[str, str], ...]:
    """(name, text) of every v0 spec under testdata/ (the valid ones and testdata/bad)."""
    files = sorted(TESTDATA.glob("*.json")) + sorted((TESTDATA / "bad").glob("*.json"))
    return tuple((f.name, f.read_text("utf-8", "replace")) for f in files)


@lru_cache(maxsize=1)
def v0_valid_docs() -> tuple[dict[str, Any], ...]:
    """The parseable top-level-object specs among `v0_specs` (the JSON mutator's seeds)."""
    out = []
    for _, text in v0_specs():
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return tuple(out)


_RUN_PASSES = re.compile(r"RUN:.*frame-opt %s.*?-p\s+('([^']*)'|(\S+))")


@lru_cache(maxsize=1)
def ir_chunks() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(file, chunk text, pipelines of the file's RUN lines) of every lit test chunk
    that uses the frame dialect."""
    out = []
    for f in sorted((REPO / "lit_tests").rglob("*.mlir")):
        if "Output" in f.parts:  # lit's own scratch files, not tests
            continue
        text = f.read_text("utf-8")
        if "frame." not in text and "frame_rt." not in text:
            continue
        pipes = tuple(dict.fromkeys(m.group(2) or m.group(3) for m in _RUN_PASSES.finditer(text)))
        rel = str(f.relative_to(REPO))
        for chunk in text.split("// -----"):
            body = "\n".join(ln for ln in chunk.split("\n") if not ln.startswith("// RUN"))
            if "frame" in body:
                out.append((rel, body, pipes))
    return tuple(out)


def _dlprim_files() -> list[Path]:
    for d in DLPRIM_DIRS:
        files = sorted(d.glob("test_case_*.json.gz"))
        if files:
            return files
    return []


_LOSS_TYPES = ("SoftmaxWithLoss", "NLLLoss", "MSELoss")


@lru_cache(maxsize=1)
def networks() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(name, network document): testdata/networks/*.json, plus one single-operator
    network per dlprimitives conformance entry (its options and setup shapes), with a
    loss: the operator's own or the mean of its output (a Reduction)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for f in sorted((TESTDATA / "networks").glob("*.json")):
        out.append((f.name, json.loads(f.read_text("utf-8"))))
    for f in _dlprim_files():
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            cases = json.load(fh)
        op = cases["operator"]
        for i, entry in enumerate(cases["tests"]):
            out.append((f"{f.name.split('.')[0]}#{i}", _one_op_network(op, entry)))
    return tuple(out)


#: Seeds for the operator types no testdata network or dlprimitives case has.
_EXTRA_NETWORKS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("squeeze", {"inputs": [{"name": "x", "shape": [4, 3, 1, 1]},
                            {"name": "y", "shape": [4], "dtype": "int"}],
                 "outputs": ["loss"],
                 "operators": [
                     {"name": "s", "type": "Squeeze", "inputs": ["x"], "outputs": ["s"],
                      "options": {"dims": [2, 3]}},
                     {"name": "fc", "type": "InnerProduct", "inputs": ["s"],
                      "outputs": ["fc"], "options": {"outputs": 2}},
                     {"name": "l", "type": "SoftmaxWithLoss", "inputs": ["fc", "y"],
                      "outputs": ["loss"]}]}),
    ("reshape", {"inputs": [{"name": "x", "shape": [4, 6]},
                            {"name": "y", "shape": [4], "dtype": "int"}],
                 "outputs": ["loss"],
                 "operators": [
                     {"name": "r", "type": "Reshape", "inputs": ["x"], "outputs": ["r"],
                      "options": {"dims": [0, 2, -1]}},
                     {"name": "fc", "type": "InnerProduct", "inputs": ["r"],
                      "outputs": ["fc"], "options": {"outputs": 3}},
                     {"name": "l", "type": "SoftmaxWithLoss", "inputs": ["fc", "y"],
                      "outputs": ["loss"]}]}),
)


@lru_cache(maxsize=1)
def networks_by_operator() -> dict[str, tuple[tuple[str, dict[str, Any]], ...]]:
    """Operator type -> the seed networks that have an operator of it (every type with
    options; `_EXTRA_NETWORKS` supply the types no other seed has)."""
    from frame_mlir.frontends.network.options import OPERATORS

    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for name, doc in (*networks(), *_EXTRA_NETWORKS):
        for op in doc["operators"]:
            if OPERATORS.get(op["type"]) and OPERATORS[op["type"]].options:
                out.setdefault(op["type"], [])
                if (name, doc) not in out[op["type"]]:
                    out[op["type"]].append((name, doc))
    missing = {t for t, o in OPERATORS.items() if o.options} - set(out)
    assert not missing, f"no seed network for {sorted(missing)}"
    return {t: tuple(v) for t, v in out.items()}


def _one_op_network(op: str, entry: dict[str, Any]) -> dict[str, Any]:
    setups = entry.get("setup_tensors", [])
    inputs = []
    for j, t in enumerate(setups):
        shape = list(t["shape"])
        label = op in ("SoftmaxWithLoss", "NLLLoss") and j == 1
        inp: dict[str, Any] = {"name": f"in{j}", "shape": shape}
        if label:
            inp["dtype"] = "int"
        inputs.append(inp)
    is_loss = op in _LOSS_TYPES and entry.get("options", {}).get("reduce", "mean") != "none"
    operators: list[dict[str, Any]] = [{
        "name": "op", "type": op, "inputs": [i["name"] for i in inputs],
        "outputs": ["loss" if is_loss else "out"], "options": entry.get("options", {})}]
    outputs: list[Any] = ["loss"]
    if not is_loss:
        operators.append({"name": "mean", "type": "Reduction", "inputs": ["out"],
                          "outputs": ["loss"], "options": {"method": "mean"}})
        outputs = ["out", "loss"]
    return {"inputs": inputs, "outputs": outputs, "operators": operators}


@lru_cache(maxsize=1)
def kyn_programs() -> tuple[tuple[str, str], ...]:
    """(name, text) of testdata/kyn/*.kyn and testdata/kyn/invalid/*.kyn."""
    files = sorted(KYN_DIR.glob("*.kyn")) + sorted((KYN_DIR / "invalid").glob("*.kyn"))
    return tuple((str(f.relative_to(KYN_DIR)), f.read_text("utf-8")) for f in files)


@lru_cache(maxsize=1)
def kyn_siblings() -> dict[str, bytes]:
    """Every .kyn file by its path relative to testdata/kyn, so that a mutated program's
    imports resolve as they would in place."""
    return {name: text.encode() for name, text in kyn_programs()}
