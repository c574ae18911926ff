"""Case runners, executed inside the fuzz worker process (`worker.py`).

Each runner takes a plain payload (picklable data: texts, argv lists, API programs)
and returns a plain dict; judging the result is the parent's job (`frontends.py`).
CLI cases call the tool's `main(argv)` in process with standard input, output and
error replaced, which is what a user's shell would see minus the process start.
Library cases (training with capped work, API programs, the network API) go through
`frame_mlir.tools.errors.run_cli`, the CLIs' own failure mapping, or catch exceptions
themselves, and return the exception's class and message.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import resource
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[3]
TOOLS: dict[str, tuple[str, str]] = {
    "frame-dslc": ("frame_mlir.tools.frame_dslc", "main"),
    "frame-run": ("frame_mlir.tools.frame_run", "main"),
    "frame-opt": ("frame_mlir.tools.frame_opt", "main"),
    "frame-kyn": ("frame_mlir.tools.frame_kyn", "main"),
}
MAX_TEXT = 20000  # of each captured stream: enough for a traceback, bounded for pickling

# Address-space cap of the worker: an accepted input with a huge shape must fail with a
# clean MemoryError / RT-001 instead of paging the machine (shared with other users).
_AS_LIMIT = 8 << 30
try:
    resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT, _AS_LIMIT))
except (ValueError, OSError):  # pragma: no cover - a platform without RLIMIT_AS
    pass


@contextlib.contextmanager
def _captured(stdin: bytes | None) -> Iterator[tuple[io.TextIOWrapper, io.TextIOWrapper]]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)
    inp = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = inp, out, err
    try:
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def _text(stream: io.TextIOWrapper) -> str:
    raw = stream.buffer.getvalue()  # type: ignore[attr-defined]
    text = raw.decode("utf-8", "replace")
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT // 2] + "\n...\n" + \
        text[-MAX_TEXT // 2:]


@contextlib.contextmanager
def _workdir(files: dict[str, bytes], links: dict[str, str]) -> Iterator[str]:
    """A fresh folder holding `files` and symlinks `links`, as the current directory."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="fz-case-") as d:
        for name, data in files.items():
            p = Path(d, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        for name, target in links.items():
            os.symlink(target, Path(d, name))
        os.chdir(d)
        try:
            yield d
        finally:
            os.chdir(old)


def _call_main(tool: str, argv: list[str], stdin: bytes | None) -> dict[str, Any]:
    module, fn = TOOLS[tool]
    main: Callable[[list[str]], int] = getattr(__import__(module, fromlist=[fn]), fn)
    t0 = time.perf_counter()
    with _captured(stdin) as (out, err):
        try:
            code: Any = main(argv)
        except SystemExit as e:  # a tool must return, but count an exit as its status
            code = e.code if isinstance(e.code, int) else (1 if e.code else 0)
        except BaseException:  # noqa: BLE001 -- escaped the CLI's handler: a bug
            err.write(traceback.format_exc())
            code = "escaped"
    return {"code": code, "stdout": _text(out), "stderr": _text(err),
            "seconds": time.perf_counter() - t0}


def run_tool(p: dict[str, Any]) -> dict[str, Any]:
    """One CLI invocation: `tool`, `argv` (relative to a fresh folder holding `files`
    and `links`), optional `stdin` bytes."""
    with _workdir(p.get("files", {}), p.get("links", {})):
        return _call_main(p["tool"], p["argv"], p.get("stdin"))


def run_tools(p: dict[str, Any]) -> dict[str, Any]:
    """Several CLI invocations in one folder (a program, then its formatter ...)."""
    results = []
    with _workdir(p.get("files", {}), p.get("links", {})):
        for step in p["steps"]:
            r = _call_main(step["tool"], step["argv"], step.get("stdin"))
            results.append(r)
            if step.get("stop_on_error") and r["code"] != 0:
                break
    return {"steps": results}


# --------------------------------------------------------------------------- v0 specs


def spec_train(p: dict[str, Any]) -> dict[str, Any]:
    """Train an accepted spec (steps already capped, log_every 1) with `frame-run`, and
    compute the float64 numpy reference of the same run."""
    from fzlib.reference import reference_losses

    r = run_tool({"tool": "frame-run", "argv": ["spec.json", *p.get("extra", [])],
                  "files": {"spec.json": p["text"].encode()}})
    from frame_mlir.frontends.common.json_document import decode_document
    from frame_mlir.frontends.spec.spec_v0 import spec_from_doc

    doc = decode_document(p["text"], "spec.json", values=False)
    spec = spec_from_doc(doc, "spec.json")
    ref = reference_losses(spec)
    r["reference"] = ref
    return r


# --------------------------------------------------------------------------- .kyn


def kyn_train(p: dict[str, Any]) -> dict[str, Any]:
    """Train an accepted `.kyn` program natively with its epochs capped, through the
    CLI's failure mapping (`frame-kyn train` minus the argument parsing)."""
    from frame_mlir.tools.errors import run_cli

    def body() -> int:
        from frame_mlir.frontends.kyn.pipeline import load_module
        from frame_mlir.frontends.kyn.run import run_module

        module, _ = load_module(p["path"])
        train = replace(module.train, epochs=min(module.train.epochs, p["max_epochs"]))
        run_module(replace(module, train=train), "out", quiet=True)
        return 0

    with _workdir(p.get("files", {}), p.get("links", {})):
        t0 = time.perf_counter()
        with _captured(None) as (out, err):
            try:
                code: Any = run_cli("frame-kyn", body)
            except BaseException:  # noqa: BLE001
                err.write(traceback.format_exc())
                code = "escaped"
        return {"code": code, "stdout": _text(out), "stderr": _text(err),
                "seconds": time.perf_counter() - t0}


# --------------------------------------------------------------------------- networks


def network_train(p: dict[str, Any]) -> dict[str, Any]:
    """Load an accepted JSON network with the Python API, run it forward and take two
    SGD steps on random data (labels 0), through the CLIs' failure mapping."""
    from frame_mlir.tools.errors import run_cli

    info: dict[str, Any] = {}

    def body() -> int:
        import frame_mlir.network as fnet

        net = fnet.load(json.loads(p["text"]), seed=0)
        rng = np.random.default_rng(0)
        feed: dict[str, np.ndarray] = {}
        for name, inp in net.inputs.items():
            if inp.dtype == "int":
                feed[name] = np.zeros(inp.shape, np.int32)
            else:
                feed[name] = rng.uniform(-1, 1, inp.shape).astype(np.float32)
        outs = net.forward(feed)
        info["outputs"] = sorted(outs)
        if net.spec.losses and net.trainable:
            trainer = net.trainer(fnet.SGD(0.01, momentum=0.9))
            for _ in range(2):
                step = trainer.step(feed)
            info["trained"] = True
            info["finite"] = bool(all(np.all(np.isfinite(v)) for v in step.values()))
        return 0

    t0 = time.perf_counter()
    with _captured(None) as (out, err):
        try:
            code: Any = run_cli("frame-run", body)
        except BaseException:  # noqa: BLE001
            err.write(traceback.format_exc())
            code = "escaped"
    return {"code": code, "stdout": _text(out), "stderr": _text(err), **info,
            "seconds": time.perf_counter() - t0}


# --------------------------------------------------------------------------- Python API

# The exception classes the Python API documents (docs/python-api.md, "Errors"), plus
# MemoryError for shapes larger than memory. Anything else escaping is a bug.
API_ERRORS = (ValueError, TypeError, KeyError, NotImplementedError, MemoryError)


def api_program(program: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Interpret a random API call sequence (see `api_interp.api_program`).

    A documented exception is caught and the program goes on, as a user's code
    catching it would (so a failed call that leaves a graph half-changed shows up in
    later calls); any other exception stops it and is returned with its traceback.
    """
    from fzlib.api_interp import Interpreter

    interp = Interpreter()
    errors: list[tuple[str, str]] = []
    for done, instr in enumerate(program):
        try:
            interp.execute(instr)
        except API_ERRORS as e:  # (class, message, the call that raised it)
            what = instr[1] if instr[0] == "call" else \
                instr[2] if instr[0] == "method" else instr[0]
            errors.append((type(e).__name__, str(e)[:500], str(what)))
        except BaseException as e:  # noqa: BLE001 -- judged by the parent
            return {"done": done, "errors": errors, "exc": type(e).__name__,
                    "module": type(e).__module__, "message": str(e)[:2000],
                    "traceback": traceback.format_exc()[-6000:], "log": interp.log,
                    "checked": interp.checked_runs}
    return {"done": len(program), "errors": errors, "exc": None, "log": interp.log,
            "checked": interp.checked_runs}


# --------------------------------------------------------------------------- harness checks


def planted(p: dict[str, Any]) -> dict[str, Any]:
    """Deliberate failures, to check that the harness detects each kind (test_harness)."""
    what = p["what"]
    if what == "segfault":
        ctypes.string_at(0)
    if what == "abort":
        os.abort()
    if what == "hang":
        time.sleep(3600)
    if what == "exit":
        os._exit(3)
    from frame_mlir.tools.errors import run_cli

    def body() -> int:
        if what == "internal":
            raise RuntimeError("planted bug")
        if what == "traceback":
            print(traceback.format_stack()[0], file=sys.stderr)
            print("Traceback (most recent call last):\n  planted", file=sys.stderr)
            return 1
        return 0

    with _captured(None) as (out, err):
        code = run_cli("planted", body)
    return {"code": code, "stdout": _text(out), "stderr": _text(err)}


RUNNERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "tool": run_tool, "tools": run_tools, "spec_train": spec_train, "kyn_train": kyn_train,
    "network_train": network_train, "api": api_program, "planted": planted,
}


def run_case(kind: str, payload: Any) -> dict[str, Any]:
    """Dispatch one case (called by the worker loop)."""
    return RUNNERS[kind](payload)
