"""llvm dialect -> LLVM IR, through xDSL's llvmlite translation."""

from __future__ import annotations

import llvmlite.binding as llvm_binding
import llvmlite.ir as ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects.builtin import ModuleOp


def to_llvm_ir(module: ModuleOp) -> ir.Module:
    """Translate a module containing only llvm dialect ops to an llvmlite module.

    The module gets the host's target triple unless it carries `llvm.target_triple`.
    Expects the output of `frame_mlir.passes.lower_to_llvm.lower_loops_to_llvm`.
    """
    return convert_module(module, fallback_target_triple=llvm_binding.get_default_triple())


def to_llvm_text(module: ModuleOp) -> str:
    """Textual LLVM IR of `module` (see `to_llvm_ir`)."""
    return str(to_llvm_ir(module))
