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

static void explore(uint64_t x)
{
    PHYLOGENY_INC(S.st, NTask, 1);
    S.tot[0]++;
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
    /* the supersets by one character above X's last: every subset is generated once */
    int last = 63 - __builtin_clzll(x);
    for (uint64_t c = (uint64_t)last + 1; c < prm.chars; c++) {
        uint64_t y = x | 1ull << c;
        if (store_has_subset_of(&S.failure, y)) {
            PHYLOGENY_INC(S.st, NPruneGen, 1);
            continue;
        }
        add_task(y);
    }
}

static void run_task(void)
{
    explore(S.x);
    ts_done(S.ts);
    mp_fiber_enable(mp_continue(w_remove, MP_SCHED_FIFO)); /* one task per fiber */
}

static void w_fetched(void *args)
{
    (void)args;
    PHYLOGENY_ACCESS(FETCH);
    run_task();
}

static void got_task(void)
{
    if (S.result == TS_TERMINATED) {
        mp_counter_add(S.finished, 1);
        return;
    }
    if (S.task.creator == S.me) {
        S.x = *S.task.subset;
        run_task();
        return;
    }
    /* [ Fetch the character subset ] */
    PHYLOGENY_INC(S.st, NFetch, 1);
    S.tot[2]++;
    S.fetch_target++;
    if (mp_bulk_read(S.task.creator, S.task.subset, &S.x, sizeof S.x, S.fetched) == MP_FAIL)
        die("bulk read failed");
    mp_counter_wait(S.fetched, S.fetch_target, mp_continue(w_fetched, MP_SCHED_FIFO));
}

static void w_got(void *args)
{
    (void)args;
    mp_access_declare(remove_access);
    got_task();
}

static void w_resumed(void *args);

void w_remove(void *args)
{
    (void)args;
    mp_access_declare(remove_access);
    /* Create a combine thread if necessary: the local pool ran dry */
    if (!S.combining && S.npes > 1 && ts_local_count(S.ts) == 0)
        comb_start();
    /* If combination is in progress: [ Wait until combination completes ] */
    if (S.exchanging) {
        S.paused = true;
        mp_counter_wait(S.resumed, ++S.resumed_target, mp_continue(w_resumed, MP_SCHED_FIFO));
        return;
    }
    /* [ Remove a task from the local task pool ] */
    S.wake_target++;
    mp_status s = ts_remove(S.ts, &S.task, NULL, &S.result, S.wake);
    if (s == MP_FAIL)
        die("ts_remove failed");
    if (s == MP_WAIT) {
        mp_counter_wait(S.wake, S.wake_target, mp_continue(w_got, MP_SCHED_FIFO));
        return;
    }
    got_task();
}

static void w_resumed(void *args)
{
    PHYLOGENY_ACCESS(COMBINE);
    w_remove(args);
}
