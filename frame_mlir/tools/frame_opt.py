"""frame-opt: an mlir-opt style driver with the frame dialect and every project pass.

    frame-opt file.mlir -p frame-shape-inference,frame-autodiff
    frame-opt file.mlir -p convert-frame-to-linalg --verify-diagnostics

All of xDSL's dialects and passes are available too (convert-linalg-to-loops,
convert-scf-to-cf, cse, dce, ...). The IR is verified after every pass.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from frame_mlir.tools.version import version_text


class FrameOptMain(xDSLOptMain):
    """xDSL's opt driver plus the frame dialect and the frame_mlir passes."""

    version_format = version_text("frame-opt")

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        from frame_mlir.dialects.frame import Frame

        self.ctx.register_dialect("frame", lambda: Frame)

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        """MLIR text through `LocatingParser`: every op gets a file:line:col location."""
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        from frame_mlir.tools.locations import LocatingParser

        parser = LocatingParser(self.ctx, chunk.read(), self.get_input_name(),
                                line_offset=start_offset)
        return parser.parse_located_module(not self.args.no_implicit_module)

    def apply_passes(self, prog: ModuleOp) -> None:
        """The passes; a verifier failure names the failing op's file:line:col."""
        from xdsl.utils.exceptions import VerifyException

        from frame_mlir.tools.locations import locate_failure, with_location

        try:
            super().apply_passes(prog)
        except VerifyException as e:
            raise with_location(e, locate_failure(prog)) from None

    def register_all_passes(self) -> None:
        super().register_all_passes()
        from frame_mlir.passes.registry import ALL_PASSES

        for p in ALL_PASSES:
            self.register_pass(p.name, lambda p=p: p)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `frame-opt` console script."""
    from frame_mlir.tools.errors import run_cli

    return run_cli("frame-opt", lambda: FrameOptMain(args=argv).run())


if __name__ == "__main__":
    sys.exit(main())
