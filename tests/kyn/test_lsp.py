"""The `.kyn` language server, driven over stdio with real JSON-RPC LSP messages.

`python -m frame_mlir.frontends.kyn.lsp` runs as a subprocess; a reader thread parses its
Content-Length framed output into a queue, so every wait has a timeout and a broken
server fails the test instead of hanging it. The pure completion and hover functions
are also tested directly, and so is how `diagnose` reports each kind of finding (with
the analysis replaced by a stand-in).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from frame_mlir.frontends.kyn.diagnostics import diagnose, format_diagnostic
from frame_mlir.frontends.kyn.lsp import complete, hover_markdown
from frame_mlir.frontends.kyn.parser import parse_with_diagnostics

pytest.importorskip("pygls")

TIMEOUT = 20.0
REPO = Path(__file__).resolve().parents[2]

GOOD = """\
dataset Houses:
    source = csv("data/housing.csv")
    target = "price"

model Net:
    input 10
    dense 64 relu
    dense 1 linear

train:
    model = Net
    data = Houses
    loss = mse
    optimizer = adam(lr=0.001)
    epochs = 5
    batch = 8
"""
# line 7 (1-based) has a 2-space indent: a parse error, KYN-P01
BAD = GOOD.replace("    dense 1 linear", "  dense 1 linear")


# -- a minimal LSP client ---------------------------------------------------------------------------
class Client:
    """Talks LSP to a server subprocess; every read waits at most TIMEOUT seconds."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get(
            "PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "frame_mlir.frontends.kyn.lsp"], cwd=REPO, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.pending: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                headers: dict[str, str] = {}
                while True:
                    line = out.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    k, _, v = line.decode("ascii").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = out.read(int(headers["content-length"]))
                self.inbox.put(json.loads(body))
        finally:
            self.inbox.put(None)  # end of stream: wake any waiter

    def send(self, msg: dict[str, Any]) -> None:
        data = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"method": method, "params": params or {}})

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params or {}})
        msg = self.wait(lambda m: m.get("id") == rid and "method" not in m)
        assert "error" not in msg, msg
        return msg.get("result")

    def wait(self, match: Any) -> dict[str, Any]:
        """The first message satisfying `match` (earlier unmatched ones are kept)."""
        for i, m in enumerate(self.pending):
            if match(m):
                return self.pending.pop(i)
        deadline = time.monotonic() + TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching message within {TIMEOUT} s; "
                                     f"got {self.pending}")
            try:
                m = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if m is None:
                err = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
                raise AssertionError(f"the server closed its output; stderr:\n{err}")
            if match(m):
                return m
            self.pending.append(m)

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        m = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                      and m["params"]["uri"] == uri)
        return m["params"]["diagnostics"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


@pytest.fixture
def client():
    c = Client()
    try:
        yield c
    finally:
        c.close()


def test_server_session(client: Client, tmp_path: Path) -> None:
    """initialize -> didOpen (error) -> didChange (fixed) -> hover -> completion ->
    shutdown/exit, as an editor would."""
    uri = (tmp_path / "prog.kyn").as_uri()
    init = client.request("initialize", {"processId": None, "rootUri": None,
                                         "capabilities": {}})
    caps = init["capabilities"]
    assert caps["textDocumentSync"]["change"] == 1  # full sync
    assert caps["hoverProvider"]
    assert "completionProvider" in caps
    client.notify("initialized")

    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "kyn", "version": 1, "text": BAD}})
    diags = client.diagnostics(uri)
    errors = [d for d in diags if d["code"] == "KYN-P01"]
    assert len(errors) == 1, diags
    d = errors[0]
    assert d["range"]["start"] == {"line": 7, "character": 0}  # 0-based: source line 8
    assert d["severity"] == 1 and d["source"] == "frame-kyn"
    assert "4 spaces" in d["message"]

    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"text": GOOD}]})
    assert client.diagnostics(uri) == []  # fixed: the program is valid

    # a semantic error and, in a program without errors, a warning
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 3},
        "contentChanges": [{"text": GOOD.replace("dense 64 relu", "dense 64 elu")}]})
    (d,) = client.diagnostics(uri)
    assert d["code"] == "KYN-S05" and d["severity"] == 1 and "'elu'" in d["message"]
    assert d["range"] == {"start": {"line": 6, "character": 13},
                          "end": {"line": 6, "character": 16}}
    softmax = GOOD.replace("loss = mse", "loss = cross_entropy").replace(
        "dense 1 linear", "dense 3 softmax")
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": softmax}]})
    (d,) = client.diagnostics(uri)
    assert d["code"] == "KYN-W01" and d["severity"] == 2  # a warning

    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 5}, "contentChanges": [{"text": GOOD}]})
    assert client.diagnostics(uri) == []
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []

    hover = client.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 13, "character": 17}})
    assert hover is not None and "lr=0.001" in hover["contents"]["value"]
    assert "betas=[0.9, 0.999]" in hover["contents"]["value"]

    # a layer line: the shape when the analysis provides it, else the layer's doc
    hover = client.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 6, "character": 5}})
    assert hover is not None and "dense" in hover["contents"]["value"]
    assert "[8, 64]" in hover["contents"]["value"]  # the shape; batch = train.batch

    result = client.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": 12, "character": 11}})
    labels = {i["label"] for i in result["items"]}
    assert {"mse", "cross_entropy", "huber"} <= labels

    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 6},
        "contentChanges": [{"text": GOOD + "    \n"}]})
    client.diagnostics(uri)
    result = client.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": 16, "character": 4}})
    labels = {i["label"] for i in result["items"]}
    assert "scheduler" in labels and "seed" in labels
    assert "model" not in labels and "epochs" not in labels  # already written

    assert client.request("shutdown") is None
    client.notify("exit")
    assert client.proc.wait(timeout=TIMEOUT) == 0


