/*
 * ts_internal.h -- the task stealer's partition and the functions its two source files share
 * (taskstealer.c: creation, the pool, adding, removing, ts_run, destroy; ts_balance.c:
 * stealing and termination detection).  Internal to the library.
 */
#ifndef MPROF_TS_INTERNAL_H
#define MPROF_TS_INTERNAL_H

#include "taskstealer.h"

#include "taskstealer_perf.h"

#include <string.h>

#define LIB_MODULE "taskstealer"
#include "lib_internal.h"

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

typedef struct waiter {
    struct waiter *next;
    void *task;
    ts_hints *hints;
    int *result;
    mp_counter_t done;
} waiter;

typedef struct {
    mp_obj_t id;
    ts_options o;
    mp_snapshot_t snap;
    int me, npes;
    size_t wire_size;
    /* pool */
    entry **heap;
    size_t n, cap;
    uint64_t seq;
    waiter *wq_head, *wq_tail;
    size_t nwait;
    uint64_t in_progress;
    uint64_t pending; /* remote adds parked by a termination round */
    /* hunting */
    int *nbrs;
    int nnbrs, next_nbr, fails;
    bool steal_out, probe_req;
    unsigned char *recv_buf;
    /* termination rounds */
    bool round_active, round_queued, terminated;
    bool coord_active, coord_pending; /* PE 0 only */
    mp_counter_t round_ctr;
    uint64_t round_target;
    double busy_sum;
    uint64_t rng;
    /* ts_destroy: unsolicited messages sent and answered or received (see ts_destroy) */
    uint64_t steals_sent, probes_sent;
    mp_counter_t steals_answered, probes_received;
    mp_counter_t destroy_ctr;
    double probes_total;
    mp_counter_t destroy_done;
    taskstealer_stats_t *st;
} ts_part;

static inline ts_part *part_of(ts_t ts) { return lib_part(ts); }

/* taskstealer.c */
entry *tsi_heap_take(ts_part *p, size_t i);
void tsi_pool_push(ts_part *p, const ts_hints *h, const unsigned char *task, bool migrated);
void tsi_wake_terminated(ts_part *p);

/* ts_balance.c */
void tsi_hunt(ts_part *p); /* a remove waits and the pool is empty: look for work */

#endif
