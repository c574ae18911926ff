"""The five fuzz frontends: how each makes an input from a random source and checks it.

A frontend is `generate(rng) -> FuzzInput` plus `check(pool, input, train) -> Result`;
the hypothesis tests and the campaign (`campaign.py`) both use these, so a campaign
finding replays in a test. `Result.cls` is the outcome class the campaign counts:

    accepted+trained   valid, and its training run kept the properties
    accepted           valid (the training property not run on it)
    error:<RULE>       a clean error: the rule id (FE-003, NET-005, KYN-S04, ...), or
                       the error's kind where a tool has no rule ids (frame-opt, the API)
    timeout, crash, traceback, internal, bad-exit, silent-error, nan, mismatch, harness
                       bugs (Result.bug holds the evidence)

The property: every input gives success or a clean error (exit status 0, 1 or 2 with
a message, never `Traceback` nor `internal error`), within its time limit, without
killing the process; an accepted v0 spec trains without non-finite losses whenever the
float64 reference of the same run stays well inside float32's range, and its step-0
loss (before any update) agrees with the reference's.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

from . import corpus
from .api_interp import api_program, valid_program
from .mutate import corpus_tokens, dumps, garble_text, mutate_json, mutate_text
from .pool import Pool
from .values import mutate_kyn_values, mutate_leaf_values, mutate_network_options

CHECK_TIMEOUT = 60.0  # s: validation, formatting, passes on one input (campaign: settable)


def check_timeout() -> float:
    """The current validation limit (read at call time: the campaign may lower it)."""
    return CHECK_TIMEOUT
TRAIN_TIMEOUT = 180.0  # s: compile (cold cache) and a capped training run
SPEC_MAX_TRAIN_STEPS = 20
KYN_MAX_EPOCHS = 2
TRAIN_MAX_ELEMENTS = 300_000  # summed over the declared shapes: larger inputs only validate
BUG_CLASSES = frozenset({"timeout", "crash", "traceback", "internal", "bad-exit",
                         "silent-error", "nan", "mismatch", "harness", "late-refusal",
                         "no-rule"})

# The acceptance property: what validation accepts compiles and runs its first step,
# or is refused by a documented run-time rule -- one that depends on what validation
# cannot see: memory (RT-001), and for `.kyn` the CSV's contents (KYN-C01 a cell or
# column that cannot be used, C02 the encoded feature count, C03 the classes in the
# data) and the native trainer's documented limits (C04 device cuda, C05 fp16/bf16).
# Any other refusal of an accepted input -- a verifier's or a pass's message, a library
# message without a rule id, a validation rule the checker should have applied -- is a
# `late-refusal` bug. A refusal at validation without a rule id (`error:other`) is a
# `no-rule` bug for the frontends with rule ids (specs, networks, `.kyn`).
RUNTIME_RULES: dict[str, frozenset[str]] = {
    "spec": frozenset({"RT-001"}),
    "network": frozenset({"RT-001"}),
    "kyn": frozenset({"RT-001", "KYN-C01", "KYN-C02", "KYN-C03", "KYN-C04", "KYN-C05"}),
}
#: Messages of the compiler's internals (a pass, a verifier), which an accepted input --
#: or an API call -- must never reach.
#: (`frame-shape-inference: ...` names a pass; `frame-run: error: ...` is a tool.)
INTERNAL_MESSAGE = re.compile(r"produced invalid IR|does not verify|VerifyException|"
                              r"\b(?:frame-(?!dslc|run|opt|kyn)|convert-)[a-z-]+: |"
                              r"[Vv]erif(?:ier|ication) (?:failed|error)")

_RULE = re.compile(r"\b((?:JSON|IO|RT|FE|NET|KYN)-[A-Z]?\d{2,3})\b")


@dataclass
class FuzzInput:
    """One generated input: what the tool reads, plus how it was made (for reports)."""

    frontend: str
    data: Any  # bytes (files), or the API program
    meta: dict[str, Any] = field(default_factory=dict)

    def reproducer(self) -> str:
        """The input as text, for a bug report."""
        if isinstance(self.data, bytes):
            text = self.data.decode("utf-8", "backslashreplace")
        else:
            text = repr(self.data)
        return f"{self.meta}\n{text[:6000]}"


@dataclass
class Result:
    """The outcome class of one input, and for a bug, the evidence."""

    cls: str
    bug: str | None = None
    trained: bool = False
    message: str = ""  # a clean error's first line
    tried: bool = False  # the training property ran (or was attempted) on this input
    detail: str = ""  # a clean error's whole message (its tail)

    @property
    def is_bug(self) -> bool:
        return self.cls in BUG_CLASSES


def classify(r: dict[str, Any], tool: str = "") -> Result:
    """The outcome of one worker result of a CLI-like case."""
    if "timeout" in r:
        return Result("timeout", f"no answer within {r['timeout']:.0f} s")
    if "crash" in r:
        return Result("crash", f"{r['crash']}\n{r.get('native', '')[-3000:]}")
    if "harness_error" in r:
        return Result("harness", r["harness_error"])
    code, out, err = r["code"], r["stdout"], r["stderr"]
    everything = out + err + r.get("native", "")
    if code == "escaped" or "Traceback (most recent call last)" in everything:
        return Result("traceback", err[-4000:] or everything[-4000:])
    if code == 70 or "internal error" in err:
        return Result("internal", err[-4000:])
    if code not in (0, 1, 2):
        return Result("bad-exit", f"exit status {code!r}\n{err[-2000:]}")
    if code == 0:
        return Result("ok")
    if not err.strip():
        return Result("silent-error", f"exit status {code} and nothing on stderr\n{out[-1000:]}")
    return Result(f"error:{error_kind(err, code, tool)}",
                  message=err.strip().split("\n")[0][:300], detail=err[-3000:])


def error_kind(err: str, code: int, tool: str) -> str:
    """The rule id of a clean error, or its kind for tools without rule ids."""
    m = _RULE.search(err)
    if m:
        return m.group(1)
    if code == 2:
        return "usage"
    low = err.lower()
    for word in ("parse error", "invalid pass pipeline", "unknown pass"):
        if word in low:
            return word.replace(" ", "-")
    if re.search(r":\d+:\d+: (frame|convert|arith)-[\w-]+ at @", err):
        return "pass"  # a pass refused the IR, naming the pass and the function
    if re.search(r":\d+:\d+: ", err) or "does not verify" in low:
        return "verify"  # a verifier (op, type or attribute) refused the IR
    return "other"


# Bugs found by fuzzing and reported, each with its reproducer in test_regressions.py
# (xfail there while open). The campaign names them when it meets them again; the CI
# generators would avoid them so that CI stays green meanwhile (none is open now).
KNOWN_BUGS: dict[str, tuple[str, str]] = {}


def judge_late(frontend: str, res: Result, stage: str) -> Result:
    """The acceptance property on the run (`stage`) of an input validation accepted:
    `res` is that run's CLI-like outcome; see RUNTIME_RULES."""
    if res.is_bug:
        return Result(res.cls, f"{stage}: {res.bug}", tried=True)
    if res.cls == "ok":
        return Result("accepted+trained", trained=True, tried=True)
    rule = res.cls[6:] if res.cls.startswith("error:") else res.cls
    if rule in RUNTIME_RULES.get(frontend, frozenset()) \
            and not INTERNAL_MESSAGE.search(res.detail or res.message):
        return Result(f"accepted, then {res.cls}", message=res.message, tried=True)
    return Result("late-refusal", f"{stage}: validation accepted the input, then it was "
                  f"refused ({res.cls}) without a documented run-time rule:\n"
                  f"{res.detail or res.message}",
                  message=res.message, tried=True)


