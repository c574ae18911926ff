"""A fast path for xDSL 0.74's operand / result / region count check.

Every op's IRDL verifier calls `verify_variadic_size` for its operands, results and
regions; each call looks up the op definition's size options and rebuilds the list of
its variadic definitions, although both are fixed per op class. That was 1.0 s of a
3.5 s verification of ResNet-18's lowered module (about 100,000 calls), and the test
suite verifies after every pass. Here the facts are computed once per op definition
and construct; an op with no variadic definitions and no size attribute (most ops)
then needs one length comparison. Every other case, and every failure, goes through
xDSL's own function, so the checks and their messages are xDSL's.
"""

from __future__ import annotations

from typing import Any

import xdsl.irdl.operations as irdl_ops
from xdsl.irdl.operations import VariadicDef, VarIRConstruct

_original = irdl_ops.verify_variadic_size
#: (id(op_def), construct) -> (op_def kept alive, number of definitions, or -1 when
#: the count is not a plain comparison: variadic definitions or a size attribute)
_plans: dict[tuple[int, VarIRConstruct], tuple[Any, int]] = {}


def _plan(op_def: Any, construct: VarIRConstruct) -> int:
    option_type = irdl_ops.get_attr_size_option(construct)
    defs = irdl_ops.get_construct_defs(op_def, construct)
    plain = (not any(isinstance(o, option_type) for o in op_def.options)
             and not any(isinstance(d, VariadicDef) for _, d in defs))
    count = len(defs) if plain else -1
    _plans[(id(op_def), construct)] = (op_def, count)
    return count


def verify_variadic_size(op: Any, op_def: Any, construct: VarIRConstruct) -> None:
    """xDSL's `verify_variadic_size`, with the plain case answered from a plan."""
    plan = _plans.get((id(op_def), construct))
    count = plan[1] if plan is not None and plan[0] is op_def else _plan(op_def, construct)
    if count >= 0 and len(irdl_ops.get_op_constructs(op, construct)) == count:
        return
    _original(op, op_def, construct)


def install() -> None:
    """Replace the module-level function the IRDL verifiers call (idempotent)."""
    irdl_ops.verify_variadic_size = verify_variadic_size
