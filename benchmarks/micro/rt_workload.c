/*
 * rt_workload PES FIBERS MSGS BYTES -- a runtime workload for cost-model sweeps.
 *
 * Every PE spawns FIBERS local fibers and sends MSGS remote fiber invocations carrying
 * BYTES bytes of arguments, round-robin to the other PEs.  The mix of thread, message and
 * byte counts varies with the parameters, so sweeps over them let the fitter separate the
 * runtime's unit costs (runtime/rts.perf).  Honours MPROF_AGG_BYTES and writes MPROF_OUT.
 */
#include "mp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long fibers, msgs;
static size_t bytes;

static void local_work(void *a) { (void)a; }
static void remote_work(void *a) { (void)a; }

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    unsigned char payload[MP_FIBER_ARGS_MAX];
    memset(payload, mp_mype(), sizeof payload);
    int p = mp_npes(), me = mp_mype();
    long sent = 0, spawned = 0;
    /* interleave so communication overlaps computation as in real programs */
    while (sent < msgs || spawned < fibers) {
        for (int k = 0; k < 16 && spawned < fibers; k++, spawned++)
            mp_spawn(local_work, NULL, 0, MP_SCHED_FIFO);
        if (sent < msgs && p > 1) {
            int dst = (me + 1 + (int)(sent % (p - 1))) % p;
            if (mp_invoke(dst, remote_work, payload, bytes, MP_SCHED_FIFO) != MP_SUCCESS)
                exit(1);
            sent++;
        } else if (p == 1) {
            sent = msgs;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s PES FIBERS MSGS BYTES\n", argv[0]);
        return 2;
    }
    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = atoi(argv[1]);
    fibers = atol(argv[2]);
    msgs = atol(argv[3]);
    bytes = (size_t)atol(argv[4]);
    if (cfg.npes < 1 || fibers < 0 || msgs < 0 || bytes > MP_FIBER_ARGS_MAX) {
        fprintf(stderr, "rt_workload: bad arguments (BYTES <= %d)\n", MP_FIBER_ARGS_MAX);
        return 2;
    }
    mp_param("fibers", (double)fibers);
    mp_param("msgs", (double)msgs);
    mp_param("bytes", (double)bytes);
    return mp_main(&cfg, pe_main, argc, argv);
}
