"""Option-value mutations: an input stays well formed and only the *values* of its
options change, to the edges of their ranges and just past them.

The structural mutators (`mutate.py`) mostly break a document's shape, which its schema
refuses; these keep it valid except for one or two numbers, so that what validation
accepts reaches the compiler. Each frontend's mutator knows its option kinds:

- networks: every option of every operator type (`frontends/network/options.OPERATORS`:
  ints, pairs, numbers, bools, lists, enums) and the outputs' `loss_weight`; pairs
  of related options (Hardtanh min_val / max_val, Slice begin / end) set together, so
  min > max and min == max occur;
- `.kyn`: every layer kind's arguments (`input N`, `dense N act`, `dropout R`,
  `batchnorm [N]`, and a new layer of a random kind inserted), every block key and every
  call argument of `vocab.KEYS` / `vocab.CALLS`, each with values of its type;
- v0 specs: every number, bool and number list of the document (sizes, learning rate,
  steps, seed, log_every, ranges with lo > hi, inline values);
- the API (`api_interp`): op and module attributes (`EDGE_FLOATS`, `EDGE_INTS`).

Boundary values: 0, -1, 1, 2, INT32_MAX and one past it, UINT32_MAX and one past it,
2^53, 2^63, 1e30; float32's smallest subnormal and a value that rounds to 0 in float32
(1e-46), its largest finite value and values that overflow it (3.5e38, 1e39), float64's
largest, values either side of 1 (momentum, dropout, split), NaN and infinities (in JSON
these are `NaN` / `Infinity`, refused as JSON-001; in `.kyn`, `nan` / `inf` / `1e400`).
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

INT_EDGES: tuple[int, ...] = (0, -1, 1, 2, 3, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53,
                              2**63, -(2**31), 10**30)
FLOAT_EDGES: tuple[float, ...] = (
    0.0, -0.0, -1.0, 1.0, 0.5, 2.0, 5.0, 1e-46, 1e-45, 1.2e-38, 1e-8, 0.9999999, 1.0000001,
    1e30, 3.4028234663852886e38, 3.4028235e38, 3.5e38, 1e39, -3.5e38, -1e39,
    1.7976931348623157e308)
NAN_ISH: tuple[float, ...] = (float("nan"), float("inf"), float("-inf"))
#: The API's float attributes: ordinary values (so most programs still compile and run)
#: and the edges.
EDGE_FLOATS: tuple[float, ...] = (0.5, 1.0, 4.0, 1e-5, *FLOAT_EDGES, *NAN_ISH)
EDGE_INTS: tuple[int, ...] = (1, 1, 2, *INT_EDGES)


def edge_number(rng: random.Random, old: Any) -> Any:
    """A boundary value for a number option whose current value is `old`."""
    r = rng.random()
    if isinstance(old, bool):
        return rng.choice((not old, 0, 1, 2, -1))
    if isinstance(old, int):
        if r < 0.7:
            return rng.choice((*INT_EDGES, old - 1, old + 1, old * 2, -old))
        if r < 0.85:
            return rng.choice((float(old), old + 0.5))
        return rng.choice(FLOAT_EDGES)
    if isinstance(old, float):
        if r < 0.75:
            return rng.choice((*FLOAT_EDGES, -old, old * 1e30, old / 1e30, old * (1 + 1e-7)))
        if r < 0.95:
            return rng.choice(INT_EDGES)
        return rng.choice(NAN_ISH)
    return rng.choice((*INT_EDGES[:5], *FLOAT_EDGES[:6]))


# ---------------------------------------------------------------------- JSON documents


def _number_paths(doc: Any) -> list[tuple[Any, ...]]:
    """Paths of every number and bool leaf of `doc`."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(node, list) and len(node) <= 64:
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
        elif isinstance(node, bool | int | float):
            out.append(path)
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def mutate_leaf_values(doc: Any, rng: random.Random) -> Any:
    """1-2 number leaves of a copy of `doc` set to boundary values; sometimes a pair of
    numbers in one list swapped or made equal (a range with lo > hi or lo == hi)."""
    doc = copy.deepcopy(doc)
    paths = _number_paths(doc)
    if not paths:
        return doc
    for _ in range(rng.choice((1, 1, 2))):
        path = rng.choice(paths)
        parent = _get(doc, path[:-1])
        if isinstance(parent, list) and len(parent) == 2 and rng.random() < 0.25:
            if rng.random() < 0.5:
                parent.reverse()
            else:
                parent[1] = parent[0]
            continue
        parent[path[-1]] = edge_number(rng, parent[path[-1]])
    return doc


# ---------------------------------------------------------------------- networks

#: Options set together, so that min > max, min == max and the like occur.
_RELATED = {"Hardtanh": ("min_val", "max_val"), "Slice": ("begin", "end"),
            "Interpolation": ("out_h", "out_w"), "Elementwise": ("coef1", "coef2"),
            "Convolution2D": ("kernel", "pad"), "Pooling2D": ("kernel", "stride")}


