"""Campaign: the fuzzer's valid Python-API programs on the cuda target.

    python tests/fuzz/cuda_campaign.py [FIRST_SEED] [COUNT]

Each program of `fzlib.api_interp.valid_program(Random(seed))` runs as in the fuzz
tests; every graph it compiles is compiled a second time for CUDA and run on the CPU
emulator with the same inputs, and each output is compared with the CPU JIT's
(relative 1e-4; non-finite values in the same places; bf16 within one unit in the last
place). Prints the counts and every mismatch or CUDA error (a scan, which the cuda target
refuses, is one). A campaign, not a CI test; docs/cuda.md quotes its last result.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import frame_mlir.runtime.executable as rx  # noqa: E402
from frame_mlir.backend.cuda.compile import compile_cuda  # noqa: E402
from frame_mlir.backend.cuda.runtime import CudaExecutable, EmulatorBackend  # noqa: E402

_compile_module = rx.compile_module
REPORT: dict[str, Any] = {"graphs": 0, "runs": 0, "mismatches": [], "cuda_errors": []}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype == np.uint16:  # bf16 bits
        return bool(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)), initial=0) <= 1)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    fin = np.isfinite(a64)
    if not np.array_equal(fin, np.isfinite(b64)):
        return False
    scale = max(1.0, float(np.abs(a64[fin]).max(initial=0)))
    return bool(np.allclose(a64[fin], b64[fin], rtol=1e-4, atol=1e-5 * scale))


class _Both:
    """The CPU runtime the API uses, plus the same module on the emulator."""

    def __init__(self, module: Any, options: Any):
        self.cpu = _compile_module(module.clone(), options=options)
        REPORT["graphs"] += 1
        self.dev: CudaExecutable | None = None
        try:
            program = compile_cuda(module.clone(), None, options=options)
            self.dev = CudaExecutable(program, EmulatorBackend(program))  # type: ignore[arg-type]
        except Exception as err:  # noqa: BLE001 - recorded
            REPORT["cuda_errors"].append(f"compile: {type(err).__name__}: {err}"[:400])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cpu, name)

    def __call__(self, name: str, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.cpu(name, *arrays)
        if self.dev is not None:
            REPORT["runs"] += 1
            try:
                for i, (a, b) in enumerate(zip(results, self.dev(name, *arrays), strict=True)):
                    if not _same(a, b):
                        REPORT["mismatches"].append(f"@{name} result {i} {a.dtype} {a.shape}")
            except Exception as err:  # noqa: BLE001 - recorded
                REPORT["cuda_errors"].append(f"run: {type(err).__name__}: {err}"[:400])
        return results


def main() -> int:
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    rx.compile_module = lambda module, **kw: _Both(module, kw.get("options"))  # type: ignore[assignment]
    from fzlib import cases
    from fzlib.api_interp import valid_program

    for seed in range(first, first + count):
        result = cases.api_program(valid_program(random.Random(seed)))
        if result["exc"]:
            print(f"seed {seed}: the program itself failed: {result['exc']}")
    print(f"{count} programs, {REPORT['graphs']} graphs, {REPORT['runs']} runs compared, "
          f"{len(REPORT['mismatches'])} mismatches, {len(REPORT['cuda_errors'])} CUDA errors")
    for line in REPORT["mismatches"] + REPORT["cuda_errors"]:
        print(" ", line)
    return 1 if REPORT["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
