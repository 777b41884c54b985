/*
 * mpr_base.h -- what every internal header needs: the runtime's limits, its build switches,
 * compiler hints and error reporting (error.c).
 */
#ifndef MPR_BASE_H
#define MPR_BASE_H

#include "mp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MPR_MAX_SCHED 16
#define MPR_MAX_ACCESS 64
#define MPR_PREEMPT_DEPTH 16 /* deeper preemptive enables are deferred to the urgent queue */

/* Build switches (CMake options MPROF_STATS and MPROF_LATENCY):
 *   MPROF_DISABLE     statistics hooks compile away, the runtime's own included; the profile
 *                     then has no rts object (CMake adds MPROF_KEEP_ACCESS when latency
 *                     accounting stays: the generated access declarations are its);
 *   MPROF_NO_LATENCY  latency accounting compiles away: fibers do not note the idle total at
 *                     creation, dispatch skips the latency check and the generated access
 *                     declarations are gone; the profile's latency rows keep their dispatch
 *                     counts with zero latencies. */
#ifdef MPROF_NO_LATENCY
#define MPR_LATENCY 0
#else
#define MPR_LATENCY 1
#endif

#if defined(__GNUC__)
#define MPR_LIKELY(x) __builtin_expect(!!(x), 1)
#define MPR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MPR_COLD __attribute__((cold, noinline))
#if defined(__clang__)
#define MPR_NOIPA __attribute__((noinline))
#else
#define MPR_NOIPA __attribute__((noipa)) /* keeps the signature: no constprop or ISRA clone */
#endif
#else
#define MPR_NOIPA
#define MPR_LIKELY(x) (x)
#define MPR_UNLIKELY(x) (x)
#define MPR_COLD
#endif

/* One step of a spin-wait: tells the core (x86 `pause`) so the sibling hyperthread runs. */
static inline void mpr_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* sched.c: nanoseconds on the monotonic clock (vDSO: no system call). */
uint64_t mpr_mono_ns(void);

/* The PE (mpr_pe.h): most concepts' functions take one, few need its layout. */
typedef struct mpr_pe mpr_pe;

/* error.c */
mp_err mpr_misuse(mp_err code, const char *fmt, ...) MPR_COLD;
void mpr_fatal(const char *fmt, ...) MPR_COLD __attribute__((noreturn));

/* overflow.c: report a stack overflow with its PE and fiber (installs the handler once and
 * an alternate signal stack for the calling thread). */
void mpr_overflow_guard(void);

/* overflow.c: the copy of a bulk transfer in progress on this thread whose address another PE
 * named (the source a reader asked for, the destination a writer or store named): a fault in
 * it is reported as that transfer's, not as a bare SIGSEGV.  Set around the copy (cold: only
 * records with a payload), what = NULL otherwise. */
typedef struct {
    const char *what; /* "read from", "write or store to" */
    int peer;         /* the PE that named the address */
    const void *addr;
    size_t n;
} mpr_transfer_note;
extern __thread mpr_transfer_note mpr_transfer;

/* error.c: the one parser of numeric settings (MPROF_X environment variables).  An unset or
 * empty variable gives `dflt`; a value that is not a finite number in [min, max] (an integer
 * when `integer`) gives `dflt` too, after "mprof: ignoring NAME=VALUE (expected ...), using
 * the default DFLT" on stderr (unless `quiet`). */
double mpr_env_number(const char *name, double dflt, double min, double max, int integer,
                      int quiet);

#endif /* MPR_BASE_H */
