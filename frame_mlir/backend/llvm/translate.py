"""llvm dialect -> LLVM IR, through xDSL's llvmlite translation.

Every defined function gets the vector width the code generator should use, as the
function attributes `"prefer-vector-width"` and `"min-legal-vector-width"` (clang's
`-mprefer-vector-width=512` does the same). Why: on Intel AVX-512 CPUs LLVM's tuning
prefers 256-bit vectors, so unless a function says otherwise the loop and SLP
vectorizers pick ymm and the backend legalizes the explicit `vector<16xf32>` ops of
generated kernels by splitting them in two (0 of 320 FMAs used zmm on such a host). The
width defaults to the host's: 512 bits where it has AVX-512F, none added elsewhere
(LLVM's choice is then already the widest the CPU has).
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm_binding
import llvmlite.ir as ir
from llvmlite.ir.values import FunctionAttributes
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects.builtin import ModuleOp

from frame_mlir import timing

_STRING_ATTR = re.compile(r'"[^"]+"="[^"]*"')


class _FunctionAttributes(FunctionAttributes):
    """llvmlite's function attribute set, which only knows keyword attributes, plus
    string attributes written `"key"="value"` (printed inline on the `define`)."""

    def add(self, name: str) -> None:
        if _STRING_ATTR.fullmatch(name):
            set.add(self, name)
        else:
            super().add(name)


def host_vector_bits() -> int | None:
    """The vector width generated code should use on this host: 512 with AVX-512F, None
    (LLVM's default) otherwise."""
    from frame_mlir.target.host import host_info

    info = host_info()
    return info.vector_bits if "avx512f" in info.features else None


def set_vector_width(llvm_module: ir.Module, bits: int) -> None:
    """Give every function defined in `llvm_module` `"prefer-vector-width"` and
    `"min-legal-vector-width"` of `bits`: the vectorizers pick vectors of that width and
    the backend keeps vector types up to it whole instead of splitting them."""
    for fn in llvm_module.functions:
        if not fn.blocks:
            continue  # declarations (intrinsics, libm) are not compiled here
        attrs = _FunctionAttributes(fn.attributes)
        attrs.alignstack = fn.attributes.alignstack
        attrs.personality = fn.attributes.personality
        for key in ("prefer-vector-width", "min-legal-vector-width"):
            attrs.add(f'"{key}"="{bits}"')
        fn.attributes = attrs


def to_llvm_ir(module: ModuleOp, *, vector_bits: int | None = None) -> ir.Module:
    """Translate a module containing only llvm dialect ops to an llvmlite module.

    The module gets the host's target triple unless it carries `llvm.target_triple`.
    Functions get the vector width attributes (see the module docstring) for
    `vector_bits`, by default the host's (`host_vector_bits`), and only when the module
    targets the host. Expects the output of
    `frame_mlir.passes.lower_to_llvm.lower_loops_to_llvm`.
    """
    with timing.section("llvm: translate"):
        host_triple = llvm_binding.get_default_triple()
        llvm_module = convert_module(module, fallback_target_triple=host_triple)
        if llvm_module.triple == host_triple:
            bits = vector_bits if vector_bits is not None else host_vector_bits()
            if bits is not None:
                set_vector_width(llvm_module, bits)
        return llvm_module


def to_llvm_text(module: ModuleOp, *, vector_bits: int | None = None) -> str:
    """Textual LLVM IR of `module` (see `to_llvm_ir`)."""
    llvm_module = to_llvm_ir(module, vector_bits=vector_bits)
    with timing.section("llvm: translate"):
        return str(llvm_module)
