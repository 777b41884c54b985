/*
 * phylogeny.c -- the maximal subsets of binary characters that admit a perfect phylogeny, by
 * a search over character subsets scheduled on the task stealer (Wen 1995, section 2.2.3.4,
 * Fig 2.10; the study of section 5.1.4).
 *
 *   phylogeny [--species=N] [--chars=M] [--noise=F] [--seed=X] [--balance=steal|push]
 *             [--topology=ring|hypercube|complete] [--check] [--verbose]
 *
 * Input.  N species (<= 32) described by M binary characters (<= 64); a character is the set
 * of species that have the trait (a bit mask).  The generator (seeded) builds a random rooted
 * binary tree over the species, makes every character one of its clades, then flips each
 * (species, character) entry with probability F (default 0.12): without noise every subset
 * would be compatible, with pure noise hardly any pair would be.  Paper setting: 14 species,
 * 50 characters.
 *
 * Compatibility.  A set of binary characters has a perfect phylogeny iff every pair of them
 * is compatible (the four-gamete test: not all of 11, 10, 01, 00 occur among the species).
 * The "attempt to construct a tree" of the paper is this test over all pairs of the subset,
 * computed from the species masks (no precomputed pair table), counted in NTest / NPair.
 *
 * Search (Fig 2.10).  A task is a character subset X; PE 0 adds the single-character
 * subsets.  Running X: (1) a subset of X in the failure store: X fails (pruned); (2) a
 * superset of X in the success store: X succeeds without a test; otherwise test it.  A
 * failure goes into the failure store -- the incompatible pair the test found, the smallest
 * failure inside X, which condemns every superset of the pair.  A success goes into the
 * success store and generates the tasks X + {c} for the characters c above X's last one (so
 * every subset is generated once), except those the failure store already condemns.  The
 * stores are per PE, so pruning depends on locality: a PE tests (and generates) supersets
 * of a pair that failed on another PE until a combine brings it the pair.  With
 * --balance=push (new tasks go to random pools) the subtrees scatter over the PEs; with
 * --balance=steal (local pools, idle PEs steal along --topology, default ring) they stay
 * together.  Tasks carry a pointer to the subset on its creator; a task run elsewhere
 * fetches the subset with a bulk read first (the paper's "fetch").
 *
 * Combining the failure stores.  A PE whose pool is empty starts the next combine round
 * (unless one is under way): a barrier on the combine object, overlapped with work; when it
 * completes the compute thread pauses and the PEs run log2(P) butterfly steps -- at step k
 * PE p sends its failure store to p xor 2^k (when < P) and merges what it receives -- then
 * resume.  After termination the PEs agree on the number of rounds started (a max-reduction)
 * and finish them, so no PE waits in a barrier alone.
 *
 * Result.  Every PE sends its successes to PE 0.  A success X is maximal iff no X + {c} is a
 * success (compatibility is inherited by subsets, and every compatible subset is explored:
 * its prefixes in character order are compatible too).  --check: PE 0 enumerates every compatible
 * subset again sequentially (each once, by adding characters in increasing order, with a pair
 * table) and compares the maximal subsets; exit status 1 when they differ.  With --check and no
 * other option a small built-in case runs (10 species, 24 characters).  PEs: MPROF_PES (default 2),
 * or the MPI rank count under mpirun.  Aggregation: MPROF_AGG_BYTES.  Run profile: MPROF_OUT.
 */
#include "bench_util.h"
#include "phylo_store.h"
#include "phylogeny_perf.h"
#include "taskstealer.h"

#include <stdatomic.h>

#define MAX_SPECIES 32
#define MAX_CHARS 64
#define MAX_STEPS 16 /* butterfly steps: P <= 2^16 */
#define CHUNK_MASKS 120

static struct {
    uint64_t species, chars, seed;
    double noise;
    ts_topology topology;
    bool push, check, fault, verbose;
} prm = {14, 50, 1, 0.12, TS_RING, false, false, false, false};

static uint32_t charmask[MAX_CHARS]; /* species having character c; replicated */
static int remove_access;
static _Atomic int failed;

/* ------------------------------------------------------------------------------------ */
/* Input and the compatibility test                                                      */

