// RUN: frame-opt %s --split-input-file -p frame-fold-movement | filecheck %s
// RUN: frame-opt %s --split-input-file -p 'frame-fold-movement{min_flops=100000}' | filecheck %s --check-prefix=SMALL

// Contractions read through the transposes and reshapes feeding them: a transpose
// composes its permutation into the contraction's map; a reshape is read through the
// row-major delinearisation of the element's linear index (frame-gemm addresses that
// as the flat offset). The copies, and their tensor.empty destinations, go.
func.func @transpose_into_matmul(%a: tensor<2x6x3x4xf32>, %b: tensor<2x3x4x5xf32>) -> tensor<2x3x6x5xf32> {
  %0 = tensor.empty() : tensor<2x3x6x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"], doc = "frame.transpose"} ins(%a : tensor<2x6x3x4xf32>) outs(%0 : tensor<2x3x6x4xf32>) {
  ^bb0(%1: f32, %2: f32):
    linalg.yield %1 : f32
  } -> tensor<2x3x6x4xf32>
  %3 = arith.constant 0.000000e+00 : f32
  %4 = tensor.empty() : tensor<2x3x6x5xf32>
  %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<2x3x6x5xf32>) -> tensor<2x3x6x5xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%t, %b : tensor<2x3x6x4xf32>, tensor<2x3x4x5xf32>) outs(%5 : tensor<2x3x6x5xf32>) {
  ^bb0(%6: f32, %7: f32, %8: f32):
    %9 = math.fma %6, %7, %8 : f32
    linalg.yield %9 : f32
  } -> tensor<2x3x6x5xf32>
  func.return %c : tensor<2x3x6x5xf32>
}

// A transpose: the product reads %a through (b, h, i, k) -> (b, i, h, k).
// CHECK-LABEL: func.func @transpose_into_matmul
// CHECK-NOT:     frame.transpose
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>]
// CHECK-SAME:      doc = "frame.matmul"} ins(%a, %b : tensor<2x6x3x4xf32>, tensor<2x3x4x5xf32>)
// CHECK-NOT:     tensor<2x3x6x4xf32>
// SMALL-LABEL: func.func @transpose_into_matmul
// SMALL:         doc = "frame.transpose"
// SMALL:         ins(%t, %b

// -----
func.func @reshape_into_matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<6x5xf32> {
  %0 = tensor.empty() : tensor<6x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ((((((d0 * 12) + (d1 * 4)) + d2) floordiv 4) mod 6), (((((d0 * 12) + (d1 * 4)) + d2) floordiv 1) mod 4))>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.reshape"} ins(%a : tensor<2x3x4xf32>) outs(%0 : tensor<6x4xf32>) {
  ^bb0(%1: f32, %2: f32):
    linalg.yield %1 : f32
  } -> tensor<6x4xf32>
  %3 = arith.constant 0.000000e+00 : f32
  %4 = tensor.empty() : tensor<6x5xf32>
  %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<6x5xf32>) -> tensor<6x5xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%r, %b : tensor<6x4xf32>, tensor<4x5xf32>) outs(%5 : tensor<6x5xf32>) {
  ^bb0(%6: f32, %7: f32, %8: f32):
    %9 = math.fma %6, %7, %8 : f32
    linalg.yield %9 : f32
  } -> tensor<6x5xf32>
  func.return %c : tensor<6x5xf32>
}

// A reshape [2, 3, 4] -> [6, 4]: row i, column k of the lhs is element 4 i + k of %a.
// CHECK-LABEL: func.func @reshape_into_matmul
// CHECK-NOT:     frame.reshape
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (((((d0 * 4) + d1) floordiv 12) mod 2), ((((d0 * 4) + d1) floordiv 4) mod 3), ((((d0 * 4) + d1) floordiv 1) mod 4))>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>]
// CHECK-SAME:      ins(%a, %b : tensor<2x3x4xf32>, tensor<4x5xf32>)
// SMALL-LABEL: func.func @reshape_into_matmul
// SMALL:         doc = "frame.reshape"

