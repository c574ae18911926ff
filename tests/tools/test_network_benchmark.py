"""`frame-run NET --benchmark` and `--strict`, run in process (`main([...])`):

* the benchmark's three lines (header, `train ms/batch`, `test ms/batch` with images/s)
  on a tiny net, with `--steps`, `--warmup`, `--threads`, `--solver adam`; a net
  without a loss times the test step alone; every bad flag and combination is one
  `BENCH-00N at --flag: expected ..., found ...` line, all at once, without a traceback;
* warnings on files written the way the reference's are: `frame-dslc --check` prints
  them and still says OK, `--strict` makes them errors in frame-dslc and frame-run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

# The tiny net and the in-process runner of the network CLI's tests.
from test_network_cli import NET, run  # noqa: E402

from frame_mlir.tools import frame_dslc, frame_run

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "testdata" / "networks" / "reference_style.json"
TINY_V0 = ROOT / "testdata" / "tiny_mlp.json"
NUM = r"[0-9]+\.[0-9]+"


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "tiny.json"
    path.write_text(json.dumps(NET))
    return path


def timings(out: str, header: str, kinds: tuple[str, ...] = ("train", "test")
            ) -> dict[str, float]:
    """The header line, then one `<kind> ms/batch M images/s R` line per kind, with R =
    batch / (M / 1000) (M as printed, to 3 decimals); returns kind -> ms."""
    lines = out.splitlines()
    assert lines[0] == header
    assert len(lines) == 1 + len(kinds), lines
    ms = {}
    for kind, line in zip(kinds, lines[1:], strict=True):
        m = re.fullmatch(rf"{kind} ms/batch ({NUM}) images/s ({NUM})", line)
        assert m is not None, line
        ms[kind] = float(m.group(1))
        low, high = ms[kind] - 5e-4, ms[kind] + 5e-4  # ms printed to 3 decimals
        assert 8000 / high <= float(m.group(2)) <= (8000 / low if low > 0 else float("inf"))
    return ms


def test_benchmark_lines(capsys: pytest.CaptureFixture[str], net: Path) -> None:
    rc, out, err = run(capsys, frame_run.main, net, "--benchmark", "--threads", "1")
    assert rc == 0
    ms = timings(out, "benchmark tiny: batch 8, 1 thread, 5 warm-up + 20 timed "
                 "iterations, solver sgd")
    assert all(v > 0 for v in ms.values())
    assert re.fullmatch(r"frame-run: tiny: compiled in [0-9.]+ s\n", err)


def test_benchmark_steps_warmup_solver(capsys: pytest.CaptureFixture[str], net: Path) -> None:
    rc, out, _ = run(capsys, frame_run.main, net, "--benchmark", "--steps", "3",
                     "--warmup", "0", "--threads", "2", "--solver", "adam", "--lr", "0.01",
                     "--seed", "4")
    assert rc == 0
    timings(out, "benchmark tiny: batch 8, 2 threads, 0 warm-up + 3 timed iterations, "
            "solver adam")


def test_benchmark_without_a_loss(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = json.loads(json.dumps(NET))
    doc["outputs"] = ["fc2"]
    doc["operators"].pop()
    doc["inputs"].pop()
    path = tmp_path / "noloss.json"
    path.write_text(json.dumps(doc))
    rc, out, err = run(capsys, frame_run.main, path, "--benchmark", "--steps", "2",
                       "--threads", "1")
    assert rc == 0
    timings(out, "benchmark noloss: batch 8, 1 thread, 5 warm-up + 2 timed iterations, "
            "solver sgd", kinds=("test",))
    assert "frame-run: note: noloss has no loss output" in err


@pytest.mark.parametrize(("args", "lines"), [
    (["--data", "digits"], ["BENCH-002 at --data: expected no --data with --benchmark "
                            "(random inputs of the declared shapes), found --data digits"]),
    (["--epochs", "2", "--save-weights", "w.dlp", "--plot", "p.png"], [
        "BENCH-002 at --epochs: expected no --epochs with --benchmark (--steps timed "
        "iterations), found --epochs 2",
        "BENCH-002 at --save-weights: expected no --save-weights with --benchmark "
        "(nothing is saved), found --save-weights w.dlp",
        "BENCH-002 at --plot: expected no --plot with --benchmark (no loss curve), found "
        "--plot p.png"]),
    (["--emit-stage", "frame"], ["BENCH-002 at --emit-stage: expected no --emit-stage "
                                 "with --benchmark (a run, not the IR), found "
                                 "--emit-stage frame"]),
    (["--steps", "0", "--warmup", "-1"], [
        "BENCH-001 at --warmup: expected an integer >= 0, found '-1'",
        "BENCH-001 at --steps: expected an integer >= 1, found '0'"]),
    (["--steps", "x"], ["BENCH-001 at --steps: expected an integer >= 1, found 'x'"]),
])
def test_benchmark_flag_errors(capsys: pytest.CaptureFixture[str], net: Path,
                               args: list[str], lines: list[str]) -> None:
    rc, out, err = run(capsys, frame_run.main, net, "--benchmark", *args)
    assert rc == 1 and out == ""
    assert err.splitlines() == [f"frame-run: error: {line}" for line in lines]


def test_warmup_needs_benchmark(capsys: pytest.CaptureFixture[str], net: Path) -> None:
    rc, out, err = run(capsys, frame_run.main, net, "--warmup", "3", "--data", "digits")
    assert rc == 1 and out == ""
    assert err == ("frame-run: error: BENCH-002 at --warmup: expected --benchmark with "
                   "it, found --warmup 3 without --benchmark\n")


def test_benchmark_needs_a_network(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, frame_run.main, TINY_V0, "--benchmark")
    assert rc == 1 and out == ""
    assert err == ("frame-run: error: BENCH-002 at --benchmark: expected a JSON network "
                   f"file (inputs/outputs/operators), found the v0 model spec {TINY_V0}\n")


def test_network_steps_without_benchmark(capsys: pytest.CaptureFixture[str],
                                         net: Path) -> None:
    rc, _, err = run(capsys, frame_run.main, net, "--steps", "3", "--data", "digits")
    assert rc == 2
    assert err.splitlines()[-1] == ("frame-run: error: --steps applies to v0 model specs "
                                    "and to a network's --benchmark only")


# --------------------------------------------------------------------------- --strict

WARNING = (f"{REFERENCE}: NET-002 at /operators/5/options/operations: unknown option "
           "'operations' for Elementwise (did you mean 'operation'?) (its options: "
           "operation, coef1, coef2, activation)")


def test_check_prints_warnings_and_ok(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, frame_dslc.main, "--check", REFERENCE)
    assert (rc, out) == (0, "OK reference_style\n")
    assert err == f"frame-dslc: warning: {WARNING}; ignored, as the reference ignores it\n"


def test_check_strict(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, frame_dslc.main, "--check", "--strict", REFERENCE)
    assert (rc, out) == (1, "")
    assert err == f"frame-dslc: error: {WARNING}\n"


def test_run_strict(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, frame_run.main, REFERENCE, "--strict", "--benchmark")
    assert (rc, out) == (1, "")
    assert err == f"frame-run: error: {WARNING}\n"


def test_strict_is_harmless_on_a_v0_spec(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, frame_dslc.main, "--check", "--strict", TINY_V0)
    assert (rc, out, err) == (0, "OK tiny_mlp\n", "")
