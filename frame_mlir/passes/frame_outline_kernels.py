"""frame-outline-kernels: move each linalg op of a bufferized function into its own kernel.

Expects: bufferized functions (memref arguments, linalg ops on memrefs).
Does: replaces every `linalg.generic` / `linalg.fill` with a `func.call` to a new
function `@<fn>__k<N>_<what>` (`what` from the op's `doc`, e.g. `matmul`) that takes
the op's distinct memrefs as arguments and holds the op. Scalar operands defined
by `arith.constant` are cloned into the kernel; others become arguments. Kernels are
shared: an op that computes exactly what an existing kernel computes (same body and
constants, same buffer types; provenance aside) calls that kernel instead, so the
forward pass repeated in the train step and in the predict function, or layers of one
shape, compile once. A shared kernel drops its provenance; its calls keep theirs.
Why: after lowering, a kernel's pointer arguments are `noalias`, so LLVM knows its
inputs and output do not overlap even when all of them are views of the one arena
(something it cannot prove from the offsets). That lets it keep accumulators in
registers and vectorize without runtime checks; its inliner turns the argument
`noalias` into scoped alias metadata. Kernels are also the unit the C++ emitter names.
Guarantees: each model function is a sequence of views and calls; the arguments of
one call never overlap unless both are only read. A kernel whose op has leading
parallel loops records their sizes as `frame.parallel_dims = array<i64: ...>` (see
`frame_parallelize.leading_parallel_dims`), which frame-parallelize reads once
convert-linalg-to-loops has made those loops.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import MemRefType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.passes.common import PROVENANCE_ATTRS, fail, provenance
from frame_mlir.passes.frame_parallelize import mark_parallel_dims


def _kernel_suffix(op: Operation) -> str:
    if isinstance(op, linalg.FillOp):
        return "fill"
    doc = op.doc.data if isinstance(op, linalg.GenericOp) and op.doc else "generic"
    # A fused chain (frame-fuse-elementwise) is "frame.add+frame.relu": `add_relu`, so
    # the symbol stays a C identifier (the C++ emitter parses `__k<N>_<\w+>`).
    return "_".join(part.removeprefix("frame.") for part in doc.split("+"))


@dataclass(frozen=True)
class FrameOutlineKernels(ModulePass):
    """Outline every linalg op into its own function called from its place."""

    name = "frame-outline-kernels"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        kernels: dict[str, func.FuncOp] = {}  # structure (see `_structure`) -> kernel
        structures = _Structures()
        # The kernel an op's outlining became, by `_op_key`: an op of a key seen before
        # makes the same kernel, so it calls that one without building its own.
        by_op_key: dict[tuple[object, ...], func.FuncOp] = {}
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            count = 0
            for inner in list(fn.body.blocks[0].ops):
                if isinstance(inner, linalg.GenericOp | linalg.FillOp):
                    if inner.results:
                        raise fail(self.name, inner, "expected linalg on memrefs, found one "
                                   "with tensor results (run frame-bufferize first)")
                    args, constants = _kernel_operands(inner)
                    op_key = _op_key(inner, args, constants)
                    shared = by_op_key.get(op_key)
                    if shared is not None:
                        call = func.CallOp(shared.sym_name.data, args, [])
                        call.attributes.update(provenance(inner))
                        Rewriter.replace_op(inner, call)
                        _drop_provenance(shared)
                        continue
                    kernel, call = self._outline(fn, inner, count, args, constants)
                    key = structures.text(kernel)
                    shared = kernels.get(key)
                    if shared is None:
                        kernels[key] = by_op_key[op_key] = kernel
                        Rewriter.insert_op(kernel, InsertPoint.before(fn))
                        count += 1
                    else:
                        by_op_key[op_key] = shared
                        # The same computation on the same buffer types (another layer of
                        # one shape, or the forward pass again in the train step): call
                        # the existing kernel. It now serves several places, so it keeps
                        # no single provenance; the calls keep theirs.
                        call.callee = builtin.SymbolRefAttr(shared.sym_name.data)
                        _drop_provenance(shared)

    def _outline(self, fn: func.FuncOp, op: Operation, index: int, args: list[SSAValue],
                 constants: list[Operation]) -> tuple[func.FuncOp, func.CallOp]:
        block = Block(arg_types=[a.type for a in args])
        mapping: dict[SSAValue, SSAValue] = dict(zip(args, block.args, strict=True))
        for c in constants:
            clone = c.clone()
            block.add_op(clone)
            mapping[c.results[0]] = clone.results[0]
        block.add_op(op.clone(value_mapper=mapping))
        block.add_op(func.ReturnOp())
        name = f"{fn.sym_name.data}__k{index}_{_kernel_suffix(op)}"
        kernel = func.FuncOp(name, func.FunctionType.from_lists([a.type for a in args], []),
                             Region(block), visibility="private")
        call = func.CallOp(name, args, [])
        call.attributes.update(provenance(op))
        kernel.attributes.update(provenance(op))
        mark_parallel_dims(kernel, op)  # for frame-parallelize, after the loops exist
        Rewriter.replace_op(op, call)
        return kernel, call


def _kernel_operands(op: Operation) -> tuple[list[SSAValue], list[Operation]]:
    """The kernel arguments of `op` (its distinct operands but scalar constants) and
    the constants cloned into the kernel, in operand order."""
    args: list[SSAValue] = []
    constants: list[Operation] = []
    for v in op.operands:
        if v in args:
            continue
        owner = v.owner
        if not isinstance(v.type, MemRefType) and isinstance(owner, arith.ConstantOp):
            if owner not in constants:
                constants.append(owner)
            continue
        args.append(v)
    return args, constants


def _drop_provenance(kernel: func.FuncOp) -> None:
    """A kernel that serves several places keeps no single provenance."""
    for o in kernel.walk():
        for k in PROVENANCE_ATTRS:
            o.attributes.pop(k, None)


def _structure(kernel: func.FuncOp) -> str:
    """What a kernel computes, as text: its signature and body in generic form, without
    its name, value names or provenance attributes. Equal text, equal kernel."""
    probe = kernel.clone()
    probe.sym_name = builtin.StringAttr("k")
    for o in probe.walk():
        for k in PROVENANCE_ATTRS:
            o.attributes.pop(k, None)
        for v in o.results:
            v.name_hint = None
        for region in o.regions:
            for block in region.blocks:
                for arg in block.args:
                    arg.name_hint = None
    text = io.StringIO()
    Printer(stream=text, print_generic_format=True).print_op(probe)
    return text.getvalue()


class _Structures:
    """`_structure` of kernels, printed once per `_structural_key`.

    Printing a kernel (a clone of it, renamed and stripped) was most of this pass's
    time, for every linalg op of the model; kernels of one structure, the common case
    (the layers of one shape, the forward pass again in the train step), now share one
    printing. Kernels of equal keys print equal text; kernels of different keys are
    printed and compared as text, so which kernels are shared does not change.
    """

    def __init__(self) -> None:
        self._text: dict[tuple[object, ...], str] = {}

    def text(self, kernel: func.FuncOp) -> str:
        key = _structural_key(kernel)
        text = self._text.get(key)
        if text is None:
            text = self._text[key] = _structure(kernel)
        return text


def _structural_key(kernel: func.FuncOp) -> tuple[object, ...]:
    """What `_structure` prints, as a hashable value: per op its name, its operands and
    results (numbered in the order first met, as the printer names them in the order it
    prints them), result types, properties and attributes (in order; attributes equal
    as values print equal), successors and regions -- without the kernel's name and the
    provenance attributes, which `_structure` drops. Value names are not in it."""
    return _Keyer().op(kernel, tuple((k, a) for k, a in kernel.properties.items()
                                     if k != "sym_name"))


def _op_key(op: Operation, args: list[SSAValue],
            constants: list[Operation]) -> tuple[object, ...]:
    """What the kernel outlined from `op` would be, but its name and provenance: the
    types of its arguments, the constants cloned into it and the op, numbered as in
    the kernel (the arguments first). Ops of equal keys make kernels of equal
    `_structural_key` (the kernel and its `frame.parallel_dims` are made from these
    alone), so they share one kernel whatever their names."""
    keyer = _Keyer({a: i for i, a in enumerate(args)})
    return (tuple(a.type for a in args),
            tuple(keyer.op(c, tuple(c.properties.items())) for c in constants),
            keyer.op(op, tuple(op.properties.items())))


class _Keyer:
    """Structural keys of ops (see `_structural_key`), values numbered as first met."""

    def __init__(self, values: dict[SSAValue, int] | None = None):
        self.values: dict[SSAValue, int] = dict(values or {})
        self.blocks: dict[Block, int] = {}

    def value(self, v: SSAValue) -> int:
        return self.values.setdefault(v, len(self.values))

    def block(self, b: Block) -> int:
        return self.blocks.setdefault(b, len(self.blocks))

    def op(self, o: Operation, props: tuple[tuple[str, Attribute], ...]) -> tuple[object, ...]:
        return (
            o.name,
            tuple(self.value(v) for v in o.operands),
            tuple(self.value(r) for r in o.results),
            tuple(r.type for r in o.results),
            props,
            tuple((k, a) for k, a in o.attributes.items() if k not in PROVENANCE_ATTRS),
            tuple(self.block(b) for b in o.successors),
            tuple(tuple((self.block(b), tuple(self.value(a) for a in b.args),
                         tuple(a.type for a in b.args),
                         tuple(self.op(x, tuple(x.properties.items())) for x in b.ops))
                        for b in r.blocks)
                  for r in o.regions),
        )
