"""Source locations for frame-opt: parsed ops remember where they were written.

mlir-opt attaches a `loc("file":line:col)` to every op it parses and reports a
verifier failure at the failing op's location. xDSL's parser keeps locations only
when the text spells them out (`loc(...)`), so `LocatingParser` records the start of
every op it parses and, once the module is read, gives each op without a location a
`FileLineColLoc`. When a module fails to verify, `locate_failure` finds the first op
whose own verifier fails, so the driver can prefix the message with `file:line:col`.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException

E = TypeVar("E", bound=BaseException)

#: The attribute of an exception that records where its diagnostic belongs (see
#: `locate`): frame-opt's error prefix and `--verify-diagnostics` both read it.
LOCATION_ATTR = "frame_location"


@dataclass(frozen=True)
class SourceLoc:
    """A position in an input file (1-based line and column)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def locate(error: E, loc: SourceLoc | None) -> E:
    """Record `loc` on `error` (if it has none yet) and prefix its message with it:
    in place, so it keeps its type and notes. The innermost caller that knows a
    location wins (the op being parsed, the op a pass failed on)."""
    if getattr(error, LOCATION_ATTR, None) is None:
        setattr(error, LOCATION_ATTR, loc)
        if loc is not None:
            with_location(error, str(loc))
    return error


def location_of_error(error: BaseException) -> SourceLoc | None:
    """The location `locate` recorded on `error`, if any."""
    return getattr(error, LOCATION_ATTR, None)


class LocatingParser(Parser):
    """A Parser that records the source position of every op it parses."""

    def __init__(self, ctx: Context, text: str | bytes, name: str = "<unknown>", *,
                 line_offset: int = 0) -> None:
        super().__init__(ctx, text, name)
        self._op_starts: list[tuple[Operation, int]] = []
        self._line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except DiagnosticException as e:
            # An attribute or type that fails its own verifier while being parsed
            # (`Unexpected attribute f32`) raises no ParseError and has no span: it
            # belongs to the op being parsed (the innermost one: it locates first).
            raise locate(e, self._source_loc(start)) from None
        self._op_starts.append((op, start))
        return op

    def _source_loc(self, pos: int) -> SourceLoc:
        """The file:line:col of offset `pos` of the input (line_offset applied)."""
        text = self.lexer.input.content
        line_start = text.rfind("\n", 0, pos) + 1
        return SourceLoc(self.lexer.input.name, text.count("\n", 0, pos) + 1 + self._line_offset,
                         pos - line_start + 1)

    def parse_located_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """`parse_module`, then a FileLineColLoc on every op that has no location."""
        module = self.parse_module(allow_implicit_module)
        text = self.lexer.input.content
        # Offsets where lines start, to turn positions into (line, column) by bisection:
        # counting newlines per op would be quadratic on a large IR dump.
        line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        name = StringAttr(self.lexer.input.name)
        for op, pos in self._op_starts:
            if isinstance(op.location, UnknownLoc):
                line = bisect_right(line_starts, pos)
                col = pos - line_starts[line - 1] + 1
                op.location = FileLineColLoc(name, IntAttr(line + self._line_offset),
                                             IntAttr(col))
        return module


def source_loc_of(op: Operation | None) -> SourceLoc | None:
    """The location of `op`, or of its nearest ancestor that has one (an op a pass
    created has none of its own)."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return SourceLoc(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None


def where_of(op: Operation | None) -> str | None:
    """`file:line:col` of `op`, or of its nearest ancestor that has one."""
    loc = source_loc_of(op)
    return None if loc is None else str(loc)


def failure_loc(module: ModuleOp) -> SourceLoc | None:
    """The location of the first op (in source order) whose own verifier fails."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException:
            return source_loc_of(op)
        except Exception:  # a verifier that crashes is not the one we are looking for
            continue
    return None


def locate_failure(module: ModuleOp) -> str | None:
    """`file:line:col` of the first op (in source order) whose own verifier fails."""
    loc = failure_loc(module)
    return None if loc is None else str(loc)


def with_location(error: E, where: str | None) -> E:
    """`error` with its message prefixed by `where` (a location, or a pass name): in
    place, so it keeps its type and notes."""
    if where and error.args and not str(error.args[0]).startswith(where):
        error.args = (f"{where}: {error.args[0]}", *error.args[1:])
    return error
