// convert-frame-to-linalg on the index family (frame_index.py): index_select and
// index_add as one-hot scans (linalg cannot index by data). scatter_add and gather_rows
// are in convert-frame-to-linalg.mlir.
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

// index_select along axis 1 of a rank-3 input: loops (n, k, v, c), v a reduction that
// selects x[n, v, c] where indices[k] == v (linalg.index 2) -- a copy, no arithmetic;
// the last dim innermost. The indices' argument records the run-time range check (the
// dim's size, no ignore value) the executable makes before a call.
func.func @select(%x: tensor<2x5x3xf32>, %i: tensor<4xi64>) -> tensor<2x4x3xf32> {
  %y = frame.index_select %x, %i {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4xi64>) -> tensor<2x4x3xf32>
  func.return %y : tensor<2x4x3xf32>
}

// CHECK-LABEL: func.func @select(%x: tensor<2x5x3xf32>, %i: tensor<4xi64> {frame.index_checks = [{op = "frame.index_select", bound = 5 : i64}]}) -> tensor<2x4x3xf32> {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<2x4x3xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"], doc = "frame.index_select"} ins(%x, %i : tensor<2x5x3xf32>, tensor<4xi64>) outs(%[[INIT]] : tensor<2x4x3xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[XV:.*]]: f32, %[[IV:.*]]: i64, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[V:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[IDX:.*]] = arith.index_cast %[[IV]] : i64 to index
// CHECK-NEXT:      %[[HIT:.*]] = arith.cmpi eq, %[[IDX]], %[[V]] : index
// CHECK-NEXT:      %[[NEW:.*]] = arith.select %[[HIT]], %[[XV]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<2x4x3xf32>
// CHECK-NEXT:    func.return %y : tensor<2x4x3xf32>

// -----

// A rank-1 input, i32 indices: loops (k, v).
func.func @select_rank1(%x: tensor<5xf32>, %i: tensor<3xi32>) -> tensor<3xf32> {
  %y = frame.index_select %x, %i {axis = 0 : i64} : (tensor<5xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// CHECK-LABEL: func.func @select_rank1(%x: tensor<5xf32>, %i: tensor<3xi32> {frame.index_checks = [{op = "frame.index_select", bound = 5 : i64}]})
// CHECK:         %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "frame.index_select"} ins(%x, %i : tensor<5xf32>, tensor<3xi32>)
// CHECK-NEXT:    ^{{.*}}(%[[XV:.*]]: f32, %[[IV:.*]]: i32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[V:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[IDX:.*]] = arith.index_cast %[[IV]] : i32 to index
// CHECK-NEXT:      %[[HIT:.*]] = arith.cmpi eq, %[[IDX]], %[[V]] : index
// CHECK-NEXT:      arith.select %[[HIT]], %[[XV]], %[[ACC]] : f32

// -----

// index_add along the last axis of f16 storage: loops (n, v, k), k a reduction adding
// source[n, k] into an f32 accumulator where indices[k] == v (linalg.index 1), in index
// order; then one rounding to f16. The bound is the result's dim.
func.func @add_half(%s: tensor<2x3xf16>, %i: tensor<3xi64>) -> tensor<2x4xf16> {
  %o = frame.index_add %s, %i {axis = 1 : i64} : (tensor<2x3xf16>, tensor<3xi64>) -> tensor<2x4xf16>
  func.return %o : tensor<2x4xf16>
}

// CHECK-LABEL: func.func @add_half(%s: tensor<2x3xf16>, %i: tensor<3xi64> {frame.index_checks = [{op = "frame.index_add", bound = 4 : i64}]}) -> tensor<2x4xf16> {
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], doc = "frame.index_add"} ins(%s, %i : tensor<2x3xf16>, tensor<3xi64>) outs(%[[INIT]] : tensor<2x4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[SV:.*]]: f16, %[[IV:.*]]: i64, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[W:.*]] = arith.extf %[[SV]] : f16 to f32
// CHECK-NEXT:      %[[ADDED:.*]] = arith.addf %[[ACC]], %[[W]] : f32
// CHECK-NEXT:      %[[V:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[IDX:.*]] = arith.index_cast %[[IV]] : i64 to index
// CHECK-NEXT:      %[[HIT:.*]] = arith.cmpi eq, %[[IDX]], %[[V]] : index
// CHECK-NEXT:      %[[NEW:.*]] = arith.select %[[HIT]], %[[ADDED]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[NEW]] : f32
// CHECK-NEXT:    } -> tensor<2x4xf32>
// CHECK:         %o = linalg.generic {{.*}} doc = "frame.index_add"} ins(%[[SUM]] : tensor<2x4xf32>)
// CHECK:           arith.truncf %{{.*}} : f32 to f16
// CHECK:         func.return %o : tensor<2x4xf16>

// -----

// The same indices feeding both ops: one check per op on the argument.
func.func @both(%x: tensor<4x2xf32>, %i: tensor<3xi64>) -> tensor<4x2xf32> {
  %y = frame.index_select %x, %i {axis = 0 : i64} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  %o = frame.index_add %y, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
  func.return %o : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @both(%x: tensor<4x2xf32>, %i: tensor<3xi64> {frame.index_checks = [{op = "frame.index_select", bound = 4 : i64}, {op = "frame.index_add", bound = 4 : i64}]})
// CHECK:         %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.index_select"}
// CHECK:         %o = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.index_add"}
