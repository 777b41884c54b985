/* misuse.c -- each kind of misuse returns its error code and prints a clear message on
 * stderr, and the run goes on: a fiber waiting on two counters, invalid PEs, oversized
 * arguments and messages, a blocking call inside a fiber, enabling a fiber twice.  Prints
 * "<case> <code>" lines; pytest matches them with the stderr messages. */
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

static atomic_int after;
static mp_obj_t objs[MAXPE];

static void nop(void *p) { (void)p; }
static void counted(void *p)
{
    (void)p;
    atomic_fetch_add(&after, 1);
}

static void report(const char *what, int code)
{
    printf("%s %d\n", what, code);
    fflush(stdout);
}

static void in_fiber(void *p)
{
    (void)p;
    mp_counter_t c1 = mp_counter_new(0), c2 = mp_counter_new(0);
    mp_fiber_t f = mp_fiber_create(counted, NULL, 0, MP_SCHED_FIFO);
    CHECK_OK(mp_counter_wait(c1, 1, f));
    report("already_waiting", mp_counter_wait(c2, 1, f));
    report("block_in_fiber", mp_block_until(c2, 1));
    mp_counter_free(c1);   /* refused: a fiber waits on it */
    mp_counter_add(c1, 1); /* the fiber still runs once */

    /* one global operation per object at a time (PE 1 joins the first one) */
    mp_counter_t gd = mp_counter_new(0);
    report("gop_first", mp_obj_barrier(objs[0], gd));
    report("gop_busy", mp_obj_barrier(objs[0], gd));

    report("invalid_pe_invoke", mp_invoke(mp_npes(), nop, NULL, 0, MP_SCHED_FIFO));
    /* arguments named by size but not given, aggregated and not, and no function */
    report("invoke_null_args", mp_invoke(1, nop, NULL, 8, MP_SCHED_FIFO));
    report("invoke_null_args_large", mp_invoke(1, nop, NULL, 200, MP_SCHED_FIFO));
    report("invoke_null_fn", mp_invoke(1, NULL, NULL, 0, MP_SCHED_FIFO));
    report("invalid_pe_negative", mp_invoke(-1, nop, NULL, 0, MP_SCHED_FIFO));
    report("invalid_pe_counter", mp_counter_add_remote(mp_npes() + 3, c1, 1));

    static unsigned char big[MP_FIBER_ARGS_MAX + 1];
    report("too_large_invoke", mp_invoke(1, nop, big, sizeof big, MP_SCHED_FIFO));
    report("too_large_spawn", mp_spawn(nop, big, sizeof big, MP_SCHED_FIFO));
    report("too_large_create", mp_fiber_create(nop, big, sizeof big, MP_SCHED_FIFO) == NULL
                                   ? MP_ERR_TOO_LARGE
                                   : MP_SUCCESS);
    /* a transfer larger than the biggest message: refused before any byte is touched */
    mp_counter_t d = mp_counter_new(0);
    report("too_large_write", mp_bulk_write(1, big, big, mp_max_message() + 1, d));
    report("too_large_write_huge", mp_bulk_write(1, big, big, (size_t)-1, d));
    report("too_large_store_user",
           mp_bulk_store(1, big, big, 16, NULL, nop, big, MP_FIBER_ARGS_MAX - 8));
    report("too_large_read_huge", mp_bulk_read(1, big, big, (size_t)-16, d));

    /* a counter freed twice is refused: the pool must not hand it out twice */
    mp_counter_t twice = mp_counter_new(0);
    mp_counter_free(twice);
    mp_counter_free(twice);
    mp_counter_t n1 = mp_counter_new(0), n2 = mp_counter_new(0);
    report("double_free_distinct", n1 != n2 ? MP_SUCCESS : MP_ERR_BAD_STATE);
    mp_counter_free(n1);
    mp_counter_free(n2);
    /* a counter only grows: an add past 2^64 - 1 is refused, the value kept (it wrapped to 0) */
    mp_counter_t w = mp_counter_new(UINT64_MAX - 1);
    mp_counter_add(w, 2);
    report("counter_wrap", mp_counter_value(w) == UINT64_MAX - 1 ? MP_SUCCESS : MP_ERR_BAD_STATE);
    mp_counter_add(w, 1);
    report("counter_to_max", mp_counter_value(w) == UINT64_MAX ? MP_SUCCESS : MP_ERR_BAD_STATE);
    mp_counter_free(w);
    /* the code returned matches the message printed */
    report("wait_null", mp_counter_wait(NULL, 1, mp_fiber_create(nop, NULL, 0, MP_SCHED_FIFO)));

    mp_fiber_t g = mp_fiber_create(counted, NULL, 0, MP_SCHED_FIFO);
    CHECK_OK(mp_fiber_enable(g));
    report("enable_twice", mp_fiber_enable(g));
    report("unknown_sched", mp_spawn(nop, NULL, 0, (mp_sched_t)99));
    uint64_t not_a_record[2] = {0, 0};
    report("derive_not_record", mp_stats_derive(not_a_record, NULL, NULL));

    /* the run goes on: these must all arrive */
    for (int i = 0; i < 10; i++)
        CHECK_OK(mp_invoke(1, counted, &i, sizeof i, MP_SCHED_FIFO));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    CHECK_OK(mp_obj_create(NULL, &objs[me]));
    if (me == 1) {
        mp_counter_t c = mp_counter_new(0);
        CHECK_EQ(mp_obj_barrier(objs[me], c), MP_WAIT);
    }
    if (me != 0)
        return;
    report("continue_in_main", mp_continue(nop, MP_SCHED_FIFO) == NULL ? MP_ERR_NOT_IN_FIBER : 0);
    CHECK_OK(mp_spawn(in_fiber, NULL, 0, MP_SCHED_FIFO));
}

