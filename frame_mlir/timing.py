"""Where a compile's time goes: mlir-opt's `--mlir-timing` report, and a progress line.

    with timing.compile_session(report=True):        # --timing / FRAME_TIMING=1
        with timing.section("frontend"):
            ...
        with timing.section("frame-autodiff"):
            ...
    # on exit: the report on stderr

Sections nest (a stage holds its passes, the LLVM backend its optimization and
machine code); the report lists each once, in the order first entered, with its wall
time summed over every entry, in seconds and as % of the session's total. Code deep in
the compiler opens sections without knowing whether anyone listens: outside a session,
or in a session without a report, `section` costs one global read.

A session also drives the progress line (`progress`): on a terminal, a compile that has
run for more than `PROGRESS_AFTER_S` shows `compiling: <section> [kernels k/n]` on
stderr, erased when the session ends. Where stderr is not a TTY nothing is printed, so
piped output is byte-identical with and without it.

Sessions nest too: a compile inside a compile (a tool's `--timing` around the Python
API's own compile) joins the outer session, and the outer one reports. Sections are
opened from the compiling thread only; work done on other threads (parallel LLVM)
is recorded with `add` from that thread once it is joined.

Importing this module imports nothing heavy, so the tools can open a session before
they decide what to import.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["ENV_TIMING", "Timer", "add", "add_before", "compile_session", "count_kernel",
           "section", "set_kernel_total", "timing_from_env"]

ENV_TIMING = "FRAME_TIMING"
#: A compile shorter than this never shows the progress line.
PROGRESS_AFTER_S = 1.0


def timing_from_env() -> bool:
    """Whether `$FRAME_TIMING` asks for the report (any value but empty or 0)."""
    from frame_mlir.compile_options import env_flag

    return env_flag(ENV_TIMING)


class _Node:
    __slots__ = ("children", "count", "name", "seconds")

    def __init__(self, name: str):
        self.name = name
        self.seconds = 0.0
        self.count = 0
        self.children: dict[str, _Node] = {}

    def child(self, name: str) -> _Node:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = _Node(name)
        return node


class Timer:
    """Wall time per named section, as a tree (see the module docstring)."""

    def __init__(self) -> None:
        self.root = _Node("Total")
        self._stack = [self.root]
        self._start = time.perf_counter()

    @contextmanager
    def section(self, name: str) -> Iterator[None]:
        """Time the block under `name`, nested in the section that is open."""
        node = self._stack[-1].child(name)
        self._stack.append(node)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            node.seconds += time.perf_counter() - t0
            node.count += 1
            self._stack.pop()

    def add(self, name: str, seconds: float, count: int = 1) -> None:
        """Record `seconds` measured elsewhere (another thread) under `name`, nested in
        the open section."""
        node = self._stack[-1].child(name)
        node.seconds += seconds
        node.count += count

    def add_before(self, name: str, seconds: float) -> None:
        """Record `seconds` spent under `name` just before the timer started (a
        frontend that ran before the compile was asked for): the total grows by them."""
        self.root.child(name).seconds += seconds
        self.root.child(name).count += 1
        self._start -= seconds

    def total(self) -> float:
        """Seconds since the timer started."""
        return time.perf_counter() - self._start

    def report(self, title: str = "frame-mlir compile") -> str:
        """The report: one line per section, indented by nesting, as mlir-opt prints."""
        total = self.total()
        rule = "===" + "-" * 73 + "==="
        lines = [rule, f"{'... Execution time report (' + title + ') ...':^79}", rule,
                 f"  Total Execution Time: {total:.4f} seconds", "",
                 "  ----Wall Time----  ----Name----"]

        def walk(node: _Node, depth: int) -> None:
            for child in node.children.values():
                pct = 100.0 * child.seconds / total if total > 0 else 0.0
                times = f" (x{child.count})" if child.count > 1 else ""
                lines.append(f"  {child.seconds:8.4f} ({pct:5.1f}%)  "
                             f"{'  ' * depth}{child.name}{times}")
                walk(child, depth + 1)

        walk(self.root, 0)
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"

    def flat(self) -> dict[str, float]:
        """Seconds per section path (`stage/pass`), for benchmarks."""
        out: dict[str, float] = {}

        def walk(node: _Node, prefix: str) -> None:
            for child in node.children.values():
                path = f"{prefix}{child.name}"
                out[path] = out.get(path, 0.0) + child.seconds
                walk(child, path + "/")

        walk(self.root, "")
        return out


class _Progress:
    """The progress line of one session (see the module docstring)."""

    def __init__(self, stream: TextIO | None):
        self._stream = stream if stream is not None and _isatty(stream) else None
        self._start = time.perf_counter()
        self._shown = False
        self.label = ""
        self.kernels_done = 0
        self.kernels_total = 0

    def update(self) -> None:
        if self._stream is None or time.perf_counter() - self._start < PROGRESS_AFTER_S:
            return
        text = f"compiling: {self.label}"
        if self.kernels_total:
            text += f" [kernels {self.kernels_done}/{self.kernels_total}]"
        self._stream.write(f"\r\x1b[K{text[:100]}")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown and self._stream is not None:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Session:
    def __init__(self, timer: Timer | None, progress: _Progress):
        self.timer = timer
        self.progress = progress


_session: _Session | None = None


@contextmanager
def compile_session(report: bool | None = None, *, out: TextIO | None = None,
                    title: str = "frame-mlir compile") -> Iterator[Timer | None]:
    """A compile's timing session (see the module docstring); yields its Timer, or None
    without a report. `report` None: `$FRAME_TIMING`. The report and the progress line
    go to `out` (default stderr). Inside another session: joins it."""
    global _session
    if _session is not None:
        yield _session.timer
        return
    if report is None:
        report = timing_from_env()
    stream = out if out is not None else sys.stderr
    session = _Session(Timer() if report else None, _Progress(stream))
    _session = session
    # Python's cycle collector: a compile allocates millions of IR objects, each full
    # collection walks all of them (and all that lived before), which made 25-28 % of
    # the passes' time and grew faster than the model. During a compile the objects
    # from before are frozen out of the collector and the young generation is
    # collected 20x less often; both are restored when the outermost session ends.
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], 20_000), *threshold[1:])
    try:
        yield session.timer
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        _session = None
        session.progress.clear()
        if session.timer is not None:
            stream.write(session.timer.report(title))
            stream.flush()


class _NoSection:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SECTION = _NoSection()


def section(name: str, *, label: str | None = None):
    """A context manager timing the block as `name` in the active session (nothing
    outside one). `label` (default `name`) is what the progress line shows."""
    session = _session
    if session is None:
        return _NO_SECTION
    session.progress.label = label or name
    session.progress.update()
    if session.timer is None:
        return _NO_SECTION
    return session.timer.section(name)


def add(name: str, seconds: float, count: int = 1) -> None:
    """Record time measured elsewhere under `name` (see `Timer.add`)."""
    session = _session
    if session is not None and session.timer is not None:
        session.timer.add(name, seconds, count)


def add_before(name: str, seconds: float) -> None:
    """Record time spent before the session began (see `Timer.add_before`)."""
    session = _session
    if session is not None and session.timer is not None:
        session.timer.add_before(name, seconds)


def set_kernel_total(total: int) -> None:
    """Start counting kernels for the progress line: `total` to compile."""
    session = _session
    if session is not None:
        session.progress.kernels_done = 0
        session.progress.kernels_total = total
        session.progress.update()


def count_kernel(done: int = 1) -> None:
    """`done` more kernels compiled (called from the compiling thread)."""
    session = _session
    if session is not None:
        session.progress.kernels_done += done
        session.progress.update()
