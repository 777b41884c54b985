/*
 * em3d.c -- EM3D: electromagnetic wave propagation on a random bipartite graph
 * (Wen 1995, section 2.2.1.3, Fig 2.1; the study of section 5.1.1).
 *
 *   em3d [--nodes=N] [--degree=D] [--remote=PCT] [--span=S] [--iters=I] [--seed=X] [--check]
 *
 * The electric field is evaluated on the faces of a primary grid (E nodes) and the magnetic
 * field on the faces of its dual grid (H nodes); each value changes by a linear combination
 * of the other kind's neighbours, so the nodes form a bipartite graph (E red, H black).
 * Every PE owns N nodes (alternately E and H); node (p, i) has D edges into it, from nodes of
 * the other kind.  An edge is remote with probability PCT % and then comes from a PE at most
 * S away in a linear array of PEs (no wrap-around); otherwise it comes from p itself.  One
 * iteration is the paper's pair of bulk-synchronous phases:
 *
 *     update the E nodes   e = e/2 + sum_k w_k h_k + s_e   (bg_update, reading H replicas)
 *     validate E           every ghost of an E node gets its owner's value (bg_validate,
 *                          one packed message per PE pair, ends with a barrier)
 *     update the H nodes   h = h/2 + sum_k w_k e_k + s_h
 *     validate H
 *
 * This is a damped, driven form of EM3D's update (a fixed source s per node, weights in
 * (-1/(2D), 1/(2D)), initial values and sources in [-1, 1) and [-1/2, 1/2)): every value
 * stays in [-1, 1] however many iterations run, where the undamped update would overflow or
 * die out.  The cost per edge is the same multiply-add.  Every choice of the generator is a
 * hash of (seed, PE, node, edge), so the graph is the same whatever runs it;
 * tests/apps/apps.py replays it to predict the statistics.
 *
 * --check: computes the same iterations sequentially on plain arrays (no runtime, no
 * bipartite graph) and compares every node's value; the verdict is agreed by all PEs and
 * the exit status is 1 when any value differs.  With --check and no other option a small
 * built-in case runs (N=200 D=8 PCT=20 S=2 I=10).  PEs: MPROF_PES (default 2), or the MPI
 * rank count under mpirun.  The run profile goes to MPROF_OUT.
 *
 * Paper settings (section 5.1.1): --nodes=1000 --degree=20 --remote=10 (and 0, 20) --span=3
 * --iters=100, which are the defaults except for --remote.
 */
#include "bench_util.h"
#include "bipartite.h"
#include "em3d_perf.h"

#include <math.h>
#include <stdatomic.h>

static struct {
    uint64_t nodes, degree, span, iters, seed;
    double remote;      /* percent */
    uint64_t remote_bp; /* basis points: an edge is remote when hash % 10000 < remote_bp */
    bool check, fault;
    int npes;
} prm = {1000, 20, 3, 100, 1, 10.0, 1000, false, false, 0};

static _Atomic int failed;
static double *reference; /* --check: every node's final value, index p * N + i */

/* ------------------------------------------------------------------------------------ */
/* The input generator: pure functions of (seed, p, i, e)                                 */

typedef struct {
    int pe;         /* source node's PE */
    uint32_t index; /* its index there */
    double w;       /* weight */
} edge_def;

/* Nodes of PE p: index i has kind i % 2 (0 = E, 1 = H); count of kind k among N nodes. */
static uint64_t kind_count(int kind) { return (prm.nodes + 1 - (uint64_t)kind) / 2; }

static double initial_value(int p, uint64_t i)
{
    return 2.0 * bu_unit(bu_hash3(prm.seed, (uint64_t)p, i, 0xfffff)) - 1.0;
}

static double source(int p, uint64_t i)
{
    return bu_unit(bu_hash3(prm.seed, (uint64_t)p, i, 0xffffe)) - 0.5;
}

static edge_def make_edge(int p, uint64_t i, uint64_t e, int npes)
{
    uint64_t h = bu_hash3(prm.seed, (uint64_t)p, i, e);
    edge_def d = {p, 0, 0};
    if (npes > 1 && h % 10000 < prm.remote_bp) {
        /* a PE at distance 1..span in the linear array */
        int cand[2 * 64], n = 0;
        for (int dist = 1; dist <= (int)prm.span && n < 128; dist++) {
            if (p - dist >= 0)
                cand[n++] = p - dist;
            if (p + dist < npes)
                cand[n++] = p + dist;
        }
        d.pe = cand[(h >> 16) % (uint64_t)n];
    }
    int other = 1 - (int)(i % 2);
    d.index = (uint32_t)(2 * ((h >> 32) % kind_count(other)) + (uint64_t)other);
    d.w = (bu_unit(bu_mix64(h ^ 0x5bd1e995ull)) - 0.5) / (double)prm.degree;
    return d;
}

/* ------------------------------------------------------------------------------------ */
/* The sequential reference (--check)                                                     */

