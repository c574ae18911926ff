"""A spec as a standalone C++ training program: `main.cpp` + `CMakeLists.txt`.

`emit_program(spec, out_dir)` lowers the spec through the shared pipeline to the `loops`
stage, translates every function with the op-by-op emitter (`emitter.py`) and adds a
`main()` that does what `frame_mlir.frontends.spec.trainer.train` does around the JIT:

* buffers for the data input, the target, the parameters, the loss, the prediction and
  one `alignas(64)` byte arena of the size the IR asks for (the static memory plan);
* initial values from the project random source (`frame_mlir/runtime/random.py`, the
  single definition): one `std::mt19937(seed)`, the float mapping written out in float
  arithmetic, drawn in the order data input -> target -> each layer's weight then bias;
  inline data baked in as constants;
* the training loop calling `@<model>_train_step`, printing what frame-run prints
  (`step N loss V` every `log_every`-th step from 0 and at the last, `final_loss V`,
  V as Python's `f"{v:.9g}"`), then the predictions block of `@<model>_predict`;
  the loop's wall time goes to stderr (`train_seconds S`) so stdout stays identical;
* a command line: `--steps N` (instead of `training.steps`; 1..2^31-1, as the spec's
  rule FE-000 says), `--save-weights FILE` (the trained parameters as a dlprimitives
  `.dlp` file, the format `frame_mlir/frontends/network/weights.py` reads and writes, so
  `frame-run SPEC --load-weights FILE` loads it; written after the predictions) and
  `--help`. A bad argument is a one-line error on stderr and exit status 2; a file that
  cannot be written, exit status 1.

Kernels split over threads (`frame_rt.parallel_for`, see frame-parallelize) run on a
`std::thread` pool (`thread_pool.py`) with the thread count the program was emitted
with (`frame-dslc --emit --threads N`, default the emitting host's); the output is the
same bits for every count. The program needs only the C++17 standard library (and the
platform's threads); `frame-dslc --emit SPEC --out DIR` calls `emit_program`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import Float32Type, ModuleOp

from frame_mlir.backend.cpp.cmake import cmake_lists
from frame_mlir.backend.cpp.emitter import (
    CppEmitError,
    CppModule,
    c_string,
    comment_text,
    cpp_identifier,
    emit_module,
    float_literal,
)
from frame_mlir.backend.cpp.program_support import (
    DLP_SUPPORT,
    RANDOM_SUPPORT,
    MainWriterBase,
    prepare_out_dir,
    size_expr,
    tensors_dlp_header,
)
from frame_mlir.frontends.spec.lower import LoweredModel, lower_spec
from frame_mlir.frontends.spec.spec import InlineInit, ModelSpec, TensorInit, UniformInit
from frame_mlir.passes.pipeline import CompileOptions, run_pipeline, vector_lanes
from frame_mlir.runtime.executable import FunctionSignature, signatures

__all__ = [
    "InitStep",
    "LoopsModule",
    "DLP_SUPPORT",
    "PRINT_SUPPORT",
    "RANDOM_SUPPORT",
    "dlp_header",
    "emit_program",
    "generate_program",
    "initial_value_plan",
    "lower_to_loops",
    "prepare_out_dir",
    "size_expr",
    "tensors_dlp_header",
    "usage_text",
]

_F32 = Float32Type()


@dataclass(frozen=True)
class LoopsModule:
    """A spec lowered to the `loops` stage, with the ABI read there."""

    module: ModuleOp
    signatures: dict[str, FunctionSignature]
    lowered: LoweredModel


def lower_to_loops(spec: ModelSpec, options: CompileOptions | None = None) -> LoopsModule:
    """Run the shared pipeline up to `loops` and read the functions' signatures there,
    as the JIT does: kernels of that stage (frame-gemm) may add scratch to the arena.
    `options.threads` is baked into the program (default: the host's, as for the JIT)."""
    from dataclasses import replace

    from frame_mlir.compile_options import CompileOptions

    lowered = lower_spec(spec)
    # The program has no profiler runtime to call (FRAME_PROFILE is the JIT's).
    options = replace(options or CompileOptions(), profile=False)
    run_pipeline(lowered.module, spec.optimizer.learning_rate, stop_after="loops",
                 options=options)
    return LoopsModule(lowered.module, signatures(lowered.module), lowered)


@dataclass(frozen=True)
class InitStep:
    """How one host buffer gets its initial value, in draw order."""

    buffer: str  # the buffer's key: a data input name, "target", or a parameter name
    shape: tuple[int, ...]
    init: TensorInit
    role: str  # for the comment: "data input", "target", "weight", "bias"


def initial_value_plan(spec: ModelSpec) -> list[InitStep]:
    """The initial tensors in the order `initial_values.generate_initial_values` draws them."""
    plan = [InitStep(inp.name, inp.shape, spec.data.inputs[inp.name], "data input")
            for inp in spec.inputs]
    plan.append(InitStep("target", spec.loss.target_shape, spec.data.target, "target"))
    w_lo, w_hi = spec.data.weight_range
    b_lo, b_hi = spec.data.bias_range
    for layer in spec.layers:
        plan.append(InitStep(layer.weight_name, layer.weight_shape,
                             UniformInit(w_lo, w_hi), "weight"))
        if layer.bias_shape is not None:
            plan.append(InitStep(layer.bias_name, layer.bias_shape,
                                 UniformInit(b_lo, b_hi), "bias"))
    return plan


def _f32(value: float) -> str:
    return float_literal(value, _F32)


def _array_initialiser(values: Sequence[float], indent: str, per_line: int = 8) -> str:
    items = [_f32(float(v)) for v in np.asarray(values, dtype=np.float32)]
    rows = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n" + ",\n".join(indent + "    " + r for r in rows) + "}"


