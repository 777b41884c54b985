/*
 * eg_test.c -- event-graph semantics, driven by tests/lib/test_eventgraph.py.
 *
 *   eg_test SCENARIO [K] [CAPACITY] [fifo|preempt]   (P from MPROF_PES, profile to MPROF_OUT)
 *
 * Scenarios:
 *   fifo       2P nodes, node i -> i+1 and i -> i+3 (mod 2P), node i on PE i mod P: every
 *              node multicasts K elements; every in-edge must deliver its source's
 *              elements in order, never holding more than CAPACITY.
 *   collapse   node 0 on PE 0 multicasts K elements to 3 nodes on every PE (3P sinks).
 *   block      node 0 (PE 0) -> node 1 (PE P-1), CAPACITY small: the sender suspends and
 *              resumes; the sink's edge never holds more than CAPACITY.
 *   wake_empty / wake_any
 *              node 0 (PE 0) -> node 1 (PE P-1) <- node 2 (PE P-1).  After element A is on
 *              edge 0 the sink waits without removing it; B then arrives at the non-empty
 *              edge 0 (wakes only in ANY mode); C then arrives at the empty edge 1 (wakes in
 *              both).  Prints "waiting_after_B=<0|1>" from the sink's PE.
 *   freeze     ring of P nodes; each sends K elements, then all freeze: every in-edge must
 *              hold exactly K; a send while frozen suspends until unfreeze; then all K+1
 *              are received in order.
 * The last argument chooses the scheduler of the graph's fibers (eg_sched_mode, default fifo):
 * every scenario must give the same results under both.
 * Exit status 0 when every check passed; failures are printed as "FAIL ...".
 */
#include "eg_check.h"
#include "eventgraph.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXPE 64
#define ELT 24

typedef struct {
    uint32_t src;
    uint32_t pad;
    uint64_t seq;
    unsigned char fill[ELT - 16];
} elt_t;
_Static_assert(sizeof(elt_t) == ELT, "element layout");

static const char *scenario;
static uint64_t K = 200;
static uint32_t CAP = 4;
static eg_sched_mode SCHED = EG_SCHED_FIFO;

/* per-PE results, read by main() after mp_main returns */
static uint64_t sent_done[MAXPE], received[MAXPE], expected[MAXPE];
static int waiting_after_b = -1;
static uint64_t *next_arrays[MAXPE]; /* per-PE S.next, freed by main() */

typedef struct {
    eg_graph *g;
    uint64_t *next; /* next expected seq per edge */
    mp_counter_t all_sent;
    mp_counter_t bar;
    uint64_t bar_target;
    mp_obj_t bar_obj;
} pe_state;

static _Thread_local pe_state S;

static int part_fifo(uint32_t node, int npes, void *ctx)
{
    (void)ctx;
    return (int)(node % (uint32_t)npes);
}
static int part_collapse(uint32_t node, int npes, void *ctx)
{
    (void)ctx;
    return node == 0 ? 0 : (int)((node - 1) / 3) % npes;
}
static int part_pair(uint32_t node, int npes, void *ctx)
{
    (void)ctx;
    return node == 0 ? 0 : npes - 1;
}

static void make_elt(elt_t *e, uint32_t src, uint64_t seq)
{
    memset(e, 0, sizeof *e);
    e->src = src;
    e->seq = seq;
    memset(e->fill, (int)(seq & 0xff), sizeof e->fill);
}

static void check_elt(const elt_t *e, uint32_t edge)
{
    eg_edge_def d = eg_edge(S.g, edge);
    CHECK(e->src == d.src, "edge %u: element from node %u, expected %u", edge, e->src, d.src);
    CHECK(e->seq == S.next[edge], "edge %u: seq %llu, expected %llu (FIFO)", edge,
          (unsigned long long)e->seq, (unsigned long long)S.next[edge]);
    CHECK(e->fill[sizeof e->fill - 1] == (unsigned char)(e->seq & 0xff), "edge %u: payload", edge);
    S.next[edge] = e->seq + 1;
}

/* ------------------------------------------------------------------------------------ */
/* Generic sender and receiver threads                                                    */

typedef struct {
    uint32_t node;
    uint64_t i, n;
    mp_counter_t c;
} send_args;

