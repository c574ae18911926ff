"""`frame-dslc --emit NET.json --out DIR`: the C++ training program of a JSON network
prints frame-run's lines and writes its weights, byte for byte.

Each network is emitted with `frame-dslc --emit` (in process), built with g++ directly
(-O2, no FP contraction, the vector width of the kernels: what its CMakeLists asks,
faster than CMake) while the JIT trains the same network through `frame-run NET --data
DIR` on the same `.npy` files; then stdout and the `.dlp` files are compared as bytes.
The three cover LeNet with Adam on files (float64 pixels, int64 labels, a dropped
partial batch, another seed), the digits MLP with SGD (torch semantics, a step schedule)
on the random batch, and a BatchNorm network of the reference's style (its running
statistics saved too) with a cosine schedule. The program's and the tool's errors are
checked for their rule ids (EMIT-001, EMIT-002, NPY-001, IO-001), never a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frame_mlir.backend.cpp.cmake import prefer_vector_width_flags
from frame_mlir.frontends.network.data import InputDecl, random_feed
from frame_mlir.frontends.network.loader import load_network
from frame_mlir.frontends.network.lower import label_classes
from frame_mlir.passes.pipeline import vector_lanes
from frame_mlir.tools import frame_dslc, frame_run

CXX = shutil.which("g++") or shutil.which("c++")
NETWORKS = Path(__file__).resolve().parents[2] / "testdata" / "networks"

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler")


@dataclass(frozen=True)
class Case:
    """One network: the options of the emit (and of frame-run), how the program runs."""

    net: str
    train: tuple[str, ...]  # solver, schedule and seed options: both tools take them
    run: tuple[str, ...]  # the program's options
    epochs: int  # frame-run's --epochs giving the same run
    files: bool  # .npy files of our own; else the random batch


CASES = {
    "lenet": Case("lenet_digits", ("--solver", "adam", "--lr", "0.002", "--seed", "3"),
                  ("--epochs", "2"), 2, True),
    "mlp": Case("mnist_mlp", ("--semantics", "torch", "--momentum", "0.5", "--lr", "0.05",
                              "--weight-decay", "0.001", "--schedule", "step:2:0.5"),
                ("--steps", "4"), 4, False),  # one batch: an epoch is a step
    "batchnorm": Case("reference_style", ("--lr", "0.001", "--schedule", "cosine"),
                      ("--epochs", "3"), 3, False),
}


def run(capsys: pytest.CaptureFixture[str], main: Any, *args: object) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, out, err


@dataclass
class Build:
    exe: Path
    proc: subprocess.Popen[str]

    def wait(self) -> Path:
        """The executable, once g++ has built it."""
        if self.proc.returncode is None:
            log, _ = self.proc.communicate()
            assert self.proc.returncode == 0, f"g++ failed:\n{log}"
        assert self.proc.returncode == 0, "g++ failed"
        return self.exe


def emit_and_build(case: Case, folder: Path) -> Build:
    """`frame-dslc --emit` (one thread, as the JIT below), then g++ in the background."""
    rc = frame_dslc.main(["--emit", str(NETWORKS / f"{case.net}.json"), "--out",
                          str(folder), "--threads", "1", *case.train])
    assert rc == 0
    assert sorted(p.name for p in folder.iterdir()) == ["CMakeLists.txt", "main.cpp"]
    cxx = CXX or "g++"
    exe = folder / case.net
    width = prefer_vector_width_flags(cxx, 32 * vector_lanes(None))
    proc = subprocess.Popen([cxx, "-std=c++17", "-O2", "-march=native", "-ffp-contract=off",
                             *width, "-Wall", "-Wextra", "-Werror", str(folder / "main.cpp"),
                             "-o", str(exe), "-pthread"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return Build(exe, proc)


def write_data(case: Case, folder: Path) -> list[Path]:
    """DIR/<input>.npy: our own samples (not a multiple of the batch, stored as float64
    and int64 so the program converts them as frame-run does), or the random batch."""
    spec = load_network(NETWORKS / f"{case.net}.json")
    folder.mkdir()
    decls = [InputDecl(i.name, i.shape, i.dtype) for i in spec.inputs]
    if case.files:
        rng = np.random.default_rng(7)
        classes = label_classes(spec)
        arrays = {d.name: (rng.integers(0, classes[d.name], 150) if d.dtype == "int"
                           else rng.uniform(0.0, 1.0, (150, *d.shape[1:])))
                  for d in decls}
    else:
        seed = int(case.train[case.train.index("--seed") + 1]) if "--seed" in case.train \
            else 0
        arrays = random_feed(decls, label_classes(spec), seed)
    paths = []
    for d in decls:
        np.save(folder / f"{d.name}.npy", arrays[d.name])
        paths.append(folder / f"{d.name}.npy")
    return paths


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Build]:
    """Every case's program, emitted, its build started (g++ runs while the JIT trains)."""
    return {name: emit_and_build(case, tmp_path_factory.mktemp(name))
            for name, case in CASES.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_program_prints_the_jit_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                      programs: dict[str, Build], name: str) -> None:
    case = CASES[name]
    build = programs[name]
    files = write_data(case, tmp_path / "data")
    rc, jit_out, err = run(capsys, frame_run.main, NETWORKS / f"{case.net}.json", "--data",
                           tmp_path / "data", "--epochs", case.epochs, "--threads", "1",
                           *case.train, "--save-weights", tmp_path / "jit.dlp")
    assert rc == 0, err
    assert jit_out.count("\n") == case.epochs + 1
    cmd = [str(build.wait()), *case.run, "--save-weights", str(tmp_path / "cpp.dlp")]
    cmd += [str(f) for f in files] if case.files else []
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == jit_out
    assert (tmp_path / "cpp.dlp").read_bytes() == (tmp_path / "jit.dlp").read_bytes()
    if case.files:  # 150 samples in batches of 64: both say so on stderr
        assert "22 of 150 training samples form no full batch" in proc.stderr


