/* eg_check.h -- the check of the event graph's test programs (eg_test.c, eg_sched.c): a failed
 * check prints "FAIL PE n: ..." and counts in `failures`, and the program goes on, so that one
 * run reports every check that failed; main() exits 1 when any did. */
#ifndef EG_CHECK_H
#define EG_CHECK_H

#include "mp.h"

#include <stdatomic.h>
#include <stdio.h>

static _Atomic int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL PE %d: ", mp_mype());                                                     \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            atomic_fetch_add(&failures, 1);                                                        \
        }                                                                                          \
    } while (0)

#endif
