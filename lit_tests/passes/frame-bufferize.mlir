// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-bufferize | filecheck %s
// A bufferized function has no tensors left: a second run leaves it as it is.
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-bufferize,frame-bufferize | filecheck %s

// A train-step shaped function: three 4x4 intermediates, a 0-d loss returned as
// result #0, and the parameter %w donated to result #1 (updated in place).
func.func @step(%x: tensor<4x4xf32>, %w: tensor<4x4xf32> {frame.param = "w", frame.aliasing_output = 1 : i64}) -> (tensor<f32>, tensor<4x4xf32>) {
  %e0 = tensor.empty() : tensor<4x4xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%e0 : tensor<4x4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.mulf %i, %i : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.negf %i : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%c : tensor<4x4xf32>) outs(%init : tensor<f32>) {
  ^bb0(%i: f32, %acc: f32):
    %s = arith.addf %acc, %i : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %w1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<4x4xf32>) outs(%w : tensor<4x4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.subf %o, %i : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  func.return %loss, %w1 : tensor<f32>, tensor<4x4xf32>
}

// The donated result leaves the signature; the loss becomes an out-parameter
// (frame.output = 0); the arena is the last argument and its size an attribute.
// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: memref<4x4xf32>,
// CHECK-SAME:    %[[W:[a-z0-9_]+]]: memref<4x4xf32> {frame.param = "w", frame.aliasing_output = 1 : i64},
// CHECK-SAME:    %[[OUT:[a-z0-9_]+]]: memref<f32> {frame.output = 0 : i64},
// CHECK-SAME:    %[[ARENA:[a-z0-9_]+]]: memref<128xi8> {frame.arena})
// CHECK-SAME:    attributes {frame.arena_size = 128 : i64} {
// %a lives at offset 0 ...
// CHECK-NEXT:    %[[OFF0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %[[ARENA]][%[[OFF0]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[X]] : memref<4x4xf32>) outs(%[[A]] : memref<4x4xf32>)
// CHECK:         }
// ... %b overlaps it (it reads %a), so it goes at offset 64 ...
// CHECK-NEXT:    %[[OFF1:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[B:.*]] = memref.view %[[ARENA]][%[[OFF1]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[A]], %[[W]] : memref<4x4xf32>, memref<4x4xf32>) outs(%[[B]] : memref<4x4xf32>)
// CHECK:         }
// ... and %c reuses offset 0: %a is dead by then.
// CHECK-NEXT:    %[[OFF2:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C:.*]] = memref.view %[[ARENA]][%[[OFF2]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[B]] : memref<4x4xf32>) outs(%[[C]] : memref<4x4xf32>)
// CHECK:         }
// The loss is computed directly in the out-parameter, not in the arena.
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    linalg.fill ins(%[[ZERO]] : f32) outs(%[[OUT]] : memref<f32>)
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[C]] : memref<4x4xf32>) outs(%[[OUT]] : memref<f32>)
// CHECK:         }
// The parameter is updated in its own buffer.
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[C]] : memref<4x4xf32>) outs(%[[W]] : memref<4x4xf32>)
// CHECK:         }
// CHECK-NEXT:    func.return{{$}}
// CHECK-NOT:     tensor
// CHECK-NOT:     memref.alloc

// -----

// A function without intermediates still gets a (minimal, 64-byte) arena.
func.func @passthrough(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// Returning an argument copies it into the out-parameter.
// CHECK-LABEL: func.func @passthrough
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: memref<4xf32>, %[[OUT:[a-z0-9_]+]]: memref<4xf32> {frame.output = 0 : i64}, %{{.*}}: memref<64xi8> {frame.arena})
// CHECK-SAME:    attributes {frame.arena_size = 64 : i64}
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[X]] : memref<4xf32>) outs(%[[OUT]] : memref<4xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// Writing into an argument that is not donated keeps value semantics. An op that
// writes its whole destination once per element (all loops parallel, the identity
// map) reads the argument as one more input and writes a fresh buffer (here: the
// out-parameter) -- what a copy and the op in place would give, in one pass.
func.func @not_donated(%g: tensor<4xf32>, %p: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : tensor<4xf32>) outs(%p : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.subf %o, %i : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @not_donated
// CHECK-SAME:    (%[[G:[a-z0-9_]+]]: memref<4xf32>, %[[P:[a-z0-9_]+]]: memref<4xf32>, %[[OUT:[a-z0-9_]+]]: memref<4xf32> {frame.output = 0 : i64}, %{{.*}}: memref<64xi8> {frame.arena})
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[G]], %[[P]] : memref<4xf32>, memref<4xf32>) outs(%[[OUT]] : memref<4xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[I:.*]]: f32, %[[OLD:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      arith.subf %[[OLD]], %[[I]] : f32
// CHECK-NOT:     outs(%[[P]]

// -----

// A reduction into an argument that is not donated reads its destination as the
// running sum: the argument is copied into a fresh buffer (the out-parameter) first.
func.func @not_donated_sum(%g: tensor<3x4xf32>, %p: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%g : tensor<3x4xf32>) outs(%p : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.addf %o, %i : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @not_donated_sum
// CHECK-SAME:    (%[[G:[a-z0-9_]+]]: memref<3x4xf32>, %[[P:[a-z0-9_]+]]: memref<4xf32>, %[[OUT:[a-z0-9_]+]]: memref<4xf32> {frame.output = 0 : i64}, %{{.*}}: memref<64xi8> {frame.arena})
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[P]] : memref<4xf32>) outs(%[[OUT]] : memref<4xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[G]] : memref<3x4xf32>) outs(%[[OUT]] : memref<4xf32>)
// CHECK-NOT:     outs(%[[P]]

