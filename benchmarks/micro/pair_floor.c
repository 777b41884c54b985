/*
 * pair_floor P RECORDS_PER_SENDER [RECORD_BYTES=16] [BLOCK_BYTES=4096] -- what messaging costs
 * the machine itself, outside the runtime, and how much that cost scatters between runs.
 *
 * noise_floor sets a single thread's scatter beside mprof's; this program does the same for
 * records moving between threads, the part of a runtime run that depends on where the host puts
 * the threads (a cache line's round trip between two vCPUs of the development VM is ~60, ~130 or
 * ~550 ns from one second to the next).  P threads, each bound to its own usable CPU (mod their
 * number; one per core before any core's second hardware thread, as the runtime binds), each send
 * RECORDS_PER_SENDER records round-robin to the other P-1 and dispatch what they receive.  The
 * transport is the least a shared-memory runtime can do: one single-producer single-consumer ring
 * of blocks per ordered pair of threads, a record appended to the block being filled for its
 * destination, the block published when full (each side keeps a cached copy of the other's index,
 * so the shared indices move once per block), and the receiver calling each record's handler
 * through a function-pointer table.  A record is an 8-byte handler index and RECORD_BYTES of
 * arguments (a multiple of 8): the sender writes every word, the handler reads every word, as an
 * invocation's arguments are copied in and read.  BLOCK_BYTES 0 publishes every record at once in a
 * block of its own (the runtime's unaggregated messages); otherwise records are aggregated into
 * blocks of that size.  A thread alternates a batch of 256 sends with draining its inbox, drains
 * while its ring to a destination is full, and ends when it has sent all and received all it is
 * owed.
 *
 * Before the timed part, threads 0 and 1 pass one cache line back and forth 20 000 times: rtt_ns,
 * the placement the run had.  Prints one JSON line: cpu_s (the threads' CPU time, summed), idle_s
 * (time in polls that found nothing to receive while the thread could not send: the runtime's
 * idle loop), busy_cpu_s (the difference: comparable with a run profile's cpu_s - idle_cpu_s),
 * elapsed_s, rtt_ns.  Exits 1 if a record is lost, duplicated or corrupted; 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE 64
#define MAX_P 64
#define SEND_BATCH 256
#define RING_BYTES (64 * 1024) /* per channel, at least 16 blocks */
#define NH 4                   /* distinct handlers: a real indirect call */
#define RTT_ROUNDS 20000

typedef struct {
    _Alignas(LINE) _Atomic uint64_t head;           /* blocks published */
    _Alignas(LINE) _Atomic uint64_t tail;           /* blocks consumed */
    _Alignas(LINE) uint64_t p_head, p_tail, p_fill; /* producer: own head, cached tail */
    unsigned char *p_cur;                           /* block being filled, or NULL */
    _Alignas(LINE) uint64_t c_tail, c_head;         /* consumer: own tail, cached head */
    unsigned char *ring;
} chan_t;

typedef struct {
    _Alignas(LINE) int id;
    uint64_t got, owed, sum;
    double cpu_s, idle_s;
} worker_t;

static int P, ncpus, cpus[CPU_SETSIZE];
static uint64_t n, rec_bytes, block_bytes, cap, ring_blocks;
static chan_t *chans; /* chans[src * P + dst] */
static worker_t workers[MAX_P];
static _Atomic int ready;
static _Alignas(LINE) _Atomic uint64_t ping;
static _Alignas(LINE) _Atomic uint64_t pong;
static double rtt_ns;
/* Idle polls are timed by the monotonic clock, which needs no system call, while each thread has
 * a CPU of its own; when threads share CPUs, by the thread's CPU clock, which leaves out the time
 * the thread waited for its CPU. */
static clockid_t idle_clock;

