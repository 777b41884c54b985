/*
 * taskstealer.h -- the task stealer on the mprof runtime (Wen 1995, section 2.2.3):
 * per-PE task pools with priorities and hints, randomized work stealing (or random pushing),
 * and termination detection.
 *
 * A task is a fixed-size byte string (task_size, chosen at creation) plus hints: a local
 * scheduling priority (higher runs first; equal priorities run newest first), an estimate of
 * its work and of the penalty of migrating it.  A PE whose pool holds fewer than low_water
 * tasks asks a random victim for work (retrying at once with another victim while its pool
 * is empty and a remove waits, until every victim has refused since a task last reached it:
 * then it waits at one victim, which answers once it has work, falls idle or terminates); the
 * victim gives its oldest, lowest-priority tasks, about half of its estimated work (at most
 * steal_max tasks, the thief's and its own).
 *
 * Termination: all pools empty, no task in progress (between ts_remove and ts_done) and no
 * task in flight.  Detected by acknowledging every message that carries tasks
 * (Dijkstra-Scholten, see ts_terminate.c): no PE stops to take part in a round; PE 0 announces
 * termination once, and every waiting and future remove returns TS_TERMINATED.
 *
 * Rules: tasks are added either in pe_main or by a task in progress (so that a PE with no
 * task in progress cannot gain work except by migration); every task obtained from
 * ts_remove is finished with ts_done (a task never finished keeps termination from being
 * detected: the waiting removes never return, the runtime reports the hang, and the stealer
 * names the unfinished tasks at the end of the run).  ts_create and ts_destroy are collective
 * (every PE, same order; create in pe_main before any fiber touches the stealer).
 *
 * Options on every PE: task_size must be the same (messages carry it, and a PE that receives
 * tasks or a steal request of another size ends the run naming both); topology, steal_max,
 * low_water and seed are this PE's own and may differ (whom this PE steals from, how many
 * tasks it takes per steal -- the size of its receive buffer, which the victim honours --,
 * when it steals, its random draws).
 */
#ifndef MPROF_TASKSTEALER_H
#define MPROF_TASKSTEALER_H

#include "mp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef mp_obj_t ts_t;

/* Whom a PE may steal from; the victim is drawn at random among them. */
typedef enum {
    TS_RING = 0,      /* PE +-1 (for the studies) */
    TS_HYPERCUBE = 1, /* PE xor 2^k (< P) (for the studies) */
    TS_COMPLETE = 2,  /* any other PE: the default */
    TS_PUSH = 3       /* no stealing: ts_add(TS_ANY) pushes to a random pool */
} ts_topology;

typedef struct {
    int priority;   /* local scheduling priority: higher first */
    double work;    /* estimated computation (any unit; 0 = unknown) */
    double penalty; /* estimated cost of migrating the task */
} ts_hints;

/* task_size must be the same on every PE; the others may differ between PEs (see above). */
typedef struct {
    size_t task_size;     /* bytes, 1 .. TS_MAX_TASK: the same on every PE */
    ts_topology topology; /* default TS_COMPLETE (this PE's victims, or pushing) */
    unsigned steal_max;   /* most tasks this PE takes by one steal, and gives to one thief
                           * (default 128; fewer if one message cannot hold them) */
    unsigned low_water;   /* steal while the pool holds fewer tasks (default 2) */
    uint64_t seed;        /* random pushing */
} ts_options;

#define TS_MAX_TASK 512
#define TS_ANY (-1) /* ts_add destination: the local pool, or a random one with TS_PUSH */

enum { TS_TERMINATED = 0, TS_GOT_TASK = 1 };

void ts_options_init(ts_options *o, size_t task_size);
/* "ring", "hypercube", "complete", "push"; -1 if unknown. */
int ts_topology_parse(const char *name);
const char *ts_topology_name(ts_topology t);

/* Collective, in pe_main.  MP_ERR_INVALID_ARG for options it refuses, MP_ERR_BAD_STATE outside
 * a running PE (before or after mp_main: nothing is allocated), each with a line on stderr. */
mp_err ts_create(const ts_options *o, ts_t *out);

/* Adds a task to pool `dest` (a PE, or TS_ANY).  MP_OK: it is in the local pool (or was
 * handed to a waiting remove); MP_WAIT: it is on its way to another pool; MP_FAIL (reported
 * on stderr, nothing added): bad arguments, a handle that is no live task stealer here, or a
 * stealer that has terminated on this PE (ts_terminated: no task added now could ever run).
 * hints may be NULL. */
mp_status ts_add(ts_t ts, int dest, const void *task, const ts_hints *hints);

/* Removes the local task with the highest priority into `task` (and `hints`, optional);
 * *result is TS_GOT_TASK, or TS_TERMINATED once the whole computation is over.  MP_OK: done
 * at once (done was incremented); MP_WAIT: the pool is empty, done is incremented when a
 * task arrives or termination is detected.  task, result and hints must stay valid. */
mp_status ts_remove(ts_t ts, void *task, ts_hints *hints, int *result, mp_counter_t done);

/* Declares that a task obtained from ts_remove on this PE has finished. */
void ts_done(ts_t ts);

/* Collective, split-phase (MP_WAIT): frees the stealer.  Call it on every PE after
 * termination (every ts_remove answered TS_TERMINATED and every task obtained was finished
 * with ts_done).  It first lets the last steal requests be answered (see taskstealer.c); the
 * statistics stay in the run profile.  MP_FAIL before termination. */
mp_status ts_destroy(ts_t ts, mp_counter_t done);

/* These two and ts_done cannot return an error: a handle that is no live task stealer on this
 * PE ends the run with a message.  The calls that return an mp_err or mp_status refuse it
 * (MP_ERR_INVALID_ARG / MP_FAIL, reported on stderr). */
bool ts_terminated(ts_t ts);
size_t ts_local_count(ts_t ts);

/* A worker on this PE: removes and runs tasks (one per fiber, so messages are served in
 * between) until termination, then increments `finished` (optional).  fn may add tasks. */
typedef void (*ts_task_fn)(ts_t ts, void *task, const ts_hints *hints, void *ctx);
mp_err ts_run(ts_t ts, ts_task_fn fn, void *ctx, mp_counter_t finished);

/* The worker loop with the applications' split-phase steps (ts_worker.c).  Only run is
 * required; each hook may wait by returning MP_WAIT after arranging that its counter be
 * incremented once, and the worker goes on in a new fiber that first calls resumed. */
enum { TS_RESUME_PAUSE = 0, TS_RESUME_PREPARE = 1 };
typedef struct {
    ts_task_fn run; /* runs a task; may add tasks */
    /* before each remove: MP_OK, or MP_WAIT to pause until `resume` is incremented */
    mp_status (*before_remove)(ts_t ts, void *ctx, mp_counter_t resume);
    /* a task was removed: MP_OK to run it now, or MP_WAIT while its data is fetched */
    mp_status (*prepare)(ts_t ts, void *task, void *ctx, mp_counter_t ready);
    /* first in the fiber that goes on after a wait (why: TS_RESUME_*), e.g. to declare the
     * application's access */
    void (*resumed)(void *ctx, int why);
} ts_worker_ops;
mp_err ts_run_worker(ts_t ts, const ts_worker_ops *ops, void *ctx, mp_counter_t finished);

#ifdef __cplusplus
}
#endif
#endif
