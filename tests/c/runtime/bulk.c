/* bulk.c -- bulk read, write and store between PE 0 and PE 1, remote and local, with data
 * verification.  Prints the bytes PE 0 copied locally (ByteCopy in the profile).
 * Scenario "misuse": NULL counters, buffers and functions, and user bytes beyond the limit
 * (SIZE_MAX must not wrap around it) are refused with MP_FAIL and a message on stderr
 * ("<case> <code>" lines, as misuse.c prints).  Scenario "max": a read, a write and a store of
 * exactly mp_max_message() bytes, the largest a bulk operation accepts (the record's header
 * once counted against it: the write was refused, and the read's reply could not be sent). */
#include "check.h"

#include <stdatomic.h>

#define SMALL 3000
#define LARGE (1 << 20)

static unsigned char *mem[2];     /* per PE: source, write target, store target */
static unsigned long local_bytes; /* bytes PE 0 moves locally */
static atomic_int stores_arrived;

static unsigned char pat(int pe, size_t i) { return (unsigned char)(i * 31 + (size_t)pe * 7 + 1); }

static void verify_written(void *p)
{
    /* on PE 1: PE 0 wrote its pattern into our target area */
    size_t n = *(size_t *)p;
    CHECK_EQ(mp_mype(), 1);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(mem[1][LARGE + i], pat(0, i));
}

typedef struct {
    mp_counter_t back; /* PE 0's counter */
    int tag;
} store_user;

static void on_store(void *p)
{
    mp_store_arrival *a = p;
    store_user u;
    memcpy(&u, a->user, sizeof u);
    CHECK_EQ(u.tag, 4242);
    CHECK_EQ(a->from, 0);
    CHECK(a->dst == mem[mp_mype()] + 2 * LARGE);
    for (size_t i = 0; i < a->n; i++)
        CHECK_EQ(((unsigned char *)a->dst)[i], pat(0, i));
    atomic_fetch_add(&stores_arrived, 1);
    CHECK_OK(mp_counter_add_remote(0, u.back, 1));
}

static void transfer(size_t n)
{
    mp_counter_t c = mp_counter_new(0);
    unsigned char *dst = malloc(n);
    CHECK(dst);
    /* remote read */
    memset(dst, 0, n);
    CHECK_EQ(mp_bulk_read(1, mem[1], dst, n, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 1));
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(dst[i], pat(1, i));
    /* remote write, verified on PE 1 */
    CHECK_EQ(mp_bulk_write(1, mem[1] + LARGE, mem[0], n, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 2));
    CHECK_OK(mp_invoke(1, verify_written, &n, sizeof n, MP_SCHED_FIFO));
    /* remote store: the source is free at once, the arrival fiber runs on PE 1 */
    mp_counter_t src_free = mp_counter_new(0), back = mp_counter_new(0);
    store_user u = {back, 4242};
    CHECK_EQ(mp_bulk_store(1, mem[1] + 2 * LARGE, mem[0], n, src_free, on_store, &u, sizeof u),
             MP_OK);
    CHECK_EQ(mp_counter_value(src_free), 1);
    CHECK_OK(mp_block_until(back, 1));

    /* local variants complete at once */
    memset(dst, 0, n);
    CHECK_EQ(mp_bulk_read(0, mem[0], dst, n, c), MP_OK);
    CHECK_EQ(mp_counter_value(c), 3);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(dst[i], pat(0, i));
    CHECK_EQ(mp_bulk_write(0, mem[0] + LARGE, dst, n, c), MP_OK);
    CHECK_EQ(mp_counter_value(c), 4);
    CHECK(memcmp(mem[0] + LARGE, mem[0], n) == 0);
    local_bytes += 2 * n;
    u.back = back;
    CHECK_EQ(mp_bulk_store(0, mem[0] + 2 * LARGE, mem[0], n, src_free, on_store, &u, sizeof u),
             MP_OK);
    local_bytes += n + sizeof(mp_store_arrival) + sizeof u; /* payload and arrival arguments */
    CHECK_OK(mp_block_until(back, 2));
    free(dst);
    mp_counter_free(c);
    mp_counter_free(src_free);
    mp_counter_free(back);
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    for (size_t i = 0; i < LARGE; i++)
        mem[me][i] = pat(me, i);
    if (me != 0)
        return;
    transfer(64);    /* one aggregated record */
    transfer(SMALL); /* bigger than a small buffer */
    transfer(LARGE); /* a large message */
    /* a zero-byte transfer still completes */
    mp_counter_t c = mp_counter_new(0);
    CHECK_EQ(mp_bulk_write(1, mem[1] + LARGE, mem[0], 0, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 1));
    mp_counter_free(c);
}

static unsigned char *max_buf[2]; /* mp_max_message() bytes per PE */
static mp_counter_t max_arrived[2];
static unsigned char *max_remote; /* on PE 0: PE 1's buffer, as PE 1 sent its address */

static void max_address(void *p)
{
    memcpy(&max_remote, p, sizeof max_remote);
    mp_counter_add(max_arrived[mp_mype()], 1);
}

static void max_verify(void *p)
{
    (void)p;
    size_t n = mp_max_message();
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(max_buf[1][i], pat(0, i));
}

static void max_on_store(void *p)
{
    mp_store_arrival *a = p;
    CHECK_EQ(a->n, mp_max_message());
    max_verify(NULL);
    mp_counter_add(max_arrived[mp_mype()], 1);
}

