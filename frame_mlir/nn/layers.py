"""The later nn Modules of the frame API sheet (§7.2): normalisation, attention,
wavelets, recurrences (LSTM, LIF, Mamba), spiking and graph layers.

Each factory returns a `Module` (see `module.py`) whose build function emits frame
ops, composing the op library; children are ordinary Modules, so parameter names and
order follow the sheet. Time loops are unrolled (one step's ops per time step).
Checks of the arguments that the sheet makes build-time errors raise ValueError here
(the Python API layer adds its own input-shape and dtype checks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import SSAValue

from frame_mlir.dialects import frame
from frame_mlir.nn.graph import Graph
from frame_mlir.nn.init import Fill, UniformSeeded
from frame_mlir.nn.module import Conv, Linear, Module, ParamSpec

__all__ = ["AFF", "LSTM", "Dwt1d", "Dwt2d", "Fno1dBlock", "FourierFilter1d", "FourierMamba",
           "GraphConv", "HypergraphConv", "LIFCell", "LayerNorm", "Mamba",
           "MultiheadAttention", "SnnClassifier", "SpectralConv1d", "TransformerEncoderBlock",
           "WAVELETS"]


# --- small builders -------------------------------------------------------------------


def reshape(g: Graph, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    """Row-major reshape keeping x's element type."""
    return g.emit(frame.ReshapeOp(x, frame.tensor_type(shape, frame.element_type(x))))


def _columns(g: Graph, x: SSAValue, i: int, width: int) -> SSAValue:
    """Columns [i * width, (i + 1) * width) of a matrix."""
    return g.emit(frame.SliceOp(x, 1, i * width, (i + 1) * width))


def _ones_like(g: Graph, x: SSAValue) -> SSAValue:
    return g.emit(frame.ConstantOp(1.0, result_type=x.type))


def _inputs(name: str, inputs: Sequence[SSAValue], count: int) -> None:
    if len(inputs) != count:
        raise ValueError(f"{name}: expected {count} input{'s' if count > 1 else ''}, "
                         f"found {len(inputs)}")


# --- normalisation and attention ------------------------------------------------------


