"""The operator conformance cases (tests/network/test_conformance.py) on the cuda
target: every network the harness builds compiles its functions as CUDA kernels and
runs them on the CPU emulator (`--target cuda-emulator`), against the same
PyTorch-generated references and tolerance rule.

    python tests/network/cuda_conformance.py            # CI's subset of the cases
    FRAME_CONFORMANCE=full python tests/network/cuda_conformance.py    # all of them

A campaign, not a CI test (the emulator runs every thread of every kernel on the CPU):
it runs in this process (one worker), prints the per-operator table and each failing
case's problems. docs/cuda.md quotes its last result.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["CONFORMANCE_WORKERS"] = "1"  # in this process: the patch below applies

import test_conformance as conformance  # noqa: E402

import frame_mlir.network  # noqa: E402

_load = frame_mlir.network.load


def _load_on_device(*args: object, **kwargs: object) -> object:
    return _load(*args, **kwargs, target=os.environ.get("CUDA_TARGET", "cuda-emulator"))  # type: ignore[arg-type]


frame_mlir.network.load = _load_on_device  # type: ignore[assignment]

if __name__ == "__main__":
    start = time.perf_counter()
    if os.environ.get("FRAME_CONFORMANCE", "").strip() == "full":
        conformance.FULL = True
    print(conformance.conformance_table() if conformance.FULL else "")
    failed = 0
    for key, (problems, _) in conformance.compute(conformance.FILES).items():
        if problems:
            failed += 1
            print(f"{key}: {'; '.join(problems)}")
    print(f"{failed} failing case(s); wall {time.perf_counter() - start:.1f} s")
