"""The static memory plan: liveness-based reuse in one arena; a step allocates nothing."""

from __future__ import annotations

from math import prod
from pathlib import Path

from frame_mlir.frontends.spec.lower import lower_spec
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec
from frame_mlir.passes.frame_bufferize import ALIGN, plan_intervals
from frame_mlir.passes.pipeline import run_pipeline

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"


def test_disjoint_lifetimes_share_bytes() -> None:
    # a: [0, 2], b: [1, 3] overlap; c: [3, 5] overlaps b only, so it can take a's bytes.
    plan = plan_intervals({0: (0, 2, 100), 1: (1, 3, 100), 2: (3, 5, 100)})
    assert plan.offsets[0] != plan.offsets[1]
    assert plan.offsets[2] == plan.offsets[0]
    assert plan.size == 2 * 128


def test_overlapping_buffers_never_overlap_in_memory() -> None:
    intervals = {i: (i % 5, i % 5 + 3, 40 + 13 * i) for i in range(12)}
    plan = plan_intervals(intervals)
    for a, (sa, ea, na) in intervals.items():
        for b, (sb, eb, nb) in intervals.items():
            if a < b and sa <= eb and sb <= ea:
                oa, ob = plan.offsets[a], plan.offsets[b]
                assert oa + na <= ob or ob + nb <= oa, (a, b)
    assert all(o % ALIGN == 0 for o in plan.offsets.values())


def test_mnist_step_reuses_the_arena() -> None:
    lowered = lower_spec(load_spec(TESTDATA / "mnist_mlp.json"))
    run_pipeline(lowered.module, 0.01, stop_after="bufferized")
    step = next(f for f in lowered.module.ops if f.sym_name.data == "mnist_mlp_train_step")
    arena = step.attributes["frame.arena_size"].value.data
    views = [o for o in step.walk() if o.name == "memref.view"]
    total = sum(4 * prod(v.result.type.get_shape()) for v in views)
    assert arena < total  # buffers with disjoint lifetimes share bytes
    # Only views of the arena: no allocation anywhere in the step.
    assert not [o for o in step.walk() if o.name in ("memref.alloc", "memref.alloca")]


def test_compiled_step_calls_no_allocator() -> None:
    compiled = CompiledSpec(load_spec(TESTDATA / "tiny_mlp.json"))
    ir = compiled.executable.jit.optimized_ir()
    for word in ("malloc", "calloc", "alloca", "@free"):
        assert word not in ir


def test_arith_expand_matches_python_division() -> None:
    """floordivsi / ceildivsi expanded by arith-expand, JIT-compiled, against Python."""
    import ctypes

    from xdsl.parser import Parser

    from frame_mlir.backend.llvm.jit import jit_compile
    from frame_mlir.backend.llvm.translate import to_llvm_text
    from frame_mlir.passes.arith_expand import ArithExpand
    from frame_mlir.passes.lower_to_llvm import LOOPS_TO_LLVM
    from frame_mlir.passes.pipeline import make_context, run_passes

    src = """func.func @div(%a: i64, %b: i64, %out: memref<2xi64>) {
      %f = arith.floordivsi %a, %b : i64
      %c = arith.ceildivsi %a, %b : i64
      %i0 = arith.constant 0 : index
      %i1 = arith.constant 1 : index
      memref.store %f, %out[%i0] : memref<2xi64>
      memref.store %c, %out[%i1] : memref<2xi64>
      func.return
    }"""
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, [ArithExpand(), *LOOPS_TO_LLVM])
    fn = jit_compile(to_llvm_text(module)).get_function(
        "div", [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p])
    out = (ctypes.c_int64 * 2)()
    for a in (-7, -6, -1, 0, 1, 5, 6, 7):
        for b in (-3, -1, 1, 2, 3):
            fn(a, b, ctypes.addressof(out))
            assert (out[0], out[1]) == (a // b, -((-a) // b)), (a, b)
