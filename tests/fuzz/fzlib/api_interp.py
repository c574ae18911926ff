"""Random Python API call sequences: the generator (parent side) and the interpreter
(worker side).

A program is a list of plain tuples, so it pickles to the worker and prints as a
reproducer. Objects made by earlier instructions are referred to as `("$g", i)`
(graphs), `("$v", i)` (values), `("$m", i)` (modules), `("$e", i)` (executables),
`("$t", i)` (tensors); `("$dtype", name)` is a `frame.DType` member. An index wraps
around the objects of its kind; an instruction whose reference finds no object is
skipped (that is the generator's business, not an API error). Every other argument
is passed as written, so invalid arguments (negative or huge dims, strings for ints,
values of another graph, unknown dtypes and backends) reach the API as a user would
pass them.

Instructions:
    ("call", fname, args, kind)        frame.<fname>(*args), result stored as `kind`
    ("method", ref, name, args, kind)  getattr(obj, name)(*args)
    ("nn", factory, args)              frame.nn.<factory>(*args) -> a module
    ("build", mref, gref)              module.build(graph, graph inputs..., params)
    ("run", eref, perturb)             run with random tensors of the inputs' types
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

Ref = tuple[str, int]
KINDS = ("g", "v", "m", "e", "t", "vs")

# ---------------------------------------------------------------------- generator

DTYPES = ("float32", "float16", "bfloat16", "int32", "int64")
ODD_DTYPES: tuple[Any, ...] = (0, 99, -1, "float32", None, 1.5)
ODD_INTS: tuple[Any, ...] = (0, -1, -(2**31), 2**31, 2**40, 2**63, 2**64 + 1, True, 1.5,
                             "3", None, float("nan"), float("inf"))


def _dim(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.85:
        return rng.randint(1, 6)
    if r < 0.9:
        return 0
    return rng.choice(ODD_INTS)


_SHAPES: list[list[int]] = []  # this program's shapes: inputs that fit together


def _shape(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.6 and _SHAPES:
        return list(rng.choice(_SHAPES))
    if r < 0.9:
        return [_dim(rng) if rng.random() < 0.1 else rng.randint(1, 6)
                for _ in range(rng.choice((1, 2, 2, 2, 3, 4)))]
    return rng.choice(([], [2**30, 2**30], [2**24, 2**24, 2**24], "2,3", None, [[2]],
                       [-3, 2], (2, 3), [2.0, 3.0]))


def _dtype(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.7:
        return ("$dtype", "float32")
    if r < 0.93:
        return ("$dtype", rng.choice(DTYPES))
    return rng.choice(ODD_DTYPES)


def _ref(rng: random.Random, kind: str) -> Any:
    if rng.random() < 0.04:
        return rng.choice((None, 0, "x", [1, 2], ("$v", 0) if kind != "v" else ("$g", 0)))
    # Mostly the latest objects: ops on one graph's values, so that programs go deep.
    return (f"${kind}", rng.choice((-1, -1, -1, -2, -3, 0, rng.randrange(8))))


def _float(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.8:
        return rng.uniform(-2, 2)
    return rng.choice((0.0, -0.0, 1e38, -1e38, 1e-45, float("nan"), float("inf"), "1", None))


def api_program(rng: random.Random, length: int | None = None,
                avoid_known: bool = True) -> list[tuple[Any, ...]]:
    """A random API call sequence (mostly well-typed, some invalid arguments).

    `avoid_known`: never pass a non-graph to `add_parameter_inputs` (known bug API-1)
    nor a module size beyond 2**31 (API-2..4; tests/fuzz/test_regressions.py), so that
    CI passes while they are open."""
    n = length if length is not None else rng.randint(3, 14)
    a, b, c = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
    _SHAPES[:] = [[a, b], [b, c], [a, c], [a, b], [1], [a]]
    prog: list[tuple[Any, ...]] = [("call", "Graph", [rng.choice(("g", "", "ünï", "a b"))],
                                    "g")]
    for _ in range(rng.randint(1, 3)):
        prog.append(("method", ("$g", 0), "add_graph_input", [_shape(rng), _dtype(rng)], "v"))
    for _ in range(n):
        r = rng.random()
        g = _ref(rng, "g")
        if r < 0.12:
            args: list[Any] = [_shape(rng), _dtype(rng)]
            if rng.random() < 0.1:
                args.append(rng.choice(("cpu", "cuda", "tpu", "")))
            prog.append(("method", g, "add_graph_input", args, "v"))
        elif r < 0.42:
            op = rng.choice(("add", "mul", "matmul", "mse_loss", "relu", "square", "sum",
                             "heaviside_surrogate", "scatter_add", "selective_scan"))
            if op in ("add", "mul", "matmul", "mse_loss"):
                args = [g, _ref(rng, "v"), _ref(rng, "v")]
            elif op in ("relu", "square"):
                args = [g, _ref(rng, "v")]
            elif op == "sum":
                axes = rng.choice(([0], [1], [0, 1], [], [-1], [5], [0, 0], "0", None))
                args = [g, _ref(rng, "v"), axes]
            elif op == "heaviside_surrogate":
                args = [g, _ref(rng, "v"), _float(rng)]
            elif op == "scatter_add":
                args = [g, _ref(rng, "v"), _ref(rng, "v"), _shape(rng)]
            else:
                args = [g, *(_ref(rng, "v") for _ in range(5))]
            prog.append(("call", op, args, "v"))
        elif r < 0.5:
            shape = _shape(rng)
            count = 1
            if isinstance(shape, list) and all(isinstance(d, int) and 0 <= d <= 8
                                               for d in shape):
                count = int(np.prod(shape)) if shape else 1
            if rng.random() < 0.15:
                count += rng.choice((-1, 1))
            values = rng.choice(([_float(rng)] * max(count, 0),
                                 [round(rng.uniform(-3, 3), 3) for _ in range(max(count, 0))]))
            prog.append(("call", "constant", [g, values, shape, _dtype(rng)], "v"))
        elif r < 0.6:
            prog.append(("method", g, "mark_output", [_ref(rng, "v")], None))
        elif r < 0.68:
            prog.append(("call", "compile", [g, rng.choice(("cpu",) * 8 + ("cuda", "gpu", 3))],
                         "e"))
        elif r < 0.76:
            prog.append(("run", _ref(rng, "e"), rng.random() < 0.15))
        elif r < 0.82:
            idx = rng.choice((0, 0, 1, -1, 5, "0"))
            wrt = rng.choice(([0], [1], [0, 1], [], [-1], [7], [0, 0], None))
            prog.append(("call", "build_backward_graph", [g, idx, wrt], "g"))
        elif r < 0.86:
            types = [[_shape(rng), _dtype(rng)] for _ in range(rng.randint(0, 2))]
            prog.append(("call", "build_sgd_update_graph", [types, _float(rng)], "g"))
        elif r < 0.95:
            prog.append(("nn", *_module(rng, avoid_known)))
            prog.append(("build", _ref(rng, "m"), ("$g", -1) if avoid_known else g))
        else:
            prog.append(("call", "Graph", [rng.choice(("h", "h", 3))], "g"))
            prog.append(("method", ("$g", -1), "add_graph_input", [_shape(rng), _dtype(rng)],
                         "v"))
    return prog


def _module(rng: random.Random, avoid_known: bool) -> tuple[str, list[Any]]:
    # avoid_known: no module size beyond 2**31 (API-2..4, tests/fuzz/test_regressions.py)
    odd = [v for v in ODD_INTS if not (isinstance(v, int) and abs(v) > 2**31)] \
        if avoid_known else list(ODD_INTS)
    d = lambda: rng.randint(1, 4) if rng.random() < 0.93 else rng.choice(odd)  # noqa: E731
    dt = _dtype(rng) if rng.random() < 0.2 else ("$dtype", "float32")
    name = rng.choice(("m", "l1", "", "x.y"))
    choices: list[tuple[str, list[Any]]] = [
        ("Linear", [name, d(), d(), d(), rng.choice((True, False, "yes")), dt]),
        ("Relu", [name]), ("Sigmoid", [name]), ("Flatten", [name]), ("MseLoss", [name]),
        ("Conv2d", [name, d(), d(), [d(), d()], [1, 1], [0, rng.choice((0, 1, -1))], d(),
                    rng.random() < 0.5, dt]),
        ("Conv1d", [name, d(), d(), d(), d(), rng.choice((0, 1)), d(), rng.random() < 0.5, dt]),
        ("MaxPool2d", [name, [d(), d()], [d(), d()], [0, 0]]),
        ("AvgPool2d", [name, [d(), d()], [d(), d()], [rng.choice((0, 1, 5)), 0]]),
        ("LayerNorm", [name, d(), _float(rng), dt]),
        ("LSTM", [name, d(), d(), d(), d(), dt]),
        ("MultiheadAttention", [name, d(), d(), rng.choice((2, 4, 3)), rng.choice((1, 2)),
                                rng.random() < 0.5, dt]),
        ("LIFCell", [name, d(), d(), d(), _float(rng), _float(rng), _float(rng), dt]),
        ("Dwt1d", [name, d(), rng.choice(("haar", "db2", "x"))]),
        ("AFF", [name, d(), dt]),
        ("Sequential", [name, [("$m", 0), ("$m", 1)]]),
    ]
    return rng.choice(choices)


# ---------------------------------------------------------------------- interpreter


class Skip(Exception):
    """An instruction refers to an object that does not exist: not an API call."""


class Interpreter:
    """Executes a program against `import frame` (inside the worker)."""

    def __init__(self) -> None:
        import frame

        self.frame = frame
        self.objs: dict[str, list[Any]] = {k: [] for k in KINDS}
        self.log: list[str] = []

    def resolve(self, arg: Any) -> Any:
        if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[0], str) \
                and arg[0].startswith("$"):
            kind, i = arg[0][1:], arg[1]
            if kind == "dtype":
                return self.frame.DType[i]
            pool = self.objs.get(kind, [])
            if not pool:
                raise Skip(kind)
            return pool[i % len(pool)]
        if isinstance(arg, list):
            return [self.resolve(a) for a in arg]
        return arg

    def store(self, kind: str | None, value: Any) -> None:
        if kind is not None:
            self.objs[kind].append(value)

    def execute(self, instr: tuple[Any, ...]) -> None:
        try:
            self._execute(instr)
        except Skip:
            self.log.append(f"skip {instr[0]}")

    def _execute(self, instr: tuple[Any, ...]) -> None:
        op = instr[0]
        f = self.frame
        if op == "call":
            _, fname, args, kind = instr
            self.log.append(f"{fname}")
            fn = getattr(f, fname, None) or getattr(f._core, fname)  # (core) extensions
            self.store(kind, fn(*self.resolve(args)))
        elif op == "method":
            _, ref, name, args, kind = instr
            obj = self.resolve(ref)
            if not hasattr(type(obj), name):  # a method of a non-API object: not a call
                raise Skip(name)
            resolved = self.resolve(args)
            self.log.append(f".{name}")
            self.store(kind, getattr(obj, name)(*resolved))
        elif op == "nn":
            _, factory, args = instr
            resolved = self.resolve(args)
            self.log.append(f"nn.{factory}")
            self.store("m", getattr(f.nn, factory)(*resolved))
        elif op == "build":
            _, mref, gref = instr
            module, graph = self.resolve(mref), self.resolve(gref)
            if not hasattr(type(module), "build"):
                raise Skip("build")
            ins = [v for v in self.objs["v"] if getattr(v, "_graph", None) is graph][-1:]
            params = f.nn.add_parameter_inputs(graph, module)
            self.log.append("build")
            outs = module.build(graph, ins, params)
            for v in outs:
                self.store("v", v)
        elif op == "run":
            _, eref, perturb = instr
            ex = self.resolve(eref)
            if not isinstance(ex, f._core.Executable):
                raise Skip("run")
            rng = np.random.default_rng(len(self.log))
            tensors = []
            for shape, dtype in ex._inputs:  # the harness peeks at the input types
                if int(np.prod(shape)) > 1 << 20:
                    raise Skip("huge run")
                name = dtype.name
                if name == "bfloat16":
                    raise Skip("no bf16 from_numpy")
                np_dtype = {"float32": np.float32, "float16": np.float16,
                            "int32": np.int32, "int64": np.int64}[name]
                if name.startswith("int"):
                    arr = np.zeros(shape, np_dtype)
                else:
                    arr = rng.uniform(-1, 1, shape).astype(np_dtype)
                tensors.append(f.from_numpy(arr))
            if perturb and tensors:
                tensors = tensors[:-1]
            self.log.append("run")
            for out in ex.run(tensors):
                self.store("t", out)
        else:
            raise AssertionError(f"unknown instruction {op!r}")