static void max_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    size_t n = mp_max_message();
    CHECK((max_buf[me] = malloc(n)) != NULL);
    for (size_t i = 0; i < n; i++)
        max_buf[me][i] = pat(me, i);
    mp_counter_t c = mp_counter_new(0);
    max_arrived[me] = mp_counter_new(0);
    if (me == 1) /* its buffer is set: PE 0 may read it (on MPI, PE 0 learns where it is) */
        CHECK_OK(mp_invoke(0, max_address, &max_buf[1], sizeof max_buf[1], MP_SCHED_FIFO));
    if (me == 0) {
        CHECK_OK(mp_block_until(max_arrived[0], 1));
        unsigned char *dst = malloc(n);
        CHECK(dst != NULL);
        CHECK_EQ(mp_bulk_read(1, max_remote, dst, n, c), MP_WAIT);
        CHECK_OK(mp_block_until(c, 1));
        for (size_t i = 0; i < n; i++)
            CHECK_EQ(dst[i], pat(1, i));
        free(dst);
        CHECK_EQ(mp_bulk_write(1, max_remote, max_buf[0], n, c), MP_WAIT);
        CHECK_OK(mp_block_until(c, 2));
        CHECK_OK(mp_invoke(1, max_verify, NULL, 0, MP_SCHED_FIFO));
        CHECK_EQ(mp_bulk_store(1, max_remote, max_buf[0], n, NULL, max_on_store, NULL, 0), MP_OK);
    } else if (me == 1) {
        CHECK_OK(mp_block_until(max_arrived[me], 1));
        puts("max: OK");
    }
    mp_counter_free(c);
    mp_counter_free(max_arrived[me]);
    free(max_buf[me]);
}

/* Scenarios "bad_read" and "bad_write": PE 0 names an address that is no memory of PE 1's
 * process; PE 1 faults in the copy and says which transfer it was. */
static void bad_main(int argc, char **argv)
{
    if (mp_mype() != 0)
        return;
    static unsigned char buf[64];
    void *bad = (void *)(uintptr_t)0x10;
    mp_counter_t c = mp_counter_new(0);
    if (strcmp(tst_scenario(argc, argv, "default"), "bad_read") == 0)
        CHECK_EQ(mp_bulk_read(1, bad, buf, sizeof buf, c), MP_WAIT);
    else
        CHECK_EQ(mp_bulk_write(1, bad, buf, sizeof buf, c), MP_WAIT);
    mp_block_until(c, 1);
    puts("bad: survived");
}

static void report(const char *what, int code)
{
    printf("%s %d\n", what, code);
    fflush(stdout);
}

static void nop(void *p) { (void)p; }

static void misuse_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() != 0)
        return;
    int last = mp_npes() - 1;
    static unsigned char big[2048];
    mp_counter_t d = mp_counter_new(0);
    report("read_null_counter", mp_bulk_read(last, big, big + 100, 8, NULL));
    report("read_null_dst", mp_bulk_read(last, big, NULL, 8, d));
    report("read_null_src", mp_bulk_read(last, NULL, big, 8, d));
    report("write_null_counter", mp_bulk_write(last, big, big + 100, 8, NULL));
    report("write_null_dst", mp_bulk_write(last, NULL, big, 8, d));
    report("write_null_src_local", mp_bulk_write(0, big, NULL, 8, d));
    report("store_null_fn", mp_bulk_store(last, big, big, 8, d, NULL, NULL, 0));
    report("store_null_src", mp_bulk_store(last, big, NULL, 8, d, nop, NULL, 0));
    report("store_null_user", mp_bulk_store(last, big, big, 8, d, nop, NULL, 8));
    size_t room = MP_FIBER_ARGS_MAX - sizeof(mp_store_arrival);
    report("store_user_over", mp_bulk_store(last, big, big, 8, d, nop, big, room + 1));
    report("store_user_huge", mp_bulk_store(last, big, big, 8, d, nop, big, SIZE_MAX));
    report("store_user_wraps",
           mp_bulk_store(last, big, big, 8, d, nop, big, SIZE_MAX - sizeof(mp_store_arrival) + 1));
    printf("counter=%llu\n", (unsigned long long)mp_counter_value(d));
    /* the largest user bytes still go */
    report("store_user_fits", mp_bulk_store(last, big, big, 8, d, nop, big, room));
    mp_counter_free(d);
}

int main(int argc, char **argv)
{
    if (strncmp(tst_scenario(argc, argv, "default"), "bad_", 4) == 0)
        return tst_run_exactly(argc, argv, 2, bad_main);
    if (strcmp(tst_scenario(argc, argv, "default"), "max") == 0) {
        return tst_run_exactly(argc, argv, 2, max_main);
    }
    if (strcmp(tst_scenario(argc, argv, "default"), "misuse") == 0) {
        int rc = tst_run(argc, argv, 2, misuse_main); /* any P: the sanitizer tests use 3 */
        printf("misuse rc=%d\n", rc);
        return rc;
    }
    for (int i = 0; i < 2; i++)
        CHECK((mem[i] = calloc(3, LARGE)) != NULL);
    int rc = tst_run_exactly(argc, argv, 2, pe_main);
    if (rc)
        return rc;
    CHECK_EQ(atomic_load(&stores_arrived),
             6); /* 3 remote on PE 1, 3 local on PE 0 -- both update it */
    printf("local_bytes=%lu\n", local_bytes);
    puts("bulk: OK");
    for (int i = 0; i < 2; i++)
        free(mem[i]);
    return 0;
}
