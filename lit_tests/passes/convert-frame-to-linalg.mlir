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

func.func @unranked(%a: tensor<8x4xf32>) -> tensor<*xf32> {
  %0 = frame.relu %a : (tensor<8x4xf32>) -> tensor<*xf32>
  func.return %0 : tensor<*xf32>
}

// CHECK: convert-frame-to-linalg at @unranked: frame.relu: expected static shapes (run frame-shape-inference first)

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
// NaN, so NaN wins and the first of tied maxima (-0.0 before +0.0) stays.
func.func @max_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  func.return %0 : tensor<1x1x2x2xf32>
}

// CHECK-LABEL: func.func @max_pool
// CHECK:         %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%[[NEG]] : f32)
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"], doc = "frame.max_pool"}
// CHECK-SAME:      outs(%[[INIT]] : tensor<1x1x2x2xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %{{.*}}: f32, %[[RMAX:.*]]: f32):
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[RMAX]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK-NEXT:      %[[TAKE:.*]] = arith.ori %[[GT]], %[[NAN]] : i1
// CHECK-NEXT:      %[[M:.*]] = arith.select %[[TAKE]], %[[X]], %[[RMAX]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32

// -----

// max_pool_grad with padding: the input padded with -inf and a 0/1 mask of the
// cells inside it; a scan records per window the row-major position of the argmax
// as PyTorch does (initially -1; the first inside cell if nothing beats -inf); a
// second generic adds dy at that position; the padding is cropped off.
func.func @max_pool_grad(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x3x3xf32>, %dy: tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32> {
  %0 = frame.max_pool_grad %x, %y, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32>
  func.return %0 : tensor<1x1x4x4xf32>
}

// CHECK-LABEL: func.func @max_pool_grad
// CHECK:         %[[XP:.*]] = linalg.generic
// CHECK-SAME:      ins(%{{.*}} : tensor<1x1x4x4xf32>) outs(%{{.*}} : tensor<1x1x6x6xf32>)
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[MASK:.*]] = linalg.generic
// CHECK-SAME:      outs(%{{.*}} : tensor<1x1x6x6xf32>)
// CHECK:         %[[MINUS1:.*]] = arith.constant -1.000000e+00 : f32
// CHECK:         %[[SCANMAX:.*]], %[[ARG:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[XP]], %{{.*}}, %[[MASK]] : tensor<1x1x6x6xf32>, tensor<2x2xf32>, tensor<1x1x6x6xf32>)
// CHECK-SAME:      outs(%{{.*}}, %{{.*}} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %{{.*}}: f32, %[[IN:.*]]: f32, %[[RMAX:.*]]: f32, %[[A:.*]]: f32):
// CHECK-NEXT:      %[[KH:.*]] = linalg.index 4 : index
// CHECK-NEXT:      %[[KW:.*]] = linalg.index 5 : index
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.muli %[[KH]], %[[TWO]] : index
// CHECK-NEXT:      %[[LIN:.*]] = arith.addi %[[ROW]], %[[KW]] : index
// CHECK-NEXT:      %[[I64:.*]] = arith.index_cast %[[LIN]] : index to i64
// CHECK-NEXT:      %[[POS:.*]] = arith.sitofp %[[I64]] : i64 to f32
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[RMAX]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK-NEXT:      %[[BEATS:.*]] = arith.ori %[[GT]], %[[NAN]] : i1
// CHECK-NEXT:      %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[UNSET:.*]] = arith.cmpf olt, %[[A]], %{{.*}} : f32
// CHECK-NEXT:      %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[INSIDE:.*]] = arith.cmpf ogt, %[[IN]], %{{.*}} : f32
// CHECK-NEXT:      %[[FIRST:.*]] = arith.andi %[[UNSET]], %[[INSIDE]] : i1
// CHECK-NEXT:      %[[TAKE:.*]] = arith.ori %[[BEATS]], %[[FIRST]] : i1
// CHECK-NEXT:      %[[NEWMAX:.*]] = arith.select %[[TAKE]], %[[X]], %[[RMAX]] : f32
// CHECK-NEXT:      %[[NEWARG:.*]] = arith.select %[[TAKE]], %[[POS]], %[[A]] : f32
// CHECK-NEXT:      linalg.yield %[[NEWMAX]], %[[NEWARG]] : f32, f32
// CHECK:         %[[DXP:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[DY:.*]], %[[ARG]], %{{.*}} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<1x1x6x6xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[G:.*]]: f32, %[[AA:.*]]: f32, %{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK:           %[[P:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK-NEXT:      %[[HIT:.*]] = arith.cmpf oeq, %[[P]], %[[AA]] : f32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[ACC]], %[[G]] : f32
// CHECK-NEXT:      %[[NEW:.*]] = arith.select %[[HIT]], %[[SUM]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK:         %[[DX:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[DXP]] : tensor<1x1x6x6xf32>) outs(%{{.*}} : tensor<1x1x4x4xf32>)
// CHECK:         func.return %[[DX]] : tensor<1x1x4x4xf32>
