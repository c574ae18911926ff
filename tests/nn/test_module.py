"""nn Modules: parameter naming and order, the slicing invariant, pure IR building."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import builtin, func

from frame_mlir.dialects import frame
from frame_mlir.frontends.spec.lower import lower_spec
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.module import (
    Inline,
    Linear,
    Module,
    MseLoss,
    ParamSpec,
    Relu,
    Sequential,
    UniformSeeded,
    add_parameter_inputs,
)
from frame_mlir.runtime.executable import compile_module

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _mlp() -> Module:
    return Sequential("mlp", [Linear("fc1", 4, 3, 5, True), Relu("act"),
                              Linear("fc2", 4, 5, 2, False)])


def test_parameters_preorder_dotted_names() -> None:
    names = [p.name for p in _mlp().parameters()]
    assert names == ["mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight"]
    assert [p.shape for p in _mlp().parameters()] == [(3, 5), (4, 5), (5, 2)]


def test_parameters_are_deterministic() -> None:
    m = _mlp()
    assert m.parameters() == m.parameters() == _mlp().parameters()


def test_named_children_and_own_params_come_first() -> None:
    # A composite with its own parameter and two named children: [own, child0..., child1...].
    def build(g, inputs, ps):
        c0, c1 = root.child_param_slices(ps)
        (h,) = root.children[0].build(g, inputs, c0)
        (y,) = root.children[1].build(g, [h], c1)
        return [g.emit(frame.AddOp(y, ps[0]))]

    root = Module("net", (ParamSpec("offset", (2, 3), Inline((0.0,) * 6)),),
                  (Linear("a", 2, 3, 3, True), Linear("b", 2, 3, 3, False)), build)
    assert [p.name for p in root.parameters()] == ["net.offset", "net.a.weight", "net.a.bias",
                                                   "net.b.weight"]
    assert [p.name for p in root.parameters(prefix="")] == ["offset", "a.weight", "a.bias",
                                                            "b.weight"]
    g = Graph("f")
    x = g.add_input((2, 3), "x")
    ps = add_parameter_inputs(g, root.parameters())
    (y,) = root.build(g, [x], ps)
    fn = g.finish([g.emit(frame.SumOp(y))])
    fn.verify()
    # The slices went where they belong: offset feeds the final add.
    add = [o for o in fn.body.blocks[0].ops if isinstance(o, frame.AddOp)][-1]
    assert add.rhs is ps[0]


def test_build_rejects_wrong_param_count() -> None:
    g = Graph("f")
    x = g.add_input((4, 3), "x")
    with pytest.raises(ValueError, match="expected 3 parameter values, found 1"):
        _mlp().build(g, [x], [x])


def test_add_parameter_inputs_marks_params() -> None:
    g = Graph("f")
    g.add_input((4, 3), "x")
    ps = add_parameter_inputs(g, _mlp().parameters())
    fn = g.finish([ps[0]])
    attrs = [d.data.get("frame.param") for d in fn.arg_attrs.data]
    assert attrs[0] is None
    assert [a.data for a in attrs[1:]] == ["mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight"]


def test_building_only_creates_ir() -> None:
    # Build purity: a build returns SSA values of frame ops; no numbers are touched
    # (InitSpec stays a declaration) and the emitted function holds frame ops only.
    g = Graph("f")
    x = g.add_input((4, 3), "x")
    t = g.add_input((4, 2), "t")
    ps = add_parameter_inputs(g, _mlp().parameters())
    (y,) = _mlp().build(g, [x], ps)
    (loss,) = MseLoss("loss").build(g, [y, t], [])
    fn = g.finish([loss])
    ops = [o for o in fn.body.blocks[0].ops if not isinstance(o, func.ReturnOp)]
    assert all(isinstance(o, frame.FrameOp) for o in ops)
    assert [o.name for o in ops] == ["frame.matmul", "frame.add", "frame.relu",
                                     "frame.matmul", "frame.mse_loss"]
    assert isinstance(_mlp().parameters()[0].init, UniformSeeded)


def test_module_tree_trains_to_lower_loss() -> None:
    # nn build + autodiff + fused SGD, as the caller composes them (seed 001 section 8).
    model = _mlp()
    g = Graph("net")
    x = g.add_input((4, 3), "x")
    ps = add_parameter_inputs(g, model.parameters())
    t = g.add_input((4, 2), "t")
    (y,) = model.build(g, [x], ps)
    (loss,) = MseLoss("loss").build(g, [y, t], [])
    ex = compile_module(builtin.ModuleOp([g.finish([loss])]), lr=0.1)
    rng = np.random.default_rng(0)
    xs = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    ts = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    params = [rng.uniform(-0.5, 0.5, p.shape).astype(np.float32) for p in model.parameters()]
    first = None
    for _ in range(50):
        loss_v, *params = ex("net_train_step", xs, *params, ts)
        first = loss_v if first is None else first
    assert float(loss_v) < 0.5 * float(first)


def test_spec_lowering_goes_through_modules() -> None:
    lowered = lower_spec(load_spec(ROOT / "testdata" / "tiny_mlp.json"))
    assert lowered.param_names == ["fc1.weight", "fc1.bias", "fc2.weight"]
    fn = next(iter(lowered.module.ops))
    assert isinstance(fn, func.FuncOp)
    # Graph input order: [data inputs..., params..., target]; a single output, the loss.
    arg_names = [a.name_hint for a in fn.body.blocks[0].args]
    assert arg_names == ["x", "fc1_weight", "fc1_bias", "fc2_weight", "target"]
    assert [str(t) for t in fn.function_type.outputs.data] == ["tensor<f32>"]