def judge_check(res: Result) -> Result:
    """A validation refusal must name its rule (the frontends with rule ids)."""
    if res.cls in ("error:other", "error:verify", "error:pass") \
            or (res.cls.startswith("error:")
                and INTERNAL_MESSAGE.search(res.detail or res.message)):
        return Result("no-rule", f"validation refused the input without a rule id, or "
                      f"with a compiler-internal message:\n{res.detail or res.message}",
                      message=res.message)
    return res


def known_bug(res: Result) -> str | None:
    """The KNOWN_BUGS id whose signature the bug evidence matches, if any."""
    for key, (pattern, _) in KNOWN_BUGS.items():
        if res.bug and re.search(pattern, res.bug):
            return key
    return None


# --------------------------------------------------------------------------- v0 specs


def random_spec(rng: random.Random) -> dict[str, Any]:
    """A valid v0 spec: a random MLP (skips, optional biases, relu), data and ranges."""
    batch = rng.choice((1, 2, 3, 4, 8, 16))
    width = {"x": rng.randint(1, 12)}
    layers: list[dict[str, Any]] = []
    prev = "x"
    for i in range(rng.randint(1, 4)):
        src = rng.choice(list(width)) if rng.random() < 0.3 else prev
        out = rng.randint(1, 12)
        layer: dict[str, Any] = {"name": f"l{i}", "kind": "linear", "input": src,
                                 "weight_shape": [width[src], out]}
        if rng.random() < 0.6:
            layer["bias_shape"] = [batch, out]
        if rng.random() < 0.7:
            layer["activation"] = rng.choice(("relu", "none"))
        layers.append(layer)
        width[layer["name"]] = out
        prev = layer["name"]
    pred = prev if rng.random() < 0.8 else rng.choice([ly["name"] for ly in layers])

    def rng_range() -> list[float]:
        scale = rng.choice((1.0, 1.0, 0.1, 10.0, 1000.0))
        lo = rng.uniform(-1, 0.5) * scale
        return [lo, lo + rng.uniform(0.01, 2) * scale]

    def data(count: int) -> dict[str, Any]:
        if rng.random() < 0.2:
            return {"kind": "inline", "values": [round(rng.uniform(-2, 2), 4)
                                                 for _ in range(count)]}
        return {"kind": "uniform_seeded", "range": rng_range()}

    return {
        "schema_version": 0,
        "model": {"name": rng.choice(("m", "fuzz_mlp", "M2")), "dtype": "float32",
                  "batch": batch},
        "inputs": [{"name": "x", "shape": [batch, width["x"]]}],
        "layers": layers,
        "loss": {"kind": "mse", "prediction": pred, "target_shape": [batch, width[pred]]},
        "optimizer": {"kind": "sgd", "learning_rate": 10 ** rng.uniform(-4, 1)},
        "training": {"steps": rng.randint(1, 30), "seed": rng.randrange(2**32),
                     "log_every": rng.randint(0, 10)},
        "data": {"x": data(batch * width["x"]), "target": data(batch * width[pred]),
                 "params": {"kind": "uniform_seeded", "weight_range": rng_range(),
                            "bias_range": rng_range()}},
    }


