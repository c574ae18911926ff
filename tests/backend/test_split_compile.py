"""The split LLVM compile (`frame_mlir/backend/llvm/split.py`, `jit.compile_ir`): one
unit per function, named by content (identical kernels compiled once), compiled on
several threads with the same objects for every worker count, linked in one engine,
and cached kernel by kernel.

Small modules are built with llvmlite's IR builder, so that their text is printed the
way `translate.to_llvm_text` prints ours; the model tests use the MNIST MLP (frame-gemm
micro-kernels, the thread pool runtime).
"""

from __future__ import annotations

import ctypes
import io
from pathlib import Path

import llvmlite.ir as ir
import numpy as np
import pytest

from frame_mlir import timing
from frame_mlir.backend.llvm import jit as jit_mod
from frame_mlir.backend.llvm import machine
from frame_mlir.backend.llvm.cache import KERNEL_SUFFIX, CompileCache
from frame_mlir.backend.llvm.jit import (
    ENV_JOBS,
    UNIT_MARK,
    JitModuleError,
    compile_ir,
    compile_jobs,
    compile_whole,
    decode_bundle,
    is_bundle,
    jit_compile,
    load_object,
)
from frame_mlir.backend.llvm.packed import add_entries, entry_name
from frame_mlir.backend.llvm.split import (
    CANONICAL_PREFIX,
    MICRO_KERNEL_PREFIX,
    ROLE_GEMM,
    ROLE_KERNEL,
    ROLE_MICRO,
    Unit,
    UnsplittableModule,
    split_module,
)

ROOT = Path(__file__).resolve().parents[2]
F32 = ir.FloatType()
I64 = ir.IntType(64)
PTR = ir.PointerType()
V16 = ir.VectorType(F32, 16)


def _scale(module: ir.Module, name: str, factor: float) -> ir.Function:
    """void name(float *x, i64 n): x[i] *= factor."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64]), name)
    entry, loop, done = fn.append_basic_block(), fn.append_basic_block(), \
        fn.append_basic_block()
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", fn.args[1], I64(0)), loop, done)
    b = ir.IRBuilder(loop)
    i = b.phi(I64)
    i.add_incoming(I64(0), entry)
    p = b.gep(fn.args[0], [i], source_etype=F32)
    b.store(b.fmul(b.load(p, typ=F32), F32(factor)), p)
    nxt = b.add(i, I64(1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[1]), loop, done)
    ir.IRBuilder(done).ret_void()
    return fn


def _caller(module: ir.Module, name: str, callees: list[ir.Function]) -> ir.Function:
    """void name(float *x, i64 n): every callee on x in turn."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64]), name)
    b = ir.IRBuilder(fn.append_basic_block())
    for callee in callees:
        b.call(callee, fn.args)
    b.ret_void()
    return fn


def _scales_module() -> str:
    """@twice_a and @twice_b, the same kernel under two names, @thrice, and @run
    calling all three: x * 12."""
    m = ir.Module()
    a, b, c = _scale(m, "twice_a", 2.0), _scale(m, "twice_b", 2.0), _scale(m, "thrice", 3.0)
    _caller(m, "run", [a, b, c])
    return str(m)


def _micro_module() -> str:
    """A caller of a frame-gemm-like micro-kernel (one 16-lane FMA per call)."""
    m = ir.Module()
    fma = ir.Function(m, ir.FunctionType(V16, [V16] * 3), "llvm.fma.v16f32")
    micro = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR]),
                        f"{MICRO_KERNEL_PREFIX}test_f32x16")
    b = ir.IRBuilder(micro.append_basic_block())
    x, y, acc = (b.load(p, typ=V16, align=4) for p in micro.args)
    b.store(b.call(fma, [x, y, acc]), micro.args[2], align=4)
    b.ret_void()
    kern = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR]), "kern")
    b = ir.IRBuilder(kern.append_basic_block())
    b.call(micro, kern.args)
    b.ret_void()
    return str(m)


def _run_scales(jit: jit_mod.JitModule, name: str = "run") -> np.ndarray:
    x = np.arange(1, 40, dtype=np.float32)
    jit.get_function(name, [ctypes.c_void_p, ctypes.c_int64])(x.ctypes.data, x.size)
    return x


