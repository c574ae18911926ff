"""A JSON network as a standalone C++ training program: `main.cpp` + `CMakeLists.txt`.

`emit_network_program(spec, out_dir, solver)` builds what `Network` and `Trainer`
compile for `frame-run NET --data ...` -- the training function with its gradient
(`frontends/network/lower.py`) and the solver's update function
(the optimizer library's, `frame_mlir/optim/`) -- runs them through the shared pipeline to the `loops`
stage, translates them with the op-by-op emitter (`emitter.py`, the JIT's kernels) and
adds a `main()` that does what `tools/network_run.run_network` does around the JIT:

* the parameters, initialised as `lower.initial_values` does: numpy's
  `Generator(Philox(seed))` (its SeedSequence seeding and Philox-4x64-10, written out
  here) drawing `uniform(-r, r)` in double, rounded to float, in declaration order;
  fills for the rest;
* the training data: one `.npy` file per network input, in declaration order, checked
  and converted as `frontends/network/data.py` checks a `.npz` (float inputs -> float32,
  int inputs -> int32, labels in range); without files, the random batch of
  `frame-run NET --benchmark` (`data.random_feed`: one `std::mt19937(seed mod 2^32)`);
* each epoch in the DataLoader order (`runtime/shuffle.py`: libstdc++'s `std::shuffle`
  by `std::mt19937_64(seed ^ epoch)`, written out so any standard library gives it),
  the full batches gathered into staging buffers, the gradient function, the objective
  (Σ loss_weight · Σ elements, in double, summed in numpy's pairwise order), the
  solver's hyperparameters of step t (computed in double, rounded to float, as
  `SGD.hyper` / `Adam.hyper`), the update function;
* the lines frame-run prints: `epoch N loss V` (numpy's mean of the epoch's
  objectives) and `final_loss V`, V as Python's `f"{v:.9g}"`; notes and timing go to
  stderr;
* a command line: `--epochs N` (default 1) or `--steps N` (N steps in all, the last
  epoch cut short), `--save-weights FILE.dlp` (the bytes `Network.save_weights`
  writes) and `--help`. Usage errors are `EMIT-002` (exit 2), data that does not fit
  `NPY-001` (exit 1), a file that cannot be written `IO-001` (exit 1).

`frame-run NET --data DIR` reads the same `.npy` files (`DIR/<input>.npy`), so the two
print the same bytes. The kernels run on the thread count the program was emitted with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import Float32Type

from frame_mlir.backend.cpp.cmake import cmake_lists
from frame_mlir.backend.cpp.emitter import (
    CppEmitError,
    CppModule,
    c_string,
    comment_text,
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
from frame_mlir.frontends.network.lower import BuiltFunction, build_function, label_classes
from frame_mlir.frontends.network.model import update_config
from frame_mlir.optim import build_update_function, state_names
from frame_mlir.passes.pipeline import run_pipeline, vector_lanes
from frame_mlir.runtime.executable import ArgInfo, FunctionSignature, signatures

if TYPE_CHECKING:
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.network.loader import NetworkSpec
    from frame_mlir.frontends.network.model import SGD, Adam

__all__ = ["NetworkLoops", "emit_network_program", "generate_network_program",
           "lower_network_to_loops", "network_usage_text"]

_F32 = Float32Type()


@dataclass(frozen=True)
class NetworkLoops:
    """A network's training functions lowered to the `loops` stage."""

    module: builtin.ModuleOp
    signatures: dict[str, FunctionSignature]
    built: BuiltFunction  # the training function: roles, outputs, stats, parameters
    grad: str  # IR names of the gradient and update functions
    update: str


def lower_network_to_loops(spec: NetworkSpec, solver_kind: str,
                           options: CompileOptions | None = None) -> NetworkLoops:
    """The training function, its gradient and the `solver_kind` update function, in
    one module, through the shared pipeline up to `loops` (the JIT compiles the same
    functions with the same options, in two modules: the kernels are per function)."""
    from frame_mlir.compile_options import CompileOptions

    built = build_function(spec, "train")
    if not built.has_loss:
        raise ValueError(f"{spec.source}: the network has no loss output (an output whose "
                         "name starts with 'loss', or one given with a loss_weight): there "
                         "is nothing to train")
    name = built.fn.sym_name.data
    trainable = [(p.name, p.shape) for p in built.params if p.trainable]
    if not trainable:
        raise ValueError(f"{spec.source}: the network has no trainable parameter")
    update = f"{name}_{solver_kind}"
    module = builtin.ModuleOp([built.fn, build_update_function(
        update, update_config(solver_kind), trainable)])
    # The program has no profiler runtime to call (FRAME_PROFILE is the JIT's).
    options = replace(options or CompileOptions(), profile=False)
    run_pipeline(module, None, stop_after="loops", options=options)
    return NetworkLoops(module, signatures(module), built, f"{name}_grad", update)


def _f32(value: float) -> str:
    return float_literal(value, _F32)


def _f64(value: float) -> str:
    """A double literal that is exactly `value` (C++17 hexadecimal floating literal)."""
    if math.isnan(value) or math.isinf(value):
        raise CppEmitError(f"non-finite solver or initialisation value {value!r}")
    return value.hex()


