"""Lower a `.kyn` model and its loss to frame IR (docs/kyn.md, "Model and losses").

`build_train_function(module, batch)` gives

    @<model>_train(x, y, masks..., params...) -> (loss, running stats...)

with every trainable parameter marked `frame.param` (frame-autodiff derives
`@<model>_train_grad` returning the loss, the statistics, then the gradients), the
BatchNorm running statistics written into their own arguments (`frame.aliasing_output`),
and one dropout mask input per dropout layer (0 or 1/(1-p), drawn on the host from the
run's seed). `build_eval_function(module, batch)` is the inference graph (dropout is the
identity, BatchNorm uses the running statistics), returning the model's output and the
loss: `@<model>_eval(x, y, params...) -> (output, loss)`.

Losses are the batch mean of PyTorch's: mse, l1/mae, huber (delta 1), cross_entropy,
nll, and bce, which always lowers to the stable logits form on the final dense layer's
pre-activation (for a final sigmoid this is BCELoss of the probabilities, for a final
linear BCEWithLogitsLoss). Labels of cross_entropy and nll are int32 class indices.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import builtin, func
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.frontends.kyn.module import KynModule, LayerSpec
from frame_mlir.nn.graph import Graph
from frame_mlir.passes.common import set_arg_attr
from frame_mlir.passes.frame_autodiff import LOSS_INDEX

__all__ = ["BuiltKyn", "ParamDecl", "build_eval_function", "build_train_function",
           "param_decls", "symbol"]

#: PyTorch's nn.LeakyReLU default slope
LEAKY_SLOPE = 0.01
HUBER_DELTA = 1.0


@dataclass(frozen=True)
class ParamDecl:
    """A parameter or buffer: `layers.<j>.<what>`, its shape, and how it starts."""

    name: str
    shape: tuple[int, ...]
    trainable: bool
    layer: int  # j


@dataclass
class BuiltKyn:
    """A built function and the host's view of its arguments."""

    fn: func.FuncOp
    #: argument order: ("x",), ("y",), ("mask", j), ("param", name)
    args: list[tuple]
    stats: list[str]  # running statistics returned after the loss (train only)


def symbol(name: str) -> str:
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return out if out and not out[0].isdigit() else f"m_{out}"


def param_decls(module: KynModule) -> list[ParamDecl]:
    """Every parameter and running statistic of the trained model, in layer order."""
    out: list[ParamDecl] = []
    for j, layer in enumerate(module.model.layers[1:]):
        if layer.kind == "dense":
            out.append(ParamDecl(f"layers.{j}.weight", (layer.out_features, layer.in_features),
                                 True, j))
            out.append(ParamDecl(f"layers.{j}.bias", (layer.out_features,), True, j))
        elif layer.kind == "batchnorm":
            f = layer.out_features
            out.append(ParamDecl(f"layers.{j}.weight", (f,), True, j))
            out.append(ParamDecl(f"layers.{j}.bias", (f,), True, j))
            out.append(ParamDecl(f"layers.{j}.running_mean", (f,), False, j))
            out.append(ParamDecl(f"layers.{j}.running_var", (f,), False, j))
    return out


