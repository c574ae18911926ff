// frame-autodiff on the classification losses: the float operand's VJP is the family's
// gradient op (same reduction and ignore_index); the integer labels get none.
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s

func.func @ce(%x: tensor<4x5xf32> {frame.param = "x"}, %y: tensor<4xi64>) -> tensor<f32> {
  %l = frame.cross_entropy %x, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @ce_grad
// CHECK:         %[[L:.*]] = frame.cross_entropy %x, %y {frame.stage = "forward", ignore_index = -100 : i64, reduction = "mean"}
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DX:.*]] = frame.cross_entropy_grad %x, %y, %[[ONE]] {frame.stage = "backward", ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]]

// -----

func.func @nll(%x: tensor<4x5xf32> {frame.param = "x"}, %y: tensor<4xi32>, %r: tensor<4xf32>) -> tensor<f32> {
  %lp = frame.log_softmax %x {axis = 1 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %n = frame.nll_loss %lp, %y {ignore_index = 0 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<4xf32>
  %m = frame.mul %n, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %m : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @nll_grad
// CHECK:         %[[LP:.*]] = frame.log_softmax %x
// CHECK:         %[[DN:.*]] = frame.mul %{{.*}}, %r {frame.stage = "backward"}
// CHECK-NEXT:    %[[DLP:.*]] = frame.nll_loss_grad %[[LP]], %y, %[[DN]] {frame.stage = "backward", ignore_index = 0 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.log_softmax_grad %[[LP]], %[[DLP]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]
