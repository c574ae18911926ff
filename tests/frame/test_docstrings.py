"""Every public name of the `frame` API documents itself: `help(frame.nn.Linear)` says
what it computes, its arguments, its shapes and shows an example -- and the examples run.

The walk covers `frame.__all__`, `frame.nn.__all__`, `frame.data.__all__` and every
public name of `frame._core` (which holds all of them), plus the public methods and
properties of each class. A new public name without a docstring fails here.
"""

from __future__ import annotations

import doctest
import inspect
import types
from collections.abc import Iterator

import pytest

import frame

#: Names whose docstring must state shapes (a `Shapes:` section): the graph ops, the nn
#: factories and every API that takes or makes shaped values.
SHAPED = {
    "add", "mul", "relu", "square", "matmul", "sum", "mse_loss", "constant",
    "selective_scan", "heaviside_surrogate", "scatter_add", "from_numpy",
    "build_backward_graph", "build_sgd_update_graph", "add_parameter_inputs",
    "TensorDataset", "DataLoader", "Graph.add_graph_input", "Executable.run", "Tensor.to",
    *(name for name in frame.nn.__all__ if name not in ("Module", "add_parameter_inputs")),
}


def _public_objects() -> dict[str, object]:
    """name -> object for every public function and class the package exposes."""
    names: dict[str, object] = {}
    sources: list[tuple[types.ModuleType, list[str]]] = [
        (frame, [n for n in frame.__all__ if not n.startswith("_")]),
        (frame.nn, list(frame.nn.__all__)),
        (frame.data, list(frame.data.__all__)),
        (frame._core, [n for n in dir(frame._core) if not n.startswith("_")]),
    ]
    for module, public in sources:
        for name in public:
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or not callable(obj):
                continue  # frame.nn / frame.data themselves; DType aliases such as float32
            if isinstance(obj, frame.DType):
                continue
            names[name] = obj
    return names


def _public_members(cls: type) -> Iterator[tuple[str, object]]:
    """The public methods and properties a class defines itself."""
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property | staticmethod | classmethod) or inspect.isfunction(member):
            yield name, member


PUBLIC = _public_objects()


def test_the_walk_finds_the_whole_api() -> None:
    assert {"Linear", "DataLoader", "compile", "scatter_add", "Tensor", "Graph"} <= set(PUBLIC)
    # The stub's 75 names less class members (dims, run, ...) and DType constants.
    assert len(PUBLIC) >= 55


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_name_has_a_docstring_with_an_example(name: str) -> None:
    doc = inspect.getdoc(PUBLIC[name])
    assert doc, f"{name} has no docstring"
    assert ">>>" in doc, f"{name}'s docstring has no example (a >>> session)"
    if name in SHAPED:
        assert "Shapes:" in doc, f"{name}'s docstring states no shapes (a 'Shapes:' line)"
    if inspect.isfunction(PUBLIC[name]):
        # Every argument is described (an "Args:" section naming it).
        params = [p for p in inspect.signature(PUBLIC[name]).parameters if p != "self"]
        if params:
            assert "Args:" in doc, f"{name}'s docstring has no Args section"
            for param in params:
                assert param in doc.split("Args:", 1)[1], f"{name}: argument {param} undocumented"


CLASS_MEMBERS = sorted(f"{cls_name}.{member}" for cls_name, cls in PUBLIC.items()
                       if isinstance(cls, type) for member, _ in _public_members(cls))


@pytest.mark.parametrize("qualname", CLASS_MEMBERS)
def test_public_member_has_a_docstring(qualname: str) -> None:
    cls_name, member = qualname.split(".")
    obj = vars(PUBLIC[cls_name])[member]
    doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj)
    assert doc, f"{qualname} has no docstring"
    if qualname in SHAPED:
        assert "Shapes:" in doc, f"{qualname}'s docstring states no shapes"


def test_class_member_walk_covers_the_sheet_methods() -> None:
    for qualname in ("Tensor.to", "Tensor.numpy", "Graph.add_graph_input", "Graph.mark_output",
                     "Graph.to_mlir", "Executable.run", "Module.build", "Module.parameters",
                     "Shape.dims", "Device.backend"):
        assert qualname in CLASS_MEMBERS


def _doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(recurse=False)
    tests: dict[str, doctest.DocTest] = {}
    for name, obj in PUBLIC.items():
        objects = [(name, obj)]
        if isinstance(obj, type):
            objects += [(f"{name}.{m}", getattr(member, "fget", member))
                        for m, member in _public_members(obj)]
        for qualname, target in objects:
            for test in finder.find(target, qualname, globs={}):
                if test.examples:
                    tests[qualname] = test
    return [tests[k] for k in sorted(tests)]


DOCTESTS = _doctests()


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples_run(test: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)


def test_help_of_linear_is_useful() -> None:
    text = pydoc_text(frame.nn.Linear)
    for fragment in ("batch", "in_dim", "out_dim", "with_bias", "dtype", "Shapes:",
                     "[batch, in_dim] -> [batch, out_dim]", ">>>"):
        assert fragment in text


def pydoc_text(obj: object) -> str:
    import pydoc

    return pydoc.render_doc(obj, renderer=pydoc.plaintext)
