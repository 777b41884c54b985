/*
 * tripuzzle.c -- Tripuzzle: counts every solution of the triangular peg game by breadth-first
 * search over board configurations (Wen 1995, section 2.2.2.3, Fig 2.4; the study of
 * section 5.1.2).
 *
 *   tripuzzle [--rows=N] [--hole=R,C] [--sched=fifo|preempt] [--bins=B] [--check] [--verbose]
 *
 * The board is a triangle of N rows, row r (1-based) holding r holes; all holes but one
 * (row R, column C; default the middle of the 5th row, the paper's setting with N = 7) hold
 * a peg.  A move jumps a peg over a neighbouring peg (along a row, a column or a diagonal)
 * into an empty hole and removes the peg jumped over.  A solution is a sequence of moves
 * that leaves one peg.  Boards are bit masks (hole r(r-1)/2 + c - 1 is bit (r, c)).
 *
 * Every PE runs the paper's phases (Fig 2.4):
 *
 *     previous = A (holding the initial board), current = B
 *     while more than one peg is left:
 *         for every board of `previous` held by this PE and every legal move:
 *             insert the new board into `current`, unacknowledged, with the number of paths
 *             that led to the old board (a duplicate handler adds the counts up)
 *         clear this PE's part of `previous`
 *         sync `current` (every insert of the phase has taken effect on every PE)
 *         swap previous and current
 *     the solutions are the counts of the boards left, summed over all PEs.
 *
 * A and B are distributed hash tables (instrumented-lib/hashtable) keyed by the board.  The
 * search graph is a DAG whose level k holds the boards with k pegs fewer, so one table per
 * level suffices.  Boards are stored in canonical orientation -- the smallest of the 6 images
 * under the triangle's rotations and reflections -- which prunes the search about 6-fold; the
 * counts stay exact because symmetric boards have the same continuations.  Counts are 128-bit
 * (the 7-row game has more than 2^64 solutions for some holes).
 *
 * Options: --sched=preempt makes the table apply the inserts with the preemptive scheduler
 * (Wen 1995, section 5.1.2; default fifo); aggregation is the runtime's MPROF_AGG_BYTES;
 * --bins sets the bins per PE of each table (default: 2^18 bins a table over all PEs, at least
 * 1024 per PE, so that the same problem has the same table at every PE count: a fixed 2^18
 * per PE gave 16 PEs 16 times the bins of one, and their page faults and zeroed memory cost
 * more than the search at 16 PEs); --verbose prints the boards of every level.
 *
 * --check: counts the solutions again sequentially (plain arrays, no symmetry pruning, no
 * runtime) and compares; the exit status is 1 when they differ.  With --check and no other
 * option the 5-row board with its hole in the middle of the bottom row runs.  PEs:
 * MPROF_PES (default 2), or the MPI rank count under mpirun.  Run profile: MPROF_OUT.
 */
#include "bench_util.h"
#include "hashtable.h"
#include "tripuzzle_perf.h"

#include <stdatomic.h>

#define MAX_ROWS 10           /* 55 holes: a board fits in 64 bits */
#define CHUNK 64              /* boards expanded per fiber before it yields */
#define TABLE_BINS (1u << 18) /* a table's bins over all PEs, unless --bins says otherwise */
#define MIN_BINS 1024u        /* ... and at least this many per PE */

static struct {
    uint64_t rows, hole_r, hole_c, bins;
    mp_sched_t sched;
    bool check, fault, verbose;
} prm = {7, 0, 0, 0, MP_SCHED_FIFO, false, false, false}; /* bins 0: TABLE_BINS over P */

/* ------------------------------------------------------------------------------------ */
/* 128-bit path counts                                                                    */

typedef struct {
    uint64_t lo, hi;
} u128;

static inline void u128_add(u128 *a, const u128 *b)
{
    uint64_t lo = a->lo + b->lo;
    a->hi += b->hi + (lo < a->lo);
    a->lo = lo;
}

/* decimal digits of x into buf (at least 40 bytes) */
static const char *u128_str(u128 x, char *buf)
{
    char tmp[41];
    int n = 0;
    do { /* divide by 10: long division over two 32-bit halves of each word */
        uint64_t parts[4] = {x.hi >> 32, x.hi & 0xffffffffu, x.lo >> 32, x.lo & 0xffffffffu};
        uint64_t rem = 0;
        for (int i = 0; i < 4; i++) {
            uint64_t cur = (rem << 32) | parts[i];
            parts[i] = cur / 10;
            rem = cur % 10;
        }
        x.hi = (parts[0] << 32) | parts[1];
        x.lo = (parts[2] << 32) | parts[3];
        tmp[n++] = (char)('0' + rem);
    } while (x.hi || x.lo);
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = 0;
    return buf;
}

