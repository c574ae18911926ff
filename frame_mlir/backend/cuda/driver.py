"""CUDA driver-API runtime: one device, its PTX modules, device memory and kernel launches.

A thin layer over NVIDIA's cuda-python bindings, which are an optional dependency (the
``frame-mlir[cuda]`` extra): this module imports them only when a device is opened, so
the rest of the compiler works without them. Every driver failure reaches the caller as
one :class:`CudaError` whose ``rule`` says what kind of failure it is and whose message
says what was expected and what was found -- never as a traceback out of the bindings.

Rule ids:

* ``CUDA-001`` cuda-python is not installed (the message names the extra to install).
* ``CUDA-002`` no CUDA driver: ``libcuda.so`` cannot be loaded, or ``cuInit`` fails.
* ``CUDA-003`` no CUDA device, or the device ordinal is out of range (says how many there are).
* ``CUDA-004`` out of device memory (bytes requested and, when known, bytes free).
* ``CUDA-005`` a kernel launch failed, synchronously or when a later call reported it
  (names the kernel, its grid and block).
* ``CUDA-006`` a PTX module failed to load / JIT-compile (includes the JIT error log).
* ``CUDA-007`` any other driver error (the call, the ``CUresult`` name and its text).

All binding-specific code (import paths, argument forms, the ``(CUresult, *outputs)``
return convention, enum lookups) lives in :class:`_Driver`; the public classes only see
plain Python values and :class:`_DriverCallFailed`.

A :class:`CudaDevice` retains the device's primary context (the one the CUDA runtime and
other libraries share) and makes it current before each operation, so several devices
(or other CUDA users) can coexist on one thread. Not thread-safe: use one device object
from one thread at a time.
"""

from __future__ import annotations

import ctypes
import operator
import re
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "CudaDevice",
    "CudaError",
    "CudaKernel",
    "CudaModule",
    "device_available",
    "require_driver",
]

_EXTRA_HINT = "pip install 'frame-mlir[cuda]'"

# Bytes reserved for each JIT log of cuModuleLoadDataEx; ptxas stops writing at the
# end of the buffer, so this only bounds how much of a very long log is shown.
_JIT_LOG_BYTES = 16 * 1024

# CUresult names of faults raised by a kernel while it runs. Launches are asynchronous,
# so these surface at a later call (a copy, cuCtxSynchronize); they are sticky: the
# context is unusable afterwards.
_KERNEL_FAULTS = frozenset(
    {
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_ASSERT",
    }
)

_OUT_OF_MEMORY = "CUDA_ERROR_OUT_OF_MEMORY"


class CudaError(RuntimeError):
    """A CUDA failure as a user-facing message.

    Attributes:
        rule: ``"CUDA-001"`` .. ``"CUDA-007"`` (see the module docstring).
        message: the text after the rule id; ``str(err)`` is ``"<rule>: <message>"``.
    """

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        self.message = message
        super().__init__(f"{rule}: {message}")


# --------------------------------------------------------------------------------------
# The bindings: the one place that knows how cuda-python is imported and called.
# --------------------------------------------------------------------------------------


def _import_bindings() -> types.ModuleType:
    """cuda-python's driver module: ``cuda.bindings.driver`` (cuda-python >= 12.6,
    cuda-bindings 13.x), else the older ``cuda.cuda``. Both expose the same functions.
    Raises ImportError when neither is importable."""
    try:
        from cuda.bindings import driver
    except ImportError as new_layout:
        try:
            from cuda import cuda as driver  # type: ignore[attr-defined,no-redef]
        except ImportError:
            raise new_layout from None  # report the current layout, not the legacy one
    return driver


def require_driver() -> types.ModuleType:
    """Import the cuda-python driver bindings, or raise CudaError.

    ``CUDA-001`` when they are not installed; ``CUDA-002`` when they are installed but
    fail to import for another reason (a broken install, or a version that loads
    ``libcuda.so`` at import time and does not find it).
    """
    try:
        return _import_bindings()
    except ImportError as exc:
        raise CudaError(
            "CUDA-001",
            "the CUDA backend needs NVIDIA's cuda-python bindings: expected "
            f"`cuda.bindings.driver` to be importable, found {exc}; install them with "
            f"{_EXTRA_HINT}",
        ) from exc
    except Exception as exc:  # the bindings exist but cannot start without a driver
        raise CudaError(
            "CUDA-002", _no_driver_message(f"importing cuda-python raised {_exc_text(exc)}")
        ) from exc


