// RUN: frame-opt %s --split-input-file -p 'frame-gemm{lanes=4 acc=4 l1=256 l2=4096 min_flops=0 direct_a_max=0 fast_pack_min=0}' | filecheck %s
// RUN: frame-opt %s --split-input-file -p 'frame-gemm{lanes=4 acc=4 l1=256 l2=4096 min_flops=0 threads=2 min_task_macs=0 direct_a_max=0 fast_pack_min=0}' | filecheck %s --check-prefix=TWO
// RUN: frame-opt %s --split-input-file -p 'frame-gemm{lanes=4 acc=4 l1=256 l2=4096 min_flops=0 threads=2 direct_a_max=0 fast_pack_min=0}' | filecheck %s --check-prefix=TWOSMALL
// RUN: frame-opt %s --split-input-file -p 'frame-gemm' | filecheck %s --check-prefix=SMALL
// RUN: frame-opt %s --split-input-file -p 'frame-gemm{lanes=4 acc=4 l1=256 l2=4096 min_flops=0 direct_a_min=0}' | filecheck %s --check-prefix=INPLACE

// A 6x5 @ 5x8 matmul kernel and its caller. With 4 lanes and 4 accumulator
// registers the micro-kernel is MR=2 rows by NR=8 columns (two vector<4xf32> per
// row): the kernel gets a scratch argument, carved out of the caller's arena past its
// old end, and packs A and B into it.

