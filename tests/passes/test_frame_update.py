"""frame.update (`frame_mlir/dialects/frame.py`): an optimizer's new value of a parameter,
computed in the parameter's own buffer.

Its result is its value (value semantics; the oracle cases in
tests/oracle/test_ops_vs_torch.py check that and its VJP against torch's copy_); here:
an elementwise chain feeding it becomes ONE generic writing into the destination
(convert-frame-to-linalg + frame-fuse-elementwise), a compiled function that donates
the destination (`frame.aliasing_output`) updates the caller's buffer in place, and a
chain reading the destination at another element than the one written (a transpose) is
not merged into the in-place write (it would read overwritten elements).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from xdsl.dialects import builtin, func, tensor
from xdsl.dialects.linalg import ops as linalg

from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.common import set_arg_attr
from frame_mlir.passes.convert_frame_to_linalg import ConvertFrameToLinalg
from frame_mlir.passes.frame_fuse_elementwise import FrameFuseElementwise
from frame_mlir.passes.pipeline import make_context, run_passes
from frame_mlir.runtime.executable import Executable, aligned_empty, compile_module

SHAPE = (4, 6)
LR = 0.125


def _optimizer(name: str = "opt") -> func.FuncOp:
    """`@opt(p, g) = update(p, sqrt(|s|) * s + step(p))`, s = p - lr * g, p donated
    to result 0."""
    g = Graph(name)
    p, grad = g.add_input(SHAPE, "p"), g.add_input(SHAPE, "g")
    s = g.emit(frame.SubOp(p, g.emit(frame.ScaleOp(grad, LR))))
    root = g.emit(frame.SqrtOp(g.emit(frame.AbsOp(s))))
    new = g.emit(frame.AddOp(g.emit(frame.MulOp(root, s)), g.emit(frame.StepOp(p))))
    fn = g.finish([g.emit(frame.UpdateOp(p, new))])
    set_arg_attr(fn, 0, "frame.aliasing_output", builtin.IntegerAttr(0, 64))
    return fn


def _reference(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The same f32 operations (each correctly rounded) in the same order."""
    s = p - g * np.float32(LR)
    return np.sqrt(np.abs(s)) * s + (p > 0).astype(np.float32)


def test_convert_and_fuse_make_one_generic_writing_into_the_destination() -> None:
    """After convert-frame-to-linalg + frame-fuse-elementwise the chain (scale, sub,
    abs, sqrt, mul, step, add) feeding the update is one all-parallel generic whose
    `outs` is the parameter itself (no tensor.empty left), reading p and g, and its
    result is returned."""
    fn = _optimizer()
    module = builtin.ModuleOp([fn])
    run_passes(make_context(), module, [ConvertFrameToLinalg(), FrameFuseElementwise()])
    body = list(fn.body.block.ops)
    generics = [o for o in body if isinstance(o, linalg.GenericOp)]
    assert len(generics) == 1, module
    (gen,) = generics
    p, g = fn.body.block.args
    assert gen.outputs[0] is p  # written into the parameter's buffer
    assert list(gen.inputs) == [p, g]
    assert gen.doc is not None
    assert gen.doc.data.endswith("+frame.update")
    assert sorted(gen.doc.data.split("+")) == sorted(
        ["frame.scale", "frame.sub", "frame.abs", "frame.sqrt", "frame.mul", "frame.step",
         "frame.add", "frame.update"])
    assert not any(isinstance(o, tensor.EmptyOp) for o in body)
    ret = body[-1]
    assert isinstance(ret, func.ReturnOp) and ret.operands[0] is gen.results[0]


def _call_in_place(ex: Executable, name: str, *bufs: np.ndarray) -> None:
    """Call `@name` natively on the caller's own buffers (and a fresh arena)."""
    sig = ex.signatures[name]
    arena = aligned_empty(max(sig.arena_size, 64))
    ex.function(name)(*[ctypes.c_void_p(b.ctypes.data) for b in (*bufs, arena)])


def test_donated_destination_is_updated_in_place() -> None:
    """With p donated to the update (`frame.aliasing_output = 0`) the compiled function
    has no output argument: one native call leaves the new value in p's own buffer (the
    same bits as the f32 reference), g untouched. Executable.__call__ (which works on
    copies) returns the same value at the result index."""
    ex = compile_module(builtin.ModuleOp([_optimizer()]),
                        options=CompileOptions(threads=1), cache=None)
    sig = ex.signatures["opt"]
    assert [a.kind for a in sig.args] == ["input", "input", "arena"]
    rng = np.random.default_rng(3)
    p = rng.standard_normal(SHAPE).astype(np.float32)
    g = rng.standard_normal(SHAPE).astype(np.float32)
    p0, g0 = p.copy(), g.copy()
    (copied,) = ex("opt", p, g)  # on copies: p is not changed
    np.testing.assert_array_equal(p, p0)
    expected = _reference(p0, g0)
    np.testing.assert_array_equal(copied, expected)
    _call_in_place(ex, "opt", p, g)
    np.testing.assert_array_equal(p, expected)
    np.testing.assert_array_equal(g, g0)
    _call_in_place(ex, "opt", p, g)  # a second step starts from the updated p
    np.testing.assert_array_equal(p, _reference(expected, g0))


def test_destination_read_transposed_is_not_overwritten_before_it_is_read() -> None:
    """`update(p, transpose(p) + p)` in place: merging the transpose into the in-place
    write would read p[j, i] after iteration (j, i) overwrote it, so
    frame-fuse-elementwise keeps it apart and the result is p + p^T exactly."""
    g = Graph("sym")
    p = g.add_input((5, 5), "p")
    new = g.emit(frame.AddOp(g.emit(frame.TransposeOp(p)), p))
    fn = g.finish([g.emit(frame.UpdateOp(p, new))])
    set_arg_attr(fn, 0, "frame.aliasing_output", builtin.IntegerAttr(0, 64))
    ex = compile_module(builtin.ModuleOp([fn]), options=CompileOptions(threads=1), cache=None)
    assert [a.kind for a in ex.signatures["sym"].args] == ["input", "arena"]
    ps = np.arange(25, dtype=np.float32).reshape(5, 5) * np.float32(0.5)
    expected = ps + ps.T
    _call_in_place(ex, "sym", ps)
    np.testing.assert_array_equal(ps, expected)


def test_shapes_must_match() -> None:
    g = Graph("bad")
    p, v = g.add_input((4, 8), "p"), g.add_input((8, 4), "v")
    with pytest.raises(frame.ShapeError,
                       match=r"frame.update: value shape expected \[4, 8\] \(the "
                             r"destination's\), found \[8, 4\]"):
        frame.UpdateOp(p, v)
