/*
 * eventgraph.c -- the event graph data structure (Wen 1995, section 2.2.4).
 *
 * Structure.  Every PE holds the whole topology (nodes, edges, partition) and the state of
 * the parts it owns.  The out-edges of a node are grouped by the PE of their sink: a *group*
 * (source node, destination PE) is the unit of shipping and of flow control.  An element
 * multicast by a node travels once per group -- identical messages to nodes on the same PE
 * are collapsed (section 2.2.4.2) -- into the group's ring of `capacity` slots on the
 * destination PE.  Each in-edge of the group has its own read cursor on that ring; a slot
 * is free again when every edge of the group has removed it, and the freed count goes back
 * to the sender in one release message per group (the control messages are collapsed too).
 * The sender keeps, per group, the number of elements sent and a counter of elements
 * released; a send suspends while sent - released == capacity for any of its groups.
 *
 * Fibers and access categories (Wen 1995, section 4.5.3):
 *   graph:ENQ  the fiber that waits for space and ships suspended sends; the arrival fiber
 *              that stores an element and informs (wakes) the receiver;
 *   graph:DEQ  the fiber that waits for elements and resumes a waiting receiver; the
 *              arrival fiber of a release message that returns space to the sender.
 * So a receiver resumed by an arrival is enabled DEQ <- ENQ -> user, and a suspended send is
 * resumed ENQ <- DEQ, the resource dependence of the flow-control protocol.
 *
 * Freeze uses the runtime's snapshot object.  Shipping an element or a release message is a
 * mutator: it is executed on the sending PE and completed when it arrives.  Completions are
 * not reported one message each: the receiver owes them to the sender and piggybacks the
 * count on its next graph message to that PE; a freeze flushes what is owed, and while a PE
 * is frozen arrivals complete at once.  Hence after a freeze nothing of the graph is in
 * flight.
 */
#define _GNU_SOURCE
#include "eventgraph.h"

#include "graph_perf.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */

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

struct eg_graph {
    mp_obj_t id;
    mp_snapshot_t snap;
    int me, npes;
    uint32_t nnodes, nedges, ngroups;
    size_t E;
    uint32_t F;
    eg_wake_mode wake;
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
    uint64_t *owed;  /* completions owed to each PE */
    mp_counter_t fz; /* steps of freeze */
    uint64_t fz_target;
    graph_stats_t *st;
    struct eg_graph *reg_next;
};

/* Remote messages.  All start with the graph id and the sending PE. */
typedef struct {
    mp_obj_t gid;
    uint32_t group;
    int32_t from;
    uint32_t pad_;
    uint64_t owed;
    uint64_t seq; /* element: seq; release: count of freed slots */
} msg_hdr;
_Static_assert(sizeof(msg_hdr) <= MP_FIBER_ARGS_MAX - EG_ELT_MAX, "header too large");

typedef struct {
    mp_obj_t gid;
    uint32_t node;
    mp_counter_t done;
} node_args;

typedef struct {
    mp_obj_t gid;
    mp_counter_t done;
} freeze_args;

/* ------------------------------------------------------------------------------------ */
/* Registry of partitions (for eg_finalize) and one-time registration of the categories.  */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static eg_graph *registry;
static pthread_once_t perf_once = PTHREAD_ONCE_INIT;

static void perf_init(void) { graph_perf_init(); }

static _Noreturn void die(const char *what, unsigned n)
{
    fprintf(stderr, "eventgraph (PE %d): %s %u\n", mp_mype(), what, n);
    abort();
}

static eg_graph *lookup(mp_obj_t id)
{
    eg_graph *g = mp_obj_local(id);
    if (!g)
        die("a message arrived for a graph this PE has not created (create it on every PE "
            "before sending); object",
            id);
    return g;
}

static inline bool is_frozen(eg_graph *g) { return mp_snapshot_query(g->snap) == MP_WAIT; }

static inline bool local_node(const eg_graph *g, uint32_t node)
{
    return node < g->nnodes && g->node_pe[node] == g->me;
}

/* ------------------------------------------------------------------------------------ */
/* Creation                                                                               */

static int default_partition(uint32_t node, int npes, void *ctx)
{
    (void)ctx;
    return (int)(node % (uint32_t)npes);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory allocating elements:", (unsigned)n);
    return p;
}

