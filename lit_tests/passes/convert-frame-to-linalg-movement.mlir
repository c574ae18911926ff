// convert-frame-to-linalg on the data-movement family (frame_movement.py): one copy
// generic per operand, the element placed by its maps. A side that covers only part
// of a dim at offset 0 indexes it as `d + u`, `u` a one-trip loop bounded by a
// shape-only tensor<1xf32> (linalg wants a bare loop dim to span its whole dim).
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %t = frame.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return %t : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @transpose
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2, d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.transpose"}

// -----

func.func @slice(%x: tensor<4x6xf32>) -> tensor<1x6xf32> {
  %s = frame.slice %x {axis = 0 : i64, begin = 0 : i64, end = 1 : i64} : (tensor<4x6xf32>) -> tensor<1x6xf32>
  func.return %s : tensor<1x6xf32>
}

// CHECK-LABEL: func.func @slice
// CHECK:         %[[U:.*]] = tensor.empty() : tensor<1xf32>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ((d1 + d0), d2)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>]
// CHECK-SAME:      ins(%{{.*}}, %[[U]] : tensor<4x6xf32>, tensor<1xf32>) outs(%{{.*}} : tensor<1x6xf32>)

// -----

func.func @slice_mid(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  %s = frame.slice %x {axis = 1 : i64, begin = 2 : i64, end = 5 : i64} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  func.return %s : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @slice_mid
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, (d1 + 2))>, affine_map<(d0, d1) -> (d0, d1)>]

// -----

func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %c = frame.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %c : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK:         %[[A:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d1, (d2 + d0))>]
// CHECK-SAME:      outs(%[[E]] : tensor<2x4xf32>)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, (d1 + 3))>]
// CHECK-SAME:      ins(%{{.*}} : tensor<2x1xf32>) outs(%[[A]] : tensor<2x4xf32>)

// -----

func.func @pad(%x: tensor<2x3xf32>) -> tensor<3x5xf32> {
  %p = frame.pad %x {low = array<i64: 0, 1>, high = array<i64: 1, 1>, value = -1.5 : f32} : (tensor<2x3xf32>) -> tensor<3x5xf32>
  func.return %p : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @pad
// CHECK:         %[[V:.*]] = arith.constant -1.500000e+00 : f32
// CHECK:         %[[F:.*]] = linalg.fill ins(%[[V]] : f32)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> ((d1 + d0), (d2 + 1))>]
// CHECK-SAME:      outs(%[[F]] : tensor<3x5xf32>)

// -----

func.func @reshape(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %r = frame.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @reshape
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (((((d0 * 6) + d1) floordiv 4) mod 3), ((((d0 * 6) + d1) floordiv 1) mod 4))>]
