"""The `.kyn` frontend: native training beside its emitted PyTorch script, and validation.

Run:  python bench/bench_kyn.py [--seeds 0,1,...,9] [--only iris,wine] [--json FILE]
                                [--core N] [--no-cache] [--no-train] [--no-validate]
                                [--validate-runs 5] [--profile]

1. Quality and speed, per example of `testdata/kyn/` (diabetes, breast_cancer, iris,
   wine), every seed of `--seeds`, both sides in the same run:

   * native: `frame-kyn train PROGRAM --out-dir DIR --quiet --seed S` in a fresh
     process; `metrics`, `train_seconds` (the epoch loop alone) and `compile_seconds`
     come from its `run_manifest.json`. The compile cache is used as it is (warm or cold;
     `--no-cache` forces a cold compile), which moves compile seconds only.
   * PyTorch: the script `frame-kyn compile PROGRAM -o out.py` writes (once per example),
     run as `python out.py --seed S --threads 1 --out-dir DIR --quiet` in a fresh process;
     its `run_manifest.json` has `metrics` and `train_seconds` (the epoch loop alone).

   `--seed-in-program`: the native side trains a copy of the program with `seed = S`
   written into its `train` block (and `--seed S`). The emitted script's `--seed` seeds
   the data split as well as the initialisation, shuffling and dropout; when
   `frame-kyn train --seed` leaves the split on the program's `train.seed`, the sides
   score different held-out rows for every seed but the program's own, and only this
   mode compares like with like (with both honouring `--seed`, the two modes agree).

   Both sides run on one thread: OMP/MKL/OPENBLAS_NUM_THREADS=1 and FRAME_NUM_THREADS=1
   in the subprocess environment, and the process pinned to one core (`taskset -c N`, or
   the CPU affinity when taskset is absent; `--core`, default the first core available).
   Seeds alternate native, PyTorch, native, ... so drift hits both sides alike.

   Reported per example: the mean metric of each side over the seeds (classification:
   accuracy, its difference native - PyTorch in points; regression: RMSE, its difference
   relative to PyTorch's in %, MAE shown alongside), the mean train-loop seconds of each
   side, the speed ratio (PyTorch seconds / native seconds, from the means), the mean
   epochs run (early stopping can end the sides at different epochs) and the native
   compile seconds. Targets: accuracy within 1 point, RMSE within 3 %, native loop at
   least 3x faster.

2. Validation speed: a generated program (a main file of >= 200 lines: comments, params,
   a sweep, datasets, models, train, evaluate, export, importing a second file with
   several datasets and models) written to a temporary folder with the iris CSV, timed as
   `frame-kyn validate MAIN` from process start to exit (one untimed warm-up run, then
   `--validate-runs` timed runs; best and median). Target: under 0.5 s. When the median
   is over it (or with `--profile`) the run is repeated under `python -X importtime` and
   the most expensive imports are listed.

Machines are noisy: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = ROOT / "testdata" / "kyn"
EXAMPLES = ("diabetes", "breast_cancer", "iris", "wine")

#: The targets: accuracy within this many points, RMSE within this relative %, and the
#: native training loop at least this many times faster than the emitted PyTorch one.
ACCURACY_POINTS = 1.0
RMSE_PERCENT = 3.0
SPEEDUP = 3.0
VALIDATE_SECONDS = 0.5

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "FRAME_NUM_THREADS")


# -- subprocess plumbing ---------------------------------------------------------------------

def frame_kyn() -> list[str]:
    """The `frame-kyn` console script beside this interpreter, else `python -m`."""
    script = Path(sys.executable).parent / "frame-kyn"
    if script.exists():
        return [str(script)]
    found = shutil.which("frame-kyn")
    return [found] if found else [sys.executable, "-m", "frame_mlir.tools.frame_kyn"]


def one_thread_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in THREAD_ENV:
        env[name] = "1"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


class Runner:
    """Runs commands on one core with the one-thread environment."""

    def __init__(self, core: int | None):
        self.env = one_thread_env()
        self.core = core
        self.taskset = shutil.which("taskset") if core is not None else None

    def describe(self) -> str:
        if self.core is None:
            return "not pinned"
        how = "taskset -c" if self.taskset else "sched_setaffinity"
        return f"pinned to core {self.core} ({how})"

    def run(self, argv: list[str], cwd: Path | None = None) -> tuple[float, str, str]:
        """Run `argv`; (wall seconds from start to exit, stdout, stderr). Fails loudly."""
        preexec = None
        if self.core is not None:
            if self.taskset:
                argv = [self.taskset, "-c", str(self.core), *argv]
            else:
                core = self.core

                def preexec() -> None:
                    os.sched_setaffinity(0, {core})
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=self.env, capture_output=True, text=True,
                              preexec_fn=preexec, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n"
                               f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        return wall, proc.stdout, proc.stderr


def read_manifest(out_dir: Path) -> dict[str, Any]:
    return json.loads((out_dir / "run_manifest.json").read_text())


# -- 1. quality and speed --------------------------------------------------------------------

@dataclass
class SideRun:
    seed: int
    metrics: dict[str, float]
    train_seconds: float
    epochs_run: int | None
    compile_seconds: float | None = None
    wall_seconds: float = 0.0


@dataclass
class ExampleResult:
    name: str
    task: str = ""  # "classification" | "regression"
    metric: str = ""  # the compared metric: accuracy | rmse
    emit_seconds: float = 0.0  # `frame-kyn compile` (write the PyTorch script), wall
    native: list[SideRun] = field(default_factory=list)
    torch: list[SideRun] = field(default_factory=list)

    def mean(self, side: str, key: str) -> float:
        runs = self.native if side == "native" else self.torch
        return statistics.fmean(r.metrics[key] for r in runs)

    def seconds(self, side: str) -> float:
        runs = self.native if side == "native" else self.torch
        return statistics.fmean(r.train_seconds for r in runs)

    def epochs(self, side: str) -> float | None:
        runs = self.native if side == "native" else self.torch
        known = [r.epochs_run for r in runs if r.epochs_run is not None]
        return statistics.fmean(known) if known else None

    @property
    def compile_seconds(self) -> float:
        return statistics.fmean(r.compile_seconds or 0.0 for r in self.native)

    @property
    def metric_diff(self) -> float:
        """Accuracy: native - PyTorch in points; RMSE: (native - PyTorch) / PyTorch in %."""
        ours, theirs = self.mean("native", self.metric), self.mean("torch", self.metric)
        if self.metric == "accuracy":
            return (ours - theirs) * 100.0
        return (ours - theirs) / theirs * 100.0

    @property
    def speedup(self) -> float:
        return self.seconds("torch") / self.seconds("native")

    @property
    def quality_ok(self) -> bool:
        limit = ACCURACY_POINTS if self.metric == "accuracy" else RMSE_PERCENT
        return abs(self.metric_diff) <= limit

    @property
    def speed_ok(self) -> bool:
        return self.speedup >= SPEEDUP


def side_run(seed: int, wall: float, manifest: dict[str, Any]) -> SideRun:
    return SideRun(seed=seed, metrics={k: float(v) for k, v in manifest["metrics"].items()},
                   train_seconds=float(manifest["train_seconds"]),
                   epochs_run=manifest.get("epochs_run"),
                   compile_seconds=manifest.get("compile_seconds"), wall_seconds=wall)


def with_seed(text: str, seed: int) -> str:
    """The program with `train.seed` set to `seed` (replaced, or added to `train:`)."""
    block = re.search(r"^train:[^\n]*\n((?:(?:    [^\n]*|[ \t]*)\n)*)", text, re.M)
    if block is None:
        raise ValueError("no train block")
    body = block.group(1)
    if re.search(r"^    seed\s*=", body, re.M):
        body = re.sub(r"^    seed\s*=[^\n#]*", f"    seed = {seed}", body, count=1,
                      flags=re.M)
    else:
        body = f"    seed = {seed}\n" + body
    return text[:block.start(1)] + body + text[block.end(1):]


def bench_example(name: str, seeds: list[int], runner: Runner, work: Path, no_cache: bool,
                  seed_in_program: bool, log: bool) -> ExampleResult:
    program = EXAMPLES_DIR / f"{name}.kyn"
    res = ExampleResult(name)
    folder = work / name
    folder.mkdir(parents=True)
    if seed_in_program:  # relative data paths resolve against the current directory
        (folder / "data").symlink_to(EXAMPLES_DIR / "data", target_is_directory=True)
    script = folder / f"{name}_torch.py"
    res.emit_seconds, _, _ = runner.run([*frame_kyn(), "compile", str(program), "-o",
                                         str(script)], cwd=folder)
    for seed in seeds:
        out = folder / f"native_seed{seed}"
        native_program = program
        if seed_in_program:
            native_program = folder / f"{name}_seed{seed}.kyn"
            native_program.write_text(with_seed(program.read_text(), seed))
        argv = [*frame_kyn(), "train", str(native_program), "--out-dir", str(out),
                "--quiet", "--seed", str(seed)]
        if no_cache:
            argv.append("--no-cache")
        wall, _, _ = runner.run(argv, cwd=folder)
        res.native.append(side_run(seed, wall, read_manifest(out)))
        out = folder / f"torch_seed{seed}"
        wall, _, _ = runner.run([sys.executable, str(script), "--seed", str(seed),
                                 "--threads", "1", "--out-dir", str(out), "--quiet"],
                                cwd=folder)
        res.torch.append(side_run(seed, wall, read_manifest(out)))
        if log:
            n, t = res.native[-1], res.torch[-1]
            print(f"  {name} seed {seed}: native {n.metrics} loop {n.train_seconds:.4f}s "
                  f"(compile {n.compile_seconds or 0:.2f}s) | torch {t.metrics} loop "
                  f"{t.train_seconds:.4f}s", file=sys.stderr, flush=True)
    metrics = res.native[0].metrics
    if "accuracy" in metrics:
        res.task, res.metric = "classification", "accuracy"
    elif "rmse" in metrics:
        res.task, res.metric = "regression", "rmse"
    else:
        raise RuntimeError(f"{name}: neither accuracy nor rmse in {sorted(metrics)}")
    return res


def fmt_metric(res: ExampleResult, side: str) -> str:
    if res.metric == "accuracy":
        return f"{res.mean(side, 'accuracy') * 100:.2f} %"
    text = f"{res.mean(side, 'rmse'):.3f}"
    if "mae" in (res.native if side == "native" else res.torch)[0].metrics:
        text += f" (MAE {res.mean(side, 'mae'):.3f})"
    return text


def fmt_epochs(res: ExampleResult) -> str:
    a, b = res.epochs("native"), res.epochs("torch")
    if a is None or b is None:
        return "-"
    return f"{a:g}" if a == b else f"{a:.4g} / {b:.4g}"


def print_quality_table(results: list[ExampleResult], seeds: list[int]) -> None:
    print(f"\n### Native vs emitted PyTorch, 1 thread, seeds {','.join(map(str, seeds))} "
          "(means)\n")
    print("| example | metric | native | PyTorch | diff | loop s native | loop s PyTorch "
          "| speedup (PT/native) | epochs (n / PT) | compile s | quality | speed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        unit = "pt" if r.metric == "accuracy" else "%"
        print(f"| {r.name} | {r.metric} | {fmt_metric(r, 'native')} | "
              f"{fmt_metric(r, 'torch')} | {r.metric_diff:+.2f} {unit} | "
              f"{r.seconds('native'):.4f} | {r.seconds('torch'):.4f} | "
              f"{r.speedup:.1f}x | {fmt_epochs(r)} | {r.compile_seconds:.2f} | "
              f"{'ok' if r.quality_ok else 'MISS'} | {'ok' if r.speed_ok else 'MISS'} |")
    print(f"\nTargets: accuracy within {ACCURACY_POINTS:g} point (|native - PyTorch|), "
          f"RMSE within {RMSE_PERCENT:g} % (relative to PyTorch), native training loop "
          f">= {SPEEDUP:g}x faster (PyTorch loop s / native loop s). 'compile s' is the "
          "native steps' compile, outside the loop (the compile cache as found; a hit "
          "skips only the LLVM compile, the xDSL pipeline always runs).")
    worst_q = [r.name for r in results if not r.quality_ok]
    worst_s = [r.name for r in results if not r.speed_ok]
    print(f"Quality target: {'met' if not worst_q else 'missed by ' + ', '.join(worst_q)}; "
          f"speed target: {'met' if not worst_s else 'missed by ' + ', '.join(worst_s)}.")


# -- 2. validation speed ---------------------------------------------------------------------

LIB_HEADER = """\
# Shared building blocks for the generated validation benchmark: several datasets over the
# iris measurements and a family of MLPs. Only `dataset` and `model` blocks merge into an
# importing program.
"""


def lib_source(n_datasets: int = 4, n_models: int = 6) -> str:
    parts = [LIB_HEADER]
    for i in range(n_datasets):
        parts.append(f"""
