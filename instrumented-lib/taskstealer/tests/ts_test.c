/* ts_test.c -- the task stealer on P PEs.
 *
 *   ts_test imbalance TOPOLOGY [n=N] [us=MICROSECONDS]
 *       PE 0 adds N tasks to its own pool; every PE runs a worker.  Every task runs exactly
 *       once, and when termination is announced all N have run.
 *   ts_test spawn TOPOLOGY [depth=D] [us=MICROSECONDS]
 *       PE 0 adds one root task; a task of depth d < D adds two children, one explicitly to
 *       the next PE's pool (a migration in flight) and one to TS_ANY.  2^(D+1)-1 tasks.
 *   ts_test priority
 *       (any P) each PE adds tasks with mixed priorities to its own pool before its worker
 *       starts, with stealing off (push topology, explicit local adds): each PE runs its
 *       tasks in non-increasing priority, equal priorities newest first.
 *   ts_test misuse CASE [n=N]
 *       misuse is reported on stderr and refused (see misuse() below; the cases that end the
 *       run say so).
 */
#include "check.h"
#include "taskstealer.h"
#include "taskstealer_perf.h"

#include <stdatomic.h>
#include <stdint.h>

typedef struct {
    uint32_t id;
    uint32_t depth;
    int32_t priority;
    uint32_t order;
} task;

static const char *scenario = "imbalance";
static int topology = TS_RING;
static long N = 200, DEPTH = 7, US = 100;
static long expected;
static atomic_int *ran;
static ts_t tss[MAXPE];
static long per_pe[MAXPE], finished_seen[MAXPE];
static mp_counter_t fin[MAXPE];
static int last_prio[MAXPE];
static uint32_t last_order[MAXPE];
static long order_checked[MAXPE];

static void run_task(ts_t ts, void *tp, const ts_hints *h, void *ctx)
{
    (void)ctx;
    task t;
    memcpy(&t, tp, sizeof t);
    int me = mp_mype();
    CHECK(t.id < (uint32_t)expected);
    CHECK_EQ(atomic_fetch_add(&ran[t.id], 1), 0); /* exactly once */
    per_pe[me]++;
    CHECK_EQ(h->priority, t.priority);
    if (US > 0)
        tst_busy((double)US * 1e-6);
    if (strcmp(scenario, "priority") == 0) {
        if (order_checked[me]) {
            CHECK(t.priority <= last_prio[me]);
            if (t.priority == last_prio[me])
                CHECK(t.order < last_order[me]); /* the owner runs newest first */
        }
        last_prio[me] = t.priority;
        last_order[me] = t.order;
        order_checked[me]++;
    }
    if (strcmp(scenario, "spawn") == 0 && t.depth < (uint32_t)DEPTH) {
        for (int c = 0; c < 2; c++) {
            task k = {(uint32_t)(2 * t.id + 1 + (uint32_t)c), t.depth + 1, 0, 0};
            ts_hints kh = {0, 1.0, 0.5};
            int dest = c == 0 ? (me + 1) % mp_npes() : TS_ANY;
            mp_status s = ts_add(ts, dest, &k, &kh);
            CHECK(s != MP_FAIL);
            if (dest == me)
                CHECK_EQ(s, MP_OK);
        }
    }
}

static double total_seen[MAXPE];

static void check_total(void *p)
{
    mp_counter_free(*(mp_counter_t *)p);
    /* termination is announced only when every task, on every PE, has run */
    CHECK_EQ((long)total_seen[mp_mype()], expected);
}

static void destroyed(void *p)
{
    int me = mp_mype();
    CHECK(mp_obj_local(tss[me]) == NULL);
    mp_counter_free(*(mp_counter_t *)p);
    mp_counter_free(fin[me]);
}

