"""The tools on JSON networks, run in process (`main([...])`, output captured):
`frame-dslc --check`, and `frame-run net.json --data FILE.npz ...` -- the epoch lines,
held-out accuracy, notes, weights files, the loss plot, solvers and schedules,
`--emit-stage`, and every usage / data error as a clear message without a traceback.
A v0 spec still runs as before. The networks are tiny (compiles of a second or two)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frame_mlir.tools import frame_dslc, frame_run

ROOT = Path(__file__).resolve().parents[2]
NETWORKS = ROOT / "testdata" / "networks"
TINY_V0 = ROOT / "testdata" / "tiny_mlp.json"

NUM = r"[-+0-9.e]+|nan|inf"
BATCH, SAMPLES = 8, 37  # 4 full batches, 5 samples dropped each epoch

NET: dict[str, Any] = {
    "inputs": [{"name": "data", "shape": [BATCH, 4]},
               {"name": "label", "shape": [BATCH], "dtype": "int"}],
    "outputs": ["loss"],
    "operators": [
        {"name": "fc1", "type": "InnerProduct", "inputs": ["data"], "outputs": ["h"],
         "options": {"outputs": 8, "activation": "relu"}},
        {"name": "fc2", "type": "InnerProduct", "inputs": ["h"], "outputs": ["fc2"],
         "options": {"outputs": 3}},
        {"name": "loss", "type": "SoftmaxWithLoss", "inputs": ["fc2", "label"],
         "outputs": ["loss"]},
    ],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("netcli")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((SAMPLES, 4)).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0)).astype(np.int32)
    net = d / "net.json"
    net.write_text(json.dumps(NET))
    train = d / "train.npz"
    np.savez(train, data=x, label=y)
    held = d / "held.npz"
    np.savez(held, data=x, label=y, data_test=x[:16], label_test=y[:16])
    out_of_range = d / "labels.npz"
    np.savez(out_of_range, data=x, label=np.where(np.arange(SAMPLES) % 4 == 3, 5, y))
    bad_npz = d / "bad.npz"
    bad_npz.write_text("not numpy at all\n")
    bad_net = d / "bad_net.json"
    doc = json.loads(json.dumps(NET))
    doc["operators"][0]["type"] = "InnerProdct"
    doc["operators"][1]["options"]["outputz"] = 3
    doc["inputs"][0]["shape"] = [BATCH, 0]
    bad_net.write_text(json.dumps(doc))
    return {"dir": d, "net": net, "train": train, "held": held, "bad_npz": bad_npz,
            "bad_net": bad_net, "labels": out_of_range}


def run(capsys: pytest.CaptureFixture[str], main: Any, *args: object
        ) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, out, err


def epoch_losses(out: str, accuracy: bool = False) -> list[float]:
    """The losses of `epoch N loss V [accuracy A]` lines; the output must be exactly
    those lines then `final_loss V`, the last step's loss."""
    lines = out.splitlines()
    acc = rf" accuracy (?:{NUM})" if accuracy else ""
    for i, line in enumerate(lines[:-1]):
        assert re.fullmatch(rf"epoch {i + 1} loss (?:{NUM}){acc}", line), line
    assert re.fullmatch(rf"final_loss (?:{NUM})", lines[-1]), lines[-1]
    return [float(line.split()[3]) for line in lines[:-1]]


def train(capsys: pytest.CaptureFixture[str], files: dict[str, Path], *extra: object,
          data: str = "train") -> tuple[int, str, str]:
    return run(capsys, frame_run.main, files["net"], "--data", files[data], *extra)


@pytest.fixture(scope="module")
def baseline(files: dict[str, Path]) -> list[float]:
    """The epoch losses of the default run (2 epochs, SGD, no schedule)."""
    out, err = io.StringIO(), io.StringIO()  # capsys is function-scoped
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = frame_run.main([str(files["net"]), "--data", str(files["train"]),
                             "--epochs", "2"])
    assert rc == 0, err.getvalue()
    return epoch_losses(out.getvalue())


# --------------------------------------------------------------------------- frame-dslc


@pytest.mark.parametrize("name", ["mnist_mlp", "lenet_digits"])
def test_dslc_check_networks(capsys: pytest.CaptureFixture[str], name: str) -> None:
    rc, out, err = run(capsys, frame_dslc.main, "--check", NETWORKS / f"{name}.json")
    assert (rc, out, err) == (0, f"OK {name}\n", "")