static double clock_s(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Spinning on a CPU that another thread of ours needs would only delay that thread. */
static inline void relax(void)
{
    if (P > ncpus)
        sched_yield();
    else
        __builtin_ia32_pause();
}

/* The handlers add every argument word, and their own index, to the receiver's sum. */
#define HANDLER(k)                                                                                 \
    static uint64_t h##k(const unsigned char *a)                                                   \
    {                                                                                              \
        uint64_t s = k, x;                                                                         \
        for (uint64_t off = 0; off < rec_bytes; off += 8) {                                        \
            memcpy(&x, a + off, 8);                                                                \
            s += x;                                                                                \
        }                                                                                          \
        return s;                                                                                  \
    }
HANDLER(0)
HANDLER(1)
HANDLER(2)
HANDLER(3)
static uint64_t (*const handlers[NH])(const unsigned char *) = {h0, h1, h2, h3};

/* Dispatches every published block addressed to `w`; returns the records dispatched. */
static uint64_t drain(worker_t *w)
{
    uint64_t done = 0;
    for (int src = 0; src < P; src++) {
        chan_t *c = &chans[src * P + w->id];
        if (src == w->id)
            continue;
        if (c->c_tail == c->c_head) {
            c->c_head = atomic_load_explicit(&c->head, memory_order_acquire);
            if (c->c_tail == c->c_head)
                continue;
        }
        do {
            const unsigned char *b = c->ring + (c->c_tail % ring_blocks) * block_bytes;
            uint64_t m, h;
            memcpy(&m, b + block_bytes - 8, 8);
            for (uint64_t j = 0; j < m; j++, b += 8 + rec_bytes) {
                memcpy(&h, b, 8);
                w->sum += handlers[h & (NH - 1)](b + 8);
            }
            done += m;
            atomic_store_explicit(&c->tail, ++c->c_tail, memory_order_release);
        } while (c->c_tail != c->c_head);
    }
    w->got += done;
    return done;
}

/* Polls until something arrives or `until` says stop, counting the empty polls' time as idle. */
static void wait_for(worker_t *w, int (*until)(const void *), const void *arg)
{
    double t0 = clock_s(idle_clock);
    while (!until(arg)) {
        if (drain(w)) {
            double t1 = clock_s(idle_clock);
            w->idle_s += t1 - t0;
            t0 = t1;
            continue;
        }
        relax();
    }
    w->idle_s += clock_s(idle_clock) - t0;
}

static int ring_has_room(const void *p)
{
    chan_t *c = (chan_t *)p;
    c->p_tail = atomic_load_explicit(&c->tail, memory_order_acquire);
    return c->p_head - c->p_tail < ring_blocks;
}

static int all_received(const void *p)
{
    const worker_t *w = p;
    return w->got >= w->owed;
}

static void publish(chan_t *c)
{
    memcpy(c->p_cur + block_bytes - 8, &c->p_fill, 8);
    atomic_store_explicit(&c->head, ++c->p_head, memory_order_release);
    c->p_cur = NULL, c->p_fill = 0;
}

static inline void send(worker_t *w, chan_t *c, uint64_t h, uint64_t x)
{
    if (!c->p_cur) {
        if (c->p_head - c->p_tail == ring_blocks && !ring_has_room(c))
            wait_for(w, ring_has_room, c); /* the receiver frees it; meanwhile serve ours */
        c->p_cur = c->ring + (c->p_head % ring_blocks) * block_bytes;
    }
    unsigned char *r = c->p_cur + c->p_fill * (8 + rec_bytes);
    memcpy(r, &h, 8);
    for (uint64_t off = 8; off < 8 + rec_bytes; off += 8)
        memcpy(r + off, &x, 8);
    if (++c->p_fill == cap)
        publish(c);
}

static void bind_to(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* Threads 0 and 1 pass a cache line back and forth: the round trip the host's placement gives. */
static void round_trips(int id)
{
    if (id == 0) {
        double t0 = clock_s(CLOCK_MONOTONIC);
        for (uint64_t i = 1; i <= RTT_ROUNDS; i++) {
            atomic_store_explicit(&ping, i, memory_order_release);
            while (atomic_load_explicit(&pong, memory_order_acquire) != i)
                relax();
        }
        rtt_ns = (clock_s(CLOCK_MONOTONIC) - t0) * 1e9 / RTT_ROUNDS;
    } else if (id == 1) {
        for (uint64_t i = 1; i <= RTT_ROUNDS; i++) {
            while (atomic_load_explicit(&ping, memory_order_acquire) != i)
                relax();
            atomic_store_explicit(&pong, i, memory_order_release);
        }
    }
}

static void *run(void *arg)
{
    worker_t *w = arg;
    bind_to(cpus[w->id % ncpus]);
    round_trips(w->id);
    atomic_fetch_add(&ready, 1);
    while (atomic_load(&ready) < P)
        relax();

    double cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    chan_t *out[MAX_P]; /* out[k]: to (id + 1 + k) % P */
    for (int k = 0; k < P - 1; k++)
        out[k] = &chans[w->id * P + (w->id + 1 + k) % P];
    int k = 0;
    for (uint64_t j = 0; j < n;) {
        uint64_t end = n - j < SEND_BATCH ? n : j + SEND_BATCH;
        for (; j < end; j++) {
            send(w, out[k], j & (NH - 1), (uint64_t)w->id * n + j);
            if (++k == P - 1)
                k = 0;
        }
        drain(w);
    }
    for (int d = 0; d < P - 1; d++)
        if (out[d]->p_fill)
            publish(out[d]);
    wait_for(w, all_received, w);
    w->cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    return NULL;
}

/* A CPU's place among the usable hardware threads of its core (0 for the first) and its core
 * (the lowest CPU number among its threads), from sysfs; 0 and itself where sysfs says nothing. */
static void core_of(int cpu, const cpu_set_t *usable, int *rank, int *core)
{
    char path[96], list[256];
    *rank = 0, *core = cpu;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(list, sizeof list, f)) {
        for (char *tok = strtok(list, ",\n"); tok; tok = strtok(NULL, ",\n")) {
            int lo, hi;
            int got = sscanf(tok, "%d-%d", &lo, &hi);
            if (got < 1)
                continue;
            if (got == 1)
                hi = lo;
            for (int c = lo; c <= hi && c < CPU_SETSIZE; c++) {
                if (c < *core)
                    *core = c;
                if (c < cpu && CPU_ISSET(c, usable))
                    ++*rank;
            }
        }
    }
    fclose(f);
}

/* The usable CPUs, one per core first and then each core's second hardware thread, as the
 * runtime binds its workers (MPROF_PIN): two threads of this program then share a core only
 * where two of the runtime's would. */
static void usable_cpus(void)
{
    cpu_set_t mask;
    int rank[CPU_SETSIZE], core[CPU_SETSIZE];
    sched_getaffinity(0, sizeof mask, &mask);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mask)) {
            core_of(c, &mask, &rank[c], &core[c]);
            cpus[ncpus++] = c;
        }
    for (int i = 1; i < ncpus; i++) /* insertion sort by (rank, core): a few hundred at most */
        for (int j = i; j > 0; j--) {
            int a = cpus[j - 1], b = cpus[j];
            if (rank[a] < rank[b] || (rank[a] == rank[b] && core[a] <= core[b]))
                break;
            cpus[j - 1] = b, cpus[j] = a;
        }
}

