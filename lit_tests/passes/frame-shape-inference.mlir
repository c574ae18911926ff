// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-shape-inference | filecheck %s
// Without --split-input-file the whole file is one module; the pass stops at the
// first function it cannot type (@add_mismatch) with a clean error and exit 1.
// RUN: not frame-opt %s -p frame-shape-inference 2>&1 | filecheck %s --check-prefix=ERR

// ERR-NOT:  Traceback
// ERR:      frame-opt: error: {{.*}}frame-shape-inference.mlir:[[# @LINE + 84]]:3: frame-shape-inference at @add_mismatch: frame.add: operands [8, 4] and [4, 8] do not broadcast
// ERR-NOT:  Traceback

// Unranked results through a chain: each shape rule feeds the next op, and the
// signature is updated to the type actually returned.
func.func @chain(%x: tensor<8x4xf32>, %w: tensor<4x8xf32> {frame.param = "w"}, %b: tensor<8x8xf32>, %t: tensor<8x8xf32>) -> tensor<*xf32> {
  %0 = frame.matmul %x, %w : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<*xf32>
  %1 = frame.add %0, %b : (tensor<*xf32>, tensor<8x8xf32>) -> tensor<*xf32>
  %2 = frame.relu %1 : (tensor<*xf32>) -> tensor<*xf32>
  %3 = frame.mse_loss %2, %t : (tensor<*xf32>, tensor<8x8xf32>) -> tensor<*xf32>
  func.return %3 : tensor<*xf32>
}

// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<8x4xf32>, %[[W:[a-z0-9_]+]]: tensor<4x8xf32> {frame.param = "w"}, %[[B:[a-z0-9_]+]]: tensor<8x8xf32>, %[[T:[a-z0-9_]+]]: tensor<8x8xf32>) -> tensor<f32> {
// CHECK-NEXT:    %[[MM:.*]] = frame.matmul %[[X]], %[[W]] : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[ADD:.*]] = frame.add %[[MM]], %[[B]] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[RELU:.*]] = frame.relu %[[ADD]] : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[LOSS:.*]] = frame.mse_loss %[[RELU]], %[[T]] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %[[LOSS]] : tensor<f32>
// CHECK-NOT:     tensor<*xf32>

// -----

