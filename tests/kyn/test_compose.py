"""Composition (fact sheet section 6, docs/kyn.md "Composition"): `$name` substitution
from params and `--param` overrides, `parse_overrides` coercion, imports (relative paths,
merging, duplicates, cycles, diamonds, missing files) and sweep expansion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from frame_mlir.frontends.kyn.ast import (
    Call,
    DenseLayer,
    DropoutLayer,
    Ident,
    InputLayer,
    ListValue,
    Literal,
    Loc,
    ParamRef,
    Program,
    plain,
)
from frame_mlir.frontends.kyn.compose import (
    coerce_param,
    expand_sweep,
    parse_overrides,
    resolve_imports,
    substitute_params,
)
from frame_mlir.frontends.kyn.errors import KynDiagnostic, KynParseError, KynSemanticError
from frame_mlir.frontends.kyn.parser import parse_file, parse_text
from frame_mlir.frontends.kyn.pipeline import analyze, load_module

TRAIN = """\
train:
    model = M
    data = D
    loss = mse
    optimizer = adam(lr=0.01)
    epochs = 2
    batch = 4
"""

DATASET = 'dataset D:\n    source = csv("d.csv")\n    target = "y"\n'


def parse(text: str) -> Program:
    return parse_text(text, "t.kyn")


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def compose(path: Path, overrides: dict[str, Any] | None = None
            ) -> tuple[Program, list[KynDiagnostic]]:
    diags: list[KynDiagnostic] = []
    prog = resolve_imports(parse_file(path), str(path), diags)
    prog = substitute_params(prog, overrides, diags)
    return prog, diags


# -- $name substitution ------------------------------------------------------------------
SUBST = """\
params:
    hidden = 64
    act = relu
    rate = 0.25
    lr = 0.003
    betas = [0.8, 0.9]
    target = "price"
    n = 10

dataset D:
    source = csv("d.csv")
    target = $target

model M:
    input $n
    dense $hidden $act
    dropout $rate
    batchnorm $hidden
    dense 1

train:
    optimizer = adam($lr, betas=$betas)
    scheduler = onecycle(max_lr=$lr)
    epochs = 2
    metrics_list = [$n, [$hidden]]
