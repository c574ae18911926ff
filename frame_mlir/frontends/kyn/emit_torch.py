"""The PyTorch backend of `.kyn`: a `KynModule` as a self-contained training script.

`emit_pytorch(module)` returns the text of a Python script that imports only torch,
numpy and the standard library (never frame_mlir) and trains the program's model the way
KynML's PyTorch backend does: data, model, loss, optimizer, scheduler, the epoch loop
with early stopping and checkpoints, evaluation, export and `run_manifest.json`. The
CSV connector is `frame_mlir/frontends/kyn/csvload.py` itself, embedded verbatim as a string and
executed into a private module at run time, so the script reads, encodes, splits and
normalises the data exactly as the native trainer does; that makes the script both
KynML's user-facing backend and an independent oracle of frame-mlir's native training.

Imported as a module, the script exposes its pieces (`build_model`, `load_data`,
`make_loss`, `make_optimizer`, `make_scheduler`, `train_step`, `fit`, `evaluate`, ...)
for tests; run as a program it trains (`--epochs`, `--seed`, `--threads`, `--out-dir`,
`--quiet`). `model_class_source(model)` is just the imports and the `KynModel` class;
`load_model_class(model)` executes it as a module whose source TorchScript can find.

Everything is decided here, at emission time, from the resolved module: the generated
functions are specialised (`make_optimizer` *is* a `torch.optim.Adam(...)` call with the
module's arguments), and the configuration the loop needs sits in constants at the top.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import linecache
import math
import os
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

from frame_mlir.frontends.kyn.module import KynModule, LayerSpec, ModelSpec

__all__ = ["emit_pytorch", "emitter_version", "load_model_class", "model_class_source",
           "write_pytorch"]

_CSVLOAD = Path(__file__).with_name("csvload.py")

#: optimizer name -> torch.optim class
_OPTIMIZERS = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop"}

#: loss name -> nn class (bce is chosen by the final activation)
_LOSSES = {"mse": "nn.MSELoss()", "huber": "nn.HuberLoss(delta=1.0)", "l1": "nn.L1Loss()",
           "mae": "nn.L1Loss()", "cross_entropy": "nn.CrossEntropyLoss()",
           "nll": "nn.NLLLoss()"}

_REGRESSION_METRICS = ("mae", "mse", "rmse")


def emitter_version() -> str:
    """The `kynml_version` the scripts record: "frame-mlir-emit <installed version>"."""
    try:
        version = importlib.metadata.version("frame-mlir")
    except importlib.metadata.PackageNotFoundError:
        version = "0.0.0"
    return f"frame-mlir-emit {version}"


# --------------------------------------------------------------------------- helpers


def _lit(value: Any) -> str:
    """`value` as a Python literal (lists and tuples as tuples, e.g. Adam's betas)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"float({str(value)!r})"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a valid Python literal too
    if isinstance(value, (list, tuple)):
        items = ", ".join(_lit(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    raise TypeError(f"cannot write {value!r} as a Python literal")


def _kwargs(args: dict[str, Any]) -> list[str]:
    return [f"{k}={_lit(v)}" for k, v in args.items()]


def _wrap_call(indent: str, head: str, items: list[str], width: int = 96) -> str:
    """`head(item, item, ...)` at `indent`, continuation lines aligned after the
    parenthesis, each line at most `width` columns where the items allow."""
    one = f"{indent}{head}({', '.join(items)})"
    if len(one) <= width or not items:
        return one
    cont = " " * (len(indent) + len(head) + 1)
    lines: list[str] = []
    cur = f"{indent}{head}("
    if len(cont) > 40:  # a hanging indent instead
        lines.append(cur)
        cont = indent + " " * 4
        cur = cont
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else ")")
        if cur.strip() and not cur.endswith("(") and len(cur + piece.rstrip()) > width:
            lines.append(cur.rstrip())
            cur = cont + piece
        else:
            cur += piece
    lines.append(cur)
    return "\n".join(lines)


def _one_line(text: str) -> str:
    """`text` made safe for a `#` comment."""
    return " ".join(str(text).split())


def _string_literal(text: str) -> str:
    """A Python literal for `text`: a readable raw triple-quoted string when that
    round-trips exactly, else repr."""
    for quote in ("'''", '"""'):
        candidate = f"r{quote}{text}{quote}"
        if quote in text or text.endswith((quote[0], "\\")):
            continue
        try:
            if ast.literal_eval(candidate) == text:
                return candidate
        except (SyntaxError, ValueError):
            continue
    return repr(text)


def _describe_layer(layer: LayerSpec) -> str:
    if layer.kind == "input":
        return f"input {layer.out_features}"
    if layer.kind == "dense":
        return f"dense {layer.out_features} {layer.activation or 'linear'}"
    if layer.kind == "dropout":
        return f"dropout {layer.rate!r}"
    if layer.kind == "batchnorm":
        return f"batchnorm {layer.out_features}"
    raise ValueError(f"unknown layer kind {layer.kind!r}")


def _activation(name: str, h: str) -> str:
    """The functional form of activation `name` applied to expression `h`."""
    forms = {
        "linear": "{}",
        "relu": "F.relu({})",
        "sigmoid": "torch.sigmoid({})",
        "tanh": "torch.tanh({})",
        "leaky_relu": "F.leaky_relu({}, negative_slope=0.01)",
        "gelu": "F.gelu({})",  # exact (erf) form, PyTorch's default
        "softmax": "F.softmax({}, dim=1)",
        "log_softmax": "F.log_softmax({}, dim=1)",
    }
    if name not in forms:
        raise ValueError(f"unknown activation {name!r}")
    return forms[name].format(h)


# ------------------------------------------------------------------------ the model


def _model_class(model: ModelSpec) -> str:
    """The `KynModel` class (no imports): one `nn.ModuleList` `layers`, one module per
    layer after `input`, activations applied functionally in `forward`."""
    if not model.layers or model.layers[0].kind != "input":
        raise ValueError(f"model {model.name}: the first layer must be the input layer")
    chain = " -> ".join(_describe_layer(x) for x in model.layers)
    modules: list[str] = []
    steps: list[str] = []
    for j, layer in enumerate(model.layers[1:]):
        what = _describe_layer(layer)
        if layer.kind == "dense":
            modules.append(f"nn.Linear({layer.in_features}, {layer.out_features}),"
                           f"  # layers.{j}: {what}")
            steps.append(f"x = {_activation(layer.activation or 'linear', f'self.layers[{j}](x)')}")
        elif layer.kind == "dropout":
            modules.append(f"nn.Dropout(p={layer.rate!r}),  # layers.{j}: {what}")
            steps.append(f"x = self.layers[{j}](x)")
        elif layer.kind == "batchnorm":
            modules.append(f"nn.BatchNorm1d({layer.in_features}, eps={layer.eps!r}, "
                           f"momentum={layer.momentum!r}),  # layers.{j}: {what}")
            steps.append(f"x = self.layers[{j}](x)")
        else:
            raise ValueError(f"model {model.name}: unexpected layer kind {layer.kind!r} "
                             f"after the input layer")
    body = "\n".join(f"            {m}" for m in modules)
    forward = "\n".join(f"        {s}" for s in steps)
    return (
        "class KynModel(nn.Module):\n"
        f'    """Model {model.name}: {chain}.\n'
        "\n"
        "    Layer j after `input` is `self.layers[j]`, so the state_dict keys are\n"
        "    `layers.<j>.weight`, `layers.<j>.bias` (and a batchnorm's running statistics);\n"
        '    activations are applied functionally in `forward`."""\n'
        "\n"
        "    def __init__(self) -> None:\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleList([\n"
        f"{body}\n"
        "        ])\n"
        "\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        f"{forward}\n"
        "        return x\n"
    )


def model_class_source(model: ModelSpec) -> str:
    """The imports and the `KynModel` class of `model`: a module on its own that
    defines exactly the emitted script's model (for TorchScript export)."""
    cls = _model_class(model)
    imports = ["import torch"]
    if "F." in cls:
        imports.append("import torch.nn.functional as F")
    imports.append("from torch import nn")
    return "\n".join(imports) + "\n\n\n" + cls


def load_model_class(model: ModelSpec) -> type:
    """`model_class_source(model)` executed as a real module and its `KynModel` class
    returned (imports torch). The source is registered with `linecache` and the module
    in `sys.modules`, so `inspect.getsource` -- and thus `torch.jit.script` -- works on
    the class, which it does not for source merely `exec`ed into a dict."""
    src = model_class_source(model)
    digest = hashlib.sha256(src.encode("utf-8")).hexdigest()[:16]
    name = f"kyn_model_{digest}"
    cached = sys.modules.get(name)
    if cached is not None:
        return cached.KynModel
    filename = f"<kyn model {model.name} {digest}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    module = types.ModuleType(name, f"KynModel of model {model.name}")
    module.__file__ = filename
    sys.modules[name] = module
    try:
        exec(compile(src, filename, "exec"), module.__dict__)  # noqa: S102 -- our source
    except BaseException:
        del sys.modules[name]
        raise
    return module.KynModel


# ------------------------------------------------------------- specialised functions


def _bce_logits(module: KynModule) -> bool:
    """True when bce acts on logits (final linear), False on probabilities (sigmoid)."""
    final = module.model.final_activation
    if final == "sigmoid":
        return False
    if final == "linear":
        return True
    raise ValueError(f"loss 'bce' needs a final sigmoid or linear activation, "
                     f"not {final!r}")


def _make_loss(module: KynModule) -> str:
    loss = module.train.loss
    if loss == "bce":
        if _bce_logits(module):
            expr, note = "nn.BCEWithLogitsLoss()", "bce on logits (final linear)"
        else:
            expr, note = "nn.BCELoss()", "bce on probabilities (final sigmoid)"
    elif loss in _LOSSES:
        expr, note = _LOSSES[loss], loss
    else:
        raise ValueError(f"unknown loss {loss!r}")
    return (
        "def make_loss() -> nn.Module:\n"
        f'    """The loss `{loss}` ({note}); the batch mean."""\n'
        f"    return {expr}\n"
    )


def _make_optimizer(module: KynModule) -> str:
    opt = module.train.optimizer
    if opt.name not in _OPTIMIZERS:
        raise ValueError(f"unknown optimizer {opt.name!r}")
    call = _wrap_call("    ", f"return torch.optim.{_OPTIMIZERS[opt.name]}",
                      ["model.parameters()", *_kwargs(opt.args)])
    return (
        "def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:\n"
        f'    """The optimizer `{opt.name}` with the program\'s arguments."""\n'
        f"{call}\n"
    )


def _make_scheduler(module: KynModule) -> tuple[str, bool]:
    """The `make_scheduler` source and whether the scheduler steps per batch."""
    head = ("def make_scheduler(opt: torch.optim.Optimizer, steps_per_epoch: int,\n"
            "                   epochs: int = EPOCHS):\n")
    sched = module.train.scheduler
    if sched is None:
        return head + '    """No scheduler in the train block: None."""\n', False
    args = dict(sched.args)
    lrs = "return torch.optim.lr_scheduler"
    if sched.name == "step":
        call = _wrap_call("    ", f"{lrs}.StepLR", ["opt", *_kwargs(args)])
        when, per_batch = "once per epoch", False
    elif sched.name == "cosine":
        t_max = args.pop("T_max", None)
        t_max_src = "epochs" if t_max is None else _lit(t_max)
        call = _wrap_call("    ", f"{lrs}.CosineAnnealingLR",
                          ["opt", f"T_max={t_max_src}", *_kwargs(args)])
        when, per_batch = "once per epoch", False
    elif sched.name == "onecycle":
        for derived in ("total_steps", "epochs", "steps_per_epoch"):
            args.pop(derived, None)
        max_lr = args.pop("max_lr")
        call = _wrap_call("    ", f"{lrs}.OneCycleLR",
                          ["opt", f"max_lr={_lit(max_lr)}",
                           "total_steps=epochs * steps_per_epoch", *_kwargs(args)])
        when, per_batch = "once per batch", True
    else:
        raise ValueError(f"unknown scheduler {sched.name!r}")
    return (head + f'    """The scheduler `{sched.name}`, stepped {when}."""\n'
            f"{call}\n"), per_batch


def _train_step(module: KynModule) -> str:
    precision = module.train.precision
    if precision == "fp32":
        forward = "    out = model(x)\n"
        note = "fp32"
    elif precision in ("bf16", "fp16"):
        forward = ("    with torch.autocast(device_type=x.device.type, dtype=AMP_DTYPE):\n"
                   "        out = model(x)\n")
        note = f"{precision} autocast; the loss is taken in fp32"
    else:
        raise ValueError(f"unknown precision {precision!r}")
    return (
        "def train_step(model: nn.Module, opt: torch.optim.Optimizer, loss_fn: nn.Module,\n"
        "               x: torch.Tensor, y: torch.Tensor, scaler=None) -> float:\n"
        f'    """One step on the batch `x`, `y` ({note}):\n'
        '    zero_grad, forward, loss, backward, step. Returns the batch loss."""\n'
        "    model.train()\n"
        "    opt.zero_grad(set_to_none=True)\n"
        f"{forward}"
        "    loss = loss_fn(out.float(), y)\n"
        "    if scaler is not None:  # fp16 on CUDA\n"
        "        scaler.scale(loss).backward()\n"
        "        scaler.step(opt)\n"
        "        scaler.update()\n"
        "    else:\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "    return float(loss.detach())\n"
    )


def _evaluate(module: KynModule) -> str:
    metrics = module.evaluate.metrics if module.evaluate is not None else ()
    task = module.task
    head = (
        "def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict:\n"
        f'    """The evaluate block\'s metrics ({", ".join(metrics) or "none"}) on the rows '
        '`x`, `y`\n'
        '    in eval mode (dropout off, batchnorm on running statistics)."""\n'
    )
    if not metrics:
        return head + "    return {}\n"
    # `pred` is what mae/mse/rmse compare with the targets
    if task == "regression":
        pred = "out"
        accuracy = "math.nan  # accuracy is not defined for a regression loss"
    elif task == "binary":
        logits = _bce_logits(module)
        pred = "torch.sigmoid(out)" if logits else "out"
        accuracy = ("((out >= 0).float() == y).sum().item() / len(y)  # logits"
                    if logits else
                    "((out >= 0.5).float() == y).sum().item() / len(y)  # probabilities")
    else:
        pred = None
        accuracy = "(out.argmax(dim=1) == y).sum().item() / len(y)"
    lines: list[str] = []
    need_err = pred is not None and any(m in _REGRESSION_METRICS for m in metrics)
    if need_err:
        lines.append(f"err = {pred}.double() - y.double()  # metrics in float64")
    for m in metrics:
        if m in _REGRESSION_METRICS and pred is None:
            lines.append(f'metrics["{m}"] = math.nan  # not defined for class labels')
        elif m == "mae":
            lines.append('metrics["mae"] = float(err.abs().mean())')
        elif m == "mse":
            lines.append('metrics["mse"] = float(err.pow(2).mean())')
        elif m == "rmse":
            lines.append('metrics["rmse"] = math.sqrt(float(err.pow(2).mean()))')
        elif m == "accuracy":
            lines.append(f'metrics["accuracy"] = {accuracy}')
        else:
            raise ValueError(f"unknown metric {m!r}")
    uses_out = any("out" in line.split("#")[0] for line in lines)
    body = [
        "device = next(model.parameters()).device",
        "x, y = x.to(device), y.to(device)",
        "if len(x) == 0:",
        "    return {name: math.nan for name in METRICS}",
    ]
    if uses_out:
        body += ["model.eval()", "with torch.no_grad():", "    out = model(x).float()"]
    body += ["metrics = {}"] + lines + ["return metrics"]
    return head + "".join(f"    {line}\n" for line in body)


def _export(module: KynModule) -> str:
    spec = module.export
    head = "def export_model(model: nn.Module, out_dir: str = \".\") -> str | None:\n"
    if spec is None:
        return head + '    """No export block: nothing is saved."""\n    return None\n'
    doc = {
        "torch": "the state_dict (torch.save), loadable into KynModel",
        "torchscript": "a TorchScript module (torch.jit.script)",
        "onnx": f"an ONNX inference graph (opset {spec.opset}, input shape "
                f"{list(spec.input_shape or ())})",
        "npz": "every parameter and buffer by name (numpy.savez)",
    }
    if spec.format not in doc:
        raise ValueError(f"unknown export format {spec.format!r}")
    lines = [
        f'"""Export the trained model as {doc[spec.format]}',
        'to EXPORT_PATH (a relative path is taken against `out_dir`); returns the path."""',
        "path = EXPORT_PATH if os.path.isabs(EXPORT_PATH) else os.path.join(out_dir, "
        "EXPORT_PATH)",
        "path = os.path.normpath(path)",
        "os.makedirs(os.path.dirname(path) or \".\", exist_ok=True)",
        "model = model.cpu().eval()",
    ]
    if spec.format == "torch":
        lines.append("torch.save(model.state_dict(), path)")
    elif spec.format == "torchscript":
        lines += [
            "with warnings.catch_warnings():  # torch.jit.script is deprecated upstream",
            '    warnings.simplefilter("ignore", DeprecationWarning)',
            "    torch.jit.script(model).save(path)",
        ]
    elif spec.format == "onnx":
        if spec.input_shape is None:
            raise ValueError("export: onnx export requires input_shape")
        lines += [
            "with warnings.catch_warnings():",
            '    warnings.simplefilter("ignore", DeprecationWarning)',
            "    # the TorchScript-based exporter: the dynamo one needs onnxscript",
            "    torch.onnx.export(model, (torch.zeros(*EXPORT_INPUT_SHAPE),), path,",
            "                      opset_version=EXPORT_OPSET, input_names=[\"input\"],",
            "                      output_names=[\"output\"], dynamo=False)",
        ]
    else:  # npz
        lines += [
            "arrays = {k: v.detach().numpy() for k, v in model.state_dict().items()}",
            'with open(path, "wb") as f:  # an open file: savez would append ".npz"',
            "    np.savez(f, **arrays)",
        ]
    lines.append("return path")
    return head + "".join(f"    {line}\n" for line in lines)


# ------------------------------------------------------------------ the fixed parts

_RUNTIME = '''
def select_device(name: str = DEVICE) -> torch.device:
    """`auto` is CUDA when available, else the CPU."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def set_seed(seed: int, deterministic: bool = DETERMINISTIC) -> None:
    """Seed random, numpy, torch and torch.cuda; optionally deterministic algorithms."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


def build_model() -> KynModel:
    """A freshly initialised model (PyTorch's initialisation, from torch's RNG)."""
    return KynModel()


def load_data(seed: int = 0) -> dict:
    """Read DATA_PATH with the embedded connector (frame_mlir/frontends/kyn/csvload.py): encoded,
    split by a `numpy.random.RandomState(seed)` permutation and, if NORMALIZE, z-scored.
    Returns its dict: x_train, y_train, x_test, y_test (numpy), feature_names, classes,
    n_rows."""
    return _csvload().load_csv_dataset(DATA_PATH, TARGET, SPLIT, NORMALIZE, seed, TASK)


def to_tensors(data: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """x_train, y_train, x_test, y_test as tensors: features float32 [n, f]; targets
    int64 [n] (classification) or float32 [n, 1] (regression, bce)."""

    def target(y: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(y))
        return t.long().reshape(-1) if TASK == "classification" else t.float().reshape(-1, 1)

    return (torch.from_numpy(np.ascontiguousarray(data["x_train"], dtype=np.float32)),
            target(data["y_train"]),
            torch.from_numpy(np.ascontiguousarray(data["x_test"], dtype=np.float32)),
            target(data["y_test"]))


def make_loader(x: torch.Tensor, y: torch.Tensor, seed: int = 0,
                device: torch.device | None = None) -> DataLoader:
    """The training DataLoader: BATCH rows per step, the last smaller batch kept,
    shuffled with a generator seeded by `seed` when SHUFFLE."""
    options = {"num_workers": NUM_WORKERS,
               "pin_memory": PIN_MEMORY and device is not None and device.type == "cuda"}
    if NUM_WORKERS > 0:
        options["persistent_workers"] = True
        if PREFETCH is not None:
            options["prefetch_factor"] = PREFETCH
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=SHUFFLE,
                      drop_last=False, generator=generator, **options)


def held_out_loss(model: nn.Module, loss_fn: nn.Module, x: torch.Tensor,
                  y: torch.Tensor) -> float:
    """The mean loss over the held-out rows in eval mode (fp32)."""
    if len(x) == 0:
        return math.nan
    model.eval()
    with torch.no_grad():
        return float(loss_fn(model(x).float(), y))


def save_checkpoint(model: nn.Module, opt: torch.optim.Optimizer, epoch: int,
                    out_dir: str = ".") -> str:
    """Write {'model': state_dict, 'optimizer': state_dict} atomically to
    <out_dir>/CHECKPOINT_DIR/<MODEL_NAME>_epoch<epoch>.pt; returns the path."""
    folder = CHECKPOINT_DIR if os.path.isabs(CHECKPOINT_DIR) else os.path.join(
        out_dir, CHECKPOINT_DIR)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{MODEL_NAME}_epoch{epoch}.pt")
    state = {"model": getattr(model, "_orig_mod", model).state_dict(),
             "optimizer": opt.state_dict()}
    fd, tmp = tempfile.mkstemp(prefix=f".{MODEL_NAME}_epoch{epoch}.", suffix=".tmp",
                               dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def fit(model: nn.Module, opt: torch.optim.Optimizer, loss_fn: nn.Module,
        loader: DataLoader, x_test: torch.Tensor, y_test: torch.Tensor, *,
        scheduler=None, epochs: int = EPOCHS, out_dir: str = ".", quiet: bool = False,
        scaler=None) -> dict:
    """The epoch loop: train on every batch of `loader` (a per-batch scheduler steps
    after each batch, a per-epoch one after each epoch), score the held-out rows, log,
    checkpoint every CHECKPOINT_EVERY epochs and stop early after EARLY_STOP_PATIENCE
    epochs without an improvement of the held-out loss by more than
    EARLY_STOP_MIN_DELTA. Returns epochs_run, train_seconds (the loop alone) and the
    per-epoch history."""
    device = x_test.device
    history = []
    best = math.inf
    bad_epochs = 0
    epochs_run = 0
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        total, seen = 0.0, 0
        for xb, yb in loader:
            xb = xb.to(device, non_blocking=True)
            yb = yb.to(device, non_blocking=True)
            loss = train_step(model, opt, loss_fn, xb, yb, scaler=scaler)
            if scheduler is not None and SCHEDULER_PER_BATCH:
                scheduler.step()
            total += loss * len(xb)
            seen += len(xb)
        if scheduler is not None and not SCHEDULER_PER_BATCH:
            scheduler.step()
        train_loss = total / max(seen, 1)
        val_loss = held_out_loss(model, loss_fn, x_test, y_test)
        epochs_run = epoch
        history.append({"epoch": epoch, "train_loss": train_loss, "held_out_loss": val_loss})
        if not quiet:
            print(f"epoch {epoch}/{epochs}  train_loss {train_loss:.6f}  "
                  f"held_out_loss {val_loss:.6f}", flush=True)
        if CHECKPOINT_EVERY is not None and epoch % CHECKPOINT_EVERY == 0:
            save_checkpoint(model, opt, epoch, out_dir)
        if EARLY_STOP_PATIENCE is not None:
            if val_loss < best - EARLY_STOP_MIN_DELTA:
                best, bad_epochs = val_loss, 0
            else:
                bad_epochs += 1
                if bad_epochs >= EARLY_STOP_PATIENCE:
                    if not quiet:
                        print(f"early stop after epoch {epoch}: no improvement of the "
                              f"held-out loss in {bad_epochs} epochs", flush=True)
                    break
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {"epochs_run": epochs_run, "train_seconds": seconds, "history": history}
'''

_RUNTIME_TAIL = '''
def environment() -> dict:
    """The manifest's env: python (first token of sys.version), torch, numpy, platform."""
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "numpy": np.__version__, "platform": platform.platform()}


def _json_value(value):
    """Non-finite floats become null (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def write_manifest(manifest: dict, out_dir: str = ".") -> str:
    """Write <out_dir>/run_manifest.json atomically (a temporary file, then os.replace)."""
    path = os.path.join(out_dir, "run_manifest.json")
    fd, tmp = tempfile.mkstemp(prefix=".run_manifest.", suffix=".tmp", dir=out_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(_json_value(manifest), f, indent=2)
            f.write("\\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=f"Train model {MODEL_NAME} as {SOURCE_PATH} says (PyTorch).")
    parser.add_argument("--epochs", type=int, default=None,
                        help=f"number of epochs (default: {EPOCHS})")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"seed of the split, init, shuffling and dropout "
                             f"(default: {SEED if SEED is not None else 'unset, 0'})")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads")
    parser.add_argument("--out-dir", default=".",
                        help="folder of run_manifest.json, checkpoints and relative "
                             "export paths (default: .)")
    parser.add_argument("--quiet", action="store_true", help="no per-epoch log lines")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    epochs = args.epochs if args.epochs is not None else EPOCHS
    if epochs < 1:
        parser.error("--epochs must be at least 1")
    seed = args.seed if args.seed is not None else SEED
    run_seed = seed if seed is not None else 0
    out_dir = args.out_dir
    os.makedirs(out_dir, exist_ok=True)

    set_seed(run_seed)
    device = select_device()
    try:
        data = load_data(run_seed)
    except ValueError as e:  # the connector's CsvDataError
        print(f"error: {e}", file=sys.stderr)
        return 1
    x_train, y_train, x_test, y_test = to_tensors(data)
    if x_train.shape[1] != INPUT_SIZE:
        print(f"error: {DATA_PATH}: the encoded data has {x_train.shape[1]} feature "
              f"columns, but model {MODEL_NAME} has input {INPUT_SIZE}", file=sys.stderr)
        return 1
    model = build_model().to(device)
    loss_fn = make_loss()
    opt = make_optimizer(model)
    loader = make_loader(x_train, y_train, run_seed, device)
    scheduler = make_scheduler(opt, len(loader), epochs)
    scaler = (torch.amp.GradScaler("cuda") if PRECISION == "fp16" and device.type == "cuda"
              else None)
    train_model = torch.compile(model) if COMPILE else model
    x_test, y_test = x_test.to(device), y_test.to(device)

    result = fit(train_model, opt, loss_fn, loader, x_test, y_test, scheduler=scheduler,
                 epochs=epochs, out_dir=out_dir, quiet=args.quiet, scaler=scaler)
    metrics = evaluate(model, x_test, y_test)
    if not args.quiet and metrics:
        print("metrics: " + "  ".join(f"{k} {v:.6f}" for k, v in metrics.items()),
              flush=True)
    exported = export_model(model, out_dir)

    manifest = {
        "kynml_version": KYNML_VERSION,
        "config_hash": CONFIG_HASH,
        "data_hash": _csvload().file_sha256(DATA_PATH),
        "env": environment(),
        "seed": seed,
        "metrics": metrics,
        "backend": "pytorch",
        "device": device.type,
        "train_seconds": result["train_seconds"],
        "epochs_run": result["epochs_run"],
        "history": result["history"],
        "export": exported,
    }
    write_manifest(manifest, out_dir)
    return 0


# ---------------------------------------------------------------------------------
# The CSV connector: frame_mlir/frontends/kyn/csvload.py, verbatim. It runs as a private module
# so that this script reads the data exactly as frame-mlir's native trainer does.


def _csvload() -> types.ModuleType:
    """The embedded connector as a module (executed once, then cached in sys.modules)."""
    module = sys.modules.get(CSVLOAD_MODULE)
    if module is None:
        module = types.ModuleType(CSVLOAD_MODULE, "frame_mlir/frontends/kyn/csvload.py (embedded)")
        sys.modules[CSVLOAD_MODULE] = module
        try:
            code = compile(CSVLOAD_SOURCE, "<embedded csvload.py>", "exec")
            exec(code, module.__dict__)  # noqa: S102 -- our own embedded source
        except BaseException:
            del sys.modules[CSVLOAD_MODULE]
            raise
    return module

'''


def _csvload_source() -> str:
    try:
        return _CSVLOAD.read_text(encoding="utf-8")
    except OSError as e:
        raise RuntimeError(f"cannot read the CSV connector {_CSVLOAD}: {e}") from None


def emit_pytorch(module: KynModule) -> str:
    """The self-contained PyTorch training script of `module` (see the module docstring).

    Raises:
        ValueError: something validation should have rejected (an unknown name, bce
            after an activation other than sigmoid/linear, onnx without input_shape).
    """
    model, data, train = module.model, module.dataset, module.train
    config_hash = hashlib.sha256(module.source_text.encode("utf-8")).hexdigest()
    csv_source = _csvload_source()
    csv_hash = hashlib.sha256(csv_source.encode("utf-8")).hexdigest()
    version = emitter_version()
    source_name = Path(module.source_path).name or module.source_path

    cls = _model_class(model)
    scheduler_src, per_batch = _make_scheduler(module)
    setup = "\n\n".join([_make_loss(module), _make_optimizer(module), scheduler_src,
                          _train_step(module)])
    evaluation = "\n\n".join([_evaluate(module), _export(module)])
    functions = setup + evaluation

    amp = {"fp32": "None", "bf16": "torch.bfloat16", "fp16": "torch.float16"}
    if train.precision not in amp:
        raise ValueError(f"unknown precision {train.precision!r}")
    export = module.export
    metrics = module.evaluate.metrics if module.evaluate is not None else ()
    constants = [
        ("KYNML_VERSION", _lit(version), "the compiler that wrote this script"),
        ("CONFIG_HASH", _lit(config_hash), None),
        ("SOURCE_PATH", _lit(module.source_path), None),
        ("MODEL_NAME", _lit(model.name), None),
        ("INPUT_SIZE", _lit(model.input_size), "encoded feature columns the model takes"),
        ("DATASET_NAME", _lit(data.name), None),
        ("DATA_PATH", _lit(os.path.abspath(data.resolved)), f'source = csv("{data.path}")'),
        ("TARGET", _lit(data.target), None),
        ("SPLIT", _lit(float(data.split)), "fraction of the rows that train"),
        ("NORMALIZE", _lit(bool(data.normalize)), None),
        ("SHUFFLE", _lit(bool(data.shuffle)), None),
        ("NUM_WORKERS", _lit(int(data.num_workers)), None),
        ("PIN_MEMORY", _lit(bool(data.pin_memory)), None),
        ("PREFETCH", _lit(data.prefetch), "DataLoader prefetch_factor (with workers)"),
        ("TASK", _lit(module.task), f"loss = {train.loss}"),
        ("EPOCHS", _lit(train.epochs), None),
        ("BATCH", _lit(train.batch), None),
        ("SEED", _lit(train.seed), "None: unset (the run uses 0)"),
        ("DEVICE", _lit(train.device), None),
        ("PRECISION", _lit(train.precision), None),
        ("AMP_DTYPE", amp[train.precision], "autocast dtype; None: plain fp32"),
        ("COMPILE", _lit(bool(train.compile)), "torch.compile the model"),
        ("DETERMINISTIC", _lit(bool(train.deterministic)), None),
        ("SCHEDULER_PER_BATCH", _lit(per_batch), None),
        ("EARLY_STOP_PATIENCE", _lit(train.early_stop), "None: no early stopping"),
        ("EARLY_STOP_MIN_DELTA", _lit(float(getattr(train, "early_stop_min_delta", 0.0))),
         None),
        ("CHECKPOINT_EVERY", _lit(train.checkpoint), "None: no checkpoints"),
        ("CHECKPOINT_DIR", _lit(getattr(train, "checkpoint_dir", "checkpoints")),
         "relative to --out-dir"),
        ("METRICS", _lit(tuple(metrics)), None),
        ("EXPORT_FORMAT", _lit(export.format if export else None), None),
        ("EXPORT_PATH", _lit(export.path if export else None), "relative to --out-dir"),
        ("EXPORT_INPUT_SHAPE", _lit(tuple(export.input_shape)
                                    if export and export.input_shape else None), None),
        ("EXPORT_OPSET", _lit(export.opset if export else 17), None),
        ("CSVLOAD_MODULE", _lit(f"kyn_csvload_{csv_hash[:12]}"), None),
    ]
    const_src = "\n".join(f"{name} = {value}" + (f"  # {_one_line(note)}" if note else "")
                          for name, value, note in constants)

    uses_f = "F." in cls or "F." in functions
    third_party = ["import numpy as np", "import torch"]
    if uses_f:
        third_party.append("import torch.nn.functional as F")
    third_party += ["from torch import nn", "from torch.utils.data import DataLoader, "
                    "TensorDataset"]
    stdlib = ["argparse", "json", "math", "os", "platform", "random", "sys", "tempfile",
              "time", "types"]
    if export is not None and export.format in ("torchscript", "onnx"):
        stdlib.append("warnings")

    header = textwrap.dedent(f"""\
        # Generated by frame-kyn ({version}) from {_one_line(module.source_path)}.
        # Do not edit: regenerate it from the .kyn file with `frame-kyn compile`.
        # config hash: {config_hash}
        #
        # Model {_one_line(model.name)} on dataset {_one_line(data.name)}, loss \
{train.loss}, optimizer {train.optimizer.name}, {train.epochs} epochs of batch \
{train.batch}.
        # Run: python {{this file}} [--epochs N] [--seed N] [--threads N] [--out-dir DIR] \
[--quiet]
        """)
    docstring = (f'"""PyTorch training script for {_one_line(source_name)} '
                 f'(model {_one_line(model.name)}).\n\nImports only torch, numpy and the '
                 'standard library. Run it to train, evaluate,\nexport and write '
                 'run_manifest.json; import it to reuse its pieces."""\n')
    data_part, loop_part = _RUNTIME.split("\ndef held_out_loss", 1)
    parts = [
        "\n\n".join([header.strip("\n"), docstring.strip("\n"),
                    "\n".join(f"import {m}" for m in stdlib), "\n".join(third_party),
                    const_src]),
        cls,
        data_part,
        setup,
        "def held_out_loss" + loop_part,
        evaluation,
        _RUNTIME_TAIL,
    ]
    text = _tidy_blank_lines("\n\n\n".join(p.strip("\n") + "\n" for p in parts))
    embedded = _string_literal("\n" + csv_source)
    return (text + "\n\n# [1:] drops the newline after the opening quotes\n"
            f"CSVLOAD_SOURCE = {embedded}[1:]\n"
            '\n\nif __name__ == "__main__":\n    raise SystemExit(main())\n')


def _tidy_blank_lines(text: str) -> str:
    """Two blank lines before each top-level `def`, `class` and section comment, at most
    two between other top-level lines and one inside a body. Only safe on code whose
    strings hold no runs of blank lines: the embedded connector is appended after."""
    out: list[str] = []
    blank = 0
    for line in text.split("\n"):
        if not line.strip():
            blank += 1
            continue
        if out and blank:
            top = line.startswith(("def ", "class ", "# ---"))
            out.extend([""] * (2 if top else min(blank, 2 if not line[0].isspace() else 1)))
        blank = 0
        out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"


def write_pytorch(module: KynModule, out_path: str | Path) -> Path:
    """Write `emit_pytorch(module)` to `out_path` (parent folders created); returns it."""
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(emit_pytorch(module), encoding="utf-8")
    return path