_NETWORK_SUPPORT = r"""
// Python's f"{v:.9g}" of a double (what frame-run prints): printf's %.9g, except that
// every NaN prints as "nan" (printf may say "-nan").
static void frame_print_double(double v, std::FILE* out = stdout) {
  if (std::isnan(v)) {
    std::fputs("nan", out);
  } else {
    std::fprintf(out, "%.9g", v);
  }
}

// numpy's pairwise sum of doubles (np.sum, np.mean: 8 running sums below 128 values,
// halves above), so the objective and the epoch's mean round as frame-run's do.
static double frame_pairwise_sum(const double* a, std::size_t n) {
  if (n < 8) {
    double r = 0.0;
    for (std::size_t i = 0; i < n; ++i) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k];
    std::size_t i = 8;
    for (; i < n - n % 8; i += 8) {
      for (int k = 0; k < 8; ++k) r[k] += a[i + k];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return frame_pairwise_sum(a, n2) + frame_pairwise_sum(a + n2, n - n2);
}

// np.sum(x, dtype=np.float64) of a float32 buffer.
static double frame_sum_f32(const float* x, std::size_t n, std::vector<double>& scratch) {
  scratch.assign(x, x + n);
  return frame_pairwise_sum(scratch.data(), n);
}

// The high and low 64 bits of a * b (portable: no 128-bit type needed).
static void frame_mulhilo64(std::uint64_t a, std::uint64_t b, std::uint64_t* hi,
                            std::uint64_t* lo) {
  const std::uint64_t m = 0xffffffffu;
  const std::uint64_t p0 = (a & m) * (b & m), p1 = (a & m) * (b >> 32);
  const std::uint64_t p2 = (a >> 32) * (b & m), p3 = (a >> 32) * (b >> 32);
  const std::uint64_t mid = (p0 >> 32) + (p1 & m) + (p2 & m);
  *lo = (p0 & m) | (mid << 32);
  *hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

// numpy.random.Generator(numpy.random.Philox(seed)): the key from SeedSequence(seed)
// (its hash mixing of the seed's 32-bit words into a pool of 4, then
// generate_state(2, uint64)), a zero counter, Philox-4x64-10, four outputs per block.
struct FramePhilox {
  std::uint64_t ctr[4];
  std::uint64_t key[2];
  std::uint64_t buffer[4];
  int pos;
};

static std::uint32_t frame_hashmix(std::uint32_t value, std::uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= 0x931e8875u;
  value *= hash_const;
  value ^= value >> 16;
  return value;
}

static std::uint32_t frame_mix(std::uint32_t x, std::uint32_t y) {
  std::uint32_t r = 0xca01f9ddu * x - 0x4973f715u * y;
  r ^= r >> 16;
  return r;
}

static void frame_philox_seed(FramePhilox& g, std::uint64_t seed) {
  std::uint32_t entropy[2] = {0u, 0u};
  int n = 0;
  if (seed == 0) entropy[n++] = 0u;
  for (; seed != 0; seed >>= 32) entropy[n++] = static_cast<std::uint32_t>(seed);
  std::uint32_t pool[4];
  std::uint32_t hash_a = 0x43b0d7e5u;
  for (int i = 0; i < 4; ++i) pool[i] = frame_hashmix(i < n ? entropy[i] : 0u, hash_a);
  for (int src = 0; src < 4; ++src) {
    for (int dst = 0; dst < 4; ++dst) {
      if (src != dst) pool[dst] = frame_mix(pool[dst], frame_hashmix(pool[src], hash_a));
    }
  }
  std::uint32_t words[4];
  std::uint32_t hash_b = 0x8b51f9ddu;
  for (int i = 0; i < 4; ++i) {
    std::uint32_t v = pool[i] ^ hash_b;
    hash_b *= 0x58f38dedu;
    v *= hash_b;
    v ^= v >> 16;
    words[i] = v;
  }
  g.key[0] = words[0] | (static_cast<std::uint64_t>(words[1]) << 32);
  g.key[1] = words[2] | (static_cast<std::uint64_t>(words[3]) << 32);
  for (int i = 0; i < 4; ++i) g.ctr[i] = g.buffer[i] = 0;
  g.pos = 4;
}

static std::uint64_t frame_philox_next(FramePhilox& g) {
  if (g.pos < 4) return g.buffer[g.pos++];
  if (++g.ctr[0] == 0 && ++g.ctr[1] == 0 && ++g.ctr[2] == 0) ++g.ctr[3];
  std::uint64_t c[4] = {g.ctr[0], g.ctr[1], g.ctr[2], g.ctr[3]};
  std::uint64_t k[2] = {g.key[0], g.key[1]};
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += 0x9E3779B97F4A7C15ull;
      k[1] += 0xBB67AE8584CAA73Bull;
    }
    std::uint64_t hi0, lo0, hi1, lo1;
    frame_mulhilo64(0xD2E7470EE14C6C93ull, c[0], &hi0, &lo0);
    frame_mulhilo64(0xCA5A826395121157ull, c[2], &hi1, &lo1);
    const std::uint64_t next[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    for (int i = 0; i < 4; ++i) c[i] = next[i];
  }
  for (int i = 0; i < 4; ++i) g.buffer[i] = c[i];
  g.pos = 1;
  return g.buffer[0];
}

// Generator.uniform(-r, r) rounded to float32: low + (high - low) * next_double.
static void frame_philox_uniform(FramePhilox& g, float* dst, std::size_t n, double r) {
  const double low = -r, range = r - low;
  for (std::size_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(frame_philox_next(g) >> 11) *
                     (1.0 / 9007199254740992.0);
    dst[i] = static_cast<float>(low + range * u);
  }
}

// The DataLoader's epoch order (frame_mlir/runtime/shuffle.py): libstdc++'s std::shuffle
// by std::mt19937_64(seed ^ epoch), written out (Lemire's bounded draws, two swap
// positions per draw) so that every standard library gives the same order.
static std::uint64_t frame_bounded(std::mt19937_64& g, std::uint64_t n) {
  std::uint64_t hi, lo;
  frame_mulhilo64(g(), n, &hi, &lo);
  if (lo < n) {
    const std::uint64_t t = (0 - n) % n;
    while (lo < t) frame_mulhilo64(g(), n, &hi, &lo);
  }
  return hi;
}

static void frame_epoch_order(std::vector<std::int64_t>& a, std::uint64_t seed,
                              std::uint64_t epoch) {
  const std::uint64_t n = a.size();
  for (std::uint64_t i = 0; i < n; ++i) a[i] = static_cast<std::int64_t>(i);
  if (n == 0) return;
  std::mt19937_64 g(seed ^ epoch);
  if (UINT64_MAX / n >= n) {
    std::uint64_t i = 1;
    if (n % 2 == 0) {
      std::swap(a[1], a[frame_bounded(g, 2)]);
      i = 2;
    }
    for (; i < n; i += 2) {
      const std::uint64_t r = i + 1;
      const std::uint64_t x = frame_bounded(g, r * (r + 1));
      std::swap(a[i], a[x / (r + 1)]);
      std::swap(a[i + 1], a[x % (r + 1)]);
    }
  } else {
    for (std::uint64_t i = 1; i < n; ++i) std::swap(a[i], a[frame_bounded(g, i + 1)]);
  }
}

// One network input: its name, dtype, the shape of one sample, and the label checks of
// the losses reading it (each value in [0, bound) or equal to the ignored index).
struct FrameInput {
  const char* name;
  bool is_int;
  int rank;
  std::int64_t sample_shape[8];
  std::int64_t sample_size;
  std::int64_t classes;  // random labels: u % classes; 0: zeros (no loss reads it)
  int checks;
  std::int64_t bound[4];
  std::int64_t ignore[4];
  bool has_ignore[4];
};

// The command line: --epochs N | --steps N, --save-weights FILE.dlp, --help, files.
struct FrameNetArguments {
  std::int64_t epochs = 1;
  std::int64_t steps = 0;  // 0: --epochs decides
  std::string save_weights;
  std::vector<std::string> files;
};

static bool frame_count(const char* program, const std::string& name,
                        const std::string& value, std::int64_t& out) {
  // Decimal digits only, 1 .. 2^31 - 1.
  bool ok = !value.empty() && value.size() <= 10;
  for (const char c : value) ok = ok && c >= '0' && c <= '9';
  const long long n = ok ? std::stoll(value) : 0;
  if (n < 1 || n > 2147483647LL) {
    std::fprintf(stderr, "%s: error: EMIT-002 at %s: expected an integer in "
                 "[1, 2147483647], found '%s'\n", program, name.c_str(), value.c_str());
    return false;
  }
  out = n;
  return true;
}

// Reads argv into `args`. Returns -1 to go on and train, else the exit status: 0 after
// --help (the usage on stdout), 2 after a usage error (one line on stderr).
static int frame_net_parse_arguments(int argc, char** argv, const char* program,
                                     const char* usage, std::size_t inputs,
                                     FrameNetArguments& args) {
  bool epochs_given = false, only_files = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (only_files || arg.empty() || arg[0] != '-' || arg == "-") {
      args.files.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_files = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    std::string name = arg, value;
    bool has_value = false;
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name != "--epochs" && name != "--steps" && name != "--save-weights") {
      std::fprintf(stderr, "%s: error: EMIT-002 at %s: expected --epochs, --steps, "
                   "--save-weights, --help or a .npy file, found an unknown option "
                   "(try --help)\n", program, argv[i]);
      return 2;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: error: EMIT-002 at %s: expected a value, found none "
                     "(try --help)\n", program, name.c_str());
        return 2;
      }
      value = argv[++i];
    }
    if (name == "--epochs") {
      if (!frame_count(program, name, value, args.epochs)) return 2;
      epochs_given = true;
    } else if (name == "--steps") {
      if (!frame_count(program, name, value, args.steps)) return 2;
    } else if (value.size() < 5 || value.compare(value.size() - 4, 4, ".dlp") != 0) {
      std::fprintf(stderr, "%s: error: EMIT-002 at --save-weights: expected a file name "
                   "ending in .dlp, found '%s'\n", program, value.c_str());
      return 2;
    } else {
      args.save_weights = value;
    }
  }
  if (epochs_given && args.steps > 0) {
    std::fprintf(stderr, "%s: error: EMIT-002 at --steps: expected --epochs or --steps, "
                 "found both\n", program);
    return 2;
  }
  if (!args.files.empty() && args.files.size() != inputs) {
    std::fprintf(stderr, "%s: error: EMIT-002 at %s: expected %zu .npy files (one per "
                 "input, in order; none: random data), found %zu (try --help)\n", program,
                 args.files[0].c_str(), inputs, args.files.size());
    return 2;
  }
  return -1;
}

static bool frame_npy_error(const char* program, const std::string& path,
                            const std::string& expected, const std::string& found) {
  std::fprintf(stderr, "%s: error: NPY-001 at %s: expected %s, found %s\n", program,
               path.c_str(), expected.c_str(), found.c_str());
  return false;
}

// The value of `key` in a .npy header (a Python dict literal): the text after its colon.
static std::string frame_npy_field(const std::string& header, const char* key) {
  const std::size_t at = header.find(std::string("'") + key + "'");
  if (at == std::string::npos) return "";
  std::size_t p = header.find(':', at);
  if (p == std::string::npos) return "";
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  return header.substr(p);
}

// Reads one .npy array for `in` into `out` (float32 or int32 words), checking and
// converting it as frame-run's `--data` does (frontends/network/data.py: _convert).
static bool frame_read_npy(const char* program, const std::string& path,
                           const FrameInput& in, std::vector<std::uint32_t>& out,
                           std::int64_t& samples) {
  // A device, FIFO or directory is refused unread, as frame-run refuses it
  // (frame_mlir/fileio.py): a FIFO would block, /dev/zero never end.
  std::error_code status_error;
  const std::filesystem::file_type type = std::filesystem::status(path, status_error).type();
  if (!status_error && type != std::filesystem::file_type::regular) {
    using ft = std::filesystem::file_type;
    const char* found = type == ft::directory ? "a directory"
                        : type == ft::character ? "a character device"
                        : type == ft::block ? "a block device"
                        : type == ft::fifo ? "a FIFO"
                        : type == ft::socket ? "a socket" : "a file of unknown type";
    std::fprintf(stderr, "%s: error: IO-001 at %s: expected a regular file, found %s\n",
                 program, path.c_str(), found);
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: error: IO-001 at %s: %s\n", program, path.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::string bytes;
  char chunk[65536];
  for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;) {
    bytes.append(chunk, got);
  }
  std::fclose(f);
  const std::string what = "a .npy array for the input '" + std::string(in.name) + "'";
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0 ||
      bytes[6] < 1 || bytes[6] > 3) {
    return frame_npy_error(program, path, what + " (numpy.save)", "another kind of file");
  }
  std::size_t header_len, start;
  const unsigned char* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes[6] == 1) {
    header_len = b[8] | (b[9] << 8);
    start = 10;
  } else {
    if (bytes.size() < 12) return frame_npy_error(program, path, what, "a cut-off file");
    header_len = b[8] | (b[9] << 8) | (b[10] << 16) | (static_cast<std::size_t>(b[11]) << 24);
    start = 12;
  }
  if (start + header_len > bytes.size()) {
    return frame_npy_error(program, path, what, "a cut-off header");
  }
  const std::string header = bytes.substr(start, header_len);
  const std::string descr = frame_npy_field(header, "descr");
  const std::string order = frame_npy_field(header, "fortran_order");
  const std::string shape_text = frame_npy_field(header, "shape");
  if (descr.size() < 4 || descr[0] != '\'' || order.empty() || shape_text.empty() ||
      shape_text[0] != '(') {
    return frame_npy_error(program, path, what, "a header without descr, fortran_order "
                           "and shape");
  }
  const std::string dtype = descr.substr(1, descr.find('\'', 1) - 1);
  if (order.compare(0, 5, "False") != 0) {
    return frame_npy_error(program, path, "an array in C order", "fortran_order True "
                           "(save numpy.ascontiguousarray(a))");
  }
  std::vector<std::int64_t> shape;
  for (std::size_t p = 1; p < shape_text.size() && shape_text[p] != ')';) {
    if (shape_text[p] == ' ' || shape_text[p] == ',') {
      ++p;
      continue;
    }
    std::size_t used = 0;
    long long d = -1;
    try {
      d = std::stoll(shape_text.substr(p), &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || d < 0) return frame_npy_error(program, path, what, "a bad shape");
    shape.push_back(d);
    p += used;
  }
  // The element type: byte order, kind (f, i, u) and size.
  char order_char = dtype.empty() ? '?' : dtype[0];
  std::string kind_size = dtype.substr(1);
  if (order_char != '<' && order_char != '>' && order_char != '|' && order_char != '=') {
    order_char = '=';
    kind_size = dtype;
  }
  const char kind = kind_size.empty() ? '?' : kind_size[0];
  const int size = kind_size.size() == 2 ? kind_size[1] - '0' : 0;
  const bool known = (kind == 'f' && (size == 4 || size == 8)) ||
                     ((kind == 'i' || kind == 'u') &&
                      (size == 1 || size == 2 || size == 4 || size == 8));
  if (!known) {
    return frame_npy_error(program, path, std::string(in.is_int ? "an integer" :
                           "a floating-point or integer") + " array (float32, float64 or "
                           "an integer type) for the " + (in.is_int ? "int" : "float") +
                           " input '" + in.name + "'", "dtype '" + dtype + "'");
  }
  auto shape_str = [](const std::int64_t* d, std::size_t n) {
    std::string s = "[";
    for (std::size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + "]";
  };
  if (shape.empty()) {
    return frame_npy_error(program, path, "an array whose first axis counts samples, each "
                           "of shape " + shape_str(in.sample_shape, in.rank), "a scalar");
  }
  bool same = shape.size() == static_cast<std::size_t>(in.rank) + 1;
  for (int i = 0; same && i < in.rank; ++i) same = shape[i + 1] == in.sample_shape[i];
  if (!same) {
    return frame_npy_error(program, path, "samples of shape " +
                           shape_str(in.sample_shape, in.rank) + " for the input '" +
                           in.name + "'", "sample shape " +
                           shape_str(shape.data() + 1, shape.size() - 1));
  }
  samples = shape[0];
  const std::size_t count = static_cast<std::size_t>(samples * in.sample_size);
  if (bytes.size() - start - header_len < count * size) {
    return frame_npy_error(program, path, std::to_string(count) + " values", "fewer");
  }
  std::uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  const bool swap = size > 1 && ((order_char == '<' && first == 0) ||
                                 (order_char == '>' && first == 1));
  const unsigned char* data = b + start + header_len;
  out.resize(count);
  std::size_t bad = 0;
  std::string first_bad;
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char e[8];
    for (int k = 0; k < size; ++k) e[k] = data[i * size + (swap ? size - 1 - k : k)];
    double fv = 0.0;
    std::int64_t iv = 0;
    std::uint64_t uv = 0;
    bool is_signed = true;
    if (kind == 'f') {
      if (size == 4) {
        float v;
        std::memcpy(&v, e, 4);
        fv = v;
      } else {
        std::memcpy(&fv, e, 8);
      }
    } else if (kind == 'i') {
      if (size == 1) { std::int8_t v; std::memcpy(&v, e, 1); iv = v; }
      if (size == 2) { std::int16_t v; std::memcpy(&v, e, 2); iv = v; }
      if (size == 4) { std::int32_t v; std::memcpy(&v, e, 4); iv = v; }
      if (size == 8) { std::memcpy(&iv, e, 8); }
    } else {
      is_signed = false;
      if (size == 1) { std::uint8_t v; std::memcpy(&v, e, 1); uv = v; }
      if (size == 2) { std::uint16_t v; std::memcpy(&v, e, 2); uv = v; }
      if (size == 4) { std::uint32_t v; std::memcpy(&v, e, 4); uv = v; }
      if (size == 8) { std::memcpy(&uv, e, 8); }
    }
    if (!in.is_int) {
      // numpy's astype(float32): one rounding from the stored type.
      const float v = kind == 'f' ? static_cast<float>(fv)
                                  : is_signed ? static_cast<float>(iv)
                                              : static_cast<float>(uv);
      if (!std::isfinite(v)) ++bad;
      std::memcpy(&out[i], &v, 4);
      continue;
    }
    long long label;
    if (kind == 'f') {
      if (!std::isfinite(fv) || fv != std::trunc(fv)) {
        return frame_npy_error(program, path, "integral values for the int input '" +
                               std::string(in.name) + "'", "the value " +
                               std::to_string(fv) + " at element " + std::to_string(i));
      }
      label = fv < -3e9 ? -3000000000LL : fv > 3e9 ? 3000000000LL
                                                     : static_cast<long long>(fv);
    } else if (is_signed) {
      label = iv;
    } else {
      label = uv > 3000000000ull ? 3000000000LL : static_cast<long long>(uv);
    }
    if (label < INT32_MIN || label > INT32_MAX) {
      return frame_npy_error(program, path, "values in the int32 range for the input '" +
                             std::string(in.name) + "'", std::to_string(label) +
                             " at element " + std::to_string(i));
    }
    for (int c = 0; c < in.checks; ++c) {
      if ((label < 0 || label >= in.bound[c]) &&
          !(in.has_ignore[c] && label == in.ignore[c])) {
        return frame_npy_error(program, path, "labels in [0, " +
                               std::to_string(in.bound[c]) + ") for the input '" +
                               in.name + "'", std::to_string(label) + " at element " +
                               std::to_string(i));
      }
    }
    const std::int32_t v = static_cast<std::int32_t>(label);
    std::memcpy(&out[i], &v, 4);
  }
  if (bad > 0) {
    return frame_npy_error(program, path, "finite values for the float input '" +
                           std::string(in.name) + "'", std::to_string(bad) +
                           " non-finite value(s) (NaN, infinity, or beyond float32)");
  }
  return true;
}

// The training split: the files (one per input), or the random batch of frame-run
// --benchmark (data.random_feed: one std::mt19937(seed mod 2^32), input by input).
static bool frame_load_data(const char* program, const FrameInput* inputs, std::size_t n,
                            std::int64_t batch, const std::vector<std::string>& files,
                            std::uint32_t seed, std::vector<std::uint32_t>* data,
                            std::int64_t& samples) {
  if (files.empty()) {
    std::mt19937 engine(seed);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t count = static_cast<std::size_t>(batch * inputs[k].sample_size);
      data[k].assign(count, 0u);
      if (!inputs[k].is_int) {
        fill_uniform(engine, reinterpret_cast<float*>(data[k].data()), count, -1.0f, 1.0f);
      } else if (inputs[k].classes > 0) {
        for (std::size_t i = 0; i < count; ++i) {
          const std::uint32_t u = static_cast<std::uint32_t>(engine());
          const std::int32_t v = static_cast<std::int32_t>(u % inputs[k].classes);
          std::memcpy(&data[k][i], &v, 4);
        }
      }
    }
    samples = batch;
    return true;
  }
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t count = 0;
    if (!frame_read_npy(program, files[k], inputs[k], data[k], count)) return false;
    if (k > 0 && count != samples) {
      return frame_npy_error(program, files[k], std::to_string(samples) + " samples, as " +
                             files[0] + " holds", std::to_string(count));
    }
    samples = count;
  }
  if (samples < batch) {
    return frame_npy_error(program, files[0], "at least one batch of " +
                           std::to_string(batch) + " samples (the network's batch size)",
                           std::to_string(samples));
  }
  return true;
}

// Rows `order[first .. first + batch)` of a split, into a staging buffer.
static void frame_gather(void* dst, const std::vector<std::uint32_t>& src,
                         const std::vector<std::int64_t>& order, std::int64_t first,
                         std::int64_t batch, std::int64_t sample_size) {
  std::uint32_t* out = static_cast<std::uint32_t*>(dst);
  for (std::int64_t r = 0; r < batch; ++r) {
    std::memcpy(out + r * sample_size, src.data() + order[first + r] * sample_size,
                static_cast<std::size_t>(sample_size) * 4);
  }
}
"""