/* ------------------------------------------------------------------------------------ */
/* The board: holes, moves and symmetries (process-wide tables, read-only during the run)  */

static int nholes;
static struct {
    uint64_t need;  /* the jumping peg and the peg jumped over */
    uint64_t empty; /* the landing hole */
} moves[6 * MAX_ROWS * (MAX_ROWS + 1) / 2];
static int nmoves;
static uint64_t sym_table[6][8][256]; /* image of each byte of a board under symmetry s */

static int hole(int r, int c) { return r * (r + 1) / 2 + c; } /* 0-based row and column */

static void make_tables(int N)
{
    nholes = N * (N + 1) / 2;
    static const int dir[6][2] = {{0, 1}, {0, -1}, {1, 0}, {-1, 0}, {1, 1}, {-1, -1}};
    for (int r = 0; r < N; r++)
        for (int c = 0; c <= r; c++)
            for (int d = 0; d < 6; d++) {
                int r2 = r + 2 * dir[d][0], c2 = c + 2 * dir[d][1];
                if (r2 < 0 || r2 >= N || c2 < 0 || c2 > r2)
                    continue;
                int mid = hole(r + dir[d][0], c + dir[d][1]);
                moves[nmoves].need = (1ull << hole(r, c)) | (1ull << mid);
                moves[nmoves].empty = 1ull << hole(r2, c2);
                nmoves++;
            }
    /* the 6 symmetries permute the barycentric coordinates (c, r - c, N - 1 - r) */
    static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    int image[6][64];
    for (int s = 0; s < 6; s++)
        for (int r = 0; r < N; r++)
            for (int c = 0; c <= r; c++) {
                int b[3] = {c, r - c, N - 1 - r};
                int x = b[perm[s][0]], z = b[perm[s][2]];
                image[s][hole(r, c)] = hole(N - 1 - z, x);
            }
    for (int s = 0; s < 6; s++)
        for (int k = 0; k < 8; k++)
            for (int v = 0; v < 256; v++) {
                uint64_t out = 0;
                for (int j = 0; j < 8; j++)
                    if ((v >> j & 1) && 8 * k + j < nholes)
                        out |= 1ull << image[s][8 * k + j];
                sym_table[s][k][v] = out;
            }
}

static uint64_t canonical(uint64_t b)
{
    uint64_t best = b; /* symmetry 0 is the identity */
    for (int s = 1; s < 6; s++) {
        uint64_t x = 0;
        for (int k = 0; k < 8 && (b >> (8 * k)); k++)
            x |= sym_table[s][k][(b >> (8 * k)) & 0xff];
        if (x < best)
            best = x;
    }
    return best;
}

static uint64_t initial_board(void)
{
    uint64_t full = nholes == 64 ? ~0ull : (1ull << nholes) - 1;
    return full & ~(1ull << hole((int)prm.hole_r - 1, (int)prm.hole_c - 1));
}

/* ------------------------------------------------------------------------------------ */
/* The sequential reference (--check): every board, no symmetry, plain hash maps          */

typedef struct {
    uint64_t *key; /* 0 = empty slot (a board always has a peg) */
    u128 *val;
    size_t cap, n;
} map;

static void map_init(map *m, size_t cap)
{
    m->cap = cap;
    m->n = 0;
    m->key = calloc(cap, sizeof *m->key);
    m->val = calloc(cap, sizeof *m->val);
    if (!m->key || !m->val) {
        fprintf(stderr, "tripuzzle: out of memory for the reference\n");
        exit(1);
    }
}

static void map_add(map *m, uint64_t key, const u128 *v);

static void map_grow(map *m)
{
    map old = *m;
    map_init(m, 2 * old.cap);
    for (size_t i = 0; i < old.cap; i++)
        if (old.key[i])
            map_add(m, old.key[i], &old.val[i]);
    free(old.key);
    free(old.val);
}

