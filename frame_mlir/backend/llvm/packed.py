"""Packed entries: every exported function callable with one pointer, whatever its arity.

ctypes cannot call a function of more than 1024 parameters (`_argtypes_ has too many
arguments`), and a model's train step passes one pointer per buffer: a 300-layer
network passes 1,800 of them, an optimizer over ResNet-152's parameters thousands. So
the JIT gives each function the caller looks up (`jit.compile_ir`'s `public`, and any
function of more than `CTYPES_MAX_ARGS` parameters) a second entry, `<name>.frame_args`,
taking one `ptr` to an array of its arguments' addresses:

    define void @"f.frame_args"(ptr %args) {
      %p0 = load ptr, ptr %args, align 8
      %a1 = getelementptr inbounds ptr, ptr %args, i64 1
      %p1 = load ptr, ptr %a1, align 8
      call void @"f"(ptr %p0, ptr %p1) noinline
      ret void
    }

(`add_entries` appends these to the module's text before it is split: each is a unit of
its own, cached like any other, compiled at level 0 -- `jit.UNIT_PIPELINES`). Only functions returning void whose parameters are all
`ptr` get one -- every function `convert-func-to-llvm` makes for the ABI.

`PackedFunction` is the Python side (what `JitModule.get_function` returns when the
entry exists): called with one address per parameter, as before, it packs them with
`struct` into one bytes object -- about 10 ns an argument, where ctypes converts each
argument of a plain call for itself -- and passes its buffer (ctypes hands a bytes
object to a `c_void_p` parameter as a pointer to its data; the callee only reads it).
`bind` packs once for arguments that do not change between calls (`bound_call`).
"""

from __future__ import annotations

import ctypes
import re
import struct
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Any

#: The most parameters a ctypes function prototype may have (CPython's `CTYPES_MAX_ARGCOUNT`).
CTYPES_MAX_ARGS = 1024

#: Appended to a function's name to name its packed entry.
ENTRY_SUFFIX = ".frame_args"


def entry_name(name: str) -> str:
    """The symbol of `name`'s packed entry."""
    return name + ENTRY_SUFFIX


def is_entry(name: str) -> bool:
    return name.endswith(ENTRY_SUFFIX)


#: `define void @name(`: an exported function returning void (no linkage keyword,
#: attribute or calling convention before the name: such a function gets no entry).
_DEFINE = re.compile(r'define void (@"[^"\\]*"|@[-a-zA-Z$._][-a-zA-Z$._0-9]*)\(')
_OPEN = "([{<"
_CLOSE = ")]}>"


def _parameters(line: str, start: int) -> list[str] | None:
    """The parameters of the list opening at `line[start - 1]` ("("), split at its
    top-level commas; None if the list does not close on the line."""
    depth, quoted, begin = 0, False, start
    params: list[str] = []
    for k in range(start, len(line)):
        ch = line[k]
        if quoted:
            quoted = ch != '"'
        elif ch == '"':
            quoted = True
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            if depth == 0:  # the list's own ")"
                last = line[begin:k].strip()
                if last or params:
                    params.append(last)
                return params
            depth -= 1
        elif ch == "," and depth == 0:
            params.append(line[begin:k].strip())
            begin = k + 1
    return None


def pointer_functions(text: str) -> dict[str, int]:
    """Every function `text` defines that can have a packed entry -- exported, returning
    void, every parameter a `ptr` -- with its parameter count (in module order)."""
    out: dict[str, int] = {}
    for line in text.split("\n"):
        if not line.startswith("define void @"):
            continue
        m = _DEFINE.match(line)
        if m is None:
            continue
        params = _parameters(line, m.end())
        if params is None or any(p.split(" ", 1)[0] != "ptr" for p in params):
            continue
        token = m.group(1)
        out[token[2:-1] if token.startswith('@"') else token[1:]] = len(params)
    return out