# --------------------------------------------------------------------------------------
# the split


def test_every_unit_is_a_module_of_one_function() -> None:
    import llvmlite.binding as llvm

    split = split_module(_scales_module())
    assert [u.originals for u in split.units] == [("twice_a",), ("twice_b",), ("thrice",),
                                                  ("run",)]
    assert split.symbols == {n: n for n in ("twice_a", "twice_b", "thrice", "run")}
    for unit in split.units:
        module = llvm.parse_assembly(unit.text)
        module.verify()
        defined = [f.name for f in module.functions if not f.is_declaration]
        assert defined == [unit.symbol]
    run = llvm.parse_assembly(split.units[-1].text)
    assert sorted(f.name for f in run.functions if f.is_declaration) == [
        "thrice", "twice_a", "twice_b"]


def test_identical_private_functions_are_one_unit_named_by_content() -> None:
    split = split_module(_scales_module(), public={"run"})
    assert len(split.units) == 3  # twice_a and twice_b: one unit
    twice = split.symbols["twice_a"]
    assert split.symbols["twice_b"] == twice and twice.startswith(CANONICAL_PREFIX)
    assert split.symbols["run"] == "run" and split.symbols["thrice"] != twice
    (unit,) = [u for u in split.units if u.symbol == twice]
    assert unit.originals == ("twice_a", "twice_b")
    # The name depends on the content only: another module's copy gets the same one.
    m = ir.Module()
    _caller(m, "main", [_scale(m, "other_name", 2.0)])
    assert split_module(str(m), public={"main"}).symbols["other_name"] == twice
    # ... and every original name is callable, on the one copy of the code.
    jit = compile_ir(_scales_module(), public={"run"}, jobs=2)
    assert sorted(jit.function_names()) == ["run", "thrice", "twice_a", "twice_b"]
    assert jit.address("twice_a") == jit.address("twice_b")
    assert jit.function_arity()["twice_b"] == 2
    np.testing.assert_array_equal(_run_scales(jit), np.arange(1, 40, dtype=np.float32) * 12)
    np.testing.assert_array_equal(_run_scales(jit, "twice_b"),
                                  np.arange(1, 40, dtype=np.float32) * 2)


def test_functions_calling_each_other_keep_their_names() -> None:
    m = ir.Module()
    ping = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, I64]), "ping")
    pong = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, I64]), "pong")
    for fn, other in ((ping, pong), (pong, ping)):  # ping(x, n) -> pong(x, n - 1) ...
        entry, more, done = (fn.append_basic_block() for _ in range(3))
        b = ir.IRBuilder(entry)
        b.cbranch(b.icmp_signed(">", fn.args[1], I64(0)), more, done)
        b = ir.IRBuilder(more)
        p = b.gep(fn.args[0], [I64(0)], source_etype=F32)
        b.store(b.fadd(b.load(p, typ=F32), F32(1.0)), p)
        b.call(other, [fn.args[0], b.sub(fn.args[1], I64(1))])
        b.ret_void()
        ir.IRBuilder(done).ret_void()
    _caller(m, "run", [ping])
    split = split_module(str(m), public={"run"})
    assert split.symbols == {"ping": "ping", "pong": "pong", "run": "run"}
    x = np.zeros(1, np.float32)
    compile_ir(str(m), public={"run"}).get_function(
        "run", [ctypes.c_void_p, ctypes.c_int64])(x.ctypes.data, 5)
    assert x[0] == 5.0


def test_micro_kernels_are_units_of_their_own_that_gemm_drivers_call() -> None:
    split = split_module(_micro_module(), public={"kern"})
    roles = {u.originals[0]: u.role for u in split.units}
    micro = f"{MICRO_KERNEL_PREFIX}test_f32x16"
    assert roles == {micro: ROLE_MICRO, "kern": ROLE_GEMM}
    (kern,) = [u for u in split.units if u.symbol == "kern"]
    assert "available_externally" not in kern.text
    assert f'declare void @"{split.symbols[micro]}"' in kern.text
    jit = compile_ir(_micro_module(), public={"kern"})
    units = jit.optimized_ir().split(UNIT_MARK)[1:]
    (kern_ir,) = [u for u in units if u.startswith("@kern:")]
    body = kern_ir[kern_ir.index('define void @kern('):]
    assert f"call void @{split.symbols[micro]}(" in body  # called: optimized once, alone
    x, y, acc = (np.full(16, v, np.float32) for v in (2.0, 3.0, 1.0))
    jit.get_function("kern")(x.ctypes.data, y.ctypes.data, acc.ctypes.data)
    np.testing.assert_array_equal(acc, np.full(16, 7.0, np.float32))


