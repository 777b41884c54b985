/*
 * eg_sched.c -- the event graph's scheduling option (eg_sched_mode) changes when its fibers
 * run, and nothing else; driven by tests/lib/test_eventgraph.py.
 *
 *   eg_sched SCENARIO fifo|preempt     (P from MPROF_PES or mpirun, profile to MPROF_OUT)
 *
 * Scenarios:
 *   local   node 0 -> node 1, both on PE 0, capacity 1, all in one fiber.  (a) The sink waits,
 *           then node 0 sends: inline_wake=1 if the wait's counter moved before eg_send
 *           returned (the DEQ fiber ran inside the send), 0 if the wake-up was queued.
 *           (b) Node 0 sends again; the edge is full, so the send suspends; the sink removes
 *           the first element: inline_ship=1 if the suspended send was shipped before
 *           eg_remove returned (the ENQ fiber ran inside it), 0 if it is still pending.  A
 *           later fiber checks that both elements arrived in order either way.
 *   remote  (P >= 2) node 0 on PE 0 -> node 1 on PE P-1.  The sink waits and keeps a chain of
 *           FIFO "compute" fibers running while PE 0 sends one element.  Each link looks
 *           whether the element is on the edge while the wait has not been woken yet.  With
 *           FIFO scheduling the arrival fiber is queued behind the compute fiber and enables
 *           the wake-up fiber behind the next one, so some link sees the element without the
 *           wake-up (split_links >= 1); with preemptive scheduling both run inside the poll
 *           that received the message, between two links, so none does (split_links=0).
 * Exit status 0 when every check passed; failures are printed as "FAIL ...".
 */
#include "eg_check.h"
#include "eventgraph.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *scenario;
static eg_sched_mode mode;
static _Atomic int started, finished; /* this process ran the scenario / its last check */

typedef struct {
    uint64_t seq;
    unsigned char fill[24];
} elt_t;

static _Thread_local struct {
    eg_graph *g;
    uint32_t edge; /* the one edge, 0 -> 1 */
    mp_counter_t woken, sent;
} S;

static elt_t make_elt(uint64_t seq)
{
    elt_t e;
    memset(&e, (int)seq + 1, sizeof e);
    e.seq = seq;
    return e;
}

static int part_local(uint32_t node, int npes, void *ctx)
{
    (void)node, (void)npes, (void)ctx;
    return 0;
}

static int part_remote(uint32_t node, int npes, void *ctx)
{
    (void)ctx;
    return node == 0 ? 0 : npes - 1;
}

/* ------------------------------------------------------------------------------------ */
/* local                                                                                  */

static void local_end(void *p)
{
    (void)p;
    /* by now every queued fiber of the graph has run, in either mode */
    CHECK(mp_counter_value(S.woken) == 1, "the wait was not woken");
    CHECK(mp_counter_value(S.sent) == 1, "the suspended send did not complete");
    CHECK(eg_pending_sends(S.g, 0) == 0, "a send is still pending");
    CHECK(eg_count(S.g, S.edge) == 1, "edge holds %zu, expected 1", eg_count(S.g, S.edge));
    elt_t e;
    CHECK(eg_remove(S.g, S.edge, &e, 1) == 1 && e.seq == 1 && e.fill[23] == 2,
          "second element wrong");
    atomic_store(&finished, 1);
}

static void local_run(void *p)
{
    (void)p;
    elt_t e = make_elt(0);
    CHECK(eg_wait(S.g, 1, S.woken) == MP_WAIT, "eg_wait");
    CHECK(eg_send(S.g, 0, &e, NULL) == MP_OK, "first send");
    int inline_wake = mp_counter_value(S.woken) == 1;

    e = make_elt(1);
    CHECK(eg_send(S.g, 0, &e, S.sent) == MP_WAIT, "second send must suspend (capacity 1)");
    CHECK(eg_pending_sends(S.g, 0) == 1, "pending sends");
    elt_t got;
    CHECK(eg_remove(S.g, S.edge, &got, 1) == 1 && got.seq == 0, "first element wrong");
    int inline_ship = eg_pending_sends(S.g, 0) == 0;
    CHECK(inline_ship == (eg_count(S.g, S.edge) == 1) &&
              inline_ship == (mp_counter_value(S.sent) == 1),
          "pending sends, edge and counter disagree");
    printf("inline_wake=%d inline_ship=%d\n", inline_wake, inline_ship);
    mp_spawn(local_end, NULL, 0, MP_SCHED_FIFO);
}

