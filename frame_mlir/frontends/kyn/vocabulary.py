"""The words an editor shows for the `.kyn` vocabulary: a one-line doc for every
enumeration member, call, layer keyword and block header.

The facts themselves -- enumeration members, block keys with their types, defaults and
canonical order, call arguments -- live in `vocab.py`, which the validator, the
formatter and the language server all read. This module adds only prose, keyed by the
same names, so that nothing is stated twice: `tests/kyn/test_lsp.py` checks that every
member of `vocab.ENUMS`, every call of `vocab.CALLS`, every layer keyword and every
block header has its doc here.

Structure (all immutable values in plain dicts):

* ``MEMBER_DOCS: dict[str, dict[str, str]]`` -- `vocab.ENUMS` name (``"activation"``,
  ``"loss"``, ``"metric"``, ``"device"``, ``"precision"``, ``"format"``,
  ``"anneal_strategy"``) -> member -> doc. Optimizers and schedulers are calls: their
  docs are in ``CALL_DOCS``.
* ``CALL_DOCS: dict[str, str]`` -- `vocab.CALLS` name -> doc.
* ``LAYERS: dict[str, LayerSpec]`` -- layer keyword -> operand syntax and doc.
* ``BLOCKS: dict[str, BlockSpec]`` -- top-level keyword -> header syntax and doc, in the
  formatter's block order.
* ``ENUM_TITLES: dict[str, str]`` -- `vocab.ENUMS` name -> what a member is called in
  prose (``"format"`` -> ``"export format"``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BLOCKS", "CALL_DOCS", "ENUM_TITLES", "LAYERS", "MEMBER_DOCS", "BlockSpec",
           "LayerSpec", "doc_of"]


@dataclass(frozen=True)
class LayerSpec:
    """A layer keyword of a model body: `syntax` shows its operands."""

    name: str
    syntax: str
    doc: str


@dataclass(frozen=True)
class BlockSpec:
    """A top-level keyword: `syntax` is its header as written."""

    name: str
    syntax: str
    doc: str
    named: bool = False  # `dataset <Name>:` / `model <Name>:`
    repeatable: bool = False  # more than one may appear


MEMBER_DOCS: dict[str, dict[str, str]] = {
    "activation": {
        "relu": "max(x, 0)",
        "sigmoid": "1 / (1 + exp(-x))",
        "tanh": "hyperbolic tangent",
        "linear": "no activation (the identity); the default of `dense N`",
        "leaky_relu": "x if x > 0 else 0.01 * x",
        "gelu": "x * Phi(x), the exact (erf) GELU",
        "softmax": "softmax over the features; before cross_entropy a warning (KYN-W01): "
                   "the loss applies it already",
        "log_softmax": "log of softmax over the features; what nll expects",
    },
    "loss": {
        "mse": "mean squared error (nn.MSELoss); float targets",
        "bce": "binary cross-entropy: on probabilities after a final sigmoid, on logits "
               "after a final linear; exactly 1 output unit, 0/1 targets",
        "cross_entropy": "nn.CrossEntropyLoss on logits; class-label targets, >= 2 output "
                         "units",
        "huber": "nn.HuberLoss(delta=1.0); float targets",
        "l1": "mean absolute error (nn.L1Loss); float targets",
        "mae": "mean absolute error (nn.L1Loss, the same as l1); float targets",
        "nll": "nn.NLLLoss on log-probabilities (end the model with log_softmax); "
               "class-label targets, >= 2 output units",
    },
    "metric": {
        "mae": "mean absolute error on the held-out split",
        "mse": "mean squared error on the held-out split",
        "rmse": "root mean squared error on the held-out split",
        "accuracy": "fraction of held-out rows classified correctly",
    },
    "device": {
        "auto": "the best available device (the CPU for the native trainer)",
        "cpu": "train on the CPU",
        "cuda": "train on a CUDA GPU (not yet in the native trainer)",
    },
    "precision": {
        "fp32": "32-bit floats (the native trainer's only precision)",
        "fp16": "16-bit floats, mixed precision (the PyTorch script only)",
        "bf16": "bfloat16, mixed precision (the PyTorch script only)",
    },
    "format": {
        "torch": "the model's state_dict, saved with torch.save",
        "onnx": "a static ONNX inference graph; needs input_shape",
        "torchscript": "a compiled, self-contained TorchScript module",
        "npz": "every parameter and buffer by name (layers.<j>.weight, ...) in a NumPy "
               ".npz archive (frame-mlir)",
    },
    "anneal_strategy": {
        "cos": "cosine annealing between the learning rates",
        "linear": "linear annealing between the learning rates",
    },
}

CALL_DOCS: dict[str, str] = {
    "csv": "a CSV file with a header row; the path resolves against the current "
           "directory, then the .kyn file's",
    "sgd": "stochastic gradient descent (torch.optim.SGD)",
    "adam": "Adam (torch.optim.Adam)",
    "adamw": "Adam with decoupled weight decay (torch.optim.AdamW)",
    "rmsprop": "RMSprop (torch.optim.RMSprop)",
    "step": "multiply the learning rate by gamma every step_size epochs",
    "cosine": "cosine annealing over T_max epochs, stepped once per epoch",
    "onecycle": "the one-cycle policy, stepped once per batch (total_steps = epochs x "
                "batches per epoch)",
    "early_stop": "stop when the held-out loss has not improved for `patience` epochs",
    "checkpoint": "save the parameters and optimizer state every `every_n` epochs",
}

ENUM_TITLES: dict[str, str] = {
    "activation": "activation", "loss": "loss", "optimizer": "optimizer",
    "scheduler": "scheduler", "metric": "metric", "device": "device",
    "precision": "precision", "format": "export format",
    "anneal_strategy": "anneal strategy",
}

LAYERS: dict[str, LayerSpec] = {
    "input": LayerSpec("input", "input N", "the model's input: N features, shape "
                       "[batch, N]; exactly one, first"),
    "dense": LayerSpec("dense", "dense N [activation]", "fully connected layer with N "
                       "output units, then the activation (default linear)"),
    "dropout": LayerSpec("dropout", "dropout R", "zero each feature with probability R "
                         "(0 <= R < 1) in training, scaling the rest by 1/(1-R)"),
    "batchnorm": LayerSpec("batchnorm", "batchnorm [N]", "BatchNorm1d over the incoming "
                           "features; an explicit N must match them"),
}

BLOCKS: dict[str, BlockSpec] = {
    "import": BlockSpec("import", 'import "path"', "merge the dataset and model blocks of "
                        "another .kyn file (relative to this one)", repeatable=True),
    "params": BlockSpec("params", "params:", "name = literal defaults for $name "
                        "references"),
    "sweep": BlockSpec("sweep", "sweep:", "name = [v, ...] axes; every combination is "
                       "trained"),
    "dataset": BlockSpec("dataset", "dataset <Name>:", "a CSV dataset: source, target, "
                         "split, ...", named=True, repeatable=True),
    "model": BlockSpec("model", "model <Name>:", "an MLP: input, dense, dropout and "
                       "batchnorm layers", named=True, repeatable=True),
    "train": BlockSpec("train", "train:", "what to train and how: model, data, loss, "
                       "optimizer, epochs, batch, ..."),
    "evaluate": BlockSpec("evaluate", "evaluate:", "metrics = [...] scored on the held-out "
                          "split"),
    "export": BlockSpec("export", "export:", "where and how to save the trained model"),
}


def doc_of(enum: str, name: str) -> str:
    """The doc of member `name` of `vocab.ENUMS[enum]` (a call's doc for optimizers and
    schedulers), or "" when there is none."""
    return MEMBER_DOCS.get(enum, {}).get(name) or CALL_DOCS.get(name, "")
