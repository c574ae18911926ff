"""Names of the pipeline stages, importable without xDSL (so `--help` stays fast).

`pipeline.stages()` defines what runs at each; it checks that it matches this list.
"""

STAGE_NAMES: tuple[str, ...] = (
    "frame", "autodiff", "sgd", "linalg", "bufferized", "loops", "llvm",
)

#: After the llvm dialect: LLVM IR before and after O3, and host assembly.
BACKEND_STAGES: tuple[str, ...] = ("llvm-ir", "llvm-opt", "asm")

#: Every dump point of `frame-run --emit-stage`, in pipeline order.
ALL_STAGES: tuple[str, ...] = ("frontend", *STAGE_NAMES, *BACKEND_STAGES)