static void sender(void *p)
{
    send_args *a = p;
    while (a->i < a->n) {
        elt_t e;
        make_elt(&e, a->node, a->i);
        mp_status st = eg_send(S.g, a->node, &e, a->c);
        CHECK(st != MP_FAIL, "send failed");
        a->i++;
        if (st == MP_WAIT) {
            mp_counter_wait(a->c, a->i, mp_continue(sender, MP_SCHED_FIFO));
            return;
        }
    }
    if (mp_counter_value(a->c) < a->n) {
        mp_counter_wait(a->c, a->n, mp_continue(sender, MP_SCHED_FIFO));
        return;
    }
    sent_done[mp_mype()] += a->n;
    mp_counter_add(S.all_sent, 1);
}

static void spawn_sender(uint32_t node, uint64_t from, uint64_t n)
{
    send_args a = {node, from, n, mp_counter_new(from)};
    mp_spawn(sender, &a, sizeof a, MP_SCHED_FIFO);
}

typedef struct {
    uint32_t node;
    uint64_t want; /* elements to receive over all in-edges */
    uint64_t got;
    mp_counter_t c;
} recv_args;

/* destroy: freeze (nothing in flight any more), then destroy the graph on every PE */
static int destroyed[MAXPE];

static void destroy_done(void *p)
{
    mp_obj_t id = *(mp_obj_t *)p;
    CHECK(eg_graph_local(id) == NULL, "graph still present after eg_graph_destroy");
    destroyed[mp_mype()] = 1;
}

static void destroy_frozen(void *p)
{
    (void)p;
    mp_counter_t c = mp_counter_new(0);
    mp_obj_t id = eg_graph_id(S.g);
    CHECK(eg_graph_destroy(S.g, c) == MP_WAIT, "eg_graph_destroy");
    mp_counter_wait(c, 1, mp_fiber_create(destroy_done, &id, sizeof id, MP_SCHED_FIFO));
    S.g = NULL;
}

static void destroy_start(void *p)
{
    (void)p;
    mp_counter_t c = mp_counter_new(0);
    CHECK(eg_graph_destroy(S.g, c) == MP_FAIL, "destroy before freeze must fail");
    CHECK(eg_freeze(S.g, c) == MP_WAIT, "eg_freeze");
    mp_counter_wait(c, 1, mp_fiber_create(destroy_frozen, NULL, 0, MP_SCHED_FIFO));
}

static void receiver(void *p)
{
    recv_args *a = p;
    uint32_t n;
    const uint32_t *in = eg_in_edges(S.g, a->node, &n);
    elt_t buf[8];
    for (uint32_t k = 0; k < n; k++) {
        /* (eg_count is a query and counts in NOp: only the block scenario asks) */
        if (!strcmp(scenario, "block"))
            CHECK(eg_count(S.g, in[k]) <= eg_capacity(S.g), "edge %u holds %zu > capacity", in[k],
                  eg_count(S.g, in[k]));
        size_t got;
        while ((got = eg_remove(S.g, in[k], buf, 8)) > 0) {
            for (size_t i = 0; i < got; i++)
                check_elt(&buf[i], in[k]);
            a->got += got;
            received[mp_mype()] += got;
        }
    }
    if (a->got >= a->want) {
        if (!strcmp(scenario, "destroy")) /* once this PE has sent its share too */
            mp_counter_wait(S.all_sent, 1, mp_fiber_create(destroy_start, NULL, 0, MP_SCHED_FIFO));
        return;
    }
    mp_status st = eg_wait(S.g, a->node, a->c);
    CHECK(st == MP_WAIT, "eg_wait returned %d", (int)st);
    mp_counter_wait(a->c, mp_counter_value(a->c) + 1, mp_continue(receiver, MP_SCHED_FIFO));
}

static void spawn_receiver(uint32_t node, uint64_t want)
{
    recv_args a = {node, want, 0, mp_counter_new(0)};
    expected[mp_mype()] += want;
    mp_spawn(receiver, &a, sizeof a, MP_SCHED_FIFO);
}

static void common_setup(const eg_config *cfg)
{
    memset(&S, 0, sizeof S);
    mp_err e = eg_graph_create(cfg, &S.g);
    if (e != MP_SUCCESS) {
        printf("FAIL eg_graph_create: %s\n", mp_strerror(e));
        exit(1);
    }
    S.next = calloc(cfg->nedges ? cfg->nedges : 1, sizeof *S.next);
    next_arrays[mp_mype()] = S.next;
    S.all_sent = mp_counter_new(0);
    S.bar = mp_counter_new(0);
    mp_obj_create(&S, &S.bar_obj);
}

