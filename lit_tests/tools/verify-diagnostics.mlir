// frame-opt --verify-diagnostics, as mlir-opt: every diagnostic must be expected by an
// `expected-<kind>` annotation at its line, and every annotation met (the failing
// cases are in verify-diagnostics-mismatch.test). Line numbers are the file's, also
// with --split-input-file; the output of the chunks that succeed is printed.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-shape-inference | filecheck %s

// A chunk without errors prints as usual; a failing chunk prints nothing.
// CHECK-LABEL: func.func @valid
// CHECK-NOT:   func.func
func.func @valid(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = frame.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// @+N: N lines below the annotation.
func.func @plus(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+2 {{frame.add: operands [4] and [5] do not broadcast}}

  %0 = frame.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

// @-N: N lines above; `@ -1` with spaces is the same.
func.func @minus(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  %0 = frame.mul %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  // expected-error @-1 {{operands [4] and [5] do not broadcast}}
  func.return
}

// -----

// On the line itself, after the code.
func.func @same_line(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  %0 = frame.sub %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32> // expected-error {{do not broadcast}}
  func.return
}

// -----

// @above: the nearest line above that is not an annotation; @below, below.
// Annotations do not count as lines for @above / @below.
func.func @above(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  %0 = frame.div %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  // expected-error@above {{frame.div: operands [4] and [5] do not broadcast}}
  func.return
}

// -----

func.func @below(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@below {{frame.maximum: operands [4] and [5] do not broadcast}}
  %0 = frame.maximum %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

// expected-error-re: literal text with {{regex}} parts.
func.func @regex(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error-re@+1 {{contraction dimension mismatch: expected rhs dim {{[0-9]+}} (the lhs's), found 4}}
  %0 = frame.matmul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// Parse errors are diagnostics at their token.
func.func @parse(%a: tensor<4xf32>) {
  // expected-error@+1 {{Operation frame.nonexistent is not registered}}
  %0 = frame.nonexistent %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// A type that fails its constraint while being parsed: at the op being parsed.
func.func @bad_type(%a: f32) {
  // expected-error@+1 {{Unexpected attribute f32}}
  %0 = frame.neg %a : (f32) -> tensor<4xf32>
  func.return
}

// -----

// A parse error with notes at other places: each is expected where it is. xDSL reports
// an unresolved block at the end of the region's input (the last line, here).
func.func @dangling() {
  // expected-note@+1 {{reference to block "^bb5" without implementation}}
  cf.br ^bb5
}
// expected-error@below {{region ends with missing block declarations for block(s) bb5}}