PRINT_SUPPORT = """\
// Python's f"{v:.9g}" of the float (what frame-run prints): printf's %.9g of the value
// as a double, except that every NaN prints as "nan" (printf may say "-nan").
static void print_value(float v, std::FILE* out = stdout) {
  if (std::isnan(v)) {
    std::fputs("nan", out);
  } else {
    std::fprintf(out, "%.9g", static_cast<double>(v));
  }
}

"""

_ARGUMENTS_SUPPORT = """\
// The command line: --steps N, --save-weights FILE (also --steps=N, --save-weights=FILE)
// and --help.
struct FrameArguments {
  std::int64_t steps = 0;    // set to the spec's training.steps before parsing
  std::string save_weights;  // empty: not asked for
};

// Reads argv into `args`. Returns -1 to go on and train, else the exit status: 0 after
// --help (the usage on stdout), 2 after a usage error (one line on stderr).
static int frame_parse_arguments(int argc, char** argv, const char* program,
                                 const char* usage, FrameArguments& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    std::string name = arg;
    std::string value;
    bool has_value = false;
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name != "--steps" && name != "--save-weights") {
      std::fprintf(stderr, "%s: error: unknown argument '%s' (try --help)\\n", program,
                   argv[i]);
      return 2;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: error: %s needs a value (try --help)\\n", program,
                     name.c_str());
        return 2;
      }
      value = argv[++i];
    }
    if (name == "--steps") {
      // Decimal digits only, 1 .. 2^31 - 1: the rule of the spec's training.steps.
      bool ok = !value.empty() && value.size() <= 10;
      for (const char c : value) ok = ok && c >= '0' && c <= '9';
      const long long n = ok ? std::stoll(value) : 0;
      if (n < 1 || n > 2147483647LL) {
        std::fprintf(stderr,
                     "%s: error: FE-000 at --steps: expected an integer in [1, 2147483647], "
                     "found '%s'\\n", program, value.c_str());
        return 2;
      }
      args.steps = n;
    } else if (value.empty()) {
      std::fprintf(stderr, "%s: error: --save-weights: expected a file name, found ''\\n",
                   program);
      return 2;
    } else {
      args.save_weights = value;
    }
  }
  return -1;
}

"""

#: What every v0 program holds beside its kernels and main().
_SUPPORT = RANDOM_SUPPORT + PRINT_SUPPORT + _ARGUMENTS_SUPPORT + DLP_SUPPORT


