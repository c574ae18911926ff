// RUN: frame-opt %s --split-input-file --verify-diagnostics -p convert-frame-to-linalg | filecheck %s

// C[i,j] += A[i,k] * B[k,j] iterates (i, k, j): the innermost loop walks rows of
// B and C. The accumulator is a zero-filled tensor.empty.
func.func @matmul(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = frame.matmul %a, %b : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  func.return %0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<8x4xf32>, %[[B:[a-z0-9_]+]]: tensor<4x16xf32>)
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[EMPTY:.*]] = tensor.empty() : tensor<8x16xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[C:.*]] = linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>]
// CHECK-SAME:      iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-SAME:      doc = "frame.matmul"}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<8x4xf32>, tensor<4x16xf32>) outs(%[[INIT]] : tensor<8x16xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = math.fma %[[X]], %[[Y]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<8x16xf32>
// CHECK-NEXT:    func.return %[[C]] : tensor<8x16xf32>

// -----

// A transposed lhs (C[i,j] += A[k,i] * B[k,j]) also iterates (i, k, j): only
// the lhs map changes, the innermost loop still walks rows of B and C.
func.func @matmul_transpose_lhs(%a: tensor<4x8xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = frame.matmul %a, %b {transpose_lhs} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  func.return %0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_lhs
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4x8xf32>, %[[B:[a-z0-9_]+]]: tensor<4x16xf32>)
// CHECK:         %[[INIT:.*]] = linalg.fill
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>]
// CHECK-SAME:      iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x16xf32>) outs(%[[INIT]] : tensor<8x16xf32>)

// -----

// A transposed rhs (C[i,j] += A[i,k] * B[j,k]) iterates (i, j, k): a dot
// product of two rows.
func.func @matmul_transpose_rhs(%a: tensor<8x4xf32>, %b: tensor<16x4xf32>) -> tensor<8x16xf32> {
  %0 = frame.matmul %a, %b {transpose_rhs} : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  func.return %0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_rhs
// CHECK:         linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction"]

// -----

// A batched matmul: one parallel loop per batch dim, then the product's own loops.
func.func @bmm(%q: tensor<2x3x5x8xf32>, %k: tensor<2x3x6x8xf32>) -> tensor<2x3x5x6xf32> {
  %0 = frame.matmul %q, %k {transpose_rhs} : (tensor<2x3x5x8xf32>, tensor<2x3x6x8xf32>) -> tensor<2x3x5x6xf32>
  func.return %0 : tensor<2x3x5x6xf32>
}

// CHECK-LABEL: func.func @bmm
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"], doc = "frame.matmul"}
// CHECK:           math.fma

// -----

// Elementwise ops: identity maps, all-parallel, destination is a fresh tensor.empty.
func.func @add_relu(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = frame.add %a, %b : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = frame.relu %0 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %1 : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @add_relu
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<8x4xf32>, %[[B:[a-z0-9_]+]]: tensor<8x4xf32>)
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      doc = "frame.add"}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<8x4xf32>, tensor<8x4xf32>) outs(%[[E0]] : tensor<8x4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<8x4xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      doc = "frame.relu"}
// CHECK-SAME:      ins(%[[SUM]] : tensor<8x4xf32>) outs(%[[E1]] : tensor<8x4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// relu clamps x < 0 only, as PyTorch's does: NaN and -0.0 pass (`olt` is false).
// CHECK-NEXT:      %[[LT:.*]] = arith.cmpf olt, %[[V]], %[[Z]] : f32
// CHECK-NEXT:      %[[M:.*]] = arith.select %[[LT]], %[[Z]], %[[V]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK-NEXT:    } -> tensor<8x4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<8x4xf32>

// -----

// mse_loss: a full reduction of (p - t)^2 into a zero-filled 0-d tensor, then
// a division by N = 16.
func.func @mse(%p: tensor<8x2xf32>, %t: tensor<8x2xf32>) -> tensor<f32> {
  %0 = frame.mse_loss %p, %t : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @mse
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<8x2xf32>, %[[T:[a-z0-9_]+]]: tensor<8x2xf32>)
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<f32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E0]] : tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    %[[TOTAL:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]
// CHECK-SAME:      doc = "frame.mse_loss"}
// CHECK-SAME:      ins(%[[P]], %[[T]] : tensor<8x2xf32>, tensor<8x2xf32>) outs(%[[INIT]] : tensor<f32>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<f32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<f32>
// CHECK-NEXT:    %[[MEAN:.*]] = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []
// CHECK-SAME:      doc = "frame.mse_loss"}
// CHECK-SAME:      ins(%[[TOTAL]] : tensor<f32>) outs(%[[E1]] : tensor<f32>) {
// CHECK-NEXT:    ^{{.*}}(%[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.constant 1.600000e+01 : f32
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[S]], %[[N]] : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
// CHECK-NEXT:    } -> tensor<f32>
// CHECK-NEXT:    func.return %[[MEAN]] : tensor<f32>

// -----

// mse_loss_grad reads the 0-d dloss through a constant map; frame.constant is a fill.
func.func @mse_grad(%p: tensor<8x2xf32>, %t: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %one = frame.constant 1.0 : tensor<f32>
  %0 = frame.mse_loss_grad %p, %t, %one : (tensor<8x2xf32>, tensor<8x2xf32>, tensor<f32>) -> tensor<8x2xf32>
  func.return %0 : tensor<8x2xf32>
}

// CHECK-LABEL: func.func @mse_grad
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<8x2xf32>, %[[T:[a-z0-9_]+]]: tensor<8x2xf32>)
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<f32>
// CHECK-NEXT:    %[[ONE:.*]] = linalg.fill ins(%[[C1]] : f32) outs(%[[E0]] : tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<8x2xf32>
// CHECK-NEXT:    %[[G:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      doc = "frame.mse_loss_grad"}
// CHECK-SAME:      ins(%[[P]], %[[T]], %[[ONE]] : tensor<8x2xf32>, tensor<8x2xf32>, tensor<f32>) outs(%[[E1]] : tensor<8x2xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[DL:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[X]], %[[Y]] : f32
// 2 / N with N = 16.
// CHECK-NEXT:      %[[NORM:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:      %[[SC:.*]] = arith.mulf %[[NORM]], %[[D]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.mulf %[[SC]], %[[DL]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK-NEXT:    } -> tensor<8x2xf32>
// CHECK-NEXT:    func.return %[[G]] : tensor<8x2xf32>

