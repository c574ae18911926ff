// convert-frame-to-linalg on the elementwise math family (frame_math.py): each op is
// one all-parallel linalg.generic whose body computes the op on f32 scalars.
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

func.func @exp(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.exp %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @exp(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           math.exp %{{.*}} : f32
// CHECK:           linalg.yield

// -----

func.func @log(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.log %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @log(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           math.log %{{.*}} : f32
// CHECK:           linalg.yield

// -----

func.func @sqrt(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.sqrt %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @sqrt(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           math.sqrt %{{.*}} : f32
// CHECK:           linalg.yield

// -----

func.func @tanh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @tanh(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           math.tanh %{{.*}} : f32
// CHECK:           linalg.yield

// -----

func.func @abs(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.abs %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @abs(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           math.absf %{{.*}} : f32
// CHECK:           linalg.yield

// -----

func.func @abs_grad(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.abs_grad %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @abs_grad(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.cmpf ogt
// CHECK:           arith.cmpf olt
// CHECK:           arith.select
// CHECK:           arith.select
// CHECK:           arith.mulf
// CHECK:           linalg.yield

// -----

func.func @gelu(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.gelu %a {approximate = "none"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gelu(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.negf
// CHECK:           math.absf
// CHECK:           math.exp
// CHECK:           arith.select
// CHECK:           arith.mulf
// CHECK:           linalg.yield

// -----

func.func @gelu_tanh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.gelu %a {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gelu_tanh(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.constant 4.471500e-02 : f32
// CHECK:           math.tanh
// CHECK:           arith.addf
// CHECK:           arith.mulf
// CHECK:           linalg.yield

// -----

func.func @gelu_grad(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.gelu_grad %a, %b {approximate = "none"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gelu_grad(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           math.exp
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK:           linalg.yield

// -----

func.func @gelu_grad_tanh(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.gelu_grad %a, %b {approximate = "tanh"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gelu_grad_tanh(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           math.tanh
// CHECK:           arith.subf
// CHECK:           arith.mulf
// CHECK:           linalg.yield

// -----

func.func @hardtanh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.hardtanh %a {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @hardtanh(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.constant 0.000000e+00 : f32
// CHECK:           arith.constant 6.000000e+00 : f32
// CHECK:           arith.cmpf olt
// CHECK:           arith.cmpf ogt
// CHECK:           arith.select
// CHECK:           arith.select
// CHECK:           linalg.yield

// -----

func.func @hardtanh_grad(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.hardtanh_grad %a, %b {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @hardtanh_grad(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.cmpf ole
// CHECK:           arith.cmpf oge
// CHECK:           arith.ori
// CHECK:           arith.select
// CHECK:           linalg.yield

// -----

func.func @threshold(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.threshold %a {threshold = 0.5 : f32, value = -1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @threshold(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.cmpf ole
// CHECK:           arith.select
// CHECK:           linalg.yield

// -----

func.func @threshold_grad(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.threshold_grad %a, %b {threshold = 0.5 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @threshold_grad(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.cmpf ole
// CHECK:           arith.select
// CHECK:           linalg.yield

// -----

// step: 1 where x > threshold (an ordered compare: NaN gives 0), else 0.
func.func @step(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.step %a {threshold = 0.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @step(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[T:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[T]] : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.select %[[GT]], %[[ONE]], %[[ZERO]] : f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32

// -----

func.func @shift(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.shift %a {offset = -0.25 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @shift(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.constant -2.500000e-01 : f32
// CHECK:           arith.addf
// CHECK:           linalg.yield

// -----

func.func @div(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = frame.div %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @div(
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]
// CHECK:           arith.divf %{{.*}}, %{{.*}} : f32
// CHECK:           linalg.yield
