"""The `.kyn` formatter: canonical layout, default dropping, float spelling, comments kept,
parse errors raised, and idempotence on every `.kyn` file found and on generated
variations of the example programs (which must also keep the program's meaning and
every comment)."""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from dataclasses import fields
from pathlib import Path

import pytest

from frame_mlir.frontends.kyn.ast import Import, ModelBlock
from frame_mlir.frontends.kyn.errors import KynParseError
from frame_mlir.frontends.kyn.format import format_file, format_float, format_source, format_value
from frame_mlir.frontends.kyn.parser import parse_text
from frame_mlir.frontends.kyn.vocab import KEYS, REQUIRED

REPO = Path(__file__).resolve().parents[2]
FACT_SHEET = REPO.parent / "shared" / "docs" / "kyn-language.md"

REGRESSION = """\
# house prices, plain regression
dataset Houses:
    source = csv("data/housing.csv")
    target = "price"
    split = 0.85
    normalize = true

model PriceNet:
    input 10
    dense 64 relu
    dense 32 relu
    dense 1 linear

train:
    model = PriceNet
    data = Houses
    loss = mse
    optimizer = adam(lr=0.001)
    epochs = 40
    batch = 32
    seed = 7

evaluate:
    metrics = [mae, rmse]

export:
    format = torch
    path = "models/price_net.pt"
"""

CLASSIFIER = """\
dataset Churn:
    source = csv("data/churn.csv")
    target = "churned"
    normalize = true
    num_workers = 2
    pin_memory = true
    prefetch = 4

model ChurnNet:
    input 24
    dense 128 relu
    batchnorm
    dropout 0.3
    dense 32 gelu
    dense 1 sigmoid

train:
    model = ChurnNet
    data = Churn
    loss = bce
    optimizer = adamw(lr=0.0005, weight_decay=0.01)
    epochs = 60
    batch = 64
    device = cuda
    scheduler = cosine(T_max=60)
    early_stop = early_stop(patience=8)
    checkpoint = checkpoint(every_n=10)
    precision = bf16
    seed = 1234
    deterministic = true

evaluate:
    metrics = [accuracy]

export:
    format = torchscript
    path = "models/churn.ts"
"""

