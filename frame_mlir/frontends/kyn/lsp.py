"""The `.kyn` language server (LSP over stdio): `python -m frame_mlir.frontends.kyn.lsp`.

Features:

* diagnostics on open, change (full-document sync) and save: every error and warning of
  `diagnostics.analyze_for_editor`, with `source` ``"frame-kyn"`` and the rule id as
  `code`; cleared when the document closes;
* hover: on a model layer line its inferred shape (`Analysis.layer_shapes`) and what the
  layer does; on a key its type, default and meaning; on an enumeration member
  (activation, loss, optimizer, ...) its meaning and, for a callable, its arguments with
  their defaults; on a `$ref` its `params` value;
* completion: block headers at column 1, the keys of the current block that are not
  written yet, layer keywords in a model body, the members of the key's enumeration
  after `key = ` (activations after `dense N `, metrics inside `metrics = [`), keyword
  arguments inside an optimizer or scheduler call, dataset and model names after
  `data = ` and `model = `, and params after `$`.

What to offer is decided by pure functions on the document text (`complete`,
`hover_markdown`) that do not need pygls, so they are testable on their own; pygls is
imported only by `build_server` (it is the optional extra ``frame-mlir[lsp]``).
All positions inside this module are 0-based lines and code-point columns; the pygls
layer converts to the client's position encoding (UTF-16 by default).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from frame_mlir.frontends.kyn.ast import Program
from frame_mlir.frontends.kyn.diagnostics import EditorReport, analyze_for_editor
from frame_mlir.frontends.kyn.format import format_float, format_value
from frame_mlir.frontends.kyn.vocab import CALL_SETS, CALLS, ENUMS, KEYS, REQUIRED, Key
from frame_mlir.frontends.kyn.vocabulary import BLOCKS, ENUM_TITLES, LAYERS, doc_of

__all__ = ["Completion", "build_server", "complete", "hover_markdown", "main", "signature"]

SERVER_NAME = "frame-kyn"
SERVER_VERSION = "0.1"
SOURCE = "frame-kyn"

_KEYED = ("dataset", "train", "evaluate", "export")
_SIMPLE = ("params", "sweep", "train", "evaluate", "export")  # at most one each
#: the block kind a `name`-typed key refers to
_NAMES = {"model": "model", "data": "dataset"}


# -- shared helpers ----------------------------------------------------------------------------
def _fmt_default(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, tuple | list):
        return "[" + ", ".join(_fmt_default(x) for x in v) + "]"
    if isinstance(v, str) and v and not v.isidentifier():
        return f'"{v}"'
    return str(v)


def _arg_text(name: str, k: Key) -> str:
    """`gamma=0.1`; a required argument, or one without a literal default, bare."""
    if k.default is REQUIRED or k.default is None:
        return name
    return f"{name}={_fmt_default(k.default)}"


def _type_text(k: Key) -> str:
    """`vocab`'s type tag in words (`enum:device` -> `identifier`)."""
    kind = k.type.partition(":")[0]
    return {"enum": "identifier", "call": "call", "list": "list of identifiers",
            "name": "block name", "intlist": "list of ints",
            "floatpair": "[float, float]"}.get(kind, k.type)


def _status(k: Key) -> str:
    if k.default is REQUIRED:
        return "required"
    return "optional" if k.default is None else f"default `{_fmt_default(k.default)}`"


def signature(call: str) -> str:
    """A call's signature with its defaults, from `vocab.CALLS`:
    `step(step_size, gamma=0.1)`."""
    return f"{call}(" + ", ".join(_arg_text(n, k) for n, k in CALLS.get(call, {}).items()) \
        + ")"


def _enum_of(k: Key) -> str | None:
    """The `vocab.ENUMS` name whose members a key's value is drawn from."""
    kind, _, arg = k.type.partition(":")
    return arg if kind in ("enum", "list") and arg in ENUMS else None


def _context(lines: Sequence[str], line: int) -> tuple[str | None, str | None, int]:
    """The block the body line `line` belongs to: (keyword, name, header line), or
    (None, None, -1) outside any block. Text-based, so it works on broken documents."""
    for n in range(line - 1, -1, -1):
        t = lines[n]
        if not t.strip() or t.lstrip().startswith("#") or t[:1] in (" ", "\t"):
            continue
        m = re.match(r"([A-Za-z_]\w*)(?:\s+([A-Za-z_]\w*))?", t)
        if m is None or m.group(1) not in BLOCKS or m.group(1) == "import":
            return None, None, -1
        return m.group(1), m.group(2), n
    return None, None, -1


