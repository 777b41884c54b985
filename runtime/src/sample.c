/*
 * sample.c -- measured CPU time per access category, by sampling each PE thread
 * (mpr_sample.h says what is measured and why by sampling).
 *
 * One sampler thread per process wakes every MPROF_SAMPLE_US and, for each thread that runs
 * PEs, reads that thread's CPU clock (pthread_getcpuclockid) and the category its PE is in,
 * and charges the CPU time since the previous sample to that category.  The thread sleeps to
 * absolute deadlines on the monotonic clock (clock_nanosleep), and each sample weighs exactly the
 * CPU time of its interval, and the error of a category's time is at most one period per
 * change of category.  A thread that did not run in a period (preempted, or asleep in the idle
 * loop's wait, which pauses its sampler: mpr_sample_pause) has no CPU time to charge and takes
 * no sample.
 *
 * Why a thread and not a timer signal per PE thread, as before: on a virtual machine each
 * signal cost the thread it interrupted 20-30 us of CPU time (the guest's timer interrupt and
 * the delivery), 3-4 % of a busy PE at a 1 ms period, charged to whatever the PE was doing;
 * the thread's wake-up is one interrupt a period for all PE threads, and its work is not in any
 * PE's CPU time (docs/measurements/runtime-performance.md, "A sampler thread instead of a
 * signal per PE thread").  No signal reaches the program either: a fiber's sleep or poll is not
 * cut short, and a program's own SIGPROF handler (another profiler) is left alone.
 *
 * Reading another thread's state: which category a PE is in lives in fields its thread writes
 * on its hot paths (the running fiber, the category byte of its tag, sample_at) with plain
 * stores.  The sampler reads them racily on purpose, as the watchdog does (a byte and a
 * pointer tested against NULL: no torn values), in one function excluded from TSan
 * instrumentation.  What the sampler writes (the PE's sample counts and times, the thread's
 * last clock reading) is written under the sampler's lock, which the PE thread takes to charge
 * its own last interval before it sleeps and when it stops.
 */
#define _GNU_SOURCE
#include "mpr.h"
#include "mpr_sample.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if MPR_LATENCY /* else mpr_sample.h's empty inlines: no access categories to sample */

struct mpr_sampler {
    pthread_mutex_t lock;
    clockid_t clock;      /* the thread's CPU clock, readable from the sampler thread */
    uint64_t last_cpu_ns; /* the clock at the previous charge (or start, resume); under lock */
    bool paused;          /* asleep in a wait, or stopped: nothing to charge; under lock */
    _Atomic(mpr_pe *) pe; /* the PE the thread runs now; NULL: none (a worker between PEs) */
    /* a multiplexing worker: when it switched to the PE it runs (monotonic ns; 0: never).  The
     * CPU time since the previous sample may include other PEs' slices; a sample charges at
     * most the wall time since the switch. */
    _Atomic(uint64_t) switched_ns;
    mpr_sampler *next; /* on the list of threads sampled (under S.lock) */
};

static struct {
    pthread_mutex_t lock; /* the list, and the sampler thread's pass over it */
    mpr_sampler *list;
    pthread_t thread;
    bool running;
    _Atomic(int) stop;
    uint64_t period_ns;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Which of the PE's sample slots its thread is in (see mpr_sample.h). */
static inline unsigned slot_of(const mpr_pe *pe)
{
    if (pe->sample_at == MPR_AT_IDLE)
        return MPR_SAMPLE_IDLE;
    if (pe->current || pe->sample_at == MPR_AT_USER)
        return mpr_cur_access(pe); /* a fiber, or pe_main's own code */
    return MPR_SAMPLE_SCHED;
}

/* slot_of, read from the sampler thread while the PE's thread runs on (see above): written
 * out rather than calling it, so that no read leaves this function for an instrumented one. */
static MPR_RACY unsigned slot_of_running(const mpr_pe *pe)
{
    uint8_t at = pe->sample_at;
    if (at == MPR_AT_IDLE)
        return MPR_SAMPLE_IDLE;
    if (pe->current || at == MPR_AT_USER)
        return pe->spawn_tag.creator; /* mpr_cur_access */
    return MPR_SAMPLE_SCHED;
}

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Charges the thread's CPU time since the previous charge to the PE's slot (s->lock held);
 * `sample`: a sample of the sampler thread (counted as one), not the charge of a pause or the
 * end, which only closes the interval: a PE that took no sample has no category times,
 * however its CPU time would split (profile.c).  `own`: on the PE's own thread, which reads
 * its state without a race. */
static void charge(mpr_sampler *s, bool sample, bool own)
{
    uint64_t now = clock_ns(s->clock);
    if (now <= s->last_cpu_ns)
        return; /* it did not run since: nothing to charge, no sample */
    uint64_t cpu = now - s->last_cpu_ns;
    s->last_cpu_ns = now;
    mpr_pe *pe = atomic_load_explicit(&s->pe, memory_order_acquire);
    if (!pe)
        return;
    uint64_t since = atomic_load_explicit(&s->switched_ns, memory_order_relaxed);
    if (since) {
        uint64_t wall = mpr_mono_ns() - since;
        if (wall < cpu)
            cpu = wall;
    }
    unsigned slot = own ? slot_of(pe) : slot_of_running(pe);
    pe->samples[slot] += sample;
    pe->sample_ns[slot] += cpu;
}

static void *sampler_main(void *arg)
{
    (void)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&S.stop)) {
        uint64_t t = (uint64_t)next.tv_nsec + S.period_ns;
        next.tv_sec += (time_t)(t / 1000000000u);
        next.tv_nsec = (long)(t % 1000000000u);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
        /* a pass that ran late (the machine was busy) takes the next deadline from now, not a
         * burst of catch-up passes */
        uint64_t now = mpr_mono_ns(),
                 due = (uint64_t)next.tv_sec * 1000000000u + (uint64_t)next.tv_nsec;
        if (now > due + S.period_ns) {
            next.tv_sec = (time_t)(now / 1000000000u);
            next.tv_nsec = (long)(now % 1000000000u);
        }
        pthread_mutex_lock(&S.lock);
        for (mpr_sampler *s = S.list; s; s = s->next) {
            pthread_mutex_lock(&s->lock);
            if (!s->paused)
                charge(s, true, false);
            pthread_mutex_unlock(&s->lock);
        }
        pthread_mutex_unlock(&S.lock);
    }
    return NULL;
}

