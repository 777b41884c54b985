/* bg_test.c -- the bipartite graph on P PEs with a deterministic EM3D-like graph.
 *
 *   bg_test [n=NODES_PER_PE] [d=DEGREE] [span=MAX_PE_DISTANCE] [steps=T] [size=STATE_BYTES]
 *           [chunk=BYTES] [order=0|1] [reserve=0|1]
 *   bg_test misuse CASE      misuse is reported on stderr and refused (see misuse() below;
 *                            the cases that end the run say so)
 *
 * Node (p, i) has colour i & 1 and d edges into it; edge e comes from PE p + dq (|dq| <=
 * span, mod P), node index of the other colour, all picked by splitmix64 of (p, i, e) --
 * tests/lib/test_bipartite.py replays the same generator to predict the statistics.
 * States are two doubles, f(id, s) = (id mod 1000003 + s / 2, s).  Step s updates the red
 * nodes to f(., s) (checking every black source reads f(., s - 1)), validates red, updates
 * black (checking red sources read f(., s)), validates black.  After every validate each
 * ghost of that colour must equal its owner's state.  size= makes states larger (the pair is
 * then at both ends of the state, and the bytes between are zero); chunk= sets the library's
 * chunk limit (bg_internal.h), so that transfers go in chunks of a few states. */
#include "bipartite.h"
#include "bipartite_perf.h"
#include "check.h"

#include <stdint.h>

static long NN = 200, DEG = 6, SPAN = 2, STEPS = 3, SIZE = 16;
/* order=1 adds the edges edge-major (every node's first edge, then every node's second ...),
 * not node by node: finalize must then lay them out by destination */
static long ORDER = 0;
/* reserve=1 makes room for every node and edge before adding them (bg_reserve) */
static long RESERVE = 0;
/* the library's chunk limit, for tests (declared in its internal header) */
extern size_t bgi_chunk_limit;
static bg_t gs[MAXPE];
static mp_counter_t cnt[MAXPE];
static mp_obj_t barrier_obj[MAXPE];
static uint64_t waited[MAXPE];
static long checked_edges[MAXPE], checked_ghosts[MAXPE];

typedef struct {
    double v, s;
} state;

