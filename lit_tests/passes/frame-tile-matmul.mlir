// RUN: frame-opt %s -p frame-tile-matmul | filecheck %s

// An 8x16 @ 16x20 matmul kernel: two 4-row tiles of 16 columns, then plain loops
// for the 4 columns left over. A matmul too small to tile keeps its generic (and its
// frame.parallel_dims from frame-outline-kernels; a tiled one drops it).

func.func private @k_matmul(%a: memref<8x3xf32>, %b: memref<3x20xf32>, %c: memref<8x20xf32>) attributes {frame.parallel_dims = array<i64: 8>} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<8x3xf32>, memref<3x20xf32>) outs(%c : memref<8x20xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = math.fma %x, %y, %acc : f32
    linalg.yield %s : f32
  }
  func.return
}

// CHECK-LABEL: func.func private @k_matmul(
// CHECK-SAME:    %[[A:.*]]: memref<8x3xf32>, %[[B:.*]]: memref<3x20xf32>, %[[C:.*]]: memref<8x20xf32>)
// CHECK-NOT:     frame.parallel_dims
// CHECK-NOT:     linalg.generic
// Tiles: i0 in [0, 8) step 4, j0 in [0, 16) step 16, k in [0, 3), r in [0, 4), jj in [0, 16).
// CHECK:         %[[C8:.*]] = arith.constant 8 : index
// CHECK:         %[[C4:.*]] = arith.constant 4 : index
// CHECK:         scf.for %[[I0:.*]] = %{{.*}} to %[[C8]] step %[[C4]] {
// CHECK:           %[[J_UB:.*]] = arith.constant 16 : index
// CHECK-NEXT:      %[[J_STEP:.*]] = arith.constant 16 : index
// CHECK-NEXT:      scf.for %[[J0:.*]] = %{{.*}} to %[[J_UB]] step %[[J_STEP]] {
// CHECK:             scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:                 %[[I:.*]] = arith.addi %[[I0]], %[[R]] : index
// CHECK:                 %[[AV:.*]] = memref.load %[[A]][%[[I]], %[[K]]] : memref<8x3xf32>
// CHECK:                 scf.for %[[JJ:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:                   %[[J:.*]] = arith.addi %[[J0]], %[[JJ]] : index
// CHECK:                   %[[BV:.*]] = memref.load %[[B]][%[[K]], %[[J]]] : memref<3x20xf32>
// CHECK:                   %[[CV:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<8x20xf32>
// CHECK:                   %[[S:.*]] = math.fma %[[AV]], %[[BV]], %[[CV]] : f32
// CHECK:                   memref.store %[[S]], %[[C]][%[[I]], %[[J]]] : memref<8x20xf32>
// The 4 leftover columns [16, 20), all rows.
// CHECK:         scf.for %[[RI:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for %[[RK:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[LO:.*]] = arith.constant 16 : index
// CHECK-NEXT:        %[[HI:.*]] = arith.constant 20 : index
// CHECK:             scf.for %[[RJ:.*]] = %[[LO]] to %[[HI]] step %{{.*}} {
// CHECK:               memref.store %{{.*}}, %[[C]][%[[RI]], %[[RJ]]] : memref<8x20xf32>
// 480 multiply-adds: too few to split over threads, so no loop is marked parallel.
// CHECK-NOT:     frame.parallel
// CHECK:         func.return

func.func private @small(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %c: memref<2x4xf32>) attributes {frame.parallel_dims = array<i64: 2>} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<2x3xf32>, memref<3x4xf32>) outs(%c : memref<2x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = math.fma %x, %y, %acc : f32
    linalg.yield %s : f32
  }
  func.return
}

// CHECK-LABEL: func.func private @small(
// CHECK-SAME:    attributes {frame.parallel_dims = array<i64: 2>}
// CHECK:         linalg.generic

// A transposed lhs (A map (d1, d0), as convert-frame-to-linalg emits for
// `transpose_lhs`) tiles the same way; only the A load changes, to A[k, i], in the
// tiles and in the plain loops over the rows left over (6 = one 4-row tile + 2).

