"""The frame dialect's recurrence family: `frame.scan`, a time loop whose body is one
step, written once as a function, so the IR's size does not grow with the number of
steps (LSTM, LIF neurons, ...).

`frame.scan @step(%init, %seq_0, ..., %inv_0, ...)` runs, for t = 0 .. length-1
(length-1 .. 0 with `reverse`),

    carry = @step(carry, seq_0[t], ..., inv_0, ...)      (carry starts at %init)

and returns every step's carry stacked along a new leading axis: `[length, *carry]`.
`num_sequences` operands after %init are sequences of `[length, ...]` (the step sees
one row); the rest are invariants, passed whole at every step. `@step` is an ordinary
frame function `(carry, rows..., invariants...) -> carry` of the same module, compiled
once; a frontend packs several states into one carry (concat / slice).

The VJP (`_vjp_scan`) is another scan, in reverse, over `@<step>_vjp`, a function
frame-autodiff derives from `@step` with the VJP table (`step_vjp_function`, passed to
the rule: `STEP_VJP_RULES`): its carry packs the carry's adjoint with
the step's adjoints of its rows and invariants (each flattened), the invariants'
gradients are then summed over the steps. The lowering lives with the bufferizer
(`frame-bufferize` gives the scan a result buffer and the step's arena a slot in the
caller's) and `frame-lower-scan` (a loop of calls to the step function).

Also here: `frame.selective_scan`, a fixed linear recurrence along the last axis (the
Mamba block's scan) with its gradient op `frame.selective_scan_grad`. Unlike
`frame.scan` it is an ordinary tensor op: each lowers to generics whose last loop
carries the state (`_scan_space`), an output indexed by the leading dims only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    IntegerAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.dialects.linalg import attrs as linalg_attrs
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from frame_mlir.dialects import frame_base as _frame
from frame_mlir.dialects.frame_base import (
    AnyF32Tensor,
    FrameOp,
    Shape,
    ShapeError,
    _fmt,
    same_shape_rule,
)
from frame_mlir.dialects.frame_movement import ConcatOp, ReshapeOp, SliceOp
from frame_mlir.dialects.frame_reduce import SumOp
from frame_mlir.dialects.linalg_utils import PAR, RED, identity_map
from frame_mlir.dialects.linalg_utils import result_type as _result_type


@irdl_op_definition
class ScanOp(FrameOp):
    """A time loop over the step function `@body`, returning the stacked carries.
    ``%hs = frame.scan @step(%h0, %xs, %w) {length = 4 : i64, num_sequences = 1 : i64} : (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<3x3xf32>) -> tensor<4x2x3xf32>``"""

    name = "frame.scan"
    body = prop_def(SymbolRefAttr)
    inputs = var_operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    length = prop_def(IntegerAttr)
    num_sequences = prop_def(IntegerAttr)
    reverse = opt_prop_def(UnitAttr)
    assembly_format = "$body `(` $inputs `)` attr-dict `:` functional-type($inputs, results)"

    def __init__(self, body: str, init: SSAValue, sequences: Sequence[SSAValue],
                 invariants: Sequence[SSAValue], length: int, reverse: bool = False):
        ops = [SSAValue.get(v) for v in (init, *sequences, *invariants)]
        attrs = {"length": length, "num_sequences": len(sequences)}
        super().__init__(operands=[ops], result_types=[self.result_type_for(ops, **attrs)],
                         properties={"body": SymbolRefAttr(body),
                                     "length": IntegerAttr(length, i64),
                                     "num_sequences": IntegerAttr(len(sequences), i64),
                                     "reverse": UnitAttr() if reverse else None})

    def parts(self) -> tuple[SSAValue, list[SSAValue], list[SSAValue]]:
        """(init, sequences, invariants)."""
        k = self.num_sequences.value.data
        ins = list(self.inputs)
        return ins[0], ins[1:1 + k], ins[1 + k:]

    def rule_attrs(self) -> dict[str, object]:
        return {"length": self.length.value.data, "num_sequences": self.num_sequences.value.data}

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        length, k = int(attrs["length"]), int(attrs["num_sequences"])  # type: ignore[call-overload]
        if not shapes:
            raise ShapeError("frame.scan: expected an initial carry, found no operands")
        if length < 1:
            raise ShapeError(f"frame.scan: length expected >= 1, found {length}")
        if not 0 <= k <= len(shapes) - 1:
            raise ShapeError(f"frame.scan: num_sequences expected in [0, {len(shapes) - 1}], "
                             f"found {k}")
        for i, s in enumerate(shapes[1:1 + k], 1):
            if not s or s[0] != length:
                raise ShapeError(f"frame.scan: sequence operand #{i} expected a leading dim "
                                 f"of {length} (the length), found {_fmt(s)}")
        return (length, *shapes[0])

    def step_types(self) -> tuple[list[TensorType], TensorType]:
        """The step function's argument types and its result (carry) type."""
        init, seqs, invs = self.parts()
        row = [_frame.tensor_type((_frame.static_shape(s) or ())[1:], _frame.element_type(s))
               for s in seqs]
        return [init.type, *row, *(v.type for v in invs)], init.type  # type: ignore[list-item]

    def verify_(self) -> None:
        super().verify_()
        callee = SymbolTable.lookup_symbol(self, self.body)
        if callee is None:
            # A scan being built outside a module has nothing to look up yet.
            if self.get_toplevel_object() is not self and isinstance(
                    self.get_toplevel_object(), builtin.ModuleOp):
                raise VerifyException(f"frame.scan: step function {self.body} not found")
            return
        if not isinstance(callee, func.FuncOp):
            raise VerifyException(f"frame.scan: {self.body} expected a func.func, found "
                                  f"{callee.name}")
        if any(_frame.static_shape(v) is None for v in self.inputs):
            return
        args, carry = self.step_types()
        want = func.FunctionType.from_lists(args, [carry])
        if callee.function_type != want:
            raise VerifyException(f"frame.scan: step function {self.body} type expected "
                                  f"{want}, found {callee.function_type}")


