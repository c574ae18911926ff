"""The `frame` package against the API sheet: core types, tensors, graph ops, compile and run.

Everything goes through the public facade (`import frame`, `frame._core`); numerics are
checked against numpy with the float32 tolerances of sheet section 10
(``|actual - expected| <= 1e-6 + 1e-5 * |expected|``), references computed in float64.
Compiles cost ~0.3 s each, so graphs are built once per module (module-scoped fixtures) and
reused by the parametrised checks.
"""

from __future__ import annotations

import enum
import gc
from collections.abc import Callable

import numpy as np
import onnx
import pytest
from frame_test_support import F32, f32
from frame_test_support import assert_close as _assert_close
from onnx import numpy_helper

import frame
from frame import _core


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    _assert_close(actual, expected, require_f32=True)


def run1(graph: frame.Graph, *inputs: frame.Tensor) -> list[np.ndarray]:
    """Compile `graph` for cpu, run it once, return the outputs as numpy arrays."""
    return [t.numpy() for t in frame.compile(graph, "cpu").run(list(inputs))]


def bf16_tensor(values: list[float]) -> frame.Tensor:
    """A bf16 tensor, obtained the only way the sheet allows (section 3.9)."""
    g = frame.Graph("bf16")
    g.mark_output(frame.constant(g, values, [len(values)], frame.DType.bfloat16, backend="cpu"))
    return frame.compile(g, "cpu").run([])[0]


# ===================================================================== DType, Shape, Device


def test_dtype_is_an_int_enum_with_the_sheet_values() -> None:
    assert issubclass(frame.DType, enum.IntEnum)
    assert {m.name: int(m) for m in frame.DType} == {
        "float32": 0, "float16": 2, "bfloat16": 3, "int32": 6, "int64": 7}
    assert frame.DType.float16 == 2 and frame.DType(7) is frame.DType.int64
    assert _core.float32 is frame.DType.float32 and _core.bfloat16 is frame.DType.bfloat16
    assert _core.int64 is frame.DType.int64
    for reserved in (1, 4, 5):  # float64, int8, int16 are reserved gaps
        with pytest.raises(ValueError):
            frame.DType(reserved)


def test_shape_dims_is_a_fresh_list_and_repr() -> None:
    s = _core.Shape([2, 3, 4])
    assert s.dims == [2, 3, 4] and type(s.dims) is list
    s.dims.append(9)  # a fresh list every time: the shape is unchanged
    assert s.dims == [2, 3, 4]
    assert repr(s) == "Shape([2, 3, 4])"
    assert repr(_core.Shape([])) == "Shape([])" and _core.Shape([]).dims == []
    assert repr(_core.Shape(dims=(5,))) == "Shape([5])"
    with pytest.raises(AttributeError):
        s.dims = [1]  # type: ignore[misc]


def test_device_properties_and_unvalidated_index() -> None:
    d = _core.Device("cpu")
    assert (d.backend, d.index) == ("cpu", 0)
    assert _core.Device("cpu", 1).index == 1  # the index is not validated
    assert _core.Device(backend="cpu", index=3).index == 3
    with pytest.raises(AttributeError):
        d.index = 2  # type: ignore[misc]


@pytest.mark.parametrize("backend", ["no-such-backend", "cuda"])
def test_device_unknown_backend_is_keyerror(backend: str) -> None:
    # "cuda" is registered only when the whole CUDA path works (section 11); it does not yet.
    with pytest.raises(KeyError):
        _core.Device(backend, 0)


# ===================================================================== Tensor and from_numpy


def test_tensor_has_no_public_constructor() -> None:
    with pytest.raises(TypeError):
        frame.Tensor()
    with pytest.raises(TypeError):
        _core.Tensor(np.zeros(2, np.float32))


@pytest.mark.parametrize(("np_dtype", "dtype"), [
    (np.float32, frame.DType.float32), (np.float16, frame.DType.float16),
    (np.int32, frame.DType.int32), (np.int64, frame.DType.int64)])
def test_from_numpy_round_trip(np_dtype: type, dtype: frame.DType) -> None:
    a = (np.arange(24).reshape(2, 3, 4) - 7).astype(np_dtype)
    t = frame.from_numpy(a)
    assert isinstance(t, frame.Tensor)
    assert t.dtype is dtype and t.shape.dims == [2, 3, 4]
    assert (t.device.backend, t.device.index) == ("cpu", 0)
    back = t.numpy()
    assert back.dtype == a.dtype and np.array_equal(back, a)
    assert back.flags.c_contiguous and back.flags.writeable


def test_from_numpy_exact_integers_including_1_shl_40() -> None:
    i64 = np.array([1 << 40, -(1 << 40), (1 << 62) + 1, -(1 << 63), (1 << 63) - 1, 0], np.int64)
    assert np.array_equal(frame.from_numpy(i64).numpy(), i64)
    i32 = np.array([-(1 << 31), (1 << 31) - 1, 123456789, -1], np.int32)
    assert np.array_equal(frame.from_numpy(i32).numpy(), i32)
    f16 = np.array([65504.0, -0.0, 6.1e-5, np.inf], np.float16)
    assert frame.from_numpy(f16).numpy().tobytes() == f16.tobytes()  # bit-exact


