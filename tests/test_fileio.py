"""frame_mlir.fileio's input checks (issue 30, item 5): a device, FIFO or directory is
refused before anything is read, with the path and what it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from frame_mlir.fileio import NotRegularFileError, check_regular_file, open_regular


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(("make", "found"), [
    (lambda tmp: Path("/dev/null"), "a character device"),
    (lambda tmp: Path("/dev/zero"), "a character device"),
    (_fifo, "a FIFO"),
    (lambda tmp: tmp, "a directory"),
])
def test_not_regular_files_are_refused(tmp_path: Path, make, found: str) -> None:
    path = make(tmp_path)
    for read in (check_regular_file, open_regular):
        with pytest.raises(NotRegularFileError) as info:
            read(path)
        e = info.value
        assert e.filename == str(path) and e.found == found
        assert e.strerror == f"expected a regular file, found {found}"
        assert isinstance(e, OSError)


def test_regular_files_and_links_are_read(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("hello")
    link = tmp_path / "link"
    link.symlink_to(path)
    assert check_regular_file(path) == 5 and check_regular_file(link) == 5
    with open_regular(link, "r", encoding="utf-8") as f:
        assert f.read() == "hello"
    with pytest.raises(FileNotFoundError):
        check_regular_file(tmp_path / "none")


def test_atomic_write_never_replaces_a_device_or_fifo(tmp_path: Path) -> None:
    """Renaming onto `/dev/null` (as root) would replace the device node with a regular
    file: a FIFO stands in for it here."""
    from frame_mlir.fileio import atomic_write_stream

    pipe = _fifo(tmp_path)
    with pytest.raises(NotRegularFileError, match="found a FIFO"):
        atomic_write_stream(pipe, lambda f: f.write(b"x"))
    assert pipe.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
    with pytest.raises(NotRegularFileError, match="found a directory"):
        atomic_write_stream(tmp_path, lambda f: f.write(b"x"))
    atomic_write_stream(tmp_path / "new", lambda f: f.write(b"x"))
    assert (tmp_path / "new").read_bytes() == b"x"
