"""Verification policy (issue 27): frame-opt and the tests verify after every pass; the
compiles of users verify the pipeline's input and output. A pass that breaks the IR is
named under both. Also the timing report and the progress line (`frame_mlir.timing`)."""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from frame_mlir import timing
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec
from frame_mlir.passes import pipeline
from frame_mlir.passes.pipeline import PipelineError, make_context, run_passes

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "testdata" / "tiny_mlp.json"


@dataclass(frozen=True)
class BreakIr(ModulePass):
    """Leaves IR that does not verify, at any stage: the first function's terminator
    is cloned in front of itself (a terminator that is not the last op of its block,
    which every later lowering carries along)."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = next(o for o in op.walk() if isinstance(o, (func.FuncOp, llvm.FuncOp))
                  and o.body.blocks)
        block = fn.body.blocks[-1]
        terminator = block.last_op
        assert terminator is not None
        block.insert_op_before(terminator.clone(), terminator)


@dataclass(frozen=True)
class Harmless(ModulePass):
    """Changes nothing (a pass after the broken one)."""

    name = "test-harmless"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


def frame_module() -> ModuleOp:
    from frame_mlir.frontends.spec.lower import lower_spec

    return lower_spec(load_spec(str(TINY))).module


@pytest.fixture
def verify_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts ModuleOp.verify calls."""
    calls: list[int] = []
    original = ModuleOp.verify

    def counting(self: ModuleOp) -> None:
        calls.append(1)
        original(self)

    monkeypatch.setattr(ModuleOp, "verify", counting)
    return calls


@pytest.mark.parametrize("verify_each", [True, False])
def test_broken_pass_named_under_both_policies(verify_each: bool) -> None:
    from frame_mlir.passes.frame_autodiff import FrameAutodiff
    from frame_mlir.passes.frame_shape_inference import FrameShapeInference

    passes = [FrameShapeInference(), BreakIr(), Harmless(), FrameAutodiff()]
    with pytest.raises(PipelineError) as err:
        run_passes(make_context(), frame_module(), passes, verify_each=verify_each)
    assert err.value.pass_name == "test-break-ir"
    assert "produced invalid IR" in str(err.value)


def test_default_policy_reads_the_environment(monkeypatch: pytest.MonkeyPatch,
                                              verify_calls: list[int]) -> None:
    from frame_mlir.passes.frame_shape_inference import FrameShapeInference

    passes = [FrameShapeInference(), Harmless(), Harmless()]
    monkeypatch.setenv("FRAME_VERIFY_EACH", "0")
    run_passes(make_context(), frame_module(), passes)
    assert len(verify_calls) == 2  # the input and the output
    verify_calls.clear()
    monkeypatch.setenv("FRAME_VERIFY_EACH", "1")
    run_passes(make_context(), frame_module(), passes)
    assert len(verify_calls) == 1 + len(passes)  # the input, then after each pass


@pytest.mark.parametrize("verify_each", ["0", "1"])
def test_broken_pass_in_a_full_compile_is_named(monkeypatch: pytest.MonkeyPatch,
                                                verify_each: str) -> None:
    """The driver's pipeline (CompiledSpec, as frame-run compiles) with a broken pass in
    the `loops` stage."""
    stages = pipeline.stages

    def broken_stages(lr, options=None):  # type: ignore[no-untyped-def]
        out = stages(lr, options)
        i = [s.name for s in out].index("loops")
        out[i] = pipeline.Stage("loops", (*out[i].passes[:3], BreakIr(), *out[i].passes[3:]),
                                out[i].description)
        return out

    monkeypatch.setattr(pipeline, "stages", broken_stages)
    monkeypatch.setenv("FRAME_VERIFY_EACH", verify_each)
    with pytest.raises(PipelineError) as err:
        CompiledSpec(load_spec(str(TINY)), cache=None)
    assert err.value.pass_name == "test-break-ir"


def frame_opt_with_broken_pass(args: list[str]) -> subprocess.CompletedProcess[str]:
    """frame-opt, in a fresh process, with `test-break-ir` registered."""
    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_verify_policy import BreakIr, Harmless
from frame_mlir.tools import frame_opt

class Main(frame_opt.FrameOptMain):
    def register_all_passes(self):
        super().register_all_passes()
        self.register_pass("test-break-ir", lambda: BreakIr)
        self.register_pass("test-harmless", lambda: Harmless)

