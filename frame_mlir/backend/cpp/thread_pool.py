"""The emitted program's thread pool: `frame_rt.parallel_for` on `std::thread`s.

The C++ twin of the JIT's runtime (`frame_mlir/backend/llvm/parallel_runtime.py`), with
the same contract and the same chunks: [begin, end) is cut into
`chunks = min(threads, end - begin, 256)` contiguous pieces, chunk c =
[begin + n*c/chunks, begin + n*(c+1)/chunks), each run exactly once, on whichever thread
claims it first (the calling thread claims chunks too). Chunks are disjoint and run
their iterations in order, so the program prints the same bits for every thread count,
and the same as the JIT. Workers start on first use, spin briefly when idle, then
sleep on a condition variable; the pool joins them at exit.

The emitter writes the class into a program that uses `frame_rt.parallel_for` (one
helper, `frame_parallel_for`); the CMake project links `Threads::Threads`.
"""

from __future__ import annotations

from frame_mlir.backend.llvm.parallel_runtime import SPIN

POOL_INCLUDES = ("algorithm", "atomic", "condition_variable", "cstdint", "mutex", "thread",
                 "vector")
"""The headers the pool needs."""

POOL_HELPER = """\
// frame_rt.parallel_for: frame_parallel_for::run(threads, begin, end, task) calls
// task(lo, hi) on the contiguous chunks of [begin, end) -- at most `threads` of them --
// on a pool of std::threads, the calling thread included, and returns when all are
// done. Chunk c of k is [begin + n*c/k, begin + n*(c+1)/k): each runs once, in order,
// so the result does not depend on the thread count (nor on which thread ran what).
class frame_parallel_for {
 public:
  template <typename Task>
  static void run(std::int64_t threads, std::int64_t begin, std::int64_t end,
                  const Task& task) {
    const std::int64_t n = end - begin;
    if (n <= 0) return;
    const std::int64_t chunks = std::min(std::min(threads, n), kMaxChunks);
    if (chunks <= 1) {
      task(begin, end);  // one thread: inline, no pool
      return;
    }
    pool().dispatch(chunks, begin, n, &call<Task>, &task);
  }

 private:
  using Fn = void (*)(const void*, std::int64_t, std::int64_t);
  static constexpr std::int64_t kMaxChunks = 256;
  static constexpr int kSpin = @SPIN@;  // pause rounds (~1 ms) before an idle thread sleeps

  template <typename Task>
  static void call(const void* task, std::int64_t lo, std::int64_t hi) {
    (*static_cast<const Task*>(task))(lo, hi);
  }

  static void relax() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#else
    std::this_thread::yield();
#endif
  }

  struct Pool {
    std::mutex dispatch_mutex;  // one job at a time
    std::mutex mutex;           // for sleeping and waking
    std::condition_variable work, done;
    std::vector<std::thread> workers;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> generation{0};  // bumped by every job
    std::atomic<std::uint64_t> ticket{0};      // chunks << 32 | next chunk to claim
    std::atomic<std::int64_t> pending{0};      // chunks not finished yet
    // The job; stable while any of its chunks runs (a job ends when all are done).
    Fn fn = nullptr;
    const void* task = nullptr;
    std::int64_t begin = 0, n = 0;

    ~Pool() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        stop.store(true);
        generation.fetch_add(1, std::memory_order_release);
      }
      work.notify_all();
      for (std::thread& w : workers) w.join();
    }

    void dispatch(std::int64_t chunks, std::int64_t b, std::int64_t count, Fn f,
                  const void* t) {
      std::lock_guard<std::mutex> one_at_a_time(dispatch_mutex);
      while (static_cast<std::int64_t>(workers.size()) < chunks - 1) {
        workers.emplace_back([this] { worker(); });
      }
      fn = f;
      task = t;
      begin = b;
      n = count;
      pending.store(chunks, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> lock(mutex);
        ticket.store(static_cast<std::uint64_t>(chunks) << 32, std::memory_order_release);
        generation.fetch_add(1, std::memory_order_release);
      }
      work.notify_all();
      run_chunks(false);
      for (int i = 0; i < kSpin && pending.load(std::memory_order_acquire) != 0; ++i) {
        relax();
      }
      if (pending.load(std::memory_order_acquire) != 0) {
        std::unique_lock<std::mutex> lock(mutex);
        done.wait(lock, [this] { return pending.load(std::memory_order_acquire) == 0; });
      }
    }

    // Claim and run chunks of the current job until none is left.
    void run_chunks(bool is_worker) {
      std::uint64_t t = ticket.load(std::memory_order_acquire);
      for (;;) {
        const std::uint64_t next = t & 0xffffffffu;
        const std::uint64_t count = t >> 32;
        if (next >= count) return;
        if (!ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                          std::memory_order_acquire)) {
          continue;  // t now holds the current ticket
        }
        const std::int64_t c = static_cast<std::int64_t>(next);
        const std::int64_t k = static_cast<std::int64_t>(count);
        fn(task, begin + n * c / k, begin + n * (c + 1) / k);
        if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1 && is_worker) {
          std::lock_guard<std::mutex> lock(mutex);  // the dispatcher may be asleep
          done.notify_all();
        }
        t = ticket.load(std::memory_order_acquire);
      }
    }

    void worker() {
      std::uint64_t seen = generation.load(std::memory_order_acquire);
      for (;;) {
        run_chunks(true);
        std::uint64_t g = generation.load(std::memory_order_acquire);
        for (int i = 0; i < kSpin && g == seen; ++i) {
          relax();
          g = generation.load(std::memory_order_acquire);
        }
        if (g == seen) {
          // `stop` too: a worker whose thread first runs after ~Pool bumped the
          // generation starts with that generation as `seen`, and would sleep forever
          // while ~Pool joins it (a hang at exit under load).
          std::unique_lock<std::mutex> lock(mutex);
          work.wait(lock, [&] {
            return stop.load() || generation.load(std::memory_order_acquire) != seen;
          });
          g = generation.load(std::memory_order_acquire);
        }
        seen = g;
        if (stop.load()) return;
      }
    }
  };

  static Pool& pool() {
    static Pool p;
    return p;
  }
};""".replace("@SPIN@", str(SPIN))  # the JIT runtime's spin: one figure for both pools
"""The `frame_parallel_for` helper of the emitted program."""