"""


def test_params_substituted_everywhere() -> None:
    prog = substitute_params(parse(SUBST))
    assert prog.datasets[0].value("target") == "price"
    layers = prog.models[0].layers
    assert isinstance(layers[0], InputLayer) and plain(layers[0].size) == 10
    assert isinstance(layers[1], DenseLayer)
    assert plain(layers[1].units) == 64 and layers[1].activation is not None
    assert isinstance(layers[1].activation, Ident) and layers[1].activation.name == "relu"
    assert isinstance(layers[2], DropoutLayer) and plain(layers[2].rate) == 0.25
    assert plain(layers[3].features) == 64  # type: ignore[union-attr]
    assert prog.train is not None
    opt = prog.train.get("optimizer")
    assert opt is not None and isinstance(opt.value, Call)
    assert plain(opt.value.args[0]) == 0.003  # a positional call argument
    assert plain(opt.value.kwarg("betas").value) == [0.8, 0.9]  # type: ignore[union-attr]
    sched = prog.train.get("scheduler")
    assert sched is not None and isinstance(sched.value, Call)
    assert plain(sched.value.kwargs[0].value) == 0.003
    assert prog.train.value("metrics_list") == [10, [64]]  # inside (nested) lists


def test_no_reference_survives_substitution() -> None:
    prog = substitute_params(parse(SUBST))

    def refs(v: Any) -> int:
        if isinstance(v, ParamRef):
            return 1
        if isinstance(v, ListValue):
            return sum(refs(i) for i in v.items)
        if isinstance(v, Call):
            return sum(refs(a) for a in v.args) + sum(refs(k.value) for k in v.kwargs)
        return 0

    count = sum(refs(e.value) for b in (*prog.datasets, prog.train) for e in b.entries)
    count += sum(refs(getattr(x, f)) for x in prog.models[0].layers
                 for f in ("size", "units", "activation", "rate", "features")
                 if getattr(x, f, None) is not None)
    assert count == 0


def test_substituted_value_takes_the_place_of_the_reference() -> None:
    prog = substitute_params(parse(SUBST))
    dense = prog.models[0].layers[1]
    assert isinstance(dense, DenseLayer)
    # `$hidden` is on line 16, columns 11..18: errors about the value point there
    assert dense.units.loc == Loc(16, 11, 16, 18)
    assert dense.activation is not None and dense.activation.loc == Loc(16, 19, 16, 23)


def test_params_and_sweep_blocks_keep_their_values() -> None:
    prog = substitute_params(parse("params:\n    a = 1\nsweep:\n    a = [1, 2]\n"))
    assert prog.params is not None and prog.params.values == {"a": 1}
    assert prog.sweep is not None and prog.sweep.axes == {"a": [1, 2]}


def test_overrides_win_over_params() -> None:
    prog = substitute_params(parse(SUBST), {"hidden": 128, "act": "gelu", "lr": 1e-4})
    dense = prog.models[0].layers[1]
    assert isinstance(dense, DenseLayer) and plain(dense.units) == 128
    assert plain(dense.activation) == "gelu"  # type: ignore[arg-type]
    assert plain(prog.models[0].layers[3].features) == 128  # type: ignore[union-attr]
    assert prog.train is not None
    assert plain(prog.train.get("optimizer").value.args[0]) == 1e-4  # type: ignore[union-attr]


def test_override_alone_satisfies_a_reference() -> None:
    prog = substitute_params(parse("model M:\n    input $n\n"), {"n": 7})
    assert plain(prog.models[0].layers[0].size) == 7  # type: ignore[union-attr]


def test_override_with_a_value_node() -> None:
    prog = substitute_params(parse("model M:\n    input $n\n"), {"n": Literal(9)})
    assert plain(prog.models[0].layers[0].size) == 9  # type: ignore[union-attr]


def test_unused_params_are_fine() -> None:
    diags: list[KynDiagnostic] = []
    substitute_params(parse("params:\n    unused = 3\nmodel M:\n    input 2\n"), None, diags)
    assert diags == []


def test_program_without_composition_passes_through_unchanged() -> None:
    prog = parse(DATASET + "model M:\n    input 2\n    dense 1\n" + TRAIN)
    assert resolve_imports(prog, None) is prog
    out = substitute_params(prog)
    assert out.items == prog.items and out.comments == prog.comments and out.file == prog.file


def test_undefined_reference_message_lists_known_params() -> None:
    text = "params:\n    hidden = 64\n\nmodel M:\n    input 4\n    dense $hidden relu\n" \
           "\ntrain:\n    optimizer = adam(lr=$lr)\n"
    with pytest.raises(KynSemanticError) as info:
        substitute_params(parse(text))
    (d,) = info.value.diagnostics
    # KynML's documented message text
    assert d.message == "Undefined parameter reference '$lr'. Known params: ['hidden']"
    assert (d.rule, d.kind, d.file, d.line, d.col) == ("KYN-S10", "semantic", "t.kyn", 9, 25)
    assert str(d) == ("t.kyn:9:25: error: Undefined parameter reference '$lr'. Known params: "
                      "['hidden'] [KYN-S10]")


def test_every_undefined_reference_is_reported() -> None:
    diags: list[KynDiagnostic] = []
    text = "params:\n    b = 1\n    a = 2\nmodel M:\n    input $x\n    dense $y $z\n"
    substitute_params(parse(text), None, diags)
    assert [(d.line, d.col) for d in diags] == [(5, 11), (6, 11), (6, 14)]
    assert all("Known params: ['a', 'b']" in d.message for d in diags)


def test_undefined_reference_without_params() -> None:
    diags: list[KynDiagnostic] = []
    substitute_params(parse("model M:\n    input $n\n"), None, diags)
    assert diags[0].message == "Undefined parameter reference '$n'. Known params: []"


def test_undefined_reference_suggests_a_close_name() -> None:
    diags: list[KynDiagnostic] = []
    substitute_params(parse("params:\n    hidden = 3\nmodel M:\n    input $hiden\n"), None,
                      diags)
    assert diags[0].message.startswith("Undefined parameter reference '$hiden'. Known "
                                       "params: ['hidden']")
    assert "did you mean 'hidden'?" in diags[0].message


def test_reference_inside_a_param_value_is_an_error() -> None:
    text = ("params:\n    a = $b\n    b = 16\n" + DATASET
            + "model M:\n    input 4\n    dense $a relu\n    dense 1\n" + TRAIN)
    a = analyze(text, "t.kyn")
    assert a.errors and a.module is None


# -- --param coercion --------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("64", 64),
    ("-3", -3),
    ("0.5", 0.5),
    ("1e-4", 1e-4),
    ("2.", 2.0),
    (".5", 0.5),
    ("true", True),
    ("false", False),
    ("True", "True"),
    ("gelu", "gelu"),
    ("data/x.csv", "data/x.csv"),
    ("", ""),
])
def test_coerce_param(text: str, expected: object) -> None:
    got = coerce_param(text)
    assert got == expected and type(got) is type(expected)


def test_parse_overrides() -> None:
    got = parse_overrides(["width=256", "drop=0.2", "lr=1e-4", "flag=true", "off=false",
                           "act=gelu", "expr=a=b", " spaced = 3 ", "path=models/x.pt"])
    assert got == {"width": 256, "drop": 0.2, "lr": 1e-4, "flag": True, "off": False,
                   "act": "gelu", "expr": "a=b", "spaced": 3, "path": "models/x.pt"}
    assert type(got["width"]) is int and type(got["drop"]) is float
    assert got["flag"] is True


def test_parse_overrides_empty_and_repeated() -> None:
    assert parse_overrides(None) == {} and parse_overrides([]) == {}
    assert parse_overrides(["a=1", "a=2"]) == {"a": 2}  # the last one wins


@pytest.mark.parametrize("item", ["width", "=5", " =5", "1x=2", "a-b=3", "a b=1", ""])
def test_parse_overrides_malformed(item: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_overrides([item])
    assert f"'{item}'" in str(info.value)


def test_string_override_accepted_where_an_identifier_is_expected() -> None:
    text = DATASET + "model M:\n    input 4\n    dense 8 $act\n    dense 1\n" + TRAIN
    a = analyze(text, "t.kyn", overrides=parse_overrides(["act=gelu"]))
    assert a.errors == []
    assert a.module is not None and a.module.model.layers[1].activation == "gelu"


def test_string_override_accepted_where_a_string_is_expected() -> None:
    text = ('dataset D:\n    source = csv("d.csv")\n    target = $tgt\n'
            "model M:\n    input 4\n    dense 1\n" + TRAIN)
    a = analyze(text, "t.kyn", overrides=parse_overrides(["tgt=price"]))
    assert a.errors == []
    assert a.module is not None and a.module.dataset.target == "price"


def test_analyze_records_params_and_overrides() -> None:
    text = ("params:\n    h = 8\n    k = 2\n" + DATASET
            + "model M:\n    input 4\n    dense $h relu\n    dense 1\n" + TRAIN)
    a = analyze(text, "t.kyn", overrides={"h": 32})
    assert a.errors == [] and a.module is not None
    assert a.module.params == {"h": 32, "k": 2}
    assert a.module.model.layers[1].out_features == 32


# -- imports -----------------------------------------------------------------------------
COMMON = """\
dataset Sensors:
    source = csv("data/sensors.csv")
    target = "load"
    normalize = true