/* ---- scenarios of their own (argv[1]) ---------------------------------------------- */

/* One slot holding at most one fiber: enough to be a scheduler. */
static mp_fiber_t held;
static void hold(void *st, mp_fiber_t f)
{
    (void)st;
    held = f;
}
static mp_fiber_t release_held(void *st)
{
    (void)st;
    mp_fiber_t f = held;
    held = NULL;
    return f;
}

/* A custom scheduler registered on PE 0 only, named in an invocation of PE 1: the sender
 * cannot tell, the receiver must end the run with a message (not index past its table). */
static void foreign_sched_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() != 0)
        return;
    static const mp_sched_ops ops = {hold, release_held, "hold"};
    mp_sched_t id;
    CHECK_OK(mp_sched_register(&ops, NULL, &id));
    report("foreign_sched_invoke", mp_invoke(1, nop, NULL, 0, id));
}

/* Handles kept past mp_main: their memory went with the PEs. */
static mp_counter_t kept_counter;
static mp_fiber_t kept_fiber;
static void keep_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() != 0)
        return;
    kept_counter = mp_counter_new(0);
    kept_fiber = mp_fiber_create(nop, NULL, 0, MP_SCHED_FIFO);
    mp_counter_t freed = mp_counter_new(0);
    mp_counter_free(freed);
    /* its value is gone with it: a later counter may reuse the memory */
    report("counter_value_freed", mp_counter_value(freed) == 0 ? MP_ERR_BAD_STATE : 0);
    report("counter_value_null", mp_counter_value(NULL) == 0 ? MP_ERR_INVALID_ARG : 0);
    /* a self transfer has the size limit and the counter checks of a remote one */
    static char byte;
    report("bulk_write_self_huge",
           mp_bulk_write(0, &byte, &byte, mp_max_message() + 1, kept_counter));
    report("bulk_read_self_freed_counter", mp_bulk_read(0, &byte, &byte, 1, freed));
    /* updates of a counter this PE cannot update: the code says so, not only the message */
    report("add_remote_freed", mp_counter_add_remote(0, freed, 1));
    report("add_remote_null", mp_counter_add_remote(mp_npes() - 1, NULL, 1));
    /* module descriptions the profile writer could not read */
    mp_stat_field unnamed = {NULL, MP_STAT_U64, NULL}, odd = {"x", (mp_stat_type)42, NULL};
    mp_stat_module no_fields = {"m", 3, NULL, 0, NULL, NULL, NULL};
    mp_stat_module no_name = {"m", 1, &unnamed, 0, NULL, NULL, NULL};
    mp_stat_module bad_type = {"m", 1, &odd, 0, NULL, NULL, NULL};
    report("stats_no_fields", mp_stats_new(&no_fields, 1) ? 0 : MP_ERR_INVALID_ARG);
    report("stats_no_name", mp_stats_new(&no_name, 1) ? 0 : MP_ERR_INVALID_ARG);
    report("stats_bad_type", mp_stats_new(&bad_type, 1) ? 0 : MP_ERR_INVALID_ARG);
    /* an unregistered category's word would index past the latency table */
    report("access_word_unknown",
           mp_access_word(200) == mp_access_word(MP_ACCESS_UNCLASSIFIED) ? MP_ERR_INVALID_ARG : 0);
}

