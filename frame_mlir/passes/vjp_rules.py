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

from frame_mlir.dialects.frame import FAMILIES
from frame_mlir.dialects.frame import VJP_RULES as _CORE_RULES

Emitter = Callable[[Operation], SSAValue]
Adjoints = list[SSAValue | None]
VjpRule = Callable[[Emitter, Operation, SSAValue, Sequence[bool]], Adjoints]


#: Every family's rules, after `frame.py`'s own (update's; constant and sgd_update
#: have none).
VJP_RULES: dict[type[Operation], VjpRule] = {
    **_CORE_RULES,
    **{op: rule for family in FAMILIES for op, rule in family.VJP_RULES.items()}}

#: The higher-order rules (`frame.scan`): `rule(emit, op, dy, need, step_vjp)`, where
#: frame-autodiff passes `step_vjp`, its differentiation of the op's step function.
STEP_VJP_RULES: dict[type[Operation], Callable[..., list[SSAValue | None]]] = {
    op: rule for family in FAMILIES
    for op, rule in getattr(family, "STEP_VJP_RULES", {}).items()}
