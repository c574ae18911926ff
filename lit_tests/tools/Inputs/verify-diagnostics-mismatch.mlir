// Input of verify-diagnostics-mismatch.test: annotations that do not match.

func.func @ok(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// -----

// Unexpected: the error has no annotation.
func.func @unexpected(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  %0 = frame.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Unmet: nothing fails here.
func.func @unmet(%a: tensor<4xf32>) {
  // expected-error@+1 {{this never happens}}
  %0 = frame.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// The right text at the wrong line (off by one).
func.func @wrong_line(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+2 {{operands [4] and [5] do not broadcast}}
  %0 = frame.mul %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

// The right line with the wrong text.
func.func @wrong_text(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{operands [4] and [6] do not broadcast}}
  %0 = frame.sub %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

// The wrong kind: an error is not a warning. And a note nothing emits.
func.func @wrong_kind(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-warning@+1 {{do not broadcast}}
  %0 = frame.div %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  // expected-note@unknown {{nothing emits this}}
  func.return
}

// -----

// Malformed annotations are errors, not silently ignored comments.
// expected-error @+1 {missing braces}
// expected-error@above {{fine in itself}}
// expected-error-re {{bad {{[}} regex}}
func.func @malformed() {
  func.return
}
