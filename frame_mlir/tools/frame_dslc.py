"""frame-dslc: the seed tool's interface to schema-v0 model specs (and JSON networks).

    frame-dslc --check spec.json   validate; prints `OK <model name>` (for a JSON
                                   network: `OK <file stem>`, after its warnings on
                                   stderr; `--strict` makes them errors)
    frame-dslc --run spec.json     compile and train in process (like frame-run)
    frame-dslc --emit spec.json -o DIR      write DIR/main.cpp + DIR/CMakeLists.txt:
                                   a standalone C++ program that trains the model
    frame-dslc --emit NET.json -o DIR       the same for a JSON network: the program
                                   trains on .npy files, one per input (or random
                                   data), as `frame-run NET --data DIR` does
    --solver, --lr, --momentum, --weight-decay, --semantics, --schedule, --seed
                                   with --emit of a network: the training it does
    --threads N                    with --run / --emit: kernels on N threads
    --steps N, --lr LR, --log-every N
                                   with --run / --emit: replace the spec's fields
                                   (validated by the same rules)
    --data FILE.npz, --load-weights FILE, --save-weights FILE, --plot FILE.png
                                   with --run: as for frame-run

Exit status is non-zero on any violation, with one error line per violation.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from frame_mlir.tools.threads import add_threads_argument, compile_options
from frame_mlir.tools.version import VersionAction

if TYPE_CHECKING:
    from frame_mlir.frontends.network.loader import NetworkSpec


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="frame-dslc", description=__doc__.splitlines()[0])
    p.add_argument("--version", action=VersionAction)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="validate the spec")
    mode.add_argument("--run", action="store_true", help="compile and train")
    mode.add_argument("--emit", action="store_true", help="emit a standalone C++ project")
    p.add_argument("spec", help="model spec (JSON, schema_version 0) or JSON network; - "
                   "reads standard input")
    p.add_argument("-o", "--out", help="output directory for --emit")
    add_threads_argument(p, "with --run or --emit")
    from frame_mlir.tools.driver import add_strict_argument

    add_strict_argument(p)
    p.add_argument("--no-cache", action="store_true",
                   help="with --run: compile even if the compile cache holds this model "
                   "(also: FRAME_NO_CACHE=1), and store nothing")
    from frame_mlir.tools.compile_flags import add_compile_arguments
    from frame_mlir.tools.driver import add_training_arguments

    add_compile_arguments(p)
    add_training_arguments(p, networks=False)
    _add_network_emit_arguments(p)
    return p


#: frame-dslc's options for `--emit` of a JSON network (argparse destinations).
NETWORK_EMIT_FLAGS = ("solver", "momentum", "weight_decay", "semantics", "schedule", "seed")

#: What `--emit` of a network refuses (EMIT-001), and why.
_NOT_FOR_NETWORK_EMIT = {
    "steps": "the program takes --steps N or --epochs N when run",
    "log_every": "the program prints one line per epoch",
    "data": "the program takes one .npy file per input when run",
    "load_weights": "the initial parameters come from --seed",
    "save_weights": "the program takes --save-weights FILE.dlp when run",
    "plot": "the program draws no plot",
}


def _add_network_emit_arguments(p: argparse.ArgumentParser) -> None:
    """frame-run's solver options (network_run), for `--emit NET.json`."""
    from frame_mlir.tools.network_run import add_solver_arguments

    g = p.add_argument_group("JSON networks, with --emit (as frame-run's; baked into "
                             "the program)")
    add_solver_arguments(g, "seed of the initial parameters, the shuffle and the random "
                         "data (default 0)")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `frame-dslc` console script."""
    from frame_mlir.tools.errors import run_cli

    def body() -> int:
        args = build_parser().parse_args(argv)
        from frame_mlir.tools import compile_flags

        compile_flags.apply(args)
        if args.emit and not args.out:
            build_parser().error("--emit needs --out DIR")
        if args.out is not None and not args.emit:
            build_parser().error("--out applies to --emit only")
        if args.no_cache and not args.run:
            build_parser().error("--no-cache applies to --run only")
        if args.profile and not args.run:
            build_parser().error("--profile applies to --run only (the emitted program "
                                 "is not profiled)")
        if args.threads is not None and args.check:
            build_parser().error("--threads applies to --run and --emit only")
        if args.emit and args.out == "-":
            build_parser().error("--out needs a directory (the program is two files), "
                                 "found '-'")
        from frame_mlir.frontends.spec.spec import ModelSpec
        from frame_mlir.tools.driver import (
            OVERRIDE_FLAGS,
            RUN_FILE_FLAGS,
            RunFiles,
            flags_given,
            load_model,
            spec_overrides,
        )

        deferred: list[str] = []  # --emit: a network refuses them with EMIT-001
        for flags, applies in ((OVERRIDE_FLAGS, "--run and --emit"),
                               (RUN_FILE_FLAGS, "--run")):
            given = flags_given(args, flags)
            misplaced = args.check if applies != "--run" else not args.run
            if given and misplaced:
                verb = "applies" if len(given) == 1 else "apply"
                message = f"{', '.join(given)} {verb} to {applies} only"
                if not args.emit:
                    build_parser().error(message)
                deferred.append(message)
        network_flags = flags_given(args, NETWORK_EMIT_FLAGS)
        if network_flags and not args.emit:
            verb = "applies" if len(network_flags) == 1 else "apply"
            build_parser().error(f"{', '.join(network_flags)} {verb} to --emit of a JSON "
                                 "network only")
        model = load_model(args.spec, spec_overrides(args), tool="frame-dslc",
                           strict=args.strict)
        if args.check:
            print(f"OK {model.name}")
            return 0
        if not isinstance(model, ModelSpec):
            if args.run:
                raise ValueError(f"{args.spec} is a JSON network: --run takes v0 model "
                                 "specs; train a network with `frame-run "
                                 f"{args.spec} --data SOURCE` (or --emit a program)")
            return _emit_network(model, args)
        if deferred:
            build_parser().error(deferred[0])
        if network_flags:
            verb = "applies" if len(network_flags) == 1 else "apply"
            build_parser().error(f"{', '.join(network_flags)} {verb} to JSON network files "
                                 f"only; {args.spec} is a v0 model spec")
        spec = model
        if args.emit:
            from pathlib import Path

            from frame_mlir.frontends.spec.program import emit_program

            for path in emit_program(spec, Path(args.out),
                                     options=compile_options(args.threads)):
                print(f"wrote {path}")
            return 0
        from frame_mlir.tools.driver import run_training

        return run_training(spec, sys.stdout, tool="frame-dslc", use_cache=not args.no_cache,
                            options=compile_options(args.threads),
                            files=RunFiles.from_args(args))

    return run_cli("frame-dslc", body)


def _emit_network(spec: NetworkSpec, args: argparse.Namespace) -> int:
    """`--emit NET.json --out DIR`: the network's C++ training program, for the solver,
    schedule and seed of the command line (`frontends/network/program.py`). Options
    that belong to a run are refused all at once (EMIT-001)."""
    from pathlib import Path

    from frame_mlir.frontends.common.errors import Diagnostic
    from frame_mlir.frontends.network.program import emit_network_program
    from frame_mlir.tools.driver import OptionError
    from frame_mlir.tools.network_run import RATE_RANGE, network_solver, nonneg_float

    diags = []
    for dest, why in _NOT_FOR_NETWORK_EMIT.items():
        value = getattr(args, dest, None)
        if value is not None:
            flag = "--" + dest.replace("_", "-")
            diags.append(Diagnostic("EMIT-001", flag, f"no {flag} with --emit of a "
                                    f"network ({why})", f"{flag} {value}"))
    if args.lr is not None:  # a network's rate: >= 0 (0 freezes the parameters)
        try:
            args.lr = nonneg_float(args.lr)
        except argparse.ArgumentTypeError:
            diags.append(Diagnostic("EMIT-001", "--lr", RATE_RANGE, f"'{args.lr}'"))
    if args.solver == "adam" and (args.momentum is not None or args.semantics is not None):
        given = flags_given_text(args, ("momentum", "semantics"))
        diags.append(Diagnostic("EMIT-001", given.split()[0], "--momentum and --semantics "
                                "with --solver sgd only", f"{given} with --solver adam"))
    if diags:
        raise OptionError(diags)
    for path in emit_network_program(spec, Path(args.out), network_solver(args),
                                     seed=0 if args.seed is None else args.seed,
                                     schedule=args.schedule,
                                     options=compile_options(args.threads)):
        print(f"wrote {path}")
    return 0


def flags_given_text(args: argparse.Namespace, dests: Sequence[str]) -> str:
    """`--momentum 0.5 --semantics torch`: the given options among `dests`, with values."""
    return " ".join(f"--{d.replace('_', '-')} {getattr(args, d)}" for d in dests
                    if getattr(args, d, None) is not None)


if __name__ == "__main__":
    sys.exit(main())
