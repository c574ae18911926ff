"""Running the tools under `mpirun` in tests.

`mpirun(n, argv)` runs `argv` (a tool of this venv and its arguments) as an n-rank Open
MPI job with `--oversubscribe` (more ranks than the 2 cores of the CI machine) and
returns the completed process. Every test here needs Open MPI's `mpirun` and mpi4py:
without them they skip, unless `FRAME_REQUIRE_MPI=1` (set by `.ci/run`, which installs
both) turns the skip into a failure, so that CI cannot pass by skipping them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def _why_not() -> str | None:
    if shutil.which("mpirun") is None:
        return "no mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)"
    try:
        from mpi4py import MPI  # noqa: F401
    except ImportError as e:
        return f"mpi4py unusable: {e} (pip install 'frame-mlir[mpi]')"
    return None


WHY_NOT = _why_not()
if WHY_NOT is not None and os.environ.get("FRAME_REQUIRE_MPI") == "1":
    raise RuntimeError(f"FRAME_REQUIRE_MPI=1 but MPI is not usable: {WHY_NOT}")

#: Mark a test module: `pytestmark = needs_mpi`.
needs_mpi = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


def mpi_env(**extra: str) -> dict[str, str]:
    """The environment of an `mpirun` from a test: this venv's tools first on PATH, Open
    MPI allowed to run as root (CI runs as root), and one thread per rank unless asked."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           # no warnings about the missing high-speed transports of a VM
           "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_btl_base_warn_component_unused": "0"}
    env.update(extra)
    return env


def mpirun(n: int, argv: Sequence[str], *, timeout: float = 300, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv` on `n` ranks; argv[0] names a tool of this venv (`frame-run`)."""
    cmd = ["mpirun", "--oversubscribe", "-n", str(n), str(BIN / argv[0]), *argv[1:]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          cwd=cwd or ROOT, env=env or mpi_env(), check=False)


def mpmd(parts: Sequence[Sequence[str]], *, timeout: float = 300,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One job of several programs (`mpirun -n 1 A : -n 1 B`): rank i runs parts[i]."""
    cmd = ["mpirun", "--oversubscribe"]
    for i, argv in enumerate(parts):
        cmd += ([":"] if i else []) + ["-n", "1", str(BIN / argv[0]), *argv[1:]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=env or mpi_env(), check=False)


def run_alone(argv: Sequence[str], *, timeout: float = 300
              ) -> subprocess.CompletedProcess[str]:
    """The same tool as one ordinary process (no mpirun)."""
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=mpi_env(), check=False)


def losses(stdout: str, word: str = "step") -> list[float]:
    """The loss of every `<word> N loss V` line."""
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == word and parts[2] == "loss":
            out.append(float(parts[3]))
    return out


def assert_trajectory_close(single: Sequence[float], parallel: Sequence[float],
                            rel: float = 1e-6, ulps_of_one: float = 5e-7) -> None:
    """Losses of N ranks against one process, step by step: |a - b| <= rel * |a| +
    2 * sqrt(|a|) * ulps_of_one.

    Why this bound (docs/distributed.md, docs/numerics.md): the ranks sum the gradient
    over their shares of the batch and the allreduce adds the shares, a different order
    of the same float32 sums, so the parameters drift apart by a few ulps. A loss
    L = mean(r^2) moves by |dL| <= 2 sqrt(L) max|dr| when the residuals r move by dr; a
    few ulps of the predictions (about 1) is ~5e-7 of dr. The first term is the
    issue's relative 1e-6 per step; the second dominates only once L is small."""
    assert len(single) == len(parallel) and single
    for i, (a, b) in enumerate(zip(single, parallel, strict=True)):
        bound = rel * abs(a) + 2 * abs(a) ** 0.5 * ulps_of_one
        assert abs(a - b) <= bound, f"step {i}: {a} vs {b} (|d| {abs(a - b):.3g} > {bound:.3g})"