// -----

// sgd_update writes into the parameter itself: the parameter is the `outs`
// operand (no tensor.empty), so bufferization can update it in place.
func.func @sgd(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = frame.sgd_update %w, %g {lr = 0.25 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @sgd
// CHECK-SAME:    (%[[W:[a-z0-9_]+]]: tensor<4x8xf32>, %[[G:[a-z0-9_]+]]: tensor<4x8xf32>)
// CHECK-NOT:     tensor.empty
// CHECK-NEXT:    %[[NEW:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      doc = "frame.sgd_update"}
// CHECK-SAME:      ins(%[[G]] : tensor<4x8xf32>) outs(%[[W]] : tensor<4x8xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[GV:.*]]: f32, %[[WV:.*]]: f32):
// CHECK-NEXT:      %[[NLR:.*]] = arith.constant -2.500000e-01 : f32
// CHECK-NEXT:      %[[STEP:.*]] = arith.mulf %[[GV]], %[[NLR]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.addf %[[WV]], %[[STEP]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK-NEXT:    } -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[NEW]] : tensor<4x8xf32>

// -----

// update is a copy of the value into the destination: the destination is the `outs`
// operand (as sgd_update's parameter), and the body never reads it.
func.func @update(%p: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = frame.update %p, %v : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @update
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<4x8xf32>, %[[V:[a-z0-9_]+]]: tensor<4x8xf32>)
// CHECK-NOT:     tensor.empty
// CHECK-NEXT:    %[[NEW:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      doc = "frame.update"}
// CHECK-SAME:      ins(%[[V]] : tensor<4x8xf32>) outs(%[[P]] : tensor<4x8xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[VV:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[VV]] : f32
// CHECK-NEXT:    } -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[NEW]] : tensor<4x8xf32>

// -----

func.func @unranked(%a: tensor<8x4xf32>) -> tensor<*xf32> {
  // expected-error@+1 {{convert-frame-to-linalg at @unranked: frame.relu: expected static shapes (run frame-shape-inference first)}}
  %0 = frame.relu %a : (tensor<8x4xf32>) -> tensor<*xf32>
  func.return %0 : tensor<*xf32>
}


// -----

// A padded, grouped 1-d conv: a zero-padding copy, then one generic over
// (n, o, c, k, out) reading the input at out * stride + k of channel group o / 2.
func.func @conv1d(%x: tensor<1x4x5xf32>, %w: tensor<4x2x3xf32>) -> tensor<1x4x3xf32> {
  %y = frame.conv %x, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x5xf32>, tensor<4x2x3xf32>) -> tensor<1x4x3xf32>
  func.return %y : tensor<1x4x3xf32>
}

// CHECK-LABEL: func.func @conv1d(
// CHECK:         %[[PAD:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, (d2 + 1))>]
// CHECK-SAME:      ins(%{{.*}} : tensor<1x4x5xf32>) outs(%{{.*}} : tensor<1x4x7xf32>)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, (((d1 floordiv 2) * 2) + d2), ((d4 * 2) + d3))>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"]
// CHECK-SAME:      ins(%[[PAD]], %{{.*}} : tensor<1x4x7xf32>, tensor<4x2x3xf32>)
// CHECK:           math.fma

// -----

// max_pool: PyTorch's scan. A cell replaces the running max when it is greater or
// NaN, so NaN wins and the first of tied maxima (-0.0 before +0.0) stays. A window
// of at most 16 cells at a stride of 2 or more is one generic over the outputs with
// a cell per operand (x read at (2 oh + kh, 2 ow + kw)), scanned row-major from -inf
// in registers: the output is written once and never read.
func.func @max_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  func.return %0 : tensor<1x1x2x2xf32>
}

// CHECK-LABEL: func.func @max_pool
// CHECK-SAME:    (%[[XIN:.*]]: tensor<1x1x4x4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<1x1x2x2xf32>
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 * 2), (d3 * 2))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 * 2), ((d3 * 2) + 1))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, ((d2 * 2) + 1), (d3 * 2))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, ((d2 * 2) + 1), ((d3 * 2) + 1))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel"], doc = "frame.max_pool"}
// CHECK-SAME:      ins(%[[XIN]], %[[XIN]], %[[XIN]], %[[XIN]] : {{.*}}) outs(%[[E]] : tensor<1x1x2x2xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[X0:.*]]: f32, %[[X1:.*]]: f32, %[[X2:.*]]: f32, %[[X3:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[X0]], %[[NEG]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[X0]], %[[X0]] : f32
// CHECK-NEXT:      %[[TAKE:.*]] = arith.ori %[[GT]], %[[NAN]] : i1
// CHECK-NEXT:      %[[M0:.*]] = arith.select %[[TAKE]], %[[X0]], %[[NEG]] : f32
// CHECK-NEXT:      %[[GT1:.*]] = arith.cmpf ogt, %[[X1]], %[[M0]] : f32
// CHECK-NEXT:      %[[NAN1:.*]] = arith.cmpf uno, %[[X1]], %[[X1]] : f32
// CHECK-NEXT:      %[[TAKE1:.*]] = arith.ori %[[GT1]], %[[NAN1]] : i1
// CHECK-NEXT:      %[[M1:.*]] = arith.select %[[TAKE1]], %[[X1]], %[[M0]] : f32
// CHECK:           %[[M3:.*]] = arith.select %{{.*}}, %[[X3]], %{{.*}} : f32
// CHECK-NEXT:      linalg.yield %[[M3]] : f32

// -----

// A stride-1 max_pool keeps the loops (n, c, oh, kh, kw, ow) (its k = 0 cell would
// read x at a bare dim, bounding the output's loop by the input's longer dim): each
// window is still scanned row-major, the innermost loop walks a row of outputs, and
// the running max is the output.
func.func @max_pool_stride1(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  %0 = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return %0 : tensor<1x1x3x3xf32>
}

