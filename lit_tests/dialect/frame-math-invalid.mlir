// One case per verifier rule of the elementwise math family.
// RUN: frame-opt %s --split-input-file --verify-diagnostics

func.func @gelu_form(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.gelu: approximate expected one of 'none', 'tanh', found 'erf'}}
  %0 = frame.gelu %a {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @hardtanh_bounds(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.hardtanh: min_val expected <= max_val (-1.0), found 1.0}}
  %0 = frame.hardtanh %a {min_val = 1.0 : f32, max_val = -1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @hardtanh_inf(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.hardtanh_grad: min_val expected a finite number, found -inf}}
  %0 = frame.hardtanh_grad %a, %a {min_val = 0xFF800000 : f32, max_val = 1.0 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @threshold_nan(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.threshold: threshold expected a finite number, found nan}}
  %0 = frame.threshold %a {threshold = 0x7FC00000 : f32, value = 0.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @step_inf(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.step: threshold expected a finite number, found -inf}}
  %0 = frame.step %a {threshold = 0xFF800000 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @sqrt_type(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.sqrt: result type expected tensor<4xf32>, found tensor<2x2xf32>}}
  %0 = frame.sqrt %a : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @shift_inf(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.shift: offset expected a finite number, found inf}}
  %0 = frame.shift %a {offset = 0x7F800000 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @div_shapes(%a: tensor<4xf32>, %b: tensor<2x2xf32>) {
  // expected-error@+1 {{frame.div: operands [4] and [2, 2] do not broadcast}}
  %0 = frame.div %a, %b : (tensor<4xf32>, tensor<2x2xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @exp_type(%a: tensor<4xf32>) {
  // expected-error@+1 {{frame.exp: result type expected tensor<4xf32>, found tensor<5xf32>}}
  %0 = frame.exp %a : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}