def LayerNorm(name: str, dim: int, eps: float = 1e-5) -> Module:
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last dim of [rows, dim]
    (population variance); gamma [dim] starts at 1, beta [dim] at 0."""
    params = (ParamSpec("gamma", (dim,), Fill(1.0)), ParamSpec("beta", (dim,), Fill(0.0)))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"LayerNorm '{name}'", inputs, 1)
        # eps becomes an f32 attribute: checked after rounding to float32, where 1e39 is
        # infinity (xDSL could not even pack it) and 1e-50 is 0.
        with np.errstate(over="ignore", under="ignore"):
            eps32 = float(np.float32(eps))
        if not (eps32 > 0 and math.isfinite(eps32)):
            raise ValueError(f"LayerNorm '{name}': eps must be finite and > 0 in float32, "
                             f"found {eps}")
        shape = frame.static_shape(inputs[0])
        if shape is None or len(shape) != 2 or shape[1] != dim:
            raise ValueError(f"LayerNorm '{name}': input expected [rows, {dim}], found "
                             f"{list(shape) if shape is not None else 'unranked'}")
        return [g.emit(frame.LayerNormOp(inputs[0], ps[0], ps[1], eps))]

    return Module(name, params, (), build)


def MultiheadAttention(name: str, batch: int, seq_len: int, embed_dim: int, num_heads: int,
                       with_bias: bool = True) -> Module:
    """Self-attention on x [batch * seq_len, E]: per batch and head,
    softmax(Q Kᵀ / sqrt(E / heads)) V, heads joined along columns, then `o`."""
    rows = batch * seq_len
    kids = tuple(Linear(k, rows, embed_dim, embed_dim, with_bias) for k in "qkvo")

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"MultiheadAttention '{name}'", inputs, 1)
        if num_heads < 1 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention '{name}': embed_dim {embed_dim} must be a "
                             f"multiple of num_heads {num_heads}")
        x = inputs[0]
        dh = embed_dim // num_heads
        parts = list(zip(mod.children, mod.child_param_slices(ps), strict=True))
        q, k, v = (m.build(g, [x], sl)[0] for m, sl in parts[:3])

        def heads(t: SSAValue) -> SSAValue:  # [B*S, E] -> [B, H, S, Dh]
            t4 = reshape(g, t, (batch, seq_len, num_heads, dh))
            return g.emit(frame.TransposeOp(t4, (0, 2, 1, 3)))
        scores = g.emit(frame.MatmulOp(heads(q), heads(k), transpose_rhs=True))
        probs = g.emit(frame.SoftmaxOp(g.emit(frame.ScaleOp(scores, 1.0 / math.sqrt(dh))), 3))
        ctx = g.emit(frame.MatmulOp(probs, heads(v)))  # [B, H, S, Dh]
        joined = reshape(g, g.emit(frame.TransposeOp(ctx, (0, 2, 1, 3))), (rows, embed_dim))
        return parts[3][0].build(g, [joined], parts[3][1])

    mod = Module(name, (), kids, build)
    return mod


def TransformerEncoderBlock(name: str, batch: int, seq_len: int, embed_dim: int,
                            num_heads: int, ffn_dim: int, with_bias: bool = True) -> Module:
    """Post-LN encoder block: y1 = ln1(x + mha(x)); y = ln2(y1 + ffn2(relu(ffn1(y1))))."""
    rows = batch * seq_len
    kids = (MultiheadAttention("mha", batch, seq_len, embed_dim, num_heads, with_bias),
            LayerNorm("ln1", embed_dim, 1e-5),
            Linear("ffn1", rows, embed_dim, ffn_dim, with_bias),
            Linear("ffn2", rows, ffn_dim, embed_dim, with_bias),
            LayerNorm("ln2", embed_dim, 1e-5))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"TransformerEncoderBlock '{name}'", inputs, 1)
        mha, ln1, ffn1, ffn2, ln2 = zip(mod.children, mod.child_param_slices(ps), strict=True)
        x = inputs[0]
        a = mha[0].build(g, [x], mha[1])[0]
        y1 = ln1[0].build(g, [g.emit(frame.AddOp(x, a))], ln1[1])[0]
        h = g.emit(frame.ReluOp(ffn1[0].build(g, [y1], ffn1[1])[0]))
        f = ffn2[0].build(g, [h], ffn2[1])[0]
        return ln2[0].build(g, [g.emit(frame.AddOp(y1, f))], ln2[1])

    mod = Module(name, (), kids, build)
    return mod


# --- AFF and wavelets -------------------------------------------------------------------


def AFF(name: str, channels: int) -> Module:
    """Attentional feature fusion of X, Y [N, C, H, W]:
    M = sigmoid(c2(relu(c1(X + Y)))); out = M * X + (1 - M) * Y (c1, c2: 1x1 convs)."""
    kids = tuple(Conv(c, channels, channels, [1, 1], [1, 1], [0, 0], 1, True)
                 for c in ("c1", "c2"))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"AFF '{name}'", inputs, 2)
        x, y = inputs
        if frame.static_shape(x) != frame.static_shape(y):
            raise ValueError(f"AFF '{name}': X and Y must have the same shape, found "
                             f"{list(frame.static_shape(x) or ())} and "
                             f"{list(frame.static_shape(y) or ())}")
        (c1, p1), (c2, p2) = zip(mod.children, mod.child_param_slices(ps), strict=True)
        h = g.emit(frame.ReluOp(c1.build(g, [g.emit(frame.AddOp(x, y))], p1)[0]))
        m = g.emit(frame.SigmoidOp(c2.build(g, [h], p2)[0]))
        keep = g.emit(frame.SubOp(_ones_like(g, m), m))
        return [g.emit(frame.AddOp(g.emit(frame.MulOp(m, x)), g.emit(frame.MulOp(keep, y))))]

    mod = Module(name, (), kids, build)
    return mod


_R = 1.0 / math.sqrt(2.0)
_H = [v / (4 * math.sqrt(2.0)) for v in (1 + math.sqrt(3), 3 + math.sqrt(3),
                                         3 - math.sqrt(3), 1 - math.sqrt(3))]
#: Wavelet kinds of Dwt1d: (low-pass, high-pass) filters.
WAVELETS: dict[str, tuple[list[float], list[float]]] = {
    "haar": ([_R, _R], [_R, -_R]),
    "db4": (list(_H), [_H[3], -_H[2], _H[1], -_H[0]]),
}
#: Dwt2d's haar bands LL, LH, HL, HH as row-major 2x2 kernels.
HAAR_2D = ([.5, .5, .5, .5], [.5, .5, -.5, -.5], [.5, -.5, .5, -.5], [.5, -.5, -.5, .5])


def Dwt2d(name: str, channels: int, wavelet_kind: str) -> Module:
    """One level of the 2-D haar transform: a grouped stride-2 conv with constant
    filters, [N, C, H, W] -> [N, 4C, H//2, W//2] (bands LL, LH, HL, HH per channel)."""
    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"Dwt2d '{name}'", inputs, 1)
        if wavelet_kind != "haar":
            raise ValueError(f"Dwt2d '{name}': wavelet '{wavelet_kind}' is not supported in "
                             "2-D (only 'haar')")
        x = inputs[0]
        _check_channels(f"Dwt2d '{name}'", x, channels, 4)
        w = np.array([HAAR_2D] * channels, np.float32).reshape(4 * channels, 1, 2, 2)
        return [g.emit(frame.ConvOp(x, g.constant(w, x), [2, 2], [0, 0], channels))]

    return Module(name, (), (), build)


