"""`python -m frame_mlir.frontends.kyn.format FILE [--write | --check]` (KynML's interface):
`frame-kyn fmt`.

The entry lives here, not in the formatter's module, because it goes through the CLI
(`tools/frame_kyn.py`), which imports the formatter: the library stays below its command line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run `frame-kyn fmt` with `argv` (default: the command line's arguments)."""
    from frame_mlir.tools.frame_kyn import main as cli_main

    return cli_main(["fmt", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
