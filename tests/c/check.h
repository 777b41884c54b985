/* check.h -- assertion and start-up helpers shared by every C test program (runtime and
 * data-structure tests alike). */
#ifndef MPROF_TEST_CHECK_H
#define MPROF_TEST_CHECK_H

#include "mp.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed check names the file and line and ends the process at once (from any PE). */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed (PE %d): %s\n", __FILE__, __LINE__, mp_mype(),    \
                    #cond);                                                                        \
            fflush(NULL);                                                                          \
            _Exit(1);                                                                              \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed (PE %d): %s == %s (%lld != %lld)\n", __FILE__,    \
                    __LINE__, mp_mype(), #a, #b, a_, b_);                                          \
            fflush(NULL);                                                                          \
            _Exit(1);                                                                              \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call) CHECK_EQ((call), MP_SUCCESS)

#define MAXPE 136 /* programs keep per-PE arrays of this size (two-hop routing starts at 66) */

/* Runs pe_main on `default_pes` PEs unless MPROF_PES says otherwise; with `exact`, the
 * program is written for exactly default_pes PEs (its arrays and partners are PE 0 and PE 1),
 * and another MPROF_PES is refused with a line, not run into a crash. */
static inline int tst_run_pes(int argc, char **argv, int default_pes, bool exact,
                              mp_pe_main_fn pe_main)
{
    mp_config cfg;
    mp_config_init(&cfg);
    if (!getenv("MPROF_PES"))
        cfg.npes = default_pes;
    if (exact && cfg.npes != default_pes) {
        fprintf(stderr, "%s: written for %d PEs, not MPROF_PES=%d\n", argc > 0 ? argv[0] : "test",
                default_pes, cfg.npes);
        return 2;
    }
    if (cfg.npes > MAXPE) {
        fprintf(stderr, "at most %d PEs\n", MAXPE);
        return 1;
    }
    return mp_main(&cfg, pe_main, argc, argv);
}

static inline int tst_run(int argc, char **argv, int default_pes, mp_pe_main_fn pe_main)
{
    return tst_run_pes(argc, argv, default_pes, false, pe_main);
}

static inline int tst_run_exactly(int argc, char **argv, int pes, mp_pe_main_fn pe_main)
{
    return tst_run_pes(argc, argv, pes, true, pe_main);
}

/* tst_run_fiber's fiber and the PE count of its run, for main to read after it. */
static mp_fiber_fn tst_every_pe_fn;
static int tst_npes;

static inline void tst_every_pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() == 0)
        tst_npes = mp_npes();
    CHECK_OK(mp_spawn(tst_every_pe_fn, NULL, 0, MP_SCHED_FIFO));
}

/* Runs `fn` as a FIFO fiber on every PE (tst_run's PEs); tst_npes holds P afterwards. */
static inline int tst_run_fiber(int argc, char **argv, int default_pes, mp_fiber_fn fn)
{
    tst_every_pe_fn = fn;
    return tst_run(argc, argv, default_pes, tst_every_pe_main);
}

/* Integer option from argv: name=value (e.g. n=1000), else the default. */
static inline long tst_opt(int argc, char **argv, const char *name, long dflt)
{
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
            return strtol(argv[i] + n + 1, NULL, 0);
    return dflt;
}

/* argv[1] selects a scenario in programs that have several. */
static inline const char *tst_scenario(int argc, char **argv, const char *dflt)
{
    return argc > 1 ? argv[1] : dflt;
}

/* Handles that name no structure of a library's kind, for its misuse tests: a snapshot, a plain
 * object (its partition an int) and an id no PE created. */
static inline void tst_foreign_ids(mp_obj_t ids[3])
{
    static int plain_part = 42;
    mp_snapshot_t snap;
    CHECK_OK(mp_snapshot_new(&snap));
    CHECK_OK(mp_obj_create(&plain_part, &ids[1]));
    ids[0] = snap;
    ids[2] = 77777;
}

/* Burns CPU for about `seconds` (a deterministic stand-in for computation). */
static inline void tst_busy(double seconds)
{
    double end = mp_wtime() + seconds;
    volatile unsigned long x = 0;
    while (mp_wtime() < end)
        for (int i = 0; i < 1000; i++)
            x += (unsigned long)i;
    (void)x; /* clang: "set but not used"; the volatile stores are the work */
}

#endif
