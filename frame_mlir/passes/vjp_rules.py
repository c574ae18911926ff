"""The VJP table: one reverse-mode rule per frame op, used by frame-autodiff.

A rule receives an `Emitter` (which inserts a new frame op and returns its
result), the forward op, the adjoint of its result and, per operand, whether
that operand needs an adjoint at all (activity analysis: data inputs and the
target need none). It returns one adjoint per operand, None where not needed,
and emits nothing for operands that need none -- so the first layer of an MLP
never computes d loss / d x.

An op without a rule makes autodiff fail with `no gradient rule for <op name>`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from frame_mlir.dialects import (
    frame,
    frame_conv,
    frame_loss,
    frame_math,
    frame_movement,
    frame_norm,
    frame_reduce,
    frame_scan,
    frame_softmax,
    frame_spectral,
)

Emitter = Callable[[Operation], SSAValue]
Adjoints = list[SSAValue | None]
VjpRule = Callable[[Emitter, Operation, SSAValue, Sequence[bool]], Adjoints]


def _matmul(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.MatmulOp)
    a, b = op.lhs, op.rhs
    ta, tb = op.transpose_lhs is not None, op.transpose_rhs is not None
    da = db = None
    # C = op(A) @ op(B); transposes fold into the flags and are never materialised.
    if need[0]:
        if ta:  # dA = (dC @ op(B)^T)^T = op(B) @ dC^T
            da = emit(frame.MatmulOp(b, dc, transpose_lhs=tb, transpose_rhs=True))
        else:  # dA = dC @ op(B)^T
            da = emit(frame.MatmulOp(dc, b, transpose_rhs=not tb))
    if need[1]:
        if tb:  # dB = (op(A)^T @ dC)^T = dC^T @ op(A)
            db = emit(frame.MatmulOp(dc, a, transpose_lhs=True, transpose_rhs=ta))
        else:  # dB = op(A)^T @ dC
            db = emit(frame.MatmulOp(a, dc, transpose_lhs=not ta))
    return [da, db]


# add, sub and mul broadcast: an operand's adjoint is summed over the dims it was
# broadcast along (`reduce_to`, which emits nothing without broadcasting).
_reduce_to = frame_reduce.reduce_to


def _add(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.AddOp)
    return [_reduce_to(emit, dc, op.lhs) if need[0] else None,
            _reduce_to(emit, dc, op.rhs) if need[1] else None]


def _sub(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.SubOp)
    return [_reduce_to(emit, dc, op.lhs) if need[0] else None,
            emit(frame.NegOp(_reduce_to(emit, dc, op.rhs))) if need[1] else None]


def _mul(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.MulOp)
    return [
        _reduce_to(emit, emit(frame.MulOp(dc, op.rhs)), op.lhs) if need[0] else None,
        _reduce_to(emit, emit(frame.MulOp(dc, op.lhs)), op.rhs) if need[1] else None,
    ]


def _neg(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(frame.NegOp(dc))]


def _scale(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.ScaleOp)
    return [emit(frame.ScaleOp(dc, op.factor.value.data))]


def _relu(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.ReluOp)
    return [emit(frame.ReluGradOp(op.input, dc))]


def _sum(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.SumOp)
    axes = None if op.axes is None else list(op.axes.get_values())
    return [emit(frame.BroadcastOp(frame_reduce.unkeep(emit, op, dc), op.input.type, axes))]


def _broadcast(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.BroadcastOp)
    axes = None if op.axes is None else list(op.axes.get_values())
    return [emit(frame.SumOp(dc, axes))]


def _mse_loss(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.MseLossOp)
    dp = emit(frame.MseLossGradOp(op.lhs, op.rhs, dc))
    # d/dt (p - t)^2 = -(d/dp): reuse dp rather than a second gradient kernel.
    return [dp if need[0] else None, emit(frame.NegOp(dp)) if need[1] else None]


def _sigmoid(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.SigmoidOp)
    s = op.result  # d sigmoid = s * (1 - s)
    one = emit(frame.ConstantOp(1.0, result_type=s.type))
    return [emit(frame.MulOp(dc, emit(frame.MulOp(s, emit(frame.SubOp(one, s))))))]


def _heaviside(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.HeavisideSurrogateOp)
    return [emit(frame.HeavisideSurrogateGradOp(op.input, dc, op.alpha.value.data))]


def _selective_scan(emit: Emitter, op: Operation, dc: SSAValue,
                    need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.SelectiveScanOp)
    return [emit(frame.SelectiveScanGradOp(op.operands, dc, k)) if need[k] else None
            for k in range(5)]


def _scatter_add(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.ScatterAddOp)
    # Integer indices get no adjoint.
    return [emit(frame.GatherRowsOp(dc, op.indices)) if need[0] else None, None]


def _gather_rows(emit: Emitter, op: Operation, dc: SSAValue, need: Sequence[bool]) -> Adjoints:
    assert isinstance(op, frame.GatherRowsOp)
    # Each gathered row's adjoint flows back to the row it came from; rows gathered
    # several times accumulate (scatter_add sums repeated indices).
    if not need[0]:
        return [None, None]
    return [emit(frame.ScatterAddOp(dc, op.indices, op.source.type)), None]


VJP_RULES: dict[type[Operation], VjpRule] = {
    frame.ScatterAddOp: _scatter_add,
    frame.GatherRowsOp: _gather_rows,
    frame.SelectiveScanOp: _selective_scan,
    frame.SigmoidOp: _sigmoid,
    frame.HeavisideSurrogateOp: _heaviside,
    frame.MatmulOp: _matmul,
    frame.AddOp: _add,
    frame.SubOp: _sub,
    frame.MulOp: _mul,
    frame.NegOp: _neg,
    frame.ScaleOp: _scale,
    frame.ReluOp: _relu,
    frame.SumOp: _sum,
    frame.BroadcastOp: _broadcast,
    frame.MseLossOp: _mse_loss,
}
VJP_RULES.update(frame_conv.VJP_RULES)
VJP_RULES.update(frame_math.VJP_RULES)
VJP_RULES.update(frame_softmax.VJP_RULES)
VJP_RULES.update(frame_norm.VJP_RULES)
VJP_RULES.update(frame_movement.VJP_RULES)
VJP_RULES.update(frame_reduce.VJP_RULES)
VJP_RULES.update(frame_spectral.VJP_RULES)
VJP_RULES.update(frame_loss.VJP_RULES)
VJP_RULES.update(frame_scan.VJP_RULES)