// -----
func.func @heads(%q: tensor<6x8xf32>, %k: tensor<6x8xf32>) -> tensor<2x2x3x3xf32> {
  %0 = tensor.empty() : tensor<2x3x2x4xf32>
  %q4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (((((d0 * 8) + d1) floordiv 24) mod 2), ((((d0 * 8) + d1) floordiv 8) mod 3), ((((d0 * 8) + d1) floordiv 4) mod 2), ((((d0 * 8) + d1) floordiv 1) mod 4))>], iterator_types = ["parallel", "parallel"], doc = "frame.reshape"} ins(%q : tensor<6x8xf32>) outs(%0 : tensor<2x3x2x4xf32>) {
  ^bb0(%1: f32, %2: f32):
    linalg.yield %1 : f32
  } -> tensor<2x3x2x4xf32>
  %3 = tensor.empty() : tensor<2x2x3x4xf32>
  %qt = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"], doc = "frame.transpose"} ins(%q4 : tensor<2x3x2x4xf32>) outs(%3 : tensor<2x2x3x4xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<2x2x3x4xf32>
  %6 = tensor.empty() : tensor<2x3x2x4xf32>
  %k4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (((((d0 * 8) + d1) floordiv 24) mod 2), ((((d0 * 8) + d1) floordiv 8) mod 3), ((((d0 * 8) + d1) floordiv 4) mod 2), ((((d0 * 8) + d1) floordiv 1) mod 4))>], iterator_types = ["parallel", "parallel"], doc = "frame.reshape"} ins(%k : tensor<6x8xf32>) outs(%6 : tensor<2x3x2x4xf32>) {
  ^bb0(%7: f32, %8: f32):
    linalg.yield %7 : f32
  } -> tensor<2x3x2x4xf32>
  %9 = tensor.empty() : tensor<2x2x3x4xf32>
  %kt = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"], doc = "frame.transpose"} ins(%k4 : tensor<2x3x2x4xf32>) outs(%9 : tensor<2x2x3x4xf32>) {
  ^bb0(%10: f32, %11: f32):
    linalg.yield %10 : f32
  } -> tensor<2x2x3x4xf32>
  %12 = arith.constant 0.000000e+00 : f32
  %13 = tensor.empty() : tensor<2x2x3x3xf32>
  %14 = linalg.fill ins(%12 : f32) outs(%13 : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"], doc = "frame.matmul"} ins(%qt, %kt : tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>) outs(%14 : tensor<2x2x3x3xf32>) {
  ^bb0(%15: f32, %16: f32, %17: f32):
    %18 = math.fma %15, %16, %17 : f32
    linalg.yield %18 : f32
  } -> tensor<2x2x3x3xf32>
  func.return %s : tensor<2x2x3x3xf32>
}

// Attention's Q·Kᵀ over heads split by reshape + transpose: both transposes fold, and
// q's reshape; k's stays, or the head dim d4 would be a bare dim of no map (linalg
// could not bound that loop).
// CHECK-LABEL: func.func @heads
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<2x3x2x4xf32>
// CHECK-NEXT:    %[[K4:.*]] = linalg.generic {{.*}} doc = "frame.reshape"} ins(%k : tensor<6x8xf32>) outs(%[[E]] : tensor<2x3x2x4xf32>)
// CHECK-NOT:     frame.transpose
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (((((((d0 * 24) + (d2 * 8)) + (d1 * 4)) + d4) floordiv 8) mod 6), ((((((d0 * 24) + (d2 * 8)) + (d1 * 4)) + d4) floordiv 1) mod 8))>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>]
// CHECK-SAME:      ins(%q, %[[K4]] : tensor<6x8xf32>, tensor<2x3x2x4xf32>)

// -----
func.func @other_reader(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> (tensor<6x5xf32>, tensor<6x4xf32>) {
  %0 = tensor.empty() : tensor<6x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ((((((d0 * 12) + (d1 * 4)) + d2) floordiv 4) mod 6), (((((d0 * 12) + (d1 * 4)) + d2) floordiv 1) mod 4))>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.reshape"} ins(%a : tensor<2x3x4xf32>) outs(%0 : tensor<6x4xf32>) {
  ^bb0(%1: f32, %2: f32):
    linalg.yield %1 : f32
  } -> tensor<6x4xf32>
  %3 = arith.constant 0.000000e+00 : f32
  %4 = tensor.empty() : tensor<6x5xf32>
  %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<6x5xf32>) -> tensor<6x5xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%r, %b : tensor<6x4xf32>, tensor<4x5xf32>) outs(%5 : tensor<6x5xf32>) {
  ^bb0(%6: f32, %7: f32, %8: f32):
    %9 = math.fma %6, %7, %8 : f32
    linalg.yield %9 : f32
  } -> tensor<6x5xf32>
  %10 = tensor.empty() : tensor<6x4xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%r : tensor<6x4xf32>) outs(%10 : tensor<6x4xf32>) {
  ^bb0(%11: f32, %12: f32):
    %13 = arith.negf %11 : f32
    linalg.yield %13 : f32
  } -> tensor<6x4xf32>
  func.return %c, %n : tensor<6x5xf32>, tensor<6x4xf32>
}

// A reshape that another op reads too stays: its copy would be made anyway.
// CHECK-LABEL: func.func @other_reader
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} doc = "frame.reshape"}
// CHECK:         ins(%[[R]], %b : tensor<6x4xf32>, tensor<4x5xf32>)
// CHECK:         ins(%[[R]] : tensor<6x4xf32>)