def test_each_role_is_optimized_by_its_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    """O2 for GEMM drivers, O3 for micro-kernels and the rest; below opt level 3
    every unit gets that level's whole pipeline. The role is part of the unit's
    cache key."""
    assert machine.unit_pipeline(3, ROLE_MICRO) == machine.UnitPipeline(3, True, True)
    assert machine.unit_pipeline(3, ROLE_GEMM) == machine.UnitPipeline(2, True, True)
    assert machine.unit_pipeline(3, ROLE_KERNEL) == machine.UnitPipeline(3, True, True)
    for role in (ROLE_MICRO, ROLE_GEMM, ROLE_KERNEL):
        assert machine.unit_pipeline(1, role) == machine.UnitPipeline(1, False, False)
    seen: dict[str, machine.UnitPipeline | None] = {}
    real = jit_mod.optimize

    def spy(module, target_machine, opt_level, pipeline=None):  # type: ignore[no-untyped-def]
        name = next(f.name for f in module.functions if not f.is_declaration)
        seen[name] = pipeline
        real(module, target_machine, opt_level, pipeline)

    monkeypatch.setattr(jit_mod, "optimize", spy)
    split = split_module(_micro_module(), public={"kern"})
    compile_ir(_micro_module(), public={"kern"}, jobs=1)
    micro = split.symbols[f"{MICRO_KERNEL_PREFIX}test_f32x16"]
    assert seen == {micro: machine.UnitPipeline(3, True, True),
                    "kern": machine.UnitPipeline(2, True, True),
                    # its packed entry (packed.py): loads and a call, at level 0
                    "kern.frame_args": machine.UnitPipeline(0, False, False, codegen=0)}
    a, b = (Unit("f", "text", ("f",), role) for role in (ROLE_GEMM, ROLE_KERNEL))
    assert jit_mod._unit_key(a, 3)[0] != jit_mod._unit_key(b, 3)[0]


@pytest.mark.parametrize("what", ["global", "internal", "metadata", "comdat"])
def test_what_the_splitter_does_not_know_compiles_whole(what: str) -> None:
    text = _scales_module()
    if what == "global":
        text += '@"counter" = global i64 0\n'
    elif what == "internal":
        text = text.replace('define void @"thrice"', 'define internal void @"thrice"')
    elif what == "metadata":
        text += '!0 = !{i32 1}\n'
    else:
        text = text.replace('define void @"thrice"(ptr %".1", i64 %".2")',
                            '$thrice = comdat any\ndefine void @"thrice"(ptr %".1", '
                            'i64 %".2") comdat($thrice)')
    with pytest.raises(UnsplittableModule):
        split_module(text)
    jit = compile_ir(text, public={"run"})
    assert jit.object_code is not None and not is_bundle(jit.object_code)
    np.testing.assert_array_equal(_run_scales(jit), np.arange(1, 40, dtype=np.float32) * 12)


