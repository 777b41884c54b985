/*
 * taskstealer.h -- the task stealer on the mprof runtime (Wen 1995, section 2.2.3):
 * per-PE task pools with priorities and hints, load balancing by stealing from neighbours
 * in a logical topology (or by random pushing), and termination detection.
 *
 * A task is a fixed-size byte string (task_size, chosen at creation) plus hints: a local
 * scheduling priority (higher runs first; equal priorities run in the order added), an
 * estimate of its work and of the penalty of migrating it.  A PE whose pool runs dry while
 * a remove waits asks its neighbours for tasks, one at a time; a victim gives away up to
 * half of its pool (at most steal_max tasks, and about half of its estimated work),
 * preferring tasks already migrated once and tasks with a low migration penalty.
 *
 * Termination: all pools empty, no task in progress (between ts_remove and ts_done) and no
 * task in flight.  Task migrations (stolen tasks and tasks added to another PE's pool) are
 * the mutators of the stealer's snapshot object.  When a PE has a waiting remove and none
 * of its neighbours has work, it asks PE 0 for a probe; PE 0 starts a round on every PE:
 * freeze (all migrations in flight land), barrier, sum-reduction of the PEs' pending work.
 * A zero sum ends the run: every waiting and future remove returns TS_TERMINATED.  A round
 * blocks migrations only while it lasts; adds, removes and tasks proceed meanwhile.
 *
 * Rules: tasks are added either in pe_main or by a task in progress (so that a PE with no
 * task in progress cannot gain work except by migration); every task obtained from
 * ts_remove is finished with ts_done.  ts_create and ts_destroy are collective (every PE, same
 * order; create in pe_main before any fiber touches the stealer).
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

typedef enum {
    TS_RING = 0,      /* steal from PE +-1 */
    TS_HYPERCUBE = 1, /* steal from PE xor 2^k (< P) */
    TS_COMPLETE = 2,  /* steal from any PE */
    TS_PUSH = 3       /* no stealing: ts_add(TS_ANY) pushes to a random pool */
} ts_topology;

typedef struct {
    int priority;   /* local scheduling priority: higher first */
    double work;    /* estimated computation (any unit; 0 = unknown) */
    double penalty; /* estimated cost of migrating the task */
} ts_hints;

typedef struct {
    size_t task_size;     /* bytes, 1 .. TS_MAX_TASK */
    ts_topology topology; /* default TS_RING */
    unsigned steal_max;   /* most tasks migrated by one steal (default 16) */
    uint64_t seed;        /* random pushing */
} ts_options;

#define TS_MAX_TASK 512
#define TS_ANY (-1) /* ts_add destination: the local pool, or a random one with TS_PUSH */

enum { TS_TERMINATED = 0, TS_GOT_TASK = 1 };

void ts_options_init(ts_options *o, size_t task_size);
/* "ring", "hypercube", "complete", "push"; -1 if unknown. */
int ts_topology_parse(const char *name);
const char *ts_topology_name(ts_topology t);

mp_err ts_create(const ts_options *o, ts_t *out);

/* Adds a task to pool `dest` (a PE, or TS_ANY).  MP_OK: it is in the local pool (or was
 * handed to a waiting remove); MP_WAIT: it is on its way to another pool (it migrates, or
 * waits for a termination round to end first); MP_FAIL: bad arguments.  hints may be NULL. */
mp_status ts_add(ts_t ts, int dest, const void *task, const ts_hints *hints);

/* Removes the local task with the highest priority into `task` (and `hints`, optional);
 * *result is TS_GOT_TASK, or TS_TERMINATED once the whole computation is over.  MP_OK: done
 * at once (done was incremented); MP_WAIT: the pool is empty, done is incremented when a
 * task arrives or termination is detected.  task, result and hints must stay valid. */
mp_status ts_remove(ts_t ts, void *task, ts_hints *hints, int *result, mp_counter_t done);

/* Declares that a task obtained from ts_remove on this PE has finished. */
void ts_done(ts_t ts);

/* Collective, split-phase (MP_WAIT): frees the stealer and its snapshot.  Call it on every
 * PE after termination (every ts_remove answered TS_TERMINATED and every task obtained was
 * finished with ts_done).  It first lets the last protocol messages land (see ts_balance.c);
 * the statistics stay in the run profile.  MP_FAIL before termination. */
mp_status ts_destroy(ts_t ts, mp_counter_t done);

bool ts_terminated(ts_t ts);
size_t ts_local_count(ts_t ts);

/* A worker on this PE: removes and runs tasks (one per fiber, so messages are served in
 * between) until termination, then increments `finished` (optional).  fn may add tasks. */
typedef void (*ts_task_fn)(ts_t ts, void *task, const ts_hints *hints, void *ctx);
mp_err ts_run(ts_t ts, ts_task_fn fn, void *ctx, mp_counter_t finished);

#ifdef __cplusplus
}
#endif
#endif
