"""frame.nn.Conv2d / Conv1d: parameters, forward and gradients against torch."""

from __future__ import annotations

import numpy as np
import pytest

import frame

torch = pytest.importorskip("torch")
F32 = frame.DType.float32
F16 = frame.DType.float16


@pytest.mark.parametrize("dims,stride,padding,groups,bias", [
    (2, [1, 1], [0, 0], 1, True),
    (2, [2, 1], [1, 2], 2, True),
    (1, [2], [1], 3, False),
])
def test_conv_forward_and_gradients(dims: int, stride: list[int], padding: list[int],
                                    groups: int, bias: bool) -> None:
    rng = np.random.default_rng(dims * 10 + groups)
    cin, cout = 6, 3 * groups if groups > 1 else 4
    if dims == 2:
        xs, k = [2, cin, 7, 6], [3, 2]
        m = frame.nn.Conv2d("conv", cin, cout, k, stride, padding, groups, bias, F32)
        conv = torch.nn.functional.conv2d
    else:
        xs, k = [2, cin, 9], [3]
        m = frame.nn.Conv1d("conv", cin, cout, k[0], stride[0], padding[0], groups, bias, F32)
        conv = torch.nn.functional.conv1d
    names = [p[0] for p in m.parameters()]
    assert names == (["conv.weight", "conv.bias"] if bias else ["conv.weight"])
    assert m.parameters()[0][1] == [cout, cin // groups, *k]
    g = frame.Graph("c")
    x = g.add_graph_input(xs, F32)
    ps = frame.nn.add_parameter_inputs(g, m)
    (y,) = m.build(g, [x], ps)
    g.mark_output(frame.sum(g, frame.square(g, y), []))
    back = frame.compile(frame.build_backward_graph(g, 0, [0, *range(1, 1 + len(ps))]), "cpu")
    arrays = [rng.standard_normal(xs).astype(np.float32)] + [
        rng.standard_normal(shape).astype(np.float32) for _, shape, _ in m.parameters()]
    outs = back.run([frame.from_numpy(a) for a in arrays])
    # torch in float64 on the same float32 values: the tolerance measures our rounding.
    tx = [torch.from_numpy(a).double().requires_grad_() for a in arrays]
    ty = conv(tx[0], tx[1], tx[2] if bias else None, stride=tuple(stride),
              padding=tuple(padding), groups=groups)
    loss = (ty * ty).sum()
    loss.backward()
    np.testing.assert_allclose(outs[0].numpy(), loss.item(), rtol=1e-5)
    for got, t in zip(outs[1:], tx, strict=True):
        ref = t.grad.numpy()
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5,
                                   atol=1e-6 * max(1.0, float(np.abs(ref).max())))


