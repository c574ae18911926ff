"""How close a frame-mlir training run is to PyTorch, step by step (a measurement, not a test).

Run:  python bench/numerics_vs_torch.py [spec.json]   (default testdata/tiny_mlp.json)

Trains the spec with frame-mlir and with three PyTorch loops that start from the
identical initial values (single-threaded, plain `p -= lr * p.grad`):

- torch A: float32, `inp @ W + b` per layer, `F.mse_loss`;
- torch B: float32, `addmm(b, inp, W)` / `mm` per layer, `((p - t) ** 2).mean()` -- the
  same model and the same float32 semantics, summed and fused differently inside MKL;
- torch f64: torch A in float64, the closest thing to the exact trajectory.

It prints, at every logged step, the relative loss differences ours vs A, A vs B, ours
vs f64 and A vs f64, then the maxima over all steps. A vs B is the spread between two
equally valid float32 PyTorch programs: the floor below which no float32 implementation
can be expected to agree with "PyTorch". Two more columns split ours vs A: "fwd only"
compares our loss with torch A's forward pass run on *our* parameters of that step (the
rounding of one forward pass), "drift only" compares that with torch A's own loss (how
far the two parameter trajectories have moved apart). docs/numerics.md quotes the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from frame_mlir.frontends.spec.initial_values import InitialValues, generate_initial_values  # noqa: E402
from frame_mlir.frontends.spec.spec_v0 import load_spec  # noqa: E402
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session, logged_steps  # noqa: E402


def torch_loss(torch: Any, doc: dict[str, Any], x: Any, target: Any, params: dict[str, Any],
               fused: bool) -> Any:
    """The spec's loss as a PyTorch graph (formulation A, or B when `fused`)."""
    acts = {doc["inputs"][0]["name"]: x}
    for layer in doc["layers"]:
        inp, w = acts[layer["input"]], params[f"{layer['name']}.weight"]
        bias = params.get(f"{layer['name']}.bias")
        if fused:
            y = torch.mm(inp, w) if bias is None else torch.addmm(bias, inp, w)
        else:
            y = inp @ w if bias is None else inp @ w + bias
        acts[layer["name"]] = torch.relu(y) if layer.get("activation") == "relu" else y
    pred = acts[doc["loss"]["prediction"]]
    if fused:
        return ((pred - target) ** 2).mean()
    return torch.nn.functional.mse_loss(pred, target)


def torch_losses(torch: Any, doc: dict[str, Any], values: InitialValues, dtype: Any,
                 fused: bool) -> np.ndarray:
    """Per-step losses (before each update) of a PyTorch SGD loop over the spec document."""
    (x,) = (torch.from_numpy(a.copy()).to(dtype) for a in values.inputs.values())
    target = torch.from_numpy(values.target.copy()).to(dtype)
    params = {n: torch.from_numpy(a.copy()).to(dtype).requires_grad_() for n, a in values.params}
    lr = doc["optimizer"]["learning_rate"]
    out = np.empty(doc["training"]["steps"])
    for step in range(len(out)):
        for p in params.values():
            p.grad = None
        loss = torch_loss(torch, doc, x, target, params, fused)
        out[step] = loss.item()
        loss.backward()
        with torch.no_grad():
            for p in params.values():
                if p.grad is not None:  # None: the parameter does not reach the prediction
                    p -= lr * p.grad
    return out


def ours_with_torch_forward(torch: Any, doc: dict[str, Any], spec: Any,
                            values: InitialValues) -> tuple[np.ndarray, np.ndarray]:
    """Our per-step losses, and torch A's forward loss evaluated on *our* parameters.

    The second series splits "ours vs A" in two: ours vs it is the rounding of one
    forward pass (same parameters, different kernels); it vs A is how far the two
    parameter trajectories have drifted apart (same kernels, different parameters).
    """
    session = Session(CompiledSpec(spec), values)
    (x,) = (torch.from_numpy(a.copy()) for a in values.inputs.values())
    target = torch.from_numpy(values.target.copy())
    ours = np.empty(spec.training.steps)
    torch_fwd = np.empty(spec.training.steps)
    with torch.no_grad():
        for step in range(len(ours)):
            params = {n: torch.from_numpy(a) for n, a in session.params().items()}
            torch_fwd[step] = torch_loss(torch, doc, x, target, params, fused=False).item()
            ours[step] = session.step()
    return ours, torch_fwd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default=str(ROOT / "testdata" / "tiny_mlp.json"))
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("numerics_vs_torch: needs torch (pip install -e '.[test]')", file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    doc = json.loads(Path(args.spec).read_text())
    spec = load_spec(args.spec)
    values = generate_initial_values(spec)
    ours, ours_params_a = ours_with_torch_forward(torch, doc, spec, values)
    a = torch_losses(torch, doc, values, torch.float32, fused=False)
    b = torch_losses(torch, doc, values, torch.float32, fused=True)
    exact = torch_losses(torch, doc, values, torch.float64, fused=False)

    def rel(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.abs(u - v) / np.abs(v)

    cols = [("ours vs A", rel(ours, a)), ("A vs B", rel(a, b)),
            ("ours vs f64", rel(ours, exact)), ("A vs f64", rel(a, exact)),
            ("fwd only", rel(ours, ours_params_a)), ("drift only", rel(ours_params_a, a))]
    print(f"{spec.name}: relative loss differences")
    print(f"{'step':>6} {'loss':>10} " + " ".join(f"{c:>12}" for c, _ in cols))
    for s in logged_steps(spec.training.steps, spec.training.log_every):
        print(f"{s:>6} {ours[s]:>10.4g} " + " ".join(f"{r[s]:>12.1e}" for _, r in cols))
    print(f"{'max':>6} {'':>10} " + " ".join(f"{r.max():>12.1e}" for _, r in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