model Wide:
    input 12
    dense $width relu
    dropout $drop
    dense 1 linear
"""

EXPERIMENT = """\
import "common.kyn"

params:
    width = 64
    drop = 0.1
    lr = 0.001

sweep:
    width = [32, 64, 128]
    lr = [0.001, 0.0003]

train:
    model = Wide
    data = Sensors
    loss = huber
    optimizer = adam(lr=$lr)
    epochs = 25
    batch = 128
    seed = 42

evaluate:
    metrics = [mae, mse]
"""


@pytest.fixture
def example_d(tmp_path: Path) -> Path:
    """The fact sheet's example D: experiment.kyn importing common.kyn."""
    write(tmp_path, {"common.kyn": COMMON, "experiment.kyn": EXPERIMENT})
    return tmp_path / "experiment.kyn"


def test_import_merges_datasets_and_models(example_d: Path) -> None:
    prog, diags = compose(example_d)
    assert diags == []
    assert [d.name for d in prog.datasets] == ["Sensors"]
    assert [m.name for m in prog.models] == ["Wide"]
    assert prog.datasets[0].origin == "common.kyn" and prog.models[0].origin == "common.kyn"
    # `$refs` inside imported blocks resolve against the host's params
    assert plain(prog.models[0].layers[1].units) == 64  # type: ignore[union-attr]
    assert plain(prog.models[0].layers[2].rate) == 0.1  # type: ignore[union-attr]


