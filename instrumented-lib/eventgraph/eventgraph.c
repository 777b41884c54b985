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
 * These fibers run on the scheduler the configuration chooses (eg_sched_mode): FIFO, or the
 * runtime's preemptive scheduler (Wen 1995, sections 3.2.4 and 5.1.5), where an arrival runs
 * in the poll that received it and a wake-up or a suspended send inside whatever enabled it,
 * without being queued behind the PE's computation.  They satisfy the preemptive scheduler's
 * rules: none changes its arguments, none has a continuation (the ENQ fiber that must wait
 * again creates a new fiber in that mode instead of continuing), and each finishes the graph
 * state it touches before it can enable another, so one that runs inside a graph call sees
 * the state consistent.  The freeze's own fibers stay urgent.
 *
 * Freeze uses the runtime's snapshot object.  Shipping an element or a release message is a
 * mutator: it is executed on the sending PE and completed when it arrives, where the runtime
 * counts the completion (no message goes back).  The snapshot's freeze ends on every PE once
 * all of them have arrived, so after a freeze nothing of the graph is in flight.
 */
#define _GNU_SOURCE
#include "eg_internal.h"

#include <pthread.h>

/* ------------------------------------------------------------------------------------ */
/* Partitions not destroyed, freed by eg_finalize                                         */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static eg_graph *registry;

/* ------------------------------------------------------------------------------------ */
/* Creation                                                                               */

static int default_partition(uint32_t node, int npes, void *ctx)
{
    (void)ctx;
    return (int)(node % (uint32_t)npes);
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
    g->magic = 0;
    free(g);
}

static void csr(uint32_t nnodes, uint32_t nedges, const eg_edge_def *e, bool by_src,
                uint32_t **off_out, uint32_t **list_out)
{
    uint32_t *off = lib_calloc(nnodes + 1, sizeof *off);
    uint32_t *list = lib_calloc(nedges, sizeof *list);
    for (uint32_t i = 0; i < nedges; i++)
        off[(by_src ? e[i].src : e[i].dst) + 1]++;
    for (uint32_t u = 0; u < nnodes; u++)
        off[u + 1] += off[u];
    uint32_t *fill = lib_calloc(nnodes, sizeof *fill);
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
    /* each refusal told, as the other structures tell theirs (lib_misuse) */
    const char *bad = cfg->nnodes == 0             ? "nnodes is 0"
                      : cfg->nnodes == UINT32_MAX  ? "nnodes is over 2^32 - 2"
                      : cfg->nedges && !cfg->edges ? "edges is NULL"
                      : cfg->elt_size == 0         ? "elt_size is 0"
                      : cfg->elt_size > EG_ELT_MAX ? "elt_size is over EG_ELT_MAX"
                      : cfg->capacity == 0         ? "capacity is 0"
                      : cfg->wake != EG_WAKE_EMPTY && cfg->wake != EG_WAKE_ANY ? "unknown wake"
                      : cfg->sched != EG_SCHED_FIFO && cfg->sched != EG_SCHED_PREEMPT
                          ? "unknown sched"
                          : NULL;
    if (bad) {
        lib_misuse("eg_graph_create: %s", bad);
        return MP_ERR_INVALID_ARG;
    }
    for (uint32_t i = 0; i < cfg->nedges; i++)
        if (cfg->edges[i].src >= cfg->nnodes || cfg->edges[i].dst >= cfg->nnodes) {
            lib_misuse("eg_graph_create: edge %u joins node %u to node %u, but there are %u "
                       "nodes",
                       i, cfg->edges[i].src, cfg->edges[i].dst, cfg->nnodes);
            return MP_ERR_INVALID_ARG;
        }
    LIB_PERF_INIT(graph_perf_init);

    eg_graph *g = lib_calloc(1, sizeof *g);
    g->magic = EG_MAGIC;
    g->me = me;
    g->npes = npes;
    g->nnodes = cfg->nnodes;
    g->nedges = cfg->nedges;
    g->E = cfg->elt_size;
    g->F = cfg->capacity;
    g->wake = cfg->wake;
    g->sched_mode = cfg->sched;
    g->sched = cfg->sched == EG_SCHED_PREEMPT ? MP_SCHED_PREEMPT : MP_SCHED_FIFO;
    eg_partition_fn part = cfg->partition ? cfg->partition : default_partition;
    g->node_pe = lib_calloc(g->nnodes, sizeof *g->node_pe);
    for (uint32_t u = 0; u < g->nnodes; u++) {
        int pe = part(u, npes, cfg->partition_ctx);
        if (pe < 0 || pe >= npes) {
            graph_free(g);
            return MP_ERR_INVALID_PE;
        }
        g->node_pe[u] = pe;
    }
    g->edges = lib_calloc(g->nedges, sizeof *g->edges);
    if (g->nedges)
        memcpy(g->edges, cfg->edges, g->nedges * sizeof *g->edges);
    csr(g->nnodes, g->nedges, g->edges, true, &g->out_off, &g->out_list);
    csr(g->nnodes, g->nedges, g->edges, false, &g->in_off, &g->in_list);

    /* groups: per source node, its out-edges by destination PE, in order of first edge */
    g->grp_off = lib_calloc(g->nnodes + 1, sizeof *g->grp_off);
    g->groups = lib_calloc(g->nedges, sizeof *g->groups);
    g->grp_edges = lib_calloc(g->nedges, sizeof *g->grp_edges);
    g->edge_group = lib_calloc(g->nedges, sizeof *g->edge_group);
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
    uint32_t h = lib_hash(LIB_HASH_INIT, &g->nnodes, sizeof g->nnodes);
    h = lib_hash(h, &g->nedges, sizeof g->nedges);
    h = lib_hash(h, &g->E, sizeof g->E);
    h = lib_hash(h, &g->F, sizeof g->F);
    h = lib_hash(h, &g->wake, sizeof g->wake);
    h = lib_hash(h, g->node_pe, g->nnodes * sizeof *g->node_pe);
    g->cfg = lib_hash(h, g->edges, g->nedges * sizeof *g->edges);

    g->edge_read = lib_calloc(g->nedges, sizeof *g->edge_read);
    g->snd = lib_calloc(ng, sizeof *g->snd);
    g->rcv = lib_calloc(ng, sizeof *g->rcv);
    g->nodes = lib_calloc(g->nnodes, sizeof *g->nodes);
    uint64_t nnode_local = 0, nedge_local = 0;
    for (uint32_t j = 0; j < ng; j++) {
        if (g->node_pe[g->groups[j].src] == me)
            g->snd[j].released = mp_counter_new(0);
        if (g->groups[j].dst_pe == me) {
            g->rcv[j].ring = lib_calloc(g->F, g->E);
            g->rcv[j].present = lib_calloc(g->F, 1);
        }
    }
    for (uint32_t u = 0; u < g->nnodes; u++)
        if (g->node_pe[u] == me) {
            nnode_local++;
            nedge_local += g->in_off[u + 1] - g->in_off[u];
            g->nodes[u].wake = mp_counter_new(0);
        }

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
    eg_stats_start(g);

    pthread_mutex_lock(&reg_lock);
    g->reg_next = registry;
    if (registry)
        registry->reg_prev = g;
    registry = g;
    pthread_mutex_unlock(&reg_lock);
    *out = g;
    return MP_SUCCESS;
}

