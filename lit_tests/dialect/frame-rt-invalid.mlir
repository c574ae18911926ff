// One case per verifier rule of frame_rt.parallel_for, frame_rt.row, frame_rt.scan and
// frame_rt.prefetch.
// RUN: frame-opt %s --split-input-file --verify-diagnostics

func.func private @task(%a: memref<8xf32>, %lo: index, %hi: index) {
  func.return
}
func.func private @zero_threads(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  // expected-error@+1 {{frame_rt.parallel_for: threads must be at least 1, found 0}}
  frame_rt.parallel_for @task(%a) range(%c0, %c8) threads 0 : memref<8xf32>
  func.return
}

// -----

func.func private @no_task(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  // expected-error@+1 {{frame_rt.parallel_for: no task function @missing in the enclosing module}}
  frame_rt.parallel_for @missing(%a) range(%c0, %c8) threads 2 : memref<8xf32>
  func.return
}

// -----

func.func private @task(%a: memref<4xf32>, %lo: index) {
  func.return
}
func.func private @bad_signature(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  // expected-error@+1 {{frame_rt.parallel_for: task @task must take (memref<8xf32>, index, index) and return nothing, found (memref<4xf32>, index) -> ()}}
  frame_rt.parallel_for @task(%a) range(%c0, %c8) threads 2 : memref<8xf32>
  func.return
}

// -----

func.func @row_shape(%b: memref<4x2x3xf32>, %t: index) {
  // expected-error@+1 {{frame_rt.row: result type expected memref<2x3xf32> (a row of memref<4x2x3xf32>), found memref<3x2xf32>}}
  %r = frame_rt.row %b[%t] : memref<4x2x3xf32> -> memref<3x2xf32>
  func.return
}

// -----

func.func @row_of_scalar(%b: memref<f32>, %t: index) {
  // expected-error@+1 {{frame_rt.row: expected a source of rank >= 1, found memref<f32>}}
  %r = frame_rt.row %b[%t] : memref<f32> -> memref<f32>
  func.return
}

// -----

func.func @scan_missing_step(%h0: memref<3xf32>, %out: memref<4x3xf32>, %slot: memref<64xi8>) {
  // expected-error@+1 {{frame_rt.scan: no step function @nowhere in the enclosing module}}
  frame_rt.scan @nowhere(%h0, %out, %slot) {length = 4 : i64, num_sequences = 0 : i64} : memref<3xf32>, memref<4x3xf32>, memref<64xi8>
  func.return
}

// -----

func.func @step(%h: memref<3xf32>, %out: memref<3xf32>, %arena: memref<64xi8>) {
  func.return
}
func.func @scan_output(%h0: memref<3xf32>, %out: memref<5x3xf32>, %slot: memref<64xi8>) {
  // expected-error@+1 {{frame_rt.scan: output expected memref<4x3xf32>, found memref<5x3xf32>}}
  frame_rt.scan @step(%h0, %out, %slot) {length = 4 : i64, num_sequences = 0 : i64} : memref<3xf32>, memref<5x3xf32>, memref<64xi8>
  func.return
}

// -----

func.func @step(%h: memref<3xf32>, %x: memref<3xf32>, %out: memref<3xf32>, %arena: memref<64xi8>) {
  func.return
}
func.func @scan_sequence(%h0: memref<3xf32>, %xs: memref<5x3xf32>, %out: memref<4x3xf32>, %slot: memref<64xi8>) {
  // expected-error@+1 {{frame_rt.scan: sequence operand #1 expected a leading dim of 4 (the length), found memref<5x3xf32>}}
  frame_rt.scan @step(%h0, %xs, %out, %slot) {length = 4 : i64, num_sequences = 1 : i64} : memref<3xf32>, memref<5x3xf32>, memref<4x3xf32>, memref<64xi8>
  func.return
}

// -----

func.func @step(%h: memref<3xf32>, %out: memref<3xf32>) {
  func.return
}
func.func @scan_step_signature(%h0: memref<3xf32>, %out: memref<4x3xf32>, %slot: memref<64xi8>) {
  // expected-error@+1 {{frame_rt.scan: step function @step must take (memref<3xf32>, memref<3xf32>, memref<Nxi8>) and return nothing, found (memref<3xf32>, memref<3xf32>) -> ()}}
  frame_rt.scan @step(%h0, %out, %slot) {length = 4 : i64, num_sequences = 0 : i64} : memref<3xf32>, memref<4x3xf32>, memref<64xi8>
  func.return
}

// -----

func.func @step(%h: memref<3xf32>, %out: memref<3xf32>, %arena: memref<64xi8>) {
  func.return
}
func.func @scan_arena(%h0: memref<3xf32>, %out: memref<4x3xf32>, %slot: memref<16xf32>) {
  // expected-error@+1 {{frame_rt.scan: the step's arena expected a 1-D i8 memref, found memref<16xf32>}}
  frame_rt.scan @step(%h0, %out, %slot) {length = 4 : i64, num_sequences = 0 : i64} : memref<3xf32>, memref<4x3xf32>, memref<16xf32>
  func.return
}

// -----

func.func @prefetch_2d(%b: memref<4x4xf32>, %i: index) {
  // expected-error@+1 {{frame_rt.prefetch: expected a 1-D memref with an identity layout, found memref<4x4xf32>}}
  frame_rt.prefetch %b[%i] : memref<4x4xf32>
  func.return
}
