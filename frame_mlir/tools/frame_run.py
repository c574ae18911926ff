"""frame-run: compile a model (a schema-v0 spec or a JSON network) to native code and
train it.

    frame-run spec.json                      train, print `step N loss V`, `final_loss V`
    frame-run net.json --data digits --epochs 5
                                             train a JSON network on real data, print
                                             `epoch N loss V accuracy A`, `final_loss V`
    frame-run spec.json --emit-stage=linalg  print the IR at a named stage and stop
    frame-run spec.json --print-ir-after-all dump the IR after every pass (stderr)
    frame-run spec.json --no-cache           compile again, bypassing the compile cache
    frame-run spec.json --threads 4          kernels on 4 threads (default: the cores)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from frame_mlir.tools.threads import add_threads_argument, compile_options
from frame_mlir.tools.version import VersionAction


def build_parser() -> argparse.ArgumentParser:
    from frame_mlir.passes.stages import ALL_STAGES

    p = argparse.ArgumentParser(prog="frame-run", description=__doc__.splitlines()[0])
    p.add_argument("--version", action=VersionAction)
    p.add_argument("spec", help="model spec (JSON, schema_version 0) or JSON network "
                   "(inputs/outputs/operators); - reads standard input")
    p.add_argument("--emit-stage", choices=ALL_STAGES, metavar="STAGE",
                   help=f"print the IR at STAGE and stop; one of: {', '.join(ALL_STAGES)}")
    p.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every pass to stderr")
    p.add_argument("--print-predictions", action="store_true",
                   help="after training, print the prediction layer's output")
    p.add_argument("--no-cache", action="store_true",
                   help="compile even if the compile cache holds this model (also: "
                   "FRAME_NO_CACHE=1), and store nothing")
    add_threads_argument(p, "training and --emit-stage")
    from frame_mlir.tools.network_run import add_network_arguments

    add_network_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `frame-run` console script."""
    from frame_mlir.tools.errors import run_cli

    def body() -> int:
        args = build_parser().parse_args(argv)
        from frame_mlir.frontend.detect import load_model
        from frame_mlir.frontend.spec import ModelSpec
        from frame_mlir.tools.driver import emit_stage, run_training
        from frame_mlir.tools.network_run import (
            emit_network_stage,
            network_flags_given,
            run_network,
        )

        if args.emit_stage and args.print_predictions:
            build_parser().error("--print-predictions needs a training run; --emit-stage "
                                 "stops before one")
        spec = load_model(args.spec)
        if not isinstance(spec, ModelSpec):  # a JSON network
            if args.print_predictions:
                build_parser().error("--print-predictions applies to v0 model specs only")
            if args.emit_stage:
                ignored = network_flags_given(args)
                if ignored:
                    build_parser().error(f"{', '.join(ignored)} "
                                         f"{'needs' if len(ignored) == 1 else 'need'} a "
                                         "training run; --emit-stage stops before one")
                emit_network_stage(spec, args.emit_stage, sys.stdout,
                                   print_ir_after_all=args.print_ir_after_all,
                                   options=compile_options(args.threads))
                return 0
            return run_network(spec, args, sys.stdout, options=compile_options(args.threads),
                               print_ir_after_all=args.print_ir_after_all,
                               use_cache=not args.no_cache)
        given = network_flags_given(args)
        if given:
            build_parser().error(f"{', '.join(given)} "
                                 f"{'applies' if len(given) == 1 else 'apply'} to JSON "
                                 "network files only; "
                                 f"{args.spec} is a v0 model spec")
        if args.emit_stage:
            emit_stage(spec, args.emit_stage, sys.stdout,
                       print_ir_after_all=args.print_ir_after_all,
                       options=compile_options(args.threads))
            return 0
        return run_training(spec, sys.stdout, print_ir_after_all=args.print_ir_after_all,
                            print_predictions=args.print_predictions,
                            use_cache=not args.no_cache,
                            options=compile_options(args.threads))

    return run_cli("frame-run", body)


if __name__ == "__main__":
    sys.exit(main())
