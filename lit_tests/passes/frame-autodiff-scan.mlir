// frame-autodiff on frame.scan (frame_scan.py): the VJP is a reverse scan over
// @<step>_vjp, a function derived from the step with the VJP table. Its carry packs
// [d carry, d rows..., d invariants...] flattened (6 + 6 + 9 = 21 here); its
// sequences are the carry each step started from (%h0, then the result's rows but the
// last), the sequences, and the result's adjoint dy; the invariants are passed again.
// d init is the first packed row's d carry part, a sequence's adjoint its rows' part,
// an invariant's the sum of its part over the steps.
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s

func.func @cell(%h: tensor<2x3xf32>, %x: tensor<2x3xf32>, %w: tensor<3x3xf32>) -> tensor<2x3xf32> {
  %m = frame.matmul %h, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %a = frame.add %m, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = frame.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %t : tensor<2x3xf32>
}
func.func @rnn(%h0: tensor<2x3xf32> {frame.param = "h0"}, %xs: tensor<4x2x3xf32>, %w: tensor<3x3xf32> {frame.param = "w"}) -> tensor<f32> {
  %hs = frame.scan @cell(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>
  %l = frame.sum %hs : (tensor<4x2x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// The step's VJP: the step's body inlined on its arguments, then its reverse sweep
// seeded with d carry (the packed carry's first 6) + dy, its adjoints packed.
// CHECK-LABEL: func.func @cell_vjp(%packed: tensor<21xf32>, %a0: tensor<2x3xf32>, %a1: tensor<2x3xf32>, %dy: tensor<2x3xf32>, %a2: tensor<3x3xf32>) -> tensor<21xf32> {
// CHECK-NEXT:    %m = frame.matmul %a0, %a2 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %a = frame.add %m, %a1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %t = frame.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DC:.*]] = frame.slice %packed {axis = 0 : i64, begin = 0 : i64, end = 6 : i64} : (tensor<21xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %[[DC2:.*]] = frame.reshape %[[DC]] : (tensor<6xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[SEED:.*]] = frame.add %[[DC2]], %dy : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[PACK:.*]] = frame.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<6xf32>, tensor<6xf32>, tensor<9xf32>) -> tensor<21xf32>
// CHECK-NEXT:    func.return %[[PACK]] : tensor<21xf32>

// The forward function is left as it is.
// CHECK-LABEL: func.func @rnn(
// CHECK-NEXT:    %hs = frame.scan @cell(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64}

// CHECK-LABEL: func.func @rnn_grad(
// CHECK-SAME:    attributes {frame.grad_of = "rnn"} {
// CHECK-NEXT:    %[[HS:.*]] = frame.scan @cell(%h0, %xs, %w) {frame.stage = "forward", length = 4 : i64, num_sequences = 1 : i64}
// CHECK:         %[[DY:.*]] = frame.broadcast %{{.*}} {frame.stage = "backward"} : (tensor<f32>) -> tensor<4x2x3xf32>
// The carries the steps started from: h0, then rows 0..2 of the result.
// CHECK-NEXT:    %[[H0R:.*]] = frame.reshape %h0 {frame.stage = "backward"} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
// CHECK-NEXT:    %[[FIRST3:.*]] = frame.slice %[[HS]] {frame.stage = "backward", axis = 0 : i64, begin = 0 : i64, end = 3 : i64} : (tensor<4x2x3xf32>) -> tensor<3x2x3xf32>
// CHECK-NEXT:    %[[PREV:.*]] = frame.concat %[[H0R]], %[[FIRST3]] {frame.stage = "backward", axis = 0 : i64} : (tensor<1x2x3xf32>, tensor<3x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = frame.constant 0.000000e+00 {frame.stage = "backward"} : tensor<21xf32>
// CHECK-NEXT:    %[[P:.*]] = frame.scan @cell_vjp(%[[ZERO]], %[[PREV]], %xs, %[[DY]], %w) {frame.stage = "backward", length = 4 : i64, num_sequences = 3 : i64, reverse} : (tensor<21xf32>, tensor<4x2x3xf32>, tensor<4x2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x21xf32>
// d h0: row 0 (the last step run), its d carry part.
// CHECK-NEXT:    %[[ROW0:.*]] = frame.slice %[[P]] {frame.stage = "backward", axis = 0 : i64, begin = 0 : i64, end = 1 : i64} : (tensor<4x21xf32>) -> tensor<1x21xf32>
// CHECK-NEXT:    %[[DH0F:.*]] = frame.slice %[[ROW0]] {frame.stage = "backward", axis = 1 : i64, begin = 0 : i64, end = 6 : i64} : (tensor<1x21xf32>) -> tensor<1x6xf32>
// CHECK-NEXT:    %[[DH0:.*]] = frame.reshape %[[DH0F]] {frame.stage = "backward"} : (tensor<1x6xf32>) -> tensor<2x3xf32>
// d w: its part of every row, summed over the steps.
// CHECK-NEXT:    %[[DWS:.*]] = frame.slice %[[P]] {frame.stage = "backward", axis = 1 : i64, begin = 12 : i64, end = 21 : i64} : (tensor<4x21xf32>) -> tensor<4x9xf32>
// CHECK-NEXT:    %[[DWF:.*]] = frame.sum %[[DWS]] {frame.stage = "backward", axes = array<i64: 0>} : (tensor<4x9xf32>) -> tensor<9xf32>
// CHECK-NEXT:    %[[DW:.*]] = frame.reshape %[[DWF]] {frame.stage = "backward"} : (tensor<9xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DH0]], %[[DW]] : tensor<f32>, tensor<2x3xf32>, tensor<3x3xf32>

// -----

// A sequence that is a parameter: its adjoint is its part of every packed row.
func.func @acc(%h: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %s = frame.add %h, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
func.func @f(%h0: tensor<3xf32>, %xs: tensor<5x3xf32> {frame.param = "xs"}) -> tensor<f32> {
  %hs = frame.scan @acc(%h0, %xs) {length = 5 : i64, num_sequences = 1 : i64} : (tensor<3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  %l = frame.sum %hs : (tensor<5x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @acc_vjp(%packed: tensor<6xf32>, %a0: tensor<3xf32>, %a1: tensor<3xf32>, %dy: tensor<3xf32>) -> tensor<6xf32> {
// CHECK-LABEL: func.func @f_grad(
// CHECK:         %[[P:.*]] = frame.scan @acc_vjp(%{{.*}}, %{{.*}}, %xs, %{{.*}}) {frame.stage = "backward", length = 5 : i64, num_sequences = 3 : i64, reverse} : (tensor<6xf32>, tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x6xf32>
// CHECK-NEXT:    %[[DXSF:.*]] = frame.slice %[[P]] {frame.stage = "backward", axis = 1 : i64, begin = 3 : i64, end = 6 : i64} : (tensor<5x6xf32>) -> tensor<5x3xf32>
// CHECK-NEXT:    %[[DXS:.*]] = frame.reshape %[[DXSF]] {frame.stage = "backward"} : (tensor<5x3xf32>) -> tensor<5x3xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[DXS]] : tensor<f32>, tensor<5x3xf32>
