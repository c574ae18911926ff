"""docs/network-format.md's worked example runs as written: its JSON network and its
Python snippet are taken from the page, and the values the page prints are checked."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "network-format.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_worked_example_runs_as_documented(tmp_path: Path) -> None:
    network, snippet = _blocks("json")[0], _blocks("python")[0]
    (tmp_path / "tiny.json").write_text(network, encoding="utf-8")
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(snippet, str(DOC), "exec"), {})
    finally:
        os.chdir(cwd)
    printed = out.getvalue().splitlines()
    # The page states what each print shows, in its comments.
    expected = [re.search(r"# (.*?)(:|$)", line).group(1).strip()
                for line in snippet.splitlines() if line.startswith("print(")]
    assert printed == expected


def test_check_prints_the_file_stem(tmp_path: Path) -> None:
    from frame_mlir.tools.frame_dslc import main

    (tmp_path / "tiny.json").write_text(_blocks("json")[0], encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--check", str(tmp_path / "tiny.json")]) == 0
    assert out.getvalue() == "OK tiny\n"
