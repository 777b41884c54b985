/*
 * eventgraph.h -- the event graph (Wen 1995, section 2.2.4) on the mprof fiber runtime.
 *
 * A directed graph whose edges are bounded FIFO channels of fixed-size elements ("event
 * messages").  Nodes are placed on PEs by a user partitioner.  A node *sends* by multicasting
 * one element along all of its out-edges; the send suspends (split-phase, MP_WAIT) while any
 * of those edges is full.  A node *receives* by examining / removing the elements of each of
 * its in-edges in order, and can *wait* (split-phase) until elements arrive.  Removing
 * elements releases space back to the sender (flow control).  Freeze / unfreeze use the
 * runtime's snapshot object: after a freeze every element sent before it has arrived.
 *
 * Every call that takes a node or an in-edge must run on the PE that owns the node (the
 * sink's PE for an in-edge).  All calls must be made from a running PE (pe_main or a fiber);
 * the split-phase ones (send, wait, freeze) from a fiber or from pe_main with
 * mp_block_until.  The graph is instrumented with the hooks generated from graph.perf:
 * statistics P, EltSize, EdgeCap, Node, Edge, NOp, NBlock, NMsg, EnqSize, DeqSize, and the
 * access categories graph:ENQ and graph:DEQ, run on the FIFO or the preemptive scheduler
 * (eg_sched_mode).  See docs/eventgraph.md.
 */
#ifndef EVENTGRAPH_H
#define EVENTGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "mp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eg_graph eg_graph; /* this PE's partition of a graph */

/* Partitioner: the PE of `node`, in [0, npes).  Must give the same answer on every PE. */
typedef int (*eg_partition_fn)(uint32_t node, int npes, void *ctx);

/* When a waiting receiver is resumed (Wen 1995, section 2.2.4.1). */
typedef enum {
    EG_WAKE_EMPTY = 0, /* on arrival at an in-edge that was empty (fewer wake-ups) */
    EG_WAKE_ANY = 1    /* on every arrival at any in-edge */
} eg_wake_mode;

/* How the graph's own fibers -- its accesses graph:ENQ and graph:DEQ: the arrival of an
 * element or of a release message, the wake-up of a waiting receiver, the shipping of
 * suspended sends -- are scheduled (Wen 1995, sections 3.2.4 and 5.1.5). */
typedef enum {
    EG_SCHED_FIFO = 0, /* on the runtime's FIFO scheduler, queued behind the PE's other fibers */
    /* On the runtime's preemptive scheduler: each runs at once in the context that enabled
     * it -- an arrival in the scheduler's poll, between two fibers; a wake-up or a suspended
     * send inside the graph call or arrival that made it possible -- without being queued.
     * Hence in this mode eg_send, eg_remove and eg_unfreeze may ship other suspended sends
     * of this PE and deliver and wake receivers before they return, and the `done` counters
     * of those operations move inside the call. */
    EG_SCHED_PREEMPT = 1
} eg_sched_mode;

typedef struct {
    uint32_t src, dst; /* node numbers in [0, nnodes) */
} eg_edge_def;

/* Largest element: an element travels inside one remote invocation. */
#define EG_ELT_MAX ((size_t)MP_FIBER_ARGS_MAX - 32)

typedef struct {
    uint32_t nnodes;
    const eg_edge_def *edges; /* edge i is edges[i]; identical on every PE */
    uint32_t nedges;
    size_t elt_size;           /* bytes per element, 1..EG_ELT_MAX */
    uint32_t capacity;         /* elements per edge, >= 1 */
    eg_partition_fn partition; /* NULL: node % npes */
    void *partition_ctx;
    eg_wake_mode wake;
    eg_sched_mode sched; /* 0 (zero-initialised): EG_SCHED_FIFO */
} eg_config;

/* Collective: every PE calls it with the same configuration, in the same order relative to
 * other collective object creations, before any PE can send to the graph (for example in
 * pe_main before the first blocking call).  Creates the graph's distributed object, its
 * snapshot object and this PE's statistics record (module "graph", id = the object id). */
