/* ht_test.c -- semantics and statistics of the distributed hash table on P PEs.
 *
 *   ht_test semantics [n=N]   insert/lookup/delete results and statuses, duplicate handler,
 *                             sync after unacknowledged inserts (and inserts parked by a
 *                             freeze), per-partition iterators cover every key exactly once
 *   ht_test stats [n=N] [bins=B]
 *                             a fixed workload whose statistics tests/lib/test_hashtable.py
 *                             predicts exactly from the hash function
 *   ht_test misuse CASE       misuse is reported on stderr and refused (see misuse() below;
 *                             the cases that end the run say so)
 *   ht_test faults [n=N] [bins=B]
 *                             inserts N keys into a table of B bins per PE and prints the
 *                             page faults the inserts took on each PE's thread beside the
 *                             pages of its bins (a table whose bins were left to calloc faults
 *                             twice on each of them: the zero page, then its replacement)
 *
 * Every PE runs the phases in pe_main, waiting with mp_block_until. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "check.h"
#include "hashtable.h"
#include "hashtable_perf.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>

static long N = 400;
static long BINS = 8;
static const char *scenario = "semantics";

/* per-PE state (each PE touches only its own slot) */
static ht_t tab[MAXPE], dups[MAXPE], un[MAXPE];
static mp_counter_t cnt[MAXPE];
static uint64_t waited[MAXPE];
static long existed_total[MAXPE], dup_calls[MAXPE], parked[MAXPE], iterated[MAXPE];
static atomic_int *seen; /* seen[key]: how many partitions' iterators returned the key */
static long seen_n;

#define ME mp_mype()

/* Waits for `n` more completions on this PE's counter. */
static void wait_more(uint64_t n)
{
    waited[ME] += n;
    CHECK_EQ(mp_block_until(cnt[ME], waited[ME]), MP_SUCCESS);
}

static void check_status(mp_status s, ht_t h, const void *key)
{
    CHECK(s != MP_FAIL);
    CHECK_EQ(s == MP_OK, ht_owner(h, key) == ME);
}

static void sync_all(ht_t h)
{
    CHECK_EQ(ht_sync(h, cnt[ME]), MP_WAIT);
    wait_more(1);
}

static void sum_dup(void *stored, const void *incoming, size_t n, void *ctx)
{
    CHECK_EQ(n, sizeof(uint64_t));
    uint64_t a, b;
    memcpy(&a, stored, 8);
    memcpy(&b, incoming, 8);
    a += b;
    memcpy(stored, &a, 8);
    ++*(long *)ctx;
}

/* Collective: every table is quiescent (synced, acknowledged operations completed). */
static void destroy(const ht_t *t, int n)
{
    for (int i = 0; i < n; i++)
        CHECK_EQ(ht_destroy(t[i], cnt[ME]), MP_WAIT);
    wait_more((uint64_t)n);
    for (int i = 0; i < n; i++)
        CHECK(mp_obj_local(t[i]) == NULL);
}

