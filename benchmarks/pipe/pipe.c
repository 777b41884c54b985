/*
 * pipe.c -- the PIPE benchmark (Wen 1995, section 4.3, Figs 4.3, 4.4, 4.17; section 4.5.4).
 *
 *   pipe [--variant=plain|swp|flush] PES M N T F ELTSIZE AGG
 *   pipe --calibrate
 *
 * An event graph forms a path of P = PES nodes, node i on PE i.  The root (node 0) fills
 * the pipeline: it computes T*N units and then produces N items, until M items are produced.
 * Every other node repeats: remove N items, compute T*N units, produce N items (the last node
 * has no out-edge and produces nothing).  The run stops when M items have left the pipeline.
 * F is the capacity of every edge (items), ELTSIZE the bytes per item, AGG the runtime's
 * aggregation threshold (mp_config.agg_bytes).  The last batch is smaller when N does not
 * divide M.
 *
 * Variants:  plain  Fig 4.4: consume waits for its produce before the next iteration;
 *            swp    Fig 4.17 (software pipelining): compute the next batch while the previous
 *                   produce is still running, wait for it just before issuing the next one;
 *            flush  section 4.5.4.3: plain plus mp_flush() right before each computation.
 *
 * One unit of computation is a dependent chain of PIPE_UNIT_STEPS multiply-xorshift steps on
 * a 64-bit integer whose result is stored to a volatile (so the compiler can neither remove
 * nor shorten it); `pipe --calibrate` prints its cost (about 25-40 ns on current x86 cores,
 * so T = 100 is a few microseconds per item).  Never a sleep.
 *
 * Instrumentation: module "pipe" (pipe.perf: P, T, N, M; accesses consume and produce) and
 * the event graph's module "graph".  The run profile goes to MPROF_OUT.
 */
#include "eventgraph.h"
#include "pipe_perf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIPE_UNIT_STEPS 8

enum { V_PLAIN = 0, V_SWP = 1, V_FLUSH = 2 };
static const char *const variant_names[] = {"plain", "swp", "flush"};

static struct {
    int pes;
    uint64_t M, N, T;
    uint32_t F;
    size_t elt;
    size_t agg;
    int variant;
} prm;

static _Thread_local volatile uint64_t work_sink; /* per PE: PEs are threads */
static _Atomic int failed_any;
static void **pe_buffers; /* 2 per PE, freed by main() after the run */

static inline uint64_t unit(uint64_t x)
{
    for (int i = 0; i < PIPE_UNIT_STEPS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        x ^= x >> 29;
    }
    return x;
}

static void compute(uint64_t units)
{
    uint64_t x = work_sink | 1;
    for (uint64_t u = 0; u < units; u++)
        x = unit(x);
    work_sink = x;
}

/* ------------------------------------------------------------------------------------ */

typedef struct {
    eg_graph *g;
    pipe_stats_t *st;
    uint32_t node;
    uint32_t in_edge;
    bool has_in, has_out;
    unsigned char *buf; /* N items */
    unsigned char *item;
    uint64_t next_in; /* index of the next item expected on the in-edge */
    uint64_t units;   /* units of computation performed */
    uint64_t items;   /* items processed */
} pe_state;

static _Thread_local pe_state S;

static void put_index(unsigned char *item, uint64_t idx)
{
    memcpy(item, &idx, prm.elt < sizeof idx ? prm.elt : sizeof idx);
}

static uint64_t get_index(const unsigned char *item)
{
    uint64_t idx = 0;
    memcpy(&idx, item, prm.elt < sizeof idx ? prm.elt : sizeof idx);
    return idx;
}

/* produce: enqueue `count` items starting at index `start`, one split-phase send each */
typedef struct {
    uint64_t start, count, i;
    mp_counter_t sent;
    mp_counter_t done;
} produce_args;

static void produce(void *p)
{
    PIPE_ACCESS(produce);
    produce_args *a = p;
    while (a->i < a->count) {
        put_index(S.item, a->start + a->i);
        mp_status st = eg_send(S.g, S.node, S.item, a->sent);
        a->i++;
        if (st == MP_FAIL) {
            fprintf(stderr, "pipe: PE %d: eg_send failed\n", mp_mype());
            atomic_store(&failed_any, 1);
            return;
        }
        if (st == MP_WAIT) {
            mp_counter_wait(a->sent, a->i, mp_continue(produce, MP_SCHED_FIFO));
            return;
        }
    }
    mp_counter_free(a->sent);
    mp_counter_add(a->done, 1);
}