static void finished(void *p)
{
    (void)p;
    int me = mp_mype();
    /* A reduction rather than a shared counter: under MPI every PE is its own process. */
    mp_counter_t rc = mp_counter_new(0);
    CHECK(mp_obj_reduce(MP_OBJ_RTS, MP_REDUCE_SUM, (double)per_pe[me], &total_seen[me], rc) !=
          MP_FAIL);
    CHECK_EQ(mp_counter_wait(rc, 1, mp_fiber_create(check_total, &rc, sizeof rc, MP_SCHED_FIFO)),
             MP_SUCCESS);
    CHECK(ts_terminated(tss[me]));
    CHECK_EQ(ts_local_count(tss[me]), 0);
    finished_seen[me]++;
    /* a remove after termination answers at once */
    task t;
    int result = -1;
    mp_counter_t c = mp_counter_new(0);
    CHECK_EQ(ts_remove(tss[me], &t, NULL, &result, c), MP_OK);
    CHECK_EQ(result, TS_TERMINATED);
    CHECK_EQ(mp_counter_value(c), 1);
    mp_counter_free(c);
    /* collective; waits for the last steal refusals to land */
    mp_counter_t d = mp_counter_new(0);
    CHECK_EQ(ts_destroy(tss[me], d), MP_WAIT);
    CHECK_EQ(mp_counter_wait(d, 1, mp_fiber_create(destroyed, &d, sizeof d, MP_SCHED_FIFO)),
             MP_SUCCESS);
}

/* ---- misuse ------------------------------------------------------------------------ */

static const char *misuse_case;

static void count_task(ts_t ts, void *tp, const ts_hints *h, void *ctx)
{
    (void)ts, (void)tp, (void)h;
    ++*(long *)ctx;
}

/* A task added after termination could never run: refused (it was accepted and dropped). */
static void misuse_add_after_termination(void)
{
    int me = mp_mype();
    ts_options o;
    ts_options_init(&o, sizeof(task));
    ts_t ts;
    CHECK_OK(ts_create(&o, &ts));
    task t = {0, 0, 0, 0};
    CHECK_EQ(ts_add(ts, TS_ANY, &t, NULL), MP_OK);
    mp_counter_t c = mp_counter_new(0);
    CHECK_OK(ts_run(ts, count_task, &per_pe[me], c));
    CHECK_OK(mp_block_until(c, 1));
    CHECK(ts_terminated(ts));
    CHECK_EQ(ts_add(ts, TS_ANY, &t, NULL), MP_FAIL);
    CHECK_EQ(ts_add(ts, me, &t, NULL), MP_FAIL);
    CHECK_EQ(ts_add(ts, (me + 1) % mp_npes(), &t, NULL), MP_FAIL);
    CHECK_EQ(ts_local_count(ts), 0);
    CHECK_EQ(ts_destroy(ts, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 2));
    mp_counter_free(c);
}

/* Ids of other objects (a snapshot, a plain object) are no stealers: refused by the calls that
 * return an error, and ts_local_count (which cannot) ends the run. */
static void misuse_kind(void)
{
    mp_obj_t ids[3];
    tst_foreign_ids(ids);
    mp_counter_t c = mp_counter_new(0);
    task t = {0, 0, 0, 0};
    int result;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(ts_add(ids[i], TS_ANY, &t, NULL), MP_FAIL);
        CHECK_EQ(ts_remove(ids[i], &t, NULL, &result, c), MP_FAIL);
        CHECK_EQ(ts_destroy(ids[i], c), MP_FAIL);
        CHECK_EQ(ts_run(ids[i], run_task, NULL, c), MP_ERR_INVALID_ARG);
    }
    CHECK_EQ(mp_counter_value(c), 0);
    mp_counter_free(c);
    printf("misuse kind: OK (PE %d)\n", mp_mype());
    if (strcmp(misuse_case, "kind_count") == 0)
        ts_local_count(ids[0]); /* ends the run */
}

/* Refused options are told on stderr, not only returned. */
static void misuse_options(void)
{
    ts_options o;
    ts_t ts;
    ts_options_init(&o, 0);
    CHECK_EQ(ts_create(&o, &ts), MP_ERR_INVALID_ARG);
    ts_options_init(&o, TS_MAX_TASK + 1);
    CHECK_EQ(ts_create(&o, &ts), MP_ERR_INVALID_ARG);
    ts_options_init(&o, 8);
    o.steal_max = 0;
    CHECK_EQ(ts_create(&o, &ts), MP_ERR_INVALID_ARG);
    ts_options_init(&o, 8);
    o.topology = (ts_topology)7;
    CHECK_EQ(ts_create(&o, &ts), MP_ERR_INVALID_ARG);
}

