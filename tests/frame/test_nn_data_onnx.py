"""`frame.nn`, `frame.data` and the ONNX weight exchange through the `frame` package.

nn: sheet section 7 (Module, Linear, Relu, Sigmoid, Flatten, Sequential, MseLoss,
add_parameter_inputs) --
only the factories implemented today; the others are listed in docs/python-api.md.
data: section 8 through the facade (the shuffle algorithm itself is covered by tests/data).
ONNX: section 6 round trips, checked with the optional `onnx` package.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from frame_test_support import F32, assert_close
from onnx import numpy_helper

import frame
from frame import _core, nn
from frame.data import DataLoader, DataLoaderOptions, TensorDataset

# ===================================================================== nn: parameters


def test_sequential_parameter_names_include_the_root() -> None:
    seq = nn.Sequential("seq", [nn.Linear("0", 4, 2, 3, True, F32), nn.Relu("1")])
    assert [p[0] for p in seq.parameters()] == ["seq.0.weight", "seq.0.bias"]
    assert seq.parameters() == [("seq.0.weight", [2, 3], F32), ("seq.0.bias", [4, 3], F32)]
    assert all(type(shape) is list for _, shape, _ in seq.parameters())
    assert seq.name == "seq"


def test_linear_parameters_with_and_without_bias() -> None:
    assert nn.Linear("fc", 5, 3, 2, True, F32).parameters() == [
        ("fc.weight", [3, 2], F32), ("fc.bias", [5, 2], F32)]  # full-shape bias
    assert nn.Linear(name="fc", batch=5, in_dim=3, out_dim=2, with_bias=False,
                     dtype=F32).parameters() == [("fc.weight", [3, 2], F32)]
    assert nn.Relu("r").parameters() == [] and nn.MseLoss("loss").parameters() == []
    assert nn.Linear("fc", 1, 1, 1, False, frame.DType.float16).parameters() == [
        ("fc.weight", [1, 1], frame.DType.float16)]


def test_nested_parameters_are_preorder_and_deterministic() -> None:
    def make() -> _core.Module:
        return nn.Sequential("net", [
            nn.Linear("0", 4, 2, 3, True, F32), nn.Relu("1"),
            nn.Sequential("2", [nn.Linear("0", 4, 3, 1, False, F32)])])

    params = make().parameters()
    assert params == [("net.0.weight", [2, 3], F32), ("net.0.bias", [4, 3], F32),
                      ("net.2.0.weight", [3, 1], F32)]
    assert make().parameters() == params == make().parameters()


def test_sequential_paths_use_the_child_names() -> None:
    net = nn.Sequential("net", [nn.Linear("fc1", 4, 2, 3, False, F32), nn.Relu("act"),
                                nn.Linear("fc2", 4, 3, 1, False, F32)])
    assert [p[0] for p in net.parameters()] == ["net.fc1.weight", "net.fc2.weight"]


def test_module_is_factory_made_and_name_read_only() -> None:
    with pytest.raises(TypeError):
        _core.Module()
    lin = nn.Linear("fc", 2, 2, 2, False, F32)
    assert isinstance(lin, nn.Module) and lin.name == "fc"
    with pytest.raises(AttributeError):
        lin.name = "other"  # type: ignore[misc]


def test_factories_never_raise_for_bad_numbers() -> None:
    bad = nn.Linear("bad", 0, -1, 2, True, F32)  # build reports it, not the factory
    assert isinstance(bad, nn.Module)
    g = frame.Graph("g")
    x = g.add_graph_input([4, 2], F32)
    with pytest.raises(ValueError):
        bad.build(g, [x], [x, x])


# ===================================================================== nn: build


def test_add_parameter_inputs_follow_the_data_inputs() -> None:
    model = nn.Linear("fc", 3, 2, 4, True, F32)
    g = frame.Graph("lin")
    x = g.add_graph_input([3, 2], F32)
    params = nn.add_parameter_inputs(graph=g, module=model)
    assert len(params) == 2 and all(isinstance(p, _core.Value) for p in params)
    (y,) = model.build(graph=g, inputs=[x], params=params)
    g.mark_output(y)
    ex = frame.compile(g, "cpu")
    rng = np.random.default_rng(1)
    xv, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (2, 4), (3, 4)))
    with pytest.raises(ValueError):  # graph-input order is [data, weight, bias]
        ex.run([frame.from_numpy(a) for a in (w, xv, b)])
    (out,) = ex.run([frame.from_numpy(a) for a in (xv, w, b)])
    assert_close(out.numpy(), xv.astype(np.float64) @ w + b)


def test_sequential_chain_and_mse_loss_match_numpy() -> None:
    model = nn.Sequential("mlp", [nn.Linear("0", 4, 3, 5, True, F32), nn.Relu("1"),
                                  nn.Linear("2", 4, 5, 2, False, F32)])
    loss_fn = nn.MseLoss("loss")
    g = frame.Graph("mlp")
    x, t = g.add_graph_input([4, 3], F32), g.add_graph_input([4, 2], F32)
    params = nn.add_parameter_inputs(g, model)
    (pred,) = model.build(g, [x], params)
    (loss,) = loss_fn.build(g, [pred, t], [])
    g.mark_output(pred)
    g.mark_output(loss)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((4, 3), (4, 2), (3, 5), (4, 5), (5, 2))]
    pred_out, loss_out = frame.compile(g, "cpu").run([frame.from_numpy(a) for a in arrays])
    xv, tv, w0, b0, w2 = (a.astype(np.float64) for a in arrays)
    ref = np.maximum(xv @ w0 + b0, 0) @ w2
    assert_close(pred_out.numpy(), ref)
    assert loss_out.shape.dims == []
    assert_close(loss_out.numpy(), np.mean((ref - tv) ** 2))


def test_sigmoid_and_flatten_match_numpy() -> None:
    assert nn.Sigmoid("s").parameters() == [] and nn.Flatten(name="f").parameters() == []
    g = frame.Graph("sf")
    x = g.add_graph_input([3, 40], F32)
    z = g.add_graph_input([2, 3, 2, 2], F32)
    (sig,) = nn.Sigmoid(name="s").build(g, [x], [])
    (flat,) = nn.Flatten("f").build(g, [z], [])
    (flat2,) = nn.Flatten("f2").build(g, [x], [])  # rank 2 stays as it is
    for v in (sig, flat, flat2):
        g.mark_output(v)
    xv = np.linspace(-30, 30, 120, dtype=np.float32).reshape(3, 40)
    zv = np.random.default_rng(4).standard_normal((2, 3, 2, 2)).astype(np.float32)
    sig_out, flat_out, flat2_out = frame.compile(g, "cpu").run(
        [frame.from_numpy(xv), frame.from_numpy(zv)])
    assert_close(sig_out.numpy(), 1 / (1 + np.exp(-xv.astype(np.float64))))
    assert flat_out.shape.dims == [2, 12]
    assert np.array_equal(flat_out.numpy(), zv.reshape(2, 12))  # row-major, exact
    assert np.array_equal(flat2_out.numpy(), xv)


def test_build_checks_parameter_and_input_counts() -> None:
    seq = nn.Sequential("seq", [nn.Linear("0", 4, 2, 3, True, F32), nn.Relu("1")])
    g = frame.Graph("g")
    x = g.add_graph_input([4, 2], F32)
    params = nn.add_parameter_inputs(g, seq)
    with pytest.raises(ValueError):
        seq.build(g, [x], params[:1])
    with pytest.raises(ValueError):
        seq.build(g, [x], [*params, params[0]])
    with pytest.raises(ValueError):
        seq.build(g, [x, x], params)
    with pytest.raises(ValueError):
        seq.build(g, [], params)
    with pytest.raises(ValueError):
        nn.Relu("r").build(g, [x, x], [])
    with pytest.raises(ValueError):
        nn.MseLoss("m").build(g, [x], [])
    with pytest.raises(ValueError):
        nn.Sigmoid("s").build(g, [x, x], [])
    with pytest.raises(ValueError):
        nn.Flatten("f").build(g, [], [])
    with pytest.raises(ValueError):  # modules without parameters get none
        nn.Relu("r").build(g, [x], [x])
    with pytest.raises(ValueError):  # the Linear's own parameter count
        nn.Linear("l", 4, 2, 3, True, F32).build(g, [x], params[:1])


def test_build_rejects_foreign_values() -> None:
    lin = nn.Linear("l", 4, 2, 3, False, F32)
    g, other = frame.Graph("g"), frame.Graph("o")
    x = other.add_graph_input([4, 2], F32)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        lin.build(g, [x], nn.add_parameter_inputs(g, lin))


def test_linear_and_mse_shape_checks_are_valueerrors() -> None:
    g = frame.Graph("g")
    lin = nn.Linear("l", 4, 2, 3, True, F32)
    params = nn.add_parameter_inputs(g, lin)
    with pytest.raises(ValueError):
        lin.build(g, [g.add_graph_input([3, 2], F32)], params)
    with pytest.raises(ValueError):
        nn.MseLoss("m").build(g, [g.add_graph_input([4, 2], F32),
                                  g.add_graph_input([2, 4], F32)], [])


def test_shape_errors_inside_modules_are_valueerrors() -> None:
    g = frame.Graph("g")
    x = g.add_graph_input([4, 2], F32)
    lin = nn.Linear("l", 4, 2, 3, True, F32)
    with pytest.raises(ValueError):  # weight [5,3] instead of [2,3]
        lin.build(g, [x], [g.add_graph_input([5, 3], F32), g.add_graph_input([4, 3], F32)])
    seq = nn.Sequential("s", [nn.Linear("a", 4, 2, 3, True, F32), nn.Relu("r")])
    with pytest.raises(ValueError):  # x[3,2] into a Linear of batch 4
        seq.build(g, [g.add_graph_input([3, 2], F32)], nn.add_parameter_inputs(g, seq))


def test_nn_module_backward_matches_the_hand_written_graph() -> None:
    """Gradients through the ops inside Linear/Relu/MseLoss (pure-op reference graph)."""
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((4, 3), (4, 1), (3, 5), (4, 5), (5, 1), (4, 1))]
    model = nn.Sequential("m", [nn.Linear("0", 4, 3, 5, True, F32), nn.Relu("1"),
                                nn.Linear("2", 4, 5, 1, True, F32)])
    g = frame.Graph("nn")
    x, t = g.add_graph_input([4, 3], F32), g.add_graph_input([4, 1], F32)
    params = nn.add_parameter_inputs(g, model)
    g.mark_output(nn.MseLoss("l").build(g, [model.build(g, [x], params)[0], t], [])[0])
    nn_outs = frame.compile(frame.build_backward_graph(g, 0, [2, 3, 4, 5]), "cpu").run(
        [frame.from_numpy(a) for a in arrays])

    h = frame.Graph("ops")
    vs = [h.add_graph_input(list(a.shape), F32) for a in arrays]
    xv, tv, w0, b0, w2, b2 = vs
    hid = frame.relu(h, frame.add(h, frame.matmul(h, xv, w0), b0))
    h.mark_output(frame.mse_loss(h, frame.add(h, frame.matmul(h, hid, w2), b2), tv))
    op_outs = frame.compile(frame.build_backward_graph(h, 0, [2, 3, 4, 5]), "cpu").run(
        [frame.from_numpy(a) for a in arrays])
    assert len(nn_outs) == 5
    for a, b in zip(nn_outs, op_outs, strict=True):
        assert_close(a.numpy(), b.numpy())


# ===================================================================== data


def _sheet_columns() -> tuple[np.ndarray, np.ndarray]:
    """Sheet section 8 example: features[r,c] = 10r + c + 1 (3 columns), targets[r] = 1000 + r."""
    r = np.arange(10)[:, None]
    features = (10 * r + np.arange(3)[None, :] + 1).astype(np.float32)
    return features, (1000 + r).astype(np.float32)


@pytest.mark.parametrize(("drop_last", "sizes"), [(False, [4, 4, 2]), (True, [4, 4])])
def test_dataloader_sheet_example(drop_last: bool, sizes: list[int]) -> None:
    features, targets = _sheet_columns()
    ds = TensorDataset(columns=[frame.from_numpy(features), frame.from_numpy(targets)])
    loader = DataLoader(dataset=ds, options=DataLoaderOptions(batch_size=4,
                                                              drop_last=drop_last))
    assert iter(loader) is loader and loader.batches_per_epoch == len(sizes)
    batches = list(loader)  # exactly one epoch
    assert [b[0].shape.dims for b in batches] == [[s, 3] for s in sizes]
    start = 0
    for (fb, tb), size in zip(batches, sizes, strict=True):
        assert fb.dtype is F32 and tb.shape.dims == [size, 1]
        assert (fb.device.backend, fb.device.index) == ("cpu", 0)
        assert np.array_equal(fb.numpy(), features[start:start + size])
        assert np.array_equal(tb.numpy(), targets[start:start + size])
        start += size
    fb, tb = next(iter(loader))  # the next epoch starts over
    assert np.array_equal(fb.numpy(), features[:4]) and np.array_equal(tb.numpy(), targets[:4])


def test_dataloader_stop_iteration_moves_to_the_next_epoch() -> None:
    ids = np.arange(10, dtype=np.int64).reshape(10, 1)
    loader = DataLoader(TensorDataset([frame.from_numpy(ids)]),
                        DataLoaderOptions(batch_size=10, shuffle=True, seed=777))
    epochs = []
    for _ in range(3):
        (batch,) = next(loader)
        epochs.append(batch.numpy().ravel().tolist())
        with pytest.raises(StopIteration):
            next(loader)
    assert epochs == [[9, 7, 0, 4, 8, 3, 1, 2, 5, 6], [8, 1, 9, 0, 7, 4, 3, 5, 6, 2],
                      [9, 3, 1, 0, 7, 2, 4, 6, 8, 5]]


def test_dataloader_same_seed_same_batches_and_exact_bytes() -> None:
    data = np.random.default_rng(0).standard_normal((13, 2, 2)).astype(np.float16)
    ints = (np.arange(13, dtype=np.int64) << 40).reshape(13, 1)

    def epochs() -> list[list[bytes]]:
        loader = DataLoader(TensorDataset([frame.from_numpy(data), frame.from_numpy(ints)]),
                            DataLoaderOptions(batch_size=5, shuffle=True, seed=42))
        return [[t.numpy().tobytes() for b in loader for t in b] for _ in range(2)]

    first = epochs()
    assert first == epochs()
    assert first[0] != first[1]  # epochs differ
    loader = DataLoader(TensorDataset([frame.from_numpy(data), frame.from_numpy(ints)]),
                        DataLoaderOptions(batch_size=5, shuffle=True, seed=42))
    rows = np.concatenate([b[1].numpy() for b in loader]).ravel() >> 40
    assert sorted(rows.tolist()) == list(range(13))  # a permutation, exact int64 copies
    got = np.concatenate([b[0].numpy() for b in list(loader)])
    assert got.dtype == np.float16 and got.shape == (13, 2, 2)


def test_data_validation_errors() -> None:
    col = frame.from_numpy(np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError):
        TensorDataset([])
    with pytest.raises(ValueError):  # rank 0
        TensorDataset([frame.from_numpy(np.array(1.0, np.float32))])
    with pytest.raises(ValueError):  # zero samples
        TensorDataset([frame.from_numpy(np.zeros((0, 2), np.float32))])
    with pytest.raises(ValueError):  # unequal sample counts
        TensorDataset([col, frame.from_numpy(np.zeros((3, 1), np.float32))])
    with pytest.raises(ValueError):
        DataLoader(TensorDataset([col]), DataLoaderOptions(batch_size=0))
    with pytest.raises(TypeError):  # seed is an unsigned 64-bit integer
        DataLoaderOptions(seed=-1)
    opts = DataLoaderOptions(4, True, 3, True)  # positional order of the signature
    assert not [a for a in dir(opts) if not a.startswith("_")]  # no public attributes


# ===================================================================== ONNX


def test_onnx_round_trip_of_every_float_dtype(tmp_path) -> None:
    g = frame.Graph("bf16")
    g.mark_output(frame.constant(g, [1.0, -2.5, 0.15625, 3.0], [2, 2], frame.DType.bfloat16))
    bf16 = frame.compile(g, "cpu").run([])[0]
    f32 = np.array([[0.1, -2.0, 3.5]], np.float32)
    f16 = np.array([1.5, -0.0, 65504.0], np.float16)
    weights = {"z.f32": frame.from_numpy(f32), "a.f16": frame.from_numpy(f16), "m.bf16": bf16,
               "scalar": frame.from_numpy(np.array(2.5, np.float32))}
    path = str(tmp_path / "w.onnx")
    frame.save_onnx_weights(path=path, weights=weights)

    loaded = frame.load_onnx_weights(path=path)
    assert list(loaded) == list(weights)  # insertion order
    for name, t in weights.items():
        assert loaded[name].dtype is t.dtype and loaded[name].shape.dims == t.shape.dims
        assert (loaded[name].device.backend, loaded[name].device.index) == ("cpu", 0)
    assert loaded["z.f32"].numpy().tobytes() == f32.tobytes()
    assert loaded["a.f16"].numpy().tobytes() == f16.tobytes()  # f16 stays f16, bit-exact
    assert loaded["scalar"].numpy().shape == ()

    model = onnx.load(path)
    onnx.checker.check_model(model)
    inits = list(model.graph.initializer)
    assert [i.name for i in inits] == list(weights)
    assert [i.data_type for i in inits] == [1, 10, 16, 1]
    assert numpy_helper.to_array(inits[0]).tobytes() == f32.tobytes()
    assert numpy_helper.to_array(inits[1]).tobytes() == f16.tobytes()
    assert np.array_equal(numpy_helper.to_array(inits[2]).astype(np.float32),
                          [[1.0, -2.5], [0.15625, 3.0]])
    # bf16 values survive bit for bit: saving what was loaded gives the same file
    again = str(tmp_path / "again.onnx")
    frame.save_onnx_weights(again, loaded)
    assert open(again, "rb").read() == open(path, "rb").read()


def test_onnx_errors(tmp_path) -> None:
    with pytest.raises(KeyError):
        frame.load_onnx_weights(str(tmp_path / "missing.onnx"))
    with pytest.raises(ValueError):  # int32/int64 cannot be saved
        frame.save_onnx_weights(str(tmp_path / "i.onnx"),
                                {"i": frame.from_numpy(np.zeros(2, np.int64))})
    with pytest.raises(ValueError):  # unopenable path
        frame.save_onnx_weights(str(tmp_path / "no-dir" / "w.onnx"),
                                {"w": frame.from_numpy(np.zeros(2, np.float32))})
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08")  # field 1 varint, value truncated
    with pytest.raises(ValueError):
        frame.load_onnx_weights(str(bad))
    bad.write_bytes(b"\x0b")  # field 1, wire type 3 (start group)
    with pytest.raises(NotImplementedError):
        frame.load_onnx_weights(str(bad))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux /dev/full")
def test_onnx_write_failure_is_runtimeerror() -> None:
    with pytest.raises(RuntimeError):  # opens fine, every write fails with ENOSPC
        frame.save_onnx_weights("/dev/full", {"w": frame.from_numpy(np.zeros(4, np.float32))})
