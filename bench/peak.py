"""One core's peak f32 FMA throughput, measured with our own toolchain (llvmlite).

Run:  python bench/peak.py [--seconds 0.005] [--repeats 40]

The kernel is LLVM IR written here and JIT-compiled by `frame_mlir.backend.llvm.jit`
(O3 for the host CPU, as every generated step is): a counted loop whose body updates
`ACCUMULATORS` independent vector accumulators with `llvm.fma` on the host's widest
f32 vector (`host_info().f32_lanes`: 16 lanes with AVX-512, 8 with AVX2, 4 with
SSE/NEON). Independent chains hide the FMA latency: a core with two FMA pipes of
latency 4-5 needs 8-10 in flight. How many fit depends on the register file: AVX-512
and NEON have 32 vector registers, AVX2 and SSE 16, and 16 chains plus the multiplier
and addend spill on AVX2 (measured on Zen 2: 16 chains 61.5 GFLOP/s, 8 chains 86,
10-14 chains 107.5). So the peak is the best over `CHAIN_COUNTS`, measured, rather
than a chain count guessed from the ISA.

Each iteration does ACCUMULATORS * lanes FMAs = 2 * ACCUMULATORS * lanes FLOPs. The
values converge to a fixed point (a * acc + b with 0 < a < 1), so no denormals or
infinities slow the loop down; the sums are stored at the end so nothing is dead.
The figure is the best of `repeats` runs of about `seconds` each, on the calling
thread (one core): the denominator of every "% of peak" in `bench_workloads.py`. The
default is many short runs, 40 x 5 ms (0.2 s in all): on a machine whose cores are
shared with other work, a 0.2 s run reads half the peak or less, while some 5 ms run
still gets the core to itself (measured on the 2-core dev VM at load 4: 0.2 s runs
140 GFLOP/s, 5 ms runs 286, the same as 0.2 s runs on the idle machine).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from frame_mlir.backend.llvm.jit import JitModule, jit_compile  # noqa: E402
from frame_mlir.target.host import host_info  # noqa: E402

#: Independent accumulator chains of the IR's default (see the module docstring).
ACCUMULATORS = 16
#: Chain counts `measure_peak` tries by default; the best one is the peak.
CHAIN_COUNTS = (10, 12, 16)


@dataclass(frozen=True)
class Peak:
    """A measured single-core FMA peak."""

    gflops: float  # best GFLOP/s (1 FMA = 2 FLOPs)
    lanes: int  # f32 lanes per vector
    accumulators: int
    cpu: str  # LLVM's host CPU name

    def describe(self) -> str:
        return (f"{self.gflops:.1f} GFLOP/s (1 core, f32 FMA, <{self.lanes} x float> x "
                f"{self.accumulators} independent chains, llvmlite JIT, cpu {self.cpu})")


def peak_ir(lanes: int, accumulators: int = ACCUMULATORS) -> str:
    """LLVM IR of `void fma_peak(i64 iters, float *ab, float *out)`.

    `ab` holds the multiplier and the addend (read once, so LLVM cannot fold them);
    `out` receives the lane-sum of the accumulators' first lanes.
    """
    vec = f"<{lanes} x float>"
    lines = [
        f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})",
        "",
        "define void @fma_peak(i64 %iters, ptr noalias %ab, ptr noalias %out) {",
        "entry:",
        "  %a.s = load float, ptr %ab, align 4",
        "  %b.p = getelementptr inbounds float, ptr %ab, i64 1",
        "  %b.s = load float, ptr %b.p, align 4",
        f"  %a.0 = insertelement {vec} poison, float %a.s, i64 0",
        f"  %a = shufflevector {vec} %a.0, {vec} poison, <{lanes} x i32> zeroinitializer",
        f"  %b.0 = insertelement {vec} poison, float %b.s, i64 0",
        f"  %b = shufflevector {vec} %b.0, {vec} poison, <{lanes} x i32> zeroinitializer",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]",
    ]
    # Distinct start values so no two chains are the same computation (CSE).
    for k in range(accumulators):
        start = ", ".join(f"float {float(k + 1 + 0.5 * j / lanes):e}" for j in range(lanes))
        lines.append(f"  %acc{k} = phi {vec} [ <{start}>, %entry ], [ %n{k}, %loop ]")
    for k in range(accumulators):
        lines.append(f"  %n{k} = call {vec} @llvm.fma.v{lanes}f32({vec} %acc{k}, "
                     f"{vec} %a, {vec} %b)")
    lines += [
        "  %i.next = add nuw nsw i64 %i, 1",
        "  %done = icmp uge i64 %i.next, %iters",
        "  br i1 %done, label %exit, label %loop",
        "exit:",
    ]
    prev = "%n0"
    for k in range(1, accumulators):
        lines.append(f"  %s{k} = fadd {vec} {prev}, %n{k}")
        prev = f"%s{k}"
    lines += [
        f"  %first = extractelement {vec} {prev}, i64 0",
        "  store float %first, ptr %out, align 4",
        "  ret void",
        "}",
    ]
    return "\n".join(lines) + "\n"


def measure_peak(seconds: float = 0.005, repeats: int = 40, lanes: int | None = None,
                 accumulators: int | None = None) -> Peak:
    """Best GFLOP/s of the FMA loop over `repeats` runs of about `seconds` each.

    Without `accumulators`, the best over every count in `CHAIN_COUNTS`.
    """
    if accumulators is None:
        return max((measure_peak(seconds, repeats, lanes, n) for n in CHAIN_COUNTS),
                   key=lambda p: p.gflops)
    info = host_info()
    lanes = lanes or info.f32_lanes
    jit: JitModule = jit_compile(peak_ir(lanes, accumulators))
    fn = jit.get_function("fma_peak", [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p])
    ab = (ctypes.c_float * 2)(0.999, 0.001)  # fixed point 1.0: no denormals, no inf
    out = ctypes.c_float(0.0)
    flops_per_iter = 2 * lanes * accumulators

    def run(iters: int) -> float:
        t0 = time.perf_counter()
        fn(iters, ctypes.addressof(ab), ctypes.addressof(out))
        return time.perf_counter() - t0

    # Calibrate the trip count to about `seconds` (first a short warm-up run).
    iters = 100_000
    elapsed = run(iters)
    while elapsed < 0.02:
        iters *= 4
        elapsed = run(iters)
    iters = max(1, int(iters * seconds / elapsed))
    best = min(run(iters) for _ in range(repeats))
    return Peak(iters * flops_per_iter / best / 1e9, lanes, accumulators, info.cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=0.005, help="length of one run")
    ap.add_argument("--repeats", type=int, default=40, help="runs; the best counts")
    ap.add_argument("--print-ir", action="store_true", help="print the kernel's LLVM IR")
    args = ap.parse_args()
    if args.print_ir:
        print(peak_ir(host_info().f32_lanes), end="")
        return 0
    print(measure_peak(args.seconds, args.repeats).describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