/* Tasks added that no remove takes: PE 0 adds three, nobody removes, the PEs run out of work.
 * The tasks never run (no PE counts one) and the end of the run says so on PE 0. */
static void misuse_never_removed(void)
{
    ts_options o;
    ts_t ts;
    ts_options_init(&o, sizeof(task));
    CHECK_EQ(ts_create(&o, &ts), MP_SUCCESS);
    if (mp_mype() == 0)
        for (uint32_t i = 0; i < 3; i++) {
            task t = {i, 0, 0, 0};
            CHECK_EQ(ts_add(ts, 0, &t, NULL), MP_OK);
        }
}

/* ts_options that may differ between PEs: steal_max.  PE 0, the only thief at first, takes at
 * most one task per steal; PE 1 holds N tasks and its steal_max is the default.  PE 1 starts
 * its worker only once PE 0 runs its first task, so that the first steal finds all N in PE
 * 1's pool: the victim gave min(N/2, its own steal_max) tasks into a buffer of one (a heap
 * overrun).  Now the request carries the thief's steal_max.  (P = 2: the main program checks
 * that every task ran once.) */
static mp_counter_t go[MAXPE];
static long N_STEAL_MAX;

static void go_arrive(void *args)
{
    (void)args;
    mp_counter_add(go[mp_mype()], 1);
}

static void run_stolen(ts_t ts, void *tp, const ts_hints *h, void *ctx)
{
    (void)ts, (void)h, (void)ctx;
    task t;
    memcpy(&t, tp, sizeof t);
    int me = mp_mype();
    CHECK(t.id < (uint32_t)expected);
    CHECK_EQ(atomic_fetch_add(&ran[t.id], 1), 0);
    if (me == 0 && per_pe[0] == 0)
        CHECK_OK(mp_invoke(1, go_arrive, NULL, 0, MP_SCHED_URGENT));
    per_pe[me]++;
}

static void misuse_steal_max_differs(void)
{
    int me = mp_mype();
    CHECK_EQ(mp_npes(), 2);
    ts_options o;
    ts_options_init(&o, sizeof(task));
    o.steal_max = me == 0 ? 1 : o.steal_max;
    CHECK_OK(ts_create(&o, &tss[me]));
    ts_t ts = tss[me];
    go[me] = mp_counter_new(0);
    fin[me] = mp_counter_new(0);
    if (me == 1) {
        for (long i = 0; i < N_STEAL_MAX; i++) {
            task t = {(uint32_t)i, 0, 0, 0};
            CHECK_EQ(ts_add(ts, me, &t, NULL), MP_OK);
        }
        CHECK_OK(mp_block_until(go[me], 1)); /* serves PE 0's steal requests meanwhile */
    }
    CHECK_OK(ts_run(ts, run_stolen, NULL, fin[me]));
    CHECK_OK(mp_block_until(fin[me], 1));
    CHECK(ts_terminated(ts));
    CHECK_EQ(ts_destroy(ts, fin[me]), MP_WAIT);
    CHECK_OK(mp_block_until(fin[me], 2));
    mp_counter_free(fin[me]);
    mp_counter_free(go[me]);
}

/* task_size must be the same on every PE: PE 0 has 16-byte tasks, the others 64.
 * tasksize_add: PE 0 adds a task to PE 1's pool, which copied 64 bytes from the 16 the
 * message carried; tasksize_steal: PE 0 holds tasks and PE 1 removes, so its steal request
 * reaches PE 0, which wrote its 16-byte tasks into a buffer laid out for 64.  Either ends the
 * run on the receiver, naming both sizes. */
