"""The `frame` dialect: tensor ops with value semantics for training graphs.

Every frontend (spec v0 JSON, the nn Modules, later the network JSON, the
`.kyn` DSL and the Python API) lowers into these ops, and every backend consumes
IR derived from them by one shared pass pipeline.

Types are builtin tensors of `f32`, `f16` or `bf16` (16-bit storage; kernels compute in
f32 and round at op boundaries); an op's operands and result share one element type. A
result may be written unranked (`tensor<*xf32>`) by a frontend or a hand-written test; `frame-shape-inference`
replaces it with the static type computed by the op's shape rule. Once shapes
are known, each op's verifier checks that its result type equals what the shape
rule says, so a malformed graph is reported at the op that is wrong.

Each op class carries:
  * ``infer_shape(operand_shapes)`` -- the shape rule, the single place an op's
    result shape is defined (builders, the verifier and shape inference use it);
  * a docstring with a one-line IR example.

The ops live in family files (`frame_elementwise.py`, `frame_contraction.py`,
`frame_reduce.py`, `frame_conv.py`, ...; `docs/adding-an-op.md`), each holding its ops'
shape rules and verifiers, their VJP rules (`VJP_RULES`) and their lowerings
(`LOWERINGS`), built on `frame_base.py`: the base classes (`FrameOp`, `UnaryOp`,
`BinaryOp`, `ElementwiseBinaryOp`, `BroadcastingBinaryOp`), `ShapeError`, the shape
helpers and the core ops (`frame.constant`, `frame.sgd_update`, `frame.update`). This
module, the one users import, re-exports the base and every family's classes
(`frame.AddOp`, ...) and defines the dialect from the families' `OPS`; nothing below it
imports it. `frame_mlir.passes.vjp_rules` and `frame_mlir.passes.convert_frame_to_linalg`
merge the tables: one table per concern.
"""

from __future__ import annotations

from xdsl.ir import Dialect

# The op families live in their own files, each with its VJP rules and lowerings; they
# build on `frame_base` only. Each family's ops are added to the dialect below and
# re-exported.
from frame_mlir.dialects import (
    frame_base,
    frame_contraction,
    frame_conv,
    frame_elementwise,
    frame_index,
    frame_loss,
    frame_math,
    frame_movement,
    frame_norm,
    frame_pool,
    frame_reduce,
    frame_scan,
    frame_softmax,
    frame_spectral,
)
from frame_mlir.dialects.frame_base import (  # noqa: F401
    F32_MAX,
    FLOAT_TYPES,
    LOWERINGS,
    RESULT_SHAPE,
    VJP_RULES,
    AnyF32Tensor,
    BinaryOp,
    BroadcastingBinaryOp,
    ConstantOp,
    DeclaredShape,
    ElementwiseBinaryOp,
    FrameOp,
    SgdUpdateOp,
    Shape,
    ShapeError,
    UnaryOp,
    UpdateOp,
    broadcast_dims,
    broadcast_rule,
    check_axes,
    declared_shape,
    element_type,
    reduced_shape,
    same_shape_rule,
    static_shape,
    tensor_type,
    unranked,
)
from frame_mlir.dialects.frame_contraction import MatmulOp  # noqa: F401
from frame_mlir.dialects.frame_conv import (  # noqa: F401
    ConvGradInputOp,
    ConvGradWeightOp,
    ConvOp,
    ConvTransposeOp,
    conv_output_shape,
    conv_transpose_output_shape,
)
from frame_mlir.dialects.frame_elementwise import (  # noqa: F401
    AddOp,
    HeavisideSurrogateGradOp,
    HeavisideSurrogateOp,
    MulOp,
    NegOp,
    ReluGradOp,
    ReluOp,
    ScaleOp,
    SigmoidOp,
    SubOp,
)
from frame_mlir.dialects.frame_index import (  # noqa: F401
    GatherRowsOp,
    IndexAddOp,
    IndexSelectOp,
    ScatterAddOp,
)
from frame_mlir.dialects.frame_loss import (  # noqa: F401
    CrossEntropyGradOp,
    CrossEntropyOp,
    MseLossGradOp,
    MseLossOp,
    NllLossGradOp,
    NllLossOp,
)
from frame_mlir.dialects.frame_math import (  # noqa: F401
    AbsGradOp,
    AbsOp,
    DivOp,
    ExpOp,
    GeluGradOp,
    GeluOp,
    HardtanhGradOp,
    HardtanhOp,
    LogOp,
    ShiftOp,
    SqrtOp,
    StepOp,
    TanhOp,
    ThresholdGradOp,
    ThresholdOp,
)
from frame_mlir.dialects.frame_movement import (  # noqa: F401
    ConcatOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
)
from frame_mlir.dialects.frame_norm import (  # noqa: F401
    BatchNormGradOp,
    BatchNormInferenceGradOp,
    BatchNormInferenceOp,
    BatchNormOp,
    BatchNormStatsOp,
    LayerNormGradOp,
    LayerNormOp,
)
from frame_mlir.dialects.frame_pool import (  # noqa: F401
    AvgPoolGradOp,
    AvgPoolOp,
    GlobalAvgPoolOp,
    GlobalMaxPoolOp,
    MaxPoolGradOp,
    MaxPoolOp,
    pool_output_shape,
)
from frame_mlir.dialects.frame_reduce import (  # noqa: F401
    BroadcastOp,
    MaxGradOp,
    MaximumGradOp,
    MaximumOp,
    MaxOp,
    MeanOp,
    MinimumGradOp,
    MinimumOp,
    SumOp,
)
from frame_mlir.dialects.frame_scan import (  # noqa: F401
    ScanOp,
    SelectiveScanGradOp,
    SelectiveScanOp,
)
from frame_mlir.dialects.frame_softmax import (  # noqa: F401
    LogSoftmaxGradOp,
    LogSoftmaxOp,
    SoftmaxGradOp,
    SoftmaxOp,
)
from frame_mlir.dialects.frame_spectral import (  # noqa: F401
    IrfftGradOp,
    IrfftOp,
    RfftGradOp,
    RfftOp,
)

#: The op families, each a module with `OPS`, `VJP_RULES` and `LOWERINGS`: the dialect
#: holds their ops, frame-autodiff and convert-frame-to-linalg merge their tables.
FAMILIES = (frame_contraction, frame_conv, frame_elementwise, frame_index,
            frame_loss, frame_math, frame_movement, frame_norm,
            frame_pool, frame_reduce, frame_scan, frame_softmax, frame_spectral)

Frame = Dialect(
    "frame",
    [*(op for family in FAMILIES for op in family.OPS), ConstantOp, SgdUpdateOp, UpdateOp],
    [],
)

frame_base.ops.__dict__.update({op.__name__: op for op in Frame.operations})