def test_dslc_check_bad_network(capsys: pytest.CaptureFixture[str],
                                files: dict[str, Path]) -> None:
    src = str(files["bad_net"])
    errors = [
        f"frame-dslc: error: {src}: NET-000 at /inputs/0/shape/1: expected >= 1, found 0",
        f"frame-dslc: error: {src}: NET-001 at /operators/0/type: unknown operator type "
        "\"InnerProdct\" (did you mean 'InnerProduct'?) (known: "
        + ", ".join(_known_types()) + ")"]
    net002 = (f"{src}: NET-002 at /operators/1/options/outputz: unknown option 'outputz' "
              "for InnerProduct (did you mean 'outputs'?) (its options: outputs, inputs, "
              "bias, activation)")
    # the unknown option is a warning (the reference ignores it), printed first
    rc, out, err = run(capsys, frame_dslc.main, "--check", files["bad_net"])
    assert rc != 0 and out == ""
    assert err.splitlines() == [
        f"frame-dslc: warning: {net002}; ignored, as the reference ignores it", *errors]
    # --strict: an error among the others, in document order
    rc, out, err = run(capsys, frame_dslc.main, "--check", "--strict", files["bad_net"])
    assert rc != 0 and out == ""
    assert err.splitlines() == [*errors, f"frame-dslc: error: {net002}"]


def _known_types() -> list[str]:
    from frame_mlir.frontends.network.options import OPERATORS

    return list(OPERATORS)


def _issue30_net(options: dict[str, Any], outputs: list[Any] | None = None
                 ) -> dict[str, Any]:
    """The campaign's file: data [64, 1, 8, 8] and label [64]; Convolution2D `c`,
    InnerProduct(10), SoftmaxWithLoss."""
    return {
        "inputs": [{"name": "data", "shape": [64, 1, 8, 8]},
                   {"name": "label", "shape": [64], "dtype": "int"}],
        "outputs": outputs or ["loss"],
        "operators": [
            {"name": "c", "type": "Convolution2D", "inputs": ["data"], "outputs": ["c"],
             "options": {"channels_out": 3, **options}},
            {"name": "ip", "type": "InnerProduct", "inputs": ["c"], "outputs": ["ip"],
             "options": {"outputs": 10}},
            {"name": "loss", "type": "SoftmaxWithLoss", "inputs": ["ip", "label"],
             "outputs": ["loss"]}]}


@pytest.mark.parametrize(("doc", "message"), [
    # defect 2: internal error ZeroDivisionError, exit 70
    (_issue30_net({"kernel": 0}), "NET-000 at /operators/0/options/kernel: expected an "
     "integer or a list of two integers, each in [1, 2147483647], found 0"),
    # defect 3: internal error OverflowError (float too large to pack), exit 70
    (_issue30_net({"kernel": 3}, [{"name": "loss", "loss_weight": 1e39}]),
     "NET-000 at /outputs/0/loss_weight: expected a number of at most "
     "3.4028234663852886e+38 in magnitude (finite in float32), found 1e+39"),
])
def test_dslc_check_issue30_values(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   doc: dict[str, Any], message: str) -> None:
    path = tmp_path / "net.json"
    path.write_text(json.dumps(doc))
    rc, out, err = run(capsys, frame_dslc.main, "--check", path)
    assert (rc, out, err) == (1, "", f"frame-dslc: error: {path}: {message}\n")


def test_dslc_run_refuses_a_network(capsys: pytest.CaptureFixture[str],
                                    files: dict[str, Path]) -> None:
    rc, _, err = run(capsys, frame_dslc.main, "--run", files["net"])
    assert rc == 1 and "is a JSON network" in err and "frame-run" in err


# --------------------------------------------------------------------------- frame-run


def test_run_prints_epochs_and_final_loss(capsys: pytest.CaptureFixture[str],
                                          files: dict[str, Path],
                                          baseline: list[float]) -> None:
    rc, out, err = train(capsys, files, "--epochs", "2")
    assert rc == 0
    assert epoch_losses(out) == baseline  # no held-out split: no accuracy; deterministic
    assert len(out.splitlines()) == 3
    assert "accuracy" not in out
    assert (f"frame-run: note: {SAMPLES % BATCH} of {SAMPLES} training samples form no "
            "full batch and are dropped each epoch") in err
    assert all(np.isfinite(baseline)) and baseline[1] < baseline[0]


