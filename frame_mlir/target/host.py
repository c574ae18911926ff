"""What the host CPU offers the code generator: vector width, caches, cores.

Read at compile time, never assumed: the same wheel runs on an AVX-512 Xeon, an AVX2
laptop and an Arm server. `host_info()` is what the pipeline's defaults come from;
passes take the figures as explicit options, so their lit tests do not depend on the
machine that runs them.

    >>> info = host_info()
    >>> info.f32_lanes            # 16 with AVX-512, 8 with AVX/AVX2, 4 with SSE or NEON
"""

from __future__ import annotations

import functools
import os
import platform
import threading
from dataclasses import dataclass
from pathlib import Path

#: Guards LLVM's one-time initialization below (and the JIT's swap of llvmlite's lock).
init_lock = threading.Lock()
_initialized = False


def ensure_initialized() -> None:
    """Initialize LLVM's native target once per process.

    llvmlite >= 0.45 initializes the core itself (`llvm.initialize()` now raises); only
    the native target, asm printer and asm parser still need explicit calls.
    """
    import llvmlite.binding as llvm  # here: `frame-run --help` needs no LLVM

    global _initialized
    with init_lock:
        if _initialized:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _initialized = True


X86_TUNING = "+prefer-no-gather,+prefer-no-scatter"
"""Tuning features added on x86: no vector gathers or scatters where LLVM has a choice.
Our kernels' innermost loops are often short and constant (an image row, a 3 x 3
window): LLVM unrolls them fully, then vectorizes the next loop out with gathers and
scatters at the row stride, where the straight-line copies the unrolling left would
have become contiguous vector moves (SLP). On a Zen 5 core a convolution's im2col
scatter-add (col2im) ran 3x slower that way, and ResNet-18's training step 1.35x."""



@dataclass(frozen=True)
class HostInfo:
    """Facts about the compiling machine that decide block and vector sizes."""

    arch: str  # platform.machine(): x86_64, aarch64, ...
    cpu: str  # LLVM's host CPU name (znver4, sapphirerapids, neoverse-v1, ...)
    features: frozenset[str]  # LLVM feature names that are on (avx512f, fma, neon, ...)
    f32_lanes: int  # f32 lanes of the widest vector register the code may use
    vector_registers: int  # architectural vector registers (32 with AVX-512 or on Arm)
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    cores: int  # cores this process may run on

    @property
    def vector_bits(self) -> int:
        return 32 * self.f32_lanes


def f32_lanes_for(arch: str, features: frozenset[str]) -> int:
    """f32 lanes of the widest usable vector ISA: AVX-512 16, AVX/AVX2 8, SSE/NEON 4,
    else 1 (scalar code)."""
    if "avx512f" in features:
        return 16
    if "avx" in features or "avx2" in features:
        return 8
    if "sse2" in features or "neon" in features or arch in ("aarch64", "arm64"):
        return 4
    return 1


def _cache_sizes() -> tuple[int, int, int]:
    """(L1d, L2, L3) bytes from sysfs, with conservative defaults where it is silent."""
    sizes = {1: 32 << 10, 2: 512 << 10, 3: 8 << 20}
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for index in sorted(root.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            value = int(text.rstrip("KMG")) * scale
            if level in sizes and value > 0:
                sizes[level] = value
    except (OSError, ValueError):
        pass
    return sizes[1], sizes[2], sizes[3]


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@functools.cache
def host_info() -> HostInfo:
    """The host's `HostInfo` (computed once per process)."""
    import llvmlite.binding as llvm

    ensure_initialized()
    features = frozenset(k for k, on in llvm.get_host_cpu_features().items() if on)
    arch = platform.machine().lower()
    l1, l2, l3 = _cache_sizes()
    return HostInfo(arch=arch, cpu=llvm.get_host_cpu_name(), features=features,
                    f32_lanes=f32_lanes_for(arch, features),
                    vector_registers=32 if "avx512f" in features or arch in (
                        "aarch64", "arm64") else 16, l1d_bytes=l1, l2_bytes=l2,
                    l3_bytes=l3, cores=available_cores())


THREADS_ENV = "FRAME_NUM_THREADS"


def default_threads() -> int:
    """Threads a compiled step runs on unless told otherwise: `FRAME_NUM_THREADS` when
    set (a positive integer, else ValueError naming the variable), else the cores
    available to the process."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return available_cores()
    try:
        return thread_count(text)
    except ValueError as err:
        raise ValueError(f"{THREADS_ENV}: {err}") from None


def thread_count(text: str) -> int:
    """A thread count written as text: a positive decimal integer, else ValueError."""
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"expected a positive integer, found {text!r}")
    return value