def test_example_d_loads(example_d: Path) -> None:
    module, warnings = load_module(example_d)
    assert warnings == []
    assert module.model.name == "Wide" and module.dataset.name == "Sensors"
    assert [x.out_features for x in module.model.layers] == [12, 64, 64, 1]
    # the imported dataset's CSV path resolves next to the file that names it
    assert module.dataset.resolved == str((example_d.parent / "data/sensors.csv").resolve())
    module, _ = load_module(example_d, parse_overrides(["width=256", "drop=0.2"]))
    assert [x.out_features for x in module.model.layers] == [12, 256, 256, 1]
    assert module.model.layers[2].rate == 0.2


def test_only_datasets_and_models_are_merged(tmp_path: Path) -> None:
    write(tmp_path, {
        "lib.kyn": ("params:\n    n = 99\nsweep:\n    n = [1, 2]\n" + DATASET
                    + "model M:\n    input 3\n    dense 1\n" + TRAIN.replace("mse", "l1")
                    + "evaluate:\n    metrics = [mae]\nexport:\n    format = torch\n"
                    "    path = \"x.pt\"\n"),
        "host.kyn": 'import "lib.kyn"\n\n' + TRAIN,
    })
    prog, diags = compose(tmp_path / "host.kyn")
    assert diags == []
    assert [d.name for d in prog.datasets] == ["D"] and [m.name for m in prog.models] == ["M"]
    assert prog.params is None and prog.sweep is None
    assert prog.evaluate is None and prog.export is None
    assert prog.train is not None and prog.train.value("loss") == "mse"  # the host's


def test_import_paths_are_relative_to_the_importing_file(tmp_path: Path) -> None:
    write(tmp_path, {
        "proj/main.kyn": 'import "lib/models.kyn"\nimport "../shared/data.kyn"\n\n' + TRAIN,
        "proj/lib/models.kyn": 'import "layers.kyn"\n',
        "proj/lib/layers.kyn": "model M:\n    input 3\n    dense 1\n",
        "shared/data.kyn": DATASET,
    })
    prog, diags = compose(tmp_path / "proj/main.kyn")
    assert diags == []
    assert [m.name for m in prog.models] == ["M"] and [d.name for d in prog.datasets] == ["D"]


def test_imported_blocks_come_first(tmp_path: Path) -> None:
    write(tmp_path, {"a.kyn": "model A:\n    input 1\n    dense 1\n",
                     "host.kyn": 'model H:\n    input 1\n    dense 1\nimport "a.kyn"\n'})
    prog, _ = compose(tmp_path / "host.kyn")
    assert [m.name for m in prog.models] == ["A", "H"]


