/* snapshot.c -- the snapshot data structure on P PEs.  Each PE runs a chain of M mutators;
 * a mutator executes on its PE and completes on another.  Twice, every PE freezes: when
 * the freeze is done all mutators that executed on this PE have completed, queries return
 * WAIT and the chain is suspended; after unfreeze it resumes.  At the end a sync waits for
 * every mutator on every PE.
 * Scenario "misuse": snapshot calls on an object that is not a snapshot, or that does not
 * exist, are refused with a code ("<case> <code>" lines, as misuse.c prints) and the user's
 * partition is left alone.  Scenario "fatal <call>": the calls that return nothing end the
 * run with a message (exit 3): execute / complete / unfreeze on a user object, complete
 * before mp_main, more completions than executions (on the executing PE at once, on another
 * PE at the next freeze).  Scenarios "slow" and "lost": a freeze's rounds that stall (see
 * slow_main). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "check.h"

#include <stdatomic.h>
#include <time.h>

#define M 400

static mp_snapshot_t snaps[MAXPE]; /* one handle per PE (the same id everywhere) */
#define snap snaps[mp_mype()]
static atomic_int executed[MAXPE], completed[MAXPE];
static int suspended[MAXPE], frozen_checks[MAXPE], synced[MAXPE];
static mp_counter_t freeze_done[MAXPE], sync_done[MAXPE];

typedef struct {
    int n;
} chain;

static void apply(void *p)
{
    int from = *(int *)p;
    /* the mutation itself, then completion reported to the executing PE */
    atomic_fetch_add(&completed[from], 1);
    mp_snapshot_complete(snap, from);
}

static void frozen(void *p)
{
    (void)p;
    int me = mp_mype();
    CHECK_EQ(atomic_load(&completed[me]), atomic_load(&executed[me]));
    CHECK_EQ(mp_snapshot_query(snap), MP_WAIT);
    CHECK(suspended[me] >= frozen_checks[me] + 1); /* the chain ran into this freeze */
    frozen_checks[me]++;
    mp_snapshot_unfreeze(snap);
    CHECK_EQ(mp_snapshot_query(snap), MP_OK);
}

static void synced_fn(void *p)
{
    (void)p;
    int me = mp_mype(), P = mp_npes();
    int e = 0, c = 0;
    for (int i = 0; i < P; i++)
        e += atomic_load(&executed[i]), c += atomic_load(&completed[i]);
    CHECK_EQ(e, P * M);
    CHECK_EQ(c, P * M);
    synced[me]++;
}

static void mutator(void *p)
{
    chain *a = p;
    int me = mp_mype(), P = mp_npes();
    if (mp_snapshot_query(snap) == MP_WAIT) {
        suspended[me]++;
        CHECK_OK(mp_snapshot_suspend(snap, mp_continue(mutator, MP_SCHED_FIFO)));
        return;
    }
    mp_snapshot_execute(snap);
    atomic_fetch_add(&executed[me], 1);
    CHECK_OK(mp_invoke((me + 1 + a->n) % P, apply, &me, sizeof me, MP_SCHED_FIFO));
    a->n++;
    if (a->n == M / 4 || a->n == M / 2) { /* two freeze / unfreeze rounds */
        /* collective freeze, then check in `frozen` */
        freeze_done[me] = mp_counter_new(0);
        CHECK_OK(
            mp_counter_wait(freeze_done[me], 1, mp_fiber_create(frozen, NULL, 0, MP_SCHED_FIFO)));
        CHECK_EQ(mp_snapshot_freeze(snap, freeze_done[me]), MP_WAIT);
    }
    if (a->n == M) {
        sync_done[me] = mp_counter_new(0);
        CHECK_OK(
            mp_counter_wait(sync_done[me], 1, mp_fiber_create(synced_fn, NULL, 0, MP_SCHED_FIFO)));
        CHECK_EQ(mp_snapshot_sync(snap, sync_done[me]), MP_WAIT);
        return;
    }
    CHECK_OK(mp_fiber_enable(mp_continue(mutator, MP_SCHED_FIFO)));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    CHECK_OK(mp_snapshot_new(&snap));
    chain c = {0};
    CHECK_OK(mp_spawn(mutator, &c, sizeof c, MP_SCHED_FIFO));
}

