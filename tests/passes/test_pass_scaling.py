"""Every pass does work linear in the model's size (issue 27: passes that scale).

Timing a pass is noisy on a shared machine; counting the Python calls it makes is not.
Each pass of the pipeline runs on an MLP of 8 and of 32 Linear layers (width 64), under
cProfile; the calls of the larger run may be at most `MAX_GROWTH` times those of the
smaller (linear: about 4, since there are 4 times the layers; a pass that rewalks the
block per op it rewrites made about 10 to 16 times).

Plus the pieces that replaced quadratic loops, against the loops they replaced.
"""

from __future__ import annotations

import cProfile
import json
import pstats
import random

import pytest
from xdsl.dialects import arith, func, memref, test
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    f32,
    i8,
    i64,
)
from xdsl.ir import Block, Region

from frame_mlir.compile_options import CompileOptions
from frame_mlir.frontends.spec.lower import lower_spec
from frame_mlir.frontends.spec.spec_v0 import parse_spec
from frame_mlir.passes import frame_fuse_gemm_epilogue as epilogue
from frame_mlir.passes.frame_bufferize import ALIGN, MemoryPlan, plan_intervals
from frame_mlir.passes.llvm_common import _OpOrder, erase_dead_casts
from frame_mlir.passes.pipeline import make_context, stage_passes

MAX_GROWTH = 6.0


def mlp_spec(layers: int, width: int = 64, batch: int = 64) -> dict:
    """A v0 spec of `layers` Linear layers of `width`, relu between them."""
    dense, prev = [], "x"
    for i in range(layers):
        dense.append({"name": f"fc{i + 1}", "kind": "linear", "input": prev,
                      "weight_shape": [width, width], "bias_shape": [batch, width],
                      "activation": "none" if i == layers - 1 else "relu"})
        prev = f"fc{i + 1}"
    return {
        "schema_version": 0,
        "model": {"name": f"mlp{layers}", "dtype": "float32", "batch": batch},
        "inputs": [{"name": "x", "shape": [batch, width]}],
        "layers": dense,
        "loss": {"kind": "mse", "prediction": prev, "target_shape": [batch, width]},
        "optimizer": {"kind": "sgd", "learning_rate": 0.01},
        "training": {"steps": 1, "seed": 1, "log_every": 0},
        "data": {"x": {"kind": "uniform_seeded", "range": [0.0, 1.0]},
                 "target": {"kind": "uniform_seeded", "range": [0.0, 1.0]},
                 "params": {"kind": "uniform_seeded", "weight_range": [-0.05, 0.05],
                            "bias_range": [0.0, 0.1]}},
    }


def calls_per_pass(layers: int) -> list[tuple[str, int]]:
    """(pass name, Python calls its `apply` made) for each pass, in pipeline order."""
    module = lower_spec(parse_spec(json.dumps(mlp_spec(layers)))).module
    ctx = make_context()
    out = []
    for p in stage_passes(0.01, CompileOptions(threads=1)):
        profile = cProfile.Profile()
        profile.enable()
        p.apply(ctx, module)
        profile.disable()
        out.append((p.name, pstats.Stats(profile).total_calls))  # type: ignore[attr-defined]
    return out


def test_every_pass_does_linear_work() -> None:
    small, large = calls_per_pass(8), calls_per_pass(32)
    grew = {name: b / a for (name, a), (_, b) in zip(small, large, strict=True) if a}
    worst = max(grew, key=grew.__getitem__)
    assert grew[worst] <= MAX_GROWTH, (
        f"{worst} made {grew[worst]:.1f}x the calls for 4x the layers (linear: ~4x): "
        f"{', '.join(f'{n} {g:.1f}x' for n, g in sorted(grew.items(), key=lambda x: -x[1]))}")


# -- plan_intervals: only the live classes are compared -----------------------------------


