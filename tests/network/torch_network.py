"""A PyTorch interpreter of the dlprimitives JSON network format: the oracle of our frontend.

Test/bench-only code, written from the format description (the seed) and the facts of
the reference implementation (shared/dlprim/README.md), independently of our compiler:

* `TorchNetwork(doc, params)` runs a network document in PyTorch autograd, every
  operator and option of the format, with dlprimitives' parameter names and layouts
  (`<operator>.<index>`, or the operator's explicit `params` names; shared names share
  one tensor). `forward(feed)` returns every tensor of the network by name, `loss(...)`
  the weighted sum of the loss outputs, `state()` every parameter (BatchNorm running
  statistics included) as float32 numpy.
* `torch_solver(kind, params, lr, ...)` mirrors dlprimitives' SGD and Adam (or, with
  `semantics="torch"`, torch.optim's SGD) on the trainable parameters.

Option defaults (the seed's, completed from the conformance cases' option sets):

    SoftmaxWithLoss     -
    NLLLoss, MSELoss    reduce "mean" (none | mean | sum)
    Softmax             log false
    Activation          activation "identity"
    Elementwise         operation "sum", coef1 1, coef2 1, activation "identity"
    Pooling2D           mode "max", kernel (required), stride 1, pad 0,
                        count_include_pad false, ceil_mode false
    GlobalPooling       mode "max"
    InnerProduct        outputs (required), inputs deduced, bias true, activation "identity"
    Convolution2D       channels_out (required), channels_in deduced, groups 1, bias true,
                        kernel (required), stride 1, pad 0, dilate 1, activation "identity"
    TransposedConv2D    as Convolution2D + output_pad 0
    BatchNorm           features deduced, eps 1e-5, momentum 0.1, affine true,
                        use_global_stats false
    Concat              dim 1
    Slice               dim 1, begin 0, end = size
    Flatten             -
    Squeeze             dims [], all = (dims empty)
    Reshape             dims (required; 0 keeps the input's extent, -1 is deduced)
    Threshold           threshold 0
    Hardtanh            min_val -1, max_val 1
    Abs                 -
    Parameter           shape (required), dtype "float"
    Reduction           method "sum" (sum | sumsq | abssum | mean), dims or start_axis
                        (default start_axis 0: everything), keep_dim false, output_scale 1
    Interpolation       method "nearest" (nearest | nearest-exact | bilinear),
                        out_h/out_w or scale_y/scale_x (-1 = not given), align_corners false

The cases always spell out Reduction's method/keep_dim and every Interpolation option,
so those defaults are this oracle's choice, not a dlprimitives fact.
The `*_algo` options of the convolutions pick GPU kernels only and are ignored here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

ACTIVATIONS = ("relu", "sigmoid", "tanh", "relu6", "identity")


def activation(name: str | None, x: torch.Tensor) -> torch.Tensor:
    """One of the format's standard activations (None = identity)."""
    if name is None or name == "identity":
        return x
    if name == "relu":
        return F.relu(x)
    if name == "sigmoid":
        return torch.sigmoid(x)
    if name == "tanh":
        return torch.tanh(x)
    if name == "relu6":
        return F.relu6(x)
    raise ValueError(f"unknown activation {name!r} (one of {', '.join(ACTIVATIONS)})")


def pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    """An int or [h, w] option as (h, w)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected an integer or a pair, got {value!r}")
    if isinstance(value, int):
        return (value, value)
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return (int(value[0]), int(value[1]))
    raise ValueError(f"{what}: expected an integer or a pair, got {value!r}")


def _scalar(y: torch.Tensor) -> torch.Tensor:
    """dlprimitives has no rank-0 tensors: a scalar result has shape [1]."""
    return y.reshape(1) if y.dim() == 0 else y


class _ParamSpec:
    __slots__ = ("shape", "trainable", "buffer")

    def __init__(self, shape: Sequence[int], trainable: bool, buffer: bool) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.trainable = trainable
        self.buffer = buffer


class TorchNetwork(torch.nn.Module):
    """A network document run by PyTorch.

    `params`: parameter name -> array in dlprimitives' names and layouts. Parameters
    missing from it are initialised per dlprimitives' default distributions from a
    numpy generator seeded with `seed` (BatchNorm: mean 0, var 1, gamma 1, beta 0;
    Parameter: zeros, dlprimitives leaves it uninitialised). `shapes_only`: run the
    shape pass alone (`shapes`, `param_specs`), creating no tensors; see `infer_shapes`.
    """

    def __init__(self, doc: Mapping[str, Any], params: Mapping[str, np.ndarray] | None = None,
                 *, seed: int = 0, shapes_only: bool = False) -> None:
        super().__init__()
        params = {} if params is None else params
        self.doc = doc
        self.inputs: list[dict[str, Any]] = []
        for spec in doc.get("inputs", []):
            dtype = spec.get("dtype", "float")
            if dtype not in ("float", "int"):
                raise ValueError(f"input {spec.get('name')!r}: unknown dtype {dtype!r}")
            self.inputs.append({"name": spec.get("name", "data"),
                                "shape": [int(s) for s in spec["shape"]], "dtype": dtype})
        self.output_names: list[str] = []
        self.loss_weights: dict[str, float] = {}
        for out in doc.get("outputs", []):
            if isinstance(out, str):
                name, weight = out, (1.0 if out.startswith("loss") else None)
            else:
                name = out["name"]
                if "loss_weight" in out:
                    weight = float(out["loss_weight"])
                else:
                    weight = 1.0 if name.startswith("loss") else None
            self.output_names.append(name)
            if weight is not None:
                self.loss_weights[name] = weight
        self.operators: list[dict[str, Any]] = [dict(op) for op in doc.get("operators", [])]

        # Parameter specs from a shape pass on the meta device.
        self._specs: dict[str, _ParamSpec] = {}
        self._op_params: list[list[str]] = []
        self._slot: dict[str, str] = {}  # parameter name -> attribute name
        rng = np.random.default_rng(seed)
        meta: dict[str, torch.Tensor] = {}
        for spec in self.inputs:
            dt = torch.float32 if spec["dtype"] == "float" else torch.int64
            meta[spec["name"]] = torch.empty(spec["shape"], dtype=dt, device="meta")
        self._meta_params: dict[str, torch.Tensor] = {}
        names_seen: set[str] = set()
        for op in self.operators:
            name = op.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError(f"operator without a name: {op!r}")
            if name in names_seen:
                raise ValueError(f"duplicate operator name {name!r}")
            names_seen.add(name)
            for t in op.get("inputs", []):
                if t not in meta:
                    raise ValueError(f"operator {name!r}: unknown input tensor {t!r}")
            ins = [meta[t] for t in op.get("inputs", [])]
            specs = self._param_specs(op, [tuple(t.shape) for t in ins])
            explicit = op.get("params", []) or []
            pnames = []
            for i, spec in enumerate(specs):
                given = explicit[i] if i < len(explicit) else ""
                pname = given if given and given != "auto" else f"{name}.{i}"
                if op.get("frozen", False):
                    spec.trainable = False
                if pname in self._specs:
                    old = self._specs[pname]
                    if (old.shape, old.trainable, old.buffer) != (spec.shape, spec.trainable,
                                                                  spec.buffer):
                        raise ValueError(f"shared parameter {pname!r}: operator {name!r} "
                                         f"wants {spec.shape} (trainable={spec.trainable}), "
                                         f"it is {old.shape} (trainable={old.trainable})")
                else:
                    self._specs[pname] = spec
                    if not shapes_only:
                        self._create(pname, spec, op, i, params, rng)
                    self._meta_params[pname] = torch.empty(spec.shape, device="meta")
                pnames.append(pname)
            self._op_params.append(pnames)
            outs = self._run_op(op, ins, [self._meta_params[p] for p in pnames], False)
            if len(outs) != len(op.get("outputs", [])):
                raise ValueError(f"operator {name!r}: {len(op.get('outputs', []))} outputs "
                                 f"declared, {op['type']} makes {len(outs)}")
            for t, v in zip(op["outputs"], outs, strict=True):
                meta[t] = v
        for out in self.output_names:
            if out not in meta:
                raise ValueError(f"output {out!r} is not a tensor of the network")
        unknown = set(params) - set(self._specs)
        if unknown:
            raise ValueError(f"parameters not in the network: {sorted(unknown)}")
        self.shapes: dict[str, tuple[int, ...]] = {k: tuple(v.shape) for k, v in meta.items()}
        del self._meta_params

    # -- parameters -------------------------------------------------------------------

    def _create(self, pname: str, spec: _ParamSpec, op: Mapping[str, Any], index: int,
                params: Mapping[str, np.ndarray], rng: np.random.Generator) -> None:
        if pname in params:
            value = np.asarray(params[pname], dtype=np.float32)
            if tuple(value.shape) != spec.shape:
                if value.size == math.prod(spec.shape):
                    value = value.reshape(spec.shape)
                else:
                    raise ValueError(f"parameter {pname!r}: shape {value.shape}, "
                                     f"the network wants {spec.shape}")
        else:
            value = self._init_value(op, index, spec, rng)
        tensor = torch.tensor(value, dtype=torch.float32)
        slot = f"p{len(self._slot)}"
        self._slot[pname] = slot
        if spec.buffer:
            self.register_buffer(slot, tensor)
        else:
            self.register_parameter(slot, torch.nn.Parameter(tensor,
                                                             requires_grad=spec.trainable))

    @staticmethod
    def _init_value(op: Mapping[str, Any], index: int, spec: _ParamSpec,
                    rng: np.random.Generator) -> np.ndarray:
        shape, kind, opts = spec.shape, op["type"], op.get("options", {}) or {}
        if kind == "InnerProduct":
            r = 1.0 / math.sqrt(op["__inputs"])
        elif kind == "Convolution2D":
            groups = int(opts.get("groups", 1))
            kh, kw = pair(opts["kernel"], "kernel")
            r = math.sqrt(groups / (op["__cin"] * kh * kw))
        elif kind == "TransposedConvolution2D":
            groups = int(opts.get("groups", 1))
            kh, kw = pair(opts["kernel"], "kernel")
            r = math.sqrt(groups / (int(opts["channels_out"]) * kh * kw))
        elif kind == "BatchNorm":
            fill = (0.0, 1.0, 1.0, 0.0)[index]
            return np.full(shape, fill, dtype=np.float32)
        else:
            return np.zeros(shape, dtype=np.float32)
        return rng.uniform(-r, r, size=shape).astype(np.float32)

    @property
    def param_specs(self) -> dict[str, tuple[tuple[int, ...], bool]]:
        """Parameter name -> (shape, trainable), in creation (operator) order."""
        return {n: (s.shape, s.trainable) for n, s in self._specs.items()}

    def param(self, name: str) -> torch.Tensor:
        """The tensor of parameter `name` (an nn.Parameter, or a buffer for running stats)."""
        return getattr(self, self._slot[name])

    @property
    def param_names(self) -> list[str]:
        """Every parameter name, in creation (operator) order."""
        return list(self._specs)

    def trainable(self) -> dict[str, torch.nn.Parameter]:
        """The trainable parameters by name (what a solver updates)."""
        return {n: self.param(n) for n in self._slot
                if not self._specs[n].buffer and self._specs[n].trainable}

    def state(self) -> dict[str, np.ndarray]:
        """Every parameter, running statistics included, as float32 numpy (copies)."""
        return {n: self.param(n).detach().cpu().numpy().astype(np.float32, copy=True)
                for n in self._slot}

    def _param_specs(self, op: dict[str, Any], in_shapes: list[tuple[int, ...]]
                     ) -> list[_ParamSpec]:
        kind = op.get("type")
        opts = op.get("options", {}) or {}
        if kind == "InnerProduct":
            inputs = math.prod(in_shapes[0][1:])
            if "inputs" in opts and int(opts["inputs"]) != inputs:
                raise ValueError(f"{op['name']}: inputs {opts['inputs']} but the input "
                                 f"has {inputs} features")
            op["__inputs"] = inputs
            outs = int(opts["outputs"])
            specs = [_ParamSpec((outs, inputs), True, False)]
            if opts.get("bias", True):
                specs.append(_ParamSpec((outs,), True, False))
            return specs
        if kind in ("Convolution2D", "TransposedConvolution2D"):
            cin = in_shapes[0][1]
            if "channels_in" in opts and int(opts["channels_in"]) != cin:
                raise ValueError(f"{op['name']}: channels_in {opts['channels_in']} but the "
                                 f"input has {cin} channels")
            op["__cin"] = cin
            cout, groups = int(opts["channels_out"]), int(opts.get("groups", 1))
            if cin % groups or cout % groups:
                raise ValueError(f"{op['name']}: groups {groups} must divide channels "
                                 f"{cin} -> {cout}")
            kh, kw = pair(opts["kernel"], "kernel")
            if kind == "Convolution2D":
                w = (cout, cin // groups, kh, kw)
            else:
                w = (cin, cout // groups, kh, kw)
            specs = [_ParamSpec(w, True, False)]
            if opts.get("bias", True):
                specs.append(_ParamSpec((cout,), True, False))
            return specs
        if kind == "BatchNorm":
            if len(in_shapes[0]) not in (2, 3, 4):
                raise ValueError(f"{op['name']}: BatchNorm wants a 2-D, 3-D or 4-D input")
            features = in_shapes[0][1]
            if "features" in opts and int(opts["features"]) != features:
                raise ValueError(f"{op['name']}: features {opts['features']} but the input "
                                 f"has {features}")
            specs = [_ParamSpec((features,), False, True), _ParamSpec((features,), False, True)]
            if opts.get("affine", True):
                specs += [_ParamSpec((features,), True, False),
                          _ParamSpec((features,), True, False)]
            return specs
        if kind == "Parameter":
            if opts.get("dtype", "float") != "float":
                raise ValueError(f"{op['name']}: only float parameters")
            return [_ParamSpec(tuple(int(s) for s in opts["shape"]), True, False)]
        return []

    # -- forward ----------------------------------------------------------------------

    def forward(self, feed: Mapping[str, torch.Tensor], test_mode: bool = False
                ) -> dict[str, torch.Tensor]:
        """Every tensor of the network by name (inputs included; in-place rebinds).
        Float inputs take the parameters' dtype: float32, or float64 after `.double()`."""
        dtype = next((t.dtype for t in (*self.parameters(), *self.buffers())
                      if t.is_floating_point()), torch.float32)
        env: dict[str, torch.Tensor] = {}
        for spec in self.inputs:
            name = spec["name"]
            if name not in feed:
                raise KeyError(f"no value fed for input {name!r}")
            value = feed[name]
            if not isinstance(value, torch.Tensor):
                value = torch.as_tensor(np.asarray(value))
            if spec["dtype"] == "float":
                value = value.to(dtype)
            env[name] = value
        for op, pnames in zip(self.operators, self._op_params, strict=True):
            ins = [env[t] for t in op.get("inputs", [])]
            outs = self._run_op(op, ins, [self.param(p) for p in pnames], test_mode)
            for t, v in zip(op["outputs"], outs, strict=True):
                env[t] = v
        return env

    def loss(self, outputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """sum over loss outputs of loss_weight * sum(output): dlprimitives seeds each loss
        output's gradient with its weight (a reduce-none loss: every element)."""
        total = None
        for name, weight in self.loss_weights.items():
            term = weight * outputs[name].sum()
            total = term if total is None else total + term
        if total is None:
            raise ValueError("the network has no loss output")
        return total

    def _run_op(self, op: Mapping[str, Any], ins: list[torch.Tensor],
                params: list[torch.Tensor], test_mode: bool) -> list[torch.Tensor]:
        kind = op.get("type")
        opts = op.get("options", {}) or {}
        handler = getattr(self, f"_op_{kind}", None)
        if handler is None:
            raise ValueError(f"operator {op.get('name')!r}: unknown type {kind!r}")
        out = handler(opts, ins, params, test_mode)
        return out if isinstance(out, list) else [out]

    @staticmethod
    def _reduction(opts: Mapping[str, Any]) -> str:
        red = opts.get("reduce", "mean")
        if red not in ("none", "mean", "sum"):
            raise ValueError(f"unknown reduce {red!r}")
        return red

    def _op_SoftmaxWithLoss(self, opts, ins, params, test_mode):
        x, label = ins
        return _scalar(F.nll_loss(F.log_softmax(x, dim=1), label.long()))

    def _op_NLLLoss(self, opts, ins, params, test_mode):
        x, label = ins
        red = self._reduction(opts)
        return _scalar(F.nll_loss(x, label.long(), reduction=red))

    def _op_MSELoss(self, opts, ins, params, test_mode):
        a, b = ins
        return _scalar(F.mse_loss(a, b, reduction=self._reduction(opts)))

    def _op_Softmax(self, opts, ins, params, test_mode):
        (x,) = ins
        return F.log_softmax(x, dim=1) if opts.get("log", False) else F.softmax(x, dim=1)

    def _op_Activation(self, opts, ins, params, test_mode):
        (x,) = ins
        return activation(opts.get("activation", "identity"), x)

    def _op_Elementwise(self, opts, ins, params, test_mode):
        a, b = ins
        a = a * float(opts.get("coef1", 1.0))
        b = b * float(opts.get("coef2", 1.0))
        operation = opts.get("operation", "sum")
        if operation == "sum":
            y = a + b
        elif operation == "prod":
            y = a * b
        elif operation == "max":
            y = torch.maximum(a, b)
        else:
            raise ValueError(f"unknown Elementwise operation {operation!r}")
        return activation(opts.get("activation", "identity"), y)

    def _op_Pooling2D(self, opts, ins, params, test_mode):
        (x,) = ins
        kernel = pair(opts["kernel"], "kernel")
        stride = pair(opts.get("stride", 1), "stride")
        pad = pair(opts.get("pad", 0), "pad")
        ceil_mode = bool(opts.get("ceil_mode", False))
        mode = opts.get("mode", "max")
        if mode == "max":
            return F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil_mode)
        if mode == "avg":
            return F.avg_pool2d(x, kernel, stride, pad, ceil_mode=ceil_mode,
                                count_include_pad=bool(opts.get("count_include_pad", False)))
        raise ValueError(f"unknown pooling mode {mode!r}")

    def _op_GlobalPooling(self, opts, ins, params, test_mode):
        (x,) = ins
        mode = opts.get("mode", "max")
        if mode == "max":
            return F.adaptive_max_pool2d(x, 1)
        if mode == "avg":
            return F.adaptive_avg_pool2d(x, 1)
        raise ValueError(f"unknown pooling mode {mode!r}")

    def _op_InnerProduct(self, opts, ins, params, test_mode):
        (x,) = ins
        x = x.reshape(x.shape[0], -1)
        y = F.linear(x, params[0], params[1] if len(params) > 1 else None)
        return activation(opts.get("activation", "identity"), y)

    def _op_Convolution2D(self, opts, ins, params, test_mode):
        (x,) = ins
        y = F.conv2d(x, params[0], params[1] if len(params) > 1 else None,
                     stride=pair(opts.get("stride", 1), "stride"),
                     padding=pair(opts.get("pad", 0), "pad"),
                     dilation=pair(opts.get("dilate", 1), "dilate"),
                     groups=int(opts.get("groups", 1)))
        return activation(opts.get("activation", "identity"), y)

    def _op_TransposedConvolution2D(self, opts, ins, params, test_mode):
        (x,) = ins
        y = F.conv_transpose2d(x, params[0], params[1] if len(params) > 1 else None,
                               stride=pair(opts.get("stride", 1), "stride"),
                               padding=pair(opts.get("pad", 0), "pad"),
                               output_padding=pair(opts.get("output_pad", 0), "output_pad"),
                               groups=int(opts.get("groups", 1)),
                               dilation=pair(opts.get("dilate", 1), "dilate"))
        return activation(opts.get("activation", "identity"), y)

    def _op_BatchNorm(self, opts, ins, params, test_mode):
        (x,) = ins
        mean, var = params[0], params[1]
        gamma = params[2] if len(params) > 2 else None
        beta = params[3] if len(params) > 3 else None
        training = not test_mode and not opts.get("use_global_stats", False)
        # torch's training batch_norm: batch mean and biased variance normalise; the running
        # stats take momentum * (batch mean, unbiased variance), updated in place.
        return F.batch_norm(x, mean, var, gamma, beta, training=training,
                            momentum=float(opts.get("momentum", 0.1)),
                            eps=float(opts.get("eps", 1e-5)))

    def _op_Concat(self, opts, ins, params, test_mode):
        return torch.cat(ins, dim=int(opts.get("dim", 1)))

    def _op_Slice(self, opts, ins, params, test_mode):
        (x,) = ins
        dim = int(opts.get("dim", 1))
        size = x.shape[dim]
        begin = int(opts.get("begin", 0))
        end = opts.get("end")
        end = size if end is None else int(end)
        begin, end = (begin + size if begin < 0 else begin), (end + size if end < 0 else end)
        end = min(end, size)
        if not 0 <= begin < end:
            raise ValueError(f"Slice: empty range [{begin}, {end}) of extent {size}")
        return x.narrow(dim, begin, end - begin)

    def _op_Flatten(self, opts, ins, params, test_mode):
        (x,) = ins
        return x.reshape(x.shape[0], -1)

    def _op_Squeeze(self, opts, ins, params, test_mode):
        (x,) = ins
        dims = [int(d) for d in opts.get("dims", []) or []]
        squeeze_all = bool(opts.get("all", not dims))
        if squeeze_all:
            shape = [s for s in x.shape if s != 1]
        else:
            rank = x.dim()
            norm = {d + rank if d < 0 else d for d in dims}
            for d in norm:
                if not 0 <= d < rank or x.shape[d] != 1:
                    raise ValueError(f"Squeeze: dim {d} of shape {list(x.shape)} is not 1")
            shape = [s for i, s in enumerate(x.shape) if i not in norm]
        return x.reshape(shape or [1])

    def _op_Reshape(self, opts, ins, params, test_mode):
        (x,) = ins
        dims = [int(d) for d in opts["dims"]]
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
        return x.reshape(shape)

    def _op_Threshold(self, opts, ins, params, test_mode):
        (x,) = ins
        return (x.detach() > float(opts.get("threshold", 0.0))).to(x.dtype)

    def _op_Hardtanh(self, opts, ins, params, test_mode):
        (x,) = ins
        return F.hardtanh(x, float(opts.get("min_val", -1.0)), float(opts.get("max_val", 1.0)))

    def _op_Abs(self, opts, ins, params, test_mode):
        (x,) = ins
        return torch.abs(x)

    def _op_Parameter(self, opts, ins, params, test_mode):
        if ins:
            raise ValueError("Parameter takes no inputs")
        return params[0]

    def _op_Reduction(self, opts, ins, params, test_mode):
        (x,) = ins
        rank = x.dim()
        if "dims" in opts and opts["dims"] is not None:
            dims = sorted({int(d) + rank if int(d) < 0 else int(d) for d in opts["dims"]})
        else:
            start = int(opts.get("start_axis", 0))
            start = start + rank if start < 0 else start
            dims = list(range(start, rank))
        if not dims or not all(0 <= d < rank for d in dims):
            raise ValueError(f"Reduction: bad axes {opts} for rank {rank}")
        keep = bool(opts.get("keep_dim", False))
        method = opts.get("method", "sum")
        if method == "sum":
            y = x.sum(dim=dims, keepdim=keep)
        elif method == "sumsq":
            y = (x * x).sum(dim=dims, keepdim=keep)
        elif method == "abssum":
            y = x.abs().sum(dim=dims, keepdim=keep)
        elif method == "mean":
            y = x.mean(dim=dims, keepdim=keep)
        else:
            raise ValueError(f"unknown Reduction method {method!r}")
        return _scalar(y * float(opts.get("output_scale", 1.0)))

    def _op_Interpolation(self, opts, ins, params, test_mode):
        (x,) = ins
        method = opts.get("method", "nearest")
        if method not in ("nearest", "nearest-exact", "bilinear"):
            raise ValueError(f"unknown Interpolation method {method!r}")
        out_h, out_w = int(opts.get("out_h", -1)), int(opts.get("out_w", -1))
        sy, sx = float(opts.get("scale_y", -1)), float(opts.get("scale_x", -1))
        align = bool(opts.get("align_corners", False)) if method == "bilinear" else None
        if out_h > 0 and out_w > 0:
            return F.interpolate(x, size=(out_h, out_w), mode=method, align_corners=align)
        if sy > 0 and sx > 0:
            return F.interpolate(x, scale_factor=(sy, sx), mode=method, align_corners=align)
        raise ValueError(f"Interpolation: give out_h/out_w or scale_y/scale_x: {opts}")


