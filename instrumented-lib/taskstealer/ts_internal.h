/*
 * ts_internal.h -- the task stealer's partition and the functions its source files share
 * (taskstealer.c: creation, the pool, adding, removing, destroy; ts_balance.c: work stealing;
 * ts_terminate.c: termination detection; ts_worker.c: the worker loop).  Internal to the
 * library.
 */
#ifndef MPROF_TS_INTERNAL_H
#define MPROF_TS_INTERNAL_H

#include "taskstealer.h"

#include "taskstealer_perf.h"

#include <string.h>

#define LIB_MODULE "taskstealer"
#include "lib_internal.h"

/* Tags a stealer's partition: a handle is a bare object id, and an id of another kind of
 * object must be refused before its partition is read as a stealer's. */
#define TS_MAGIC 0x54535452u /* "TSTR" */

typedef struct {
    ts_hints h;
    uint64_t seq;
    uint8_t migrated;
    _Alignas(16) unsigned char task[];
} entry;

/* A task on the wire: hints, migrated flag, bytes. */
typedef struct {
    ts_hints h;
    uint32_t migrated;
    uint32_t pad_;
    unsigned char task[];
} wire;

/* A steal request (ts_balance.c).  It carries what the victim needs to write into the thief's
 * receive buffer safely: the thief's task size, which must be the victim's, and how many tasks
 * the buffer holds (the thief's steal_max, a per-PE setting). */
typedef struct {
    ts_t id;
    int from;
    uint32_t task_size; /* the thief's */
    uint32_t cap;       /* tasks the thief's receive buffer holds */
    uint8_t starving;   /* the thief's pool is empty: give even a last task */
    uint8_t park;       /* refused by every victim: wait at this one until it has work */
    void *buf;          /* the thief's receive buffer */
} ts_steal_req;

typedef struct waiter {
    struct waiter *next;
    void *task;
    ts_hints *hints;
    int *result;
    mp_counter_t done;
} waiter;

typedef struct {
    uint32_t magic; /* TS_MAGIC while the partition lives */
    mp_obj_t id;
    ts_options o;
    int me, npes;
    size_t wire_size;
    /* pool */
    entry **heap;
    size_t n, cap;
    uint64_t seq;
    waiter *wq_head, *wq_tail;
    size_t nwait;
    uint64_t in_progress;
    /* stealing (ts_balance.c) */
    int *nbrs;
    int nnbrs;
    int last_victim;   /* the victim of the last steal request, avoided by the next one */
    unsigned refusals; /* refusals in a row since the last successful steal */
    bool steal_out;    /* one steal request out at a time: one receive buffer */
    bool req_starving; /* the request out was a starving one */
    unsigned char *recv_buf;
    /* backing off (ts_balance.c): a starving thief refused by every victim since the last
     * task reached this PE parks its next request at a victim, which answers it once it has
     * work (or at termination) */
    uint64_t sweep;       /* number of the current round of refusals */
    uint64_t *refused_in; /* per PE: the round in which it last refused a starving request */
    int nrefused;         /* victims that refused a starving request in this round */
    int park_at;          /* one of them that had a task in progress then, or -1 */
    ts_steal_req *parked; /* requests parked here (at most one per thief) */
    int nparked;
    uint64_t rng;
    /* termination detection (ts_terminate.c) */
    bool engaged;     /* this PE's work is accounted for by a parent (PE 0: always) */
    int parent;       /* whom to acknowledge when this PE falls idle (engaged, not PE 0) */
    uint64_t deficit; /* task messages sent and not yet acknowledged */
    bool terminated;
    /* ts_destroy: steal requests sent and answered (see ts_destroy) */
    uint64_t steals_sent;
    mp_counter_t steals_answered;
    mp_counter_t destroy_done;
    taskstealer_stats_t *st;
} ts_part;

/* The partition of `ts` on this PE, or NULL after a report naming `fn` when it is no live
 * task stealer here (for the calls that can return an error). */
static inline ts_part *stealer_or_null(ts_t ts, const char *fn)
{
    return lib_part_checked(ts, TS_MAGIC, "task stealer", fn);
}

/* The same for the calls that cannot return an error, and the library's own fibers: misuse
 * ends the run. */
static inline ts_part *part_of(ts_t ts) { return lib_part_of_kind(ts, TS_MAGIC, "task stealer"); }

/* taskstealer.c */
entry *tsi_heap_take(ts_part *p, size_t i);
void tsi_heap_rebuild(ts_part *p);
void tsi_pool_push(ts_part *p, const ts_hints *h, const unsigned char *task, bool migrated);
void tsi_wake_terminated(ts_part *p);
uint64_t tsi_random(ts_part *p);

/* ts_balance.c */
void tsi_hunt(ts_part *p); /* the pool is low (or empty with a remove waiting): steal */
void tsi_hunt_after_remove(ts_part *p);
void tsi_serve_parked(ts_part *p); /* the pool has tasks: serve the parked requests */
void tsi_release_parked(ts_part *p, bool released); /* refuse them (released: this PE fell
                                                     * idle, else termination) */
_Noreturn void tsi_task_size_differs(const ts_part *p, int from, uint32_t size);

/* A message that carries tasks, or a steal request, came from PE `from`, whose stealer was
 * created with `size`-byte tasks: reading them with this PE's size would overrun (or garble)
 * them, so a difference ends the run, naming both. */
static inline void tsi_check_task_size(const ts_part *p, int from, uint32_t size)
{
    if (__builtin_expect(size != p->o.task_size, 0))
        tsi_task_size_differs(p, from, size);
}

/* Something changed for a thief that backs off (a task reached this PE, or the victim it
 * waited at fell idle): a new round of refusals begins. */
static inline void tsi_new_round(ts_part *p)
{
    p->sweep++;
    p->nrefused = 0;
    p->park_at = -1;
}

/* Tasks entered the pool (not all handed to waiting removes): requests parked here are
 * served now.  One test on the paths that add tasks. */
static inline void tsi_pool_grew(ts_part *p)
{
    if (p->nparked && p->n)
        tsi_serve_parked(p);
}

/* ts_terminate.c */
void tsi_term_init(ts_part *p);
void tsi_task_sent(ts_part *p);               /* a message carrying tasks leaves this PE */
void tsi_task_received(ts_part *p, int from); /* one arrived from PE `from` */
void tsi_check_idle(ts_part *p);              /* after anything that may leave the PE idle */

#endif
