"""frame-opt: an mlir-opt style driver with the frame dialect and every project pass.

    frame-opt file.mlir -p frame-shape-inference,frame-autodiff
    frame-opt file.mlir -p frame-to-llvm                  # a named pipeline
    frame-opt file.mlir --split-input-file --verify-diagnostics -p frame-autodiff

`--help` lists the frame passes and the named pipelines (one per stage of
`frame-run --emit-stage`, the driver's own pass lists); all of xDSL's dialects and
passes are available too (convert-linalg-to-loops, cse, dce, ...: `--list-passes`).
The IR is verified after every pass (`--verify-each=0`: only the input and the output,
still naming the pass that broke it). `--timing` reports each pass's wall time.
`--verify-diagnostics` checks mlir-opt's
`// expected-error {{...}}` annotations (see `verify_diagnostics.py`).
"""

from __future__ import annotations

import argparse
import io
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.xdsl_opt_main import xDSLOptMain

from frame_mlir.tools.version import version_text

if TYPE_CHECKING:
    from xdsl.utils.exceptions import ParseError

    from frame_mlir.tools.locations import SourceLoc
    from frame_mlir.tools.verify_diagnostics import Diagnostic

_DESCRIPTION = ("frame-opt: parse MLIR (the frame dialect and xDSL's), run passes and "
                "pipelines on it, print the result; as mlir-opt.")


