"""The thread pool generated code calls: hand-written LLVM IR over libc's pthreads.

`frame_rt.parallel_for` lowers to a call of

    void frame_rt_parallel_for(void (*task)(void *ctx, int64_t lo, int64_t hi),
                               void *ctx, int64_t lo, int64_t hi, int64_t threads);

which cuts [lo, hi) into `chunks = min(threads, hi - lo, 256)` contiguous pieces,
chunk c = [lo + n*c/chunks, lo + n*(c+1)/chunks), runs every piece once and returns
when all are done. It needs nothing installed: the module below is LLVM IR text,
compiled by the same MCJIT as the kernels, and calls only pthread_* and sched_yield
from the C library the Python process has already loaded.

How it works. One pool per process (`ensure_runtime` compiles the module once and
registers its functions with `llvm.add_symbol`, so every JIT module resolves them to
the same code and the same workers):

* Workers start lazily, on the first dispatch that needs them (threads - 1 of them;
  the calling thread is the other one), and never exit.
* A dispatch holds a mutex for its whole duration (two compiled modules, or two Python
  threads, take turns), publishes the job and wakes the workers; then the caller
  claims chunks like everyone else. A chunk is claimed by a compare-and-swap on one
  64-bit word `chunks << 32 | next`, so each chunk runs exactly once, on whichever
  thread claims it first; the caller alone can finish the job if no worker comes.
  Which thread runs which chunk does not matter: chunks are disjoint and each one
  runs its iterations in order, so results are the same for every thread count.
* A worker that finds no work spins on the job counter for a short while (`SPIN`
  rounds of a pause instruction, ~1 ms: a training step dispatches many kernels in
  a row) and then sleeps on a condition variable: no core is burned between runs.
  The caller likewise spins briefly, then sleeps, until the last chunk is done.
  Nobody takes the lock or signals a condition variable unless someone sleeps on it
  (`@sleepers`, `@caller_asleep`; each side publishes before its last look at the
  other's flag, both sequentially consistent, so no wake-up is lost).

The wake-up, measured (`bench/bench_threads.py --wake`: chunks that record when they
start and wait for each other; quiet 2-core Zen 4 VM, 2026-12-05, medians of 300
dispatches). Workers spinning (the next dispatch within ~0.4 ms): every thread runs
its chunk 0.05-0.11 us after the call (0.08-0.14 us when every dispatch took the lock
and broadcast), a dispatch of chunks that do nothing returns in 0.03-0.1 us. Workers
asleep (3 ms since the last dispatch): the caller's own chunk starts ~8 us after the
call -- the futex wake-up, a system call, is the only thing on its critical path --
and the woken worker's 25-45 us after it. In a training step the kernels come back to
back, so the workers never sleep there; and since the caller claims chunks itself, a
late worker only means the caller runs more of them. The one cost left on the
critical path is the cores' cache-to-cache latency: with the VM's two vCPUs placed
far apart by the host (the spinning wake-up 200-340 ns instead of 50-90), mnist_mlp's
step on 2 threads read 0.61-0.69 ms against 0.555 on one, its kernels waiting on data
the other core wrote.

After a `fork` (through Python: `os.register_at_fork`) the child resets the pool and
starts its own workers on its first dispatch.

For tests: `frame_rt_take_thread_mask()` returns (and clears) a bit mask of the
threads that ran a chunk since the last call (bit 0 the calling thread, bit k worker
k, workers above 63 share bit 63), `frame_rt_worker_count()` the workers started.

A task must not itself call `frame_rt_parallel_for` (the dispatch mutex is not
recursive); frame-parallelize only splits top-level loops of kernels, which do not.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
from collections.abc import Iterable
from dataclasses import dataclass

MAX_CHUNKS = 256
"""Most chunks (so most threads) one dispatch uses; more threads run with this many."""

SPIN = 65536
"""Pause rounds a worker (or the waiting caller) spins before it sleeps: about 1 ms on
a Zen 5 core (1.7 ms of CPU time measured for one dispatch then idle). Why that long:
a training step runs sequential kernels between its parallel ones; with a ~0.1 ms spin
the workers fell asleep in those gaps, every dispatch paid a wake-up, and mnist_mlp's
step on 2 threads took 0.37 ms against 0.26 ms on one (0.19 ms with this spin)."""

EXPORTS = ("frame_rt_parallel_for", "frame_rt_take_thread_mask", "frame_rt_worker_count",
           "frame_rt_after_fork")
"""The runtime's external functions (what generated code and tests may call)."""