static void compute_reference(int npes)
{
    uint64_t n = prm.nodes, d = prm.degree, total = (uint64_t)npes * n;
    double *val = malloc(total * sizeof *val);
    uint64_t *src = malloc(total * d * sizeof *src);
    double *w = malloc(total * d * sizeof *w);
    double *s = malloc(total * sizeof *s);
    if (!val || !src || !w || !s) {
        fprintf(stderr, "em3d: out of memory for the reference\n");
        exit(1);
    }
    for (int p = 0; p < npes; p++)
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = (uint64_t)p * n + i;
            val[v] = initial_value(p, i);
            s[v] = source(p, i);
            for (uint64_t e = 0; e < d; e++) {
                edge_def ed = make_edge(p, i, e, npes);
                src[v * d + e] = (uint64_t)ed.pe * n + ed.index;
                w[v * d + e] = ed.w;
            }
        }
    for (uint64_t it = 0; it < prm.iters; it++)
        for (uint64_t kind = 0; kind < 2; kind++)
            for (uint64_t v = 0; v < total; v++) {
                if (v % n % 2 != kind)
                    continue;
                double acc = 0.5 * val[v];
                for (uint64_t e = 0; e < d; e++)
                    acc += w[v * d + e] * val[src[v * d + e]];
                val[v] = acc + s[v];
            }
    free(src);
    free(w);
    free(s);
    reference = val;
}

/* ------------------------------------------------------------------------------------ */
/* The parallel program                                                                   */

typedef struct {
    double v; /* the field value: validated, read by the neighbours */
} field;      /* a node's state */

typedef struct {
    bg_t g;
    int me;
    double *source; /* s of each local node */
    em3d_stats_t *st;
    mp_obj_t obj;
    mp_counter_t c;
    uint64_t waited;
} pe_state;

static _Thread_local pe_state S;

/* Waits (from pe_main) for the split-phase operation just issued. */
static void await(mp_status s, const char *what) { bu_await(S.c, &S.waited, s, what); }

/* The kernel: called by bg_update for every local node of one kind. */
static void update(bg_t g, bg_node *node, void *ctx)
{
    (void)g;
    (void)ctx;
    field *f = node->state;
    double acc = 0.5 * f->v;
    /* weights and source pointers only: the sources' ids stay out of the stream */
    for (size_t e = 0; e < node->nedges; e++)
        acc += node->edges[e].weight * ((const field *)node->edges[e].src_state)->v;
    f->v = acc + S.source[BG_INDEX(node->id)];
    EM3D_INC(S.st, NodeUpdate, 1);
    EM3D_INC(S.st, EdgeRead, node->nedges);
    EM3D_INC(S.st, RemoteRead, node->nremote);
}

static void build(int me, int npes)
{
    if (bg_create(sizeof(field), &S.g) != MP_SUCCESS) {
        fprintf(stderr, "em3d: cannot create the bipartite graph\n");
        exit(1);
    }
    /* every node and edge of this PE known in advance: the graph's arrays are made once */
    if (bg_reserve(S.g, prm.nodes, prm.nodes * prm.degree) != MP_SUCCESS) {
        fprintf(stderr, "em3d: cannot make room for %llu nodes and their edges\n",
                (unsigned long long)prm.nodes);
        exit(1);
    }
    S.source = malloc(prm.nodes * sizeof *S.source);
    if (!S.source) {
        fprintf(stderr, "em3d: out of memory\n");
        exit(1);
    }
    for (uint64_t i = 0; i < prm.nodes; i++) {
        field f = {initial_value(me, i)};
        S.source[i] = source(me, i);
        bg_add_node(S.g, i % 2 == 0 ? BG_RED : BG_BLACK, &f);
    }
    for (uint64_t i = 0; i < prm.nodes; i++)
        for (uint64_t e = 0; e < prm.degree; e++) {
            edge_def d = make_edge(me, i, e, npes);
            if (bg_add_edge(S.g, BG_ID(me, i), BG_ID(d.pe, d.index), d.w) != MP_SUCCESS) {
                fprintf(stderr, "em3d: bad edge\n");
                exit(1);
            }
        }
    await(bg_finalize(S.g, S.c), "bg_finalize");
}

/* --check: compares this PE's values with the reference; returns how many differ. */
static uint64_t compare(int me, double *max_diff)
{
    uint64_t wrong = 0;
    *max_diff = 0;
    for (uint64_t i = 0; i < prm.nodes; i++) {
        double got = ((field *)bg_state(S.g, BG_ID(me, i)))->v;
        if (prm.fault && i == 0 && me == mp_npes() - 1)
            got += 1; /* test hook: the check must fail */
        double want = reference[(uint64_t)me * prm.nodes + i];
        double diff = fabs(got - want);
        if (diff > *max_diff)
            *max_diff = diff;
        if (!(diff <= 1e-12 * (1.0 + fabs(want)))) {
            if (wrong < 3)
                fprintf(stderr, "em3d: PE %d node %llu: %.17g, sequential %.17g\n", me,
                        (unsigned long long)i, got, want);
            wrong++;
        }
    }
    return wrong;
}

