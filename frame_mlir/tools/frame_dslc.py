"""frame-dslc: the seed tool's interface to schema-v0 model specs (and JSON networks).

    frame-dslc --check spec.json   validate; prints `OK <model name>` (for a JSON
                                   network: `OK <file stem>`, after its warnings on
                                   stderr; `--strict` makes them errors)
    frame-dslc --run spec.json     compile and train in process (like frame-run)
    frame-dslc --emit spec.json -o DIR      write DIR/main.cpp + DIR/CMakeLists.txt:
                                   a standalone C++ program that trains the model
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

from frame_mlir.tools.threads import add_threads_argument, compile_options
from frame_mlir.tools.version import VersionAction


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="frame-dslc", description=__doc__.splitlines()[0])
    p.add_argument("--version", action=VersionAction)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="validate the spec")
    mode.add_argument("--run", action="store_true", help="compile and train")
    mode.add_argument("--emit", action="store_true", help="emit a standalone C++ project")
    p.add_argument("spec", help="model spec (JSON, schema_version 0); - reads standard input")
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
    return p


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
        from frame_mlir.frontend.spec import ModelSpec
        from frame_mlir.tools.driver import (
            OVERRIDE_FLAGS,
            RUN_FILE_FLAGS,
            RunFiles,
            flags_given,
            load_model,
            spec_overrides,
        )

        for flags, applies in ((OVERRIDE_FLAGS, "--run and --emit"),
                               (RUN_FILE_FLAGS, "--run")):
            given = flags_given(args, flags)
            misplaced = args.check if applies != "--run" else not args.run
            if given and misplaced:
                verb = "applies" if len(given) == 1 else "apply"
                build_parser().error(f"{', '.join(given)} {verb} to {applies} only")
        model = load_model(args.spec, spec_overrides(args), tool="frame-dslc",
                           strict=args.strict)
        if args.check:
            print(f"OK {model.name}")
            return 0
        if not isinstance(model, ModelSpec):
            raise ValueError(f"{args.spec} is a JSON network: --run and --emit take v0 model "
                             "specs; train a network with `frame-run "
                             f"{args.spec} --data SOURCE`")
        spec = model
        if args.emit:
            from pathlib import Path

            from frame_mlir.backend.cpp.program import emit_program

            for path in emit_program(spec, Path(args.out),
                                     options=compile_options(args.threads)):
                print(f"wrote {path}")
            return 0
        from frame_mlir.tools.driver import run_training

        return run_training(spec, sys.stdout, tool="frame-dslc", use_cache=not args.no_cache,
                            options=compile_options(args.threads),
                            files=RunFiles.from_args(args))

    return run_cli("frame-dslc", body)


if __name__ == "__main__":
    sys.exit(main())
