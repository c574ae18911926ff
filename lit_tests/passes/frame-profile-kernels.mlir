// RUN: frame-opt %s -p frame-profile-kernels | filecheck %s

// A model function calling a matmul kernel (its flops: 2 x 6 x 5 x 8 = 480) and a relu
// kernel, the matmul from a layer: each call is bracketed by the profiler's counters
// with the kernel's id, the function's body by its own, the two runtime functions are
// declared, and the module records what each id is.

builtin.module {
  func.func private @f__k0_matmul(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @f__k1_relu(%s: memref<6x8xf32>, %h: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.relu"} ins(%s : memref<6x8xf32>) outs(%h : memref<6x8xf32>) {
    ^bb0(%x: f32, %z: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %r = arith.maximumf %x, %zero : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %h: memref<6x8xf32>, %arena: memref<256xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<256xi8> to memref<6x8xf32>
    func.call @f__k0_matmul(%a, %b, %c) {frame.layer = "fc1"} : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @f__k1_relu(%c, %h) : (memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// CHECK:      builtin.module attributes {frame.profile = {{\[\[}}[[F:[0-9]+]] : i64, "function", "f", "", 0 : i64], {{\[}}[[K0:[0-9]+]] : i64, "kernel", "f__k0_matmul", "fc1", 480 : i64], {{\[}}[[K1:[0-9]+]] : i64, "kernel", "f__k1_relu", "", 0 : i64]]} {
// CHECK:      func.func @f(
// CHECK-NEXT:   %[[FID:.*]] = arith.constant [[F]] : i64
// CHECK-NEXT:   func.call @frame_rt_prof_begin(%[[FID]]) : (i64) -> ()
// CHECK:        %[[ID0:.*]] = arith.constant [[K0]] : i64
// CHECK-NEXT:   func.call @frame_rt_prof_begin(%[[ID0]]) : (i64) -> ()
// CHECK-NEXT:   func.call @f__k0_matmul(
// CHECK-NEXT:   func.call @frame_rt_prof_end(%[[ID0]]) : (i64) -> ()
// CHECK-NEXT:   %[[ID1:.*]] = arith.constant [[K1]] : i64
// CHECK-NEXT:   func.call @frame_rt_prof_begin(%[[ID1]]) : (i64) -> ()
// CHECK-NEXT:   func.call @f__k1_relu(
// CHECK-NEXT:   func.call @frame_rt_prof_end(%[[ID1]]) : (i64) -> ()
// CHECK-NEXT:   func.call @frame_rt_prof_end(%[[FID]]) : (i64) -> ()
// CHECK-NEXT:   func.return
// CHECK:      func.func private @frame_rt_prof_begin(i64) -> ()
// CHECK:      func.func private @frame_rt_prof_end(i64) -> ()