def test_run_held_out_accuracy_save_weights_plot(capsys: pytest.CaptureFixture[str],
                                                 files: dict[str, Path],
                                                 baseline: list[float]) -> None:
    d = files["dir"]
    weights, plot = d / "trained.npz", d / "curve.png"
    rc, out, _ = train(capsys, files, "--epochs", "2", "--save-weights", weights,
                       "--plot", plot, data="held")
    assert rc == 0
    # the training split is the same file's arrays: the same losses
    assert epoch_losses(out, accuracy=True) == baseline
    for line in out.splitlines()[:-1]:
        assert 0.0 <= float(line.split()[-1]) <= 1.0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = np.load(weights)
    assert sorted(saved.files) == ["fc1.0", "fc1.1", "fc2.0", "fc2.1"]

    # --weights: start from the trained parameters; with lr 0 and no decay nothing
    # moves, so saving again gives the same file contents
    again = d / "again.dlp"
    rc, out, _ = train(capsys, files, "--epochs", "1", "--weights", weights, "--lr", "0",
                       "--weight-decay", "0", "--save-weights", again)
    assert rc == 0
    from frame_mlir.frontends.network.weights import load_weights

    reloaded = load_weights(again)
    for name in saved.files:
        np.testing.assert_array_equal(reloaded[name], saved[name])
    # the loss of trained parameters is below the first epoch's from scratch
    assert epoch_losses(out)[0] < baseline[0]


def test_run_adam(capsys: pytest.CaptureFixture[str], files: dict[str, Path],
                  baseline: list[float]) -> None:
    rc, out, _ = train(capsys, files, "--epochs", "2", "--solver", "adam", "--lr", "0.01")
    assert rc == 0
    losses = epoch_losses(out)
    assert losses != baseline and all(np.isfinite(losses))


def test_run_schedules_change_the_losses(capsys: pytest.CaptureFixture[str],
                                         files: dict[str, Path],
                                         baseline: list[float]) -> None:
    rc, out, _ = train(capsys, files, "--epochs", "2", "--schedule", "step:1:0.5")
    assert rc == 0
    step = epoch_losses(out)
    assert step[0] == baseline[0]  # epoch 1 runs at the base lr
    assert step[1] != baseline[1]  # epoch 2 at half of it
    rc, out, _ = train(capsys, files, "--epochs", "2", "--schedule", "cosine")
    assert rc == 0
    cosine = epoch_losses(out)
    assert cosine[0] != baseline[0] and cosine[1] != baseline[1]
    assert cosine != step


@pytest.mark.parametrize(("stage", "needle"), [("frame", "frame.matmul"),
                                               ("linalg", "linalg.generic")])
def test_run_emit_stage(capsys: pytest.CaptureFixture[str], files: dict[str, Path],
                        stage: str, needle: str) -> None:
    rc, out, err = run(capsys, frame_run.main, files["net"], f"--emit-stage={stage}")
    assert rc == 0 and err == ""
    assert out.startswith("builtin.module")
    assert needle in out
    if stage == "frame":
        assert "frame.cross_entropy" in out and 'frame.param = "fc1.0"' in out


@pytest.mark.parametrize(("args", "rc", "message"), [
    ([], 1, "a network needs training data: --data FILE.npz or --data digits"),
    (["--print-predictions"], 2, "--print-predictions applies to v0 model specs only"),
    (["--data", "TRAIN", "--schedule", "step:0:1"], 2,
     "argument --schedule: expected 'step:EPOCHS:GAMMA' (EPOCHS >= 1, GAMMA > 0 and "
     "finite in float32) or 'cosine', found 'step:0:1'"),
    (["--data", "TRAIN", "--schedule", "linear"], 2, "found 'linear'"),
    (["--data", "TRAIN", "--epochs", "2147483648"], 2,
     "argument --epochs: expected an integer in [1, 2147483647], found 2147483648"),
    (["--data", "TRAIN", "--solver", "adam", "--momentum", "0.5"], 1,
     "--momentum and --semantics apply to --solver sgd only"),
    (["--data", "BAD_NPZ"], 1, "is not a readable .npz archive: neither a zip archive"),
    (["--data", "NOPE.npz"], 1, "no such file; --data takes a .npz file or 'digits'"),
    (["--emit-stage=frame", "--data", "TRAIN"], 2,
     "--data needs a training run; --emit-stage stops before one"),
    (["--weights", "NOPE.npz", "--data", "TRAIN"], 1, "NOPE.npz"),
    (["--data", "LABELS", "--epochs", "1"], 1,
     "feed: input 'label': @net_grad: frame.cross_entropy: label 5 of row"),
])
def test_run_errors(capsys: pytest.CaptureFixture[str], files: dict[str, Path],
                    args: list[str], rc: int, message: str) -> None:
    subst = {"TRAIN": str(files["train"]), "BAD_NPZ": str(files["bad_npz"]),
             "LABELS": str(files["labels"]),
             "NOPE.npz": str(files["dir"] / "nope.npz")}
    got, out, err = run(capsys, frame_run.main, files["net"],
                        *(subst.get(a, a) for a in args))
    assert got == rc and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("frame-run: error: ")
    assert message.replace("NOPE.npz", str(files["dir"] / "nope.npz")) in last