def network_usage_text(spec: NetworkSpec, program: str, solver: SGD | Adam, seed: int,
                       schedule: tuple[str, int, float] | None = None) -> str:
    """What the program prints for `--help`."""
    inputs = "\n".join(f"  {i.name}.npy {' ' * max(0, 18 - len(i.name))}"
                       f"{i.dtype} samples of shape {list(i.shape[1:])}"
                       for i in spec.inputs)
    files = " ".join(f"{i.name}.npy" for i in spec.inputs)
    rate = "" if schedule is None else (
        ", cosine schedule" if schedule[0] == "cosine"
        else f", schedule step:{schedule[1]}:{schedule[2]!r}")
    return f"""\
usage: {program} [--epochs N | --steps N] [--save-weights FILE.dlp] [--help] [{files}]

Trains the network `{spec.name}` as `frame-run NET --data DIR` does on the same
.npy files (DIR/<input>.npy; generated by frame-dslc --emit): prints
`epoch N loss V` per epoch (the mean of its steps' objectives), then `final_loss V`
(the last step's). Solver {solver.kind} ({_solver_text(solver)}{rate}),
seed {seed}. Without files: the random batch of `frame-run NET --benchmark`.

inputs (one .npy file each, in this order; the first axis counts samples):
{inputs}

options:
  --epochs N           passes over the training data (default 1)
  --steps N            train N steps in all instead (the last epoch may be cut short)
  --save-weights FILE  write the trained parameters to FILE, a dlprimitives .dlp file
                       (`frame-run NET --load-weights FILE` reads it)
  -h, --help           show this help and exit
"""


