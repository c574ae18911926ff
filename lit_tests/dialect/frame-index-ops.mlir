// The index family (frame_index.py): round trip (custom and generic form) and the
// verifier's rules.
// RUN: frame-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: frame-opt %s --split-input-file --verify-diagnostics --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @ops(%x: tensor<2x5x3xf32>, %i: tensor<4xi64>, %j: tensor<5xi32>, %h: tensor<5xf16>, %u: tensor<3x2xf32>, %k: tensor<3xi64>) -> tensor<3x2xf32> {
  %y = frame.index_select %x, %i {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4xi64>) -> tensor<2x4x3xf32>
  %e = frame.index_select %x, %j {axis = 2 : i64} : (tensor<2x5x3xf32>, tensor<5xi32>) -> tensor<2x5x5xf32>
  %a = frame.index_add %y, %i {axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<4xi64>) -> tensor<2x5x3xf32>
  %b = frame.index_add %h, %j {axis = 0 : i64} : (tensor<5xf16>, tensor<5xi32>) -> tensor<7xf16>
  %o = frame.scatter_add %u, %k : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
  %g = frame.gather_rows %o, %k : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  func.return %g : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %{{.*}} = frame.index_select %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4xi64>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.index_select %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x5x3xf32>, tensor<5xi32>) -> tensor<2x5x5xf32>
// CHECK-NEXT:    %{{.*}} = frame.index_add %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<4xi64>) -> tensor<2x5x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.index_add %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<5xf16>, tensor<5xi32>) -> tensor<7xf16>
// CHECK-NEXT:    %{{.*}} = frame.scatter_add %{{.*}}, %{{.*}} : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
// CHECK-NEXT:    %{{.*}} = frame.gather_rows %{{.*}}, %{{.*}} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
// GENERIC:       "frame.index_select"(%{{.*}}, %{{.*}}) <{axis = 1 : i64}> : (tensor<2x5x3xf32>, tensor<4xi64>) -> tensor<2x4x3xf32>
// GENERIC:       "frame.index_select"(%{{.*}}, %{{.*}}) <{axis = 2 : i64}> : (tensor<2x5x3xf32>, tensor<5xi32>) -> tensor<2x5x5xf32>
// GENERIC:       "frame.index_add"(%{{.*}}, %{{.*}}) <{axis = 1 : i64}> : (tensor<2x4x3xf32>, tensor<4xi64>) -> tensor<2x5x3xf32>
// GENERIC:       "frame.index_add"(%{{.*}}, %{{.*}}) <{axis = 0 : i64}> : (tensor<5xf16>, tensor<5xi32>) -> tensor<7xf16>
// GENERIC:       "frame.scatter_add"(%{{.*}}, %{{.*}}) : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
// GENERIC:       "frame.gather_rows"(%{{.*}}, %{{.*}}) : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>

// -----