func.func private @k_matmul_transpose_lhs(%a: memref<3x6xf32>, %b: memref<3x16xf32>, %c: memref<6x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<3x6xf32>, memref<3x16xf32>) outs(%c : memref<6x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = math.fma %x, %y, %acc : f32
    linalg.yield %s : f32
  }
  func.return
}

// CHECK-LABEL: func.func private @k_matmul_transpose_lhs(
// CHECK-SAME:    %[[A:.*]]: memref<3x6xf32>, %[[B:.*]]: memref<3x16xf32>, %[[C:.*]]: memref<6x16xf32>)
// CHECK-NOT:     linalg.generic
// Tiles: i0 in [0, 4) step 4, j0 in [0, 16) step 16, k in [0, 3), r in [0, 4), jj in [0, 16).
// CHECK:         %[[I_UB:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[I_STEP:.*]] = arith.constant 4 : index
// CHECK-NEXT:    scf.for %[[I0:.*]] = %{{.*}} to %[[I_UB]] step %[[I_STEP]] {
// CHECK:           scf.for %[[J0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:            %[[I:.*]] = arith.addi %[[I0]], %[[R]] : index
// CHECK-NEXT:            %[[AV:.*]] = memref.load %[[A]][%[[K]], %[[I]]] : memref<3x6xf32>
// CHECK:                 scf.for %[[JJ:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:              %[[J:.*]] = arith.addi %[[J0]], %[[JJ]] : index
// CHECK-NEXT:              %[[BV:.*]] = memref.load %[[B]][%[[K]], %[[J]]] : memref<3x16xf32>
// CHECK-NEXT:              %[[CV:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<6x16xf32>
// CHECK-NEXT:              %[[S:.*]] = math.fma %[[AV]], %[[BV]], %[[CV]] : f32
// CHECK-NEXT:              memref.store %[[S]], %[[C]][%[[I]], %[[J]]] : memref<6x16xf32>
// The 2 leftover rows [4, 6), all columns.
// CHECK:         %[[LO:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[HI:.*]] = arith.constant 6 : index
// CHECK-NEXT:    %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:    scf.for %[[RI:.*]] = %[[LO]] to %[[HI]] step %{{.*}} {
// CHECK:           scf.for %[[RK:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[RAV:.*]] = memref.load %[[A]][%[[RK]], %[[RI]]] : memref<3x6xf32>
// CHECK:             scf.for %[[RJ:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          %[[RBV:.*]] = memref.load %[[B]][%[[RK]], %[[RJ]]] : memref<3x16xf32>
// CHECK-NEXT:          %[[RCV:.*]] = memref.load %[[C]][%[[RI]], %[[RJ]]] : memref<6x16xf32>
// CHECK-NEXT:          %[[RS:.*]] = math.fma %[[RAV]], %[[RBV]], %[[RCV]] : f32
// CHECK-NEXT:          memref.store %[[RS]], %[[C]][%[[RI]], %[[RJ]]] : memref<6x16xf32>
// CHECK:         func.return

// From 32768 multiply-adds (MIN_PARALLEL_WORK) on, the loops over rows of C are marked
// frame.parallel for frame-parallelize: the loop over tiles of 4 rows, and the loop
// over the 2 rows left over (34 = 8 tiles + 2).

func.func private @k_wide(%a: memref<34x32xf32>, %b: memref<32x32xf32>, %c: memref<34x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<34x32xf32>, memref<32x32xf32>) outs(%c : memref<34x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = math.fma %x, %y, %acc : f32
    linalg.yield %s : f32
  }
  func.return
}

// CHECK-LABEL: func.func private @k_wide(
// CHECK:         %[[UB:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 4 : index
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %[[UB]] step %[[STEP]] {
// CHECK:         } {frame.parallel}
// CHECK-NEXT:    %[[LO:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[HI:.*]] = arith.constant 34 : index
// CHECK:         scf.for %{{.*}} = %[[LO]] to %[[HI]] step %{{.*}} {
// CHECK:         } {frame.parallel}
// CHECK-NEXT:    func.return
