"""The calling convention of a compiled module's functions, shared by every backend
and the runtime: after bufferization every function takes only memrefs, and its
argument attributes say what each one is (a data input, a parameter, an out-parameter
for a result, the arena, a training loop's step count and losses). `signatures`
reads them from the module; `FunctionSignature` is what the runtime binds buffers to
(and what the compile cache stores, `to_json`/`from_json`); `aligned_empty` is the
host buffers' allocation.

Nothing here imports xDSL at module level: a run whose object comes from the compile
cache builds its signatures from the entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

__all__ = ["ARG_KINDS", "ArgInfo", "FunctionSignature", "aligned_empty", "check_indices",
           "host_dtype", "signatures"]


#: Argument kinds, from the argument attributes (see `signatures`).
ARG_KINDS = ("input", "param", "output", "arena", "steps", "losses")

@dataclass(frozen=True)
class ArgInfo:
    """One pointer argument of a compiled function."""

    name: str
    kind: str  # one of ARG_KINDS
    shape: tuple[int, ...]  # -1 for a dynamic dimension (the losses of a train loop)
    result_index: int | None = None  # for outputs, and for arguments updated in place
    dtype: np.dtype = np.dtype(np.float32)  # host storage dtype (uint8 for the arena)
    #: Run-time checks of an integer input: (op, bound, ignore_index), each value must
    #: lie in [0, bound) or equal ignore_index (`frame.index_checks`: the loss labels;
    #: ignore_index None -- the index ops' indices -- exempts no value).
    checks: tuple[tuple[str, int, int | None], ...] = ()

    @property
    def dynamic(self) -> bool:
        """Whether the buffer's size is chosen at run time (the caller's)."""
        return any(d < 0 for d in self.shape)

    @property
    def nbytes(self) -> int:
        if self.dynamic:
            raise ValueError(f"argument '{self.name}' has a dynamic shape: its size is "
                             "the caller's choice")
        return self.dtype.itemsize * prod(self.shape)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "shape": list(self.shape),
                "result_index": self.result_index, "dtype": self.dtype.str,
                "checks": [list(c) for c in self.checks]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ArgInfo:
        if d["kind"] not in ARG_KINDS:
            raise ValueError(f"unknown argument kind {d['kind']!r}")
        index = d["result_index"]
        return cls(str(d["name"]), d["kind"], tuple(int(x) for x in d["shape"]),
                   None if index is None else int(index), np.dtype(d["dtype"]),
                   tuple((str(op), int(bound), None if ignore is None else int(ignore))
                         for op, bound, ignore in d.get("checks", [])))


@dataclass(frozen=True)
class FunctionSignature:
    """The pointer arguments of one compiled function, in order."""

    name: str
    args: tuple[ArgInfo, ...]
    arena_size: int

    def of_kind(self, *kinds: str) -> list[ArgInfo]:
        return [a for a in self.args if a.kind in kinds]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "args": [a.to_json() for a in self.args],
                "arena_size": self.arena_size}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FunctionSignature:
        return cls(str(d["name"]), tuple(ArgInfo.from_json(a) for a in d["args"]),
                   int(d["arena_size"]))


def host_dtype(elem: object) -> np.dtype:
    """Host storage of a memref element type (i8 is the byte arena, bf16 its uint16
    bit patterns)."""
    from xdsl.dialects import builtin

    if isinstance(elem, builtin.Float32Type):
        return np.dtype(np.float32)
    if isinstance(elem, builtin.Float16Type):
        return np.dtype(np.float16)
    if isinstance(elem, builtin.BFloat16Type):
        return np.dtype(np.uint16)  # bf16 bit patterns (numpy has no bfloat16)
    if isinstance(elem, builtin.IntegerType):
        return np.dtype({8: np.uint8, 32: np.int32, 64: np.int64}[elem.width.data])
    raise ValueError(f"no host storage for element type {elem}")


def signatures(module: ModuleOp) -> dict[str, FunctionSignature]:
    """Read the ABI of every bufferized func.func from its argument attributes."""
    from xdsl.dialects import builtin, func
    from xdsl.dialects.builtin import MemRefType

    out: dict[str, FunctionSignature] = {}
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
            continue
        if fn.sym_visibility is not None and fn.sym_visibility.data == "private":
            continue  # kernels and their helpers: not part of the ABI
        block = fn.body.blocks[0]
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(block.args)
        args: list[ArgInfo] = []
        for i, (arg, d) in enumerate(zip(block.args, attrs, strict=True)):
            if not isinstance(arg.type, MemRefType):
                raise ValueError(f"@{fn.sym_name.data}: argument #{i} is not a memref; "
                                 "signatures are read after bufferization")
            shape = tuple(-1 if d < 0 else d for d in arg.type.get_shape())
            dtype = host_dtype(arg.type.element_type)
            entries = d.data if d is not None else {}
            name = arg.name_hint or f"arg{i}"
            alias = entries.get("frame.aliasing_output")
            alias_idx = alias.value.data if isinstance(alias, builtin.IntegerAttr) else None
            if "frame.arena" in entries:
                args.append(ArgInfo("arena", "arena", shape, dtype=dtype))
            elif "frame.steps" in entries:
                args.append(ArgInfo(name, "steps", shape, dtype=dtype))
            elif "frame.losses" in entries:
                args.append(ArgInfo(name, "losses", shape, dtype=dtype))
            elif "frame.output" in entries:
                r = entries["frame.output"]
                assert isinstance(r, builtin.IntegerAttr)
                args.append(ArgInfo(name, "output", shape, r.value.data, dtype))
            elif "frame.param" in entries:
                p = entries["frame.param"]
                assert isinstance(p, builtin.StringAttr)
                args.append(ArgInfo(p.data, "param", shape, alias_idx, dtype))
            else:
                # A donated input (frame.update's destination, a running statistic)
                # holds its result after the call, as a donated param does.
                args.append(ArgInfo(name, "input", shape, alias_idx, dtype=dtype,
                                    checks=_index_checks(entries.get("frame.index_checks"))))
        size = fn.attributes.get("frame.arena_size")
        arena = size.value.data if isinstance(size, builtin.IntegerAttr) else 0
        out[fn.sym_name.data] = FunctionSignature(fn.sym_name.data, tuple(args), arena)
    return out


def _index_checks(attr: object) -> tuple[tuple[str, int, int | None], ...]:
    """The (op, bound, ignore_index) entries of a `frame.index_checks` attribute
    (ignore_index None where the entry has none)."""
    from xdsl.dialects import builtin

    if not isinstance(attr, builtin.ArrayAttr):
        return ()
    out = []
    for d in attr.data:
        e = d.data  # type: ignore[attr-defined]
        ignore = e.get("ignore_index")
        out.append((e["op"].data, e["bound"].value.data,
                    None if ignore is None else ignore.value.data))
    return tuple(out)


def check_indices(fn: str, arg: ArgInfo, values: np.ndarray) -> None:
    """Raise ValueError, naming the op, the row and the value, if an entry of `values`
    breaks one of `arg.checks` -- as torch's nll_loss raises for a label out of range,
    and index_select for an index out of range."""
    flat = values.reshape(-1)
    for op, bound, ignore in arg.checks:
        bad = (flat < 0) | (flat >= bound)
        if ignore is None:
            if bad.any():
                at = int(np.argmax(bad))
                raise ValueError(f"@{fn}: {op}: index {int(flat[at])} at position {at} is "
                                 f"out of range: expected 0 <= index < {bound}")
            continue
        bad &= flat != ignore
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"@{fn}: {op}: label {int(flat[row])} of row {row} is out of "
                             f"range: expected 0 <= label < {bound} or ignore_index "
                             f"{ignore}")


def aligned_empty(nbytes: int, align: int = 64) -> np.ndarray:
    """A zeroed byte buffer whose data pointer is `align`-aligned."""
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + nbytes]