def _exc_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).rstrip('. ')}"


def _no_driver_message(detail: str) -> str:
    return (
        "no usable CUDA driver: expected libcuda.so (the NVIDIA driver library) to load, "
        f"found {detail}; install the NVIDIA display driver or run on a machine with an "
        "NVIDIA GPU"
    )


class _DriverCallFailed(Exception):
    """One driver call failed. Internal: the public method that made the call knows
    what it was doing and turns this into a CudaError with the right rule.

    Attributes:
        call: the driver function, e.g. ``"cuMemAlloc"``.
        result_name: the CUresult name (``"CUDA_ERROR_OUT_OF_MEMORY"``), or the
            exception type when the binding raised instead of returning a code.
        detail: what the call did, e.g. ``"returned CUDA_ERROR_OUT_OF_MEMORY (out of
            memory)"`` or ``"raised DynamicLibNotFoundError: ..."``.
        raised: True when the binding raised a Python exception.
        log: the JIT error (else info) log of a failed cuModuleLoadDataEx, or ``""``.
    """

    def __init__(self, call: str, result_name: str, detail: str, *, raised: bool = False):
        super().__init__(f"{call}: {detail}")
        self.call = call
        self.result_name = result_name
        self.detail = detail
        self.raised = raised
        self.log = ""


