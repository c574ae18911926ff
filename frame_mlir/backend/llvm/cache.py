"""The on-disk compile cache: native objects keyed by what produced them.

A compile (xDSL pipeline, LLVM O3, code generation) costs 0.5-1 s; loading its object
back costs milliseconds. These kinds of entries share one folder:

* spec entries (`frame_mlir.frontends.spec.trainer.CompiledSpec`): keyed by the validated
  spec's canonical JSON and the compile options, computed *before* any xDSL import,
  and holding everything a training run needs besides the object (signatures, arena
  sizes, function and parameter names), so a warm run imports neither xDSL nor the
  pass pipeline;
* LLVM IR entries (`jit.jit_compile(..., cache=)`): keyed by the LLVM IR text, for
  modules that do not come from a spec (the Python API's graphs). They skip O3 and
  code generation, not the xDSL pipeline;
* kernel entries (files ending `.kobj`, `CompileCache.kernels()`): one per unit of the
  split compile (`jit.compile_ir`, `split.py`: one function each, named by content),
  keyed by the unit's LLVM IR text. Every compile that has a cache goes through them,
  a spec's too (through `kernels_only()`: its spec entry stands for the whole
  module), so a model whose kernels another model compiled before generates code
  only for its new ones. They share the folder, the size cap and the LRU order with
  the other entries.

Every key also covers the toolchain (`toolchain()`): a digest of the frame_mlir
package's own files (so a changed compiler never loads an old object; it subsumes
frame-mlir's version number), the xdsl, llvmlite and LLVM versions, and the host CPU
as `frame_mlir.target.host` describes it (triple, CPU name, features, caches), since
objects are compiled for that CPU.

Where and how much: `platformdirs.user_cache_dir("frame-mlir")`, or `$FRAME_CACHE_DIR`;
at most `$FRAME_CACHE_MAX_BYTES` bytes (default 512 MiB), least recently used entries
evicted first (a hit refreshes the entry's mtime). `$FRAME_NO_CACHE=1` (or the tools'
`--no-cache`) turns it off. `$FRAME_CACHE_DEBUG=1` reports hits, misses and rejected
entries on stderr.

Safety: an entry is one file, written to a temporary name and renamed into place, so
concurrent processes see either no entry or a whole one. It ends with a SHA-256 of
everything before it (header with the key material, object, extras) and is checked
before anything is loaded; a file that fails the check, or whose recorded key
material differs from the lookup's, is deleted and rebuilt, never loaded. A cache
that cannot be read or written (permissions, a full disk) only costs the compile:
nothing is raised.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

ENV_DIR = "FRAME_CACHE_DIR"
ENV_MAX_BYTES = "FRAME_CACHE_MAX_BYTES"
ENV_DISABLE = "FRAME_NO_CACHE"
ENV_DEBUG = "FRAME_CACHE_DEBUG"
DEFAULT_MAX_BYTES = 512 << 20

#: Bumped when the entry layout or the meaning of its metadata changes. 2: objects
#: carry the packed entries of their public functions (`packed.py`), which `functions`
#: lists and `get_function` calls through.
FORMAT_VERSION = 2
_MAGIC = b"FRAMEOBJ"
_PREFIX = struct.Struct("<8sIQ")  # magic, format version, header length
_DIGEST = 32  # sha256
_SUFFIX = ".fobj"
#: Kernel entries' files (`CompileCache.kernels`): apart, so that a folder's whole-model
#: entries can be told (and counted) by their suffix.
KERNEL_SUFFIX = ".kobj"
_SUFFIXES = (_SUFFIX, KERNEL_SUFFIX)
_TMP_PREFIX = ".tmp-"
#: A temporary file older than this was left by a process that died mid-write.
_STALE_TMP_SECONDS = 3600.0


def _debug(message: str) -> None:
    if os.environ.get(ENV_DEBUG, "") not in ("", "0"):
        print(f"frame-mlir cache: {message}", file=sys.stderr)


def canonical_json(value: Any) -> str:
    """One text per value: sorted keys, no whitespace, floats as Python's shortest
    round-trip repr."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)


def cache_disabled() -> bool:
    """Whether `$FRAME_NO_CACHE` turns the cache off (any value but empty or 0)."""
    from frame_mlir.compile_options import env_flag

    return env_flag(ENV_DISABLE)


def default_directory() -> Path:
    """`$FRAME_CACHE_DIR`, else the per-user cache folder of platformdirs."""
    configured = os.environ.get(ENV_DIR, "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs  # only here: the tests and most tools set FRAME_CACHE_DIR

    return Path(platformdirs.user_cache_dir("frame-mlir"))


def max_bytes_from_env() -> int:
    """`$FRAME_CACHE_MAX_BYTES` (a non-negative integer), else the default 512 MiB.

    Raises ValueError naming the variable for anything else: a typo should not
    silently mean "unlimited" or "nothing".
    """
    text = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{ENV_MAX_BYTES}: expected a number of bytes (an integer >= 0), "
                         f"found {text!r}")
    return value