def test_a_unit_llvm_rejects_falls_back_to_the_whole_module(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the splitter ever misread a valid module, the module still compiles."""
    def rejecting(symbol: str, text: str, opt_level: int, role: str) -> jit_mod._UnitCode:
        raise RuntimeError("LLVM IR parsing error")

    monkeypatch.setattr(jit_mod, "_compile_unit", rejecting)
    jit = compile_ir(_scales_module(), public={"run"}, jobs=2)
    assert jit.object_code is not None and not is_bundle(jit.object_code)
    np.testing.assert_array_equal(_run_scales(jit), np.arange(1, 40, dtype=np.float32) * 12)


# --------------------------------------------------------------------------------------
# workers


def test_compile_jobs_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv(ENV_JOBS, raising=False)
    assert compile_jobs() == len(os.sched_getaffinity(0))
    monkeypatch.setenv(ENV_JOBS, " 3 ")
    assert compile_jobs() == 3
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv(ENV_JOBS, bad)
        with pytest.raises(ValueError, match=ENV_JOBS):
            compile_jobs()


def test_the_workers_run_without_llvmlites_lock() -> None:
    """llvmlite's structures are the ones the lock bypass was written for (otherwise
    the compile is serial: correct, but one core)."""
    from llvmlite.binding import ffi

    assert jit_mod._parallel_llvm()
    assert isinstance(ffi.lib._lock._lock, jit_mod._WorkerFreeLock)
    with ffi.lib._lock:  # the main thread still locks
        assert ffi.lib._lock._lock._inner._is_owned()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def mnist_ir() -> tuple[str, set[str]]:
    """The MNIST MLP's LLVM IR at 2 threads (micro-kernels, parallel tasks), and its
    public functions."""
    from frame_mlir.backend.llvm.translate import to_llvm_text
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.lower import lower_spec
    from frame_mlir.frontends.spec.spec_v0 import load_spec
    from frame_mlir.passes.pipeline import run_pipeline
    from frame_mlir.runtime.executable import signatures

    spec = load_spec(ROOT / "testdata" / "mnist_mlp.json")
    module = lower_spec(spec).module
    sigs: dict[str, object] = {}

    def after_stage(stage: str, m: object) -> None:
        if stage == "loops":
            sigs.update(signatures(m))  # type: ignore[arg-type]

    run_pipeline(module, spec.optimizer.learning_rate, options=CompileOptions(threads=2),
                 after_stage=after_stage)
    return to_llvm_text(module), set(sigs)


def test_objects_are_the_same_for_every_worker_count(mnist_ir: tuple[str, set[str]]) -> None:
    text, public = mnist_ir
    jits = {jobs: compile_ir(text, public=public, jobs=jobs) for jobs in (1, 2, 3)}
    code = jits[1].object_code
    assert code is not None and is_bundle(code)
    assert all(j.object_code == code for j in jits.values())
    objects, symbols = decode_bundle(code)
    with_entries, entries = add_entries(text, public)  # every public function's
    assert sorted(entries) == sorted(entry_name(n) for n in public)
    assert len(objects) == len(split_module(with_entries, {*public, *entries}).units)
    assert set(symbols) == set(jits[1].function_names())
    assert jits[1].optimized_ir() == jits[3].optimized_ir()
    assert "frame_rt_parallel_for" in jits[2].externals  # the runtime was provided


def test_a_parallel_compile_keeps_the_process_locale(mnist_ir: tuple[str, set[str]]) -> None:
    """LLVM on worker threads left the C locale at "C" (text files then defaulted to
    ASCII: the emitted C++ of a spec with a non-ASCII name failed to write)."""
    import locale

    before = (locale.setlocale(locale.LC_ALL), locale.getpreferredencoding(False))
    text, public = mnist_ir
    compile_ir(text, public=public, jobs=2)
    assert (locale.setlocale(locale.LC_ALL), locale.getpreferredencoding(False)) == before


def test_training_is_the_same_for_every_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.spec.spec_v0 import load_spec
    from frame_mlir.frontends.spec.trainer import CompiledSpec, Session

    spec = load_spec(ROOT / "testdata" / "mnist_mlp.json")
    runs = []
    for jobs in ("1", "2"):
        monkeypatch.setenv(ENV_JOBS, jobs)
        compiled = CompiledSpec(spec, options=CompileOptions(threads=2), cache=None)
        session = Session(compiled)
        runs.append((compiled.executable.jit.object_code,
                     [session.step() for _ in range(3)], session.evaluate()))
    assert runs[0] == runs[1]


# --------------------------------------------------------------------------------------
# objects, bundles and the per-kernel cache


def test_a_bundle_loads_like_the_compile_and_a_plain_object_still_loads() -> None:
    jit = compile_ir(_scales_module(), public={"run"})
    assert jit.object_code is not None
    loaded = load_object(jit.object_code, jit.function_arity(), externals=jit.externals)
    np.testing.assert_array_equal(_run_scales(loaded), _run_scales(jit))
    assert loaded.address("twice_a") == loaded.address("twice_b")
    whole = compile_whole(_scales_module())
    assert whole.object_code is not None and not is_bundle(whole.object_code)
    plain = load_object(whole.object_code, whole.function_arity())
    np.testing.assert_array_equal(_run_scales(plain), _run_scales(jit))
    with pytest.raises(JitModuleError):
        load_object(jit.object_code[:-7], jit.function_arity())


def test_optimized_ir_and_assembly_name_every_unit() -> None:
    jit = compile_ir(_scales_module(), public={"run"})
    ir_text = jit.optimized_ir()
    marks = [line for line in ir_text.splitlines() if line.startswith(UNIT_MARK)]
    assert len(marks) == 3 and any("twice_a twice_b" in m for m in marks)
    asm = jit.asm()
    assert "run:" in asm and asm.count(f"{CANONICAL_PREFIX}") >= 2


def _compiled_units(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the symbol of every unit compiled from now on."""
    seen: list[str] = []
    real = jit_mod._compile_unit

    def counting(symbol: str, text: str, opt_level: int, role: str) -> jit_mod._UnitCode:
        seen.append(symbol)
        return real(symbol, text, opt_level, role)

    monkeypatch.setattr(jit_mod, "_compile_unit", counting)
    return seen


