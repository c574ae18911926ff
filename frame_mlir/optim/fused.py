"""Plain SGD as one op per parameter, `frame.sgd_update`, for the steps that fuse the
update into the gradient function (v0's frame-sgd-fuse and frame-dp-split) and the
Python API's update graph.

`frame.sgd_update %p, %g {lr}` computes `p + (-lr) g` in float32 and rounds once; its
verifier asks for an lr > 0 that is finite in float32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame

__all__ = ["F32_TINY", "rounded_sgd_update", "sgd_update"]

#: The smallest normal float32: a smaller lr would be a subnormal (or zero) f32 attribute;
#: the step-first form computes those exactly without relying on how one is kept.
F32_TINY = float(np.finfo(np.float32).tiny)


def sgd_update(param: SSAValue, grad: SSAValue, lr: float) -> frame.SgdUpdateOp:
    """`param + (-lr) grad` as `frame.sgd_update` (not inserted: the caller places it).

    Raises:
        VerifyException: the op's checks (lr, the operands' shapes and types)."""
    return frame.SgdUpdateOp(param, grad, lr)


def rounded_sgd_update(param: SSAValue, grad: SSAValue, lr: float, *, float32: bool,
                       scaled_grad: Callable[[], SSAValue]) -> frame.SgdUpdateOp:
    """`p + (-lr) g` rounded as `add(p, mul(constant(-lr), g))` in the parameter's dtype
    (-lr, the product and the sum each rounded to it), on `frame.sgd_update`.

    In float32 (`float32`) with lr a positive normal float32, the op IS that reference.
    Otherwise -- a float16/bfloat16 parameter, whose product the reference rounds to
    that dtype, or an lr <= 0 or outside float32's range, which the op cannot hold --
    the step is rounded first: `scaled_grad()` emits `s = lr * g` in the parameter's
    dtype (the frontend's constant and multiply), then `sgd_update(p, s, lr=1)` = `p -
    s`. That is bit-identical as well: round-to-nearest-even is symmetric, so
    `-round(lr) * g` rounds to `-round(round(lr) * g)`, and `p - s` is exactly `p +
    (-s)`. The op is returned uninserted, after whatever `scaled_grad` emitted."""
    if float32 and F32_TINY <= lr <= frame.F32_MAX:
        return sgd_update(param, grad, lr)
    return sgd_update(param, scaled_grad(), 1.0)