// -----

// One value returned twice: computed in the first out-parameter, copied to the second.
func.func @returned_twice(%g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.negf %i : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %q, %q : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @returned_twice
// CHECK-SAME:    (%[[G:[a-z0-9_]+]]: memref<4xf32>, %[[OUT0:[a-z0-9_]+]]: memref<4xf32> {frame.output = 0 : i64}, %[[OUT1:[a-z0-9_]+]]: memref<4xf32> {frame.output = 1 : i64}, %{{.*}}: memref<64xi8> {frame.arena})
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[G]] : memref<4xf32>) outs(%[[OUT0]] : memref<4xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[OUT0]] : memref<4xf32>) outs(%[[OUT1]] : memref<4xf32>)

// -----

// frame.scan: the step function (after its caller here) is bufferized first, so the
// caller knows its arena size. The scan's result is a buffer class of its own (rooted
// at the scan, live until the sum reads it); its operands are read at the scan; the
// step's arena gets a slot of 64 bytes (its frame.arena_size) live at the scan only.
// The scan becomes frame_rt.scan with the result and the slot as its last operands.
func.func @rnn(%h0: tensor<4xf32>, %xs: tensor<3x4xf32>) -> tensor<f32> {
  %hs = frame.scan @acc(%h0, %xs) {length = 3 : i64, num_sequences = 1 : i64, frame.stage = "forward"} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%hs : tensor<3x4xf32>) outs(%init : tensor<f32>) {
  ^bb0(%i: f32, %acc: f32):
    %s = arith.addf %acc, %i : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  func.return %l : tensor<f32>
}
// A scan whose result is returned writes the out-parameter directly.
func.func @returned(%h0: tensor<4xf32>, %xs: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %hs = frame.scan @acc(%h0, %xs) {length = 2 : i64, num_sequences = 1 : i64, reverse} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %hs : tensor<2x4xf32>
}
func.func @acc(%h: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%h, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @rnn
// CHECK-SAME:    (%[[H0:[a-z0-9_]+]]: memref<4xf32>, %[[XS:[a-z0-9_]+]]: memref<3x4xf32>,
// CHECK-SAME:    %[[OUT:[a-z0-9_]+]]: memref<f32> {frame.output = 0 : i64},
// CHECK-SAME:    %[[ARENA:[a-z0-9_]+]]: memref<128xi8> {frame.arena})
// CHECK-SAME:    attributes {frame.arena_size = 128 : i64} {
// CHECK-NEXT:    %[[OFF0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[HS:.*]] = memref.view %[[ARENA]][%[[OFF0]]][] : memref<128xi8> to memref<3x4xf32>
// CHECK-NEXT:    %[[OFF1:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[SLOT:.*]] = memref.view %[[ARENA]][%[[OFF1]]][] : memref<128xi8> to memref<64xi8>
// CHECK-NEXT:    frame_rt.scan @acc(%[[H0]], %[[XS]], %[[HS]], %[[SLOT]]) {frame.stage = "forward", length = 3 : i64, num_sequences = 1 : i64} : memref<4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<64xi8>
// CHECK:         linalg.fill {{.*}} outs(%[[OUT]] : memref<f32>)
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[HS]] : memref<3x4xf32>) outs(%[[OUT]] : memref<f32>)
// CHECK-LABEL: func.func @returned
// CHECK-SAME:    (%[[H0:[a-z0-9_]+]]: memref<4xf32>, %[[XS:[a-z0-9_]+]]: memref<2x4xf32>,
// CHECK-SAME:    %[[OUT:[a-z0-9_]+]]: memref<2x4xf32> {frame.output = 0 : i64},
// CHECK-SAME:    %[[ARENA:[a-z0-9_]+]]: memref<64xi8> {frame.arena})
// CHECK-NEXT:    %[[OFF:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SLOT:.*]] = memref.view %[[ARENA]][%[[OFF]]][] : memref<64xi8> to memref<64xi8>
// CHECK-NEXT:    frame_rt.scan @acc(%[[H0]], %[[XS]], %[[OUT]], %[[SLOT]]) {length = 2 : i64, num_sequences = 1 : i64, reverse}
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @acc
// CHECK-SAME:    (%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32> {frame.output = 0 : i64}, %{{.*}}: memref<64xi8> {frame.arena})
// CHECK-SAME:    attributes {frame.arena_size = 64 : i64}

// -----

// A donated parameter that is still read after its update cannot be updated in
// place (frame-sgd-fuse places the updates last so that this does not happen).
// expected-error@+1 {{frame-bufferize at @read_after_update: argument #1 is donated to result #0, but that result is not computed in its buffer}}
func.func @read_after_update(%g: tensor<4xf32>, %p: tensor<4xf32> {frame.aliasing_output = 0 : i64}) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : tensor<4xf32>) outs(%p : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.subf %o, %i : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%p : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.negf %i : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %r, %q : tensor<4xf32>, tensor<4xf32>
}


// -----

// A step function that scans over itself cannot be bufferized callee first.
func.func @loop(%h: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{frame-bufferize at @loop: frame.scan: step function @loop scans over itself, directly or through other steps: not supported}}
  %hs = frame.scan @loop(%h, %x) {length = 1 : i64, num_sequences = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  func.return %h : tensor<4xf32>
}