_RUNTIME_IR = r"""
; frame runtime: the thread pool of frame_rt.parallel_for (see parallel_runtime.py)

@state = internal global i32 0, align 4            ; 0 none, 1 initialising, 2 ready
@dispatch_lock = internal global [128 x i8] zeroinitializer, align 64
@lock = internal global [128 x i8] zeroinitializer, align 64
@work_cv = internal global [128 x i8] zeroinitializer, align 64
@done_cv = internal global [128 x i8] zeroinitializer, align 64
@workers = internal global i64 0, align 8          ; started (written under dispatch_lock)
@generation = internal global i64 0, align 64      ; bumped by every dispatch
@ticket = internal global i64 0, align 64          ; chunks << 32 | next chunk to claim
@pending = internal global i64 0, align 64         ; chunks of the job not finished yet
@job_fn = internal global ptr null, align 8
@job_ctx = internal global ptr null, align 8
@job_lo = internal global i64 0, align 8
@job_n = internal global i64 0, align 8
@thread_mask = internal global i64 0, align 64
@sleepers = internal global i64 0, align 64        ; workers asleep on work_cv (or going to)
@caller_asleep = internal global i64 0, align 64   ; the dispatcher asleep on done_cv

declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @sched_yield()
{relax_decl}

define internal void @relax() {{
  {relax_body}
  ret void
}}

; Initialise the locks and condition variables once (pthread's static initialisers
; are not portable across C libraries; pthread_*_init is).
define internal void @init_once() {{
entry:
  %s = load atomic i32, ptr @state acquire, align 4
  %ready = icmp eq i32 %s, 2
  br i1 %ready, label %done, label %try
try:
  %r = cmpxchg ptr @state, i32 0, i32 1 acq_rel acquire
  %won = extractvalue {{ i32, i1 }} %r, 1
  br i1 %won, label %init, label %wait
init:
  %a = call i32 @pthread_mutex_init(ptr @dispatch_lock, ptr null)
  %b = call i32 @pthread_mutex_init(ptr @lock, ptr null)
  %c = call i32 @pthread_cond_init(ptr @work_cv, ptr null)
  %d = call i32 @pthread_cond_init(ptr @done_cv, ptr null)
  store atomic i32 2, ptr @state release, align 4
  br label %done
wait:
  %y = call i32 @sched_yield()
  %s2 = load atomic i32, ptr @state acquire, align 4
  %r2 = icmp eq i32 %s2, 2
  br i1 %r2, label %done, label %wait
done:
  ret void
}}

; Claim and run chunks of the current job until none is left. `self` is 0 for the
; dispatching thread, k for worker k.
define internal void @run_chunks(i64 %self) {{
entry:
  %shift = call i64 @llvm.umin.i64(i64 %self, i64 63)
  %bit = shl i64 1, %shift
  %worker = icmp ne i64 %self, 0
  br label %claim
claim:
  %t = load atomic i64, ptr @ticket acquire, align 8
  %next = and i64 %t, 4294967295
  %chunks = lshr i64 %t, 32
  %have = icmp ult i64 %next, %chunks
  br i1 %have, label %cas, label %out
cas:
  %t1 = add i64 %t, 1
  %r = cmpxchg ptr @ticket, i64 %t, i64 %t1 acq_rel acquire
  %ok = extractvalue {{ i64, i1 }} %r, 1
  br i1 %ok, label %run, label %claim
run:
  ; The job cannot change under us: it ends only once this chunk is done.
  %fn = load ptr, ptr @job_fn, align 8
  %ctx = load ptr, ptr @job_ctx, align 8
  %lo = load i64, ptr @job_lo, align 8
  %n = load i64, ptr @job_n, align 8
  %na = mul i64 %n, %next
  %a0 = udiv i64 %na, %chunks
  %nb = add i64 %na, %n
  %b0 = udiv i64 %nb, %chunks
  %a = add i64 %lo, %a0
  %b = add i64 %lo, %b0
  call void %fn(ptr %ctx, i64 %a, i64 %b)
  %m = atomicrmw or ptr @thread_mask, i64 %bit monotonic, align 8
  %left = atomicrmw sub ptr @pending, i64 1 seq_cst, align 8
  %last = icmp eq i64 %left, 1
  %wake = and i1 %last, %worker
  br i1 %wake, label %maybe_signal, label %claim
maybe_signal:
  ; The dispatcher may be asleep waiting for the last chunk. It says so (under the
  ; lock, before its last look at @pending); this thread's decrement above and that
  ; flag are both sequentially consistent, so either it saw @pending reach 0 or this
  ; load sees the flag. Only then is the lock and the wake-up worth their cost.
  %asleep = load atomic i64, ptr @caller_asleep seq_cst, align 8
  %must = icmp ne i64 %asleep, 0
  br i1 %must, label %signal, label %claim
signal:
  ; Under the lock, so the wake-up cannot fall between its check and its wait.
  %l1 = call i32 @pthread_mutex_lock(ptr @lock)
  %l2 = call i32 @pthread_cond_broadcast(ptr @done_cv)
  %l3 = call i32 @pthread_mutex_unlock(ptr @lock)
  br label %claim
out:
  ret void
}}

define internal ptr @worker_main(ptr %arg) {{
entry:
  %self = ptrtoint ptr %arg to i64
  %g0 = load atomic i64, ptr @generation acquire, align 8
  br label %work
work:
  %seen = phi i64 [ %g0, %entry ], [ %g, %spin ], [ %gs, %awake ]
  call void @run_chunks(i64 %self)
  br label %spin_start
spin_start:
  br label %spin
spin:
  %i = phi i64 [ 0, %spin_start ], [ %i1, %spin_next ]
  %g = load atomic i64, ptr @generation acquire, align 8
  %new = icmp ne i64 %g, %seen
  br i1 %new, label %work, label %spin_next
spin_next:
  call void @relax()
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, {spin}
  br i1 %more, label %spin, label %sleep
sleep:
  ; Count this worker among the sleepers before the last look at @generation: a
  ; dispatcher bumps @generation and then reads @sleepers (both sequentially
  ; consistent), so either this thread sees the new job or the dispatcher sees a
  ; sleeper and wakes it (under the lock, which this thread holds until it waits).
  %l1 = call i32 @pthread_mutex_lock(ptr @lock)
  %z1 = atomicrmw add ptr @sleepers, i64 1 seq_cst, align 8
  br label %check
check:
  %gs = load atomic i64, ptr @generation seq_cst, align 8
  %same = icmp eq i64 %gs, %seen
  br i1 %same, label %wait, label %awake
wait:
  %w = call i32 @pthread_cond_wait(ptr @work_cv, ptr @lock)
  br label %check
awake:
  %z2 = atomicrmw sub ptr @sleepers, i64 1 seq_cst, align 8
  %l2 = call i32 @pthread_mutex_unlock(ptr @lock)
  br label %work
}}

define void @frame_rt_parallel_for(ptr %fn, ptr %ctx, i64 %lo, i64 %hi, i64 %threads) {{
entry:
  %tid = alloca [2 x i64], align 8
  %n = sub i64 %hi, %lo
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %ret, label %size
size:
  %c1 = call i64 @llvm.smin.i64(i64 %threads, i64 %n)
  %chunks = call i64 @llvm.smin.i64(i64 %c1, i64 {max_chunks})
  %single = icmp sle i64 %chunks, 1
  br i1 %single, label %inline, label %pooled
inline:
  call void %fn(ptr %ctx, i64 %lo, i64 %hi)
  br label %ret
pooled:
  call void @init_once()
  %d1 = call i32 @pthread_mutex_lock(ptr @dispatch_lock)
  %have = load i64, ptr @workers, align 8
  %want = sub i64 %chunks, 1
  br label %spawn_check
spawn_check:
  %cur = phi i64 [ %have, %pooled ], [ %cur1, %spawned ]
  %need = icmp slt i64 %cur, %want
  br i1 %need, label %spawn, label %publish
spawn:
  %cur1 = add i64 %cur, 1
  %arg = inttoptr i64 %cur1 to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker_main, ptr %arg)
  %started = icmp eq i32 %rc, 0
  br i1 %started, label %spawned, label %publish
spawned:
  store i64 %cur1, ptr @workers, align 8
  br label %spawn_check
publish:
  store ptr %fn, ptr @job_fn, align 8
  store ptr %ctx, ptr @job_ctx, align 8
  store i64 %lo, ptr @job_lo, align 8
  store i64 %n, ptr @job_n, align 8
  store atomic i64 %chunks, ptr @pending monotonic, align 8
  %tk = shl i64 %chunks, 32
  store atomic i64 %tk, ptr @ticket release, align 8
  %gold = atomicrmw add ptr @generation, i64 1 seq_cst, align 8
  ; Spinning workers see the new generation by themselves: the lock and the wake-up
  ; (a futex system call, ~10 us on a VM) only when some worker has gone to sleep.
  %nsleep = load atomic i64, ptr @sleepers seq_cst, align 8
  %anyone = icmp ne i64 %nsleep, 0
  br i1 %anyone, label %wake, label %own
wake:
  %p1 = call i32 @pthread_mutex_lock(ptr @lock)
  %p2 = call i32 @pthread_cond_broadcast(ptr @work_cv)
  %p3 = call i32 @pthread_mutex_unlock(ptr @lock)
  br label %own
own:
  call void @run_chunks(i64 0)
  br label %spin
spin:
  %i = phi i64 [ 0, %own ], [ %i1, %spin_next ]
  %left = load atomic i64, ptr @pending acquire, align 8
  %finished = icmp eq i64 %left, 0
  br i1 %finished, label %end, label %spin_next
spin_next:
  call void @relax()
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, {spin}
  br i1 %more, label %spin, label %sleep
sleep:
  %s1 = call i32 @pthread_mutex_lock(ptr @lock)
  store atomic i64 1, ptr @caller_asleep seq_cst, align 8
  br label %check
check:
  %left2 = load atomic i64, ptr @pending seq_cst, align 8
  %done = icmp eq i64 %left2, 0
  br i1 %done, label %awake, label %wait
wait:
  %w = call i32 @pthread_cond_wait(ptr @done_cv, ptr @lock)
  br label %check
awake:
  store atomic i64 0, ptr @caller_asleep seq_cst, align 8
  %s2 = call i32 @pthread_mutex_unlock(ptr @lock)
  br label %end
end:
  %d2 = call i32 @pthread_mutex_unlock(ptr @dispatch_lock)
  br label %ret
ret:
  ret void
}}

; In the child of a fork: no worker exists there, and a lock may have been held by a
; thread that does not either. Start afresh (the next dispatch starts workers again).
define void @frame_rt_after_fork() {{
  %a = call i32 @pthread_mutex_init(ptr @dispatch_lock, ptr null)
  %b = call i32 @pthread_mutex_init(ptr @lock, ptr null)
  %c = call i32 @pthread_cond_init(ptr @work_cv, ptr null)
  %d = call i32 @pthread_cond_init(ptr @done_cv, ptr null)
  store i64 0, ptr @workers, align 8
  store i64 0, ptr @ticket, align 8
  store i64 0, ptr @pending, align 8
  store i64 0, ptr @sleepers, align 8
  store i64 0, ptr @caller_asleep, align 8
  store i32 2, ptr @state, align 4
  ret void
}}

define i64 @frame_rt_take_thread_mask() {{
  %m = atomicrmw xchg ptr @thread_mask, i64 0 acq_rel, align 8
  ret i64 %m
}}

define i64 @frame_rt_worker_count() {{
  %w = load atomic i64, ptr @workers monotonic, align 8
  ret i64 %w
}}

declare i64 @llvm.umin.i64(i64, i64)
declare i64 @llvm.smin.i64(i64, i64)
"""


