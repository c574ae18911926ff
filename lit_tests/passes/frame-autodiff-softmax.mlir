// frame-autodiff on the softmax family: each VJP is the family's gradient op on the
// forward result, same axis.
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s

func.func @softmax(%x: tensor<2x5xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %l = frame.sum %y : (tensor<2x5xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @softmax_grad
// CHECK:         %[[Y:.*]] = frame.softmax %{{.*}} {frame.stage = "forward", axis = 1 : i64}
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.softmax_grad %[[Y]], %[[DY]] {frame.stage = "backward", axis = 1 : i64}
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

func.func @log_softmax(%x: tensor<2x5xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.log_softmax %x {axis = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %l = frame.sum %y : (tensor<2x5xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @log_softmax_grad
// CHECK:         %[[Y:.*]] = frame.log_softmax %{{.*}} {frame.stage = "forward", axis = 0 : i64}
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.log_softmax_grad %[[Y]], %[[DY]] {frame.stage = "backward", axis = 0 : i64}
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]
