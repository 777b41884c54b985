/* A PAPI reader of mprof's software-defined events (docs/papi.md, tests/ecosystem).
 *
 *   rt_sde_reader N
 *
 * Every PE adds (pe+1)*N to the Count statistic and (pe+1)*N*0.5 to the Weight statistic of
 * its record of module "demo".  Once all PEs have, PE 0 reads through PAPI, while the run is
 * still going, sde:::MPROF::demo::Count, ::demo::Weight and ::rts::P (summed over PEs), and
 * main reads them again after mp_main, when the records have been freed.  Output lines:
 *   during Count Weight P
 *   after Count Weight P                                                                    */
#include <papi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp.h"

static const mp_stat_field fields[] = {{"Count", MP_STAT_U64, NULL}, {"Weight", MP_STAT_F64, NULL}};
static const mp_stat_module demo = {"demo", 2, fields};
static const char *events[] = {"sde:::MPROF::demo::Count", "sde:::MPROF::demo::Weight",
                               "sde:::MPROF::rts::P"};
static _Atomic int ready;
static int n;

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
    for (int i = 0; i < 3; i++)
        if ((rc = PAPI_add_named_event(set, events[i])) != PAPI_OK)
            die(events[i], rc);
    long long v[3];
    if ((rc = PAPI_start(set)) != PAPI_OK)
        die("PAPI_start", rc);
    if ((rc = PAPI_read(set, v)) != PAPI_OK)
        die("PAPI_read", rc);
    if ((rc = PAPI_stop(set, v)) != PAPI_OK)
        die("PAPI_stop", rc);
    double weight;
    memcpy(&weight, &v[1], sizeof weight); /* a PAPI_SDE_double event: the bits of a double */
    printf("%s %lld %.17g %lld\n", label, v[0], weight, v[2]);
    PAPI_cleanup_eventset(set);
    PAPI_destroy_eventset(&set);
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t *rec = mp_stats_new(&demo, 1);
    int k = mp_mype() + 1;
    for (int i = 0; i < k * n; i++) {
        rec[0] += 1;
        double w;
        memcpy(&w, &rec[1], sizeof w);
        w += 0.5;
        memcpy(&rec[1], &w, sizeof w);
    }
    ready++;
    if (mp_mype() == 0) {
        while (ready < mp_npes())
            sched_yield();
        read_events("during");
    }
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
    return rc;
}
