/*
 * eigenvalue.c -- all eigenvalues of a symmetric tridiagonal matrix by bisection with Sturm
 * counts, the intervals scheduled by the task stealer (Wen 1995, section 2.2.3.3, Fig 2.7; the
 * study of section 5.1.3).
 *
 *   eigenvalue [--n=N] [--seed=X] [--balance=steal|push] [--topology=ring|hypercube|complete]
 *              [--tasks=fetch|send] [--dump=FILE] [--check]
 *
 * The matrix has a random diagonal a and off-diagonal b, uniform in [-1, 1) (a hash of seed
 * and index), and is replicated on every PE.  sturm(x) counts the eigenvalues below x (the
 * negative pivots of the LDL^T factorisation of T - xI).  An interval (lo, hi) with
 * clo = sturm(lo) and chi = sturm(hi) holds chi - clo eigenvalues.  A task processes one
 * interval (Fig 2.7): it bisects until both halves hold eigenvalues, then adds the two halves
 * as new tasks; an interval narrower than the tolerance (4 eps ||T||, Gershgorin) is a leaf
 * and records its eigenvalues (the midpoint, once per eigenvalue it holds).  PE 0 adds the
 * Gershgorin interval; the run ends when the task stealer detects termination.  The
 * intervals produced do not depend on who processes them, so every statistic of the
 * bisection (intervals, steps, leaves) is the same for any number of PEs.
 *
 * Load balancing: --balance=steal keeps new tasks in the creating PE's pool and idle PEs
 * steal (from random victims among --topology, default complete: any PE); --balance=push adds every
 * new task to a random pool. Tasks: --tasks=fetch (the paper's initial version) puts a pointer to
 * the interval in the task stealer; a PE that got the task from elsewhere fetches the interval from
 * its creator with a bulk read.  --tasks=send (the optimisation of Fig 5.5) puts the interval
 * itself in the task, so it travels with the task.  Aggregation is the runtime's MPROF_AGG_BYTES.
 *
 * After termination every PE sends its eigenvalues to PE 0.  --dump=FILE: PE 0 writes the
 * matrix and the eigenvalues as JSON (tests/apps compares them with SciPy).  --check: PE 0
 * computes every eigenvalue again sequentially, each by its own bisection on the index
 * (no tasks, no runtime), and compares; the exit status is 1 when one differs by more than
 * twice the tolerance.  With --check and no other option a built-in case runs (N = 200).
 * PEs: MPROF_PES (default 2), or the MPI rank count under mpirun.  Run profile: MPROF_OUT.
 */
#include "bench_util.h"
#include "eigenvalue_perf.h"
#include "taskstealer.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>

static struct {
    uint64_t n, seed;
    ts_topology topology;
    bool push, fetch, check, fault;
    const char *dump;
} prm = {1000, 1, TS_COMPLETE, false, true, false, false, NULL};

/* The matrix, replicated: every PE (every MPI rank) generates the same one. */
static double *diag, *offd, *offd2; /* a[0..n), b[0..n-1), b^2 */
static double glo, ghi, tol, pivmin;
static _Atomic int failed;

/* ------------------------------------------------------------------------------------ */
/* The numerical kernel                                                                   */

static void make_matrix(void)
{
    uint64_t n = prm.n;
    diag = malloc(n * sizeof *diag);
    offd = malloc((n ? n : 1) * sizeof *offd);
    offd2 = malloc((n ? n : 1) * sizeof *offd2);
    if (!diag || !offd || !offd2) {
        fprintf(stderr, "eigenvalue: out of memory\n");
        exit(1);
    }
    double maxb2 = 0;
    for (uint64_t i = 0; i < n; i++) {
        diag[i] = 2.0 * bu_unit(bu_hash3(prm.seed, 1, i, 0)) - 1.0;
        if (i + 1 < n) {
            offd[i] = 2.0 * bu_unit(bu_hash3(prm.seed, 2, i, 0)) - 1.0;
            offd2[i] = offd[i] * offd[i];
            maxb2 = fmax(maxb2, offd2[i]);
        }
    }
    /* Gershgorin's interval holds every eigenvalue */
    glo = INFINITY;
    ghi = -INFINITY;
    for (uint64_t i = 0; i < n; i++) {
        double r = (i > 0 ? fabs(offd[i - 1]) : 0) + (i + 1 < n ? fabs(offd[i]) : 0);
        glo = fmin(glo, diag[i] - r);
        ghi = fmax(ghi, diag[i] + r);
    }
    double norm = fmax(fabs(glo), fabs(ghi));
    pivmin = DBL_MIN * fmax(1.0, maxb2);
    tol = 4 * DBL_EPSILON * norm;
    glo -= 2 * tol + pivmin;
    ghi += 2 * tol + pivmin;
}

