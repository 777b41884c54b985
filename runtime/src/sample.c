/*
 * sample.c -- measured CPU time per access category, by sampling each PE thread's CPU clock
 * (mpr_sample.h says what is measured and why by sampling).
 *
 * The signal is SIGPROF, the profiling signal, sent by a POSIX timer per thread
 * (SIGEV_THREAD_ID on CLOCK_THREAD_CPUTIME_ID): a thread that sleeps or is preempted is not
 * sampled, so samples are in proportion to the CPU time the run profile reports.  The timer
 * carries the thread's mpr_sampler in its signal value, so the handler needs no thread-local
 * storage (a worker that multiplexes PEs copies the TLS block of each PE it switches to, and a
 * signal in the middle of the copy would see half of one and half of another).  The handler
 * reads the PE's state with plain loads: it runs on the PE's own thread, between two of its
 * instructions, and adds one to a counter only that thread's handler writes.
 * A program that handles SIGPROF itself (a profiler of its own) keeps it: sampling is then off,
 * and a warning says so.
 */
#define _GNU_SOURCE
#include "mpr.h"
#include "mpr_sample.h"

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
};

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

static void on_sample(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)uc;
    if (info->si_code != SI_TIMER)
        return; /* SIGPROF from elsewhere (kill): not a sample */
    mpr_sampler *s = info->si_value.sival_ptr;
    mpr_pe *pe = s ? atomic_load_explicit(&s->pe, memory_order_relaxed) : NULL;
    if (pe)
        pe->samples[slot_of(pe)]++;
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
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &s->timer) != 0) {
        free(s); /* e.g. the process's limit of pending signals: this thread goes unsampled */
        return NULL;
    }
    double period = mpr_g.cfg.sample_s;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)period;
    its.it_interval.tv_nsec = (long)((period - (double)(time_t)period) * 1e9);
    if (its.it_interval.tv_sec == 0 && its.it_interval.tv_nsec < 1000)
        its.it_interval.tv_nsec = 1000;
    its.it_value = its.it_interval;
    if (timer_settime(s->timer, 0, &its, NULL) != 0) {
        timer_delete(s->timer);
        free(s);
        return NULL;
    }
    return s;
}

void mpr_sample_switch(mpr_sampler *s, mpr_pe *pe)
{
    if (s)
        atomic_store_explicit(&s->pe, pe, memory_order_relaxed);
}

void mpr_sample_stop(mpr_sampler *s)
{
    if (!s)
        return;
    atomic_store_explicit(&s->pe, NULL, memory_order_relaxed);
    /* On this thread: a signal the timer had pending for it is delivered when the call
     * returns, before the free (and finds no PE). */
    timer_delete(s->timer);
    free(s);
}

#endif /* MPR_LATENCY */
