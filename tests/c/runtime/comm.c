/* comm.c -- remote invocation and aggregation.  Scenarios (argv[1]):
 *   count N SIZE     PE 0 invokes N fibers with SIZE-byte arguments on PE 1 (from pe_main);
 *                    pytest compares RemoteOp / MsgSent / FastMsgSent / ByteSent in the profile
 *   flush N SIZE     N fibers on PE 0 each invoke one fiber on PE 1 (flush after K fibers /
 *                    when out of fibers, per MPROF_FLUSH_FIBERS)
 *   explicit N SIZE  the same, each fiber calls mp_flush()
 *   order N          PEs 0 and 2 send N invocations each of mixed sizes (fast, medium, large)
 *                    to PE 1, which checks each sender's sequence numbers arrive in order
 *   pingpong N SIZE  PEs 0 and 1 bounce one SIZE-byte invocation N times each way: every
 *                    buffer comes back before its sender needs the next one (pool reuse)
 *   alltoall N       every PE sends N invocations of mixed sizes round-robin to the others
 *                    from a chain of fibers (some calling mp_flush); every receiver checks
 *                    each sender's order.  With PEs sharing workers (MPROF_WORKERS) this
 *                    drives the worker groups' shared aggregation buffers (mpr_comm.h)
 *   busy N           as flush, while PE 1 runs a chain of fibers until all N arrived: it never
 *                    waits for work, so (flush policy, runtime/src/comm.c) records for it go
 *                    only when a buffer fills, runs past MPROF_FLUSH_DELAY_US, or PE 0 runs
 *                    out of work
 *   busyslow N       as busy, each of PE 0's fibers running 50 us (for the delay)
 *   hungry N         PE 0 sends one record to PE 1, which waits for work, and keeps running
 *                    a chain of fibers until it has arrived (5 s at most): the record must go
 *                    at a communication period, not when PE 0 runs out of work or the delay
 *                    runs out; prints the chain's length
 *   lag N            as flush without aggregation, while PE 1 runs 1 ms fibers until all N
 *                    arrived: PE 0 runs far ahead of its receiver (flow control, comm.c).
 *                    PE 1's first fiber takes nothing until PE 0 has sent all N or has sent
 *                    none for 5 ms (flow control holds a sender for up to 20 ms), so PE 0
 *                    is ahead however the OS schedules the two threads
 *   service N        PE 1 runs a chain of 2 ms fibers; PE 0 sends it N urgent requests one
 *                    after the other (each after the reply to the previous one) and PE 1
 *                    counts how many of its long fibers ended between a request's sending and
 *                    its service; prints the largest count (message service latency)
 *   lastwords        3 PEs.  PE 0's only fiber invokes a record on PE 1 (it stays in the open
 *                    aggregation buffer) and ends once PE 2 has sent PE 0 an urgent request,
 *                    which interrupts PE 0.  PE 0 has run out of work, so the record must go
 *                    before the poll that takes the request: the request's fiber waits up to
 *                    5 s for the record's arrival on PE 1 and prints whether it came
 *                    (delivered=1); kept in the buffer, it could not come while that fiber
 *                    runs */
#include "check.h"

#include <stdatomic.h>
#include <stdbool.h>

typedef struct {
    int src;
    int seq;
    int size;
    unsigned char fill[MP_FIBER_ARGS_MAX - 3 * sizeof(int)];
} msg;

static atomic_int arrivals;
static int next_seq[MAXPE];
static int seen[MAXPE][MAXPE]; /* alltoall: [receiver][sender], each row written by its PE */
static const char *scenario;
static int n_msgs, msg_size;

static void arrive(void *p)
{
    msg *m = p;
    CHECK_EQ(mp_mype(), 1);
    int body = m->size - (int)(3 * sizeof(int));
    for (int i = 0; i < body; i++)
        CHECK_EQ(m->fill[i], (unsigned char)(m->seq + i));
    CHECK_EQ(m->seq, next_seq[m->src]); /* per-sender FIFO order */
    next_seq[m->src]++;
    atomic_fetch_add(&arrivals, 1);
}

