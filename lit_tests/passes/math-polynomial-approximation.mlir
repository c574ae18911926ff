// RUN: frame-opt %s -p math-polynomial-approximation | filecheck %s

// An f32 math.exp becomes arithmetic that vectorizes: clamp, n = round(x log2 e) by
// the 1.5 * 2^23 trick, r = x - n ln2 (two parts), Cephes' polynomial, and the scale
// 2^n as two exponent-field products. Other types keep math.exp (an LLVM intrinsic).

func.func @exp(%x: f32, %h: f64) -> (f32, f64) {
  %e = math.exp %x : f32
  %d = math.exp %h : f64
  func.return %e, %d : f32, f64
}

// CHECK-LABEL: func.func @exp(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: f32, %[[H:[a-z0-9_]+]]: f64)
// CHECK-NOT:     math.exp %[[X]]
// CHECK-DAG:     %[[LO:.*]] = arith.constant -1.040000e+02 : f32
// CHECK-DAG:     %[[HI:.*]] = arith.constant 8.875000e+01 : f32
// CHECK:         %[[BELOW:.*]] = arith.cmpf olt, %[[X]], %[[LO]] : f32
// CHECK-NEXT:    %[[X1:.*]] = arith.select %[[BELOW]], %[[LO]], %[[X]] : f32
// CHECK-NEXT:    %[[ABOVE:.*]] = arith.cmpf ogt, %[[X1]], %[[HI]] : f32
// CHECK-NEXT:    %[[X2:.*]] = arith.select %[[ABOVE]], %[[HI]], %[[X1]] : f32
// CHECK-NEXT:    %[[MAGIC:.*]] = arith.constant 0x4B400000 : f32
// CHECK-NEXT:    %[[L2E:.*]] = arith.constant 1.44269502 : f32
// CHECK-NEXT:    %[[T:.*]] = arith.mulf %[[X2]], %[[L2E]] : f32
// CHECK-NEXT:    %[[K:.*]] = arith.addf %[[T]], %[[MAGIC]] : f32
// CHECK-NEXT:    %[[N:.*]] = arith.subf %[[K]], %[[MAGIC]] : f32
// CHECK-NEXT:    %[[LN2HI:.*]] = arith.constant 0.693359375 : f32
// CHECK-NEXT:    %[[NH:.*]] = arith.mulf %[[N]], %[[LN2HI]] : f32
// CHECK-NEXT:    %[[R1:.*]] = arith.subf %[[X2]], %[[NH]] : f32
// CHECK-NEXT:    %[[LN2LO:.*]] = arith.constant -0.000212194442 : f32
// CHECK-NEXT:    %[[NL:.*]] = arith.mulf %[[N]], %[[LN2LO]] : f32
// CHECK-NEXT:    %[[R:.*]] = arith.subf %[[R1]], %[[NL]] : f32
// CHECK-COUNT-5: arith.mulf {{.*}}, %[[R]] : f32
// CHECK:         %[[R2:.*]] = arith.mulf %[[R]], %[[R]] : f32
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[Y:.*]] = arith.addf %{{.*}}, %[[ONE]] : f32
// CHECK-NEXT:    %[[BITS:.*]] = arith.bitcast %[[K]] : f32 to i32
// CHECK-NEXT:    %[[MBITS:.*]] = arith.bitcast %[[MAGIC]] : f32 to i32
// CHECK-NEXT:    %[[NI:.*]] = arith.subi %[[BITS]], %[[MBITS]] : i32
// CHECK:         %[[N1:.*]] = arith.shrsi %[[NI]], %{{.*}} : i32
// CHECK-NEXT:    %[[N2:.*]] = arith.subi %[[NI]], %[[N1]] : i32
// CHECK:         %[[E1:.*]] = arith.addi %[[N1]], %{{.*}} : i32
// CHECK-NEXT:    %[[S1I:.*]] = arith.shli %[[E1]], %{{.*}} : i32
// CHECK-NEXT:    %[[S1:.*]] = arith.bitcast %[[S1I]] : i32 to f32
// CHECK-NEXT:    %[[P1:.*]] = arith.mulf %[[Y]], %[[S1]] : f32
// CHECK-NEXT:    %[[E2:.*]] = arith.addi %[[N2]], %{{.*}} : i32
// CHECK-NEXT:    %[[S2I:.*]] = arith.shli %[[E2]], %{{.*}} : i32
// CHECK-NEXT:    %[[S2:.*]] = arith.bitcast %[[S2I]] : i32 to f32
// CHECK-NEXT:    %[[RES:.*]] = arith.mulf %[[P1]], %[[S2]] : f32
// CHECK-NEXT:    %[[D:.*]] = math.exp %[[H]] : f64
// CHECK-NEXT:    func.return %[[RES]], %[[D]] : f32, f64
