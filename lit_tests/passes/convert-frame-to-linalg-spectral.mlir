// convert-frame-to-linalg on the spectral family (frame_spectral.py): a Stockham FFT.
// Each stage of radix p is a twiddle table T[k, q] (f64 cos / sin of the exact angle
// index (k q) mod L', rounded to f32) and one generic over (batch, j, q), q a
// reduction of p trips, reading the previous stage at an affine floordiv / mod
// position; n = 8 is three radix-2 stages. rfft computes bins < n//2+1 in the last
// stage and interleaves (re, im); irfft first builds the Hermitian extension (bins
// j >= K read z[(n - j) mod K] conjugated), scaled by 1/n, and keeps the real part.
// RUN: frame-opt %s --split-input-file -p convert-frame-to-linalg | filecheck %s

func.func @rfft(%x: tensor<3x8xf32>) -> tensor<3x5x2xf32> {
  %z = frame.rfft %x : (tensor<3x8xf32>) -> tensor<3x5x2xf32>
  func.return %z : tensor<3x5x2xf32>
}

// CHECK-LABEL: func.func @rfft
// CHECK:         %[[T0R:.*]], %[[T0I:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.rfft"} outs(%{{.*}}, %{{.*}} : tensor<2x2xf32>, tensor<2x2xf32>)
// CHECK:           %[[K:.*]] = linalg.index 0 : index
// CHECK-NEXT:      %[[Q:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[KQ:.*]] = arith.muli %[[K]], %[[Q]] : index
// CHECK-NEXT:      %[[L:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[M:.*]] = arith.remui %[[KQ]], %[[L]] : index
// CHECK:           %[[A:.*]] = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:      %[[C:.*]] = math.cos %[[A]] : f64
// CHECK-NEXT:      %{{.*}} = arith.truncf %[[C]] : f64 to f32
// CHECK-NEXT:      %[[S:.*]] = math.sin %[[A]] : f64
// CHECK-NEXT:      %{{.*}} = arith.truncf %[[S]] : f64 to f32
// CHECK:         %[[S0R:.*]], %[[S0I:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, ((d1 mod 4) + (d2 * 4)))>, affine_map<(d0, d1, d2) -> ((d1 floordiv 4), d2)>, affine_map<(d0, d1, d2) -> ((d1 floordiv 4), d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], doc = "frame.rfft"} ins(%x, %[[T0R]], %[[T0I]] : tensor<3x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) outs(%{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<3x8xf32>)
// CHECK:         %[[T1R:.*]], %[[T1I:.*]] = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<4x2xf32>, tensor<4x2xf32>)
// CHECK:         %[[S1R:.*]], %[[S1I:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, (((((d1 floordiv 2) mod 2) * 4) + (d1 mod 2)) + (d2 * 2)))>, affine_map<(d0, d1, d2) -> (d0, (((((d1 floordiv 2) mod 2) * 4) + (d1 mod 2)) + (d2 * 2)))>, affine_map<(d0, d1, d2) -> ((d1 floordiv 2), d2)>, affine_map<(d0, d1, d2) -> ((d1 floordiv 2), d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], doc = "frame.rfft"} ins(%[[S0R]], %[[S0I]], %[[T1R]], %[[T1I]] : tensor<3x8xf32>, tensor<3x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>)
// CHECK:           %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %[[R:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[P]], %[[R]] : f32
// CHECK-NEXT:      %{{.*}} = arith.addf %{{.*}}, %[[D]] : f32
// CHECK:         %[[T2R:.*]], %[[T2I:.*]] = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<5x2xf32>, tensor<5x2xf32>)
// CHECK:         %[[S2R:.*]], %[[S2I:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, (((d1 mod 4) * 2) + d2))>, affine_map<(d0, d1, d2) -> (d0, (((d1 mod 4) * 2) + d2))>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], doc = "frame.rfft"} ins(%[[S1R]], %[[S1I]], %[[T2R]], %[[T2I]] : {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<3x5xf32>, tensor<3x5xf32>)
// CHECK:         %z = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"], doc = "frame.rfft"} ins(%[[S2R]], %[[S2I]] : tensor<3x5xf32>, tensor<3x5xf32>) outs(%{{.*}} : tensor<3x5x2xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[RE:.*]]: f32, %[[IM:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[C2:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[ISRE:.*]] = arith.cmpi eq, %[[C2]], %[[Z]] : index
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[ISRE]], %[[RE]], %[[IM]] : f32
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         func.return %z

// -----

func.func @irfft(%z: tensor<3x4x2xf32>) -> tensor<3x6xf32> {
  %x = frame.irfft %z {n = 6 : i64} : (tensor<3x4x2xf32>) -> tensor<3x6xf32>
  func.return %x : tensor<3x6xf32>
}