/* The number of eigenvalues below x. */
static uint32_t sturm(double x)
{
    uint32_t count = 0;
    double d = 1.0;
    for (uint64_t i = 0; i < prm.n; i++) {
        d = diag[i] - x - (i ? offd2[i - 1] / d : 0.0);
        if (fabs(d) < pivmin)
            d = -pivmin;
        count += d < 0;
    }
    return count;
}

/* ------------------------------------------------------------------------------------ */
/* The sequential reference (--check): each eigenvalue by its own bisection                */

static double kth_eigenvalue(uint32_t k)
{
    double lo = glo, hi = ghi; /* sturm(lo) <= k < sturm(hi) */
    for (;;) {
        double mid = 0.5 * (lo + hi);
        if (hi - lo <= tol || mid <= lo || mid >= hi)
            return mid;
        if (sturm(mid) <= k)
            lo = mid;
        else
            hi = mid;
    }
}

/* ------------------------------------------------------------------------------------ */
/* Tasks                                                                                  */

typedef struct {
    double lo, hi;
    uint32_t clo, chi; /* eigenvalues below lo and below hi */
} interval;

/* --tasks=fetch: the task names the interval on its creator */
typedef struct {
    const interval *iv;
    int32_t creator;
    int32_t pad_;
} interval_ref;

/* Intervals created on this PE for --tasks=fetch, kept until the end (other PEs read them). */
typedef struct chunk {
    struct chunk *next;
    size_t used;
    interval iv[256];
} chunk;

typedef struct {
    ts_t ts;
    mp_obj_t obj;
    int me;
    eigenvalue_stats_t *st;
    chunk *arena;
    /* eigenvalues found here */
    uint32_t *found_k;
    double *found_v;
    size_t nfound, capfound;
    /* the worker */
    mp_counter_t finished;
    interval iv; /* the task being run */
    /* PE 0: all eigenvalues */
    double *eig;
    mp_counter_t collected;
} pe_state;

static _Thread_local pe_state S;

static void die(const char *what)
{
    fprintf(stderr, "eigenvalue: PE %d: %s\n", mp_mype(), what);
    exit(1);
}

static void add_task(const interval *iv)
{
    ts_hints h = {0, (double)(iv->chi - iv->clo), prm.fetch ? 1.0 : 0.0};
    mp_status s;
    if (prm.fetch) {
        if (!S.arena || S.arena->used == 256) {
            chunk *c = calloc(1, sizeof *c);
            if (!c)
                die("out of memory");
            c->next = S.arena;
            S.arena = c;
        }
        interval *slot = &S.arena->iv[S.arena->used++];
        *slot = *iv;
        interval_ref r = {slot, S.me, 0};
        s = ts_add(S.ts, TS_ANY, &r, &h);
    } else {
        s = ts_add(S.ts, TS_ANY, iv, &h);
    }
    if (s == MP_FAIL)
        die("ts_add failed");
}

static void record(uint32_t k, double v)
{
    if (S.nfound == S.capfound) {
        S.capfound = S.capfound ? 2 * S.capfound : 256;
        S.found_k = realloc(S.found_k, S.capfound * sizeof *S.found_k);
        S.found_v = realloc(S.found_v, S.capfound * sizeof *S.found_v);
        if (!S.found_k || !S.found_v)
            die("out of memory");
    }
    S.found_k[S.nfound] = k;
    S.found_v[S.nfound++] = v;
}

/* One task: bisect until the interval splits into two useful halves or is a leaf. */
static void process(interval iv)
{
    EIGENVALUE_INC(S.st, NInterval, 1);
    for (;;) {
        double mid = 0.5 * (iv.lo + iv.hi);
        if (iv.hi - iv.lo <= tol || mid <= iv.lo || mid >= iv.hi) {
            EIGENVALUE_INC(S.st, NLeaf, 1);
            for (uint32_t k = iv.clo; k < iv.chi; k++)
                record(k, mid);
            return;
        }
        uint32_t c = sturm(mid);
        EIGENVALUE_INC(S.st, NBisect, 1);
        c = c < iv.clo ? iv.clo : c > iv.chi ? iv.chi : c; /* (monotone in exact arithmetic) */
        if (c > iv.clo && c < iv.chi) {
            add_task(&(interval){iv.lo, mid, iv.clo, c});
            add_task(&(interval){mid, iv.hi, c, iv.chi});
            return;
        }
        if (c == iv.clo) {
            iv.lo = mid;
        } else {
            iv.hi = mid;
        }
    }
}

/* ------------------------------------------------------------------------------------ */
/* The compute thread of every PE (Fig 2.7): remove, fetch, bisect, repeat: the task      */
/* stealer's worker loop with the program's steps                                         */