class _MainWriter(MainWriterBase):
    """Builds the text of `main()`."""

    def __init__(self, spec: ModelSpec, loops: LoopsModule, cpp: CppModule) -> None:
        super().__init__(loops.signatures, cpp,
                         {"fill_uniform", "print_value", "FrameArguments",
                          "frame_parse_arguments", "frame_write_dlp"})
        self.spec = spec
        self.loops = loops

    def call(self, ir_name: str, data: list[str], params: dict[str, str], output: str,
             arena: str) -> str:
        """The C++ call of a public function, binding its arguments the way
        `trainer.Session` binds numpy buffers: data inputs (then the target) by position,
        parameters by name."""
        cpp_name, sig = self.function(ir_name)
        args = []
        data_args = iter(data)
        for a in sig.args:
            if a.kind == "arena":
                args.append(arena)
            elif a.kind == "output":
                args.append(output)
            elif a.kind == "input":
                arg = next(data_args, None)
                if arg is None:
                    raise CppEmitError(f"@{ir_name}: no host buffer for input '{a.name}'")
                args.append(arg)
            elif a.name in params:
                args.append(params[a.name])
            else:
                raise CppEmitError(f"@{ir_name}: no host buffer for parameter '{a.name}'")
        return f"{cpp_name}({', '.join(args)});"

    def write(self) -> str:
        spec, loops = self.spec, self.loops
        name = loops.lowered.function
        step_fn = f"{name}_train_step"
        predict_fn = loops.lowered.predict_function
        plan = initial_value_plan(spec)
        _, step_sig = self.function(step_fn)
        (loss_arg,) = step_sig.of_kind("output")
        if loss_arg.shape != ():
            raise CppEmitError(f"@{step_fn}: the loss output has shape {list(loss_arg.shape)}")
        arena_size = max([s.arena_size for s in loops.signatures.values()] + [64])

        self.line("int main(int argc, char** argv) {", 0)
        program = c_string(spec.name)
        args = self.names.fresh("args")
        status = self.names.fresh("status")
        usage = self.names.fresh("usage")
        self.line("// The command line: --steps N, --save-weights FILE, --help (usage errors "
                  "exit 2).")
        self.line(f"static const char {usage}[] =")
        for text in usage_text(spec).splitlines(keepends=True):
            self.line(c_string(text), 3)
        self.lines[-1] += ";"
        self.line(f"FrameArguments {args};")
        self.line(f"{args}.steps = {spec.training.steps};  // training.steps of the spec")
        self.line(f"const int {status} = frame_parse_arguments(argc, argv, {program}, {usage}, "
                  f"{args});")
        self.line(f"if ({status} >= 0) return {status};")
        self.line()
        self.line("// Host buffers. The parameters are updated in place by the training "
                  "step; the")
        self.line("// arena holds every intermediate at the offsets the memory plan chose.")
        buffers: dict[int, str] = {}  # plan index -> C++ name
        for k, step in enumerate(plan):
            cname = self.names.fresh(step.buffer)
            buffers[k] = cname
            decl = f"alignas(64) static float {cname}[{size_expr(step.shape)}]"
            if isinstance(step.init, InlineInit):
                self.line(f"{decl} = {_array_initialiser(step.init.values, '  ')};")
            else:
                self.line(f"{decl};")
        arena = self.names.fresh("arena")
        self.line(f"alignas(64) static std::uint8_t {arena}[{arena_size}];")
        loss = self.names.fresh("loss")
        self.line(f"float {loss} = 0.0f;")
        _, psig = self.function(predict_fn)
        (pred_arg,) = psig.of_kind("output")
        prediction = self.names.fresh("prediction")
        self.line(f"alignas(64) static float {prediction}[{size_expr(pred_arg.shape)}];")
        # Data inputs (then the target) bind by position, parameters by name.
        data = [buffers[k] for k, st in enumerate(plan) if st.role == "data input"]
        data += [buffers[k] for k, st in enumerate(plan) if st.role == "target"]
        params = {st.buffer: buffers[k] for k, st in enumerate(plan)
                  if st.role not in ("data input", "target")}

        self.line()
        uniform = [s for s in plan if isinstance(s.init, UniformInit)]
        inline = [s for s in plan if isinstance(s.init, InlineInit)]
        if inline:
            self.line("// Inline data (no random draws): "
                      f"{comment_text(', '.join(s.buffer for s in inline))}.")
        if uniform:
            engine = self.names.fresh("engine")
            self.line("// Initial values: one std::mt19937(seed), drawn in the order data "
                      "input ->")
            self.line("// target -> each layer's weight then bias (runtime/random.py).")
            self.line(f"std::mt19937 {engine}({spec.training.seed}u);")
            for k, s in enumerate(plan):
                if not isinstance(s.init, UniformInit):
                    continue
                label = f"data input {s.buffer}" if s.role == "data input" else s.buffer
                self.line(f"fill_uniform({engine}, {buffers[k]}, "
                          f"{size_expr(s.shape)}, {_f32(s.init.lo)}, {_f32(s.init.hi)});"
                          f"  // {comment_text(label)}")
            self.line()

        steps = self.names.fresh("steps")
        step = self.names.fresh("step")
        start = self.names.fresh("start")
        seconds = self.names.fresh("seconds")
        every = spec.training.log_every
        logged = (f"{step} % {every} == 0 || {step} == {steps} - 1" if every > 0
                  else f"{step} == {steps} - 1")
        self.line(f"// Training: forward, backward and SGD update in @{step_fn}. Logs every "
                  f"{every}th step" if every > 0 else
                  f"// Training: forward, backward and SGD update in @{step_fn}. Logs")
        self.line("// and the last, like frame-run; the loss is the one before the step's "
                  "update.")
        self.line(f"const std::int64_t {steps} = {args}.steps;")
        diverged = self.names.fresh("diverged")
        diverged_loss = self.names.fresh("diverged_loss")
        self.line(f"std::int64_t {diverged} = -1;  // first step whose loss is not finite")
        self.line(f"float {diverged_loss} = 0.0f;")
        self.line(f"const auto {start} = std::chrono::steady_clock::now();")
        self.line(f"for (std::int64_t {step} = 0; {step} < {steps}; ++{step}) {{")
        self.line(self.call(step_fn, data, params, f"&{loss}", arena), 2)
        self.line(f"if ({diverged} < 0 && !std::isfinite({loss})) {{", 2)
        self.line(f"{diverged} = {step};", 3)
        self.line(f"{diverged_loss} = {loss};", 3)
        self.line("}", 2)
        self.line(f"if ({logged}) {{", 2)
        self.line(f'std::printf("step %lld loss ", static_cast<long long>({step}));', 3)
        self.line(f"print_value({loss});", 3)
        self.line('std::fputs("\\n", stdout);', 3)
        self.line("}", 2)
        self.line("}")
        self.line(f"const std::chrono::duration<double> {seconds} = "
                  f"std::chrono::steady_clock::now() - {start};")
        self.line('std::fputs("final_loss ", stdout);')
        self.line(f"print_value({loss});")
        self.line('std::fputs("\\n", stdout);')
        self.line(f"if ({diverged} >= 0) {{  // as frame-run warns")
        self.line(f'std::fputs("{spec.name}: warning: training diverged: the loss first became ", '
                  'stderr);', 2)
        self.line(f"print_value({diverged_loss}, stderr);", 2)
        self.line(f'std::fprintf(stderr, " at step %lld (learning_rate '
                  f'{spec.optimizer.learning_rate:g} may be too large)\\n", '
                  f"static_cast<long long>({diverged}));", 2)
        self.line("}")
        self.line()

        shape = pred_arg.shape
        rows = shape[0] if shape else 1
        cols = prod(shape[1:]) if shape else 1
        self.line("// Predictions of the trained model (layer "
                  f"{comment_text(spec.loss.prediction)}), as frame-run")
        self.line("// --print-predictions prints them: one row per line.")
        self.line(self.call(predict_fn, data, params, prediction, arena))
        # The name goes in as a %s argument: a `%` in it must not act as a directive.
        self.line(f'std::printf("predictions %s [{", ".join(str(d) for d in shape)}]\\n", '
                  f"{c_string(spec.loss.prediction)});")
        r, c = self.names.fresh("row"), self.names.fresh("col")
        self.line(f"for (int {r} = 0; {r} < {rows}; ++{r}) {{")
        self.line(f"for (int {c} = 0; {c} < {cols}; ++{c}) {{", 2)
        self.line(f'if ({c} > 0) std::fputs(" ", stdout);', 3)
        self.line(f"print_value({prediction}[{r} * {cols} + {c}]);", 3)
        self.line("}", 2)
        self.line('std::fputs("\\n", stdout);', 2)
        self.line("}")
        self._save_weights(args, program, params)
        self.line(f'std::fprintf(stderr, "train_seconds %.9f\\n", {seconds}.count());')
        self.line("return 0;")
        self.line("}", 0)
        return "\n".join(self.lines) + "\n"


    def _save_weights(self, args: str, program: str, params: dict[str, str]) -> None:
        """`--save-weights FILE`: the parameters as a .dlp file whose header (fixed by the
        spec) is written here, byte for byte what `save_weights` in
        frame_mlir/frontends/network/weights.py writes for the same tensors."""
        header, order = dlp_header(self.spec)
        tensors = self.names.fresh("tensors")
        sizes = self.names.fresh("sizes")
        self.line(f"if (!{args}.save_weights.empty()) {{  // --save-weights FILE")
        self.line(f"const float* const {tensors}[] = "
                  f"{{{', '.join(params[n] for n in order)}}};", 2)
        shapes = dict(zip(self.spec.param_names(), self.spec.param_shapes(), strict=True))
        self.line(f"const std::size_t {sizes}[] = "
                  f"{{{', '.join(size_expr(shapes[n]) for n in order)}}};", 2)
        self.line(f"if (!frame_write_dlp({args}.save_weights, {c_string(header)}, "
                  f"{len(header.encode('utf-8'))}u, {tensors}, {sizes}, {len(order)})) {{", 2)
        self.line(f'std::fprintf(stderr, "%s: error: IO-001 at %s: cannot write the weights: '
                  f'%s\\n", {program}, {args}.save_weights.c_str(), std::strerror(errno));', 3)
        self.line("return 1;", 3)
        self.line("}", 2)
        self.line("}")


