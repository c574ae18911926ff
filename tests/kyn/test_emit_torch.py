"""The PyTorch script emitter (frame_mlir/frontends/kyn/emit_torch.py).

Every test builds its `KynModule` directly (no parser, no native trainer), emits the
script, imports it as a module and checks its pieces against torch itself; one test runs
the script as a program in a subprocess.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import itertools
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from frame_mlir.frontends.kyn import emit_torch  # noqa: E402
from frame_mlir.frontends.kyn.module import (  # noqa: E402
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

CSVLOAD = Path(emit_torch.__file__).with_name("csvload.py")
ALLOWED_IMPORTS = {"argparse", "json", "math", "os", "platform", "random", "sys", "tempfile",
                   "time", "types", "warnings", "numpy", "torch"}
ADAM = OptimizerSpec("adam", {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8,
                              "weight_decay": 0.0})
ONECYCLE = SchedulerSpec("onecycle", {
    "max_lr": 0.1, "pct_start": 0.3, "div_factor": 25.0, "final_div_factor": 1e4,
    "anneal_strategy": "cos", "cycle_momentum": True, "base_momentum": 0.85,
    "max_momentum": 0.95, "three_phase": False})
_counter = itertools.count()


# ------------------------------------------------------------------------- helpers


def write_csv(path: Path, task: str, n: int = 40) -> Path:
    """A small deterministic CSV: numeric columns a, b and a text column c (one-hot:
    4 encoded features), target `y`."""
    rng = np.random.RandomState(7)
    a, b = rng.randn(n), rng.randn(n)
    c = rng.choice(["red", "blue"], size=n)
    if task == "regression":
        y = [f"{v:.6f}" for v in 2 * a - b + 0.5 * (c == "red") + 0.1 * rng.randn(n)]
    elif task == "binary":
        y = [str(int(v > 0)) for v in a + b]
    else:
        y = [["low", "mid", "high"][int(v)] for v in np.digitize(a, [-0.4, 0.4])]
    rows = ["a,b,c,y"] + [f"{a[i]:.6f},{b[i]:.6f},{c[i]},{y[i]}" for i in range(n)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def dense(i: int, o: int, act: str = "linear") -> LayerSpec:
    return LayerSpec("dense", i, o, activation=act)


def make_module(csv: Path, layers: list[LayerSpec], *, loss: str = "mse",
                optimizer: OptimizerSpec = ADAM, metrics: tuple[str, ...] = ("mae",),
                export: ExportSpec | None = None, source_text: str | None = None,
                **train) -> KynModule:
    first = layers[0].in_features
    model = ModelSpec("Net", (LayerSpec("input", first, first), *layers))
    text = source_text or f"# test program for {csv.name}\n"
    return KynModule(
        source_path=str(csv.with_name("prog.kyn")), source_text=text,
        datasets={"Data": DatasetSpec("Data", csv.name, str(csv.resolve()), "y",
                                      split=0.75)},
        models={"Net": model},
        train=TrainSpec("Net", "Data", loss, optimizer, **{"epochs": 3, "batch": 8,
                                                          "seed": 1, **train}),
        evaluate=EvaluateSpec(metrics) if metrics else None,
        export=export,
    )


def load_script(module: KynModule, path: Path):
    """Emit `module` to `path` and import it (registered in sys.modules, so that
    TorchScript can read its source)."""
    emit_torch.write_pytorch(module, path)
    name = f"kyn_emitted_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def ruff() -> str | None:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else shutil.which("ruff")


@pytest.fixture
def reg_csv(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "reg.csv", "regression")


@pytest.fixture
def cls_csv(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "cls.csv", "classification")


@pytest.fixture
def bin_csv(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "bin.csv", "binary")


# --------------------------------------------------------------------------- tests


def test_script_is_self_contained(tmp_path, reg_csv):
    module = make_module(reg_csv, [dense(4, 8, "relu"), dense(8, 1)])
    text = emit_torch.emit_pytorch(module)
    compile(text, "out.py", "exec")
    tree = ast.parse(text)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported <= ALLOWED_IMPORTS, imported - ALLOWED_IMPORTS
    assert "frame_mlir" not in imported
    digest = hashlib.sha256(module.source_text.encode("utf-8")).hexdigest()
    head = text.split("\n", 4)[:3]
    assert head[0].startswith("# Generated by frame-kyn") and "prog.kyn" in head[0]
    assert digest in head[2]

    mod = load_script(module, tmp_path / "out.py")
    assert mod.CONFIG_HASH == digest
    assert mod.KYNML_VERSION == emit_torch.emitter_version()
    assert mod.KYNML_VERSION.startswith("frame-mlir-emit ")
    assert mod.CSVLOAD_SOURCE == CSVLOAD.read_text(encoding="utf-8")  # verbatim
    assert mod.DATA_PATH == str(reg_csv.resolve())
    # the embedded loader is the native one: same arrays
    spec = importlib.util.spec_from_file_location("kyn_csvload_direct", CSVLOAD)
    direct = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(direct)
    want = direct.load_csv_dataset(str(reg_csv.resolve()), "y", 0.75, False, 5, "regression")
    got = mod.load_data(5)
    for key in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(got[key], want[key])
    assert got["feature_names"] == ["a", "b", "c_blue", "c_red"]
    x_tr, y_tr, x_te, y_te = mod.to_tensors(got)
    assert x_tr.dtype == torch.float32 and y_tr.dtype == torch.float32
    assert tuple(y_tr.shape) == (len(x_tr), 1)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.script
def test_state_dict_names_and_shapes(tmp_path, reg_csv):
    layers = [dense(4, 8, "relu"), LayerSpec("batchnorm", 8, 8, eps=1e-3, momentum=0.2),
              LayerSpec("dropout", 8, 8, rate=0.25), dense(8, 5, "tanh"), dense(5, 1)]
    module = make_module(reg_csv, layers)
    mod = load_script(module, tmp_path / "out.py")
    model = mod.build_model()
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert shapes == {
        "layers.0.weight": (8, 4), "layers.0.bias": (8,),
        "layers.1.weight": (8,), "layers.1.bias": (8,), "layers.1.running_mean": (8,),
        "layers.1.running_var": (8,), "layers.1.num_batches_tracked": (),
        "layers.3.weight": (5, 8), "layers.3.bias": (5,),
        "layers.4.weight": (1, 5), "layers.4.bias": (1,),
    }
    assert isinstance(model.layers, nn.ModuleList)
    kinds = [type(m) for m in model.layers]
    assert kinds == [nn.Linear, nn.BatchNorm1d, nn.Dropout, nn.Linear, nn.Linear]
    assert model.layers[1].eps == 1e-3 and model.layers[1].momentum == 0.2
    assert model.layers[2].p == 0.25

    # model_class_source: the same class on its own, and TorchScript can script it
    src = emit_torch.model_class_source(module.model)
    assert src.startswith("import torch\n")
    ns: dict = {}
    exec(compile(src, "<class>", "exec"), ns)
    other = ns["KynModel"]()
    other.load_state_dict(model.state_dict(), strict=True)
    cls = emit_torch.load_model_class(module.model)
    scripted = torch.jit.script(cls().eval())
    scripted.load_state_dict(model.state_dict())
    x = torch.randn(6, 4)
    model.eval()
    other.eval()
    torch.testing.assert_close(other(x), model(x))
    torch.testing.assert_close(scripted(x), model(x))


@pytest.mark.parametrize("act,ref", [
    ("relu", torch.relu),
    ("sigmoid", torch.sigmoid),
    ("tanh", torch.tanh),
    ("linear", lambda h: h),
    ("leaky_relu", nn.LeakyReLU(0.01)),
    ("gelu", nn.GELU(approximate="none")),
    ("softmax", nn.Softmax(dim=1)),
    ("log_softmax", nn.LogSoftmax(dim=1)),
])
def test_activations(tmp_path, reg_csv, act, ref):
    module = make_module(reg_csv, [dense(4, 3, act), dense(3, 1)])
    model = load_script(module, tmp_path / "out.py").build_model().eval()
    x = torch.randn(5, 4) * 3
    want = model.layers[1](ref(model.layers[0](x)))
    torch.testing.assert_close(model(x), want)


@pytest.mark.parametrize("loss,final,units,want", [
    ("mse", "linear", 1, nn.MSELoss),
    ("huber", "linear", 1, nn.HuberLoss),
    ("l1", "linear", 1, nn.L1Loss),
    ("mae", "linear", 1, nn.L1Loss),
    ("cross_entropy", "linear", 3, nn.CrossEntropyLoss),
    ("nll", "log_softmax", 3, nn.NLLLoss),
    ("bce", "sigmoid", 1, nn.BCELoss),
    ("bce", "linear", 1, nn.BCEWithLogitsLoss),
])
def test_losses(tmp_path, reg_csv, loss, final, units, want):
    module = make_module(reg_csv, [dense(4, units, final)], loss=loss)
    mod = load_script(module, tmp_path / "out.py")
    fn = mod.make_loss()
    assert type(fn) is want
    assert fn.reduction == "mean"
    if loss == "huber":
        assert fn.delta == 1.0
    assert mod.TASK == module.task


def test_bce_needs_sigmoid_or_linear(reg_csv):
    module = make_module(reg_csv, [dense(4, 1, "relu")], loss="bce")
    with pytest.raises(ValueError, match="bce"):
        emit_torch.emit_pytorch(module)


@pytest.mark.parametrize("name,cls,args", [
    ("sgd", torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "dampening": 0.1,
                              "weight_decay": 1e-4, "nesterov": False}),
    ("adam", torch.optim.Adam, {"lr": 0.002, "betas": (0.8, 0.99), "eps": 1e-7,
                                "weight_decay": 0.001}),
    ("adamw", torch.optim.AdamW, {"lr": 0.001, "betas": [0.9, 0.999], "eps": 1e-8,
                                  "weight_decay": 0.01}),
    ("rmsprop", torch.optim.RMSprop, {"lr": 0.01, "alpha": 0.95, "eps": 1e-8,
                                      "weight_decay": 0.0, "momentum": 0.5,
                                      "centered": True}),
])
def test_optimizers(tmp_path, reg_csv, name, cls, args):
    module = make_module(reg_csv, [dense(4, 1)], optimizer=OptimizerSpec(name, args))
    mod = load_script(module, tmp_path / "out.py")
    model = mod.build_model()
    opt = mod.make_optimizer(model)
    assert type(opt) is cls
    for key, value in args.items():
        got = opt.defaults[key]
        assert (tuple(got) == tuple(value)) if isinstance(value, (list, tuple)) else (
            got == value), key
    assert opt.param_groups[0]["params"] == list(model.parameters())


def test_schedulers(tmp_path, reg_csv):
    lrs = torch.optim.lr_scheduler
    cases = [
        (SchedulerSpec("step", {"step_size": 3, "gamma": 0.5}), lrs.StepLR, False,
         {"step_size": 3, "gamma": 0.5}),
        (SchedulerSpec("cosine", {"T_max": 7, "eta_min": 0.001}), lrs.CosineAnnealingLR,
         False, {"T_max": 7, "eta_min": 0.001}),
        (SchedulerSpec("cosine", {"T_max": None, "eta_min": 0.0}), lrs.CosineAnnealingLR,
         False, {"T_max": 3}),  # T_max defaults to epochs
        (ONECYCLE, lrs.OneCycleLR, True, {"total_steps": 3 * 5}),
    ]
    for i, (spec, cls, per_batch, attrs) in enumerate(cases):
        module = make_module(reg_csv, [dense(4, 1)], scheduler=spec)
        mod = load_script(module, tmp_path / f"out{i}.py")
        opt = mod.make_optimizer(mod.build_model())
        sched = mod.make_scheduler(opt, 5)
        assert type(sched) is cls
        assert mod.SCHEDULER_PER_BATCH is per_batch
        for key, value in attrs.items():
            assert getattr(sched, key) == value, (spec.name, key)
        if spec.name == "onecycle":
            assert opt.param_groups[0]["max_lr"] == 0.1
            assert opt.param_groups[0]["initial_lr"] == pytest.approx(0.1 / 25)
            # an --epochs override reaches total_steps
            assert mod.make_scheduler(mod.make_optimizer(mod.build_model()), 5,
                                      epochs=4).total_steps == 20
    module = make_module(reg_csv, [dense(4, 1)])
    mod = load_script(module, tmp_path / "none.py")
    assert mod.make_scheduler(mod.make_optimizer(mod.build_model()), 5) is None


def _fit(mod, epochs: int, out_dir: Path, scheduler: bool = True) -> tuple[dict, object]:
    torch.manual_seed(0)
    data = mod.load_data(1)
    x_tr, y_tr, x_te, y_te = mod.to_tensors(data)
    model = mod.build_model()
    opt = mod.make_optimizer(model)
    loader = mod.make_loader(x_tr, y_tr, 1)
    sched = mod.make_scheduler(opt, len(loader), epochs) if scheduler else None
    result = mod.fit(model, opt, mod.make_loss(), loader, x_te, y_te, scheduler=sched,
                     epochs=epochs, out_dir=str(out_dir), quiet=True)
    return result, sched


def test_onecycle_steps_per_batch_step_per_epoch(tmp_path, reg_csv):
    # 40 rows, split 0.75: 30 training rows, batch 8 -> 4 batches (the last one of 6)
    module = make_module(reg_csv, [dense(4, 1)], scheduler=ONECYCLE)
    mod = load_script(module, tmp_path / "one.py")
    assert len(mod.make_loader(*mod.to_tensors(mod.load_data(1))[:2], 1)) == 4
    result, sched = _fit(mod, 3, tmp_path)
    assert result["epochs_run"] == 3 and sched.last_epoch == 3 * 4
    assert sched.get_last_lr()[0] < 0.1 / 25  # annealed below the initial lr

    step = SchedulerSpec("step", {"step_size": 1, "gamma": 0.5})
    mod = load_script(make_module(reg_csv, [dense(4, 1)], scheduler=step),
                      tmp_path / "step.py")
    result, sched = _fit(mod, 3, tmp_path)
    assert sched.last_epoch == 3
    assert sched.get_last_lr()[0] == pytest.approx(0.01 * 0.5**3)


def test_early_stop_and_checkpoints(tmp_path, reg_csv):
    # lr = 0: the held-out loss never improves after the first epoch
    frozen = OptimizerSpec("sgd", {"lr": 0.0, "momentum": 0.0, "dampening": 0.0,
                                   "weight_decay": 0.0, "nesterov": False})
    module = make_module(reg_csv, [dense(4, 3, "relu"), dense(3, 1)], optimizer=frozen,
                         epochs=20, early_stop=3, checkpoint=2)
    mod = load_script(module, tmp_path / "out.py")
    result, _ = _fit(mod, 20, tmp_path / "run", scheduler=False)
    assert result["epochs_run"] == 4  # epoch 1 sets the best, 2..4 do not improve it
    losses = [h["held_out_loss"] for h in result["history"]]
    assert len(set(losses)) == 1 and result["train_seconds"] > 0
    files = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert files == ["Net_epoch2.pt", "Net_epoch4.pt"]
    state = torch.load(tmp_path / "run" / "checkpoints" / "Net_epoch4.pt")
    assert set(state) == {"model", "optimizer"}
    assert set(state["model"]) == set(mod.build_model().state_dict())

    # a learning model trains on: no early stop
    module = make_module(reg_csv, [dense(4, 1)], epochs=5, early_stop=3)
    result, _ = _fit(load_script(module, tmp_path / "learn.py"), 5, tmp_path / "r2")
    assert result["epochs_run"] == 5


def test_train_step_and_evaluate(tmp_path, reg_csv, cls_csv, bin_csv):
    # classification: int64 labels [n], accuracy by argmax
    module = make_module(cls_csv, [dense(4, 8, "relu"), dense(8, 3)], loss="cross_entropy",
                         metrics=("accuracy",))
    mod = load_script(module, tmp_path / "cls.py")
    x_tr, y_tr, x_te, y_te = mod.to_tensors(mod.load_data(1))
    assert y_tr.dtype == torch.int64 and y_tr.dim() == 1
    model = mod.build_model()
    opt = mod.make_optimizer(model)
    loss = mod.train_step(model, opt, mod.make_loss(), x_tr, y_tr)
    assert isinstance(loss, float) and math.isfinite(loss)
    metrics = mod.evaluate(model, x_te, y_te)
    model.eval()
    want = (model(x_te).argmax(1) == y_te).double().mean().item()
    assert metrics == {"accuracy": pytest.approx(want)}

    # regression metrics
    module = make_module(reg_csv, [dense(4, 1)], metrics=("mae", "mse", "rmse"))
    mod = load_script(module, tmp_path / "reg.py")
    x_tr, y_tr, x_te, y_te = mod.to_tensors(mod.load_data(1))
    model = mod.build_model().eval()
    err = (model(x_te) - y_te).detach().double().numpy()
    metrics = mod.evaluate(model, x_te, y_te)
    assert metrics["mae"] == pytest.approx(np.abs(err).mean())
    assert metrics["mse"] == pytest.approx((err**2).mean())
    assert metrics["rmse"] == pytest.approx(math.sqrt((err**2).mean()))

    # binary: logits threshold at 0, probabilities at 0.5
    x = torch.tensor([[0.2], [-1.0], [2.0], [-0.3]])
    y = torch.tensor([[1.0], [0.0], [1.0], [1.0]])
    for final, want in (("linear", 0.75), ("sigmoid", 0.75)):
        module = make_module(bin_csv, [dense(1, 1, final)], loss="bce",
                             metrics=("accuracy",))
        mod = load_script(module, tmp_path / f"bin_{final}.py")
        model = mod.build_model()
        with torch.no_grad():
            model.layers[0].weight.fill_(1.0)
            model.layers[0].bias.zero_()
        assert mod.evaluate(model, x, y) == {"accuracy": want}


def test_bf16_autocast_step(tmp_path, reg_csv):
    module = make_module(reg_csv, [dense(4, 8, "gelu"), dense(8, 1)], precision="bf16")
    mod = load_script(module, tmp_path / "out.py")
    assert mod.AMP_DTYPE is torch.bfloat16
    x_tr, y_tr, _, _ = mod.to_tensors(mod.load_data(1))
    model = mod.build_model()
    loss = mod.train_step(model, mod.make_optimizer(model), mod.make_loss(), x_tr, y_tr)
    assert math.isfinite(loss)
    assert all(p.dtype == torch.float32 for p in model.parameters())  # fp32 master


def test_main_subprocess_manifest_and_export(tmp_path, reg_csv):
    module = make_module(reg_csv, [dense(4, 6, "relu"), LayerSpec("batchnorm", 6, 6),
                                   dense(6, 1)],
                         metrics=("mae", "rmse"), epochs=30, seed=11,
                         export=ExportSpec("torch", "models/net.pt"))
    script = emit_torch.write_pytorch(module, tmp_path / "out.py")
    proc = subprocess.run([sys.executable, str(script), "--epochs", "2", "--out-dir", "tmp",
                           "--quiet", "--threads", "1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    out = tmp_path / "tmp"
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["kynml_version"] == emit_torch.emitter_version()
    assert manifest["config_hash"] == hashlib.sha256(
        module.source_text.encode()).hexdigest()
    assert manifest["data_hash"] == hashlib.sha256(reg_csv.read_bytes()).hexdigest()
    assert set(manifest["env"]) == {"python", "torch", "numpy", "platform"}
    assert manifest["env"]["python"] == sys.version.split()[0]
    assert manifest["env"]["torch"] == torch.__version__
    assert manifest["seed"] == 11
    assert set(manifest["metrics"]) == {"mae", "rmse"}
    assert all(math.isfinite(v) for v in manifest["metrics"].values())
    assert manifest["backend"] == "pytorch"
    assert manifest["epochs_run"] == 2 and len(manifest["history"]) == 2
    assert isinstance(manifest["train_seconds"], float) and manifest["train_seconds"] > 0
    assert sorted(p.name for p in out.iterdir()) == ["models", "run_manifest.json"]

    # the exported state_dict loads into the script's model and reproduces the metrics
    mod = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location("kyn_emitted_main", script))
    mod.__spec__.loader.exec_module(mod)
    model = mod.build_model()
    model.load_state_dict(torch.load(out / "models" / "net.pt"), strict=True)
    assert int(model.layers[1].num_batches_tracked) > 0
    _, _, x_te, y_te = mod.to_tensors(mod.load_data(11))
    again = mod.evaluate(model, x_te, y_te)
    assert again == pytest.approx(manifest["metrics"], rel=1e-6)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.load
@pytest.mark.parametrize("fmt", ["torchscript", "onnx", "npz"])
def test_main_exports(tmp_path, cls_csv, fmt, capsys):
    path = {"torchscript": "net.ts", "onnx": "m/net.onnx", "npz": "net.npz"}[fmt]
    export = ExportSpec(fmt, path, (2, 4) if fmt == "onnx" else None, 17)
    module = make_module(cls_csv, [dense(4, 8, "tanh"), LayerSpec("batchnorm", 8, 8),
                                   LayerSpec("dropout", 8, 8, rate=0.1), dense(8, 3)],
                         loss="cross_entropy", metrics=("accuracy",), export=export,
                         seed=None)
    mod = load_script(module, tmp_path / "out.py")
    assert mod.main(["--epochs", "2", "--out-dir", str(tmp_path / "run")]) == 0
    log = capsys.readouterr().out
    assert log.count("\nepoch ") + log.startswith("epoch ") == 2 and "metrics:" in log
    manifest = json.loads((tmp_path / "run" / "run_manifest.json").read_text())
    assert manifest["seed"] is None and 0 <= manifest["metrics"]["accuracy"] <= 1
    file = tmp_path / "run" / path
    reference = mod.build_model()
    x = torch.randn(2, 4)
    if fmt == "torchscript":
        loaded = torch.jit.load(str(file))
        reference.load_state_dict(loaded.state_dict())
        torch.testing.assert_close(loaded(x), reference.eval()(x))
    elif fmt == "onnx":
        onnx = pytest.importorskip("onnx")
        graph = onnx.load(str(file))
        onnx.checker.check_model(graph)
        assert graph.opset_import[0].version == 17
        assert [d.dim_value for d in graph.graph.input[0].type.tensor_type.shape.dim] == [2, 4]
    else:
        with np.load(file) as arrays:
            assert set(arrays.files) == set(reference.state_dict())
            assert arrays["layers.0.weight"].shape == (8, 4)


@pytest.mark.parametrize("text", [
    "plain\n", "a '''b''' c\n", 'x """y""" z', "ends in \\", "quote at the end'",
    "\\'''", "tab\tand \\n escape", "both ''' and \"\"\" quotes"])
def test_embedded_string_literal_round_trips(text):
    assert ast.literal_eval(emit_torch._string_literal(text)) == text


def test_generated_code_passes_ruff(tmp_path, reg_csv, cls_csv, bin_csv):
    exe = ruff()
    if exe is None:
        pytest.skip("ruff is not installed")
    variants = [
        make_module(reg_csv, [dense(4, 1)], metrics=()),  # no evaluate, no export
        make_module(reg_csv, [dense(4, 8, "leaky_relu"), dense(8, 1)], loss="huber",
                    metrics=("mae", "mse", "rmse", "accuracy"),
                    scheduler=SchedulerSpec("cosine", {"T_max": None, "eta_min": 0.0}),
                    precision="bf16", compile=True, deterministic=True,
                    export=ExportSpec("torchscript", "a.ts")),
        make_module(cls_csv, [dense(4, 3, "softmax")], loss="cross_entropy",
                    metrics=("mae",), scheduler=ONECYCLE, early_stop=2, checkpoint=1,
                    export=ExportSpec("onnx", "a.onnx", (1, 4), 13)),
        make_module(bin_csv, [dense(4, 1, "sigmoid")], loss="bce",
                    metrics=("accuracy", "mse"), precision="fp16", device="cpu",
                    export=ExportSpec("npz", "a.npz")),
    ]
    files = []
    for i, module in enumerate(variants):
        path = emit_torch.write_pytorch(module, tmp_path / f"v{i}" / "out.py")
        compile(path.read_text(), str(path), "exec")
        files.append(str(path))
    proc = subprocess.run([exe, "check", "--isolated", "--no-cache", "--select", "F,E9",
                           *files], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
