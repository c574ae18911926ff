"""frame-profile-kernels: time every kernel call of the model functions.

Expects: a module at the `loops` stage after frame-outline-kernels (and
frame-fuse-gemm-epilogue): public model functions that are sequences of views and
`func.call`s of private kernel functions whose bodies still hold their linalg ops.
Does: brackets each call of a kernel defined in the module, in every public function,
with

    func.call @frame_rt_prof_begin(%id) : (i64) -> ()
    func.call @<kernel>(...)
    func.call @frame_rt_prof_end(%id) : (i64) -> ()

(`%id` an `arith.constant ... : i64`), and each public function's body likewise (begin
first, end before each return), declares the two runtime functions, and records what
each id is on the module as `frame.profile = [[id, "function" | "kernel", "name",
"layer", flops], ...]`: the symbol, the `frame.layer` of a kernel's first call (or ""),
and a kernel's floating-point operations per call when its ops are contractions (2 x
the product of the loop ranges of every `linalg.generic` with a reduction loop and a
multiply-add body: matmuls and convolutions, counted as `torch.profiler` counts them),
else 0.
An id is the first 63 bits of the SHA-256 of the module's text (before this pass) and
the kernel's symbol, never 0: every kernel of every compiled module has its own
counters in the process's one table (`backend/llvm/profile_runtime.py`), and two
compiles of the same module share theirs.
Why: `frame-run --profile` and `FRAME_PROFILE=1` print where a step's time goes, kernel
by kernel (`frame_mlir/runtime/profile.py`); the JIT's perf map names the same kernels
for `perf`.
Guarantees: the kernels and their arguments are untouched, so results are
bit-identical to an unprofiled compile. Only on when `CompileOptions.profile` is.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, i64
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

BEGIN = "frame_rt_prof_begin"
END = "frame_rt_prof_end"
#: The module attribute naming the profiled kernels (read by `runtime/profile.py`).
PROFILE_ATTR = "frame.profile"


def kernel_flops(kernel: func.FuncOp) -> int:
    """Floating-point operations of one call of `kernel`: 2 x the loop ranges of each
    contraction (a generic with a reduction loop whose body multiplies and adds)."""
    total = 0
    for op in kernel.walk():
        if not isinstance(op, linalg.GenericOp):
            continue
        if not any(str(it.data) == "reduction" for it in op.iterator_types.data):
            continue
        body = [type(o) for o in op.body.block.ops]
        if math.FmaOp in body or (arith.MulfOp in body and arith.AddfOp in body):
            try:
                total += 2 * prod(op.get_static_loop_ranges())
            except Exception:  # noqa: BLE001 -- a dynamic range: not counted
                continue
    return total


def _id(salt: bytes, name: str) -> int:
    digest = hashlib.sha256(salt + name.encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1) or 1


@dataclass(frozen=True)
class FrameProfileKernels(ModulePass):
    """Bracket every kernel call of the public functions with the profiler's counters."""

    name = "frame-profile-kernels"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        salt = hashlib.sha256(str(op).encode()).digest()
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp)]
        kernels = {f.sym_name.data: f for f in funcs if f.body.blocks
                   and f.sym_visibility is not None and f.sym_visibility.data == "private"}
        public = [f for f in funcs if f.body.blocks and f.sym_name.data not in kernels]
        entries: dict[str, tuple[int, str, int]] = {}  # kernel -> id, layer, flops
        functions: dict[str, int] = {}  # public function -> id
        for fn in public:
            name = fn.sym_name.data
            functions[name] = _id(salt, name)
            body = fn.body.blocks[0]
            ident = arith.ConstantOp(IntegerAttr(functions[name], i64))
            first = [ident, func.CallOp(BEGIN, [ident.result], [])]
            if body.first_op is None:
                body.add_ops(first)
            else:
                Rewriter.insert_op(first, InsertPoint.before(body.first_op))
            for ret in [r for r in fn.walk() if isinstance(r, func.ReturnOp)]:
                Rewriter.insert_op(func.CallOp(END, [ident.result], []),
                                   InsertPoint.before(ret))
            for call in [c for c in fn.walk() if isinstance(c, func.CallOp)]:
                callee = call.callee.root_reference.data
                if callee not in kernels:
                    continue
                if callee not in entries:
                    layer = call.attributes.get("frame.layer")
                    entries[callee] = (_id(salt, callee),
                                       layer.data if isinstance(layer, StringAttr) else "",
                                       kernel_flops(kernels[callee]))
                ident = arith.ConstantOp(IntegerAttr(entries[callee][0], i64))
                Rewriter.insert_op([ident, func.CallOp(BEGIN, [ident.result], [])],
                                   InsertPoint.before(call))
                Rewriter.insert_op(func.CallOp(END, [ident.result], []),
                                   InsertPoint.after(call))
        if not functions:
            return
        declared = {f.sym_name.data for f in funcs}
        for name in (BEGIN, END):
            if name not in declared:
                op.body.block.add_op(func.FuncOp(
                    name, func.FunctionType.from_lists([i64], []), Region(),
                    visibility="private"))
        records: list[Attribute] = [
            ArrayAttr([IntegerAttr(ident, i64), StringAttr("function"), StringAttr(name),
                       StringAttr(""), IntegerAttr(0, i64)])
            for name, ident in functions.items()]
        records += [
            ArrayAttr([IntegerAttr(ident, i64), StringAttr("kernel"), StringAttr(name),
                       StringAttr(layer), IntegerAttr(flops, i64)])
            for name, (ident, layer, flops) in entries.items()]
        op.attributes[PROFILE_ATTR] = ArrayAttr(records)


def profile_records(module: builtin.ModuleOp) -> list[tuple[int, str, str, str, int]]:
    """The (id, kind, name, layer, flops) entries frame-profile-kernels recorded on
    `module` (none when it did not run)."""
    attr = module.attributes.get(PROFILE_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    out = []
    for rec in attr.data:
        assert isinstance(rec, ArrayAttr)
        ident, kind, name, layer, flops = rec.data
        assert isinstance(ident, IntegerAttr) and isinstance(flops, IntegerAttr)
        assert isinstance(kind, StringAttr) and isinstance(name, StringAttr)
        assert isinstance(layer, StringAttr)
        out.append((ident.value.data, kind.data, name.data, layer.data, flops.value.data))
    return out


def is_profile_call(op: object) -> bool:
    """Whether `op` is one of this pass's counter calls (passes that look at the
    neighbours of a kernel call look through them)."""
    return isinstance(op, func.CallOp) and op.callee.root_reference.data in (BEGIN, END)


def erase_call(call: func.CallOp) -> None:
    """Erase a kernel call with its counter calls, if it has them (and their id
    constant): what a pass that drops a profiled call must do."""
    around = [o for o in (call.prev_op, call.next_op) if is_profile_call(o)]
    call.detach()
    call.erase()
    for o in around:
        assert isinstance(o, func.CallOp)
        ident = o.operands[0].owner
        o.detach()
        o.erase()
        if isinstance(ident, arith.ConstantOp) and not ident.result.uses:
            ident.detach()
            ident.erase()
