"""The `.kyn` parser: lexical rules (fact sheet section 1, docs/kyn.md "Syntax"), the
statement forms, source locations, error reporting (every syntax error of a file), CRLF
and BOM input, and a parse of every example program.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from frame_mlir.frontends.kyn.ast import (
    BatchNormLayer,
    Call,
    DatasetBlock,
    DenseLayer,
    DropoutLayer,
    Entry,
    EvaluateBlock,
    ExportBlock,
    Ident,
    Import,
    InputLayer,
    KwArg,
    ListValue,
    Literal,
    Loc,
    ModelBlock,
    ParamRef,
    ParamsBlock,
    Program,
    SweepBlock,
    TrainBlock,
    plain,
)
from frame_mlir.frontends.kyn.errors import KynParseError
from frame_mlir.frontends.kyn.parser import (
    parse_file,
    parse_text,
    parse_with_diagnostics,
    tokenize_line,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "testdata" / "kyn").glob("*.kyn"))

PROGRAM = """\
# a full program
import "common.kyn"

params:
    hidden = 64

sweep:
    lr = [0.1, 0.01]

dataset Houses:
    source = csv("data/housing.csv")
    target = "price"
    split = 0.85

model PriceNet:
    input 10
    dense $hidden relu
    batchnorm
    dropout 0.2
    dense 1

train:
    model = PriceNet
    data = Houses
    loss = mse
    optimizer = adam(lr=0.001)
    epochs = 40
    batch = 32

evaluate:
    metrics = [mae, rmse]

export:
    format = torch
    path = "models/price_net.pt"