def _block_keys(lines: Sequence[str], header: int, skip: int) -> set[str]:
    """The keys already written in the block whose header is on line `header`."""
    keys: set[str] = set()
    for n in range(header + 1, len(lines)):
        t = lines[n]
        if t.strip() and not t[:1].isspace() and not t.lstrip().startswith("#"):
            break
        m = re.match(r"\s+([A-Za-z_]\w*)\s*=", t)
        if m and n != skip:
            keys.add(m.group(1))
    return keys


def _key_spec(block: str | None, key: str) -> Key | None:
    return KEYS.get(block or "", {}).get(key)


def _callees(key: str, spec: Key | None) -> tuple[str, ...]:
    """The calls a call-valued key accepts (`optimizer` -> adam, sgd, ...)."""
    if spec is None or not spec.type.startswith("call:"):
        return ()
    return CALL_SETS.get(key, ())


# -- completion ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Completion:
    """One completion: `kind` is ``keyword``, ``property``, ``enum``, ``function``,
    ``reference`` or ``value`` (mapped to LSP CompletionItemKind by the server)."""

    label: str
    kind: str
    detail: str = ""
    insert: str = ""

    @property
    def text(self) -> str:
        return self.insert or self.label


def _members(enum: str) -> list[Completion]:
    return [Completion(m, "enum", doc_of(enum, m)) for m in ENUMS[enum]]


def _calls(names: Sequence[str]) -> list[Completion]:
    return [Completion(c, "function", f"{signature(c)}  {doc_of('', c)}") for c in names]


def complete(text: str, line: int, char: int, program: Program | None = None
             ) -> list[Completion]:
    """Completions at 0-based (`line`, `char`) of `text`, filtered by the word being
    typed. `program` (the parsed document) supplies dataset, model and param names."""
    lines = text.replace("\r\n", "\n").split("\n")
    if line >= len(lines):
        return []
    prefix = lines[line][:char]
    word = re.search(r"[A-Za-z_0-9]*$", prefix).group()  # type: ignore[union-attr]
    before = prefix[:len(prefix) - len(word)]

    if re.fullmatch(r"[A-Za-z_]*", prefix):  # column 1: a block header
        present = {m.group(1) for t in lines
                   if (m := re.match(r"(params|sweep|train|evaluate|export)\s*:", t))}
        items = []
        for b in BLOCKS.values():
            if b.name in _SIMPLE and b.name in present:
                continue
            insert = 'import "' if b.name == "import" else (
                f"{b.name} " if b.named else f"{b.name}:")
            items.append(Completion(b.name, "keyword", f"{b.syntax}  {b.doc}", insert))
        return _filter(items, word)

    if before.endswith("$"):  # a param reference
        names: dict[str, str] = {}  # a sweep axis is a param too
        for blk, what in ((program and program.params, "param"),
                          (program and program.sweep, "sweep axis")):
            for e in blk.entries if blk else ():
                names.setdefault(e.key, what)
        return _filter([Completion(n, "reference", w) for n, w in names.items()], word)

    block, _, header = _context(lines, line)
    body = prefix.lstrip(" ")
    if block == "model":
        if re.fullmatch(r"[A-Za-z_]*", body):
            return _filter([Completion(s.name, "keyword", f"{s.syntax}  {s.doc}",
                                       s.name + " ") for s in LAYERS.values()], word)
        if re.fullmatch(r"dense\s+\S+\s+[A-Za-z_]*", body):
            return _filter(_members("activation"), word)
        return []
    if block not in _KEYED:
        return []  # params and sweep take free keys

    if re.fullmatch(r"[A-Za-z_]*", body):  # a key
        present = _block_keys(lines, header, line)
        items = [Completion(k, "property", f"{_type_text(s)}  {s.doc}", f"{k} = ")
                 for k, s in KEYS[block].items() if k not in present]
        return _filter(items, word)

    m = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(.*)", body)
    if m is None:
        return []
    key = m.group(1)
    spec = _key_spec(block, key)
    value = m.group(2)[:len(m.group(2)) - len(word)]  # the value before the word
    if spec is None:
        return []

    call = _open_call(value)
    if call is not None:  # inside `name(`: keyword arguments not yet given
        callee, inside = call
        if callee not in _callees(key, spec) or not re.search(r"(^|,)\s*$", inside):
            return []
        given = set(re.findall(r"([A-Za-z_]\w*)\s*=", inside))
        return _filter([Completion(n, "property", f"{_type_text(k)}  {k.doc}", n + "=")
                        for n, k in CALLS.get(callee, {}).items() if n not in given], word)

    enum = _enum_of(spec)
    if spec.type.startswith("list:"):
        if enum and re.search(r"\[(?:[^\]]*,)?\s*$", value):
            listed = set(re.findall(r"[A-Za-z_]\w*", value))
            return _filter([c for c in _members(enum) if c.label not in listed], word)
        return []
    if value.strip():
        return []
    if spec.type == "name" and program is not None and key in _NAMES:
        kind = _NAMES[key]
        blocks = program.datasets if kind == "dataset" else program.models
        return _filter([Completion(b.name, "reference", f"{kind} block") for b in blocks],
                       word)
    if enum:
        return _filter(_members(enum), word)
    if spec.type.startswith("call:"):
        return _filter(_calls(_callees(key, spec)), word)
    if spec.type == "bool":
        return _filter([Completion("true", "value"), Completion("false", "value")], word)
    return []