static void graph_free(eg_graph *g)
{
    if (g->rcv)
        for (uint32_t j = 0; j < g->ngroups; j++) {
            free(g->rcv[j].ring);
            free(g->rcv[j].present);
        }
    if (g->nodes)
        for (uint32_t u = 0; u < g->nnodes; u++)
            for (pend *p = g->nodes[u].ph, *n; p; p = n) {
                n = p->next;
                free(p);
            }
    free(g->node_pe);
    free(g->edges);
    free(g->out_off);
    free(g->out_list);
    free(g->in_off);
    free(g->in_list);
    free(g->grp_off);
    free(g->groups);
    free(g->grp_edges);
    free(g->edge_group);
    free(g->edge_read);
    free(g->snd);
    free(g->rcv);
    free(g->nodes);
    free(g->owed);
    free(g);
}

static void csr(uint32_t nnodes, uint32_t nedges, const eg_edge_def *e, bool by_src,
                uint32_t **off_out, uint32_t **list_out)
{
    uint32_t *off = xcalloc(nnodes + 1, sizeof *off);
    uint32_t *list = xcalloc(nedges, sizeof *list);
    for (uint32_t i = 0; i < nedges; i++)
        off[(by_src ? e[i].src : e[i].dst) + 1]++;
    for (uint32_t u = 0; u < nnodes; u++)
        off[u + 1] += off[u];
    uint32_t *fill = xcalloc(nnodes, sizeof *fill);
    for (uint32_t i = 0; i < nedges; i++) {
        uint32_t u = by_src ? e[i].src : e[i].dst;
        list[off[u] + fill[u]++] = i;
    }
    free(fill);
    *off_out = off;
    *list_out = list;
}

mp_err eg_graph_create(const eg_config *cfg, eg_graph **out)
{
    int me = mp_mype(), npes = mp_npes();
    if (!out || !cfg)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    if (me < 0)
        return MP_ERR_BAD_STATE;
    if (cfg->nnodes == 0 || (cfg->nedges && !cfg->edges) || cfg->elt_size == 0 ||
        cfg->elt_size > EG_ELT_MAX || cfg->capacity == 0 ||
        (cfg->wake != EG_WAKE_EMPTY && cfg->wake != EG_WAKE_ANY))
        return MP_ERR_INVALID_ARG;
    for (uint32_t i = 0; i < cfg->nedges; i++)
        if (cfg->edges[i].src >= cfg->nnodes || cfg->edges[i].dst >= cfg->nnodes)
            return MP_ERR_INVALID_ARG;
    pthread_once(&perf_once, perf_init);

    eg_graph *g = xcalloc(1, sizeof *g);
    g->me = me;
    g->npes = npes;
    g->nnodes = cfg->nnodes;
    g->nedges = cfg->nedges;
    g->E = cfg->elt_size;
    g->F = cfg->capacity;
    g->wake = cfg->wake;
    eg_partition_fn part = cfg->partition ? cfg->partition : default_partition;
    g->node_pe = xcalloc(g->nnodes, sizeof *g->node_pe);
    for (uint32_t u = 0; u < g->nnodes; u++) {
        int pe = part(u, npes, cfg->partition_ctx);
        if (pe < 0 || pe >= npes) {
            graph_free(g);
            return MP_ERR_INVALID_PE;
        }
        g->node_pe[u] = pe;
    }
    g->edges = xcalloc(g->nedges, sizeof *g->edges);
    if (g->nedges)
        memcpy(g->edges, cfg->edges, g->nedges * sizeof *g->edges);
    csr(g->nnodes, g->nedges, g->edges, true, &g->out_off, &g->out_list);
    csr(g->nnodes, g->nedges, g->edges, false, &g->in_off, &g->in_list);

    /* groups: per source node, its out-edges by destination PE, in order of first edge */
    g->grp_off = xcalloc(g->nnodes + 1, sizeof *g->grp_off);
    g->groups = xcalloc(g->nedges, sizeof *g->groups);
    g->grp_edges = xcalloc(g->nedges, sizeof *g->grp_edges);
    g->edge_group = xcalloc(g->nedges, sizeof *g->edge_group);
    uint32_t ng = 0, ge = 0;
    for (uint32_t u = 0; u < g->nnodes; u++) {
        g->grp_off[u] = ng;
        uint32_t first = ng;
        for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
            int pe = g->node_pe[g->edges[g->out_list[k]].dst];
            uint32_t j = first;
            while (j < ng && g->groups[j].dst_pe != pe)
                j++;
            if (j == ng)
                g->groups[ng++] = (group_t){u, pe, 0, 0};
            g->groups[j].n++;
        }
        /* lay out the edges of u's groups contiguously, group after group */
        for (uint32_t j = first; j < ng; j++) {
            g->groups[j].first = ge;
            ge += g->groups[j].n;
            g->groups[j].n = 0;
        }
        for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
            uint32_t e = g->out_list[k];
            int pe = g->node_pe[g->edges[e].dst];
            uint32_t j = first;
            while (g->groups[j].dst_pe != pe)
                j++;
            g->grp_edges[g->groups[j].first + g->groups[j].n++] = e;
            g->edge_group[e] = j;
        }
    }
    g->grp_off[g->nnodes] = ng;
    g->ngroups = ng;

    g->edge_read = xcalloc(g->nedges, sizeof *g->edge_read);
    g->snd = xcalloc(ng, sizeof *g->snd);
    g->rcv = xcalloc(ng, sizeof *g->rcv);
    g->nodes = xcalloc(g->nnodes, sizeof *g->nodes);
    g->owed = xcalloc((size_t)npes, sizeof *g->owed);
    uint64_t nnode_local = 0, nedge_local = 0;
    for (uint32_t j = 0; j < ng; j++) {
        if (g->node_pe[g->groups[j].src] == me)
            g->snd[j].released = mp_counter_new(0);
        if (g->groups[j].dst_pe == me) {
            g->rcv[j].ring = xcalloc(g->F, g->E);
            g->rcv[j].present = xcalloc(g->F, 1);
        }
    }
    for (uint32_t u = 0; u < g->nnodes; u++)
        if (g->node_pe[u] == me) {
            nnode_local++;
            nedge_local += g->in_off[u + 1] - g->in_off[u];
            g->nodes[u].wake = mp_counter_new(0);
        }
    g->fz = mp_counter_new(0);

    mp_err e = mp_obj_create(g, &g->id);
    if (e == MP_SUCCESS)
        e = mp_snapshot_new(&g->snap);
    if (e != MP_SUCCESS) {
        graph_free(g);
        return e;
    }
    g->st = graph_stats_create(g->id);
    GRAPH_SET(g->st, P, 1);
    GRAPH_SET(g->st, EltSize, g->E);
    GRAPH_SET(g->st, EdgeCap, g->F);
    GRAPH_SET(g->st, Node, nnode_local);
    GRAPH_SET(g->st, Edge, nedge_local);

    pthread_mutex_lock(&reg_lock);
    g->reg_next = registry;
    registry = g;
    pthread_mutex_unlock(&reg_lock);
    *out = g;
    return MP_SUCCESS;
}

