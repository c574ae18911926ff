// frame-autodiff on the elementwise math family (frame_math.py): one case per VJP
// rule, each the gradient of sum(op(x)) (dy is the broadcast 1).
// RUN: frame-opt %s --split-input-file -p frame-autodiff | filecheck %s

// exp: dy * y, the forward result.
func.func @exp(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @exp_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.exp %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.mul %[[DY]], %[[Y]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// log: dy / x.
func.func @log(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.log %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @log_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.log %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.div %[[DY]], %[[X]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// sqrt: dy / (2 y), y the forward result (torch's sqrt_backward).
func.func @sqrt(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @sqrt_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.sqrt %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[Y2:.*]] = frame.scale %[[Y]] {frame.stage = "backward", factor = 2.000000e+00 : f32}
// CHECK-NEXT:    %[[DX:.*]] = frame.div %[[DY]], %[[Y2]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// tanh: dy * (1 - y * y).
func.func @tanh(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @tanh_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.tanh %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[ONE:.*]] = frame.constant 1.000000e+00 {frame.stage = "backward"} : tensor<4xf32>
// CHECK-NEXT:    %[[Y2:.*]] = frame.mul %[[Y]], %[[Y]]
// CHECK-NEXT:    %[[S:.*]] = frame.sub %[[ONE]], %[[Y2]]
// CHECK-NEXT:    %[[DX:.*]] = frame.mul %[[DY]], %[[S]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// abs: dy * sign(x) (frame.abs_grad).
func.func @abs(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.abs %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @abs_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.abs %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.abs_grad %[[X]], %[[DY]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// gelu: frame.gelu_grad of the same form.
func.func @gelu(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @gelu_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.gelu %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.gelu_grad %[[X]], %[[DY]] {frame.stage = "backward", approximate = "tanh"}
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// hardtanh: dy inside (min_val, max_val), same bounds.
func.func @hardtanh(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.hardtanh %x {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @hardtanh_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.hardtanh %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.hardtanh_grad %[[X]], %[[DY]] {frame.stage = "backward", min_val = 0.000000e+00 : f32, max_val = 6.000000e+00 : f32}
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// threshold: dy where x > threshold.
func.func @threshold(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.threshold %x {threshold = 0.5 : f32, value = 2.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @threshold_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.threshold %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DX:.*]] = frame.threshold_grad %[[X]], %[[DY]] {frame.stage = "backward", threshold = 5.000000e-01 : f32}
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// step: no gradient flows through it -- its adjoint is a zero of x's type, added to
// what reaches x through exp.
func.func @step(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %e = frame.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %y = frame.step %x {threshold = 0.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %m = frame.mul %e, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %m : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @step_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[E:.*]] = frame.exp %[[X]]
// CHECK:         %[[Y:.*]] = frame.step %[[X]]
// CHECK:         %[[DM:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DE:.*]] = frame.mul %[[DM]], %[[Y]]
// CHECK-NEXT:    frame.mul %[[DM]], %[[E]]
// CHECK-NEXT:    %[[Z:.*]] = frame.constant 0.000000e+00 {frame.stage = "backward"} : tensor<4xf32>
// CHECK-NEXT:    %[[DXE:.*]] = frame.mul %[[DE]], %[[E]]
// CHECK-NEXT:    %[[DX:.*]] = frame.add %[[Z]], %[[DXE]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]]

// -----

// shift: dy itself.
func.func @shift(%x: tensor<4xf32> {frame.param = "x"}) -> tensor<f32> {
  %y = frame.shift %x {offset = 3.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %y : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @shift_grad
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "x"})
// CHECK:         %[[Y:.*]] = frame.shift %[[X]]
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    func.return %{{.*}}, %[[DY]]

// -----

// div: dy / b for a, -(dy * a / (b * b)) for b.
func.func @div(%a: tensor<4xf32> {frame.param = "a"}, %b: tensor<4xf32> {frame.param = "b"}) -> tensor<f32> {
  %q = frame.div %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = frame.sum %q : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// CHECK-LABEL: func.func @div_grad
// CHECK-SAME:    (%[[A:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "a"}, %[[B:[a-z0-9_]+]]: tensor<4xf32> {frame.param = "b"})
// CHECK:         %[[DY:.*]] = frame.broadcast
// CHECK-NEXT:    %[[DA:.*]] = frame.div %[[DY]], %[[B]]
// CHECK-NEXT:    %[[N:.*]] = frame.mul %[[DY]], %[[A]]
// CHECK-NEXT:    %[[B2:.*]] = frame.mul %[[B]], %[[B]]
// CHECK-NEXT:    %[[Q:.*]] = frame.div %[[N]], %[[B2]]
// CHECK-NEXT:    %[[DB:.*]] = frame.neg %[[Q]]
// CHECK-NEXT:    func.return %{{.*}}, %[[DA]], %[[DB]]