def test_kernels_seen_before_are_loaded_not_compiled(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cache = CompileCache(tmp_path)
    seen = _compiled_units(monkeypatch)
    first = jit_compile(_scales_module(), cache=cache.kernels_only(), public={"run"})
    assert len(seen) == 3 and len(list(tmp_path.glob(f"*{KERNEL_SUFFIX}"))) == 3
    assert not list(tmp_path.glob("*.fobj"))  # kernels only: no whole-module entry
    # Another module with the same kernel under another name: only its new units.
    m = ir.Module()
    _caller(m, "main", [_scale(m, "doubled", 2.0), _scale(m, "halved", 0.5)])
    seen.clear()
    other = jit_compile(str(m), cache=cache.kernels_only(), public={"main"})
    assert sorted(seen) == sorted([other.symbol("halved"), "main"])
    assert other.symbol("doubled") == first.symbol("twice_a")
    x = np.ones(4, np.float32)
    other.get_function("main", [ctypes.c_void_p, ctypes.c_int64])(x.ctypes.data, 4)
    np.testing.assert_array_equal(x, np.ones(4, np.float32))
    # A corrupted kernel entry is rebuilt, the rest still loaded.
    entries = sorted(tmp_path.glob(f"*{KERNEL_SUFFIX}"))
    data = bytearray(entries[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    entries[0].write_bytes(bytes(data))
    seen.clear()
    again = jit_compile(_scales_module(), cache=cache.kernels_only(), public={"run"})
    assert len(seen) <= 1 and again.object_code == first.object_code
    np.testing.assert_array_equal(_run_scales(again), _run_scales(first))
    seen.clear()
    jit_compile(_scales_module(), cache=cache.kernels_only(), public={"run"})
    assert seen == []


def test_a_cached_kernel_that_does_not_load_is_compiled_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = CompileCache(tmp_path)
    first = jit_compile(_scales_module(), cache=cache.kernels_only(), public={"run"})
    # An entry that passes its checks but cannot be loaded (here: it says it calls a
    # function nobody has): every unit that came from the cache is compiled again.
    real = jit_mod._cached_unit

    def broken(*args: object) -> jit_mod._UnitCode | None:
        code = real(*args)  # type: ignore[arg-type]
        if code is not None and code.symbol == "run":
            code.externals = ["frame_no_such_symbol_anywhere"]
        return code

    monkeypatch.setattr(jit_mod, "_cached_unit", broken)
    seen = _compiled_units(monkeypatch)
    again = jit_compile(_scales_module(), cache=cache.kernels_only(), public={"run"})
    assert sorted(seen) == sorted(u.symbol for u in split_module(
        _scales_module(), {"run"}).units)
    assert again.object_code == first.object_code


def test_the_timing_report_shows_the_llvm_work() -> None:
    out = io.StringIO()
    with timing.compile_session(report=True, out=out):
        compile_ir(_scales_module(), public={"run"}, jobs=2)
    report = out.getvalue()
    assert "llvm (2 jobs, 3 units, 0 cached)" in report
    for name in ("llvm: split", "llvm: parse", "llvm: optimize", "llvm: machine code",
                 "llvm: load"):
        assert name in report, report