def _option_value(rng: random.Random, option: Any, old: Any) -> Any:
    """A value for one network option of kind `option.kind` (mostly edges of its range,
    some ordinary values)."""
    kind = option.kind
    small = rng.choice((1, 1, 2, 2, 3, 4))
    if kind == "enum":
        if rng.random() < 0.9 and option.choices:
            return rng.choice(option.choices)
        return rng.choice(("", "RELU", "none", 0))
    if kind == "bool":
        return rng.choice((True, False, 0, 1, 2, -1, "true"))
    if kind in ("int", "pos_int"):
        if rng.random() < 0.3:
            return rng.choice((small, -small))
        return edge_number(rng, old if isinstance(old, int) and not isinstance(old, bool)
                           else 1)
    if kind == "number":
        if rng.random() < 0.3:
            return rng.choice((0.5, 1.0, -1.0, 2.0, 1e-5, 0.1))
        return edge_number(rng, old if isinstance(old, float) else 1.0)
    if kind == "pair":
        r = rng.random()
        if r < 0.3:
            return small
        if r < 0.6:
            return edge_number(rng, 1)
        if r < 0.9:
            return [rng.choice((small, edge_number(rng, 1))), rng.choice((small, 0, -1))]
        return rng.choice(([1, 1, 1], [], [1], [2.0, 2]))
    if kind == "int_list":
        pool = (0, 1, -1, 2, 3, -2, 4, 99, 2**31, 2**31 - 1, 0.5)
        return [rng.choice(pool) for _ in range(rng.choice((0, 1, 1, 2, 3)))]
    if kind == "shape":
        pool = (1, 2, 3, 4, 0, -1, 2**31, 2**20)
        return [rng.choice(pool) for _ in range(rng.choice((1, 1, 2, 3, 4)))]
    return edge_number(rng, old if old is not None else 1)


def mutate_network_options(doc: dict[str, Any], rng: random.Random,
                           operator_type: str | None = None) -> dict[str, Any]:
    """Set one or two options of one operator (of `operator_type`, if given) to values of
    the option's kind, or an output's `loss_weight` to a boundary value."""
    from frame_mlir.frontends.network.options import OPERATORS

    doc = copy.deepcopy(doc)
    ops = [o for o in doc.get("operators", []) if isinstance(o, dict)
           and o.get("type") in OPERATORS and OPERATORS[o["type"]].options]
    if operator_type is not None:
        ops = [o for o in ops if o["type"] == operator_type] or ops
    if not ops or rng.random() < 0.08:
        outs = doc.get("outputs")
        if isinstance(outs, list) and outs:
            i = rng.randrange(len(outs))
            name = outs[i] if isinstance(outs[i], str) else outs[i].get("name", "loss")
            outs[i] = {"name": name, "loss_weight": rng.choice(
                (*FLOAT_EDGES, 0.5, 2.0, 0, -1, 1))}
        return doc
    op = rng.choice(ops)
    spec = OPERATORS[op["type"]]
    options = op.setdefault("options", {})
    if not isinstance(options, dict):
        options = op["options"] = {}
    names = list(spec.options)
    related = _RELATED.get(op["type"])
    if related and rng.random() < 0.4:
        keys = list(related)
    else:
        keys = rng.sample(names, min(len(names), rng.choice((1, 1, 1, 2))))
    for key in keys:
        options[key] = _option_value(rng, spec.options[key], options.get(key))
    return doc


# ---------------------------------------------------------------------- .kyn programs

KYN_INTS = ("0", "1", "-1", "2", "3", "4", "8", "16", "64", "1000000", "1000001",
            "2147483647", "2147483648", "4294967295", "4294967296", "1099511627776", "3.0")
KYN_FLOATS = ("0", "0.0", "-0.0", "1", "1.0", "0.5", "0.9", "0.999999", "1.0000001", "1e-46",
              "1e-45", "1e-38", "0.1", "0.01", "0.001", "1e-8", "10", "1e30", "3.4e38",
              "3.5e38", "1e39", "1e400", "-1", "-0.5", "nan", "inf", "-inf", "2")


def _kyn_value(rng: random.Random, typ: str) -> str:
    """A `.kyn` literal for a value of vocab type `typ` (mostly fitting, some edges)."""
    from frame_mlir.frontends.kyn import vocab

    if typ == "int":
        return rng.choice(KYN_INTS)
    if typ == "float":
        return rng.choice(KYN_FLOATS)
    if typ == "bool":
        return rng.choice(("true", "false", "1", "True"))
    if typ == "floatpair":
        return f"({rng.choice(KYN_FLOATS)}, {rng.choice(KYN_FLOATS)})"
    if typ == "intlist":
        return "[" + ", ".join(rng.choice(KYN_INTS) for _ in range(rng.choice((1, 2, 2, 3)))) \
            + "]"
    if typ.startswith("enum:"):
        members = vocab.ENUMS[typ[5:]]
        return rng.choice(members) if rng.random() < 0.9 else "bogus"
    if typ.startswith("list:"):
        members = vocab.ENUMS[typ[5:]]
        return "[" + ", ".join(rng.sample(members, rng.randint(1, min(2, len(members))))) + "]"
    if typ.startswith("call:"):
        names = vocab.CALL_SETS.get(typ[5:], (typ[5:],))
        return _kyn_call(rng, rng.choice(names))
    if typ == "string":
        return rng.choice(('"x"', '""', '"data/iris.csv"'))
    return rng.choice(KYN_INTS)


