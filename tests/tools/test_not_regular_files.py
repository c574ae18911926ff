"""Issue 30, defect 9: every file option of frame-run and frame-dslc, and the Python
API's weight readers, refuse a device, FIFO or directory before reading it, with the
rule, the path and what it found (`expected a regular file, found a character
device`). `/dev/zero` used to be read forever (or up to 1 GiB), a FIFO blocked until a
writer came, and `--load-weights /dev/null` said `no such file`.

Each tool runs in a process of its own with a timeout: a reader that blocks on a FIFO
must fail the test, not hang it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "testdata" / "tiny_mlp.json"
MLP = ROOT / "testdata" / "networks" / "mnist_mlp.json"


def fifo(tmp_path: Path, name: str = "pipe") -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def tool(name: str, *args: object) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from frame_mlir.tools.{name} import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                       text=True, timeout=120)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    return r


@pytest.mark.parametrize("kind", ["/dev/null", "fifo", "dir"])
def test_frame_run_v0_file_options(tmp_path: Path, kind: str) -> None:
    path = {"/dev/null": Path("/dev/null"), "fifo": fifo(tmp_path), "dir": tmp_path}[kind]
    found = {"/dev/null": "a character device", "fifo": "a FIFO", "dir": "a directory"}[kind]
    for option in ("--load-weights", "--data"):
        r = tool("frame_run", TINY, option, path)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr == (f"frame-run: error: IO-001 at {path}: cannot read the {option} "
                            f"file: expected a regular file, found {found}\n")


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_frame_run_network_file_options(tmp_path: Path, kind: str) -> None:
    path = Path(kind) if kind.startswith("/") else fifo(tmp_path)
    found = "a character device" if kind.startswith("/") else "a FIFO"
    r = tool("frame_run", MLP, "--data", path)
    assert r.returncode == 1
    assert r.stderr == (f"frame-run: error: --data {path}: IO-001: expected a regular file, "
                        f"found {found} (--data takes a .npz file, a folder of .npy files "
                        "or 'digits')\n")
    r = tool("frame_run", MLP, "--data", "digits", "--epochs", "1", "--load-weights", path)
    assert r.returncode == 1
    assert f"expected a regular file, found {found}" in r.stderr and str(path) in r.stderr
    assert "IO-001" in r.stderr


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "dir"])
def test_spec_and_network_files(tmp_path: Path, kind: str) -> None:
    path = {"/dev/zero": Path("/dev/zero"), "fifo": fifo(tmp_path), "dir": tmp_path}[kind]
    found = {"/dev/zero": "a character device", "fifo": "a FIFO", "dir": "a directory"}[kind]
    for name in ("frame_dslc", "frame_run"):
        r = tool(name, *(["--check"] if name == "frame_dslc" else []), path)
        assert r.returncode == 1
        assert "IO-001" in r.stderr and str(path) in r.stderr
        assert f"expected a regular file, found {found}" in r.stderr, r.stderr


def test_api_weight_readers(tmp_path: Path) -> None:
    """`frame.load_onnx_weights` and `Network.load_weights` (in a process of their own:
    the FIFO)."""
    pipe = fifo(tmp_path)
    code = f"""
import frame, frame_mlir.network as fnet
for path in ("/dev/zero", {str(pipe)!r}, {str(tmp_path)!r}):
    try:
        frame.load_onnx_weights(path)
    except (OSError, ValueError) as e:
        print("onnx", type(e).__name__, e)
    net = fnet.load({str(MLP)!r})
    try:
        net.load_weights(path)
    except (OSError, ValueError) as e:
        print("net", type(e).__name__, e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 6, r.stdout
    for line, found in zip(lines, ["a character device"] * 2 + ["a FIFO"] * 2
                           + ["a directory"] * 2, strict=True):
        assert f"expected a regular file, found {found}" in line, line


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_frame_opt_input(tmp_path: Path, kind: str) -> None:
    path = Path(kind) if kind.startswith("/") else fifo(tmp_path, "in.mlir")
    found = "a character device" if kind.startswith("/") else "a FIFO"
    r = tool("frame_opt", path)
    assert r.returncode == 1
    assert r.stderr == f"frame-opt: error: IO-001 at {path}: expected a regular file, " \
                       f"found {found}\n"