void eg_finalize(void)
{
    pthread_mutex_lock(&reg_lock);
    eg_graph *g = registry;
    registry = NULL;
    pthread_mutex_unlock(&reg_lock);
    while (g) {
        eg_graph *n = g->reg_next;
        graph_free(g);
        g = n;
    }
}

/* ------------------------------------------------------------------------------------ */
/* Accessors                                                                              */

mp_obj_t eg_graph_id(const eg_graph *g) { return g->id; }
eg_graph *eg_graph_local(mp_obj_t id) { return mp_obj_local(id); }
int eg_node_pe(const eg_graph *g, uint32_t node)
{
    return node < g->nnodes ? g->node_pe[node] : -1;
}
size_t eg_elt_size(const eg_graph *g) { return g->E; }
uint32_t eg_capacity(const eg_graph *g) { return g->F; }
uint32_t eg_nnodes(const eg_graph *g) { return g->nnodes; }
uint32_t eg_nedges(const eg_graph *g) { return g->nedges; }
eg_edge_def eg_edge(const eg_graph *g, uint32_t edge)
{
    return edge < g->nedges ? g->edges[edge] : (eg_edge_def){UINT32_MAX, UINT32_MAX};
}
const uint32_t *eg_in_edges(const eg_graph *g, uint32_t node, uint32_t *n)
{
    if (node >= g->nnodes) {
        *n = 0;
        return NULL;
    }
    *n = g->in_off[node + 1] - g->in_off[node];
    return g->in_list + g->in_off[node];
}
const uint32_t *eg_out_edges(const eg_graph *g, uint32_t node, uint32_t *n)
{
    if (node >= g->nnodes) {
        *n = 0;
        return NULL;
    }
    *n = g->out_off[node + 1] - g->out_off[node];
    return g->out_list + g->out_off[node];
}
size_t eg_pending_sends(const eg_graph *g, uint32_t node)
{
    return local_node(g, node) ? g->nodes[node].npend : 0;
}
int eg_is_waiting(const eg_graph *g, uint32_t node)
{
    return local_node(g, node) && g->nodes[node].waiting;
}