from frame_mlir.tools.errors import run_cli
sys.exit(run_cli("frame-opt", lambda: Main(args={args!r}).run()))
"""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("flag", [[], ["--verify-each=1"], ["--verify-each=0"]])
def test_frame_opt_names_the_broken_pass(tmp_path: Path, flag: list[str]) -> None:
    src = tmp_path / "m.mlir"
    src.write_text(subprocess.run(
        [sys.executable, "-m", "frame_mlir.tools.frame_run", str(TINY), "--emit-stage=frame"],
        capture_output=True, text=True, check=True).stdout)
    r = frame_opt_with_broken_pass([str(src), "-p", "test-break-ir,test-harmless,cse",
                                    *flag])
    assert r.returncode == 1, r.stderr
    assert "test-break-ir" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_frame_opt_rejects_a_bad_verify_each_value(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_opt", "-",
                        "--verify-each=maybe"], input="", capture_output=True, text=True)
    assert r.returncode == 2
    assert "expected 0 or 1, found 'maybe'" in r.stderr


# -- the timing report -------------------------------------------------------------------

def test_timing_report_names_stages_passes_and_llvm(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    with timing.compile_session(report=True, out=out):
        CompiledSpec(load_spec(str(TINY)), cache=None)
    text = out.getvalue()
    assert "Execution time report" in text and "Total Execution Time:" in text
    for name in ("frontend", "autodiff", "  frame-autodiff", "loops", "  frame-gemm",
                 "llvm", "  convert-func-to-llvm", "llvm: translate", "(100.0%)  Total"):
        assert name in text, (name, text)
    # every line past the header: seconds, percent, name
    rows = text.split("----Name----\n")[1].strip().splitlines()
    assert all(r.split()[1].startswith("(") and r.split()[2].endswith("%)")
               or r.split()[1] == "(100.0%)" for r in rows), rows


def test_timing_flag_of_the_tools_goes_to_stderr_only() -> None:
    base = [sys.executable, "-m", "frame_mlir.tools.frame_run", str(TINY), "--no-cache",
            "--steps", "3"]
    plain = subprocess.run(base, capture_output=True, text=True, check=True)
    timed = subprocess.run([*base, "--timing"], capture_output=True, text=True, check=True)
    assert timed.stdout == plain.stdout
    assert "Execution time report" in timed.stderr
    assert "Execution time report" not in plain.stderr
    assert "frame-bufferize" in timed.stderr


@pytest.mark.parametrize("tool", ["frame-dslc", "frame-kyn"])
def test_timing_flag_of_dslc_and_kyn(tool: str, tmp_path: Path) -> None:
    if tool == "frame-dslc":
        args = ["frame_mlir.tools.frame_dslc", "--run", str(TINY), "--no-cache", "--timing"]
    else:
        args = ["frame_mlir.tools.frame_kyn", "train", str(ROOT / "testdata/kyn/iris.kyn"),
                "--quiet", "--no-cache", "--timing", "--out-dir", str(tmp_path)]
    r = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Execution time report" in r.stderr and "frame-autodiff" in r.stderr
    assert "Execution time report" not in r.stdout


def test_no_report_and_no_cost_outside_a_session() -> None:
    with timing.section("anything"):
        pass  # no session: nothing recorded, nothing raised
    timer = timing.Timer()
    with timer.section("a"):
        with timer.section("b"):
            pass
    with timer.section("a"):
        pass
    assert timer.root.children["a"].count == 2
    assert list(timer.flat()) == ["a", "a/b"]


# -- the progress line -------------------------------------------------------------------

class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "PROGRESS_AFTER_S", 0.0)
    tty = FakeTty()
    with timing.compile_session(report=False, out=tty):
        with timing.section("frame-gemm"):
            timing.set_kernel_total(3)
            timing.count_kernel()
    text = tty.getvalue()
    assert "compiling: frame-gemm [kernels 1/3]" in text
    assert text.endswith("\r\x1b[K")  # erased at the end
    piped = io.StringIO()
    with timing.compile_session(report=False, out=piped):
        with timing.section("frame-gemm"):
            timing.set_kernel_total(3)
            timing.count_kernel()
    assert piped.getvalue() == ""


def test_progress_waits_for_a_slow_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    tty = FakeTty()
    with timing.compile_session(report=False, out=tty):
        with timing.section("quick"):
            pass
    assert tty.getvalue() == ""  # under PROGRESS_AFTER_S: nothing drawn
