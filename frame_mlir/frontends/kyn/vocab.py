"""What the `.kyn` language knows by name: enumerations, the keys of each block with
their types and defaults, and the arguments of each call-valued key (optimizers,
schedulers, early_stop, checkpoint). The validator, formatter, diagnostics and the
language server all read these tables; docs/kyn.md shows them to users.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ACTIVATIONS", "CALLS", "DEVICES", "ENUMS", "EXPORT_FORMATS", "KEYS", "LOSSES",
           "MAX_EPOCHS", "MAX_SEED", "MAX_STEPS", "METRICS", "OPTIMIZERS", "PRECISIONS",
           "REQUIRED", "SCHEDULERS", "Key"]

ACTIVATIONS = ("relu", "sigmoid", "tanh", "linear", "leaky_relu", "gelu", "softmax",
               "log_softmax")
LOSSES = ("mse", "bce", "cross_entropy", "huber", "l1", "mae", "nll")
OPTIMIZERS = ("adam", "sgd", "adamw", "rmsprop")
SCHEDULERS = ("step", "cosine", "onecycle")
METRICS = ("mae", "mse", "rmse", "accuracy")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "fp16", "bf16")
#: KynML's three plus our own `npz` (every parameter and buffer by name)
EXPORT_FORMATS = ("torch", "onnx", "torchscript", "npz")
ANNEAL = ("cos", "linear")

#: enumeration name -> members (for "expected one of" and completion)
ENUMS: dict[str, tuple[str, ...]] = {
    "activation": ACTIVATIONS, "loss": LOSSES, "optimizer": OPTIMIZERS,
    "scheduler": SCHEDULERS, "metric": METRICS, "device": DEVICES,
    "precision": PRECISIONS, "format": EXPORT_FORMATS, "anneal_strategy": ANNEAL,
}

REQUIRED = object()  # the default of a key that must be given

#: The most epochs a program may train (KYN-S06 at validate time): a run keeps per-epoch
#: learning rates and losses.
MAX_EPOCHS = 1_000_000
#: The most optimizer steps a run may take, epochs x batches per epoch (KYN-S06; checked
#: once the row count is known), as the v0 specs' `training.steps`.
MAX_STEPS = 2**31 - 1
#: The largest seed (numpy's and PyTorch's seeds are 32-bit).
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Key:
    """A key (or call argument): its type, default and a one-line description.

    type: "int", "float", "bool", "string", "name" (a block name), "enum:<enum>",
    "call:<enum or call name>", "list:<enum>", "intlist", "floatpair".
    lo/hi: bounds; lo_open/hi_open: whether the bound itself is excluded. Every float
    (and every int given for a float) must also be finite and representable in float32,
    neither beyond its largest magnitude nor a nonzero value that rounds to 0.
    """

    type: str
    default: Any = None
    doc: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False


#: block kind -> key -> Key, in canonical (formatter) order
KEYS: dict[str, dict[str, Key]] = {
    "dataset": {
        "source": Key("call:source", REQUIRED, 'the data: csv("path.csv")'),
        "target": Key("string", REQUIRED, "the label column, removed from the features"),
        "split": Key("float", 0.8, "fraction of rows used for training", 0, 1, True, True),
        "normalize": Key("bool", False, "z-score the features (training split statistics)"),
        "shuffle": Key("bool", True, "shuffle the training rows every epoch"),
        "num_workers": Key("int", 0, "DataLoader workers (the PyTorch script)", 0),
        "pin_memory": Key("bool", False, "DataLoader pin_memory (the PyTorch script)"),
        "prefetch": Key("int", None, "DataLoader prefetch_factor (the PyTorch script)", 1),
    },
    "train": {
        "model": Key("name", REQUIRED, "the model block to train"),
        "data": Key("name", REQUIRED, "the dataset block to train on"),
        "loss": Key("enum:loss", REQUIRED, "the loss function"),
        "optimizer": Key("call:optimizer", REQUIRED, "e.g. adam(lr=0.001)"),
        "epochs": Key("int", REQUIRED, "passes over the training split", 1, MAX_EPOCHS),
        "batch": Key("int", REQUIRED, "rows per step (fixes the batch dimension)", 1),
        "device": Key("enum:device", "auto", "auto, cpu or cuda"),
        "scheduler": Key("call:scheduler", None, "step(...), cosine(...) or onecycle(...)"),
        "early_stop": Key("call:early_stop", None, "early_stop(patience=N)"),
        "checkpoint": Key("call:checkpoint", None, "checkpoint(every_n=N)"),
        "precision": Key("enum:precision", "fp32", "fp32 (fp16 and bf16: see docs/kyn.md)"),
        "compile": Key("bool", False, "torch.compile in the PyTorch script"),
        "seed": Key("int", None, "seeds data split, shuffling, init and dropout", 0,
                    MAX_SEED),
        "deterministic": Key("bool", False, "deterministic algorithms (PyTorch script)"),
    },
    "evaluate": {
        "metrics": Key("list:metric", REQUIRED, "e.g. [mae, rmse] or [accuracy]"),
    },
    "export": {
        "format": Key("enum:format", REQUIRED, "torch, onnx, torchscript or npz"),
        "path": Key("string", REQUIRED, "the output file"),
        "input_shape": Key("intlist", None, "[batch, features]; required for onnx"),
        "opset": Key("int", 17, "ONNX opset version", 13, 21),
    },
}

_LR = Key("float", 0.001, "learning rate", 0)
_WD = Key("float", 0.0, "weight decay", 0)
_BETAS = Key("floatpair", (0.9, 0.999), "Adam's (beta1, beta2)", 0, 1, False, True)
_EPS = Key("float", 1e-8, "added to the denominator", 0, None, True)

#: call name -> argument -> Key (positional arguments follow this order)
CALLS: dict[str, dict[str, Key]] = {
    "csv": {"path": Key("string", REQUIRED, "the CSV file")},
    "sgd": {"lr": _LR, "momentum": Key("float", 0.0, "momentum factor", 0),
            "dampening": Key("float", 0.0, "dampening for momentum", 0),
            "weight_decay": _WD, "nesterov": Key("bool", False, "Nesterov momentum")},
    "adam": {"lr": _LR, "betas": _BETAS, "eps": _EPS, "weight_decay": _WD},
    "adamw": {"lr": _LR, "betas": _BETAS, "eps": _EPS,
              "weight_decay": Key("float", 0.01, "decoupled weight decay", 0)},
    "rmsprop": {"lr": Key("float", 0.01, "learning rate", 0),
                "alpha": Key("float", 0.99, "smoothing constant", 0, 1),
                "eps": _EPS, "weight_decay": _WD,
                "momentum": Key("float", 0.0, "momentum factor", 0),
                "centered": Key("bool", False, "normalise by the gradient's variance")},
    "step": {"step_size": Key("int", REQUIRED, "epochs between decays", 1),
             "gamma": Key("float", 0.1, "decay factor", 0, None, True)},
    "cosine": {"T_max": Key("int", None, "half-period in epochs (default: epochs)", 1),
               "eta_min": Key("float", 0.0, "minimum learning rate", 0)},
    "onecycle": {"max_lr": Key("float", REQUIRED, "peak learning rate", 0, None, True),
                 "pct_start": Key("float", 0.3, "fraction of steps increasing", 0, 1, True,
                                  True),
                 "div_factor": Key("float", 25.0, "initial lr = max_lr / div_factor", 0,
                                   None, True),
                 "final_div_factor": Key("float", 1e4, "final lr = initial / this", 0, None,
                                         True),
                 "anneal_strategy": Key("enum:anneal_strategy", "cos", "cos or linear"),
                 "cycle_momentum": Key("bool", True, "cycle momentum / beta1 inversely"),
                 "base_momentum": Key("float", 0.85, "lowest momentum", 0),
                 "max_momentum": Key("float", 0.95, "highest momentum", 0),
                 "three_phase": Key("bool", False, "PyTorch's three-phase schedule")},
    "early_stop": {"patience": Key("int", 5, "epochs without improvement before stopping",
                                   1),
                   "min_delta": Key("float", 0.0, "smallest improvement that counts", 0)},
    "checkpoint": {"every_n": Key("int", 1, "epochs between checkpoints", 1),
                   "dir": Key("string", "checkpoints", "folder of the checkpoint files")},
}

#: which calls a call-valued key accepts
CALL_SETS: dict[str, tuple[str, ...]] = {
    "source": ("csv",), "optimizer": OPTIMIZERS, "scheduler": SCHEDULERS,
    "early_stop": ("early_stop",), "checkpoint": ("checkpoint",),
}
