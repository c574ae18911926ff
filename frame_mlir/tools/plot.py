"""Training curves as a PNG: ``frame-run net.json --data SOURCE --plot curves.png`` and
``frame-run spec.json --plot loss.png``.

For a network (:func:`plot_curves`) the figure shows the training loss of every epoch and,
below it on a shared epoch axis, the held-out accuracy of the epochs that have one; for a
v0 spec (:func:`plot_losses`) the loss of every step. It is drawn with matplotlib's Agg canvas
directly (no pyplot, no GUI backend, no global state): nothing ever opens a window.
matplotlib is optional (``pip install 'frame-mlir[plot]'``) and imported only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["PlotError", "plot_curves", "plot_losses", "require_matplotlib"]


class PlotError(ValueError):
    """The curves cannot be plotted: matplotlib is missing or the file cannot be written."""


def _points(history: Sequence[dict[str, Any]]) -> tuple[list[int], list[float],
                                                         list[int], list[float]]:
    """(epochs, losses, epochs with an accuracy, accuracies) of `history`."""
    epochs: list[int] = []
    losses: list[float] = []
    acc_epochs: list[int] = []
    accs: list[float] = []
    for i, entry in enumerate(history):
        try:
            epoch = int(entry["epoch"])
            loss = float(entry["loss"])
            acc = entry.get("accuracy")
            acc = None if acc is None else float(acc)
        except (KeyError, TypeError, ValueError) as e:
            raise PlotError(f"--plot: history entry {i} is not {{'epoch': int, 'loss': float, "
                            f"'accuracy': float | None}}: {entry!r} ({e})") from None
        epochs.append(epoch)
        losses.append(loss)
        if acc is not None:
            acc_epochs.append(epoch)
            accs.append(acc)
    return epochs, losses, acc_epochs, accs


def plot_curves(path: str | Path, history: Sequence[dict[str, Any]]) -> None:
    """Write a PNG of the loss curve and, where present, the held-out accuracy curve.

    Args:
        path: the PNG file to write (PNG whatever its suffix).
        history: one entry per epoch, ``{"epoch": int, "loss": float,
            "accuracy": float | None}``: the epoch's training loss and its held-out accuracy
            (None when there is no held-out split or it was not evaluated).

    Raises:
        PlotError: matplotlib is not installed, the history is empty or malformed, or the
            file cannot be written (with the operating system's reason).
    """
    FigureCanvasAgg, Figure, MaxNLocator = _matplotlib()
    if not history:
        raise PlotError("--plot: nothing to plot, the training history is empty")
    epochs, losses, acc_epochs, accs = _points(history)

    rows = 2 if accs else 1
    fig = Figure(figsize=(7.0, 3.2 * rows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    fig.suptitle("Training curves")

    ax = axes[0]
    ax.plot(epochs, losses, marker="o", markersize=3, color="tab:blue", label="train loss")
    ax.set_title("Training loss per epoch")
    ax.set_ylabel("loss")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")

    if accs:
        ax = axes[1]
        ax.plot(acc_epochs, accs, marker="o", markersize=3, color="tab:orange",
                label="held-out accuracy")
        ax.set_title("Held-out accuracy per epoch")
        ax.set_ylabel("accuracy")
        if all(0.0 <= a <= 1.0 for a in accs):
            ax.set_ylim(0.0, 1.0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right")

    axes[-1].set_xlabel("epoch")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))

    _save(fig, path)


def _matplotlib() -> tuple[Any, Any, Any]:
    """(FigureCanvasAgg, Figure, MaxNLocator), or the PlotError naming the extra."""
    try:
        import matplotlib  # noqa: F401 -- fails first when matplotlib is absent
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise PlotError("--plot needs matplotlib: pip install 'frame-mlir[plot]'") from None
    return FigureCanvasAgg, Figure, MaxNLocator


def require_matplotlib() -> None:
    """Raise the PlotError that names the `plot` extra unless matplotlib can be imported:
    the tools check before training, so a missing extra costs no run."""
    _matplotlib()


def _save(fig: Any, path: str | Path) -> None:
    try:
        fig.savefig(Path(path), format="png", dpi=100)
    except OSError as e:
        raise PlotError(f"--plot {path}: cannot write: {e.strerror or e}") from None


#: The most points a step curve draws; longer runs are thinned evenly (first and last
#: step kept), which a 700-pixel-wide figure cannot tell apart.
MAX_POINTS = 20_000


def plot_losses(path: str | Path, losses: Sequence[float] | Any, *,
                title: str = "Training loss") -> None:
    """Write a PNG of the loss of every step (step 0 first), on a log scale when every
    loss is finite and positive (an MSE falls over orders of magnitude), else linear;
    non-finite losses leave gaps.

    Raises:
        PlotError: matplotlib is not installed, there are no losses, or the file cannot
            be written (with the operating system's reason).
    """
    import numpy as np

    FigureCanvasAgg, Figure, MaxNLocator = _matplotlib()
    values = np.asarray(losses, dtype=np.float64).reshape(-1)
    if values.size == 0:
        raise PlotError("--plot: nothing to plot, the run has no losses")
    steps = np.arange(values.size)
    if values.size > MAX_POINTS:
        keep = np.unique(np.linspace(0, values.size - 1, MAX_POINTS).astype(np.int64))
        steps, values = steps[keep], values[keep]
    finite = np.isfinite(values)
    shown = np.where(finite, values, np.nan)  # inf would stretch the axis to nothing

    fig = Figure(figsize=(7.0, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot(steps, shown, color="tab:blue", linewidth=1.2,
            marker="o" if values.size <= 50 else None, markersize=3, label="loss")
    if finite.all() and (values > 0).all():
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (before the step's update)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")
    _save(fig, path)
