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
    ("build", mref, gref[, vrefs])     module.build(graph, inputs, add_parameter_inputs(...));
                                       inputs: vrefs, or the graph's latest value
    ("run", eref, perturb)             run with random tensors of the inputs' types

Two generators share the instructions: `valid_program` tracks shapes and makes only
calls that must succeed (graph, ops, nn modules, compile, run, backward and SGD graphs
compiled and run), `random_program` makes mostly well-typed calls with invalid arguments
mixed in; `api_program` draws between them (and injects one invalid call into some
valid programs). The interpreter checks every `run` of a compiled graph against the
graph's declared outputs (count, shapes, dtypes) and, for the ops whose float64 numpy
meaning it knows (`_Expr`), that outputs are finite wherever the float64 evaluation of
the same graph on the same inputs is (and, in float32, close to it).
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

from .values import EDGE_FLOATS

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


def random_program(rng: random.Random, length: int | None = None) -> list[tuple[Any, ...]]:
    """A random API call sequence (mostly well-typed, some invalid arguments); most end
    in a clean error, since one bad call among many is likely."""
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
            prog.append(("nn", *_module(rng)))
            prog.append(("build", _ref(rng, "m"), g))
        else:
            prog.append(("call", "Graph", [rng.choice(("h", "h", 3))], "g"))
            prog.append(("method", ("$g", -1), "add_graph_input", [_shape(rng), _dtype(rng)],
                         "v"))
    return prog


def _module(rng: random.Random) -> tuple[str, list[Any]]:
    odd = list(ODD_INTS)
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


# ---------------------------------------------------------------------- valid programs

#: Parameters each module of `_ValidGen` declares (they become graph inputs at build).
_LINEAR_PARAMS = {True: 2, False: 1}


