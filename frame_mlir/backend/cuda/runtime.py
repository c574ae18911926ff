"""Running a `CudaProgram`: one device arena, the data and parameters copied in once,
each step the train-step function's launches in order, the losses read back at the end.

The device is either a GPU through the CUDA driver API (`CudaBackend`, the `[cuda]`
extra) or the CPU emulator of the same kernels (`EmulatorBackend`, for machines without
a GPU: it runs the device LLVM IR with CUDA's grid, block, barrier and shared memory
semantics, so a test of the plan and the kernels needs no GPU).

A v0 spec trains one fixed batch, so a step reads nothing from the host: the launches
of step i write their loss into element i of a device array of losses (the launch
arguments that address the step's output slot are moved there), and `run` reads the
array once after the last step -- no synchronisation between steps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from frame_mlir.backend.cuda.compile import CudaProgram, HostFunction

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from frame_mlir.backend.cuda.driver import CudaDevice
    from frame_mlir.compile_options import CompileOptions
from frame_mlir.backend.abi import aligned_empty


class Backend(Protocol):
    """What the session needs from a device."""

    name: str

    def alloc(self, nbytes: int) -> int: ...
    def copy_to_device(self, dst: int, src: np.ndarray) -> None: ...
    def copy_from_device_into(self, dst: np.ndarray, src: int) -> None: ...
    def launch(self, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[int]) -> None: ...
    def synchronize(self) -> None: ...
    def close(self) -> None: ...


class CudaBackend:
    """A GPU through the CUDA driver API (cuda-python): the program's PTX for the
    device's architecture (sm_90 from compute capability 9.0, sm_80 below), loaded once."""

    def __init__(self, program: CudaProgram, ordinal: int = 0,
                 device: CudaDevice | None = None):
        from frame_mlir.backend.cuda.driver import CudaDevice

        self.device = device if device is not None else CudaDevice(ordinal)
        major, _ = self.device.compute_capability
        if major < 8:
            from frame_mlir.backend.cuda.driver import CudaError

            raise CudaError("CUDA-003", f"device {ordinal} ({self.device.name}) has compute "
                            f"capability {major}.x; expected 8.0 or newer (sm_80)")
        self.arch = "sm_90" if major >= 9 else "sm_80"
        self.name = f"{self.device.name} ({self.arch})"
        self.module = self.device.load_ptx(program.ptx(self.arch), name="frame_kernels")
        self._kernels = {k: self.module.function(k) for k in program.kernels}
        self._allocs: list[int] = []

    def alloc(self, nbytes: int) -> int:
        ptr = self.device.alloc(nbytes)
        self._allocs.append(ptr)
        return ptr

    def copy_to_device(self, dst: int, src: np.ndarray) -> None:
        self.device.copy_to_device(dst, src)

    def copy_from_device_into(self, dst: np.ndarray, src: int) -> None:
        self.device.copy_from_device_into(dst, src)

    def launch(self, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[int]) -> None:
        self._kernels[kernel].launch(grid, block, args)

    def synchronize(self) -> None:
        self.device.synchronize()

    def close(self) -> None:
        for p in self._allocs:
            self.device.free(p)
        self._allocs.clear()
        self.device.close()


class EmulatorBackend:
    """The kernels on the CPU emulator (`emulator.EmulatedDevice`): device memory is
    host memory, a launch runs every block of the grid in turn."""

    name = "CPU emulator"

    def __init__(self, program: CudaProgram):
        from frame_mlir.backend.cuda.emulator import EmulatedDevice

        self.device = EmulatedDevice(program.nvvm_ir)
        self._buffers: list[np.ndarray] = []

    def alloc(self, nbytes: int) -> int:
        buf = aligned_empty(max(nbytes, 1), 256)
        buf[:] = 0xFF  # garbage, as cuMemAlloc leaves it: a kernel must not read unset memory
        self._buffers.append(buf)
        return int(buf.ctypes.data)

    def copy_to_device(self, dst: int, src: np.ndarray) -> None:
        src = np.ascontiguousarray(src)
        _host_view(dst, src.nbytes)[:] = src.reshape(-1).view(np.uint8)

    def copy_from_device_into(self, dst: np.ndarray, src: int) -> None:
        dst.reshape(-1).view(np.uint8)[:] = _host_view(src, dst.nbytes)

    def launch(self, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[int]) -> None:
        self.device.launch(kernel, grid, block, list(args))

    def synchronize(self) -> None:
        pass

    def close(self) -> None:
        self._buffers.clear()