static double reduce(mp_reduce_op op, double x)
{
    double out = 0;
    await(mp_obj_reduce(S.obj, op, x, &out, S.c), "reduction");
    return out;
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int me = mp_mype(), npes = mp_npes();
    memset(&S, 0, sizeof S);
    S.me = me;
    S.c = mp_counter_new(0);
    mp_obj_create(&S, &S.obj);
    S.st = em3d_stats_create(S.obj);
    EM3D_SET(S.st, P, 1);
    build(me, npes);

    /* Fig 2.1: the bulk-synchronous phases (construction and preprocessing excluded) */
    await(mp_obj_barrier(S.obj, S.c), "barrier");
    double t0 = mp_wtime();
    for (uint64_t it = 0; it < prm.iters; it++) {
        await(bg_update(S.g, BG_RED, update, NULL, S.c), "bg_update(E)");
        await(bg_validate(S.g, BG_RED, S.c), "bg_validate(E)");
        await(bg_update(S.g, BG_BLACK, update, NULL, S.c), "bg_update(H)");
        await(bg_validate(S.g, BG_BLACK, S.c), "bg_validate(H)");
        EM3D_INC(S.st, Iter, 1);
    }
    double dt = mp_wtime() - t0;
    EM3D_SET(S.st, IterNs, (uint64_t)(dt * 1e9));

    double sum = 0;
    for (uint64_t i = 0; i < prm.nodes; i++)
        sum += ((field *)bg_state(S.g, BG_ID(me, i)))->v;
    double iter_s = reduce(MP_REDUCE_MAX, dt);
    double checksum = reduce(MP_REDUCE_SUM, sum);
    double wrong = 0, max_diff = 0;
    if (prm.check) {
        wrong = (double)compare(me, &max_diff);
        max_diff = reduce(MP_REDUCE_MAX, max_diff);
        wrong = bu_agree(S.obj, wrong);
        if (wrong > 0)
            atomic_store(&failed, 1);
    }
    if (me == 0) {
        mp_param("iter_s", iter_s);
        printf("em3d: P=%d nodes/PE=%llu degree=%llu remote=%g%% span=%llu iters=%llu "
               "seed=%llu: iterations %.6f s, checksum %.12g\n",
               npes, (unsigned long long)prm.nodes, (unsigned long long)prm.degree, prm.remote,
               (unsigned long long)prm.span, (unsigned long long)prm.iters,
               (unsigned long long)prm.seed, iter_s, checksum);
        if (prm.check)
            printf("em3d: check against the sequential computation: %s (%llu of %llu values "
                   "differ, max |diff| %.3g)\n",
                   wrong > 0 ? "FAILED" : "OK", (unsigned long long)wrong,
                   (unsigned long long)(prm.nodes * (uint64_t)npes), max_diff);
        fflush(stdout);
    }
    await(bg_destroy(S.g, S.c), "bg_destroy");
    mp_counter_free(S.c);
    free(S.source);
}

static int usage(void)
{
    fprintf(stderr, "usage: em3d [--nodes=N] [--degree=D] [--remote=PCT] [--span=S] "
                    "[--iters=I] [--seed=X] [--check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    bool any = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool ok = true;
        if (bu_check_flag(a, &prm.check, &prm.fault))
            continue;
        any = true;
        if ((v = bu_opt(a, "--nodes")))
            ok = bu_u64("em3d", "--nodes", v, 2, 1u << 30, &prm.nodes);
        else if ((v = bu_opt(a, "--degree")))
            ok = bu_u64("em3d", "--degree", v, 1, 10000, &prm.degree);
        else if ((v = bu_opt(a, "--span")))
            ok = bu_u64("em3d", "--span", v, 1, 64, &prm.span);
        else if ((v = bu_opt(a, "--iters")))
            ok = bu_u64("em3d", "--iters", v, 0, 1u << 30, &prm.iters);
        else if ((v = bu_opt(a, "--seed")))
            ok = bu_u64("em3d", "--seed", v, 0, UINT64_MAX, &prm.seed);
        else if ((v = bu_opt(a, "--remote")))
            ok = bu_f64("em3d", "--remote", v, 0, 100, &prm.remote);
        else
            return usage();
        if (!ok)
            return 2;
    }
    if (prm.check && !any) { /* the small built-in case */
        prm.nodes = 200;
        prm.degree = 8;
        prm.remote = 20;
        prm.span = 2;
        prm.iters = 10;
    }
    prm.remote_bp = (uint64_t)llround(prm.remote * 100);

    mp_config cfg;
    bu_config(&cfg);
    em3d_perf_init();
    prm.npes = cfg.npes;
    if (prm.check)
        compute_reference(cfg.npes);
    mp_param("nodes", (double)prm.nodes);
    mp_param("degree", (double)prm.degree);
    mp_param("remote", prm.remote);
    mp_param("span", (double)prm.span);
    mp_param("iters", (double)prm.iters);
    mp_param("seed", (double)prm.seed);
    int rc = mp_main(&cfg, pe_main, argc, argv);
    free(reference);
    if (atomic_load(&failed))
        return 1;
    return rc;
}