static void make_characters(void)
{
    uint32_t n = (uint32_t)prm.species, cluster[MAX_SPECIES], clade[MAX_SPECIES];
    uint32_t nclus = n, nclade = 0;
    for (uint32_t i = 0; i < n; i++)
        cluster[i] = 1u << i;
    /* a random binary tree: merge two random clusters until one is left */
    for (uint32_t step = 0; nclus > 1; step++) {
        uint64_t h = bu_hash3(prm.seed, 1, step, 0);
        uint32_t a = (uint32_t)(h % nclus), b = (uint32_t)((h >> 32) % (nclus - 1));
        if (b >= a)
            b++;
        uint32_t merged = cluster[a] | cluster[b];
        if (nclus > 2) /* the root clade (every species) is no character */
            clade[nclade++] = merged;
        uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
        cluster[lo] = merged;
        cluster[hi] = cluster[--nclus];
    }
    for (uint32_t c = 0; c < prm.chars; c++) {
        uint64_t h = bu_hash3(prm.seed, 2, c, 0);
        uint32_t m = nclade ? clade[h % nclade] : 1u;
        for (uint32_t s = 0; s < n; s++)
            if (bu_unit(bu_hash3(prm.seed, 3, c, s)) < prm.noise)
                m ^= 1u << s;
        charmask[c] = m;
    }
}

static inline bool pair_ok(uint32_t a, uint32_t b, uint32_t all)
{
    return !((a & b) && (a & ~b) && (~a & b & all) && (~a & ~b & all));
}

/* The perfect-phylogeny test of a subset: every pair compatible.  On failure *witness is
 * the first incompatible pair found (itself a failure: the failure store keeps it, and it
 * condemns every superset). */
