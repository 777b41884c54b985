/* channels.c -- the shared-memory backend's message channels (runtime/src/shm/machine.c).
 * Scenarios (argv[1]):
 *   flood N   every PE but 0 sends N invocations to PE 0 straight from pe_main, far ahead of
 *             PE 0, whose fibers are slow (a few microseconds each): with a small ring
 *             (MPROF_SHM_RING) the senders' rings fill and what follows waits on their held
 *             chains.  PE 0 checks each sender's order; main checks every record arrived once.
 *   mesh N    every PE sends N invocations round-robin to every other PE from a chain of
 *             fibers (records of 12 to 200 bytes); each receiver checks each sender's order and
 *             main checks every (sender, receiver) count: nothing lost, nothing twice.
 *   wake N    PE 0 computes for 20 ms (PE 1 has nothing to do and falls asleep), then sends
 *             one invocation stamped with the time; N rounds.  PE 1 records each delivery
 *             latency; main prints their median and maximum.  A lost wake-up costs up to the
 *             idle loop's 50 ms nap.
 *   burst N   N rounds: PE 1 sends a burst of 8 invocations to PE 0 and goes idle until PE 0
 *             acknowledges the 8th.  With a 1-slot ring (MPROF_SHM_RING=1) 7 of them wait on
 *             PE 1's held chain while PE 1 sleeps, and PE 0 must wake PE 1 when it frees the
 *             slot; main prints the median and maximum round time. */
#include "check.h"

#include <stdatomic.h>

typedef struct {
    int src;
    int seq;
    double sent_at;
    unsigned char fill[184];
} rec;

static const char *scenario;
static int n_msgs;
static atomic_int arrivals;
static int seen[MAXPE][MAXPE]; /* [receiver][sender], each row written by its receiver only */
static double latency[4096];
static int n_latency;

static void check_arrival(const rec *r, size_t size)
{
    int me = mp_mype();
    CHECK(r->src >= 0 && r->src < mp_npes() && r->src != me);
    size_t body = size - offsetof(rec, fill);
    for (size_t i = 0; i < body; i++)
        CHECK_EQ(r->fill[i], (unsigned char)(r->seq + (int)i));
    CHECK_EQ(r->seq, seen[me][r->src]); /* per-sender order; a duplicate or a gap fails here */
    seen[me][r->src]++;
    atomic_fetch_add(&arrivals, 1);
}

static size_t fill(rec *r, int seq, size_t size)
{
    r->src = mp_mype();
    r->seq = seq;
    r->sent_at = mp_wtime();
    for (size_t i = 0; i < size - offsetof(rec, fill); i++)
        r->fill[i] = (unsigned char)(seq + (int)i);
    return size;
}

static void slow_arrival(void *p)
{
    check_arrival(p, offsetof(rec, fill) + 8);
    tst_busy(2e-6); /* the receiver is the bottleneck: its channels fill */
}

static void mesh_arrival(void *p)
{
    const rec *r = p;
    check_arrival(r, offsetof(rec, fill) + (size_t)(r->seq % 4) * 60);
}

/* One step of a PE's mesh: a few invocations, then the next step as a fiber. */
static void mesh_step(void *p)
{
    int i = *(int *)p, me = mp_mype(), np = mp_npes();
    int total = n_msgs * (np - 1);
    for (int k = 0; k < 4 && i < total; k++, i++) {
        rec r;
        int seq = i / (np - 1); /* the i-th goes to the (i mod (np - 1))-th other PE */
        size_t size = fill(&r, seq, offsetof(rec, fill) + (size_t)(seq % 4) * 60);
        CHECK_OK(mp_invoke((me + 1 + i % (np - 1)) % np, mesh_arrival, &r, size, MP_SCHED_FIFO));
    }
    if (i < total)
        CHECK_OK(mp_spawn(mesh_step, &i, sizeof i, MP_SCHED_FIFO));
}

