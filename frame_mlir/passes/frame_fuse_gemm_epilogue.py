"""frame-fuse-gemm-epilogue: fuse the elementwise kernels that consume a GEMM's output
into the GEMM kernel, to run on each tile of C while it is still in L1.

Expects: outlined kernels (`frame-outline-kernels`): functions that are sequences of
views and calls of private kernels, each kernel one `linalg.generic` (or fill).
Does: for a call of a contraction kernel that `frame-gemm` will rewrite (`analyze`,
at least `min_flops` multiply-adds) writing C, walks the calls after it. The first
call that touches C (or the output of an epilogue already taken) becomes part of the
epilogue if its kernel is one elementwise generic over C's shape that

  - reads C / those outputs through the identity map (element (i, j) of its loops
    reads element (i, j): it can run as soon as that element is final), and
    addresses each operand with one stride over C's rows and one over its columns
    (`frame_gemm.analyze_epilogue`): a bias broadcast, an activation, an activation
    gradient, the SGD update of a weight from its gradient;
  - writes its output through the identity map, to a buffer that the GEMM does not
    read (A, B) and that no fused op reads at another element: either disjoint from
    them or the very buffer it reads in place;
  - reads nothing else that the GEMM or an earlier epilogue writes;
  - can move up to the GEMM: none of the calls in between touches its output or
    writes what it reads.

A call that touches the written buffers without qualifying stays where it is, and the
walk goes on past it (up to `PASSED_MAX` of them, then stops): a later consumer still
joins if it can move up past the calls it passed as well -- a layer's bias update
reading the gradient that the next layer's input-gradient GEMM made, after the weight-
gradient GEMM read it. The GEMM call and its epilogue calls are replaced by one call of
a new kernel
`@<gemm kernel>_<epilogue names>` whose body is the contraction generic followed by the
epilogue generics, on the union of their arguments; `frame-gemm` then runs the epilogue
per tile after the tile's last k block. Kernels no longer called are erased.
When C is an arena temporary that starts from a zero fill and nothing reads it after
the epilogue, the fill and the GEMM write the output of the last epilogue call that
writes one without reading it instead, and the epilogue runs in place there
(`_store_c_in_output`): C is not stored twice.
When C is such a temporary but the epilogue cannot take its place (the last op reads its
own output: a weight's SGD update in place), the fused kernel is marked `frame.c_dead`
(`C_DEAD_ATTR`): frame-gemm may keep each tile of C in its scratch and never store C.
Otherwise C is still stored (another op may read it).
Numerics: every epilogue op computes exactly what it computed before, from the same
final values of C: results are bit-identical to the unfused pipeline.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from math import prod

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.passes.frame_gemm import (
    C_DEAD_ATTR,
    Contraction,
    FrameGemm,
    analyze,
    epilogue_operands,
)
from frame_mlir.passes.frame_profile_kernels import is_profile_call

_Extent = tuple[SSAValue, int, int | None]  # root buffer, first byte, end (None: all)


def _extent(v: SSAValue) -> _Extent | None:
    """The bytes `v` covers: a function argument, or a constant-offset view of one."""
    if isinstance(v, BlockArgument):
        return v, 0, None
    view = v.owner
    if isinstance(view, memref.ViewOp) and isinstance(view.source, BlockArgument) and \
            not view.sizes and isinstance(view.byte_shift.owner, arith.ConstantOp):
        shift = view.byte_shift.owner.value
        typ = v.type
        if isinstance(shift, IntegerAttr) and isinstance(typ, MemRefType):
            start = shift.value.data
            return view.source, start, start + 4 * prod(typ.get_shape())
    return None


def _same(x: SSAValue, y: SSAValue) -> bool:
    """Whether two values are the same buffer: one value, or views of the same bytes
    with the same type (the arena plan reuses a dead buffer's bytes for a new one)."""
    if x is y:
        return True
    ex, ey = _extent(x), _extent(y)
    return ex is not None and ey is not None and ex[0] is ey[0] and ex[1:] == ey[1:] \
        and x.type == y.type


def _overlap(x: SSAValue, y: SSAValue) -> bool:
    """Whether two buffers may share bytes (unknown views: yes)."""
    if x is y:
        return True
    ex, ey = _extent(x), _extent(y)
    if ex is None or ey is None:
        return True
    if ex[0] is not ey[0]:
        return False  # distinct arguments are distinct buffers
    if ex[2] is None or ey[2] is None:
        return True
    return ex[1] < ey[2] and ey[1] < ex[2]


def _touches(vals: list[SSAValue], bufs: list[SSAValue]) -> bool:
    return any(_overlap(v, b) for v in vals for b in bufs)


def _single_generic(fn: func.FuncOp) -> linalg.GenericOp | None:
    """The one generic of a kernel made of it and constants."""
    if not fn.body.blocks:
        return None
    ops = [o for o in fn.body.blocks[0].ops if not isinstance(o, arith.ConstantOp
                                                                | func.ReturnOp)]
    return ops[0] if len(ops) == 1 and isinstance(ops[0], linalg.GenericOp) else None


def _written(call: func.CallOp, kernels: dict[str, func.FuncOp]) -> list[SSAValue]:
    """The operands a call may write: its kernel's linalg outputs (all, if unknown)."""
    fn = kernels.get(call.callee.root_reference.data)
    if fn is None or not fn.body.blocks:
        return list(call.arguments)
    args = list(fn.body.blocks[0].args)
    out: list[SSAValue] = []
    for op in fn.body.blocks[0].ops:
        if isinstance(op, arith.ConstantOp | func.ReturnOp):
            continue
        if not isinstance(op, linalg.GenericOp | linalg.FillOp):
            return list(call.arguments)
        for v in op.outputs:
            if v not in args:
                return list(call.arguments)
            out.append(call.arguments[args.index(v)])
    return out


class _Buffers:
    """Which calls of a block use which buffers: the calls that may overlap a buffer
    (`_overlap`), after a position, found without looking at the others.

    The walk from a GEMM call goes on past every call that does not touch what the
    epilogue writes -- in a train step, often to the end of the function, thousands of
    calls. Testing each call on the way made the pass quadratic in the model's size;
    with this index a walk costs the calls it stops at.
    """

    def __init__(self) -> None:
        self.by_value: dict[SSAValue, list[int]] = {}  # `x is y` overlaps
        self.by_extent: dict[_Extent, list[int]] = {}
        self.extents: dict[SSAValue, list[_Extent]] = {}  # per root buffer
        self.unknown: list[int] = []  # calls with a buffer of unknown extent
        self.any: list[int] = []  # calls with any buffer (all overlap an unknown one)
        self._overlapping: dict[_Extent, list[_Extent]] = {}

    def add(self, position: int, values: Iterable[SSAValue]) -> None:
        """Record the buffers of the call at `position` (added in increasing order)."""
        def note(positions: list[int]) -> None:
            if not positions or positions[-1] != position:
                positions.append(position)

        for v in values:
            note(self.any)
            note(self.by_value.setdefault(v, []))
            e = _extent(v)
            if e is None:
                note(self.unknown)
                continue
            if e not in self.by_extent:
                self.by_extent[e] = []
                self.extents.setdefault(e[0], []).append(e)
            note(self.by_extent[e])

    def _overlaps(self, e: _Extent) -> list[_Extent]:
        """The recorded extents that overlap `e` (as `_overlap` decides for views)."""
        found = self._overlapping.get(e)
        if found is None:
            found = self._overlapping[e] = [
                x for x in self.extents.get(e[0], ())
                if x[2] is None or e[2] is None or (x[1] < e[2] and e[1] < x[2])]
        return found

    def first(self, values: Iterable[SSAValue], lo: int, hi: int,
              skip: Container[int]) -> int | None:
        """The first position in (lo, hi), not in `skip`, of a call with a buffer that
        may overlap one of `values`."""
        best: int | None = None

        def scan(positions: list[int]) -> None:
            nonlocal best
            end = hi if best is None else best
            for i in range(bisect_right(positions, lo), len(positions)):
                p = positions[i]
                if p >= end:
                    return
                if p not in skip:
                    best = p
                    return

        for v in values:
            e = _extent(v)
            if e is None:
                scan(self.any)
                continue
            scan(self.unknown)
            scan(self.by_value.get(v, []))
            for x in self._overlaps(e):
                scan(self.by_extent[x])
        return best


class _Union(Container[int]):
    """Positions in either of two sets."""

    def __init__(self, first: set[int], second: set[int]):
        self.first, self.second = first, second

    def __contains__(self, p: object) -> bool:
        return p in self.first or p in self.second


@dataclass
class _Block:
    """A function's block as the walks see it: positions of its ops, where walks stop,
    and its calls indexed by the buffers they touch and those they write."""

    position: dict[Operation, float] = field(default_factory=dict)
    calls: dict[int, func.CallOp] = field(default_factory=dict)
    stops: list[int] = field(default_factory=list)  # neither a call nor a view/constant
    touched: _Buffers = field(default_factory=_Buffers)
    written: _Buffers = field(default_factory=_Buffers)
    erased: set[int] = field(default_factory=set)

    @classmethod
    def index(cls, block: Block, kernels: dict[str, func.FuncOp]) -> _Block:
        b = cls()
        for i, o in enumerate(block.ops):
            b.position[o] = i
            if isinstance(o, func.CallOp):
                b.calls[i] = o
                b.touched.add(i, o.arguments)
                b.written.add(i, _written(o, kernels))
            elif not isinstance(o, arith.ConstantOp | memref.ViewOp):
                b.stops.append(i)
        return b

    def next_stop(self, after: int) -> int:
        i = bisect_right(self.stops, after)
        return self.stops[i] if i < len(self.stops) else len(self.position) + 1


def _hoist(v: SSAValue, call: func.CallOp, order: _Block) -> None:
    """Move the pure op defining `v` (a view, a constant) and what it uses in turn
    above `call`, if it is defined after it in the same block."""
    owner = v.owner
    if not isinstance(owner, arith.ConstantOp | memref.ViewOp) or \
            owner.parent is not call.parent:
        return
    block = call.parent
    assert block is not None
    if order.position[owner] < order.position[call]:
        return
    for operand in owner.operands:
        _hoist(operand, call, order)
    owner.detach()
    block.insert_op_before(owner, call)
    order.position[owner] = order.position[call] - 0.5  # just above `call`


def _erase_if_unused(op: object) -> None:
    if isinstance(op, memref.ViewOp | arith.ConstantOp) and not any(r.uses for r in op.results):
        operands = list(op.operands)
        Rewriter.erase_op(op)
        for v in operands:
            _erase_if_unused(v.owner)


def _called(module: builtin.ModuleOp) -> set[str]:
    return {c.callee.root_reference.data for c in module.walk() if isinstance(c, func.CallOp)}


def _suffix(name: str) -> str:
    match = re.search(r"__k\d+_(\w+)$", name)
    return match.group(1) if match else name


PASSED_MAX = 16
"""Calls touching what an epilogue writes that its walk passes over without them joining
(see `_fuse_at`): a bound on the walk's cost (each is an epilogue check) in a train
step of thousands of calls. A transformer block's first FFN bias update comes after 5
such calls past the GEMM that makes its gradient."""


@dataclass(frozen=True)
class FrameFuseGemmEpilogue(ModulePass):
    """Fuse the elementwise consumers of a GEMM's output into its kernel (see module
    doc)."""

    name = "frame-fuse-gemm-epilogue"

    min_flops: int = FrameGemm.min_flops

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        kernels = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        fused: dict[tuple[object, ...], func.FuncOp] = {}
        called_before = _called(op)
        for fn in list(kernels.values()):
            if not fn.body.blocks:
                continue
            block = fn.body.blocks[0]
            index: _Block | None = None  # made at the first GEMM, before any change
            for call in [o for o in block.ops if isinstance(o, func.CallOp)]:
                if call.parent is None:  # erased as part of an earlier epilogue
                    continue
                found = self._gemm(kernels.get(call.callee.root_reference.data))
                if found is None:
                    continue
                if index is None:
                    index = _Block.index(block, kernels)
                self._fuse_at(call, found, index, kernels, fused)
        for name in called_before - _called(op):
            kernels[name].detach()
            kernels[name].erase()

    def _gemm(self, fn: func.FuncOp | None) -> tuple[Contraction, int] | None:
        """The contraction of a kernel frame-gemm will take, and C's argument index."""
        generic = _single_generic(fn) if fn is not None else None
        g = analyze(generic) if generic is not None else None
        if fn is None or generic is None or g is None:
            return None
        if g.m * g.n * g.k * prod(g.sizes[d] for d in g.outer) < self.min_flops:
            return None
        args = list(fn.body.blocks[0].args)
        return (g, args.index(g.c_value)) if g.c_value in args else None

    def _fuse_at(self, call: func.CallOp, found: tuple[Contraction, int], index: _Block,
                 kernels: dict[str, func.FuncOp],
                 fused: dict[tuple[object, ...], func.FuncOp]) -> None:
        g, c_index = found
        c_val = call.arguments[c_index]
        gemm_reads = [v for i, v in enumerate(call.arguments) if i != c_index]
        written: list[SSAValue] = [c_val]  # per element, final once the tile is done
        reads: list[SSAValue] = list(gemm_reads)  # read at other elements / while running
        chain: list[func.CallOp] = []
        # The calls after the GEMM up to the first op that is neither a call, a view nor
        # a constant; those that do not touch what the epilogue writes are passed over
        # (`between`: the live calls after the GEMM that are not in the chain).
        start = pos = int(index.position[call])
        stop = index.next_stop(pos)
        not_between = _Union(index.erased, set())  # erased, or in the chain
        passed = 0  # calls that touch what the epilogue writes but did not join
        while True:
            nxt = index.touched.first(written, pos, stop, index.erased)
            if nxt is None:
                break
            cur = index.calls[nxt]

            def blocked(ins: list[SSAValue], out: SSAValue, end: int = nxt) -> bool:
                """Whether a call between the GEMM and `cur` touches `out` or writes
                what `cur` reads (then `cur` cannot move up to the GEMM)."""
                return index.touched.first([out], start, end, not_between) is not None or \
                    index.written.first(ins, start, end, not_between) is not None

            operands = self._fits(cur, g, kernels, written, reads, blocked)
            if operands is None:
                # A call that cannot join stays where it is, and the walk goes on past
                # it (up to `PASSED_MAX` such calls): a later consumer may still join
                # if it can move up past this call as well (`blocked`: the call is not
                # in the chain, so a consumer that reads what it writes, or touches
                # what it reads, stays). A layer's bias gradient is its output's
                # gradient, read by the weight- and input-gradient GEMMs (and its C's
                # bytes reused by the arena) before the bias's SGD update reads it;
                # the update joins the epilogue that made the gradient, while the tile
                # is in L1, instead of reading the gradient again.
                passed += 1
                if passed > PASSED_MAX:
                    break
                pos = nxt
                continue
            chain.append(cur)
            not_between.second.add(nxt)
            ins, out = operands
            reads += [v for v in ins if not any(_same(v, w) for w in written)]
            written.append(out)
            pos = nxt
        if not chain:
            return
        index.erased.update(not_between.second)
        fill = _dead_zero_filled_c(call, c_index, index, kernels, not_between)
        c_dead = fill is not None and \
            not _store_c_in_output(call, c_index, chain, fill, index, kernels) and \
            not any(_same(v, c_val) for c in chain for v in _written(c, kernels))
        self._replace(call, chain, index, kernels, fused, c_dead)

    def _fits(self, cur: func.CallOp, g: Contraction, kernels: dict[str, func.FuncOp],
              written: list[SSAValue], reads: list[SSAValue],
              blocked: Callable[[list[SSAValue], SSAValue], bool]
              ) -> tuple[list[SSAValue], SSAValue] | None:
        """The caller's inputs and output of `cur` if it can join the epilogue (see the
        module doc), else None."""
        fn = kernels.get(cur.callee.root_reference.data)
        ew = _single_generic(fn) if fn is not None else None
        if fn is None or ew is None or len(ew.outputs) != 1:
            return None
        args = list(fn.body.blocks[0].args)
        if any(v not in args for v in (*ew.inputs, *ew.outputs)):
            return None
        ins = [cur.arguments[args.index(v)] for v in ew.inputs]
        out = cur.arguments[args.index(ew.outputs[0])]

        def is_written(v: SSAValue) -> bool:
            return any(_same(v, w) for w in written)
        for v in ins:  # a written buffer is read whole, as itself; others stay apart
            if not _same(v, out) and not is_written(v) and \
                    (_touches([v], written) or _overlap(v, out)):
                return None
        # The output: in place over a written buffer or apart from them, and apart
        # from what the GEMM and the epilogue read elsewhere than at its element.
        if not is_written(out) and _touches([out], written) or _touches([out], reads):
            return None
        if blocked(ins, out):  # it moves up past the calls in between
            return None
        identity = [is_written(v) or _same(v, out) for v in ins] + [True]
        return (ins, out) if epilogue_operands(g, ew, identity) is not None else None

    def _replace(self, call: func.CallOp, chain: list[func.CallOp], index: _Block,
                 kernels: dict[str, func.FuncOp],
                 fused: dict[tuple[object, ...], func.FuncOp], c_dead: bool) -> None:
        """One call of the fused kernel (made once per pattern of arguments); with
        `c_dead`, the kernel is marked `C_DEAD_ATTR`."""
        args: list[SSAValue] = list(call.arguments)
        pattern: list[tuple[int, ...]] = []
        for c in chain:
            idx = []
            for v in c.arguments:
                # One argument per buffer: kernel arguments are `noalias`.
                pos = next((i for i, a in enumerate(args) if _same(a, v)), None)
                if pos is None:
                    args.append(v)
                    pos = len(args) - 1
                idx.append(pos)
            pattern.append(tuple(idx))
        names = (call.callee.root_reference.data,
                 *(c.callee.root_reference.data for c in chain))
        key = (names, tuple(pattern), len(args), c_dead)
        kernel = fused.get(key)
        if kernel is None:
            kernel = _fused_kernel(names, [kernels[n] for n in names], pattern,
                                   [a.type for a in args], kernels)
            if c_dead:
                kernel.attributes[C_DEAD_ATTR] = builtin.UnitAttr()
            first = kernels[names[0]]
            Rewriter.insert_op(kernel, InsertPoint.before(first))
            fused[key] = kernel
            kernels[kernel.sym_name.data] = kernel
        for v in args:  # views made for the epilogue calls must come before the call
            _hoist(v, call, index)
        new_call = func.CallOp(kernel.sym_name.data, args, [])
        new_call.attributes.update(call.attributes)
        Rewriter.replace_op(call, new_call)
        for c in chain:
            operands = list(c.arguments)
            Rewriter.erase_op(c)
            for v in operands:  # a view only the epilogue call used
                _erase_if_unused(v.owner)


def _pure_outputs(call: func.CallOp, kernels: dict[str, func.FuncOp]) -> list[SSAValue]:
    """The operands `call` writes without reading them: outputs of its kernel's fills,
    and of its generics whose payload ignores the output's old value (none if the
    kernel is anything else)."""
    fn = kernels.get(call.callee.root_reference.data)
    if fn is None or not fn.body.blocks:
        return []
    args = list(fn.body.blocks[0].args)
    read: list[SSAValue] = []
    pure: list[SSAValue] = []
    for op in fn.body.blocks[0].ops:
        if isinstance(op, arith.ConstantOp | func.ReturnOp):
            continue
        if isinstance(op, linalg.FillOp):
            outs = list(op.outputs)
        elif isinstance(op, linalg.GenericOp):
            payload = op.body.block.args[len(op.inputs):]
            outs = [v for v, a in zip(op.outputs, payload, strict=True) if not a.uses]
            read += [*op.inputs, *(v for v in op.outputs if v not in outs)]
        else:
            return []
        pure += outs
    if any(v not in args for v in (*pure, *read)):
        return []
    read_args = {args.index(v) for v in read}
    return [call.arguments[i] for i in {args.index(v) for v in pure} - read_args]


def _dead_zero_filled_c(call: func.CallOp, c_index: int, index: _Block,
                        kernels: dict[str, func.FuncOp],
                        not_between: Container[int]) -> func.CallOp | None:
    """The zero fill of C right before the GEMM `call` (frame-gemm then drops it), if C
    is a temporary of the caller's arena that no call reads after the epilogue (the
    next call to touch its bytes only writes them); else None."""
    from frame_mlir.passes.frame_gemm import _is_zero_fill

    c_val = call.arguments[c_index]
    if not isinstance(c_val.owner, memref.ViewOp):
        return None
    prev = call.prev_op
    while isinstance(prev, arith.ConstantOp | memref.ViewOp) or is_profile_call(prev):
        prev = prev.prev_op
    fill_fn = kernels.get(prev.callee.root_reference.data) \
        if isinstance(prev, func.CallOp) else None
    if fill_fn is None or not _is_zero_fill(fill_fn) or prev.operands[0] is not c_val:  # type: ignore[union-attr]
        return None
    after = call.next_op
    while after is not None:  # an op with regions could use C out of the index's sight
        if not isinstance(after, func.CallOp | func.ReturnOp | arith.ConstantOp
                          | memref.ViewOp):
            return None
        after = after.next_op
    start = int(index.position[call])
    nxt = index.touched.first([c_val], start, len(index.position) + 1, not_between)
    if nxt is not None:
        later = index.calls[nxt]
        pure = _pure_outputs(later, kernels)
        if any(_overlap(v, c_val) and not any(v is p for p in pure)
               for v in later.arguments):
            return None
    return prev  # type: ignore[return-value]


def _store_c_in_output(call: func.CallOp, c_index: int, chain: list[func.CallOp],
                       fill: func.CallOp, index: _Block,
                       kernels: dict[str, func.FuncOp]) -> bool:
    """Let the GEMM accumulate C in an epilogue op's output when nothing else reads C
    (`_dead_zero_filled_c` found C's zero `fill`); whether it did.

    A scratch C costs a second pass over memory: the GEMM's stores of C, then the
    epilogue's stores of its output (the FFN's bias + relu on a 4 MiB C: 8.2 -> 9.5 ms
    on Zen 2). When C is a temporary of the caller's arena that starts from a zero fill
    and that no call reads after the epilogue (the next call to touch its bytes only
    writes them), the fill and the GEMM take the output of the last epilogue call that
    writes one without reading it (not an SGD update in place, which may follow it)
    instead, and the epilogue runs in place on it: each element of C is read by the
    epilogue ops up to that call, in order, before it writes the element, and by none
    after it, so every op computes what it did from the same values."""
    c_val = call.arguments[c_index]
    for at in range(len(chain) - 1, -1, -1):
        if any(_same(v, c_val) for c in chain[at + 1:] for v in c.arguments):
            return False  # a later op reads C: it must stay apart
        fn = kernels.get(chain[at].callee.root_reference.data)
        generic = _single_generic(fn) if fn is not None else None
        if generic is None:
            continue
        args = list(fn.body.blocks[0].args)  # type: ignore[union-attr]
        if generic.outputs[0] not in args:
            continue
        out = chain[at].arguments[args.index(generic.outputs[0])]
        if out.type != c_val.type or _overlap(out, c_val):
            continue
        # `out` is written by this call without being read, as its one argument on
        # those bytes, and touched by no call before it: its old value is never read
        # (the calls after it read and write its new value, as before)
        if sum(_overlap(v, out) for c in chain[:at + 1] for v in c.arguments) != 1 or \
                not any(v is out for v in _pure_outputs(chain[at], kernels)):
            continue
        _hoist(out, fill, index)
        fill.operands = [out]
        call.operands = [out if i == c_index else v for i, v in enumerate(call.arguments)]
        for c in chain:
            c.operands = [out if _same(v, c_val) else v for v in c.arguments]
        return True
    return False


def _fused_kernel(names: tuple[str, ...], parts: list[func.FuncOp],
                  pattern: list[tuple[int, ...]], types: list[object],
                  taken: Container[str]) -> func.FuncOp:
    """The GEMM kernel's body, then each epilogue kernel's, on the union of arguments."""
    block = Block(arg_types=types)  # type: ignore[arg-type]
    gemm = parts[0]
    maps = [dict(zip(gemm.body.blocks[0].args, block.args, strict=False))]
    for part, idx in zip(parts[1:], pattern, strict=True):
        maps.append({a: block.args[i] for a, i in zip(part.body.blocks[0].args, idx,
                                                        strict=True)})
    # Constants first, so every body may use any of them; then the generics in order.
    for part, mapping in zip(parts, maps, strict=True):
        for o in part.body.blocks[0].ops:
            if isinstance(o, arith.ConstantOp):
                clone = o.clone(value_mapper=mapping)
                block.add_op(clone)
                mapping[o.results[0]] = clone.results[0]
    for part, mapping in zip(parts, maps, strict=True):
        for o in part.body.blocks[0].ops:
            if not isinstance(o, arith.ConstantOp | func.ReturnOp):
                block.add_op(o.clone(value_mapper=mapping))
    block.add_op(func.ReturnOp())
    name = names[0] + "".join(f"_{_suffix(n)}" for n in names[1:])
    base, count = name, 1
    while name in taken:
        count += 1
        name = f"{base}{count}"
    kernel = func.FuncOp(name, func.FunctionType.from_lists(types, []),  # type: ignore[arg-type]
                         Region(block), visibility="private")
    for key, value in gemm.attributes.items():
        if key.startswith("frame.") and key != "frame.parallel_dims":
            kernel.attributes[key] = value
    return kernel