static void misuse_task_size_differs(void)
{
    int me = mp_mype();
    ts_options o;
    ts_options_init(&o, me == 0 ? sizeof(task) : 64);
    ts_t ts;
    CHECK_OK(ts_create(&o, &ts));
    bool add = strcmp(misuse_case, "tasksize_add") == 0;
    static unsigned char buf[MAXPE][64];
    static int result[MAXPE];
    if (me == 0) {
        for (uint32_t i = 0; i < 3; i++) {
            task t = {i, 0, 0, 0};
            CHECK(ts_add(ts, add ? 1 : 0, &t, NULL) != MP_FAIL);
        }
    } else if (me == 1 && !add) {
        mp_counter_t c = mp_counter_new(0);
        CHECK_EQ(ts_remove(ts, buf[me], NULL, &result[me], c), MP_WAIT);
        mp_block_until(c, 1); /* the run ends on PE 0 */
    }
}

/* A task removed and never finished with ts_done: termination can never be detected, and the
 * second remove waits for ever.  Every PE does so; the starving PEs passed steal requests and
 * refusals back and forth for ever (the machine never fell quiet, so neither the runtime's
 * hang report nor its idle timeout came).  Now they back off: the run ends as a hang (2),
 * the runtime names the waiting removes and each PE's stealer its unfinished task. */
static void misuse_remove_without_done(void)
{
    int me = mp_mype();
    ts_options o;
    ts_options_init(&o, sizeof(task));
    ts_t ts;
    CHECK_OK(ts_create(&o, &ts));
    task t = {(uint32_t)me, 0, 0, 0};
    CHECK_EQ(ts_add(ts, me, &t, NULL), MP_OK);
    static int result[MAXPE];
    mp_counter_t c = mp_counter_new(0);
    CHECK_EQ(ts_remove(ts, &t, NULL, &result[me], c), MP_OK); /* and no ts_done */
    CHECK_EQ(result[me], TS_GOT_TASK);
    CHECK_EQ(ts_remove(ts, &t, NULL, &result[me], c), MP_WAIT);
    CHECK(mp_block_until(c, 2) != MP_SUCCESS); /* the run ends as a hang */
    printf("misuse remove_without_done: the run ended (PE %d)\n", me);
}

static void misuse(void)
{
    if (strcmp(misuse_case, "options") == 0)
        misuse_options();
    else if (strcmp(misuse_case, "stealmax_differs") == 0)
        misuse_steal_max_differs();
    else if (strncmp(misuse_case, "tasksize_", 9) == 0)
        misuse_task_size_differs();
    else if (strcmp(misuse_case, "remove_without_done") == 0)
        misuse_remove_without_done();
    else if (strcmp(misuse_case, "create_outside_pe") == 0)
        ; /* main() did it */
    else if (strcmp(misuse_case, "never_removed") == 0)
        misuse_never_removed();
    else if (strcmp(misuse_case, "add_after_term") == 0)
        misuse_add_after_termination();
    else if (strncmp(misuse_case, "kind", 4) == 0)
        misuse_kind();
    else
        CHECK(!"unknown misuse case");
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype(), P = mp_npes();
    if (misuse_case) {
        misuse();
        return;
    }
    ts_options o;
    ts_options_init(&o, sizeof(task));
    o.topology = (ts_topology)topology;
    CHECK_EQ(ts_create(&o, &tss[me]), MP_SUCCESS);
    ts_t ts = tss[me];
    if (strcmp(scenario, "imbalance") == 0 && me == 0) {
        for (long i = 0; i < N; i++) {
            task t = {(uint32_t)i, 0, (int32_t)(i % 3), 0};
            ts_hints h = {(int)(i % 3), 1.0, (double)(i % 5)};
            CHECK_EQ(ts_add(ts, me, &t, &h), MP_OK);
        }
    } else if (strcmp(scenario, "spawn") == 0 && me == 0) {
        task t = {0, 0, 0, 0};
        CHECK_EQ(ts_add(ts, 0, &t, NULL), MP_OK);
    } else if (strcmp(scenario, "priority") == 0) {
        for (long i = 0; i < N; i++) {
            uint32_t id = (uint32_t)(me * N + i);
            int prio = (int)((i * 7919) % 5);
            task t = {id, 0, prio, (uint32_t)i};
            ts_hints h = {prio, 1.0, 0.0};
            CHECK_EQ(ts_add(ts, me, &t, &h), MP_OK);
        }
        CHECK_EQ(ts_local_count(ts), (size_t)N);
    }
    (void)P;
    fin[me] = mp_counter_new(0);
    CHECK_EQ(mp_counter_wait(fin[me], 1, mp_fiber_create(finished, NULL, 0, MP_SCHED_FIFO)),
             MP_SUCCESS);
    CHECK_EQ(ts_run(ts, run_task, NULL, fin[me]), MP_SUCCESS);
}

