"""The harness must see every kind of failure it claims to catch: planted bugs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fzlib.frontends import Result, classify, judge_training
from fzlib.pool import Pool


@pytest.mark.parametrize(("what", "cls"), [
    ("segfault", "crash"), ("abort", "crash"), ("exit", "crash"),
    ("internal", "internal"), ("traceback", "traceback"), ("ok", "ok"),
])
def test_planted_failures_are_classified(fuzz_pool: Pool, what: str, cls: str) -> None:
    r = fuzz_pool.run("planted", {"what": what}, 60)
    assert classify(r).cls == cls, r


def test_hang_is_a_timeout_and_the_worker_recovers(fuzz_pool: Pool) -> None:
    assert classify(fuzz_pool.run("planted", {"what": "hang"}, 2)).cls == "timeout"
    assert classify(fuzz_pool.run("planted", {"what": "ok"}, 60)).cls == "ok"


def test_escaped_exception_is_a_traceback(fuzz_pool: Pool) -> None:
    # A frame-opt run whose pipeline cannot even be parsed must be a clean error; a
    # harness that called a missing tool would report its own failure instead.
    r = fuzz_pool.run("tool", {"tool": "frame-opt", "argv": ["x.mlir", "-p", "no-such-pass"],
                               "files": {"x.mlir": b""}}, 60)
    assert classify(r, "frame-opt").cls.startswith("error:"), r
    r = fuzz_pool.run("tool", {"tool": "no-such-tool", "argv": []}, 60)
    assert classify(r).cls == "harness"


def test_clean_error_gets_its_rule(fuzz_pool: Pool) -> None:
    r = fuzz_pool.run("tool", {"tool": "frame-dslc", "argv": ["--check", "s.json"],
                               "files": {"s.json": b'{"schema_version": 1}'}}, 60)
    assert classify(r, "frame-dslc").cls == "error:FE-001"


def _doc(steps: int) -> dict[str, object]:
    return {"training": {"steps": steps}}


def test_training_property_flags_nan_and_mismatch() -> None:
    ref = {"losses": [1.0, 0.5], "max_abs": 10.0, "finite": True}
    ok = {"stdout": "step 0 loss 1.0000001\nstep 1 loss 0.5\n", "reference": ref}
    assert judge_training(ok, _doc(2)).cls == "accepted+trained"
    nan = {"stdout": "step 0 loss 1\nstep 1 loss nan\n", "reference": ref}
    assert judge_training(nan, _doc(2)).cls == "nan"
    off = {"stdout": "step 0 loss 1.5\nstep 1 loss 0.5\n", "reference": ref}
    assert judge_training(off, _doc(2)).cls == "mismatch"
    short = {"stdout": "step 0 loss 1\n", "reference": ref}
    assert judge_training(short, _doc(2)).cls == "mismatch"
    # float32 overflow where the float64 reference only leaves float32's range: allowed
    big = {"losses": [1.0, 1e200], "max_abs": 1e100, "finite": True}
    inf = {"stdout": "step 0 loss 1\nstep 1 loss inf\n", "reference": big}
    assert judge_training(inf, _doc(2)).cls == "accepted+trained"


def test_reference_matches_the_compiled_run(fuzz_pool: Pool) -> None:
    """The float64 reference agrees with frame-run on the testdata spec (so a
    mismatch in the fuzz property means the compiled run, not the reference)."""
    from fzlib.corpus import TESTDATA

    doc = json.loads((TESTDATA / "tiny_mlp.json").read_text())
    doc["training"].update(steps=20, log_every=1)
    r = fuzz_pool.run("spec_train", {"text": json.dumps(doc)}, 180)
    assert classify(r).cls == "ok", r
    res: Result = judge_training(r, doc)
    assert res.cls == "accepted+trained", res
    losses = [float(line.split()[3]) for line in r["stdout"].splitlines()
              if line.startswith("step")]
    assert losses == pytest.approx(r["reference"]["losses"], rel=1e-4)


# A hand-written valid API program: y = relu(x @ w) + x2, its loss sum(y * y), then the
# backward graph for x and w and an SGD step; every run is checked against float64.
_F32 = ("$dtype", "float32")
_API_PROGRAM = [
    ("call", "Graph", ["g"], "g"),
    ("method", ("$g", 0), "add_graph_input", [[2, 3], _F32], "v"),
    ("method", ("$g", 0), "add_graph_input", [[3, 4], _F32], "v"),
    ("call", "matmul", [("$g", 0), ("$v", 0), ("$v", 1)], "v"),
    ("call", "relu", [("$g", 0), ("$v", 2)], "v"),
    ("call", "constant", [("$g", 0), [0.5] * 8, [2, 4], _F32], "v"),
    ("call", "add", [("$g", 0), ("$v", 3), ("$v", 4)], "v"),
    ("call", "square", [("$g", 0), ("$v", 5)], "v"),
    ("call", "sum", [("$g", 0), ("$v", 6), []], "v"),
    ("method", ("$g", 0), "mark_output", [("$v", 7)], None),
    ("method", ("$g", 0), "mark_output", [("$v", 5)], None),
    ("call", "compile", [("$g", 0), "cpu"], "e"),
    ("run", ("$e", 0), False),
    ("call", "build_backward_graph", [("$g", 0), 0, [1, 0]], "g"),
    ("call", "compile", [("$g", 1), "cpu"], "e"),
    ("run", ("$e", 1), False),
    ("call", "build_sgd_update_graph", [[[("$ishape", 0), _F32]], 0.1], "g"),
    ("call", "compile", [("$g", 2), "cpu"], "e"),
    ("run", ("$e", 2), False),
]


def test_api_runs_are_checked_against_float64() -> None:
    """The interpreter compares a run's outputs with the float64 model of the graph:
    all five modelled outputs (forward 2, the backward graph's forward 2, SGD 1) pass,
    and a wrong model is caught as a mismatch."""
    from fzlib.api_interp import Interpreter, OutputMismatch

    interp = Interpreter()
    for instr in _API_PROGRAM:
        interp.execute(instr)
    assert interp.log.count("run") == 3 and interp.checked_runs == 5
    interp = Interpreter()
    for instr in _API_PROGRAM[:12]:
        interp.execute(instr)
    (ex,) = interp.objs["e"]
    shape, dtype, _ = interp.expected[id(ex)][1]
    interp.expected[id(ex)][1] = (shape, dtype, ("const", np.zeros(shape) - 7.0))
    with pytest.raises(OutputMismatch, match="differs from the float64 evaluation"):
        interp.execute(_API_PROGRAM[12])


def test_reference_counts_the_squared_residuals() -> None:
    """A spec whose target range reaches 9.2e18: the float64 mean of the squared
    residuals (3e37) fits float32 but their sum (the compiled mse's intermediate,
    1.6e39) does not, so the compiled losses are inf. The reference must call that
    unsafe (max_abs >= 1e30), not a `nan` bug (campaign of issue 30, spec #845)."""
    from fzlib.corpus import TESTDATA
    from fzlib.reference import reference_losses

    from frame_mlir.frontends.spec.spec_v0 import spec_from_doc

    doc = json.loads((TESTDATA / "tiny_mlp.json").read_text())
    doc["data"]["target"] = {"kind": "uniform_seeded", "range": [4.0, 9223372036854775808]}
    doc["optimizer"]["learning_rate"] = 1e-30  # the parameters stay where they start
    doc["training"].update(steps=1, log_every=1)
    ref = reference_losses(spec_from_doc(doc, "spec.json"))
    assert ref["max_abs"] >= 1e30, ref
