/* flush_policy.c -- the flush policy for a destination PE on another rank (comm.c, "The flush
 * policy"; runtime/src/mpi/notice.c), on any backend with P >= 2.  Scenarios (argv[1]):
 *   stream N   PE 0 runs N fibers, each invoking one 32-byte record on PE 1, which stays busy
 *              (a chain of fibers that burn a little CPU) until all N have arrived.  A busy
 *              receiver's records should leave in messages of many records: the test reads
 *              RemoteOp / MsgSent of PE 0 from the run profile.
 *   wait R     R rounds: PE 1 asks PE 0 (one record, sent when PE 1 runs out of work) and
 *              waits; PE 0 is busy throughout (its chain runs until the last round, at most
 *              BUSY_CAP_S) and answers with one record into its aggregation buffer, which
 *              neither fills nor reaches its delay (the test sets MPROF_FLUSH_DELAY_US far
 *              above BUSY_CAP_S).  The answer must come because PE 1 waits, promptly:
 *              PE 1 prints the longest round trip.
 * PEs beyond 1 take no part.  PE 1 prints a "RESULT <scenario> ..." line.
 */
#include "check.h"

#include <stdbool.h>

#define PE_LOCAL static _Thread_local
#define BUSY_CAP_S 3.0 /* PE 0's busy chain in `wait` ends by then whatever happens */

static const char *scenario;
static long n_ops;
PE_LOCAL long got; /* records arrived (stream) or answers (wait), on this PE */
PE_LOCAL bool done;
PE_LOCAL double t_start;

/* Burns a little CPU, then enables itself again until the scenario is done: the PE never runs
 * out of work meanwhile, so it never waits and polls only at its communication periods. */
static void busy(void *arg)
{
    (void)arg;
    for (volatile int i = 0; i < 200; i++)
        ;
    if (!done && mp_wtime() - t_start < BUSY_CAP_S)
        CHECK_OK(mp_spawn(busy, NULL, 0, MP_SCHED_FIFO));
}

/* ------------------------------------------------------------------------------------ */
/* stream                                                                                 */

PE_LOCAL mp_counter_t arrived; /* on PE 1 */

static void arrive(void *arg)
{
    (void)arg;
    got++;
    mp_counter_add(arrived, 1);
}

static void produce(void *arg)
{
    long i = *(long *)arg;
    CHECK_OK(mp_invoke(1, arrive, &i, sizeof i, MP_SCHED_FIFO));
    if (++i < n_ops)
        CHECK_OK(mp_spawn(produce, &i, sizeof i, MP_SCHED_FIFO));
}

static void stream_main(void)
{
    if (mp_mype() == 0) {
        long i = 0;
        CHECK_OK(mp_spawn(produce, &i, sizeof i, MP_SCHED_FIFO));
    } else if (mp_mype() == 1) {
        arrived = mp_counter_new(0);
        CHECK_OK(mp_spawn(busy, NULL, 0, MP_SCHED_FIFO));
        CHECK_OK(mp_block_until(arrived, (uint64_t)n_ops)); /* busy meanwhile */
        done = true;
        CHECK_EQ(got, n_ops);
        printf("RESULT stream pe=1 got=%ld\n", got);
        mp_counter_free(arrived);
    }
}

/* ------------------------------------------------------------------------------------ */
/* wait                                                                                   */

typedef struct {
    mp_counter_t answered; /* on PE 1 */
    long round;
} ask_args;

static void answer(void *arg)
{
    ask_args *a = arg;
    got++;
    mp_counter_add(a->answered, 1);
}

static void finish_busy(void *arg)
{
    (void)arg;
    done = true;
}

static void ask(void *arg)
{
    /* a plain (FIFO) record into PE 0's open buffer for PE 1, while PE 0 stays busy */
    CHECK_OK(mp_invoke(1, answer, arg, sizeof(ask_args), MP_SCHED_FIFO));
}

static void wait_main(void)
{
    if (mp_mype() == 0) {
        CHECK_OK(mp_spawn(busy, NULL, 0, MP_SCHED_FIFO));
    } else if (mp_mype() == 1) {
        ask_args a = {mp_counter_new(0), 0};
        double longest = 0;
        for (; a.round < n_ops; a.round++) {
            double t0 = mp_wtime();
            CHECK_OK(mp_invoke(0, ask, &a, sizeof a, MP_SCHED_FIFO));
            CHECK_OK(mp_block_until(a.answered, (uint64_t)a.round + 1));
            double rtt = mp_wtime() - t0;
            longest = rtt > longest ? rtt : longest;
        }
        CHECK_OK(mp_invoke(0, finish_busy, NULL, 0, MP_SCHED_FIFO));
        CHECK_EQ(got, n_ops);
        printf("RESULT wait pe=1 rounds=%ld longest_s=%.6f\n", got, longest);
        mp_counter_free(a.answered);
    }
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    got = 0;
    done = false;
    t_start = mp_wtime();
    CHECK(mp_npes() >= 2);
    if (!strcmp(scenario, "stream"))
        stream_main();
    else if (!strcmp(scenario, "wait"))
        wait_main();
    else
        CHECK(!"unknown scenario");
}

int main(int argc, char **argv)
{
    scenario = argc > 1 ? argv[1] : "stream";
    n_ops = argc > 2 ? atol(argv[2]) : 20000;
    mp_config cfg;
    mp_config_init(&cfg);
    return mp_main(&cfg, pe_main, argc, argv);
}
