"""A fix of xDSL 0.74's llvmlite translation of `llvm.getelementptr` for pointers
outside address space 0.

xDSL bitcasts the base pointer to `<element>*` in address space 0 before the GEP. With
opaque pointers the bitcast is a no-op in address space 0, but from `ptr addrspace(3)`
(GPU shared memory) it is an invalid cast and LLVM rejects the module. The fix GEPs
on the base pointer in its own address space: the result is in the base's address
space, as LLVM defines it. `install()` replaces the converter's GEP rule once per process.
"""

from __future__ import annotations

from typing import Any

_installed = False


def _convert_getelementptr(op: Any, builder: Any, val_map: dict[Any, Any]) -> None:
    import llvmlite.ir as ir
    from xdsl.backend.llvm.convert_type import convert_type
    from xdsl.dialects import llvm

    base = val_map[op.ptr]
    space = getattr(base.type, "addrspace", 0)
    # llvmlite still types its pointers: view the base as `<element>*` in its own
    # address space (a no-op cast once printed with opaque pointers).
    base = builder.bitcast(base, convert_type(op.elem_type).as_pointer(addrspace=space))
    ssa_indices = iter(op.ssa_indices)
    indices = [
        val_map[next(ssa_indices)] if idx == llvm.GEP_USE_SSA_VAL else ir.Constant(ir.IntType(32), idx)
        for idx in op.rawConstantIndices.iter_values()
    ]
    val_map[op.results[0]] = builder.gep(base, indices,
                                         inbounds=op.inbounds is not None,
                                         source_etype=convert_type(op.elem_type))


def install() -> None:
    """Use `_convert_getelementptr` for every later translation."""
    global _installed
    if _installed:
        return
    from xdsl.backend.llvm import convert_op

    convert_op._convert_getelementptr = _convert_getelementptr  # type: ignore[attr-defined]
    _installed = True
