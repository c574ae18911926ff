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

import inspect
from typing import Any

import xdsl.irdl.operations as irdl_ops
from xdsl.ir import ErasedSSAValue, Operation, Region
from xdsl.irdl.constraints import AnyAttr, RangeOf, SingleOf
from xdsl.irdl.operations import VariadicDef, VarIRConstruct
from xdsl.traits import IsolatedFromAbove, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

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




# -- a fast path for the whole IRDL verification of an op (OpDef.verify) ---------------
#
# xDSL's `OpDef.verify` checks, in this order and with one VerificationContext, the
# operands, the results, the regions, the successors, the properties, the attributes and
# the traits of an op against its definition. Most of its time is generic machinery
# redone for every op: the definition's lists walked, each construct fetched through its
# accessor descriptor, `isinstance(..., Sequence)` (an ABC check), the region's blocks
# counted by iteration. `_Plan` works those out once per op class; `verify` then runs the
# same constraint `verify` calls, in the same order, on the same values, with the same
# context. Only a proof that the op verifies is taken from it: on any failure, or any
# construct the plan does not cover (several variadic definitions, a segment-size or
# same-size option), xDSL's own `OpDef.verify` runs from the start, so every error and
# its message is xDSL's.

_original_op_def_verify = irdl_ops.OpDef.verify


def _trivial_range(constr: Any) -> bool:
    """`RangeOf(AnyAttr())`, the default of a region's entry arguments: verifies any
    range and records nothing in the context."""
    return (type(constr) is RangeOf
            and type(constr.constr) is AnyAttr)


class _Args:
    """The operand or result definitions of an op with at most one variadic definition
    and no size option: where each definition's values lie in the op's tuple."""

    __slots__ = ("count", "defs", "kind", "variadic_at")

    def __init__(self, defs: list[tuple[str, Any]]):
        variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
        self.count = len(defs)
        self.variadic_at = variadic[0] if variadic else -1
        #: 0 plain (count must match), 1 one variadic, 2 one optional
        self.kind = (0 if not variadic else
                     2 if isinstance(defs[variadic[0]][1], irdl_ops.OptionalDef) else 1)
        # (position, single constraint or None, range constraint): a single
        # definition's SingleOf(c) is checked as c on its one type, as SingleOf does.
        self.defs: tuple[tuple[int, Any, Any], ...] = tuple(
            (i, d.constr.constr if (i != self.variadic_at
                                    and type(d.constr) is SingleOf) else None,
             d.constr)
            for i, (_, d) in enumerate(defs))

    def verify(self, values: tuple[Any, ...], ctx: Any) -> bool:
        n, count, at = len(values), self.count, self.variadic_at
        kind = self.kind
        if kind == 0:
            if n != count:
                return False
        elif kind == 1:
            if n < count - 1:
                return False
        elif n != count and n != count - 1:
            return False
        extra = n - count  # values of the variadic definition, minus one
        for i, single, rng in self.defs:
            if i == at:
                if kind == 2:
                    types = (values[i].type,) if n == count else ()
                else:
                    types = tuple(v.type for v in values[i:i + extra + 1])
                rng.verify(types, ctx)
                continue
            value = values[i if at < 0 or i < at else i + extra]
            if single is not None:
                single.verify(value.type, ctx)
            else:
                rng.verify((value.type,), ctx)
        return True


