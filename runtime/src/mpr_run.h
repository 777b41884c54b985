/*
 * mpr_run.h -- the run: how it stands, the global (shared, read-mostly) run state, and what watches
 * it (hang report, progress watchdog).
 */
#ifndef MPR_RUN_H
#define MPR_RUN_H

#include "mpr_base.h"

#include <stdatomic.h>
#include <stdio.h>

/* How the run stands.  pe.c owns the transitions: a backend or the idle loop reports the end
 * with mpr_run_end(), and the first report wins. */
typedef enum {
    MPR_RUN_RUNNING = 0,
    MPR_RUN_QUIESCENT,    /* nothing runnable anywhere, nothing in flight (waiters: a hang) */
    MPR_RUN_IDLE_TIMEOUT, /* every PE idle past MPROF_IDLE_TIMEOUT without quiescence: a hang */
} mpr_run_state;

/* global run state (shared, read-mostly) */
typedef struct {
    mp_config cfg;
    mpr_pe **pes; /* indexed by PE; only this process's PEs are non-NULL (MPI: one) */
    int npes;
    int local_first; /* this process hosts PEs [local_first, local_first + local_count) */
    int local_count;
    mp_pe_main_fn pe_main;
    int argc;
    char **argv;
    _Atomic(int) state; /* mpr_run_state */
    double t_start;
    char started_at[32];
    int pinned_workers; /* worker threads the backend bound to a unit of their own (profile) */
    int workers;  /* worker threads the PEs run on; 0: a thread (process) per PE (mpr_workers) */
    int shm_ring; /* slots of a message channel's ring; 0 where the backend has no rings */
    bool trace_partial;        /* MPROF_TRACE is set in some processes only (the backend's agree) */
    bool carriers;             /* MPROF_CARRIERS: runs of arrived FIFO records go in carriers */
    uint64_t feed_ns;          /* MPROF_FEED_US: the least time between two feeds of a waiting PE */
    _Atomic(bool) hook_misuse; /* an mp_at_pe_end hook started work (pe.c): the run fails */
} mpr_run;

extern mpr_run mpr_g;

/* The worker threads the run's PEs ran on (the profile's and the trace's `workers`): a backend
 * without workers of its own (MPI) runs each PE on a thread, in a process, of its own. */
static inline int mpr_workers(void) { return mpr_g.workers ? mpr_g.workers : mpr_g.npes; }

/* The settings in force that change what a run costs, in one list for the run profile's
 * `settings` (profile.c) and the trace's "settings" metric class (trace.c), so that a setting
 * recorded by one is recorded by the other.  Those given in microseconds are doubles, the
 * others counts. */
enum { MPR_NSETTINGS = 11 };
typedef struct {
    const char *name;
    bool is_double;
    union {
        double d;
        uint64_t u;
    } value;
} mpr_setting;
void mpr_settings(mpr_setting out[MPR_NSETTINGS]); /* pe.c */

/* pe.c: ends the run for the reason given unless it has ended already; returns whether this
 * call ended it.  The caller wakes the PEs (machine layer). */
bool mpr_run_end(mpr_run_state why);
static inline bool mpr_run_over(void)
{
    return atomic_load_explicit(&mpr_g.state, memory_order_acquire) != MPR_RUN_RUNNING;
}

/* hang.c */
bool mpr_hang_report(FILE *out);

/* watchdog.c: the progress watchdog (MPROF_PROGRESS_TIMEOUT) and the SIGQUIT state dump run
 * in a helper thread of each process for the duration of the PEs' run. */
void mpr_watchdog_start(void);
void mpr_watchdog_stop(void);

#endif /* MPR_RUN_H */
