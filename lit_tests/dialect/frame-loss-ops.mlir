// The classification-loss family (frame_loss.py): round trip (custom and generic form)
// and the verifier's rules.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @ops(%lp: tensor<4x5xf32>, %y: tensor<4xi64>, %y32: tensor<4xi32>, %dn: tensor<4xf32>, %h: tensor<4x5xf16>) -> tensor<4x5xf32> {
  %l = frame.nll_loss %lp, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  %s = frame.nll_loss %lp, %y32 {ignore_index = -100 : i64, reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<f32>
  %n = frame.cross_entropy %lp, %y32 {ignore_index = 2 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<4xf32>
  %c = frame.cross_entropy %h, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf16>, tensor<4xi64>) -> tensor<f16>
  %g = frame.nll_loss_grad %lp, %y, %l {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  %d = frame.cross_entropy_grad %lp, %y32, %dn {ignore_index = 2 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x5xf32>
  func.return %d : tensor<4x5xf32>
}
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %{{.*}} = frame.nll_loss %{{.*}}, %{{.*}} {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK-NEXT:    %{{.*}} = frame.nll_loss %{{.*}}, %{{.*}} {ignore_index = -100 : i64, reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<f32>
// CHECK-NEXT:    %{{.*}} = frame.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 2 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = frame.cross_entropy %{{.*}}, %{{.*}} {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf16>, tensor<4xi64>) -> tensor<f16>
// CHECK-NEXT:    %{{.*}} = frame.nll_loss_grad %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = 2 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x5xf32>
// GENERIC:       "frame.nll_loss"(%{{.*}}, %{{.*}}) <{ignore_index = -100 : i64, reduction = "mean"}> : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
// GENERIC:       "frame.cross_entropy_grad"(%{{.*}}, %{{.*}}, %{{.*}}) <{ignore_index = 2 : i64, reduction = "none"}>

// -----

func.func @bad_reduction(%lp: tensor<4x5xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  // expected-error@+1 {{frame.nll_loss: reduction expected "mean", "sum" or "none", found "avg"}}
  %l = frame.nll_loss %lp, %y {ignore_index = -100 : i64, reduction = "avg"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// -----

func.func @bad_rank(%lp: tensor<4x5x2xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  // expected-error@+1 {{frame.cross_entropy: input expected rank 2 ([N, C]), found [4, 5, 2]}}
  %l = frame.cross_entropy %lp, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5x2xf32>, tensor<4xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// -----

func.func @bad_labels_shape(%lp: tensor<4x5xf32>, %y: tensor<3xi64>) -> tensor<f32> {
  // expected-error@+1 {{frame.nll_loss: labels shape expected [4] (the input's rows), found [3]}}
  %l = frame.nll_loss %lp, %y {ignore_index = -100 : i64, reduction = "sum"} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// -----

func.func @float_labels(%lp: tensor<4x5xf32>, %y: tensor<4xf32>) -> tensor<f32> {
  // expected-error@+1 {{frame.cross_entropy: labels (operand #1) expected a tensor of i32 or i64, found tensor<4xf32>}}
  %l = frame.cross_entropy %lp, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// -----

func.func @int_input(%lp: tensor<4x5xi32>, %y: tensor<4xi32>) -> tensor<f32> {
  // expected-error@+1 {{frame.nll_loss: operand #0 expected a tensor of f32 (the result's element type), found tensor<4x5xi32>}}
  %l = frame.nll_loss %lp, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xi32>, tensor<4xi32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// -----

func.func @bad_result(%lp: tensor<4x5xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  // expected-error@+1 {{frame.nll_loss: result type expected tensor<4xf32>, found tensor<f32>}}
  %l = frame.nll_loss %lp, %y {ignore_index = -100 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// -----

func.func @bad_dy(%lp: tensor<4x5xf32>, %y: tensor<4xi64>, %dy: tensor<f32>) -> tensor<4x5xf32> {
  // expected-error@+1 {{frame.cross_entropy_grad: dy shape expected [4] (the loss's, reduction "none"), found []}}
  %g = frame.cross_entropy_grad %lp, %y, %dy {ignore_index = -100 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  func.return %g : tensor<4x5xf32>
}

// -----

func.func @bad_dy_type(%lp: tensor<4x5xf32>, %y: tensor<4xi64>, %dy: tensor<f16>) -> tensor<4x5xf32> {
  // expected-error@+1 {{frame.nll_loss_grad: operand #2 expected a tensor of f32 (the result's element type), found tensor<f16>}}
  %g = frame.nll_loss_grad %lp, %y, %dy {ignore_index = -100 : i64, reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f16>) -> tensor<4x5xf32>
  func.return %g : tensor<4x5xf32>
}