def _scan_rule(shapes: Sequence[Shape], what: str) -> Shape:
    first = shapes[0]
    if len(first) < 1 or first[-1] < 1:
        raise ShapeError(f"{what}: expected rank >= 1 with a last dim >= 1, found {_fmt(first)}")
    return same_shape_rule(shapes)


@irdl_op_definition
class SelectiveScanOp(FrameOp):
    """Linear recurrence along the last axis, per leading index, from h = 0:
    h = a[t] * h + b[t] * x[t];  y[t] = c[t] * h + d[t] * x[t].

    ``%y = frame.selective_scan %x, %a, %b, %c, %d : (tensor<3xf32>, ...) -> tensor<3xf32>``
    """

    name = "frame.selective_scan"
    x = operand_def(AnyF32Tensor)
    a = operand_def(AnyF32Tensor)
    b = operand_def(AnyF32Tensor)
    c = operand_def(AnyF32Tensor)
    d = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    assembly_format = ("$x `,` $a `,` $b `,` $c `,` $d attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, x: SSAValue | Operation, a: SSAValue | Operation,
                 b: SSAValue | Operation, c: SSAValue | Operation, d: SSAValue | Operation):
        ops = [SSAValue.get(v) for v in (x, a, b, c, d)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops)])

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _scan_rule(shapes, "frame.selective_scan")