// Transpose flags, transpose, scale, sum and several results.
func.func @flags(%a: tensor<4x8xf32>, %b: tensor<4x2xf32>, %c: tensor<3x2xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %0 = frame.matmul %a, %b {transpose_lhs} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<*xf32>
  %1 = frame.matmul %0, %c {transpose_rhs} : (tensor<*xf32>, tensor<3x2xf32>) -> tensor<*xf32>
  %2 = frame.transpose %1 : (tensor<*xf32>) -> tensor<*xf32>
  %3 = frame.scale %2 {factor = 2.0 : f32} : (tensor<*xf32>) -> tensor<*xf32>
  %4 = frame.sum %3 : (tensor<*xf32>) -> tensor<*xf32>
  func.return %1, %3, %4 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// CHECK-LABEL: func.func @flags
// CHECK-SAME:    -> (tensor<8x3xf32>, tensor<3x8xf32>, tensor<f32>) {
// CHECK-NEXT:    %[[M0:.*]] = frame.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
// CHECK-NEXT:    %[[M1:.*]] = frame.matmul %[[M0]], %{{.*}} {transpose_rhs} : (tensor<8x2xf32>, tensor<3x2xf32>) -> tensor<8x3xf32>
// CHECK-NEXT:    %[[TR:.*]] = frame.transpose %[[M1]] : (tensor<8x3xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    %[[SC:.*]] = frame.scale %[[TR]] {factor = 2.000000e+00 : f32} : (tensor<3x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    %[[SUM:.*]] = frame.sum %[[SC]] : (tensor<3x8xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %[[M1]], %[[SC]], %[[SUM]] : tensor<8x3xf32>, tensor<3x8xf32>, tensor<f32>

// -----

// Results that are already ranked and right are checked and left alone.
func.func @already_ranked(%p: tensor<8x1xf32>, %t: tensor<8x1xf32>) -> tensor<f32> {
  %0 = frame.sub %p, %t : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %1 = frame.mse_loss %0, %t : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}

// CHECK-LABEL: func.func @already_ranked
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<8x1xf32>, %[[T:[a-z0-9_]+]]: tensor<8x1xf32>) -> tensor<f32> {
// CHECK-NEXT:    %[[D:.*]] = frame.sub %[[P]], %[[T]] : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
// CHECK-NEXT:    %[[L:.*]] = frame.mse_loss %[[D]], %[[T]] : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %[[L]] : tensor<f32>

// -----

// Ops whose result type is declared rather than inferred (frame.constant,
// frame.broadcast: what frame-autodiff emits) keep it, so the pass can run again
// after autodiff.
func.func @declared_types(%s: tensor<f32>) -> tensor<*xf32> {
  %c = frame.constant 2.0 : tensor<8x1xf32>
  %b = frame.broadcast %s : (tensor<f32>) -> tensor<8x1xf32>
  %m = frame.mul %c, %b : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<*xf32>
  func.return %m : tensor<*xf32>
}

// CHECK-LABEL: func.func @declared_types
// CHECK-SAME:    (%[[S:[a-z0-9_]+]]: tensor<f32>) -> tensor<8x1xf32> {
// CHECK-NEXT:    %[[C:.*]] = frame.constant 2.000000e+00 : tensor<8x1xf32>
// CHECK-NEXT:    %[[B:.*]] = frame.broadcast %[[S]] : (tensor<f32>) -> tensor<8x1xf32>
// CHECK-NEXT:    %[[M:.*]] = frame.mul %[[C]], %[[B]] : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
// CHECK-NEXT:    func.return %[[M]] : tensor<8x1xf32>

// -----

// The verifier cannot see this mismatch (an operand is unranked when parsed);
// shape inference reports it at the op.
func.func @add_mismatch(%x: tensor<8x4xf32>, %y: tensor<4x8xf32>) -> tensor<*xf32> {
  %0 = frame.relu %x : (tensor<8x4xf32>) -> tensor<*xf32>
  // expected-error@+1 {{frame-shape-inference at @add_mismatch: frame.add: operands [8, 4] and [4, 8] do not broadcast}}
  %1 = frame.add %0, %y : (tensor<*xf32>, tensor<4x8xf32>) -> tensor<*xf32>
  func.return %1 : tensor<*xf32>
}


// -----

func.func @matmul_mismatch(%x: tensor<8x4xf32>, %w: tensor<8x4xf32>) -> tensor<*xf32> {
  %0 = frame.neg %x : (tensor<8x4xf32>) -> tensor<*xf32>
  // expected-error@+1 {{frame-shape-inference at @matmul_mismatch: frame.matmul: contraction dimension mismatch: expected rhs dim 4 (the lhs's), found 8}}
  %1 = frame.matmul %0, %w : (tensor<*xf32>, tensor<8x4xf32>) -> tensor<*xf32>
  func.return %1 : tensor<*xf32>
}

// The rule's own message already starts with the op name, which the pass repeats:
// accept both forms.

// -----

// A declared (ranked) result that disagrees with the rule.
func.func @declared_wrong(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %0 = frame.relu %x : (tensor<8x4xf32>) -> tensor<*xf32>
  // expected-error@+1 {{frame-shape-inference at @declared_wrong: frame.neg: result type expected tensor<8x4xf32>, found tensor<4x4xf32>}}
  %1 = frame.neg %0 : (tensor<*xf32>) -> tensor<4x4xf32>
  func.return %1 : tensor<4x4xf32>
}


// -----

// Function arguments must be statically shaped.
func.func @unranked_arg(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error@+1 {{frame-shape-inference at @unranked_arg: frame.relu: an operand has no static shape}}
  %0 = frame.relu %x : (tensor<*xf32>) -> tensor<*xf32>
  func.return %0 : tensor<*xf32>
}

