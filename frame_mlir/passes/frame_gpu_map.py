"""frame-gpu-map: map each outlined kernel's loop nest onto a CUDA grid.

Expects: bufferized model functions whose linalg ops frame-outline-kernels moved into
private kernel functions (one `linalg.generic` / `linalg.fill` each, maybe behind
`memref.collapse_shape`s), called with `func.call`.

Does: every kernel becomes a `gpu.func ... kernel` in `gpu.module @frame_kernels`, and
every call of it a `gpu.launch_func` with a constant grid and block. Three forms:

* **threads** (every kernel not below): one thread per element of the output. The
  thread dims are the parallel loop dims each output map has as a plain result (and
  uses nowhere else), so two threads never write one element; the global thread id is
  split into them row-major, the last fastest (consecutive threads touch consecutive
  elements). The other dims are `scf.for` loops inside the thread, in their original
  order, so each element sees its updates in the CPU's order. When those loops are
  all reductions the output is carried in a register (`iter_args`), read before and
  written after them.
* **tree** (a sum over many elements into few outputs: a loss, a bias gradient): one
  block of 256 threads per output element. Thread t adds the terms t, t + 256, ... in
  order; the 256 partial sums are added pairwise in shared memory (128 apart, then
  64, ... 1), and thread 0 adds the total to the output's value. Every step has a
  fixed order, so two runs give bit-identical results. A sum is a body that ends in
  `addf(acc, x)` (either order) or `fma(a, b, acc)` with `acc`, the output's value,
  used nowhere else.
* **tiled** (contractions in GEMM form, `frame_gemm.analyze`: matmuls in every layout
  and convolutions, which read a zero-padded input through linear maps): a block of
  16 x 16 threads computes a 64 x 64 tile of C, each thread 4 x 4 elements (rows
  `ty + 16 i`, columns `tx + 16 j`: a warp stores runs of 16 consecutive columns) --
  or a 32 x 32 tile, 2 x 2 each, when 64 x 64 tiles would be too few blocks to fill
  a GPU (`tile_size`). The K dims advance 16 at a time: the block stages A's 64 x 16
  and B's 16 x 64 slices in shared memory (each thread loads 4 of each, zero outside
  the matrix), waits at a barrier, and accumulates from shared memory. Each element is summed in K order
  starting from its value in C, as the linalg op defines it.

Why: the loop nest is what a GPU must parallelize, and only the compiler knows which
loops write disjoint elements. Shared memory tiles cut global loads of a 64 x 64 tile
by 64x; trees turn a 60,000-term loss sum from one thread's sequential loop into a
block's.

Guarantees: no linalg op is left in a kernel; each launch covers its kernel's
iteration space exactly once; kernels that use shared memory name their buffers
`@<kernel>_smem_<n>` (`memref.global` in address space 3, in the gpu.module).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, func, gpu, math, memref, scf
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    f32,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from frame_mlir.passes.common import fail, provenance
from frame_mlir.passes.frame_gemm import Contraction, analyze

KERNEL_MODULE = "frame_kernels"
THREADS = 256
"""Threads per block of the threads and tree forms."""
TILE = 64
"""Rows and columns of C per block of the tiled form (16 x 16 threads, 4 x 4 each), or
half that (2 x 2 each) for products with fewer than `MIN_BLOCKS` such tiles."""
MIN_BLOCKS = 256
"""Blocks a tiled launch should have at least: two per multiprocessor of the largest
GPUs (132 on an H100) keeps every one busy."""
TILE_K = 16
"""K elements staged in shared memory per step of the tiled form."""
SHARED_SPACE = 3
"""NVVM's address space of shared memory: a `memref<..., 3>` lowers to `ptr addrspace(3)`."""
TREE_MIN_TERMS = 1024
"""Terms per output from which a sum becomes a tree (with few outputs, see `_form`)."""
TREE_MAX_OUTPUTS = 4096
GRID_AXIS_MAX = (2**31 - 1, 65535, 65535)


def _dim_of(expr: object) -> int | None:
    return expr.position if isinstance(expr, AffineDimExpr) else None


