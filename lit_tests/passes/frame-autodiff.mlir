// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-autodiff | filecheck %s
// Running the pass twice changes nothing: @f_grad exists, so @f is skipped.
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-autodiff,frame-autodiff | filecheck %s

// A two-layer MLP with a skip connection (%h is used twice), a parameter the
// loss does not depend on (%unused), a data input (%x) and a target (%t).
func.func @mlp(%x: tensor<8x4xf32>, %w1: tensor<4x8xf32> {frame.param = "fc1.weight"}, %b1: tensor<8x8xf32> {frame.param = "fc1.bias"}, %w2: tensor<8x8xf32> {frame.param = "fc2.weight"}, %unused: tensor<3x5xf32> {frame.param = "unused"}, %t: tensor<8x8xf32>) -> tensor<f32> {
  %0 = frame.matmul %x, %w1 : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %1 = frame.add %0, %b1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %h = frame.relu %1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %3 = frame.matmul %h, %w2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %4 = frame.add %3, %h : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %5 = frame.mse_loss %4, %t : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<f32>
  func.return %5 : tensor<f32>
}

// The original function is left unchanged.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:    -> tensor<f32> {
// CHECK:         %[[L:.*]] = frame.mse_loss
// CHECK-NEXT:    func.return %[[L]] : tensor<f32>
// CHECK-NEXT:  }

// @mlp_grad returns the loss then one gradient per parameter, in parameter order.
// CHECK-LABEL: func.func @mlp_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<8x4xf32>, %[[W1:[a-z0-9_]+]]: tensor<4x8xf32> {frame.param = "fc1.weight"}, %[[B1:[a-z0-9_]+]]: tensor<8x8xf32> {frame.param = "fc1.bias"}, %[[W2:[a-z0-9_]+]]: tensor<8x8xf32> {frame.param = "fc2.weight"}, %[[UNUSED:[a-z0-9_]+]]: tensor<3x5xf32> {frame.param = "unused"}, %[[T:[a-z0-9_]+]]: tensor<8x8xf32>)
// CHECK-SAME:    -> (tensor<f32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<3x5xf32>) attributes {frame.grad_of = "mlp"} {
// The forward ops, copied.
// CHECK-NEXT:    %[[MM1:.*]] = frame.matmul %[[X]], %[[W1]] {frame.stage = "forward"} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[Z1:.*]] = frame.add %[[MM1]], %[[B1]] {frame.stage = "forward"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[H:.*]] = frame.relu %[[Z1]] {frame.stage = "forward"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[MM2:.*]] = frame.matmul %[[H]], %[[W2]] {frame.stage = "forward"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[OUT:.*]] = frame.add %[[MM2]], %[[H]] {frame.stage = "forward"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[LOSS:.*]] = frame.mse_loss %[[OUT]], %[[T]] {frame.stage = "forward"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<f32>
// The backward pass seeds d loss = 1; no frame.neg: the target gets no gradient.
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<f32>
// CHECK-NEXT:    %[[DOUT:.*]] = frame.mse_loss_grad %[[OUT]], %[[T]], %[[ONE]] {frame.stage = "backward"} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
// frame.add passes its adjoint through; the matmul VJPs use the transpose flags
// (dA = dC @ B^T, dB = A^T @ dC), no frame.transpose is materialised.
// CHECK-NEXT:    %[[DH2:.*]] = frame.matmul %[[DOUT]], %[[W2]] {frame.stage = "backward", transpose_rhs} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[DW2:.*]] = frame.matmul %[[H]], %[[DOUT]] {frame.stage = "backward", transpose_lhs} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// %h has two uses: its adjoints are summed.
// CHECK-NEXT:    %[[DH:.*]] = frame.add %[[DOUT]], %[[DH2]] {frame.stage = "backward"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[DZ1:.*]] = frame.relu_grad %[[H]], %[[DH]] {frame.stage = "backward"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// Only d/d w1 for the first matmul: no `matmul %dz1, %w1 {transpose_rhs}` for the data input.
// CHECK-NEXT:    %[[DW1:.*]] = frame.matmul %[[X]], %[[DZ1]] {frame.stage = "backward", transpose_lhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// The unused parameter gets a zero gradient of its shape.
// CHECK-NEXT:    %[[DUNUSED:.*]] = frame.constant 0.000000e+00 {frame.layer = "unused", frame.stage = "backward"} : tensor<3x5xf32>
// d fc1.bias is the adjoint of %z1 itself.
// CHECK-NEXT:    func.return %[[LOSS]], %[[DW1]], %[[DZ1]], %[[DW2]], %[[DUNUSED]] : tensor<f32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<3x5xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  {{^}}}