static void report(const char *what, int code)
{
    printf("%s %d\n", what, code);
    fflush(stdout);
}

static int user_part[MAXPE][4]; /* a user object's partition, with guards on either side */
static mp_obj_t user_obj[MAXPE];

static void misuse_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    CHECK_OK(mp_obj_create(&user_part[me][1], &user_obj[me]));
    CHECK_OK(mp_snapshot_new(&snap));
    mp_counter_t c = mp_counter_new(0);
    CHECK_EQ(mp_obj_barrier(snap, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 1));
    if (me == 0) {
        mp_obj_t u = user_obj[me];
        report("query_not_snapshot", mp_snapshot_query(u));
        report("suspend_not_snapshot",
               mp_snapshot_suspend(u, mp_fiber_create(apply, &me, sizeof me, MP_SCHED_FIFO)));
        report("freeze_not_snapshot", mp_snapshot_freeze(u, c));
        report("sync_not_snapshot", mp_snapshot_sync(u, c));
        report("query_rts_object", mp_snapshot_query(MP_OBJ_RTS));
        report("query_never_created", mp_snapshot_query(snap + 1000));
        report("query_id_max", mp_snapshot_query((mp_snapshot_t)0xFFFFFFFF));
        report("query_snapshot", mp_snapshot_query(snap)); /* the real one still works */
    }
    CHECK_EQ(mp_obj_barrier(snap, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 2));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(user_part[me][i], 0);
    mp_counter_free(c);
}

static const char *fatal_call;

static void fatal_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    CHECK_OK(mp_obj_create(&user_part[me][1], &user_obj[me]));
    mp_snapshot_t snap;
    CHECK_OK(mp_snapshot_new(&snap));
    mp_counter_t c = mp_counter_new(0);
    CHECK_EQ(mp_obj_barrier(user_obj[me], c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 1));
    if (strcmp(fatal_call, "complete_extra_remote") == 0) { /* found by the freeze's round */
        if (me == 0)
            mp_snapshot_execute(snap);
        if (me == 1) { /* one mutator of PE 0, completed twice here */
            mp_snapshot_complete(snap, 0);
            mp_snapshot_complete(snap, 0);
        }
        CHECK_EQ(mp_snapshot_freeze(snap, c), MP_WAIT);
        CHECK_OK(mp_block_until(c, 2));
        printf("survived %s\n", fatal_call);
        return;
    }
    if (me != 0)
        return;
    if (strcmp(fatal_call, "complete_pe_negative") == 0) /* was sent nowhere: a lost completion */
        mp_snapshot_complete(snap, -1);
    else if (strcmp(fatal_call, "complete_pe_npes") == 0)
        mp_snapshot_complete(snap, mp_npes());
    else if (strcmp(fatal_call, "execute") == 0)
        mp_snapshot_execute(user_obj[me]);
    else if (strcmp(fatal_call, "complete") == 0)
        mp_snapshot_complete(user_obj[me], mp_npes() - 1);
    else if (strcmp(fatal_call, "unfreeze") == 0)
        mp_snapshot_unfreeze(user_obj[me]);
    else if (strcmp(fatal_call, "unfreeze_unfrozen") == 0) /* a message, and no thaw */
        mp_snapshot_unfreeze(snap);
    else if (strcmp(fatal_call, "complete_extra") == 0) { /* one mutator, two completions */
        mp_snapshot_execute(snap);
        mp_snapshot_complete(snap, 0);
        mp_snapshot_complete(snap, 0);
    }
    printf("survived %s\n", fatal_call);
}