def tree_digest(root: Path) -> str:
    """SHA-256 over the .py and .json files under `root`, by relative path (bytecode
    caches aside)."""
    h = hashlib.sha256()
    paths: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        paths += [os.path.join(folder, f) for f in files if f.endswith((".py", ".json"))]
    for path in sorted(paths):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        with open(path, "rb") as f:
            data = f.read()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@lru_cache(maxsize=1)
def source_digest() -> str:
    """`tree_digest` of the frame_mlir package (once per process, ~4 ms): any change to
    the compiler -- a pass, a lowering rule, this file -- changes every key."""
    return tree_digest(Path(__file__).resolve().parents[2])


def _xdsl_version() -> str:
    """xDSL's version from its dist-info folder's name: `xdsl.__version__` resolves
    through importlib.metadata, 17 ms of a 0.25 s warm start."""
    import xdsl

    site = Path(xdsl.__file__).resolve().parents[1]
    try:
        found = [n for n in os.listdir(site)
                 if n.startswith("xdsl-") and n.endswith(".dist-info")]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0][len("xdsl-"):-len(".dist-info")]
    return str(xdsl.__version__)  # an unusual install: ask importlib.metadata


@lru_cache(maxsize=1)
def toolchain() -> dict[str, Any]:
    """What, besides its input, decides a compiled object: compiler and host CPU."""
    import llvmlite
    import llvmlite.binding as llvm

    from frame_mlir.target.host import host_info

    host = host_info()
    return {
        "format": FORMAT_VERSION,
        "frame_mlir_source": source_digest(),
        "xdsl": _xdsl_version(),
        "llvmlite": llvmlite.__version__,
        "llvm": ".".join(str(v) for v in llvm.llvm_version_info),
        "triple": llvm.get_process_triple(),
        "cpu": host.cpu,
        "features": sorted(host.features),
        "arch": host.arch,
        "caches": [host.l1d_bytes, host.l2_bytes, host.l3_bytes],
        "cores": host.cores,
    }


