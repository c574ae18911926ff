"""The package's import graph (issue 31, docs/architecture.md "Import rules"): no import
cycle between modules of `frame_mlir/`, counting imports inside functions and under
TYPE_CHECKING (grimp's graph, the one `lint-imports` checks its contracts on)."""

from __future__ import annotations

import sys

import pytest

grimp = pytest.importorskip("grimp")


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                if len(scc) > 1:
                    out.append(sorted(scc))
    return out


def test_tarjan_finds_a_cycle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_frame_mlir() -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    g = grimp.build_graph("frame_mlir")
    modules = {m for m in g.modules if m.startswith("frame_mlir")}
    graph = {m: {d for d in g.find_modules_directly_imported_by(m) if d in modules}
             for m in modules}
    cycles = strongly_connected(graph)
    assert not cycles, "import cycles (each a set of modules importing each other): " + \
        "; ".join(", ".join(c) for c in cycles)