def Dwt1d(name: str, channels: int, wavelet_kind: str) -> Module:
    """One level of the 1-D wavelet transform: a grouped stride-2 conv with constant
    filters, [N, C, L] -> [N, 2C, (L - K)//2 + 1] (low-pass, high-pass per channel)."""
    low, high = WAVELETS[wavelet_kind]

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"Dwt1d '{name}'", inputs, 1)
        x = inputs[0]
        _check_channels(f"Dwt1d '{name}'", x, channels, 3)
        shape = frame.static_shape(x) or ()
        if shape[2] < len(low):
            raise ValueError(f"Dwt1d '{name}': length expected >= {len(low)} (the "
                             f"{wavelet_kind} filter), found {shape[2]}")
        w = np.array([[low], [high]] * channels, np.float32)
        return [g.emit(frame.ConvOp(x, g.constant(w, x), [2], [0], channels))]

    return Module(name, (), (), build)


def _check_channels(what: str, x: SSAValue, channels: int, rank: int) -> None:
    shape = frame.static_shape(x)
    if channels < 1 or shape is None or len(shape) != rank or shape[1] != channels:
        dims = ", ".join(["N", str(channels), *(["H", "W"] if rank == 4 else ["L"])])
        raise ValueError(f"{what}: input expected [{dims}], found "
                         f"{list(shape) if shape is not None else 'unranked'}")


# --- recurrences --------------------------------------------------------------------------


def _scan(g: Graph, step_name: str, init_shape: Sequence[int], sequences: Sequence[SSAValue],
          invariants: Sequence[SSAValue],
          body: Callable[[Graph, SSAValue, list[SSAValue], list[SSAValue]], SSAValue]
          ) -> SSAValue:
    """`frame.scan` from a zero carry of `init_shape` over time-major `sequences`
    ([T, ...]): `body(step_graph, carry, rows, invariants)` builds one step, kept as the
    step function `@<step_name>` of the module. Returns the stacked carries."""
    elem = frame.element_type(sequences[0])
    sg = Graph(step_name)
    carry = sg.add_input(init_shape, "carry", elem=elem)
    rows = [sg.add_input((frame.static_shape(s) or ())[1:], f"row{i}", elem=elem)
            for i, s in enumerate(sequences)]
    invs = [sg.add_input(frame.static_shape(v) or (), f"inv{i}", elem=elem)
            for i, v in enumerate(invariants)]
    with sg.scope(g._scope[-1] if g._scope else step_name):
        out = body(sg, carry, rows, invs)
    name = g.add_function(sg.finish([out]))
    init = g.emit(frame.ConstantOp(0.0, result_type=frame.tensor_type(init_shape, elem)))
    length = (frame.static_shape(sequences[0]) or ())[0]
    return g.emit(frame.ScanOp(name, init, sequences, invariants, length))


def _part(g: Graph, packed: SSAValue, i: int) -> SSAValue:
    """State i of a carry that stacks states along axis 0."""
    shape = frame.static_shape(packed) or ()
    return reshape(g, g.emit(frame.SliceOp(packed, 0, i, i + 1)), shape[1:])


def _pack(g: Graph, states: Sequence[SSAValue]) -> SSAValue:
    """States of one shape stacked along a new axis 0 (a carry)."""
    shape = frame.static_shape(states[0]) or ()
    return g.emit(frame.ConcatOp([reshape(g, s, (1, *shape)) for s in states], 0))