class _Plan:
    """What `OpDef.verify` checks for one op class, worked out once."""

    __slots__ = ("attrs", "classes", "op_def", "operands", "prop_names", "props",
                 "regions", "results", "successors")

    def __init__(self, op_def: Any):
        self.op_def = op_def
        #: op class -> whether its constructs are read through xDSL's own accessors
        #: (what the plan's positions stand for); a class that redefines one is left
        #: to xDSL's verification
        self.classes: dict[type, bool] = {}
        self.operands = self._args(op_def, VarIRConstruct.OPERAND)
        self.results = self._args(op_def, VarIRConstruct.RESULT)
        # regions: (single block, entry constraint or None) each, when none is variadic
        # and no size option applies; None: xDSL's own check
        self.regions: tuple[tuple[bool, Any], ...] | None = None
        if _count_plan(op_def, VarIRConstruct.REGION) >= 0:
            self.regions = tuple(
                (isinstance(d, irdl_ops.SingleBlockRegionDef
                            | irdl_ops.VarSingleBlockRegionDef
                            | irdl_ops.OptSingleBlockRegionDef),
                 None if _trivial_range(d.entry_args) else d.entry_args)
                for _, d in op_def.regions)
        self.successors = _count_plan(op_def, VarIRConstruct.SUCCESSOR)
        self.props = tuple((name, d.constr, isinstance(d, irdl_ops.OptPropertyDef))
                           for name, d in op_def.properties.items())
        self.prop_names = frozenset(op_def.properties)
        self.attrs = tuple((name, d.constr, isinstance(d, irdl_ops.OptAttributeDef))
                           for name, d in op_def.attributes.items())

    @staticmethod
    def _args(op_def: Any, construct: VarIRConstruct) -> _Args | None:
        option_types = (irdl_ops.get_attr_size_option(construct),
                        irdl_ops.get_same_variadic_size_option(construct))
        defs = irdl_ops.get_construct_defs(op_def, construct)
        if any(isinstance(o, option_types) for o in op_def.options) or sum(
                isinstance(d, VariadicDef) for _, d in defs) > 1:
            return None
        return _Args(list(defs))

    def _covers(self, cls: type) -> bool:
        op_def = self.op_def
        names = [name for plan, defs in ((self.operands, op_def.operands),
                                         (self.results, op_def.results),
                                         (self.regions, op_def.regions))
                 if plan is not None for name, _ in defs]
        covered = all(isinstance(inspect.getattr_static(cls, name, None),
                                 irdl_ops.BaseAccessor) for name in names)
        self.classes[cls] = covered
        return covered

    def verify(self, op: Any) -> bool:
        """True if `op` verifies; False (or an exception) where xDSL must tell."""
        covered = self.classes.get(type(op))
        if not (covered or (covered is None and self._covers(type(op)))):
            return False
        op_def = self.op_def
        ctx = irdl_ops.VerificationContext()
        if self.operands is None:
            irdl_ops.irdl_op_verify_arg_list(op, op_def, VarIRConstruct.OPERAND, ctx)
        elif not self.operands.verify(op._operands, ctx):
            return False
        if self.results is None:
            irdl_ops.irdl_op_verify_arg_list(op, op_def, VarIRConstruct.RESULT, ctx)
        elif not self.results.verify(op.results, ctx):
            return False
        if self.regions is None:
            irdl_ops.irdl_op_verify_regions(op, op_def, ctx)
        else:
            regions = op.regions
            if len(regions) != len(self.regions):
                return False
            for region, (single, entry) in zip(regions, self.regions, strict=True):
                first = region.first_block
                if single and (first is None or first is not region.last_block):
                    return False
                if entry is not None and first is not None:
                    entry.verify(first.arg_types, ctx)
        if self.successors < 0:
            verify_variadic_size(op, op_def, VarIRConstruct.SUCCESSOR)
        elif len(op._successors) != self.successors:
            return False
        properties = op.properties
        for name, constr, optional in self.props:
            if name not in properties:
                if optional:
                    continue
                return False
            constr.verify(properties[name], ctx)
        if not self.prop_names.issuperset(properties):
            return False
        attributes = op.attributes
        for name, constr, optional in self.attrs:
            if name not in attributes:
                if optional:
                    continue
                return False
            constr.verify(attributes[name], ctx)
        for trait in op_def.traits:
            trait.verify(op)
        return True


def _count_plan(op_def: Any, construct: VarIRConstruct) -> int:
    plan = _plans.get((id(op_def), construct))
    return plan[1] if plan is not None and plan[0] is op_def else _plan(op_def, construct)


#: id(op definition) -> its plan (which keeps the definition alive)
_op_plans: dict[int, _Plan] = {}


def op_def_verify(self: Any, op: Any) -> None:
    """`OpDef.verify`, through the op class's plan; xDSL's own on any failure."""
    plan = _op_plans.get(id(self))
    if plan is None or plan.op_def is not self:
        plan = _op_plans[id(self)] = _Plan(self)
    try:
        if plan.verify(op):
            return
    except Exception:
        pass
    _original_op_def_verify(self, op)


def original_op_def_verify() -> Any:
    """xDSL's `OpDef.verify` (for the tests that compare the two)."""
    return _original_op_def_verify


