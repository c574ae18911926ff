"""Files shared by every reader and writer.

Writes: atomic, for every writer of results (weights, exports, manifests, locks,
checkpoints, formatted sources): readers never see a half-written file, and a failed
write leaves the previous file, if any, untouched.

Reads: every reader of an input file (programs, specs, networks, data, weights,
checkpoints, locks) first checks that it is a regular file (`check_regular_file`,
`open_regular`): a device (`/dev/zero` never ends), a FIFO (blocks until a writer
comes) or a directory is refused before anything is read, with a `NotRegularFileError`
(an OSError whose `strerror` says `expected a regular file, found a FIFO`), which the
callers report under their rule (IO-001 and the frontends' own rules).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from typing import IO, Any

__all__ = ["NotRegularFileError", "atomic_write", "atomic_write_stream",
           "check_regular_file", "file_kind", "open_regular"]


class NotRegularFileError(OSError):
    """An input path that exists but is not a regular file. `strerror` reads `expected a
    regular file, found <kind>` (`file_kind`), `filename` is the path."""

    def __init__(self, path: str | os.PathLike[str], found: str):
        super().__init__(errno.EINVAL, f"expected a regular file, found {found}",
                         os.fspath(path))
        self.found = found


def file_kind(mode: int) -> str:
    """What a `stat` mode is, with its article: `a regular file`, `a directory`, `a
    character device`, `a block device`, `a FIFO`, `a socket`."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a file of unknown type"


def check_regular_file(path: str | os.PathLike[str]) -> int:
    """The size in bytes of the regular file at `path` (symbolic links followed).

    Raises:
        NotRegularFileError: `path` is a directory, device, FIFO or socket.
        OSError: `stat` failed (FileNotFoundError for a missing file, ...).
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(path, file_kind(st.st_mode))
    return st.st_size


def _regular_opener(path: str, flags: int) -> int:
    """`os.open` that cannot block on a FIFO swapped in after the check, and refuses
    whatever is not a regular file once open."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | nonblock)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(path, file_kind(st.st_mode))
        if nonblock:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike[str], mode: str = "rb", **kwargs: Any) -> IO[Any]:
    """`open(path, mode, **kwargs)` for reading an input file, refused (before anything
    is opened) unless it is a regular file; raises as `check_regular_file`."""
    check_regular_file(path)
    return open(path, mode, opener=_regular_opener, **kwargs)  # noqa: SIM115


def atomic_write(path: str | os.PathLike[str], writer: Callable[[str], None]) -> None:
    """Run `writer` on a fresh temporary file next to `path`, then move it onto `path`.

    `writer` gets the temporary file's name (h5py wants a name, not a stream). The file
    is created with mode 0o666 less the umask -- what an ordinary open() would give the
    final file -- and synced before the rename, so that a crash cannot leave an empty
    file under the final name. Whatever `writer` or the OS raises propagates; the
    temporary file never survives. An existing `path` that is not a regular file (a
    device, FIFO or directory) is a NotRegularFileError: renaming onto it would replace
    the device node itself."""
    target = os.path.abspath(os.fspath(path))
    try:  # never replace a device, FIFO or folder (as root, /dev/null itself)
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise NotRegularFileError(path, file_kind(mode))
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
