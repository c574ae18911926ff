"""The generated code's profiler (issue 28): frame-profile-kernels' counters, the report
(`frame_mlir/runtime/profile.py`), `frame-run --profile`, `FRAME_PROFILE=1`, and the
JIT's perf map (`FRAME_PERF_MAP=1`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.compile_options import CompileOptions
from frame_mlir.frontends.spec.spec_v0 import parse_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session
from frame_mlir.runtime import profile

ROOT = Path(__file__).resolve().parents[2]
MNIST = ROOT / "testdata" / "mnist_mlp.json"


def _losses(profiled: bool, steps: int) -> tuple[np.ndarray, CompiledSpec]:
    spec = parse_spec(MNIST.read_text())
    compiled = CompiledSpec(spec, cache=None,
                            options=CompileOptions(threads=2, profile=profiled))
    session = Session(compiled)
    return np.array([session.step() for _ in range(steps)]), compiled


def test_every_kernel_call_is_counted_and_the_numbers_do_not_change() -> None:
    """Each kernel of the train step runs once per step; the kernels' time is within
    the step's; the matmuls' flops are the products' 2*m*n*k; the losses are
    bit-identical to an unprofiled compile (the counters touch no data)."""
    plain, _ = _losses(False, 6)
    profile.reset()
    profiled, compiled = _losses(True, 6)
    np.testing.assert_array_equal(plain, profiled)
    rows = [r for r in profile.rows() if r.name.startswith("mnist_mlp")]
    functions = {r.name: r for r in rows if r.kind == "function"}
    assert functions["mnist_mlp_train_step"].calls == 6
    records = compiled.executable.profile
    step_kernels = {name for _, kind, name, _, _ in records if kind == "kernel"}
    kernels = [r for r in rows if r.kind == "kernel" and r.name in step_kernels]
    assert kernels and all(r.calls % 6 == 0 for r in kernels)
    assert sum(r.seconds for r in kernels) <= functions["mnist_mlp_train_step"].seconds
    flops = {r.flops for r in kernels if "matmul" in r.name}
    # forward X.W1 (64x784 . 784x256), weight gradient X^T.dH, and the 256 -> 10 layer
    assert 2 * 64 * 784 * 256 in flops and 2 * 64 * 256 * 10 in flops, flops
    assert all(r.gflops is not None and r.gflops > 0 for r in kernels if r.flops)
    text = profile.report()
    assert "mnist_mlp_train_step" in text and "(outside kernels)" in text
    assert re.search(r"matmul\S*\s+fc1\s+\d+", text), text


def test_profiled_calls_do_not_stop_frame_gemm_dropping_zero_fills() -> None:
    """frame-gemm starts a GEMM from zero instead of calling the fill kernel before
    it; the counters between the two calls must not change that (and the dropped
    call takes its counters with it)."""
    from frame_mlir.frontends.spec.lower import lower_spec
    from frame_mlir.passes.pipeline import run_pipeline

    def calls(profiled: bool) -> list[str]:
        lowered = lower_spec(parse_spec(MNIST.read_text()))
        run_pipeline(lowered.module, 0.01, stop_after="loops",
                     options=CompileOptions(threads=1, profile=profiled))
        text = str(lowered.module)
        return re.findall(r"func\.call @(\w+)\(", text)

    plain, profiled = calls(False), calls(True)
    kernels = [c for c in profiled if not c.startswith("frame_rt_prof")]
    assert kernels == plain
    begins = [c for c in profiled if c == "frame_rt_prof_begin"]
    ends = [c for c in profiled if c == "frame_rt_prof_end"]
    assert len(begins) == len(ends)
    # one pair per kernel call of a public function, one per public function
    assert len(begins) > len([k for k in kernels if "__k" in k])


def test_the_perf_map_names_every_function(tmp_path: Path) -> None:
    """FRAME_PERF_MAP=1: perf's `perf-<pid>.map` lists each loaded function, kernels by
    the names of the functions they implement, with an address and a size."""
    code = (
        "import os\n"
        "from frame_mlir.frontends.spec.spec_v0 import parse_spec\n"
        "from frame_mlir.frontends.spec.trainer import CompiledSpec\n"
        f"CompiledSpec(parse_spec(open({str(ROOT / 'testdata' / 'tiny_mlp.json')!r}).read()),"
        " cache=None)\n"
        "print(os.getpid())\n")
    env = {**os.environ, "FRAME_PERF_MAP": "1", "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    pid = proc.stdout.strip()
    lines = (tmp_path / f"perf-{pid}.map").read_text().splitlines()
    entries = {}
    for line in lines:
        start, size, name = line.split(" ", 2)
        assert int(start, 16) > 0 and int(size, 16) > 0
        for n in name.split(","):
            entries[n] = int(start, 16)
    for public in ("tiny_mlp", "tiny_mlp_train_step", "tiny_mlp_train_loop",
                   "tiny_mlp_predict"):
        assert public in entries, lines
    assert any("__k" in n and "matmul" in n for n in entries), lines


def test_no_perf_map_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FRAME_PERF_MAP", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    CompiledSpec(parse_spec((ROOT / "testdata" / "tiny_mlp.json").read_text()), cache=None)
    assert not list(tmp_path.glob("perf-*.map"))


def _frame_run(*args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_run", *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def test_frame_run_profile_prints_the_table_on_stderr(tmp_path: Path) -> None:
    """`frame-run --profile`: the per-kernel table after training, on stderr; stdout is
    the same bytes as without the flag."""
    env = {"FRAME_CACHE_DIR": str(tmp_path)}
    plain = _frame_run(str(MNIST), "--steps", "5", env=env)
    profiled = _frame_run(str(MNIST), "--steps", "5", "--profile", env=env)
    assert plain.returncode == 0 and profiled.returncode == 0, profiled.stderr
    assert profiled.stdout == plain.stdout
    err = profiled.stderr
    assert "frame-mlir profile" in err and "GFLOP/s" in err
    row = re.search(r"^mnist_mlp_train_step\s+(\d+)\s+[\d.]+\s+[\d.]+$", err, re.M)
    assert row is not None and row.group(1) == "5", err
    # and from the cache: the entry keeps the counters' names
    again = _frame_run(str(MNIST), "--steps", "5", "--profile", env=env)
    assert re.search(r"^mnist_mlp_train_step\s+5\s", again.stderr, re.M), again.stderr


def test_profile_applies_where_there_are_kernels_to_time() -> None:
    proc = _frame_run(str(MNIST), "--target", "cuda", "--profile")
    assert proc.returncode == 2
    assert "--profile applies to --target cpu" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_dslc", "--check",
                           str(MNIST), "--profile"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert "--profile applies to --run only" in proc.stderr


def test_frame_profile_env_reports_at_exit_for_the_api(tmp_path: Path) -> None:
    """FRAME_PROFILE=1 profiles the Python API's compiles and prints the table when
    the process exits."""
    code = (
        "import numpy as np, frame\n"
        "g = frame.Graph('g')\n"
        "f32 = frame.DType.float32\n"
        "x, w = (g.add_graph_input(s, f32) for s in ([64, 128], [128, 32]))\n"
        "g.mark_output(frame.relu(g, frame.matmul(g, x, w)))\n"
        "ex = frame.compile(g, 'cpu')\n"
        "ones = [frame.from_numpy(np.ones(s, np.float32)) for s in ((64, 128), (128, 32))]\n"
        "ex.run(ones)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=ROOT,
                          env={**os.environ, "FRAME_PROFILE": "1",
                               "FRAME_CACHE_DIR": str(tmp_path)})
    if proc.returncode != 0:
        pytest.fail(proc.stderr)
    assert "=== frame-mlir profile (FRAME_PROFILE) ===" in proc.stderr, proc.stderr
    assert re.search(r"matmul", proc.stderr), proc.stderr


def test_the_profile_records_survive_the_cache_entry() -> None:
    """`cache_meta` carries the records, `from_cache_entry` registers them again."""
    _, compiled = _losses(True, 1)
    meta = compiled.executable.cache_meta()
    assert meta["profile"] == compiled.executable.profile
    json.dumps(meta)  # stored as JSON


def test_profile_clock_thread_and_a_bad_clock(tmp_path: Path) -> None:
    """FRAME_PROFILE_CLOCK=thread times with the thread's CPU time and says so above
    the table; an unknown clock is a clear error naming the variable, not a traceback."""
    env = {"FRAME_CACHE_DIR": str(tmp_path), "FRAME_PROFILE_CLOCK": "thread"}
    proc = _frame_run(str(MNIST), "--steps", "3", "--profile", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "(clock: thread CPU time, FRAME_PROFILE_CLOCK)" in proc.stderr, proc.stderr
    assert re.search(r"^mnist_mlp_train_step\s+3\s", proc.stderr, re.M), proc.stderr
    bad = _frame_run(str(MNIST), "--steps", "3", "--profile",
                     env={**env, "FRAME_PROFILE_CLOCK": "sundial"})
    assert bad.returncode != 0
    assert "FRAME_PROFILE_CLOCK: expected one of wall, thread, found 'sundial'" in bad.stderr
    assert "Traceback" not in bad.stderr