/* spawn a sender for every local node with out-edges, a receiver for every local sink */
static void spawn_all(uint64_t per_node)
{
    for (uint32_t u = 0; u < eg_nnodes(S.g); u++) {
        if (eg_node_pe(S.g, u) != mp_mype())
            continue;
        uint32_t nin, nout;
        eg_in_edges(S.g, u, &nin);
        eg_out_edges(S.g, u, &nout);
        if (nout)
            spawn_sender(u, 0, per_node);
        if (nin)
            spawn_receiver(u, (uint64_t)nin * per_node);
    }
}

/* ------------------------------------------------------------------------------------ */
/* wake_empty / wake_any                                                                  */

/* Invocations carry a few bytes so that they are aggregated like the graph's own messages
 * and stay behind them (argument-less invocations may travel as small messages at once). */
static const char TAG[16] = "eg_test";

static void probe_after_b(void *p);
static void send_c(void *p);

static void woken(void *p)
{
    (void)p;
    uint32_t n;
    const uint32_t *in = eg_in_edges(S.g, 1, &n);
    printf("PE %d woken e0=%zu e1=%zu\n", mp_mype(), eg_count(S.g, in[0]), eg_count(S.g, in[1]));
    spawn_receiver(1, 3); /* drains A, B, C in order */
}

static void after_a(void *p)
{
    (void)p;
    uint32_t n;
    const uint32_t *in = eg_in_edges(S.g, 1, &n);
    CHECK(eg_count(S.g, in[0]) == 1, "A not on edge 0 (count %zu)", eg_count(S.g, in[0]));
    mp_counter_t c = mp_counter_new(0);
    CHECK(eg_wait(S.g, 1, c) == MP_WAIT, "eg_wait");
    CHECK(eg_wait(S.g, 1, c) == MP_FAIL, "second eg_wait on a node must fail");
    mp_counter_wait(c, 1, mp_fiber_create(woken, NULL, 0, MP_SCHED_FIFO));
    mp_invoke(0, send_c, TAG, sizeof TAG, MP_SCHED_FIFO); /* PE 0 sends B */
}

/* on PE 0: send B, then probe on the sink's PE (arrives after B) */
static void send_c(void *p)
{
    (void)p;
    elt_t e;
    make_elt(&e, 0, 1);
    CHECK(eg_send(S.g, 0, &e, NULL) == MP_OK, "send B");
    mp_invoke(mp_npes() - 1, probe_after_b, TAG, sizeof TAG, MP_SCHED_FIFO);
}

static void probe_after_b(void *p)
{
    (void)p;
    uint32_t n;
    const uint32_t *in = eg_in_edges(S.g, 1, &n);
    CHECK(eg_count(S.g, in[0]) == 2, "B not on edge 0");
    waiting_after_b = eg_is_waiting(S.g, 1);
    printf("PE %d waiting_after_B=%d\n", mp_mype(), waiting_after_b);
    elt_t e;
    make_elt(&e, 2, 0);
    CHECK(eg_send(S.g, 2, &e, NULL) == MP_OK, "send C"); /* local: arrives at empty edge 1 */
    CHECK(!eg_is_waiting(S.g, 1), "arrival at an empty edge must wake the sink");
}

static void send_a(void *p)
{
    (void)p;
    elt_t e;
    make_elt(&e, 0, 0);
    CHECK(eg_send(S.g, 0, &e, NULL) == MP_OK, "send A");
    mp_invoke(mp_npes() - 1, after_a, TAG, sizeof TAG, MP_SCHED_FIFO);
}

/* ------------------------------------------------------------------------------------ */
/* freeze                                                                                 */

static void after_unfreeze_bar(void *p);
static void frozen_checks(void *p);

static void freeze_start(void *p)
{
    (void)p;
    mp_counter_t c = mp_counter_new(0);
    CHECK(eg_freeze(S.g, c) == MP_WAIT, "eg_freeze");
    mp_counter_wait(c, 1, mp_fiber_create(frozen_checks, NULL, 0, MP_SCHED_FIFO));
}

static void frozen_checks(void *p)
{
    (void)p;
    int me = mp_mype();
    uint32_t node = (uint32_t)me, n;
    const uint32_t *in = eg_in_edges(S.g, node, &n);
    for (uint32_t k = 0; k < n; k++)
        CHECK(eg_count(S.g, in[k]) == K, "frozen: edge %u holds %zu, expected %llu", in[k],
              eg_count(S.g, in[k]), (unsigned long long)K);
    /* a send while frozen suspends */
    elt_t e;
    make_elt(&e, node, K);
    mp_counter_t c = mp_counter_new(0);
    mp_status st = eg_send(S.g, node, &e, c);
    CHECK(st == MP_WAIT, "send while frozen returned %d", (int)st);
    CHECK(eg_pending_sends(S.g, node) == 1, "pending sends while frozen");
    printf("PE %d frozen ok\n", me);
    /* every PE has checked before anyone unfreezes */
    S.bar_target++;
    mp_counter_wait(S.bar, S.bar_target,
                    mp_fiber_create(after_unfreeze_bar, NULL, 0, MP_SCHED_FIFO));
    mp_obj_barrier(S.bar_obj, S.bar);
}

