"""The `.kyn` parser: hand-written, line-oriented, recursive descent for values.

Why not a parser generator: the language has two indentation levels and one statement
per line, so the structure is decided by a line's indent and first word; only values
(lists and calls, which nest) need recursion. A 4-space-indent rule, comments that may
trail a value, and errors that keep going to the next line are simpler to state here
than as a lark grammar with an indenter (docs/kyn.md, "Parser").

Lexical rules (docs/kyn.md section 1): a top-level line starts at column 1, a body line
with exactly four spaces; tabs in indentation are errors; blank lines are ignored; `#`
starts a comment outside a string. Values: integers (`-?[0-9]+`), floats (`1.5`, `-0.1`,
`.5`, and, our extension, exponents `1e-3`), `true`/`false`, double-quoted strings without
escapes, identifiers, `$name`, `[v, ...]` and `name(v, ..., k=v, ...)`.

Every syntax error of the file is reported (parsing resumes at the next line).
"""

from __future__ import annotations

import re
from pathlib import Path

from frame_mlir.fileio import open_regular
from frame_mlir.frontends.kyn.ast import (
    BatchNormLayer,
    Block,
    Call,
    Comment,
    DatasetBlock,
    DenseLayer,
    DropoutLayer,
    Entry,
    EvaluateBlock,
    ExportBlock,
    Ident,
    Import,
    InputLayer,
    KwArg,
    Layer,
    ListValue,
    Literal,
    Loc,
    ModelBlock,
    ParamRef,
    ParamsBlock,
    Program,
    SweepBlock,
    TrainBlock,
    Value,
)
from frame_mlir.frontends.kyn.errors import KynDiagnostic, KynParseError, did_you_mean

__all__ = ["HEADERS", "LAYER_KINDS", "parse_file", "parse_text", "read_source",
           "tokenize_line"]

#: top-level keywords
HEADERS = ("import", "params", "sweep", "dataset", "model", "train", "evaluate", "export")
LAYER_KINDS = ("input", "dense", "dropout", "batchnorm")
INDENT = 4

_TOKEN = re.compile(r"""
    (?P<ws>[ \t]+)
  | (?P<comment>\#.*)
  | (?P<string>"[^"]*")
  | (?P<badstring>"[^"]*$)
  | (?P<number>-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)
  | (?P<ref>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[\[\](),=:])
""", re.VERBOSE)


class _Tok:
    __slots__ = ("kind", "text", "col", "end")

    def __init__(self, kind: str, text: str, col: int, end: int):
        self.kind, self.text, self.col, self.end = kind, text, col, end  # 0-based cols

    def __repr__(self) -> str:
        return f"{self.kind}:{self.text!r}@{self.col}"


#: The longest integer literal read (Python's int() refuses more than 4300 digits)
_MAX_INT_DIGITS = 4000


class _LineError(Exception):
    def __init__(self, message: str, col: int, end: int | None = None, rule: str = "KYN-P02"):
        super().__init__(message)
        self.col, self.end, self.rule = col, end if end is not None else col + 1, rule


def tokenize_line(text: str) -> tuple[list[_Tok], _Tok | None]:
    """The tokens of one line (0-based columns) and its trailing comment token, if any."""
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            ch = text[pos]
            what = "a tab" if ch == "\t" else repr(ch)
            raise _LineError(f"unexpected character {what}", pos)
        kind = m.lastgroup
        assert kind is not None
        if kind == "badstring":
            raise _LineError("unterminated string: expected a closing '\"'", pos, len(text))
        if kind == "comment":
            return toks, _Tok("comment", m.group(), pos, m.end())
        if kind == "number" and m.end() < len(text) and (text[m.end()].isalnum()
                                                           or text[m.end()] in "_."):
            j = m.end()
            while j < len(text) and (text[j].isalnum() or text[j] in "_."):
                j += 1
            raise _LineError(f"malformed number '{text[pos:j]}'", pos, j)
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), pos, m.end()))
        pos = m.end()
    return toks, None


