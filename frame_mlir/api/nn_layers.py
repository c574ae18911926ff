"""The sheet's later factories (§7.2) for the Python API: argument types checked at
the factory (TypeError), numbers at `build` (ValueError, §7.3), the computation in
`frame_mlir.nn.layers`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from frame_mlir.api.graph import Value
from frame_mlir.api.nn import Module, _flag, _int, _name
from frame_mlir.api.tensor import DType
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
    if not (math.isfinite(threshold) and threshold > 0):
        raise ValueError(f"{name}: threshold must be finite and > 0, found {threshold}")
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"{name}: alpha must be finite and > 0, found {alpha}")


def LayerNorm(name: str, dim: int, eps: float, dtype: DType) -> Module:
    """Layer normalisation over the last dim of x [rows, dim] (population variance):
    `gamma * (x - mean) / sqrt(var + eps) + beta`. Parameters `P.gamma [dim]`,
    `P.beta [dim]`. `eps <= 0` is a ValueError at build.

    Example: ``LayerNorm("ln", 8, 1e-5, DType.float32)`` on x [4, 8] gives [4, 8].
    """
    inner = layers.LayerNorm(_name(name), _int(dim, "dim"), _float(eps, "eps"))
    return Module._make(inner, _dtype(dtype), 1)


def MultiheadAttention(name: str, batch: int, seq_len: int, embed_dim: int, num_heads: int,
                       with_bias: bool, dtype: DType) -> Module:
    """Self-attention on x [batch*seq_len, E]: children `q, k, v, o` = Linear(rows, E, E);
    per batch and head, softmax(Q Kᵀ / sqrt(E/heads)) V; heads joined by columns, then
    `o`. `E % num_heads != 0` is a ValueError at build.

    Example: ``MultiheadAttention("mha", 2, 4, 8, 2, True, DType.float32)`` on [8, 8].
    """
    inner = layers.MultiheadAttention(_name(name), _int(batch, "batch"),
                                      _int(seq_len, "seq_len"), _int(embed_dim, "embed_dim"),
                                      _int(num_heads, "num_heads"),
                                      _flag(with_bias, "with_bias"))
    return Module._make(inner, _dtype(dtype), 1)


def TransformerEncoderBlock(name: str, batch: int, seq_len: int, embed_dim: int,
                            num_heads: int, ffn_dim: int, with_bias: bool,
                            dtype: DType) -> Module:
    """Post-LN encoder block on [rows, E]: children mha, ln1, ffn1, ffn2, ln2;
    `y1 = ln1(x + mha(x))`, `y = ln2(y1 + ffn2(relu(ffn1(y1))))` (16 parameters with bias).

    Example: ``TransformerEncoderBlock("enc", 2, 16, 32, 4, 64, True, DType.float32)``.
    """
    inner = layers.TransformerEncoderBlock(
        _name(name), _int(batch, "batch"), _int(seq_len, "seq_len"),
        _int(embed_dim, "embed_dim"), _int(num_heads, "num_heads"), _int(ffn_dim, "ffn_dim"),
        _flag(with_bias, "with_bias"))
    return Module._make(inner, _dtype(dtype), 1)


def AFF(name: str, channels: int, dtype: DType) -> Module:
    """Attentional feature fusion of (X, Y), both [N, C, H, W]: children c1, c2 (1x1
    Conv2d with bias); `M = sigmoid(c2(relu(c1(X + Y))))`, `out = M*X + (1-M)*Y`.

    Example: ``AFF("aff", 4, DType.float32)`` on two [2, 4, 5, 5] inputs.
    """
    inner = layers.AFF(_name(name), _int(channels, "channels"))
    return Module._make(inner, _dtype(dtype), 2)


def _wavelet(kind: object, known: Sequence[str]) -> str:
    if not isinstance(kind, str):
        raise TypeError(f"wavelet_kind must be a str, found {kind!r}")
    if kind not in known:
        raise ValueError(f"wavelet_kind '{kind}' is unknown (expected one of "
                         f"{', '.join(known)})")
    return kind


def Dwt2d(name: str, channels: int, wavelet_kind: str) -> Module:
    """One level of the 2-D haar wavelet transform, [N, C, H, W] -> [N, 4C, H//2, W//2]
    (bands LL, LH, HL, HH per channel; a grouped stride-2 conv with constant filters).
    `"db4"` is accepted here but is a ValueError at build; other kinds fail here.

    Example: ``Dwt2d("dwt", 2, "haar")`` on [1, 2, 4, 4] gives [1, 8, 2, 2].
    """
    inner = layers.Dwt2d(_name(name), _int(channels, "channels"),
                         _wavelet(wavelet_kind, ("haar", "db4")))
    return Module._make(inner, DType.float32, 1)


def Dwt1d(name: str, channels: int, wavelet_kind: str) -> Module:
    """One level of the 1-D wavelet transform ("haar" or "db4"), [N, C, L] ->
    [N, 2C, (L-K)//2+1] (low-pass and high-pass bands per channel).

    Example: ``Dwt1d("dwt", 2, "db4")`` on [1, 2, 8] gives [1, 4, 3].
    """
    inner = layers.Dwt1d(_name(name), _int(channels, "channels"),
                         _wavelet(wavelet_kind, tuple(layers.WAVELETS)))
    return Module._make(inner, DType.float32, 1)


def LSTM(name: str, batch: int, num_steps: int, input_dim: int, hidden_dim: int,
         dtype: DType) -> Module:
    """One LSTM layer, x [B, T, In] -> h_T [B, H] from h = c = 0. Parameters
    `P.W_ih [In, 4H]`, `P.W_hh [H, 4H]`, `P.bias [B, 4H]`; gates i, f, g, o are the
    column blocks of `x_t W_ih + h W_hh + bias`.

    Example: ``LSTM("lstm", 2, 5, 3, 4, DType.float32)`` on [2, 5, 3] gives [2, 4].
    """
    inner = layers.LSTM(_name(name), _int(batch, "batch"), _int(num_steps, "num_steps"),
                        _int(input_dim, "input_dim"), _int(hidden_dim, "hidden_dim"))
    return Module._make(inner, _dtype(dtype), 1)


def LIFCell(name: str, batch: int, num_steps: int, features: int, decay: float,
            threshold: float, alpha: float, dtype: DType) -> Module:
    """Leaky integrate-and-fire over x [B, T, F] -> spikes [B, T, F]; the spike's
    gradient is the sigmoid surrogate with slope `alpha`. Checked at build: dims > 0,
    decay in [0, 1), finite threshold > 0 and alpha > 0, the input exactly [B, T, F].

    Example: decay 0.5, threshold 1.0 and x = [.6, .7, .2] give spikes [0, 1, 0].
    """
    name = _name(name)
    b, t, f = (_int(v, w) for v, w in ((batch, "batch"), (num_steps, "num_steps"),
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
    """input Linear -> LIFCell -> output Linear per step, summed over time:
    [B, T, In] -> logits [B, classes]. Checks as LIFCell's.

    Example: ``SnnClassifier("snn", 2, 4, 3, 5, 2, 0.5, 1.0, 4.0, True, DType.float32)``.
    """
    name = _name(name)
    dims = {w: _int(v, w) for v, w in ((batch, "batch"), (num_steps, "num_steps"),
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
    """A Mamba-style block, [B, C, L] -> [B, C, L]: children conv (causal depthwise
    Conv1d, pad K-1), input, a, b, c, d, gate and out (Linear(B*L, C, C)); a selective
    scan of the activated projections, gated, then `out` (16 parameters).

    Example: ``Mamba("m", 2, 3, 8, 3, DType.float32)`` on [2, 3, 8].
    """
    name = _name(name)
    dims = {w: _int(v, w) for v, w in ((batch, "batch"), (channels, "channels"),
                                       (steps, "steps"), (kernel_size, "kernel_size"))}
    dt = _dtype(dtype)
    check = _strict(f"Mamba '{name}'", dims, dt,
                    (dims["batch"], dims["channels"], dims["steps"]))
    return Module._make(layers.Mamba(name, *dims.values()), dt, 1, check)


def FourierMamba(name: str, batch: int, channels: int, steps: int, kernel_size: int,
                 dtype: DType) -> Module:
    """`tanh(mamba(x) + fourier(x))` on [B, C, L]: children `mamba` (Mamba, 16
    parameters) and `fourier` (FourierFilter1d(B, C, L): `P.fourier.w_re/w_im`
    [B, C, L//2+1, 1]); Mamba's checks. float32 only (the FFT kernels are f32).

    Example: ``FourierMamba("fm", 2, 3, 8, 3, DType.float32)`` on [2, 3, 8].
    """
    name = _name(name)
    dims = {w: _int(v, w) for v, w in ((batch, "batch"), (channels, "channels"),
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
    """The FNO Fourier layer on [B, Cin, n] -> [B, Cout, n]: `P.W_re`, `P.W_im`
    [Cin, modes*Cout]; `Y[:, :, j] = rfft(x)[:, :, j] @ (W_re + i W_im)[:, j*Cout:(j+1)*Cout]`
    for j < modes, higher modes 0, then `irfft(Y, n)`. `modes > n//2+1` is a
    ValueError at build. float32 only.

    Example: ``SpectralConv1d("sc", 2, 3, 4, 16, 5, DType.float32)`` on [2, 3, 16].
    """
    name = _name(name)
    dt = _dtype(dtype)
    inner = layers.SpectralConv1d(name, _int(batch, "batch"), _int(in_channels, "in_channels"),
                                  _int(out_channels, "out_channels"), _int(n, "n"),
                                  _int(modes, "modes"))
    return Module._make(inner, dt, 1, _f32_only(name, dt))


def FourierFilter1d(name: str, batch: int, channels: int, n: int, dtype: DType) -> Module:
    """`irfft(w ⊙ rfft(x), n)` on [B, C, n] with one complex filter per sample and
    channel: `P.w_re`, `P.w_im` [B, C, n//2+1, 1]. float32 only.

    Example: ``FourierFilter1d("ff", 2, 3, 8, DType.float32)`` on [2, 3, 8].
    """
    name = _name(name)
    dt = _dtype(dtype)
    inner = layers.FourierFilter1d(name, _int(batch, "batch"), _int(channels, "channels"),
                                   _int(n, "n"))
    return Module._make(inner, dt, 1, _f32_only(name, dt))


def Fno1dBlock(name: str, batch: int, in_channels: int, out_channels: int, n: int,
               modes: int, dtype: DType) -> Module:
    """`tanh(spectral(x) + bypass(x))` on [B, Cin, n] -> [B, Cout, n]: children
    `spectral` (SpectralConv1d) and `bypass` (Conv1d kernel 1 with bias):
    `P.spectral.W_re, P.spectral.W_im, P.bypass.weight [Cout, Cin, 1], P.bypass.bias`.

    Example: ``Fno1dBlock("fno", 2, 3, 4, 16, 5, DType.float32)`` on [2, 3, 16].
    """
    name = _name(name)
    dt = _dtype(dtype)
    inner = layers.Fno1dBlock(name, _int(batch, "batch"), _int(in_channels, "in_channels"),
                              _int(out_channels, "out_channels"), _int(n, "n"),
                              _int(modes, "modes"))
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
    """Normalised graph convolution on x [N, Fin] -> [N, Fout]: child `linear`
    (Linear(E, Fin, Fout), no bias); edge e sends `(x[src_e] @ W) /
    sqrt(outdeg(src_e) * indeg(tgt_e))` into row tgt_e.

    Example: ``GraphConv("g", 3, 2, 2, [0, 1, 2], [1, 2, 0], DType.float32)`` with W = I
    maps rows [[1,2],[3,4],[5,6]] to [[5,6],[1,2],[3,4]] exactly.
    """
    name = _name(name)
    src, tgt = _indices(source_indices, "source_indices"), \
        _indices(target_indices, "target_indices")
    dims = {w: _int(v, w) for v, w in ((num_nodes, "num_nodes"),
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
    """Hypergraph convolution on x [N, Fin] -> [N, Fout]:
    `Dv^-1/2 H De^-1 Hᵀ Dv^-1/2 x @ W` with H the incidence pairs (node_indices[i],
    hyperedge_indices[i]); child `linear` (Linear(N, Fin, Fout), no bias).

    Example: ``HypergraphConv("h", 4, 2, 3, 2, [0, 1, 2, 3], [0, 0, 1, 1], DType.float32)``.
    """
    name = _name(name)
    nodes, edges_ = _indices(node_indices, "node_indices"), \
        _indices(hyperedge_indices, "hyperedge_indices")
    dims = {w: _int(v, w) for v, w in ((num_nodes, "num_nodes"),
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
