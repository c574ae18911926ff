// One case per frame verifier rule, each chunk with the diagnostic it expects, at
// its line, as an expected-error annotation: --verify-diagnostics fails on any
// diagnostic not expected there and on any expectation not met. (The column of a
// verifier error is checked in lit_tests/tools/frame-opt.test.)
// RUN: frame-opt %s --split-input-file --verify-diagnostics

func.func @add_shape(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error@+1 {{frame.add: operands [4, 8] and [8, 4] do not broadcast}}
  %0 = frame.add %a, %b : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @mul_rank(%a: tensor<4x8xf32>, %b: tensor<32xf32>) {
  // expected-error@+1 {{frame.mul: operands [4, 8] and [32] do not broadcast}}
  %0 = frame.mul %a, %b : (tensor<4x8xf32>, tensor<32xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @relu_grad_shape(%x: tensor<4x8xf32>, %dy: tensor<4x4xf32>) {
  // expected-error@+1 {{frame.relu_grad: operand shapes must match (no broadcasting in v0): expected [4, 8], found [4, 4]}}
  %0 = frame.relu_grad %x, %dy : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+1 {{frame.matmul: contraction dimension mismatch: expected rhs dim 8 (the lhs's), found 4}}
  %0 = frame.matmul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// The transpose flags decide which dims are contracted: here lhs^T gives 4, rhs^T gives 8.
func.func @matmul_contraction_transposed(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+1 {{frame.matmul: contraction dimension mismatch: expected rhs dim 4 (the lhs's), found 8}}
  %0 = frame.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @matmul_rank(%a: tensor<4xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+1 {{frame.matmul: expected operands of one rank >= 2 (matrices, or batches of them), found [4] and [4, 8]}}
  %0 = frame.matmul %a, %b : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error@+1 {{frame.matmul: batch dims must match (no broadcasting): expected [2] (the lhs's), found [3]}}
  %0 = frame.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  func.return
}

// -----

func.func @mse_target(%p: tensor<8x1xf32>, %t: tensor<8x2xf32>) {
  // expected-error@+1 {{frame.mse_loss: target shape expected [8, 1], found [8, 2]}}
  %0 = frame.mse_loss %p, %t : (tensor<8x1xf32>, tensor<8x2xf32>) -> tensor<f32>
  func.return
}

// -----

func.func @mse_grad_target(%p: tensor<8x1xf32>, %t: tensor<1x8xf32>, %d: tensor<f32>) {
  // expected-error@+1 {{frame.mse_loss_grad: target shape expected [8, 1], found [1, 8]}}
  %0 = frame.mse_loss_grad %p, %t, %d : (tensor<8x1xf32>, tensor<1x8xf32>, tensor<f32>) -> tensor<8x1xf32>
  func.return
}

// -----

func.func @mse_grad_dloss(%p: tensor<8x1xf32>, %t: tensor<8x1xf32>, %d: tensor<1xf32>) {
  // expected-error@+1 {{frame.mse_loss_grad: dloss expected a 0-d tensor, found [1]}}
  %0 = frame.mse_loss_grad %p, %t, %d : (tensor<8x1xf32>, tensor<8x1xf32>, tensor<1xf32>) -> tensor<8x1xf32>
  func.return
}

// -----

func.func @sgd_grad(%w: tensor<4x8xf32>, %g: tensor<8x4xf32>) {
  // expected-error@+1 {{frame.sgd_update: gradient shape expected [4, 8], found [8, 4]}}
  %0 = frame.sgd_update %w, %g {lr = 0.05 : f32} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @update_shape(%w: tensor<4x8xf32>, %v: tensor<8x4xf32>) {
  // expected-error@+1 {{frame.update: value shape expected [4, 8] (the destination's), found [8, 4]}}
  %0 = frame.update %w, %v : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @update_type(%w: tensor<4xf32>, %v: tensor<4xf16>) {
  // expected-error@+1 {{frame.update: operand #1 must be a tensor of f32 (the result's element type), found tensor<4xf16>}}
  %0 = frame.update %w, %v : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

func.func @transpose_rank3(%a: tensor<2x3x4xf32>) {
  // expected-error@+1 {{frame.transpose: perm expected a permutation of 0..2 for a rank-3 operand, found [1, 0]}}
  %0 = frame.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  func.return
}

// -----

func.func @broadcast_operand(%a: tensor<2xf32>) {
  // expected-error@+1 {{frame.broadcast: operand expected [] (the result without axes [0, 1]), found [2]}}
  %0 = frame.broadcast %a : (tensor<2xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @operand_f64(%a: tensor<4xf64>, %b: tensor<4xf32>) {
  // expected-error@+1 {{frame.add: operand #0 must be a tensor of f32 (the result's element type), found tensor<4xf64>}}
  %0 = frame.add %a, %b : (tensor<4xf64>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @operand_i32(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error@+1 {{frame.relu_grad: operand #1 must be a tensor of f32 (the result's element type), found tensor<4xi32>}}
  %0 = frame.relu_grad %a, %b : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return
}

// -----

// f16 is a frame element type, but operands and result share one.
func.func @result_f16(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.neg: operand #0 must be a tensor of f16 (the result's element type), found tensor<4xf32>}}
  %0 = frame.neg %a : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

func.func @constant_f64() {
  // expected-error@+1 {{frame.constant: result must be a tensor of f32, f16 or bf16, found tensor<2xf64>}}
  %0 = frame.constant 1.0 : tensor<2xf64>
  func.return
}

// -----

// Operands must be tensors at all (the IRDL constraint, before the frame verifier).
func.func @operand_scalar(%a: f32) {
  // expected-error@+1 {{Unexpected attribute f32}}
  %0 = frame.neg %a : (f32) -> tensor<4xf32>
  func.return
}
// This diagnostic comes alone (no module print) and does not name the op.

// -----

func.func @add_result_type(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+1 {{frame.add: result type expected tensor<4x8xf32>, found tensor<8x4xf32>}}
  %0 = frame.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @matmul_result_type(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error@+1 {{frame.matmul: result type expected tensor<4x2xf32>, found tensor<4x8xf32>}}
  %0 = frame.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @transpose_result_type(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{frame.transpose: result type expected tensor<8x4xf32>, found tensor<4x8xf32>}}
  %0 = frame.transpose %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @sum_result_type(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{frame.sum: result type expected tensor<f32>, found tensor<1xf32>}}
  %0 = frame.sum %a : (tensor<4x8xf32>) -> tensor<1xf32>
  func.return
}

// -----

func.func @mse_result_type(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{frame.mse_loss: result type expected tensor<f32>, found tensor<4x8xf32>}}
  %0 = frame.mse_loss %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @scale_without_factor(%a: tensor<4xf32>) {
  // expected-error@+1 {{property 'factor' expected in operation 'frame.scale'}}
  %0 = frame.scale %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @sgd_without_lr(%a: tensor<4xf32>) {
  // expected-error@+1 {{property 'lr' expected in operation 'frame.sgd_update'}}
  %0 = frame.sgd_update %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @constant_without_value() {
  // expected-error@+1 {{property 'value' expected in operation 'frame.constant'}}
  %0 = "frame.constant"() : () -> tensor<2xf32>
  func.return
}

// -----

// The generic form can spell an unranked constant; the verifier rejects it
// (the custom syntax could not print it back).
func.func @constant_unranked_generic() {
  // expected-error@+1 {{frame.constant: the result type must be static}}
  %0 = "frame.constant"() <{value = 1.0 : f32}> : () -> tensor<*xf32>
  func.return
}

// -----

func.func @broadcast_unranked(%s: tensor<f32>) {
  // expected-error@+1 {{frame.broadcast: the result type must be static (it is the target shape)}}
  %0 = frame.broadcast %s : (tensor<f32>) -> tensor<*xf32>
  func.return
}

// -----

// A parse error (the custom parser of frame.constant), not a verifier error.
func.func @constant_unranked() {
  %0 = frame.constant 1.0 : tensor<*xf32>
  // The custom parser reports at the token after the type (the next line).
  // expected-error@+1 {{frame.constant: expected a static tensor type, found tensor<*xf32>}}
  func.return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{frame.reshape: element count expected 6 (of [2, 3]), found 8 (of [4, 2])}}
  %0 = frame.reshape %x : (tensor<2x3xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @heaviside_alpha(%x: tensor<2xf32>) {
  // expected-error@+1 {{frame.heaviside_surrogate: alpha expected finite and > 0, found 0.0}}
  %0 = frame.heaviside_surrogate %x {alpha = 0.000000e+00 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @sum_axis_range(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{frame.sum: axis 2 is out of range (expected 0 <= axis < 2)}}
  %0 = frame.sum %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @conv_groups(%x: tensor<1x3x5x5xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error@+1 {{frame.conv: groups 2 must divide the input channels 3 and the output channels 4}}
  %0 = frame.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, groups = 2 : i64} : (tensor<1x3x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return
}

// -----

// Frame tensors are static: a `?` dim is rejected by every op's verifier.
func.func @dynamic_dim(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{frame.relu: operand #0 expected static dims, found a dynamic dim in tensor<?x4xf32>}}
  %0 = frame.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @gather_result_shape(%x: tensor<4x2xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{frame.gather_rows: result type expected tensor<3x2xf32>, found tensor<7x9xf32>}}
  %0 = frame.gather_rows %x, %i : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<7x9xf32>
  func.return
}

// -----

func.func @gather_element_type(%x: tensor<4x2xi64>, %i: tensor<3xi64>) {
  // expected-error@+1 {{frame.gather_rows: source and result must share a float element type, found tensor<4x2xi64> and tensor<3x2xi64>}}
  %0 = frame.gather_rows %x, %i : (tensor<4x2xi64>, tensor<3xi64>) -> tensor<3x2xi64>
  func.return
}

// -----

func.func @heaviside_grad_alpha(%x: tensor<2xf32>, %dy: tensor<2xf32>) {
  // expected-error@+1 {{frame.heaviside_surrogate_grad: alpha expected finite and > 0, found -1.0}}
  %0 = frame.heaviside_surrogate_grad %x, %dy {alpha = -1.000000e+00 : f32} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @sgd_lr(%p: tensor<2xf32>, %g: tensor<2xf32>) {
  // expected-error@+1 {{frame.sgd_update: lr expected finite and > 0, found -0.05}}
  %0 = frame.sgd_update %p, %g {lr = -5.000000e-02 : f32} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----

// A decimal literal outside the f32 range is a parse error (inf is written in hex).
func.func @constant_range() {
  // expected-error@+1 {{frame.constant: expected a value in the f32 range (|v| <= 3.40282347e+38; inf and nan as hex bit patterns), found 1e+40}}
  %0 = frame.constant 1.0e40 : tensor<2xf32>
  func.return
}

// -----

// One kernel, stride and padding entry per spatial dim: a 1-d pool given two strides.
func.func @pool_entries(%x: tensor<1x1x4xf32>) {
  // expected-error@+1 {{frame.max_pool: expected an [N, C, *spatial] input with one kernel, stride and padding entry per spatial dim, found [1, 1, 4] and 1/2/1 entries}}
  %0 = frame.max_pool %x {kernel = array<i64: 2>, stride = array<i64: 2, 2>, padding = array<i64: 0>} : (tensor<1x1x4xf32>) -> tensor<1x1x2xf32>
  func.return
}

// -----

// A 2-d kernel needs a rank-4 [N, C, H, W] input.
func.func @pool_rank(%x: tensor<1x4x4xf32>) {
  // expected-error@+1 {{frame.avg_pool: expected an [N, C, *spatial] input with one kernel, stride and padding entry per spatial dim, found [1, 4, 4] and 2/2/2 entries}}
  %0 = frame.avg_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x4x4xf32>) -> tensor<1x2x2xf32>
  func.return
}

// -----

// The kernel must be >= 1.
func.func @pool_kernel_zero(%x: tensor<1x1x4xf32>) {
  // expected-error@+1 {{frame.max_pool: kernel 0, stride 1, padding 0 do not fit a spatial size of 4 (need kernel >= 1)}}
  %0 = frame.max_pool %x {kernel = array<i64: 0>, stride = array<i64: 1>, padding = array<i64: 0>} : (tensor<1x1x4xf32>) -> tensor<1x1x5xf32>
  func.return
}

// -----

// The stride must be >= 1.
func.func @pool_stride_zero(%x: tensor<1x1x4xf32>) {
  // expected-error@+1 {{frame.avg_pool: kernel 2, stride 0, padding 0 do not fit a spatial size of 4 (need stride >= 1)}}
  %0 = frame.avg_pool %x {kernel = array<i64: 2>, stride = array<i64: 0>, padding = array<i64: 0>} : (tensor<1x1x4xf32>) -> tensor<1x1x3xf32>
  func.return
}

// -----

// The padding must be >= 0.
func.func @pool_padding_negative(%x: tensor<1x1x4xf32>) {
  // expected-error@+1 {{frame.max_pool: kernel 2, stride 1, padding -1 do not fit a spatial size of 4 (need padding >= 0)}}
  %0 = frame.max_pool %x {kernel = array<i64: 2>, stride = array<i64: 1>, padding = array<i64: -1>} : (tensor<1x1x4xf32>) -> tensor<1x1x1xf32>
  func.return
}

// -----

// Padding at most half the kernel (as PyTorch requires).
func.func @pool_padding_half(%x: tensor<1x1x4xf32>) {
  // expected-error@+1 {{frame.max_pool: kernel 2, stride 1, padding 2 do not fit a spatial size of 4 (need 2 * padding <= kernel)}}
  %0 = frame.max_pool %x {kernel = array<i64: 2>, stride = array<i64: 1>, padding = array<i64: 2>} : (tensor<1x1x4xf32>) -> tensor<1x1x7xf32>
  func.return
}

// -----

// The kernel must fit in the padded input.
func.func @pool_kernel_too_big(%x: tensor<1x1x3xf32>) {
  // expected-error@+1 {{frame.avg_pool: kernel 4, stride 1, padding 0 do not fit a spatial size of 3 (need kernel <= size + 2 * padding)}}
  %0 = frame.avg_pool %x {kernel = array<i64: 4>, stride = array<i64: 1>, padding = array<i64: 0>} : (tensor<1x1x3xf32>) -> tensor<1x1x1xf32>
  func.return
}

// -----

// (4 - 2) / 2 + 1 = 2 windows per spatial dim.
func.func @pool_result_type(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{frame.avg_pool: result type expected tensor<1x1x2x2xf32>, found tensor<1x1x3x3xf32>}}
  %0 = frame.avg_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}

// -----

func.func @pool_without_kernel(%x: tensor<1x1x4xf32>) {
  // expected-error@+1 {{property 'kernel' expected in operation 'frame.max_pool'}}
  %0 = frame.max_pool %x {stride = array<i64: 2>, padding = array<i64: 0>} : (tensor<1x1x4xf32>) -> tensor<1x1x2xf32>
  func.return
}

// -----

// Pool attributes are i64 arrays (a parse-time constraint: reported at the op being parsed).
func.func @pool_kernel_i32(%x: tensor<1x1x4xf32>) {
  // expected-error@+1 {{Expected attribute i64 but got i32}}
  %0 = frame.max_pool %x {kernel = array<i32: 2>, stride = array<i64: 2>, padding = array<i64: 0>} : (tensor<1x1x4xf32>) -> tensor<1x1x2xf32>
  func.return
}

// -----

// y and dy must have the forward pool's output shape.
func.func @max_pool_grad_dy(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x2x2xf32>, %dy: tensor<1x1x2x3xf32>) {
  // expected-error@+1 {{frame.max_pool_grad: y and dy expected [1, 1, 2, 2], found [1, 1, 2, 2] and [1, 1, 2, 3]}}
  %0 = frame.max_pool_grad %x, %y, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

// The gradients check the pool attributes as the forward op does.
func.func @max_pool_grad_attrs(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x2x2xf32>, %dy: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{frame.max_pool_grad: kernel 2, stride 2, padding 2 do not fit a spatial size of 4 (need 2 * padding <= kernel)}}
  %0 = frame.max_pool_grad %x, %y, %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 2, 0>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

// dy must be the pool's output shape for the declared input shape.
func.func @avg_pool_grad_dy(%dy: tensor<1x1x3x3xf32>) {
  // expected-error@+1 {{frame.avg_pool_grad: dy expected [1, 1, 2, 2], found [1, 1, 3, 3]}}
  %0 = frame.avg_pool_grad %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

// The result type is the input shape: it cannot be inferred.
func.func @avg_pool_grad_unranked(%dy: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{frame.avg_pool_grad: the result type must be static}}
  %0 = frame.avg_pool_grad %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x1x2x2xf32>) -> tensor<*xf32>
  func.return
}

// -----

// dy must be the conv's output shape for the declared input and the weight.
func.func @conv_grad_input_dy(%dy: tensor<1x4x2xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_input: dy expected [1, 4, 3], found [1, 4, 2]}}
  %0 = frame.conv_grad_input %dy, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x2xf32>, tensor<4x2x3xf32>) -> tensor<1x4x5xf32>
  func.return
}

// -----

// dy must be the conv's output shape for the input and the declared weight.
func.func @conv_grad_weight_dy(%x: tensor<1x4x5xf32>, %dy: tensor<1x2x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_weight: dy expected [1, 4, 3], found [1, 2, 3]}}
  %0 = frame.conv_grad_weight %x, %dy {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x5xf32>, tensor<1x2x3xf32>) -> tensor<4x2x3xf32>
  func.return
}

// -----

// The declared result type is a conv operand's shape: it must be static.
func.func @conv_grad_input_unranked(%dy: tensor<1x4x3xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_input: the result type must be static}}
  %0 = frame.conv_grad_input %dy, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x3xf32>, tensor<4x2x3xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @conv_grad_weight_unranked(%x: tensor<1x4x5xf32>, %dy: tensor<1x4x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_weight: the result type must be static}}
  %0 = frame.conv_grad_weight %x, %dy {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x5xf32>, tensor<1x4x3xf32>) -> tensor<*xf32>
  func.return
}

// -----

// The conv rules, named after the gradient op: input and weight of one rank.
func.func @conv_grad_input_rank(%dy: tensor<1x4x3xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_input: expected input [N, C, *spatial] and weight [Cout, Cin/groups, *kernel] of the same rank >= 3, found [1, 4, 5] and [4, 2, 3, 3]}}
  %0 = frame.conv_grad_input %dy, %w {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5xf32>
  func.return
}

// -----

// One stride and padding entry per spatial dim.
func.func @conv_grad_input_entries(%dy: tensor<1x4x3xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_input: expected 1 stride and padding entries, found 2 and 1}}
  %0 = frame.conv_grad_input %dy, %w {stride = array<i64: 2, 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x3xf32>, tensor<4x2x3xf32>) -> tensor<1x4x5xf32>
  func.return
}

// -----

func.func @conv_grad_weight_groups(%x: tensor<1x4x5xf32>, %dy: tensor<1x4x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_weight: groups 3 must divide the input channels 4 and the output channels 4}}
  %0 = frame.conv_grad_weight %x, %dy {stride = array<i64: 2>, padding = array<i64: 1>, groups = 3 : i64} : (tensor<1x4x5xf32>, tensor<1x4x3xf32>) -> tensor<4x2x3xf32>
  func.return
}

// -----

// The declared weight must have Cin / groups input channels.
func.func @conv_grad_weight_channels(%x: tensor<1x4x5xf32>, %dy: tensor<1x4x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_weight: weight expected 2 input channels per group, found 4}}
  %0 = frame.conv_grad_weight %x, %dy {stride = array<i64: 2>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x5xf32>, tensor<1x4x3xf32>) -> tensor<4x4x3xf32>
  func.return
}

// -----

func.func @conv_grad_input_stride(%dy: tensor<1x4x3xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error@+1 {{frame.conv_grad_input: kernel 3 with stride 0, padding 1 does not fit a spatial size of 5}}
  %0 = frame.conv_grad_input %dy, %w {stride = array<i64: 0>, padding = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x3xf32>, tensor<4x2x3xf32>) -> tensor<1x4x5xf32>
  func.return
}

// -----

// The declared weight's kernel must fit in the padded input.
func.func @conv_grad_weight_kernel(%x: tensor<1x4x2xf32>, %dy: tensor<1x4x1xf32>) {
  // expected-error@+1 {{frame.conv_grad_weight: kernel 3 with stride 1, padding 0 does not fit a spatial size of 2}}
  %0 = frame.conv_grad_weight %x, %dy {stride = array<i64: 1>, padding = array<i64: 0>, groups = 2 : i64} : (tensor<1x4x2xf32>, tensor<1x4x1xf32>) -> tensor<4x2x3xf32>
  func.return
}

// -----

// updates [K, F] and indices [K] must agree on K.
func.func @scatter_add_k(%u: tensor<3x2xf32>, %i: tensor<4xi64>) {
  // expected-error@+1 {{frame.scatter_add: expected updates [K, F], indices [K] and a [V, F] result, found [3, 2], [4], [4, 2]}}
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<4xi64>) -> tensor<4x2xf32>
  func.return
}

// -----

// The result [V, F] keeps the updates' F.
func.func @scatter_add_f(%u: tensor<3x2xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{frame.scatter_add: expected updates [K, F], indices [K] and a [V, F] result, found [3, 2], [3], [4, 3]}}
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  func.return
}

// -----

// Indices are a vector.
func.func @scatter_add_index_rank(%u: tensor<3x2xf32>, %i: tensor<3x1xi64>) {
  // expected-error@+1 {{frame.scatter_add: expected updates [K, F], indices [K] and a [V, F] result, found [3, 2], [3, 1], [4, 2]}}
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3x1xi64>) -> tensor<4x2xf32>
  func.return
}

// -----

// Indices are i32 or i64, not float ...
func.func @scatter_add_index_f32(%u: tensor<3x2xf32>, %i: tensor<3xf32>) {
  // expected-error@+1 {{frame.scatter_add: indices must be i32 or i64, found tensor<3xf32>}}
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

// ... nor another integer width.
func.func @scatter_add_index_i16(%u: tensor<3x2xf32>, %i: tensor<3xi16>) {
  // expected-error@+1 {{frame.scatter_add: indices must be i32 or i64, found tensor<3xi16>}}
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi16>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @scatter_add_elem(%u: tensor<3x2xf16>, %i: tensor<3xi64>) {
  // expected-error@+1 {{frame.scatter_add: updates and result must share a float element type, found tensor<3x2xf16> and tensor<4x2xf32>}}
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf16>, tensor<3xi64>) -> tensor<4x2xf32>
  func.return
}

// -----

// The result's V is not implied by the operands: the type must be static.
func.func @scatter_add_unranked(%u: tensor<3x2xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{frame.scatter_add: the result type must be static}}
  %0 = frame.scatter_add %u, %i : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<*xf32>
  func.return
}

// -----

func.func @gather_index_type(%x: tensor<4x2xf32>, %i: tensor<3xf32>) {
  // expected-error@+1 {{frame.gather_rows: indices must be i32 or i64, found tensor<3xf32>}}
  %0 = frame.gather_rows %x, %i : (tensor<4x2xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @gather_rank(%x: tensor<4xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{frame.gather_rows: expected [V, F] and [K], found [4] and [3]}}
  %0 = frame.gather_rows %x, %i : (tensor<4xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  func.return
}

// -----

// The five scan operands share one shape.
func.func @scan_shape(%x: tensor<2x5xf32>, %a: tensor<2x4xf32>) {
  // expected-error@+1 {{frame.selective_scan: operand shapes must match (no broadcasting in v0): expected [2, 5], found [2, 4]}}
  %0 = frame.selective_scan %x, %a, %x, %x, %x : (tensor<2x5xf32>, tensor<2x4xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// The scan walks the last axis: rank >= 1 ...
func.func @scan_rank0(%x: tensor<f32>) {
  // expected-error@+1 {{frame.selective_scan: expected rank >= 1 with a last dim >= 1, found []}}
  %0 = frame.selective_scan %x, %x, %x, %x, %x : (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return
}

// -----

// ... with at least one time step.
func.func @scan_empty_time(%x: tensor<2x0xf32>) {
  // expected-error@+1 {{frame.selective_scan: expected rank >= 1 with a last dim >= 1, found [2, 0]}}
  %0 = frame.selective_scan %x, %x, %x, %x, %x : (tensor<2x0xf32>, tensor<2x0xf32>, tensor<2x0xf32>, tensor<2x0xf32>, tensor<2x0xf32>) -> tensor<2x0xf32>
  func.return
}

// -----

func.func @scan_result(%x: tensor<2x5xf32>) {
  // expected-error@+1 {{frame.selective_scan: result type expected tensor<2x5xf32>, found tensor<5x2xf32>}}
  %0 = frame.selective_scan %x, %x, %x, %x, %x : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<5x2xf32>
  func.return
}

// -----

// dy has the operands' shape too.
func.func @scan_grad_dy(%x: tensor<2x5xf32>, %dy: tensor<5xf32>) {
  // expected-error@+1 {{frame.selective_scan_grad: operand shapes must match (no broadcasting in v0): expected [2, 5], found [5]}}
  %0 = frame.selective_scan_grad %x, %x, %x, %x, %x, %dy {wrt = 0 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @scan_grad_rank0(%x: tensor<f32>) {
  // expected-error@+1 {{frame.selective_scan_grad: expected rank >= 1 with a last dim >= 1, found []}}
  %0 = frame.selective_scan_grad %x, %x, %x, %x, %x, %x {wrt = 0 : i64} : (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return
}

// -----

// wrt names one of the five operands x, a, b, c, d.
func.func @scan_grad_wrt(%x: tensor<2x5xf32>) {
  // expected-error@+1 {{frame.selective_scan_grad: wrt expected 0..4, found 5}}
  %0 = frame.selective_scan_grad %x, %x, %x, %x, %x, %x {wrt = 5 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @scan_grad_wrt_negative(%x: tensor<2x5xf32>) {
  // expected-error@+1 {{frame.selective_scan_grad: wrt expected 0..4, found -1}}
  %0 = frame.selective_scan_grad %x, %x, %x, %x, %x, %x {wrt = -1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return
}
