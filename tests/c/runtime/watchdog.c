/* watchdog.c -- code that never returns to the runtime, and the SIGQUIT state dump.
 * Scenarios (argv[1]):
 *   fiber  a fiber on PE 1 (category wd:spin) loops forever: MPROF_PROGRESS_TIMEOUT must name
 *          it and end the run with status 2
 *   main   pe_main of PE 0 loops forever: reported as pe_main
 *   quit   a fiber on PE 0 computes for argv[2] seconds (default 1.5) while a fiber waits on
 *          a counter and PE 1's pe_main blocks in mp_block_until; a SIGQUIT sent meanwhile
 *          prints every PE's state and the run ends normally
 *   chain  a chain of continuations on PE 0, each in the storage of the one before, runs for
 *          argv[2] seconds: a busy PE, not a stuck one, though its running fiber is always at
 *          the same address; the run ends normally */
#include "check.h"

static const char *scenario;
static int acc_spin, acc_long;
static double busy_s = 1.5;

/* Not static: reports name fibers through the dynamic symbol table. */
void watchdog_spinner(void *p);
void watchdog_spinner(void *p)
{
    (void)p;
    mp_access_declare(acc_spin);
    for (volatile unsigned long i = 0;; i++)
        ;
}

void watchdog_waiter(void *p);
void watchdog_waiter(void *p) { (void)p; }

/* Runs on PE 0 when PE 1 asks: computes, then releases PE 1's counter. */
void watchdog_long(void *p);
void watchdog_long(void *p)
{
    mp_counter_t release = *(mp_counter_t *)p;
    mp_access_declare(acc_long);
    mp_counter_t c = mp_counter_new(0);
    CHECK_OK(mp_counter_wait(c, 3, mp_fiber_create(watchdog_waiter, NULL, 0, MP_SCHED_FIFO)));
    printf("busy\n");
    fflush(stdout); /* pytest sends SIGQUIT once it reads this */
    tst_busy(busy_s);
    mp_counter_add(c, 3);
    mp_counter_free(c);
    CHECK_OK(mp_counter_add_remote(1, release, 1));
}

/* A continuation of itself until busy_s has passed since the chain began. */
static double chain_t0;
void watchdog_chain(void *p);
void watchdog_chain(void *p)
{
    (void)p;
    if (mp_wtime() - chain_t0 < busy_s)
        CHECK_OK(mp_fiber_enable(mp_continue(watchdog_chain, MP_SCHED_FIFO)));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    if (strcmp(scenario, "fiber") == 0) {
        if (me == 1)
            CHECK_OK(mp_spawn(watchdog_spinner, NULL, 0, MP_SCHED_FIFO));
    } else if (strcmp(scenario, "main") == 0) {
        if (me == 0)
            for (volatile unsigned long i = 0;; i++)
                ;
    } else if (strcmp(scenario, "chain") == 0) {
        if (me == 0) {
            chain_t0 = mp_wtime();
            CHECK_OK(mp_spawn(watchdog_chain, NULL, 0, MP_SCHED_FIFO));
        }
    } else if (me == 1) {
        mp_counter_t release = mp_counter_new(0);
        CHECK_OK(mp_invoke(0, watchdog_long, &release, sizeof release, MP_SCHED_FIFO));
        CHECK_OK(mp_block_until(release, 1));
        mp_counter_free(release);
    }
}

int main(int argc, char **argv)
{
    scenario = tst_scenario(argc, argv, "fiber");
    if (argc > 2)
        busy_s = atof(argv[2]);
    acc_spin = mp_access_register("wd", "spin");
    acc_long = mp_access_register("wd", "long");
    int rc = tst_run(argc, argv, 2, pe_main);
    printf("mp_main returned %d\n", rc);
    return rc;
}
