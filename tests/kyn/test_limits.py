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

from frame_mlir.frontends.kyn.pipeline import analyze
from frame_mlir.frontends.kyn.vocab import MAX_EPOCHS, MAX_STEPS
from frame_mlir.tools.frame_kyn import main
from tests.kyn.test_validate import only, program, run, value_at, where

ROOT = Path(__file__).resolve().parents[2]
IRIS = ROOT / "testdata" / "kyn" / "data" / "iris.csv"


# -- seed, epochs, numbers (defects 5, 7 and 8) ------------------------------------------
@pytest.mark.parametrize(("value", "ok"), [("4294967295", True), ("4294967296", False),
                                           ("-1", False)])
def test_seed_range(value: str, ok: bool) -> None:
    _check_train_value("seed", value, ok, f"seed must be in [0, 4294967295], found {value}")


@pytest.mark.parametrize(("value", "ok"), [(str(MAX_EPOCHS), True),
                                           (str(MAX_EPOCHS + 1), False),
                                           ("1099511627776", False)])
def test_epochs_maximum(value: str, ok: bool) -> None:
    _check_train_value("epochs", value, ok,
                       f"epochs must be in [1, {MAX_EPOCHS}], found {value}")


def _check_train_value(key: str, value: str, ok: bool, message: str) -> None:
    """`train { key = value }`: accepted, or one KYN-S06 at the value with `message`."""
    text = program({"train": {key: value}})
    a = run(text)
    if ok:
        assert a.diagnostics == []
        return
    d = only(a)
    assert (d.rule, (d.line, d.col)) == ("KYN-S06", value_at(text, key, value))
    assert d.message == message


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