static void arrive_empty(void *p)
{
    (void)p;
    atomic_fetch_add(&arrivals, 1);
}

static atomic_int sent; /* lag: records PE 0 has handed to mp_invoke */

static void send_one(int seq, int size)
{
    atomic_fetch_add(&sent, 1);
    if (size == 0) {
        CHECK_OK(mp_invoke(1, arrive_empty, NULL, 0, MP_SCHED_FIFO));
        return;
    }
    msg m;
    CHECK(size >= (int)(3 * sizeof(int)) && size <= (int)sizeof m);
    m.src = mp_mype();
    m.seq = seq;
    m.size = size;
    for (int i = 0; i < size - (int)(3 * sizeof(int)); i++)
        m.fill[i] = (unsigned char)(seq + i);
    CHECK_OK(mp_invoke(1, arrive, &m, (size_t)size, MP_SCHED_FIFO));
}

static void sender_fiber(void *p)
{
    int seq = *(int *)p;
    send_one(seq, msg_size);
    if (strcmp(scenario, "explicit") == 0)
        mp_flush();
    if (strcmp(scenario, "busyslow") == 0)
        tst_busy(50e-6);
}

static void arrive_any(void *p)
{
    msg *m = p;
    int body = m->size - (int)(3 * sizeof(int));
    for (int i = 0; i < body; i++)
        CHECK_EQ(m->fill[i], (unsigned char)(m->seq + i));
    CHECK_EQ(m->seq, seen[mp_mype()][m->src]); /* per-sender FIFO order */
    seen[mp_mype()][m->src]++;
    atomic_fetch_add(&arrivals, 1);
}

/* One step of a PE's alltoall: a few invocations, then the next step as a fiber. */
static void alltoall_step(void *p)
{
    int i = *(int *)p, me = mp_mype(), np = mp_npes();
    static const int sizes[] = {12, 40, 12, 200, 12, 1000, 64, 12, 600, 12, 1024, 40};
    for (int k = 0; k < 3 && i < n_msgs; k++, i++) {
        int size = sizes[(i * 5 + me) % 12];
        msg m;
        m.src = me;
        m.seq = i / (np - 1); /* the i-th message goes to the (i mod (np - 1))-th other PE */
        m.size = size;
        for (int j = 0; j < size - (int)(3 * sizeof(int)); j++)
            m.fill[j] = (unsigned char)(m.seq + j);
        int dst = (me + 1 + i % (np - 1)) % np;
        CHECK_OK(mp_invoke(dst, arrive_any, &m, (size_t)size, MP_SCHED_FIFO));
    }
    if (i % 97 == 0)
        mp_flush();
    if (i < n_msgs)
        CHECK_OK(mp_spawn(alltoall_step, &i, sizeof i, MP_SCHED_FIFO));
}

/* busy, hungry, service */
static atomic_int arrived_flag, long_done, served, max_lag;

static void busy_chain(void *p)
{
    (void)p;
    if (atomic_load(&arrivals) < n_msgs)
        CHECK_OK(mp_spawn(busy_chain, NULL, 0, MP_SCHED_FIFO));
}

static void flag_arrive(void *p)
{
    (void)p;
    atomic_fetch_add(&arrivals, 1);
    atomic_store(&arrived_flag, 1);
}

static double hungry_deadline;
static int hungry_chain_len;

static void hungry_chain(void *p)
{
    (void)p;
    hungry_chain_len++;
    if (atomic_load(&arrived_flag))
        return;
    CHECK(mp_wtime() < hungry_deadline);
    CHECK_OK(mp_spawn(hungry_chain, NULL, 0, MP_SCHED_FIFO));
}

