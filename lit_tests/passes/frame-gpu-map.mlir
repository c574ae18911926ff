// RUN: frame-opt %s -p frame-gpu-map | filecheck %s

// Three kernels as frame-outline-kernels leaves them, one per form of frame-gpu-map:
// an elementwise add (one thread per element), a matmul (shared-memory tiles) and a
// sum of 4096 terms into one element (a block-level tree).

builtin.module {
  func.func private @step__k0_add(%a: memref<300xf32>, %b: memref<300xf32>, %c: memref<300xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"], doc = "frame.add"} ins(%a, %b : memref<300xf32>, memref<300xf32>) outs(%c : memref<300xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
    func.return
  }
  func.func private @step__k1_matmul(%a: memref<128x64xf32>, %b: memref<64x96xf32>, %c: memref<128x96xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"], doc = "frame.matmul"} ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %r = math.fma %x, %y, %acc : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func private @step__k2_sum(%a: memref<4096xf32>, %c: memref<f32>) {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"], doc = "frame.sum"} ins(%a : memref<4096xf32>) outs(%c : memref<f32>) {
    ^bb0(%x: f32, %acc: f32):
      %r = arith.addf %acc, %x : f32
      linalg.yield %r : f32
    }
    func.return
  }
  func.func @step(%a: memref<300xf32>, %b: memref<300xf32>, %c: memref<300xf32>, %x: memref<128x64xf32>, %w: memref<64x96xf32>, %y: memref<128x96xf32>, %v: memref<4096xf32>, %s: memref<f32>) {
    func.call @step__k0_add(%a, %b, %c) {frame.layer = "add"} : (memref<300xf32>, memref<300xf32>, memref<300xf32>) -> ()
    func.call @step__k1_matmul(%x, %w, %y) : (memref<128x64xf32>, memref<64x96xf32>, memref<128x96xf32>) -> ()
    func.call @step__k2_sum(%v, %s) : (memref<4096xf32>, memref<f32>) -> ()
    func.return
  }
}

// The host function launches each kernel with a constant grid and block: 300 threads
// in blocks of 256 -> 2 blocks; 128 x 96 in 32 x 32 tiles (64 x 64 ones would be only 4
// blocks) -> (3, 4) blocks of 16 x 16; one block of 256 for the sum.
// CHECK:      builtin.module attributes {gpu.container_module} {
// CHECK:        func.func @step(
// CHECK:          %[[G0:.*]] = arith.constant 2 : index
// CHECK-NEXT:     %[[G1:.*]] = arith.constant 1 : index
// CHECK-NEXT:     %[[G2:.*]] = arith.constant 1 : index
// CHECK-NEXT:     %[[B0:.*]] = arith.constant 256 : index
// CHECK:          "gpu.launch_func"(%[[G0]], %[[G1]], %[[G2]], %[[B0]], {{.*}}) <{kernel = @frame_kernels::@step__k0_add, {{.*}}}> {frame.layer = "add"}
// CHECK:          arith.constant 3 : index
// CHECK-NEXT:     arith.constant 4 : index
// CHECK-NEXT:     arith.constant 1 : index
// CHECK-NEXT:     arith.constant 16 : index
// CHECK-NEXT:     arith.constant 16 : index
// CHECK:          "gpu.launch_func"({{.*}}) <{kernel = @frame_kernels::@step__k1_matmul,
// CHECK:          "gpu.launch_func"({{.*}}) <{kernel = @frame_kernels::@step__k2_sum,

// The kernels live in the gpu.module. The add: global id = block * 256 + thread,
// guarded by < 300 (the last block is partial).
// The matmul's tiles of A (32 x 16) and B (16 x 32) and the sum's partial sums live in
// shared memory (address space 3).
// CHECK:        "gpu.module"() <{sym_name = "frame_kernels"}> ({
// CHECK-NEXT:     "memref.global"() <{sym_name = "step__k1_matmul_smem_0", type = memref<512xf32, 3 : i64>, initial_value, sym_visibility = "private", alignment = 16 : i64}>
// CHECK-NEXT:     "memref.global"() <{sym_name = "step__k1_matmul_smem_1", type = memref<512xf32, 3 : i64>, initial_value, sym_visibility = "private", alignment = 16 : i64}>
// CHECK-NEXT:     "memref.global"() <{sym_name = "step__k2_sum_smem_0", type = memref<256xf32, 3 : i64>, initial_value, sym_visibility = "private", alignment = 16 : i64}>
// CHECK:          "gpu.func"() <{function_type = (memref<300xf32>, memref<300xf32>, memref<300xf32>) -> (), kernel}> ({
// CHECK:            %[[BID:.*]] = "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT:       %[[N:.*]] = arith.constant 256 : index
// CHECK-NEXT:       %[[BASE:.*]] = arith.muli %[[BID]], %[[N]]
// CHECK-NEXT:       %[[TID:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT:       %[[GID:.*]] = arith.addi %[[BASE]], %[[TID]]
// CHECK-NEXT:       %[[END:.*]] = arith.constant 300 : index
// CHECK-NEXT:       %[[IN:.*]] = arith.cmpi ult, %[[GID]], %[[END]]
// CHECK-NEXT:       scf.if %[[IN]] {
// CHECK-NEXT:         %[[X:.*]] = memref.load %{{.*}}[%[[GID]]]
// CHECK-NEXT:         %[[Y:.*]] = memref.load %{{.*}}[%[[GID]]]
// CHECK-NEXT:         %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:         memref.store %[[S]], %{{.*}}[%[[GID]]]
// CHECK:          }) {sym_name = "step__k0_add", gpu.known_block_size = array<i32: 256, 1, 1>, frame.gpu.grid = array<i64: 2, 1, 1>, frame.gpu.form = "threads"}
// The matmul: 4 accumulators per thread (2 x 2) carried through the K loop (step 16),
// two barriers per step (tiles loaded; tiles consumed).
// CHECK:          "gpu.func"() <{function_type = (memref<128x64xf32>, memref<64x96xf32>, memref<128x96xf32>) -> (), kernel}> ({
// CHECK:            memref.get_global @step__k1_matmul_smem_0 : memref<512xf32, 3 : i64>
// CHECK:            scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
// CHECK:              "gpu.barrier"() : () -> ()
// CHECK:              math.fma
// CHECK:              "gpu.barrier"() : () -> ()
// CHECK:          }) {sym_name = "step__k1_matmul", gpu.known_block_size = array<i32: 16, 16, 1>, frame.gpu.grid = array<i64: 3, 4, 1>, frame.gpu.form = "tiled"}
// The sum: strided partial sums, then 8 halving steps (128, 64, ..., 1), each a barrier.
// CHECK:          "gpu.func"() <{function_type = (memref<4096xf32>, memref<f32>) -> (), kernel}> ({
// CHECK-COUNT-9:    "gpu.barrier"() : () -> ()
// CHECK-NOT:        "gpu.barrier"
// CHECK:          }) {sym_name = "step__k2_sum", gpu.known_block_size = array<i32: 256, 1, 1>, frame.gpu.grid = array<i64: 1, 1, 1>, frame.gpu.form = "tree"}
