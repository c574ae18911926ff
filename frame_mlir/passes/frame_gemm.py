"""frame-gemm: contraction kernels as packed, cache-blocked GEMMs with a vector micro-kernel.

Expects: outlined kernels (`frame-outline-kernels`): a private `func.func` whose body is
one `linalg.generic` on f32 memrefs (plus constants) computing a contraction

    C[out(d)] = fma(A[a(d)], B[b(d)], C[out(d)])      summed over the reduction dims,

where the output map is a projection of the loop dims and the input maps are affine
(no floordiv/mod). Matmuls in all their layouts (`X·W`, `Xᵀ·dY`, `dY·Wᵀ`) and the
im2col forms of convolution (`convert-frame-to-linalg`) have this shape. The kernel
must be called from functions that own an arena (`frame.arena`). The generic may be
followed by elementwise generics over C's shape (an epilogue, see
`frame-fuse-gemm-epilogue`): they run on each block of C once it is final.

Does: classifies every loop dim by the operands that use it -- rows (M: used by C and
one input, "A"), columns (N: used by C and the other input, "B"), reduction (K: used by
A and B) -- and collapses each class to one index, peeling leading dims into outer
loops until the collapsed index addresses every operand with a single stride. Then
BLIS-style, for each task of a `frame.parallel` loop (tasks take ranges of the first
outer dim, of column panels or of row panels, `_task_split`; as many as the work pays
threads for, `gemm_threads`):

    for outer dims:  for jc in N step NC:  for pc in K step KC:
      pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels  (zero-padded)
      for ic in M step MC:
        pack A[ic:ic+mc, pc:pc+kc] into MR-tall panels (zero-padded)
        for each MR x NR tile:  acc = C tile; for k < kc: acc += a(k) * b(k); C tile = acc

Outer dims that one input does not depend on move inside, after that input is packed
(`place_outer`): an A-only dim between B's packing and the ic loop, a B-only dim (a
convolution's batch, whose weights are A) between A's packing and the tiles
(`for ic: pack A; for n: pack B; tiles`), so that an input is not packed again for
every index of a dim it does not depend on. When the outer dims are all B-only and C
has few columns per outer index (a deep convolution layer's 2 x 2 images: 4 columns;
7 x 7: 49, three vectors and one column), they become columns instead
(`gather_columns`, when that makes 1.25x fewer column vectors): the GEMM runs on a
contiguous copy of C in the scratch, whose tiles are then full.

Packing is skipped where it costs more than it saves: an A that needs no offset table
and would meet few B vectors is read in place by micro-kernels with its strides built in
(`_direct_a`); a B whose columns go through a table but run contiguously along an image
row is copied a vector per run (`_run_width`).

The micro-kernel keeps MR x NR/L accumulators in `vector<Lxf32>` registers across the
k loop (one `vector.fma` per accumulator and k, B read as NR/L vector loads, A as MR
broadcasts). Tiles on the edges of C go through a zero-padded scratch tile. The packed
panels and the edge tile live in scratch that the pass appends to each calling
function's arena (one slot per task), passed to the kernel as a new last argument.

A kernel marked `frame.c_dead` (`C_DEAD_ATTR`, by `frame-fuse-gemm-epilogue`: C is a
zero-filled temporary that nothing but the epilogue reads, as a weight's gradient
feeding its SGD update in place) with a single k block keeps each tile of C in the
scratch tile: the micro-kernel writes it there, the epilogue reads it there, and C
itself is never stored (a 1024 x 1024 gradient: 4 MiB of stores less per step).

Options: `lanes` (L: f32 lanes of the widest vector register), `acc` (vector registers
for accumulators), `l1`/`l2`/`l3` (cache bytes, for the block sizes), `threads` (tasks),
`min_task_macs` (multiply-adds per thread, `gemm_threads`), `min_flops` (smaller
contractions stay with the plain loops). The pipeline sets them
from the host (`frame_mlir.target.host`); lit tests set them explicitly.

An epilogue runs per MR x NR tile right after the tile's last k block when what one
index of the outer dims touches of C and its operands fits in half of L2 (they stay
cached), else per MC x NC block, row by row (long
streams of operands from memory); after the partial sums for split-K. An epilogue that
does not address its operands with one stride over C's rows and one over its columns
stays behind the GEMM as plain loops.

Guarantees: every element of C is accumulated in the same order as the plain loops
(k ascending, accumulators loaded from C at each k block, one fma per step), so results
are bit-identical to the untiled kernel whatever the block sizes, vector width or task
count. Other kernels are left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import prod

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    UnitAttr,
    VectorType,
    f32,
    i8,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from frame_mlir.dialects.frame_rt import PrefetchOp
from frame_mlir.passes.common import arena_arg_index, collapse_shape
from frame_mlir.passes.frame_bufferize import ALIGN
from frame_mlir.passes.frame_parallelize import PARALLEL_ATTR, PARALLEL_THREADS_ATTR
from frame_mlir.passes.frame_profile_kernels import erase_call, is_profile_call
from frame_mlir.passes.llvm_common import static_strides

Index = int | SSAValue

C_DEAD_ATTR = "frame.c_dead"
"""On a GEMM kernel with an epilogue: C's values are read by nothing but the epilogue
(and C starts from a zero fill), so they need not be stored (see the module doc)."""

FAST_PACK_MIN = 1 << 15
"""Elements of B (per call) from which its packing gets the vector paths (`_run_width`,
`_k_run`): below, packing B is cheap anyway and the paths would only add code to
compile (a TransformerEncoderBlock's products have 1-2K)."""


# --- analysis -------------------------------------------------------------------------


def _linear(expr: AffineExpr) -> tuple[dict[int, int], int] | None:
    """`expr` as (dim -> coefficient, constant), or None if it is not linear."""
    if isinstance(expr, AffineDimExpr):
        return {expr.position: 1}, 0
    if isinstance(expr, AffineConstantExpr):
        return {}, expr.value
    if isinstance(expr, AffineBinaryOpExpr):
        lhs, rhs = _linear(expr.lhs), _linear(expr.rhs)
        if lhs is None or rhs is None:
            return None
        if expr.kind == AffineBinaryOpKind.Add:
            coef = dict(lhs[0])
            for d, c in rhs[0].items():
                coef[d] = coef.get(d, 0) + c
            return coef, lhs[1] + rhs[1]
        if expr.kind == AffineBinaryOpKind.Mul:
            if not rhs[0]:
                return {d: c * rhs[1] for d, c in lhs[0].items()}, lhs[1] * rhs[1]
            if not lhs[0]:
                return {d: c * lhs[1] for d, c in rhs[0].items()}, lhs[1] * rhs[1]
    return None


@dataclass
class _Operand:
    """An operand's flat offset as a linear function of the loop dims."""

    coef: dict[int, int]
    const: int

    def stride(self, group: Sequence[int], sizes: Sequence[int]) -> int | None:
        """The single stride with which `group` (outer to inner) addresses this operand
        when collapsed, or None if no single stride does."""
        if not group:
            return 0
        s = self.coef.get(group[-1], 0)
        expect = s
        for d in reversed(group):
            if self.coef.get(d, 0) != expect:
                return None
            expect *= sizes[d]
        return s


def _delinearized(m: AffineMap, shape: Sequence[int], strides: Sequence[int],
                  sizes: Sequence[int]) -> _Operand | None:
    """The flat offset `L` of a map that delinearises one linear index `L` over a
    row-major `shape` -- result r `(L floordiv strides[r]) mod shape[r]`, as
    `frame-fold-movement` reads through a reshape -- when `L` stays within the memref
    for every point of the loops (`sizes`): the digits then rebuild `L` exactly."""
    lin = None
    for e, st, n in zip(m.results, strides, shape, strict=True):
        if not (isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Mod and
                isinstance(e.rhs, AffineConstantExpr) and e.rhs.value == n):
            return None
        inner = e.lhs
        if isinstance(inner, AffineBinaryOpExpr) and \
                inner.kind == AffineBinaryOpKind.FloorDiv:
            if not isinstance(inner.rhs, AffineConstantExpr) or inner.rhs.value != st:
                return None
            inner = inner.lhs
        elif st != 1:
            return None
        here = _linear(inner)
        if here is None or (lin is not None and here != lin):
            return None
        lin = here
    if lin is None:
        return None
    coef, const = lin
    lo = const + sum(c * (sizes[d] - 1) for d, c in coef.items() if c < 0)
    hi = const + sum(c * (sizes[d] - 1) for d, c in coef.items() if c > 0)
    if lo < 0 or hi >= prod(shape):
        return None
    return _Operand({d: c for d, c in coef.items() if c}, const)


def operand_offsets(m: AffineMap, typ: MemRefType, sizes: Sequence[int] | None = None
                    ) -> _Operand | None:
    """The flat offset at which map `m` addresses a row-major memref of type `typ`, as a
    linear function of the loops, or None if it is not one. With the loops' `sizes`, a
    map that delinearises one linear index (`_delinearized`) counts as linear."""
    try:
        strides = static_strides(typ)
    except PassFailedException:  # not a plain row-major memref: not for this pass
        return None
    if sizes is not None and any(_linear(e) is None for e in m.results):
        return _delinearized(m, typ.get_shape(), strides, sizes)
    coef: dict[int, int] = {}
    const = 0
    for e, st in zip(m.results, strides, strict=True):
        lin = _linear(e)
        if lin is None:
            return None
        for d, c in lin[0].items():
            coef[d] = coef.get(d, 0) + c * st
        const += lin[1] * st
    return _Operand({d: c for d, c in coef.items() if c}, const)


@dataclass
class Gather:
    """C's columns gathered (`gather_columns`): the GEMM works on a contiguous M x N
    copy of C in the scratch; `c` addresses the real C (its columns through a table,
    its rows with one stride)."""

    c: _Operand
    row_stride: int


@dataclass
class Contraction:
    """A kernel's contraction, in GEMM terms (see the module docstring)."""

    sizes: tuple[int, ...]  # every loop dim's trip count
    outer: list[int]  # dims iterated outside the GEMM, in loop order
    rows: list[int]  # M dims, outer to inner
    cols: list[int]  # N dims
    red: list[int]  # K dims
    a: _Operand  # the rows operand
    b: _Operand  # the columns operand
    c: _Operand
    a_value: SSAValue
    b_value: SSAValue
    c_value: SSAValue
    out_dims: list[int]  # the loop dim of each of C's dims, in order
    gather: Gather | None = None  # C is worked on as a contiguous copy (`c` addresses it)

    @property
    def m(self) -> int:
        return prod(self.sizes[d] for d in self.rows)

    @property
    def n(self) -> int:
        return prod(self.sizes[d] for d in self.cols)

    @property
    def k(self) -> int:
        return prod(self.sizes[d] for d in self.red)


def is_fma_body(op: linalg.GenericOp) -> bool:
    """Whether `op` has two inputs, one output and the body `yield fma(a, b, c)` (the
    inputs in either order, the output accumulated): a contraction's, for this pass."""
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        return False
    body = list(op.body.block.ops)
    args = op.body.block.args
    if len(body) != 2 or not isinstance(body[0], math.FmaOp) or \
            not isinstance(body[1], linalg.YieldOp):
        return False
    fma = body[0]
    return fma.c == args[2] and {fma.a, fma.b} == {args[0], args[1]} and \
        list(body[1].operands) == [fma.result]


def analyze(op: linalg.GenericOp) -> Contraction | None:
    """The GEMM form of `op`, or None if it is not a contraction this pass handles."""
    if not is_fma_body(op):
        return None
    vals = [*op.inputs, *op.outputs]
    if not all(isinstance(v.type, MemRefType) and v.type.element_type == f32 for v in vals):
        return None
    sizes = tuple(op.get_static_loop_ranges())
    maps = [m.data for m in op.indexing_maps.data]
    ops_ = [operand_offsets(m, v.type, sizes) for m, v in zip(maps, vals, strict=True)]  # type: ignore[arg-type]
    if any(o is None for o in ops_):
        return None
    a, b, c = ops_
    assert a is not None and b is not None and c is not None
    out_dims = []
    for e in maps[2].results:
        if not isinstance(e, AffineDimExpr):
            return None
        out_dims.append(e.position)
    if len(set(out_dims)) != len(out_dims):
        return None
    its = [str(i.data) for i in op.iterator_types.data]
    kind: dict[int, str] = {}
    for d in range(len(sizes)):
        ua, ub = d in a.coef, d in b.coef
        if d in out_dims:
            if its[d] != "parallel":
                return None
            kind[d] = "both" if ua and ub else "a" if ua else "b" if ub else "none"
            if kind[d] == "none":
                return None
        else:
            if its[d] != "reduction" or not (ua and ub):
                return None
            kind[d] = "k"
    # Columns: the trailing output dims used by one input; rows: the run before them
    # used by the other. C is then [outer..., rows, cols] contiguous.
    last = kind[out_dims[-1]]
    if last not in ("a", "b"):
        return None
    pos = len(out_dims)
    while pos > 0 and kind[out_dims[pos - 1]] == last:
        pos -= 1
    cols = out_dims[pos:]
    other = "b" if last == "a" else "a"
    end = pos
    while pos > 0 and kind[out_dims[pos - 1]] == other:
        pos -= 1
    rows = out_dims[pos:end]
    outer = out_dims[:pos]
    red = [d for d in range(len(sizes)) if kind[d] == "k"]
    row_op, col_op = (b, a) if last == "a" else (a, b)
    row_val, col_val = (vals[1], vals[0]) if last == "a" else (vals[0], vals[1])
    if not cols or not red:
        return None
    # C is [outer..., rows, cols] in that order, so both collapse with one stride each;
    # the inputs may need offset tables (see `_Addr`). Offsets must fit in int32.
    if any(prod(v.type.get_shape()) >= 2**31 for v in vals):  # type: ignore[attr-defined]
        return None
    return Contraction(sizes, outer, rows, cols, red, row_op, col_op, c,
                       row_val, col_val, vals[2], out_dims)


@dataclass
class Epilogue:
    """Elementwise generics applied to each element of C once it is final (see
    `frame-fuse-gemm-epilogue`): `operands[e][p]` addresses operand p (inputs, then the
    output) of `ops[e]` as a linear function of the contraction's loop dims."""

    ops: list[linalg.GenericOp]
    operands: list[list[_Operand]]


def epilogue_operands(g: Contraction, op: linalg.GenericOp, identity: Sequence[bool]
                      ) -> list[_Operand] | None:
    """How epilogue op `op` addresses its operands (inputs, then the output) in terms of
    `g`'s loop dims, or None if it cannot run per element of C: it must be all-parallel
    over C's shape with one output, read the operands flagged in `identity` through the
    identity map (C, and what earlier epilogue ops wrote), and address every operand
    with a single stride over C's rows and one over its columns."""
    c_shape = [g.sizes[d] for d in g.out_dims]
    if len(op.outputs) != 1 or op.results or \
            any(str(i.data) != "parallel" for i in op.iterator_types.data) or \
            list(op.get_static_loop_ranges()) != c_shape:
        return None
    ident_map = AffineMap.identity(len(c_shape))
    vals = [*op.inputs, *op.outputs]
    operands = []
    for v, m, ident in zip(vals, (m.data for m in op.indexing_maps.data), identity,
                           strict=True):
        if not isinstance(v.type, MemRefType) or v.type.element_type != f32:
            return None
        if ident and (m != ident_map or list(v.type.get_shape()) != c_shape):
            return None
        opnd = operand_offsets(m, v.type)
        if opnd is None:
            return None
        # The op's loop p is C's dim p, which is the contraction's loop out_dims[p].
        opnd = _Operand({g.out_dims[p]: c for p, c in opnd.coef.items()}, opnd.const)
        if opnd.stride(g.rows, g.sizes) is None or opnd.stride(g.cols, g.sizes) is None:
            return None
        operands.append(opnd)
    return operands


def analyze_epilogue(g: Contraction, ops: Sequence[linalg.GenericOp]) -> Epilogue | None:
    """`ops` (in order) as an epilogue of `g`, or None if one of them does not fit
    `epilogue_operands`; the output is always read and written through the identity."""
    written: list[SSAValue] = [g.c_value]
    operands: list[list[_Operand]] = []
    for op in ops:
        vals = [*op.inputs, *op.outputs]
        per_op = epilogue_operands(g, op, [v in written or v is vals[-1] for v in vals])
        if per_op is None:
            return None
        operands.append(per_op)
        written.append(op.outputs[0])
    return Epilogue(list(ops), operands)


@dataclass(frozen=True)
class Blocking:
    """Register tile (MR x NR, NR = nv * lanes) and cache blocks (MC, NC, KC)."""

    lanes: int
    mr: int
    nv: int
    mc: int
    nc: int
    kc: int

    @property
    def nr(self) -> int:
        return self.nv * self.lanes


def choose_blocking(m: int, n: int, k: int, *, lanes: int, acc: int, l1: int,
                    l2: int, l3: int = 0, nv: int = 0, mr: int = 0,
                    kc: int = 0) -> Blocking:
    """Block sizes for an m x n x k GEMM on a core with `acc` accumulator registers of
    `lanes` f32 and the given L1/L2 bytes, and `l3` bytes of L3 for this GEMM's task
    (BLIS's rules: the B micro-panel stays in L1 across the row panels of A, the packed
    A block in L2 across the column panels, the packed B block in L3 across the row
    blocks; `l3` 0: the B block in half of L2 as well).
    """
    nv = nv or max(1, min(4 if acc >= 24 else 2, -(-n // lanes)))
    mr = mr or max(1, min(acc // nv, 16, m))
    nr = nv * lanes
    # KC: the B micro-panel (KC x NR, read once per MR-row tile, in order) may be twice
    # L1: the prefetcher streams it from L2, and a long k block loads and stores each C
    # tile less often. Measured on Zen 4 (32 KiB L1, NR = 64): KC = 64 (half of L1, the
    # earlier rule) -> 256 made the transformer block's 1024 x 256 x 1024 products 5 %
    # faster and ResNet-18's step at 224 x 224 5 % (1088 -> 1037 ms); 384 and 512 read
    # the same as 256. Capped at 256, the most that was measured to pay.
    # The packed A block (MC x KC) stays in half of L2, the B block (KC x NC) in half of
    # the task's L3: A is packed once per NC columns, so a wide NC packs it less often
    # (only each B micro-panel, in use, needs to be near: L1/L2). Measured on Zen 4 (1
    # MiB L2, 32 MiB L3): NC 512 (B in half of L2, the earlier rule) -> 1024 made W4's
    # step 4 % faster (its 256 x 1024 A blocks packed once, not twice), ResNet-18's at
    # 224 x 224 2-4 % (NC 4096 and 16384 the same).
    kc = min(k, kc or max(16, min(256, l1 // (4 * nr) * 2) // 8 * 8))
    nc = max(nr, ((l3 or l2) // (2 * 4 * kc)) // nr * nr)
    nc = min(nc, -(-n // nr) * nr)
    mc = max(mr, (l2 // (2 * 4 * kc)) // mr * mr)
    mc = min(mc, -(-m // mr) * mr)
    return Blocking(lanes, mr, nv, mc, nc, kc)


# --- IR building ----------------------------------------------------------------------


class _Ir:
    """Index arithmetic with Python ints folded, and loops, at one insertion point."""

    def __init__(self, b: Builder, parent: _Ir | None = None):
        self.b = b
        self.parent = parent
        self._consts: dict[int, SSAValue] = {}

    def ins(self, op: Operation) -> Operation:
        return self.b.insert(op)

    def idx(self, v: Index) -> SSAValue:
        """`v` as an SSA index; each constant is made once per block (and reused in the
        blocks nested in it, which it dominates): the IR stays small to lower."""
        if not isinstance(v, int):
            return v
        scope: _Ir | None = self
        while scope is not None:
            if v in scope._consts:
                return scope._consts[v]
            scope = scope.parent
        c = self.ins(arith.ConstantOp(IntegerAttr(v, IndexType()))).results[0]
        self._consts[v] = c
        return c

    def add(self, *vs: Index) -> Index:
        const = sum(v for v in vs if isinstance(v, int))
        dyn = [v for v in vs if not isinstance(v, int)]
        if not dyn:
            return const
        acc = dyn[0]
        for v in dyn[1:]:
            acc = self.ins(arith.AddiOp(acc, v)).results[0]
        if const:
            acc = self.ins(arith.AddiOp(acc, self.idx(const))).results[0]
        return acc

    def mul(self, x: Index, c: int) -> Index:
        if isinstance(x, int):
            return x * c
        if c == 0:
            return 0
        if c == 1:
            return x
        return self.ins(arith.MuliOp(x, self.idx(c))).results[0]

    def sub(self, x: Index, y: Index) -> Index:
        if isinstance(x, int) and isinstance(y, int):
            return x - y
        if isinstance(y, int) and y == 0:
            return x
        return self.ins(arith.SubiOp(self.idx(x), self.idx(y))).results[0]

    def floor(self, x: Index, c: int) -> Index:
        """x rounded down to a multiple of the power of two c (x >= 0)."""
        if isinstance(x, int):
            return x - x % c
        return self.ins(arith.AndIOp(x, self.idx(-c))).results[0]

    def min(self, x: Index, y: Index) -> Index:
        if isinstance(x, int) and isinstance(y, int):
            return min(x, y)
        return self.ins(arith.MinSIOp(self.idx(x), self.idx(y))).results[0]

    def lt(self, x: Index, y: Index) -> SSAValue:
        return self.ins(arith.CmpiOp(self.idx(x), self.idx(y), "slt")).results[0]

    def le(self, x: Index, y: Index) -> SSAValue:
        return self.ins(arith.CmpiOp(self.idx(x), self.idx(y), "sle")).results[0]

    def load(self, mem: SSAValue, i: Index) -> SSAValue:
        return self.ins(memref.LoadOp.get(mem, [self.idx(i)])).results[0]

    def store(self, v: SSAValue, mem: SSAValue, i: Index) -> None:
        self.ins(memref.StoreOp.get(v, mem, [self.idx(i)]))

    def for_(self, lb: Index, ub: Index, step: int,
             body: Callable[[_Ir, SSAValue, Sequence[SSAValue]], Sequence[SSAValue] | None],
             iter_args: Sequence[SSAValue] = (), attrs: dict[str, Attribute] | None = None
             ) -> list[SSAValue]:
        block = Block(arg_types=[IndexType(), *(v.type for v in iter_args)])
        inner = _Ir(Builder(InsertPoint.at_end(block)), self)
        yielded = body(inner, block.args[0], block.args[1:]) or []
        inner.ins(scf.YieldOp(*yielded))
        loop = scf.ForOp(self.idx(lb), self.idx(ub), self.idx(step), list(iter_args), block)
        if attrs:
            loop.attributes.update(attrs)
        self.ins(loop)
        return list(loop.results)

    def if_(self, cond: SSAValue, then: Callable[[_Ir], None],
            other: Callable[[_Ir], None]) -> None:
        regions = []
        for fill in (then, other):
            block = Block()
            inner = _Ir(Builder(InsertPoint.at_end(block)), self)
            fill(inner)
            inner.ins(scf.YieldOp())
            regions.append(Region(block))
        self.ins(scf.IfOp(cond, [], regions[0], regions[1]))


def _collapse(ir: _Ir, value: SSAValue) -> SSAValue:
    typ = value.type
    assert isinstance(typ, MemRefType)
    rank = typ.get_num_dims()
    return value if rank == 1 else ir.ins(collapse_shape(value, [range(rank)])).results[0]


DYNAMIC_F32 = MemRefType(f32, [DYNAMIC_INDEX])


def _dynamic(ir: _Ir, value: SSAValue) -> SSAValue:
    """`value` (a 1-D f32 memref) as `memref<?xf32>`, the micro-kernel's argument type."""
    return ir.ins(memref.CastOp.get(value, DYNAMIC_F32)).results[0]


def micro_name(rows: int, nv: int, lanes: int, mr: int, nr: int,
               a_strides: tuple[int, int] | None = None) -> str:
    name = f"frame_gemm_micro_{rows}x{nv * lanes}_p{mr}x{nr}_f32x{lanes}"
    if a_strides is not None and a_strides != (1, mr):
        name += f"_a{a_strides[0]}x{a_strides[1]}"
    return name


def micro_kernel(rows: int, nv: int, lanes: int, mr: int, nr: int,
                 a_strides: tuple[int, int] | None = None) -> func.FuncOp:
    """The register micro-kernel shared by every GEMM of one tile shape: `rows` rows by
    `nv` vectors of `lanes` columns, reading A panels of stride MR and B panels of
    stride NR (edge kernels have fewer rows or vectors than the panels are wide):

        @name(ap, bp, c, pa, pb, c_at, ldc, kc, zero):
          acc[r][v] = zero ? 0 : c[c_at + r*ldc + v*L : +L]
          for k < kc:  b[v] = bp[pb + k*NR + v*L : +L]
                       acc[r][v] = fma(broadcast(ap[pa + k*MR + r]), b[v], acc[r][v])
          c[c_at + r*ldc + v*L : +L] = acc[r][v]

    With `a_strides` = (row stride, k stride) A is read where it lies instead
    (`ap[pa + r*rs + k*ks]`, see `_direct_a`); the strides are constants of the kernel,
    so the MR row addresses are one register plus fixed displacements.

    `zero` starts from zero instead of C (the first k block of a GEMM whose C was only
    zero-filled: the fill is dropped). One function per module and tile shape keeps the
    lowered IR (and the compile) small; LLVM inlines it where that pays.
    """
    a_rs, a_ks = a_strides if a_strides is not None else (1, mr)
    vt = VectorType(f32, [lanes])
    block = Block(arg_types=[DYNAMIC_F32] * 3 + [IndexType()] * 6)
    ap, bp, cm, pa, pb, c_at, ldc, kc, zero = block.args
    ir = _Ir(Builder(InsertPoint.at_end(block)))
    row_at = [ir.add(c_at, ir.mul(ldc, r)) for r in range(rows)]
    at = [[ir.idx(ir.add(row_at[r], v * lanes)) for v in range(nv)] for r in range(rows)]
    cond = ir.ins(arith.CmpiOp(zero, ir.idx(0), "ne")).results[0]
    init = scf.IfOp(cond, [vt] * (rows * nv), [Block()], [Block()])
    zeros = _Ir(Builder(InsertPoint.at_end(init.true_region.block)))
    zvec = zeros.ins(arith.ConstantOp(builtin.DenseIntOrFPElementsAttr.from_list(vt, [0.0]))
                     ).results[0]
    zeros.ins(scf.YieldOp(*([zvec] * (rows * nv))))
    loads = _Ir(Builder(InsertPoint.at_end(init.false_region.block)))
    loads.ins(scf.YieldOp(*(loads.ins(vector.LoadOp(cm, [at[r][v]], vt)).results[0]
                            for r in range(rows) for v in range(nv))))
    accs = list(ir.ins(init).results)

    def kbody(ir: _Ir, kk: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
        b_at = ir.add(pb, ir.mul(kk, nr))
        bs = [ir.ins(vector.LoadOp(bp, [ir.idx(ir.add(b_at, v * lanes))], vt)).results[0]
              for v in range(nv)]
        a_at = ir.add(pa, ir.mul(kk, a_ks))
        out = []
        for r in range(rows):
            av = ir.ins(vector.BroadcastOp(ir.load(ap, ir.add(a_at, r * a_rs)), vt)
                        ).results[0]
            out += [ir.ins(vector.FMAOp(av, bs[v], acc[r * nv + v])).results[0]
                    for v in range(nv)]
        return out
    res = ir.for_(0, kc, 1, kbody, accs)
    for r in range(rows):
        for v in range(nv):
            ir.ins(vector.StoreOp(res[r * nv + v], cm, [at[r][v]]))
    ir.ins(func.ReturnOp())
    return func.FuncOp(micro_name(rows, nv, lanes, mr, nr, a_strides),
                       func.FunctionType.from_lists([a.type for a in block.args], []),
                       Region(block), visibility="private")


@dataclass
class _Scratch:
    """Layout of a GEMM's scratch: one slot per task -- packed A, packed B, the edge tile
    (f32), then the offset tables (i32) -- and after the slots, for split-K, one partial
    sum of C (m x n f32) per task; with gathered columns, the contiguous copy of C (m x
    n f32, shared: tasks own column ranges)."""

    a_floats: int
    b_floats: int
    tile_floats: int
    table_ints: int
    tasks: int
    partial_floats: int  # m * n with split-K, else 0
    gather_floats: int = 0  # m * n with gathered columns, else 0

    @staticmethod
    def of(g: Contraction, blk: Blocking, split: _Split, pack_a: bool = True) -> _Scratch:
        return _Scratch(-(-blk.mc // blk.mr) * blk.mr * blk.kc if pack_a else 0,
                        blk.kc * (-(-blk.nc // blk.nr) * blk.nr),
                        blk.mr * blk.nr,
                        sum(prod(g.sizes[d] for d in grp) for _, grp in _tables(g)),
                        split.tasks, g.m * g.n if split.k else 0,
                        g.m * g.n if g.gather is not None else 0)

    @property
    def slot_bytes(self) -> int:
        n = 4 * (self.a_floats + self.b_floats + self.tile_floats + self.table_ints)
        return -(-n // ALIGN) * ALIGN

    @property
    def partials_at(self) -> int:
        return self.tasks * self.slot_bytes

    @property
    def gather_at(self) -> int:
        n = self.partials_at + self.tasks * 4 * self.partial_floats
        return -(-n // ALIGN) * ALIGN

    @property
    def nbytes(self) -> int:
        return self.gather_at + 4 * self.gather_floats


def _tables(g: Contraction) -> list[tuple[_Operand, list[int]]]:
    """The (operand, group) pairs whose collapsed index needs an offset table: groups
    that no single stride addresses (a convolution's window `oh * s + kh`, a batch dim
    between others), in the order their tables are laid out."""
    out = []
    for opnd, groups in ((g.a, (g.rows, g.red)), (g.b, (g.cols, g.red))):
        for grp in groups:
            if opnd.stride(grp, g.sizes) is None:
                out.append((opnd, grp))
    if g.gather is not None:  # the real C's columns
        out.append((g.gather.c, g.cols))
    return out


class _Addr:
    """Offset of a collapsed group index in one operand: `v * stride`, or a table load."""

    def __init__(self, stride: int | None = None, table: SSAValue | None = None):
        self.stride, self.table = stride, table

    def at(self, ir: _Ir, v: Index) -> Index:
        if self.table is None:
            assert self.stride is not None
            return ir.mul(v, self.stride)
        loaded = ir.load(self.table, v)
        return ir.ins(arith.IndexCastOp(loaded, IndexType())).results[0]


@dataclass
class _Task:
    """What one task's GEMM works with: its column range [lo, hi), its scratch views
    and how each operand's collapsed indices are addressed."""

    lo: Index
    hi: Index
    ap: SSAValue
    bp: SSAValue
    tile: SSAValue
    am: _Addr
    ak: _Addr
    bn: _Addr
    bk: _Addr
    ap_dyn: SSAValue  # the scratch views as the micro-kernel's `memref<?xf32>`
    bp_dyn: SSAValue
    tile_dyn: SSAValue
    c_flat: SSAValue  # where the tiles go: C, or this task's partial sum (split-K)
    c_dyn: SSAValue
    k_lo: Index  # the k range this task sums
    k_hi: Index
    zero_first: bool  # the first k block starts from zero (C was zero-filled / partial)
    r_lo: Index  # the rows of C this task computes: [r_lo, r_hi), MR-aligned
    r_hi: Index


def _fill_table(ir: _Ir, table: SSAValue, opnd: _Operand, group: Sequence[int],
                sizes: Sequence[int]) -> None:
    """table[v] = offset in `opnd` of the group's dims decoded from v (row-major)."""
    def body(ir: _Ir, v: SSAValue, _: Sequence[SSAValue]) -> None:
        rest: Index = v
        total: Index = 0
        for d in reversed(group):
            if d == group[0]:
                digit = rest
            else:
                size = ir.idx(sizes[d])
                digit = ir.ins(arith.RemUIOp(ir.idx(rest), size)).results[0]
                rest = ir.ins(arith.DivUIOp(ir.idx(rest), size)).results[0]
            total = ir.add(total, ir.mul(digit, opnd.coef.get(d, 0)))
        cast = ir.ins(arith.IndexCastOp(ir.idx(total), builtin.i32)).results[0]
        ir.store(cast, table, v)
    ir.for_(0, prod(sizes[d] for d in group), 1, body)


def _offset(ir: _Ir, opnd: _Operand, outer: dict[int, SSAValue]) -> Index:
    return ir.add(opnd.const, *(ir.mul(iv, opnd.coef.get(d, 0)) for d, iv in outer.items()))


_LINE_FLOATS = 16
"""f32 elements in a 64-byte cache line: the stride of `_EpilogueCode.prefetch`."""


class _EpilogueCode:
    """Emits an `Epilogue` for one element of C, given its collapsed row and column."""

    def __init__(self, ir: _Ir, g: Contraction, epi: Epilogue):
        self.epi = epi
        flats: dict[SSAValue, SSAValue] = {}

        def flat(v: SSAValue) -> SSAValue:
            if v not in flats:
                flats[v] = _collapse(ir, v)
            return flats[v]
        self.flats = [[flat(v) for v in (*op.inputs, *op.outputs)] for op in epi.ops]
        self.is_c = [[v is g.c_value for v in (*op.inputs, *op.outputs)] for op in epi.ops]
        self.strides = [[(o.stride(g.rows, g.sizes), o.stride(g.cols, g.sizes))
                         for o in per_op] for per_op in epi.operands]

    def bases(self, ir: _Ir, ivs: dict[int, SSAValue]) -> list[list[Index]]:
        """Each operand's offset at row 0, column 0 for the outer loops' `ivs`."""
        return [[_offset(ir, o, ivs) for o in per_op] for per_op in self.epi.operands]

    def rect(self, ir: _Ir, bases: list[list[Index]], i_lo: Index, i_hi: Index, j_lo: Index,
             j_hi: Index, tile: tuple[SSAValue, int] | None = None) -> None:
        """The epilogue on rows [i_lo, i_hi) x columns [j_lo, j_hi) of C, row by row;
        with `tile` (a buffer and its row length), C's values are read from there, the
        element (i_lo, j_lo) first."""
        def row(ir: _Ir, i: SSAValue, _: Sequence[SSAValue]) -> None:
            if tile is None:
                ir.for_(j_lo, j_hi, 1, lambda ir, j, _: self.element(ir, bases, i, j))
                return
            buf, at = tile[0], ir.mul(ir.sub(i, i_lo), tile[1])
            ir.for_(j_lo, j_hi, 1, lambda ir, j, _: self.element(
                ir, bases, i, j, (buf, ir.add(at, ir.sub(j, j_lo)))))
        ir.for_(i_lo, i_hi, 1, row)

    def prefetch(self, ir: _Ir, bases: list[list[Index]], i_lo: Index, rows: int,
                 i_last: Index, j_lo: Index, cols: int, j_last: Index) -> None:
        """Prefetch the lines the epilogue will touch on rows [i_lo, i_lo + rows) x
        columns [j_lo, j_lo + cols) (clamped to `i_last`, `j_last`), except C's (in L1
        after the micro-kernel): each operand whose rows are contiguous, once (an update
        in place reads and writes one), one line at a time, for writing if it is
        written. A tile's rows are a whole row of C apart, which the hardware prefetchers
        do not follow: without this the epilogue waits on each row in turn."""
        lines: dict[tuple, tuple[SSAValue, Index, int, bool]] = {}
        for e, per_op in enumerate(self.epi.operands):
            for p, opnd in enumerate(per_op):
                rs, cs = self.strides[e][p]
                if self.is_c[e][p] or cs != 1:
                    continue
                key = (self.flats[e][p], opnd.const, tuple(sorted(opnd.coef.items())))
                write = p == len(per_op) - 1
                if key in lines:
                    write = write or lines[key][3]
                lines[key] = (self.flats[e][p], bases[e][p], rs or 0, write)
        for flat, base, rs, write in lines.values():
            for r in range(rows if rs else 1):  # a broadcast row: one row
                row = ir.add(base, ir.mul(ir.min(ir.add(i_lo, r), i_last), rs))
                for c in range(0, cols, _LINE_FLOATS):
                    at = ir.add(row, ir.min(ir.add(j_lo, c), j_last))
                    ir.ins(PrefetchOp(flat, ir.idx(at), write))

    def element(self, ir: _Ir, bases: list[list[Index]], i: Index, j: Index,
                c_at: tuple[SSAValue, Index] | None = None) -> None:
        """Run every epilogue op's body for element (i, j), in order (C's value read
        from `c_at` if given)."""
        for e, op in enumerate(self.epi.ops):
            offs = [ir.add(base, ir.mul(i, rs or 0), ir.mul(j, cs or 0))
                    for base, (rs, cs) in zip(bases[e], self.strides[e], strict=True)]
            block = op.body.block
            mapping: dict[SSAValue, SSAValue] = {
                arg: ir.load(*(c_at if c_at is not None and self.is_c[e][p] else
                               (self.flats[e][p], offs[p])))
                for p, arg in enumerate(block.args) if arg.uses}
            for body_op in block.ops:
                if isinstance(body_op, linalg.YieldOp):
                    value = body_op.operands[0]
                    ir.store(mapping.get(value, value), self.flats[e][-1], offs[-1])
                    continue
                clone = body_op.clone(value_mapper=mapping)
                ir.ins(clone)
                mapping.update(zip(body_op.results, clone.results, strict=True))


def build_gemm(ir: _Ir, g: Contraction, blk: Blocking, split: _Split, ws: SSAValue,
               scratch: _Scratch, micros: dict[str, func.FuncOp], beta0: bool,
               epi: Epilogue | None = None, epi_per_tile: bool = True,
               direct_a: tuple[int, int] | None = None,
               fast_pack_min: int = FAST_PACK_MIN, c_dead: bool = False) -> None:
    """Insert the blocked GEMM for `g` at `ir`. Tiles call the shared micro-kernels
    (`micro_kernel`), made on first use into `micros`; with `beta0`, C's prior contents
    are ignored (they were zeros from a fill that the caller drops). With `epi`, each
    tile runs the epilogue on its elements right after its last k block (while the
    tile is in L1) if `epi_per_tile`, else each MC x NC block of C after its last k
    block, row by row; a split-K GEMM runs it after adding the partial sums. With
    `direct_a` (A's row and k strides, see `_direct_a`) A is not packed: the
    micro-kernels read it in place. B's packing gets vector paths from
    `fast_pack_min` elements on (`FAST_PACK_MIN`). With `c_dead` (C is read by nothing
    but the epilogue, `C_DEAD_ATTR`) and one k block, tiles are computed in the scratch
    tile and the epilogue reads them there: C is never stored."""
    mr, nr = blk.mr, blk.nr
    m, n, k = g.m, g.n, g.k
    tables = _tables(g)
    a_flat, b_flat, c_flat = (_collapse(ir, v) for v in (g.a_value, g.b_value, g.c_value))
    real_c = c_flat
    if g.gather is not None:  # the GEMM works on a contiguous copy of C (no epilogue)
        assert epi is None and not split.k
        c_flat = ir.ins(memref.ViewOp(ws, ir.idx(scratch.gather_at), [],
                                      MemRefType(f32, [m * n]))).results[0]
    epi_code = _EpilogueCode(ir, g, epi) if epi is not None else None
    c_dyn = _dynamic(ir, c_flat)
    a_dyn = _dynamic(ir, a_flat) if direct_a is not None else None
    # The vector packing paths come in addition to the element loop (the panel past the
    # last column, the k past the last group): for a small B they would only add code.
    big_b = g.k * g.n * prod(g.sizes[d] for d in g.outer) >= fast_pack_min
    b_run, b_run_step = _run_width(g, blk) if big_b else (0, 1)
    b_k_run, b_k_step = (0, 1) if b_run or not big_b else _k_run(g, blk, split)
    # A's panels are MR rows wide: rows at stride 1 (A = X^T, a weight gradient's) copy
    # one vector of MR floats per k (MR a power of two: the C++ emitter's vector types
    # need one; LLVM's SLP vectorizer joins the 6 loads of an MR = 6 row anyway); other
    # A (row-major, or a convolution's output gradient with k through a table) copy MR
    # rows k by k.
    a_run = mr if g.a.stride(g.rows, g.sizes) == 1 and mr > 1 and mr & (mr - 1) == 0 \
        else 0
    zero = ir.ins(arith.ConstantOp(builtin.FloatAttr(0.0, f32))).results[0]
    tasks, per_task = split.tasks, split.per_task
    place = place_outer(g, blk, split)
    # C in the scratch tile: full MR x NR tiles of zero-padded panels (A packed: a
    # direct A has no padding rows), C never read (beta0) and final after one k block;
    # the epilogue then runs per tile, whatever the size of its operands.
    c_in_tile = c_dead and beta0 and epi is not None and g.k <= blk.kc and \
        direct_a is None and not split.k and g.gather is None and \
        not any(v is g.c_value for op in epi.ops for v in op.outputs)
    epi_per_tile = epi_per_tile or c_in_tile

    def partial(ir: _Ir, s: Index) -> SSAValue:
        at = ir.add(scratch.partials_at, ir.mul(s, 4 * m * n))
        return ir.ins(memref.ViewOp(ws, ir.idx(at), [], MemRefType(f32, [m * n]))).results[0]

    def reduce_partials(ir: _Ir) -> None:
        """C = (beta0 ? 0 : C) + ((P0 + P1) + ...), the same fixed order everywhere."""
        views = [partial(ir, s) for s in range(tasks)]

        def body(ir: _Ir, i: SSAValue, _: Sequence[SSAValue]) -> None:
            acc = ir.load(views[0], i)
            for v in views[1:]:
                acc = ir.ins(arith.AddfOp(acc, ir.load(v, i))).results[0]
            if not beta0:
                acc = ir.ins(arith.AddfOp(ir.load(c_flat, i), acc)).results[0]
            ir.store(acc, c_flat, i)
        ir.for_(0, m * n, 1, body)

    def task(ir: _Ir, t: SSAValue, _: Sequence[SSAValue]) -> None:
        base = ir.mul(t, scratch.slot_bytes)

        def view(offset_floats: int, count: int) -> SSAValue:
            typ = MemRefType(f32, [count])
            return ir.ins(memref.ViewOp(ws, ir.idx(ir.add(base, 4 * offset_floats)), [],
                                        typ)).results[0]
        ap = view(0, scratch.a_floats)
        bp = view(scratch.a_floats, scratch.b_floats)
        tile = view(scratch.a_floats + scratch.b_floats, scratch.tile_floats)
        addr: dict[tuple[int, int], _Addr] = {}
        at_int = scratch.a_floats + scratch.b_floats + scratch.tile_floats
        for opnd, grp in tables:
            count = prod(g.sizes[d] for d in grp)
            typ = MemRefType(builtin.i32, [count])
            tbl = ir.ins(memref.ViewOp(ws, ir.idx(ir.add(base, 4 * at_int)), [], typ)
                         ).results[0]
            _fill_table(ir, tbl, opnd, grp, g.sizes)
            addr[(id(opnd), id(grp))] = _Addr(table=tbl)
            at_int += count
        for opnd, grp in ((g.a, g.rows), (g.a, g.red), (g.b, g.cols), (g.b, g.red)):
            if (id(opnd), id(grp)) not in addr:
                addr[(id(opnd), id(grp))] = _Addr(stride=opnd.stride(grp, g.sizes))
        am, ak = addr[(id(g.a), id(g.rows))], addr[(id(g.a), id(g.red))]
        bn, bk = addr[(id(g.b), id(g.cols))], addr[(id(g.b), id(g.red))]
        target, target_dyn, k_lo, k_hi, zero_first = c_flat, c_dyn, 0, k, beta0
        r_lo: Index = 0
        r_hi: Index = m
        if split.k:  # all of C, a k range, into this task's partial buffer
            lo, hi, first, last = 0, n, 0, 0
            k_lo = ir.mul(t, per_task)
            k_hi = ir.min(ir.add(k_lo, per_task), k)
            target = partial(ir, t)
            target_dyn, zero_first = _dynamic(ir, target), True
        elif split.outer:
            # Tasks take slices of the first outer dim (a batch, say), all columns each.
            lo, hi = 0, n
            first = ir.mul(t, per_task)
            last = ir.min(ir.add(first, per_task), g.sizes[g.outer[0]])
        elif split.rows:  # tasks take ranges of whole row panels, all columns each
            lo, hi = 0, n
            r_lo = ir.mul(t, per_task * mr)
            r_hi = ir.min(ir.add(r_lo, per_task * mr), m)
            first, last = 0, g.sizes[g.outer[0]] if g.outer else 0
        else:  # tasks take ranges of whole column panels
            lo = ir.mul(t, per_task * nr)
            hi = ir.min(ir.add(lo, per_task * nr), n)
            first, last = 0, g.sizes[g.outer[0]] if g.outer else 0
        st = _Task(lo, hi, ap, bp, tile, am, ak, bn, bk,
                   *(_dynamic(ir, v) for v in (ap, bp, tile)),
                   target, target_dyn, k_lo, k_hi, zero_first, r_lo, r_hi)
        # The first outer dim runs over [first, last) (this task's slice), wherever
        # its loop is placed; the others over their whole range.
        span = {d: (0, g.sizes[d]) for d in g.outer}
        if g.outer:
            span[g.outer[0]] = (first, last)
        if g.gather is not None and not beta0:  # this task's part of C, copied in
            copy_columns(ir, addr[(id(g.gather.c), id(g.cols))], lo, hi, r_lo, r_hi, False)
        loops(ir, place.keep, {}, span, lambda ir, ivs: gemm(ir, ivs, span, st))
        if g.gather is not None:  # and back, final
            copy_columns(ir, addr[(id(g.gather.c), id(g.cols))], lo, hi, r_lo, r_hi, True)

    def copy_columns(ir: _Ir, c_cols: _Addr, lo: Index, hi: Index, r_lo: Index,
                     r_hi: Index, back: bool) -> None:
        """Rows [r_lo, r_hi) x columns [lo, hi) of C to its contiguous copy, or `back`."""
        gat = g.gather
        assert gat is not None

        def row(ir: _Ir, i: SSAValue, _: Sequence[SSAValue]) -> None:
            real_row = ir.add(gat.c.const, ir.mul(i, gat.row_stride))
            copy_row = ir.mul(i, n)

            def col(ir: _Ir, j: SSAValue, _: Sequence[SSAValue]) -> None:
                real, mine = ir.add(real_row, c_cols.at(ir, j)), ir.add(copy_row, j)
                if back:
                    ir.store(ir.load(c_flat, mine), real_c, real)
                else:
                    ir.store(ir.load(real_c, real), c_flat, mine)
            ir.for_(lo, hi, 1, col)
        ir.for_(r_lo, r_hi, 1, row)

    def loops(ir: _Ir, dims: Sequence[int], ivs: dict[int, SSAValue],
              span: dict[int, tuple[Index, Index]],
              body: Callable[[_Ir, dict[int, SSAValue]], None]) -> None:
        """Loops over outer dims `dims` (outer to inner), `body` inside with every
        induction variable so far."""
        if not dims:
            body(ir, ivs)
            return
        d = dims[0]
        ir.for_(*span[d], 1, lambda ir, iv, _: loops(ir, dims[1:], {**ivs, d: iv}, span,
                                                      body))

    def gemm(ir: _Ir, ivs: dict[int, SSAValue], span: dict[int, tuple[Index, Index]],
             st: _Task) -> None:
        lo, hi, ap, bp, tile = st.lo, st.hi, st.ap, st.bp, st.tile
        am, ak, bn, bk = st.am, st.ak, st.bn, st.bk
        c_flat, c_dyn = st.c_flat, st.c_dyn

        def jc_body(ir: _Ir, jc: SSAValue, _: Sequence[SSAValue]) -> None:
            nc = ir.min(blk.nc, ir.sub(hi, jc))

            def pc_body(ir: _Ir, pc: SSAValue, _: Sequence[SSAValue]) -> None:
                kc = ir.min(blk.kc, ir.sub(st.k_hi, pc))
                if not place.b_inner:  # B's panel, once for every A-only outer index
                    pack_b(ir, _offset(ir, g.b, ivs), jc, nc, pc, kc)

                def ic_body(ir: _Ir, ivs: dict[int, SSAValue], ic: SSAValue) -> None:
                    mc = ir.min(blk.mc, ir.sub(st.r_hi, ic))
                    a0 = _offset(ir, g.a, ivs)
                    if direct_a is None:  # A's block, once for every B-only outer index
                        pack_a(ir, a0, ic, mc, pc, kc)

                    def block(ir: _Ir, ivs: dict[int, SSAValue]) -> None:
                        if place.b_inner:
                            pack_b(ir, _offset(ir, g.b, ivs), jc, nc, pc, kc)
                        c0 = _offset(ir, g.c, ivs)
                        bases = epi_code.bases(ir, ivs) if epi_code is not None else []
                        ir.for_(0, nc, nr, lambda ir, jp, _: ir.for_(
                            0, mc, mr, lambda ir, ip, _: tile_at(
                                ir, c0, bases, a0, ic, ip, jc, jp, pc, kc)))
                        if epi_code is not None and not split.k and not epi_per_tile:
                            # The MC x NC block, row by row (in L2; the rows stream).
                            code = epi_code
                            after_last_k_block(ir, pc, lambda ir: code.rect(
                                ir, bases, ic, ir.add(ic, mc), jc, ir.add(jc, nc)))
                    loops(ir, place.b_inner, ivs, span, block)

                loops(ir, place.a_inner, ivs, span, lambda ir, ivs: ir.for_(
                    st.r_lo, st.r_hi, blk.mc, lambda ir, ic, _: ic_body(ir, ivs, ic)))
            ir.for_(st.k_lo, st.k_hi, blk.kc, pc_body)

        def pack(ir: _Ir, src: SSAValue, dst: SSAValue, first: SSAValue, extent: Index,
                 width: int, bound: Index, x0: Index, x_addr: _Addr, k_addr: _Addr,
                 pc: SSAValue, kc: Index, run: int = 0, run_step: int = 1,
                 k_run: int = 0, k_step: int = 1, unrolled: bool = False) -> None:
            """Copy rows/columns [first, first + extent) x k in [pc, pc + kc) of an
            operand into panels of `width`: panel p at p * KC * width, element (k, w) at
            k * width + w; zero past `bound`. The loop over the operand's contiguous
            dim is innermost, so reads stream (A row-major, B transposed: k inner).
            With `run` (see `_run_width`), every aligned group of `run` rows/columns lies
            at stride `run_step` (1 or 2, `_load_run`) in the operand: a panel inside
            `bound` is copied a vector of `run` floats at a time (an image row of a
            convolution's window) instead of element by element through the offset
            table. With `k_run` (see `_k_run`),
            every aligned group of `k_run` k lies at stride `k_step` (1 or 2) instead: a
            panel inside `bound` is copied in k_run x k_run blocks, k_run vector loads
            along k (`_load_run`) transposed in
            registers (`_transpose`) into k_run vector stores along the panel's rows;
            the k that do not fill a group go element by element. With `unrolled` (a
            narrow panel: A's MR rows), a panel inside `bound` is copied k by k, the
            `width` row offsets computed once per panel and k's offset (a table load,
            for a convolution's positions) once per k: no index clamp or select per
            element, as `elements` needs at the edges."""
            last = ir.sub(bound, 1)
            k_inner = k_addr.stride == 1 and x_addr.stride != 1

            def runs(ir: _Ir, p0: SSAValue, dst0: Index, w_end: Index | None = None
                     ) -> None:
                # Columns [0, w_end) a run at a time (None: the whole panel); the rest of
                # a panel past the last column element by element.
                end = width if w_end is None else w_end

                def copy(ir: _Ir, at: Index, kk: SSAValue, q: SSAValue) -> None:
                    v = _load_run(ir, src, ir.add(at, k_addr.at(ir, ir.add(pc, kk))),
                                  run, run_step)
                    ir.ins(vector.StoreOp(v, dst, [ir.idx(ir.add(
                        dst0, ir.mul(kk, width), q))]))

                if x_addr.table is None:
                    # Columns at one stride (a plain B): a panel row is `width`
                    # consecutive floats of one row of B, read in order row by row.
                    assert x_addr.stride == 1 and run_step == 1
                    at = ir.add(x0, x_addr.at(ir, ir.add(first, p0)))
                    ir.for_(0, kc, 1, lambda ir, kk, _: ir.for_(
                        0, end, run, lambda ir, q, _: copy(ir, ir.add(at, q), kk, q)))
                else:
                    # k outer, the runs of one k inner: each k's row of the panel is
                    # written whole and in order, and the reads follow the image row.
                    # (Runs outer wrote each 64-byte line of a panel too large for L1
                    # in two visits a whole panel apart: ResNet-18's first convolution
                    # 82 -> 91 GFLOP/s, its 56 x 56 ones 88 -> 93.)
                    def krow(ir: _Ir, kk: SSAValue, _: Sequence[SSAValue]) -> None:
                        at = ir.add(x0, k_addr.at(ir, ir.add(pc, kk)))
                        out = ir.add(dst0, ir.mul(kk, width))

                        def grp(ir: _Ir, q: SSAValue, _: Sequence[SSAValue]) -> None:
                            v = _load_run(ir, src, ir.add(at, x_addr.at(
                                ir, ir.add(first, p0, q))), run, run_step)
                            ir.ins(vector.StoreOp(v, dst, [ir.idx(ir.add(out, q))]))
                        ir.for_(0, end, run, grp)
                    ir.for_(0, kc, 1, krow)
                if w_end is not None:
                    elements(ir, p0, dst0, 0, None, w_end)

            def blocks(ir: _Ir, p0: SSAValue, dst0: Index, w_end: Index | None = None
                       ) -> None:
                # Columns [0, w_end) (None: the whole panel) by transposes; the rest of
                # a panel past the last column and the k past the last whole group
                # element by element.
                k_end = ir.floor(kc, k_run)

                def group(ir: _Ir, kg: SSAValue, _: Sequence[SSAValue]) -> None:
                    at = ir.add(x0, k_addr.at(ir, ir.add(pc, kg)))

                    def block(ir: _Ir, jb: SSAValue, _: Sequence[SSAValue]) -> None:
                        rows = [_load_run(ir, src, ir.add(at, x_addr.at(
                            ir, ir.add(first, p0, jb, j))), k_run, k_step)
                            for j in range(k_run)]
                        for t, v in enumerate(_transpose(ir, rows)):
                            ir.ins(vector.StoreOp(v, dst, [ir.idx(ir.add(
                                dst0, ir.mul(ir.add(kg, t), width), jb))]))
                    ir.for_(0, width if w_end is None else w_end, k_run, block)
                ir.for_(0, k_end, k_run, group)
                elements(ir, p0, dst0, k_end)
                if w_end is not None:
                    elements(ir, p0, dst0, 0, k_end, w_end)

            def rows(ir: _Ir, p0: SSAValue, dst0: Index) -> None:
                at = [ir.add(x0, x_addr.at(ir, ir.add(first, p0, w)))
                      for w in range(width)]

                def kbody(ir: _Ir, kk: SSAValue, _: Sequence[SSAValue]) -> None:
                    out = ir.add(dst0, ir.mul(kk, width))
                    k_off = k_addr.at(ir, ir.add(pc, kk))  # one table load, if any
                    for w in range(width):
                        ir.store(ir.load(src, ir.add(at[w], k_off)), dst, ir.add(out, w))
                ir.for_(0, kc, 1, kbody)

            def panel(ir: _Ir, p0: SSAValue, _: Sequence[SSAValue]) -> None:
                dst0 = ir.mul(p0, blk.kc)
                fast = runs if run else blocks if k_run else rows if unrolled else None
                if fast is None:
                    elements(ir, p0, dst0)
                    return
                inside = ir.le(ir.add(first, p0, width), bound)
                group = k_run if fast is blocks else run if fast is runs else 0
                if group and group < width:  # (a power of two: `_pow2_dividing`)
                    # A partial panel: its whole groups (of k_run columns, or runs) the
                    # fast way still.
                    def partial(ir: _Ir) -> None:
                        assert fast is not None
                        fast(ir, p0, dst0, ir.floor(ir.sub(bound, ir.add(first, p0)),
                                                    group))
                    ir.if_(inside, lambda ir: fast(ir, p0, dst0), partial)
                else:
                    ir.if_(inside, lambda ir: fast(ir, p0, dst0),
                           lambda ir: elements(ir, p0, dst0))

            def elements(ir: _Ir, p0: SSAValue, dst0: Index, k0: Index = 0,
                         k1: Index | None = None, w0: Index = 0) -> None:
                """k in [k0, k1) (k1 None: kc) x columns [w0, width)."""
                k_hi = kc if k1 is None else k1

                def along_x(ir: _Ir, w: SSAValue) -> tuple[Index, SSAValue]:
                    x = ir.add(first, p0, w)
                    return x_addr.at(ir, ir.min(x, last)), ir.lt(x, bound)

                def elem(ir: _Ir, kk: SSAValue, w: SSAValue, x_off: Index,
                         ok: SSAValue) -> None:
                    v = ir.load(src, ir.add(x0, k_addr.at(ir, ir.add(pc, kk)), x_off))
                    v = ir.ins(arith.SelectOp(ok, v, zero)).results[0]
                    ir.store(v, dst, ir.add(dst0, ir.mul(kk, width), w))

                if k_inner:
                    def col(ir: _Ir, w: SSAValue, _: Sequence[SSAValue]) -> None:
                        x_off, ok = along_x(ir, w)
                        ir.for_(k0, k_hi, 1, lambda ir, kk, _: elem(ir, kk, w, x_off, ok))
                    ir.for_(w0, width, 1, col)
                else:
                    def row(ir: _Ir, kk: SSAValue, _: Sequence[SSAValue]) -> None:
                        ir.for_(w0, width, 1, lambda ir, w, _: elem(ir, kk, w, *along_x(ir, w)))
                    ir.for_(k0, k_hi, 1, row)
            ir.for_(0, extent, width, panel)

        def pack_b(ir: _Ir, b0: Index, jc: SSAValue, nc: Index, pc: SSAValue,
                   kc: Index) -> None:
            pack(ir, b_flat, bp, jc, nc, nr, hi, b0, bn, bk, pc, kc, b_run, b_run_step,
                 b_k_run, b_k_step)

        def pack_a(ir: _Ir, a0: Index, ic: SSAValue, mc: Index, pc: SSAValue,
                   kc: Index) -> None:
            pack(ir, a_flat, ap, ic, mc, mr, m, a0, am, ak, pc, kc, a_run, unrolled=True)

        def tile_at(ir: _Ir, c0: Index, bases: list[list[Index]], a0: Index,
                    ic: SSAValue, ip: SSAValue, jc: SSAValue, jp: SSAValue, pc: SSAValue,
                    kc: Index) -> None:
            i0 = ir.add(ic, ip)
            j0 = ir.add(jc, jp)
            if direct_a is None:  # the packed panel
                pa = ir.mul(ip, blk.kc)
            else:  # A itself, at row i0 and k pc
                pa = ir.add(a0, ir.mul(i0, direct_a[0]), ir.mul(pc, direct_a[1]))
            pb = ir.mul(jp, blk.kc)
            c_at = ir.add(c0, ir.mul(i0, n), j0)
            if st.zero_first:  # C was only zero-filled (or is a partial sum): the first
                # k block starts from zero
                first = ir.ins(arith.CmpiOp(pc, ir.idx(st.k_lo), "eq")).results[0]
                zero_flag: Index = ir.ins(arith.SelectOp(first, ir.idx(1), ir.idx(0))
                                          ).results[0]
            else:
                zero_flag = 0
            if c_in_tile:
                assert epi_code is not None
                epi_code.prefetch(ir, bases, i0, mr, m - 1, j0, nr, ir.sub(hi, 1))
                call(ir, mr, blk.nv, st.tile_dyn, 0, nr, pa, pb, kc, zero_flag)
                epi_code.rect(ir, bases, i0, ir.min(ir.add(i0, mr), m), j0,
                              ir.min(ir.add(j0, nr), hi), (tile, nr))
                return
            if epi_code is not None and not split.k and epi_per_tile:
                # The epilogue's operands arrive while the micro-kernel runs.
                code = epi_code
                after_last_k_block(ir, pc, lambda ir: code.prefetch(
                    ir, bases, i0, mr, m - 1, j0, nr, ir.sub(hi, 1)))
            full_rows = ir.le(ir.add(i0, mr), m)
            full_cols = ir.le(ir.add(j0, nr), hi)

            def run(rows: int, nv: int) -> Callable[[_Ir], None]:
                def body(ir: _Ir) -> None:
                    call(ir, rows, nv, c_dyn, c_at, n, pa, pb, kc, zero_flag)
                return body

            def edge(ir: _Ir, rows: int = mr) -> None:
                # Copy the valid part of the C tile to a zero-padded MR x NR scratch tile,
                # run the micro-kernel on it (`rows` rows: an A read in place has no
                # padding rows), copy the valid part back.
                def copy(back: bool) -> Callable[[_Ir, SSAValue, Sequence[SSAValue]], None]:
                    def rbody(ir: _Ir, r: SSAValue, _: Sequence[SSAValue]) -> None:
                        def cbody(ir: _Ir, cc: SSAValue, _: Sequence[SSAValue]) -> None:
                            i, j = ir.add(i0, r), ir.add(j0, cc)
                            ok = ir.ins(arith.AndIOp(ir.lt(i, m), ir.lt(j, hi))).results[0]
                            t_at = ir.add(ir.mul(r, nr), cc)
                            c_idx = ir.add(c0, ir.mul(ir.min(i, m - 1), n),
                                           ir.min(j, ir.sub(hi, 1)))
                            if back:
                                ir.if_(ok, lambda ir: ir.store(ir.load(tile, t_at), c_flat,
                                                               c_idx), lambda ir: None)
                            else:
                                v = ir.load(c_flat, c_idx)
                                v = ir.ins(arith.SelectOp(ok, v, zero)).results[0]
                                ir.store(v, tile, t_at)
                        ir.for_(0, nr, 1, cbody)
                    return rbody
                ir.for_(0, mr, 1, copy(False))
                call(ir, rows, blk.nv, st.tile_dyn, 0, nr, pa, pb, kc, zero_flag)
                ir.for_(0, mr, 1, copy(True))

            # Only the last row panel (m % MR rows) and the last column panel (n % NR
            # columns) are partial. Remainders of whole vectors get exact micro-kernels
            # that work on C itself; the rest goes through the scratch tile.
            mr_rem, nr_rem = m % mr, n % nr
            nv_rem = nr_rem // blk.lanes if nr_rem % blk.lanes == 0 else 0
            full, whole = run(mr, blk.nv), ir.ins(arith.AndIOp(full_rows, full_cols)).results[0]
            if mr_rem and nv_rem:
                ir.if_(full_cols,
                       lambda ir: ir.if_(full_rows, full, run(mr_rem, blk.nv)),
                       lambda ir: ir.if_(full_rows, run(mr, nv_rem), run(mr_rem, nv_rem)))
            elif mr_rem:
                ir.if_(full_cols, lambda ir: ir.if_(full_rows, full, run(mr_rem, blk.nv)),
                       edge if direct_a is None else lambda ir: ir.if_(
                           full_rows, edge, lambda ir: edge(ir, mr_rem)))
            elif nv_rem:
                ir.if_(full_rows, lambda ir: ir.if_(full_cols, full, run(mr, nv_rem)), edge)
            else:
                ir.if_(whole, full, edge)
            if epi_code is not None and not split.k and epi_per_tile:
                # The tile, while it is in L1.
                code = epi_code
                after_last_k_block(ir, pc, lambda ir: code.rect(
                    ir, bases, i0, ir.min(ir.add(i0, mr), m), j0, ir.min(ir.add(j0, nr), hi)))

        def after_last_k_block(ir: _Ir, pc: SSAValue, run: Callable[[_Ir], None]) -> None:
            last = ir.ins(arith.CmpiOp(ir.idx(ir.add(pc, blk.kc)), ir.idx(st.k_hi), "sge")
                          ).results[0]
            ir.if_(last, run, lambda ir: None)

        def call(ir: _Ir, rows: int, nv: int, cm: SSAValue, c_at: Index, ldc: int,
                 pa: Index, pb: Index, kc: Index, zero_flag: Index) -> None:
            name = micro_name(rows, nv, blk.lanes, mr, nr, direct_a)
            if name not in micros:
                micros[name] = micro_kernel(rows, nv, blk.lanes, mr, nr, direct_a)
            a_mem = st.ap_dyn if a_dyn is None else a_dyn
            ir.ins(func.CallOp(name, [a_mem, st.bp_dyn, cm, *(ir.idx(v) for v in (
                pa, pb, c_at, ldc, kc, zero_flag))], []))

        ir.for_(lo, hi, blk.nc, jc_body)

    attrs: dict[str, Attribute] | None = None
    if tasks > 1 and split.threads != 1:
        attrs = {PARALLEL_ATTR: UnitAttr()}
        if split.threads > 1:  # fewer threads than the pipeline's pay
            attrs[PARALLEL_THREADS_ATTR] = IntegerAttr(split.threads, i64)
    ir.for_(0, tasks, 1, task, attrs=attrs)
    if split.k:
        reduce_partials(ir)
        if epi_code is not None:  # split-K has no outer dims
            epi_code.rect(ir, epi_code.bases(ir, {}), 0, m, 0, n)


# --- the pass -------------------------------------------------------------------------


def _epilogue_bytes(g: Contraction, epi: Epilogue) -> int:
    """The bytes of C and of every buffer the epilogue touches. When they fit in half
    of L2 the epilogue runs per tile (its operands stay cached); past that, rows of
    its operands from memory are read faster as long streams (per block): measured on
    W2 (64 KiB operands: per tile 5% faster) and W4 (4 MiB: per block 3% faster,
    per tile 4% slower than no fusion).

    Counted per index of the outer dims (a batched product's heads or images), which
    run one after the other: a buffer as large as C is split among them, a smaller one
    (a bias) is read whole by each. Attention's scores (64 heads of 128 x 128, 4 MiB
    in all) with their scale: per block 2.00 ms, per tile 1.31, as fast as no epilogue
    (Zen 2)."""
    bufs = {g.c_value, *(v for op in epi.ops for v in (*op.inputs, *op.outputs))}
    outer = prod(g.sizes[d] for d in g.outer)
    c_elems = outer * g.m * g.n
    sizes = [prod(v.type.get_shape()) for v in bufs]  # type: ignore[attr-defined]
    return sum(4 * (n // outer if n >= c_elems else n) for n in sizes)


def _kernel_generics(fn: func.FuncOp) -> list[linalg.GenericOp]:
    """The generics of a kernel made of generics and constants: one, or a contraction
    and its epilogue (`frame-fuse-gemm-epilogue`). Empty for anything else."""
    if fn.sym_visibility is None or fn.sym_visibility.data != "private" or not fn.body.blocks:
        return []
    ops = list(fn.body.blocks[0].ops)
    generics = [o for o in ops if isinstance(o, linalg.GenericOp)]
    rest = [o for o in ops if not isinstance(o, linalg.GenericOp | arith.ConstantOp
                                              | func.ReturnOp)]
    return [] if rest else generics


@dataclass(frozen=True)
class _Split:
    """How a GEMM's work is cut into independent tasks."""

    tasks: int
    per_task: int  # outer-dim indices, column panels, row panels or k indices per task
    outer: bool
    k: bool = False  # split-K: tasks sum k ranges into partial buffers
    rows: bool = False  # tasks take ranges of whole MR-row panels, every column each
    threads: int = 0  # the most threads the tasks may run on (`gemm_threads`); 0: all


SPLIT_K = 4
"""Partial sums of a split-K GEMM (a constant: see `_task_split`)."""
SPLIT_K_MIN = 8192
"""The reduction length from which a GEMM with at most two column panels and no outer
dims is split over k."""


MIN_TASK_MACS = 1 << 16
"""Multiply-adds a GEMM needs per thread before it is split over more threads
(`gemm_threads`): 2 threads from 128K multiply-adds.

Measured with `bench/bench_threads.py --sweep-gemm` (one `y = a @ b` kernel, 1 vs 2
threads, no threshold; best of 200 interleaved short batches; quiet 2-core Zen 4 VM,
2026-12-05): 24^3 and 32^3 (14K, 33K multiply-adds) 0.81x and 0.87x, 40^3 (64K)
1.07x, 48^3 (110K) 1.24x, 64^3 (262K) 1.73x; 64 x 10 x 256 (164K, mnist_mlp's input
gradient of its last layer) 1.31x, 64 x 256 x 10 and 256 x 64 x 10 (164K: its last
layer and that layer's weight gradient, split over rows) 2.16x and 2.27x. So a second
thread pays from about 64K multiply-adds; each thread is given that much. Whole
training steps agree (`--workloads`, interleaved rounds in which no other process ran):
mnist_mlp on 2 threads 0.351-0.355 ms with this threshold, 0.354-0.367 ms with 1M
(its 164K products on one thread); LeNet and the wide MLP the same within noise."""


def macs(g: Contraction) -> int:
    """The multiply-adds of a contraction."""
    return g.m * g.n * g.k * prod(g.sizes[d] for d in g.outer)


def gemm_threads(g: Contraction, threads: int, min_task_macs: int = MIN_TASK_MACS) -> int:
    """The threads a GEMM runs on, out of `threads`: as many as give each one at least
    `min_task_macs` multiply-adds (at least one). A GEMM too small to gain from a
    second thread runs on one: no tasks, no dispatch. `min_task_macs` 0: all."""
    if threads <= 1 or min_task_macs <= 0:
        return max(1, threads)
    return max(1, min(threads, macs(g) // min_task_macs))


PACK_COST = 16
"""Multiply-adds one packed element costs, for `_task_split`'s estimate: the micro-kernel
does about 32 multiply-adds a cycle (two `<16 x f32>` FMAs), packing moves one or two
elements (A's MR-row panels a vector of MR floats, or MR scalars, per k; the loads miss
in cache more often than the micro-kernel's)."""

SWITCH_GAIN = 0.9
"""How much shorter (in estimated multiply-adds) the longest task of a later choice of
split dim must be to be taken over an earlier one (`_task_split`)."""


def _task_split(g: Contraction, blk: Blocking, threads: int) -> _Split:
    """Tasks for `threads`, over one of three dims, each task a range of it:

    * the first outer dim (a convolution's batch, attention's batch x heads): each task
      whole GEMMs, every row and column;
    * whole NR-column panels: each task packs all of A for its columns;
    * whole MR-row panels: each task packs all of B for its rows.

    The choice is the one whose longest task (the first) has the least work -- its
    multiply-adds (the edge tiles of C run exact micro-kernels, so padding is not
    counted) and the elements it packs (`PACK_COST` each) -- in that order of
    preference, a
    later one only when `SWITCH_GAIN` times shorter: columns keep C's and the weights'
    column halves on the same thread from one kernel to the next. Rows take over when
    columns are few or uneven: a layer of 10 outputs is one column panel (splitting it
    over columns leaves one thread idle), 96 columns are a panel of 64 and one of 32,
    while 96 rows are 6 even panels of 16; ResNet-18's 7 x 7 layers gathered over a
    batch of 8 are 392 columns (six 64-wide panels and 8 columns: 4 + 3 panels give one
    task 65 % of the work) but 512 rows (86 panels of 6: 43 + 43). Either way tasks write
    disjoint parts of C (or of its gathered copy).

    A small C over a long reduction (a first convolution's weight gradient: 20 x 25
    outputs, each a sum over batch x positions) has no such parallelism: it is split
    over k into `SPLIT_K` partial sums, added in a fixed order. The split depends on
    the shape only, never on the thread count, so results stay the same bits for every
    count (they differ from the unsplit loops' order, as a blocked sum does)."""
    if not g.outer and g.gather is None and g.c.const == 0 and g.n <= 2 * blk.nr and \
            g.k >= SPLIT_K_MIN:
        per = -(-g.k // SPLIT_K)
        return _Split(-(-g.k // per), per, False, True, threads=threads)
    panels, row_panels = -(-g.n // blk.nr), -(-g.m // blk.mr)
    if threads <= 1:
        return _Split(1, panels, False, threads=threads)
    outer = prod(g.sizes[d] for d in g.outer)
    options: list[tuple[int, _Split]] = []
    if g.outer and g.sizes[g.outer[0]] > 1:
        size = g.sizes[g.outer[0]]
        per = -(-size // threads)
        longest = per * outer // size * (g.m * g.n * g.k + (g.m + g.n) * g.k * PACK_COST)
        options.append((longest, _Split(-(-size // per), per, True, threads=threads)))
    per = -(-panels // threads)
    cols = min(g.n, per * blk.nr)  # the first task's: the most
    longest = (g.m * cols * g.k + (g.m + cols) * g.k * PACK_COST) * outer
    options.append((longest, _Split(-(-panels // per), per, False, threads=threads)))
    if row_panels > 1:
        per = -(-row_panels // threads)
        rows = min(g.m, per * blk.mr)
        longest = (rows * g.n * g.k + (rows + g.n) * g.k * PACK_COST) * outer
        options.append((longest, _Split(-(-row_panels // per), per, False, rows=True,
                                        threads=threads)))
    best, split = options[0]
    for longest, other in options[1:]:
        if longest < SWITCH_GAIN * best:
            best, split = longest, other
    return split


@dataclass(frozen=True)
class Placement:
    """Where each outer dim's loop goes (see `place_outer`), outer to inner each."""

    keep: list[int]  # outside the GEMM (they index both inputs)
    a_inner: list[int]  # inside the k blocks, after B's panel is packed: A-only dims
    b_inner: list[int]  # inside the row blocks, after A's block is packed: B-only dims


def place_outer(g: Contraction, blk: Blocking, split: _Split) -> Placement:
    """Loops over outer dims that do not index an input need not repack it: an outer
    dim that B does not depend on runs inside the k-block loop, after B's panel is
    packed (`for jc: for pc: pack B; for A-only dims: for ic: pack A; tiles`), which
    saves work whatever the shapes. One that A does not depend on (a convolution's
    batch: the weights are A) runs inside the row-block loop, after A's block is
    packed (`for ic: pack A; for B-only dims: pack B; tiles`): A is packed once per
    (jc, pc, ic) block instead of once per batch index, at the price of packing B's
    panel once per row block (ceil(M / MC) times instead of once); taken when that
    packs fewer elements in all. Dims that index both stay outside. The order in which
    each element of C sums its k blocks is the same either way."""
    a_only = [d for d in g.outer if d not in g.b.coef]
    b_only = [d for d in g.outer if d not in g.a.coef]
    if b_only:
        count = prod(g.sizes[d] for d in b_only)  # B-only iterations per task
        if split.outer and g.outer[0] in b_only:
            count = count // g.sizes[g.outer[0]] * split.per_task
        cols = g.n if split.outer or split.k or split.rows else \
            min(g.n, split.per_task * blk.nr)
        jcs, ics = -(-cols // blk.nc), -(-g.m // blk.mc)
        a_panel = -(-g.m // blk.mr) * blk.mr  # packed A per k and column block
        b_panel = -(-cols // blk.nr) * blk.nr  # packed B per k and pass over it
        if jcs * a_panel + count * ics * b_panel >= count * (jcs * a_panel + b_panel):
            b_only = []
    keep = [d for d in g.outer if d not in a_only and d not in b_only]
    return Placement(keep, a_only, b_only)


def _pow2_dividing(limit: int, *values: int) -> int:
    """The largest power of two, at most `limit`, that divides every one of `values`."""
    run = 1
    while run < limit and all(v % (2 * run) == 0 for v in values):
        run *= 2
    return run


def _run_width(g: Contraction, blk: Blocking) -> tuple[int, int]:
    """(R, s): every aligned group of R columns of B lies in B at a stride of s (1 or 2);
    R = 0: none. Either B's columns are contiguous (a plain [k, n] weight: any group of
    R columns, R a power of two dividing a vector and NR, is one run), or they are
    addressed through a table (a convolution's output positions, whose rows are apart by
    the padded width) but its innermost column dim has stride s (the convolution's
    stride), so each image row of W columns is one run, and any power of two that
    divides W (at most a vector) splits runs evenly. Panels start at multiples of NR, so
    groups never straddle two runs. (Element by element, a plain B's packing clamps
    each column index to the last one: GCC vectorized that loop with gathers, 15 % of
    the emitted MNIST MLP program's step.)"""
    step = g.b.coef.get(g.cols[-1])
    if step not in (1, 2):
        return 0, 1
    if g.b.stride(g.cols, g.sizes) is not None:
        if step != 1:
            return 0, 1
        run = _pow2_dividing(blk.lanes, blk.nr)
        return (run if run > 1 else 0), 1
    run = _pow2_dividing(blk.lanes, g.sizes[g.cols[-1]], blk.nr)
    return (run if run > 1 else 0), step


def _k_run(g: Contraction, blk: Blocking, split: _Split) -> tuple[int, int]:
    """(R, s): every aligned group of R k indices of B lies in B at a stride of s (1 or
    2); R = 0: none, or too few to pay. B's innermost reduction dim has stride s (a
    convolution's weight gradient sums over image rows, read every s-th element at
    stride s; `X * W^T` reads W's rows), so any power of two that divides that dim, KC,
    NR and a split-K task's k range splits the runs evenly. Such a B is packed by
    in-register transposes (`pack`)."""
    step = g.b.coef.get(g.red[-1])
    if step not in (1, 2):
        return 0, 1
    run = _pow2_dividing(blk.lanes, g.sizes[g.red[-1]], blk.kc, blk.nr,
                         split.per_task if split.k else 0)
    return (run if run >= 4 else 0), step


def _load_run(ir: _Ir, src: SSAValue, at: Index, n: int, step: int) -> SSAValue:
    """vector<n x f32> of src[at + i * step], step 1 or 2: one load, or two overlapping
    loads and a shuffle of their even lanes (the second ends at the run's last element,
    so nothing past it is read)."""
    vt = VectorType(f32, [n])
    first = ir.ins(vector.LoadOp(src, [ir.idx(at)], vt)).results[0]
    if step == 1:
        return first
    second = ir.ins(vector.LoadOp(src, [ir.idx(ir.add(at, n - 1))], vt)).results[0]
    evens = DenseArrayBase.from_list(i64, [*range(0, n, 2), *range(n + 1, 2 * n, 2)])
    return ir.ins(vector.ShuffleOp(first, second, evens, result_type=vt)).results[0]


def _transpose(ir: _Ir, rows: Sequence[SSAValue]) -> list[SSAValue]:
    """The transpose of the R x R matrix whose rows are the R `vector<R x f32>` `rows`
    (R a power of two): log2(R) rounds of two-input shuffles, each swapping the
    off-diagonal b x b blocks of every 2b x 2b block (b = R/2, ..., 1)."""
    n = len(rows)
    vt = VectorType(f32, [n])
    x = list(rows)
    b = n // 2
    while b >= 1:
        lo = [p if p // b % 2 == 0 else n + p - b for p in range(n)]
        hi = [p + b if p // b % 2 == 0 else n + p for p in range(n)]
        for i in range(n):
            if i // b % 2 == 0:
                x[i], x[i + b] = (ir.ins(vector.ShuffleOp(
                    x[i], x[i + b], DenseArrayBase.from_list(i64, mask), result_type=vt)
                    ).results[0] for mask in (lo, hi))
        b //= 2
    return x


DIRECT_A_MIN = 1 << 16
"""Elements of A from which `_direct_a` may read it in place: a smaller A is packed in
little time, and each (row stride, k stride) pair read in place costs micro-kernels of
its own to compile (a TransformerEncoderBlock's 32 x 32 products compiled 0.7 s slower
with them)."""


def _direct_a(g: Contraction, blk: Blocking, split: _Split, place: Placement,
              max_uses: int, min_elements: int = DIRECT_A_MIN) -> tuple[int, int] | None:
    """A's (row stride, k stride) when the micro-kernels should read it in place rather
    than from a packed copy, else None. Packing costs about a load and a store per
    element (a panel is MR rows wide: a k's MR floats at most one vector), and repays
    that only when
    the packed block meets many B vectors: a deep convolution layer's weights (512 x
    4608, 32 columns: one column panel) were packed at more cost than their FMAs. Taken
    when A needs no offset table, has at least `min_elements` over all its outer dims
    (attention's per-head probabilities are 128 x 128 each, 64 heads: 1M elements, and
    each meets only 2 vectors of V; read in place, A·V ran 60 -> 110 GFLOP/s), and
    each packed element would meet at most `max_uses` B vectors (column panels per
    block x B-only outer iterations x vectors per tile).
    Reading A in place streams MR rows (or, with k strided, one short run of rows per
    k) instead of one panel; the sums are the same, in the same order."""
    rs, ks = g.a.stride(g.rows, g.sizes), g.a.stride(g.red, g.sizes)
    a_outer = prod(g.sizes[d] for d in g.outer if d in g.a.coef)
    if rs is None or ks is None or max_uses <= 0 or g.m * g.k * a_outer < min_elements:
        return None
    count = prod(g.sizes[d] for d in place.b_inner)  # B-only iterations per A block
    if split.outer and place.b_inner and g.outer[0] == place.b_inner[0]:
        count = count // g.sizes[g.outer[0]] * split.per_task
    cols = g.n if split.outer or split.k or split.rows else \
        min(g.n, split.per_task * blk.nr)
    panels = -(-min(cols, blk.nc) // blk.nr)
    return (rs, ks) if panels * count * blk.nv <= max_uses else None


GATHER_GAIN = 1.25
"""How many times fewer column vectors gathering them must give (`gather_columns`):
ResNet-18's 7 x 7 layers at batch 8 (49 columns an image, 4 vectors of 16 lanes, the
last one 1 column; gathered 392, 25 vectors: 1.28x) run their forward convolution 24 %
faster gathered, its 14 x 14 layers (196: 13 vectors an image, 98 gathered: 1.06x) 3-5 %
slower (the copies of C)."""


def gather_columns(g: Contraction, threads: int, *, lanes: int, acc: int,
                   l1: int, l2: int, l3: int = 0, nv: int = 0, mr: int = 0, kc: int = 0
                   ) -> tuple[Contraction, Blocking] | None:
    """`g` with its outer dims made columns, when none of them indexes A and C has
    few columns per outer index: a deep convolution layer's 2 x 2 images give 4
    columns per image, and every MR x NR tile (NR = 16 or more) would be mostly padding;
    7 x 7 images give 49, three whole vectors of 16 lanes and a 1-column one.
    Columns then span the batch (B, the images, is addressed through its column table
    as before), and since C's columns are no longer contiguous (C is [n, rows, cols]),
    the GEMM works on a contiguous M x N copy of C in the scratch, copied in (unless C
    was zero-filled) and back by each task for its part (its column panels, or its row
    panels: a split over rows balances 392 columns' 6 2/16 panels). Taken when that makes
    `GATHER_GAIN` times fewer column vectors, and only without an epilogue (the caller
    checks) or split-K (`_task_split`). The blocking is chosen for the new N, with
    vectors per tile cut until there are column panels for every thread. Each element
    of C still sums the same k blocks in the same order, from the same start."""
    if not g.outer or any(d in g.a.coef for d in g.outer):
        return None
    row_stride = g.c.stride(g.rows, g.sizes)
    if row_stride is None:
        return None
    count = prod(g.sizes[d] for d in g.outer)
    cols = [*g.outer, *g.cols]
    coef: dict[int, int] = {}
    step = 1
    for d in reversed([*g.rows, *cols]):  # the copy is [rows, cols], row-major
        coef[d] = step
        step *= g.sizes[d]
    g2 = Contraction(g.sizes, [], list(g.rows), cols, list(g.red), g.a, g.b,
                     _Operand(coef, 0), g.a_value, g.b_value, g.c_value, list(g.out_dims),
                     Gather(g.c, row_stride))
    if not nv:
        nv = max(1, min(4 if acc >= 24 else 2, -(-g2.n // lanes)))
        while nv > 1 and -(-g2.n // (nv * lanes)) < threads:
            nv -= 1
    blk2 = choose_blocking(g2.m, g2.n, g2.k, lanes=lanes, acc=acc, l1=l1, l2=l2, l3=l3,
                           nv=nv, mr=mr, kc=kc)
    # The cost is in vectors of columns: the last column panel runs exact micro-kernels
    # for its whole vectors and one padded vector for the ragged rest.
    before = count * -(-g.n // lanes)
    after = -(-g2.n // lanes)
    if before < GATHER_GAIN * after:
        return None
    return g2, blk2


def _c_arg_index(fn: func.FuncOp, generic: linalg.GenericOp) -> int | None:
    """Which argument of kernel `fn` is its GEMM's output C (None if C is not one)."""
    out = generic.outputs[0]
    args = list(fn.body.blocks[0].args)
    return args.index(out) if out in args else None


def _is_zero_fill(fn: func.FuncOp) -> bool:
    """A kernel whose whole body fills its one argument with +0.0."""
    if not fn.body.blocks or len(fn.body.blocks[0].args) != 1:
        return False
    ops = [o for o in fn.body.blocks[0].ops if not isinstance(o, func.ReturnOp)]
    fills = [o for o in ops if isinstance(o, linalg.FillOp)]
    consts = [o for o in ops if isinstance(o, arith.ConstantOp)]
    if len(fills) != 1 or len(ops) != len(fills) + len(consts):
        return False
    value = fills[0].inputs[0].owner
    return isinstance(value, arith.ConstantOp) and isinstance(value.value, builtin.FloatAttr) \
        and str(value.value.value.data) == "0.0"


def _zero_fills_before(module: builtin.ModuleOp, c_index: dict[str, int | None]
                       ) -> dict[str, list[func.CallOp]]:
    """For each GEMM kernel whose every call is right after a call that zero-fills its C
    (only constants and views in between), those fill calls: the GEMM can start its
    first k block from zero and the fills can go."""
    kernels = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    found: dict[str, list[func.CallOp]] = {}
    refused: set[str] = set()
    for fn in kernels.values():
        for call in (o for o in fn.walk() if isinstance(o, func.CallOp)):
            name = call.callee.root_reference.data
            if name not in c_index:
                continue
            index = c_index[name]
            prev = call.prev_op
            while isinstance(prev, arith.ConstantOp | memref.ViewOp) or is_profile_call(prev):
                prev = prev.prev_op
            fill = kernels.get(prev.callee.root_reference.data) \
                if isinstance(prev, func.CallOp) else None
            if index is None or fill is None or not _is_zero_fill(fill) or \
                    prev.operands[0] is not call.operands[index]:  # type: ignore[union-attr]
                refused.add(name)
                continue
            found.setdefault(name, []).append(prev)  # type: ignore[arg-type]
    return {k: v for k, v in found.items() if k not in refused}


def _erase_unused_fills(module: builtin.ModuleOp, names: set[str]) -> None:
    """Erase the fill kernels among `names` that no call uses any more (a dropped fill
    leaves its kernel behind; an unused static function fails C++'s -Werror)."""
    called = {o.callee.root_reference.data for o in module.walk()
              if isinstance(o, func.CallOp)}
    for fn in list(module.ops):
        if isinstance(fn, func.FuncOp) and fn.sym_name.data in names - called:
            fn.detach()
            fn.erase()


@dataclass(frozen=True)
class FrameGemm(ModulePass):
    """Rewrite contraction kernels as packed, cache-blocked GEMMs (see module doc)."""

    name = "frame-gemm"

    lanes: int = 16
    acc: int = 24
    l1: int = 48 * 1024
    l2: int = 1024 * 1024
    # L3 bytes shared by the `threads` (0: the B block sized by L2, as MC).
    l3: int = 0
    threads: int = 1
    # Below 2^16 multiply-adds the packed kernel gains little over the plain loops that
    # LLVM vectorizes, and every instance costs compile time: a TransformerEncoderBlock
    # (embed 32, ffn 64) trains 4% slower with its 32x32x32 products as plain loops,
    # and compiles in 4.9 s instead of 5.8 s (issue 10's target is 5 s).
    min_flops: int = 65536
    # A (of at least `direct_a_min` elements) is read in place, not packed, when each
    # element would meet at most `direct_a_max` B vectors (`_direct_a`); 0: always pack.
    direct_a_max: int = 8
    direct_a_min: int = DIRECT_A_MIN
    # B of at least this many elements gets vector packing paths (`FAST_PACK_MIN`).
    fast_pack_min: int = FAST_PACK_MIN
    # Multiply-adds per thread a GEMM needs to be split over more threads
    # (`gemm_threads`; 0: split over `threads` whatever the size).
    min_task_macs: int = MIN_TASK_MACS
    # Overrides of the chosen register tile and k block (0: automatic), for tuning.
    nv: int = 0
    mr: int = 0
    kc: int = 0

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        plans: list[tuple[func.FuncOp, linalg.GenericOp, Contraction, Epilogue | None]] = []
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp):
                continue
            generics = _kernel_generics(fn)
            g = analyze(generics[0]) if generics else None
            if g is None:
                continue
            if g.m * g.n * g.k * prod(g.sizes[d] for d in g.outer) < self.min_flops:
                continue
            # An epilogue that does not fit stays behind the GEMM as plain loops.
            epi = analyze_epilogue(g, generics[1:]) if len(generics) > 1 else None
            plans.append((fn, generics[0], g, epi))
        fills = _zero_fills_before(
            op, {fn.sym_name.data: _c_arg_index(fn, generic) for fn, generic, _, _ in plans})
        fill_kernels = {c.callee.root_reference.data for calls in fills.values() for c in calls}
        scratch_of: dict[str, int] = {}
        micros: dict[str, func.FuncOp] = {}
        for fn, generic, g, epi in plans:
            # Each task packs a B block of its own: they share the L3.
            knobs = {"lanes": self.lanes, "acc": self.acc, "l1": self.l1, "l2": self.l2,
                     "l3": self.l3 // max(1, self.threads), "nv": self.nv, "mr": self.mr,
                     "kc": self.kc}
            blk = choose_blocking(g.m, g.n, g.k, **knobs)
            threads = gemm_threads(g, self.threads, self.min_task_macs)
            gathered = gather_columns(g, threads, **knobs) if epi is None else None
            if gathered is not None:
                g, blk = gathered
            split = _task_split(g, blk, threads)
            # The most threads the tasks may use: all of them (0), or fewer (1: none).
            split = replace(split, threads=0 if threads >= self.threads else threads)
            direct_a = _direct_a(g, blk, split, place_outer(g, blk, split), self.direct_a_max,
                                 self.direct_a_min)
            scratch = _Scratch.of(g, blk, split, direct_a is None)
            nbytes = scratch.nbytes
            block = fn.body.blocks[0]
            ws = block.insert_arg(MemRefType(i8, [nbytes]), len(block.args))
            fn.function_type = func.FunctionType.from_lists(
                [a.type for a in block.args], [])
            if fn.arg_attrs is not None:
                fn.arg_attrs = ArrayAttr([*fn.arg_attrs.data, builtin.DictionaryAttr({})])
            name = fn.sym_name.data
            beta0 = name in fills
            ir = _Ir(Builder(InsertPoint.before(generic)))
            build_gemm(ir, g, blk, split, ws, scratch, micros, beta0, epi,
                       epi is not None and _epilogue_bytes(g, epi) <= self.l2 // 2,
                       direct_a, self.fast_pack_min, C_DEAD_ATTR in fn.attributes)
            for done in [generic, *(epi.ops if epi is not None else ())]:
                done.detach()
                done.erase()
            scratch_of[name] = nbytes
            # The loops are its own now: the generic's iterator summary no longer applies.
            fn.attributes.pop("frame.parallel_dims", None)
            fn.attributes.pop(C_DEAD_ATTR, None)
            for fill_call in fills.get(name, []):
                erase_call(fill_call)
        first = next((f for f in op.ops if isinstance(f, func.FuncOp)), None)
        for micro in micros.values():
            if first is None:
                op.body.block.add_op(micro)
            else:
                Rewriter.insert_op(micro, InsertPoint.before(first))
        if scratch_of:
            self._give_scratch(op, scratch_of)
        _erase_unused_fills(op, fill_kernels)

    def _give_scratch(self, module: builtin.ModuleOp, scratch_of: dict[str, int]) -> None:
        """Pass each GEMM kernel a view of scratch at the end of its caller's arena."""
        for fn in module.ops:
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            calls = [c for c in fn.walk() if isinstance(c, func.CallOp)
                     and c.callee.root_reference.data in scratch_of]
            if not calls:
                continue
            index = arena_arg_index(fn)
            if index is None:
                raise ValueError(f"@{fn.sym_name.data} calls a GEMM kernel but has no "
                                 "frame.arena argument for its scratch")
            arena = fn.body.blocks[0].args[index]
            size_attr = fn.attributes.get("frame.arena_size")
            old = size_attr.value.data if isinstance(size_attr, IntegerAttr) else \
                prod(arena.type.get_shape())  # type: ignore[attr-defined]
            start = -(-old // ALIGN) * ALIGN
            need = max(scratch_of[c.callee.root_reference.data] for c in calls)
            new_size = start + need
            arena_type = MemRefType(i8, [new_size])
            Rewriter.replace_value_with_new_type(arena, arena_type)
            arena = fn.body.blocks[0].args[index]
            fn.function_type = func.FunctionType.from_lists(
                [a.type for a in fn.body.blocks[0].args],
                list(fn.function_type.outputs.data))
            fn.attributes["frame.arena_size"] = IntegerAttr(new_size, i64)
            for call in calls:
                need_c = scratch_of[call.callee.root_reference.data]
                b = Builder(InsertPoint.before(call))
                off = b.insert(arith.ConstantOp(IntegerAttr(start, IndexType()))).result
                view = b.insert(memref.ViewOp(arena, off, [], MemRefType(i8, [need_c])))
                new_call = func.CallOp(call.callee, [*call.arguments, view.results[0]], [])
                new_call.attributes.update(call.attributes)
                Rewriter.replace_op(call, new_call)