class _Line:
    """One logical line: its number, tokens, and a cursor for recursive descent."""

    def __init__(self, number: int, toks: list[_Tok], text: str):
        self.number, self.toks, self.text, self.i = number, toks, text, 0

    def loc(self, col: int, end: int) -> Loc:
        return Loc(self.number, col + 1, self.number, end + 1)

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, what: str) -> _Tok:
        t = self.peek()
        if t is None:
            raise _LineError(f"expected {what}, found the end of the line", len(self.text))
        self.i += 1
        return t

    def expect(self, text: str, what: str | None = None) -> _Tok:
        t = self.peek()
        if t is None or t.text != text or t.kind == "string":
            found = "the end of the line" if t is None else f"'{t.text}'"
            col = len(self.text) if t is None else t.col
            raise _LineError(f"expected '{text}'{' ' + what if what else ''}, found {found}",
                             col)
        self.i += 1
        return t

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def finish(self, what: str) -> None:
        t = self.peek()
        if t is not None:
            raise _LineError(f"unexpected '{t.text}' after {what}", t.col, self.toks[-1].end)

    # -- values ----------------------------------------------------------------------
    def value(self, depth: int = 0) -> Value:
        if depth > 32:
            raise _LineError("value nested too deeply (more than 32 levels)", 0)
        t = self.next("a value")
        loc = self.loc(t.col, t.end)
        if t.kind == "string":
            return Literal(t.text[1:-1], loc, t.text)
        if t.kind == "number":
            if re.fullmatch(r"-?[0-9]+", t.text):
                digits = len(t.text.lstrip("-"))
                if digits > _MAX_INT_DIGITS:  # beyond Python's int() limit, and any use
                    raise _LineError(f"integer literal of {digits} digits is too long (at "
                                     f"most {_MAX_INT_DIGITS})", t.col, t.end)
                return Literal(int(t.text), loc, t.text)
            return Literal(float(t.text), loc, t.text)
        if t.kind == "ref":
            return ParamRef(t.text[1:], loc)
        if t.kind == "ident":
            if t.text in ("true", "false"):
                return Literal(t.text == "true", loc, t.text)
            nxt = self.peek()
            if nxt is not None and nxt.text == "(":
                return self._call(t, depth)
            return Ident(t.text, loc)
        if t.text == "[":
            items: list[Value] = []
            if self.peek() is not None and self.peek().text == "]":  # type: ignore[union-attr]
                end = self.next("']'")
                return ListValue((), self.loc(t.col, end.end))
            while True:
                items.append(self.value(depth + 1))
                sep = self.next("',' or ']'")
                if sep.text == "]":
                    return ListValue(tuple(items), self.loc(t.col, sep.end))
                if sep.text != ",":
                    raise _LineError(f"expected ',' or ']' in a list, found '{sep.text}'",
                                     sep.col)
        raise _LineError(f"expected a value, found '{t.text}'", t.col, t.end)

    def _call(self, name: _Tok, depth: int) -> Call:
        self.expect("(")
        args: list[Value] = []
        kwargs: list[KwArg] = []
        t = self.peek()
        if t is not None and t.text == ")":
            end = self.next("')'")
            return Call(name.text, (), (), self.loc(name.col, end.end))
        while True:
            t = self.peek()
            after = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
            if t is not None and t.kind == "ident" and after is not None and after.text == "=":
                self.i += 2
                v = self.value(depth + 1)
                if any(k.name == t.text for k in kwargs):
                    raise _LineError(f"keyword argument '{t.text}' given twice", t.col, t.end)
                kwargs.append(KwArg(t.text, v, self.loc(t.col, self.toks[self.i - 1].end)))
            else:
                if kwargs:
                    raise _LineError("positional argument after a keyword argument",
                                     t.col if t else len(self.text))
                args.append(self.value(depth + 1))
            sep = self.next("',' or ')'")
            if sep.text == ")":
                return Call(name.text, tuple(args), tuple(kwargs), self.loc(name.col, sep.end))
            if sep.text != ",":
                raise _LineError(f"expected ',' or ')' in the arguments of '{name.text}', "
                                 f"found '{sep.text}'", sep.col)