def test_duplicate_between_host_and_import(tmp_path: Path) -> None:
    write(tmp_path, {"lib.kyn": DATASET,
                     "host.kyn": 'import "lib.kyn"\n\n' + DATASET})
    prog, diags = compose(tmp_path / "host.kyn")
    (d,) = diags
    assert d.rule == "KYN-S11" and d.kind == "semantic"
    assert d.message == "duplicate dataset 'D' (also defined in lib.kyn)"
    assert (Path(d.file).name, d.line, d.col) == ("host.kyn", 3, 9)  # the host's name
    with pytest.raises(KynSemanticError):
        resolve_imports(parse_file(tmp_path / "host.kyn"), str(tmp_path / "host.kyn"))


def test_duplicate_between_two_imported_files(tmp_path: Path) -> None:
    write(tmp_path, {"a.kyn": "model M:\n    input 1\n    dense 1\n",
                     "b.kyn": "model M:\n    input 2\n    dense 1\n",
                     "host.kyn": 'import "a.kyn"\nimport "b.kyn"\n'})
    _, diags = compose(tmp_path / "host.kyn")
    (d,) = diags
    assert d.rule == "KYN-S11"
    assert "duplicate model 'M'" in d.message and "a.kyn" in d.message \
        and "b.kyn" in d.message


def test_duplicate_between_two_imported_files_has_a_place(tmp_path: Path) -> None:
    write(tmp_path, {"a.kyn": "model M:\n    input 1\n    dense 1\n",
                     "b.kyn": "model M:\n    input 2\n    dense 1\n",
                     "host.kyn": 'import "a.kyn"\nimport "b.kyn"\n'})
    _, diags = compose(tmp_path / "host.kyn")
    (d,) = diags
    assert d.line >= 1 and d.col >= 1


def test_duplicate_from_two_files_with_the_same_relative_name(tmp_path: Path) -> None:
    write(tmp_path, {
        "sub1/common.kyn": 'dataset D:\n    source = csv("a.csv")\n    target = "y"\n',
        "sub2/common.kyn": 'dataset D:\n    source = csv("b.csv")\n    target = "y"\n',
        "sub1/x.kyn": 'import "common.kyn"\n',
        "sub2/y.kyn": 'import "common.kyn"\n',
        "host.kyn": 'import "sub1/x.kyn"\nimport "sub2/y.kyn"\n',
    })
    _, diags = compose(tmp_path / "host.kyn")
    assert [d.rule for d in diags] == ["KYN-S11"]


def test_duplicate_inside_an_imported_file(tmp_path: Path) -> None:
    write(tmp_path, {"lib.kyn": DATASET + DATASET.replace("d.csv", "e.csv"),
                     "host.kyn": 'import "lib.kyn"\nmodel M:\n    input 1\n    dense 1\n'
                     + TRAIN})
    a = analyze((tmp_path / "host.kyn").read_text(), str(tmp_path / "host.kyn"))
    assert [d.rule for d in a.errors] == ["KYN-S11"]


def test_diamond_import_is_merged_once(tmp_path: Path) -> None:
    write(tmp_path, {
        "base.kyn": DATASET,
        "left.kyn": 'import "base.kyn"\nmodel L:\n    input 1\n    dense 1\n',
        "right.kyn": 'import "base.kyn"\nmodel R:\n    input 1\n    dense 1\n',
        "host.kyn": 'import "left.kyn"\nimport "right.kyn"\n',
    })
    prog, diags = compose(tmp_path / "host.kyn")
    assert diags == []
    assert [d.name for d in prog.datasets] == ["D"]
    assert [m.name for m in prog.models] == ["L", "R"]


def test_diamond_through_different_spellings_of_one_path(tmp_path: Path) -> None:
    write(tmp_path, {
        "lib/base.kyn": DATASET,
        "lib/a.kyn": 'import "base.kyn"\n',
        "host.kyn": 'import "lib/a.kyn"\nimport "lib/../lib/base.kyn"\n',
    })
    prog, diags = compose(tmp_path / "host.kyn")
    assert diags == [] and [d.name for d in prog.datasets] == ["D"]


