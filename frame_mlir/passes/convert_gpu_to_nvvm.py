"""convert-gpu-to-nvvm: the device side of a gpu module as NVVM-flavoured llvm-ready IR.

Expects: a module holding `gpu.module`s (frame-gpu-map's `@frame_kernels`, split from
its host functions by `backend/cuda/ptx.device_module`).

Does: each `gpu.module`'s contents move to the top level -- the module is now the
device module, so nothing else lives there: `gpu.func ... kernel` becomes a public
`func.func` marked `nvvm.kernel` (the translation gives it the `ptx_kernel` calling
convention), `gpu.return` a `func.return`; `gpu.thread_id` / `block_id` /
`block_dim` / `grid_dim` read the PTX special registers (`llvm.nvvm.read.ptx.sreg.tid.x`
and so on, i32, zero-extended to index); `gpu.barrier` is `llvm.nvvm.barrier0`
(`bar.sync 0`); a `memref.global` in address space 3 is an uninitialized
`llvm.mlir.global internal` in address space 3 (`.shared` in PTX), read through
`llvm.mlir.addressof`; math ops that have no NVPTX instruction (exp, log, tanh, pow,
sin, ... -- LLVM has no libcall for them on this target) call libdevice's
`__nv_<name>f`, linked in after translation. sqrt, fabs, fma, floor, ceil, trunc,
roundeven and copysign stay math ops: convert-math-to-llvm makes them intrinsics
NVPTX has instructions for.

Why: the rest of the lowering (`lower_to_llvm.LOOPS_TO_LLVM`, the CPU's) then applies
unchanged: scf, arith, memref (GEP inbounds, with the memref's address space on the
pointer) and func convert as they do for the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, gpu, llvm, math, memref
from xdsl.dialects.builtin import (
    Float32Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    UnrealizedConversionCastOp,
    f32,
    i32,
    i64,
)
from xdsl.ir import Operation, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from frame_mlir.passes.common import fail

KERNEL_ATTR = "nvvm.kernel"

LIBDEVICE_MATH: dict[type[Operation], str] = {
    math.ExpOp: "exp", math.Exp2Op: "exp2", math.ExpM1Op: "expm1", math.LogOp: "log",
    math.Log2Op: "log2", math.Log10Op: "log10", math.Log1pOp: "log1p",
    math.TanhOp: "tanh", math.SinOp: "sin", math.CosOp: "cos", math.TanOp: "tan",
    math.SinhOp: "sinh", math.CoshOp: "cosh", math.AtanOp: "atan", math.ErfOp: "erf",
    math.RoundOp: "round", math.PowFOp: "pow", math.Atan2Op: "atan2", math.CbrtOp: "cbrt",
}
"""Math ops lowered to a libdevice call `__nv_<name>f` (f32 only)."""

_SREG = {gpu.ThreadIdOp: "tid", gpu.BlockIdOp: "ctaid", gpu.BlockDimOp: "ntid",
         gpu.GridDimOp: "nctaid"}


@dataclass(frozen=True)
class ConvertGpuToNvvm(ModulePass):
    """Flatten gpu.modules into NVVM device functions: kernels, special registers,
    barriers, shared memory and libdevice math."""

    name = "convert-gpu-to-nvvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        declared: set[str] = set()
        for gmod in [o for o in op.ops if isinstance(o, gpu.ModuleOp)]:
            for inner in list(gmod.body.block.ops):
                inner.detach()
                if isinstance(inner, gpu.FuncOp):
                    op.body.block.add_op(self._function(inner))
                elif isinstance(inner, memref.GlobalOp):
                    op.body.block.add_op(self._shared(inner))
                else:
                    raise fail(self.name, inner, f"{inner.name} in a gpu.module is not "
                               "supported (expected gpu.func and memref.global)")
            Rewriter.erase_op(gmod)
        op.attributes.pop("gpu.container_module", None)
        for inner in list(op.walk()):
            if type(inner) in _SREG:
                self._sreg(inner)
            elif isinstance(inner, gpu.BarrierOp):
                Rewriter.replace_op(inner, llvm.CallIntrinsicOp("llvm.nvvm.barrier0", [], []))
            elif isinstance(inner, memref.GetGlobalOp):
                typ = inner.memref.type
                assert isinstance(typ, MemRefType)
                space = typ.memory_space
                addr = llvm.AddressOfOp(inner.name_.root_reference.data,
                                        llvm.LLVMPointerType(IntAttr(_space(space))))
                cast = UnrealizedConversionCastOp.get([addr.result], [typ])
                Rewriter.replace_op(inner, [addr, cast])
            elif type(inner) in LIBDEVICE_MATH:
                self._libdevice(op, inner, declared)
            elif inner.name.startswith("gpu."):
                raise fail(self.name, inner, f"{inner.name} has no NVVM lowering")

    def _function(self, fn: gpu.FuncOp) -> func.FuncOp:
        region = Region()
        fn.body.clone_into(region)
        for o in list(region.walk()):
            if isinstance(o, gpu.ReturnOp):
                Rewriter.replace_op(o, func.ReturnOp(*o.operands))
        new = func.FuncOp(fn.sym_name.data, fn.function_type, region)
        for k, v in fn.attributes.items():
            if k != "sym_name":
                new.attributes[k] = v
        if fn.kernel is not None:
            new.attributes[KERNEL_ATTR] = UnitAttr()
        return new

    def _shared(self, g: memref.GlobalOp) -> llvm.GlobalOp:
        typ = g.type
        assert isinstance(typ, MemRefType)
        n = 1
        for d in typ.get_shape():
            n *= d
        elem = typ.element_type
        align = g.alignment.value.data if g.alignment is not None else None
        return llvm.GlobalOp(llvm.LLVMArrayType(IntAttr(n), elem),
                             g.sym_name.data, "internal", addr_space=_space(typ.memory_space),
                             alignment=align)

    def _sreg(self, op: Operation) -> None:
        dim = op.dimension.data.value  # type: ignore[attr-defined]
        read = llvm.CallIntrinsicOp(f"llvm.nvvm.read.ptx.sreg.{_SREG[type(op)]}.{dim}",
                                    [], [i32])
        assert read.ress is not None
        wide = llvm.ZExtOp(read.ress, i64)
        cast = UnrealizedConversionCastOp.get([wide.res], [IndexType()])
        Rewriter.replace_op(op, [read, wide, cast])

    def _libdevice(self, module: ModuleOp, op: Operation, declared: set[str]) -> None:
        if not all(isinstance(v.type, Float32Type) for v in (*op.operands, *op.results)):
            raise fail(self.name, op, f"{op.name} on {op.results[0].type}: libdevice is "
                       "called for f32 only")
        callee = f"__nv_{LIBDEVICE_MATH[type(op)]}f"
        if callee not in declared:
            declared.add(callee)
            decl = func.FuncOp.external(callee, [f32] * len(op.operands), [f32])
            module.body.block.insert_op_before(decl, module.body.block.first_op) \
                if module.body.block.first_op else module.body.block.add_op(decl)
        Rewriter.replace_op(op, func.CallOp(callee, list(op.operands), [f32]))


def _space(attr: object) -> int:
    """A memref's memory space as an LLVM address space (0 when it has none)."""
    return attr.value.data if isinstance(attr, IntegerAttr) else 0
