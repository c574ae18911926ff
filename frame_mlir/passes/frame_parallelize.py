"""frame-parallelize: split the parallel loops of kernels over the runtime's threads.

Expects: loop-level kernels (private `func.func`s after convert-linalg-to-loops), where
a loop is known to be parallel in one of two ways:

* a top-level `scf.for` of the kernel carries the unit attribute `frame.parallel`
  (a pass that builds loops itself says so: frame-tile-matmul's rows of C, the
  per-task loop of frame-gemm). The pass that marks a loop has judged it worth
  splitting: marked loops are split whatever their size, over at most
  `frame.parallel_threads` threads where the loop says so; or
* the kernel carries `frame.parallel_dims = array<i64: s0, s1, ...>`
  (frame-outline-kernels records it for a linalg op whose leading iterators are
  parallel, see `leading_parallel_dims`) and its body is one loop nest whose
  outermost loops run from 0 to s0, s1, ... step 1: those loops are parallel. They
  are split only if the nest does at least `min_work` innermost iterations, and over
  no more threads than give each one `min_work / 2` of them (`threads_for`): each
  kernel picks its thread count from its work, a small one runs on one.

Either way the contract is the same: the iterations write disjoint memory and none
reads what another writes.

Does: outlines each such loop (for `frame.parallel_dims`, the outermost loops
collapsed into one iteration space, as few as give every thread CHUNKS_PER_THREAD
iterations) into a task function

    func.func private @<kernel>__task<N>(<values the loop uses>..., %lo: index, %hi: index)

that runs the iterations `[lo, hi)` exactly as the loop ran them, and replaces the loop
with `frame_rt.parallel_for @<kernel>__task<N>(...) range(0, <iterations>) threads T`
(T: the kernel's own thread count, at most `threads`). With `threads = 1` the module is
left as it is (no task, no pool).

Guarantees: every iteration executes the same ops in the same order as before, and
the iterations of one chunk run in the original order: no summation order changes, so
the results are bit-identical for every thread count.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, i64
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import NoMemoryEffect

from frame_mlir.dialects.frame_rt import ParallelForOp
from frame_mlir.passes.common import PROVENANCE_ATTRS, fail

PARALLEL_ATTR = "frame.parallel"
"""Unit attribute of an `scf.for` whose iterations are independent."""

PARALLEL_THREADS_ATTR = "frame.parallel_threads"
"""Optional i64 attribute of a `frame.parallel` loop: the most threads its marking pass
found worth using (frame-gemm: as many as its multiply-adds pay for). Absent: all."""

PARALLEL_DIMS_ATTR = "frame.parallel_dims"
"""Kernel attribute `array<i64: sizes...>`: the outermost loops of its one linalg op
that are parallel, by their sizes (frame-outline-kernels sets it)."""

MIN_PARALLEL_WORK = 32768
"""Innermost iterations a linalg loop nest needs before it is split over threads (and
the multiply-adds frame-tile-matmul needs before it marks its row loops).

Measured with `bench/bench_threads.py --sweep` (`b = a * 2 + 1` on N f32, 1 vs 2
threads, idle 2-core Zen 4): N = 4K 0.24 vs 0.45 us, 8K and 16K even, 32K 1.39 vs
1.21 us (1.15x), 64K 1.22x, 128K 1.97x. A dispatch to a spinning worker costs
~0.2 us, so 32K is the first size that gains; every kernel of tiny_mlp is far below
it, so its step (0.5 us) is unchanged.