def test_import_cycle_names_the_chain(tmp_path: Path) -> None:
    write(tmp_path, {"a.kyn": 'import "b.kyn"\n' + DATASET,
                     "b.kyn": '# b\nimport "a.kyn"\nmodel M:\n    input 1\n    dense 1\n'})
    prog, diags = compose(tmp_path / "a.kyn")
    (d,) = diags
    assert d.rule == "KYN-S12" and d.kind == "semantic"
    assert d.message == "import cycle: a.kyn -> b.kyn -> a.kyn"
    # it points at the import that closes the cycle
    assert (Path(d.file).name, d.line, d.col) == ("b.kyn", 2, 1)
    with pytest.raises(KynSemanticError):
        resolve_imports(parse_file(tmp_path / "a.kyn"), str(tmp_path / "a.kyn"))


def test_self_import_is_a_cycle(tmp_path: Path) -> None:
    write(tmp_path, {"a.kyn": 'import "a.kyn"\n'})
    _, diags = compose(tmp_path / "a.kyn")
    assert [(d.rule, d.line) for d in diags] == [("KYN-S12", 1)]
    assert "a.kyn -> a.kyn" in diags[0].message


def test_longer_cycle(tmp_path: Path) -> None:
    write(tmp_path, {"a.kyn": 'import "b.kyn"\n', "b.kyn": 'import "c.kyn"\n',
                     "c.kyn": 'import "b.kyn"\n'})
    _, diags = compose(tmp_path / "a.kyn")
    assert [d.message for d in diags] == ["import cycle: b.kyn -> c.kyn -> b.kyn"]


def test_missing_imported_file(tmp_path: Path) -> None:
    write(tmp_path, {"host.kyn": '# x\nimport "nope.kyn"\n'})
    _, diags = compose(tmp_path / "host.kyn")
    (d,) = diags
    assert d.rule == "KYN-S12" and (d.line, d.col) == (2, 1)
    assert "imported file 'nope.kyn' not found" in d.message
    with pytest.raises(KynSemanticError):
        load_module(tmp_path / "host.kyn")


def test_syntax_error_in_an_imported_file(tmp_path: Path) -> None:
    write(tmp_path, {"lib.kyn": "model M:\n  input 1\n",
                     "host.kyn": 'import "lib.kyn"\n'})
    _, diags = compose(tmp_path / "host.kyn")
    assert [(d.rule, Path(d.file).name, d.line) for d in diags] == [("KYN-P01", "lib.kyn", 2)]


def test_nested_import_diagnostic_names_a_usable_path(tmp_path: Path) -> None:
    write(tmp_path, {"lib/inner.kyn": "model Q:\n  input 3\n",
                     "lib/outer.kyn": 'import "inner.kyn"\n',
                     "host.kyn": 'import "lib/outer.kyn"\n'})
    _, diags = compose(tmp_path / "host.kyn")
    (d,) = diags
    assert Path(d.file).as_posix().endswith("lib/inner.kyn")


def test_imported_csv_path_resolves_next_to_the_defining_file(tmp_path: Path) -> None:
    write(tmp_path, {"lib/d.csv": "a,y\n1,2\n", "lib/data.kyn": DATASET,
                     "host.kyn": 'import "lib/data.kyn"\nmodel M:\n    input 1\n    dense 1\n'
                     + TRAIN})
    module, _ = load_module(tmp_path / "host.kyn")
    assert module.dataset.resolved == str((tmp_path / "lib/d.csv").resolve())


def test_nested_imported_csv_path_resolves_next_to_the_defining_file(tmp_path: Path) -> None:
    write(tmp_path, {"lib/d.csv": "a,y\n1,2\n", "lib/data.kyn": DATASET,
                     "lib/outer.kyn": 'import "data.kyn"\n',
                     "host.kyn": 'import "lib/outer.kyn"\nmodel M:\n    input 1\n    dense 1\n'
                     + TRAIN})
    module, _ = load_module(tmp_path / "host.kyn")
    assert module.dataset.resolved == str((tmp_path / "lib/d.csv").resolve())