# -- checks that need the row count (defect 6, steps maximum) ------------------------------
IRIS_BN = """\
dataset Iris:
    source = csv("data/iris.csv")
    target = "species"
    split = 0.7

model Net:
    input 4
    dense 8 relu
    batchnorm
    dense 3 linear

train:
    model = Net
    data = Iris
    loss = cross_entropy
    optimizer = sgd(lr=0.1)
    epochs = 1
    batch = 8
    seed = 1
"""  # 150 rows, 105 train: 13 batches of 8 and a last one of 1 row


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    shutil.copy(IRIS, tmp_path / "data" / "iris.csv")
    return tmp_path


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_last_batch_of_one_row_is_refused_by_validate(project: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    prog = project / "bn.kyn"
    prog.write_text(IRIS_BN)
    code, out, err = cli(["validate", str(prog)], capsys)
    line = IRIS_BN[:IRIS_BN.index("batch = 8")].count("\n") + 1
    assert code == 1 and out == ""
    assert err.startswith(f"{prog}:{line}:5: error: [train]: the training split of dataset "
                          "'Iris' has 105 rows (split 0.7 of 150), so batch = 8 leaves a "
                          "last batch of one row in every epoch, but the batchnorm layer of "
                          "model 'Net' (line 9) needs more than one row per batch in "
                          "training; ")
    assert err.rstrip().endswith("[KYN-H06]")
    prog.write_text(IRIS_BN.replace("batch = 8", "batch = 7"))  # 105 = 15 x 7
    assert cli(["validate", str(prog)], capsys)[0] == 0


def test_last_batch_of_one_row_at_run_time_names_rule_and_line(project: Path) -> None:
    """A data file that changed after validation: train still stops before compiling,
    with the rule and the program's line (not the batch_norm verifier's message)."""
    from frame_mlir.frontends.kyn.errors import KynError
    from frame_mlir.frontends.kyn.pipeline import load_module
    from frame_mlir.frontends.kyn.run import run_module

    prog = project / "bn.kyn"
    prog.write_text(IRIS_BN.replace("batch = 8", "batch = 7"))
    module, _ = load_module(prog)
    rows = (project / "data" / "iris.csv").read_text().splitlines()
    (project / "data" / "iris.csv").write_text("\n".join(rows[:-8]) + "\n")  # 142 rows
    with pytest.raises(KynError) as info:  # 99 training rows = 14 x 7 + 1
        run_module(module, project / "out", quiet=True)
    (d,) = info.value.diagnostics
    line = IRIS_BN[:IRIS_BN.index("batch = 8")].count("\n") + 1
    assert (d.rule, d.file, d.line) == ("KYN-H06", str(prog), line)
    assert "has 99 rows (split 0.7 of 142), so batch = 7 leaves a last batch of one row" \
        in d.message


def test_steps_maximum_needs_the_row_count(project: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    prog = project / "long.kyn"
    prog.write_text(IRIS_BN.replace("    batchnorm\n", "")
                    .replace("epochs = 1", f"epochs = {MAX_EPOCHS}")
                    .replace("batch = 8", "batch = 1")
                    .replace("data/iris.csv", "data/big.csv"))
    rows = (project / "data" / "iris.csv").read_text().splitlines()
    (project / "data" / "big.csv").write_text("\n".join(rows + rows[1:] * 20) + "\n")
    n = 150 * 21
    code, _, err = cli(["validate", str(prog)], capsys)
    line = IRIS_BN[:IRIS_BN.index("epochs")].count("\n")  # one line less: no batchnorm
    assert code == 1
    assert err.startswith(f"{prog}:{line}:5: error: [train]: epochs = {MAX_EPOCHS} of "
                          f"{int(n * 0.7)} batches each (batch = 1, the training split of "
                          f"dataset 'Iris') is {MAX_EPOCHS * int(n * 0.7)} steps; at most "
                          f"{MAX_STEPS} steps")
    assert err.rstrip().endswith("[KYN-S06]")


# -- divergence (defect 8) ------------------------------------------------------------------
def test_divergence_is_warned(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = project / "nan.kyn"
    prog.write_text(IRIS_BN.replace("    batchnorm\n", "").replace("lr=0.1", "lr=1e30")
                    .replace("epochs = 1", "epochs = 2") + "\nevaluate:\n    metrics = "
                    "[accuracy]\n")
    code, out, err = cli(["train", str(prog), "--out-dir", str(project / "o")], capsys)
    assert code == 0 and "epoch 1 loss nan" in out
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("frame-kyn: warning: training diverged: the loss first "
                                  "became ")
    assert " at epoch 1, step " in warnings[0]
    assert warnings[0].endswith("(lr 1e+30 may be too large)")


def test_a_finite_run_has_no_warning(project: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    prog = project / "ok.kyn"
    prog.write_text(IRIS_BN.replace("batch = 8", "batch = 7"))
    code, _, err = cli(["train", str(prog), "--out-dir", str(project / "o")], capsys)
    assert code == 0 and "warning" not in err


def test_seed_option_range(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = project / "ok.kyn"
    prog.write_text(IRIS_BN.replace("batch = 8", "batch = 7"))
    code, _, err = cli(["train", str(prog), "--seed", "4294967296"], capsys)
    assert code == 2 and "--seed: expected an integer in [0, 4294967295], found " \
        "4294967296" in err


# -- inputs that are not regular files (defect 9) -------------------------------------------
def _fifo(tmp_path: Path, name: str = "pipe") -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _cli_subprocess(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """In a process of its own: a reader that blocks on a FIFO must not hang the tests."""
    return subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_kyn", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "{tmp}", "{fifo}"])
def test_csv_source_must_be_a_regular_file(tmp_path: Path, path: str) -> None:
    fifo = _fifo(tmp_path)
    path = path.format(tmp=tmp_path, fifo=fifo)
    found = {"/dev/zero": "a character device", "/dev/null": "a character device",
             str(tmp_path): "a directory", str(fifo): "a FIFO"}[path]
    text = program({"dataset": {"source": f'csv("{path}")'}})
    a = analyze(text, str(tmp_path / "t.kyn"))
    d = only(a)
    assert (d.rule, (d.line, d.col)) == ("IO-001", where(text, f'"{path}"'))
    assert d.message == f"dataset 'D': {path}: expected a regular file, found {found}"


def test_train_refuses_a_fifo_data_file_at_run_time(project: Path) -> None:
    """The file became a FIFO after validation: IO-001 before anything reads it."""
    prog = project / "p.kyn"
    prog.write_text(IRIS_BN.replace("batch = 8", "batch = 7"))
    (project / "data" / "iris.csv").unlink()
    _fifo(project / "data", "iris.csv")
    r = _cli_subprocess(["train", "p.kyn", "--out-dir", "o"], project)
    assert r.returncode == 1, r.stderr
    assert "expected a regular file, found a FIFO" in r.stderr and "[IO-001]" in r.stderr


def test_program_import_and_lock_must_be_regular_files(project: Path) -> None:
    _fifo(project, "prog.kyn")
    r = _cli_subprocess(["validate", "prog.kyn"], project)
    assert r.returncode == 1
    assert r.stderr.strip() == ("prog.kyn: error: cannot read the file: expected a regular "
                                "file, found a FIFO [KYN-P00]")
    _fifo(project, "lib.kyn")
    (project / "main.kyn").write_text('import "lib.kyn"\n' + IRIS_BN.replace("batch = 8",
                                                                              "batch = 7"))
    r = _cli_subprocess(["validate", "main.kyn"], project)
    assert r.returncode == 1 and "expected a regular file, found a FIFO" in r.stderr
    assert "[KYN-S12]" in r.stderr
    (project / "ok.kyn").write_text(IRIS_BN.replace("batch = 8", "batch = 7"))
    _fifo(project, "kynml.lock")
    r = _cli_subprocess(["lock", "check", "ok.kyn"], project)
    assert r.returncode == 1 and "expected a regular file, found a FIFO" in r.stderr
    assert "[KYN-L02]" in r.stderr


def test_resume_must_be_a_regular_file(project: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    prog = project / "p.kyn"
    prog.write_text(IRIS_BN.replace("batch = 8", "batch = 7"))
    code, _, err = cli(["train", str(prog), "--resume", "/dev/null"], capsys)
    assert code == 1
    assert "CKPT-001 at /dev/null: expected a regular file, found a character device" in err


def test_onecycle_with_an_empty_warm_up_is_refused(project: Path,
                                                   capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    """105 training rows in batches of 7: 15 steps; pct_start 1/15 leaves no warm-up
    step (PyTorch divides by zero): KYN-S06 at the scheduler, not a bare ValueError."""
    prog = project / "oc.kyn"
    prog.write_text(IRIS_BN.replace("batch = 8", "batch = 7\n    scheduler = onecycle("
                                    f"max_lr=0.1, pct_start={1 / 15!r})"))
    code, _, err = cli(["validate", str(prog)], capsys)
    assert code == 1 and "[KYN-S06]" in err and "empty warm-up phase" in err
    line = IRIS_BN[:IRIS_BN.index("batch = 8")].count("\n") + 2
    assert err.startswith(f"{prog}:{line}:5: error: [train]: onecycle(pct_start=0.0666667) "
                          "over 15 steps")
    code, _, err = cli(["train", str(prog), "--out-dir", str(project / "o")], capsys)
    assert code == 1 and "[KYN-S06]" in err and "empty warm-up phase" in err
