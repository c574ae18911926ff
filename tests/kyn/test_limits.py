"""Issue 30: what `frame-kyn validate` accepts must train -- the limits checked at
validate time (seed range, the epochs and steps maxima, float32 numbers, batchnorm's
one-row batches), the same checks at run time where only the data knows (the rule and
the program's line), the divergence warning of `frame-kyn train`, and inputs that are
not regular files (a device, FIFO or directory named by `csv(...)`, the program, an
import, `--resume`, a lock)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from frame_mlir.kyn.cli import main
from frame_mlir.kyn.pipeline import analyze
from frame_mlir.kyn.vocab import MAX_EPOCHS, MAX_STEPS
from tests.kyn.test_validate import only, program, run, value_at, where

ROOT = Path(__file__).resolve().parents[2]
IRIS = ROOT / "testdata" / "kyn" / "data" / "iris.csv"


# -- seed, epochs, numbers (defects 5, 7 and 8) ------------------------------------------
@pytest.mark.parametrize(("value", "ok"), [("4294967295", True), ("4294967296", False),
                                           ("-1", False)])
def test_seed_range(value: str, ok: bool) -> None:
    text = program({"train": {"seed": value}})
    a = run(text)
    if ok:
        assert a.diagnostics == []
        return
    d = only(a)
    assert (d.rule, (d.line, d.col)) == ("KYN-S06", value_at(text, "seed", value))
    assert d.message == f"seed must be in [0, 4294967295], found {value}"


@pytest.mark.parametrize(("value", "ok"), [(str(MAX_EPOCHS), True),
                                           (str(MAX_EPOCHS + 1), False),
                                           ("1099511627776", False)])
def test_epochs_maximum(value: str, ok: bool) -> None:
    text = program({"train": {"epochs": value}})
    a = run(text)
    if ok:
        assert a.diagnostics == []
        return
    d = only(a)
    assert (d.rule, (d.line, d.col)) == ("KYN-S06", value_at(text, "epochs", value))
    assert d.message == f"epochs must be in [1, {MAX_EPOCHS}], found {value}"


BIG = "1" * 400  # an integer beyond any float


@pytest.mark.parametrize(("call", "value", "why"), [
    ("sgd(lr={})", "1e400", "infinite"),
    ("sgd(lr={})", "3.5e38", "beyond float32"),
    ("sgd(lr={})", "1e-60", "0 in float32"),
    ("sgd(lr={})", BIG, "beyond float32"),
    ("adam(eps={})", "1e-50", "0 in float32"),
    ("adam(betas=[0.9, {}])", "1e-300", "0 in float32"),
    ("onecycle(max_lr={})", "1e39", "beyond float32"),
])
def test_float_numbers_must_be_float32(call: str, value: str, why: str) -> None:
    key = "scheduler" if call.startswith("onecycle") else "optimizer"
    text = program({"train": {key: call.format(value)}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S06", where(text, value))
    assert "finite and representable in float32" in d.message and why in d.message
    assert d.message.endswith(f"found {value if value != BIG else '1.11111e+399'}")


@pytest.mark.parametrize("value", ["3.4e38", "1e-44", "0", "0.0"])
def test_float32_edges_are_accepted(value: str) -> None:
    assert run(program({"train": {"optimizer": f"sgd(lr={value})"}})).diagnostics == []


def test_huge_integers_are_range_errors_not_crashes() -> None:
    text = program({"train": {"batch": f"-{BIG}"}})
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-S06", value_at(text, "batch", f"-{BIG}"))
    assert d.message == "batch must be >= 1, found -1.11111e+399"
    text = program({"train": {"epochs": "9" * 5000}})
    d = only(run(text))
    assert (d.rule, d.line) == ("KYN-P02", where(text, "epochs")[0])
    assert "5000 digits" in d.message


def test_param_overrides_are_checked_too() -> None:
    text = program({"train": {"optimizer": "sgd(lr=$lr)"}}, extra="\nparams:\n    lr = 0.1\n")
    assert run(text).diagnostics == []
    d = only(run(text, {"lr": float("inf")}))
    assert d.rule == "KYN-S06" and "float32" in d.message


# -- batchnorm on one-row batches (defect 6) ------------------------------------------------
BN = ["input 4", "dense 8 relu", "batchnorm", "dense 1"]


def test_batchnorm_with_batch_one_is_refused() -> None:
    text = program({"train": {"batch": "1"}}, BN)
    d = only(run(text))
    assert (d.rule, (d.line, d.col)) == ("KYN-H06", where(text, "batch = 1"))
    assert d.message == (f"[train]: batch = 1 gives batches of one row, but the batchnorm "
                         f"layer of model 'M' (line {where(text, 'batchnorm')[0]}) needs "
                         "more than one row per batch in training; use batch >= 2")
    assert run(program({"train": {"batch": "2"}}, BN)).diagnostics == []
    assert run(program({"train": {"batch": "1"}})).diagnostics == []  # no batchnorm
