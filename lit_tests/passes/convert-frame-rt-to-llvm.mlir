// RUN: frame-opt %s --split-input-file --verify-diagnostics -p convert-frame-rt-to-llvm | filecheck %s

// threads > 1: the arguments go into a frame of pointer slots on the caller's stack
// (an index through inttoptr), and the runtime gets the task's C-signature trampoline
// @<task>__entry, which loads them back and calls the task on [lo, hi).

func.func private @k__task0(%a: memref<8x4xf32>, %n: index, %lo: index, %hi: index) {
  func.return
}
func.func private @k(%a: memref<8x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  frame_rt.parallel_for @k__task0(%a, %n) range(%c0, %c8) threads 4 : memref<8x4xf32>, index
  func.return
}

// CHECK-LABEL: func.func private @k__task0__entry(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr, %[[LO:.*]]: i64, %[[HI:.*]]: i64)
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr inbounds %[[CTX]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[A:.*]] = builtin.unrealized_conversion_cast %[[P0]] : !llvm.ptr to memref<8x4xf32>
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr inbounds %[[CTX]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[W:.*]] = llvm.ptrtoint %[[P1]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[N:.*]] = builtin.unrealized_conversion_cast %[[W]] : i64 to index
// CHECK-NEXT:    %[[L:.*]] = builtin.unrealized_conversion_cast %[[LO]] : i64 to index
// CHECK-NEXT:    %[[H:.*]] = builtin.unrealized_conversion_cast %[[HI]] : i64 to index
// CHECK-NEXT:    func.call @k__task0(%[[A]], %[[N]], %[[L]], %[[H]]) : (memref<8x4xf32>, index, index, index) -> ()
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[KA:.*]]: memref<8x4xf32>, %[[KN:.*]]: index)
// CHECK-NEXT:    %[[TWO:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[FRAME:.*]] = llvm.alloca %[[TWO]] x !llvm.ptr {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[AP:.*]] = builtin.unrealized_conversion_cast %[[KA]] : memref<8x4xf32> to !llvm.ptr
// CHECK-NEXT:    %[[SLOT0:.*]] = llvm.getelementptr inbounds %[[FRAME]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[AP]], %[[SLOT0]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[NI:.*]] = builtin.unrealized_conversion_cast %[[KN]] : index to i64
// CHECK-NEXT:    %[[NP:.*]] = llvm.inttoptr %[[NI]] : i64 to !llvm.ptr
// CHECK-NEXT:    %[[SLOT1:.*]] = llvm.getelementptr inbounds %[[FRAME]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[NP]], %[[SLOT1]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[FN:.*]] = llvm.mlir.addressof @k__task0__entry : !llvm.ptr
// CHECK-NEXT:    %[[T:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[B:.*]] = builtin.unrealized_conversion_cast %[[C0]] : index to i64
// CHECK-NEXT:    %[[E:.*]] = builtin.unrealized_conversion_cast %[[C8]] : index to i64
// CHECK-NEXT:    llvm.call @frame_rt_parallel_for(%[[FN]], %[[FRAME]], %[[B]], %[[E]], %[[T]]) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
// CHECK-NEXT:    func.return
// CHECK:       llvm.func @frame_rt_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64, i64)

// -----

// threads = 1: the task is called inline on the whole range; no runtime.

func.func private @t(%a: memref<4xf32>, %lo: index, %hi: index) {
  func.return
}
func.func private @one(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  frame_rt.parallel_for @t(%a) range(%c0, %c4) threads 1 : memref<4xf32>
  func.return
}

// CHECK-LABEL: func.func private @one(
// CHECK-SAME:    %[[A:.*]]: memref<4xf32>)
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    func.call @t(%[[A]], %[[C0]], %[[C4]]) : (memref<4xf32>, index, index) -> ()
// CHECK-NOT:   frame_rt_parallel_for

// -----

// Arguments travel in 64-bit slots: a vector does not fit.

func.func private @v__task(%x: vector<16xf32>, %lo: index, %hi: index) {
  func.return
}
func.func private @v(%x: vector<16xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // expected-error@+1 {{convert-frame-rt-to-llvm at @v: frame_rt.parallel_for: cannot pass a vector<16xf32> to a task (pointers and scalars of up to 64 bits only)}}
  frame_rt.parallel_for @v__task(%x) range(%c0, %c4) threads 2 : vector<16xf32>
  func.return
}


// -----

// frame_rt.row %b[%t]: a GEP inbounds on the element type by t * (row elements); a
// row of a 1-D buffer (a 0-d memref) by t itself.
func.func private @use(memref<2x3xf32>, memref<f32>)
func.func @rows(%b: memref<4x2x3xf32>, %v: memref<5xf32>, %t: index) {
  %r = frame_rt.row %b[%t] : memref<4x2x3xf32> -> memref<2x3xf32>
  %e = frame_rt.row %v[%t] : memref<5xf32> -> memref<f32>
  func.call @use(%r, %e) : (memref<2x3xf32>, memref<f32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @rows(
// CHECK-NEXT:    %[[B:.*]] = builtin.unrealized_conversion_cast %b : memref<4x2x3xf32> to !llvm.ptr
// CHECK-NEXT:    %[[T:.*]] = builtin.unrealized_conversion_cast %t : index to i64
// CHECK-NEXT:    %[[SIX:.*]] = llvm.mlir.constant(6) : i64
// CHECK-NEXT:    %[[OFF:.*]] = llvm.mul %[[T]], %[[SIX]] overflow<nsw,nuw> : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %[[B]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[R:.*]] = builtin.unrealized_conversion_cast %[[P]] : !llvm.ptr to memref<2x3xf32>
// CHECK-NEXT:    %[[V:.*]] = builtin.unrealized_conversion_cast %v : memref<5xf32> to !llvm.ptr
// CHECK-NEXT:    %[[T2:.*]] = builtin.unrealized_conversion_cast %t : index to i64
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %[[V]][%[[T2]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[E:.*]] = builtin.unrealized_conversion_cast %[[Q]] : !llvm.ptr to memref<f32>
// CHECK-NEXT:    func.call @use(%[[R]], %[[E]])

// -----

// frame_rt.prefetch %b[%i]: llvm.prefetch (rw 0 read / 1 write, locality 3, data) of a
// GEP that is not inbounds (the index may be past the buffer).
func.func @hints(%b: memref<48xf32>, %i: index) {
  frame_rt.prefetch %b[%i] : memref<48xf32>
  frame_rt.prefetch %b[%i] write : memref<48xf32>
  func.return
}

// CHECK-LABEL: func.func @hints(
// CHECK-NEXT:    %[[B:.*]] = builtin.unrealized_conversion_cast %b : memref<48xf32> to !llvm.ptr
// CHECK-NEXT:    %[[I:.*]] = builtin.unrealized_conversion_cast %i : index to i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr %[[B]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[RW:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[LOC:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT:    %[[DATA:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.prefetch.p0"(%[[P]], %[[RW]], %[[LOC]], %[[DATA]]) : (!llvm.ptr, i32, i32, i32) -> ()
// CHECK:         %[[W:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.prefetch.p0"(%{{.*}}, %[[W]], %{{.*}}, %{{.*}})
// CHECK-NOT:     frame_rt.prefetch
