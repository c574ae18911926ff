// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg,frame-bufferize,convert-linalg-to-loops,arith-expand-bf16 | filecheck %s --check-prefix=LOOPS

// bf16 storage, f32 arithmetic, exactly as f16: the body widens every bf16 block
// argument with arith.extf (the unused destination's too), adds in f32 and rounds the
// result once with arith.truncf before yielding it.
func.func @add_bf16(%a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = frame.add %a, %b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  func.return %0 : tensor<4xbf16>
}

// CHECK-LABEL: func.func @add_bf16
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4xbf16>, %[[B:[a-z0-9_]+]]: tensor<4xbf16>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xbf16>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic
// CHECK-SAME:      doc = "frame.add"}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<4xbf16>, tensor<4xbf16>) outs(%[[E]] : tensor<4xbf16>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: bf16, %[[Y:.*]]: bf16, %[[O:.*]]: bf16):
// CHECK-NEXT:      %[[XW:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK-NEXT:      %[[YW:.*]] = arith.extf %[[Y]] : bf16 to f32
// CHECK-NEXT:      %{{.*}} = arith.extf %[[O]] : bf16 to f32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[XW]], %[[YW]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.truncf %[[SUM]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[R]] : bf16
// CHECK-NEXT:    } -> tensor<4xbf16>
// CHECK-NEXT:    func.return %[[S]] : tensor<4xbf16>

// After the loops stage's expansion, the loop body is integer code around the f32 add.
// LOOPS-LABEL: func.func @add_bf16
// LOOPS:         scf.for
// LOOPS:           %[[X:.*]] = memref.load %[[A:.*]][%{{.*}}] : memref<4xbf16>
// LOOPS:           %[[XI:.*]] = arith.bitcast %[[X]] : bf16 to i16
// LOOPS-NEXT:      %[[XW:.*]] = arith.extui %[[XI]] : i16 to i32
// LOOPS:           arith.addf %{{.*}}, %{{.*}} : f32
// LOOPS:           %[[R:.*]] = arith.bitcast %{{.*}} : i16 to bf16
// LOOPS-NEXT:      memref.store %[[R]], %{{.*}} : memref<4xbf16>
// LOOPS-NOT:     arith.extf
// LOOPS-NOT:     arith.truncf

// -----

// A matmul accumulates in an f32 tensor (each bf16 operand widened as it is read),
// then one elementwise pass rounds the accumulator to bf16.
func.func @matmul_bf16(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>) -> tensor<2x4xbf16> {
  %0 = frame.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  func.return %0 : tensor<2x4xbf16>
}

// CHECK-LABEL: func.func @matmul_bf16
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<2x3xbf16>, %[[B:[a-z0-9_]+]]: tensor<3x4xbf16>)
// CHECK:         %[[ACC0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[ACC:.*]] = linalg.generic
// CHECK-SAME:      doc = "frame.matmul"}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x3xbf16>, tensor<3x4xbf16>) outs(%[[ACC0]] : tensor<2x4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: bf16, %[[Y:.*]]: bf16, %[[C:.*]]: f32):
// CHECK-NEXT:      %[[XW:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK-NEXT:      %[[YW:.*]] = arith.extf %[[Y]] : bf16 to f32
// CHECK-NEXT:      %[[F:.*]] = math.fma %[[XW]], %[[YW]], %[[C]] : f32
// CHECK-NEXT:      linalg.yield %[[F]] : f32
// CHECK-NEXT:    } -> tensor<2x4xf32>
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<2x4xbf16>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[ACC]] : tensor<2x4xf32>) outs(%[[E]] : tensor<2x4xbf16>) {
// CHECK:           %[[T:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T]] : bf16
// CHECK:         func.return %[[R]] : tensor<2x4xbf16>

// LOOPS-LABEL: func.func @matmul_bf16
// LOOPS-NOT:     arith.extf %{{.*}} : bf16
// LOOPS-NOT:     arith.truncf

// -----

// A bf16 splat constant is a fill with a bf16 arith.constant (0.1 rounded to bf16);
// the expansion makes it the i16 constant of its bits (0x3dcd).
func.func @const_bf16() -> tensor<3xbf16> {
  %0 = frame.constant 1.000000e-01 : tensor<3xbf16>
  func.return %0 : tensor<3xbf16>
}

// CHECK-LABEL: func.func @const_bf16
// CHECK-NEXT:    %[[C:.*]] = arith.constant 1.000980e-01 : bf16
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<3xbf16>
// CHECK-NEXT:    %[[F:.*]] = linalg.fill ins(%[[C]] : bf16) outs(%[[E]] : tensor<3xbf16>) -> tensor<3xbf16>
// CHECK-NEXT:    func.return %[[F]] : tensor<3xbf16>

// LOOPS-LABEL: func.func @const_bf16
// LOOPS:         %[[BITS:.*]] = arith.constant 15821 : i16
// LOOPS-NEXT:    %[[C:.*]] = arith.bitcast %[[BITS]] : i16 to bf16
// LOOPS:         memref.store %[[C]], %{{.*}} : memref<3xbf16>
