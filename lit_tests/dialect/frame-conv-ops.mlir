// The conv and pool families (frame_conv.py, frame_pool.py): round trip (custom and generic form)
// and the verifier's shape rules (each error case states its diagnostic with an
// expected-error annotation, checked by --verify-diagnostics). dilation, output_padding, ceil_mode and
// count_include_pad are optional: absent, they are torch's defaults (1, 0, false, true).
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @conv(%x: tensor<1x2x7x7xf32>, %w: tensor<3x2x3x3xf32>, %dy: tensor<1x3x3x3xf32>, %x1: tensor<1x2x7xf32>, %w1: tensor<3x2x3xf32>) -> (tensor<1x3x3x3xf32>, tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>, tensor<1x3x3xf32>) {
  %y = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %dx = frame.conv_grad_input %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  %dw = frame.conv_grad_weight %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>, tensor<1x3x3x3xf32>) -> tensor<3x2x3x3xf32>
  %y1 = frame.conv %x1, %w1 {stride = array<i64: 1>, padding = array<i64: 0>, groups = 1 : i64, dilation = array<i64: 2>} : (tensor<1x2x7xf32>, tensor<3x2x3xf32>) -> tensor<1x3x3xf32>
  func.return %y, %dx, %dw, %y1 : tensor<1x3x3x3xf32>, tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>, tensor<1x3x3xf32>
}
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %{{.*}} = frame.conv %{{.*}}, %{{.*}} {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.conv_grad_input %{{.*}}, %{{.*}} {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32>
// CHECK-NEXT:    %{{.*}} = frame.conv_grad_weight %{{.*}}, %{{.*}} {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>, tensor<1x3x3x3xf32>) -> tensor<3x2x3x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.conv %{{.*}}, %{{.*}} {stride = array<i64: 1>, padding = array<i64: 0>, groups = 1 : i64, dilation = array<i64: 2>} : (tensor<1x2x7xf32>, tensor<3x2x3xf32>) -> tensor<1x3x3xf32>
// GENERIC:       "frame.conv"(%{{.*}}, %{{.*}}) <{stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>}> : (tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>

// -----

func.func @conv_transpose(%x: tensor<1x4x3x3xf32>, %w: tensor<4x2x3x3xf32>, %x1: tensor<1x4x5xf32>, %w1: tensor<4x1x3xf32>) -> (tensor<1x2x6x6xf32>, tensor<1x2x14xf32>) {
  %y = frame.conv_transpose %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64, output_padding = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %y1 = frame.conv_transpose %x1, %w1 {stride = array<i64: 2>, padding = array<i64: 0>, groups = 2 : i64, dilation = array<i64: 2>, output_padding = array<i64: 1>} : (tensor<1x4x5xf32>, tensor<4x1x3xf32>) -> tensor<1x2x14xf32>
  func.return %y, %y1 : tensor<1x2x6x6xf32>, tensor<1x2x14xf32>
}
// CHECK-LABEL: func.func @conv_transpose
// CHECK-NEXT:    %{{.*}} = frame.conv_transpose %{{.*}}, %{{.*}} {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64, output_padding = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:    %{{.*}} = frame.conv_transpose %{{.*}}, %{{.*}} {stride = array<i64: 2>, padding = array<i64: 0>, groups = 2 : i64, dilation = array<i64: 2>, output_padding = array<i64: 1>} : (tensor<1x4x5xf32>, tensor<4x1x3xf32>) -> tensor<1x2x14xf32>
// GENERIC:       "frame.conv_transpose"(%{{.*}}, %{{.*}}) <{stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64, output_padding = array<i64: 1, 1>}>

// -----

func.func @pools(%x: tensor<1x1x6x6xf32>, %x5: tensor<1x1x5x5xf32>, %dy: tensor<1x1x3x3xf32>, %z: tensor<2x3x4x5xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>, tensor<1x1x5x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) {
  %a = frame.avg_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode, count_include_pad = false} : (tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32>
  %m = frame.max_pool %x5 {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %dm = frame.max_pool_grad %x5, %m, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  %da = frame.avg_pool_grad %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  %g = frame.global_avg_pool %z : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  %h = frame.global_max_pool %z : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  func.return %a, %m, %dm, %da, %g, %h : tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>, tensor<1x1x5x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}
// CHECK-LABEL: func.func @pools
// CHECK-NEXT:    %{{.*}} = frame.avg_pool %{{.*}} {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode, count_include_pad = false} : (tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    %{{.*}} = frame.max_pool %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.max_pool_grad %{{.*}}, %{{.*}}, %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.avg_pool_grad %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.global_avg_pool %{{.*}} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
// CHECK-NEXT:    %{{.*}} = frame.global_max_pool %{{.*}} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
// GENERIC:       "frame.avg_pool"(%{{.*}}) <{kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode, count_include_pad = false}> : (tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32>
// GENERIC:       "frame.global_max_pool"(%{{.*}}) : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>

// -----

func.func @conv_dilation_entries(%x: tensor<1x2x7x7xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32> {
  // expected-error@+1 {{frame.conv: expected 2 dilation entries, found 1}}
  %y = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2>} : (tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
  func.return %y : tensor<1x3x5x5xf32>
}

// -----

func.func @conv_dilation_too_wide(%x: tensor<1x2x6x6xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x1x1xf32> {
  // expected-error@+1 {{frame.conv: kernel 3 with stride 1, padding 0, dilation 3 does not fit a spatial size of 6}}
  %y = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 3, 3>} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x1x1xf32>
  func.return %y : tensor<1x3x1x1xf32>
}

// -----

func.func @conv_dilation_result(%x: tensor<1x2x7x7xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32> {
  // expected-error@+1 {{frame.conv: result type expected tensor<1x3x3x3xf32>, found tensor<1x3x5x5xf32>}}
  %y = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
  func.return %y : tensor<1x3x5x5xf32>
}

// -----

func.func @conv_grad_input_dilation(%dy: tensor<1x3x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32> {
  // expected-error@+1 {{frame.conv_grad_input: dy expected [1, 3, 3, 3], found [1, 3, 5, 5]}}
  %dx = frame.conv_grad_input %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x3x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  func.return %dx : tensor<1x2x7x7xf32>
}

// -----

func.func @conv_transpose_weight(%x: tensor<1x4x3x3xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  // expected-error@+1 {{frame.conv_transpose: weight dim 0 expected 4 (the input channels), found 3}}
  %y = frame.conv_transpose %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  func.return %y : tensor<1x2x5x5xf32>
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x4x3x3xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32> {
  // expected-error@+1 {{frame.conv_transpose: output_padding expected in [0, 2) (below stride 2 or dilation 1), found 2}}
  %y = frame.conv_transpose %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64, output_padding = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  func.return %y : tensor<1x2x7x7xf32>
}

// -----

func.func @conv_transpose_groups(%x: tensor<1x4x3xf32>, %w: tensor<4x2x3xf32>) -> tensor<1x6x5xf32> {
  // expected-error@+1 {{frame.conv_transpose: groups 3 must divide the input channels 4}}
  %y = frame.conv_transpose %x, %w {stride = array<i64: 1>, padding = array<i64: 0>, groups = 3 : i64} : (tensor<1x4x3xf32>, tensor<4x2x3xf32>) -> tensor<1x6x5xf32>
  func.return %y : tensor<1x6x5xf32>
}

// -----

func.func @conv_transpose_entries(%x: tensor<1x4x3x3xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  // expected-error@+1 {{frame.conv_transpose: expected 2 stride, padding, output_padding and dilation entries, found 2/2/1/2}}
  %y = frame.conv_transpose %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 1 : i64, output_padding = array<i64: 1>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  func.return %y : tensor<1x2x5x5xf32>
}

// -----

func.func @conv_transpose_too_small(%x: tensor<1x1x3xf32>, %w: tensor<1x1x2xf32>) -> tensor<1x1x1xf32> {
  // expected-error@+1 {{frame.conv_transpose: output size expected >= 1, found 0 (input size 3, kernel 2, stride 1, padding 2, dilation 1)}}
  %y = frame.conv_transpose %x, %w {stride = array<i64: 1>, padding = array<i64: 2>, groups = 1 : i64} : (tensor<1x1x3xf32>, tensor<1x1x2xf32>) -> tensor<1x1x1xf32>
  func.return %y : tensor<1x1x1xf32>
}

// -----

func.func @conv_transpose_result(%x: tensor<1x4x3x3xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  // expected-error@+1 {{frame.conv_transpose: result type expected tensor<1x2x6x6xf32>, found tensor<1x2x5x5xf32>}}
  %y = frame.conv_transpose %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64, output_padding = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  func.return %y : tensor<1x2x5x5xf32>
}

// -----

func.func @pool_ceil_kernel_too_big(%x: tensor<1x1x3xf32>) -> tensor<1x1x1xf32> {
  // expected-error@+1 {{frame.avg_pool: kernel 5, stride 1, padding 0 do not fit a spatial size of 3 (need kernel <= size + 2 * padding + stride - 1, with ceil_mode)}}
  %y = frame.avg_pool %x {kernel = array<i64: 5>, stride = array<i64: 1>, padding = array<i64: 0>, ceil_mode} : (tensor<1x1x3xf32>) -> tensor<1x1x1xf32>
  func.return %y : tensor<1x1x1xf32>
}

// -----

func.func @pool_ceil_result(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error@+1 {{frame.max_pool: result type expected tensor<1x1x3x3xf32>, found tensor<1x1x2x2xf32>}}
  %y = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}

// -----

func.func @max_pool_grad_ceil(%x: tensor<1x1x5x5xf32>, %y: tensor<1x1x2x2xf32>) -> tensor<1x1x5x5xf32> {
  // expected-error@+1 {{frame.max_pool_grad: y and dy expected [1, 1, 3, 3], found [1, 1, 2, 2] and [1, 1, 2, 2]}}
  %dx = frame.max_pool_grad %x, %y, %y {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x1x5x5xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x5x5xf32>
  func.return %dx : tensor<1x1x5x5xf32>
}

// -----

func.func @avg_pool_grad_ceil(%dy: tensor<1x1x2x2xf32>) -> tensor<1x1x5x5xf32> {
  // expected-error@+1 {{frame.avg_pool_grad: dy expected [1, 1, 3, 3], found [1, 1, 2, 2]}}
  %dx = frame.avg_pool_grad %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode, count_include_pad = false} : (tensor<1x1x2x2xf32>) -> tensor<1x1x5x5xf32>
  func.return %dx : tensor<1x1x5x5xf32>
}

// -----

func.func @global_pool_rank(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.global_avg_pool: expected an [N, C, *spatial] input with non-empty spatial dims, found [2, 3]}}
  %y = frame.global_avg_pool %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @global_pool_result(%x: tensor<2x3x4x5xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.global_max_pool: result type expected tensor<2x3x1x1xf32>, found tensor<2x3xf32>}}
  %y = frame.global_max_pool %x : (tensor<2x3x4x5xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
