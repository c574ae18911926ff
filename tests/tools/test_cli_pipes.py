"""The CLIs under a reader that has gone away (`frame-opt big.mlir | head`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [
    ["frame_run", str(ROOT / "testdata" / "tiny_mlp.json"), "--emit-stage=frame"],
    ["frame_run", str(ROOT / "testdata" / "tiny_mlp.json")],
    ["frame_opt", str(ROOT / "lit_tests" / "passes" / "frame-autodiff.mlir")],
])
def test_closed_stdout_is_a_quiet_exit(args: list[str]) -> None:
    # The read end is closed before the tool writes (it is still importing), so its
    # first write fails with EPIPE, deterministically: no race with a reader.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", f"frame_mlir.tools.{args[0]}", *args[1:]],
                              stdout=write_end, stderr=subprocess.PIPE, timeout=120,
                              check=False)
    finally:
        os.close(write_end)
    assert proc.stderr.decode() == ""
    assert proc.returncode == 141
