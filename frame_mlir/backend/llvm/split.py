"""One LLVM module per defined function, named by content: each kernel compiled once.

`split_module(text, public)` cuts the LLVM IR text of `translate.to_llvm_text` into
units, one per defined function. A unit is a whole module of its own: the header
(target triple and data layout, named types, attribute groups), `declare`s for every
function its function references (the other defined functions become declarations,
the runtime's and the intrinsics' declarations are kept as they are), and the
function's definition. The JIT (`jit.py`) optimizes and generates code for every unit
on its own -- in parallel, and through the per-kernel compile cache -- and links the
objects in one MCJIT engine, which resolves the calls between units.

Names. A function the caller looks up (`public`) keeps its name. Every other function
is renamed `fk_<hash>`, the SHA-256 of its unit's text with its own name replaced by a
placeholder and the functions it references already renamed (callees first). So two
kernels that differ only in name -- a ResNet's repeated convolution shapes, the same
ReLU in two models -- are one unit, compiled once, and the per-kernel cache entry one
model stored is a hit for the next. `SplitModule.symbols` maps every original name to
the symbol that implements it.

Each unit has a role (`Unit.role`), which picks its LLVM pipeline (`jit.unit_pipeline`):
a GEMM micro-kernel (`MICRO_KERNEL_PREFIX`, `ROLE_MICRO`), a GEMM driver -- the blocking,
packing and epilogue loops around micro-kernel calls (`ROLE_GEMM`) -- or any other
function (`ROLE_KERNEL`); a function's packed entry, `<name>.frame_args` (`ROLE_ENTRY`,
`packed.py`), is compiled at level 0. Micro-kernels are their own units and are called, not
inlined: each is optimized once per model (and once per cache), not once per GEMM
that uses it. A call per MR x NR tile and k block costs nothing beside the tile's
MR*NR*kc FMAs, and W1-W4 train as fast as with the micro-kernels inlined (measured:
docs/performance.md, "Compile time").

The splitter reads llvmlite's printing: top-level lines are the header, `declare`
lines and `define ... {` ... `}` blocks. Anything it does not understand -- global
variables, aliases, comdats, module-level metadata or asm, a linkage other than the
default external one, references it cannot attribute -- raises `UnsplittableModule`,
and the JIT compiles the module whole as before: never a wrong split.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass

from frame_mlir.backend.llvm.packed import ENTRY_SUFFIX

#: Name prefix of frame-gemm's micro-kernels (`frame_mlir.passes.frame_gemm.micro_name`).
#: Written out here rather than imported: the pass module pulls in xDSL, which a warm
#: start (loading objects from the cache) never imports.
MICRO_KERNEL_PREFIX = "frame_gemm_micro_"

#: Unit roles (`Unit.role`): a GEMM micro-kernel, a function calling one, anything else.
ROLE_MICRO = "micro"
ROLE_GEMM = "gemm"
ROLE_KERNEL = "kernel"
#: A function's packed entry (`packed.py`): loads and one call, compiled at level 0.
ROLE_ENTRY = "entry"

#: Prefix of the content-derived names of non-public functions.
CANONICAL_PREFIX = "fk_"
#: Hex digits of the SHA-256 kept in a canonical name (80 bits).
_HASH_DIGITS = 20
#: Stands for a unit's own function while its canonical name is computed. Not a name
#: llvmlite prints for anything else (checked: a module defining it is not split).
_SELF = "frame.split.self"

#: One lexical token the renaming must see whole: a global name (quoted or not, or
#: numbered), any other quoted string (local names such as %".1", attribute strings:
#: an "@" inside them is not a reference), or a comment.
_TOKEN = re.compile(r'@"[^"]*"|@[-a-zA-Z$._][-a-zA-Z$._0-9]*|@\d+|"[^"]*"|;[^\n]*')

#: Words that may stand between `define` and the function name, besides types and
#: parameter attributes, that change how the function links or where it lives: a
#: function carrying one is not split (LLVM's linkage, visibility, DLL storage and
#: placement keywords).
_REFUSED_WORDS = frozenset({
    "private", "internal", "available_externally", "linkonce", "weak", "common",
    "appending", "extern_weak", "linkonce_odr", "weak_odr", "hidden", "protected",
    "dllimport", "dllexport", "comdat", "section", "partition", "personality",
    "prefix", "prologue", "gc", "thread_local", "ifunc", "alias",
})
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")

#: Top-level lines copied into every unit: they define nothing a unit could duplicate.
_HEADER_LINE = re.compile(r"(target (triple|datalayout) = |source_filename = |"
                          r"%[-a-zA-Z$._0-9\"]+ = type |attributes #\d+ = )")


class UnsplittableModule(Exception):
    """The module holds something the splitter does not understand (the message says
    what); it is compiled whole."""


@dataclass(frozen=True)
class Unit:
    """One function's module: what is compiled, cached and loaded as one object."""

    symbol: str  # the function it defines: its public or its canonical name
    text: str  # the module's LLVM IR text
    originals: tuple[str, ...]  # the input's functions it implements, in module order
    role: str = ROLE_KERNEL  # or ROLE_MICRO, ROLE_GEMM, ROLE_ENTRY (module docstring)


