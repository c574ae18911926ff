// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-fuse-elementwise | filecheck %s

// add -> relu: one generic. It keeps the relu's destination, maps, iterators and
// provenance (the op whose result it is), takes the add's inputs in place of the
// add's result, and runs the add's body, then the relu's on the added value. The
// add's destination (a tensor.empty nobody else uses) goes with it.
func.func @add_relu(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<8x4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.add"} ins(%a, %b : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e0 : tensor<8x4xf32>) attrs = {frame.layer = "fc1", frame.stage = "forward"} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.relu"} ins(%sum : tensor<8x4xf32>) outs(%e1 : tensor<8x4xf32>) attrs = {frame.layer = "fc1.relu", frame.stage = "forward"} {
  ^bb0(%v: f32, %o: f32):
    %zero = arith.constant 0.000000e+00 : f32
    %neg = arith.cmpf olt, %v, %zero : f32
    %y = arith.select %neg, %zero, %v : f32
    linalg.yield %y : f32
  } -> tensor<8x4xf32>
  func.return %r : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @add_relu
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<8x4xf32>, %[[B:[a-z0-9_]+]]: tensor<8x4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME:      iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      doc = "frame.add+frame.relu"}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<8x4xf32>, tensor<8x4xf32>) outs(%[[E]] : tensor<8x4xf32>)
// CHECK-SAME:      attrs = {frame.layer = "fc1.relu", frame.stage = "forward"}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[N:.*]] = arith.cmpf olt, %[[S]], %[[Z]] : f32
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[N]], %[[Z]], %[[S]] : f32
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NEXT:    } -> tensor<8x4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<8x4xf32>

// -----

// A chain of three, to a fixed point: broadcast -> add -> neg. The broadcast's
// input keeps its own map (d1): the merged op reads the bias vector directly.
func.func @chain(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %e0 = tensor.empty() : tensor<2x3xf32>
  %bc = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.broadcast"} ins(%b : tensor<3xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x3xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.add"} ins(%x, %bc : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e1 : tensor<2x3xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%sum : tensor<2x3xf32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<2x3xf32>
  func.return %n : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3xf32>, %[[B:[a-z0-9_]+]]: tensor<3xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:    %[[N:.*]] = linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME:      doc = "frame.broadcast+frame.add+frame.neg"}
// CHECK-SAME:      ins(%[[X]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%[[E]] : tensor<2x3xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[U:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[U]], %[[V]] : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.negf %[[S]] : f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
// CHECK-NEXT:    } -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[N]] : tensor<2x3xf32>

// -----

// f16 storage: the add's body still rounds its sum to f16 (truncf) before the relu
// widens it (extf), as when the sum was stored: bit-identical results. The dead
// widening of the add's destination argument is dropped; the relu's stays.
func.func @f16(%a: tensor<4xf16>, %b: tensor<4xf16>) -> tensor<4xf16> {
  %e0 = tensor.empty() : tensor<4xf16>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.add"} ins(%a, %b : tensor<4xf16>, tensor<4xf16>) outs(%e0 : tensor<4xf16>) {
  ^bb0(%x: f16, %y: f16, %o: f16):
    %xw = arith.extf %x : f16 to f32
    %yw = arith.extf %y : f16 to f32
    %ow = arith.extf %o : f16 to f32
    %s = arith.addf %xw, %yw : f32
    %sh = arith.truncf %s : f32 to f16
    linalg.yield %sh : f16
  } -> tensor<4xf16>
  %e1 = tensor.empty() : tensor<4xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.relu"} ins(%sum : tensor<4xf16>) outs(%e1 : tensor<4xf16>) {
  ^bb0(%v: f16, %o: f16):
    %vw = arith.extf %v : f16 to f32
    %ow = arith.extf %o : f16 to f32
    %zero = arith.constant 0.000000e+00 : f32
    %neg = arith.cmpf olt, %vw, %zero : f32
    %y = arith.select %neg, %zero, %vw : f32
    %yh = arith.truncf %y : f32 to f16
    linalg.yield %yh : f16
  } -> tensor<4xf16>
  func.return %r : tensor<4xf16>
}

