"""Loop-level IR -> llvm dialect -> LLVM IR -> MCJIT, checked against numpy."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.transforms.convert_linalg_to_loops import ConvertLinalgToLoopsPass

from frame_mlir.backend.llvm.jit import JitModule, jit_compile
from frame_mlir.backend.llvm.translate import to_llvm_ir, to_llvm_text
from frame_mlir.passes.lower_to_llvm import LoweringError, lower_loops_to_llvm


def _context() -> Context:
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def _lower(src: str, *, from_linalg: bool = True) -> ModuleOp:
    ctx = _context()
    module = Parser(ctx, src).parse_module()
    if from_linalg:
        ConvertLinalgToLoopsPass().apply(ctx, module)
    lower_loops_to_llvm(ctx, module)
    return module


def _compile(src: str, *, from_linalg: bool = True, opt_level: int = 3) -> JitModule:
    return jit_compile(to_llvm_text(_lower(src, from_linalg=from_linalg)), opt_level=opt_level)


def _ptr(arr: np.ndarray) -> int:
    assert arr.flags.c_contiguous
    return arr.ctypes.data


# --------------------------------------------------------------------------------------
# matmul (i,k,j) on a view into the arena, exp/tanh epilogue, 0-d loss

_MAPS = """
#mk = affine_map<(i, k, j) -> (i, k)>
#kn = affine_map<(i, k, j) -> (k, j)>
#mn = affine_map<(i, k, j) -> (i, j)>
#id2 = affine_map<(i, j) -> (i, j)>
#scalar2 = affine_map<(i, j) -> ()>
"""


def _step_kernel(m: int, k: int, n: int, view_offset: int) -> str:
    arena = view_offset + 4 * m * n
    return (
        _MAPS
        + f"""