static void issue_produce(uint64_t start, uint64_t count, mp_counter_t done)
{
    produce_args a = {start, count, 0, mp_counter_new(0), done};
    mp_spawn(produce, &a, sizeof a, MP_SCHED_FIFO);
}

/* consume: the thread of every node (the root's has no input) */
enum { PH_RECV = 0, PH_PRODUCE = 1 };
typedef struct {
    uint64_t processed; /* items of completed iterations */
    uint64_t batch, got;
    int phase;
    mp_counter_t arrived;  /* eg_wait */
    mp_counter_t produced; /* produce operations completed */
    uint64_t issued;       /* produce operations issued */
} consume_args;

static void consume(void *p)
{
    PIPE_ACCESS(consume);
    consume_args *a = p;
    for (;;) {
        if (a->phase == PH_RECV) {
            if (a->processed >= prm.M) {
                /* once, not per batch: T is a quotient (a division per batch cost about as
                 * much as the event graph's per-item statistics) */
                PIPE_SET(S.st, M, S.items);
                PIPE_SET(S.st, T, S.items ? S.units / S.items : 0);
                return; /* (swp: the last produce finishes on its own) */
            }
            a->batch = prm.M - a->processed < prm.N ? prm.M - a->processed : prm.N;
            while (S.has_in && a->got < a->batch) {
                size_t k = eg_remove(S.g, S.in_edge, S.buf, a->batch - a->got);
                for (size_t i = 0; i < k; i++) {
                    uint64_t idx = get_index(S.buf + i * prm.elt);
                    if (prm.elt >= sizeof idx && idx != S.next_in &&
                        !atomic_exchange(&failed_any, 1)) {
                        fprintf(stderr, "pipe: PE %d: item %llu arrived, expected %llu\n",
                                mp_mype(), (unsigned long long)idx, (unsigned long long)S.next_in);
                    }
                    S.next_in++;
                }
                a->got += k;
                if (k == 0) {
                    if (eg_wait(S.g, S.node, a->arrived) != MP_WAIT) {
                        fprintf(stderr, "pipe: PE %d: eg_wait failed\n", mp_mype());
                        atomic_store(&failed_any, 1);
                        return;
                    }
                    mp_counter_wait(a->arrived, mp_counter_value(a->arrived) + 1,
                                    mp_continue(consume, MP_SCHED_FIFO));
                    return;
                }
            }
            if (prm.variant == V_FLUSH)
                mp_flush();
            compute(prm.T * a->batch);
            S.units += prm.T * a->batch;
            a->phase = PH_PRODUCE;
        }
        /* PH_PRODUCE */
        if (S.has_out) {
            if (mp_counter_value(a->produced) < a->issued) { /* swp: previous produce */
                mp_counter_wait(a->produced, a->issued, mp_continue(consume, MP_SCHED_FIFO));
                return;
            }
            issue_produce(a->processed, a->batch, a->produced);
            a->issued++;
        }
        a->processed += a->batch;
        a->got = 0;
        a->phase = PH_RECV;
        S.items += a->batch;
        if (S.has_out && prm.variant != V_SWP) { /* wait for produce to complete */
            mp_counter_wait(a->produced, a->issued, mp_continue(consume, MP_SCHED_FIFO));
            return;
        }
    }
}

static int partition(uint32_t node, int npes, void *ctx)
{
    (void)ctx;
    return (int)node % npes;
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int P = mp_npes(), me = mp_mype();
    memset(&S, 0, sizeof S);
    eg_edge_def *edges = calloc((size_t)P, sizeof *edges);
    for (int i = 0; i + 1 < P; i++)
        edges[i] = (eg_edge_def){(uint32_t)i, (uint32_t)i + 1};
    eg_config cfg = {.nnodes = (uint32_t)P,
                     .edges = edges,
                     .nedges = (uint32_t)P - 1,
                     .elt_size = prm.elt,
                     .capacity = prm.F,
                     .partition = partition,
                     .wake = EG_WAKE_EMPTY};
    mp_err e = eg_graph_create(&cfg, &S.g);
    free(edges);
    if (e != MP_SUCCESS) {
        fprintf(stderr, "pipe: cannot create the event graph: %s\n", mp_strerror(e));
        exit(1);
    }
    mp_obj_t id;
    mp_obj_create(&S, &id);
    S.st = pipe_stats_create(id);
    PIPE_SET(S.st, P, 1);
    PIPE_SET(S.st, N, prm.N);
    S.node = (uint32_t)me;
    uint32_t n;
    const uint32_t *in = eg_in_edges(S.g, S.node, &n);
    S.has_in = n > 0;
    S.in_edge = n ? in[0] : 0;
    eg_out_edges(S.g, S.node, &n);
    S.has_out = n > 0;
    S.buf = malloc(prm.N * prm.elt);
    S.item = calloc(1, prm.elt);
    if (!S.buf || !S.item) {
        fprintf(stderr, "pipe: out of memory\n");
        exit(1);
    }
    pe_buffers[2 * me] = S.buf;
    pe_buffers[2 * me + 1] = S.item;
    if (me == 0) {
        mp_param("M", (double)prm.M);
        mp_param("N", (double)prm.N);
        mp_param("T", (double)prm.T);
        mp_param("F", (double)prm.F);
        mp_param("EltSize", (double)prm.elt);
        mp_param("Agg", (double)prm.agg);
        mp_param("variant", (double)prm.variant);
    }
    consume_args a = {0};
    a.arrived = mp_counter_new(0);
    a.produced = mp_counter_new(0);
    mp_spawn(consume, &a, sizeof a, MP_SCHED_FIFO);
}

