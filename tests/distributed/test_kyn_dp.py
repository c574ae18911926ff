"""`frame-kyn train PROG --data-parallel` under mpirun, and `--checkpoint-every` /
`--resume` with and without it (docs/kyn.md, "Data-parallel training and
checkpoints").

The runs compare against one ordinary process: the same epoch lines within
`assert_trajectory_close` (the ranks add the same float32 terms in another order), the
same metrics, and nothing on stdout from rank 1. A resumed run must print the
uninterrupted run's lines and export its very parameters, bit for bit.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from mpi_helpers import (
    ROOT,
    assert_trajectory_close,
    losses,
    mpirun,
    mpmd,
    needs_mpi,
    run_alone,
)

from frame_mlir.frontends.kyn.pipeline import analyze
from frame_mlir.frontends.kyn.trainer import check_data_parallel, rank_share

pytestmark = needs_mpi

IRIS_CSV = ROOT / "testdata" / "kyn" / "data" / "iris.csv"

#: Dropout (the mask stream must stay in step across ranks and across a resume),
#: SGD with momentum under onecycle (a per-batch schedule, cycled momentum), early
#: stopping state, and batch 8 on the 105 training rows: 13 batches of 8 and a last
#: batch of 1 row, which on 2 ranks leaves rank 0 with no row of it.
PROGRAM = """\
dataset Iris:
    source = csv("{csv}")
    target = "species"
    split = 0.7
    normalize = true

model Net:
    input 4
    dense 16 relu
    dropout 0.25
    dense 3 linear

train:
    model = Net
    data = Iris
    loss = cross_entropy
    optimizer = sgd(lr=0.05, momentum=0.9)
    epochs = 12
    batch = {batch}
    scheduler = onecycle(max_lr=0.2)
    early_stop = early_stop(patience=30)
    seed = 3

evaluate:
    metrics = [accuracy]

export:
    format = npz
    path = "w.npz"
"""


def _program(folder: Path, batch: int = 8, name: str = "drop.kyn") -> Path:
    path = folder / name
    path.write_text(PROGRAM.format(csv=IRIS_CSV.as_posix(), batch=batch))
    return path


def _ok(proc) -> str:  # noqa: ANN001 - a CompletedProcess
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def _heldout(stdout: str) -> list[float]:
    return [float(line.split()[5]) for line in stdout.splitlines()
            if line.startswith("epoch ") and "heldout_loss" in line]


def _lines(stdout: str, word: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(word)]


def _same_run_output(a: str, a_dir: Path, b: str, b_dir: Path) -> None:
    """Two runs printed the same lines (their --out-dir paths aside)."""
    assert a.replace(str(a_dir), "OUT") == b.replace(str(b_dir), "OUT")


def _manifest(out_dir: Path) -> dict:
    m = json.loads((out_dir / "run_manifest.json").read_text())
    for key in ("compile_seconds", "train_seconds"):
        m.pop(key)
    return m


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The uninterrupted single-process run of PROGRAM, checkpointing every 5 epochs
    (its file holds epoch 10 at the end)."""
    folder = tmp_path_factory.mktemp("kyn_dp")
    prog = _program(folder)
    out = folder / "alone"
    stdout = _ok(run_alone(["frame-kyn", "train", str(prog), "--out-dir", str(out),
                            "--checkpoint-every", "5"]))
    ck = folder / "alone_epoch10.npz"
    shutil.copy(out / "Net.ckpt.npz", ck)
    return {"folder": folder, "prog": prog, "out": out, "stdout": stdout, "ck": ck}


def test_rank_shares_tile_every_batch() -> None:
    for size in range(1, 40):
        for ranks in (1, 2, 3, 4, 8):
            shares = [rank_share(size, r, ranks) for r in range(ranks)]
            assert shares[0][0] == 0 and shares[-1][1] == size
            assert all(a[1] == b[0] for a, b in zip(shares, shares[1:], strict=False))
            sizes = [hi - lo for lo, hi in shares]
            assert max(sizes) - min(sizes) <= 1
            if size % ranks == 0:  # the rule: rows [r*B/N, (r+1)*B/N)
                b = size // ranks
                assert shares == [(r * b, (r + 1) * b) for r in range(ranks)]