def _solver_text(solver: SGD | Adam) -> str:
    if solver.kind == "sgd":
        return (f"lr {solver.lr!r}, momentum {solver.momentum!r}, weight_decay "
                f"{solver.weight_decay!r}, semantics {solver.semantics}")
    return (f"lr {solver.lr!r}, beta1 {solver.beta1!r}, beta2 {solver.beta2!r}, eps "
            f"{solver.eps!r}, weight_decay {solver.weight_decay!r}")


class _NetworkMainWriter(MainWriterBase):
    """Builds the text of `main()` of a network's program."""

    def __init__(self, spec: NetworkSpec, loops: NetworkLoops, cpp: CppModule,
                 solver: SGD | Adam, seed: int,
                 schedule: tuple[str, int, float] | None) -> None:
        super().__init__(loops.signatures, cpp, {"fill_uniform", "frame_write_dlp"})
        self.spec = spec
        self.loops = loops
        self.solver = solver
        self.seed = seed
        self.schedule = schedule

    @staticmethod
    def _ctype(arg: ArgInfo) -> str:
        if arg.dtype == np.dtype(np.float32):
            return "float"
        if arg.dtype == np.dtype(np.int32):
            return "std::int32_t"
        raise CppEmitError(f"argument '{arg.name}': no host buffer type for {arg.dtype}")

    def _buffer(self, hint: str, arg: ArgInfo, init: str = "") -> str:
        name = self.names.fresh(hint)
        self.line(f"alignas(64) static {self._ctype(arg)} {name}"
                  f"[{size_expr(arg.shape)}]{init};")
        return name

    def write(self) -> str:  # noqa: C901 -- one straight-line main(), in program order
        spec, loops, solver = self.spec, self.loops, self.solver
        built = loops.built
        program = c_string(spec.name)
        grad_name, grad_sig = self.function(loops.grad)
        update_name, update_sig = self.function(loops.update)
        batch = spec.inputs[0].shape[0]
        n_inputs = len(spec.inputs)
        classes = label_classes(spec)
        # The host buffers bind to the arguments in order, as `Network._buffers` does.
        bound = [a for a in grad_sig.args if a.kind not in ("output", "arena")]
        if len(bound) != len(built.roles):
            raise CppEmitError(f"@{loops.grad}: {len(bound)} arguments for "
                               f"{len(built.roles)} host buffers")
        input_args = {r.name: a for r, a in zip(built.roles, bound, strict=True)
                      if r.kind == "input"}

        self.line("int main(int argc, char** argv) {", 0)
        usage = self.names.fresh("usage")
        self.line(f"static const char {usage}[] =")
        for text in network_usage_text(spec, spec.name, solver, self.seed,
                                       self.schedule).splitlines(keepends=True):
            self.line(c_string(text), 3)
        self.lines[-1] += ";"
        inputs = self.names.fresh("inputs")
        self.line("// The network's inputs: name, int?, sample rank and shape, sample size, "
                  "random")
        self.line("// label classes, then the label checks of the losses reading it.")
        self.line(f"static const FrameInput {inputs}[] = {{")
        for decl in spec.inputs:
            arg = input_args.get(decl.name)
            checks = list(arg.checks) if arg is not None else []
            if len(checks) > 4 or len(decl.shape) - 1 > 8:
                raise CppEmitError(f"input '{decl.name}': too many label checks or axes")
            pad = [0] * 4
            bounds = [b for _, b, _ in checks] + pad[len(checks):]
            ignores = [0 if g is None else g for _, _, g in checks] + pad[len(checks):]
            has = ["false" if g is None else "true" for _, _, g in checks] + \
                ["false"] * (4 - len(checks))
            sample = list(decl.shape[1:])
            self.line(f"{{{c_string(decl.name)}, {'true' if decl.dtype == 'int' else 'false'}"
                      f", {len(sample)}, {{{', '.join(map(str, sample)) or '0'}}}, "
                      f"{math.prod(sample)}, {classes.get(decl.name, 0)}, {len(checks)}, "
                      f"{{{', '.join(map(str, bounds))}}}, {{{', '.join(map(str, ignores))}}}, "
                      f"{{{', '.join(has)}}}}},", 2)
        self.line("};")
        args = self.names.fresh("args")
        status = self.names.fresh("status")
        self.line(f"FrameNetArguments {args};")
        self.line(f"const int {status} = frame_net_parse_arguments(argc, argv, {program}, "
                  f"{usage}, {n_inputs}, {args});")
        self.line(f"if ({status} >= 0) return {status};")
        self.line()

        data = self.names.fresh("data")
        samples = self.names.fresh("samples")
        self.line("// The training split: one .npy file per input, or the random batch.")
        self.line(f"std::vector<std::uint32_t> {data}[{n_inputs}];")
        self.line(f"std::int64_t {samples} = 0;")
        self.line(f"if (!frame_load_data({program}, {inputs}, {n_inputs}, {batch}, "
                  f"{args}.files, {self.seed % 2**32}u, {data}, {samples})) return 1;")
        self.line()

        # Parameters in declaration order, initialised as lower.initial_values does.
        self.line("// Parameters (and BatchNorm running statistics), updated in place. "
                  "Initial")
        self.line("// values: numpy's Generator(Philox(seed)).uniform(-r, r) in "
                  "declaration order.")
        params: dict[str, str] = {}
        shapes: dict[str, tuple[int, ...]] = {}
        for p in built.params:
            name = self.names.fresh(p.name)
            params[p.name] = name
            shapes[p.name] = p.shape
            self.line(f"alignas(64) static float {name}[{size_expr(p.shape)}];")
        philox = self.names.fresh("philox")
        self.line(f"FramePhilox {philox};")
        self.line(f"frame_philox_seed({philox}, {self.seed}ull);")
        for p in built.params:
            kind, v = p.init
            n = size_expr(p.shape)
            if kind == "uniform":
                self.line(f"frame_philox_uniform({philox}, {params[p.name]}, {n}, "
                          f"{_f64(float(v))});  // {comment_text(p.name)}: U(-{v!r}, {v!r})")
            else:
                self.line(f"std::fill({params[p.name]}, {params[p.name]} + {n}, "
                          f"{_f32(float(v))});  // {comment_text(p.name)}")
        self.line()

        # The gradient function's arguments: roles in order, then outputs and the arena.
        self.line("// Staging buffers of one batch, constants, the gradient function's "
                  "outputs.")
        staging: dict[str, str] = {}
        role_iter = iter(built.roles)
        grad_args: list[str] = []
        outputs: dict[int, str] = {}
        arena = self.names.fresh("arena")
        for a in grad_sig.args:
            if a.kind == "arena":
                grad_args.append(arena)
            elif a.kind == "output":
                assert a.result_index is not None
                outputs[a.result_index] = self._buffer(f"out{a.result_index}", a)
                grad_args.append(outputs[a.result_index])
            else:
                role = next(role_iter)
                if role.kind == "input":
                    staging[role.name] = self._buffer(f"batch_{role.name}", a)
                    grad_args.append(staging[role.name])
                elif role.kind == "param":
                    grad_args.append(params[role.name])
                else:
                    assert role.value is not None
                    values = np.asarray(role.value).reshape(-1)
                    items = [_f32(float(x)) if a.dtype == np.dtype(np.float32) else str(int(x))
                             for x in values]
                    grad_args.append(self._buffer("constant", a,
                                                  f" = {{{', '.join(items)}}}"))
        if next(role_iter, None) is not None:
            raise CppEmitError(f"@{loops.grad}: more roles than arguments")

        # The update function: parameters, gradients, states, hyperparameters.
        trainable = [p.name for p in built.params if p.trainable]
        first = len(built.outputs) + 1 + len(built.stats)
        self.line("// Solver state (zeros) and hyperparameters of the update function.")
        kinds = state_names(update_config(solver.kind))
        states = {k: [self.names.fresh(f"{p}_{k}") for p in trainable] for k in kinds}
        for k in kinds:
            for p, name in zip(trainable, states[k], strict=True):
                self.line(f"alignas(64) static float {name}[{size_expr(shapes[p])}];")
        n_hyper = len(solver.hyper(1))
        hyper = self.names.fresh("hyper")
        self.line(f"alignas(64) static float {hyper}[{n_hyper}];")
        update_bufs = [params[p] for p in trainable]
        update_bufs += [outputs[first + k] for k in range(len(trainable))]
        update_bufs += [name for k in kinds for name in states[k]]
        update_bufs += [f"&{hyper}[{i}]" for i in range(n_hyper)]
        it = iter(update_bufs)
        update_args = [arena if a.kind == "arena" else next(it) for a in update_sig.args]
        if next(it, None) is not None or any(a.kind == "output" for a in update_sig.args):
            raise CppEmitError(f"@{loops.update}: unexpected arguments")
        arena_size = max([grad_sig.arena_size, update_sig.arena_size, 64])
        self.line(f"alignas(64) static std::uint8_t {arena}[{arena_size}];")
        self.line()

        self._training(args, program, data, samples, staging, grad_name, grad_args,
                       update_name, update_args, outputs, hyper, batch)
        self._save_weights(args, program, params, shapes)
        self.line("return 0;")
        self.line("}", 0)
        return "\n".join(self.lines) + "\n"

    def _hyper_lines(self, hyper: str, lr: str, t: str) -> list[str]:
        """`SGD.hyper(t)` / `Adam.hyper(t)`: computed in double, stored as float."""
        s = self.solver
        if s.kind == "sgd":
            if s.semantics == "torch":
                values = [lr, _f64(s.momentum), _f64(s.weight_decay), "1.0"]
            else:
                values = [lr, _f64(s.momentum), "0.0", f"1.0 - {_f64(s.weight_decay)}"]
            return [f"{hyper}[{i}] = static_cast<float>({v});" for i, v in enumerate(values)]
        b1, b2 = _f64(s.beta1), _f64(s.beta2)
        values = [_f64(s.weight_decay), b1, f"1.0 - {b1}", b2, f"1.0 - {b2}",
                  f"{lr} / (1.0 - std::pow({b1}, static_cast<double>({t})))",
                  f"std::sqrt(1.0 - std::pow({b2}, static_cast<double>({t})))", _f64(s.eps)]
        return [f"{hyper}[{i}] = static_cast<float>({v});" for i, v in enumerate(values)]

    def _training(self, args: str, program: str, data: str, samples: str,
                  staging: dict[str, str], grad_name: str, grad_args: list[str],
                  update_name: str, update_args: list[str], outputs: dict[int, str],
                  hyper: str, batch: int) -> None:
        spec, built = self.spec, self.loops.built
        n = self.names.fresh
        per_epoch, total, epochs, order = n("per_epoch"), n("total"), n("epochs"), n("order")
        losses, scratch, final, t = n("losses"), n("scratch"), n("final_loss"), n("t")
        epoch, b, lr, objective, start = n("epoch"), n("b"), n("lr"), n("objective"), n("start")
        seconds = n("seconds")
        self.line(f"// Training, as frame-run NET --data: each epoch in the DataLoader order "
                  f"(seed {self.seed}),")
        self.line("// full batches only; the objective is computed before each step's "
                  "update.")
        self.line(f"const std::int64_t {per_epoch} = {samples} / {batch};")
        self.line(f"if ({samples} % {batch} != 0) {{")
        self.line(f'std::fprintf(stderr, "%s: note: %lld of %lld training samples form no '
                  f'full batch and are dropped each epoch\\n", {program}, '
                  f"static_cast<long long>({samples} % {batch}), "
                  f"static_cast<long long>({samples}));", 2)
        self.line("}")
        self.line(f"const std::int64_t {total} = {args}.steps > 0 ? {args}.steps : "
                  f"{args}.epochs * {per_epoch};")
        self.line(f"const std::int64_t {epochs} = ({total} + {per_epoch} - 1) / {per_epoch};")
        self.line(f"std::vector<std::int64_t> {order}(static_cast<std::size_t>({samples}));")
        self.line(f"std::vector<double> {losses}, {scratch};")
        self.line(f"double {final} = NAN;")
        self.line(f"std::int64_t {t} = 0;  // steps done (Adam's bias corrections count "
                  "them)")
        self.line(f"const auto {start} = std::chrono::steady_clock::now();")
        self.line(f"for (std::int64_t {epoch} = 0; {epoch} < {epochs}; ++{epoch}) {{")
        self.line(f"frame_epoch_order({order}, {self.seed}ull, "
                  f"static_cast<std::uint64_t>({epoch}));", 2)
        self.line(f"{losses}.clear();", 2)
        self.line(f"for (std::int64_t {b} = 0; {b} < {per_epoch} && {t} < {total}; "
                  f"++{b}) {{", 2)
        for k, decl in enumerate(spec.inputs):
            if decl.name not in staging:  # an input no function argument reads
                continue
            self.line(f"frame_gather({staging[decl.name]}, {data}[{k}], {order}, {b} * "
                      f"{batch}, {batch}, {math.prod(decl.shape[1:])});", 3)
        self.line(f"{grad_name}({', '.join(grad_args)});", 3)
        self.line(f"double {objective} = 0.0;  // Σ loss_weight · Σ elements (Network."
                  "objective)", 3)
        for o in spec.losses:
            if o.loss_weight is None:
                continue
            index = built.outputs.index(o.name)
            grad_sig = self.loops.signatures[self.loops.grad]
            out_arg = next(a for a in grad_sig.args
                           if a.kind == "output" and a.result_index == index)
            self.line(f"{objective} += {_f64(float(o.loss_weight))} * frame_sum_f32("
                      f"{outputs[index]}, {size_expr(out_arg.shape)}, {scratch});  "
                      f"// {comment_text(o.name)}", 3)
        self.line(f"++{t};", 3)
        self.line(f"const double {lr} = {self._lr_expr(epoch, t, total)};", 3)
        for text in self._hyper_lines(hyper, lr, t):
            self.line(text, 3)
        self.line(f"{update_name}({', '.join(update_args)});", 3)
        self.line(f"{losses}.push_back({objective});", 3)
        self.line("}", 2)
        self.line(f"{final} = {losses}.back();", 2)
        self.line(f'std::printf("epoch %lld loss ", static_cast<long long>({epoch} + 1));', 2)
        self.line(f"frame_print_double(frame_pairwise_sum({losses}.data(), {losses}.size()) /"
                  f" static_cast<double>({losses}.size()));", 2)
        self.line('std::fputs("\\n", stdout);', 2)
        self.line("std::fflush(stdout);", 2)
        self.line("}")
        self.line(f"const std::chrono::duration<double> {seconds} = "
                  f"std::chrono::steady_clock::now() - {start};")
        self.line('std::fputs("final_loss ", stdout);')
        self.line(f"frame_print_double({final});")
        self.line('std::fputs("\\n", stdout);')
        self.line("std::fflush(stdout);")
        self.line(f'std::fprintf(stderr, "%s: %lld steps in %.3f s (%.3f ms/step)\\n", '
                  f"{program}, static_cast<long long>({t}), {seconds}.count(), "
                  f"{t} > 0 ? {seconds}.count() * 1000.0 / static_cast<double>({t}) : 0.0);")
        self.line(f"if (!std::isfinite({final})) {{")
        self.line(f'std::fputs("{spec.name}: warning: training diverged: the last loss is ", '
                  "stderr);", 2)
        self.line(f"frame_print_double({final}, stderr);", 2)
        self.line('std::fputs(" (the learning rate may be too large)\\n", stderr);', 2)
        self.line("}")

    def _lr_expr(self, epoch: str, t: str, total: str) -> str:
        """`network_run.scheduled_lr` of the step just counted (t - 1, 0-based)."""
        base = _f64(self.solver.lr)
        if self.schedule is None:
            return base
        kind, every, gamma = self.schedule
        if kind == "step":
            return (f"{base} * std::pow({_f64(gamma)}, static_cast<double>({epoch} / "
                    f"{every}))")
        pi = _f64(math.pi)
        return (f"{base} * 0.5 * (1.0 + std::cos({pi} * static_cast<double>({t} - 1) / "
                f"static_cast<double>({total} > 1 ? {total} : 1)))")

    def _save_weights(self, args: str, program: str, params: dict[str, str],
                      shapes: dict[str, tuple[int, ...]]) -> None:
        """`--save-weights FILE.dlp`: every parameter, as `Network.save_weights` writes."""
        header, order = tensors_dlp_header(shapes)
        tensors, sizes = self.names.fresh("tensors"), self.names.fresh("sizes")
        self.line(f"if (!{args}.save_weights.empty()) {{  // --save-weights FILE.dlp")
        self.line(f"const float* const {tensors}[] = "
                  f"{{{', '.join(params[n] for n in order)}}};", 2)
        self.line(f"const std::size_t {sizes}[] = "
                  f"{{{', '.join(size_expr(shapes[n]) for n in order)}}};", 2)
        self.line(f"if (!frame_write_dlp({args}.save_weights, {c_string(header)}, "
                  f"{len(header.encode('utf-8'))}u, {tensors}, {sizes}, {len(order)})) {{", 2)
        self.line(f'std::fprintf(stderr, "%s: error: IO-001 at %s: cannot write the weights: '
                  f'%s\\n", {program}, {args}.save_weights.c_str(), std::strerror(errno));', 3)
        self.line("return 1;", 3)
        self.line("}", 2)
        self.line("}")


