// convert-frame-to-linalg and frame-autodiff on layer_norm (frame_norm.py).
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s --check-prefix=AD

// Row sums, means, squared deviations, rstd = 1 / sqrt(var + eps), then
// (x - mean) * rstd * gamma + beta per element.
func.func @ln(%x: tensor<3x8xf32> {frame.param = "x"}, %g: tensor<8xf32> {frame.param = "g"}, %b: tensor<8xf32> {frame.param = "b"}) -> tensor<f32> {
  %y = frame.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %l = frame.sum %y : (tensor<3x8xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @ln
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]
// CHECK:         %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<3xf32>)
// CHECK:           arith.divf
// CHECK:         %[[SS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.subf
// CHECK:           arith.mulf
// CHECK:         %[[RSTD:.*]] = linalg.generic {{.*}} ins(%[[SS]] : tensor<3xf32>)
// CHECK:           math.sqrt
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]], %[[RSTD]] :

// The VJP: layer_norm_grad for x (wrt 0) and gamma (wrt 1), a sum of dy for beta.
// AD-LABEL: func.func @ln_grad
// AD:         %[[DY:.*]] = frame.broadcast
// AD-NEXT:    %[[DX:.*]] = frame.layer_norm_grad %{{.*}}, %{{.*}}, %[[DY]] {frame.stage = "backward", eps = 1.000000e-05 : f32, wrt = 0 : i64}
// AD-NEXT:    %[[DG:.*]] = frame.layer_norm_grad %{{.*}}, %{{.*}}, %[[DY]] {frame.stage = "backward", eps = 1.000000e-05 : f32, wrt = 1 : i64}
// AD-NEXT:    %[[DB:.*]] = frame.sum %[[DY]] {frame.stage = "backward", axes = array<i64: 0>}
// AD-NEXT:    func.return %{{.*}}, %[[DX]], %[[DG]], %[[DB]]

// -----

// dgamma: loops (d, rows), d parallel and leading, the rows summed in order.
func.func @dg(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %dy: tensor<3x8xf32>) -> tensor<8xf32> {
  %r = frame.layer_norm_grad %x, %g, %dy {eps = 1.0e-05 : f32, wrt = 1 : i64} : (tensor<3x8xf32>, tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func @dg
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]