def _relax() -> tuple[str, str]:
    """The spin-wait hint of the host: (declaration, body of @relax)."""
    arch = platform.machine().lower()
    if arch in ("x86_64", "amd64", "i686", "x86"):
        return ("declare void @llvm.x86.sse2.pause()",
                "call void @llvm.x86.sse2.pause()")
    if arch in ("aarch64", "arm64"):
        return ("declare void @llvm.aarch64.hint(i32)",
                "call void @llvm.aarch64.hint(i32 1)  ; yield")
    return "", ""  # a plain reload loop elsewhere


def runtime_ir() -> str:
    """The runtime module's LLVM IR text for the host."""
    decl, body = _relax()
    return _RUNTIME_IR.format(relax_decl=decl, relax_body=body, spin=SPIN,
                              max_chunks=MAX_CHUNKS)


@dataclass(frozen=True)
class Runtime:
    """The compiled runtime of this process (see `ensure_runtime`)."""

    parallel_for: ctypes._CFuncPtr
    take_thread_mask: ctypes._CFuncPtr
    worker_count: ctypes._CFuncPtr
    after_fork: ctypes._CFuncPtr


TaskFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
"""The C type of a task, for tests that dispatch Python callbacks."""

_lock = threading.Lock()
_runtime: Runtime | None = None


