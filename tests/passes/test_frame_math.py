"""The elementwise math family (`frame_mlir/dialects/frame_math.py`) beyond the torch
oracle cases of tests/oracle/test_ops_vs_torch.py: edge values against torch bit for
bit where torch's result is a selection (clamps, thresholds, step, abs) or correctly
rounded (sqrt, and its gradient), and the emitted C++
against the JIT, bit for bit, on every op of the family and its gradient (and of the
softmax and normalization families)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cpp_vs_jit import CXX, assert_cpp_matches_jit, same_bits
from xdsl.dialects import builtin

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")

SHAPE = (4, 6)
#: NaN, both infinities, both zeros, a denormal, values at and around the op's kinks.
EDGE = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 0.1, -0.5, 0.25, 6.0,
                 -1.0, 1.0, 3.0, -3.0, 0.5, 7.5, -7.5, 20.0, -20.0, 1e-3, -1e-3, 2.0, -2.0],
                np.float32).reshape(SHAPE)
DY = np.linspace(-1.5, 1.5, EDGE.size, dtype=np.float32).reshape(SHAPE)


def _ops(g: Graph, x: Any, dy: Any) -> list[Any]:
    """Every op of the family on (x, dy), in a fixed order."""
    gamma = g.emit(frame.SumOp(dy, [0]))  # a [6] operand for layer_norm
    return [g.emit(op) for op in (
        frame.ExpOp(x), frame.LogOp(x), frame.TanhOp(x), frame.AbsOp(x),
        frame.AbsGradOp(x, dy), frame.GeluOp(x), frame.GeluOp(x, "tanh"),
        frame.GeluGradOp(x, dy), frame.GeluGradOp(x, dy, "tanh"),
        frame.HardtanhOp(x, -0.5, 0.25), frame.HardtanhGradOp(x, dy, 0.0, 6.0),
        frame.ThresholdOp(x, 0.1, -2.0), frame.ThresholdGradOp(x, dy, 0.1),
        frame.ShiftOp(x, -0.75), frame.DivOp(dy, x),
        frame.SqrtOp(x), frame.StepOp(x, 0.1), frame.StepOp(x),
        # and the softmax family (frame_softmax.py), whose kernels reduce along an axis
        frame.SoftmaxOp(x, 1), frame.LogSoftmaxOp(x, 0), frame.SoftmaxGradOp(dy, x, 0),
        frame.LogSoftmaxGradOp(dy, x, 1),
        # and the normalization family (frame_norm.py)
        frame.LayerNormOp(x, gamma, gamma), frame.LayerNormOp(dy, gamma, gamma, 0.5),
        frame.LayerNormGradOp(dy, gamma, x, 1e-5, 0),
        frame.LayerNormGradOp(dy, gamma, x, 1e-5, 1),
        # and the data-movement family (frame_movement.py)
        frame.TransposeOp(x), frame.SliceOp(x, 1, 1, 4), frame.SliceOp(dy, 0, 0, 1),
        frame.ConcatOp([x, dy], 0), frame.PadOp(x, [1, 0], [0, 2], -1.0))]


def _module() -> builtin.ModuleOp:
    g = Graph("fam")
    x, dy = g.add_input(SHAPE, "x"), g.add_input(SHAPE, "dy")
    return builtin.ModuleOp([g.finish(_ops(g, x, dy))])


def test_selections_match_torch_bitwise_on_edge_values() -> None:
    """hardtanh / relu6, threshold, step and abs select or negate values, and sqrt is
    correctly rounded: torch's float32 results are exact, so ours must be the same bits
    on NaN, +-inf, +-0, denormals and the kinks themselves (torch's gradients pass dy
    strictly inside the clamp; sqrt(-0) = -0, sqrt(x < 0) = NaN; step(NaN) = 0 and
    step(t) = 0 at its threshold t)."""
    outs = compile_module(_module(), options=CompileOptions(threads=1), cache=None)(
        "fam", EDGE, DY)
    tx = torch.from_numpy(EDGE.copy()).requires_grad_()
    tdy = torch.from_numpy(DY)
    f = torch.nn.functional
    checks = {3: torch.abs(tx), 9: f.hardtanh(tx, -0.5, 0.25), 11: f.threshold(tx, 0.1, -2.0),
              13: tx - 0.75, 15: torch.sqrt(tx), 16: (tx > 0.1).float(), 17: (tx > 0).float()}
    for i, ref in checks.items():
        same_bits(outs[i], ref.detach().numpy(), f"output {i}")
    # Gradients at a NaN input are left out: torch's own differ between its vector
    # and scalar paths there (relu6'(NaN) * dy is 0 in a 16-lane block, dy in the tail).
    finite = ~np.isnan(EDGE)
    for i, ref in ((4, torch.abs(tx)), (10, f.relu6(tx)), (12, f.threshold(tx, 0.1, -2.0))):
        (grad,) = torch.autograd.grad(ref, tx, tdy)
        same_bits(outs[i][finite], grad.numpy()[finite], f"gradient output {i}")


def test_sqrt_and_step_gradients_match_torch_bitwise_on_edge_values() -> None:
    """The VJPs of sqrt (dy / (2 y), torch's sqrt_backward: +-inf at +-0, NaN below 0,
    +-0 at inf) and of step (0 everywhere: no gradient flows through it) through
    frame-autodiff, on the edge values, against torch's autograd bit for bit."""
    from frame_mlir.nn.module import ParamSpec, UniformSeeded, add_parameter_inputs

    g = Graph("edge")
    xs, xt = add_parameter_inputs(g, [ParamSpec(n, SHAPE, UniformSeeded(-1.0, 1.0))
                                      for n in ("xs", "xt")])
    dy = g.add_input(SHAPE, "dy")
    y = g.emit(frame.AddOp(g.emit(frame.MulOp(g.emit(frame.SqrtOp(xs)), dy)),
                           g.emit(frame.MulOp(g.emit(frame.StepOp(xt, 0.1)), dy))))
    fn = g.finish([g.emit(frame.SumOp(y))])
    ex = compile_module(builtin.ModuleOp([fn]), options=CompileOptions(threads=1), cache=None)
    _, grad_sqrt, grad_step = ex("edge_grad", EDGE, EDGE, DY)
    tx = torch.from_numpy(EDGE.copy()).requires_grad_()
    (torch.sqrt(tx) * torch.from_numpy(DY)).sum().backward()
    same_bits(grad_sqrt, tx.grad.numpy(), "gradient of sqrt")
    # torch's (x > t).float() has no gradient at all; ours is an explicit +0.
    same_bits(grad_step, np.zeros(SHAPE, np.float32), "gradient of step")


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit(tmp_path: Path) -> None:
    """The loops stage of every op (forward and gradient) emitted as C++, compiled with
    g++ (-O2, no FP contraction, as the emitted programs are) and run on the edge
    values: the same bits as the JIT's (both call the same libm for exp, log, tanh)."""
    assert_cpp_matches_jit(_module, "fam", [EDGE, DY], tmp_path)
