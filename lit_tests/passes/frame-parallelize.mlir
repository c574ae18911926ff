// RUN: frame-opt %s --split-input-file --verify-diagnostics -p 'frame-parallelize{threads=2 min-work=0}' | filecheck %s
// RUN: frame-opt %s --split-input-file -p 'frame-parallelize{threads=1 min-work=0}' | filecheck %s --check-prefix=SINGLE
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p 'frame-parallelize{threads=2}' | filecheck %s --check-prefix=SMALL
// RUN: frame-opt %s --split-input-file --verify-diagnostics -p 'frame-parallelize{threads=4 min-work=32}' | filecheck %s --check-prefix=FOUR
// RUN: not frame-opt %s -p 'frame-parallelize{threads=0}' 2>&1 | filecheck %s --check-prefix=ZERO

// ZERO: frame-opt: error: frame-parallelize: threads must be a positive integer, found 0

// A kernel from frame-outline-kernels + convert-linalg-to-loops whose two loops are
// parallel (frame.parallel_dims): 8 rows give 2 threads 4 iterations each, so only
// the row loop is split. The task runs rows [lo, hi), each exactly as before: the
// column loop keeps its constant bounds and body.

func.func private @k(%a: memref<8x4xf32>, %b: memref<8x4xf32>) attributes {frame.parallel_dims = array<i64: 8, 4>, frame.layer = "fc1"} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.000000e+00 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %x = memref.load %a[%i, %j] : memref<8x4xf32>
      %y = arith.addf %x, %one : f32
      memref.store %y, %b[%i, %j] : memref<8x4xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func private @k__task0(
// CHECK-SAME:    %[[A:.*]]: memref<8x4xf32>, %[[B:.*]]: memref<8x4xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK-SAME:    attributes {frame.layer = "fc1"}
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[F1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[LO]] to %[[HI]] step %[[C1]] {
// CHECK-NEXT:      scf.for %[[J:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[A]][%[[I]], %[[J]]] : memref<8x4xf32>
// CHECK-NEXT:        %[[Y:.*]] = arith.addf %[[X]], %[[F1]] : f32
// CHECK-NEXT:        memref.store %[[Y]], %[[B]][%[[I]], %[[J]]] : memref<8x4xf32>
// CHECK:         func.return
// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[KA:.*]]: memref<8x4xf32>, %[[KB:.*]]: memref<8x4xf32>)
// CHECK-NEXT:    %[[Z0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[N:.*]] = arith.constant 8 : index
// CHECK-NEXT:    frame_rt.parallel_for @k__task0(%[[KA]], %[[KB]]) range(%[[Z0]], %[[N]]) threads 2 : memref<8x4xf32>, memref<8x4xf32>
// CHECK-NEXT:    func.return

// One thread: nothing changes (no task, no pool).
// SINGLE-LABEL: func.func private @k(
// SINGLE-NOT:     frame_rt
// SINGLE:         scf.for

// A frame.parallel_dims nest below min-work (32 iterations, default 32768): left as it is.
// SMALL-LABEL: func.func private @k(
// SMALL-NOT:     frame_rt
// SMALL:         scf.for

// Each kernel picks its thread count from its work: at min-work 32, each thread needs
// 16 iterations, so these 32 run on 2 of the 4 threads (8 rows: 4 per thread).
// FOUR-LABEL: func.func private @k(
// FOUR:         %[[N:.*]] = arith.constant 8 : index
// FOUR-NEXT:    frame_rt.parallel_for @k__task0(%{{.*}}, %{{.*}}) range(%{{.*}}, %[[N]]) threads 2

// -----

// 2 rows are fewer than 4 per thread: the two loops are collapsed into 32 iterations
// and the task walks [lo, hi) of them in order: row i from lo / 16 to ceil(hi / 16),
// columns clamped to [lo - 16 i, hi - 16 i) within [0, 16).

func.func private @wide(%a: memref<2x16xf32>) attributes {frame.parallel_dims = array<i64: 2, 16>} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      memref.store %z, %a[%i, %j] : memref<2x16xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func private @wide__task0(
// CHECK-SAME:    %[[A:.*]]: memref<2x16xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C15:.*]] = arith.constant 15 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[IFIRST:.*]] = arith.divui %[[LO]], %[[C16]] : index
// CHECK-NEXT:    %[[BUMP:.*]] = arith.addi %[[HI]], %[[C15]] : index
// CHECK-NEXT:    %[[IPAST:.*]] = arith.divui %[[BUMP]], %[[C16]] : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[IFIRST]] to %[[IPAST]] step %{{.*}} {
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[I]], %[[C16]] : index
// CHECK-NEXT:      %[[L:.*]] = arith.subi %[[LO]], %[[BASE]] : index
// CHECK-NEXT:      %[[JFIRST:.*]] = arith.maxsi %[[L]], %[[C0]] : index
// CHECK-NEXT:      %[[H:.*]] = arith.subi %[[HI]], %[[BASE]] : index
// CHECK-NEXT:      %[[JPAST:.*]] = arith.minsi %[[H]], %[[C16]] : index
// CHECK-NEXT:      scf.for %[[J:.*]] = %[[JFIRST]] to %[[JPAST]] step %{{.*}} {
// CHECK-NEXT:        memref.store %{{.*}}, %[[A]][%[[I]], %[[J]]] : memref<2x16xf32>
// CHECK-LABEL: func.func private @wide(
// CHECK:         %[[N:.*]] = arith.constant 32 : index
// CHECK-NEXT:    frame_rt.parallel_for @wide__task0(%{{.*}}) range(%{{.*}}, %[[N]]) threads 2

// -----

// A loop marked frame.parallel (frame-tile-matmul's rows, frame-gemm's tasks) is
// split as it is, any constant lb and step: iteration t of [lo, hi) is 2 + 3 t.

func.func private @rows(%a: memref<9xf32>) {
  %c2 = arith.constant 2 : index
  %c9 = arith.constant 9 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %i = %c2 to %c9 step %c3 {
    memref.store %z, %a[%i] : memref<9xf32>
  } {frame.parallel}
  func.return
}

// CHECK-LABEL: func.func private @rows__task0(
// CHECK-SAME:    %[[A:.*]]: memref<9xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK:         %[[L3:.*]] = arith.muli %[[LO]], %[[C3]] : index
// CHECK-NEXT:    %[[H3:.*]] = arith.muli %[[HI]], %[[C3]] : index
// CHECK-NEXT:    %[[BEGIN:.*]] = arith.addi %[[L3]], %[[C2]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.addi %[[H3]], %[[C2]] : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]] step %[[C3]] {
// CHECK-NEXT:      memref.store %{{.*}}, %[[A]][%[[I]]] : memref<9xf32>
// CHECK-LABEL: func.func private @rows(
// CHECK:         %[[N:.*]] = arith.constant 3 : index
// CHECK-NEXT:    frame_rt.parallel_for @rows__task0(%{{.*}}) range(%{{.*}}, %[[N]]) threads 2

// The pass that marked the loop judged it worth splitting: min-work does not apply.
// SMALL-LABEL: func.func private @rows(
// SMALL:         frame_rt.parallel_for @rows__task0
// FOUR-LABEL: func.func private @rows(
// FOUR:         frame_rt.parallel_for @rows__task0({{.*}}) threads 4

// -----

// frame.parallel_threads caps the threads of a marked loop (frame-gemm: split-K's 4
// tasks when the multiply-adds pay for 2 threads only); 1 leaves the loop as it is.

func.func private @capped(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %z, %a[%i] : memref<4xf32>
  } {frame.parallel, frame.parallel_threads = 2 : i64}
  func.return
}
func.func private @alone(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %z, %a[%i] : memref<4xf32>
  } {frame.parallel, frame.parallel_threads = 1 : i64}
  func.return
}