// CHECK-LABEL: func.func @max_pool_stride1
// CHECK:         %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%[[NEG]] : f32)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d5 + d4))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"], doc = "frame.max_pool"}
// CHECK-SAME:      outs(%[[INIT]] : tensor<1x1x3x3xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %{{.*}}: f32, %[[RMAX:.*]]: f32):
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[RMAX]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK-NEXT:      %[[TAKE:.*]] = arith.ori %[[GT]], %[[NAN]] : i1
// CHECK-NEXT:      %[[M:.*]] = arith.select %[[TAKE]], %[[X]], %[[RMAX]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32

// -----

// max_pool_grad with padding: the input padded with -inf; a scan records per window
// the row-major position of the argmax as PyTorch does (initially -1; the first
// cell past the left padding if nothing beats -inf); a second generic adds dy at
// that position (dx + (hit ? dy : -0.0): -0.0 adds nothing, and a store of
// select(hit, dx + dy, dx) would be a masked store on AVX2); the padding is cropped
// off. The scan is one generic over the
// outputs, a window cell per operand, kept in registers; a cell before the left
// padding's end (kh = 0 or kw = 0 here: 2 o + 0 >= 1 iff o >= 1) counts as inside
// only where its output index says so. The scatter loops over (n, c, oh, kh, kw, ow);
// the windows do not overlap, so it writes each cell once: all its loops are
// parallel.
func.func @max_pool_grad(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x3x3xf32>, %dy: tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32> {
  %0 = frame.max_pool_grad %x, %y, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32>
  func.return %0 : tensor<1x1x4x4xf32>
}

// The padded x: -inf strips, top and bottom rows in one generic (u = d2 picks the
// strip: row d3 + u * 5), left and right columns in another, then the copy of x.
// CHECK-LABEL: func.func @max_pool_grad
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x1x6x6xf32>
// CHECK:         %[[ROWS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, (d3 + (d2 * 5)), d4)>]
// CHECK-SAME:      ins(%{{.*}} : tensor<2x1xf32>) outs(%[[E]] : tensor<1x1x6x6xf32>)
// CHECK:           arith.constant 0xff800000 : f32
// CHECK:         %[[COLS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, (d4 + (d3 * 5)))>]
// CHECK-SAME:      ins(%{{.*}} : tensor<2x1xf32>) outs(%[[ROWS]] : tensor<1x1x6x6xf32>)
// CHECK:           arith.constant 0xff800000 : f32
// CHECK:         %[[XP:.*]] = linalg.generic
// CHECK-SAME:      ins(%{{.*}} : tensor<1x1x4x4xf32>) outs(%[[COLS]] : tensor<1x1x6x6xf32>)
// CHECK-NOT:     arith.constant 1.000000e+00 : f32
// CHECK:         %[[ARG:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 * 2), (d3 * 2))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 * 2), ((d3 * 2) + 1))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, ((d2 * 2) + 1), (d3 * 2))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, ((d2 * 2) + 1), ((d3 * 2) + 1))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME:      ins(%[[XP]], %[[XP]], %[[XP]], %[[XP]] : {{.*}}) outs(%{{.*}} : tensor<1x1x3x3xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[X0:.*]]: f32, %[[X1:.*]]: f32, %[[X2:.*]]: f32, %[[X3:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %[[MINUS1:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[X0]], %[[NEG]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[X0]], %[[X0]] : f32
// CHECK-NEXT:      %[[BEATS:.*]] = arith.ori %[[GT]], %[[NAN]] : i1
// CHECK-NEXT:      %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[UNSET:.*]] = arith.cmpf olt, %[[MINUS1]], %{{.*}} : f32
// CHECK-NEXT:      %[[OH:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[HIN:.*]] = arith.cmpi sge, %[[OH]], %[[ONE]] : index
// CHECK-NEXT:      %[[U1:.*]] = arith.andi %[[UNSET]], %[[HIN]] : i1
// CHECK-NEXT:      %[[OW:.*]] = linalg.index 3 : index
// CHECK-NEXT:      %[[ONE2:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[WIN:.*]] = arith.cmpi sge, %[[OW]], %[[ONE2]] : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.andi %[[U1]], %[[WIN]] : i1
// CHECK-NEXT:      %[[TAKE:.*]] = arith.ori %[[BEATS]], %[[FIRST]] : i1
// CHECK-NEXT:      %[[M0:.*]] = arith.select %[[TAKE]], %[[X0]], %[[NEG]] : f32
// CHECK-NEXT:      %[[P0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[A0:.*]] = arith.select %[[TAKE]], %[[P0]], %[[MINUS1]] : f32
// The last cell (kh = kw = 1) is inside whatever the output: no index test.
// CHECK:           %[[GT3:.*]] = arith.cmpf ogt, %[[X3]], %{{.*}} : f32
// CHECK-NEXT:      %[[NAN3:.*]] = arith.cmpf uno, %[[X3]], %[[X3]] : f32
// CHECK-NEXT:      %[[BEATS3:.*]] = arith.ori %[[GT3]], %[[NAN3]] : i1
// CHECK-NEXT:      %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[UNSET3:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %[[TAKE3:.*]] = arith.ori %[[BEATS3]], %[[UNSET3]] : i1
// CHECK-NEXT:      %{{.*}} = arith.select %[[TAKE3]], %[[X3]], %{{.*}} : f32
// CHECK-NEXT:      %[[P3:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      %[[A3:.*]] = arith.select %[[TAKE3]], %[[P3]], %{{.*}} : f32
// CHECK-NEXT:      linalg.yield %[[A3]] : f32
// CHECK:         %[[DXP:.*]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME:      ins(%[[DY:.*]], %[[ARG]], %{{.*}} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<1x1x6x6xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[G:.*]]: f32, %[[AA:.*]]: f32, %{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK:           %[[P:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK-NEXT:      %[[HIT:.*]] = arith.cmpf oeq, %[[P]], %[[AA]] : f32
// CHECK-NEXT:      %[[NZ:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-NEXT:      %[[SHARE:.*]] = arith.select %[[HIT]], %[[G]], %[[NZ]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[ACC]], %[[SHARE]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK:         %[[DX:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[DXP]] : tensor<1x1x6x6xf32>) outs(%{{.*}} : tensor<1x1x4x4xf32>)
// CHECK:         func.return %[[DX]] : tensor<1x1x4x4xf32>

// -----

// Windows that tile the input (kernel = stride, no padding, 4 = 2 x 2: LeNet's pools)
// cover each element of dx once: the scatter starts from an empty tensor, not a zero
// fill, and adds its share to the constant 0.0 (the fill's value: the same bits, -0.0
// and NaN in dy included) instead of reading dx. No padding, no crop.
func.func @max_pool_grad_tiled(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x2x2xf32>, %dy: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %0 = frame.max_pool_grad %x, %y, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return %0 : tensor<1x1x4x4xf32>
}

// CHECK-LABEL: func.func @max_pool_grad_tiled
// CHECK:         %[[ARG:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[X:.*]], %[[X]], %[[X]], %[[X]] : {{.*}}) outs(%{{.*}} : tensor<1x1x2x2xf32>)
// CHECK-NOT:     linalg.fill
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x1x4x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME:      ins(%{{.*}}, %[[ARG]], %{{.*}} : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<2x2xf32>) outs(%[[E]] : tensor<1x1x4x4xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[G:.*]]: f32, %[[AA:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[HIT:.*]] = arith.cmpf oeq, %{{.*}}, %[[AA]] : f32
// CHECK-NEXT:      %[[NZ:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-NEXT:      %[[SHARE:.*]] = arith.select %[[HIT]], %[[G]], %[[NZ]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[ZERO]], %[[SHARE]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         func.return %[[DX]] : tensor<1x1x4x4xf32>

// -----

// A stride-1 max_pool_grad keeps the loops: the scan over (n, c, oh, kh, kw, ow)
// with the running max and argmax in two output-shaped tensors, a cell inside when
// o + k >= 1 in both dims (from the loop indices). The windows overlap, so the
// scatter is all reductions past n and c and runs kw backwards (kw' = 1 - kw, as
// d4 * -1 + 1): an element's contributions arrive in the outputs' row-major order.
func.func @max_pool_grad_stride1(%x: tensor<1x1x3x3xf32>, %y: tensor<1x1x4x4xf32>, %dy: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  %0 = frame.max_pool_grad %x, %y, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return %0 : tensor<1x1x3x3xf32>
}

// CHECK-LABEL: func.func @max_pool_grad_stride1
// CHECK:         %[[SCANMAX:.*]], %[[ARG:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d5 + d4))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %{{.*}}: f32, %[[RMAX:.*]]: f32, %[[A:.*]]: f32):
// CHECK:           %[[UNSET:.*]] = arith.cmpf olt, %[[A]], %{{.*}} : f32
// CHECK-NEXT:      %[[OH:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:      %[[OH1:.*]] = arith.muli %[[OH]], %{{.*}} : index
// CHECK-NEXT:      %[[KH:.*]] = linalg.index 3 : index
// CHECK-NEXT:      %[[H:.*]] = arith.addi %[[OH1]], %[[KH]] : index
// CHECK-NEXT:      %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:      %[[HIN:.*]] = arith.cmpi sge, %[[H]], %{{.*}} : index
// CHECK-NEXT:      %[[OW:.*]] = linalg.index 5 : index
// CHECK:           %[[KW:.*]] = linalg.index 4 : index
// CHECK-NEXT:      %[[W:.*]] = arith.addi %{{.*}}, %[[KW]] : index
// CHECK-NEXT:      %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:      %[[WIN:.*]] = arith.cmpi sge, %[[W]], %{{.*}} : index
// CHECK-NEXT:      %[[INSIDE:.*]] = arith.andi %[[HIN]], %[[WIN]] : i1
// CHECK-NEXT:      %[[FIRST:.*]] = arith.andi %[[UNSET]], %[[INSIDE]] : i1
// CHECK-NEXT:      %[[TAKE:.*]] = arith.ori %{{.*}}, %[[FIRST]] : i1
// CHECK-NEXT:      %[[NEWMAX:.*]] = arith.select %[[TAKE]], %[[X]], %[[RMAX]] : f32
// CHECK-NEXT:      %[[NEWARG:.*]] = arith.select %[[TAKE]], %{{.*}}, %[[A]] : f32
// CHECK-NEXT:      linalg.yield %[[NEWMAX]], %[[NEWARG]] : f32, f32
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d5 + ((d4 * -1) + 1)))>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]
// CHECK-SAME:      ins(%{{.*}}, %[[ARG]], %{{.*}} : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<2x2xf32>)
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[KH2:.*]] = linalg.index 3 : index
// CHECK-NEXT:      %[[KWR:.*]] = linalg.index 4 : index
// CHECK-NEXT:      %[[K1:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[KW2:.*]] = arith.subi %[[K1]], %[[KWR]] : index

