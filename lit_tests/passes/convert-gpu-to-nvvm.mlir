// RUN: frame-opt %s -p convert-gpu-to-nvvm | filecheck %s
// RUN: frame-opt %s -p 'convert-gpu-to-nvvm,frame-pipeline{start-after=loops}' | filecheck %s --check-prefix=LLVM

// A device module as backend/cuda/ptx.device_module splits it off: one kernel that
// reads its ids, stages a value in shared memory, waits at a barrier and calls exp
// (libdevice) and sqrt (an NVPTX instruction).

builtin.module {
  "gpu.module"() <{sym_name = "frame_kernels"}> ({
    "memref.global"() <{sym_name = "k_smem_0", type = memref<256xf32, 3 : i64>, initial_value, sym_visibility = "private", alignment = 16 : i64}> : () -> ()
    "gpu.func"() <{function_type = (memref<512xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<512xf32>):
      %sm = memref.get_global @k_smem_0 : memref<256xf32, 3 : i64>
      %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %n = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %base = arith.muli %b, %n : index
      %i = arith.addi %base, %t : index
      %x = memref.load %a[%i] : memref<512xf32>
      %e = math.exp %x : f32
      %r = math.sqrt %e : f32
      memref.store %r, %sm[%t] : memref<256xf32, 3 : i64>
      "gpu.barrier"() : () -> ()
      %y = memref.load %sm[%t] : memref<256xf32, 3 : i64>
      memref.store %y, %a[%i] : memref<512xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 256, 1, 1>} : () -> ()
  }) : () -> ()
}

// The gpu.module is gone: the kernel is a public function marked nvvm.kernel, the
// shared buffer a global in address space 3, the ids PTX special registers.
// CHECK:      builtin.module {
// CHECK-NEXT:   func.func private @__nv_expf(f32) -> f32
// CHECK-NEXT:   llvm.mlir.global internal @k_smem_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
// CHECK:        func.func @k(%{{.*}}: memref<512xf32>) attributes {gpu.known_block_size = array<i32: 256, 1, 1>, nvvm.kernel} {
// CHECK-NEXT:     %[[P:.*]] = llvm.mlir.addressof @k_smem_0 : !llvm.ptr<3>
// CHECK-NEXT:     %[[SM:.*]] = builtin.unrealized_conversion_cast %[[P]] : !llvm.ptr<3> to memref<256xf32, 3 : i64>
// CHECK-NEXT:     %[[B:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"() : () -> i32
// CHECK-NEXT:     %[[BW:.*]] = llvm.zext %[[B]] : i32 to i64
// CHECK-NEXT:     %{{.*}} = builtin.unrealized_conversion_cast %[[BW]] : i64 to index
// CHECK-NEXT:     %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK:          llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.x"() : () -> i32
// CHECK:          %[[E:.*]] = func.call @__nv_expf(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:     %{{.*}} = math.sqrt %[[E]] : f32
// CHECK:          llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
// CHECK:          func.return

// After the rest of the lowering the shared buffer is addressed in address space 3
// (ld.shared / st.shared in PTX), global memory through plain pointers.
// LLVM:       llvm.func @__nv_expf(f32) -> f32
// LLVM:       llvm.func @k(%{{.*}}: !llvm.ptr {llvm.noalias
// LLVM:         llvm.call @__nv_expf(%{{.*}}) : (f32) -> f32
// LLVM:         llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// LLVM-NEXT:    llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<3>
