/* objects.c -- the distributed object manager on P PEs (MPROF_PES): collective creation gives
 * the same ids everywhere, barriers hold every PE until all arrived, sum/min/max reductions,
 * two objects with global operations in flight at the same time, and collective destruction. */
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

int main(int argc, char **argv)
{
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