// CHECK-LABEL: func.func private @capped(
// CHECK:         frame_rt.parallel_for @capped__task0({{.*}}) threads 2
// CHECK-LABEL: func.func private @alone(
// CHECK-NOT:     frame_rt.parallel_for
// CHECK:         scf.for
// FOUR-LABEL: func.func private @capped(
// FOUR:         frame_rt.parallel_for @capped__task0({{.*}}) threads 2
// FOUR-LABEL: func.func private @alone(
// FOUR-NOT:     frame_rt.parallel_for
// FOUR:         scf.for

// -----

// Only the kernel's own arguments cross into the task: pure definitions the loop
// uses (frame-gemm's collapse_shape and cast of C) are cloned into it. Passing the
// view and the buffer as two arguments would make two noalias pointers to one memory.

func.func private @views(%c: memref<4x8xf32>) {
  %flat = memref.collapse_shape %c [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  %dyn = "memref.cast"(%flat) : (memref<32xf32>) -> memref<?xf32>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %t = %c0 to %c4 step %c1 {
    memref.store %z, %flat[%t] : memref<32xf32>
    memref.store %z, %dyn[%t] : memref<?xf32>
    memref.store %z, %c[%t, %t] : memref<4x8xf32>
  } {frame.parallel}
  func.return
}

// CHECK-LABEL: func.func private @views__task0(
// CHECK-SAME:    %[[C:.*]]: memref<4x8xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape %[[C]] {{\[\[}}0 : i64, 1 : i64]] : memref<4x8xf32> into memref<32xf32>
// CHECK-NEXT:    %[[DYN:.*]] = "memref.cast"(%[[FLAT]]) : (memref<32xf32>) -> memref<?xf32>
// CHECK:         scf.for %[[T:.*]] = %[[LO]] to %[[HI]]
// CHECK-NEXT:      memref.store %{{.*}}, %[[FLAT]][%[[T]]] : memref<32xf32>
// CHECK-NEXT:      memref.store %{{.*}}, %[[DYN]][%[[T]]] : memref<?xf32>
// CHECK-NEXT:      memref.store %{{.*}}, %[[C]][%[[T]], %[[T]]] : memref<4x8xf32>
// CHECK-LABEL: func.func private @views(
// CHECK-SAME:    %[[KC:.*]]: memref<4x8xf32>)
// CHECK-NOT:     memref.collapse_shape
// CHECK:         frame_rt.parallel_for @views__task0(%[[KC]]) range
// CHECK-NEXT:    func.return

// -----

// frame.parallel_dims that do not describe the loops (another pass rewrote the op
// into loops of its own and left the attribute): not split. Nor are public functions
// (only kernels are), nor loops of one iteration.

func.func private @stale(%a: memref<8xf32>) attributes {frame.parallel_dims = array<i64: 8>} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %z, %a[%i] : memref<8xf32>
  }
  func.return
}
func.func @public(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %z, %a[%i] : memref<8xf32>
  } {frame.parallel}
  func.return
}
func.func private @once(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %z, %a[%i] : memref<8xf32>
  } {frame.parallel}
  func.return
}

// CHECK-NOT:   frame_rt.parallel_for
// CHECK-NOT:   __task

// -----

// A frame.parallel loop must have constant bounds and carry nothing.
func.func private @dynamic(%a: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  // expected-error@+1 {{frame-parallelize at @dynamic: scf.for: a frame.parallel loop needs constant bounds and a positive constant step}}
  scf.for %i = %c0 to %n step %c1 {
    memref.store %z, %a[%i] : memref<8xf32>
  } {frame.parallel}
  func.return
}

