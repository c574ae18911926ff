"""Shape inference and the resolved module (KynML's `ir/infer.py` + `_reconcile_train`).

Each model's width is threaded through its layers: `input N` gives [batch, N], `dense`
reads the incoming width as its `in_features`, `batchnorm` takes it as its feature count
(an explicit size that disagrees is KYN-H03), `dropout` keeps it. Then the train block's
loss is reconciled with the trained model's output (KYN-H04) and the export's
`input_shape` with its input (KYN-H05). Warnings: a final softmax/log_softmax under
cross_entropy (KYN-W01), a final activation other than log_softmax under nll (KYN-W02).
Every shape diagnostic points at the layer or key concerned.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from frame_mlir.fileio import NotRegularFileError, check_regular_file
from frame_mlir.frontends.kyn.ast import Loc, Program
from frame_mlir.frontends.kyn.errors import KynDiagnostic
from frame_mlir.frontends.kyn.module import (
    DatasetSpec,
    EvaluateSpec,
    ExportSpec,
    KynModule,
    LayerSpec,
    ModelSpec,
    OptimizerSpec,
    SchedulerSpec,
    TrainSpec,
)
from frame_mlir.frontends.kyn.validate import BAD, Checked
from frame_mlir.frontends.kyn.vocab import MAX_STEPS

__all__ = ["build_module", "check_rows", "infer_models", "one_row_batches",
           "resolve_data_path", "train_key_loc"]

_diag = KynDiagnostic.at


def infer_models(checked: Checked, program: Program, diags: list[KynDiagnostic]
                 ) -> dict[str, ModelSpec]:
    """Every model whose layers all passed validation, with widths inferred."""
    models: dict[str, ModelSpec] = {}
    origin = {m.name: (m.origin or program.file) for m in program.models}
    for name, layers in checked.models.items():
        file = origin.get(name, program.file)
        if not layers or any(k == "bad" for k, _, _ in layers) or layers[0][0] != "input" \
                or sum(k == "input" for k, _, _ in layers) != 1 \
                or not any(k == "dense" for k, _, _ in layers):
            continue
        width = 0
        out: list[LayerSpec] = []
        ok = True
        for kind, args, loc in layers:
            if kind == "input":
                width = args["size"]
                out.append(LayerSpec("input", width, width, loc=loc))
            elif kind == "dense":
                out.append(LayerSpec("dense", width, args["units"], args["activation"],
                                     loc=loc))
                width = args["units"]
            elif kind == "dropout":
                out.append(LayerSpec("dropout", width, width, rate=args["rate"], loc=loc))
            else:
                f = args["features"]
                if f is not None and f != width:
                    diags.append(_diag("KYN-H03", "shape", f"[model {name}]: batchnorm size "
                                       f"{f} does not match incoming feature dim {width}",
                                       file, loc))
                    ok = False
                out.append(LayerSpec("batchnorm", width, width, loc=loc))
        if ok:
            m_loc = checked.locs.get(f"model:{name}", Loc(0, 0, 0, 0))
            models[name] = ModelSpec(name, tuple(out), m_loc)
    return models


def origin_file(program: Program, dataset: str, main: str) -> str:
    """The file (as diagnostics name it) that defines `dataset`."""
    return next((d.origin for d in program.datasets if d.name == dataset and d.origin),
                main)


def one_row_batches(model: str, line: int, why: str, fix: str, file: str, loc: Loc | None
                    ) -> KynDiagnostic:
    """KYN-H06: a batchnorm layer trained on a batch of one row, where its batch
    statistics are undefined (PyTorch refuses it too: `expected more than 1 value per
    channel when training`). At validate time for `batch = 1`, once the row count is
    known for a last batch of one row (`trainer.check_rows`)."""
    return _diag("KYN-H06", "shape", f"[train]: {why}, but the batchnorm layer of model "
                 f"'{model}' (line {line}) needs more than one row per batch in training; "
                 f"{fix}", file, loc)


def train_key_loc(module: KynModule, key: str) -> Loc | None:
    """Where `key = ...` of the train block is written (the module keeps no place for
    the train block's keys; the train block is always in the main file)."""
    in_train = False
    for i, line in enumerate(module.source_text.splitlines(), 1):
        if line[:1] not in ("", " ", "\t", "#"):
            in_train = line.split("#")[0].strip() == "train:"
            continue
        m = re.match(rf"\s+({re.escape(key)})\s*=", line)
        if in_train and m:
            return Loc(i, m.start(1) + 1, i, m.end(1) + 1)
    return None


def check_rows(module: KynModule, n_train: int, n_rows: int) -> list[KynDiagnostic]:
    """What the row count decides, for `n_train` training rows out of the data's
    `n_rows`: KYN-H06 for a batchnorm layer trained on a last batch of one row (or a
    training split of one row), KYN-S06 for more than MAX_STEPS optimizer steps, or for
    a onecycle schedule whose warm-up phase is empty over the run's steps. At
    validate time when the data file can be read (`pipeline.data_diagnostics`), and by
    the trainer before it compiles; each error points at the train key to change."""
    t, d, file = module.train, module.dataset, module.source_path
    if n_train < 1:
        return []
    batch = min(t.batch, n_train)
    rows = f"the training split of dataset '{d.name}' has {n_train} row" \
        f"{'s' if n_train != 1 else ''} (split {d.split:g} of {n_rows})"
    out = []
    bn = [x for x in module.model.layers if x.kind == "batchnorm"]
    if bn and batch == 1 and t.batch > 1:
        out.append(one_row_batches(module.model.name, bn[0].loc.line, f"{rows}, so every "
                                   "batch has one row", "use more rows or a larger split",
                                   file, train_key_loc(module, "batch")))
    elif bn and n_train % batch == 1:
        better = next((b for k in range(1, batch) for b in (batch - k, batch + k)
                       if 2 <= b <= n_train and n_train % b != 1), None)
        fix = "use another batch size or split" if better is None else \
            f"use a batch size that leaves more than one row over, such as batch = {better}"
        out.append(one_row_batches(module.model.name, bn[0].loc.line, f"{rows}, so batch "
                                   f"= {t.batch} leaves a last batch of one row in every "
                                   "epoch", fix, file, train_key_loc(module, "batch")))
    per_epoch = math.ceil(n_train / batch)
    total = t.epochs * per_epoch
    s = t.scheduler
    if s is not None and s.name == "onecycle" and float(s.args["pct_start"] * total) == 1.0:
        out.append(_diag("KYN-S06", "semantic", f"[train]: onecycle(pct_start="
                         f"{s.args['pct_start']:g}) over {total} steps ({t.epochs} epochs of "
                         f"{per_epoch} batches) leaves an empty warm-up phase (pct_start x "
                         "total_steps = 1, where PyTorch's OneCycleLR divides by zero); use "
                         "another pct_start", file, train_key_loc(module, "scheduler")))
    if total > MAX_STEPS:
        out.append(_diag("KYN-S06", "semantic", f"[train]: epochs = {t.epochs} of "
                         f"{per_epoch} batches each (batch = {t.batch}, the training split "
                         f"of dataset '{d.name}') is {t.epochs * per_epoch} steps; at most "
                         f"{MAX_STEPS} steps (fewer epochs or a larger batch)", file,
                         train_key_loc(module, "epochs")))
    return out


def layer_shapes(models: dict[str, ModelSpec], batch: int | None) -> dict[int, str]:
    """Source line -> `kind: [b, in] -> [b, out]` (hover text of the language server)."""
    b = str(batch) if batch else "batch"
    out: dict[int, str] = {}
    for m in models.values():
        for layer in m.layers:
            head = layer.kind
            if layer.kind == "dense":
                head = f"dense {layer.out_features} {layer.activation}"
                shape = f"[{b}, {layer.in_features}] -> [{b}, {layer.out_features}]"
            elif layer.kind == "input":
                head = f"input {layer.out_features}"
                shape = f"[{b}, {layer.out_features}]"
            else:
                if layer.kind == "dropout":
                    head = f"dropout {layer.rate:g}"
                shape = f"[{b}, {layer.in_features}] -> [{b}, {layer.out_features}]"
            if layer.loc.line:
                out[layer.loc.line] = f"{head}: {shape} float32 (model {m.name})"
    return out


def resolve_data_path(path: str, kyn_files: list[str]) -> str:
    """The CSV a `csv("path")` names: against the current directory, then each `.kyn`
    file's directory (the defining file's first); the last candidate when none exists."""
    p = Path(path)
    if p.is_absolute():
        return str(p)
    candidates = [Path.cwd() / p] + [Path(f).resolve().parent / p for f in kyn_files if f
                                      and not f.startswith("<")]
    for c in candidates:
        if c.is_file():
            return str(c.resolve())
    return str(candidates[-1].resolve()) if len(candidates) > 1 else str(candidates[0])


def build_module(program: Program, checked: Checked, text: str, path: str | None,
                 diags: list[KynDiagnostic], params: dict[str, Any] | None = None
                 ) -> tuple[KynModule | None, dict[str, ModelSpec]]:
    """Shape inference and reconciliation; the module when there is no error at all."""
    models = infer_models(checked, program, diags)
    t = checked.train
    file = program.file
    main_dir_file = path or program.file
    if t is not None and t.get("model") in models and t.get("loss") not in (None, BAD):
        model = models[t["model"]]
        loss = t["loss"]
        units = model.output_units
        final = model.final_activation
        last_dense = [x for x in model.layers if x.kind == "dense"][-1]
        loss_loc = checked.locs.get("train.loss")
        if loss == "bce":
            if units != 1:
                diags.append(_diag("KYN-H04", "shape", f"[train]: loss 'bce' expects a final "
                                   f"dense layer with 1 output unit (got {units})", file,
                                   loss_loc))
            elif final not in ("sigmoid", "linear"):
                diags.append(_diag("KYN-H04", "shape", f"[train]: loss 'bce' expects a final "
                                   f"sigmoid (probabilities) or linear (logits) activation, "
                                   f"found {final}", file, loss_loc))
        elif loss in ("cross_entropy", "nll"):
            if units < 2:
                diags.append(_diag("KYN-H04", "shape", f"[train]: loss '{loss}' expects a "
                                   f"final dense layer with at least 2 output units (got "
                                   f"{units})", file, loss_loc))
            elif loss == "cross_entropy" and final in ("softmax", "log_softmax"):
                diags.append(_diag("KYN-W01", "warn", f"[train]: the final {final} of model "
                                   f"'{model.name}' feeds loss 'cross_entropy', which applies "
                                   f"log_softmax itself; use a final linear layer", file,
                                   last_dense.loc))
            elif loss == "nll" and final != "log_softmax":
                diags.append(_diag("KYN-W02", "warn", f"[train]: loss 'nll' expects "
                                   f"log-probabilities, but model '{model.name}' ends with "
                                   f"{final}; use a final log_softmax", file,
                                   last_dense.loc))
        elif units != 1:
            diags.append(_diag("KYN-H04", "shape", f"[train]: loss '{loss}' compares the "
                               f"output with the one target column, so it expects a final "
                               f"dense layer with 1 output unit (got {units})", file, loss_loc))
        bn = [x for x in model.layers if x.kind == "batchnorm"]
        if bn and t.get("batch") == 1:
            diags.append(one_row_batches(model.name, bn[0].loc.line, "batch = 1 gives "
                                         "batches of one row", "use batch >= 2", file,
                                         checked.locs.get("train.batch")))
        ev = checked.evaluate
        if ev is not None and isinstance(ev.get("metrics"), tuple):
            classify = loss in ("cross_entropy", "nll")
            for metric in ev["metrics"]:
                if (metric == "accuracy" and loss not in ("cross_entropy", "nll", "bce")) \
                        or (metric != "accuracy" and classify):
                    want = "accuracy" if classify else (
                        "mae, mse, rmse or accuracy" if loss == "bce" else "mae, mse or rmse")
                    diags.append(_diag("KYN-S15", "semantic", f"[evaluate]: metric "
                                       f"'{metric}' does not apply to loss '{loss}'; "
                                       f"expected {want}", file,
                                       checked.locs.get("evaluate.metrics")))
        ex = checked.export
        if ex is not None and isinstance(ex.get("input_shape"), tuple):
            shape = ex["input_shape"]
            if len(shape) != 2 or shape[1] != model.input_size:
                diags.append(_diag("KYN-H05", "shape", f"[export]: input_shape expects "
                                   f"[batch, {model.input_size}] for model '{model.name}', "
                                   f"found {list(shape)}", file,
                                   checked.locs.get("export.input_shape")))
    origins = {d.name: (d.origin or main_dir_file) for d in program.datasets}
    resolved = {}
    for name, d in checked.datasets.items():
        if d.get("source") in (None, BAD):
            continue
        src = d["source"][1]["path"]
        kyn_files = [origins.get(name, main_dir_file), main_dir_file]
        if path and origins.get(name) and not Path(origins[name]).is_absolute():
            kyn_files[0] = str(Path(path).resolve().parent / origins[name])
        resolved[name] = resolve_data_path(src, kyn_files)
        try:  # a device, FIFO or folder: never read (a missing file is train's KYN-C01)
            check_regular_file(resolved[name])
        except NotRegularFileError as e:
            diags.append(_diag("IO-001", "semantic", f"dataset '{name}': {src}: "
                               f"{e.strerror}", origin_file(program, name, file),
                               checked.locs.get(f"dataset:{name}.path")))
        except OSError:
            pass
    if any(d.kind != "warn" for d in diags) or t is None:
        return None, models
    datasets = {}
    for name, d in checked.datasets.items():
        src = d["source"][1]["path"]
        datasets[name] = DatasetSpec(
            name, src, resolved[name], d["target"], d["split"],
            d["normalize"], d["shuffle"], d["num_workers"], d["pin_memory"], d["prefetch"],
            checked.locs.get(f"dataset:{name}", Loc(0, 0, 0, 0)))
    opt_name, opt_args = t["optimizer"]
    if "betas" in opt_args:
        opt_args = {**opt_args, "betas": tuple(opt_args["betas"])}
    sched = None
    if t["scheduler"] is not None:
        s_name, s_args = t["scheduler"]
        if s_name == "cosine" and s_args.get("T_max") is None:
            s_args = {**s_args, "T_max": t["epochs"]}
        sched = SchedulerSpec(s_name, s_args)
    train = TrainSpec(
        model=t["model"], data=t["data"], loss=t["loss"],
        optimizer=OptimizerSpec(opt_name, dict(opt_args)), epochs=t["epochs"],
        batch=t["batch"], device=t["device"], scheduler=sched,
        early_stop=None if t["early_stop"] is None else t["early_stop"][1]["patience"],
        early_stop_min_delta=0.0 if t["early_stop"] is None
        else t["early_stop"][1]["min_delta"],
        checkpoint=None if t["checkpoint"] is None else t["checkpoint"][1]["every_n"],
        checkpoint_dir="checkpoints" if t["checkpoint"] is None
        else t["checkpoint"][1]["dir"],
        precision=t["precision"], compile=t["compile"], seed=t["seed"],
        deterministic=t["deterministic"])
    ev = checked.evaluate
    ex = checked.export
    module = KynModule(
        source_path=path or program.file, source_text=text, datasets=datasets,
        models=models, train=train,
        evaluate=EvaluateSpec(ev["metrics"]) if ev else None,
        export=ExportSpec(ex["format"], ex["path"], ex["input_shape"], ex["opset"])
        if ex else None,
        params=dict(params or {}),
        warnings=tuple(str(d) for d in diags if d.kind == "warn"))
    return module, models
