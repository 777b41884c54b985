/*
 * eg_channel.c -- the event graph's edges at work (Wen 1995, section 2.2.4.2): shipping
 * elements per group, delivering them into the receivers' rings, releasing space back to the
 * senders (flow control), and freeze.  See eventgraph.c for the structure and the protocol.
 */
#include "eg_internal.h"

/* ------------------------------------------------------------------------------------ */
/* Snapshot bookkeeping                                                                   */

/* A mutator shipped by PE `from` has arrived here: it completes where it arrived (the
 * runtime counts the completion; nothing goes back to the sender). */
static void arrived(eg_graph *g, int from) { mp_snapshot_complete(g->snap, from); }

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
        lib_die("flow control violated on group %u", j);
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
    eg_graph *g = lookup_msg(m);
    arrived(g, m->from);
    deliver(g, m->group, m->seq, (const unsigned char *)p + sizeof *m);
}

static void release_arrive(void *p)
{
    GRAPH_ACCESS(DEQ);
    const msg_hdr *m = p;
    eg_graph *g = lookup_msg(m);
    arrived(g, m->from);
    mp_counter_add(g->snd[m->group].released, m->seq); /* may enable a waiting ENQ fiber */
}

static void send_release(eg_graph *g, uint32_t j, uint64_t count)
{
    int src_pe = g->node_pe[g->groups[j].src];
    mp_snapshot_execute(g->snap);
    msg_hdr m = {g->id, j, g->me, g->cfg, count};
    GRAPH_INC(g->st, NMsg, 1);
    mp_invoke(src_pe, release_arrive, &m, sizeof m, g->sched);
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
    if (!local_in_edge(EG_NEED(g, "eg_count"), edge))
        return 0;
    GRAPH_INC(g->st, NOp, 1);
    return (size_t)edge_count(g, edge);
}

const void *eg_examine(eg_graph *g, uint32_t edge, size_t i)
{
    if (!local_in_edge(EG_NEED(g, "eg_examine"), edge) || i >= edge_count(g, edge))
        return NULL;
    GRAPH_INC(g->st, NOp, 1);
    const rcv_t *r = &g->rcv[g->edge_group[edge]];
    return r->ring + (size_t)((g->edge_read[edge] + i) % g->F) * g->E;
}

size_t eg_remove(eg_graph *g, uint32_t edge, void *dst, size_t max)
{
    if (!local_in_edge(EG_NEED(g, "eg_remove"), edge))
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
    g->edge_read[edge] += k; /* NOp and DeqSize follow from it (eg_stats.c) */
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
    if (!g || !local_node(g, node) || g->in_off[node + 1] == g->in_off[node]) {
        lib_misuse("eg_wait: %s", !g                     ? "NULL graph"
                                  : !local_node(g, node) ? "the node is not one of this PE's"
                                                         : "the node has no input edge");
        return MP_FAIL;
    }
    lnode_t *n = &g->nodes[node];
    if (n->waiting) {
        lib_misuse("eg_wait: node %u already has a pending eg_wait", node);
        return MP_FAIL;
    }
    node_args a = {g->id, node, done};
    mp_fiber_t f = mp_fiber_create(deq_wake, &a, sizeof a, g->sched);
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
    uint32_t j = g->grp_off[node];
    if (j == g->grp_off[node + 1]) { /* no out-edges: no group's count tells of this send */
        GRAPH_INC(g->st, NOp, 1);
        return;
    }
    /* NOp, EnqSize and NMsg follow from the groups' counts (eg_stats.c).  A do-while: the
     * test above was the loop's first. */
    do {
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
        *m = (msg_hdr){g->id, j, g->me, g->cfg, seq};
        mp_snapshot_execute(g->snap);
        mp_invoke(gr->dst_pe, item_arrive, buf, sizeof *m + g->E, g->sched);
    } while (++j < g->grp_off[node + 1]);
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
            /* a preemptive fiber has no continuation: it waits again as a new fiber */
            enq_block(g, a->node,
                      g->sched == MP_SCHED_PREEMPT
                          ? mp_fiber_create(enq_fiber, a, sizeof *a, MP_SCHED_PREEMPT)
                          : mp_continue(enq_fiber, MP_SCHED_FIFO));
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
    if (!g || !elt || !local_node(g, node)) {
        lib_misuse("eg_send: %s", !g     ? "NULL graph"
                                  : !elt ? "NULL element"
                                         : "the node is not one of this PE's");
        return MP_FAIL;
    }
    lnode_t *n = &g->nodes[node]; /* NOp: shipped or suspended below (eg_stats.c) */
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
        enq_block(g, node, mp_fiber_create(enq_fiber, &a, sizeof a, g->sched));
    }
    return MP_WAIT;
}

/* ------------------------------------------------------------------------------------ */
/* Freeze / unfreeze                                                                      */

mp_status eg_freeze(eg_graph *g, mp_counter_t done)
{
    if (!g || !done || is_frozen(g)) {
        lib_misuse("eg_freeze: %s", !g      ? "NULL graph"
                                    : !done ? "NULL done counter"
                                            : "the graph is frozen already");
        return MP_FAIL;
    }
    /* the snapshot's freeze increments `done` on every PE once every element and release
     * shipped before it has arrived */
    return mp_snapshot_freeze(g->snap, done);
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