def ensure_runtime() -> Runtime:
    """Compile the runtime once per process and make its functions resolvable by every
    later JIT module (`llvm.add_symbol`). Thread-safe."""
    global _runtime
    with _lock:
        if _runtime is not None:
            return _runtime
        from frame_mlir.backend.llvm.machine import load_runtime

        # Workers run this code until the process ends: load_runtime never frees it.
        addresses = load_runtime(runtime_ir(), EXPORTS)
        _runtime = Runtime(
            parallel_for=ctypes.CFUNCTYPE(None, TaskFn, ctypes.c_void_p, ctypes.c_int64,
                                          ctypes.c_int64, ctypes.c_int64)(
                addresses["frame_rt_parallel_for"]),
            take_thread_mask=ctypes.CFUNCTYPE(ctypes.c_int64)(
                addresses["frame_rt_take_thread_mask"]),
            worker_count=ctypes.CFUNCTYPE(ctypes.c_int64)(addresses["frame_rt_worker_count"]),
            after_fork=ctypes.CFUNCTYPE(None)(addresses["frame_rt_after_fork"]),
        )
        # A forked child (multiprocessing, a DataLoader's workers) has none of the
        # pool's threads: reset it there, so its first dispatch starts new ones.
        os.register_at_fork(after_in_child=_runtime.after_fork)
        return _runtime


def provide_runtime(externals: Iterable[str]) -> None:
    """Make the runtime resolvable if code calling these external functions needs it
    (the JIT calls this before it makes an engine, for compiled and loaded code)."""
    if any(name in EXPORTS for name in externals):
        ensure_runtime()
