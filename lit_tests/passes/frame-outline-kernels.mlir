// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-outline-kernels | filecheck %s

// Each linalg op moves into its own private kernel, named after the frame op it
// implements; the fill value is cloned into its kernel; a memref used twice is
// passed once. Each records its parallel loops' sizes for frame-parallelize.

func.func @step(%x: memref<2x2xf32>, %out: memref<2x2xf32>, %arena: memref<64xi8> {frame.arena}) {
  %zero = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %v = memref.view %arena[%c0][] : memref<64xi8> to memref<2x2xf32>
  linalg.fill ins(%zero : f32) outs(%v : memref<2x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.mul"} ins(%x, %x : memref<2x2xf32>, memref<2x2xf32>) outs(%out : memref<2x2xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  }
  func.return
}

// CHECK:      func.func private @step__k0_fill(%[[V:.*]]: memref<2x2xf32>) attributes {frame.parallel_dims = array<i64: 2, 2>} {
// CHECK-NEXT:   %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   linalg.fill ins(%[[Z]] : f32) outs(%[[V]] : memref<2x2xf32>)
// CHECK-NEXT:   func.return
// CHECK:      func.func private @step__k1_mul(%[[X:.*]]: memref<2x2xf32>, %[[O:.*]]: memref<2x2xf32>) attributes {frame.parallel_dims = array<i64: 2, 2>} {
// CHECK-NEXT:   linalg.generic {{.*}} ins(%[[X]], %[[X]] : memref<2x2xf32>, memref<2x2xf32>) outs(%[[O]] : memref<2x2xf32>)
// CHECK:      func.func @step(%[[SX:.*]]: memref<2x2xf32>, %[[SO:.*]]: memref<2x2xf32>, %[[A:.*]]: memref<64xi8> {frame.arena}) {
// CHECK:        %[[SV:.*]] = memref.view %[[A]]
// CHECK-NEXT:   func.call @step__k0_fill(%[[SV]]) : (memref<2x2xf32>) -> ()
// CHECK-NEXT:   func.call @step__k1_mul(%[[SX]], %[[SO]]) : (memref<2x2xf32>, memref<2x2xf32>) -> ()
// CHECK-NEXT:   func.return

// -----

// Kernels take memrefs: linalg on tensors means bufferization has not run.
func.func @on_tensors(%x: tensor<2xf32>) -> tensor<2xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<2xf32>
  // expected-error@+1 {{frame-outline-kernels at @on_tensors: linalg.fill: expected linalg on memrefs, found one with tensor results (run frame-bufferize first)}}
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  func.return %f : tensor<2xf32>
}


// -----

// One kernel per distinct computation: @g's zero fill computes exactly what @f's
// does (same body, same buffer type), so it calls @f__k0_fill, which then serves
// two layers and keeps no frame.layer of its own; the calls keep theirs. The fill
// with 1.0 is a different computation and gets its own kernel.
func.func @f(%x: memref<2x2xf32>, %out: memref<2x2xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill {frame.layer = "a"} ins(%zero : f32) outs(%out : memref<2x2xf32>)
  func.return
}
func.func @g(%y: memref<2x2xf32>, %out: memref<2x2xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill {frame.layer = "b"} ins(%zero : f32) outs(%out : memref<2x2xf32>)
  %one = arith.constant 1.000000e+00 : f32
  linalg.fill {frame.layer = "b"} ins(%one : f32) outs(%y : memref<2x2xf32>)
  func.return
}

// CHECK:      func.func private @f__k0_fill(%{{.*}}: memref<2x2xf32>) attributes {frame.parallel_dims = array<i64: 2, 2>} {
// CHECK-NEXT:   arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<2x2xf32>)
// CHECK:      func.func @f(
// CHECK:        func.call @f__k0_fill(%{{.*}}) {frame.layer = "a"}
// CHECK:      func.func private @g__k0_fill(%{{.*}}: memref<2x2xf32>) attributes {frame.layer = "b", frame.parallel_dims = array<i64: 2, 2>} {
// CHECK-NEXT:   arith.constant 1.000000e+00 : f32
// CHECK:      func.func @g(
// CHECK:        func.call @f__k0_fill(%{{.*}}) {frame.layer = "b"}
// CHECK:        func.call @g__k0_fill(%{{.*}}) {frame.layer = "b"}
// CHECK-NOT:  func.func

// -----

// frame.parallel_dims: the sizes of the leading parallel loops that each pick the
// output element. An (i, k, j) matmul: i only (k is a reduction). A sum into a
// scalar: none. A read of the output buffer through another map (a transpose):
// none, an iteration would read what another writes. A scatter whose output map
// drops d0: d0 is not counted, however it is marked.
func.func @p(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>, %s: memref<f32>, %m: memref<3x3xf32>, %r: memref<2x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %f = math.fma %x, %y, %acc : f32
    linalg.yield %f : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"], doc = "frame.sum"} ins(%c : memref<4x5xf32>) outs(%s : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %t = arith.addf %x, %acc : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.transpose"} ins(%m : memref<3x3xf32>) outs(%m : memref<3x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.scatter"} ins(%b : memref<3x5xf32>) outs(%r : memref<2x5xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  func.return
}

// CHECK-LABEL: func.func private @p__k0_matmul(
// CHECK-SAME:    attributes {frame.parallel_dims = array<i64: 4>}
// CHECK-LABEL: func.func private @p__k1_sum(
// CHECK-NOT:     frame.parallel_dims
// CHECK-LABEL: func.func private @p__k2_transpose(
// CHECK-NOT:     frame.parallel_dims
// CHECK-LABEL: func.func private @p__k3_scatter(
// CHECK-NOT:     frame.parallel_dims
// CHECK-LABEL: func.func @p(
