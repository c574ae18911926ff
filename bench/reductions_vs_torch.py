"""Accuracy of large full reductions: frame-mlir (sequential and blocked) against
PyTorch, relative to the exact (float64) value (a measurement, not a test).

Run:  python bench/reductions_vs_torch.py

For each shape, mse_loss over standard-normal prediction and target (positive terms)
and sum over the prediction (random signs), compiled twice: with the blocked full
reduction the lowering uses above `BLOCKED_SUM_MIN` elements, and with that threshold
lifted (one sequential f32 accumulator). docs/numerics.md quotes the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import frame  # noqa: E402
from frame_mlir.dialects import frame_reduce  # noqa: E402

SHAPES = [(2_000_000,), (64, 3, 64, 64), (100_000, 1)]


def ours(p: np.ndarray, t: np.ndarray, name: str) -> tuple[float, float]:
    # A name per variant: compile() caches by graph text, which would hand back the
    # first variant's code.
    g = frame.Graph(name)
    x = g.add_graph_input(list(p.shape), frame.DType.float32)
    y = g.add_graph_input(list(p.shape), frame.DType.float32)
    g.mark_output(frame.mse_loss(g, x, y))
    g.mark_output(frame.sum(g, x, []))
    mse, total = frame.compile(g, "cpu").run([frame.from_numpy(p), frame.from_numpy(t)])
    return float(mse.numpy()), float(total.numpy())


def main() -> int:
    try:
        import torch
    except ImportError:
        print("reductions_vs_torch: needs torch (pip install -e '.[test]')", file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    print(f"{'shape':>16} {'mse seq':>9} {'blocked':>9} {'torch':>9}   "
          f"{'sum seq':>9} {'blocked':>9} {'torch':>9}")
    for shape in SHAPES:
        rng = np.random.default_rng(0)
        p = rng.standard_normal(shape).astype(np.float32)
        t = rng.standard_normal(shape).astype(np.float32)
        exact_mse = float(np.mean((p.astype(np.float64) - t) ** 2))
        exact_sum = float(p.astype(np.float64).sum())
        blocked = ours(p, t, "blocked")
        threshold = frame_reduce.BLOCKED_SUM_MIN
        frame_reduce.BLOCKED_SUM_MIN = 1 << 62
        try:
            sequential = ours(p, t, "sequential")
        finally:
            frame_reduce.BLOCKED_SUM_MIN = threshold
        tm = torch.nn.functional.mse_loss(torch.from_numpy(p), torch.from_numpy(t)).item()
        ts = torch.from_numpy(p).sum().item()

        def rel(v: float, exact: float) -> str:
            return f"{abs(v - exact) / abs(exact):9.1e}"

        print(f"{str(list(shape)):>16} {rel(sequential[0], exact_mse)} "
              f"{rel(blocked[0], exact_mse)} {rel(tm, exact_mse)}   "
              f"{rel(sequential[1], exact_sum)} {rel(blocked[1], exact_sum)} "
              f"{rel(ts, exact_sum)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
