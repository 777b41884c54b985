/*
 * sample.c -- measured CPU time per access category, by sampling each PE thread
 * (mpr_sample.h says what is measured and why by sampling).
 *
 * The signal is SIGPROF, the profiling signal, sent by a POSIX timer per thread
 * (SIGEV_THREAD_ID).  The timer runs on the monotonic clock and each sample weighs the thread's
 * CPU time since the previous one (its CPU clock, read in the handler), so a sample charges
 * exactly the CPU time of its interval to the category the thread is in when it comes.  Why
 * not a timer on the thread's CPU clock, which needs no weights: the kernel checks CPU-clock
 * timers only at its scheduler tick (4 ms with HZ=250), so a 20 ms phase of one category got 4
 * to 6 samples, +-20 % per run; the monotonic clock's timers are high-resolution, and the
 * error of a category's time is at most one period per change of category.  A thread that is
 * preempted gets its signal when it runs again, and the weight is the little CPU time it had
 * meanwhile; a thread that sleeps (the idle loop's wait) pauses its timer (mpr_sample_pause).
 * The timer carries the thread's mpr_sampler in its signal value, so the handler needs no
 * thread-local storage (a worker that multiplexes PEs copies the TLS block of each PE it
 * switches to, and a signal in the middle of the copy would see half of one and half of
 * another).  The handler reads the PE's state with plain loads: it runs on the PE's own thread,
 * between two of its instructions, and adds to counters only that thread's handler writes.
 * A program that handles SIGPROF itself (a profiler of its own) keeps it: sampling is then off,
 * and a warning says so.
 */
#define _GNU_SOURCE
#include "mpr.h"
#include "mpr_sample.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if MPR_LATENCY /* else mpr_sample.h's empty inlines: no access categories to sample */

struct mpr_sampler {
    _Atomic(mpr_pe *) pe; /* the PE the thread runs now; NULL: none (a worker between PEs) */
    timer_t timer;
    struct itimerspec period;
    uint64_t last_cpu_ns; /* the thread's CPU clock at the previous sample (or start, resume) */
    /* a multiplexing worker: when it switched to the PE it runs (monotonic ns; 0: never).  The
     * CPU time since the previous sample may include other PEs' slices; a sample charges at
     * most the wall time since the switch. */
    _Atomic(uint64_t) switched_ns;
    mpr_sampler *retired_next; /* on the list of stopped samplers (mpr_sample_stop) */
};

/* Stopped samplers are kept, never freed: a signal their timer generated before it was deleted
 * may still be delivered to the thread after mpr_sample_stop returns (a sanitizer's runtime,
 * TSan's, defers signals to its next safe point), and its handler reads the sampler.  One
 * small block per PE thread, reachable from here until the process exits. */
static mpr_sampler *retired;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;

static bool sampling; /* set by mpr_sample_setup, read by the PE threads after they start */

/* Which of the PE's sample slots the thread is in (see mpr_sample.h). */
static inline unsigned slot_of(const mpr_pe *pe)
{
    if (pe->sample_at == MPR_AT_IDLE)
        return MPR_SAMPLE_IDLE;
    if (pe->current || pe->sample_at == MPR_AT_USER)
        return mpr_cur_access(pe); /* a fiber, or pe_main's own code */
    return MPR_SAMPLE_SCHED;
}

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts); /* async-signal-safe */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Charges the thread's CPU time since the previous sample to the PE's current slot; `sample`:
 * the timer's signal (counted as a sample), not the charge of a pause or the end, which only
 * closes the interval: a PE that took no sample has no category times, however its CPU time
 * would split (profile.c). */
