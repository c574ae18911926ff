"""The invalid example programs in testdata/kyn/invalid/ and the valid ones in testdata/kyn/.

Each invalid file declares in its comment header the complete list of diagnostics the
analysis must report (`# expect: RULE [file:]line:col`, `# expect-warning: ...`) and the
stage whose error class `load_module` raises (`# stage: ...`); see
testdata/kyn/invalid/README.md. The test checks all of them, so a stage that stops at its
first error fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from frame_mlir.frontends.kyn.errors import (
    KynDiagnostic,
    KynError,
    KynParseError,
    KynSemanticError,
    KynShapeError,
)
from frame_mlir.frontends.kyn.pipeline import analyze, load_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "kyn"
INVALID = EXAMPLES / "invalid"
INVALID_FILES = sorted(INVALID.glob("*.kyn"))
VALID_FILES = sorted(EXAMPLES.glob("*.kyn"))

STAGES = {"parse": KynParseError, "semantic": KynSemanticError, "shape": KynShapeError,
          "warning": None}

_EXPECT = re.compile(r"^# expect(?P<warn>-warning)?: (?P<rule>KYN-[A-Z]\d\d) "
                     r"(?:(?P<file>[\w.-]+\.kyn):)?(?P<line>\d+):(?P<col>\d+)\s*$")
_STAGE = re.compile(r"^# stage: (?P<stage>\w+)\s*$")


def _header(path: Path) -> tuple[list[tuple[str, str, int, int, str]], str, list[str]]:
    """(expected (rule, file name, line, col, severity) list, stage, why lines) from the
    leading comment block of `path`."""
    expected, stage, why = [], "", []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        m = _EXPECT.match(line)
        if m:
            expected.append((m["rule"], m["file"] or path.name, int(m["line"]), int(m["col"]),
                             "warning" if m["warn"] else "error"))
            continue
        if line.startswith("# expect"):
            raise AssertionError(f"{path.name}: malformed expectation line {line!r}")
        s = _STAGE.match(line)
        if s:
            stage = s["stage"]
            continue
        why.append(line)
    return expected, stage, why


def _key(d: KynDiagnostic) -> tuple[str, str, int, int, str]:
    return (d.rule, Path(d.file).name, d.line, d.col, d.severity)


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_there_are_invalid_examples() -> None:
    names = {p.name for p in INVALID_FILES}
    # one per row of the fact sheet's section 13 table, plus our own rules
    for must in ("indent_two_spaces.kyn", "indent_tab.kyn", "sweep_scalar_axis.kyn",
                 "unknown_activation.kyn", "csv_two_args.kyn", "split_one.kyn",
                 "dropout_one.kyn", "dense_before_input.kyn", "bce_three_units.kyn",
                 "nll_one_unit.kyn", "batchnorm_mismatch.kyn", "onnx_no_input_shape.kyn",
                 "undefined_param.kyn", "cycle_a.kyn", "cycle_b.kyn",
                 "softmax_cross_entropy.kyn", "unknown_key.kyn", "duplicate_key.kyn",
                 "missing_train.kyn", "unknown_optimizer_arg.kyn",
                 "train_unknown_model.kyn", "several_errors.kyn"):
        assert must in names


def test_readme_lists_every_invalid_file() -> None:
    readme = (INVALID / "README.md").read_text(encoding="utf-8")
    for p in INVALID_FILES:
        assert f"`{p.name}`" in readme, p.name


@pytest.mark.parametrize("path", INVALID_FILES, ids=_ids(INVALID_FILES))
def test_header_is_well_formed(path: Path) -> None:
    expected, stage, why = _header(path)
    assert expected, "no '# expect:' line"
    assert stage in STAGES, f"stage {stage!r}"
    assert any(len(w) > 20 for w in why), "the header should say why the program is wrong"
    if stage == "warning":
        assert all(sev == "warning" for *_, sev in expected)
    else:
        assert any(sev == "error" for *_, sev in expected)


@pytest.mark.parametrize("path", INVALID_FILES, ids=_ids(INVALID_FILES))
def test_analysis_reports_exactly_the_expected_diagnostics(path: Path) -> None:
    expected, _, _ = _header(path)
    a = analyze(path.read_text(encoding="utf-8"), str(path))
    got = sorted(_key(d) for d in a.diagnostics)
    assert got == sorted(expected), "\n".join(str(d) for d in a.diagnostics)


@pytest.mark.parametrize("path", INVALID_FILES, ids=_ids(INVALID_FILES))
def test_messages_are_one_line_with_place_severity_and_rule(path: Path) -> None:
    a = analyze(path.read_text(encoding="utf-8"), str(path))
    assert a.diagnostics
    for d in a.diagnostics:
        text = str(d)
        assert "\n" not in text and "\n" not in d.message
        assert d.message.strip() == d.message and d.message
        if Path(d.file).name == path.name:
            assert d.file == str(path)
        m = re.fullmatch(r"(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning): "
                         r"(?P<msg>.+) \[(?P<rule>KYN-[A-Z]\d\d)\]", text)
        assert m, text
        assert (m["file"], int(m["line"]), int(m["col"])) == (d.file, d.line, d.col)
        assert m["sev"] == d.severity and m["rule"] == d.rule and m["msg"] == d.message
        assert d.line >= 1 and d.col >= 1
        assert (d.end_line, d.end_col) >= (d.line, d.col)


@pytest.mark.parametrize("path", INVALID_FILES, ids=_ids(INVALID_FILES))
def test_load_module_raises_the_class_of_the_stage(path: Path) -> None:
    expected, stage, _ = _header(path)
    cls = STAGES[stage]
    if cls is None:  # warning only: the program loads and the warning comes with it
        module, warnings = load_module(path)
        assert module.model.name
        assert sorted(_key(d) for d in warnings) == sorted(expected)
        assert all(d.severity == "warning" for d in warnings)
        assert len(module.warnings) == len(expected)
        return
    with pytest.raises(KynError) as info:
        load_module(path)
    err = info.value
    assert type(err) is cls, f"{type(err).__name__} raised, {cls.__name__} expected"
    # the error carries every error diagnostic (warnings are returned, not raised)
    errors = [e for e in expected if e[4] == "error"]
    assert sorted(_key(d) for d in err.diagnostics) == sorted(errors)
    assert err.rules == [d.rule for d in err.diagnostics]
    lines = str(err).split("\n")
    assert len(lines) == len(err.diagnostics)
    for line in lines:
        assert re.fullmatch(r".+?:\d+:\d+: error: .+ \[KYN-[A-Z]\d\d\]", line), line


def test_documented_message_texts() -> None:
    def messages(name: str) -> list[str]:
        path = INVALID / name
        return [d.message for d in analyze(path.read_text(encoding="utf-8"),
                                           str(path)).diagnostics]

    assert messages("unknown_activation.kyn")[0].startswith(
        "Unsupported activation 'elu' in model 'Net'")
    assert messages("undefined_param.kyn")[0].startswith(
        "Undefined parameter reference '$h'. Known params: ['lr']")
    assert "loss 'bce' expects a final dense layer with 1 output unit (got 3)" in \
        messages("bce_three_units.kyn")[0]
    assert "batchnorm size 32 does not match incoming feature dim 64" in \
        messages("batchnorm_mismatch.kyn")[0]
    assert "onnx export requires input_shape" in messages("onnx_no_input_shape.kyn")[0]
    assert "did you mean 'split'?" in messages("unknown_key.kyn")[0]
    assert "import cycle: cycle_a.kyn -> cycle_b.kyn -> cycle_a.kyn" in \
        messages("cycle_a.kyn")[0]
    assert "sweep axis 'lr' must be a list" in messages("sweep_scalar_axis.kyn")[0]


# -- the valid examples ------------------------------------------------------------------
def test_there_are_valid_examples() -> None:
    assert {p.name for p in VALID_FILES} >= {"iris.kyn", "wine.kyn", "diabetes.kyn",
                                              "breast_cancer.kyn"}


@pytest.mark.parametrize("path", VALID_FILES, ids=_ids(VALID_FILES))
def test_valid_example_analyzes_cleanly(path: Path) -> None:
    a = analyze(path.read_text(encoding="utf-8"), str(path))
    assert a.diagnostics == [], "\n".join(str(d) for d in a.diagnostics)
    assert a.module is not None
    m = a.module
    assert m.train.model in m.models and m.train.data in m.datasets
    assert Path(m.dataset.resolved).is_file()
    # one hover shape per layer of the trained model
    assert len(a.layer_shapes) == len(m.model.layers)


@pytest.mark.parametrize("path", VALID_FILES, ids=_ids(VALID_FILES))
def test_valid_example_loads(path: Path) -> None:
    module, warnings = load_module(path)
    assert warnings == []
    assert module.warnings == ()
    assert module.source_path == str(path)
