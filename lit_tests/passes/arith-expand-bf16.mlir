// RUN: frame-opt %s --split-input-file -p arith-expand-bf16 | filecheck %s
// RUN: frame-opt %s --split-input-file -p arith-expand-bf16,convert-arith-to-llvm,convert-memref-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=LLVM
// RUN: not frame-opt %s --split-input-file -p convert-arith-to-llvm 2>&1 | filecheck %s --check-prefix=UNEXPANDED

// bf16 is storage only: a load widens it to f32 (its bits are the top half of an
// f32's), a store rounds to nearest, ties to even, on the f32 bits. Both become
// integer ops, which the LLVM lowering (bf16 is an i16 there: llvmlite has no bfloat)
// and the C++ emitter (std::uint16_t) translate one to one.

func.func @kernel(%a: memref<4xbf16>, %o: memref<4xbf16>, %i: index) {
  %x = memref.load %a[%i] : memref<4xbf16>
  %w = arith.extf %x : bf16 to f32
  %s = arith.addf %w, %w : f32
  %r = arith.truncf %s : f32 to bf16
  memref.store %r, %o[%i] : memref<4xbf16>
  func.return
}

// extf: bitcast to i16, zero-extend, shift into the high half, bitcast to f32.
// CHECK-LABEL: func.func @kernel(
// CHECK:         %[[X:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<4xbf16>
// CHECK-NEXT:    %[[XI:.*]] = arith.bitcast %[[X]] : bf16 to i16
// CHECK-NEXT:    %[[XW:.*]] = arith.extui %[[XI]] : i16 to i32
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : i32
// CHECK-NEXT:    %[[XS:.*]] = arith.shli %[[XW]], %[[C16]] : i32
// CHECK-NEXT:    %[[W:.*]] = arith.bitcast %[[XS]] : i32 to f32
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[W]], %[[W]] : f32
// truncf: hi + ((lo + 0x7fff + (hi & 1)) >> 16), which cannot overflow ...
// CHECK-NEXT:    %[[BITS:.*]] = arith.bitcast %[[S]] : f32 to i32
// CHECK-NEXT:    %[[SH:.*]] = arith.constant 16 : i32
// CHECK-NEXT:    %[[HI:.*]] = arith.shrui %[[BITS]], %[[SH]] : i32
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 65535 : i32
// CHECK-NEXT:    %[[LO:.*]] = arith.andi %[[BITS]], %[[MASK]] : i32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[ODD:.*]] = arith.andi %[[HI]], %[[ONE]] : i32
// CHECK-NEXT:    %[[T0:.*]] = arith.addi %[[LO]], %[[ODD]] : i32
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant 32767 : i32
// CHECK-NEXT:    %[[T1:.*]] = arith.addi %[[T0]], %[[HALF]] : i32
// CHECK-NEXT:    %[[SH2:.*]] = arith.constant 16 : i32
// CHECK-NEXT:    %[[CARRY:.*]] = arith.shrui %[[T1]], %[[SH2]] : i32
// CHECK-NEXT:    %[[SUM:.*]] = arith.addi %[[HI]], %[[CARRY]] : i32
// CHECK-NEXT:    %[[ROUNDED:.*]] = arith.trunci %[[SUM]] : i32 to i16
// ... and a NaN (magnitude above 0x7f800000) becomes the quiet NaN 0x7fc0.
// CHECK-NEXT:    %[[ABSMASK:.*]] = arith.constant 2147483647 : i32
// CHECK-NEXT:    %[[ABS:.*]] = arith.andi %[[BITS]], %[[ABSMASK]] : i32
// CHECK-NEXT:    %[[INF:.*]] = arith.constant 2139095040 : i32
// CHECK-NEXT:    %[[NAN:.*]] = arith.cmpi ugt, %[[ABS]], %[[INF]] : i32
// CHECK-NEXT:    %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK-NEXT:    %[[SEL:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[ROUNDED]] : i16
// CHECK-NEXT:    %[[R:.*]] = arith.bitcast %[[SEL]] : i16 to bf16
// CHECK-NEXT:    memref.store %[[R]], %{{.*}}[%{{.*}}] : memref<4xbf16>
// CHECK-NOT:     arith.extf
// CHECK-NOT:     arith.truncf