static void semantics(void)
{
    int me = ME, P = mp_npes();
    ht_options o;
    ht_options_init(&o, sizeof(uint64_t), sizeof(uint64_t));
    o.bins_per_pe = (unsigned)BINS;
    CHECK_EQ(ht_create(&o, &tab[me]), MP_SUCCESS);
    ht_options od = o;
    od.on_duplicate = sum_dup;
    od.dup_ctx = &dup_calls[me];
    CHECK_EQ(ht_create(&od, &dups[me]), MP_SUCCESS);
    CHECK_EQ(ht_create(&o, &un[me]), MP_SUCCESS);
    ht_t T = tab[me], D = dups[me], U = un[me];
    long extra = N / 4 + 1, total = N + extra;
    int *flag = calloc((size_t)total, sizeof *flag);
    uint64_t *val = calloc((size_t)total, sizeof *val);
    CHECK(flag && val);

    /* A: acknowledged inserts of my keys; none existed */
    uint64_t n = 0;
    for (uint64_t k = (uint64_t)me; k < (uint64_t)N; k += (uint64_t)P) {
        uint64_t v = 10 * k;
        flag[k] = -1;
        mp_status s = ht_insert(T, &k, &v, &flag[k], cnt[me]);
        check_status(s, T, &k);
        if (s == MP_OK)
            CHECK_EQ(flag[k], 0); /* local: results are there at once */
        n++;
    }
    wait_more(n);
    for (long k = me; k < N; k += P)
        CHECK_EQ(flag[k], 0);
    sync_all(T);

    /* B: every PE looks every key up (and some absent ones) */
    for (uint64_t k = 0; k < (uint64_t)total; k++) {
        flag[k] = -1;
        val[k] = 777;
        check_status(ht_lookup(T, &k, &val[k], &flag[k], cnt[me]), T, &k);
    }
    wait_more((uint64_t)total);
    for (long k = 0; k < total; k++) {
        CHECK_EQ(flag[k], k < N);
        CHECK_EQ(val[k], k < N ? 10 * (uint64_t)k : 777);
    }
    sync_all(T);

    /* C: acknowledged deletes of present keys (inserted by my neighbour) and absent ones */
    n = 0;
    for (uint64_t k = 0; k < (uint64_t)total; k++) {
        bool present = (long)k < N && k % 3 == 0 && k % (uint64_t)P == (uint64_t)((me + 1) % P);
        bool absent = (long)k >= N && k % (uint64_t)P == (uint64_t)me;
        if (!present && !absent)
            continue;
        flag[k] = -1;
        val[k] = 777;
        check_status(ht_delete(T, &k, &val[k], &flag[k], cnt[me]), T, &k);
        n++;
    }
    wait_more(n);
    for (long k = 0; k < total; k++) {
        if (k < N && k % 3 == 0 && k % P == (me + 1) % P) {
            CHECK_EQ(flag[k], 1);
            CHECK_EQ(val[k], 10 * (uint64_t)k);
        } else if (k >= N && k % P == me) {
            CHECK_EQ(flag[k], 0);
            CHECK_EQ(val[k], 777);
        }
    }
    sync_all(T);
    for (uint64_t k = 0; k < (uint64_t)N; k++)
        check_status(ht_lookup(T, &k, NULL, &flag[k], cnt[me]), T, &k);
    wait_more((uint64_t)N);
    for (long k = 0; k < N; k++)
        CHECK_EQ(flag[k], k % 3 != 0);

    /* D: duplicate handler: every PE inserts the same keys with value 1 */
    long K = N / 2 + 1;
    for (uint64_t k = 0; k < (uint64_t)K; k++) {
        uint64_t one = 1;
        flag[k] = -1;
        check_status(ht_insert(D, &k, &one, &flag[k], cnt[me]), D, &k);
    }
    wait_more((uint64_t)K);
    for (long k = 0; k < K; k++) {
        CHECK(flag[k] == 0 || flag[k] == 1);
        existed_total[me] += flag[k];
    }
    sync_all(D);
    for (uint64_t k = 0; k < (uint64_t)K; k++)
        check_status(ht_lookup(D, &k, &val[k], &flag[k], cnt[me]), D, &k);
    wait_more((uint64_t)K);
    for (long k = 0; k < K; k++) {
        CHECK_EQ(flag[k], 1);
        CHECK_EQ(val[k], (uint64_t)P); /* the handler summed all P inserts */
    }

    /* E: unacknowledged inserts, then sync; inserts issued during the sync are parked */
    long M = N, M2 = N / 4 + 1;
    for (long i = 0; i < M; i++) {
        uint64_t k = (uint64_t)(me * M + i), v = k + 1;
        mp_status s = ht_insert_unack(U, &k, &v);
        check_status(s, U, &k);
    }
    CHECK_EQ(ht_sync(U, cnt[me]), MP_WAIT);
    for (long i = 0; i < M2; i++) {
        uint64_t k = (uint64_t)(P * M + me * M2 + i), v = k + 1;
        mp_status s = ht_insert_unack(U, &k, &v);
        CHECK_EQ(s, MP_WAIT); /* frozen: parked until the unfreeze, even when local */
        parked[me]++;
    }
    wait_more(1);
    /* the sync saw every insert issued before it, on every PE */
    uint64_t *v1 = calloc((size_t)(P * M), sizeof *v1);
    int *f1 = calloc((size_t)(P * M), sizeof *f1);
    CHECK(v1 && f1);
    for (uint64_t k = 0; k < (uint64_t)(P * M); k++)
        check_status(ht_lookup(U, &k, &v1[k], &f1[k], cnt[me]), U, &k);
    wait_more((uint64_t)(P * M));
    for (long k = 0; k < P * M; k++) {
        CHECK_EQ(f1[k], 1);
        CHECK_EQ(v1[k], (uint64_t)k + 1);
    }
    sync_all(U); /* now the parked ones too */

    /* F: iterators: each partition yields exactly its own keys */
    ht_iter it;
    ht_iter_init(U, &it);
    const void *kp;
    void *vp;
    while (ht_iter_next(&it, &kp, &vp)) {
        uint64_t k, v;
        memcpy(&k, kp, 8);
        memcpy(&v, vp, 8);
        CHECK_EQ(ht_owner(U, &k), me);
        CHECK_EQ(v, k + 1);
        CHECK((long)k < seen_n);
        atomic_fetch_add(&seen[k], 1);
        iterated[me]++;
    }
    CHECK_EQ((size_t)iterated[me], ht_local_count(U));
    sync_all(U);
    free(flag);
    free(val);
    free(v1);
    free(f1);
    destroy((ht_t[]){T, D, U}, 3);
}