builtin.module {
  func.func private @k(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %arena: memref<200xi8> {frame.arena}) attributes {frame.arena_size = 200 : i64} {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<200xi8> to memref<6x8xf32>
    func.call @k(%a, %b, %c) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// The micro-kernel, shared by every GEMM of this tile shape: accumulators loaded from
// C, one broadcast of A and one fma per accumulator and k, stored back after the k loop.
// CHECK-LABEL: func.func private @frame_gemm_micro_2x8_p2x8_f32x4(
// CHECK-SAME:    %[[MA:.*]]: memref<?xf32>, %[[MB:.*]]: memref<?xf32>, %[[MC:.*]]: memref<?xf32>, %[[PA:.*]]: index, %[[PB:.*]]: index, %[[CAT:.*]]: index, %[[LDC:.*]]: index, %[[KC:.*]]: index, %[[ZERO:.*]]: index)
// CHECK:         %[[R1:.*]] = arith.addi %[[CAT]], %[[LDC]] : index
// CHECK:         %[[Z:.*]] = arith.cmpi ne, %[[ZERO]]
// CHECK:         scf.if %[[Z]] -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
// CHECK:           arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK:         } else {
// CHECK-COUNT-4:   vector.load %[[MC]]
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %[[KC]] step %{{.*}} iter_args(
// CHECK-COUNT-2:   vector.load %[[MB]]
// CHECK:           %[[AV:.*]] = memref.load %[[MA]]
// CHECK:           %[[BC:.*]] = vector.broadcast %[[AV]] : f32 to vector<4xf32>
// CHECK:           vector.fma %[[BC]]
// CHECK:           scf.yield
// CHECK-COUNT-4: vector.store {{.*}}, %[[MC]]

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[A:.*]]: memref<6x5xf32>, %[[B:.*]]: memref<5x8xf32>, %[[C:.*]]: memref<6x8xf32>, %[[WS:.*]]: memref<[[WSZ:[0-9]+]]xi8>)
// CHECK-NOT:     linalg.generic
// CHECK:         %[[AF:.*]] = memref.collapse_shape %[[A]] {{\[\[}}0 : i64, 1 : i64]] : memref<6x5xf32> into memref<30xf32>
// CHECK:         %[[BF:.*]] = memref.collapse_shape %[[B]]
// CHECK:         %[[CF:.*]] = memref.collapse_shape %[[C]]
// CHECK:         %[[CD:.*]] = "memref.cast"(%[[CF]]) : (memref<48xf32>) -> memref<?xf32>
// CHECK:         scf.for %[[T:.*]] =
// CHECK:           %[[AP:.*]] = memref.view %[[WS]]
// CHECK:           %[[BP:.*]] = memref.view %[[WS]]
// CHECK:           %[[TILE:.*]] = memref.view %[[WS]]
// CHECK:           %[[TD:.*]] = "memref.cast"(%[[TILE]]) : (memref<16xf32>) -> memref<?xf32>
// Packing B: panels of NR = 8 columns. B's columns are contiguous, so a panel that
// ends inside B is copied 4 floats at a time, a row of B after the other; otherwise
// element by element, zero past the last column.
// CHECK:           arith.cmpi sle
// CHECK-NEXT:      scf.if
// CHECK:             vector.load %[[BF]][{{.*}}] : memref<40xf32>, vector<4xf32>
// CHECK:             vector.store {{.*}}, %[[BP]][{{.*}}] : memref<40xf32>, vector<4xf32>
// CHECK:           } else {
// CHECK:             memref.load %[[BF]][
// CHECK:             arith.select
// CHECK:             memref.store {{.*}}, %[[BP]]
// Packing A: panels of MR = 2 rows.
// CHECK:           memref.load %[[AF]][
// CHECK:           memref.store {{.*}}, %[[AP]]
// A full tile runs the micro-kernel on C itself (row stride 8 = N).
// CHECK:           scf.if
// CHECK:             func.call @frame_gemm_micro_2x8_p2x8_f32x4(%{{.*}}, %{{.*}}, %[[CD]],
// An edge tile goes through the zero-padded scratch tile (row stride NR = 8).
// CHECK:           } else {
// CHECK:             memref.store {{.*}}, %[[TILE]]
// CHECK:             func.call @frame_gemm_micro_2x8_p2x8_f32x4(%{{.*}}, %{{.*}}, %[[TD]],
// CHECK:             scf.if
// CHECK:               memref.store {{.*}}, %[[CF]]
// CHECK-LABEL: func.func @f(
// CHECK-SAME:    %{{.*}}: memref<[[ASZ:[0-9]+]]xi8> {frame.arena}) attributes {frame.arena_size = [[ASZ]] : i64}
// CHECK:         %[[OFF:.*]] = arith.constant 256 : index
// CHECK:         %[[V:.*]] = memref.view %{{.*}}[%[[OFF]]][] : memref<[[ASZ]]xi8> to memref<[[WSZ]]xi8>
// CHECK:         func.call @k(%{{.*}}, %{{.*}}, %{{.*}}, %[[V]])

// Left to choose (direct_a_max=8, the default; the runs above set 0) and with no
// minimum size (direct_a_min=0; by default A needs 65536 elements), frame-gemm reads
// this A in place: its packed block would meet one column panel of two vectors, fewer B
// vectors than packing costs. The micro-kernel has A's strides built in (row 5, k 1:
// `_a5x1`), and the kernel passes A itself, never loading it.
// INPLACE-LABEL: func.func private @frame_gemm_micro_2x8_p2x8_f32x4_a5x1(
// INPLACE-SAME:    %[[MA:[^:]*]]: memref<?xf32>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<?xf32>, %[[PA:[^:]*]]: index
// INPLACE:         scf.for %[[K:[^ ]*]] =
// INPLACE:           %[[A0:.*]] = arith.addi %[[PA]], %[[K]] : index
// INPLACE:           memref.load %[[MA]][%[[A0]]]
// INPLACE:           %[[FIVE:.*]] = arith.constant 5 : index
// INPLACE:           %[[A1:.*]] = arith.addi %[[A0]], %[[FIVE]] : index
// INPLACE:           memref.load %[[MA]][%[[A1]]]
// INPLACE-LABEL: func.func private @k(
// INPLACE:         %[[AF:.*]] = memref.collapse_shape %{{.*}} into memref<30xf32>
// INPLACE:         %[[AD:.*]] = "memref.cast"(%[[AF]]) : (memref<30xf32>) -> memref<?xf32>
// INPLACE-NOT:     memref.load %[[AF]]
// INPLACE:         func.call @frame_gemm_micro_2x8_p2x8_f32x4_a5x1(%[[AD]],
// INPLACE-LABEL: func.func @f(

// With two threads the 8 columns are one panel, but the 6 rows are 3 panels of MR = 2:
// the tasks take ranges of whole row panels (rows [0, 4) and [4, 6)), all columns each,
// so the row-block loop runs over the task's rows only.
// TWO-LABEL: func.func private @k(
// TWO:         scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// TWO:           %[[FOUR:.*]] = arith.constant 4 : index
// TWO-NEXT:      %[[RLO:.*]] = arith.muli %[[T]], %[[FOUR]] : index
// TWO-NEXT:      %[[RE:.*]] = arith.addi %[[RLO]], %[[FOUR]] : index
// TWO-NEXT:      %[[SIX:.*]] = arith.constant 6 : index
// TWO-NEXT:      %[[RHI:.*]] = arith.minsi %[[RE]], %[[SIX]] : index
// TWO:           scf.for %{{.*}} = %[[RLO]] to %[[RHI]] step
// TWO:         } {frame.parallel}
// TWO-LABEL: func.func @f(

// With the default work threshold (min_task_macs) its 240 multiply-adds are far too
// few to pay a second thread: one task, no parallel loop.
// TWOSMALL-LABEL: func.func private @k(
// TWOSMALL-NOT:     frame.parallel
// TWOSMALL-LABEL: func.func @f(

// Below the default size threshold (min_flops) the kernel is left to the plain loops.
// SMALL-LABEL: func.func private @k(
// SMALL:         linalg.generic
// SMALL-NOT:     memref.collapse_shape
// SMALL-LABEL: func.func @f(

// -----

// The input gradient of a 2-D convolution in gather form: dx[n, c, i, j] +=
// wf[c, o, kh, kw] * dyd[n, o, i + kh, j + kw]. The columns (i, j) and the reduction
// (o, kh, kw) address dyd with no single stride, so the pass fills offset tables (i32)
// in the scratch. The batch dim n is an outer loop; it indexes dyd (B) but not the
// weights (A), so it runs inside the row blocks, after A's block is packed: the weights
// are packed once per (jc, pc, ic) block whatever the batch, dyd's panel once per n.
// With two threads the two tasks take one image each: with one n per task there is
// nothing to save, and the n loop stays outside (B packed once, before the row blocks).

builtin.module {
  func.func private @k(%w: memref<2x2x2x2xf32>, %y: memref<2x2x5x5xf32>, %x: memref<2x2x4x4xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, (d5 + d3), (d6 + d4))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d5, d6)>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"], doc = "frame.conv_grad_input"} ins(%w, %y : memref<2x2x2x2xf32>, memref<2x2x5x5xf32>) outs(%x : memref<2x2x4x4xf32>) {
    ^bb0(%p: f32, %q: f32, %r: f32):
      %s = math.fma %p, %q, %r : f32
      linalg.yield %s : f32
    }
    func.return
  }
  func.func @f(%w: memref<2x2x2x2xf32>, %y: memref<2x2x5x5xf32>, %x: memref<2x2x4x4xf32>, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
    func.call @k(%w, %y, %x) : (memref<2x2x2x2xf32>, memref<2x2x5x5xf32>, memref<2x2x4x4xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @frame_gemm_micro_
// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[W:[^:]*]]: memref<2x2x2x2xf32>, %[[Y:[^:]*]]: memref<2x2x5x5xf32>
// CHECK:         %[[WF:.*]] = memref.collapse_shape %[[W]]
// CHECK:         %[[YF:.*]] = memref.collapse_shape %[[Y]]
// CHECK:         scf.for
// CHECK:           %[[TN:.*]] = memref.view {{.*}} to memref<16xi32>
// CHECK:           arith.remui
// CHECK:           arith.index_cast {{.*}} : index to i32
// CHECK:           memref.store {{.*}}, %[[TN]]
// CHECK:           %[[TK:.*]] = memref.view {{.*}} to memref<8xi32>
// CHECK:           memref.store {{.*}}, %[[TK]]
// jc, pc, ic; A's block (the weights) packed in the ic loop, before the batch loop:
// CHECK:           scf.for %[[JC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             scf.for %[[PC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               scf.for %[[IC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:             memref.load %[[YF]][
// CHECK:                 memref.load %[[WF]][
// CHECK-NOT:             memref.load %[[YF]][
// CHECK:                 scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// B's panel (dyd through its tables) per image, then the tiles. Each group of 4
// columns is one row of dyd's window (j has stride 1, and 4 divides the row): a panel
// inside the columns is copied a vector<4xf32> per group and k, k outer (each k's
// panel row written whole, in order); one that reaches past the last column
// (zero-padded) the same way for its whole groups, the rest element by element:
// CHECK:                   scf.if
// CHECK:                     scf.for
// CHECK:                       memref.load %[[TK]]
// CHECK:                       scf.for
// CHECK:                         memref.load %[[TN]]
// CHECK:                         %[[ROW:.*]] = vector.load %[[YF]][%{{.*}}] : memref<100xf32>, vector<4xf32>
// CHECK:                         vector.store %[[ROW]]
// CHECK:                   } else {
// CHECK:                     scf.for
// CHECK:                       memref.load %[[TK]]
// CHECK:                       scf.for
// CHECK:                         memref.load %[[TN]]
// CHECK:                         vector.load %[[YF]]
// CHECK-DAG:                 memref.load %[[TN]]
// CHECK-DAG:                 memref.load %[[TK]]
// CHECK-DAG:                 arith.index_cast {{.*}} : i32 to index
// CHECK:                     memref.load %[[YF]][
// CHECK-NOT:               memref.load %[[WF]][
// CHECK:                   func.call @frame_gemm_micro_
// TWO-LABEL: func.func private @k(
// TWO-SAME:    %[[W:[^:]*]]: memref<2x2x2x2xf32>, %[[Y:[^:]*]]: memref<2x2x5x5xf32>
// TWO:         %[[WF:.*]] = memref.collapse_shape %[[W]]
// TWO:         %[[YF:.*]] = memref.collapse_shape %[[Y]]
// TWO:           memref.store {{.*}} : memref<8xi32>
// TWO:           scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// TWO-NEXT:        scf.for %[[JC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// TWO:               scf.for %[[PC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// TWO:                 memref.load %[[YF]][
// TWO:                 memref.load %[[WF]][
// TWO:                 func.call @frame_gemm_micro_
// TWO:         } {frame.parallel}

// -----

// A batched product with a B shared along one of the batch dims: c[p, q, i, j] +=
// a[p, q, i, k] * b[q, k, j]. Both p and q are outer dims (q indexes both inputs and
// stays outside); p does not index B, so it runs inside the k blocks, after B's
// panel is packed: B is packed once per (q, jc, pc) block instead of once per p too.

builtin.module {
  func.func private @k(%a: memref<2x2x3x4xf32>, %b: memref<2x4x8xf32>, %c: memref<2x2x3x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<2x2x3x4xf32>, memref<2x4x8xf32>) outs(%c : memref<2x2x3x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<2x2x3x4xf32>, %b: memref<2x4x8xf32>, %c: memref<2x2x3x8xf32>, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
    func.call @k(%a, %b, %c) : (memref<2x2x3x4xf32>, memref<2x4x8xf32>, memref<2x2x3x8xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[A:[^:]*]]: memref<2x2x3x4xf32>, %[[B:[^:]*]]: memref<2x4x8xf32>
// CHECK:         %[[AF:.*]] = memref.collapse_shape %[[A]]
// CHECK:         %[[BF:.*]] = memref.collapse_shape %[[B]]
// In the task: q, jc, pc, B's panel, then p, ic, A's block and the tiles:
// CHECK:         scf.for
// CHECK:           scf.for %[[Q:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        scf.for %[[JC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               scf.for %[[PC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:             memref.load %[[AF]][
// CHECK:                 memref.load %[[BF]][
// CHECK-NOT:             memref.load %[[AF]][
// CHECK:                 scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:               memref.load
// CHECK:                   scf.for %[[IC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:                     memref.load %[[AF]][
// CHECK-NOT:                 memref.load %[[BF]][
// CHECK:                     func.call @frame_gemm_micro_
// CHECK-LABEL: func.func @f(
// TWO-LABEL: func.func private @k(
// TWO-LABEL: func.func @f(

// -----

// A product whose batch dim b indexes B only, with few columns per b: c[b, i, j] +=
// a[i, k] * bb[b, k, j], 2 columns each. Per b, every 8-wide tile would be mostly
// padding, so the columns span the batch (8 = 4 x 2, B's column table over (b, j)) and
// the GEMM works on a contiguous 6 x 8 copy of C in the scratch: copied in (C was not
// zero-filled) through C's column table, the tiles on it (row stride 8), copied back.
// With two threads, the 8 columns are two 4-wide panels, one task each.

builtin.module {
  func.func private @k(%a: memref<6x5xf32>, %b: memref<4x5x2xf32>, %c: memref<4x6x2xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<4x5x2xf32>) outs(%c : memref<4x6x2xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<6x5xf32>, %b: memref<4x5x2xf32>, %c: memref<4x6x2xf32>, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
    func.call @k(%a, %b, %c) : (memref<6x5xf32>, memref<4x5x2xf32>, memref<4x6x2xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[C:[^:]*]]: memref<4x6x2xf32>, %[[WS:[^:]*]]: memref<{{[0-9]+}}xi8>)
// CHECK:         %[[CF:.*]] = memref.collapse_shape %[[C]]
// CHECK:         %[[CC:.*]] = memref.view %[[WS]][%{{.*}}][] : memref<{{[0-9]+}}xi8> to memref<48xf32>
// CHECK:         %[[CCD:.*]] = "memref.cast"(%[[CC]]) : (memref<48xf32>) -> memref<?xf32>
// CHECK:         scf.for
// CHECK:           %[[TB:.*]] = memref.view {{.*}} to memref<8xi32>
// CHECK:           %[[TC:.*]] = memref.view {{.*}} to memref<8xi32>
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               memref.load %[[TC]]
// CHECK:               %[[IN:.*]] = memref.load %[[CF]][
// CHECK:               memref.store %[[IN]], %[[CC]][
// CHECK-NOT:       memref.load %[[CF]][
// CHECK:           scf.for %[[JC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             memref.load %[[TB]]
// CHECK:             func.call @frame_gemm_micro_2x8_p2x8_f32x4(%{{.*}}, %{{.*}}, %[[CCD]],
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               memref.load %[[TC]]
// CHECK:               %[[OUT:.*]] = memref.load %[[CC]][
// CHECK:               memref.store %[[OUT]], %[[CF]][
// CHECK-LABEL: func.func @f(
// TWO-LABEL: func.func private @k(
// TWO:         memref.view {{.*}} to memref<48xf32>
// TWO:         func.call @frame_gemm_micro_4x4_p4x4_f32x4(
// TWO:         } {frame.parallel}
// TWO-LABEL: func.func @f(

// -----

// C zero-filled by a kernel call right before the GEMM: the fill (and its kernel, now
// unused) goes, and the first
// k block starts from zero (the micro-kernel's last argument is 1 when pc == 0). M = 7
// rows leave a remainder of one row under MR = 2: an exact 1 x 8 micro-kernel runs on
// C directly instead of the scratch tile.

builtin.module {
  func.func private @zero(%c: memref<7x8xf32>) {
    %z = arith.constant 0.000000e+00 : f32
    linalg.fill ins(%z : f32) outs(%c : memref<7x8xf32>)
    func.return
  }
  func.func private @k(%a: memref<7x5xf32>, %b: memref<5x8xf32>, %c: memref<7x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<7x5xf32>, memref<5x8xf32>) outs(%c : memref<7x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<7x5xf32>, %b: memref<5x8xf32>, %arena: memref<256xi8> {frame.arena}) attributes {frame.arena_size = 256 : i64} {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<256xi8> to memref<7x8xf32>
    func.call @zero(%c) : (memref<7x8xf32>) -> ()
    func.call @k(%a, %b, %c) : (memref<7x5xf32>, memref<5x8xf32>, memref<7x8xf32>) -> ()
    func.return
  }
}

// CHECK-DAG:   func.func private @frame_gemm_micro_2x8_p2x8_f32x4(
// CHECK-DAG:   func.func private @frame_gemm_micro_1x8_p2x8_f32x4(
// CHECK-NOT:   func.func private @zero(
// CHECK-LABEL: func.func private @k(
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK:           %[[FLAG:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : index
// CHECK:           func.call @frame_gemm_micro_2x8_p2x8_f32x4({{.*}}, %[[FLAG]])
// CHECK:           func.call @frame_gemm_micro_1x8_p2x8_f32x4({{.*}}, %[[FLAG]])
// CHECK-LABEL: func.func @f(
// CHECK-NOT:     func.call @zero
// CHECK:         func.call @k(

// -----

// A small C over a long reduction (k = 8200, one column panel, no outer dims): split-K.
// Four tasks sum a quarter of k each into partial buffers past the task slots; then the
// partials are added in a fixed order (the same for any thread count).

builtin.module {
  func.func private @k(%a: memref<8200x4xf32>, %b: memref<8200x8xf32>, %c: memref<4x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<8200x4xf32>, memref<8200x8xf32>) outs(%c : memref<4x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<8200x4xf32>, %b: memref<8200x8xf32>, %c: memref<4x8xf32>, %arena: memref<64xi8> {frame.arena}) attributes {frame.arena_size = 64 : i64} {
    func.call @k(%a, %b, %c) : (memref<8200x4xf32>, memref<8200x8xf32>, memref<4x8xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @k(
// CHECK:         scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[P:.*]] = memref.view %{{.*}} : memref<{{[0-9]+}}xi8> to memref<32xf32>
// CHECK:         }
// CHECK-COUNT-4: memref.view %{{.*}} : memref<{{[0-9]+}}xi8> to memref<32xf32>
// CHECK:         scf.for
// CHECK-COUNT-3:   arith.addf
// CHECK:           arith.addf
// CHECK:           memref.store
// TWO-LABEL: func.func private @k(
// TWO:         } {frame.parallel}

// -----

// A GEMM with an epilogue (frame-fuse-gemm-epilogue): the bias add + relu generic after
// the contraction runs on each tile right after the tile's last k block, reading C and
// the broadcast bias by row and column, writing its own output; no generic is left.

builtin.module {
  func.func private @k(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>, %bias: memref<8xf32>, %h: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.broadcast+frame.add+frame.relu"} ins(%c, %bias : memref<6x8xf32>, memref<8xf32>) outs(%h : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %s = arith.addf %x, %y : f32
      %zero = arith.constant 0.000000e+00 : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %bias: memref<8xf32>, %arena: memref<512xi8> {frame.arena}) attributes {frame.arena_size = 512 : i64} {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<512xi8> to memref<6x8xf32>
    %1 = arith.constant 256 : index
    %h = memref.view %arena[%1][] : memref<512xi8> to memref<6x8xf32>
    func.call @k(%a, %b, %c, %bias, %h) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>, memref<8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// Before the micro-kernel of a tile's last k block, the lines the epilogue will touch
// outside C are prefetched: the broadcast bias once (its one row), each of the tile's
// two rows of %h for writing.

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[BIAS:[^:]*]]: memref<8xf32>, %[[H:[^:]*]]: memref<6x8xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         %[[HF:.*]] = memref.collapse_shape %[[H]]
// CHECK:         %[[FIRST:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK:           frame_rt.prefetch %[[BIAS]][%{{.*}}] : memref<8xf32>
// CHECK-NOT:       frame_rt.prefetch %[[BIAS]]
// CHECK-COUNT-2:   frame_rt.prefetch %[[HF]][%{{.*}}] write : memref<48xf32>
// CHECK-NOT:       frame_rt.prefetch
// CHECK:         func.call @frame_gemm_micro_2x8_p2x8_f32x4(
// CHECK:         %[[LAST:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    scf.if %[[LAST]] {
// CHECK:           scf.for
// CHECK-NEXT:        scf.for
// CHECK:               %[[CV:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<48xf32>
// CHECK-NEXT:          %[[BV:.*]] = memref.load %[[BIAS]][%{{.*}}] : memref<8xf32>
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[CV]], %[[BV]] : f32
// CHECK:               %[[R:.*]] = arith.maximumf %[[S]], %{{.*}} : f32
// CHECK-NEXT:          memref.store %[[R]], %{{.*}}[%{{.*}}] : memref<48xf32>
// CHECK-NOT:     linalg.generic
// CHECK-LABEL: func.func @f(

// -----

// X * W^T (a linear layer's forward with W as [out, in]): B[k, j] = W[j, k] runs along k
// (W's rows), not along the panel's columns. Each aligned group of 4 k (k_run: 4 divides
// K = 8, KC and NR) is packed as 4 x 4 blocks: 4 vector loads along W's rows, a
// transpose in registers (two rounds of 4 two-input shuffles), 4 vector stores along
// the panel's rows; a panel that reaches past the last column goes element by element.

builtin.module {
  func.func private @k(%x: memref<6x8xf32>, %w: memref<8x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%x, %w : memref<6x8xf32>, memref<8x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%p: f32, %q: f32, %r: f32):
      %s = math.fma %p, %q, %r : f32
      linalg.yield %s : f32
    }
    func.return
  }
  func.func @f(%x: memref<6x8xf32>, %w: memref<8x8xf32>, %arena: memref<192xi8> {frame.arena}) attributes {frame.arena_size = 192 : i64} {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<192xi8> to memref<6x8xf32>
    func.call @k(%x, %w, %c) : (memref<6x8xf32>, memref<8x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %{{[^:]*}}: memref<6x8xf32>, %[[W:[^:]*]]: memref<8x8xf32>
// CHECK:         %[[WF:.*]] = memref.collapse_shape %[[W]]
// CHECK:         scf.if
// CHECK-COUNT-4:   vector.load %[[WF]][%{{.*}}] : memref<64xf32>, vector<4xf32>
// CHECK-COUNT-8:   vector.shuffle
// CHECK-COUNT-4:   vector.store
// CHECK:         } else {
// CHECK:           memref.load %[[WF]][

// -----

// A GEMM whose C nothing but its epilogue reads (`frame.c_dead`, from
// frame-fuse-gemm-epilogue: here the SGD update of %w in place), zero-filled before the
// call, with one k block (K = 5 <= KC): the micro-kernel writes each tile to the scratch
// tile (row length NR = 8, from zero: the fill is dropped) and the epilogue reads C's
// values there. C itself is never stored. The tile's rows of %w, read and written by the
// update, are prefetched once each, for writing, before the micro-kernel.
builtin.module {
  func.func private @fill(%c: memref<6x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    linalg.fill ins(%zero : f32) outs(%c : memref<6x8xf32>)
    func.return
  }
  func.func private @k(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>, %w: memref<6x8xf32>) attributes {frame.c_dead} {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<6x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.sgd_update"} ins(%c : memref<6x8xf32>) outs(%w : memref<6x8xf32>) {
    ^bb0(%g: f32, %p: f32):
      %lr = arith.constant 1.000000e-01 : f32
      %step = arith.mulf %lr, %g : f32
      %r = arith.subf %p, %step : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<6x5xf32>, %b: memref<5x8xf32>, %w: memref<6x8xf32>, %arena: memref<256xi8> {frame.arena}) attributes {frame.arena_size = 256 : i64} {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<256xi8> to memref<6x8xf32>
    func.call @fill(%c) : (memref<6x8xf32>) -> ()
    func.call @k(%a, %b, %c, %w) : (memref<6x5xf32>, memref<5x8xf32>, memref<6x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[W:[^:]*]]: memref<6x8xf32>, %{{[^:]*}}: memref<384xi8>)
// CHECK:         %[[WF:.*]] = memref.collapse_shape %[[W]]
// CHECK:           %[[TILE:.*]] = memref.view {{.*}} to memref<16xf32>
// CHECK:           %[[TD:.*]] = "memref.cast"(%[[TILE]]) : (memref<16xf32>) -> memref<?xf32>
// CHECK-COUNT-2:       frame_rt.prefetch %[[WF]][%{{.*}}] write : memref<48xf32>
// CHECK-NOT:           frame_rt.prefetch
// CHECK:               func.call @frame_gemm_micro_2x8_p2x8_f32x4(%{{.*}}, %{{.*}}, %[[TD]],
// CHECK:                   memref.load %[[TILE]][%{{.*}}] : memref<16xf32>
// CHECK-NEXT:              memref.load %[[WF]][%{{.*}}] : memref<48xf32>
// CHECK:                   memref.store %{{.*}}, %[[WF]][%{{.*}}] : memref<48xf32>
// CHECK-LABEL: func.func @f(
// CHECK-NOT:     func.call @fill
// CHECK:         func.call @k(

// -----

// A reads a [2, 3, 5] tensor through the delinearisation of row i, column k of a
// [6, 5] reshape of it (frame-fold-movement's map): the flat offset is 5 i + k, so A is
// addressed as the plain 6 x 5 matrix (packed, then the micro-kernel). @bad's digits
// do not rebuild the index (a mod 2 where the size is 3): it stays a linalg.generic.
builtin.module {
  func.func private @k(%a: memref<2x3x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (((((d0 * 5) + d1) floordiv 15) mod 2), ((((d0 * 5) + d1) floordiv 5) mod 3), ((((d0 * 5) + d1) floordiv 1) mod 5))>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<2x3x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @bad(%a: memref<2x3x5xf32>, %b: memref<5x8xf32>, %c: memref<6x8xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (((((d0 * 5) + d1) floordiv 15) mod 2), ((((d0 * 5) + d1) floordiv 5) mod 2), ((((d0 * 5) + d1) floordiv 1) mod 5))>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<2x3x5xf32>, memref<5x8xf32>) outs(%c : memref<6x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %r = math.fma %x, %y, %z : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @f(%a: memref<2x3x5xf32>, %b: memref<5x8xf32>, %arena: memref<400xi8> {frame.arena}) attributes {frame.arena_size = 400 : i64} {
    %0 = arith.constant 0 : index
    %c = memref.view %arena[%0][] : memref<400xi8> to memref<6x8xf32>
    %1 = arith.constant 256 : index
    %d = memref.view %arena[%1][] : memref<400xi8> to memref<6x8xf32>
    func.call @k(%a, %b, %c) : (memref<2x3x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.call @bad(%a, %b, %d) : (memref<2x3x5xf32>, memref<5x8xf32>, memref<6x8xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %[[A:.*]]: memref<2x3x5xf32>, %{{.*}}: memref<5x8xf32>, %{{.*}}: memref<6x8xf32>, %{{.*}}: memref<{{[0-9]+}}xi8>)
// CHECK-NOT:     linalg.generic
// CHECK:         memref.collapse_shape %[[A]] {{\[\[}}0 : i64, 1 : i64, 2 : i64]] : memref<2x3x5xf32> into memref<30xf32>
// CHECK:         func.call @frame_gemm_micro_2x8_p2x8_f32x4(
// CHECK-LABEL: func.func private @bad(
// CHECK-NEXT:    linalg.generic