/* ------------------------------------------------------------------------------------ */
/* Snapshot bookkeeping                                                                   */

static void take_owed(eg_graph *g, uint64_t owed)
{
    for (uint64_t i = 0; i < owed; i++)
        mp_snapshot_complete(g->snap, g->me);
}

/* A mutator shipped by PE `from` has arrived here. */
static void arrived(eg_graph *g, int from)
{
    if (is_frozen(g))
        mp_snapshot_complete(g->snap, from);
    else
        g->owed[from]++;
}

static void owed_arrive(void *p)
{
    const msg_hdr *m = p;
    take_owed(lookup(m->gid), m->owed);
}

/* ------------------------------------------------------------------------------------ */
/* Receiver side                                                                          */

static void wake_node(eg_graph *g, uint32_t node)
{
    lnode_t *n = &g->nodes[node];
    if (n->waiting) {
        n->waiting = false;
        mp_counter_add(n->wake, 1); /* enables the DEQ fiber of eg_wait */
    }
}

static void deliver(eg_graph *g, uint32_t j, uint64_t seq, const void *elt)
{
    rcv_t *r = &g->rcv[j];
    if (seq < r->base || seq >= r->base + g->F || r->present[seq % g->F])
        die("flow control violated on group", j);
    memcpy(r->ring + (size_t)(seq % g->F) * g->E, elt, g->E);
    r->present[seq % g->F] = 1;
    uint64_t old = r->head;
    while (r->head < r->base + g->F && r->present[r->head % g->F])
        r->head++;
    if (r->head == old)
        return;
    const group_t *gr = &g->groups[j];
    for (uint32_t k = 0; k < gr->n; k++) {
        uint32_t e = g->grp_edges[gr->first + k];
        if (g->wake == EG_WAKE_ANY || g->edge_read[e] == old)
            wake_node(g, g->edges[e].dst);
    }
}

static void item_arrive(void *p)
{
    GRAPH_ACCESS(ENQ);
    const msg_hdr *m = p;
    eg_graph *g = lookup(m->gid);
    take_owed(g, m->owed);
    arrived(g, m->from);
    deliver(g, m->group, m->seq, (const unsigned char *)p + sizeof *m);
}

static void release_arrive(void *p)
{
    GRAPH_ACCESS(DEQ);
    const msg_hdr *m = p;
    eg_graph *g = lookup(m->gid);
    take_owed(g, m->owed);
    arrived(g, m->from);
    mp_counter_add(g->snd[m->group].released, m->seq); /* may enable a waiting ENQ fiber */
}

static void send_release(eg_graph *g, uint32_t j, uint64_t count)
{
    int src_pe = g->node_pe[g->groups[j].src];
    mp_snapshot_execute(g->snap);
    msg_hdr m = {g->id, j, g->me, 0, g->owed[src_pe], count};
    g->owed[src_pe] = 0;
    GRAPH_INC(g->st, NMsg, 1);
    mp_invoke(src_pe, release_arrive, &m, sizeof m, MP_SCHED_FIFO);
}

static void release(eg_graph *g, uint32_t j, uint64_t count)
{
    int src_pe = g->node_pe[g->groups[j].src];
    if (src_pe == g->me)
        mp_counter_add(g->snd[j].released, count);
    else if (is_frozen(g))
        g->rcv[j].held += count;
    else
        send_release(g, j, count);
}

static inline uint64_t edge_count(eg_graph *g, uint32_t e)
{
    return g->rcv[g->edge_group[e]].head - g->edge_read[e];
}

static bool local_in_edge(const eg_graph *g, uint32_t edge)
{
    return edge < g->nedges && g->node_pe[g->edges[edge].dst] == g->me;
}

size_t eg_count(eg_graph *g, uint32_t edge)
{
    if (!local_in_edge(g, edge))
        return 0;
    GRAPH_INC(g->st, NOp, 1);
    return (size_t)edge_count(g, edge);
}

