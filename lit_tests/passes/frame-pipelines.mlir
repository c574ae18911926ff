// The named pipelines: `-p frame-to-<stage>` runs the driver's own passes (stages()
// in passes/pipeline.py, what frame-run runs) from frame IR through <stage>;
// `frame-pipeline{start-after=A stop-after=B}` any range of stages. Options: lr, sgd
// (false: no SGD fused, @f_grad stays), threads (1 by default).

// A training function written at the frame level, results unranked: one flag lowers
// it to the llvm dialect, with its train step and train loop.
// RUN: frame-opt %s -p 'frame-to-llvm{lr=0.05}' | filecheck %s --check-prefix=LLVM
// LLVM-DAG:   llvm.func @mlp(
// LLVM-DAG:   llvm.func @mlp_train_step({{.*}}frame.aliasing_output
// LLVM-DAG:   llvm.func @mlp_train_loop(
// LLVM-DAG:   llvm.func internal @mlp__k{{[0-9]+}}_{{.*}}(%{{.*}}: !llvm.ptr {llvm.noalias
// Nothing but the llvm dialect is left, anywhere in the module.
// RUN: frame-opt %s -p 'frame-to-llvm{lr=0.05}' | filecheck %s --check-prefix=LOWERED
// LOWERED-NOT: {{= (frame|frame_rt|linalg|scf|arith|memref|func|cf|math|vector|tensor)\.}}
// LOWERED-NOT: {{^ *(func|scf|cf|memref|frame)\.}}
// LOWERED-NOT: tensor<
// LOWERED-NOT: memref<

// Each stage's pipeline stops there.
// RUN: frame-opt %s -p frame-to-frame | filecheck %s --check-prefix=FRAME
// FRAME-LABEL: func.func @mlp(
// FRAME:         frame.matmul %x, %w1 : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
// FRAME:         frame.mse_loss %{{.*}}, %t : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<f32>
// FRAME-NOT:     func.func @mlp_grad
// RUN: frame-opt %s -p frame-to-autodiff | filecheck %s --check-prefix=AUTODIFF
// AUTODIFF:    func.func @mlp_grad({{.*}}) -> (tensor<f32>, tensor<4x16xf32>, tensor<16x2xf32>) attributes {frame.grad_of = "mlp"}
// RUN: frame-opt %s -p 'frame-to-sgd{lr=0.25}' | filecheck %s --check-prefix=SGD
// SGD:         func.func @mlp_train_step(
// SGD-COUNT-2: frame.sgd_update {{.*}}lr = 2.500000e-01 : f32
// RUN: frame-opt %s -p frame-to-linalg | filecheck %s --check-prefix=LINALG
// LINALG:      linalg.generic
// LINALG-NOT:  = frame.
// RUN: frame-opt %s -p frame-to-bufferized | filecheck %s --check-prefix=BUF
// BUF:         func.func @mlp_train_step({{.*}}memref<8x4xf32>{{.*}}frame.arena
// RUN: frame-opt %s -p frame-to-loops | filecheck %s --check-prefix=LOOPS
// LOOPS:       func.func @mlp_train_loop(
// LOOPS:       scf.for

// sgd=false: what the Python API compiles, gradients as results, no train step.
// RUN: frame-opt %s -p 'frame-to-llvm{sgd=false}' | filecheck %s --check-prefix=NOSGD
// NOSGD:       llvm.func @mlp_grad(
// NOSGD-NOT:   @mlp_train_step

// A pipeline is the sum of its parts: two ranges compose to the whole, and frame-opt
// prints what frame-run prints at that stage (blank lines aside).
// RUN: frame-opt %s -p 'frame-to-sgd{lr=0.05},frame-pipeline{start-after=sgd lr=0.05}' | grep . > %t.parts
// RUN: frame-opt %s -p 'frame-to-llvm{lr=0.05}' | grep . > %t.whole
// RUN: diff %t.parts %t.whole
// RUN: frame-run %testdata/tiny_mlp.json --emit-stage=frame | frame-opt - -p 'frame-to-llvm{lr=0.05}' | grep . > %t.opt
// RUN: frame-run %testdata/tiny_mlp.json --emit-stage=llvm --threads 1 | grep . > %t.run
// RUN: diff %t.opt %t.run

// Pipelines mix with passes, and a failure inside one names the pass and the op.
// RUN: frame-opt %s -p 'frame-to-frame,frame-autodiff,cse' | filecheck %s --check-prefix=MIX
// MIX:         func.func @mlp_grad(
// RUN: echo 'func.func @f(%%x: tensor<4xf32>) -> tensor<4xf32> { %%0 = frame.relu %%x : (tensor<4xf32>) -> tensor<4xf32> func.return %%0 : tensor<4xf32> }' > %t.notloss.mlir
// RUN: frame-opt %t.notloss.mlir -p frame-to-sgd | filecheck %s --check-prefix=NOPARAM
// NOPARAM:     func.func @f(
// RUN: echo 'func.func @f(%%x: tensor<4xf32> {frame.param = "x"}) -> tensor<4xf32> { %%0 = frame.relu %%x : (tensor<4xf32>) -> tensor<4xf32> func.return %%0 : tensor<4xf32> }' > %t.vector.mlir
// RUN: not frame-opt %t.vector.mlir -p frame-to-llvm 2>&1 | filecheck %s --check-prefix=FAIL
// FAIL:        frame-opt: error: {{.*}}vector.mlir:1:{{[0-9]+}}: frame-autodiff at @f: func.return: expected the loss to be a scalar

// Bad options and ranges are clean errors.
// RUN: not frame-opt %s -p 'frame-pipeline{stop-after=nowhere}' 2>&1 | filecheck %s --check-prefix=STAGE
// STAGE:       frame-opt: error: unknown stage 'nowhere' (expected one of frame, autodiff, sgd, linalg, bufferized, loops, llvm)
// RUN: not frame-opt %s -p 'frame-pipeline{start-after=loops stop-after=linalg}' 2>&1 | filecheck %s --check-prefix=RANGE
// RANGE:       frame-opt: error: empty stage range: start after 'loops', stop after 'linalg'
// RUN: not frame-opt %s -p 'frame-to-llvm{lr=-1.0}' 2>&1 | filecheck %s --check-prefix=LR
// LR:          frame-opt: error: frame-sgd-fuse: learning rate expected > 0
// RUN: not frame-opt %s -p 'frame-to-loops{threads=0}' 2>&1 | filecheck %s --check-prefix=THREADS
// THREADS:     frame-opt: error: frame-to-loops: threads expected >= 1, found 0

func.func @mlp(%x: tensor<8x4xf32>, %w1: tensor<4x16xf32> {frame.param = "fc1.weight"},
               %w2: tensor<16x2xf32> {frame.param = "fc2.weight"},
               %t: tensor<8x2xf32>) -> tensor<f32> {
  %h = frame.matmul %x, %w1 : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<*xf32>
  %r = frame.relu %h : (tensor<*xf32>) -> tensor<*xf32>
  %y = frame.matmul %r, %w2 : (tensor<*xf32>, tensor<16x2xf32>) -> tensor<*xf32>
  %l = frame.mse_loss %y, %t : (tensor<*xf32>, tensor<8x2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
