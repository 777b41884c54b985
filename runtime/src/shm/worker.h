/*
 * shm/worker.h -- the shared-memory backend's workers and its per-PE state, which the backend's
 * files share: machine.c (the table, worker threads, channels, termination), mux.c (PEs that
 * share a worker) and group.c (their aggregation groups).  Nothing outside shm/ includes it:
 * the generic layer reaches this state only through the machine table (machine.h).
 */
#ifndef MPR_SHM_WORKER_H
#define MPR_SHM_WORKER_H

#include "../mpr.h"
#include "ctx.h"
#include "group.h"

#include <pthread.h>

typedef struct shm_worker shm_worker;
typedef struct shm_chan shm_chan; /* machine.c */

/* This backend's per-PE state (indexed by PE id), one cache line apart. */
typedef struct {
    _Alignas(64) shm_worker *w;
    mpr_pe *pe;
    /* multiplexed PEs only (touched by their worker thread alone; mux.c) */
    mpr_ctx ctx;
    void *stack_map; /* mmap'd guard page + stack */
    size_t stack_map_size;
    unsigned char *tls; /* this PE's copy of the executable's TLS block while switched out */
    uint64_t ran_ns;    /* monotonic time of its slices */
    bool parked;        /* in its idle loop, waiting for a message */
    bool finished;
    bool mux;             /* shares its worker with other PEs (machine.h shares_thread) */
    unsigned mux_periods; /* communication periods left before the busy PE yields */
    /* messages processed since the PE last went idle, not yet taken off `activity`, and
     * sends the PE has already added to it but not made (owner only; machine.c) */
    uint64_t processed;
    uint64_t credit;
} shm_pe;

struct shm_worker {
    _Alignas(64) _Atomic(uint32_t) wake_seq;
    _Atomic(int) sleeping;
    pthread_t thread;
    int id;
    int first, count;     /* PEs [first, first + count) */
    int cpu;              /* the OS CPU it is bound to, or -1 (affinity.h) */
    mpr_ctx ctx;          /* the worker's scheduler (its thread's own stack) */
    shm_pe *running;      /* PE switched in, NULL in the scheduler */
    shm_pe *resident;     /* PE whose TLS image is in the block */
    shm_group *group;     /* aggregation shared by its PEs (several PEs, aggregation on) */
    mpr_sampler *sampler; /* samples the running PE's category (several PEs; sample.c) */
    unsigned char *tls_block;
    size_t tls_size;
    /* the producer's side of its channels, by consumer PE (this worker's thread only) */
    shm_chan **out_msg, **out_ret;
    shm_chan *backlog;  /* channels holding a chain (ring full) */
    shm_chan *unfenced; /* channels published to without a check of `idle` after a fence */
    void *chunks;       /* memory of the channels it produces into (chan_new) */
    unsigned char *chunk_next;
    size_t chunk_left;
};

/* The backend's state for the current run (machine.c). */
typedef struct {
    shm_pe *pes;
    shm_worker *workers;
    int nworkers;
    /* the executable's TLS segment: its initial image and size (mux.c) */
    const void *tls_image;
    size_t tls_filesz, tls_memsz;
    size_t stack_size; /* of a multiplexed PE (MPROF_STACK_KB) */
} shm_state;
extern shm_state mpr_shm;

/* machine.c, for the worker's scheduler (mux.c) */
/* Has the PE a message: on a channel, or open for it in its worker's group? */
bool mpr_shm_inbox_pending(const shm_pe *sp);
/* The producer's deferred work (held chains, fenced notifications), on the worker's thread. */
void mpr_shm_catch_up(shm_worker *w);
/* Sleeps until a PE of the worker may have a message, the run ended, or timeout_s passed. */
void mpr_shm_worker_sleep(shm_worker *w, double timeout_s);

#endif