static void map_add(map *m, uint64_t key, const u128 *v)
{
    if (2 * (m->n + 1) > m->cap)
        map_grow(m);
    size_t i = bu_mix64(key) & (m->cap - 1);
    while (m->key[i] && m->key[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->key[i]) {
        m->key[i] = key;
        m->n++;
    }
    u128_add(&m->val[i], v);
}

static u128 sequential_solutions(void)
{
    map cur, next;
    map_init(&cur, 1024);
    u128 one = {1, 0};
    map_add(&cur, initial_board(), &one);
    for (int pegs = nholes - 1; pegs > 1; pegs--) {
        map_init(&next, 1024);
        for (size_t i = 0; i < cur.cap; i++) {
            uint64_t b = cur.key[i];
            if (!b)
                continue;
            for (int k = 0; k < nmoves; k++)
                if ((b & moves[k].need) == moves[k].need && !(b & moves[k].empty))
                    map_add(&next, b ^ moves[k].need ^ moves[k].empty, &cur.val[i]);
        }
        free(cur.key);
        free(cur.val);
        cur = next;
    }
    u128 total = {0, 0};
    for (size_t i = 0; i < cur.cap; i++)
        if (cur.key[i])
            u128_add(&total, &cur.val[i]);
    free(cur.key);
    free(cur.val);
    return total;
}

/* ------------------------------------------------------------------------------------ */
/* The parallel search                                                                    */

typedef struct {
    ht_t prev, cur;
    mp_obj_t obj;
    tripuzzle_stats_t *st;
    mp_counter_t c;
    uint64_t waited;
    u128 solutions;         /* PE 0: the sum of the PEs' counts */
    mp_counter_t collected; /* PE 0: PEs whose count arrived */
} pe_state;

static _Thread_local pe_state S;
static _Atomic int failed;

static void await(mp_status s, const char *what) { bu_await(S.c, &S.waited, s, what); }

/* The duplicate handler: one more way to reach a board already in the table. */
static void add_paths(void *stored, const void *incoming, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    u128 in;
    memcpy(&in, incoming, sizeof in);
    u128 *s = stored;
    u128_add(s, &in);
}

typedef struct {
    ht_iter it;
    mp_counter_t done;
} expand_args;

/* Expands up to CHUNK boards of `previous`, then yields to the inserts that arrived. */
static void expand(void *args)
{
    TRIPUZZLE_ACCESS(EXPAND);
    expand_args *a = args;
    const void *key;
    void *value;
    for (int n = 0; n < CHUNK; n++) {
        if (!ht_iter_next(&a->it, &key, &value)) {
            mp_counter_add(a->done, 1);
            return;
        }
        uint64_t b;
        memcpy(&b, key, sizeof b);
        TRIPUZZLE_INC(S.st, NExpand, 1);
        for (int k = 0; k < nmoves; k++)
            if ((b & moves[k].need) == moves[k].need && !(b & moves[k].empty)) {
                uint64_t next = canonical(b ^ moves[k].need ^ moves[k].empty);
                TRIPUZZLE_INC(S.st, NMove, 1);
                if (ht_insert_unack(S.cur, &next, value) == MP_FAIL) {
                    fprintf(stderr, "tripuzzle: insert failed\n");
                    exit(1);
                }
            }
    }
    mp_fiber_enable(mp_continue(expand, MP_SCHED_FIFO));
}

static void make_table(ht_t *t)
{
    ht_options o;
    ht_options_init(&o, sizeof(uint64_t), sizeof(u128));
    o.bins_per_pe = (unsigned)prm.bins;
    o.on_duplicate = add_paths;
    o.sched = prm.sched;
    if (ht_create(&o, t) != MP_SUCCESS) {
        fprintf(stderr, "tripuzzle: cannot create a hash table\n");
        exit(1);
    }
}

/* On PE 0: one PE's share of the solutions. */
static void collect(void *args)
{
    u128 *part = args;
    u128_add(&S.solutions, part);
    mp_counter_add(S.collected, 1);
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int me = mp_mype(), npes = mp_npes();
    memset(&S, 0, sizeof S);
    S.c = mp_counter_new(0);
    S.collected = mp_counter_new(0);
    mp_obj_create(&S, &S.obj);
    S.st = tripuzzle_stats_create(S.obj);
    TRIPUZZLE_SET(S.st, P, 1);
    TRIPUZZLE_SET(S.st, Rows, prm.rows);
    make_table(&S.prev);
    make_table(&S.cur);

    double t0 = mp_wtime();
    uint64_t start = canonical(initial_board());
    u128 one = {1, 0};
    if (me == 0 && ht_insert_unack(S.prev, &start, &one) == MP_FAIL)
        exit(1);
    await(ht_sync(S.prev, S.c), "ht_sync");
    for (int pegs = nholes - 1; pegs > 1; pegs--) {
        expand_args a = {.done = S.c};
        ht_iter_init(S.prev, &a.it);
        await(mp_spawn(expand, &a, sizeof a, MP_SCHED_FIFO) ? MP_FAIL : MP_WAIT, "expand");
        ht_clear_local(S.prev);
        await(ht_sync(S.cur, S.c), "ht_sync");
        ht_t t = S.prev;
        S.prev = S.cur;
        S.cur = t;
        TRIPUZZLE_INC(S.st, Phase, 1);
        if (prm.verbose) {
            double n = 0;
            await(mp_obj_reduce(S.obj, MP_REDUCE_SUM, (double)ht_local_count(S.prev), &n, S.c),
                  "reduction");
            if (me == 0)
                printf("tripuzzle: %d pegs: %.0f boards (%.3f s)\n", pegs - 1, n, mp_wtime() - t0);
        }
    }
    u128 mine = {0, 0};
    ht_iter it;
    const void *value;
    for (ht_iter_init(S.prev, &it); ht_iter_next(&it, NULL, (void **)&value);) {
        u128 v;
        memcpy(&v, value, sizeof v);
        u128_add(&mine, &v);
    }
    if (prm.fault && me == npes - 1)
        mine.lo++;
    mp_invoke(0, collect, &mine, sizeof mine, MP_SCHED_FIFO);
    double wrong = 0;
    char buf[48], ref[48];
    if (me == 0) {
        if (mp_block_until(S.collected, (uint64_t)npes) != MP_SUCCESS)
            exit(1);
        double dt = mp_wtime() - t0;
        mp_param("search_s", dt);
        /* exact below 2^53; the study quotes it, the text output prints it exactly */
        mp_param("solutions",
                 (double)S.solutions.hi * 18446744073709551616.0 + (double)S.solutions.lo);
        printf("tripuzzle: P=%d rows=%llu hole=(%llu,%llu) sched=%s bins/PE=%llu: %s solutions, "
               "%.6f s\n",
               npes, (unsigned long long)prm.rows, (unsigned long long)prm.hole_r,
               (unsigned long long)prm.hole_c, prm.sched == MP_SCHED_PREEMPT ? "preempt" : "fifo",
               (unsigned long long)prm.bins, u128_str(S.solutions, buf), dt);
        if (prm.check) {
            u128 seq = sequential_solutions();
            wrong = seq.lo != S.solutions.lo || seq.hi != S.solutions.hi;
            printf("tripuzzle: check against the sequential search: %s (sequential: %s)\n",
                   wrong ? "FAILED" : "OK", u128_str(seq, ref));
        }
        fflush(stdout);
    }
    if (prm.check && bu_agree(S.obj, wrong) > 0)
        atomic_store(&failed, 1);
    /* both tables are quiescent after the last sync */
    await(ht_destroy(S.prev, S.c), "ht_destroy");
    await(ht_destroy(S.cur, S.c), "ht_destroy");
    mp_counter_free(S.c);
    mp_counter_free(S.collected);
}

static int usage(void)
{
    fprintf(stderr, "usage: tripuzzle [--rows=N] [--hole=R,C] [--sched=fifo|preempt] [--bins=B] "
                    "[--check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    bool any = false;
    const char *hole_arg = NULL;
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
        if ((v = bu_opt(a, "--rows")))
            ok = bu_u64("tripuzzle", "--rows", v, 3, MAX_ROWS, &prm.rows);
        else if ((v = bu_opt(a, "--hole")))
            hole_arg = v;
        else if ((v = bu_opt(a, "--bins")))
            ok = bu_u64("tripuzzle", "--bins", v, 1, 1u << 24, &prm.bins);
        else if ((v = bu_opt(a, "--sched"))) {
            if (!strcmp(v, "fifo"))
                prm.sched = MP_SCHED_FIFO;
            else if (!strcmp(v, "preempt"))
                prm.sched = MP_SCHED_PREEMPT;
            else {
                fprintf(stderr, "tripuzzle: --sched must be fifo or preempt (got '%s')\n", v);
                return 2;
            }
        } else
            return usage();
        if (!ok)
            return 2;
    }
    if (prm.check && !any)
        prm.rows = 5; /* the small built-in case: hole in the middle of the 5th (bottom) row */
    prm.hole_r = prm.rows < 5 ? prm.rows : 5;
    prm.hole_c = (prm.hole_r + 1) / 2;
    if (hole_arg) {
        unsigned r, c;
        char end;
        if (sscanf(hole_arg, "%u,%u%c", &r, &c, &end) != 2 || r < 1 || r > prm.rows || c < 1 ||
            c > r) {
            fprintf(stderr, "tripuzzle: --hole=R,C needs 1 <= C <= R <= rows (got '%s')\n",
                    hole_arg);
            return 2;
        }
        prm.hole_r = r;
        prm.hole_c = c;
    }
    make_tables((int)prm.rows);

    mp_config cfg;
    bu_config(&cfg);
    if (!prm.bins) /* the PE count of the run: MPROF_PES, or the ranks under mpirun */
        prm.bins = cfg.npes > 0 && TABLE_BINS / (unsigned)cfg.npes > MIN_BINS
                       ? TABLE_BINS / (unsigned)cfg.npes
                       : MIN_BINS;
    tripuzzle_perf_init();
    mp_param("rows", (double)prm.rows);
    mp_param("hole_r", (double)prm.hole_r);
    mp_param("hole_c", (double)prm.hole_c);
    mp_param("preempt", prm.sched == MP_SCHED_PREEMPT);
    mp_param("bins", (double)prm.bins);
    int rc = mp_main(&cfg, pe_main, argc, argv);
    if (atomic_load(&failed))
        return 1;
    return rc;
}