# -- Operation.verify without counting a region's blocks -------------------------------
#
# xDSL's `Operation.verify` asks `len(parent_region.blocks)` for the last op of every
# block, and that length is counted by walking the region's blocks: quadratic in the
# blocks of a function (hundreds once its loops are branches). `_operation_verify` is
# xDSL 0.74's method with that count replaced by the same answer read off the region's
# first and last blocks (none, one, or more), and the operand and successor views
# replaced by the tuples they wrap; every check, its order and its message are xDSL's.

_original_operation_verify = Operation.verify


def _block_count(region: Region) -> int:
    """`len(region.blocks)` where only 0, 1 or "more" matters (2 stands for more)."""
    first = region.first_block
    if first is None:
        return 0
    return 1 if first is region.last_block else 2


def _operation_verify(self: Operation, verify_nested_ops: bool = True) -> None:
    for operand in self._operands:
        if isinstance(operand, ErasedSSAValue):
            raise ValueError("Erased SSA value is used by the operation")

    parent_block = self.parent
    parent_region = None if parent_block is None else parent_block.parent

    if self._successors:
        if parent_block is None or parent_region is None:
            raise VerifyException(
                f"Operation {self.name} with block successors does not belong to a "
                "block or a region"
            )

        if parent_block.last_op is not self:
            raise VerifyException(
                f"Operation {self.name} with block successors must terminate its parent "
                "block"
            )

        for succ in self._successors:
            if succ.parent != parent_block.parent:
                raise VerifyException(
                    f"Operation {self.name} is branching to a block of a different region"
                )

    if parent_block is not None and parent_region is not None:
        if parent_block.last_op == self:
            blocks = _block_count(parent_region)
            if blocks == 1:
                if (
                    parent_op := parent_region.parent
                ) is not None and not parent_op.has_trait(NoTerminator):
                    if not self.has_trait(IsTerminator):
                        raise VerifyException(
                            f"Operation {self.name} terminates block in "
                            "single-block region but is not a terminator"
                        )
            elif blocks > 1:
                if not self.has_trait(IsTerminator):
                    raise VerifyException(
                        f"Operation {self.name} terminates block in multi-block "
                        "region but is not a terminator"
                    )

    if verify_nested_ops:
        for region in self.regions:
            region.verify()

    # Custom verifier
    try:
        self.verify_()
    except VerifyException as err:
        self.emit_error(
            f"Operation does not verify: {err}",
            err,
        )


# -- IsolatedFromAbove without a walk up from every operand ----------------------------
#
# xDSL's `IsolatedFromAbove.verify` asks `op.is_ancestor(operand.owner)` for every
# operand of every op in the op's regions (not entering nested isolated ops): a walk
# from the operand's definition up to `op`, as deep as the loop nest (a GEMM kernel's
# are ten deep), after every pass for every function. `_isolated_verify` first collects
# the blocks and ops it visits; an operand defined by one of them is inside `op` (and
# is not `op`), so only the others take xDSL's test, with xDSL's error.

_original_isolated_verify = IsolatedFromAbove.verify


def _isolated_verify(self: IsolatedFromAbove, op: Operation) -> None:
    inside: set[int] = set()
    ops: list[Operation] = []
    regions: list[Region] = list(op.regions)
    while regions:
        region = regions.pop()
        for block in region.blocks:
            inside.add(id(block))
            for child_op in block.ops:
                inside.add(id(child_op))
                ops.append(child_op)
                if not child_op.has_trait(IsolatedFromAbove):
                    regions += child_op.regions
    for child_op in ops:
        for operand in child_op._operands:
            owner = operand.owner
            if id(owner) in inside:
                continue
            if not op.is_ancestor(owner) or owner is op:
                raise VerifyException(
                    "Operation using value defined out of its "
                    f"IsolatedFromAbove parent: {child_op}"
                )


def install() -> None:
    """Replace the module-level function the IRDL verifiers call, `OpDef.verify`,
    `Operation.verify` and `IsolatedFromAbove.verify` (idempotent)."""
    irdl_ops.verify_variadic_size = verify_variadic_size
    irdl_ops.OpDef.verify = op_def_verify
    Operation.verify = _operation_verify
    IsolatedFromAbove.verify = _isolated_verify  # type: ignore[method-assign]
