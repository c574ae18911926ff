"""Loop-level IR -> C++ functions, one emission rule per op.

The input is the module at the pipeline's `loops` stage: `func.func`s whose bodies are
`scf` / `arith` / `math` / `memref` ops on statically shaped memrefs (identity layout,
0-d allowed), with `memref.view`s into one byte arena. Every op is translated by the
rule registered for its class in `EMIT_RULES`; an op without a rule fails with
`no C++ emission rule for <op>`. Nothing here knows about frame ops or models: any
module the JIT can lower, this can emit.

How the IR maps to C++:

* a memref is a bare pointer to its element type (the JIT's bare-pointer ABI); a load
  or store linearises its indices row-major with the static shape; a bf16 element is a
  `std::uint16_t` bit pattern, as it is an i16 in the JIT (the pipeline's
  arith-expand-bf16 leaves only integer ops on it, so both round identically); an f16
  element is a `_Float16`, LLVM's `half` (converted to and from f32 only: one
  correctly rounded conversion in both backends);
* the arith / math ops that are one operation in both backends are written from the
  table the LLVM lowering uses too (`target/op_tables.py`): the C++ operator or
  `<cmath>` function of each (which calls the libm function the JIT's intrinsic
  becomes);
* a private function (an outlined kernel) is `static`, and its pointer parameters are
  `__restrict`: kernels are outlined precisely so that their memrefs do not alias, and
  that is what lets the compiler vectorise them, as `noalias` does for LLVM;
* scalars are `const` locals named after the IR's SSA numbers (`%14` -> `v14`), or
  after the IR's name hints (`%fc1_weight` -> `fc1_weight`); constants are inlined as
  literals that denote exactly the IR's value;
* floating-point ops are written one IEEE operation per statement, so a program built
  with `-ffp-contract=off` rounds exactly where the JIT does: `math.fma` is the only
  fused operation, emitted as `std::fma`;
* 1-D vectors (`vector<16xf32>`) are GCC/Clang vector-extension types (`frame_f32x16`,
  one typedef per type used): arith on them is the lane-wise C++ operator,
  `vector.load`/`store` a `memcpy` (element alignment only, as in the JIT),
  `vector.broadcast` a lane-by-lane copy, `vector.fma` a per-lane `std::fma` loop that
  GCC compiles to one vfmadd, `vector.shuffle` a `__builtin_shufflevector`; ops
  without a vector rule fail on vectors;
* `frame_rt.parallel_for` (kernels split over threads) is `frame_parallel_for::run`,
  the `std::thread` pool of `thread_pool.py`, with a lambda that calls the task;
* `frame_rt.row %buf[%t]` (the rows frame-lower-scan hands a scan's step function) is
  the pointer `buf + t * <row elements>`; functions are emitted callees first (a step
  function the IR defines after its caller is emitted before it);
* `frame_rt.prefetch %buf[%i]` (frame-gemm's hints for an epilogue's operands) is
  `__builtin_prefetch(buf + i, rw, 3)`, as the JIT's `llvm.prefetch`;
* `frame.layer` / `frame.stage` attributes (on kernel functions and on the calls of
  them) become comments; without them, the kernel name (`..__k3_matmul`) is used.

Public API: `emit_module(module) -> CppModule`, `EMIT_RULES`, `CppEmitError`.
"""

from __future__ import annotations

import math as pymath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from frame_mlir.backend.cpp.thread_pool import POOL_HELPER, POOL_INCLUDES
from frame_mlir.dialects.frame_rt import ParallelForOp, PrefetchOp, RowOp
from frame_mlir.target.op_tables import OP_TABLE, OpRow

__all__ = [
    "EMIT_RULES",
    "CppEmitError",
    "CppModule",
    "FunctionInfo",
    "cpp_identifier",
    "emit_module",
    "float_literal",
]


class CppEmitError(Exception):
    """The module uses something the C++ backend cannot express."""


# --------------------------------------------------------------------------------------
# identifiers and literals

CPP_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    main std NULL errno assert stdin stdout stderr
""".split())


def comment_text(text: str) -> str:
    """`text` safe inside a `//` comment: unprintable characters are escaped (a newline
    would end the comment and turn the rest into code), and so is `\\`, as `\\x5c`
    (a backslash at the end of a line splices the next line into the comment)."""
    return "".join("\\x5c" if c == "\\" else c if c.isprintable() else
                   c.encode("unicode_escape").decode("ascii") for c in text)


def c_string(text: str) -> str:
    """A C++ string literal holding `text`'s UTF-8 bytes: printable ASCII as itself,
    `"` and `\\` escaped, every other byte as a three-digit octal escape (which,
    unlike `\\x`, cannot swallow a following digit)."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        if ch in "\\\"":
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def cpp_identifier(name: str) -> str:
    """A valid, non-reserved C++ identifier that reads like `name` (`fc1.weight` ->
    `fc1_weight`).

    Identifiers with a double underscore, or an underscore and a capital letter at the
    start, are reserved to the implementation, so those are avoided too.
    """
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name)
    ident = re.sub(r"__+", "_", ident).strip("_") or "v"
    if ident[0].isdigit():
        ident = "v" + ident
    if ident in CPP_KEYWORDS:
        ident += "_"
    return ident


