/* objects.c -- the distributed object manager on P PEs (MPROF_PES): collective creation gives
 * the same ids everywhere, barriers hold every PE until all arrived, sum/min/max reductions,
 * two objects with global operations in flight at the same time, and collective destruction.
 * Scenario "misuse": ids the runtime never handed out, a reserved name taken twice, an
 * unknown reduction are refused (prints "<case> <code>" lines, as misuse.c does), while a
 * barrier whose messages reach a PE before that PE created the object still completes. */
#include "check.h"

#include <stdatomic.h>

#define ROUNDS 20

static mp_obj_t ids[MAXPE][3];
static int part[MAXPE][2];
static atomic_int arrived[ROUNDS];
static int shared_acc[MAXPE];

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype(), P = mp_npes();
    CHECK(P <= MAXPE);
    /* access categories may be registered from any PE at once: same name, same id */
    char name[32];
    snprintf(name, sizeof name, "pe%d", me);
    shared_acc[me] = mp_access_register("objects", "shared");
    CHECK(shared_acc[me] > 0 && mp_access_register("objects", name) > 0);
    mp_obj_t a, b;
    CHECK_OK(mp_obj_create(&part[me][0], &a));
    CHECK_OK(mp_obj_create(&part[me][1], &b));
    CHECK_OK(mp_obj_create_named(MP_OBJ_USER_FIRST + 5, &part[me][0]));
    ids[me][0] = a, ids[me][1] = b, ids[me][2] = MP_OBJ_USER_FIRST + 5;
    CHECK(a >= MP_OBJ_DYNAMIC_FIRST && b != a);
    CHECK(mp_obj_local(a) == &part[me][0]);
    CHECK(mp_obj_local(b) == &part[me][1]);
    CHECK(mp_obj_local(MP_OBJ_USER_FIRST + 5) == &part[me][0]);

    mp_counter_t c = mp_counter_new(0);
    uint64_t target = 0;
    for (int r = 0; r < ROUNDS; r++) {
        /* barrier: nobody passes before everybody arrived */
        atomic_fetch_add(&arrived[r], 1);
        CHECK_EQ(mp_obj_barrier(r % 2 ? a : b, c), MP_WAIT);
        CHECK_OK(mp_block_until(c, ++target));
        CHECK_EQ(atomic_load(&arrived[r]), P);

        /* two reductions on two objects at once */
        double sum = -1, max = -1, min = -1;
        CHECK(mp_obj_reduce(a, MP_REDUCE_SUM, me + r, &sum, c) != MP_FAIL);
        CHECK(mp_obj_reduce(b, MP_REDUCE_MAX, 10.0 * me - r, &max, c) != MP_FAIL);
        target += 2;
        CHECK_OK(mp_block_until(c, target));
        CHECK_EQ(sum, (double)P * (P - 1) / 2 + (double)P * r);
        CHECK_EQ(max, 10.0 * (P - 1) - r);
        CHECK(mp_obj_reduce(MP_OBJ_USER_FIRST + 5, MP_REDUCE_MIN, 3.5 + me - r, &min, c) !=
              MP_FAIL);
        CHECK_OK(mp_block_until(c, ++target));
        CHECK(min == 3.5 - r);
    }
    /* destroy: collective; afterwards the entries are gone (a snapshot's partition, which the
     * runtime allocated, is freed by it) and a new object gets a new id */
    mp_snapshot_t s;
    CHECK_OK(mp_snapshot_new(&s));
    CHECK(mp_obj_local(s) != NULL);
    CHECK_EQ(mp_obj_destroy(a, c), MP_WAIT);
    CHECK_EQ(mp_obj_destroy(s, c), MP_WAIT);
    target += 2;
    CHECK_OK(mp_block_until(c, target));
    CHECK(mp_obj_local(a) == NULL && mp_obj_local(s) == NULL);
    CHECK(mp_obj_local(b) == &part[me][1]);
    mp_obj_t d;
    CHECK_OK(mp_obj_create(&part[me][0], &d));
    CHECK(d != a && d != s && mp_obj_local(d) == &part[me][0]);
    mp_counter_free(c);
}

static void report(const char *what, int code)
{
    printf("%s %d\n", what, code);
    fflush(stdout);
}

static mp_counter_t ready[MAXPE];
static int named_part[MAXPE];