// CHECK-LABEL: func.func @f16
// CHECK:         linalg.generic
// CHECK-SAME:      doc = "frame.add+frame.relu"}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f16, %[[Y:.*]]: f16, %[[O:.*]]: f16):
// CHECK-NEXT:      %[[XW:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT:      %[[YW:.*]] = arith.extf %[[Y]] : f16 to f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[XW]], %[[YW]] : f32
// CHECK-NEXT:      %[[SH:.*]] = arith.truncf %[[S]] : f32 to f16
// CHECK-NEXT:      %[[SW:.*]] = arith.extf %[[SH]] : f16 to f32
// CHECK-NEXT:      %{{.*}} = arith.extf %[[O]] : f16 to f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[N:.*]] = arith.cmpf olt, %[[SW]], %[[Z]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[N]], %[[Z]], %[[SW]] : f32
// CHECK-NEXT:      %[[RH:.*]] = arith.truncf %[[R]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[RH]] : f16

// -----

// An input both read the same way (%x) is passed once; the product is read twice by
// the square that follows it, and computed once.
func.func @shared(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %e0 = tensor.empty() : tensor<4xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.mul"} ins(%x, %y : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %m = arith.mulf %u, %v : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.sub"} ins(%p, %x : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.subf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.mul"} ins(%d, %d : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %m = arith.mulf %u, %v : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  func.return %q : tensor<4xf32>
}

// CHECK-LABEL: func.func @shared
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32>, %[[Y:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[Q:.*]] = linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>]
// CHECK-SAME:      doc = "frame.mul+frame.sub+frame.mul"}
// CHECK-SAME:      ins(%[[X]], %[[Y]] : tensor<4xf32>, tensor<4xf32>) outs(%[[E]] : tensor<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[U:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[U]], %[[V]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.subf %[[M]], %[[U]] : f32
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[S]], %[[S]] : f32
// CHECK-NEXT:      linalg.yield %[[SQ]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[Q]] : tensor<4xf32>

// -----

// A gradient merges into the SGD update that reads it: the update writes the
// parameter in place (its destination) and reads it in its body, which is fine for
// the consumer. Provenance is the update's.
func.func @update(%p: tensor<4xf32>, %x: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> {
  %e0 = tensor.empty() : tensor<4xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.relu_grad"} ins(%x, %dy : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32>) attrs = {frame.layer = "fc1.relu", frame.stage = "backward"} {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %zero = arith.constant 0.000000e+00 : f32
    %blocked = arith.cmpf ole, %u, %zero : f32
    %r = arith.select %blocked, %zero, %v : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %new = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.sgd_update"} ins(%g : tensor<4xf32>) outs(%p : tensor<4xf32>) attrs = {frame.layer = "fc1.bias", frame.stage = "update"} {
  ^bb0(%v: f32, %old: f32):
    %lr = arith.constant -5.000000e-01 : f32
    %step = arith.mulf %v, %lr : f32
    %s = arith.addf %old, %step : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %new : tensor<4xf32>
}

// CHECK-LABEL: func.func @update
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<4xf32>, %[[X:[a-z0-9_]+]]: tensor<4xf32>, %[[DY:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NOT:     tensor.empty
// CHECK-NEXT:    %[[N:.*]] = linalg.generic
// CHECK-SAME:      doc = "frame.relu_grad+frame.sgd_update"}
// CHECK-SAME:      ins(%[[X]], %[[DY]] : tensor<4xf32>, tensor<4xf32>) outs(%[[P]] : tensor<4xf32>)
// CHECK-SAME:      attrs = {frame.layer = "fc1.bias", frame.stage = "update"}
// CHECK-NEXT:    ^{{.*}}(%[[U:.*]]: f32, %[[V:.*]]: f32, %[[OLD:.*]]: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[BL:.*]] = arith.cmpf ole, %[[U]], %[[Z]] : f32
// CHECK-NEXT:      %[[G:.*]] = arith.select %[[BL]], %[[Z]], %[[V]] : f32
// CHECK-NEXT:      %[[LR:.*]] = arith.constant -5.000000e-01 : f32
// CHECK-NEXT:      %[[ST:.*]] = arith.mulf %[[G]], %[[LR]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[OLD]], %[[ST]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[N]] : tensor<4xf32>

// -----

// An update writes the parameter in place: a producer reading the parameter
// transposed does not merge into it -- iteration (i, j) would read p[j, i] after
// iteration (j, i) had overwritten it. (The transpose merges into the add, which then
// reads p transposed: the add stays apart from the update, writing its own buffer.)
func.func @update_transposed(%p: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %e0 = tensor.empty() : tensor<3x3xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.transpose"} ins(%p : tensor<3x3xf32>) outs(%e0 : tensor<3x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<3x3xf32>
  %e1 = tensor.empty() : tensor<3x3xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.add"} ins(%t, %p : tensor<3x3xf32>, tensor<3x3xf32>) outs(%e1 : tensor<3x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %a = arith.addf %x, %y : f32
    linalg.yield %a : f32
  } -> tensor<3x3xf32>
  %new = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.update"} ins(%s : tensor<3x3xf32>) outs(%p : tensor<3x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<3x3xf32>
  func.return %new : tensor<3x3xf32>
}

// CHECK-LABEL: func.func @update_transposed
// CHECK-SAME:    (%[[P:[a-z0-9_]+]]: tensor<3x3xf32>)
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME:      doc = "frame.transpose+frame.add"}
// CHECK-SAME:      ins(%[[P]], %[[P]] : tensor<3x3xf32>, tensor<3x3xf32>) outs(%[[E]] : tensor<3x3xf32>)
// CHECK:         %[[N:.*]] = linalg.generic
// CHECK-SAME:      doc = "frame.update"}
// CHECK-SAME:      ins(%[[S]] : tensor<3x3xf32>) outs(%[[P]] : tensor<3x3xf32>)
// CHECK:         func.return %[[N]] : tensor<3x3xf32>

// -----

// A result written through a permutation and read through the same one: iteration
// (i, j) reads what iteration (i, j) wrote, so the producer's input keeps its map.
func.func @permuted(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e0 = tensor.empty() : tensor<3x2xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%x : tensor<2x3xf32>) outs(%e0 : tensor<3x2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<3x2xf32>
  %e1 = tensor.empty() : tensor<3x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"], doc = "frame.relu"} ins(%t : tensor<3x2xf32>) outs(%e1 : tensor<3x2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %zero = arith.constant 0.000000e+00 : f32
    %y = arith.maximumf %v, %zero : f32
    linalg.yield %y : f32
  } -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @permuted
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x3xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>]
// CHECK-SAME:      doc = "frame.neg+frame.relu"}
// CHECK-SAME:      ins(%[[X]] : tensor<2x3xf32>)
// CHECK-NOT:     linalg.generic

