/* ranks.c -- misuse that exists only across processes: ranks started with different settings,
 * ranks that call mp_main a different number of times, a rank that exits inside a run.  Each
 * rank of an MPMD launch (mpirun -np 1 A : -np 1 B) may get its own environment and
 * arguments.  Usage: mpi_ranks SCENARIO [n=N] [size=BYTES] [runs=R] [pause_ms=MS]
 *   stream   every PE invokes N fibers with BYTES of arguments (default 1000) on every other
 *            PE and waits for the N * (P - 1) that are its own; R runs one after another, this
 *            rank pausing MS milliseconds before each run after the first.  After each run
 *            every PE prints "RESULT stream pe=<p> run=<r> got=<count>" and main prints
 *            "mp_main returned <rc>".
 *   exit     PE 1 calls exit(0) in a fiber while the other PEs wait for it.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "check.h"

#include <time.h>

static _Thread_local mp_counter_t got;

static void arrive(void *p)
{
    (void)p;
    mp_counter_add(got, 1);
}

static void leave(void *p)
{
    (void)p;
    exit(0);
}

static const char *scenario;
static long n_ops, size, run_no;

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype(), P = mp_npes();
    got = mp_counter_new(0);
    if (!strcmp(scenario, "exit")) {
        if (me == 1)
            CHECK_OK(mp_spawn(leave, NULL, 0, MP_SCHED_FIFO));
        else
            CHECK(mp_block_until(got, 1) != MP_SUCCESS); /* the job ends first */
        return;
    }
    CHECK(!strcmp(scenario, "stream"));
    static unsigned char args[MP_FIBER_ARGS_MAX];
    for (int k = 1; k < P; k++)
        for (long i = 0; i < n_ops; i++)
            CHECK_OK(mp_invoke((me + k) % P, arrive, args, (size_t)size, MP_SCHED_FIFO));
    CHECK_OK(mp_block_until(got, (uint64_t)n_ops * (uint64_t)(P - 1)));
    printf("RESULT stream pe=%d run=%ld got=%" PRIu64 "\n", me, run_no, mp_counter_value(got));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    scenario = argc > 1 ? argv[1] : "stream";
    n_ops = tst_opt(argc, argv, "n", 2000);
    size = tst_opt(argc, argv, "size", 1000);
    long runs = tst_opt(argc, argv, "runs", 1), pause_ms = tst_opt(argc, argv, "pause_ms", 0);
    mp_config cfg;
    mp_config_init(&cfg);
    int rc = 0;
    for (run_no = 0; run_no < runs && rc == 0; run_no++) {
        if (run_no > 0 && pause_ms > 0) {
            struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
        rc = mp_main(&cfg, pe_main, argc, argv);
        printf("mp_main returned %d\n", rc);
        fflush(stdout);
    }
    return rc;
}
