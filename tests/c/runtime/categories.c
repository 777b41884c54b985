/* categories.c -- CPU time per access category, by sampling (sample.c; tests/runtime).
 *
 *   rt_categories [ms=M] [own_sigprof=1]
 *
 * pe_main declares "cat:main" and burns M/2 ms of CPU, then spawns 40 pairs of fibers: a
 * "cat:light" fiber that burns about M/40 ms and a "cat:heavy" one about 3 M/40 ms, so a PE's
 * fibers take M ms in light and 3 M in heavy, interleaved so that samples fall on both alike.
 * PE 0 also runs one more "cat:heavy" fiber of M ms, which PE 1 waits out in its idle loop
 * (spinning, with MPROF_SPIN large, so that the wait is CPU time).  Time is burnt on the thread's
 * CPU clock, so the ratios hold however the threads are preempted.  With own_sigprof=1 the program
 * installs a SIGPROF handler of its own first: the runtime must leave it alone and say so. */
#define _GNU_SOURCE
#include "check.h"

#include <signal.h>
#include <time.h>

static int acc_main, acc_light, acc_heavy;
static double unit_s = 0.005; /* M/40 */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void burn(double seconds)
{
    double end = cpu_now() + seconds;
    volatile unsigned long x = 0;
    while (cpu_now() < end)
        for (int i = 0; i < 1000; i++)
            x += (unsigned long)i;
    (void)x; /* clang: "set but not used"; the volatile stores are the work */
}

static void light(void *p)
{
    mp_access_declare(acc_light);
    burn(*(const double *)p * unit_s);
}

static void heavy(void *p)
{
    mp_access_declare(acc_heavy);
    burn(3 * *(const double *)p * unit_s);
}

static void last(void *p)
{
    (void)p;
    mp_access_declare(acc_heavy);
    burn(40 * unit_s);
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    mp_access_declare(acc_main);
    burn(20 * unit_s);
    /* Fibers of random lengths (0.5-1.5 units, 40 units in all): fibers of fixed lengths
     * repeat with a period that may be a multiple of the kernel's tick, at which CPU-clock
     * timers fire, and every sample would then fall at the same point of the pattern. */
    double len[40], sum = 0;
    unsigned x = 12345u + 7919u * (unsigned)mp_mype();
    for (int i = 0; i < 40; i++) {
        x = x * 1103515245u + 12345u;
        len[i] = 0.5 + (double)(x >> 8 & 0xffff) / 65536.0;
        sum += len[i];
    }
    for (int i = 0; i < 40; i++) {
        double units = len[i] * 40 / sum;
        CHECK_OK(mp_spawn(light, &units, sizeof units, MP_SCHED_FIFO));
        units = len[39 - i] * 40 / sum;
        CHECK_OK(mp_spawn(heavy, &units, sizeof units, MP_SCHED_FIFO));
    }
    if (mp_mype() == 0 && mp_npes() > 1)
        CHECK_OK(mp_spawn(last, NULL, 0, MP_SCHED_FIFO));
}

static void own_handler(int sig) { (void)sig; }

int main(int argc, char **argv)
{
    unit_s = (double)tst_opt(argc, argv, "ms", 200) * 1e-3 / 40;
    if (tst_opt(argc, argv, "own_sigprof", 0))
        signal(SIGPROF, own_handler);
    acc_main = mp_access_register("cat", "main");
    acc_light = mp_access_register("cat", "light");
    acc_heavy = mp_access_register("cat", "heavy");
    CHECK(acc_main > 0 && acc_light > 0 && acc_heavy > 0);
    return tst_run(argc, argv, 2, pe_main);
}