def thread_dims(op: linalg.GenericOp) -> list[int]:
    """The loop dims whose distinct values write distinct elements: every dim of an
    all-parallel op, else the parallel dims that every output map has as a plain result
    used nowhere else in that map. None (empty) when an input is an output read through another
    map."""
    its = [str(i.data) for i in op.iterator_types.data]
    maps = [m.data for m in op.indexing_maps.data]
    out_maps = maps[len(op.inputs):]
    n_in = len(op.inputs)
    for value, m in zip(op.inputs, maps[:n_in], strict=True):
        for out, om in zip(op.outputs, out_maps, strict=True):
            if value == out and m != om:
                return []  # reads what another iteration writes: one thread, in order
    out_args = op.body.block.args[n_in:]
    if all(it == "parallel" for it in its) and not any(a.uses for a in out_args):
        # An all-parallel op that only writes its outputs (a reshape through floordiv /
        # mod maps): iterations write distinct elements -- were two to write one, the
        # op's result would depend on the loop order. One that reads its output
        # accumulates into it, and may do so through a map that meets itself (an
        # interpolation's gradient): only the plain dims below are safe then.
        return list(range(len(its)))
    dims = []
    for d, it in enumerate(its):
        if it != "parallel":
            continue
        ok = True
        for m in out_maps:
            plain = [i for i, e in enumerate(m.results) if _dim_of(e) == d]
            others = [e for e in m.results if _dim_of(e) != d and d in e.used_dims()]
            if len(plain) != 1 or others:
                ok = False
        if ok:
            dims.append(d)
    return dims


def sum_body(op: linalg.GenericOp) -> bool:
    """Whether the body adds a term to the (single) output's value and uses that value
    nowhere else: `addf(acc, x)`, `addf(x, acc)` or `fma(a, b, acc)`."""
    if len(op.outputs) != 1:
        return False
    block = op.body.block
    acc = block.args[-1]
    yield_op = block.last_op
    if not isinstance(yield_op, linalg.YieldOp) or len(yield_op.operands) != 1:
        return False
    last = yield_op.operands[0].owner
    if len(list(acc.uses)) != 1 or not isinstance(last, Operation):
        return False
    if isinstance(last, arith.AddfOp):
        return acc in (last.lhs, last.rhs) and last.lhs != last.rhs
    if isinstance(last, math.FmaOp):
        return last.c == acc and acc not in (last.a, last.b)
    return False


# --- IR building ----------------------------------------------------------------------


