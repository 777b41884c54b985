/* An out-of-tree program built against an installed mprof (docs/install.md).  Every PE greets
 * the next one N times through remote fiber invocations, counting them in its own statistics
 * record (hello.perf), and inserts N keys into a hashtable of the installed instrumented
 * library; PE 0 prints the totals.
 *
 * It uses what `mprof_add_interface(hello hello.perf)` generates (hello_perf.h) as an
 * instrumented structure does: hello_perf_init() registers the interface's access categories
 * once, before mp_main; the statistics record belongs to a distributed object whose id the
 * object manager hands out (mp_obj_create), so that every PE's record of it has the same id in
 * the run profile; HELLO_INC counts and HELLO_ACCESS(SEND) declares the access category (both
 * compile away in a build without statistics or latency accounting). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hashtable.h"
#include "hello_perf.h"
#include "mp.h"

static _Atomic long arrived;
static _Atomic long stored;

typedef struct {
    mp_obj_t id;
    hello_stats_t *st;
} greeter; /* one partition per PE */

static _Thread_local greeter me;

static void greet(void *args)
{
    (void)args;
    arrived++;
}

static void pe_main(int argc, char **argv)
{
    (void)argv;
    int n = argc > 1 ? atoi(argv[1]) : 10;
    if (mp_obj_create(&me, &me.id) != MP_SUCCESS) /* collective: the same id on every PE */
        abort();
    me.st = hello_stats_create(me.id);
    HELLO_SET(me.st, P, 1);
    HELLO_ACCESS(SEND);
    for (int i = 0; i < n; i++) {
        if (mp_invoke((mp_mype() + 1) % mp_npes(), greet, NULL, 0, MP_SCHED_FIFO) != MP_SUCCESS)
            abort();
        HELLO_INC(me.st, NGreet, 1);
    }
    ht_options o;
    ht_options_init(&o, sizeof(uint64_t), 0);
    ht_t h;
    if (ht_create(&o, &h) != MP_SUCCESS)
        abort();
    for (int i = 0; i < n; i++) {
        uint64_t key = (uint64_t)mp_mype() * 1000000 + (uint64_t)i;
        if (ht_insert_unack(h, &key, NULL) == MP_FAIL)
            abort();
    }
    mp_counter_t done = mp_counter_new(0);
    if (ht_sync(h, done) == MP_FAIL || mp_block_until(done, 1) != MP_SUCCESS)
        abort();
    stored += (long)ht_local_count(h);
}

int main(int argc, char **argv)
{
    hello_perf_init(); /* the interface's access categories, once, before the PEs start */
    mp_config cfg;
    mp_config_init(&cfg);
    int rc = mp_main(&cfg, pe_main, argc, argv);
    printf("greetings %ld keys %ld\n", (long)arrived, (long)stored);
    return rc;
}