"""


def parse(text: str) -> Program:
    return parse_text(text, "t.kyn")


def errors(text: str) -> list[tuple[str, int, int]]:
    """(rule, line, col) of every syntax error of `text`."""
    return [(d.rule, d.line, d.col) for d in parse_with_diagnostics(text, "t.kyn")[1]]


def value_of(src: str) -> object:
    """The value node of `x = <src>` in a params block."""
    prog = parse(f"params:\n    x = {src}\n")
    assert prog.params is not None
    return prog.params.entries[0].value


# -- program structure -------------------------------------------------------------------
def test_full_program_structure() -> None:
    prog = parse(PROGRAM)
    assert [type(b).__name__ for b in prog.items] == [
        "Import", "ParamsBlock", "SweepBlock", "DatasetBlock", "ModelBlock", "TrainBlock",
        "EvaluateBlock", "ExportBlock"]
    assert prog.file == "t.kyn"
    assert [i.path for i in prog.imports] == ["common.kyn"]
    assert isinstance(prog.params, ParamsBlock) and prog.params.values == {"hidden": 64}
    assert isinstance(prog.sweep, SweepBlock) and prog.sweep.axes == {"lr": [0.1, 0.01]}
    (ds,) = prog.datasets
    assert isinstance(ds, DatasetBlock) and ds.name == "Houses"
    assert [e.key for e in ds.entries] == ["source", "target", "split"]
    assert ds.value("target") == "price" and ds.value("split") == 0.85
    assert ds.value("missing", "dflt") == "dflt"
    src = ds.get("source")
    assert src is not None and isinstance(src.value, Call)
    assert src.value.name == "csv" and plain(src.value.args[0]) == "data/housing.csv"
    (m,) = prog.models
    assert isinstance(m, ModelBlock) and m.name == "PriceNet"
    assert [type(x) for x in m.layers] == [InputLayer, DenseLayer, BatchNormLayer,
                                           DropoutLayer, DenseLayer]
    assert isinstance(prog.train, TrainBlock)
    assert prog.train.value("model") == "PriceNet" and prog.train.value("epochs") == 40
    assert isinstance(prog.evaluate, EvaluateBlock)
    assert prog.evaluate.value("metrics") == ["mae", "rmse"]
    assert isinstance(prog.export, ExportBlock) and prog.export.value("format") == "torch"
    assert prog.model("PriceNet") is m and prog.dataset("Houses") is ds
    assert prog.model("Nope") is None and prog.dataset("Nope") is None


def test_block_order_is_free_and_blocks_repeat() -> None:
    prog = parse("train:\n    epochs = 1\n\nmodel A:\n    input 1\n\nmodel B:\n    input 2\n"
                 "\ndataset D:\n    target = \"y\"\n\ntrain:\n    epochs = 2\n")
    assert [m.name for m in prog.models] == ["A", "B"]
    # the first train block is `train`; the duplicate stays visible in `items`
    assert prog.train is not None and prog.train.value("epochs") == 1
    assert sum(isinstance(b, TrainBlock) for b in prog.items) == 2


def test_empty_and_comment_only_sources() -> None:
    for text in ("", "\n\n", "# only a comment\n", "   \n\t\n# c\n    # indented c\n"):
        prog = parse(text)
        assert prog.items == ()


def test_block_with_empty_body() -> None:
    prog = parse("model M:\n\ntrain:\n")
    assert prog.models[0].layers == ()
    assert prog.train is not None and prog.train.entries == ()


# -- indentation -------------------------------------------------------------------------
@pytest.mark.parametrize("indent", ["  ", "   ", "     ", "        ", "\t", "\t    ",
                                    "    \t", "  \t  "])
def test_bad_indentation_is_p01(indent: str) -> None:
    text = f"train:\n{indent}epochs = 1\n    batch = 2\n"
    assert errors(text) == [("KYN-P01", 2, 1)]
    prog, diags = parse_with_diagnostics(text, "t.kyn")
    assert "tab" in diags[0].message if "\t" in indent else "spaces" in diags[0].message
    # the rest of the block still parses
    assert prog.train is not None and [e.key for e in prog.train.entries] == ["batch"]


def test_tab_message_and_space_count_message() -> None:
    (d,) = parse_with_diagnostics("train:\n\tepochs = 1\n", "t.kyn")[1]
    assert "tab" in d.message and d.rule == "KYN-P01"
    (d,) = parse_with_diagnostics("train:\n  epochs = 1\n", "t.kyn")[1]
    assert "found 2 spaces" in d.message


def test_blank_and_whitespace_only_lines_are_ignored() -> None:
    prog = parse("train:\n\n    epochs = 1\n   \n\t\n \t \n    batch = 2\n\n\n")
    assert prog.train is not None and [e.key for e in prog.train.entries] == ["epochs",
                                                                              "batch"]


def test_body_ends_at_the_next_column_one_line() -> None:
    prog = parse("params:\n    a = 1\ntrain:\n    b = 2\n")
    assert prog.params is not None and [e.key for e in prog.params.entries] == ["a"]
    assert prog.train is not None and [e.key for e in prog.train.entries] == ["b"]


def test_indented_line_outside_a_block_is_p04() -> None:
    assert errors("    epochs = 1\n") == [("KYN-P04", 1, 1)]
    assert errors('import "a.kyn"\n    x = 1\n') == [("KYN-P04", 2, 1)]


# -- comments ----------------------------------------------------------------------------
def test_comments_anywhere() -> None:
    text = ("# top\n"
            "train:  # after a header\n"
            "# column one inside a body\n"
            "  # two spaces\n"
            "\t# a tab\n"
            "        # eight spaces\n"
            "    epochs = 5  # after a value\n"
            "    batch = 2# no space\n"
            "model M:\n"
            "    dense 64 relu  # after a layer\n")
    prog = parse(text)
    assert prog.train is not None
    assert [(e.key, plain(e.value)) for e in prog.train.entries] == [("epochs", 5),
                                                                      ("batch", 2)]
    assert len(prog.models[0].layers) == 1
    comments = [(c.line, c.col, c.own_line, c.text) for c in prog.comments]
    assert comments == [
        (1, 1, True, "# top"),
        (2, 9, False, "# after a header"),
        (3, 1, True, "# column one inside a body"),
        (4, 3, True, "# two spaces"),
        (5, 2, True, "# a tab"),
        (6, 9, True, "# eight spaces"),
        (7, 17, False, "# after a value"),
        (8, 14, False, "# no space"),
        (10, 20, False, "# after a layer"),
    ]


def test_hash_inside_a_string_is_text() -> None:
    prog = parse('dataset D:\n    target = "col # 1"  # real comment\n')
    assert prog.datasets[0].value("target") == "col # 1"
    assert [c.text for c in prog.comments] == ["# real comment"]
    call = value_of('csv("a#b.csv")')
    assert isinstance(call, Call) and plain(call.args[0]) == "a#b.csv"


# -- values ------------------------------------------------------------------------------
@pytest.mark.parametrize(("src", "expected", "typ"), [
    ("64", 64, int),
    ("0", 0, int),
    ("-1", -1, int),
    ("007", 7, int),
    ("0.001", 0.001, float),
    ("0.8", 0.8, float),
    ("-0.1", -0.1, float),
    (".5", 0.5, float),
    ("-.5", -0.5, float),
    ("2.", 2.0, float),
    ("1e-3", 0.001, float),
    ("5E-4", 0.0005, float),
    ("1e3", 1000.0, float),
    ("1.5e+2", 150.0, float),
    ("-2.5e-1", -0.25, float),
    ("true", True, bool),
    ("false", False, bool),
    ('"data/x.csv"', "data/x.csv", str),
    ('""', "", str),
    ("\"it's\"", "it's", str),
])
def test_literal_values(src: str, expected: object, typ: type) -> None:
    v = value_of(src)
    assert isinstance(v, Literal)
    assert type(v.value) is typ and v.value == expected
    assert v.text == src


@pytest.mark.parametrize("src", ["relu", "adam", "auto", "HouseData", "_x1", "True",
                                 "FALSE", "snake_case_9"])
def test_identifiers(src: str) -> None:
    v = value_of(src)
    assert v == Ident(src, v.loc)  # `True` is an identifier, not a boolean


def test_param_reference() -> None:
    v = value_of("$hidden_2")
    assert isinstance(v, ParamRef) and v.name == "hidden_2"
    assert plain(v) == "$hidden_2"


def test_nested_lists() -> None:
    v = value_of("[1, [2, 3.5], [], [[true]], relu, $x, \"s\"]")
    assert isinstance(v, ListValue)
    assert plain(v) == [1, [2, 3.5], [], [[True]], "relu", "$x", "s"]
    assert isinstance(v.items[5], ParamRef)
    assert plain(value_of("[]")) == []
    assert plain(value_of("[ 1 ,2 ]")) == [1, 2]


def test_calls_with_positional_and_keyword_args() -> None:
    v = value_of('f(1, "a", [2, 3], k=g(x=$q, y=[1]), flag=true)')
    assert isinstance(v, Call) and v.name == "f"
    assert [plain(a) for a in v.args] == [1, "a", [2, 3]]
    assert [k.name for k in v.kwargs] == ["k", "flag"]
    inner = v.kwargs[0].value
    assert isinstance(inner, Call) and inner.name == "g" and inner.args == ()
    assert isinstance(inner.kwargs[0].value, ParamRef) and inner.kwargs[0].value.name == "q"
    assert v.kwarg("flag") is not None and plain(v.kwarg("flag").value) is True  # type: ignore[union-attr]
    assert v.kwarg("nope") is None


def test_call_forms() -> None:
    v = value_of("adam(lr=0.001)")
    # KynML's FunctionCall(name, args, kwargs): adam(lr=0.001) -> adam, [], {lr: 0.001}
    assert isinstance(v, Call) and (v.name, v.args) == ("adam", ())
    assert [(k.name, plain(k.value)) for k in v.kwargs] == [("lr", 0.001)]
    v = value_of("adam()")
    assert isinstance(v, Call) and v.args == () and v.kwargs == ()
    v = value_of("adam ( lr = 0.1 )")  # spaces anywhere inside a call
    assert isinstance(v, Call) and plain(v.kwargs[0].value) == 0.1
    v = value_of('csv("a.csv")')
    assert isinstance(v, Call) and [plain(a) for a in v.args] == ["a.csv"]
    v = value_of("[f(1), g(x=2)]")
    assert isinstance(v, ListValue) and all(isinstance(i, Call) for i in v.items)


@pytest.mark.parametrize(("src", "col", "fragment"), [
    ("1x", 9, "malformed number '1x'"),
    ("1.2.3", 9, "malformed number"),
    ("1e", 9, "malformed number"),
    ("3abc", 9, "malformed number"),  # identifiers cannot start with a digit
    ('"abc', 9, "unterminated string"),
    ("'abc'", 9, "unexpected character"),  # single quotes are not strings
    ("@", 9, "unexpected character '@'"),
    ("--1", 9, "unexpected character '-'"),
    ("$", 9, "unexpected character '$'"),
    ("", 9, "expected a value"),
    ("[1 2]", 12, "expected ',' or ']'"),
    ("[1,", 12, "expected a value"),
    ("[1, 2,]", 15, "expected a value, found ']'"),
    ("f(1", 12, "expected ',' or ')'"),
    ("f(k=1, 2)", 16, "positional argument after a keyword argument"),
    ("f(k=1, k=2)", 16, "keyword argument 'k' given twice"),
    ("1 2", 11, "unexpected '2' after the value"),
    (":", 9, "expected a value, found ':'"),
])
def test_malformed_values(src: str, col: int, fragment: str) -> None:
    prog, diags = parse_with_diagnostics(f"params:\n    x = {src}\n", "t.kyn")
    assert [(d.rule, d.line, d.col) for d in diags] == [("KYN-P02", 2, col)]
    assert fragment in diags[0].message
    assert prog.params is not None and prog.params.entries == ()  # the line is dropped


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    (d,) = parse_with_diagnostics("params:\n    x = " + "[" * 40 + "]" * 40 + "\n",
                                  "t.kyn")[1]
    assert d.rule == "KYN-P02" and "nested too deeply" in d.message


# -- statement forms ---------------------------------------------------------------------
@pytest.mark.parametrize("line", ["epochs = 5", "epochs=5", "epochs   =   5",
                                  "epochs =5", "epochs= 5"])
def test_key_value_spacing(line: str) -> None:
    prog = parse(f"train:\n    {line}\n")
    assert prog.train is not None and prog.train.value("epochs") == 5


def test_tab_between_tokens_is_whitespace() -> None:
    # only a tab in the indentation is an error (KYN-P01)
    prog = parse("train:\n    epochs\t=\t5\t# c\n")
    assert prog.train is not None and prog.train.value("epochs") == 5


def test_aligned_equals() -> None:
    prog = parse("dataset D:\n    source    = csv(\"a.csv\")\n    target    = \"y\"\n"
                 "    normalize = true\n")
    assert prog.datasets[0].value("normalize") is True


@pytest.mark.parametrize(("line", "rule", "col", "fragment"), [
    ("epochs 5", "KYN-P02", 12, "expected '=' after the key 'epochs'"),
    ("= 5", "KYN-P02", 5, "expected 'key = value'"),
    ("3 = 4", "KYN-P02", 5, "expected 'key = value'"),
    ("epochs = 5 6", "KYN-P02", 16, "unexpected '6'"),
])
def test_malformed_key_value(line: str, rule: str, col: int, fragment: str) -> None:
    (d,) = parse_with_diagnostics(f"train:\n    {line}\n", "t.kyn")[1]
    assert (d.rule, d.line, d.col) == (rule, 2, col)
    assert fragment in d.message


def test_layer_statements() -> None:
    prog = parse("model M:\n    input 10\n    dense 64 relu\n    dense $h $act\n"
                 "    dense 1\n    dropout 0.2\n    dropout $p\n    batchnorm\n"
                 "    batchnorm 64\n")
    layers = prog.models[0].layers
    assert isinstance(layers[0], InputLayer) and plain(layers[0].size) == 10
    assert isinstance(layers[1], DenseLayer)
    assert plain(layers[1].units) == 64 and layers[1].activation == Ident(
        "relu", layers[1].activation.loc)  # type: ignore[union-attr]
    assert isinstance(layers[2], DenseLayer)
    assert isinstance(layers[2].units, ParamRef) and isinstance(layers[2].activation,
                                                                ParamRef)
    assert isinstance(layers[3], DenseLayer) and layers[3].activation is None
    assert isinstance(layers[4], DropoutLayer) and plain(layers[4].rate) == 0.2
    assert isinstance(layers[5], DropoutLayer) and isinstance(layers[5].rate, ParamRef)
    assert isinstance(layers[6], BatchNormLayer) and layers[6].features is None
    assert isinstance(layers[7], BatchNormLayer) and plain(layers[7].features) == 64
    assert [x.keyword for x in layers] == ["input", "dense", "dense", "dense", "dropout",
                                           "dropout", "batchnorm", "batchnorm"]


@pytest.mark.parametrize(("line", "rule", "fragment"), [
    ("inptu 4", "KYN-P06", "did you mean 'input'?"),
    ("linear 4", "KYN-P06", "unknown layer 'linear'"),
    ("Dense 4", "KYN-P06", "did you mean 'dense'?"),  # keywords are case-sensitive
    ("conv2d 3", "KYN-P06", "expected one of input, dense, dropout, batchnorm"),
    ("dense", "KYN-P02", "'dense' takes one or two operands"),
    ("dense 4 relu extra", "KYN-P02", "found 3"),
    ("input", "KYN-P02", "'input' takes one operand"),
    ("input 4 5", "KYN-P02", "found 2"),
    ("dropout", "KYN-P02", "'dropout' takes one operand"),
    ("batchnorm 1 2", "KYN-P02", "at most one operand"),
    ("epochs = 5", "KYN-P06", "unknown layer 'epochs'"),
])
def test_malformed_layers(line: str, rule: str, fragment: str) -> None:
    (d,) = parse_with_diagnostics(f"model M:\n    {line}\n", "t.kyn")[1]
    assert (d.rule, d.line, d.col) == (rule, 2, 5 if rule == "KYN-P06" else d.col)
    assert fragment in d.message


def test_import_forms() -> None:
    prog = parse('import "common.kyn"\nimport "../lib/x.kyn"  # c\n')
    assert [i.path for i in prog.imports] == ["common.kyn", "../lib/x.kyn"]
    assert all(isinstance(i, Import) for i in prog.imports)
    assert errors("import common.kyn\n")[0][0] == "KYN-P02"
    assert errors("import common\n") == [("KYN-P02", 1, 8)]
    assert errors('import "a.kyn" "b.kyn"\n') == [("KYN-P02", 1, 16)]
    assert errors("import\n") == [("KYN-P02", 1, 7)]


@pytest.mark.parametrize(("text", "expected"), [
    ("modle M:\n", [("KYN-P03", 1, 1)]),
    ("Model M:\n", [("KYN-P03", 1, 1)]),  # keywords are case-sensitive
    ("42:\n", [("KYN-P03", 1, 1)]),
    ("model:\n", [("KYN-P02", 1, 6)]),
    ("model 3:\n", [("KYN-P02", 1, 7)]),
    ('dataset "D":\n', [("KYN-P02", 1, 9)]),
    ("train: x\n", [("KYN-P02", 1, 8)]),
    ("train\n", [("KYN-P02", 1, 6)]),
    ("train X:\n", [("KYN-P02", 1, 7)]),
])
def test_malformed_headers(text: str, expected: list[tuple[str, int, int]]) -> None:
    assert errors(text) == expected


def test_unknown_header_suggests() -> None:
    (d,) = parse_with_diagnostics("modle M:\n", "t.kyn")[1]
    assert "did you mean 'model'?" in d.message


def test_body_of_a_broken_header_is_not_reported_again() -> None:
    # the header's own error covers its body
    assert errors("modle M:\n    input 4\n    dense 1\n") == [("KYN-P03", 1, 1)]
    assert errors("model:\n    input 4\n") == [("KYN-P02", 1, 6)]


def test_header_missing_colon_reports_one_error() -> None:
    assert errors("train:\n    epochs = 1\nmodel Net\n    input 4\n    dense 1\n") == [
        ("KYN-P02", 3, 10)]


def test_header_with_bad_character_reports_one_error() -> None:
    text = 'model M:\n    input 4\ndataset N@me:\n    source = csv("a.csv")\n'
    assert errors(text) == [("KYN-P02", 3, 10)]


def test_sweep_axis_must_be_a_list() -> None:
    assert errors("sweep:\n    lr = 0.001\n") == [("KYN-P05", 2, 5)]
    assert errors("sweep:\n    act = relu\n") == [("KYN-P05", 2, 5)]
    assert errors('sweep:\n    p = "x"  # c\n') == [("KYN-P05", 2, 5)]
    (d,) = parse_with_diagnostics("sweep:\n    lr = 0.001  # c\n", "t.kyn")[1]
    assert "sweep axis 'lr' must be a list" in d.message
    assert (d.end_line, d.end_col) == (2, 15)  # the entry, without the comment
    assert errors("sweep:\n    lr = [0.1]\n    w = []\n") == []


def test_sweep_scalar_error_range_with_hash_in_string() -> None:
    (d,) = parse_with_diagnostics('sweep:\n    a = "x#y"\n', "t.kyn")[1]
    assert (d.line, d.col, d.end_line, d.end_col) == (2, 5, 2, 14)


# -- locations ---------------------------------------------------------------------------
def test_locations_of_nodes() -> None:
    prog = parse(PROGRAM)
    imp = prog.imports[0]
    assert imp.loc.line == 2 and imp.loc.col == 1
    ds = prog.datasets[0]
    assert ds.loc == Loc(10, 1, 13, 17)  # header line .. end of the last entry
    assert ds.name_loc == Loc(10, 9, 10, 15)
    split = ds.get("split")
    assert isinstance(split, Entry)
    assert split.loc == Loc(13, 5, 13, 17) and split.key_loc == Loc(13, 5, 13, 10)
    assert split.value.loc == Loc(13, 13, 13, 17)
    src = ds.get("source")
    assert src is not None and isinstance(src.value, Call)
    assert src.value.loc == Loc(11, 14, 11, 37)
    assert src.value.args[0].loc == Loc(11, 18, 11, 36)
    m = prog.models[0]
    assert m.name_loc == Loc(15, 7, 15, 15)
    dense = m.layers[1]
    assert isinstance(dense, DenseLayer)
    assert dense.loc == Loc(17, 5, 17, 23)
    assert dense.units.loc == Loc(17, 11, 17, 18)  # the $hidden reference
    assert dense.activation is not None and dense.activation.loc == Loc(17, 19, 17, 23)
    assert m.layers[2].loc == Loc(18, 5, 18, 14)
    assert m.loc == Loc(15, 1, 20, 12)
    assert prog.train is not None
    opt = prog.train.get("optimizer")
    assert opt is not None and isinstance(opt.value, Call)
    kw = opt.value.kwargs[0]
    assert isinstance(kw, KwArg)
    assert kw.loc == Loc(26, 22, 26, 30) and kw.value.loc == Loc(26, 25, 26, 30)
    assert prog.evaluate is not None
    metrics = prog.evaluate.get("metrics")
    assert metrics is not None and isinstance(metrics.value, ListValue)
    assert [i.loc.col for i in metrics.value.items] == [16, 21]
    assert metrics.value.loc == Loc(31, 15, 31, 26)


def test_block_without_body_location() -> None:
    prog = parse("train:\n")
    assert prog.train is not None and prog.train.loc == Loc(1, 1, 1, 7)


def test_import_location_excludes_trailing_comment() -> None:
    prog = parse('import "a.kyn"  # c\n')
    assert prog.imports[0].loc == Loc(1, 1, 1, 15)


def test_error_locations_are_one_based_with_an_end() -> None:
    (d,) = parse_with_diagnostics("params:\n    x = 1x\n", "t.kyn")[1]
    assert (d.line, d.col, d.end_line, d.end_col) == (2, 9, 2, 11)
    assert d.file == "t.kyn" and d.kind == "parse" and d.severity == "error"
    assert str(d) == "t.kyn:2:9: error: malformed number '1x' [KYN-P02]"


def test_tokenize_line_columns_are_zero_based() -> None:
    toks, comment = tokenize_line('    a = f(1, "x#y")  # c')
    assert [(t.kind, t.text, t.col) for t in toks] == [
        ("ident", "a", 4), ("punct", "=", 6), ("ident", "f", 8), ("punct", "(", 9),
        ("number", "1", 10), ("punct", ",", 11), ("string", '"x#y"', 13),
        ("punct", ")", 18)]
    assert comment is not None and comment.text == "# c" and comment.col == 21


# -- every error reported ----------------------------------------------------------------
def test_every_syntax_error_is_reported() -> None:
    text = ("modle M:\n"           # 1 P03 (its body is skipped)
            "    input 4\n"
            "dataset D:\n"         # 3
            "    source = csv(\"a.csv\"\n"  # 4 P02
            "  target = \"y\"\n"   # 5 P01
            "    split = 0.5\n"    # 6 ok
            "model Net:\n"         # 7
            "    dens 3\n"         # 8 P06
            "    input 4\n"        # 9 ok
            "\tdense 1\n"          # 10 P01
            "train:\n"             # 11
            "    epochs = 1x\n"    # 12 P02
            "    batch = 2\n"      # 13 ok
            "sweep:\n"             # 14
            "    lr = 0.1\n")      # 15 P05
    assert errors(text) == [("KYN-P03", 1, 1), ("KYN-P02", 4, 25), ("KYN-P01", 5, 1),
                            ("KYN-P06", 8, 5), ("KYN-P01", 10, 1), ("KYN-P02", 12, 14),
                            ("KYN-P05", 15, 5)]
    prog, _ = parse_with_diagnostics(text, "t.kyn")
    # what parsed is kept (for the editor)
    assert [e.key for e in prog.datasets[0].entries] == ["split"]
    assert len(prog.model("Net").layers) == 1  # type: ignore[union-attr]
    assert prog.train is not None and [e.key for e in prog.train.entries] == ["batch"]
    with pytest.raises(KynParseError) as info:
        parse_text(text, "t.kyn")
    assert len(info.value.diagnostics) == 7
    assert info.value.rules == ["KYN-P03", "KYN-P02", "KYN-P01", "KYN-P06", "KYN-P01",
                                "KYN-P02", "KYN-P05"]
    lines = str(info.value).split("\n")
    assert len(lines) == 7 and lines[0].startswith("t.kyn:1:1: error: ")


def test_parse_text_default_source_name() -> None:
    with pytest.raises(KynParseError) as info:
        parse_text("train\n")
    assert info.value.diagnostics[0].file == "<string>"


# -- CRLF and BOM ------------------------------------------------------------------------
def _shape(prog: Program) -> list:
    return [(type(b).__name__, getattr(b, "loc", None),
             [(e.key, plain(e.value), e.loc) for e in getattr(b, "entries", ())],
             [(x.loc, x.keyword) for x in getattr(b, "layers", ())]) for b in prog.items]


def test_crlf_input_parses_like_lf() -> None:
    lf = parse(PROGRAM)
    crlf = parse(PROGRAM.replace("\n", "\r\n"))
    assert _shape(crlf) == _shape(lf)
    assert [(c.line, c.col, c.text) for c in crlf.comments] == [
        (c.line, c.col, c.text) for c in lf.comments]
    # no carriage return leaks into a value
    assert crlf.datasets[0].value("target") == "price"


def test_crlf_errors_keep_their_columns() -> None:
    assert errors("train:\r\n    epochs = 1x\r\n  batch = 2\r\n") == [
        ("KYN-P02", 2, 14), ("KYN-P01", 3, 1)]


def test_bom_is_not_part_of_the_text() -> None:
    lf = parse(PROGRAM)
    bom = parse("\ufeff" + PROGRAM)
    assert _shape(bom) == _shape(lf)
    prog = parse('\ufeffdataset D:\n    target = "y"\n')
    assert prog.datasets[0].name_loc == Loc(1, 9, 1, 10)
    both = parse("\ufeff" + PROGRAM.replace("\n", "\r\n"))
    assert _shape(both) == _shape(lf)
    assert errors("\ufeffmodle M:\n") == [("KYN-P03", 1, 1)]


def test_parse_file_reads_utf8_with_bom_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "x.kyn"
    p.write_bytes(b"\xef\xbb\xbf" + PROGRAM.replace("\n", "\r\n").encode())
    prog = parse_file(p)
    assert prog.file == str(p)
    assert _shape(prog) == _shape(parse(PROGRAM))


def test_parse_file_missing_is_p00(tmp_path: Path) -> None:
    with pytest.raises(KynParseError) as info:
        parse_file(tmp_path / "nope.kyn")
    (d,) = info.value.diagnostics
    assert d.rule == "KYN-P00" and "not found" in d.message


def test_parse_file_not_utf8_is_p00(tmp_path: Path) -> None:
    p = tmp_path / "x.kyn"
    p.write_bytes(b"train:\n    a = \"\xff\"\n")
    with pytest.raises(KynParseError) as info:
        parse_file(p)
    assert info.value.rules == ["KYN-P00"]


# -- the example programs ----------------------------------------------------------------
def test_example_files_exist() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_parse_example(path: Path) -> None:
    prog, diags = parse_with_diagnostics(path.read_text(encoding="utf-8"), str(path))
    assert diags == []
    assert len(prog.datasets) == 1 and len(prog.models) == 1
    assert prog.train is not None and prog.evaluate is not None
    assert prog.train.value("model") == prog.models[0].name
    assert prog.train.value("data") == prog.datasets[0].name
    layers = prog.models[0].layers
    assert isinstance(layers[0], InputLayer) and isinstance(layers[-1], DenseLayer)
    assert prog.comments and prog.comments[0].line == 1  # the description header
    assert parse_file(path) == prog