func.func @step(%a: memref<{m}x{k}xf32>, %b: memref<{k}x{n}xf32>, %out: memref<{m}x{n}xf32>,
                %loss: memref<f32>, %arena: memref<{arena}xi8>) {{
  %off = arith.constant {view_offset} : index
  %c = memref.view %arena[%off][] : memref<{arena}xi8> to memref<{m}x{n}xf32>
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.1 : f32
  linalg.generic {{indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}}
      outs(%c : memref<{m}x{n}xf32>) {{
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  }}
  linalg.generic {{indexing_maps = [#mk, #kn, #mn],
                  iterator_types = ["parallel", "reduction", "parallel"]}}
      ins(%a, %b : memref<{m}x{k}xf32>, memref<{k}x{n}xf32>) outs(%c : memref<{m}x{n}xf32>) {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }}
  linalg.generic {{indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}}
      ins(%c : memref<{m}x{n}xf32>) outs(%out : memref<{m}x{n}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    %xs = arith.mulf %x, %scale : f32
    %e = math.exp %xs : f32
    %r = arith.addf %t, %e : f32
    linalg.yield %r : f32
  }}
  memref.store %zero, %loss[] : memref<f32>
  linalg.generic {{indexing_maps = [#id2, #scalar2], iterator_types = ["reduction", "reduction"]}}
      ins(%out : memref<{m}x{n}xf32>) outs(%loss : memref<f32>) {{
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }}
  func.return
}}
"""
    )


def _step_reference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    c = a.astype(np.float64) @ b.astype(np.float64)
    out = np.tanh(c) + np.exp(0.1 * c)
    return out, float(out.sum())


def test_matmul_view_tanh_exp_loss_matches_numpy() -> None:
    m, k, n, view_offset = 8, 16, 32, 64
    jit = _compile(_step_kernel(m, k, n, view_offset))
    step = jit.get_function("step")
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    out = np.zeros((m, n), np.float32)
    loss = np.full((), np.nan, np.float32)
    # Garbage in the arena: the kernel must initialize its view itself.
    arena = np.full(view_offset + 4 * m * n, 0xFF, np.uint8)
    step(_ptr(a), _ptr(b), _ptr(out), _ptr(loss), _ptr(arena))
    ref_out, ref_loss = _step_reference(a, b)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(loss), ref_loss, rtol=1e-4)
    # The view starts `view_offset` bytes into the arena and holds a @ b.
    c = arena[view_offset:].view(np.float32).reshape(m, n)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_buffers_offset_by_four_bytes() -> None:
    """Vectorized code must not assume more than 4-byte alignment of any buffer."""
    m, k, n, view_offset = 8, 16, 32, 4
    jit = _compile(_step_kernel(m, k, n, view_offset))
    step = jit.get_function("step")
    rng = np.random.default_rng(1)

    def misaligned(shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
        size = int(np.prod(shape))
        base = np.zeros(size + 16, dtype)
        start = next(i for i in range(1, 16) if (base[i:].ctypes.data % 64) != 0)
        return base[start : start + size].reshape(shape)

    a, b, out = misaligned((m, k)), misaligned((k, n)), misaligned((m, n))
    a[...] = rng.uniform(-1, 1, (m, k))
    b[...] = rng.uniform(-1, 1, (k, n))
    loss = misaligned(())
    arena = misaligned((view_offset + 4 * m * n,), np.uint8)
    assert any(x.ctypes.data % 16 for x in (a, b, out, arena))
    step(_ptr(a), _ptr(b), _ptr(out), _ptr(loss), _ptr(arena))
    ref_out, ref_loss = _step_reference(a, b)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(loss), ref_loss, rtol=1e-4)


# --------------------------------------------------------------------------------------
# scalar op coverage, written directly as loop-level IR with a func.call

_OPS_KERNEL = """
func.func @double_in_place(%v: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %v[%i] : memref<16xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %v[%i] : memref<16xf32>
  }
  func.return
}

func.func @ops(%x: memref<16xf32>, %y: memref<16xf32>, %out: memref<10x16xf32>,
               %tmp: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %i3 = arith.constant 3 : i64
  scf.for %i = %c0 to %c16 step %c1 {
    %a = memref.load %x[%i] : memref<16xf32>
    %b = memref.load %y[%i] : memref<16xf32>
    %relu = arith.maximumf %a, %zero : f32
    memref.store %relu, %out[%c0, %i] : memref<10x16xf32>
    %mn = arith.minimumf %a, %b : f32
    memref.store %mn, %out[%c1, %i] : memref<10x16xf32>
    %gt = arith.cmpf ogt, %a, %b : f32
    %mx = arith.select %gt, %a, %b : f32
    memref.store %mx, %out[%c2, %i] : memref<10x16xf32>
    %neg = arith.cmpf olt, %a, %zero : f32
    %mask = arith.uitofp %neg : i1 to f32
    memref.store %mask, %out[%c3, %i] : memref<10x16xf32>
    %ii = arith.index_cast %i : index to i64
    %rem = arith.remsi %ii, %i3 : i64
    %q = arith.divsi %ii, %i3 : i64
    %rq = arith.muli %rem, %q : i64
    %rqf = arith.sitofp %rq : i64 to f32
    memref.store %rqf, %out[%c4, %i] : memref<10x16xf32>
    %abs = math.absf %a : f32
    %sq = math.sqrt %abs : f32
    %ap1 = arith.addf %abs, %one : f32
    %lg = math.log %ap1 : f32
    %sl = arith.subf %sq, %lg : f32
    memref.store %sl, %out[%c5, %i] : memref<10x16xf32>
    %na = arith.negf %a : f32
    %bp = arith.addf %abs, %one : f32
    %dv = arith.divf %na, %bp : f32
    memref.store %dv, %out[%c6, %i] : memref<10x16xf32>
    %fm = arith.addf %a, %b fastmath<fast> : f32
    memref.store %fm, %out[%c7, %i] : memref<10x16xf32>
    %ib = arith.cmpi slt, %i, %c8 : index
    %sel = arith.select %ib, %i, %c9 : index
    %self = arith.index_cast %sel : index to i32
    %selff = arith.sitofp %self : i32 to f32
    memref.store %selff, %out[%c8, %i] : memref<10x16xf32>
    memref.store %b, %tmp[%i] : memref<16xf32>
  }
  func.call @double_in_place(%tmp) : (memref<16xf32>) -> ()
  scf.for %i = %c0 to %c16 step %c1 {
    %t = memref.load %tmp[%i] : memref<16xf32>
    memref.store %t, %out[%c9, %i] : memref<10x16xf32>
  }
  func.return
}
"""


@pytest.mark.parametrize("opt_level", [0, 3])
def test_scalar_ops_and_calls_match_numpy(opt_level: int) -> None:
    jit = _compile(_OPS_KERNEL, from_linalg=False, opt_level=opt_level)
    ops = jit.get_function("ops")
    rng = np.random.default_rng(2)
    x = rng.uniform(-2, 2, 16).astype(np.float32)
    y = rng.uniform(-2, 2, 16).astype(np.float32)
    out = np.full((10, 16), np.nan, np.float32)
    tmp = np.zeros(16, np.float32)
    ops(_ptr(x), _ptr(y), _ptr(out), _ptr(tmp))

    idx = np.arange(16)
    expected = np.stack(
        [
            np.maximum(x, 0),
            np.minimum(x, y),
            np.where(x > y, x, y),
            (x < 0).astype(np.float32),
            ((idx % 3) * (idx // 3)).astype(np.float32),
            np.sqrt(np.abs(x)) - np.log(np.abs(x) + 1),
            -x / (np.abs(x) + 1),
            x + y,
            np.where(idx < 8, idx, 9).astype(np.float32),
            2 * y,
        ]
    )
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_intrinsics_at_two_types_in_one_module() -> None:
    """Intrinsic calls are type-mangled, so f32 and f64 uses do not clash."""
    src = """
func.func @f(%x: memref<4xf32>, %y: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %b = memref.load %y[%i] : memref<4xf64>
    %ea = math.exp %a : f32
    %eb = math.tanh %b : f64
    %ta = math.tanh %ea : f32
    %mb = arith.maximumf %eb, %b : f64
    memref.store %ta, %x[%i] : memref<4xf32>
    memref.store %mb, %y[%i] : memref<4xf64>
  }
  func.return
}
"""
    jit = _compile(src, from_linalg=False)
    x = np.linspace(-1, 1, 4).astype(np.float32)
    y = np.linspace(-2, 2, 4)
    ref_x, ref_y = np.tanh(np.exp(x.astype(np.float64))), np.maximum(np.tanh(y), y)
    jit.get_function("f")(_ptr(x), _ptr(y))
    np.testing.assert_allclose(x, ref_x, rtol=1e-6)
    np.testing.assert_allclose(y, ref_y, rtol=1e-12)


_SUM_KERNEL = """
func.func @sum(%x: memref<1024xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %total = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<1024xf32>
    %s = arith.addf %acc, %v FASTMATH : f32
    scf.yield %s : f32
  }
  memref.store %total, %out[] : memref<f32>
  func.return
}
"""


@pytest.mark.parametrize("fastmath", ["", "fastmath<reassoc>"])
def test_loop_carried_reduction(fastmath: str) -> None:
    """iter_args become block arguments (phis); reassoc lets LLVM vectorize the sum."""
    jit = _compile(_SUM_KERNEL.replace("FASTMATH", fastmath), from_linalg=False)
    x = np.random.default_rng(4).uniform(0, 1, 1024).astype(np.float32)
    out = np.zeros((), np.float32)
    jit.get_function("sum")(_ptr(x), _ptr(out))
    np.testing.assert_allclose(float(out), x.astype(np.float64).sum(), rtol=1e-5)
    vectorized = re.search(r"fadd reassoc <\d+ x float>", jit.optimized_ir()) is not None
    assert vectorized == bool(fastmath)


def test_llvm_ir_has_bare_pointer_abi_and_flags() -> None:
    text = to_llvm_text(_lower(_OPS_KERNEL, from_linalg=False))
    assert re.search(r"define void @\"?ops\"?\(ptr noalias", text), text
    assert "inttoptr" not in text and "ptrtoint" not in text
    assert "getelementptr inbounds float" in text
    assert re.search(r"load float, ptr %[\w.\"]+, align 4", text)
    # arith fastmath<fast> propagated (llvmlite spells out the individual flags)
    assert re.search(r"fadd [a-z ]*reassoc[a-z ]* float", text)
    assert re.search(r"fadd float", text)  # no flags by default
    assert re.search(r'@"?llvm\.maximum\.f32', text) and re.search(r'@"?llvm\.minimum\.f32', text)
    assert to_llvm_ir(_lower(_OPS_KERNEL, from_linalg=False)).triple


# --------------------------------------------------------------------------------------
# vectorization and rough speed of the 64x784 @ 784x256 matmul, i,k,j order

_MATMUL = (
    _MAPS
    + """