// -----

// Not fused: a producer read by two ops (fusing it into either would compute it
// twice).
func.func @two_readers(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e0 = tensor.empty() : tensor<4xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.neg"} ins(%x : tensor<4xf32>) outs(%e0 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.scale"} ins(%n : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = arith.constant 3.000000e+00 : f32
    %y = arith.mulf %v, %c : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.add"} ins(%n, %x : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %y = arith.addf %u, %v : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @two_readers
// CHECK:         %[[N:.*]] = linalg.generic {{.*}} doc = "frame.neg"}
// CHECK:         %[[A:.*]] = linalg.generic {{.*}} doc = "frame.scale"} ins(%[[N]] : tensor<4xf32>)
// CHECK:         %[[B:.*]] = linalg.generic {{.*}} doc = "frame.add"} ins(%[[N]], %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// CHECK:         func.return %[[A]], %[[B]]

// -----

// Not fused: reductions, in either role; a linalg.fill; a read through another map
// than the write's (a transpose of an elementwise result); a write through a map
// that is not a permutation (a reshape's); a producer that reads its destination;
// a producer whose result is the consumer's destination; a generic with two results.
func.func @boundaries(%x: tensor<4x8xf32>, %p: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<32xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "frame.sum"} ins(%n : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%v: f32, %a: f32):
    %y = arith.addf %a, %v : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %e5 = tensor.empty() : tensor<4xf32>
  %rs = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.neg"} ins(%sum : tensor<4xf32>) outs(%e5 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.add"} ins(%filled, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %y = arith.addf %u, %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%x : tensor<4x8xf32>) outs(%e3 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e6 = tensor.empty() : tensor<8x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.transpose"} ins(%m : tensor<4x8xf32>) outs(%e6 : tensor<8x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  %e7 = tensor.empty() : tensor<32xf32>
  %flat = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0 * 8 + d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.reshape"} ins(%x : tensor<4x8xf32>) outs(%e7 : tensor<32xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<32xf32>
  %e8 = tensor.empty() : tensor<32xf32>
  %fr = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.neg"} ins(%flat : tensor<32xf32>) outs(%e8 : tensor<32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<32xf32>
  %upd = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.sgd_update"} ins(%x : tensor<4x8xf32>) outs(%p : tensor<4x8xf32>) {
  ^bb0(%v: f32, %old: f32):
    %y = arith.subf %old, %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e9 = tensor.empty() : tensor<4x8xf32>
  %un = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%upd : tensor<4x8xf32>) outs(%e9 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e10 = tensor.empty() : tensor<4x8xf32>
  %dst = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%x : tensor<4x8xf32>) outs(%e10 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %into = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.sgd_update"} ins(%x : tensor<4x8xf32>) outs(%dst : tensor<4x8xf32>) {
  ^bb0(%v: f32, %old: f32):
    %y = arith.subf %old, %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e11 = tensor.empty() : tensor<4x8xf32>
  %e12 = tensor.empty() : tensor<4x8xf32>
  %two:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.selective_scan"} ins(%x : tensor<4x8xf32>) outs(%e11, %e12 : tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%v: f32, %o1: f32, %o2: f32):
    %y = arith.negf %v : f32
    linalg.yield %y, %v : f32, f32
  } -> tensor<4x8xf32>, tensor<4x8xf32>
  %e13 = tensor.empty() : tensor<4x8xf32>
  %after = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.neg"} ins(%two#0 : tensor<4x8xf32>) outs(%e13 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  func.return %rs, %f, %t, %fr, %un, %into, %after : tensor<4xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<32xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @boundaries