// -----

// The other VJP rules: transpose, sub (only the active operand), mul, scale,
// neg, a matmul with both flags, and sum (whose VJP is broadcast).
func.func @rules(%a: tensor<4x8xf32> {frame.param = "a"}, %b: tensor<8x4xf32> {frame.param = "b"}, %c: tensor<8x4xf32>) -> tensor<f32> {
  %0 = frame.transpose %a : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = frame.sub %c, %0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = frame.mul %1, %b : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %3 = frame.scale %2 {factor = 3.0 : f32} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %4 = frame.neg %3 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %5 = frame.matmul %a, %4 {transpose_lhs, transpose_rhs} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  %6 = frame.sum %5 : (tensor<8x8xf32>) -> tensor<f32>
  func.return %6 : tensor<f32>
}

// CHECK-LABEL: func.func @rules_grad
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4x8xf32> {frame.param = "a"}, %[[B:[a-z0-9_]+]]: tensor<8x4xf32> {frame.param = "b"}, %[[C:[a-z0-9_]+]]: tensor<8x4xf32>)
// CHECK-SAME:    -> (tensor<f32>, tensor<4x8xf32>, tensor<8x4xf32>)
// CHECK:         %[[D1:.*]] = frame.sub %[[C]], %{{.*}}
// CHECK-NEXT:    %[[D2:.*]] = frame.mul %[[D1]], %[[B]]
// CHECK:         %[[D4:.*]] = frame.neg
// CHECK-NEXT:    %[[D5:.*]] = frame.matmul %[[A]], %[[D4]] {frame.stage = "forward", transpose_lhs, transpose_rhs}
// CHECK-NEXT:    %[[SUM:.*]] = frame.sum %[[D5]]
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<f32>
// CHECK-NEXT:    %[[G5:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<8x8xf32>
// C = A^T B^T: dA = B^T dC^T, dB = dC^T A^T.
// CHECK-NEXT:    %[[GA1:.*]] = frame.matmul %[[D4]], %[[G5]] {frame.stage = "backward", transpose_lhs, transpose_rhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[G4:.*]] = frame.matmul %[[G5]], %[[A]] {frame.stage = "backward", transpose_lhs, transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[G3:.*]] = frame.neg %[[G4]]
// CHECK-NEXT:    %[[G2:.*]] = frame.scale %[[G3]] {frame.stage = "backward", factor = 3.000000e+00 : f32}
// CHECK-NEXT:    %[[G1:.*]] = frame.mul %[[G2]], %[[B]]
// CHECK-NEXT:    %[[GB:.*]] = frame.mul %[[G2]], %[[D1]]
// %c is data: sub only emits the gradient of its second operand.
// CHECK-NEXT:    %[[G0:.*]] = frame.neg %[[G1]]
// CHECK-NEXT:    %[[GA2:.*]] = frame.transpose %[[G0]] {frame.stage = "backward"} : (tensor<8x4xf32>) -> tensor<4x8xf32>
// %a is used twice (transpose and matmul).
// CHECK-NEXT:    %[[GA:.*]] = frame.add %[[GA1]], %[[GA2]] {frame.stage = "backward"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[SUM]], %[[GA]], %[[GB]] : tensor<f32>, tensor<4x8xf32>, tensor<8x4xf32>

// -----