/* Scenario "slow": PE 0's one mutator completes on PE 1 after a chain of short fibers that
 * lasts 100 ms, while every PE keeps serving messages, so the freeze's rounds find no progress
 * for a while and stall; the completion must start them again.  Scenario "lost": the mutator
 * never completes, and the run must end with a hang report, not circle in rounds. */
static mp_counter_t slow_done[MAXPE];
static int slow_synced[MAXPE];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void slow_apply(void *p)
{
    double until = *(double *)p;
    if (now_s() < until) { /* a short fiber, then the next behind whatever has queued */
        CHECK_OK(mp_spawn(slow_apply, &until, sizeof until, MP_SCHED_FIFO));
        return;
    }
    mp_snapshot_complete(snap, 0);
}

static void slow_synced_fn(void *p)
{
    (void)p;
    slow_synced[mp_mype()]++;
    /* at once: a wake still on its way must find the snapshot gone and do nothing */
    CHECK_EQ(mp_obj_destroy(snap, slow_done[mp_mype()]), MP_WAIT);
}

static void slow_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    CHECK_OK(mp_snapshot_new(&snap));
    mp_counter_t c = mp_counter_new(0);
    CHECK_EQ(mp_obj_barrier(snap, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 1));
    mp_counter_free(c);
    if (me == 0) {
        CHECK_EQ(mp_snapshot_query(snap), MP_OK);
        mp_snapshot_execute(snap);
        double until = now_s() + 0.1;
        if (strcmp(tst_scenario(argc, argv, ""), "slow") == 0)
            CHECK_OK(mp_invoke(1, slow_apply, &until, sizeof until, MP_SCHED_FIFO));
    }
    slow_done[me] = mp_counter_new(0);
    CHECK_OK(
        mp_counter_wait(slow_done[me], 1, mp_fiber_create(slow_synced_fn, NULL, 0, MP_SCHED_FIFO)));
    CHECK_EQ(mp_snapshot_sync(snap, slow_done[me]), MP_WAIT);
}

int main(int argc, char **argv)
{
    const char *scenario = tst_scenario(argc, argv, "default");
    if (strcmp(scenario, "misuse") == 0) {
        /* outside a running PE: returned where the call returns a code */
        report("query_before_main", mp_snapshot_query(1));
        report("freeze_before_main", mp_snapshot_freeze(1, NULL));
        int rc = tst_run(argc, argv, 3, misuse_main);
        printf("misuse rc=%d\n", rc);
        return rc;
    }
    if (strcmp(scenario, "slow") == 0 || strcmp(scenario, "lost") == 0) {
        int rc = tst_run(argc, argv, 3, slow_main);
        for (int i = 0; rc == 0 && i < mp_npes(); i++)
            CHECK_EQ(slow_synced[i], 1);
        printf("%s rc=%d\n", scenario, rc);
        return rc;
    }
    if (strcmp(scenario, "fatal") == 0 && argc > 2) {
        fatal_call = argv[2];
        if (strcmp(fatal_call, "complete_before_main") == 0) {
            mp_snapshot_complete(1, 0); /* dereferenced the missing PE */
            puts("survived complete_before_main");
            return 0;
        }
        return tst_run(argc, argv, 3, fatal_main);
    }
    int rc = tst_run(argc, argv, 4, pe_main);
    if (rc)
        return rc;
    for (int i = 0; i < mp_npes(); i++) {
        CHECK_EQ(snaps[i], snaps[0]);
        printf("PE %d: executed=%d completed=%d suspended=%d\n", i, atomic_load(&executed[i]),
               atomic_load(&completed[i]), suspended[i]);
        CHECK_EQ(frozen_checks[i], 2);
        CHECK_EQ(synced[i], 1);
        CHECK_EQ(atomic_load(&executed[i]), M);
    }
    puts("snapshot: OK");
    return 0;
}
