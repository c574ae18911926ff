"""Input mutators, driven by a `random.Random` (hypothesis's `st.randoms()` in the tests,
a seeded `random.Random` in the campaign), so both use the same code.

`mutate_json` edits a parsed JSON document structurally (change, delete, add keys,
wrong types, extreme numbers, huge shapes, unicode, deep nesting, values moved from
elsewhere in the document) and `garble_text` damages serialized text (truncation,
byte flips, invalid UTF-8, non-finite literals). `mutate_text` is the line- and
token-level mutator for frame IR and `.kyn` programs.
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

Path_ = tuple[str | int, ...]

INTERESTING: tuple[Any, ...] = (
    0, 1, -1, 2, 7, 255, 256, 2**31 - 1, 2**31, 2**32, -(2**31), 2**53 + 1, 2**63, 2**64,
    0.0, -0.0, 0.5, 1e-45, 1e-300, 5e-324, 1e30, 1e38, 3.5e38, 1.7e308, -1e308, 8.0, 1e-8,
    "", "x", "float32", "relu", "none", "mse", "sgd", "linear", "uniform_seeded", "inline",
    "fc1", "x", "target", "params", "名前", "e\u0301", "\u0000", "\t", "a\nb", "🙂",
    "\ud7ff", "x" * 300, True, False, None, [], {}, [0], [1, 1], [8, 4], [-1, 4],
    [0, 4], [2**31, 2], [65536, 65536], [46341, 46341], [1] * 40, {"": 0},
)
KEYS = ("name", "kind", "shape", "input", "inputs", "outputs", "options", "type", "dtype",
        "batch", "steps", "seed", "log_every", "weight_shape", "bias_shape", "activation",
        "range", "values", "learning_rate", "target", "params", "colour", "$ref", "", "名前")


def _paths(doc: Any, limit: int = 400) -> list[Path_]:
    out: list[Path_] = []
    stack: list[tuple[Any, Path_]] = [(doc, ())]
    while stack and len(out) < limit:
        node, path = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(node, list) and len(node) <= 64:
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
    return out


def _get(doc: Any, path: Path_) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set(doc: Any, path: Path_, value: Any) -> Any:
    if not path:
        return value
    parent = _get(doc, path[:-1])
    parent[path[-1]] = value
    return doc


def _deep(depth: int, leaf: Any) -> Any:
    v = leaf
    for i in range(depth):
        v = [v] if i % 2 else {"a": v}
    return v


def _new_value(rng: random.Random, old: Any, doc: Any) -> Any:
    r = rng.random()
    if r < 0.35:
        return copy.deepcopy(rng.choice(INTERESTING))
    if r < 0.55 and isinstance(old, bool | int | float) and not isinstance(old, bool):
        op = rng.choice(("neg", "dbl", "half", "inc", "dec", "big", "tiny", "float", "str"))
        if op == "neg":
            return -old
        if op == "dbl":
            return old * 2
        if op == "half":
            return old / 2
        if op == "inc":
            return old + 1
        if op == "dec":
            return old - 1
        if op == "big":
            return old * 10 ** rng.randint(3, 40)
        if op == "tiny":
            return old * 10.0 ** -rng.randint(3, 40)
        if op == "float":
            return float(old)
        return str(old)
    if r < 0.65 and isinstance(old, list) and old:
        old = copy.deepcopy(old)
        op = rng.choice(("drop", "dup", "append", "shuffle", "wrap"))
        if op == "drop":
            old.pop(rng.randrange(len(old)))
        elif op == "dup":
            old.append(copy.deepcopy(rng.choice(old)))
        elif op == "append":
            old.append(copy.deepcopy(rng.choice(INTERESTING)))
        elif op == "shuffle":
            rng.shuffle(old)
        else:
            old = [old]
        return old
    if r < 0.72:
        return _deep(rng.choice((3, 50, 150)), rng.choice((0, "x", None)))  # deeper: garble_text
    if r < 0.8 and isinstance(old, str):
        return rng.choice((old + "_", old.upper(), old[:-1], old + old, " " + old,
                           old + "\u200b", old.replace("_", "-")))
    # a value from elsewhere in the document (type-correct more often than random)
    return copy.deepcopy(_get(doc, rng.choice(_paths(doc))))


def mutate_json(doc: Any, rng: random.Random, count: int | None = None) -> Any:
    """Apply 1-3 structural mutations to a copy of `doc`."""
    doc = copy.deepcopy(doc)
    for _ in range(count if count is not None else rng.choice((1, 1, 1, 2, 3))):
        paths = _paths(doc)
        path = rng.choice(paths)
        node = _get(doc, path)
        r = rng.random()
        if r < 0.5:
            doc = _set(doc, path, _new_value(rng, node, doc))
        elif r < 0.65 and path:
            parent = _get(doc, path[:-1])
            if isinstance(parent, dict):
                del parent[path[-1]]
            elif isinstance(parent, list):
                parent.pop(path[-1])
        elif r < 0.8 and isinstance(node, dict):
            node[rng.choice(KEYS)] = copy.deepcopy(rng.choice(INTERESTING))
        elif r < 0.9 and isinstance(node, list) and node:
            node.insert(rng.randrange(len(node) + 1), copy.deepcopy(rng.choice(node)))
        else:
            doc = _set(doc, path, _new_value(rng, node, doc))
    return doc


def dumps(doc: Any, rng: random.Random) -> str:
    """Serialize (non-ASCII kept or escaped, compact or indented, at random)."""
    try:
        return json.dumps(doc, ensure_ascii=rng.random() < 0.5,
                          indent=rng.choice((None, 2)), allow_nan=True)
    except (ValueError, RecursionError):
        return "[]"


def garble_text(text: str, rng: random.Random) -> bytes:
    """Text-level damage to a serialized document, as bytes (may not be UTF-8)."""
    data = text.encode("utf-8", "surrogatepass")
    op = rng.choice(("truncate", "flip", "insert", "delete", "nan", "dupkey", "bom",
                     "badutf8", "empty", "repeat", "deep"))
    if op == "deep":  # deeper than any recursive-descent parser's stack
        i = rng.randrange(len(data) + 1)
        n = rng.choice((1000, 100000))
        return data[:i] + b"[" * n + b"]" * n + data[i:]
    if op == "truncate":
        return data[:rng.randrange(len(data) + 1)]
    if op == "flip" and data:
        i = rng.randrange(len(data))
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    if op == "insert":
        i = rng.randrange(len(data) + 1)
        junk = rng.choice((b",", b"}", b"]", b"{", b"[", b'"', b"\\", b"NaN", b"-Infinity",
                           b"1e999", b"\x00", b"//", b"\n", b"9" * 5000, b"true"))
        return data[:i] + junk + data[i:]
    if op == "delete" and data:
        i = rng.randrange(len(data))
        return data[:i] + data[i + rng.randint(1, 8):]
    if op == "nan":
        return re.sub(rb"\d+(\.\d+)?", rng.choice((b"NaN", b"Infinity", b"1e400", b"-0")),
                      data, count=1)
    if op == "dupkey":
        return re.sub(rb'\{"(\w+)": ', rb'{"\1": 1, "\1": ', data, count=1)
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "badutf8":
        i = rng.randrange(len(data) + 1)
        return data[:i] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80")) + data[i:]
    if op == "empty":
        return rng.choice((b"", b" ", b"null", b"0", b'"x"', b"[]", b"{}"))
    return data * 2


_TOKEN = re.compile(r"[A-Za-z_][\w.$]*|-?\d+(?:\.\d+)?(?:e-?\d+)?|\S")


def corpus_tokens(texts: list[str]) -> list[str]:
    """The distinct tokens of a corpus, the mutator's vocabulary."""
    seen: dict[str, None] = {}
    for t in texts:
        for m in _TOKEN.finditer(t):
            seen.setdefault(m.group(0), None)
    return list(seen)


