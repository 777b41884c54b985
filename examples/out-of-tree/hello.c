/* An out-of-tree program built against an installed mprof (docs/install.md).  Every PE greets
 * the next one N times through remote fiber invocations, counting them in the statistics
 * record of its greeter object (hello.perf, through the generated hooks: the record carries
 * the object's id from the object manager, the access category is declared with HELLO_ACCESS),
 * and inserts N keys into a hashtable of the installed instrumented library; PE 0 prints the
 * totals.  docs/tutorial.md writes a data structure of one's own in the same way. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hashtable.h"
#include "hello_perf.h"
#include "mp.h"

static _Atomic long arrived;
static _Atomic long stored;

static void greet(void *args)
{
    (void)args;
    arrived++;
}

static void pe_main(int argc, char **argv)
{
    (void)argv;
    int n = argc > 1 ? atoi(argv[1]) : 10;
    static _Thread_local int greeter; /* this PE's partition of the greeter object */
    mp_obj_t id;
    if (mp_obj_create(&greeter, &id) != MP_SUCCESS) /* collective: one id on every PE */
        abort();
    hello_stats_t *st = hello_stats_create(id);
    HELLO_SET(st, P, 1);
    HELLO_ACCESS(SEND);
    for (int i = 0; i < n; i++) {
        if (mp_invoke((mp_mype() + 1) % mp_npes(), greet, NULL, 0, MP_SCHED_FIFO) != MP_SUCCESS)
            abort();
        HELLO_INC(st, NGreet, 1);
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
    mp_config cfg;
    mp_config_init(&cfg);
    hello_perf_init(); /* registers the access categories of hello.perf */
    int rc = mp_main(&cfg, pe_main, argc, argv);
    printf("greetings %ld keys %ld\n", (long)arrived, (long)stored);
    return rc;
}