// CHECK-LABEL: func.func @irfft
// CHECK:         %[[ER:.*]], %[[EI:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, (d1 mod 4), 0)>, affine_map<(d0, d1) -> (d0, (d1 mod 4), 1)>, affine_map<(d0, d1) -> (d0, (((d1 * -1) + 6) mod 4), 0)>, affine_map<(d0, d1) -> (d0, (((d1 * -1) + 6) mod 4), 1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "frame.irfft"} ins(%z, %z, %z, %z : {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<3x6xf32>, tensor<3x6xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[PR:.*]]: f32, %[[PI:.*]]: f32, %[[QR:.*]]: f32, %[[QI:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[K:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[LOW:.*]] = arith.cmpi ult, %[[J]], %[[K]] : index
// CHECK:           %[[EDGE:.*]] = arith.ori %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:      %[[W:.*]] = arith.constant 0.166666672 : f32
// CHECK-NEXT:      %[[RE:.*]] = arith.select %[[LOW]], %[[PR]], %[[QR]] : f32
// CHECK-NEXT:      %[[NQ:.*]] = arith.negf %[[QI]] : f32
// CHECK-NEXT:      %[[IM:.*]] = arith.select %[[LOW]], %[[PI]], %[[NQ]] : f32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[IM0:.*]] = arith.select %[[EDGE]], %[[ZERO]], %[[IM]] : f32
// CHECK-NEXT:      %[[A:.*]] = arith.mulf %[[W]], %[[RE]] : f32
// CHECK-NEXT:      %[[B:.*]] = arith.mulf %[[W]], %[[IM0]] : f32
// CHECK-NEXT:      linalg.yield %[[A]], %[[B]] : f32, f32
// The inverse twiddles: +2 pi / L'.
// CHECK:           arith.constant 3.1415926535897931 : f64
// CHECK:         %[[S0R:.*]], %[[S0I:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, ((d1 mod 3) + (d2 * 3)))>, {{.*}}], iterator_types = ["parallel", "parallel", "reduction"], doc = "frame.irfft"} ins(%[[ER]], %[[EI]], {{.*}})
// CHECK:           arith.constant 1.0471975511965976 : f64
// The last stage (radix 3) writes the real part only.
// CHECK:         %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, (((d1 mod 2) * 3) + d2))>, affine_map<(d0, d1, d2) -> (d0, (((d1 mod 2) * 3) + d2))>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"], doc = "frame.irfft"} ins(%[[S0R]], %[[S0I]], %{{.*}}, %{{.*}} : tensor<3x6xf32>, tensor<3x6xf32>, tensor<6x3xf32>, tensor<6x3xf32>) outs(%{{.*}} : tensor<3x6xf32>)
// CHECK:         func.return %x

// -----

func.func @prime(%x: tensor<7xf32>) -> tensor<4x2xf32> {
  %z = frame.rfft %x : (tensor<7xf32>) -> tensor<4x2xf32>
  func.return %z : tensor<4x2xf32>
}

// A prime length is one stage of radix n: the direct DFT of the bins it keeps.
// CHECK-LABEL: func.func @prime
// CHECK:         linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<4x7xf32>, tensor<4x7xf32>)
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "frame.rfft"} ins(%x, {{.*}} : tensor<7xf32>, tensor<4x7xf32>, tensor<4x7xf32>) outs(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>)

// -----

func.func @grads(%dz: tensor<5x2xf32>, %dx: tensor<8xf32>) -> (tensor<8xf32>, tensor<5x2xf32>) {
  %a = frame.rfft_grad %dz {n = 8 : i64} : (tensor<5x2xf32>) -> tensor<8xf32>
  %b = frame.irfft_grad %dx : (tensor<8xf32>) -> tensor<5x2xf32>
  func.return %a, %b : tensor<8xf32>, tensor<5x2xf32>
}

// rfft_grad: the Hermitian extension halves the bins that have a mirror image (1 at
// bin 0 and n/2), no 1/n. irfft_grad: rfft, then c_k / n (1/8 at bins 0 and 4, else
// 2/8) and the imaginary parts of bins 0 and 4 zeroed.
// CHECK-LABEL: func.func @grads
// CHECK:         linalg.generic {{.*}} doc = "frame.rfft_grad"} ins(%dz, %dz, %dz, %dz : {{.*}})
// CHECK:           %[[EDGE:.*]] = arith.ori %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %{{.*}} = arith.select %[[EDGE]], %[[ONE]], %[[HALF]] : f32
// CHECK:         %a = linalg.generic {{.*}} doc = "frame.rfft_grad"} {{.*}} outs(%{{.*}} : tensor<8xf32>)
// CHECK:         %b = linalg.generic {{.*}} doc = "frame.irfft_grad"} ins(%{{.*}}, %{{.*}} : tensor<5xf32>, tensor<5xf32>) outs(%{{.*}} : tensor<5x2xf32>)
// CHECK:           %[[ISRE:.*]] = arith.cmpi eq
// CHECK:           %[[E:.*]] = arith.ori %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:      %[[W1:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:      %[[W2:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      %[[W:.*]] = arith.select %[[E]], %[[W1]], %[[W2]] : f32
// CHECK-NEXT:      %[[V:.*]] = arith.mulf %[[W]], %{{.*}} : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[EV:.*]] = arith.select %[[ISRE]], %[[V]], %[[Z]] : f32
// CHECK-NEXT:      %{{.*}} = arith.select %[[E]], %[[EV]], %[[V]] : f32
