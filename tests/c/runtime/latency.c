/* latency.c -- idle and latency accounting (2 PEs).  Two fibers on PE 1 ("lat:wait") wait on a
 * counter that PE 0 increments after computing for ~20 ms in a fiber it runs on behalf of
 * PE 1 ("lat:send").  PE 1 is idle meanwhile, so each waiter observes ~20 ms for (lat:wait,
 * lat:send), and the idle period is charged once on the critical path (~20 ms in all); the
 * remotely invoked sender sees ~0 latency.
 * Then, with argv[2] = R (default 0), R rounds of BURST remote invocations from PE 0
 * ("lat:send") to PE 1 ("lat:remote"); the last of a round's arrivals asks PE 0 for the next.
 * By then the round's buffers have gone back to PE 0, so with aggregation off a round's first
 * send refills PE 0's pool and the others take mp_invoke's at-once fast path: every arrival
 * must still be enabled by lat:send.
 * With argv[3] = 1, the last PE alone registers a category ("lat:late", while it runs) and
 * runs a fiber in it: on MPI the other ranks never register it, and the profile must list it.
 * pytest reads the run profile.  argv[1]: compute time in ms (default 20). */
#include "check.h"

#define BURST 8

static int acc_wait, acc_send, acc_remote;
static double compute_s = 0.020;
static long rounds;
static int late;
static _Thread_local long arrived; /* on PE 1 */

static void burst(void *p);

static void waiter(void *p)
{
    (void)p;
    mp_access_declare(acc_wait);
    CHECK_EQ(mp_mype(), 1);
}

static void remote_fn(void *p)
{
    long round = *(long *)p;
    mp_access_declare(acc_remote);
    if (round > 0 && ++arrived % BURST == 0 && round < rounds) {
        long next = round + 1;
        CHECK_OK(mp_invoke(0, burst, &next, sizeof next, MP_SCHED_FIFO));
    }
}

/* One round of bursts (round >= 1) on PE 0. */
static void burst(void *p)
{
    long round = *(long *)p;
    mp_access_declare(acc_send);
    for (int i = 0; i < BURST; i++)
        CHECK_OK(mp_invoke(1, remote_fn, &round, sizeof round, MP_SCHED_FIFO));
}

static void sender(void *p)
{
    mp_counter_t c = *(mp_counter_t *)p;
    mp_access_declare(acc_send);
    CHECK_EQ(mp_mype(), 0);
    tst_busy(compute_s);
    CHECK_OK(mp_counter_add_remote(1, c, 1));
    long none = 0;
    CHECK_OK(mp_invoke(1, remote_fn, &none, sizeof none, MP_SCHED_FIFO));
    if (rounds > 0) {
        long first = 1;
        burst(&first);
    }
}

static void late_fn(void *p) { mp_access_declare(*(int *)p); }

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (late && mp_mype() == mp_npes() - 1) {
        int acc_late = mp_access_register("lat", "late");
        CHECK(acc_late > 0);
        CHECK_OK(mp_spawn(late_fn, &acc_late, sizeof acc_late, MP_SCHED_FIFO));
    }
    if (mp_mype() != 1)
        return;
    mp_counter_t c = mp_counter_new(0);
    /* two waiters on the same event: both observe the idle time, it is critical once */
    CHECK_OK(mp_counter_wait(c, 1, mp_fiber_create(waiter, NULL, 0, MP_SCHED_FIFO)));
    CHECK_OK(mp_counter_wait(c, 1, mp_fiber_create(waiter, NULL, 0, MP_SCHED_FIFO)));
    CHECK_OK(mp_invoke(0, sender, &c, sizeof c, MP_SCHED_FIFO));
    mp_param("compute_ms", compute_s * 1e3);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        compute_s = atof(argv[1]) * 1e-3;
    if (argc > 2)
        rounds = atol(argv[2]);
    if (argc > 3)
        late = atoi(argv[3]);
    acc_wait = mp_access_register("lat", "wait");
    acc_send = mp_access_register("lat", "send");
    acc_remote = mp_access_register("lat", "remote");
    CHECK(acc_wait > 0 && acc_send > 0 && acc_remote > 0);
    CHECK_EQ(mp_access_register("lat", "wait"), acc_wait); /* idempotent */
    return tst_run(argc, argv, 2, pe_main);
}
