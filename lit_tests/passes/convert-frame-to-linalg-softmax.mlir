// convert-frame-to-linalg on the softmax family (frame_softmax.py): a running max
// along the axis (greater or NaN wins), a sum of exp(x - max), then the elementwise
// result reading both per row.
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

func.func @softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %y = frame.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK:         %[[M:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]
// CHECK:           arith.cmpf ogt
// CHECK:           arith.cmpf uno
// CHECK:           arith.select
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      ins(%{{.*}}, %[[M]] : tensor<2x5xf32>, tensor<2xf32>)
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      ins(%{{.*}}, %[[M]], %[[S]] : tensor<2x5xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK:           math.exp
// CHECK:           arith.divf

// -----

// log_softmax along axis 0: (x - max) - log(sum).
func.func @log_softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %y = frame.log_softmax %x {axis = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:           arith.subf
// CHECK:           math.log
// CHECK:           arith.subf

// -----

// softmax_grad: y * (dy - sum(dy * y)).
func.func @softmax_grad(%y: tensor<2x5xf32>, %dy: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %g = frame.softmax_grad %y, %dy {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %g : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @softmax_grad
// CHECK:         %[[T:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      ins(%{{.*}}, %{{.*}}, %[[T]] : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2xf32>)
// CHECK:           arith.subf
// CHECK:           arith.mulf

// -----

// log_softmax_grad: dy - exp(y) * sum(dy).
func.func @log_softmax_grad(%y: tensor<2x5xf32>, %dy: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %g = frame.log_softmax_grad %y, %dy {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %g : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @log_softmax_grad
// CHECK:         %[[T:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK:           arith.subf

// -----

// A last axis of 2 x 16 elements or more, a multiple of 16: each row reduction runs in
// 16 lanes (element j into partial j mod 16, the lanes the innermost, parallel loop so
// that it vectorizes; an unread [32 / 16] operand gives the block loop its bound), then
// folds the 16 partials of each row in lane order (linalg_utils.lane_reduce). The sum's
// loop also stores each exp (an f32 tensor of the input's shape, written with the
// element's map), and the final pass divides it: one exp per element.
func.func @sm_lanes(%x: tensor<2x32xf32>) -> tensor<2x32xf32> {
  %y = frame.softmax %x {axis = 1 : i64} : (tensor<2x32xf32>) -> tensor<2x32xf32>
  func.return %y : tensor<2x32xf32>
}

// CHECK-LABEL: func.func @sm_lanes
// CHECK:         %[[BOUND:.*]] = tensor.empty() : tensor<2xf32>
// CHECK:         %[[PM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, ((d1 * 16) + d2))>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.softmax"} ins(%x, %[[BOUND]] : tensor<2x32xf32>, tensor<2xf32>) outs(%{{.*}} : tensor<2x16xf32>)
// CHECK:           arith.select
// CHECK:         %[[M:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "frame.softmax"} ins(%[[PM]] : tensor<2x16xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK:         %[[PS:.*]], %[[E:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, ((d1 * 16) + d2))>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, ((d1 * 16) + d2))>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.softmax"} ins(%x, %[[M]], %{{.*}} : tensor<2x32xf32>, tensor<2xf32>, tensor<2xf32>) outs(%{{.*}}, %{{.*}} : tensor<2x16xf32>, tensor<2x32xf32>)
// CHECK:           %[[EXP:.*]] = math.exp
// CHECK:           %[[ACC:.*]] = arith.addf
// CHECK:           linalg.yield %[[ACC]], %[[EXP]] : f32, f32
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"], doc = "frame.softmax"} ins(%[[PS]] : tensor<2x16xf32>)
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"], doc = "frame.softmax"} ins(%[[E]], %[[S]] : tensor<2x32xf32>, tensor<2xf32>)
// CHECK-NOT:       math.exp
// CHECK:           arith.divf
