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
    frame-run spec.json --steps 1000 --lr 0.01 --log-every 100
                                             a v0 spec with fields replaced (the same
                                             rules, the same result as an edited spec)
    frame-run spec.json --data d.npz --load-weights w.npz --save-weights out.onnx
                                             data from a file, parameters in and out
    frame-run spec.json --plot loss.png      the loss of every step as a PNG
    frame-run net.json --benchmark           time a network's train and test steps on a
                                             random batch: `train ms/batch`, `test ms/batch`
    frame-run spec.json --target cuda        train on an NVIDIA GPU (the [cuda] extra)
    frame-run spec.json --target cuda --emit-stage=ptx
                                             the PTX of every kernel (no GPU needed)

On a terminal a progress bar (steps/s, ETA) and a closing summary go to stderr; in a pipe
or a file stdout is the same bytes and stderr has no bar and no summary (v0 specs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from frame_mlir.tools.threads import add_threads_argument, compile_options
from frame_mlir.tools.version import VersionAction


def build_parser() -> argparse.ArgumentParser:
    from frame_mlir.passes.stages import ALL_STAGES

    # the first sentence of the docstring, which spans two lines
    summary = " ".join(__doc__.split("\n\n")[0].split())
    p = argparse.ArgumentParser(prog="frame-run", description=summary)
    p.add_argument("--version", action=VersionAction)
    p.add_argument("spec", help="model spec (JSON, schema_version 0) or JSON network "
                   "(inputs/outputs/operators); - reads standard input")
    p.add_argument("--emit-stage", choices=ALL_STAGES, metavar="STAGE",
                   help=f"print the IR at STAGE and stop; one of: {', '.join(ALL_STAGES)}")
    p.add_argument("--target", choices=("cpu", "cuda", "cuda-emulator"), default="cpu",
                   help="cpu (default): LLVM JIT for this CPU; cuda: PTX kernels on an "
                   "NVIDIA GPU (needs the driver and pip install 'frame-mlir[cuda]'); "
                   "cuda-emulator: the same kernels on a CPU emulator (slow; for "
                   "testing the CUDA path without a GPU)")
    p.add_argument("--cuda-arch", choices=("sm_80", "sm_90"),
                   help="the GPU architecture of --emit-stage=ptx (default sm_80; training "
                   "compiles for the device's own)")
    p.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every pass to stderr")
    p.add_argument("--print-predictions", action="store_true",
                   help="after training, print the prediction layer's output")
    p.add_argument("--no-cache", action="store_true",
                   help="compile even if the compile cache holds this model (also: "
                   "FRAME_NO_CACHE=1), and store nothing")
    add_threads_argument(p, "training and --emit-stage")
    from frame_mlir.tools.driver import add_strict_argument

    add_strict_argument(p)
    from frame_mlir.tools.compile_flags import add_compile_arguments

    add_compile_arguments(p)
    from frame_mlir.tools.driver import add_training_arguments
    from frame_mlir.tools.network_run import add_network_arguments

    add_training_arguments(p, networks=True)
    add_network_arguments(p)
    from frame_mlir.tools.dp_run import add_distributed_arguments

    add_distributed_arguments(p)
    return p


def _verb(flags: list[str], one: str, many: str) -> str:
    """`--data applies` / `--data, --plot apply`: the flags and the verb that agrees."""
    return f"{', '.join(flags)} {one if len(flags) == 1 else many}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `frame-run` console script."""
    from frame_mlir.tools.errors import run_cli

    def body() -> int:
        parser = build_parser()
        args = parser.parse_args(argv)
        from frame_mlir.tools import compile_flags

        compile_flags.apply(args)
        from frame_mlir.frontends.spec.spec import ModelSpec
        from frame_mlir.tools.driver import (
            RUN_FILE_FLAGS,
            RunFiles,
            flags_given,
            load_model,
            run_training,
            spec_overrides,
        )
        from frame_mlir.tools.network_run import (
            emit_network_stage,
            network_flags_given,
            nonneg_float,
            run_network,
        )
        from frame_mlir.tools.stage_dump import emit_stage

        if args.emit_stage and args.print_predictions:
            parser.error("--print-predictions needs a training run; --emit-stage "
                         "stops before one")
        from frame_mlir.tools.cuda_run import check_stage

        check_stage(args.target, args.emit_stage)
        from frame_mlir.tools.dp_run import checkpoint_path, start_job

        if args.data_parallel and args.target != "cpu":
            parser.error("--data-parallel trains on the CPU (--target cpu)")
        if args.target != "cpu" and (args.checkpoint_every or args.resume):
            parser.error("--checkpoint-every and --resume apply to --target cpu")
        # first, so that a failure from here on names its rank and ends the whole job
        job = start_job(args, "frame-run")
        if args.profile and args.target != "cpu":
            parser.error("--profile applies to --target cpu (the JIT's kernels)")
        if args.cuda_arch is not None and args.target == "cpu":
            parser.error("--cuda-arch applies to --target cuda")
        args.cuda_arch = args.cuda_arch or "sm_80"
        spec = load_model(args.spec, spec_overrides(args) if not args.benchmark else None,
                          strict=args.strict)
        from frame_mlir.tools.network_bench import check_benchmark_flags, run_benchmark

        warmup, timed = check_benchmark_flags(args, not isinstance(spec, ModelSpec), args.spec)
        if not isinstance(spec, ModelSpec):  # a JSON network
            if not args.benchmark:  # which refuses these flags itself (BENCH-002)
                v0_only = flags_given(args, ("steps", "log_every"))
                if args.print_predictions:  # store_true: False, not None, when absent
                    v0_only.append("--print-predictions")
                if v0_only == ["--steps"]:
                    parser.error("--steps applies to v0 model specs and to a network's "
                                 "--benchmark only")
                if v0_only:
                    parser.error(_verb(v0_only, "applies", "apply") + " to v0 model specs "
                                 "only" + ("; --steps also to a network's --benchmark"
                                           if args.steps is not None else ""))
            if args.emit_stage and not args.benchmark:
                ignored = flags_given(args, ("lr", *RUN_FILE_FLAGS)) + network_flags_given(args)
                if ignored:
                    parser.error(_verb(ignored, "needs", "need") + " a training run; "
                                 "--emit-stage stops before one")
                emit_network_stage(spec, args.emit_stage, sys.stdout,
                                   print_ir_after_all=args.print_ir_after_all,
                                   options=compile_options(args.threads), target=args.target,
                                   arch=args.cuda_arch)
                return 0
            if args.lr is not None:  # a network's rate: >= 0 (0 freezes the parameters)
                try:
                    args.lr = nonneg_float(args.lr)
                except argparse.ArgumentTypeError as e:
                    parser.error(f"argument --lr: {e}")
            if args.target == "cuda":
                from frame_mlir.backend.cuda.driver import CudaDevice

                CudaDevice().close()  # no GPU (CUDA-001..003) costs no compile
            if args.benchmark:
                return run_benchmark(spec, args, sys.stdout, warmup=warmup, steps=timed,
                                     options=compile_options(args.threads),
                                     use_cache=not args.no_cache, target=args.target,
                                     print_ir_after_all=args.print_ir_after_all)
            return run_network(spec, args, sys.stdout, options=compile_options(args.threads),
                               print_ir_after_all=args.print_ir_after_all,
                               use_cache=not args.no_cache, target=args.target)
        given = network_flags_given(args)
        if given:
            parser.error(_verb(given, "applies", "apply") + " to JSON network files only; "
                         f"{args.spec} is a v0 model spec")
        if args.emit_stage:
            # --steps, --lr and --log-every edit the spec, so the IR shows them (the
            # learning rate is part of the train step); the files need a run.
            ignored = flags_given(args, RUN_FILE_FLAGS)
            if ignored:
                parser.error(_verb(ignored, "needs", "need") + " a training run; "
                             "--emit-stage stops before one")
            options = compile_options(args.threads)
            if job is not None:  # the split step of one rank's share of the batch
                from frame_mlir.frontends.spec.data_parallel import local_spec

                spec = local_spec(spec, job.size)
                options = job.compile_options(options)
            emit_stage(spec, args.emit_stage, sys.stdout,
                       print_ir_after_all=args.print_ir_after_all,
                       options=options, target=args.target, arch=args.cuda_arch)
            return 0
        if job is not None or args.checkpoint_every or args.resume:
            from frame_mlir.tools.dp_run import run_v0

            return run_v0(spec, sys.stdout, job=job, files=RunFiles.from_args(args),
                          options=compile_options(args.threads),
                          use_cache=not args.no_cache,
                          checkpoint=checkpoint_path(args, spec.name),
                          every=args.checkpoint_every, resume=args.resume,
                          print_predictions=args.print_predictions,
                          print_ir_after_all=args.print_ir_after_all)
        if args.target != "cpu":
            from frame_mlir.tools.cuda_run import run_cuda_training

            return run_cuda_training(spec, sys.stdout, target=args.target,
                                     print_predictions=args.print_predictions,
                                     files=RunFiles.from_args(args))
        return run_training(spec, sys.stdout, print_ir_after_all=args.print_ir_after_all,
                            print_predictions=args.print_predictions,
                            use_cache=not args.no_cache,
                            options=compile_options(args.threads),
                            files=RunFiles.from_args(args))

    return run_cli("frame-run", body)


if __name__ == "__main__":
    sys.exit(main())
