/* overflow.c -- a stack overflow is named, other faults are not.
 * Scenarios (argv[1]):
 *   fiber  a fiber on PE 1 (category ov:deep) recurses without end: the run must end with
 *          one line naming PE 1, the fiber function and its category, then abort
 *   main   pe_main of PE 0 recurses without end: named as pe_main
 *   null   a fiber on PE 1 writes through a null pointer: a plain SIGSEGV, no overflow line */
#include "check.h"

static const char *scenario;
static int acc_deep;
static volatile unsigned long never = ~0ul; /* the recursion's end, never reached */

/* Not static: reports name fibers through the dynamic symbol table. */
unsigned long overflow_recurse(volatile unsigned long depth);
unsigned long overflow_recurse(volatile unsigned long depth)
{
    volatile char frame[512];
    if (depth == never)
        return 0;
    frame[0] = (char)depth;
    return overflow_recurse(depth + 1) + frame[0]; /* not a tail call */
}

void overflow_fiber(void *p);
void overflow_fiber(void *p)
{
    (void)p;
    mp_access_declare(acc_deep);
    printf("%lu\n", overflow_recurse(0));
}

void overflow_null(void *p);
void overflow_null(void *p)
{
    (void)p;
    volatile int *volatile target = NULL;
    *target = 1;
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    int me = mp_mype();
    if (strcmp(scenario, "fiber") == 0) {
        if (me == 1)
            CHECK_OK(mp_spawn(overflow_fiber, NULL, 0, MP_SCHED_FIFO));
    } else if (strcmp(scenario, "main") == 0) {
        if (me == 0)
            printf("%lu\n", overflow_recurse(0));
    } else if (me == 1) {
        CHECK_OK(mp_spawn(overflow_null, NULL, 0, MP_SCHED_FIFO));
    }
}

int main(int argc, char **argv)
{
    scenario = tst_scenario(argc, argv, "fiber");
    acc_deep = mp_access_register("ov", "deep");
    return tst_run(argc, argv, 2, pe_main);
}
