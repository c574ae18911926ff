"""Atomic file writes shared by every writer of results (weights, exports, manifests,
locks, checkpoints, formatted sources): readers never see a half-written file, and a
failed write leaves the previous file, if any, untouched.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import IO

__all__ = ["atomic_write", "atomic_write_stream"]


def atomic_write(path: str | os.PathLike[str], writer: Callable[[str], None]) -> None:
    """Run `writer` on a fresh temporary file next to `path`, then move it onto `path`.

    `writer` gets the temporary file's name (h5py wants a name, not a stream). The file
    is created with mode 0o666 less the umask -- what an ordinary open() would give the
    final file -- and synced before the rename, so that a crash cannot leave an empty
    file under the final name. Whatever `writer` or the OS raises propagates; the
    temporary file never survives."""
    target = os.path.abspath(os.fspath(path))
    folder, base = os.path.split(target)
    tmp = ""
    try:
        while True:
            tmp = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            os.close(fd)
            break
        writer(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        tmp = ""
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def atomic_write_stream(path: str | os.PathLike[str],
                        write: Callable[[IO[bytes]], object]) -> None:
    """`atomic_write` for a writer that wants a binary stream."""
    def writer(tmp: str) -> None:
        with open(tmp, "wb") as f:
            write(f)

    atomic_write(path, writer)
