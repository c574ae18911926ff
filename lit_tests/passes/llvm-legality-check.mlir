// The lowering to the llvm dialect is a full conversion: an op it cannot lower fails
// the pass that should have lowered it, inside the pipeline, at the op's location --
// never later, in the translation to LLVM IR or in the JIT. frame-opt stops at the
// first chunk that fails, so each RUN line's failure is in a later chunk than the
// previous one's, and the chunks before it lower cleanly.

// RUN: not frame-opt %s --split-input-file --allow-unregistered-dialect -p 'frame-pipeline{start-after=loops}' 2>&1 | filecheck %s --check-prefix=ANY
// RUN: not frame-opt %s --split-input-file --allow-unregistered-dialect -p convert-arith-to-llvm 2>&1 | filecheck %s --check-prefix=ARITH
// RUN: not frame-opt %s --split-input-file --allow-unregistered-dialect -p convert-math-to-llvm 2>&1 | filecheck %s --check-prefix=MATH

// An op of a dialect no pass converts survives every convert-*-to-llvm pass; the
// lowering's last pass, llvm-legality-check, reports it in the llvm.func it ended in.
// ANY: frame-opt: error: {{.*}}llvm-legality-check.mlir:[[# @LINE + 4]]:3: llvm-legality-check at @unknown: test.unknown: not lowered to the llvm dialect: no pass of the lowering converts it; 1 more op left
func.func @unknown(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  "test.unknown"(%v) : (f32) -> ()
  "test.other"() : () -> ()
  func.return
}

// -----

// An arith op with no rule: convert-arith-to-llvm fails on it (and only on it: the
// constant before it, and those of the chunk before, lower).
// ARITH: func.func @unknown
// ARITH: llvm.mlir.constant(0) : i64
// ARITH: frame-opt: error: {{.*}}llvm-legality-check.mlir:[[# @LINE + 4]]:3: convert-arith-to-llvm at @fptosi: arith.fptosi: not lowered to the llvm dialect: the pass has no rule for it
func.func @fptosi(%x: memref<4xf32>, %y: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  %i = arith.fptosi %v : f32 to i32
  memref.store %i, %y[%c0] : memref<4xi32>
  func.return
}

// -----

// A math op whose rule declines its type (rsqrt on a vector): the types are named.
// MATH: func.func @unknown
// MATH: func.func @fptosi
// MATH: frame-opt: error: {{.*}}llvm-legality-check.mlir:[[# @LINE + 2]]:3: convert-math-to-llvm at @rsqrt: math.rsqrt: not lowered to the llvm dialect: its rule does not support these types (vector<4xf32>, vector<4xf32>)
func.func @rsqrt(%v: vector<4xf32>) -> vector<4xf32> {
  %r = math.rsqrt %v : vector<4xf32>
  func.return %r : vector<4xf32>
}