class Namer:
    """Hands out unique identifiers within one scope."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken: set[str] = set(taken)

    def fresh(self, hint: str) -> str:
        base = cpp_identifier(hint)
        name, n = base, 2
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name


F16_TYPE = "_Float16"
"""The C++ type of f16: GCC's (>= 12 on x86-64, also aarch64) and Clang's IEEE binary16,
the `half` of the JIT. The pipeline computes in f32 and only converts to and from f16
(`arith.extf` / `arith.truncf`, one correctly rounded conversion each in both
backends); any arithmetic on f16 itself is written in f32 and rounded back, as LLVM
lowers `half` arithmetic on x86 (see `_f16_arith`)."""


def _float_type_info(typ: Attribute) -> tuple[str, type[np.floating], str]:
    """(C++ type, numpy type, literal suffix) of a float type."""
    if isinstance(typ, Float32Type):
        return "float", np.float32, "f"
    if isinstance(typ, Float64Type):
        return "double", np.float64, ""
    if isinstance(typ, Float16Type):
        return F16_TYPE, np.float16, ""
    raise CppEmitError(f"no C++ type for floating-point type {typ}")


def _rounds_to(text: str, value: np.floating) -> bool:
    """Whether the decimal `text` read with correct rounding (as a C++ compiler reads a
    literal) gives exactly `value`: exact rational arithmetic, no double rounding."""
    exact = Fraction(text)
    v = Fraction(float(value))
    with np.errstate(over="ignore"):
        up = np.nextafter(value, value.dtype.type(np.inf))
        down = np.nextafter(value, value.dtype.type(-np.inf))
    # beyond the largest finite value the next step is one more ulp (rounds to infinity)
    up_f = Fraction(float(up)) if np.isfinite(up) else 2 * v - Fraction(float(down))
    down_f = Fraction(float(down)) if np.isfinite(down) else 2 * v - up_f
    return (v + down_f) / 2 < exact < (v + up_f) / 2


def float_literal(value: float, typ: Attribute) -> str:
    """A C++ expression denoting exactly `value` rounded to `typ` (f32 or f64).

    The shortest decimal that reads back to the same value (`-0.05f`), checked with
    exact arithmetic; a hex-float literal where that check fails; `std::numeric_limits`
    for infinities and NaN.
    """
    ctype, np_type, suffix = _float_type_info(typ)
    if isinstance(typ, Float16Type):
        # Every half value is a float value: its exact float literal, converted (exact).
        inner = float_literal(float(np.float16(value)), Float32Type())
        return f"static_cast<{F16_TYPE}>({inner})"
    v = np_type(value)
    if np.isnan(v):
        return f"std::numeric_limits<{ctype}>::quiet_NaN()"
    if np.isinf(v):
        sign = "-" if v < 0 else ""
        return f"{sign}std::numeric_limits<{ctype}>::infinity()"
    text = np.format_float_positional(v, unique=True, trim="0") if (
        v == 0 or 1e-4 <= abs(v) < 1e7) else np.format_float_scientific(v, unique=True)
    if _rounds_to(text, v):
        return text + suffix
    hexa = float(v).hex()  # exact: a float32 value is a double value
    mant, exp = hexa.split("p")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return f"{mant}p{exp}{suffix}"


# --------------------------------------------------------------------------------------
# types


def scalar_type(typ: Attribute) -> str:
    """The C++ type of a scalar IR type."""
    if isinstance(typ, IndexType):
        return "std::int64_t"
    if isinstance(typ, IntegerType):
        width = typ.width.data
        if width == 1:
            return "bool"
        if width in (8, 16, 32, 64):
            return f"std::int{width}_t"
        raise CppEmitError(f"no C++ type for integer type {typ}")
    if isinstance(typ, BFloat16Type):
        # Storage only, as in the JIT (where it is an i16): arith-expand-bf16 has made
        # its conversions integer ops on the bits, so both round identically.
        return "std::uint16_t"
    if isinstance(typ, AnyFloat):
        return _float_type_info(typ)[0]
    raise CppEmitError(f"no C++ type for {typ}")


def unsigned_type(typ: Attribute) -> str:
    """The unsigned C++ type of the same width (for arith's unsigned ops)."""
    if isinstance(typ, IndexType):
        return "std::uint64_t"
    if isinstance(typ, IntegerType) and typ.width.data == 1:
        return "bool"
    if isinstance(typ, IntegerType) and typ.width.data in (8, 16, 32, 64):
        return f"std::uint{typ.width.data}_t"
    raise CppEmitError(f"no unsigned C++ type for {typ}")


def _memref_type(typ: Attribute) -> MemRefType:
    if not isinstance(typ, MemRefType):
        raise CppEmitError(f"expected a memref, found {typ}")
    # A dynamic leading dimension is fine: row-major linearisation never multiplies
    # by it (frame-train-loop's `memref<?xf32>` losses); any other one is not.
    if any(d < 0 for d in typ.get_shape()[1:]):
        raise CppEmitError(f"dynamic shapes are not supported: {typ}")
    if not isinstance(typ.layout, NoneAttr):
        # loads and stores linearise row-major: any other layout would be misread
        raise CppEmitError(f"only identity-layout memrefs are supported: {typ}")
    return typ


def element_type(typ: Attribute) -> str:
    """The C++ element type of a memref (`std::uint8_t` for the byte arena)."""
    elem = _memref_type(typ).element_type
    if isinstance(elem, IntegerType) and elem.width.data == 8:
        return "std::uint8_t"
    return scalar_type(elem)


def _element_bytes(typ: MemRefType) -> int:
    elem = typ.element_type
    if isinstance(elem, (IntegerType, AnyFloat)):
        return max(1, elem.bitwidth // 8)
    raise CppEmitError(f"no element size for {typ}")


def shape_text(typ: MemRefType) -> str:
    """`8x4` (`scalar` for 0-d), for comments."""
    shape = typ.get_shape()
    return "x".join(str(d) for d in shape) if shape else "scalar"


# --------------------------------------------------------------------------------------
# module-level results


@dataclass
class FunctionInfo:
    """What callers need to know about an emitted function."""

    ir_name: str
    cpp_name: str
    const_params: list[bool]  # pointer parameter only read (emitted `const T*`)
    reads_memory: bool  # False for a kernel that only stores constants (an initialiser)
    restrict: bool  # pointer parameters are `__restrict` (private functions: kernels)


@dataclass
class CppModule:
    """The C++ translation of a module: includes, helpers, functions in IR order
    (callees first)."""

    includes: set[str] = field(default_factory=set)
    helpers: dict[str, str] = field(default_factory=dict)  # name -> definition
    prototypes: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    info: dict[str, FunctionInfo] = field(default_factory=dict)  # by IR symbol
    # Bits of the widest vector type the functions use (0: scalar code only): what the
    # build asks the compiler to keep whole (`cmake.vector_width_flag`).
    vector_bits: int = 0

    def text(self) -> str:
        """A complete translation unit (without `main`)."""
        parts = ["\n".join(f"#include <{h}>" for h in sorted(self.includes)) + "\n"]
        parts += [h + "\n" for h in self.helpers.values()]
        if self.prototypes:
            parts.append("\n".join(self.prototypes) + "\n")
        parts += [f + "\n" for f in self.functions]
        return "\n".join(parts)


# helpers written into the program only when an op needs them
_HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "frame_maximumf": ("""\
// arith.maximumf: NaN if either operand is NaN, and +0 > -0 (std::fmax does neither).
template <typename T>
static inline T frame_maximumf(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}""", ("cmath", "limits")),
    "frame_minimumf": ("""\
// arith.minimumf: NaN if either operand is NaN, and -0 < +0 (std::fmin does neither).
template <typename T>
static inline T frame_minimumf(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}""", ("cmath", "limits")),
    "frame_bitcast": ("""\
// arith.bitcast: reinterpret the bits (memcpy is the defined way in C++17).
template <typename To, typename From>
static inline To frame_bitcast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between types of different sizes");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}""", ("cstring",)),
}


# Vector helpers: V is a vector-extension type (`frame_f32x16`), T its element type.
_HELPERS.update({
    "frame_vload": ("""\
// vector.load: sizeof(V) bytes from an element-aligned address (memcpy; dereferencing a
// V* would promise the vector's alignment, which arena offsets do not have).
template <typename V, typename T>
static inline V frame_vload(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}""", ("cstring",)),
    "frame_vstore": ("""\
// vector.store: sizeof(V) bytes to an element-aligned address.
template <typename V, typename T>
static inline void frame_vstore(T* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}""", ("cstring",)),
    "frame_splat": ("""\
// vector.broadcast: every lane a copy of s, bit for bit (`V{} + s` would turn -0.0
// into +0.0); GCC emits one vbroadcastss.
template <typename V, typename T>
static inline V frame_splat(T s) {
  V v = {};
  for (std::size_t i = 0; i < sizeof(V) / sizeof(T); ++i) v[i] = s;
  return v;
}""", ("cstddef",)),
    "frame_vfma": ("""\
// vector.fma: a * b + c with one rounding per lane, as llvm.fma on vectors. GCC -O3
// turns the loop into one vfmadd on the whole register (zmm for 16 floats).
template <typename V>
static inline V frame_vfma(V a, V b, V c) {
  V r = {};
  for (std::size_t i = 0; i < sizeof(V) / sizeof(a[0]); ++i) r[i] = std::fma(a[i], b[i], c[i]);
  return r;
}""", ("cmath", "cstddef")),
    "frame_vmaximumf": ("""\
// arith.maximumf on vectors, lane by lane as frame_maximumf: NaN if either lane is NaN,
// +0 > -0 (equal lanes: AND of the bits, which keeps +0 over -0). Comparisons give
// integer lanes of -1 / 0 (type M); a cast between same-size vectors keeps the bits.
template <typename V>
static inline V frame_vmaximumf(V a, V b) {
  using M = decltype(a < b);
  using T = decltype(a[0] + 0);
  const V same = (V)((M)a & (M)b);
  V r = a > b ? a : b;
  r = a == b ? same : r;
  return (a != a) | (b != b) ? V{} + std::numeric_limits<T>::quiet_NaN() : r;
}""", ("limits",)),
    "frame_vminimumf": ("""\
// arith.minimumf on vectors: NaN if either lane is NaN, -0 < +0 (equal lanes: OR of
// the bits, which keeps -0 over +0).
template <typename V>
static inline V frame_vminimumf(V a, V b) {
  using M = decltype(a < b);
  using T = decltype(a[0] + 0);
  const V same = (V)((M)a | (M)b);
  V r = a < b ? a : b;
  r = a == b ? same : r;
  return (a != a) | (b != b) ? V{} + std::numeric_limits<T>::quiet_NaN() : r;
}""", ("limits",)),
})

# frame_rt.parallel_for: the std::thread pool (thread_pool.py).
_HELPERS["frame_parallel_for"] = (POOL_HELPER, POOL_INCLUDES)


def _vector_lanes(typ: VectorType) -> int:
    """The lane count of a 1-D vector type GCC's vector extension can declare."""
    shape = typ.get_shape()
    if len(shape) != 1 or typ.get_num_scalable_dims() != 0:
        raise CppEmitError(f"only 1-D fixed-size vectors are supported, got {typ}")
    lanes = shape[0]
    if lanes < 1 or lanes & (lanes - 1):
        raise CppEmitError(f"{typ}: vector extension types need a power-of-two lane count")
    return lanes


# --------------------------------------------------------------------------------------
# the emitter


EmitRule = Callable[["CppEmitter", Operation], None]
"""An emission rule: writes the C++ for one op through the emitter."""

EMIT_RULES: dict[type[Operation], EmitRule] = {}
"""The emission rule of each op class of the loop level. Filled below by `_rule`."""


def _rule(*op_types: type[Operation]) -> Callable[[EmitRule], EmitRule]:
    def register(fn: EmitRule) -> EmitRule:
        for t in op_types:
            EMIT_RULES[t] = fn
        return fn
    return register


_KERNEL_NAME = re.compile(r"__k(\d+)_(\w+)$")

#: What `finish_function` reads: maximal runs of word characters (a name occurs where
#: one equals it, as `\bname\b` finds it), names the C++ may carry, a named parameter
#: of a signature, a `const` definition and the names it defines.
_WORD_RUN = re.compile(r"\w+")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NAMED_PARAM = re.compile(r"(\S) ([A-Za-z_]\w*)([,)])")
_CONST_LINE = re.compile(r"(\s*)const ")
_DEFINED = re.compile(r"(?= (\w+) = )")


def _maybe_unused(line: str, once: set[str]) -> str:
    """`line` with `[[maybe_unused]]` before its `const` if it defines (`const ... name
    = `) one of the names in `once`."""
    m = _CONST_LINE.match(line)
    if m is None or not any(d[1] in once for d in _DEFINED.finditer(line, m.end())):
        return line
    return f"{m[1]}[[maybe_unused]] {line[len(m[1]):]}"


def kernel_op_name(symbol: str) -> str | None:
    """The frame op a kernel was outlined from (`@m__k3_matmul` -> `matmul`)."""
    m = _KERNEL_NAME.search(symbol)
    return m.group(2) if m else None


def _str_attr(op: Operation, name: str) -> str | None:
    attr = op.attributes.get(name)
    return attr.data if isinstance(attr, StringAttr) else None


class CppEmitter:
    """Translates a module op by op; holds the state of the function being emitted."""

    INDENT = "  "

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.out = CppModule(includes={"cstdint"})
        self.global_names = Namer(set(_HELPERS))
        self.cpp_names: dict[str, str] = {}
        #: Functions some function calls (for public ones: the step of a scan).
        self.called = {o.callee.root_reference.data for o in module.walk()
                       if isinstance(o, func.CallOp)}
        for op in module.ops:
            if isinstance(op, func.FuncOp):
                self.cpp_names[op.sym_name.data] = self.global_names.fresh(
                    op.sym_name.data)
        self._reset_function_state()

    def _reset_function_state(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.names: dict[SSAValue, str] = {}  # value -> C++ expression (name or literal)
        self.non_nan_literals: set[SSAValue] = set()
        self.local_names = Namer(self.global_names.taken)
        self.numbers: dict[SSAValue, int] = {}
        self.yield_targets: dict[Operation, list[str]] = {}
        self.unrolling = 0  # > 0 inside a loop nest that is fully unrolled
        self.views: dict[SSAValue, tuple[SSAValue, int, int]] = {}  # source, byte range
        self.banner: tuple[str | None, str | None] = (None, None)  # (stage, layer)

    # ---- output ------------------------------------------------------------------

    def line(self, text: str = "") -> None:
        """Append one line at the current indentation."""
        self.lines.append(self.INDENT * self.depth + text if text else "")

    def include(self, *headers: str) -> None:
        self.out.includes.update(headers)

    def helper(self, name: str) -> str:
        """Make sure helper `name` is in the program; returns its name."""
        code, headers = _HELPERS[name]
        self.out.helpers[name] = code
        self.include(*headers)
        return name

    # ---- values ------------------------------------------------------------------

    def expr(self, value: SSAValue) -> str:
        """The C++ expression of an already emitted value."""
        try:
            return self.names[value]
        except KeyError:
            raise CppEmitError(f"value {value} used before it was emitted") from None

    def bind(self, value: SSAValue, expr: str) -> None:
        """Let `value` stand for the C++ expression `expr` (no statement)."""
        self.names[value] = expr

    def fresh_name(self, value: SSAValue, prefix: str = "v") -> str:
        """A local name for `value`: its name hint, or `<prefix><IR number>`."""
        if value.name_hint:
            return self.local_names.fresh(value.name_hint)
        return self.local_names.fresh(f"{prefix}{self.numbers.get(value, len(self.names))}")

    def define(self, value: SSAValue, expr: str) -> None:
        """Emit `const T name = expr;` for `value` (nothing if it is never used: the op
        is pure, and an unused variable would trip -Wunused-variable)."""
        if not value.uses:
            return
        name = self.fresh_name(value)
        self.line(f"const {self.ctype(value.type)} {name} = {expr};")
        self.bind(value, name)

    def ctype(self, typ: Attribute) -> str:
        """The C++ type of a value of IR type `typ`: `scalar_type`, or for a 1-D vector
        the vector-extension typedef (`frame_f32x16`), added to the program."""
        if not isinstance(typ, VectorType):
            return scalar_type(typ)
        lanes = _vector_lanes(typ)
        elem = typ.element_type
        if isinstance(elem, AnyFloat):
            short = f"f{elem.bitwidth}"
        elif isinstance(elem, IntegerType) and elem.width.data in (8, 16, 32, 64):
            short = f"i{elem.width.data}"
        else:
            raise CppEmitError(f"no C++ vector type for {typ}")
        name = f"frame_{short}x{lanes}"
        if name not in self.out.helpers:
            element = scalar_type(elem)
            nbytes = lanes * elem.bitwidth // 8
            self.out.vector_bits = max(self.out.vector_bits, 8 * nbytes)
            self.out.helpers[name] = (
                f"typedef {element} {name} __attribute__((vector_size({nbytes})));")
        return name

    # ---- ops ---------------------------------------------------------------------

    def emit_op(self, op: Operation) -> None:
        """Dispatch `op` to its rule in EMIT_RULES."""
        rule = EMIT_RULES.get(type(op))
        if rule is None:
            raise CppEmitError(f"no C++ emission rule for {op.name}")
        if type(op) not in VECTOR_OPS and any(
                isinstance(v.type, VectorType) for v in (*op.operands, *op.results)):
            raise CppEmitError(f"{op.name} on vectors is not supported by the C++ backend")
        rule(self, op)

    def emit_block(self, block: Block) -> None:
        for op in block.ops:
            self.emit_op(op)

    def _number_values(self, fn: func.FuncOp) -> None:
        """Number unnamed values in the order xDSL's printer does (`%14` -> `v14`),
        so the C++ can be read side by side with `--emit-stage=loops`."""
        self.numbers = {}

        def visit_block(block: Block) -> None:
            for arg in block.args:
                if not arg.name_hint:
                    self.numbers[arg] = len(self.numbers)
            for op in block.ops:
                for res in op.results:
                    if not res.name_hint:
                        self.numbers[res] = len(self.numbers)
                for region in op.regions:
                    for b in region.blocks:
                        visit_block(b)

        for b in fn.body.blocks:
            visit_block(b)

    def _callees_first(self) -> list[Operation]:
        """The module's ops in IR order, except that a function comes after the
        functions it calls (a step function defined after the function that scans
        over it): a caller's view of its callee's parameters (`const` or not) is the
        callee's definition, so a prototype could not disagree with it. Modules whose
        callees come first already keep their order."""
        funcs = {op.sym_name.data: op for op in self.module.ops if isinstance(op, func.FuncOp)}
        order: list[Operation] = []
        seen: set[int] = set()

        def visit(op: Operation) -> None:
            if id(op) in seen:
                return
            seen.add(id(op))
            for inner in op.walk():
                target = inner.callee if isinstance(inner, func.CallOp) else \
                    inner.task if isinstance(inner, ParallelForOp) else None
                if target is not None and target.root_reference.data in funcs:
                    visit(funcs[target.root_reference.data])
            order.append(op)

        for op in self.module.ops:
            visit(op)
        return order

    def emit_module(self) -> CppModule:
        """Emit every op of the module (functions in IR order, callees first)."""
        defined: set[str] = set()
        for op in self._callees_first():
            if isinstance(op, func.FuncOp):
                for call in op.walk():
                    if isinstance(call, func.CallOp) and \
                            call.callee.root_reference.data not in defined and \
                            call.callee.root_reference.data != op.sym_name.data:
                        self._prototype_needed(call.callee.root_reference.data)
                defined.add(op.sym_name.data)
            self.emit_op(op)
        return self.out

    def _prototype_needed(self, symbol: str) -> None:
        for op in self.module.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == symbol:
                proto = self.signature(op, declare_only=True) + ";"
                if proto not in self.out.prototypes:
                    self.out.prototypes.append(proto)
                return
        raise CppEmitError(f"call of unknown function @{symbol}")

    # ---- functions ---------------------------------------------------------------

    def _param_access(self, arg: SSAValue) -> tuple[bool, bool]:
        """(read, written) for a pointer parameter, from its uses (and those of its
        collapsed forms: the same pointer)."""
        read = written = False
        for use in arg.uses:
            user = use.operation
            if isinstance(user, memref.LoadOp | vector.LoadOp):
                read = True
            elif isinstance(user, memref.StoreOp) and user.memref is arg or \
                    isinstance(user, vector.StoreOp) and user.base is arg:
                written = True
            elif isinstance(user, memref.CollapseShapeOp | memref.CastOp) or \
                    isinstance(user, RowOp) and user.source is arg:
                r, w = self._param_access(user.results[0])
                read, written = read or r, written or w
            elif isinstance(user, func.CallOp | ParallelForOp):
                # A parallel_for passes its args (operands from #2 on) to its task.
                callee, index = (user.callee, use.index) if isinstance(user, func.CallOp) \
                    else (user.task, use.index - 2)
                info = self.out.info.get(callee.root_reference.data)
                if info is not None and index >= 0 and info.const_params[index]:
                    read = True
                else:
                    read = written = True
            else:  # views, or anything we cannot see through
                read = written = True
        return read, written

    def signature(self, fn: func.FuncOp, *, declare_only: bool = False) -> str:
        """`static void name(params)`; also names the parameters and records the
        function's FunctionInfo (unless only declaring it)."""
        private = fn.sym_visibility is not None and fn.sym_visibility.data == "private"
        outputs = fn.function_type.outputs.data
        if len(outputs) > 1:
            raise CppEmitError(f"@{fn.sym_name.data}: functions with several results are "
                               "not supported")
        ret = self.ctype(outputs[0]) if outputs else "void"
        params: list[str] = []
        const_params: list[bool] = []
        reads = False
        for op in fn.walk():
            if isinstance(op, memref.LoadOp | vector.LoadOp):
                reads = True
        block = fn.body.blocks[0] if fn.body.blocks else None
        for i, typ in enumerate(fn.function_type.inputs.data):
            arg = block.args[i] if block is not None else None
            if isinstance(typ, MemRefType):
                read, written = self._param_access(arg) if arg is not None else (True, True)
                const = read and not written
                const_params.append(const)
                ctype = f"{'const ' if const else ''}{element_type(typ)}*"
                if private:
                    ctype += " __restrict"  # kernels are outlined so that args don't alias
                if arg is not None and arg.name_hint:
                    hint = arg.name_hint
                else:
                    role = "inout" if read and written else "out" if written else "in"
                    hint = f"{role}{i}"
            else:
                const_params.append(False)
                ctype = self.ctype(typ)
                hint = arg.name_hint if arg is not None and arg.name_hint else f"a{i}"
            if declare_only or arg is None:
                params.append(ctype)
                continue
            name = self.local_names.fresh(hint)
            self.bind(arg, name)
            params.append(f"{ctype} {name}")
        cpp_name = self.cpp_names[fn.sym_name.data]
        if not declare_only:
            self.out.info[fn.sym_name.data] = FunctionInfo(
                fn.sym_name.data, cpp_name, const_params, reads, private)
        head = f"{'static ' if private else ''}{ret} {cpp_name}("
        one_line = head + ", ".join(params) + ")"
        if len(one_line) <= 96:
            return one_line
        pad = " " * 4
        return head + "\n" + ",\n".join(pad + p for p in params) + ")"

    def finish_function(self, signature: str) -> list[str]:
        """The function's lines, quiet under -Wall -Wextra: a parameter or local that
        the C++ never reads (an op may drop an operand, `cmpf true`) loses its name
        or gets `[[maybe_unused]]`. One pass over the body, the signature and the
        lines each, whatever the number of names (a train step of thousands of
        buffers)."""
        uses = Counter(_WORD_RUN.findall("\n".join(self.lines)))
        names = {n for n in self.names.values() if _IDENTIFIER.fullmatch(n)}
        unused = {n for n in names if n not in uses}  # a parameter
        once = {n for n in names if uses.get(n) == 1}  # only its definition
        if unused:
            signature = _NAMED_PARAM.sub(
                lambda m: f"{m[1]} /*{m[2]}*/{m[3]}" if m[2] in unused else m[0], signature)
        if once:
            self.lines = [_maybe_unused(ln, once) for ln in self.lines]
        return [f"{signature} {{", *self.lines, "}"]

    def begin_function(self, fn: func.FuncOp) -> None:
        """Reset the per-function state."""
        self._reset_function_state()
        self._number_values(fn)

    def function_comment(self, fn: func.FuncOp) -> list[str]:
        """Where a function comes from: its IR name, layer and stage."""
        name = fn.sym_name.data
        layer, stage = _str_attr(fn, "frame.layer"), _str_attr(fn, "frame.stage")
        op = kernel_op_name(name)
        parts = [f"@{name}"]
        if op is not None:
            parts.append(f"kernel of frame.{op}")
        if layer is not None:
            parts.append(f"layer {comment_text(layer)}")
        if stage is not None:
            parts.append(comment_text(stage))
        if fn.sym_visibility is None or fn.sym_visibility.data != "private":
            if "frame.train_step" in fn.attributes:
                parts.append("training step: forward, backward and SGD update")
            elif "frame.train_loop" in fn.attributes:
                parts.append("training loop: `*steps` training steps, losses[i] = step i's loss")
            elif "frame.inference" in fn.attributes:
                parts.append("inference: the prediction layer's output")
            elif name in self.called:
                parts.append("step function: called once per step of a scan")
            else:
                parts.append("forward and loss")
            size = fn.attributes.get("frame.arena_size")
            if isinstance(size, IntegerAttr):
                parts.append(f"arena of {size.value.data} bytes")
        return ["// " + ", ".join(parts)]

    def call_banner(self, call: func.CallOp, *, quiet: bool = False) -> None:
        """Stage and layer comments before a kernel call, when they change (`quiet`:
        only those, not the op-name fallback for IR without the attributes)."""
        callee = call.callee.root_reference.data
        stage, layer = _str_attr(call, "frame.stage"), _str_attr(call, "frame.layer")
        if stage is None and layer is None:
            op = kernel_op_name(callee)
            if op is not None and not quiet:
                self.line(f"// {op}")
            return
        old_stage, old_layer = self.banner
        if stage is not None and stage != old_stage:
            if self.lines and self.lines[-1].strip():
                self.line()
            self.line(f"// ---- {comment_text(stage)} ----")
            old_layer = None
        if layer is not None and layer != old_layer:
            self.line(f"// layer {comment_text(layer)}")
        self.banner = (stage, layer)


# --------------------------------------------------------------------------------------
# func


@_rule(func.FuncOp)
def _emit_func(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, func.FuncOp)
    if not op.body.blocks:  # an external declaration
        em.out.prototypes.append(em.signature(op, declare_only=True) + ";")
        return
    if len(op.body.blocks) != 1:
        raise CppEmitError(f"@{op.sym_name.data}: functions with several blocks are not "
                           "supported (expected the loops stage: scf, not cf)")
    em.begin_function(op)
    signature = em.signature(op)
    em.depth += 1
    em.emit_block(op.body.blocks[0])
    em.depth -= 1
    em.out.functions.append("\n".join(em.function_comment(op) + em.finish_function(signature)))


@_rule(func.CallOp)
def _emit_call(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, func.CallOp)
    symbol = op.callee.root_reference.data
    if symbol not in em.cpp_names:
        raise CppEmitError(f"call of unknown function @{symbol}")
    info = em.out.info.get(symbol)
    if info is not None and info.restrict:
        _check_no_alias(em, op)
    em.call_banner(op)
    call = f"{em.cpp_names[symbol]}({', '.join(em.expr(a) for a in op.arguments)})"
    if not op.results:
        em.line(call + ";")
    elif len(op.results) == 1:
        res = op.results[0]
        if res.uses:
            name = em.fresh_name(res)
            em.line(f"const {em.ctype(res.type)} {name} = {call};")
            em.bind(res, name)
        else:
            em.line(call + ";")
    else:
        raise CppEmitError(f"call of @{symbol}: several results are not supported")


@_rule(ParallelForOp)
def _emit_parallel_for(em: CppEmitter, op: Operation) -> None:
    """The task on the pool's threads, its chunks as the JIT's runtime cuts them."""
    assert isinstance(op, ParallelForOp)
    symbol = op.task.root_reference.data
    if symbol not in em.cpp_names:
        raise CppEmitError(f"frame_rt.parallel_for of unknown function @{symbol}")
    em.helper("frame_parallel_for")
    lo, hi = em.local_names.fresh("lo"), em.local_names.fresh("hi")
    args = ", ".join([*(em.expr(a) for a in op.args), lo, hi])
    em.line(f"frame_parallel_for::run({op.threads.value.data}, {em.expr(op.lb)}, "
            f"{em.expr(op.ub)}, [&](std::int64_t {lo}, std::int64_t {hi}) {{")
    em.line(f"{em.INDENT}{em.cpp_names[symbol]}({args});")
    em.line("});")


@_rule(RowOp)
def _emit_row(em: CppEmitter, op: Operation) -> None:
    """Row t of a row-major buffer: the pointer to its first element."""
    assert isinstance(op, RowOp)
    typ = _memref_type(op.source.type)
    _memref_type(op.result.type)
    if not op.result.uses:
        return
    t = em.expr(op.index)
    size = op.row_elements()
    offset = "" if t == "0" else f" + {t}" if size == 1 else f" + {t} * {size}"
    name = em.fresh_name(op.result, prefix="row")
    em.line(f"auto* const {name} = {em.expr(op.source)}{offset};  "
            f"// row {t} of {shape_text(typ)}")
    em.bind(op.result, name)


@_rule(PrefetchOp)
def _emit_prefetch(em: CppEmitter, op: Operation) -> None:
    """A cache hint: the line of `buf + i` (not dereferenced: the index may be past the
    buffer) into every cache level, for reading or writing."""
    assert isinstance(op, PrefetchOp)
    _memref_type(op.memref.type)
    rw = 1 if op.write is not None else 0
    em.line(f"__builtin_prefetch({em.expr(op.memref)} + {em.expr(op.index)}, {rw}, 3);")


def _check_no_alias(em: CppEmitter, call: func.CallOp) -> None:
    """`__restrict` parameters promise that the memrefs of a call do not overlap; the
    pipeline outlines kernels so that they don't. Check it rather than trust it: two
    uses of one value, or two views of the arena whose byte ranges overlap."""
    mems = [a for a in call.arguments if isinstance(a.type, MemRefType)]
    for i, a in enumerate(mems):
        for b in mems[i + 1:]:
            va, vb = em.views.get(a), em.views.get(b)
            overlap = a is b or (va is not None and vb is not None and va[0] is vb[0]
                                 and va[1] < vb[2] and vb[1] < va[2])
            overlap = overlap or (va is not None and va[0] is b) or \
                (vb is not None and vb[0] is a)
            if overlap:
                raise CppEmitError(
                    f"call of @{call.callee.root_reference.data}: arguments "
                    f"{em.expr(a)} and {em.expr(b)} overlap, but kernel parameters are "
                    "__restrict (kernels must be outlined on disjoint buffers)")


@_rule(func.ReturnOp)
def _emit_return(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, func.ReturnOp)
    if len(op.arguments) > 1:
        raise CppEmitError("func.return of several values is not supported")
    if op.arguments:
        em.line(f"return {em.expr(op.arguments[0])};")
    elif op.next_op is not None or em.depth > 1:
        em.line("return;")
    # a bare return that ends a void function says nothing: left out


# --------------------------------------------------------------------------------------
# memref


def _linear_index(em: CppEmitter, typ: MemRefType, indices: Sequence[SSAValue]) -> str:
    """Row-major linear index from multi-dim indices and the static shape."""
    shape = typ.get_shape()
    if len(indices) != len(shape):
        raise CppEmitError(f"{len(indices)} indices for a memref of rank {len(shape)}")
    terms: list[str] = []
    stride = 1
    for dim, idx in reversed(list(zip(shape, indices, strict=True))):
        e = em.expr(idx)
        if e != "0":
            terms.append(e if stride == 1 else f"{e} * {stride}")
        stride *= dim
    return " + ".join(reversed(terms)) if terms else "0"


@_rule(memref.LoadOp)
def _emit_load(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, memref.LoadOp)
    typ = _memref_type(op.memref.type)
    em.define(op.res, f"{em.expr(op.memref)}[{_linear_index(em, typ, op.indices)}]")


@_rule(memref.StoreOp)
def _emit_store(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, memref.StoreOp)
    typ = _memref_type(op.memref.type)
    em.line(f"{em.expr(op.memref)}[{_linear_index(em, typ, op.indices)}] = "
            f"{em.expr(op.value)};")


def _view_name(em: CppEmitter, op: memref.ViewOp) -> str:
    """Name a view of the arena after what first computes into it: `fc1_matmul` (layer
    fc1, kernel of frame.matmul), `fc2_matmul_grad` in the backward stage."""
    calls = [u.operation for u in op.result.uses if isinstance(u.operation, func.CallOp)]
    if any(isinstance(u.operation, RowOp) for u in op.result.uses) or \
            any(kernel_op_name(c.callee.root_reference.data) is None for c in calls):
        # A scan's buffers (its rows, its step's arena): named as the IR names them.
        return em.local_names.fresh(op.result.name_hint or "scan")

    def writes(call: func.CallOp) -> bool:
        info = em.out.info.get(call.callee.root_reference.data)
        if info is None:
            return True
        return any(a is op.result and not info.const_params[i]
                   for i, a in enumerate(call.arguments))

    def initialiser(call: func.CallOp) -> bool:
        info = em.out.info.get(call.callee.root_reference.data)
        return info is not None and not info.reads_memory

    block = op.parent_block()
    order = {o: i for i, o in enumerate(block.ops)} if block is not None else {}
    calls.sort(key=lambda c: order.get(c, 0))
    producers = [c for c in calls if writes(c) and not initialiser(c)] or calls
    if not producers:
        return em.local_names.fresh(f"buf{em.numbers.get(op.result, 0)}")
    call = producers[0]
    layer = _str_attr(call, "frame.layer")
    stage = _str_attr(call, "frame.stage")
    kop = kernel_op_name(call.callee.root_reference.data) or "tmp"
    if layer is None:
        return em.local_names.fresh(kop)
    base = cpp_identifier(layer)
    last = layer.split(".")[-1]
    # layer `fc1.relu` + kernel `relu_grad` reads `fc1_relu_grad`, not `fc1_relu_relu_grad`
    name = base + kop[len(last):] if kop.startswith(last) else f"{base}_{kop}"
    if stage == "backward" and not name.endswith("_grad"):
        name += "_grad"
    return em.local_names.fresh(name)


@_rule(memref.ViewOp)
def _emit_view(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, memref.ViewOp)
    if op.sizes:
        raise CppEmitError("memref.view with dynamic sizes is not supported")
    typ = _memref_type(op.result.type)
    if not op.result.uses:
        return
    users = [u.operation for u in op.result.uses if isinstance(u.operation, func.CallOp)]
    block = op.parent_block()
    if users and block is not None:
        # the stage/layer comment of the first kernel using the view goes above it
        order = {o: i for i, o in enumerate(block.ops)}
        em.call_banner(min(users, key=lambda c: order.get(c, 0)), quiet=True)
    name = _view_name(em, op)
    elem = element_type(typ)
    shift = em.expr(op.byte_shift)
    nbytes = _element_bytes(typ) * int(np.prod(typ.get_shape()))
    where = f"bytes [{shift}, {int(shift) + nbytes})" if shift.isdigit() else f"at {shift}"
    em.line(f"{elem}* const {name} = reinterpret_cast<{elem}*>({em.expr(op.source)} + "
            f"{shift});  // {shape_text(typ)}, {where}")
    em.bind(op.result, name)
    if shift.isdigit():
        em.views[op.result] = (op.source, int(shift), int(shift) + nbytes)


# --------------------------------------------------------------------------------------
# scf


def _declare_results(em: CppEmitter, op: Operation, inits: Sequence[str] | None) -> list[str]:
    """Mutable variables that carry an scf op's results (its loop-carried values)."""
    names = []
    for i, res in enumerate(op.results):
        name = em.fresh_name(res, prefix="r")
        init = inits[i] if inits is not None else "{}"
        em.line(f"{em.ctype(res.type)} {name} = {init};")
        em.bind(res, name)
        names.append(name)
    return names


FULL_UNROLL_BUDGET = 256
"""Most iterations (of a loop and the loops inside it) in a fully unrolled loop nest."""


def _trip_count(op: scf.ForOp) -> int | None:
    bounds = []
    for v in (op.lb, op.ub, op.step):
        if not isinstance(v.owner, arith.ConstantOp) or \
                not isinstance(v.owner.value, IntegerAttr):
            return None
        bounds.append(v.owner.value.value.data)
    lb, ub, step = bounds
    return max(0, -(-(ub - lb) // step)) if step > 0 else None


def _nest_size(op: scf.ForOp) -> tuple[int, int] | None:
    """(iterations of the whole nest, depth), None if a trip count is not constant."""
    trips = _trip_count(op)
    if trips is None:
        return None
    inner, depth = 0, 0
    for nested in op.body.blocks[0].ops:
        for sub in nested.walk():
            if isinstance(sub, scf.ForOp) and sub.parent_op() is not None and \
                    _enclosing_for(sub) is op:
                size = _nest_size(sub)
                if size is None:
                    return None
                inner += size[0]
                depth = max(depth, size[1])
    return trips * max(inner, 1), depth + 1


def _enclosing_for(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, (scf.ForOp, func.FuncOp)):
        parent = parent.parent_op()
    return parent


def _depends_on(value: SSAValue, iv: SSAValue) -> bool:
    """Whether `value` is computed from the induction variable `iv`."""
    if value is iv:
        return True
    owner = value.owner
    if isinstance(owner, Operation) and not owner.regions:
        return any(_depends_on(v, iv) for v in owner.operands)
    return False


def _is_register_tile(op: scf.ForOp) -> bool:
    """A small nest (>= 2 loops, <= FULL_UNROLL_BUDGET iterations) inside a loop L
    whose stores do not move with L: once unrolled, what it accumulates is invariant in
    L and can live in registers across it (the C tile of a tiled matmul in its k loop)."""
    size = _nest_size(op)
    outer = _enclosing_for(op)
    if size is None or size[0] > FULL_UNROLL_BUDGET or size[1] < 2 or \
            not isinstance(outer, scf.ForOp):
        return False
    iv = outer.body.blocks[0].args[0]
    stores = [o for o in op.walk() if isinstance(o, memref.StoreOp)]
    return bool(stores) and not any(_depends_on(i, iv) for s in stores for i in s.indices)


@_rule(scf.ForOp)
def _emit_for(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, scf.ForOp)
    # Register tiles are unrolled completely, as LLVM's full unroller does in the JIT:
    # the tiles of frame-tile-matmul rely on it (once the tile loops are gone, the tile
    # of C is invariant in the k loop and stays in vector registers). Other loops are
    # left to the vectoriser: unrolling them only costs compile time.
    unroll = em.unrolling > 0 or _is_register_tile(op)
    carried = _declare_results(em, op, [em.expr(v) for v in op.iter_args])
    body = op.body.blocks[0]
    iv, *iter_block_args = body.args
    for arg, name in zip(iter_block_args, carried, strict=True):
        em.bind(arg, name)  # an iteration reads the carried variable; yield updates it
    em.yield_targets[op] = carried
    name = em.fresh_name(iv, prefix="i")
    em.bind(iv, name)
    step = em.expr(op.step)
    inc = f"++{name}" if step == "1" else f"{name} += {step}"
    trips = _trip_count(op)
    if unroll and trips is not None and trips > 1:
        em.line(f"#pragma GCC unroll {trips}")
    em.line(f"for ({scalar_type(iv.type)} {name} = {em.expr(op.lb)}; "
            f"{name} < {em.expr(op.ub)}; {inc}) {{")
    em.depth += 1
    em.unrolling += int(unroll)
    em.emit_block(body)
    em.unrolling -= int(unroll)
    em.depth -= 1
    em.line("}")


@_rule(scf.IfOp)
def _emit_if(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, scf.IfOp)
    em.yield_targets[op] = _declare_results(em, op, None)
    em.line(f"if ({em.expr(op.cond)}) {{")
    em.depth += 1
    em.emit_block(op.true_region.blocks[0])
    em.depth -= 1
    if op.false_region.blocks and list(op.false_region.blocks[0].ops) and not (
            len(op.results) == 0 and
            isinstance(op.false_region.blocks[0].first_op, scf.YieldOp)):
        em.line("} else {")
        em.depth += 1
        em.emit_block(op.false_region.blocks[0])
        em.depth -= 1
    em.line("}")


@_rule(scf.YieldOp)
def _emit_yield(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, scf.YieldOp)
    parent = op.parent_op()
    targets = em.yield_targets.get(parent) if parent is not None else None
    if targets is None:
        raise CppEmitError(f"scf.yield in {parent.name if parent else 'nothing'}")
    values = [em.expr(v) for v in op.arguments]
    if len(values) == 1:
        if values[0] != targets[0]:
            em.line(f"{targets[0]} = {values[0]};")
        return
    # all yielded values are read before any carried variable changes (a swap is legal)
    temps = []
    for v, res in zip(op.arguments, parent.results, strict=True):
        t = em.local_names.fresh("next")
        em.line(f"const {em.ctype(res.type)} {t} = {em.expr(v)};")
        temps.append(t)
    for target, t in zip(targets, temps, strict=True):
        em.line(f"{target} = {t};")


# --------------------------------------------------------------------------------------
# arith


@_rule(arith.ConstantOp)
def _emit_constant(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, arith.ConstantOp)
    attr = op.value
    typ = op.result.type
    if isinstance(attr, FloatAttr):
        text = float_literal(attr.value.data, typ)
        if "numeric_limits" in text:
            em.include("limits")
        if not pymath.isnan(attr.value.data):
            em.non_nan_literals.add(op.result)
    elif isinstance(attr, IntegerAttr) and isinstance(typ, IntegerType) and \
            typ.width.data == 1:
        text = "true" if attr.value.data else "false"
    elif isinstance(attr, IntegerAttr):
        v = attr.value.data
        text = str(v) if -2**31 < v < 2**31 else f"{scalar_type(typ)}{{{v}LL}}"
    else:
        raise CppEmitError(f"arith.constant of {attr} is not supported (scalars only)")
    em.bind(op.result, text)  # a literal: no variable, the constant reads in place


def _table_rule(row: OpRow) -> EmitRule:
    """The emission of an op of `target.op_tables.OP_TABLE` from its row: the operator
    or function the JIT's lowering matches (one IEEE operation, or the same libm call)."""

    def rule(em: CppEmitter, op: Operation) -> None:
        res = op.results[0]
        args = [em.expr(v) for v in op.operands]
        half = isinstance(res.type, Float16Type)
        if half:
            # f16 arithmetic as LLVM lowers `half` ops on x86: in f32, rounded once to
            # f16 (exact for + - * / sqrt, whose f32 results round to f16 correctly);
            # the casts also keep GCC's excess precision out of the statement.
            args = [f"static_cast<float>({a})" for a in args]
        if isinstance(res.type, VectorType) and isinstance(row.cpp_vector, str):
            em.ctype(res.type)
            em.define(res, f"{em.helper(row.cpp_vector)}({', '.join(args)})")
            return
        if row.header is not None:
            em.include(row.header)
        if row.cpp_form == "operator":
            text = f"{args[0]} {row.cpp} {args[1]}"
        elif row.cpp_form == "unsigned_operator":
            # wraps like LLVM's udiv / lshr / shl: no signed overflow
            u = unsigned_type(res.type)
            lhs, rhs = (f"static_cast<{u}>({a})" for a in args)
            text = f"static_cast<{scalar_type(res.type)}>({lhs} {row.cpp} {rhs})"
        elif row.cpp_form == "prefix":
            text = f"{row.cpp}{args[0]}"
        else:  # call, helper
            fn = em.helper(row.cpp) if row.cpp_form == "helper" else row.cpp
            text = f"{fn}({', '.join(args)})"
        em.define(res, f"static_cast<{F16_TYPE}>({text})" if half else text)

    return rule


for _op, _row in OP_TABLE.items():
    EMIT_RULES[_op] = _table_rule(_row)


@_rule(arith.MaxSIOp, arith.MinSIOp)
def _emit_minmax_signed(em: CppEmitter, op: Operation) -> None:
    em.include("algorithm")
    fn = "std::max" if isinstance(op, arith.MaxSIOp) else "std::min"
    lhs, rhs = (em.expr(v) for v in op.operands)
    # The type spelled out: an index constant is an int literal (`8`), and
    # std::min(std::int64_t, int) deduces no single T.
    em.define(op.results[0], f"{fn}<{scalar_type(op.results[0].type)}>({lhs}, {rhs})")


@_rule(arith.MaxUIOp, arith.MinUIOp)
def _emit_minmax_unsigned(em: CppEmitter, op: Operation) -> None:
    em.include("algorithm")
    typ = op.results[0].type
    u = unsigned_type(typ)
    fn = "std::max" if isinstance(op, arith.MaxUIOp) else "std::min"
    lhs, rhs = (f"static_cast<{u}>({em.expr(v)})" for v in op.operands)
    em.define(op.results[0], f"static_cast<{scalar_type(typ)}>({fn}({lhs}, {rhs}))")


def _isnan(em: CppEmitter, value: SSAValue) -> str | None:
    """`std::isnan(x)`, or None where x is a literal known not to be NaN."""
    if value in em.non_nan_literals:
        return None
    em.include("cmath")
    return f"std::isnan({em.expr(value)})"


_ORDERED = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<="}


@_rule(arith.CmpfOp)
def _emit_cmpf(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, arith.CmpfOp)
    pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    a, b = em.expr(op.lhs), em.expr(op.rhs)
    nans = [t for t in (_isnan(em, op.lhs), _isnan(em, op.rhs)) if t is not None]
    unordered = " || ".join(nans) if nans else "false"
    ordered = f"!({unordered})" if nans else "true"
    # C++ comparisons are false when an operand is NaN, i.e. ordered, except !=.
    if pred == "false" or pred == "true":
        text = pred
    elif pred in _ORDERED:
        text = f"{a} {_ORDERED[pred]} {b}"
    elif pred == "one":
        text = f"({a} < {b} || {a} > {b})"
    elif pred == "ord":
        text = ordered
    elif pred == "uno":
        text = unordered
    elif pred == "une":
        text = f"{a} != {b}"  # true on NaN already: unordered or not equal
    else:  # ueq, ugt, uge, ult, ule: unordered, or the ordered comparison holds
        cmp = f"{a} {_ORDERED['o' + pred[1:]]} {b}"
        text = " || ".join([*nans, cmp])
    em.define(op.results[0], text)


_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}


@_rule(arith.CmpiOp)
def _emit_cmpi(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, arith.CmpiOp)
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    a, b = em.expr(op.lhs), em.expr(op.rhs)
    if pred.startswith("u"):
        u = unsigned_type(op.lhs.type)
        a, b = f"static_cast<{u}>({a})", f"static_cast<{u}>({b})"
    em.define(op.results[0], f"{a} {_CMPI[pred]} {b}")


@_rule(arith.SelectOp)
def _emit_select(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, arith.SelectOp)
    em.define(op.result, f"{em.expr(op.cond)} ? {em.expr(op.lhs)} : {em.expr(op.rhs)}")


@_rule(arith.IndexCastOp, arith.ExtSIOp, arith.TruncIOp, arith.SIToFPOp, arith.FPToSIOp,
       arith.ExtFOp, arith.TruncFOp)
def _emit_cast(em: CppEmitter, op: Operation) -> None:
    (src,) = op.operands
    if any(isinstance(v.type, BFloat16Type) for v in (src, op.results[0])):
        # a static_cast would convert the bit pattern's integer value
        raise CppEmitError(f"{op.name} to or from bf16 is not supported: run "
                           "arith-expand-bf16 first (bf16 is stored as its bits)")
    em.define(op.results[0], f"static_cast<{scalar_type(op.results[0].type)}>"
                             f"({em.expr(src)})")


@_rule(arith.ExtUIOp, arith.UIToFPOp)
def _emit_unsigned_cast(em: CppEmitter, op: Operation) -> None:
    (src,) = op.operands
    u = unsigned_type(src.type)
    em.define(op.results[0], f"static_cast<{scalar_type(op.results[0].type)}>"
                             f"(static_cast<{u}>({em.expr(src)}))")


@_rule(arith.FPToUIOp)
def _emit_fptoui(em: CppEmitter, op: Operation) -> None:
    (src,) = op.operands
    typ = op.results[0].type
    em.define(op.results[0], f"static_cast<{scalar_type(typ)}>"
                             f"(static_cast<{unsigned_type(typ)}>({em.expr(src)}))")


@_rule(arith.BitcastOp)
def _emit_bitcast(em: CppEmitter, op: Operation) -> None:
    (src,) = op.operands
    fn = em.helper("frame_bitcast")
    # The source type spelled out: a constant operand is an int literal (`15821` for an
    # i16), whose deduced type would have the wrong size.
    em.define(op.results[0], f"{fn}<{scalar_type(op.results[0].type)}, "
                             f"{scalar_type(src.type)}>({em.expr(src)})")


# --------------------------------------------------------------------------------------
# math: OP_TABLE's rows (the <cmath> overloads for float call the same libm functions,
# expf, ..., that LLVM's intrinsics become in the JIT), and rsqrt


@_rule(mathd.RsqrtOp)
def _emit_rsqrt(em: CppEmitter, op: Operation) -> None:
    em.include("cmath")
    (src,) = op.operands
    one = float_literal(1.0, src.type)
    sqrt = OP_TABLE[mathd.SqrtOp].cpp
    em.define(op.results[0], f"{one} / {sqrt}({em.expr(src)})")  # as the JIT lowers it


# --------------------------------------------------------------------------------------
# vectors: vector ops, memref.collapse_shape, and the vector forms of arith / math ops


def _vector_type(typ: Attribute) -> VectorType:
    assert isinstance(typ, VectorType), typ
    return typ


@_rule(vector.LoadOp)
def _emit_vector_load(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, vector.LoadOp)
    typ = _memref_type(op.base.type)
    vt = em.ctype(op.result.type)
    fn = em.helper("frame_vload")
    em.define(op.result, f"{fn}<{vt}>({em.expr(op.base)} + "
                         f"{_linear_index(em, typ, op.indices)})")


@_rule(vector.StoreOp)
def _emit_vector_store(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, vector.StoreOp)
    typ = _memref_type(op.base.type)
    em.ctype(op.vector.type)
    fn = em.helper("frame_vstore")
    em.line(f"{fn}({em.expr(op.base)} + {_linear_index(em, typ, op.indices)}, "
            f"{em.expr(op.vector)});")


@_rule(vector.BroadcastOp)
def _emit_broadcast(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, vector.BroadcastOp)
    vt = em.ctype(op.vector.type)
    if op.source.type == op.vector.type:
        em.bind(op.vector, em.expr(op.source))
        return
    if isinstance(op.source.type, VectorType):
        raise CppEmitError(f"vector.broadcast from {op.source.type} is not supported "
                           "(only from a scalar)")
    fn = em.helper("frame_splat")
    em.define(op.vector, f"{fn}<{vt}>({em.expr(op.source)})")


@_rule(vector.FMAOp)
def _emit_vector_fma(em: CppEmitter, op: Operation) -> None:
    em.ctype(op.results[0].type)
    fn = em.helper("frame_vfma")
    em.define(op.results[0], f"{fn}({', '.join(em.expr(v) for v in op.operands)})")


@_rule(vector.ShuffleOp)
def _emit_vector_shuffle(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, vector.ShuffleOp)
    em.ctype(op.result.type)
    if op.v1.type != op.v2.type or op.v1.type != op.result.type:
        raise CppEmitError(f"vector.shuffle to {op.result.type} of {op.v1.type} and "
                           f"{op.v2.type} is not supported (only of two vectors of the "
                           "result's type)")
    # GCC >= 12 and Clang: lane i of the result is lane mask[i] of (a, b) concatenated.
    mask = ", ".join(str(i) for i in op.mask.get_values())
    em.define(op.result, f"__builtin_shufflevector({em.expr(op.v1)}, {em.expr(op.v2)}, "
                         f"{mask})")


@_rule(memref.CastOp)
def _emit_cast(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, memref.CastOp)
    # Only sizes change (static to `?`): the same pointer.
    em.bind(op.dest, em.expr(op.source))


@_rule(memref.CollapseShapeOp)
def _emit_collapse_shape(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, memref.CollapseShapeOp)
    from frame_mlir.passes.convert_memref_to_llvm import collapse_shape_problem

    _memref_type(op.src.type)
    _memref_type(op.result.type)
    problem = collapse_shape_problem(op)
    if problem is not None:
        raise CppEmitError(f"memref.collapse_shape: {problem}")
    # Same elements at the same row-major offsets: the collapsed memref is the pointer.
    em.bind(op.result, em.expr(op.src))
    if op.src in em.views:
        em.views[op.result] = em.views[op.src]


_scalar_constant = EMIT_RULES[arith.ConstantOp]


@_rule(arith.ConstantOp)
def _emit_vector_constant(em: CppEmitter, op: Operation) -> None:
    assert isinstance(op, arith.ConstantOp)
    typ = op.result.type
    if not isinstance(typ, VectorType):
        _scalar_constant(em, op)
        return
    attr = op.value
    elem = typ.element_type
    vt = em.ctype(typ)
    if not isinstance(attr, DenseIntOrFPElementsAttr) or not isinstance(elem, AnyFloat):
        raise CppEmitError(f"arith.constant {attr} is not supported (float vectors only)")
    values = attr.get_values()
    literals = [float_literal(v, elem) for v in values]
    if any("numeric_limits" in t for t in literals):
        em.include("limits")
    if len(set(literals)) == 1 and len(literals) == _vector_lanes(_vector_type(typ)):
        em.define(op.result, f"{em.helper('frame_splat')}<{vt}>({literals[0]})")
    else:
        em.define(op.result, f"{vt}{{{', '.join(literals)}}}")


VECTOR_OPS: frozenset[type[Operation]] = frozenset({
    vector.LoadOp, vector.StoreOp, vector.BroadcastOp, vector.FMAOp, vector.ShuffleOp,
    arith.ConstantOp, arith.SelectOp,
    scf.ForOp, scf.YieldOp, scf.IfOp, func.CallOp, func.ReturnOp,
    *(op for op, row in OP_TABLE.items() if row.cpp_vector),
})
"""Op classes whose rule handles vector operands and results (`arith.select` with a
scalar condition; xDSL 0.74 has no vector condition; OP_TABLE's rows with a
`cpp_vector`). Any other op on a vector fails with a CppEmitError rather than emit C++
that would not compile or would mean something else (`std::fmax` of a vector,
`arith.cmpf`, ...)."""


def emit_module(module: ModuleOp) -> CppModule:
    """Translate every function of a loop-level module to C++ (see the module docstring).

    Raises CppEmitError for an op without a rule or a type C++ cannot express.
    """
    return CppEmitter(module).emit_module()
