"""Names of the pipeline stages, importable without xDSL (so `--help` stays fast).

`pipeline.stages()` defines what runs at each; it checks that it matches this list.

There is no separate `frontend` dump point: every frontend (JSON spec, JSON network,
`.kyn`, the Python API) builds its frame ops through the ops' shape rules, so its
output is already statically shaped and printed it was, byte for byte, the `frame`
stage (which runs `frame-shape-inference` on it: a check, then, that the frontend's
types agree with the rules, plus verification). `frame` is the frontend's output.
"""

STAGE_NAMES: tuple[str, ...] = (
    "frame", "autodiff", "sgd", "linalg", "bufferized", "loops", "llvm",
)

#: After the llvm dialect: LLVM IR before and after O3, and host assembly.
BACKEND_STAGES: tuple[str, ...] = ("llvm-ir", "llvm-opt", "asm")

#: After `bufferized` on the CUDA target (`frame-run --target cuda`): kernels mapped onto
#: grids and host launches (`gpu`), the device module in the llvm dialect
#: (`gpu-llvm`), its LLVM IR for nvptx64 (`nvvm`) and the PTX (`ptx`).
CUDA_STAGES: tuple[str, ...] = ("gpu", "gpu-llvm", "nvvm", "ptx")

#: Every dump point of `frame-run --emit-stage`, in pipeline order (the CUDA target's
#: after the CPU's).
ALL_STAGES: tuple[str, ...] = (*STAGE_NAMES, *BACKEND_STAGES, *CUDA_STAGES)

#: The stages both targets share.
SHARED_STAGES: tuple[str, ...] = STAGE_NAMES[:STAGE_NAMES.index("bufferized") + 1]


def pipeline_name(stage: str) -> str:
    """frame-opt's named pipeline that runs the passes from frame IR through `stage`
    (`frame-opt x.mlir -p frame-to-llvm`)."""
    return f"frame-to-{stage}"
