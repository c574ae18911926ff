"""A whole native run of a `.kyn` module: data, compile, train, evaluate, export, and the
run manifest (what `frame-kyn train` and each point of `frame-kyn sweep` do)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from frame_mlir.kyn.errors import KynCodegenError, KynDiagnostic
from frame_mlir.kyn.module import KynModule
from frame_mlir.kyn.trainer import KynTrainer, TrainReport, check_supported

__all__ = ["RunResult", "load_data", "run_module"]


@dataclass
class RunResult:
    report: TrainReport
    manifest: dict[str, Any]
    manifest_path: str
    export_path: str | None
    trainer: KynTrainer


def load_data(module: KynModule) -> dict[str, Any]:
    """The trained dataset, encoded and split (csvload), checked against the model's
    input width; CSV problems are KynCodegenError KYN-C01, a width mismatch KYN-C02."""
    from frame_mlir.kyn.csvload import CsvDataError, load_csv_dataset

    d = module.dataset
    seed = module.train.seed if module.train.seed is not None else 0
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


def run_module(module: KynModule, out_dir: str | Path = ".", *, seed: int | None = None,
               stdout: TextIO | None = None, stderr: TextIO | None = None,
               options: Any = None, cache: Any = None, after_pass: Any = None,
               quiet: bool = False, manifest_name: str = "run_manifest.json",
               target: str = "cpu") -> RunResult:
    """Train `module` natively and write its manifest (and export) under `out_dir`;
    `target` "cuda" (or "cuda-emulator") runs the steps' kernels on the GPU."""
    from frame_mlir.kyn.export import export_model
    from frame_mlir.kyn.repro import (
        config_hash,
        data_hash,
        env_info,
        version,
        write_json_atomic,
    )
    from frame_mlir.runtime.executable import ENV_CACHE
    from frame_mlir.tools.progress import progress

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    if seed is not None:  # --seed stands for train.seed everywhere: split, shuffle,
        # initialisation and dropout (as the emitted script's --seed does)
        module = dataclasses.replace(module, train=dataclasses.replace(module.train,
                                                                       seed=seed))
        seed = None
    check_supported(module)
    out_dir = Path(out_dir)
    data = load_data(module)
    trainer = KynTrainer(module, len(data["x_train"]), len(data["x_test"]), seed=seed,
                         options=options, cache=ENV_CACHE if cache is None else cache,
                         after_pass=after_pass, target=target)
    stack = contextlib.ExitStack()
    epochs = module.train.epochs

    def bar(epoch: int, total: int) -> Callable[[], None]:
        stack.close()
        handle = stack.enter_context(progress(total, f"epoch {epoch + 1}/{epochs}", err,
                                              unit="batch"))
        return handle

    def on_epoch(epoch: int, loss: float, held: float | None) -> None:
        if not quiet:
            line = f"epoch {epoch + 1} loss {loss:.9g}"
            if held is not None:
                line += f" heldout_loss {held:.9g}"
            out.write(line + "\n")
            out.flush()

    try:
        report = trainer.fit(data, progress=bar, on_epoch=on_epoch, out_dir=out_dir)
    finally:
        stack.close()
    for name, value in report.metrics.items():
        out.write(f"metric {name} {value:.9g}\n")
    if report.stopped_early:
        err.write(f"frame-kyn: early stop after epoch {report.epochs_run} (no held-out "
                  f"improvement for {module.train.early_stop} epochs)\n")
    export_path = None
    if module.export is not None:
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
    write_json_atomic(path, manifest)  # KynML's fields first, then ours
    out.write(f"manifest {path}\n")
    return RunResult(report, manifest, str(path), export_path, trainer)