# -- the pure functions ---------------------------------------------------------------------------
def _at(text: str, needle: str) -> tuple[int, int]:
    """0-based (line, character) just after the first `needle`."""
    for n, line in enumerate(text.split("\n")):
        if needle in line:
            return n, line.index(needle) + len(needle)
    raise AssertionError(needle)


def _labels(text: str, needle: str) -> list[str]:
    line, char = _at(text, needle)
    return [c.label for c in complete(text, line, char, parse_with_diagnostics(text)[0])]


def test_complete_headers_and_keys() -> None:
    assert _labels(GOOD + "\n", "") == ["import", "params", "sweep", "dataset", "model",
                                        "evaluate", "export"]  # train is there already
    text = GOOD.replace('    target = "price"', "    s")
    labels = [c.label for c in complete(text, 2, 5)]
    assert labels == ["split", "shuffle"]  # source is written already


def test_complete_values() -> None:
    assert "leaky_relu" in _labels(GOOD.replace("dense 64 relu", "dense 64 le"), "dense 64 le")
    assert _labels(GOOD.replace("dense 64 relu", "dense 64 "), "dense 64 ") [:2] == [
        "relu", "sigmoid"]
    assert _labels(GOOD.replace("model = Net", "model = "), "model = ") == ["Net"]
    assert _labels(GOOD.replace("data = Houses", "data = "), "data = ") == ["Houses"]
    assert _labels(GOOD.replace("adam(lr=0.001)", "ad"), "optimizer = ad") == [
        "adam", "adamw"]
    text = GOOD.replace("adam(lr=0.001)", "adam(lr=0.001, ")
    assert _labels(text, "lr=0.001, ") == ["betas", "eps", "weight_decay"]
    text = GOOD + "    device = \n"
    assert _labels(text, "device = ") == ["auto", "cpu", "cuda"]
    text = GOOD + "\nevaluate:\n    metrics = [mae, "
    assert _labels(text, "[mae, ") == ["mse", "rmse", "accuracy"]
    text = GOOD + "\nexport:\n    format = "
    assert _labels(text, "format = ") == ["torch", "onnx", "torchscript", "npz"]
    text = GOOD + "    scheduler = "
    assert _labels(text, "scheduler = ") == ["step", "cosine", "onecycle"]
    text = "params:\n    hidden = 8\n\nmodel M:\n    dense $hi"
    assert _labels(text, "$hi") == ["hidden"]


def test_hover() -> None:
    shapes = {7: "dense 64 relu: [batch, 10] -> [batch, 64]"}
    md = hover_markdown(GOOD, 6, 14, shapes)
    assert md is not None and "[batch, 10] -> [batch, 64]" in md and "max(x, 0)" in md
    md = hover_markdown(GOOD, 5, 5, {})
    assert md is not None and "input N" in md
    line, char = _at(GOOD, "optimizer = ad")
    md = hover_markdown(GOOD, line, char)
    assert md is not None and md.startswith("`adam(lr=0.001, betas=[0.9, 0.999]")
    line, char = _at(GOOD, "    lo")
    md = hover_markdown(GOOD, line, char)
    assert md is not None and "train.loss" in md and "`cross_entropy`" in md
    md = hover_markdown(GOOD, 0, 2)
    assert md is not None and "dataset <Name>:" in md
    md = hover_markdown(GOOD.replace("source", "split = 0.7\n    source"), 1, 6)
    assert md is not None and "default `0.8`" in md


def test_diagnose_never_raises() -> None:
    diags = diagnose(BAD, "bad.kyn")
    p01 = [d for d in diags if d["rule"] == "KYN-P01"]
    assert p01 and p01[0]["line"] == 8 and p01[0]["code"] == "parse"
    assert set(p01[0]) == {"line", "col", "end_line", "end_col", "severity", "message",
                           "code", "rule"}
    assert format_diagnostic(p01[0]).startswith("8:1: [error] indentation")
    for text in ("", "\x00\x01", "train:\n\tepochs = 1\n", "model M:\n    dense (((\n",
                 "dataset D:\n    source = csv(\"a.csv\", \"b.csv\")\n"):
        assert isinstance(diagnose(text), list)