def infer_shapes(doc: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape for the document's declared input shapes (no tensors made)."""
    return TorchNetwork(doc, shapes_only=True).shapes


# -- solvers ------------------------------------------------------------------------------


def _trainable(params: Iterable[torch.Tensor] | Mapping[str, torch.Tensor]
               ) -> list[torch.Tensor]:
    values = params.values() if isinstance(params, Mapping) else params
    return [p for p in values if isinstance(p, torch.Tensor) and p.requires_grad]


class _DlprimSGD:
    """v = g + momentum*v; p = (1 - weight_decay)*p - lr*v (decay not scaled by lr).

    `cpu_quirk`: dlprimitives' CPU AXPBY overwrites its aliased input first, so the
    velocity it actually keeps is v = (1 + momentum)*g.
    """

    def __init__(self, params, lr, momentum, weight_decay, cpu_quirk=False):
        self.params = params
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.cpu_quirk = cpu_quirk
        self.velocity = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self) -> None:
        for p, v in zip(self.params, self.velocity, strict=True):
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            if self.cpu_quirk:
                v.copy_((1.0 + self.momentum) * g)
            else:
                v.mul_(self.momentum).add_(g)
            p.mul_(1.0 - self.weight_decay).sub_(self.lr * v)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


class _DlprimAdam:
    """g' = g + wd*p; m, v moments; p -= lr * m_hat / (sqrt(v_hat) + eps), t += 1 per step."""

    def __init__(self, params, lr, beta1, beta2, eps, weight_decay):
        self.params = params
        self.lr, self.beta1, self.beta2 = lr, beta1, beta2
        self.eps, self.weight_decay = eps, weight_decay
        self.t = 0
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        c1 = 1.0 - self.beta1 ** self.t
        c2 = 1.0 - self.beta2 ** self.t
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            g = g + self.weight_decay * p
            m.mul_(self.beta1).add_((1.0 - self.beta1) * g)
            v.mul_(self.beta2).add_((1.0 - self.beta2) * g * g)
            p.sub_(self.lr * (m / c1) / (torch.sqrt(v / c2) + self.eps))

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