class _Ir:
    """Index arithmetic, loops and branches at one insertion point."""

    def __init__(self, b: Builder):
        self.b = b

    def ins(self, op: Operation) -> Operation:
        return self.b.insert(op)

    def c(self, v: int) -> SSAValue:
        return self.ins(arith.ConstantOp(IntegerAttr(v, IndexType()))).results[0]

    def f(self, v: float, typ: Attribute = f32) -> SSAValue:
        return self.ins(arith.ConstantOp(FloatAttr(v, typ))).results[0]  # type: ignore[arg-type]

    def add(self, x: SSAValue, y: SSAValue | int) -> SSAValue:
        if isinstance(y, int):
            if y == 0:
                return x
            y = self.c(y)
        return self.ins(arith.AddiOp(x, y)).results[0]

    def mul(self, x: SSAValue, y: int) -> SSAValue:
        if y == 1:
            return x
        return self.ins(arith.MuliOp(x, self.c(y))).results[0]

    def div(self, x: SSAValue, y: int) -> SSAValue:
        return x if y == 1 else self.ins(arith.DivUIOp(x, self.c(y))).results[0]

    def rem(self, x: SSAValue, y: int) -> SSAValue:
        return self.ins(arith.RemUIOp(x, self.c(y))).results[0]

    def lt(self, x: SSAValue, y: SSAValue | int) -> SSAValue:
        if isinstance(y, int):
            y = self.c(y)
        return self.ins(arith.CmpiOp(x, y, "ult")).results[0]

    def and_(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.ins(arith.AndIOp(x, y)).results[0]

    def split(self, linear: SSAValue, sizes: Sequence[int]) -> list[SSAValue]:
        """`linear` (< prod(sizes)) as row-major indices over `sizes`."""
        out: list[SSAValue] = []
        rest = linear
        for i in range(len(sizes) - 1, -1, -1):
            if i == 0:
                out.append(rest)
            else:
                out.append(self.rem(rest, sizes[i]))
                rest = self.div(rest, sizes[i])
        return out[::-1]

    def for_(self, lb: int | SSAValue, ub: int | SSAValue, step: int,
             body: Callable[[_Ir, SSAValue, Sequence[SSAValue]], Sequence[SSAValue] | None],
             iter_args: Sequence[SSAValue] = ()) -> list[SSAValue]:
        block = Block(arg_types=[IndexType(), *(v.type for v in iter_args)])
        inner = _Ir(Builder(InsertPoint.at_end(block)))
        yielded = body(inner, block.args[0], block.args[1:]) or []
        inner.ins(scf.YieldOp(*yielded))
        lo = self.c(lb) if isinstance(lb, int) else lb
        hi = self.c(ub) if isinstance(ub, int) else ub
        loop = scf.ForOp(lo, hi, self.c(step), list(iter_args), block)
        self.ins(loop)
        return list(loop.results)

    def if_(self, cond: SSAValue, then: Callable[[_Ir], Sequence[SSAValue] | None],
            other: Callable[[_Ir], Sequence[SSAValue] | None] | None = None,
            types: Sequence[Attribute] = ()) -> list[SSAValue]:
        regions = []
        for fill in (then, other):
            block = Block()
            if fill is None:
                regions.append(Region(block) if types else Region())
                if types:
                    raise ValueError("an scf.if with results needs both branches")
                continue
            inner = _Ir(Builder(InsertPoint.at_end(block)))
            res = fill(inner) or []
            inner.ins(scf.YieldOp(*res))
            regions.append(Region(block))
        op = self.ins(scf.IfOp(cond, list(types), regions[0], regions[1]))
        return list(op.results)

    def thread(self, dim: str) -> SSAValue:
        return self.ins(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum[dim.upper()]))).results[0]

    def block(self, dim: str) -> SSAValue:
        return self.ins(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum[dim.upper()]))).results[0]

    def barrier(self) -> None:
        self.ins(gpu.BarrierOp())

    def apply(self, m: AffineMap, dims: Sequence[SSAValue]) -> list[SSAValue]:
        """The results of `m` at `dims`; a plain dim result is the dim's value itself."""
        out = []
        for e in m.results:
            d = _dim_of(e)
            if d is not None:
                out.append(dims[d])
                continue
            one = AffineMap(m.num_dims, 0, (e,))
            out.append(self.ins(affine.ApplyOp(list(dims), AffineMapAttr(one))).results[0])
        return out

    def load(self, mem: SSAValue, idx: Sequence[SSAValue]) -> SSAValue:
        return self.ins(memref.LoadOp.get(mem, list(idx))).results[0]

    def store(self, v: SSAValue, mem: SSAValue, idx: Sequence[SSAValue]) -> None:
        self.ins(memref.StoreOp.get(v, mem, list(idx)))


def _body(ir: _Ir, op: linalg.GenericOp, dims: Sequence[SSAValue],
          args: Sequence[SSAValue | None]) -> list[SSAValue]:
    """Clone `op`'s body at `ir` with its block arguments bound to `args` (None for an
    argument the body does not use); returns the yielded values."""
    block = op.body.block
    mapping: dict[SSAValue, SSAValue] = {
        b: v for b, v in zip(block.args, args, strict=True) if v is not None}
    for inner in block.ops:
        if isinstance(inner, linalg.YieldOp):
            return [mapping.get(v, v) for v in inner.operands]
        if isinstance(inner, linalg.IndexOp):
            mapping[inner.result] = dims[inner.dim.value.data]
            continue
        clone = inner.clone(value_mapper=mapping)
        ir.ins(clone)
        for old, new in zip(inner.results, clone.results, strict=True):
            mapping[old] = new
    raise AssertionError("linalg body without yield")


# --- the three forms ------------------------------------------------------------------


