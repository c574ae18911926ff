"""`mpirun -n N frame-run NET.json --data digits --data-parallel` for JSON networks against
one process, the job's failures, and `--checkpoint-every` / `--resume` for networks.

Two ranks against one process on the global batch: every epoch's loss within
`assert_trajectory_close` (why that bound: its docstring; the gap measured here is far
below it, a few units of the 9th digit), the final parameters within 1e-5 of the largest
element of each tensor, the held-out accuracy and the output's lines the same.
Compiles dominate these runs (the xDSL pipeline runs for every network), so the runs
are few and short: one or two epochs, and the reference runs of mnist_mlp are shared
by the tests of this file (`mnist_runs`).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpi_helpers import ROOT, assert_trajectory_close, losses, mpirun, needs_mpi, run_alone

pytestmark = needs_mpi

MNIST = str(ROOT / "testdata" / "networks" / "mnist_mlp.json")
LENET = str(ROOT / "testdata" / "networks" / "lenet_digits.json")

#: The shared settings of the mnist_mlp runs: Adam, whose state (two moments and the
#: step count of its bias corrections) is the most a checkpoint has to carry.
MNIST_ARGS = ["--data", "digits", "--epochs", "2", "--solver", "adam", "--lr", "0.003"]


def _weights(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def _line_shapes(stdout: str) -> list[str]:
    """The output without the loss values: `epoch 1 loss`, ..., `final_loss`."""
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        out.append(" ".join(parts[:3] + parts[4:]) if parts[0] == "epoch" else parts[0])
    return out


def _assert_close_weights(one: Path, two: Path) -> None:
    a, b = _weights(one), _weights(two)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].shape == b[k].shape
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=1e-5 * np.abs(a[k]).max(),
                                   err_msg=k)


def _assert_same_weights(one: Path, two: Path) -> None:
    a, b = _weights(one), _weights(two)
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def _assert_matches_one_process(one: Any, two: Any) -> None:
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    # rank 0 alone prints: the lines of one process, accuracies included
    assert _line_shapes(two.stdout) == _line_shapes(one.stdout)
    assert_trajectory_close(losses(one.stdout, "epoch"), losses(two.stdout, "epoch"))
    # the last line: `final_loss V`, the last step's loss
    assert_trajectory_close([float(one.stdout.split()[-1])], [float(two.stdout.split()[-1])])


@pytest.fixture(scope="module")
def mnist_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """mnist_mlp for two epochs as one process (writing a checkpoint after epoch 2) and
    on two ranks: the references of this file's tests."""
    d = tmp_path_factory.mktemp("mnist")
    one = run_alone(["frame-run", MNIST, *MNIST_ARGS, "--save-weights", str(d / "one.npz"),
                     "--checkpoint-every", "2", "--checkpoint", str(d / "one.ckpt.npz")])
    two = mpirun(2, ["frame-run", MNIST, *MNIST_ARGS, "--data-parallel",
                     "--save-weights", str(d / "two.npz")])
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    return {"dir": d, "one": one, "two": two}


def test_mnist_mlp_two_ranks_match_one_process(mnist_runs: dict[str, Any]) -> None:
    d = mnist_runs["dir"]
    one, two = mnist_runs["one"], mnist_runs["two"]
    _assert_matches_one_process(one, two)
    assert len(losses(two.stdout, "epoch")) == 2
    _assert_close_weights(d / "one.npz", d / "two.npz")
    # rank 0 writes the notes and the summary once
    assert two.stderr.count("dropped each epoch") == 1
    assert two.stderr.count("frame-run: mnist_mlp: compiled in") == 1


def test_lenet_two_ranks_match_one_process(tmp_path: Path) -> None:
    """The conv network (SGD, momentum and weight decay: the defaults), one epoch."""
    args = ["frame-run", LENET, "--data", "digits", "--lr", "0.05"]
    one = run_alone([*args, "--save-weights", str(tmp_path / "one.npz")])
    two = mpirun(2, [*args, "--data-parallel", "--save-weights", str(tmp_path / "two.npz")])
    _assert_matches_one_process(one, two)
    _assert_close_weights(tmp_path / "one.npz", tmp_path / "two.npz")


