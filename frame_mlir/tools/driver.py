"""What frame-run and frame-dslc share: load a spec (with the command line's overrides),
compile it, train, read and write the files of a run. The CUDA target's runs
(`cuda_run`) and the `--emit-stage` dumps of both targets (`stage_dump`) build on this
module, which imports neither.

The tools only parse arguments and call into here. For a schema-v0 spec:

* `--steps N`, `--lr LR`, `--log-every N` edit the spec document before it is validated,
  so they obey exactly the rules of the fields they replace (FE-000: `steps` in
  [1, 2^31-1], `learning_rate` > 0, finite and non-zero in float32, `log_every` in
  [0, 2^31-1]); a bad value is reported at the option (`FE-000 at --lr: ...`). The
  learning rate is baked into the compiled train step (the fused SGD update), so an
  override is a different compile-cache key and the same IR as the edited spec;
  `steps` and `log_every` are run-time values that share one compiled object.
* `--data FILE.npz` replaces the data input and the target (arrays named after the
  input and `target`); the parameters are still drawn as the spec says.
* `--load-weights FILE` / `--save-weights FILE`: `.npz`, `.onnx`, `.dlp` or `.h5`.
* `--plot FILE.png`: the loss of every step.

On a terminal a tqdm bar shows steps/s and the ETA, and a closing summary goes to
stderr; in a pipe or a file neither appears, and stdout is the same bytes either way.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import math
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from frame_mlir.frontends.common.errors import Diagnostic, SpecError
from frame_mlir.frontends.spec.spec import ModelSpec

if TYPE_CHECKING:  # xDSL loads only where IR is built: a cached run never needs it
    # numpy (~60 ms) only where arrays are read, written or joined: frame-run's and
    # frame-dslc's parsers are built from this module (--help, --check, usage errors).
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.network.loader import NetworkSpec
    from frame_mlir.frontends.spec.initial_values import InitialValues
    from frame_mlir.frontends.spec.trainer import CompiledSpec, Session
    from frame_mlir.runtime.progress import Progress


def ir_text(module: ModuleOp) -> str:
    """The module in custom MLIR syntax, as frame-opt prints it."""
    from xdsl.printer import Printer

    buf = io.StringIO()
    Printer(stream=buf).print_op(module)
    return buf.getvalue()


def format_loss(value: float) -> str:
    """Losses print with 9 significant digits: enough to round-trip a float32."""
    return f"{value:.9g}"


def print_ir_after_all_hook(out: TextIO):
    """An after-pass hook printing the module the way mlir-opt's flag does."""
    def hook(p: ModulePass, module: ModuleOp) -> None:
        out.write(f"// -----// IR Dump After {p.name} //----- //\n{ir_text(module)}\n\n")
    return hook


def format_predictions(spec: ModelSpec, values: np.ndarray) -> str:
    """The predictions block that frame-run and the emitted C++ program both print."""
    rows = [" ".join(format_loss(float(v)) for v in row) for row in values.reshape(
        values.shape[0], -1)]
    shape = ", ".join(str(d) for d in values.shape)
    return f"predictions {spec.loss.prediction} [{shape}]\n" + "".join(r + "\n" for r in rows)


# --------------------------------------------------------------------------- options


#: The v0 spec fields the command line can replace: option -> (section, field).
SPEC_OVERRIDES: dict[str, tuple[str, str]] = {
    "--steps": ("training", "steps"),
    "--lr": ("optimizer", "learning_rate"),
    "--log-every": ("training", "log_every"),
}

#: argparse destinations of the options a v0 training run reads (flags_given order).
OVERRIDE_FLAGS = ("steps", "lr", "log_every")
RUN_FILE_FLAGS = ("data", "load_weights", "save_weights", "plot")