// In LLVM a bf16 is an i16: loads and stores of i16 (2-byte aligned), the bf16/i16
// bitcasts vanish.
// LLVM-LABEL: llvm.func @kernel(
// LLVM:         %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i16
// LLVM-NEXT:    %[[X:.*]] = llvm.load %[[P]] {alignment = 2 : i64} : !llvm.ptr -> i16
// LLVM-NEXT:    %[[XW:.*]] = llvm.zext %[[X]] : i16 to i32
// LLVM:         llvm.bitcast %{{.*}} : i32 to f32
// LLVM:         llvm.fadd
// LLVM:         llvm.bitcast %{{.*}} : f32 to i32
// LLVM:         %[[R:.*]] = llvm.trunc %{{.*}} : i32 to i16
// LLVM:         %[[SEL:.*]] = llvm.select %{{.*}}, %{{.*}}, %[[R]] : i1, i16
// LLVM:         llvm.store %[[SEL]], %{{.*}} {alignment = 2 : i64} : i16, !llvm.ptr
// LLVM-NOT:     bf16

// Without the expansion, the LLVM lowering refuses rather than emit an fpext of an i16.
// UNEXPANDED: frame-opt: error: {{.*}}arith.extf to or from bf16 needs arith-expand-bf16 first

// -----

// A bf16 constant is its bit pattern, rounded to nearest even (-0.1 is 0xbdcccccd as
// an f32: 0xbdcd), an f64 widening goes through f32 (exact), selects are untouched.
func.func @consts(%x: bf16, %b: i1, %o: memref<2xbf16>, %d: memref<f64>) {
  %c = arith.constant -1.000000e-01 : bf16
  %s = arith.select %b, %x, %c : bf16
  %e = arith.extf %x : bf16 to f64
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  memref.store %s, %o[%i0] : memref<2xbf16>
  memref.store %c, %o[%i1] : memref<2xbf16>
  memref.store %e, %d[] : memref<f64>
  func.return
}

// CHECK-LABEL: func.func @consts(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: bf16, %[[B:[a-z0-9_]+]]: i1
// CHECK-NEXT:    %[[BITS:.*]] = arith.constant -16947 : i16
// CHECK-NEXT:    %[[C:.*]] = arith.bitcast %[[BITS]] : i16 to bf16
// CHECK-NEXT:    %[[S:.*]] = arith.select %[[B]], %[[X]], %[[C]] : bf16
// CHECK-NEXT:    %[[XI:.*]] = arith.bitcast %[[X]] : bf16 to i16
// CHECK:         %[[F:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:    %[[E:.*]] = arith.extf %[[F]] : f32 to f64

// LLVM-LABEL: llvm.func @consts(
// LLVM-SAME:    %[[X:[a-z0-9_]+]]: i16, %[[B:[a-z0-9_]+]]: i1
// LLVM-NEXT:    %[[C:.*]] = llvm.mlir.constant(-16947 : i16) : i16
// LLVM-NEXT:    %[[S:.*]] = llvm.select %[[B]], %[[X]], %[[C]] : i1, i16
// LLVM:         llvm.fpext %{{.*}} : f32 to f64

// Rounding from f64 would round twice (f64 -> f32 -> bf16), and arithmetic on bf16
// itself has no integer expansion: both are errors naming the op.
// RUN: echo 'func.func @f(%%y: f64) -> bf16 { %%r = arith.truncf %%y : f64 to bf16 func.return %%r : bf16 }' > %t.f64.mlir
// RUN: not frame-opt %t.f64.mlir -p arith-expand-bf16 2>&1 | filecheck %s --check-prefix=F64
// F64: frame-opt: error: {{.*}}arith-expand-bf16: arith.truncf from f64 to bf16 is not supported (only from f32)
// RUN: echo 'func.func @g(%%x: bf16) -> bf16 { %%r = arith.addf %%x, %%x : bf16 func.return %%r : bf16 }' > %t.addf.mlir
// RUN: not frame-opt %t.addf.mlir -p arith-expand-bf16 2>&1 | filecheck %s --check-prefix=ADDF
// ADDF: frame-opt: error: {{.*}}arith-expand-bf16: arith.addf computes on bf16 values; widen them to f32 (arith.extf) first
