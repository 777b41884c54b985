/* direct.c -- preemptive fibers that arrive in messages run straight from the message buffer
 * (Wen 1995, section 3.2.4; sched.c mpr_run_direct).  tests/runtime/test_direct.py.
 *
 *   rt_direct [n=N]
 *
 * Every PE invokes N preemptive fibers on its right neighbour, with arguments of 16, 40 and
 * 200 bytes in turn whose bytes follow from (sender, i), plus N FIFO ones.  A preemptive
 * handler ("dir:handler") checks its arguments where they arrived, checks that it runs as a
 * preemptive fiber (mp_self() set, mp_continue refused), enables a local preemptive fiber
 * ("dir:nested"), which runs inside it, and adds to the PE's sums.  Output per PE:
 *   RESULT pe=P direct=D nested=K fifo=F sum=S
 * where S must equal the sum its left neighbour computed over what it sent (sent=). */
#include "check.h"

static int acc_send, acc_handler, acc_nested;
static long n = 1000;

typedef struct {
    int src;
    int i;
    unsigned char bytes[192];
} msg_args;

static const size_t sizes[3] = {16, 40, 200};

static uint64_t handled[MAXPE], nested[MAXPE], fifo[MAXPE], sum[MAXPE], sent[MAXPE];

static unsigned char byte_of(int src, int i, int k)
{
    return (unsigned char)(src * 31 + i * 7 + k);
}

static void nested_fn(void *p)
{
    (void)p;
    mp_access_declare(acc_nested);
    nested[mp_mype()]++;
}

static void handler(void *p)
{
    const msg_args *a = p;
    mp_access_declare(acc_handler);
    int me = mp_mype();
    CHECK(mp_self() != NULL);
    if (a->i == 0) /* preemptive: no continuation (refused with an error line) */
        CHECK(mp_continue(nested_fn, MP_SCHED_FIFO) == NULL);
    size_t size = sizes[a->i % 3];
    for (size_t k = 0; k + 8 < size; k++)
        CHECK_EQ(a->bytes[k], byte_of(a->src, a->i, (int)k));
    uint64_t before = nested[me];
    CHECK_OK(mp_spawn(nested_fn, NULL, 0, MP_SCHED_PREEMPT));
    CHECK_EQ(nested[me], before + 1); /* ran inside this one */
    handled[me]++;
    sum[me] += (uint64_t)a->src * 1000003u + (uint64_t)a->i;
}

static void fifo_fn(void *p)
{
    (void)p;
    fifo[mp_mype()]++;
}

static void sender(void *p)
{
    (void)p;
    mp_access_declare(acc_send);
    int me = mp_mype(), to = (me + 1) % mp_npes();
    for (int i = 0; i < n; i++) {
        msg_args a;
        a.src = me;
        a.i = i;
        size_t size = sizes[i % 3];
        for (size_t k = 0; k + 8 < size; k++)
            a.bytes[k] = byte_of(me, i, (int)k);
        CHECK_OK(mp_invoke(to, handler, &a, size, MP_SCHED_PREEMPT));
        CHECK_OK(mp_invoke(to, fifo_fn, NULL, 0, MP_SCHED_FIFO));
        sent[me] += (uint64_t)me * 1000003u + (uint64_t)i;
    }
}

int main(int argc, char **argv)
{
    n = tst_opt(argc, argv, "n", 1000);
    acc_send = mp_access_register("dir", "send");
    acc_handler = mp_access_register("dir", "handler");
    acc_nested = mp_access_register("dir", "nested");
    int rc = tst_run_fiber(argc, argv, 2, sender);
    for (int pe = 0; pe < tst_npes; pe++) /* what PE pe received, and what it sent */
        printf("RESULT pe=%d direct=%llu nested=%llu fifo=%llu sum=%llu sent=%llu\n", pe,
               (unsigned long long)handled[pe], (unsigned long long)nested[pe],
               (unsigned long long)fifo[pe], (unsigned long long)sum[pe],
               (unsigned long long)sent[(pe + tst_npes - 1) % tst_npes]);
    return rc;
}