def read_source(path: str | Path) -> str:
    """The text of a `.kyn` file; a missing or unreadable file is a KynParseError
    (rule KYN-P00)."""
    try:
        with open_regular(path, "r", encoding="utf-8") as f:  # no device, FIFO, folder
            return f.read()
    except FileNotFoundError:
        raise KynParseError([KynDiagnostic("KYN-P00", "parse", "file not found",
                                           str(path))]) from None
    except OSError as e:
        raise KynParseError([KynDiagnostic("KYN-P00", "parse", "cannot read the file: "
                                           f"{e.strerror or e}", str(path))]) from None
    except UnicodeDecodeError as e:
        raise KynParseError([KynDiagnostic("KYN-P00", "parse", f"cannot read the file: {e}",
                                           str(path))]) from None


def parse_file(path: str | Path) -> Program:
    """Parse the `.kyn` file at `path` (UTF-8). Raises KynParseError (all syntax errors,
    or KYN-P00 when the file cannot be read)."""
    return parse_text(read_source(path), str(path))


def parse_text(text: str, source: str = "<string>") -> Program:
    """Parse `.kyn` source text; `source` names it in diagnostics.

    Raises:
        KynParseError: every syntax error of the text.
    """
    program, diags = parse_with_diagnostics(text, source)
    if diags:
        raise KynParseError(diags)
    return program


def parse_with_diagnostics(text: str, source: str = "<string>"
                           ) -> tuple[Program, list[KynDiagnostic]]:
    """The program (every line that parsed) and the list of syntax errors."""
    return _Parser(text, source).run()


