/*
 * rt_workload PES FIBERS MSGS BYTES [SELF] -- a runtime workload for cost-model sweeps.
 *
 * Every PE spawns FIBERS local fibers and invokes SELF fibers on itself (local copies of
 * BYTES bytes of arguments); even PEs send MSGS remote fiber invocations carrying BYTES bytes of
 * arguments, odd PEs 2 * MSGS, round-robin to the other PEs.  The uneven sends make each PE
 * send and receive different amounts, so the fitter can tell the sending PE's costs from the
 * receiving PE's; the total stays linear in PEs (about 1.5 * MSGS per PE), so one MSGS means
 * the same load per PE at 2 PEs and at 1024.  The mix of thread, message and byte counts varies
 * with the parameters and with MPROF_AGG_BYTES (aggregated records, records sent at once in pooled
 * buffers, records too large to pool), so sweeps over them determine every unit cost of
 * runtime/rts.perf. Writes MPROF_OUT.
 */
#include "bench_util.h"
#include "mp.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Operations of each kind per step (see pe_main). */
#define OPS_PER_STEP 16

static long fibers, msgs, selfs;
static size_t bytes;

/* Per PE (PEs are threads on shared memory, processes on MPI). */
static _Thread_local struct {
    unsigned char payload[MP_FIBER_ARGS_MAX];
    long to_send, sent, spawned, invoked;
    long steps, step;
    int dst; /* the next remote invocation's destination */
} w;

static void local_work(void *a) { (void)a; }
static void remote_work(void *a) { (void)a; }

/* How many of `total` operations are due after step k of `steps`: spreading every kind
 * evenly keeps each PE busy until the end of the run, so no PE spends the end of it receiving
 * one record at a time from a PE still busy, a regime whose per-record costs differ. */
static long due(long total, long k)
{
    return (long)((double)total * (double)(k + 1) / (double)w.steps);
}

/* One step of the workload, then the next step as a fiber queued behind this step's fibers.
 * Spawning everything from pe_main instead would queue every fiber and message before any ran:
 * the runtime would then spend its time faulting in fresh memory for the queues and buffers,
 * which is a cost of the backlog, not of the operations the model prices. */
static void step(void *a)
{
    (void)a;
    int p = mp_npes(), me = mp_mype();
    for (long n = due(fibers, w.step); w.spawned < n; w.spawned++)
        mp_spawn(local_work, NULL, 0, MP_SCHED_FIFO);
    for (long n = due(selfs, w.step); w.invoked < n; w.invoked++)
        if (mp_invoke(me, local_work, w.payload, bytes, MP_SCHED_FIFO) != MP_SUCCESS)
            exit(1);
    /* round robin over the other PEs, from me + 1 (a counter, not a division per send) */
    int dst = w.dst;
    for (long n = due(w.to_send, w.step); w.sent < n; w.sent++) {
        if (mp_invoke(dst, remote_work, w.payload, bytes, MP_SCHED_FIFO) != MP_SUCCESS)
            exit(1);
        dst = dst + 1 == p ? 0 : dst + 1;
        if (dst == me)
            dst = dst + 1 == p ? 0 : dst + 1;
    }
    w.dst = dst;
    if (++w.step < w.steps)
        mp_spawn(step, NULL, 0, MP_SCHED_FIFO);
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    memset(&w, 0, sizeof w);
    memset(w.payload, mp_mype(), sizeof w.payload);
    int p = mp_npes();
    w.to_send = p > 1 ? msgs * (1 + mp_mype() % 2) : 0;
    w.dst = (mp_mype() + 1) % p;
    /* The same number of steps on every PE (the busiest PE sends 2 * MSGS), each doing up to
     * OPS_PER_STEP operations of each kind: a step is a fiber of its own, and one per operation
     * would make the benchmark's pacing (a spawn, a dispatch and the step's arithmetic) cost
     * about as much as the operations it paces. */
    long most = fibers;
    if (p > 1 && msgs * 2 > most)
        most = msgs * 2;
    if (selfs > most)
        most = selfs;
    most = (most + OPS_PER_STEP - 1) / OPS_PER_STEP;
    w.steps = most > 0 ? most : 1;
    mp_spawn(step, NULL, 0, MP_SCHED_FIFO);
}

/* argv[i] as a count in [min, LONG_MAX], or a usage error naming it (exit 2). */
static long count_arg(char **argv, int i, const char *name, long min)
{
    uint64_t v;
    if (!bu_u64("rt_workload", name, argv[i], (uint64_t)min, LONG_MAX, &v))
        exit(2);
    return (long)v;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s PES FIBERS MSGS BYTES [SELF]\n", argv[0]);
        return 2;
    }
    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = (int)count_arg(argv, 1, "PES", 1);
    fibers = count_arg(argv, 2, "FIBERS", 0);
    msgs = count_arg(argv, 3, "MSGS", 0);
    bytes = (size_t)count_arg(argv, 4, "BYTES", 0);
    selfs = argc == 6 ? count_arg(argv, 5, "SELF", 0) : 0;
    if (bytes > MP_FIBER_ARGS_MAX) {
        fprintf(stderr, "rt_workload: BYTES must be at most %d\n", MP_FIBER_ARGS_MAX);
        return 2;
    }
    mp_param("fibers", (double)fibers);
    mp_param("msgs", (double)msgs);
    mp_param("bytes", (double)bytes);
    mp_param("self", (double)selfs);
    return mp_main(&cfg, pe_main, argc, argv);
}
