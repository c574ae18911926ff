"""The C++ backend: emitted programs build warning-free, run sanitizer-clean and train
exactly like the JIT (frame-run's stdout, byte for byte).

The JIT and the emitted C++ are two independent lowerings of the same loop-level IR, so
their agreement step by step checks both. Programs are built with CMake and the
system C++ compiler: all specs in one configure (a superproject that adds each emitted
project as a subdirectory) to keep the test time down, plus one standalone
`cmake -S DIR -B DIR/build` build with AddressSanitizer and UBSan.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import Float32Type, ModuleOp
from xdsl.parser import Parser

from frame_mlir.backend.cpp.cmake import (
    cmake_lists,
    prefer_vector_width_flags,
    target_name,
    vector_width_flag,
)
from frame_mlir.backend.cpp.emitter import (
    EMIT_RULES,
    CppEmitError,
    c_string,
    comment_text,
    emit_module,
    float_literal,
)
from frame_mlir.compile_options import CompileOptions
from frame_mlir.frontends.spec.program import emit_program, generate_program, lower_to_loops
from frame_mlir.frontends.spec.spec import ModelSpec
from frame_mlir.frontends.spec.spec_v0 import load_spec
from frame_mlir.passes.pipeline import vector_lanes
from frame_mlir.tools.driver import run_training

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
SPECS = ["tiny_mlp", "skip_mlp", "nobias_mlp", "nonfinal_pred", "reuse_input", "inline_data",
         "mnist_mlp", "odd_mlp", "diverge_mlp", "names_mlp"]
FINITE_SPECS = [n for n in SPECS if n != "diverge_mlp"]

CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
needs_toolchain = pytest.mark.skipif(shutil.which("cmake") is None or CXX is None,
                                     reason="cmake and a C++ compiler are needed")

# Shapes that are not multiples of frame-tile-matmul's 4 x 64 register tiles, so the
# tiled matmuls run their leftover row and column loops too.
ODD_MLP = {
    "schema_version": 0,
    "model": {"name": "odd_mlp", "dtype": "float32", "batch": 10},
    "inputs": [{"name": "x", "shape": [10, 13]}],
    "layers": [
        {"name": "hidden", "kind": "linear", "input": "x", "weight_shape": [13, 70],
         "bias_shape": [10, 70], "activation": "relu"},
        {"name": "head", "kind": "linear", "input": "hidden", "weight_shape": [70, 3],
         "bias_shape": [10, 3]},
    ],
    "loss": {"kind": "mse", "prediction": "head", "target_shape": [10, 3]},
    "optimizer": {"kind": "sgd", "learning_rate": 0.02},
    "training": {"steps": 45, "seed": 4242, "log_every": 10},
    "data": {
        "x": {"kind": "uniform_seeded", "range": [-1.0, 1.0]},
        "target": {"kind": "uniform_seeded", "range": [-0.5, 0.5]},
        "params": {"kind": "uniform_seeded", "weight_range": [-0.2, 0.2],
                   "bias_range": [0.0, 0.1]},
    },
}

# tiny_mlp with a learning rate that overflows the loss at step 1 (inf, then nan): the
# programs print non-finite values exactly as frame-run does, and warn on stderr.
DIVERGE_MLP = {
    **json.loads((TESTDATA / "tiny_mlp.json").read_text()),
    "model": {"name": "diverge_mlp", "dtype": "float32", "batch": 8},
    "optimizer": {"kind": "sgd", "learning_rate": 1e30},
    "training": {"steps": 20, "seed": 20260713, "log_every": 5},
}
# tiny_mlp with names that are legal in a spec but not as C++ or MLIR identifiers: an
# input named like a parameter, a layer name ending in a backslash (which would splice
# a `//` comment onto the next line), a prediction with a quote, a printf directive and
# a non-ASCII letter (written into a string literal of the program).
_TINY = json.loads((TESTDATA / "tiny_mlp.json").read_text())
NAMES_MLP = {
    **_TINY,
    "model": {"name": "names_mlp", "dtype": "float32", "batch": 8},
    "inputs": [{"name": "h\\.bias", "shape": [8, 4]}],
    "layers": [{**_TINY["layers"][0], "name": "h\\", "input": "h\\.bias"},
               {**_TINY["layers"][1], "name": 'out"q%d\u00e9', "input": "h\\"}],
    "loss": {**_TINY["loss"], "prediction": 'out"q%d\u00e9'},
    "training": {"steps": 20, "seed": 20260713, "log_every": 5},
    "data": {"h\\.bias": _TINY["data"]["x"], "target": _TINY["data"]["target"],
             "params": _TINY["data"]["params"]},
}
GENERATED_SPECS = {"odd_mlp": ODD_MLP, "diverge_mlp": DIVERGE_MLP, "names_mlp": NAMES_MLP}
DIVERGE_WARNING = ("diverge_mlp: warning: training diverged: the loss first became inf at "
                   "step 1 (learning_rate 1e+30 may be too large)\n")

_STEP = re.compile(r"^step (\d+) loss (\S+)$")


def _spec(name: str, tmp: Path) -> ModelSpec:
    if name in GENERATED_SPECS:
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(GENERATED_SPECS[name]))
        return load_spec(str(path))
    return load_spec(str(TESTDATA / f"{name}.json"))


def _jit_stdout(spec: ModelSpec) -> str:
    """What `frame-run --print-predictions` prints for `spec`."""
    out = io.StringIO()
    assert run_training(spec, out, print_predictions=True) == 0
    return out.getvalue()


def _losses(stdout: str) -> dict[int, float]:
    return {int(m.group(1)): float(m.group(2))
            for m in map(_STEP.match, stdout.splitlines()) if m}


def _cmake(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["cmake", *args], cwd=cwd, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, f"cmake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"


# --------------------------------------------------------------------------------------
# builds shared by the tests of this module


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelSpec]:
    tmp = tmp_path_factory.mktemp("specs")
    return {name: _spec(name, tmp) for name in SPECS}


@pytest.fixture(scope="module")
def jit_outputs(specs: dict[str, ModelSpec]) -> dict[str, str]:
    return {name: _jit_stdout(spec) for name, spec in specs.items()}


@pytest.fixture(scope="module")
def binaries(specs: dict[str, ModelSpec],
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every spec emitted and built (Release, -Wall -Wextra -Werror) in one CMake tree."""
    if shutil.which("cmake") is None or CXX is None:
        pytest.skip("cmake and a C++ compiler are needed")
    root = tmp_path_factory.mktemp("emitted")
    for name, spec in specs.items():
        emit_program(spec, root / name)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(frame_emit_tests LANGUAGES CXX)\n"
        + "".join(f"add_subdirectory({name})\n" for name in specs))
    _cmake("-S", str(root), "-B", str(root / "build"), "-DCMAKE_BUILD_TYPE=Release",
           "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
           cwd=root)
    _cmake("--build", str(root / "build"), "--parallel", str(os.cpu_count() or 2), cwd=root)
    return {name: root / "build" / name / target_name(spec.name)
            for name, spec in specs.items()}