void mpr_sample_setup(void)
{
    if (mpr_g.cfg.sample_s <= 0 || S.running)
        return;
    double period = mpr_g.cfg.sample_s * 1e9;
    S.period_ns = period < 1000 ? 1000 : (uint64_t)period;
    atomic_store(&S.stop, 0);
    S.list = NULL;
    /* created before the workers are bound to their cores (it inherits the process's mask) */
    if (pthread_create(&S.thread, NULL, sampler_main, NULL) != 0) {
        fprintf(stderr, "mprof: warning: no sampler thread; no category times "
                        "(MPROF_SAMPLE_US)\n");
        return;
    }
    S.running = true;
}

void mpr_sample_teardown(void)
{
    if (!S.running)
        return;
    atomic_store(&S.stop, 1);
    pthread_join(S.thread, NULL);
    S.running = false;
}

mpr_sampler *mpr_sample_start(mpr_pe *pe)
{
    if (!S.running)
        return NULL;
    mpr_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (pthread_getcpuclockid(pthread_self(), &s->clock) != 0 || clock_ns(s->clock) == 0) {
        static _Atomic(int) said;
        if (!atomic_exchange(&said, 1))
            fprintf(stderr, "mprof: warning: a PE thread's CPU clock cannot be read; no category "
                            "times for it (MPROF_SAMPLE_US)\n");
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->pe, pe);
    atomic_init(&s->switched_ns, 0);
    s->last_cpu_ns = clock_ns(s->clock);
    pthread_mutex_lock(&S.lock);
    s->next = S.list;
    S.list = s;
    pthread_mutex_unlock(&S.lock);
    return s;
}

void mpr_sample_switch_on(mpr_sampler *s, mpr_pe *pe, uint64_t now_ns)
{
    atomic_store_explicit(&s->switched_ns, pe ? now_ns : 0, memory_order_relaxed);
    atomic_store_explicit(&s->pe, pe, memory_order_release);
}

void mpr_sample_pause_on(mpr_sampler *s)
{
    pthread_mutex_lock(&s->lock);
    charge(s, false, true); /* the interval up to the wait is the current slot's */
    s->paused = true;
    pthread_mutex_unlock(&s->lock);
}

void mpr_sample_resume_on(mpr_sampler *s)
{
    pthread_mutex_lock(&s->lock);
    /* the wait's CPU time (the system call's) is the idle period's, which idle_cpu_s counts;
     * it is charged to no slot */
    s->last_cpu_ns = clock_ns(s->clock);
    s->paused = false;
    pthread_mutex_unlock(&s->lock);
}

void mpr_sample_stop(mpr_sampler *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    if (!s->paused)
        charge(s, false, true); /* the tail since the last sample */
    s->paused = true;
    atomic_store_explicit(&s->pe, NULL, memory_order_relaxed);
    pthread_mutex_unlock(&s->lock);
    /* off the list under the list's lock, which the sampler thread holds for a whole pass:
     * once it is off, no pass touches it */
    pthread_mutex_lock(&S.lock);
    for (mpr_sampler **p = &S.list; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&S.lock);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

#endif /* MPR_LATENCY */