def _time_major(g: Graph, x: SSAValue) -> SSAValue:
    """[B, T, ...] -> [T, B, ...]."""
    rank = len(frame.static_shape(x) or ())
    return g.emit(frame.TransposeOp(x, (1, 0, *range(2, rank))))


def LSTM(name: str, batch: int, num_steps: int, input_dim: int, hidden_dim: int) -> Module:
    """One LSTM layer over x [B, T, In] from h = c = 0, returning h_T [B, H]:
    z = x_t W_ih + h W_hh + bias; gates i, f, g, o (σ, σ, tanh, σ) are z's column
    blocks; c = f c + i g; h = o tanh(c). x W_ih is one GEMM for all steps; the steps
    are a `frame.scan` whose carry stacks (h, c), so the IR does not grow with T."""
    hd = hidden_dim
    params = (ParamSpec("W_ih", (input_dim, 4 * hd), UniformSeeded(-0.1, 0.1)),
              ParamSpec("W_hh", (hd, 4 * hd), UniformSeeded(-0.1, 0.1)),
              ParamSpec("bias", (batch, 4 * hd), UniformSeeded(0.0, 0.1)))

    def step(g: Graph, carry: SSAValue, rows: list[SSAValue], invs: list[SSAValue]
             ) -> SSAValue:
        h, c = _part(g, carry, 0), _part(g, carry, 1)
        w_hh, bias = invs
        z = g.emit(frame.AddOp(g.emit(frame.AddOp(rows[0], g.emit(frame.MatmulOp(h, w_hh)))),
                               bias))
        i, f, gg, o = (_columns(g, z, k, hd) for k in range(4))
        i, f, o = (g.emit(frame.SigmoidOp(v)) for v in (i, f, o))
        ig = g.emit(frame.MulOp(i, g.emit(frame.TanhOp(gg))))
        c = g.emit(frame.AddOp(g.emit(frame.MulOp(f, c)), ig))
        h = g.emit(frame.MulOp(o, g.emit(frame.TanhOp(c))))
        return _pack(g, [h, c])

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"LSTM '{name}'", inputs, 1)
        x = inputs[0]
        # Checked before any op: a wrong x would otherwise reach the reshape below with
        # sizes of its own (num_steps 2**64 + 1 made an i64 attribute out of range and
        # xDSL's VerifyException escaped from the scan: bug API-2).
        shape = frame.static_shape(x)
        if shape is None or list(shape) != [batch, num_steps, input_dim] or num_steps < 1:
            raise ValueError(f"LSTM '{name}': input expected [batch {batch}, num_steps "
                             f"{num_steps}, input_dim {input_dim}] with num_steps >= 1, "
                             f"found {list(shape) if shape is not None else 'unranked'}")
        w_ih, w_hh, bias = ps
        flat = reshape(g, x, (batch * num_steps, input_dim))
        xw = reshape(g, g.emit(frame.MatmulOp(flat, w_ih)), (batch, num_steps, 4 * hd))
        states = _scan(g, f"{name}_step", (2, batch, hd), [_time_major(g, xw)],
                       [w_hh, bias], step)
        last = g.emit(frame.SliceOp(states, 0, num_steps - 1, num_steps))  # [1, 2, B, H]
        return [reshape(g, g.emit(frame.SliceOp(last, 1, 0, 1)), (batch, hd))]

    return Module(name, params, (), build)


def LIFCell(name: str, batch: int, num_steps: int, features: int, decay: float,
            threshold: float, alpha: float) -> Module:
    """Leaky integrate-and-fire over x [B, T, F] from v = 0: v_pre = decay v + x_t;
    spike = heaviside_surrogate(v_pre + (-threshold); alpha); v = v_pre (1 - spike).
    Returns the spikes [B, T, F]. The steps are a `frame.scan` whose carry stacks
    (v, spike)."""
    def step(g: Graph, carry: SSAValue, rows: list[SSAValue], invs: list[SSAValue]
             ) -> SSAValue:
        v = _part(g, carry, 0)
        v_pre = g.emit(frame.AddOp(g.emit(frame.ScaleOp(v, decay)), rows[0]))
        spike = g.emit(frame.HeavisideSurrogateOp(g.emit(frame.ShiftOp(v_pre, -threshold)),
                                                  alpha))
        v = g.emit(frame.MulOp(v_pre, g.emit(frame.SubOp(_ones_like(g, spike), spike))))
        return _pack(g, [v, spike])

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"LIFCell '{name}'", inputs, 1)
        x = inputs[0]
        states = _scan(g, f"{name}_step", (2, batch, features), [_time_major(g, x)], [],
                       step)
        spikes = reshape(g, g.emit(frame.SliceOp(states, 1, 1, 2)),
                         (num_steps, batch, features))
        return [_time_major(g, spikes)]

    return Module(name, (), (), build)


