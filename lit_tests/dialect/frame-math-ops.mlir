// The elementwise math family (frame_mlir/dialects/frame_math.py): round trip in the
// custom syntax and through the generic form.
// RUN: frame-opt %s | filecheck %s
// RUN: frame-opt %s --print-op-generic | frame-opt | filecheck %s

func.func @math(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %exp = frame.exp %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %log = frame.log %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sqrt = frame.sqrt %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %tanh = frame.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %abs = frame.abs %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %absg = frame.abs_grad %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelu = frame.gelu %a {approximate = "none"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelut = frame.gelu %a {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelug = frame.gelu_grad %a, %b {approximate = "tanh"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %ht = frame.hardtanh %a {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %htg = frame.hardtanh_grad %a, %b {min_val = -1.0 : f32, max_val = 1.0 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %th = frame.threshold %a {threshold = 0.5 : f32, value = -1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %thg = frame.threshold_grad %a, %b {threshold = 0.5 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %step = frame.step %a {threshold = -0.25 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sh = frame.shift %a {offset = -0.25 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %div = frame.div %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %div : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @math
// CHECK-NEXT:    %{{.*}} = frame.exp %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.log %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.sqrt %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.tanh %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.abs %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.abs_grad %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.gelu %{{.*}} {approximate = "none"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.gelu %{{.*}} {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.gelu_grad %{{.*}}, %{{.*}} {approximate = "tanh"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.hardtanh %{{.*}} {min_val = 0.000000e+00 : f32, max_val = 6.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.hardtanh_grad %{{.*}}, %{{.*}} {min_val = -1.000000e+00 : f32, max_val = 1.000000e+00 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.threshold %{{.*}} {threshold = 5.000000e-01 : f32, value = -1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.threshold_grad %{{.*}}, %{{.*}} {threshold = 5.000000e-01 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.step %{{.*}} {threshold = -2.500000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = frame.shift %{{.*}} {offset = -2.500000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[D:.*]] = frame.div %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[D]] : tensor<2x3xf32>
