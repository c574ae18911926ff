// Round trip of every frame op in its custom syntax, and through the generic form.
// RUN: frame-opt %s | filecheck %s
// RUN: frame-opt %s --print-op-generic | frame-opt | filecheck %s
// RUN: frame-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @ops(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %m: tensor<8x4xf32>, %s: tensor<f32>) -> tensor<f32> {
  %add = frame.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sub = frame.sub %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %mul = frame.mul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %neg = frame.neg %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %scale = frame.scale %a {factor = 2.5 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %relu = frame.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %rg = frame.relu_grad %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %tr = frame.transpose %a : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %mm = frame.matmul %a, %m : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %mml = frame.matmul %a, %b {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %mmr = frame.matmul %a, %b {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %mmb = frame.matmul %m, %a {transpose_lhs, transpose_rhs} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %sum = frame.sum %a : (tensor<4x8xf32>) -> tensor<f32>
  %bc = frame.broadcast %s : (tensor<f32>) -> tensor<4x8xf32>
  %mse = frame.mse_loss %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  %mseg = frame.mse_loss_grad %a, %b, %s : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %one = frame.constant 1.0 : tensor<f32>
  %half = frame.constant -0.5 : tensor<4x8xf32>
  %three = frame.constant 3 {tag = "int literal"} : tensor<2xf32>
  %sgd = frame.sgd_update %a, %b {lr = 0.05 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %upd = frame.update %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %mse : tensor<f32>
}

// CHECK-LABEL: func.func @ops
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4x8xf32>, %[[B:[a-z0-9_]+]]: tensor<4x8xf32>, %[[M:[a-z0-9_]+]]: tensor<8x4xf32>, %[[S:[a-z0-9_]+]]: tensor<f32>) -> tensor<f32>
// CHECK-NEXT:  %{{.*}} = frame.add %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.sub %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.mul %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.neg %[[A]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.scale %[[A]] {factor = 2.500000e+00 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.relu %[[A]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.relu_grad %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.transpose %[[A]] : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:  %{{.*}} = frame.matmul %[[A]], %[[M]] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:  %{{.*}} = frame.matmul %[[A]], %[[B]] {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.matmul %[[A]], %[[B]] {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:  %{{.*}} = frame.matmul %[[M]], %[[A]] {transpose_lhs, transpose_rhs} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:  %{{.*}} = frame.sum %[[A]] : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-NEXT:  %{{.*}} = frame.broadcast %[[S]] : (tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %[[MSE:.*]] = frame.mse_loss %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
// CHECK-NEXT:  %{{.*}} = frame.mse_loss_grad %[[A]], %[[B]], %[[S]] : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.constant 1.000000e+00 : tensor<f32>
// CHECK-NEXT:  %{{.*}} = frame.constant -5.000000e-01 : tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.constant 3.000000e+00 {tag = "int literal"} : tensor<2xf32>
// CHECK-NEXT:  %{{.*}} = frame.sgd_update %[[A]], %[[B]] {lr = 5.000000e-02 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %{{.*}} = frame.update %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  func.return %[[MSE]] : tensor<f32>

// GENERIC-LABEL: "func.func"() <{sym_name = "ops"
// GENERIC:       "frame.add"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC:       "frame.scale"(%{{.*}}) <{factor = 2.500000e+00 : f32}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC:       "frame.matmul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// GENERIC-NEXT:  "frame.matmul"(%{{.*}}, %{{.*}}) <{transpose_lhs}> :
// GENERIC-NEXT:  "frame.matmul"(%{{.*}}, %{{.*}}) <{transpose_rhs}> :
// GENERIC-NEXT:  "frame.matmul"(%{{.*}}, %{{.*}}) <{transpose_lhs, transpose_rhs}> :
// GENERIC:       "frame.mse_loss_grad"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// GENERIC-NEXT:  "frame.constant"() <{value = 1.000000e+00 : f32}> : () -> tensor<f32>
// GENERIC-NEXT:  "frame.constant"() <{value = -5.000000e-01 : f32}> : () -> tensor<4x8xf32>
// GENERIC-NEXT:  "frame.constant"() <{value = 3.000000e+00 : f32}> {tag = "int literal"} : () -> tensor<2xf32>
// GENERIC-NEXT:  "frame.sgd_update"(%{{.*}}, %{{.*}}) <{lr = 5.000000e-02 : f32}> :
// GENERIC-NEXT:  "frame.update"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>

// Unranked results (what a frontend writes before frame-shape-inference) print and parse too.
func.func @unranked(%a: tensor<4x8xf32>, %u: tensor<*xf32>) -> tensor<*xf32> {
  %r = frame.relu %u : (tensor<*xf32>) -> tensor<*xf32>
  %s = frame.add %r, %a : (tensor<*xf32>, tensor<4x8xf32>) -> tensor<*xf32>
  %m = frame.matmul %a, %s {transpose_lhs} : (tensor<4x8xf32>, tensor<*xf32>) -> tensor<*xf32>
  func.return %m : tensor<*xf32>
}

// CHECK-LABEL: func.func @unranked
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4x8xf32>, %[[U:[a-z0-9_]+]]: tensor<*xf32>) -> tensor<*xf32>
// CHECK-NEXT:  %[[R:.*]] = frame.relu %[[U]] : (tensor<*xf32>) -> tensor<*xf32>
// CHECK-NEXT:  %[[S:.*]] = frame.add %[[R]], %[[A]] : (tensor<*xf32>, tensor<4x8xf32>) -> tensor<*xf32>
// CHECK-NEXT:  %[[M:.*]] = frame.matmul %[[A]], %[[S]] {transpose_lhs} : (tensor<4x8xf32>, tensor<*xf32>) -> tensor<*xf32>
// CHECK-NEXT:  func.return %[[M]] : tensor<*xf32>

// The ops added for the Python API: sigmoid, reshape, the spike function and its
// surrogate gradient, sums and broadcasts over chosen axes.
func.func @api_ops(%x: tensor<2x3x4xf32>, %dy: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %sig = frame.sigmoid %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %spike = frame.heaviside_surrogate %x {alpha = 2.000000e+00 : f32} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %sg = frame.heaviside_surrogate_grad %x, %dy {alpha = 2.000000e+00 : f32} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %rows = frame.sum %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %back = frame.broadcast %rows {axes = array<i64: 0, 2>} : (tensor<3xf32>) -> tensor<2x3x4xf32>
  %flat = frame.reshape %sig : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  func.return %flat : tensor<2x12xf32>
}

// CHECK-LABEL: func.func @api_ops(
// CHECK:         %{{.*}} = frame.sigmoid %{{.*}} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.heaviside_surrogate %{{.*}} {alpha = 2.000000e+00 : f32} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.heaviside_surrogate_grad %{{.*}}, %{{.*}} {alpha = 2.000000e+00 : f32} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.sum %{{.*}} {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %{{.*}} = frame.broadcast %{{.*}} {axes = array<i64: 0, 2>} : (tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.reshape %{{.*}} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "api_ops"
// GENERIC:       "frame.reshape"

// Convolution and its two gradients (1-d and 2-d share the ops: NC* layout).
func.func @conv_ops(%x: tensor<1x2x5x5xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x2x5x5xf32> {
  %y = frame.conv %x, %w {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x5xf32>
  %dx = frame.conv_grad_input %y, %w {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x3x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x2x5x5xf32>
  %dw = frame.conv_grad_weight %x, %y {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<1x4x3x5xf32>) -> tensor<4x1x3x3xf32>
  func.return %dx : tensor<1x2x5x5xf32>
}

// CHECK-LABEL: func.func @conv_ops(
// CHECK:         frame.conv %{{.*}}, %{{.*}} {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x5xf32>
// CHECK-NEXT:    frame.conv_grad_input
// CHECK-NEXT:    frame.conv_grad_weight

// Pooling and its gradients.
func.func @pool_ops(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32> {
  %m = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  %a = frame.avg_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 2>, padding = array<i64: 1, 0>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x2xf32>
  %dm = frame.max_pool_grad %x, %m, %m {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  %da = frame.avg_pool_grad %a {kernel = array<i64: 3, 3>, stride = array<i64: 1, 2>, padding = array<i64: 1, 0>} : (tensor<1x2x5x2xf32>) -> tensor<1x2x5x5xf32>
  func.return %dm : tensor<1x2x5x5xf32>
}

// CHECK-LABEL: func.func @pool_ops(
// CHECK:         frame.max_pool %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    frame.avg_pool
// CHECK-NEXT:    frame.max_pool_grad
// CHECK-NEXT:    frame.avg_pool_grad

// The selective scan and its gradient.
func.func @scan_ops(%x: tensor<2x5xf32>, %a: tensor<2x5xf32>, %b: tensor<2x5xf32>, %c: tensor<2x5xf32>, %d: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %y = frame.selective_scan %x, %a, %b, %c, %d : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %ga = frame.selective_scan_grad %x, %a, %b, %c, %d, %y {wrt = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %ga : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @scan_ops(
// CHECK:         frame.selective_scan %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x5xf32>
// CHECK-NEXT:    frame.selective_scan_grad %{{.*}} {wrt = 1 : i64}

// scatter_add and its VJP, with integer indices.
func.func @indexed_ops(%u: tensor<3x2xf32>, %i: tensor<3xi64>) -> tensor<3x2xf32> {
  %o = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
  %g = frame.gather_rows %o, %i : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  func.return %g : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @indexed_ops(
// CHECK:         frame.scatter_add %{{.*}}, %{{.*}} : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
// CHECK-NEXT:    frame.gather_rows %{{.*}}, %{{.*}} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>

// A batched matmul: equal leading dims, the flags transpose the last two.
func.func @batched_matmul(%q: tensor<2x3x5x8xf32>, %k: tensor<2x3x6x8xf32>) -> tensor<2x3x5x6xf32> {
  %0 = frame.matmul %q, %k {transpose_rhs} : (tensor<2x3x5x8xf32>, tensor<2x3x6x8xf32>) -> tensor<2x3x5x6xf32>
  func.return %0 : tensor<2x3x5x6xf32>
}

// CHECK-LABEL: func.func @batched_matmul(
// CHECK:         frame.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x3x5x8xf32>, tensor<2x3x6x8xf32>) -> tensor<2x3x5x6xf32>