/* A whole decimal number, digits only (strtoull alone takes "-1" and "2x"). */
static int count(const char *s, uint64_t *v)
{
    if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 12)
        return 0;
    *v = strtoull(s, NULL, 10);
    return 1;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: pair_floor P RECORDS_PER_SENDER [RECORD_BYTES=16] [BLOCK_BYTES=4096]\n"
            "  2 <= P <= %d; RECORD_BYTES a positive multiple of 8; BLOCK_BYTES 0 (a\n"
            "  record per block, published at once) or at least 8 + 8 + RECORD_BYTES\n",
            MAX_P);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5)
        return usage();
    uint64_t p = 0;
    rec_bytes = 16, block_bytes = 4096;
    if (!count(argv[1], &p) || !count(argv[2], &n) || (argc > 3 && !count(argv[3], &rec_bytes)) ||
        (argc > 4 && !count(argv[4], &block_bytes)) || p > MAX_P)
        return usage();
    P = (int)p;
    if (P < 2 || P > MAX_P || n < 1 || rec_bytes < 8 || rec_bytes % 8 || rec_bytes > 65536 ||
        (block_bytes && block_bytes < 16 + rec_bytes) || block_bytes > RING_BYTES / 16)
        return usage();
    usable_cpus();
    if (block_bytes) {
        cap = (block_bytes - 8) / (8 + rec_bytes);
    } else { /* a record and the count, in whole cache lines */
        block_bytes = (8 + rec_bytes + 8 + LINE - 1) / LINE * LINE;
        cap = 1;
    }
    idle_clock = P > ncpus ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
    for (ring_blocks = 16; ring_blocks * block_bytes < RING_BYTES;)
        ring_blocks *= 2;

    chans = aligned_alloc(LINE, (size_t)P * P * sizeof *chans);
    memset(chans, 0, (size_t)P * P * sizeof *chans);
    for (int i = 0; i < P * P; i++)
        if (i / P != i % P) {
            chans[i].ring = aligned_alloc(4096, ring_blocks * block_bytes);
            memset(chans[i].ring, 0, ring_blocks * block_bytes); /* no page faults when timed */
        }
    /* what each receiver is owed: sender s's j-th record goes to (s + 1 + j % (P - 1)) % P */
    for (int d = 0; d < P; d++) {
        workers[d].id = d;
        for (int s = 0; s < P; s++) {
            if (s == d)
                continue;
            uint64_t r = (uint64_t)((d - s - 1 + P) % P);
            workers[d].owed += n / (P - 1) + (r < n % (P - 1));
        }
    }

    pthread_t th[MAX_P];
    double t0 = clock_s(CLOCK_MONOTONIC);
    for (int i = 0; i < P; i++)
        pthread_create(&th[i], NULL, run, &workers[i]);
    for (int i = 0; i < P; i++)
        pthread_join(th[i], NULL);
    double elapsed = clock_s(CLOCK_MONOTONIC) - t0;

    /* every record once: its handler index, plus its value in each of its argument words */
    uint64_t got = 0, sum = 0, want = 0;
    double cpu = 0, idle = 0;
    for (int i = 0; i < P; i++) {
        got += workers[i].got, sum += workers[i].sum;
        cpu += workers[i].cpu_s, idle += workers[i].idle_s;
        if (workers[i].got != workers[i].owed) {
            fprintf(stderr, "pair_floor: thread %d received %llu records, owed %llu\n", i,
                    (unsigned long long)workers[i].got, (unsigned long long)workers[i].owed);
            return 1;
        }
    }
    for (uint64_t s = 0; s < (uint64_t)P; s++)
        for (uint64_t j = 0; j < n; j++)
            want += (j & (NH - 1)) + (rec_bytes / 8) * (s * n + j);
    if (got != (uint64_t)P * n || sum != want) {
        fprintf(stderr, "pair_floor: %llu records dispatched of %llu, or a wrong sum\n",
                (unsigned long long)got, (unsigned long long)P * n);
        return 1;
    }
    printf("{\"bench\": \"pair_floor\", \"pes\": %d, \"records_per_sender\": %llu, "
           "\"record_bytes\": %llu, \"block_bytes\": %llu, \"records_per_block\": %llu, "
           "\"cpu_s\": %.6f, \"idle_s\": %.6f, \"busy_cpu_s\": %.6f, \"elapsed_s\": %.6f, "
           "\"rtt_ns\": %.1f, \"pinned\": %s, \"check\": \"ok\"}\n",
           P, (unsigned long long)n, (unsigned long long)rec_bytes, (unsigned long long)block_bytes,
           (unsigned long long)cap, cpu, idle, cpu - idle > 0 ? cpu - idle : 0, elapsed, rtt_ns,
           P <= ncpus ? "true" : "false");
    return 0;
}