# -- diagnose: how each kind of finding of the analysis is reported -------------------------------
class _Analysis:
    def __init__(self, diagnostics: list, layer_shapes: dict[int, str]) -> None:
        self.program = None
        self.module = None
        self.diagnostics = diagnostics
        self.layer_shapes = layer_shapes


def _fake_pipeline(monkeypatch: pytest.MonkeyPatch, analyze: Any) -> None:
    """Replace the analysis, to check how every kind of finding is reported."""
    monkeypatch.setattr("frame_mlir.frontends.kyn.pipeline.analyze", analyze)


def test_diagnose_reports_every_finding_of_the_analysis(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from frame_mlir.frontends.kyn.diagnostics import analyze_for_editor
    from frame_mlir.frontends.kyn.errors import KynDiagnostic

    seen: dict[str, Any] = {}

    def analyze(text: str, file: str, path: str | None = None,
                overrides: dict | None = None) -> _Analysis:
        seen.update(file=file, path=path)
        return _Analysis([
            KynDiagnostic("KYN-W01", "warn", "softmax before cross_entropy", file, 8, 14, 8,
                          21),
            KynDiagnostic("KYN-S02", "semantic", "unknown key 'epoch'", file, 3, 5, 3, 10),
            KynDiagnostic("KYN-H01", "shape", "bce expects 1 unit", file, 9, 0),
            KynDiagnostic("KYN-S05", "semantic", "bad split", "common.kyn", 4, 5, 4, 9),
            KynDiagnostic("KYN-L01", "lock", "lock drift", file),
        ], {7: "dense 64 relu: [batch, 10] -> [batch, 64]"})

    _fake_pipeline(monkeypatch, analyze)
    report = analyze_for_editor(GOOD, "prog.kyn", "/x/prog.kyn")
    assert seen == {"file": "prog.kyn", "path": "/x/prog.kyn"}
    assert report.layer_shapes == {7: "dense 64 relu: [batch, 10] -> [batch, 64]"}
    assert report.program is not None and report.program.model("Net") is not None
    diags = report.diagnostics
    assert [d["rule"] for d in diags] == ["KYN-S05", "KYN-L01", "KYN-S02", "KYN-W01",
                                          "KYN-H01"]  # sorted by position
    imported, lock, s02, w01, h01 = diags
    assert imported["line"] == 0 and imported["message"] == "in common.kyn:4: bad split"
    assert lock["code"] == "semantic"
    assert s02 == {"line": 3, "col": 5, "end_line": 3, "end_col": 10, "severity": "error",
                   "message": "unknown key 'epoch'", "code": "semantic", "rule": "KYN-S02"}
    assert w01["severity"] == "warning" and w01["code"] == "warn"
    assert h01["code"] == "shape" and (h01["end_line"], h01["end_col"]) == (9, 0)
    assert format_diagnostic(w01) == "8:14: [warning] softmax before cross_entropy"


def test_diagnose_reports_a_crashing_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    def analyze(text: str, file: str, path: str | None = None,
                overrides: dict | None = None) -> _Analysis:
        raise RuntimeError("boom")

    _fake_pipeline(monkeypatch, analyze)
    (d,) = diagnose(GOOD)
    assert d["rule"] == "KYN-X00" and "RuntimeError: boom" in d["message"]
    assert d["severity"] == "error"


def test_every_vocabulary_word_has_a_doc() -> None:
    """vocabulary.py's prose covers everything vocab.py and the parser know by name."""
    from frame_mlir.frontends.kyn.parser import HEADERS, LAYER_KINDS
    from frame_mlir.frontends.kyn.vocab import CALL_SETS, CALLS, ENUMS
    from frame_mlir.frontends.kyn.vocabulary import BLOCKS, ENUM_TITLES, LAYERS, doc_of

    calls = {c for names in CALL_SETS.values() for c in names}
    for enum, members in ENUMS.items():
        assert enum in ENUM_TITLES, enum
        for m in members:
            assert doc_of(enum, m), f"{enum} {m}"
    for c in set(CALLS) | calls:
        assert doc_of("", c), c
    assert tuple(LAYERS) == LAYER_KINDS
    assert tuple(BLOCKS) == HEADERS


def test_a_finding_in_an_imported_file_lands_on_its_import(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    from frame_mlir.frontends.kyn.errors import KynDiagnostic

    def analyze(text: str, file: str, path: str | None = None,
                overrides: dict | None = None) -> _Analysis:
        return _Analysis([KynDiagnostic("KYN-S12", "semantic", "import cycle", "common.kyn",
                                        5, 1, 5, 9)], {})

    _fake_pipeline(monkeypatch, analyze)
    text = 'import "other.kyn"\nimport "lib/common.kyn"\n\n' + GOOD
    (d,) = diagnose(text, "main.kyn")
    assert (d["line"], d["col"], d["end_col"]) == (2, 1, 24)  # the import line
    assert d["message"] == "in common.kyn:5: import cycle"
