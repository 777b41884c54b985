/*
 * phylo_combine.c -- combining the failure stores (the "combine" threads of Wen 1995, Fig
 * 2.10): a barrier overlapped with work, then log2(P) butterfly steps during which the
 * compute thread pauses.  See phylogeny.c.
 */
#include "phylo_internal.h"

#define die phylo_die

static void comb_step(void);

void send_masks(int pe, mp_fiber_fn fn, const uint64_t *v, size_t n, uint32_t round, uint32_t step)
{
    comb_msg m = {round, step, 0, 0, {0}};
    size_t i = 0;
    do {
        m.n = 0;
        for (; i < n && m.n < CHUNK_MASKS; i++)
            m.mask[m.n++] = v[i];
        m.last = i == n;
        if (mp_invoke(pe, fn, &m, offsetof(comb_msg, mask) + m.n * sizeof m.mask[0],
                      MP_SCHED_FIFO) != MP_SUCCESS)
            die("mp_invoke failed");
    } while (i < n);
}

static void comb_recv(void *args)
{
    comb_msg *m = args;
    for (uint32_t i = 0; i < m->n; i++)
        vec_push(&S.staged[m->step], m->mask[i]);
    if (m->last)
        mp_counter_add(S.step_in[m->step], 1);
}

static void comb_merged(void *args)
{
    (void)args;
    PHYLOGENY_ACCESS(COMBINE);
    u64vec *in = &S.staged[S.step];
    for (size_t i = 0; i < in->n; i++)
        if (!store_has_subset_of(&S.failure, in->v[i])) {
            store_insert(&S.failure, in->v[i]);
            PHYLOGENY_INC(S.st, NCombineMerged, 1);
        }
    PHYLOGENY_INC(S.st, NCombineRecv, in->n);
    S.tot[3] += (double)in->n;
    in->n = 0;
    S.step++;
    comb_step();
}

/* One butterfly step, or the end of the round. */
static void comb_step(void)
{
    while (S.step < S.nsteps && (S.me ^ (1 << S.step)) >= S.npes)
        S.step++; /* no partner at this level (P not a power of two) */
    if (S.step == S.nsteps) {
        S.combining = S.exchanging = false;
        S.done_rounds++;
        mp_counter_add(S.rounds_done, 1);
        if (S.paused) { /* resume the compute thread */
            S.paused = false;
            mp_counter_add(S.resumed, 1);
        }
        return;
    }
    int partner = S.me ^ (1 << S.step);
    send_masks(partner, comb_recv, S.failure.list, S.failure.nlist, S.done_rounds,
               (uint32_t)S.step);
    mp_counter_wait(S.step_in[S.step], S.done_rounds + 1, mp_continue(comb_merged, MP_SCHED_FIFO));
}

static void comb_go(void *args)
{
    (void)args;
    PHYLOGENY_ACCESS(COMBINE);
    /* the barrier completed: every PE is combining; compute pauses */
    S.exchanging = true;
    S.step = 0;
    PHYLOGENY_INC(S.st, NCombine, 1);
    comb_step();
}

void comb_start(void)
{
    S.combining = true;
    S.started++;
    if (mp_obj_barrier(S.comb_obj, S.barrier) == MP_FAIL)
        die("barrier failed");
    /* a fiber of its own: the compute thread that starts the round goes on with its own
     * continuation (the barrier overlaps with work) */
    mp_counter_wait(S.barrier, S.started, mp_fiber_create(comb_go, NULL, 0, MP_SCHED_FIFO));
}
