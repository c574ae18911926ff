"""frame-kyn end to end: exit codes, messages, manifests, locks, sweeps, IR dumps.

Every command runs in-process through `main(argv)` (the same code path as the console
script) except one subprocess check of the installed entry point."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from frame_mlir.tools.frame_kyn import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "kyn"

SMALL = """\
dataset Iris:
    source = csv("data/iris.csv")
    target = "species"
    split = 0.7
    normalize = true

model Net:
    input 4
    dense $width relu
    dense 3 linear

params:
    width = 8

train:
    model = Net
    data = Iris
    loss = cross_entropy
    optimizer = adam(lr=$lr)
    epochs = 3
    batch = 32
    seed = 1

evaluate:
    metrics = [accuracy]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with the iris data and a small program (its `lr` comes from --param or
    the sweep)."""
    (tmp_path / "data").mkdir()
    shutil.copy(EXAMPLES / "data" / "iris.csv", tmp_path / "data" / "iris.csv")
    (tmp_path / "small.kyn").write_text(SMALL.replace("    width = 8\n",
                                                      "    width = 8\n    lr = 0.01\n"))
    return tmp_path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_ok_and_errors(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", str(EXAMPLES / "iris.kyn")], capsys)
    assert code == 0 and out.startswith("Valid .kyn program:")
    bad = project / "bad.kyn"
    bad.write_text((project / "small.kyn").read_text().replace(
        "dense 3 linear", "dense 3 elu").replace("epochs = 3", "epochs = 0"))
    code, out, err = run(["validate", str(bad)], capsys)
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 2, err  # every error, not only the first
    assert f"{bad}:10:13: error: Unsupported activation 'elu' in model 'Net'" in lines[0]
    assert "did you mean" in lines[0] and lines[0].endswith("[KYN-S05]")
    assert "epochs must be in [1, 1000000], found 0 [KYN-S06]" in lines[1]
    assert "Traceback" not in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["train"]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["compile", "x.kyn"]) == 2  # -o is required
    capsys.readouterr()
    for cmd in ("validate", "compile", "train", "sweep", "fmt", "ast", "lsp", "lock"):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--help"]) if False else build_help(cmd)
        assert e.value.code == 0
        assert "usage: frame-kyn" in capsys.readouterr().out


def build_help(cmd: str) -> None:
    from frame_mlir.tools.frame_kyn import build_parser

    build_parser().parse_args([cmd, "--help"])


def test_missing_file_and_bad_param(project: Path, capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    code, _, err = run(["validate", str(project / "nope.kyn")], capsys)
    assert code == 1 and "nope.kyn: error: file not found [KYN-P00]" in err
    code, _, err = run(["validate", str(project / "small.kyn"), "--param", "oops"], capsys)
    assert code == 1 and "--param expects key=value" in err


def test_train_writes_manifest_and_is_reproducible(project: Path,
                                                   capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    prog = str(project / "small.kyn")
    code, out, err = run(["train", prog, "--out-dir", str(project / "a")], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert [x.split()[0] for x in lines] == ["epoch"] * 3 + ["metric", "manifest"]
    assert err == ""  # no bar without a terminal
    code, out2, _ = run(["train", prog, "--out-dir", str(project / "b")], capsys)
    assert code == 0
    a = json.loads((project / "a" / "run_manifest.json").read_text())
    b = json.loads((project / "b" / "run_manifest.json").read_text())
    for m in (a, b):
        for key in ("kynml_version", "config_hash", "data_hash", "env", "seed", "metrics",
                    "frame_mlir_version", "compile_seconds", "train_seconds"):
            assert key in m
        del m["compile_seconds"], m["train_seconds"]
    assert a == b  # bit-identical apart from times
    assert a["seed"] == 1 and len(a["config_hash"]) == 64 and a["data_hash"]
    assert set(a["env"]) == {"python", "numpy", "platform"}
    assert [x for x in out.splitlines() if not x.startswith("manifest")] == \
        [x for x in out2.splitlines() if not x.startswith("manifest")]


def test_param_override_changes_the_run(project: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    prog = str(project / "small.kyn")
    code, out, _ = run(["train", prog, "--quiet", "--out-dir", str(project / "p"),
                        "--param", "width=5", "--param", "lr=1e-3"], capsys)
    assert code == 0
    m = json.loads((project / "p" / "run_manifest.json").read_text())
    assert m["params"] == {"width": 5, "lr": 0.001}


def test_emit_stage_and_print_ir(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = str(project / "small.kyn")
    code, out, _ = run(["train", prog, "--emit-stage", "frame"], capsys)
    assert code == 0
    assert "func.func @Net_train(" in out and "frame.cross_entropy" in out
    assert "func.func @Net_eval(" in out and "func.func @Net_adam(" in out
    code, out, err = run(["train", prog, "--emit-stage", "autodiff", "--print-ir-after-all"],
                         capsys)
    assert code == 0 and "@Net_train_grad" in out
    assert "// -----// IR Dump After frame-shape-inference //----- //" in err


def test_lock_create_check_and_drift(project: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    prog = project / "small.kyn"
    lock = project / "kynml.lock"
    assert run(["lock", "create", str(prog)], capsys)[0] == 0
    assert json.loads(lock.read_text())["config_hash"]
    code, out, _ = run(["lock", "check", str(prog)], capsys)
    assert code == 0 and "lock ok" in out
    prog.write_text(prog.read_text().replace("epochs = 3", "epochs = 4"))
    with (project / "data" / "iris.csv").open("a") as f:
        f.write("5.0,3.0,1.5,0.2,setosa\n")
    code, _, err = run(["lock", "check", str(prog)], capsys)
    assert code == 1
    assert "config_hash: the source of small.kyn changed" in err
    assert "data: the contents of 'data/iris.csv' changed" in err
    assert err.count("[KYN-L01]") == 2
    code, _, err = run(["train", str(prog), "--check-lock", str(lock)], capsys)
    assert code == 1 and "lock mismatch" in err


def test_sweep_runs_every_point(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = project / "sweep.kyn"
    prog.write_text(SMALL + "\nsweep:\n    width = [4, 6]\n    lr = [0.01, 0.001]\n")
    code, out, err = run(["sweep", str(prog), "--out-dir", str(project / "s")], capsys)
    assert code == 0, err
    res = json.loads((project / "s" / "sweep_results.json").read_text())["results"]
    assert [r["params"] for r in res] == [{"width": 4, "lr": 0.01}, {"width": 4, "lr": 0.001},
                                          {"width": 6, "lr": 0.01}, {"width": 6, "lr": 0.001}]
    assert all("accuracy" in r["metrics"] for r in res)
    code, out, err = run(["sweep", str(prog), "--out-dir", str(project / "t"), "--param",
                          "width=5"], capsys)
    assert code == 0 and "fixes the sweep axis 'width'" in err
    res = json.loads((project / "t" / "sweep_results.json").read_text())["results"]
    assert [r["params"] for r in res] == [{"lr": 0.01}, {"lr": 0.001}]


def test_data_errors_are_clean(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = project / "wide.kyn"
    prog.write_text(SMALL.replace("input 4", "input 5").replace("lr=$lr", "lr=0.1"))
    code, _, err = run(["train", str(prog)], capsys)
    assert code == 1
    assert "model 'Net' declares input 5, but dataset 'Iris' encodes to 4 feature columns" \
        in err and "[KYN-C02]" in err and ":8:5:" in err
    prog.write_text(SMALL.replace('"species"', '"specie"').replace("lr=$lr", "lr=0.1"))
    code, _, err = run(["train", str(prog)], capsys)
    assert code == 1 and "did you mean 'species'?" in err and "[KYN-C01]" in err
    prog.write_text(SMALL.replace("seed = 1", "seed = 1\n    precision = bf16")
                    .replace("lr=$lr", "lr=0.1"))
    code, _, err = run(["train", str(prog)], capsys)
    assert code == 1 and "precision 'bf16' is not supported" in err and "[KYN-C05]" in err


def test_fmt_and_ast(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = project / "messy.kyn"
    prog.write_text(SMALL.replace("    split = 0.7\n", "    split  =   0.7  # held out 30%\n"))
    code, out, _ = run(["fmt", str(prog)], capsys)
    assert code == 0 and "split = 0.7  # held out 30%" in out
    assert run(["fmt", str(prog), "--check"], capsys)[0] == 1
    assert run(["fmt", str(prog), "--write"], capsys)[0] == 0
    assert run(["fmt", str(prog), "--check"], capsys)[0] == 0
    code, out, _ = run(["ast", str(prog)], capsys)
    assert code == 0 and "DatasetBlock(" in out and "ModelBlock(" in out


def test_console_script_has_no_traceback(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("frame-kyn")
    bad = tmp_path / "tab.kyn"
    bad.write_text("model M:\n\tinput 4\n")
    r = subprocess.run([str(exe), "validate", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert r.stderr.startswith(f"{bad}:2:1: error: indentation must be exactly 4 spaces")
    assert "Traceback" not in r.stderr


def test_python_m_format_is_frame_kyn_fmt(tmp_path: Path) -> None:
    """KynML's `python -m ....format FILE [--check]` (its package's __main__.py)."""
    messy = tmp_path / "messy.kyn"
    messy.write_text(SMALL.replace("\n\n", "\n\n\n"))
    run = [sys.executable, "-m", "frame_mlir.frontends.kyn.format"]
    r = subprocess.run([*run, str(messy), "--check"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and "would be reformatted" in r.stderr, r.stderr
    r = subprocess.run([*run, str(messy)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == main_output(["fmt", str(messy)]), r.stderr


def main_output(argv: list[str]) -> str:
    r = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_kyn", *argv],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout
