"""frame_mlir.runtime.progress (a tqdm bar only on a TTY) and frame_mlir.tools.plot (PNG curves)."""

from __future__ import annotations

import io
import struct
import sys
from pathlib import Path

import pytest

from frame_mlir.runtime.progress import Progress, progress
from frame_mlir.tools.plot import PlotError, plot_curves

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Tty(io.StringIO):
    """A text stream that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


class _Bytes(io.StringIO):
    """A non-TTY stream that records every write call, however small."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def write(self, s: str) -> int:
        self.calls += 1
        return super().write(s)

    def flush(self) -> None:
        self.calls += 1


def _run(stream: io.StringIO | None, steps: int = 5) -> Progress:
    with progress(steps, "epoch 1/2", stream) as bar:
        for i in range(steps):
            bar.set_postfix(loss=1.0 / (i + 1), acc=None)
            bar()
        bar(0)
    return bar


# --------------------------------------------------------------------------- progress


def test_progress_writes_nothing_to_a_non_tty_stream() -> None:
    out = _Bytes()
    bar = _run(out)
    assert out.getvalue() == "" and out.calls == 0
    assert not bar.active


def test_progress_default_stream_is_stderr_at_call_time(capsys: pytest.CaptureFixture) -> None:
    _run(None)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_progress_streams_without_isatty_or_closed_are_not_ttys() -> None:
    class NoIsatty:
        def write(self, s: str) -> int:  # pragma: no cover -- must never be called
            raise AssertionError("wrote to a non-TTY stream")

    _run(NoIsatty())  # type: ignore[arg-type]
    closed = io.StringIO()
    closed.close()
    _run(closed)


def test_progress_draws_a_tqdm_bar_on_a_tty() -> None:
    out = _Tty()
    with progress(4, "epoch 3/9", out, leave=True) as bar:
        assert bar.active
        for _ in range(4):
            bar.set_postfix(loss=0.123456)
            bar()
    text = out.getvalue()
    assert "epoch 3/9" in text
    assert "4/4" in text
    assert "step/s" in text          # the rate
    assert "loss=0.1235" in text     # the postfix, 4 significant digits


def test_progress_bar_is_closed_when_the_block_raises() -> None:
    out = _Tty()
    with pytest.raises(RuntimeError), progress(10, "boom", out, leave=True) as bar:
        bar(3)
        raise RuntimeError
    assert "3/10" in out.getvalue()


def test_progress_without_tqdm_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    out = _Tty()
    bar = _run(out)
    assert out.getvalue() == "" and not bar.active


# --------------------------------------------------------------------------- plot


def _history(n: int, with_accuracy: bool = True) -> list[dict]:
    return [{"epoch": e, "loss": 2.0 / e,
             "accuracy": (0.5 + e / (4 * n)) if with_accuracy and e > 1 else None}
            for e in range(1, n + 1)]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("with_accuracy", [True, False])
def test_plot_writes_a_png(tmp_path: Path, with_accuracy: bool) -> None:
    path = tmp_path / "curves.png"
    plot_curves(path, _history(6, with_accuracy))
    width, height = _png_size(path)
    assert width > 100 and height > 100


def test_plot_accepts_str_paths_and_a_single_epoch(tmp_path: Path) -> None:
    path = tmp_path / "one.png"
    plot_curves(str(path), [{"epoch": 1, "loss": 0.5, "accuracy": 0.25}])
    _png_size(path)


def test_plot_is_png_whatever_the_suffix(tmp_path: Path) -> None:
    path = tmp_path / "curves.svg"
    plot_curves(path, _history(3))
    _png_size(path)


def test_plot_uses_no_pyplot_and_no_window(tmp_path: Path) -> None:
    before = "matplotlib.pyplot" in sys.modules
    plot_curves(tmp_path / "c.png", _history(3))
    assert ("matplotlib.pyplot" in sys.modules) == before


def test_plot_unwritable_path(tmp_path: Path) -> None:
    missing_dir = tmp_path / "no" / "such" / "dir" / "c.png"
    with pytest.raises(PlotError, match=r"--plot .*c\.png: cannot write: No such file"):
        plot_curves(missing_dir, _history(3))
    with pytest.raises(PlotError, match="cannot write"):
        plot_curves(tmp_path, _history(3))  # a directory


def test_plot_empty_or_malformed_history(tmp_path: Path) -> None:
    with pytest.raises(PlotError, match="history is empty"):
        plot_curves(tmp_path / "c.png", [])
    with pytest.raises(PlotError, match="history entry 1"):
        plot_curves(tmp_path / "c.png", [{"epoch": 1, "loss": 1.0}, {"epoch": 2}])
    assert not (tmp_path / "c.png").exists()


def test_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotError) as e:
        plot_curves(tmp_path / "c.png", _history(2))
    assert str(e.value) == "--plot needs matplotlib: pip install 'frame-mlir[plot]'"
    assert isinstance(e.value, ValueError)
    assert not (tmp_path / "c.png").exists()