def make_key(kind: str, material: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The key (hex SHA-256) of `material` for an entry of `kind`, with the toolchain,
    and the full key material as stored in the entry (JSON-normalised)."""
    full = json.loads(canonical_json({"kind": kind, "toolchain": toolchain(), **material}))
    return hashlib.sha256(canonical_json(full).encode()).hexdigest(), full


@dataclass(frozen=True)
class CacheEntry:
    """A verified entry: the object and what its producer stored with it."""

    key: str
    meta: dict[str, Any]
    obj: bytes
    extra: bytes


class EntryError(Exception):
    """An entry that must not be loaded (corrupted, truncated, stale or foreign)."""


def encode_entry(key: str, material: dict[str, Any], meta: dict[str, Any], obj: bytes,
                 extra: bytes = b"") -> bytes:
    """The bytes of one entry file (see the module docstring)."""
    header = canonical_json({"key": key, "material": material, "meta": meta,
                             "object_size": len(obj), "extra_size": len(extra)}).encode()
    body = _PREFIX.pack(_MAGIC, FORMAT_VERSION, len(header)) + header + obj + extra
    return body + hashlib.sha256(body).digest()


def decode_entry(data: bytes, key: str, material: dict[str, Any]) -> CacheEntry:
    """Check an entry file against the lookup and return its parts; EntryError says
    why it is rejected."""
    if len(data) < _PREFIX.size + _DIGEST:
        raise EntryError("truncated")
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise EntryError("checksum mismatch")
    magic, version, header_len = _PREFIX.unpack_from(body)
    if magic != _MAGIC or version != FORMAT_VERSION:
        raise EntryError(f"not a format-{FORMAT_VERSION} entry")
    start = _PREFIX.size
    try:
        header = json.loads(body[start:start + header_len])
        obj_size, extra_size = int(header["object_size"]), int(header["extra_size"])
        meta = header["meta"]
    except (ValueError, KeyError, TypeError) as e:
        raise EntryError(f"unreadable header ({e})") from None
    if header.get("key") != key or header.get("material") != material:
        raise EntryError("key material differs from the lookup's")
    if start + header_len + obj_size + extra_size != len(body) or not isinstance(meta, dict):
        raise EntryError("sizes do not add up")
    obj_start = start + header_len
    obj = body[obj_start:obj_start + obj_size]
    return CacheEntry(key, meta, obj, body[obj_start + obj_size:])


class CompileCache:
    """A folder of entries, at most `max_bytes` in total (LRU eviction).

    `suffix`: the file name ending of the entries this object reads and writes
    (`kernels()` makes the one for kernel entries); sizes and eviction count every
    entry of the folder. `kernel_entries_only` (`kernels_only()`): the object's own
    entries are neither loaded nor stored, only its `kernels()`."""

    def __init__(self, directory: Path | str, max_bytes: int = DEFAULT_MAX_BYTES, *,
                 suffix: str = _SUFFIX, kernel_entries_only: bool = False):
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.suffix = suffix
        self.kernel_entries_only = kernel_entries_only

    def kernels(self) -> CompileCache:
        """The same folder, for kernel entries (`.kobj`, see the module docstring)."""
        return CompileCache(self.directory, self.max_bytes, suffix=KERNEL_SUFFIX)

    def kernels_only(self) -> CompileCache:
        """This cache for a compile whose caller stores the whole result itself (a
        spec's `CompiledSpec`): whole-module lookups through it miss and stores are
        declined, while its `kernels()` work as this cache's."""
        return CompileCache(self.directory, self.max_bytes, suffix=self.suffix,
                            kernel_entries_only=True)

    @classmethod
    def from_env(cls) -> CompileCache | None:
        """The cache the environment asks for, or None when `$FRAME_NO_CACHE` is set."""
        if cache_disabled():
            return None
        return cls(default_directory(), max_bytes_from_env())

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{self.suffix}"

    def load(self, key: str, material: dict[str, Any]) -> CacheEntry | None:
        """The verified entry for `key`, or None (a miss, or a bad entry, which is
        deleted so that the caller's rebuild replaces it). Always None for a
        `kernels_only()` cache."""
        if self.kernel_entries_only:
            return None
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            _debug(f"miss {key[:16]}")
            return None
        except OSError as e:
            _debug(f"cannot read {path}: {e}")
            return None
        try:
            entry = decode_entry(data, key, material)
        except EntryError as e:
            self.discard(key, str(e))
            return None
        try:
            os.utime(path)  # most recently used: evicted last
        except OSError:
            pass
        _debug(f"hit {key[:16]} ({len(entry.obj)} bytes of object)")
        return entry

    def discard(self, key: str, reason: str) -> None:
        """Delete the entry for `key` (it failed a check, or did not load)."""
        _debug(f"rejected {key[:16]}: {reason}; rebuilding")
        try:
            self.path(key).unlink()
        except OSError:
            pass

    def store(self, key: str, material: dict[str, Any], meta: dict[str, Any], obj: bytes,
              extra: bytes = b"", *, evict: bool = True) -> bool:
        """Write an entry atomically and evict down to the size cap; False when it was
        not stored (larger than the cap, or the folder is not writable). `evict` False
        leaves the eviction to the caller (one `evict()` after storing many kernels:
        each one lists the folder). A `kernels_only()` cache stores nothing."""
        if self.kernel_entries_only:
            return False
        blob = encode_entry(key, material, meta, obj, extra)
        if len(blob) > self.max_bytes:
            _debug(f"not stored {key[:16]}: {len(blob)} bytes exceed the cap")
            return False
        tmp = self.directory / f"{_TMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(blob)
                os.replace(tmp, self.path(key))  # atomic: readers see all or nothing
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        except OSError as e:
            _debug(f"cannot write {self.directory}: {e}")
            return False
        _debug(f"stored {key[:16]} ({len(blob)} bytes)")
        if evict:
            self.evict(keep=key)
        return True

    def entries(self) -> list[tuple[Path, os.stat_result]]:
        """Entry files (of every kind) with their stat, least recently used first."""
        out = []
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        now = time.time()
        for name in names:
            path = self.directory / name
            try:
                st = path.stat()
            except OSError:
                continue  # removed by another process meanwhile
            if name.endswith(_SUFFIXES):
                out.append((path, st))
            elif name.startswith(_TMP_PREFIX) and now - st.st_mtime > _STALE_TMP_SECONDS:
                path.unlink(missing_ok=True)
        out.sort(key=lambda e: e[1].st_mtime)
        return out

    def size(self) -> int:
        """Bytes held by entries."""
        return sum(st.st_size for _, st in self.entries())

    def evict(self, keep: str | None = None) -> None:
        """Delete least recently used entries until the total fits the cap (never the
        entry `keep`, just written)."""
        entries = self.entries()
        total = sum(st.st_size for _, st in entries)
        for path, st in entries:
            if total <= self.max_bytes:
                break
            if keep is not None and path.name == f"{keep}{self.suffix}":
                continue
            try:
                path.unlink()
                _debug(f"evicted {path.name[:16]}")
            except FileNotFoundError:
                pass  # another process evicted it: it no longer counts either
            except OSError:
                continue
            total -= st.st_size

    def clear(self) -> None:
        """Delete every entry."""
        for path, _ in self.entries():
            path.unlink(missing_ok=True)