Measured again on 2026-12-05 (quiet 2-core Zen 4 VM, best of 200 interleaved short
batches), alone (the kernel again and again: each thread finds its half in its own
cache) and as an island (after each call a sequential kernel rewrites the input from
the output, so the worker reads what the caller wrote and the other way round, as
around a split kernel between sequential ones): alone 16K 1.29x, 32K 1.50x, 64K
1.84x, 128K 2.20x; island 0.34-0.48x up to 128K (moving the halves between the cores
costs more than the work), 256K 0.99x. The truth of a training step lies between:
whole steps (`--workloads`, W2-W4, rounds without other load) read the same with
32K and with 256K, so the threshold stays at 32K.
"""



def threads_for(work: int | None, threads: int, min_work: int) -> int:
    """The threads a nest of `work` innermost iterations runs on, out of `threads`: one
    below `min_work` (a second thread would not repay its dispatch), else as many as
    give each thread at least `min_work / 2` iterations -- the share each of 2 threads
    gets at the threshold. (Only 1 vs 2 threads was measured, on 2-core machines; the
    rule keeps a thread's share at least what paid there.) Unknown work (a dynamic
    bound): all of them. `min_work` 0: all of them."""
    if threads <= 1 or work is None or min_work <= 0:
        return max(1, threads)
    if work < min_work:
        return 1
    return max(2, min(threads, 2 * work // min_work))


CHUNKS_PER_THREAD = 4
"""Loops are collapsed until there are this many iterations per thread (or no more
loops to collapse): with one iteration of 2 per thread the last thread would idle."""


def leading_parallel_dims(op: Operation) -> list[int]:
    """The sizes of the leading loops of a linalg op on memrefs whose iterations can
    run in any order, on any thread: its leading `parallel` iterators, cut at the
    first one that does not pick the output element by itself. Empty: none.

    Iterator types are honest in this code base (a scatter marks the dims that
    accumulate into one element as reductions), but the check does not rely on
    that alone: each counted dim d must be a plain result `d` of every output map (so
    iterations that differ in d write different elements), and an input that is also
    an output must be read through the output's own map (so an iteration reads only
    what it writes itself).
    """
    if isinstance(op, linalg.FillOp):
        typ = op.outputs[0].type
        return list(typ.get_shape()) if isinstance(typ, builtin.MemRefType) else []
    if not isinstance(op, linalg.GenericOp):
        return []
    try:
        ranges = op.get_static_loop_ranges()
    except Exception:  # a dynamic shape: no static loop sizes to record
        return []
    maps = [m.data for m in op.indexing_maps.data]
    n_in = len(op.inputs)
    out_maps = maps[n_in:]
    for value, m in zip(op.inputs, maps[:n_in], strict=True):
        for out, om in zip(op.outputs, out_maps, strict=True):
            if value is out and m != om:
                return []
    sizes: list[int] = []
    for kind in op.iterator_types.data:
        d = len(sizes)
        if str(kind.data) != "parallel" or ranges[d] < 0:
            break
        if not all(any(isinstance(e, AffineDimExpr) and e.position == d
                       for e in om.results) for om in out_maps):
            break
        sizes.append(ranges[d])
    return sizes


def mark_parallel_dims(kernel: func.FuncOp, op: Operation) -> None:
    """Record `leading_parallel_dims(op)` on the kernel outlined from `op`, for
    frame-parallelize to find after convert-linalg-to-loops (nothing if there are none).
    A pass that replaces the op by loops of its own must drop the attribute."""
    sizes = leading_parallel_dims(op)
    if sizes:
        kernel.attributes[PARALLEL_DIMS_ATTR] = DenseArrayBase.from_list(i64, sizes)


def _const_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _trip_count(loop: scf.ForOp) -> int | None:
    lb, ub, step = (_const_int(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def nest_work(loop: scf.ForOp) -> int | None:
    """Innermost iterations of the loop nest under `loop` (None: a bound is not constant)."""
    trips = _trip_count(loop)
    if trips is None:
        return None
    inner = 0
    for op in loop.body.block.ops:
        for sub in op.walk():
            if isinstance(sub, scf.ForOp) and _enclosing_loop(sub) is loop:
                work = nest_work(sub)
                if work is None:
                    return None
                inner += work
    return trips * max(inner, 1)


def _enclosing_loop(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, scf.ForOp | func.FuncOp):
        parent = parent.parent_op()
    return parent


def _erase_unused_pure(block: Block) -> None:
    """Erase the pure, region-free ops of `block` whose results nothing uses (the
    loop's bounds, views that moved into a task), users before their operands."""
    for o in reversed(list(block.ops)):
        if not o.regions and o.results and o.has_trait(NoMemoryEffect) and \
                not any(r.uses for r in o.results):
            Rewriter.erase_op(o)


def _collapsible_chain(loop: scf.ForOp, sizes: list[int]) -> list[scf.ForOp]:
    """The perfectly nested loops from `loop` down that go from 0 step 1 to `sizes[k]`
    (the loops convert-linalg-to-loops builds for the parallel dims of a linalg op).
    Empty unless the outermost `len(sizes)` loops are exactly those: a kernel whose op
    another pass rewrote into loops of its own (and left the attribute) is not split."""
    chain: list[scf.ForOp] = []
    current: Operation | None = loop
    while isinstance(current, scf.ForOp) and len(chain) < len(sizes):
        if _const_int(current.lb) != 0 or _const_int(current.step) != 1 or \
                _const_int(current.ub) != sizes[len(chain)] or current.iter_args:
            return []
        chain.append(current)
        body = [o for o in current.body.block.ops
                if not isinstance(o, scf.YieldOp | arith.ConstantOp)]
        current = body[0] if len(body) == 1 else None
    return chain if len(chain) == len(sizes) else []


@dataclass(frozen=True)
class FrameParallelize(ModulePass):
    """Run the parallel loops of kernels on the thread pool (frame_rt.parallel_for)."""

    name = "frame-parallelize"

    threads: int = 1
    """Threads to split over (the pipeline passes CompileOptions.threads)."""

    min_work: int = MIN_PARALLEL_WORK
    """Innermost iterations a nest needs to be split (0: split every parallel loop)."""

    def has_work(self, op: builtin.ModuleOp) -> bool:
        """One thread leaves the loops as they are: the pipeline skips the pass."""
        return self.threads != 1

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.threads < 1:
            raise fail(self.name, None, f"threads must be a positive integer, found "
                       f"{self.threads}")
        if self.min_work < 0:
            raise fail(self.name, None, f"min-work must not be negative, found "
                       f"{self.min_work}")
        if self.threads == 1:
            return  # one thread: the loops stay as they are, no task and no pool
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks or \
                    fn.sym_visibility != builtin.StringAttr("private"):
                continue
            loops = [o for o in fn.body.blocks[0].ops if isinstance(o, scf.ForOp)]
            marked = [lp for lp in loops if PARALLEL_ATTR in lp.attributes]
            chains: list[tuple[list[scf.ForOp], int]] = []
            for lp in marked:
                if lp.iter_args:
                    raise fail(self.name, lp, f"a {PARALLEL_ATTR} loop must not carry "
                               "values from one iteration to the next")
                if _trip_count(lp) is None:
                    raise fail(self.name, lp, f"a {PARALLEL_ATTR} loop needs constant "
                               "bounds and a positive constant step")
                # The marking pass judged it worth splitting, and over how many
                # threads at most (frame-gemm: as many as its work pays for).
                cap = lp.attributes.get(PARALLEL_THREADS_ATTR)
                threads = self.threads
                if isinstance(cap, IntegerAttr):
                    threads = max(1, min(threads, cap.value.data))
                if threads > 1:
                    chains.append(([lp], threads))
            dims = fn.attributes.get(PARALLEL_DIMS_ATTR)
            if not marked and len(loops) == 1 and isinstance(dims, DenseArrayBase):
                chain = _collapsible_chain(loops[0], list(dims.iter_values()))
                work = nest_work(loops[0]) if chain else None
                threads = threads_for(work, self.threads, self.min_work)
                # Collapse no more loops than it takes to give every thread
                # CHUNKS_PER_THREAD iterations: the inner loops keep constant bounds.
                keep, total = 0, 1
                for lp in chain:
                    keep += 1
                    total *= _trip_count(lp) or 0
                    if total >= CHUNKS_PER_THREAD * threads:
                        break
                if keep and threads > 1:  # else too little work to pay a wake-up
                    chains.append((chain[:keep], threads))
            index = 0
            for chain, threads in chains:
                iterations = 1
                for lp in chain:
                    iterations *= _trip_count(lp) or 0
                if iterations < 2:
                    continue  # nothing to split
                self._split(fn, chain, index, threads)
                index += 1

    def _split(self, fn: func.FuncOp, chain: list[scf.ForOp], index: int,
               threads: int) -> None:
        """Outline the loops `chain` (perfectly nested, outermost first) into a task
        over their collapsed iterations and call it through frame_rt.parallel_for."""
        outer = chain[0]
        # Values defined inside the nest: results of its ops and arguments of its blocks.
        inside: set[SSAValue] = set()
        for o in outer.walk():
            inside.update(o.results)
            for region in o.regions:
                for blk in region.blocks:
                    inside.update(blk.args)
        # Values the nest reads from outside it. Pure ops without regions (constants,
        # and views such as frame-gemm's collapse_shape / cast of C) are cloned into
        # the task, so that only the kernel's own arguments cross over: two task
        # arguments that were views of one buffer would be two `noalias` pointers to
        # the same memory.
        outside: list[SSAValue] = []
        for o in outer.walk():
            if o is outer:
                continue  # its bounds become the task's range
            outside += [v for v in o.operands if v not in inside and v not in outside]
        clones: list[Operation] = []
        args: list[SSAValue] = []

        def collect(v: SSAValue) -> None:
            owner = v.owner
            if isinstance(owner, Operation) and not owner.regions and \
                    owner.has_trait(NoMemoryEffect):
                if owner not in clones:
                    for operand in owner.operands:
                        collect(operand)
                    clones.append(owner)
            elif v not in args:
                args.append(v)

        for v in outside:
            collect(v)
        block = Block(arg_types=[*(a.type for a in args), IndexType(), IndexType()])
        for a, new in zip(args, block.args, strict=False):
            new.name_hint = a.name_hint
        lo, hi = block.args[-2], block.args[-1]
        lo.name_hint, hi.name_hint = "lo", "hi"
        mapping: dict[SSAValue, SSAValue] = dict(zip(args, block.args, strict=False))
        pool = _Constants(block)
        for c in clones:  # in an order where operands come first
            pool.clone(c, mapping)
        b = Builder(InsertPoint.at_end(block))
        trips = [_trip_count(lp) or 0 for lp in chain]
        if len(chain) == 1:
            body_block = _single_loop(b, pool, outer, lo, hi, mapping)
        else:
            body_block = _collapsed_nest(b, pool, chain, trips, lo, hi, mapping)
        body_builder = Builder(InsertPoint.at_end(body_block))
        for o in chain[-1].body.block.ops:
            body_builder.insert(o.clone(value_mapper=mapping))
        b.insert(func.ReturnOp())
        _erase_unused_pure(block)

        name = f"{fn.sym_name.data}__task{index}"
        task = func.FuncOp(name, func.FunctionType.from_lists(list(block.arg_types), []),
                           Region(block), visibility="private")
        for k in PROVENANCE_ATTRS:
            if k in fn.attributes:
                task.attributes[k] = fn.attributes[k]
        Rewriter.insert_op(task, InsertPoint.before(fn))

        count = 1
        for t in trips:
            count *= t
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        n = arith.ConstantOp(IntegerAttr(count, IndexType()))
        call = ParallelForOp(name, args, zero.result, n.result, threads)
        Rewriter.insert_op([zero, n, call], InsertPoint.before(outer))
        Rewriter.erase_op(outer, safe_erase=False)
        _erase_unused_pure(fn.body.blocks[0])  # the loop's bounds, moved views


class _Constants:
    """The top of a task's entry block: the pure definitions cloned from the kernel,
    then index constants, one op per value."""

    def __init__(self, block: Block) -> None:
        self.block = block
        self.values: dict[int, SSAValue] = {}
        self.last: Operation | None = None

    def _insert(self, op: Operation) -> None:
        where = InsertPoint.after(self.last) if self.last is not None else \
            InsertPoint.at_start(self.block)
        Rewriter.insert_op(op, where)
        self.last = op

    def clone(self, op: Operation, mapping: dict[SSAValue, SSAValue]) -> None:
        """Clone `op` (pure, no regions, operands mapped already) into the block."""
        new = op.clone(value_mapper=mapping)
        self._insert(new)
        for old, value in zip(op.results, new.results, strict=True):
            mapping[old] = value
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and \
                isinstance(op.result.type, IndexType):
            self.values.setdefault(op.value.value.data, new.results[0])

    def __call__(self, v: int) -> SSAValue:
        if v not in self.values:
            op = arith.ConstantOp(IntegerAttr(v, IndexType()))
            self._insert(op)
            self.values[v] = op.result
        return self.values[v]


def _new_loop(b: Builder, lb: SSAValue, ub: SSAValue, step: SSAValue,
              original: scf.ForOp, mapping: dict[SSAValue, SSAValue]) -> scf.ForOp:
    loop = b.insert(scf.ForOp(lb, ub, step, [], Block(arg_types=[IndexType()])))
    old_iv, iv = original.body.block.args[0], loop.body.block.args[0]
    iv.name_hint = old_iv.name_hint
    mapping[old_iv] = iv
    return loop


def _single_loop(b: Builder, const: _Constants, loop: scf.ForOp, lo: SSAValue,
                 hi: SSAValue, mapping: dict[SSAValue, SSAValue]) -> Block:
    """The iterations [lo, hi) of `loop` (constant lb and step: iteration t runs
    lb + t * step). Returns the new loop's body block, still empty."""
    lb, step = _const_int(loop.lb) or 0, _const_int(loop.step) or 1
    begin, end = lo, hi
    if step != 1:
        begin = b.insert(arith.MuliOp(begin, const(step))).result
        end = b.insert(arith.MuliOp(end, const(step))).result
    if lb != 0:
        begin = b.insert(arith.AddiOp(begin, const(lb))).result
        end = b.insert(arith.AddiOp(end, const(lb))).result
    return _new_loop(b, begin, end, const(step), loop, mapping).body.block


def _collapsed_nest(b: Builder, const: _Constants, chain: list[scf.ForOp],
                    trips: list[int], lo: SSAValue, hi: SSAValue,
                    mapping: dict[SSAValue, SSAValue]) -> Block:
    """Loops over the collapsed iterations [lo, hi) of `chain` (each from 0 step 1),
    in the original order: level k runs i_k over the values whose iterations meet
    [lo, hi), given the outer indices. Returns the innermost body block, still empty."""
    strides = [1] * len(chain)
    for k in range(len(chain) - 2, -1, -1):
        strides[k] = strides[k + 1] * trips[k + 1]
    blocks: list[Block] = []
    base: SSAValue | None = None  # linear iteration of the outer indices with i_k = 0
    for k, (lp, stride) in enumerate(zip(chain, strides, strict=True)):
        if base is None:
            first, past = lo, hi
        else:
            # first = max(lo - base, 0), past = min(hi - base, trips * stride)
            first = b.insert(arith.SubiOp(lo, base)).result
            first = b.insert(arith.MaxSIOp(first, const(0))).result
            past = b.insert(arith.SubiOp(hi, base)).result
            past = b.insert(arith.MinSIOp(past, const(trips[k] * stride))).result
        if stride != 1:  # [first, past) in units of this level: floor and ceiling
            first = b.insert(arith.DivUIOp(first, const(stride))).result
            bumped = b.insert(arith.AddiOp(past, const(stride - 1))).result
            past = b.insert(arith.DivUIOp(bumped, const(stride))).result
        loop = _new_loop(b, first, past, const(1), lp, mapping)
        blocks.append(loop.body.block)
        b = Builder(InsertPoint.at_end(loop.body.block))
        if lp is not chain[-1]:
            # Constants the original loop held (the innermost body is cloned whole).
            for o in lp.body.block.ops:
                if isinstance(o, arith.ConstantOp):
                    mapping[o.result] = b.insert(o.clone()).result
            scaled = b.insert(arith.MuliOp(loop.body.block.args[0], const(stride))).result
            base = scaled if base is None else b.insert(arith.AddiOp(base, scaled)).result
    for blk in blocks[:-1]:  # the innermost block gets the original body's yield
        blk.add_op(scf.YieldOp())
    return blocks[-1]