COMPOSED = """\
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

CANONICAL = [REGRESSION, CLASSIFIER, COMPOSED]


def _kyn_sources() -> list[tuple[str, str]]:
    """Every `.kyn` file of the repository and every example program of the fact sheet
    that parses."""
    found = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        for f in sorted(files):
            if f.endswith(".kyn"):
                p = Path(root, f)
                found.append((str(p.relative_to(REPO)), p.read_text(encoding="utf-8")))
    if FACT_SHEET.exists():
        blocks = re.findall(r"```\n(.*?)```", FACT_SHEET.read_text(encoding="utf-8"), re.S)
        for i, b in enumerate(blocks):
            try:
                parse_text(b)
            except KynParseError:
                continue  # the sheet's grammar sketch is not a program
            found.append((f"kyn-language.md#{i}", b))
    return found


# -- canonical layout ------------------------------------------------------------------------------
@pytest.mark.parametrize("text", CANONICAL)
def test_canonical_programs_are_fixed_points(text: str) -> None:
    assert format_source(text) == text


def test_layout_rules() -> None:
    messy = (
        "export:\n    path = \"m.onnx\"\n    format=onnx\n    input_shape = [ 1,4 ]\n"
        "train:\n    epochs    =  3\n    model = M\n    optimizer = sgd( lr = 0.05 ,"
        "momentum=0.9 )\n\n\n    data = D\n    batch = 4\n    loss = cross_entropy\n"
        "model M:\n    input    4\n    dense   3   linear\n"
        "dataset D:\n    target = \"y\"\n    source = csv( \"d.csv\" )\n"
        "import \"lib.kyn\"\n")
    assert format_source(messy) == (
        'import "lib.kyn"\n\n'
        'dataset D:\n    source = csv("d.csv")\n    target = "y"\n\n'
        "model M:\n    input 4\n    dense 3 linear\n\n"
        "train:\n    model = M\n    data = D\n    loss = cross_entropy\n"
        "    optimizer = sgd(lr=0.05, momentum=0.9)\n    epochs = 3\n    batch = 4\n\n"
        'export:\n    format = onnx\n    path = "m.onnx"\n    input_shape = [1, 4]\n')


def test_key_order_follows_vocabulary_and_unknown_keys_go_last() -> None:
    keys = list(KEYS["train"])
    shuffled = keys[::-1]
    body = "".join(f"    {k} = 1\n" for k in ["zeta", *shuffled[:5], "alpha", *shuffled[5:]])
    out = format_source("train:\n" + body)
    written = [ln.split(" = ")[0].strip() for ln in out.splitlines()[1:]]
    assert written == keys + ["zeta", "alpha"]


def test_block_order_keeps_source_order_within_a_kind() -> None:
    text = ("model B:\n    input 1\ndataset Y:\n    target = \"t\"\nmodel A:\n    input 2\n"
            "dataset X:\n    target = \"t\"\n")
    heads = [ln for ln in format_source(text).splitlines() if ln and not ln[0].isspace()]
    assert heads == ["dataset Y:", "dataset X:", "model B:", "model A:"]


def test_duplicate_simple_blocks_are_kept() -> None:
    out = format_source("train:\n    epochs = 1\ntrain:\n    epochs = 2\n")
    assert out == "train:\n    epochs = 1\n\ntrain:\n    epochs = 2\n"


def test_empty_and_comment_only_sources() -> None:
    assert format_source("") == ""
    assert format_source("\n\n   \n") == ""
    assert format_source("# only\n\n  # comments\n") == "# only\n# comments\n"


# -- defaults -----------------------------------------------------------------------------------------
def test_literal_defaults_are_dropped() -> None:
    text = ('dataset D:\n    source = csv("d.csv")\n    target = "y"\n    split = 0.8\n'
            "    normalize = false\n    shuffle = true\n    num_workers = 0\n"
            "    pin_memory = false\n\n"
            "train:\n    model = M\n    device = auto\n    precision = fp32\n"
            "    compile = false\n    deterministic = false\n\n"
            'export:\n    format = onnx\n    path = "a.onnx"\n    input_shape = [1, 2]\n'
            "    opset = 17\n")
    assert format_source(text) == (
        'dataset D:\n    source = csv("d.csv")\n    target = "y"\n\n'
        "train:\n    model = M\n\n"
        'export:\n    format = onnx\n    path = "a.onnx"\n    input_shape = [1, 2]\n')


def test_non_defaults_refs_wrong_types_and_duplicates_are_kept() -> None:
    text = ("params:\n    s = 0.8\n\n"
            "dataset D:\n    split = $s\n    normalize = true\n    shuffle = false\n"
            "    num_workers = 0.0\n    pin_memory = \"false\"\n\n"
            "train:\n    device = cpu\n    precision = \"fp32\"\n    compile = true\n"
            "    deterministic = false\n    deterministic = false\n\n"
            "export:\n    opset = 18\n")
    out = format_source(text)
    for kept in ("split = $s", "normalize = true", "shuffle = false",
                 "num_workers = 0.0", 'pin_memory = "false"', "device = cpu",
                 'precision = "fp32"', "compile = true", "opset = 18"):
        assert f"    {kept}\n" in out, kept
    assert out.count("deterministic = false") == 2  # a duplicate is an error: keep both
    assert "    s = 0.8\n" in out  # params have no defaults


# -- values ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "text"), [
    (0.0001, "0.0001"), (1e-05, "0.00001"), (2.0, "2.0"), (0.5, "0.5"), (-0.1, "-0.1"),
    (1e20, "100000000000000000000.0"), (1.5e-7, "0.00000015"), (1e16, "10000000000000000.0"),
    (123456789.125, "123456789.125"), (-2.5e-10, "-0.00000000025"), (0.0, "0.0"),
    (5e-324, None), (1.7976931348623157e308, None), (0.1 + 0.2, "0.30000000000000004"),
])
def test_float_spelling_round_trips_without_exponent(value: float, text: str | None) -> None:
    s = format_float(value)
    assert "e" not in s.lower() and "." in s
    assert float(s) == value
    if text is not None:
        assert s == text
    # and the parser reads the formatted source back as the same float
    assert parse_text(f"params:\n    x = {s}\n").params.values["x"] == value


def test_value_spelling() -> None:
    text = ("params:\n    a = 1e-3\n    b = .5\n    c = 2.\n    d = -7\n    e = \"x # y\"\n"
            "train:\n    optimizer = adam( lr = $lr , betas = [ 0.9 , 0.999 ] )\n"
            "    scheduler = step(step_size=10,gamma=5E-1)\n"
            "    early_stop = early_stop ( patience = 3 )\n"
            "dataset D:\n    source = csv( \"a.csv\" )\n")
    out = format_source(text)
    for line in ("a = 0.001", "b = 0.5", "c = 2.0", "d = -7", 'e = "x # y"',
                 "optimizer = adam(lr=$lr, betas=[0.9, 0.999])",
                 "scheduler = step(step_size=10, gamma=0.5)",
                 "early_stop = early_stop(patience=3)", 'source = csv("a.csv")'):
        assert f"    {line}\n" in out, line
    v = parse_text("params:\n    x = [f(1, k=[]), $r, true]\n").params.entries[0].value
    assert format_value(v) == "[f(1, k=[]), $r, true]"


def test_layers() -> None:
    text = "model M:\n    input   $n\n    dense 8\n    dense  4   $act\n    batchnorm  4\n" \
           "    batchnorm\n    dropout  .25\n"
    assert format_source(text) == ("model M:\n    input $n\n    dense 8\n    dense 4 $act\n"
                                   "    batchnorm 4\n    batchnorm\n    dropout 0.25\n")


# -- comments --------------------------------------------------------------------------------------------
COMMENTED = """\
# file header
# second line