// -----

// reshape copies over the input's iteration space; the output index is the
// row-major delinearisation of the input's linear index d0 * 12 + d1 * 4 + d2:
// (lin floordiv 6) mod 4 for the row, (lin floordiv 1) mod 6 for the column.
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = frame.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  func.return %0 : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @reshape
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4x6xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ((((((d0 * 12) + (d1 * 4)) + d2) floordiv 6) mod 4), (((((d0 * 12) + (d1 * 4)) + d2) floordiv 1) mod 6))>], iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME:      doc = "frame.reshape"}
// CHECK-SAME:      ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[E]] : tensor<4x6xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NEXT:    } -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<4x6xf32>

// -----

// sum over axes 0 and 2: those loops are reductions, the output map keeps d1;
// the accumulator is a zero-filled tensor of the kept dims.
func.func @sum_axes(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %0 = frame.sum %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @sum_axes
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<3xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>], iterator_types = ["reduction", "parallel", "reduction"]
// CHECK-SAME:      doc = "frame.sum"}
// CHECK-SAME:      ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<3xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<3xf32>
// CHECK-NEXT:    func.return %[[S]] : tensor<3xf32>

// -----

// A sum over the last dim and others, the last dim at least 8 long: per column first
// (loops (kept, summed, last), the last one parallel: one partial per column, so the
// contiguous loop vectorizes without reassociating), then across the columns in order.
func.func @sum_columns(%x: tensor<2x3x9xf32>) -> tensor<3xf32> {
  %0 = frame.sum %x {axes = array<i64: 0, 2>} : (tensor<2x3x9xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @sum_columns
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3x9xf32>)
// CHECK:         %[[P0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x9xf32>) -> tensor<3x9xf32>
// CHECK-NEXT:    %[[P:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-SAME:      ins(%[[X]] : tensor<2x3x9xf32>) outs(%[[P0]] : tensor<3x9xf32>)
// CHECK:           arith.addf
// CHECK:         %[[I:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      ins(%[[P]] : tensor<3x9xf32>) outs(%[[I]] : tensor<3xf32>)
// CHECK:         func.return %[[S]] : tensor<3xf32>

// -----

// broadcast along axes 0 and 2: all-parallel, the operand is read through the
// map of the kept dim d1.
func.func @broadcast_axes(%x: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %0 = frame.broadcast %x {axes = array<i64: 0, 2>} : (tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @broadcast_axes
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<3xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<2x3x4xf32>
// CHECK-NEXT:    %[[B:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME:      doc = "frame.broadcast"}
// CHECK-SAME:      ins(%[[X]] : tensor<3xf32>) outs(%[[E]] : tensor<2x3x4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NEXT:    } -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[B]] : tensor<2x3x4xf32>

// -----

// transpose iterates over the result and reads the input at (d1, d0).
func.func @transpose(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = frame.transpose %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @transpose
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<3x2xf32>
// CHECK-NEXT:    %[[T:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      doc = "frame.transpose"}
// CHECK-SAME:      ins(%[[X]] : tensor<2x3xf32>) outs(%[[E]] : tensor<3x2xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NEXT:    } -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %[[T]] : tensor<3x2xf32>

// -----

// avg_pool with padding: a zero-padded copy (zero strips, then x), a window sum over
// (n, c, oh, kh, kw, ow) reading the input at o * stride + k (the empty 2x2
// window only bounds the k loops), then a division by the full kernel size
// KH * KW = 4: padding cells count, as in PyTorch's count_include_pad.
func.func @avg_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  %0 = frame.avg_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return %0 : tensor<1x1x3x3xf32>
}

// CHECK-LABEL: func.func @avg_pool(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<1x1x4x4xf32>)
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<1x1x6x6xf32>
// CHECK:         %[[ROWS:.*]] = linalg.generic {{.*}} outs(%[[E0]] : tensor<1x1x6x6xf32>)
// CHECK:           arith.constant 0.000000e+00 : f32
// CHECK:         %[[PADINIT:.*]] = linalg.generic {{.*}} outs(%[[ROWS]] : tensor<1x1x6x6xf32>)
// CHECK:           arith.constant 0.000000e+00 : f32
// CHECK:         %[[XP:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 + 1), (d3 + 1))>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME:      ins(%[[X]] : tensor<1x1x4x4xf32>) outs(%[[PADINIT]] : tensor<1x1x6x6xf32>)
// CHECK:         %[[ACCINIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
// CHECK-NEXT:    %[[WIN:.*]] = tensor.empty() : tensor<2x2xf32>
// CHECK-NEXT:    %[[TOTAL:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, ((d2 * 2) + d3), ((d5 * 2) + d4))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]
// CHECK-SAME:      doc = "frame.avg_pool"}
// CHECK-SAME:      ins(%[[XP]], %[[WIN]] : tensor<1x1x6x6xf32>, tensor<2x2xf32>) outs(%[[ACCINIT]] : tensor<1x1x3x3xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<1x1x3x3xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<1x1x3x3xf32>
// CHECK-NEXT:    %[[MEAN:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[TOTAL]] : tensor<1x1x3x3xf32>) outs(%[[E1]] : tensor<1x1x3x3xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[K:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[S]], %[[K]] : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
// CHECK-NEXT:    } -> tensor<1x1x3x3xf32>
// CHECK-NEXT:    func.return %[[MEAN]] : tensor<1x1x3x3xf32>

// -----

// avg_pool_grad: each dy / (KH * KW) is added at every cell of its window of the
// zero-filled padded gradient (the pool's input map is now the output map), and
// the padding is cropped off. Stride 1: the windows overlap, so the loops are
// (n, c, oh, kh, kw', ow) with kw' = KW - 1 - kw (the last window dim backwards):
// each cell's contributions still add up in the row-major order of the outputs,
// and the innermost loop walks a row of dy.
func.func @avg_pool_grad(%dy: tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32> {
  %0 = frame.avg_pool_grad %dy {kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32>
  func.return %0 : tensor<1x1x4x4xf32>
}

// CHECK-LABEL: func.func @avg_pool_grad
// CHECK-SAME:    (%[[DY:[a-z0-9_]+]]: tensor<1x1x5x5xf32>)
// CHECK-NEXT:    %[[WIN:.*]] = tensor.empty() : tensor<2x2xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<1x1x6x6xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E0]] : tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32>
// CHECK-NEXT:    %[[DXP:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d5 + ((d4 * -1) + 1)))>]
// Windows may overlap: only n and c are parallel, the scatter dims are reductions.
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]
// CHECK-SAME:      doc = "frame.avg_pool_grad"}
// CHECK-SAME:      ins(%[[DY]], %[[WIN]] : tensor<1x1x5x5xf32>, tensor<2x2xf32>) outs(%[[INIT]] : tensor<1x1x6x6xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[G:.*]]: f32, %{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[K:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-NEXT:      %[[SHARE:.*]] = arith.divf %[[G]], %[[K]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[ACC]], %[[SHARE]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<1x1x6x6xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<1x1x4x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 + 1), (d3 + 1))>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME:      ins(%[[DXP]] : tensor<1x1x6x6xf32>) outs(%[[E1]] : tensor<1x1x4x4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NEXT:    } -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    func.return %[[DX]] : tensor<1x1x4x4xf32>

// -----

// conv_grad_input (the conv of @conv1d, reversed): over the conv's (n, o, c, k, out)
// space, w[o, c, k] * dy[n, o, out] is accumulated into the padded input gradient
// at channel (o floordiv 2) * 2 + c, position out * 2 + k; then the padding is cropped.
func.func @conv_grad_input(%dy: tensor<1x4x3xf32>, %w: tensor<4x2x3xf32>) -> tensor<1x4x5xf32> {
  %0 = frame.conv_grad_input %dy, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x3xf32>, tensor<4x2x3xf32>) -> tensor<1x4x5xf32>
  func.return %0 : tensor<1x4x5xf32>
}

// CHECK-LABEL: func.func @conv_grad_input
// CHECK-SAME:    (%[[DY:[a-z0-9_]+]]: tensor<1x4x3xf32>, %[[W:[a-z0-9_]+]]: tensor<4x2x3xf32>)
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<1x4x7xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E0]] : tensor<1x4x7xf32>) -> tensor<1x4x7xf32>
// CHECK-NEXT:    %[[DXP:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, (((d1 floordiv 2) * 2) + d2), ((d4 * 2) + d3))>]
// Several (o, c, k, out) reach one input cell: only n is parallel.
// CHECK-SAME:      iterator_types = ["parallel", "reduction", "reduction", "reduction", "reduction"]
// CHECK-SAME:      doc = "frame.conv_grad_input"}
// CHECK-SAME:      ins(%[[W]], %[[DY]] : tensor<4x2x3xf32>, tensor<1x4x3xf32>) outs(%[[INIT]] : tensor<1x4x7xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[WV:.*]]: f32, %[[G:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = math.fma %[[WV]], %[[G]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<1x4x7xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<1x4x5xf32>
// CHECK-NEXT:    %[[DX:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, (d2 + 1))>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK-SAME:      ins(%[[DXP]] : tensor<1x4x7xf32>) outs(%[[E1]] : tensor<1x4x5xf32>)
// CHECK:         func.return %[[DX]] : tensor<1x4x5xf32>

