/* Host runtime of the CUDA kernel emulator (see emulator.py).
 *
 * emulator.py rewrites a device module for the host: the NVVM intrinsics become calls
 * of the frame_emu_* functions below, libdevice's __nv_* functions resolve to the
 * wrappers of libm below, and frame_emu_launch runs a grid.
 *
 * Execution model. Blocks run one after another, on the calling thread. Within a
 * block every CUDA thread is a fiber (ucontext) with its own stack; the scheduler
 * resumes each fiber in turn until it reaches a barrier or returns, and repeats such
 * rounds until every fiber returned. A round thus moves all threads from one barrier
 * to the next, which is exactly what __syncthreads guarantees. Kernels that never
 * reach a barrier (emulator.py knows from the call graph) skip the fibers: each
 * thread is a plain call, which is much cheaper than two context switches.
 *
 * Not thread-safe: there is one scheduler per process (emulator.py serializes
 * launches).
 *
 * Built by emulator.py with `cc -O2 -shared -fPIC emulator.c -lm`.
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------------ */
/* Launch state and the special registers                                          */
/* ------------------------------------------------------------------------------ */

enum {
    FRAME_EMU_OK = 0,
    FRAME_EMU_BARRIER_DIVERGENCE = 1,
    FRAME_EMU_NO_MEMORY = 2,
    FRAME_EMU_BAD_ARGS = 3,
    FRAME_EMU_UNEXPECTED_BARRIER = 4,
};

#define MAX_THREADS 1024
#define MAX_ARGS 24
/* Per-thread stack. Kernels keep little on the stack (registers spill, small local
 * arrays, libm frames); the pages are reserved, not committed, until touched. */
#define STACK_BYTES (256u * 1024u)

/* The ids the special-register functions return: set by the scheduler before it
 * resumes (or calls) a thread, so they always describe the running thread. */
static unsigned g_tid[3], g_ntid[3], g_ctaid[3], g_nctaid[3];

static char g_error[512];

EXPORT const char *frame_emu_error(void) { return g_error; }

EXPORT int frame_emu_tid_x(void) { return (int)g_tid[0]; }
EXPORT int frame_emu_tid_y(void) { return (int)g_tid[1]; }
EXPORT int frame_emu_tid_z(void) { return (int)g_tid[2]; }
EXPORT int frame_emu_ntid_x(void) { return (int)g_ntid[0]; }
EXPORT int frame_emu_ntid_y(void) { return (int)g_ntid[1]; }
EXPORT int frame_emu_ntid_z(void) { return (int)g_ntid[2]; }
EXPORT int frame_emu_ctaid_x(void) { return (int)g_ctaid[0]; }
EXPORT int frame_emu_ctaid_y(void) { return (int)g_ctaid[1]; }
EXPORT int frame_emu_ctaid_z(void) { return (int)g_ctaid[2]; }
EXPORT int frame_emu_nctaid_x(void) { return (int)g_nctaid[0]; }
EXPORT int frame_emu_nctaid_y(void) { return (int)g_nctaid[1]; }
EXPORT int frame_emu_nctaid_z(void) { return (int)g_nctaid[2]; }
EXPORT int frame_emu_warpsize(void) { return 32; }

/* A memory fence: the threads of a block run interleaved on one host thread, so
 * there is nothing to order; the opaque call keeps the compiler from moving memory
 * accesses across it, as on the GPU. */
EXPORT void frame_emu_fence(void) { __asm__ __volatile__("" ::: "memory"); }

/* ------------------------------------------------------------------------------ */
/* Fibers                                                                          */
/* ------------------------------------------------------------------------------ */

enum { FIBER_RUNNING, FIBER_WAITING, FIBER_DONE };

typedef struct {
    ucontext_t ctx;
    unsigned tid[3];
    int state;
} fiber_t;

static fiber_t *g_fibers;        /* MAX_THREADS of them, allocated on first use */
static char *g_stacks[MAX_THREADS]; /* mapped on first use, kept for later launches */
static fiber_t *g_current;
static ucontext_t g_scheduler;
static int g_in_fiber;           /* 1 while a fiber launch runs: barriers may switch */

static void *g_fn;
static int g_nargs;
static void **g_args;

typedef void *P;

/* Calls the kernel with g_nargs pointer arguments (the kernels' parameters are all
 * pointers, so one function pointer type per count covers every kernel). */
static void call_kernel(void) {
    void *f = g_fn;
    P *a = (P *)g_args;
    switch (g_nargs) {
    case 0: ((void (*)(void))f)(); break;
    case 1: ((void (*)(P))f)(a[0]); break;
    case 2: ((void (*)(P, P))f)(a[0], a[1]); break;
    case 3: ((void (*)(P, P, P))f)(a[0], a[1], a[2]); break;
    case 4: ((void (*)(P, P, P, P))f)(a[0], a[1], a[2], a[3]); break;
    case 5: ((void (*)(P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4]); break;
    case 6: ((void (*)(P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7: ((void (*)(P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
    case 8: ((void (*)(P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
    case 9: ((void (*)(P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
    case 10: ((void (*)(P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break;
    case 11: ((void (*)(P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); break;
    case 12: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); break;
    case 13: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]); break;
    case 14: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]); break;
    case 15: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]); break;
    case 16: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]); break;
    case 17: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16]); break;
    case 18: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17]); break;
    case 19: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18]); break;
    case 20: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19]); break;
    case 21: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20]); break;
    case 22: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21]); break;
    case 23: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22]); break;
    case 24: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23]); break;
    }
}

/* A fiber's whole life: run the kernel as this thread, then return to the scheduler
 * through uc_link (it is never resumed again). */
static void fiber_main(void) {
    call_kernel();
    g_current->state = FIBER_DONE;
}

/* __syncthreads: park this thread until the scheduler has run every other thread of
 * the block up to its barrier too. */
EXPORT void frame_emu_barrier(void) {
    if (!g_in_fiber) {
        /* A kernel run without fibers reached a barrier (emulator.py's call graph
         * missed a path, e.g. an indirect call): nothing to switch to; report it. */
        snprintf(g_error, sizeof g_error,
                 "a barrier was reached in a kernel the emulator ran without barrier "
                 "support (an indirect call to a function with a barrier?)");
        return;
    }
    fiber_t *self = g_current;
    self->state = FIBER_WAITING;
    swapcontext(&self->ctx, &g_scheduler);
    /* Resumed by the next round: every thread of the block reached the barrier. */
}

