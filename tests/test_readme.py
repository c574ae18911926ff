"""The README's set-up commands are what CI runs and what users paste."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", setup, re.S)]


def test_readme_has_exactly_two_setup_commands() -> None:
    cmds = _readme_commands()
    assert len(cmds) == 2
    assert cmds[0].endswith("frame-run testdata/tiny_mlp.json")
    assert "pytest" in cmds[1] and "lit" in cmds[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in ci


def _use_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    use = text.split("## Use", 1)[1].split("\n## ", 1)[0]
    block = "".join(re.findall(r"```sh\n(.*?)```", use, re.S))
    # Drop trailing comments ("  # ..."), keeping '#' inside quotes out of the question:
    # the README's commands have none.
    return [re.sub(r"\s+#\s.*$", "", ln).strip() for ln in block.splitlines() if ln.strip()]


def test_every_use_command_runs(tmp_path: Path) -> None:
    """Each command of the README's "Use" block, as written (the tools from this venv;
    the C++ build left to tests/backend/test_cpp_emitter.py, which builds such programs),
    exits 0."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"}
    commands = [c for c in _use_commands() if not c.startswith("cmake ")]
    assert len(commands) >= 8
    for cmd in commands:
        cmd = cmd.replace("build/", f"{tmp_path}/")
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, f"{cmd}\n{proc.stderr[-2000:]}"