// -----

// conv_grad_weight: the zero-padded input, then over the conv's (n, o, c, k, out)
// space xp[n, (o floordiv 2) * 2 + c, out * 2 + k] * dy[n, o, out] is accumulated
// into dw[o, c, k] (a zero-filled accumulator).
func.func @conv_grad_weight(%x: tensor<1x4x5xf32>, %dy: tensor<1x4x3xf32>) -> tensor<4x2x3xf32> {
  %0 = frame.conv_grad_weight %x, %dy {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x5xf32>, tensor<1x4x3xf32>) -> tensor<4x2x3xf32>
  func.return %0 : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @conv_grad_weight
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<1x4x5xf32>, %[[DY:[a-z0-9_]+]]: tensor<1x4x3xf32>)
// CHECK:         %[[XP:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, (d2 + 1))>]
// CHECK-SAME:      ins(%[[X]] : tensor<1x4x5xf32>) outs(%{{.*}} : tensor<1x4x7xf32>)
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4x2x3xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %[[DW:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, (((d1 floordiv 2) * 2) + d2), ((d4 * 2) + d3))>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3)>]
// dw[o, c, k] sums over the batch n and the output positions.
// CHECK-SAME:      iterator_types = ["reduction", "parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME:      doc = "frame.conv_grad_weight"}
// CHECK-SAME:      ins(%[[XP]], %[[DY]] : tensor<1x4x7xf32>, tensor<1x4x3xf32>) outs(%[[INIT]] : tensor<4x2x3xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[XV:.*]]: f32, %[[G:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = math.fma %[[XV]], %[[G]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %[[DW]] : tensor<4x2x3xf32>