def test_dp002_and_batchnorm_are_errors_on_every_rank(tmp_path: Path) -> None:
    prog = _program(tmp_path, batch=15)
    module = analyze(prog.read_text(), str(prog)).module
    assert module is not None
    check_data_parallel(module, 15, 1)  # one rank takes any batch
    with pytest.raises(Exception, match=r"drop\.kyn:19:5: error: .*found 15 rows "
                       r"\(15 = 7 x 2 \+ 1\) \[DP-002\]"):
        check_data_parallel(module, 15, 2)
    t0 = time.monotonic()
    proc = mpirun(2, ["frame-kyn", "train", str(prog), "--data-parallel", "--out-dir",
                      str(tmp_path / "out")], timeout=120)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "[DP-002]" in proc.stderr
    assert "rank 0: " in proc.stderr or "rank 1: " in proc.stderr
    assert time.monotonic() - t0 < 60  # before any compile
    bc = ROOT / "testdata" / "kyn" / "breast_cancer.kyn"
    proc = mpirun(2, ["frame-kyn", "train", str(bc), "--data-parallel", "--out-dir",
                      str(tmp_path / "bc")], timeout=120)
    assert proc.returncode != 0
    assert "breast_cancer.kyn:14:5: error: [model TumourNet] batchnorm under " \
           "--data-parallel on 2 ranks" in proc.stderr
    assert "[KYN-C07]" in proc.stderr


def test_two_ranks_follow_one_process(tmp_path: Path) -> None:
    """iris.kyn: 105 training rows in batches of 16 and a last one of 9 (4 + 5 rows
    on the ranks), SGD with momentum, a step schedule, an ONNX export."""
    prog = str(ROOT / "testdata" / "kyn" / "iris.kyn")
    single = _ok(run_alone(["frame-kyn", "train", prog, "--out-dir", str(tmp_path / "a")]))
    par = _ok(mpirun(2, ["frame-kyn", "train", prog, "--data-parallel", "--out-dir",
                         str(tmp_path / "b")]))
    # rank 0 prints what one process prints, rank 1 nothing
    assert [line.split()[0] for line in par.splitlines()] == \
        [line.split()[0] for line in single.splitlines()]
    assert len(losses(single, "epoch")) == 100
    assert_trajectory_close(losses(single, "epoch"), losses(par, "epoch"))
    assert_trajectory_close(_heldout(single), _heldout(par))
    assert _lines(par, "metric") == _lines(single, "metric")
    assert (tmp_path / "b" / "models" / "iris.onnx").is_file()
    assert _manifest(tmp_path / "b")["steps"] == _manifest(tmp_path / "a")["steps"]


def test_one_rank_is_the_single_process_run_bit_for_bit(alone: dict) -> None:
    out = alone["folder"] / "one_rank"
    stdout = _ok(mpirun(1, ["frame-kyn", "train", str(alone["prog"]), "--data-parallel",
                            "--out-dir", str(out), "--checkpoint-every", "5"]))
    _same_run_output(alone["stdout"], alone["out"], stdout, out)
    assert (out / "w.npz").read_bytes() == (alone["out"] / "w.npz").read_bytes()


def test_resume_continues_the_run_bit_for_bit(alone: dict) -> None:
    out = alone["folder"] / "resumed"
    stdout = _ok(run_alone(["frame-kyn", "train", str(alone["prog"]), "--out-dir",
                            str(out), "--resume", str(alone["ck"])]))
    _same_run_output(alone["stdout"], alone["out"], stdout, out)
    assert (out / "w.npz").read_bytes() == (alone["out"] / "w.npz").read_bytes()
    assert _manifest(out) == _manifest(alone["out"])