/* Collective: a table of 8-byte keys and values with BINS bins per PE, this PE's tab[]. */
static ht_t table_of_bins(void)
{
    ht_options o;
    ht_options_init(&o, sizeof(uint64_t), sizeof(uint64_t));
    o.bins_per_pe = (unsigned)BINS;
    CHECK_EQ(ht_create(&o, &tab[ME]), MP_SUCCESS);
    return tab[ME];
}

/* The workload whose statistics the Python test predicts (see test_hashtable.py). */
static void stats(void)
{
    int me = ME, P = mp_npes();
    ht_t T = table_of_bins();
    int *flag = calloc((size_t)N, sizeof *flag);
    uint64_t *val = calloc((size_t)N, sizeof *val);
    uint64_t n = 0;
    for (uint64_t k = (uint64_t)me; k < (uint64_t)N; k += (uint64_t)P, n++)
        CHECK(ht_insert(T, &k, &k, NULL, cnt[me]) != MP_FAIL);
    wait_more(n);
    sync_all(T);
    n = 0;
    for (uint64_t k = (uint64_t)me; k < (uint64_t)N / 2; k += (uint64_t)P, n++)
        CHECK(ht_insert(T, &k, &k, &flag[k], cnt[me]) != MP_FAIL);
    wait_more(n);
    n = 0;
    for (uint64_t k = (uint64_t)me; k < (uint64_t)N; k += (uint64_t)P, n++)
        CHECK(ht_lookup(T, &k, &val[k], &flag[k], cnt[me]) != MP_FAIL);
    wait_more(n);
    for (long k = me; k < N; k += P)
        CHECK(flag[k] == 1 && val[k] == (uint64_t)k);
    for (uint64_t k = (uint64_t)me; k < (uint64_t)N; k += (uint64_t)P)
        if (k % 4 == 0)
            CHECK(ht_delete_unack(T, &k) != MP_FAIL);
    sync_all(T);
    free(flag);
    free(val);
    destroy(&T, 1);
}

/* The minor page faults this thread took so far. */
static long thread_faults(void)
{
    struct rusage ru;
    CHECK_EQ(getrusage(RUSAGE_THREAD, &ru), 0);
    return ru.ru_minflt;
}

static void faults(void)
{
    int me = ME, P = mp_npes();
    ht_t T = table_of_bins();
    /* only keys this PE owns: every fault below is this thread's */
    long before = thread_faults(), n = 0;
    for (uint64_t k = 0; k < (uint64_t)N * (uint64_t)P; k++)
        if (ht_owner(T, &k) == me) {
            CHECK_EQ(ht_insert(T, &k, &k, NULL, cnt[me]), MP_OK);
            n++;
        }
    long taken = thread_faults() - before;
    printf("PE %d: %ld inserts, %ld page faults, %ld pages of bins\n", me, n, taken,
           (long)((size_t)BINS * sizeof(void *) / 4096));
    wait_more((uint64_t)n);
    sync_all(T);
    destroy(&T, 1);
}

