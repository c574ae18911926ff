"""What the tools import only when they need it, and the tables that make that possible.

The pass registry (frame_mlir/passes/registry.py): its table of pass names, modules and
classes, which frame-opt registers without importing the passes, matches the classes
in frame_mlir/passes exactly; frame-opt imports only the passes a pipeline names. The
CLIs' error handling (frame_mlir/tools/errors.py) names its error types by module
rather than importing them, and a failing run imports none of the passes. frame-run's
and frame-dslc's argument parsers import neither numpy nor xDSL.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys

from xdsl.passes import ModulePass

import frame_mlir.passes
from frame_mlir.passes import registry
from frame_mlir.passes.frame_sgd_fuse import FrameSgdFuse
from frame_mlir.tools import errors

#: The modules of every frame pass (frame_mlir.passes.<module>).
PASS_MODULES = {module for module, _ in registry.PASSES.values()}


def _named_pass_classes() -> dict[str, type[ModulePass]]:
    """Every ModulePass class with a `name` defined in a module of frame_mlir/passes
    (its pipelines included), by name; a name defined twice fails."""
    found: dict[str, type[ModulePass]] = {}
    for info in pkgutil.iter_modules(frame_mlir.passes.__path__):
        module = importlib.import_module(f"frame_mlir.passes.{info.name}")
        for cls in vars(module).values():
            if not (inspect.isclass(cls) and issubclass(cls, ModulePass)
                    and cls.__module__ == module.__name__):
                continue
            # ModulePass only annotates `name`: a base class (StagePipeline) has none.
            name = getattr(cls, "name", None)
            if name is None:
                continue
            assert name not in found, f"{name}: {found[name]} and {cls}"
            found[name] = cls
    return found


def test_table_entries_are_the_classes_of_their_names() -> None:
    for name, (module, cls_name) in registry.PASSES.items():
        cls = registry.load_pass(name)
        assert inspect.isclass(cls) and issubclass(cls, ModulePass), name
        assert (cls.__module__, cls.__name__) == (f"frame_mlir.passes.{module}", cls_name)
        assert cls.name == name
        assert registry.pass_factory(name)() is cls


def test_table_lists_every_pass_and_pipelines_every_pipeline() -> None:
    classes = _named_pass_classes()
    passes = {n for n, c in classes.items() if c.__module__ != registry.__name__}
    assert sorted(passes) == sorted(registry.PASSES), "update registry.PASSES"
    # registry.py's own named classes are pipelines (the `frame-to-<stage>` ones are
    # made by a function, so only PIPELINES holds them), each listed once.
    pipelines = [p.name for p in registry.PIPELINES]
    assert len(set(pipelines)) == len(pipelines)
    assert {n for n in classes if n not in passes} <= set(pipelines)
    assert not set(pipelines) & set(registry.PASSES)


def test_all_passes_in_table_order() -> None:
    assert [p.name for p in registry.all_passes()] == list(registry.PASSES)


def test_pipelines_default_lr_is_frame_sgd_fuses() -> None:
    # Written out in registry.py so that defining the pipelines imports no pass.
    assert registry.StagePipeline.lr == FrameSgdFuse.lr


def _passes_imported(code: str, *, stdin: str = "") -> set[str]:
    """The pass modules a fresh Python imports running `code`, which ends by printing
    `sys.modules`' names as JSON on its last line of stdout."""
    proc = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True,
                          text=True, check=True)
    names = json.loads(proc.stdout.splitlines()[-1])
    return {m.removeprefix("frame_mlir.passes.") for m in names} & PASS_MODULES


_PRINT_MODULES = "print(json.dumps(sorted(sys.modules)))\n"


def test_frame_opt_imports_only_the_passes_it_runs() -> None:
    """A fresh process: building frame-opt for `-p frame-shape-inference` (every pass
    and named pipeline registered, the pipeline parsed) imports that pass's module and
    no other pass's (running a named pipeline imports them all: it expands into them)."""
    code = ("import json, sys\n"
            "from frame_mlir.tools.frame_opt import FrameOptMain\n"
            "FrameOptMain(args=['-p', 'frame-shape-inference'])\n" + _PRINT_MODULES)
    assert _passes_imported(code) == {"frame_shape_inference"}


def test_known_errors_name_their_defining_modules() -> None:
    for name, module in errors.KNOWN_ERRORS.items():
        cls = getattr(importlib.import_module(module), name)
        assert inspect.isclass(cls) and issubclass(cls, Exception), name
        assert cls.__module__ == module, f"{name} is defined in {cls.__module__}"


def test_a_failing_frame_opt_run_imports_no_pass() -> None:
    """A verifier error reported through `run_cli` (`frame-opt: error: ...`,
    exit 1) imports none of the passes to classify it."""
    bad = ("func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) {\n"
           "  %0 = frame.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>\n"
           "  func.return\n}\n")
    code = ("import json, sys\n"
            "from frame_mlir.tools.frame_opt import main\n"
            "assert main(['-']) == 1\n" + _PRINT_MODULES)
    assert _passes_imported(code, stdin=bad) == set()


def test_frame_run_and_frame_dslc_parsers_import_no_numpy_and_no_xdsl() -> None:
    """`--help`, `--version` and usage errors need only the parsers: building them
    imports neither numpy nor xDSL (~0.06 s of a 0.13 s `frame-run --help`)."""
    code = ("import json, sys\n"
            "from frame_mlir.tools import frame_dslc, frame_run\n"
            "frame_run.build_parser()\n"
            "frame_dslc.build_parser()\n" + _PRINT_MODULES)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    heavy = {m.split(".")[0] for m in json.loads(proc.stdout.splitlines()[-1])} & {
        "numpy", "xdsl"}
    assert heavy == set()
