"""Semantic validation and shape inference of `.kyn` programs: every rule of the fact
sheet's section 7 table, the key types, ranges and defaults of `vocab.py` and docs/kyn.md,
`did you mean` suggestions, KynML's documented message texts, every error of a program
reported, the resolved module's defaults, inferred widths, `layer_shapes`, and the
softmax warning. Programs are small strings analysed with `pipeline.analyze`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from frame_mlir.frontends.kyn.errors import KynDiagnostic, KynSemanticError, KynShapeError
from frame_mlir.frontends.kyn.parser import parse_text
from frame_mlir.frontends.kyn.pipeline import Analysis, analyze
from frame_mlir.frontends.kyn.validate import validate
from frame_mlir.frontends.kyn.vocab import (
    ACTIVATIONS,
    CALL_SETS,
    CALLS,
    ENUMS,
    EXPORT_FORMATS,
    KEYS,
    LOSSES,
    METRICS,
    OPTIMIZERS,
    REQUIRED,
    SCHEDULERS,
)

# A valid program; `program(...)` rebuilds it with keys changed, added or removed.
BLOCKS: dict[str, list[tuple[str, str]]] = {
    "dataset D": [("source", 'csv("d.csv")'), ("target", '"y"')],
    "train": [("model", "M"), ("data", "D"), ("loss", "mse"),
              ("optimizer", "adam(lr=0.01)"), ("epochs", "2"), ("batch", "4")],
    "evaluate": [("metrics", "[mae]")],
    "export": [("format", "torch"), ("path", '"m.pt"')],
}
MODEL = ["input 4", "dense 8 relu", "dense 1"]


def program(changes: dict[str, dict[str, str | None]] | None = None,
            layers: list[str] | None = None, extra: str = "") -> str:
    """The base program with `changes[block][key] = value` (None removes the key; a new
    key is appended) and `layers` as the model body."""
    changes = {k: dict(v) for k, v in (changes or {}).items()}
    loss = changes.get("train", {}).get("loss")
    if loss in ("cross_entropy", "nll") and "metrics" not in changes.get("evaluate", {}):
        # `mae` does not apply to a classification loss (KYN-S15)
        changes.setdefault("evaluate", {})["metrics"] = "[accuracy]"
    out = []
    for header, entries in BLOCKS.items():
        kind = header.split()[0]
        mine = dict(entries)
        for k, v in changes.get(kind, {}).items():
            if v is None:
                mine.pop(k, None)
            else:
                mine[k] = v
        out.append(f"{header}:\n" + "".join(f"    {k} = {v}\n" for k, v in mine.items()))
        if kind == "dataset":
            out.append("model M:\n" + "".join(f"    {x}\n" for x in (layers or MODEL)))
    return "\n".join(out) + extra


def run(text: str, overrides: dict[str, Any] | None = None) -> Analysis:
    return analyze(text, "t.kyn", overrides=overrides)


def found(a: Analysis) -> list[tuple[str, int, int]]:
    return [(d.rule, d.line, d.col) for d in a.diagnostics]


def where(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based (line, col) of the `nth` occurrence of `needle` in `text`."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def value_at(text: str, key: str, value: str) -> tuple[int, int]:
    """(line, col) of the value of the entry `key = value`."""
    line, col = where(text, f"{key} = {value}")
    return line, col + len(key) + 3


def layer_at(text: str, layer: str) -> tuple[int, int]:
    """(line, col) of the model body line `layer`."""
    return where(text, f"\n    {layer}\n")[0] + 1, 5


def only(a: Analysis) -> KynDiagnostic:
    assert len(a.diagnostics) == 1, "\n".join(str(d) for d in a.diagnostics)
    return a.diagnostics[0]


def test_base_program_is_valid() -> None:
    a = run(program())
    assert a.diagnostics == [] and a.module is not None


# -- program structure (KYN-S01, S11) ----------------------------------------------------
@pytest.mark.parametrize(("drop", "what"), [("dataset", "a dataset block"),
                                            ("model", "a model block"),
                                            ("train", "a train block")])
def test_missing_block(drop: str, what: str) -> None:
    text = program()
    start = text.index(f"{drop} " if drop != "train" else "train:")
    end = text.find("\n\n", start)
    text = text[:start] + text[end + 2:]
    a = run(text)
    s01 = [d for d in a.diagnostics if d.rule == "KYN-S01"]
    assert [(d.line, d.col) for d in s01] == [(1, 1)]
    assert what in s01[0].message


def test_empty_program_reports_all_three_missing_blocks() -> None:
    a = run("# nothing\n")
    assert found(a) == [("KYN-S01", 1, 1)] * 3


@pytest.mark.parametrize("block", ["train", "evaluate", "export"])
def test_simple_block_at_most_once(block: str) -> None:
    body = {"train": "    epochs = 3\n", "evaluate": "    metrics = [mse]\n",
            "export": "    format = npz\n"}[block]
    text = program() + f"\n{block}:\n{body}"
    a = run(text)
    line = text.count("\n", 0, text.rindex(f"{block}:")) + 1
    assert ("KYN-S01", line, 1) in found(a)
    assert any("at most one" in d.message for d in a.diagnostics)


@pytest.mark.parametrize("block", ["params", "sweep"])
def test_params_and_sweep_at_most_once(block: str) -> None:
    text = f"{block}:\n    a = [1]\n{block}:\n    b = [2]\n" + program()
    assert found(run(text)) == [("KYN-S01", 3, 1)]


def test_duplicate_named_blocks() -> None:
    text = program() + "\nmodel M:\n    input 2\n    dense 1\n" \
        + '\ndataset D:\n    source = csv("e.csv")\n    target = "z"\n'
    a = run(text)
    assert found(a) == [("KYN-S11", *where(text, "M:", 1)), ("KYN-S11", *where(text, "D:", 1))]
    assert "duplicate model 'M' (first defined on line" in a.diagnostics[0].message


def test_datasets_and_models_are_separate_namespaces() -> None:
    text = program({"train": {"data": "M"}}).replace("dataset D:", "dataset M:")
    assert run(text).diagnostics == []


# -- keys (KYN-S02, S03, S13) ------------------------------------------------------------
@pytest.mark.parametrize(("block", "key", "hint"), [
    ("dataset", "spilt", "split"), ("dataset", "normalise", "normalize"),
    ("train", "epoch", "epochs"), ("train", "optimiser", "optimizer"),
    ("train", "batch_size", "batch"), ("evaluate", "metric", "metrics"),
    ("export", "formt", "format"), ("dataset", "zzz", None),
])
def test_unknown_key_with_suggestion(block: str, key: str, hint: str | None) -> None:
    text = program({block: {key: "1"}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S02", where(text, f"{key} ="))
    assert f"unknown key '{key}'" in d.message
    assert ", ".join(KEYS[block]) in d.message  # the accepted keys
    if hint:
        assert d.message.endswith(f"did you mean '{hint}'?")
    else:
        assert "did you mean" not in d.message


def test_duplicate_key() -> None:
    text = program().replace("    batch = 4\n", "    batch = 4\n    batch = 8\n")
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S03", where(text, "batch = 8"))
    line = where(text, "batch = 4")[0]
    assert d.message == f"duplicate key 'batch' in train (first set on line {line})"


def test_first_of_duplicate_keys_counts() -> None:
    text = program().replace("    batch = 4\n", "    batch = 4\n    batch = 0\n")
    a = run(text)
    assert [d.rule for d in a.diagnostics] == ["KYN-S03"]
    assert a.module is None  # an error is an error


@pytest.mark.parametrize(("block", "key"), [
    (block, key) for block, table in KEYS.items() for key, k in table.items()
    if k.default is REQUIRED])
def test_required_key(block: str, key: str) -> None:
    text = program({block: {key: None}})
    a = run(text)
    header = {"dataset": where(text, "D:"), "train": where(text, "train:"),
              "evaluate": where(text, "evaluate:"), "export": where(text, "export:")}[block]
    s13 = [d for d in a.diagnostics if d.rule == "KYN-S13"]
    assert [(d.line, d.col) for d in s13] == [header]
    assert f"needs the key '{key}'" in s13[0].message
    others = [d for d in a.diagnostics if d.rule != "KYN-S13"]
    # a missing model/data name leaves nothing to cross-check; nothing else is reported
    assert others == []


def test_required_keys_per_docs() -> None:
    required = {b: {k for k, key in t.items() if key.default is REQUIRED}
                for b, t in KEYS.items()}
    assert required == {
        "dataset": {"source", "target"},
        "train": {"model", "data", "loss", "optimizer", "epochs", "batch"},
        "evaluate": {"metrics"},
        "export": {"format", "path"},
    }


def test_every_missing_key_is_reported() -> None:
    a = run("dataset D:\n    split = 0.5\nmodel M:\n    input 2\n    dense 1\ntrain:\n"
            "    epochs = 3\n")
    assert [(d.rule, d.line, d.col) for d in a.diagnostics] == (
        [("KYN-S13", 1, 9)] * 2 + [("KYN-S13", 6, 1)] * 5)
    assert [re.search(r"needs the key '(\w+)'", d.message)[1]  # type: ignore[index]
            for d in a.diagnostics] == [
        "source", "target", "model", "data", "loss", "optimizer", "batch"]


# -- value types (KYN-S04, S05, S08) and ranges (S06), driven by vocab.KEYS --------------
_WRONG: dict[str, list[tuple[str, str]]] = {
    "int": [("1.5", "KYN-S04"), ("true", "KYN-S04"), ('"3"', "KYN-S04"), ("x", "KYN-S04")],
    "float": [("true", "KYN-S04"), ('"0.5"', "KYN-S04"), ("x", "KYN-S04"),
              ("[0.5]", "KYN-S04")],
    "bool": [("1", "KYN-S04"), ("True", "KYN-S04"), ('"true"', "KYN-S04"),
             ("yes", "KYN-S04")],
    "string": [("3", "KYN-S04"), ("y", "KYN-S04"), ("[1]", "KYN-S04")],
    "name": [("3", "KYN-S04"), ("[M]", "KYN-S04")],
    "enum": [("3", "KYN-S04"), ("nosuch", "KYN-S05"), ("true", "KYN-S04")],
    "call:source": [("3", "KYN-S08"), ("parquet(\"x\")", "KYN-S08"),
                    ('"d.csv"', "KYN-S08"), ("csv()", "KYN-S08"), ("csv(3)", "KYN-S04")],
    "call": [("3", "KYN-S04"), ("nosuch(x=1)", "KYN-S05"), ("[1]", "KYN-S04")],
    "list": [("mae", "KYN-S04"), ("[]", "KYN-S04"), ("[nosuch]", "KYN-S05"), ("3", "KYN-S04")],
    "intlist": [("3", "KYN-S04"), ("[1.5, 4]", "KYN-S04"), ("[]", "KYN-S04"),
                ("[0, 4]", "KYN-S06")],
}


def _kind(t: str) -> str:
    if t.startswith("enum:"):
        return "enum"
    if t == "call:source":
        return t
    return t.split(":")[0]


@pytest.mark.parametrize(("block", "key", "value", "rule"), [
    (block, key, value, rule)
    for block, table in KEYS.items() for key, k in table.items()
    for value, rule in _WRONG[_kind(k.type)]])
def test_wrong_value_type(block: str, key: str, value: str, rule: str) -> None:
    text = program({block: {key: value}})
    d = only(run(text))
    assert d.rule == rule, str(d)
    line, col = where(text, f"{key} = {value}")
    assert d.line == line and d.col >= col + len(key) + 3  # at (or inside) the value
    assert d.kind == "semantic" and d.file == "t.kyn"


def _bound_cases() -> list[tuple[str, str, str, bool]]:
    cases = []
    for block, table in KEYS.items():
        for key, k in table.items():
            if k.type not in ("int", "float"):
                continue
            step = 1 if k.type == "int" else 0.5
            fmt = (lambda x: str(int(x))) if k.type == "int" else (lambda x: repr(float(x)))
            if k.lo is not None:
                cases.append((block, key, fmt(k.lo), k.lo_open))
                cases.append((block, key, fmt(k.lo - step), True))
            if k.hi is not None:
                cases.append((block, key, fmt(k.hi), k.hi_open))
                cases.append((block, key, fmt(k.hi + step), True))
    return cases


@pytest.mark.parametrize(("block", "key", "value", "bad"), _bound_cases())
def test_key_ranges(block: str, key: str, value: str, bad: bool) -> None:
    text = program({block: {key: value}})
    a = run(text)
    if bad:
        d = only(a)
        assert (d.rule, (d.line, d.col)) == ("KYN-S06", value_at(text, key, value))
        assert "must be" in d.message and "found" in d.message
    else:
        assert a.diagnostics == []


@pytest.mark.parametrize(("key", "value", "message"), [
    ("split", "1.0", "dataset 'D': split must be in (0, 1), found 1"),
    ("split", "0", "dataset 'D': split must be in (0, 1), found 0"),
    ("num_workers", "-1", "dataset 'D': num_workers must be >= 0, found -1"),
])
def test_dataset_range_messages(key: str, value: str, message: str) -> None:
    assert only(run(program({"dataset": {key: value}}))).message == message


def test_ranges_per_docs() -> None:
    ds, tr, ex = KEYS["dataset"], KEYS["train"], KEYS["export"]
    assert (ds["split"].lo, ds["split"].hi, ds["split"].lo_open, ds["split"].hi_open) == (
        0, 1, True, True)
    assert ds["num_workers"].lo == 0 and not ds["num_workers"].lo_open
    assert tr["epochs"].lo == 1 and tr["batch"].lo == 1
    assert ex["opset"].default == 17


@pytest.mark.parametrize(("key", "members"), [
    ("loss", LOSSES), ("device", ENUMS["device"]), ("precision", ENUMS["precision"])])
def test_every_enum_member_is_accepted(key: str, members: tuple[str, ...]) -> None:
    for m in members:
        layers = MODEL if m not in ("cross_entropy", "nll") else ["input 4", "dense 3"]
        a = run(program({"train": {key: m}}, layers))
        assert a.errors == [], (m, a.errors)


def test_every_metric_and_format_is_accepted() -> None:
    # bce is the one loss every metric applies to (KYN-S15)
    a = run(program({"train": {"loss": "bce"},
                     "evaluate": {"metrics": "[" + ", ".join(METRICS) + "]"}}))
    assert a.errors == []
    for f in EXPORT_FORMATS:
        extra = {"input_shape": "[1, 4]"} if f == "onnx" else {}
        assert run(program({"export": {"format": f, **extra}})).errors == []


@pytest.mark.parametrize(("key", "value", "what", "hint"), [
    ("loss", "crossentropy", "loss", "cross_entropy"),
    ("loss", "mean_squared", "loss", None),
    ("optimizer", "adamm(lr=0.1)", "optimizer", "adam"),
    ("optimizer", "sdg", "optimizer", "sgd"),
    ("scheduler", "cosin()", "scheduler", "cosine"),
    ("device", "gpu", "device", "cpu"),
    ("precision", "fp64", "precision", "fp16"),
])
def test_unsupported_names_with_suggestions(key: str, value: str, what: str,
                                            hint: str | None) -> None:
    text = program({"train": {key: value}})
    d = only(run(text))
    name = value.split("(")[0]
    assert d.rule == "KYN-S05"
    assert (d.line, d.col) == value_at(text, key, value)
    # the pattern of KynML's documented message: Unsupported <what> '<x>'
    assert d.message.startswith(f"Unsupported {what} '{name}'")
    assert ("did you mean" in d.message) == (hint is not None)
    if hint:
        assert d.message.endswith(f"did you mean '{hint}'?")


def test_unsupported_metric() -> None:
    text = program({"evaluate": {"metrics": "[mae, rsme]"}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S05", where(text, "rsme"))
    assert d.message.startswith("Unsupported metric 'rsme'")
    assert d.message.endswith("did you mean 'rmse'?")


def test_metric_listed_twice() -> None:
    text = program({"evaluate": {"metrics": "[mae, rmse, mae]"}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S03", where(text, "mae", 1))


def test_unsupported_export_format_message() -> None:
    d = only(run(program({"export": {"format": "pt"}})))
    assert d.message.startswith("Unsupported format 'pt'")


def test_names_may_be_written_as_strings() -> None:
    # a string is accepted where an identifier is expected (what `--param act=gelu` gives)
    a = run(program({"train": {"model": '"M"', "loss": '"mse"'}},
                    ["input 4", 'dense 8 "relu"', "dense 1"]))
    assert a.errors == []
    assert a.module is not None and a.module.model.layers[1].activation == "relu"


def test_true_is_not_a_boolean() -> None:
    d = only(run(program({"dataset": {"normalize": "True"}})))
    assert d.rule == "KYN-S04"
    assert d.message == "dataset 'D': normalize must be true or false, found the name 'True'"


# -- dataset source (KYN-S08) ------------------------------------------------------------
def test_csv_takes_exactly_one_argument() -> None:
    text = program({"dataset": {"source": 'csv("a.csv", "b.csv")'}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S08", where(text, "csv("))
    assert 'source must be csv("<path>") with exactly one positional argument' in d.message


def test_csv_keyword_path_is_rejected() -> None:
    d = only(run(program({"dataset": {"source": 'csv(path="a.csv")'}})))
    assert d.rule == "KYN-S08"


def test_only_the_csv_connector() -> None:
    for src in ('huggingface("x")', 'objectstore("s3://b/k")'):
        d = only(run(program({"dataset": {"source": src}})))
        assert d.rule == "KYN-S08" and "Unsupported connector" in d.message


# -- call arguments (KYN-S13, S14, S03) driven by vocab.CALLS ----------------------------
def _call_key(name: str) -> str:
    return next(k for k, names in CALL_SETS.items() if name in names)


def _required_args(name: str) -> str:
    req = [a for a, k in CALLS[name].items() if k.default is REQUIRED]
    return ", ".join(f"{a}={'1' if CALLS[name][a].type == 'int' else '0.5'}" for a in req)


def _call_program(name: str, args: str) -> str:
    key = _call_key(name)
    return program({"train": {key: f"{name}({args})"}})


@pytest.mark.parametrize("name", [n for n in CALLS if n != "csv"])
def test_unknown_call_argument(name: str) -> None:
    args = ", ".join(x for x in (_required_args(name), "bogus=1") if x)
    text = _call_program(name, args)
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S14", where(text, "bogus=1"))
    assert d.message.startswith(f"{name}() has no argument 'bogus'; accepted: "
                                f"{', '.join(CALLS[name])}")


def test_unknown_optimizer_argument_suggests() -> None:
    d = only(run(program({"train": {"optimizer": "sgd(lr=0.1, momentm=0.9)"}})))
    assert d.message.endswith("did you mean 'momentum'?")
    d = only(run(program({"train": {"optimizer": "adam(amsgrad=true)"}})))
    assert d.rule == "KYN-S14" and "accepted: lr, betas, eps, weight_decay" in d.message


@pytest.mark.parametrize(("name", "arg"), [
    (n, a) for n, t in CALLS.items() if n != "csv" for a, k in t.items()
    if k.default is REQUIRED])
def test_required_call_argument(name: str, arg: str) -> None:
    text = _call_program(name, "")
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S13", where(text, f"{name}()"))
    assert f"{name}() needs the argument '{arg}'" in d.message


def test_positional_call_arguments_follow_the_table_order() -> None:
    a = run(program({"train": {"optimizer": "sgd(0.1, 0.9)",
                               "scheduler": "step(7, 0.5)"}}))
    assert a.errors == [] and a.module is not None
    assert a.module.train.optimizer.args["lr"] == 0.1
    assert a.module.train.optimizer.args["momentum"] == 0.9
    assert a.module.train.scheduler is not None
    assert a.module.train.scheduler.args == {"step_size": 7, "gamma": 0.5}


def test_too_many_positional_arguments() -> None:
    d = only(run(program({"train": {"optimizer": "adam(0.1, [0.9, 0.99], 1e-8, 0, 5)"}})))
    assert d.rule == "KYN-S14" and "at most 4 positional arguments" in d.message


def test_argument_given_positionally_and_by_keyword() -> None:
    text = program({"train": {"optimizer": "adam(0.01, lr=0.1)"}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S03", where(text, "lr=0.1"))


def _arg_cases() -> list[tuple[str, str, str, str]]:
    """(call, arg, value, rule): a wrong-type value per argument, and range edges."""
    wrong = {"int": "1.5", "float": "true", "bool": "1", "string": "3",
             "floatpair": "0.9", "enum:anneal_strategy": "cosine"}
    cases = []
    for name, table in CALLS.items():
        if name == "csv":
            continue
        for arg, k in table.items():
            rule = "KYN-S05" if k.type.startswith("enum:") else "KYN-S04"
            cases.append((name, arg, wrong[k.type], rule))
            if k.type in ("int", "float"):
                fmt = (lambda x: str(int(x))) if k.type == "int" else (
                    lambda x: repr(float(x)))
                step = 1 if k.type == "int" else 0.5
                if k.lo is not None:
                    cases.append((name, arg, fmt(k.lo), "KYN-S06" if k.lo_open else ""))
                    cases.append((name, arg, fmt(k.lo - step), "KYN-S06"))
                if k.hi is not None:
                    cases.append((name, arg, fmt(k.hi), "KYN-S06" if k.hi_open else ""))
                    cases.append((name, arg, fmt(k.hi + step), "KYN-S06"))
    return cases


@pytest.mark.parametrize(("name", "arg", "value", "rule"), _arg_cases())
def test_call_argument_types_and_ranges(name: str, arg: str, value: str, rule: str) -> None:
    req = _required_args(name)
    others = [x for x in req.split(", ") if x and not x.startswith(f"{arg}=")]
    text = _call_program(name, ", ".join([*others, f"{arg}={value}"]))
    a = run(text)
    if not rule:
        assert a.diagnostics == []
        return
    d = only(a)
    assert d.rule == rule, str(d)
    line, col = where(text, f"{arg}={value}")
    assert d.line == line and d.col >= col
    assert f"{name}() argument '{arg}'" in d.message


@pytest.mark.parametrize(("betas", "ok"), [("[0.9, 0.999]", True), ("[0, 0]", True),
                                           ("[0.9, 1.0]", False), ("[-0.1, 0.9]", False),
                                           ("[0.9]", False), ("[0.9, 0.9, 0.9]", False)])
def test_adam_betas(betas: str, ok: bool) -> None:
    a = run(program({"train": {"optimizer": f"adamw(betas={betas})"}}))
    assert (a.diagnostics == []) == ok, a.diagnostics
    if ok:
        assert a.module is not None
        assert a.module.train.optimizer.args["betas"] == tuple(
            float(x) for x in betas.strip("[]").split(", "))


def test_early_stop_and_checkpoint_values() -> None:
    text = program({"train": {"early_stop": "early_stop(patience=0)",
                              "checkpoint": "checkpoint(every_n=0)"}})
    a = run(text)
    assert found(a) == [("KYN-S06", *where(text, "0)")), ("KYN-S06", *where(text, "0)", 1))]
    assert a.diagnostics[0].message == \
        "early_stop() argument 'patience' must be >= 1, found 0"
    d = only(run(program({"train": {"early_stop": "patience(5)"}})))
    assert d.rule == "KYN-S05"
    d = only(run(program({"train": {"early_stop": "5"}})))
    assert d.rule == "KYN-S04" and "found the integer 5" in d.message


# -- model structure (KYN-S09) and layer values ------------------------------------------
@pytest.mark.parametrize(("layers", "at", "fragment"), [
    (["dense 4 relu", "input 4", "dense 1"], "dense 4 relu",
     "must start with exactly one input layer, found 'dense' first"),
    (["input 4", "dense 8", "input 8", "dense 1"], "input 8", "found 2 input layers"),
    (["dropout 0.1", "dense 1"], "dropout 0.1", "found 0 input layers"),
    (["batchnorm", "input 4", "dense 1"], "batchnorm", "'batchnorm' first"),
])
def test_input_must_come_first_exactly_once(layers: list[str], at: str, fragment: str
                                            ) -> None:
    text = program(layers=layers)
    a = run(text)
    assert found(a) == [("KYN-S09", *layer_at(text, at))]
    assert fragment in a.diagnostics[0].message
    assert a.diagnostics[0].message.startswith("model 'M' ")


def test_model_needs_a_dense_layer() -> None:
    text = program(layers=["input 4", "dropout 0.5"])
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S09", where(text, "M:"))
    assert "needs at least one dense layer" in d.message


def test_model_with_no_layers() -> None:
    text = program(layers=[]).replace("model M:\n    input 4\n    dense 8 relu\n    dense 1\n",
                                      "model M:\n")
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S09", where(text, "M:"))
    assert "has no layers" in d.message


@pytest.mark.parametrize(("layer", "operand", "rule", "message"), [
    ("input 0", "0", "KYN-S06", "input size must be >= 1, found 0"),
    ("input 4.0", "4.0", "KYN-S04", "input size must be an integer, found the number 4.0"),
    ("dense -1 relu", "-1", "KYN-S06", "dense units must be >= 1, found -1"),
    ("dense 2.5", "2.5", "KYN-S04", "dense units must be an integer, found the number 2.5"),
    ("dense relu", "relu", "KYN-S04", "dense units must be an integer, found the name 'relu'"),
    ("dense 8 8", "8", "KYN-S04", "activation must be a name, found the integer 8"),
    ("dropout 1.0", "1.0", "KYN-S06", "dropout rate must be in [0, 1), found 1"),
    ("dropout -0.1", "-0.1", "KYN-S06", "dropout rate must be in [0, 1), found -0.1"),
    ("dropout high", "high", "KYN-S04", "dropout rate must be a number, found the name 'high'"),
    ("batchnorm 0", "0", "KYN-S06", "batchnorm size must be >= 1, found 0"),
])
def test_layer_operands(layer: str, operand: str, rule: str, message: str) -> None:
    text = program(layers=["input 4", "dense 8 relu", layer, "dense 1"]
                   if not layer.startswith("input") else [layer, "dense 8 relu", "dense 1"])
    d = only(run(text))
    line, col = where(text, f"    {layer}\n")
    assert (d.rule, d.line, d.col) == (rule, line, col + 4 + layer.rindex(operand))
    assert d.message == message


def test_dropout_zero_is_allowed() -> None:
    assert run(program(layers=["input 4", "dense 8 relu", "dropout 0", "dense 1"])
               ).diagnostics == []


@pytest.mark.parametrize("act", ACTIVATIONS)
def test_every_activation_is_accepted(act: str) -> None:
    assert run(program(layers=["input 4", f"dense 8 {act}", "dense 1"])).diagnostics == []


def test_unknown_activation_documented_message() -> None:
    text = program(layers=["input 4", "dense 8 elu", "dense 1"])
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S05", where(text, "elu"))
    # KynML's documented text: bad.kyn:8: Unsupported activation 'elu' in model 'Net'
    assert d.message.startswith("Unsupported activation 'elu' in model 'M'")


def test_activation_suggestion() -> None:
    d = only(run(program(layers=["input 4", "dense 8 rleu", "dense 1"])))
    assert d.message.startswith("Unsupported activation 'rleu' in model 'M'")
    assert d.message.endswith("did you mean 'relu'?")


def test_activation_messages_name_their_own_model() -> None:
    text = program(layers=["input 4", "dense 8 elu", "dense 1"]) + \
        "\nmodel Other:\n    input 2\n    dense 3 swish\n"
    a = run(text)
    assert [d.message.split(";")[0] for d in a.diagnostics] == [
        "Unsupported activation 'elu' in model 'M'",
        "Unsupported activation 'swish' in model 'Other'"]


# -- cross references (KYN-S07) ----------------------------------------------------------
@pytest.mark.parametrize(("key", "value", "what", "hint"), [
    ("model", "Mm", "model", "M"), ("model", "Net", "model", None),
    ("data", "DD", "dataset", "D"), ("data", "Houses", "dataset", None)])
def test_train_references_unknown_block(key: str, value: str, what: str,
                                        hint: str | None) -> None:
    text = program({"train": {key: value}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S07", where(text, f"{key} = {value}"))
    assert d.message.startswith(f"train references unknown {what} '{value}'; defined: ")
    assert ("did you mean" in d.message) == (hint is not None)


# -- metrics versus the loss (KYN-S15) ---------------------------------------------------
@pytest.mark.parametrize(("loss", "last", "metrics", "bad"), [
    ("mse", "dense 1", "[mae, mse, rmse]", []),
    ("mse", "dense 1", "[mae, accuracy]", ["accuracy"]),
    ("huber", "dense 1", "[accuracy]", ["accuracy"]),
    ("cross_entropy", "dense 3", "[accuracy]", []),
    ("cross_entropy", "dense 3", "[mae, accuracy, rmse]", ["mae", "rmse"]),
    ("nll", "dense 3 log_softmax", "[mse]", ["mse"]),
    ("bce", "dense 1 sigmoid", "[accuracy, mae, mse, rmse]", []),
])
def test_metric_applies_to_the_loss(loss: str, last: str, metrics: str, bad: list[str]
                                    ) -> None:
    text = program({"train": {"loss": loss}, "evaluate": {"metrics": metrics}},
                   ["input 4", last])
    a = run(text)
    assert [d.rule for d in a.diagnostics] == ["KYN-S15"] * len(bad)
    for d, metric in zip(a.diagnostics, bad, strict=True):
        assert (d.kind, (d.line, d.col)) == ("semantic", where(text, "metrics ="))
        assert d.message.startswith(f"[evaluate]: metric '{metric}' does not apply to loss "
                                    f"'{loss}'")


# -- export (KYN-S13 for onnx, KYN-H05) --------------------------------------------------
def test_onnx_needs_input_shape() -> None:
    text = program({"export": {"format": "onnx"}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S13", where(text, "format = onnx"))
    assert d.message.startswith("onnx export requires input_shape")


@pytest.mark.parametrize("fmt", ["torch", "torchscript", "npz"])
def test_other_formats_need_no_input_shape(fmt: str) -> None:
    assert run(program({"export": {"format": fmt}})).diagnostics == []


@pytest.mark.parametrize(("shape", "ok"), [("[1, 4]", True), ("[32, 4]", True),
                                           ("[1, 5]", False), ("[4]", False),
                                           ("[1, 4, 1]", False)])
def test_export_input_shape_matches_the_model(shape: str, ok: bool) -> None:
    text = program({"export": {"format": "onnx", "input_shape": shape}})
    a = run(text)
    if ok:
        assert a.diagnostics == []
        assert a.module is not None and a.module.export is not None
        assert a.module.export.input_shape == tuple(int(x) for x in shape.strip("[]")
                                                    .split(", "))
    else:
        d = only(a)
        assert (d.rule, d.kind, (d.line, d.col)) == ("KYN-H05", "shape",
                                                     where(text, "input_shape"))
        assert f"input_shape expects [batch, 4] for model 'M', found {shape}" in d.message


# -- losses versus outputs (KYN-H04) and warnings (W01, W02) -----------------------------
@pytest.mark.parametrize(("loss", "last", "rule"), [
    ("bce", "dense 1 sigmoid", None),
    ("bce", "dense 1 linear", None),
    ("bce", "dense 1", None),
    ("bce", "dense 3 linear", "KYN-H04"),
    ("bce", "dense 1 relu", "KYN-H04"),
    ("bce", "dense 1 softmax", "KYN-H04"),
    ("cross_entropy", "dense 3 linear", None),
    ("cross_entropy", "dense 2", None),
    ("cross_entropy", "dense 1 linear", "KYN-H04"),
    ("cross_entropy", "dense 3 softmax", "KYN-W01"),
    ("cross_entropy", "dense 3 log_softmax", "KYN-W01"),
    ("cross_entropy", "dense 3 relu", None),
    ("nll", "dense 3 log_softmax", None),
    ("nll", "dense 1 log_softmax", "KYN-H04"),
    ("nll", "dense 3 linear", "KYN-W02"),
    ("nll", "dense 3 softmax", "KYN-W02"),
    ("mse", "dense 1", None),
    ("mse", "dense 2", "KYN-H04"),
    ("huber", "dense 4 relu", "KYN-H04"),
    ("l1", "dense 1 relu", None),
    ("mae", "dense 3", "KYN-H04"),
])
def test_loss_against_the_final_layer(loss: str, last: str, rule: str | None) -> None:
    text = program({"train": {"loss": loss}}, ["input 4", "dense 8 relu", last])
    a = run(text)
    if rule is None:
        assert a.diagnostics == []
        assert a.module is not None
        return
    d = only(a)
    assert d.rule == rule
    if rule == "KYN-H04":
        assert (d.kind, (d.line, d.col)) == ("shape", where(text, f"loss = {loss}"))
        assert a.module is None
    else:
        # the warning points at the final layer and never blocks
        assert (d.kind, d.severity, (d.line, d.col)) == ("warn", "warning",
                                                         where(text, last))
        assert str(d).startswith(f"t.kyn:{d.line}:{d.col}: warning: ")
        assert a.module is not None and a.module.warnings == (str(d),)
        assert a.errors == [] and a.warnings == [d]


def test_bce_documented_message() -> None:
    text = program({"train": {"loss": "bce"}}, ["input 4", "dense 3 linear"])
    assert "loss 'bce' expects a final dense layer with 1 output unit (got 3)" in \
        only(run(text)).message


def test_cross_entropy_needs_two_units_message() -> None:
    text = program({"train": {"loss": "cross_entropy"}}, ["input 4", "dense 1"])
    assert ("loss 'cross_entropy' expects a final dense layer with at least 2 output units "
            "(got 1)") in only(run(text)).message


def test_softmax_warning_message() -> None:
    text = program({"train": {"loss": "cross_entropy"}}, ["input 4", "dense 3 softmax"])
    d = only(run(text))
    assert d.rule == "KYN-W01"
    assert "softmax" in d.message and "cross_entropy" in d.message


def test_softmax_warning_points_at_the_softmax_layer() -> None:
    text = program({"train": {"loss": "cross_entropy"}},
                   ["input 4", "dense 3 softmax", "dropout 0.1"])
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-W01", where(text, "dense 3 softmax"))


def test_only_the_trained_model_is_checked_against_the_loss() -> None:
    text = program() + "\nmodel Other:\n    input 4\n    dense 3 softmax\n"
    assert run(text).diagnostics == []


# -- shape inference ---------------------------------------------------------------------
def test_batchnorm_size_mismatch() -> None:
    text = program(layers=["input 4", "dense 64 relu", "batchnorm 32", "dense 1"])
    d = only(run(text))
    assert (d.rule, d.kind, (d.line, d.col)) == ("KYN-H03", "shape",
                                                 where(text, "batchnorm 32"))
    assert "batchnorm size 32 does not match incoming feature dim 64" in d.message
    assert d.message.startswith("[model M]: ")


def test_batchnorm_size_matching_is_fine() -> None:
    a = run(program(layers=["input 4", "batchnorm 4", "dense 64 relu", "batchnorm 64",
                            "dense 1"]))
    assert a.diagnostics == []


def test_shape_errors_in_every_model_are_reported() -> None:
    text = program(layers=["input 4", "dense 8", "batchnorm 9", "dense 1"]) + \
        "\nmodel Other:\n    input 2\n    batchnorm 3\n    dense 1\n"
    a = run(text)
    assert found(a) == [("KYN-H03", *where(text, "batchnorm 9")),
                        ("KYN-H03", *where(text, "batchnorm 3"))]


def test_validate_alone_runs_no_shape_inference() -> None:
    text = program({"train": {"loss": "bce"}}, ["input 4", "dense 8", "batchnorm 9",
                                                "dense 3"])
    checked, diags = validate(parse_text(text, "t.kyn"))
    assert diags == []
    assert checked.train is not None and checked.train["loss"] == "bce"
    assert [k for k, _, _ in checked.models["M"]] == ["input", "dense", "batchnorm", "dense"]
    # analyze runs inference: H03 (a model whose shapes fail is not checked against the
    # loss, so no H04 on top)
    assert [d.rule for d in run(text).errors] == ["KYN-H03"]


def test_inferred_widths() -> None:
    text = program(layers=["input 10", "dense 64 relu", "batchnorm", "dropout 0.2",
                           "dense 32 gelu", "batchnorm 32", "dense 1"])
    a = run(text)
    assert a.diagnostics == [] and a.module is not None
    layers = a.module.model.layers
    assert [(x.kind, x.in_features, x.out_features) for x in layers] == [
        ("input", 10, 10), ("dense", 10, 64), ("batchnorm", 64, 64), ("dropout", 64, 64),
        ("dense", 64, 32), ("batchnorm", 32, 32), ("dense", 32, 1)]
    assert [x.activation for x in layers if x.kind == "dense"] == ["relu", "gelu", "linear"]
    assert layers[3].rate == 0.2
    assert (layers[2].eps, layers[2].momentum) == (1e-5, 0.1)
    m = a.module.model
    assert (m.input_size, m.output_units, m.final_activation) == (10, 1, "linear")


def test_layer_shapes() -> None:
    text = program(layers=["input 10", "dense 64 relu", "batchnorm", "dropout 0.25",
                           "dense 1"])
    a = run(text)
    ln = {s: where(text, f"    {s}\n")[0] for s in ("input 10", "dense 64 relu",
                                                      "batchnorm", "dropout 0.25",
                                                      "dense 1")}
    # the batch dimension is train.batch (4 in the base program)
    assert a.layer_shapes == {
        ln["input 10"]: "input 10: [4, 10] float32 (model M)",
        ln["dense 64 relu"]: "dense 64 relu: [4, 10] -> [4, 64] float32 (model M)",
        ln["batchnorm"]: "batchnorm: [4, 64] -> [4, 64] float32 (model M)",
        ln["dropout 0.25"]: "dropout 0.25: [4, 64] -> [4, 64] float32 (model M)",
        ln["dense 1"]: "dense 1 linear: [4, 64] -> [4, 1] float32 (model M)",
    }


def test_layer_shapes_without_a_valid_batch() -> None:
    a = run(program({"train": {"batch": "0"}}))
    assert a.layer_shapes and all("[batch, " in s for s in a.layer_shapes.values())


def test_layer_shapes_of_every_valid_model() -> None:
    text = program() + "\nmodel Other:\n    input 2\n    dense 3\n"
    a = run(text)
    assert len(a.layer_shapes) == 5
    assert a.layer_shapes[where(text, "dense 3")[0]].endswith("(model Other)")


# -- every error reported ----------------------------------------------------------------
def test_every_error_of_a_program_is_reported() -> None:
    text = program(
        {"dataset": {"split": "1.5", "shufle": "true"},
         "train": {"loss": "crossentropy", "epochs": "0", "device": "gpu",
                   "optimizer": "adam(lr=-1, beta=0.9)"},
         "evaluate": {"metrics": "[accuracy, f1]"},
         "export": {"format": "onnx", "path": "3"}},
        ["input 4", "dense 8 elu", "dropout 1.0", "dense 2.5"])
    a = run(text)
    assert found(a) == [
        ("KYN-S06", *where(text, "1.5")),
        ("KYN-S02", *where(text, "shufle")),
        ("KYN-S05", *where(text, "elu")),
        ("KYN-S06", *where(text, "1.0")),
        ("KYN-S04", *where(text, "2.5")),
        ("KYN-S05", *where(text, "crossentropy")),
        ("KYN-S06", *where(text, "-1")),
        ("KYN-S14", *where(text, "beta=0.9")),
        ("KYN-S06", *value_at(text, "epochs", "0")),
        ("KYN-S05", *where(text, "gpu")),
        ("KYN-S05", *where(text, "f1")),
        ("KYN-S13", *where(text, "format = onnx")),
        ("KYN-S04", *value_at(text, "path", "3")),
    ]
    for d in a.diagnostics:
        assert re.fullmatch(rf"t\.kyn:{d.line}:{d.col}: error: [^\n]+ \[{d.rule}\]", str(d))
    assert a.module is None


def test_semantic_and_shape_errors_together() -> None:
    text = program({"dataset": {"normalize": "yes"}},
                   ["input 4", "dense 16 relu", "batchnorm 8", "dense 1"])
    a = run(text)
    assert [d.rule for d in a.diagnostics] == ["KYN-S04", "KYN-H03"]


def test_loss_check_runs_despite_an_unrelated_bad_train_key() -> None:
    text = program({"train": {"loss": "bce", "optimizer": "adamm(lr=0.1)"}},
                   ["input 4", "dense 3"])
    assert sorted(d.rule for d in run(text).diagnostics) == ["KYN-H04", "KYN-S05"]


def test_errors_are_raised_with_the_class_of_the_earliest_stage(tmp_path: Any) -> None:
    from frame_mlir.frontends.kyn.pipeline import load_module

    p = tmp_path / "x.kyn"
    p.write_text(program({"train": {"loss": "bce"}}, ["input 4", "dense 3"]))
    with pytest.raises(KynShapeError):
        load_module(p)
    p.write_text(program({"train": {"loss": "bce", "epochs": "0"}}, ["input 4", "dense 3"]))
    with pytest.raises(KynSemanticError) as info:
        load_module(p)
    assert type(info.value) is KynSemanticError


# -- the resolved module's defaults (docs/kyn.md tables) ---------------------------------
def test_module_defaults() -> None:
    a = run(program())
    assert a.module is not None
    m = a.module
    ds = m.dataset
    assert (ds.name, ds.path, ds.target) == ("D", "d.csv", "y")
    assert (ds.split, ds.normalize, ds.shuffle, ds.num_workers, ds.pin_memory,
            ds.prefetch) == (0.8, False, True, 0, False, None)
    t = m.train
    assert (t.model, t.data, t.loss, t.epochs, t.batch) == ("M", "D", "mse", 2, 4)
    assert (t.device, t.precision, t.compile, t.deterministic, t.seed) == (
        "auto", "fp32", False, False, None)
    assert t.scheduler is None and t.early_stop is None and t.checkpoint is None
    assert m.evaluate is not None and m.evaluate.metrics == ("mae",)
    assert m.export is not None
    assert (m.export.format, m.export.path, m.export.input_shape, m.export.opset) == (
        "torch", "m.pt", None, 17)
    assert m.task == "regression" and m.params == {} and m.warnings == ()
    assert m.source_path == "t.kyn" and m.source_text == program()


def test_defaults_in_vocab_match_docs() -> None:
    ds = {k: v.default for k, v in KEYS["dataset"].items() if v.default is not REQUIRED}
    assert ds == {"split": 0.8, "normalize": False, "shuffle": True, "num_workers": 0,
                  "pin_memory": False, "prefetch": None}
    tr = {k: v.default for k, v in KEYS["train"].items() if v.default is not REQUIRED}
    assert tr == {"device": "auto", "scheduler": None, "early_stop": None,
                  "checkpoint": None, "precision": "fp32", "compile": False, "seed": None,
                  "deterministic": False}
    assert set(OPTIMIZERS) == {"adam", "sgd", "adamw", "rmsprop"}
    assert set(SCHEDULERS) == {"step", "cosine", "onecycle"}


def test_explicit_values_reach_the_module() -> None:
    a = run(program({
        "dataset": {"split": "0.7", "normalize": "true", "shuffle": "false",
                    "num_workers": "2", "pin_memory": "true", "prefetch": "4"},
        "train": {"device": "cpu", "precision": "bf16", "compile": "true", "seed": "7",
                  "deterministic": "true", "early_stop": "early_stop(patience=8)",
                  "checkpoint": "checkpoint(every_n=10)"},
        "evaluate": {"metrics": "[mae, rmse]"},
        "export": {"format": "onnx", "input_shape": "[1, 4]", "opset": "13"}}))
    assert a.diagnostics == [] and a.module is not None
    m = a.module
    ds = m.dataset
    assert (ds.split, ds.normalize, ds.shuffle, ds.num_workers, ds.pin_memory,
            ds.prefetch) == (0.7, True, False, 2, True, 4)
    t = m.train
    assert (t.device, t.precision, t.compile, t.seed, t.deterministic) == (
        "cpu", "bf16", True, 7, True)
    assert (t.early_stop, t.early_stop_min_delta) == (8, 0.0)
    assert (t.checkpoint, t.checkpoint_dir) == (10, "checkpoints")
    assert m.evaluate is not None and m.evaluate.metrics == ("mae", "rmse")
    assert m.export is not None and (m.export.input_shape, m.export.opset) == ((1, 4), 13)


@pytest.mark.parametrize(("name", "defaults"), [
    ("sgd", {"lr": 0.001, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
             "nesterov": False}),
    ("adam", {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}),
    ("adamw", {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}),
    ("rmsprop", {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
                 "momentum": 0.0, "centered": False}),
])
def test_optimizer_defaults(name: str, defaults: dict[str, Any]) -> None:
    for spelling in (name, f"{name}()"):  # a bare name is the call with no arguments
        a = run(program({"train": {"optimizer": spelling}}))
        assert a.diagnostics == [] and a.module is not None
        assert a.module.train.optimizer.name == name
        assert a.module.train.optimizer.args == defaults


def test_optimizer_float_arguments_are_floats() -> None:
    a = run(program({"train": {"optimizer": "sgd(lr=1, momentum=0, nesterov=true)"}}))
    assert a.module is not None
    args = a.module.train.optimizer.args
    assert type(args["lr"]) is float and type(args["momentum"]) is float
    assert args["nesterov"] is True


@pytest.mark.parametrize(("call", "args"), [
    ("step(step_size=30)", {"step_size": 30, "gamma": 0.1}),
    ("cosine()", {"T_max": 2, "eta_min": 0.0}),  # T_max defaults to epochs
    ("cosine(T_max=60)", {"T_max": 60, "eta_min": 0.0}),
    ("onecycle(max_lr=0.01)", {"max_lr": 0.01, "pct_start": 0.3, "div_factor": 25.0,
                               "final_div_factor": 1e4, "anneal_strategy": "cos",
                               "cycle_momentum": True, "base_momentum": 0.85,
                               "max_momentum": 0.95, "three_phase": False}),
])
def test_scheduler_defaults(call: str, args: dict[str, Any]) -> None:
    a = run(program({"train": {"scheduler": call}}))
    assert a.diagnostics == [] and a.module is not None
    assert a.module.train.scheduler is not None
    assert a.module.train.scheduler.name == call.split("(")[0]
    assert a.module.train.scheduler.args == args


def test_early_stop_and_checkpoint_defaults() -> None:
    a = run(program({"train": {"early_stop": "early_stop()",
                               "checkpoint": "checkpoint(dir=\"ck\")"}}))
    assert a.module is not None
    t = a.module.train
    assert (t.early_stop, t.early_stop_min_delta, t.checkpoint, t.checkpoint_dir) == (
        5, 0.0, 1, "ck")


def test_task_follows_the_loss() -> None:
    a = run(program({"train": {"loss": "cross_entropy"}}, ["input 4", "dense 3"]))
    assert a.module is not None and a.module.task == "classification"
    a = run(program({"train": {"loss": "bce"}}, ["input 4", "dense 1 sigmoid"]))
    assert a.module is not None and a.module.task == "binary"
