"""lit configuration: RUN lines call frame-opt / frame-run / frame-dslc and filecheck."""

import os
import shutil

import lit.formats

config.name = "frame-mlir"  # noqa: F821
config.test_format = lit.formats.ShTest()  # noqa: F821
config.suffixes = [".mlir", ".test"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["lit.cfg.py", "Inputs"]  # noqa: F821

# lit scrubs the environment: put the tools (next to this Python) on PATH.
tools_dir = os.path.dirname(shutil.which("frame-opt") or "")
if not tools_dir:
    raise RuntimeError("frame-opt not found on PATH: install the package (pip install -e .)")
config.environment["PATH"] = os.pathsep.join(  # noqa: F821
    [tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))]  # noqa: F821
)
repo_root = os.path.dirname(config.test_source_root)  # noqa: F821
config.substitutions.append(("%testdata", os.path.join(repo_root, "testdata")))  # noqa: F821

# The tools' compile cache: never the user's own (lit scrubs the environment, so the
# tools would otherwise fall back to the per-user folder). A folder of the ignored
# Output tree, kept between runs like any build output; keys cover the compiler's
# sources, so an edit never loads an old object.
config.environment["FRAME_CACHE_DIR"] = os.path.join(  # noqa: F821
    config.test_source_root, "Output", "frame-cache"  # noqa: F821
)
config.environment["FRAME_CACHE_MAX_BYTES"] = str(64 << 20)  # noqa: F821

# Verify the IR after every pass in every tool, as the pytest suite does (frame-opt
# does by default; frame-run, frame-dslc and frame-kyn verify only the pipeline's input
# and output unless asked).
config.environment["FRAME_VERIFY_EACH"] = "1"  # noqa: F821
