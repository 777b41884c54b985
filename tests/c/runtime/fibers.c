/* fibers.c -- fiber life cycle: create/enable/spawn, handles, argument copies, continuations.
 * Prints the number of fibers it allocated and dispatched; pytest compares them with the run
 * profile's ThreadAlloc / ThreadDisp. */
#include "check.h"

typedef struct {
    int id;
    char text[40];
} payload;

static int ran_created, ran_spawned, big_ok;
static mp_fiber_t created_handle;
static int allocs, disps; /* what this program expects the runtime to count */

static void created_fn(void *p)
{
    payload *a = p;
    CHECK_EQ(a->id, 7);
    CHECK(strcmp(a->text, "created") == 0);
    CHECK(mp_self() == created_handle);
    CHECK(mp_fiber_args(mp_self()) == p);
    CHECK(ran_spawned); /* the spawned fiber ran first and enabled us */
    ran_created++;
}

static void spawned_fn(void *p)
{
    payload *a = p;
    CHECK_EQ(a->id, 1);
    CHECK(strcmp(a->text, "original") == 0); /* the caller changed its copy afterwards */
    CHECK(ran_created == 0);                 /* created, not enabled: must not have run */
    ran_spawned++;
    CHECK_OK(mp_fiber_enable(created_handle));
}

static void big_fn(void *p)
{
    unsigned char *b = p;
    for (int i = 0; i < MP_FIBER_ARGS_MAX; i++)
        CHECK_EQ(b[i], (unsigned char)(i * 7));
    CHECK(((uintptr_t)p & 15) == 0);
    big_ok = 1;
}

/* Arguments of every size around the slot classes' bounds (16 and 64 bytes), many at a time,
 * so that slots of each class are taken, released and reused: a slot of the wrong class
 * would overlap its neighbour, whose bytes then fail the check. */
static const size_t class_sizes[] = {1, 15, 16, 17, 63, 64, 65, 200};
#define CLASS_SIZES ((int)(sizeof class_sizes / sizeof *class_sizes))
#define CLASS_ROUNDS 300
static int sized_ran;
static uint64_t sized_bytes;

static void sized_fn(void *p)
{
    const unsigned char *b = p;
    size_t size = b[0] == 1 ? 1 : (b[0] | (size_t)b[1] << 8); /* a 1-byte block: b[0] only */
    for (size_t i = 2; i < size; i++)
        CHECK_EQ(b[i], (unsigned char)(size + i));
    CHECK(((uintptr_t)p & 15) == 0);
    sized_ran++;
}

static void spawn_sized(void)
{
    unsigned char buf[256];
    for (int r = 0; r < CLASS_ROUNDS; r++)
        for (int k = 0; k < CLASS_SIZES; k++) {
            size_t size = class_sizes[k];
            buf[0] = (unsigned char)size;
            buf[1] = (unsigned char)(size >> 8);
            for (size_t i = 2; i < size; i++)
                buf[i] = (unsigned char)(size + i);
            if (r % 2) { /* half through mp_fiber_create + enable */
                mp_fiber_t f = mp_fiber_create(sized_fn, buf, size, MP_SCHED_FIFO);
                CHECK(f != NULL);
                CHECK_OK(mp_fiber_enable(f));
            } else {
                CHECK_OK(mp_spawn(sized_fn, buf, size, MP_SCHED_FIFO));
            }
            sized_bytes += size;
            allocs++, disps++;
        }
}

static void sized_again(void *p)
{
    (void)p;
    CHECK_EQ(sized_ran, CLASS_ROUNDS * CLASS_SIZES);
    spawn_sized();
}

/* A thread of continuations: every step passes its state on in the same argument block. */
typedef struct {
    int step;
    int sum;
    void *block;
} chain_args;

static int chain_done;

static void chain_fn(void *p)
{
    chain_args *a = p;
    if (a->step == 0)
        a->block = p;
    CHECK(a->block == p); /* the continuation runs on the same storage */
    a->sum += a->step;
    if (++a->step == 10) {
        CHECK_EQ(a->sum, 45);
        chain_done = 1;
        return;
    }
    mp_fiber_t next = mp_continue(chain_fn, MP_SCHED_FIFO);
    CHECK(next != NULL);
    CHECK(next == mp_self());
    CHECK(mp_fiber_args(next) == p);
    CHECK_OK(mp_fiber_enable(next));
}