/* ---- misuse ------------------------------------------------------------------------ */

static const char *misuse_case = "";

/* A custom FIFO scheduler (one queue per PE), to show that registered ids are accepted. */
#define QCAP 4096
typedef struct {
    mp_fiber_t f[QCAP];
    size_t head, tail;
} fifo_q;
static fifo_q queues[MAXPE];

static void q_deposit(void *state, mp_fiber_t f)
{
    fifo_q *q = state;
    CHECK(q->tail - q->head < QCAP);
    q->f[q->tail++ % QCAP] = f;
}

static mp_fiber_t q_select(void *state)
{
    fifo_q *q = state;
    return q->head == q->tail ? NULL : q->f[q->head++ % QCAP];
}

/* Sizes that wrap around when added, and sizes over the limit, are refused. */
static void misuse_sizes(void)
{
    ht_options o;
    ht_t h = 12345;
    size_t bad[][2] = {{SIZE_MAX, 2}, {8, SIZE_MAX}, {0, 8}, {700, 100}, {HT_MAX_ITEM + 1, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ht_options_init(&o, bad[i][0], bad[i][1]);
        CHECK_EQ(ht_create(&o, &h), MP_ERR_INVALID_ARG);
    }
    CHECK_EQ(h, 12345);                      /* nothing written */
    ht_options_init(&o, 8, HT_MAX_ITEM - 8); /* the limit itself is fine */
    CHECK_OK(ht_create(&o, &h));
    destroy(&h, 1);
}

/* Unknown schedulers are refused at creation; a registered custom one carries operations (and
 * the sync after them completes). */
static void misuse_sched(void)
{
    int me = ME, P = mp_npes();
    ht_options o;
    ht_t h;
    ht_options_init(&o, 8, 8);
    o.sched = 99;
    CHECK_EQ(ht_create(&o, &h), MP_ERR_INVALID_ARG);
    o.sched = -1;
    CHECK_EQ(ht_create(&o, &h), MP_ERR_INVALID_ARG);
    mp_sched_ops ops = {q_deposit, q_select, "test-fifo"};
    CHECK_OK(mp_sched_register(&ops, &queues[me], &o.sched));
    CHECK_OK(ht_create(&o, &h));
    for (uint64_t k = (uint64_t)me; k < 200; k += (uint64_t)P)
        CHECK(ht_insert_unack(h, &k, &k) != MP_FAIL);
    sync_all(h);
    for (uint64_t k = 0; k < 200; k++) { /* every PE's inserts arrived */
        int found = 0;
        CHECK(ht_lookup(h, &k, NULL, &found, cnt[me]) != MP_FAIL);
        wait_more(1);
        CHECK_EQ(found, 1);
    }
    destroy(&h, 1);
    printf("misuse sched: OK (PE %d)\n", me);
}

/* Ids of other objects (a snapshot, a plain object) are no hash tables: refused with MP_FAIL. */
static void misuse_kind(void)
{
    mp_obj_t ids[3];
    tst_foreign_ids(ids);
    uint64_t k = 1, v = 2;
    int found;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(ht_insert(ids[i], &k, &v, NULL, cnt[ME]), MP_FAIL);
        CHECK_EQ(ht_insert_unack(ids[i], &k, &v), MP_FAIL);
        CHECK_EQ(ht_delete_unack(ids[i], &k), MP_FAIL);
        CHECK_EQ(ht_lookup(ids[i], &k, &v, &found, cnt[ME]), MP_FAIL);
        CHECK_EQ(ht_sync(ids[i], cnt[ME]), MP_FAIL);
        CHECK_EQ(ht_destroy(ids[i], cnt[ME]), MP_FAIL);
    }
    CHECK_EQ(mp_counter_value(cnt[ME]), 0);
    printf("misuse kind: OK (PE %d)\n", ME);
    if (strcmp(misuse_case, "kind_count") == 0)
        ht_local_count(ids[0]); /* cannot return an error: ends the run */
}

