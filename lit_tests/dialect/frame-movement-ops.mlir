// The data-movement family (frame_movement.py): round trip (custom and generic form)
// and the verifier's shape rules.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @ops(%x: tensor<2x3x4xf32>, %m: tensor<2x3xf32>) -> tensor<2x8x3xf32> {
  %t = frame.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %r = frame.transpose %m : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %s = frame.slice %t {axis = 1 : i64, begin = 1 : i64, end = 3 : i64} : (tensor<2x4x3xf32>) -> tensor<2x2x3xf32>
  %p = frame.pad %s {low = array<i64: 0, 1, 0>, high = array<i64: 0, 1, 0>, value = 0.0 : f32} : (tensor<2x2x3xf32>) -> tensor<2x4x3xf32>
  %c = frame.concat %t, %p {axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x8x3xf32>
  func.return %c : tensor<2x8x3xf32>
}
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %{{.*}} = frame.transpose %{{.*}} {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.transpose %{{.*}} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %{{.*}} = frame.slice %{{.*}} {axis = 1 : i64, begin = 1 : i64, end = 3 : i64} : (tensor<2x4x3xf32>) -> tensor<2x2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.pad %{{.*}} {low = array<i64: 0, 1, 0>, high = array<i64: 0, 1, 0>, value = 0.000000e+00 : f32} : (tensor<2x2x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x8x3xf32>
// GENERIC:       "frame.transpose"(%{{.*}}) <{perm = array<i64: 0, 2, 1>}> : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// GENERIC:       "frame.concat"(%{{.*}}, %{{.*}}) <{axis = 1 : i64}>

// -----

func.func @bad_perm(%x: tensor<2x3x4xf32>) -> tensor<2x4x3xf32> {
  // expected-error@+1 {{frame.transpose: perm expected a permutation of 0..2 for a rank-3 operand, found [0, 2, 2]}}
  %t = frame.transpose %x {perm = array<i64: 0, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  func.return %t : tensor<2x4x3xf32>
}

// -----

func.func @bad_transpose_type(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error@+1 {{frame.transpose: result type expected tensor<2x4x3xf32>, found tensor<2x3x4xf32>}}
  %t = frame.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %t : tensor<2x3x4xf32>
}

// -----

func.func @bad_slice(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{frame.slice: bounds expected 0 <= begin <= end <= 6 (dim 1 of [4, 6]), found begin 4, end 7}}
  %s = frame.slice %x {axis = 1 : i64, begin = 4 : i64, end = 7 : i64} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  func.return %s : tensor<4x3xf32>
}

// -----

func.func @bad_slice_axis(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{frame.slice: axis expected in [0, 2) for a rank-2 operand, found 2}}
  %s = frame.slice %x {axis = 2 : i64, begin = 0 : i64, end = 3 : i64} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  func.return %s : tensor<4x3xf32>
}

// -----

func.func @bad_concat(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{frame.concat: operand #1 shape expected [*, 3] (operand #0's dims off axis 0), found [2, 4]}}
  %c = frame.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return %c : tensor<4x3xf32>
}

// -----

func.func @bad_pad(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.pad: low expected 2 non-negative entries (one per dim of [2, 3]), found [0, -1]}}
  %p = frame.pad %x {low = array<i64: 0, -1>, high = array<i64: 0, 1>, value = 0.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %p : tensor<2x3xf32>
}
