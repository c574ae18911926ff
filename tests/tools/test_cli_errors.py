"""Bad input and hostile environments at the CLIs: one clear line, a non-zero exit,
never a traceback (each case is a way the tools once failed, or could)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "testdata" / "tiny_mlp.json"


def run(tool: str, *args: str, stdin: bytes | None = None,
        stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", f"frame_mlir.tools.{tool}", *args],
                          input=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=120,
                          check=False)


def error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode()
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("frame_dslc", ["--check", str(TINY), "--out", "d"], "--out applies to --emit only"),
    ("frame_dslc", ["--emit", str(TINY), "-o", "-"], "--out needs a directory"),
    ("frame_run", [str(TINY), "--emit-stage=frame", "--print-predictions"],
     "--print-predictions needs a training run"),
])
def test_flags_that_would_be_ignored_are_usage_errors(tool: str, args: list[str],
                                                      message: str) -> None:
    proc = run(tool, *args)
    assert proc.returncode == 2 and message in error_line(proc)


def test_print_ir_after_all_with_emit_stage_dumps_up_to_the_stage() -> None:
    proc = run("frame_run", str(TINY), "--emit-stage=autodiff", "--print-ir-after-all")
    assert proc.returncode == 0
    dumps = [ln for ln in proc.stderr.decode().splitlines() if "IR Dump After" in ln]
    assert dumps == ["// -----// IR Dump After frame-shape-inference //----- //",
                     "// -----// IR Dump After frame-autodiff //----- //"]


def test_a_failed_write_to_stdout_names_the_output() -> None:
    with open("/dev/full", "wb") as full:
        proc = run("frame_run", str(TINY), stdout=full.fileno())
    assert proc.returncode == 1
    assert error_line(proc) == "frame-run: error: IO-001 at <output>: No space left on device"


def test_frame_opt_binary_input() -> None:
    proc = run("frame_opt", "-", stdin=b"\xff\xfe\x00garbage")
    assert proc.returncode == 1
    assert error_line(proc) == "frame-opt: error: IO-001 at stdin:1: expected UTF-8 text, " \
                               "found byte 0xff"


@pytest.mark.parametrize("text", [b"", b"\n  \n", b"// only a comment\n"])
def test_frame_opt_empty_input_is_an_empty_module(text: bytes) -> None:
    proc = run("frame_opt", "-", "-p", "frame-autodiff", stdin=text)
    assert proc.returncode == 0 and proc.stdout.decode().split() == ["builtin.module", "{", "}"]


def test_frame_opt_deep_nesting_is_an_error_not_a_crash() -> None:
    text = "builtin.module {\n" * 400 + "}\n" * 400
    proc = run("frame_opt", "-", stdin=text.encode())
    assert proc.returncode == 1
    assert error_line(proc).startswith("frame-opt: error: input nested too deeply")


def _big_spec(tmp_path: Path) -> Path:
    """Two hidden layers of 46340 x 46340 (each tensor is legal, just under 2^31
    elements): 8 GiB of weights and a larger arena."""
    doc = json.loads(TINY.read_text())
    n = 46340
    doc["model"]["batch"] = n
    doc["inputs"][0]["shape"] = [n, 4]
    doc["layers"][0].update(weight_shape=[4, n], bias_shape=[n, n])
    doc["layers"][1].update(weight_shape=[n, 1])
    doc["loss"]["target_shape"] = [n, 1]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    return path


def _skip_unless_too_large() -> None:
    from frame_mlir.runtime.memory import available_memory

    available = available_memory()
    if available is None or available > 30 << 30:
        pytest.skip("needs /proc/meminfo and less than 30 GiB available")


def test_a_spec_too_large_for_memory_is_refused_before_allocating(tmp_path: Path) -> None:
    """The check runs before any buffer exists, so this fails fast on any machine with
    less than ~32 GiB free."""
    path = _big_spec(tmp_path)
    _skip_unless_too_large()
    proc = run("frame_run", str(path))
    assert proc.returncode == 1
    line = error_line(proc)
    assert line.startswith("frame-run: error: RT-001: out of memory: the model needs ")
    assert "GiB are available" in line


def test_a_spec_too_large_for_memory_draws_nothing(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """RT-001 comes before the spec's random data and parameters are drawn (drawing
    8 GiB of them took 40 s before the refusal)."""
    path = _big_spec(tmp_path)
    _skip_unless_too_large()
    # trainer binds the function at its import: imported here first and patched too
    # (imported while only initial_values was patched, it kept the stub for the rest
    # of the session).
    from frame_mlir.frontends.spec import initial_values, trainer
    from frame_mlir.tools.frame_run import main

    def no_draws(spec: object) -> None:
        raise AssertionError("initial values drawn before the memory check")

    monkeypatch.setattr(initial_values, "generate_initial_values", no_draws)
    monkeypatch.setattr(trainer, "generate_initial_values", no_draws)
    assert main([str(path), "--no-cache"]) == 1
    assert "RT-001: out of memory" in capsys.readouterr().err


def test_an_oversized_spec_file_is_cut_off(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    from frame_mlir.frontends.common import json_document
    from frame_mlir.frontends.common.errors import SpecError
    from frame_mlir.frontends.spec import spec_v0

    monkeypatch.setattr(json_document, "MAX_SPEC_BYTES", 1 << 16)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * ((1 << 16) + 1))
    with pytest.raises(SpecError) as info:
        spec_v0.load_spec(big)
    (d,) = info.value.diagnostics
    assert d.rule == "IO-001" and "larger than" in str(d)


def test_an_endless_spec_file_is_refused_unread() -> None:
    """/dev/zero never ends: refused as a device before a byte is read (issue 30)."""
    from frame_mlir.frontends.common.errors import SpecError
    from frame_mlir.frontends.spec import spec_v0

    with pytest.raises(SpecError) as info:
        spec_v0.load_spec("/dev/zero")
    (d,) = info.value.diagnostics
    assert d.rule == "IO-001"
    assert "expected a regular file, found a character device" in str(d)