/* A continuation that waits on a counter before it runs. */
static mp_counter_t gate;
static int gated_ran;

static void gated_second(void *p)
{
    CHECK_EQ(*(int *)p, 99);
    CHECK_EQ(mp_counter_value(gate), 1);
    gated_ran = 1;
}

static void gated_first(void *p)
{
    *(int *)p = 99;
    mp_fiber_t c = mp_continue(gated_second, MP_SCHED_FIFO);
    CHECK(c == mp_self());
    CHECK_OK(mp_counter_wait(gate, 1, c));
}

static void opener(void *p)
{
    (void)p;
    CHECK(!gated_ran);
    mp_counter_add(gate, 1);
}

static void final_check(void *p)
{
    (void)p;
    CHECK_EQ(ran_spawned, 1);
    CHECK_EQ(ran_created, 1);
    CHECK(big_ok);
    CHECK(chain_done);
    CHECK(gated_ran);
    CHECK_EQ(sized_ran, 2 * CLASS_ROUNDS * CLASS_SIZES);
}

/* mp_at_pe_end: hooks run once the PE is out of work (every fiber above has run), last
 * registered first, and one registered by a hook runs too.  `ends` records their order. */
static char ends[8];
static int nends;

static void end_hook(void *arg)
{
    CHECK(mp_self() == NULL);
    CHECK(chain_done && gated_ran); /* after the last fibers */
    CHECK(nends < (int)sizeof ends - 1);
    ends[nends++] = *(const char *)arg;
    if (*(const char *)arg == 'b')
        CHECK_OK(mp_at_pe_end(end_hook, "c"));
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    CHECK(mp_self() == NULL);
    CHECK_EQ(mp_mype(), 0);
    CHECK_OK(mp_at_pe_end(end_hook, "a"));
    CHECK_OK(mp_at_pe_end(end_hook, "b"));
    CHECK_EQ(mp_at_pe_end(NULL, NULL), MP_ERR_INVALID_ARG);

    payload a = {7, "created"};
    created_handle = mp_fiber_create(created_fn, &a, sizeof a, MP_SCHED_FIFO);
    CHECK(created_handle != NULL);
    memset(&a, 0, sizeof a); /* the fiber has its own copy */
    allocs++, disps++;

    payload b = {1, "original"};
    CHECK_OK(mp_spawn(spawned_fn, &b, sizeof b, MP_SCHED_FIFO));
    strcpy(b.text, "changed");
    b.id = 2;
    allocs++, disps++;

    unsigned char big[MP_FIBER_ARGS_MAX];
    for (int i = 0; i < MP_FIBER_ARGS_MAX; i++)
        big[i] = (unsigned char)(i * 7);
    CHECK_OK(mp_spawn(big_fn, big, sizeof big, MP_SCHED_FIFO));
    allocs++, disps++;

    chain_args c = {0, 0, NULL};
    CHECK_OK(mp_spawn(chain_fn, &c, sizeof c, MP_SCHED_FIFO));
    allocs += 10, disps += 10; /* 1 spawn + 9 continuations, each dispatched */

    gate = mp_counter_new(0);
    int v = 0;
    CHECK_OK(mp_spawn(gated_first, &v, sizeof v, MP_SCHED_FIFO));
    CHECK_OK(mp_spawn(opener, NULL, 0, MP_SCHED_FIFO));
    allocs += 3, disps += 3; /* gated_first, its continuation, opener */

    spawn_sized();
    /* again, on the slots the first round released: this fiber runs after all of them */
    CHECK_OK(mp_spawn(sized_again, NULL, 0, MP_SCHED_FIFO));
    allocs++, disps++;
}

int main(int argc, char **argv)
{
    CHECK_EQ(mp_at_pe_end(end_hook, "x"), MP_ERR_BAD_STATE); /* no PE runs yet */
    int rc = tst_run(argc, argv, 1, pe_main);
    if (rc != 0)
        return rc;
    CHECK(strcmp(ends, "bca") == 0);
    /* After the run (all PEs joined): every fiber ran. */
    final_check(NULL);
    printf("allocs=%d disps=%d sized_bytes=%llu\n", allocs, disps, (unsigned long long)sized_bytes);
    puts("fibers: OK");
    return 0;
}
