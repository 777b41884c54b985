/* machine_table.c -- the check of a backend's table (pe.c mpr_machine_missing): the shared-memory
 * table has every required entry, and a copy that lacks one is named by the entry it lacks.
 * Prints "missing=<entry or none>" per case; tests/runtime/test_stress_hang_misuse.py. */
#include "../../../runtime/src/machine.h"
#include "check.h"

int main(void)
{
    const char *m = mpr_machine_missing(&mpr_machine_shm);
    printf("shm missing=%s\n", m ? m : "none");
    mpr_machine copy = mpr_machine_shm;
    copy.pending = NULL;
    m = mpr_machine_missing(&copy);
    printf("no-pending missing=%s\n", m ? m : "none");
    copy = mpr_machine_shm;
    copy.yield = NULL; /* optional */
    copy.returned = NULL;
    m = mpr_machine_missing(&copy);
    printf("no-optional missing=%s\n", m ? m : "none");
    return 0;
}
