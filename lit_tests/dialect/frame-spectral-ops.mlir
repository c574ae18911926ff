// The spectral family (frame_spectral.py): round trip (custom and generic form) and
// the verifier's shape rules.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @ops(%x: tensor<2x3x8xf32>, %o: tensor<4x7xf32>) -> (tensor<2x3x8xf32>, tensor<4x4x2xf32>) {
  %z = frame.rfft %x : (tensor<2x3x8xf32>) -> tensor<2x3x5x2xf32>
  %y = frame.irfft %z {n = 8 : i64} : (tensor<2x3x5x2xf32>) -> tensor<2x3x8xf32>
  %w = frame.irfft %z {n = 9 : i64} : (tensor<2x3x5x2xf32>) -> tensor<2x3x9xf32>
  %dx = frame.rfft_grad %z {n = 8 : i64} : (tensor<2x3x5x2xf32>) -> tensor<2x3x8xf32>
  %dz = frame.irfft_grad %o : (tensor<4x7xf32>) -> tensor<4x4x2xf32>
  func.return %dx, %dz : tensor<2x3x8xf32>, tensor<4x4x2xf32>
}
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %{{.*}} = frame.rfft %{{.*}} : (tensor<2x3x8xf32>) -> tensor<2x3x5x2xf32>
// CHECK-NEXT:    %{{.*}} = frame.irfft %{{.*}} {n = 8 : i64} : (tensor<2x3x5x2xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    %{{.*}} = frame.irfft %{{.*}} {n = 9 : i64} : (tensor<2x3x5x2xf32>) -> tensor<2x3x9xf32>
// CHECK-NEXT:    %{{.*}} = frame.rfft_grad %{{.*}} {n = 8 : i64} : (tensor<2x3x5x2xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    %{{.*}} = frame.irfft_grad %{{.*}} : (tensor<4x7xf32>) -> tensor<4x4x2xf32>
// GENERIC:       "frame.rfft"(%{{.*}}) : (tensor<2x3x8xf32>) -> tensor<2x3x5x2xf32>
// GENERIC:       "frame.irfft"(%{{.*}}) <{n = 8 : i64}> : (tensor<2x3x5x2xf32>) -> tensor<2x3x8xf32>
// GENERIC:       "frame.rfft_grad"(%{{.*}}) <{n = 8 : i64}>
// GENERIC:       "frame.irfft_grad"(%{{.*}}) : (tensor<4x7xf32>) -> tensor<4x4x2xf32>

// -----

func.func @short_signal(%x: tensor<3x1xf32>) -> tensor<3x1x2xf32> {
  // expected-error@+1 {{frame.rfft: last dim (the signal length n) expected >= 2, found 1 in [3, 1]}}
  %z = frame.rfft %x : (tensor<3x1xf32>) -> tensor<3x1x2xf32>
  func.return %z : tensor<3x1x2xf32>
}

// -----

func.func @rfft_type(%x: tensor<3x8xf32>) -> tensor<3x8x2xf32> {
  // expected-error@+1 {{frame.rfft: result type expected tensor<3x5x2xf32>, found tensor<3x8x2xf32>}}
  %z = frame.rfft %x : (tensor<3x8xf32>) -> tensor<3x8x2xf32>
  func.return %z : tensor<3x8x2xf32>
}

// -----

func.func @bins(%z: tensor<3x4x2xf32>) -> tensor<3x8xf32> {
  // expected-error@+1 {{frame.irfft: bins (dim 1) expected 5 (n // 2 + 1 for n = 8), found 4 in [3, 4, 2]}}
  %x = frame.irfft %z {n = 8 : i64} : (tensor<3x4x2xf32>) -> tensor<3x8xf32>
  func.return %x : tensor<3x8xf32>
}

// -----

func.func @pairs(%z: tensor<3x4xf32>) -> tensor<3x6xf32> {
  // expected-error@+1 {{frame.irfft: input expected [..., 4, 2] ((re, im) in the last dim), found [3, 4]}}
  %x = frame.irfft %z {n = 6 : i64} : (tensor<3x4xf32>) -> tensor<3x6xf32>
  func.return %x : tensor<3x6xf32>
}

// -----

func.func @n(%z: tensor<1x2xf32>) -> tensor<1xf32> {
  // expected-error@+1 {{frame.irfft: n expected >= 2, found 1}}
  %x = frame.irfft %z {n = 1 : i64} : (tensor<1x2xf32>) -> tensor<1xf32>
  func.return %x : tensor<1xf32>
}

// -----

func.func @f16(%x: tensor<8xf16>) -> tensor<5x2xf16> {
  // expected-error@+1 {{frame.rfft: f32 only: operand expected a tensor of f32, found tensor<8xf16>}}
  %z = frame.rfft %x : (tensor<8xf16>) -> tensor<5x2xf16>
  func.return %z : tensor<5x2xf16>
}

// -----

func.func @grad_bins(%z: tensor<2x2xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{frame.rfft_grad: bins (dim 0) expected 3 (n // 2 + 1 for n = 5), found 2 in [2, 2]}}
  %x = frame.rfft_grad %z {n = 5 : i64} : (tensor<2x2xf32>) -> tensor<5xf32>
  func.return %x : tensor<5xf32>
}
