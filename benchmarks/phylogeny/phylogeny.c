/*
 * phylogeny.c -- the maximal subsets of binary characters that admit a perfect phylogeny, by
 * a search over character subsets scheduled on the task stealer (Wen 1995, section 2.2.3.4,
 * Fig 2.10; the study of section 5.1.4).
 *
 *   phylogeny [--species=N] [--chars=M] [--noise=F] [--seed=X] [--balance=steal|push]
 *             [--topology=ring|hypercube|complete] [--generate=above|all] [--check] [--verbose]
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
 * Search (Fig 2.10).  A task is a character subset X; the single-character subsets are dealt
 * round robin (PE p adds {c} for c = p mod P), so that no PE tests alone while the others
 * start.  Running X: (1) a subset of X in the failure store: X fails (pruned); (2) a
 * superset of X in the success store: X succeeds without a test; otherwise test it.  A
 * failure goes into the failure store -- the incompatible pair the test found, the smallest
 * failure inside X, which condemns every superset of the pair.  A success goes into the
 * success store and generates the tasks X + {c} for the characters c above X's last one (so
 * every subset is generated once), except those the failure store already condemns.  The
 * stores are per PE, so pruning depends on locality: a PE tests (and generates) supersets
 * of a pair that failed on another PE until a combine brings it the pair.  With
 * --balance=push (new tasks go to random pools) the subtrees scatter over the PEs; with
 * --balance=steal (local pools, PEs steal from random victims, --topology default complete) they
 * stay together; a PE steals while its pool holds fewer than LOW_WATER tasks, not only when it runs
 * dry, so that the subsets that need tests spread over the PEs.  Tasks carry a pointer to the
 * subset on its creator; a task run elsewhere fetches the subset from it first (the paper's
 * "fetch"), and the creator answers with a success of its store that contains the subset, if it
 * has one, which the thief adds to its own success store (phylo_search.c).
 *
 * --generate=all: a success generates every one-character superset instead (the paper's
 * "adding one character"), so a subset of k characters has k parents; a PE recognises a
 * subset generated again only when its own success store holds it.  Pushing then creates
 * 1.4-1.8x the tasks of stealing (the paper: 50-100 % more), but stealing itself explores each
 * compatible subset on about every PE, so it is not the default
 * (docs/measurements/chapter5-notes.md).
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
#include "phylo_internal.h"

#include <stdatomic.h>

/* A PE steals while its pool holds fewer tasks than this.  The stealer's default (2) keeps
 * the pools from running dry, which is all that time needs here: the stores prune about 96 %
 * of the tasks at once, so a pool of pruned tasks keeps a PE busy while the subsets that need
 * tests (a region no store of this PE knows yet) pile up in another PE's pool, and one PE
 * ran 1.3-1.7x the mean number of tests at 16 PEs.  With 32, a PE takes part of such a
 * region (thieves take the largest subtrees, see add_task) long before it would run dry.
 * Alone this gave 1.1-1.3x, for about 1.6x the tests in all (a thief's stores did not know
 * what its victim had explored); with the known success that a fetch brings and the first
 * tasks dealt round robin, 1.2-1.4x for about 1.1x the tests of before
 * (docs/measurements/chapter5-notes.md). */
#define LOW_WATER 32

phylo_params prm = {14, 50, 1, 0.12, TS_COMPLETE, false, false, false, false, false};
uint32_t charmask[MAX_CHARS];
_Thread_local pe_state S;
static _Atomic int failed;

void phylo_die(const char *what)
{
    fprintf(stderr, "phylogeny: PE %d: %s\n", mp_mype(), what);
    exit(1);
}

#define die phylo_die

/* ------------------------------------------------------------------------------------ */
/* The maximal compatible subsets, found in two steps so that PE 0 does not check every
 * success of the run alone (408 k of them at the default input: 0.12 s of serial work on PE 0,
 * more than a PE's share of the whole search at 16 PEs).
 *  1. Every PE keeps the successes of its store that no one-character superset in the same
 *     store contains (extension_maximal).  A success dropped there has a compatible strict
 *     superset, so it is not maximal; every maximal subset is a success of some PE (the
 *     search explores it) and survives there.
 *  2. PE 0 gathers the survivors and keeps those that no other survivor strictly contains
 *     (maximal_found).  A non-maximal survivor x lies in some maximal z, which survived
 *     step 1, so z removes x; a maximal one has no compatible strict superset at all.
 * With --generate=all several PEs may explore one subset, and the run reports how many
 * distinct subsets were explored: there every PE sends all of its successes, and PE 0 counts
 * them and applies step 1 to their union before step 2. */

/* The members of `set` with no one-character superset in it. */
static u64vec extension_maximal(const maskset *set)
{
    uint64_t allc = prm.chars == 64 ? ~0ull : (1ull << prm.chars) - 1;
    u64vec out = {0};
    for (size_t i = 0; i < set->cap; i++) {
        uint64_t x = set->slot[i];
        bool max = x != 0;
        for (uint64_t r = allc & ~x; r && max; r &= r - 1)
            max = !maskset_has(set, x | (r & -r));
        if (max)
            vec_push(&out, x);
    }
    return out;
}

