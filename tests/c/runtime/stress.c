/* stress.c -- argv[1] (default 10^6) remote invocations all-to-all among P PEs (default 4)
 * with varying sizes: fast (<= 16 bytes with MPROF_SMALL_BYTES=16), medium (aggregated) and
 * large (> MPROF_AGG_BYTES, plus 8 KiB bulk stores).  Every arrival verifies its bytes and
 * counts per source; the program prints a table of sent / received invocations and bytes per
 * PE pair and fails on any mismatch or any out-of-order arrival. */
#include "check.h"

#define BATCH 64
#define STORE_BYTES 8192

typedef struct {
    int src;
    uint32_t seq; /* per (src, dst) pair */
    uint32_t size;
    unsigned char fill[MP_FIBER_ARGS_MAX - 12];
} inv;

typedef struct {
    uint64_t n, bytes;
} tally;

static long total_ops = 1000000;
static tally sent[MAXPE][MAXPE], recvd[MAXPE][MAXPE]; /* [me][peer]: written by PE me only */
static uint32_t next_seq[MAXPE][MAXPE];               /* [dst][src]: expected, on dst */
static uint32_t send_seq[MAXPE][MAXPE];               /* [src][dst]: on src */
static long disorder[MAXPE];
static unsigned char *store_area[MAXPE]; /* [dst]: STORE_BYTES per source */
static unsigned char store_src[MAXPE][STORE_BYTES];

static void arrive(void *p)
{
    inv *m = p;
    int me = mp_mype();
    size_t body = m->size - 12;
    for (size_t i = 0; i < body; i++)
        CHECK_EQ(m->fill[i], (unsigned char)(m->seq + i));
    if (m->seq != next_seq[me][m->src])
        disorder[me]++;
    next_seq[me][m->src] = m->seq + 1;
    recvd[me][m->src].n++;
    recvd[me][m->src].bytes += m->size;
}

static void stored(void *p)
{
    mp_store_arrival *a = p;
    int me = mp_mype();
    for (size_t i = 0; i < a->n; i += 61)
        CHECK_EQ(((unsigned char *)a->dst)[i], (unsigned char)(a->from * 13 + i));
    recvd[me][a->from].n++;
    recvd[me][a->from].bytes += a->n;
}

typedef struct {
    long done, quota;
    uint64_t rng;
} gen;

static uint32_t next_rand(gen *g)
{
    g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g->rng >> 33);
}

static void generator(void *p)
{
    gen *g = p;
    int me = mp_mype(), P = mp_npes();
    inv m;
    m.src = me;
    for (int b = 0; b < BATCH && g->done < g->quota; b++, g->done++) {
        uint32_t r = next_rand(g);
        int dst = (me + 1 + (int)(g->done % (P - 1))) % P;
        if (r % 1000 == 0) { /* a large bulk store */
            mp_counter_t fr = mp_counter_new(0);
            CHECK_EQ(mp_bulk_store(dst, store_area[dst] + (size_t)me * STORE_BYTES, store_src[me],
                                   STORE_BYTES, fr, stored, NULL, 0),
                     MP_OK);
            CHECK_EQ(mp_counter_value(fr), 1);
            mp_counter_free(fr);
            sent[me][dst].n++;
            sent[me][dst].bytes += STORE_BYTES;
            continue;
        }
        uint32_t k = r % 100, size;
        if (k < 60)
            size = 12 + (r >> 8) % 5; /* fast: 12..16 */
        else if (k < 95)
            size = 17 + (r >> 8) % 684; /* medium: 17..700 */
        else
            size = 1000 + (r >> 8) % 25; /* large: 1000..1024 */
        m.seq = send_seq[me][dst]++;
        m.size = size;
        for (size_t i = 0; i < size - 12; i++)
            m.fill[i] = (unsigned char)(m.seq + i);
        CHECK_OK(mp_invoke(dst, arrive, &m, size, MP_SCHED_FIFO));
        sent[me][dst].n++;
        sent[me][dst].bytes += size;
    }
    if (g->done < g->quota)
        CHECK_OK(mp_fiber_enable(mp_continue(generator, MP_SCHED_FIFO)));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype(), P = mp_npes();
    CHECK(P >= 2 && P <= MAXPE);
    for (size_t i = 0; i < STORE_BYTES; i++)
        store_src[me][i] = (unsigned char)(me * 13 + i);
    gen g = {0, total_ops / P + (me < total_ops % P), 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1)};
    CHECK_OK(mp_spawn(generator, &g, sizeof g, MP_SCHED_FIFO));
}

int main(int argc, char **argv)
{
    if (argc > 1)
        total_ops = atol(argv[1]);
    for (int i = 0; i < MAXPE; i++)
        CHECK((store_area[i] = calloc(MAXPE, STORE_BYTES)) != NULL);
    double t0 = mp_wtime();
    int rc = tst_run(argc, argv, 4, pe_main);
    double wall = mp_wtime() - t0;
    if (rc)
        return rc;
    int P = mp_npes(), bad = 0;
    long ops = 0;
    printf("%4s %4s %10s %10s %12s %12s\n", "src", "dst", "sent", "received", "sent_bytes",
           "recv_bytes");
    for (int s = 0; s < P; s++)
        for (int d = 0; d < P; d++) {
            tally a = sent[s][d], b = recvd[d][s];
            ops += (long)a.n;
            printf("%4d %4d %10" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64 "%s\n", s, d, a.n,
                   b.n, a.bytes, b.bytes, a.n != b.n || a.bytes != b.bytes ? "  MISMATCH" : "");
            bad |= a.n != b.n || a.bytes != b.bytes;
        }
    long dis = 0;
    for (int i = 0; i < P; i++)
        dis += disorder[i];
    printf("total=%ld out_of_order=%ld wall=%.3f\n", ops, dis, wall);
    for (int i = 0; i < MAXPE; i++)
        free(store_area[i]);
    CHECK_EQ(ops, total_ops);
    CHECK(!bad);
    return 0;
}