def _kyn_call(rng: random.Random, name: str, args: dict[str, str] | None = None) -> str:
    """`name(k=v, ...)`: the given arguments, one or two of them (or new ones of the
    call) set to values of their type."""
    from frame_mlir.frontends.kyn import vocab

    params = vocab.CALLS.get(name, {})
    args = dict(args or {})
    if params:
        for key in rng.sample(list(params), min(len(params), rng.choice((1, 1, 2)))):
            if params[key].type == "string":
                continue
            args[key] = _kyn_value(rng, params[key].type)
        for key, p in params.items():  # required arguments of a new call
            if p.default is vocab.REQUIRED and key not in args:
                args[key] = _kyn_value(rng, p.type)
    return f"{name}(" + ", ".join(f"{k}={v}" for k, v in args.items()) + ")"


_CALL = re.compile(r"^(\s*\w+\s*=\s*)(\w+)\((.*)\)\s*$")
_KEY = re.compile(r"^(\s+)(\w+)(\s*=\s*)(.*)$")
_LAYER = re.compile(r"^(\s+)(input|dense|dropout|batchnorm)\b(.*)$")
_ARG = re.compile(r"\s*(\w+)\s*=\s*([^,]*)")


def _new_layer(rng: random.Random, kind: str) -> str:
    from frame_mlir.frontends.kyn import vocab

    if kind == "dense":
        n = rng.choice(("1", "2", "4", "8", "16")) if rng.random() < 0.7 \
            else rng.choice(KYN_INTS)
        act = " " + rng.choice(vocab.ACTIVATIONS) if rng.random() < 0.8 else ""
        return f"dense {n}{act}"
    if kind == "dropout":
        return "dropout " + rng.choice(("0.5", "0.1", *KYN_FLOATS))
    if kind == "batchnorm":
        return "batchnorm" + (" " + rng.choice(KYN_INTS) if rng.random() < 0.3 else "")
    return "input " + rng.choice(KYN_INTS)


def mutate_kyn_values(text: str, rng: random.Random) -> str:
    """1-2 value edits of a `.kyn` program: a layer's arguments, a new layer of a random
    kind, a block key's value, or a call's argument (see the module docstring)."""
    from frame_mlir.frontends.kyn import vocab

    key_types = {k: key.type for block in vocab.KEYS.values() for k, key in block.items()}
    for _ in range(rng.choice((1, 1, 2))):
        lines = text.split("\n")
        layers = [i for i, ln in enumerate(lines) if _LAYER.match(ln)]
        keys = [i for i, ln in enumerate(lines) if _KEY.match(ln) and not _LAYER.match(ln)]
        calls = [i for i, ln in enumerate(lines) if _CALL.match(ln)]
        r = rng.random()
        if r < 0.3 and layers:
            i = rng.choice(layers)
            m = _LAYER.match(lines[i])
            assert m
            kind = m.group(2)
            if kind == "dense" and rng.random() < 0.3:
                words = m.group(3).split()
                n = words[0] if words else "4"
                act = rng.choice(vocab.ACTIVATIONS) if rng.random() < 0.9 else "bogus"
                lines[i] = f"{m.group(1)}dense {n} {act}"
            else:
                lines[i] = m.group(1) + _new_layer(rng, kind)
        elif r < 0.5 and layers:
            at = rng.choice(layers) + 1
            kind = rng.choice(("dense", "dense", "dropout", "batchnorm", "input"))
            lines.insert(at, "    " + _new_layer(rng, kind))
        elif r < 0.75 and calls:
            i = rng.choice(calls)
            m = _CALL.match(lines[i])
            assert m
            name = m.group(2)
            if rng.random() < 0.2:  # another call of the same key (adam -> rmsprop ...)
                sets = [s for s in vocab.CALL_SETS.values() if name in s]
                name = rng.choice(sets[0]) if sets else name
                args: dict[str, str] = {}
            else:
                args = {a.group(1): a.group(2).strip() for a in _ARG.finditer(m.group(3))}
            lines[i] = m.group(1) + _kyn_call(rng, name, args)
        elif keys:
            i = rng.choice(keys)
            m = _KEY.match(lines[i])
            assert m
            typ = key_types.get(m.group(2))
            if typ is None or typ in ("name", "string", "call:source"):
                typ = "int"
            lines[i] = f"{m.group(1)}{m.group(2)}{m.group(3)}{_kyn_value(rng, typ)}"
        text = "\n".join(lines)
    return text