def add_training_arguments(p: argparse.ArgumentParser, *, networks: bool) -> None:
    """The options of a training run that frame-run and frame-dslc --run share: the
    overrides of a v0 spec and the files of a run. With `networks`, the help also says
    what `--lr`, `--data` and the weights options mean for a JSON network."""
    g = p.add_argument_group(
        "training runs" + (" (--steps, --log-every: v0 specs only; --steps also: a "
                           "network's --benchmark)" if networks else ""))
    g.add_argument("--steps", metavar="N",
                   help="v0 spec: train N steps instead of training.steps (1..2^31-1)"
                   + ("; network with --benchmark: timed iterations (default 20)"
                      if networks else ""))
    g.add_argument("--lr", metavar="LR",
                   help="v0 spec: the learning rate instead of optimizer.learning_rate "
                   "(> 0, non-zero in float32)"
                   + ("; network: the solver's base rate (>= 0; default sgd 0.1, "
                      "adam 0.001)" if networks else ""))
    g.add_argument("--log-every", metavar="N",
                   help="v0 spec: log every N-th step instead of training.log_every "
                   "(0: the last step only)")
    g.add_argument("--data", metavar="FILE.npz" if not networks else "SOURCE",
                   help="v0 spec: FILE.npz with arrays named after the data input and "
                   "'target', replacing the spec's data"
                   + ("; network: FILE.npz (arrays named after the inputs), a folder of "
                      "<input>.npy files, or 'digits' (scikit-learn's 8x8 digits, 80/20 "
                      "split)" if networks else ""))
    g.add_argument("--load-weights", "--weights", dest="load_weights", metavar="FILE",
                   help="initial parameters from a weights file: .npz, .onnx (v0 specs), "
                   ".dlp or .h5 (--weights: the same)")
    g.add_argument("--save-weights", metavar="FILE",
                   help="write the trained parameters; the format follows the suffix: "
                   ".npz, .onnx (v0 specs), .dlp or .h5")
    g.add_argument("--plot", metavar="FILE.png",
                   help="write the loss curve as a PNG (needs matplotlib: "
                   "pip install 'frame-mlir[plot]')")