/* Step 1 on this PE: the successes of its store with no one-character superset in it. */
static u64vec local_maximal(void)
{
    const store *st = &S.success;
    maskset mine;
    size_t cap = 1024;
    while (cap < 2 * st->nlist)
        cap *= 2;
    maskset_init(&mine, cap);
    for (size_t i = 0; i < st->nlist; i++)
        maskset_add(&mine, st->list[i]);
    u64vec out = extension_maximal(&mine);
    free(mine.slot);
    return out;
}

static void collect(void *args)
{
    comb_msg *m = args;
    for (uint32_t i = 0; i < m->n; i++)
        maskset_add(&S.all, m->mask[i]);
    if (m->last)
        mp_counter_add(S.collected, 1);
}

/* More characters first, so that a subset's strict supersets all come before it. */
static int by_size_down(const void *a, const void *b)
{
    int ka = __builtin_popcountll(*(const uint64_t *)a),
        kb = __builtin_popcountll(*(const uint64_t *)b);
    return (ka < kb) - (ka > kb);
}

/* Step 2, on PE 0: the survivors of every PE (S.all) that no other survivor strictly contains.
 * A survivor is compared with the maximal subsets kept so far only: any strict superset of it
 * among the survivors lies in a maximal one, which has more characters and came first. */
static u64vec maximal_found(void)
{
    /* step 1 over the union first: it thins the survivors a little, and with --generate=all
     * (every success sent) it is what makes step 2 short */
    u64vec out = {0}, cand = extension_maximal(&S.all);
    if (cand.n)
        qsort(cand.v, cand.n, sizeof *cand.v, by_size_down);
    for (size_t i = 0; i < cand.n; i++) {
        uint64_t x = cand.v[i];
        bool max = true;
        for (size_t j = 0; j < out.n && max; j++)
            max = (out.v[j] & x) != x; /* out.v[j] != x: S.all holds each mask once */
        if (max)
            vec_push(&out, x);
    }
    free(cand.v);
    if (out.n)
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
    o.low_water = LOW_WATER;
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
    S.finished = mp_counter_new(0);
    S.barrier = mp_counter_new(0);
    S.rounds_done = mp_counter_new(0);
    S.collected = mp_counter_new(0);
    for (int k = 0; k < MAX_STEPS; k++)
        S.step_in[k] = mp_counter_new(0);
    if (me == 0) /* (successes may arrive while PE 0 still combines) */
        maskset_init(&S.all, 1024);

    double t0 = mp_wtime();
    /* the "main" thread: the single-character subsets, dealt round robin */
    for (uint64_t c = (uint64_t)me; c < prm.chars; c += (uint64_t)npes)
        add_task(1ull << c);
    search_start();
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
    double tot[5];
    for (int i = 0; i < 5; i++) {
        bu_await(c, &cw, mp_obj_reduce(S.obj, MP_REDUCE_SUM, S.tot[i], &tot[i], c), "reduction");
    }
    /* Collect and print solutions */
    if (prm.every) {
        send_masks(0, collect, S.success.list, S.success.nlist, 0, 0);
    } else {
        u64vec survivors = local_maximal();
        send_masks(0, collect, survivors.v, survivors.n, 0, 0);
        free(survivors.v);
    }
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
        /* distinct subsets: each is explored once but with --generate=all (see above) */
        double explored = prm.every ? (double)S.all.n : tot[4];
        mp_param("successes", explored);
        mp_param("tasks", tot[0]);
        mp_param("tests", tot[1]);
        mp_param("fetches", tot[2]);
        mp_param("combine_recv", tot[3]);
        mp_param("combines", (double)S.done_rounds);
        printf("phylogeny: P=%d species=%llu chars=%llu noise=%g seed=%llu balance=%s%s%s: %zu "
               "maximal compatible subsets (largest %zu characters), %zu compatible subsets "
               "explored, %.0f tasks, %.0f tests, %.0f fetches, %u combinations, %.6f s\n",
               npes, (unsigned long long)prm.species, (unsigned long long)prm.chars, prm.noise,
               (unsigned long long)prm.seed, prm.push ? "push" : "steal",
               prm.push ? "" : " topology=", prm.push ? "" : ts_topology_name(prm.topology), got.n,
               largest, (size_t)explored, tot[0], tot[1], tot[2], S.done_rounds, solve_s);
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
    mp_counter_t cs[] = {c, d, S.finished, S.barrier, S.rounds_done, S.collected};
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
                    "                 [--topology=ring|hypercube|complete] [--generate=above|all] "
                    "[--check] [--verbose]\n");
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
        else if ((v = bu_opt(a, "--generate")) && (!strcmp(v, "all") || !strcmp(v, "above")))
            prm.every = !strcmp(v, "all");
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
