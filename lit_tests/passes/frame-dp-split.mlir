// RUN: frame-opt %s --split-input-file --verify-diagnostics -p 'frame-dp-split{lr=0.05 ranks=2}' | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p 'frame-dp-split{lr=0.05 ranks=3}' | filecheck %s --check-prefix=THREE
// RUN: not frame-opt %s --split-input-file -p 'frame-dp-split{lr=0.05 ranks=0}' 2>&1 | filecheck %s --check-prefix=RANKS
// RUN: not frame-opt %s --split-input-file -p 'frame-dp-split{lr=-1.0 ranks=2}' 2>&1 | filecheck %s --check-prefix=LR

// RANKS-NOT: Traceback
// RANKS: frame-opt: error: frame-dp-split: ranks expected an integer >= 1, found 0
// LR:    frame-opt: error: frame-dp-split: learning rate expected > 0 and finite in float32 (1.4e-45 .. 3.4e38), found -1.0

// @lin_grad as frame-autodiff makes it: a weight %w (replicated on every rank) and a
// per-sample bias %b (row i serves sample i only: each rank holds its own rows).
func.func @lin_grad(%x: tensor<8x4xf32>, %w: tensor<4x2xf32> {frame.param = "w"}, %b: tensor<8x2xf32> {frame.param = "b", frame.per_sample}, %t: tensor<8x2xf32>) -> (tensor<f32>, tensor<4x2xf32>, tensor<8x2xf32>) attributes {frame.grad_of = "lin"} {
  %0 = frame.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %1 = frame.add %0, %b : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %2 = frame.mse_loss %1, %t : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<f32>
  %3 = frame.constant 1.0 : tensor<f32>
  %4 = frame.mse_loss_grad %1, %t, %3 : (tensor<8x2xf32>, tensor<8x2xf32>, tensor<f32>) -> tensor<8x2xf32>
  %5 = frame.matmul %x, %4 {transpose_lhs} : (tensor<8x4xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  func.return %2, %5, %4 : tensor<f32>, tensor<4x2xf32>, tensor<8x2xf32>
}

// Forward and backward: @lin_grad's body and results, renamed and marked. The loss and
// the weight's gradient are exchanged (the host lays them out in one flat buffer, the
// ranks sum it with one allreduce); the per-sample bias's gradient stays on the rank.
// CHECK-LABEL: func.func @lin_dp_grad
// CHECK-SAME:    %{{.*}}: tensor<4x2xf32> {frame.param = "w"}, %{{.*}}: tensor<8x2xf32> {frame.param = "b", frame.per_sample}
// CHECK-SAME:    -> (tensor<f32>, tensor<4x2xf32>, tensor<8x2xf32>) attributes {frame.dp_grad = "lin", frame.dp_ranks = 2 : i64, frame.dp_exchange = array<i64: 1, 1, 0>} {
// CHECK:         %[[LOSS:.*]] = frame.mse_loss
// CHECK:         %[[GB:.*]] = frame.mse_loss_grad
// CHECK-NEXT:    %[[GW:.*]] = frame.matmul {{.*}}, %[[GB]] {transpose_lhs}
// CHECK-NEXT:    func.return %[[LOSS]], %[[GW]], %[[GB]] : tensor<f32>, tensor<4x2xf32>, tensor<8x2xf32>

// The update: each parameter from its gradient, in place, at lr / ranks (the
// allreduce sums the ranks' gradients of their mean losses).
// CHECK-LABEL: func.func @lin_dp_update
// CHECK-SAME:    (%[[W:[a-z0-9_]+]]: tensor<4x2xf32> {frame.param = "w", frame.aliasing_output = 0 : i64},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: tensor<8x2xf32> {frame.param = "b", frame.aliasing_output = 1 : i64},
// CHECK-SAME:    %[[WG:w_grad]]: tensor<4x2xf32>, %[[BG:b_grad]]: tensor<8x2xf32>)
// CHECK-SAME:    -> (tensor<4x2xf32>, tensor<8x2xf32>) attributes {frame.dp_update = "lin", frame.dp_ranks = 2 : i64} {
// CHECK-NEXT:    %[[NW:.*]] = frame.sgd_update %[[W]], %[[WG]] {frame.layer = "w", frame.stage = "update", lr = 2.500000e-02 : f32}
// CHECK-NEXT:    %[[NB:.*]] = frame.sgd_update %[[B]], %[[BG]] {frame.layer = "b", frame.stage = "update", lr = 2.500000e-02 : f32}
// CHECK-NEXT:    func.return %[[NW]], %[[NB]] : tensor<4x2xf32>, tensor<8x2xf32>
// CHECK-NOT:     frame.grad_of
// CHECK-NOT:     @lin_grad

// THREE: lr = 0.0166666675 : f32

// -----

// Only replicated parameters: every result is exchanged.
func.func @w_grad(%x: tensor<8x4xf32>, %w: tensor<4x1xf32> {frame.param = "w"}, %t: tensor<8x1xf32>) -> (tensor<f32>, tensor<4x1xf32>) attributes {frame.grad_of = "w"} {
  %0 = frame.matmul %x, %w : (tensor<8x4xf32>, tensor<4x1xf32>) -> tensor<8x1xf32>
  %1 = frame.mse_loss %0, %t : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  %2 = frame.constant 1.0 : tensor<f32>
  %3 = frame.mse_loss_grad %0, %t, %2 : (tensor<8x1xf32>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %4 = frame.matmul %x, %3 {transpose_lhs} : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<4x1xf32>
  func.return %1, %4 : tensor<f32>, tensor<4x1xf32>
}

// CHECK-LABEL: func.func @w_dp_grad
// CHECK-SAME:    frame.dp_exchange = array<i64: 1, 1>
// CHECK-LABEL: func.func @w_dp_update
// CHECK-SAME:    %{{.*}}: tensor<4x1xf32> {frame.param = "w", frame.aliasing_output = 0 : i64}, %w_grad: tensor<4x1xf32>) -> tensor<4x1xf32>

// -----

// A gradient function whose results are not one per parameter.
func.func @bad_grad(%x: tensor<4xf32>, %w: tensor<4xf32> {frame.param = "w"}) -> tensor<f32> attributes {frame.grad_of = "bad"} {
  %0 = frame.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = frame.sum %0 : (tensor<4xf32>) -> tensor<f32>
  // expected-error@below {{frame-dp-split at @bad_grad: func.return: expected 2 results (loss and one gradient per parameter), found 1}}
  func.return %1 : tensor<f32>
}
