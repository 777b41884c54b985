/* portable.c -- runtime checks that hold on every backend (shm threads or MPI ranks).
 *
 * Unlike tests/c/runtime, nothing here reads another PE's memory: per-PE state is
 * _Thread_local (a PE is a thread on shm, a process on MPI), remote addresses are published
 * by their owners, and once a final barrier has passed every PE prints its own results as
 * lines
 *     RESULT <scenario> pe=<p> key=value ...
 * pytest collects the lines of all PEs (on MPI, of all ranks) and compares them between the
 * shared-memory and MPI backends.  Scenarios (argv[1]):
 *   comm N     all-to-all: each PE sends N invocations of mixed classes (fast, medium, large,
 *              with payloads) to every other PE; receivers check content and per-sender order
 *   bulk       bulk read / write / store between PE p and PE p+1 (64 B, 3000 B, 1 MiB) at
 *              addresses the owner publishes, and local variants
 *   objects    20 rounds of barrier + sum / max / min reductions on several objects at once
 *   snapshot   mutator chains, a collective freeze halfway, sync at the end
 *   stress N   N pseudo-random invocations per PE (deterministic destinations and sizes);
 *              each PE prints its per-source arrival table
 * An optional third argument runs the scenario that many times, one mp_main after the other
 * (a rank that finishes a run first starts sending in the next while others still end theirs).
 */
#include "check.h"

#define PE_LOCAL static _Thread_local

static const char *scenario;
static long n_ops;
PE_LOCAL mp_obj_t final_obj;