class _Driver:
    """Calls into cuda-python. Every binding function returns ``(CUresult, *outputs)``;
    :meth:`call` checks the CUresult and returns the outputs, so the methods below take
    and return plain Python values (ints for addresses and sizes, opaque handles)."""

    def __init__(self, module: types.ModuleType) -> None:
        self._m = module

    def call(self, name: str, *args: Any) -> tuple[Any, ...]:
        try:
            out = getattr(self._m, name)(*args)
        except Exception as exc:
            # cuda-bindings 13 loads libcuda lazily and raises DynamicLibNotFoundError
            # (a RuntimeError) from the first call when it is missing; older versions
            # raise RuntimeError('Function "cuInit" not found') or return a CUresult.
            raise _DriverCallFailed(
                name, type(exc).__name__, f"raised {_exc_text(exc)}", raised=True
            ) from exc
        result, outputs = out[0], tuple(out[1:])
        if result != self._m.CUresult.CUDA_SUCCESS:
            raise _DriverCallFailed(
                name, self.result_name(result), f"returned {self.describe(result)}"
            )
        return outputs

    def result_name(self, result: Any) -> str:
        """The enum name of a CUresult; works without a driver (cuGetErrorName does not)."""
        return str(getattr(result, "name", result))

    def describe(self, result: Any) -> str:
        """``NAME (description)``, the description from cuGetErrorString when the
        driver can give one."""
        name = self.result_name(result)
        try:
            err, text = self._m.cuGetErrorString(result)
            if err == self._m.CUresult.CUDA_SUCCESS and text:
                text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
                return f"{name} ({text})"
        except Exception:  # the description is a nicety; the name says it all
            pass
        return name

    # -- initialisation and device queries ---------------------------------------------

    def init(self) -> None:
        self.call("cuInit", 0)

    def device_count(self) -> int:
        return int(self.call("cuDeviceGetCount")[0])

    def device(self, ordinal: int) -> Any:
        return self.call("cuDeviceGet", ordinal)[0]

    def device_name(self, dev: Any) -> str:
        raw = self.call("cuDeviceGetName", 256, dev)[0]  # a fixed-size, NUL-padded buffer
        if isinstance(raw, bytes):
            raw = raw.split(b"\0", 1)[0].decode(errors="replace")
        return str(raw).strip()

    def compute_capability(self, dev: Any) -> tuple[int, int]:
        attr = self._m.CUdevice_attribute
        major = attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
        minor = attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
        return (
            int(self.call("cuDeviceGetAttribute", major, dev)[0]),
            int(self.call("cuDeviceGetAttribute", minor, dev)[0]),
        )

    def total_memory(self, dev: Any) -> int:
        return int(self.call("cuDeviceTotalMem", dev)[0])

    def attribute(self, dev: Any, name: str) -> int:
        attr = getattr(self._m.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(self.call("cuDeviceGetAttribute", attr, dev)[0])

    # -- contexts ----------------------------------------------------------------------

    def retain_primary_context(self, dev: Any) -> Any:
        return self.call("cuDevicePrimaryCtxRetain", dev)[0]

    def release_primary_context(self, dev: Any) -> None:
        self.call("cuDevicePrimaryCtxRelease", dev)

    def set_current(self, ctx: Any) -> None:
        self.call("cuCtxSetCurrent", ctx)

    def synchronize(self) -> None:
        self.call("cuCtxSynchronize")

    # -- memory ------------------------------------------------------------------------

    def mem_alloc(self, nbytes: int) -> int:
        return int(self.call("cuMemAlloc", nbytes)[0])  # CUdeviceptr -> its address

    def mem_free(self, ptr: int) -> None:
        self.call("cuMemFree", ptr)

    def mem_info(self) -> tuple[int, int]:
        free, total = self.call("cuMemGetInfo")
        return int(free), int(total)

    def copy_htod(self, dst: int, host_addr: int, nbytes: int) -> None:
        # Host memory as a plain address: accepted by every binding version, and the
        # caller keeps the numpy array alive across the (synchronous) copy.
        self.call("cuMemcpyHtoD", dst, host_addr, nbytes)

    def copy_dtoh(self, host_addr: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoH", host_addr, src, nbytes)

    # -- modules and launches ----------------------------------------------------------

    def load_module(self, image: bytes) -> Any:
        """cuModuleLoadDataEx with error and info log buffers. On failure the raised
        _DriverCallFailed carries the log (the error log, else the info log)."""
        opt = self._m.CUjit_option
        # The driver writes NUL-terminated text into these buffers in place; the
        # bindings pass a bytearray's storage as the char* option value.
        error_log = bytearray(_JIT_LOG_BYTES)
        info_log = bytearray(_JIT_LOG_BYTES)
        options = [
            opt.CU_JIT_ERROR_LOG_BUFFER,
            opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            opt.CU_JIT_INFO_LOG_BUFFER,
            opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ]
        values: list[Any] = [error_log, _JIT_LOG_BYTES, info_log, _JIT_LOG_BYTES]
        try:
            return self.call("cuModuleLoadDataEx", image, len(options), options, values)[0]
        except _DriverCallFailed as failed:
            failed.log = _c_string(error_log) or _c_string(info_log)
            raise

    def unload_module(self, module: Any) -> None:
        self.call("cuModuleUnload", module)

    def get_function(self, module: Any, name: str) -> Any:
        return self.call("cuModuleGetFunction", module, name.encode())[0]

    def launch(
        self,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        pointers: Sequence[int],
    ) -> None:
        # kernelParams as (values, ctypes types): the bindings copy each value into
        # storage of that type and pass the array of pointers to it (void**), which is
        # what cuLaunchKernel wants. c_void_p = a 64-bit device address.
        params = (tuple(pointers), (ctypes.c_void_p,) * len(pointers))
        stream = 0  # the context's default (legacy NULL) stream
        extra = 0  # no `extra` array: parameters go through kernelParams
        self.call("cuLaunchKernel", function, *grid, *block, shared_bytes, stream, params, extra)


def _c_string(buffer: bytearray) -> str:
    return bytes(buffer).split(b"\0", 1)[0].decode(errors="replace").strip()


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


def _ptx_kernels(ptx: str) -> tuple[str, ...]:
    """Names of the kernels (``.entry``) a PTX text declares, for error messages."""
    return tuple(re.findall(r"\.entry\s+([A-Za-z_$%][\w$%]*)", ptx))


def _ptx_header(ptx: str) -> str:
    """``.version X .target Y`` of a PTX text, for error messages."""
    parts = []
    for directive in ("version", "target"):
        m = re.search(rf"^\s*\.{directive}\s+([^\s/]+(?:\s*,\s*[^\s/]+)*)", ptx, re.MULTILINE)
        parts.append(f".{directive} {m.group(1)}" if m else f"no .{directive}")
    return " ".join(parts)


def _launch_text(name: str, grid: Sequence[int], block: Sequence[int], shared: int) -> str:
    return f"kernel '{name}' (grid={tuple(grid)}, block={tuple(block)}, shared={shared} bytes)"


class CudaDevice:
    """One CUDA device with its primary context; a context manager that closes it.

    Attributes:
        ordinal: the device index (0-based).
        name: the device name, e.g. ``"NVIDIA H200"``.
        compute_capability: ``(major, minor)``, e.g. ``(9, 0)``.
        total_memory: device memory in bytes.

    Device pointers are plain ints. Memory from :meth:`alloc` and modules from
    :meth:`load_ptx` that are still alive are released by :meth:`close`.
    """

    def __init__(self, ordinal: int = 0) -> None:
        self.ordinal = ordinal
        self._closed = True  # until the context is retained; close() then has nothing to do
        self._drv = _Driver(require_driver())
        self._allocations: dict[int, int] = {}  # device address -> size in bytes
        self._modules: list[CudaModule] = []
        # The last kernel launched since the last successful synchronize: a fault of an
        # asynchronous launch is reported by a later call and is blamed on it.
        self._last_launch: str | None = None

        try:
            self._drv.init()
        except _DriverCallFailed as failed:
            if failed.result_name == "CUDA_ERROR_NO_DEVICE":
                raise CudaError(
                    "CUDA-003",
                    f"no CUDA device: expected at least one for ordinal {ordinal}, found 0 "
                    f"(cuInit {failed.detail})",
                ) from None
            raise CudaError("CUDA-002", _no_driver_message(f"cuInit {failed.detail}")) from None
        try:
            count = self._drv.device_count()
        except _DriverCallFailed as failed:
            raise self._error(failed, "counting CUDA devices") from None
        if count == 0:
            raise CudaError(
                "CUDA-003",
                f"no CUDA device: expected at least one for ordinal {ordinal}, found 0 "
                "(the driver loaded but cuDeviceGetCount reports no device)",
            )
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or not 0 <= ordinal < count:
            valid = f"0..{count - 1}"
            raise CudaError(
                "CUDA-003",
                f"CUDA device ordinal out of range: expected one of {valid}, found "
                f"{ordinal!r} ({count} CUDA device{'s' if count != 1 else ''} present)",
            )
        try:
            self._dev = self._drv.device(ordinal)
            self.name = self._drv.device_name(self._dev)
            self.compute_capability = self._drv.compute_capability(self._dev)
            self.total_memory = self._drv.total_memory(self._dev)
            self._ctx = self._drv.retain_primary_context(self._dev)
        except _DriverCallFailed as failed:
            raise self._error(failed, f"opening CUDA device {ordinal}") from None
        self._closed = False
        try:
            self._activate()
        except CudaError:
            self.close()
            raise

    # -- properties ----------------------------------------------------------------------

    def arch(self) -> str:
        """The PTX/SASS target of this device, e.g. ``"sm_90"``."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    def attribute(self, name: str) -> int:
        """A device attribute by its CUDA name without the prefix, e.g.
        ``"MULTIPROCESSOR_COUNT"`` or ``"CLOCK_RATE"`` (kHz)."""
        try:
            return self._drv.attribute(self._dev, name)
        except AttributeError:
            raise ValueError(f"unknown CUDA device attribute {name!r}") from None
        except _DriverCallFailed as failed:
            raise self._error(failed, f"reading attribute {name}") from None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<CudaDevice {self.ordinal} {getattr(self, 'name', '?')!r} {state}>"

    # -- modules -------------------------------------------------------------------------

    def load_ptx(self, ptx: str, *, name: str = "module") -> CudaModule:
        """JIT-compile and load a PTX text; CUDA-006 with the JIT error log on failure."""
        self._activate()
        image = ptx.encode() + b"\0"  # the driver reads PTX as a NUL-terminated C string
        try:
            handle = self._drv.load_module(image)
        except _DriverCallFailed as failed:
            if failed.result_name == _OUT_OF_MEMORY:
                raise self._error(failed, f"loading PTX module '{name}'") from None
            log = failed.log or "(the JIT wrote no log)"
            raise CudaError(
                "CUDA-006",
                f"PTX module '{name}' failed to load on device {self.ordinal} "
                f"({self.name}, {self.arch()}): expected PTX the driver can JIT for "
                f"{self.arch()}, found {_ptx_header(ptx)}; cuModuleLoadDataEx "
                f"{failed.detail}{_load_hint(failed.result_name)}\n"
                f"JIT error log:\n{log}",
            ) from None
        module = CudaModule(self, handle, name, _ptx_kernels(ptx))
        self._modules.append(module)
        return module

    # -- memory --------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        """Allocate `nbytes` (> 0) of device memory; returns the device address."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"alloc: expected a positive byte count, found {nbytes!r}")
        self._activate()
        try:
            ptr = self._drv.mem_alloc(nbytes)
        except _DriverCallFailed as failed:
            raise self._error(failed, f"allocating {nbytes} bytes", requested=nbytes) from None
        self._allocations[ptr] = nbytes
        return ptr

    def free(self, ptr: int) -> None:
        """Free memory returned by :meth:`alloc`."""
        ptr = operator.index(ptr)  # a numpy integer becomes the int the bindings take
        self._activate()
        try:
            self._drv.mem_free(ptr)
        except _DriverCallFailed as failed:
            raise self._error(failed, f"freeing device address {ptr:#x}") from None
        self._allocations.pop(ptr, None)

    def copy_to_device(self, dst: int, src: np.ndarray) -> None:
        """Copy all bytes of a C-contiguous array to device address `dst`."""
        dst = operator.index(dst)
        self._check_host(src, "copy_to_device", writable=False)
        self._check_fits(dst, src.nbytes, "copy_to_device")
        if src.nbytes == 0:
            return
        self._activate()
        try:
            self._drv.copy_htod(dst, src.ctypes.data, src.nbytes)
        except _DriverCallFailed as failed:
            raise self._error(failed, f"copying {src.nbytes} bytes to {dst:#x}") from None

    def copy_from_device(self, src: int, nbytes: int) -> bytes:
        """`nbytes` bytes from device address `src`."""
        out = np.empty(nbytes, dtype=np.uint8)
        self.copy_from_device_into(out, src)
        return out.tobytes()

    def copy_from_device_into(self, dst: np.ndarray, src: int) -> None:
        """Fill a C-contiguous, writable array with ``dst.nbytes`` bytes from `src`."""
        src = operator.index(src)
        self._check_host(dst, "copy_from_device_into", writable=True)
        self._check_fits(src, dst.nbytes, "copy_from_device")
        if dst.nbytes == 0:
            return
        self._activate()
        try:
            self._drv.copy_dtoh(dst.ctypes.data, src, dst.nbytes)
        except _DriverCallFailed as failed:
            raise self._error(failed, f"copying {dst.nbytes} bytes from {src:#x}") from None

    def memory_info(self) -> tuple[int, int]:
        """``(free, total)`` device memory in bytes."""
        self._activate()
        try:
            return self._drv.mem_info()
        except _DriverCallFailed as failed:
            raise self._error(failed, "querying free device memory") from None

    # -- synchronisation and lifetime -----------------------------------------------------

    def synchronize(self) -> None:
        """Wait for all launched work; a fault of an asynchronous launch is reported
        here as CUDA-005 naming the last kernel launched."""
        self._activate()
        try:
            self._drv.synchronize()
        except _DriverCallFailed as failed:
            if self._last_launch is not None:
                raise CudaError(
                    "CUDA-005",
                    f"{self._last_launch} (the last launched) failed while running: "
                    f"cuCtxSynchronize {failed.detail}",
                ) from None
            raise self._error(failed, "synchronizing the device") from None
        self._last_launch = None

    def close(self) -> None:
        """Unload this device's modules, free its allocations and release the primary
        context. Idempotent."""
        if self._closed:
            return
        self._closed = True
        # Best effort: after a sticky kernel fault these fail too, and releasing the
        # last reference to the context frees everything anyway.
        for module in self._modules:
            try:
                self._drv.set_current(self._ctx)
                self._drv.unload_module(module._handle)
            except _DriverCallFailed:
                pass
        for ptr in list(self._allocations):
            try:
                self._drv.mem_free(ptr)
            except _DriverCallFailed:
                pass
        self._modules.clear()
        self._allocations.clear()
        try:
            self._drv.release_primary_context(self._dev)
        except _DriverCallFailed as failed:
            raise self._error(failed, f"releasing CUDA device {self.ordinal}") from None

    def __enter__(self) -> CudaDevice:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
            return
        try:  # do not let a cleanup failure replace the error already on its way out
            self.close()
        except CudaError:
            pass

    # -- helpers ---------------------------------------------------------------------------

    def _activate(self) -> None:
        """Make this device's context current on the calling thread (another device or
        library may have switched it since)."""
        if self._closed:
            raise CudaError(
                "CUDA-007", f"expected an open CUDA device, found device {self.ordinal} closed"
            )
        try:
            self._drv.set_current(self._ctx)
        except _DriverCallFailed as failed:
            raise self._error(failed, f"making device {self.ordinal}'s context current") from None

    def _error(
        self, failed: _DriverCallFailed, doing: str, *, requested: int | None = None
    ) -> CudaError:
        """The CudaError for a failed driver call made while `doing` something."""
        if failed.result_name == _OUT_OF_MEMORY:
            found = "the request failed" if requested is None else f"requested {requested} bytes"
            free = self._free_memory_text() if not self._closed else ""
            return CudaError(
                "CUDA-004",
                f"out of device memory on device {self.ordinal} "
                f"({getattr(self, 'name', '?')}) while {doing}: "
                f"{found}{free}; {failed.call} {failed.detail}",
            )
        if failed.result_name in _KERNEL_FAULTS and self._last_launch is not None:
            return CudaError(
                "CUDA-005",
                f"{self._last_launch} (the last launched) failed; reported by "
                f"{failed.call} while {doing}: {failed.detail}",
            )
        return CudaError("CUDA-007", f"{doing}: {failed.call} {failed.detail}")

    def _free_memory_text(self) -> str:
        try:
            free, total = self._drv.mem_info()
        except _DriverCallFailed:
            return ""  # unknown: say nothing rather than guess
        return f", {free} bytes free of {total}"

    @staticmethod
    def _check_host(array: Any, what: str, *, writable: bool) -> None:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{what}: expected a numpy array, found {type(array).__name__}")
        if not array.flags.c_contiguous:
            raise ValueError(
                f"{what}: expected a C-contiguous array, found strides {array.strides}"
            )
        if writable and not array.flags.writeable:
            raise ValueError(f"{what}: expected a writable array, found a read-only one")

    def _check_fits(self, ptr: int, nbytes: int, what: str) -> None:
        """Catch a copy past the end of an allocation of ours before the driver does
        (it would only say CUDA_ERROR_INVALID_VALUE)."""
        size = self._allocations.get(ptr)
        if size is not None and nbytes > size:
            raise ValueError(
                f"{what}: expected at most {size} bytes (the allocation at {ptr:#x}), "
                f"found {nbytes}"
            )



def _load_hint(result_name: str) -> str:
    hints = {
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the PTX .version is newer than this driver "
        "supports (update the NVIDIA driver or emit an older .version)",
        "CUDA_ERROR_NO_BINARY_FOR_GPU": "the PTX .target is newer than the device",
        "CUDA_ERROR_JIT_COMPILER_NOT_FOUND": "the driver's PTX JIT compiler is missing",
    }
    return f" -- {hints[result_name]}" if result_name in hints else ""


class CudaModule:
    """A loaded PTX module of a :class:`CudaDevice` (unloaded when the device closes).

    Attributes:
        name: the name given to :meth:`CudaDevice.load_ptx`, for messages.
        kernel_names: the ``.entry`` names the PTX declares.
    """

    def __init__(self, device: CudaDevice, handle: Any, name: str, kernels: tuple[str, ...]):
        self._device = device
        self._handle = handle
        self.name = name
        self.kernel_names = kernels
        self._functions: dict[str, CudaKernel] = {}

    def function(self, name: str) -> CudaKernel:
        """The kernel `name` of this module; CUDA-007 listing the module's kernels when
        there is none of that name."""
        if name in self._functions:
            return self._functions[name]
        dev = self._device
        dev._activate()
        try:
            handle = dev._drv.get_function(self._handle, name)
        except _DriverCallFailed as failed:
            if failed.result_name == "CUDA_ERROR_NOT_FOUND":
                known = ", ".join(self.kernel_names) or "none"
                raise CudaError(
                    "CUDA-007",
                    f"no kernel named '{name}' in PTX module '{self.name}': expected one of "
                    f"{known}; cuModuleGetFunction {failed.detail}",
                ) from None
            doing = f"looking up kernel '{name}' in module '{self.name}'"
            raise dev._error(failed, doing) from None
        kernel = CudaKernel(dev, handle, name)
        self._functions[name] = kernel
        return kernel


class CudaKernel:
    """A kernel of a :class:`CudaModule`; every parameter is a 64-bit device pointer."""

    def __init__(self, device: CudaDevice, handle: Any, name: str) -> None:
        self._device = device
        self._handle = handle
        self.name = name

    def launch(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: Sequence[int],
        shared_bytes: int = 0,
    ) -> None:
        """Launch on the device's default stream (asynchronous: a fault while running
        surfaces at :meth:`CudaDevice.synchronize` or the next copy, as CUDA-005).

        Args:
            grid: blocks in x, y, z (each >= 1).
            block: threads per block in x, y, z (each >= 1).
            args: the kernel's parameters, in order: device addresses.
            shared_bytes: dynamic shared memory per block.
        """
        what = _launch_text(self.name, grid, block, shared_bytes)
        dims: dict[str, tuple[int, int, int]] = {}
        for label, given in (("grid", grid), ("block", block)):
            ints = tuple(_as_int(d) for d in given)
            if len(ints) != 3 or any(d is None or d < 1 for d in ints):
                raise CudaError(
                    "CUDA-005",
                    f"cannot launch {what}: expected {label} as 3 ints >= 1, found {tuple(given)}",
                )
            dims[label] = ints  # type: ignore[assignment]
        # Plain Python ints: the bindings' c_void_p packing rejects numpy integers.
        pointers: list[int] = []
        for i, p in enumerate(args):
            address = _as_int(p)
            if address is None or not 0 <= address < 1 << 64:
                raise TypeError(
                    f"{self.name}: expected argument {i} to be a 64-bit device address (int), "
                    f"found {p!r}"
                )
            pointers.append(address)
        dev = self._device
        dev._activate()
        try:
            dev._drv.launch(self._handle, dims["grid"], dims["block"], shared_bytes, pointers)
        except _DriverCallFailed as failed:
            if failed.result_name in _KERNEL_FAULTS and dev._last_launch is not None:
                raise dev._error(failed, f"launching {what}") from None  # an earlier launch's fault
            threads = int(np.prod(dims["block"]))
            raise CudaError(
                "CUDA-005",
                f"launch of {what} failed: cuLaunchKernel {failed.detail} "
                f"({threads} threads per block, {len(pointers)} pointer arguments)",
            ) from None
        dev._last_launch = what


def _as_int(value: object) -> int | None:
    """`value` as a plain int when it is an integer (numpy ones included; not bool)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def device_available() -> str | None:
    """None when CUDA device 0 can be opened, else the reason (the CudaError message) --
    for tests to skip with."""
    try:
        with CudaDevice(0):
            pass
    except CudaError as err:
        return str(err)
    return None

