// RUN: frame-opt %s -p convert-func-to-llvm | filecheck %s
// RUN: frame-opt %s -p "convert-func-to-llvm{noalias=false}" | filecheck %s --check-prefix=NOALIAS-OFF

func.func @callee(%w: memref<4x8xf32>, %s: memref<f32>, %n: index) {
  func.return
}

func.func @caller(%w: memref<4x8xf32>, %s: memref<f32>, %arena: memref<1024xi8>) {
  %c3 = arith.constant 3 : index
  func.call @callee(%w, %s, %c3) : (memref<4x8xf32>, memref<f32>, index) -> ()
  %r = func.call @scale(%c3) : (index) -> index
  func.return
}

func.func @scale(%k: index) -> index {
  %two = arith.constant 2 : index
  %r = arith.muli %k, %two : index
  func.return %r : index
}

func.func private @external(memref<16xf32>)

// CHECK-LABEL: llvm.func @callee
// CHECK-SAME:    (%{{.*}}: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 128 : i64},
// CHECK-SAME:     %{{.*}}: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 4 : i64},
// CHECK-SAME:     %{{.*}}: i64)
// CHECK-NEXT:    llvm.return

// CHECK-LABEL: llvm.func @caller
// CHECK-SAME:    (%[[W:.*]]: !llvm.ptr {llvm.noalias, {{.*}}}, %[[S:.*]]: !llvm.ptr {llvm.noalias, {{.*}}}, %[[ARENA:.*]]: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 1024 : i64})
// CHECK:         %[[C3:.*]] = arith.constant 3 : index
// CHECK:         %[[C3_64:.*]] = builtin.unrealized_conversion_cast %[[C3]] : index to i64
// CHECK:         llvm.call @callee(%[[W]], %[[S]], %[[C3_64]]) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK:         %[[R:.*]] = llvm.call @scale(%[[C3_64]]) : (i64) -> i64
// CHECK:         llvm.return

// CHECK-LABEL: llvm.func @scale
// CHECK-SAME:    (%[[K:.*]]: i64) -> i64
// CHECK:         %[[KI:.*]] = builtin.unrealized_conversion_cast %[[K]] : i64 to index
// CHECK:         %[[R:.*]] = arith.muli %[[KI]], %{{.*}} : index
// CHECK:         %[[R64:.*]] = builtin.unrealized_conversion_cast %[[R]] : index to i64
// CHECK:         llvm.return %[[R64]] : i64

// CHECK-LABEL: llvm.func @external(!llvm.ptr)
// CHECK-NOT:     func.

// NOALIAS-OFF-LABEL: llvm.func @callee
// NOALIAS-OFF-SAME:    (%{{.*}}: !llvm.ptr {llvm.dereferenceable = 128 : i64},
// NOALIAS-OFF-NOT:     llvm.noalias