static uint64_t mix64(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static state f(bg_node_id id, int s)
{
    return (state){(double)(id % 1000003) + s * 0.5, (double)s};
}

/* A state of SIZE bytes holding s at its start and (when there is room) at its end. */
static void put_state(void *dst, state s)
{
    memset(dst, 0, (size_t)SIZE);
    memcpy(dst, &s, sizeof s);
    if (SIZE >= 2 * (long)sizeof s)
        memcpy((char *)dst + SIZE - sizeof s, &s, sizeof s);
}

static state get_state(const void *src)
{
    state s, end;
    memcpy(&s, src, sizeof s);
    if (SIZE >= 2 * (long)sizeof s) {
        memcpy(&end, (const char *)src + SIZE - sizeof s, sizeof s);
        CHECK(end.v == s.v && end.s == s.s);
        for (long b = sizeof s; b < SIZE - (long)sizeof s; b++)
            CHECK(((const char *)src)[b] == 0);
    }
    return s;
}

static void wait_more(uint64_t n)
{
    int me = mp_mype();
    waited[me] += n;
    CHECK_EQ(mp_block_until(cnt[me], waited[me]), MP_SUCCESS);
}

typedef struct {
    int step;
} upd_ctx;

static void update(bg_t g, bg_node *v, void *ctx)
{
    (void)g;
    int s = ((upd_ctx *)ctx)->step;
    /* sources have the other colour: black sources were last set in step s-1, red in s */
    int expect = v->color == BG_RED ? s - 1 : s;
    size_t remote = 0;
    for (size_t e = 0; e < v->nedges; e++) {
        state got = get_state(v->edges[e].src_state);
        state want = f(v->srcs[e], expect);
        CHECK(got.v == want.v && got.s == want.s);
        remote += BG_OWNER(v->srcs[e]) != mp_mype();
        checked_edges[mp_mype()]++;
    }
    CHECK_EQ(v->nremote, remote);
    put_state(v->state, f(v->id, s));
}

/* Every ghost of colour c equals its owner's current state, which update() set to
 * f(id, step) (the owners check their own nodes through the sources they read). */
static void check_ghosts(bg_t g, int c, int step)
{
    int me = mp_mype();
    for (int q = 0; q < mp_npes(); q++) {
        if (q == me)
            continue;
        for (long i = c; i < NN; i += 2) {
            bg_node_id id = BG_ID(q, i);
            const void *gh = bg_read(g, id);
            if (!gh)
                continue; /* not a ghost here */
            state got = get_state(gh), want = f(id, step);
            if (!(got.v == want.v && got.s == want.s))
                fprintf(stderr, "ghost %d:%ld colour %d step %d: (%g, %g) != (%g, %g)\n", q, i, c,
                        step, got.v, got.s, want.v, want.s);
            CHECK(got.v == want.v && got.s == want.s);
            checked_ghosts[me]++;
        }
    }
}

/* ---- misuse ------------------------------------------------------------------------ */

static const char *misuse_case;

/* State sizes whose node arrays cannot be sized (ncap * state_size wrapped around) or whose
 * states cannot travel are refused at creation. */
static void misuse_sizes(void)
{
    bg_t g = 12345;
    CHECK_EQ(bg_create(0, &g), MP_ERR_INVALID_ARG);
    CHECK_EQ(bg_create(((size_t)1 << 56) + 1, &g), MP_ERR_TOO_LARGE);
    CHECK_EQ(bg_create(SIZE_MAX, &g), MP_ERR_TOO_LARGE);
    CHECK_EQ(bg_create(mp_max_message() + 1, &g), MP_ERR_TOO_LARGE);
    /* a state and its colour's padded field must fit one message */
    CHECK_EQ(bg_create(mp_max_message() - 15, &g), MP_ERR_TOO_LARGE);
    CHECK_EQ(g, 12345); /* nothing written */
    CHECK_OK(bg_create(sizeof(state), &g));
    for (long i = 0; i < 300; i++) /* past the first growth of the node arrays */
        CHECK_EQ(bg_add_node(g, (bg_color)(i & 1), NULL), BG_ID(mp_mype(), i));
    /* reservations beyond a PE's node ids or the address space are refused, others kept */
    CHECK_EQ(bg_reserve(g, (size_t)UINT32_MAX + 2, 0), MP_ERR_TOO_LARGE);
    CHECK_EQ(bg_reserve(g, 0, SIZE_MAX / 8), MP_ERR_TOO_LARGE);
    CHECK_OK(bg_reserve(g, 1000, 4000));
    CHECK_OK(bg_reserve(g, 10, 10)); /* never shrinks */
    for (long i = 300; i < 1000; i++)
        CHECK_EQ(bg_add_node(g, (bg_color)(i & 1), NULL), BG_ID(mp_mype(), i));
    CHECK_EQ(bg_finalize(g, cnt[mp_mype()]), MP_WAIT);
    wait_more(1);
    CHECK_EQ(bg_local_count(g, BG_RED) + bg_local_count(g, BG_BLACK), 1000u);
    CHECK_EQ(bg_reserve(g, 2000, 0), MP_ERR_INVALID_ARG); /* finalized */
    CHECK_EQ(bg_destroy(g, cnt[mp_mype()]), MP_WAIT);
    wait_more(1);
}

/* Ids of other objects (a snapshot, a plain object) are no graphs: refused by the calls that
 * return an error, and bg_add_node (which cannot) ends the run. */
static void misuse_kind(void)
{
    mp_obj_t ids[3];
    tst_foreign_ids(ids);
    mp_counter_t c = cnt[mp_mype()];
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(bg_add_edge(ids[i], BG_ID(0, 0), BG_ID(0, 1), 1.0), MP_ERR_INVALID_ARG);
        CHECK_EQ(bg_reserve(ids[i], 1, 1), MP_ERR_INVALID_ARG);
        CHECK_EQ(bg_finalize(ids[i], c), MP_FAIL);
        CHECK_EQ(bg_validate(ids[i], BG_RED, c), MP_FAIL);
        CHECK_EQ(bg_update(ids[i], BG_RED, update, NULL, c), MP_FAIL);
        CHECK_EQ(bg_destroy(ids[i], c), MP_FAIL);
    }
    CHECK_EQ(mp_counter_value(c), 0);
    printf("misuse kind: OK (PE %d)\n", mp_mype());
    if (strcmp(misuse_case, "kind_node") == 0)
        bg_add_node(ids[0], BG_RED, NULL); /* ends the run */
}

/* A colour that is neither BG_RED nor BG_BLACK: bg_local_count masked it and counted the
 * other colour; it now ends the run (the call has no error value). */
static void misuse_colour(void)
{
    bg_t g;
    CHECK_OK(bg_create(8, &g));
    printf("count %zu\n", bg_local_count(g, (bg_color)7));
}

/* An iterator of a graph destroyed since it was set up: its next step read the freed
 * partition; now it ends the run. */