class FrameOptMain(xDSLOptMain):
    """xDSL's opt driver plus the frame dialect, the frame_mlir passes and pipelines."""

    version_format = version_text("frame-opt")

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        from frame_mlir.dialects.frame import Frame
        from frame_mlir.dialects.frame_rt import FrameRt

        self.ctx.register_dialect("frame", lambda: Frame)
        self.ctx.register_dialect("frame_rt", lambda: FrameRt)

    def register_all_passes(self) -> None:
        """xDSL's passes, then ours, which replace any of the same name. A frame pass is
        registered by name only: its module is imported when a pipeline names it (all
        of them cost ~0.3 s, half of a start; the pipelines' classes import none)."""
        super().register_all_passes()
        from frame_mlir.passes.registry import PASSES, PIPELINES, pass_factory

        self.upstream_passes = sorted(self.available_passes)
        for name in PASSES:
            self.register_pass(name, pass_factory(name))
        for p in PIPELINES:
            self.register_pass(p.name, lambda p=p: p)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        """xDSL's flags, with `--help` leading on what is ours: the frame passes and
        pipelines (xDSL's ~200 passes are one line away, behind `--list-passes`)."""
        super().register_all_arguments(arg_parser)
        # The listing follows the description, so that it comes first, before the
        # options. It is written only when the help is: it imports every pass (~0.3 s,
        # which every start paid when it was the description itself).
        arg_parser.description = _DESCRIPTION
        arg_parser.formatter_class = _help_formatter(
            lambda: self.pass_listing(upstream=False))
        for action in arg_parser._actions:
            if action.dest == "passes":
                action.help = ("comma-separated passes and pipelines, each with options in "
                               "braces: -p 'frame-autodiff,frame-sgd-fuse{lr=0.05}' or "
                               "-p frame-to-llvm (listed below)")
                action.metavar = "PIPELINE"
            elif action.dest == "verify_diagnostics":
                action.help = ("check the input's `// expected-error {{...}}` annotations "
                               "(also -warning, -note, @+N/@-N/@above/@below) against the "
                               "diagnostics, as mlir-opt does; exit 1 on any mismatch")
            elif action.dest == "parsing_diagnostics":
                action.help = ("print a parse error and continue with the next chunk "
                               "(with --verify-diagnostics, parse errors are diagnostics)")
        arg_parser.add_argument(
            "--list-passes", action="store_true",
            help="list every pass and pipeline, xDSL's included, with its description")
        arg_parser.add_argument(
            "--verify-each", type=_flag01, nargs="?", const=True, default=True,
            metavar="0|1",
            help="verify the IR after every pass (default 1, as mlir-opt); with 0 only "
            "the input and the output are verified, and a failure of the output runs the "
            "passes again, verifying each, to name the pass that broke the IR")
        arg_parser.add_argument(
            "--timing", action="store_true",
            help="print the wall time of each pass and of verification to stderr, as "
            "mlir-opt's --mlir-timing (also: FRAME_TIMING=1)")

    def pass_listing(self, upstream: bool) -> str:
        """The frame passes and pipelines with their options and one-line descriptions;
        with `upstream`, xDSL's passes too (else only how many there are)."""
        from frame_mlir.passes.registry import (
            PIPELINES,
            StagePipeline,
            all_passes,
            option_names,
            summary,
        )

        def rows(types: Sequence[type[ModulePass]], common: Sequence[str] = ()) -> list[str]:
            lines = []
            for p in types:
                opts = [o for o in option_names(p) if o not in common]
                head = p.name + (f"{{{' '.join(opts)}}}" if opts else "")
                text = textwrap.wrap(summary(p), 96 - 32) or [""]
                if len(head) > 29:
                    lines.append(f"  {head}")
                    head = ""
                lines.append(f"  {head:<29} {text[0]}")
                lines.extend(f"  {'':<29} {t}" for t in text[1:])
            return lines

        out = ["frame passes (-p NAME or NAME{option=value ...}):", *rows(all_passes()), "",
               "pipelines (the stages of frame-run --emit-stage, as frame-run runs them;",
               "options lr=0.01, sgd=true|false, threads=1):",
               *rows(PIPELINES, common=option_names(StagePipeline)), ""]
        names = self.upstream_passes
        if upstream:
            out += [f"upstream xDSL passes ({len(names)}):",
                    *rows([self.available_passes[n]() for n in names])]
        else:
            shown = ", ".join(n for n in ("cse", "dce", "canonicalize",
                                          "convert-linalg-to-loops") if n in names)
            out += [f"upstream xDSL passes: {len(names)} more ({shown}, ...); "
                    "frame-opt --list-passes lists them all."]
        return "\n".join(out)

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
        """xDSL's pipeline parser, then each named pipeline replaced by its passes (so
        each is verified and named on failure like any other). xDSL's syntax errors
        derive from BaseException, which would escape the CLI's error handling as a
        traceback: make them ValueErrors."""
        from xdsl.utils.exceptions import ArgSpecParseError

        from frame_mlir.passes.registry import StagePipeline

        try:
            super().setup_pipeline()
        except ArgSpecParseError as e:
            raise ValueError(f"invalid pass pipeline {self.args.passes!r}: {e}") from None
        passes: list[ModulePass] = []
        for p in self.pipeline.passes:
            passes.extend(p.expand() if isinstance(p, StagePipeline) else (p,))
        self.pipeline = PassPipeline(tuple(passes), self.pipeline.callback)

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """`-` is standard input, as for mlir-opt (and frame-run / frame-dslc); a file
        must be a regular file (a device or FIFO is refused unread, IO-001)."""
        if self.args.input_file == "-":
            self.args.input_file = None
        if self.args.input_file is not None:
            from frame_mlir.fileio import check_regular_file

            check_regular_file(self.args.input_file)
        return super().get_input_stream()

    def apply_passes(self, prog: ModuleOp) -> None:
        """The passes one by one, verifying after each (as xDSL's pipeline does), or with
        `--verify-each=0` the input and the output only.

        A failure says where: a verifier error names the failing op's file:line:col
        and, past the input, the pass after which the IR stopped verifying; any other
        error raised inside a pass is prefixed with that pass's name. The location is
        also recorded on the exception (`locations.locate`) for --verify-diagnostics.
        """
        passes = self.pipeline.passes
        original = None if self.args.verify_each or not passes else prog.clone()
        try:
            self._run_passes(prog, passes, verify_each=self.args.verify_each)
        except Exception:
            if original is None:
                raise
            # Verified only at the end, or a pass failed on IR an earlier one may have
            # broken: run the passes again on the input, verifying after each, so the
            # error is the one --verify-each=1 gives (naming the pass that broke it).
            self._run_passes(original, passes, verify_each=True)
            raise

    def _run_passes(self, prog: ModuleOp, passes: Sequence[ModulePass], *,
                    verify_each: bool) -> None:
        """`apply_passes`' loop: verify the input, apply each pass, verify after each
        (every one with `verify_each`, else only the last) -- xDSL's callback also prints
        between passes with `--print-between-passes`."""
        from xdsl.utils.exceptions import (
            DiagnosticException,
            PassFailedException,
            VerifyException,
        )

        from frame_mlir import timing
        from frame_mlir.tools.locations import failure_loc, locate, source_loc_of, with_location

        callback = self.pipeline.callback
        running: ModulePass | None = None
        done: ModulePass | None = None
        try:
            for nxt in (*passes, None):
                if callback is not None and (verify_each or done is None or nxt is None):
                    with timing.section("verify"):
                        callback(done, prog, nxt)  # verifies (unless --disable-verify)
                if nxt is None:
                    break
                running = nxt
                with timing.section(nxt.name):
                    nxt.apply(self.ctx, prog)
                running, done = None, nxt
        except PassFailedException as e:
            # The pass's own diagnostic names it; add where the op was written.
            raise locate(e, source_loc_of(getattr(e, "op", None))) from None
        except VerifyException as e:
            stage = running.name if running else (f"after {done.name}" if done else None)
            if stage is not None and not verify_each and len(passes) > 1:
                stage = f"after the pipeline, which ends with {done.name}" if done else stage
            raise locate(with_location(e, stage), failure_loc(prog)) from None
        except DiagnosticException as e:
            raise locate(with_location(e, running.name if running else None), None) from None
        except Exception as e:
            if running is None:
                raise
            raise locate(with_location(e, f"in pass {running.name}"), None) from None

    def run(self) -> int:
        """mlir-opt's behaviour: print the result, or with --verify-diagnostics check
        the diagnostics against the input's annotations (exit 1 on a mismatch)."""
        if self.args.list_passes:
            print(self.pass_listing(upstream=True))
            return 0
        from frame_mlir import timing

        with timing.compile_session(self.args.timing or None, title="frame-opt"):
            if not self.args.verify_diagnostics:
                super().run()
                return 0
            return self.run_verifying()

    def run_verifying(self) -> int:
        """`--verify-diagnostics`: process every chunk, collect its diagnostics instead
        of stopping, print the successful chunks' output, then report every unexpected
        diagnostic and unmet expectation (see `verify_diagnostics.py`)."""
        from frame_mlir.tools.verify_diagnostics import Chunk, verify

        chunks, file_extension = self.prepare_input()
        datas: list[tuple[bytes, int]] = []
        for chunk, offset in chunks:
            datas.append((chunk.read(), offset))
            chunk.close()
        # The chunks were split at `// -----`: joined again, they are the whole file,
        # whose line numbers the annotations and the diagnostics both use.
        text = b"// -----".join(d for d, _ in datas).decode("utf-8", errors="replace")
        name = self.get_input_name()
        output = self.prepare_output()
        results: list[Chunk] = []
        try:
            for i, (data, offset) in enumerate(datas):
                if i > 0:
                    output.write("// -----\n")
                results.append(Chunk(offset + 1, self._chunk_diagnostics(
                    data, offset, file_extension, output)))
                output.flush()
        finally:
            if output is not sys.stdout:
                output.close()
        report = verify(name, text, results)
        if report:
            sys.stdout.flush()  # the chunks' output first, when both go to a terminal
            print("\n".join(report), file=sys.stderr)
            print(f"frame-opt: error: --verify-diagnostics: {len(report)} mismatch"
                  f"{'es' if len(report) != 1 else ''} between the diagnostics and the "
                  f"expected-* annotations of {name}", file=sys.stderr)
            return 1
        return 0

    def _chunk_diagnostics(self, data: bytes, offset: int, file_extension: str,
                           output: IO[str]) -> list[Diagnostic]:
        """Parse and transform one chunk, writing its output if it succeeds; its
        diagnostics (errors, their notes, warnings)."""
        from xdsl.utils.exceptions import DiagnosticException, ParseError

        from frame_mlir.tools.locations import LOCATION_ATTR, location_of_error
        from frame_mlir.tools.verify_diagnostics import Diagnostic

        diagnostics: list[Diagnostic] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                module = self.parse_chunk(io.BytesIO(data), file_extension, offset)
                if module is not None:
                    self.apply_passes(module)
                    output.write(self.output_resulting_program(module))
            except ParseError as e:
                diagnostics.extend(_parse_error_diagnostics(e, offset))
            except Exception as e:
                # A located error (verifier, pass), or any failure inside a pass
                # (apply_passes records an unknown location for those).
                if not (isinstance(e, DiagnosticException) or hasattr(e, LOCATION_ATTR)):
                    raise
                loc = location_of_error(e)
                message = str(e.args[0]) if e.args else str(e)
                if loc is not None and message.startswith(f"{loc}: "):
                    message = message[len(f"{loc}: "):]
                diagnostics.append(Diagnostic("error", message, loc))
                # xDSL adds the module, printed, as a note: not a diagnostic note.
                diagnostics.extend(Diagnostic("note", n, loc)
                                   for n in getattr(e, "__notes__", ()) if "\n" not in n)
        diagnostics.extend(_warning_diagnostic(str(w.message), self.get_input_name())
                           for w in caught)
        return diagnostics


