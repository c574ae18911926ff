"""A progress bar for long CLI loops that stays out of piped output.

    with progress(total=steps, desc="epoch 1/5") as bar:
        for feed in feeds:
            loss = step(feed)
            bar.set_postfix(loss=loss)
            bar()                      # one step done (bar(n) for n steps)

On a terminal (``stream.isatty()``) this draws a tqdm bar with the step rate and the ETA,
and clears it when the block ends. Anywhere else (a pipe, a file, a test's captured stream),
or when tqdm cannot be imported, the bar is a no-op that writes nothing at all, so the
output of a piped run is byte-identical with or without it. Lines printed while a bar is
up go through ``bar.write(text, file)``, which lifts the bar off the terminal first.

:func:`summary_line` is the closing line of a training run (compile seconds, steps/s)
that the tools write to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["Progress", "is_tty", "progress", "summary_line"]


class Progress:
    """The handle a :func:`progress` block yields: call it to advance, set a postfix.

    This base class is the no-op used when no bar is shown.
    """

    __slots__ = ()

    @property
    def active(self) -> bool:
        """Whether a bar is actually drawn."""
        return False

    def __call__(self, n: int = 1) -> None:
        """Mark `n` more steps as done."""

    def set_postfix(self, **values: Any) -> None:
        """Show ``name=value`` pairs after the bar (floats with 4 significant digits)."""

    def write(self, text: str, file: TextIO) -> None:
        """Write `text` to `file` as is (a bar first leaves the terminal, then returns)."""
        file.write(text)


class _TqdmProgress(Progress):
    """A :class:`Progress` drawn by a tqdm bar."""

    __slots__ = ("_bar",)

    def __init__(self, bar: Any):
        self._bar = bar

    @property
    def active(self) -> bool:
        return True

    def __call__(self, n: int = 1) -> None:
        self._bar.update(n)

    def set_postfix(self, **values: Any) -> None:
        text = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
        # No forced redraw: tqdm repaints on the next update, at most every `mininterval`.
        self._bar.set_postfix_str(text, refresh=False)

    def write(self, text: str, file: TextIO) -> None:
        # tqdm clears the bars of stdout and stderr, writes, and redraws them; the flush
        # puts the line on the terminal before the bar comes back.
        self._bar.write(text, file=file, end="")
        file.flush()


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def is_tty(stream: TextIO) -> bool:
    """Whether `stream` is a terminal (False for anything without a working isatty)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


@contextmanager
def progress(total: int, desc: str, stream: TextIO | None = None, *,
             leave: bool = False, unit: str = "step") -> Iterator[Progress]:
    """A progress bar over `total` steps labelled `desc`, drawn on `stream` only if a TTY.

    Args:
        total: the number of steps the block will do.
        desc: the label before the bar (e.g. ``"epoch 3/10"``).
        stream: where to draw; None means ``sys.stderr`` at call time.
        leave: keep the finished bar on screen instead of clearing it.
        unit: the name of one step (the rate reads ``<unit>/s``).

    Yields:
        A :class:`Progress`: ``handle(n=1)`` advances, ``handle.set_postfix(loss=...)``
        shows values after the bar. Without a TTY (or without tqdm) it does nothing.
    """
    out = sys.stderr if stream is None else stream
    tqdm_cls = None
    if is_tty(out):
        try:
            from tqdm import tqdm as tqdm_cls
        except ImportError:
            tqdm_cls = None
    if tqdm_cls is None:
        yield Progress()
        return
    bar = tqdm_cls(total=total, desc=desc, file=out, leave=leave, unit=unit,
                   dynamic_ncols=True)
    try:
        yield _TqdmProgress(bar)
    finally:
        bar.close()


def summary_line(tool: str, name: str, compile_seconds: float, steps: int,
                 train_seconds: float, total_seconds: float, *,
                 cached: bool = False) -> str:
    """The closing line of a training run, for stderr: `frame-run: NAME: compiled in
    C s, N steps in T s (R steps/s), A s in all`; `cached`: the compile was a load
    from the compile cache (the line says so)."""
    origin = " (from the compile cache)" if cached else ""
    return (f"{tool}: {name}: compiled in {compile_seconds:.1f} s{origin}, {steps} steps in "
            f"{train_seconds:.1f} s ({steps / max(train_seconds, 1e-9):.1f} steps/s), "
            f"{total_seconds:.1f} s in all\n")
