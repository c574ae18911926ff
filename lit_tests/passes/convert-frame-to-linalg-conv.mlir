// convert-frame-to-linalg on the conv and pool families (frame_conv.py, frame_pool.py). An
// undilated conv keeps its plain `out * stride + k` input map (what frame-gemm has
// always recognised); dilation scales k. A conv's input gradient at stride 1 on images
// of 16 x 16 or more (CONV_GRAD_MIN_PIXELS) is a conv of dy padded by K - 1 - p, the
// weight read in place at (o, c, j) with the input's taps flipped (x + K - 1 - j);
// otherwise, as conv_transpose here, a GEMM into columns, a col2im at
// `out * stride + k * dilation`, a crop of the padding.
// An avg pool whose windows differ in size (count_include_pad = false, or ceil_mode
// past the padding) divides by torch's divisor from index arithmetic; ceil_mode pads
// the input after each dim as far as the last window reaches. The global pools are
// reductions over the spatial dims.
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

func.func @conv(%x: tensor<1x2x6x6xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %y = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @conv
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, (d5 + d3), (d6 + d4))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d5, d6)>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"], doc = "frame.conv"}
// CHECK:           math.fma

// -----

func.func @conv_dilation(%x: tensor<1x2x7x6xf32>, %w: tensor<3x2x3x2xf32>) -> tensor<1x3x3x2xf32> {
  %y = frame.conv %x, %w {stride = array<i64: 1, 2>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 3>} : (tensor<1x2x7x6xf32>, tensor<3x2x3x2xf32>) -> tensor<1x3x3x2xf32>
  func.return %y : tensor<1x3x3x2xf32>
}

// CHECK-LABEL: func.func @conv_dilation
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, (d5 + (d3 * 2)), ((d6 * 2) + (d4 * 3)))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d5, d6)>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"], doc = "frame.conv"}
// CHECK:           math.fma

// -----

func.func @conv_grad_input_stride1(%dy: tensor<1x3x14x14xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x2x16x16xf32> {
  %dx = frame.conv_grad_input %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x14x14xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x16x16xf32>
  func.return %dx : tensor<1x2x16x16xf32>
}

// CHECK-LABEL: func.func @conv_grad_input_stride1
// CHECK:         %[[DYP:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 + 2), (d3 + 2))>], {{.*}} ins(%dy : tensor<1x3x14x14xf32>) outs(%{{.*}} : tensor<1x3x18x18xf32>)
// CHECK:         %dx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, ((d5 + 2) + (d3 * -1)), ((d6 + 2) + (d4 * -1)))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d2, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d5, d6)>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"], doc = "frame.conv_grad_input"} ins(%[[DYP]], %w : tensor<1x3x18x18xf32>, tensor<3x2x3x3xf32>) outs(%{{.*}} : tensor<1x2x16x16xf32>)
// CHECK:           math.fma
// CHECK-NOT:     linalg.generic
// CHECK:         func.return %dx

// -----

func.func @conv_transpose(%x: tensor<1x4x3xf32>, %w: tensor<4x2x3xf32>) -> tensor<1x2x6xf32> {
  %y = frame.conv_transpose %x, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 1 : i64, dilation = array<i64: 1>, output_padding = array<i64: 1>} : (tensor<1x4x3xf32>, tensor<4x2x3xf32>) -> tensor<1x2x6xf32>
  func.return %y : tensor<1x2x6xf32>
}

// CHECK-LABEL: func.func @conv_transpose
// CHECK:         %[[COL:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d4, d1, d2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"], doc = "frame.conv_transpose"} ins(%w, %x : tensor<4x2x3xf32>, tensor<1x4x3xf32>) outs(%{{.*}} : tensor<1x2x3x3xf32>)
// CHECK:           math.fma
// CHECK:         %[[PAD:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, ((d3 * 2) + d2))>], iterator_types = ["parallel", "parallel", "reduction", "reduction"], doc = "frame.conv_transpose"} ins(%[[COL]] : tensor<1x2x3x3xf32>) outs(%{{.*}} : tensor<1x2x8xf32>)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, (d2 + 1))>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], {{.*}} ins(%[[PAD]] : tensor<1x2x8xf32>) outs(%{{.*}} : tensor<1x2x6xf32>)

// -----

func.func @avg_pool_exclude_pad(%x: tensor<1x1x5xf32>) -> tensor<1x1x3xf32> {
  %y = frame.avg_pool %x {kernel = array<i64: 3>, stride = array<i64: 2>, padding = array<i64: 1>, count_include_pad = false} : (tensor<1x1x5xf32>) -> tensor<1x1x3xf32>
  func.return %y : tensor<1x1x3xf32>
}

