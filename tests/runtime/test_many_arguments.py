"""Calls of any arity (issue 30 item 1): ctypes calls at most 1024 parameters, and a
compiled function takes one pointer per buffer -- a 300-layer network's solver 1,800 of
them. Every public function gets a packed entry taking one pointer to its arguments'
addresses (`frame_mlir/backend/llvm/packed.py`), which `JitModule.get_function` calls
through, from a fresh compile and from the compile cache alike.

The models here are as small as their argument counts allow (1-2 element tensors): what
they cost is the compile of a function of thousands of parameters."""

from __future__ import annotations

import ctypes
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import frame
from frame_mlir.backend.llvm.cache import CompileCache
from frame_mlir.backend.llvm.jit import compile_ir, compile_whole, jit_compile, load_object
from frame_mlir.backend.llvm.packed import (
    CTYPES_MAX_ARGS,
    PackedFunction,
    add_entries,
    bound_call,
    entry_name,
    pointer_functions,
)

ROOT = Path(__file__).resolve().parents[2]
F32 = frame.DType.float32


def _doubling_ir(n: int) -> str:
    """`@twice(in_0 .. in_{n-1}, out_0 .. out_{n-1})`: out_i[0] = 2 * in_i[0], and a
    small `@one(ptr)` beside it."""
    params = ", ".join([f"ptr noalias %in{i}" for i in range(n)]
                       + [f"ptr noalias %out{i}" for i in range(n)])
    body = []
    for i in range(n):
        body += [f"  %v{i} = load float, ptr %in{i}, align 4",
                 f"  %w{i} = fmul float %v{i}, 2.0",
                 f"  store float %w{i}, ptr %out{i}, align 4"]
    return (f'define void @"twice"({params}) {{\n' + "\n".join(body) + "\n  ret void\n}\n"
            'define void @"one"(ptr %x) {\n  store float 1.0, ptr %x, align 4\n'
            "  ret void\n}\n")


def _check_twice(fn: object, n: int) -> None:
    ins = np.arange(n, dtype=np.float32)
    outs = np.zeros(n, np.float32)
    addresses = [ins.ctypes.data + 4 * i for i in range(n)] + [
        outs.ctypes.data + 4 * i for i in range(n)]
    fn(*addresses)  # type: ignore[operator]
    np.testing.assert_array_equal(outs, 2 * ins)
    outs[:] = 0
    bound_call(fn, addresses)()  # type: ignore[arg-type]
    np.testing.assert_array_equal(outs, 2 * ins)


def test_entries_go_to_public_pointer_functions_and_to_every_huge_one() -> None:
    text = ('define void @"f"(ptr noalias dereferenceable(8) %".1", ptr %".2") #0\n{\n'
            "  ret void\n}\n"
            'define void @"g"(ptr %".1", i64 %".2") {\n  ret void\n}\n'
            'define float @"h"(ptr %".1") {\n  ret float 0.0\n}\n'
            'define internal void @"k"(ptr %".1") {\n  ret void\n}\n'
            'define void @"none"() {\n  ret void\n}\n'
            'define void @"big"(' + ", ".join(["ptr %a"] * (CTYPES_MAX_ARGS + 1)) + ") {\n"
            "  ret void\n}\n")
    # i64 parameters, a result, internal linkage: no entry
    assert pointer_functions(text) == {"f": 2, "none": 0, "big": CTYPES_MAX_ARGS + 1}
    _, entries = add_entries(text, {"f", "g", "h", "k", "none"})
    assert entries == [entry_name("f"), entry_name("none"), entry_name("big")]
    assert add_entries(text, None)[1] == [entry_name("big")]  # ctypes cannot call it
    again, _ = add_entries(text, {"f"})
    assert add_entries(again, {"f"})[1] == []  # defined already: not twice


