// frame.scan (frame_scan.py): round trip (custom and generic form) and the verifier:
// the step function must exist and take (carry, rows..., invariants...) -> carry, and
// every sequence must have the length as its leading dim.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @cell(%h: tensor<2x3xf32>, %x: tensor<2x3xf32>, %w: tensor<3x3xf32>) -> tensor<2x3xf32> {
  %m = frame.matmul %h, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %a = frame.add %m, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = frame.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %t : tensor<2x3xf32>
}
func.func @acc(%h: tensor<3xf32>) -> tensor<3xf32> {
  func.return %h : tensor<3xf32>
}
func.func @rnn(%h0: tensor<2x3xf32>, %xs: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %v: tensor<3xf32>) -> tensor<4x2x3xf32> {
  %hs = frame.scan @cell(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>
  %rs = frame.scan @cell(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64, reverse} : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>
  %vs = frame.scan @acc(%v) {length = 7 : i64, num_sequences = 0 : i64} : (tensor<3xf32>) -> tensor<7x3xf32>
  func.return %rs : tensor<4x2x3xf32>
}
// CHECK-LABEL: func.func @rnn
// CHECK-NEXT:    %hs = frame.scan @cell(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %rs = frame.scan @cell(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64, reverse} : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %vs = frame.scan @acc(%v) {length = 7 : i64, num_sequences = 0 : i64} : (tensor<3xf32>) -> tensor<7x3xf32>
// GENERIC:       "frame.scan"(%h0, %xs, %w) <{body = @cell, length = 4 : i64, num_sequences = 1 : i64}> : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>
// GENERIC-NEXT:  "frame.scan"(%h0, %xs, %w) <{body = @cell, length = 4 : i64, num_sequences = 1 : i64, reverse}> : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>

// -----

func.func @missing_step(%h0: tensor<2x3xf32>, %xs: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error@+1 {{frame.scan: step function @nowhere not found}}
  %hs = frame.scan @nowhere(%h0, %xs) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  func.return %hs : tensor<4x2x3xf32>
}

// -----

func.func @cell(%h: tensor<2x3xf32>, %x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  func.return %h : tensor<2x3xf32>
}
func.func @wrong_step_signature(%h0: tensor<2x3xf32>, %xs: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error@+1 {{frame.scan: step function @cell type expected (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>, found (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>}}
  %hs = frame.scan @cell(%h0, %xs) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  func.return %hs : tensor<4x2x3xf32>
}

// -----

func.func @cell(%h: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  func.return %h : tensor<2x3xf32>
}
func.func @sequence_length(%h0: tensor<2x3xf32>, %xs: tensor<5x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error@+1 {{frame.scan: sequence operand #1 expected a leading dim of 4 (the length), found [5, 2, 3]}}
  %hs = frame.scan @cell(%h0, %xs) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<5x2x3xf32>) -> tensor<4x2x3xf32>
  func.return %hs : tensor<4x2x3xf32>
}

// -----

func.func @cell(%h: tensor<2x3xf32>) -> tensor<2x3xf32> {
  func.return %h : tensor<2x3xf32>
}
func.func @zero_length(%h0: tensor<2x3xf32>) -> tensor<0x2x3xf32> {
  // expected-error@+1 {{frame.scan: length expected >= 1, found 0}}
  %hs = frame.scan @cell(%h0) {length = 0 : i64, num_sequences = 0 : i64} : (tensor<2x3xf32>) -> tensor<0x2x3xf32>
  func.return %hs : tensor<0x2x3xf32>
}
