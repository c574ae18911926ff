// RUN: frame-opt %s --split-input-file --verify-diagnostics -p 'frame-sgd-fuse{lr=0.05}' | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-sgd-fuse | filecheck %s --check-prefix=DEFAULT
// RUN: not frame-opt %s --split-input-file -p 'frame-sgd-fuse{lr=-1.0}' 2>&1 | filecheck %s --check-prefix=LR
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p 'frame-sgd-fuse{lr=1e-3}' | filecheck %s --check-prefix=EXP
// RUN: not frame-opt %s --split-input-file -p 'frame-sgd-fuse{lr=fast}' 2>&1 | filecheck %s --check-prefix=WORD
// RUN: not frame-opt %s --split-input-file -p 'frame-sgd-fuse{lr=1.0e-50}' 2>&1 | filecheck %s --check-prefix=LR-F32

// DEFAULT-LABEL: func.func @lin_train_step
// DEFAULT:       frame.sgd_update %{{.*}}, %{{.*}} {frame.layer = "{{.*}}", frame.stage = "update", lr = 1.000000e-02 : f32}

// LR-NOT: Traceback
// A rate in exponent notation without a decimal point (xDSL reads it as a word).
// EXP:    frame.sgd_update %{{.*}}, %{{.*}} {frame.layer = "{{.*}}", frame.stage = "update", lr = 1.000000e-03 : f32}
// WORD:   frame-opt: error: frame-sgd-fuse: learning rate expected a number, found 'fast'
// A rate that rounds to 0 in float32 would train nothing.
// LR-F32: frame-opt: error: frame-sgd-fuse: learning rate expected > 0 and finite in float32 (1.4e-45 .. 3.4e38), found 1e-50
// LR:     frame-opt: error: frame-sgd-fuse: learning rate expected > 0 and finite in float32 (1.4e-45 .. 3.4e38), found -1.0

// @lin_grad as frame-autodiff makes it (with a second parameter, the bias %b).
func.func @lin(%x: tensor<8x4xf32>, %w: tensor<4x1xf32> {frame.param = "w"}, %b: tensor<8x1xf32> {frame.param = "b"}, %t: tensor<8x1xf32>) -> tensor<f32> {
  %0 = frame.matmul %x, %w : (tensor<8x4xf32>, tensor<4x1xf32>) -> tensor<8x1xf32>
  %1 = frame.add %0, %b : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %2 = frame.mse_loss %1, %t : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  func.return %2 : tensor<f32>
}
func.func @lin_grad(%x: tensor<8x4xf32>, %w: tensor<4x1xf32> {frame.param = "w"}, %b: tensor<8x1xf32> {frame.param = "b"}, %t: tensor<8x1xf32>) -> (tensor<f32>, tensor<4x1xf32>, tensor<8x1xf32>) attributes {frame.grad_of = "lin"} {
  %0 = frame.matmul %x, %w : (tensor<8x4xf32>, tensor<4x1xf32>) -> tensor<8x1xf32>
  %1 = frame.add %0, %b : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %2 = frame.mse_loss %1, %t : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  %3 = frame.constant 1.0 : tensor<f32>
  %4 = frame.mse_loss_grad %1, %t, %3 : (tensor<8x1xf32>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %5 = frame.matmul %x, %4 {transpose_lhs} : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<4x1xf32>
  func.return %2, %5, %4 : tensor<f32>, tensor<4x1xf32>, tensor<8x1xf32>
}

// Functions that are not gradient functions are left alone.
// CHECK-LABEL: func.func @lin(
// CHECK-NOT:     frame.sgd_update
// CHECK:         func.return

// The gradient function becomes the train step: renamed, marked, and each
// parameter argument donated to the result that holds its new value.
// CHECK-LABEL: func.func @lin_train_step
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<8x4xf32>,
// CHECK-SAME:    %[[W:[a-z0-9_]+]]: tensor<4x1xf32> {frame.param = "w", frame.aliasing_output = 1 : i64},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: tensor<8x1xf32> {frame.param = "b", frame.aliasing_output = 2 : i64},
// CHECK-SAME:    %[[T:[a-z0-9_]+]]: tensor<8x1xf32>)
// CHECK-SAME:    -> (tensor<f32>, tensor<4x1xf32>, tensor<8x1xf32>) attributes {frame.train_step = "lin"} {
// CHECK:         %[[LOSS:.*]] = frame.mse_loss
// CHECK:         %[[GB:.*]] = frame.mse_loss_grad
// CHECK-NEXT:    %[[GW:.*]] = frame.matmul %[[X]], %[[GB]] {transpose_lhs}
// One update per parameter, after every gradient is computed.
// Each update names its parameter and the pipeline stage (provenance for later stages).
// CHECK-NEXT:    %[[NW:.*]] = frame.sgd_update %[[W]], %[[GW]] {frame.layer = "w", frame.stage = "update", lr = 5.000000e-02 : f32} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[NB:.*]] = frame.sgd_update %[[B]], %[[GB]] {frame.layer = "b", frame.stage = "update", lr = 5.000000e-02 : f32} : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
// CHECK-NEXT:    func.return %[[LOSS]], %[[NW]], %[[NB]] : tensor<f32>, tensor<4x1xf32>, tensor<8x1xf32>
// CHECK-NOT:     frame.grad_of
// CHECK-NOT:     @lin_grad

// -----

// The results must be the loss and one gradient per parameter.
func.func @short_grad(%w: tensor<4xf32> {frame.param = "w"}, %v: tensor<4xf32> {frame.param = "v"}) -> (tensor<f32>, tensor<4xf32>) attributes {frame.grad_of = "short"} {
  %0 = frame.sum %w : (tensor<4xf32>) -> tensor<f32>
  // expected-error@+1 {{frame-sgd-fuse at @short_grad: func.return: expected 3 results (loss and one gradient per parameter), found 2}}
  func.return %0, %w : tensor<f32>, tensor<4xf32>
}


// -----

// A declaration carrying frame.grad_of has no body to fuse into.
// expected-error@+1 {{frame-sgd-fuse at @decl_grad: expected a gradient function with a body, found a declaration}}
func.func private @decl_grad(tensor<4xf32> {frame.param = "x"}) -> (tensor<f32>, tensor<4xf32>) attributes {frame.grad_of = "decl"}

