"""The on-disk compile cache (`frame_mlir/backend/llvm/cache.py`): keys, checks, LRU,
atomic writes, and the warm start of `CompiledSpec` and the tools.

Every test uses its own cache folder (`tmp_path`); the session's folder (tests/
conftest.py) only shields the user's real cache from the rest of the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.backend.llvm import cache as cache_mod
from frame_mlir.backend.llvm.cache import (
    CompileCache,
    EntryError,
    decode_entry,
    encode_entry,
    make_key,
)
from frame_mlir.frontends.spec.spec_v0 import load_spec, parse_spec
from frame_mlir.frontends.spec.trainer import CompiledSpec, Session, spec_cache_material, train

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "testdata" / "tiny_mlp.json"


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def _spec_with(**changes: object):
    doc = json.loads(TINY.read_text())
    for path, value in changes.items():
        section, key = path.split("__")
        doc[section][key] = value
    return parse_spec(json.dumps(doc))


def _only_entry(folder: Path) -> Path:
    entries = list(folder.glob("*.fobj"))
    assert len(entries) == 1, entries
    return entries[0]


# --------------------------------------------------------------------------------------
# entries


MATERIAL = {"kind": "test", "toolchain": {"x": 1}, "input": "abc"}


def test_an_entry_round_trips() -> None:
    blob = encode_entry("k", MATERIAL, {"functions": {"f": 2}}, b"\x7fELF object", b"ir")
    entry = decode_entry(blob, "k", MATERIAL)
    assert (entry.key, entry.meta, entry.obj, entry.extra) == (
        "k", {"functions": {"f": 2}}, b"\x7fELF object", b"ir")


def test_every_corrupted_byte_is_detected() -> None:
    blob = encode_entry("k", MATERIAL, {"m": [1, 2]}, bytes(range(200)), b"extra")
    for i in range(len(blob)):  # the header, the key material, the object, the digest
        bad = bytearray(blob)
        bad[i] ^= 0x01
        with pytest.raises(EntryError):
            decode_entry(bytes(bad), "k", MATERIAL)
    for n in (0, 10, len(blob) - 1):
        with pytest.raises(EntryError):
            decode_entry(blob[:n], "k", MATERIAL)


def test_an_entry_for_other_key_material_is_refused() -> None:
    blob = encode_entry("k", MATERIAL, {}, b"obj")
    with pytest.raises(EntryError, match="key material differs"):
        decode_entry(blob, "k", {**MATERIAL, "input": "abd"})
    with pytest.raises(EntryError, match="key material differs"):
        decode_entry(blob, "other", MATERIAL)


def test_store_and_load_are_atomic_and_leave_no_temporary_files(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path / "c")
    assert cache.load("k", MATERIAL) is None  # a miss on a folder that does not exist
    assert cache.store("k", MATERIAL, {"a": 1}, b"obj")
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["k.fobj"]
    entry = cache.load("k", MATERIAL)
    assert entry is not None and entry.obj == b"obj" and entry.meta == {"a": 1}
    # A temporary file left by a writer that died long ago is cleaned up.
    stale = tmp_path / "c" / ".tmp-1-dead"
    stale.write_bytes(b"partial")
    os.utime(stale, (0, 0))
    cache.entries()
    assert not stale.exists()


def test_a_corrupted_file_is_deleted_not_loaded(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    cache.store("k", MATERIAL, {}, b"obj" * 100)
    path = tmp_path / "k.fobj"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert cache.load("k", MATERIAL) is None
    assert not path.exists()


def test_least_recently_used_entries_are_evicted_first(tmp_path: Path) -> None:
    size = len(encode_entry("a" * 4, MATERIAL, {}, b"x" * 1000))
    cache = CompileCache(tmp_path, max_bytes=3 * size)
    for i, key in enumerate(("aaaa", "bbbb", "cccc")):
        assert cache.store(key, MATERIAL, {}, b"x" * 1000)
        os.utime(tmp_path / f"{key}.fobj", (1000 + i, 1000 + i))  # a, then b, then c
    assert cache.load("aaaa", MATERIAL) is not None  # a hit makes "aaaa" the newest
    assert cache.store("dddd", MATERIAL, {}, b"x" * 1000)
    assert sorted(p.stem for p in tmp_path.glob("*.fobj")) == ["aaaa", "cccc", "dddd"]
    assert cache.size() <= cache.max_bytes


def test_an_entry_larger_than_the_cap_is_not_stored(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path, max_bytes=100)
    assert not cache.store("k", MATERIAL, {}, b"x" * 1000)
    assert not list(tmp_path.iterdir())


def test_an_unwritable_cache_only_costs_the_compile(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = CompileCache(blocker / "cache")
    assert not cache.store("k", MATERIAL, {}, b"obj")
    assert cache.load("k", MATERIAL) is None
    compiled = CompiledSpec(load_spec(TINY), cache=cache)
    assert not compiled.from_cache and compiled.loop_fn is not None


def test_cache_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("FRAME_CACHE_DIR", str(tmp_path / "here"))
    monkeypatch.setenv("FRAME_CACHE_MAX_BYTES", "12345")
    monkeypatch.delenv("FRAME_NO_CACHE", raising=False)
    cache = CompileCache.from_env()
    assert cache is not None
    assert (cache.directory, cache.max_bytes) == (tmp_path / "here", 12345)
    monkeypatch.setenv("FRAME_NO_CACHE", "1")
    assert CompileCache.from_env() is None
    monkeypatch.setenv("FRAME_NO_CACHE", "0")
    assert CompileCache.from_env() is not None
    monkeypatch.setenv("FRAME_CACHE_MAX_BYTES", "lots")
    with pytest.raises(ValueError, match="FRAME_CACHE_MAX_BYTES: expected a number of bytes"):
        CompileCache.from_env()
    monkeypatch.delenv("FRAME_CACHE_DIR")
    monkeypatch.delenv("FRAME_CACHE_MAX_BYTES")
    import platformdirs

    default = CompileCache.from_env()
    assert default is not None
    assert default.directory == Path(platformdirs.user_cache_dir("frame-mlir"))
    assert default.max_bytes == 512 << 20


# --------------------------------------------------------------------------------------
# keys


def _spec_key(spec, opt_level: int = 3, options=None) -> str:
    return make_key("spec", spec_cache_material(spec, opt_level, options))[0]


def test_the_key_ignores_only_what_the_run_decides() -> None:
    base = _spec_key(_spec_with())
    # The loop takes its step count at run time; logging is the host's.
    assert _spec_key(_spec_with(training__steps=7)) == base
    assert _spec_key(_spec_with(training__log_every=1)) == base
    # Anything the compile reads changes it.
    assert _spec_key(_spec_with(optimizer__learning_rate=0.5)) != base
    assert _spec_key(_spec_with(model__name="other")) != base
    assert _spec_key(_spec_with(), opt_level=2) != base
    from frame_mlir.compile_options import CompileOptions

    one, two = CompileOptions(threads=1), CompileOptions(threads=2)
    assert _spec_key(_spec_with(), options=one) != _spec_key(_spec_with(), options=two)


def test_the_key_covers_the_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec_with()
    base = _spec_key(spec)
    tools = cache_mod.toolchain()
    assert len(tools["frame_mlir_source"]) == 64 and tools["cpu"] and tools["llvm"]
    for field, value in (("frame_mlir_source", "0" * 64), ("llvm", "0.0.0"),
                         ("features", ["+nothing"]), ("xdsl", "0.0")):
        monkeypatch.setattr(cache_mod, "toolchain", lambda f=field, v=value: {**tools, f: v})
        assert _spec_key(spec) != base, field


def test_the_source_digest_sees_every_compiler_file(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "passes").mkdir(parents=True)
    (root / "passes" / "a.py").write_text("x = 1\n")
    (root / "schema.json").write_text("{}")
    base = cache_mod.tree_digest(root)
    (root / "passes" / "a.py").write_text("x = 2\n")  # an edit
    edited = cache_mod.tree_digest(root)
    (root / "passes" / "b.py").write_text("")  # a new (empty) file
    added = cache_mod.tree_digest(root)
    (root / "schema.json").write_text("{ }")
    data = cache_mod.tree_digest(root)
    assert len({base, edited, added, data}) == 4
    (root / "passes" / "__pycache__").mkdir()
    (root / "passes" / "__pycache__" / "a.cpython.py").write_text("stale")
    (root / "notes.txt").write_text("not code")
    assert cache_mod.tree_digest(root) == data
    package = Path(cache_mod.__file__).resolve().parents[2]
    assert (package / "passes" / "frame_train_loop.py").exists()
    assert len(cache_mod.source_digest()) == 64


def test_the_xdsl_version_without_importlib_metadata() -> None:
    from importlib.metadata import version

    assert cache_mod._xdsl_version() == version("xdsl")


# --------------------------------------------------------------------------------------
# CompiledSpec: cold, warm, bad entries


def test_a_warm_start_loads_what_the_cold_one_compiled(tmp_path: Path) -> None:
    spec = load_spec(TINY)
    cache = CompileCache(tmp_path)
    cold = CompiledSpec(spec, cache=cache)
    assert not cold.from_cache and cold.lowered is not None
    entry = _only_entry(tmp_path)
    warm = CompiledSpec(spec, cache=cache)
    assert warm.from_cache and warm.lowered is None
    assert warm.executable.signatures == cold.executable.signatures
    assert warm.param_names == cold.param_names
    assert warm.executable.jit.optimized_ir() == cold.executable.jit.optimized_ir()
    a, b = train(spec, compiled=cold), train(spec, compiled=warm)
    assert np.array_equal(_bits(a.losses), _bits(b.losses))
    assert np.array_equal(_bits(a.predictions), _bits(b.predictions))
    for name, p in a.params.items():
        assert np.array_equal(_bits(b.params[name]), _bits(p)), name
    # Another step count is the same object.
    CompiledSpec(_spec_with(training__steps=3), cache=cache)
    assert _only_entry(tmp_path) == entry


def test_a_corrupted_entry_is_rebuilt(tmp_path: Path) -> None:
    spec = load_spec(TINY)
    cache = CompileCache(tmp_path)
    CompiledSpec(spec, cache=cache)
    path = _only_entry(tmp_path)
    good = path.read_bytes()
    bad = bytearray(good)
    bad[-100] ^= 0x40  # inside the stored IR, covered by the checksum
    path.write_bytes(bytes(bad))
    rebuilt = CompiledSpec(spec, cache=cache)
    assert not rebuilt.from_cache
    assert CompiledSpec(spec, cache=cache).from_cache  # the rebuild stored a good entry
    path.write_bytes(good[: len(good) // 3])  # truncated
    assert not CompiledSpec(spec, cache=cache).from_cache


def test_an_entry_filed_under_another_key_is_not_loaded(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    a, b = _spec_with(), _spec_with(optimizer__learning_rate=0.5)
    CompiledSpec(a, cache=cache)
    entry_a = _only_entry(tmp_path)
    key_b = _spec_key(b)
    os.replace(entry_a, cache.path(key_b))  # a's object where b's would be
    compiled = CompiledSpec(b, cache=cache)
    assert not compiled.from_cache
    entry = cache.load(key_b, make_key("spec", spec_cache_material(b, 3, None))[1])
    assert entry is not None  # replaced by b's own


def test_an_object_that_cannot_load_is_rebuilt(tmp_path: Path) -> None:
    """A well-formed entry whose code needs a symbol this process lacks (MCJIT would
    abort the process on it) is rejected before LLVM sees it."""
    spec = load_spec(TINY)
    cache = CompileCache(tmp_path)
    CompiledSpec(spec, cache=cache)
    key, material = make_key("spec", spec_cache_material(spec, 3, None))
    entry = cache.load(key, material)
    assert entry is not None
    meta = {**entry.meta, "externals": ["frame_no_such_symbol_anywhere"]}
    cache.store(key, material, meta, entry.obj, entry.extra)
    assert not CompiledSpec(spec, cache=cache).from_cache
    assert CompiledSpec(spec, cache=cache).from_cache


def test_an_ir_hook_bypasses_the_cache(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    spec = load_spec(TINY)
    CompiledSpec(spec, cache=cache)
    passes: list[str] = []
    compiled = CompiledSpec(spec, cache=cache, after_pass=lambda p, m: passes.append(p.name))
    assert not compiled.from_cache and "frame-train-loop" in passes


def test_the_llvm_ir_cache_of_compiled_graphs(tmp_path: Path) -> None:
    """Modules that are not specs (the Python API's graphs) cache by LLVM IR text."""
    from frame_mlir.backend.llvm.jit import jit_compile
    from frame_mlir.frontends.spec.lower import lower_spec
    from frame_mlir.runtime.executable import compile_module

    cache = CompileCache(tmp_path)
    spec = load_spec(TINY)
    first = compile_module(lower_spec(spec).module, lr=0.05, cache=cache)
    stored = set(tmp_path.glob("*.fobj"))
    again = jit_compile(first.llvm_ir, cache=cache)  # the same text: loaded
    assert set(tmp_path.glob("*.fobj")) == stored  # a hit: nothing new compiled
    assert again.object_code == first.jit.object_code
    assert again.optimized_ir() == first.jit.optimized_ir()
    assert sorted(again.function_names()) == sorted(first.jit.function_names())
    x = np.ones((8, 4), np.float32)
    out = [np.zeros(8, np.float32) for _ in range(2)]
    predict = "tiny_mlp_predict"
    args = first.signatures[predict].args
    params = {a.name: np.full(a.shape, 0.25, np.float32) for a in args if a.kind == "param"}
    for jit, o in zip((first.jit, again), out, strict=True):
        arena = np.zeros(first.signatures[predict].arena_size, np.uint8)
        ptrs = [x.ctypes.data, *(params[a.name].ctypes.data for a in args
                                 if a.kind == "param"), o.ctypes.data, arena.ctypes.data]
        jit.get_function(predict)(*ptrs)
    assert np.array_equal(out[0], out[1]) and out[0].any()


def test_a_module_compiled_before_skips_the_pipeline(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """compile_module looks the frame module up by its text first: a hit runs no pass
    and gives the same code; another learning rate, or other options, is a miss."""
    from frame_mlir.frontends.spec.lower import lower_spec
    from frame_mlir.passes import pipeline
    from frame_mlir.runtime.executable import compile_module

    cache = CompileCache(tmp_path)
    spec = load_spec(TINY)
    first = compile_module(lower_spec(spec).module, lr=0.05, cache=cache)
    assert first.llvm_ir is not None

    def no_pipeline(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pipeline ran on a cache hit")

    with monkeypatch.context() as m:
        m.setattr(pipeline, "run_pipeline", no_pipeline)
        again = compile_module(lower_spec(spec).module, lr=0.05, cache=cache)
    assert again.llvm_ir is None and again.jit.object_code == first.jit.object_code
    assert again.signatures == first.signatures
    x = np.ones((8, 4), np.float32)
    outs = [ex("tiny_mlp_predict", x, *(np.full(a.shape, 0.25, np.float32)
                                        for a in ex.signatures["tiny_mlp_predict"].args
                                        if a.kind == "param"))
            for ex in (first, again)]
    assert np.array_equal(outs[0][0], outs[1][0])
    other_lr = compile_module(lower_spec(spec).module, lr=0.5, cache=cache)
    assert other_lr.llvm_ir is not None  # compiled: the rate is fused into the step
    for path in tmp_path.glob("*.fobj"):  # every entry corrupted: all rebuilt, not loaded
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    rebuilt = compile_module(lower_spec(spec).module, lr=0.05, cache=cache)
    assert rebuilt.llvm_ir is not None


# --------------------------------------------------------------------------------------
# the tools


def _run(args: list[str], cache_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m <module> args...` (or `python -c code`) with its own cache folder."""
    environ = {**os.environ, "FRAME_CACHE_DIR": str(cache_dir), **env}
    command = [sys.executable, *(args if args[0] == "-c" else ["-m", *args])]
    return subprocess.run(command, capture_output=True, text=True, env=environ,
                          timeout=300, check=False)


def test_warm_and_cold_runs_print_the_same_bytes(tmp_path: Path) -> None:
    cold = _run(["frame_mlir.tools.frame_run", str(TINY), "--print-predictions"], tmp_path)
    assert cold.returncode == 0, cold.stderr
    _only_entry(tmp_path)
    warm = _run(["frame_mlir.tools.frame_run", str(TINY), "--print-predictions"], tmp_path)
    dslc = _run(["frame_mlir.tools.frame_dslc", "--run", str(TINY)], tmp_path)
    uncached = _run(["frame_mlir.tools.frame_run", str(TINY), "--print-predictions",
                     "--no-cache"], tmp_path)
    assert cold.stdout == warm.stdout == uncached.stdout
    assert dslc.stdout == cold.stdout[:cold.stdout.index("predictions")]
    assert cold.stdout.startswith("step 0 loss 0.431039602\n")


def test_a_warm_run_imports_neither_xdsl_nor_the_pipeline(tmp_path: Path) -> None:
    code = ("import sys\nfrom frame_mlir.tools.frame_run import main\n"
            f"rc = main([{str(TINY)!r}])\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('xdsl.', "
            "'frame_mlir.passes.pipeline', 'frame_mlir.frontends.spec.lower')))\n"
            "print('HEAVY', rc, heavy)\n")
    first = _run(["-c", code], tmp_path)
    assert "HEAVY 0 ['frame_mlir" in first.stdout, first.stderr  # the cold run compiled
    second = _run(["-c", code], tmp_path)
    assert "HEAVY 0 []" in second.stdout, second.stdout + second.stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_cache_neither_reads_nor_writes(tmp_path: Path, how: str) -> None:
    args = ["frame_mlir.tools.frame_run", str(TINY)]
    extra = {"FRAME_NO_CACHE": "1"} if how == "env" else {}
    proc = _run(args + (["--no-cache"] if how == "flag" else []), tmp_path, **extra)
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.glob("*"))
    dslc = ["frame_mlir.tools.frame_dslc", "--run", str(TINY)]
    proc = _run(dslc + (["--no-cache"] if how == "flag" else []), tmp_path, **extra)
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.glob("*"))


def test_cache_usage_errors_are_one_line(tmp_path: Path) -> None:
    proc = _run(["frame_mlir.tools.frame_dslc", "--check", str(TINY), "--no-cache"], tmp_path)
    assert proc.returncode == 2 and "--no-cache applies to --run only" in proc.stderr
    proc = _run(["frame_mlir.tools.frame_run", str(TINY)], tmp_path,
                FRAME_CACHE_MAX_BYTES="-5")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("frame-run: error: FRAME_CACHE_MAX_BYTES: expected a "
                                   "number of bytes (an integer >= 0), found '-5'")


def test_concurrent_cold_runs_share_one_good_entry(tmp_path: Path) -> None:
    env = {**os.environ, "FRAME_CACHE_DIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "frame_mlir.tools.frame_run", str(TINY)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert outs[0][0] == outs[1][0]
    _only_entry(tmp_path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    warm = _run(["frame_mlir.tools.frame_run", str(TINY)], tmp_path,
                FRAME_CACHE_DEBUG="1")
    assert "frame-mlir cache: hit" in warm.stderr and warm.stdout == outs[0][0]


def test_a_session_from_the_cache_steps_like_a_compiled_one(tmp_path: Path) -> None:
    spec = load_spec(TINY)
    cache = CompileCache(tmp_path)
    cold = CompiledSpec(spec, cache=cache)
    warm = CompiledSpec(spec, cache=cache)
    assert warm.from_cache
    a, b = Session(cold), Session(warm)
    for _ in range(5):
        assert a.step() == b.step()
    assert a.evaluate() == b.evaluate()