const void *eg_examine(eg_graph *g, uint32_t edge, size_t i)
{
    if (!local_in_edge(g, edge) || i >= edge_count(g, edge))
        return NULL;
    GRAPH_INC(g->st, NOp, 1);
    const rcv_t *r = &g->rcv[g->edge_group[edge]];
    return r->ring + (size_t)((g->edge_read[edge] + i) % g->F) * g->E;
}

size_t eg_remove(eg_graph *g, uint32_t edge, void *dst, size_t max)
{
    if (!local_in_edge(g, edge))
        return 0;
    uint32_t j = g->edge_group[edge];
    rcv_t *r = &g->rcv[j];
    uint64_t avail = r->head - g->edge_read[edge];
    size_t k = avail < max ? (size_t)avail : max;
    if (k == 0)
        return 0;
    if (dst)
        for (size_t i = 0; i < k; i++)
            memcpy((unsigned char *)dst + i * g->E,
                   r->ring + (size_t)((g->edge_read[edge] + i) % g->F) * g->E, g->E);
    g->edge_read[edge] += k;
    GRAPH_INC(g->st, NOp, k);
    GRAPH_INC(g->st, DeqSize, k * g->E);
    /* a slot is free once every edge of the group has removed it */
    const group_t *gr = &g->groups[j];
    uint64_t low = g->edge_read[edge];
    for (uint32_t i = 0; i < gr->n; i++) {
        uint64_t rd = g->edge_read[g->grp_edges[gr->first + i]];
        if (rd < low)
            low = rd;
    }
    if (low > r->base) {
        for (uint64_t s = r->base; s < low; s++)
            r->present[s % g->F] = 0;
        uint64_t freed = low - r->base;
        r->base = low;
        release(g, j, freed);
    }
    return k;
}

static void deq_wake(void *p)
{
    GRAPH_ACCESS(DEQ);
    node_args *a = p;
    if (a->done)
        mp_counter_add(a->done, 1);
}

mp_status eg_wait(eg_graph *g, uint32_t node, mp_counter_t done)
{
    if (!g || !local_node(g, node) || g->in_off[node + 1] == g->in_off[node])
        return MP_FAIL;
    lnode_t *n = &g->nodes[node];
    if (n->waiting)
        return MP_FAIL;
    node_args a = {g->id, node, done};
    mp_fiber_t f = mp_fiber_create(deq_wake, &a, sizeof a, MP_SCHED_FIFO);
    if (!f || mp_counter_wait(n->wake, mp_counter_value(n->wake) + 1, f) != MP_SUCCESS)
        return MP_FAIL;
    n->waiting = true;
    GRAPH_INC(g->st, NBlock, 1);
    return MP_WAIT;
}

/* ------------------------------------------------------------------------------------ */
/* Sender side                                                                            */

/* The first group of `node` without space, or -1. */
static int64_t full_group(eg_graph *g, uint32_t node)
{
    for (uint32_t j = g->grp_off[node]; j < g->grp_off[node + 1]; j++)
        if (g->snd[j].sent - mp_counter_value(g->snd[j].released) >= g->F)
            return j;
    return -1;
}

static void ship(eg_graph *g, uint32_t node, const void *elt)
{
    unsigned char buf[MP_FIBER_ARGS_MAX];
    msg_hdr *m = (msg_hdr *)buf;
    bool built = false;
    for (uint32_t j = g->grp_off[node]; j < g->grp_off[node + 1]; j++) {
        const group_t *gr = &g->groups[j];
        uint64_t seq = g->snd[j].sent++;
        if (gr->dst_pe == g->me) {
            deliver(g, j, seq, elt);
            continue;
        }
        if (!built) {
            memcpy(buf + sizeof *m, elt, g->E);
            built = true;
        }
        *m = (msg_hdr){g->id, j, g->me, 0, g->owed[gr->dst_pe], seq};
        g->owed[gr->dst_pe] = 0;
        mp_snapshot_execute(g->snap);
        GRAPH_INC(g->st, NMsg, 1);
        mp_invoke(gr->dst_pe, item_arrive, buf, sizeof *m + g->E, MP_SCHED_FIFO);
    }
    GRAPH_INC(g->st, EnqSize, (uint64_t)g->E * (g->out_off[node + 1] - g->out_off[node]));
}

static void enq_fiber(void *p);

