/* hang.c -- programs that deadlock on purpose; the runtime must end the run with a non-zero
 * status and name what waits.  Scenarios (argv[1]):
 *   fiber  a fiber on PE 1 waits for a counter value nobody reaches
 *   block  pe_main of PE 0 blocks in mp_block_until on a counter nobody increments
 *   held   a custom scheduler keeps an enabled fiber and never selects it */
#include "check.h"

static const char *scenario;
static int acc_setup;

/* Not static: the hang report names fibers through the dynamic symbol table. */
void hang_stuck_waiter(void *p);
void hang_stuck_waiter(void *p)
{
    (void)p;
    CHECK(!"the stuck waiter must never run");
}

void hang_setup(void *p);
void hang_setup(void *p)
{
    (void)p;
    mp_access_declare(acc_setup);
    mp_counter_t c = mp_counter_new(2);
    CHECK_OK(mp_counter_wait(c, 5, mp_fiber_create(hang_stuck_waiter, NULL, 0, MP_SCHED_FIFO)));
}

static void deposit(void *st, mp_fiber_t f) { *(mp_fiber_t *)st = f; }
static mp_fiber_t select_none(void *st)
{
    (void)st;
    return NULL;
}
static mp_fiber_t held[MAXPE];

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    if (strcmp(scenario, "fiber") == 0) {
        if (me == 1)
            CHECK_OK(mp_spawn(hang_setup, NULL, 0, MP_SCHED_FIFO));
    } else if (strcmp(scenario, "block") == 0) {
        if (me == 0) {
            mp_counter_t c = mp_counter_new(0);
            mp_err e = mp_block_until(c, 1);
            printf("mp_block_until returned %d (%s)\n", e, mp_strerror(e));
            fflush(stdout);
        }
    } else {
        static const mp_sched_ops ops = {deposit, select_none, "never"};
        mp_sched_t id;
        CHECK_OK(mp_sched_register(&ops, &held[me], &id));
        if (me == 0)
            CHECK_OK(mp_spawn(hang_stuck_waiter, NULL, 0, id));
    }
}

int main(int argc, char **argv)
{
    scenario = tst_scenario(argc, argv, "fiber");
    acc_setup = mp_access_register("hang", "setup");
    int rc = tst_run(argc, argv, 2, pe_main);
    printf("mp_main returned %d\n", rc);
    return rc;
}
