"""A whole native run of a `.kyn` module: data, compile, train, evaluate, export, and the
run manifest (what `frame-kyn train` and each point of `frame-kyn sweep` do).

The same run goes as one rank of a data-parallel job (`job`, `frame-kyn train P
--data-parallel` under mpirun): every rank reads the data, compiles and trains its share
of every batch (`KynTrainer`), and rank 0 alone prints (the others' standard output is
/dev/null), writes files (manifest, export, checkpoints) and reads a checkpoint to
resume from, which it broadcasts. `--checkpoint-every N` checkpoints carry everything
the rest of the run depends on, so a resumed run prints the uninterrupted run's lines
and ends with its parameters, bit for bit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from frame_mlir.frontends.kyn.errors import KynCodegenError, KynDiagnostic
from frame_mlir.frontends.kyn.module import KynModule
from frame_mlir.frontends.kyn.trainer import KynTrainer, TrainReport, check_supported

if TYPE_CHECKING:
    from frame_mlir.runtime.checkpoint import Checkpoint
    from frame_mlir.runtime.distributed import Job

__all__ = ["RunResult", "load_data", "run_description", "run_module"]


@dataclass
class RunResult:
    report: TrainReport
    manifest: dict[str, Any]
    manifest_path: str
    export_path: str | None
    trainer: KynTrainer


def load_data(module: KynModule) -> dict[str, Any]:
    """The trained dataset, encoded and split (csvload), checked against the model's
    input width; a data file that is not a regular file is KynCodegenError IO-001, CSV
    problems KYN-C01, a width mismatch KYN-C02."""
    from frame_mlir.fileio import NotRegularFileError, check_regular_file
    from frame_mlir.frontends.kyn.csvload import CsvDataError, load_csv_dataset

    d = module.dataset
    seed = module.train.seed if module.train.seed is not None else 0
    try:  # a device or FIFO, IO-001, before the loader opens it
        check_regular_file(d.resolved)
    except NotRegularFileError as e:
        raise KynCodegenError([KynDiagnostic.at(
            "IO-001", "codegen", f"dataset '{d.name}': {d.resolved}: {e.strerror}",
            module.source_path, d.loc)]) from None
    except OSError:
        pass  # missing or unreadable: the loader's KYN-C01 says so
    try:
        data = load_csv_dataset(d.resolved, d.target, d.split, d.normalize, seed, module.task)
    except CsvDataError as e:
        raise KynCodegenError([KynDiagnostic.at(
            "KYN-C01", "codegen", f"dataset '{d.name}': {e}", module.source_path, d.loc)]
        ) from None
    width = data["x_train"].shape[1]
    model = module.model
    if width != model.input_size:
        names = ", ".join(data["feature_names"][:12]) + (", ..." if width > 12 else "")
        raise KynCodegenError([KynDiagnostic.at(
            "KYN-C02", "codegen", f"model '{model.name}' declares input {model.input_size}, "
            f"but dataset '{d.name}' encodes to {width} feature columns ({names})",
            module.source_path, model.layers[0].loc)])
    return data


#: Keys of the resolved module that do not change what a run computes.
_NOT_THE_RUN = frozenset({"loc", "source_path", "source_text", "warnings", "path",
                          "resolved"})


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _NOT_THE_RUN}
    if isinstance(value, list | tuple):
        return [_strip(v) for v in value]
    return value


def run_description(module: KynModule) -> dict[str, Any]:
    """What makes two runs the same run, so that a checkpoint of one resumes the other:
    the resolved program (every value after `--param` and `--seed`; not its text, so
    comments and layout do not count, nor where the files are) and the data's
    contents. The rank count is not part of it: the parameters are whole on every
    rank, so a checkpoint resumes on any count (bit for bit on the count that wrote
    it)."""
    from frame_mlir.frontends.kyn.repro import data_hash

    return {"module": _strip(dataclasses.asdict(module)),
            "data": data_hash(module.dataset.resolved)}


def run_module(module: KynModule, out_dir: str | Path = ".", *, seed: int | None = None,
               stdout: TextIO | None = None, stderr: TextIO | None = None,
               options: Any = None, cache: Any = None, after_pass: Any = None,
               quiet: bool = False, manifest_name: str = "run_manifest.json",
               target: str = "cpu", job: Job | None = None,
               checkpoint: str | None = None, every: int | None = None,
               resume: str | None = None) -> RunResult:
    """Train `module` natively and write its manifest (and export) under `out_dir`;
    `target` "cuda" (or "cuda-emulator") runs the steps' kernels on the GPU.

    `job`: run as one rank of that data-parallel job (rank 0 prints and writes).
    `every`: write a checkpoint to `checkpoint` after every `every`-th epoch;
    `resume`: continue the run saved in that checkpoint (CKPT-002 unless it is a
    checkpoint of this very run, `run_description`)."""
    from frame_mlir.frontends.kyn.export import export_model
    from frame_mlir.frontends.kyn.repro import (
        config_hash,
        data_hash,
        env_info,
        version,
        write_json_atomic,
    )
    from frame_mlir.runtime.checkpoint import digest
    from frame_mlir.runtime.executable import ENV_CACHE
    from frame_mlir.runtime.progress import progress
    from frame_mlir.runtime.training import read_checkpoint

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    if seed is not None:  # --seed stands for train.seed everywhere: split, shuffle,
        # initialisation and dropout (as the emitted script's --seed does)
        module = dataclasses.replace(module, train=dataclasses.replace(module.train,
                                                                       seed=seed))
        seed = None
    check_supported(module)
    out_dir = Path(out_dir)
    root = job is None or job.rank == 0
    run_id = digest(run_description(module))
    if job is not None:  # every rank must run the same job (DP-003), checked first
        job.check_same("program and options", {"run": run_id, "resume": resume,
                                                "checkpoint": checkpoint, "every": every})
        # the rank's share of the machine's cores; the plain pipeline (the gradient
        # functions return gradients: the kyn optimizers are functions of their own)
        options = dataclasses.replace(job.compile_options(options), data_parallel=None)
    loaded: tuple[Checkpoint, str] | None = None
    if resume is not None:  # before the compile: a wrong file fails at once. Rank 0
        # reads it (the rank that writes them) and sends it to the others.
        loaded = (read_checkpoint(resume, module.model.name, run_id, job), resume)
    data = load_data(module)
    trainer = KynTrainer(module, len(data["x_train"]), len(data["x_test"]), seed=seed,
                         options=options,
                         # None: the environment's cache; False (--no-cache): none
                         cache=ENV_CACHE if cache is None else (None if cache is False else cache),
                         after_pass=after_pass, target=target, job=job)
    if job is not None:  # every rank compiled and set up: the steps start together
        job.barrier("the start of training (every rank compiling its step)")

    def save(ck: Checkpoint) -> None:
        assert checkpoint is not None
        Path(checkpoint).parent.mkdir(parents=True, exist_ok=True)
        ck.save(checkpoint)

    stack = contextlib.ExitStack()
    epochs = module.train.epochs

    shown: list[Any] = []  # the progress bar now drawn, if any

    def bar(epoch: int, total: int) -> Callable[[], None]:
        stack.close()
        handle = stack.enter_context(progress(total, f"epoch {epoch + 1}/{epochs}", err,
                                              unit="batch"))
        shown[:] = [handle]
        return handle

    def on_epoch(epoch: int, loss: float, held: float | None) -> None:
        if not quiet:
            line = f"epoch {epoch + 1} loss {loss:.9g}"
            if held is not None:
                line += f" heldout_loss {held:.9g}"
            out.write(line + "\n")
            out.flush()

    def on_diverge(what: str) -> None:  # as frame-run warns
        if root:
            out.flush()
            line = f"frame-kyn: warning: training diverged: {what}\n"
            shown[0].write(line, err) if shown else err.write(line)  # above a bar
            err.flush()

    try:
        report = trainer.fit(data, progress=bar if root else None, on_epoch=on_epoch,
                             out_dir=out_dir, resume=loaded, every=every,
                             on_checkpoint=save if checkpoint is not None else None,
                             run_id=run_id, on_diverge=on_diverge)
    finally:
        stack.close()
    for name, value in report.metrics.items():
        out.write(f"metric {name} {value:.9g}\n")
    if report.stopped_early and root:
        err.write(f"frame-kyn: early stop after epoch {report.epochs_run} (no held-out "
                  f"improvement for {module.train.early_stop} epochs)\n")
    export_path = None
    if module.export is not None and root:
        base = str(out_dir)
        export_path = export_model(module.export, module.model, trainer.state_dict(), base,
                                   source=module.source_path)
        out.write(f"export {module.export.format} {export_path}\n")
    t = module.train
    v = version()
    manifest = {
        "kynml_version": v,
        "config_hash": config_hash(module.source_text),
        "data_hash": data_hash(module.dataset.resolved),
        "env": env_info(),
        "seed": t.seed if seed is None else seed,
        "metrics": report.metrics,
        "frame_mlir_version": v,
        "backend": "native",
        "params": module.params,
        "epochs_run": report.epochs_run,
        "steps": report.steps,
        "final_loss": report.epoch_losses[-1] if report.epoch_losses else None,
        "compile_seconds": round(report.compile_seconds, 6),
        "train_seconds": round(report.train_seconds, 6),
    }
    path = out_dir / manifest_name
    if root:
        write_json_atomic(path, manifest)  # KynML's fields first, then ours
    out.write(f"manifest {path}\n")
    return RunResult(report, manifest, str(path), export_path, trainer)