EXTRA_TOKENS = ("0", "-1", "1e999", "2147483648", "99999999999999999999", "0.0", "nan",
                "-0", "1e-45", "\t", "    ", "\u00e9", "🙂", "\x00", "$", "\"", "#", "(", ")",
                "[", "]", ",", "=", ":", "{", "}", "<", ">", "x", "%0", "%arg0", "^bb0")


def mutate_text(text: str, rng: random.Random, tokens: list[str],
                count: int | None = None) -> str:
    """1-4 line- or token-level edits of `text`, using `tokens` as the vocabulary."""
    for _ in range(count if count is not None else rng.choice((1, 1, 2, 3, 4))):
        lines = text.split("\n")
        op = rng.random()
        if op < 0.12 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
        elif op < 0.2:
            i = rng.randrange(len(lines))
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
        elif op < 0.26 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op < 0.32:
            i = rng.randrange(len(lines))
            lines[i] = rng.choice(("", "\t", " ", "  ")) + lines[i].lstrip(
                " " if rng.random() < 0.5 else "")
        else:
            matches = list(_TOKEN.finditer(text))
            if not matches:
                return text + rng.choice(tokens or ["x"])
            m = rng.choice(matches)
            r = rng.random()
            vocab = tokens if rng.random() < 0.8 or not tokens else list(EXTRA_TOKENS)
            if r < 0.45:
                new = rng.choice(vocab)
            elif r < 0.6:
                new = ""
            elif r < 0.75:
                new = m.group(0) + " " + rng.choice(vocab)
            elif r < 0.9 and re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", m.group(0)):
                new = rng.choice(("0", "-1", "1", "65536", "2147483647", "2147483648",
                                  "1e30", "1e-30", "0.0", "100000000", "3", m.group(0) + "0"))
            else:
                new = rng.choice(list(EXTRA_TOKENS))
            text = text[:m.start()] + new + text[m.end():]
            continue
        text = "\n".join(lines)
    if rng.random() < 0.05:
        text = text[:rng.randrange(len(text) + 1)]
    return text
