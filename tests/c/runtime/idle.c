/* idle.c -- idle PEs sleep: on P PEs (default 8) only PE 0 computes, for argv[1] seconds
 * (default 1) in 10 ms fibers, poking another PE every 100 ms.  pytest checks that the
 * process used far less CPU than P x wall time. */
#include "check.h"

static double work_s = 1.0;
static int pokes[MAXPE];

static void poked(void *p)
{
    (void)p;
    pokes[mp_mype()]++;
}

static void work(void *p)
{
    int *step = p;
    tst_busy(0.010);
    if (++*step % 10 == 0 && mp_npes() > 1)
        CHECK_OK(mp_invoke(1 + (*step / 10) % (mp_npes() - 1), poked, NULL, 0, MP_SCHED_FIFO));
    if (*step < (int)(work_s / 0.010))
        CHECK_OK(mp_fiber_enable(mp_continue(work, MP_SCHED_FIFO)));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (mp_mype() == 0) {
        int step = 0;
        CHECK_OK(mp_spawn(work, &step, sizeof step, MP_SCHED_FIFO));
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        work_s = atof(argv[1]);
    double t0 = mp_wtime();
    int rc = tst_run(argc, argv, 8, pe_main);
    int total = 0;
    for (int i = 0; i < MAXPE; i++)
        total += pokes[i];
    printf("wall=%.3f pokes=%d\n", mp_wtime() - t0, total);
    return rc;
}
