/*
 * gate_ops PES NA NB -- a deliberately simple instrumented workload for `mprof gate` tests.
 *
 * Every PE owns a small open-addressing hash set and performs NA inserts (category OP_A), then
 * NB lookups (category OP_B) in a second set, filled alike in every run.  Each operation hashes
 * its key with ROUNDS (50) mixing rounds, so its cost is a fixed amount of real computation;
 * the statistics (gateops.perf) count the operations.  Built with -DSLOW_OP_B, lookups do
 * SLOW_ROUNDS more mixing rounds (default (SLOW_FACTOR - 1) x ROUNDS, SLOW_FACTOR default 3):
 * a slowdown in exactly one operation.  The lookups run one after the other (each waits for
 * the last), so a lookup costs the latency of its hashing and probe, and extra rounds cost what
 * their latency does: benchmarks/gate/gate_bench.py sets SLOW_ROUNDS=5, a tenth of the hashing,
 * measured +10 % to +11 % per lookup.
 * Honours MPROF_OUT like every mprof program; the profile names the program "gate_ops"
 * whatever the binary is called, so two builds compare as the same benchmark.
 */
#include "gateops_perf.h"
#include "mp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef ROUNDS
#define ROUNDS 50
#endif
#if defined(SLOW_OP_B) && !defined(SLOW_FACTOR)
#define SLOW_FACTOR 3
#endif
#if defined(SLOW_OP_B) && !defined(SLOW_ROUNDS)
#define SLOW_ROUNDS ((SLOW_FACTOR - 1) * ROUNDS)
#endif

#define TABLE_BITS 12
#define TABLE_SIZE (1u << TABLE_BITS)
#define LOOKUP_FILL 1024 /* keys in the table the lookups search (a quarter full) */

static long n_insert, n_lookup;

typedef struct {
    uint64_t keys[TABLE_SIZE];
    unsigned char used[TABLE_SIZE];
    unsigned count;
    gateops_stats_t *st;
} hashset;

static uint64_t mix(uint64_t x, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        x ^= x >> 31;
        x *= 0x9E3779B97F4A7C15ULL;
    }
    return x;
}

static void place(hashset *s, uint64_t key)
{
    unsigned h = (unsigned)(mix(key, ROUNDS) & (TABLE_SIZE - 1));
    while (s->used[h] && s->keys[h] != key)
        h = (h + 1) & (TABLE_SIZE - 1);
    if (!s->used[h]) {
        s->used[h] = 1;
        s->keys[h] = key;
        s->count++;
    }
}

static void set_clear(hashset *s)
{
    for (unsigned i = 0; i < TABLE_SIZE; i++)
        s->used[i] = 0;
    s->count = 0;
}

/* OP_A: insert (the table is cleared when it gets half full, so probes stay short) */
static void set_insert(hashset *s, uint64_t key)
{
    GATEOPS_INC(s->st, NInsert, 1);
    if (s->count >= TABLE_SIZE / 2)
        set_clear(s);
    place(s, key);
}

static volatile uint64_t zero_mask; /* always 0, but the compiler cannot know */

/* OP_B: lookup; returns the key's slot, -1 if absent */
static long set_lookup(hashset *s, uint64_t key)
{
    GATEOPS_INC(s->st, NLookup, 1);
    uint64_t hash = mix(key, ROUNDS);
#ifdef SLOW_OP_B
    /* the deliberate slowdown: SLOW_ROUNDS more mixing on the lookup's own dependency chain
     * (the probe waits for it); masked with a volatile zero, so lookups still find what
     * inserts stored */
    hash ^= mix(hash, SLOW_ROUNDS) & zero_mask;
#endif
    unsigned h = (unsigned)(hash & (TABLE_SIZE - 1));
    while (s->used[h]) {
        if (s->keys[h] == key)
            return (long)h;
        h = (h + 1) & (TABLE_SIZE - 1);
    }
    return -1;
}

static volatile long sink;

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    static _Thread_local hashset set; /* one per PE thread */
    set_clear(&set);
    set.st = gateops_stats_create(1);
    GATEOPS_SET(set.st, P, 1);
    long found = 0;
    uint64_t key = 0x12345u + (uint64_t)mp_mype();
    /* Two phases, not interleaved: an insert and a lookup are independent chains of
     * multiplications that an out-of-order core overlaps, so interleaved their costs would
     * not add up (a slower lookup hid partly behind the insert beside it, and the fit gave
     * part of it to OP_A).  Within a phase every operation costs the same. */
    GATEOPS_ACCESS(INSERT); /* the CPU time that follows is sampled as gateops:INSERT */
    for (long a = 0; a < n_insert; a++)
        set_insert(&set, key++);
    /* The lookups search a table filled the same way whatever NA is (LOOKUP_FILL keys, part
     * of the start-up cost): searching the inserts' table, a lookup's probe length depended on
     * how full NA left it (NA mod TABLE_SIZE / 2), and lookups after 100000 inserts cost 5 %
     * more than after 300000, a misfit of the linear model larger than the noise. */
    static _Thread_local hashset ref;
    set_clear(&ref);
    ref.st = set.st;
    uint64_t ref_key = 0x9876543u + (uint64_t)mp_mype();
    for (unsigned i = 0; i < LOOKUP_FILL; i++)
        place(&ref, ref_key + i); /* not an insert of the workload: not counted */
    /* One lookup after the other: the next key depends on the slot this lookup found (masked
     * with a zero the compiler cannot see), so the lookups form one dependency chain and a
     * lookup costs the latency of its hashing and probe.  Independent lookups overlapped on
     * the out-of-order core by a varying amount (depending, it seemed, on what ran on the
     * core's other hardware thread), and the same extra work in a lookup cost +7 % to +10 %
     * from run to run. */
    uint64_t zero = zero_mask, index = 0;
    GATEOPS_ACCESS(LOOKUP);
    for (long b = 0; b < n_lookup; b++) {
        long slot = set_lookup(&ref, ref_key + index);
        found += slot >= 0;
        index = (index + 7 + ((uint64_t)slot & zero)) & (LOOKUP_FILL - 1);
    }
    sink = found;
    GATEOPS_ACCESS(OPS);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PES NA NB\n", argv[0]);
        return 2;
    }
    gateops_perf_init();
    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = atoi(argv[1]);
    cfg.program = "gate_ops";
    n_insert = atol(argv[2]);
    n_lookup = atol(argv[3]);
    if (cfg.npes < 1 || n_insert < 0 || n_lookup < 0) {
        fprintf(stderr, "gate_ops: bad arguments\n");
        return 2;
    }
    mp_param("na", (double)n_insert);
    mp_param("nb", (double)n_lookup);
    return mp_main(&cfg, pe_main, argc, argv);
}
