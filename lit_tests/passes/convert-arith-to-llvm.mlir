// RUN: frame-opt %s -p convert-arith-to-llvm | filecheck %s

func.func @index_math(%i: index, %n: index) -> (index, i1) {
  %c4 = arith.constant 4 : index
  %m = arith.muli %i, %c4 overflow<nsw> : index
  %s = arith.addi %m, %n : index
  %lt = arith.cmpi slt, %s, %n : index
  func.return %s, %lt : index, i1
}

// CHECK-LABEL: func.func @index_math
// CHECK-SAME:    (%[[I:.*]]: index, %[[N:.*]]: index)
// CHECK-DAG:     %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK-DAG:     %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[M:.*]] = llvm.mul %[[I64]], %[[C4]] overflow<nsw> : i64
// CHECK:         %[[N64:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK:         %[[S:.*]] = llvm.add %[[M]], %[[N64]] : i64
// CHECK:         %[[SI:.*]] = builtin.unrealized_conversion_cast %[[S]] : i64 to index
// CHECK:         %[[LT:.*]] = llvm.icmp "slt" %[[S]], %[[N64]] : i64
// CHECK:         func.return %[[SI]], %[[LT]] : index, i1

func.func @float_math(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32, f32) {
  %zero = arith.constant 0.0 : f32
  %p = arith.mulf %a, %b : f32
  %s = arith.addf %p, %b fastmath<reassoc,contract> : f32
  %n = arith.negf %s : f32
  %relu = arith.maximumf %n, %zero : f32
  %lo = arith.minimumf %a, %b : f32
  %gt = arith.cmpf ogt, %a, %b : f32
  %mx = arith.select %gt, %a, %b : f32
  %d = arith.divf %a, %b : f32
  func.return %p, %s, %relu, %lo, %mx, %d : f32, f32, f32, f32, f32, f32
}

// CHECK-LABEL: func.func @float_math
// CHECK-SAME:    (%[[A:.*]]: f32, %[[B:.*]]: f32)
// CHECK:         %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK:         %[[P:.*]] = llvm.fmul %[[A]], %[[B]] : f32
// CHECK:         %[[S:.*]] = llvm.fadd %[[P]], %[[B]] {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// CHECK:         %[[N:.*]] = llvm.fneg %[[S]] : f32
// CHECK:         %[[RELU:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[N]], %[[ZERO]]) : (f32, f32) -> f32
// CHECK:         %[[LO:.*]] = llvm.call_intrinsic "llvm.minimum.f32"(%[[A]], %[[B]]) : (f32, f32) -> f32
// CHECK:         %[[GT:.*]] = llvm.fcmp "ogt" %[[A]], %[[B]] : f32
// CHECK:         %[[MX:.*]] = llvm.select %[[GT]], %[[A]], %[[B]] : i1, f32
// CHECK:         %[[D:.*]] = llvm.fdiv %[[A]], %[[B]] : f32
// CHECK:         func.return %[[P]], %[[S]], %[[RELU]], %[[LO]], %[[MX]], %[[D]]

func.func @conversions(%i: index, %flag: i1, %x: f32, %k: i32) -> (f32, f32, i32, f64, i64, i1, i32) {
  %ii = arith.index_cast %i : index to i64
  %f = arith.sitofp %ii : i64 to f32
  %mask = arith.uitofp %flag : i1 to f32
  %t = arith.index_cast %i : index to i32
  %w = arith.extf %x : f32 to f64
  %e = arith.extsi %k : i32 to i64
  %never = arith.cmpf false, %x, %x : f32
  %big = arith.maxsi %k, %t : i32
  func.return %f, %mask, %t, %w, %e, %never, %big : f32, f32, i32, f64, i64, i1, i32
}

// CHECK-LABEL: func.func @conversions
// CHECK-SAME:    (%[[I:.*]]: index, %[[FLAG:.*]]: i1, %[[X:.*]]: f32, %[[K:.*]]: i32)
// CHECK:         %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK:         %[[F:.*]] = llvm.sitofp %[[I64]] : i64 to f32
// CHECK:         %[[Z:.*]] = llvm.zext %[[FLAG]] : i1 to i64
// CHECK:         %[[MASK:.*]] = llvm.sitofp %[[Z]] : i64 to f32
// CHECK:         %[[T:.*]] = llvm.trunc %[[I64]] : i64 to i32
// CHECK:         %[[W:.*]] = llvm.fpext %[[X]] : f32 to f64
// CHECK:         %[[E:.*]] = llvm.sext %[[K]] : i32 to i64
// CHECK:         %[[NEVER:.*]] = llvm.mlir.constant(false) : i1
// CHECK:         %[[CMP:.*]] = llvm.icmp "sgt" %[[K]], %[[T]] : i32
// CHECK:         %[[BIG:.*]] = llvm.select %[[CMP]], %[[K]], %[[T]] : i1, i32
// CHECK:         func.return %[[F]], %[[MASK]], %[[T]], %[[W]], %[[E]], %[[NEVER]], %[[BIG]]

// Vector float arithmetic keeps its vector types; splat constants are dense vector
// constants (-0.0 stays -0.0); min/max call the intrinsic of the vector type; a
// select with a scalar condition picks a whole vector (xDSL's arith.select takes no
// vector condition, and its arith.cmpf gives an i1 even on vectors).
func.func @vector_math(%a: vector<16xf32>, %b: vector<16xf32>, %c: i1) -> vector<16xf32> {
  %nz = arith.constant dense<-0.0> : vector<16xf32>
  %s = arith.addf %a, %nz : vector<16xf32>
  %d = arith.subf %s, %b : vector<16xf32>
  %p = arith.mulf %d, %b : vector<16xf32>
  %mx = arith.maximumf %p, %nz : vector<16xf32>
  %mn = arith.minimumf %mx, %a : vector<16xf32>
  %r = arith.select %c, %mn, %a : vector<16xf32>
  func.return %r : vector<16xf32>
}

// CHECK-LABEL: func.func @vector_math
// CHECK-SAME:    (%[[A:.*]]: vector<16xf32>, %[[B:.*]]: vector<16xf32>, %[[C:.*]]: i1)
// CHECK:         %[[NZ:.*]] = llvm.mlir.constant(dense<-0.000000e+00> : vector<16xf32>) : vector<16xf32>
// CHECK:         %[[S:.*]] = llvm.fadd %[[A]], %[[NZ]] : vector<16xf32>
// CHECK:         %[[D:.*]] = llvm.fsub %[[S]], %[[B]] : vector<16xf32>
// CHECK:         %[[P:.*]] = llvm.fmul %[[D]], %[[B]] : vector<16xf32>
// CHECK:         %[[MX:.*]] = llvm.call_intrinsic "llvm.maximum.v16f32"(%[[P]], %[[NZ]]) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK:         %[[MN:.*]] = llvm.call_intrinsic "llvm.minimum.v16f32"(%[[MX]], %[[A]]) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK:         %[[R:.*]] = llvm.select %[[C]], %[[MN]], %[[A]] : i1, vector<16xf32>
// CHECK:         func.return %[[R]] : vector<16xf32>