def _run(binary: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


# --------------------------------------------------------------------------------------
# the emitted programs against the JIT


@needs_toolchain
@pytest.mark.parametrize("name", FINITE_SPECS)
def test_every_logged_loss_matches_the_jit(name: str, binaries: dict[str, Path],
                                           jit_outputs: dict[str, str]) -> None:
    got = _losses(_run(binaries[name]).stdout)
    want = _losses(jit_outputs[name])
    assert sorted(got) == sorted(want) and want
    for step, loss in want.items():
        assert got[step] == pytest.approx(loss, rel=1e-5, abs=0.0), f"step {step}"


@needs_toolchain
@pytest.mark.parametrize("name", SPECS)
def test_stdout_is_bit_identical_to_frame_run(name: str, binaries: dict[str, Path],
                                              jit_outputs: dict[str, str]) -> None:
    """Losses at 9 significant digits and the predictions block, byte for byte: the two
    backends round identically (no contraction; math.fma is std::fma)."""
    proc = _run(binaries[name])
    assert proc.stdout == jit_outputs[name]
    warning = DIVERGE_WARNING if name == "diverge_mlp" else ""
    assert re.fullmatch(re.escape(warning) + r"train_seconds \d+\.\d+\n", proc.stderr)


def test_frame_run_warns_of_divergence(specs: dict[str, ModelSpec],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The JIT side of the warning the emitted program gives (exit status stays 0)."""
    out = io.StringIO()
    assert run_training(specs["diverge_mlp"], out) == 0
    assert capsys.readouterr().err == DIVERGE_WARNING.replace("diverge_mlp:", "frame-run:")
    assert "step 5 loss nan\n" in out.getvalue() and out.getvalue().endswith("final_loss nan\n")


@needs_toolchain
def test_sanitizers_run_clean(specs: dict[str, ModelSpec],
                              tmp_path_factory: pytest.TempPathFactory,
                              jit_outputs: dict[str, str]) -> None:
    """The documented standalone flow, built with ASan + UBSan: no report, exit 0."""
    out = tmp_path_factory.mktemp("asan") / "odd_mlp"
    emit_program(specs["odd_mlp"], out)
    flags = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    # -O1, the usual sanitizer level: -O3 with instrumentation takes ten times longer to build
    _cmake("-S", str(out), "-B", str(out / "build"), f"-DCMAKE_CXX_FLAGS={flags}",
           "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g",
           "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined", cwd=out)
    _cmake("--build", str(out / "build"), cwd=out)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    proc = subprocess.run([str(out / "build" / "odd_mlp")], capture_output=True, text=True,
                          timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"train_seconds \d+\.\d+\n", proc.stderr), proc.stderr
    assert proc.stdout == jit_outputs["odd_mlp"]


def _compile_commands(build: Path) -> dict[str, str]:
    """The compile command of each source, by its directory's name (CMake's
    compile_commands.json)."""
    entries = json.loads((build / "compile_commands.json").read_text())
    return {Path(e["file"]).parent.name: e["command"] for e in entries}


@needs_toolchain
def test_builds_prefer_the_generators_vector_width(binaries: dict[str, Path]) -> None:
    """The program's vectors are as wide as frame-gemm's (the host's lanes when the
    options do not say): its build asks the compiler for that width wherever the
    compiler takes the flag, so its tuning for the host cannot split them."""
    from frame_mlir.target.host import host_info

    assert CXX is not None
    bits = 32 * vector_lanes()
    flags = prefer_vector_width_flags(CXX, bits)
    command = _compile_commands(binaries["mnist_mlp"].parents[1])["mnist_mlp"]
    assumed = (f"assumed: {bits}-bit kernels (host CPU {host_info().cpu}, "
               f"{host_info().f32_lanes} f32 lanes), {CXX} taking {flags or 'no flag'}")
    for flag in flags:
        assert f" {flag} " in f" {command} ", f"{command}\n{assumed}"
    if not flags:
        assert "-mprefer-vector-width" not in command, f"{command}\n{assumed}"


@needs_toolchain
def test_program_builds_without_the_vector_width_flag(
        specs: dict[str, ModelSpec], jit_outputs: dict[str, str],
        tmp_path: Path) -> None:
    """A C++17 compiler that refuses `-mprefer-vector-width` (here a wrapper around the
    system's) still builds the program, without the flag, and it trains as frame-run."""
    assert CXX is not None
    wrapper = tmp_path / "cxx-without-prefer"
    wrapper.write_text(f"""#!/bin/sh
for arg in "$@"; do
  case "$arg" in
    -mprefer-vector-width=*) echo "error: unrecognized command-line option '$arg'" >&2; exit 1;;
  esac
done
exec {CXX} "$@"
""")
    wrapper.chmod(0o755)
    out = tmp_path / "mnist_mlp"
    emit_program(specs["mnist_mlp"], out)
    assert "-mprefer-vector-width=" in (out / "CMakeLists.txt").read_text()
    _cmake("-S", str(out), "-B", str(out / "build"), f"-DCMAKE_CXX_COMPILER={wrapper}",
           "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", cwd=out)
    _cmake("--build", str(out / "build"), cwd=out)
    assert "-mprefer-vector-width" not in _compile_commands(out / "build")["mnist_mlp"]
    assert _run(out / "build" / "mnist_mlp").stdout == jit_outputs["mnist_mlp"]


@pytest.mark.parametrize("lanes,flag", [(16, "-mprefer-vector-width=512"),
                                        (8, "-mprefer-vector-width=256"),
                                        (4, "-mprefer-vector-width=128"), (1, None)])
def test_cmake_lists_take_the_width_of_the_compile_options(
        lanes: int, flag: str | None, tmp_path: Path) -> None:
    """emit_program hands CMake the width it handed frame-gemm: `f32_lanes` x 32 bits."""
    assert vector_width_flag(32 * lanes) == flag
    emit_program(load_spec(str(TESTDATA / "tiny_mlp.json")), tmp_path,
                 CompileOptions(threads=1, f32_lanes=lanes))
    text = (tmp_path / "CMakeLists.txt").read_text()
    assert text == cmake_lists("tiny_mlp", vector_bits=32 * lanes)
    if flag is None:
        assert "prefer-vector-width" not in text
    else:
        assert f"check_cxx_compiler_flag({flag} " in text
        assert f"target_compile_options(tiny_mlp PRIVATE {flag})" in text


# --------------------------------------------------------------------------------------
# what the emitted source looks like


def test_program_shape() -> None:
    spec = load_spec(str(TESTDATA / "tiny_mlp.json"))
    text = generate_program(spec)
    assert "static void tiny_mlp_k1_matmul(" in text  # shared by the public functions
    assert "static void tiny_mlp_train_step_k9_sgd_update(" in text
    # forward and predict fuse fc1's add and relu (frame-fuse-elementwise): one kernel
    assert "static void tiny_mlp_k2_add_relu(" in text
    assert "float* __restrict inout2" in text
    assert "std::fma(" in text
    assert "alignas(64) static std::uint8_t arena[1024];" in text
    assert "std::mt19937 engine(20260713u);" in text
    assert "uniform_real_distribution" not in text.replace(
        "Not std::uniform_real_distribution", "")
    for comment in ("// ---- forward ----", "// ---- backward ----", "// ---- update ----",
                    "// layer fc1", "// layer fc1.relu"):
        assert comment in text
    assert "__k" not in re.sub(r"//.*", "", text), "reserved identifiers (double _)"


def test_inline_data_is_baked_in() -> None:
    text = generate_program(load_spec(str(TESTDATA / "inline_data.json")))
    assert re.search(r"static float x\[4 \* 3\] = \{\s*0\.0f, 0\.5f, 1\.0f, 1\.0f", text)
    assert "fill_uniform(engine, x," not in text
    assert "fill_uniform(engine, fc1_weight, 3 * 4, -0.5f, 0.5f);" in text


@pytest.mark.parametrize("name", [n for n in SPECS if n not in GENERATED_SPECS])
def test_every_op_of_the_loops_stage_has_a_rule(name: str) -> None:
    loops = lower_to_loops(load_spec(str(TESTDATA / f"{name}.json")))
    missing = {op.name for op in loops.module.walk()
               if type(op) not in EMIT_RULES and not isinstance(op, ModuleOp)}
    assert not missing
    emit_module(loops.module)


def _parse(src: str) -> ModuleOp:
    ctx = Context()
    for dialect, factory in get_all_dialects().items():
        ctx.register_dialect(dialect, factory)
    return Parser(ctx, src).parse_module()


def test_missing_rule_fails_loudly() -> None:
    module = _parse("""
    func.func @f(%n: index) {
      %m = memref.alloc() : memref<4xf32>
      func.return
    }""")
    with pytest.raises(CppEmitError, match="no C.. emission rule for memref.alloc"):
        emit_module(module)


def test_aliasing_kernel_arguments_are_rejected() -> None:
    module = _parse("""
    func.func private @k(%a: memref<4xf32>, %b: memref<4xf32>) {
      %0 = arith.constant 0 : index
      %1 = memref.load %a[%0] : memref<4xf32>
      memref.store %1, %b[%0] : memref<4xf32>
      func.return
    }
    func.func @f(%arena: memref<32xi8>) {
      %0 = arith.constant 0 : index
      %1 = arith.constant 8 : index
      %2 = memref.view %arena[%0][] : memref<32xi8> to memref<4xf32>
      %3 = memref.view %arena[%1][] : memref<32xi8> to memref<4xf32>
      func.call @k(%2, %3) : (memref<4xf32>, memref<4xf32>) -> ()
      func.return
    }""")
    with pytest.raises(CppEmitError, match="overlap"):
        emit_module(module)


@pytest.mark.parametrize("value", [0.05, -0.05, 1.0, 0.0, -0.0, 1e-8, 3.4028234663852886e38,
                                   1.401298464324817e-45, 16777217.0, 0.1, 2.5e-5])
def test_float_literals_are_exact(value: float) -> None:
    text = float_literal(value, Float32Type())
    assert text.endswith("f")
    body = text[:-1]
    parsed = float.fromhex(body) if "0x" in body else float(body)
    # float(decimal) rounds to double first; the literal is checked exactly inside
    # float_literal, here it is enough that both roads reach the same float32.
    assert np.float32(parsed) == np.float32(value)
    assert math.copysign(1.0, float(np.float32(parsed))) == math.copysign(1.0, value)


def test_special_float_literals() -> None:
    f32 = Float32Type()
    assert float_literal(0.05, f32) == "0.05f"
    assert float_literal(1.0, f32) == "1.0f"
    assert float_literal(math.inf, f32) == "std::numeric_limits<float>::infinity()"
    assert float_literal(-math.inf, f32) == "-std::numeric_limits<float>::infinity()"
    assert float_literal(math.nan, f32) == "std::numeric_limits<float>::quiet_NaN()"


def test_user_text_in_comments_and_strings_is_escaped() -> None:
    # A newline would end a // comment, a trailing backslash would splice the next line.
    assert comment_text("h\nint injected;") == "h\\nint injected;"
    assert comment_text("layer\\") == "layer\\x5c"
    assert comment_text("caf\u00e9 %d") == "caf\u00e9 %d"
    # String literals: octal escapes for every non-ASCII or control byte.
    assert c_string('out"q\\') == '"out\\"q\\\\"'
    assert c_string("\u00e91\n") == '"\\303\\2511\\012"'


@needs_toolchain
def test_names_do_not_change_the_numbers(jit_outputs: dict[str, str],
                                         binaries: dict[str, Path], tmp_path: Path) -> None:
    """names_mlp is tiny_mlp under other names: the same numbers, JIT and C++ alike
    (its input is named like one of its parameters: inputs bind by position)."""
    plain = {**NAMES_MLP, "model": {**NAMES_MLP["model"], "name": "plain"},
             "inputs": _TINY["inputs"], "layers": _TINY["layers"], "loss": _TINY["loss"],
             "data": _TINY["data"]}
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(plain))
    expected = _jit_stdout(load_spec(str(path))).replace("predictions fc2 ",
                                                          'predictions out"q%d\u00e9 ')
    assert jit_outputs["names_mlp"] == expected
    assert _run(binaries["names_mlp"]).stdout == expected


# --------------------------------------------------------------------------------------
# op semantics, compiled: predicates with NaN, NaN-propagating min/max, carried values

_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
               "ult", "ule", "une", "uno", "true"]