def entry_definition(name: str, arity: int) -> str:
    """The LLVM IR of `name`'s packed entry (see the module docstring). The call is
    `noinline`: a module compiled whole must not copy a train step into its entry."""
    lines = [f'define void @"{entry_name(name)}"(ptr %args) {{']
    for k in range(arity):
        if k == 0:
            lines.append("  %p0 = load ptr, ptr %args, align 8")
        else:
            lines.append(f"  %a{k} = getelementptr inbounds ptr, ptr %args, i64 {k}")
            lines.append(f"  %p{k} = load ptr, ptr %a{k}, align 8")
    args = ", ".join(f"ptr %p{k}" for k in range(arity))
    lines += [f'  call void @"{name}"({args}) noinline', "  ret void", "}"]
    return "\n".join(lines) + "\n"


def add_entries(text: str, public: Collection[str] | None) -> tuple[str, list[str]]:
    """`text` with the packed entries of the functions in `public` that can have one,
    and of every function of more than `CTYPES_MAX_ARGS` parameters (public or not:
    ctypes cannot call it otherwise), appended; and the entries' names. A module that
    defines an entry's name already gets no entry of that name."""
    functions = pointer_functions(text)
    wanted = [n for n, arity in functions.items()
              if (public is not None and n in public) or arity > CTYPES_MAX_ARGS]
    taken = f"\n{text}"
    names = [n for n in wanted
             if f'@"{entry_name(n)}"' not in taken and f"@{entry_name(n)}(" not in taken]
    if not names:
        return text, []
    parts = [text if text.endswith("\n") else text + "\n"]
    parts += ["\n" + entry_definition(n, functions[n]) for n in names]
    return "".join(parts), [entry_name(n) for n in names]


_POINTER = struct.calcsize("P")


def _address(value: Any) -> int:
    """An argument as an address: an int (or anything with `__index__`), a ctypes
    pointer value (`c_void_p`, whose `.value` is None for NULL) or None."""
    if value is None:
        return 0
    if isinstance(value, ctypes.c_void_p):
        return value.value or 0
    try:
        return value.__index__()
    except AttributeError:
        raise TypeError(f"expected an address (an int or a ctypes.c_void_p), found "
                        f"{type(value).__name__}") from None


class PackedFunction:
    """A generated function called through its packed entry (see the module docstring):
    `f(*addresses)` as a ctypes function of one `c_void_p` per parameter would be
    called, for any number of parameters. Keeps its JIT module (`owner`) alive."""

    __slots__ = ("name", "arity", "_entry", "_struct", "_owner")

    def __init__(self, name: str, entry_address: int, arity: int, owner: object = None):
        self.name = name
        self.arity = arity
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(entry_address)
        self._struct = struct.Struct(f"@{max(arity, 1)}P")
        self._owner = owner

    def pack(self, args: Sequence[Any]) -> bytes:
        """The argument array of a call with `args` (one address per parameter)."""
        if len(args) != self.arity:
            raise TypeError(f"@{self.name} takes {self.arity} arguments "
                            f"({len(args)} given)")
        if not args:
            return bytes(_POINTER)
        try:
            return self._struct.pack(*args)
        except struct.error:  # c_void_p objects, None: one at a time
            return self._struct.pack(*(_address(a) for a in args))

    def __call__(self, *args: Any) -> None:
        try:  # the usual case first: one int per parameter
            packed = self._struct.pack(*args)
        except struct.error:
            packed = self.pack(args)
        self._entry(packed)

    def bind(self, args: Sequence[Any]) -> Callable[[], None]:
        """A call with `args`, packed once: what a loop calling the function on the same
        buffers step after step runs."""
        return partial(self._entry, self.pack(args))

    def __repr__(self) -> str:
        return f"<PackedFunction @{self.name}, {self.arity} arguments>"


def bound_call(fn: Callable[..., Any], args: Sequence[Any]) -> Callable[[], Any]:
    """`fn` with `args` fixed, for calls on the same buffers again and again: a
    `PackedFunction`'s arguments packed once, any other callable (a plain ctypes
    function, the CUDA executable's host functions) through `functools.partial`."""
    if isinstance(fn, PackedFunction):
        return fn.bind(args)
    return partial(fn, *args)