mp_err eg_graph_create(const eg_config *cfg, eg_graph **out);

mp_obj_t eg_graph_id(const eg_graph *g); /* the distributed object's id */
eg_graph *eg_graph_local(mp_obj_t id);   /* this PE's partition of graph `id` */
int eg_node_pe(const eg_graph *g, uint32_t node);
size_t eg_elt_size(const eg_graph *g);
eg_sched_mode eg_sched(const eg_graph *g);
uint32_t eg_capacity(const eg_graph *g);
uint32_t eg_nnodes(const eg_graph *g);
uint32_t eg_nedges(const eg_graph *g);
eg_edge_def eg_edge(const eg_graph *g, uint32_t edge);
/* In-edges / out-edges of a node, in edge-number order (any node, any PE). */
const uint32_t *eg_in_edges(const eg_graph *g, uint32_t node, uint32_t *n);
const uint32_t *eg_out_edges(const eg_graph *g, uint32_t node, uint32_t *n);

/* Multicasts one element (elt_size bytes, copied) from `node` along all its out-edges.
 * MP_OK: shipped; `done` (may be NULL) has been incremented.  MP_WAIT: some out-edge is full
 * or the graph is frozen; the element was copied and will be shipped, in order, once there
 * is space, and `done` is incremented then.  Sends of one node keep their order.
 * MP_FAIL: bad node / not on this PE / NULL element. */
mp_status eg_send(eg_graph *g, uint32_t node, const void *elt, mp_counter_t done);

/* Receiver side (on the sink node's PE).  Elements of an edge are seen in sending order. */
size_t eg_count(eg_graph *g, uint32_t edge);                  /* elements present */
const void *eg_examine(eg_graph *g, uint32_t edge, size_t i); /* i-th present, or NULL */
/* Removes up to `max` elements in order, copying them to dst (if not NULL); returns how
 * many.  Removal releases their space to the sender. */
size_t eg_remove(eg_graph *g, uint32_t edge, void *dst, size_t max);

/* Waits for the next wake-up of `node` (see eg_wake_mode): registers the wait and returns
 * MP_WAIT; `done` is incremented by a graph:DEQ fiber on the wake-up.  Check eg_count first:
 * elements already present do not wake the node (in EG_WAKE_EMPTY mode only an arrival at
 * an empty in-edge does).  One wait per node at a time; MP_FAIL if one is pending, if the
 * node has no in-edges or is not on this PE. */
mp_status eg_wait(eg_graph *g, uint32_t node, mp_counter_t done);

/* Collective, split-phase.  When `done` is incremented (on any PE), every PE has frozen the
 * graph and every element and release message sent before the freeze has arrived: the
 * in-edges of all PEs form one consistent snapshot.  New sends are suspended (MP_WAIT) until
 * eg_unfreeze; space released while frozen is returned to senders on unfreeze. */
mp_status eg_freeze(eg_graph *g, mp_counter_t done);
void eg_unfreeze(eg_graph *g); /* on every PE */

/* Suspended operations on this PE: sends waiting to be shipped, waits not yet woken. */
size_t eg_pending_sends(const eg_graph *g, uint32_t node);
int eg_is_waiting(const eg_graph *g, uint32_t node);

/* Collective, split-phase (MP_WAIT): frees this PE's partition of the graph and its
 * snapshot.  Call it on every PE once the graph is frozen (eg_freeze has completed, so
 * nothing of it is in flight) with no suspended send and no pending wait; MP_FAIL otherwise.
 * The statistics stay in the run profile. */
mp_status eg_graph_destroy(eg_graph *g, mp_counter_t done);

/* Frees every graph partition of the process not destroyed with eg_graph_destroy.  Call
 * after mp_main() has returned (from a PE it ends the run with a message). */
void eg_finalize(void);

#ifdef __cplusplus
}
#endif
#endif /* EVENTGRAPH_H */