static void misuse_iter_destroyed(void)
{
    bg_t g;
    int me = mp_mype();
    CHECK_OK(bg_create(8, &g));
    for (int i = 0; i < 4; i++)
        bg_add_node(g, (bg_color)(i & 1), NULL);
    CHECK_EQ(bg_finalize(g, cnt[me]), MP_WAIT);
    wait_more(1);
    bg_iter it;
    bg_node v;
    bg_iter_init(g, BG_RED, &it);
    CHECK(bg_iter_next(&it, &v));
    CHECK_EQ(bg_destroy(g, cnt[me]), MP_WAIT);
    wait_more(1);
    bg_iter_next(&it, &v);
    printf("misuse iter: iteration went on (PE %d)\n", me);
}

/* bg_create is collective with one state size: PE 0's is 8 bytes, the others' 64.  The
 * owners answered subscriptions with their own size into buffers sized for the subscriber's
 * (a heap overrun); now the owner ends the run.  Every PE's red node 0 has an edge from the
 * next PE's black node 1. */
static void misuse_sizes_differ(void)
{
    int me = mp_mype(), P = mp_npes();
    bg_t g;
    CHECK_OK(bg_create(me == 0 ? 8 : 64, &g));
    bg_add_node(g, BG_RED, NULL);
    bg_add_node(g, BG_BLACK, NULL);
    CHECK_OK(bg_add_edge(g, BG_ID(me, 0), BG_ID((me + 1) % P, 1), 1.0));
    CHECK_EQ(bg_finalize(g, cnt[me]), MP_WAIT);
    wait_more(1);
    printf("misuse sizes_differ: finalized (PE %d)\n", me);
}

/* One validate at a time: a second one (of either colour), or a destroy, while the first runs
 * is refused (the second's barrier was refused and its counter never reached); so is a second
 * destroy. */
static void misuse_overlap(void)
{
    int me = mp_mype();
    bg_t g;
    CHECK_OK(bg_create(8, &g));
    bg_add_node(g, BG_RED, NULL);
    bg_add_node(g, BG_BLACK, NULL);
    CHECK_EQ(bg_finalize(g, cnt[me]), MP_WAIT);
    wait_more(1);
    CHECK_EQ(bg_validate(g, BG_RED, cnt[me]), MP_WAIT);
    printf("validate_again %d\n", bg_validate(g, BG_BLACK, cnt[me]));
    printf("destroy_while_validating %d\n", bg_destroy(g, cnt[me]));
    wait_more(1);
    CHECK_EQ(bg_validate(g, BG_BLACK, cnt[me]), MP_WAIT); /* after it: fine */
    wait_more(1);
    CHECK_EQ(bg_destroy(g, cnt[me]), MP_WAIT);
    printf("destroy_again %d\n", bg_destroy(g, cnt[me]));
    wait_more(1);
    printf("misuse overlap: OK (PE %d)\n", me);
}

static void misuse(void)
{
    if (strcmp(misuse_case, "sizes_differ") == 0)
        misuse_sizes_differ();
    else if (strcmp(misuse_case, "overlap") == 0)
        misuse_overlap();
    else if (strcmp(misuse_case, "colour") == 0)
        misuse_colour();
    else if (strcmp(misuse_case, "iter_destroyed") == 0)
        misuse_iter_destroyed();
    else if (strcmp(misuse_case, "sizes") == 0)
        misuse_sizes();
    else if (strncmp(misuse_case, "kind", 4) == 0)
        misuse_kind();
    else
        CHECK(!"unknown misuse case");
}

