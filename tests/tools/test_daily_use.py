"""frame-run and frame-dslc for daily use on schema-v0 specs: `--steps/--lr/--log-every`
overrides (validated like the spec's fields, equal to an edited spec byte for byte),
`--load-weights/--save-weights` (.npz, .onnx, .dlp; round trips), `--data FILE.npz`,
the progress bar and summary (a terminal only: piped stdout is unchanged), `--plot`,
and the emitted C++ program's `--help`, `--steps N` and `--save-weights FILE` (its
weights file is byte for byte frame-run's, and frame-run loads it).

The tools run in process (`main([...])`, output captured: not a terminal); the C++
program is built once with CMake, as tests/backend/test_cpp_emitter.py builds them.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frame_mlir.frontends.spec.initial_values import generate_initial_values
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.tools import frame_dslc, frame_run

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "testdata" / "tiny_mlp.json"
TINY_DOC: dict[str, Any] = json.loads(TINY.read_text())
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


class _Tty(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def run(capsys: pytest.CaptureFixture[str], main: Any, *args: object) -> tuple[int, str, str]:
    """`main(args)` in process: (exit status, stdout, stderr); never a traceback."""
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, out, err


def edited(tmp: Path, name: str, **fields: Any) -> Path:
    """A copy of tiny_mlp.json with `section__field=value` fields replaced."""
    doc = json.loads(json.dumps(TINY_DOC))
    for key, value in fields.items():
        section, field = key.split("__")
        doc[section][field] = value
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def step_values(out: str) -> list[str]:
    """The loss texts of the `step N loss V` lines, in order."""
    return [m.group(2) for m in re.finditer(r"^step (\d+) loss (\S+)$", out, re.M)]


def after_losses(out: str) -> str:
    """Everything from `final_loss` on (the final loss and the predictions block)."""
    return out[out.index("final_loss"):]


# --------------------------------------------------------------------------- overrides


@pytest.mark.parametrize("main", [frame_run.main, frame_dslc.main], ids=["run", "dslc"])
def test_overrides_equal_the_edited_spec_byte_for_byte(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, main: Any) -> None:
    spec = edited(tmp_path, "edited", training__steps=40, optimizer__learning_rate=0.02,
                  training__log_every=7)
    lead = ["--run"] if main is frame_dslc.main else ["--print-predictions"]
    rc, want, err = run(capsys, main, *lead, spec)
    assert rc == 0 and err == ""
    rc, got, err = run(capsys, main, *lead, TINY, "--steps", "40", "--lr", "0.02",
                       "--log-every", "7")
    assert rc == 0 and err == ""
    assert got == want
    assert got.startswith("step 0 loss ") and "step 35 loss " in got and "step 39 loss " in got


def test_lr_is_baked_into_the_ir_and_the_cache_key(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    """The learning rate is a constant of the fused SGD update: `--lr` changes the IR
    (as the edited spec does) and so the compile-cache key; `--steps` changes neither."""
    from frame_mlir.frontends.spec.trainer import spec_cache_material
    from frame_mlir.tools.driver import load_model

    spec = edited(tmp_path, "lr", optimizer__learning_rate=0.02)
    rc, want, _ = run(capsys, frame_run.main, spec, "--emit-stage=sgd")
    rc2, got, _ = run(capsys, frame_run.main, TINY, "--lr", "0.02", "--emit-stage=sgd")
    assert rc == rc2 == 0 and got == want
    assert "lr = 2.000000e-02 : f32" in got and "lr = 5.000000e-02" not in got
    lr = load_model(TINY, {"--lr": "0.02"})
    assert lr == load_spec(spec)  # the same spec, hence the same cache key

    def key(overrides: dict[str, str]) -> dict[str, Any]:
        return spec_cache_material(load_model(TINY, overrides), 3, None)  # type: ignore[arg-type]

    assert key({"--lr": "0.02"}) != key({})
    assert key({"--steps": "7", "--log-every": "1"}) == key({})


@pytest.mark.parametrize(("args", "message"), [
    (["--steps", "0"], "FE-000 at --steps: expected >= 1, found 0"),
    (["--steps", "2147483648"], "FE-000 at --steps: expected <= 2147483647, found 2147483648"),
    (["--steps", "ten"], 'FE-000 at --steps: expected integer, found string "ten"'),
    (["--steps", "2.5"], "FE-000 at --steps: expected integer, found number 2.5"),
    (["--lr", "0"], "FE-000 at --lr: expected > 0, found 0"),
    (["--lr", "-0.5"], "FE-000 at --lr: expected > 0, found -0.5"),
    (["--lr", "1e-50"], "FE-000 at --lr: expected a learning rate > 0 in float32 (at least "
                        "1.4e-45), found 1e-50, which rounds to 0"),
    (["--lr", "1e999"], "FE-000 at --lr: expected a finite number, found 1e999"),
    (["--lr", "nan"], 'FE-000 at --lr: expected number, found string "nan"'),
    (["--log-every", "-1"], "FE-000 at --log-every: expected >= 0, found -1"),
])
def test_bad_override_is_reported_at_the_option(capsys: pytest.CaptureFixture[str],
                                                args: list[str], message: str) -> None:
    for main, tool, lead in ((frame_run.main, "frame-run", []),
                             (frame_dslc.main, "frame-dslc", ["--run"])):
        rc, out, err = run(capsys, main, *lead, TINY, *args)
        assert (rc, out, err) == (1, "", f"{tool}: error: {message}\n")


def test_override_and_spec_errors_are_reported_together(capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    doc = json.loads(json.dumps(TINY_DOC))
    doc["model"]["dtype"] = "float64"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    rc, out, err = run(capsys, frame_run.main, bad, "--steps", "0", "--lr", "0.1")
    assert rc == 1 and out == ""
    assert err.splitlines() == [
        f'frame-run: error: {bad}: FE-004 at /model/dtype: expected one of "float32", '
        'found "float64"',
        "frame-run: error: FE-000 at --steps: expected >= 1, found 0"]


@pytest.mark.parametrize(("args", "message"), [
    (["--check", "TINY", "--steps", "3"], "--steps applies to --run and --emit only"),
    (["--emit", "TINY", "-o", "OUT", "--data", "d.npz"], "--data applies to --run only"),
    (["--check", "TINY", "--plot", "p.png", "--save-weights", "w.npz"],
     "--save-weights, --plot apply to --run only"),
])
def test_dslc_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                           args: list[str], message: str) -> None:
    subst = {"TINY": str(TINY), "OUT": str(tmp_path / "out")}
    rc, out, err = run(capsys, frame_dslc.main, *(subst.get(a, a) for a in args))
    assert rc == 2 and out == ""
    assert err.splitlines()[-1] == f"frame-dslc: error: {message}"


def test_v0_only_flags_on_a_network(capsys: pytest.CaptureFixture[str]) -> None:
    net = ROOT / "testdata" / "networks" / "mnist_mlp.json"
    rc, out, err = run(capsys, frame_run.main, net, "--steps", "3", "--log-every", "1")
    assert rc == 2 and out == ""
    assert err.splitlines()[-1] == ("frame-run: error: --steps, --log-every apply to v0 "
                                    "model specs only; --steps also to a network's "
                                    "--benchmark")
    rc, _, err = run(capsys, frame_run.main, net, "--data", "digits", "--lr", "-1")
    assert rc == 2
    assert err.splitlines()[-1] == ("frame-run: error: argument --lr: expected a number in "
                                    "[0, 3.4028234663852886e+38] (finite in float32), "
                                    "found -1")


def test_emit_stage_takes_overrides_but_not_run_files(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    rc, out, err = run(capsys, frame_run.main, TINY, "--emit-stage=sgd", "--steps", "5")
    assert rc == 0 and err == "" and "frame.sgd_update" in out
    rc, out, err = run(capsys, frame_run.main, TINY, "--emit-stage=sgd", "--plot", "p.png")
    assert rc == 2 and out == ""
    assert err.splitlines()[-1] == ("frame-run: error: --plot needs a training run; "
                                    "--emit-stage stops before one")


# --------------------------------------------------------------------------- weights


@pytest.mark.parametrize("suffix", [".npz", ".onnx", ".dlp"])
def test_save_load_continue_equals_one_longer_run(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path, suffix: str) -> None:
    """Train N steps and save; load and train N more: the losses, the final loss and the
    predictions are those of one run of 2N steps (SGD has no state besides the
    parameters, and every format holds float32 exactly)."""
    n = 25
    rc, whole, _ = run(capsys, frame_run.main, TINY, "--steps", 2 * n, "--log-every", "1",
                       "--print-predictions")
    assert rc == 0
    weights = tmp_path / f"w{suffix}"
    rc, first, _ = run(capsys, frame_run.main, TINY, "--steps", n, "--log-every", "1",
                       "--save-weights", weights)
    assert rc == 0 and weights.is_file()
    rc, second, err = run(capsys, frame_run.main, TINY, "--steps", n, "--log-every", "1",
                          "--load-weights", weights, "--print-predictions")
    assert rc == 0 and err == ""
    assert step_values(first) + step_values(second) == step_values(whole)
    assert after_losses(second) == after_losses(whole)
    # --weights is the same option (the JSON networks' older name)
    rc, again, _ = run(capsys, frame_run.main, TINY, "--steps", n, "--log-every", "1",
                       "--weights", weights, "--print-predictions")
    assert again == second


def test_saved_weights_are_the_trained_parameters(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    from frame_mlir.frontends.api.onnx_weights import load_onnx_weights
    from frame_mlir.frontends.network.weights import load_weights
    from frame_mlir.frontends.spec.trainer import train

    spec = load_spec(edited(tmp_path, "s", training__steps=12))
    params = train(spec).params
    for suffix in (".npz", ".dlp", ".onnx"):
        path = tmp_path / f"w{suffix}"
        rc, _, _ = run(capsys, frame_run.main, TINY, "--steps", "12", "--save-weights", path)
        assert rc == 0
        if suffix == ".onnx":
            got = {k: t.numpy() for k, t in load_onnx_weights(str(path)).items()}
        else:
            got = load_weights(path)
        assert list(got) == list(params) or sorted(got) == sorted(params)
        for name, value in params.items():
            assert got[name].dtype == np.float32
            np.testing.assert_array_equal(got[name], value)


def _tiny_params() -> dict[str, np.ndarray]:
    return dict(generate_initial_values(load_spec(TINY)).params)


@pytest.mark.parametrize(("make", "lines"), [
    (lambda p: {**p, "fc1.weight": np.zeros((4, 7), np.float32)},
     ["WEIGHTS-001 at W:fc1.weight: expected shape [4, 8] (parameter 'fc1.weight'), "
      "found [4, 7]"]),
    (lambda p: {k: v for k, v in p.items() if k != "fc1.bias"},
     ["WEIGHTS-001 at W:fc1.bias: expected parameter 'fc1.bias' of shape [8, 8], found no "
      "such tensor (the file holds 'fc1.weight', 'fc2.weight')"]),
    (lambda p: {**p, "fc3.weight": np.zeros(2, np.float32)},
     ["WEIGHTS-001 at W:fc3.weight: expected only the spec's parameters 'fc1.weight', "
      "'fc1.bias', 'fc2.weight', found a tensor the spec has no parameter for"]),
])
@pytest.mark.parametrize("suffix", [".npz", ".onnx"])
def test_weights_that_do_not_fit_the_spec(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          make: Any, lines: list[str], suffix: str) -> None:
    from frame_mlir.tools.driver import save_weights_file

    path = tmp_path / f"w{suffix}"
    save_weights_file(str(path), list(make(_tiny_params()).items()))
    rc, out, err = run(capsys, frame_run.main, TINY, "--load-weights", path)
    assert rc == 1 and out == ""
    assert err.splitlines() == [f"frame-run: error: {ln.replace(' at W:', f' at {path}:')}"
                                for ln in lines]


def test_weights_file_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08")
    cases = [
        (["--load-weights", tmp_path / "none.npz"], 1,
         f"IO-001 at {tmp_path / 'none.npz'}: cannot read the --load-weights file: no such "
         "file"),
        (["--load-weights", junk], 1, f"WEIGHTS-001 at {junk}: expected an ONNX weights file, "
                                      "found "),
        (["--save-weights", tmp_path / "w.txt"], 1,
         f"IO-001 at {tmp_path / 'w.txt'}: --save-weights picks the format by the suffix: "
         "expected .npz, .onnx, .dlp, .h5, .hdf5, found .txt"),
        (["--save-weights", tmp_path / "no" / "w.npz"], 1,
         f"IO-001 at {tmp_path / 'no' / 'w.npz'}: cannot write the --save-weights file: no "
         f"folder {tmp_path / 'no'}"),
    ]
    for args, code, message in cases:
        rc, out, err = run(capsys, frame_run.main, TINY, *args)
        assert rc == code and out == "", args  # checked before any training
        assert err.startswith(f"frame-run: error: {message}"), err


# --------------------------------------------------------------------------- data


def test_data_file_with_the_spec_s_own_values_changes_nothing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    values = generate_initial_values(load_spec(TINY))
    data = tmp_path / "d.npz"
    np.savez(data, x=values.inputs["x"], target=values.target)
    rc, want, _ = run(capsys, frame_run.main, TINY, "--print-predictions")
    rc2, got, err = run(capsys, frame_run.main, TINY, "--data", data, "--print-predictions")
    assert rc == rc2 == 0 and err == "" and got == want


def test_data_file_trains_on_its_arrays(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    """The run equals training with those arrays as the data and the spec's parameters
    (drawn as without --data); float64 and integer arrays are stored as float32."""
    from frame_mlir.frontends.spec.initial_values import InitialValues
    from frame_mlir.frontends.spec.trainer import train
    from frame_mlir.tools.driver import format_loss

    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 4))  # float64
    target = rng.integers(-2, 3, size=(8, 1))  # integers
    data = tmp_path / "d.npz"
    np.savez(data, x=x, target=target)
    rc, out, err = run(capsys, frame_run.main, TINY, "--data", data, "--steps", "30",
                       "--log-every", "1")
    assert rc == 0 and err == ""
    spec = load_spec(edited(tmp_path, "s", training__steps=30, training__log_every=1))
    own = generate_initial_values(spec)
    result = train(spec, values=InitialValues(
        inputs={"x": x.astype(np.float32)}, target=target.astype(np.float32),
        params=own.params))
    assert step_values(out) == [format_loss(float(v)) for v in result.losses]


@pytest.mark.parametrize(("arrays", "lines"), [
    ({"x": np.zeros((8, 3), np.float32), "target": np.zeros((8, 1))},
     ["DATA-001 at D:x: expected shape [8, 4] (the data input 'x'), found [8, 3]"]),
    ({"x": np.zeros((8, 4), np.float32)},
     ["DATA-001 at D:target: expected an array of shape [8, 1] (the target of loss 'fc2'), "
      "found no such array (the file holds 'x')"]),
    ({"x": np.zeros((8, 4), np.complex64), "target": np.zeros((8, 1)),
      "y": np.zeros(3)},
     ["DATA-001 at D:x: expected a floating-point or integer array (stored as float32), "
      "found dtype complex64",
      "DATA-001 at D:y: expected only the arrays 'x', 'target', found an array the spec has "
      "no use for"]),
    ({"x": np.full((8, 4), np.nan), "target": np.full((8, 1), 1e300)},
     ["DATA-001 at D:x: expected finite values in float32, found 32 non-finite values (NaN, "
      "infinity or beyond the float32 range)",
      "DATA-001 at D:target: expected finite values in float32, found 8 non-finite values "
      "(NaN, infinity or beyond the float32 range)"]),
])
def test_data_file_that_does_not_fit(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     arrays: dict[str, np.ndarray], lines: list[str]) -> None:
    data = tmp_path / "d.npz"
    np.savez(data, **arrays)
    rc, out, err = run(capsys, frame_run.main, TINY, "--data", data)
    assert rc == 1 and out == ""
    assert err.splitlines() == [f"frame-run: error: {ln.replace(' at D:', f' at {data}:')}"
                                for ln in lines]


def test_data_file_that_is_not_an_archive(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    text = tmp_path / "d.npz"
    text.write_text("x,target\n")
    single = tmp_path / "one.npy"
    np.save(single, np.zeros((8, 4)))
    for path, message in (
            (text, f"DATA-001 at {text}: expected a .npz archive (numpy.savez) of the arrays "
                   "'x', 'target', found a file numpy cannot read"),
            (single, f"DATA-001 at {single}: expected a .npz archive (numpy.savez) of the "
                     "arrays 'x', 'target', found a single .npy array (use numpy.savez)"),
            (tmp_path / "none.npz", f"IO-001 at {tmp_path / 'none.npz'}: cannot read the "
                                    "--data file: no such file")):
        rc, out, err = run(capsys, frame_run.main, TINY, "--data", path)
        assert (rc, out, err) == (1, "", f"frame-run: error: {message}\n")


# --------------------------------------------------------------------------- terminal


def test_piped_output_is_unchanged_by_the_new_machinery(capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    """Not a terminal: no bar, no summary, and stdout is exactly the lines the trainer's
    results give (what frame-run printed before bars, plots and weights files)."""
    from frame_mlir.frontends.spec.trainer import train
    from frame_mlir.tools.driver import format_loss, format_predictions

    spec = load_spec(TINY)
    result = train(spec)
    want = "".join(f"step {i} loss {format_loss(v)}\n" for i, v in result.logged)
    want += f"final_loss {format_loss(result.final_loss)}\n"
    want += format_predictions(spec, result.predictions)
    rc, out, err = run(capsys, frame_run.main, TINY, "--print-predictions",
                       "--save-weights", tmp_path / "w.npz", "--plot", tmp_path / "l.png")
    assert (rc, out, err) == (0, want, "")


def test_terminal_gets_a_bar_and_a_summary_stdout_the_same(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import frame_mlir.tools.driver as driver

    rc, piped, _ = run(capsys, frame_run.main, TINY, "--steps", "400", "--log-every", "9")
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(driver, "CHUNK_SECONDS", 1e-6)  # many native calls: each step
    rc2, shown, _ = run(capsys, frame_run.main, TINY, "--steps", "400", "--log-every", "9")
    assert rc == rc2 == 0 and shown == piped
    text = tty.getvalue()
    assert "tiny_mlp:" in text and "step/s" in text  # the bar: its label and rate
    assert re.search(r"frame-run: tiny_mlp: compiled in \d+\.\d s( \(from the compile "
                     r"cache\))?, 400 steps in \d+\.\d s \(\d+\.\d steps/s\), \d+\.\d s in "
                     r"all\n$", text), text


def test_summary_line() -> None:
    from frame_mlir.runtime.progress import summary_line

    assert summary_line("frame-run", "m", 1.25, 300, 0.5, 2.0) == (
        "frame-run: m: compiled in 1.2 s, 300 steps in 0.5 s (600.0 steps/s), 2.0 s in all\n")
    assert "(from the compile cache)" in summary_line("t", "m", 0.0, 1, 0.0, 0.0, cached=True)


# --------------------------------------------------------------------------- plot


def test_plot_of_the_loss_curve(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    png = tmp_path / "loss.png"
    rc, _, err = run(capsys, frame_run.main, TINY, "--steps", "60", "--plot", png)
    assert rc == 0 and err == ""
    assert png.read_bytes().startswith(PNG_MAGIC)


def test_plot_of_diverging_and_long_runs(tmp_path: Path) -> None:
    from frame_mlir.tools.plot import MAX_POINTS, plot_losses

    plot_losses(tmp_path / "a.png", [1.0, 0.5, float("inf"), float("nan")])
    plot_losses(tmp_path / "b.png", np.linspace(1, 2, MAX_POINTS * 3, dtype=np.float32))
    for name in ("a.png", "b.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_MAGIC)


def test_plot_without_matplotlib_names_the_extra_before_training(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails
    rc, out, err = run(capsys, frame_run.main, TINY, "--plot", tmp_path / "loss.png")
    assert (rc, out) == (1, "")  # no step lines: nothing was trained
    assert err == "frame-run: error: --plot needs matplotlib: pip install 'frame-mlir[plot]'\n"
    assert not (tmp_path / "loss.png").exists()


# --------------------------------------------------------------------------- C++ program


def test_emit_bakes_in_the_overrides(capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    rc, _, err = run(capsys, frame_dslc.main, "--emit", TINY, "-o", tmp_path / "p",
                     "--steps", "40", "--lr", "0.25", "--log-every", "7")
    assert rc == 0 and err == ""
    text = (tmp_path / "p" / "main.cpp").read_text()
    assert "args.steps = 40;  // training.steps of the spec" in text
    assert "* -0.25f;" in text and "* -0.05f;" not in text
    assert "if (step % 7 == 0 || step == steps - 1) {" in text


# tiny_mlp with parameter names that need escaping in the .dlp header's C++ literal:
# a quote, a backslash and a non-ASCII letter (UTF-8 in the header).
NAMES = {**TINY_DOC, "model": {**TINY_DOC["model"], "name": "names_dlp"},
         "layers": [{**TINY_DOC["layers"][0], "name": "h\\"},
                    {**TINY_DOC["layers"][1], "name": 'out"\u00e9', "input": "h\\"}],
         "loss": {**TINY_DOC["loss"], "prediction": 'out"\u00e9'},
         "training": {**TINY_DOC["training"], "steps": 20, "log_every": 5}}


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """tiny_mlp and NAMES emitted and built (Release, -Wall -Wextra -Werror) in one CMake
    tree: name -> (spec file, executable)."""
    if shutil.which("cmake") is None or CXX is None:
        pytest.skip("cmake and a C++ compiler are needed")
    from frame_mlir.backend.cpp.cmake import target_name
    from frame_mlir.frontends.spec.program import emit_program

    root = tmp_path_factory.mktemp("daily_cpp")
    names = root / "names_dlp.json"
    names.write_text(json.dumps(NAMES))
    specs = {"tiny_mlp": TINY, "names_dlp": names}
    for name, path in specs.items():
        emit_program(load_spec(path), root / name)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(daily_use LANGUAGES CXX)\n"
        + "".join(f"add_subdirectory({name})\n" for name in specs))
    for args in (["-S", str(root), "-B", str(root / "build"), "-DCMAKE_BUILD_TYPE=Release",
                  "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror"],
                 ["--build", str(root / "build"), "--parallel", str(os.cpu_count() or 2)]):
        proc = subprocess.run(["cmake", *args], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return {name: (path, root / "build" / name / target_name(name))
            for name, path in specs.items()}


def _program(binary: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("name", ["tiny_mlp", "names_dlp"])
def test_program_steps_and_weights_match_frame_run(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path, name: str,
                                                   programs: dict[str, tuple[Path, Path]]
                                                   ) -> None:
    """`PROGRAM --steps N --save-weights FILE`: stdout is `frame-run SPEC --steps N
    --print-predictions`'s, the .dlp file is byte for byte frame-run's `--save-weights`,
    and frame-run continues training from it as from its own."""
    spec, binary = programs[name]
    n = 13
    proc = _program(binary, "--steps", n, "--save-weights", tmp_path / "c.dlp")
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"train_seconds \d+\.\d+\n", proc.stderr)
    rc, jit, _ = run(capsys, frame_run.main, spec, "--steps", n, "--print-predictions",
                     "--save-weights", tmp_path / "j.dlp")
    assert rc == 0 and proc.stdout == jit
    assert (tmp_path / "c.dlp").read_bytes() == (tmp_path / "j.dlp").read_bytes()
    rc, whole, _ = run(capsys, frame_run.main, spec, "--steps", 2 * n, "--log-every", "1")
    rc2, rest, _ = run(capsys, frame_run.main, spec, "--steps", n, "--log-every", "1",
                       "--load-weights", tmp_path / "c.dlp")
    assert rc == rc2 == 0
    assert step_values(rest) == step_values(whole)[n:]
    # --steps=N is --steps N; the spec's own step count without it
    proc = _program(binary, f"--steps={n}")
    assert proc.returncode == 0 and proc.stdout == jit
    rc, full, _ = run(capsys, frame_run.main, spec, "--print-predictions")
    assert _program(binary).stdout == full


def test_program_help_and_bad_arguments(programs: dict[str, tuple[Path, Path]],
                                        tmp_path: Path) -> None:
    _, binary = programs["tiny_mlp"]
    proc = _program(binary, "--help")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: tiny_mlp [--steps N] [--save-weights FILE] "
                                  "[--help]\n")
    assert "instead of the spec's 300" in proc.stdout
    cases = [
        (["--steps", "0"], 2, "tiny_mlp: error: FE-000 at --steps: expected an integer in "
                              "[1, 2147483647], found '0'"),
        (["--steps", "2147483648"], 2, "tiny_mlp: error: FE-000 at --steps: expected an "
                                       "integer in [1, 2147483647], found '2147483648'"),
        (["--steps", "1e3"], 2, "tiny_mlp: error: FE-000 at --steps: expected an integer in "
                                "[1, 2147483647], found '1e3'"),
        (["--steps"], 2, "tiny_mlp: error: --steps needs a value (try --help)"),
        (["--epochs", "3"], 2, "tiny_mlp: error: unknown argument '--epochs' (try --help)"),
        (["--save-weights="], 2, "tiny_mlp: error: --save-weights: expected a file name, "
                                 "found ''"),
        (["--steps", "2", "--save-weights", tmp_path / "no" / "w.dlp"], 1,
         f"tiny_mlp: error: IO-001 at {tmp_path / 'no' / 'w.dlp'}: cannot write the weights: "
         "No such file or directory"),
    ]
    for args, code, message in cases:
        proc = _program(binary, *args)
        assert proc.returncode == code, args
        assert proc.stderr.splitlines()[0] == message
        if code == 2:
            assert proc.stdout == ""  # a usage error trains nothing
    assert list(tmp_path.iterdir()) == []  # no partial or temporary file left