def gen_spec(rng: random.Random) -> FuzzInput:
    """A v0 spec: generated valid, generated and mutated, a mutated testdata spec, or
    garbled text of one of those."""
    r = rng.random()
    if r < 0.25:
        doc, how = random_spec(rng), "generated"
    elif r < 0.5:
        return gen_spec_values(rng)
    elif r < 0.7:
        doc, how = mutate_json(random_spec(rng), rng), "generated+mutated"
    else:
        doc, how = mutate_json(rng.choice(corpus.v0_valid_docs()), rng), "testdata+mutated"
    text = dumps(doc, rng)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.12:
        data, how = garble_text(text, rng), how + "+garbled"
    return FuzzInput("spec", data, {"how": how, "stdin": rng.random() < 0.1})


def gen_spec_values(rng: random.Random) -> FuzzInput:
    """Option values: a generated spec with 1-2 of its numbers set to edge values."""
    doc = mutate_leaf_values(random_spec(rng), rng)
    return FuzzInput("spec", dumps(doc, rng).encode("utf-8", "surrogatepass"),
                     {"how": "values", "stdin": False})


def _numel_budget(doc: Any) -> int:
    """Summed element count of every shape-like list in `doc` (a training-cost bound)."""
    total = 0
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("shape", "weight_shape", "bias_shape", "target_shape") \
                        and isinstance(v, list) and all(isinstance(d, int) for d in v):
                    total += math.prod(abs(d) for d in v)
                else:
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)
    return total


def spec_compile_key(data: bytes) -> str:
    """What the compile cache keys a valid spec by (all but steps and log_every)."""
    try:
        doc = json.loads(data.decode("utf-8-sig"))
        doc["training"].pop("steps", None)
        doc["training"].pop("log_every", None)
        return json.dumps(doc, sort_keys=True)
    except Exception:  # noqa: BLE001 -- not a valid spec: its text is as good a key
        return data.decode("utf-8", "replace")