# -- sweeps ------------------------------------------------------------------------------
def test_sweep_expansion_order(example_d: Path) -> None:
    prog = resolve_imports(parse_file(example_d), str(example_d))
    runs = expand_sweep(prog)
    # 3 x 2 = 6 combinations, the first axis varies slowest
    assert [c for c, _ in runs] == [
        {"width": 32, "lr": 0.001}, {"width": 32, "lr": 0.0003},
        {"width": 64, "lr": 0.001}, {"width": 64, "lr": 0.0003},
        {"width": 128, "lr": 0.001}, {"width": 128, "lr": 0.0003}]
    for combo, resolved in runs:
        dense = resolved.models[0].layers[1]
        assert isinstance(dense, DenseLayer) and plain(dense.units) == combo["width"]
        assert plain(resolved.models[0].layers[2].rate) == 0.1  # type: ignore[union-attr]
        opt = resolved.train.get("optimizer")  # type: ignore[union-attr]
        assert opt is not None and plain(opt.value.kwargs[0].value) == combo["lr"]  # type: ignore[union-attr]


def test_cli_override_fixes_a_sweep_axis(example_d: Path) -> None:
    prog = resolve_imports(parse_file(example_d), str(example_d))
    runs = expand_sweep(prog, {"width": 256, "drop": 0.2})
    assert [c for c, _ in runs] == [{"lr": 0.001}, {"lr": 0.0003}]
    for _, resolved in runs:
        assert plain(resolved.models[0].layers[1].units) == 256  # type: ignore[union-attr]
        assert plain(resolved.models[0].layers[2].rate) == 0.2  # type: ignore[union-attr]


def test_every_sweep_program_validates(example_d: Path) -> None:
    prog = resolve_imports(parse_file(example_d), str(example_d))
    text = example_d.read_text()
    for combo, resolved in expand_sweep(prog):
        a = analyze(text, str(example_d), composed=resolved, overrides=combo)
        assert a.errors == []
        assert a.module is not None
        assert a.module.model.layers[1].out_features == combo["width"]
        assert a.module.train.optimizer.args["lr"] == combo["lr"]


def test_program_without_sweep_expands_to_one_run() -> None:
    prog = parse("params:\n    n = 3\nmodel M:\n    input $n\n")
    ((combo, resolved),) = expand_sweep(prog)
    assert combo == {}
    assert plain(resolved.models[0].layers[0].size) == 3  # type: ignore[union-attr]


def test_sweep_of_names_and_axes_missing_from_params() -> None:
    prog = parse("sweep:\n    act = [relu, gelu]\n    n = [1]\n"
                 "model M:\n    input $n\n    dense 2 $act\n")
    runs = expand_sweep(prog)
    assert [c for c, _ in runs] == [{"act": "relu", "n": 1}, {"act": "gelu", "n": 1}]
    assert plain(runs[1][1].models[0].layers[1].activation) == "gelu"  # type: ignore[union-attr]


def test_sweep_with_an_undefined_reference_raises() -> None:
    prog = parse("sweep:\n    a = [1, 2]\nmodel M:\n    input $b\n")
    with pytest.raises(KynSemanticError):
        expand_sweep(prog)


def test_sweep_axis_reference_is_consistent() -> None:
    text = ("params:\n    grid = [0.1, 0.2]\n    lr = 0.1\nsweep:\n    lr = $grid\n"
            + DATASET + "model M:\n    input 2\n    dense 1\n" + TRAIN.replace("0.01", "$lr"))
    a = analyze(text, "t.kyn")
    if a.errors:
        assert [d.rule for d in a.errors] == ["KYN-P05"]
    else:
        assert a.program is not None
        try:
            runs = expand_sweep(parse(text))
        except KynParseError as e:
            raise AssertionError(f"analyze accepted the program, expand_sweep did not: {e}") from e
        assert len(runs) == 2
