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

// dgamma: loops (rows, d), every d summing its rows in order, d (contiguous, parallel)
// innermost so that the loop vectorizes.
func.func @dg(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %dy: tensor<3x8xf32>) -> tensor<8xf32> {
  %r = frame.layer_norm_grad %x, %g, %dy {eps = 1.0e-05 : f32, wrt = 1 : i64} : (tensor<3x8xf32>, tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func @dg
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"], doc = "frame.layer_norm_grad"}

// -----

// batch_norm over [N, C, L]: per-channel sums in two steps, partials [C, L] with the
// channel loop first (parallel), n summed in order and l innermost (parallel: it
// vectorizes without reassociating), then each row of partials in order; the mean, the
// squared deviations the same way, rstd; then the elementwise
// (x - mean) * rstd * gamma + beta reading the [C] tensors at d1. The partials are f32,
// their per-channel sums f64 (torch's CPU batch norm accumulates in double), rounded to
// f32 once per channel.
func.func @bn(%x: tensor<2x3x4xf32> {frame.param = "x"}, %g: tensor<3xf32> {frame.param = "g"}, %b: tensor<3xf32> {frame.param = "b"}) -> tensor<f32> {
  %y = frame.batch_norm %x, %g, %b {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %l = frame.sum %y : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @bn
// CHECK:         %[[PSUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.batch_norm"} ins(%x : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      arith.addf %[[ACC]], %[[X]] : f32
// CHECK-NOT:       fastmath
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "frame.batch_norm"} ins(%[[PSUM]] : tensor<3x4xf32>) outs(%{{.*}} : tensor<3xf64>)
// CHECK-NEXT:    ^bb0(%[[P:.*]]: f32, %[[S:.*]]: f64):
// CHECK-NEXT:      %[[WP:.*]] = arith.extf %[[P]] : f32 to f64
// CHECK-NEXT:      arith.addf %[[S]], %[[WP]] : f64
// CHECK:         %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<3xf64>) outs(%{{.*}} : tensor<3xf32>)
// CHECK:           arith.divf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:      arith.truncf %{{.*}} : f64 to f32
// CHECK:         %[[PSS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.batch_norm"} ins(%x, %[[MEAN]] : tensor<2x3x4xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK:           %[[DEV:.*]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[DEV]], %[[DEV]] : f32
// CHECK-NEXT:      arith.addf %{{.*}}, %[[SQ]] : f32
// CHECK:         %[[SS:.*]] = linalg.generic {{.*}} ins(%[[PSS]] : tensor<3x4xf32>) outs(%{{.*}} : tensor<3xf64>)
// CHECK:         %[[RSTD:.*]] = linalg.generic {{.*}} ins(%[[SS]] : tensor<3xf64>) outs(%{{.*}} : tensor<3xf32>)
// CHECK:           math.sqrt %{{.*}} : f64
// CHECK:           arith.truncf %{{.*}} : f64 to f32
// CHECK:         %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.batch_norm"} ins(%x, %g, %b, %[[MEAN]], %[[RSTD]] :

// The VJP: batch_norm_grad for x (wrt 0) and gamma (wrt 1), a sum of dy over the
// non-channel dims for beta.
// AD-LABEL: func.func @bn_grad
// AD:         %[[DY:.*]] = frame.broadcast
// AD-NEXT:    %[[DX:.*]] = frame.batch_norm_grad %x, %g, %[[DY]] {frame.stage = "backward", axis = 1 : i64, eps = 1.000000e-05 : f32, wrt = 0 : i64}
// AD-NEXT:    %[[DG:.*]] = frame.batch_norm_grad %x, %g, %[[DY]] {frame.stage = "backward", axis = 1 : i64, eps = 1.000000e-05 : f32, wrt = 1 : i64}
// AD-NEXT:    %[[DB:.*]] = frame.sum %[[DY]] {frame.stage = "backward", axes = array<i64: 0, 2>}
// AD-NEXT:    func.return %{{.*}}, %[[DX]], %[[DG]], %[[DB]]

// -----

// [N, C] (channel last): the loops stay (n, c), the channel loop innermost. The
// running mean: momentum * mean + (1 - momentum) * running, written into the running
// mean's own tensor (the destination), so a step that donates it updates it in place.
func.func @bn_stats(%x: tensor<6x3xf32>, %r: tensor<3xf32>) -> tensor<3xf32> {
  %m = frame.batch_norm_stats %x, %r {axis = 1 : i64, momentum = 2.500000e-01 : f32, which = "mean"} : (tensor<6x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %m : tensor<3xf32>
}

// CHECK-LABEL: func.func @bn_stats
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"], doc = "frame.batch_norm_stats"} ins(%x : tensor<6x3xf32>) outs(%{{.*}} : tensor<3xf64>)
// CHECK:         %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<3xf64>) outs(%{{.*}} : tensor<3xf32>)
// CHECK:         %m = linalg.generic {{.*}} ins(%[[MEAN]] : tensor<3xf32>) outs(%r : tensor<3xf32>)
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f32, %[[OLD:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.mulf %[[M]], %[[S]] : f32
// CHECK-NEXT:      %[[K:.*]] = arith.constant 7.500000e-01 : f32
// CHECK-NEXT:      %[[KEEP:.*]] = arith.mulf %[[K]], %[[OLD]] : f32
// CHECK-NEXT:      arith.addf %[[NEW]], %[[KEEP]] : f32

// -----

// The gradient for x: one pass of f32 partial sums of (x - mean) * dy and dy, each
// channel's partials summed in order in f64, then per channel (in f32, as torch) the weight
// k = dotp * rstd^2 / n of x - mean and sum(dy) / n; then the elementwise
// (dy - sum(dy) / n - (x - mean) * k) * rstd * gamma.
func.func @bn_dx(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %dy: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = frame.batch_norm_grad %x, %g, %dy {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 0 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @bn_dx
// CHECK:         %[[MEAN:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3xf32>)
// CHECK:           arith.truncf %{{.*}} : f64 to f32
// CHECK:         %[[RSTD:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3xf32>)
// CHECK:           math.sqrt %{{.*}} : f64
// CHECK:         %[[PDOT:.*]], %[[PDY:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.batch_norm_grad"} ins(%x, %dy, %[[MEAN]] : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>) outs(%{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<3x4xf32>)
// CHECK:         %[[DOT:.*]], %[[SDY:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"], doc = "frame.batch_norm_grad"} ins(%[[PDOT]], %[[PDY]] : tensor<3x4xf32>, tensor<3x4xf32>) outs(%{{.*}}, %{{.*}} : tensor<3xf64>, tensor<3xf64>)
// CHECK:         %[[K:.*]], %[[MDY:.*]] = linalg.generic {{.*}} ins(%[[DOT]], %[[SDY]], %[[RSTD]] : tensor<3xf64>, tensor<3xf64>, tensor<3xf32>) outs(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK:         %r = linalg.generic {{.*}} ins(%x, %dy, %g, %[[MEAN]], %[[RSTD]], %[[K]], %[[MDY]] :

// -----

// Inference mode: rstd from the given variance; the VJP has no gradient for it.
func.func @bn_inf(%x: tensor<6x3xf32> {frame.param = "x"}, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<f32> {
  %y = frame.batch_norm_inference %x, %g, %b, %m, %v {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<6x3xf32>
  %l = frame.sum %y : (tensor<6x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @bn_inf
// CHECK:         %[[RSTD:.*]] = linalg.generic {{.*}} ins(%v : tensor<3xf32>)
// CHECK:           math.sqrt
// CHECK:         %y = linalg.generic {{.*}} ins(%x, %g, %b, %m, %[[RSTD]] :

// AD-LABEL: func.func @bn_inf_grad
// AD:         %[[DY:.*]] = frame.broadcast
// AD-NEXT:    %[[DX:.*]] = frame.batch_norm_inference_grad %x, %g, %m, %v, %[[DY]] {frame.stage = "backward", axis = 1 : i64, eps = 1.000000e-05 : f32, wrt = 0 : i64}
// AD-NEXT:    func.return %{{.*}}, %[[DX]]