static void after_unfreeze_bar(void *p)
{
    (void)p;
    eg_unfreeze(S.g);
    spawn_receiver((uint32_t)mp_mype(), K + 1);
}

static void freeze_sender_done(void *p)
{
    (void)p;
    freeze_start(NULL);
}

/* ------------------------------------------------------------------------------------ */

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int P = mp_npes(), me = mp_mype();
    eg_config cfg = {0};
    cfg.elt_size = ELT;
    cfg.capacity = CAP;
    cfg.sched = SCHED;
    eg_edge_def *edges = NULL;
    if (!strcmp(scenario, "fifo")) {
        uint32_t n = 2 * (uint32_t)P;
        edges = calloc(2 * n, sizeof *edges);
        for (uint32_t i = 0; i < n; i++) {
            edges[2 * i] = (eg_edge_def){i, (i + 1) % n};
            edges[2 * i + 1] = (eg_edge_def){i, (i + 3) % n};
        }
        cfg.nnodes = n;
        cfg.edges = edges;
        cfg.nedges = 2 * n;
        cfg.partition = part_fifo;
        common_setup(&cfg);
        spawn_all(K);
    } else if (!strcmp(scenario, "collapse")) {
        uint32_t n = 1 + 3 * (uint32_t)P;
        edges = calloc(n, sizeof *edges);
        for (uint32_t i = 1; i < n; i++)
            edges[i - 1] = (eg_edge_def){0, i};
        cfg.nnodes = n;
        cfg.edges = edges;
        cfg.nedges = n - 1;
        cfg.partition = part_collapse;
        common_setup(&cfg);
        spawn_all(K);
    } else if (!strcmp(scenario, "block")) {
        static const eg_edge_def e[] = {{0, 1}};
        cfg.nnodes = 2;
        cfg.edges = e;
        cfg.nedges = 1;
        cfg.partition = part_pair;
        common_setup(&cfg);
        spawn_all(K);
    } else if (!strcmp(scenario, "wake_empty") || !strcmp(scenario, "wake_any")) {
        static const eg_edge_def e[] = {{0, 1}, {2, 1}};
        cfg.nnodes = 3;
        cfg.edges = e;
        cfg.nedges = 2;
        cfg.partition = part_pair;
        cfg.wake = !strcmp(scenario, "wake_any") ? EG_WAKE_ANY : EG_WAKE_EMPTY;
        common_setup(&cfg);
        if (me == 0)
            mp_spawn(send_a, NULL, 0, MP_SCHED_FIFO);
    } else if (!strcmp(scenario, "freeze") || !strcmp(scenario, "destroy")) {
        uint32_t n = (uint32_t)P;
        edges = calloc(n, sizeof *edges);
        for (uint32_t i = 0; i < n; i++)
            edges[i] = (eg_edge_def){i, (i + 1) % n};
        cfg.nnodes = n;
        cfg.edges = edges;
        cfg.nedges = n;
        cfg.capacity = (uint32_t)K + 1;
        cfg.partition = part_fifo;
        common_setup(&cfg);
        spawn_sender((uint32_t)me, 0, K);
        if (!strcmp(scenario, "destroy"))
            spawn_receiver((uint32_t)me, K);
        else
            mp_counter_wait(S.all_sent, 1,
                            mp_fiber_create(freeze_sender_done, NULL, 0, MP_SCHED_FIFO));
    } else if (!strcmp(scenario, "misuse")) {
        /* each refusal is told on stderr ("eventgraph (PE n): ..."), not only returned; a
         * node count of 2^32 - 1 wrapped the offset arrays' size to 0 (SIGSEGV) */
        eg_edge_def bad_edge = {0, 5};
        eg_graph *g = NULL;
        eg_config c = cfg;
        c.nnodes = UINT32_MAX;
        printf("huge_nodes %d\n", eg_graph_create(&c, &g));
        c.nnodes = 2;
        c.nedges = 1;
        c.edges = &bad_edge;
        printf("bad_edge %d\n", eg_graph_create(&c, &g));
        c.edges = NULL;
        printf("null_edges %d\n", eg_graph_create(&c, &g));
        c.nedges = 0;
        c.elt_size = 0;
        printf("zero_elt %d\n", eg_graph_create(&c, &g));
        CHECK(g == NULL, "a refused create handed out a graph");
        /* another object's id is no graph (its partition was read as one) */
        mp_obj_t plain;
        static int part;
        CHECK(mp_obj_create(&part, &plain) == MP_SUCCESS, "mp_obj_create");
        printf("local_of_plain %s\n", eg_graph_local(plain) ? "graph" : "NULL");
    } else if (!strcmp(scenario, "null_graph")) {
        /* an accessor given the NULL an unchecked, refused create leaves (K: which one) */
        eg_graph *none = NULL;
        if (K == 0)
            eg_examine(none, 0, 0);
        else if (K == 1)
            eg_remove(none, 0, NULL, 1);
        else if (K == 2)
            eg_capacity(none);
        else
            eg_is_waiting(none, 0);
    } else if (!strcmp(scenario, "finalize_in_pe")) {
        if (me == 0)
            eg_finalize();
    } else if (!strcmp(scenario, "differs_elt") || !strcmp(scenario, "differs_edges") ||
               !strcmp(scenario, "differs_partition") || !strcmp(scenario, "not_a_graph")) {
        /* creation is collective with one configuration: PE 0 sends along 0 -> 1 (node 1 on
         * PE 1) into a graph that PE 1 created otherwise, or not at all */
        static const eg_edge_def two[] = {{0, 1}, {2, 1}}, one[] = {{2, 1}};
        cfg.nnodes = 3;
        cfg.edges = two;
        cfg.nedges = 2;
        cfg.partition = part_pair;
        if (!strcmp(scenario, "differs_elt") && me != 0)
            cfg.elt_size = ELT / 2;
        if (!strcmp(scenario, "differs_edges") && me != 0) {
            cfg.edges = one;
            cfg.nedges = 1;
        }
        if (!strcmp(scenario, "differs_partition") && me != 0)
            cfg.partition = part_fifo;
        if (!strcmp(scenario, "not_a_graph") && me != 0) {
            static int plain;
            mp_obj_t id;
            CHECK(mp_obj_create(&plain, &id) == MP_SUCCESS, "mp_obj_create");
            return;
        }
        common_setup(&cfg);
        if (me == 0) {
            elt_t e;
            make_elt(&e, 0, 0);
            CHECK(eg_send(S.g, 0, &e, NULL) != MP_FAIL, "send");
        }
    } else {
        fprintf(stderr, "eg_test: unknown scenario %s\n", scenario);
        exit(2);
    }
    free(edges);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: eg_test SCENARIO [K] [CAPACITY] [fifo|preempt]\n");
        return 2;
    }
    scenario = argv[1];
    if (argc > 2)
        K = strtoull(argv[2], NULL, 10);
    if (argc > 3)
        CAP = (uint32_t)strtoul(argv[3], NULL, 10);
    if (argc > 4)
        SCHED = !strcmp(argv[4], "preempt") ? EG_SCHED_PREEMPT : EG_SCHED_FIFO;
    mp_config cfg;
    mp_config_init(&cfg);
    if (cfg.npes > MAXPE)
        cfg.npes = MAXPE;
    int rc = mp_main(&cfg, pe_main, argc, argv);
    uint64_t s = 0, r = 0, x = 0;
    for (int i = 0; i < cfg.npes; i++) {
        s += sent_done[i];
        r += received[i];
        x += expected[i];
    }
    printf("sent=%llu received=%llu expected=%llu\n", (unsigned long long)s, (unsigned long long)r,
           (unsigned long long)x);
    if (r != x) {
        printf("FAIL received %llu of %llu\n", (unsigned long long)r, (unsigned long long)x);
        failures++;
    }
    for (int i = 0; !strcmp(scenario, "destroy") && i < cfg.npes; i++)
        if (!destroyed[i]) {
            printf("FAIL PE %d did not destroy its graph\n", i);
            failures++;
        }
    if (!strcmp(scenario, "wake_empty") && waiting_after_b != 1) {
        printf("FAIL EMPTY mode: arrival at a non-empty edge woke the sink\n");
        failures++;
    }
    if (!strcmp(scenario, "wake_any") && waiting_after_b != 0) {
        printf("FAIL ANY mode: arrival at a non-empty edge did not wake the sink\n");
        failures++;
    }
    eg_finalize();
    for (int i = 0; i < MAXPE; i++)
        free(next_arrays[i]);
    if (rc != 0)
        printf("FAIL mp_main returned %d\n", rc);
    return rc != 0 ? rc : failures ? 1 : 0;
}
