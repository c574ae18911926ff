"""The CUDA driver-API runtime (frame_mlir.backend.cuda.driver).

Most tests run the real code against `FakeDriver`, a stand-in for cuda-python's driver
module that returns CUresult codes the way the bindings do and keeps "device memory" in
host buffers, so error translation and argument marshalling are checked on any machine.
Two tests use the real bindings on this machine; the last one needs a real GPU and skips
with the reason `device_available()` gives otherwise.
"""

from __future__ import annotations

import ctypes
import enum
import sys
import types
from typing import Any

import numpy as np
import pytest

from frame_mlir.backend.cuda import driver as cuda_driver
from frame_mlir.backend.cuda.driver import (
    CudaDevice,
    CudaError,
    device_available,
    require_driver,
)


class CUresult(enum.IntEnum):
    # The real codes (cuda.h) of the results the tests use.
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NO_DEVICE = 100
    CUDA_ERROR_INVALID_PTX = 218
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701


class CUjit_option(enum.IntEnum):  # noqa: N801 - the bindings' name
    CU_JIT_INFO_LOG_BUFFER = 3
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
    CU_JIT_ERROR_LOG_BUFFER = 5
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6


class CUdevice_attribute(enum.IntEnum):  # noqa: N801 - the bindings' name
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


_DESCRIPTIONS = {
    CUresult.CUDA_ERROR_INVALID_VALUE: b"invalid argument",
    CUresult.CUDA_ERROR_OUT_OF_MEMORY: b"out of memory",
    CUresult.CUDA_ERROR_INVALID_PTX: b"a PTX JIT compilation failed",
    CUresult.CUDA_ERROR_NOT_FOUND: b"named symbol not found",
    CUresult.CUDA_ERROR_ILLEGAL_ADDRESS: b"an illegal memory access was encountered",
    CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: b"too many resources requested for launch",
}


def _add_one(mem: dict[int, bytearray], ptrs: tuple[int, ...], threads: int) -> None:
    """The fake's `add_one(in, out)`: out[i] = in[i] + 1 for the threads launched."""
    src = np.frombuffer(mem[ptrs[0]], dtype=np.float32)
    dst = np.frombuffer(mem[ptrs[1]], dtype=np.float32)
    n = min(threads, src.size)
    dst[:n] = src[:n] + 1.0


