"""The frame dialect's spectral family: rfft and irfft along the last axis and the
gradient ops their VJPs emit -- ops, shape rules, verifiers, VJP rules and lowerings in
this one file (like `frame_math.py`).

`rfft(x[..., n])` is the unnormalised real DFT, `[..., n//2+1, 2]` with (re, im) in the
last axis; `irfft(z[..., n//2+1, 2]; n)` is `numpy.fft.irfft(z[..., 0] + 1j*z[..., 1], n)`:
the Hermitian-extended spectrum transformed back and scaled by 1/n, the imaginary
parts of bin 0 and (even n) bin n/2 ignored. f32 only; n >= 2.

The lowering is a mixed-radix Stockham FFT (decimation in time, self-sorting: no
bit reversal), all in linalg.generic. n is split into prime factors (all 2s for a
power of two: log2 n stages). Before stage s the buffer holds, for every one of the
R = n / L sub-sequences x[r], x[r + R], x[r + 2R], ... (L the product of the factors
already used), its length-L DFT at linear position k * R + r. A stage with the next
factor p (L' = L * p, R' = R / p) makes each output j = k * R' + r (k < L', r < R'):

    A'[j] = sum_{q < p} w_{L'}^(k q) * A[(k mod L) * R + r + q * R'],   w_m = exp(-2 pi i / m)

one generic over (batch..., j, q), q a reduction of p trips, whose input map is that
affine expression of j and q (floordiv / mod), and whose twiddles come from a small
per-stage table T[k, q] = w_{L'}^((k q) mod L') (one generic of linalg.index
arithmetic, cos / sin in f64 rounded once to f32: independent of the batch). After
the last stage (R = 1) the buffer is the DFT in natural order. Work: n * sum(p) per
row -- O(n log n) for a power of two (or any smooth n), O(n^2) for a prime n (one
stage with p = n, the direct DFT). Sums accumulate in f32 in q order.

rfft runs the stages on the real input (the first stage reads no imaginary part),
computes only bins < n//2+1 in the last stage, and interleaves (re, im). irfft builds
the Hermitian extension (bin j < K from z[j], bin j >= K as conj(z[n - j]), imaginary
parts of the self-conjugate bins zeroed, everything scaled by 1/n), runs the stages
with conjugate twiddles (the inverse DFT) and keeps the real part.

VJPs (both maps are real-linear): for y = rfft(x) with cotangent g,
`dx[t] = Re sum_{k < K} g_k e^(2 pi i k t / n)` (`frame.rfft_grad`); for x = irfft(z)
with cotangent g, `dz_k = (c_k / n) * rfft(g)_k` with c_k = 1 for bin 0 and (even n)
bin n/2, else 2, and the imaginary parts of those two bins exactly 0 -- the irfft
ignores them (`frame.irfft_grad`). They are torch's `fft_r2c_backward` and
`fft_c2r_backward`.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AffineMapAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    TensorType,
    f32,
    f64,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects.frame_base import Shape, ShapeError, UnaryOp, _fmt, static_shape
from frame_mlir.dialects.linalg_utils import PAR, RED, dims_map, identity_map
from frame_mlir.dialects.linalg_utils import f32_const as _c


def bins(n: int) -> int:
    """The number of rfft bins of a length-n signal: n // 2 + 1."""
    return n // 2 + 1


def _signal_rule(name: str, s: Shape) -> int:
    """The signal length (last dim) of a real operand [..., n], n >= 2."""
    if len(s) < 1:
        raise ShapeError(f"{name}: input expected rank >= 1 ([..., n]), found {_fmt(s)}")
    if s[-1] < 2:
        raise ShapeError(f"{name}: last dim (the signal length n) expected >= 2, found "
                         f"{s[-1]} in {_fmt(s)}")
    return s[-1]


def _real_rule(name: str, shapes: Sequence[Shape]) -> Shape:
    """[..., n] -> [..., n//2+1, 2]."""
    (s,) = shapes
    n = _signal_rule(name, s)
    return (*s[:-1], bins(n), 2)


def _spectrum_rule(name: str, shapes: Sequence[Shape], n: int) -> Shape:
    """[..., n//2+1, 2] -> [..., n]."""
    (s,) = shapes
    if n < 2:
        raise ShapeError(f"{name}: n expected >= 2, found {n}")
    if len(s) < 2 or s[-1] != 2:
        raise ShapeError(f"{name}: input expected [..., {bins(n)}, 2] ((re, im) in the last "
                         f"dim), found {_fmt(s)}")
    if s[-2] != bins(n):
        raise ShapeError(f"{name}: bins (dim {len(s) - 2}) expected {bins(n)} (n // 2 + 1 "
                         f"for n = {n}), found {s[-2]} in {_fmt(s)}")
    return (*s[:-2], n)


