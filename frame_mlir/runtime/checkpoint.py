"""Training checkpoints: parameters, optimizer state and progress in one `.npz` file,
written atomically (a crash mid-write leaves the previous checkpoint whole).

    param/<name>   a parameter (the whole tensor, as one process holds it)
    state/<name>   an optimizer state tensor (momentum, Adam's moments), by name
    meta           JSON: format, version, model, the digest of what was trained,
                   the step (or epoch) reached, and the history printed so far

`--resume FILE` reloads one and continues the run: the digest must match (the same
model, data and options, CKPT-002), so the resumed run is the uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frame_mlir.fileio import NotRegularFileError, atomic_write_stream, check_regular_file

FORMAT = "frame-checkpoint"
VERSION = 1


class CheckpointError(Exception):
    """A checkpoint cannot be read or does not belong to this run (CKPT-00N)."""

    def __init__(self, rule: str, where: str, expected: str, found: str):
        super().__init__(f"{rule} at {where}: expected {expected}, found {found}")


def digest(description: Any) -> str:
    """A short digest of a JSON-able description of a run (what a checkpoint is of)."""
    text = json.dumps(description, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class Checkpoint:
    """What a checkpoint holds."""

    model: str
    digest: str
    step: int  # steps (v0) or epochs (networks, .kyn) completed
    params: dict[str, np.ndarray]
    state: dict[str, np.ndarray] = field(default_factory=dict)
    history: dict[str, Any] = field(default_factory=dict)  # JSON: what was printed

    def save(self, path: str) -> None:
        """Write atomically (IO-001 when the file cannot be written)."""
        meta = {"format": FORMAT, "version": VERSION, "model": self.model,
                "digest": self.digest, "step": self.step, "history": self.history}
        arrays = {f"param/{n}": a for n, a in self.params.items()}
        arrays.update({f"state/{n}": a for n, a in self.state.items()})
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)

        def write(f: Any) -> None:
            np.savez(f, **arrays)

        atomic_write_stream(path, write)

    @classmethod
    def load(cls, path: str, model: str, expected_digest: str) -> Checkpoint:
        """Read `path`, checking it is a checkpoint of this very run."""
        try:
            check_regular_file(path)  # a device or FIFO is never read
            with np.load(path, allow_pickle=False) as z:
                files = dict(z.items())
        except NotRegularFileError as e:
            raise CheckpointError("CKPT-001", path, "a regular file", e.found) from None
        except FileNotFoundError:
            raise CheckpointError("CKPT-001", path, "a checkpoint file", "no such file"
                                  ) from None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            why = "a file numpy cannot read" if "pickle" in str(e) else str(e)
            raise CheckpointError("CKPT-001", path, "a checkpoint (.npz) written by "
                                  "--checkpoint-every", why) from None
        try:
            meta = json.loads(bytes(files.pop("meta")).decode())
            if meta.get("format") != FORMAT or meta.get("version") != VERSION:
                raise ValueError(f"format {meta.get('format')!r} version "
                                 f"{meta.get('version')!r}")
            step = int(meta["step"])
        except (KeyError, ValueError, TypeError, UnicodeDecodeError) as e:
            raise CheckpointError("CKPT-001", path, f"a {FORMAT} file of version "
                                  f"{VERSION}", f"no readable meta ({e})") from None
        if meta.get("model") != model or meta.get("digest") != expected_digest:
            raise CheckpointError(
                "CKPT-002", path, f"a checkpoint of this run (model '{model}', the same "
                "data, options and rank-independent settings)",
                f"one of model '{meta.get('model')}'"
                + (" trained with different settings" if meta.get("model") == model
                   else ""))
        params = {k[6:]: v for k, v in files.items() if k.startswith("param/")}
        state = {k[6:]: v for k, v in files.items() if k.startswith("state/")}
        return cls(model, expected_digest, step, params, state, meta.get("history") or {})


def check_arrays(path: str, what: str, found: Mapping[str, np.ndarray],
                 expected: Mapping[str, tuple[int, ...]]) -> None:
    """CKPT-001 unless `found` has exactly the `expected` names and shapes."""
    for name, shape in expected.items():
        if name not in found:
            raise CheckpointError("CKPT-001", f"{path}:{what}/{name}",
                                  f"{what} '{name}' of shape {list(shape)}", "none")
        if tuple(found[name].shape) != tuple(shape):
            raise CheckpointError("CKPT-001", f"{path}:{what}/{name}",
                                  f"shape {list(shape)}", str(list(found[name].shape)))
    extra = sorted(set(found) - set(expected))
    if extra:
        raise CheckpointError("CKPT-001", f"{path}:{what}/{extra[0]}",
                              f"only this run's {what}s", f"an unknown {what}")