class FakeDriver:
    """Enough of cuda-python's `driver` module for CudaDevice: every function returns
    `(CUresult, *outputs)`; `fail[name]` makes that function return the given code."""

    CUresult = CUresult
    CUjit_option = CUjit_option
    CUdevice_attribute = CUdevice_attribute

    def __init__(self, *, devices: int = 1, free: int = 123, jit_log: str = "") -> None:
        self.devices = devices
        self.free_bytes = free
        self.jit_log = jit_log
        self.fail: dict[str, CUresult] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.mem: dict[int, bytearray] = {}
        self.next_ptr = 0x7F00_0000_0000
        self.retained = 0
        self.modules: dict[str, str] = {}  # handle -> PTX text
        self.kernels = {"add_one": _add_one}

    def _ret(self, name: str, *outputs: Any) -> tuple[Any, ...]:
        result = self.fail.get(name, CUresult.CUDA_SUCCESS)
        if result != CUresult.CUDA_SUCCESS:
            return (result, *(None for _ in outputs))
        return (result, *outputs)

    def _log(self, name: str, *args: Any) -> None:
        self.calls.append((name, *args))

    def cuGetErrorString(self, err: CUresult) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, _DESCRIPTIONS.get(err, b"unknown error"))

    def cuInit(self, flags: int) -> tuple[Any, ...]:
        self._log("cuInit", flags)
        return self._ret("cuInit")

    def cuDeviceGetCount(self) -> tuple[Any, ...]:
        return self._ret("cuDeviceGetCount", self.devices)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, ...]:
        self._log("cuDeviceGet", ordinal)
        return self._ret("cuDeviceGet", f"dev{ordinal}")

    def cuDeviceGetName(self, length: int, dev: str) -> tuple[Any, ...]:
        return self._ret("cuDeviceGetName", b"Fake GPU".ljust(length, b"\0"))

    def cuDeviceGetAttribute(self, attr: CUdevice_attribute, dev: str) -> tuple[Any, ...]:
        major = attr == CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
        return self._ret("cuDeviceGetAttribute", 9 if major else 0)

    def cuDeviceTotalMem(self, dev: str) -> tuple[Any, ...]:
        return self._ret("cuDeviceTotalMem", 1 << 30)

    def cuDevicePrimaryCtxRetain(self, dev: str) -> tuple[Any, ...]:
        self.retained += 1
        return self._ret("cuDevicePrimaryCtxRetain", f"ctx-{dev}")

    def cuDevicePrimaryCtxRelease(self, dev: str) -> tuple[Any, ...]:
        self.retained -= 1
        return self._ret("cuDevicePrimaryCtxRelease")

    def cuCtxSetCurrent(self, ctx: str) -> tuple[Any, ...]:
        return self._ret("cuCtxSetCurrent")

    def cuCtxSynchronize(self) -> tuple[Any, ...]:
        self._log("cuCtxSynchronize")
        return self._ret("cuCtxSynchronize")

    def cuMemGetInfo(self) -> tuple[Any, ...]:
        return self._ret("cuMemGetInfo", self.free_bytes, 1 << 30)

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, ...]:
        result = self._ret("cuMemAlloc", self.next_ptr)
        if result[0] == CUresult.CUDA_SUCCESS:
            self.mem[self.next_ptr] = bytearray(nbytes)
            self.next_ptr += 1 << 20
        return result

    def cuMemFree(self, ptr: int) -> tuple[Any, ...]:
        self._log("cuMemFree", ptr)
        if ptr not in self.mem:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        del self.mem[ptr]
        return self._ret("cuMemFree")

    def cuMemcpyHtoD(self, dst: int, src: int, nbytes: int) -> tuple[Any, ...]:
        self._log("cuMemcpyHtoD", dst, src, nbytes)
        result = self._ret("cuMemcpyHtoD")
        if result[0] == CUresult.CUDA_SUCCESS:
            self.mem[dst][:nbytes] = ctypes.string_at(src, nbytes)
        return result

    def cuMemcpyDtoH(self, dst: int, src: int, nbytes: int) -> tuple[Any, ...]:
        self._log("cuMemcpyDtoH", dst, src, nbytes)
        result = self._ret("cuMemcpyDtoH")
        if result[0] == CUresult.CUDA_SUCCESS:
            ctypes.memmove(dst, bytes(self.mem[src][:nbytes]), nbytes)
        return result

    def cuModuleLoadDataEx(
        self, image: bytes, count: int, options: list[Any], values: list[Any]
    ) -> tuple[Any, ...]:
        self._log("cuModuleLoadDataEx", image, count, options, values)
        assert count == len(options) == len(values)
        result = self._ret("cuModuleLoadDataEx", f"mod{len(self.modules)}")
        if result[0] != CUresult.CUDA_SUCCESS:
            # Like ptxas: the log goes into the caller's buffer, NUL-terminated.
            opts = dict(zip(options, values, strict=True))
            buf = opts[CUjit_option.CU_JIT_ERROR_LOG_BUFFER]
            size = opts[CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
            text = self.jit_log.encode()[: size - 1] + b"\0"
            buf[: len(text)] = text
            return result
        self.modules[result[1]] = image.decode()
        return result

    def cuModuleUnload(self, module: str) -> tuple[Any, ...]:
        self._log("cuModuleUnload", module)
        return self._ret("cuModuleUnload")

    def cuModuleGetFunction(self, module: str, name: bytes) -> tuple[Any, ...]:
        assert isinstance(name, bytes)  # the bindings take the name as bytes
        if f".entry {name.decode()}(" not in self.modules[module]:
            return (CUresult.CUDA_ERROR_NOT_FOUND, None)
        return self._ret("cuModuleGetFunction", ("fn", name.decode()))

    def cuLaunchKernel(self, f: Any, *rest: Any) -> tuple[Any, ...]:
        self._log("cuLaunchKernel", f, *rest)
        gx, gy, gz, bx, by, bz, shared, stream, params, extra = rest
        # What cuda-python's _HelperKernelParams accepts for (values, types).
        values, ctypes_ = params
        assert isinstance(values, tuple) and isinstance(ctypes_, tuple)
        assert len(values) == len(ctypes_)
        assert all(t is ctypes.c_void_p for t in ctypes_)
        assert all(type(v) is int for v in values)
        result = self._ret("cuLaunchKernel")
        if result[0] == CUresult.CUDA_SUCCESS:
            self.kernels[f[1]](self.mem, values, gx * gy * gz * bx * by * bz)
        return result


_ADD_ONE_PTX = """\
.version 8.0
.target sm_80
.address_size 64

.visible .entry add_one(
    .param .u64 add_one_param_0,
    .param .u64 add_one_param_1
)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<7>;

    ld.param.u64 %rd1, [add_one_param_0];
    ld.param.u64 %rd2, [add_one_param_1];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    setp.ge.u32 %p1, %r4, {n};
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r4, 4;
    add.s64 %rd3, %rd3, %rd5;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.f32 %f1, [%rd3];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd6], %f2;
DONE:
    ret;
}}
"""


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    """A FakeDriver in place of the cuda-python bindings."""
    drv = FakeDriver()
    monkeypatch.setattr(cuda_driver, "_import_bindings", lambda: drv)
    return drv


def _rule(excinfo: pytest.ExceptionInfo[CudaError]) -> str:
    return excinfo.value.rule


# -- CUDA-001: no cuda-python ------------------------------------------------------------


def _hide_cuda_python(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import` raise ImportError, as if not installed.
    for name in ("cuda", "cuda.bindings", "cuda.bindings.driver", "cuda.cuda"):
        monkeypatch.setitem(sys.modules, name, None)


def test_without_cuda_python_every_entry_point_says_install_the_extra(monkeypatch):
    _hide_cuda_python(monkeypatch)
    for attempt in (require_driver, CudaDevice):
        with pytest.raises(CudaError) as excinfo:
            attempt()
        assert _rule(excinfo) == "CUDA-001"
        assert "pip install 'frame-mlir[cuda]'" in str(excinfo.value)
        assert str(excinfo.value).startswith("CUDA-001: ")
    reason = device_available()
    assert reason is not None and reason.startswith("CUDA-001") and "frame-mlir[cuda]" in reason


def test_legacy_cuda_cuda_module_is_used_when_cuda_bindings_is_absent(monkeypatch):
    legacy = types.ModuleType("cuda")
    legacy.cuda = types.ModuleType("cuda.cuda")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", legacy)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setitem(sys.modules, "cuda.cuda", legacy.cuda)  # type: ignore[attr-defined]
    assert require_driver() is legacy.cuda  # type: ignore[attr-defined]


# -- the real bindings on this machine ---------------------------------------------------


def _libcuda_loadable() -> bool:
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def _cuda_python_importable() -> bool:
    try:
        cuda_driver._import_bindings()
        return True
    except ImportError:
        return False


_NO_LIBCUDA = pytest.mark.skipif(
    _libcuda_loadable() or not _cuda_python_importable(),
    reason="needs cuda-python installed and no libcuda.so (the GPU-less case)",
)


@_NO_LIBCUDA
def test_real_bindings_without_libcuda_give_cuda_002_not_a_traceback():
    with pytest.raises(CudaError) as excinfo:
        CudaDevice()
    assert _rule(excinfo) == "CUDA-002"
    message = str(excinfo.value)
    assert "libcuda.so" in message and "cuInit" in message
    assert excinfo.value.__cause__ is None and excinfo.value.__suppress_context__
    assert device_available() == message


def test_device_available_is_none_or_a_cuda_error_message():
    # Whatever this machine has: either a device opens, or the reason is a CudaError.
    reason = device_available()
    if reason is None:
        with CudaDevice() as dev:
            assert dev.arch().startswith("sm_")
    else:
        with pytest.raises(CudaError) as excinfo:
            CudaDevice()
        assert str(excinfo.value) == reason
        assert _rule(excinfo) in {"CUDA-001", "CUDA-002", "CUDA-003"}


@_NO_LIBCUDA
def test_real_bindings_accept_the_argument_forms_we_pass():
    # cuda-python converts arguments before it loads libcuda, so without a driver a
    # wrong argument form shows as TypeError and a right one as the missing library.
    real = cuda_driver._import_bindings()
    shim = cuda_driver._Driver(real)
    dev, ctx, mod, fn = real.CUdevice(0), real.CUcontext(), real.CUmodule(), real.CUfunction()
    host = np.zeros(4, dtype=np.float32)
    calls = [
        lambda: shim.init(),
        lambda: shim.device_count(),
        lambda: shim.device(0),
        lambda: shim.device_name(dev),
        lambda: shim.compute_capability(dev),
        lambda: shim.total_memory(dev),
        lambda: shim.retain_primary_context(dev),
        lambda: shim.set_current(ctx),
        lambda: shim.release_primary_context(dev),
        lambda: shim.synchronize(),
        lambda: shim.mem_alloc(16),
        lambda: shim.mem_free(0x1000),
        lambda: shim.mem_info(),
        lambda: shim.copy_htod(0x1000, host.ctypes.data, host.nbytes),
        lambda: shim.copy_dtoh(host.ctypes.data, 0x1000, host.nbytes),
        lambda: shim.load_module(b".version 8.0\n\0"),
        lambda: shim.unload_module(mod),
        lambda: shim.get_function(mod, "add_one"),
        lambda: shim.launch(fn, (1, 2, 3), (4, 5, 6), 0, [0x1000, 0x2000]),
        lambda: shim.launch(fn, (1, 1, 1), (1, 1, 1), 0, []),
    ]
    for call in calls:
        with pytest.raises(cuda_driver._DriverCallFailed) as excinfo:
            call()
        cause = excinfo.value.__cause__
        assert excinfo.value.raised and not isinstance(cause, (TypeError, ValueError)), cause


# -- translation of driver results (FakeDriver) -------------------------------------------


def test_happy_path_marshals_pointers_grid_and_block_in_order(fake):
    n = 1000
    with CudaDevice() as dev:
        assert (dev.name, dev.compute_capability, dev.arch()) == ("Fake GPU", (9, 0), "sm_90")
        assert dev.total_memory == 1 << 30 and fake.retained == 1
        module = dev.load_ptx(_ADD_ONE_PTX.format(n=n), name="inc")
        assert module.kernel_names == ("add_one",)
        kernel = module.function("add_one")
        assert kernel.name == "add_one" and module.function("add_one") is kernel
        x = np.arange(n, dtype=np.float32)
        src, dst = dev.alloc(x.nbytes), dev.alloc(x.nbytes)
        dev.copy_to_device(src, x)
        kernel.launch((4, 1, 1), (256, 1, 1), [src, dst], shared_bytes=64)
        dev.synchronize()
        out = np.empty_like(x)
        dev.copy_from_device_into(out, dst)
        np.testing.assert_array_equal(out, x + 1)
        assert dev.copy_from_device(src, 8) == x[:2].tobytes()
    (launch,) = [c for c in fake.calls if c[0] == "cuLaunchKernel"]
    assert launch == (
        "cuLaunchKernel",
        ("fn", "add_one"),
        4, 1, 1,  # grid x, y, z
        256, 1, 1,  # block x, y, z
        64,  # dynamic shared memory
        0,  # default stream
        ((src, dst), (ctypes.c_void_p, ctypes.c_void_p)),
        0,  # no `extra`
    )
    (load,) = [c for c in fake.calls if c[0] == "cuModuleLoadDataEx"]
    assert load[1].endswith(b"}\n\0")  # NUL-terminated PTX
    # close() freed both buffers, unloaded the module and released the context.
    assert fake.mem == {} and fake.retained == 0
    assert ("cuModuleUnload", "mod0") in fake.calls


def test_grid_and_block_are_not_swapped(fake):
    with CudaDevice() as dev:
        module = dev.load_ptx(_ADD_ONE_PTX.format(n=4))
        dev.alloc(16)
        ptr = np.uint64(fake.next_ptr - (1 << 20))  # numpy ints are accepted, passed as int
        module.function("add_one").launch((2, np.int64(3), 5), (7, 11, 13), [ptr, ptr])
    (launch,) = [c for c in fake.calls if c[0] == "cuLaunchKernel"]
    assert launch[2:8] == (2, 3, 5, 7, 11, 13)


def test_out_of_memory_is_cuda_004_with_requested_and_free_bytes(fake):
    fake.fail["cuMemAlloc"] = CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with CudaDevice() as dev, pytest.raises(CudaError) as excinfo:
        dev.alloc(1 << 20)
    assert _rule(excinfo) == "CUDA-004"
    message = str(excinfo.value)
    assert "requested 1048576 bytes" in message and "123 bytes free" in message
    assert "CUDA_ERROR_OUT_OF_MEMORY" in message


def test_out_of_memory_without_free_count_still_names_the_request(fake):
    fake.fail["cuMemAlloc"] = CUresult.CUDA_ERROR_OUT_OF_MEMORY
    fake.fail["cuMemGetInfo"] = CUresult.CUDA_ERROR_INVALID_VALUE
    with CudaDevice() as dev, pytest.raises(CudaError) as excinfo:
        dev.alloc(4096)
    assert _rule(excinfo) == "CUDA-004"
    assert "requested 4096 bytes" in str(excinfo.value) and "free" not in str(excinfo.value)


def test_launch_failure_is_cuda_005_naming_kernel_grid_and_block(fake):
    fake.fail["cuLaunchKernel"] = CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    with CudaDevice() as dev:
        kernel = dev.load_ptx(_ADD_ONE_PTX.format(n=4)).function("add_one")
        with pytest.raises(CudaError) as excinfo:
            kernel.launch((3, 1, 1), (1024, 1, 1), [0x10, 0x20])
    assert _rule(excinfo) == "CUDA-005"
    message = str(excinfo.value)
    assert "'add_one'" in message and "grid=(3, 1, 1)" in message
    assert "block=(1024, 1, 1)" in message
    assert "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested" in message


def test_bad_launch_dimensions_are_cuda_005_before_the_driver(fake):
    with CudaDevice() as dev:
        kernel = dev.load_ptx(_ADD_ONE_PTX.format(n=4)).function("add_one")
        with pytest.raises(CudaError) as excinfo:
            kernel.launch((0, 1, 1), (32, 1, 1), [0x10, 0x20])
        assert _rule(excinfo) == "CUDA-005" and "found (0, 1, 1)" in str(excinfo.value)
        with pytest.raises(TypeError, match="argument 1"):
            kernel.launch((1, 1, 1), (32, 1, 1), [0x10, 1.5])  # type: ignore[list-item]
    assert not [c for c in fake.calls if c[0] == "cuLaunchKernel"]


def test_asynchronous_fault_names_the_last_launched_kernel(fake):
    fake.fail["cuCtxSynchronize"] = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    fake.fail["cuMemcpyDtoH"] = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    with CudaDevice() as dev:
        kernel = dev.load_ptx(_ADD_ONE_PTX.format(n=4)).function("add_one")
        buf = dev.alloc(16)
        kernel.launch((1, 1, 1), (4, 1, 1), [buf, buf])
        for surfaced_by in (dev.synchronize, lambda: dev.copy_from_device(buf, 16)):
            with pytest.raises(CudaError) as excinfo:
                surfaced_by()
            assert _rule(excinfo) == "CUDA-005"
            assert "'add_one'" in str(excinfo.value) and "block=(4, 1, 1)" in str(excinfo.value)
            assert "CUDA_ERROR_ILLEGAL_ADDRESS" in str(excinfo.value)


def test_any_synchronize_failure_after_a_launch_blames_that_launch(fake):
    # cuCtxSynchronize only waits for launched work: whatever it reports (here a code
    # that is not a kernel fault) came from the last kernel.
    fake.fail["cuCtxSynchronize"] = CUresult.CUDA_ERROR_INVALID_VALUE
    with CudaDevice() as dev:
        kernel = dev.load_ptx(_ADD_ONE_PTX.format(n=4)).function("add_one")
        buf = dev.alloc(16)
        kernel.launch((1, 1, 1), (4, 1, 1), [buf, buf])
        with pytest.raises(CudaError) as excinfo:
            dev.synchronize()
    assert _rule(excinfo) == "CUDA-005" and "'add_one' (grid=(1, 1, 1)" in str(excinfo.value)


def test_synchronize_failure_without_a_launch_is_cuda_007(fake):
    fake.fail["cuCtxSynchronize"] = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    with CudaDevice() as dev, pytest.raises(CudaError) as excinfo:
        dev.synchronize()
    assert _rule(excinfo) == "CUDA-007"
    assert "cuCtxSynchronize returned CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory" in str(
        excinfo.value
    )


def test_module_load_failure_is_cuda_006_with_the_jit_log(fake):
    fake.jit_log = "ptxas application ptx input, line 7; error   : Unknown symbol 'oops'"
    fake.fail["cuModuleLoadDataEx"] = CUresult.CUDA_ERROR_INVALID_PTX
    with CudaDevice() as dev, pytest.raises(CudaError) as excinfo:
        dev.load_ptx(_ADD_ONE_PTX.format(n=4), name="broken")
    assert _rule(excinfo) == "CUDA-006"
    message = str(excinfo.value)
    assert fake.jit_log in message and "JIT error log:" in message
    assert "'broken'" in message and "CUDA_ERROR_INVALID_PTX" in message
    assert "found .version 8.0 .target sm_80" in message and "sm_90" in message


def test_unknown_kernel_name_lists_the_module_kernels(fake):
    with CudaDevice() as dev:
        module = dev.load_ptx(_ADD_ONE_PTX.format(n=4), name="inc")
        with pytest.raises(CudaError) as excinfo:
            module.function("add_two")
    assert _rule(excinfo) == "CUDA-007"
    message = str(excinfo.value)
    assert "'add_two'" in message and "expected one of add_one" in message
    assert "CUDA_ERROR_NOT_FOUND" in message


@pytest.mark.parametrize(
    ("setup", "rule", "words"),
    [
        (lambda f: f.fail.update(cuInit=CUresult.CUDA_ERROR_NO_DEVICE), "CUDA-003", "found 0"),
        (lambda f: setattr(f, "devices", 0), "CUDA-003", "found 0"),
        (lambda f: f.fail.update(cuInit=CUresult.CUDA_ERROR_NOT_FOUND), "CUDA-002", "libcuda.so"),
        (
            lambda f: setattr(f, "cuInit", lambda flags: (_ for _ in ()).throw(OSError("gone"))),
            "CUDA-002",
            "cuInit raised OSError: gone",
        ),
        (
            lambda f: f.fail.update(cuDeviceGetName=CUresult.CUDA_ERROR_INVALID_VALUE),
            "CUDA-007",
            "cuDeviceGetName returned CUDA_ERROR_INVALID_VALUE (invalid argument)",
        ),
    ],
    ids=["cuInit-no-device", "zero-devices", "cuInit-not-found", "cuInit-raises", "other"],
)
def test_opening_failures(fake, setup, rule, words):
    setup(fake)
    with pytest.raises(CudaError) as excinfo:
        CudaDevice()
    assert _rule(excinfo) == rule and words in str(excinfo.value)
    assert fake.retained == 0


def test_device_ordinal_out_of_range_says_how_many_devices(fake):
    fake.devices = 2
    with pytest.raises(CudaError) as excinfo:
        CudaDevice(2)
    assert _rule(excinfo) == "CUDA-003"
    assert "expected one of 0..1, found 2 (2 CUDA devices present)" in str(excinfo.value)
    with CudaDevice(1) as dev:
        assert dev.ordinal == 1
    assert ("cuDeviceGet", 1) in fake.calls


def test_closed_device_and_host_array_checks(fake):
    dev = CudaDevice()
    ptr = dev.alloc(8)
    with pytest.raises(ValueError, match="expected at most 8 bytes"):
        dev.copy_to_device(ptr, np.zeros(4, dtype=np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        dev.copy_to_device(ptr, np.zeros(4, dtype=np.float32)[::2])
    with pytest.raises(ValueError, match="positive byte count"):
        dev.alloc(0)
    dev.free(ptr)
    assert fake.mem == {}
    dev.close()
    dev.close()  # idempotent: released once
    assert fake.retained == 0
    with pytest.raises(CudaError, match="found device 0 closed"):
        dev.alloc(8)


# -- a real GPU ----------------------------------------------------------------------------

_NO_DEVICE_REASON = device_available()


@pytest.mark.skipif(_NO_DEVICE_REASON is not None, reason=str(_NO_DEVICE_REASON))
def test_real_gpu_runs_a_hand_written_ptx_kernel():
    n = 1000
    with CudaDevice() as dev:
        kernel = dev.load_ptx(_ADD_ONE_PTX.format(n=n), name="inc").function("add_one")
        x = np.linspace(-3, 3, n, dtype=np.float32)
        src, dst = dev.alloc(x.nbytes), dev.alloc(x.nbytes)
        dev.copy_to_device(src, x)
        dev.copy_to_device(dst, np.full(n, 42, dtype=np.float32))
        kernel.launch(((n + 255) // 256, 1, 1), (256, 1, 1), [src, dst])
        dev.synchronize()
        out = np.empty_like(x)
        dev.copy_from_device_into(out, dst)
        np.testing.assert_array_equal(out, x + np.float32(1))
        back = np.frombuffer(dev.copy_from_device(src, x.nbytes), dtype=np.float32)
        np.testing.assert_array_equal(back, x)  # the input is untouched
        with pytest.raises(CudaError) as excinfo:
            dev.load_ptx(_ADD_ONE_PTX.format(n="%nope"), name="broken")
        assert excinfo.value.rule == "CUDA-006"
        assert "(the JIT wrote no log)" not in str(excinfo.value)