static void w_run(ts_t ts, void *task, const ts_hints *h, void *ctx)
{
    (void)ts, (void)task, (void)h, (void)ctx;
    process(S.iv); /* prepared by w_prepare */
}

/* [ Fetch the interval ] from the PE that created it, when the task carries a reference */
static mp_status w_prepare(ts_t ts, void *task, void *ctx, mp_counter_t ready)
{
    (void)ts, (void)ctx;
    if (!prm.fetch) {
        memcpy(&S.iv, task, sizeof S.iv);
        return MP_OK;
    }
    interval_ref r;
    memcpy(&r, task, sizeof r);
    if (r.creator == S.me) {
        S.iv = *r.iv;
        return MP_OK;
    }
    EIGENVALUE_INC(S.st, NFetch, 1);
    if (mp_bulk_read(r.creator, r.iv, &S.iv, sizeof S.iv, ready) == MP_FAIL)
        die("bulk read failed");
    return MP_WAIT;
}

static void w_resumed(void *ctx, int why)
{
    (void)ctx, (void)why; /* only the fetch waits */
    EIGENVALUE_ACCESS(FETCH);
}

/* ------------------------------------------------------------------------------------ */
/* Collecting the eigenvalues on PE 0                                                     */

#define PAIRS 60
typedef struct {
    uint32_t n, pad_;
    struct {
        uint64_t k;
        double v;
    } e[PAIRS];
} found_msg;

static void collect(void *args)
{
    found_msg *m = args;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->e[i].k < prm.n)
            S.eig[m->e[i].k] = m->e[i].v;
    mp_counter_add(S.collected, m->n);
}

static void send_found(void)
{
    found_msg m;
    size_t i = 0;
    while (i < S.nfound) {
        m.n = 0;
        for (; i < S.nfound && m.n < PAIRS; i++, m.n++) {
            m.e[m.n].k = S.found_k[i];
            m.e[m.n].v = S.found_v[i];
        }
        if (mp_invoke(0, collect, &m, offsetof(found_msg, e) + m.n * sizeof m.e[0],
                      MP_SCHED_FIFO) != MP_SUCCESS)
            die("mp_invoke failed");
    }
}

static void dump(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "eigenvalue: --dump=%s: %s\n", path, strerror(errno));
        exit(1);
    }
    fprintf(f, "{\"n\": %llu, \"seed\": %llu, \"tol\": %.17g,\n \"diag\": [",
            (unsigned long long)prm.n, (unsigned long long)prm.seed, tol);
    for (uint64_t i = 0; i < prm.n; i++)
        fprintf(f, "%s%.17g", i ? ", " : "", diag[i]);
    fprintf(f, "],\n \"offdiag\": [");
    for (uint64_t i = 0; i + 1 < prm.n; i++)
        fprintf(f, "%s%.17g", i ? ", " : "", offd[i]);
    fprintf(f, "],\n \"eigenvalues\": [");
    for (uint64_t i = 0; i < prm.n; i++)
        fprintf(f, "%s%.17g", i ? ", " : "", S.eig[i]);
    fprintf(f, "]}\n");
    fclose(f);
}

