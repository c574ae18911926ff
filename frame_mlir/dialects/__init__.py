"""The project's dialects: `frame` (tensor ops with value semantics) and `frame_rt`."""

# `frame` first: it imports every op family and fills `frame_base.ops` (the op classes
# by name, for VJP rules); importing any module of this package runs this first.
from frame_mlir.dialects import (
    frame,  # noqa: F401
    xdsl_lexer_fix,
    xdsl_linalg_parse_fix,
    xdsl_symbol_fix,
    xdsl_verify_fix,
)

xdsl_lexer_fix.install()
xdsl_linalg_parse_fix.install()
xdsl_symbol_fix.install()
xdsl_verify_fix.install()
