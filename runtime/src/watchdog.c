/*
 * watchdog.c -- a helper thread per process that watches the local PEs while they run:
 *
 *   progress  a PE that stays in one fiber (or in pe_main) without returning to the runtime
 *             for MPROF_PROGRESS_TIMEOUT seconds is reported -- PE, fiber function, access
 *             category, how long -- with the state of every PE, and the run ends with status
 *             2 (the stuck code cannot be stopped any other way);
 *   SIGQUIT   prints every local PE's state (where it is, running fiber, queue lengths,
 *             waiting fibers, counters awaited) and the run goes on, like a dump of all
 *             execution streams.
 *
 * The PEs do nothing for the watchdog on their hot paths: it samples fields they keep anyway
 * (the executing fiber, the number of communication periods, which grows every
 * MPROF_FLUSH_FIBERS dispatches even while a continuation chain keeps one fiber address, and
 * the idle total) plus `where`, which they set on cold paths.  Those
 * reads race with the PE on purpose: a dump is a snapshot of a running machine, and counts
 * may be off by what changed meanwhile.  Memory stays valid (fiber slabs and counters are
 * only freed after the run) and every list walk is bounded.  The functions that read PE state
 * are excluded from TSan instrumentation (no_sanitize("thread")) for that reason.
 */
#define _GNU_SOURCE
#include "mpr.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__)
#define MPR_RACY __attribute__((no_sanitize("thread"), noinline))
#else
#define MPR_RACY
#endif

#define WALK_MAX 1000000 /* list entries a dump follows at most */

typedef struct {
    mpr_fiber *current;
    uint64_t periods;
    uint64_t c_total;
    uint8_t where;
    double since; /* when this signature was first seen */
} sample;

static struct {
    pthread_t thread;
    sem_t wake;
    _Atomic(int) stop;
    _Atomic(int) dump;
    bool running;
    struct sigaction old_quit;
    sample *samples; /* per local PE */
} W;

static void on_sigquit(int sig)
{
    (void)sig;
    atomic_store(&W.dump, 1);
    sem_post(&W.wake); /* async-signal-safe */
}

static const char *where_name(int where)
{
    switch (where) {
    case MPR_PE_STARTING:
        return "not started";
    case MPR_PE_RUNNING:
        return "running";
    case MPR_PE_IDLE:
        return "idle";
    case MPR_PE_SWITCHED_OUT:
        return "switched out (its worker runs another PE)";
    case MPR_PE_FINISHED:
        return "finished";
    }
    return "?";
}

/* The entries of a queue, and of them the carriers of arrived records (mpr_carrier.h), whose
 * records are not counted: they are read from the buffer, which the PE may be giving back
 * while this thread looks. */
static MPR_RACY uint64_t queue_len(const mpr_queue *q, uint64_t *carriers)
{
    uint64_t n = 0;
    for (const mpr_fiber *f = q->head; f && n < WALK_MAX; f = f->next, n++)
        *carriers += mpr_is_carrier(f);
    return n;
}

/* Names what a running PE executes: "fiber F (category C)" or "pe_main". */
static MPR_RACY void running_what(const mpr_pe *pe, char *buf, size_t len)
{
    mpr_fiber *f = pe->current;
    if (!f) {
        snprintf(buf, len, "pe_main");
        return;
    }
    char name[128];
    snprintf(buf, len, "fiber %s (category %s)", mpr_fn_name(f->fn, name, sizeof name),
             mpr_access_name(pe->spawn_tag.creator));
}

static MPR_RACY void dump_pe(FILE *out, const mpr_pe *pe, const sample *s, double now)
{
    char what[256];
    fprintf(out, "mprof: state: PE %d: %s", pe->id, where_name(pe->where));
    if (pe->where == MPR_PE_RUNNING) {
        running_what(pe, what, sizeof what);
        fprintf(out, " %s, unchanged for at least %.2f s", what, now - s->since);
    }
    uint64_t held = 0;
    for (int k = 0; k + MP_SCHED_PREEMPT + 1 < pe->nsched && k < MPR_MAX_SCHED; k++)
        held += pe->custom[k].held;
    uint64_t carriers = 0;
    uint64_t urgent = queue_len(&pe->queue[MP_SCHED_URGENT], &carriers);
    uint64_t fifo = queue_len(&pe->queue[MP_SCHED_FIFO], &carriers);
    fprintf(out, "; queues: urgent %" PRIu64 ", fifo %" PRIu64, urgent, fifo);
    if (carriers)
        fprintf(out, " (%" PRIu64 " of them runs of arrived records)", carriers);
    fprintf(out, ", custom %" PRIu64 "\n", held);
    uint64_t walked = 0, counters = 0, waiting = 0;
    for (mpr_counter *c = pe->counters; c && walked < WALK_MAX; c = c->next, walked++) {
        uint64_t n = 0, lowest = UINT64_MAX;
        for (mpr_fiber *f = c->waiters; f && n < WALK_MAX; f = f->next, n++)
            if (f->wait_value < lowest)
                lowest = f->wait_value;
        if (!n)
            continue;
        counters++;
        waiting += n;
        if (counters <= 8)
            fprintf(out,
                    "  counter %p: value %" PRIu64 ", %" PRIu64
                    " fibers wait, the first for %" PRIu64 "\n",
                    (void *)c, c->value, n, lowest);
    }
    if (counters > 8)
        fprintf(out, "  ... %" PRIu64 " counters with waiters in all\n", counters);
    fprintf(out, "  %" PRIu64 " fibers wait on %" PRIu64 " counters", waiting, counters);
    mpr_counter *b = pe->blocked_on;
    if (b)
        fprintf(out,
                "; pe_main blocked in mp_block_until on counter %p for %" PRIu64 " (is %" PRIu64
                ")",
                (void *)b, pe->blocked_value, b->value);
    fputc('\n', out);
}