def test_from_numpy_copies_and_numpy_returns_fresh_writable_copies() -> None:
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    t = frame.from_numpy(array=a)
    a[0, 0] = 100.0  # later changes to the array do not affect the tensor
    first = t.numpy()
    assert first[0, 0] == 1.0
    first[...] = -5.0  # nor do changes to a previous numpy() result
    second = t.numpy()
    assert second is not first and np.array_equal(second, [[1.0, 2.0], [3.0, 4.0]])
    assert second.flags.writeable and second.flags.c_contiguous


def test_rank0_tensor_gives_0d_array() -> None:
    t = frame.from_numpy(np.array(3.5, np.float32))
    assert t.shape.dims == [] and t.numpy().shape == ()
    assert float(t.numpy()) == 3.5


@pytest.mark.parametrize("make", [
    lambda: np.zeros((3, 4), np.float32)[:, ::2],
    lambda: np.asfortranarray(np.zeros((3, 4), np.float32)),
    lambda: np.zeros((3, 4), np.float64)[:, ::2],  # contiguity is checked before the dtype
])
def test_from_numpy_rejects_non_c_contiguous(make: Callable[[], np.ndarray]) -> None:
    with pytest.raises(ValueError, match="C-contiguous"):
        frame.from_numpy(make())


@pytest.mark.parametrize("np_dtype", [
    np.float64, np.int8, np.int16, np.uint8, np.uint32, np.uint64, np.bool_, np.complex64])
def test_from_numpy_rejects_unsupported_dtypes(np_dtype: type) -> None:
    with pytest.raises(ValueError, match="unsupported numpy dtype"):
        frame.from_numpy(np.zeros(3, np_dtype))


def test_from_numpy_float64_reference_wording() -> None:
    with pytest.raises(ValueError, match=r"unsupported numpy dtype \(kind 'f', itemsize 8\)"):
        frame.from_numpy(np.zeros(2))


def test_to_returns_an_independent_copy() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = frame.from_numpy(a)
    c = t.to("cpu")
    assert c is not t and isinstance(c, frame.Tensor)
    assert (c.device.backend, c.device.index) == ("cpu", 0)
    assert c.dtype is t.dtype and c.shape.dims == [2, 3]
    assert np.array_equal(c.numpy(), a)
    assert t.to(backend="cpu") is not c
    b = bf16_tensor([1.0, 2.0])
    bc = b.to("cpu")
    assert bc is not b and bc.dtype is frame.DType.bfloat16 and bc.shape.dims == [2]


@pytest.mark.parametrize("backend", ["no-such-backend", "cuda"])
def test_to_unknown_backend_is_keyerror(backend: str) -> None:
    with pytest.raises(KeyError):
        frame.from_numpy(np.zeros(2, np.float32)).to(backend)


def test_bf16_tensor_has_no_numpy_representation() -> None:
    t = bf16_tensor([1.0, 2.0])
    assert t.dtype is frame.DType.bfloat16 and t.shape.dims == [2]
    assert t.device.backend == "cpu" and t.device.index == 0
    with pytest.raises(NotImplementedError, match="no numpy representation"):
        t.numpy()


# ===================================================================== Value, Node, Graph


def test_value_node_executable_types() -> None:
    assert isinstance(_core.Node, type)
    with pytest.raises(TypeError):
        _core.Node()
    with pytest.raises(TypeError):
        _core.Value()
    with pytest.raises(TypeError):
        _core.Executable()
    g = frame.Graph("types")
    x = g.add_graph_input([2], F32)
    y = frame.relu(g, x)
    assert isinstance(x, _core.Value) and isinstance(y, _core.Value)
    g.mark_output(y)
    assert isinstance(frame.compile(g, "cpu"), _core.Executable)
    for attr in ("inputs", "outputs", "nodes"):
        assert not hasattr(g, attr)
    assert not [a for a in dir(x) if not a.startswith("_")]  # Value: no public attribute


def test_graph_name_default_and_read_only() -> None:
    assert frame.Graph().name == ""
    assert frame.Graph("mlp").name == "mlp" and frame.Graph(name="n").name == "n"
    g = frame.Graph("fixed")
    with pytest.raises(AttributeError):
        g.name = "other"  # type: ignore[misc]


def test_add_graph_input_errors() -> None:
    g = frame.Graph("inputs")
    with pytest.raises(KeyError):
        g.add_graph_input([2], F32, backend="no-such-backend")
    with pytest.raises(KeyError):
        g.add_graph_input([2], F32, "cuda")
    with pytest.raises(ValueError):
        g.add_graph_input([2, -1], F32)
    assert isinstance(g.add_graph_input(shape=[2], dtype=F32, backend="cpu"), _core.Value)


def test_value_outliving_its_deleted_graph_is_foreign_elsewhere() -> None:
    g = frame.Graph("doomed")
    v = g.add_graph_input([2, 2], F32)
    w = frame.relu(g, v)
    del g
    gc.collect()
    other = frame.Graph("other")
    mine = other.add_graph_input([2, 2], F32)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        other.mark_output(v)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        frame.add(other, v, v)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        frame.mul(other, mine, w)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        frame.relu(other, w)


@pytest.mark.parametrize("op", [
    lambda g, v: frame.add(g, v, v), lambda g, v: frame.mul(g, v, v),
    lambda g, v: frame.relu(g, v), lambda g, v: frame.square(g, v),
    lambda g, v: frame.matmul(g, v, v), lambda g, v: frame.sum(g, v, []),
    lambda g, v: frame.mse_loss(g, v, v), lambda g, v: g.mark_output(v)])
