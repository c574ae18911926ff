// The normalization family (frame_norm.py): round trip and the verifier's rules.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @ops(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %y = frame.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %dx = frame.layer_norm_grad %x, %g, %y {eps = 1.0e-05 : f32, wrt = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dg = frame.layer_norm_grad %x, %g, %dx {eps = 1.0e-05 : f32, wrt = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  func.return %dg : tensor<8xf32>
}
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %{{.*}} = frame.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %{{.*}} = frame.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f32, wrt = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %{{.*}} = frame.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f32, wrt = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<8xf32>

// -----

func.func @gamma_shape(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{frame.layer_norm: gamma shape expected [8] (the input's last dim), found [4]}}
  %y = frame.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @eps(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{frame.layer_norm: eps expected finite and > 0, found 0.0}}
  %y = frame.layer_norm %x, %g, %b {eps = 0.0 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @wrt(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{frame.layer_norm_grad: wrt expected 0 (x) or 1 (gamma), found 2}}
  %y = frame.layer_norm_grad %x, %g, %x {eps = 1.0e-05 : f32, wrt = 2 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  func.return
}

// -----

// Batch norm: training, its gradient op, running statistics, inference and its
// gradient op, over [N, C, L] (channel axis 1) and [N, C].
func.func @batch_norm(%x: tensor<4x3x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %x2: tensor<6x3xf32>) -> tensor<3xf32> {
  %y = frame.batch_norm %x, %g, %b {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x5xf32>
  %dx = frame.batch_norm_grad %x, %g, %y {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 0 : i64} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
  %dg = frame.batch_norm_grad %x, %g, %dx {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 1 : i64} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<4x3x5xf32>) -> tensor<3xf32>
  %rm = frame.batch_norm_stats %x, %g {axis = 1 : i64, momentum = 1.000000e-01 : f32, which = "mean"} : (tensor<4x3x5xf32>, tensor<3xf32>) -> tensor<3xf32>
  %rv = frame.batch_norm_stats %x2, %b {axis = 1 : i64, momentum = 1.000000e-01 : f32, which = "var"} : (tensor<6x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %yi = frame.batch_norm_inference %x2, %g, %b, %rm, %rv {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<6x3xf32>
  %di = frame.batch_norm_inference_grad %x2, %g, %rm, %rv, %yi {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 1 : i64} : (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<6x3xf32>) -> tensor<3xf32>
  func.return %di : tensor<3xf32>
}
// CHECK-LABEL: func.func @batch_norm
// CHECK-NEXT:    %{{.*}} = frame.batch_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, eps = 1.000000e-05 : f32} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, eps = 1.000000e-05 : f32, wrt = 0 : i64} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, eps = 1.000000e-05 : f32, wrt = 1 : i64} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<4x3x5xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %{{.*}} = frame.batch_norm_stats %{{.*}}, %{{.*}} {axis = 1 : i64, momentum = 1.000000e-01 : f32, which = "mean"} : (tensor<4x3x5xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %{{.*}} = frame.batch_norm_stats %{{.*}}, %{{.*}} {axis = 1 : i64, momentum = 1.000000e-01 : f32, which = "var"} : (tensor<6x3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %{{.*}} = frame.batch_norm_inference %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, eps = 1.000000e-05 : f32} : (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.batch_norm_inference_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, eps = 1.000000e-05 : f32, wrt = 1 : i64} : (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<6x3xf32>) -> tensor<3xf32>

// -----

func.func @bn_gamma_shape(%x: tensor<4x3x5xf32>, %g: tensor<5xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm: gamma shape expected [3] (the input's channel dim 1), found [5]}}
  %y = frame.batch_norm %x, %g, %b {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<4x3x5xf32>, tensor<5xf32>, tensor<3xf32>) -> tensor<4x3x5xf32>
  func.return
}

// -----

func.func @bn_rank(%x: tensor<3xf32>, %g: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm: input expected rank >= 2 ([N, C, *spatial]), found [3]}}
  %y = frame.batch_norm %x, %g, %g {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @bn_one_value(%x: tensor<1x3xf32>, %g: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm: expected more than 1 value per channel in training, found input [1, 3]}}
  %y = frame.batch_norm %x, %g, %g {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  func.return
}

// -----

func.func @bn_axis(%x: tensor<4x3xf32>, %g: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm_inference: axis expected in [0, 2) for a rank-2 input, found 2}}
  %y = frame.batch_norm_inference %x, %g, %g, %g, %g {axis = 2 : i64, eps = 1.0e-05 : f32} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @bn_var_shape(%x: tensor<4x3xf32>, %g: tensor<3xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{frame.batch_norm_inference: var shape expected [3] (the input's channel dim 1), found [4]}}
  %y = frame.batch_norm_inference %x, %g, %g, %g, %v {axis = 1 : i64, eps = 1.0e-05 : f32} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @bn_eps(%x: tensor<4x3xf32>, %g: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm_inference: eps expected finite and > 0, found -1.0}}
  %y = frame.batch_norm_inference %x, %g, %g, %g, %g {axis = 1 : i64, eps = -1.0 : f32} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @bn_momentum(%x: tensor<4x3xf32>, %r: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm_stats: momentum expected in [0, 1], found 1.5}}
  %m = frame.batch_norm_stats %x, %r {axis = 1 : i64, momentum = 1.5 : f32, which = "mean"} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @bn_which(%x: tensor<4x3xf32>, %r: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm_stats: which expected "mean" or "var", found "std"}}
  %m = frame.batch_norm_stats %x, %r {axis = 1 : i64, momentum = 0.1 : f32, which = "std"} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @bn_grad_wrt(%x: tensor<4x3xf32>, %g: tensor<3xf32>) {
  // expected-error@+1 {{frame.batch_norm_grad: wrt expected 0 (x) or 1 (gamma), found 2}}
  %d = frame.batch_norm_grad %x, %g, %x {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 2 : i64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @bn_grad_dy(%x: tensor<4x3xf32>, %g: tensor<3xf32>, %dy: tensor<3x4xf32>) {
  // expected-error@+1 {{frame.batch_norm_inference_grad: dy shape expected [4, 3], found [3, 4]}}
  %d = frame.batch_norm_inference_grad %x, %g, %g, %g, %dy {axis = 1 : i64, eps = 1.0e-05 : f32, wrt = 0 : i64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x4xf32>) -> tensor<4x3xf32>
  func.return
}