def torch_solver(kind: str, params: Iterable[torch.Tensor] | Mapping[str, torch.Tensor],
                 lr: float | None = None, momentum: float = 0.9, weight_decay: float = 5e-4,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 semantics: str = "dlprim") -> Any:
    """A solver with `.step()` (after backward) and `.zero_grad()` over the trainable
    (`requires_grad`) tensors of `params`; defaults are dlprimitives' (SGD lr 0.1,
    Adam lr 1e-3).

    semantics "dlprim": the README's SGD / Adam; "dlprim_cpu": SGD with dlprimitives'
    CPU aliasing quirk (v = (1 + momentum)*g); "torch": torch.optim.SGD(lr, momentum,
    weight_decay) / torch.optim.Adam(lr, (beta1, beta2), eps, weight_decay).
    """
    ps = _trainable(params)
    kind = kind.lower()
    if kind == "sgd":
        lr = 0.1 if lr is None else lr
        if semantics == "torch":
            return torch.optim.SGD(ps, lr=lr, momentum=momentum, weight_decay=weight_decay)
        if semantics in ("dlprim", "dlprim_cpu"):
            return _DlprimSGD(ps, lr, momentum, weight_decay,
                              cpu_quirk=semantics == "dlprim_cpu")
    elif kind == "adam":
        lr = 1e-3 if lr is None else lr
        if semantics == "torch":
            return torch.optim.Adam(ps, lr=lr, betas=(beta1, beta2), eps=eps,
                                    weight_decay=weight_decay)
        if semantics in ("dlprim", "dlprim_cpu"):
            return _DlprimAdam(ps, lr, beta1, beta2, eps, weight_decay)
    else:
        raise ValueError(f"unknown solver {kind!r} (sgd or adam)")
    raise ValueError(f"unknown semantics {semantics!r} (dlprim, dlprim_cpu or torch)")
