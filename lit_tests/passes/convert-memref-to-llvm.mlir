// RUN: frame-opt %s -p convert-memref-to-llvm | filecheck %s

func.func @load_store_2d(%a: memref<8x4xf32>, %i: index, %j: index) {
  %v = memref.load %a[%i, %j] : memref<8x4xf32>
  memref.store %v, %a[%j, %i] : memref<8x4xf32>
  func.return
}

// CHECK-LABEL: func.func @load_store_2d
// CHECK-SAME:    (%[[A:.*]]: memref<8x4xf32>, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<8x4xf32> to !llvm.ptr
// CHECK:         %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[J64:.*]] = builtin.unrealized_conversion_cast %[[J]] : index to i64
// CHECK:         %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK:         %[[ROW:.*]] = llvm.mul %[[I64]], %[[C4]] overflow<nsw,nuw> : i64
// CHECK:         %[[LIN:.*]] = llvm.add %[[ROW]], %[[J64]] overflow<nsw,nuw> : i64
// CHECK:         %[[ADDR:.*]] = llvm.getelementptr inbounds %[[P]][%[[LIN]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[V:.*]] = llvm.load %[[ADDR]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         %[[C4B:.*]] = llvm.mlir.constant(4) : i64
// CHECK:         %[[ROW2:.*]] = llvm.mul %[[J64]], %[[C4B]] overflow<nsw,nuw> : i64
// CHECK:         %[[LIN2:.*]] = llvm.add %[[ROW2]], %[[I64]] overflow<nsw,nuw> : i64
// CHECK:         %[[ADDR2:.*]] = llvm.getelementptr inbounds %[[P]][%[[LIN2]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.store %[[V]], %[[ADDR2]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:         func.return

func.func @scalar_and_3d(%s: memref<f32>, %t: memref<2x3x5xf64>, %i: index) {
  %v = memref.load %s[] : memref<f32>
  %w = memref.load %t[%i, %i, %i] : memref<2x3x5xf64>
  memref.store %v, %s[] : memref<f32>
  func.return
}

// CHECK-LABEL: func.func @scalar_and_3d
// CHECK-SAME:    (%[[S:.*]]: memref<f32>, %[[T:.*]]: memref<2x3x5xf64>, %[[I:.*]]: index)
// CHECK:         %[[SP:.*]] = builtin.unrealized_conversion_cast %[[S]] : memref<f32> to !llvm.ptr
// CHECK-NOT:     llvm.getelementptr
// CHECK:         %[[V:.*]] = llvm.load %[[SP]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         %[[TP:.*]] = builtin.unrealized_conversion_cast %[[T]] : memref<2x3x5xf64> to !llvm.ptr
// CHECK:         %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[C15:.*]] = llvm.mlir.constant(15) : i64
// CHECK:         %[[X:.*]] = llvm.mul %[[I64]], %[[C15]] overflow<nsw,nuw> : i64
// CHECK:         %[[C5:.*]] = llvm.mlir.constant(5) : i64
// CHECK:         %[[Y:.*]] = llvm.mul %[[I64]], %[[C5]] overflow<nsw,nuw> : i64
// CHECK:         %[[XY:.*]] = llvm.add %[[X]], %[[Y]] overflow<nsw,nuw> : i64
// CHECK:         %[[LIN:.*]] = llvm.add %[[XY]], %[[I64]] overflow<nsw,nuw> : i64
// CHECK:         %[[ADDR:.*]] = llvm.getelementptr inbounds %[[TP]][%[[LIN]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK:         llvm.load %[[ADDR]] {alignment = 8 : i64} : !llvm.ptr -> f64
// CHECK:         llvm.store %[[V]], %[[SP]] {alignment = 4 : i64} : f32, !llvm.ptr

func.func @view(%arena: memref<4096xi8>) -> f32 {
  %off = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  %v = memref.view %arena[%off][] : memref<4096xi8> to memref<16x16xf32>
  %x = memref.load %v[%c1, %c1] : memref<16x16xf32>
  func.return %x : f32
}

// CHECK-LABEL: func.func @view
// CHECK-SAME:    (%[[ARENA:.*]]: memref<4096xi8>)
// CHECK:         %[[OFF:.*]] = arith.constant 256 : index
// CHECK:         %[[AP:.*]] = builtin.unrealized_conversion_cast %[[ARENA]] : memref<4096xi8> to !llvm.ptr
// CHECK:         %[[OFF64:.*]] = builtin.unrealized_conversion_cast %[[OFF]] : index to i64
// CHECK:         %[[BASE:.*]] = llvm.getelementptr inbounds %[[AP]][%[[OFF64]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NOT:     memref.view
// CHECK:         %[[ADDR:.*]] = llvm.getelementptr inbounds %[[BASE]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.load %[[ADDR]] {alignment = 4 : i64} : !llvm.ptr -> f32

// collapse_shape of a static identity-layout memref is the same pointer: the load
// through the collapsed memref addresses the source's elements directly.
func.func @collapse(%a: memref<4x8xf32>, %i: index) -> f32 {
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  %x = memref.load %flat[%i] : memref<32xf32>
  func.return %x : f32
}

// CHECK-LABEL: func.func @collapse
// CHECK-SAME:    (%[[A:.*]]: memref<4x8xf32>, %[[I:.*]]: index)
// CHECK-NOT:     memref.collapse_shape
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<4x8xf32> to !llvm.ptr
// CHECK:         %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[ADDR:.*]] = llvm.getelementptr inbounds %[[P]][%[[I64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[X:.*]] = llvm.load %[[ADDR]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         func.return %[[X]] : f32
