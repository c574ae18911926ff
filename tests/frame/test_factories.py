"""The sheet's later nn factories (§7.2): parameters, forward, gradients and a few SGD
steps, each against an independent torch (float64) implementation written from the
sheet's definition, through `build_backward_graph` + `build_sgd_update_graph`.

Tolerances: the forward output and the step-0 gradients use §10's float32 bound
(rtol 1e-5, atol 1e-6), with the atol scaled by the reference's largest magnitude for
gradients, whose entries are sums of many products (cancellation leaves small entries
with absolute, not relative, error). Three SGD steps (lr 0.05) compound those errors
through the parameters, so the trajectory check allows rtol 1e-4 on the losses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import frame

torch = pytest.importorskip("torch")
F32 = frame.DType.float32
LR, STEPS = 0.05, 3


def _compile_training(m: frame.nn.Module, in_shapes: Sequence[Sequence[int]],
                      out_shape: Sequence[int]) -> tuple[Any, Any, int]:
    """The backward graph of mse(m(inputs), target) w.r.t. every parameter and float
    input, and the SGD update of the parameters."""
    g = frame.Graph("f")
    xs = [g.add_graph_input(list(s), F32) for s in in_shapes]
    target = g.add_graph_input(list(out_shape), F32)
    ps = frame.nn.add_parameter_inputs(g, m)
    (y,) = m.build(g, xs, ps)
    assert list(y._shape) == list(out_shape)
    g.mark_output(y)
    g.mark_output(frame.mse_loss(g, y, target))
    n_in = len(xs)
    wrt = [*range(n_in), *range(n_in + 1, n_in + 1 + len(ps))]
    back = frame.compile(frame.build_backward_graph(g, 1, wrt), "cpu")
    upd = frame.compile(frame.build_sgd_update_graph(
        [(s, d) for _, s, d in m.parameters()], LR), "cpu") if m.parameters() else None
    return back, upd, n_in


def _close(got: np.ndarray, ref: np.ndarray, what: str, scale_atol: bool = False) -> None:
    atol = 1e-6 * (max(1.0, float(np.abs(ref).max())) if scale_atol else 1.0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=atol, err_msg=what)


def check_factory(m: frame.nn.Module, inputs: Sequence[np.ndarray],
                  params: Sequence[np.ndarray], ref: Callable[..., Any],
                  input_grads: bool = True) -> None:
    """Forward, step-0 gradients (inputs and parameters) and STEPS SGD steps of
    mse(m(x), target) against `ref(torch inputs, torch params) -> y` in float64."""
    rng = np.random.default_rng(7)
    with torch.no_grad():
        y_ref = ref([torch.from_numpy(x).double() for x in inputs],
                    [torch.from_numpy(p).double() for p in params])
    target = rng.standard_normal(tuple(y_ref.shape)).astype(np.float32)
    back, upd, n_in = _compile_training(m, [x.shape for x in inputs], y_ref.shape)
    cur = [p.copy() for p in params]
    tp = [torch.from_numpy(p).double().requires_grad_() for p in params]
    for step in range(STEPS):
        outs = back.run([frame.from_numpy(a) for a in (*inputs, target, *cur)])
        tx = [torch.from_numpy(x).double().requires_grad_() for x in inputs]
        ty = ref(tx, tp)
        loss = ((ty - torch.from_numpy(target).double()) ** 2).mean()
        grads = torch.autograd.grad(loss, [*tx, *tp], allow_unused=True)
        if step == 0:
            _close(outs[0].numpy(), ty.detach().numpy(), "forward")
            for i, (got, want) in enumerate(zip(outs[2:], grads, strict=True)):
                if i < n_in and not input_grads:
                    continue
                want_np = np.zeros_like(got.numpy()) if want is None else want.numpy()
                _close(got.numpy(), want_np, f"gradient {i}", scale_atol=True)
        else:
            np.testing.assert_allclose(outs[1].numpy(), loss.item(), rtol=1e-4, atol=1e-6,
                                       err_msg=f"loss at step {step}")
        if upd is None:  # nothing to train: the forward and input gradients suffice
            break
        new = upd.run([frame.from_numpy(a) for a in cur] +
                      [o for o in outs[2 + n_in:]])
        cur = [o.numpy() for o in new]
        with torch.no_grad():
            for t, gr in zip(tp, grads[n_in:], strict=True):
                if gr is not None:
                    t -= LR * gr
        tp = [t.detach().requires_grad_() for t in tp]


def _params(m: frame.nn.Module, rng: np.random.Generator, scale: float = 0.5
            ) -> list[np.ndarray]:
    return [(scale * rng.standard_normal(s)).astype(np.float32) for _, s, _ in m.parameters()]


def _names(m: frame.nn.Module) -> list[tuple[str, list[int]]]:
    return [(n, s) for n, s, _ in m.parameters()]


# ------------------------------------------------------------------------ torch references


def t_linear(x: Any, w: Any, b: Any | None = None) -> Any:
    y = x @ w
    return y if b is None else y + b


def t_layer_norm(x: Any, gamma: Any, beta: Any, eps: float = 1e-5) -> Any:
    return torch.nn.functional.layer_norm(x, gamma.shape, gamma, beta, eps)


def t_mha(x: Any, ps: Sequence[Any], batch: int, seq: int, heads: int) -> Any:
    e = x.shape[1]
    dh = e // heads
    q, k, v = (t_linear(x, ps[2 * i], ps[2 * i + 1]) for i in range(3))
    rows = []
    for b in range(batch):
        cols = []
        for h in range(heads):
            sl = (slice(b * seq, (b + 1) * seq), slice(h * dh, (h + 1) * dh))
            att = torch.softmax(q[sl] @ k[sl].T / math.sqrt(dh), dim=-1)
            cols.append(att @ v[sl])
        rows.append(torch.cat(cols, dim=1))
    return t_linear(torch.cat(rows, dim=0), ps[6], ps[7])


# ------------------------------------------------------------------------------- factories


def test_layer_norm() -> None:
    m = frame.nn.LayerNorm("ln", 6, 1e-5, F32)
    assert _names(m) == [("ln.gamma", [6]), ("ln.beta", [6])]
    rng = np.random.default_rng(0)
    check_factory(m, [rng.standard_normal((5, 6)).astype(np.float32)], _params(m, rng),
                  lambda x, p: t_layer_norm(x[0], p[0], p[1]))


def test_multihead_attention() -> None:
    b, s, e, h = 2, 3, 8, 2
    m = frame.nn.MultiheadAttention("mha", b, s, e, h, True, F32)
    assert _names(m) == [(f"mha.{c}.{w}", [e, e] if w == "weight" else [b * s, e])
                         for c in "qkvo" for w in ("weight", "bias")]
    rng = np.random.default_rng(1)
    check_factory(m, [rng.standard_normal((b * s, e)).astype(np.float32)], _params(m, rng),
                  lambda x, p: t_mha(x[0], p, b, s, h))


def test_transformer_encoder_block() -> None:
    b, s, e, h, f = 2, 3, 8, 2, 12
    m = frame.nn.TransformerEncoderBlock("enc", b, s, e, h, f, True, F32)
    names = [n for n, _ in _names(m)]
    assert len(names) == 16 and names[8:10] == ["enc.ln1.gamma", "enc.ln1.beta"]
    assert names[10:14] == ["enc.ffn1.weight", "enc.ffn1.bias", "enc.ffn2.weight",
                            "enc.ffn2.bias"]
    rng = np.random.default_rng(2)

    def ref(x: list[Any], p: list[Any]) -> Any:
        y1 = t_layer_norm(x[0] + t_mha(x[0], p[:8], b, s, h), p[8], p[9])
        ff = t_linear(torch.relu(t_linear(y1, p[10], p[11])), p[12], p[13])
        return t_layer_norm(y1 + ff, p[14], p[15])
    check_factory(m, [rng.standard_normal((b * s, e)).astype(np.float32)], _params(m, rng),
                  ref)


def test_aff() -> None:
    c = 3
    m = frame.nn.AFF("aff", c, F32)
    assert _names(m) == [("aff.c1.weight", [c, c, 1, 1]), ("aff.c1.bias", [c]),
                         ("aff.c2.weight", [c, c, 1, 1]), ("aff.c2.bias", [c])]
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, c, 4, 5)).astype(np.float32) for _ in range(2)]
    conv = torch.nn.functional.conv2d

    def ref(x: list[Any], p: list[Any]) -> Any:
        mm = torch.sigmoid(conv(torch.relu(conv(x[0] + x[1], p[0], p[1])), p[2], p[3]))
        return mm * x[0] + (1 - mm) * x[1]
    check_factory(m, xs, _params(m, rng), ref)


def test_dwt2d_haar_bands_and_gradient() -> None:
    m = frame.nn.Dwt2d("dwt", 2, "haar")
    assert m.parameters() == []
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)  # odd H: floor

    def ref(xs: list[Any], p: list[Any]) -> Any:
        t = xs[0][:, :, :4, :]
        a, b = t[:, :, 0::2, 0::2], t[:, :, 0::2, 1::2]
        c, d = t[:, :, 1::2, 0::2], t[:, :, 1::2, 1::2]
        bands = [(a + b + c + d) / 2, (a + b - c - d) / 2, (a - b + c - d) / 2,
                 (a - b - c + d) / 2]
        return torch.stack(bands, dim=2).reshape(1, 8, 2, 2)
    check_factory(m, [x], [], ref)


@pytest.mark.parametrize("kind", ["haar", "db4"])
def test_dwt1d(kind: str) -> None:
    m = frame.nn.Dwt1d("dwt", 2, kind)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 9)).astype(np.float32)
    r = 1 / math.sqrt(2)
    s3 = math.sqrt(3)
    h = [v / (4 * math.sqrt(2)) for v in (1 + s3, 3 + s3, 3 - s3, 1 - s3)]
    low, high = ([r, r], [r, -r]) if kind == "haar" else (h, [h[3], -h[2], h[1], -h[0]])

    def ref(xs: list[Any], p: list[Any]) -> Any:
        w = torch.tensor([[low], [high]] * 2, dtype=torch.float64)
        return torch.nn.functional.conv1d(xs[0], w, stride=2, groups=2)
    check_factory(m, [x], [], ref)


def test_dwt_shapes_and_kinds() -> None:
    g = frame.Graph("d")
    x2 = g.add_graph_input([1, 2, 4, 4], F32)
    assert frame.nn.Dwt2d("a", 2, "haar").build(g, [x2], [])[0]._shape == (1, 8, 2, 2)
    x1 = g.add_graph_input([1, 2, 8], F32)
    assert frame.nn.Dwt1d("b", 2, "db4").build(g, [x1], [])[0]._shape == (1, 4, 3)
    db4 = frame.nn.Dwt2d("c", 2, "db4")  # accepted by the factory ...
    with pytest.raises(ValueError):  # ... but not at build
        db4.build(g, [x2], [])
    with pytest.raises(ValueError):
        frame.nn.Dwt2d("c", 2, "sym5")
    with pytest.raises(ValueError):
        frame.nn.Dwt1d("c", 2, "sym5")


def test_lstm() -> None:
    b, t, n_in, hd = 2, 4, 3, 5
    m = frame.nn.LSTM("lstm", b, t, n_in, hd, F32)
    assert _names(m) == [("lstm.W_ih", [n_in, 4 * hd]), ("lstm.W_hh", [hd, 4 * hd]),
                         ("lstm.bias", [b, 4 * hd])]
    rng = np.random.default_rng(6)

    def ref(x: list[Any], p: list[Any]) -> Any:
        h = torch.zeros(b, hd, dtype=torch.float64)
        c = torch.zeros(b, hd, dtype=torch.float64)
        for s in range(t):
            z = x[0][:, s] @ p[0] + h @ p[1] + p[2]
            i, f, gg, o = z.split(hd, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h
    check_factory(m, [rng.standard_normal((b, t, n_in)).astype(np.float32)],
                  _params(m, rng), ref)


class _Spike(torch.autograd.Function):
    """heaviside forward (>= 0), sigmoid surrogate backward (sheet §4)."""

    @staticmethod
    def forward(ctx: Any, x: Any, alpha: float) -> Any:
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, gy: Any) -> Any:
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(ctx.alpha * x)
        return gy * ctx.alpha * s * (1 - s), None


def t_lif(x: Any, decay: float, threshold: float, alpha: float) -> Any:
    v = torch.zeros_like(x[:, 0])
    out = []
    for s in range(x.shape[1]):
        v_pre = decay * v + x[:, s]
        spike = _Spike.apply(v_pre + (-threshold), alpha)
        out.append(spike)
        v = v_pre * (1 - spike)
    return torch.stack(out, dim=1)


def test_lif_cell_sheet_example() -> None:
    m = frame.nn.LIFCell("lif", 1, 3, 1, 0.5, 1.0, 2.0, F32)
    g = frame.Graph("l")
    x = g.add_graph_input([1, 3, 1], F32)
    (y,) = m.build(g, [x], [])
    g.mark_output(y)
    (out,) = frame.compile(g, "cpu").run([frame.from_numpy(
        np.array([.6, .7, .2], np.float32).reshape(1, 3, 1))])
    assert out.numpy().reshape(-1).tolist() == [0.0, 1.0, 0.0]


def test_lif_cell_gradients() -> None:
    b, t, f = 2, 5, 4
    m = frame.nn.LIFCell("lif", b, t, f, 0.6, 0.5, 3.0, F32)
    rng = np.random.default_rng(8)
    # Inputs kept away from the threshold so the float32 and float64 spikes agree.
    x = rng.uniform(-1, 1, (b, t, f)).astype(np.float32)
    x = np.where(np.abs(x - 0.5) < 0.05, x + 0.1, x).astype(np.float32)
    check_factory(m, [x], [], lambda xs, p: t_lif(xs[0], 0.6, 0.5, 3.0))


def test_snn_classifier() -> None:
    b, t, n_in, hd, nc = 2, 3, 4, 5, 3
    m = frame.nn.SnnClassifier("snn", b, t, n_in, hd, nc, 0.5, 0.3, 4.0, True, F32)
    assert [n for n, _ in _names(m)] == ["snn.input.weight", "snn.input.bias",
                                         "snn.output.weight", "snn.output.bias"]
    rng = np.random.default_rng(9)

    def ref(x: list[Any], p: list[Any]) -> Any:
        h = t_linear(x[0].reshape(b * t, n_in), p[0], p[1]).reshape(b, t, hd)
        s = t_lif(h, 0.5, 0.3, 4.0).reshape(b * t, hd)
        return t_linear(s, p[2], p[3]).reshape(b, t, nc).sum(dim=1)
    x = rng.standard_normal((b, t, n_in)).astype(np.float32)
    check_factory(m, [x], _params(m, rng), ref)


def t_mamba(x: Any, p: Sequence[Any], k: int) -> Any:
    b, c, length = x.shape
    u = torch.nn.functional.conv1d(x, p[0], p[1], padding=k - 1, groups=c)[:, :, :length]
    flat = u.transpose(1, 2).reshape(b * length, c)
    acts = [torch.tanh, torch.sigmoid, torch.tanh, torch.tanh, torch.tanh, torch.sigmoid]
    proj = [a(t_linear(flat, p[2 + 2 * j], p[3 + 2 * j])).reshape(b, length, c).transpose(1, 2)
            for j, a in enumerate(acts)]
    xi, a, bb, cc, d, gate = proj
    h = torch.zeros(b, c, dtype=x.dtype)
    ys = []
    for s in range(length):
        h = a[:, :, s] * h + bb[:, :, s] * xi[:, :, s]
        ys.append(cc[:, :, s] * h + d[:, :, s] * xi[:, :, s])
    sc = torch.stack(ys, dim=2) * gate
    out = t_linear(sc.transpose(1, 2).reshape(b * length, c), p[14], p[15])
    return out.reshape(b, length, c).transpose(1, 2)


def test_mamba() -> None:
    b, c, length, k = 2, 3, 6, 3
    m = frame.nn.Mamba("m", b, c, length, k, F32)
    names = _names(m)
    assert names[:2] == [("m.conv.weight", [c, 1, k]), ("m.conv.bias", [c])]
    assert [n for n, _ in names[2::2]] == [f"m.{p}.weight" for p in
                                           ("input", "a", "b", "c", "d", "gate", "out")]
    assert names[3] == ("m.input.bias", [b * length, c])
    rng = np.random.default_rng(10)
    x = rng.standard_normal((b, c, length)).astype(np.float32)
    check_factory(m, [x], _params(m, rng), lambda xs, p: t_mamba(xs[0], p, k))


def test_graph_conv_sheet_example_is_exact() -> None:
    m = frame.nn.GraphConv("g", 3, 2, 2, [0, 1, 2], [1, 2, 0], F32)
    assert _names(m) == [("g.linear.weight", [2, 2])]
    g = frame.Graph("gc")
    x = g.add_graph_input([3, 2], F32)
    (y,) = m.build(g, [x], frame.nn.add_parameter_inputs(g, m))
    g.mark_output(y)
    (out,) = frame.compile(g, "cpu").run([
        frame.from_numpy(np.array([[1, 2], [3, 4], [5, 6]], np.float32)),
        frame.from_numpy(np.eye(2, dtype=np.float32))])
    assert out.numpy().tolist() == [[5, 6], [1, 2], [3, 4]]


def test_graph_conv_gradients() -> None:
    src, tgt = [0, 1, 1, 2, 3, 3, 0], [1, 2, 0, 0, 1, 1, 3]  # repeated edges accumulate
    m = frame.nn.GraphConv("g", 4, 3, 2, src, tgt, F32)
    rng = np.random.default_rng(11)
    outdeg = np.bincount(src, minlength=4)
    indeg = np.bincount(tgt, minlength=4)

    def ref(x: list[Any], p: list[Any]) -> Any:
        norm = torch.tensor(1 / np.sqrt(outdeg[src] * indeg[tgt]))[:, None]
        msg = (x[0][src] @ p[0]) * norm
        return torch.zeros(4, 2, dtype=torch.float64).index_add(0, torch.tensor(tgt), msg)
    check_factory(m, [rng.standard_normal((4, 3)).astype(np.float32)], _params(m, rng), ref)


def test_hypergraph_conv() -> None:
    nodes, edges = [0, 1, 2, 2, 3, 0], [0, 0, 0, 1, 1, 1]  # node 4 has degree 0
    m = frame.nn.HypergraphConv("h", 5, 2, 3, 2, nodes, edges, F32)
    assert _names(m) == [("h.linear.weight", [3, 2])]
    rng = np.random.default_rng(12)
    hm = torch.zeros(5, 2, dtype=torch.float64)
    hm[nodes, edges] = 1.0
    dv, de = hm.sum(1), hm.sum(0)
    dv_is = torch.where(dv > 0, dv.clamp(min=1) ** -0.5, torch.zeros_like(dv))

    def ref(x: list[Any], p: list[Any]) -> Any:
        a = torch.diag(dv_is) @ hm @ torch.diag(1 / de) @ hm.T @ torch.diag(dv_is)
        return (a @ x[0]) @ p[0]
    check_factory(m, [rng.standard_normal((5, 3)).astype(np.float32)], _params(m, rng), ref)


def t_rfft(x: Any) -> tuple[Any, Any]:
    z = torch.fft.rfft(x, dim=-1)
    return z.real, z.imag


def t_irfft(re: Any, im: Any, n: int) -> Any:
    return torch.fft.irfft(torch.complex(re, im), n=n, dim=-1)


def t_spectral_conv(x: Any, w_re: Any, w_im: Any, cout: int, modes: int) -> Any:
    b, cin, n = x.shape
    xr, xi = t_rfft(x)
    k = n // 2 + 1
    yr = torch.zeros(b, cout, k, dtype=x.dtype)
    yi = torch.zeros(b, cout, k, dtype=x.dtype)
    ys_r, ys_i = [], []
    for j in range(modes):
        wr, wi = w_re[:, j * cout:(j + 1) * cout], w_im[:, j * cout:(j + 1) * cout]
        ys_r.append(xr[:, :, j] @ wr - xi[:, :, j] @ wi)
        ys_i.append(xr[:, :, j] @ wi + xi[:, :, j] @ wr)
    yr = torch.cat([torch.stack(ys_r, dim=2), yr[:, :, modes:]], dim=2)
    yi = torch.cat([torch.stack(ys_i, dim=2), yi[:, :, modes:]], dim=2)
    return t_irfft(yr, yi, n)


def t_fourier_filter(x: Any, w_re: Any, w_im: Any) -> Any:
    xr, xi = t_rfft(x)
    wr, wi = w_re[..., 0], w_im[..., 0]
    return t_irfft(wr * xr - wi * xi, wr * xi + wi * xr, x.shape[-1])


@pytest.mark.parametrize("n,modes", [(16, 5), (12, 7), (9, 3)])
def test_spectral_conv1d(n: int, modes: int) -> None:
    b, cin, cout = 2, 3, 4
    m = frame.nn.SpectralConv1d("sc", b, cin, cout, n, modes, F32)
    assert _names(m) == [("sc.W_re", [cin, modes * cout]), ("sc.W_im", [cin, modes * cout])]
    rng = np.random.default_rng(13)
    x = rng.standard_normal((b, cin, n)).astype(np.float32)
    check_factory(m, [x], _params(m, rng),
                  lambda xs, p: t_spectral_conv(xs[0], p[0], p[1], cout, modes))


@pytest.mark.parametrize("n", [8, 7])
def test_fourier_filter1d(n: int) -> None:
    b, c = 2, 3
    m = frame.nn.FourierFilter1d("ff", b, c, n, F32)
    assert _names(m) == [("ff.w_re", [b, c, n // 2 + 1, 1]), ("ff.w_im", [b, c, n // 2 + 1, 1])]
    rng = np.random.default_rng(14)
    x = rng.standard_normal((b, c, n)).astype(np.float32)
    check_factory(m, [x], _params(m, rng),
                  lambda xs, p: t_fourier_filter(xs[0], p[0], p[1]))


def test_fno1d_block() -> None:
    b, cin, cout, n, modes = 2, 3, 2, 16, 4
    m = frame.nn.Fno1dBlock("fno", b, cin, cout, n, modes, F32)
    assert _names(m) == [("fno.spectral.W_re", [cin, modes * cout]),
                         ("fno.spectral.W_im", [cin, modes * cout]),
                         ("fno.bypass.weight", [cout, cin, 1]), ("fno.bypass.bias", [cout])]
    rng = np.random.default_rng(15)
    x = rng.standard_normal((b, cin, n)).astype(np.float32)

    def ref(xs: list[Any], p: list[Any]) -> Any:
        by = torch.nn.functional.conv1d(xs[0], p[2], p[3])
        return torch.tanh(t_spectral_conv(xs[0], p[0], p[1], cout, modes) + by)
    check_factory(m, [x], _params(m, rng), ref)


def test_fourier_mamba() -> None:
    b, c, length, k = 2, 3, 8, 3
    m = frame.nn.FourierMamba("fm", b, c, length, k, F32)
    names = _names(m)
    assert len(names) == 18 and names[0] == ("fm.mamba.conv.weight", [c, 1, k])
    assert names[16:] == [("fm.fourier.w_re", [b, c, length // 2 + 1, 1]),
                          ("fm.fourier.w_im", [b, c, length // 2 + 1, 1])]
    rng = np.random.default_rng(16)
    x = rng.standard_normal((b, c, length)).astype(np.float32)

    def ref(xs: list[Any], p: list[Any]) -> Any:
        return torch.tanh(t_mamba(xs[0], p[:16], k) + t_fourier_filter(xs[0], p[16], p[17]))
    check_factory(m, [x], _params(m, rng), ref)


# ------------------------------------------------------------------------ §7.3 build checks


def _build(m: frame.nn.Module, shapes: Sequence[Sequence[int]],
           dtype: frame.DType = F32) -> None:
    g = frame.Graph("b")
    xs = [g.add_graph_input(list(s), dtype) for s in shapes]
    m.build(g, xs, frame.nn.add_parameter_inputs(g, m))


@pytest.mark.parametrize("make,shapes", [
    (lambda: frame.nn.LayerNorm("ln", 4, 0.0, F32), [[2, 4]]),
    (lambda: frame.nn.LayerNorm("ln", 4, -1.0, F32), [[2, 4]]),
    (lambda: frame.nn.MultiheadAttention("m", 1, 2, 5, 2, True, F32), [[2, 5]]),
    (lambda: frame.nn.LIFCell("l", 1, 2, 3, 1.0, 1.0, 1.0, F32), [[1, 2, 3]]),
    (lambda: frame.nn.LIFCell("l", 1, 2, 3, 0.5, 0.0, 1.0, F32), [[1, 2, 3]]),
    (lambda: frame.nn.LIFCell("l", 1, 2, 3, 0.5, 1.0, math.inf, F32), [[1, 2, 3]]),
    (lambda: frame.nn.LIFCell("l", 1, 2, 3, 0.5, 1.0, 1.0, F32), [[1, 3, 3]]),
    (lambda: frame.nn.LIFCell("l", 0, 2, 3, 0.5, 1.0, 1.0, F32), [[1, 2, 3]]),
    (lambda: frame.nn.SnnClassifier("s", 1, 2, 3, 4, 2, -0.1, 1.0, 1.0, True, F32),
     [[1, 2, 3]]),
    (lambda: frame.nn.Mamba("m", 1, 2, 4, 3, F32), [[1, 2, 5]]),
    (lambda: frame.nn.Mamba("m", 1, 2, 4, 0, F32), [[1, 2, 4]]),
    (lambda: frame.nn.GraphConv("g", 3, 2, 2, [], [], F32), [[3, 2]]),
    (lambda: frame.nn.GraphConv("g", 3, 2, 2, [0, 1], [1], F32), [[3, 2]]),
    (lambda: frame.nn.GraphConv("g", 3, 2, 2, [0, 3], [1, 2], F32), [[3, 2]]),
    (lambda: frame.nn.GraphConv("g", 3, 2, 2, [0, -1], [1, 2], F32), [[3, 2]]),
    (lambda: frame.nn.GraphConv("g", 3, 2, 2, [0, 2**60], [1, 2], F32), [[3, 2]]),
    (lambda: frame.nn.HypergraphConv("h", 3, 1, 2, 2, [0, 0], [0, 0], F32), [[3, 2]]),
    (lambda: frame.nn.HypergraphConv("h", 3, 1, 2, 2, [0, 1], [0, 1], F32), [[3, 2]]),
    (lambda: frame.nn.HypergraphConv("h", 3, 1, 2, 2, [0, 1], [0], F32), [[3, 2]]),
    (lambda: frame.nn.AFF("a", 2, F32), [[1, 2, 3, 3]]),  # one input of two
    (lambda: frame.nn.SpectralConv1d("s", 1, 2, 2, 8, 6, F32), [[1, 2, 8]]),
    (lambda: frame.nn.SpectralConv1d("s", 1, 2, 2, 8, 3, F32), [[1, 2, 9]]),
    (lambda: frame.nn.FourierMamba("f", 1, 2, 4, 2, F32), [[1, 2, 5]]),
    (lambda: frame.nn.FourierFilter1d("f", 1, 2, 8, F32), [[1, 2, 8, 1]]),
])
def test_build_time_errors(make: Callable[[], frame.nn.Module],
                           shapes: list[list[int]]) -> None:
    m = make()  # factories never raise for bad numbers
    frame.nn.add_parameter_inputs(frame.Graph("p"), m) if all(
        all(d >= 0 for d in s) for _, s, _ in m.parameters()) else None
    with pytest.raises(ValueError):
        _build(m, shapes)


def test_strict_factories_check_the_input_dtype() -> None:
    m = frame.nn.LIFCell("l", 1, 2, 3, 0.5, 1.0, 1.0, F32)
    with pytest.raises(ValueError, match="dtype"):
        _build(m, [[1, 2, 3]], frame.DType.float16)


@pytest.mark.parametrize("call", [
    lambda: frame.nn.LayerNorm(3, 4, 1e-5, F32),
    lambda: frame.nn.LayerNorm("ln", 4.0, 1e-5, F32),
    lambda: frame.nn.LSTM("l", 1, 2, 3, "4", F32),
    lambda: frame.nn.Dwt2d("d", 2, 5),
    lambda: frame.nn.GraphConv("g", 3, 2, 2, "01", [1, 2], F32),
    lambda: frame.nn.LIFCell("l", 1, 2, 3, "0.5", 1.0, 1.0, F32),
    lambda: frame.nn.MultiheadAttention("m", 1, 2, 4, 2, True, "float32"),
])
def test_argument_type_errors(call: Callable[[], Any]) -> None:
    with pytest.raises(TypeError):
        call()
