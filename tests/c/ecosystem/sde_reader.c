/* A PAPI reader of mprof's software-defined events (docs/papi.md, tests/ecosystem).
 *
 *   rt_sde_reader N
 *
 * Every PE runs pe+1 empty fibers, then one that adds (pe+1)*N to the Count statistic and
 * (pe+1)*N*0.5 to the Weight statistic of its record of module "demo", and counts (pe+1)*N
 * events in a variable of its own from which the record derives its Derived statistic
 * (mp_stats_derive).  Once all PEs have, PE 0 reads through PAPI, while the run is still
 * going, sde:::MPROF::demo::Count, ::demo::Weight, ::rts::P, ::demo::Derived and
 * ::rts::ThreadDisp (summed over PEs), while the PEs fold their derived statistic into the
 * record (mp_stats_derive NULL) and count more events, which must not count; main reads them
 * again after mp_main, when the records have been freed.  Output lines:
 *   during Count Weight P Derived ThreadDisp
 *   after Count Weight P Derived ThreadDisp
 *   unknown ADD_RESULT VALUE      (an event of a module the program never made: PAPI 7.0
 *                                  adds it and reads -1)                                    */
#include <papi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp.h"

static const mp_stat_field fields[] = {
    {"Count", MP_STAT_U64, NULL}, {"Weight", MP_STAT_F64, NULL}, {"Derived", MP_STAT_U64, NULL}};
static const mp_stat_module demo = {"demo", 3, fields, 0, NULL, NULL};
#define NEVENTS 5
static const char *events[NEVENTS] = {"sde:::MPROF::demo::Count", "sde:::MPROF::demo::Weight",
                                      "sde:::MPROF::rts::P", "sde:::MPROF::demo::Derived",
                                      "sde:::MPROF::rts::ThreadDisp"};
static _Atomic int ready;
static int n;
static uint64_t seen[64]; /* events counted by each PE, read by its record's derive function */

static void derive(const void *ctx, uint64_t *add)
{
    add[2] = __atomic_load_n((const uint64_t *)ctx, __ATOMIC_RELAXED);
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "sde_reader: %s: %s\n", what, PAPI_strerror(rc));
    exit(3);
}

/* Reads the three events with a fresh event set (the events exist once a record of each
 * module has been created) and prints them. */
static void read_events(const char *label)
{
    int set = PAPI_NULL, rc;
    if ((rc = PAPI_create_eventset(&set)) != PAPI_OK)
        die("PAPI_create_eventset", rc);
    for (int i = 0; i < NEVENTS; i++)
        if ((rc = PAPI_add_named_event(set, events[i])) != PAPI_OK)
            die(events[i], rc);
    long long v[NEVENTS];
    if ((rc = PAPI_start(set)) != PAPI_OK)
        die("PAPI_start", rc);
    if ((rc = PAPI_read(set, v)) != PAPI_OK)
        die("PAPI_read", rc);
    if ((rc = PAPI_stop(set, v)) != PAPI_OK)
        die("PAPI_stop", rc);
    double weight;
    memcpy(&weight, &v[1], sizeof weight); /* a PAPI_SDE_double event: the bits of a double */
    printf("%s %lld %.17g %lld %lld %lld\n", label, v[0], weight, v[2], v[3], v[4]);
    PAPI_cleanup_eventset(set);
    PAPI_destroy_eventset(&set);
}

static void tick(void *p) { (void)p; }

/* The PE's work, in a fiber queued after the PE's k ticks: they have been dispatched (and
 * counted in rts::ThreadDisp) when it runs. */
static void work(void *p)
{
    (void)p;
    uint64_t *rec = mp_stats_new(&demo, 1);
    int me = mp_mype(), k = me + 1;
    if (mp_stats_derive(rec, derive, &seen[me]) != MP_SUCCESS)
        exit(3);
    for (int i = 0; i < k * n; i++) {
        rec[0] += 1;
        double w;
        memcpy(&w, &rec[1], sizeof w);
        w += 0.5;
        memcpy(&rec[1], &w, sizeof w);
        __atomic_store_n(&seen[me], seen[me] + 1, __ATOMIC_RELAXED);
    }
    ready++;
    if (me == 0) {
        while (ready < mp_npes())
            sched_yield();
        read_events("during");
    }
    if (mp_stats_derive(rec, NULL, NULL) != MP_SUCCESS) /* folds the derived count in */
        exit(3);
    __atomic_store_n(&seen[me], seen[me] + 1000, __ATOMIC_RELAXED);
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int me = mp_mype();
    if (me >= 64) {
        fprintf(stderr, "sde_reader: at most 64 PEs\n");
        exit(2);
    }
    for (int i = 0; i <= me; i++)
        mp_spawn(tick, NULL, 0, MP_SCHED_FIFO);
    mp_spawn(work, NULL, 0, MP_SCHED_FIFO);
}

int main(int argc, char **argv)
{
    n = argc > 1 ? atoi(argv[1]) : 1000;
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT)
        die("PAPI_library_init", rc);
    mp_config cfg;
    mp_config_init(&cfg);
    rc = mp_main(&cfg, pe_main, argc, argv);
    read_events("after");
    int set = PAPI_NULL;
    long long v = 0;
    PAPI_create_eventset(&set);
    int added = PAPI_add_named_event(set, "sde:::MPROF::nosuch::Count");
    if (added == PAPI_OK && PAPI_start(set) == PAPI_OK) {
        PAPI_read(set, &v);
        PAPI_stop(set, &v);
    }
    printf("unknown %d %lld\n", added, v);
    return rc;
}
