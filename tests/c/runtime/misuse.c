/* misuse.c -- each kind of misuse returns its error code and prints a clear message on
 * stderr, and the run goes on: a fiber waiting on two counters, invalid PEs, oversized
 * arguments and messages, a blocking call inside a fiber, enabling a fiber twice.  Prints
 * "<case> <code>" lines; pytest matches them with the stderr messages. */
#include "check.h"

#include <stdatomic.h>

static atomic_int after;
static mp_obj_t objs[MAXPE];

static void nop(void *p) { (void)p; }
static void counted(void *p)
{
    (void)p;
    atomic_fetch_add(&after, 1);
}

static void report(const char *what, int code)
{
    printf("%s %d\n", what, code);
    fflush(stdout);
}

static void in_fiber(void *p)
{
    (void)p;
    mp_counter_t c1 = mp_counter_new(0), c2 = mp_counter_new(0);
    mp_fiber_t f = mp_fiber_create(counted, NULL, 0, MP_SCHED_FIFO);
    CHECK_OK(mp_counter_wait(c1, 1, f));
    report("already_waiting", mp_counter_wait(c2, 1, f));
    report("block_in_fiber", mp_block_until(c2, 1));
    mp_counter_free(c1);   /* refused: a fiber waits on it */
    mp_counter_add(c1, 1); /* the fiber still runs once */

    /* one global operation per object at a time (PE 1 joins the first one) */
    mp_counter_t gd = mp_counter_new(0);
    report("gop_first", mp_obj_barrier(objs[0], gd));
    report("gop_busy", mp_obj_barrier(objs[0], gd));

    report("invalid_pe_invoke", mp_invoke(mp_npes(), nop, NULL, 0, MP_SCHED_FIFO));
    report("invalid_pe_negative", mp_invoke(-1, nop, NULL, 0, MP_SCHED_FIFO));
    report("invalid_pe_counter", mp_counter_add_remote(mp_npes() + 3, c1, 1));

    static unsigned char big[MP_FIBER_ARGS_MAX + 1];
    report("too_large_invoke", mp_invoke(1, nop, big, sizeof big, MP_SCHED_FIFO));
    report("too_large_spawn", mp_spawn(nop, big, sizeof big, MP_SCHED_FIFO));
    report("too_large_create", mp_fiber_create(nop, big, sizeof big, MP_SCHED_FIFO) == NULL
                                   ? MP_ERR_TOO_LARGE
                                   : MP_SUCCESS);
    /* a transfer larger than the biggest message: refused before any byte is touched */
    mp_counter_t d = mp_counter_new(0);
    report("too_large_write", mp_bulk_write(1, big, big, mp_max_message() + 1, d));
    report("too_large_write_huge", mp_bulk_write(1, big, big, (size_t)-1, d));
    report("too_large_store_user",
           mp_bulk_store(1, big, big, 16, NULL, nop, big, MP_FIBER_ARGS_MAX - 8));
    report("too_large_read_huge", mp_bulk_read(1, big, big, (size_t)-16, d));

    /* a counter freed twice is refused: the pool must not hand it out twice */
    mp_counter_t twice = mp_counter_new(0);
    mp_counter_free(twice);
    mp_counter_free(twice);
    mp_counter_t n1 = mp_counter_new(0), n2 = mp_counter_new(0);
    report("double_free_distinct", n1 != n2 ? MP_SUCCESS : MP_ERR_BAD_STATE);
    mp_counter_free(n1);
    mp_counter_free(n2);
    /* the code returned matches the message printed */
    report("wait_null", mp_counter_wait(NULL, 1, mp_fiber_create(nop, NULL, 0, MP_SCHED_FIFO)));

    mp_fiber_t g = mp_fiber_create(counted, NULL, 0, MP_SCHED_FIFO);
    CHECK_OK(mp_fiber_enable(g));
    report("enable_twice", mp_fiber_enable(g));
    report("unknown_sched", mp_spawn(nop, NULL, 0, (mp_sched_t)99));
    uint64_t not_a_record[2] = {0, 0};
    report("derive_not_record", mp_stats_derive(not_a_record, NULL, NULL));

    /* the run goes on: these must all arrive */
    for (int i = 0; i < 10; i++)
        CHECK_OK(mp_invoke(1, counted, &i, sizeof i, MP_SCHED_FIFO));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    CHECK_OK(mp_obj_create(NULL, &objs[me]));
    if (me == 1) {
        mp_counter_t c = mp_counter_new(0);
        CHECK_EQ(mp_obj_barrier(objs[me], c), MP_WAIT);
    }
    if (me != 0)
        return;
    report("continue_in_main", mp_continue(nop, MP_SCHED_FIFO) == NULL ? MP_ERR_NOT_IN_FIBER : 0);
    CHECK_OK(mp_spawn(in_fiber, NULL, 0, MP_SCHED_FIFO));
}

int main(int argc, char **argv)
{
    int rc = tst_run(argc, argv, 2, pe_main);
    printf("after=%d rc=%d\n", atomic_load(&after), rc);
    CHECK_EQ(atomic_load(&after), 12);
    return rc;
}
