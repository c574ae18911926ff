"""The fuzz worker: a child process that runs fuzz cases one at a time for `pool.Pool`.

Why a separate process: inputs that reach the JIT run generated native code, and a bug
there is a segfault, which would kill pytest (or the campaign) outright; a hang in a
pass would stall it. The parent sees a dead worker as a *crash* and a late answer as a
*timeout*, restarts the worker and goes on. Validation-only inputs go through the same
worker: one mechanism, and a persistent worker pays the imports (xDSL, llvmlite) once.

Protocol: the parent writes length-prefixed pickles of `(case_kind, payload)` to the
child's standard input; the child answers with a length-prefixed pickle of a dict on a
private copy of its original standard output. File descriptors 1 and 2 point at a log
file, so that output written by native code (LLVM's `LLVM ERROR:` before an abort) is
captured per case instead of corrupting the protocol or the test log.

Run as a script (`python tests/fuzz/fzlib/worker.py`): it puts `tests/fuzz` on
`sys.path` and imports the case runners as `fzlib.cases`, as pytest and the campaign do.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import traceback
from pathlib import Path
from typing import Any, BinaryIO


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _serve(log_path: str) -> None:
    # Keep the protocol channel on a private descriptor, then send fds 1 and 2 to the log.
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 -- lives as long as the process
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    # tests/fuzz, not tests/: tests/frame would shadow the `frame` package.
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p != here]
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fzlib import cases

    inp = sys.stdin.buffer
    while True:
        head = _read_exact(inp, 4)
        if head is None:
            return
        (size,) = struct.unpack("<I", head)
        body = _read_exact(inp, size)
        if body is None:
            return
        kind, payload = pickle.loads(body)
        offset = os.lseek(log_fd, 0, os.SEEK_END)
        try:
            result: dict[str, Any] = cases.run_case(kind, payload)
        except BaseException:  # noqa: BLE001 -- the harness's own failure, reported as such
            result = {"harness_error": traceback.format_exc()}
        sys.stdout.flush()
        sys.stderr.flush()
        with open(log_path, "rb") as f:  # what native code (or a stray print) wrote
            f.seek(offset)
            native = f.read(20000).decode("utf-8", "replace")
        result["native"] = native
        out = pickle.dumps(result)
        proto.write(struct.pack("<I", len(out)) + out)


if __name__ == "__main__":
    _serve(sys.argv[1])
