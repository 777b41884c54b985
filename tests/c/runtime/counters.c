/* counters.c -- counters and split-phase status (2 PEs): wait then add, wait on a value already
 * reached, several waiters, set, remote add, mp_block_until, and OK / WAIT / FAIL of bulk ops. */
#include "check.h"

static int ran_a, ran_b, ran_now, ran_preempt;
static mp_counter_t c1;

static void mark_a(void *p) { (void)p, ran_a++; }
static void mark_b(void *p) { (void)p, ran_b++; }
static void mark_now(void *p) { (void)p, ran_now++; }
static void mark_preempt(void *p) { (void)p, ran_preempt++; }

static void after_all(void *p)
{
    (void)p;
    CHECK_EQ(ran_a, 1);
    CHECK_EQ(ran_b, 1);
}

static void step2(void *p)
{
    (void)p;
    CHECK_EQ(ran_a, 0); /* counter at 2 of 3 */
    mp_counter_add(c1, 1);
    /* waiter a is enabled now (FIFO) and runs before this one */
    CHECK_OK(mp_spawn(after_all, NULL, 0, MP_SCHED_FIFO));
}

/* A preemptive waiter that updates the counter again while the outer update still walks the
 * wait list: every waiter must be enabled exactly once. */
static int ran_x, ran_y;
static mp_counter_t rc;
static void re_x(void *p) { (void)p, ran_x++; }
static void re_y(void *p) { (void)p, ran_y++; }
static void re_a(void *p)
{
    (void)p;
    mp_counter_add(rc, 1);
}
static void re_check(void *p)
{
    (void)p;
    CHECK_EQ(ran_x, 1);
    CHECK_EQ(ran_y, 1);
}

static void reentrant(void)
{
    rc = mp_counter_new(0);
    /* waiters are listed newest first: X (value 2), A (value 1, preemptive), Y (value 1) */
    CHECK_OK(mp_counter_wait(rc, 1, mp_fiber_create(re_y, NULL, 0, MP_SCHED_FIFO)));
    CHECK_OK(mp_counter_wait(rc, 1, mp_fiber_create(re_a, NULL, 0, MP_SCHED_PREEMPT)));
    CHECK_OK(mp_counter_wait(rc, 2, mp_fiber_create(re_x, NULL, 0, MP_SCHED_FIFO)));
    mp_counter_add(rc, 1);
    CHECK_EQ(mp_counter_value(rc), 2);
    CHECK_OK(mp_spawn(re_check, NULL, 0, MP_SCHED_FIFO));
}

static void driver(void *p)
{
    (void)p;
    /* wait, then add */
    c1 = mp_counter_new(0);
    mp_fiber_t a = mp_fiber_create(mark_a, NULL, 0, MP_SCHED_FIFO);
    mp_fiber_t b = mp_fiber_create(mark_b, NULL, 0, MP_SCHED_FIFO);
    CHECK_OK(mp_counter_wait(c1, 3, a));
    CHECK_OK(mp_counter_wait(c1, 2, b));
    mp_counter_add(c1, 1);
    mp_counter_add(c1, 1); /* b's value reached */
    CHECK_EQ(mp_counter_value(c1), 2);
    CHECK_OK(mp_spawn(step2, NULL, 0, MP_SCHED_FIFO));

    /* a value already reached enables at once: a preemptive fiber runs inside the call */
    mp_counter_t c2 = mp_counter_new(5);
    mp_fiber_t pf = mp_fiber_create(mark_preempt, NULL, 0, MP_SCHED_PREEMPT);
    CHECK_OK(mp_counter_wait(c2, 5, pf));
    CHECK_EQ(ran_preempt, 1);
    /* ... and a FIFO fiber is enabled (enabling it again is an error) */
    mp_fiber_t nf = mp_fiber_create(mark_now, NULL, 0, MP_SCHED_FIFO);
    CHECK_OK(mp_counter_wait(c2, 4, nf));
    CHECK_EQ(ran_now, 0);

    /* set */
    mp_counter_t c3 = mp_counter_new(0);
    mp_fiber_t sf = mp_fiber_create(mark_preempt, NULL, 0, MP_SCHED_PREEMPT);
    CHECK_OK(mp_counter_wait(c3, 10, sf));
    mp_counter_set(c3, 9);
    CHECK_EQ(ran_preempt, 1);
    mp_counter_set(c3, 10);
    CHECK_EQ(ran_preempt, 2);
    CHECK_EQ(mp_counter_value(c3), 10);
    mp_counter_free(c2);
    mp_counter_free(c3);
    reentrant();
}

/* remote add and split-phase status, PE 0 <-> PE 1 */
static char remote_buf[2][256];

static void bump_back(void *p)
{
    mp_counter_t c = *(mp_counter_t *)p;
    CHECK_EQ(mp_mype(), 1);
    CHECK_OK(mp_counter_add_remote(0, c, 1));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    snprintf(remote_buf[me], sizeof remote_buf[me], "buffer of PE %d", me);
    if (me != 0)
        return;
    CHECK_OK(mp_spawn(driver, NULL, 0, MP_SCHED_FIFO));

    /* mp_block_until on a counter another PE increments */
    mp_counter_t c = mp_counter_new(0);
    CHECK_OK(mp_invoke(1, bump_back, &c, sizeof c, MP_SCHED_FIFO));
    CHECK_OK(mp_block_until(c, 1));
    CHECK_EQ(mp_counter_value(c), 1);

    /* OK: local bulk op, the counter is already incremented */
    char local[256];
    mp_counter_t d = mp_counter_new(0);
    CHECK_EQ(mp_bulk_read(0, remote_buf[0], local, sizeof local, d), MP_OK);
    CHECK_EQ(mp_counter_value(d), 1);
    CHECK(strcmp(local, "buffer of PE 0") == 0);
    /* WAIT: remote */
    CHECK_EQ(mp_bulk_read(1, remote_buf[1], local, sizeof local, d), MP_WAIT);
    CHECK_OK(mp_block_until(d, 2));
    CHECK(strcmp(local, "buffer of PE 1") == 0);
    /* FAIL: bad arguments, nothing started */
    CHECK_EQ(mp_bulk_read(1, remote_buf[1], local, sizeof local, NULL), MP_FAIL);
    CHECK_EQ(mp_bulk_read(1, NULL, local, sizeof local, d), MP_FAIL);
    CHECK_EQ(mp_bulk_write(7, remote_buf[1], local, sizeof local, d), MP_FAIL);
    CHECK_EQ(mp_counter_value(d), 2);
    printf("status: ok=%d wait=%d fail=%d\n", MP_OK, MP_WAIT, MP_FAIL);
}

int main(int argc, char **argv)
{
    int rc = tst_run_exactly(argc, argv, 2, pe_main);
    if (rc)
        return rc;
    CHECK_EQ(ran_a, 1);
    CHECK_EQ(ran_b, 1);
    CHECK_EQ(ran_now, 1);
    CHECK_EQ(ran_preempt, 2);
    CHECK_EQ(ran_x, 1);
    CHECK_EQ(ran_y, 1);
    puts("counters: OK");
    return 0;
}
