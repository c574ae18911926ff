"""`mpirun -n N frame-run SPEC --data-parallel` for v0 specs against one process, the
job's failures, and checkpoints.

Two ranks against one process on the global batch: every step's loss within
`assert_trajectory_close` (why that bound: its docstring), the final parameters within
1e-5 of the largest element of each tensor, and the output's lines the same ones.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
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

pytestmark = needs_mpi

TINY = str(ROOT / "testdata" / "tiny_mlp.json")
MNIST = str(ROOT / "testdata" / "mnist_mlp.json")


def _weights(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def _line_shapes(stdout: str) -> list[str]:
    """The output without the numbers: `step 0 loss`, ..., `final_loss`."""
    return [" ".join(ln.split()[:-1]) for ln in stdout.splitlines()]


@pytest.mark.parametrize("spec,steps", [(TINY, 300), (MNIST, 60)])
def test_two_ranks_match_one_process(tmp_path: Path, spec: str, steps: int) -> None:
    args = ["frame-run", spec, "--log-every", "1", "--steps", str(steps)]
    one = run_alone([*args, "--save-weights", str(tmp_path / "one.npz")])
    two = mpirun(2, [*args, "--data-parallel", "--save-weights", str(tmp_path / "two.npz")])
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    # rank 0 alone prints, the lines a single process prints
    assert _line_shapes(two.stdout) == _line_shapes(one.stdout)
    assert len(losses(two.stdout)) == steps
    assert_trajectory_close(losses(one.stdout), losses(two.stdout))
    a, b = _weights(tmp_path / "one.npz"), _weights(tmp_path / "two.npz")
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].shape == b[k].shape
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=1e-5 * np.abs(a[k]).max(),
                                   err_msg=k)


def test_one_rank_is_bit_identical_to_a_plain_run(tmp_path: Path) -> None:
    """One rank runs the split step (`@f_dp_grad`, then `@f_dp_update`): the same
    arithmetic as the fused train step, so the same bits."""
    args = ["frame-run", TINY, "--log-every", "1"]
    plain = run_alone([*args, "--save-weights", str(tmp_path / "a.npz")])
    alone = run_alone([*args, "--data-parallel", "--save-weights", str(tmp_path / "b.npz")])
    assert plain.returncode == 0 and alone.returncode == 0, alone.stderr
    assert alone.stdout == plain.stdout
    a, b = _weights(tmp_path / "a.npz"), _weights(tmp_path / "b.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_predictions_and_weights_gather_every_rank_s_rows(tmp_path: Path) -> None:
    """The v0 biases are held by rows: rank 0 gathers them for --print-predictions and
    --save-weights, so both cover the whole batch."""
    args = ["frame-run", TINY, "--steps", "20", "--print-predictions"]
    one = run_alone(args)
    two = mpirun(2, [*args, "--data-parallel"])
    assert two.returncode == 0, two.stderr
    pred = [ln for ln in two.stdout.splitlines() if not ln.startswith(("step", "final"))]
    pred1 = [ln for ln in one.stdout.splitlines() if not ln.startswith(("step", "final"))]
    assert pred[0] == pred1[0] == "predictions fc2 [8, 1]"
    np.testing.assert_allclose(np.array([float(x) for x in pred[1:]]),
                               np.array([float(x) for x in pred1[1:]]), rtol=1e-5)


def test_emit_stage_shows_the_split_step() -> None:
    r = mpirun(2, ["frame-run", TINY, "--data-parallel", "--emit-stage=sgd"])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # one rank's share of the batch: 4 of 8 rows; the loss and the weights' gradients
    # exchanged, the per-sample bias rows' (4 x 8) kept
    assert "func.func @tiny_mlp_dp_grad(%x: tensor<4x4xf32>" in out
    assert ("-> (tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x1xf32>) attributes "
            "{frame.dp_grad = \"tiny_mlp\", frame.dp_ranks = 2 : i64, frame.dp_exchange = "
            "array<i64: 1, 1, 0, 1>}") in out
    assert "func.func @tiny_mlp_dp_update(" in out
    assert "lr = 2.500000e-02 : f32" in out  # 0.05 / 2 ranks
    assert "_train_step" not in out
    assert out.count("builtin.module") == 1  # rank 0 alone prints


def test_a_batch_the_ranks_do_not_divide_is_an_error_on_every_rank() -> None:
    r = mpirun(3, ["frame-run", TINY, "--data-parallel"], timeout=120)
    assert r.returncode != 0
    for rank in range(3):
        assert (f"rank {rank}: frame-run: error: DP-002 at /model/batch: expected a batch "
                "divisible by the 3 ranks") in r.stderr, r.stderr
    assert "found 8 samples (8 = 2 x 3 + 2)" in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_a_rank_given_a_bad_input_ends_the_job_within_seconds() -> None:
    bad = str(ROOT / "testdata" / "bad" / "fe004_layer_kind.json")
    t0 = time.monotonic()
    r = mpmd([["frame-run", MNIST, "--data-parallel", "--steps", "100000"],
              ["frame-run", bad, "--data-parallel", "--steps", "100000"]], timeout=120)
    seconds = time.monotonic() - t0
    assert r.returncode != 0
    assert "rank 1: frame-run: error: " in r.stderr, r.stderr
    assert "fe004_layer_kind.json: FE-004 at /layers/0/kind" in r.stderr
    assert "Traceback" not in r.stderr
    assert seconds < 30, seconds


def test_ranks_running_different_models_are_refused() -> None:
    r = mpmd([["frame-run", TINY, "--data-parallel"],
              ["frame-run", TINY, "--data-parallel", "--lr", "0.1"]], timeout=120)
    assert r.returncode != 0
    assert ("DP-003 at model and options: expected the same model and options on every "
            "rank (rank 0's), found a different one on rank 1") in r.stderr, r.stderr


_STALL = ("from mpi4py import MPI; import time; MPI.COMM_WORLD.Get_rank(); "
          "time.sleep(120)")
_DIE = ("from mpi4py import MPI; import os, signal; MPI.COMM_WORLD.Get_rank(); "
        "os.kill(os.getpid(), signal.SIGKILL)")


def test_a_stalled_rank_times_out_the_collective() -> None:
    """Rank 1 joins the job but never reaches a collective: rank 0 gives up after
    --collective-timeout seconds (DP-004) and ends the job."""
    import sys

    t0 = time.monotonic()
    r = mpmd([["frame-run", TINY, "--data-parallel", "--collective-timeout", "3"],
              [Path(sys.executable).name, "-c", _STALL]], timeout=120)
    seconds = time.monotonic() - t0
    assert r.returncode != 0
    assert "rank 0: frame-run: error: DP-004 at the start of the job" in r.stderr, r.stderr
    assert "expected all 2 ranks to join within 3 s" in r.stderr
    assert seconds < 60, seconds


def test_a_killed_rank_ends_the_job() -> None:
    import sys

    t0 = time.monotonic()
    r = mpmd([["frame-run", TINY, "--data-parallel", "--steps", "100000"],
              [Path(sys.executable).name, "-c", _DIE]], timeout=120)
    assert r.returncode != 0
    assert "signal 9" in r.stderr or "Killed" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 60


def test_bad_timeout_values_are_refused() -> None:
    r = run_alone(["frame-run", TINY, "--data-parallel", "--collective-timeout", "-1"])
    assert r.returncode == 1
    assert ("frame-run: error: DP-005 at --collective-timeout: expected a number of "
            "seconds > 0, found '-1'") in r.stderr
    r = run_alone(["frame-run", TINY, "--collective-timeout", "5"])
    assert r.returncode == 1
    assert "--collective-timeout applies to --data-parallel runs" in r.stderr


def test_without_mpi4py_the_flag_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from frame_mlir.tools.frame_run import main

    monkeypatch.setitem(sys.modules, "mpi4py", None)  # `import mpi4py` fails
    assert main([TINY, "--data-parallel"]) == 1
    err = capsys.readouterr().err
    assert ("frame-run: error: DP-001 at --data-parallel: expected MPI: pip install "
            "'frame-mlir[mpi]' (mpi4py) and an MPI library such as Open MPI") in err
    assert "found mpi4py is not installed" in err


# ------------------------------------------------------------------------- checkpoints


@pytest.mark.parametrize("ranks", [1, 2])
def test_resume_continues_bit_identically(tmp_path: Path, ranks: int) -> None:
    """A run of 300 steps against one stopped at 200 (checkpoints every 100) and
    resumed: the same stdout, the same final weights, bit for bit."""
    def run(*extra: str) -> str:
        argv = ["frame-run", TINY, "--log-every", "10", *extra]
        r = mpirun(ranks, [*argv, "--data-parallel"]) if ranks > 1 else run_alone(argv)
        assert r.returncode == 0, r.stderr
        return r.stdout

    ck = tmp_path / "run.ckpt.npz"
    full = run("--save-weights", str(tmp_path / "full.npz"))
    run("--steps", "200", "--checkpoint-every", "100", "--checkpoint", str(ck))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.npz", "run.ckpt.npz"]
    resumed = run("--resume", str(ck), "--save-weights", str(tmp_path / "resumed.npz"))
    assert resumed == full
    a, b = _weights(tmp_path / "full.npz"), _weights(tmp_path / "resumed.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_a_checkpoint_of_another_run_is_refused(tmp_path: Path) -> None:
    ck = tmp_path / "a.ckpt.npz"
    r = run_alone(["frame-run", TINY, "--steps", "10", "--checkpoint-every", "5",
                   "--checkpoint", str(ck)])
    assert r.returncode == 0, r.stderr
    r = run_alone(["frame-run", TINY, "--lr", "0.1", "--resume", str(ck)])
    assert r.returncode == 1
    assert f"frame-run: error: CKPT-002 at {ck}: expected a checkpoint of this run" \
        in r.stderr
    (tmp_path / "junk.npz").write_bytes(b"not a checkpoint")
    r = run_alone(["frame-run", TINY, "--resume", str(tmp_path / "junk.npz")])
    assert r.returncode == 1 and "CKPT-001" in r.stderr and "Traceback" not in r.stderr
    spec = json.loads(Path(TINY).read_text())
    assert spec["training"]["steps"] == 300  # the digest leaves steps out: resumable