@irdl_op_definition
class SelectiveScanGradOp(FrameOp):
    """The gradient of frame.selective_scan with respect to operand `wrt` (0..4 for
    x, a, b, c, d), given dy: a forward pass recomputing the states, then a reverse scan.

    ``%gx = frame.selective_scan_grad %x, %a, %b, %c, %d, %dy {wrt = 0 : i64} : (...) -> tensor<3xf32>``
    """

    name = "frame.selective_scan_grad"
    x = operand_def(AnyF32Tensor)
    a = operand_def(AnyF32Tensor)
    b = operand_def(AnyF32Tensor)
    c = operand_def(AnyF32Tensor)
    d = operand_def(AnyF32Tensor)
    dy = operand_def(AnyF32Tensor)
    result = result_def(AnyF32Tensor)
    wrt = prop_def(IntegerAttr.constr(i64))
    assembly_format = ("$x `,` $a `,` $b `,` $c `,` $d `,` $dy attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, operands: Sequence[SSAValue], dy: SSAValue, wrt: int):
        ops = [*[SSAValue.get(v) for v in operands], SSAValue.get(dy)]
        super().__init__(operands=ops, result_types=[self.result_type_for(ops)],
                         properties={"wrt": IntegerAttr(wrt, i64)})

    @staticmethod
    def rule(shapes: Sequence[Shape], **attrs: object) -> Shape:
        return _scan_rule(shapes, "frame.selective_scan_grad")

    def verify_(self) -> None:
        super().verify_()
        if not 0 <= self.wrt.value.data <= 4:
            raise VerifyException(f"frame.selective_scan_grad: wrt expected 0..4, found "
                                  f"{self.wrt.value.data}")


OPS = [ScanOp, SelectiveScanOp, SelectiveScanGradOp]


# --- VJP rules ------------------------------------------------------------------------

Adjoints = list[SSAValue | None]
Emit = Callable[[Operation], SSAValue]


def _module_of(op: Operation) -> builtin.ModuleOp:
    top = op.get_toplevel_object()
    if not isinstance(top, builtin.ModuleOp):
        raise VerifyException("frame.scan: differentiating a scan needs its module (the "
                              "step function lives there)")
    return top


#: `step_vjp(step, name, n_rows)`: the VJP of a step function as a function (and the
#: packed sizes), which frame-autodiff (`passes/frame_autodiff.py`) provides: it runs
#: the VJP table on the step's body, a pass's service the dialect cannot import.
StepVjp = Callable[[func.FuncOp, str, int], tuple[func.FuncOp, list[int]]]


def _vjp_scan(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool],
              step_vjp: StepVjp) -> Adjoints:
    if op.reverse is not None:
        raise VerifyException("frame.scan: a reverse scan has no gradient rule")
    module = _module_of(op)
    step = SymbolTable.lookup_symbol(op, op.body)
    assert isinstance(step, func.FuncOp)
    name = f"{op.body.root_reference.data}_vjp"
    vjp = SymbolTable.lookup_symbol(module, name)
    if vjp is None:
        vjp, _ = step_vjp(step, name, op.num_sequences.value.data)
        Rewriter.insert_op(vjp, InsertPoint.after(step))
    assert isinstance(vjp, func.FuncOp)
    init, seqs, invs = op.parts()
    length = op.length.value.data
    arg_types = list(step.function_type.inputs.data)
    sizes = [prod(_frame.static_shape(t) or ()) for t in arg_types]
    # The carry each step started from: init, then the stacked carries but the last.
    first = emit(ReshapeOp(init, _frame.tensor_type(
        (1, *(_frame.static_shape(init) or ())), _frame.element_type(init))))
    prev = first if length == 1 else emit(ConcatOp(
        [first, emit(SliceOp(op.result, 0, 0, length - 1))], 0))
    zeros = emit(_frame.ConstantOp(0.0, result_type=_frame.tensor_type(
        (sum(sizes),), _frame.element_type(init))))
    packed = emit(ScanOp(vjp.sym_name.data, zeros, [prev, *seqs, dy], invs, length,
                         reverse=True))
    out: Adjoints = []
    offset = 0
    operands = [init, *seqs, *invs]
    for i, (v, size) in enumerate(zip(operands, sizes, strict=True)):
        lo, hi = offset, offset + size
        offset = hi
        if not need[i]:
            out.append(None)
            continue
        shape = _frame.static_shape(v) or ()
        elem = _frame.element_type(v)
        if i == 0:  # d init: what the first step passed back
            row = emit(SliceOp(emit(SliceOp(packed, 0, 0, 1)), 1, lo, hi))
            out.append(emit(ReshapeOp(row, _frame.tensor_type(shape, elem))))
        elif i <= len(seqs):  # d sequence: one row per step
            rows = emit(SliceOp(packed, 1, lo, hi))
            out.append(emit(ReshapeOp(rows, _frame.tensor_type(shape, elem))))
        else:  # d invariant: summed over the steps
            total = emit(SumOp(emit(SliceOp(packed, 1, lo, hi)), [0]))
            out.append(emit(ReshapeOp(total, _frame.tensor_type(shape, elem))))
    return out


def _vjp_selective_scan(emit: Emit, op: Any, dy: SSAValue, need: Sequence[bool]) -> Adjoints:
    return [emit(SelectiveScanGradOp(op.operands, dy, k)) if need[k] else None
            for k in range(5)]


VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {
    SelectiveScanOp: _vjp_selective_scan}

#: Higher-order VJP rules: called as `rule(emit, op, dy, need, step_vjp)`, they
#: differentiate the op's step function through frame-autodiff's `step_vjp`. The rule
#: stays here, with the op; only the recursion into autodiff is passed in.
STEP_VJP_RULES: dict[type[Operation], Callable[..., Adjoints]] = {ScanOp: _vjp_scan}


# --- lowerings (selective_scan; frame-bufferize and frame-lower-scan lower frame.scan) ---