static void long_fiber(void *p)
{
    (void)p;
    tst_busy(0.002);
    atomic_fetch_add(&long_done, 1);
    if (atomic_load(&served) < n_msgs)
        CHECK_OK(mp_spawn(long_fiber, NULL, 0, MP_SCHED_FIFO));
}

/* Holds PE 1 (a fiber that does not return keeps its PE from polling) until PE 0 is stuck or
 * done: a PE 0 that flow control stops sends nothing for up to 20 ms (MPR_FLOW_WAIT_NS), one
 * without flow control sends all N.  Either way PE 0 got as far ahead as it could, whenever
 * the OS ran the two threads; then PE 1 takes 64 records every 4 ms. */
static void lag_gate(void)
{
    int last = -1;
    double quiet_since = mp_wtime();
    for (;;) {
        int now = atomic_load(&sent);
        if (now >= n_msgs)
            return;
        if (now != last) {
            last = now;
            quiet_since = mp_wtime();
        } else if (mp_wtime() - quiet_since > 0.005) {
            return;
        }
    }
}

static void lag_fiber(void *p)
{
    (void)p;
    static bool gated;
    if (!gated) {
        gated = true;
        lag_gate();
    }
    tst_busy(0.001);
    if (atomic_load(&arrivals) < n_msgs)
        CHECK_OK(mp_spawn(lag_fiber, NULL, 0, MP_SCHED_FIFO));
}

static void send_request(void);

static void reply(void *p)
{
    (void)p;
    atomic_fetch_add(&arrivals, 1);
    if (atomic_load(&served) < n_msgs)
        send_request();
}

static void serve(void *p)
{
    int lag = atomic_load(&long_done) - *(int *)p;
    if (lag > atomic_load(&max_lag))
        atomic_store(&max_lag, lag);
    atomic_fetch_add(&served, 1);
    CHECK_OK(mp_invoke(0, reply, NULL, 0, MP_SCHED_URGENT));
}

static void send_request(void)
{
    int at = atomic_load(&long_done);
    CHECK_OK(mp_invoke(1, serve, &at, sizeof at, MP_SCHED_URGENT));
}

/* lastwords: PE 0 has written its record (1), PE 2 has sent its request (2) */
static atomic_int lastwords_step, lastwords_delivered = -1;

/* Spins until *v is at least `value` (true) or for 5 s (false). */
static bool await_at_least(atomic_int *v, int value)
{
    double deadline = mp_wtime() + 5;
    while (atomic_load(v) < value)
        if (mp_wtime() >= deadline)
            return false;
    return true;
}

static void wait_step(int step) { CHECK(await_at_least(&lastwords_step, step)); }

static void lastwords_request(void *p)
{
    (void)p;
    atomic_store(&lastwords_delivered, await_at_least(&arrived_flag, 1));
}

static void lastwords_fiber(void *p)
{
    (void)p;
    CHECK_OK(mp_invoke(1, flag_arrive, NULL, 0, MP_SCHED_FIFO));
    atomic_store(&lastwords_step, 1);
    wait_step(2); /* the request is in PE 0's inbox, and PE 0 interrupted */
}

static unsigned char bounce_args[MP_FIBER_ARGS_MAX];