// CHECK-LABEL: func.func @avg_pool_exclude_pad
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, ((d3 * 2) + d2))>, affine_map<(d0, d1, d2, d3) -> (d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>]
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]] : tensor<1x1x3xf32>)
// CHECK:           %[[I:.*]] = linalg.index 2 : index
// CHECK:           %[[START:.*]] = arith.subi
// CHECK:           %[[END:.*]] = arith.minsi
// CHECK:           %[[LO:.*]] = arith.maxsi %[[START]]
// CHECK:           %[[HI:.*]] = arith.minsi %[[END]]
// CHECK:           %[[N:.*]] = arith.subi %[[HI]], %[[LO]] : index
// CHECK:           arith.sitofp
// CHECK:           arith.divf

// -----

func.func @max_pool_ceil(%x: tensor<1x1x5xf32>) -> tensor<1x1x3xf32> {
  %y = frame.max_pool %x {kernel = array<i64: 2>, stride = array<i64: 2>, padding = array<i64: 0>, ceil_mode} : (tensor<1x1x5xf32>) -> tensor<1x1x3xf32>
  func.return %y : tensor<1x1x3xf32>
}

// The padding (after the input only: ceil_mode) is one strip of -inf -- u, the one
// strip's loop, bounded by the shape-only 1x1 operand -- before the copy of x; no
// fill of the whole padded tensor.
// CHECK-LABEL: func.func @max_pool_ceil
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x1x6xf32>
// CHECK:         %[[STRIP:.*]] = tensor.empty() : tensor<1x1xf32>
// CHECK:         %[[F:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, ((d3 + d2) + 5))>]
// CHECK-SAME:      ins(%[[STRIP]] : tensor<1x1xf32>) outs(%[[E]] : tensor<1x1x6xf32>)
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      linalg.yield %[[NEG]] : f32
// CHECK:         %[[XP:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0)>, affine_map<(d0, d1, d2, d3) -> (d1, d2, (d3 + d0))>]
// CHECK-SAME:      outs(%[[F]] : tensor<1x1x6xf32>)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, (d2 * 2))>, affine_map<(d0, d1, d2) -> (d0, d1, ((d2 * 2) + 1))>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.max_pool"} ins(%[[XP]], %[[XP]] : tensor<1x1x6xf32>, tensor<1x1x6xf32>)

// -----

func.func @global_pools(%x: tensor<2x3x4x5xf32>) -> (tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) {
  %a = frame.global_avg_pool %x : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  %m = frame.global_max_pool %x : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  func.return %a, %m : tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}

// CHECK-LABEL: func.func @global_pools
// CHECK:         %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"], doc = "frame.global_avg_pool"}
// CHECK:           arith.addf
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], {{.*}} ins(%[[S]] : tensor<2x3xf32>) outs(%{{.*}} : tensor<2x3x1x1xf32>)
// CHECK:           %[[C:.*]] = arith.constant 2.000000e+01 : f32
// CHECK:           arith.divf %{{.*}}, %[[C]] : f32
// CHECK:         %[[M:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"], doc = "frame.global_max_pool"}
// CHECK:           arith.cmpf ogt
// CHECK:           arith.cmpf uno
// CHECK:         linalg.generic {{.*}} ins(%[[M]] : tensor<2x3xf32>) outs(%{{.*}} : tensor<2x3x1x1xf32>)

// -----

// A depthwise weight gradient (groups = channels, one output channel each): partial
// sums per position of the last output dim, loops (o, c, kh, kw, n, oh, ow) with ow
// innermost and parallel (it vectorizes), then a sum over ow into dw.
func.func @dw_grad(%x: tensor<2x3x6x6xf32>, %dy: tensor<2x3x3x3xf32>) -> tensor<3x1x3x3xf32> {
  %g = frame.conv_grad_weight %x, %dy {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 3 : i64} : (tensor<2x3x6x6xf32>, tensor<2x3x3x3xf32>) -> tensor<3x1x3x3xf32>
  func.return %g : tensor<3x1x3x3xf32>
}

// CHECK-LABEL: func.func @dw_grad
// CHECK:         %[[XP:.*]] = linalg.generic {{.*}} ins(%x : tensor<2x3x6x6xf32>) outs(%{{.*}} : tensor<2x3x8x8xf32>)
// CHECK:         %[[P:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, (d0 + d1), ((d5 * 2) + d2), ((d6 * 2) + d3))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d6)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "parallel"], doc = "frame.conv_grad_weight"} ins(%[[XP]], %dy : tensor<2x3x8x8xf32>, tensor<2x3x3x3xf32>) outs(%{{.*}} : tensor<3x1x3x3x3xf32>)
// CHECK:           math.fma
// CHECK:         %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"], doc = "frame.conv_grad_weight"} ins(%[[P]] : tensor<3x1x3x3x3xf32>) outs(%{{.*}} : tensor<3x1x3x3xf32>)
// CHECK:           arith.addf