def test_one_rank_is_bit_identical_to_a_plain_run(mnist_runs: dict[str, Any],
                                                  tmp_path: Path) -> None:
    """One rank compiles one process's network and update function (no 1/N scale is
    emitted) and its allreduce is no operation: the same bits."""
    d = mnist_runs["dir"]
    alone = run_alone(["frame-run", MNIST, *MNIST_ARGS, "--data-parallel",
                       "--save-weights", str(tmp_path / "w.npz")])
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout == mnist_runs["one"].stdout
    _assert_same_weights(d / "one.npz", tmp_path / "w.npz")


def test_resume_alone_is_bit_identical(mnist_runs: dict[str, Any], tmp_path: Path) -> None:
    """A run stopped after epoch 1 and resumed prints the uninterrupted run's lines
    (epoch 1's from the checkpoint) and ends with its weights, bit for bit."""
    ckpt = tmp_path / "run.ckpt.npz"
    first = run_alone(["frame-run", MNIST, *MNIST_ARGS[:2], "--epochs", "1",
                       *MNIST_ARGS[4:], "--checkpoint-every", "1", "--checkpoint", str(ckpt)])
    assert first.returncode == 0, first.stderr
    assert ckpt.is_file()
    rest = run_alone(["frame-run", MNIST, *MNIST_ARGS, "--resume", str(ckpt),
                      "--save-weights", str(tmp_path / "w.npz")])
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout == mnist_runs["one"].stdout
    _assert_same_weights(mnist_runs["dir"] / "one.npz", tmp_path / "w.npz")


def test_resume_data_parallel_is_bit_identical(mnist_runs: dict[str, Any],
                                               tmp_path: Path) -> None:
    """The same on two ranks: rank 0 writes the checkpoint, every rank resumes from it."""
    ckpt = tmp_path / "run.ckpt.npz"
    first = mpirun(2, ["frame-run", MNIST, *MNIST_ARGS[:2], "--epochs", "1",
                       *MNIST_ARGS[4:], "--data-parallel", "--checkpoint-every", "1",
                       "--checkpoint", str(ckpt)])
    assert first.returncode == 0, first.stderr
    two = mnist_runs["two"]
    assert first.stdout.splitlines()[0] == two.stdout.splitlines()[0]
    rest = mpirun(2, ["frame-run", MNIST, *MNIST_ARGS, "--data-parallel", "--resume",
                      str(ckpt), "--save-weights", str(tmp_path / "w.npz")])
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout == two.stdout
    _assert_same_weights(mnist_runs["dir"] / "two.npz", tmp_path / "w.npz")


def test_batch_the_ranks_do_not_divide_is_dp002() -> None:
    r = mpirun(3, ["frame-run", MNIST, "--data", "digits", "--data-parallel"])
    assert r.returncode == 1
    assert "DP-002 at /inputs/0/shape/0: expected a batch divisible by the 3 ranks" in r.stderr
    assert "found 64 samples (64 = 21 x 3 + 1)" in r.stderr
    assert "rank 0: frame-run: error:" in r.stderr
    assert r.stdout == ""


def test_bad_checkpoints_are_refused(mnist_runs: dict[str, Any], tmp_path: Path) -> None:
    """Not a checkpoint: CKPT-001; one of another run (another seed): CKPT-002; one
    whose arrays do not fit the network: CKPT-001; each before anything is compiled."""
    garbage = tmp_path / "garbage.npz"
    garbage.write_text("not a checkpoint")
    r = run_alone(["frame-run", MNIST, *MNIST_ARGS, "--resume", str(garbage)])
    assert r.returncode == 1 and "error: CKPT-001 at" in r.stderr, r.stderr
    good = mnist_runs["dir"] / "one.ckpt.npz"
    r = run_alone(["frame-run", MNIST, *MNIST_ARGS, "--seed", "1", "--resume", str(good)])
    assert r.returncode == 1, r.stderr
    assert "error: CKPT-002 at" in r.stderr and "trained with different settings" in r.stderr
    with np.load(good) as z:  # the same run's meta, one solver state missing
        arrays = {k: z[k] for k in z.files if k != "state/exp_avg/fc2.1"}
    np.savez(tmp_path / "partial.npz", **arrays)
    r = run_alone(["frame-run", MNIST, *MNIST_ARGS, "--resume", str(tmp_path / "partial.npz")])
    assert r.returncode == 1, r.stderr
    assert "CKPT-001 at" in r.stderr and "state/exp_avg/fc2.1" in r.stderr
    # in a job, every rank says so and the job ends with the same status
    r = mpirun(2, ["frame-run", MNIST, *MNIST_ARGS, "--lr", "0.5", "--data-parallel",
                   "--resume", str(good)])
    assert r.returncode == 1
    assert "rank 0: frame-run: error: CKPT-002" in r.stderr