def _plan_reference(intervals: dict[int, tuple[int, int, int]]) -> MemoryPlan:
    """The first-fit packing as first written: each class against every placed one."""
    plan = MemoryPlan()
    placed: list[tuple[int, int, int, int]] = []
    for cls, (start, end, nbytes) in sorted(intervals.items(), key=lambda kv: (kv[1][0], kv[0])):
        size = -(-nbytes // ALIGN) * ALIGN
        busy = sorted((o, o + n) for s, e, o, n in placed if s <= end and start <= e)
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, -(-hi // ALIGN) * ALIGN)
        placed.append((start, end, offset, size))
        plan.offsets[cls] = offset
        plan.size = max(plan.size, offset + size)
    return plan


@pytest.mark.parametrize("seed", range(20))
def test_plan_intervals_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    intervals = {}
    for cls in range(rng.randint(1, 60)):
        start = rng.randint(0, 40)
        intervals[cls] = (start, start + rng.randint(0, 12), rng.choice([4, 64, 100, 256, 4096]))
    assert plan_intervals(intervals) == _plan_reference(intervals)


# -- frame-fuse-gemm-epilogue: the index of calls by buffer ------------------------------


def test_buffer_index_matches_touches() -> None:
    """`_Buffers.first` finds the first call that `_touches` says overlaps, for views of
    one arena at assorted offsets and sizes, whole arguments, and views of unknown
    extent (dynamic offsets: they overlap everything)."""
    rng = random.Random(0)
    block = Block(arg_types=[MemRefType(i8, [4096]), MemRefType(f32, [16])])
    arena, other = block.args
    dynamic = test.TestOp(result_types=[IndexType()])
    block.add_op(dynamic)
    values = [arena, other]
    for _ in range(40):
        shift = arith.ConstantOp(IntegerAttr(rng.randrange(0, 4096, 16), IndexType()))
        view = memref.ViewOp(arena, shift.result, [], MemRefType(f32, [rng.choice([1, 4, 32])]))
        block.add_ops([shift, view])
        values.append(view.result)
    odd = memref.ViewOp(arena, dynamic.results[0], [], MemRefType(f32, [4]))
    block.add_op(odd)
    values.append(odd.result)
    calls = [[rng.choice(values) for _ in range(rng.randint(1, 3))] for _ in range(200)]
    if not any(odd.result in c for c in calls):
        calls[57].append(odd.result)
    index = epilogue._Buffers()
    for position, args in enumerate(calls):
        index.add(position, args)
    for _ in range(300):
        query = [rng.choice(values) for _ in range(rng.randint(1, 3))]
        lo = rng.randrange(-1, 200)
        hi = rng.randrange(lo + 1, 201)
        skip = set(rng.sample(range(200), 20))
        expected = next((p for p in range(lo + 1, hi) if p not in skip
                         and epilogue._touches(calls[p], query)), None)
        assert index.first(query, lo, hi, skip) == expected


# -- convert-*-to-llvm: op order and dead casts ------------------------------------------


def test_op_order_matches_is_before_in_block() -> None:
    block = Block([test.TestOp() for _ in range(30)])
    order = _OpOrder()
    ops = list(block.ops)
    for a in ops[::3]:
        for b in ops[::2]:
            assert order.is_before(a, b, block) == a.is_before_in_block(b)
    # ops inserted after the numbering: numbered again when asked about
    new = test.TestOp()
    block.insert_op_before(new, ops[10])
    for b in ops:
        assert order.is_before(new, b, block) == new.is_before_in_block(b)
        assert order.is_before(b, new, block) == b.is_before_in_block(new)


def test_erase_dead_casts_erases_chains() -> None:
    """A chain of casts only the next one uses goes away whole; a used one stays."""
    value = test.TestOp(result_types=[i64])
    a = UnrealizedConversionCastOp.get([value.results[0]], [IndexType()])
    b = UnrealizedConversionCastOp.get([a.results[0]], [i64])
    c = UnrealizedConversionCastOp.get([b.results[0]], [IndexType()])
    kept = UnrealizedConversionCastOp.get([value.results[0]], [IndexType()])
    user = test.TestOp([kept.results[0]])
    fn = func.FuncOp("f", ((), ()), Region(Block([value, a, b, c, kept, user,
                                                   func.ReturnOp()])))
    module = ModuleOp([fn])
    erase_dead_casts(module)
    casts = [o for o in module.walk() if isinstance(o, UnrealizedConversionCastOp)]
    assert casts == [kept]


# -- frame-outline-kernels: kernel text printed once per structural key -------------------


def _bufferized_modules() -> list[ModuleOp]:
    from pathlib import Path

    from xdsl.dialects import builtin

    from frame_mlir import network

    root = Path(__file__).resolve().parents[2]
    spec = lower_spec(parse_spec((root / "testdata" / "mnist_mlp.json").read_text())).module
    net = network.load(root / "testdata" / "networks" / "lenet_digits.json", seed=0)
    conv = builtin.ModuleOp([net._train_fn.fn.clone()])
    ctx = make_context()
    for module, lr in ((spec, 0.01), (conv, None)):
        for p in stage_passes(lr, CompileOptions(threads=2), stop_after="bufferized"):
            p.apply(ctx, module)
    return [spec, conv]


def test_outline_structural_key_shares_as_text_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass makes the same module whether kernels are shared through the op's key
    and kernel texts through the structural key, or every op's kernel is built and
    printed; within a key, texts are equal."""
    from frame_mlir.passes import frame_outline_kernels as outline

    for module in _bufferized_modules():
        cached, printed = module.clone(), module.clone()
        outline.FrameOutlineKernels().apply(make_context(), cached)
        with monkeypatch.context() as m:
            m.setattr(outline._Structures, "text", lambda self, k: outline._structure(k))
            m.setattr(outline, "_op_key", lambda op, args, constants: (object(),))
            outline.FrameOutlineKernels().apply(make_context(), printed)
        assert str(cached) == str(printed)
        texts: dict[tuple[object, ...], str] = {}
        kernels = [f for f in cached.ops if isinstance(f, func.FuncOp)
                   and f.sym_name.data.count("__k")]
        assert kernels
        for k in kernels:
            assert texts.setdefault(outline._structural_key(k),
                                    outline._structure(k)) == outline._structure(k)
