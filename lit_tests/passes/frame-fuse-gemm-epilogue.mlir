// RUN: frame-opt %s --split-input-file -p 'frame-fuse-gemm-epilogue{min_flops=0}' | filecheck %s

// A matmul kernel writing C, then a bias add reading C and a relu reading the sum:
// both join the GEMM's epilogue. The sum is written where C was (the arena plan reused
// C's bytes: the same buffer, passed once), and the relu's output lives elsewhere.

builtin.module {
  func.func private @f__k0_matmul(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @f__k1_broadcast_add(%c: memref<6x8xf32>, %bias: memref<8xf32>, %s: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.broadcast+frame.add"} ins(%c, %bias : memref<6x8xf32>, memref<8xf32>) outs(%s : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = arith.addf %x, %y : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @f__k2_relu(%s: memref<6x8xf32>, %h: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.relu"} ins(%s : memref<6x8xf32>) outs(%h : memref<6x8xf32>) {
    ^bb0(%x: f32, %z: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %r = arith.maximumf %x, %zero : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %bias: memref<8xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    func.call @f__k0_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    %1 = arith.constant 0 : index
    %s = memref.view %arena[%1][] : memref<512xi8> to memref<6x8xf32>
    func.call @f__k1_broadcast_add(%c, %bias, %s) : (memref<6x8xf32>, memref<8xf32>, memref<6x8xf32>) -> ()
    %2 = arith.constant 256 : index
    %h = memref.view %arena[%2][] : memref<512xi8> to memref<6x8xf32>
    func.call @f__k2_relu(%s, %h) : (memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// The fused kernel: the contraction, then the epilogue generics in order, on the union
// of the arguments (C and the sum are one argument). The old kernels are gone.
// CHECK-LABEL: func.func private @f__k0_matmul_broadcast_add_relu(
// CHECK-SAME:    %[[A:.*]]: memref<6x5xf32>, %[[B:.*]]: memref<5x8xf32>, %[[C:.*]]: memref<6x8xf32>, %[[BIAS:.*]]: memref<8xf32>, %[[H:.*]]: memref<6x8xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[A]], %[[B]] : {{.*}}) outs(%[[C]] : memref<6x8xf32>)
// CHECK:           math.fma
// CHECK:         linalg.generic {{.*}} ins(%[[C]], %[[BIAS]] : {{.*}}) outs(%[[C]] : memref<6x8xf32>)
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} ins(%[[C]] : {{.*}}) outs(%[[H]] : memref<6x8xf32>)
// CHECK:           arith.maximumf
// CHECK-NOT:   func.func private @f__k0_matmul(
// CHECK-NOT:   func.func private @f__k1_broadcast_add(
// CHECK-NOT:   func.func private @f__k2_relu(
// CHECK-LABEL: func.func @f(
// CHECK:         %[[C2:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<512xi8> to memref<6x8xf32>
// CHECK:         %[[H2:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<512xi8> to memref<6x8xf32>
// CHECK-NEXT:    func.call @f__k0_matmul_broadcast_add_relu(%{{.*}}, %{{.*}}, %[[C2]], %{{.*}}, %[[H2]])
// CHECK-NOT:     func.call
// CHECK:         func.return

// -----

// Not fused: the first add writes over A (the GEMM still reads all of A while it
// computes C's first tiles); the second cannot move up past the copy, which writes its
// output too.

builtin.module {
  func.func private @g__k0_matmul(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @g__k1_add(%c: memref<6x8xf32>, %d: memref<6x8xf32>, %s: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.add"} ins(%c, %d : memref<6x8xf32>, memref<6x8xf32>) outs(%s : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = arith.addf %x, %y : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @g__k2_copy(%s: memref<6x8xf32>, %o: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.copy"} ins(%s : memref<6x8xf32>) outs(%o : memref<6x8xf32>) {
    ^bb0(%x: f32, %z: f32):
      linalg.yield %x : f32
    }
    func.return
  }
  func.func @g(%b: memref<5x8xf32>, %d: memref<6x8xf32>, %o: memref<6x8xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %a = memref.view %arena[%0][] : memref<512xi8> to memref<6x5xf32>
    %1 = arith.constant 256 : index
    %c = memref.view %arena[%1][] : memref<512xi8> to memref<6x8xf32>
    func.call @g__k0_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    %s = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    func.call @g__k1_add(%c, %d, %s) : (memref<6x8xf32>, memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.call @g__k0_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @g__k2_copy(%d, %o) : (memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.call @g__k1_add(%c, %d, %o) : (memref<6x8xf32>, memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func @g(
// CHECK:         func.call @g__k0_matmul(
// CHECK-NEXT:    %{{.*}} = memref.view
// CHECK-NEXT:    func.call @g__k1_add(
// CHECK-NEXT:    func.call @g__k0_matmul(
// CHECK-NEXT:    func.call @g__k2_copy(
// CHECK-NEXT:    func.call @g__k1_add(
// CHECK-NEXT:    func.return

// -----

// C is an arena temporary that starts from a zero fill and that nothing reads after
// the epilogue: the fill and the GEMM take the epilogue's output (%o) instead, and the
// epilogue runs in place on it -- C never goes to memory twice. In @h2 a later call
// reads C (transposed: not an epilogue), so C keeps its own buffer.

builtin.module {
  func.func private @h__k0_fill(%c: memref<6x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    linalg.fill ins(%zero : f32) outs(%c : memref<6x8xf32>)
    func.return
  }
  func.func private @h__k1_matmul(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @h__k2_add_relu(%c: memref<6x8xf32>, %bias: memref<8xf32>, %o: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.add_relu"} ins(%c, %bias : memref<6x8xf32>, memref<8xf32>) outs(%o : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %s = arith.addf %x, %y : f32
      %zero = arith.constant 0.000000e+00 : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @h__k3_transpose(%c: memref<6x8xf32>, %o: memref<8x6xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.transpose"} ins(%c : memref<6x8xf32>) outs(%o : memref<8x6xf32>) {
    ^bb0(%x: f32, %z: f32):
      linalg.yield %x : f32
    }
    func.return
  }
  func.func @h(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %bias: memref<8xf32>, %o: memref<6x8xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    func.call @h__k0_fill(%c) : (memref<6x8xf32>) -> ()
    func.call @h__k1_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @h__k2_add_relu(%c, %bias, %o) : (memref<6x8xf32>, memref<8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
  func.func @h2(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %bias: memref<8xf32>, %o: memref<6x8xf32>, %o2: memref<8x6xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    func.call @h__k0_fill(%c) : (memref<6x8xf32>) -> ()
    func.call @h__k1_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @h__k2_add_relu(%c, %bias, %o) : (memref<6x8xf32>, memref<8xf32>, memref<6x8xf32>) -> ()
    func.call @h__k3_transpose(%c, %o2) : (memref<6x8xf32>, memref<8x6xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func @h(
// CHECK-SAME:      %[[A:.*]]: memref<6x5xf32>, %[[B:.*]]: memref<5x8xf32>, %[[BIAS:.*]]: memref<8xf32>, %[[O:.*]]: memref<6x8xf32>,
// CHECK:         func.call @h__k0_fill(%[[O]])
// CHECK-NEXT:    func.call @h__k1_matmul_add_relu(%[[A]], %[[B]], %[[O]], %[[BIAS]]) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @h2(
// CHECK-SAME:      %[[A:.*]]: memref<6x5xf32>, %[[B:.*]]: memref<5x8xf32>, %[[BIAS:.*]]: memref<8xf32>, %[[O:.*]]: memref<6x8xf32>, %[[O2:.*]]: memref<8x6xf32>,
// CHECK:         %[[C:.*]] = memref.view
// CHECK:         func.call @h__k0_fill(%[[C]])
// CHECK-NEXT:    func.call @h__k1_matmul_add_relu2(%[[A]], %[[B]], %[[C]], %[[BIAS]], %[[O]])
// CHECK-NEXT:    func.call @h__k3_transpose(%[[C]], %[[O2]])

// -----

// An SGD update in place (w -= 0.1 * C) cannot take C's place: it reads its output. C
// is still dead after it, so the fused kernel is marked `frame.c_dead` (frame-gemm may
// then keep C's tiles in scratch and never store them). In @s2 a later call reads C:
// no mark, and a kernel of its own.

builtin.module {
  func.func private @s__k0_fill(%c: memref<6x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    linalg.fill ins(%zero : f32) outs(%c : memref<6x8xf32>)
    func.return
  }
  func.func private @s__k1_matmul(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @s__k2_sgd_update(%c: memref<6x8xf32>, %w: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.sgd_update"} ins(%c : memref<6x8xf32>) outs(%w : memref<6x8xf32>) {
    ^bb0(%g: f32, %p: f32):
      %lr = arith.constant 1.000000e-01 : f32
      %step = arith.mulf %lr, %g : f32
      %r = arith.subf %p, %step : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @s__k3_transpose(%c: memref<6x8xf32>, %o: memref<8x6xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.transpose"} ins(%c : memref<6x8xf32>) outs(%o : memref<8x6xf32>) {
    ^bb0(%x: f32, %z: f32):
      linalg.yield %x : f32
    }
    func.return
  }
  func.func @s(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %w: memref<6x8xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    func.call @s__k0_fill(%c) : (memref<6x8xf32>) -> ()
    func.call @s__k1_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @s__k2_sgd_update(%c, %w) : (memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
  func.func @s2(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %w: memref<6x8xf32>, %o: memref<8x6xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    func.call @s__k0_fill(%c) : (memref<6x8xf32>) -> ()
    func.call @s__k1_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @s__k2_sgd_update(%c, %w) : (memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.call @s__k3_transpose(%c, %o) : (memref<6x8xf32>, memref<8x6xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @s__k1_matmul_sgd_update(
// CHECK-SAME:      %{{.*}}: memref<6x8xf32>) attributes {frame.c_dead} {
// CHECK-LABEL: func.func private @s__k1_matmul_sgd_update2(
// CHECK-SAME:      %{{.*}}: memref<6x8xf32>) {
// CHECK-LABEL: func.func @s(
// CHECK-SAME:      %[[A:.*]]: memref<6x5xf32>, %[[B:.*]]: memref<5x8xf32>, %[[W:.*]]: memref<6x8xf32>,
// CHECK:         %[[C:.*]] = memref.view
// CHECK-NEXT:    func.call @s__k0_fill(%[[C]])
// CHECK-NEXT:    func.call @s__k1_matmul_sgd_update(%[[A]], %[[B]], %[[C]], %[[W]])
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @s2(
// CHECK:         func.call @s__k1_matmul_sgd_update2(
// CHECK-NEXT:    func.call @s__k3_transpose(

// -----

// The walk passes over calls that cannot join: after the relu gradient (in the
// epilogue, C stored in its output %d), a transpose reads %d at other elements and
// stays; the SGD update of a full-shape bias, which reads %d after it, moves up past
// it into the epilogue. In @p2 the transpose reads the bias instead: the update cannot
// move up past it, and stays apart.

builtin.module {
  func.func private @p__k0_fill(%c: memref<6x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    linalg.fill ins(%zero : f32) outs(%c : memref<6x8xf32>)
    func.return
  }
  func.func private @p__k1_matmul(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @p__k2_relu_grad(%c: memref<6x8xf32>, %h: memref<6x8xf32>, %d: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.relu_grad"} ins(%c, %h : memref<6x8xf32>, memref<6x8xf32>) outs(%d : memref<6x8xf32>) {
    ^bb0(%g: f32, %x: f32, %z: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %pos = arith.cmpf ogt, %x, %zero : f32
      %r = arith.select %pos, %g, %zero : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @p__k3_transpose(%d: memref<6x8xf32>, %o: memref<8x6xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.transpose"} ins(%d : memref<6x8xf32>) outs(%o : memref<8x6xf32>) {
    ^bb0(%x: f32, %z: f32):
      linalg.yield %x : f32
    }
    func.return
  }
  func.func private @p__k4_sgd_update(%d: memref<6x8xf32>, %w: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.sgd_update"} ins(%d : memref<6x8xf32>) outs(%w : memref<6x8xf32>) {
    ^bb0(%g: f32, %p: f32):
      %lr = arith.constant 1.000000e-01 : f32
      %step = arith.mulf %lr, %g : f32
      %r = arith.subf %p, %step : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @p(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %h: memref<6x8xf32>, %bias: memref<6x8xf32>, %o: memref<8x6xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    %1 = arith.constant 256 : index
    %d = memref.view %arena[%1][] : memref<512xi8> to memref<6x8xf32>
    func.call @p__k0_fill(%c) : (memref<6x8xf32>) -> ()
    func.call @p__k1_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @p__k2_relu_grad(%c, %h, %d) : (memref<6x8xf32>, memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.call @p__k3_transpose(%d, %o) : (memref<6x8xf32>, memref<8x6xf32>) -> ()
    func.call @p__k4_sgd_update(%d, %bias) : (memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
  func.func @p2(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %h: memref<6x8xf32>, %bias: memref<6x8xf32>, %o: memref<8x6xf32>, %arena: memref<512xi8> {frame.arena}) {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    %1 = arith.constant 256 : index
    %d = memref.view %arena[%1][] : memref<512xi8> to memref<6x8xf32>
    func.call @p__k0_fill(%c) : (memref<6x8xf32>) -> ()
    func.call @p__k1_matmul(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @p__k2_relu_grad(%c, %h, %d) : (memref<6x8xf32>, memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.call @p__k3_transpose(%bias, %o) : (memref<6x8xf32>, memref<8x6xf32>) -> ()
    func.call @p__k4_sgd_update(%d, %bias) : (memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @p__k1_matmul_relu_grad_sgd_update(
// CHECK-LABEL: func.func private @p__k1_matmul_relu_grad(
// CHECK-LABEL: func.func @p(
// CHECK-SAME:      %[[A:.*]]: memref<6x5xf32>, %[[B:.*]]: memref<5x8xf32>, %[[H:.*]]: memref<6x8xf32>, %[[BIAS:.*]]: memref<6x8xf32>, %[[O:.*]]: memref<8x6xf32>,
// CHECK:         memref.view
// CHECK-NEXT:    arith.constant 256
// CHECK-NEXT:    %[[D:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<512xi8> to memref<6x8xf32>
// CHECK-NEXT:    func.call @p__k0_fill(%[[D]])
// CHECK-NEXT:    func.call @p__k1_matmul_relu_grad_sgd_update(%[[A]], %[[B]], %[[D]], %[[H]], %[[BIAS]])
// CHECK-NEXT:    func.call @p__k3_transpose(%[[D]], %[[O]])
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @p2(
// CHECK:         func.call @p__k1_matmul_relu_grad(
// CHECK-NEXT:    func.call @p__k3_transpose(
// CHECK-NEXT:    func.call @p__k4_sgd_update(
// CHECK-NEXT:    func.return
