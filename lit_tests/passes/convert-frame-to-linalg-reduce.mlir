// convert-frame-to-linalg on the reduction family (frame_reduce.py) and on broadcasting
// binary ops: a broadcast operand is read without the leading dims it lacks and with
// index 0 in the size-1 dims it stretches; mean and max reduce into an f32 accumulator
// over the kept dims (keepdims copies it into the size-1 dims); max_grad rescans each
// group for the first element equal to its max, a per-group flag marking it found.
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

func.func @broadcast_add(%a: tensor<2x3x4xf32>, %b: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %c = frame.add %a, %b : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return %c : tensor<2x3x4xf32>
}


// CHECK-LABEL: func.func @broadcast_add
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.add"} ins(%a, %b : tensor<2x3x4xf32>, tensor<3x1xf32>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK:           arith.addf

// -----

func.func @scalar_div(%a: tensor<2x3xf32>, %n: tensor<f32>) -> tensor<2x3xf32> {
  %c = frame.div %a, %n : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}


// CHECK-LABEL: func.func @scalar_div
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK:           arith.divf

// -----

func.func @mean(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %m = frame.mean %x {axes = array<i64: 1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  func.return %m : tensor<2x1x4xf32>
}


// CHECK-LABEL: func.func @mean
// CHECK:         %[[ACC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.mean"} ins(%x : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK:           arith.addf
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.mean"} ins(%[[ACC]] : tensor<2x4xf32>) outs(%{{.*}} : tensor<2x1x4xf32>)
// CHECK:           %[[N:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      arith.divf %{{.*}}, %[[N]] : f32

// -----

func.func @max(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  %m = frame.max %x {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %m : tensor<3xf32>
}


// CHECK-LABEL: func.func @max
// CHECK:         %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:         linalg.fill ins(%[[NINF]] : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"], doc = "frame.max"}
// CHECK:           arith.cmpf ogt
// CHECK-NEXT:      arith.cmpf uno
// CHECK-NEXT:      arith.ori
// CHECK-NEXT:      arith.select

// -----

func.func @max_grad(%x: tensor<2x3xf32>, %dy: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %g = frame.max_grad %x, %dy {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}


// CHECK-LABEL: func.func @max_grad
// CHECK:         %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"], doc = "frame.max_grad"} ins(%x : tensor<2x3xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK:         %{{.*}}, %[[G:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "reduction"], doc = "frame.max_grad"} ins(%x, %[[M]], %dy : tensor<2x3xf32>, tensor<2xf32>, tensor<2x1xf32>) outs(%{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2x3xf32>)
// CHECK:           arith.cmpf oeq
// CHECK:           linalg.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK:         func.return %[[G]]

// -----

func.func @maximum(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %c = frame.maximum %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  func.return %c : tensor<3x4xf32>
}


// CHECK-LABEL: func.func @maximum
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.maximum"}
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[A]], %[[A]] : f32
// CHECK-NEXT:      %[[TAKE:.*]] = arith.ori %[[GT]], %[[NAN]] : i1
// CHECK-NEXT:      arith.select %[[TAKE]], %[[A]], %[[B]] : f32

// -----

func.func @minimum_grad(%a: tensor<3x4xf32>, %b: tensor<3x1xf32>, %dy: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %g = frame.minimum_grad %a, %b, %dy {wrt = 1 : i64} : (tensor<3x4xf32>, tensor<3x1xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %g : tensor<3x4xf32>
}


// CHECK-LABEL: func.func @minimum_grad
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.minimum_grad"}
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[DY:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[EQ:.*]] = arith.cmpf oeq, %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[LOST:.*]] = arith.cmpf olt, %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[H:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[HALF:.*]] = arith.mulf %[[DY]], %[[H]] : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[KEPT:.*]] = arith.select %[[LOST]], %[[Z]], %[[DY]] : f32
// CHECK-NEXT:      arith.select %[[EQ]], %[[HALF]], %[[KEPT]] : f32

// -----

func.func @sum_keepdims(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %s = frame.sum %x {axes = array<i64: 0>, keepdims} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  func.return %s : tensor<1x3xf32>
}

// CHECK-LABEL: func.func @sum_keepdims
// CHECK:         %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"], doc = "frame.sum"}
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.sum"} ins(%[[S]] : tensor<3xf32>) outs(%{{.*}} : tensor<1x3xf32>)