static void charge(mpr_sampler *s, bool sample)
{
    uint64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t cpu = now - s->last_cpu_ns;
    s->last_cpu_ns = now;
    mpr_pe *pe = atomic_load_explicit(&s->pe, memory_order_relaxed);
    if (!pe)
        return;
    uint64_t since = atomic_load_explicit(&s->switched_ns, memory_order_relaxed);
    if (since) {
        uint64_t wall = clock_ns(CLOCK_MONOTONIC) - since;
        if (wall < cpu)
            cpu = wall;
    }
    unsigned slot = slot_of(pe);
    pe->samples[slot] += sample;
    pe->sample_ns[slot] += cpu;
}

static void on_sample(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)uc;
    if (info->si_code != SI_TIMER)
        return; /* SIGPROF from elsewhere (kill): not a sample */
    mpr_sampler *s = info->si_value.sival_ptr;
    if (s)
        charge(s, true);
}

/* Has the program a SIGPROF handler of its own? */
static bool handled_elsewhere(const struct sigaction *old)
{
    if (old->sa_flags & SA_SIGINFO)
        return old->sa_sigaction != on_sample;
    return old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN;
}

void mpr_sample_setup(void)
{
    sampling = false;
    if (mpr_g.cfg.sample_s <= 0)
        return;
    struct sigaction old;
    if (sigaction(SIGPROF, NULL, &old) == 0 && handled_elsewhere(&old)) {
        fprintf(stderr, "mprof: warning: the program handles SIGPROF itself; no category times "
                        "(MPROF_SAMPLE_US)\n");
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) != 0)
        return;
    sampling = true;
}

mpr_sampler *mpr_sample_start(mpr_pe *pe)
{
    if (!sampling)
        return NULL;
    mpr_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    atomic_init(&s->pe, pe);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev.sigev_value.sival_ptr = s;
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &ev, &s->timer) != 0) {
        free(s); /* e.g. the process's limit of pending signals: this thread goes unsampled */
        return NULL;
    }
    double period = mpr_g.cfg.sample_s;
    struct itimerspec *its = &s->period;
    its->it_interval.tv_sec = (time_t)period;
    its->it_interval.tv_nsec = (long)((period - (double)(time_t)period) * 1e9);
    if (its->it_interval.tv_sec == 0 && its->it_interval.tv_nsec < 1000)
        its->it_interval.tv_nsec = 1000;
    its->it_value = its->it_interval;
    s->last_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (timer_settime(s->timer, 0, its, NULL) != 0) {
        timer_delete(s->timer);
        free(s);
        return NULL;
    }
    return s;
}

void mpr_sample_switch_on(mpr_sampler *s, mpr_pe *pe, uint64_t now_ns)
{
    atomic_store_explicit(&s->switched_ns, pe ? now_ns : 0, memory_order_relaxed);
    atomic_store_explicit(&s->pe, pe, memory_order_relaxed);
}

/* The signal blocked on this thread while the caller changes the timer or charges the last
 * interval itself, so that no sample interleaves with it. */
static void block_samples(sigset_t *old)
{
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &prof, old);
}

void mpr_sample_pause_on(mpr_sampler *s)
{
    static const struct itimerspec off;
    sigset_t old;
    block_samples(&old);
    timer_settime(s->timer, 0, &off, NULL);
    charge(s, false); /* the interval up to the wait is the current slot's */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void mpr_sample_resume_on(mpr_sampler *s)
{
    /* the wait's CPU time (the system call's) is the idle period's, which idle_cpu_s counts;
     * it is charged to no slot */
    s->last_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    timer_settime(s->timer, 0, &s->period, NULL);
}

void mpr_sample_stop(mpr_sampler *s)
{
    if (!s)
        return;
    sigset_t old;
    block_samples(&old);
    timer_delete(s->timer);
    charge(s, false); /* the tail since the last sample */
    atomic_store_explicit(&s->pe, NULL, memory_order_relaxed);
    /* a signal the timer had pending for this thread comes when the mask is restored, or
     * later, and finds no PE */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_lock(&retired_lock);
    s->retired_next = retired;
    retired = s;
    pthread_mutex_unlock(&retired_lock);
}

#endif /* MPR_LATENCY */
