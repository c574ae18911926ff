"""The long fuzz campaign: N inputs per frontend, counted by outcome class.

    .venv/bin/python tests/fuzz/campaign.py --inputs 10000 --write-doc
    nice -n 10 .venv/bin/python tests/fuzz/campaign.py --inputs 200 --frontends spec,kyn

Every input is validated (and, for frame IR, run through its passes). The training
property (compile with the JIT and train: capped steps or epochs, see
`fzlib/frontends.py`) runs on accepted inputs whose compiled form is new -- the compile
cache key: a spec without steps/log_every, a network document, a `.kyn` text, an API
program -- up to `--train-cap` per frontend, since a compile costs about a second and
10,000 of them would not fit in an hour on two cores. The counts say how many trained.
API programs beyond the cap run without their `compile` and `run` calls.

Prints a table of counts by outcome class per frontend and, with `--write-doc`, writes
it into docs/reliability.md; `--bugs FILE` collects every bug's reproducer as JSON.
One worker process, one thread: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fzlib import frontends as fe  # noqa: E402
from fzlib.pool import Pool  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "reliability.md"
DEFAULT_CAPS = {"spec": 200, "ir": 0, "api": 200, "network": 100, "kyn": 60}


def compile_key(frontend: str, inp: fe.FuzzInput) -> str:
    """What decides whether an accepted input's compiled form is new."""
    if frontend == "spec":
        return fe.spec_compile_key(inp.data)
    if frontend == "network":
        return fe.network_compile_key(inp.data)
    if isinstance(inp.data, bytes):
        return inp.data.decode("utf-8", "replace")
    return repr(inp.data)


def run_frontend(frontend: str, n: int, seed: int, cap: int, pool: Pool,
                 bugs: list[dict[str, Any]], progress: bool) -> dict[str, Any]:
    """Run `n` inputs of one frontend; returns its counts and training tallies."""
    gen, check = fe.FRONTENDS[frontend]
    rng = random.Random(f"{seed}:{frontend}")
    counts: Counter[str] = Counter()
    values: Counter[str] = Counter()  # the option-value mutations' outcomes
    known: Counter[str] = Counter()
    seen: set[str] = set()
    trained = 0
    t0 = time.monotonic()
    for i in range(n):
        inp = gen(rng)
        want = False
        if trained < cap:
            want = compile_key(frontend, inp) not in seen
        res = check(pool, inp, want)
        if res.tried:
            seen.add(compile_key(frontend, inp))
        trained += int(res.tried)
        counts[res.cls] += 1
        if str(inp.meta.get("how", "")).startswith("values"):
            values[res.cls] += 1
        if res.is_bug:
            kb = fe.known_bug(res)
            if kb:
                known[kb] += 1
            bugs.append({"frontend": frontend, "index": i, "class": res.cls, "known": kb,
                         "evidence": (res.bug or "")[-4000:],
                         "reproducer": inp.reproducer()})
        if progress and (i + 1) % 500 == 0:
            print(f"  {frontend}: {i + 1}/{n} {time.monotonic() - t0:.0f}s "
                  f"{dict(counts.most_common(6))}", file=sys.stderr, flush=True)
    return {"inputs": n, "counts": dict(counts), "values": dict(values), "known": dict(known),
            "train_attempts": trained, "seconds": time.monotonic() - t0}


SUMMARY_COLUMNS = ("accepted+trained", "accepted", "clean error", "accepted, then error",
                   "timeout", "crash", "traceback", "internal", "late refusal", "no rule",
                   "other bug")


def summarize(counts: dict[str, int]) -> dict[str, int]:
    """Outcome classes folded into the table's columns."""
    out = dict.fromkeys(SUMMARY_COLUMNS, 0)
    for cls, k in counts.items():
        if cls in ("accepted+trained", "accepted", "timeout", "crash", "traceback",
                   "internal"):
            out[cls] += k
        elif cls in ("late-refusal", "no-rule"):
            out[cls.replace("-", " ")] += k
        elif cls.startswith("error:"):
            out["clean error"] += k
        elif cls.startswith("accepted, then"):
            out["accepted, then error"] += k
        else:
            out["other bug"] += k
    return out


