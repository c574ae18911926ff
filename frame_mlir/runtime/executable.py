"""Compiled functions and their buffers.

After bufferization every function takes only pointers, and its argument
attributes say what each one is: a data input, a parameter (`frame.param`),
an out-parameter for a result (`frame.output`) or the arena (`frame.arena`).
`Executable` reads that signature from the llvm-dialect module, JIT-compiles
it, and calls it on numpy-owned host buffers. numpy only holds memory here:
every computation runs in the generated code.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import builtin, llvm
from xdsl.dialects.builtin import ModuleOp

from frame_mlir.backend.llvm.jit import JitModule, jit_compile
from frame_mlir.backend.llvm.translate import to_llvm_text


@dataclass(frozen=True)
class ArgInfo:
    """One pointer argument of a compiled function."""

    name: str
    kind: str  # "input" | "param" | "output" | "arena"
    nbytes: int
    result_index: int | None = None


@dataclass(frozen=True)
class FunctionSignature:
    """The pointer arguments of one compiled function, in order."""

    name: str
    args: tuple[ArgInfo, ...]
    arena_size: int

    def index(self, name: str) -> int:
        for i, a in enumerate(self.args):
            if a.name == name:
                return i
        raise KeyError(f"@{self.name} has no argument '{name}'")


def signatures(module: ModuleOp) -> dict[str, FunctionSignature]:
    """Read the ABI of every llvm.func from its argument attributes."""
    out: dict[str, FunctionSignature] = {}
    for fn in module.ops:
        if not isinstance(fn, llvm.FuncOp) or not fn.body.blocks:
            continue
        args: list[ArgInfo] = []
        block = fn.body.blocks[0]
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(block.args)
        for i, (arg, d) in enumerate(zip(block.args, attrs, strict=True)):
            entries = d.data if d is not None else {}
            nb = entries.get("llvm.dereferenceable")
            nbytes = nb.value.data if isinstance(nb, builtin.IntegerAttr) else 0
            name = arg.name_hint or f"arg{i}"
            if "frame.arena" in entries:
                args.append(ArgInfo("arena", "arena", nbytes))
            elif "frame.output" in entries:
                r = entries["frame.output"]
                assert isinstance(r, builtin.IntegerAttr)
                args.append(ArgInfo(name, "output", nbytes, r.value.data))
            elif "frame.param" in entries:
                p = entries["frame.param"]
                assert isinstance(p, builtin.StringAttr)
                args.append(ArgInfo(p.data, "param", nbytes))
            else:
                args.append(ArgInfo(name, "input", nbytes))
        size = fn.attributes.get("frame.arena_size")
        arena = size.value.data if isinstance(size, builtin.IntegerAttr) else 0
        out[fn.sym_name.data] = FunctionSignature(fn.sym_name.data, tuple(args), arena)
    return out


def aligned_empty(nbytes: int, align: int = 64) -> np.ndarray:
    """A byte buffer whose data pointer is `align`-aligned."""
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + nbytes]


class Executable:
    """A JIT-compiled llvm-dialect module with the signatures of its functions."""

    def __init__(self, module: ModuleOp, *, opt_level: int = 3):
        self.signatures = signatures(module)
        self.llvm_ir = to_llvm_text(module)
        self.jit: JitModule = jit_compile(self.llvm_ir, opt_level=opt_level)

    def function(self, name: str) -> ctypes._CFuncPtr:
        """The ctypes callable of `@name` (all arguments are pointers)."""
        return self.jit.get_function(name)
