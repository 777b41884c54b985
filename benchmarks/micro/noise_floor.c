/*
 * noise_floor [SCALE] -- a fixed amount of single-threaded work outside the runtime, timed in
 * the thread's CPU time, so that replicate_spread.py can set the scatter of mprof's runs beside
 * the scatter of the machine itself.
 *
 * Four parts, each the same instructions in every run:
 *   alu   a chain of dependent multiply-adds in registers (no memory traffic);
 *   ilp   eight independent chains of the same (the core's throughput, not its latency);
 *   mem   a dependent walk through a 16 MiB random cycle of cache lines (a cache or memory
 *         miss per step, as the runtime's message buffers and fiber slabs are, at worst);
 *   ring  a FIFO ring of function pointers with 32 bytes of arguments, each item called in
 *         turn and one in 17 queueing 16 more: the shape of the scheduler's loop running
 *         empty fibers (rt_workload with no messages), in L1, with no runtime at all.
 * If identical runs of this program differ by some percent in CPU time, no cost measured on
 * the same machine can be steadier than that, whatever the code it runs.
 * Prints one JSON object: {"alu_cpu_s": .., "mem_cpu_s": .., "ilp_cpu_s": .., "ring_cpu_s": ..,
 * "cpu_s": ..} (cpu_s: the four together).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE 64
#define MEM_BYTES ((size_t)16 << 20)

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A multiply-add chain: each step needs the previous one, so its time is the chain's latency,
 * independent of what else the core could overlap. */
static uint64_t alu(long steps)
{
    uint64_t x = 1;
    for (long i = 0; i < steps; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

/* Eight independent chains: the core can run them side by side, so their time is the core's
 * throughput, which a host that runs another vCPU on the same physical core (SMT) shares,
 * whereas one dependent chain (alu) runs at its latency either way. */
static uint64_t ilp(long steps)
{
    uint64_t x0 = 1, x1 = 2, x2 = 3, x3 = 4, x4 = 5, x5 = 6, x6 = 7, x7 = 8;
    const uint64_t m = 6364136223846793005ULL, c = 1442695040888963407ULL;
    for (long i = 0; i < steps; i++) {
        x0 = x0 * m + c, x1 = x1 * m + c, x2 = x2 * m + c, x3 = x3 * m + c;
        x4 = x4 * m + c, x5 = x5 * m + c, x6 = x6 * m + c, x7 = x7 * m + c;
        /* scalar integer code, as the runtime's: kept out of vector registers */
        __asm__ volatile("" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3));
        __asm__ volatile("" : "+r"(x4), "+r"(x5), "+r"(x6), "+r"(x7));
    }
    return x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7;
}

/* One random cycle through all lines of the buffer (Sattolo's shuffle, a fixed seed), then
 * `steps` dependent loads along it. */
static size_t mem(long steps)
{
    size_t n = MEM_BYTES / LINE;
    size_t *next = aligned_alloc(LINE, MEM_BYTES);
    size_t *order = malloc(n * sizeof *order);
    if (!next || !order) {
        fprintf(stderr, "noise_floor: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    uint64_t r = 88172645463325252ULL;
    for (size_t i = n - 1; i > 0; i--) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t j = (size_t)(r % i);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    const size_t stride = LINE / sizeof *next;
    for (size_t i = 0; i < n; i++)
        next[order[i] * stride] = order[(i + 1) % n] * stride;
    free(order);
    size_t at = 0;
    for (long i = 0; i < steps; i++)
        at = next[at];
    free(next);
    return at;
}

/* The ring: loads, stores and an indirect call per item, all in L1, the kind of code whose
 * cost a host's other tenants change most (see docs/measurements/runtime-messaging.md, "The
 * machine's own scatter"); the ALU chains above do not show it. */
#define RING 1024 /* a power of two */
typedef struct {
    void (*fn)(void *);
    unsigned char args[32];
} ring_item;
static ring_item ring_buf[RING];
static unsigned ring_head, ring_tail;
static long ring_left, ring_calls;

static void ring_push(void (*fn)(void *), const void *args)
{
    ring_item *it = &ring_buf[ring_tail++ % RING];
    it->fn = fn;
    memcpy(it->args, args, sizeof it->args);
}

__attribute__((noinline)) static void ring_leaf(void *args)
{
    ring_calls += ((unsigned char *)args)[0];
}

__attribute__((noinline)) static void ring_step(void *args)
{
    for (int i = 0; i < 16 && ring_left > 0; i++, ring_left--)
        ring_push(ring_leaf, args);
    if (ring_left > 0)
        ring_push(ring_step, args);
}

static long ring(long items)
{
    static const unsigned char args[32] = {1};
    ring_left = items;
    ring_push(ring_step, args);
    while (ring_head != ring_tail) {
        ring_item *it = &ring_buf[ring_head++ % RING];
        it->fn(it->args);
    }
    return ring_calls;
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (argc > 2 || !(scale > 0 && scale <= 100)) {
        fprintf(stderr, "usage: noise_floor [SCALE]  (0 < SCALE <= 100, default 1)\n");
        return 2;
    }
    double t0 = thread_cpu_s();
    uint64_t a = alu((long)(60e6 * scale));
    double t1 = thread_cpu_s();
    size_t m = mem((long)(1e6 * scale));
    double t2 = thread_cpu_s();
    uint64_t b = ilp((long)(30e6 * scale));
    double t3 = thread_cpu_s();
    long c = ring((long)(24e6 * scale));
    double t4 = thread_cpu_s();
    /* the results are printed (as a dummy field) so that the work cannot be optimised away */
    printf("{\"alu_cpu_s\": %.6f, \"mem_cpu_s\": %.6f, \"ilp_cpu_s\": %.6f, "
           "\"ring_cpu_s\": %.6f, \"cpu_s\": %.6f, \"check\": %llu}\n",
           t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0,
           (unsigned long long)((a ^ b ^ m ^ (uint64_t)c) & 0xff));
    return 0;
}
