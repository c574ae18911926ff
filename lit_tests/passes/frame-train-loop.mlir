// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-train-loop | filecheck %s

// A train step as the loops stage leaves it (kernels outlined, one 0-d loss output,
// a parameter updated in place, the arena): the pass adds @m_train_loop after it,
// with the step's arguments and attributes, then %steps and %losses. The loop reads
// the count once, calls the step once per iteration on the same buffers and stores
// each loss at its step's index.
func.func private @m__k0_step(%w: memref<4xf32>, %loss: memref<f32>) {
  func.return
}
func.func @m_train_step(%x: memref<4xf32>, %w: memref<4xf32> {frame.param = "w", frame.aliasing_output = 1 : i64}, %out: memref<f32> {frame.output = 0 : i64}, %arena: memref<64xi8> {frame.arena}) attributes {frame.train_step = "m", frame.arena_size = 64 : i64} {
  func.call @m__k0_step(%w, %out) : (memref<4xf32>, memref<f32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @m_train_step(
// CHECK:       func.func @m_train_loop(%[[X:.*]]: memref<4xf32>, %[[W:.*]]: memref<4xf32> {frame.param = "w", frame.aliasing_output = 1 : i64}, %[[OUT:.*]]: memref<f32> {frame.output = 0 : i64}, %[[A:.*]]: memref<64xi8> {frame.arena}, %[[N:.*]]: memref<i64> {frame.steps}, %[[L:.*]]: memref<?xf32> {frame.losses}) attributes {frame.train_loop = "m", frame.arena_size = 64 : i64} {
// CHECK-NEXT:    %[[C:.*]] = memref.load %[[N]][] : memref<i64>
// CHECK-NEXT:    %[[UB:.*]] = arith.index_cast %[[C]] : i64 to index
// CHECK-NEXT:    %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[LB]] to %[[UB]] step %[[ONE]] {
// CHECK-NEXT:      func.call @m_train_step(%[[X]], %[[W]], %[[OUT]], %[[A]]) : (memref<4xf32>, memref<4xf32>, memref<f32>, memref<64xi8>) -> ()
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[OUT]][] : memref<f32>
// CHECK-NEXT:      memref.store %[[V]], %[[L]][%[[I]]] : memref<?xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// -----

// The loss type carries over (an f16 model logs f16 losses). Functions that are not
// train steps get no loop.
func.func @h(%x: memref<4xf16>, %out: memref<f16> {frame.output = 0 : i64}) {
  func.return
}
func.func @h_train_step(%x: memref<4xf16>, %out: memref<f16> {frame.output = 0 : i64}) attributes {frame.train_step = "h"} {
  func.return
}

// CHECK-LABEL: func.func @h(
// CHECK-LABEL: func.func @h_train_step(
// CHECK:       func.func @h_train_loop(%{{.*}}: memref<4xf16>, %{{.*}}: memref<f16> {frame.output = 0 : i64}, %{{.*}}: memref<i64> {frame.steps}, %{{.*}}: memref<?xf16> {frame.losses}) attributes {frame.train_loop = "h"} {
// CHECK:         memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xf16>
// CHECK-NOT:   func.func
// CHECK:       // -----

// -----

// A step whose outputs are not exactly one 0-d loss has nothing to log: no loop.
func.func @two_train_step(%x: memref<4xf32>, %a: memref<f32> {frame.output = 0 : i64}, %b: memref<4xf32> {frame.output = 1 : i64}) attributes {frame.train_step = "two"} {
  func.return
}
func.func @vec_train_step(%x: memref<4xf32>, %out: memref<4xf32> {frame.output = 0 : i64}) attributes {frame.train_step = "vec"} {
  func.return
}

// CHECK-LABEL: func.func @two_train_step(
// CHECK-LABEL: func.func @vec_train_step(
// CHECK-NOT:   _train_loop
// CHECK:       // -----

// -----

// The loop's name is taken.
// expected-error@+1 {{frame-train-loop at @t_train_step: cannot add @t_train_loop: the module already defines that symbol}}
func.func @t_train_step(%out: memref<f32> {frame.output = 0 : i64}) attributes {frame.train_step = "t"} {
  func.return
}
func.func @t_train_loop() {
  func.return
}


// -----

// Train steps on tensors: bufferization has not run.
// expected-error@+1 {{frame-train-loop at @u_train_step: expected a bufferized train step (memref arguments, no results); run frame-bufferize first}}
func.func @u_train_step(%x: tensor<4xf32>) -> tensor<f32> attributes {frame.train_step = "u"} {
  %e = tensor.empty() : tensor<f32>
  func.return %e : tensor<f32>
}

