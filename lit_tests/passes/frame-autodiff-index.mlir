// frame-autodiff on the index family (frame_index.py): index_select's input gets
// index_add of dy by the same indices (repeats accumulate), index_add's source gets
// index_select of dy; the integer indices get none. scatter_add and gather_rows are in
// frame-autodiff.mlir.
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s

func.func @select(%x: tensor<2x5x3xf32> {frame.param = "x"}, %i: tensor<4xi64>, %r: tensor<2x4x3xf32>) -> tensor<f32> {
  %y = frame.index_select %x, %i {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4xi64>) -> tensor<2x4x3xf32>
  %m = frame.mul %y, %r : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %l = frame.sum %m : (tensor<2x4x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @select_grad
// CHECK:         %y = frame.index_select %x, %i {frame.stage = "forward", axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4xi64>) -> tensor<2x4x3xf32>
// CHECK:         %[[DY:.*]] = frame.mul %{{.*}}, %r {frame.stage = "backward"} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[DX:.*]] = frame.index_add %[[DY]], %i {frame.stage = "backward", axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<4xi64>) -> tensor<2x5x3xf32>
// CHECK-NEXT:    func.return %l, %[[DX]] : tensor<f32>, tensor<2x5x3xf32>

// -----

func.func @add(%s: tensor<4x3xf32> {frame.param = "s"}, %i: tensor<4xi32>) -> tensor<f32> {
  %o = frame.index_add %s, %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<6x3xf32>
  %l = frame.sum %o : (tensor<6x3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @add_grad
// CHECK:         %o = frame.index_add %s, %i {frame.stage = "forward", axis = 0 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<6x3xf32>
// CHECK:         %[[DO:.*]] = frame.broadcast %{{.*}} {frame.stage = "backward"} : (tensor<f32>) -> tensor<6x3xf32>
// CHECK-NEXT:    %[[DS:.*]] = frame.index_select %[[DO]], %i {frame.stage = "backward", axis = 0 : i64} : (tensor<6x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %l, %[[DS]] : tensor<f32>, tensor<4x3xf32>

// -----

// %x selected twice, by different indices: its adjoint is the sum of two index_adds;
// nothing flows to the index arguments.
func.func @twice(%x: tensor<5xf32> {frame.param = "x"}, %i: tensor<2xi64>, %j: tensor<3xi64>) -> tensor<f32> {
  %a = frame.index_select %x, %i {axis = 0 : i64} : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  %b = frame.index_select %x, %j {axis = 0 : i64} : (tensor<5xf32>, tensor<3xi64>) -> tensor<3xf32>
  %sa = frame.sum %a : (tensor<2xf32>) -> tensor<f32>
  %sb = frame.sum %b : (tensor<3xf32>) -> tensor<f32>
  %l = frame.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @twice_grad
// CHECK-SAME:    -> (tensor<f32>, tensor<5xf32>)
// CHECK-DAG:     %[[GB:.*]] = frame.index_add %{{.*}}, %j {frame.stage = "backward", axis = 0 : i64} : (tensor<3xf32>, tensor<3xi64>) -> tensor<5xf32>
// CHECK-DAG:     %[[GA:.*]] = frame.index_add %{{.*}}, %i {frame.stage = "backward", axis = 0 : i64} : (tensor<2xf32>, tensor<2xi64>) -> tensor<5xf32>
// CHECK:         %[[DX:.*]] = frame.add %[[GB]], %[[GA]] {frame.stage = "backward"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// CHECK-NEXT:    func.return %l, %[[DX]] : tensor<f32>, tensor<5xf32>