def _net_params() -> dict[str, np.ndarray]:
    """NET's parameters: fc1 [8, 4] + [8], fc2 [3, 8] + [3]."""
    return {"fc1.0": np.zeros((8, 4), np.float32), "fc1.1": np.zeros(8, np.float32),
            "fc2.0": np.zeros((3, 8), np.float32), "fc2.1": np.zeros(3, np.float32)}


@pytest.mark.parametrize(("make", "lines"), [
    (lambda p: {**p, "fc1.0": np.zeros((4, 7), np.float32)},
     ["WEIGHTS-001 at W:fc1.0: expected shape [8, 4] (parameter 'fc1.0'), found [4, 7]"]),
    (lambda p: {k: v for k, v in p.items() if k != "fc1.1"},
     ["WEIGHTS-001 at W:fc1.1: expected parameter 'fc1.1' of shape [8], found no such "
      "tensor (the file holds 'fc1.0', 'fc2.0', 'fc2.1')"]),
    (lambda p: {**p, "fc3.0": np.zeros(2, np.float32)},
     ["WEIGHTS-001 at W:fc3.0: expected only the network's parameters 'fc1.0', 'fc1.1', "
      "'fc2.0', 'fc2.1', found a tensor the network has no parameter for"]),
])
@pytest.mark.parametrize("suffix", [".npz", ".dlp"])
def test_run_weights_that_do_not_fit(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     files: dict[str, Path], make: Any, lines: list[str],
                                     suffix: str) -> None:
    """Issue 30, defect 11: a network's weights errors had no rule id while a v0 spec's
    are WEIGHTS-001 at FILE:PARAMETER; now the same rule and places for both."""
    from frame_mlir.frontends.network.weights import save_weights

    path = tmp_path / f"w{suffix}"
    save_weights(path, make(_net_params()))
    rc, out, err = run(capsys, frame_run.main, files["net"], "--data", files["train"],
                       "--load-weights", path)
    assert rc == 1 and out == ""
    assert err.splitlines() == [f"frame-run: error: {ln.replace(' at W:', f' at {path}:')}"
                                for ln in lines]


def test_run_weights_file_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                 files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
                                 ) -> None:
    """The rules of a v0 spec's weights files: IO-001 for a file that cannot be read or
    written, WEIGHTS-001 for one that is not a weights file (here: a .dlp header whose
    tensors overlap, defect 10)."""
    header = json.dumps({"tensors": {
        "fc1.0": {"dtype": "float", "shape": [8, 4], "size": 128, "start": 0},
        "fc1.1": {"dtype": "float", "shape": [8], "size": 32, "start": 0}}}).encode()
    overlap = tmp_path / "o.dlp"
    overlap.write_bytes(b"DLPW" + len(header).to_bytes(4, "big") + header + bytes(128))
    none = tmp_path / "none.dlp"
    cases = [
        (["--load-weights", none],
         [f"IO-001 at {none}: cannot read the --load-weights file: no such file"]),
        (["--load-weights", tmp_path],
         [f"IO-001 at {tmp_path}: cannot read the --load-weights file: "]),
        (["--load-weights", files["bad_npz"]],
         [f"WEIGHTS-001 at {files['bad_npz']}: not a known weight file (it starts with "
          "b'not '): expected a dlprimitives .dlp file"]),
        (["--load-weights", overlap],
         [f"WEIGHTS-001 at {overlap}: fc1.1: data [0, 32) overlaps tensor 'fc1.0' [0, 128): "
          "each tensor needs its own bytes"]),
    ]
    for args, lines in cases:
        rc, out, err = run(capsys, frame_run.main, files["net"], "--data", files["train"],
                           *args)
        assert rc == 1 and out == "", err
        got = [ln.removeprefix("frame-run: error: ") for ln in err.splitlines()]
        assert len(got) == len(lines) and all(g.startswith(w) for g, w in zip(
            got, lines, strict=True)), err

    from frame_mlir.frontends.network import weights

    def refuse(path: object, params: object) -> None:
        raise weights.WeightsError(str(path), ["cannot write weights: Read-only file system"])

    monkeypatch.setattr(weights, "save_weights", refuse)
    saved = tmp_path / "w.dlp"
    rc, out, err = run(capsys, frame_run.main, files["net"], "--data", files["train"],
                       "--save-weights", saved)
    assert rc == 1
    assert err.splitlines()[-1] == (f"frame-run: error: IO-001 at {saved}: cannot write "
                                    "weights: Read-only file system")