def check_spec(pool: Pool, inp: FuzzInput, train: bool = True) -> Result:
    """`frame-dslc --check`; for an accepted spec, a capped `frame-run` and the float64
    reference."""
    if inp.meta.get("stdin"):
        r = pool.run("tool", {"tool": "frame-dslc", "argv": ["--check", "-"],
                              "stdin": inp.data}, check_timeout())
    else:
        r = pool.run("tool", {"tool": "frame-dslc", "argv": ["--check", "spec.json"],
                              "files": {"spec.json": inp.data}}, check_timeout())
    res = classify(r, "frame-dslc")
    if res.cls != "ok":
        return judge_check(res)
    doc = json.loads(inp.data.decode("utf-8-sig"))
    if not train or "schema_version" not in doc or _numel_budget(doc) > TRAIN_MAX_ELEMENTS:
        return Result("accepted")
    doc["training"]["steps"] = min(int(doc["training"]["steps"]), SPEC_MAX_TRAIN_STEPS)
    doc["training"]["log_every"] = 1
    r = pool.run("spec_train", {"text": json.dumps(doc)}, TRAIN_TIMEOUT)
    res = classify(r, "frame-run")
    if res.cls != "ok":
        return judge_late("spec", res, "training the capped spec")
    res = judge_training(r, doc)
    res.tried = True
    return res


def judge_training(r: dict[str, Any], doc: dict[str, Any]) -> Result:
    """The training property of an accepted spec's capped run against the reference."""
    losses = [float(m.group(2)) for m in re.finditer(r"^step (\d+) loss (\S+)$", r["stdout"],
                                                      re.M)]
    steps = doc["training"]["steps"]
    if len(losses) != steps:
        return Result("mismatch", f"expected {steps} loss lines, found {len(losses)}:\n"
                      f"{r['stdout'][-2000:]}")
    ref = r["reference"]
    safe = ref["finite"] and ref["max_abs"] < 1e30
    if safe and not all(math.isfinite(v) for v in losses):
        return Result("nan", f"float32 losses {losses} but the float64 reference stays "
                      f"finite (max |value| {ref['max_abs']:.3g}): {ref['losses']}")
    ref0 = ref["losses"][0] if ref["losses"] else float("nan")
    if safe and math.isfinite(ref0):
        # Step 0 is before any update: only float32 rounding separates the two.
        scale = abs(ref0) + 1e-6 * max(1.0, ref["max_abs"]) ** 2
        if abs(losses[0] - ref0) > 1e-3 * scale:
            return Result("mismatch", f"step 0 loss {losses[0]!r}, float64 reference {ref0!r}")
    return Result("accepted+trained", trained=True)


# --------------------------------------------------------------------------- frame IR

FRAME_PASSES = ("frame-shape-inference", "frame-autodiff", "frame-sgd-fuse{lr=0.05}",
                "convert-frame-to-linalg", "frame-fold-movement", "frame-fuse-elementwise",
                "frame-bufferize",
                "frame-collapse-dims", "frame-lower-scan", "frame-tile-matmul",
                "frame-outline-kernels", "frame-fuse-gemm-epilogue", "frame-gemm",
                "frame-parallelize{threads=2 min-work=0}", "frame-train-loop", "cse", "dce",
                "canonicalize")


def gen_ir(rng: random.Random) -> FuzzInput:
    """A lit test chunk, text-mutated (or not), with its file's pipeline or a random
    sequence of frame passes."""
    chunks = corpus.ir_chunks()
    name, text, pipes = rng.choice(chunks)
    if rng.random() < 0.9:
        text = mutate_text(text, rng, _ir_tokens())
    if pipes and rng.random() < 0.5:
        pipe = rng.choice(pipes)
    else:
        pipe = ",".join(rng.choice(FRAME_PASSES) for _ in range(rng.randint(1, 3)))
    return FuzzInput("ir", text.encode("utf-8", "surrogatepass"), {"seed": name, "pipeline": pipe})


_IR_TOKENS: list[str] = []


def _ir_tokens() -> list[str]:
    if not _IR_TOKENS:
        _IR_TOKENS.extend(corpus_tokens([t for _, t, _ in corpus.ir_chunks()]))
    return _IR_TOKENS


def check_ir(pool: Pool, inp: FuzzInput, train: bool = True) -> Result:
    """`frame-opt input.mlir -p PIPELINE`."""
    r = pool.run("tool", {"tool": "frame-opt", "argv": ["in.mlir", "-p", inp.meta["pipeline"]],
                          "files": {"in.mlir": inp.data}}, check_timeout())
    res = classify(r, "frame-opt")
    return Result("accepted") if res.cls == "ok" else res


