/* Statistics bound to PAPI events (docs/papi.md, tests/ecosystem/test_papi_stats.py).
 *
 *   rt_papi_stats F M
 *
 * The program registers its own software-defined counter sde:::PTEST::ops.  F fibers declare
 * ptest:SEND and add 3 to it, M fibers declare pother:WORK and add 1, and pe_main adds 5
 * outside any fiber.  Both modules bind a statistic to that event, so on one PE the run
 * profile must show ptest::Ops = 3F and pother::Ops = M: the counter is read around every
 * fiber and charged to the category the fiber ran in.  ptest::L1Miss is bound to the
 * hardware counter PAPI_L1_DCM, absent on a machine without a PMU. */
#include <sde_lib.h>
#include <stdio.h>
#include <stdlib.h>

#include "mp.h"
#include "pother_perf.h"
#include "ptest_perf.h"

static long long ops;
static int send_access, work_access;
static _Thread_local ptest_stats_t *ptest;

static void send_fiber(void *args)
{
    (void)args;
    mp_access_declare(send_access);
    __atomic_add_fetch(&ops, 3, __ATOMIC_RELAXED);
    PTEST_INC(ptest, NSend, 1);
}

static void work_fiber(void *args)
{
    (void)args;
    mp_access_declare(work_access);
    __atomic_add_fetch(&ops, 1, __ATOMIC_RELAXED);
}

static void pe_main(int argc, char **argv)
{
    int f = argc > 1 ? atoi(argv[1]) : 10, m = argc > 2 ? atoi(argv[2]) : 10;
    ptest = ptest_stats_create(1);
    PTEST_SET(ptest, P, 1);
    pother_stats_create(2);
    __atomic_add_fetch(&ops, 5, __ATOMIC_RELAXED); /* outside fibers: charged to nothing */
    for (int i = 0; i < f; i++)
        if (mp_spawn(send_fiber, NULL, 0, MP_SCHED_FIFO) != MP_SUCCESS)
            abort();
    for (int i = 0; i < m; i++)
        if (mp_spawn(work_fiber, NULL, 0, MP_SCHED_FIFO) != MP_SUCCESS)
            abort();
    mp_param("F", f);
    mp_param("M", m);
}

int main(int argc, char **argv)
{
    papi_handle_t h = papi_sde_init("PTEST");
    papi_sde_register_counter(h, "ops", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long, &ops);
    send_access = mp_access_register("ptest", "SEND");
    work_access = mp_access_register("pother", "WORK");
    mp_config cfg;
    mp_config_init(&cfg);
    return mp_main(&cfg, pe_main, argc, argv);
}
