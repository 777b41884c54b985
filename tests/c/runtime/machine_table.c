/* machine_table.c -- the check of a backend's table (pe.c mpr_machine_missing): the shared-memory
 * table has every required entry, a copy that lacks one is named by the entry it lacks, an
 * optional entry that another entry makes required (yield with shares_thread, group_open and
 * group_flush with group_agg) is named when it is missing, and a table without the optional
 * entries passes.  Prints "missing=<entry or none>" per case;
 * tests/runtime/test_stress_hang_misuse.py. */
#include "../../../runtime/src/machine.h"
#include "check.h"

static void report(const char *what, const mpr_machine *m)
{
    const char *missing = mpr_machine_missing(m);
    printf("%s missing=%s\n", what, missing ? missing : "none");
}

int main(void)
{
    report("shm", &mpr_machine_shm);
    mpr_machine copy = mpr_machine_shm;
    copy.pending = NULL;
    report("no-pending", &copy);
    copy = mpr_machine_shm;
    copy.yield = NULL; /* required: the table says its PEs may share a thread */
    report("no-yield", &copy);
    copy = mpr_machine_shm;
    copy.group_open = NULL; /* required: the table says its PEs may make aggregation groups */
    report("no-group-open", &copy);
    copy = mpr_machine_shm;
    copy.group_flush = NULL;
    report("no-group-flush", &copy);
    copy = mpr_machine_shm;
    copy.shares_thread = NULL; /* then yield and period are optional */
    copy.yield = NULL;
    copy.period = NULL;
    copy.group_agg = NULL; /* then so are group_open and group_flush */
    copy.group_open = NULL;
    copy.group_flush = NULL;
    copy.returned = NULL;
    copy.max_all = NULL;
    copy.gather = NULL;
    copy.fini = NULL;
    copy.all_idle = NULL;
    report("no-optional", &copy);
    return 0;
}
