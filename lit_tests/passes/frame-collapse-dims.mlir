// RUN: frame-opt %s --split-input-file -p frame-collapse-dims | filecheck %s

// An elementwise op over 2x3x4x5: every operand addresses the four dims as one
// contiguous run, so they merge into one loop of 120, and the kernel's parallel dims
// (frame-outline-kernels) are recounted.

builtin.module {
  func.func private @add(%a: memref<2x3x4x5xf32>, %b: memref<2x3x4x5xf32>, %c: memref<2x3x4x5xf32>) attributes {frame.parallel_dims = array<i64: 2, 3, 4, 5>} {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %b : memref<2x3x4x5xf32>, memref<2x3x4x5xf32>) outs(%c : memref<2x3x4x5xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
    func.return
  }
}

// CHECK-LABEL: func.func private @add(
// CHECK-SAME:    attributes {frame.parallel_dims = array<i64: 120>}
// CHECK:         %[[A:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0 : i64, 1 : i64, 2 : i64, 3 : i64]] : memref<2x3x4x5xf32> into memref<120xf32>
// CHECK:         %[[B:.*]] = memref.collapse_shape
// CHECK:         %[[C:.*]] = memref.collapse_shape
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%[[A]], %[[B]] : memref<120xf32>, memref<120xf32>) outs(%[[C]] : memref<120xf32>)
// CHECK:           arith.addf

// -----

// Batch norm's per-channel sum over x [N, C, H, W], channel loop first: (c, n) are
// apart in x, (h, w) are one run -- the innermost loop becomes H*W long. The body and
// its fastmath flags are kept.

builtin.module {
  func.func private @channel_sum(%x: memref<2x3x4x5xf32>, %s: memref<3xf32>) attributes {frame.parallel_dims = array<i64: 3>} {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0)>], iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%x : memref<2x3x4x5xf32>) outs(%s : memref<3xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %acc, %v fastmath<reassoc> : f32
      linalg.yield %r : f32
    }
    func.return
  }
}

// CHECK-LABEL: func.func private @channel_sum(
// CHECK-SAME:    attributes {frame.parallel_dims = array<i64: 3>}
// CHECK:         %[[X:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0 : i64], [1 : i64], [2 : i64, 3 : i64]] : memref<2x3x4x5xf32> into memref<2x3x20xf32>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0)>], iterator_types = ["parallel", "reduction", "reduction"]} ins(%[[X]] : memref<2x3x20xf32>) outs(%{{.*}} : memref<3xf32>)
// CHECK:           arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32

// -----

// A per-channel operand ([C], read through d1) splits the run: (n, c) stay apart, (h,
// w) merge; the [C] operand is not collapsed.

builtin.module {
  func.func private @scale_rows(%x: memref<2x3x4x5xf32>, %g: memref<3xf32>, %y: memref<2x3x4x5xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %g : memref<2x3x4x5xf32>, memref<3xf32>) outs(%y : memref<2x3x4x5xf32>) {
    ^bb0(%v: f32, %w: f32, %o: f32):
      %r = arith.mulf %v, %w : f32
      linalg.yield %r : f32
    }
    func.return
  }
}

// CHECK-LABEL: func.func private @scale_rows(
// CHECK-SAME:    %{{[^:]*}}: memref<2x3x4x5xf32>, %[[G:[^:]*]]: memref<3xf32>
// CHECK:         %[[X:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0 : i64], [1 : i64], [2 : i64, 3 : i64]]
// CHECK:         %[[Y:.*]] = memref.collapse_shape
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[G]] : memref<2x3x20xf32>, memref<3xf32>) outs(%[[Y]] : memref<2x3x20xf32>)

// -----

// col2im: the window dims (d4 + d2, d5 + d3) do not merge with anything, only the
// leading (n, c); the window expressions are renumbered over the new dims.

builtin.module {
  func.func private @col2im(%col: memref<2x3x2x2x4x4xf32>, %xp: memref<2x3x5x5xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d4 + d2), (d5 + d3))>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%col : memref<2x3x2x2x4x4xf32>) outs(%xp : memref<2x3x5x5xf32>) {
    ^bb0(%v: f32, %o: f32):
      %r = arith.addf %o, %v : f32
      linalg.yield %r : f32
    }
    func.return
  }
}

// CHECK-LABEL: func.func private @col2im(
// CHECK:         memref.collapse_shape %{{.*}} {{\[\[}}0 : i64, 1 : i64], [2 : i64], [3 : i64], [4 : i64], [5 : i64]] : memref<2x3x2x2x4x4xf32> into memref<6x2x2x4x4xf32>
// CHECK:         memref.collapse_shape %{{.*}} {{\[\[}}0 : i64, 1 : i64], [2 : i64], [3 : i64]] : memref<2x3x5x5xf32> into memref<6x5x5xf32>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, (d3 + d1), (d4 + d2))>], iterator_types = ["parallel", "reduction", "reduction", "reduction", "reduction"]}
