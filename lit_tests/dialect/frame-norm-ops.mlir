// The normalization family (frame_norm.py): round trip and the verifier's rules.
// RUN: frame-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

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
  %y = frame.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}
// CHECK: frame.layer_norm: gamma shape expected [8] (the input's last dim), found [4]

// -----

func.func @eps(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  %y = frame.layer_norm %x, %g, %b {eps = 0.0 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}
// CHECK: frame.layer_norm: eps expected finite and > 0, found 0.0

// -----

func.func @wrt(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  %y = frame.layer_norm_grad %x, %g, %x {eps = 1.0e-05 : f32, wrt = 2 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  func.return
}
// CHECK: frame.layer_norm_grad: wrt expected 0 (x) or 1 (gamma), found 2