# -- losses that are sums over the batch, or no function of it -------------------------

#: A small classifier whose objective is a sum over the batch (NLLLoss reduce sum: its
#: weight is multiplied by N on the ranks) plus a penalty on a Parameter (the same on
#: every rank: averaged); the held-out accuracy comes from the NLLLoss's scores.
SUM_NET = {
    "inputs": [{"name": "data", "shape": [16, 64]},
               {"name": "label", "shape": [16], "dtype": "int"}],
    "outputs": [{"name": "nll", "loss_weight": 1.0}, {"name": "penalty", "loss_weight": 0.5}],
    "operators": [
        {"name": "fc1", "type": "InnerProduct", "inputs": ["data"], "outputs": ["fc1"],
         "options": {"outputs": 24, "activation": "relu"}},
        {"name": "fc2", "type": "InnerProduct", "inputs": ["fc1"], "outputs": ["fc2"],
         "options": {"outputs": 10}},
        {"name": "shift", "type": "Parameter", "inputs": [], "outputs": ["shift"],
         "options": {"shape": [10]}},
        {"name": "scores", "type": "Elementwise", "inputs": ["fc2", "shift"],
         "outputs": ["scores"]},
        {"name": "logp", "type": "Softmax", "inputs": ["scores"], "outputs": ["logp"],
         "options": {"log": True}},
        {"name": "nll", "type": "NLLLoss", "inputs": ["logp", "label"], "outputs": ["nll"],
         "options": {"reduce": "sum"}},
        {"name": "penalty", "type": "Reduction", "inputs": ["shift"], "outputs": ["penalty"],
         "options": {"method": "sumsq"}},
    ],
}


def test_sum_and_penalty_losses_match_one_process(tmp_path: Path) -> None:
    net = tmp_path / "sum_net.json"
    net.write_text(json.dumps(SUM_NET))
    args = ["frame-run", str(net), "--data", "digits", "--lr", "0.005"]
    one = run_alone([*args, "--save-weights", str(tmp_path / "one.npz")])
    two = mpirun(2, [*args, "--data-parallel", "--save-weights", str(tmp_path / "two.npz")])
    _assert_matches_one_process(one, two)
    _assert_close_weights(tmp_path / "one.npz", tmp_path / "two.npz")


def test_loss_reductions() -> None:
    """How each loss combines over the ranks, and the local network's weights."""
    from frame_mlir.frontends.network.data_parallel import local_network_spec, loss_reductions
    from frame_mlir.frontends.network.loader import network_from_doc
    from frame_mlir.runtime.distributed import DistributedError

    spec = network_from_doc(SUM_NET)
    red = loss_reductions(spec)
    assert red == {"nll": "sum", "penalty": "mean"}
    local = local_network_spec(spec, 4, red)
    assert [i.shape for i in local.inputs] == [(4, 64), (4,)]
    assert [o.loss_weight for o in local.outputs] == [4.0, 0.5]
    assert local_network_spec(spec, 1, red) is spec
    with pytest.raises(DistributedError, match="DP-002"):
        local_network_spec(spec, 3, red)
    doc = json.loads(json.dumps(SUM_NET))
    doc["operators"][-1] = {"name": "penalty", "type": "Reduction", "inputs": ["logp"],
                            "outputs": ["penalty"], "options": {"dims": [1, 0]}}
    assert loss_reductions(network_from_doc(doc))["penalty"] == "sum"
    doc["operators"][-1]["options"] = {"method": "mean"}
    assert loss_reductions(network_from_doc(doc))["penalty"] == "mean"
    doc["operators"][-1] = {"name": "penalty", "type": "Reduction", "inputs": ["logp"],
                            "outputs": ["penalty"], "options": {"start_axis": 1}}
    doc["inputs"][0]["shape"] = [1, 64]  # a batch of 1, so that the loss is a scalar
    doc["inputs"][1]["shape"] = [1]
    with pytest.raises(ValueError, match="neither a mean nor a sum over the batch"):
        loss_reductions(network_from_doc(doc))


