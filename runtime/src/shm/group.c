/*
 * shm/group.c -- aggregation groups: the buffers the PEs of one worker share (group.h).
 */
#include "group.h"

#include <stdlib.h>

shm_group *mpr_shm_group_new(int first, int count, int npes)
{
    shm_group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->agg = calloc((size_t)npes, sizeof *g->agg);
    g->xopen = malloc((size_t)npes * sizeof *g->xopen);
    g->xlisted = calloc((size_t)npes, 1);
    g->first = first;
    g->count = count;
    g->npes = npes;
    if (!g->agg || !g->xopen || !g->xlisted) {
        mpr_shm_group_free(g);
        return NULL;
    }
    return g;
}

/* After the run (a group's open buffers are left only by an abnormal end). */
void mpr_shm_group_free(shm_group *g)
{
    if (!g)
        return;
    if (g->agg)
        for (int i = 0; i < g->npes; i++)
            mpr_msgbuf_free(g->agg[i].buf);
    free(g->agg);
    free(g->xopen);
    free(g->xlisted);
    free(g);
}

void mpr_shm_group_opened(shm_group *g, int dst)
{
    if (dst < g->first || dst >= g->first + g->count) {
        if (!g->xlisted[dst]) {
            g->xlisted[dst] = 1;
            g->xopen[g->nxopen++] = dst;
        }
    } else if (mpr_g.pes[dst]->where == MPR_PE_IDLE) {
        g->idle_fed = true;
    }
}

void mpr_shm_group_flush(shm_group *g, mpr_agg_why why)
{
    for (int i = 0; i < g->nxopen; i++) {
        int dst = g->xopen[i];
        g->xlisted[dst] = 0;
        if (g->agg[dst].buf)
            mpr_agg_send_opened(&g->agg[dst], dst, why);
    }
    g->nxopen = 0;
}

static void send_opened(void *ctx, mpr_agg *a, int dst, mpr_agg_why why)
{
    (void)ctx;
    mpr_agg_send_opened(a, dst, why);
}

void mpr_shm_group_flush_due(shm_group *g)
{
    if (g->idled) { /* a member ran out of work: what it wrote goes now, as a PE's would */
        g->idled = false;
        mpr_shm_group_flush(g, MPR_AGG_DRAIN);
        return;
    }
    if (!g->nxopen)
        return;
    const mpr_pe *pe = mpr_g.pes[g->first]; /* the members share the settings */
    g->nxopen = mpr_agg_sweep(g->agg, g->xopen, g->nxopen, g->xlisted, pe->agg_cap,
                              pe->flush_delay_ns, send_opened, NULL);
}

mpr_msgbuf *mpr_shm_group_take(shm_group *g, int dst)
{
    mpr_msgbuf *b = g->agg[dst].buf;
    if (b) {
        g->agg[dst].buf = NULL;
        g->agg[dst].urgent = false; /* its destination is taking it */
    }
    return b;
}