class _ValidGen:
    """Builds a program whose every call must succeed: it tracks each value's index in
    the interpreter's value list, its shape, and the graph's input count, and only makes
    calls whose arguments fit (the API's documented rules). Small dims (1..4) keep the
    JIT's compile time and the run cheap."""

    def __init__(self, rng: random.Random, edges: bool | None = None) -> None:
        self.rng = rng
        self.prog: list[tuple[Any, ...]] = [("call", "Graph", [rng.choice(("g", "fz"))], "g")]
        self.dtype = "float32" if rng.random() < 0.85 else "float16"
        self.values: list[tuple[int, ...]] = []  # shape of value i (interpreter index)
        self.n_inputs = 0  # graph inputs, parameters included (build_backward_graph's)
        self.input_shapes: list[tuple[int, ...]] = []
        self.n_modules = 0
        self.n_graphs = 1
        self.n_execs = 0
        # Option-value mode: attributes (alpha, eps, decay, threshold, learning rate,
        # strides, paddings) at the edges of their ranges (values.EDGE_FLOATS / _INTS).
        self.edges = rng.random() < 0.3 if edges is None else edges

    def attr(self, usual: Any) -> Any:
        """A float attribute: `usual`, or in option-value mode often an edge value."""
        if self.edges and self.rng.random() < 0.5:
            return self.rng.choice(EDGE_FLOATS)
        return usual

    def attr_int(self, usual: int, edges: tuple[int, ...]) -> int:
        """An int attribute: `usual`, or in option-value mode often one of `edges`."""
        if self.edges and self.rng.random() < 0.4:
            return self.rng.choice(edges)
        return usual

    # -- small helpers
    def dt(self) -> tuple[str, str]:
        return ("$dtype", self.dtype)

    def input(self, shape: tuple[int, ...]) -> int:
        self.prog.append(("method", ("$g", 0), "add_graph_input", [list(shape), self.dt()],
                          "v"))
        self.n_inputs += 1
        self.input_shapes.append(shape)
        return self.new(shape)

    def new(self, shape: tuple[int, ...]) -> int:
        self.values.append(tuple(shape))
        return len(self.values) - 1

    def call(self, op: str, args: list[Any], shape: tuple[int, ...]) -> int:
        self.prog.append(("call", op, [("$g", 0), *args], "v"))
        return self.new(shape)

    def v(self, i: int) -> Ref:
        return ("$v", i)

    def partner(self, shape: tuple[int, ...]) -> int:
        """A value of `shape`: an existing one, a new input or a constant."""
        same = [i for i, s in enumerate(self.values) if s == shape]
        r = self.rng.random()
        if same and r < 0.6:
            return self.rng.choice(same)
        if r < 0.8:
            return self.input(shape)
        n = math.prod(shape)
        vals = [round(self.rng.uniform(-2, 2), 3) for _ in range(n)]
        return self.call("constant", [vals, list(shape), self.dt()], shape)

    def module(self, factory: str, args: list[Any], ins: list[int], n_params: int,
               out: tuple[int, ...]) -> int:
        self.prog.append(("nn", factory, args))
        self.prog.append(("build", ("$m", self.n_modules), ("$g", 0),
                          [self.v(i) for i in ins]))
        self.n_modules += 1
        self.n_inputs += n_params
        return self.new(out)

    def name(self) -> str:
        return f"m{self.n_modules}"

    # -- one op on a value
    def step(self) -> None:
        rng = self.rng
        i = len(self.values) - 1 if rng.random() < 0.6 else rng.randrange(len(self.values))
        s = self.values[i]
        kinds = ["relu", "square", "add", "mul", "heaviside", "sigmoid", "nnrelu"]
        if s:
            kinds += ["sum", "mse"]
        if len(s) == 2:
            kinds += ["matmul", "matmul", "linear", "linear", "layernorm", "seq", "mha",
                      "flatten"]
        if len(s) == 3:
            kinds += ["conv1d", "lif", "lstm", "flatten"]
        if len(s) == 4:
            kinds += ["conv2d", "pool", "aff", "flatten"]
        k = rng.choice(kinds)
        dt = self.dt()
        if k in ("relu", "square"):
            self.call(k, [self.v(i)], s)
        elif k == "heaviside":
            self.call("heaviside_surrogate", [self.v(i), self.attr(rng.choice((0.5, 2.0, 4.0)))],
                      s)
        elif k in ("add", "mul"):
            self.call(k, [self.v(i), self.v(self.partner(s))], s)
        elif k == "mse":
            self.call("mse_loss", [self.v(i), self.v(self.partner(s))], ())
        elif k == "sum":
            axes = sorted(rng.sample(range(len(s)), rng.randint(0, len(s))))
            out = () if not axes else tuple(d for a, d in enumerate(s) if a not in axes)
            self.call("sum", [self.v(i), axes], out)
        elif k == "matmul":
            n = rng.randint(1, 4)
            self.call("matmul", [self.v(i), self.v(self.partner((s[1], n)))], (s[0], n))
        elif k == "sigmoid":
            self.module("Sigmoid", [self.name()], [i], 0, s)
        elif k == "nnrelu":
            self.module("Relu", [self.name()], [i], 0, s)
        elif k == "flatten":
            self.module("Flatten", [self.name()], [i], 0, (s[0], math.prod(s[1:])))
        elif k == "linear":
            out, bias = rng.randint(1, 4), rng.random() < 0.7
            self.module("Linear", [self.name(), s[0], s[1], out, bias, dt], [i],
                        _LINEAR_PARAMS[bias], (s[0], out))
        elif k == "layernorm":
            self.module("LayerNorm", [self.name(), s[1], self.attr(1e-5), dt], [i], 2, s)
        elif k == "seq":
            hid, out = rng.randint(1, 4), rng.randint(1, 4)
            kids = [("nn", "Linear", ["0", s[0], s[1], hid, True, dt]),
                    ("nn", "Relu", ["1"]), ("nn", "Linear", ["2", s[0], hid, out, False, dt])]
            self.prog.extend(kids)
            base = self.n_modules
            self.n_modules += 3
            self.module("Sequential", [self.name(), [("$m", base + j) for j in range(3)]],
                        [i], 3, (s[0], out))
        elif k == "mha":
            heads = rng.choice([h for h in (1, 2) if s[1] % h == 0])
            bias = rng.random() < 0.5
            self.module("MultiheadAttention", [self.name(), 1, s[0], s[1], heads, bias, dt],
                        [i], 8 if bias else 4, s)
        elif k == "conv1d":
            cout, kern = rng.randint(1, 3), rng.randint(1, s[2])
            bias = rng.random() < 0.5
            stride, pad = self.attr_int(1, _STRIDES), self.attr_int(0, _PADS)
            groups = self.attr_int(1, _STRIDES)
            self.module("Conv1d", [self.name(), s[1], cout, kern, stride, pad, groups, bias, dt],
                        [i], 1 + bias, (s[0], cout, _out(s[2], kern, stride, pad)))
        elif k == "lif":
            self.module("LIFCell", [self.name(), *s, self.attr(0.5), self.attr(1.0),
                                    self.attr(4.0), dt], [i], 0, s)
        elif k == "lstm":
            hid = rng.randint(1, 3)
            self.module("LSTM", [self.name(), *s, hid, dt], [i], 3, (s[0], hid))
        elif k == "conv2d":
            cout = rng.randint(1, 3)
            kh, kw = rng.randint(1, s[2]), rng.randint(1, s[3])
            bias = rng.random() < 0.5
            st = [self.attr_int(1, _STRIDES), self.attr_int(1, _STRIDES)]
            pd = [self.attr_int(0, _PADS), self.attr_int(0, _PADS)]
            self.module("Conv2d", [self.name(), s[1], cout, [kh, kw], st, pd,
                                   self.attr_int(1, _STRIDES), bias, dt], [i], 1 + bias,
                        (s[0], cout, _out(s[2], kh, st[0], pd[0]), _out(s[3], kw, st[1], pd[1])))
        elif k == "pool":
            kind = rng.choice(("MaxPool2d", "AvgPool2d"))
            kh, kw = rng.randint(1, s[2]), rng.randint(1, s[3])
            st = [self.attr_int(1, _STRIDES), self.attr_int(1, _STRIDES)]
            pd = [self.attr_int(0, _PADS), self.attr_int(0, _PADS)]
            self.module(kind, [self.name(), [kh, kw], st, pd], [i], 0,
                        (s[0], s[1], _out(s[2], kh, st[0], pd[0]), _out(s[3], kw, st[1], pd[1])))
        elif k == "aff":
            self.module("AFF", [self.name(), s[1], dt], [i, self.partner(s)], 4, s)

    def build(self) -> list[tuple[Any, ...]]:
        rng = self.rng
        d = [rng.randint(1, 4) for _ in range(4)]
        shapes = [(d[0], d[1]), (d[1], d[2]), (d[0], d[2]), (d[0],), (d[0], d[1], d[2]),
                  (d[0], d[1], d[2], d[3])]
        weights = [6, 3, 2, 2, 2, 2]
        for _ in range(rng.randint(1, 2)):
            self.input(rng.choices(shapes, weights)[0])
        for _ in range(rng.randint(1, 5)):
            self.step()
        last = len(self.values) - 1
        outs = sorted({last, *rng.sample(range(len(self.values)),
                                         min(len(self.values), rng.randint(0, 2)))})
        train = rng.random() < 0.55
        scalars = [i for i in outs if math.prod(self.values[i]) == 1]
        if train and not scalars:  # a loss to differentiate: the sum of the last value
            outs.append(self.call("sum", [self.v(last), []], ()))
            scalars = [outs[-1]]
        for i in outs:
            self.prog.append(("method", ("$g", 0), "mark_output", [self.v(i)], None))
        self.prog.append(("call", "compile", [("$g", 0), "cpu"], "e"))
        self.prog.append(("run", ("$e", 0), False))
        self.n_execs = 1
        if train and self.n_inputs:
            loss = outs.index(rng.choice(scalars))
            wrt = rng.sample(range(self.n_inputs), rng.randint(1, min(3, self.n_inputs)))
            self.prog.append(("call", "build_backward_graph", [("$g", 0), loss, wrt], "g"))
            self.prog.append(("call", "compile", [("$g", 1), "cpu"], "e"))
            self.prog.append(("run", ("$e", 1), False))
            if rng.random() < 0.6:
                # ("$ishape", i): input i's shape, read from the graph by the
                # interpreter (parameter shapes are the modules' business, not tracked).
                types = [[("$ishape", i), self.dt()] for i in wrt]
                lr = self.attr(rng.choice((0.1, 0.01, 1.0)))
                self.prog.append(("call", "build_sgd_update_graph", [types, lr], "g"))
                self.prog.append(("call", "compile", [("$g", 2), "cpu"], "e"))
                self.prog.append(("run", ("$e", 2), False))
        return self.prog


