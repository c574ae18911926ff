"""The CMakeLists.txt of an emitted C++ training program.

The flags are part of the numerical contract, not tuning: `-ffp-contract=off` because
GCC contracts `a * b + c` into an FMA by default and the JIT never does (its only fused
operation is the explicit `math.fma`, emitted as `std::fma`); `-march=native` where the
compiler has it, so that `std::fma` is an instruction rather than a libm call. The build
type defaults to Release (`-O3`). `Threads::Threads` is linked for the thread pool of
kernels split over threads (`thread_pool.py`). `-fschedule-insns -fsched-pressure` (GCC)
only affects speed.

`-mprefer-vector-width=N` (GCC and Clang on x86) is part of the speed contract: N is the
width of the vectors the code generator chose (`frame_f32x16`, 512 bits, with AVX-512;
`pipeline.vector_lanes`). A compiler's tuning for the host otherwise decides the width
of every vector operation it builds itself: GCC's tunings for Intel's AVX-512 cores
(rocketlake, sapphirerapids, ...) prefer 256 bits, so the lane loops of `frame_vfma` and
`frame_splat` became pairs of ymm halves glued back together with shuffles and masked
moves, and the emitted program ran 4-47x slower than the JIT on such hosts (issue 26)
while the same source ran at the JIT's speed on AMD Zen. The flag is added only where
the compiler accepts it (`check_cxx_compiler_flag`), so any C++17 compiler still builds
the program.
"""

from __future__ import annotations

import functools
import subprocess

__all__ = [
    "cmake_lists",
    "compiler_accepts",
    "native_tuning",
    "prefer_vector_width_flags",
    "target_name",
    "vector_width_flag",
]

# Target names CMake or its generators reserve (`add_executable(test ...)` fails).
_RESERVED_TARGETS = frozenset({
    "all", "clean", "help", "install", "test", "package", "package_source", "edit_cache",
    "rebuild_cache", "list_install_components", "all_build", "zero_check", "run_tests",
    "experimental", "nightly", "continuous", "nightlymemorycheck",
})


def target_name(model: str) -> str:
    """The executable's name: the model's name, unless CMake reserves it."""
    return f"{model}_train" if model.lower() in _RESERVED_TARGETS else model


# The widths `-mprefer-vector-width=` takes (GCC: none, 128, 256, 512).
_PREFERRED_WIDTHS = (512, 256, 128)


def _preferred_width(vector_bits: int | None) -> int | None:
    """The widest width `-mprefer-vector-width=` takes that `vector_bits` fills."""
    return next((w for w in _PREFERRED_WIDTHS if (vector_bits or 0) >= w), None)


def vector_width_flag(vector_bits: int | None) -> str | None:
    """The compiler flag asking for vectors of `vector_bits` (the generated kernels'
    widest): `-mprefer-vector-width=512` for 16-lane f32 code, 256 for 8 lanes, 128 for
    4; None for scalar code (no vectors to keep whole). The flag is GCC's and Clang's on
    x86; callers add it only where the compiler accepts it."""
    width = _preferred_width(vector_bits)
    return None if width is None else f"-mprefer-vector-width={width}"


@functools.cache
def compiler_accepts(cxx: str, *flags: str) -> bool:
    """Whether the compiler `cxx` accepts `flags` (what CMake's check_cxx_compiler_flag
    asks: compile an empty translation unit with them, warnings as errors)."""
    try:
        proc = subprocess.run([cxx, "-Werror", *flags, "-x", "c++", "-fsyntax-only", "-"],
                              input="", capture_output=True, text=True, timeout=60,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def prefer_vector_width_flags(cxx: str, vector_bits: int | None) -> list[str]:
    """`[vector_width_flag(vector_bits)]` if the compiler `cxx` accepts it, else `[]`:
    the flags a direct compiler call (tests, benchmarks) adds to build emitted code as
    its CMakeLists.txt does."""
    flag = vector_width_flag(vector_bits)
    return [flag] if flag is not None and compiler_accepts(cxx, flag) else []


@functools.cache
def native_tuning(cxx: str) -> dict[str, str]:
    """What `-march=native` means to the compiler `cxx` on this host, as GCC's
    `-Q --help=target` reports it: `{"march": "sapphirerapids", "mtune": ...,
    "mprefer-vector-width": "256"}` (`none`: the tuning does not cap the width). Empty
    for a compiler without that report (Clang). For benchmarks and failure messages: the
    same source builds to different code under different tunings."""
    try:
        proc = subprocess.run([cxx, "-march=native", "-Q", "--help=target"],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("-march=", "-mtune=", "-mprefer-vector-width="):
            found[parts[0][1:-1]] = parts[1]
    return found if proc.returncode == 0 else {}


def _vector_width_block(target: str, vector_bits: int | None) -> str:
    width = _preferred_width(vector_bits)
    if width is None:
        return ""
    flag = f"-mprefer-vector-width={width}"
    # A cache variable per width: one CMake tree may hold programs emitted for different
    # widths (check_cxx_compiler_flag caches its answer under the variable's name).
    var = f"FRAME_HAS_PREFER_VECTOR_WIDTH_{width}"
    return f"""\
# Speed: the kernels' vectors are {width} bits wide (the width the code generator chose
# for the emitting host); keep them whole whatever the compiler's tuning prefers (GCC's
# tunings for Intel AVX-512 cores prefer 256 bits and split every 512-bit operation).
check_cxx_compiler_flag({flag} {var})
if({var})
  target_compile_options({target} PRIVATE {flag})
endif()
"""


def cmake_lists(model: str, sources: tuple[str, ...] = ("main.cpp",), *,
                vector_bits: int | None = None) -> str:
    """CMakeLists.txt building `sources` into the executable `target_name(model)`;
    `vector_bits` is the width of the vectors the code generator chose (see the module
    docstring; None: no vector-width preference)."""
    target = target_name(model)
    return f"""\
# Generated by frame-dslc --emit: a standalone C++17 program that trains `{model}`.
#   cmake -S . -B build && cmake --build build && ./build/{target}
cmake_minimum_required(VERSION 3.25)
project({target} LANGUAGES CXX)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

add_executable({target} {' '.join(sources)})
target_compile_features({target} PRIVATE cxx_std_17)
# Kernels split over threads run on a std::thread pool.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
target_link_libraries({target} PRIVATE Threads::Threads)
set_target_properties({target} PROPERTIES CXX_EXTENSIONS OFF)

# Bit-for-bit agreement with frame-run needs IEEE float arithmetic exactly as written:
# no contraction of a * b + c into an FMA (GCC's default), no fast-math.
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-ffp-contract=off FRAME_HAS_FP_CONTRACT_OFF)
if(FRAME_HAS_FP_CONTRACT_OFF)
  target_compile_options({target} PRIVATE -ffp-contract=off)
endif()
# std::fma as one instruction (and the vector units the JIT uses), where available.
check_cxx_compiler_flag(-march=native FRAME_HAS_MARCH_NATIVE)
if(FRAME_HAS_MARCH_NATIVE)
  target_compile_options({target} PRIVATE -march=native)
endif()
# Speed only: GCC's pressure-aware pre-RA scheduler keeps each row of B in registers
# across the rows of a matmul register tile (instead of reloading it for every FMA).
check_cxx_compiler_flag("-fschedule-insns -fsched-pressure" FRAME_HAS_SCHED_PRESSURE)
if(FRAME_HAS_SCHED_PRESSURE)
  target_compile_options({target} PRIVATE -fschedule-insns -fsched-pressure)
endif()
""" + _vector_width_block(target, vector_bits)
