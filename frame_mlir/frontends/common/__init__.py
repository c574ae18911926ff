"""What the JSON frontends share: diagnostics with rule ids and JSON pointers
(`errors.py`) and strict reading of a JSON document (`json_document.py`)."""
