"""The VJP table: one reverse-mode rule per frame op, used by frame-autodiff.

A rule receives an `Emitter` (which inserts a new frame op and returns its
result), the forward op, the adjoint of its result and, per operand, whether
that operand needs an adjoint at all (activity analysis: data inputs and the
target need none). It returns one adjoint per operand, None where not needed,
and emits nothing for operands that need none -- so the first layer of an MLP
never computes d loss / d x.

An op without a rule makes autodiff fail with `no gradient rule for <op name>`.

The rules live with their ops, in the family files under `frame_mlir/dialects/`
(`docs/adding-an-op.md`); this module merges their `VJP_RULES` tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from frame_mlir.dialects import (
    frame_contraction,
    frame_conv,
    frame_elementwise,
    frame_index,
    frame_loss,
    frame_math,
    frame_movement,
    frame_norm,
    frame_pool,
    frame_reduce,
    frame_scan,
    frame_softmax,
    frame_spectral,
)

Emitter = Callable[[Operation], SSAValue]
Adjoints = list[SSAValue | None]
VjpRule = Callable[[Emitter, Operation, SSAValue, Sequence[bool]], Adjoints]


#: Every family's rules (`frame.py`'s own ops, constant and sgd_update, have none).
VJP_RULES: dict[type[Operation], VjpRule] = {}
VJP_RULES.update(frame_contraction.VJP_RULES)
VJP_RULES.update(frame_conv.VJP_RULES)
VJP_RULES.update(frame_elementwise.VJP_RULES)
VJP_RULES.update(frame_index.VJP_RULES)
VJP_RULES.update(frame_loss.VJP_RULES)
VJP_RULES.update(frame_math.VJP_RULES)
VJP_RULES.update(frame_movement.VJP_RULES)
VJP_RULES.update(frame_norm.VJP_RULES)
VJP_RULES.update(frame_pool.VJP_RULES)
VJP_RULES.update(frame_reduce.VJP_RULES)
VJP_RULES.update(frame_scan.VJP_RULES)
VJP_RULES.update(frame_softmax.VJP_RULES)
VJP_RULES.update(frame_spectral.VJP_RULES)