def _check_inputs(spec: NetworkSpec) -> None:
    sizes = {i.shape[0] if i.shape else 0 for i in spec.inputs}
    if not spec.inputs or len(sizes) != 1 or 0 in sizes or min(sizes) < 1:
        decl = "; ".join(f"{i.name} {list(i.shape)}" for i in spec.inputs) or "no inputs"
        raise ValueError(f"{spec.source}: a program needs inputs that share a batch size "
                         f"(their first axis), found {decl}")


def generate_network_program(spec: NetworkSpec, loops: NetworkLoops, solver: SGD | Adam,
                             seed: int = 0,
                             schedule: tuple[str, int, float] | None = None,
                             options: CompileOptions | None = None) -> str:
    """The text of `main.cpp` for `spec` lowered to `loops` (`options`: those it was
    lowered with, for the vector width check)."""
    cpp = emit_module(loops.module)
    assert cpp.vector_bits <= 32 * vector_lanes(options), (
        f"kernels use {cpp.vector_bits}-bit vectors, wider than the chosen "
        f"{32 * vector_lanes(options)}")
    cpp.includes.update({"algorithm", "cerrno", "chrono", "cmath", "cstddef", "cstdint",
                         "cstdio", "cstring", "filesystem", "random", "string", "system_error",
                         "vector"})
    main_text = _NetworkMainWriter(spec, loops, cpp, solver, seed, schedule).write()
    header = f"""\
// Generated by frame-dslc --emit from the JSON network `{spec.name}`: a standalone
// C++17 program that trains it as `frame-run NET --data DIR` does. Do not edit;
// regenerate from the network.
//
// Every function below is translated op by op from the pipeline's `loops` stage
// (`frame-run NET --emit-stage=loops`): @{loops.grad} is the forward and backward pass,
// @{loops.update} the solver's update. main() reads the data, initialises the
// parameters and trains.
"""
    return header + "\n" + cpp.text() + RANDOM_SUPPORT + DLP_SUPPORT + _NETWORK_SUPPORT + \
        "\n" + main_text


def emit_network_program(spec: NetworkSpec, out_dir: Path, solver: SGD | Adam, *,
                         seed: int = 0, schedule: tuple[str, int, float] | None = None,
                         options: CompileOptions | None = None) -> list[Path]:
    """Write `out_dir/main.cpp` and `out_dir/CMakeLists.txt` for training `spec` with
    `solver` (`frame_mlir.network.SGD` or `Adam`), `seed` (the initial parameters, the
    shuffle, the random data) and `schedule` (as frame-run's `--schedule`); returns the
    paths. Build: `cmake -S DIR -B DIR/build && cmake --build DIR/build`."""
    _check_inputs(spec)
    solver.check()
    out_dir = prepare_out_dir(out_dir)
    loops = lower_network_to_loops(spec, solver.kind, options)
    main_cpp = out_dir / "main.cpp"
    main_cpp.write_text(generate_network_program(spec, loops, solver, seed, schedule,
                                                 options))
    cmake = out_dir / "CMakeLists.txt"
    cmake.write_text(cmake_lists(spec.name, vector_bits=32 * vector_lanes(options)))
    return [main_cpp, cmake]