/* bar.sync with a barrier id: all our kernels use barrier 0 with the whole block. */
EXPORT void frame_emu_barrier_id(int id) {
    (void)id;
    frame_emu_barrier();
}

static int ensure_fibers(unsigned count) {
    if (!g_fibers) {
        g_fibers = calloc(MAX_THREADS, sizeof(fiber_t));
        if (!g_fibers) return 0;
    }
    long page = sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < count; i++) {
        if (g_stacks[i]) continue;
        /* One guard page below the stack: an overflow faults instead of silently
         * overwriting the next thread's stack. */
        char *base = mmap(NULL, STACK_BYTES + (size_t)page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) return 0;
        mprotect(base, (size_t)page, PROT_NONE);
        g_stacks[i] = base + page;
    }
    return 1;
}

static void set_ids(unsigned *ids, unsigned x, unsigned y, unsigned z) {
    ids[0] = x;
    ids[1] = y;
    ids[2] = z;
}

/* Runs one block whose threads all run as fibers. */
static int run_block_fibers(unsigned nthreads) {
    unsigned bx = g_ntid[0], by = g_ntid[1];
    for (unsigned i = 0; i < nthreads; i++) {
        fiber_t *f = &g_fibers[i];
        set_ids(f->tid, i % bx, (i / bx) % by, i / (bx * by));
        f->state = FIBER_RUNNING;
        getcontext(&f->ctx);
        f->ctx.uc_stack.ss_sp = g_stacks[i];
        f->ctx.uc_stack.ss_size = STACK_BYTES;
        f->ctx.uc_link = &g_scheduler;
        makecontext(&f->ctx, fiber_main, 0);
    }
    for (;;) {
        /* One round: every thread runs from its last barrier (or the start) to its
         * next barrier (or the end). */
        unsigned waiting = 0, done = 0, first_waiting = 0, first_done = 0;
        for (unsigned i = 0; i < nthreads; i++) {
            fiber_t *f = &g_fibers[i];
            g_current = f;
            memcpy(g_tid, f->tid, sizeof g_tid);
            swapcontext(&g_scheduler, &f->ctx);
            if (f->state == FIBER_WAITING) {
                if (waiting++ == 0) first_waiting = i;
            } else {
                if (done++ == 0) first_done = i;
            }
        }
        if (waiting == 0) return FRAME_EMU_OK;
        if (done != 0) {
            /* Some threads passed a barrier the others never reach: on the GPU the
             * block would hang or misbehave. The waiting fibers are abandoned; their
             * stacks are reused by the next launch. */
            fiber_t *w = &g_fibers[first_waiting], *d = &g_fibers[first_done];
            snprintf(g_error, sizeof g_error,
                     "barrier divergence in block (%u, %u, %u): %u thread(s) wait at a "
                     "barrier (first: thread (%u, %u, %u)) while %u thread(s) returned "
                     "without reaching it (first: thread (%u, %u, %u))",
                     g_ctaid[0], g_ctaid[1], g_ctaid[2], waiting, w->tid[0], w->tid[1],
                     w->tid[2], done, d->tid[0], d->tid[1], d->tid[2]);
            return FRAME_EMU_BARRIER_DIVERGENCE;
        }
    }
}

/* Runs one block whose kernel has no barrier: each thread is a plain call. */
static int run_block_direct(void) {
    for (unsigned z = 0; z < g_ntid[2]; z++)
        for (unsigned y = 0; y < g_ntid[1]; y++)
            for (unsigned x = 0; x < g_ntid[0]; x++) {
                set_ids(g_tid, x, y, z);
                call_kernel();
                if (g_error[0]) return FRAME_EMU_UNEXPECTED_BARRIER;
            }
    return FRAME_EMU_OK;
}

/* Runs the kernel `fn` (nargs pointer arguments args[0..nargs)) over a grid of
 * gx*gy*gz blocks of bx*by*bz threads. `fibers` is nonzero if the kernel may reach a
 * barrier. Returns FRAME_EMU_OK, or an error code with frame_emu_error() saying
 * what went wrong. */
EXPORT int frame_emu_launch(void *fn, int nargs, void **args, unsigned gx, unsigned gy,
                            unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            int fibers) {
    g_error[0] = '\0';
    unsigned long long nthreads = (unsigned long long)bx * by * bz;
    if (!fn || nargs < 0 || nargs > MAX_ARGS || (nargs && !args) || !gx || !gy || !gz ||
        !nthreads || nthreads > MAX_THREADS) {
        snprintf(g_error, sizeof g_error, "bad launch arguments");
        return FRAME_EMU_BAD_ARGS;
    }
    if (fibers && !ensure_fibers((unsigned)nthreads)) {
        snprintf(g_error, sizeof g_error, "out of memory for %llu thread stacks", nthreads);
        return FRAME_EMU_NO_MEMORY;
    }
    g_fn = fn;
    g_nargs = nargs;
    g_args = args;
    set_ids(g_ntid, bx, by, bz);
    set_ids(g_nctaid, gx, gy, gz);
    int rc = FRAME_EMU_OK;
    g_in_fiber = fibers;
    for (unsigned z = 0; z < gz && rc == FRAME_EMU_OK; z++)
        for (unsigned y = 0; y < gy && rc == FRAME_EMU_OK; y++)
            for (unsigned x = 0; x < gx && rc == FRAME_EMU_OK; x++) {
                set_ids(g_ctaid, x, y, z);
                rc = fibers ? run_block_fibers((unsigned)nthreads) : run_block_direct();
            }
    g_in_fiber = 0;
    g_current = NULL;
    return rc;
}

/* ------------------------------------------------------------------------------ */
/* libdevice (__nv_*) on the host                                                  */
/* ------------------------------------------------------------------------------ */
/* Each function is listed once in an X-macro table by signature: the same list
 * defines the function and an entry of frame_emu_nv_table, from which emulator.py
 * checks the names and LLVM types a module declares. X(name, expression of the
 * parameters a, b, c, d). */