// A loss that depends on no parameter: every gradient is zero.
func.func @constant_loss(%x: tensor<4xf32>, %w: tensor<2x2xf32> {frame.param = "w"}) -> tensor<f32> {
  %0 = frame.sum %x : (tensor<4xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @constant_loss_grad
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[Z:.*]] = frame.constant 0.000000e+00 {frame.layer = "w", frame.stage = "backward"} : tensor<2x2xf32>
// CHECK-NEXT:    func.return %[[L]], %[[Z]] : tensor<f32>, tensor<2x2xf32>

// -----

// A function without frame.param arguments is not differentiated.
func.func @no_params(%x: tensor<4xf32>) -> tensor<f32> {
  %0 = frame.sum %x : (tensor<4xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @no_params
// CHECK:         func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  {{^}}}

// -----

func.func @no_rule(%x: tensor<8x8xf32>, %w: tensor<8x8xf32> {frame.param = "w"}, %t: tensor<8x8xf32>) -> tensor<f32> {
  // The location names the user's function, not the @no_rule_grad being built.
  // expected-error@+1 {{frame-autodiff at @no_rule: frame.relu_grad: no gradient rule for frame.relu_grad}}
  %0 = frame.relu_grad %x, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = frame.mse_loss %0, %t : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}

// -----

func.func @not_a_loss(%w: tensor<4xf32> {frame.param = "w"}) -> tensor<4xf32> {
  %0 = frame.neg %w : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{frame-autodiff at @not_a_loss: func.return: expected the loss to be a scalar (rank 0, or one element), found tensor<4xf32>}}
  func.return %0 : tensor<4xf32>
}


// -----

// Several results and frame.loss_index: the gradient function returns every result,
// then the gradients. A sum over chosen axes differentiates to a broadcast over them.
func.func @multi(%x: tensor<2x3xf32> {frame.param = "x"}) -> (tensor<2x3xf32>, tensor<f32>) attributes {frame.loss_index = 1 : i64} {
  %sq = frame.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %rows = frame.sum %sq {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %l = frame.sum %rows : (tensor<2xf32>) -> tensor<f32>
  func.return %sq, %l : tensor<2x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @multi_grad
// CHECK-SAME:    -> (tensor<2x3xf32>, tensor<f32>, tensor<2x3xf32>)
// CHECK:         %[[SQ:[a-z0-9_]+]] = frame.mul
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = frame.sum %[[SQ]]
// CHECK-NEXT:    %[[L:[a-z0-9_]+]] = frame.sum %[[R]]
// CHECK:         %[[ONE:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<f32>
// CHECK-NEXT:    %[[GROWS:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[GSQ:.*]] = frame.broadcast %[[GROWS]] {frame.stage = "backward", axes = array<i64: 1>} : (tensor<2xf32>) -> tensor<2x3xf32>
// CHECK:         func.return %[[SQ]], %[[L]], %{{.*}} : tensor<2x3xf32>, tensor<f32>, tensor<2x3xf32>

// -----

// Autodiff needs the shapes: unranked values mean shape inference has not run.
func.func @unranked(%x: tensor<2x4xf32>, %w: tensor<4x3xf32> {frame.param = "w"}, %t: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error@+1 {{frame-autodiff at @unranked: frame.matmul: expected static shapes, found tensor<*xf32> (run frame-shape-inference first)}}
  %0 = frame.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<*xf32>
  %1 = frame.mse_loss %0, %t : (tensor<*xf32>, tensor<2x3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}


// -----

// A region can read a parameter without taking it as an operand, which the
// activity analysis cannot see: rejected rather than given a zero gradient.
func.func @region(%w: tensor<4xf32> {frame.param = "w"}) -> tensor<f32> {
  // expected-error@+1 {{frame-autodiff at @region: scf.execute_region: an op with regions cannot be differentiated}}
  %0 = scf.execute_region -> tensor<f32> {
    %1 = frame.sum %w : (tensor<4xf32>) -> tensor<f32>
    scf.yield %1 : tensor<f32>
  }
  func.return %0 : tensor<f32>
}


// -----

// A user function that already takes the gradient's name is an error, not a clash.
// expected-error@+1 {{frame-autodiff at @taken: cannot add @taken_grad: the module already has a function of that name that is not its gradient}}
func.func @taken(%w: tensor<4xf32> {frame.param = "w"}) -> tensor<f32> {
  %0 = frame.sum %w : (tensor<4xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}
func.func @taken_grad() {
  func.return
}


// -----

// conv, weight as parameter: only d w = conv_grad_weight(x, dy), with the forward
// stride, padding and groups; no conv_grad_input for the data input.
func.func @conv_w(%x: tensor<1x2x5xf32>, %w: tensor<4x1x3xf32> {frame.param = "w"}) -> tensor<f32> {
  %y = frame.conv %x, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x2x5xf32>, tensor<4x1x3xf32>) -> tensor<1x4x3xf32>
  %l = frame.sum %y : (tensor<1x4x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @conv_w_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<1x2x5xf32>, %[[W:[a-z0-9_]+]]: tensor<4x1x3xf32> {frame.param = "w"})
// CHECK-SAME:    -> (tensor<f32>, tensor<4x1x3xf32>)
// CHECK-NEXT:    %{{.*}} = frame.conv %[[X]], %[[W]] {frame.stage = "forward"
// CHECK-NEXT:    %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<f32>
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<1x4x3xf32>
// CHECK-NEXT:    %[[DW:.*]] = frame.conv_grad_weight %[[X]], %[[DY]] {frame.stage = "backward", stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x2x5xf32>, tensor<1x4x3xf32>) -> tensor<4x1x3xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DW]] : tensor<f32>, tensor<4x1x3xf32>

// -----

// conv, input as parameter: d x = conv_grad_input(dy, w), the input's type.
func.func @conv_x(%x: tensor<1x2x5xf32> {frame.param = "x"}, %w: tensor<4x1x3xf32>) -> tensor<f32> {
  %y = frame.conv %x, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x2x5xf32>, tensor<4x1x3xf32>) -> tensor<1x4x3xf32>
  %l = frame.sum %y : (tensor<1x4x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @conv_x_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<1x2x5xf32> {frame.param = "x"}, %[[W:[a-z0-9_]+]]: tensor<4x1x3xf32>)
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]]
// CHECK-NEXT:    %[[DX:.*]] = frame.conv_grad_input %[[DY]], %[[W]] {frame.stage = "backward", stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x3xf32>, tensor<4x1x3xf32>) -> tensor<1x2x5xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<1x2x5xf32>

// -----

// max_pool: max_pool_grad takes the forward input, the forward result and dy,
// with the forward kernel, stride and padding.
func.func @pool_max(%x: tensor<1x1x4x4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.max_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  %l = frame.sum %y : (tensor<1x1x2x2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @pool_max_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<1x1x4x4xf32> {frame.param = "x"})
// CHECK-NEXT:    %[[Y:.*]] = frame.max_pool %[[X]] {frame.stage = "forward"
// CHECK-NEXT:    %[[L:.*]] = frame.sum %[[Y]]
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]]
// CHECK-NEXT:    %[[DX:.*]] = frame.max_pool_grad %[[X]], %[[Y]], %[[DY]] {frame.stage = "backward", kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<1x1x4x4xf32>

// -----

// avg_pool: avg_pool_grad needs only dy (and the input's type).
func.func @pool_avg(%x: tensor<1x1x4x4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.avg_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  %l = frame.sum %y : (tensor<1x1x3x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @pool_avg_grad
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<1x1x3x3xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.avg_pool_grad %[[DY]] {frame.stage = "backward", kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<1x1x4x4xf32>

// -----

// selective_scan with only a as a parameter: one selective_scan_grad {wrt = 1}
// taking all five forward operands and dy; none for x, b, c, d.
func.func @scan(%x: tensor<2x3xf32>, %a: tensor<2x3xf32> {frame.param = "a"}, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>, %d: tensor<2x3xf32>) -> tensor<f32> {
  %y = frame.selective_scan %x, %a, %b, %c, %d : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = frame.sum %y : (tensor<2x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @scan_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3xf32>, %[[A:[a-z0-9_]+]]: tensor<2x3xf32> {frame.param = "a"}, %[[B:[a-z0-9_]+]]: tensor<2x3xf32>, %[[C:[a-z0-9_]+]]: tensor<2x3xf32>, %[[D:[a-z0-9_]+]]: tensor<2x3xf32>)
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]]
// CHECK-NEXT:    %[[DA:.*]] = frame.selective_scan_grad %[[X]], %[[A]], %[[B]], %[[C]], %[[D]], %[[DY]] {frame.stage = "backward", wrt = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DA]] : tensor<f32>, tensor<2x3xf32>

// -----

// scatter_add: the updates' adjoint is gather_rows of dy by the same indices;
// the integer indices get none.
func.func @scatter(%u: tensor<3x2xf32> {frame.param = "u"}, %i: tensor<3xi64>) -> tensor<f32> {
  %o = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
  %l = frame.sum %o : (tensor<4x2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @scatter_grad
// CHECK-SAME:    (%[[U:[a-z0-9_]+]]: tensor<3x2xf32> {frame.param = "u"}, %[[I:[a-z0-9_]+]]: tensor<3xi64>)
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DO:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[DU:.*]] = frame.gather_rows %[[DO]], %[[I]] {frame.stage = "backward"} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DU]] : tensor<f32>, tensor<3x2xf32>

// -----

// sigmoid: dy * (s * (1 - s)) from the forward result s, with 1 as a constant
// of s's type.
func.func @sigmoid(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %s = frame.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %s : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @sigmoid_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK-NEXT:    %[[S:.*]] = frame.sigmoid %[[X]] {frame.stage = "forward"}
// CHECK-NEXT:    %[[L:.*]] = frame.sum %[[S]]
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<f32>
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]]
// CHECK-NEXT:    %[[ONES:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<4xf32>
// CHECK-NEXT:    %[[OMS:.*]] = frame.sub %[[ONES]], %[[S]] {frame.stage = "backward"}
// CHECK-NEXT:    %[[SLOPE:.*]] = frame.mul %[[S]], %[[OMS]] {frame.stage = "backward"}
// CHECK-NEXT:    %[[DX:.*]] = frame.mul %[[DY]], %[[SLOPE]] {frame.stage = "backward"}
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<4xf32>

// -----

// heaviside_surrogate: the surrogate gradient of the forward input, same alpha.
func.func @spike(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %s = frame.heaviside_surrogate %x {alpha = 2.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %s : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @spike_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]]
// CHECK-NEXT:    %[[DX:.*]] = frame.heaviside_surrogate_grad %[[X]], %[[DY]] {frame.stage = "backward", alpha = 2.000000e+00 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<4xf32>

// -----

// reshape: dy reshaped back to the input's type.
func.func @reshape(%x: tensor<2x3xf32> {frame.param = "x"}) -> tensor<f32> {
  %r = frame.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %l = frame.sum %r : (tensor<3x2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @reshape_grad
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.reshape %[[DY]] {frame.stage = "backward"} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<2x3xf32>

// -----

// sum and broadcast over chosen axes are each other's VJP, with the same axes:
// broadcast {axes = [1]} differentiates to sum {axes = [1]}, and sum {axes = [0]}
// to broadcast {axes = [0]} back to the input's type.
func.func @axes(%x: tensor<2x3xf32> {frame.param = "x"}) -> tensor<f32> {
  %r = frame.sum %x {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  %b = frame.broadcast %r {axes = array<i64: 1>} : (tensor<3xf32>) -> tensor<3x4xf32>
  %l = frame.sum %b : (tensor<3x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @axes_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3xf32> {frame.param = "x"})
// CHECK-NEXT:    %[[R:.*]] = frame.sum %[[X]] {frame.stage = "forward", axes = array<i64: 0>}
// CHECK-NEXT:    %[[B:.*]] = frame.broadcast %[[R]] {frame.stage = "forward", axes = array<i64: 1>}
// CHECK-NEXT:    %[[L:.*]] = frame.sum %[[B]] {frame.stage = "forward"}
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DB:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[DR:.*]] = frame.sum %[[DB]] {frame.stage = "backward", axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.broadcast %[[DR]] {frame.stage = "backward", axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<2x3xf32>

// -----

// transpose: dy transposed back.
func.func @transpose(%x: tensor<2x3xf32> {frame.param = "x"}) -> tensor<f32> {
  %t = frame.transpose %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %l = frame.sum %t : (tensor<3x2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @transpose_grad
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DT:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.transpose %[[DT]] {frame.stage = "backward"} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<2x3xf32>

// -----

// mul with the parameter on the right: d rhs = dy * lhs, and no product for the
// data operand.
func.func @mul(%x: tensor<4xf32> {frame.param = "x"}, %y: tensor<4xf32>) -> tensor<f32> {
  %m = frame.mul %y, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %m : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @mul_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"}, %[[Y:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DM:.*]] = frame.broadcast %[[ONE]]
// CHECK-NEXT:    %[[DX:.*]] = frame.mul %[[DM]], %[[Y]] {frame.stage = "backward"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DX]] : tensor<f32>, tensor<4xf32>

// -----

// gather_rows: the source's adjoint is scatter_add(dy, indices) into the source's
// shape (rows gathered twice accumulate); the integer indices get none.
func.func @gather(%s: tensor<4x2xf32> {frame.param = "s"}, %i: tensor<3xi64>) -> tensor<f32> {
  %g = frame.gather_rows %s, %i : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  %l = frame.sum %g : (tensor<3x2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @gather_grad
// CHECK-SAME:    (%[[S:[a-z0-9_]+]]: tensor<4x2xf32> {frame.param = "s"}, %[[I:[a-z0-9_]+]]: tensor<3xi64>)
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]] {frame.stage = "backward"} : (tensor<f32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[DS:.*]] = frame.scatter_add %[[DY]], %[[I]] {frame.stage = "backward"} : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DS]] : tensor<f32>, tensor<4x2xf32>

// -----

// update: the result is the value, so its adjoint is dy; the destination's old
// contents do not reach the result, so the destination gets none (a zero gradient).
func.func @update(%p: tensor<4xf32> {frame.param = "p"}, %v: tensor<4xf32> {frame.param = "v"}) -> tensor<f32> {
  %u = frame.update %p, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %u : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @update_grad
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "p"}, %[[V:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "v"})
// CHECK:         %[[L:.*]] = frame.sum
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00
// CHECK-NEXT:    %[[DY:.*]] = frame.broadcast %[[ONE]]
// CHECK-NEXT:    %[[DP:.*]] = frame.constant 0.000000e+00 {frame.layer = "p", frame.stage = "backward"} : tensor<4xf32>
// CHECK-NEXT:    func.return %[[L]], %[[DP]], %[[DY]] : tensor<f32>, tensor<4xf32>, tensor<4xf32>
