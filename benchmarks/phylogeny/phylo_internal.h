/*
 * phylo_internal.h -- what the parts of the Phylogeny program share (see phylogeny.c for the
 * algorithm): the run's parameters and characters (read-only during the run), each PE's
 * state, and the functions of
 *   phylo_characters.c  the input, the compatibility test and the sequential reference;
 *   phylo_search.c      the compute thread: tasks on the task stealer, pruning, generation;
 *   phylo_combine.c     the periodic combine of the failure stores.
 */
#ifndef PHYLO_INTERNAL_H
#define PHYLO_INTERNAL_H

#include "bench_util.h"
#include "phylo_store.h"
#include "phylogeny_perf.h"
#include "taskstealer.h"

#define MAX_SPECIES 32
#define MAX_CHARS 64
#define MAX_STEPS 16 /* butterfly steps: P <= 2^16 */
#define CHUNK_MASKS 120

typedef struct {
    uint64_t species, chars, seed;
    double noise;
    ts_topology topology;
    bool push, check, fault, verbose;
    bool every; /* --generate=all: every one-character superset (else above the last) */
} phylo_params;

extern phylo_params prm;
extern uint32_t charmask[MAX_CHARS]; /* species having character c; replicated */

typedef struct {
    const uint64_t *subset; /* on the creator */
    int32_t creator;
    int32_t pad_;
} task_ref;

typedef struct chunk {
    struct chunk *next;
    size_t used;
    uint64_t subset[512];
} chunk;

typedef struct {
    uint32_t round, step, last, n;
    uint64_t mask[CHUNK_MASKS];
} comb_msg;

typedef struct {
    ts_t ts;
    mp_obj_t obj, comb_obj;
    int me, npes, nsteps;
    phylogeny_stats_t *st;
    store success, failure;
    chunk *arena;
    /* the compute thread */
    mp_counter_t finished;
    mp_counter_t resumed; /* the worker's, while it pauses for a combination */
    task_ref task;
    uint64_t x;
    mp_counter_t fetched; /* the worker's, while a fetch is out */
    bool paused;          /* waiting for a combination to complete */
    /* combining */
    bool combining;   /* a round is under way (barrier or exchange) */
    bool exchanging;  /* its exchange: compute pauses */
    uint32_t started; /* rounds started here */
    uint32_t done_rounds;
    mp_counter_t barrier, rounds_done, step_in[MAX_STEPS];
    u64vec staged[MAX_STEPS];
    int step;
    double tot[5]; /* tasks, tests, fetches, combine entries received, successes explored here
                    * (for the run's totals) */
    /* PE 0: every success */
    maskset all;
    mp_counter_t collected;
} pe_state;

extern _Thread_local pe_state S;

void phylo_die(const char *what);

/* phylo_characters.c */
void make_characters(void); /* charmask from prm (seeded) */
/* The perfect-phylogeny test of subset x (see phylo_characters.c). */
bool compatible(uint64_t x, uint64_t *pairs, uint64_t *witness);
int cmp_u64(const void *a, const void *b);
u64vec sequential_maximal(void); /* every maximal compatible subset, sorted */

/* phylo_search.c */
void add_task(uint64_t y); /* a task for subset y, created here */
void search_start(void);   /* the compute thread: the task stealer's worker loop */

/* phylo_combine.c */
void comb_start(void); /* starts the next combine round on this PE */
/* Sends masks v[0..n) to PE pe as invocations of fn, CHUNK_MASKS per message; the last
 * message has last = 1. */
void send_masks(int pe, mp_fiber_fn fn, const uint64_t *v, size_t n, uint32_t round, uint32_t step);

#endif