@pytest.mark.parametrize("flag", ["--lr", "--momentum", "--weight-decay"])
def test_run_rates_beyond_float32(capsys: pytest.CaptureFixture[str],
                                  files: dict[str, Path], flag: str) -> None:
    """Issue 30, defect 11: `--lr 1e40` was accepted for a network (the update runs in
    float32: an infinite rate), while a v0 spec refuses a rate above 3.4e38."""
    rc, out, err = run(capsys, frame_run.main, files["net"], "--data", files["train"],
                       flag, "1e40")
    assert rc == 2 and out == ""
    assert err.splitlines()[-1].endswith(
        f"argument {flag}: expected a number in [0, 3.4028234663852886e+38] (finite in "
        "float32), found 1e40")
    rc, _, err = run(capsys, frame_run.main, TINY_V0, "--lr", "1e40")
    assert rc == 1 and "FE-000 at --lr: expected <= 3.4028234663852886e+38" in err
    rc, _, _ = run(capsys, frame_run.main, files["net"], "--data", files["train"], flag,
                   "3.4e38", "--epochs", "1")
    assert rc == 0  # the largest float32 is a rate (training diverges: a warning)
    rc, _, err = run(capsys, frame_dslc.main, "--emit", files["net"], "-o",
                     files["dir"] / "emit", flag, "1e40")
    assert rc != 0 and "1e40" in err and "3.4028234663852886e+38" in err, err


def test_run_schedule_gamma_beyond_float32(capsys: pytest.CaptureFixture[str],
                                           files: dict[str, Path]) -> None:
    rc, _, err = run(capsys, frame_run.main, files["net"], "--data", files["train"],
                     "--schedule", "step:1:1e39")
    assert rc == 2 and "found 'step:1:1e39'" in err and "GAMMA" in err


def test_run_bad_network(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> None:
    rc, out, err = run(capsys, frame_run.main, files["bad_net"], "--data", files["train"])
    assert rc == 1 and out == ""
    assert [re.search(r"(warning|error): .*(NET-\d+)", line).groups()
            for line in err.splitlines()] == [
        ("warning", "NET-002"), ("error", "NET-000"), ("error", "NET-001")]


@pytest.mark.parametrize("flag", [["--epochs", "2"], ["--momentum", "0.5"],
                                  ["--solver", "adam"], ["--seed", "3"]])
def test_network_flag_on_a_v0_spec(capsys: pytest.CaptureFixture[str],
                                   flag: list[str]) -> None:
    rc, out, err = run(capsys, frame_run.main, TINY_V0, *flag)
    assert rc == 2 and out == ""
    assert err.strip().splitlines()[-1] == (
        f"frame-run: error: {flag[0]} applies to JSON network files only; {TINY_V0} is a "
        "v0 model spec")


def test_v0_spec_still_trains(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, frame_run.main, TINY_V0)
    assert rc == 0
    lines = out.splitlines()
    assert re.fullmatch(rf"step 0 loss (?:{NUM})", lines[0])
    assert re.fullmatch(rf"step 299 loss (?:{NUM})", lines[-2])
    assert lines[-1] == "final_loss " + lines[-2].split()[-1]