# --------------------------------------------------------------------------- Python API


def gen_api(rng: random.Random) -> FuzzInput:
    """A random API call sequence: valid (shape-tracked), valid with one invalid call,
    or random (see `api_interp.api_program`)."""
    prog, how = api_program(rng)
    return FuzzInput("api", prog, {"how": how})


def gen_api_values(rng: random.Random) -> FuzzInput:
    """A valid program whose attributes are drawn from the edge values."""
    return FuzzInput("api", valid_program(rng, edges=True), {"how": "values"})


def check_api(pool: Pool, inp: FuzzInput, train: bool = True) -> Result:
    """Run the program: every exception must be a documented class with a message."""
    program = inp.data if train else [i for i in inp.data if i[0] not in ("run",)]
    if not train:  # validation only: no JIT compile either
        program = [i for i in program if not (i[0] == "call" and i[1] == "compile")]
    r = pool.run("api", program, TRAIN_TIMEOUT)
    tried = train and any(i[0] == "call" and i[1] == "compile" for i in program)
    if "timeout" in r or "crash" in r or "harness_error" in r:
        res = classify(r)
        res.tried = tried
        return res
    ran = "run" in r.get("log", [])
    if r["exc"] in ("OutputMismatch", "NonFinite") and r["module"] == "fzlib.api_interp":
        # The interpreter's checks of a run against the graph and its float64 model.
        return Result("mismatch" if r["exc"] == "OutputMismatch" else "nan",
                      f"{r['message']}\n{r['traceback']}", tried=tried)
    if r["exc"] is not None:
        return Result("traceback", f"{r['module']}.{r['exc']}: {r['message']}\n"
                      f"{r['traceback']}", tried=tried)
    for exc, message, *where in r["errors"]:
        if not message.strip():
            return Result("silent-error", f"{exc} without a message", tried=tried)
        documented = exc == "NotImplementedError" and "no gradient rule" in message
        if INTERNAL_MESSAGE.search(message) and not documented:
            # The graph was built (its ops accepted their arguments), and a later call
            # -- compile, a backward graph -- failed with a pass's or verifier's message.
            return Result("late-refusal", f"{exc} from {where[0] if where else '?'} with a "
                          f"compiler-internal message: {message}", tried=tried)
    if r["errors"]:
        return Result(f"error:{r['errors'][0][0]}", message=r["errors"][0][1], tried=tried)
    return Result("accepted+trained" if ran else "accepted", trained=ran, tried=tried)


# --------------------------------------------------------------------------- networks


def gen_network(rng: random.Random) -> FuzzInput:
    """A testdata or dlprimitives-derived network: 40% option-value mutations of an
    operator of a type drawn uniformly (`values.mutate_network_options`), else
    JSON-mutated (85%); 10% garbled."""
    if rng.random() < 0.4:
        return gen_network_values(rng)
    name, doc = rng.choice(corpus.networks())
    if rng.random() < 0.85:
        doc = mutate_json(doc, rng)
    text = dumps(doc, rng)
    data = text.encode("utf-8", "surrogatepass")
    how = "mutated"
    if rng.random() < 0.1:
        data, how = garble_text(text, rng), "garbled"
    return FuzzInput("network", data, {"seed": name, "how": how})


def gen_network_values(rng: random.Random, op_type: str | None = None) -> FuzzInput:
    """Option values of one operator of `op_type` (default: a type drawn uniformly
    among those with options) in a seed network that has one."""
    by_type = corpus.networks_by_operator()
    op_type = op_type or rng.choice(sorted(by_type))
    name, doc = rng.choice(by_type[op_type])
    doc = mutate_network_options(doc, rng, op_type)
    return FuzzInput("network", dumps(doc, rng).encode("utf-8", "surrogatepass"),
                     {"seed": name, "how": f"values:{op_type}"})


def network_compile_key(data: bytes) -> str:
    """Networks compile per document (seed and data are run-time): the text is the key."""
    try:
        return json.dumps(json.loads(data.decode("utf-8-sig")), sort_keys=True)
    except Exception:  # noqa: BLE001 -- not JSON: its text is as good a key
        return data.decode("utf-8", "replace")