def _scan_space(shape: Sequence[int], reverse: bool = False
                ) -> tuple[AffineMapAttr, AffineMapAttr, list[linalg_attrs.IteratorTypeAttr]]:
    """(full map, carried-state map, iterators) of a scan along the last axis; with
    `reverse`, the last loop walks t = T-1 .. 0."""
    rank = len(shape)
    d = [AffineExpr.dimension(i) for i in range(rank)]
    last = AffineExpr.constant(shape[-1] - 1) - d[-1] if reverse else d[-1]
    full = AffineMapAttr(AffineMap(rank, 0, (*d[:-1], last)))
    state = AffineMapAttr(AffineMap(rank, 0, tuple(d[:-1])))
    return full, state, [PAR] * (rank - 1) + [RED]


def _mul_add(b: Builder, p: SSAValue, q: SSAValue, r: SSAValue, s: SSAValue) -> SSAValue:
    """p*q + r*s, two roundings per product and one for the sum (no FMA)."""
    pq = b.insert(arith.MulfOp(p, q)).result
    rs = b.insert(arith.MulfOp(r, s)).result
    return b.insert(arith.AddfOp(pq, rs)).result


def _lower_selective_scan(lw: Any, op: Operation) -> SSAValue:
    """One generic: the state h is an output indexed by the leading dims only, so it
    carries from step t to t+1 of the (sequential) last loop."""
    typ = _result_type(op)
    shape = tuple(typ.get_shape())
    full, state, its = _scan_space(shape)
    h0 = lw.filled(TensorType(f32, shape[:-1]), 0.0)

    def body(b: Builder, v: Sequence[SSAValue]) -> list[SSAValue]:
        x, a, bb, c, d, h = v[:6]
        h_new = _mul_add(b, a, h, bb, x)
        return [h_new, _mul_add(b, c, h_new, d, x)]

    _, y = lw.generic_multi(op.operands, [h0, lw.empty(typ)], [full] * 5 + [state, full], its,
                            body)
    return y


def _lower_selective_scan_grad(lw: Any, op: Any) -> SSAValue:
    wrt = op.wrt.value.data
    typ = _result_type(op)
    shape = tuple(typ.get_shape())
    f32_full = TensorType(f32, shape)
    full, state, its = _scan_space(shape)
    x, a, b_, c, d, dy = op.operands

    # Forward: the states h_t and h_{t-1}.
    def forward(b: Builder, v: Sequence[SSAValue]) -> list[SSAValue]:
        xv, av, bv, h_prev = v[0], v[1], v[2], v[3]
        h = _mul_add(b, av, h_prev, bv, xv)
        return [h, h, h_prev]

    _, hs, hps = lw.generic_multi(
        [x, a, b_], [lw.filled(TensorType(f32, shape[:-1]), 0.0), lw.empty(f32_full),
                     lw.empty(f32_full)], [full] * 3 + [state, full, full], its, forward)

    # Reverse: gh_t = c_t dy_t + a_{t+1} gh_{t+1}; the carry holds a_t gh_t.
    rfull, rstate, rits = _scan_space(shape, reverse=True)

    def reverse(b: Builder, v: Sequence[SSAValue]) -> list[SSAValue]:
        xv, av, bv, cv, dv, gy, h, hp, _shape, carry = v[:10]
        gh = b.insert(arith.AddfOp(b.insert(arith.MulfOp(cv, gy)).result, carry)).result
        new_carry = b.insert(arith.MulfOp(av, gh)).result
        grad = [
            lambda: _mul_add(b, dv, gy, bv, gh),  # x
            lambda: b.insert(arith.MulfOp(gh, hp)).result,  # a
            lambda: b.insert(arith.MulfOp(gh, xv)).result,  # b
            lambda: b.insert(arith.MulfOp(gy, h)).result,  # c
            lambda: b.insert(arith.MulfOp(gy, xv)).result,  # d
        ][wrt]()
        return [new_carry, grad]

    # A shape-only operand with the identity map keeps the maps invertible (linalg
    # derives the loop bounds from them; t -> T-1-t alone does not say T).
    _, g = lw.generic_multi(
        [x, a, b_, c, d, dy, hs, hps, lw.empty(f32_full)],
        [lw.filled(TensorType(f32, shape[:-1]), 0.0), lw.empty(typ)],
        [rfull] * 8 + [identity_map(len(shape)), rstate, rfull], rits, reverse)
    return g


#: frame.scan has none: frame-bufferize and frame-lower-scan lower it.
LOWERINGS: dict[type[Operation], Callable[[Any, Operation], SSAValue]] = {
    SelectiveScanOp: _lower_selective_scan, SelectiveScanGradOp: _lower_selective_scan_grad}
