"""Where a step's time goes, kernel by kernel: the profiler's report.

Compile with `CompileOptions(profile=True)` -- `frame-run --profile`, or
`FRAME_PROFILE=1` for every compile of the process -- and frame-profile-kernels
brackets each kernel call and each model function with counters
(`backend/llvm/profile_runtime.py`). Every executable loaded with such code registers
what its counter ids are (`register`); `report()` reads the counters and prints a
table in the manner of `torch.profiler`'s `key_averages().table()`:

    Function                        Calls   Total ms     Avg ms
    mnist_mlp_train_step              100     55.210      0.552

    Kernel                           Layer   Calls   Total ms    Avg us  % functions  GFLOP/s
    mnist_mlp_train_step__k5_matmul  fc1       100     20.114    201.14       36.4 %    127.3
    ...
    (outside kernels)                                   5.180                9.4 %

Times are wall time on the calling thread, including the kernels' parallel tasks;
"% functions" is of the total time in the model functions (so shared kernels add up
across them), and "(outside kernels)" is what the functions spent between kernel calls
(views, the counters themselves). The counters cost two clock reads per call (~50 ns):
negligible beside the kernels of a real model, visible on a tiny one.

With `FRAME_PROFILE` set, the report is printed to stderr when the process exits, if
any profiled code ran; `frame-run --profile` sets it. `FRAME_PROFILE_CLOCK=thread`
times with the calling thread's CPU time instead of wall time: on a machine whose cores
are shared, other processes then do not inflate the figures, but the kernels' parallel
tasks on other threads are not counted (use it at 1 thread).
"""

from __future__ import annotations

import atexit
import ctypes
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from frame_mlir.compile_options import ENV_PROFILE, env_flag


@dataclass(frozen=True)
class Counted:
    """What one counter id stands for."""

    kind: str  # "function" or "kernel"
    name: str
    layer: str
    flops: int  # per call; 0 when not known


@dataclass(frozen=True)
class Row:
    """One line of the report."""

    kind: str
    name: str
    layer: str
    calls: int
    seconds: float
    flops: int

    @property
    def gflops(self) -> float | None:
        if not self.flops or self.seconds <= 0:
            return None
        return self.flops * self.calls / self.seconds / 1e9


_registered: dict[int, Counted] = {}
_atexit_installed = False


def register(records: Sequence[Sequence[Any]]) -> None:
    """Name the counter ids of a loaded executable: (id, kind, name, layer, flops)
    records, as frame-profile-kernels wrote them."""
    global _atexit_installed
    for ident, kind, name, layer, flops in records:
        _registered[int(ident)] = Counted(str(kind), str(name), str(layer), int(flops))
    if records and not _atexit_installed and env_flag(ENV_PROFILE):
        _atexit_installed = True
        atexit.register(_report_at_exit)


def _table() -> np.ndarray | None:
    """The process's counters, SLOTS x (id, calls, ns, start), or None before any
    profiled code was loaded."""
    from frame_mlir.backend.llvm import profile_runtime

    if profile_runtime._runtime is None:
        return None
    rt = profile_runtime._runtime
    buf = (ctypes.c_int64 * (profile_runtime.SLOTS * profile_runtime.FIELDS)
           ).from_address(rt.table_address)
    return np.ctypeslib.as_array(buf).reshape(profile_runtime.SLOTS, profile_runtime.FIELDS)


def reset() -> None:
    """Zero every count (the ids stay)."""
    table = _table()
    if table is not None:
        table[:, 1:] = 0


def rows() -> list[Row]:
    """Every counted function and kernel that ran, the slowest first."""
    table = _table()
    if table is None:
        return []
    out = []
    for ident, calls, ns, _ in table[table[:, 1] > 0]:
        what = _registered.get(int(ident))
        if what is None:  # code loaded before it was registered: not ours to name
            continue
        out.append(Row(what.kind, what.name, what.layer, int(calls), ns / 1e9, what.flops))
    return sorted(out, key=lambda r: -r.seconds)


def report(out: TextIO | None = None) -> str:
    """The table of `rows()` (see the module docstring), written to `out` if given."""
    all_rows = rows()
    functions = [r for r in all_rows if r.kind == "function"]
    kernels = [r for r in all_rows if r.kind == "kernel"]
    lines: list[str] = []
    if not functions:
        text = "frame-mlir profile: no profiled code ran\n"
    else:
        in_functions = sum(r.seconds for r in functions)
        width = max([len(r.name) for r in all_rows] + [len("(outside kernels)"), 8])
        lwidth = max([len(r.layer) for r in kernels] + [5])
        from frame_mlir.backend.llvm import profile_runtime

        rt = profile_runtime._runtime
        if rt is not None and rt.clock != "wall":
            lines.append(f"(clock: {rt.clock} CPU time, {profile_runtime.ENV_CLOCK})")
        lines.append(f"{'Function':<{width}}  {'Calls':>8}  {'Total ms':>10}  {'Avg ms':>9}")
        for r in functions:
            lines.append(f"{r.name:<{width}}  {r.calls:>8}  {r.seconds * 1e3:>10.3f}  "
                         f"{r.seconds * 1e3 / r.calls:>9.3f}")
        lines.append("")
        lines.append(f"{'Kernel':<{width}}  {'Layer':<{lwidth}}  {'Calls':>8}  "
                     f"{'Total ms':>10}  {'Avg us':>9}  {'% functions':>11}  {'GFLOP/s':>8}")
        for r in kernels:
            share = 100 * r.seconds / in_functions if in_functions > 0 else 0.0
            gf = f"{r.gflops:8.1f}" if r.gflops is not None else f"{'':8}"
            lines.append(f"{r.name:<{width}}  {r.layer:<{lwidth}}  {r.calls:>8}  "
                         f"{r.seconds * 1e3:>10.3f}  {r.seconds * 1e6 / r.calls:>9.2f}  "
                         f"{share:>9.1f} %  {gf}")
        outside = in_functions - sum(r.seconds for r in kernels)
        share = 100 * outside / in_functions if in_functions > 0 else 0.0
        lines.append(f"{'(outside kernels)':<{width}}  {'':<{lwidth}}  {'':>8}  "
                     f"{outside * 1e3:>10.3f}  {'':>9}  {share:>9.1f} %")
        text = "\n".join(lines) + "\n"
    if out is not None:
        out.write(text)
    return text


def _report_at_exit() -> None:
    try:
        sys.stderr.write("\n=== frame-mlir profile (FRAME_PROFILE) ===\n")
        report(sys.stderr)
    except Exception as e:  # noqa: BLE001 -- never a traceback at exit
        sys.stderr.write(f"frame-mlir profile: could not report: {e}\n")