/* Edge e into node i of PE me: its weight, and its source in *src. */
static double gen_edge(int me, int P, long i, long e, bg_node_id *src)
{
    uint64_t h = mix64(((uint64_t)me << 40) ^ ((uint64_t)i << 8) ^ (uint64_t)e);
    long dq = (long)(h % (uint64_t)(2 * SPAN + 1)) - SPAN;
    int q = (int)(((me + dq) % P + P) % P);
    long j = 2 * (long)((h >> 20) % (uint64_t)(NN / 2)) + (1 - (i & 1));
    *src = BG_ID(q, j);
    return (double)((h >> 40) % 1000) / 1000.0;
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype(), P = mp_npes();
    if (misuse_case) {
        cnt[me] = mp_counter_new(0);
        misuse();
        mp_counter_free(cnt[me]);
        return;
    }
    cnt[me] = mp_counter_new(0);
    CHECK_EQ(bg_create((size_t)SIZE, &gs[me]), MP_SUCCESS);
    void *s0 = calloc(1, (size_t)SIZE);
    CHECK(s0 != NULL);
    CHECK_EQ(mp_obj_create(NULL, &barrier_obj[me]), MP_SUCCESS);
    bg_t g = gs[me];
    if (RESERVE) /* the arrays made once, at their final size */
        CHECK_OK(bg_reserve(g, (size_t)NN, (size_t)(NN * DEG)));
    for (long i = 0; i < NN; i++) {
        put_state(s0, f(BG_ID(me, i), 0));
        CHECK_EQ(bg_add_node(g, (bg_color)(i & 1), s0), BG_ID(me, i));
    }
    free(s0);
    for (long a = 0; a < NN * DEG; a++) {
        long i = ORDER ? a % NN : a / DEG, e = ORDER ? a / NN : a % DEG;
        bg_node_id src;
        double w = gen_edge(me, P, i, e, &src);
        CHECK_EQ(bg_add_edge(g, BG_ID(me, i), src, w), MP_SUCCESS);
    }
    /* an edge between two nodes of one colour is refused */
    if (NN >= 3)
        CHECK(bg_add_edge(g, BG_ID(me, 0), BG_ID(me, 2), 1.0) != MP_SUCCESS);
    CHECK_EQ(bg_finalize(g, cnt[me]), MP_WAIT);
    wait_more(1);
    CHECK_EQ(bg_local_count(g, BG_RED) + bg_local_count(g, BG_BLACK), (size_t)NN);
    check_ghosts(g, BG_RED, 0);
    check_ghosts(g, BG_BLACK, 0);
    /* nobody may validate red before every PE has checked its red ghosts */
    CHECK_EQ(mp_obj_barrier(barrier_obj[me], cnt[me]), MP_WAIT);
    wait_more(1);
    /* iterators cover the local nodes of a colour once each */
    for (int c = 0; c < 2; c++) {
        bg_iter it;
        bg_node v;
        long k = 0;
        bg_iter_init(g, (bg_color)c, &it);
        while (bg_iter_next(&it, &v)) {
            CHECK_EQ(v.id, BG_ID(me, 2 * k + c));
            CHECK_EQ(v.color, c);
            CHECK_EQ(v.nedges, (size_t)DEG);
            /* a node's edges in the order they were added, each with its weight */
            for (long e = 0; e < DEG; e++) {
                bg_node_id src;
                double w = gen_edge(me, P, 2 * k + c, e, &src);
                CHECK_EQ(v.srcs[e], src);
                CHECK(v.edges[e].weight == w);
            }
            k++;
        }
        CHECK_EQ(k, (long)bg_local_count(g, (bg_color)c));
    }
    upd_ctx ctx;
    for (int s = 1; s <= STEPS; s++) {
        ctx.step = s;
        for (int c = 0; c < 2; c++) {
            CHECK_EQ(bg_update(g, (bg_color)c, update, &ctx, cnt[me]), MP_WAIT);
            wait_more(1);
            CHECK_EQ(bg_validate(g, (bg_color)c, cnt[me]), MP_WAIT);
            wait_more(1);
            check_ghosts(g, c, s);
        }
    }
    /* destroy: collective; afterwards the object is gone on this PE */
    CHECK_EQ(bg_destroy(g, cnt[me]), MP_WAIT);
    CHECK_EQ(mp_obj_destroy(barrier_obj[me], cnt[me]), MP_WAIT);
    wait_more(2);
    CHECK(mp_obj_local(g) == NULL && mp_obj_local(barrier_obj[me]) == NULL);
    mp_counter_free(cnt[me]);
}

int main(int argc, char **argv)
{
    NN = tst_opt(argc, argv, "n", NN);
    DEG = tst_opt(argc, argv, "d", DEG);
    SPAN = tst_opt(argc, argv, "span", SPAN);
    STEPS = tst_opt(argc, argv, "steps", STEPS);
    ORDER = tst_opt(argc, argv, "order", ORDER);
    RESERVE = tst_opt(argc, argv, "reserve", RESERVE);
    SIZE = tst_opt(argc, argv, "size", SIZE);
    bgi_chunk_limit = (size_t)tst_opt(argc, argv, "chunk", 0);
    if (NN < 2 || NN % 2 || SIZE < (long)sizeof(state)) {
        fprintf(stderr, "n must be even and >= 2, size at least %zu\n", sizeof(state));
        return 2;
    }
    bipartite_perf_init();
    if (argc > 2 && strcmp(argv[1], "misuse") == 0)
        misuse_case = argv[2];
    int rc = tst_run(argc, argv, 4, pe_main);
    if (rc)
        return rc;
    if (misuse_case) {
        printf("bipartite misuse %s: OK (P=%d)\n", misuse_case, mp_npes());
        return 0;
    }
    long edges = 0, ghosts = 0;
    for (int i = 0; i < mp_npes(); i++)
        edges += checked_edges[i], ghosts += checked_ghosts[i];
    CHECK_EQ(edges, (long)mp_npes() * NN * DEG * STEPS);
    printf("bipartite: OK (P=%d n=%ld d=%ld span=%ld steps=%ld, %ld ghost checks)\n", mp_npes(), NN,
           DEG, SPAN, STEPS, ghosts);
    return 0;
}
