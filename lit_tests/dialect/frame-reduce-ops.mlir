// The reduction family (frame_reduce.py) and numpy broadcasting of the binary
// elementwise ops: round trip (custom and generic form) and the verifier's shape rules.
// Each error case states its diagnostic, at the failing op's line, with an
// expected-error annotation (checked by --verify-diagnostics).
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @ops(%x: tensor<2x3x4xf32>, %v: tensor<4xf32>, %c: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %m = frame.mean %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %mk = frame.mean %x {axes = array<i64: 0, 2>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %ma = frame.mean %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %x1 = frame.max %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %xk = frame.max %x {keepdims} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %g = frame.max_grad %x, %x1 {axes = array<i64: 2>} : (tensor<2x3x4xf32>, tensor<2x3xf32>) -> tensor<2x3x4xf32>
  %s = frame.sum %x {axes = array<i64: 1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %a = frame.maximum %x, %v : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %b = frame.minimum %c, %v : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %ga = frame.maximum_grad %x, %v, %a {wrt = 1 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %gb = frame.minimum_grad %c, %v, %b {wrt = 0 : i64} : (tensor<3x1xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %p = frame.add %x, %c : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %d = frame.div %p, %ma : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %q = frame.sub %v, %d : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %q : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %{{.*}} = frame.mean %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.mean %x {axes = array<i64: 0, 2>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:    %[[MA:.*]] = frame.mean %x : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %[[X1:.*]] = frame.max %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.max %x {keepdims} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:    %{{.*}} = frame.max_grad %x, %[[X1]] {axes = array<i64: 2>} : (tensor<2x3x4xf32>, tensor<2x3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.sum %x {axes = array<i64: 1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %[[A:.*]] = frame.maximum %x, %v : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[B:.*]] = frame.minimum %c, %v : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.maximum_grad %x, %v, %[[A]] {wrt = 1 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.minimum_grad %c, %v, %[[B]] {wrt = 0 : i64} : (tensor<3x1xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[P:.*]] = frame.add %x, %c : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[D:.*]] = frame.div %[[P]], %[[MA]] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.sub %v, %[[D]] : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// GENERIC:       "frame.mean"(%x) <{axes = array<i64: 0, 2>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// GENERIC:       "frame.max"(%x) <{keepdims}> : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// GENERIC:       "frame.max_grad"(%x, %{{.*}}) <{axes = array<i64: 2>}>
// GENERIC:       "frame.sum"(%x) <{axes = array<i64: 1>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// GENERIC:       "frame.maximum_grad"(%x, %v, %{{.*}}) <{wrt = 1 : i64}>
// GENERIC:       "frame.add"(%x, %c) : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>

// -----

func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.add: operands [2, 3] and [4, 3] do not broadcast}}
  %c = frame.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}

// -----

func.func @broadcast_result(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x1xf32> {
  // expected-error@+1 {{frame.mul: result type expected tensor<2x3xf32>, found tensor<2x1xf32>}}
  %c = frame.mul %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  func.return %c : tensor<2x1xf32>
}

// -----

func.func @maximum_shapes(%a: tensor<3xf32>, %b: tensor<2x2xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.maximum: operands [3] and [2, 2] do not broadcast}}
  %c = frame.maximum %a, %b : (tensor<3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}

// -----

func.func @mean_axis(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{frame.mean: axis 2 is out of range (expected 0 <= axis < 2)}}
  %m = frame.mean %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %m : tensor<2xf32>
}

// -----

func.func @mean_keepdims_type(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{frame.mean: result type expected tensor<2x1xf32>, found tensor<2xf32>}}
  %m = frame.mean %x {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %m : tensor<2xf32>
}

// -----

func.func @sum_keepdims_type(%x: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error@+1 {{frame.sum: result type expected tensor<1x1xf32>, found tensor<f32>}}
  %s = frame.sum %x {keepdims} : (tensor<2x3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}

// -----

func.func @max_twice(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{frame.max: axis 0 appears twice}}
  %m = frame.max %x {axes = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %m : tensor<3xf32>
}

// -----

func.func @max_empty(%x: tensor<2x0xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{frame.max: reduced dims expected non-empty (a max over no elements is undefined), found dim 1 of size 0 in [2, 0]}}
  %m = frame.max %x {axes = array<i64: 1>} : (tensor<2x0xf32>) -> tensor<2xf32>
  func.return %m : tensor<2xf32>
}

// -----

func.func @max_grad_dy(%x: tensor<2x3xf32>, %dy: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.max_grad: dy expected [2, 1] (the max's shape), found [2]}}
  %g = frame.max_grad %x, %dy {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}

// -----

func.func @minimum_grad_dy(%a: tensor<3x1xf32>, %b: tensor<4xf32>, %dy: tensor<3x1xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{frame.minimum_grad: dy expected [3, 4] (the broadcast shape of [3, 1] and [4]), found [3, 1]}}
  %g = frame.minimum_grad %a, %b, %dy {wrt = 0 : i64} : (tensor<3x1xf32>, tensor<4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  func.return %g : tensor<3x4xf32>
}

// -----

func.func @maximum_grad_wrt(%a: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{frame.maximum_grad: wrt expected 0 or 1, found 2}}
  %g = frame.maximum_grad %a, %a, %dy {wrt = 2 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %g : tensor<4xf32>
}
