"""Parent side of the fuzz harness: one worker process, per-case time limits, restarts.

`Pool.run(kind, payload, timeout)` sends one case to the worker (`worker.py`) and
returns its result dict, or a synthetic one when the worker died (`{"crash": ...}`,
with the signal or exit status and the tail of what it wrote) or did not answer in
time (`{"timeout": seconds}`; the worker is killed and restarted). A run never
blocks for longer than its limit, whatever the input does.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORKER = Path(__file__).resolve().parent / "worker.py"
REPO = WORKER.parents[3]


class Pool:
    """One fuzz worker process, restarted after a crash or a timeout.

    One process on purpose: the fuzz campaign shares its machine, and CI time is
    bounded; cases are independent, so order does not matter.
    """

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self._env = dict(os.environ if env is None else env)
        # One kernel thread: a shared machine, and thread counts do not change results.
        self._env.setdefault("FRAME_NUM_THREADS", "1")
        self._env.pop("FRAME_MLIR_TRACEBACK", None)  # tracebacks must not be turned on
        self._dir = tempfile.mkdtemp(prefix="frame-fuzz-")
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = os.path.join(self._dir, "worker.log")
        self.restarts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, str(WORKER), self._log], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, env=self._env, cwd=str(REPO),
                start_new_session=True)  # its own group: a kill reaches its children
        return self._proc

    def _kill(self) -> None:
        proc = self._proc
        self._proc = None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        self.restarts += 1

    def _log_tail(self) -> str:
        try:
            with open(self._log, "rb") as f:
                f.seek(max(0, os.path.getsize(self._log) - 4000))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def run(self, kind: str, payload: Any, timeout: float) -> dict[str, Any]:
        """Run one case; see the module docstring for the result's shape."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        body = pickle.dumps((kind, payload))
        try:
            proc.stdin.write(struct.pack("<I", len(body)) + body)
            proc.stdin.flush()
        except BrokenPipeError:
            status = proc.wait()
            tail = self._log_tail()
            self._kill()
            return {"crash": _describe_status(status), "native": tail}
        deadline = time.monotonic() + timeout
        data = b""
        need = 4
        size: int | None = None
        fd = proc.stdout.fileno()
        while len(data) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                return {"timeout": timeout}
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, max(need - len(data), 65536) if size is None else need - len(data))
            if not chunk:  # the worker died mid-case
                status = proc.wait()
                tail = self._log_tail()
                self._kill()
                return {"crash": _describe_status(status), "native": tail}
            data += chunk
            if size is None and len(data) >= 4:
                (size,) = struct.unpack("<I", data[:4])
                need = 4 + size
        result: dict[str, Any] = pickle.loads(data[4:need])
        return result

    def close(self) -> None:
        """Stop the worker; restarts counted so far stay readable."""
        if self._proc is not None and self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        restarts = self.restarts
        self._kill()
        self.restarts = restarts


def _describe_status(status: int) -> str:
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"worker exited with status {status}"
