// Round trip of the frame_rt ops in their custom syntax, and through the generic form.
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

// frame_rt.scan (frame-bufferize's form of frame.scan) and frame_rt.row (a row view).
func.func @cell(%h: memref<2x3xf32>, %x: memref<2x3xf32>, %w: memref<3x3xf32>, %out: memref<2x3xf32> {frame.output = 0 : i64}, %arena: memref<64xi8> {frame.arena}) {
  func.return
}
func.func @rnn(%h0: memref<2x3xf32>, %xs: memref<4x2x3xf32>, %w: memref<3x3xf32>, %hs: memref<4x2x3xf32>, %slot: memref<64xi8>, %t: index) {
  frame_rt.scan @cell(%h0, %xs, %w, %hs, %slot) {length = 4 : i64, num_sequences = 1 : i64, reverse} : memref<2x3xf32>, memref<4x2x3xf32>, memref<3x3xf32>, memref<4x2x3xf32>, memref<64xi8>
  %r = frame_rt.row %xs[%t] : memref<4x2x3xf32> -> memref<2x3xf32>
  func.return
}
// CHECK-LABEL: func.func @rnn(
// CHECK:         frame_rt.scan @cell(%h0, %xs, %w, %hs, %slot) {length = 4 : i64, num_sequences = 1 : i64, reverse} : memref<2x3xf32>, memref<4x2x3xf32>, memref<3x3xf32>, memref<4x2x3xf32>, memref<64xi8>
// CHECK-NEXT:    %r = frame_rt.row %xs[%t] : memref<4x2x3xf32> -> memref<2x3xf32>
// GENERIC: "frame_rt.scan"(%h0, %xs, %w, %hs, %slot) <{body = @cell, length = 4 : i64, num_sequences = 1 : i64, reverse}> : (memref<2x3xf32>, memref<4x2x3xf32>, memref<3x3xf32>, memref<4x2x3xf32>, memref<64xi8>) -> ()
// GENERIC: "frame_rt.row"(%xs, %t) : (memref<4x2x3xf32>, index) -> memref<2x3xf32>

// frame_rt.prefetch (frame-gemm's hint for an epilogue's operands): read, and write.
func.func @hint(%b: memref<?xf32>, %w: memref<48xf32>, %i: index) {
  frame_rt.prefetch %b[%i] : memref<?xf32>
  frame_rt.prefetch %w[%i] write : memref<48xf32>
  func.return
}
// CHECK-LABEL: func.func @hint(
// CHECK-NEXT:    frame_rt.prefetch %b[%i] : memref<?xf32>
// CHECK-NEXT:    frame_rt.prefetch %w[%i] write : memref<48xf32>
// GENERIC: "frame_rt.prefetch"(%b, %i) : (memref<?xf32>, index) -> ()
// GENERIC: "frame_rt.prefetch"(%w, %i) <{write}> : (memref<48xf32>, index) -> ()