def test_program_errors(programs: dict[str, Build], tmp_path: Path) -> None:
    """Every bad argument and file: one line with its rule id, exit 2 (usage) or 1."""
    mlp_program = programs["mlp"].wait()
    good_data = np.zeros((64, 1, 8, 8), np.float32)
    good_label = np.arange(64) % 10
    files = {"data.npy": good_data, "label.npy": good_label,
             "shape.npy": np.zeros((64, 64), np.float32),
             "nan.npy": np.full((64, 1, 8, 8), np.nan),
             "range.npy": np.full(64, 10), "frac.npy": np.full(64, 0.5),
             "few.npy": np.zeros((3, 1, 8, 8)), "few_label.npy": np.zeros(3, np.int32),
             "bool.npy": np.zeros(64, bool)}
    for fname, a in files.items():
        np.save(tmp_path / fname, a)
    (tmp_path / "text.npy").write_text("not numpy\n")
    f = {k: str(tmp_path / k) for k in [*files, "text.npy"]}
    fifo = tmp_path / "fifo.npy"
    os.mkfifo(fifo)
    cases = [
        (["--epochs", "0"], 2, "EMIT-002 at --epochs: expected an integer in [1, 2147483647], "
         "found '0'"),
        (["--steps", "x"], 2, "EMIT-002 at --steps"),
        (["--epochs", "1", "--steps", "2"], 2, "EMIT-002 at --steps: expected --epochs or "
         "--steps, found both"),
        (["--save-weights", "w.npz"], 2, "EMIT-002 at --save-weights: expected a file name "
         "ending in .dlp"),
        (["--data", "x"], 2, "EMIT-002 at --data"),
        (["--epochs"], 2, "EMIT-002 at --epochs: expected a value"),
        ([f["data.npy"]], 2, "EMIT-002 at " + f["data.npy"] + ": expected 2 .npy files"),
        ([f["shape.npy"], f["label.npy"]], 1, "NPY-001 at " + f["shape.npy"] +
         ": expected samples of shape [1, 8, 8] for the input 'data', found sample shape [64]"),
        ([f["nan.npy"], f["label.npy"]], 1, "NPY-001 at " + f["nan.npy"] +
         ": expected finite values"),
        ([f["data.npy"], f["range.npy"]], 1, "NPY-001 at " + f["range.npy"] +
         ": expected labels in [0, 10) for the input 'label', found 10 at element 0"),
        ([f["data.npy"], f["frac.npy"]], 1, "NPY-001 at " + f["frac.npy"] +
         ": expected integral values"),
        ([f["data.npy"], f["bool.npy"]], 1, "NPY-001 at " + f["bool.npy"]),
        ([f["text.npy"], f["label.npy"]], 1, "NPY-001 at " + f["text.npy"] +
         ": expected a .npy array for the input 'data' (numpy.save), found another kind"),
        ([f["data.npy"], f["few_label.npy"]], 1, "NPY-001 at " + f["few_label.npy"] +
         ": expected 64 samples"),
        ([f["few.npy"], f["few_label.npy"]], 1, "NPY-001 at " + f["few.npy"] +
         ": expected at least one batch of 64 samples"),
        ([str(tmp_path / "missing.npy"), f["label.npy"]], 1,
         "IO-001 at " + str(tmp_path / "missing.npy")),
        (["--save-weights", str(tmp_path / "no" / "w.dlp")], 1,
         "IO-001 at " + str(tmp_path / "no" / "w.dlp")),
        # not regular files: refused unread (a FIFO would block, /dev/zero never end)
        (["/dev/zero", f["label.npy"]], 1,
         "IO-001 at /dev/zero: expected a regular file, found a character device"),
        ([str(tmp_path), f["label.npy"]], 1,
         f"IO-001 at {tmp_path}: expected a regular file, found a directory"),
        ([str(fifo), f["label.npy"]], 1,
         f"IO-001 at {fifo}: expected a regular file, found a FIFO"),
    ]
    for args, status, message in cases:
        proc = subprocess.run([str(mlp_program), *args], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == status, (args, proc.stderr)
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"mnist_mlp: error: {message}"), (args, last)
    proc = subprocess.run([str(mlp_program), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: mnist_mlp [--epochs N | --steps N] "
                                  "[--save-weights FILE.dlp] [--help] [data.npy label.npy]\n")
    # The same data as files and as the random batch it is: the same bytes.
    feed = random_feed([InputDecl("data", (64, 1, 8, 8), "float"),
                        InputDecl("label", (64,), "int")], {"label": 10}, 0)
    for k, v in feed.items():
        np.save(tmp_path / f"r_{k}.npy", v)
    plain = subprocess.run([str(mlp_program), "--steps", "2"], capture_output=True,
                           text=True, check=True).stdout
    given = subprocess.run([str(mlp_program), "--steps", "2", str(tmp_path / "r_data.npy"),
                            str(tmp_path / "r_label.npy")], capture_output=True, text=True,
                           check=True).stdout
    assert plain == given and plain.count("\n") == 3


def test_dslc_refuses_run_flags_for_a_network(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    net = NETWORKS / "mnist_mlp.json"
    rc, out, err = run(capsys, frame_dslc.main, "--emit", net, "--out", tmp_path / "p",
                       "--steps", "3", "--data", "digits", "--save-weights", "w.npz",
                       "--lr", "-1")
    assert rc == 1 and out == ""
    assert [line.split(":")[2].strip() for line in err.splitlines()] == [
        "EMIT-001 at --steps", "EMIT-001 at --data", "EMIT-001 at --save-weights",
        "EMIT-001 at --lr"]
    assert not (tmp_path / "p").exists()
    rc, _, err = run(capsys, frame_dslc.main, "--emit", net, "--out", tmp_path / "p",
                     "--solver", "adam", "--momentum", "0.5")
    assert rc == 1 and "EMIT-001 at --momentum" in err
    rc, _, err = run(capsys, frame_dslc.main, "--check", net, "--solver", "adam")
    assert rc == 2 and "--solver applies to --emit of a JSON network only" in err
    tiny = NETWORKS.parent / "tiny_mlp.json"
    rc, _, err = run(capsys, frame_dslc.main, "--emit", tiny, "--out", tmp_path / "v0",
                     "--seed", "1")
    assert rc == 2 and "--seed applies to JSON network files only" in err
    rc, _, err = run(capsys, frame_dslc.main, "--run", net)
    assert rc == 1 and "--run takes v0 model specs" in err
