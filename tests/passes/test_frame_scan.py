"""`frame.scan` (frame_mlir/dialects/frame_scan.py) compiled end to end: frame-bufferize
gives it a result buffer and its step's arena a slot, frame-lower-scan makes it a loop
of calls of the step function. Checked against torch.autograd on the same recurrence
(h = tanh(reshape(h) @ W + x_t + b), the loss the sum of every h): the loss and the
gradients of the initial carry, the sequences and the invariants, forward and
reverse scans, length 1, several sequences and invariants, carries of rank 1 to 3, a
step whose arena frame-gemm grows, a scan inside a step, one SGD step, and the
emitted C++ against the JIT bit for bit."""

from __future__ import annotations

import shutil
import subprocess
from math import prod
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.parser import Parser

from frame_mlir.backend.cpp.emitter import emit_module
from frame_mlir.compile_options import CompileOptions
from frame_mlir.dialects.frame_rt import ScanOp as RtScanOp
from frame_mlir.passes.pipeline import make_context, run_pipeline
from frame_mlir.runtime.executable import compile_module

torch = pytest.importorskip("torch")

CXX = shutil.which("g++") or shutil.which("c++")
ONE_THREAD = CompileOptions(threads=1)


def _t(shape: tuple[int, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def rnn_text(carry: tuple[int, ...], length: int, n_seq: int = 1, bias: bool = False,
             reverse: bool = False, params: bool = True, name: str = "rnn") -> str:
    """`@<name>_cell(h, x_0.., w[, b]) = tanh(reshape(h) @ w + x_0 + .. [+ b])` and
    `@<name>(h0, xs_0.., w[, b]) = sum(scan @<name>_cell)`, every argument a parameter
    (when `params`) so that each kind of operand gets a gradient."""
    d = carry[-1]
    rows = prod(carry) // d
    flat, c, w = _t((rows, d)), _t(carry), _t((d, d))
    seq = _t((length, *carry))
    p = (lambda n: f' {{frame.param = "{n}"}}') if params else (lambda n: "")
    cell_args = [f"%h: {c}", *(f"%x{i}: {c}" for i in range(n_seq)), f"%w: {w}"]
    cell_args += [f"%b: {c}"] if bias else []
    body = [f"%h2 = frame.reshape %h : ({c}) -> {flat}",
            f"%m2 = frame.matmul %h2, %w : ({flat}, {w}) -> {flat}",
            f"%a0 = frame.reshape %m2 : ({flat}) -> {c}"]
    last = "%a0"
    for i, v in enumerate([*(f"%x{i}" for i in range(n_seq)), *(["%b"] if bias else [])]):
        body.append(f"%a{i + 1} = frame.add {last}, {v} : ({c}, {c}) -> {c}")
        last = f"%a{i + 1}"
    body.append(f"%r = frame.tanh {last} : ({c}) -> {c}")
    args = [f"%h0: {c}{p('h0')}", *(f"%xs{i}: {seq}{p(f'xs{i}')}" for i in range(n_seq)),
            f"%w: {w}{p('w')}"] + ([f"%b: {c}{p('b')}"] if bias else [])
    operands = ["%h0", *(f"%xs{i}" for i in range(n_seq)), "%w"] + (["%b"] if bias else [])
    types = [c, *([seq] * n_seq), w] + ([c] if bias else [])
    rev = ", reverse" if reverse else ""
    nl = "\n    "
    return f"""
func.func @{name}_cell({", ".join(cell_args)}) -> {c} {{
    {nl.join(body)}
    func.return %r : {c}
}}
func.func @{name}({", ".join(args)}) -> tensor<f32> {{
    %hs = frame.scan @{name}_cell({", ".join(operands)}) {{length = {length} : i64, num_sequences = {n_seq} : i64{rev}}} : ({", ".join(types)}) -> {seq}
    %l = frame.sum %hs : ({seq}) -> tensor<f32>
    func.return %l : tensor<f32>
}}
"""


def parse(text: str) -> builtin.ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def inputs(carry: tuple[int, ...], length: int, n_seq: int, bias: bool,
           seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    d = carry[-1]
    vals = [rng.uniform(-1, 1, carry)]
    vals += [rng.uniform(-1, 1, (length, *carry)) for _ in range(n_seq)]
    vals.append(rng.uniform(-1, 1, (d, d)) / np.sqrt(d))
    vals += [rng.uniform(-0.5, 0.5, carry)] if bias else []
    return [v.astype(np.float32) for v in vals]


def torch_rnn(vals: list[np.ndarray], length: int, n_seq: int, bias: bool,
              reverse: bool = False) -> tuple[float, list[np.ndarray]]:
    """The loss and the gradient of every input, by torch.autograd (float64)."""
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in vals]
    h0, xs, w = ts[0], ts[1:1 + n_seq], ts[1 + n_seq]
    b = ts[2 + n_seq] if bias else None
    h, total = h0, torch.zeros((), dtype=torch.float64)
    for t in (reversed(range(length)) if reverse else range(length)):
        a = (h.reshape(-1, w.shape[0]) @ w).reshape(h0.shape)
        for x in xs:
            a = a + x[t]
        if b is not None:
            a = a + b
        h = torch.tanh(a)
        total = total + h.sum()
    grads = torch.autograd.grad(total, ts)
    return float(total.detach()), [g.numpy() for g in grads]


def check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-5, atol=2e-5,
                               err_msg=what)


CASES = [  # carry, length, sequences, bias
    ((2, 3), 4, 1, False),
    ((3,), 5, 1, True),  # a rank-1 carry
    ((2, 2, 3), 3, 1, True),  # a rank-3 carry
    ((2, 3), 1, 1, False),  # length 1: no loop
    ((2, 4), 6, 2, True),  # two sequences, two invariants
    ((4,), 3, 0, True),  # no sequence at all: invariants only
]


@pytest.mark.parametrize(("carry", "length", "n_seq", "bias"), CASES)
def test_scan_loss_and_gradients_match_torch(carry: tuple[int, ...], length: int,
                                             n_seq: int, bias: bool) -> None:
    module = parse(rnn_text(carry, length, n_seq, bias))
    ex = compile_module(module, options=ONE_THREAD, cache=None)
    vals = inputs(carry, length, n_seq, bias)
    loss, grads = torch_rnn(vals, length, n_seq, bias)
    (fwd,) = ex("rnn", *vals)
    check(fwd, loss, "loss of @rnn")
    got = ex("rnn_grad", *vals)
    assert len(got) == 1 + len(vals)
    check(got[0], loss, "loss of @rnn_grad")
    for i, (g, want) in enumerate(zip(got[1:], grads, strict=True)):
        assert g.shape == want.shape
        check(g, want, f"gradient of argument #{i}")


@pytest.mark.parametrize(("carry", "length", "n_seq", "bias"), [((2, 3), 4, 1, True),
                                                              ((3,), 3, 2, False)])
def test_scan_gradients_match_finite_differences(carry: tuple[int, ...], length: int,
                                                 n_seq: int, bias: bool) -> None:
    """The gradient of every input (init, sequences, invariants) from the scan's VJP
    (the reverse scan over @<step>_vjp) against central differences of the forward
    scan, both our compiled code: float32 forward, step 1e-2, tanh recurrence. The
    bound (rtol 5e-3, atol 5e-3 * max|fd|) is the truncation error of the step (h^2/6
    times a third derivative of order 1 over a few steps) plus the float32 rounding of
    the loss divided by the step (~1e-7 * |loss| / 1e-2)."""
    module = parse(rnn_text(carry, length, n_seq, bias))
    ex = compile_module(module, options=ONE_THREAD, cache=None)
    vals = inputs(carry, length, n_seq, bias, seed=3)
    grads = ex("rnn_grad", *vals)[1:]
    step = 1e-2
    for i, (v, g) in enumerate(zip(vals, grads, strict=True)):
        fd = np.zeros(v.shape)
        for idx in np.ndindex(v.shape):
            plus, minus = [a.copy() for a in vals], [a.copy() for a in vals]
            plus[i][idx] += step
            minus[i][idx] -= step
            (lp,), (lm,) = ex("rnn", *plus), ex("rnn", *minus)
            fd[idx] = (float(lp) - float(lm)) / (2 * step)
        np.testing.assert_allclose(g, fd, rtol=5e-3, atol=5e-3 * max(1.0, np.abs(fd).max()),
                                   err_msg=f"argument #{i}")


@pytest.mark.parametrize(("carry", "length"), [((2, 3), 4), ((3,), 1), ((2, 1, 3), 5)])
def test_reverse_scan_matches_torch(carry: tuple[int, ...], length: int) -> None:
    module = parse(rnn_text(carry, length, 1, True, reverse=True, params=False))
    ex = compile_module(module, options=ONE_THREAD, cache=None)
    vals = inputs(carry, length, 1, True, seed=1)
    loss, _ = torch_rnn(vals, length, 1, True, reverse=True)
    (got,) = ex("rnn", *vals)
    check(got, loss, "loss of a reverse scan")


def test_reverse_scan_rows_are_the_carries_in_reverse_order() -> None:
    """Row t of a reverse scan's result is the carry after step t, the steps running
    t = T-1 .. 0: with h' = h + x_t (no matmul), row t = h0 + x_{T-1} + ... + x_t."""
    text = """
    func.func @acc(%h: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
      %s = frame.add %h, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      func.return %s : tensor<3xf32>
    }
    func.func @f(%h0: tensor<3xf32>, %xs: tensor<4x3xf32>) -> tensor<4x3xf32> {
      %hs = frame.scan @acc(%h0, %xs) {length = 4 : i64, num_sequences = 1 : i64, reverse} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
      func.return %hs : tensor<4x3xf32>
    }
    """
    ex = compile_module(parse(text), options=ONE_THREAD, cache=None)
    h0 = np.array([1.0, 2.0, 3.0], np.float32)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    (got,) = ex("f", h0, xs)
    want = h0 + np.cumsum(xs[::-1], axis=0)[::-1]
    np.testing.assert_array_equal(got, want)


def test_one_sgd_step_matches_torch() -> None:
    carry, length, n_seq, bias = (2, 3), 4, 1, True
    module = parse(rnn_text(carry, length, n_seq, bias))
    ex = compile_module(module, lr=0.1, options=ONE_THREAD, cache=None)
    vals = inputs(carry, length, n_seq, bias, seed=2)
    loss, grads = torch_rnn(vals, length, n_seq, bias)
    got = ex("rnn_train_step", *vals)
    check(got[0], loss, "loss of the train step")
    for i, (v, g, new) in enumerate(zip(vals, grads, got[1:], strict=True)):
        check(new, v.astype(np.float64) - 0.1 * g, f"parameter #{i} after one SGD step")


def test_step_arena_grown_by_gemm_moves_to_the_callers_arena() -> None:
    """A step whose matmul frame-gemm takes gets GEMM scratch in its arena after
    bufferization: frame-lower-scan passes it a region appended to the caller's arena
    instead of the smaller slot, and the results stay right."""
    carry, length = (32, 64), 3
    module = parse(rnn_text(carry, length, 1, False))
    sizes: dict[str, int] = {}
    slots: list[int] = []

    def after(p: object, m: builtin.ModuleOp) -> None:
        name = getattr(p, "name", "")
        if name == "frame-bufferize":
            slots.extend(s.parts()[4].type.get_shape()[0] for s in m.walk()
                         if isinstance(s, RtScanOp) and s.body.root_reference.data == "rnn_cell")
        if name == "frame-lower-scan":
            for f in m.ops:
                if isinstance(f, func.FuncOp) and "frame.arena_size" in f.attributes:
                    sizes[f.sym_name.data] = f.attributes["frame.arena_size"].value.data
            calls = [c for c in m.walk() if isinstance(c, func.CallOp)
                     and c.callee.root_reference.data == "rnn_cell"]
            assert calls
            for c in calls:  # the step's arena, at the step's final size
                assert c.arguments[-1].type.get_shape()[0] == sizes["rnn_cell"]

    options = CompileOptions(threads=1, gemm=True, gemm_min_flops=1)
    ex = compile_module(module, options=options, cache=None, after_pass=after)
    assert slots and sizes["rnn_cell"] > max(slots), "frame-gemm did not grow the step"
    vals = inputs(carry, length, 1, False, seed=3)
    loss, grads = torch_rnn(vals, length, 1, False)
    (fwd,) = ex("rnn", *vals)
    check(fwd, loss, "loss")
    got = ex("rnn_grad", *vals)
    for i, (g, want) in enumerate(zip(got[1:], grads, strict=True)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"gradient of argument #{i}")


def test_step_kernels_split_over_threads() -> None:
    """With 2 threads the step's large kernels run on the pool (frame_rt.parallel_for
    inside the step function, called from the scan's loop): same results."""
    carry, length = (128, 256), 2
    module = parse(rnn_text(carry, length, 1, True))
    ex = compile_module(module, options=CompileOptions(threads=2), cache=None)
    assert ex.llvm_ir is not None and "frame_rt_parallel_for" in ex.llvm_ir
    vals = inputs(carry, length, 1, True, seed=6)
    loss, grads = torch_rnn(vals, length, 1, True)
    got = ex("rnn_grad", *vals)
    np.testing.assert_allclose(got[0], loss, rtol=1e-5)
    for i, (g, want) in enumerate(zip(got[1:], grads, strict=True)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"gradient of argument #{i}")


def test_scan_inside_a_step_function() -> None:
    """Nested scans: the outer step runs an inner scan over a row of a sequence of
    sequences and keeps its last carry (forward only: the VJP of a step that scans is
    not derived)."""
    text = """
    func.func @inner(%h: tensor<2x3xf32>, %x: tensor<2x3xf32>, %w: tensor<3x3xf32>) -> tensor<2x3xf32> {
      %m = frame.matmul %h, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
      %a = frame.add %m, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %t = frame.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %t : tensor<2x3xf32>
    }
    func.func @outer(%c: tensor<2x3xf32>, %xs: tensor<5x2x3xf32>, %w: tensor<3x3xf32>) -> tensor<2x3xf32> {
      %hs = frame.scan @inner(%c, %xs, %w) {length = 5 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<5x2x3xf32>, tensor<3x3xf32>) -> tensor<5x2x3xf32>
      %last = frame.slice %hs {axis = 0 : i64, begin = 4 : i64, end = 5 : i64} : (tensor<5x2x3xf32>) -> tensor<1x2x3xf32>
      %r = frame.reshape %last : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
      %n = frame.scale %r {factor = 0.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %n : tensor<2x3xf32>
    }
    func.func @f(%c0: tensor<2x3xf32>, %xss: tensor<3x5x2x3xf32>, %w: tensor<3x3xf32>) -> tensor<3x2x3xf32> {
      %cs = frame.scan @outer(%c0, %xss, %w) {length = 3 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<3x5x2x3xf32>, tensor<3x3xf32>) -> tensor<3x2x3xf32>
      func.return %cs : tensor<3x2x3xf32>
    }
    """
    ex = compile_module(parse(text), options=ONE_THREAD, cache=None)
    rng = np.random.default_rng(4)
    c0 = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    xss = rng.uniform(-1, 1, (3, 5, 2, 3)).astype(np.float32)
    w = rng.uniform(-0.6, 0.6, (3, 3)).astype(np.float32)
    (got,) = ex("f", c0, xss, w)
    c, want = torch.tensor(c0, dtype=torch.float64), []
    tw = torch.tensor(w, dtype=torch.float64)
    for s in range(3):
        h = c
        for t in range(5):
            h = torch.tanh(h @ tw + torch.tensor(xss[s, t], dtype=torch.float64))
        c = 0.5 * h
        want.append(c.numpy())
    check(got, np.stack(want), "nested scans")


def test_the_step_functions_are_compiled_once() -> None:
    """The IR does not grow with the length: the loops stage of a scan of 3 steps and
    one of 300 differ only in constants."""
    def loops(length: int) -> str:
        module = parse(rnn_text((2, 3), length, 1, True))
        run_pipeline(module, None, stop_after="loops", options=ONE_THREAD)
        assert not any(isinstance(o, RtScanOp) for o in module.walk())
        return str(module)

    short, long = loops(3), loops(300)
    assert len(short.splitlines()) == len(long.splitlines())


def test_signatures_list_the_step_functions_with_their_abi() -> None:
    """Step functions are ordinary public functions: the runtime reads their ABI like
    any other (the carry as an output, the arena last) and can call them."""
    module = parse(rnn_text((2, 3), 4, 1, False))
    ex = compile_module(module, options=ONE_THREAD, cache=None)
    sig = ex.signatures["rnn_cell"]
    assert [a.kind for a in sig.args] == ["input", "input", "input", "output", "arena"]
    assert {"rnn", "rnn_grad", "rnn_cell", "rnn_cell_vjp"} <= set(ex.signatures)
    h, x = np.full((2, 3), 0.5, np.float32), np.full((2, 3), -0.25, np.float32)
    w = np.eye(3, dtype=np.float32)
    (got,) = ex("rnn_cell", h, x, w)
    np.testing.assert_allclose(got, np.tanh(h @ w + x), rtol=1e-6)


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_computes_the_same_bits_as_the_jit(tmp_path: Path) -> None:
    """The loops stage of a scan and of its gradient (a reverse scan over the step's
    VJP) emitted as C++, built with g++ (-O2, no FP contraction), run: the same bits
    as the JIT's."""
    carry, length, n_seq, bias = (2, 3), 5, 2, True
    vals = inputs(carry, length, n_seq, bias, seed=5)
    jit = compile_module(parse(rnn_text(carry, length, n_seq, bias)), options=ONE_THREAD,
                         cache=None)
    want = [*jit("rnn", *vals), *jit("rnn_grad", *vals)]
    module = parse(rnn_text(carry, length, n_seq, bias))
    run_pipeline(module, None, stop_after="loops", options=ONE_THREAD)

    def arr(name: str, v: np.ndarray) -> str:
        body = ", ".join(f"{float(x).hex()}f" for x in v.reshape(-1))
        return f"static float {name}[{v.size}] = {{{body}}};"

    names = [f"in{i}" for i in range(len(vals))]
    outs = [f"o{i}" for i in range(len(want))]
    decls = "\n".join([*(arr(n, v) for n, v in zip(names, vals, strict=True)),
                       *(f"static float {o}[{max(1, np.asarray(w).size)}];"
                         for o, w in zip(outs, want, strict=True))])
    args = ", ".join(names)
    prints = "\n".join(
        f"  for (int j = 0; j < {np.asarray(w).size}; ++j) std::printf(\"%a\\n\", "
        f"double({o}[j]));" for o, w in zip(outs, want, strict=True))
    main = f"""
#include <cstdio>
{decls}
alignas(64) static std::uint8_t arena[1 << 20];
int main() {{
  rnn({args}, {outs[0]}, arena);
  rnn_grad({args}, {", ".join(outs[1:])}, arena);
{prints}
}}
"""
    src = tmp_path / "scan.cpp"
    src.write_text(emit_module(module).text() + main)
    exe = tmp_path / "scan"
    subprocess.run([CXX, "-std=c++17", "-O2", "-ffp-contract=off", "-Wall", "-Wextra",
                    "-Werror", str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    flat = np.array([float.fromhex(v) for v in got], np.float32)
    expected = np.concatenate([np.asarray(w, np.float32).reshape(-1) for w in want])
    assert flat.shape == expected.shape
    np.testing.assert_array_equal(flat.view(np.uint32), expected.view(np.uint32))


@pytest.mark.skipif(CXX is None, reason="a C++ compiler is needed")
def test_emitted_cpp_of_a_step_defined_after_its_caller(tmp_path: Path) -> None:
    """The C++ emitter defines a step function before the function scanning over it,
    even when the IR has it after (a prototype would have to guess which pointer
    parameters are `const`): it compiles, links, and computes the JIT's bits."""
    text = """
    func.func @f(%h0: tensor<2x3xf32>, %xs: tensor<4x2x3xf32>, %w: tensor<3x3xf32>) -> tensor<4x2x3xf32> {
      %hs = frame.scan @cell(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>
      func.return %hs : tensor<4x2x3xf32>
    }
    func.func @cell(%h: tensor<2x3xf32>, %x: tensor<2x3xf32>, %w: tensor<3x3xf32>) -> tensor<2x3xf32> {
      %m = frame.matmul %h, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
      %a = frame.add %m, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %t = frame.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %t : tensor<2x3xf32>
    }
    """
    vals = inputs((2, 3), 4, 1, False, seed=7)
    (want,) = compile_module(parse(text), options=ONE_THREAD, cache=None)("f", *vals)
    module = parse(text)
    run_pipeline(module, None, stop_after="loops", options=ONE_THREAD)
    cpp = emit_module(module).text()
    assert cpp.index("void cell(") < cpp.index("void f(")
    decls = "\n".join(f"static float in{i}[{v.size}] = {{"
                      + ", ".join(f"{float(x).hex()}f" for x in v.reshape(-1)) + "};"
                      for i, v in enumerate(vals))
    main = f"""
#include <cstdio>
{decls}
static float out[{want.size}];
alignas(64) static std::uint8_t arena[1 << 16];
int main() {{
  f(in0, in1, in2, out, arena);
  for (int j = 0; j < {want.size}; ++j) std::printf("%a\\n", double(out[j]));
}}
"""
    src = tmp_path / "order.cpp"
    src.write_text(cpp + main)
    exe = tmp_path / "order"
    subprocess.run([CXX, "-std=c++17", "-O2", "-ffp-contract=off", "-Wall", "-Wextra",
                    "-Werror", str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    flat = np.array([float.fromhex(v) for v in got], np.float32)
    np.testing.assert_array_equal(flat.view(np.uint32),
                                  np.asarray(want, np.float32).reshape(-1).view(np.uint32))