def SnnClassifier(name: str, batch: int, num_steps: int, input_dim: int, hidden_dim: int,
                  num_classes: int, decay: float, threshold: float, alpha: float,
                  with_bias: bool = True) -> Module:
    """input Linear -> LIFCell -> output Linear per time step, logits summed over time:
    [B, T, In] -> [B, classes]."""
    rows = batch * num_steps
    kids = (Linear("input", rows, input_dim, hidden_dim, with_bias),
            LIFCell("lif", batch, num_steps, hidden_dim, decay, threshold, alpha),
            Linear("output", rows, hidden_dim, num_classes, with_bias))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"SnnClassifier '{name}'", inputs, 1)
        (lin, p_in), (lif, p_lif), (out, p_out) = zip(mod.children,
                                                      mod.child_param_slices(ps), strict=True)
        h = lin.build(g, [reshape(g, inputs[0], (rows, input_dim))], p_in)[0]
        s = lif.build(g, [reshape(g, h, (batch, num_steps, hidden_dim))], p_lif)[0]
        y = out.build(g, [reshape(g, s, (rows, hidden_dim))], p_out)[0]
        return [g.emit(frame.SumOp(reshape(g, y, (batch, num_steps, num_classes)), [1]))]

    mod = Module(name, (), kids, build)
    return mod


#: Mamba's projections in order, with their activations.
MAMBA_PROJECTIONS = (("input", frame.TanhOp), ("a", frame.SigmoidOp), ("b", frame.TanhOp),
                     ("c", frame.TanhOp), ("d", frame.TanhOp), ("gate", frame.SigmoidOp))


def Mamba(name: str, batch: int, channels: int, steps: int, kernel_size: int) -> Module:
    """A Mamba-style block on [B, C, L]: causal depthwise conv, six activated
    projections, a selective scan gated by `gate`, then the `out` projection."""
    rows = batch * steps
    kids = (Conv("conv", channels, channels, [kernel_size], [1], [kernel_size - 1], channels),
            *(Linear(p, rows, channels, channels, True) for p, _ in MAMBA_PROJECTIONS),
            Linear("out", rows, channels, channels, True))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"Mamba '{name}'", inputs, 1)
        parts = list(zip(mod.children, mod.child_param_slices(ps), strict=True))
        conv, proj, out = parts[0], parts[1:7], parts[7]
        u = g.emit(frame.SliceOp(conv[0].build(g, inputs, conv[1])[0], 2, 0, steps))

        def rows_of(t: SSAValue) -> SSAValue:  # [B, C, L] -> [B*L, C]
            return reshape(g, g.emit(frame.TransposeOp(t, (0, 2, 1))), (rows, channels))

        def channels_of(t: SSAValue) -> SSAValue:  # [B*L, C] -> [B, C, L]
            return g.emit(frame.TransposeOp(reshape(g, t, (batch, steps, channels)), (0, 2, 1)))
        flat = rows_of(u)
        acts = [channels_of(g.emit(act(m.build(g, [flat], p)[0])))
                for (m, p), (_, act) in zip(proj, MAMBA_PROJECTIONS, strict=True)]
        s = g.emit(frame.MulOp(g.emit(frame.SelectiveScanOp(*acts[:5])), acts[5]))
        return [channels_of(out[0].build(g, [rows_of(s)], out[1])[0])]

    mod = Module(name, (), kids, build)
    return mod


def FourierMamba(name: str, batch: int, channels: int, steps: int, kernel_size: int
                 ) -> Module:
    """tanh(mamba(x) + fourier(x)) on [B, C, L]: children `mamba` (Mamba) and `fourier`
    (FourierFilter1d over the L steps)."""
    kids = (Mamba("mamba", batch, channels, steps, kernel_size),
            FourierFilter1d("fourier", batch, channels, steps))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"FourierMamba '{name}'", inputs, 1)
        (m, pm), (f, pf) = zip(mod.children, mod.child_param_slices(ps), strict=True)
        total = g.emit(frame.AddOp(m.build(g, inputs, pm)[0], f.build(g, inputs, pf)[0]))
        return [g.emit(frame.TanhOp(total))]

    mod = Module(name, (), kids, build)
    return mod