/* PE 0, --check: returns how many eigenvalues differ from the sequential ones. */
static uint64_t compare(double *max_diff)
{
    uint64_t wrong = 0;
    *max_diff = 0;
    for (uint32_t k = 0; k < prm.n; k++) {
        double want = kth_eigenvalue(k), diff = fabs(S.eig[k] - want);
        if (!(diff <= 2 * tol)) { /* (NaN: never collected) */
            if (wrong < 3)
                fprintf(stderr, "eigenvalue %u: %.17g, sequential %.17g\n", k, S.eig[k], want);
            wrong++;
        }
        if (diff > *max_diff || diff != diff)
            *max_diff = diff;
    }
    return wrong;
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int me = mp_mype(), npes = mp_npes();
    memset(&S, 0, sizeof S);
    S.me = me;
    ts_options o;
    ts_options_init(&o, prm.fetch ? sizeof(interval_ref) : sizeof(interval));
    o.topology = prm.push ? TS_PUSH : prm.topology;
    o.seed = prm.seed;
    if (ts_create(&o, &S.ts) != MP_SUCCESS)
        die("cannot create the task stealer");
    mp_obj_create(&S, &S.obj);
    S.st = eigenvalue_stats_create(S.obj);
    EIGENVALUE_SET(S.st, P, 1);
    EIGENVALUE_SET(S.st, N, prm.n);
    S.finished = mp_counter_new(0);
    S.collected = mp_counter_new(0);

    double t0 = mp_wtime();
    if (me == 0) {
        /* the "main" thread: the initial interval */
        interval all = {glo, ghi, sturm(glo), sturm(ghi)};
        add_task(&all);
        S.eig = malloc(prm.n * sizeof *S.eig);
        if (!S.eig)
            die("out of memory");
        for (uint64_t k = 0; k < prm.n; k++)
            S.eig[k] = NAN;
    }
    ts_worker_ops ops = {.run = w_run, .prepare = w_prepare, .resumed = w_resumed};
    if (ts_run_worker(S.ts, &ops, NULL, S.finished) != MP_SUCCESS)
        die("cannot start the worker");
    /* [ Wait until termination ] */
    if (mp_block_until(S.finished, 1) != MP_SUCCESS)
        exit(1);
    double solve_s = mp_wtime() - t0;
    if (prm.fault && me == npes - 1 && S.nfound)
        S.found_v[0] += 1.0;
    send_found();

    double wrong = 0;
    if (me == 0) {
        /* Collect and print the solutions */
        if (mp_block_until(S.collected, prm.n) != MP_SUCCESS)
            exit(1);
        mp_param("solve_s", solve_s);
        printf("eigenvalue: P=%d N=%llu seed=%llu balance=%s%s%s tasks=%s: eigenvalues %.12g .. "
               "%.12g, %.6f s\n",
               npes, (unsigned long long)prm.n, (unsigned long long)prm.seed,
               prm.push ? "push" : "steal",
               prm.push ? "" : " topology=", prm.push ? "" : ts_topology_name(prm.topology),
               prm.fetch ? "fetch" : "send", S.eig[0], S.eig[prm.n - 1], solve_s);
        if (prm.dump)
            dump(prm.dump);
        if (prm.check) {
            double max_diff;
            wrong = (double)compare(&max_diff);
            printf("eigenvalue: check against sequential bisection: %s (%llu of %llu differ, "
                   "max |diff| %.3g, tolerance %.3g)\n",
                   wrong > 0 ? "FAILED" : "OK", (unsigned long long)wrong,
                   (unsigned long long)prm.n, max_diff, tol);
        }
        fflush(stdout);
    }
    /* every PE is past termination here: no fetch can be in flight once all agree */
    if (bu_agree(S.obj, wrong) > 0)
        atomic_store(&failed, 1);
    mp_counter_t c = mp_counter_new(0);
    if (ts_destroy(S.ts, c) == MP_FAIL || mp_block_until(c, 1) != MP_SUCCESS)
        die("ts_destroy failed");
    for (chunk *k = S.arena, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    mp_counter_t cs[] = {c, S.finished, S.collected};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        mp_counter_free(cs[i]);
    free(S.found_k);
    free(S.found_v);
    free(S.eig);
}

static int usage(void)
{
    fprintf(stderr, "usage: eigenvalue [--n=N] [--seed=X] [--balance=steal|push] "
                    "[--topology=ring|hypercube|complete]\n"
                    "                  [--tasks=fetch|send] [--dump=FILE] [--check]\n");
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
        if ((v = bu_opt(a, "--dump"))) {
            prm.dump = v;
            continue;
        }
        any = true;
        if ((v = bu_opt(a, "--n")))
            ok = bu_u64("eigenvalue", "--n", v, 1, 1u << 24, &prm.n);
        else if ((v = bu_opt(a, "--seed")))
            ok = bu_u64("eigenvalue", "--seed", v, 0, UINT64_MAX, &prm.seed);
        else if ((v = bu_opt(a, "--balance")) && (!strcmp(v, "steal") || !strcmp(v, "push")))
            prm.push = !strcmp(v, "push");
        else if ((v = bu_opt(a, "--tasks")) && (!strcmp(v, "fetch") || !strcmp(v, "send")))
            prm.fetch = !strcmp(v, "fetch");
        else if ((v = bu_opt(a, "--topology")) && ts_topology_parse(v) >= 0 &&
                 ts_topology_parse(v) != TS_PUSH)
            prm.topology = (ts_topology)ts_topology_parse(v);
        else
            return usage();
        if (!ok)
            return 2;
    }
    if (prm.check && !any)
        prm.n = 200; /* the small built-in case */
    if (prm.dump) {  /* a path that cannot be written is told now, not after the run */
        FILE *f = fopen(prm.dump, "a");
        if (!f) {
            fprintf(stderr, "eigenvalue: --dump=%s: %s\n", prm.dump, strerror(errno));
            return 2;
        }
        fclose(f);
    }
    make_matrix();

    mp_config cfg;
    bu_config(&cfg);
    eigenvalue_perf_init();
    mp_param("n", (double)prm.n);
    mp_param("seed", (double)prm.seed);
    mp_param("push", prm.push);
    mp_param("fetch", prm.fetch);
    int rc = mp_main(&cfg, pe_main, argc, argv);
    free(diag);
    free(offd);
    free(offd2);
    if (atomic_load(&failed))
        return 1;
    return rc;
}