def check_network(pool: Pool, inp: FuzzInput, train: bool = True) -> Result:
    """`frame-dslc --check net.json`; for an accepted network, forward and two SGD
    steps through `frame_mlir.network`."""
    r = pool.run("tool", {"tool": "frame-dslc", "argv": ["--check", "net.json"],
                          "files": {"net.json": inp.data}}, check_timeout())
    res = classify(r, "frame-dslc")
    if res.cls != "ok":
        return judge_check(res)
    doc = json.loads(inp.data.decode("utf-8-sig"))
    if not train or "operators" not in doc or _numel_budget(doc) > TRAIN_MAX_ELEMENTS:
        return Result("accepted")
    r = pool.run("network_train", {"text": json.dumps(doc)}, TRAIN_TIMEOUT)
    return judge_late("network", classify(r, "frame-run"), "training the accepted network")


# --------------------------------------------------------------------------- .kyn


_KYN_TOKENS: list[str] = []


def _kyn_tokens() -> list[str]:
    if not _KYN_TOKENS:
        _KYN_TOKENS.extend(corpus_tokens([t for _, t in corpus.kyn_programs()]))
    return _KYN_TOKENS


def gen_kyn(rng: random.Random) -> FuzzInput:
    """A testdata .kyn program (valid or from invalid/), text-mutated."""
    if rng.random() < 0.35:
        return gen_kyn_values(rng)
    name, text = rng.choice(corpus.kyn_programs())
    if rng.random() < 0.9:
        text = mutate_text(text, rng, _kyn_tokens())
    return FuzzInput("kyn", text.encode("utf-8", "surrogatepass"), {"seed": name})


def gen_kyn_values(rng: random.Random) -> FuzzInput:
    """Option values of a valid program: a layer's arguments, a new layer, a key's
    value or a call's argument (`values.mutate_kyn_values`)."""
    name, text = rng.choice([p for p in corpus.kyn_programs()
                             if not p[0].startswith("invalid")])
    return FuzzInput("kyn", mutate_kyn_values(text, rng).encode("utf-8", "surrogatepass"),
                     {"seed": name, "how": "values"})


def check_kyn(pool: Pool, inp: FuzzInput, train: bool = True) -> Result:
    """`frame-kyn validate`, `fmt`, `ast`, and for a valid program `compile`; then a
    native training run with at most KYN_MAX_EPOCHS epochs."""
    name = inp.meta["seed"]
    files = {**corpus.kyn_siblings(), name: inp.data}
    links = {"data": str(corpus.KYN_DATA)}
    steps = [{"tool": "frame-kyn", "argv": ["validate", name]},
             {"tool": "frame-kyn", "argv": ["fmt", name]},
             {"tool": "frame-kyn", "argv": ["ast", name]},
             {"tool": "frame-kyn", "argv": ["compile", name, "-o", "out.py"]}]
    r = pool.run("tools", {"files": files, "links": links, "steps": steps}, check_timeout())
    if "steps" not in r:
        return classify(r, "frame-kyn")
    results = [classify({**s, "native": r.get("native", "")}, "frame-kyn") for s in r["steps"]]
    for res, step in zip(results, steps, strict=False):
        if res.is_bug:
            return Result(res.cls, f"frame-kyn {' '.join(step['argv'])}: {res.bug}")
    first = results[0]
    if first.cls != "ok":
        return judge_check(first)
    for res, step in zip(results[1:], steps[1:], strict=False):
        if res.cls != "ok":  # fmt, ast, compile of a valid program
            late = judge_late("kyn", res, f"frame-kyn {' '.join(step['argv'])}")
            if late.is_bug:
                late.tried = False
                return late
    if not train:
        return Result("accepted")
    r = pool.run("kyn_train", {"files": files, "links": links, "path": name,
                               "max_epochs": KYN_MAX_EPOCHS}, TRAIN_TIMEOUT)
    return judge_late("kyn", classify(r, "frame-kyn"),
                      f"training (epochs capped at {KYN_MAX_EPOCHS})")


FRONTENDS = {
    "spec": (gen_spec, check_spec),
    "ir": (gen_ir, check_ir),
    "api": (gen_api, check_api),
    "network": (gen_network, check_network),
    "kyn": (gen_kyn, check_kyn),
}

#: The option-value generators alone (the CI sample's acceptance-property tests).
VALUE_GENERATORS = {"spec": gen_spec_values, "network": gen_network_values,
                    "kyn": gen_kyn_values, "api": gen_api_values}
