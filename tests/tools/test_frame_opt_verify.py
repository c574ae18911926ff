"""frame-opt: --verify-diagnostics (annotations, matching, reports), the named
pipelines (the driver's pass lists, not copies) and --help."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from frame_mlir.compile_options import CompileOptions
from frame_mlir.passes.pipeline import stage_passes
from frame_mlir.passes.registry import PIPELINES, FramePipeline
from frame_mlir.passes.stages import STAGE_NAMES, pipeline_name
from frame_mlir.tools.frame_opt import FrameOptMain, main
from frame_mlir.tools.locations import SourceLoc
from frame_mlir.tools.verify_diagnostics import (
    Chunk,
    Diagnostic,
    parse_expectations,
    verify,
)

BAD_ADD = ("  %0 = frame.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>\n")
HEAD = "func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) {\n"


def _lines(text: str) -> list[tuple[str, int | None, str]]:
    exps, problems = parse_expectations(text, "t.mlir")
    assert not problems
    return [(e.kind, e.line, e.text) for e in exps]


def test_designators_resolve_to_lines() -> None:
    text = "\n".join([
        "op a",                                  # 1
        "// expected-error@above {{A}}",         # 2 -> 1
        "// expected-note@below {{B}}",          # 3 -> 5 (4 is an annotation too)
        "// expected-warning @+3 {{C}}",         # 4 -> 7
        "op b",                                  # 5
        "op c // expected-remark {{D}}",         # 6 -> 6 (on the line itself)
        "// expected-error@-6 {{E}}",            # 7 -> 1
        "// expected-error@unknown {{F}}",       # 8 -> None
        "op d {{G}} // expected-error {{x}} y}}",  # 9 -> 9, text up to the last }}
    ])
    assert _lines(text) == [("error", 1, "A"), ("note", 5, "B"), ("warning", 7, "C"),
                            ("remark", 6, "D"), ("error", 1, "E"), ("error", None, "F"),
                            ("error", 9, "x}} y")]


def test_malformed_annotations_are_errors_and_prose_is_not() -> None:
    text = "\n".join([
        "// expected-error @+1 {oops}",
        "// expected-error-re {{a{{[}}b}}",
        "// every case has an expected-error annotation (prose: ignored)",
        "// expected-error@below {{nothing below}}",
    ])
    exps, problems = parse_expectations(text, "t.mlir")
    assert exps == []
    assert [(p.loc.line if p.loc else None, p.message.split(":")[0]) for p in problems] == [
        (1, "invalid expected-diagnostic annotation"),
        (2, "invalid regex in expected-error-re"),
        (4, "expected-diagnostic @below has no line below it to refer to"),
    ]


def test_above_on_the_first_line_is_an_error() -> None:
    _, problems = parse_expectations("// expected-error@above {{x}}\n", "t.mlir")
    assert problems[0].message.startswith("expected-diagnostic @above has no line above")


def test_regex_expectations() -> None:
    text = "op // expected-error-re {{found {{[0-9]+}} (x)}}"
    exps, _ = parse_expectations(text, "t.mlir")
    assert exps[0].matches_text("expected 3, found 42 (x)")
    assert not exps[0].matches_text("found 42 (y)")  # the rest is literal: ( ) escaped


def _diag(line: int | None, message: str, kind: str = "error") -> Diagnostic:
    return Diagnostic(kind, message, None if line is None else SourceLoc("t.mlir", line, 3))


def test_verify_matches_each_expectation_once_within_its_chunk() -> None:
    text = "\n".join([
        "op // expected-error {{boom}}",          # 1, chunk 0
        "// expected-error@unknown {{lost}}",    # 2, chunk 0
        "// -----",                               # 3 (chunk 1 starts here)
        "// expected-error@unknown {{lost}}",    # 4, chunk 1
    ])
    ok = [Chunk(1, [_diag(1, "a boom here"), _diag(None, "lost")]), Chunk(3, [_diag(None, "lost")])]
    assert verify("t.mlir", text, ok) == []
    # Twice the same diagnostic: one expectation meets only one of them; an @unknown
    # expectation of chunk 1 does not accept chunk 0's diagnostic.
    twice = [Chunk(1, [_diag(1, "boom"), _diag(1, "boom"), _diag(None, "lost"),
                       _diag(None, "lost")]), Chunk(3, [])]
    assert verify("t.mlir", text, twice) == [
        "t.mlir:<unknown location>: error: unexpected error: lost",
        "t.mlir:1:3: error: unexpected error: boom",
        't.mlir:4:4: error: expected error "lost" at an unknown location was not produced',
    ]


def test_verify_kinds_must_agree() -> None:
    text = "op // expected-warning {{w}}\nop // expected-note {{n}}"
    assert verify("t.mlir", text, [Chunk(1, [_diag(1, "w", "warning"),
                                             _diag(2, "n", "note")])]) == []
    assert verify("t.mlir", text, [Chunk(1, [_diag(1, "w"), _diag(2, "n", "note")])]) == [
        "t.mlir:1:3: error: unexpected error: w",
        't.mlir:1:7: error: expected warning "w" at line 1 was not produced',
    ]


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "in.mlir"
    path.write_text(text)
    return str(path)


def test_cli_passes_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path, HEAD + "  // expected-error@+1 {{do not broadcast}}\n" + BAD_ADD
                  + "  func.return\n}\n")
    assert main([good, "--verify-diagnostics"]) == 0
    bad = _write(tmp_path, HEAD + "  // expected-error@+2 {{do not broadcast}}\n" + BAD_ADD
                 + "  func.return\n}\n")
    assert main([bad, "--verify-diagnostics"]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3:3: error: unexpected error: frame.add: operands [4] and [5]" in err
    assert f'{bad}:2:6: error: expected error "do not broadcast" at line 4 was not produced' in err
    assert "Traceback" not in err


def test_split_chunks_keep_the_file_line_numbers(tmp_path: Path) -> None:
    chunk = HEAD + "  // expected-error@+1 {{do not broadcast}}\n" + BAD_ADD + "  func.return\n}\n"
    path = _write(tmp_path, chunk + "\n// -----\n\n" + chunk + "// -----\n" + chunk)
    assert main([path, "--split-input-file", "--verify-diagnostics"]) == 0


@dataclass(frozen=True)
class WarnPass(ModulePass):
    """Warns twice: once at the first function's location, once nowhere."""

    name = "test-warn"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        from frame_mlir.tools.locations import where_of

        fn = next(iter(op.ops))
        warnings.warn(f"{where_of(fn)}: a located warning", stacklevel=1)
        warnings.warn("an unlocated warning", stacklevel=1)