def test_foreign_value_is_rejected_by_every_op(op: Callable) -> None:
    live = frame.Graph("a")
    v = live.add_graph_input([2, 2], F32)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        op(frame.Graph("b"), v)


def test_foreign_check_comes_before_shape_checks() -> None:
    g, other = frame.Graph("g"), frame.Graph("o")
    a = g.add_graph_input([2, 3], F32)
    b = other.add_graph_input([4, 5], F32)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        frame.matmul(g, a, b)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        frame.add(g, a, b)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        frame.sum(g, b, [7])


# ===================================================================== ops: forward numerics

RNG = np.random.default_rng(20260713)
#: Random elementwise shapes (rank 1..4), fixed by the seed above.
ELEMENTWISE_SHAPES = [tuple(int(d) for d in RNG.integers(1, 6, size=r)) for r in (1, 2, 3, 4)]
#: Random [m, k] @ [k, n] problems.
MATMUL_DIMS = [tuple(int(d) for d in RNG.integers(1, 9, size=3)) for _ in range(3)] + [(1, 1, 1)]


def _axes_for(shape: tuple[int, ...]) -> list[int]:
    """A non-trivial, unsorted subset of the axes of `shape`."""
    rank = len(shape)
    return [0] if rank == 1 else sorted(range(rank), reverse=True)[: rank - 1]


@pytest.fixture(scope="module")
def elementwise_results() -> dict[tuple[int, ...], tuple[dict[str, np.ndarray], list]]:
    """Per shape: one graph computing every elementwise op, compiled and run once."""
    out = {}
    rng = np.random.default_rng(7)
    for shape in ELEMENTWISE_SHAPES:
        a = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape).astype(np.float32)
        g = frame.Graph("elementwise")
        x, y = g.add_graph_input(list(shape), F32), g.add_graph_input(list(shape), F32)
        ops = {
            "add": frame.add(g, x, y), "mul": frame.mul(g, x, y), "relu": frame.relu(g, x),
            "square": frame.square(g, x), "sum_all": frame.sum(g, x, []),
            "sum_axes": frame.sum(g, x, _axes_for(shape)), "mse_loss": frame.mse_loss(g, x, y),
            "heaviside_surrogate": _core.heaviside_surrogate(g, x, 2.0),
        }
        for v in ops.values():
            g.mark_output(v)
        results = run1(g, frame.from_numpy(a), frame.from_numpy(b))
        out[shape] = (dict(zip(ops, results, strict=True)), [a, b])
    return out


