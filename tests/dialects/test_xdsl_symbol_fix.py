"""xdsl_symbol_fix's indexed symbol lookup answers what xDSL's scan answers, after ops
are added, erased and renamed; xdsl_verify_fix's count check rejects what xDSL does."""

from __future__ import annotations

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

import frame_mlir.dialects  # noqa: F401  (installs the fixes)
from frame_mlir.dialects import xdsl_symbol_fix


def _fn(name: str) -> func.FuncOp:
    return func.FuncOp(name, ((), ()))


def _both(op, name):  # type: ignore[no-untyped-def]
    fast = SymbolTable.lookup_symbol(op, name)
    slow = xdsl_symbol_fix.original()(op, name)
    assert fast is slow, (name, fast, slow)
    return fast


def test_the_fix_is_installed() -> None:
    assert SymbolTable.lookup_symbol is xdsl_symbol_fix.lookup_symbol


def test_lookups_follow_every_change_of_the_table() -> None:
    a, b = _fn("a"), _fn("b")
    module = ModuleOp([a, b])
    for name in ("a", StringAttr("b"), SymbolRefAttr("a"), "missing"):
        _both(module, name)
    c = _fn("c")
    module.body.block.add_op(c)  # added after the index was built
    assert _both(module, "c") is c
    a.detach()  # erased: not found any more
    assert _both(module, "a") is None
    b.sym_name = StringAttr("renamed")  # renamed: the old name is gone, the new found
    assert _both(module, "b") is None
    assert _both(module, "renamed") is b
    module.body.block.add_op(a)  # back again
    assert _both(module, "a") is a
    inner = func.ReturnOp()
    c.body.block.add_op(inner)  # from an op nested in a function: its table's anchor
    assert _both(inner, "renamed") is b


def test_a_second_table_has_its_own_index() -> None:
    one, two = ModuleOp([_fn("f")]), ModuleOp([_fn("f")])
    assert _both(one, "f") is not _both(two, "f")


def test_no_table_is_xdsls_error() -> None:
    with pytest.raises(ValueError, match="no SymbolTable ancestor"):
        SymbolTable.lookup_symbol(func.ReturnOp(), "x")


def test_operand_count_errors_are_xdsls() -> None:
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import FloatAttr, f32

    a = arith.ConstantOp(FloatAttr(1.0, f32))
    add = arith.AddfOp(a.result, a.result)
    add.verify()
    add.operands = (a.result,)  # one operand short
    with pytest.raises(VerifyException, match="Expected 2 operands"):
        add.verify()