def dlp_header(spec: ModelSpec) -> tuple[str, list[str]]:
    """The JSON header of the `.dlp` file holding `spec`'s parameters, and the parameter
    names in the file's order: name-sorted and packed, as `weights.save_weights` writes
    (`_dlp_bytes`), so the program's file and frame-run's are the same bytes."""
    return tensors_dlp_header(dict(zip(spec.param_names(), spec.param_shapes(), strict=True)))


def usage_text(spec: ModelSpec) -> str:
    """What the program prints for `--help`."""
    every = spec.training.log_every
    logs = (f"every {every}th step (from 0) and at the last" if every > 0
            else "at the last step")
    return f"""\
usage: {spec.name} [--steps N] [--save-weights FILE] [--help]

Trains the model `{spec.name}` as `frame-run SPEC --print-predictions` does
(generated by frame-dslc --emit): prints `step N loss V` {logs},
then `final_loss V` and the predictions of layer `{spec.loss.prediction}`; the
training time goes to stderr.

options:
  --steps N            train N steps instead of the spec's {spec.training.steps}
                       (1 <= N <= 2147483647)
  --save-weights FILE  write the trained parameters to FILE as a dlprimitives .dlp
                       weights file (`frame-run SPEC --load-weights FILE` reads it)
  -h, --help           show this help and exit
"""