# Iris variant {i}: a different held-out fraction and preprocessing.
dataset IrisLib{i}:
    source = csv("data/iris.csv")
    target = "species"
    split = {0.6 + 0.05 * i:.2f}
    normalize = {"true" if i % 2 == 0 else "false"}
    shuffle = true
""")
    for i in range(n_models):
        act = ("relu", "tanh", "gelu", "sigmoid", "leaky_relu", "relu")[i % 6]
        width = 8 * (i + 1)
        parts.append(f"""
# MLP {i}: {width} hidden {act} units.
model LibNet{i}:
    input 4
    dense {width} {act}
    dense {width // 2} relu
    dense 3 linear
""")
    return "".join(parts)


MAIN_HEAD = """\
# Generated by bench/bench_kyn.py: a realistic, long `.kyn` program for timing
# `frame-kyn validate` from process start to exit. It imports a library of datasets and
# models, declares parameters and a sweep over them, defines its own datasets and
# models, and trains one of them.
#
# The data is Fisher's iris table (150 flowers, 4 measurements), copied next to it.

import "lib.kyn"  # IrisLib0..3, LibNet0..5

# -- parameters -----------------------------------------------------------------------
params:
    width = 32  # hidden units of the first layer
    width2 = 16  # hidden units of the second layer
    drop = 0.1  # dropout probability
    lr = 0.01  # Adam's learning rate
    wd = 0.0001  # weight decay
    epochs = 40
    batch = 16

# The sweep trains every combination (first axis slowest).
sweep:
    width = [16, 32, 64]
    lr = [0.01, 0.003]
"""

MAIN_TAIL = """
# -- training -------------------------------------------------------------------------
train:
    model = MainNet
    data = IrisMain
    loss = cross_entropy  # logits in, class labels out
    optimizer = adamw(lr=$lr, weight_decay=$wd)
    epochs = $epochs
    batch = $batch
    scheduler = cosine(T_max=40)
    early_stop = early_stop(patience=8)
    seed = 7

# -- evaluation -----------------------------------------------------------------------
evaluate:
    metrics = [accuracy]

# -- export ---------------------------------------------------------------------------
export:
    format = npz
    path = "models/main.npz"
"""


def main_source(min_lines: int = 200) -> str:
    parts = [MAIN_HEAD, """
# -- the trained dataset and model ----------------------------------------------------
dataset IrisMain:
    source = csv("data/iris.csv")
    target = "species"
    split = 0.75
    normalize = true

model MainNet:
    input 4
    dense $width relu
    batchnorm
    dropout $drop
    dense $width2 relu
    dense 3 linear
"""]
    i = 0

    def length() -> int:
        return sum(p.count("\n") for p in parts) + MAIN_TAIL.count("\n")

    while length() < min_lines:
        act = ("relu", "tanh", "gelu", "leaky_relu")[i % 4]
        parts.append(f"""
# Alternative {i}: a dataset variant and a {act} model (kept for experiments).
dataset IrisAlt{i}:
    source = csv("data/iris.csv")
    target = "species"
    split = {0.7 + 0.01 * (i % 20):.2f}
    normalize = true

model AltNet{i}:
    input 4
    dense {16 + 4 * i} {act}
    dropout 0.1
    dense 8 relu
    dense 3 linear
""")
        i += 1
    parts.append(MAIN_TAIL)
    return "".join(parts)


@dataclass
class ValidateResult:
    main_lines: int
    lib_lines: int
    runs_s: list[float]
    best_s: float
    median_s: float
    stdout: str
    importtime: list[dict[str, Any]] = field(default_factory=list)
    importtime_total_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.median_s < VALIDATE_SECONDS


def write_validate_program(folder: Path) -> Path:
    (folder / "data").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES_DIR / "data" / "iris.csv", folder / "data" / "iris.csv")
    (folder / "lib.kyn").write_text(lib_source())
    main = folder / "main.kyn"
    main.write_text(main_source())
    return main


IMPORTTIME = re.compile(r"import time:\s+(\d+)\s*\|\s*(\d+)\s*\|(\s*)(\S+)")


def parse_importtime(stderr: str) -> tuple[list[dict[str, Any]], float]:
    """`-X importtime` lines as {module, self_ms, cumulative_ms, depth}; and the total (the
    sum of the top-level cumulative times) in seconds."""
    rows = []
    for line in stderr.splitlines():
        m = IMPORTTIME.match(line)
        if m:
            depth = (len(m.group(3)) - 1) // 2
            rows.append({"module": m.group(4), "self_ms": int(m.group(1)) / 1e3,
                         "cumulative_ms": int(m.group(2)) / 1e3, "depth": depth})
    total = sum(r["cumulative_ms"] for r in rows if r["depth"] == 0) / 1e3
    return rows, total


def bench_validate(runner: Runner, work: Path, runs: int, profile: bool) -> ValidateResult:
    folder = work / "validate"
    main = write_validate_program(folder)
    argv = [*frame_kyn(), "validate", str(main)]
    _, out, err = runner.run(argv, cwd=folder)  # warm-up: .pyc files, page cache
    times = [runner.run(argv, cwd=folder)[0] for _ in range(runs)]
    res = ValidateResult(main_lines=main.read_text().count("\n"),
                         lib_lines=(folder / "lib.kyn").read_text().count("\n"),
                         runs_s=times, best_s=min(times), median_s=statistics.median(times),
                         stdout=(out.strip() + ("\n" + err.strip() if err.strip() else "")))
    if profile or not res.ok:
        _, _, err = runner.run([sys.executable, "-X", "importtime", "-m",
                                "frame_mlir.tools.frame_kyn", "validate", str(main)], cwd=folder)
        rows, total = parse_importtime(err)
        res.importtime, res.importtime_total_s = rows, total
    return res


def print_validate(res: ValidateResult, top: int) -> None:
    print("\n### `frame-kyn validate`, process start to exit\n")
    print(f"Program: main.kyn {res.main_lines} lines, importing lib.kyn "
          f"({res.lib_lines} lines). Output: {res.stdout}")
    print("\n| runs | best s | median s | target s | result |")
    print("|---|---|---|---|---|")
    print(f"| {len(res.runs_s)} | {res.best_s:.3f} | {res.median_s:.3f} | "
          f"< {VALIDATE_SECONDS:g} | {'ok' if res.ok else 'MISS'} |")
    if not res.importtime:
        return
    print(f"\n`python -X importtime -m frame_mlir.tools.frame_kyn validate`: imports total "
          f"{res.importtime_total_s:.3f} s.\nTop-level imports by cumulative time:\n")
    print("| module | cumulative ms | self ms |")
    print("|---|---|---|")
    tops = sorted((r for r in res.importtime if r["depth"] == 0),
                  key=lambda r: -r["cumulative_ms"])
    for r in tops[:top]:
        print(f"| {r['module']} | {r['cumulative_ms']:.1f} | {r['self_ms']:.1f} |")
    print("\nAll imports by self time:\n")
    print("| module | self ms | cumulative ms | depth |")
    print("|---|---|---|---|")
    for r in sorted(res.importtime, key=lambda r: -r["self_ms"])[:top]:
        print(f"| {r['module']} | {r['self_ms']:.1f} | {r['cumulative_ms']:.1f} | "
              f"{r['depth']} |")


# -- main ------------------------------------------------------------------------------------

def parse_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def versions() -> str:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {platform.python_version()}"]
    for pkg in ("frame-mlir", "llvmlite", "torch", "numpy"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} absent")
    return ", ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4,5,6,7,8,9",
                    help="training seeds (default 0-9: the per-seed accuracy difference "
                    "varies by about a point on these small held-out splits, so a few "
                    "seeds measure noise)")
    ap.add_argument("--only", help=f"examples to run (default all: {','.join(EXAMPLES)})")
    ap.add_argument("--core", type=int, default=None,
                    help="the core both sides are pinned to (default: the first available)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin to a core")
    ap.add_argument("--no-cache", action="store_true",
                    help="native runs compile without the compile cache (cold compile s)")
    ap.add_argument("--seed-in-program", action="store_true",
                    help="native side: also write `seed = S` into a copy of the program, "
                    "so its data split follows the seed as the PyTorch script's does")
    ap.add_argument("--no-train", action="store_true", help="skip part 1 (training)")
    ap.add_argument("--no-validate", action="store_true", help="skip part 2 (validate)")
    ap.add_argument("--validate-runs", type=int, default=5, help="timed validate runs")
    ap.add_argument("--profile", action="store_true",
                    help="list validate's imports (-X importtime) even under the target")
    ap.add_argument("--top", type=int, default=15, help="import rows to list")
    ap.add_argument("--keep", metavar="DIR",
                    help="work in DIR and keep it (default: a temporary folder)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every run on stderr")
    args = ap.parse_args()

    seeds = [int(s) for s in parse_list(args.seeds)]
    names = parse_list(args.only) if args.only else list(EXAMPLES)
    unknown = [n for n in names if not (EXAMPLES_DIR / f"{n}.kyn").exists()]
    if unknown:
        ap.error(f"unknown examples: {', '.join(unknown)} (have {', '.join(EXAMPLES)})")
    core = None
    if not args.no_pin:
        core = args.core if args.core is not None else min(os.sched_getaffinity(0))
    runner = Runner(core)

    print(f"# bench_kyn: {versions()}")
    print(f"# 1 thread ({', '.join(f'{n}=1' for n in THREAD_ENV)}), {runner.describe()}; "
          f"frame-kyn = {' '.join(frame_kyn())}")

    if args.keep:
        work = Path(args.keep).resolve()
        work.mkdir(parents=True, exist_ok=True)
        cleanup = None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="bench_kyn_")
        work = Path(cleanup.name)
    report: dict[str, Any] = {"versions": versions(), "seeds": seeds,
                              "pinning": runner.describe(),
                              "seed_in_program": args.seed_in_program}
    try:
        if not args.no_train:
            results = []
            for name in names:
                t0 = time.perf_counter()
                results.append(bench_example(name, seeds, runner, work, args.no_cache,
                                             args.seed_in_program, args.verbose))
                print(f"# {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr,
                      flush=True)
            print_quality_table(results, seeds)
            report["examples"] = [
                {**asdict(r), "mean_native": r.mean("native", r.metric),
                 "mean_torch": r.mean("torch", r.metric), "diff": r.metric_diff,
                 "diff_unit": "points" if r.metric == "accuracy" else "percent",
                 "loop_s_native": r.seconds("native"), "loop_s_torch": r.seconds("torch"),
                 "speedup": r.speedup, "compile_s": r.compile_seconds,
                 "quality_ok": r.quality_ok, "speed_ok": r.speed_ok} for r in results]
        if not args.no_validate:
            vres = bench_validate(runner, work, args.validate_runs, args.profile)
            print_validate(vres, args.top)
            report["validate"] = {**asdict(vres), "ok": vres.ok,
                                  "target_s": VALIDATE_SECONDS}
    finally:
        if cleanup is not None:
            cleanup.cleanup()
    report["targets"] = {"accuracy_points": ACCURACY_POINTS, "rmse_percent": RMSE_PERCENT,
                         "speedup": SPEEDUP, "validate_s": VALIDATE_SECONDS}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
