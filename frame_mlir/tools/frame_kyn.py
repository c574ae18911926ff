"""`frame-kyn`: the `.kyn` toolchain (docs/kyn.md, "Command line").

    frame-kyn validate PATH            parse, compose, validate, infer shapes
    frame-kyn compile PATH -o OUT.py   write the equivalent PyTorch training script
    frame-kyn train PATH               train natively; writes run_manifest.json
                                       (under mpirun with --data-parallel: one rank)
    frame-kyn sweep PATH               train every sweep point; writes sweep_results.json
    frame-kyn fmt PATH [--write|--check]
    frame-kyn ast PATH                 print the parsed AST
    frame-kyn lsp                      the language server on stdio (extra [lsp])
    frame-kyn lock create|check PATH   pin the program, its imports and data

Usage errors exit 2; a bad program exits 1 with `<file>:<line>:<col>: error: ...
[RULE]` lines on stderr; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from frame_mlir.tools.version import VersionAction

TOOL = "frame-kyn"


def _param_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a params value (repeatable; int, float, true/false, "
                   "else a string)")


def _seed(text: str) -> int:
    """`--seed`: an integer in [0, MAX_SEED], as train.seed (numpy's seeds are 32-bit)."""
    from frame_mlir.frontends.kyn.vocab import MAX_SEED

    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected an integer in [0, {MAX_SEED}], found "
                                         f"{text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from frame_mlir.passes.stages import ALL_STAGES

    p = argparse.ArgumentParser(prog=TOOL, description="The .kyn training DSL: validate, "
                                "train natively, emit PyTorch, format, serve an editor.")
    p.add_argument("--version", action=VersionAction)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    v = sub.add_parser("validate", help="check a program (syntax, semantics, shapes)",
                       description="Parse, compose, validate and shape-check PATH. Prints "
                       "'Valid .kyn program: PATH' or every error.")
    v.add_argument("path", metavar="PATH")
    _param_arg(v)

    c = sub.add_parser("compile", help="write the equivalent PyTorch training script",
                       description="Write a self-contained PyTorch script training PATH.")
    c.add_argument("path", metavar="PATH")
    c.add_argument("-o", "--output", required=True, metavar="OUT.py")
    _param_arg(c)

    t = sub.add_parser("train", help="train natively (LLVM-compiled step)",
                       description="Train PATH natively: one line per epoch, the metrics, "
                       "the export, and run_manifest.json in --out-dir.")
    t.add_argument("path", metavar="PATH")
    _param_arg(t)
    t.add_argument("--out-dir", default=".", metavar="DIR",
                   help="where run_manifest.json, checkpoints and relative export paths "
                   "go (default: the current directory)")
    t.add_argument("--seed", type=_seed, default=None,
                   help="override train.seed (0 to 4294967295)")
    t.add_argument("--check-lock", metavar="LOCK",
                   help="refuse to train when LOCK no longer matches the program")
    t.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    t.add_argument("--no-cache", action="store_true", help="do not use the compile cache")
    t.add_argument("--emit-stage", choices=ALL_STAGES,
                   help="print the training step's IR at this stage and stop")
    t.add_argument("--target", choices=("cpu", "cuda", "cuda-emulator"), default="cpu",
                   help="cpu (default): LLVM JIT; cuda: the step's kernels on an NVIDIA "
                   "GPU (pip install 'frame-mlir[cuda]'); cuda-emulator: the same kernels "
                   "on a CPU emulator (slow; for testing); with --emit-stage, cuda gives "
                   "the gpu, gpu-llvm, nvvm and ptx stages")
    t.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every pass to stderr")
    from frame_mlir.tools.compile_flags import add_compile_arguments

    add_compile_arguments(t)
    from frame_mlir.tools.dp_run import add_distributed_arguments

    add_distributed_arguments(t, every="epochs",
                              default_file="<model>.ckpt.npz in --out-dir")

    s = sub.add_parser("sweep", help="train every sweep combination natively",
                       description="Train each point of the sweep's Cartesian product "
                       "(first axis slowest) and write sweep_results.json.")
    s.add_argument("path", metavar="PATH")
    _param_arg(s)
    s.add_argument("--out-dir", default=".", metavar="DIR")
    s.add_argument("--no-cache", action="store_true")
    add_compile_arguments(s)

    f = sub.add_parser("fmt", help="format a program canonically (keeps comments)",
                       description="Print PATH formatted; --write rewrites it, --check "
                       "exits 1 when it would change.")
    f.add_argument("path", metavar="PATH")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")

    a = sub.add_parser("ast", help="print the parsed AST", description="Print PATH's AST "
                       "(before composition).")
    a.add_argument("path", metavar="PATH")

    sub.add_parser("lsp", help="run the language server on stdio (needs [lsp])",
                   description="A Language Server (diagnostics, hover, completion) on "
                   "stdio; needs pygls: pip install 'frame-mlir[lsp]'.")

    lk = sub.add_parser("lock", help="create or check a lock file",
                        description="create: pin the program's source, imports, data and "
                        "the frame-mlir version; check: fail naming what drifted.")
    lk.add_argument("action", choices=("create", "check"))
    lk.add_argument("path", metavar="PATH")
    lk.add_argument("--lock", default=None, metavar="FILE",
                    help="the lock file (default: kynml.lock beside PATH)")
    _param_arg(lk)
    return p


def _load(path: str, params: list[str], warn: bool = True) -> Any:
    """The module of `path`; its warnings on stderr when `warn` (rank 0 of a job only:
    once per job, as one process prints them)."""
    from frame_mlir.frontends.kyn.compose import parse_overrides
    from frame_mlir.frontends.kyn.pipeline import load_module

    module, warnings = load_module(path, parse_overrides(params))
    for w in warnings if warn else ():
        print(str(w), file=sys.stderr)
    return module


def _validate(args: argparse.Namespace) -> int:
    from frame_mlir.frontends.kyn.errors import raise_if_errors
    from frame_mlir.frontends.kyn.pipeline import data_diagnostics

    module = _load(args.path, args.param)
    raise_if_errors(data_diagnostics(module))  # what the data's row count decides
    print(f"Valid .kyn program: {args.path}")
    return 0


def _compile(args: argparse.Namespace) -> int:
    from frame_mlir.frontends.kyn.emit_torch import write_pytorch

    module = _load(args.path, args.param)
    write_pytorch(module, args.output)
    print(f"wrote {args.output}")
    return 0


def _check_train_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors (exit 2) of flag combinations `train` does not run."""
    if args.data_parallel and args.target != "cpu":
        parser.error("--data-parallel trains on the CPU (--target cpu)")
    if args.target != "cpu" and (args.checkpoint_every or args.resume):
        parser.error("--checkpoint-every and --resume apply to --target cpu")
    if args.emit_stage and (args.checkpoint_every or args.resume):
        parser.error("--checkpoint-every and --resume need a training run; --emit-stage "
                     "stops before one")


def _train(args: argparse.Namespace) -> int:
    from frame_mlir.frontends.kyn.run import run_module
    from frame_mlir.tools.dp_run import start_job
    from frame_mlir.tools.driver import print_ir_after_all_hook

    # first, so that any failure from here on names its rank and ends the whole job
    job = start_job(args, TOOL)
    root = job is None or job.rank == 0
    module = _load(args.path, args.param, warn=root)
    if args.check_lock:
        from frame_mlir.frontends.kyn.repro import check_lock

        check_lock(module, args.check_lock)
    if args.emit_stage:
        return _emit(module, args, job)
    checkpoint = _checkpoint_path(args, module.model.name, root)
    if args.target == "cuda":
        from frame_mlir.backend.cuda.driver import CudaDevice

        CudaDevice().close()  # no GPU (CUDA-001..003) costs no compile
    # one copy of the IR per job: the ranks compile the same passes
    hook = print_ir_after_all_hook(sys.stderr) if args.print_ir_after_all and root else None
    run_module(module, args.out_dir, seed=args.seed, quiet=args.quiet,
               cache=False if args.no_cache else None, after_pass=hook, target=args.target,
               job=job, checkpoint=checkpoint, every=args.checkpoint_every,
               resume=args.resume)
    return 0


def _checkpoint_path(args: argparse.Namespace, model: str, root: bool) -> str | None:
    """Where `--checkpoint-every` writes: `--checkpoint FILE`, by default
    `<out-dir>/<model>.ckpt.npz`; checked before the run (by rank 0, the one that
    writes it) so that a bad path fails before training, not after."""
    if args.checkpoint is not None and args.checkpoint_every is None:
        raise ValueError("--checkpoint names the file of --checkpoint-every N; give both")
    if args.checkpoint_every is None:
        return None
    path = args.checkpoint or str(Path(args.out_dir) / f"{model}.ckpt.npz")
    if root:
        from frame_mlir.tools.driver import check_output_path

        if args.checkpoint is None:  # the out dir is made for the run anyway
            Path(args.out_dir).mkdir(parents=True, exist_ok=True)
        check_output_path(path, "--checkpoint", (".npz",))
    return path


def _emit(module: Any, args: argparse.Namespace, job: Any = None) -> int:
    """The training step (its function for train.batch rows, the evaluation function and
    the optimizer update) at `--emit-stage`; in a data-parallel job, rank 0's function
    for its share of the batch, its loss weighted by the share."""
    from frame_mlir.frontends.kyn.trainer import (
        check_data_parallel,
        check_supported,
        optimizer_runtime,
        step_functions,
    )
    from frame_mlir.tools.stage_dump import emit_module_stage

    check_supported(module)
    rank, ranks = (job.rank, job.size) if job is not None else (0, 1)
    check_data_parallel(module, module.train.batch, ranks)
    _, opt = optimizer_runtime(module, 1)
    fns = step_functions(module, [module.train.batch], module.train.batch, opt,
                         rank=rank, ranks=ranks)
    emit_module_stage(fns.module(), None, args.emit_stage, sys.stdout,
                      print_ir_after_all=args.print_ir_after_all, target=args.target)
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from frame_mlir.frontends.kyn.compose import expand_sweep, parse_overrides, resolve_imports
    from frame_mlir.frontends.kyn.errors import raise_if_errors
    from frame_mlir.frontends.kyn.parser import parse_text, read_source
    from frame_mlir.frontends.kyn.pipeline import analyze
    from frame_mlir.frontends.kyn.repro import write_json_atomic
    from frame_mlir.frontends.kyn.run import run_module

    text = read_source(args.path)
    overrides = parse_overrides(args.param)
    program = resolve_imports(parse_text(text, args.path), args.path)
    fixed = [e.key for e in (program.sweep.entries if program.sweep else ())
             if e.key in overrides]
    for k in fixed:
        print(f"{TOOL}: note: --param {k} fixes the sweep axis '{k}'", file=sys.stderr)
    points = []
    for combo, resolved in expand_sweep(program, overrides):  # every error before any run
        a = analyze(text, args.path, args.path, {**overrides, **combo}, composed=resolved)
        raise_if_errors(a.diagnostics)
        points.append((combo, a.module))
    out_dir = Path(args.out_dir)
    results = []
    for i, (combo, module) in enumerate(points):
        label = ",".join(f"{k}={v}" for k, v in combo.items()) or "base"
        print(f"sweep {i + 1}/{len(points)} {label}")
        run_dir = out_dir / "sweep" / f"{i:03d}"
        r = run_module(module, run_dir, quiet=True,
                       cache=False if args.no_cache else None)
        results.append({"index": i, "params": combo, "metrics": r.manifest["metrics"],
                        "final_loss": r.manifest["final_loss"],
                        "manifest": str(Path(r.manifest_path)),
                        "manifest_data": r.manifest})
    path = out_dir / "sweep_results.json"
    write_json_atomic(path, {"program": args.path, "results": results})
    print(f"wrote {path}")
    return 0


def _fmt(args: argparse.Namespace) -> int:
    from frame_mlir.frontends.kyn.format import format_file, format_source
    from frame_mlir.frontends.kyn.parser import read_source

    if args.check:
        text = read_source(args.path)
        if format_source(text, args.path) != text:
            print(f"{args.path}: would be reformatted", file=sys.stderr)
            return 1
        return 0
    formatted = format_file(args.path, write=args.write)
    if not args.write:
        sys.stdout.write(formatted)
    return 0


def _ast(args: argparse.Namespace) -> int:
    import pprint

    from frame_mlir.frontends.kyn.parser import parse_file

    program = parse_file(args.path)
    for item in program.items:
        print(pprint.pformat(item, width=100, sort_dicts=False))
    return 0


def _lsp(args: argparse.Namespace) -> int:
    from frame_mlir.frontends.kyn.lsp import main as lsp_main

    lsp_main()
    return 0


def _lock(args: argparse.Namespace) -> int:
    from frame_mlir.frontends.kyn.repro import check_lock, create_lock

    module = _load(args.path, args.param)
    lock = args.lock or str(Path(args.path).with_name("kynml.lock"))
    if args.action == "create":
        create_lock(module, lock)
        print(f"wrote {lock}")
    else:
        check_lock(module, lock)
        print(f"lock ok: {lock}")
    return 0


COMMANDS = {"validate": _validate, "compile": _compile, "train": _train, "sweep": _sweep,
            "fmt": _fmt, "ast": _ast, "lsp": _lsp, "lock": _lock}


def main(argv: list[str] | None = None) -> int:
    from frame_mlir.tools.errors import run_cli

    def body() -> int:
        parser = build_parser()
        args = parser.parse_args(argv)
        from frame_mlir.tools import compile_flags

        compile_flags.apply(args)
        if args.command == "train":
            _check_train_flags(parser, args)
        return COMMANDS[args.command](args)

    return run_cli(TOOL, body)


if __name__ == "__main__":
    sys.exit(main())