class _SpectralOp(UnaryOp):
    """f32 operands only (the FFT kernels compute and store f32)."""

    def verify_(self) -> None:
        super().verify_()
        for what, v in (("operand", self.input), ("result", self.result)):
            if getattr(v.type, "element_type", None) != f32:
                raise VerifyException(f"{self.name}: f32 only: {what} expected a tensor of "
                                      f"f32, found {v.type}")


class _SignalLength(_SpectralOp):
    """The signal length `n` of an op that returns [..., n] from a spectrum."""

    n = prop_def(IntegerAttr)

    def length(self) -> int:
        return self.n.value.data  # type: ignore[attr-defined]

    def rule_attrs(self) -> dict[str, object]:
        return {"n": self.length()}


@irdl_op_definition
class RfftOp(_SpectralOp):
    """Unnormalised real DFT along the last axis; (re, im) in the new last axis.
    ``%z = frame.rfft %x : (tensor<3x8xf32>) -> tensor<3x5x2xf32>``"""

    name = "frame.rfft"

    def __init__(self, input: SSAValue | Operation):
        super().__init__(input)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _real_rule("frame.rfft", shapes)


@irdl_op_definition
class IrfftOp(_SignalLength):
    """numpy.fft.irfft along the bins axis: the inverse of rfft for length `n`, scaled
    by 1/n; the imaginary parts of bin 0 and (even n) bin n/2 are ignored.
    ``%x = frame.irfft %z {n = 8 : i64} : (tensor<3x5x2xf32>) -> tensor<3x8xf32>``"""

    name = "frame.irfft"

    def __init__(self, input: SSAValue | Operation, n: int):
        ops = [SSAValue.get(input)]
        super().__init__(input, self.result_type_for(ops, n=n), {"n": IntegerAttr(n, i64)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _spectrum_rule("frame.irfft", shapes, int(attrs["n"]))  # type: ignore[call-overload]


@irdl_op_definition
class RfftGradOp(_SignalLength):
    """The rfft VJP: dx[t] = Re sum_k dz_k exp(2 pi i k t / n), k < n//2+1.
    ``%dx = frame.rfft_grad %dz {n = 8 : i64} : (tensor<3x5x2xf32>) -> tensor<3x8xf32>``"""

    name = "frame.rfft_grad"

    def __init__(self, dz: SSAValue | Operation, n: int):
        ops = [SSAValue.get(dz)]
        super().__init__(dz, self.result_type_for(ops, n=n), {"n": IntegerAttr(n, i64)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _spectrum_rule("frame.rfft_grad", shapes, int(attrs["n"]))  # type: ignore[call-overload]


@irdl_op_definition
class IrfftGradOp(_SpectralOp):
    """The irfft VJP: dz_k = (c_k / n) rfft(dx)_k, c_k = 1 at bin 0 and (even n) n/2
    (whose imaginary parts are 0), else 2.
    ``%dz = frame.irfft_grad %dx : (tensor<3x8xf32>) -> tensor<3x5x2xf32>``"""

    name = "frame.irfft_grad"

    def __init__(self, dx: SSAValue | Operation):
        super().__init__(dx)

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _real_rule("frame.irfft_grad", shapes)


OPS = [RfftOp, IrfftOp, RfftGradOp, IrfftGradOp]


# --- VJP rules --------------------------------------------------------------------------

Adjoints = list[SSAValue | None]
Emit = Callable[[Operation], SSAValue]


def _vjp_rfft(emit: Emit, op: Any, dz: SSAValue, need: Sequence[bool]) -> Adjoints:
    n = (static_shape(op.input) or (0,))[-1]
    return [emit(RfftGradOp(dz, n))]


def _vjp_irfft(emit: Emit, op: Any, dx: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(IrfftGradOp(dx))]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    RfftOp: _vjp_rfft, IrfftOp: _vjp_irfft}


# --- lowerings ----------------------------------------------------------------------------


def factors(n: int) -> list[int]:
    """The radices of the FFT stages: the prime factors of n, ascending (all 2s for a
    power of two)."""
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _dims(count: int) -> list[AffineExpr]:
    return [AffineExpr.dimension(i) for i in range(count)]


def _map(num_dims: int, results: Sequence[AffineExpr]) -> AffineMapAttr:
    return AffineMapAttr(AffineMap(num_dims, 0, tuple(results)))


def _index(b: Builder, dim: int) -> SSAValue:
    return b.insert(linalg.IndexOp(dim)).result


def _index_const(b: Builder, value: int) -> SSAValue:
    return b.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result


def _index_eq(b: Builder, idx: SSAValue, value: int) -> SSAValue:
    return b.insert(arith.CmpiOp(idx, _index_const(b, value), "eq")).result


def _select(b: Builder, cond: SSAValue, yes: SSAValue, no: SSAValue) -> SSAValue:
    return b.insert(arith.SelectOp(cond, yes, no)).result


def _mul(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.MulfOp(x, y)).result


def _add(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.AddfOp(x, y)).result


def _sub(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.SubfOp(x, y)).result


def _twiddles(lw: Any, rows: int, p: int, length: int, sign: int) -> tuple[SSAValue, SSAValue]:
    """(re, im) tables [rows, p]: T[k, q] = exp(sign * 2 pi i * ((k q) mod length) /
    length). The integer product is exact; the angle, cos and sin are f64, rounded
    once to f32 (so each twiddle is within an f32 rounding of the true value)."""
    typ = TensorType(f32, [rows, p])
    step = sign * 2.0 * pymath.pi / length

    def body(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        kq = b.insert(arith.MuliOp(_index(b, 0), _index(b, 1))).result
        m = b.insert(arith.RemUIOp(kq, _index_const(b, length))).result
        as_int = b.insert(arith.IndexCastOp(m, i64)).result
        mf = b.insert(arith.SIToFPOp(as_int, f64)).result
        angle = b.insert(arith.MulfOp(mf, b.insert(arith.ConstantOp(FloatAttr(step, f64)))
                                      .result)).result
        return [b.insert(arith.TruncFOp(b.insert(fn(angle)).result, f32)).result
                for fn in (math.CosOp, math.SinOp)]

    re, im = lw.generic_multi([], [lw.empty(typ), lw.empty(typ)], [identity_map(2)] * 2,
                              [PAR, PAR], body)
    return re, im


def _stage_read(j: AffineExpr, q: AffineExpr, length: int, stride: int, sub: int
                ) -> AffineExpr:
    """The input position `((j floordiv sub) mod length) * stride + (j mod sub) + q * sub`
    of a stage's output j and term q (trivial parts left out)."""
    k = j if sub == 1 else j // sub
    k = k if length == 1 else k % length
    terms: list[AffineExpr] = []
    if length > 1:
        terms.append(k * stride if stride != 1 else k)
    if sub > 1:
        terms.append(j % sub)
    terms.append(q * sub if sub != 1 else q)
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _fft(lw: Any, re: SSAValue, im: SSAValue | None, sign: int, out_len: int,
         real_out: bool = False) -> list[SSAValue]:
    """The DFT (sign -1) or unnormalised inverse DFT (sign +1) along the last axis of
    `re` + i `im` ([..., n] f32; `im` None for a real signal): the Stockham stages of
    the module docstring. Returns (re, im) of bins 0 .. out_len - 1 (only re with
    `real_out`)."""
    shape = list(static_shape(re) or ())
    n, batch = shape[-1], shape[:-1]
    nb = len(batch)
    radices = factors(n)
    length = 1
    for s, p in enumerate(radices):
        last = s == len(radices) - 1
        new_len = length * p
        stride = n // length  # R: sub-sequences before this stage
        sub = stride // p  # R'
        extent = out_len if last else n
        rows = -(-extent // sub)
        t_re, t_im = _twiddles(lw, rows, p, new_len, sign)
        d = _dims(nb + 2)
        j, q = d[nb], d[nb + 1]
        a_map = _map(nb + 2, [*d[:nb], _stage_read(j, q, length, stride, sub)])
        t_map = _map(nb + 2, [j if sub == 1 else j // sub, q])
        o_map = dims_map(nb + 2, range(nb + 1))
        its = [PAR] * (nb + 1) + [RED]
        out_type = TensorType(f32, [*batch, extent])
        only_re = real_out and last
        inits = [lw.filled(out_type, 0.0)] if only_re else [lw.filled(out_type, 0.0),
                                                            lw.filled(out_type, 0.0)]
        if im is None:  # a real signal: (tr + i ti) * x
            def body(b: Builder, v: Sequence[SSAValue], only_re: bool = only_re
                     ) -> list[SSAValue]:
                x, tr, ti = v[0], v[1], v[2]
                out = [_add(b, v[3], _mul(b, tr, x))]
                return out if only_re else [*out, _add(b, v[4], _mul(b, ti, x))]
            ins, maps = [re, t_re, t_im], [a_map, t_map, t_map]
        else:  # (tr + i ti) * (ar + i ai)
            def body(b: Builder, v: Sequence[SSAValue], only_re: bool = only_re
                     ) -> list[SSAValue]:
                ar, ai, tr, ti = v[:4]
                out = [_add(b, v[4], _sub(b, _mul(b, tr, ar), _mul(b, ti, ai)))]
                if only_re:
                    return out
                return [*out, _add(b, v[5], _add(b, _mul(b, tr, ai), _mul(b, ti, ar)))]
            ins, maps = [re, im, t_re, t_im], [a_map, a_map, t_map, t_map]
        results = lw.generic_multi(ins, inits, [*maps, *[o_map] * len(inits)], its, body)
        if only_re:
            return results
        re, im = results
        length = new_len
    assert im is not None
    return [re, im]


def _result_type(op: Operation) -> TensorType:
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ


def _interleave(lw: Any, op: Operation, re: SSAValue, im: SSAValue, n: int,
                weighted: bool) -> SSAValue:
    """[..., K, 2] from re and im [..., K]; `weighted`: bin k times c_k / n, the
    imaginary parts of bin 0 and (even n) n/2 zeroed (irfft_grad)."""
    typ = _result_type(op)
    rank = typ.get_num_dims()
    part = dims_map(rank, range(rank - 1))

    def body(b: Builder, a: Sequence[SSAValue]) -> SSAValue:
        c = _index(b, rank - 1)
        is_re = _index_eq(b, c, 0)
        value = _select(b, is_re, a[0], a[1])
        if not weighted:
            return value
        k = _index(b, rank - 2)
        edge = _index_eq(b, k, 0)
        if n % 2 == 0:
            edge = b.insert(arith.OrIOp(edge, _index_eq(b, k, n // 2))).result
        w = _select(b, edge, _c(b, 1.0 / n), _c(b, 2.0 / n))
        scaled = _mul(b, w, value)
        return _select(b, edge, _select(b, is_re, scaled, _c(b, 0.0)), scaled)

    return lw.generic([re, im], lw.empty(typ), [part, part, identity_map(rank)],
                      [PAR] * rank, body)


def _lower_rfft(lw: Any, op: Any) -> SSAValue:
    """rfft and irfft_grad: the forward stages on the real input, bins < n//2+1."""
    n = (static_shape(op.input) or ())[-1]
    re, im = _fft(lw, op.input, None, -1, bins(n))
    return _interleave(lw, op, re, im, n, weighted=isinstance(op, IrfftGradOp))


def _hermitian(lw: Any, z: SSAValue, n: int, interior: float, edge: float
               ) -> tuple[SSAValue, SSAValue]:
    """The full spectrum [..., n] (re, im) of the half spectrum z [..., K, 2]: bin j < K
    is z[j], bin j >= K is conj(z[n - j]); the imaginary parts of bin 0 and (even n)
    n/2 are zeroed; the self-conjugate bins are scaled by `edge`, the others by
    `interior`. Both reads, z[j mod K] and z[(n - j) mod K], stay in bounds for every
    j; the one that does not apply is discarded by a select."""
    shape = list(static_shape(z) or ())
    batch, k = shape[:-2], shape[-2]
    nb = len(batch)
    d = _dims(nb + 1)
    j = d[nb]
    near, far = j % k, (AffineExpr.constant(n) - j) % k
    maps = [_map(nb + 1, [*d[:nb], idx, AffineExpr.constant(c)])
            for idx in (near, far) for c in (0, 1)]
    typ = TensorType(f32, [*batch, n])

    def body(b: Builder, a: Sequence[SSAValue]) -> list[SSAValue]:
        pr, pi, qr, qi = a[:4]
        jj = _index(b, nb)
        low = b.insert(arith.CmpiOp(jj, _index_const(b, k), "ult")).result
        is_edge = _index_eq(b, jj, 0)
        if n % 2 == 0:
            is_edge = b.insert(arith.OrIOp(is_edge, _index_eq(b, jj, n // 2))).result
        w = _c(b, edge) if edge == interior else _select(b, is_edge, _c(b, edge),
                                                           _c(b, interior))
        re = _select(b, low, pr, qr)
        im = _select(b, low, pi, b.insert(arith.NegfOp(qi)).result)
        im = _select(b, is_edge, _c(b, 0.0), im)
        return [_mul(b, w, re), _mul(b, w, im)]

    re, im = lw.generic_multi([z] * 4, [lw.empty(typ), lw.empty(typ)],
                              [*maps, identity_map(nb + 1), identity_map(nb + 1)],
                              [PAR] * (nb + 1), body)
    return re, im


def _lower_irfft(lw: Any, op: Any) -> SSAValue:
    """irfft (1/n on every bin) and rfft_grad (1/2 on the bins that have a mirror
    image): the Hermitian extension, the inverse stages, the real part."""
    n = op.length()
    interior, edge = (1.0 / n, 1.0 / n) if isinstance(op, IrfftOp) else (0.5, 1.0)
    re, im = _hermitian(lw, op.input, n, interior, edge)
    (out,) = _fft(lw, re, im, 1, n, real_out=True)
    return out


LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    RfftOp: _lower_rfft, IrfftGradOp: _lower_rfft,
    IrfftOp: _lower_irfft, RfftGradOp: _lower_irfft}