def _cmpf_reference(pred: str, a: float, b: float) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    if pred in ("false", "true"):
        return pred == "true"
    if pred == "ord":
        return not unordered
    if pred == "uno":
        return unordered
    rel = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b,
           "ne": a != b}[pred[1:]]
    if pred == "one":
        return not unordered and a != b
    return (unordered or rel) if pred[0] == "u" else (not unordered and rel)


_SEMANTICS_IR = "\n".join(
    f"""func.func @cmp_{p}(%a: f32, %b: f32) -> i1 {{
      %r = arith.cmpf {p}, %a, %b : f32
      func.return %r : i1
    }}""" for p in _PREDICATES) + """
    func.func @maxf(%a: f32, %b: f32) -> f32 {
      %r = arith.maximumf %a, %b : f32
      func.return %r : f32
    }
    func.func @minf(%a: f32, %b: f32) -> f32 {
      %r = arith.minimumf %a, %b : f32
      func.return %r : f32
    }
    func.func @swaps(%n: index) -> f32 {
      %lo = arith.constant 0 : index
      %one = arith.constant 1 : index
      %x0 = arith.constant 1.0 : f32
      %y0 = arith.constant 10.0 : f32
      %r:2 = scf.for %i = %lo to %n step %one iter_args(%x = %x0, %y = %y0) -> (f32, f32) {
        %c = arith.cmpi eq, %i, %lo : index
        %s = scf.if %c -> (f32) {
          %t = arith.addf %x, %x : f32
          scf.yield %t : f32
        } else {
          scf.yield %x : f32
        }
        scf.yield %y, %s : f32, f32
      }
      %d = arith.subf %r#0, %r#1 : f32
      func.return %d : f32
    }
"""