// -----

// scatter_add as a dense one-hot reduction over (v, f, k): out[v, f] gets
// updates[k, f] where indices[k] == v (linalg.index 0), else keeps its value.
func.func @scatter_add(%u: tensor<3x2xf32>, %i: tensor<3xi64>) -> tensor<4x2xf32> {
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME:    (%[[U:[a-z0-9_]+]]: tensor<3x2xf32>, %[[I:[a-z0-9_]+]]: tensor<3xi64>)
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4x2xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[O:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:      doc = "frame.scatter_add"}
// CHECK-SAME:      ins(%[[U]], %[[I]] : tensor<3x2xf32>, tensor<3xi64>) outs(%[[INIT]] : tensor<4x2xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[UV:.*]]: f32, %[[IV:.*]]: i64, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[ROW:.*]] = linalg.index 0 : index
// CHECK-NEXT:      %[[IDX:.*]] = arith.index_cast %[[IV]] : i64 to index
// CHECK-NEXT:      %[[HIT:.*]] = arith.cmpi eq, %[[IDX]], %[[ROW]] : index
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[ACC]], %[[UV]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.select %[[HIT]], %[[SUM]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<4x2xf32>
// CHECK-NEXT:    func.return %[[O]] : tensor<4x2xf32>

// -----

// gather_rows, the same one-hot reduction over (k, f, v): out[k, f] sums x[v, f]
// where indices[k] == v (linalg.index 2); i32 indices are cast like i64 ones.
func.func @gather_rows(%x: tensor<4x2xf32>, %i: tensor<3xi32>) -> tensor<3x2xf32> {
  %0 = frame.gather_rows %x, %i : (tensor<4x2xf32>, tensor<3xi32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @gather_rows
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4x2xf32>, %[[I:[a-z0-9_]+]]: tensor<3xi32>)
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[G:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:      doc = "frame.gather_rows"}
// CHECK-SAME:      ins(%[[X]], %[[I]] : tensor<4x2xf32>, tensor<3xi32>) outs(%[[INIT]] : tensor<3x2xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[XV:.*]]: f32, %[[IV:.*]]: i32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[ROW:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[IDX:.*]] = arith.index_cast %[[IV]] : i32 to index
// CHECK-NEXT:      %[[HIT:.*]] = arith.cmpi eq, %[[IDX]], %[[ROW]] : index
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[ACC]], %[[XV]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.select %[[HIT]], %[[SUM]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %[[G]] : tensor<3x2xf32>

// -----

// selective_scan: one generic over (row, t), t the sequential last loop walking
// time forward (all maps read t = d1 as is). The state h is a zero-filled output
// indexed by the row only, so it carries from t to t + 1:
// h = a * h + b * x, y = c * h + d * x.
func.func @selective_scan(%x: tensor<2x5xf32>, %a: tensor<2x5xf32>, %b: tensor<2x5xf32>, %c: tensor<2x5xf32>, %d: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = frame.selective_scan %x, %a, %b, %c, %d : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @selective_scan(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<2x5xf32>, %[[A:[a-z0-9_]+]]: tensor<2x5xf32>, %[[B:[a-z0-9_]+]]: tensor<2x5xf32>, %[[C:[a-z0-9_]+]]: tensor<2x5xf32>, %[[D:[a-z0-9_]+]]: tensor<2x5xf32>)
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<2xf32>
// CHECK-NEXT:    %[[H0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E0]] : tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK-NEXT:    %{{.*}}, %[[Y:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      doc = "frame.selective_scan"}
// CHECK-SAME:      ins(%[[X]], %[[A]], %[[B]], %[[C]], %[[D]] : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) outs(%[[H0]], %[[E1]] : tensor<2xf32>, tensor<2x5xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[XV:.*]]: f32, %[[AV:.*]]: f32, %[[BV:.*]]: f32, %[[CV:.*]]: f32, %[[DV:.*]]: f32, %[[H:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[AH:.*]] = arith.mulf %[[AV]], %[[H]] : f32
// CHECK-NEXT:      %[[BX:.*]] = arith.mulf %[[BV]], %[[XV]] : f32
// CHECK-NEXT:      %[[HN:.*]] = arith.addf %[[AH]], %[[BX]] : f32
// CHECK-NEXT:      %[[CH:.*]] = arith.mulf %[[CV]], %[[HN]] : f32
// CHECK-NEXT:      %[[DX:.*]] = arith.mulf %[[DV]], %[[XV]] : f32
// CHECK-NEXT:      %[[YV:.*]] = arith.addf %[[CH]], %[[DX]] : f32
// CHECK-NEXT:      linalg.yield %[[HN]], %[[YV]] : f32, f32
// CHECK-NEXT:    } -> (tensor<2xf32>, tensor<2x5xf32>)
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x5xf32>

// -----

// selective_scan_grad wrt a: a forward scan recomputes h_t and h_{t-1}; a reverse
// scan (maps read t = 4 - d1, an empty identity-mapped operand bounds the loops)
// carries a_t * gh_t back, gh_t = c_t * dy_t + a_{t+1} * gh_{t+1}, and
// d a_t = gh_t * h_{t-1}.
func.func @selective_scan_grad(%x: tensor<2x5xf32>, %a: tensor<2x5xf32>, %b: tensor<2x5xf32>, %c: tensor<2x5xf32>, %d: tensor<2x5xf32>, %dy: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = frame.selective_scan_grad %x, %a, %b, %c, %d, %dy {wrt = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @selective_scan_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x5xf32>, %[[A:[a-z0-9_]+]]: tensor<2x5xf32>, %[[B:[a-z0-9_]+]]: tensor<2x5xf32>, %[[C:[a-z0-9_]+]]: tensor<2x5xf32>, %[[D:[a-z0-9_]+]]: tensor<2x5xf32>, %[[DY:[a-z0-9_]+]]: tensor<2x5xf32>)
// CHECK:         %[[H0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK-NEXT:    %{{.*}}, %[[HS:.*]], %[[HPS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      ins(%[[X]], %[[A]], %[[B]] : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) outs(%[[H0]], %[[E0]], %[[E1]] : tensor<2xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[XV:.*]]: f32, %[[AV:.*]]: f32, %[[BV:.*]]: f32, %[[HP:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[AH:.*]] = arith.mulf %[[AV]], %[[HP]] : f32
// CHECK-NEXT:      %[[BX:.*]] = arith.mulf %[[BV]], %[[XV]] : f32
// CHECK-NEXT:      %[[H:.*]] = arith.addf %[[AH]], %[[BX]] : f32
// CHECK-NEXT:      linalg.yield %[[H]], %[[H]], %[[HP]] : f32, f32, f32
// CHECK-NEXT:    } -> (tensor<2xf32>, tensor<2x5xf32>, tensor<2x5xf32>)
// CHECK-NEXT:    %[[SHAPE:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK:         %[[CARRY0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[E2:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK-NEXT:    %{{.*}}, %[[GA:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, ((d1 * -1) + 4))>], iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      doc = "frame.selective_scan_grad"}
// CHECK-SAME:      ins(%[[X]], %[[A]], %[[B]], %[[C]], %[[D]], %[[DY]], %[[HS]], %[[HPS]], %[[SHAPE]] : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) outs(%[[CARRY0]], %[[E2]] : tensor<2xf32>, tensor<2x5xf32>) {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: f32, %[[RA:.*]]: f32, %{{.*}}: f32, %[[RC:.*]]: f32, %{{.*}}: f32, %[[RDY:.*]]: f32, %{{.*}}: f32, %[[RHP:.*]]: f32, %{{.*}}: f32, %[[CARRY:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[CG:.*]] = arith.mulf %[[RC]], %[[RDY]] : f32
// CHECK-NEXT:      %[[GH:.*]] = arith.addf %[[CG]], %[[CARRY]] : f32
// CHECK-NEXT:      %[[NC:.*]] = arith.mulf %[[RA]], %[[GH]] : f32
// CHECK-NEXT:      %[[DA:.*]] = arith.mulf %[[GH]], %[[RHP]] : f32
// CHECK-NEXT:      linalg.yield %[[NC]], %[[DA]] : f32, f32
// CHECK-NEXT:    } -> (tensor<2xf32>, tensor<2x5xf32>)
// CHECK-NEXT:    func.return %[[GA]] : tensor<2x5xf32>

// -----

// sigmoid as 1 / (1 + exp(-x)).
func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @sigmoid
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.sigmoid"}
// CHECK-SAME:      ins(%[[X]] : tensor<4xf32>) outs(%[[E]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[V]] : f32
// CHECK-NEXT:      %[[EXP:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[DEN:.*]] = arith.addf %[[ONE]], %[[EXP]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[S]] : tensor<4xf32>

// -----

// heaviside_surrogate: 1 where x >= 0 (ordered: -0.0 fires, NaN gives 0), else 0.
// alpha only matters for the gradient.
func.func @heaviside(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.heaviside_surrogate %x {alpha = 2.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @heaviside(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.heaviside_surrogate"}
// CHECK-SAME:      ins(%[[X]] : tensor<4xf32>) outs(%[[E]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[FIRE:.*]] = arith.cmpf oge, %[[V]], %[[Z]] : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[FIRE]], %[[ONE]], %[[ZERO]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[S]] : tensor<4xf32>

// -----

// heaviside_surrogate_grad: dy * (alpha * s) * (1 - s), s = sigmoid(alpha * x).
func.func @heaviside_grad(%x: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.heaviside_surrogate_grad %x, %dy {alpha = 2.0 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @heaviside_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32>, %[[DY:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[G:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.heaviside_surrogate_grad"}
// CHECK-SAME:      ins(%[[X]], %[[DY]] : tensor<4xf32>, tensor<4xf32>) outs(%[[E]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %[[GV:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[AL:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      %[[AX:.*]] = arith.mulf %[[AL]], %[[V]] : f32
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[AX]] : f32
// CHECK-NEXT:      %[[EXP:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[DEN:.*]] = arith.addf %[[ONE]], %[[EXP]] : f32
// CHECK-NEXT:      %[[SIG:.*]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK-NEXT:      %[[ONE2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[OMS:.*]] = arith.subf %[[ONE2]], %[[SIG]] : f32
// CHECK-NEXT:      %[[AS:.*]] = arith.mulf %[[AL]], %[[SIG]] : f32
// CHECK-NEXT:      %[[SLOPE:.*]] = arith.mulf %[[AS]], %[[OMS]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.mulf %[[GV]], %[[SLOPE]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[G]] : tensor<4xf32>

// -----

// scale multiplies by its constant factor; neg is arith.negf.
func.func @scale_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.scale %x {factor = 2.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = frame.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// CHECK-LABEL: func.func @scale_neg
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[SC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.scale"}
// CHECK-SAME:      ins(%[[X]] : tensor<4xf32>) outs(%[[E0]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[F:.*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[V]], %[[F]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[NG:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.neg"}
// CHECK-SAME:      ins(%[[SC]] : tensor<4xf32>) outs(%[[E1]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[W:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[W]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[NG]] : tensor<4xf32>

// -----

// sub and mul: elementwise, operands in order (lhs - rhs).
func.func @sub_mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = frame.mul %0, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// CHECK-LABEL: func.func @sub_mul
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4xf32>, %[[B:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[D:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.sub"}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32>) outs(%[[E0]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.subf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[P:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.mul"}
// CHECK-SAME:      ins(%[[D]], %[[B]] : tensor<4xf32>, tensor<4xf32>) outs(%[[E1]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[U:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[U]], %[[V]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[P]] : tensor<4xf32>

// -----

// relu_grad zeroes dy where x <= 0 only, as PyTorch's threshold_backward: at a
// NaN x the gradient passes (`ole` is false).
func.func @relu_grad(%x: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.relu_grad %x, %dy : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @relu_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32>, %[[DY:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[G:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]
// CHECK-SAME:      doc = "frame.relu_grad"}
// CHECK-SAME:      ins(%[[X]], %[[DY]] : tensor<4xf32>, tensor<4xf32>) outs(%[[E]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %[[GV:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[BLOCKED:.*]] = arith.cmpf ole, %[[V]], %[[Z]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[BLOCKED]], %[[Z]], %[[GV]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[G]] : tensor<4xf32>

// -----

// f16 storage, f32 arithmetic: the body widens every f16 block argument with
// arith.extf (the unused destination's too), adds in f32 and rounds the result
// once with arith.truncf before yielding it.
func.func @add_f16(%a: tensor<4xf16>, %b: tensor<4xf16>) -> tensor<4xf16> {
  %0 = frame.add %a, %b : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// CHECK-LABEL: func.func @add_f16
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4xf16>, %[[B:[a-z0-9_]+]]: tensor<4xf16>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf16>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic
// CHECK-SAME:      doc = "frame.add"}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<4xf16>, tensor<4xf16>) outs(%[[E]] : tensor<4xf16>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f16, %[[Y:.*]]: f16, %[[O:.*]]: f16):
// CHECK-NEXT:      %[[XW:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT:      %[[YW:.*]] = arith.extf %[[Y]] : f16 to f32
// CHECK-NEXT:      %{{.*}} = arith.extf %[[O]] : f16 to f32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[XW]], %[[YW]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.truncf %[[SUM]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[R]] : f16
// CHECK-NEXT:    } -> tensor<4xf16>
// CHECK-NEXT:    func.return %[[S]] : tensor<4xf16>

// -----

// A full reduction of more than 4096 elements is blocked: 100 partial sums over
// blocks of 50 (a trailing sub-tensor near sqrt(5000)), then a sum of the partials.
// A shape-only tensor bounds the two loops; the body does not read it.
func.func @mse_blocked(%p: tensor<100x50xf32>, %t: tensor<100x50xf32>) -> tensor<f32> {
  %0 = frame.mse_loss %p, %t : (tensor<100x50xf32>, tensor<100x50xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @mse_blocked
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<100x50xf32>, %[[T:[a-z0-9_]+]]: tensor<100x50xf32>)
// CHECK:         %[[TOTAL0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<f32>) -> tensor<f32>
// CHECK:         %[[PART0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<100xf32>) -> tensor<100xf32>
// CHECK-NEXT:    %[[BOUNDS:.*]] = tensor.empty() : tensor<100x50xf32>
// CHECK-NEXT:    %[[PART:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      ins(%[[P]], %[[T]], %[[BOUNDS]] : tensor<100x50xf32>, tensor<100x50xf32>, tensor<100x50xf32>) outs(%[[PART0]] : tensor<100xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]
// CHECK-SAME:      ins(%[[PART]] : tensor<100xf32>) outs(%[[TOTAL0]] : tensor<f32>)
// CHECK:           arith.constant 5.000000e+03 : f32

// -----

// A 1-d reduction has no trailing sub-tensor: blocks of 100 (a divisor of 10000) are
// read at d0 * 100 + d1.
func.func @sum_blocked(%x: tensor<10000xf32>) -> tensor<f32> {
  %0 = frame.sum %x : (tensor<10000xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @sum_blocked
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (((d0 * 100) + d1))>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      outs(%{{.*}} : tensor<100xf32>)