class CudaSession:
    """A compiled spec's buffers on a device: `run(steps)` trains, `params()` and
    `predict()` read results back.

    `data`: the data inputs then the target, in the graph's order (as the CPU
    `Session`); `params`: by name."""

    def __init__(self, program: CudaProgram, backend: Backend, *, model: str,
                 predict_function: str, data: Sequence[np.ndarray],
                 params: Mapping[str, np.ndarray]):
        self.program = program
        self.backend = backend
        self.step_fn = program.functions[f"{model}_train_step"]
        self.forward_fn = program.functions[model]
        self.predict_fn = program.functions[predict_function]
        self.base = backend.alloc(program.arena_size)
        self._param_slots: dict[str, tuple[int, np.ndarray]] = {}
        fn = self.step_fn
        data_iter = iter(data)
        for arg, off in zip(fn.signature.args, fn.argument_offsets, strict=True):
            if arg.kind == "input":
                arr = np.ascontiguousarray(next(data_iter), dtype=arg.dtype)
                self._check(arg.name, arr.nbytes, arg.nbytes)
                backend.copy_to_device(self.base + off, arr)
            elif arg.kind == "param":
                arr = np.ascontiguousarray(params[arg.name], dtype=arg.dtype)
                self._check(arg.name, arr.nbytes, arg.nbytes)
                backend.copy_to_device(self.base + off, arr)
                self._param_slots[arg.name] = (off, np.empty(arg.shape, arg.dtype))

    @staticmethod
    def _check(name: str, found: int, expected: int) -> None:
        if found != expected:
            raise ValueError(f"buffer '{name}' has {found} bytes, the compiled function "
                             f"expects {expected}")

    def _output_offset(self, fn: HostFunction) -> int:
        (off,) = [o for a, o in zip(fn.signature.args, fn.argument_offsets, strict=True)
                  if a.kind == "output"]
        return off

    def _call(self, fn: HostFunction, moved: tuple[int, int] | None = None) -> None:
        """Launch `fn`'s kernels in order; `moved` = (slot, address): arguments at that
        slot go to that address instead."""
        for ln in fn.launches:
            args = [self.base + a for a in ln.args]
            if moved is not None:
                slot, addr = moved
                args = [addr if a == self.base + slot else a for a in args]
            self.backend.launch(ln.kernel, ln.grid, ln.block, args)

    def run(self, steps: int) -> np.ndarray:
        """`steps` train steps; each step's loss (before its update), read back once."""
        steps = int(steps)
        if steps < 0:
            raise ValueError(f"steps: expected a count >= 0, found {steps}")
        (out,) = self.step_fn.signature.of_kind("output")
        losses = np.zeros(steps, dtype=out.dtype)
        if steps == 0:
            return losses
        dev = self.backend.alloc(losses.nbytes)
        slot = self._output_offset(self.step_fn)
        for i in range(steps):
            self._call(self.step_fn, (slot, dev + i * out.dtype.itemsize))
        self.backend.synchronize()
        self.backend.copy_from_device_into(losses, dev)
        return losses

    def _result(self, fn: HostFunction) -> np.ndarray:
        self._call(fn)
        self.backend.synchronize()
        (out,) = fn.signature.of_kind("output")
        arr = np.empty(out.shape, out.dtype)
        self.backend.copy_from_device_into(arr, self.base + self._output_offset(fn))
        return arr

    def evaluate(self) -> float:
        """The loss of the current parameters (forward only)."""
        return float(self._result(self.forward_fn))

    def predict(self) -> np.ndarray:
        """The prediction layer's output for the current parameters."""
        return self._result(self.predict_fn)

    def params(self) -> dict[str, np.ndarray]:
        """The current parameters by name, read back from the device."""
        self.backend.synchronize()
        out = {}
        for name, (off, arr) in self._param_slots.items():
            self.backend.copy_from_device_into(arr, self.base + off)
            out[name] = arr.copy()
        return out

    def close(self) -> None:
        self.backend.close()