static void after_main(int argc, char **argv)
{
    char name1[300], name2[300];
    memset(name1, 'a', sizeof name1 - 1), memset(name2, 'a', sizeof name2 - 1);
    name1[sizeof name1 - 1] = name2[sizeof name2 - 1] = '\0';
    name2[sizeof name2 - 2] = 'b'; /* differs past the 255th byte */
    report("access_null", mp_access_register(NULL, "x") < 0 ? MP_ERR_INVALID_ARG : 0);
    report("access_long", mp_access_register("m", name1) < 0 && mp_access_register("m", name2) < 0
                              ? MP_ERR_INVALID_ARG
                              : 0);
    /* values JSON cannot hold, a NULL name: refused, not written into the profile */
    mp_param("ratio", 0.0 / 0.0);
    report("param_nan", 1);
    mp_param(NULL, 1);
    report("param_null", 1);
    mp_param("", 1);
    report("param_empty", 1);
    mp_flush();
    report("flush_outside", 5);
    /* a registered category, outside any PE */
    mp_access_declare(mp_access_register("m", "declared_outside"));
    report("access_declare_outside", 5);
    int rc = tst_run(argc, argv, 2, keep_main);
    printf("rc=%d\n", rc);
    report("counter_value_after", mp_counter_value(kept_counter) == 0 ? MP_ERR_BAD_STATE : 0);
    mp_counter_free(kept_counter); /* a message, and no write to freed memory */
    report("fiber_enable_after", mp_fiber_enable(kept_fiber));
}

/* Settings set field by field get the limits the environment's values have. */
static void config_case(const char *what, void (*change)(mp_config *))
{
    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = 2;
    change(&cfg);
    report(what, mp_main(&cfg, keep_main, 0, NULL));
}
static void huge_agg(mp_config *c) { c->agg_bytes = (size_t)-1; }
static void fast_sampler(mp_config *c) { c->sample_s = 1e-6; }
static void nan_timeout(mp_config *c) { c->idle_timeout_s = 0.0 / 0.0; }
static void tiny_timeout(mp_config *c) { c->idle_timeout_s = 1e-6; }

/* Scenario "nan_stat": a double statistic that holds no finite number is listed as absent in
 * the run profile (JSON has no NaN), beside its module's other statistics. */
static void nan_stat_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    static const mp_stat_field fields[] = {
        {"ratio", MP_STAT_F64, NULL}, {"rate", MP_STAT_F64, NULL}, {"count", MP_STAT_U64, NULL}};
    static const mp_stat_module module = {"nanmod", 3, fields, 0, NULL, NULL, NULL};
    double *rec = mp_stats_new(&module, 7);
    rec[0] = mp_mype() == 0 ? 0.0 / 0.0 : 1.0 / 0.0;
    rec[1] = 2.5;
    ((uint64_t *)rec)[2] = 3;
}

/* Scenario "concurrent": a second thread's mp_main while the first one runs is refused. */
static atomic_int first_running, second_done;
static void waiting_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() != 0)
        return;
    atomic_store(&first_running, 1);
    while (!atomic_load(&second_done))
        sched_yield();
}