def generate_program(spec: ModelSpec, loops: LoopsModule | None = None,
                     options: CompileOptions | None = None) -> str:
    """The text of `main.cpp` for `spec` (lowered here with `options` unless `loops` is
    given)."""
    loops = loops or lower_to_loops(spec, options)
    cpp = emit_module(loops.module)
    # The build prefers vectors of the width frame-gemm was given (emit_program); a
    # wider vector here would be split by compilers that tune for narrower ones.
    assert cpp.vector_bits <= 32 * vector_lanes(options), (
        f"kernels use {cpp.vector_bits}-bit vectors, wider than the chosen "
        f"{32 * vector_lanes(options)}")
    cpp.includes.update({"cerrno", "chrono", "cmath", "cstddef", "cstdint", "cstdio",
                         "cstring", "random", "string", "vector"})
    main_text = _MainWriter(spec, loops, cpp).write()
    header = f"""\
// Generated by frame-dslc --emit from the model spec `{spec.name}`: a standalone
// C++17 program that trains the model. Do not edit; regenerate from the spec.
//
// Every function below is translated op by op from the pipeline's `loops` stage
// (`frame-run SPEC --emit-stage=loops`; `v14` is `%14` there): the kernels
// `{cpp_identifier(spec.name)}_..._kN_<op>` are the outlined linalg ops, the public
// functions call them on views of one static arena. main() then trains as frame-run does.
"""
    return header + "\n" + cpp.text() + _SUPPORT + "\n" + main_text


def emit_program(spec: ModelSpec, out_dir: Path,
                 options: CompileOptions | None = None) -> list[Path]:
    """Write `out_dir/main.cpp` and `out_dir/CMakeLists.txt`; returns their paths.
    `options` as for the JIT (`threads`: how many threads the kernels run on).

    Build and run: `cmake -S DIR -B DIR/build && cmake --build DIR/build &&
    DIR/build/<model>`.
    """
    out_dir = prepare_out_dir(out_dir)
    loops = lower_to_loops(spec, options)
    main_cpp = out_dir / "main.cpp"
    main_cpp.write_text(generate_program(spec, loops, options))
    cmake = out_dir / "CMakeLists.txt"
    cmake.write_text(cmake_lists(spec.name, vector_bits=32 * vector_lanes(options)))
    return [main_cpp, cmake]