def _open_call(value: str) -> tuple[str, str] | None:
    """For a value typed up to the cursor, the innermost unclosed call: (callee, the
    text after its `(`), or None."""
    depth, start = 0, None
    for i in range(len(value) - 1, -1, -1):
        ch = value[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                if ch == "[":
                    return None
                start = i
                break
            depth -= 1
    if start is None:
        return None
    m = re.search(r"([A-Za-z_]\w*)\s*$", value[:start])
    return (m.group(1), value[start + 1:]) if m else None


def _filter(items: list[Completion], word: str) -> list[Completion]:
    return [c for c in items if c.label.startswith(word)]


# -- hover ----------------------------------------------------------------------------------------
def _word_at(line_text: str, char: int) -> tuple[str, int, int] | None:
    """The identifier (or `$ref`) under 0-based `char`: (word, start, end), or None."""
    for m in re.finditer(r"\$?[A-Za-z_]\w*|-?[0-9][0-9.eE+-]*", line_text):
        if m.start() <= char < m.end() or (char == m.end() and char == len(line_text)):
            return m.group(), m.start(), m.end()
    return None


def _call_md(call: str, what: str) -> str:
    md = f"`{signature(call)}` ({what}): {doc_of('', call)}"
    args = CALLS.get(call, {})
    if args:
        md += "\n\n" + "\n".join(f"- `{n}` ({_type_text(k)}, {_status(k)}): {k.doc}"
                                  for n, k in args.items())
    return md


def _key_md(block: str, key: str, spec: Key) -> str:
    md = f"`{block}.{key}` ({_type_text(spec)}, {_status(spec)}): {spec.doc}"
    enum = _enum_of(spec)
    choices = ENUMS[enum] if enum else CALL_SETS.get(key, ()) if spec.type.startswith(
        "call:") else ()
    if len(choices) > 1:
        md += "\n\none of: " + ", ".join(f"`{c}`" for c in choices)
    return md


def hover_markdown(text: str, line: int, char: int,
                   layer_shapes: dict[int, str] | None = None,
                   program: Program | None = None) -> str | None:
    """Markdown for a hover at 0-based (`line`, `char`) of `text`, or None.

    `layer_shapes` maps 1-based lines of model layers to their inferred shapes
    (`Analysis.layer_shapes`); `program` supplies `params` values for `$refs`."""
    lines = text.replace("\r\n", "\n").split("\n")
    if line >= len(lines):
        return None
    t = lines[line].split("#")[0] if '"' not in lines[line] else lines[line]
    hit = _word_at(t, char)
    word = hit[0] if hit else ""

    if word.startswith("$"):
        entry = program.params.get(word[1:]) if program and program.params else None
        if entry is None:
            return f"`{word}`: a parameter reference (from `params:` or `--param`)"
        return f"`{word}` = `{format_value(entry.value)}` (params; `--param` overrides)"

    if t[:1] not in (" ", "\t"):  # a header line
        b = BLOCKS.get(word)
        if b is not None and hit is not None and hit[1] == 0:
            return f"`{b.syntax}`: {b.doc}"
        return None

    block, _, _ = _context(lines, line)
    body = t.lstrip(" ")
    if block == "model":
        parts = []
        shape = (layer_shapes or {}).get(line + 1)
        if shape:
            parts.append(f"```\n{shape}\n```")
        kw = body.split()[0] if body.split() else ""
        if word == kw and kw in LAYERS:
            parts.append(f"`{LAYERS[kw].syntax}`: {LAYERS[kw].doc}")
        elif kw == "dense" and word in ENUMS["activation"]:
            parts.append(f"`{word}` (activation): {doc_of('activation', word)}")
        return "\n\n".join(parts) or None
    if block not in _KEYED or hit is None:
        return None

    m = re.match(r"(\s*)([A-Za-z_]\w*)\s*=", t)
    if m is None:
        return None
    key = m.group(2)
    spec = _key_spec(block, key)
    if spec is None:
        return None
    if hit[1] == len(m.group(1)):  # the key itself
        return _key_md(block, key, spec)
    rest = t[hit[2]:].lstrip()
    if rest.startswith("("):  # a callee
        if word not in _callees(key, spec):
            return None
        return _call_md(word, ENUM_TITLES.get(spec.type[5:]) or f"{block}.{key}")
    if rest.startswith("="):  # a keyword argument: find its call
        call = _open_call(t[:hit[1]])
        arg = CALLS.get(call[0], {}).get(word) if call else None
        if call is None or arg is None or call[0] not in _callees(key, spec):
            return None
        return f"`{_arg_text(word, arg)}` ({_type_text(arg)}, {_status(arg)}, argument of " \
               f"`{call[0]}`): {arg.doc}"
    enum = _enum_of(spec)
    if enum and word in ENUMS[enum]:
        return f"`{word}` ({ENUM_TITLES.get(enum, enum)}): {doc_of(enum, word)}"
    if word in _callees(key, spec):  # a bare `optimizer = adam` is the call
        return _call_md(word, ENUM_TITLES.get(spec.type[5:]) or f"{block}.{key}")
    if spec.type == "name" and key in _NAMES and program is not None:
        kind = _NAMES[key]
        blocks = program.datasets if kind == "dataset" else program.models
        found = next((b for b in blocks if b.name == word), None)
        if found is None:
            return f"no {kind} `{word}`"
        return f"`{kind} {word}` (line {found.loc.line})"
    return None


# -- the server ---------------------------------------------------------------------------------
def build_server() -> Any:
    """A pygls `LanguageServer` with the `.kyn` features registered.

    Raises:
        ImportError: pygls is not installed (with the command that installs it).
    """
    try:
        from lsprotocol import types as lsp
        from pygls import uris
        from pygls.lsp.server import LanguageServer
    except ImportError as e:
        raise ImportError("the .kyn language server needs pygls; install it with "
                          "pip install 'frame-mlir[lsp]'") from e

    server = LanguageServer(SERVER_NAME, SERVER_VERSION,
                            text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
    reports: dict[str, EditorReport] = {}
    kinds = {"keyword": lsp.CompletionItemKind.Keyword,
             "property": lsp.CompletionItemKind.Property,
             "enum": lsp.CompletionItemKind.EnumMember,
             "function": lsp.CompletionItemKind.Function,
             "reference": lsp.CompletionItemKind.Reference,
             "value": lsp.CompletionItemKind.Value}

    def to_lsp(d: dict[str, Any], lines: Sequence[str], codec: Any) -> Any:
        # ours are 1-based lines and 1-based columns (0: unknown); LSP's are 0-based
        line = max(d["line"] - 1, 0)
        text = lines[line].rstrip("\r\n") if line < len(lines) else ""
        col = max(d["col"] - 1, 0) if d["col"] else len(text) - len(text.lstrip())
        if d["end_line"] > d["line"] or (d["end_line"] == d["line"] and d["end_col"] > d["col"]):
            end_line, end_col = d["end_line"] - 1, max(d["end_col"] - 1, 0)
        else:  # no extent: the rest of the line, so the squiggle is visible
            end_line, end_col = line, max(len(text), col + 1)
        start = codec.position_to_client_units(lines, lsp.Position(line, col))
        end = codec.position_to_client_units(lines, lsp.Position(end_line, end_col))
        severity = (lsp.DiagnosticSeverity.Warning if d["severity"] == "warning"
                    else lsp.DiagnosticSeverity.Error)
        return lsp.Diagnostic(range=lsp.Range(start, end), message=d["message"],
                              severity=severity, code=d["rule"], source=SOURCE)

    def refresh(uri: str) -> None:
        doc = server.workspace.get_text_document(uri)
        path = uris.to_fs_path(uri) if uri.startswith("file:") else None
        report = analyze_for_editor(doc.source, path or uri, path)
        reports[uri] = report
        lines = doc.lines
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=doc.version,
            diagnostics=[to_lsp(d, lines, doc.position_codec) for d in report.diagnostics]))

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        reports.pop(params.text_document.uri, None)
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=params.text_document.uri, diagnostics=[]))

    def position(uri: str, pos: Any) -> tuple[str, int, int, EditorReport]:
        doc = server.workspace.get_text_document(uri)
        p = doc.position_codec.position_from_client_units(doc.lines, pos)
        report = reports.get(uri) or analyze_for_editor(doc.source, uri)
        return doc.source, p.line, p.character, report

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        text, line, char, report = position(params.text_document.uri, params.position)
        md = hover_markdown(text, line, char, report.layer_shapes, report.program)
        if md is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=md))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=[" ", "=", "[", "(", ",", "$"]))
    def completion(params: lsp.CompletionParams) -> lsp.CompletionList:
        text, line, char, report = position(params.text_document.uri, params.position)
        items = [lsp.CompletionItem(label=c.label, kind=kinds[c.kind], detail=c.detail,
                                    insert_text=c.text)
                 for c in complete(text, line, char, report.program)]
        return lsp.CompletionList(is_incomplete=False, items=items)

    return server


def main() -> None:
    """Run the language server on stdin/stdout."""
    build_server().start_io()


if __name__ == "__main__":
    main()