class _Build:
    def __init__(self, module: KynModule, batch: int, mode: str, loss_scale: float = 1.0):
        self.m, self.batch, self.mode = module, batch, mode
        self.loss_scale = loss_scale
        suffix = "_train" if mode == "train" else "_eval"
        self.g = Graph(symbol(module.model.name) + suffix)
        self.args: list[tuple] = []
        self.values: dict[str, SSAValue] = {}
        self.stats: list[tuple[str, SSAValue]] = []

    def emit(self, op: object) -> SSAValue:
        return self.g.emit(op)  # type: ignore[arg-type]

    def const(self, value: float, like: SSAValue) -> SSAValue:
        return self.emit(frame.ConstantOp(value, result_type=like.type))

    def inputs(self) -> tuple[SSAValue, SSAValue]:
        n_in = self.m.model.input_size
        x = self.g.add_input((self.batch, n_in), "x")
        self.args.append(("x",))
        if self.m.task == "classification":
            y = self.g.add_input((self.batch,), "y", elem=builtin.i32)
        else:
            y = self.g.add_input((self.batch, 1), "y")
        self.args.append(("y",))
        return x, y

    def params(self) -> None:
        masks = [j for j, layer in enumerate(self.m.model.layers[1:])
                 if layer.kind == "dropout" and layer.rate > 0]
        if self.mode == "train":
            for j in masks:
                layer = self.m.model.layers[j + 1]
                self.values[f"mask{j}"] = self.g.add_input((self.batch, layer.in_features),
                                                           f"mask{j}")
                self.args.append(("mask", j))
        for p in param_decls(self.m):
            attrs = {"frame.param": builtin.StringAttr(p.name)} if p.trainable else None
            self.values[p.name] = self.g.add_input(p.shape, p.name, attrs)
            self.args.append(("param", p.name))

    def activation(self, x: SSAValue, act: str) -> SSAValue:
        if act == "linear":
            return x
        if act == "relu":
            return self.emit(frame.ReluOp(x))
        if act == "sigmoid":
            return self.emit(frame.SigmoidOp(x))
        if act == "tanh":
            return self.emit(frame.TanhOp(x))
        if act == "gelu":  # nn.GELU() default: the exact erf form
            return self.emit(frame.GeluOp(x, "none"))
        if act == "leaky_relu":  # relu(x) - slope * relu(-x)
            neg = self.emit(frame.ReluOp(self.emit(frame.NegOp(x))))
            return self.emit(frame.SubOp(self.emit(frame.ReluOp(x)),
                                         self.emit(frame.ScaleOp(neg, LEAKY_SLOPE))))
        if act == "softmax":
            return self.emit(frame.SoftmaxOp(x, 1))
        if act == "log_softmax":
            return self.emit(frame.LogSoftmaxOp(x, 1))
        raise ValueError(f"unknown activation {act!r}")

    def layer(self, j: int, layer: LayerSpec, h: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(output, pre-activation) of layer j."""
        if layer.kind == "dense":
            w, b = self.values[f"layers.{j}.weight"], self.values[f"layers.{j}.bias"]
            y = self.emit(frame.MatmulOp(h, w, transpose_rhs=True))
            full = self.emit(frame.BroadcastOp(b, y.type, [0]))
            z = self.emit(frame.AddOp(y, full))
            return self.activation(z, layer.activation or "linear"), z
        if layer.kind == "dropout":
            if self.mode == "train" and layer.rate > 0:
                h = self.emit(frame.MulOp(h, self.values[f"mask{j}"]))
            return h, h
        # batchnorm
        gamma, beta = self.values[f"layers.{j}.weight"], self.values[f"layers.{j}.bias"]
        mean_n, var_n = f"layers.{j}.running_mean", f"layers.{j}.running_var"
        mean, var = self.values[mean_n], self.values[var_n]
        if self.mode == "eval":
            y = self.emit(frame.BatchNormInferenceOp(h, gamma, beta, mean, var, layer.eps, 1))
            return y, y
        y = self.emit(frame.BatchNormOp(h, gamma, beta, layer.eps, 1))
        for name, value, which in ((mean_n, mean, "mean"), (var_n, var, "var")):
            self.stats.append((name, self.emit(frame.BatchNormStatsOp(
                h, value, layer.momentum, which, 1))))
        return y, y

    def mean(self, v: SSAValue) -> SSAValue:
        return self.emit(frame.MeanOp(v))

    def loss(self, out: SSAValue, pre: SSAValue, y: SSAValue) -> SSAValue:
        kind = self.m.train.loss
        if kind == "cross_entropy":
            return self.emit(frame.CrossEntropyOp(out, y, "mean"))
        if kind == "nll":
            return self.emit(frame.NllLossOp(out, y, "mean"))
        if kind == "bce":
            # mean(relu(z) - z*y + log(1 + exp(-|z|))) on the logits z: BCELoss of
            # sigmoid(z) without its log clamp, BCEWithLogitsLoss exactly
            z = pre if self.m.model.final_activation == "sigmoid" else out
            soft = self.emit(frame.LogOp(self.emit(frame.ShiftOp(self.emit(frame.ExpOp(
                self.emit(frame.NegOp(self.emit(frame.AbsOp(z)))))), 1.0))))
            per = self.emit(frame.AddOp(self.emit(frame.SubOp(
                self.emit(frame.ReluOp(z)), self.emit(frame.MulOp(z, y)))), soft))
            return self.mean(per)
        d = self.emit(frame.SubOp(out, y))
        if kind == "mse":
            return self.mean(self.emit(frame.MulOp(d, d)))
        a = self.emit(frame.AbsOp(d))
        if kind in ("l1", "mae"):
            return self.mean(a)
        if kind == "huber":  # 0.5 m^2 + delta (|d| - m), m = min(|d|, delta)
            m = self.emit(frame.MinimumOp(a, self.const(HUBER_DELTA, a)))
            quad = self.emit(frame.ScaleOp(self.emit(frame.MulOp(m, m)), 0.5))
            lin = self.emit(frame.ScaleOp(self.emit(frame.SubOp(a, m)), HUBER_DELTA))
            return self.mean(self.emit(frame.AddOp(quad, lin)))
        raise ValueError(f"unknown loss {kind!r}")

    def build(self) -> BuiltKyn:
        x, y = self.inputs()
        self.params()
        h, pre = x, x
        for j, layer in enumerate(self.m.model.layers[1:]):
            with self.g.scope(f"layers.{j}"):
                h, z = self.layer(j, layer, h)
                if layer.kind == "dense":
                    pre = z
        with self.g.scope("loss"):
            loss = self.loss(h, pre, y)
            if self.loss_scale != 1.0:  # a rank's weight in a data-parallel batch
                loss = self.emit(frame.ScaleOp(loss, self.loss_scale))
        if self.mode == "eval":
            fn = self.g.finish([h, loss])
            fn.attributes["frame.inference"] = builtin.UnitAttr()
            return BuiltKyn(fn, self.args, [])
        fn = self.g.finish([loss, *(v for _, v in self.stats)])
        fn.attributes[LOSS_INDEX] = builtin.IntegerAttr(0, 64)
        index = {a[1]: i for i, a in enumerate(self.args) if a[0] == "param"}
        for k, (name, _) in enumerate(self.stats):
            set_arg_attr(fn, index[name], "frame.aliasing_output",
                         builtin.IntegerAttr(1 + k, 64))
        return BuiltKyn(fn, self.args, [n for n, _ in self.stats])


def build_train_function(module: KynModule, batch: int, loss_scale: float = 1.0
                         ) -> BuiltKyn:
    """The training forward and loss of the trained model for `batch` rows.

    `loss_scale` multiplies the loss (and so, through frame-autodiff, every gradient):
    in a data-parallel job a rank holding `batch` of a global batch's G rows weighs its
    mean loss by batch / G, so that the allreduced sum of the ranks' losses and
    gradients is the global batch's mean and its gradient -- the 1/N of the average
    is computed in the compiled step, not on the host. At 1.0 (one process) no op is
    emitted: the single-process function is unchanged."""
    return _Build(module, batch, "train", loss_scale).build()


def build_eval_function(module: KynModule, batch: int) -> BuiltKyn:
    """The inference graph and loss of the trained model for `batch` rows."""
    return _Build(module, batch, "eval").build()