# --- spectral layers ----------------------------------------------------------------------


def _re_im(g: Graph, z: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The real and imaginary parts of a [..., 2] spectrum, each [..., 1]."""
    last = len(frame.static_shape(z) or ()) - 1
    return g.emit(frame.SliceOp(z, last, 0, 1)), g.emit(frame.SliceOp(z, last, 1, 2))


def _complex_mul(g: Graph, ar: SSAValue, ai: SSAValue, br: SSAValue, bi: SSAValue,
                 product: type = frame.MulOp) -> tuple[SSAValue, SSAValue]:
    """(ar + i ai)(br + i bi) with `product` the real product (mul or matmul)."""
    def p(x: SSAValue, y: SSAValue) -> SSAValue:
        return g.emit(product(x, y))
    return (g.emit(frame.SubOp(p(ar, br), p(ai, bi))),
            g.emit(frame.AddOp(p(ar, bi), p(ai, br))))


def SpectralConv1d(name: str, batch: int, in_channels: int, out_channels: int, n: int,
                   modes: int) -> Module:
    """The Fourier layer of an FNO on [B, Cin, n]: X = rfft(x); for mode j < modes,
    Y[:, :, j] = X[:, :, j] @ (W_re + i W_im)[:, j*Cout:(j+1)*Cout]; higher modes 0;
    irfft(Y, n). The modes are one batched complex matmul ([modes, B, Cin] @
    [modes, Cin, Cout])."""
    params = tuple(ParamSpec(w, (in_channels, modes * out_channels), UniformSeeded(-0.1, 0.1))
                   for w in ("W_re", "W_im"))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"SpectralConv1d '{name}'", inputs, 1)
        bins = n // 2 + 1
        if not 1 <= modes <= bins:
            raise ValueError(f"SpectralConv1d '{name}': modes expected in [1, {bins}] "
                             f"(n // 2 + 1 for n = {n}), found {modes}")
        x = inputs[0]
        if frame.static_shape(x) != (batch, in_channels, n):
            raise ValueError(f"SpectralConv1d '{name}': input expected [{batch}, "
                             f"{in_channels}, {n}], found {list(frame.static_shape(x) or ())}")
        spec = g.emit(frame.SliceOp(g.emit(frame.RfftOp(x)), 2, 0, modes))
        xr, xi = (g.emit(frame.TransposeOp(reshape(g, v, (batch, in_channels, modes)),
                                           (2, 0, 1))) for v in _re_im(g, spec))
        wr, wi = (g.emit(frame.TransposeOp(reshape(g, w, (in_channels, modes, out_channels)),
                                           (1, 0, 2))) for w in ps)
        yr, yi = _complex_mul(g, xr, xi, wr, wi, frame.MatmulOp)  # [modes, B, Cout]
        parts = [reshape(g, g.emit(frame.TransposeOp(v, (1, 2, 0))),
                         (batch, out_channels, modes, 1)) for v in (yr, yi)]
        y = g.emit(frame.PadOp(g.emit(frame.ConcatOp(parts, 3)), [0, 0, 0, 0],
                               [0, 0, bins - modes, 0]))
        return [g.emit(frame.IrfftOp(y, n))]

    return Module(name, params, (), build)


def FourierFilter1d(name: str, batch: int, channels: int, n: int) -> Module:
    """irfft(w ⊙ rfft(x), n) on [B, C, n], one complex filter per sample and channel:
    w_re, w_im [B, C, n//2+1, 1]."""
    bins = n // 2 + 1
    params = tuple(ParamSpec(w, (batch, channels, bins, 1), UniformSeeded(-0.1, 0.1))
                   for w in ("w_re", "w_im"))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"FourierFilter1d '{name}'", inputs, 1)
        x = inputs[0]
        if frame.static_shape(x) != (batch, channels, n):
            raise ValueError(f"FourierFilter1d '{name}': input expected [{batch}, "
                             f"{channels}, {n}], found {list(frame.static_shape(x) or ())}")
        xr, xi = _re_im(g, g.emit(frame.RfftOp(x)))
        yr, yi = _complex_mul(g, ps[0], ps[1], xr, xi)
        return [g.emit(frame.IrfftOp(g.emit(frame.ConcatOp([yr, yi], 3)), n))]

    return Module(name, params, (), build)


def Fno1dBlock(name: str, batch: int, in_channels: int, out_channels: int, n: int,
               modes: int) -> Module:
    """tanh(spectral(x) + bypass(x)) on [B, Cin, n]: children `spectral`
    (SpectralConv1d) and `bypass` (a kernel-1 Conv1d with bias)."""
    kids = (SpectralConv1d("spectral", batch, in_channels, out_channels, n, modes),
            Conv("bypass", in_channels, out_channels, [1], [1], [0], 1, True))

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"Fno1dBlock '{name}'", inputs, 1)
        (sp, p_sp), (by, p_by) = zip(mod.children, mod.child_param_slices(ps), strict=True)
        total = g.emit(frame.AddOp(sp.build(g, inputs, p_sp)[0], by.build(g, inputs, p_by)[0]))
        return [g.emit(frame.TanhOp(total))]

    mod = Module(name, (), kids, build)
    return mod