_STRIDES = (1, 2, 3, 0, -1, 2**31, 2**63)
_PADS = (0, 1, 2, -1, 2**31)


def _out(size: int, kernel: int, stride: int, pad: int) -> int:
    """A convolution's or pool's output size (the generator's guess; an invalid stride
    or padding makes the call fail, and later calls then fail or are skipped)."""
    if stride < 1 or pad < 0 or pad > 2**20:
        return size - kernel + 1
    return (size + 2 * pad - kernel) // stride + 1


def valid_program(rng: random.Random, edges: bool | None = None) -> list[tuple[Any, ...]]:
    """A program whose every call must succeed (see `_ValidGen`), or with `edges`
    (default: 30% of programs), its attributes often at the edges of their ranges."""
    return _ValidGen(rng, edges).build()


def api_program(rng: random.Random) -> tuple[list[tuple[Any, ...]], str]:
    """An API program and how it was made: valid (45%: every call fits, and
    compile, run, backward and SGD graphs run end to end), valid with one random call
    inserted (which is often invalid: a clean error, or none), or random."""
    r = rng.random()
    if r < 0.6:
        gen = _ValidGen(rng)
        prog, how = gen.build(), "values" if gen.edges else "valid"
        if r < 0.45:
            return prog, how
        extra = random_program(rng, length=1)[-1:]
        at = rng.randint(1, len(prog))
        return prog[:at] + extra + prog[at:], how + "+1"
    return random_program(rng), "random"