/* A local delete while iterating: ht_iter_next ends the run instead of following a freed
 * entry. */
static void misuse_iter_delete(void)
{
    ht_options o;
    ht_t h;
    ht_options_init(&o, 8, 8);
    o.bins_per_pe = 2; /* long chains: the deleted entry is the one the iterator holds */
    CHECK_OK(ht_create(&o, &h));
    for (uint64_t k = 0; k < 64; k++)
        CHECK(ht_insert_unack(h, &k, &k) != MP_FAIL);
    sync_all(h);
    ht_iter it;
    const void *kp;
    ht_iter_init(h, &it);
    while (ht_iter_next(&it, &kp, NULL)) {
        uint64_t k;
        memcpy(&k, kp, 8);
        CHECK_EQ(ht_delete_unack(h, &k), MP_OK); /* local: frees the entry at once */
    }
    printf("misuse iter: iteration went on (PE %d)\n", ME);
}

/* An iterator of a table destroyed since it was set up: its next step read the freed
 * partition; now it ends the run. */
static void misuse_iter_destroyed(void)
{
    ht_options o;
    ht_t h;
    ht_options_init(&o, 8, 8);
    CHECK_OK(ht_create(&o, &h));
    uint64_t k = (uint64_t)ME;
    CHECK(ht_insert_unack(h, &k, &k) != MP_FAIL);
    sync_all(h);
    ht_iter it;
    ht_iter_init(h, &it);
    mp_counter_t d = mp_counter_new(0);
    CHECK_EQ(ht_destroy(h, d), MP_WAIT);
    CHECK_OK(mp_block_until(d, 1));
    mp_counter_free(d);
    const void *kp;
    ht_iter_next(&it, &kp, NULL);
    printf("misuse iter: iteration went on (PE %d)\n", ME);
}

/* Refusals that leave the table as it was: a destroy while a sync runs (it destroyed the
 * table and then failed), a second sync while one runs (its waiting fiber hung the run), a
 * shared snapshot that is no snapshot (the first insert ended the run). */
static void misuse_busy(void)
{
    ht_options o;
    ht_t h, bad;
    ht_options_init(&o, 8, 8);
    CHECK_OK(ht_create(&o, &h));
    mp_counter_t d = mp_counter_new(0);
    CHECK_EQ(ht_sync(h, cnt[ME]), MP_WAIT);
    CHECK_EQ(ht_sync(h, cnt[ME]), MP_FAIL);
    CHECK_EQ(ht_destroy(h, d), MP_FAIL);
    wait_more(1);
    uint64_t k = (uint64_t)ME, v = 7, found_value = 0;
    int existed = -1, found = 0;
    CHECK(ht_insert(h, &k, &v, &existed, cnt[ME]) != MP_FAIL); /* the table still works */
    wait_more(1);
    CHECK(ht_lookup(h, &k, &found_value, &found, cnt[ME]) != MP_FAIL);
    wait_more(1);
    CHECK(existed == 0 && found == 1 && found_value == 7);
    sync_all(h);
    o.snapshot = 777; /* no object */
    CHECK_EQ(ht_create(&o, &bad), MP_ERR_INVALID_ARG);
    o.snapshot = h; /* an object, not a snapshot */
    CHECK_EQ(ht_create(&o, &bad), MP_ERR_INVALID_ARG);
    CHECK_EQ(ht_destroy(h, d), MP_WAIT);
    CHECK_OK(mp_block_until(d, 1));
    mp_counter_free(d);
    printf("misuse busy: OK (PE %d)\n", ME);
}

/* ht_create is collective with one key and value size: PE 1 has 64-byte values, PE 0 8-byte
 * ones ("sizes_differ_value"), or 64- against 8-byte keys ("sizes_differ_key").  PE 0 looks
 * up a key PE 1 owns: the owner's reply carried 64 bytes into PE 0's 8-byte value (a stack
 * overrun), or the owner read a 64-byte key out of 8.  The owner ends the run instead. */