/* Seconds per unit of computation. */
static double calibrate(void)
{
    uint64_t units = 1000;
    double dt = 0;
    for (;;) {
        double t0 = mp_wtime();
        compute(units);
        dt = mp_wtime() - t0;
        if (dt > 0.05)
            break;
        units *= 4;
    }
    return dt / (double)units;
}

static int usage(void)
{
    fprintf(stderr, "usage: pipe [--variant=plain|swp|flush] PES M N T F ELTSIZE AGG\n"
                    "       pipe --calibrate\n");
    return 2;
}

static int parse_u64(const char *s, uint64_t min, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v < min || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *pos[7];
    int npos = 0;
    prm.variant = V_PLAIN;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--calibrate")) {
            double s = calibrate();
            printf("pipe: one unit = %d multiply-xorshift steps = %.1f ns; T=100: %.2f us/item\n",
                   PIPE_UNIT_STEPS, s * 1e9, s * 1e8);
            return 0;
        }
        if (!strncmp(argv[i], "--variant=", 10)) {
            const char *v = argv[i] + 10;
            prm.variant = -1;
            for (int k = 0; k < 3; k++)
                if (!strcmp(v, variant_names[k]))
                    prm.variant = k;
            if (prm.variant < 0) {
                fprintf(stderr, "pipe: unknown variant '%s' (plain, swp, flush)\n", v);
                return 2;
            }
            continue;
        }
        if (npos == 7)
            return usage();
        pos[npos++] = argv[i];
    }
    if (npos != 7)
        return usage();
    uint64_t v[7];
    static const uint64_t mins[7] = {1, 1, 1, 0, 1, 1, 0};
    static const char *const names[7] = {"PES", "M", "N", "T", "F", "ELTSIZE", "AGG"};
    for (int i = 0; i < 7; i++)
        if (parse_u64(pos[i], mins[i], &v[i]) != 0) {
            fprintf(stderr, "pipe: %s must be an integer >= %llu (got '%s')\n", names[i],
                    (unsigned long long)mins[i], pos[i]);
            return 2;
        }
    if (v[5] > EG_ELT_MAX) {
        fprintf(stderr, "pipe: ELTSIZE must be at most %zu\n", (size_t)EG_ELT_MAX);
        return 2;
    }
    prm.pes = (int)v[0];
    prm.M = v[1];
    prm.N = v[2];
    prm.T = v[3];
    prm.F = (uint32_t)v[4];
    prm.elt = (size_t)v[5];
    prm.agg = (size_t)v[6];

    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = prm.pes;
    cfg.agg_bytes = prm.agg;
    pipe_perf_init();
    pe_buffers = calloc(2 * (size_t)prm.pes, sizeof *pe_buffers);
    if (!pe_buffers)
        return 1;
    double t0 = mp_wtime();
    int rc = mp_main(&cfg, pe_main, argc, argv);
    double dt = mp_wtime() - t0;
    eg_finalize();
    for (int i = 0; i < 2 * prm.pes; i++)
        free(pe_buffers[i]);
    free(pe_buffers);
    printf("pipe[%s] P=%d M=%llu N=%llu T=%llu F=%u eltsize=%zu agg=%zu: %.6f s\n",
           variant_names[prm.variant], prm.pes, (unsigned long long)prm.M,
           (unsigned long long)prm.N, (unsigned long long)prm.T, prm.F, prm.elt, prm.agg, dt);
    if (atomic_load(&failed_any))
        return 1;
    return rc;
}
