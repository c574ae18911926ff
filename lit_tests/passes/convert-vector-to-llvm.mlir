// RUN: frame-opt %s --split-input-file --verify-diagnostics -p convert-vector-to-llvm | filecheck %s

// A vector load / store at an arbitrary (here odd) index of a 1-D memref: the element
// address, one access of the whole vector, and the element's alignment (4), never the
// vector's (64).
func.func @load_store_1d(%a: memref<40xf32>, %i: index) {
  %c1 = arith.constant 1 : index
  %v = vector.load %a[%c1] : memref<40xf32>, vector<16xf32>
  vector.store %v, %a[%i] : memref<40xf32>, vector<16xf32>
  func.return
}

// CHECK-LABEL: func.func @load_store_1d
// CHECK-SAME:    (%[[A:.*]]: memref<40xf32>, %[[I:.*]]: index)
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<40xf32> to !llvm.ptr
// CHECK:         %[[C1_64:.*]] = builtin.unrealized_conversion_cast %[[C1]] : index to i64
// CHECK:         %[[SRC:.*]] = llvm.getelementptr inbounds %[[P]][%[[C1_64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[V:.*]] = llvm.load %[[SRC]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK:         %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[DST:.*]] = llvm.getelementptr inbounds %[[P]][%[[I64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.store %[[V]], %[[DST]] {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK-NOT:     vector.
// CHECK:         func.return

// -----

// On a 2-D memref the indices linearise row-major, as memref.load does: the vector is
// the 8 consecutive elements from [%i, %j] on (they may run into the next row).
func.func @load_2d(%a: memref<4x20xf32>, %i: index, %j: index) -> vector<8xf32> {
  %v = vector.load %a[%i, %j] : memref<4x20xf32>, vector<8xf32>
  func.return %v : vector<8xf32>
}

// CHECK-LABEL: func.func @load_2d
// CHECK-SAME:    (%[[A:.*]]: memref<4x20xf32>, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<4x20xf32> to !llvm.ptr
// CHECK:         %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[J64:.*]] = builtin.unrealized_conversion_cast %[[J]] : index to i64
// CHECK:         %[[C20:.*]] = llvm.mlir.constant(20) : i64
// CHECK:         %[[ROW:.*]] = llvm.mul %[[I64]], %[[C20]] overflow<nsw,nuw> : i64
// CHECK:         %[[LIN:.*]] = llvm.add %[[ROW]], %[[J64]] overflow<nsw,nuw> : i64
// CHECK:         %[[ADDR:.*]] = llvm.getelementptr inbounds %[[P]][%[[LIN]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[V:.*]] = llvm.load %[[ADDR]] {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:         func.return %[[V]] : vector<8xf32>

// -----

// Broadcast: lane 0 of an undef vector, then a shuffle that copies lane 0 everywhere
// (bits move, nothing is computed). vector.fma: the llvm.fma intrinsic on the vector.
func.func @broadcast_fma(%s: f32, %b: vector<4xf32>, %c: vector<4xf32>) -> vector<4xf32> {
  %a = vector.broadcast %s : f32 to vector<4xf32>
  %r = vector.fma %a, %b, %c : vector<4xf32>
  func.return %r : vector<4xf32>
}

// CHECK-LABEL: func.func @broadcast_fma
// CHECK-SAME:    (%[[S:.*]]: f32, %[[B:.*]]: vector<4xf32>, %[[C:.*]]: vector<4xf32>)
// CHECK:         %[[U:.*]] = llvm.mlir.undef : vector<4xf32>
// CHECK:         %[[L0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK:         %[[INS:.*]] = llvm.insertelement %[[S]], %[[U]][%[[L0]] : i32] : vector<4xf32>
// CHECK:         %[[A:.*]] = llvm.shufflevector %[[INS]], %[[U]] [0, 0, 0, 0] : vector<4xf32>
// CHECK:         %[[R:.*]] = llvm.intr.fma(%[[A]], %[[B]], %[[C]]) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK:         func.return %[[R]] : vector<4xf32>

// -----

// A broadcast of an index converts the scalar and the result (vector<2xi64>), and the
// users of the result still see vector<2xindex> through a cast.
func.func @broadcast_index(%i: index) -> vector<2xindex> {
  %v = vector.broadcast %i : index to vector<2xindex>
  func.return %v : vector<2xindex>
}

// CHECK-LABEL: func.func @broadcast_index
// CHECK-SAME:    (%[[I:.*]]: index)
// CHECK:         %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[U:.*]] = llvm.mlir.undef : vector<2xi64>
// CHECK:         %[[INS:.*]] = llvm.insertelement %[[I64]], %[[U]][%{{.*}} : i32] : vector<2xi64>
// CHECK:         %[[SPLAT:.*]] = llvm.shufflevector %[[INS]], %[[U]] [0, 0] : vector<2xi64>
// CHECK:         %[[BACK:.*]] = builtin.unrealized_conversion_cast %[[SPLAT]] : vector<2xi64> to vector<2xindex>
// CHECK:         func.return %[[BACK]] : vector<2xindex>

// -----

// A shuffle of two vectors (frame-gemm's transposes): llvm.shufflevector, same mask
// (indices past the first operand's lanes pick from the second).
func.func @shuffle(%a: vector<4xf32>, %b: vector<4xf32>) -> vector<4xf32> {
  %s = vector.shuffle %a, %b [0, 4, 2, 6] : vector<4xf32>, vector<4xf32>
  func.return %s : vector<4xf32>
}

// CHECK-LABEL: func.func @shuffle
// CHECK-SAME:    (%[[A:.*]]: vector<4xf32>, %[[B:.*]]: vector<4xf32>)
// CHECK:         %[[S:.*]] = llvm.shufflevector %[[A]], %[[B]] [0, 4, 2, 6] : vector<4xf32>
// CHECK-NOT:     vector.shuffle
// CHECK:         func.return %[[S]]

// -----

// Multi-dimensional vectors have no lowering: a clear error, the IR left as it was.
func.func @vector_2d(%a: memref<4x4xf32>, %i: index) -> vector<2x2xf32> {
  %v = vector.load %a[%i, %i] : memref<4x4xf32>, vector<2x2xf32>
  func.return %v : vector<2x2xf32>
}

// The pass names no op in its failure, hence no location (yet).
// expected-error@unknown {{convert-vector-to-llvm: vector.load: only 1-D fixed-size vectors are supported, got vector<2x2xf32>}}
