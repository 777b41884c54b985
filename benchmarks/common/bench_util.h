/*
 * bench_util.h -- small helpers shared by the application programs (em3d, tripuzzle,
 * eigenvalue, ...) and the runtime's micro-benchmarks: a seeded hash for input generators,
 * `--name=value` options and integer arguments, the default PE count, and the check verdict
 * agreed by every PE.
 *
 * Header-only on purpose: each program stays one readable file plus this.
 */
#ifndef MPROF_BENCH_UTIL_H
#define MPROF_BENCH_UTIL_H

#include "mp.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: a stateless 64-bit hash.  Input generators derive every random
 * choice from it, so a choice depends only on (seed, where it is made) and the tests can
 * replay the generator in Python (tests/apps/apps.py). */
static inline uint64_t bu_mix64(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* hash of a path of integers: mix(mix(mix(seed + a) + b) + c) */
static inline uint64_t bu_hash3(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    return bu_mix64(bu_mix64(bu_mix64(seed + a) + b) + c);
}

/* uniform double in [0, 1) from the top 53 bits */
static inline double bu_unit(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

/* "--name=value": returns the value, or NULL when arg is not that option. */
static inline const char *bu_opt(const char *arg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0 || arg[n] != '=')
        return NULL;
    return arg + n + 1;
}

/* Parses an unsigned integer in [min, max]; on error prints "<prog>: <what> ..." and
 * returns false. */
static inline bool bu_u64(const char *prog, const char *what, const char *s, uint64_t min,
                          uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v = s && *s && *s != '-' ? strtoull(s, &end, 10) : 0;
    if (!s || !*s || *s == '-' || *end || v < min || v > max) {
        fprintf(stderr, "%s: %s must be an integer in [%llu, %llu] (got '%s')\n", prog, what,
                (unsigned long long)min, (unsigned long long)max, s ? s : "");
        return false;
    }
    *out = v;
    return true;
}

static inline bool bu_f64(const char *prog, const char *what, const char *s, double min, double max,
                          double *out)
{
    char *end;
    double v = s && *s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || !(v >= min && v <= max)) {
        fprintf(stderr, "%s: %s must be a number in [%g, %g] (got '%s')\n", prog, what, min, max,
                s ? s : "");
        return false;
    }
    *out = v;
    return true;
}

/* --check, and --fault: a test hook that corrupts one result before the check (which must
 * then fail).  Returns true when arg was one of them. */
static inline bool bu_check_flag(const char *arg, bool *check, bool *fault)
{
    if (!strcmp(arg, "--check"))
        *check = true;
    else if (!strcmp(arg, "--fault"))
        *fault = true;
    else
        return false;
    return true;
}

/* From pe_main: waits for the split-phase operation just issued, whose completion adds 1 to
 * counter c (*waited counts the completions waited for so far). */
static inline void bu_await(mp_counter_t c, uint64_t *waited, mp_status s, const char *what)
{
    if (s == MP_FAIL) {
        fprintf(stderr, "PE %d: %s failed\n", mp_mype(), what);
        exit(1);
    }
    if (mp_block_until(c, ++*waited) != MP_SUCCESS)
        exit(1);
}

/* The run settings: mp_config_init() (the MPROF_* environment), but 2 PEs when MPROF_PES is
 * not set and the program was not started by an MPI launcher (there P is the rank count). */
static inline void bu_config(mp_config *cfg)
{
    mp_config_init(cfg);
    const char *backend = getenv("MPROF_BACKEND");
    bool mpi = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
               (backend && strcmp(backend, "mpi") == 0);
    if (!getenv("MPROF_PES") && !mpi)
        cfg->npes = 2;
}

/* Collective, from pe_main: every PE passes its number of wrong results; returns the sum
 * over all PEs (a reduction on `obj`, so every rank of an MPI run learns the verdict and
 * exits with the same status). */
static inline double bu_agree(mp_obj_t obj, double wrong)
{
    double total = 0;
    mp_counter_t c = mp_counter_new(0);
    if (mp_obj_reduce(obj, MP_REDUCE_SUM, wrong, &total, c) == MP_FAIL ||
        mp_block_until(c, 1) != MP_SUCCESS) {
        fprintf(stderr, "check: the reduction of the verdict failed\n");
        exit(1);
    }
    mp_counter_free(c);
    return total;
}

#endif
