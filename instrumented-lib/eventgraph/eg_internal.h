/*
 * eg_internal.h -- the event graph's partition, message headers and the helpers its two
 * source files share (eventgraph.c: creation, accessors, destroy; eg_channel.c: the edges'
 * traffic -- sending, receiving, flow control and freeze).  Internal to the library.
 */
#ifndef MPROF_EG_INTERNAL_H
#define MPROF_EG_INTERNAL_H

#include "eventgraph.h"

#include "graph_perf.h"

#include <stdbool.h>
#include <string.h>

#define LIB_MODULE "eventgraph"
#include "lib_internal.h"

typedef struct pend {
    struct pend *next;
    mp_counter_t done;
    _Alignas(16) unsigned char elt[];
} pend;

typedef struct {
    uint32_t src; /* source node */
    int dst_pe;
    uint32_t first; /* its edges: grp_edges[first .. first + n) */
    uint32_t n;
} group_t;

typedef struct { /* sender side of a group (on the source node's PE) */
    uint64_t sent;
    mp_counter_t released; /* value: elements released by the receiver so far */
} snd_t;

typedef struct {         /* receiver side of a group (on the destination PE) */
    unsigned char *ring; /* capacity slots of elt_size bytes; element seq in slot seq % F */
    uint8_t *present;
    uint64_t head; /* elements [base, head) have arrived, in order */
    uint64_t base; /* elements below base were removed by every edge of the group */
    uint64_t held; /* space freed while frozen, returned on unfreeze */
} rcv_t;

typedef struct {   /* a node on this PE */
    pend *ph, *pt; /* suspended sends, oldest first */
    size_t npend;
    bool enq_active; /* an ENQ fiber serves the suspended sends */
    bool waiting;    /* a DEQ fiber waits for the next wake-up */
    mp_counter_t wake;
} lnode_t;

#define EG_MAGIC 0x45474752u /* "EGGR" */

struct eg_graph {
    uint32_t magic; /* EG_MAGIC while the partition lives (lib_part_checked) */
    mp_obj_t id;
    mp_snapshot_t snap;
    int me, npes;
    uint32_t nnodes, nedges, ngroups;
    size_t E;
    uint32_t F;
    uint32_t cfg; /* lib_hash of what every PE's creation must agree on (msg_hdr.cfg) */
    eg_wake_mode wake;
    eg_sched_mode sched_mode;
    mp_sched_t sched; /* of the graph's ENQ and DEQ fibers */
    int *node_pe;
    eg_edge_def *edges;
    uint32_t *out_off, *out_list; /* CSR of out-edges per node */
    uint32_t *in_off, *in_list;   /* CSR of in-edges per node */
    uint32_t *grp_off;            /* groups of node u: grp_off[u] .. grp_off[u + 1] */
    group_t *groups;
    uint32_t *grp_edges;
    uint32_t *edge_group;
    uint64_t *edge_read; /* read cursor of each in-edge (meaningful on the sink PE) */
    snd_t *snd;
    rcv_t *rcv;
    lnode_t *nodes;
    graph_stats_t *st;
    struct eg_graph *reg_next, *reg_prev; /* partitions of the process, for eg_finalize */
};

/* Remote messages.  All start with the graph id and the sending PE. */
typedef struct {
    mp_obj_t gid;
    uint32_t group;
    int32_t from;
    uint32_t cfg; /* the sender's eg_graph.cfg: the receiver's must be the same */
    uint64_t seq; /* element: seq; release: count of freed slots */
} msg_hdr;
_Static_assert(sizeof(msg_hdr) <= MP_FIBER_ARGS_MAX - EG_ELT_MAX, "header too large");

typedef struct {
    mp_obj_t gid;
    uint32_t node;
    mp_counter_t done;
} node_args;

/* This PE's partition of graph `id` (a message for a graph the PE has not created aborts:
 * create graphs on every PE before sending). */
static inline eg_graph *lookup(mp_obj_t id)
{
    return lib_part_of_kind(id, EG_MAGIC, "event graph");
}

/* The partition a message from another PE is for, which must have been created with the same
 * configuration there (its groups, rings and element size are the sender's too). */
static inline eg_graph *lookup_msg(const msg_hdr *m)
{
    eg_graph *g = lookup(m->gid);
    if (m->cfg != g->cfg)
        lib_die("graph %u: PE %d created it with another configuration (element size, "
                "capacity, wake mode, nodes, edges or their PEs): eg_graph_create must be given "
                "the same on every PE",
                m->gid, m->from);
    return g;
}

/* g, for the calls that cannot return an error: a NULL graph (an eg_graph_create whose
 * refusal was not checked leaves one) ends the run naming the call. */
#define EG_NEED(g, fn) ((g) ? (g) : (lib_die("%s: NULL graph", fn), (g)))

static inline bool is_frozen(eg_graph *g) { return mp_snapshot_query(g->snap) == MP_WAIT; }

/* eg_stats.c: the statistics derived from the partition's state, from creation until it is
 * destroyed (the runtime takes what is left when the PE ends). */
void eg_stats_start(eg_graph *g);
void eg_stats_stop(eg_graph *g);

static inline bool local_node(const eg_graph *g, uint32_t node)
{
    return node < g->nnodes && g->node_pe[node] == g->me;
}

#endif
