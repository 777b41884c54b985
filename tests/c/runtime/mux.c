/* mux.c -- PEs multiplexed over fewer worker threads (shm backend, MPROF_WORKERS).
 *
 * Every PE keeps its identity in _Thread_local variables (a scalar and an array), starts a
 * ring of hand-offs (each token visits every PE `rounds` times), blocks in mp_block_until
 * until its token has come back that often, and after every hop checks that its PE-local
 * state is still its own although other PEs ran on the same thread meanwhile.  A floating-
 * point rounding mode set by one PE must not leak into another (each context keeps its own
 * control words).  Prints "mux: OK pes=P hops=H".
 *   rt_mux [rounds]        (default 200; the token comes home rounds + 1 times) */
#include "check.h"

#include <fenv.h>

static _Thread_local int me = -1;
static _Thread_local long hops_seen;
static _Thread_local int stamp[40]; /* bigger than a word: the whole block is per PE */
static _Thread_local mp_counter_t back;
static long rounds = 200;
static long total_hops[MAXPE];

static void check_identity(void)
{
    CHECK_EQ(me, mp_mype());
    for (int i = 0; i < 40; i++)
        CHECK_EQ(stamp[i], mp_mype() * 100 + i);
    CHECK_EQ(fegetround(), mp_mype() % 2 ? FE_UPWARD : FE_TONEAREST);
}

typedef struct {
    int origin;
    long left; /* hops before the token is home for good */
} token;

static void hop(void *p)
{
    token t = *(token *)p;
    check_identity();
    hops_seen++;
    if (t.origin == mp_mype()) {
        mp_counter_add(back, 1);
        if (t.left <= 0)
            return;
    }
    t.left--;
    CHECK_OK(mp_invoke((mp_mype() + 1) % mp_npes(), hop, &t, sizeof t, MP_SCHED_FIFO));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    me = mp_mype();
    for (int i = 0; i < 40; i++)
        stamp[i] = me * 100 + i;
    fesetround(me % 2 ? FE_UPWARD : FE_TONEAREST);
    back = mp_counter_new(0);
    token t = {me, rounds * mp_npes()};
    CHECK_OK(mp_invoke((me + 1) % mp_npes(), hop, &t, sizeof t, MP_SCHED_FIFO));
    /* blocks on its own stack while the other PEs of its worker run */
    CHECK_OK(mp_block_until(back, (uint64_t)rounds + 1));
    check_identity();
    total_hops[me] = hops_seen;
    mp_counter_free(back);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    int rc = tst_run(argc, argv, 8, pe_main);
    long hops = 0;
    int pes = getenv("MPROF_PES") ? atoi(getenv("MPROF_PES")) : 8;
    for (int i = 0; i < pes; i++)
        hops += total_hops[i];
    printf("mux: %s pes=%d hops=%ld\n", rc == 0 ? "OK" : "FAILED", pes, hops);
    return rc;
}
