"""xdsl_verify_fix's fast verification accepts what xDSL's accepts and rejects what it
rejects, with xDSL's message: every op of a model's IR after every pass, and those ops
broken in several ways (operand types, counts, attributes, properties, regions)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i1, i64
from xdsl.ir import Block, Operation
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

import frame_mlir.dialects  # noqa: F401  (installs the fixes)
from frame_mlir.dialects import xdsl_verify_fix

ROOT = Path(__file__).resolve().parents[2]


def _outcome(check: Callable[[], object]) -> tuple[str, str] | None:
    try:
        check()
    except Exception as err:  # noqa: BLE001 - the outcome compared is any error
        return type(err).__name__, str(err)
    return None


def _same(op: IRDLOperation) -> tuple[str, str] | None:
    """The fast OpDef.verify and xDSL's agree on `op`; their outcome."""
    op_def = type(op).get_irdl_definition()
    fast = _outcome(lambda: xdsl_verify_fix.op_def_verify(op_def, op))
    slow = _outcome(lambda: xdsl_verify_fix.original_op_def_verify()(op_def, op))
    assert fast == slow, (op.name, fast, slow)
    return fast


def test_the_fixes_are_installed() -> None:
    from xdsl.irdl.operations import OpDef

    assert OpDef.verify is xdsl_verify_fix.op_def_verify
    assert Operation.verify is xdsl_verify_fix._operation_verify


def _modules_after_every_pass() -> list[ModuleOp]:
    from frame_mlir.frontends.spec.lower import lower_spec
    from frame_mlir.frontends.spec.spec_v0 import load_spec
    from frame_mlir.passes.pipeline import run_pipeline

    spec = load_spec(ROOT / "testdata" / "tiny_mlp.json")
    lowered = lower_spec(spec)
    modules = [lowered.module.clone()]
    run_pipeline(lowered.module, spec.optimizer.learning_rate,
                 after_pass=lambda p, m: modules.append(m.clone()), verify_each=False)
    return modules


@pytest.fixture(scope="module")
def modules() -> list[ModuleOp]:
    return _modules_after_every_pass()


def _ops(modules: list[ModuleOp]) -> list[IRDLOperation]:
    return [op for m in modules for op in m.walk() if isinstance(op, IRDLOperation)]


def test_every_op_of_every_stage_verifies_both_ways(modules: list[ModuleOp]) -> None:
    for op in _ops(modules):
        assert _same(op) is None
    for m in modules:
        m.verify()
        assert _outcome(lambda m=m: xdsl_verify_fix._original_operation_verify(m)) is None


def _an_i1() -> Operation:
    return arith.ConstantOp(IntegerAttr(1, i1))


def _mutations(op: IRDLOperation) -> list[Callable[[IRDLOperation], None]]:
    flag = _an_i1()
    out: list[Callable[[IRDLOperation], None]] = []
    if op.operands:
        out.append(lambda o: setattr(o, "operands", (flag.results[0], *o.operands[1:])))
        out.append(lambda o: setattr(o, "operands", tuple(o.operands[:-1])))
        out.append(lambda o: setattr(o, "operands", (*o.operands, o.operands[-1])))
    else:
        out.append(lambda o: setattr(o, "operands", (flag.results[0],)))
    if op.properties:
        name = next(iter(op.properties))
        out.append(lambda o: o.properties.pop(name))
        out.append(lambda o: o.properties.__setitem__(name, StringAttr("x")))
    out.append(lambda o: o.properties.__setitem__("not_a_property", i64))
    if op.attributes:
        name = next(iter(op.attributes))
        out.append(lambda o: o.attributes.pop(name))
        out.append(lambda o: o.attributes.__setitem__(name, StringAttr("x")))
    for i, region in enumerate(op.regions):
        out.append(lambda o, i=i: o.regions[i].add_block(Block()))
        if region.first_block is not None:
            out.append(lambda o, i=i: o.regions[i].first_block.insert_arg(i1, 0))
            out.append(lambda o, i=i: o.regions[i].detach_block(o.regions[i].first_block))
    return out


def test_broken_ops_fail_both_ways_with_the_same_message(modules: list[ModuleOp]) -> None:
    seen: set[str] = set()
    checked = failed = 0
    for op in _ops(modules):
        if op.name in seen:
            continue
        seen.add(op.name)
        for mutate in _mutations(op):
            broken = op.clone()
            try:
                mutate(broken)
            except Exception:  # noqa: BLE001 - a mutation this op cannot take
                continue
            checked += 1
            failed += _same(broken) is not None
    assert checked > 300 and failed > checked // 2, (checked, failed)