/* Makes the (created) ENQ fiber f wait for whatever blocks node's oldest suspended send. */
static void enq_block(eg_graph *g, uint32_t node, mp_fiber_t f)
{
    if (is_frozen(g)) {
        mp_snapshot_suspend(g->snap, f);
        return;
    }
    int64_t j = full_group(g, node);
    if (j < 0) {
        mp_fiber_enable(f);
        return;
    }
    mp_counter_wait(g->snd[j].released, g->snd[j].sent + 1 - g->F, f);
}

static void enq_fiber(void *p)
{
    GRAPH_ACCESS(ENQ);
    node_args *a = p;
    eg_graph *g = lookup(a->gid);
    lnode_t *n = &g->nodes[a->node];
    while (n->ph) {
        if (is_frozen(g) || full_group(g, a->node) >= 0) {
            enq_block(g, a->node, mp_continue(enq_fiber, MP_SCHED_FIFO));
            return;
        }
        pend *q = n->ph;
        n->ph = q->next;
        if (!n->ph)
            n->pt = NULL;
        n->npend--;
        ship(g, a->node, q->elt);
        if (q->done)
            mp_counter_add(q->done, 1);
        free(q);
    }
    n->enq_active = false;
}

mp_status eg_send(eg_graph *g, uint32_t node, const void *elt, mp_counter_t done)
{
    if (!g || !elt || !local_node(g, node))
        return MP_FAIL;
    GRAPH_INC(g->st, NOp, 1);
    lnode_t *n = &g->nodes[node];
    if (!n->ph && !is_frozen(g) && full_group(g, node) < 0) {
        ship(g, node, elt);
        if (done)
            mp_counter_add(done, 1);
        return MP_OK;
    }
    pend *q = malloc(sizeof *q + g->E);
    if (!q)
        return MP_FAIL;
    q->next = NULL;
    q->done = done;
    memcpy(q->elt, elt, g->E);
    if (n->pt)
        n->pt->next = q;
    else
        n->ph = q;
    n->pt = q;
    n->npend++;
    GRAPH_INC(g->st, NBlock, 1);
    if (!n->enq_active) {
        n->enq_active = true;
        node_args a = {g->id, node, NULL};
        enq_block(g, node, mp_fiber_create(enq_fiber, &a, sizeof a, MP_SCHED_FIFO));
    }
    return MP_WAIT;
}

/* ------------------------------------------------------------------------------------ */
/* Freeze / unfreeze                                                                      */

static void freeze_done(void *p)
{
    freeze_args *a = p;
    mp_counter_add(a->done, 1);
}

static void freeze_drained(void *p)
{
    freeze_args *a = p;
    eg_graph *g = lookup(a->gid);
    /* every PE has drained its own mutators; one more barrier makes that true for all */
    g->fz_target++;
    mp_counter_wait(g->fz, g->fz_target, mp_continue(freeze_done, MP_SCHED_URGENT));
    mp_obj_barrier(g->id, g->fz);
}

mp_status eg_freeze(eg_graph *g, mp_counter_t done)
{
    if (!g || !done || is_frozen(g))
        return MP_FAIL;
    /* report the completions this PE owes, then stop admitting mutators */
    for (int pe = 0; pe < g->npes; pe++)
        if (g->owed[pe] && pe != g->me) {
            msg_hdr m = {g->id, 0, g->me, 0, g->owed[pe], 0};
            g->owed[pe] = 0;
            GRAPH_INC(g->st, NMsg, 1);
            mp_invoke(pe, owed_arrive, &m, sizeof m, MP_SCHED_URGENT);
        }
    take_owed(g, g->owed[g->me]);
    g->owed[g->me] = 0;
    g->fz_target++;
    freeze_args a = {g->id, done};
    mp_fiber_t f = mp_fiber_create(freeze_drained, &a, sizeof a, MP_SCHED_URGENT);
    if (!f)
        return MP_FAIL;
    mp_counter_wait(g->fz, g->fz_target, f);
    mp_snapshot_freeze(g->snap, g->fz);
    return MP_WAIT;
}

void eg_unfreeze(eg_graph *g)
{
    if (!g || !is_frozen(g))
        return;
    mp_snapshot_unfreeze(g->snap);
    for (uint32_t j = 0; j < g->ngroups; j++)
        if (g->groups[j].dst_pe == g->me && g->rcv[j].held) {
            uint64_t n = g->rcv[j].held;
            g->rcv[j].held = 0;
            release(g, j, n);
        }
}
