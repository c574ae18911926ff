"""The choices one compile makes for its target (`CompileOptions`).

A module of its own, importing nothing heavy: the tools build options from their flags
before deciding whether the compile cache can skip the whole pipeline (and xDSL).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

#: Verify the IR after every pass (not only the pipeline's input and output): any value
#: but empty or 0. `--verify-each` on the tools; see `passes/pipeline.py`, run_passes.
ENV_VERIFY_EACH = "FRAME_VERIFY_EACH"
#: Units the LLVM backend compiles at once (a positive integer; default: the cores
#: available). `--compile-jobs N` on the tools; see `backend/llvm/jit.py`.
ENV_COMPILE_JOBS = "FRAME_COMPILE_JOBS"
#: Profile the generated kernels (any value but empty or 0): what `profile=None`
#: resolves to. `--profile` on frame-run; see `frame_mlir/runtime/profile.py`.
ENV_PROFILE = "FRAME_PROFILE"


def env_flag(name: str) -> bool:
    """Whether the environment variable `name` is set to anything but empty or 0."""
    import os

    return os.environ.get(name, "").strip() not in ("", "0")


@dataclass(frozen=True)
class CompileOptions:
    """Target choices of one compile: the code generator's knobs, fixed per module.

    `threads` is how many threads the step's kernels are split over (results are
    bit-identical for every count; None: `FRAME_NUM_THREADS`, else the cores available
    to the process, see `frame_mlir.target.host.default_threads`); `f32_lanes` the
    vector width of generated kernels (None: the host's widest, see
    `frame_mlir.target.host`). Part of a compiled object's identity (the compile
    cache keys on `resolved()`).
    """

    threads: int | None = None
    f32_lanes: int | None = None
    # Overrides of the host's cache sizes for `frame-gemm`'s blocking (tests use small
    # ones to reach every block edge on small shapes); `gemm=False` keeps the plain
    # loops (a reference for bit-identity tests).
    l1_bytes: int | None = None
    l2_bytes: int | None = None
    l3_bytes: int | None = None
    gemm: bool = True
    gemm_min_flops: int | None = None
    # `fuse_elementwise=False` keeps one generic per elementwise op (a reference for
    # the bit-identity tests of frame-fuse-elementwise).
    fuse_elementwise: bool = True
    # `fuse_epilogue=False` keeps a GEMM's elementwise consumers as kernels of their
    # own (the reference for frame-fuse-gemm-epilogue's bit-identity tests).
    fuse_epilogue: bool = True
    # `fold_movement=False` keeps the transposes and reshapes that feed contractions as
    # copies (the reference for frame-fold-movement's bit-identity tests).
    fold_movement: bool = True
    # Data-parallel training over this many ranks: the `sgd` stage splits the train
    # step around the gradient allreduce (frame-dp-split) instead of fusing SGD into
    # it (frame-sgd-fuse). None: one fused train step.
    data_parallel: int | None = None
    # Time every kernel call of the model functions (frame-profile-kernels; the
    # counters are read by `frame_mlir.runtime.profile`). None: `FRAME_PROFILE`.
    profile: bool | None = None

    def resolved(self) -> CompileOptions:
        """These options with the host's and the environment's defaults filled in where
        they are None (what a compile uses, so what a cache must key on). ValueError
        for a bad `FRAME_NUM_THREADS`."""
        out = self
        if out.profile is None:
            out = replace(out, profile=env_flag(ENV_PROFILE))
        if out.threads is not None:
            return out
        from frame_mlir.target.host import default_threads

        return replace(out, threads=default_threads())
