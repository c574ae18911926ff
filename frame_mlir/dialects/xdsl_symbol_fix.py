"""Symbol lookup in constant time for xDSL 0.74 (`SymbolTable.lookup_symbol`).

xDSL finds a symbol by scanning every op of the symbol table's block. Every `func.call`
and `llvm.call` verifier looks its callee up that way, so verifying a module costs
calls x functions: ResNet-18's training module (about 1,000 calls, 150 kernels) spent
1.05 s of its 3.5 s verification in the scan, and the cost grows with the square of
the model (issue 27: no walk of the whole module per op).

The replacement keeps a name -> op index per symbol-table block and checks every hit
before it returns it: the op must still be in that block and still carry that name.
A name the index does not know, or a hit that fails the check, rebuilds the index with
one scan (what xDSL did on every lookup), so ops added, erased or renamed since are
seen; the answer is always the op xDSL's scan finds, unless the block defines the
symbol twice, which the SymbolTable verifier rejects anyway. Nested references
(`@a::@b`) go through xDSL's own code.
"""

from __future__ import annotations

import weakref
from typing import Any

from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.ir import Block, Operation
from xdsl.traits import SymbolOpInterface, SymbolTable

_original_lookup = SymbolTable.lookup_symbol
_indexes: weakref.WeakKeyDictionary[Block, dict[str, Operation]] = weakref.WeakKeyDictionary()


def _index(block: Block) -> dict[str, Operation]:
    """Name -> first op defining it, for the ops of `block` (one scan)."""
    index: dict[str, Operation] = {}
    for o in block.ops:
        interface = o.get_trait(SymbolOpInterface)
        if interface is None:
            continue
        name = interface.get_sym_attr_name(o)
        if name is not None and name.data not in index:
            index[name.data] = o
    _indexes[block] = index
    return index


def _name_of(o: Operation) -> str | None:
    interface = o.get_trait(SymbolOpInterface)
    name = interface.get_sym_attr_name(o) if interface is not None else None
    return name.data if name is not None else None


def lookup_symbol(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
    """`SymbolTable.lookup_symbol` through the index (see the module docstring)."""
    if isinstance(name, SymbolRefAttr):
        if name.nested_references.data:
            return _original_lookup(op, name)
        key = name.root_reference.data
    else:
        key = name.data if isinstance(name, StringAttr) else name
    anchor: Operation | None = op
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    if anchor is None:
        return _original_lookup(op, name)  # raises xDSL's own error
    block = anchor.regions[0].block
    index = _indexes.get(block)
    found = index.get(key) if index is not None else None
    if found is not None and found.parent is block and _name_of(found) == key:
        return found
    return _index(block).get(key)


_installed = False


def install() -> None:
    """Replace `SymbolTable.lookup_symbol` (idempotent)."""
    global _installed
    if _installed:
        return
    SymbolTable.lookup_symbol = staticmethod(lookup_symbol)  # type: ignore[method-assign]
    _installed = True


def original() -> Any:
    """xDSL's own lookup (for tests comparing the two)."""
    return _original_lookup
