// convert-frame-to-linalg on the classification losses (frame_loss.py).
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

// nll_loss, "mean": a scan over (row, class) selects -logp at the label's column of
// each counted row (linalg cannot index by data), then the sum of the rows and the
// count of non-ignored rows, then their quotient. The labels' argument records the
// run-time range check the executable makes before a call.
func.func @nll(%lp: tensor<4x5xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  %l = frame.nll_loss %lp, %y {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @nll(%lp: tensor<4x5xf32>, %y: tensor<4xi64> {frame.index_checks = [{op = "frame.nll_loss", bound = 5 : i64, ignore_index = -100 : i64}]})
// CHECK:         %[[ROWS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "frame.nll_loss"} ins(%lp, %y : tensor<4x5xf32>, tensor<4xi64>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[LAB:.*]]: i64, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[I:.*]] = arith.index_cast %[[LAB]] : i64 to index
// CHECK-NEXT:      %[[C:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[EQ:.*]] = arith.cmpi eq, %[[I]], %[[C]] : index
// CHECK-NEXT:      %[[IGN:.*]] = arith.constant -100 : index
// CHECK-NEXT:      %[[COUNTS:.*]] = arith.cmpi ne, %[[I]], %[[IGN]] : index
// CHECK-NEXT:      %[[HIT:.*]] = arith.andi %[[EQ]], %[[COUNTS]] : i1
// CHECK-NEXT:      %[[NEG:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT:      arith.select %[[HIT]], %[[NEG]], %[[ACC]] : f32
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"], doc = "frame.nll_loss"} ins(%[[ROWS]] : tensor<4xf32>)
// CHECK:         %[[COUNT:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"], doc = "frame.nll_loss"} ins(%y : tensor<4xi64>)
// CHECK:           arith.cmpi ne
// CHECK:         %l = linalg.generic {{.*}} ins(%[[SUM]], %[[COUNT]] : tensor<f32>, tensor<f32>)
// CHECK:           arith.divf
// CHECK:         func.return %l

// -----

// cross_entropy, "none", i32 labels, ignore_index inside [0, C): the row max, the sum
// of exp(x - max), its log, then log(sum) - (x - max) at the label (the negation of
// log_softmax's value, bit for bit); no reduction after the rows.
func.func @ce(%x: tensor<4x5xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  %l = frame.cross_entropy %x, %y {ignore_index = 2 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return %l : tensor<4xf32>
}

// CHECK-LABEL: func.func @ce(%x: tensor<4x5xf32>, %y: tensor<4xi32> {frame.index_checks = [{op = "frame.cross_entropy", bound = 5 : i64, ignore_index = 2 : i64}]})
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"], doc = "frame.cross_entropy"} ins(%x : tensor<4x5xf32>)
// CHECK:           arith.cmpf ogt
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%x, %[[MAX]] : tensor<4x5xf32>, tensor<4xf32>)
// CHECK:           math.exp
// CHECK:         %[[LS:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>)
// CHECK:           math.log
// CHECK:         %l = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"], doc = "frame.cross_entropy"} ins(%x, %y, %[[MAX]], %[[LS]] : tensor<4x5xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>)
// CHECK:           arith.constant 2 : index
// CHECK:           %[[SH:.*]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %[[V:.*]] = arith.subf %{{.*}}, %[[SH]] : f32
// CHECK-NEXT:      arith.select %{{.*}}, %[[V]], %{{.*}} : f32
// CHECK:         func.return %l

// -----

// The gradient ops: per-row weights w (dy / count for "mean", 0 at ignored rows), then
// one parallel generic over (row, class).
func.func @grads(%x: tensor<4x5xf32>, %y: tensor<4xi64>, %dl: tensor<f32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  %g = frame.nll_loss_grad %x, %y, %dl {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  %h = frame.cross_entropy_grad %x, %y, %dl {ignore_index = -100 : i64, reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  func.return %g, %h : tensor<4x5xf32>, tensor<4x5xf32>
}

// CHECK-LABEL: func.func @grads(%x: tensor<4x5xf32>, %y: tensor<4xi64> {frame.index_checks = [{op = "frame.nll_loss", bound = 5 : i64, ignore_index = -100 : i64}, {op = "frame.cross_entropy", bound = 5 : i64, ignore_index = -100 : i64}]}, %dl: tensor<f32>)
// CHECK:         %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"], doc = "frame.nll_loss_grad"} ins(%y : tensor<4xi64>)
// CHECK:         %[[W:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.nll_loss_grad"} ins(%y, %dl, %[[COUNT]] : tensor<4xi64>, tensor<f32>, tensor<f32>)
// CHECK:           arith.divf
// CHECK:         %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.nll_loss_grad"} ins(%y, %[[W]] : tensor<4xi64>, tensor<4xf32>)
// CHECK:           arith.negf
// CHECK:         %h = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"], doc = "frame.cross_entropy_grad"} ins(%x, %y, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK:           math.exp