// CHECK:         %[[N:.*]] = linalg.generic {{.*}}doc = "frame.neg"}
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}}doc = "frame.sum"} ins(%[[N]] :
// CHECK:         linalg.generic {{.*}}doc = "frame.neg"} ins(%[[SUM]] :
// CHECK:         %[[FILLED:.*]] = linalg.fill
// CHECK:         linalg.generic {{.*}}doc = "frame.add"} ins(%[[FILLED]], %{{.*}} :
// CHECK:         %[[M:.*]] = linalg.generic {{.*}}doc = "frame.neg"}
// CHECK:         linalg.generic {{.*}}doc = "frame.transpose"} ins(%[[M]] :
// CHECK:         %[[FLAT:.*]] = linalg.generic {{.*}}doc = "frame.reshape"}
// CHECK:         linalg.generic {{.*}}doc = "frame.neg"} ins(%[[FLAT]] :
// CHECK:         %[[UPD:.*]] = linalg.generic {{.*}}doc = "frame.sgd_update"}
// CHECK:         linalg.generic {{.*}}doc = "frame.neg"} ins(%[[UPD]] :
// CHECK:         %[[DST:.*]] = linalg.generic {{.*}}doc = "frame.neg"}
// CHECK:         linalg.generic {{.*}}doc = "frame.sgd_update"} ins(%{{.*}} : tensor<4x8xf32>) outs(%[[DST]] :
// CHECK:         %[[TWO:[a-z0-9_]+]], %{{.*}} = linalg.generic {{.*}}doc = "frame.selective_scan"}
// CHECK:         linalg.generic {{.*}}doc = "frame.neg"} ins(%[[TWO]] :
// CHECK:         func.return

// -----

// A slice (reading part of dim 1 as `d1 + 1`) feeding a reshape (writing through a
// compound map) stays two generics: merged, no map would hold d1 bare, and linalg
// could not bound that loop.
func.func @slice_into_reshape(%x: tensor<2x3x5xf32>) -> tensor<10xf32> {
  %e = tensor.empty() : tensor<2x1x5xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, (d1 + 1), d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.slice"} ins(%x : tensor<2x3x5xf32>) outs(%e : tensor<2x1x5xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<2x1x5xf32>
  %e2 = tensor.empty() : tensor<10xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ((((d0 * 5) + (d1 * 5)) + d2))>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.reshape"} ins(%s : tensor<2x1x5xf32>) outs(%e2 : tensor<10xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<10xf32>
  func.return %r : tensor<10xf32>
}

// CHECK-LABEL: func.func @slice_into_reshape
// CHECK:         %[[S:.*]] = linalg.generic {{.*}}doc = "frame.slice"}
// CHECK:         linalg.generic {{.*}}doc = "frame.reshape"} ins(%[[S]] :