// An empty index list is legal (as in torch): a 0-long dim.
func.func @empty(%x: tensor<4x3xf32>, %i: tensor<0xi64>) -> tensor<4x3xf32> {
  %y = frame.index_select %x, %i {axis = 1 : i64} : (tensor<4x3xf32>, tensor<0xi64>) -> tensor<4x0xf32>
  %a = frame.index_add %y, %i {axis = 1 : i64} : (tensor<4x0xf32>, tensor<0xi64>) -> tensor<4x3xf32>
  func.return %a : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @empty
// CHECK-NEXT:    frame.index_select %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x3xf32>, tensor<0xi64>) -> tensor<4x0xf32>
// CHECK-NEXT:    frame.index_add %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x0xf32>, tensor<0xi64>) -> tensor<4x3xf32>

// -----

func.func @select_index_rank(%x: tensor<4x3xf32>, %i: tensor<2x2xi64>) -> tensor<4x3xf32> {
  // expected-error@+1 {{frame.index_select: indices (operand #1) expected rank 1, found shape [2, 2]}}
  %y = frame.index_select %x, %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2x2xi64>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// -----

func.func @select_index_float(%x: tensor<4x3xf32>, %i: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.index_select: indices (operand #1) expected a tensor of i32 or i64, found tensor<2xf32>}}
  %y = frame.index_select %x, %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @select_index_i16(%x: tensor<4x3xf32>, %i: tensor<2xi16>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.index_select: indices (operand #1) expected a tensor of i32 or i64, found tensor<2xi16>}}
  %y = frame.index_select %x, %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi16>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @select_axis(%x: tensor<4x3xf32>, %i: tensor<2xi64>) -> tensor<4x2xf32> {
  // expected-error@+1 {{frame.index_select: axis expected in [0, 2) for the rank-2 input [4, 3], found 2}}
  %y = frame.index_select %x, %i {axis = 2 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}

// -----

func.func @select_result(%x: tensor<4x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.index_select: result type expected tensor<4x2xf32>, found tensor<2x3xf32>}}
  %y = frame.index_select %x, %i {axis = 1 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @select_elem(%x: tensor<4x3xf16>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  // expected-error@+1 {{frame.index_select: input (operand #0) expected a tensor of f32 (the result's element type), found tensor<4x3xf16>}}
  %y = frame.index_select %x, %i {axis = 0 : i64} : (tensor<4x3xf16>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @select_int_result(%x: tensor<4x3xi32>, %i: tensor<2xi64>) -> tensor<2x3xi32> {
  // expected-error@+1 {{frame.index_select: result expected a tensor of f32, f16 or bf16, found tensor<2x3xi32>}}
  %y = frame.index_select %x, %i {axis = 0 : i64} : (tensor<4x3xi32>, tensor<2xi64>) -> tensor<2x3xi32>
  func.return %y : tensor<2x3xi32>
}

// -----

func.func @add_count(%s: tensor<3x2xf32>, %i: tensor<4xi64>) -> tensor<5x2xf32> {
  // expected-error@+1 {{frame.index_add: indices (operand #1) expected shape [3] (dim 0 of the source [3, 2]), found [4]}}
  %o = frame.index_add %s, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<4xi64>) -> tensor<5x2xf32>
  func.return %o : tensor<5x2xf32>
}

// -----

func.func @add_result(%s: tensor<3x2xf32>, %i: tensor<3xi64>) -> tensor<5x3xf32> {
  // expected-error@+1 {{frame.index_add: result shape expected [*, 2] (the source's dims off axis 0), found [5, 3]}}
  %o = frame.index_add %s, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<5x3xf32>
  func.return %o : tensor<5x3xf32>
}

// -----

func.func @add_result_rank(%s: tensor<3x2xf32>, %i: tensor<2xi64>) -> tensor<3xf32> {
  // expected-error@+1 {{frame.index_add: result shape expected [3, *] (the source's dims off axis 1), found [3]}}
  %o = frame.index_add %s, %i {axis = 1 : i64} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<3xf32>
  func.return %o : tensor<3xf32>
}

// -----

func.func @add_axis(%s: tensor<3x2xf32>, %i: tensor<3xi64>) -> tensor<3x2xf32> {
  // expected-error@+1 {{frame.index_add: axis expected in [0, 2) for the rank-2 source [3, 2], found 3}}
  %o = frame.index_add %s, %i {axis = 3 : i64} : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  func.return %o : tensor<3x2xf32>
}

// -----

func.func @add_index_float(%s: tensor<3x2xf32>, %i: tensor<3xf32>) -> tensor<4x2xf32> {
  // expected-error@+1 {{frame.index_add: indices (operand #1) expected a tensor of i32 or i64, found tensor<3xf32>}}
  %o = frame.index_add %s, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x2xf32>
  func.return %o : tensor<4x2xf32>
}

// -----

func.func @add_elem(%s: tensor<3x2xbf16>, %i: tensor<3xi64>) -> tensor<4x2xf32> {
  // expected-error@+1 {{frame.index_add: source (operand #0) expected a tensor of f32 (the result's element type), found tensor<3x2xbf16>}}
  %o = frame.index_add %s, %i {axis = 0 : i64} : (tensor<3x2xbf16>, tensor<3xi64>) -> tensor<4x2xf32>
  func.return %o : tensor<4x2xf32>
}

// -----

func.func @add_unranked(%s: tensor<3x2xf32>, %i: tensor<3xi64>) -> tensor<*xf32> {
  // expected-error@+1 {{frame.index_add: the result type must be static (it gives the size of dim axis)}}
  %o = frame.index_add %s, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<*xf32>
  func.return %o : tensor<*xf32>
}
