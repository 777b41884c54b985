/*
 * msg_floor P RECORDS_PER_SENDER -- the instruction floor of an aggregated remote invocation.
 *
 * The least a shared-memory runtime can do per remote invocation: append a record (an 8-byte
 * handler index and 8 bytes of payload) to the block being filled for its destination, publish
 * the block through a single-producer single-consumer ring per ordered (sender, receiver) pair
 * when it is full (4096-byte blocks, 16 per ring; each side keeps a cached copy of the other
 * side's index, so the shared indices move once per block), and on the receiver walk the block
 * and call each record's handler through a function-pointer table (the handler adds the payload
 * to a sum).  That is the transport and dispatch of a lock-free floor run with a thread per
 * sender; here P senders take turns on one thread -- each sends a batch of 1024 records
 * round-robin to the others, then each drains its inbox -- so no thread ever waits for another
 * and callgrind counts the same instructions per record in every run, without the spinning of
 * a waiting thread (invoke_instructions.py counts them as the floor beside rt_workload).
 * Exits 1 if the sum or a count is wrong.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_BLOCKS 16   /* per channel; power of two */
#define BLOCK_BYTES 4096 /* records, and a trailer holding their count */
#define RECORD_BYTES 16
#define SEND_BATCH 1024 /* sends per sender between drains: at most 5 blocks per channel */
#define NH 4            /* distinct handlers: a real indirect call */
#define CAP ((BLOCK_BYTES - 8) / RECORD_BYTES)

typedef struct {
    _Atomic uint64_t head, tail; /* blocks published / consumed */
    uint64_t p_head, p_tail;     /* producer: own head, cached tail */
    unsigned char *p_cur;        /* block being filled, or NULL */
    uint64_t p_fill;             /* records in it */
    uint64_t c_tail, c_head;     /* consumer: own tail, cached head */
    unsigned char *ring;
} chan_t;

static int P;
static chan_t *chans; /* chans[src * P + dst] */
static uint64_t got[64], sum;

static void h0(const unsigned char *a)
{
    uint64_t x;
    memcpy(&x, a, 8);
    sum += x;
}
static void h1(const unsigned char *a)
{
    uint64_t x;
    memcpy(&x, a, 8);
    sum += x + 1;
}
static void h2(const unsigned char *a)
{
    uint64_t x;
    memcpy(&x, a, 8);
    sum += x + 2;
}
static void h3(const unsigned char *a)
{
    uint64_t x;
    memcpy(&x, a, 8);
    sum += x + 3;
}
static void (*const handlers[NH])(const unsigned char *) = {h0, h1, h2, h3};

/* Dispatches every published block of every channel into `dst`. */
static void drain(int dst)
{
    for (int src = 0; src < P; src++) {
        chan_t *c = &chans[src * P + dst];
        if (src == dst)
            continue;
        if (c->c_tail == c->c_head) {
            c->c_head = atomic_load_explicit(&c->head, memory_order_acquire);
            if (c->c_tail == c->c_head)
                continue;
        }
        do {
            const unsigned char *b = c->ring + (c->c_tail % RING_BLOCKS) * BLOCK_BYTES;
            uint64_t m, h;
            memcpy(&m, b + BLOCK_BYTES - 8, 8);
            for (uint64_t j = 0; j < m; j++, b += RECORD_BYTES) {
                memcpy(&h, b, 8);
                handlers[h & (NH - 1)](b + 8);
            }
            got[dst] += m;
            atomic_store_explicit(&c->tail, ++c->c_tail, memory_order_release);
        } while (c->c_tail != c->c_head);
    }
}

static void publish(chan_t *c)
{
    memcpy(c->p_cur + BLOCK_BYTES - 8, &c->p_fill, 8);
    atomic_store_explicit(&c->head, ++c->p_head, memory_order_release);
    c->p_cur = NULL, c->p_fill = 0;
}

static void acquire_slot(chan_t *c)
{
    if (c->p_head - c->p_tail == RING_BLOCKS) {
        c->p_tail = atomic_load_explicit(&c->tail, memory_order_acquire);
        if (c->p_head - c->p_tail == RING_BLOCKS) {
            fprintf(stderr, "msg_floor: a ring filled, which turns cannot do\n");
            exit(1);
        }
    }
    c->p_cur = c->ring + (c->p_head % RING_BLOCKS) * BLOCK_BYTES;
}

static inline void send(chan_t *c, uint64_t h, uint64_t x)
{
    if (!c->p_cur)
        acquire_slot(c);
    unsigned char *r = c->p_cur + c->p_fill * RECORD_BYTES;
    memcpy(r, &h, 8), memcpy(r + 8, &x, 8);
    if (++c->p_fill == CAP)
        publish(c);
}

/* The sends and dispatches of n records per sender (collected alone by callgrind:
 * invoke_instructions.py). */
__attribute__((noinline)) static void turns(uint64_t n)
{
    chan_t *out[64][64]; /* out[s][k]: from s to (s + 1 + k) % P */
    int next[64] = {0};
    for (int s = 0; s < P; s++)
        for (int k = 0; k < P - 1; k++)
            out[s][k] = &chans[s * P + (s + 1 + k) % P];
    for (uint64_t i = 0; i < n; i += SEND_BATCH) {
        uint64_t end = n - i < SEND_BATCH ? n : i + SEND_BATCH;
        for (int s = 0; s < P; s++) { /* a batch of sends per sender, round-robin */
            int k = next[s];
            for (uint64_t j = i; j < end; j++) {
                send(out[s][k], j & (NH - 1), (uint64_t)s * n + j);
                if (++k == P - 1)
                    k = 0;
            }
            next[s] = k;
        }
        for (int d = 0; d < P; d++)
            drain(d);
    }
    for (int i = 0; i < P * P; i++)
        if (chans[i].p_fill)
            publish(&chans[i]);
    for (int d = 0; d < P; d++)
        drain(d);
}

int main(int argc, char **argv)
{
    P = argc == 3 ? atoi(argv[1]) : 0;
    uint64_t n = argc == 3 ? strtoull(argv[2], NULL, 10) : 0;
    if (P < 2 || P > 64 || n < 1) {
        fprintf(stderr, "usage: msg_floor P RECORDS_PER_SENDER (2 <= P <= 64)\n");
        return 2;
    }
    chans = calloc((size_t)P * P, sizeof *chans);
    for (int i = 0; i < P * P; i++)
        chans[i].ring = aligned_alloc(4096, RING_BLOCKS * BLOCK_BYTES);
    turns(n);
    uint64_t total = 0, want = 0; /* payload s * n + k, plus handler k % 4 */
    for (int d = 0; d < P; d++)
        total += got[d];
    for (uint64_t s = 0; s < (uint64_t)P; s++)
        for (uint64_t k = 0; k < n; k++)
            want += s * n + k + (k & (NH - 1));
    if (total != (uint64_t)P * n || sum != want) {
        fprintf(stderr, "msg_floor: %llu records dispatched of %llu, or a wrong sum\n",
                (unsigned long long)total, (unsigned long long)P * n);
        return 1;
    }
    return 0;
}
