"""Reproducibility (docs/kyn.md, "Reproducibility"): hashes, the run manifest, the lock.

* `config_hash(text)`: SHA-256 of the `.kyn` source text (UTF-8), as KynML computes it.
* `data_hash(path)`: SHA-256 of the dataset file, None when it cannot be read.
* `write_json_atomic(path, data)`: `run_manifest.json`, locks and sweep results.
* `create_lock` / `check_lock`: the lock records the program's config hash, every
  imported file's hash, the data file's hash and the frame-mlir version; a check names
  each thing that drifted (LockMismatchError, rule KYN-L01).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from frame_mlir.fileio import atomic_write_stream, check_regular_file, open_regular
from frame_mlir.frontends.kyn.csvload import file_sha256
from frame_mlir.frontends.kyn.errors import KynDiagnostic, LockMismatchError
from frame_mlir.frontends.kyn.module import KynModule

__all__ = ["LOCK_VERSION", "check_lock", "config_hash", "create_lock", "data_hash",
           "env_info", "lock_fields", "version", "write_json_atomic"]

LOCK_VERSION = 1


def version() -> str:
    from frame_mlir.version import package_version

    return package_version("frame-mlir")


def config_hash(text: str) -> str:
    """SHA-256 hex digest of the source text, UTF-8 encoded (64 characters)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def data_hash(path: str) -> str | None:
    """SHA-256 of the data file read in 64 KiB chunks; None when unreadable or not a
    regular file (`/dev/zero` would never end)."""
    try:
        check_regular_file(path)
    except OSError:
        return None
    return file_sha256(path)


def env_info() -> dict[str, str]:
    """The manifest's `env`: python, numpy and the platform (the native trainer does not
    use torch, so its key is left out, as KynML leaves out a failed import)."""
    import numpy as np

    return {"python": sys.version.split()[0], "numpy": np.__version__,
            "platform": platform.platform()}


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write `data` as indented JSON (`fileio.atomic_write_stream`), creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2) + "\n"
    atomic_write_stream(path, lambda f: f.write(text.encode("utf-8")))


def _imports(module_path: str) -> dict[str, str]:
    """Hash of every file imported (transitively) by the program at `module_path`."""
    from frame_mlir.frontends.kyn.parser import parse_with_diagnostics

    out: dict[str, str] = {}
    todo = [Path(module_path).resolve()]
    seen = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open_regular(p, "r", encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if p != Path(module_path).resolve():
            out[os.path.relpath(p, Path(module_path).resolve().parent)] = config_hash(text)
        prog, _ = parse_with_diagnostics(text, str(p))
        todo.extend((p.parent / i.path).resolve() for i in prog.imports)
    return out


def lock_fields(module: KynModule) -> dict[str, Any]:
    """What a lock pins for `module`."""
    d = module.dataset
    return {
        "lock_version": LOCK_VERSION,
        "source_path": os.path.basename(module.source_path),
        "config_hash": config_hash(module.source_text),
        "imports": _imports(module.source_path) if not module.source_path.startswith("<")
        else {},
        "data": {"path": d.path, "data_hash": data_hash(d.resolved)},
        "frame_mlir_version": version(),
    }


def create_lock(module: KynModule, lock_path: str | Path) -> dict[str, Any]:
    """Write the lock of `module` to `lock_path` (atomically); returns its fields."""
    fields = lock_fields(module)
    write_json_atomic(lock_path, fields)
    return fields


def check_lock(module: KynModule, lock_path: str | Path) -> None:
    """Raise LockMismatchError naming every field of the lock that `module` no longer
    matches (the source, an import, the data file, the frame-mlir version)."""
    lock_path = str(lock_path)
    try:
        with open_regular(lock_path, "r", encoding="utf-8") as f:
            locked = json.loads(f.read())
    except FileNotFoundError:
        raise LockMismatchError([KynDiagnostic(
            "KYN-L02", "lock", "lock file not found (create it with `frame-kyn lock create`)",
            lock_path)]) from None
    except OSError as e:
        raise LockMismatchError([KynDiagnostic(
            "KYN-L02", "lock", f"cannot read the lock file: {e.strerror or e}", lock_path)]
        ) from None
    except ValueError as e:
        raise LockMismatchError([KynDiagnostic(
            "KYN-L02", "lock", f"cannot read the lock file: {e}", lock_path)]) from None
    now = lock_fields(module)
    problems = []
    if not isinstance(locked, dict) or locked.get("lock_version") != LOCK_VERSION:
        problems.append(f"lock_version: expected {LOCK_VERSION}, found "
                        f"{locked.get('lock_version') if isinstance(locked, dict) else locked!r}")
    else:
        if locked.get("config_hash") != now["config_hash"]:
            problems.append(f"config_hash: the source of {now['source_path']} changed (lock "
                            f"{str(locked.get('config_hash'))[:12]}..., now "
                            f"{now['config_hash'][:12]}...)")
        old_imp, new_imp = locked.get("imports") or {}, now["imports"]
        for name in sorted(set(old_imp) | set(new_imp)):
            if name not in new_imp:
                problems.append(f"imports: '{name}' is no longer imported")
            elif name not in old_imp:
                problems.append(f"imports: '{name}' is newly imported")
            elif old_imp[name] != new_imp[name]:
                problems.append(f"imports: the source of '{name}' changed")
        old_d, new_d = locked.get("data") or {}, now["data"]
        if old_d.get("path") != new_d["path"]:
            problems.append(f"data: path changed from '{old_d.get('path')}' to "
                            f"'{new_d['path']}'")
        elif old_d.get("data_hash") != new_d["data_hash"]:
            problems.append(f"data: the contents of '{new_d['path']}' changed (data_hash "
                            f"{str(old_d.get('data_hash'))[:12]}..., now "
                            f"{str(new_d['data_hash'])[:12]}...)")
        if locked.get("frame_mlir_version") != now["frame_mlir_version"]:
            problems.append(f"frame_mlir_version: locked {locked.get('frame_mlir_version')}, "
                            f"running {now['frame_mlir_version']}")
    if problems:
        raise LockMismatchError([KynDiagnostic("KYN-L01", "lock", f"lock mismatch: {p}",
                                               lock_path) for p in problems])