def flags_given(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """The options among argparse destinations `names` present on the command line."""
    return [f"--{n.replace('_', '-')}" for n in names if getattr(args, n, None) is not None]


def spec_overrides(args: argparse.Namespace) -> dict[str, str]:
    """`{"--steps": "10", ...}`: the v0 spec overrides given on the command line."""
    return {f"--{n.replace('_', '-')}": getattr(args, n) for n in OVERRIDE_FLAGS
            if getattr(args, n, None) is not None}


@dataclass(frozen=True)
class RunFiles:
    """The files a v0 training run reads or writes besides the spec (None: not asked)."""

    data: str | None = None
    load_weights: str | None = None
    save_weights: str | None = None
    plot: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunFiles:
        """The files named by `add_training_arguments`' options."""
        return cls(**{n: getattr(args, n, None) for n in RUN_FILE_FLAGS})


class OptionError(SpecError):
    """Diagnostics about command-line options and the files they name, with any of the
    spec's own found at the same time. An option's diagnostic prints without the spec's
    name in front (`FE-000 at --lr: expected ..., found ...`), since it is not in the
    spec; the spec's print as usual (`spec.json: FE-003 at /layers/1: ...`)."""

    def __init__(self, diagnostics: Sequence[Diagnostic],
                 spec_diagnostics: Sequence[Diagnostic] = (), source: str = "<spec>") -> None:
        self.option_diagnostics = list(diagnostics)
        self.spec_diagnostics = list(spec_diagnostics)
        super().__init__([*self.spec_diagnostics, *self.option_diagnostics], source)

    def __str__(self) -> str:
        lines = [f"{self.source}: {d}" for d in self.spec_diagnostics]
        return "\n".join(lines + [str(d) for d in self.option_diagnostics])


_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def option_value(text: str) -> Any:
    """The JSON value a command-line option's text stands for: `10` an integer, `0.05`
    or `1e-3` a number, anything else a string (which the schema then rejects with
    "expected integer, found string ..."), so that an override meets exactly the rules
    of the spec field it replaces."""
    try:
        if _INT_TEXT.fullmatch(text):
            return int(text)
        if _FLOAT_TEXT.fullmatch(text):
            return float(text)
    except ValueError:  # more digits than Python converts
        pass
    return text


def add_strict_argument(p: argparse.ArgumentParser) -> None:
    """`--strict`: a network's warnings are errors."""
    p.add_argument("--strict", action="store_true",
                   help="JSON networks: make the warnings about what the reference "
                   "accepts (NET-002 unknown option keys, NET-012 integer booleans) "
                   "errors; v0 specs are always strict")


def print_warning(tool: str, line: str) -> None:
    """`<tool>: warning: <line>` on stderr."""
    sys.stderr.write(f"{tool}: warning: {line}\n")
    sys.stderr.flush()


def load_model(path: str | Path, overrides: Mapping[str, str] | None = None, *,
               tool: str = "frame-run", strict: bool = False) -> ModelSpec | NetworkSpec:
    """Read and validate a v0 spec or a JSON network (`-`: standard input), as
    `frontend.detect.load_model` does, with a v0 spec's fields replaced first by
    `overrides` (option -> text, see `SPEC_OVERRIDES`; ignored for a network).

    A network's warnings (what the reference accepts: NET-002, NET-012) go to stderr
    as `<tool>: warning: <source>: <rule> at <pointer>: ...`; `strict` (`--strict`)
    makes them errors. v0 specs have no warnings.

    The overrides go into the document before validation, so they meet the very rules
    of the fields they replace, and the spec built is the one an edited file would give
    (the same compile-cache key, the same IR).

    Raises:
        SpecError: the spec's diagnostics; an `OptionError` when an override breaks a
            rule (its diagnostics are reported at the option: `FE-000 at --lr: ...`).
    """
    from frame_mlir.frontends.common.errors import make_pointer
    from frame_mlir.frontends.common.json_document import decode_document, read_document
    from frame_mlir.frontends.network.loader import is_network_document, load_network_doc
    from frame_mlir.frontends.spec.spec_v0 import spec_from_doc

    text, source = read_document(path)
    doc = decode_document(text, source, values=False)
    if is_network_document(doc):
        return load_network_doc(doc, source, path, strict=strict,
                                warn=lambda line: print_warning(tool, line))
    if not overrides:
        return spec_from_doc(doc, source)
    at: dict[str, str] = {}  # JSON pointer -> the option that wrote it
    early: list[Diagnostic] = []
    for option, raw in overrides.items():
        section, field = SPEC_OVERRIDES[option]
        value = option_value(raw)
        if isinstance(value, float) and not math.isfinite(value):  # `1e999`
            early.append(Diagnostic("FE-000", option, "a finite number", raw))
            continue
        node = doc.get(section) if isinstance(doc, dict) else None
        if isinstance(node, dict):  # else the spec's own diagnostic says what is wrong
            node[field] = value
            at[make_pointer((section, field))] = option
    try:
        spec = spec_from_doc(doc, source)
    except SpecError as e:
        mine = [d for d in e.diagnostics if d.pointer in at]
        theirs = [d for d in e.diagnostics if d.pointer not in at]
        mine = [dataclasses.replace(d, pointer=at[d.pointer]) for d in mine]
        raise OptionError(early + mine, theirs, source) from None
    if early:
        raise OptionError(early, (), source)
    return spec


# --------------------------------------------------------------------------- run files


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _names_text(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names) or "no arrays"


def _readable(path: str, option: str) -> Diagnostic | None:
    """IO-001 when `path` is not a readable regular file (None when it is): a device,
    FIFO or directory is refused before anything reads it (`fileio`)."""
    from frame_mlir.fileio import NotRegularFileError, check_regular_file

    try:
        check_regular_file(path)
        return None
    except NotRegularFileError as e:
        return Diagnostic("IO-001", path, "a regular file", e.found,
                          f"cannot read the {option} file: {e.strerror}")
    except FileNotFoundError:
        reason = "no such file"
    except OSError as e:
        reason = str(e.strerror or e)
    return Diagnostic("IO-001", path, "a readable file", reason,
                      f"cannot read the {option} file: {reason}")


def check_input_path(path: str, option: str) -> None:
    """Fail before a run when the file of `option` cannot be read: IO-001 for a missing
    file, and for a device, FIFO or directory (expected a regular file)."""
    bad = _readable(path, option)
    if bad is not None:
        raise OptionError([bad])


def load_data_file(path: str, spec: ModelSpec) -> dict[str, np.ndarray]:
    """`--data FILE.npz` for a v0 spec: `{input name: array, "target": array}`, float32,
    checked against the spec (array names, shapes, dtypes, finite values).

    The archive holds exactly one array named after the data input, shaped like it, and
    one named `target`, shaped like `loss.target_shape`; floating-point or integer
    arrays, stored as float32 (every value finite there).

    Raises:
        OptionError: IO-001 (the file cannot be read) or DATA-001 (not a .npz archive, a
            missing or unknown array, a wrong shape or dtype), every problem at once.
    """
    import zipfile

    import numpy as np

    bad = _readable(path, "--data")
    if bad is not None:
        raise OptionError([bad])
    want = {inp.name: (inp.shape, f"the data input '{inp.name}'") for inp in spec.inputs}
    want["target"] = (spec.loss.target_shape, f"the target of loss '{spec.loss.prediction}'")
    expected = f"a .npz archive (numpy.savez) of the arrays {_names_text(list(want))}"
    try:
        loaded = np.load(path, allow_pickle=False)
    except OSError as e:
        raise OptionError([Diagnostic("IO-001", path, "a readable file", str(e.strerror or e),
                                    f"cannot read the --data file: {e.strerror or e}")]
                          ) from None
    except (ValueError, EOFError, zipfile.BadZipFile) as e:
        # numpy tries a pickle last: its "allow_pickle" advice would mislead here
        why = "a file numpy cannot read" if "pickle" in str(e) else str(e)
        raise OptionError([Diagnostic("DATA-001", path, expected, why)]) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise OptionError([Diagnostic("DATA-001", path, expected,
                                    "a single .npy array (use numpy.savez)")])
    problems: list[Diagnostic] = []
    arrays: dict[str, np.ndarray] = {}
    with loaded as z:
        present = list(z.files)
        for name, (shape, what) in want.items():
            where = f"{path}:{name}"
            if name not in present:
                problems.append(Diagnostic(
                    "DATA-001", where, f"an array of shape {_shape_text(shape)} ({what})",
                    f"no such array (the file holds {_names_text(present)})"))
                continue
            try:
                a = z[name]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
                problems.append(Diagnostic("DATA-001", where, "a readable .npy array",
                                         f"an unreadable member ({e})"))
                continue
            if a.dtype.kind not in "fiu":
                problems.append(Diagnostic(
                    "DATA-001", where, "a floating-point or integer array (stored as "
                    "float32)", f"dtype {a.dtype}"))
                continue
            if a.shape != shape:
                problems.append(Diagnostic("DATA-001", where,
                                         f"shape {_shape_text(shape)} ({what})",
                                         _shape_text(a.shape)))
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                f32 = np.ascontiguousarray(a, dtype=np.float32)
            finite = np.isfinite(f32)
            if not finite.all():
                count = int(f32.size - np.count_nonzero(finite))
                problems.append(Diagnostic(
                    "DATA-001", where, "finite values in float32",
                    f"{count} non-finite value{'s' if count != 1 else ''} (NaN, infinity or "
                    "beyond the float32 range)"))
                continue
            arrays[name] = f32
        for name in present:
            if name not in want:
                problems.append(Diagnostic("DATA-001", f"{path}:{name}",
                                         f"only the arrays {_names_text(list(want))}",
                                         "an array the spec has no use for"))
    if problems:
        raise OptionError(problems)
    return arrays


#: Weights formats by suffix (the ONNX one is the Python API's, the others the JSON
#: network format's, frontends/network/weights.py).
WEIGHT_SUFFIXES = (".npz", ".onnx", ".dlp", ".h5", ".hdf5")


def _is_onnx(path: str) -> bool:
    return Path(path).suffix.lower() == ".onnx"


def load_weights_file(path: str, spec: ModelSpec) -> dict[str, np.ndarray]:
    """`--load-weights FILE` for a v0 spec: every parameter (`fc1.weight`, `fc1.bias`,
    ...) from a `.onnx` file (by its suffix) or a `.npz`, `.dlp` or HDF5 file (by its
    first bytes), checked against the spec's parameters.

    Raises:
        OptionError: IO-001 (cannot read) or WEIGHTS-001 (not a weights file, a missing,
            unknown or mis-shaped tensor, naming it, expected vs found), all at once.
    """
    bad = _readable(path, "--load-weights")
    if bad is not None:
        raise OptionError([bad])
    problems: list[Diagnostic] = []
    tensors: dict[str, np.ndarray] = {}
    if _is_onnx(path):
        import numpy as np

        from frame_mlir.frontends.api.onnx_weights import load_onnx_weights
        from frame_mlir.frontends.api.tensor import DType

        try:
            loaded = load_onnx_weights(path)
        except (KeyError, ValueError, RuntimeError, NotImplementedError) as e:
            reason = str(e.args[0] if isinstance(e, KeyError) and e.args else e)
            raise OptionError([Diagnostic("WEIGHTS-001", path, "an ONNX weights file",
                                        reason.removeprefix("load_onnx_weights: "))]) from None
        for name, t in loaded.items():
            if t.dtype != DType.float32:
                problems.append(Diagnostic("WEIGHTS-001", f"{path}:{name}", "a float32 tensor",
                                         f"dtype {t.dtype.name}"))
            else:
                tensors[name] = np.ascontiguousarray(t.numpy(), dtype=np.float32)
    else:
        from frame_mlir.frontends.network.weights import WeightsError, load_weights

        try:
            tensors = load_weights(path)
        except WeightsError as e:
            raise OptionError([Diagnostic("WEIGHTS-001", path, "a weights file", p, p)
                               for p in e.problems]) from None
    names = spec.param_names()
    for name, shape in zip(names, spec.param_shapes(), strict=True):
        where = f"{path}:{name}"
        if name not in tensors:
            if not any(p.pointer == where for p in problems):
                problems.append(Diagnostic(
                    "WEIGHTS-001", where, f"parameter '{name}' of shape {_shape_text(shape)}",
                    f"no such tensor (the file holds {_names_text(list(tensors))})"))
        elif tensors[name].shape != shape:
            problems.append(Diagnostic("WEIGHTS-001", where,
                                     f"shape {_shape_text(shape)} (parameter '{name}')",
                                     _shape_text(tensors[name].shape)))
    for name in tensors:
        if name not in names:
            problems.append(Diagnostic("WEIGHTS-001", f"{path}:{name}",
                                     f"only the spec's parameters {_names_text(names)}",
                                     "a tensor the spec has no parameter for"))
    if problems:
        raise OptionError(problems)
    return {n: tensors[n] for n in names}


def check_output_path(path: str, option: str, suffixes: Sequence[str] | None = None) -> None:
    """Fail before a run, not after it, when `path` cannot be written: an unknown suffix
    (`suffixes`), a folder that does not exist, or a directory in its place."""
    if suffixes is not None and Path(path).suffix.lower() not in suffixes:
        raise OptionError([Diagnostic(
            "IO-001", path, f"a file name ending in {', '.join(suffixes)}",
            f"the suffix '{Path(path).suffix}'" if Path(path).suffix else "no suffix",
            f"{option} picks the format by the suffix: expected {', '.join(suffixes)}, "
            f"found {Path(path).suffix or 'none'}")])
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        found = "a directory" if os.path.isdir(path) else f"no folder {folder}"
        raise OptionError([Diagnostic("IO-001", path, "a file in an existing folder", found,
                                    f"cannot write the {option} file: {found}")])


def save_weights_file(path: str, params: Sequence[tuple[str, np.ndarray]]) -> None:
    """`--save-weights FILE`: the parameters in the format of the suffix (`.onnx`: an
    ONNX model of initializers; `.npz`, `.dlp`, `.h5`: the network weights writer);
    written atomically (a failed write leaves an existing file as it was)."""
    if _is_onnx(path):
        import numpy as np

        from frame_mlir.fileio import atomic_write
        from frame_mlir.frontends.api.onnx_weights import save_onnx_weights
        from frame_mlir.frontends.api.tensor import from_numpy

        tensors = {n: from_numpy(np.ascontiguousarray(a, dtype=np.float32)) for n, a in params}
        try:
            atomic_write(path, lambda tmp: save_onnx_weights(tmp, tensors))
        except (OSError, ValueError, RuntimeError) as e:
            why = getattr(e, "strerror", None) or str(e)
            raise OptionError([Diagnostic("IO-001", path, "a writable file", why,
                                        f"cannot write the weights: {why}")]) from None
        return
    from frame_mlir.frontends.network.weights import WeightsError, save_weights

    try:
        save_weights(path, dict(params))
    except WeightsError as e:
        raise OptionError([Diagnostic("IO-001", path, "a writable file", p, p)
                           for p in e.problems]) from None


@dataclasses.dataclass(frozen=True)
class RunInputs:
    """What `--data` and `--load-weights` read: arrays by name, each checked against the
    spec (None where the flag is absent)."""

    data: dict[str, np.ndarray] | None = None
    weights: dict[str, np.ndarray] | None = None


def read_run_files(spec: ModelSpec, files: RunFiles) -> RunInputs:
    """Read and check the `--data` and `--load-weights` files, both files' problems in
    one report (OptionError)."""
    problems: list[Diagnostic] = []
    data = weights = None
    if files.data is not None:
        try:
            data = load_data_file(files.data, spec)
        except OptionError as e:
            problems += e.option_diagnostics
    if files.load_weights is not None:
        try:
            weights = load_weights_file(files.load_weights, spec)
        except OptionError as e:
            problems += e.option_diagnostics
    if problems:
        raise OptionError(problems)
    return RunInputs(data, weights)


def initial_values(spec: ModelSpec, inputs: RunInputs) -> InitialValues:
    """The spec's initial tensors, with `--data` replacing the data input and target and
    `--load-weights` the parameters. The random draws stay the spec's either way: the
    parameters of a run with `--data` are those of the run without it."""
    from frame_mlir.frontends.spec.initial_values import generate_initial_values

    values = generate_initial_values(spec)
    if inputs.data is not None:
        data = inputs.data
        values = dataclasses.replace(
            values, inputs={n: data[n] for n in values.inputs}, target=data["target"])
    if inputs.weights is not None:
        weights = inputs.weights
        values = dataclasses.replace(values, params=[(n, weights[n]) for n, _ in values.params])
    return values


# --------------------------------------------------------------------------- training


def run_training(spec: ModelSpec, out: TextIO, *, print_ir_after_all: bool = False,
                 print_predictions: bool = False, tool: str = "frame-run",
                 use_cache: bool = True, options: CompileOptions | None = None,
                 files: RunFiles | None = None) -> int:
    """Compile (or load from the compile cache, unless `use_cache` is False) and train
    `spec`, printing `step N loss V` lines and `final_loss V` (and, with
    `print_predictions`, the predictions block); `files` reads data and weights, writes
    weights and the loss plot.

    The output files are checked (suffix, folder, matplotlib) and the input files read
    before compiling, so a mistake there costs no compile and no training. On a terminal
    (stderr a TTY) a progress bar shows steps/s and the ETA and a summary line closes
    the run; stdout is the same bytes with or without a terminal.

    A loss that stops being finite is reported on stderr as a warning by `tool`; the
    exit status stays 0, since the run did what the spec asked.
    """
    from frame_mlir.frontends.spec.trainer import (
        ENV_CACHE,
        CompiledSpec,
        Session,
        check_host_memory,
        logged_steps,
    )
    from frame_mlir.runtime.progress import progress

    t_start = time.perf_counter()
    files = files or RunFiles()
    check_run_outputs(files)
    run_inputs = read_run_files(spec, files)
    hook = print_ir_after_all_hook(sys.stderr) if print_ir_after_all else None
    compiled = CompiledSpec(spec, after_pass=hook, cache=ENV_CACHE if use_cache else None,
                            options=options)
    # RT-001 before the random draws: a spec too large for the machine is refused
    # without drawing its data and parameters (tens of seconds and GiBs for a big one).
    check_host_memory(compiled)
    session = Session(compiled, initial_values(spec, run_inputs))
    steps = spec.training.steps
    logged = logged_steps(steps, spec.training.log_every)
    t_train = time.perf_counter()
    with progress(steps, spec.name) as bar:
        def emit(i: int, loss: float) -> None:
            bar.write(f"step {i} loss {format_loss(loss)}\n", out)

        losses = _run_steps(session, steps, logged, emit, bar)
    train_seconds = time.perf_counter() - t_train
    finish_losses(out, losses, spec, tool)
    if print_predictions:
        out.write(format_predictions(spec, session.predict()))
    if files.save_weights is not None:
        save_weights_file(files.save_weights, list(session.params().items()))
    finish_run(out, spec, files, losses, compiled, train_seconds, t_start, tool)
    return 0


def check_run_outputs(files: RunFiles) -> None:
    """Before a v0 run: the files it will write can be written (suffix, folder; the
    plot's matplotlib), so that a mistake there costs no compile and no training."""
    if files.save_weights is not None:
        check_output_path(files.save_weights, "--save-weights", WEIGHT_SUFFIXES)
    if files.plot is not None:
        from frame_mlir.tools.plot import require_matplotlib

        require_matplotlib()
        check_output_path(files.plot, "--plot")


def finish_run(out: TextIO, spec: ModelSpec, files: RunFiles, losses: np.ndarray,
               compiled: CompiledSpec, train_seconds: float, t_start: float, tool: str) -> None:
    """The end of a v0 run: the loss plot (`--plot`), and on a terminal the summary
    line (compile seconds, steps/s)."""
    from frame_mlir.runtime.progress import is_tty, summary_line

    if files.plot is not None:
        from frame_mlir.tools.plot import plot_losses

        plot_losses(files.plot, losses, title=f"{spec.name}: training loss")
    if is_tty(sys.stderr):
        out.flush()
        sys.stderr.write(summary_line(tool, spec.name, compiled.compile_seconds, len(losses),
                                      train_seconds, time.perf_counter() - t_start,
                                      cached=compiled.from_cache))


def finish_losses(out: TextIO, losses: np.ndarray, spec: ModelSpec, tool: str) -> None:
    """`final_loss V`, and on stderr a warning naming the first step whose loss was not
    finite: not an input error (the run did what the spec says), but nan lines alone
    leave the user guessing where it went wrong."""
    from frame_mlir.runtime.training import DivergenceWatch

    out.write(f"final_loss {format_loss(float(losses[-1]))}\n")
    DivergenceWatch(sys.stderr.write).check_all(losses, lambda step, v: (
        f"{tool}: warning: training diverged: the loss first became {format_loss(v)} at "
        f"step {step} (learning_rate {spec.optimizer.learning_rate:g} may be too "
        "large)\n"))


#: The wall time one native call of the train loop aims at while a bar is drawn: the bar
#: and the log lines stay live, and the calls' overhead stays negligible.
CHUNK_SECONDS = 0.1


def _run_steps(session: Session, steps: int, logged: Sequence[int],
               emit: Callable[[int, float], None], bar: Progress) -> np.ndarray:
    """Train `steps` steps; `emit(i, loss)` each logged step, in order. Without a bar,
    one native call does them all; with one, calls of about CHUNK_SECONDS each advance
    it (the same bits: the train loop is one train-step call per step either way)."""
    if not bar.active:
        losses = session.run(steps)
        for i in logged:
            emit(i, float(losses[i]))
        return losses
    import numpy as np

    parts: list[np.ndarray] = []
    done = k = 0
    chunk = 1
    while done < steps:
        n = min(chunk, steps - done)
        t0 = time.perf_counter()
        part = session.run(n)
        seconds = time.perf_counter() - t0
        parts.append(part)
        while k < len(logged) and logged[k] < done + n:
            emit(logged[k], float(part[logged[k] - done]))
            k += 1
        done += n
        bar.set_postfix(loss=float(part[-1]))
        bar(n)
        # grow at most 4x a call, so one slow first step cannot stall the bar for long
        chunk = max(1, min(4 * n, int(n * CHUNK_SECONDS / max(seconds, 1e-9))))
    return np.concatenate(parts)