typedef long long ll;
typedef unsigned long long ull;

static float rsqrtf_(float x) { return 1.0f / sqrtf(x); }
static double rsqrt_(double x) { return 1.0 / sqrt(x); }
static float saturatef_(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
/* sin(pi x) with the argument reduced first, so that large x stay exact multiples. */
static double sinpi_(double x) { return sin(M_PI * fmod(x, 2.0)); }
static double cospi_(double x) { return cos(M_PI * fmod(fabs(x), 2.0)); }
static double normcdf_(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
static double erfcx_(double x) {
    /* exp(x^2) erfc(x); beyond 26 the product is 1/(x sqrt(pi)) to double precision
     * while exp(x^2) alone would overflow. */
    return x < 26.0 ? exp(x * x) * erfc(x) : 1.0 / (x * sqrt(M_PI));
}

/* Directed rounding: evaluate `expr` (of the volatile copies a, b, c) in rounding mode
 * `mode`. The volatile accesses pin the arithmetic between the fesetround calls. */
#define ROUNDED(T, mode, expr) \
    do {                                          \
        int old_ = fegetround();                  \
        fesetround(mode);                         \
        volatile T r_ = (expr);                   \
        fesetround(old_);                         \
        return r_;                                \
    } while (0)

#define RN FE_TONEAREST
#define RZ FE_TOWARDZERO
#define RD FE_DOWNWARD
#define RU FE_UPWARD

/* float (float) */
#define NV_F_F(X)                                                                      \
    X(expf, expf(a)) X(exp2f, exp2f(a)) X(exp10f, exp10f(a)) X(expm1f, expm1f(a))      \
    X(logf, logf(a)) X(log2f, log2f(a)) X(log10f, log10f(a)) X(log1pf, log1pf(a))      \
    X(logbf, logbf(a)) X(sqrtf, sqrtf(a)) X(rsqrtf, rsqrtf_(a)) X(cbrtf, cbrtf(a))     \
    X(rcbrtf, 1.0f / cbrtf(a)) X(sinf, sinf(a)) X(cosf, cosf(a)) X(tanf, tanf(a))      \
    X(asinf, asinf(a)) X(acosf, acosf(a)) X(atanf, atanf(a)) X(sinhf, sinhf(a))        \
    X(coshf, coshf(a)) X(tanhf, tanhf(a)) X(asinhf, asinhf(a)) X(acoshf, acoshf(a))    \
    X(atanhf, atanhf(a)) X(sinpif, (float)sinpi_(a)) X(cospif, (float)cospi_(a))       \
    X(erff, erff(a)) X(erfcf, erfcf(a)) X(erfcxf, (float)erfcx_(a))                    \
    X(normcdff, (float)normcdf_(a)) X(lgammaf, lgammaf(a)) X(tgammaf, tgammaf(a))      \
    X(j0f, j0f(a)) X(j1f, j1f(a)) X(y0f, y0f(a)) X(y1f, y1f(a))                        \
    X(fabsf, fabsf(a)) X(floorf, floorf(a)) X(ceilf, ceilf(a)) X(truncf, truncf(a))    \
    X(roundf, roundf(a)) X(rintf, rintf(a)) X(nearbyintf, nearbyintf(a))               \
    X(saturatef, saturatef_(a)) X(fast_expf, expf(a)) X(fast_exp10f, exp10f(a))        \
    X(fast_logf, logf(a)) X(fast_log2f, log2f(a)) X(fast_log10f, log10f(a))            \
    X(fast_sinf, sinf(a)) X(fast_cosf, cosf(a)) X(fast_tanf, tanf(a))                  \
    X(fast_tanhf, tanhf(a)) X(frcp_rn, 1.0f / a) X(fsqrt_rn, sqrtf(a))                 \
    X(frsqrt_rn, rsqrtf_(a))

/* float (float, float) */
#define NV_F_FF(X)                                                                     \
    X(powf, powf(a, b)) X(fast_powf, powf(a, b)) X(atan2f, atan2f(a, b))               \
    X(fmaxf, fmaxf(a, b)) X(fminf, fminf(a, b)) X(fmodf, fmodf(a, b))                  \
    X(remainderf, remainderf(a, b)) X(hypotf, hypotf(a, b))                            \
    X(rhypotf, 1.0f / hypotf(a, b)) X(copysignf, copysignf(a, b))                      \
    X(nextafterf, nextafterf(a, b)) X(fdimf, fdimf(a, b)) X(fast_fdividef, a / b)      \
    X(fdiv_rn, a / b) X(fadd_rn, a + b) X(fsub_rn, a - b) X(fmul_rn, a * b)

/* float (float, float, float) */
#define NV_F_FFF(X)                                                                    \
    X(fmaf, fmaf(a, b, c)) X(fmaf_rn, fmaf(a, b, c)) X(fmaf_ieee_rn, fmaf(a, b, c))    \
    X(norm3df, (float)sqrt((double)a * a + (double)b * b + (double)c * c))             \
    X(rnorm3df, (float)(1.0 / sqrt((double)a * a + (double)b * b + (double)c * c)))

/* float (float, float, float, float) */
#define NV_F_FFFF(X)                                                                   \
    X(norm4df, (float)sqrt((double)a * a + (double)b * b + (double)c * c + (double)d * d)) \
    X(rnorm4df,                                                                        \
      (float)(1.0 / sqrt((double)a * a + (double)b * b + (double)c * c + (double)d * d)))

/* double (double) */
#define NV_D_D(X)                                                                      \
    X(exp, exp(a)) X(exp2, exp2(a)) X(exp10, exp10(a)) X(expm1, expm1(a))              \
    X(log, log(a)) X(log2, log2(a)) X(log10, log10(a)) X(log1p, log1p(a))              \
    X(logb, logb(a)) X(sqrt, sqrt(a)) X(rsqrt, rsqrt_(a)) X(cbrt, cbrt(a))             \
    X(rcbrt, 1.0 / cbrt(a)) X(sin, sin(a)) X(cos, cos(a)) X(tan, tan(a))               \
    X(asin, asin(a)) X(acos, acos(a)) X(atan, atan(a)) X(sinh, sinh(a))                \
    X(cosh, cosh(a)) X(tanh, tanh(a)) X(asinh, asinh(a)) X(acosh, acosh(a))            \
    X(atanh, atanh(a)) X(sinpi, sinpi_(a)) X(cospi, cospi_(a)) X(erf, erf(a))          \
    X(erfc, erfc(a)) X(erfcx, erfcx_(a)) X(normcdf, normcdf_(a))                       \
    X(lgamma, lgamma(a)) X(tgamma, tgamma(a)) X(j0, j0(a)) X(j1, j1(a)) X(y0, y0(a))   \
    X(y1, y1(a)) X(fabs, fabs(a)) X(floor, floor(a)) X(ceil, ceil(a))                  \
    X(trunc, trunc(a)) X(round, round(a)) X(rint, rint(a))                             \
    X(nearbyint, nearbyint(a)) X(drcp_rn, 1.0 / a) X(dsqrt_rn, sqrt(a))

/* double (double, double) */
#define NV_D_DD(X)                                                                     \
    X(pow, pow(a, b)) X(atan2, atan2(a, b)) X(fmax, fmax(a, b)) X(fmin, fmin(a, b))    \
    X(fmod, fmod(a, b)) X(remainder, remainder(a, b)) X(hypot, hypot(a, b))            \
    X(rhypot, 1.0 / hypot(a, b)) X(copysign, copysign(a, b))                           \
    X(nextafter, nextafter(a, b)) X(fdim, fdim(a, b)) X(ddiv_rn, a / b)                \
    X(dadd_rn, a + b) X(dsub_rn, a - b) X(dmul_rn, a * b)

/* double (double, double, double) */
#define NV_D_DDD(X)                                                                    \
    X(fma, fma(a, b, c)) X(fma_rn, fma(a, b, c))                                       \
    X(norm3d, hypot(hypot(a, b), c)) X(rnorm3d, 1.0 / hypot(hypot(a, b), c))

/* double (double, double, double, double) */
#define NV_D_DDDD(X)                                                                   \
    X(norm4d, hypot(hypot(a, b), hypot(c, d)))                                         \
    X(rnorm4d, 1.0 / hypot(hypot(a, b), hypot(c, d)))

/* i32 (float), i32 (double) */
#define NV_I_F(X)                                                                      \
    X(isnanf, isnan(a) != 0) X(isinff, isinf(a) != 0) X(finitef, isfinite(a) != 0)     \
    X(signbitf, signbit(a) != 0) X(ilogbf, ilogbf(a)) X(float_as_int, f2i_(a))         \
    X(float_as_uint, f2i_(a))
#define NV_I_D(X)                                                                      \
    X(isnand, isnan(a) != 0) X(isinfd, isinf(a) != 0) X(isfinited, isfinite(a) != 0)   \
    X(signbitd, signbit(a) != 0) X(ilogb, ilogb(a)) X(double2loint, (int)(uint32_t)d2l_(a)) \
    X(double2hiint, (int)(uint32_t)((ull)d2l_(a) >> 32))

/* float (i32), double (i32), float (float, i32), double (double, i32) */
#define NV_F_I(X) X(int_as_float, i2f_(a)) X(uint_as_float, i2f_(a)) \
    X(int2float_rn, (float)a) X(uint2float_rn, (float)(unsigned)a)
#define NV_D_I(X) X(int2double_rn, (double)a) X(uint2double_rn, (double)(unsigned)a)
#define NV_F_FI(X) X(ldexpf, ldexpf(a, b)) X(scalbnf, scalbnf(a, b)) \
    X(powif, (float)pow((double)a, (double)b))
#define NV_D_DI(X) X(ldexp, ldexp(a, b)) X(scalbn, scalbn(a, b)) X(powi, pow(a, (double)b))

/* i64 <-> floating point */
#define NV_L_F(X) X(llrintf, llrintf(a)) X(llroundf, llroundf(a))
#define NV_L_D(X) X(llrint, llrint(a)) X(llround, llround(a)) \
    X(double_as_longlong, d2l_(a))
#define NV_F_L(X) X(ll2float_rn, (float)a) X(ull2float_rn, (float)(ull)a)
#define NV_D_L(X) X(ll2double_rn, (double)a) X(ull2double_rn, (double)(ull)a) \
    X(longlong_as_double, l2d_(a))

/* integer functions */
#define NV_I_I(X)                                                                      \
    X(abs, a < 0 ? (int)(0u - (unsigned)a) : a) X(clz, a ? __builtin_clz((unsigned)a) : 32) \
    X(popc, __builtin_popcount((unsigned)a)) X(ffs, __builtin_ffs(a))                  \
    X(brev, (int)brev_((unsigned)a))
#define NV_I_II(X)                                                                     \
    X(min, a < b ? a : b) X(max, a > b ? a : b)                                        \
    X(umin, (int)((unsigned)a < (unsigned)b ? (unsigned)a : (unsigned)b))              \
    X(umax, (int)((unsigned)a > (unsigned)b ? (unsigned)a : (unsigned)b))              \
    X(mulhi, (int)(((ll)a * (ll)b) >> 32))                                             \
    X(umulhi, (int)(((ull)(unsigned)a * (unsigned)b) >> 32))                           \
    X(mul24, (int)((ll)(((int)((unsigned)a << 8)) >> 8) * (((int)((unsigned)b << 8)) >> 8)))                             \
    X(umul24, (int)(((unsigned)a & 0xffffffu) * ((unsigned)b & 0xffffffu)))            \
    X(hadd, (int)(((ll)a + b) >> 1)) X(rhadd, (int)(((ll)a + b + 1) >> 1))             \
    X(uhadd, (int)(((ull)(unsigned)a + (unsigned)b) >> 1))                             \
    X(urhadd, (int)(((ull)(unsigned)a + (unsigned)b + 1) >> 1))
#define NV_I_L(X)                                                                      \
    X(clzll, a ? __builtin_clzll((ull)a) : 64) X(popcll, __builtin_popcountll((ull)a)) \
    X(ffsll, __builtin_ffsll(a))
#define NV_L_L(X) X(llabs, a < 0 ? (ll)(0ull - (ull)a) : a) X(brevll, (ll)brevll_((ull)a))
#define NV_L_LL(X)                                                                     \
    X(llmin, a < b ? a : b) X(llmax, a > b ? a : b)                                    \
    X(ullmin, (ll)((ull)a < (ull)b ? (ull)a : (ull)b))                                 \
    X(ullmax, (ll)((ull)a > (ull)b ? (ull)a : (ull)b))                                 \
    X(mul64hi, (ll)(((__int128)a * b) >> 64))                                          \
    X(umul64hi, (ll)(((unsigned __int128)(ull)a * (ull)b) >> 64))
#define NV_I_III(X)                                                                    \
    X(sad, (int)((unsigned)(a > b ? (ll)a - b : (ll)b - a) + (unsigned)c))             \
    X(usad, (int)(((unsigned)a > (unsigned)b ? (unsigned)a - (unsigned)b               \
                                             : (unsigned)b - (unsigned)a) + (unsigned)c)) \
    X(byte_perm, (int)byte_perm_((unsigned)a, (unsigned)b, (unsigned)c))

static int f2i_(float x) { int i; memcpy(&i, &x, sizeof i); return i; }
static float i2f_(int i) { float x; memcpy(&x, &i, sizeof x); return x; }
static ll d2l_(double x) { ll i; memcpy(&i, &x, sizeof i); return i; }
static double l2d_(ll i) { double x; memcpy(&x, &i, sizeof x); return x; }
static unsigned brev_(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static ull brevll_(ull x) { return ((ull)brev_((unsigned)x) << 32) | brev_((unsigned)(x >> 32)); }
static unsigned byte_perm_(unsigned x, unsigned y, unsigned s) {
    /* Result byte i is byte (s >> 4i) & 7 of the 8-byte value y:x. */
    ull v = ((ull)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
    return r;
}

#define X_F_F(n, e) EXPORT float __nv_##n(float a) { return e; }
#define X_F_FF(n, e) EXPORT float __nv_##n(float a, float b) { return e; }
#define X_F_FFF(n, e) EXPORT float __nv_##n(float a, float b, float c) { return e; }
#define X_F_FFFF(n, e) EXPORT float __nv_##n(float a, float b, float c, float d) { return e; }
#define X_D_D(n, e) EXPORT double __nv_##n(double a) { return e; }
#define X_D_DD(n, e) EXPORT double __nv_##n(double a, double b) { return e; }
#define X_D_DDD(n, e) EXPORT double __nv_##n(double a, double b, double c) { return e; }
#define X_D_DDDD(n, e) EXPORT double __nv_##n(double a, double b, double c, double d) { return e; }
#define X_I_F(n, e) EXPORT int __nv_##n(float a) { return e; }
#define X_I_D(n, e) EXPORT int __nv_##n(double a) { return e; }
#define X_F_I(n, e) EXPORT float __nv_##n(int a) { return e; }
#define X_D_I(n, e) EXPORT double __nv_##n(int a) { return e; }
#define X_F_FI(n, e) EXPORT float __nv_##n(float a, int b) { return e; }
#define X_D_DI(n, e) EXPORT double __nv_##n(double a, int b) { return e; }
#define X_L_F(n, e) EXPORT ll __nv_##n(float a) { return e; }
#define X_L_D(n, e) EXPORT ll __nv_##n(double a) { return e; }
#define X_F_L(n, e) EXPORT float __nv_##n(ll a) { return e; }
#define X_D_L(n, e) EXPORT double __nv_##n(ll a) { return e; }
#define X_I_I(n, e) EXPORT int __nv_##n(int a) { return e; }
#define X_I_II(n, e) EXPORT int __nv_##n(int a, int b) { return e; }
#define X_I_L(n, e) EXPORT int __nv_##n(ll a) { return e; }
#define X_L_L(n, e) EXPORT ll __nv_##n(ll a) { return e; }
#define X_L_LL(n, e) EXPORT ll __nv_##n(ll a, ll b) { return e; }
#define X_I_III(n, e) EXPORT int __nv_##n(int a, int b, int c) { return e; }

NV_F_F(X_F_F)
NV_F_FF(X_F_FF)
NV_F_FFF(X_F_FFF)
NV_F_FFFF(X_F_FFFF)
NV_D_D(X_D_D)
NV_D_DD(X_D_DD)
NV_D_DDD(X_D_DDD)
NV_D_DDDD(X_D_DDDD)
NV_I_F(X_I_F)
NV_I_D(X_I_D)
NV_F_I(X_F_I)
NV_D_I(X_D_I)
NV_F_FI(X_F_FI)
NV_D_DI(X_D_DI)
NV_L_F(X_L_F)
NV_L_D(X_L_D)
NV_F_L(X_F_L)
NV_D_L(X_D_L)
NV_I_I(X_I_I)
NV_I_II(X_I_II)
NV_I_L(X_I_L)
NV_L_L(X_L_L)
NV_L_LL(X_L_LL)
NV_I_III(X_I_III)

/* Float-to-integer conversions in the four rounding modes, saturating like the GPU's
 * cvt (NaN -> 0, out of range -> the nearest representable value). */
#define CVT(name, FT, IT, lo, hi, round)                                               \
    EXPORT IT __nv_##name(FT a) {                                                      \
        if (a != a) return 0;                                                          \
        FT r = round(a);                                                               \
        if (r <= (FT)(lo)) return (IT)(lo);                                            \
        if (r >= (FT)(hi)) return (IT)(hi);                                            \
        return (IT)r;                                                                  \
    }
#define CVT4(prefix, FT, IT, lo, hi, rint_, trunc_, floor_, ceil_)                      \
    CVT(prefix##_rn, FT, IT, lo, hi, rint_)                                            \
    CVT(prefix##_rz, FT, IT, lo, hi, trunc_)                                           \
    CVT(prefix##_rd, FT, IT, lo, hi, floor_)                                           \
    CVT(prefix##_ru, FT, IT, lo, hi, ceil_)
CVT4(float2int, float, int, INT32_MIN, INT32_MAX, rintf, truncf, floorf, ceilf)
CVT4(float2uint, float, unsigned, 0, UINT32_MAX, rintf, truncf, floorf, ceilf)
CVT4(double2int, double, int, INT32_MIN, INT32_MAX, rint, trunc, floor, ceil)
CVT4(double2uint, double, unsigned, 0, UINT32_MAX, rint, trunc, floor, ceil)
CVT4(float2ll, float, ll, INT64_MIN, INT64_MAX, rintf, truncf, floorf, ceilf)
CVT4(float2ull, float, ull, 0, UINT64_MAX, rintf, truncf, floorf, ceilf)
CVT4(double2ll, double, ll, INT64_MIN, INT64_MAX, rint, trunc, floor, ceil)
CVT4(double2ull, double, ull, 0, UINT64_MAX, rint, trunc, floor, ceil)

/* Arithmetic in the directed rounding modes. */
#define ROUND3(name, T, op)                                                            \
    EXPORT T __nv_##name##_rz(T a, T b) { volatile T x = a, y = b; ROUNDED(T, RZ, x op y); } \
    EXPORT T __nv_##name##_rd(T a, T b) { volatile T x = a, y = b; ROUNDED(T, RD, x op y); } \
    EXPORT T __nv_##name##_ru(T a, T b) { volatile T x = a, y = b; ROUNDED(T, RU, x op y); }
ROUND3(fadd, float, +)
ROUND3(fsub, float, -)
ROUND3(fmul, float, *)
ROUND3(fdiv, float, /)
ROUND3(dadd, double, +)
ROUND3(dsub, double, -)
ROUND3(dmul, double, *)
ROUND3(ddiv, double, /)

/* Functions with pointer results or other shapes, written out. */
EXPORT void __nv_sincosf(float a, float *s, float *c) { sincosf(a, s, c); }
EXPORT void __nv_fast_sincosf(float a, float *s, float *c) { sincosf(a, s, c); }
EXPORT void __nv_sincos(double a, double *s, double *c) { sincos(a, s, c); }
EXPORT void __nv_sincospif(float a, float *s, float *c) {
    *s = (float)sinpi_(a);
    *c = (float)cospi_(a);
}
EXPORT void __nv_sincospi(double a, double *s, double *c) {
    *s = sinpi_(a);
    *c = cospi_(a);
}
EXPORT float __nv_frexpf(float a, int *e) { return frexpf(a, e); }
EXPORT double __nv_frexp(double a, int *e) { return frexp(a, e); }
EXPORT float __nv_modff(float a, float *i) { return modff(a, i); }
EXPORT double __nv_modf(double a, double *i) { return modf(a, i); }
EXPORT float __nv_remquof(float a, float b, int *q) { return remquof(a, b, q); }
EXPORT double __nv_remquo(double a, double b, int *q) { return remquo(a, b, q); }
EXPORT float __nv_nanf(const char *tag) { return nanf(tag); }
EXPORT double __nv_nan(const char *tag) { return nan(tag); }
EXPORT float __nv_jnf(int n, float a) { return jnf(n, a); }
EXPORT float __nv_ynf(int n, float a) { return ynf(n, a); }
EXPORT double __nv_jn(int n, double a) { return jn(n, a); }
EXPORT double __nv_yn(int n, double a) { return yn(n, a); }
EXPORT double __nv_hiloint2double(int hi, int lo) {
    return l2d_((ll)(((ull)(unsigned)hi << 32) | (unsigned)lo));
}
EXPORT float __nv_double2float_rn(double a) { return (float)a; }
EXPORT float __nv_double2float_rz(double a) { volatile double x = a; ROUNDED(float, RZ, (float)x); }
EXPORT float __nv_double2float_rd(double a) { volatile double x = a; ROUNDED(float, RD, (float)x); }
EXPORT float __nv_double2float_ru(double a) { volatile double x = a; ROUNDED(float, RU, (float)x); }
EXPORT float __nv_fmaf_rz(float a, float b, float c) { volatile float x = a, y = b, z = c; ROUNDED(float, RZ, fmaf(x, y, z)); }
EXPORT float __nv_fmaf_rd(float a, float b, float c) { volatile float x = a, y = b, z = c; ROUNDED(float, RD, fmaf(x, y, z)); }
EXPORT float __nv_fmaf_ru(float a, float b, float c) { volatile float x = a, y = b, z = c; ROUNDED(float, RU, fmaf(x, y, z)); }
EXPORT float __nv_fmaf_ieee_rz(float a, float b, float c) { return __nv_fmaf_rz(a, b, c); }
EXPORT float __nv_fmaf_ieee_rd(float a, float b, float c) { return __nv_fmaf_rd(a, b, c); }
EXPORT float __nv_fmaf_ieee_ru(float a, float b, float c) { return __nv_fmaf_ru(a, b, c); }
EXPORT double __nv_fma_rz(double a, double b, double c) { volatile double x = a, y = b, z = c; ROUNDED(double, RZ, fma(x, y, z)); }
EXPORT double __nv_fma_rd(double a, double b, double c) { volatile double x = a, y = b, z = c; ROUNDED(double, RD, fma(x, y, z)); }
EXPORT double __nv_fma_ru(double a, double b, double c) { volatile double x = a, y = b, z = c; ROUNDED(double, RU, fma(x, y, z)); }

/* More directed rounding: reciprocals, square roots, integer-to-float conversions. */
#define ROUND_UNARY(name, T, A, expr)                                                  \
    EXPORT T __nv_##name##_rz(A a) { volatile A x = a; ROUNDED(T, RZ, expr); }         \
    EXPORT T __nv_##name##_rd(A a) { volatile A x = a; ROUNDED(T, RD, expr); }         \
    EXPORT T __nv_##name##_ru(A a) { volatile A x = a; ROUNDED(T, RU, expr); }
ROUND_UNARY(frcp, float, float, 1.0f / x)
ROUND_UNARY(fsqrt, float, float, sqrtf(x))
ROUND_UNARY(drcp, double, double, 1.0 / x)
ROUND_UNARY(dsqrt, double, double, sqrt(x))
ROUND_UNARY(int2float, float, int, (float)x)
ROUND_UNARY(uint2float, float, int, (float)(unsigned)x)
ROUND_UNARY(ll2float, float, ll, (float)x)
ROUND_UNARY(ull2float, float, ll, (float)(ull)x)
ROUND_UNARY(ll2double, double, ll, (double)x)
ROUND_UNARY(ull2double, double, ll, (double)(ull)x)

/* Euclidean norms of n values. hypot accumulates without overflow or underflow. */
EXPORT float __nv_normf(int n, const float *a) {
    double r = 0.0;
    for (int i = 0; i < n; i++) r = hypot(r, a[i]);
    return (float)r;
}
EXPORT float __nv_rnormf(int n, const float *a) { return 1.0f / __nv_normf(n, a); }
EXPORT double __nv_norm(int n, const double *a) {
    double r = 0.0;
    for (int i = 0; i < n; i++) r = hypot(r, a[i]);
    return r;
}
EXPORT double __nv_rnorm(int n, const double *a) { return 1.0 / __nv_norm(n, a); }

/* Inverse error functions (not in libm): a start from M. Giles' single-precision
 * approximation of erfinv (made for float arguments, so for -log((1-x)(1+x)) < 16.6;
 * beyond, the asymptote of erfc), then Halley steps on erf or erfc in double. */
static double giles_(double w) { /* erfinv(x) / x as a function of w = -log((1-x)(1+x)) */
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    return p;
}
/* Halley's method on f(y) = g(y) - target with g = erf (sign 1) or erfc (sign -1):
 * f' = sign 2/sqrt(pi) exp(-y^2), f''/f' = -2y. */
static double refine_(double y, double target, int sign) {
    for (int i = 0; i < 3; i++) {
        double f = (sign > 0 ? erf(y) : erfc(y)) - target;
        double d = sign * M_2_SQRTPI * exp(-y * y);
        if (d == 0.0 || f == 0.0) break;
        double step = f / d;
        y -= step / (1.0 + y * step);
    }
    return y;
}
static double erfcinv_(double c);
static double erfinv_(double x) {
    if (!(x > -1.0 && x < 1.0)) return x == 1.0 ? INFINITY : x == -1.0 ? -INFINITY : NAN;
    if (fabs(x) > 0.5) /* 1 - |x| is exact here, and erfc keeps the tail's precision */
        return copysign(erfcinv_(1.0 - fabs(x)), x);
    if (x == 0.0) return x;
    return refine_(x * giles_(-log1p(-x * x)), x, 1);
}
static double erfcinv_(double c) {
    if (!(c > 0.0 && c < 2.0)) return c == 0.0 ? INFINITY : c == 2.0 ? -INFINITY : NAN;
    if (c >= 0.5) return c <= 1.5 ? erfinv_(1.0 - c) : -erfcinv_(2.0 - c);
    double w = -log(c * (2.0 - c)), y;
    if (w < 16.0) {
        y = (1.0 - c) * giles_(w);
    } else { /* erfc(y) ~ exp(-y^2) / (y sqrt(pi)): a few fixed-point rounds */
        y = sqrt(-log(c));
        for (int i = 0; i < 4; i++) y = sqrt(-log(c) - log(y * sqrt(M_PI)));
    }
    return refine_(y, c, -1);
}
EXPORT double __nv_erfcinv(double x) { return erfcinv_(x); }
EXPORT double __nv_erfinv(double x) { return erfinv_(x); }
EXPORT double __nv_normcdfinv(double p) { return -M_SQRT2 * erfcinv_(2.0 * p); }
EXPORT float __nv_erfcinvf(float x) { return (float)erfcinv_(x); }
EXPORT float __nv_erfinvf(float x) { return (float)erfinv_(x); }
EXPORT float __nv_normcdfinvf(float p) { return (float)(-M_SQRT2 * erfcinv_(2.0 * (double)p)); }

/* IEEE half <-> float, by the bits (round to nearest even), as cvt.rn.f16.f32. */
EXPORT short __nv_float2half_rn(float f) {
    unsigned x = (unsigned)f2i_(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (short)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (ax >= 0x477ff000u) return (short)(sign | 0x7c00u); /* rounds past 65504 */
    if (ax < 0x38800000u) /* a subnormal half (or 0): units of 2^-24, scaled exactly */
        return (short)(sign | (unsigned)nearbyintf(i2f_((int)ax) * 16777216.0f));
    /* Rebias the exponent (127 -> 15) and round the 13 dropped bits to even. */
    return (short)(sign | ((ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13));
}
EXPORT float __nv_half2float(short h) {
    unsigned u = (unsigned short)h, sign = (u & 0x8000u) << 16, e = (u >> 10) & 0x1fu,
             m = u & 0x3ffu;
    if (e == 0) return sign ? -(float)m * 0x1p-24f : (float)m * 0x1p-24f;
    if (e == 31) return i2f_((int)(sign | 0x7f800000u | (m << 13)));
    return i2f_((int)(sign | ((e + 112u) << 23) | (m << 13)));
}

/* The table emulator.py reads: every __nv_ function above with its LLVM type. */
typedef struct {
    const char *name;
    const char *type;
} nv_entry;

#define T_F_F(n, e) {"__nv_" #n, "float (float)"},
#define T_F_FF(n, e) {"__nv_" #n, "float (float, float)"},
#define T_F_FFF(n, e) {"__nv_" #n, "float (float, float, float)"},
#define T_F_FFFF(n, e) {"__nv_" #n, "float (float, float, float, float)"},
#define T_D_D(n, e) {"__nv_" #n, "double (double)"},
#define T_D_DD(n, e) {"__nv_" #n, "double (double, double)"},
#define T_D_DDD(n, e) {"__nv_" #n, "double (double, double, double)"},
#define T_D_DDDD(n, e) {"__nv_" #n, "double (double, double, double, double)"},
#define T_I_F(n, e) {"__nv_" #n, "i32 (float)"},
#define T_I_D(n, e) {"__nv_" #n, "i32 (double)"},
#define T_F_I(n, e) {"__nv_" #n, "float (i32)"},
#define T_D_I(n, e) {"__nv_" #n, "double (i32)"},
#define T_F_FI(n, e) {"__nv_" #n, "float (float, i32)"},
#define T_D_DI(n, e) {"__nv_" #n, "double (double, i32)"},
#define T_L_F(n, e) {"__nv_" #n, "i64 (float)"},
#define T_L_D(n, e) {"__nv_" #n, "i64 (double)"},
#define T_F_L(n, e) {"__nv_" #n, "float (i64)"},
#define T_D_L(n, e) {"__nv_" #n, "double (i64)"},
#define T_I_I(n, e) {"__nv_" #n, "i32 (i32)"},
#define T_I_II(n, e) {"__nv_" #n, "i32 (i32, i32)"},
#define T_I_L(n, e) {"__nv_" #n, "i32 (i64)"},
#define T_L_L(n, e) {"__nv_" #n, "i64 (i64)"},
#define T_L_LL(n, e) {"__nv_" #n, "i64 (i64, i64)"},
#define T_I_III(n, e) {"__nv_" #n, "i32 (i32, i32, i32)"},
#define T_CVT4(prefix, type) {"__nv_" #prefix "_rn", type}, {"__nv_" #prefix "_rz", type}, \
    {"__nv_" #prefix "_rd", type}, {"__nv_" #prefix "_ru", type},
#define T_ROUND3(name, type) {"__nv_" #name "_rz", type}, {"__nv_" #name "_rd", type}, \
    {"__nv_" #name "_ru", type},

static const nv_entry nv_table[] = {
    NV_F_F(T_F_F) NV_F_FF(T_F_FF) NV_F_FFF(T_F_FFF) NV_F_FFFF(T_F_FFFF)
    NV_D_D(T_D_D) NV_D_DD(T_D_DD) NV_D_DDD(T_D_DDD) NV_D_DDDD(T_D_DDDD)
    NV_I_F(T_I_F) NV_I_D(T_I_D) NV_F_I(T_F_I) NV_D_I(T_D_I) NV_F_FI(T_F_FI)
    NV_D_DI(T_D_DI) NV_L_F(T_L_F) NV_L_D(T_L_D) NV_F_L(T_F_L) NV_D_L(T_D_L)
    NV_I_I(T_I_I) NV_I_II(T_I_II) NV_I_L(T_I_L) NV_L_L(T_L_L) NV_L_LL(T_L_LL)
    NV_I_III(T_I_III)
    T_CVT4(float2int, "i32 (float)") T_CVT4(float2uint, "i32 (float)")
    T_CVT4(double2int, "i32 (double)") T_CVT4(double2uint, "i32 (double)")
    T_CVT4(float2ll, "i64 (float)") T_CVT4(float2ull, "i64 (float)")
    T_CVT4(double2ll, "i64 (double)") T_CVT4(double2ull, "i64 (double)")
    T_ROUND3(fadd, "float (float, float)") T_ROUND3(fsub, "float (float, float)")
    T_ROUND3(fmul, "float (float, float)") T_ROUND3(fdiv, "float (float, float)")
    T_ROUND3(dadd, "double (double, double)") T_ROUND3(dsub, "double (double, double)")
    T_ROUND3(dmul, "double (double, double)") T_ROUND3(ddiv, "double (double, double)")
    {"__nv_sincosf", "void (float, ptr, ptr)"},
    {"__nv_fast_sincosf", "void (float, ptr, ptr)"},
    {"__nv_sincos", "void (double, ptr, ptr)"},
    {"__nv_sincospif", "void (float, ptr, ptr)"},
    {"__nv_sincospi", "void (double, ptr, ptr)"},
    {"__nv_frexpf", "float (float, ptr)"},
    {"__nv_frexp", "double (double, ptr)"},
    {"__nv_modff", "float (float, ptr)"},
    {"__nv_modf", "double (double, ptr)"},
    {"__nv_remquof", "float (float, float, ptr)"},
    {"__nv_remquo", "double (double, double, ptr)"},
    {"__nv_nanf", "float (ptr)"},
    {"__nv_nan", "double (ptr)"},
    {"__nv_jnf", "float (i32, float)"},
    {"__nv_ynf", "float (i32, float)"},
    {"__nv_jn", "double (i32, double)"},
    {"__nv_yn", "double (i32, double)"},
    {"__nv_hiloint2double", "double (i32, i32)"},
    {"__nv_double2float_rn", "float (double)"},
    {"__nv_double2float_rz", "float (double)"},
    {"__nv_double2float_rd", "float (double)"},
    {"__nv_double2float_ru", "float (double)"},
    {"__nv_fmaf_rz", "float (float, float, float)"},
    {"__nv_fmaf_rd", "float (float, float, float)"},
    {"__nv_fmaf_ru", "float (float, float, float)"},
    {"__nv_fmaf_ieee_rz", "float (float, float, float)"},
    {"__nv_fmaf_ieee_rd", "float (float, float, float)"},
    {"__nv_fmaf_ieee_ru", "float (float, float, float)"},
    {"__nv_fma_rz", "double (double, double, double)"},
    {"__nv_fma_rd", "double (double, double, double)"},
    {"__nv_fma_ru", "double (double, double, double)"},
    T_ROUND3(frcp, "float (float)") T_ROUND3(fsqrt, "float (float)")
    T_ROUND3(drcp, "double (double)") T_ROUND3(dsqrt, "double (double)")
    T_ROUND3(int2float, "float (i32)") T_ROUND3(uint2float, "float (i32)")
    T_ROUND3(ll2float, "float (i64)") T_ROUND3(ull2float, "float (i64)")
    T_ROUND3(ll2double, "double (i64)") T_ROUND3(ull2double, "double (i64)")
    {"__nv_normf", "float (i32, ptr)"},
    {"__nv_rnormf", "float (i32, ptr)"},
    {"__nv_norm", "double (i32, ptr)"},
    {"__nv_rnorm", "double (i32, ptr)"},
    {"__nv_erfcinv", "double (double)"},
    {"__nv_erfinv", "double (double)"},
    {"__nv_normcdfinv", "double (double)"},
    {"__nv_erfcinvf", "float (float)"},
    {"__nv_erfinvf", "float (float)"},
    {"__nv_normcdfinvf", "float (float)"},
    {"__nv_float2half_rn", "i16 (float)"},
    {"__nv_half2float", "float (i16)"},
    {NULL, NULL},
};

/* The __nv_ functions this library defines and their LLVM types, up to a NULL name. */
EXPORT const nv_entry *frame_emu_nv_table(void) { return nv_table; }