static void *first_main(void *arg)
{
    (void)arg;
    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = 2;
    printf("first rc=%d\n", mp_main(&cfg, waiting_main, 0, NULL));
    return NULL;
}

static void concurrent(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, first_main, NULL) == 0);
    while (!atomic_load(&first_running))
        sched_yield();
    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = 2;
    report("main_concurrent", mp_main(&cfg, keep_main, 0, NULL));
    atomic_store(&second_done, 1);
    CHECK(pthread_join(t, NULL) == 0);
}

/* Scenario "names": names and object ids the run profile carries must make a profile its
 * readers accept: object ids unique on a PE (the runtime's is 0), distinct statistic names in a
 * module, UTF-8 names, no ':' in an access category's module. */
static void names_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() != 0)
        return;
    static const mp_stat_field one[] = {{"n", MP_STAT_U64, NULL}};
    static const mp_stat_field twice[] = {{"n", MP_STAT_U64, NULL}, {"n", MP_STAT_U64, NULL}};
    static const mp_stat_field latin1[] = {{"caf\xe9", MP_STAT_U64, NULL}};
    static const mp_stat_module a = {"moda", 1, one, 0, NULL, NULL, NULL};
    static const mp_stat_module b = {"modb", 1, one, 0, NULL, NULL, NULL};
    static const mp_stat_module dup = {"dup", 2, twice, 0, NULL, NULL, NULL};
    static const mp_stat_module badmod = {"m\xff", 1, one, 0, NULL, NULL, NULL};
    static const mp_stat_module badfield = {"bf", 1, latin1, 0, NULL, NULL, NULL};
    CHECK(mp_stats_new(&a, 7) != NULL);
    report("stats_same_id", mp_stats_new(&a, 7) ? 0 : MP_ERR_INVALID_ARG);
    report("stats_same_id_other_module", mp_stats_new(&b, 7) ? 0 : MP_ERR_INVALID_ARG);
    report("stats_runtime_id", mp_stats_new(&b, MP_OBJ_RTS) ? 0 : MP_ERR_INVALID_ARG);
    CHECK(mp_stats_new(&b, UINT64_MAX) != NULL);
    report("stats_max_id_twice", mp_stats_new(&a, UINT64_MAX) ? 0 : MP_ERR_INVALID_ARG);
    for (uint64_t id = 100; id < 1100; id++) /* the id set grows */
        CHECK(mp_stats_new(id % 2 ? &a : &b, id) != NULL);
    report("stats_same_id_late", mp_stats_new(&a, 555) ? 0 : MP_ERR_INVALID_ARG);
    report("stats_two_fields_one_name", mp_stats_new(&dup, 8) ? 0 : MP_ERR_INVALID_ARG);
    report("stats_module_not_utf8", mp_stats_new(&badmod, 9) ? 0 : MP_ERR_INVALID_ARG);
    report("stats_field_not_utf8", mp_stats_new(&badfield, 10) ? 0 : MP_ERR_INVALID_ARG);
    report("access_colon_module", mp_access_register("a:b", "c") < 0 ? MP_ERR_INVALID_ARG : 0);
    report("access_not_utf8", mp_access_register("m", "x\xc3") < 0 ? MP_ERR_INVALID_ARG : 0);
    report("access_colon_name", mp_access_register("a", "b:c") < 0 ? MP_ERR_INVALID_ARG : 0);
    mp_param("caf\xe9", 1);
    report("param_not_utf8", 1);
    mp_param("caf\xc3\xa9", 2); /* UTF-8: recorded */
}

/* Scenarios "hook_invoke", "hook_spawn": an end hook that communicates or makes work, which
 * nothing would ever run, fails the run with a message instead of losing it. */