def test_a_variadic_and_an_optional_construct() -> None:
    # func.return: one variadic operand; scf.if: results variadic, two regions
    flag = _an_i1()
    ret = func.ReturnOp(flag.results[0], flag.results[0])
    assert _same(ret) is None
    ret.operands = ()
    assert _same(ret) is None
    if_op = scf.IfOp(flag.results[0], [i1], [scf.YieldOp(flag.results[0])],
                     [scf.YieldOp(flag.results[0])])
    assert _same(if_op) is None
    if_op.regions[1].detach_block(if_op.regions[1].first_block)
    assert _same(if_op) is None  # an empty else region is allowed
    if_op.regions[0].add_block(Block())
    assert _same(if_op) is not None  # two blocks in a single-block region


def _outcomes_of_block(build: Callable[[], ModuleOp]) -> None:
    module = build()
    fast = _outcome(module.verify)
    module = build()
    slow = _outcome(lambda: xdsl_verify_fix._original_operation_verify(module))
    assert fast == slow, (fast, slow)
    assert fast is not None


def test_terminator_checks_are_xdsls() -> None:
    def single_block() -> ModuleOp:
        f = func.FuncOp("f", ((), ()))
        f.body.block.add_op(_an_i1())  # the block ends on a non-terminator
        return ModuleOp([f])

    def multi_block() -> ModuleOp:
        f = func.FuncOp("f", ((), ()))
        f.body.block.add_op(func.ReturnOp())
        f.body.add_block(Block([_an_i1()]))
        return ModuleOp([f])

    def erased_operand() -> ModuleOp:
        f = func.FuncOp("f", ((), ()))
        one = _an_i1()
        use = arith.AddiOp(one.results[0], one.results[0])
        f.body.block.add_ops([one, use, func.ReturnOp()])
        one.detach()
        one.erase(safe_erase=False)
        return ModuleOp([f])

    for build in (single_block, multi_block, erased_operand):
        _outcomes_of_block(build)


def test_a_class_that_redefines_an_accessor_is_left_to_xdsl(monkeypatch: Any) -> None:
    flag = _an_i1()
    add = arith.AddiOp(flag.results[0], flag.results[0])
    assert xdsl_verify_fix._Plan(type(add).get_irdl_definition()).verify(add)
    monkeypatch.setattr(arith.AddiOp, "lhs", property(lambda self: None), raising=False)
    assert not xdsl_verify_fix._Plan(type(add).get_irdl_definition()).verify(add)
    with pytest.raises(VerifyException):
        arith.AddiOp(flag.results[0], arith.ConstantOp(IntegerAttr(1, i64)).results[0]
                     ).verify()


def test_isolated_from_above_agrees_with_xdsl(modules: list[ModuleOp]) -> None:
    """The fast `IsolatedFromAbove.verify` accepts every function of every stage, as
    xDSL's does, and rejects a function that uses a value defined outside it (inside
    a loop of the function) with xDSL's message; using one defined inside, it verifies."""
    from xdsl.traits import IsolatedFromAbove

    assert IsolatedFromAbove.verify is xdsl_verify_fix._isolated_verify
    trait = IsolatedFromAbove()

    def both(op: Operation) -> tuple[str, str] | None:
        fast = _outcome(lambda: xdsl_verify_fix._isolated_verify(trait, op))
        slow = _outcome(lambda: xdsl_verify_fix._original_isolated_verify(trait, op))
        assert fast == slow, (fast, slow)
        return fast

    for m in modules:
        for op in m.walk():
            if op.has_trait(IsolatedFromAbove):
                assert both(op) is None
    outside = arith.ConstantOp(IntegerAttr(1, i64))
    lb, ub, step = (arith.ConstantOp(IntegerAttr(v, i64)) for v in (0, 4, 1))
    use = arith.AddiOp(outside, outside)
    body = Block(arg_types=[i64])
    body.add_ops([use, scf.YieldOp()])
    loop = scf.ForOp(lb, ub, step, [], body)
    fn = func.FuncOp("f", ((), ()))
    fn.body.block.add_ops([lb, ub, step, loop, func.ReturnOp()])
    ModuleOp([fn]).body.block.insert_op_before(outside, fn)
    err = both(fn)
    assert err is not None and "IsolatedFromAbove" in err[1]
    use.operands = [lb.result, lb.result]  # defined inside: verifies
    assert both(fn) is None
