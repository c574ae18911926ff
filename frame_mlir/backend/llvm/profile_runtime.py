"""The kernel profiler's counters: hand-written LLVM IR over libc's clock_gettime.

Code compiled with `CompileOptions(profile=True)` (frame-profile-kernels) brackets every
kernel call of a model function with

    void frame_rt_prof_begin(int64_t id);   // before the call
    void frame_rt_prof_end(int64_t id);     // after it

`id` is a kernel's 63-bit identity (a digest of its module and its name, never 0), the
same for every call of that kernel. The counters are one process-wide table of `SLOTS`
entries of four int64 -- id, calls, total nanoseconds, start of the current call --
found by open addressing on the id, so any number of compiled modules share it without
agreeing on numbers. `frame_mlir.runtime.profile` reads it (`frame_rt_prof_table()`)
and names the ids. A full table drops further kernels' counts (one warning slot at
index 0 counts them); 4096 kernels is far above any model seen (MobileNet-v2: 1080).

Like the thread pool (`parallel_runtime.py`) this needs nothing installed: it is compiled
by the same MCJIT once per process and registered with `llvm.add_symbol`. The counters
are not atomic: profiled code runs its kernel calls on one thread (the kernels' own
parallel tasks are inside the calls), and two Python threads running profiled code at
once would only blur the counts, never crash.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

SLOTS = 4096
"""Entries in the counter table (a power of two)."""

FIELDS = 4
"""int64 per entry: id, calls, total ns, start ns."""

EXPORTS = ("frame_rt_prof_begin", "frame_rt_prof_end", "frame_rt_prof_table",
           "frame_rt_prof_dropped")
"""The runtime's external functions (generated code calls the first two)."""

#: The clocks `FRAME_PROFILE_CLOCK` selects (Linux clock ids; the profiler is for the
#: JIT on Linux hosts): wall time (the default), or the CPU time of the calling thread,
#: which a busy machine's other processes do not inflate (time-slicing a core away
#: stops that clock) but which misses the work of the kernels' parallel tasks on other
#: threads -- for 1-thread runs on a shared machine.
CLOCKS = {"wall": 1, "thread": 3}  # CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID
ENV_CLOCK = "FRAME_PROFILE_CLOCK"

_PROFILE_IR = r"""
; frame runtime: kernel profiler counters (see profile_runtime.py)

%timespec = type {{ i64, i64 }}

@table = internal global [{slots} x [{fields} x i64]] zeroinitializer, align 64
@dropped = internal global i64 0, align 8

declare i32 @clock_gettime(i32, ptr)

define internal i64 @now() {{
  %ts = alloca %timespec, align 8
  %r = call i32 @clock_gettime(i32 {clock}, ptr %ts)
  %sp = getelementptr %timespec, ptr %ts, i32 0, i32 0
  %np = getelementptr %timespec, ptr %ts, i32 0, i32 1
  %s = load i64, ptr %sp, align 8
  %n = load i64, ptr %np, align 8
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}}

; The entry of `id` (claimed if new), or null when the table is full.
define internal ptr @slot(i64 %id) {{
entry:
  %h0 = and i64 %id, {mask}
  br label %probe
probe:
  %h = phi i64 [ %h0, %entry ], [ %hn, %next ]
  %tries = phi i64 [ 0, %entry ], [ %tn, %next ]
  %e = getelementptr [{slots} x [{fields} x i64]], ptr @table, i64 0, i64 %h, i64 0
  %key = load i64, ptr %e, align 8
  %mine = icmp eq i64 %key, %id
  br i1 %mine, label %found, label %empty_q
empty_q:
  %empty = icmp eq i64 %key, 0
  br i1 %empty, label %claim, label %next
claim:
  store i64 %id, ptr %e, align 8
  br label %found
next:
  %hn1 = add i64 %h, 1
  %hn = and i64 %hn1, {mask}
  %tn = add i64 %tries, 1
  %full = icmp eq i64 %tn, {slots}
  br i1 %full, label %none, label %probe
found:
  ret ptr %e
none:
  ret ptr null
}}

define void @frame_rt_prof_begin(i64 %id) {{
entry:
  %e = call ptr @slot(i64 %id)
  %ok = icmp ne ptr %e, null
  br i1 %ok, label %set, label %drop
set:
  %t = call i64 @now()
  %sp = getelementptr i64, ptr %e, i64 3
  store i64 %t, ptr %sp, align 8
  ret void
drop:
  %d = load i64, ptr @dropped, align 8
  %d1 = add i64 %d, 1
  store i64 %d1, ptr @dropped, align 8
  ret void
}}

define void @frame_rt_prof_end(i64 %id) {{
entry:
  %t = call i64 @now()
  %e = call ptr @slot(i64 %id)
  %ok = icmp ne ptr %e, null
  br i1 %ok, label %add, label %done
add:
  %cp = getelementptr i64, ptr %e, i64 1
  %tp = getelementptr i64, ptr %e, i64 2
  %sp = getelementptr i64, ptr %e, i64 3
  %c = load i64, ptr %cp, align 8
  %c1 = add i64 %c, 1
  store i64 %c1, ptr %cp, align 8
  %s = load i64, ptr %sp, align 8
  %dt = sub i64 %t, %s
  %tot = load i64, ptr %tp, align 8
  %tot1 = add i64 %tot, %dt
  store i64 %tot1, ptr %tp, align 8
  ret void
done:
  ret void
}}

define ptr @frame_rt_prof_table() {{
  ret ptr @table
}}

define ptr @frame_rt_prof_dropped() {{
  ret ptr @dropped
}}
"""


def profile_clock() -> str:
    """The clock `$FRAME_PROFILE_CLOCK` names (`wall` when unset); ValueError for
    another name."""
    import os

    name = os.environ.get(ENV_CLOCK, "").strip().lower() or "wall"
    if name not in CLOCKS:
        raise ValueError(f"{ENV_CLOCK}: expected one of {', '.join(CLOCKS)}, found "
                         f"{name!r}")
    return name


def profile_ir(clock: str = "wall") -> str:
    """The profiler runtime's LLVM IR text, timing with `clock` (a key of CLOCKS)."""
    return _PROFILE_IR.format(slots=SLOTS, fields=FIELDS, mask=SLOTS - 1,
                              clock=CLOCKS[clock])


@dataclass(frozen=True)
class ProfileRuntime:
    """The compiled profiler runtime of this process (see `ensure_profile_runtime`)."""

    table_address: int  # SLOTS x FIELDS int64
    dropped_address: int  # int64: begin calls that found the table full
    clock: str  # a key of CLOCKS


_lock = threading.Lock()
_runtime: ProfileRuntime | None = None


def ensure_profile_runtime() -> ProfileRuntime:
    """Compile the profiler runtime once per process and make its functions resolvable
    by every later JIT module. Thread-safe."""
    global _runtime
    with _lock:
        if _runtime is not None:
            return _runtime
        from frame_mlir.backend.llvm.machine import load_runtime

        clock = profile_clock()
        addresses = load_runtime(profile_ir(clock), EXPORTS)
        table = ctypes.CFUNCTYPE(ctypes.c_void_p)(addresses["frame_rt_prof_table"])()
        dropped = ctypes.CFUNCTYPE(ctypes.c_void_p)(addresses["frame_rt_prof_dropped"])()
        assert table and dropped
        _runtime = ProfileRuntime(table, dropped, clock)
        return _runtime
