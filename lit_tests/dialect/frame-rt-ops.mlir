// Round trip of frame_rt.parallel_for in its custom syntax, and through the generic form.
// RUN: frame-opt %s | filecheck %s
// RUN: frame-opt %s --print-op-generic | frame-opt | filecheck %s
// RUN: frame-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func private @task(%a: memref<8xf32>, %b: memref<8xf32>, %lo: index, %hi: index) {
  func.return
}
func.func private @k(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  frame_rt.parallel_for @task(%a, %b) range(%c0, %c8) threads 4 : memref<8xf32>, memref<8xf32>
  func.return
}

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>)
// CHECK:         frame_rt.parallel_for @task(%[[A]], %[[B]]) range(%{{.*}}, %{{.*}}) threads 4 : memref<8xf32>, memref<8xf32>

// GENERIC: "frame_rt.parallel_for"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{task = @task, threads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 2>}> : (index, index, memref<8xf32>, memref<8xf32>) -> ()