class _Parser:
    def __init__(self, text: str, source: str):
        self.source = source
        self.lines = text.split("\n")
        if text.startswith("\ufeff"):  # a UTF-8 byte order mark is not part of the text
            self.lines[0] = self.lines[0][1:]
        self.diags: list[KynDiagnostic] = []
        self.comments: list[Comment] = []
        self.items: list[Block] = []
        # the open block: (kind, header line, name, name loc, statements)
        self.block: tuple[str, _Line, str, Loc, list] | None = None
        self.block_broken = False

    def error(self, message: str, line: int, col: int, end: int,
              rule: str = "KYN-P02") -> None:
        self.diags.append(KynDiagnostic(rule, "parse", message, self.source, line, col + 1,
                                        line, end + 1))

    def run(self) -> tuple[Program, list[KynDiagnostic]]:
        for n, raw in enumerate(self.lines, start=1):
            self.line(n, raw.rstrip("\r"))
        self.close()
        return (Program.from_items(tuple(self.items), tuple(self.comments), self.source),
                self.diags)

    def line(self, n: int, raw: str) -> None:
        body = raw.lstrip(" \t")
        if not body.strip():
            return
        lead = raw[:len(raw) - len(body)]
        if body.startswith("#"):
            self.comments.append(Comment(body.rstrip(), n, len(lead) + 1, own_line=True))
            return
        if "\t" in lead:
            self.error("indentation must be exactly 4 spaces, found a tab", n, 0, len(lead),
                       "KYN-P01")
            return
        if len(lead) not in (0, INDENT):
            self.error(f"indentation must be 0 (a block header) or exactly 4 spaces (a block "
                       f"body), found {len(lead)} spaces", n, 0, len(lead), "KYN-P01")
            return
        try:
            toks, comment = tokenize_line(raw)
        except _LineError as e:
            self.error(str(e), n, e.col, e.end, e.rule)
            if not lead:  # a broken header still ends the previous block; its body is
                self.close()  # covered by this error
                self.block_broken = True
            return
        if comment is not None:
            self.comments.append(Comment(comment.text.rstrip(), n, comment.col + 1,
                                         own_line=False))
        line = _Line(n, toks, raw)
        try:
            if lead:
                self.body_line(line)
            else:
                self.header(line)
        except _LineError as e:
            self.error(str(e), n, e.col, e.end, e.rule)

    # -- top level -----------------------------------------------------------------------
    def header(self, line: _Line) -> None:
        self.close()
        self.block_broken = True  # until the header parses: its body lines add no errors
        first = line.next("a block header")
        if first.kind != "ident" or first.text not in HEADERS:
            hint = did_you_mean(first.text, HEADERS) if first.kind == "ident" else ""
            self.block_broken = True
            raise _LineError(f"unknown top-level statement '{first.text}': expected one of "
                             f"{', '.join(HEADERS)}{hint}", first.col, first.end, "KYN-P03")
        if first.text == "import":
            path = line.next("a quoted path after 'import'")
            if path.kind != "string":
                raise _LineError(f"expected a quoted path after 'import', found '{path.text}'",
                                 path.col, path.end)
            line.finish("the import path")
            self.items.append(Import(path.text[1:-1], line.loc(0, path.end)))
            self.block_broken = False
            return
        name, name_loc = "", Loc(0, 0, 0, 0)
        if first.text in ("dataset", "model"):
            t = line.next(f"a name after '{first.text}'")
            if t.kind != "ident":
                self.block_broken = True
                raise _LineError(f"expected a name after '{first.text}', found '{t.text}'",
                                 t.col, t.end)
            name, name_loc = t.text, line.loc(t.col, t.end)
        line.expect(":", f"at the end of the '{first.text}' header")
        line.finish("':'")
        self.block = (first.text, line, name, name_loc, [])
        self.block_broken = False

    def body_line(self, line: _Line) -> None:
        if self.block is None:
            if not self.block_broken:
                raise _LineError("indented line outside a block: a body line must follow a "
                                 "block header such as 'train:'", 0, INDENT, "KYN-P04")
            return  # the header's own error covers its body
        kind, _, _, _, stmts = self.block
        if kind == "model":
            stmts.append(self.layer(line))
            return
        key = line.next("a key")
        if key.kind != "ident":
            raise _LineError(f"expected 'key = value', found '{key.text}'", key.col, key.end)
        line.expect("=", f"after the key '{key.text}'")
        value = line.value()
        line.finish("the value")
        if kind == "sweep" and not isinstance(value, ListValue):
            raise _LineError(f"sweep axis '{key.text}' must be a list, e.g. "
                             f"{key.text} = [..., ...]", key.col, line.toks[-1].end,
                             "KYN-P05")
        stmts.append(Entry(key.text, value, line.loc(INDENT, line.toks[-1].end),
                           line.loc(key.col, key.end)))

    def layer(self, line: _Line) -> Layer:
        kw = line.next("a layer")
        loc = line.loc(INDENT, line.toks[-1].end)
        if kw.kind != "ident" or kw.text not in LAYER_KINDS:
            hint = did_you_mean(kw.text, LAYER_KINDS) if kw.kind == "ident" else ""
            raise _LineError(f"unknown layer '{kw.text}': expected one of "
                             f"{', '.join(LAYER_KINDS)}{hint}", kw.col, kw.end, "KYN-P06")
        operands: list[Value] = []
        while not line.at_end():
            operands.append(line.value())
        limits = {"input": (1, 1), "dense": (1, 2), "dropout": (1, 1), "batchnorm": (0, 1)}
        lo, hi = limits[kw.text]
        if not lo <= len(operands) <= hi:
            want = {"input": "one operand (the feature count)",
                    "dense": "one or two operands (units, then an optional activation)",
                    "dropout": "one operand (the rate)",
                    "batchnorm": "at most one operand (the feature count)"}[kw.text]
            raise _LineError(f"'{kw.text}' takes {want}, found {len(operands)}",
                             kw.col, line.toks[-1].end)
        if kw.text == "input":
            return InputLayer(operands[0], loc)
        if kw.text == "dense":
            return DenseLayer(operands[0], operands[1] if len(operands) > 1 else None, loc)
        if kw.text == "dropout":
            return DropoutLayer(operands[0], loc)
        return BatchNormLayer(operands[0] if operands else None, loc)

    def close(self) -> None:
        if self.block is None:
            return
        kind, line, name, name_loc, stmts = self.block
        self.block = None
        last = stmts[-1].loc if stmts else line.loc(0, len(line.text.rstrip()))
        loc = Loc(line.number, 1, last.end_line, last.end_col)
        if kind == "model":
            self.items.append(ModelBlock(name, tuple(stmts), loc, name_loc, self.source))
        elif kind == "dataset":
            self.items.append(DatasetBlock(tuple(stmts), loc, name, name_loc, self.source))
        else:
            cls = {"train": TrainBlock, "evaluate": EvaluateBlock, "export": ExportBlock,
                   "params": ParamsBlock, "sweep": SweepBlock}[kind]
            self.items.append(cls(tuple(stmts), loc))
