"""The sheet's later factories (§7.2) for the Python API: argument types checked at
the factory (TypeError), numbers at `build` (ValueError, §7.3), the computation in
`frame_mlir.nn.layers`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from frame_mlir.frontends.api.graph import Value
from frame_mlir.frontends.api.nn import Module, _dim, _flag, _int, _name
from frame_mlir.frontends.api.ops import check_positive_f32
from frame_mlir.frontends.api.tensor import DType
from frame_mlir.nn import layers

__all__ = ["AFF", "LSTM", "Dwt1d", "Dwt2d", "Fno1dBlock", "FourierFilter1d", "FourierMamba",
           "GraphConv", "HypergraphConv", "LIFCell", "LayerNorm", "Mamba",
           "MultiheadAttention", "SnnClassifier", "SpectralConv1d", "TransformerEncoderBlock"]

Check = Callable[[list[Value]], None]


def _float(v: object, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(f"{what} must be a float, found {v!r}")
    return float(v)


def _dtype(v: object) -> DType:
    if not isinstance(v, DType):
        raise TypeError(f"dtype must be a DType, found {v!r}")
    return v


def _indices(v: object, what: str) -> list[int]:
    if isinstance(v, str | bytes) or not isinstance(v, Sequence):
        raise TypeError(f"{what} must be a sequence of ints")
    return [_int(i, what) for i in v]


def _strict(name: str, dims: dict[str, int], dtype: DType, shape: Sequence[int],
            extra: Check | None = None) -> Check:
    """§7.3's checks of the strict factories: every dim > 0, a float dtype, the input
    exactly `shape` and of `dtype`."""
    def check(values: list[Value]) -> None:
        for what, d in dims.items():
            if d <= 0:
                raise ValueError(f"{name}: {what} must be > 0, found {d}")
        if not dtype.is_float:
            raise ValueError(f"{name}: dtype must be a float type, found '{dtype.name}'")
        x = values[0]
        if list(x._shape) != list(shape):
            raise ValueError(f"{name}: input expected shape {list(shape)}, found "
                             f"{list(x._shape)}")
        if x._dtype != dtype:
            raise ValueError(f"{name}: input expected dtype '{dtype.name}', found "
                             f"'{x._dtype.name}'")
        if extra is not None:
            extra(values)
    return check


def _lif_numbers(name: str, decay: float, threshold: float, alpha: float) -> None:
    if not 0.0 <= decay < 1.0:
        raise ValueError(f"{name}: decay must lie in [0, 1), found {decay}")
    check_positive_f32(threshold, name, "threshold")
    check_positive_f32(alpha, name, "alpha")


def LayerNorm(name: str, dim: int, eps: float, dtype: DType) -> Module:
    """Layer normalisation over the last dim, population variance:
    `gamma * (x - mean) / sqrt(var + eps) + beta`.

    Args:
        name: the module name.
        dim: D, the normalised (last) dim.
        eps: added to the variance; `eps <= 0` (or not finite) is a ValueError at build.
        dtype: the parameters' DType.

    Parameters: `name.gamma [D]`, `name.beta [D]`.

    Shapes: `x [rows, D] -> [rows, D]` (rank 2 only).

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([4, 8], F32)
        >>> m = nn.LayerNorm("ln", 8, 1e-5, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [4, 8] float32>]
    """
    inner = layers.LayerNorm(_name(name), _dim(dim, "dim"), _float(eps, "eps"))
    return Module._make(inner, _dtype(dtype), 1)


def MultiheadAttention(name: str, batch: int, seq_len: int, embed_dim: int, num_heads: int,
                       with_bias: bool, dtype: DType) -> Module:
    """Multi-head self-attention on the rows of `batch` sequences of `seq_len` tokens.

    With `Dh = E / num_heads`, `q, k, v` are three Linears applied to x; for each batch b
    (rows `[b*S, (b+1)*S)`) and head h (columns `[h*Dh, (h+1)*Dh)`):
    `softmax(Q_bh @ K_bhᵀ / sqrt(Dh)) @ V_bh`; heads are joined by columns, batches by
    rows, then the Linear `o` is applied.

    Args:
        name: the module name.
        batch, seq_len: B and S (x holds B*S rows).
        embed_dim: E; `E % num_heads != 0` is a ValueError at build.
        num_heads: the number of heads.
        with_bias: whether the four Linears have biases.
        dtype: the parameters' DType.

    Parameters: children `q, k, v, o`, each `Linear(B*S, E, E, with_bias)`:
    `name.q.weight [E, E]`, `name.q.bias [B*S, E]`, ... `name.o.bias`.

    Shapes: `x [B*S, E] -> [B*S, E]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([8, 8], F32)
        >>> m = nn.MultiheadAttention("mha", 2, 4, 8, 2, True, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [8, 8] float32>]
    """
    inner = layers.MultiheadAttention(_name(name), _dim(batch, "batch"),
                                      _dim(seq_len, "seq_len"), _dim(embed_dim, "embed_dim"),
                                      _dim(num_heads, "num_heads"),
                                      _flag(with_bias, "with_bias"))
    return Module._make(inner, _dtype(dtype), 1)


def TransformerEncoderBlock(name: str, batch: int, seq_len: int, embed_dim: int,
                            num_heads: int, ffn_dim: int, with_bias: bool,
                            dtype: DType) -> Module:
    """A post-LN transformer encoder block:
    `y1 = ln1(x + mha(x))`, `y = ln2(y1 + ffn2(relu(ffn1(y1))))`.

    Args:
        name: the module name.
        batch, seq_len, embed_dim, num_heads, with_bias: as MultiheadAttention's (rows = B*S).
        ffn_dim: the hidden width of the feed-forward Linears.
        dtype: the parameters' DType.

    Parameters: children `mha` (MultiheadAttention), `ln1` (LayerNorm(E, eps 1e-5)),
    `ffn1` (Linear(rows, E, ffn_dim)), `ffn2` (Linear(rows, ffn_dim, E)), `ln2`; 16
    parameters with bias.

    Shapes: `x [B*S, E] -> [B*S, E]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([8, 8], F32)
        >>> m = nn.TransformerEncoderBlock("enc", 2, 4, 8, 2, 16, True, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [8, 8] float32>]
    """
    inner = layers.TransformerEncoderBlock(
        _name(name), _dim(batch, "batch"), _dim(seq_len, "seq_len"),
        _dim(embed_dim, "embed_dim"), _dim(num_heads, "num_heads"), _dim(ffn_dim, "ffn_dim"),
        _flag(with_bias, "with_bias"))
    return Module._make(inner, _dtype(dtype), 1)


def AFF(name: str, channels: int, dtype: DType) -> Module:
    """Attentional feature fusion of two feature maps:
    `M = sigmoid(c2(relu(c1(X + Y))))`, `out = M * X + (1 - M) * Y`.

    Args:
        name: the module name.
        channels: C.
        dtype: the parameters' DType.

    Parameters: children `c1`, `c2`, each a 1x1 Conv2d(C -> C) with bias:
    `name.c1.weight [C, C, 1, 1]`, `name.c1.bias [C]`, `name.c2.weight`, `name.c2.bias`.

    Shapes: `(X [N, C, H, W], Y [N, C, H, W]) -> [N, C, H, W]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 4, 5, 5], F32)
        >>> y = g.add_graph_input([2, 4, 5, 5], F32)
        >>> m = nn.AFF("aff", 4, F32)
        >>> m.build(g, [x, y], nn.add_parameter_inputs(g, m))
        [<Value [2, 4, 5, 5] float32>]
    """
    inner = layers.AFF(_name(name), _dim(channels, "channels"))
    return Module._make(inner, _dtype(dtype), 2)


def _wavelet(kind: object, known: Sequence[str]) -> str:
    if not isinstance(kind, str):
        raise TypeError(f"wavelet_kind must be a str, found {kind!r}")
    if kind not in known:
        raise ValueError(f"wavelet_kind '{kind}' is unknown (expected one of "
                         f"{', '.join(known)})")
    return kind


def Dwt2d(name: str, channels: int, wavelet_kind: str) -> Module:
    """One level of the 2-D Haar wavelet transform: a grouped stride-2 conv with constant
    2x2 filters giving the bands LL, LH, HL, HH of each channel (channels 4c..4c+3).
    No parameters.

    Args:
        name: the module name.
        channels: C.
        wavelet_kind: "haar"; "db4" is accepted here but is a ValueError at build; any
            other string is a ValueError here.

    Shapes: `x [N, C, H, W] -> [N, 4C, H // 2, W // 2]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([1, 2, 4, 4], F32)
        >>> m = nn.Dwt2d("dwt", 2, "haar")
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [1, 8, 2, 2] float32>]
    """
    inner = layers.Dwt2d(_name(name), _dim(channels, "channels"),
                         _wavelet(wavelet_kind, ("haar", "db4")))
    return Module._make(inner, DType.float32, 1)


def Dwt1d(name: str, channels: int, wavelet_kind: str) -> Module:
    """One level of the 1-D wavelet transform: a grouped stride-2 conv with constant
    filters giving the low-pass and high-pass bands of each channel (channels 2c, 2c+1).
    No parameters.

    Args:
        name: the module name.
        channels: C.
        wavelet_kind: "haar" (K = 2) or "db4" (K = 4); another string is a ValueError.

    Shapes: `x [N, C, L] -> [N, 2C, (L - K) // 2 + 1]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([1, 2, 8], F32)
        >>> m = nn.Dwt1d("dwt", 2, "db4")
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [1, 4, 3] float32>]
    """
    inner = layers.Dwt1d(_name(name), _dim(channels, "channels"),
                         _wavelet(wavelet_kind, tuple(layers.WAVELETS)))
    return Module._make(inner, DType.float32, 1)


def LSTM(name: str, batch: int, num_steps: int, input_dim: int, hidden_dim: int,
         dtype: DType) -> Module:
    """One LSTM layer run over all steps from `h = c = 0`; returns the last hidden state.
    Per step `z = x_t @ W_ih + h @ W_hh + bias`; the gates are z's column blocks
    i, f, g, o (sigmoid, sigmoid, tanh, sigmoid); `c = f*c + i*g`, `h = o * tanh(c)`.

    Args:
        name: the module name.
        batch, num_steps, input_dim, hidden_dim: B, T, In and H.
        dtype: the parameters' DType.

    Parameters: `name.W_ih [In, 4H]`, `name.W_hh [H, 4H]`, `name.bias [B, 4H]`.

    Shapes: `x [B, T, In] -> h_T [B, H]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 5, 3], F32)
        >>> m = nn.LSTM("lstm", 2, 5, 3, 4, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 4] float32>]
    """
    inner = layers.LSTM(_name(name), _dim(batch, "batch"), _dim(num_steps, "num_steps"),
                        _dim(input_dim, "input_dim"), _dim(hidden_dim, "hidden_dim"))
    return Module._make(inner, _dtype(dtype), 1)


def LIFCell(name: str, batch: int, num_steps: int, features: int, decay: float,
            threshold: float, alpha: float, dtype: DType) -> Module:
    """Leaky integrate-and-fire neurons over time, from `v = 0`: per step
    `v_pre = decay * v + x_t`, `spike = heaviside_surrogate(v_pre - threshold, alpha)`,
    `v = v_pre * (1 - spike)`; the output stacks the spikes. The spike's gradient is the
    sigmoid surrogate with slope `alpha`. No parameters.

    Args:
        name: the module name.
        batch, num_steps, features: B, T and F (each > 0).
        decay: in [0, 1).
        threshold, alpha: finite and > 0.
        dtype: the input's DType (a float).

    The numbers and the exact input shape and dtype are checked at build (ValueError).
    E.g. decay 0.5, threshold 1.0 and x = [.6, .7, .2] give spikes [0, 1, 0].

    Shapes: `x [B, T, F] -> spikes [B, T, F]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 4], F32)
        >>> m = nn.LIFCell("lif", 2, 3, 4, 0.5, 1.0, 4.0, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 3, 4] float32>]
    """
    name = _name(name)
    b, t, f = (_dim(v, w) for v, w in ((batch, "batch"), (num_steps, "num_steps"),
                                       (features, "features")))
    d, th, al = (_float(v, w) for v, w in ((decay, "decay"), (threshold, "threshold"),
                                           (alpha, "alpha")))
    dt = _dtype(dtype)
    check = _strict(f"LIFCell '{name}'", {"batch": b, "num_steps": t, "features": f}, dt,
                    (b, t, f), lambda _: _lif_numbers(f"LIFCell '{name}'", d, th, al))
    return Module._make(layers.LIFCell(name, b, t, f, d, th, al), dt, 1, check)


def SnnClassifier(name: str, batch: int, num_steps: int, input_dim: int, hidden_dim: int,
                  num_classes: int, decay: float, threshold: float, alpha: float,
                  with_bias: bool, dtype: DType) -> Module:
    """A spiking classifier: per step an input Linear, a LIFCell, an output Linear; the
    logits are summed over time.

    Args:
        name: the module name.
        batch, num_steps, input_dim, hidden_dim, num_classes: B, T, In, H, C (each > 0).
        decay, threshold, alpha: the LIFCell's (checked at build as LIFCell's).
        with_bias: whether the Linears have biases.
        dtype: the parameters' DType.

    Parameters: children `input` = Linear(B*T, In, H), `lif`, `output` = Linear(B*T, H, C):
    `name.input.weight [In, H]`, (`name.input.bias [B*T, H]`), `name.output.weight [H, C]`,
    (`name.output.bias [B*T, C]`).

    Shapes: `x [B, T, In] -> logits [B, C]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 4, 3], F32)
        >>> m = nn.SnnClassifier("snn", 2, 4, 3, 5, 2, 0.5, 1.0, 4.0, True, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 2] float32>]
    """
    name = _name(name)
    dims = {w: _dim(v, w) for v, w in ((batch, "batch"), (num_steps, "num_steps"),
                                       (input_dim, "input_dim"), (hidden_dim, "hidden_dim"),
                                       (num_classes, "num_classes"))}
    d, th, al = (_float(v, w) for v, w in ((decay, "decay"), (threshold, "threshold"),
                                           (alpha, "alpha")))
    dt = _dtype(dtype)
    check = _strict(f"SnnClassifier '{name}'", dims, dt,
                    (dims["batch"], dims["num_steps"], dims["input_dim"]),
                    lambda _: _lif_numbers(f"SnnClassifier '{name}'", d, th, al))
    inner = layers.SnnClassifier(name, *dims.values(), d, th, al,
                                 _flag(with_bias, "with_bias"))
    return Module._make(inner, dt, 1, check)


def Mamba(name: str, batch: int, channels: int, steps: int, kernel_size: int,
          dtype: DType) -> Module:
    """A Mamba-style selective-scan block: a causal depthwise Conv1d, six activated Linear
    projections (input, a, b, c, d, gate), `selective_scan(input, a, b, c, d) * gate`,
    then the Linear `out`.

    Args:
        name: the module name.
        batch, channels, steps, kernel_size: B, C, L and K (each > 0).
        dtype: the parameters' and input's DType (a float; checked at build).

    Parameters (16): `name.conv.weight [C, 1, K]`, `name.conv.bias [C]`, then for each of
    `input, a, b, c, d, gate, out`: `.weight [C, C]`, `.bias [B*L, C]`.

    Shapes: `x [B, C, L] -> [B, C, L]` (the input must be exactly that, checked at build).

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 8], F32)
        >>> m = nn.Mamba("m", 2, 3, 8, 3, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 3, 8] float32>]
    """
    name = _name(name)
    dims = {w: _dim(v, w) for v, w in ((batch, "batch"), (channels, "channels"),
                                       (steps, "steps"), (kernel_size, "kernel_size"))}
    dt = _dtype(dtype)
    check = _strict(f"Mamba '{name}'", dims, dt,
                    (dims["batch"], dims["channels"], dims["steps"]))
    return Module._make(layers.Mamba(name, *dims.values()), dt, 1, check)


def FourierMamba(name: str, batch: int, channels: int, steps: int, kernel_size: int,
                 dtype: DType) -> Module:
    """`tanh(mamba(x) + fourier(x))`: a Mamba block beside a per-sample Fourier filter.
    float32 only (the FFT kernels are f32).

    Args:
        name: the module name.
        batch, channels, steps, kernel_size: B, C, L and K, as Mamba's.
        dtype: DType.float32.

    Parameters (18): child `mamba`'s 16, then `name.fourier.w_re`, `name.fourier.w_im`
    `[B, C, L // 2 + 1, 1]`.

    Shapes: `x [B, C, L] -> [B, C, L]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 8], F32)
        >>> m = nn.FourierMamba("fm", 2, 3, 8, 3, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 3, 8] float32>]
    """
    name = _name(name)
    dims = {w: _dim(v, w) for v, w in ((batch, "batch"), (channels, "channels"),
                                       (steps, "steps"), (kernel_size, "kernel_size"))}
    dt = _dtype(dtype)
    check = _strict(f"FourierMamba '{name}'", dims, dt,
                    (dims["batch"], dims["channels"], dims["steps"]), _f32_only(name, dt))
    return Module._make(layers.FourierMamba(name, *dims.values()), dt, 1, check)


def _f32_only(name: str, dtype: DType) -> Check:
    def check(_: list[Value]) -> None:
        if dtype != DType.float32:
            raise ValueError(f"'{name}': the FFT kernels are float32 only, found "
                             f"'{dtype.name}'")
    return check


def SpectralConv1d(name: str, batch: int, in_channels: int, out_channels: int, n: int,
                   modes: int, dtype: DType) -> Module:
    """The Fourier layer of a Fourier neural operator: `X = rfft(x)`; for mode j < modes,
    `Y[:, :, j] = X[:, :, j] @ (W_re + i W_im)[:, j*Cout:(j+1)*Cout]`, higher modes 0;
    the result is `irfft(Y, n)`. float32 only.

    Args:
        name: the module name.
        batch, in_channels, out_channels: B, Cin and Cout.
        n: the signal length.
        modes: the kept modes; `modes > n // 2 + 1` is a ValueError at build.
        dtype: DType.float32.

    Parameters: `name.W_re`, `name.W_im`, each `[Cin, modes * Cout]`.

    Shapes: `x [B, Cin, n] -> [B, Cout, n]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 16], F32)
        >>> m = nn.SpectralConv1d("sc", 2, 3, 4, 16, 5, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 4, 16] float32>]
    """
    name = _name(name)
    dt = _dtype(dtype)
    inner = layers.SpectralConv1d(name, _dim(batch, "batch"), _dim(in_channels, "in_channels"),
                                  _dim(out_channels, "out_channels"), _dim(n, "n"),
                                  _dim(modes, "modes"))
    return Module._make(inner, dt, 1, _f32_only(name, dt))


def FourierFilter1d(name: str, batch: int, channels: int, n: int, dtype: DType) -> Module:
    """A learned per-sample, per-channel complex filter in frequency space:
    `irfft((w_re + i w_im) * rfft(x), n)`. float32 only.

    Args:
        name: the module name.
        batch, channels, n: B, C and the signal length.
        dtype: DType.float32.

    Parameters: `name.w_re`, `name.w_im`, each `[B, C, n // 2 + 1, 1]`.

    Shapes: `x [B, C, n] -> [B, C, n]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 8], F32)
        >>> m = nn.FourierFilter1d("ff", 2, 3, 8, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 3, 8] float32>]
    """
    name = _name(name)
    dt = _dtype(dtype)
    inner = layers.FourierFilter1d(name, _dim(batch, "batch"), _dim(channels, "channels"),
                                   _dim(n, "n"))
    return Module._make(inner, dt, 1, _f32_only(name, dt))


def Fno1dBlock(name: str, batch: int, in_channels: int, out_channels: int, n: int,
               modes: int, dtype: DType) -> Module:
    """A Fourier neural operator block: `tanh(spectral(x) + bypass(x))`. float32 only.

    Args:
        name: the module name.
        batch, in_channels, out_channels, n, modes: as SpectralConv1d's.
        dtype: DType.float32.

    Parameters: children `spectral` (SpectralConv1d) and `bypass` (Conv1d, kernel 1, with
    bias): `name.spectral.W_re`, `name.spectral.W_im [Cin, modes * Cout]`,
    `name.bypass.weight [Cout, Cin, 1]`, `name.bypass.bias [Cout]`.

    Shapes: `x [B, Cin, n] -> [B, Cout, n]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([2, 3, 16], F32)
        >>> m = nn.Fno1dBlock("fno", 2, 3, 4, 16, 5, F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [2, 4, 16] float32>]
    """
    name = _name(name)
    dt = _dtype(dtype)
    inner = layers.Fno1dBlock(name, _dim(batch, "batch"), _dim(in_channels, "in_channels"),
                              _dim(out_channels, "out_channels"), _dim(n, "n"),
                              _dim(modes, "modes"))
    return Module._make(inner, dt, 1, _f32_only(name, dt))


def _graph_indices(name: str, num_nodes: int, lists: Sequence[tuple[str, list[int], int]]
                   ) -> None:
    for what, idx, bound in lists:
        for i in idx:
            if abs(i) > 2**53:
                raise ValueError(f"{name}: {what} entry {i} exceeds 2^53 in magnitude")
            if not 0 <= i < bound:
                raise ValueError(f"{name}: {what} entry {i} is out of range [0, {bound})")


def GraphConv(name: str, num_nodes: int, in_features: int, out_features: int,
              source_indices: Sequence[int], target_indices: Sequence[int],
              dtype: DType) -> Module:
    """Normalised graph convolution: edge e sends
    `(x[src_e] @ W) / sqrt(outdeg(src_e) * indeg(tgt_e))` into row `tgt_e` (a scatter_add).

    Args:
        name: the module name.
        num_nodes, in_features, out_features: N, Fin and Fout.
        source_indices, target_indices: the edges, equally long (at least one), each
            index in [0, N) (checked at build).
        dtype: the parameters' DType.

    Parameters: child `linear` = Linear(E, Fin, Fout) without bias: `name.linear.weight
    [Fin, Fout]`.

    Shapes: `x [N, Fin] -> [N, Fout]`. With W = I, `GraphConv("g", 3, 2, 2, [0, 1, 2],
    [1, 2, 0], F32)` maps rows [[1, 2], [3, 4], [5, 6]] to [[5, 6], [1, 2], [3, 4]].

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([3, 2], F32)
        >>> m = nn.GraphConv("g", 3, 2, 2, [0, 1, 2], [1, 2, 0], F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [3, 2] float32>]
    """
    name = _name(name)
    src, tgt = _indices(source_indices, "source_indices"), \
        _indices(target_indices, "target_indices")
    dims = {w: _dim(v, w) for v, w in ((num_nodes, "num_nodes"),
                                       (in_features, "in_features"),
                                       (out_features, "out_features"))}
    dt = _dtype(dtype)
    what = f"GraphConv '{name}'"

    def edges(_: list[Value]) -> None:
        if not src:
            raise ValueError(f"{what}: expected at least one edge")
        if len(src) != len(tgt):
            raise ValueError(f"{what}: source_indices ({len(src)}) and target_indices "
                             f"({len(tgt)}) must have the same length")
        _graph_indices(what, dims["num_nodes"], [("source_indices", src, dims["num_nodes"]),
                                                 ("target_indices", tgt, dims["num_nodes"])])
    check = _strict(what, dims, dt, (dims["num_nodes"], dims["in_features"]), edges)
    return Module._make(layers.GraphConv(name, *dims.values(), src, tgt), dt, 1, check)


def HypergraphConv(name: str, num_nodes: int, num_hyperedges: int, in_features: int,
                   out_features: int, node_indices: Sequence[int],
                   hyperedge_indices: Sequence[int], dtype: DType) -> Module:
    """Hypergraph convolution: `Dv^-1/2 H De^-1 Hᵀ Dv^-1/2 x @ W`, with H the incidence
    pairs `(node_indices[i], hyperedge_indices[i])`; a node of degree 0 gets scale 0.

    Args:
        name: the module name.
        num_nodes, num_hyperedges, in_features, out_features: N, M, Fin and Fout.
        node_indices, hyperedge_indices: the incidence pairs, equally long, indices in
            range and no pair twice (checked at build).
        dtype: the parameters' DType.

    Parameters: child `linear` = Linear(N, Fin, Fout) without bias: `name.linear.weight
    [Fin, Fout]`.

    Shapes: `x [N, Fin] -> [N, Fout]`.

    Example:
        >>> import frame
        >>> from frame import nn
        >>> F32 = frame.DType.float32
        >>> g = frame.Graph("example")
        >>> x = g.add_graph_input([4, 3], F32)
        >>> m = nn.HypergraphConv("h", 4, 2, 3, 2, [0, 1, 2, 3], [0, 0, 1, 1], F32)
        >>> m.build(g, [x], nn.add_parameter_inputs(g, m))
        [<Value [4, 2] float32>]
    """
    name = _name(name)
    nodes, edges_ = _indices(node_indices, "node_indices"), \
        _indices(hyperedge_indices, "hyperedge_indices")
    dims = {w: _dim(v, w) for v, w in ((num_nodes, "num_nodes"),
                                       (num_hyperedges, "num_hyperedges"),
                                       (in_features, "in_features"),
                                       (out_features, "out_features"))}
    dt = _dtype(dtype)
    what = f"HypergraphConv '{name}'"

    def incidence(_: list[Value]) -> None:
        if len(nodes) != len(edges_):
            raise ValueError(f"{what}: node_indices ({len(nodes)}) and hyperedge_indices "
                             f"({len(edges_)}) must have the same length")
        _graph_indices(what, dims["num_nodes"], [
            ("node_indices", nodes, dims["num_nodes"]),
            ("hyperedge_indices", edges_, dims["num_hyperedges"])])
        pairs = list(zip(nodes, edges_, strict=True))
        if len(set(pairs)) != len(pairs):
            dup = next(p for i, p in enumerate(pairs) if p in pairs[:i])
            raise ValueError(f"{what}: duplicate (node, hyperedge) pair {dup}")
    check = _strict(what, dims, dt, (dims["num_nodes"], dims["in_features"]), incidence)
    return Module._make(layers.HypergraphConv(name, *dims.values(), nodes, edges_), dt, 1,
                        check)
