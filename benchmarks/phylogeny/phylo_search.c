/*
 * phylo_search.c -- the compute thread of the Phylogeny program (Wen 1995, Fig 2.10): remove a
 * task (a character subset) from the task stealer, fetch its subset from the creator when it
 * ran elsewhere, prune it with the failure and success stores or test it, store the outcome
 * and generate its supersets; pause while a combine exchanges the failure stores.  See
 * phylogeny.c.
 */
#include "phylo_internal.h"

#define die phylo_die

void add_task(uint64_t y)
{
    if (!S.arena || S.arena->used == 512) {
        chunk *c = calloc(1, sizeof *c);
        if (!c)
            die("out of memory");
        c->next = S.arena;
        S.arena = c;
    }
    uint64_t *slot = &S.arena->subset[S.arena->used++];
    *slot = y;
    task_ref r = {slot, S.me, 0};
    /* larger subsets first: depth-first keeps the live frontier small; among subsets of one
     * size, the lower last character first, so that a branch's supersets are found (and
     * prune the test of its later siblings) before those siblings run.  The order of
     * generation used to give that, but the task stealer runs equal priorities newest first */
    int last = 63 - __builtin_clzll(y);
    /* work: the characters that can still extend it, a measure of its subtree that thieves
     * use to take the big subtrees */
    ts_hints h = {__builtin_popcountll(y) * 64 + (63 - last), (double)(prm.chars - last), 1.0};
    if (ts_add(S.ts, TS_ANY, &r, &h) == MP_FAIL)
        die("ts_add failed");
    PHYLOGENY_INC(S.st, NGen, 1);
}

/* The characters by which X's supersets are generated: every one not in X (--generate=all,
 * the paper's "adding one character", so a subset of k characters has k parents), or those
 * above X's last (every subset is generated once, by its parent without its last) */
static uint64_t extensions(uint64_t x)
{
    uint64_t allc = prm.chars == 64 ? ~0ull : (1ull << prm.chars) - 1;
    if (prm.every)
        return allc & ~x;
    int last = 63 - __builtin_clzll(x);
    return allc & ~((2ull << last) - 1); /* (2 << 63 is 0: nothing above character 63) */
}

/* --generate=all: X was explored before by this PE, or by the PE whose known success a fetch
 * brought (its explorer generated its supersets).  Only this PE's success store says so, as
 * in the paper, where each PE prunes with its own stores: where a subtree stays on the PE
 * that generated it (stealing), the subsets its k parents generate again meet that PE's
 * store; where tasks scatter (pushing), a copy generated or run elsewhere escapes it.  On one
 * PE the search runs depth first (add_task), so a subset is explored before its other
 * parents are and none escapes. */
static bool explored_here(uint64_t x) { return prm.every && store_has(&S.success, x); }

static void explore(uint64_t x)
{
    PHYLOGENY_INC(S.st, NTask, 1);
    S.tot[0]++;
    if (explored_here(x)) {
        PHYLOGENY_INC(S.st, NPruneDup, 1);
        return;
    }
    if (store_has_subset_of(&S.failure, x)) {
        PHYLOGENY_INC(S.st, NPruneFail, 1);
        return;
    }
    if (store_has_superset_of(&S.success, x)) {
        PHYLOGENY_INC(S.st, NPruneSucc, 1);
    } else {
        uint64_t pairs = 0, witness = 0;
        bool ok = compatible(x, &pairs, &witness);
        PHYLOGENY_INC(S.st, NTest, 1);
        S.tot[1]++;
        PHYLOGENY_INC(S.st, NPair, pairs);
        if (!ok) {
            store_insert(&S.failure, witness);
            PHYLOGENY_INC(S.st, NFailure, 1);
            return;
        }
    }
    store_insert(&S.success, x);
    PHYLOGENY_INC(S.st, NSuccess, 1);
    S.tot[4]++; /* the store also holds successes imported with fetches: not counted */
    for (uint64_t r = extensions(x); r; r &= r - 1) {
        uint64_t y = x | (r & -r);
        if (store_has_subset_of(&S.failure, y)) {
            PHYLOGENY_INC(S.st, NPruneGen, 1);
            continue;
        }
        if (explored_here(y)) {
            PHYLOGENY_INC(S.st, NGenDup, 1);
            continue;
        }
        add_task(y);
    }
}

/* ------------------------------------------------------------------------------------ */
/* The compute thread: the task stealer's worker loop with the program's steps            */

static void search_run(ts_t ts, void *task, const ts_hints *h, void *ctx)
{
    (void)ts, (void)task, (void)h, (void)ctx;
    explore(S.x); /* prepared by search_prepare */
}

/* [ Fetch the character subset ] when the task ran elsewhere.  The creator answers with the
 * subset and, when its success store holds a superset of it, one such success that ends at a
 * leaf of its trie: a thief takes the oldest tasks, whose siblings its victim has explored,
 * so the victim's store often settles the task and much of its subtree already, and without
 * that success the thief would test again, one by one, what the victim knew. */
typedef struct {
    const uint64_t *subset; /* on the creator */
    uint64_t x, known;      /* the answer: the subset, a known success containing it (or 0) */
    int32_t from;
    int32_t pad_;
} fetch_msg;

static void fetch_answer(void *args)
{
    fetch_msg *m = args;
    PHYLOGENY_ACCESS(FETCH);
    S.x = m->x;
    if (m->known)
        store_insert(&S.success, m->known);
    mp_counter_add(S.fetched, 1);
}

static void fetch_serve(void *args)
{
    fetch_msg *m = args;
    PHYLOGENY_ACCESS(FETCH);
    m->x = *m->subset;
    m->known = store_superset_leaf(&S.success, m->x);
    if (mp_invoke(m->from, fetch_answer, m, sizeof *m, MP_SCHED_URGENT) != MP_SUCCESS)
        die("mp_invoke failed");
}

static mp_status search_prepare(ts_t ts, void *task, void *ctx, mp_counter_t ready)
{
    (void)ts, (void)ctx;
    memcpy(&S.task, task, sizeof S.task);
    if (S.task.creator == S.me) {
        S.x = *S.task.subset;
        return MP_OK;
    }
    PHYLOGENY_INC(S.st, NFetch, 1);
    S.tot[2]++;
    S.fetched = ready;
    fetch_msg m = {S.task.subset, 0, 0, S.me, 0};
    if (mp_invoke(S.task.creator, fetch_serve, &m, sizeof m, MP_SCHED_URGENT) != MP_SUCCESS)
        die("mp_invoke failed");
    return MP_WAIT;
}

static mp_status search_before_remove(ts_t ts, void *ctx, mp_counter_t resume)
{
    (void)ctx;
    /* Create a combine thread if necessary: the local pool ran dry */
    if (!S.combining && S.npes > 1 && ts_local_count(ts) == 0)
        comb_start();
    /* If combination is in progress: [ Wait until combination completes ] */
    if (!S.exchanging)
        return MP_OK;
    S.paused = true;
    S.resumed = resume; /* comb_step increments it */
    return MP_WAIT;
}

static void search_resumed(void *ctx, int why)
{
    (void)ctx;
    if (why == TS_RESUME_PAUSE)
        PHYLOGENY_ACCESS(COMBINE);
    else
        PHYLOGENY_ACCESS(FETCH);
}

void search_start(void)
{
    ts_worker_ops ops = {.run = search_run,
                         .before_remove = search_before_remove,
                         .prepare = search_prepare,
                         .resumed = search_resumed};
    if (ts_run_worker(S.ts, &ops, NULL, S.finished) != MP_SUCCESS)
        die("cannot start the worker");
}
