"""One place where the CLIs turn failures into clear messages and exit codes.

Users see `<tool>: error: <rule or pass>: <what, where, expected vs found>` and a
non-zero exit status, never a Python traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

EXIT_USAGE = 2
EXIT_ERROR = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE


def run_cli(tool: str, body: Callable[[], object]) -> int:
    """Run `body`, mapping every failure to a one-paragraph error and exit code."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from frame_mlir.frontend.errors import SpecError
    from frame_mlir.passes.pipeline import PipelineError

    try:
        result = body()
    except SystemExit as e:  # argparse usage errors and explicit exits
        code = e.code
        return code if isinstance(code, int) else (EXIT_ERROR if code else 0)
    except SpecError as e:
        for line in str(e).splitlines():
            print(f"{tool}: error: {line}", file=sys.stderr)
        return EXIT_ERROR
    except PipelineError as e:
        print(f"{tool}: error: pass {e}", file=sys.stderr)
        return EXIT_ERROR
    except ParseError as e:
        print(f"{tool}: error: parse error:\n{e}", file=sys.stderr)
        return EXIT_ERROR
    except DiagnosticException as e:
        print(f"{tool}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except FileNotFoundError as e:
        print(f"{tool}: error: IO-001 at {e.filename}: file not found", file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:
        print(f"{tool}: error: IO-001 at {getattr(e, 'filename', '?')}: {e.strerror}",
              file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except ValueError as e:  # e.g. an unknown pass name in a -p pipeline
        print(f"{tool}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # a compiler bug: still no traceback unless asked for
        if os.environ.get("FRAME_MLIR_TRACEBACK"):
            raise
        print(f"{tool}: internal error: {type(e).__name__}: {e} "
              "(set FRAME_MLIR_TRACEBACK=1 for a traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    return result if isinstance(result, int) else 0
