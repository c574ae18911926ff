// RUN: frame-opt %s -p frame-gpu-host | filecheck %s

// Two host functions as frame-gpu-map leaves them: a train step (a data input, a
// parameter it updates, the loss, a step arena with one intermediate) and the model
// function (the same input and parameter, its own loss and arena).

builtin.module attributes {gpu.container_module} {
  func.func @m(%x: memref<8x4xf32>, %w: memref<4xf32> {frame.param = "w"}, %out: memref<f32> {frame.output = 0 : i64}, %arena: memref<128xi8> {frame.arena}) attributes {frame.arena_size = 128 : i64} {
    %c0 = arith.constant 0 : index
    %t = memref.view %arena[%c0][] : memref<128xi8> to memref<8xf32>
    %one = arith.constant 1 : index
    "gpu.launch_func"(%one, %one, %one, %one, %one, %one, %x, %w, %t) <{kernel = @frame_kernels::@mv, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0>}> : (index, index, index, index, index, index, memref<8x4xf32>, memref<4xf32>, memref<8xf32>) -> ()
    "gpu.launch_func"(%one, %one, %one, %one, %one, %one, %t, %out) <{kernel = @frame_kernels::@sum, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}> : (index, index, index, index, index, index, memref<8xf32>, memref<f32>) -> ()
    func.return
  }
  func.func @m_train_step(%x: memref<8x4xf32>, %w: memref<4xf32> {frame.param = "w", frame.aliasing_output = 1 : i64}, %out: memref<f32> {frame.output = 0 : i64}, %arena: memref<512xi8> {frame.arena}) attributes {frame.arena_size = 512 : i64} {
    %c64 = arith.constant 64 : index
    %t = memref.view %arena[%c64][] : memref<512xi8> to memref<8xf32>
    %one = arith.constant 1 : index
    "gpu.launch_func"(%one, %one, %one, %one, %one, %one, %x, %w, %t) <{kernel = @frame_kernels::@mv, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0>}> : (index, index, index, index, index, index, memref<8x4xf32>, memref<4xf32>, memref<8xf32>) -> ()
    "gpu.launch_func"(%one, %one, %one, %one, %one, %one, %t, %out) <{kernel = @frame_kernels::@sum, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}> : (index, index, index, index, index, index, memref<8xf32>, memref<f32>) -> ()
    func.return
  }
}

// One device arena of 1536 bytes: the input at 0, the parameter at 256 (shared by both
// functions), each function's loss in a slot of its own (512, 768), then the larger step
// arena (512 bytes) at 1024. Every buffer is a view of the one argument; the arena's
// views move by the arena's slot (64 -> 1088).
// CHECK:      builtin.module attributes {gpu.container_module, frame.gpu.device_arena_size = 1536 : i64} {
// CHECK-NEXT:   func.func @m(%device: memref<1536xi8> {frame.gpu.device_arena}) attributes {frame.gpu.argument_offsets = array<i64: 0, 256, 512, 1024>, frame.gpu.argument_attrs = [{}, {frame.param = "w"}, {frame.output = 0 : i64}, {frame.arena}]} {
// CHECK-NEXT:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:     %x = memref.view %device[%[[C0]]][] {frame.gpu.argument = 0 : i64} : memref<1536xi8> to memref<8x4xf32>
// CHECK-NEXT:     %[[C1:.*]] = arith.constant 256 : index
// CHECK-NEXT:     %w = memref.view %device[%[[C1]]][] {frame.gpu.argument = 1 : i64} : memref<1536xi8> to memref<4xf32>
// CHECK-NEXT:     %[[C2:.*]] = arith.constant 512 : index
// CHECK-NEXT:     %out = memref.view %device[%[[C2]]][] {frame.gpu.argument = 2 : i64} : memref<1536xi8> to memref<f32>
// CHECK:          %[[C3:.*]] = arith.constant 1024 : index
// CHECK-NEXT:     %[[T:.*]] = memref.view %device[%[[C3]]][] : memref<1536xi8> to memref<8xf32>
// CHECK:          "gpu.launch_func"({{.*}}, %x, %w, %[[T]]) <{kernel = @frame_kernels::@mv
// CHECK:          "gpu.launch_func"({{.*}}, %[[T]], %out) <{kernel = @frame_kernels::@sum
// CHECK:        func.func @m_train_step(%device: memref<1536xi8> {frame.gpu.device_arena}) attributes {frame.gpu.argument_offsets = array<i64: 0, 256, 768, 1024>
// CHECK:          arith.constant 1088 : index