static bool compatible(uint64_t x, uint64_t *pairs, uint64_t *witness)
{
    uint32_t all = prm.species == 32 ? ~0u : (1u << prm.species) - 1;
    for (uint64_t r = x; r; r &= r - 1) {
        int i = __builtin_ctzll(r);
        for (uint64_t q = r & (r - 1); q; q &= q - 1) {
            int j = __builtin_ctzll(q);
            ++*pairs;
            if (!pair_ok(charmask[i], charmask[j], all)) {
                *witness = 1ull << i | 1ull << j;
                return false;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------------------------ */
/* The sequential reference (--check): every compatible subset once, maximal ones sorted  */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    uint64_t *v;
    size_t n, cap;
} u64vec;

static void vec_push(u64vec *v, uint64_t x)
{
    if (v->n == v->cap)
        v->v = store_grow(v->v, &v->cap, sizeof *v->v);
    v->v[v->n++] = x;
}

static void enumerate(uint64_t x, int next, const uint64_t *ok, u64vec *out)
{
    bool extendable = false; /* by any character, not only those above the last */
    for (int c = 0; c < (int)prm.chars; c++)
        if (!(x >> c & 1) && (ok[c] & x) == x) {
            extendable = true;
            if (c >= next)
                enumerate(x | 1ull << c, c + 1, ok, out);
        }
    if (!extendable && x)
        vec_push(out, x);
}

static u64vec sequential_maximal(void)
{
    uint64_t ok[MAX_CHARS] = {0}; /* ok[c]: the characters compatible with c */
    uint32_t all = prm.species == 32 ? ~0u : (1u << prm.species) - 1;
    for (int a = 0; a < (int)prm.chars; a++)
        for (int b = 0; b < (int)prm.chars; b++)
            if (a != b && pair_ok(charmask[a], charmask[b], all))
                ok[a] |= 1ull << b;
    u64vec out = {0};
    enumerate(0, 0, ok, &out);
    qsort(out.v, out.n, sizeof *out.v, cmp_u64);
    return out;
}

/* ------------------------------------------------------------------------------------ */
/* PE state                                                                               */

typedef struct {
    const uint64_t *subset; /* on the creator */
    int32_t creator;
    int32_t pad_;
} task_ref;

typedef struct chunk {
    struct chunk *next;
    size_t used;
    uint64_t subset[512];
} chunk;

typedef struct {
    uint32_t round, step, last, n;
    uint64_t mask[CHUNK_MASKS];
} comb_msg;

typedef struct {
    ts_t ts;
    mp_obj_t obj, comb_obj;
    int me, npes, nsteps;
    phylogeny_stats_t *st;
    store success, failure;
    chunk *arena;
    /* the compute thread */
    mp_counter_t wake, fetched, finished, resumed;
    uint64_t wake_target, fetch_target, resumed_target;
    int result;
    task_ref task;
    uint64_t x;
    bool paused; /* waiting for a combination to complete */
    /* combining */
    bool combining;   /* a round is under way (barrier or exchange) */
    bool exchanging;  /* its exchange: compute pauses */
    uint32_t started; /* rounds started here */
    uint32_t done_rounds;
    mp_counter_t barrier, rounds_done, step_in[MAX_STEPS];
    u64vec staged[MAX_STEPS];
    int step;
    double tot[4]; /* tasks, tests, fetches, combine entries received (for the run's totals) */
    /* PE 0: every success */
    maskset all;
    mp_counter_t collected;
} pe_state;

static _Thread_local pe_state S;

static void die(const char *what)
{
    fprintf(stderr, "phylogeny: PE %d: %s\n", mp_mype(), what);
    exit(1);
}

/* ------------------------------------------------------------------------------------ */
/* Combining the failure stores (the "combine" threads of Fig 2.10)                      */

static void comb_step(void);

static void send_masks(int pe, mp_fiber_fn fn, const uint64_t *v, size_t n, uint32_t round,
                       uint32_t step)
{
    comb_msg m = {round, step, 0, 0, {0}};
    size_t i = 0;
    do {
        m.n = 0;
        for (; i < n && m.n < CHUNK_MASKS; i++)
            m.mask[m.n++] = v[i];
        m.last = i == n;
        if (mp_invoke(pe, fn, &m, offsetof(comb_msg, mask) + m.n * sizeof m.mask[0],
                      MP_SCHED_FIFO) != MP_SUCCESS)
            die("mp_invoke failed");
    } while (i < n);
}

static void comb_recv(void *args)
{
    comb_msg *m = args;
    for (uint32_t i = 0; i < m->n; i++)
        vec_push(&S.staged[m->step], m->mask[i]);
    if (m->last)
        mp_counter_add(S.step_in[m->step], 1);
}

static void comb_merged(void *args)
{
    (void)args;
    PHYLOGENY_ACCESS(COMBINE);
    u64vec *in = &S.staged[S.step];
    for (size_t i = 0; i < in->n; i++)
        if (!store_has_subset_of(&S.failure, in->v[i])) {
            store_insert(&S.failure, in->v[i]);
            PHYLOGENY_INC(S.st, NCombineMerged, 1);
        }
    PHYLOGENY_INC(S.st, NCombineRecv, in->n);
    S.tot[3] += (double)in->n;
    in->n = 0;
    S.step++;
    comb_step();
}

/* One butterfly step, or the end of the round. */
static void comb_step(void)
{
    while (S.step < S.nsteps && (S.me ^ (1 << S.step)) >= S.npes)
        S.step++; /* no partner at this level (P not a power of two) */
    if (S.step == S.nsteps) {
        S.combining = S.exchanging = false;
        S.done_rounds++;
        mp_counter_add(S.rounds_done, 1);
        if (S.paused) { /* resume the compute thread */
            S.paused = false;
            mp_counter_add(S.resumed, 1);
        }
        return;
    }
    int partner = S.me ^ (1 << S.step);
    send_masks(partner, comb_recv, S.failure.list, S.failure.nlist, S.done_rounds,
               (uint32_t)S.step);
    mp_counter_wait(S.step_in[S.step], S.done_rounds + 1, mp_continue(comb_merged, MP_SCHED_FIFO));
}

static void comb_go(void *args)
{
    (void)args;
    PHYLOGENY_ACCESS(COMBINE);
    /* the barrier completed: every PE is combining; compute pauses */
    S.exchanging = true;
    S.step = 0;
    PHYLOGENY_INC(S.st, NCombine, 1);
    comb_step();
}

static void comb_start(void)
{
    S.combining = true;
    S.started++;
    if (mp_obj_barrier(S.comb_obj, S.barrier) == MP_FAIL)
        die("barrier failed");
    /* a fiber of its own: the compute thread that starts the round goes on with its own
     * continuation (the barrier overlaps with work) */
    mp_counter_wait(S.barrier, S.started, mp_fiber_create(comb_go, NULL, 0, MP_SCHED_FIFO));
}

/* ------------------------------------------------------------------------------------ */
/* The compute thread                                                                     */

static void add_task(uint64_t y)
{
    if (!S.arena || S.arena->used == 512) {
        chunk *c = calloc(1, sizeof *c);
        if (!c)
            die("out of memory");
        c->next = S.arena;
        S.arena = c;
    }
    uint64_t *slot = &S.arena->subset[S.arena->used++];
    *slot = y;
    task_ref r = {slot, S.me, 0};
    /* larger subsets first: depth-first keeps the live frontier small */
    ts_hints h = {__builtin_popcountll(y), 1.0, 1.0};
    if (ts_add(S.ts, TS_ANY, &r, &h) == MP_FAIL)
        die("ts_add failed");
    PHYLOGENY_INC(S.st, NGen, 1);
}

static void explore(uint64_t x)
{
    PHYLOGENY_INC(S.st, NTask, 1);
    S.tot[0]++;
    if (store_has_subset_of(&S.failure, x)) {
        PHYLOGENY_INC(S.st, NPruneFail, 1);
        return;
    }
    if (store_has_superset_of(&S.success, x)) {
        PHYLOGENY_INC(S.st, NPruneSucc, 1);
    } else {
        uint64_t pairs = 0, witness = 0;
        bool ok = compatible(x, &pairs, &witness);
        PHYLOGENY_INC(S.st, NTest, 1);
        S.tot[1]++;
        PHYLOGENY_INC(S.st, NPair, pairs);
        if (!ok) {
            store_insert(&S.failure, witness);
            PHYLOGENY_INC(S.st, NFailure, 1);
            return;
        }
    }
    store_insert(&S.success, x);
    PHYLOGENY_INC(S.st, NSuccess, 1);
    /* the supersets by one character above X's last: every subset is generated once */
    int last = 63 - __builtin_clzll(x);
    for (uint64_t c = (uint64_t)last + 1; c < prm.chars; c++) {
        uint64_t y = x | 1ull << c;
        if (store_has_subset_of(&S.failure, y)) {
            PHYLOGENY_INC(S.st, NPruneGen, 1);
            continue;
        }
        add_task(y);
    }
}

static void w_remove(void *args);

static void run_task(void)
{
    explore(S.x);
    ts_done(S.ts);
    mp_fiber_enable(mp_continue(w_remove, MP_SCHED_FIFO)); /* one task per fiber */
}

static void w_fetched(void *args)
{
    (void)args;
    PHYLOGENY_ACCESS(FETCH);
    run_task();
}

static void got_task(void)
{
    if (S.result == TS_TERMINATED) {
        mp_counter_add(S.finished, 1);
        return;
    }
    if (S.task.creator == S.me) {
        S.x = *S.task.subset;
        run_task();
        return;
    }
    /* [ Fetch the character subset ] */
    PHYLOGENY_INC(S.st, NFetch, 1);
    S.tot[2]++;
    S.fetch_target++;
    if (mp_bulk_read(S.task.creator, S.task.subset, &S.x, sizeof S.x, S.fetched) == MP_FAIL)
        die("bulk read failed");
    mp_counter_wait(S.fetched, S.fetch_target, mp_continue(w_fetched, MP_SCHED_FIFO));
}

static void w_got(void *args)
{
    (void)args;
    mp_access_declare(remove_access);
    got_task();
}

static void w_resumed(void *args);

static void w_remove(void *args)
{
    (void)args;
    mp_access_declare(remove_access);
    /* Create a combine thread if necessary: the local pool ran dry */
    if (!S.combining && S.npes > 1 && ts_local_count(S.ts) == 0)
        comb_start();
    /* If combination is in progress: [ Wait until combination completes ] */
    if (S.exchanging) {
        S.paused = true;
        mp_counter_wait(S.resumed, ++S.resumed_target, mp_continue(w_resumed, MP_SCHED_FIFO));
        return;
    }
    /* [ Remove a task from the local task pool ] */
    S.wake_target++;
    mp_status s = ts_remove(S.ts, &S.task, NULL, &S.result, S.wake);
    if (s == MP_FAIL)
        die("ts_remove failed");
    if (s == MP_WAIT) {
        mp_counter_wait(S.wake, S.wake_target, mp_continue(w_got, MP_SCHED_FIFO));
        return;
    }
    got_task();
}

static void w_resumed(void *args)
{
    PHYLOGENY_ACCESS(COMBINE);
    w_remove(args);
}

/* ------------------------------------------------------------------------------------ */
/* Collecting the successes on PE 0                                                       */

static void collect(void *args)
{
    comb_msg *m = args;
    for (uint32_t i = 0; i < m->n; i++)
        maskset_add(&S.all, m->mask[i]);
    if (m->last)
        mp_counter_add(S.collected, 1);
}

static u64vec maximal_found(void)
{
    u64vec out = {0};
    uint64_t allc = prm.chars == 64 ? ~0ull : (1ull << prm.chars) - 1;
    for (size_t i = 0; i < S.all.cap; i++) {
        uint64_t x = S.all.slot[i];
        if (!x)
            continue;
        bool max = true;
        for (uint64_t r = allc & ~x; r && max; r &= r - 1)
            max = !maskset_has(&S.all, x | (r & -r));
        if (max)
            vec_push(&out, x);
    }
    qsort(out.v, out.n, sizeof *out.v, cmp_u64);
    return out;
}

static void print_subset(uint64_t x)
{
    printf("  {");
    for (uint64_t r = x; r; r &= r - 1)
        printf("%d%s", __builtin_ctzll(r), r & (r - 1) ? " " : "");
    printf("}\n");
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int me = mp_mype(), npes = mp_npes();
    memset(&S, 0, sizeof S);
    S.me = me;
    S.npes = npes;
    while ((1 << S.nsteps) < npes)
        S.nsteps++;
    ts_options o;
    ts_options_init(&o, sizeof(task_ref));
    o.topology = prm.push ? TS_PUSH : prm.topology;
    o.seed = prm.seed;
    if (ts_create(&o, &S.ts) != MP_SUCCESS)
        die("cannot create the task stealer");
    mp_obj_create(&S, &S.obj);
    mp_obj_create(&S, &S.comb_obj);
    S.st = phylogeny_stats_create(S.obj);
    PHYLOGENY_SET(S.st, P, 1);
    PHYLOGENY_SET(S.st, Species, prm.species);
    PHYLOGENY_SET(S.st, Chars, prm.chars);
    store_init(&S.success);
    store_init(&S.failure);
    S.wake = mp_counter_new(0);
    S.fetched = mp_counter_new(0);
    S.finished = mp_counter_new(0);
    S.resumed = mp_counter_new(0);
    S.barrier = mp_counter_new(0);
    S.rounds_done = mp_counter_new(0);
    S.collected = mp_counter_new(0);
    for (int k = 0; k < MAX_STEPS; k++)
        S.step_in[k] = mp_counter_new(0);
    if (me == 0) /* (successes may arrive while PE 0 still combines) */
        maskset_init(&S.all, 1024);

    double t0 = mp_wtime();
    if (me == 0) /* the "main" thread: the single-character subsets */
        for (uint64_t c = 0; c < prm.chars; c++)
            add_task(1ull << c);
    mp_spawn(w_remove, NULL, 0, MP_SCHED_FIFO);
    /* [ Wait until termination ] */
    if (mp_block_until(S.finished, 1) != MP_SUCCESS)
        exit(1);
    double solve_s = mp_wtime() - t0;
    /* finish the combine rounds some PE started */
    double rounds = 0;
    mp_counter_t c = mp_counter_new(0);
    uint64_t cw = 0;
    bu_await(c, &cw, mp_obj_reduce(S.obj, MP_REDUCE_MAX, S.started, &rounds, c), "reduction");
    if (mp_block_until(S.rounds_done, S.done_rounds + (S.combining ? 1 : 0)) != MP_SUCCESS)
        exit(1);
    while (S.started < (uint32_t)rounds) {
        comb_start();
        if (mp_block_until(S.rounds_done, S.started) != MP_SUCCESS)
            exit(1);
    }

    /* the run's totals, for the study (mp_param) */
    double tot[4];
    for (int i = 0; i < 4; i++) {
        bu_await(c, &cw, mp_obj_reduce(S.obj, MP_REDUCE_SUM, S.tot[i], &tot[i], c), "reduction");
    }
    /* Collect and print solutions */
    send_masks(0, collect, S.success.list, S.success.nlist, 0, 0);
    double wrong = 0;
    if (me == 0) {
        if (mp_block_until(S.collected, (uint64_t)npes) != MP_SUCCESS)
            exit(1);
        u64vec got = maximal_found();
        if (prm.fault && got.n) /* the test hook: lose one maximal subset */
            got.n--;
        size_t largest = 0;
        for (size_t i = 0; i < got.n; i++)
            if ((size_t)__builtin_popcountll(got.v[i]) > largest)
                largest = (size_t)__builtin_popcountll(got.v[i]);
        mp_param("solve_s", solve_s);
        mp_param("maximal", (double)got.n);
        mp_param("successes", (double)S.all.n);
        mp_param("tasks", tot[0]);
        mp_param("tests", tot[1]);
        mp_param("fetches", tot[2]);
        mp_param("combine_recv", tot[3]);
        mp_param("combines", (double)S.done_rounds);
        printf("phylogeny: P=%d species=%llu chars=%llu noise=%g seed=%llu balance=%s: %zu "
               "maximal compatible subsets (largest %zu characters), %zu compatible subsets "
               "explored, %.0f tasks, %.0f tests, %.0f fetches, %u combinations, %.6f s\n",
               npes, (unsigned long long)prm.species, (unsigned long long)prm.chars, prm.noise,
               (unsigned long long)prm.seed, prm.push ? "push" : ts_topology_name(prm.topology),
               got.n, largest, S.all.n, tot[0], tot[1], tot[2], S.done_rounds, solve_s);
        if (prm.verbose)
            for (size_t i = 0; i < got.n; i++)
                print_subset(got.v[i]);
        if (prm.check) {
            u64vec want = sequential_maximal();
            size_t differ = want.n != got.n;
            for (size_t i = 0; !differ && i < want.n; i++)
                differ = want.v[i] != got.v[i];
            wrong = (double)differ;
            printf("phylogeny: check against the sequential enumeration: %s (%zu maximal "
                   "subsets found, %zu expected)\n",
                   differ ? "FAILED" : "OK", got.n, want.n);
            free(want.v);
        }
        free(got.v);
        fflush(stdout);
        free(S.all.slot);
    }
    if (bu_agree(S.obj, wrong) > 0)
        atomic_store(&failed, 1);
    mp_counter_t d = mp_counter_new(0);
    if (ts_destroy(S.ts, d) == MP_FAIL || mp_block_until(d, 1) != MP_SUCCESS)
        die("ts_destroy failed");
    for (chunk *k = S.arena, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    mp_counter_t cs[] = {c,         d,         S.wake,        S.fetched,  S.finished,
                         S.resumed, S.barrier, S.rounds_done, S.collected};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        mp_counter_free(cs[i]);
    for (int k = 0; k < MAX_STEPS; k++) {
        mp_counter_free(S.step_in[k]);
        free(S.staged[k].v);
    }
    store_free(&S.success);
    store_free(&S.failure);
}

static int usage(void)
{
    fprintf(stderr, "usage: phylogeny [--species=N] [--chars=M] [--noise=F] [--seed=X] "
                    "[--balance=steal|push]\n"
                    "                 [--topology=ring|hypercube|complete] [--check] "
                    "[--verbose]\n");
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
        if (!strcmp(a, "--verbose")) {
            prm.verbose = true;
            continue;
        }
        any = true;
        if ((v = bu_opt(a, "--species")))
            ok = bu_u64("phylogeny", "--species", v, 2, MAX_SPECIES, &prm.species);
        else if ((v = bu_opt(a, "--chars")))
            ok = bu_u64("phylogeny", "--chars", v, 1, MAX_CHARS, &prm.chars);
        else if ((v = bu_opt(a, "--seed")))
            ok = bu_u64("phylogeny", "--seed", v, 0, UINT64_MAX, &prm.seed);
        else if ((v = bu_opt(a, "--noise")))
            ok = bu_f64("phylogeny", "--noise", v, 0, 1, &prm.noise);
        else if ((v = bu_opt(a, "--balance")) && (!strcmp(v, "steal") || !strcmp(v, "push")))
            prm.push = !strcmp(v, "push");
        else if ((v = bu_opt(a, "--topology")) && ts_topology_parse(v) >= 0 &&
                 ts_topology_parse(v) != TS_PUSH)
            prm.topology = (ts_topology)ts_topology_parse(v);
        else
            return usage();
        if (!ok)
            return 2;
    }
    if (prm.check && !any) { /* the small built-in case */
        prm.species = 10;
        prm.chars = 24;
    }
    make_characters();
    remove_access = mp_access_register("taskstealer", "REMOVE");

    mp_config cfg;
    bu_config(&cfg);
    phylogeny_perf_init();
    mp_param("species", (double)prm.species);
    mp_param("chars", (double)prm.chars);
    mp_param("noise", prm.noise);
    mp_param("seed", (double)prm.seed);
    mp_param("push", prm.push);
    int rc = mp_main(&cfg, pe_main, argc, argv);
    if (atomic_load(&failed))
        return 1;
    return rc;
}