int main(int argc, char **argv)
{
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        if (strchr(argv[i], '='))
            continue;
        if (pos == 0)
            scenario = argv[i];
        else if (pos == 1 && strcmp(scenario, "misuse") == 0)
            misuse_case = argv[i];
        else if (pos == 1)
            topology = ts_topology_parse(argv[i]);
        pos++;
    }
    if (topology < 0) {
        fprintf(stderr, "unknown topology\n");
        return 2;
    }
    N = tst_opt(argc, argv, "n", N);
    DEPTH = tst_opt(argc, argv, "depth", DEPTH);
    US = tst_opt(argc, argv, "us", US);
    int P = getenv("MPROF_PES") ? atoi(getenv("MPROF_PES")) : 4;
    if (strcmp(scenario, "spawn") == 0)
        expected = (2L << DEPTH) - 1;
    else if (strcmp(scenario, "priority") == 0) {
        expected = N * P;
        topology = TS_PUSH;
    } else
        expected = N;
    bool steal_max_case = misuse_case && strcmp(misuse_case, "stealmax_differs") == 0;
    if (steal_max_case)
        expected = N_STEAL_MAX = N;
    ran = calloc((size_t)expected, sizeof *ran);
    taskstealer_perf_init();
    mp_param("tasks", (double)expected);
    if (misuse_case && strcmp(misuse_case, "create_outside_pe") == 0) {
        /* before mp_main: no PE, no P (the ring divided by zero, the others left a partition
         * behind) */
        for (int t = TS_RING; t <= TS_PUSH; t++) {
            ts_options o;
            ts_options_init(&o, sizeof(task));
            o.topology = (ts_topology)t;
            ts_t ts = 4242;
            CHECK_EQ(ts_create(&o, &ts), MP_ERR_BAD_STATE);
            CHECK_EQ(ts, 4242);
        }
    }
    int rc = tst_run(argc, argv, 4, pe_main);
    if (rc)
        return rc;
    if (misuse_case) {
        long sum = 0;
        for (int i = 0; i < P; i++)
            sum += per_pe[i];
        /* add_after_term: one task per PE */
        CHECK_EQ(sum, strcmp(misuse_case, "add_after_term") == 0 ? P : steal_max_case ? N : 0);
        for (long i = 0; steal_max_case && i < expected; i++)
            CHECK_EQ(atomic_load(&ran[i]), 1);
        printf("taskstealer misuse %s: OK (P=%d)\n", misuse_case, P);
        free(ran);
        return 0;
    }
    if (getenv("OMPI_COMM_WORLD_SIZE")) {
        /* one PE per process: the in-run reduction above already checked the total */
        printf("taskstealer %s %s: OK (MPI rank, %ld tasks)\n", scenario,
               ts_topology_name((ts_topology)topology), expected);
        free(ran);
        return 0;
    }
    for (long i = 0; i < expected; i++)
        CHECK_EQ(atomic_load(&ran[i]), 1);
    long sum = 0;
    for (int i = 0; i < P; i++) {
        CHECK_EQ(finished_seen[i], 1);
        sum += per_pe[i];
        printf("PE %d ran %ld tasks\n", i, per_pe[i]);
        if (strcmp(scenario, "priority") == 0)
            CHECK_EQ(per_pe[i], N);
    }
    CHECK_EQ(sum, expected);
    printf("taskstealer %s %s: OK (P=%d, %ld tasks)\n", scenario,
           ts_topology_name((ts_topology)topology), P, expected);
    free(ran);
    return 0;
}