static void dump_all(FILE *out, double now)
{
    fprintf(out, "mprof: state of %d PE(s) at %.2f s into the run (%s backend):\n",
            mpr_g.local_count, now - mpr_g.t_start, mpr_m->name);
    for (int i = 0; i < mpr_g.local_count; i++)
        dump_pe(out, mpr_g.pes[mpr_g.local_first + i], &W.samples[i], now);
    fflush(out);
}

/* Updates the PEs' samples; returns the index of a PE stuck past the timeout, or -1. */
static MPR_RACY int check_progress(double now, double timeout)
{
    int stuck = -1;
    for (int i = 0; i < mpr_g.local_count; i++) {
        const mpr_pe *pe = mpr_g.pes[mpr_g.local_first + i];
        sample *s = &W.samples[i], n = {pe->current, pe->periods, pe->c_total, pe->where, 0};
        if (n.current != s->current || n.periods != s->periods || n.c_total != s->c_total ||
            n.where != s->where) {
            n.since = now;
            *s = n;
        } else if (timeout > 0 && n.where == MPR_PE_RUNNING && now - s->since > timeout &&
                   stuck < 0) {
            stuck = i;
        }
    }
    return stuck;
}

static MPR_RACY void report_stuck(int i, double now)
{
    const mpr_pe *pe = mpr_g.pes[mpr_g.local_first + i];
    char what[256];
    running_what(pe, what, sizeof what);
    fprintf(stderr,
            "mprof: hang: PE %d: %s has run for %.2f s without returning to the runtime "
            "(MPROF_PROGRESS_TIMEOUT=%g); ending the run\n",
            pe->id, what, now - W.samples[i].since, mpr_g.cfg.progress_timeout_s);
    dump_all(stderr, now);
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    double timeout = mpr_g.cfg.progress_timeout_s;
    double period = timeout > 0 ? timeout / 4 : 0.25;
    if (period > 0.25)
        period = 0.25;
    if (period < 0.005)
        period = 0.005;
    while (!atomic_load(&W.stop)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_nsec * 1e-9 + period;
        ts.tv_sec += (time_t)t;
        ts.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
        while (sem_timedwait(&W.wake, &ts) != 0 && errno == EINTR)
            ;
        if (atomic_load(&W.stop))
            break;
        double now = mp_wtime();
        int stuck = check_progress(now, timeout);
        if (atomic_exchange(&W.dump, 0))
            dump_all(stderr, now);
        if (stuck >= 0) {
            report_stuck(stuck, now);
            _exit(2); /* the stuck fiber cannot be interrupted: end the process */
        }
    }
    return NULL;
}

void mpr_watchdog_start(void)
{
    W.samples = calloc((size_t)mpr_g.local_count, sizeof *W.samples);
    if (!W.samples)
        mpr_fatal("out of memory");
    double now = mp_wtime();
    for (int i = 0; i < mpr_g.local_count; i++)
        W.samples[i].since = now;
    atomic_store(&W.stop, 0);
    atomic_store(&W.dump, 0);
    sem_init(&W.wake, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigquit;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGQUIT, &sa, &W.old_quit);
    /* the helper thread takes no signals: SIGQUIT interrupts a PE's thread, which goes on */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    W.running = pthread_create(&W.thread, NULL, watchdog_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!W.running)
        fprintf(stderr, "mprof: warning: no progress watchdog (cannot start its thread)\n");
}

void mpr_watchdog_stop(void)
{
    atomic_store(&W.stop, 1);
    sem_post(&W.wake);
    if (W.running)
        pthread_join(W.thread, NULL);
    W.running = false;
    sigaction(SIGQUIT, &W.old_quit, NULL);
    sem_destroy(&W.wake);
    free(W.samples);
    W.samples = NULL;
}