# -- BatchNorm ------------------------------------------------------------------------

BN_NET = {
    "inputs": [{"name": "data", "shape": [16, 64]},
               {"name": "label", "shape": [16], "dtype": "int"}],
    "outputs": ["loss"],
    "operators": [
        {"name": "fc1", "type": "InnerProduct", "inputs": ["data"], "outputs": ["fc1"],
         "options": {"outputs": 24}},
        {"name": "bn1", "type": "BatchNorm", "inputs": ["fc1"], "outputs": ["bn1"]},
        {"name": "relu1", "type": "Activation", "inputs": ["bn1"], "outputs": ["bn1"],
         "options": {"activation": "relu"}},
        {"name": "fc2", "type": "InnerProduct", "inputs": ["bn1"], "outputs": ["fc2"],
         "options": {"outputs": 10}},
        {"name": "loss", "type": "SoftmaxWithLoss", "inputs": ["fc2", "label"],
         "outputs": ["loss"]},
    ],
}

#: Run on every rank: DpTrainer steps against a plain network of the local batch on
#: each rank's rows -- the running statistics are the ranks' mean, exactly (the sum
#: and the 1/2 are exact); the parameters follow the mean gradient; the printed loss is
#: the mean of the ranks' losses; and the ranks' parameters stay identical.
BN_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from frame_mlir.frontends.network.loader import network_from_doc
    from frame_mlir.frontends.network.data_parallel import (DpTrainer, local_network_spec,
                                                  loss_reductions, rank_feed)
    from frame_mlir.frontends.network.model import SGD, Network
    from frame_mlir.runtime import distributed

    job = distributed.start("bn-test", 120.0)
    spec = network_from_doc(json.loads(open(sys.argv[1]).read()))
    red = loss_reductions(spec)
    local = local_network_spec(spec, job.size, red)
    net, ref = Network(local, seed=0), Network(local, seed=0)
    trainer = DpTrainer(net, SGD(0.1), job, red, {"loss": 1.0})
    rng = np.random.default_rng(0)
    for step in range(3):
        feed = {"data": rng.standard_normal((16, 64), dtype=np.float32),
                "label": rng.integers(0, 10, 16).astype(np.int32)}
        mine = rank_feed(feed, job.rank, job.size)
        before = net.parameters()
        ref.set_parameters(before)
        outs, grads = ref.gradients(mine, update_statistics=True)
        stats = {n: ref.parameters()[n] for n in ("bn1.0", "bn1.1")}
        loss = trainer.step(mine)
        after = net.parameters()
        every = job.comm.allgather((outs["loss"][0], grads, stats, after))
        assert all(all(np.array_equal(after[k], o[3][k]) for k in after) for o in every)
        for n in stats:
            mean = (every[0][2][n] + every[1][2][n]) * np.float32(0.5)
            assert np.array_equal(after[n], mean), n
        for n in grads:
            g = (every[0][1][n] + every[1][1][n]) * np.float32(0.5)
            np.testing.assert_allclose(after[n], before[n] - np.float32(0.1) * g,
                                       rtol=1e-6, atol=1e-7, err_msg=n)
        assert abs(loss - (every[0][0] + every[1][0]) / 2) <= 1e-6 * abs(loss)
    sys.stderr.write(f"rank {job.rank} OK\\n")  # stdout is rank 0's alone
""")


def test_batch_norm_statistics_are_the_ranks_mean(tmp_path: Path) -> None:
    net = tmp_path / "bn.json"
    net.write_text(json.dumps(BN_NET))
    script = tmp_path / "bn_check.py"
    script.write_text(BN_SCRIPT)
    r = mpirun(2, ["python", str(script), str(net)])
    assert r.returncode == 0, r.stderr
    assert "rank 0 OK" in r.stderr and "rank 1 OK" in r.stderr
    # the command line says that BatchNorm uses each rank's local batch
    cli = mpirun(2, ["frame-run", str(net), "--data", "digits", "--data-parallel"])
    assert cli.returncode == 0, cli.stderr
    assert cli.stderr.count("BatchNorm (bn1) normalises with each rank's local batch of "
                            "8 samples") == 1
    assert [ln.split()[0] for ln in cli.stdout.splitlines()] == ["epoch", "final_loss"]