static void misuse_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype(), P = mp_npes();
    mp_counter_t c = mp_counter_new(0);
    uint64_t target = 0;
    ready[me] = mp_counter_new(0);
    mp_obj_t x;
    CHECK_OK(mp_obj_create(NULL, &x)); /* a partition-less object: barriers only */
    CHECK_EQ(mp_obj_barrier(x, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, ++target)); /* every ready[] is set */

    /* Legitimate early arrival: the next object's root creates it only after the other PEs'
     * barrier messages for it may have reached it. */
    int late = (int)((x + 1) % (mp_obj_t)P);
    mp_obj_t y;
    if (me == late) {
        CHECK_OK(mp_block_until(ready[me], (uint64_t)P - 1));
        CHECK_OK(mp_obj_create(&named_part[me], &y));
    } else {
        CHECK_OK(mp_obj_create(&named_part[me], &y));
        CHECK_EQ(mp_obj_barrier(y, c), MP_WAIT);
        CHECK_OK(mp_counter_add_remote(late, ready[late], 1));
    }
    CHECK_EQ(y, x + 1);
    if (me == late)
        CHECK_EQ(mp_obj_barrier(y, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, ++target));
    CHECK(mp_obj_local(y) == &named_part[me]);

    /* a reserved name with a NULL partition is an object too; taken twice it is refused */
    CHECK_OK(mp_obj_create_named(7, NULL));
    double sum = -1;
    CHECK_EQ(mp_obj_reduce(7, MP_REDUCE_SUM, 1.0, &sum, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, ++target));
    CHECK_EQ(sum, (double)P);
    if (me == 0) {
        report("named_null_reduce", (int)sum == P ? MP_SUCCESS : MP_ERR_INVALID_ARG);
        CHECK_OK(mp_obj_create_named(6, &named_part[0]));
        report("named_twice", mp_obj_create_named(6, &named_part[1]));
        report("named_twice_kept",
               mp_obj_local(6) == &named_part[0] ? MP_SUCCESS : MP_ERR_BAD_STATE);
        report("named_out_of_range", mp_obj_create_named(UINT32_MAX, &named_part[0]));
        /* ids never handed out: refused at once (they spun, or asked for a huge table) */
        report("barrier_id_max", mp_obj_barrier((mp_obj_t)0xFFFFFFFF, c));
        report("destroy_id_2_31", mp_obj_destroy((mp_obj_t)0x80000001, c));
        report("barrier_id_1e8", mp_obj_barrier((mp_obj_t)100000000, c));
        report("barrier_never_created", mp_obj_barrier(y + 1000, c));
        report("reduce_named_never_created", mp_obj_reduce(9, MP_REDUCE_MAX, 1, &sum, c));
        report("destroy_never_created", mp_obj_destroy(y + 1, c));
        report("local_never_created", mp_obj_local(100000000) == NULL ? MP_SUCCESS : 1);
        report("reduce_unknown_op", mp_obj_reduce(x, (mp_reduce_op)99, 1, &sum, c));
        report("reduce_null_counter", mp_obj_reduce(x, MP_REDUCE_SUM, 1, &sum, NULL));
        printf("counter=%llu target=%llu\n", (unsigned long long)mp_counter_value(c),
               (unsigned long long)target);
    }
    /* nothing above started an operation: the objects still work */
    CHECK_EQ(mp_obj_reduce(x, MP_REDUCE_MAX, (double)me, &sum, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, ++target));
    CHECK_EQ(sum, (double)(P - 1));
    CHECK_EQ(mp_obj_destroy(y, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, ++target));
    CHECK(mp_obj_local(y) == NULL);
    mp_counter_free(c);
}

/* Scenario "mismatch <case>" on 2 PEs: PE 0 and PE 1 call different global operations on one
 * object, or only one of them calls it (nobody waits for it). */
static const char *mismatch;

static void mismatch_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    mp_obj_t x;
    CHECK_OK(mp_obj_create(NULL, &x));
    mp_counter_t c = mp_counter_new(0);
    double out;
    if (strcmp(mismatch, "barrier_destroy") == 0)
        (void)(me == 0 ? mp_obj_barrier(x, c) : mp_obj_destroy(x, c));
    else if (strcmp(mismatch, "sum_max") == 0)
        (void)mp_obj_reduce(x, me == 0 ? MP_REDUCE_SUM : MP_REDUCE_MAX, me + 1.0, &out, c);
    else if (strcmp(mismatch, "only_pe0") == 0 && me == 0)
        (void)mp_obj_barrier(x, c);
    else if (strcmp(mismatch, "only_pe1") == 0 && me == 1)
        (void)mp_obj_reduce(x, MP_REDUCE_MAX, 1.0, &out, c);
    printf("PE %d survived %s\n", me, mismatch);
}

int main(int argc, char **argv)
{
    if (strcmp(tst_scenario(argc, argv, "default"), "mismatch") == 0 && argc > 2) {
        mismatch = argv[2];
        return tst_run(argc, argv, 2, mismatch_main);
    }
    if (strcmp(tst_scenario(argc, argv, "default"), "misuse") == 0) {
        int rc = tst_run(argc, argv, 4, misuse_main);
        printf("misuse rc=%d\n", rc);
        return rc;
    }
    int rc = tst_run(argc, argv, 4, pe_main);
    if (rc)
        return rc;
    int P = mp_npes();
    for (int pe = 1; pe < P; pe++)
        for (int k = 0; k < 3; k++)
            CHECK_EQ(ids[pe][k], ids[0][k]);
    for (int pe = 1; pe < P; pe++)
        CHECK_EQ(shared_acc[pe], shared_acc[0]);
    printf("P=%d ids=%u,%u,%u\n", P, ids[0][0], ids[0][1], ids[0][2]);
    puts("objects: OK");
    return 0;
}
