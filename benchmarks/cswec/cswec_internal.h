/*
 * cswec_internal.h -- what the two halves of CSWEC share: the run's parameters and circuit
 * (read-only during the run), each PE's state, and the node and recovery threads
 * (cswec_threads.c) that cswec.c starts.
 */
#ifndef CSWEC_INTERNAL_H
#define CSWEC_INTERNAL_H

#include "bench_util.h"
#include "cswec_netlist.h"
#include "cswec_perf.h"
#include "eventgraph.h"

typedef struct {
    const char *netlist;
    uint64_t capacity, vectors, seed, null_steps;
    bool block, check, fault, verbose;
    bool preempt; /* --sched=preempt: the event graph's fibers on the preemptive scheduler */
} cswec_params;

extern cswec_params prm;
extern cs_model M; /* read-only during the run */
extern eg_edge_def *edges;
extern uint32_t nedges;
extern uint8_t *drives_po; /* per node: drives a primary output */

enum { RUN = 0, BLK_INPUT = 1, BLK_SEND = 2, DONE = 3 };

typedef struct {
    cs_sub s;
    uint32_t node;
    int state;
    bool fin_sent, src_init;
    double *known; /* per slot */
    const uint32_t *in_edge;
    double want;      /* BLK_INPUT: the step end it waits for */
    double queued_t;  /* BLK_SEND: the element's time */
    uint32_t nfin;    /* slots whose FIN was consumed */
    uint32_t nvalid;  /* slots whose value at t = 0 arrived (an event, not a bound) */
    double announced; /* time of the last element sent */
    uint64_t src_cursor, since;
    mp_counter_t wake, sent;
    uint64_t consumed, sent_target;
    uint32_t nremote; /* distinct remote PEs among the sinks */
    uint32_t outdeg;
    cs_wave po; /* events sent, if it drives a primary output */
} node_state;

typedef struct {
    eg_graph *g;
    mp_obj_t obj;
    int me, npes;
    int *part; /* node -> PE */
    cswec_stats_t *st;
    node_state *nodes; /* local nodes */
    uint32_t nlocal, nactive;
    /* recovery */
    bool recovering, finished, checking;
    uint64_t rounds;
    double lb, gmin;
    mp_counter_t rbar, rfz, rred, done_c;
    double tot[5]; /* events, nulls, steps, event messages on edges, physical messages */
    /* PE 0: the primary outputs' events */
    cs_wave *got;
    mp_counter_t collected;
} pe_state;

extern _Thread_local pe_state S;

void cswec_die(const char *what);
/* The thread of local node S.nodes[*(uint32_t *)args] (a fiber chain). */
void cswec_node_run(void *args);
/* A recovery round now (a PE without nodes joins every round from the start). */
void cswec_start_round(void);

#endif
