// RUN: frame-opt %s --split-input-file --verify-diagnostics -p frame-lower-scan | filecheck %s

// frame-lower-scan: `frame_rt.scan` (frame-bufferize's form of frame.scan) becomes a
// call of the step function on %init and row 0 of each sequence and of %out, then an
// scf.for over the remaining steps whose carry is the row of %out written the step
// before. Invariants are passed whole; the step's arena (the slot) last.
func.func @cell(%h: memref<2x3xf32>, %x: memref<2x3xf32>, %w: memref<3x3xf32>, %out: memref<2x3xf32> {frame.output = 0 : i64}, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
  func.return
}
func.func @forward(%h0: memref<2x3xf32>, %xs: memref<4x2x3xf32>, %w: memref<3x3xf32>, %out: memref<4x2x3xf32> {frame.output = 0 : i64}, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
  %c0 = arith.constant 0 : index
  %slot = memref.view %arena[%c0][] : memref<64xi8> to memref<64xi8>
  frame_rt.scan @cell(%h0, %xs, %w, %out, %slot) {length = 4 : i64, num_sequences = 1 : i64, frame.stage = "forward"} : memref<2x3xf32>, memref<4x2x3xf32>, memref<3x3xf32>, memref<4x2x3xf32>, memref<64xi8>
  func.return
}
// CHECK-LABEL: func.func @forward(
// CHECK:         %[[SLOT:.*]] = memref.view %arena
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = frame_rt.row %xs[%[[C0]]] : memref<4x2x3xf32> -> memref<2x3xf32>
// CHECK-NEXT:    %[[O0:.*]] = frame_rt.row %out[%[[C0]]] : memref<4x2x3xf32> -> memref<2x3xf32>
// CHECK-NEXT:    func.call @cell(%h0, %[[X0]], %w, %[[O0]], %[[SLOT]]) {frame.stage = "forward"} : (memref<2x3xf32>, memref<2x3xf32>, memref<3x3xf32>, memref<2x3xf32>, memref<64xi8>) -> ()
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    scf.for %[[T:.*]] = %[[C1]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:      %[[P:.*]] = arith.subi %[[T]], %[[C1]] : index
// CHECK-NEXT:      %[[CARRY:.*]] = frame_rt.row %out[%[[P]]] : memref<4x2x3xf32> -> memref<2x3xf32>
// CHECK-NEXT:      %[[X:.*]] = frame_rt.row %xs[%[[T]]] : memref<4x2x3xf32> -> memref<2x3xf32>
// CHECK-NEXT:      %[[O:.*]] = frame_rt.row %out[%[[T]]] : memref<4x2x3xf32> -> memref<2x3xf32>
// CHECK-NEXT:      func.call @cell(%[[CARRY]], %[[X]], %w, %[[O]], %[[SLOT]]) {frame.stage = "forward"}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NOT:     frame_rt.scan

// A reverse scan runs t = length-1 .. 0: step t reads the row t + 1 wrote.
func.func @reverse(%h0: memref<2x3xf32>, %xs: memref<3x2x3xf32>, %w: memref<3x3xf32>, %out: memref<3x2x3xf32> {frame.output = 0 : i64}, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
  %c0 = arith.constant 0 : index
  %slot = memref.view %arena[%c0][] : memref<64xi8> to memref<64xi8>
  frame_rt.scan @cell(%h0, %xs, %w, %out, %slot) {length = 3 : i64, num_sequences = 1 : i64, reverse} : memref<2x3xf32>, memref<3x2x3xf32>, memref<3x3xf32>, memref<3x2x3xf32>, memref<64xi8>
  func.return
}
// CHECK-LABEL: func.func @reverse(
// CHECK:         %[[SLOT:.*]] = memref.view %arena
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = frame_rt.row %xs[%[[C2]]]
// CHECK-NEXT:    %[[O2:.*]] = frame_rt.row %out[%[[C2]]]
// CHECK-NEXT:    func.call @cell(%h0, %[[X2]], %w, %[[O2]], %[[SLOT]])
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[C1]] to %[[C3]] step %[[C1]] {
// CHECK-NEXT:      %[[T:.*]] = arith.subi %[[C2]], %[[I]] : index
// CHECK-NEXT:      %[[P:.*]] = arith.subi %[[C3]], %[[I]] : index
// CHECK-NEXT:      %[[CARRY:.*]] = frame_rt.row %out[%[[P]]]
// CHECK-NEXT:      %[[X:.*]] = frame_rt.row %xs[%[[T]]]
// CHECK-NEXT:      %[[O:.*]] = frame_rt.row %out[%[[T]]]
// CHECK-NEXT:      func.call @cell(%[[CARRY]], %[[X]], %w, %[[O]], %[[SLOT]])
// CHECK-NEXT:    }

// One step: no loop.
func.func @one_step(%h0: memref<2x3xf32>, %xs: memref<1x2x3xf32>, %w: memref<3x3xf32>, %out: memref<1x2x3xf32> {frame.output = 0 : i64}, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
  %c0 = arith.constant 0 : index
  %slot = memref.view %arena[%c0][] : memref<64xi8> to memref<64xi8>
  frame_rt.scan @cell(%h0, %xs, %w, %out, %slot) {length = 1 : i64, num_sequences = 1 : i64} : memref<2x3xf32>, memref<1x2x3xf32>, memref<3x3xf32>, memref<1x2x3xf32>, memref<64xi8>
  func.return
}
// CHECK-LABEL: func.func @one_step(
// CHECK:         func.call @cell(%h0, %{{.*}}, %w, %{{.*}}, %slot)
// CHECK-NOT:     scf.for
// CHECK:         func.return

// -----

// The step's arena grew after bufferization (frame-gemm's scratch: 192 bytes, the
// slot has 64): the step gets a region appended to the caller's arena, 64-byte
// aligned (100 -> 128), and the caller's arena grows to 128 + 192 = 320 bytes. The
// slot, now unused, goes. A step whose arena is smaller than its slot gets a view of it.
func.func @big(%h: memref<4xf32>, %out: memref<4xf32> {frame.output = 0 : i64}, %arena: memref<192xi8> {frame.arena}) attributes {frame.arena_size = 192 : i64} {
  func.return
}
func.func @small(%h: memref<4xf32>, %out: memref<4xf32> {frame.output = 0 : i64}, %arena: memref<32xi8> {frame.arena}) attributes {frame.arena_size = 32 : i64} {
  func.return
}
func.func @grown(%h0: memref<4xf32>, %out: memref<2x4xf32> {frame.output = 0 : i64}, %out2: memref<2x4xf32> {frame.output = 1 : i64}, %arena: memref<100xi8> {frame.arena}) attributes {frame.arena_size = 100 : i64} {
  %c0 = arith.constant 0 : index
  %slot = memref.view %arena[%c0][] : memref<100xi8> to memref<64xi8>
  frame_rt.scan @big(%h0, %out, %slot) {length = 2 : i64, num_sequences = 0 : i64} : memref<4xf32>, memref<2x4xf32>, memref<64xi8>
  %c64 = arith.constant 64 : index
  %slot2 = memref.view %arena[%c64][] : memref<100xi8> to memref<36xi8>
  frame_rt.scan @small(%h0, %out2, %slot2) {length = 2 : i64, num_sequences = 0 : i64} : memref<4xf32>, memref<2x4xf32>, memref<36xi8>
  func.return
}
// CHECK-LABEL: func.func @grown(
// CHECK-SAME:    %arena: memref<320xi8> {frame.arena}) attributes {frame.arena_size = 320 : i64} {
// CHECK-NEXT:    %[[OFF:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[REGION:.*]] = memref.view %arena[%[[OFF]]][] : memref<320xi8> to memref<192xi8>
// CHECK:         func.call @big(%h0, %{{.*}}, %[[REGION]])
// CHECK:         func.call @big(%{{.*}}, %{{.*}}, %[[REGION]])
// CHECK:         %[[SLOT2:.*]] = memref.view %arena[%{{.*}}][] : memref<320xi8> to memref<36xi8>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[VIEW:.*]] = memref.view %[[SLOT2]][%[[ZERO]]][] : memref<36xi8> to memref<32xi8>
// CHECK:         func.call @small(%h0, %{{.*}}, %[[VIEW]])
// CHECK:         func.call @small(%{{.*}}, %{{.*}}, %[[VIEW]])

// -----

// The step must be bufferized: its arena (frame.arena) last.
func.func @step(%h: memref<4xf32>, %out: memref<4xf32> {frame.output = 0 : i64}, %arena: memref<64xi8>) {
  func.return
}
func.func @not_bufferized(%h0: memref<4xf32>, %out: memref<2x4xf32>, %slot: memref<64xi8>) {
  // expected-error@+1 {{frame-lower-scan at @not_bufferized: frame_rt.scan: step function @step expected its arena (frame.arena) as its last argument (run frame-bufferize first)}}
  frame_rt.scan @step(%h0, %out, %slot) {length = 2 : i64, num_sequences = 0 : i64} : memref<4xf32>, memref<2x4xf32>, memref<64xi8>
  func.return
}