def render(results: dict[str, dict[str, Any]], meta: dict[str, Any]) -> str:
    """The markdown of the campaign's results (the generated part of reliability.md)."""
    lines = [f"Campaign of {meta['date']}: seed `{meta['seed']}`, {meta['inputs']} inputs per "
             f"frontend, {meta['minutes']:.0f} minutes on one process "
             f"(`{meta['command']}`).", "",
             "| frontend | inputs | " + " | ".join(SUMMARY_COLUMNS) + " | trained (tries) |",
             "|---|---:|" + "---:|" * len(SUMMARY_COLUMNS) + "---:|"]
    for name, r in results.items():
        s = summarize(r["counts"])
        lines.append(f"| {name} | {r['inputs']} | "
                     + " | ".join(str(s[c]) for c in SUMMARY_COLUMNS)
                     + f" | {r['train_attempts']} |")
    lines += ["", "Of these, the option-value mutations (`fzlib/values.py`; for the api, "
              "valid programs whose attributes are drawn from the edge values):", "",
              "| frontend | inputs | " + " | ".join(SUMMARY_COLUMNS) + " |",
              "|---|---:|" + "---:|" * len(SUMMARY_COLUMNS)]
    for name, r in results.items():
        if r.get("values"):
            s = summarize(r["values"])
            lines.append(f"| {name} | {sum(r['values'].values())} | "
                         + " | ".join(str(s[c]) for c in SUMMARY_COLUMNS) + " |")
    lines += ["", "Clean errors by rule (or kind):", ""]
    for name, r in results.items():
        errs = sorted(((k[6:], v) for k, v in r["counts"].items() if k.startswith("error:")),
                      key=lambda kv: -kv[1])
        lines.append(f"- **{name}**: " + ", ".join(f"{k} {v}" for k, v in errs))
        then = {k: v for k, v in r["counts"].items() if k.startswith("accepted, then")}
        if then:
            lines.append("  - accepted by validation, refused when trained: "
                         + ", ".join(f"{k[15:]} {v}" for k, v in then.items()))
        if r["known"]:
            lines.append("  - known bugs met: " + ", ".join(f"{k} {v}"
                                                            for k, v in r["known"].items()))
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- campaign:begin -->", "<!-- campaign:end -->"


def write_doc(text: str) -> None:
    """Replace the generated block of docs/reliability.md."""
    doc = DOC.read_text("utf-8")
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{BEGIN}\n{text}{END}{tail}", "utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=10000, help="inputs per frontend")
    p.add_argument("--frontends", default=",".join(fe.FRONTENDS))
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--train-cap", type=int, default=None,
                   help="training runs per frontend (default: per-frontend caps)")
    p.add_argument("--train-caps", default="",
                   help="per-frontend training caps, e.g. spec=600,kyn=200 (over --train-cap)")
    p.add_argument("--write-doc", action="store_true", help="update docs/reliability.md")
    p.add_argument("--bugs", help="write every bug's reproducer to this JSON file")
    p.add_argument("--check-timeout", type=float, default=fe.CHECK_TIMEOUT,
                   help="seconds a validation case may take before it is a timeout")
    p.add_argument("--previous", help="a log of an earlier run: its frontend result lines "
                   "(`NAME: {json}`) join this run's table")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    env = dict(os.environ)
    env["FRAME_CACHE_DIR"] = tempfile.mkdtemp(prefix="frame-fuzz-cache-")
    env.pop("FRAME_NO_CACHE", None)
    pool = Pool(env)
    bugs: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    fe.CHECK_TIMEOUT = args.check_timeout
    previous_minutes = 0.0
    if args.previous:
        for line in Path(args.previous).read_text("utf-8").splitlines():
            name, sep, rest = line.partition(": ")
            if sep and name in fe.FRONTENDS and rest.startswith("{"):
                results[name] = json.loads(rest)
                previous_minutes += results[name]["seconds"] / 60
    t0 = time.monotonic()
    try:
        for name in args.frontends.split(","):
            caps = dict(kv.split("=") for kv in args.train_caps.split(",") if kv)
            cap = int(caps[name]) if name in caps else \
                args.train_cap if args.train_cap is not None else DEFAULT_CAPS[name]
            results[name] = run_frontend(name, args.inputs, args.seed, cap, pool, bugs,
                                         not args.quiet)
            print(f"{name}: {json.dumps(results[name])}", flush=True)
    finally:
        pool.close()
    meta = {"date": time.strftime("%Y-%m-%d"), "seed": args.seed, "inputs": args.inputs,
            "minutes": (time.monotonic() - t0) / 60 + previous_minutes,
            "command": "tests/fuzz/campaign.py " + " ".join(argv if argv is not None
                                                           else sys.argv[1:])}
    text = render(results, meta)
    print(text)
    if args.write_doc:
        write_doc(text)
    if args.bugs:
        Path(args.bugs).write_text(json.dumps(bugs, indent=1), "utf-8")
    return 1 if any(b["known"] is None for b in bugs) else 0


if __name__ == "__main__":
    sys.exit(main())
