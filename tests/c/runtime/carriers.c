/* carriers.c -- arrived FIFO records run from their message buffer by carriers
 * (runtime/src/mpr_carrier.h).  tests/runtime/test_carriers.py.
 *
 *   rt_carriers [n=N] [custom=1]
 *
 * Every PE invokes N FIFO fibers ("car:record") on every other PE, aggregated, so that a
 * buffer carries runs of many records, with arguments of 8, 40 and 120 bytes in turn (frames
 * of all three storage classes) whose bytes follow from (sender, i).  A record's fiber:
 *  - checks that it is the next record of its sender (per-sender order), its arguments byte by
 *    byte, and that mp_self() is a fiber whose arguments are the ones it got;
 *  - every 5th hands its storage to a continuation ("car:cont") and enables it: the
 *    continuation checks the same bytes when it runs, later, so a carrier that wrote the next
 *    record into the storage it gave away fails;
 *  - every 7th spawns an urgent local fiber ("car:urgent"), which must run right after it:
 *    before the next record of the same run (the carrier stops on the interrupt).
 * With custom=1 every PE registers a custom scheduler that never holds a fiber, so dispatch
 * takes FIFO entries one at a time, round-robin with it, instead of in batches.
 * Output per PE:
 *   RESULT pe=P records=R conts=C urgents=U
 * with R = (P-1) N, C and U the records whose i is a multiple of 5 and 7. */
#include "check.h"

static int acc_send, acc_record, acc_cont, acc_urgent;
static long n = 3000, custom;

typedef struct {
    int src;
    int i;
    unsigned char bytes[112];
} rec_args;

static const size_t sizes[3] = {8, 40, 120};

static uint64_t records[MAXPE], conts[MAXPE], urgents[MAXPE];
static int next_i[MAXPE][MAXPE]; /* [receiver][sender]: the next record expected */
static long last_ran[MAXPE];     /* the last record that ran on the PE: src * n + i */

static unsigned char byte_of(int src, int i, int k)
{
    return (unsigned char)(src * 29 + i * 13 + k);
}

static void check_bytes(const rec_args *a)
{
    size_t size = sizes[a->i % 3];
    for (size_t k = 0; k + 8 < size; k++)
        CHECK_EQ(a->bytes[k], byte_of(a->src, a->i, (int)k));
}

static void cont_fn(void *p)
{
    mp_access_declare(acc_cont);
    check_bytes(p);
    conts[mp_mype()]++;
}

static void urgent_fn(void *p)
{
    mp_access_declare(acc_urgent);
    long id;
    memcpy(&id, p, sizeof id);
    CHECK_EQ(last_ran[mp_mype()], id); /* nothing ran between the record and this one */
    urgents[mp_mype()]++;
}

static void record_fn(void *p)
{
    const rec_args *a = p;
    mp_access_declare(acc_record);
    int me = mp_mype();
    CHECK(a->src >= 0 && a->src < mp_npes() && a->src != me);
    CHECK_EQ(a->i, next_i[me][a->src]);
    next_i[me][a->src]++;
    check_bytes(a);
    CHECK(mp_self() != NULL && mp_fiber_args(mp_self()) == p);
    long id = (long)a->src * n + a->i;
    last_ran[me] = id;
    records[me]++;
    if (a->i % 7 == 0)
        CHECK_OK(mp_spawn(urgent_fn, &id, sizeof id, MP_SCHED_URGENT));
    if (a->i % 5 == 0) {
        mp_fiber_t c = mp_continue(cont_fn, MP_SCHED_FIFO);
        CHECK(c != NULL);
        CHECK_OK(mp_fiber_enable(c));
    }
}

static void none_deposit(void *st, mp_fiber_t f)
{
    (void)st, (void)f;
    CHECK(!"a fiber for the scheduler that holds none");
}

static mp_fiber_t none_select(void *st)
{
    (void)st;
    return NULL;
}

static void sender(void *p)
{
    (void)p;
    mp_access_declare(acc_send);
    int me = mp_mype(), np = mp_npes();
    if (custom) {
        static const mp_sched_ops none = {none_deposit, none_select, "none"};
        mp_sched_t id;
        CHECK_OK(mp_sched_register(&none, NULL, &id));
    }
    for (int i = 0; i < n; i++)
        for (int to = 0; to < np; to++) {
            if (to == me)
                continue;
            rec_args a;
            a.src = me;
            a.i = i;
            size_t size = sizes[i % 3];
            for (size_t k = 0; k + 8 < size; k++)
                a.bytes[k] = byte_of(me, i, (int)k);
            CHECK_OK(mp_invoke(to, record_fn, &a, size, MP_SCHED_FIFO));
        }
}

int main(int argc, char **argv)
{
    n = tst_opt(argc, argv, "n", 3000);
    custom = tst_opt(argc, argv, "custom", 0);
    acc_send = mp_access_register("car", "send");
    acc_record = mp_access_register("car", "record");
    acc_cont = mp_access_register("car", "cont");
    acc_urgent = mp_access_register("car", "urgent");
    int rc = tst_run_fiber(argc, argv, 2, sender);
    for (int pe = 0; pe < tst_npes; pe++)
        printf("RESULT pe=%d records=%llu conts=%llu urgents=%llu\n", pe,
               (unsigned long long)records[pe], (unsigned long long)conts[pe],
               (unsigned long long)urgents[pe]);
    return rc;
}