@dataclass
class Launch:
    """A kernel's launch shape."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def _as_generic(op: linalg.FillOp | linalg.GenericOp) -> linalg.GenericOp:
    if isinstance(op, linalg.GenericOp):
        return op
    out = op.outputs[0]
    typ = out.type
    assert isinstance(typ, MemRefType)
    rank = typ.get_num_dims()
    ident = AffineMapAttr(AffineMap.identity(rank))
    block = Block(arg_types=[typ.element_type])
    block.add_op(linalg.YieldOp(op.inputs[0]))
    return linalg.GenericOp([], [out], Region(block), [ident],
                            [linalg.IteratorTypeAttr.parallel()] * rank)


def _grid_1d(count: int, per_block: int) -> tuple[int, int, int]:
    blocks = max(1, -(-count // per_block))
    if blocks > GRID_AXIS_MAX[0]:
        raise ValueError(f"{count} threads need {blocks} blocks, more than a grid's "
                         f"{GRID_AXIS_MAX[0]}")
    return (blocks, 1, 1)


def _loop_dims(op: linalg.GenericOp) -> tuple[list[int], list[AffineMap], list[int], list[int]]:
    """(loop sizes, indexing maps, thread dims, the other dims in loop order)."""
    sizes = list(op.get_static_loop_ranges())
    tdims = thread_dims(op)
    return (sizes, [m.data for m in op.indexing_maps.data], tdims,
            [d for d in range(len(sizes)) if d not in tdims])


def _threads(ir: _Ir, op: linalg.GenericOp) -> Launch:
    sizes, maps, tdims, sdims = _loop_dims(op)
    n_in = len(op.inputs)
    count = prod(sizes[d] for d in tdims)
    its = [str(i.data) for i in op.iterator_types.data]
    out_maps = maps[n_in:]
    carried = bool(sdims) and all(its[d] == "reduction" for d in sdims) and all(
        not (set(sdims) & set().union(*(e.used_dims() for e in m.results)))
        for m in out_maps)

    gid = ir.add(ir.ins(arith.MuliOp(ir.block("x"), ir.c(THREADS))).results[0], ir.thread("x"))

    def inside(ir: _Ir) -> None:
        dims: list[SSAValue | None] = [None] * len(sizes)
        for d, v in zip(tdims, ir.split(gid, [sizes[d] for d in tdims]) if tdims else [],
                        strict=True):
            dims[d] = v

        def element(ir: _Ir, acc: Sequence[SSAValue] | None) -> list[SSAValue]:
            full = [v for v in dims]
            assert all(v is not None for v in full)
            vals = [ir.load(v, ir.apply(m, full)) for v, m in  # type: ignore[arg-type]
                    zip(op.inputs, maps[:n_in], strict=True)]
            if acc is None:
                # an output the body does not read is not loaded
                out_args = op.body.block.args[n_in:]
                outs = [ir.load(v, ir.apply(m, full)) if a.uses else None  # type: ignore[arg-type]
                        for v, m, a in zip(op.outputs, out_maps, out_args, strict=True)]
            else:
                outs = list(acc)
            res = _body(ir, op, full, [*vals, *outs])  # type: ignore[arg-type]
            if acc is None:
                for v, mem, m in zip(res, op.outputs, out_maps, strict=True):
                    ir.store(v, mem, ir.apply(m, full))  # type: ignore[arg-type]
            return res

        def nest(ir: _Ir, k: int, acc: Sequence[SSAValue] | None) -> list[SSAValue]:
            if k == len(sdims):
                return element(ir, acc)
            d = sdims[k]

            def body(ir: _Ir, iv: SSAValue, it: Sequence[SSAValue]) -> list[SSAValue]:
                dims[d] = iv
                res = nest(ir, k + 1, it if acc is not None else None)
                return res if acc is not None else []

            return ir.for_(0, sizes[d], 1, body, list(acc) if acc is not None else ())

        if carried:
            zero = [ir.c(0)] * len(sizes)
            base = list(dims)
            for d in sdims:
                base[d] = zero[d]
            init = [ir.load(v, ir.apply(m, base)) for v, m in  # type: ignore[arg-type]
                    zip(op.outputs, out_maps, strict=True)]
            res = nest(ir, 0, init)
            for v, mem, m in zip(res, op.outputs, out_maps, strict=True):
                ir.store(v, mem, ir.apply(m, base))  # type: ignore[arg-type]
        else:
            nest(ir, 0, None)

    if count % THREADS == 0:
        inside(ir)
    else:
        ir.if_(ir.lt(gid, count), lambda ir: inside(ir))
    return Launch(_grid_1d(count, THREADS), (THREADS, 1, 1))


def _tree(ir: _Ir, op: linalg.GenericOp, smem: Callable[[int], SSAValue]) -> Launch:
    sizes, maps, tdims, sdims = _loop_dims(op)
    n_in = len(op.inputs)
    outputs = prod(sizes[d] for d in tdims)
    terms = prod(sizes[d] for d in sdims)
    elem = op.outputs[0].type.element_type  # type: ignore[attr-defined]
    buf = smem(THREADS)
    t = ir.thread("x")
    dims: list[SSAValue | None] = [None] * len(sizes)
    for d, v in zip(tdims, ir.split(ir.block("x"), [sizes[d] for d in tdims]) if tdims else [],
                    strict=True):
        dims[d] = v

    def term(ir: _Ir, s: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
        full = list(dims)
        for d, v in zip(sdims, ir.split(s, [sizes[d] for d in sdims]), strict=True):
            full[d] = v
        vals = [ir.load(v, ir.apply(m, full)) for v, m in  # type: ignore[arg-type]
                zip(op.inputs, maps[:n_in], strict=True)]
        return _body(ir, op, full, [*vals, acc[0]])  # type: ignore[arg-type]

    partial = ir.for_(t, terms, THREADS, term, [ir.f(0.0, elem)])[0]
    wide = partial
    if elem != f32:  # the tree adds in f32, as the CPU's f32 accumulators do
        wide = ir.ins(arith.ExtFOp(partial, f32)).results[0]
    ir.store(wide, buf, [t])
    ir.barrier()
    step = THREADS // 2
    while step >= 1:
        def add(ir: _Ir, step: int = step) -> None:
            other = ir.add(t, step)
            s = ir.ins(arith.AddfOp(ir.load(buf, [t]), ir.load(buf, [other]))).results[0]
            ir.store(s, buf, [t])
        ir.if_(ir.lt(t, step), add)
        ir.barrier()
        step //= 2

    def finish(ir: _Ir) -> None:
        base = list(dims)
        zero = ir.c(0)
        for d in sdims:
            base[d] = zero
        idx = ir.apply(maps[n_in], base)  # type: ignore[arg-type]
        total = ir.load(buf, [zero])
        if elem != f32:
            total = ir.ins(arith.TruncFOp(total, elem)).results[0]
        init = ir.load(op.outputs[0], idx)
        ir.store(ir.ins(arith.AddfOp(init, total)).results[0], op.outputs[0], idx)

    ir.if_(ir.lt(t, 1), finish)
    return Launch(_grid_1d(outputs, 1), (THREADS, 1, 1))


def tile_size(g: Contraction) -> int:
    """Rows and columns of C per block: 64 (4 x 4 per thread) when that still gives
    `MIN_BLOCKS` blocks, else 32 (2 x 2 per thread): a 256 x 1024 product has 64 tiles of
    64 x 64, too few to occupy a GPU of 100+ multiprocessors, and 256 of 32 x 32."""
    tiles = -(-g.m // TILE) * -(-g.n // TILE) * max(1, prod(g.sizes[d] for d in g.outer))
    return TILE if tiles >= MIN_BLOCKS else TILE // 2


def _tiled(ir: _Ir, g: Contraction, smem: Callable[[int], SSAValue]) -> Launch:
    tile = tile_size(g)
    per = tile // 16  # elements per thread and axis
    a_buf, b_buf = smem(tile * TILE_K), smem(TILE_K * tile)
    rows = [g.sizes[d] for d in g.rows]
    cols = [g.sizes[d] for d in g.cols]
    red = [g.sizes[d] for d in g.red]
    outer = [g.sizes[d] for d in g.outer]
    m, n, k = g.m, g.n, g.k
    tx, ty = ir.thread("x"), ir.thread("y")
    tid = ir.add(ir.mul(ty, 16), tx)
    m0 = ir.mul(ir.block("y"), tile)
    n0 = ir.mul(ir.block("x"), tile)

    def offset(opnd: object, group: Sequence[int], values: Sequence[SSAValue],
               at: _Ir | None = None) -> SSAValue:
        """sum of coef * index over `group` (built at `at`, by default the kernel's
        entry)."""
        ir_ = at or ir
        acc = ir_.c(0)
        for d, v in zip(group, values, strict=True):
            c = opnd.coef.get(d, 0)  # type: ignore[attr-defined]
            if c:
                acc = ir_.add(acc, ir_.mul(v, c))
        return acc

    # the outer (batch) dims come from blockIdx.z
    outer_vals = ir.split(ir.block("z"), outer) if outer else []
    a_base = ir.add(offset(g.a, g.outer, outer_vals), g.a.const)
    b_base = ir.add(offset(g.b, g.outer, outer_vals), g.b.const)
    c_base = ir.add(offset(g.c, g.outer, outer_vals), g.c.const)
    a_flat = _flat(ir, g.a_value)
    b_flat = _flat(ir, g.b_value)
    c_flat = _flat(ir, g.c_value)

    # What each thread loads: A element e = tid + 256 r is (row e // TILE_K, k e % TILE_K)
    # of the tile (consecutive threads read consecutive k); B element e is
    # (k e // tile, column e % tile). Their row / column offsets do not change with k.
    loads = tile * TILE_K // THREADS
    a_rows, b_cols = [], []
    for r in range(loads):
        e = ir.add(tid, THREADS * r)
        row = ir.div(e, TILE_K)
        mm = ir.add(m0, row)
        kk = ir.rem(e, TILE_K)
        a_rows.append((row, kk, ir.lt(mm, m),
                       offset(g.a, g.rows, ir.split(ir.ins(arith.MinUIOp(mm, ir.c(m - 1))).results[0], rows))))
        col = ir.rem(e, tile)
        nn = ir.add(n0, col)
        kb = ir.div(e, tile)
        b_cols.append((col, kb, ir.lt(nn, n),
                       offset(g.b, g.cols, ir.split(ir.ins(arith.MinUIOp(nn, ir.c(n - 1))).results[0], cols))))
    # Each thread's C elements: rows ty + 16 i, columns tx + 16 j.
    c_rows = [ir.add(m0, ir.add(ty, 16 * i)) for i in range(per)]
    c_cols = [ir.add(n0, ir.add(tx, 16 * j)) for j in range(per)]
    c_row_ok = [ir.lt(r, m) for r in c_rows]
    c_col_ok = [ir.lt(c, n) for c in c_cols]
    c_row_off = [offset(g.c, g.rows, ir.split(ir.ins(arith.MinUIOp(r, ir.c(m - 1))).results[0], rows))
                 for r in c_rows]
    c_col_off = [offset(g.c, g.cols, ir.split(ir.ins(arith.MinUIOp(c, ir.c(n - 1))).results[0], cols))
                 for c in c_cols]
    c_addr = [[ir.add(c_base, ir.add(c_row_off[i], c_col_off[j])) for j in range(per)]
              for i in range(per)]
    c_ok = [[ir.and_(c_row_ok[i], c_col_ok[j]) for j in range(per)] for i in range(per)]
    zero = ir.f(0.0)

    def guarded_load(ir: _Ir, ok: SSAValue, mem: SSAValue, addr: SSAValue) -> SSAValue:
        return ir.if_(ok, lambda ir: [ir.load(mem, [addr])], lambda ir: [zero], [f32])[0]

    init = [guarded_load(ir, c_ok[i][j], c_flat, c_addr[i][j])
            for i in range(per) for j in range(per)]

    def stage(ir: _Ir, k0: SSAValue, kl: SSAValue, ok: SSAValue, off: SSAValue,
              opnd: object, base: SSAValue, src: SSAValue, dst: SSAValue,
              slot: SSAValue) -> None:
        """Element k0 + kl of one operand's row or column (at `off`) into shared memory
        at `slot`; zero past K or outside the matrix (`ok`)."""
        kg = ir.add(k0, kl)
        kc = ir.ins(arith.MinUIOp(kg, ir.c(k - 1))).results[0]
        addr = ir.add(base, ir.add(off, offset(opnd, g.red, ir.split(kc, red), ir)))
        ir.store(guarded_load(ir, ir.and_(ok, ir.lt(kg, k)), src, addr), dst, [slot])

    def k_step(ir: _Ir, k0: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
        for r in range(loads):
            row, kk, ok, row_off = a_rows[r]
            # A staged k-major: As[kk][row] (a row of the tile per k is contiguous)
            stage(ir, k0, kk, ok, row_off, g.a, a_base, a_flat, a_buf,
                  ir.add(ir.mul(kk, tile), row))
            col, kb, ok_b, col_off = b_cols[r]
            stage(ir, k0, kb, ok_b, col_off, g.b, b_base, b_flat, b_buf,
                  ir.add(ir.mul(kb, tile), col))
        ir.barrier()

        def kk_step(ir: _Ir, kk: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
            a_row = ir.mul(kk, tile)
            av = [ir.load(a_buf, [ir.add(a_row, ir.add(ty, 16 * i))]) for i in range(per)]
            bv = [ir.load(b_buf, [ir.add(a_row, ir.add(tx, 16 * j))]) for j in range(per)]
            return [ir.ins(math.FmaOp(av[i], bv[j], acc[i * per + j])).results[0]
                    for i in range(per) for j in range(per)]

        out = ir.for_(0, TILE_K, 1, kk_step, acc)
        ir.barrier()
        return out

    acc = ir.for_(0, k, TILE_K, k_step, init)
    for i in range(per):
        for j in range(per):
            def st(ir: _Ir, i: int = i, j: int = j) -> None:
                ir.store(acc[i * per + j], c_flat, [c_addr[i][j]])
            ir.if_(c_ok[i][j], st)
    tiles = (-(-n // tile), -(-m // tile), max(1, prod(outer)))
    if tiles[1] > GRID_AXIS_MAX[1] or tiles[2] > GRID_AXIS_MAX[2]:
        raise ValueError(f"a {m} x {n} x {k} contraction (batch {prod(outer)}) needs a grid "
                         f"of {tiles}, beyond (2^31-1, 65535, 65535)")
    return Launch(tiles, (16, 16, 1))


def _flat(ir: _Ir, value: SSAValue) -> SSAValue:
    typ = value.type
    assert isinstance(typ, MemRefType)
    rank = typ.get_num_dims()
    if rank == 1:
        return value
    from frame_mlir.passes.common import collapse_shape

    return ir.ins(collapse_shape(value, [range(rank)])).results[0]


def _form(op: linalg.GenericOp) -> str:
    """Which form maps `op`: "tiled", "tree" or "threads"."""
    g = analyze(op)
    if g is not None and g.m * g.n >= 256 and g.k >= TILE_K:
        return "tiled"
    sizes, _, tdims, sdims = _loop_dims(op)
    its = [str(i.data) for i in op.iterator_types.data]
    if (sdims and all(its[d] == "reduction" for d in sdims) and sum_body(op)
            and not any(set(sdims) & m.data.used_dims() for m in
                        op.indexing_maps.data[len(op.inputs):])
            and prod(sizes[d] for d in sdims) >= TREE_MIN_TERMS
            and prod(sizes[d] for d in tdims) <= TREE_MAX_OUTPUTS):
        return "tree"
    return "threads"


@dataclass(frozen=True)
class FrameGpuMap(ModulePass):
    """Map every outlined kernel onto a grid of blocks and threads (gpu.func) and every
    call of it to a `gpu.launch_func`."""

    name = "frame-gpu-map"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        kernels = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)
                   and f.sym_visibility is not None and f.sym_visibility.data == "private"
                   and f.body.blocks and any(isinstance(o, linalg.GenericOp | linalg.FillOp)
                                             for o in f.body.block.ops)}
        if not kernels:
            return
        gmod_block = Block()
        launches: dict[str, Launch] = {}
        funcs: list[Operation] = []
        for name, kernel in kernels.items():
            gfn, launch, globals_ = self._map(kernel)
            gmod_block.add_ops(globals_)  # the shared buffers first, then the kernels
            funcs.append(gfn)
            launches[name] = launch
            kernel.detach()
            kernel.erase()
        gmod_block.add_ops(funcs)
        gmod = gpu.ModuleOp(StringAttr(KERNEL_MODULE), Region(gmod_block))  # type: ignore[arg-type]
        op.body.block.add_op(gmod)
        op.attributes["gpu.container_module"] = UnitAttr()
        for fn in op.ops:
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            for call in list(fn.walk()):
                if isinstance(call, func.CallOp) and call.callee.root_reference.data in launches:
                    self._launch(call, launches[call.callee.root_reference.data])
                elif not isinstance(call, func.FuncOp | func.ReturnOp | func.CallOp
                                    | arith.ConstantOp | memref.ViewOp
                                    | memref.CollapseShapeOp | gpu.LaunchFuncOp):
                    raise fail(self.name, call, f"{call.name} in a host function is not "
                               "supported by the cuda target (expected kernel calls, views "
                               "and constants)", fn.sym_name.data)

    def _launch(self, call: func.CallOp, launch: Launch) -> None:
        b = Builder(InsertPoint.before(call))
        vals = [b.insert(arith.ConstantOp(IntegerAttr(v, IndexType()))).results[0]
                for v in (*launch.grid, *launch.block)]
        ref = SymbolRefAttr(KERNEL_MODULE, [call.callee.root_reference.data])
        new = gpu.LaunchFuncOp(ref, vals[:3], vals[3:], kernelOperands=list(call.arguments))
        new.attributes.update(provenance(call))
        Rewriter.replace_op(call, new)

    def _map(self, kernel: func.FuncOp) -> tuple[gpu.FuncOp, Launch, list[Operation]]:
        name = kernel.sym_name.data
        types = list(kernel.function_type.inputs.data)
        block = Block(arg_types=types)
        mapping: dict[SSAValue, SSAValue] = dict(zip(kernel.body.block.args, block.args,
                                                     strict=True))
        b = Builder(InsertPoint.at_end(block))
        ir = _Ir(b)
        globals_: list[Operation] = []

        def smem(elements: int) -> SSAValue:
            sym = f"{name}_smem_{len(globals_)}"
            typ = MemRefType(f32, [elements], memory_space=IntegerAttr(SHARED_SPACE, i64))
            globals_.append(memref.GlobalOp.get(StringAttr(sym), typ, UnitAttr(),
                                                alignment=16))
            return ir.ins(memref.GetGlobalOp(sym, typ)).results[0]

        launch: Launch | None = None
        form = "threads"
        for inner in kernel.body.block.ops:
            if isinstance(inner, func.ReturnOp):
                continue
            if isinstance(inner, linalg.GenericOp | linalg.FillOp):
                clone = inner.clone(value_mapper=mapping)
                generic = _as_generic(clone)
                form = _form(generic)
                try:
                    if form == "tiled":
                        g = analyze(generic)
                        assert g is not None
                        launch = _tiled(ir, g, smem)
                    elif form == "tree":
                        launch = _tree(ir, generic, smem)
                    else:
                        launch = _threads(ir, generic)
                except ValueError as err:
                    raise fail(self.name, inner, str(err), name) from None
                clone.erase()
                if generic is not clone:
                    generic.erase()
                continue
            clone = inner.clone(value_mapper=mapping)
            b.insert(clone)
            for old, new in zip(inner.results, clone.results, strict=True):
                mapping[old] = new
        b.insert(gpu.ReturnOp([]))
        assert launch is not None
        gfn = gpu.FuncOp(name, (types, []), Region(block), kernel=True,
                         known_block_size=list(launch.block))
        gfn.attributes["frame.gpu.grid"] = DenseArrayBase.from_list(i64, list(launch.grid))
        gfn.attributes["frame.gpu.form"] = StringAttr(form)
        gfn.attributes.update(provenance(kernel))
        return gfn, launch, globals_