@needs_toolchain
def test_op_semantics_compiled(tmp_path: Path) -> None:
    pairs = [(1.0, 2.0), (2.0, 1.0), (1.0, 1.0), (math.nan, 1.0), (1.0, math.nan),
             (math.nan, math.nan), (0.0, -0.0), (-0.0, 0.0)]
    cpp = emit_module(_parse(_SEMANTICS_IR))
    cpp.includes.update({"cstdio", "limits"})
    lit = {1.0: "1.0f", 2.0: "2.0f", 0.0: "0.0f"}

    def c(v: float) -> str:
        if math.isnan(v):
            return "std::numeric_limits<float>::quiet_NaN()"
        return ("-" if math.copysign(1, v) < 0 else "") + lit[abs(v)]

    body = []
    for a, b in pairs:
        for p in _PREDICATES:
            body.append(f'std::printf("%d\\n", int(cmp_{p}({c(a)}, {c(b)})));')
        for f in ("maxf", "minf"):
            body.append(f'std::printf("%.9g\\n", double({f}({c(a)}, {c(b)})));')
    body.append('std::printf("%.9g\\n", double(swaps(3)));')
    src = tmp_path / "ops.cpp"
    src.write_text(cpp.text() + "int main() {\n  " + "\n  ".join(body) + "\n}\n")
    exe = tmp_path / "ops"
    subprocess.run([CXX, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", str(src),
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()

    want: list[str] = []
    for a, b in pairs:
        want += [str(int(_cmpf_reference(p, a, b))) for p in _PREDICATES]
        if math.isnan(a) or math.isnan(b):
            want += ["nan", "nan"]
        elif a == b == 0.0:  # maximumf(+0, -0) = +0, minimumf = -0, in either order
            want += ["0", "-0"]
        else:
            want += [f"{max(a, b):.9g}", f"{min(a, b):.9g}"]
    # (x, y): (1, 10) -> i=0: (10, 2) -> i=1: (2, 10) -> i=2: (10, 2); x - y = 8
    want.append("8")
    got = [g.lstrip("-") if g.lstrip("-") == "nan" else g for g in got]
    assert got == want


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_a_function_of_thousands_of_buffers_compiles_and_runs(tmp_path: Path) -> None:
    """The emitted C++ takes one parameter per buffer, as the JIT's functions do: C++
    sets no limit on their number (ctypes does, at 1024: the JIT calls through packed
    entries, issue 30), and g++ compiles and runs a function of 3,000 of them. The
    emitter's own work stays linear (finish_function once took 2 minutes here)."""
    from xdsl.dialects import arith, func, memref
    from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, MemRefType
    from xdsl.ir import Block, Region

    n = 1500
    ty = MemRefType(Float32Type(), [1])
    block = Block(arg_types=[ty] * (2 * n))
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    two = arith.ConstantOp(FloatAttr(2.0, Float32Type()))
    ops: list[object] = [zero, two]
    for i in range(n):  # out_i[0] = 2 * in_i[0]
        load = memref.LoadOp.get(block.args[i], [zero.result])
        mul = arith.MulfOp(load.res, two.result)
        ops += [load, mul, memref.StoreOp.get(mul.result, block.args[n + i], [zero.result])]
    block.add_ops([*ops, func.ReturnOp()])  # type: ignore[list-item]
    cpp = emit_module(ModuleOp([func.FuncOp("f", ([ty] * (2 * n), []), Region(block))]))
    cpp.includes.add("cstdio")
    args = ", ".join(f"buf + {i}" for i in range(2 * n))
    main = (f"int main() {{\n  static float buf[{2 * n}];\n"
            f"  for (int i = 0; i < {n}; ++i) buf[i] = float(i);\n  f({args});\n"
            f"  for (int i = 0; i < {n}; ++i) std::printf(\"%g\\n\", double(buf[{n} + i]));\n}}\n")
    src, exe = tmp_path / "many.cpp", tmp_path / "many"
    src.write_text(cpp.text() + main)
    assert cpp.text().count("const float* in") == n  # one parameter per buffer
    subprocess.run([CXX, "-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror", str(src), "-o",
                    str(exe)], check=True, capture_output=True, text=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert [float(v) for v in got.split()] == [2.0 * i for i in range(n)]
