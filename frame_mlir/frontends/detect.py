"""Which frontend reads a JSON file: the tools tell a v0 model spec (`schema_version`)
from a JSON network (`inputs` / `outputs` / `operators`) by their top-level keys."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from frame_mlir.frontends.common.json_document import decode_document, read_document
from frame_mlir.frontends.spec.spec_v0 import spec_from_doc

if TYPE_CHECKING:
    from frame_mlir.frontends.network.loader import NetworkSpec, Warn
    from frame_mlir.frontends.spec.spec import ModelSpec


def load_model(path: str | Path, *, strict: bool = False,
               warn: Warn | None = None) -> ModelSpec | NetworkSpec:
    """Read, parse and validate a v0 spec or a JSON network (`-`: standard input); a
    network's warnings go to `warn` (errors with `strict`: see `network_from_doc`).

    Raises:
        SpecError: every diagnostic of the frontend the document belongs to.
    """
    from frame_mlir.frontends.network.loader import is_network_document, load_network_doc

    text, source = read_document(path)
    doc = decode_document(text, source, values=False)
    if is_network_document(doc):
        return load_network_doc(doc, source, path, strict=strict, warn=warn)
    return spec_from_doc(doc, source)