@dataclass(frozen=True)
class SplitModule:
    """A module cut into units (`split_module`)."""

    units: tuple[Unit, ...]  # one per distinct function, in module order
    symbols: dict[str, str]  # original function name -> the symbol implementing it


@dataclass
class _Function:
    name: str
    header: str  # the `define` line(s) up to, not including, the body's "{"
    body: str  # from the "{" line to the closing "}", inclusive
    refs: tuple[str, ...]  # global names referenced by header and body, first seen first


def _name_of(token: str) -> str:
    return token[2:-1] if token.startswith('@"') else token[1:]


def _references(text: str) -> list[str]:
    """Global names in `text`, in order, each once."""
    out: dict[str, None] = {}
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token.startswith("@"):
            if token[1:].isdigit():
                raise UnsplittableModule(f"an unnamed global {token}")
            out[_name_of(token)] = None
    return list(out)


def _rename(text: str, names: dict[str, str]) -> str:
    """`text` with every global name in `names` replaced (whole tokens only)."""
    def sub(m: re.Match[str]) -> str:
        token = m.group()
        if token.startswith("@"):
            new = names.get(_name_of(token))
            if new is not None:
                return f'@"{new}"'
        return token
    return _TOKEN.sub(sub, text)


def _check_define(header: str, name: str) -> None:
    """Refuse a definition whose linkage or placement the split could change: a
    keyword of `_REFUSED_WORDS` before its name or after its parameter list."""
    start = header.index("@")
    tail = _TOKEN.sub(" ", header[start:])  # strings out: their words are no keywords
    depth = 0
    end = len(tail)
    for k, ch in enumerate(tail):  # the parameter list's closing parenthesis
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                end = k + 1
                break
    words = set(_WORD.findall(_TOKEN.sub(" ", header[:start]))) | set(
        _WORD.findall(tail[end:]))
    refused = sorted(words & _REFUSED_WORDS)
    if refused:
        raise UnsplittableModule(f"@{name}: {' '.join(refused)}")


def _parse(text: str) -> tuple[list[str], dict[str, str], list[_Function]]:
    """Header lines, declarations (name -> line) and definitions of llvmlite's text."""
    header: list[str] = []
    declares: dict[str, str] = {}
    functions: list[_Function] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if not stripped or stripped.startswith(";"):
            continue
        if _HEADER_LINE.match(line):
            header.append(line.rstrip())
        elif line.startswith("declare "):
            refs = _references(line)
            if not refs:
                raise UnsplittableModule(f"a declaration without a name: {line[:80]}")
            declares[refs[0]] = line.rstrip()
        elif line.startswith("define "):
            if line.rstrip().endswith("{"):
                head, first = line.rstrip()[:-1].rstrip(), "{"
            elif i < len(lines) and lines[i].strip() == "{":
                head, first = line.rstrip(), lines[i].strip()
                i += 1
            else:
                raise UnsplittableModule(f"a definition whose body does not start on its "
                                         f"line or the next: {line[:80]}")
            body = [first]
            while i < len(lines) and lines[i].rstrip() != "}":
                body.append(lines[i].rstrip())
                i += 1
            if i == len(lines):
                raise UnsplittableModule(f"a definition without its closing brace: "
                                         f"{line[:80]}")
            body.append("}")
            i += 1
            head_refs = _references(head)
            if not head_refs:
                raise UnsplittableModule(f"a definition without a name: {line[:80]}")
            name = head_refs[0]
            _check_define(head, name)
            body_text = "\n".join(body)
            refs = dict.fromkeys(head_refs[1:] + _references(body_text))
            refs.pop(name, None)  # recursion: the unit defines it
            functions.append(_Function(name, head, body_text, tuple(refs)))
        else:
            # Global variables, aliases, ifuncs, comdats, metadata, module asm: their
            # owner and their linkage across units would be guesses.
            raise UnsplittableModule(f"a top-level line it does not know: {line[:80]}")
    return header, declares, functions


