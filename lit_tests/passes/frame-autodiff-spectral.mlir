// frame-autodiff on the spectral family: rfft's VJP is frame.rfft_grad (the adjoint
// real DFT, n from the operand), irfft's is frame.irfft_grad (the rfft of the
// cotangent weighted by c_k / n); both are linear in the cotangent alone.
// RUN: frame-opt %s -p frame-autodiff | filecheck %s

func.func @spectral(%x: tensor<2x8xf32> {frame.param = "x"}, %z: tensor<2x4x2xf32> {frame.param = "z"}) -> tensor<f32> {
  %f = frame.rfft %x : (tensor<2x8xf32>) -> tensor<2x5x2xf32>
  %y = frame.irfft %f {n = 8 : i64} : (tensor<2x5x2xf32>) -> tensor<2x8xf32>
  %w = frame.irfft %z {n = 7 : i64} : (tensor<2x4x2xf32>) -> tensor<2x7xf32>
  %a = frame.sum %y : (tensor<2x8xf32>) -> tensor<f32>
  %b = frame.sum %w : (tensor<2x7xf32>) -> tensor<f32>
  %l = frame.add %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @spectral_grad
// CHECK:         %[[ONE:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<f32>
// CHECK-NEXT:    %[[DW:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<2x7xf32>
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DZ:.*]] = frame.irfft_grad %[[DW]] {frame.stage = "backward"} : (tensor<2x7xf32>) -> tensor<2x4x2xf32>
// CHECK-NEXT:    %[[DF:.*]] = frame.irfft_grad %[[DY]] {frame.stage = "backward"} : (tensor<2x8xf32>) -> tensor<2x5x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.rfft_grad %[[DF]] {frame.stage = "backward", n = 8 : i64} : (tensor<2x5x2xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]], %[[DZ]] : tensor<f32>, tensor<2x8xf32>, tensor<2x4x2xf32>