@dataclass(frozen=True)
class NotePass(ModulePass):
    """Fails at the first op of the first function, with a note."""

    name = "test-note"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        fn = next(iter(op.ops))
        error = PassFailedException("test-note: it failed")
        error.op = next(iter(fn.walk()))  # type: ignore[attr-defined]
        error.add_note("because of this")
        raise error


class OptWithTestPasses(FrameOptMain):
    def register_all_passes(self) -> None:
        super().register_all_passes()
        self.register_pass(WarnPass.name, lambda: WarnPass)
        self.register_pass(NotePass.name, lambda: NotePass)


def test_warnings_and_notes_are_diagnostics(tmp_path: Path) -> None:
    ok = "func.func @f() {\n  func.return\n}\n"
    warned = _write(tmp_path, "// expected-warning@+1 {{a located warning}}\n" + ok
                    + "// expected-warning@unknown {{an unlocated warning}}\n")
    assert OptWithTestPasses(args=[warned, "--verify-diagnostics", "-p", "test-warn"]).run() == 0
    noted = _write(tmp_path, "// expected-error@+2 {{test-note: it failed}}\n"
                   "// expected-note@+1 {{because of this}}\n" + ok)
    assert OptWithTestPasses(args=[noted, "--verify-diagnostics", "-p", "test-note"]).run() == 0
    unnoted = _write(tmp_path, "// expected-error@+1 {{test-note: it failed}}\n" + ok)
    assert OptWithTestPasses(args=[unnoted, "--verify-diagnostics", "-p", "test-note"]).run() == 1


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_pipelines_are_the_drivers_pass_lists(stage: str) -> None:
    """`frame-to-<stage>` expands to `stage_passes`, what frame-run runs."""
    cls = next(p for p in PIPELINES if p.name == pipeline_name(stage))
    options = CompileOptions(threads=1)
    expected = stage_passes(0.05, options, stop_after=stage)
    assert cls(lr=0.05).expand() == expected
    opt = FrameOptMain(args=["-p", f"cse,{pipeline_name(stage)}{{lr=0.05}}"])
    assert list(opt.pipeline.passes[1:]) == expected
    assert FramePipeline(start_after="sgd", sgd=False).expand() == stage_passes(
        None, options, start_after="sgd")


def test_help_leads_with_frame_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    first = out.index("frame passes")
    assert first < out.index("pipelines (") < out.index("options:")
    assert "frame-to-llvm" in out and "x86-set-arch" not in out
    assert main(["--list-passes"]) == 0
    assert "x86-set-arch" in capsys.readouterr().out


def test_frame_to_gpu_refuses_data_parallel() -> None:
    """`frame-to-gpu{data-parallel=N}` is an error naming the option, as frame-run's
    `--target cuda --data-parallel` is: the split is for CPU ranks."""
    from frame_mlir.passes.registry import FrameToGpu

    with pytest.raises(ValueError, match="data-parallel .* expects 0, found 2"):
        FrameToGpu(data_parallel=2).expand()
    assert FrameToGpu().expand()  # 0: the gpu stage's passes