def test_a_function_of_more_parameters_than_ctypes_calls(tmp_path: Path) -> None:
    """1,100 pointers: through the packed entry after a split compile, a whole-module
    compile and a load from the compile cache; a small function without an entry is
    still a plain ctypes function."""
    n = 550
    text = _doubling_ir(n)
    jit = compile_ir(text, public={"twice"})
    fn = jit.get_function("twice")
    assert isinstance(fn, PackedFunction) and fn.arity == 2 * n > CTYPES_MAX_ARGS
    _check_twice(fn, n)
    with pytest.raises(TypeError, match="takes 1100 arguments"):
        fn(0)
    assert isinstance(jit.get_function("one"), ctypes._CFuncPtr)  # not public: no entry

    x = np.zeros(1, np.float32)
    compile_ir(text, public={"one"}).get_function("one")(ctypes.c_void_p(x.ctypes.data))
    assert x[0] == 1.0  # a c_void_p still passes

    _check_twice(compile_whole(text).get_function("twice"), n)  # huge: an entry anyway

    cache = CompileCache(tmp_path)
    jit_compile(text, cache=cache, public={"twice"})
    loaded = jit_compile(text, cache=cache, public={"twice"})
    assert loaded.optimized_ir() and isinstance(loaded.get_function("twice"), PackedFunction)
    _check_twice(loaded.get_function("twice"), n)

    assert jit.object_code is not None
    arity = {k: v for k, v in jit.function_arity().items() if k != entry_name("twice")}
    without = load_object(jit.object_code, arity, externals=jit.externals)
    with pytest.raises(ValueError, match="no packed entry"):
        without.get_function("twice")


def test_an_api_graph_of_2000_inputs_and_2000_outputs() -> None:
    n = 2000
    g = frame.Graph("wide")
    xs = [g.add_graph_input([2], F32) for _ in range(n)]
    for x in xs:
        g.mark_output(frame.square(g, x))
    ex = frame.compile(g, "cpu")
    values = [np.array([i, -0.5 * i], np.float32) for i in range(n)]
    for _ in range(2):  # the second call reuses the first's output buffers
        out = ex.run([frame.from_numpy(v) for v in values])
        assert len(out) == n
        np.testing.assert_array_equal(np.stack([o.numpy() for o in out]),
                                      np.stack(values) ** 2)


def test_sgd_update_graph_over_600_parameters() -> None:
    n, lr = 600, 0.5
    sgd = frame.compile(frame.build_sgd_update_graph([([2], F32)] * n, lr), "cpu")
    ps = [np.array([i, 1.5], np.float32) for i in range(n)]
    gs = [np.array([2, -i], np.float32) for i in range(n)]
    out = sgd.run([frame.from_numpy(a) for a in ps + gs])
    assert len(out) == n
    for o, p, g in zip(out, ps, gs, strict=True):
        np.testing.assert_array_equal(o.numpy(), p + np.float32(-lr) * g)


def test_frame_run_trains_300_chained_inner_products(tmp_path: Path) -> None:
    """A JSON network of 300 InnerProduct layers of width 2: its update function takes
    1,805 pointers (weights, biases, their gradients, the updated values)."""
    ops = [{"name": f"fc{i}", "type": "InnerProduct", "inputs": [f"fc{i - 1}" if i else "data"],
            "outputs": [f"fc{i}"], "options": {"outputs": 2}} for i in range(300)]
    ops.append({"name": "loss", "type": "SoftmaxWithLoss", "inputs": ["fc299", "label"],
                "outputs": ["loss"]})
    net = {"inputs": [{"name": "data", "shape": [2, 2]},
                      {"name": "label", "shape": [2], "dtype": "int"}],
           "outputs": ["loss"], "operators": ops}
    (tmp_path / "deep.json").write_text(json.dumps(net))
    np.savez(tmp_path / "data.npz", data=np.array([[1, 0], [0, 1], [1, 1], [0, 0]],
                                                  np.float32),
             label=np.array([0, 1, 1, 0], np.int32))
    r = subprocess.run([sys.executable, "-m", "frame_mlir.tools.frame_run",
                        str(tmp_path / "deep.json"), "--data", str(tmp_path / "data.npz"),
                        "--epochs", "1", "--no-cache"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("epoch 1 loss ")]
    assert math.isfinite(float(line.split()[3]))
