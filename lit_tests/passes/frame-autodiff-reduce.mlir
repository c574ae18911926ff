// frame-autodiff on the reduction family (frame_reduce.py) and on broadcasting binary
// ops: a broadcast operand's adjoint is summed over the dims it was broadcast along,
// then reshaped to its shape (nothing of the kind without broadcasting); max's VJP is
// frame.max_grad, maximum's and minimum's their gradient ops per operand; mean's
// divides by the group size and broadcasts; a keepdims sum's reshapes dy first.
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s

func.func @bias(%x: tensor<2x3x4xf32>, %b: tensor<3x1xf32> {frame.param = "b"}, %s: tensor<f32> {frame.param = "s"}) -> tensor<f32> {
  %y = frame.add %x, %b : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %z = frame.mul %y, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %l = frame.sum %z : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @bias_grad
// CHECK:         %[[Y:.*]] = frame.add %x, %b {frame.stage = "forward"} : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK:         %[[DZ:.*]] = frame.broadcast %{{.*}} {frame.stage = "backward"} : (tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DY:.*]] = frame.mul %[[DZ]], %s {frame.stage = "backward"} : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DSF:.*]] = frame.mul %[[DZ]], %[[Y]] {frame.stage = "backward"} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DS:.*]] = frame.sum %[[DSF]] {frame.stage = "backward"} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %[[DBS:.*]] = frame.sum %[[DY]] {frame.stage = "backward", axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[DB:.*]] = frame.reshape %[[DBS]] {frame.stage = "backward"} : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DB]], %[[DS]] : tensor<f32>, tensor<3x1xf32>, tensor<f32>

// -----

func.func @same(%a: tensor<4xf32> {frame.param = "a"}, %b: tensor<4xf32> {frame.param = "b"}) -> tensor<f32> {
  %y = frame.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// Same shapes: the adjoints pass through unreduced, as before broadcasting.
// CHECK-LABEL: func.func @same_grad
// CHECK:         %[[D:.*]] = frame.broadcast %{{.*}} {frame.stage = "backward"} : (tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[N:.*]] = frame.neg %[[D]] {frame.stage = "backward"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[D]], %[[N]]

// -----

func.func @reduce(%x: tensor<2x3xf32> {frame.param = "x"}, %v: tensor<3xf32> {frame.param = "v"}) -> tensor<f32> {
  %m = frame.max %x {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %a = frame.mean %x {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  %c = frame.maximum %m, %a : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %d = frame.minimum %c, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %s = frame.sum %d {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %l = frame.sum %s : (tensor<2x1xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @reduce_grad
// CHECK:         %[[M:.*]] = frame.max %x {frame.stage = "forward", axes = array<i64: 1>, keepdims}
// CHECK-NEXT:    %[[A:.*]] = frame.mean %x {frame.stage = "forward", axes = array<i64: 0>}
// CHECK-NEXT:    %[[C:.*]] = frame.maximum %[[M]], %[[A]]
// CHECK:         %[[DSK:.*]] = frame.broadcast %{{.*}} : (tensor<f32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %[[DS:.*]] = frame.reshape %[[DSK]] {frame.stage = "backward"} : (tensor<2x1xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[DD:.*]] = frame.broadcast %[[DS]] {frame.stage = "backward", axes = array<i64: 1>} : (tensor<2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DC:.*]] = frame.minimum_grad %[[C]], %v, %[[DD]] {frame.stage = "backward", wrt = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DVF:.*]] = frame.minimum_grad %[[C]], %v, %[[DD]] {frame.stage = "backward", wrt = 1 : i64}
// CHECK-NEXT:    %[[DV:.*]] = frame.sum %[[DVF]] {frame.stage = "backward", axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[DMF:.*]] = frame.maximum_grad %[[M]], %[[A]], %[[DC]] {frame.stage = "backward", wrt = 0 : i64} : (tensor<2x1xf32>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DMS:.*]] = frame.sum %[[DMF]] {frame.stage = "backward", axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[DM:.*]] = frame.reshape %[[DMS]] {frame.stage = "backward"} : (tensor<2xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %[[DAF:.*]] = frame.maximum_grad %[[M]], %[[A]], %[[DC]] {frame.stage = "backward", wrt = 1 : i64}
// CHECK-NEXT:    %[[DA:.*]] = frame.sum %[[DAF]] {frame.stage = "backward", axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[N:.*]] = frame.constant 2.000000e+00 {frame.stage = "backward"} : tensor<f32>
// CHECK-NEXT:    %[[Q:.*]] = frame.div %[[DA]], %[[N]] {frame.stage = "backward"} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[DX1:.*]] = frame.broadcast %[[Q]] {frame.stage = "backward", axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DX2:.*]] = frame.max_grad %x, %[[DM]] {frame.stage = "backward", axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.add %[[DX1]], %[[DX2]] {frame.stage = "backward"}
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]], %[[DV]] : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>