class CudaExecutable:
    """Any compiled module's host functions on a device, called like the CPU's
    `runtime.executable.Executable`: `ex("f_grad", x, w, ...)` copies the inputs (data
    and parameters, in argument order) into the device arena, launches `@f_grad`'s
    kernels and returns its results (outputs, and arguments updated in place, in result
    order) as new arrays. What gradient and parity checks of the CUDA path call."""

    def __init__(self, program: CudaProgram, backend: Backend):
        self.program = program
        self.backend = backend
        self.base = backend.alloc(program.arena_size)

    def __call__(self, name: str, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        fn = self.program.functions[name]
        sig = fn.signature
        ins = sig.of_kind("input", "param")
        if len(inputs) != len(ins):
            raise ValueError(f"@{name} expects {len(ins)} inputs "
                             f"({', '.join(a.name for a in ins)}), found {len(inputs)}")
        it = iter(inputs)
        reads: dict[int, tuple[int, np.ndarray]] = {}
        for a, off in zip(sig.args, fn.argument_offsets, strict=True):
            if a.kind == "arena":
                continue
            if a.kind == "output":
                reads[a.result_index or 0] = (off, np.zeros(a.shape, a.dtype))
                continue
            given = np.asarray(next(it))
            if given.shape != a.shape:
                raise ValueError(f"@{name}: input '{a.name}' expected shape "
                                 f"{list(a.shape)}, found {list(given.shape)}")
            buf = np.ascontiguousarray(given, dtype=a.dtype)
            self.backend.copy_to_device(self.base + off, buf)
            if a.result_index is not None:
                reads[a.result_index] = (off, np.empty(a.shape, a.dtype))
        self.launch(name)
        self.backend.synchronize()
        for off, arr in reads.values():
            self.backend.copy_from_device_into(arr, self.base + off)
        return tuple(reads[i][1] for i in sorted(reads))

    def launch(self, name: str) -> None:
        """Launch `@name`'s kernels on what the device arena holds (no copies, no
        synchronisation): what a benchmark times after one call has set the inputs."""
        for ln in self.program.functions[name].launches:
            self.backend.launch(ln.kernel, ln.grid, ln.block, [self.base + a for a in ln.args])

    def close(self) -> None:
        self.backend.close()


def _host_view(address: int, nbytes: int) -> np.ndarray:
    """The `nbytes` bytes of host memory at `address`, as a uint8 array (no copy)."""
    import ctypes

    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))


class DeviceExecutable:
    """A CudaProgram behind the CPU `Executable`'s interface -- `signatures` and
    `function(name)`, a callable taking one host pointer per argument -- so the trainers
    written for the CPU (JSON networks, `.kyn` programs) run their steps on the device
    unchanged: `runtime.executable.BoundFunction` works on it as it is.

    A call copies its input and parameter buffers to the device arena, launches the
    function's kernels, and copies back its outputs and the arguments it updates in
    place (parameters, optimizer state, running statistics). Unlike `CudaSession` (v0
    specs: parameters stay on the device for the whole run), the host buffers stay the
    truth between calls, which is what those trainers' host-side loops (data loading,
    schedules, metrics) read and write."""

    def __init__(self, program: CudaProgram, backend: Backend):
        self.program = program
        self.backend = backend
        self.signatures = {n: f.signature for n, f in program.functions.items()}
        self._ex = CudaExecutable(program, backend)

    def function(self, name: str) -> Callable[..., None]:
        fn = self.program.functions[name]
        base = self._ex.base
        backend = self.backend
        copy_in = [(i, a.nbytes, base + off)
                   for i, (a, off) in enumerate(zip(fn.signature.args, fn.argument_offsets,
                                                    strict=True))
                   if a.kind in ("input", "param")]
        copy_out = [(i, a.nbytes, base + off)
                    for i, (a, off) in enumerate(zip(fn.signature.args, fn.argument_offsets,
                                                     strict=True))
                    if a.kind == "output" or (a.kind in ("input", "param")
                                              and a.result_index is not None)]

        def call(*pointers: object) -> None:
            addrs = [p.value if hasattr(p, "value") else int(p)  # type: ignore[attr-defined]
                     for p in pointers]
            for i, n, dev in copy_in:
                backend.copy_to_device(dev, _host_view(addrs[i], n))
            self._ex.launch(name)
            backend.synchronize()
            for i, n, dev in copy_out:
                backend.copy_from_device_into(_host_view(addrs[i], n), dev)

        return call

    def close(self) -> None:
        self._ex.close()


def compile_module_cuda(module: ModuleOp, *, target: str, lr: float | None = None,
                        options: CompileOptions | None = None,
                        after_pass: Callable[..., None] | None = None) -> DeviceExecutable:
    """`runtime.executable.compile_module` for the cuda target (`target` "cuda": the
    GPU, "cuda-emulator": the CPU emulator)."""
    from frame_mlir.backend.cuda.compile import compile_cuda

    program = compile_cuda(module, lr, options=options, after_pass=after_pass)
    assert isinstance(program, CudaProgram)
    backend: Backend = (CudaBackend(program) if target == "cuda"
                        else EmulatorBackend(program))
    return DeviceExecutable(program, backend)
