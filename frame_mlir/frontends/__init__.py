"""The frontends: one folder per input language, each owning its reader, its checks
(rule ids, locations), its lowering to frame IR and its user-facing training API.

* `spec/`: v0 JSON model specs (`frame-run spec.json`);
* `network/`: the JSON network format (dlprimitives'), with its Python API
  (`frame_mlir.network`);
* `kyn/`: the `.kyn` language (`frame-kyn`);
* `api/`: the frame-compatible Python API behind the `frame` package.

They never import each other (an import-linter `independence` contract); what two
share sits in `common/` (strict JSON reading, diagnostics) or in a lower layer.
`detect.py` tells a v0 spec from a JSON network for the tools.
"""