static void bounce(void *p)
{
    int hops = *(int *)p;
    atomic_fetch_add(&arrivals, 1);
    if (hops < 2 * n_msgs - 1) {
        int next = hops + 1;
        memcpy(bounce_args, &next, sizeof next);
        CHECK_OK(mp_invoke(1 - mp_mype(), bounce, bounce_args, (size_t)msg_size, MP_SCHED_FIFO));
    }
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    if (strcmp(scenario, "alltoall") == 0) {
        int start = 0;
        if (mp_npes() > 1)
            CHECK_OK(mp_spawn(alltoall_step, &start, sizeof start, MP_SCHED_FIFO));
        return;
    }
    if (strcmp(scenario, "order") == 0) {
        if (me != 0 && me != 2)
            return;
        static const int sizes[] = {12, 12, 200, 1000, 12, 600, 1024, 40, 12, 900};
        for (int i = 0; i < n_msgs; i++)
            send_one(i, sizes[(i * 7 + me) % 10]);
        return;
    }
    if (strncmp(scenario, "busy", 4) == 0 && me == 1) {
        CHECK_OK(mp_spawn(busy_chain, NULL, 0, MP_SCHED_FIFO));
        return;
    }
    if (strcmp(scenario, "lag") == 0 && me == 1) {
        CHECK_OK(mp_spawn(lag_fiber, NULL, 0, MP_SCHED_FIFO));
        return;
    }
    if (strcmp(scenario, "lastwords") == 0) {
        if (me == 0) {
            CHECK_OK(mp_spawn(lastwords_fiber, NULL, 0, MP_SCHED_FIFO));
        } else if (me == 2) {
            wait_step(1);
            CHECK_OK(mp_invoke(0, lastwords_request, NULL, 0, MP_SCHED_URGENT));
            mp_flush();
            atomic_store(&lastwords_step, 2);
        }
        return;
    }
    if (strcmp(scenario, "service") == 0 && me == 1) {
        CHECK_OK(mp_spawn(long_fiber, NULL, 0, MP_SCHED_FIFO));
        return;
    }
    if (me != 0)
        return;
    if (strcmp(scenario, "hungry") == 0) {
        hungry_deadline = mp_wtime() + 5;
        CHECK_OK(mp_invoke(1, flag_arrive, NULL, 0, MP_SCHED_FIFO));
        CHECK_OK(mp_spawn(hungry_chain, NULL, 0, MP_SCHED_FIFO));
    } else if (strcmp(scenario, "service") == 0) {
        send_request();
    } else if (strcmp(scenario, "pingpong") == 0) {
        int hops = 0;
        CHECK(msg_size >= (int)sizeof hops && msg_size <= MP_FIBER_ARGS_MAX);
        memcpy(bounce_args, &hops, sizeof hops);
        CHECK_OK(mp_invoke(1, bounce, bounce_args, (size_t)msg_size, MP_SCHED_FIFO));
    } else if (strcmp(scenario, "count") == 0) {
        for (int i = 0; i < n_msgs; i++)
            send_one(i, msg_size);
    } else {
        for (int i = 0; i < n_msgs; i++)
            CHECK_OK(mp_spawn(sender_fiber, &i, sizeof i, MP_SCHED_FIFO));
    }
}

int main(int argc, char **argv)
{
    scenario = tst_scenario(argc, argv, "count");
    n_msgs = argc > 2 ? atoi(argv[2]) : 1000;
    msg_size = argc > 3 ? atoi(argv[3]) : 32;
    bool three = strcmp(scenario, "order") == 0 || strcmp(scenario, "lastwords") == 0;
    int rc = tst_run(argc, argv, three ? 3 : 2, pe_main);
    if (rc)
        return rc;
    int pes = getenv("MPROF_PES") ? atoi(getenv("MPROF_PES")) : 2;
    if (strcmp(scenario, "hungry") == 0) {
        printf("chain=%d\n", hungry_chain_len);
        n_msgs = 1;
    }
    if (strcmp(scenario, "service") == 0)
        printf("max_lag=%d\n", atomic_load(&max_lag));
    if (strcmp(scenario, "lastwords") == 0) {
        printf("delivered=%d\n", atomic_load(&lastwords_delivered));
        n_msgs = 1;
    }
    int expect = strcmp(scenario, "alltoall") == 0 ? (pes > 1 ? pes * n_msgs : 0)
                 : strcmp(scenario, "order") == 0 || strcmp(scenario, "pingpong") == 0 ? 2 * n_msgs
                                                                                       : n_msgs;
    printf("arrivals=%d expected=%d\n", atomic_load(&arrivals), expect);
    CHECK_EQ(atomic_load(&arrivals), expect);
    return 0;
}