def test_conv_argument_errors() -> None:
    with pytest.raises(TypeError):
        frame.nn.Conv2d("c", 2, 2, [3], [1, 1], [0, 0], 1, True, F32)  # kernel_hw length
    m = frame.nn.Conv2d("c", 3, 4, [1, 1], [1, 1], [0, 0], 2, True, F32)  # 2 does not divide 3
    g = frame.Graph("g")
    x = g.add_graph_input([1, 3, 4, 4], F32)
    ps = frame.nn.add_parameter_inputs(g, m)
    with pytest.raises(ValueError):
        m.build(g, [x], ps)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_modules_match_torch(kind: str) -> None:
    rng = np.random.default_rng(3)
    factory = frame.nn.MaxPool2d if kind == "max" else frame.nn.AvgPool2d
    m = factory("pool", [3, 2], [2, 1], [1, 1])
    assert m.parameters() == []
    g = frame.Graph("p")
    x = g.add_graph_input([2, 3, 6, 5], F32)
    (y,) = m.build(g, [x], [])
    g.mark_output(y)
    g.mark_output(frame.sum(g, frame.square(g, y), []))
    back = frame.compile(frame.build_backward_graph(g, 1, [0]), "cpu")
    xs = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    out, loss, grad = back.run([frame.from_numpy(xs)])
    tx = torch.from_numpy(xs).requires_grad_()
    if kind == "max":
        ty = torch.nn.functional.max_pool2d(tx, (3, 2), (2, 1), (1, 1))
    else:
        ty = torch.nn.functional.avg_pool2d(tx, (3, 2), (2, 1), (1, 1), count_include_pad=True)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(out.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_pool_padding_larger_than_half_the_kernel_is_rejected_at_build() -> None:
    m = frame.nn.MaxPool2d("pool", [2, 2], [1, 1], [2, 0])
    g = frame.Graph("p")
    x = g.add_graph_input([1, 1, 4, 4], F32)
    with pytest.raises(ValueError):
        m.build(g, [x], [])


def test_selective_scan_sheet_example_and_gradients() -> None:
    g = frame.Graph("scan")
    vs = [g.add_graph_input([3], F32) for _ in range(5)]
    y = frame._core.selective_scan(g, *vs)
    g.mark_output(y)
    g.mark_output(frame.sum(g, frame.square(g, y), []))
    ex = frame.compile(frame.build_backward_graph(g, 1, [0, 1, 2, 3, 4]), "cpu")
    arrays = [np.array(v, dtype=np.float32) for v in (
        [1, 2, -1], [.5, .25, -.5], [2, 1, 3], [1, 2, .5], [.1, -1, 2])]
    out = ex.run([frame.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(out[0].numpy(), [2.1, 3.0, -4.125], rtol=1e-6)
    tv = [torch.from_numpy(a).double().requires_grad_() for a in arrays]
    x, a, b, c, d = tv
    h, ys = torch.zeros((), dtype=torch.float64), []
    for t in range(3):
        h = a[t] * h + b[t] * x[t]
        ys.append(c[t] * h + d[t] * x[t])
    (torch.stack(ys) ** 2).sum().backward()
    for got, t in zip(out[2:], tv, strict=True):
        np.testing.assert_allclose(got.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        frame._core.selective_scan(g, vs[0], vs[1], vs[2], vs[3], g.add_graph_input([4], F32))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scatter_add_sheet_example(index_dtype: type) -> None:
    g = frame.Graph("scatter")
    u = g.add_graph_input([3, 2], F32)
    i = g.add_graph_input([3], frame.DType.int32 if index_dtype is np.int32
                          else frame.DType.int64)
    g.mark_output(frame._core.scatter_add(g, u, i, [4, 2]))
    ex = frame.compile(g, "cpu")
    rows = frame.from_numpy(np.array([[10, 20], [1, 2], [100, 200]], dtype=np.float32))
    (out,) = ex.run([rows, frame.from_numpy(np.array([2, 0, 2], dtype=index_dtype))])
    np.testing.assert_array_equal(out.numpy(), [[1, 2], [0, 0], [110, 220], [0, 0]])
    with pytest.raises(ValueError):  # an index outside [0, V) at run time
        ex.run([rows, frame.from_numpy(np.array([2, 0, 4], dtype=index_dtype))])


def test_scatter_add_index_check_survives_differentiation() -> None:
    """The backward graph refuses an out-of-range index like the forward one (it used
    to drop the check and silently lose the row)."""
    g = frame.Graph("g")
    u = g.add_graph_input([3, 2], F32)
    i = g.add_graph_input([3], frame.DType.int64)
    s = frame._core.scatter_add(g, u, i, [2, 2])
    g.mark_output(frame.sum(g, frame.square(g, s), []))
    back = frame.compile(frame.build_backward_graph(g, 0, [0]), "cpu")
    uv = frame.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    for bad in ([1, 2, 0], [1, -1, 0]):
        with pytest.raises(ValueError, match="scatter_add index out of range"):
            back.run([uv, frame.from_numpy(np.array(bad, np.int64))])
    loss, grad = back.run([uv, frame.from_numpy(np.array([1, 1, 0], np.int64))])
    # rows 0 and 1 land in row 1, row 2 in row 0: d sum(s^2) / du = 2 s[index]
    s_ref = np.array([[4.0, 5.0], [2.0, 4.0]], np.float32)
    assert np.array_equal(grad.numpy(), 2 * s_ref[[1, 1, 0]])


def test_flatten_keeps_float16() -> None:
    g = frame.Graph("f16")
    x = g.add_graph_input([2, 3, 4], F16)
    (y,) = frame.nn.Flatten("f").build(g, [x], [])
    g.mark_output(y)
    a = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    (out,) = frame.compile(g, "cpu").run([frame.from_numpy(a)])
    assert out.dtype == F16 and np.array_equal(out.numpy(), a.reshape(2, 12))


@pytest.mark.parametrize("dtype", [frame.DType.int32, frame.DType.int64])
def test_gradients_only_for_float_inputs(dtype: frame.DType) -> None:
    # (bfloat16 inputs have gradients: tests/frame/test_bf16.py)
    g = frame.Graph("g")
    x = g.add_graph_input([3], F32)
    g.add_graph_input([2], dtype)
    g.mark_output(frame.sum(g, x, []))
    with pytest.raises(ValueError, match="input 1"):
        frame.build_backward_graph(g, 0, [1])