def test_resume_data_parallel(alone: dict) -> None:
    """Two ranks (rank 0 holds no row of the last, 1-row batch): the run follows one
    process; resumed from its own epoch-10 checkpoint it ends identically."""
    folder = alone["folder"]
    full, resumed = folder / "dp_full", folder / "dp_resumed"
    args = ["frame-kyn", "train", str(alone["prog"]), "--data-parallel"]
    first = _ok(mpirun(2, [*args, "--out-dir", str(full), "--checkpoint-every", "5"]))
    assert_trajectory_close(losses(alone["stdout"], "epoch"), losses(first, "epoch"))
    ck = folder / "dp_epoch10.npz"
    shutil.copy(full / "Net.ckpt.npz", ck)
    second = _ok(mpirun(2, [*args, "--out-dir", str(resumed), "--resume", str(ck)]))
    _same_run_output(first, full, second, resumed)
    assert (resumed / "w.npz").read_bytes() == (full / "w.npz").read_bytes()


def test_a_checkpoint_of_another_run_is_refused(alone: dict, tmp_path: Path) -> None:
    other = _program(tmp_path, batch=16, name="other.kyn")
    proc = run_alone(["frame-kyn", "train", str(other), "--out-dir", str(tmp_path),
                      "--resume", str(alone["ck"])])
    assert proc.returncode == 1
    assert "CKPT-002" in proc.stderr and "Traceback" not in proc.stderr


def test_emit_stage_shows_the_rank_share(tmp_path: Path) -> None:
    prog = str(ROOT / "testdata" / "kyn" / "iris.kyn")
    out = _ok(mpirun(2, ["frame-kyn", "train", prog, "--data-parallel", "--emit-stage",
                         "frame"]))
    train = out.split("func.func @IrisNet_eval")[0]
    assert "tensor<8x4xf32>" in train  # rank 0's 8 rows of 16
    assert "frame.scale" in train and "factor = 5.000000e-01" in train
    alone = _ok(run_alone(["frame-kyn", "train", prog, "--emit-stage", "frame"]))
    assert "frame.scale" not in alone.split("func.func @IrisNet_eval")[0]


def test_bad_input_on_one_rank_ends_the_job(tmp_path: Path) -> None:
    good = _program(tmp_path, name="good.kyn")
    bad = tmp_path / "bad.kyn"
    bad.write_text(good.read_text().replace("dense 16 relu", "dense 16 relux"))
    t0 = time.monotonic()
    proc = mpmd([["frame-kyn", "train", str(good), "--data-parallel", "--out-dir",
                  str(tmp_path / "o")],
                 ["frame-kyn", "train", str(bad), "--data-parallel"]], timeout=120)
    assert proc.returncode != 0
    assert time.monotonic() - t0 < 60
    assert "rank 1: " in proc.stderr and "bad.kyn:" in proc.stderr
    assert "[KYN-S05]" in proc.stderr and "Traceback" not in proc.stderr


def test_ranks_training_different_programs_is_dp003(tmp_path: Path) -> None:
    a = _program(tmp_path, name="a.kyn")
    b = _program(tmp_path, batch=16, name="b.kyn")
    proc = mpmd([["frame-kyn", "train", str(a), "--data-parallel"],
                 ["frame-kyn", "train", str(b), "--data-parallel"]], timeout=120)
    assert proc.returncode != 0
    assert "DP-003" in proc.stderr


def test_flag_misuse_is_a_usage_error(tmp_path: Path) -> None:
    prog = str(_program(tmp_path))
    proc = run_alone(["frame-kyn", "train", prog, "--data-parallel", "--target", "cuda"])
    assert proc.returncode == 2 and "--data-parallel trains on the CPU" in proc.stderr
    proc = run_alone(["frame-kyn", "train", prog, "--collective-timeout", "5"])
    assert proc.returncode == 1 and "applies to --data-parallel" in proc.stderr
    proc = run_alone(["frame-kyn", "train", prog, "--checkpoint", "x.npz"])
    assert proc.returncode == 1 and "give both" in proc.stderr