static void misuse_sizes_differ(bool keys)
{
    ht_options o;
    ht_options_init(&o, keys && ME == 1 ? 64 : 8, !keys && ME == 1 ? 64 : 8);
    ht_t h;
    CHECK_OK(ht_create(&o, &h));
    if (ME != 0)
        return;
    uint64_t key[8] = {0}, value = 0;
    while (ht_owner(h, key) != 1)
        key[0]++;
    int found = 0;
    mp_counter_t c = mp_counter_new(0);
    ht_lookup(h, key, &value, &found, c);
    printf("misuse sizes_differ: sent (PE %d)\n", ME);
}

static void misuse(void)
{
    if (strcmp(misuse_case, "busy") == 0) {
        misuse_busy();
        return;
    }
    if (strcmp(misuse_case, "null_key") == 0 || strcmp(misuse_case, "null_iter") == 0) {
        ht_options o;
        ht_t h;
        ht_options_init(&o, 8, 8);
        CHECK_OK(ht_create(&o, &h));
        ht_iter zeroed = {0};
        if (misuse_case[5] == 'k')
            ht_owner(h, NULL); /* cannot return an error: ends the run */
        else
            ht_iter_next(&zeroed, NULL, NULL);
        printf("misuse null: survived (PE %d)\n", ME);
    }
    if (strcmp(misuse_case, "sizes") == 0)
        misuse_sizes();
    else if (strncmp(misuse_case, "sizes_differ_", 13) == 0)
        misuse_sizes_differ(strcmp(misuse_case, "sizes_differ_key") == 0);
    else if (strcmp(misuse_case, "sched") == 0)
        misuse_sched();
    else if (strncmp(misuse_case, "kind", 4) == 0)
        misuse_kind();
    else if (strcmp(misuse_case, "iter_delete") == 0)
        misuse_iter_delete();
    else if (strcmp(misuse_case, "iter_destroyed") == 0)
        misuse_iter_destroyed();
    else
        CHECK(!"unknown misuse case");
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    cnt[ME] = mp_counter_new(0);
    if (strcmp(scenario, "stats") == 0)
        stats();
    else if (strcmp(scenario, "misuse") == 0)
        misuse();
    else if (strcmp(scenario, "faults") == 0)
        faults();
    else
        semantics();
    mp_counter_free(cnt[ME]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strchr(argv[1], '='))
        scenario = argv[1];
    if (argc > 2 && strcmp(scenario, "misuse") == 0)
        misuse_case = argv[2];
    N = tst_opt(argc, argv, "n", N);
    BINS = tst_opt(argc, argv, "bins", BINS);
    hashtable_perf_init();
    int P = getenv("MPROF_PES") ? atoi(getenv("MPROF_PES")) : 4;
    long M2 = N / 4 + 1;
    seen_n = (long)P * (N + M2);
    seen = calloc((size_t)seen_n, sizeof *seen);
    int rc = tst_run(argc, argv, 4, pe_main);
    if (rc)
        return rc;
    if (strcmp(scenario, "semantics") == 0) {
        long existed = 0, calls = 0, it = 0;
        for (int i = 0; i < P; i++) {
            existed += existed_total[i];
            calls += dup_calls[i];
            it += iterated[i];
            CHECK_EQ(parked[i], M2);
        }
        long K = N / 2 + 1;
        CHECK_EQ(existed, K * (P - 1));
        CHECK_EQ(calls, K * (P - 1));
        CHECK_EQ(it, seen_n);
        for (long k = 0; k < seen_n; k++)
            CHECK_EQ(atomic_load(&seen[k]), 1);
        printf("hashtable semantics: OK (P=%d N=%ld)\n", P, N);
    } else if (strcmp(scenario, "misuse") == 0) {
        printf("hashtable misuse %s: OK (P=%d)\n", misuse_case, P);
    } else if (strcmp(scenario, "faults") == 0) {
        printf("hashtable faults: OK (P=%d N=%ld)\n", P, N);
    } else {
        printf("hashtable stats: OK (P=%d N=%ld)\n", P, N);
    }
    free(seen);
    return 0;
}
