/*
 * eg_stats.c -- the event graph's statistics that follow from its own state.  The partition
 * keeps, for its own work, how many elements each group has sent (snd[j].sent: flow control)
 * and how many each in-edge has removed (edge_read: the read cursors), so the per-element
 * counts need no add per event: they are derived when a reader asks (mp_stats_derive) --
 *   EnqSize  E x elements shipped over each out-edge (a group ships one per edge),
 *   NMsg     elements shipped to a group on another PE (one message each), plus the release
 *            and freeze messages, which are counted,
 *   NOp      sends accepted (shipped, or still suspended) plus elements removed, plus the
 *            queries (eg_count, eg_examine) and the sends of nodes without out-edges, which
 *            are counted (nothing of the partition records them),
 *   DeqSize  E x elements removed.
 */
#include "eg_internal.h"

#ifndef MPROF_DISABLE
static void derive(const void *ctx, uint64_t *add)
{
    const eg_graph *g = ctx;
    graph_stats_t *d = (graph_stats_t *)add;
    uint64_t shipped = 0, messages = 0, sends = 0, removed = 0;
    for (uint32_t j = 0; j < g->ngroups; j++) {
        const group_t *gr = &g->groups[j];
        if (g->node_pe[gr->src] != g->me)
            continue;
        uint64_t sent = g->snd[j].sent;
        shipped += sent * gr->n;
        if (gr->dst_pe != g->me)
            messages += sent;
    }
    for (uint32_t u = 0; u < g->nnodes; u++)
        if (g->node_pe[u] == g->me) {
            /* every group of u sent each element u shipped: its first one counts them */
            if (g->grp_off[u] < g->grp_off[u + 1])
                sends += g->snd[g->grp_off[u]].sent;
            sends += g->nodes[u].npend;
        }
    for (uint32_t e = 0; e < g->nedges; e++)
        if (g->node_pe[g->edges[e].dst] == g->me)
            removed += g->edge_read[e];
    d->EnqSize = shipped * g->E;
    d->NMsg = messages;
    d->NOp = sends + removed;
    d->DeqSize = removed * g->E;
}

/* (the record is this PE's, made by graph_stats_create: these cannot fail) */
void eg_stats_start(eg_graph *g) { (void)mp_stats_derive(g->st, derive, g); }
void eg_stats_stop(eg_graph *g) { (void)mp_stats_derive(g->st, NULL, NULL); }
#else
void eg_stats_start(eg_graph *g) { (void)g; }
void eg_stats_stop(eg_graph *g) { (void)g; }
#endif
