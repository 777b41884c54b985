/* affinity.c -- where the shm backend's worker threads may run (MPROF_PIN, shm/affinity.h).
 *
 * Every PE prints the CPUs its thread may run on, as seen from pe_main (which runs on the
 * PE's worker thread), one line per PE: "affinity: pe=I cpus=A,B,...".  The test compares
 * them with the units the process may use and with the profile's settings.pinned_workers.
 *   rt_affinity */
#define _GNU_SOURCE
#include "check.h"

#include <sched.h>
#include <string.h>

static char lines[MAXPE][256];

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    char *p = lines[mp_mype()], *end = p + sizeof lines[0];
    p += snprintf(p, (size_t)(end - p), "affinity: pe=%d cpus=", mp_mype());
    const char *sep = "";
    for (int c = 0; c < CPU_SETSIZE && p < end - 8; c++)
        if (CPU_ISSET(c, &set)) {
            p += snprintf(p, (size_t)(end - p), "%s%d", sep, c);
            sep = ",";
        }
}

int main(int argc, char **argv)
{
    int rc = tst_run(argc, argv, 2, pe_main);
    for (int i = 0; i < MAXPE; i++)
        if (lines[i][0])
            printf("%s\n", lines[i]);
    return rc;
}
