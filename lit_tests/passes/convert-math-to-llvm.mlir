// RUN: frame-opt %s -p convert-math-to-llvm | filecheck %s

// Every intrinsic is called by its type-mangled name, so one module may use it at
// several types (xDSL's llvm.intr.* ops translate to the unmangled name).
func.func @unary(%x: f32) -> (f32, f32, f32, f32, f32, f32) {
  %e = math.exp %x : f32
  %l = math.log %x fastmath<afn> : f32
  %t = math.tanh %x : f32
  %s = math.sqrt %x : f32
  %a = math.absf %x : f32
  %r = math.rsqrt %x : f32
  func.return %e, %l, %t, %s, %a, %r : f32, f32, f32, f32, f32, f32
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK:         %[[E:.*]] = llvm.call_intrinsic "llvm.exp.f32"(%[[X]]) : (f32) -> f32
// CHECK:         %[[L:.*]] = llvm.call_intrinsic "llvm.log.f32"(%[[X]]) : (f32) -> f32
// CHECK:         %[[T:.*]] = llvm.call_intrinsic "llvm.tanh.f32"(%[[X]]) : (f32) -> f32
// CHECK:         %[[S:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[X]]) : (f32) -> f32
// CHECK:         %[[A:.*]] = llvm.call_intrinsic "llvm.fabs.f32"(%[[X]]) : (f32) -> f32
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK:         %[[SQ:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[X]]) : (f32) -> f32
// CHECK:         %[[R:.*]] = llvm.fdiv %[[ONE]], %[[SQ]] : f32
// CHECK:         func.return %[[E]], %[[L]], %[[T]], %[[S]], %[[A]], %[[R]]

func.func @other_types(%d: f64, %v: vector<8xf32>, %y: f32) -> (f64, vector<8xf32>, f32, f32) {
  %t = math.tanh %d : f64
  %e = math.exp %v : vector<8xf32>
  %p = math.powf %y, %y : f32
  %f = math.fma %y, %y, %y : f32
  func.return %t, %e, %p, %f : f64, vector<8xf32>, f32, f32
}

// CHECK-LABEL: func.func @other_types
// CHECK-SAME:    (%[[D:.*]]: f64, %[[V:.*]]: vector<8xf32>, %[[Y:.*]]: f32)
// CHECK:         %[[T:.*]] = llvm.call_intrinsic "llvm.tanh.f64"(%[[D]]) : (f64) -> f64
// CHECK:         %[[E:.*]] = llvm.call_intrinsic "llvm.exp.v8f32"(%[[V]]) : (vector<8xf32>) -> vector<8xf32>
// CHECK:         %[[P:.*]] = llvm.call_intrinsic "llvm.pow.f32"(%[[Y]], %[[Y]]) : (f32, f32) -> f32
// CHECK:         %[[F:.*]] = llvm.intr.fma(%[[Y]], %[[Y]], %[[Y]]) : (f32, f32, f32) -> f32
// CHECK:         func.return %[[T]], %[[E]], %[[P]], %[[F]]