static void wake_arrival(void *p)
{
    const rec *r = p;
    check_arrival(r, offsetof(rec, fill));
    if (n_latency < (int)(sizeof latency / sizeof *latency))
        latency[n_latency++] = mp_wtime() - r->sent_at;
}

#define BURST 8
static double round_start; /* PE 1's */
static int rounds;         /* PE 1's */
static void burst_arrival(void *p);

static void burst_send(void)
{
    round_start = mp_wtime();
    for (int i = 0; i < BURST; i++) {
        rec r;
        size_t size = fill(&r, rounds * BURST + i, offsetof(rec, fill));
        CHECK_OK(mp_invoke(0, burst_arrival, &r, size, MP_SCHED_FIFO));
    }
    rounds++;
}

static void burst_ack(void *p)
{
    (void)p;
    if (n_latency < (int)(sizeof latency / sizeof *latency))
        latency[n_latency++] = mp_wtime() - round_start;
    if (n_latency < n_msgs)
        burst_send();
}

static void burst_arrival(void *p)
{
    const rec *r = p;
    check_arrival(r, offsetof(rec, fill));
    if (seen[0][1] % BURST == 0)
        CHECK_OK(mp_invoke(1, burst_ack, NULL, 0, MP_SCHED_FIFO));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    if (strcmp(scenario, "flood") == 0) {
        if (me == 0)
            return;
        for (int i = 0; i < n_msgs; i++) {
            rec r;
            CHECK_OK(mp_invoke(0, slow_arrival, &r, fill(&r, i, offsetof(rec, fill) + 8),
                               MP_SCHED_FIFO));
        }
    } else if (strcmp(scenario, "mesh") == 0) {
        int start = 0;
        CHECK_OK(mp_spawn(mesh_step, &start, sizeof start, MP_SCHED_FIFO));
    } else if (strcmp(scenario, "burst") == 0) {
        if (me == 1)
            burst_send();
    } else if (strcmp(scenario, "wake") == 0) {
        if (me != 0)
            return;
        for (int i = 0; i < n_msgs; i++) {
            tst_busy(0.02);
            rec r;
            CHECK_OK(
                mp_invoke(1, wake_arrival, &r, fill(&r, i, offsetof(rec, fill)), MP_SCHED_FIFO));
            mp_flush();
        }
    } else {
        CHECK(!"unknown scenario");
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    scenario = tst_scenario(argc, argv, "mesh");
    n_msgs = argc > 2 ? atoi(argv[2]) : 1000;
    int rc = tst_run(argc, argv, strcmp(scenario, "flood") == 0 ? 4 : 2, pe_main);
    if (rc)
        return rc;
    int pes = getenv("MPROF_PES")              ? atoi(getenv("MPROF_PES"))
              : strcmp(scenario, "flood") == 0 ? 4
                                               : 2;
    long expect = 0;
    for (int r = 0; r < pes; r++)
        for (int s = 0; s < pes; s++) {
            int want = 0;
            if (strcmp(scenario, "flood") == 0)
                want = r == 0 && s != 0 ? n_msgs : 0;
            else if (strcmp(scenario, "mesh") == 0)
                want = r != s ? n_msgs : 0;
            else if (strcmp(scenario, "burst") == 0)
                want = r == 0 && s == 1 ? BURST * n_msgs : 0;
            else
                want = r == 1 && s == 0 ? n_msgs : 0;
            CHECK_EQ(seen[r][s], want);
            expect += want;
        }
    printf("arrivals=%d expected=%ld\n", atomic_load(&arrivals), expect);
    CHECK_EQ(atomic_load(&arrivals), expect);
    if (n_latency) {
        qsort(latency, (size_t)n_latency, sizeof *latency, cmp_double);
        printf("latency_ms median=%.3f max=%.3f\n", 1e3 * latency[n_latency / 2],
               1e3 * latency[n_latency - 1]);
    }
    return 0;
}
