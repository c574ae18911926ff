"""The Python API of the JSON network frontend: a network compiled to native code,
its parameters, and training with SGD or Adam.

    net = frame_mlir.network.load("lenet.json", seed=0)
    outs = net.forward({"data": x, "label": y})            # test mode: every output
    outs, grads = net.gradients({"data": x, "label": y})   # no update
    trainer = net.trainer(frame_mlir.network.SGD(0.1, momentum=0.9))
    outs = trainer.step({"data": x, "label": y})           # outputs before the update

Functions are compiled when first needed, each from IR the frontend builds
(`frontends/network/lower.py`) through the shared pipeline: the training function and
its gradient (frame-autodiff) for `gradients` and `Trainer.step`, the test-mode
function for `forward`, the solver's update function (the optimizer library's,
`frame_mlir/optim/`, in the reference format's formulas) for a trainer. numpy owns the buffers; every forward, backward and update computation
runs in the generated code. Parameters (and BatchNorm running statistics) live in one
host buffer each, updated in place by the compiled code.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from frame_mlir.frontends.network.loader import NetworkSpec, load_network, network_from_doc
from frame_mlir.runtime.executable import (
    ENV_CACHE,
    BoundFunction,
)
from frame_mlir.runtime.training import (
    DivergenceWatch,
    OptimizerState,
    TrainerState,
    compile_step_module,
)

if TYPE_CHECKING:
    from frame_mlir import optim
    from frame_mlir.compile_options import CompileOptions
    from frame_mlir.frontends.network.lower import ArgRole, BuiltFunction, ParamInfo
    from frame_mlir.runtime.executable import Executable

__all__ = ["SGD", "Adam", "Network", "NetworkWarning", "Trainer", "load"]


#: The largest finite float32.
F32_MAX = 3.4028234663852886e38


class NetworkWarning(UserWarning):
    """A quirk of a network file that the reference accepts and so do we (an unknown
    option key, NET-002; an integer boolean it reads as the default, NET-012): the
    text is `<source>: <rule> at <JSON pointer>: <message>`. `load(strict=True)`
    makes these errors."""


def _number(name: str, value: object, lo: float | None = None, lo_open: bool = False,
            hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(float(value)):
        raise ValueError(f"{name}: expected a finite number, found {value!r}")
    v = float(value)
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{name}: expected {'>' if lo_open else '>='} {lo:g}, found {v:g}")
    if hi is not None and v >= hi:
        raise ValueError(f"{name}: expected < {hi:g}, found {v:g}")
    # the update computes in float32: every hyperparameter must be one there
    if abs(v) > F32_MAX:
        raise ValueError(f"{name}: expected a number finite in float32 (magnitude at most "
                         f"{F32_MAX!r}), found {v:g}")
    if lo_open and np.float32(v) == 0:
        raise ValueError(f"{name}: expected > 0 in float32 (at least 1.4e-45), found {v:g}, "
                         "which rounds to 0")
    return v


@dataclass
class SGD:
    """SGD with momentum and weight decay.

    `semantics="dlprim"` (the reference's): v = g + momentum * v,
    p = (1 - weight_decay) * p - lr * v (the decay is not scaled by lr).
    `semantics="torch"`: torch.optim.SGD(lr, momentum, weight_decay): g' = g +
    weight_decay * p, v = momentum * v + g', p = p - lr * v. Without weight decay the
    two are the same. Every field may change between steps (no recompilation)."""

    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0
    semantics: str = "dlprim"

    kind = "sgd"

    def check(self) -> None:
        _number("SGD lr", self.lr, 0.0)
        _number("SGD momentum", self.momentum, 0.0)
        _number("SGD weight_decay", self.weight_decay, 0.0)
        if self.semantics not in ("dlprim", "torch"):
            raise ValueError(f"SGD semantics: expected 'dlprim' or 'torch', found "
                             f"{self.semantics!r}")

    def config(self) -> optim.SGD:
        """This solver's fields as the optimizer library's config: the reference
        format's SGD formula, whose one update function takes both conventions."""
        from frame_mlir import optim

        return optim.SGD(lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay,
                         formula="reference", weight_decay_convention=(
                             "torch" if self.semantics == "torch" else "reference"))

    def hyper(self, t: int) -> list[float]:
        """(lr, momentum, decay_grad, keep) for step t (1-based)."""
        from frame_mlir import optim

        return optim.OptimizerRuntime(self.config()).hyper(t)


@dataclass
class Adam:
    """Adam (= torch.optim.Adam with L2 weight_decay, which is also the reference's):
    g' = g + weight_decay * p; m = beta1 m + (1 - beta1) g'; v = beta2 v + (1 - beta2)
    g'^2; p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)."""

    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    kind = "adam"

    def check(self) -> None:
        _number("Adam lr", self.lr, 0.0)
        _number("Adam beta1", self.beta1, 0.0, hi=1.0)
        _number("Adam beta2", self.beta2, 0.0, hi=1.0)
        _number("Adam eps", self.eps, 0.0, lo_open=True)
        _number("Adam weight_decay", self.weight_decay, 0.0)

    def config(self) -> optim.Adam:
        """This solver's fields as the optimizer library's config (the reference
        format's Adam formula)."""
        from frame_mlir import optim

        return optim.Adam(lr=self.lr, betas=(self.beta1, self.beta2), eps=self.eps,
                          weight_decay=self.weight_decay, formula="reference")

    def hyper(self, t: int) -> list[float]:
        """(decay, beta1, 1 - beta1, beta2, 1 - beta2, lr / (1 - beta1^t),
        sqrt(1 - beta2^t), eps) for step t (1-based)."""
        from frame_mlir import optim

        return optim.OptimizerRuntime(self.config()).hyper(t)


def update_config(kind: str) -> optim.SGD | optim.Adam:
    """The optimizer library's config whose update function serves solver `kind`
    ("sgd" or "adam"): its structure does not depend on the solver's fields, which are
    run-time inputs (`SGD.hyper`, `Adam.hyper`)."""
    from frame_mlir import optim

    if kind == "sgd":
        return optim.SGD(formula="reference")
    if kind == "adam":
        return optim.Adam(formula="reference")
    raise ValueError(f"unknown solver {kind!r}: expected 'sgd' or 'adam'")


def load(source: str | Path | Mapping[str, Any], *, seed: int = 0,
         options: CompileOptions | None = None, cache: Any = ENV_CACHE,
         target: str = "cpu", strict: bool = False) -> Network:
    """A network from a JSON file path or an already-parsed document, its parameters
    initialised the reference's way from `seed`; `target` "cuda" (or "cuda-emulator")
    compiles its functions as CUDA kernels.

    What the reference accepts silently -- an unknown option key (NET-002), an integer
    boolean it reads as the option's default (NET-012) -- is a `NetworkWarning` (shown
    on stderr by Python's default filters; `net.spec.warnings` keeps them); with
    `strict` these are errors too.

    Raises:
        frame_mlir.frontends.common.errors.SpecError: every diagnostic of an invalid network.
    """
    found: list[str] = []
    try:
        if isinstance(source, Mapping):
            spec = network_from_doc(dict(source), strict=strict, warn=found.append)
        else:
            spec = load_network(source, strict=strict, warn=found.append)
    finally:  # also before the errors of a document that fails
        for line in found:
            warnings.warn(line, NetworkWarning, stacklevel=3)  # at load()'s caller
    return Network(spec, seed=seed, options=options, cache=cache, target=target)


class Network:
    """A network in the JSON network format, compiled on first use.

    `parameters()` are the reference's names and layouts (`<operator>.<index>`), in the
    order operators declare them, BatchNorm running statistics included."""

    def __init__(self, spec: NetworkSpec, *, seed: int = 0,
                 options: CompileOptions | None = None, cache: Any = ENV_CACHE,
                 target: str = "cpu"):
        from frame_mlir.frontends.network.lower import build_function, initial_values

        self.spec = spec
        self.options = options
        #: "cpu", or "cuda" / "cuda-emulator": every compiled function as CUDA kernels
        self.target = target
        #: the compile cache (a CompileCache, None for none; default: the environment's)
        self.cache = cache
        start = time.perf_counter()
        self._train_fn = build_function(spec, "train")  # also the shape check
        #: the frontend's seconds, reported with the first compile's timing
        self._frontend_seconds = time.perf_counter() - start
        self.param_infos: list[ParamInfo] = list(self._train_fn.params)
        self._params = initial_values(self.param_infos, seed)
        self.inputs = {i.name: i for i in spec.inputs}
        self._compiled: dict[str, Any] = {}
        self._staging = {i.name: np.zeros(i.shape, dtype=_dtype(i.dtype))
                         for i in spec.inputs}
        #: An after-pass hook for the compiles (`--print-ir-after-all`).
        self.after_pass: Callable[..., None] | None = None

    # -- parameters ----------------------------------------------------------------------
    @property
    def trainable(self) -> list[str]:
        """Names of the parameters a solver updates (not frozen, not statistics)."""
        return [p.name for p in self.param_infos if p.trainable]

    def parameters(self) -> dict[str, np.ndarray]:
        """Every parameter by name (copies), in declaration order."""
        return {p.name: self._params[p.name].copy() for p in self.param_infos}

    def set_parameters(self, values: Mapping[str, np.ndarray]) -> None:
        """Overwrite the named parameters (a subset is fine); unknown names and wrong
        shapes are a ValueError naming each, and nothing is changed then."""
        problems = []
        for name, arr in values.items():
            if name not in self._params:
                problems.append(f"unknown parameter '{name}'")
                continue
            a = np.asarray(arr)
            want = self._params[name].shape
            if a.shape != want:
                problems.append(f"parameter '{name}': shape expected {list(want)}, found "
                                f"{list(a.shape)}")
            elif a.dtype.kind not in "fiu":
                problems.append(f"parameter '{name}': expected numbers, found dtype "
                                f"{a.dtype}")
        if problems:
            raise ValueError("set_parameters: " + "; ".join(problems))
        for name, arr in values.items():
            np.copyto(self._params[name], np.asarray(arr, dtype=np.float32))

    def objective(self, outputs: Mapping[str, np.ndarray]) -> float:
        """The training objective of `outputs` (as `forward` or `Trainer.step` return
        them): the sum over the loss outputs of loss_weight times the sum of the
        output's elements -- the reference's objective, whose gradient seed is the
        weight on every element; for one-element losses, the weighted sum of the
        losses. Summed in float64."""
        return float(sum(o.loss_weight * float(np.sum(outputs[o.name], dtype=np.float64))
                         for o in self.spec.losses if o.loss_weight is not None))

    def load_weights(self, path: str | Path, *, allow_missing: bool = False) -> None:
        """Load `.dlp`, HDF5 or `.npz` weights (told apart by their first bytes); every
        missing, extra or mis-shaped tensor is reported at once (WeightsError)."""
        from frame_mlir.frontends.network.weights import load_weights

        expected = {p.name: (p.shape, np.dtype(np.float32)) for p in self.param_infos}
        self.set_parameters(load_weights(path, expected, allow_missing=allow_missing))

    def save_weights(self, path: str | Path) -> None:
        """Save every parameter to `.dlp`, `.h5`/`.hdf5` or `.npz` (by the suffix)."""
        from frame_mlir.frontends.network.weights import save_weights

        save_weights(path, self._params)

    # -- feeds ---------------------------------------------------------------------------
    def _feed(self, feed: Mapping[str, Any]) -> None:
        """Copy `feed` into the staging buffers, checking names, shapes and dtypes."""
        if not isinstance(feed, Mapping):
            raise ValueError(f"feed: expected a dict of input name -> array, found "
                             f"{type(feed).__name__}")
        extra = [k for k in feed if k not in self.inputs]
        if extra:
            raise ValueError(f"feed: unknown input(s) {', '.join(map(repr, extra))} "
                             f"(the network's inputs: {', '.join(self.inputs)})")
        for name, decl in self.inputs.items():
            if name not in feed:
                raise ValueError(f"feed: input '{name}' is missing (expected shape "
                                 f"{list(decl.shape)}, dtype {decl.dtype})")
            arr = np.asarray(feed[name])
            if arr.shape != decl.shape:
                raise ValueError(f"feed: input '{name}' expected shape {list(decl.shape)}, "
                                 f"found {list(arr.shape)}")
            if decl.dtype == "int":
                if arr.dtype.kind not in "iu":
                    raise ValueError(f"feed: input '{name}' expected an integer array "
                                     f"(dtype int), found dtype {arr.dtype}")
            elif arr.dtype.kind not in "fiu":
                raise ValueError(f"feed: input '{name}' expected a float array, found "
                                 f"dtype {arr.dtype}")
            np.copyto(self._staging[name], arr, casting="unsafe")

    def _buffers(self, roles: list[ArgRole], stats: Mapping[str, np.ndarray] | None = None
                 ) -> list[np.ndarray]:
        out = []
        for r in roles:
            if r.kind == "input":
                out.append(self._staging[r.name])
            elif r.kind == "param":
                out.append(stats[r.name] if stats and r.name in stats else self._params[r.name])
            else:
                assert r.value is not None
                out.append(r.value)
        return out

    # -- compiled functions -------------------------------------------------------------
    def _compile(self, fns: list[Any]) -> Executable:
        from xdsl.dialects import builtin

        from frame_mlir import timing

        with timing.compile_session():
            timing.add_before("frontend", self._frontend_seconds)
            self._frontend_seconds = 0.0
            return self._compile_module(builtin.ModuleOp(list(fns)))

    def _compile_module(self, module: Any) -> Executable:
        # "cuda": the same functions as CUDA kernels (the same interface, no cache)
        return compile_step_module(module, target=self.target, options=self.options,
                                   after_pass=self.after_pass, cache=self.cache)

    def _train(self) -> tuple[BuiltFunction, BoundFunction, BoundFunction | None]:
        """The training forward and (with losses) its gradient function."""
        if "train" not in self._compiled:
            built = self._train_fn
            ex = self._compile([built.fn.clone()])
            name = built.fn.sym_name.data
            fwd = BoundFunction(ex, ex.signatures[name])
            grad = BoundFunction(ex, ex.signatures[f"{name}_grad"]) if built.has_loss else None
            self._compiled["train"] = (built, fwd, grad, ex)
        built, fwd, grad, _ = self._compiled["train"]
        return built, fwd, grad

    def _test(self) -> tuple[BuiltFunction, BoundFunction]:
        if "test" not in self._compiled:
            from frame_mlir.frontends.network.lower import build_function

            built = build_function(self.spec, "test")
            ex = self._compile([built.fn])
            self._compiled["test"] = (built, BoundFunction(ex, ex.signatures[built.fn.sym_name.data]),
                                      ex)
        built, bound, _ = self._compiled["test"]
        return built, bound

    def compile(self, test_mode: bool = False) -> None:
        """Compile the training function and its gradient now (and, with `test_mode`,
        the test-mode function) rather than at their first use."""
        self._train()
        if test_mode:
            self._test()

    def _outputs(self, built: BuiltFunction, bound: BoundFunction) -> dict[str, np.ndarray]:
        return {name: bound.outputs[i].copy() for i, name in enumerate(built.outputs)}

    def _gradient_buffers(self, built: BuiltFunction, grad: BoundFunction) -> list[np.ndarray]:
        """The gradient function's out-buffers of the trainable parameters' gradients:
        its results are the outputs, the loss, the statistics, then the gradients."""
        first = len(built.outputs) + 1 + len(built.stats)
        return [grad.outputs[first + k] for k in range(len(self.trainable))]

    def forward(self, feed: Mapping[str, Any], test_mode: bool = True
                ) -> dict[str, np.ndarray]:
        """Every declared output for `feed`. `test_mode=False` runs the training graph
        (BatchNorm uses and updates its batch statistics, as the reference's forward in
        training mode does)."""
        self._feed(feed)
        if test_mode:
            built, bound = self._test()
            bound.call(self._buffers(built.roles))
            return self._outputs(built, bound)
        built, fwd, _ = self._train()
        fwd.call(self._buffers(built.roles))
        return self._outputs(built, fwd)

    def gradients(self, feed: Mapping[str, Any], update_statistics: bool = False
                  ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(every output, the loss gradient of every trainable parameter), in training
        mode, without updating parameters -- nor the BatchNorm running statistics unless
        `update_statistics`."""
        built, grad = self._grad_call(feed, update_statistics)
        grads = self._gradient_buffers(built, grad)
        return self._outputs(built, grad), {
            name: g.copy() for name, g in zip(self.trainable, grads, strict=True)}

    def _grad_call(self, feed: Mapping[str, Any], update_statistics: bool
                   ) -> tuple[BuiltFunction, BoundFunction]:
        self._feed(feed)
        built, _, grad = self._train()
        if grad is None:
            raise ValueError("the network has no loss output (an output named 'loss...' "
                             "or given with a loss_weight): there is nothing to "
                             "differentiate")
        stats = None if update_statistics else {
            n: self._params[n].copy() for n in built.stats}
        grad.call(self._buffers(built.roles, stats))
        return built, grad

    def trainer(self, solver: SGD | Adam, *, warn_divergence: bool = True) -> Trainer:
        """A trainer updating this network's parameters in place with `solver`;
        `warn_divergence=False` for a caller that reports a non-finite loss itself
        (frame-run)."""
        return Trainer(self, solver, warn_divergence=warn_divergence)


class Trainer(TrainerState):
    """Steps of a solver on a network; the solver's fields are read at every step."""

    def __init__(self, network: Network, solver: SGD | Adam, *,
                 warn_divergence: bool = True):
        if not isinstance(solver, SGD | Adam):
            raise TypeError(f"trainer: expected frame_mlir.network.SGD or Adam, found "
                            f"{type(solver).__name__}")
        solver.check()
        self.network = network
        self.solver = solver
        from frame_mlir import optim

        names = network.trainable
        if not names:
            raise ValueError("trainer: the network has no trainable parameter")
        shapes = [(n, network._params[n].shape) for n in names]
        fn_name = f"{network._train_fn.fn.sym_name.data}_{solver.kind}"
        fn = optim.build_update_function(fn_name, update_config(solver.kind), shapes)
        ex = network._compile([fn])
        self._update = BoundFunction(ex, ex.signatures[fn_name])
        self._ex = ex
        #: the solver's state buffers, hyperparameters and step count
        self.optimizer = OptimizerState(optim.state_names(update_config(solver.kind)),
                                        dict(shapes), len(solver.hyper(1)))
        # A RuntimeWarning, once, for the first step whose loss is not finite (as
        # frame-run and frame-kyn train warn): the step goes on as asked, but nan
        # outputs alone leave the user guessing where it went wrong.
        self._divergence = DivergenceWatch(self._warn if warn_divergence else None)

    def step(self, feed: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """One training step on `feed`: returns every output as computed before the
        update, then updates the parameters and BatchNorm statistics in place."""
        self.solver.check()
        net = self.network
        built, grad = net._grad_call(feed, update_statistics=True)
        self.optimizer.t += 1
        self.optimizer.set_hyper(self.solver.hyper(self.t))
        self._update.call(self.optimizer.update_args(net._params,
                                                     net._gradient_buffers(built, grad)))
        outputs = net._outputs(built, grad)
        if not self._divergence.seen:
            for o in self.network.spec.losses:
                if self._divergence.check_all(
                        outputs[o.name], lambda _, v, name=o.name: (
                            f"frame_mlir.network: training diverged: the loss '{name}' "
                            f"first became {v:.9g} at step {self.t} (Trainer.t; the "
                            f"learning rate {self.solver.lr:g} may be too large)")):
                    break
        return outputs

    @staticmethod
    def _warn(message: str) -> None:
        # stacklevel: _warn < DivergenceWatch.check < check_all < step < the caller
        warnings.warn(message, RuntimeWarning, stacklevel=5)


def _dtype(name: str) -> np.dtype:
    return np.dtype(np.int32 if name == "int" else np.float32)
