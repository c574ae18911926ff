// frame-autodiff on the data-movement family: pad's VJP slices each padded dim off,
// slice's pads the gradient back with zeros, concat's slices it per operand and
// transpose's applies the inverse permutation.
// RUN: frame-opt %s -p frame-autodiff | filecheck %s

func.func @movement(%x: tensor<2x3x4xf32> {frame.param = "x"}, %w: tensor<2x4x2xf32> {frame.param = "w"}) -> tensor<f32> {
  %t = frame.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %c = frame.concat %t, %w {axis = 2 : i64} : (tensor<2x4x3xf32>, tensor<2x4x2xf32>) -> tensor<2x4x5xf32>
  %s = frame.slice %c {axis = 2 : i64, begin = 1 : i64, end = 4 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4x3xf32>
  %p = frame.pad %s {low = array<i64: 0, 1, 0>, high = array<i64: 0, 0, 2>, value = 1.0 : f32} : (tensor<2x4x3xf32>) -> tensor<2x5x5xf32>
  %l = frame.sum %p : (tensor<2x5x5xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @movement_grad
// CHECK:         %[[DP:.*]] = frame.broadcast
// CHECK-NEXT:    %[[A:.*]] = frame.slice %[[DP]] {frame.stage = "backward", axis = 1 : i64, begin = 1 : i64, end = 5 : i64} : (tensor<2x5x5xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT:    %[[DS:.*]] = frame.slice %[[A]] {frame.stage = "backward", axis = 2 : i64, begin = 0 : i64, end = 3 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[DC:.*]] = frame.pad %[[DS]] {frame.stage = "backward", low = array<i64: 0, 0, 1>, high = array<i64: 0, 0, 1>, value = 0.000000e+00 : f32} : (tensor<2x4x3xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT:    %[[DT:.*]] = frame.slice %[[DC]] {frame.stage = "backward", axis = 2 : i64, begin = 0 : i64, end = 3 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[DW:.*]] = frame.slice %[[DC]] {frame.stage = "backward", axis = 2 : i64, begin = 3 : i64, end = 5 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.transpose %[[DT]] {frame.stage = "backward", perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]], %[[DW]]
