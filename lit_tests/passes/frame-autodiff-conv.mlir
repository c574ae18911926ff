// frame-autodiff on the conv and pool families (frame_conv.py, frame_pool.py): conv's gradient
// ops keep its dilation, conv_transpose's VJP is a conv and a conv weight gradient,
// the pool gradients keep ceil_mode / count_include_pad, and the global pools' VJPs
// are the pool gradient ops with the full window.
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s

func.func @conv(%x: tensor<1x2x7x7xf32> {frame.param = "x"}, %w: tensor<3x2x3x3xf32> {frame.param = "w"}) -> tensor<f32> {
  %y = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
  %l = frame.sum %y : (tensor<1x3x5x5xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @conv_grad
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.conv_grad_input %[[DY]], %w {frame.stage = "backward", stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x3x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32>
// CHECK-NEXT:    %[[DW:.*]] = frame.conv_grad_weight %x, %[[DY]] {frame.stage = "backward", stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>, tensor<1x3x5x5xf32>) -> tensor<3x2x3x3xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]], %[[DW]]

// -----

func.func @conv_transpose(%x: tensor<1x4x3xf32> {frame.param = "x"}, %w: tensor<4x2x3xf32> {frame.param = "w"}) -> tensor<f32> {
  %y = frame.conv_transpose %x, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 1 : i64, output_padding = array<i64: 1>} : (tensor<1x4x3xf32>, tensor<4x2x3xf32>) -> tensor<1x2x6xf32>
  %l = frame.sum %y : (tensor<1x2x6xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// The VJP of a transposed conv: a conv of dy (for x) and the weight gradient of that
// conv with x as its dy (for w).
// CHECK-LABEL: func.func @conv_transpose_grad
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.conv %[[DY]], %w {frame.stage = "backward", stride = array<i64: 2>, padding = array<i64: 1>, groups = 1 : i64} : (tensor<1x2x6xf32>, tensor<4x2x3xf32>) -> tensor<1x4x3xf32>
// CHECK-NEXT:    %[[DW:.*]] = frame.conv_grad_weight %[[DY]], %x {frame.stage = "backward", stride = array<i64: 2>, padding = array<i64: 1>, groups = 1 : i64} : (tensor<1x2x6xf32>, tensor<1x4x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]], %[[DW]]

// -----

func.func @conv_transpose_wide_output_padding(%x: tensor<1x2x5xf32> {frame.param = "x"}, %w: tensor<2x3x3xf32> {frame.param = "w"}) -> tensor<f32> {
  %y = frame.conv_transpose %x, %w {stride = array<i64: 1>, padding = array<i64: 1>, groups = 1 : i64, dilation = array<i64: 2>, output_padding = array<i64: 1>} : (tensor<1x2x5xf32>, tensor<2x3x3xf32>) -> tensor<1x3x8xf32>
  %l = frame.sum %y : (tensor<1x3x8xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// output_padding at the stride (below the dilation): the conv would see one output
// position more than x has, so dy is padded explicitly, cut to what x's positions
// read, and the convs run unpadded.
// CHECK-LABEL: func.func @conv_transpose_wide_output_padding_grad
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[P:.*]] = frame.pad %[[DY]] {frame.stage = "backward", low = array<i64: 0, 0, 1>, high = array<i64: 0, 0, 1>, value = 0.000000e+00 : f32} : (tensor<1x3x8xf32>) -> tensor<1x3x10xf32>
// CHECK-NEXT:    %[[S:.*]] = frame.slice %[[P]] {frame.stage = "backward", axis = 2 : i64, begin = 0 : i64, end = 9 : i64} : (tensor<1x3x10xf32>) -> tensor<1x3x9xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.conv %[[S]], %w {frame.stage = "backward", stride = array<i64: 1>, padding = array<i64: 0>, groups = 1 : i64, dilation = array<i64: 2>} : (tensor<1x3x9xf32>, tensor<2x3x3xf32>) -> tensor<1x2x5xf32>
// CHECK-NEXT:    %[[DW:.*]] = frame.conv_grad_weight %[[S]], %x {frame.stage = "backward", stride = array<i64: 1>, padding = array<i64: 0>, groups = 1 : i64, dilation = array<i64: 2>} : (tensor<1x3x9xf32>, tensor<1x2x5xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]], %[[DW]]

// -----

func.func @pools(%x: tensor<1x2x6x6xf32> {frame.param = "x"}) -> tensor<f32> {
  %a = frame.avg_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  %m = frame.max_pool %a {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %g = frame.global_max_pool %m : (tensor<1x2x2x2xf32>) -> tensor<1x2x1x1xf32>
  %h = frame.global_avg_pool %x : (tensor<1x2x6x6xf32>) -> tensor<1x2x1x1xf32>
  %s = frame.add %g, %h : (tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  %l = frame.sum %s : (tensor<1x2x1x1xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// The pool gradients keep ceil_mode and count_include_pad; the global pools' are the
// pool gradient ops with the full window (kernel = stride = the spatial size).
// CHECK-LABEL: func.func @pools_grad
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DH:.*]] = frame.avg_pool_grad %[[DY]] {frame.stage = "backward", kernel = array<i64: 6, 6>, stride = array<i64: 6, 6>, padding = array<i64: 0, 0>} : (tensor<1x2x1x1xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:    %[[DM:.*]] = frame.max_pool_grad %m, %g, %[[DY]] {frame.stage = "backward", kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %[[DA:.*]] = frame.max_pool_grad %a, %m, %[[DM]] {frame.stage = "backward", kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.avg_pool_grad %[[DA]] {frame.stage = "backward", kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode, count_include_pad = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:    frame.add %[[DH]], %[[DX]]