# ---------------------------------------------------------------------- interpreter


class Skip(Exception):
    """An instruction refers to an object that does not exist: not an API call."""


class OutputMismatch(Exception):
    """A run's outputs disagree with the graph's declared outputs or with the float64
    evaluation of the graph (a bug: wrong shape, dtype, count, or values)."""


class NonFinite(Exception):
    """A run gave inf or NaN where the float64 evaluation of the same graph on the same
    inputs stays finite and within the dtype's range."""


# The float64 meaning of a graph value, as a tuple tree: ("in", position of the graph
# input), ("const", array), (op, operands..., attributes...). None: not modelled.
Expr = tuple[Any, ...] | None

#: Largest magnitude a float dtype holds with room to spare (beyond: overflow is fine).
_LIMIT = {"float32": 1e30, "float16": 3e4, "bfloat16": 1e30}


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    return x @ w + (b if b is not None else 0.0)


class Interpreter:
    """Executes a program against `import frame` (inside the worker)."""

    def __init__(self) -> None:
        import frame

        self.frame = frame
        self.objs: dict[str, list[Any]] = {k: [] for k in KINDS}
        self.log: list[str] = []
        self.exprs: dict[int, Expr] = {}  # id(Value) -> its float64 meaning
        self.modules: dict[int, tuple[str, list[Any]]] = {}  # id(Module) -> factory, args
        # id(Executable) -> the graph's outputs at compile: (shape, dtype, expr)
        self.expected: dict[int, list[tuple[tuple[int, ...], Any, Expr]]] = {}
        self.checked_runs = 0  # runs whose outputs were compared with a float64 model
        self._peak = 0.0

    def resolve(self, arg: Any) -> Any:
        if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[0], str) \
                and arg[0].startswith("$"):
            kind, i = arg[0][1:], arg[1]
            if kind == "dtype":
                return self.frame.DType[i]
            if kind == "ishape":  # input i's shape of the first graph
                graphs = self.objs["g"]
                if not graphs or i >= len(graphs[0]._inputs):
                    raise Skip(kind)
                return list(graphs[0]._inputs[i].type.get_shape())
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

    # -- float64 model of the values (only for calls that succeeded)
    def _e(self, v: Any) -> Expr:
        return self.exprs.get(id(v))

    def _input_expr(self, graph: Any, v: Any) -> Expr:
        return ("in", graph._inputs.index(v._ssa))

    def _track_call(self, fname: str, args: list[Any], out: Any) -> None:
        """Record the float64 meaning of an op's result (what the op documents)."""
        e = self._e
        expr: Expr = None
        if fname in ("add", "mul", "matmul", "mse_loss") and len(args) == 3:
            a, b = e(args[1]), e(args[2])
            expr = (fname, a, b) if a and b else None
        elif fname in ("relu", "square") and len(args) == 2:
            expr = (fname, e(args[1])) if e(args[1]) else None
        elif fname == "heaviside_surrogate":
            expr = ("heaviside", e(args[1])) if e(args[1]) else None
        elif fname == "sum":
            expr = ("sum", e(args[1]), tuple(args[2]), out._shape) if e(args[1]) else None
        elif fname == "constant":
            expr = ("const", np.asarray(args[1], np.float64).reshape(out._shape))
        self.exprs[id(out)] = expr

    def _track_module(self, module: Any, graph: Any, ins: list[Any], params: list[Any],
                      outs: list[Any]) -> None:
        factory, args = self.modules.get(id(module), ("?", []))
        xs = [self._e(v) for v in ins]
        ps = [self._input_expr(graph, p) for p in params]
        expr: Expr = None
        if not all(xs) or len(outs) != 1:
            return
        if factory in ("Relu", "Sigmoid"):
            expr = (factory.lower(), xs[0])
        elif factory == "Flatten":
            expr = ("reshape", xs[0], outs[0]._shape)
        elif factory == "Linear":
            expr = ("linear", xs[0], *ps)
        elif factory == "LayerNorm":
            expr = ("layernorm", xs[0], ps[0], ps[1], float(args[2]))
        elif factory == "MseLoss":
            expr = ("mse_loss", xs[0], xs[1])
        self.exprs[id(outs[0])] = expr

    def _eval(self, expr: Expr, args: list[np.ndarray]) -> tuple[np.ndarray, bool]:
        """`expr` in float64, and whether the value is a smooth function of the inputs
        (a step function's output may flip at 0 under float32 rounding)."""
        assert expr is not None
        op, *rest = expr
        if op == "in":
            return args[rest[0]], True
        if op == "const":
            return rest[0], True
        subs = [self._eval(x, args) if isinstance(x, tuple) and x and isinstance(x[0], str)
                and not isinstance(x, np.ndarray) else (x, True) for x in rest]
        vals = [v for v, _ in subs]
        exact = all(ok for _, ok in subs)
        with np.errstate(all="ignore"):
            if op == "add":
                r = vals[0] + vals[1]
            elif op == "mul":
                r = vals[0] * vals[1]
            elif op == "matmul":
                r = vals[0] @ vals[1]
            elif op == "mse_loss":
                r = np.mean((vals[0] - vals[1]) ** 2)
            elif op == "relu":
                r = np.maximum(vals[0], 0.0)
            elif op == "square":
                r = vals[0] * vals[0]
            elif op == "heaviside":
                r, exact = (vals[0] >= 0).astype(np.float64), False
            elif op == "sigmoid":
                r = 1.0 / (1.0 + np.exp(-vals[0]))
            elif op == "sum":
                axes, shape = rest[1], rest[2]
                r = np.sum(vals[0], axis=axes or None).reshape(shape)
            elif op == "reshape":
                r = vals[0].reshape(rest[1])
            elif op == "linear":
                r = _linear(*vals)
            elif op == "layernorm":
                x, gamma, beta, eps = vals
                mean = x.mean(axis=-1, keepdims=True)
                var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
                r = gamma * (x - mean) / np.sqrt(var + eps) + beta
            elif op == "sgd":
                r = vals[0] - rest[2] * vals[1]
            else:
                raise AssertionError(f"unknown expression {op!r}")
        r = np.asarray(r, np.float64)
        if r.size:
            peak = float(np.max(np.abs(r)))
            self._peak = max(self._peak, peak if np.isfinite(peak) else math.inf)
        return r, exact

    def _check_outputs(self, ex: Any, arrays: list[np.ndarray], outs: list[Any]) -> None:
        """A run's outputs against the graph's declaration and its float64 model."""
        expected = self.expected.get(id(ex))
        if expected is None:
            return
        if len(outs) != len(expected):
            raise OutputMismatch(f"run returned {len(outs)} tensors for {len(expected)} "
                                 "marked outputs")
        args = [a.astype(np.float64) for a in arrays]
        for k, (t, (shape, dtype, expr)) in enumerate(zip(outs, expected, strict=True)):
            if list(t.shape.dims) != list(shape) or t.dtype != dtype:
                raise OutputMismatch(f"output {k}: {t.shape.dims} {t.dtype.name}, the graph "
                                     f"declares {list(shape)} {dtype.name}")
            if expr is None or dtype.name not in _LIMIT:
                continue
            self._peak = 0.0
            ref, exact = self._eval(expr, args)
            got = np.asarray(t.numpy(), np.float64)
            limit = _LIMIT[dtype.name]
            if self._peak >= limit:  # an intermediate overflows the dtype: anything goes
                continue
            self.checked_runs += 1
            safe = np.isfinite(ref) & (np.abs(ref) < limit)
            if not np.all(np.isfinite(got[safe])):
                raise NonFinite(f"output {k} ({dtype.name}) has non-finite values where "
                                f"the float64 evaluation is finite:\ngot {got!r}\n"
                                f"float64 {ref!r}")
            if exact and dtype.name == "float32":
                # float32 rounding of sums of products of magnitude <= peak**2.
                tol = 1e-3 * (1.0 + self._peak) ** 2
                bad = safe & ~(np.abs(got - ref) <= tol)
                if np.any(bad):
                    raise OutputMismatch(f"output {k} differs from the float64 evaluation "
                                         f"by more than {tol:.3g}:\ngot {got!r}\n"
                                         f"float64 {ref!r}")

    def _execute(self, instr: tuple[Any, ...]) -> None:
        op = instr[0]
        f = self.frame
        if op == "call":
            _, fname, args, kind = instr
            self.log.append(f"{fname}")
            fn = getattr(f, fname, None) or getattr(f._core, fname)  # (core) extensions
            resolved = self.resolve(args)
            result = fn(*resolved)
            self.store(kind, result)
            if isinstance(result, f._core.Value):
                self._track_call(fname, resolved, result)
            elif fname == "compile":
                graph = resolved[0]
                self.expected[id(result)] = [(tuple(v._shape), v._dtype, self._e(v))
                                             for v in graph._outputs]
            elif fname == "build_backward_graph":
                fwd = [self._e(v) for v in resolved[0]._outputs]  # same inputs, in order
                for v, e in zip(result._outputs, fwd, strict=False):
                    self.exprs[id(v)] = e
            elif fname == "build_sgd_update_graph":
                n = len(resolved[0])
                for i, v in enumerate(result._outputs):
                    self.exprs[id(v)] = ("sgd", ("in", i), ("in", n + i), float(resolved[1]))
        elif op == "method":
            _, ref, name, args, kind = instr
            obj = self.resolve(ref)
            if not hasattr(type(obj), name):  # a method of a non-API object: not a call
                raise Skip(name)
            resolved = self.resolve(args)
            self.log.append(f".{name}")
            result = getattr(obj, name)(*resolved)
            self.store(kind, result)
            if name == "add_graph_input":
                self.exprs[id(result)] = self._input_expr(obj, result)
        elif op == "nn":
            _, factory, args = instr
            resolved = self.resolve(args)
            self.log.append(f"nn.{factory}")
            module = getattr(f.nn, factory)(*resolved)
            self.store("m", module)
            self.modules[id(module)] = (factory, resolved)
        elif op == "build":
            mref, gref = instr[1], instr[2]
            module, graph = self.resolve(mref), self.resolve(gref)
            if not hasattr(type(module), "build"):
                raise Skip("build")
            if len(instr) > 3:
                ins = self.resolve(instr[3])
            else:
                ins = [v for v in self.objs["v"] if getattr(v, "_graph", None) is graph][-1:]
            params = f.nn.add_parameter_inputs(graph, module)
            self.log.append("build")
            outs = module.build(graph, ins, params)
            for v in outs:
                self.store("v", v)
            self._track_module(module, graph, ins, params, outs)
        elif op == "run":
            _, eref, perturb = instr
            ex = self.resolve(eref)
            if not isinstance(ex, f._core.Executable):
                raise Skip("run")
            rng = np.random.default_rng(len(self.log))
            tensors, arrays = [], []
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
                arrays.append(arr)
                tensors.append(f.from_numpy(arr))
            if perturb and tensors:
                tensors = tensors[:-1]
            self.log.append("run")
            outs = ex.run(tensors)
            for out in outs:
                self.store("t", out)
            self._check_outputs(ex, arrays, outs)
        else:
            raise AssertionError(f"unknown instruction {op!r}")
