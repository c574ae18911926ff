"""A progress bar for long CLI loops that stays out of piped output.

    with progress(total=steps, desc="epoch 1/5") as bar:
        for feed in feeds:
            loss = step(feed)
            bar.set_postfix(loss=loss)
            bar()                      # one step done (bar(n) for n steps)

On a terminal (``stream.isatty()``) this draws a tqdm bar with the step rate and the ETA,
and clears it when the block ends. Anywhere else (a pipe, a file, a test's captured stream),
or when tqdm cannot be imported, the bar is a no-op that writes nothing at all, so the
output of a piped run is byte-identical with or without it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["Progress", "progress"]


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


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _is_tty(stream: TextIO) -> bool:
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
    if _is_tty(out):
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