def _declaration(f: _Function, symbol: str) -> str:
    """The `declare` of a function defined in another unit (parameter names and
    attributes kept: LLVM accepts both on a declaration)."""
    return "declare" + _rename(f.header, {f.name: symbol})[len("define"):]


def split_module(text: str, public: Collection[str] | None = None) -> SplitModule:
    """Cut llvmlite's LLVM IR `text` into one unit per defined function (see the module
    docstring). `public`: the names the caller will look up, kept as they are; None
    keeps every name (no renaming, so no deduplication). Raises UnsplittableModule."""
    header, declares, functions = _parse(text)
    if not functions:
        raise UnsplittableModule("no function is defined")
    by_name = {f.name: f for f in functions}
    if len(by_name) != len(functions):
        raise UnsplittableModule("a function is defined twice")
    if _SELF in by_name or _SELF in declares:
        raise UnsplittableModule(f"a function named {_SELF}")
    for f in functions:
        unknown = [r for r in f.refs if r not in by_name and r not in declares]
        if unknown:
            raise UnsplittableModule(f"@{f.name} references @{unknown[0]}, which the "
                                     "module neither defines nor declares")

    keep = set(by_name) if public is None else set(public) & set(by_name)
    symbols: dict[str, str] = {n: n for n in keep}
    # Canonical names callees first. Functions calling each other in a cycle (none of
    # our generated code does) cannot be named by content: they keep their names.
    pending = [f for f in functions if f.name not in symbols]
    while pending:
        ready = [f for f in pending
                 if all(r in symbols for r in f.refs if r in by_name)]
        if not ready:
            symbols.update((f.name, f.name) for f in pending)
            break
        for f in ready:
            # The role is part of the content: it changes how the unit is compiled.
            draft = f"; {_role(f)}\n" + _unit_text(f, _SELF, header, declares, by_name,
                                                    symbols)
            digest = hashlib.sha256(draft.encode()).hexdigest()[:_HASH_DIGITS]
            symbols[f.name] = f"{CANONICAL_PREFIX}{digest}"
        named = {f.name for f in ready}
        pending = [f for f in pending if f.name not in named]

    units: dict[str, Unit] = {}
    for f in functions:
        symbol = symbols[f.name]
        unit = units.get(symbol)
        if unit is None:
            units[symbol] = Unit(symbol, _unit_text(f, symbol, header, declares, by_name,
                                                    symbols), (f.name,), _role(f))
        else:  # the same content as a function before it: compiled once
            units[symbol] = Unit(symbol, unit.text, (*unit.originals, f.name))
    return SplitModule(tuple(units.values()), symbols)


def _role(f: _Function) -> str:
    if f.name.endswith(ENTRY_SUFFIX):
        return ROLE_ENTRY
    if f.name.startswith(MICRO_KERNEL_PREFIX):
        return ROLE_MICRO
    if any(r.startswith(MICRO_KERNEL_PREFIX) for r in f.refs):
        return ROLE_GEMM
    return ROLE_KERNEL


def _unit_text(f: _Function, self_symbol: str, header: list[str],
               declares: dict[str, str], by_name: dict[str, _Function],
               symbols: dict[str, str]) -> str:
    """The module of `f`'s unit, `f` named `self_symbol`, every other function by its
    symbol. Declarations are sorted by name: the text (hence the canonical name and the
    cache key) depends only on what the unit holds."""
    names = {**symbols, f.name: self_symbol}
    referenced = set(f.refs) - {f.name}
    decls: dict[str, str] = {}
    for r in referenced:
        if r in by_name:
            decls[names[r]] = _declaration(by_name[r], names[r])
        else:
            decls[r] = declares[r]  # the runtime's or an intrinsic: its own name
    parts = list(header)
    parts += [decls[n] for n in sorted(decls)]
    parts.append(_rename(f.header, names))
    parts.append(_rename(f.body, names))
    return "\n".join(parts) + "\n"
