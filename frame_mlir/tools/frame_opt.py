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
from xdsl.passes import ModulePass
from xdsl.xdsl_opt_main import xDSLOptMain

from frame_mlir.tools.version import version_text


class FrameOptMain(xDSLOptMain):
    """xDSL's opt driver plus the frame dialect and the frame_mlir passes."""

    version_format = version_text("frame-opt")

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        from frame_mlir.dialects.frame import Frame
        from frame_mlir.dialects.frame_rt import FrameRt

        self.ctx.register_dialect("frame", lambda: Frame)
        self.ctx.register_dialect("frame_rt", lambda: FrameRt)

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        """MLIR text through `LocatingParser`: every op gets a file:line:col location."""
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        from frame_mlir.tools.locations import LocatingParser

        data = chunk.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1 + start_offset
            raise ValueError(f"IO-001 at {self.get_input_name()}:{line}: expected UTF-8 text, "
                             f"found byte 0x{data[e.start]:02x}") from None
        if all(not ln.strip() or ln.lstrip().startswith("//") for ln in text.splitlines()):
            # Nothing but blank lines and comments (an empty file, an empty split chunk):
            # an empty module, as mlir-opt prints for it.
            return ModuleOp([])
        parser = LocatingParser(self.ctx, text, self.get_input_name(),
                                line_offset=start_offset)
        return parser.parse_located_module(not self.args.no_implicit_module)

    def setup_pipeline(self) -> None:
        """xDSL's pipeline parser; its syntax errors derive from BaseException, which
        would escape the CLI's error handling as a traceback: make them ValueErrors."""
        from xdsl.utils.exceptions import ArgSpecParseError

        try:
            super().setup_pipeline()
        except ArgSpecParseError as e:
            raise ValueError(f"invalid pass pipeline {self.args.passes!r}: {e}") from None

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """`-` is standard input, as for mlir-opt (and frame-run / frame-dslc)."""
        if self.args.input_file == "-":
            self.args.input_file = None
        return super().get_input_stream()

    def apply_passes(self, prog: ModuleOp) -> None:
        """The passes one by one, verifying after each (as xDSL's pipeline does).

        A failure says where: a verifier error names the failing op's file:line:col
        and, past the input, the pass after which the IR stopped verifying; any other
        error raised inside a pass is prefixed with that pass's name.
        """
        from xdsl.utils.exceptions import (
            DiagnosticException,
            PassFailedException,
            VerifyException,
        )

        from frame_mlir.tools.locations import locate_failure, where_of, with_location

        passes, callback = self.pipeline.passes, self.pipeline.callback
        running: ModulePass | None = None
        done: ModulePass | None = None
        try:
            for nxt in (*passes, None):
                if callback is not None:
                    callback(done, prog, nxt)  # verifies (unless --disable-verify)
                if nxt is None:
                    break
                running = nxt
                nxt.apply(self.ctx, prog)
                running, done = None, nxt
        except PassFailedException as e:
            # The pass's own diagnostic names it; add where the op was written.
            raise with_location(e, where_of(getattr(e, "op", None))) from None
        except VerifyException as e:
            stage = running.name if running else (f"after {done.name}" if done else None)
            raise with_location(with_location(e, stage), locate_failure(prog)) from None
        except DiagnosticException as e:
            raise with_location(e, running.name if running else None) from None
        except Exception as e:
            if running is None:
                raise
            raise with_location(e, f"in pass {running.name}") from None

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