func.func @matmul(%a: memref<64x784xf32>, %b: memref<784x256xf32>, %c: memref<64x256xf32>) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<64x784xf32>, memref<784x256xf32>) outs(%c : memref<64x256xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  func.return
}
"""
)


@pytest.fixture(scope="module")
def matmul_jit() -> JitModule:
    return _compile(_MATMUL)


def test_matmul_is_vectorized(matmul_jit: JitModule) -> None:
    ir = matmul_jit.optimized_ir()
    assert re.search(r"<(8|16) x float>", ir), "the loop vectorizer did not fire"
    assert "matmul" in matmul_jit.asm()


def test_matmul_gflops(matmul_jit: JitModule) -> None:
    m, k, n = 64, 784, 256
    matmul = matmul_jit.get_function("matmul")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    c = np.zeros((m, n), np.float32)
    matmul(_ptr(a), _ptr(b), _ptr(c))
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    # Best of several batches: the machine is shared, a mean would measure the noise.
    seconds = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(10):
            matmul(_ptr(a), _ptr(b), _ptr(c))
        seconds = min(seconds, (time.perf_counter() - start) / 10)
    print(f"\nmatmul 64x784 @ 784x256 (i,k,j): {2 * m * k * n / seconds / 1e9:.1f} GFLOP/s")


# --------------------------------------------------------------------------------------
# errors


def test_get_function_unknown_name(matmul_jit: JitModule) -> None:
    with pytest.raises(KeyError):
        matmul_jit.get_function("nope")


def test_an_op_without_a_rule_fails_its_dialects_pass() -> None:
    """A full conversion: convert-arith-to-llvm itself fails on the arith op it cannot
    lower, naming the op and its function (not the translation, not the JIT)."""
    src = """