def _reference(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return {
        "add": lambda: a64 + b64, "mul": lambda: a64 * b64, "relu": lambda: np.maximum(a64, 0),
        "square": lambda: a64 * a64, "sum_all": lambda: np.sum(a64),
        "sum_axes": lambda: np.sum(a64, axis=tuple(_axes_for(a.shape))),
        "mse_loss": lambda: np.mean((a64 - b64) ** 2),
        "heaviside_surrogate": lambda: np.where(a64 >= 0, 1.0, 0.0),
    }[op]()


@pytest.mark.parametrize("shape", ELEMENTWISE_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["add", "mul", "relu", "square", "sum_all", "sum_axes",
                                "mse_loss", "heaviside_surrogate"])
def test_elementwise_and_reduction_ops_match_numpy(
        elementwise_results: dict, op: str, shape: tuple[int, ...]) -> None:
    results, (a, b) = elementwise_results[shape]
    assert_close(results[op], _reference(op, a, b))


@pytest.mark.parametrize("shape", ELEMENTWISE_SHAPES, ids=str)
def test_sum_all_axes_and_mse_are_rank0(elementwise_results: dict,
                                        shape: tuple[int, ...]) -> None:
    results, _ = elementwise_results[shape]
    assert results["sum_all"].shape == () and results["mse_loss"].shape == ()


def test_sum_shapes_drop_reduced_dims() -> None:
    g = frame.Graph("sums")
    x = g.add_graph_input([2, 3, 4], F32)
    cases = (([], []), ([1], [2, 4]), ([2, 0], [3]), ([0, 1, 2], []), ((0,), [3, 4]))
    for axes, _ in cases:
        g.mark_output(frame.sum(g, x, axes))
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    outs = frame.compile(g, "cpu").run([frame.from_numpy(a)])
    assert outs[0].shape.dims == []  # sum over all axes is rank-0
    for o, (axes, dims) in zip(outs, cases, strict=True):
        assert o.shape.dims == dims
        assert_close(o.numpy(), a.astype(np.float64).sum(axis=tuple(axes) or None))


@pytest.fixture(scope="module")
def matmul_results() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One graph holding every random matmul problem, compiled and run once."""
    rng = np.random.default_rng(11)
    g = frame.Graph("matmuls")
    arrays, values = [], []
    for m, k, n in MATMUL_DIMS:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        x, y = g.add_graph_input([m, k], F32), g.add_graph_input([k, n], F32)
        values.append(frame.matmul(g, x, y))
        arrays += [a, b]
    for v in values:
        g.mark_output(v)
    outs = run1(g, *[frame.from_numpy(a) for a in arrays])
    return [(arrays[2 * i], arrays[2 * i + 1], o) for i, o in enumerate(outs)]


@pytest.mark.parametrize("index", range(len(MATMUL_DIMS)),
                         ids=[f"{m}x{k}@{k}x{n}" for m, k, n in MATMUL_DIMS])
def test_matmul_matches_numpy(matmul_results: list, index: int) -> None:
    a, b, out = matmul_results[index]
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))


def test_matmul_add_relu_chain_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 7), (7, 3), (5, 3)))
    g = frame.Graph("chain")
    xi, wi, bi = (g.add_graph_input(list(a.shape), F32) for a in (x, w, b))
    g.mark_output(frame.relu(g, frame.add(g, frame.matmul(g, xi, wi), bi)))
    (out,) = run1(g, *(frame.from_numpy(a) for a in (x, w, b)))
    assert_close(out, np.maximum(x.astype(np.float64) @ w + b, 0))


def test_ops_accept_keyword_arguments() -> None:
    g = frame.Graph(name="kw")
    x = g.add_graph_input(shape=[2, 2], dtype=F32, backend="cpu")
    c = frame.constant(graph=g, values=[1.0, 2.0, 3.0, 4.0], shape=[2, 2], dtype=F32,
                       backend="cpu")
    s = frame.add(graph=g, lhs=x, rhs=c)
    m = frame.mul(graph=g, lhs=s, rhs=c)
    r = frame.relu(graph=g, x=m)
    q = frame.square(graph=g, x=r)
    mm = frame.matmul(graph=g, lhs=q, rhs=c)
    g.mark_output(value=frame.sum(graph=g, x=mm, axes=[0]))
    g.mark_output(frame.mse_loss(graph=g, pred=mm, target=c))
    ex = frame.compile(graph=g, backend="cpu")
    a = np.array([[1.0, -2.0], [0.5, -9.0]], np.float32)
    cs = np.array([[1.0, 2.0], [3.0, 4.0]])
    mm_ref = np.square(np.maximum((a + cs) * cs, 0)) @ cs
    s_out, mse_out = ex.run(inputs=[frame.from_numpy(a)])
    assert_close(s_out.numpy(), mm_ref.sum(axis=0))
    assert_close(mse_out.numpy(), np.mean((mm_ref - cs) ** 2))


def test_relu_at_zero_and_negative_zero() -> None:
    g = frame.Graph("relu0")
    x = g.add_graph_input([4], F32)
    g.mark_output(frame.relu(g, x))
    (out,) = run1(g, f32([-0.0, 0.0, -1e-30, 1e-30]))
    # PyTorch semantics: relu(-0.0) is -0.0 (only x < 0 is clamped); compare signs too.
    assert np.array_equal(out, [-0.0, 0.0, 0.0, np.float32(1e-30)])
    assert np.array_equal(np.signbit(out), [True, False, False, False])


def test_heaviside_surrogate_sheet_example_including_negative_zero() -> None:
    g = frame.Graph("heaviside")
    x = g.add_graph_input([5], F32)
    g.mark_output(_core.heaviside_surrogate(graph=g, x=x, alpha=2.0))
    (out,) = run1(g, f32([-1.0, -0.0, 0.0, 0.25, 2.0]))
    assert np.array_equal(out, [0, 1, 1, 1, 1]) and out.dtype == np.float32


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("nan"), float("inf"), -float("inf")])
def test_heaviside_surrogate_alpha_is_checked_at_op_creation(alpha: float) -> None:
    g = frame.Graph("alpha")
    x = g.add_graph_input([2], F32)
    with pytest.raises(ValueError):
        _core.heaviside_surrogate(g, x, alpha)


def test_heaviside_surrogate_foreign_value_first() -> None:
    x = frame.Graph("a").add_graph_input([2], F32)
    with pytest.raises(ValueError, match="does not belong to this graph"):
        _core.heaviside_surrogate(frame.Graph("b"), x, 0.0)


# ===================================================================== op validation


def test_binary_ops_require_same_shape_and_dtype() -> None:
    g = frame.Graph("bad")
    a, b = g.add_graph_input([2, 2], F32), g.add_graph_input([3, 3], F32)
    h = g.add_graph_input([2, 2], frame.DType.float16)
    for op in (frame.add, frame.mul, frame.mse_loss):
        with pytest.raises(ValueError, match="same shape"):
            op(g, a, b)
        with pytest.raises(ValueError, match="float16"):  # dtypes named by member name
            op(g, a, h)
    # no broadcasting, not even of a rank-0 or size-1 operand
    with pytest.raises(ValueError, match="same shape"):
        frame.add(g, a, g.add_graph_input([1, 2], F32))
    with pytest.raises(ValueError, match="same shape"):
        frame.mul(g, a, frame.sum(g, a, []))


def test_matmul_validation() -> None:
    g = frame.Graph("mm")
    a, b = g.add_graph_input([2, 3], F32), g.add_graph_input([4, 5], F32)
    with pytest.raises(ValueError, match="contraction dimension mismatch"):
        frame.matmul(g, a, b)
    with pytest.raises(ValueError):  # rank-2 only
        frame.matmul(g, a, g.add_graph_input([3], F32))
    with pytest.raises(ValueError):  # same dtype
        frame.matmul(g, a, g.add_graph_input([3, 2], frame.DType.float16))


def test_sum_axis_validation() -> None:
    g = frame.Graph("s")
    x = g.add_graph_input([2, 3], F32)
    with pytest.raises(ValueError, match="out of range"):
        frame.sum(g, x, [5])
    with pytest.raises(ValueError, match="out of range"):
        frame.sum(g, x, [2])
    with pytest.raises(ValueError, match="is negative"):  # no wrap-around
        frame.sum(g, x, [-1])
    with pytest.raises(ValueError):
        frame.sum(g, x, [1, 1])


def test_integer_operands_have_no_arithmetic() -> None:
    g = frame.Graph("int")
    i = g.add_graph_input([2], frame.DType.int32)
    f = g.add_graph_input([2], F32)
    with pytest.raises(ValueError):
        frame.add(g, i, f)  # operands must have equal dtypes
    with pytest.raises(ValueError):
        frame.add(g, i, i)  # arithmetic kernels exist only for float dtypes


def test_ops_reject_wrong_python_types() -> None:
    g = frame.Graph("types")
    x = g.add_graph_input([2], F32)
    with pytest.raises(TypeError):
        frame.add(g, 1, 2)
    with pytest.raises(TypeError):
        frame.relu("not a graph", x)
    with pytest.raises(TypeError):
        g.add_graph_input([2], "float32")
    with pytest.raises(TypeError):
        g.mark_output(np.zeros(2))
    with pytest.raises(TypeError):
        frame.compile("not a graph", "cpu")


# ===================================================================== constants


@pytest.mark.parametrize(("dtype", "values", "np_dtype"), [
    (frame.DType.float32, [1.5, -2.0, 3.25, 0.1, -0.0, 7.0], np.float32),
    (frame.DType.float16, [1.5, -2.0, 3.25, 0.1, -0.0, 7.0], np.float16),
    (frame.DType.int32, [1, -2, 3, 2**31 - 1, -(2**31), 0], np.int32),
    (frame.DType.int64, [1 << 40, -5, 3, 2**53, -(2**53), 0], np.int64),
])
def test_constant_only_graph_in_every_numpy_dtype(dtype: frame.DType, values: list,
                                                  np_dtype: type) -> None:
    g = frame.Graph("const")
    g.mark_output(frame.constant(g, values, [2, 3], dtype))
    ex = frame.compile(g, "cpu")  # zero inputs: must compile
    (t,) = ex.run([])
    assert t.dtype is dtype and t.shape.dims == [2, 3]
    expected = np.array(values, np.float64 if dtype.name.startswith("f") else np.int64)
    assert np.array_equal(t.numpy(), expected.astype(np_dtype).reshape(2, 3))
    assert t.numpy().dtype == np_dtype
    if dtype.name.startswith("f"):  # -0.0 keeps its sign, bit for bit
        assert t.numpy().tobytes() == expected.astype(np_dtype).reshape(2, 3).tobytes()


def test_bf16_constant_only_graph_runs_and_round_trips_through_onnx(tmp_path) -> None:
    (t,) = frame.compile(_bf16_graph(), "cpu").run([])
    assert t.dtype is frame.DType.bfloat16 and t.shape.dims == [3]
    # No numpy view: check the values through the ONNX file (bf16 is stored bit-exactly).
    path = str(tmp_path / "bf16.onnx")
    frame.save_onnx_weights(path, {"b": t})
    arr = numpy_helper.to_array(onnx.load(path).graph.initializer[0]).astype(np.float32)
    assert np.array_equal(arr, [1.0, -2.5, 3.0])


def _bf16_graph() -> frame.Graph:
    g = frame.Graph()
    v = frame.constant(g, [1.0, -2.5, 3.0], [3], frame.DType.bfloat16, backend="cpu")
    g.mark_output(v)
    return g


def test_splat_and_rank0_float_constants() -> None:
    g = frame.Graph("splat")
    g.mark_output(frame.constant(g, [2.5] * 6, [2, 3], F32))
    g.mark_output(frame.constant(g, [-0.0, -0.0], [2], F32))
    g.mark_output(frame.constant(g, [4.0], [], F32))
    splat, negzero, scalar = run1(g)
    assert np.array_equal(splat, np.full((2, 3), 2.5, np.float32))
    assert np.all(np.signbit(negzero)) and np.all(negzero == 0)
    assert scalar.shape == () and float(scalar) == 4.0


def test_constant_in_arithmetic_and_as_output() -> None:
    g = frame.Graph("kx")
    x = g.add_graph_input([3], F32)
    k = frame.constant(g, [1.0, 2.0, 3.0], [3], F32)
    g.mark_output(frame.mul(g, x, k))
    g.mark_output(k)
    g.mark_output(frame.constant(g, [7, 8, 9], [3], frame.DType.int64))
    prod, kout, iout = run1(g, f32([2.0, -1.0, 0.5]))
    assert_close(prod, [2.0, -2.0, 1.5])
    assert np.array_equal(kout, [1.0, 2.0, 3.0]) and np.array_equal(iout, [7, 8, 9])


def test_constant_validation() -> None:
    g = frame.Graph("cv")
    with pytest.raises(ValueError):  # exactly prod(shape) values, no splat
        frame.constant(g, [1.0], [2], F32)
    with pytest.raises(ValueError):
        frame.constant(g, [1.0, 2.0, 3.0], [2], F32)
    with pytest.raises(ValueError):  # int dtypes need integral values
        frame.constant(g, [1.5], [1], frame.DType.int64)
    with pytest.raises(ValueError):  # magnitude <= 2^53
        frame.constant(g, [2**53 + 1], [1], frame.DType.int64)
    with pytest.raises(ValueError):
        frame.constant(g, [float("nan")], [1], frame.DType.int32)
    with pytest.raises(ValueError):  # within range for int32
        frame.constant(g, [2**31], [1], frame.DType.int32)
    with pytest.raises(KeyError):
        frame.constant(g, [1.0], [1], F32, backend="no-such-backend")
    frame.constant(g, [2**53], [1], frame.DType.int64)  # the bound itself is fine


# ===================================================================== compile


def test_compile_backend_mismatch_is_valueerror_before_registry_lookup() -> None:
    g = frame.Graph("cpu-graph")
    g.mark_output(g.add_graph_input([2], F32))
    for name in ("totally-bogus-backend-name", "cuda"):
        with pytest.raises(ValueError, match="does not match graph device backend"):
            frame.compile(g, name)
    with pytest.raises(ValueError, match="backend_name 'x' does not match graph device "
                                         "backend 'cpu'"):
        frame.compile(g, "x")
    # a constant also fixes the device
    k = frame.Graph("k")
    frame.constant(k, [1.0], [1], F32)
    with pytest.raises(ValueError, match="does not match graph device backend"):
        frame.compile(k, "no-such-backend")


def test_compile_empty_graph() -> None:
    with pytest.raises(KeyError):
        frame.compile(frame.Graph("e"), "no-such-backend")
    assert frame.compile(frame.Graph("e"), "cpu").run([]) == []


def test_graph_input_may_be_an_output_and_outputs_repeat() -> None:
    g = frame.Graph("io")
    x = g.add_graph_input([2], F32)
    r = frame.relu(g, x)
    for v in (x, r, x, r):
        g.mark_output(v)
    outs = frame.compile(g, "cpu").run([f32([-1.0, 2.0])])
    assert len(outs) == 4 and len({id(o) for o in outs}) == 4
    assert [o.numpy().tolist() for o in outs] == [[-1, 2], [0, 2], [-1, 2], [0, 2]]


def test_compile_is_a_snapshot_and_repeatable() -> None:
    g = frame.Graph("snap")
    x = g.add_graph_input([2], F32)
    g.mark_output(frame.relu(g, x))
    first = frame.compile(g, "cpu")
    g.mark_output(frame.square(g, x))  # the graph stays mutable after compile
    second = frame.compile(g, "cpu")
    again = frame.compile(g, "cpu")  # repeated compile
    inp = f32([-3.0, 2.0])
    assert [o.numpy().tolist() for o in first.run([inp])] == [[0, 2]]
    assert [o.numpy().tolist() for o in second.run([inp])] == [[0, 2], [9, 4]]
    assert [o.numpy().tolist() for o in again.run([inp])] == [[0, 2], [9, 4]]


# ===================================================================== run


@pytest.fixture(scope="module")
def affine() -> tuple[frame.Graph, object]:
    """relu(x @ w + b) with x[3,4], w[4,2], b[3,2], compiled once."""
    g = frame.Graph("affine")
    x, w, b = (g.add_graph_input(s, F32) for s in ([3, 4], [4, 2], [3, 2]))
    y = frame.relu(g, frame.add(g, frame.matmul(g, x, w), b))
    g.mark_output(y)
    g.mark_output(frame.sum(g, y, []))
    return g, frame.compile(g, "cpu")


def _affine_inputs(seed: int) -> list[frame.Tensor]:
    rng = np.random.default_rng(seed)
    return [frame.from_numpy(rng.standard_normal(s).astype(np.float32))
            for s in ((3, 4), (4, 2), (3, 2))]


def test_run_signature_errors(affine: tuple) -> None:
    _, ex = affine
    good = _affine_inputs(0)
    with pytest.raises(ValueError):  # count
        ex.run(good[:2])
    with pytest.raises(ValueError):
        ex.run([*good, good[0]])
    with pytest.raises(ValueError):  # dtype
        ex.run([frame.from_numpy(np.zeros((3, 4), np.float16)), good[1], good[2]])
    with pytest.raises(ValueError):
        ex.run([good[0], frame.from_numpy(np.zeros((4, 2), np.int32)), good[2]])
    with pytest.raises(ValueError):  # shape
        ex.run([frame.from_numpy(np.zeros((4, 3), np.float32)), good[1], good[2]])
    with pytest.raises(ValueError):
        ex.run([good[0], good[1], frame.from_numpy(np.zeros(6, np.float32))])
    with pytest.raises(TypeError):  # not tensors
        ex.run([np.zeros((3, 4), np.float32), good[1], good[2]])


def test_run_outputs_are_fresh_and_runs_repeat(affine: tuple) -> None:
    _, ex = affine
    inputs = _affine_inputs(1)
    first = ex.run(inputs)
    kept = [t.numpy() for t in first]
    second = ex.run(inputs)
    assert all(a is not b for a, b in zip(first, second, strict=True))
    for a, b in zip(first, second, strict=True):  # repeated runs are identical, bit for bit
        assert a.numpy().tobytes() == b.numpy().tobytes()
    ex.run(_affine_inputs(2))  # a later run with other inputs must not touch old outputs
    assert all(np.array_equal(t.numpy(), k) for t, k in zip(first, kept, strict=True))
    assert [t.device.index for t in first] == [0, 0]
    assert all(t.device.backend == "cpu" for t in first)


def test_run_never_mutates_inputs(affine: tuple) -> None:
    _, ex = affine
    inputs = _affine_inputs(3)
    before = [t.numpy() for t in inputs]
    ex.run(inputs)
    ex.run(inputs)
    assert all(np.array_equal(t.numpy(), b) for t, b in zip(inputs, before, strict=True))


def test_run_matches_numpy(affine: tuple) -> None:
    _, ex = affine
    inputs = _affine_inputs(4)
    x, w, b = (t.numpy().astype(np.float64) for t in inputs)
    y, total = ex.run(inputs=inputs)
    ref = np.maximum(x @ w + b, 0)
    assert_close(y.numpy(), ref)
    assert_close(total.numpy(), ref.sum())


def test_outputs_survive_their_executable_and_feed_another() -> None:
    g = frame.Graph("producer")
    x = g.add_graph_input([2, 2], F32)
    g.mark_output(frame.square(g, frame.add(g, x, x)))
    ex = frame.compile(g, "cpu")
    (out,) = ex.run([f32([[1.0, -2.0], [0.5, 3.0]])])
    del ex, g
    gc.collect()
    assert np.array_equal(out.numpy(), [[4.0, 16.0], [1.0, 36.0]])
    h = frame.Graph("consumer")
    y = h.add_graph_input([2, 2], F32)
    h.mark_output(frame.matmul(h, y, y))
    consumer = frame.compile(h, "cpu")
    (res,) = consumer.run([out])
    assert_close(res.numpy(), np.array([[4.0, 16.0], [1.0, 36.0]]) @ [[4.0, 16.0], [1.0, 36.0]])
    assert np.array_equal(out.numpy(), [[4.0, 16.0], [1.0, 36.0]])  # input untouched


# ===================================================================== sheet 9.2, row by row


def test_sheet_9_2_key_errors() -> None:
    with pytest.raises(KeyError):
        _core.Device("no-such-backend")
    with pytest.raises(KeyError):
        frame.Graph("g").add_graph_input([1], F32, backend="no-such-backend")
    with pytest.raises(KeyError):
        frame.compile(frame.Graph("e"), "no-such-backend")
    with pytest.raises(KeyError):
        frame.from_numpy(np.zeros(1, np.float32)).to("no-such-backend")


def test_sheet_9_2_value_and_type_errors(tmp_path) -> None:
    g = frame.Graph("g")
    x = g.add_graph_input([2, 3], F32)
    g.mark_output(x)
    with pytest.raises(ValueError, match="does not match graph device backend"):
        frame.compile(g, "totally-bogus-backend-name")
    with pytest.raises(ValueError, match="same shape"):
        frame.add(g, g.add_graph_input([2, 2], F32), g.add_graph_input([3, 3], F32))
    with pytest.raises(ValueError, match="contraction dimension mismatch"):
        frame.matmul(g, x, g.add_graph_input([4, 5], F32))
    with pytest.raises(ValueError, match="out of range"):
        frame.sum(g, x, [5])
    with pytest.raises(NotImplementedError, match="no numpy representation"):
        bf16_tensor([1.0]).numpy()
    a = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="C-contiguous"):
        frame.from_numpy(a[:, ::2])
    with pytest.raises(ValueError, match="unsupported numpy dtype"):
        frame.from_numpy(np.zeros(2, np.int8))
    with pytest.raises(ValueError, match="unsupported numpy dtype"):
        frame.from_numpy(np.zeros(2, np.float64))
    with pytest.raises(KeyError):
        frame.load_onnx_weights(str(tmp_path / "missing.onnx"))
    with pytest.raises(TypeError):
        _core.Node()
    with pytest.raises(ValueError):  # raised at op creation
        _core.heaviside_surrogate(g, x, 0.0)


def test_non_float_inputs_pass_through_run_exactly() -> None:
    g = frame.Graph("pass")
    b = g.add_graph_input([2], frame.DType.bfloat16)
    i = g.add_graph_input([3], frame.DType.int64)
    h = g.add_graph_input([2], frame.DType.float16)
    x = g.add_graph_input([2], F32)
    for v in (i, frame.relu(g, x), frame.constant(g, [5, -6], [2], frame.DType.int32), b, h):
        g.mark_output(v)
    ex = frame.compile(g, "cpu")
    ints = np.array([1 << 40, -(1 << 40), 7], np.int64)
    halves = np.array([1.5, -0.0], np.float16)
    outs = ex.run([bf16_tensor([1.0, 2.0]), frame.from_numpy(ints), frame.from_numpy(halves),
                   f32([-1.0, 3.0])])
    assert [o.dtype.name for o in outs] == ["int64", "float32", "int32", "bfloat16", "float16"]
    assert np.array_equal(outs[0].numpy(), ints) and np.array_equal(outs[2].numpy(), [5, -6])
    assert np.array_equal(outs[1].numpy(), [0.0, 3.0])
    assert outs[4].numpy().tobytes() == halves.tobytes()
    with pytest.raises(ValueError, match="bfloat16"):  # a float16 tensor in the bf16 slot
        ex.run([frame.from_numpy(halves), frame.from_numpy(ints), frame.from_numpy(halves),
                f32([0.0, 0.0])])


def test_tensors_are_immutable_from_python() -> None:
    t = frame.from_numpy(np.zeros(2, np.float32))
    for attr in ("shape", "dtype", "device"):
        with pytest.raises(AttributeError):
            setattr(t, attr, None)
    with pytest.raises(AttributeError):
        t.anything = 1  # type: ignore[attr-defined]


def test_compile_cache_is_not_observable() -> None:
    """Graphs that differ only in constant values (a splat's last bit, or the data of a
    non-splat constant) must not share results through the compile cache."""
    def scaled(values: list[float]) -> np.ndarray:
        g = frame.Graph("cache")
        x = g.add_graph_input([2], F32)
        g.mark_output(frame.mul(g, x, frame.constant(g, values, [2], F32)))
        return frame.compile(g, "cpu").run([f32([1.0, 1.0])])[0].numpy()

    a = np.float32(0.1)
    b = np.nextafter(a, np.float32(1.0))
    assert scaled([float(a)] * 2).tolist() == [a, a]
    assert scaled([float(b)] * 2).tolist() == [b, b]
    assert scaled([1.0, 2.0]).tolist() == [1.0, 2.0]
    assert scaled([3.0, -4.0]).tolist() == [3.0, -4.0]


def test_empty_tensors_compute_like_torch() -> None:
    """A [0, 4] input through matmul and mse: the loss is the mean of nothing, NaN (as
    torch's mse_loss gives), and the gradient of the [4, 2] weight is zero."""
    torch = pytest.importorskip("torch")
    g = frame.Graph("empty")
    x = g.add_graph_input([0, 4], F32)
    w = g.add_graph_input([4, 2], F32)
    t = g.add_graph_input([0, 2], F32)
    g.mark_output(frame.mse_loss(g, frame.matmul(g, x, w), t))
    back = frame.compile(frame.build_backward_graph(g, 0, [1]), "cpu")
    wv = np.arange(8, dtype=np.float32).reshape(4, 2)
    loss, dw = (o.numpy() for o in back.run([
        frame.from_numpy(np.zeros((0, 4), np.float32)), frame.from_numpy(wv),
        frame.from_numpy(np.zeros((0, 2), np.float32))]))
    tw = torch.from_numpy(wv).requires_grad_()
    ref = torch.nn.functional.mse_loss(torch.zeros(0, 4) @ tw, torch.zeros(0, 2))
    ref.backward()
    assert np.isnan(loss) and np.isnan(ref.item())
    assert np.array_equal(dw, tw.grad.numpy())


def test_shapes_beyond_any_memory_are_rejected_at_the_input() -> None:
    g = frame.Graph("huge")
    with pytest.raises(ValueError, match="elements, more than"):
        g.add_graph_input([10**20], F32)
    with pytest.raises(ValueError, match="elements, more than"):
        g.add_graph_input([1 << 30, 1 << 30], F32)


def test_nn_argument_checks() -> None:
    with pytest.raises(TypeError, match="with_bias must be a bool"):
        frame.nn.Linear("a", 2, 3, 4, "yes", F32)
    lin = frame.nn.Linear("a", 2, 3, 4, True, F32)
    # Two children of one name would give two parameters of one dotted name.
    with pytest.raises(ValueError, match="two children are named 'a'"):
        frame.nn.Sequential("s", [lin, lin])


@pytest.mark.parametrize("shape", [(2_000_000,), (64, 3, 64, 64), (100_000, 1)])
def test_large_full_reductions_are_accurate(shape: tuple[int, ...]) -> None:
    """mse_loss and sum over everything, against float64: a sequential float32 sum of
    2e6 squares is off by ~1e-3 relative; the blocked sum of the lowering (blocks of
    ~sqrt(N), docs/numerics.md) stays within 2e-6."""
    rng = np.random.default_rng(len(shape))
    p = rng.standard_normal(shape).astype(np.float32)
    t = rng.standard_normal(shape).astype(np.float32)
    g = frame.Graph("reduce")
    x, y = g.add_graph_input(list(shape), F32), g.add_graph_input(list(shape), F32)
    g.mark_output(frame.mse_loss(g, x, y))
    g.mark_output(frame.sum(g, x, []))
    mse, total = (float(o.numpy()) for o in frame.compile(g, "cpu").run(
        [frame.from_numpy(p), frame.from_numpy(t)]))
    exact_mse = float(np.mean((p.astype(np.float64) - t) ** 2))
    exact_sum = float(p.astype(np.float64).sum())
    scale = float(np.abs(p.astype(np.float64)).sum())  # a sum's error scales with sum |x|
    assert abs(mse - exact_mse) <= 2e-6 * exact_mse
    assert abs(total - exact_sum) <= 2e-6 * scale


def test_reshape_of_an_empty_tensor() -> None:
    # [4, 0, 1] -> [4, 0] (nn.Flatten): nothing to copy, and no stride to divide by.
    g = frame.Graph("flat0")
    x = g.add_graph_input([4, 0, 1], F32)
    (y,) = frame.nn.Flatten("f").build(g, [x], [])
    g.mark_output(y)
    (out,) = run1(g, frame.from_numpy(np.zeros((4, 0, 1), np.float32)))
    assert out.shape == (4, 0)