# about the training
train:   # the train block
    epochs = 10
    # which model
    model   = Net
    device = auto  # this default goes, the comment stays
# a column-1 comment inside the body
    loss = mse
    data = D
    # end of train

model Net:  # header
    input 4
    dense 1   # output
        # deeply indented

# the dataset
dataset D:
    source = csv("d.csv")  # csv
    target = "y"
    # about split
    split = 0.8
# end of file
#   second
"""

COMMENTED_OUT = """\
# file header
# second line

# the dataset
dataset D:
    source = csv("d.csv")  # csv
    target = "y"
    # about split

model Net:  # header
    input 4
    dense 1  # output
    # deeply indented

# about the training
train:  # the train block
    # which model
    model = Net
    data = D
    # a column-1 comment inside the body
    loss = mse
    epochs = 10
    # this default goes, the comment stays
    # end of train

# end of file
#   second
"""


def test_comments_are_kept_and_move_with_their_statements() -> None:
    assert format_source(COMMENTED) == COMMENTED_OUT
    assert format_source(COMMENTED_OUT) == COMMENTED_OUT


def test_leading_comment_without_blank_line_moves_with_its_block() -> None:
    text = "# about the model\nmodel M:\n    input 1\n\ndataset D:\n    target = \"y\"\n"
    assert format_source(text) == ('dataset D:\n    target = "y"\n\n'
                                   "# about the model\nmodel M:\n    input 1\n")


def test_comments_on_imports_and_empty_blocks() -> None:
    text = ('evaluate:\n    # metrics to come\n# lib\nimport "a.kyn"  # first\n'
            'import "b.kyn"\n')
    out = format_source(text)
    assert out == ('# lib\nimport "a.kyn"  # first\nimport "b.kyn"\n\n'
                   "evaluate:\n    # metrics to come\n")
    assert format_source(out) == out


# -- errors, files ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    "train:\n  epochs = 1\n", "train:\n\tepochs = 1\n", "sweep:\n    lr = 0.1\n",
    "model M:\n    conv 3\n", "trian:\n", "train:\n    epochs = \n", 'import "a\n',
])
def test_parse_errors_raise(bad: str) -> None:
    with pytest.raises(KynParseError):
        format_source(bad, "bad.kyn")


def test_semantic_problems_do_not_stop_the_formatter() -> None:
    text = "train:\n    loss = nosuchloss\n    epochs = -1\n    bogus = 3\nmodel M:\n" \
           "    dense 3 elu\n    input 0\n"
    out = format_source(text)
    assert "loss = nosuchloss" in out and "bogus = 3" in out and "dense 3 elu" in out


def test_format_file(tmp_path: Path) -> None:
    p = tmp_path / "x.kyn"
    p.write_text("train:\n    epochs=3\n    model = M\n", encoding="utf-8")
    out = format_file(p)
    assert out == "train:\n    model = M\n    epochs = 3\n"
    assert p.read_text(encoding="utf-8") != out  # not written without write=True
    assert format_file(p, write=True) == out
    assert p.read_text(encoding="utf-8") == out
    p.write_text("train:\n  epochs = 3\n", encoding="utf-8")
    with pytest.raises(KynParseError):
        format_file(p, write=True)
    assert p.read_text(encoding="utf-8") == "train:\n  epochs = 3\n"  # untouched


# -- idempotence ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "text"), _kyn_sources() + [
    (f"example{i}", t) for i, t in enumerate(CANONICAL + [COMMENTED])])
def test_idempotent_on_every_kyn_source(name: str, text: str) -> None:
    try:
        parse_text(text, name)
    except KynParseError:  # a deliberately invalid file: the formatter refuses it too
        with pytest.raises(KynParseError):
            format_source(text, name)
        return
    once = format_source(text, name)
    assert format_source(once, name) == once


def _default_text(default: object) -> str:
    if isinstance(default, bool):
        return "true" if default else "false"
    return format_float(default) if isinstance(default, float) else str(default)


def _meaning(text: str) -> list:
    """What the program says, independent of layout, order and dropped defaults."""
    blocks: list[tuple] = []
    for item in parse_text(text).items:
        if isinstance(item, ModelBlock):
            layers = tuple((type(s).__name__, *(format_value(getattr(s, f.name))
                                                for f in fields(s) if f.name != "loc"
                                                and getattr(s, f.name) is not None))
                           for s in item.layers)
            blocks.append(("model", item.name, layers))
        elif isinstance(item, Import):
            blocks.append(("import", item.path))
        else:
            spec = KEYS.get(item.kind, {})
            entries = sorted((e.key, format_value(e.value)) for e in item.entries)
            entries = [(k, v) for k, v in entries if k not in spec
                       or spec[k].default in (None, REQUIRED)
                       or v != _default_text(spec[k].default)]
            blocks.append((item.kind, getattr(item, "name", ""), tuple(entries)))
    return sorted(blocks, key=repr)


def _comments(text: str) -> Counter:
    return Counter(c.text for c in parse_text(text).comments)


def _mutate(text: str, rng: random.Random) -> str:
    """A layout variation of `text` with the same meaning, plus comments."""
    chunks = re.split(r"\n(?=\S)", text.strip("\n"))
    rng.shuffle(chunks)
    out: list[str] = []
    n = 0
    for chunk in chunks:
        lines = chunk.split("\n")
        head, body = lines[0], lines[1:]
        if not head.startswith("model"):
            rng.shuffle(body)
        if head.startswith("dataset") and rng.random() < 0.5:
            body.append(rng.choice(["    split = 0.8", "    shuffle = true",
                                    "    num_workers = 0  # workers"]))
        if head.startswith("train") and rng.random() < 0.5:
            body.insert(rng.randrange(len(body) + 1), "    precision = fp32")
        if rng.random() < 0.3:
            n += 1
            out.append(rng.choice(["", "    "]) + f"# before {n}")
        if rng.random() < 0.3:
            n += 1
            head += f"   # head {n}"
        out.append(head)
        for b in body:
            b = re.sub(r"\s*=\s*", rng.choice(["=", " = ", "   =  "]), b, count=1)
            b = b.replace(", ", rng.choice([",", ", ", " , "]))
            r = rng.random()
            if r < 0.15:
                n += 1
                out.append(rng.choice(["", "    ", "        "]) + f"# c{n}")
            elif r < 0.3:
                n += 1
                b += rng.choice(["  ", " ", "    "]) + f"# t{n}"
            elif r < 0.4:
                out.append("")
            out.append(b)
        if rng.random() < 0.3:
            n += 1
            out.append(f"    # end {n}")
        out.extend([""] * rng.randrange(3))
    if rng.random() < 0.3:
        out.append("# the end")
    return "\n".join(out) + rng.choice(["\n", "", "\n\n"])


@pytest.mark.parametrize("seed", range(60))
def test_generated_variations(seed: int) -> None:
    rng = random.Random(seed)
    base = CANONICAL[seed % len(CANONICAL)]
    text = _mutate(base, rng)
    once = format_source(text)
    assert format_source(once) == once, text
    assert _comments(once) == _comments(text), text  # every comment kept
    assert _meaning(once) == _meaning(base)  # the same program
    assert re.fullmatch(r"(?:[^\n]*\S\n|\n(?!\n))*", once), "blank lines or trailing spaces"


def test_crlf_bom_and_trailing_spaces() -> None:
    text = "\ufeff# hi\r\n\r\ntrain:  # x  \r\n    epochs = 1   # y\r\n"
    assert format_source(text) == "# hi\n\ntrain:  # x\n    epochs = 1  # y\n"
