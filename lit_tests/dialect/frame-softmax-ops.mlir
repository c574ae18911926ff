// The softmax family: round trip (custom and generic form) and the verifier's axis rule.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @ops(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %y = frame.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %z = frame.log_softmax %y {axis = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %g = frame.softmax_grad %y, %z {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %h = frame.log_softmax_grad %z, %g {axis = 0 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %h : tensor<2x5xf32>
}
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %{{.*}} = frame.softmax %{{.*}} {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.log_softmax %{{.*}} {axis = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.softmax_grad %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.log_softmax_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
// GENERIC:       "frame.softmax"(%{{.*}}) <{axis = 1 : i64}> : (tensor<2x5xf32>) -> tensor<2x5xf32>

// -----

func.func @axis(%x: tensor<2x5xf32>) {
  // expected-error@+1 {{frame.softmax: axis expected in [0, 2) for a rank-2 operand, found 2}}
  %y = frame.softmax %x {axis = 2 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return
}