func.func @f(%x: memref<4xf32>, %y: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  %i = arith.fptosi %v : f32 to i32
  memref.store %i, %y[%c0] : memref<4xi32>
  func.return
}
"""
    with pytest.raises(LoweringError, match=re.escape(
            "convert-arith-to-llvm at @f: arith.fptosi: not lowered to the llvm dialect: "
            "the pass has no rule for it")) as info:
        _lower(src, from_linalg=False)
    assert info.value.pass_name == "convert-arith-to-llvm"


def test_an_op_of_a_dialect_no_pass_converts_fails_the_legality_check() -> None:
    """What no convert-*-to-llvm pass owns reaches the lowering's last pass, which
    names the first such op, its (now llvm) function, and how many are left."""
    src = """
func.func @g(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  "test.op"(%v) : (f32) -> ()
  "test.op"() : () -> ()
  func.return
}
"""
    with pytest.raises(LoweringError, match=re.escape(
            "llvm-legality-check at @g: test.op: not lowered to the llvm dialect: no pass "
            "of the lowering converts it; 1 more op left")) as info:
        _lower(src, from_linalg=False)
    assert info.value.pass_name == "llvm-legality-check"


def test_the_pipeline_reports_an_unlowered_op_in_the_llvm_stage() -> None:
    """Through the driver's pipeline too: a PipelineError of the pass, at the llvm
    stage, before any translation."""
    from frame_mlir.passes.pipeline import PipelineError, run_pipeline

    src = """
func.func @h(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  %r = math.erf %v : f32
  memref.store %r, %x[%c0] : memref<4xf32>
  func.return
}
"""
    module = Parser(_context(), src).parse_module()
    with pytest.raises(PipelineError, match=re.escape(
            "convert-math-to-llvm at @h: math.erf: not lowered to the llvm dialect")) as info:
        run_pipeline(module, None, start_after="loops")
    assert info.value.pass_name == "convert-math-to-llvm"


def test_dynamic_memref_names_the_failing_pass() -> None:
    # Only a dynamic leading dimension lowers (no row-major stride depends on it: the
    # losses of frame-train-loop); an inner one would need the size at run time.
    src = """
func.func @f(%x: memref<4x?xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0, %c0] : memref<4x?xf32>
  memref.store %v, %x[%c0, %c0] : memref<4x?xf32>
  func.return
}
"""
    with pytest.raises(LoweringError, match="needs a static shape") as info:
        _lower(src, from_linalg=False)
    assert info.value.pass_name == "convert-memref-to-llvm"


def test_a_dynamic_leading_dimension_lowers() -> None:
    src = """
func.func @f(%x: memref<?x3xf32>, %y: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %v = memref.load %x[%c1, %c2] : memref<?x3xf32>
  memref.store %v, %y[%c2] : memref<?xf32>
  func.return
}
"""
    jit = _compile(src, from_linalg=False)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.zeros(5, np.float32)
    jit.get_function("f")(_ptr(x), _ptr(y))
    assert y.tolist() == [0, 0, 5, 0, 0]  # x[1, 2] (row-major stride 3) into y[2]