static void hook_invoke(void *arg)
{
    (void)arg;
    report("hook_invoke_call", mp_invoke(1, counted, NULL, 0, MP_SCHED_FIFO));
}
static void hook_spawn(void *arg)
{
    (void)arg;
    report("hook_spawn_call", mp_spawn(counted, NULL, 0, MP_SCHED_FIFO));
}
static void hook_quiet(void *arg) { *(int *)arg += 1; } /* settles a figure: allowed */
static int quiet_calls;
static void hook_main(int argc, char **argv)
{
    (void)argc;
    if (mp_mype() != 0)
        return;
    CHECK_OK(mp_at_pe_end(strcmp(argv[1], "hook_invoke") == 0 ? hook_invoke : hook_spawn, NULL));
    CHECK_OK(mp_at_pe_end(hook_quiet, &quiet_calls));
}

/* Scenario "blocked_free": a fiber frees the counter pe_main blocks on; refused, since a
 * counter that reused its memory would end the wait with its own value. */
static mp_counter_t blocked;
static void free_blocked(void *p)
{
    (void)p;
    mp_counter_free(blocked);
    mp_counter_t other = mp_counter_new(0);
    mp_counter_add(other, 1);
    mp_counter_add(blocked, 1); /* still the counter pe_main waits on */
}
static void blocked_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() != 0)
        return;
    blocked = mp_counter_new(0);
    CHECK_OK(mp_spawn(free_blocked, NULL, 0, MP_SCHED_FIFO));
    report("blocked_wait", mp_block_until(blocked, 1));
    report("blocked_value", mp_counter_value(blocked) == 1 ? 0 : MP_ERR_BAD_STATE);
}

/* Scenario "done_counter": the completion counter of a global operation or a snapshot must be
 * a live counter of the calling PE, as a bulk transfer's is: a freed one would be incremented
 * in whatever counter took its memory, another PE's on the wrong PE. */
static mp_counter_t pe0_counter;
static void done_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    mp_obj_t obj;
    CHECK_OK(mp_obj_create(NULL, &obj));
    mp_snapshot_t snap;
    CHECK_OK(mp_snapshot_new(&snap));
    if (me == 0)
        pe0_counter = mp_counter_new(0);
    mp_counter_t c = mp_counter_new(0);
    CHECK_EQ(mp_obj_barrier(obj, c), MP_WAIT);
    CHECK_OK(mp_block_until(c, 1)); /* pe0_counter is set */
    if (me == 0) {
        mp_counter_t freed = mp_counter_new(0);
        mp_counter_free(freed); /* nothing allocates a counter before the calls below */
        report("barrier_freed", mp_obj_barrier(obj, freed) == MP_FAIL ? MP_ERR_BAD_STATE : 0);
        report("destroy_freed", mp_obj_destroy(obj, freed) == MP_FAIL ? MP_ERR_BAD_STATE : 0);
        report("sync_freed", mp_snapshot_sync(snap, freed) == MP_FAIL ? MP_ERR_BAD_STATE : 0);
        report("freeze_freed", mp_snapshot_freeze(snap, freed) == MP_FAIL ? MP_ERR_BAD_STATE : 0);
        report("sync_null", mp_snapshot_sync(snap, NULL) == MP_FAIL ? MP_ERR_INVALID_ARG : 0);
        /* a transfer's reply adds to its counter: freeing it before is refused */
        static char from_pe1[64];
        static const char there[64] = "bytes of PE 1";
        mp_counter_t r = mp_counter_new(0);
        CHECK_EQ(mp_bulk_read(1, there, from_pe1, sizeof from_pe1, r), MP_WAIT);
        CHECK_EQ(mp_bulk_write(1, from_pe1 + 32, there, 8, r), MP_WAIT);
        mp_counter_free(r);
        CHECK_OK(mp_block_until(r, 2));
        report("free_in_flight", strcmp(from_pe1, "bytes of PE 1") == 0 ? MP_ERR_BAD_STATE : 0);
        mp_counter_free(r); /* both done: freed */
    } else {
        report("barrier_foreign",
               mp_obj_barrier(obj, pe0_counter) == MP_FAIL ? MP_ERR_BAD_STATE : 0);
        report("reduce_foreign",
               mp_obj_reduce(obj, MP_REDUCE_SUM, 1.0, NULL, pe0_counter) == MP_FAIL
                   ? MP_ERR_BAD_STATE
                   : 0);
        report("value_foreign", mp_counter_value(pe0_counter) == 0 ? MP_ERR_BAD_STATE : 0);
    }
    mp_counter_t d = mp_counter_new(0);
    CHECK_EQ(mp_obj_barrier(obj, d), MP_WAIT); /* nothing was started: the object still works */
    CHECK_OK(mp_block_until(d, 1));
    CHECK_EQ(mp_snapshot_sync(snap, d), MP_WAIT); /* and so does the snapshot */
    CHECK_OK(mp_block_until(d, 2));
}