void eg_finalize(void)
{
    if (mp_mype() >= 0) /* the PEs' graphs are live: it would free them under the PEs */
        lib_die("eg_finalize called while the PEs run; call it after mp_main returns");
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

mp_obj_t eg_graph_id(const eg_graph *g) { return EG_NEED(g, "eg_graph_id")->id; }
/* Another structure's id (a hash table, a snapshot) is refused: its partition was read as a
 * graph's. */
eg_graph *eg_graph_local(mp_obj_t id)
{
    return lib_part_checked(id, EG_MAGIC, "event graph", "eg_graph_local");
}
int eg_node_pe(const eg_graph *g, uint32_t node)
{
    EG_NEED(g, "eg_node_pe");
    return node < g->nnodes ? g->node_pe[node] : -1;
}
size_t eg_elt_size(const eg_graph *g) { return EG_NEED(g, "eg_elt_size")->E; }
eg_sched_mode eg_sched(const eg_graph *g) { return EG_NEED(g, "eg_sched")->sched_mode; }
uint32_t eg_capacity(const eg_graph *g) { return EG_NEED(g, "eg_capacity")->F; }
uint32_t eg_nnodes(const eg_graph *g) { return EG_NEED(g, "eg_nnodes")->nnodes; }
uint32_t eg_nedges(const eg_graph *g) { return EG_NEED(g, "eg_nedges")->nedges; }
eg_edge_def eg_edge(const eg_graph *g, uint32_t edge)
{
    EG_NEED(g, "eg_edge");
    return edge < g->nedges ? g->edges[edge] : (eg_edge_def){UINT32_MAX, UINT32_MAX};
}
const uint32_t *eg_in_edges(const eg_graph *g, uint32_t node, uint32_t *n)
{
    if (!g || !n)
        lib_die("eg_in_edges: NULL %s", g ? "count pointer" : "graph");
    if (node >= g->nnodes) {
        *n = 0;
        return NULL;
    }
    *n = g->in_off[node + 1] - g->in_off[node];
    return g->in_list + g->in_off[node];
}
const uint32_t *eg_out_edges(const eg_graph *g, uint32_t node, uint32_t *n)
{
    if (!g || !n)
        lib_die("eg_out_edges: NULL %s", g ? "count pointer" : "graph");
    if (node >= g->nnodes) {
        *n = 0;
        return NULL;
    }
    *n = g->out_off[node + 1] - g->out_off[node];
    return g->out_list + g->out_off[node];
}
size_t eg_pending_sends(const eg_graph *g, uint32_t node)
{
    return local_node(EG_NEED(g, "eg_pending_sends"), node) ? g->nodes[node].npend : 0;
}
int eg_is_waiting(const eg_graph *g, uint32_t node)
{
    return local_node(EG_NEED(g, "eg_is_waiting"), node) && g->nodes[node].waiting;
}

/* ------------------------------------------------------------------------------------ */
/* Destroy                                                                                */

static void destroyed(void *part)
{
    eg_graph *g = part;
    pthread_mutex_lock(&reg_lock);
    if (g->reg_prev)
        g->reg_prev->reg_next = g->reg_next;
    else
        registry = g->reg_next;
    if (g->reg_next)
        g->reg_next->reg_prev = g->reg_prev;
    pthread_mutex_unlock(&reg_lock);
    for (uint32_t j = 0; j < g->ngroups; j++)
        if (g->snd[j].released)
            mp_counter_free(g->snd[j].released);
    for (uint32_t u = 0; u < g->nnodes; u++)
        if (g->nodes[u].wake)
            mp_counter_free(g->nodes[u].wake);
    eg_stats_stop(g);
    graph_free(g);
}

mp_status eg_graph_destroy(eg_graph *g, mp_counter_t done)
{
    if (!g || !done || !is_frozen(g))
        return MP_FAIL;
    for (uint32_t u = 0; u < g->nnodes; u++)
        if (local_node(g, u) && (g->nodes[u].npend || g->nodes[u].waiting))
            return MP_FAIL;
    return lib_destroy(g->id, g->snap, destroyed, g, done);
}