def _help_formatter(listing: Callable[[], str]) -> type[argparse.HelpFormatter]:
    """argparse's formatter of a raw description, which adds `listing()` after frame-opt's
    description when the help is formatted (not when the parser is built)."""

    class HelpFormatter(argparse.RawDescriptionHelpFormatter):
        def add_text(self, text: str | None) -> None:
            if text == _DESCRIPTION:
                text = f"{text}\n\n{listing()}"
            super().add_text(text)

    return HelpFormatter


def _flag01(text: str) -> bool:
    """argparse type of `--verify-each=0|1` (also true/false)."""
    value = {"1": True, "true": True, "0": False, "false": False}.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected 0 or 1, found {text!r}")
    return value


def _parse_error_diagnostics(e: ParseError, offset: int) -> list[Diagnostic]:
    """A parse error at its token (and the notes of a re-declaration at theirs), with
    lines of the whole file."""
    from xdsl.utils.exceptions import MultipleSpansParseError
    from xdsl.utils.lexer import Span

    from frame_mlir.tools.locations import SourceLoc
    from frame_mlir.tools.verify_diagnostics import Diagnostic

    def at(span: Span[str] | Span[bytes]) -> SourceLoc:
        loc = span.get_location()
        return SourceLoc(loc.file, loc.line + offset - span.line_offset, loc.col)

    diags = [Diagnostic("error", e.msg, at(e.span))]
    if isinstance(e, MultipleSpansParseError):
        for span, msg in e.refs:
            diags.append(Diagnostic("note", msg or e.ref_text or "", at(span)))
    return diags


def _warning_diagnostic(message: str, file: str) -> Diagnostic:
    """A Python warning as a diagnostic: at `<input>:line:col` when its message starts
    with that, else at an unknown location (`expected-warning@unknown`)."""
    import re

    from frame_mlir.tools.locations import SourceLoc
    from frame_mlir.tools.verify_diagnostics import Diagnostic

    m = re.match(rf"{re.escape(file)}:(\d+):(\d+): ", message)
    if m is None:
        return Diagnostic("warning", message, None)
    return Diagnostic("warning", message[m.end():],
                      SourceLoc(file, int(m.group(1)), int(m.group(2))))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `frame-opt` console script."""
    from frame_mlir.tools.errors import run_cli

    return run_cli("frame-opt", lambda: FrameOptMain(args=argv).run())


if __name__ == "__main__":
    sys.exit(main())
