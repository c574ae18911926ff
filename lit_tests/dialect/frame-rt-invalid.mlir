// One case per frame_rt.parallel_for verifier rule.
// RUN: frame-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func private @task(%a: memref<8xf32>, %lo: index, %hi: index) {
  func.return
}
func.func private @zero_threads(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  frame_rt.parallel_for @task(%a) range(%c0, %c8) threads 0 : memref<8xf32>
  func.return
}
// CHECK: frame-rt-invalid.mlir:[[# @LINE - 3]]:3: frame_rt.parallel_for: threads must be at least 1, found 0

// -----

func.func private @no_task(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  frame_rt.parallel_for @missing(%a) range(%c0, %c8) threads 2 : memref<8xf32>
  func.return
}
// CHECK: frame_rt.parallel_for: no task function @missing in the enclosing module

// -----

func.func private @task(%a: memref<4xf32>, %lo: index) {
  func.return
}
func.func private @bad_signature(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  frame_rt.parallel_for @task(%a) range(%c0, %c8) threads 2 : memref<8xf32>
  func.return
}
// CHECK: frame_rt.parallel_for: task @task must take (memref<8xf32>, index, index) and return nothing, found (memref<4xf32>, index) -> ()