/* Scenario "derive_reenter": a derive function that calls back into the statistics is
 * refused at once (it held the lock its callee takes: the run hung). */
static void *derive_record;
static void reentering_derive(const void *ctx, uint64_t *add)
{
    (void)ctx;
    add[0] = 5;
    report("derive_derive", mp_stats_derive(derive_record, NULL, NULL));
    static const mp_stat_field f[] = {{"k", MP_STAT_U64, NULL}};
    static const mp_stat_module m = {"inner", 1, f, 0, NULL, NULL, NULL};
    report("derive_stats_new", mp_stats_new(&m, 99) ? 0 : MP_ERR_BAD_STATE);
}
static void derive_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() != 0)
        return;
    static const mp_stat_field f[] = {{"k", MP_STAT_U64, NULL}};
    static const mp_stat_module m = {"outer", 1, f, 0, NULL, NULL, NULL};
    derive_record = mp_stats_new(&m, 3);
    CHECK_OK(mp_stats_derive(derive_record, reentering_derive, NULL));
}

static void empty_program(mp_config *c) { c->program = ""; }
static void latin1_program(mp_config *c) { c->program = "caf\xe9"; }

int main(int argc, char **argv)
{
    const char *scenario = tst_scenario(argc, argv, "default");
    if (strcmp(scenario, "names") == 0)
        return tst_run(argc, argv, 2, names_main);
    if (strcmp(scenario, "hook_invoke") == 0 || strcmp(scenario, "hook_spawn") == 0) {
        int rc = tst_run(argc, argv, 2, hook_main);
        printf("after=%d quiet=%d rc=%d\n", atomic_load(&after), quiet_calls, rc);
        return 0;
    }
    if (strcmp(scenario, "blocked_free") == 0)
        return tst_run(argc, argv, 2, blocked_main);
    if (strcmp(scenario, "done_counter") == 0)
        return tst_run(argc, argv, 2, done_main);
    if (strcmp(scenario, "derive_reenter") == 0)
        return tst_run(argc, argv, 2, derive_main);
    if (strcmp(scenario, "null_args") == 0) {
        mp_config_init(NULL);
        report("config_init_null", 1);
        mp_config cfg;
        mp_config_init(&cfg);
        cfg.npes = 2;
        report("main_argv_null", mp_main(&cfg, keep_main, 1, NULL));
        report("main_argc_negative", mp_main(&cfg, keep_main, -1, argv));
        return 0;
    }
    if (strcmp(scenario, "foreign_sched") == 0)
        return tst_run(argc, argv, 2, foreign_sched_main);
    if (strcmp(scenario, "nan_stat") == 0)
        return tst_run(argc, argv, 2, nan_stat_main);
    if (strcmp(scenario, "concurrent") == 0) {
        concurrent();
        return 0;
    }
    if (strcmp(scenario, "after_main") == 0) {
        after_main(argc, argv);
        return 0;
    }
    if (strcmp(scenario, "config") == 0) {
        config_case("config_agg_bytes", huge_agg);
        config_case("config_sample_s", fast_sampler);
        config_case("config_idle_timeout", nan_timeout);
        config_case("config_idle_timeout_tiny", tiny_timeout);
        config_case("config_program_empty", empty_program);
        config_case("config_program_not_utf8", latin1_program);
        return 0;
    }
    int rc = tst_run(argc, argv, 2, pe_main);
    printf("after=%d rc=%d\n", atomic_load(&after), rc);
    CHECK_EQ(atomic_load(&after), 12);
    return rc;
}