# --- graph layers -------------------------------------------------------------------------


def GraphConv(name: str, num_nodes: int, in_features: int, out_features: int,
              source_indices: Sequence[int], target_indices: Sequence[int]) -> Module:
    """Normalised message passing on x [N, Fin]: each edge e sends
    (x[src_e] W) / sqrt(outdeg(src_e) * indeg(tgt_e)) to row tgt_e (scatter_add)."""
    src, tgt = list(source_indices), list(target_indices)
    kids = (Linear("linear", len(src), in_features, out_features, False),)

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"GraphConv '{name}'", inputs, 1)
        x = inputs[0]
        outdeg = np.bincount(src, minlength=num_nodes)
        indeg = np.bincount(tgt, minlength=num_nodes)
        scale = 1.0 / np.sqrt(outdeg[src].astype(np.float64) * indeg[tgt])
        gathered = g.emit(frame.GatherRowsOp(x, g.constant(np.array(src, np.int64))))
        msg = mod.children[0].build(g, [gathered], ps)[0]
        norm = np.repeat(scale[:, None], out_features, axis=1).astype(np.float32)
        msg = g.emit(frame.MulOp(msg, g.constant(norm, msg)))
        out_type = frame.tensor_type((num_nodes, out_features), frame.element_type(msg))
        return [g.emit(frame.ScatterAddOp(msg, g.constant(np.array(tgt, np.int64)), out_type))]

    mod = Module(name, (), kids, build)
    return mod


def HypergraphConv(name: str, num_nodes: int, num_hyperedges: int, in_features: int,
                   out_features: int, node_indices: Sequence[int],
                   hyperedge_indices: Sequence[int]) -> Module:
    """(Dv^-1/2 H De^-1 Hᵀ Dv^-1/2 x) W on x [N, Fin], H the incidence of the pairs
    (node_indices[i], hyperedge_indices[i]); the N x N propagation matrix is a
    constant computed in float64 (a node of degree 0 gets 0)."""
    nodes, edges = list(node_indices), list(hyperedge_indices)
    kids = (Linear("linear", num_nodes, in_features, out_features, False),)

    def build(g: Graph, inputs: Sequence[SSAValue], ps: Sequence[SSAValue]) -> list[SSAValue]:
        _inputs(f"HypergraphConv '{name}'", inputs, 1)
        x = inputs[0]
        a = propagation_matrix(num_nodes, num_hyperedges, nodes, edges)
        p = g.emit(frame.MatmulOp(g.constant(a.astype(np.float32), x), x))
        return mod.children[0].build(g, [p], ps)

    mod = Module(name, (), kids, build)
    return mod


def propagation_matrix(num_nodes: int, num_hyperedges: int, nodes: Sequence[int],
                       edges: Sequence[int]) -> np.ndarray:
    """Dv^-1/2 H De^-1 Hᵀ Dv^-1/2 in float64 (zero scale for degree-0 nodes and edges)."""
    h = np.zeros((num_nodes, num_hyperedges))
    h[list(nodes), list(edges)] = 1.0
    dv, de = h.sum(axis=1), h.sum(axis=0)
    inv_sqrt_dv = np.divide(1.0, np.sqrt(dv), out=np.zeros_like(dv), where=dv > 0)
    inv_de = np.divide(1.0, de, out=np.zeros_like(de), where=de > 0)
    return (inv_sqrt_dv[:, None] * h * inv_de[None, :]) @ h.T * inv_sqrt_dv[None, :]