/* ------------------------------------------------------------------------------------ */
/* remote                                                                                 */

typedef struct {
    double t0;
    uint64_t links, split;
} spin_args;

/* Invocations carry a few bytes so that they are aggregated like the graph's own messages. */
static const char TAG[16] = "eg_sched";

static void send_one(void *p)
{
    (void)p;
    elt_t e = make_elt(7);
    CHECK(eg_send(S.g, 0, &e, NULL) == MP_OK, "send");
}

static void spin(void *p)
{
    spin_args *a = p;
    a->links++;
    int here = eg_count(S.g, S.edge) > 0;
    int woke = mp_counter_value(S.woken) > 0;
    a->split += here && !woke;
    if (woke) {
        CHECK(here, "woken before the element arrived");
        elt_t e;
        CHECK(eg_remove(S.g, S.edge, &e, 1) == 1 && e.seq == 7 && e.fill[23] == 8, "element wrong");
        printf("split_links=%llu links=%llu\n", (unsigned long long)a->split,
               (unsigned long long)a->links);
        atomic_store(&finished, 1);
        return;
    }
    if (mp_wtime() - a->t0 > 20) {
        CHECK(0, "no arrival after 20 s");
        return;
    }
    mp_fiber_enable(mp_continue(spin, MP_SCHED_FIFO));
}

static void remote_sink(void *p)
{
    (void)p;
    CHECK(eg_wait(S.g, 1, S.woken) == MP_WAIT, "eg_wait");
    mp_invoke(0, send_one, TAG, sizeof TAG, MP_SCHED_FIFO);
    spin_args a = {mp_wtime(), 0, 0};
    mp_spawn(spin, &a, sizeof a, MP_SCHED_FIFO);
}

/* ------------------------------------------------------------------------------------ */

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    static const eg_edge_def edges[] = {{0, 1}};
    bool local = !strcmp(scenario, "local");
    eg_config cfg = {0};
    cfg.nnodes = 2;
    cfg.edges = edges;
    cfg.nedges = 1;
    cfg.elt_size = sizeof(elt_t);
    cfg.capacity = 1;
    cfg.partition = local ? part_local : part_remote;
    cfg.sched = mode;
    memset(&S, 0, sizeof S);
    mp_err err = eg_graph_create(&cfg, &S.g);
    if (err != MP_SUCCESS) {
        printf("FAIL eg_graph_create: %s\n", mp_strerror(err));
        exit(1);
    }
    CHECK(eg_sched(S.g) == mode, "eg_sched");
    S.woken = mp_counter_new(0);
    S.sent = mp_counter_new(0);
    int me = mp_mype();
    if (local && me == 0) {
        atomic_store(&started, 1);
        mp_spawn(local_run, NULL, 0, MP_SCHED_FIFO);
    } else if (!local && me == mp_npes() - 1) {
        atomic_store(&started, 1);
        mp_spawn(remote_sink, NULL, 0, MP_SCHED_FIFO);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "local") && strcmp(argv[1], "remote")) ||
        (strcmp(argv[2], "fifo") && strcmp(argv[2], "preempt"))) {
        fprintf(stderr, "usage: eg_sched local|remote fifo|preempt\n");
        return 2;
    }
    scenario = argv[1];
    mode = !strcmp(argv[2], "preempt") ? EG_SCHED_PREEMPT : EG_SCHED_FIFO;
    mp_config cfg;
    mp_config_init(&cfg);
    if (!strcmp(scenario, "remote") && cfg.npes < 2) {
        fprintf(stderr, "eg_sched: the remote scenario needs 2 or more PEs\n");
        return 2;
    }
    int rc = mp_main(&cfg, pe_main, argc, argv);
    eg_finalize();
    if (atomic_load(&started) && !atomic_load(&finished)) {
        printf("FAIL the scenario did not finish\n");
        failures++;
    }
    if (rc != 0)
        printf("FAIL mp_main returned %d\n", rc);
    return rc != 0 ? rc : failures ? 1 : 0;
}