/* Waits for the collective end of a scenario, then prints this PE's results. */
static void finish(void)
{
    mp_counter_t c = mp_counter_new(0);
    CHECK(mp_obj_barrier(final_obj, c) == MP_WAIT);
    CHECK_OK(mp_block_until(c, 1));
    mp_counter_free(c);
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

/* ------------------------------------------------------------------------------------ */
/* comm                                                                                   */

typedef struct {
    int src;
    int seq;
    int size;
    unsigned char fill[MP_FIBER_ARGS_MAX - 3 * sizeof(int)];
} msg;

#define SLOT 4096
PE_LOCAL mp_counter_t got, addrs_known;
PE_LOCAL int next_seq[MAXPE];
PE_LOCAL uint64_t comm_bytes, comm_sum;
PE_LOCAL unsigned char *store_area;        /* [P][n_ops / 10 + 1] slots: one per store */
PE_LOCAL unsigned char *peer_store[MAXPE]; /* the other PEs' store areas */

typedef struct {
    int from;
    unsigned char *addr;
} publish;

static void got_store_addr(void *p)
{
    publish *a = p;
    peer_store[a->from] = a->addr;
    mp_counter_add(addrs_known, 1);
}

static void arrive(void *p)
{
    msg *m = p;
    for (int i = 0; i < m->size - (int)(3 * sizeof(int)); i++)
        CHECK(m->fill[i] == (unsigned char)(m->seq + i));
    CHECK(m->seq == next_seq[m->src]); /* per-sender order across message classes */
    next_seq[m->src]++;
    comm_bytes += (uint64_t)m->size;
    comm_sum += mix(0xcbf29ce484222325ull, (uint64_t)m->src * 1000003u + (uint64_t)m->seq);
    mp_counter_add(got, 1);
}

static void stored(void *p)
{
    mp_store_arrival *a = p;
    int seq;
    memcpy(&seq, a->user, sizeof seq);
    CHECK(seq == next_seq[a->from]);
    next_seq[a->from]++;
    CHECK(a->dst ==
          store_area + ((size_t)a->from * (size_t)(n_ops / 10 + 1) + (size_t)seq / 10) * SLOT);
    for (size_t i = 0; i < a->n; i++)
        CHECK(((unsigned char *)a->dst)[i] == (unsigned char)(seq * 3 + (int)i));
    comm_bytes += a->n;
    comm_sum += mix(0xcbf29ce484222325ull, (uint64_t)a->from * 1000003u + (uint64_t)seq);
    mp_counter_add(got, 1);
}

static void comm_main(void)
{
    int me = mp_mype(), P = mp_npes();
    static const int sizes[] = {12, 12, 200, 1000, 0, 600, 1024, 40, 12, 900};
    memset(next_seq, 0, sizeof next_seq); /* a PE's thread may run several runs (MPI) */
    comm_bytes = comm_sum = 0;
    got = mp_counter_new(0);
    addrs_known = mp_counter_new(0);
    size_t slots = (size_t)(n_ops / 10 + 1);
    CHECK((store_area = calloc((size_t)P * slots, SLOT)) != NULL);
    publish pub = {me, store_area};
    for (int d = 0; d < P; d++)
        CHECK_OK(mp_invoke(d, got_store_addr, &pub, sizeof pub, MP_SCHED_FIFO));
    CHECK_OK(mp_block_until(addrs_known, (uint64_t)P));
    unsigned char payload[3000];
    for (int k = 1; k < P; k++) {
        int dst = (me + k) % P;
        for (int i = 0; i < n_ops; i++) {
            int size = sizes[(i * 7 + me) % 10];
            if (size == 0) {
                /* a bulk store with a payload (a large message when aggregation is small) */
                size_t n = 100 + (size_t)(i % 5) * 700;
                for (size_t j = 0; j < n; j++)
                    payload[j] = (unsigned char)(i * 3 + (int)j);
                unsigned char *at = peer_store[dst] + ((size_t)me * slots + (size_t)i / 10) * SLOT;
                CHECK(mp_bulk_store(dst, at, payload, n, NULL, stored, &i, sizeof i) == MP_OK);
                continue;
            }
            msg m;
            m.src = me, m.seq = i, m.size = size;
            for (int j = 0; j < size - (int)(3 * sizeof(int)); j++)
                m.fill[j] = (unsigned char)(i + j);
            CHECK_OK(mp_invoke(dst, arrive, &m, (size_t)size, MP_SCHED_FIFO));
        }
    }
    CHECK_OK(mp_block_until(got, (uint64_t)n_ops * (uint64_t)(P - 1)));
    finish();
    printf("RESULT comm pe=%d arrivals=%" PRIu64 " bytes=%" PRIu64 " hash=%016" PRIx64 "\n", me,
           mp_counter_value(got), comm_bytes, comm_sum);
    free(store_area);
}

/* ------------------------------------------------------------------------------------ */
/* bulk                                                                                   */

#define LARGE (1 << 20)
PE_LOCAL unsigned char *area; /* this PE's: source | write target | store target */
PE_LOCAL unsigned char *peer_area;
PE_LOCAL mp_counter_t addr_known;
PE_LOCAL uint64_t bulk_hash;

static unsigned char pat(int pe, size_t i) { return (unsigned char)(i * 31 + (size_t)pe * 7 + 1); }

typedef struct {
    int requester;
} addr_req;
typedef struct {
    unsigned char *addr;
} addr_rep;

static void addr_reply(void *p)
{
    peer_area = ((addr_rep *)p)->addr;
    mp_counter_add(addr_known, 1);
}

static void addr_serve(void *p)
{
    addr_rep r = {area};
    CHECK_OK(mp_invoke(((addr_req *)p)->requester, addr_reply, &r, sizeof r, MP_SCHED_FIFO));
}

typedef struct {
    size_t n;
    int from;
    mp_counter_t back;
} verify_args;

static void verify_written(void *p)
{
    verify_args *v = p;
    uint64_t h = 0;
    for (size_t i = 0; i < v->n; i++) {
        CHECK(area[LARGE + i] == pat(v->from, i));
        h = mix(h, area[LARGE + i]);
    }
    bulk_hash = mix(bulk_hash, h);
    CHECK_OK(mp_counter_add_remote(v->from, v->back, 1));
}

static void on_store(void *p)
{
    mp_store_arrival *a = p;
    mp_counter_t back;
    memcpy(&back, a->user, sizeof back);
    CHECK(a->dst == area + 2 * LARGE);
    for (size_t i = 0; i < a->n; i++)
        CHECK(((unsigned char *)a->dst)[i] == pat(a->from, i));
    bulk_hash = mix(bulk_hash, a->n);
    CHECK_OK(mp_counter_add_remote(a->from, back, 1));
}

static void transfer(int peer, size_t n)
{
    int me = mp_mype();
    mp_counter_t c = mp_counter_new(0), back = mp_counter_new(0);
    unsigned char *dst = malloc(n ? n : 1);
    CHECK(dst);
    CHECK(mp_bulk_read(peer, peer_area, dst, n, c) == (peer == me ? MP_OK : MP_WAIT));
    CHECK_OK(mp_block_until(c, 1));
    for (size_t i = 0; i < n; i++)
        CHECK(dst[i] == pat(peer, i));
    CHECK(mp_bulk_write(peer, peer_area + LARGE, area, n, c) == (peer == me ? MP_OK : MP_WAIT));
    CHECK_OK(mp_block_until(c, 2));
    verify_args v = {n, me, back};
    CHECK_OK(mp_invoke(peer, verify_written, &v, sizeof v, MP_SCHED_FIFO));
    CHECK_OK(mp_block_until(back, 1));
    CHECK(mp_bulk_store(peer, peer_area + 2 * LARGE, area, n, NULL, on_store, &back, sizeof back) ==
          MP_OK);
    CHECK_OK(mp_block_until(back, 2));
    free(dst);
    mp_counter_free(c);
    mp_counter_free(back);
}

static void bulk_main(void)
{
    int me = mp_mype(), P = mp_npes();
    CHECK((area = calloc(3, LARGE)) != NULL);
    for (size_t i = 0; i < LARGE; i++)
        area[i] = pat(me, i);
    finish(); /* every area is initialised before anyone reads */
    for (int round = 0; round < 2; round++) {
        int peer = round == 0 ? (me + 1) % P : me; /* remote, then local */
        addr_known = mp_counter_new(0);
        addr_req r = {me};
        CHECK_OK(mp_invoke(peer, addr_serve, &r, sizeof r, MP_SCHED_FIFO));
        CHECK_OK(mp_block_until(addr_known, 1));
        mp_counter_free(addr_known);
        transfer(peer, 64);
        transfer(peer, 3000);
        transfer(peer, LARGE);
        finish(); /* the peer's checks are done before the next round overwrites */
    }
    printf("RESULT bulk pe=%d hash=%016" PRIx64 "\n", me, bulk_hash);
    free(area);
}

/* ------------------------------------------------------------------------------------ */
/* objects                                                                                */

static void objects_main(void)
{
    int me = mp_mype(), P = mp_npes();
    PE_LOCAL int part[3];
    mp_obj_t a, b;
    CHECK_OK(mp_obj_create(&part[0], &a));
    CHECK_OK(mp_obj_create(&part[1], &b));
    CHECK_OK(mp_obj_create_named(MP_OBJ_USER_FIRST + 5, &part[2]));
    mp_counter_t c = mp_counter_new(0);
    uint64_t target = 0;
    double acc = 0;
    for (int r = 0; r < 20; r++) {
        CHECK(mp_obj_barrier(r % 2 ? a : b, c) == MP_WAIT);
        CHECK_OK(mp_block_until(c, ++target));
        double sum = -1, max = -1, min = -1;
        CHECK(mp_obj_reduce(a, MP_REDUCE_SUM, me + r, &sum, c) != MP_FAIL);
        CHECK(mp_obj_reduce(b, MP_REDUCE_MAX, 10.0 * me - r, &max, c) != MP_FAIL);
        CHECK(mp_obj_reduce(MP_OBJ_USER_FIRST + 5, MP_REDUCE_MIN, 3.5 + me - r, &min, c) !=
              MP_FAIL);
        target += 3;
        CHECK_OK(mp_block_until(c, target));
        CHECK(sum == (double)P * (P - 1) / 2 + (double)P * r);
        CHECK(max == 10.0 * (P - 1) - r);
        CHECK(min == 3.5 - r);
        acc += sum + max + min;
    }
    mp_counter_free(c);
    finish();
    printf("RESULT objects pe=%d ids=%u,%u acc=%.1f\n", me, a, b, acc);
}

/* ------------------------------------------------------------------------------------ */
/* snapshot                                                                               */

#define M_MUT 300
PE_LOCAL mp_snapshot_t snap;
PE_LOCAL int executed, applied, suspended, frozen_checks, synced;
PE_LOCAL mp_counter_t snap_done;

static void apply(void *p)
{
    int from = *(int *)p;
    applied++;
    mp_snapshot_complete(snap, from);
}

static void frozen(void *p)
{
    (void)p;
    CHECK(mp_snapshot_query(snap) == MP_WAIT);
    frozen_checks++;
    mp_snapshot_unfreeze(snap);
    CHECK(mp_snapshot_query(snap) == MP_OK);
}

static void synced_fn(void *p)
{
    (void)p;
    synced++;
    mp_counter_add(snap_done, 1);
}

typedef struct {
    int n;
} chain;

static void mutator(void *p)
{
    chain *a = p;
    int me = mp_mype(), P = mp_npes();
    if (mp_snapshot_query(snap) == MP_WAIT) {
        suspended++;
        CHECK_OK(mp_snapshot_suspend(snap, mp_continue(mutator, MP_SCHED_FIFO)));
        return;
    }
    mp_snapshot_execute(snap);
    executed++;
    CHECK_OK(mp_invoke((me + 1 + a->n) % P, apply, &me, sizeof me, MP_SCHED_FIFO));
    a->n++;
    if (a->n == M_MUT / 2) {
        mp_counter_t fd = mp_counter_new(0);
        CHECK_OK(mp_counter_wait(fd, 1, mp_fiber_create(frozen, NULL, 0, MP_SCHED_FIFO)));
        CHECK(mp_snapshot_freeze(snap, fd) == MP_WAIT);
    }
    if (a->n == M_MUT) {
        mp_counter_t sd = mp_counter_new(0);
        CHECK_OK(mp_counter_wait(sd, 1, mp_fiber_create(synced_fn, NULL, 0, MP_SCHED_FIFO)));
        CHECK(mp_snapshot_sync(snap, sd) == MP_WAIT);
        return;
    }
    CHECK_OK(mp_fiber_enable(mp_continue(mutator, MP_SCHED_FIFO)));
}

static void snapshot_main(void)
{
    CHECK_OK(mp_snapshot_new(&snap));
    snap_done = mp_counter_new(0);
    chain c = {0};
    CHECK_OK(mp_spawn(mutator, &c, sizeof c, MP_SCHED_FIFO));
    CHECK_OK(mp_block_until(snap_done, 1));
    finish();
    CHECK(frozen_checks == 1 && synced == 1 && executed == M_MUT);
    printf("RESULT snapshot pe=%d executed=%d applied=%d frozen=%d synced=%d\n", mp_mype(),
           executed, applied, frozen_checks, synced);
}

/* ------------------------------------------------------------------------------------ */
/* stress                                                                                 */

typedef struct {
    uint64_t n, bytes;
} tally;
PE_LOCAL tally recvd[MAXPE];
PE_LOCAL mp_counter_t dones;

typedef struct {
    int src;
    int size;
    unsigned char pad[MP_FIBER_ARGS_MAX - 2 * sizeof(int)];
} op_msg;

static void op_arrive(void *p)
{
    op_msg *m = p;
    recvd[m->src].n++;
    recvd[m->src].bytes += (uint64_t)m->size;
}

static void sender_done(void *p)
{
    (void)p;
    mp_counter_add(dones, 1); /* after all the sender's operations: per-sender order */
}

typedef struct {
    uint64_t rng;
    long left;
} stress_state;

static void stress_fiber(void *p)
{
    stress_state *s = p;
    int me = mp_mype(), P = mp_npes();
    for (int k = 0; k < 64 && s->left > 0; k++, s->left--) {
        s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
        int dst = (int)((s->rng >> 33) % (uint64_t)P);
        int size = (int)(8 + (s->rng >> 20) % 300);
        op_msg m;
        m.src = me, m.size = size;
        CHECK_OK(mp_invoke(dst, op_arrive, &m, (size_t)size, MP_SCHED_FIFO));
    }
    if (s->left > 0) {
        CHECK_OK(mp_fiber_enable(mp_continue(stress_fiber, MP_SCHED_FIFO)));
        return;
    }
    for (int d = 0; d < P; d++)
        CHECK_OK(mp_invoke(d, sender_done, NULL, 0, MP_SCHED_FIFO));
}

static void stress_main(void)
{
    int me = mp_mype(), P = mp_npes();
    dones = mp_counter_new(0);
    stress_state s = {(uint64_t)me * 7919u + 17u, n_ops};
    CHECK_OK(mp_spawn(stress_fiber, &s, sizeof s, MP_SCHED_FIFO));
    CHECK_OK(mp_block_until(dones, (uint64_t)P));
    finish();
    for (int src = 0; src < P; src++)
        printf("RESULT stress pe=%d from=%d n=%" PRIu64 " bytes=%" PRIu64 "\n", me, src,
               recvd[src].n, recvd[src].bytes);
}

/* ------------------------------------------------------------------------------------ */

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    CHECK(mp_npes() <= MAXPE);
    CHECK_OK(mp_obj_create(NULL, &final_obj));
    if (!strcmp(scenario, "comm"))
        comm_main();
    else if (!strcmp(scenario, "bulk"))
        bulk_main();
    else if (!strcmp(scenario, "objects"))
        objects_main();
    else if (!strcmp(scenario, "snapshot"))
        snapshot_main();
    else if (!strcmp(scenario, "stress"))
        stress_main();
    else
        CHECK(!"unknown scenario");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    scenario = argc > 1 ? argv[1] : "comm";
    n_ops = argc > 2 ? atol(argv[2]) : 200;
    int runs = argc > 3 ? atoi(argv[3]) : 1;
    mp_config cfg;
    mp_config_init(&cfg);
    for (int r = 0; r < runs; r++) {
        int rc = mp_main(&cfg, pe_main, argc, argv);
        if (rc != 0)
            return rc;
    }
    return 0;
}
